"""Hold the rendezvous port open on the master while every node tries to connect to it.

Binds the way torch's TCPStore server does (every interface, SO_REUSEADDR, IPv6 dual-stack when
the host has it), so "cannot bind" here means the real job could not bind either. When the bind
fails because the port is taken, names the process holding it when it can.

Shipped to a remote master over ssh like facts.py: standard library only (psutil when present),
Python 3.7 syntax, no `from __future__` import. There it serves until its stdin closes (ddpdoctor
is done, or died and took ssh with it) or its own deadline passes, whichever comes first.
"""

import errno
import json
import os
import select
import socket
import sys
import threading
import time
from typing import Any, Dict, Optional, Tuple  # noqa: F401 (type comments: this file runs on remote Pythons)

LISTEN_MARKER = "DDPDOCTOR-LISTEN "


def bind_rendezvous(port):
    # type: (int) -> Tuple[Optional[socket.socket], Dict[str, Any]]
    """(listening socket, info) or (None, info); info["status"] is listening | in-use | error."""
    attempts = []
    if socket.has_ipv6:
        attempts.append((socket.AF_INET6, "::"))
    attempts.append((socket.AF_INET, "0.0.0.0"))
    info = {"status": "error", "detail": "no address family to bind", "port": port}  # type: Dict[str, Any]
    for family, address in attempts:
        try:
            sock = socket.socket(family, socket.SOCK_STREAM)
        except OSError:
            continue  # no IPv6 in this kernel / namespace
        try:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            if family == socket.AF_INET6:
                sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 0)
            sock.bind((address, port))
            sock.listen(512)
            return sock, {"status": "listening", "detail": "", "port": port,
                          "bound": ("[%s]:%d" if ":" in address else "%s:%d") % (address, port)}
        except OSError as exc:
            sock.close()
            if exc.errno == errno.EADDRINUSE:
                info = {"status": "in-use", "detail": exc.strerror or str(exc), "port": port}
                pid, name = who_holds(port)
                info["holder_pid"], info["holder_name"] = pid, name
                return None, info
            if exc.errno in (errno.EAFNOSUPPORT, errno.EADDRNOTAVAIL) and family == socket.AF_INET6:
                continue  # IPv6 present but unusable here: TCPStore falls back to IPv4 too
            info = {"status": "error", "detail": exc.strerror or str(exc), "port": port,
                    "errno": exc.errno}
            return None, info
    return None, info


def who_holds(port):
    # type: (int) -> Tuple[Optional[int], Optional[str]]
    """(pid, process name) of the process listening on TCP `port`, when this user may see it."""
    try:
        import psutil
    except ImportError:
        return _who_holds_from_proc(port)
    try:
        for conn in psutil.net_connections(kind="tcp"):
            if conn.laddr and conn.laddr.port == port and conn.status == psutil.CONN_LISTEN and conn.pid:
                try:
                    return conn.pid, psutil.Process(conn.pid).name()
                except psutil.Error:
                    return conn.pid, None
    except (psutil.Error, OSError):
        pass
    return _who_holds_from_proc(port)


def _who_holds_from_proc(port):
    # type: (int) -> Tuple[Optional[int], Optional[str]]
    inodes = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            with open(table) as handle:
                next(handle, None)
                for line in handle:
                    parts = line.split()
                    if len(parts) > 9 and parts[3] == "0A" and int(parts[1].rsplit(":", 1)[1], 16) == port:
                        inodes.add("socket:[%s]" % parts[9])
        except (OSError, ValueError):
            continue
    if not inodes:
        return None, None
    for pid in (p for p in os.listdir("/proc") if p.isdigit()):
        try:
            fds = os.listdir("/proc/%s/fd" % pid)
        except OSError:
            continue
        for fd in fds:
            try:
                if os.readlink("/proc/%s/fd/%s" % (pid, fd)) in inodes:
                    with open("/proc/%s/comm" % pid) as handle:
                        return int(pid), handle.read().strip()
            except OSError:
                continue
    return None, None


def serve(sock, stop, deadline):
    # type: (socket.socket, threading.Event, float) -> int
    """Accept and close connections until `stop` is set or `deadline` passes; returns the count."""
    sock.settimeout(0.1)
    accepted = 0
    while not stop.is_set() and time.monotonic() < deadline:
        try:
            conn, _ = sock.accept()
        except socket.timeout:
            continue
        except OSError:
            break
        conn.close()
        accepted += 1
    return accepted


def _remote_main(params):
    # type: (Dict[str, Any]) -> None
    """Over ssh: bind, say how that went in one marked line, serve until stdin closes or the
    deadline passes."""
    sock, info = bind_rendezvous(int(params["port"]))
    sys.stdout.write(LISTEN_MARKER + json.dumps(info) + "\n")
    sys.stdout.flush()
    if sock is None:
        return
    deadline = time.monotonic() + float(params.get("deadline", 60.0))
    stop = threading.Event()
    server = threading.Thread(target=serve, args=(sock, stop, deadline), daemon=True)
    server.start()
    stdin = sys.stdin.fileno()
    while time.monotonic() < deadline:
        ready, _, _ = select.select([stdin], [], [], max(0.0, min(1.0, deadline - time.monotonic())))
        if ready and not os.read(stdin, 4096):
            break  # stdin closed: ddpdoctor is done with us
    stop.set()
    server.join(timeout=1.0)
    sock.close()
