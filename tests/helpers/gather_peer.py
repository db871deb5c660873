"""Peers of the gather port that are not ddpdoctor: a node that says what a test tells it to (a
forged or malformed message, a flood), and a node 0 that answers every node with a verdict of
the test's choosing. Both speak the real framing (launch/node_wire.py) over real sockets."""

from __future__ import annotations

import json
import secrets
import socket
import threading
import time
from typing import Any, Optional

from ddpdoctor.probe.launch import node_wire as wire


class FakeNode:
    """A client of node 0's gather port."""

    def __init__(self, port: int, job: str = "", key: Optional[bytes] = None, host: str = "127.0.0.1") -> None:
        self.sock = socket.create_connection((host, port), timeout=5)
        self.codec = wire.Codec(key, job)
        self.nonce = secrets.token_hex(16)
        self._challenge: Optional[str] = None
        self.challenge_line = b""

    def challenge(self) -> str:
        """Node 0's first line: the challenge this connection's hello must answer. Read as a node
        reads it; a node of another job or without node 0's token cannot check it, and reads
        the nonce anyway (to see what node 0 says to its hello)."""
        if self._challenge is None:
            self.challenge_line = self.read_line()
            try:
                self._challenge = self.codec.decode(self.challenge_line, frozenset({"challenge"}))["nonce"]
            except wire.BadMessage:
                self._challenge = json.loads(self.challenge_line.partition(b" ")[2])["nonce"]
                self.codec.received += 1
        return self._challenge

    def hello(self, node_rank: int = 1, nproc: int = 1, **extra: Any) -> dict[str, Any]:
        """Say hello; node 0's answer (welcome or refused), checked as a node checks it."""
        extra.setdefault("challenge", self.challenge())
        self.send("hello", node_rank=node_rank, nproc=nproc, host="fake", addr="127.0.0.1",
                  nonce=self.nonce, **extra)
        answer = self.codec.decode(self.read_line(), frozenset({"welcome", "refused"}))
        if answer["t"] == "welcome":
            self.codec.start_session(self.nonce, answer["nonce"], node_side=True)
        return answer

    def send(self, kind: str, **fields: Any) -> None:
        self.sock.sendall(self.codec.encode(kind, fields))

    def raw(self, data: bytes) -> None:
        self.sock.sendall(data)

    def read_line(self, timeout: float = 5.0) -> bytes:
        self.sock.settimeout(timeout)
        data = b""
        while not data.endswith(b"\n"):
            chunk = self.sock.recv(1)
            if not chunk:
                raise ConnectionError(f"closed by node 0 after {data[:200]!r}")
            data += chunk
        return data[:-1]

    def closed_by_peer(self, timeout: float = 5.0) -> bool:
        """Node 0 closed this connection (reading whatever it still sent)."""
        self.sock.settimeout(timeout)
        try:
            while True:
                if not self.sock.recv(65536):
                    return True
        except (socket.timeout, TimeoutError):
            return False
        except OSError:
            return True

    def close(self) -> None:
        self.sock.close()


class FakeNode0:
    """A server on the gather port that welcomes the first node and, once it says its job
    ended (`final`), sends it `verdict` (by default a PASS, exit 0), whatever it saw."""

    def __init__(self, port: int, job: str, exit_code: int = 0, status: str = "pass",
                 key: Optional[bytes] = None, extra: Optional[dict[str, Any]] = None) -> None:
        self.server = socket.create_server(("127.0.0.1", port))
        self.server.settimeout(0.5)
        self.job, self.key = job, key
        self.exit_code, self.status = exit_code, status
        self.extra = extra or {}  # more fields of the verdict's report (a hostile node 0's)
        self.received: list[dict[str, Any]] = []
        self.error = ""
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        while not self._stop.is_set():
            try:
                sock, _ = self.server.accept()
            except (socket.timeout, TimeoutError):
                continue
            except OSError:
                return
            try:
                self._talk(sock)
            except (OSError, wire.BadMessage) as exc:
                self.error = repr(exc)
            finally:
                sock.close()

    def _talk(self, sock: socket.socket) -> None:
        codec = wire.Codec(self.key, self.job)
        sock.sendall(codec.encode("challenge", {"nonce": secrets.token_hex(16)}))
        reader = sock.makefile("rb")
        first = reader.readline()
        try:
            hello = codec.decode(first.rstrip(b"\n"), frozenset({"hello"}))
        except wire.BadMessage as exc:
            raise wire.BadMessage(f"{exc}: {first[:300]!r}") from None
        nonce = secrets.token_hex(16)
        sock.sendall(codec.encode("welcome", {"run_dir": "/fake", "nonce": nonce, "echo": hello["nonce"]}))
        codec.start_session(hello["nonce"], nonce, node_side=False)
        lock = threading.Lock()
        done = threading.Event()

        def send(kind: str, **fields: Any) -> None:
            with lock:
                sock.sendall(codec.encode(kind, fields))

        def beat() -> None:  # as node 0 does: a node hears from it every second
            while not done.wait(1.0):
                try:
                    send("beat", now=time.time())
                except OSError:
                    return

        threading.Thread(target=beat, daemon=True).start()
        try:
            self._listen(reader, codec, send)
        finally:
            done.set()

    def _listen(self, reader, codec: wire.Codec, send) -> None:
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline and not self._stop.is_set():
            line = reader.readline()
            if not line:
                return
            try:
                message = codec.decode(line.rstrip(b"\n"), wire.FROM_NODE)
            except wire.BadMessage as exc:
                raise wire.BadMessage(f"{exc}: {line[:300]!r}") from None
            self.received.append(message)
            if message["t"] == "final":
                report = {"tool": "ddpdoctor", "command": "probe", "status": self.status,
                          "findings": [], "checks": [], "metrics": {}, **self.extra}
                send("verdict", exit_code=self.exit_code, report=report, where="fake:/report.json")
            if message["t"] == "bye":
                return

    def close(self) -> None:
        self._stop.set()
        self.server.close()
        self._thread.join(timeout=5)


def until(predicate, timeout: float = 5.0) -> bool:
    """Wait for a condition (never a fixed sleep): True as soon as it holds."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.05)
    return predicate()
