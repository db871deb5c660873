"""Node 0's side of a multi-node probe: gather every node's telemetry into node 0's run dir while
the job runs, ask every node for stacks on a stall, end the job everywhere, relay the verdict.

Forwarded telemetry is appended to RUN_DIR/rank-<R>.jsonl exactly as a local rank would write it
(ranks are global, so names never collide), which is why the watchdog, the live view and the
checks see every rank of every node with no code of their own for "remote".
"""

from __future__ import annotations

import hmac
import secrets
import selectors
import socket
import sys
import threading
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Optional

from ddpdoctor.core.errors import UsageError
from ddpdoctor.probe.records.rundir import is_rank_telemetry, rank_of_name, rank_telemetry_name
from ddpdoctor.probe.run_model.outcome import RankStack
from ddpdoctor.probe.records import jsonl
from ddpdoctor.probe.launch import node_wire as wire
from ddpdoctor.probe.launch.node_link import SIZE, Link

HELLO_TIMEOUT_S = 5.0
PARKED_S = 0.1  # how often a connection that sent part of its hello is looked at again
MAX_REFUSAL_LINES = 5  # lines on stderr for refused connections; the rest are counted
# Work per poll: then the launcher's loop runs (watchdog, stall clock, interrupts) and the next
# poll takes on where this one stopped.
POLL_BUDGET_S = 0.25


@dataclass
class NodeState:
    """What node 0 knows of one node; stored in outcome.json (Outcome.nodes)."""

    node_rank: int
    host: str = "?"
    addr: str = "?"
    ranks: list[int] = field(default_factory=list)
    status: str = "never_connected"  # connected | finished | lost | never_connected | refused
    reason: str = ""
    last_step: int = 0
    last_heard_s_ago: Optional[float] = None
    exit_codes: dict[str, Optional[int]] = field(default_factory=dict)
    log_tail: str = ""
    outcome: str = ""  # the node's own job status (completed, crashed, ...)
    # When the node's ddpdoctor began ending its ranks (its clock), and its clock minus node 0's:
    # the analysis tells causes from consequences with these (analysis/rank_state.py).
    ended_at: Optional[float] = None
    clock_offset_s: Optional[float] = None

    def label(self) -> str:
        return f"node {self.node_rank} ({self.host})" if self.host != "?" else f"node {self.node_rank}"

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


class NodeGather:
    """Listens on the gather port (bound to node 0's own address): one selector thread greets
    every new connection, and each node that proves itself gets one Link."""

    def __init__(self, run_dir: str, port: int, nnodes: int, here_host: str, here_addr: str,
                 nproc: int, *, key: Optional[bytes] = None, job: str = "", static_ranks: bool = True) -> None:
        self.run_dir = Path(run_dir)
        self.port = port
        self.nproc = nproc
        self.world_size = nproc * nnodes
        self.key, self.job = key, job
        # torchrun's static rendezvous (--master-addr) gives node r the ranks r*nproc ..; a c10d
        # rendezvous assigns them as nodes join, so there each rank is owned by its first claim.
        self.static_ranks = static_ranks
        self.nodes = {n: NodeState(n) for n in range(1, nnodes)}
        self.nodes_here = NodeState(0, here_host, here_addr,
                                    list(range(nproc)) if static_ranks else [], "connected")
        self.links: dict[int, Link] = {}
        self.owner: dict[int, int] = {r: 0 for r in self.nodes_here.ranks}  # rank -> node rank
        self.received: dict[int, int] = {}  # bytes forwarded, by node rank (the quota)
        self._refused: dict[str, int] = {}  # each distinct refusal line -> how many times
        self._refusal_lines = 0
        self._files: dict[str, Any] = {}
        self._unflushed: set[Any] = set()  # of those, the ones written since the last poll ended
        self._resume_at = 0  # the node the next poll starts with (where a poll ran out of time)
        self.clock = time.monotonic  # the polls' budget clock
        # The watchdogs (ProgressWatch: the launcher's, the live view's) handed each forwarded
        # record as checked here, decoded once, instead of reading back the files written here.
        self.watches: list[Any] = []
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._request = 0
        self._replies: dict[tuple, dict[str, Any]] = {}
        self._awaited: set[tuple[int, int]] = set()  # (node rank, request id) of stacks asked for
        # Connections that have not said hello: peer, since, and the challenge they were sent.
        self._pending: dict[socket.socket, tuple[str, float, wire.Codec, str]] = {}
        # Of those, the ones that sent part of a line: out of the selector (their unread bytes
        # would wake it at once, for ever: a spin), looked at again every PARKED_S instead.
        self._parked: dict[socket.socket, int] = {}  # socket -> bytes seen so far
        self._parked_at = 0.0
        self.max_pending = min(wire.MAX_PENDING + nnodes, wire.MAX_PENDING_CAP)
        try:
            # Node 0's own address only: the gather port is for the job's nodes, not every network.
            self.server = socket.create_server((here_addr, port), family=socket.AF_INET, reuse_port=False,
                                               backlog=min(wire.MAX_PENDING + nnodes, wire.MAX_PENDING_CAP))
        except OSError as exc:
            raise UsageError(f"the gather port {here_addr}:{port} (node 0's ddpdoctor listens there for the "
                             f"other nodes) cannot be used: {exc.strerror or exc}; is --master-addr an "
                             f"address of this node? choose another port with --gather-port") from None
        self.server.setblocking(False)
        self._selector = selectors.DefaultSelector()
        self._selector.register(self.server, selectors.EVENT_READ)
        # close() writes here: the acceptor ends at once, not at its selector's next tick.
        self._wake, self._waker = socket.socketpair()
        self._selector.register(self._wake, selectors.EVENT_READ)
        self._acceptor = threading.Thread(target=self._serve, daemon=True, name="ddpdoctor-gather")
        self._acceptor.start()

    @property
    def authenticated(self) -> bool:
        return self.key is not None

    # ---------------------------------------------------------------- connections

    def _serve(self) -> None:
        """One thread for every connection that has not said hello: no thread per socket, at
        most max_pending at once, nothing read beyond the hello line."""
        while not self._stop.is_set():
            try:
                events = self._selector.select(timeout=PARKED_S if self._parked else 0.25)
            except (OSError, ValueError):
                return
            for key, _mask in events:
                if key.fileobj is self._wake:
                    return
                if key.fileobj is self.server:
                    self._accept()
                else:
                    self._hello(key.fileobj)  # type: ignore[arg-type]
            now = time.monotonic()
            if self._parked and now - self._parked_at >= PARKED_S:
                self._parked_at = now
                for sock in list(self._parked):
                    self._hello(sock)
            for sock, (peer, since, _codec, _challenge) in list(self._pending.items()):
                if now - since > HELLO_TIMEOUT_S:
                    self._refuse(sock, peer, "said no hello within "
                                 f"{HELLO_TIMEOUT_S:.0f} s", tell=False)

    def _accept(self) -> None:
        while True:
            try:
                sock, peer = self.server.accept()
            except (BlockingIOError, InterruptedError):
                return
            except OSError:
                return
            if len(self._pending) >= self.max_pending:
                sock.close()  # a flood: the job's own nodes retry
                self._note_refusal(peer[0], f"more than {self.max_pending} connections waiting to say hello")
                continue
            sock.setblocking(False)
            # Node 0 speaks first: a fresh challenge the hello must carry (signed, with a token),
            # so a hello recorded from another connection is worthless on this one. A new
            # socket's send buffer is empty: one short line always fits without blocking.
            codec = wire.Codec(self.key, self.job)
            challenge = secrets.token_hex(16)
            line = codec.encode("challenge", {"nonce": challenge})
            try:
                whole = sock.send(line) == len(line)
            except OSError:
                whole = False
            if not whole:
                sock.close()  # the peer retries, as after a flood
                continue
            self._pending[sock] = (peer[0], time.monotonic(), codec, challenge)
            self._selector.register(sock, selectors.EVENT_READ)

    def _hello(self, sock: socket.socket) -> None:
        peer, _since, codec, challenge = self._pending[sock]
        try:
            head = sock.recv(wire.MAX_HELLO, socket.MSG_PEEK)
        except (BlockingIOError, InterruptedError):
            return
        except OSError:
            head = b""
        if not head:
            self._unpend(sock)
            sock.close()
            return
        cut = head.find(b"\n")
        if cut < 0:
            if len(head) >= wire.MAX_HELLO:
                self._refuse(sock, peer, f"sent more than {wire.MAX_HELLO} bytes without a hello")
                return
            # The rest of the line is on its way; the kernel holds it, not us. Peeked bytes stay
            # readable, so the selector would wake for this socket at once, for ever: park it.
            if sock not in self._parked:
                self._parked[sock] = len(head)
                try:
                    self._selector.unregister(sock)
                except (KeyError, ValueError):
                    pass
            return
        try:
            sock.recv(cut + 1)  # exactly the hello line: what follows stays unread
        except OSError:
            self._unpend(sock)
            sock.close()
            return
        try:
            hello = codec.decode(head[:cut], frozenset({"hello"}))
        except wire.BadMessage as exc:
            self._refuse(sock, peer, str(exc), codec=codec)
            return
        if not hmac.compare_digest(hello["challenge"], challenge):
            # Signed, but for another connection's challenge: a recorded hello played again.
            self._refuse(sock, peer, "its hello answers another connection's challenge (a replayed hello)",
                         codec=codec)
            return
        node_rank = hello["node_rank"]
        with self._lock:
            why = self._why_not(hello, peer)
            if why:
                self._refuse(sock, peer, why, codec=codec)
                state = self.nodes.get(node_rank)
                if state is not None and state.status == "never_connected" and "--nproc-per-node" in why:
                    # That node will never be one of this job's: end the job now, named.
                    state.status, state.reason = "refused", why
                    state.host, state.addr = wire.clean(hello["host"], 200), wire.clean(peer, 200)
                return
            self._unpend(sock)
            nonce = secrets.token_hex(16)
            try:
                sock.setblocking(True)
                sock.settimeout(2.0)
                sock.sendall(codec.encode("welcome", {"run_dir": str(self.run_dir), "nonce": nonce,
                                                      "echo": hello["nonce"]}))
            except OSError:
                sock.close()
                return
            codec.start_session(hello["nonce"], nonce, node_side=False)
            state = self.nodes[node_rank]
            state.host = wire.clean(hello["host"] or peer, 200)
            state.addr = wire.clean(hello["addr"] or peer, 200)
            state.status = "connected"
            if self.static_ranks:
                state.ranks = list(range(node_rank * self.nproc, (node_rank + 1) * self.nproc))
                self.owner.update({r: node_rank for r in state.ranks})
            self.links[node_rank] = Link(sock, codec, wire.FROM_NODE, f"-node{node_rank}")

    def _why_not(self, hello: dict[str, Any], peer: str) -> str:
        """Why this hello cannot be one of this job's nodes ("" when it can), naming the mistake."""
        node_rank = hello["node_rank"]
        if node_rank == 0:
            return ("it says it is node 0, as this node is: two nodes were given --node-rank 0 "
                    "(or SLURM_NODEID)")
        if node_rank not in self.nodes:
            return f"it says it is node {node_rank}, and this job has nodes 0..{len(self.nodes)} (--nnodes)"
        if node_rank in self.links:
            other = self.nodes[node_rank]
            return (f"node {node_rank} is already connected from {other.addr} ({other.host}): two nodes "
                    f"were given --node-rank {node_rank}")
        if hello["nproc"] != self.nproc:
            return (f"node {node_rank} runs --nproc-per-node {hello['nproc']} and node 0 runs {self.nproc}: "
                    f"every node must run the same number of ranks")
        return ""

    def _refuse(self, sock: socket.socket, peer: str, why: str, tell: bool = True,
                codec: Optional[wire.Codec] = None) -> None:
        self._unpend(sock)
        if tell and codec is not None:
            try:
                sock.setblocking(True)
                sock.settimeout(0.5)
                sock.sendall(codec.encode("refused", {"reason": why[:1000]}))
            except OSError:
                pass
        try:
            sock.close()
        except OSError:
            pass
        self._note_refusal(peer, why)

    @property
    def refusals(self) -> list[str]:
        """Each distinct refusal once, with how often it happened (a flood is one line)."""
        return [line if n == 1 else f"{line} ({n:,} times)" for line, n in list(self._refused.items())]

    def _note_refusal(self, peer: str, why: str) -> None:
        line = f"refused a connection from {wire.clean(peer, 60)}: {wire.clean(why, 300)}"
        seen = line in self._refused
        if seen or len(self._refused) < 100:
            self._refused[line] = self._refused.get(line, 0) + 1
        if not seen and self._refusal_lines < MAX_REFUSAL_LINES:
            self._refusal_lines += 1
            print(f"ddpdoctor probe: node 0 {line}", file=sys.stderr, flush=True)

    def _unpend(self, sock: socket.socket) -> None:
        parked = self._parked.pop(sock, None) is not None
        if self._pending.pop(sock, None) is not None and not parked:
            try:
                self._selector.unregister(sock)
            except (KeyError, ValueError):
                pass

    # ---------------------------------------------------------------- while the job runs

    def poll(self, budget_s: Optional[float] = POLL_BUDGET_S) -> bool:
        """Take in what every node sent, for at most about budget_s (None: all that is queued);
        mark nodes that went silent, or lied, as lost. True when it stopped at its budget with
        messages still queued: they stay in their links, in order, and the next poll starts
        with the node after the one it stopped at (each node gets its turn, none waits for ever
        behind a busy one)."""
        with self._lock:
            links = sorted(self.links.items())
        start = next((i for i, (n, _) in enumerate(links) if n >= self._resume_at), 0)
        deadline = None if budget_s is None else self.clock() + budget_s
        behind = False
        for node_rank, link in links[start:] + links[:start]:
            state = self.nodes[node_rank]
            # Read before the drain: a link that closed had queued all it read before closing,
            # so once drained, nothing it sent is left behind when it is marked lost.
            alive = link.alive
            if not self._drain(state, link, deadline):
                behind, self._resume_at = True, node_rank + 1
                break
            if link.clock_offset_s is not None:
                state.clock_offset_s = round(link.clock_offset_s, 3)
            if state.status == "connected" and not alive:
                state.status = "lost"
                state.last_heard_s_ago = round(link.silent_for(), 1)
                state.reason = (link.closed_reason if link.closed_reason not in (None, "closed")
                                else f"silent for {link.silent_for():.0f} s")
                if link.bad_message:
                    print(f"ddpdoctor probe: node 0 dropped {state.label()}: it sent a bad message "
                          f"({link.bad_message})", file=sys.stderr, flush=True)
        for handle in self._unflushed:  # only those written to (1,016 flushes a poll cost 10 ms)
            handle.flush()
        self._unflushed.clear()
        return behind

    def _drain(self, state: NodeState, link: Link, deadline: Optional[float]) -> bool:
        """Take one node's queued messages until none is left (True) or the deadline (False).
        At 1,024 ranks one unbounded poll ran 7 s: the watchdog and the stall clock, which run
        between polls, saw nothing of it until the end."""
        while state.status in ("connected", "finished"):
            if deadline is not None and self.clock() >= deadline:
                return False
            message = link.message()
            if message is None:
                return True
            try:
                self._take(state, message)
            except wire.BadMessage as exc:
                link._drop(str(exc))
                return True
        return True

    def _take(self, state: NodeState, message: dict[str, Any]) -> None:
        """One checked message of a node (node_wire.py checked its types); BadMessage for what
        this job cannot have come from this node."""
        kind = message["t"]
        # Every message counts against the node's quota (telemetry, stack replies, finals alike):
        # what a node may make node 0 hold is bounded whatever it sends.
        total = self.received.get(state.node_rank, 0) + message.get(SIZE, 0)
        if total > wire.RANK_QUOTA * self.nproc:
            raise wire.BadMessage(f"more than {wire.RANK_QUOTA * self.nproc >> 20} MiB of telemetry "
                                  f"({wire.RANK_QUOTA >> 20} MiB per rank)")
        self.received[state.node_rank] = total
        if kind == "file":
            name, data = message["name"], message["data"]
            rank = rank_of_name(name)
            if rank is None:
                raise wire.BadMessage(f"file: {wire.clean(name, 40)!r} is not rank-<R>.jsonl or .stack")
            self._claim(state, rank)
            if is_rank_telemetry(name):
                records: Optional[list] = [] if self.watches else None
                data, last_step = wire.check_records(data, rank, self.world_size, records)
                state.last_step = max(state.last_step, last_step)
                for watch in self.watches:  # before the write: they skip the file from now on
                    watch.forwarded(rank, records)
            else:
                data = wire.clean(data, len(data))
            handle = self._files.get(name)
            if handle is None:
                handle = self._files[name] = open(self.run_dir / name, "a", encoding="utf-8")
            handle.write(data)
            self._unflushed.add(handle)
        elif kind == "final":
            outcome = wire.check_outcome(message["outcome"], set(state.ranks) | self._assigned(state))
            state.status = "finished"
            state.outcome = outcome["status"]
            state.exit_codes = {str(k): v for k, v in outcome["exit_codes"].items()}
            state.log_tail = outcome["log_tail"]
            state.ended_at = outcome["ended_at"]
        elif kind == "stacks_reply":
            ranks = set(state.ranks) | self._assigned(state)
            stacks = [wire.check_stack(d, ranks) for d in message["stacks"]]
            key = (state.node_rank, message["id"])
            if key in self._awaited:  # an answer nobody asked for (or a late one) is not kept
                self._awaited.discard(key)
                self._replies[key] = {"stacks": stacks, "note": wire.clean(message.get("note", ""), 1000)}

    def _assigned(self, state: NodeState) -> set[int]:
        if self.static_ranks:
            return set(range(state.node_rank * self.nproc, (state.node_rank + 1) * self.nproc))
        return set(state.ranks)

    def _claim(self, state: NodeState, rank: int) -> None:
        """A node writes only its own ranks: the ones torchrun gives it (static), or under c10d
        ranks of this world no other node (node 0 included) has written, at most nproc of them."""
        if rank in state.ranks:
            return
        if not 0 <= rank < self.world_size:
            raise wire.BadMessage(f"file: rank {rank} is outside the launched world of {self.world_size}")
        owner = self.owner.get(rank)
        if self.static_ranks or owner is not None:
            raise wire.BadMessage(f"file: rank {rank} is not one of {state.label()}'s ranks"
                                  + (f" (node {owner} runs it)" if owner is not None else ""))
        if len(state.ranks) >= self.nproc or (self.run_dir / rank_telemetry_name(rank)).exists():
            raise wire.BadMessage(f"file: rank {rank} is not one of {state.label()}'s ranks")
        self.owner[rank] = state.node_rank
        state.ranks.append(rank)

    def connected(self) -> list[NodeState]:
        return [s for s in self.nodes.values() if s.status == "connected"]

    def lost(self) -> list[NodeState]:
        return [s for s in self.nodes.values() if s.status in ("lost", "refused")]

    def stacks(self, timeout_s: float) -> tuple[list[RankStack], list[str]]:
        """Every other node's ranks' stacks, asked of all at once; notes for nodes that gave none."""
        self._request += 1
        request = self._request
        self._awaited |= {(s.node_rank, request) for s in self.connected()}
        asked = [s for s in self.connected() if self.links[s.node_rank].send("stacks", id=request)]
        deadline = time.monotonic() + timeout_s
        found: list[RankStack] = []
        notes: list[str] = []
        pending = {s.node_rank for s in asked}
        while pending and time.monotonic() < deadline:
            behind = self.poll()
            for state in asked:
                reply = self._replies.pop((state.node_rank, request), None)
                if reply is None or state.node_rank not in pending:
                    continue
                pending.discard(state.node_rank)
                found.extend(RankStack.from_dict(d, state.label()) for d in reply["stacks"])
                if reply.get("note"):
                    notes.append(f"{state.label()}: {reply['note']}")
            pending -= {s.node_rank for s in asked if s.status != "connected"}
            if not behind:  # a backlog is taken on at once (the replies queue behind it)
                time.sleep(0.05)
        for node_rank in sorted(pending):
            notes.append(f"{self.nodes[node_rank].label()} sent no stacks within {timeout_s:.0f} s")
        self._awaited = {k for k in self._awaited if k[1] != request}
        self._replies = {k: v for k, v in self._replies.items() if k[1] != request}
        return found, notes

    def end_all(self, reason: str, at: Optional[float] = None) -> None:
        for state in self.connected():
            self.links[state.node_rank].send("end", reason=reason, at=at)

    def wait_finals(self, deadline: float) -> None:
        """Until every connected node has said its job ended (or is lost), or the deadline."""
        while time.monotonic() < deadline:
            behind = self.poll()
            if not self.connected():
                return
            if not behind:
                time.sleep(0.1)
        for state in self.connected():
            state.status, state.reason = "lost", "its job did not end when asked"

    def waiting(self) -> bool:
        """A node has not connected yet (and none was lost: that ends the job by itself)."""
        return any(s.status == "never_connected" for s in self.nodes.values())

    def never_joined(self, window_s: float) -> str:
        """Mark the nodes that did not connect within the join window; the line naming them."""
        late = [s for s in self.nodes.values() if s.status == "never_connected"]
        for state in late:
            state.reason = f"its ddpdoctor did not connect to node 0 within {window_s:.0f} s"
        return (f"{', '.join(s.label() for s in late)} did not connect to node 0's gather port within "
                f"{window_s:.0f} s of node 0's start")

    def mark_never_connected(self) -> None:
        for state in self.nodes.values():
            if state.status == "never_connected" and not state.reason:
                state.reason = "its ddpdoctor never connected to node 0"

    # ---------------------------------------------------------------- after the verdict

    def send_verdict(self, exit_code: int, report: dict[str, Any], where: str) -> None:
        if len(jsonl.body(report)) > wire.MAX_LINE // 2:
            # Too large to relay (a node takes at most MAX_LINE): the verdict and where to read it.
            report = {k: report[k] for k in ("tool", "version", "command", "status", "run_dir") if k in report}
            report["notes"] = [f"the full report is {where}"]
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
        """Every node's state for outcome.json; node 0's says whether the port was authenticated
        and which connections it refused (the report's notes: probe/report.py gather_notes)."""
        here = {**self.nodes_here.to_dict(), "authenticated": self.authenticated, "refusals": self.refusals[:10]}
        for state in self.nodes.values():
            link = self.links.get(state.node_rank)
            if link is not None and state.last_heard_s_ago is None:
                state.last_heard_s_ago = round(link.silent_for(), 1)
        return [here] + [s.to_dict() for s in sorted(self.nodes.values(), key=lambda s: s.node_rank)]

    def close(self) -> None:
        self._stop.set()
        try:
            self._waker.send(b"x")
        except OSError:
            pass
        self._acceptor.join(timeout=2.0)
        for sock in list(self._pending):
            self._unpend(sock)
            sock.close()
        try:
            self._selector.close()
            self.server.close()
            self._wake.close()
            self._waker.close()
        except OSError:
            pass
        for link in list(self.links.values()):
            link.close()
        for handle in self._files.values():
            try:
                handle.close()
            except OSError:
                pass
