"""Start the user's script under torchrun with the instruments, supervise it, end it.

The job runs in its own session (so a Ctrl-C at the terminal reaches ddpdoctor alone, which
then ends the job in order) with its output in RUN_DIR/job.log. The supervisor loop has one
deadline for everything (--timeout) and the watchdog's stall timeout; on a stall it takes every
rank's stack before ending the job.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

from ddpdoctor.core import defaults
from ddpdoctor.preflight.node import port_listener
from ddpdoctor.probe.inrank.parent_death import killed_with_parent
from ddpdoctor.probe.launch import machine_load, stacks, teardown
from ddpdoctor.probe.launch.joblog import JobLog
from ddpdoctor.probe.inrank import config as rank_config
from ddpdoctor.probe.launch.spec import JobSpec
from ddpdoctor.probe.records import read_ahead
from ddpdoctor.probe.records.read_ahead import ReadAhead
from ddpdoctor.probe.records.rundir import LOG_FILE, TORCHRUN_LOG_DIR
from ddpdoctor.probe.run_model.loaded_run import collector_paused
from ddpdoctor.probe.run_model.outcome import Outcome
from ddpdoctor.probe.launch.node_gather import NodeGather
from ddpdoctor.probe.launch.node_reporter import NodeReporter
from ddpdoctor.probe.launch.watchdog import Lookout, ProgressWatch, job_cpu_seconds

POLL_S = 0.2
# A quiet spell this long: the rank files are read ahead for the analysis, at most this much of
# each poll (records/read_ahead.py).
READ_AHEAD_AFTER_S = 1.0
READ_AHEAD_SLICE_S = 0.25
# Multi-node: how long node 0 waits, after its own ranks ended, for the other nodes' ends.
FINAL_GRACE_S = 15.0
# Multi-node: how long node 0 waits for every node's ddpdoctor to connect before it names the
# missing ones (the other nodes keep trying to reach node 0 as long: run.CONNECT_WINDOW_S).
JOIN_WINDOW_S = 120.0
TORCHRUN_EXIT = re.compile(r"rank\s*:\s*(\d+)\s*\(local_rank:\s*\d+\)\s*\n\s*exitcode\s*:\s*(-?\d+)")


@dataclass
class Interrupt:
    """Signals received by ddpdoctor while the job ran."""

    signum: Optional[int] = None
    handlers: dict = field(default_factory=dict)

    def install(self) -> None:
        for sig in (signal.SIGINT, signal.SIGTERM):
            try:
                self.handlers[sig] = signal.signal(sig, self._on_signal)
            except ValueError:  # not the main thread (the Python API from a worker thread)
                pass

    def _on_signal(self, signum, _frame) -> None:
        self.signum = signum

    def restore(self) -> None:
        for sig, handler in self.handlers.items():
            signal.signal(sig, handler)


SITE_DIR = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "inrank", "site")
# Run by its path, not `-m ddpdoctor.probe.inrank.bootstrap`: `-m` puts the working directory
# first on sys.path, where a checkout's own ./ddpdoctor would shadow this one (bootstrap.py).
BOOTSTRAP = os.path.join(os.path.dirname(SITE_DIR), "bootstrap.py")


def job_command(options: JobSpec, launcher: str) -> list[str]:
    if launcher == "none":
        # The script's own process runs under the bootstrap; its children get the instruments
        # from the sitecustomize on PYTHONPATH (job_environment).
        cmd = [sys.executable, BOOTSTRAP]
        if options.module:
            cmd += ["-m"]
        return cmd + [options.script, *options.args]
    return torchrun_command(options)


# torchrun's own main, then out without interpreter finalization: once main() returns the ranks
# have exited and the store is closed, and tearing torch's C++ state down still took 0.5-4 s per
# probe (measured: 4.3 s on a loaded 2-core machine) before ddpdoctor could see the job end. A
# failure (an exception out of main) keeps Python's own path: traceback, exit status 1.
TORCHRUN_MAIN = ("import os, sys; sys.argv[0] = 'torchrun'; from torch.distributed.run import main; "
                 "main(); sys.stdout.flush(); sys.stderr.flush(); os._exit(0)")


def torchrun_command(options: JobSpec) -> list[str]:
    cmd = [sys.executable, "-c", TORCHRUN_MAIN,
           f"--nproc-per-node={options.nproc_per_node}", f"--nnodes={options.nnodes}",
           "--max-restarts=0", "--monitor-interval=0.1"]
    if options.rdzv_endpoint:
        cmd += ["--rdzv-backend=c10d", f"--rdzv-endpoint={options.rdzv_endpoint}",
                f"--node-rank={options.node_rank}"]
    elif options.master_addr or options.master_port or options.nnodes > 1:
        cmd += [f"--node-rank={options.node_rank}",
                f"--master-addr={options.master_addr or '127.0.0.1'}",
                f"--master-port={options.master_port or defaults.MASTER_PORT}"]
    else:
        cmd += ["--standalone"]
    cmd += [BOOTSTRAP]
    if options.module:
        cmd += ["-m"]
    return cmd + [options.script, *options.args]


def store_port(options: JobSpec, launcher: str) -> Optional[int]:
    """The port the launcher's own store will listen on, when ddpdoctor starts it on this
    machine (a single-node torchrun given --master-port or --rdzv-endpoint); None otherwise
    (--standalone picks a free port, the script's own launcher picks its own, another node
    serves a multi-node job's)."""
    if launcher != "torchrun" or options.nnodes != 1:
        return None
    if options.rdzv_endpoint:
        port = options.rdzv_endpoint.rpartition(":")[2]
        return int(port) if port.isdigit() else None
    if options.master_addr or options.master_port:
        return options.master_port or defaults.MASTER_PORT
    return None


def port_fact(port: Optional[int], host: str, when: str) -> Optional[dict]:
    """Bind the port as the store would (and let it go at once): the fact DDP104 judges, with
    the process holding it when this user may see it."""
    if port is None:
        return None
    sock, info = port_listener.bind_rendezvous(port)
    if sock is not None:
        sock.close()
    return {**info, "host": host, "when": when}


def job_environment(options: JobSpec, run_dir: str, run_id: str, pg_timeout_s: float,
                    launcher: str = "torchrun") -> dict[str, str]:
    env = dict(os.environ)
    env.update({
        rank_config.ENV_RUN_DIR: run_dir,
        rank_config.ENV_RUN_ID: run_id,
        rank_config.ENV_MAX_STEPS: str(options.max_steps),
        rank_config.ENV_STEPS_PER_EPOCH: str(options.steps_per_epoch),
        rank_config.ENV_PG_TIMEOUT: str(pg_timeout_s),
        rank_config.ENV_CHECKED_BUCKET_ITERATIONS: str(options.checked_bucket_iterations),
        rank_config.ENV_LAUNCHER: launcher,
        rank_config.ENV_CPU: "1" if options.cpu else "0",
        # DETAIL checks every collective's op, shape and dtype across ranks before it runs; the
        # C++ log level makes it (and DDP's unused-parameter names) speak.
        "TORCH_DISTRIBUTED_DEBUG": "DETAIL",
        "TORCH_CPP_LOG_LEVEL": env.get("TORCH_CPP_LOG_LEVEL", "INFO"),
        "PYTHONUNBUFFERED": "1",
    })
    env.setdefault("OMP_NUM_THREADS", "1")
    env.pop("DDPDOCTOR_GATHER_TOKEN", None)  # multi-node: ddpdoctor's secret, not the ranks' business
    # torchrun's per-rank log and error-file dirs: in the run dir, not one more torchelastic_*
    # dir in /tmp per probe (PET_LOG_DIR is torchrun's --log-dir; one the user set wins).
    env.setdefault("PET_LOG_DIR", os.path.join(run_dir, TORCHRUN_LOG_DIR))
    if launcher == "none":
        env["PYTHONPATH"] = os.pathsep.join(p for p in (SITE_DIR, env.get("PYTHONPATH", "")) if p)
        # What torchrun would have said: how many processes this node runs (--cpu makes
        # torch.cuda.device_count() answer it, for scripts that size their world from the GPUs).
        env["LOCAL_WORLD_SIZE"] = str(options.nproc_per_node)
    return env


def run_job(options: JobSpec, run_dir: str, run_id: str, pg_timeout_s: float,
            use_pyspy: bool = True, launcher: str = "torchrun", peers=None, live=None) -> Outcome:
    """Run the job to its end (completed, crashed, stalled, timed out or interrupted).
    `peers`: on a multi-node probe, node 0's NodeGather or another node's NodeReporter.
    `live`: the live view (LiveFeed), shown this run's watchdog rather than reading the ranks'
    records a second time."""
    port = store_port(options, launcher)
    host = (options.rdzv_endpoint.rpartition(":")[0] if options.rdzv_endpoint else options.master_addr) or "localhost"
    before = port_fact(port, host, "before")
    if before is not None and before.get("status") != "listening":
        # Started now, torchrun's agent would fail at its store before any rank ran (EADDRINUSE):
        # not started, and said so (DDP104 judges the fact).
        return Outcome("not_launched", 0.0, port_bind=before)
    children_before = teardown.children_now()
    teardown.subreaper(True)
    log_path = Path(run_dir) / LOG_FILE
    started = time.monotonic()
    load_from = machine_load.sample()
    interrupt = Interrupt()
    interrupt.install()
    try:
        with JobLog(log_path, limit_mb=options.log_limit_mb) as log:  # secrets scrubbed as it arrives
            try:
                proc = subprocess.Popen(
                    job_command(options, launcher), stdin=subprocess.DEVNULL, stdout=log.fd,
                    stderr=subprocess.STDOUT,
                    env=log.with_rank_prefixes(job_environment(options, run_dir, run_id, pg_timeout_s,
                                                               launcher), launcher),
                    start_new_session=True,
                    preexec_fn=killed_with_parent if launcher == "torchrun" else teardown.die_with_parent)
            except OSError as exc:
                return Outcome("launch_failed", 0.0, log_tail=f"could not start the job: {exc}")
            outcome = _supervise(proc, options, run_dir, run_id, started, interrupt, use_pyspy, peers,
                                 health=lambda: _run_dir_trouble(run_dir, log), live=live,
                                 script_is_launcher=launcher == "none")
    finally:
        interrupt.restore()
        teardown.reap_new_children(children_before)
        teardown.subreaper(False)
    # After every process of the job was reaped: their CPU is then the job's, not other work's.
    outcome.machine_load = machine_load.between(load_from, machine_load.sample())
    outcome.log_tail = _tail(log_path)
    outcome.exit_codes.update(_torchrun_exit_codes(outcome.log_tail))
    if outcome.launcher_exit not in (None, 0) and outcome.status == "crashed":
        # Who holds the port now, should the launcher's error be that it was taken meanwhile.
        outcome.port_bind = port_fact(port, host, "after")
    if isinstance(peers, NodeGather):
        _gather_the_end(peers, outcome, started)
    return outcome


def _gather_the_end(gather: NodeGather, outcome: Outcome, started: float) -> None:
    """Node 0, its own ranks ended: collect how every other node's job ended. A node still
    running after a grace period (its ranks cannot finish without node 0's) is told to end."""
    gather.wait_finals(time.monotonic() + (FINAL_GRACE_S if outcome.status == "completed" else 3.0))
    if gather.connected():
        gather.end_all("node 0's job has ended")
        gather.wait_finals(time.monotonic() + FINAL_GRACE_S)
    gather.mark_never_connected()
    for state in gather.nodes.values():
        for rank, code in state.exit_codes.items():
            outcome.exit_codes.setdefault(int(rank), code)
        if state.outcome == "crashed" and outcome.status == "completed":
            outcome.status = "crashed"
    outcome.nodes = gather.states()
    outcome.wall_s = time.monotonic() - started


def _run_dir_trouble(run_dir: str, log: JobLog) -> Optional[str]:
    """Why the run dir can no longer take the job's records: it was removed, or a write failed
    (a full disk). The job is then ended: telemetry that cannot be stored cannot be judged."""
    if not os.path.isdir(run_dir):
        return f"the run dir {run_dir} disappeared while the job ran"
    return log.error


def _supervise(proc: subprocess.Popen, options: JobSpec, run_dir: str, run_id: str,
               started: float, interrupt: Interrupt, use_pyspy: bool, peers=None,
               health=lambda: None, script_is_launcher: bool = False, live=None) -> Outcome:
    watch = ProgressWatch(run_dir, options.stall_timeout_s)
    if live is not None:
        live.follow(watch)
    deadline = started + options.timeout_s
    gather = peers if isinstance(peers, NodeGather) else None
    if gather is not None:
        gather.watches.append(watch)  # other nodes' records as the gather checked them
    reporter = peers if isinstance(peers, NodeReporter) else None
    ahead = ReadAhead(run_dir) if reporter is None else None  # node 0 (or the only node) analyses
    status = None
    stall_s = None
    taken: list = []
    note = ""

    def local_stacks() -> tuple[list, str]:
        return stacks.capture(run_dir, stacks.rank_processes(run_dir, run_id, proc.pid), use_pyspy)

    def every_stack() -> tuple[list, str]:
        """This node's ranks, and on node 0 every other node's, asked of all at once."""
        here, why = local_stacks()
        if gather is None:
            return here, why
        for stack in here:
            stack.host = gather.nodes_here.label()
        there, notes = gather.stacks(stacks.PYSPY_TIMEOUT_S + 3.0)
        return sorted(here + there, key=lambda s: s.rank), "; ".join(n for n in [why, *notes] if n)

    lookout = Lookout(run_dir, watch, every_stack,
                      lambda: stacks.rank_processes(run_dir, run_id, proc.pid),
                      local_stacks if gather is not None else None,
                      lambda: job_cpu_seconds(proc.pid), script_is_launcher)
    while True:
        code = proc.poll()
        # Node 0 takes other nodes' records in slices (node_gather.POLL_BUDGET_S); while some are
        # still queued the loop turns at once and judges no stall: they may be the progress.
        behind = gather is not None and gather.poll()
        if reporter is not None:
            reporter.poll(local_stacks)
        watch.poll()
        if ahead is not None and watch.quiet_for() >= READ_AHEAD_AFTER_S:
            with collector_paused():  # records by the hundred thousand, none garbage (as in the analysis)
                ahead.step(READ_AHEAD_SLICE_S)  # the analysis after a stall verdict reads the rest only
        if code is not None:
            status = "completed" if code == 0 else "crashed"
            break
        if interrupt.signum is not None:
            status = "interrupted"
            taken, note = every_stack()
            break
        trouble = health()
        if trouble:
            status, note = "run_dir_failed", trouble
            break
        if reporter is not None and reporter.ended_by_node0:
            status, note = "ended", f"ended by node 0: {reporter.ended_by_node0}"
            break
        if reporter is not None and reporter.lost_reason:
            status, note = "node0_lost", reporter.lost_reason
            break
        if gather is not None and gather.lost():
            # A node's ranks can no longer take part: the others will only wait. Say where
            # every rank that is left stands, then end the job.
            status = "node_lost"
            taken, note = every_stack()
            stall_s = watch.quiet_for()
            break
        if time.monotonic() >= deadline:
            taken, note = every_stack()
            stall_s = watch.quiet_for()
            # Ranks that never blocked (busy in their own code) make "timeout_busy": incomplete.
            status = lookout.at_timeout((taken, note)) if reporter is None else "timeout"
            break
        if gather is not None and gather.waiting():
            # A node has not connected yet: torchrun's rendezvous waits for it, so nothing can
            # advance and a stall verdict would blame the ranks. Wait for it within the join
            # window (nodes never start at the same instant), then name it.
            if time.monotonic() - started < JOIN_WINDOW_S:
                time.sleep(POLL_S)
                continue
            status, note = "node_lost", gather.never_joined(JOIN_WINDOW_S)
            stall_s = watch.quiet_for()
            break
        if reporter is None and not behind and (lookout.stalled() or lookout.due()):
            # Node 0 (or a single node) judges stalls: it sees every rank. Another node only
            # forwards; node 0 asks it for stacks. A quiet spell is a stall only when a rank
            # is blocked on the others; ranks busy in their own code run on, up to --timeout.
            quiet = watch.quiet_for()
            if (lookout.stalled() or lookout.look().blocked) and quiet >= watch.timeout_s \
                    and not watch.poll():
                taken, note = lookout.stacks, lookout.note
                status, stall_s = "stalled", quiet
                break
        if not behind:
            time.sleep(POLL_S)
    # Cause before consequence: from this moment the probe ends the job, and every error after
    # it is the teardown's doing (analysis/rank_state.py). Another node ended by node 0 counts
    # from when it was told.
    ended_at = None if status == "completed" else time.time()
    if reporter is not None and reporter.ended_at is not None:
        ended_at = min(ended_at or reporter.ended_at, reporter.ended_at)
    if gather is not None and status != "completed":
        gather.end_all(f"node 0's job {status}", at=ended_at)
    if status == "completed":
        teardown.let_ranks_finish(stacks.rank_processes(run_dir, run_id, proc.pid).values())
    signalled_at = time.time()
    leftovers = teardown.end_job(proc.pid, run_id)
    if status == "completed":
        leftovers = [pid for pid in leftovers if pid != proc.pid]
        if leftovers:
            ended_at = signalled_at  # what they raised on the SIGTERM is the teardown's doing
    try:
        launcher_exit = proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        launcher_exit = None
    read_ahead.hand_over(ahead)
    outcome = Outcome(status, time.monotonic() - started, {}, stall_s, watch.timeout_s, taken, note,
                      launcher_exit, "", leftovers if status == "completed" else [],
                      interrupt.signum if status == "interrupted" else None)
    outcome.ended_at = ended_at
    return outcome


def _tail(path: Path, max_bytes: int = 20000) -> str:
    try:
        with open(path, "rb") as handle:
            handle.seek(0, os.SEEK_END)
            size = handle.tell()
            handle.seek(max(0, size - max_bytes))
            return handle.read().decode("utf-8", "replace")
    except OSError:
        return ""


def _torchrun_exit_codes(log_tail: str) -> dict[int, int]:
    """torchrun's failure summary names each failed rank's exit code (negative: a signal)."""
    return {int(rank): int(code) for rank, code in TORCHRUN_EXIT.findall(log_tail)}
