"""Node 0's gather at scale: 64, 256 and 1,024 simulated ranks (8 per node), replaying a real
rank's telemetry (tests/probe_recordings/healthy) at a real step rate, until every rank stops
(rank 0 alone enters one more all_reduce, as the rank-0-only collective does).

    python -m benchmarks.gather_scale                 # 64, 256, 1024 ranks
    python -m benchmarks.gather_scale --ranks 1024 --step-rate 2 --run-s 15 --stall 5
    GATHER_SCALE_PROFILE=/tmp/node0.prof python -m benchmarks.gather_scale --ranks 1024
    python -m benchmarks.gather_scale --synth 4096    # the run dir written directly, then analysed
    GATHER_SCALE_PROFILE=/tmp/analysis.prof python -m benchmarks.gather_scale --analyse RUN_DIR

Every size's run dir is kept (its path printed): `--analyse` times the analysis of one again
(loading the run, the checks, the report rendered), CPU and wall apart: on a shared machine the
wall time is inflated by the others' work, the CPU time is this process's own. `--synth` writes
the run dir the gather would have written (the same replayed ranks, a step apart, rank 0's lone
all_reduce, the stalled outcome with every rank's stack) without the network: for world sizes
a loaded machine cannot stream (4,096 ranks), the analysis's share measured alone.

Node 0 is its own process (`--node0`): the real NodeGather on loopback with a token, the real
watchdog (ProgressWatch), the live view on a terminal of its own (unless --no-live), the stall
verdict, stacks asked of every node at once, the end, the real analysis of the run dir into the
report and the terminal report, as launcher.py and probe/driver.py do. The fake nodes are threads
of this process, speaking the real protocol (node 0's challenge, then the hello: node_wire.py);
node 0's own 8 ranks are written into its run dir by this process, as local ranks would. Every
rank does the same steps (a node thread that falls behind catches up): in a real DDP job no rank
can finish a step whose all-reduce another rank never entered.

Printed per world size: node 0's CPU (cores busy while the job streams, and on average from the
first record to the report), its peak RSS, the time from the last record of any rank to the
report on screen (includes the stall timeout) by phase, the report's size (JSON bytes, terminal
lines) and its findings. GATHER_SCALE_PROFILE: node 0's main thread profiled while it streams.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import random
import resource
import secrets
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

from ddpdoctor.probe.launch import node_wire as wire
from ddpdoctor.probe.records.rundir import rank_telemetry_name

RECORDING = REPO / "tests" / "probe_recordings" / "healthy" / "rank-0.jsonl"
TOKEN = "benchmark-token-" + "0" * 8
SCRIPT = "train.py"


# ----------------------------------------------------------------------------- replayed ranks

def templates() -> tuple[list[dict], list[dict]]:
    """A real rank's records before its first batch, and one step's worth (batch .. step)."""
    records = [json.loads(line) for line in RECORDING.read_text().splitlines() if line.strip()]
    first = next(i for i, r in enumerate(records) if r["kind"] == "batch")
    prelude = [r for r in records[:first] if r["kind"] in ("start", "init_enter", "init", "ddp", "loader")]
    step_end = next(i for i, r in enumerate(records) if r["kind"] == "step" and i > first)
    step = [r for r in records[first:step_end + 1] if r["kind"] != "bucket_layout"]
    return prelude, step


class Rank:
    def __init__(self, rank: int, world: int, prelude: list[dict], step: list[dict]) -> None:
        self.rank, self.world, self.step_records = rank, world, step
        self.steps = 0
        self.seq = 0
        self.prelude = prelude

    def start(self, now: float | None = None) -> str:
        out = []
        for record in self.prelude:
            r = dict(record, t=time.time() if now is None else now)
            if r["kind"] in ("start", "init"):
                r.update(rank=self.rank, world_size=self.world)
            if r["kind"] == "start":
                r.update(local_rank=self.rank % 8, pid=100000 + self.rank, host=f"n{self.rank // 8}")
            out.append(json.dumps(r, separators=(",", ":")))
        return "\n".join(out) + "\n"

    def one_step(self, now: float | None = None) -> str:
        out = []
        now = time.time() if now is None else now
        for record in self.step_records:
            r = dict(record, t=now)
            kind = r["kind"]
            if kind == "batch":
                # Each rank its own samples (a DistributedSampler's shards), and the batch's
                # fingerprint theirs: a replayed fingerprint alike on every rank is no real run.
                samples = [f"{random.getrandbits(64):016x}" for _ in r.get("samples", [])]
                r.update(index=self.steps, step=self.steps, samples=samples,
                         fingerprint=hashlib.blake2b("|".join(samples).encode(), digest_size=8).hexdigest())
            elif kind in ("collective", "collective_done"):
                r["seq"] = self.seq
                if kind == "collective":
                    r["step"] = self.steps
            elif kind == "bucket":
                r.update(start=now - 0.003, end=now, step=self.steps, iteration=self.steps)
            elif kind == "grads":
                r.update(iteration=self.steps, step=self.steps + 1)
            elif kind == "step":
                r["step"] = self.steps + 1
            out.append(json.dumps(r, separators=(",", ":")))
        self.seq += 1
        self.steps += 1
        return "\n".join(out) + "\n"

    def lone_collective(self, now: float | None = None) -> str:
        """Rank 0 alone enters an all_reduce the others never call: the stall."""
        return json.dumps({"kind": "collective", "t": time.time() if now is None else now, "group": "WORLD", "group_ranks": None,
                           "seq": self.seq, "op": "all_reduce", "shapes": [[1]], "dtypes": ["float32"],
                           "step": self.steps, "site": {"file": SCRIPT, "line": 27, "func": "<module>"}},
                          separators=(",", ":")) + "\n"

    def stack(self) -> dict:
        if self.rank == 0:
            frames = [{"func": "all_reduce", "file": "torch/distributed/distributed_c10d.py", "line": 3245},
                      {"func": "<module>", "file": SCRIPT, "line": 27}]
        else:
            frames = [{"func": "<module>", "file": SCRIPT, "line": 30}]
        return {"rank": self.rank, "pid": 100000 + self.rank, "method": "py-spy", "frames": frames,
                "idle": True, "text": ""}


class FakeNodeThread(threading.Thread):
    """One simulated node: its ranks' telemetry forwarded as a node's ddpdoctor does."""

    def __init__(self, node_rank: int, ranks: list[Rank], port: int, job: str, start: float,
                 steps: int, step_s: float) -> None:
        super().__init__(daemon=True)
        self.node_rank, self.ranks, self.port, self.job = node_rank, ranks, port, job
        self.start_at, self.steps, self.step_s = start, steps, step_s
        self.last_record = 0.0
        self.done = threading.Event()  # every step of this node's ranks sent
        self.error = ""
        self.lock = threading.Lock()

    def send(self, sock, codec, kind: str, **fields) -> None:
        with self.lock:
            sock.sendall(codec.encode(kind, fields))

    def run(self) -> None:
        try:
            self._run()
        except Exception as exc:  # noqa: BLE001 - reported with the figures
            self.error = repr(exc)

    def _run(self) -> None:
        for _attempt in range(60):  # as a node's ddpdoctor does: a connection closed before the
            try:                    # welcome (node 0 busy with a crowd) is tried again
                sock, reader, codec = self._connect()
                break
            except OSError:
                time.sleep(0.5)
        else:
            raise RuntimeError("never welcomed")
        self.connected = time.monotonic()
        sock.settimeout(None)
        inbox: list[dict] = []
        threading.Thread(target=self._listen, args=(reader, codec, inbox), daemon=True).start()
        for rank in self.ranks:
            self.send(sock, codec, "file", name=rank_telemetry_name(rank.rank), data=rank.start())
        last_beat = 0.0
        ended = False
        sent = 0
        while True:
            now = time.monotonic()
            if now - last_beat >= 1.0:
                last_beat = now
                self.send(sock, codec, "beat", now=time.time())
            # Step k is sent at start + k * step_s, late rather than never: every rank of a DDP
            # job does the same steps (their all-reduces pair up), so a node that fell behind
            # (a busy machine) catches up instead of ending a step short. A world with ranks a
            # step apart and the last all-reduce returned on some only is no real run (the
            # analysis reads the others' records as lost, and judges nothing skipped).
            if sent < self.steps and now >= self.start_at + sent * self.step_s:
                sent += 1
                for rank in self.ranks:
                    self.send(sock, codec, "file", name=rank_telemetry_name(rank.rank), data=rank.one_step())
                self.last_record = time.time()
                if sent == self.steps:
                    self.done.set()
                continue
            while inbox:
                message = inbox.pop(0)
                if message["t"] == "stacks":
                    self.send(sock, codec, "stacks_reply", id=message["id"], note="",
                              stacks=[r.stack() for r in self.ranks])
                elif message["t"] == "end" and not ended:
                    ended = True
                    self.send(sock, codec, "final", outcome={
                        "status": "ended", "exit_codes": {str(r.rank): -15 for r in self.ranks},
                        "ended_at": time.time(), "log_tail": ""})
                elif message["t"] == "verdict":
                    self.send(sock, codec, "bye")
                    return
            time.sleep(0.02)

    def _connect(self):
        codec = wire.Codec(wire.job_token(TOKEN), self.job)
        sock = socket.create_connection(("127.0.0.1", self.port), timeout=30)
        nonce = secrets.token_hex(16)
        reader = sock.makefile("rb")
        first = reader.readline()  # node 0 speaks first: the challenge the hello answers
        if not first:
            sock.close()
            raise OSError("closed before the challenge")
        challenge = codec.decode(first.rstrip(b"\n"), frozenset({"challenge"}))
        sock.sendall(codec.encode("hello", {"node_rank": self.node_rank, "nproc": len(self.ranks),
                                            "host": f"n{self.node_rank}", "addr": "127.0.0.1", "nonce": nonce,
                                            "challenge": challenge["nonce"]}))
        line = reader.readline()
        if not line:
            sock.close()
            raise OSError("closed before the welcome")
        welcome = codec.decode(line.rstrip(b"\n"), frozenset({"welcome", "refused"}))
        if welcome["t"] != "welcome":
            raise RuntimeError(welcome)
        codec.start_session(nonce, welcome["nonce"], node_side=True)
        return sock, reader, codec

    def _listen(self, reader, codec, inbox) -> None:
        for line in reader:
            message = codec.decode(line.rstrip(b"\n"), wire.FROM_NODE0)
            if message["t"] != "beat":
                inbox.append(message)


# ----------------------------------------------------------------------------- node 0

def node0(run_dir: str, port: int, nnodes: int, nproc: int, stall_s: float, live_view: bool) -> None:
    """Node 0's ddpdoctor, as launcher.py runs it, minus torchrun (its ranks are simulated); with
    the live view on a terminal (its own thread, as probe/driver.py shows it) unless --no-live."""
    from dataclasses import asdict

    from ddpdoctor.core.findings import Severity
    from ddpdoctor.probe.records.rundir import META_FILE, OUTCOME_FILE
    from ddpdoctor.probe.run_model.outcome import Outcome, ProbeMeta
    from ddpdoctor.probe.launch.node_gather import NodeGather
    from ddpdoctor.probe.launch.watchdog import ProgressWatch
    from ddpdoctor.probe.launch.launcher import READ_AHEAD_AFTER_S, READ_AHEAD_SLICE_S
    from ddpdoctor.probe.records import read_ahead
    from ddpdoctor.probe.records.read_ahead import ReadAhead
    from ddpdoctor.probe.run_model.loaded_run import collector_paused
    from ddpdoctor.probe.driver import analyse
    from ddpdoctor.report import json as json_report
    from ddpdoctor.report import terminal

    meta = ProbeMeta(script=SCRIPT, args=[], nproc_per_node=nproc, nnodes=nnodes, node_rank=0,
                     world_size=nproc * nnodes, max_steps=0, steps_per_epoch=0, stall_timeout_s=stall_s,
                     pg_timeout_s=30.0, timeout_s=600.0, backend="gloo", launcher="torchrun",
                     launcher_reason="benchmark", started=time.time(), module=False, cpu=False)
    Path(run_dir, META_FILE).write_text(json.dumps(asdict(meta)))
    job = wire.job_identity(SCRIPT, nnodes, f"127.0.0.1:{port}", env={})
    gather = NodeGather(run_dir, port, nnodes, "n0", "127.0.0.1", nproc, key=wire.job_token(TOKEN), job=job)
    feed = None
    if live_view:
        from rich.console import Console

        from ddpdoctor.probe.launch.live_feed import LiveFeed
        from ddpdoctor.probe.options import ProbeOptions
        from ddpdoctor.report import live

        terminal_out = open(os.devnull, "w")
        feed = LiveFeed(ProbeOptions(SCRIPT, nproc_per_node=nproc, nnodes=nnodes, stall_timeout_s=stall_s),
                        run_dir, live.LiveView(Console(file=terminal_out, force_terminal=True, width=160))).start()
    print("READY", flush=True)
    watch = ProgressWatch(run_dir, stall_s)
    gather.watches.append(watch)  # as launcher.py does
    if feed is not None:
        feed.follow(watch)
    ahead = ReadAhead(run_dir)
    cpu0 = wall0 = None
    longest_poll = 0.0  # the longest gather.poll() (wall): how long the watchdog waited for it
    behind_since, longest_behind = None, 0.0  # polls in a row that ran out of their budget
    while True:
        began = time.monotonic()
        behind = gather.poll()  # as launcher.py does: a slice at a time, no stall while behind
        longest_poll = max(longest_poll, time.monotonic() - began)
        if behind:  # node 0's main thread could not keep up: how long it stayed behind
            behind_since = began if behind_since is None else behind_since
            longest_behind = max(longest_behind, time.monotonic() - behind_since)
        else:
            behind_since = None
        watch.poll()
        if watch.quiet_for() >= READ_AHEAD_AFTER_S:
            with collector_paused():  # as launcher.py does
                ahead.step(READ_AHEAD_SLICE_S)
        if watch.heard and cpu0 is None and all(s.status == "connected" for s in gather.nodes.values()):
            cpu0, wall0 = _cpu(), time.monotonic()
            if PROFILE_ENV in os.environ:
                profile = _profile_threads()
        if cpu0 is not None and not behind and watch.quiet_for() >= stall_s:
            break
        if not behind:
            time.sleep(0.2)
    stream_cpu = (_cpu() - cpu0) / max(1e-9, time.monotonic() - wall0 - stall_s)
    if PROFILE_ENV in os.environ:
        _dump_profile(profile, os.environ[PROFILE_ENV])
    verdict_at = time.time()
    caught_up_at = verdict_at - watch.quiet_for()  # node 0 read the last record (its lag behind the ranks)
    threads_cpu = _threads_cpu()
    cpu1 = _cpu()
    stacks, notes = gather.stacks(10.0)
    stacks_at = time.time()
    gather.end_all("node 0's job stalled", at=verdict_at)
    gather.wait_finals(time.monotonic() + 15)
    if feed is not None:
        feed.stop()  # the job has ended: the live view's last table, then the report
    finals_at = time.time()
    outcome = Outcome("stalled", time.monotonic() - wall0, {r: -15 for r in range(nproc)}, watch.quiet_for(),
                      stall_s, stacks, "; ".join(notes))
    outcome.ended_at = verdict_at
    for state in gather.nodes.values():
        outcome.exit_codes.update({int(r): c for r, c in state.exit_codes.items()})
    outcome.nodes = gather.states()
    Path(run_dir, OUTCOME_FILE).write_text(json.dumps(outcome.to_dict()))
    read_ahead.hand_over(ahead)
    report = analyse(run_dir, Severity.ERROR, set())
    rendered = json_report.render(report)
    analysed_at = time.time()
    import io

    from rich.console import Console

    # What the person sees: the terminal report (the real probe renders it before relaying the
    # verdict; the live view stopped when the job ended, above).
    screen = io.StringIO()
    terminal.render(report, Console(file=screen, width=160, color_system=None), verbose=False)
    done = time.time()
    report_cpu = _cpu() - cpu1
    total_cpu = (_cpu() - cpu0) / max(1e-9, time.monotonic() - wall0)
    gather.send_verdict(report.exit_code, json.loads(rendered), f"n0:{run_dir}/report.json")
    gather.close()
    print(json.dumps({"stream_cpu_cores": round(stream_cpu, 2), "report_cpu_s": round(report_cpu, 2),
                      "total_cpu_cores": round(total_cpu, 2),
                      "rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024),
                      "report_done": done, "report_bytes": len(rendered), "verdict_at": verdict_at, "caught_up_at": caught_up_at,
                      "longest_poll_s": round(longest_poll, 2),
                      "longest_behind_s": round(longest_behind, 2), "threads_cpu_s": threads_cpu,
                      "phases": {"stacks": round(stacks_at - verdict_at, 2), "finals": round(finals_at - stacks_at, 2),
                                 "analysis": round(analysed_at - finals_at, 2), "render": round(done - analysed_at, 2)},
                      "terminal_lines": screen.getvalue().count("\n"),
                      "codes": sorted({f.code for r in report.results for f in r.findings})}), flush=True)


PROFILE_ENV = "GATHER_SCALE_PROFILE"  # a file: node 0's profile while the job streams


def _profile_threads():
    """A profile of node 0's main thread from now on: the gather's polls and the watchdog's (the
    live view's thread, not profiled, polls the rank files as the watchdog does)."""
    import cProfile

    main = cProfile.Profile()
    main.enable()
    return [main]


def _dump_profile(profiles, path: str) -> None:
    import pstats

    for profile in profiles:
        profile.disable()
    stats = pstats.Stats(profiles[0])
    for profile in profiles[1:]:
        stats.add(profile)
    stats.dump_stats(path)


def _threads_cpu() -> dict[str, float]:
    """CPU seconds node 0's threads used so far, by kind (the name without its node number)."""
    ticks = os.sysconf("SC_CLK_TCK")
    found: dict[str, float] = {}
    for thread in threading.enumerate():
        try:
            fields = Path(f"/proc/self/task/{thread.native_id}/stat").read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        kind = thread.name.rstrip("0123456789").removesuffix("-node")
        found[kind] = round(found.get(kind, 0.0) + (int(fields[11]) + int(fields[12])) / ticks, 2)
    return found


def _cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


# ----------------------------------------------------------------------------- the driver

def one_size(world: int, per_node: int, step_rate: float, run_s: float, stall_s: float,
             live_view: bool = True) -> dict:
    nnodes = world // per_node
    with socket.socket() as probe_sock:
        probe_sock.bind(("127.0.0.1", 0))
        port = probe_sock.getsockname()[1]
    run_dir = tempfile.mkdtemp(prefix=f"gather-scale-{world}-")
    proc = subprocess.Popen([sys.executable, __file__, "--node0", run_dir, str(port), str(nnodes),
                             str(per_node), str(stall_s), "1" if live_view else "0"],
                            stdout=subprocess.PIPE, text=True)
    assert proc.stdout.readline().strip() == "READY"
    prelude, step = templates()
    ranks = [Rank(r, world, prelude, step) for r in range(world)]
    job = wire.job_identity(SCRIPT, nnodes, f"127.0.0.1:{port}", env={})
    start = time.monotonic()
    step_s = 1.0 / step_rate
    steps = max(1, round(run_s * step_rate))
    nodes = [FakeNodeThread(n, ranks[n * per_node:(n + 1) * per_node], port, job, start, steps, step_s)
             for n in range(1, nnodes)]
    for node in nodes:
        node.start()
    # Node 0's own ranks write their files directly, as local ranks do.
    local = ranks[:per_node]
    handles = {r.rank: open(Path(run_dir) / rank_telemetry_name(r.rank), "a") for r in local}
    for r in local:
        handles[r.rank].write(r.start())
        handles[r.rank].flush()
    last_local = 0.0
    for k in range(steps):
        time.sleep(max(0.0, start + k * step_s - time.monotonic()))
        for r in local:
            handles[r.rank].write(r.one_step())
            handles[r.rank].flush()
        last_local = time.time()
    # Rank 0 enters its lone all_reduce once every rank has done every step (as in a real job:
    # it returned from the last step's all-reduce, which needs every rank in it).
    late = [n.node_rank for n in nodes if not n.done.wait(timeout=max(1.0, start + 120 - time.monotonic()))]
    if late:
        raise SystemExit(f"nodes {late[:5]} did not send their {steps} steps within 120 s")
    handles[0].write(local[0].lone_collective())
    handles[0].flush()
    last_local = time.time()
    out, _ = proc.communicate(timeout=300)
    for node in nodes:
        node.join(timeout=10)
    result = json.loads(out.strip().splitlines()[-1])
    last_record = max([last_local] + [n.last_record for n in nodes])
    result.update(world=world, nodes=nnodes, stall_s=stall_s,
                  stall_to_report_s=round(result.pop("report_done") - last_record, 2),
                  detect_s=round(result.pop("verdict_at") - last_record, 2),
                  behind_s=round(result.pop("caught_up_at") - last_record, 2),
                  errors=[n.error for n in nodes if n.error][:3], run_dir=run_dir)
    return result


def analyse_only(run_dir: str, read_first: bool = False) -> dict:
    """The analysis of a kept run dir, as node 0 does it after the stall: its phases' CPU and
    wall seconds (GATHER_SCALE_PROFILE: the whole of it profiled into that file). read_first:
    the rank files read ahead first, as node 0 does while it waits out the stall timeout
    (records/read_ahead.py), timed apart ("read ahead", not part of the analysis's total)."""
    import io

    from rich.console import Console

    from ddpdoctor.core.findings import Severity
    from ddpdoctor.probe.run_model.loaded_run import RunModel, collector_paused
    from ddpdoctor.probe.report import build_report
    from ddpdoctor.report import json as json_report
    from ddpdoctor.report import terminal

    build_report  # noqa: B018 - imported (with the checks it finds) before the clock starts
    profile = _profile_threads() if PROFILE_ENV in os.environ else None
    phases: dict[str, tuple[float, float]] = {}

    def timed(name, work):
        cpu, wall = _cpu(), time.monotonic()
        value = work()
        phases[name] = (round(_cpu() - cpu, 2), round(time.monotonic() - wall, 2))
        return value

    ahead_phase = None
    if read_first:
        from ddpdoctor.probe.records import read_ahead

        ahead = read_ahead.ReadAhead(run_dir)
        with collector_paused():  # as launcher.py does
            timed("read ahead", lambda: ahead.step(3600.0))
        read_ahead.hand_over(ahead)
        ahead_phase = phases.pop("read ahead")
    paused = collector_paused()  # as probe/run.analyse does; its end (the collector on again) timed too
    paused.__enter__()
    model = timed("load", lambda: RunModel.load(run_dir))
    report = timed("checks", lambda: build_report(model, Severity.ERROR, set(), lint=True))
    timed("collector", lambda: paused.__exit__(None, None, None))
    rendered = timed("json", lambda: json_report.render(report))
    screen = io.StringIO()
    timed("terminal", lambda: terminal.render(report, Console(file=screen, width=160, color_system=None),
                                              verbose=False))
    if profile is not None:
        _dump_profile(profile, os.environ[PROFILE_ENV])
    return {"ranks": len(model.ranks), "records": sum(len(r.records) for r in model.ranks.values()),
            "phases": phases, "read_ahead": ahead_phase, "cpu_s": round(sum(c for c, _ in phases.values()), 2),
            "wall_s": round(sum(w for _, w in phases.values()), 2), "report_bytes": len(rendered),
            "codes": sorted({f.code for r in report.results for f in r.findings})}


def synth_run_dir(world: int, per_node: int, step_rate: float, run_s: float, stall_s: float,
                  run_dir: str | None = None) -> str:
    """The run dir node 0 would hold after the stall of one_size(world), written directly (into
    run_dir, an empty folder, or a new one)."""
    from dataclasses import asdict

    from ddpdoctor.probe.records.rundir import META_FILE, OUTCOME_FILE
    from ddpdoctor.probe.run_model.outcome import Outcome, ProbeMeta

    run_dir = run_dir or tempfile.mkdtemp(prefix=f"gather-scale-synth-{world}-")
    nnodes = world // per_node
    started = time.time() - run_s - stall_s
    meta = ProbeMeta(script=SCRIPT, args=[], nproc_per_node=per_node, nnodes=nnodes, node_rank=0,
                     world_size=world, max_steps=0, steps_per_epoch=0, stall_timeout_s=stall_s,
                     pg_timeout_s=30.0, timeout_s=600.0, backend="gloo", launcher="torchrun",
                     launcher_reason="benchmark", started=started, module=False, cpu=False)
    Path(run_dir, META_FILE).write_text(json.dumps(asdict(meta)))
    prelude, step = templates()
    steps = max(1, round(run_s * step_rate))
    ranks = [Rank(r, world, prelude, step) for r in range(world)]
    for rank in ranks:
        parts = [rank.start(started)] + [rank.one_step(started + (k + 1) / step_rate) for k in range(steps)]
        if rank.rank == 0:
            parts.append(rank.lone_collective(started + run_s))
        Path(run_dir, rank_telemetry_name(rank.rank)).write_text("".join(parts))
    outcome = Outcome("stalled", run_s + stall_s, {r.rank: -15 for r in ranks}, stall_s, stall_s)
    outcome.ended_at = started + run_s + stall_s
    data = outcome.to_dict()
    data["stacks"] = [dict(r.stack(), host=f"n{r.rank // per_node}") for r in ranks]
    Path(run_dir, OUTCOME_FILE).write_text(json.dumps(data))
    return run_dir


def print_analysis(run_dir: str, r: dict) -> None:
    print(f"{r['ranks']:5d} ranks, {r['records']:,} records: analysis {r['cpu_s']:.2f} s CPU, {r['wall_s']:.2f} s "
          "wall (" + ", ".join(f"{name} {cpu:.2f}/{wall:.2f}" for name, (cpu, wall) in r["phases"].items())
          + f" s CPU/wall); report {r['report_bytes'] / 1024:.0f} KiB JSON; findings {', '.join(r['codes'])}; "
          f"run dir {run_dir}" + (f"; read ahead during the stall wait first: {r['read_ahead'][0]:.2f}/"
                                  f"{r['read_ahead'][1]:.2f} s CPU/wall" if r.get("read_ahead") else ""),
          flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--ranks", default="64,256,1024")
    parser.add_argument("--per-node", type=int, default=8)
    parser.add_argument("--step-rate", type=float, default=2.0, help="steps per second per rank")
    parser.add_argument("--run-s", type=float, default=15.0, help="seconds of training before the stall")
    parser.add_argument("--stall", type=float, default=5.0, help="the stall timeout")
    parser.add_argument("--no-live", action="store_true", help="node 0 without the live view")
    parser.add_argument("--analyse", metavar="RUN_DIR", help="time the analysis of a kept run dir, nothing else")
    parser.add_argument("--synth", metavar="RANKS", help="write each size's run dir directly, then time its analysis")
    parser.add_argument("--read-ahead", action="store_true",
                        help="--analyse/--synth: the rank files read ahead first (as node 0 does while "
                             "it waits out the stall timeout), timed apart")
    parser.add_argument("--node0", nargs=6, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.analyse:
        print_analysis(args.analyse, analyse_only(args.analyse, args.read_ahead))
        return
    if args.synth:
        for world in (int(w) for w in args.synth.split(",")):
            run_dir = synth_run_dir(world, args.per_node, args.step_rate, args.run_s, args.stall)
            # The analysis in a process of its own: node 0's, without this one's ranks in memory.
            subprocess.run([sys.executable, "-m", "benchmarks.gather_scale", "--analyse", run_dir]
                           + (["--read-ahead"] if args.read_ahead else []), check=True)
        return
    if args.node0:
        run_dir, port, nnodes, nproc, stall, live_view = args.node0
        node0(run_dir, int(port), int(nnodes), int(nproc), float(stall), live_view == "1")
        return
    print(f"gather at scale: {args.per_node} ranks per node, {args.step_rate:g} steps/s per rank, "
          f"{args.run_s:g} s of training, stall timeout {args.stall:g} s; {os.cpu_count()} CPU(s)")
    for world in (int(w) for w in args.ranks.split(",")):
        r = one_size(world, args.per_node, args.step_rate, args.run_s, args.stall, not args.no_live)
        print(f"{r['world']:5d} ranks ({r['nodes']:3d} nodes): node 0 {r['stream_cpu_cores']:.2f} cores while "
              f"streaming, {r['rss_mb']} MB peak RSS; last record -> report {r['stall_to_report_s']:.1f} s "
              f"(last record read {r['behind_s']:.1f} s after it was sent, longest poll "
              f"{r.get('longest_poll_s', 0):.2f} s, behind for {r.get('longest_behind_s', 0):.1f} s at most, stall verdict at {r['detect_s']:.1f} s; stacks {r['phases']['stacks']:.1f} s, ends "
              f"{r['phases']['finals']:.1f} s, analysis {r['phases']['analysis']:.1f} s, terminal report "
              f"{r['phases']['render']:.2f} s wall; verdict to report {r['report_cpu_s']:.1f} s CPU; node 0 "
              f"{r['total_cpu_cores']:.2f} cores on average from the first record to the report); "
              f"report {r['report_bytes'] / 1024:.0f} KiB JSON, "
              f"{r['terminal_lines']} terminal lines; findings {', '.join(r['codes'])}; run dir {r['run_dir']}; "
              f"node 0's threads' CPU s at the verdict: {r['threads_cpu_s']}"
              + (f"; errors: {r['errors']}" if r["errors"] else ""), flush=True)


if __name__ == "__main__":
    main()
