"""What the user asked a probe to do, validated before anything launches."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from typing import Any, Optional

from ddpdoctor.core import defaults
from ddpdoctor.core.errors import UsageError

# A timeout is a deadline: a finite number of seconds (nan would never fire, inf never end).
MAX_TIMEOUT_S = 7 * 24 * 3600.0
MAX_NPROC_PER_NODE = defaults.MAX_NPROC_PER_NODE
# The gather port numbers nodes up to 65535; 16,384 nodes or 131,072 ranks is beyond any job
# probed whole, and every per-node and per-rank table is sized by these before a rank starts.
MAX_NNODES = 16384
MAX_WORLD = 131072
MAX_STEPS = 10 ** 9
MAX_SCRIPT_BYTES = 64 * 1024 * 1024


@dataclass
class ProbeOptions:
    script: str
    args: list[str] = field(default_factory=list)
    module: bool = False  # `script` is a module name (python -m)
    nproc_per_node: int = defaults.NPROC_PER_NODE
    nnodes: int = defaults.NNODES
    node_rank: int = defaults.NODE_RANK
    rdzv_endpoint: Optional[str] = None
    master_addr: Optional[str] = None
    master_port: Optional[int] = None
    log_limit_mb: float = defaults.LOG_LIMIT_MB  # job.log keeps this much per rank: 3/4 head, 1/4 tail (launch/log_cap.py)
    gather_port: Optional[int] = None  # multi-node: node 0's ddpdoctor listens here (default: rendezvous port + 1)
    # Multi-node: the job's shared secret for the gather port (else $DDPDOCTOR_GATHER_TOKEN;
    # launch/node_wire.py). Never stored in a report, a log or probe.json.
    gather_token: Optional[str] = field(default=None, repr=False)
    max_steps: int = defaults.MAX_STEPS
    steps_per_epoch: int = defaults.STEPS_PER_EPOCH
    stall_timeout_s: Optional[float] = None  # None: adaptive
    timeout_s: float = defaults.TIMEOUT_S
    run_dir: Optional[str] = None
    checked_bucket_iterations: int = 3
    cpu: bool = False  # run a CUDA/NCCL script on the CPU with gloo (inrank/cpu_shim.py)
    launcher: str = "auto"  # auto | torchrun | none
    scaling: list[int] = field(default_factory=list)  # world sizes to probe in turn (scaling.py)
    # Rerun the script with the DDP arguments the performance findings suggest (launch/verify.py).
    verify_fix: bool = False
    # DDP arguments the probe sets in place of the script's (what --verify-fix reruns with).
    ddp_overrides: dict = field(default_factory=dict)
    baseline: Optional[str] = None  # an earlier JSON report to gate against (DDP607)
    # How the job is shown while it runs (launch/live_feed.py): "off" (the Python API), "auto"
    # (the CLI: a live table on a terminal, plain progress lines elsewhere) or "plain".
    live: str = "off"
    quiet_script: bool = False  # --quiet-script: the script's output only in RUN_DIR/job.log
    # What validate() found, so that one pass serves the CLI and the probe: the --baseline report,
    # read once (run_model/baseline.Baseline), and whether these options were validated at all. Not
    # init fields: a dataclasses.replace() copy (a --scaling or --verify-fix rerun) is new options.
    loaded_baseline: Optional[Any] = field(default=None, init=False, compare=False, repr=False)
    validated: bool = field(default=False, init=False, compare=False, repr=False)

    def validate(self) -> None:
        """Bad input is found here, before a run dir exists or a process starts. Once per options:
        a second call (the CLI validates, then the probe) does nothing."""
        if self.validated:
            return
        if not 1 <= self.nproc_per_node <= MAX_NPROC_PER_NODE:
            raise UsageError(f"--nproc-per-node must be at least 1 and at most {MAX_NPROC_PER_NODE} "
                             f"(got {self.nproc_per_node})")
        if not 1 <= self.nnodes <= MAX_NNODES:
            raise UsageError(f"--nnodes must be at least 1 and at most {MAX_NNODES} (got {self.nnodes})")
        if self.nnodes * self.nproc_per_node > MAX_WORLD:
            raise UsageError(f"--nnodes {self.nnodes} x --nproc-per-node {self.nproc_per_node} is more than "
                             f"{MAX_WORLD} ranks")
        if not 0 <= self.node_rank < self.nnodes:
            raise UsageError(f"--node-rank must be in 0..{self.nnodes - 1} (got {self.node_rank})")
        if not (0 <= self.max_steps <= MAX_STEPS and 0 <= self.steps_per_epoch <= MAX_STEPS):
            raise UsageError(f"--max-steps and --steps-per-epoch must be 0 (no limit) or more, and at most {MAX_STEPS}")
        if self.stall_timeout_s is not None and not 0 < self.stall_timeout_s <= MAX_TIMEOUT_S:
            raise UsageError(f"--stall-timeout must be more than 0 and at most {MAX_TIMEOUT_S:.0f} "
                             f"seconds (got {self.stall_timeout_s:g})")
        if not 0 < self.timeout_s <= MAX_TIMEOUT_S:
            raise UsageError(f"--timeout must be more than 0 and at most {MAX_TIMEOUT_S:.0f} seconds "
                             f"(got {self.timeout_s:g})")
        if self.master_port is not None and not 1 <= self.master_port <= 65535:
            raise UsageError(f"--master-port must be in 1..65535 (got {self.master_port})")
        if not 0.01 <= self.log_limit_mb <= 1024 * 1024:
            raise UsageError(f"--log-limit must be between 0.01 and 1048576 MB (got {self.log_limit_mb:g})")
        if self.gather_port is not None and not 1 <= self.gather_port <= 65535:
            raise UsageError(f"--gather-port must be in 1..65535 (got {self.gather_port})")
        if self.gather_token is not None and not 8 <= len(self.gather_token) <= 1024:
            raise UsageError("--gather-token must be 8 to 1024 characters (e.g. `openssl rand -hex 16`)")
        if self.rdzv_endpoint is not None and not re.fullmatch(r"[\w.\-\[\]:]+:\d{1,5}", self.rdzv_endpoint):
            raise UsageError(f"--rdzv-endpoint must be HOST:PORT (got {self.rdzv_endpoint!r})")
        if self.nnodes > 1 and not (self.rdzv_endpoint or self.master_addr):
            raise UsageError("a multi-node probe needs --rdzv-endpoint or --master-addr")
        if self.launcher not in ("auto", "torchrun", "none"):
            raise UsageError(f"--launcher must be auto, torchrun or none (got {self.launcher!r})")
        if self.scaling and self.nnodes > 1:
            raise UsageError("--scaling runs every world size on this node; use it with --nnodes 1")
        unknown = set(self.ddp_overrides) - {"bucket_cap_mb", "gradient_as_bucket_view",
                                             "static_graph", "find_unused_parameters"}
        if unknown:
            raise UsageError(f"DDP arguments the probe cannot set: {', '.join(sorted(unknown))}")
        if self.baseline is not None:
            from ddpdoctor.probe.run_model.baseline import load_baseline

            self.loaded_baseline = load_baseline(self.baseline)  # bad input is said now, before launch
        if self.launcher == "none" and self.nnodes > 1:
            raise UsageError("--launcher none runs one process of the script; use --nnodes 1 per node")
        if self.module:
            if not re.fullmatch(r"[A-Za-z_][\w]*(\.[A-Za-z_][\w]*)*", self.script):
                raise UsageError(f"-m needs a module name like package.module (got {self.script!r})")
            from ddpdoctor.probe.launch.choice import module_source_path

            check_script(module_source_path(self.script))
        else:
            check_script(self.script)
        self.validated = True

    @property
    def node0_endpoint(self) -> tuple[str, int]:
        """Where node 0's ddpdoctor gathers the other nodes' telemetry (launch/node_link.py)."""
        if self.rdzv_endpoint:
            host, _, port = self.rdzv_endpoint.rpartition(":")
            host, rdzv_port = host.strip("[]"), int(port)
        else:
            host, rdzv_port = self.master_addr or "127.0.0.1", self.master_port or defaults.MASTER_PORT
        if self.gather_port is not None:
            return host, self.gather_port
        return host, rdzv_port + 1 if rdzv_port < 65535 else rdzv_port - 1

    @property
    def world_size(self) -> int:
        return self.nproc_per_node * self.nnodes


def check_script(path: str) -> None:
    """The script must exist, be a readable file and compile; else one line naming file:line."""
    if not os.path.exists(path):
        raise UsageError(f"script not found: {path}")
    if os.path.isdir(path):
        raise UsageError(f"script is a directory, not a Python file: {path}")
    if not os.path.isfile(path):  # a FIFO would block the read for ever, /dev/zero never end it
        raise UsageError(f"script is not a regular file: {path}")
    try:
        with open(path, "rb") as handle:
            source = handle.read(MAX_SCRIPT_BYTES + 1)
    except OSError as exc:
        raise UsageError(f"cannot read script {path}: {exc.strerror}") from None
    if len(source) > MAX_SCRIPT_BYTES:
        raise UsageError(f"script is larger than {MAX_SCRIPT_BYTES >> 20} MiB, not a Python source file: {path}")
    if b"\0" in source:
        raise UsageError(f"script is not a Python source file (binary content): {path}")
    try:
        compile(source, path, "exec")
    except SyntaxError as exc:
        where = f"{path}:{exc.lineno}" if exc.lineno else path
        raise UsageError(f"{where}: script does not compile: {exc.msg}") from None
    except ValueError as exc:
        raise UsageError(f"script does not compile: {path}: {exc}") from None
    except (RecursionError, MemoryError):
        raise UsageError(f"script does not compile: {path}: nested too deeply (an expression or block "
                         "deeper than the interpreter's limits)") from None
