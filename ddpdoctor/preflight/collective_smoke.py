"""The collective smoke test (`preflight --collective`, DDP107): plan the ranks, start each node's
supervisor (collective_worker.py), merge what they report into a CollectiveOutcome.

How processes reach the nodes: the supervisor's source is sent the way facts.py is - over ssh
on stdin (`--remote-python`, the job's interpreter) or to a local child Python - so a node needs
torch, which the job needs anyway, and not ddpdoctor. In store mode every node's own ddpdoctor
starts its supervisor (`run_node_here`). Each supervisor kills and reaps its ranks at its
deadline or when its stdin closes; ddpdoctor kills and reaps each supervisor (and its ssh) a
little after that deadline, whatever happened.

It runs only once the facts say a job could form at all: every node reached and resolved, the
rendezvous port free and reachable, NCCL usable where asked for, torch on every node (see
`blocker`). Findings such as DDP102 (loopback) or DDP106 (interfaces) do not stop it: the smoke
test shows what they do to a real all-reduce.
"""

from __future__ import annotations

import json
import queue
import sys
import threading
import time
from dataclasses import asdict, dataclass, field
from typing import Any, Optional

from ddpdoctor.preflight import collective_result

from ddpdoctor.preflight.node import collective_worker
from ddpdoctor.preflight.cluster import ClusterFacts, NodeResult
from ddpdoctor.preflight.collective_result import CollectiveOutcome
from ddpdoctor.core.registry import FAILED, run_checks
from ddpdoctor.preflight.node import payload
from ddpdoctor.preflight.transport import child, ssh

# Checks whose failure means no job could form: the smoke test would only time out.
BLOCKING = ("DDP101", "DDP103", "DDP104", "DDP105", "DDP203")
SIZES = (64 << 10, 1 << 20, 16 << 20)
ITERS = 3
PAIR_BYTES = 1 << 20
PAIR_ITERS = 5
MAX_ROUNDS = 8  # each node meets up to 8 others: enough to tell which node of a bad pair is bad
SIZE_CAP_S = 1.0  # skip a size whose all-reduce would take longer than this (slow links)


@dataclass
class PlanNode:
    host: str
    route: str  # local | ssh | store
    node_rank: int
    nproc: int
    rank_offset: int


@dataclass
class Plan:
    """Who runs which ranks, where the store is, and every limit: the same for every node."""

    backend: str
    master_addr: str
    master_port: int
    nodes: list[PlanNode]
    host_store: bool  # rank 0 hosts the TCPStore (ssh/local); False: ddpdoctor's store mode does
    prefix: str
    deadline_s: float
    pair_timeout_s: float
    rounds: list[list[list[int]]] = field(default_factory=list)

    @property
    def world_size(self) -> int:
        return sum(n.nproc for n in self.nodes)

    @property
    def hosts(self) -> list[str]:
        return [n.host for n in self.nodes]

    def node(self, host: str) -> Optional[PlanNode]:
        return next((n for n in self.nodes if n.host == host), None)

    def params(self, node: PlanNode) -> dict[str, Any]:
        return {"node_rank": node.node_rank, "nnodes": len(self.nodes), "nproc": node.nproc,
                "rank_offset": node.rank_offset, "world_size": self.world_size,
                "master_addr": self.master_addr, "master_port": self.master_port,
                "host_store": self.host_store, "prefix": self.prefix, "backend": self.backend,
                "sizes": list(SIZES), "iters": ITERS, "pair_bytes": PAIR_BYTES, "pair_iters": PAIR_ITERS,
                "rounds": self.rounds, "pair_timeout": self.pair_timeout_s, "size_cap_s": SIZE_CAP_S,
                "deadline_s": self.deadline_s}

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "Plan":
        nodes = [PlanNode(**n) for n in data["nodes"]]
        return cls(**{**data, "nodes": nodes})


def pair_rounds(count: int, cap: int = MAX_ROUNDS) -> list[list[list[int]]]:
    """Rounds of disjoint node pairs (the circle method): every node meets every other once, one
    partner per round, at most `cap` rounds."""
    ids: list[Optional[int]] = list(range(count)) + ([None] if count % 2 else [])
    m = len(ids)
    rounds = []
    for _ in range(m - 1):
        pairs = [sorted([ids[i], ids[m - 1 - i]]) for i in range(m // 2)
                 if ids[i] is not None and ids[m - 1 - i] is not None]
        rounds.append(pairs)
        ids = [ids[0], ids[-1], *ids[1:-1]]
    return rounds[:cap]


def blocker(cluster: ClusterFacts) -> Optional[str]:
    """Why the smoke test must not run yet, or None. Only the checks that can block it are run
    here (--ignore or not); the report's full pass runs every check once, after the test."""
    results = run_checks("preflight", cluster, set(), only=set(BLOCKING))
    failed = [r for r in results if r.status == FAILED]
    if failed:
        first = failed[0]
        return f"not run: {first.spec.code} failed ({first.spec.title}); fix that first"
    recorded = [n.host for n in cluster.nodes if n.transport == "file"]
    if recorded:
        return f"not run: the facts of {', '.join(recorded)} come from a file, nothing can run there"
    no_torch = [n.host for n in cluster.reached if not n.facts.torch]
    if no_torch:
        return f"not run: torch is not installed on {', '.join(no_torch)}"
    return None


def master_node(cluster: ClusterFacts) -> Optional[NodeResult]:
    """The node MASTER_ADDR names: by name, else by a shared address."""
    named = cluster.node_named(cluster.master_addr)
    if named is not None:
        return named
    wanted = set(cluster.master_resolved)
    return next((n for n in cluster.nodes if wanted & set(n.resolved)), None)


def plan(cluster: ClusterFacts, timeout: float, host_store: bool, prefix: str) -> Plan | str:
    """The ranks of the smoke test, the master's node first (rank 0 hosts the store there), or
    why there is no sensible plan."""
    master = master_node(cluster)
    if master is None:
        return (f"not run: MASTER_ADDR {cluster.master_addr} is not a node of the list, and rank 0 must run "
                "where the store is")
    ordered = [master, *[n for n in cluster.nodes if n is not master]]
    seen, nodes, offset = set(), [], 0
    for node in ordered:
        if node.host.lower() in seen:
            continue  # listed twice: DDP202 says so; it runs its ranks once
        seen.add(node.host.lower())
        nproc = cluster.procs_on(node)
        nodes.append(PlanNode(node.host, node.transport, len(nodes), nproc, offset))
        offset += nproc
    # A healthy pair forms and moves 6 MiB in well under a second; a broken one costs this much.
    pair_timeout = max(3.0, min(5.0, timeout / 2))
    rounds = pair_rounds(len(nodes))
    # torch import and store: 20 s; the pair rounds; the world group and the sizes: 20 s.
    deadline = 20.0 + len(rounds) * (pair_timeout + 2.0) + 20.0
    return Plan(cluster.resolved_backend, cluster.master_addr, cluster.master_port, nodes, host_store,
                prefix, deadline, pair_timeout, rounds)


def outcome(p: Plan, answers: dict[str, Any], seconds: float) -> CollectiveOutcome:
    return collective_result.from_nodes(p.hosts, p.backend, p.world_size, answers, seconds, p.rounds)


# ------------------------------------------------------------------ starting supervisors


def _start(node: PlanNode, p: Plan, ssh_opts: ssh.SshOptions, python: str):
    """Start the node's supervisor (ssh or a local child) and hand it its program."""
    params = dict(p.params(node), source=payload.source_of(collective_worker))
    program = payload.collective_program(params)
    if node.route == "ssh":
        proc = ssh.start_line_program(node.host, ssh_opts, min(10.0, p.pair_timeout_s * 2))
    else:
        proc = child.start([python, "-c", collective_worker.LINE_BOOTSTRAP])
    try:
        proc.stdin.write(ssh.encode_line_program(program))
        proc.stdin.flush()
    except OSError:
        pass  # it died already; its stderr says why
    return proc


def _collect(host: str, proc, sink: "queue.Queue[tuple[str, Any]]") -> None:
    """Read the supervisor's stdout until its marked line; put (host, dict) or (host, None)."""
    try:
        for raw in iter(proc.stdout.readline, b""):
            line = raw.decode("utf-8", errors="replace").rstrip("\n")
            if line.startswith(collective_worker.NODE_MARKER):
                try:
                    sink.put((host, json.loads(line[len(collective_worker.NODE_MARKER):])))
                except ValueError:
                    sink.put((host, None))
                return
    except (OSError, ValueError):
        pass
    sink.put((host, None))


def _failure_text(node: PlanNode, proc, ssh_opts: ssh.SshOptions) -> str:
    try:
        _, err = proc.communicate(timeout=1.0)
    except Exception:  # noqa: BLE001 - best effort: the evidence line is a nicety
        err = b""
    text = (err or b"").decode("utf-8", errors="replace")
    if node.route == "ssh":
        failure = ssh.classify(node.host, proc.returncode, text, ssh_opts)
        return failure.message + (f": {failure.evidence}" if failure.evidence else "")
    lines = [ln for ln in text.splitlines() if ln.strip()]
    return f"its supervisor ended without a result (exit {proc.returncode})" + (f": {lines[-1][:300]}" if lines else "")


def launch(p: Plan, ssh_opts: ssh.SshOptions) -> CollectiveOutcome:
    """Run the smoke test over ssh / local children; bounded by the plan's deadline plus slack."""
    began = time.monotonic()
    procs = {}
    sink: "queue.Queue[tuple[str, Any]]" = queue.Queue()
    answers: dict[str, Any] = {}
    try:
        for node in p.nodes:
            python = ssh_opts.remote_python if node.route == "ssh" else sys.executable
            procs[node.host] = _start(node, p, ssh_opts, python)
            threading.Thread(target=_collect, args=(node.host, procs[node.host], sink),
                             name=f"ddpdoctor-collective-{node.host}", daemon=True).start()
        end = began + p.deadline_s + 10.0
        while len(answers) < len(procs):
            try:
                host, answer = sink.get(timeout=max(0.0, end - time.monotonic()))
            except queue.Empty:
                break
            answers[host] = answer
    finally:
        for host, proc in procs.items():
            try:
                proc.stdin.close()  # the supervisor's signal to stop its ranks now
            except OSError:
                pass
        for node in p.nodes:
            proc = procs.get(node.host)
            if proc is None:
                continue
            try:
                proc.wait(timeout=3.0)
            except Exception:  # noqa: BLE001 - the kill below reaps it
                pass
            if answers.get(node.host) is None:
                answers[node.host] = (_failure_text(node, proc, ssh_opts) if proc.poll() is not None
                                      else f"no answer within {p.deadline_s + 10:.0f} s")
            child.kill(proc)
    return outcome(p, answers, time.monotonic() - began)


def run_node_here(p: Plan, host: str, python: str = sys.executable) -> Any:
    """Store mode: run this node's supervisor as a local child; its JSON answer, or why none."""
    node = p.node(host)
    if node is None:
        return "this node is not in the plan"
    proc = _start(PlanNode(node.host, "local", node.node_rank, node.nproc, node.rank_offset), p,
                  ssh.SshOptions(), python)
    sink: "queue.Queue[tuple[str, Any]]" = queue.Queue()
    threading.Thread(target=_collect, args=(host, proc, sink), daemon=True).start()
    try:
        _, answer = sink.get(timeout=p.deadline_s + 10.0)
    except queue.Empty:
        answer = None
    finally:
        try:
            proc.stdin.close()
        except OSError:
            pass
        try:
            proc.wait(timeout=3.0)
        except Exception:  # noqa: BLE001 - the kill below reaps it
            pass
    if answer is None:
        answer = (_failure_text(node, proc, ssh.SshOptions()) if proc.poll() is not None
                  else f"no answer within {p.deadline_s + 10:.0f} s")
    child.kill(proc)
    return answer
