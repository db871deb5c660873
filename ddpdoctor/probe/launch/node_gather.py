"""Node 0's side of a multi-node probe: gather every node's telemetry into node 0's run dir while
the job runs, ask every node for stacks on a stall, end the job everywhere, relay the verdict.

Forwarded telemetry is appended to RUN_DIR/rank-<R>.jsonl exactly as a local rank would write it
(ranks are global, so names never collide), which is why the watchdog, the live view and the
checks see every rank of every node with no code of their own for "remote".
"""

from __future__ import annotations

import re
import socket
import threading
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Optional

from ddpdoctor.core.errors import UsageError
from ddpdoctor.probe.analysis.runmodel import Frame, RankStack
from ddpdoctor.probe.launch.node_link import Link
from ddpdoctor.probe.rundir import RANK_FILE

FORWARDED_NAME = RANK_FILE  # what a node may write into node 0's run dir (rundir.py)
STEP_FIELD = re.compile(r'"kind":"step".*?"step":(\d+)')
HELLO_TIMEOUT_S = 5.0


@dataclass
class NodeState:
    """What node 0 knows of one node; stored in outcome.json (Outcome.nodes)."""

    node_rank: int
    host: str = "?"
    addr: str = "?"
    ranks: list[int] = field(default_factory=list)
    status: str = "never_connected"  # connected | finished | lost | never_connected
    reason: str = ""
    last_step: int = 0
    last_heard_s_ago: Optional[float] = None
    exit_codes: dict[str, Optional[int]] = field(default_factory=dict)
    log_tail: str = ""
    outcome: str = ""  # the node's own job status (completed, crashed, ...)

    def label(self) -> str:
        return f"node {self.node_rank} ({self.host})" if self.host != "?" else f"node {self.node_rank}"

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


class NodeGather:
    """Listens on the gather port; one Link per node that connects."""

    def __init__(self, run_dir: str, port: int, nnodes: int, here_host: str, here_addr: str,
                 local_ranks_hint: list[int]) -> None:
        self.run_dir = Path(run_dir)
        self.port = port
        self.nodes = {n: NodeState(n) for n in range(1, nnodes)}
        self.nodes_here = NodeState(0, here_host, here_addr, local_ranks_hint, "connected")
        self.links: dict[int, Link] = {}
        self._files: dict[str, Any] = {}
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._request = 0
        self._replies: dict[tuple, dict[str, Any]] = {}
        try:
            self.server = socket.create_server(("", port), family=socket.AF_INET, reuse_port=False)
        except OSError as exc:
            raise UsageError(f"the gather port {port} (node 0's ddpdoctor listens there for the other "
                             f"nodes) cannot be used: {exc.strerror or exc}; choose another with "
                             f"--gather-port") from None
        self.server.settimeout(0.5)
        self._acceptor = threading.Thread(target=self._accept, daemon=True, name="ddpdoctor-gather")
        self._acceptor.start()

    # ---------------------------------------------------------------- connections

    def _accept(self) -> None:
        while not self._stop.is_set():
            try:
                sock, peer = self.server.accept()
            except socket.timeout:
                continue
            except OSError:
                return
            threading.Thread(target=self._greet, args=(sock, peer), daemon=True).start()

    def _greet(self, sock: socket.socket, peer) -> None:
        link = Link(sock, f"-{peer[0]}")
        hello = link.wait_message("hello", time.monotonic() + HELLO_TIMEOUT_S)
        node_rank = hello.get("node_rank") if hello else None
        with self._lock:
            if not isinstance(node_rank, int) or node_rank not in self.nodes or node_rank in self.links:
                link.send("refused", reason="unknown or duplicate node rank")
                link.close()
                return
            state = self.nodes[node_rank]
            state.host = str(hello.get("host") or peer[0])[:200]
            state.addr = str(hello.get("addr") or peer[0])[:200]
            state.status = "connected"
            self.links[node_rank] = link
        link.send("welcome", run_dir=str(self.run_dir))

    # ---------------------------------------------------------------- while the job runs

    def poll(self) -> None:
        """Take in what every node sent; mark nodes that went silent as lost."""
        with self._lock:
            links = dict(self.links)
        for node_rank, link in links.items():
            state = self.nodes[node_rank]
            for message in link.messages():
                self._take(state, message)
            if state.status == "connected" and not link.alive:
                state.status = "lost"
                state.last_heard_s_ago = round(link.silent_for(), 1)
                state.reason = (link.closed_reason if link.closed_reason not in (None, "closed")
                                else f"silent for {link.silent_for():.0f} s")
        for handle in self._files.values():
            handle.flush()

    def _take(self, state: NodeState, message: dict[str, Any]) -> None:
        kind = message.get("t")
        if kind == "file":
            name, data = str(message.get("name", "")), message.get("data", "")
            match = FORWARDED_NAME.match(name)
            if not match or not isinstance(data, str):
                return
            rank = int(match.group(1))
            if rank not in state.ranks:
                state.ranks.append(rank)
            handle = self._files.get(name)
            if handle is None:
                handle = self._files[name] = open(self.run_dir / name, "a", encoding="utf-8")
            handle.write(data)
            for step in STEP_FIELD.findall(data):
                state.last_step = max(state.last_step, int(step))
        elif kind == "final":
            outcome = message.get("outcome") or {}
            state.status = "finished"
            state.outcome = str(outcome.get("status", "?"))
            state.exit_codes = {str(k): v for k, v in (outcome.get("exit_codes") or {}).items()}
            state.log_tail = str(outcome.get("log_tail", ""))[-4000:]
        elif kind == "stacks_reply":
            self._replies[(state.node_rank, message.get("id"))] = message

    def connected(self) -> list[NodeState]:
        return [s for s in self.nodes.values() if s.status == "connected"]

    def lost(self) -> list[NodeState]:
        return [s for s in self.nodes.values() if s.status == "lost"]

    def stacks(self, timeout_s: float) -> tuple[list[RankStack], list[str]]:
        """Every other node's ranks' stacks, asked of all at once; notes for nodes that gave none."""
        self._request += 1
        request = self._request
        asked = [s for s in self.connected() if self.links[s.node_rank].send("stacks", id=request)]
        deadline = time.monotonic() + timeout_s
        found: list[RankStack] = []
        notes: list[str] = []
        pending = {s.node_rank for s in asked}
        while pending and time.monotonic() < deadline:
            self.poll()
            for state in asked:
                reply = self._replies.pop((state.node_rank, request), None)
                if reply is None or state.node_rank not in pending:
                    continue
                pending.discard(state.node_rank)
                found.extend(_stack_from_dict(d, state.label()) for d in reply.get("stacks") or [])
                if reply.get("note"):
                    notes.append(f"{state.label()}: {reply['note']}")
            pending -= {s.node_rank for s in asked if s.status != "connected"}
            time.sleep(0.05)
        for node_rank in sorted(pending):
            notes.append(f"{self.nodes[node_rank].label()} sent no stacks within {timeout_s:.0f} s")
        return found, notes

    def end_all(self, reason: str) -> None:
        for state in self.connected():
            self.links[state.node_rank].send("end", reason=reason)

    def wait_finals(self, deadline: float) -> None:
        """Until every connected node has said its job ended (or is lost), or the deadline."""
        while time.monotonic() < deadline:
            self.poll()
            if not self.connected():
                return
            time.sleep(0.1)
        for state in self.connected():
            state.status, state.reason = "lost", "its job did not end when asked"

    def mark_never_connected(self) -> None:
        for state in self.nodes.values():
            if state.status == "never_connected" and not state.reason:
                state.reason = "its ddpdoctor never connected to node 0"

    # ---------------------------------------------------------------- after the verdict

    def send_verdict(self, exit_code: int, report: dict[str, Any], where: str) -> None:
        for node_rank, link in list(self.links.items()):
            if self.nodes[node_rank].status in ("connected", "finished"):
                link.send("verdict", exit_code=exit_code, report=report, where=where)
        # Let the verdicts leave before the sockets close (each node answers "bye").
        deadline = time.monotonic() + 5.0
        waiting = {n for n, s in self.nodes.items() if s.status in ("connected", "finished")}
        while waiting and time.monotonic() < deadline:
            for node_rank in list(waiting):
                link = self.links[node_rank]
                if any(m.get("t") == "bye" for m in link.messages()) or not link.alive:
                    waiting.discard(node_rank)
            time.sleep(0.05)

    def states(self) -> list[dict[str, Any]]:
        for state in self.nodes.values():
            link = self.links.get(state.node_rank)
            if link is not None and state.last_heard_s_ago is None:
                state.last_heard_s_ago = round(link.silent_for(), 1)
        return [self.nodes_here.to_dict()] + [s.to_dict() for s in sorted(self.nodes.values(), key=lambda s: s.node_rank)]

    def close(self) -> None:
        self._stop.set()
        try:
            self.server.close()
        except OSError:
            pass
        for link in list(self.links.values()):
            link.close()
        for handle in self._files.values():
            try:
                handle.close()
            except OSError:
                pass
        self._acceptor.join(timeout=2.0)


def _stack_from_dict(data: dict[str, Any], host: str) -> RankStack:
    frames = [Frame(str(f.get("func", "?")), str(f.get("file", "?")), int(f.get("line") or 0))
              for f in data.get("frames", [])]
    return RankStack(int(data.get("rank", -1)), int(data.get("pid", 0)), str(data.get("method", "none")),
                     frames, data.get("idle"), str(data.get("text", "")), host)

