"""Every other node's side of a multi-node probe: stream this node's telemetry to node 0's
ddpdoctor, answer its requests (stacks, end), hand over how the local job ended, and wait for
the verdict to exit with node 0's code.

This node does not judge stalls itself: node 0 sees every rank and decides for the whole job.
It ends its own ranks when node 0 says so, and when node 0 is lost (killed, cut off): a job
whose node 0 is gone cannot finish anyway, and nothing may be left running.
"""

from __future__ import annotations

import socket
import time
from dataclasses import asdict
from pathlib import Path
from typing import Any, Callable, Optional

from ddpdoctor.probe.launch.node_gather import FORWARDED_NAME
from ddpdoctor.probe.launch.node_link import CHUNK, Link, connect

FORWARD_EVERY_S = 0.2


class NodeReporter:
    def __init__(self, run_dir: str, host: str, port: int, node_rank: int, connect_deadline: float) -> None:
        self.run_dir = Path(run_dir)
        self.node0 = f"{host}:{port}"
        self.host, self.port, self.node_rank = host, port, node_rank
        self.connect_deadline = connect_deadline
        self.link: Optional[Link] = None
        self.offsets: dict[str, int] = {}
        self.ended_by_node0: Optional[str] = None
        self.verdict: Optional[dict[str, Any]] = None
        self.lost_reason: Optional[str] = None
        self._last_forward = 0.0
        self._last_try = 0.0

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
            return
        now = time.monotonic()
        if now - self._last_forward >= FORWARD_EVERY_S:
            self._last_forward = now
            self.forward()
        for message in self.link.messages():
            kind = message.get("t")
            if kind == "stacks":
                stacks, note = take_stacks()
                self.link.send("stacks_reply", id=message.get("id"), note=note,
                               stacks=[asdict(s) for s in stacks])
            elif kind == "end":
                self.ended_by_node0 = str(message.get("reason", "node 0 ended the job"))
            elif kind == "verdict":
                self.verdict = message
            elif kind == "refused":
                self.lost_reason = f"node 0's ddpdoctor ({self.node0}) refused this node: {message.get('reason')}"

    def _try_connect(self) -> None:
        now = time.monotonic()
        if now >= self.connect_deadline:
            self.lost_reason = (f"node 0's ddpdoctor did not answer on {self.node0} "
                                f"(the gather port: MASTER_PORT + 1 unless --gather-port)")
            return
        if now - self._last_try < 0.5:
            return
        self._last_try = now
        sock, _why = connect(self.host, self.port, now + 1.0)
        if sock is None:
            return
        link = Link(sock, "-node0")
        addr = sock.getsockname()[0]
        link.send("hello", node_rank=self.node_rank, host=socket.gethostname(), addr=addr)
        self.link = link

    def forward(self) -> None:
        """Send what every local rank file gained since the last call: whole lines of the
        telemetry (a half-written record waits for its end), any bytes of the stack dumps."""
        if self.link is None:
            return
        try:
            names = sorted(p.name for p in self.run_dir.iterdir() if FORWARDED_NAME.match(p.name))
        except OSError:
            return
        for name in names:
            path = self.run_dir / name
            try:
                size = path.stat().st_size
            except OSError:
                continue
            offset = self.offsets.get(name, 0)
            while size > offset:
                with open(path, "rb") as handle:
                    handle.seek(offset)
                    data = handle.read(min(CHUNK, size - offset))
                if name.endswith(".jsonl"):
                    cut = data.rfind(b"\n")
                    if cut < 0:
                        break
                    data = data[:cut + 1]
                if not self.link.send("file", name=name, data=data.decode("utf-8", "replace")):
                    return
                offset += len(data)
                self.offsets[name] = offset

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

