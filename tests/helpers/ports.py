"""Ports a test hands to ddpdoctor or to a job: the one home of "a free port".

Drawn below the kernel's ephemeral range. A port bind(0) hands out lies in that range: it was free
when checked, and then became some other test's outgoing socket (a gloo connection, a py-spy
pipe) before ddpdoctor bound it: "Address already in use", a false DDP103 in a suite run beside
the others (tests/integration/test_api.py, stop 83's CI). Below the range, only a listener that
picks that very number can take it."""

from __future__ import annotations

import random
import socket
from pathlib import Path


def free_port(host: str = "127.0.0.1") -> int:
    """A port free on `host` now, outside the range the kernel hands outgoing sockets."""
    return _draw(host, 1)


def free_port_pair() -> int:
    """A port P with P + 1 free too: the rendezvous and the gather port."""
    return _draw("127.0.0.1", 2)


def _draw(host: str, count: int) -> int:
    low = _ephemeral_low()
    first, last = (max(10000, low - 12000), low - 1 - count) if low > 10100 else (40000, 50000)
    for _ in range(200):
        port = random.randrange(first, last)
        socks = [socket.socket() for _ in range(count)]
        try:
            for offset, sock in enumerate(socks):
                sock.bind((host if offset == 0 else "", port + offset))
            return port
        except OSError:
            continue
        finally:
            for sock in socks:
                sock.close()
    raise RuntimeError(f"no {count} free port(s) on {host}")


def _ephemeral_low() -> int:
    """The first port of the range the kernel picks ephemeral ports from (32768 by default)."""
    try:
        return int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return 32768
