"""Every other node's side of a multi-node probe: stream this node's telemetry to node 0's
ddpdoctor, answer its requests (stacks, end), hand over how the local job ended, and wait for
the verdict to exit with node 0's code.

This node does not judge stalls itself: node 0 sees every rank and decides for the whole job.
It ends its own ranks when node 0 says so, and when node 0 is lost (killed, cut off): a job
whose node 0 is gone cannot finish anyway, and nothing may be left running.
"""

from __future__ import annotations

import secrets
import socket
import sys
import time
from dataclasses import asdict
from pathlib import Path
from typing import Any, Callable, Optional

from ddpdoctor.probe.launch import node_wire as wire
from ddpdoctor.probe.launch.node_link import Link, connect
from ddpdoctor.probe.records.rank_files import RankFileTail
from ddpdoctor.probe.records.rundir import is_rank_telemetry, rank_of_name

FORWARD_EVERY_S = 0.2
HINT_AFTER_S = 10.0
STACKS_EVERY_S = 1.0
WELCOME_TIMEOUT_S = 5.0


class NodeReporter:
    def __init__(self, run_dir: str, host: str, port: int, node_rank: int, connect_deadline: float,
                 *, nproc: int = 1, key: Optional[bytes] = None, job: str = "") -> None:
        self.run_dir = Path(run_dir)
        self.node0 = f"{host}:{port}"
        self.host, self.port, self.node_rank = host, port, node_rank
        self.nproc, self.key, self.job = nproc, key, job
        self.connect_deadline = connect_deadline
        self.link: Optional[Link] = None
        self.ever_connected = False  # a link to node 0 was once established (then lost or not)
        self.tails: dict[str, RankFileTail] = {}
        self.ended_by_node0: Optional[str] = None
        self.verdict: Optional[dict[str, Any]] = None
        self.lost_reason: Optional[str] = None
        self.ended_at: Optional[float] = None  # when node 0 told this node to end (its clock)
        self._last_forward = 0.0
        self._last_try = 0.0
        self._last_why = ""
        self._first_try: Optional[float] = None
        self._unanswered = False
        self._hinted = False
        self._last_stacks = -STACKS_EVERY_S

    def poll(self, take_stacks: Callable[[], tuple[list, str]]) -> None:
        """Connect (retrying), forward what the ranks appended, answer node 0's requests."""
        if self.lost_reason is not None:
            return
        if self.link is None:
            self._try_connect()
            return
        if not self.link.alive:
            self.lost_reason = (f"node 0's ddpdoctor ({self.node0}) stopped answering: "
                                f"{self.link.closed_reason or f'silent for {self.link.silent_for():.0f} s'}")
            if self.link.bad_message:
                self.lost_reason = (f"node 0's ddpdoctor ({self.node0}) sent a bad message "
                                    f"({self.link.bad_message}); this node stopped listening to it")
            return
        now = time.monotonic()
        if now - self._last_forward >= FORWARD_EVERY_S:
            self._last_forward = now
            self.forward()
        for message in self.link.messages():
            kind = message["t"]
            if kind == "stacks":
                if time.monotonic() - self._last_stacks < STACKS_EVERY_S:
                    # Stacks cost py-spy on every rank: a node 0 asking again at once (or a peer
                    # posing as one) gets none.
                    self.link.send("stacks_reply", id=message["id"], note="asked again too soon", stacks=[])
                    continue
                self._last_stacks = time.monotonic()
                stacks, note = take_stacks()
                self.link.send("stacks_reply", id=message["id"], note=note,
                               stacks=[asdict(s) for s in stacks])
            elif kind == "end":
                self.ended_by_node0 = wire.clean(message["reason"], 300)
                if self.ended_at is None:
                    self.ended_at = time.time()
            elif kind == "verdict":
                self.verdict = message

    def never_reached(self) -> bool:
        """No link to node 0 was ever made and nothing answered on its port: no refusal, no bad
        message (those are node 0's, or an impostor's, word; this is only silence)."""
        return not self.ever_connected and (self.lost_reason is None or self._unanswered)

    def never_answered(self) -> str:
        """Why node 0 never answered, in the words both ends of a mismatch need."""
        return (f"node 0's ddpdoctor never answered on {self.node0} "
                f"(the gather port: MASTER_PORT + 1 unless --gather-port)"
                + (f": {self._last_why}" if self._last_why else "")
                + "; node 0 was not started, or its --master-addr/--master-port (or --gather-port) "
                  "differ from this node's")

    def _try_connect(self) -> None:
        now = time.monotonic()
        if now >= self.connect_deadline:
            self.lost_reason = self.never_answered()
            self._unanswered = True
            return
        if now - self._last_try < 0.5:
            return
        self._last_try = now
        sock, why = connect(self.host, self.port, now + 1.0)
        if sock is None:
            self._last_why = why
            if self._first_try is None:
                self._first_try = now
            elif not self._hinted and now - self._first_try >= HINT_AFTER_S:
                # Said within seconds, while still trying: node 0 may only be late, but the
                # usual mistake is a port (or address) that differs between the nodes.
                self._hinted = True
                print(f"ddpdoctor probe: node 0's gather port {self.node0} has not answered for "
                      f"{HINT_AFTER_S:.0f} s ({why}): node 0's ddpdoctor has not started yet, or this "
                      f"node's --master-addr/--master-port (or --gather-port) differs from node 0's; "
                      f"still trying", file=sys.stderr, flush=True)
            return
        codec = wire.Codec(self.key, self.job)
        nonce = secrets.token_hex(16)
        try:
            sock.settimeout(WELCOME_TIMEOUT_S)
            # Node 0 speaks first: its challenge, which this hello answers (a hello is good for
            # one connection only).
            challenge = codec.decode(_read_line(sock, time.monotonic() + WELCOME_TIMEOUT_S),
                                     frozenset({"challenge"}))
            sock.sendall(codec.encode("hello", {"node_rank": self.node_rank, "nproc": self.nproc,
                                                "host": socket.gethostname()[:255],
                                                "addr": sock.getsockname()[0], "nonce": nonce,
                                                "challenge": challenge["nonce"]}))
            line = _read_line(sock, time.monotonic() + WELCOME_TIMEOUT_S)
            answer = codec.decode(line, frozenset({"welcome", "refused"}))
        except wire.BadMessage as exc:
            sock.close()
            # Not this job's node 0: another probe on the same port, or a peer that cannot prove
            # it holds the token. Nothing of this node's is sent to it.
            self.lost_reason = (f"the gather port {self.node0} is not this job's node 0: it answered "
                                f"with a bad message ({exc})")
            return
        except OSError as exc:
            sock.close()
            self._last_why = f"no welcome ({exc.strerror or exc})"
            return
        if answer["t"] == "refused":
            sock.close()
            self.lost_reason = (f"node 0's ddpdoctor ({self.node0}) refused this node: "
                                f"{wire.clean(answer['reason'], 600)}")
            return
        if answer["echo"] != nonce:
            sock.close()
            self.lost_reason = f"the gather port {self.node0} answered a hello it was not sent (a replay)"
            return
        codec.start_session(nonce, answer["nonce"], node_side=True)
        self.link = Link(sock, codec, wire.FROM_NODE0, "-node0")
        self.ever_connected = True

    def forward(self) -> None:
        """Send what every local rank file gained since the last call: whole lines of the
        telemetry (a half-written record waits for its end), any bytes of the stack dumps."""
        if self.link is None:
            return
        try:
            names = sorted(p.name for p in self.run_dir.iterdir() if rank_of_name(p.name) is not None)
        except OSError:
            return
        for name in names:
            tail = self.tails.setdefault(name, RankFileTail(self.run_dir / name))
            tail.grew()
            while tail.size > tail.offset:
                before = tail.offset
                data = tail.take(wire.CHUNK, whole_lines=is_rank_telemetry(name))
                if not data:
                    break
                if not self.link.send("file", name=name, data=data.decode("utf-8", "replace")):
                    tail.offset = before  # not sent: the next link (if any) sends it again
                    return

    def job_ended(self, outcome: dict[str, Any], deadline: float) -> None:
        """Hand node 0 the rest of the telemetry and how the job ended here, then wait for the
        verdict (node 0 may still be ending its own ranks and judging)."""
        if self.link is None or not self.link.alive:
            return
        self.forward()
        self.link.send("final", outcome=outcome)
        while time.monotonic() < deadline and self.verdict is None and self.lost_reason is None:
            self.poll(lambda: ([], "this node's job has already ended"))
            time.sleep(0.05)
        if self.verdict is not None and self.link.alive:
            self.link.send("bye")

    def close(self) -> None:
        if self.link is not None:
            self.link.close()



def _read_line(sock: socket.socket, deadline: float) -> bytes:
    """One line (the challenge, the welcome), read byte-bounded: nothing after it is consumed."""
    data = b""
    while time.monotonic() < deadline:
        chunk = sock.recv(wire.MAX_HELLO - len(data), socket.MSG_PEEK)
        if not chunk:
            raise OSError("connection closed")
        cut = chunk.find(b"\n")
        if cut >= 0:
            return sock.recv(cut + 1)[:-1]
        if len(chunk) >= wire.MAX_HELLO:
            raise wire.BadMessage(f"more than {wire.MAX_HELLO} bytes without a welcome")
        time.sleep(0.02)
    raise OSError("timed out")
