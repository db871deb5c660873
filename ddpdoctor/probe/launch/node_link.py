"""The wire between the ddpdoctors of a multi-node probe: one TCP connection from each node to
node 0's ddpdoctor, on the gather port (default MASTER_PORT + 1), one message per line in the
framing of node_wire.py (job identity, sequence, MAC, schema).

Why not the job's own c10d store: it belongs to torchrun's agent on node 0 and dies with the
job, and the verdict must travel after the job has ended. Why TCP and not files: no shared
filesystem is assumed. One connection per node, both ways:

    node -> 0   hello {node_rank, nproc, host, addr, nonce}   first line, read by node 0's selector
                file  {name, data}      what the node's ranks appended to rank-<R>.jsonl / .stack
                final {outcome}         the node's job ended (exit codes, log tail, when it was ended)
                stacks_reply {id, stacks, note}
    0 -> node   welcome {nonce, echo}   node 0 proves it knows the token (MAC over the node's nonce)
                refused {reason}        a node that is not one of this job's, or a duplicate
                stacks {id}             take your ranks' stacks now (a stall)
                end {reason, at}        end your ranks now
                verdict {exit_code, report, where}
    both        beat {now}              every HEARTBEAT_S, from a thread of its own, so a node
                                        busy taking stacks or judging still looks alive; `now`
                                        is the sender's clock (node 0 compares the ranks' times
                                        with the moment it began ending the job)

A peer silent for node_wire.silence_s() (10 s unless DDPDOCTOR_NODE_SILENCE_S) is lost (its
ddpdoctor killed, its network cut): nothing else tells a dead TCP peer from a slow one within a
deadline. A message that fails node_wire's checks drops the peer at once, with its reason.
"""

from __future__ import annotations

import queue
import socket
import threading
import time
from typing import Any, Optional

from ddpdoctor.probe.launch.node_wire import MAX_LINE, BadMessage, Codec, silence_s

HEARTBEAT_S = 1.0
# A peer's heartbeats are never queued, but each is decoded and checked: more than a burst of
# BEAT_BURST, refilled at BEAT_RATE a second (a good peer sends one a second), is a flood, and
# the link is dropped rather than spending node 0's CPU (the job's) on it.
BEAT_BURST = 20
BEAT_RATE = 4.0
SEND_TIMEOUT_S = 5.0
MAX_QUEUED = 2 * MAX_LINE  # bytes of received lines waiting for the owner to take them
SIZE = "_bytes"  # the key under which a queued message carries its line's length


class Link:
    """One connection: a reader thread queues checked messages, a heartbeat thread keeps the
    peer's view of us alive, send() is safe from any thread and never blocks past its deadline."""

    def __init__(self, sock: socket.socket, codec: Codec, allowed: frozenset, label: str = "") -> None:
        self.sock = sock
        self.codec = codec
        self.allowed = allowed
        self.label = label
        self.lost_after_s = silence_s()
        sock.settimeout(0.5)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.inbox: "queue.Queue[dict[str, Any]]" = queue.Queue()
        self.queued_bytes = 0  # lines in the inbox, not yet taken: at most MAX_QUEUED (+ one line)
        self.received_bytes = 0  # every byte the peer sent on this link
        self._queued_lock = threading.Lock()
        self._room = threading.Event()
        self.last_heard = time.monotonic()
        self.clock_offset_s: Optional[float] = None  # the peer's wall clock minus ours
        self._beat_tokens, self._beat_at = float(BEAT_BURST), time.monotonic()
        self.closed_reason: Optional[str] = None
        self.bad_message: Optional[str] = None  # what the peer sent that was not believed
        self._send_lock = threading.Lock()
        self._stop = threading.Event()
        self._threads = [threading.Thread(target=self._read, daemon=True, name=f"ddpdoctor-link-read{label}"),
                         threading.Thread(target=self._beat, daemon=True, name=f"ddpdoctor-link-beat{label}")]
        for thread in self._threads:
            thread.start()

    @property
    def alive(self) -> bool:
        return self.closed_reason is None and time.monotonic() - self.last_heard < self.lost_after_s

    def silent_for(self) -> float:
        return time.monotonic() - self.last_heard

    def send(self, kind: str, **fields: Any) -> bool:
        """Send one message; False (and the link closed) when it cannot go within the deadline."""
        if self.closed_reason is not None:
            return False
        deadline = time.monotonic() + SEND_TIMEOUT_S
        with self._send_lock:
            try:
                data = self.codec.encode(kind, fields)
            except ValueError as exc:  # a NaN or a value JSON cannot hold: ours, said plainly
                self._close(f"could not encode {kind}: {exc}")
                return False
            view = memoryview(data)
            while view:
                if time.monotonic() >= deadline:
                    self._close("send timed out")
                    return False
                try:
                    sent = self.sock.send(view)
                except socket.timeout:
                    continue
                except OSError as exc:
                    self._close(f"send failed: {exc.strerror or exc}")
                    return False
                view = view[sent:]
        return True

    def messages(self) -> list[dict[str, Any]]:
        out = []
        while (message := self.message()) is not None:
            out.append(message)
        return out

    def message(self) -> Optional[dict[str, Any]]:
        """The oldest queued message (None when none is): a taker with a time budget leaves the
        rest queued, in order, for its next turn."""
        try:
            message = self.inbox.get_nowait()
        except queue.Empty:
            return None
        self._taken(message)
        return message

    def _taken(self, message: dict[str, Any]) -> None:
        with self._queued_lock:
            self.queued_bytes -= message.get(SIZE, 0)
        self._room.set()

    def close(self) -> None:
        self._close("closed")
        for thread in self._threads:
            if thread is not threading.current_thread():
                thread.join(timeout=2.0)

    def _close(self, reason: str) -> None:
        if self.closed_reason is None:
            self.closed_reason = reason
        self._stop.set()
        try:
            self.sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        try:
            self.sock.close()
        except OSError:
            pass

    def _read(self) -> None:
        # The unfinished line's pieces: only each new chunk is searched for a newline, so a long
        # line dribbled in small pieces costs linear time, not a rescan of all before it per piece.
        pieces: list[bytes] = []
        held = 0
        while not self._stop.is_set():
            if self.queued_bytes > MAX_QUEUED:
                # Node 0 has not taken what is queued yet: stop reading (TCP pushes back on the
                # peer) rather than hold more; we are the silent side, not the peer.
                self.last_heard = time.monotonic()
                self._room.wait(0.2)
                self._room.clear()
                continue
            try:
                chunk = self.sock.recv(65536)
            except socket.timeout:
                continue
            except OSError as exc:
                self._close(f"connection lost: {exc.strerror or exc}")
                return
            if not chunk:
                self._close("connection closed by the peer")
                return
            self.last_heard = time.monotonic()
            self.received_bytes += len(chunk)
            cut = chunk.find(b"\n")
            if cut < 0:
                pieces.append(chunk)
                held += len(chunk)
                if held > MAX_LINE:
                    self._drop(f"a message larger than {MAX_LINE >> 20} MiB")
                    return
                continue
            *lines, rest = chunk.split(b"\n")
            lines[0] = b"".join(pieces) + lines[0]
            pieces, held = ([rest], len(rest)) if rest else ([], 0)
            for line in lines:
                if len(line) > MAX_LINE:
                    self._drop(f"a message larger than {MAX_LINE >> 20} MiB")
                    return
                try:
                    message = self.codec.decode(line, self.allowed)
                except BadMessage as exc:
                    self._drop(str(exc))
                    return
                if message["t"] == "beat":
                    if not self._beat_allowed():
                        self._drop(f"heartbeats faster than {BEAT_RATE:.0f} a second")
                        return
                    self.clock_offset_s = message["now"] - time.time()
                else:
                    message[SIZE] = len(line)
                    with self._queued_lock:
                        self.queued_bytes += len(line)
                    self.inbox.put(message)

    def _beat_allowed(self) -> bool:
        now = time.monotonic()
        self._beat_tokens = min(float(BEAT_BURST), self._beat_tokens + (now - self._beat_at) * BEAT_RATE)
        self._beat_at = now
        if self._beat_tokens < 1.0:
            return False
        self._beat_tokens -= 1.0
        return True

    def _drop(self, why: str) -> None:
        self.bad_message = why
        self._close(f"sent a bad message ({why}): dropped")

    def _beat(self) -> None:
        while not self._stop.wait(HEARTBEAT_S):
            if not self.send("beat", now=time.time()):
                return


def connect(host: str, port: int, deadline: float, stop: Optional[threading.Event] = None) -> tuple[Optional[socket.socket], str]:
    """Keep trying until the deadline: node 0's ddpdoctor may start after this one."""
    last = "not tried"
    while time.monotonic() < deadline and not (stop is not None and stop.is_set()):
        try:
            sock = socket.create_connection((host, port), timeout=min(3.0, max(0.1, deadline - time.monotonic())))
            return sock, ""
        except OSError as exc:
            last = exc.strerror or str(exc)
        time.sleep(0.25)
    return None, last
