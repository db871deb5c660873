"""Hold the rendezvous port on the master for the length of the connect tests.

When the master is this machine the port is bound here; otherwise a tiny listener (port_listener.py)
is started on the master over ssh and lives until we close its stdin or its own deadline passes.
Either way `PortHold.result` says whether the port could be bound and, if taken, by whom.
"""

from __future__ import annotations

import json
import queue
import threading
import time
from typing import Optional

from ddpdoctor.preflight.node import port_listener
from ddpdoctor.preflight.cluster import PortBind
from ddpdoctor.preflight.node import payload
from ddpdoctor.preflight.transport import child, ssh


class PortHold:
    """A held (or not) rendezvous port. `close()` releases it; safe to call twice."""

    def __init__(self, result: PortBind):
        self.result = result
        self._stop = threading.Event()
        self._server: Optional[threading.Thread] = None
        self._proc = None
        self._sock = None

    def close(self) -> None:
        self._stop.set()
        if self._server is not None:
            self._server.join(timeout=1.0)
        if self._sock is not None:
            self._sock.close()
            self._sock = None
        if self._proc is not None:
            proc, self._proc = self._proc, None
            try:
                proc.stdin.close()  # the listener's signal to stop
                proc.wait(timeout=3.0)
            except Exception:  # noqa: BLE001 - whatever happened, the kill below reaps it
                pass
            child.kill(proc)


def not_checked(host: str, port: int, why: str) -> PortHold:
    return PortHold(PortBind(host, port, "not-checked", why))


def hold_locally(host: str, port: int, deadline_s: float) -> PortHold:
    """Bind the port here and accept (and drop) connections until closed or `deadline_s` passes."""
    sock, info = port_listener.bind_rendezvous(port)
    hold = PortHold(PortBind.from_info(host, info, "local"))
    if sock is not None:
        hold._sock = sock
        hold._server = threading.Thread(
            target=port_listener.serve, args=(sock, hold._stop, time.monotonic() + deadline_s),
            name="ddpdoctor-rendezvous", daemon=True)
        hold._server.start()
    return hold


def hold_over_ssh(host: str, port: int, opts: ssh.SshOptions, timeout: float, deadline_s: float) -> PortHold:
    """Start the listener on `host` over ssh; wait at most `timeout` s for it to say how binding went."""
    proc = ssh.start_line_program(host, opts, timeout)
    hold = PortHold(PortBind(host, port, "not-checked", "", where="ssh"))
    hold._proc = proc
    program = payload.listener_program({"port": port, "deadline": deadline_s})
    try:
        proc.stdin.write(ssh.encode_line_program(program))
        proc.stdin.flush()
    except OSError:
        pass  # ssh already died; its stderr says why
    lines: "queue.Queue[Optional[str]]" = queue.Queue()
    threading.Thread(target=_read_lines, args=(proc.stdout, lines), daemon=True).start()
    end = time.monotonic() + timeout
    while True:
        try:
            line = lines.get(timeout=max(0.0, end - time.monotonic()))
        except queue.Empty:
            hold.close()
            hold.result.detail = f"the listener on {host} did not start within {timeout:g} s"
            return hold
        if line is None:  # ssh ended without the marker
            stderr = _read_rest(proc)
            hold.close()
            failure = ssh.classify(host, proc.returncode, stderr, opts)
            hold.result.detail = f"{failure.message}: {failure.evidence}" if failure.evidence else failure.message
            return hold
        if line.startswith(port_listener.LISTEN_MARKER):
            info = json.loads(line[len(port_listener.LISTEN_MARKER):])
            hold.result = PortBind.from_info(host, info, "ssh")
            return hold


def _read_lines(stream, sink: "queue.Queue[Optional[str]]") -> None:
    try:
        for raw in iter(stream.readline, b""):
            sink.put(raw.decode("utf-8", errors="replace").rstrip("\n"))
    except (OSError, ValueError):
        pass
    sink.put(None)


def _read_rest(proc) -> str:
    try:
        _, err = proc.communicate(timeout=2.0)
    except Exception:  # noqa: BLE001 - best effort: the evidence line is a nicety
        return ""
    return (err or b"").decode("utf-8", errors="replace")
