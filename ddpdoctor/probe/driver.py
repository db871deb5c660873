"""`ddpdoctor probe` and `ddpdoctor report`: from options to a Report, through a run dir."""

from __future__ import annotations

import json
import os
import socket
import time
import uuid
from dataclasses import asdict, fields
from pathlib import Path
from typing import Optional

from ddpdoctor.core import defaults, redact
from ddpdoctor.core.errors import ToolFailure, UsageError
from ddpdoctor.core.findings import EXIT_INCOMPLETE, EXIT_TOOL, Severity
from ddpdoctor.probe.launch import launcher, live_feed
from ddpdoctor.probe.launch.choice import choose
from ddpdoctor.probe.launch import node_wire
from ddpdoctor.probe.launch.node_gather import NodeGather
from ddpdoctor.probe.launch.node_reporter import NodeReporter
from ddpdoctor.probe.options import ProbeOptions
from ddpdoctor.probe.analysis.scaling import load_points
from ddpdoctor.probe.analysis import outside_steps, regression
from ddpdoctor.probe.run_model import verify as verify_results
from ddpdoctor.probe.run_model.loaded_run import RunModel, collector_paused
from ddpdoctor.probe.records.rundir import META_FILE, OUTCOME_FILE, RANK_TELEMETRY_GLOB, REPORT_FILE
from ddpdoctor.probe.run_model.outcome import Outcome, ProbeMeta
from ddpdoctor.probe.report import build_report
from ddpdoctor.probe.records.rundir import DDP_OVERRIDES_FILE
from ddpdoctor.core.files import write_atomic
from ddpdoctor.report import json as json_report
from ddpdoctor.report.model import Report


# Multi-node: how long another node keeps trying to reach node 0's ddpdoctor, and how long it
# waits for the verdict once its own job ended (node 0 may be ending its ranks and judging).
CONNECT_WINDOW_S = 120.0
VERDICT_WAIT_S = 90.0


def default_run_dir(script: str) -> Path:
    stem = Path(script).stem if not script.endswith(os.sep) else "run"
    return Path("ddpdoctor-runs") / f"{time.strftime('%Y%m%d-%H%M%S')}-{stem}-{uuid.uuid4().hex[:6]}"


def pg_timeout_for(options: ProbeOptions) -> float:
    """The process-group timeout imposed in every rank: long enough that the watchdog sees the
    stall and takes stacks first, short enough that a hang surfaces in seconds."""
    stall = options.stall_timeout_s or defaults.STALL_FLOOR_S
    return max(30.0, 3 * stall)


def make_run_dir(path: Path) -> None:
    try:
        path.mkdir(parents=True, exist_ok=False, mode=0o700)
    except FileExistsError:
        if any(path.iterdir()):
            raise UsageError(f"--run-dir {path} exists and is not empty") from None
        os.chmod(path, 0o700)
    except OSError as exc:
        raise ToolFailure(f"cannot create run dir {path}: {exc.strerror}") from None


def probe(options: ProbeOptions, fail_on: Severity, ignore: set[str], backend: str = "gloo",
          use_pyspy: bool = True, trace: Optional[str] = None) -> Report:
    options.validate()
    launcher_name, launcher_reason = choose(options.launcher, options.script, options.module)
    run_dir = Path(options.run_dir) if options.run_dir else default_run_dir(options.script)
    peers = _peers(options, run_dir)  # before the run dir: a gather port in use is bad input
    try:
        make_run_dir(run_dir)
        run_dir = run_dir.resolve()
        if peers is not None:
            peers.run_dir = run_dir
        report = _probe_in(options, run_dir, launcher_name, launcher_reason, fail_on, ignore,
                           backend, use_pyspy, trace, peers)
        if isinstance(peers, NodeGather):
            # The built report as data, scrubbed, straight to the node link's codec.
            data = json_report.data(report, redact.secret_values())
            peers.send_verdict(report.exit_code, data,
                               f"{peers.nodes_here.host}:{run_dir / REPORT_FILE}")
        return report
    finally:
        if peers is not None:
            peers.close()


def _own_address(host: str, loopback: str) -> str:
    """Where node 0's gather listens when --master-addr names it but resolves to loopback here.
    `localhost`: the other nodes are on this machine (nowhere else can reach a node by that
    name), so loopback. Any other name (Debian maps the machine's own name to 127.0.1.1) is
    reached by the other nodes at this machine's routed address: the source address of the
    route out (a UDP connect sends nothing), never every interface; loopback without a route."""
    if host.lower().rstrip(".") in ("localhost", "localhost.localdomain", "ip6-localhost"):
        return "127.0.0.1"
    try:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
            probe.connect(("192.0.2.1", 9))  # TEST-NET-1: only the route is looked up
            routed = probe.getsockname()[0]
    except OSError:
        return loopback
    return routed if routed and not routed.startswith(("0.", "127.")) else loopback


def _peers(options: ProbeOptions, run_dir: Path):
    """Multi-node: node 0 gathers (NodeGather), every other node reports to it (NodeReporter)."""
    if options.nnodes <= 1:
        return None
    host, port = options.node0_endpoint
    key = node_wire.job_token(options.gather_token)
    job = node_wire.job_identity(options.script, options.nnodes, f"{host}:{port}")
    if options.node_rank == 0:
        try:
            bind = socket.gethostbyname(host)
        except OSError as exc:
            raise UsageError(f"--master-addr {host} does not resolve on node 0: {exc}") from None
        if bind.startswith("127.") and not _is_ip(host):
            bind = _own_address(host, bind)
        return NodeGather(str(run_dir), port, options.nnodes, socket.gethostname(), bind,
                          options.nproc_per_node, key=key, job=job,
                          static_ranks=not options.rdzv_endpoint)
    # Node 0 may start later (srun's start is not instant) and needs a moment to bind.
    return NodeReporter(str(run_dir), host, port, options.node_rank,
                        time.monotonic() + min(options.timeout_s, CONNECT_WINDOW_S),
                        nproc=options.nproc_per_node, key=key, job=job)


def _probe_in(options, run_dir, launcher_name, launcher_reason, fail_on, ignore, backend, use_pyspy,
              trace, peers) -> Report:
    run_id = uuid.uuid4().hex
    pg_timeout = pg_timeout_for(options)
    meta = ProbeMeta(
        script=options.script,
        args=[redact.scrub(a) for a in options.args],  # a token passed as an argument stays out
        nproc_per_node=options.nproc_per_node,
        nnodes=options.nnodes, node_rank=options.node_rank, world_size=options.world_size,
        max_steps=options.max_steps, steps_per_epoch=options.steps_per_epoch,
        stall_timeout_s=options.stall_timeout_s, pg_timeout_s=pg_timeout,
        timeout_s=options.timeout_s, backend=backend, launcher=launcher_name,
        launcher_reason=launcher_reason,
        started=time.time(), module=options.module, cpu=options.cpu)
    write_atomic(run_dir / META_FILE, json.dumps(asdict(meta), indent=2) + "\n", mode=0o600)
    _store_perf_inputs(options, run_dir)
    with live_feed.showing(options, str(run_dir), launcher_name) as feed:  # the job shown while it runs (live view)
        outcome = launcher.run_job(options, str(run_dir), run_id, pg_timeout, use_pyspy=use_pyspy,
                                   launcher=launcher_name, peers=peers, live=feed)
    if isinstance(peers, NodeReporter):
        return _as_other_node(peers, outcome, options, fail_on)
    if outcome.status == "run_dir_failed" and not (run_dir / META_FILE).is_file():
        # The run dir is gone: nothing to judge. Say so; --json elsewhere still gets this.
        return Report(command="probe", results=[], fail_on=fail_on, run_dir=str(run_dir),
                      header=f"{options.script}: the job was ended", tool_error=outcome.stack_note)
    try:
        # Its log tail comes from job.log, scrubbed as it was written (joblog.py).
        write_atomic(run_dir / OUTCOME_FILE, json.dumps(outcome.to_dict(), indent=2) + "\n", mode=0o600)
    except ToolFailure as exc:
        # The run dir filled up (or went away) while the job ran: judge the outcome held in
        # memory and say what could not be stored; --json elsewhere still gets the report.
        report = analyse(run_dir, fail_on, ignore, trace, outcome=outcome)
        report.tool_error = str(exc)
        return report
    if options.scaling and outcome.status != "interrupted":
        from ddpdoctor.probe.launch import scaling

        scaling.run_sizes(options, run_dir, lambda sub: probe(sub, fail_on, ignore, backend, use_pyspy))
    if options.verify_fix and outcome.status != "interrupted":
        from ddpdoctor.probe.launch import verify

        first = analyse(run_dir, fail_on, ignore)
        verify.run_fixes(options, run_dir, first,
                         lambda sub: probe(sub, fail_on, ignore, backend, use_pyspy))
    return analyse(run_dir, fail_on, ignore, trace)


def _store_perf_inputs(options: ProbeOptions, run_dir: Path) -> None:
    """What the performance checks need beside the telemetry: the DDP arguments --verify-fix
    sets in the ranks (inrank/ddp.py reads them), and the --baseline report's numbers (DDP607)."""
    if options.ddp_overrides:  # inrank/ddp.py reads it
        write_atomic(run_dir / DDP_OVERRIDES_FILE, json.dumps(options.ddp_overrides) + "\n",
                     mode=0o600)
    if options.baseline:
        options.validate()  # read --baseline once, there (a no-op when already validated)
        regression.store(run_dir, options.loaded_baseline)


def _as_other_node(reporter: NodeReporter, outcome: Outcome, options: ProbeOptions,
                   fail_on: Severity) -> Report:
    """A node other than node 0: hand over the end of the job, take node 0's verdict."""
    reporter.job_ended(outcome.to_dict(), time.monotonic() + VERDICT_WAIT_S)
    node0 = reporter.node0
    floor, why = own_evidence(outcome, options, reporter.run_dir)
    if reporter.verdict is not None:
        try:
            # clean_deep refuses a report nested deeper than any we write (BadMessage, a
            # ValueError): node 0's word, never this node's traceback
            data = node_wire.clean_deep(reporter.verdict["report"])
            report = Report.from_dict(data, fail_on)
        except (ValueError, TypeError, KeyError, AttributeError, UsageError, RecursionError):
            report = Report(command="probe", results=[], fail_on=fail_on,
                            tool_error=f"node 0's ddpdoctor ({node0}) sent a report this node cannot read")
            data = {}
        where = node_wire.clean(reporter.verdict["where"], 4200)
        relayed = reporter.verdict["exit_code"]
        # A node never reports better than its own evidence: a relayed verdict may only make
        # this node's result worse (a forged or mistaken PASS cannot hide its own crash).
        code = relayed
        if floor and relayed == 0:
            code = floor
        elif floor == 1 and relayed == 4:
            code = 1  # its own crash is a finding, not only a gap
        line = (f"node {options.node_rank}'s ranks were judged with the whole job on node 0; "
                f"the report is {where}: {wire_status(data)}, exit {relayed}")
        if code != relayed:
            line += f"; but {why}: exit {code}"
            # --json says what this node exits with: node 0's "pass" beside exit 1 would let a
            # pipeline reading the status miss this node's own crash
            data = {**data, "status": {1: "fail", 4: "incomplete"}.get(code, "error"), "exit_code": code,
                    "node_status": line}
        report.forced_exit = code
        report.relayed = data  # --json on this node is node 0's report, as node 0 sent it
        report.metrics.update({"node_role": "node", "node_line": line})
        return report
    if reporter.never_reached():
        # Never reached node 0 (a port or address differing between the nodes, node 0 not
        # started): no verdict could be reached, which is incomplete, not ddpdoctor's failure;
        # this node's own crash still makes it a finding.
        reason = reporter.lost_reason or reporter.never_answered()
        report = Report(command="probe", results=[], fail_on=fail_on, incomplete_because=[reason])
        code = floor or EXIT_INCOMPLETE
    else:
        reason = reporter.lost_reason or f"node 0's ddpdoctor ({node0}) sent no verdict"
        report = Report(command="probe", results=[], fail_on=fail_on, tool_error=reason)
        code = 1 if floor == 1 else EXIT_TOOL
    report.forced_exit = code
    report.metrics.update({"node_role": "node",
                           "node_line": f"{reason}; this node's ranks were ended (local run dir: {reporter.run_dir})"
                                        + (f"; {why}" if floor else "") + f": exit {code}"})
    return report


def _is_ip(text: str) -> bool:
    try:
        socket.inet_aton(text)
        return True
    except OSError:
        return False


def wire_status(data: dict) -> str:
    return node_wire.clean(str(data.get("status", "?")), 20).upper()


def own_evidence(outcome: Outcome, options: ProbeOptions, run_dir: Path) -> tuple[int, str]:
    """The least this node may exit with, from what its own ranks did: 1 when they crashed or
    exited non-zero by themselves, 4 (incomplete) when one never started; 0 and "" otherwise."""
    failed = sorted(r for r, c in outcome.exit_codes.items() if c not in (None, 0))
    if outcome.status in ("crashed", "launch_failed"):
        what = (f"rank(s) {', '.join(map(str, failed))} of this node exited non-zero" if failed
                else "this node's job crashed" if outcome.status == "crashed"
                else "this node's job could not start")
        return 1, what
    started = {p.name for p in run_dir.glob(RANK_TELEMETRY_GLOB)}
    if outcome.status != "interrupted" and len(started) < options.nproc_per_node:
        return 4, f"only {len(started)} of this node's {options.nproc_per_node} rank(s) started"
    if outcome.status == "completed" and failed:
        return 1, f"rank(s) {', '.join(map(str, failed))} of this node exited non-zero"
    return 0, ""


# What each ProbeMeta field must hold, by its annotation; ints within reason (a world size of a
# billion would have the report enumerate every rank).
_META_TYPES = {"str": str, "int": int, "bool": bool, "float": (int, float), "list[str]": list,
               "Optional[float]": (int, float, type(None))}


def _check_meta(meta: ProbeMeta) -> None:
    """probe.json from another tool or version, or edited by hand: bad input, said now, rather
    than a crash halfway through the report. Raises ValueError naming the field."""
    for f in fields(ProbeMeta):
        value, wanted = getattr(meta, f.name), _META_TYPES.get(str(f.type))
        if wanted is None:
            continue
        bad = not isinstance(value, wanted) or (wanted is int and isinstance(value, bool))
        bad = bad or (isinstance(value, list) and not all(isinstance(v, str) for v in value))
        bad = bad or (type(value) is int and not 0 <= value <= 1_000_000)
        if bad:
            raise ValueError(f"{f.name} is {str(value)[:60]!r}")


def analyse(run_dir: str | os.PathLike, fail_on: Severity, ignore: set[str],
            trace: Optional[str] = None, outcome: Optional[Outcome] = None) -> Report:
    """Judge a run dir (finished or killed at any moment) and store the report in it.
    `outcome`: how the job ended, for a run dir that could not store it."""
    root = Path(run_dir)
    if not (root / META_FILE).is_file():
        raise UsageError(f"{root} is not a ddpdoctor run dir (no {META_FILE})")
    with collector_paused():  # the records are built by the hundred thousand, none garbage yet
        try:
            model = RunModel.load(root)
            model.scaling = load_points(root, model)
            model.verified = verify_results.load(root)  # probe --verify-fix (launch/verify.py)
            model.regression_baseline = regression.stored(root)  # probe --baseline (DDP607)
            model.watch = outside_steps.load_looks(root)  # the watchdog's looks in quiet spells
            _check_meta(model.meta)
        except (ValueError, TypeError, KeyError, AttributeError) as exc:
            raise UsageError(f"{root}/{META_FILE} is unreadable: {exc}") from None
        if model.outcome is None:
            model.outcome = outcome
        report = build_report(model, fail_on, ignore, lint=True)  # with DDP8xx of the same script
    if trace:
        from ddpdoctor.probe import trace as trace_report

        try:
            trace_report.write(model, trace)
        except ToolFailure as exc:
            report.notes.append(f"--trace not written: {exc}")
    try:
        write_atomic(root / REPORT_FILE, json_report.render(report, redact.secret_values()), mode=0o600)
    except ToolFailure as exc:
        report.notes.append(f"report.json not written: {exc}")
    return report
