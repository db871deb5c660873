"""The Python API: `ddpdoctor.run_probe(...)` and `ddpdoctor.run_preflight(...)`, for a project
that gates on ddpdoctor inside its own test suite.

    import ddpdoctor

    def test_train_py_is_ddp_clean(tmp_path):
        report = ddpdoctor.run_probe("train.py", args=["--epochs", "3"], nproc=2, cpu=True,
                                     run_dir=tmp_path / "probe")
        assert report.exit_code == 0, [f.message for f in report.findings]

Both run what the command runs and return its Report: `findings` (Finding objects), `metrics`,
`status` ("pass" | "fail" | "incomplete" | "error"), `exit_code` (what the command would exit
with), `notes`, `run_dir`; `to_dict()` is the JSON report. Nothing is printed. The arguments
mean what the flags of the same names mean; pyproject.toml is not read. Bad input raises
ddpdoctor.core.errors.UsageError, a failure of ddpdoctor itself ToolFailure.

The names of release 0.1, `ddpdoctor.probe(...)` and `ddpdoctor.preflight(...)`, still work for
one release with a DeprecationWarning (core/deprecated.py). This module imports nothing heavy until
a function is called.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any, Iterable, Optional, Sequence, Union

from ddpdoctor.core import defaults
from ddpdoctor.core.errors import UsageError

if TYPE_CHECKING:
    from ddpdoctor.report.model import Report

PathLike = Union[str, "os.PathLike[str]"]


def run_probe(script: PathLike, args: Sequence[str] = (), *, nproc: int = defaults.NPROC_PER_NODE,
          cpu: bool = False, module: bool = False, max_steps: int = defaults.MAX_STEPS,
          steps_per_epoch: int = defaults.STEPS_PER_EPOCH,
          stall_timeout: Optional[float] = None, timeout: float = defaults.TIMEOUT_S,
          run_dir: Optional[PathLike] = None, launcher: str = "auto", nnodes: int = defaults.NNODES,
          node_rank: int = defaults.NODE_RANK, rdzv_endpoint: Optional[str] = None,
          master_addr: Optional[str] = None, master_port: Optional[int] = None,
          gather_port: Optional[int] = None, gather_token: Optional[str] = None, log_limit: float = defaults.LOG_LIMIT_MB, fail_on: str = "error", ignore: Iterable[str] = (),
          scaling: Sequence[int] = (), trace: Optional[PathLike] = None, verify_fix: bool = False,
          baseline: Optional[PathLike] = None) -> "Report":
    """`ddpdoctor probe SCRIPT -- ARGS`: run the script as a short instrumented DDP job and
    return the report. `cpu=True` is `--cpu` (a CUDA/NCCL script on the CPU with gloo);
    `verify_fix=True` is --verify-fix, `baseline="perf.json"` is --baseline perf.json."""
    from ddpdoctor.probe.options import ProbeOptions
    from ddpdoctor.probe.driver import probe as probe_job

    _want("script", script, (str, os.PathLike), "a path")
    if isinstance(args, (str, bytes)) or not all(isinstance(a, str) for a in args):
        raise UsageError(f"args must be a list of strings, e.g. ['--epochs', '3'] (got {args!r})")
    for name, value in (("nproc", nproc), ("max_steps", max_steps),
                        ("steps_per_epoch", steps_per_epoch), ("nnodes", nnodes),
                        ("node_rank", node_rank)):
        _want(name, value, int, "an integer")
    if baseline is not None:
        _want("baseline", baseline, (str, os.PathLike), "a path")
    severity, codes = _gate(fail_on, ignore)
    options = ProbeOptions(
        script=os.fspath(script), args=list(args), module=module, nproc_per_node=nproc,
        nnodes=nnodes, node_rank=node_rank, rdzv_endpoint=rdzv_endpoint,
        master_addr=master_addr, master_port=master_port, gather_port=gather_port, gather_token=gather_token, log_limit_mb=log_limit, max_steps=max_steps,
        steps_per_epoch=steps_per_epoch, stall_timeout_s=stall_timeout, timeout_s=timeout,
        run_dir=os.fspath(run_dir) if run_dir is not None else None, launcher=launcher, cpu=cpu,
        scaling=_sizes(scaling), verify_fix=bool(verify_fix),
        baseline=os.fspath(baseline) if baseline is not None else None)
    return probe_job(options, severity, codes, trace=os.fspath(trace) if trace is not None else None)


def run_preflight(nodes: Optional[PathLike] = None, *, nproc: Optional[int] = None,
              world_size: Optional[int] = None, master_addr: Optional[str] = None,
              master_port: int = defaults.MASTER_PORT, backend: str = "auto", via: str = "auto",
              ssh_user: Optional[str] = None, ssh_port: Optional[int] = None,
              ssh_options: Sequence[str] = (), remote_python: str = defaults.REMOTE_PYTHON,
              timeout: float = defaults.PREFLIGHT_TIMEOUT_S, fanout: int = defaults.FANOUT, facts: Sequence[PathLike] = (),
              collective: bool = False, node_rank: Optional[int] = None,
              fail_on: str = "error", ignore: Iterable[str] = ()) -> "Report":
    """`ddpdoctor preflight --nodes NODES`: check the machines and return the report.
    Without `nodes`, $SLURM_JOB_NODELIST, else this machine. `collective=True` is --collective;
    with via="store", the nodes other than the master return the master's report, relayed
    (report.metrics["store_role"] == "node")."""
    from ddpdoctor.preflight.run import PreflightOptions, run_preflight as preflight_job
    from ddpdoctor.preflight.transport.ssh import SshOptions

    if nodes is not None:
        _want("nodes", nodes, (str, os.PathLike), "a path")
    for name, value in (("nproc", nproc), ("world_size", world_size), ("ssh_port", ssh_port),
                        ("node_rank", node_rank)):
        if value is not None:
            _want(name, value, int, "an integer")
    _want("master_port", master_port, int, "an integer")
    _want("fanout", fanout, int, "an integer")
    severity, codes = _gate(fail_on, ignore)
    options = PreflightOptions(
        nodes_file=os.fspath(nodes) if nodes is not None else None, nproc_per_node=nproc,
        world_size=world_size, master_addr=master_addr, master_port=master_port,
        backend=backend.strip().lower(), via=via.strip().lower(),
        ssh=SshOptions(user=ssh_user, port=ssh_port, options=list(ssh_options),
                       remote_python=remote_python),
        timeout=timeout, fanout=fanout, facts_files=[os.fspath(f) for f in facts],
        fail_on=severity, ignore=codes, collective=bool(collective), node_rank=node_rank)
    return preflight_job(options)


def _sizes(scaling: Sequence[int]) -> list:
    """`scaling=[1, 2, 4]` is `--scaling 1,2,4`, checked by the same parser."""
    from ddpdoctor.probe.launch.scaling import parse_sizes

    if not scaling:
        return []
    if isinstance(scaling, (str, bytes)) or not all(isinstance(n, int) and not isinstance(n, bool) for n in scaling):
        raise UsageError(f"scaling must be a list of world sizes, e.g. [1, 2, 4] (got {scaling!r})")
    return parse_sizes(",".join(map(str, scaling)))


def _want(name: str, value: Any, kind: Union[type, tuple], expected: str) -> None:
    if isinstance(value, bool) or not isinstance(value, kind):
        raise UsageError(f"{name} must be {expected} (got {value!r})")


def _gate(fail_on: str, ignore: Iterable[str]):
    from ddpdoctor.core.findings import Severity, parse_codes
    from ddpdoctor.core.registry import validate_codes

    if not isinstance(fail_on, str):
        raise UsageError(f"fail_on must be 'error', 'warning' or 'info' (got {fail_on!r})")
    codes = parse_codes([ignore] if isinstance(ignore, str) else list(ignore))
    validate_codes(codes)
    return Severity.parse(fail_on), codes
