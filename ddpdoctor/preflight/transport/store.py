"""Store mode's wire: a torch TCPStore on MASTER_ADDR:MASTER_PORT, hosted by the master node's
ddpdoctor, through which every node publishes its facts and receives the plan and the report.

This is the store torchrun and init_process_group("env://") put on that very port, so a node
that can publish here can rendezvous there. The master binds the port the way port_listener
does (same SO_REUSEADDR / dual-stack rules, and the holder named when it is taken) and hands the
socket to TCPStore, so "cannot bind" means the same thing in every mode.

torch is imported only here (and only in store mode): nodes of an ssh preflight need none.
"""

from __future__ import annotations

import datetime
import json
import os
import time
from typing import Any, Optional

from ddpdoctor.preflight.node import port_listener
from ddpdoctor.preflight.node.facts import ConnectResult, endpoint, probe_connect

PREFIX = "ddpdoctor/preflight/"
POLL_S = 0.05


def _torch_distributed():
    # c10d logs every retried connect, with a C++ stack, on stderr; our report says what matters.
    os.environ.setdefault("TORCH_CPP_LOG_LEVEL", "FATAL")
    import torch.distributed as dist
    return dist


def _first_line(exc: BaseException) -> str:
    lines = str(exc).strip().splitlines()
    return lines[0][:300] if lines else type(exc).__name__


class StoreError(Exception):
    """The store failed under us (the master went away, a key never came)."""


class Store:
    """A TCPStore, server or client, with the few operations store mode needs."""

    def __init__(self, store, server: bool):
        self._store = store
        self.server = server

    @classmethod
    def host(cls, master: str, port: int, timeout: float) -> tuple[Optional["Store"], dict[str, Any]]:
        """Serve the store on `port` (every interface). (store, bind info) or (None, bind info)."""
        dist = _torch_distributed()  # first: once bound, nodes connect, and torch takes seconds to load
        sock, info = port_listener.bind_rendezvous(port)
        if sock is None:
            return None, info
        fd = sock.detach()  # TCPStore owns the listening socket from here on
        try:
            store = dist.TCPStore(master, port, None, True, datetime.timedelta(seconds=timeout),
                                  wait_for_workers=False, master_listen_fd=fd)
        except Exception as exc:  # noqa: BLE001 - reported as the bind result
            os.close(fd)
            return None, {"status": "error", "detail": f"TCPStore could not serve the port: {_first_line(exc)}",
                          "port": port}
        return cls(store, True), info

    @classmethod
    def join(cls, master: str, port: int, timeout: float) -> tuple[Optional["Store"], ConnectResult]:
        """Connect to the master's store, retrying for `timeout` seconds once torch is loaded: the
        master may start a little later than this node. The ConnectResult is the last attempt's:
        refused, timed out, unresolvable - or ok."""
        dist = _torch_distributed()
        deadline = time.monotonic() + timeout
        result = ConnectResult(endpoint(master, port), "timeout", None, "no attempt", 0.0)
        began = time.monotonic()
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                break
            result = probe_connect(master, port, min(2.0, left))
            if result.status == "ok":
                break
            time.sleep(min(0.2, max(0.0, deadline - time.monotonic())))
        result.seconds = round(time.monotonic() - began, 3)
        if result.status != "ok":
            return None, result
        try:
            # The port may be bound a moment before the store serves it: allow a few seconds more.
            store = dist.TCPStore(master, port, None, False,
                                  datetime.timedelta(seconds=max(5.0, deadline - time.monotonic())),
                                  wait_for_workers=False)
        except Exception as exc:  # noqa: BLE001 - something answers on the port, but not a TCPStore
            result.status, result.detail = "error", f"connected, but no TCPStore answered: {_first_line(exc)}"
            return None, result
        return cls(store, False), result

    def set_json(self, key: str, value: Any) -> None:
        self._store.set(PREFIX + key, json.dumps(value))

    def get_json(self, key: str) -> Any:
        return json.loads(self._store.get(PREFIX + key).decode("utf-8"))

    def has(self, key: str) -> bool:
        return bool(self._store.check([PREFIX + key]))

    def wait_json(self, key: str, deadline: float) -> Any:
        """The key's value once it is set; StoreError if `deadline` passes or the master is gone."""
        while True:
            try:
                if self.has(key):
                    return self.get_json(key)
            except Exception as exc:  # noqa: BLE001 - the connection to the master broke
                raise StoreError(f"the store went away: {_first_line(exc)}") from None
            if time.monotonic() >= deadline:
                raise StoreError(f"{key!r} was not published within the time allowed")
            time.sleep(POLL_S)

    def wait_any(self, keys: list[str], deadline: float) -> dict[str, Any]:
        """Poll for every key until all are there or `deadline` passes: {key: value} of those found."""
        found: dict[str, Any] = {}
        while True:
            for key in keys:
                if key not in found and self.has(key):
                    found[key] = self.get_json(key)
            if len(found) == len(keys) or time.monotonic() >= deadline:
                return found
            time.sleep(POLL_S)

    def add(self, key: str, amount: int) -> int:
        return int(self._store.add(PREFIX + key, amount))

    def close(self) -> None:
        """Drop the store: a server stops serving, a client disconnects."""
        self._store = None
