"""Calls worth knowing about without timing them: torch.save paths (DDP701) and nn.DataParallel
(DDP404)."""

from __future__ import annotations

import functools
import os
import socket
import time
from typing import Any, Callable

import torch

from ddpdoctor.probe.records import telemetry as tm
from ddpdoctor.probe.inrank import hooks, recorder


def install() -> None:
    host = socket.gethostname()

    def save(call: Callable, obj: Any, f: Any, *args: Any, **kwargs: Any) -> Any:
        if isinstance(f, (str, os.PathLike)):
            rec = recorder.get()
            rec.write(tm.Save(time.time(), os.path.abspath(os.fspath(f)), host, rec.step,
                              recorder.user_site(2)))
        return call(obj, f, *args, **kwargs)

    hooks.register("torch.save", "usage", save)

    original_dp_init = torch.nn.DataParallel.__init__

    @functools.wraps(original_dp_init)
    def dp_init(self: Any, *args: Any, **kwargs: Any) -> None:
        recorder.get().write(tm.DataParallelUse(time.time(), recorder.user_site(2)))
        original_dp_init(self, *args, **kwargs)

    torch.nn.DataParallel.__init__ = dp_init
