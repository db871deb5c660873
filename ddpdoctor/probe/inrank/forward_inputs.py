"""What the model is fed: the tensor inputs of each training forward of a DDP model, fingerprinted.

DataLoader batches are fingerprinted per sample (batches.py), but many scripts build their
batches themselves (nanoGPT's `get_batch`: a np.memmap of tokens and torch.randint offsets) and
a script that seeds that sampling alike on every rank feeds every rank the same batch. So the
inputs of the DDP module's forward are fingerprinted too, whatever built them (DDP301).

Hot path: one forward pre-hook per training forward. Per tensor input (at most MAX_TENSORS, found
at most two containers deep in args and kwargs) a fixed sample of SAMPLE positions of the
flattened tensor is gathered (one index op, no copy of the tensor), read as raw bits and hashed
with Python's tuple hash (deterministic across processes for integers), mixed with shape and
dtype. About 15 us per tensor plus one 13 us telemetry line per forward on the 2-core CI box.
For tensors on a GPU the sample is copied without blocking and read at a later forward once the
copy's CUDA event says it landed (the copy is asynchronous: the CPU may be a step ahead of the
device), so the probe adds no device synchronisation; at most MAX_PENDING copies wait, beyond
which the oldest is waited for. Forwards under no_grad or in eval mode are not recorded.
"""

from __future__ import annotations

import time
import zlib
from typing import Any, Optional

import torch

from ddpdoctor.probe.records import telemetry as tm
from ddpdoctor.probe.inrank import recorder

SAMPLE = 64  # positions read per tensor: differing batches differ in some of them
MAX_TENSORS = 12
MAX_FORWARDS = 2000  # per model: enough to judge; later forwards cost nothing
MAX_PENDING = 4  # GPU samples in flight per model before the oldest is waited for
_MASK = 0xFFFF_FFFF_FFFF_FFFF
_LOW_PRECISION = (torch.float16, torch.bfloat16)
_positions: dict[tuple, torch.Tensor] = {}


def _positions_for(n: int, device: torch.device) -> torch.Tensor:
    key = (n, device)
    p = _positions.get(key)
    if p is None:
        p = torch.linspace(0, n - 1, min(n, SAMPLE)).round().long().to(device)
        _positions[key] = p
    return p


def _leaves(obj: Any, path: str, out: list, depth: int = 0) -> None:
    if len(out) >= MAX_TENSORS:
        return
    if isinstance(obj, torch.Tensor):
        out.append((path, obj))
    elif depth < 2 and isinstance(obj, dict):
        for key in sorted(obj, key=str):
            _leaves(obj[key], f"{path}.{key}", out, depth + 1)
    elif depth < 2 and isinstance(obj, (list, tuple)):
        for index, item in enumerate(obj[:MAX_TENSORS]):
            _leaves(item, f"{path}[{index}]", out, depth + 1)


def _sample(t: torch.Tensor) -> torch.Tensor:
    """SAMPLE fixed positions of the flattened tensor (torch.take: one op, any layout). Values are
    hashed as Python numbers: equal on every rank for equal inputs (a NaN, whose hash is its
    identity, only ever makes two inputs look different)."""
    if t.is_complex():
        t = torch.view_as_real(t)
    picked = torch.take(t.detach(), _positions_for(t.numel(), t.device))
    if picked.dtype in _LOW_PRECISION:
        return picked.float()  # .tolist() of these goes through float anyway
    return picked


class _Model:
    """Per model: its number, the training forwards seen, the reads from a GPU still in flight."""

    def __init__(self, model_id: int) -> None:
        self.id = model_id
        self.forwards = 0
        # (iteration, step, keys, shape words, samples on CPU, the copy's event), oldest first
        self.pending: list[tuple] = []

    def flush(self) -> None:
        """Write the samples whose copies have landed, in order (the oldest waited for when
        too many are in flight)."""
        while self.pending:
            iteration, step, keys, shapes, samples, event = self.pending[0]
            if event is not None and not event.query():
                if len(self.pending) <= MAX_PENDING:
                    return
                event.synchronize()
            self.pending.pop(0)
            _write(self.id, iteration, step, keys, shapes, [hash(tuple(s.tolist())) for s in samples])

    def hook(self, module: Any, args: Any, kwargs: Any) -> None:
        try:
            self.flush()
            if not (module.training and torch.is_grad_enabled()) or self.forwards >= MAX_FORWARDS:
                return
            iteration = self.forwards
            self.forwards += 1
            leaves: list = []
            _leaves(args, "args", leaves)
            _leaves(kwargs, "kwargs", leaves)
            if not leaves:
                return
            keys = [path for path, _ in leaves]
            shapes = [_shape_word(t) for _, t in leaves]
            step = recorder.get().step
            if all(t.device.type == "cpu" for _, t in leaves):
                _write(self.id, iteration, step, keys, shapes,
                       [hash(tuple(_sample(t).tolist())) if t.numel() else 0 for _, t in leaves])
            else:
                samples = [_sample(t).to("cpu", non_blocking=True) if t.numel()
                           else torch.zeros(0, dtype=torch.int64) for _, t in leaves]
                cuda = next((t.device for _, t in leaves if t.device.type == "cuda"), None)
                event = None
                if cuda is not None:  # the copies' landing, on that device's current stream
                    event = torch.cuda.Event()
                    event.record(torch.cuda.current_stream(cuda))
                self.pending.append((iteration, step, keys, shapes, samples, event))
        except Exception as exc:  # noqa: BLE001 - the user's forward must run
            recorder.get().note_once("forward-inputs", f"could not fingerprint the model's inputs: {exc!r}")


_shape_words: dict[tuple, int] = {}


def _shape_word(t: torch.Tensor) -> int:
    """Shape and dtype as a number, the same on every rank (cached: str(dtype) is slow)."""
    key = (t.shape, t.dtype)
    word = _shape_words.get(key)
    if word is None:
        word = _shape_words[key] = zlib.crc32(f"{tuple(t.shape)}{t.dtype}".encode()) * 0x9E3779B97F4A7C15
    return word


def _write(model_id: int, iteration: int, step: int, keys: list, shapes: list, hashes: list) -> None:
    prints = {}
    for key, shape, value in zip(keys, shapes, hashes):
        prints[key] = format((value ^ shape) & _MASK, "016x")
    recorder.get().write(tm.ForwardInputs(time.time(), model_id, iteration, step, prints))


def attach(module: torch.nn.Module, model_id: int) -> None:
    """Fingerprint the inputs of every training forward of this (DDP or FSDP) module."""
    module.register_forward_pre_hook(_Model(model_id).hook, with_kwargs=True)
