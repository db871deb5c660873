"""Resolve host names from this machine, all at once, within a deadline.

getaddrinfo cannot be cancelled and a broken DNS server can hold it for tens of seconds, so each
lookup runs in a daemon thread; names still pending at the deadline are reported as timed out and
their threads are left to die with the process.
"""

from __future__ import annotations

import socket
import threading
import time
from dataclasses import dataclass
from typing import Optional

from ddpdoctor.preflight.node.facts import resolve


@dataclass
class Resolution:
    addresses: list[str]
    error: Optional[str] = None  # None: resolved


def resolve_all(names: list[str], timeout: float) -> dict[str, Resolution]:
    """{name: Resolution} for every distinct name, in at most `timeout` seconds overall."""
    results: dict[str, Resolution] = {}
    lock = threading.Lock()

    def lookup(name: str) -> None:
        try:
            outcome = Resolution(resolve(name))
        except (socket.gaierror, UnicodeError, OSError) as exc:
            outcome = Resolution([], str(exc) or type(exc).__name__)
        with lock:
            results[name] = outcome

    threads = []
    for name in dict.fromkeys(names):
        thread = threading.Thread(target=lookup, args=(name,), name=f"resolve-{name}", daemon=True)
        thread.start()
        threads.append(thread)
    deadline = time.monotonic() + timeout
    for thread in threads:
        thread.join(max(0.0, deadline - time.monotonic()))
    with lock:
        done = dict(results)
    for name in dict.fromkeys(names):
        done.setdefault(name, Resolution([], f"no answer from the resolver within {timeout:g} s"))
    return done
