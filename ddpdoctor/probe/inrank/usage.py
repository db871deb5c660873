"""Calls worth knowing about without timing them: torch.save paths (DDP701) and nn.DataParallel
(DDP404)."""

from __future__ import annotations

import functools
import os
import socket
import time
from typing import Any

import torch

from ddpdoctor.probe.records import telemetry as tm
from ddpdoctor.probe.inrank import recorder


def install() -> None:
    original_save = torch.save
    host = socket.gethostname()

    @functools.wraps(original_save)
    def save(obj: Any, f: Any, *args: Any, **kwargs: Any) -> Any:
        if isinstance(f, (str, os.PathLike)):
            rec = recorder.get()
            rec.write(tm.Save(time.time(), os.path.abspath(os.fspath(f)), host, rec.step,
                              recorder.user_site(2)))
        return original_save(obj, f, *args, **kwargs)

    torch.save = save
    torch.serialization.save = save

    original_dp_init = torch.nn.DataParallel.__init__

    @functools.wraps(original_dp_init)
    def dp_init(self: Any, *args: Any, **kwargs: Any) -> None:
        recorder.get().write(tm.DataParallelUse(time.time(), recorder.user_site(2)))
        original_dp_init(self, *args, **kwargs)

    torch.nn.DataParallel.__init__ = dp_init
