"""The random state each DataLoader worker draws its augmentation from (DDP305).

torch seeds a worker from a base seed the rank's own torch generator (or the loader's
`generator`) draws at `iter(loader)`, plus the worker id, and a worker_init_fn may seed numpy /
`random` again. When every rank seeds its generator alike (`torch.manual_seed(42)` on every
rank), or the worker_init_fn seeds from one global seed without the rank, worker k of every rank
starts from the same state: the k-th sample of every rank gets the same crop and flip although
the samples differ.

Once per worker start (and, with num_workers=0, once per epoch in the rank itself) this hashes
the torch, numpy and `random` states after seeding and again after the first batch was fetched:
a generator the fetch moved is one the augmentation draws from. Nothing per batch.

A worker is another process: it appends its one record to the rank's telemetry file itself (one
os.write on an O_APPEND descriptor, as the recorder writes), which works whether the worker was
forked or spawned. Nothing here may raise into the user's data pipeline.
"""

from __future__ import annotations

import functools
import hashlib
import os
import random
import sys
import time
from typing import Any, Callable, Optional

from torch.utils.data import DataLoader
from torch.utils.data.dataloader import _SingleProcessDataLoaderIter

from ddpdoctor.probe.records import telemetry as tm
from ddpdoctor.probe.inrank import batches, hooks, recorder


def _digest(data: bytes) -> str:
    return hashlib.blake2b(data, digest_size=8).hexdigest()


def rng_states() -> dict[str, str]:
    """Each global generator's state, hashed: torch's CPU generator, numpy's legacy global one
    (only where the process already imported numpy: never imported for this) and `random`'s."""
    import torch

    state = torch.get_rng_state()
    numpy = sys.modules.get("numpy")
    found = {"torch": _digest(state.numpy().tobytes() if numpy is not None else bytes(state.tolist()))}
    if numpy is not None:
        try:
            # Not the legacy tuple: building it costs three times as much (measured).
            state = numpy.random.get_state(legacy=False)
            inner = state["state"]
            found["numpy"] = _digest(inner["key"].tobytes() + repr(
                (inner["pos"], state.get("has_gauss"), state.get("gauss"))).encode())
        except Exception:  # noqa: BLE001 - a numpy without the legacy global generator
            pass
    # A tuple of ints hashes alike in every process (str, bytes and, before Python 3.12, None
    # hash differently per process), and hashing it costs less than copying its 625 words out.
    _, internal, gauss_next = random.getstate()
    found["random"] = f"{hash((internal, gauss_next or 0.0)) & (2**64 - 1):016x}"
    return found


def _initial_seed() -> Optional[str]:
    """torch's seed as hex: a 64-bit number, beyond what a relayed record's int may be
    (probe/launch/node_wire.py bounds ints to 31 bits)."""
    import torch

    try:
        return f"{int(torch.initial_seed()):x}"
    except Exception:  # noqa: BLE001
        return None


def _name_of(fn: Any) -> str:
    if fn is None:
        return ""
    inner = fn.func if isinstance(fn, functools.partial) else fn
    return str(getattr(inner, "__qualname__", None) or type(inner).__name__)[:200]


def _append(path: str, record: Any) -> None:
    """One record onto the rank's telemetry file, from a worker process."""
    fd = os.open(path, os.O_WRONLY | os.O_APPEND)
    try:
        os.write(fd, tm.encode(record))
    finally:
        os.close(fd)


class SeedWatch:
    """Stands in for a loader's worker_init_fn while its workers start: runs the script's
    worker_init_fn (its errors reach the worker exactly as without the probe), then notes the
    worker's state and watches its first fetch. Picklable (spawned workers) when the script's
    function is."""

    def __init__(self, user_fn: Optional[Callable], path: str, loader_id: int, epoch: int,
                 num_workers: int) -> None:
        self.user_fn, self.path = user_fn, path
        self.loader_id, self.epoch, self.num_workers = loader_id, epoch, num_workers

    def __call__(self, worker_id: int) -> None:
        if self.user_fn is not None:
            self.user_fn(worker_id)
        try:
            before = rng_states()
            tag = (self.loader_id, self.epoch, worker_id, self.num_workers, _name_of(self.user_fn))
            _watch_first_worker_fetch(functools.partial(self._write, tag, before))
        except Exception:  # noqa: BLE001 - a worker without the record still loads its data
            pass

    def _write(self, tag: tuple, before: dict, after: dict) -> None:
        loader_id, epoch, worker, num_workers, init_fn = tag
        _append(self.path, tm.WorkerSeed(time.time(), loader_id, epoch, worker, num_workers,
                                         _initial_seed(), before, after, init_fn))


def _watch_first_worker_fetch(done: Callable[[dict], None]) -> None:
    """In a worker process: the first fetch of either fetcher kind calls `done` with the states
    after it, then both fetchers are as torch made them again (this process only)."""
    from torch.utils.data._utils import fetch

    kinds = (fetch._MapDatasetFetcher, fetch._IterableDatasetFetcher)
    originals = [kind.__dict__["fetch"] for kind in kinds]

    def first_fetch(self: Any, index: Any) -> Any:
        for kind, original in zip(kinds, originals):
            kind.fetch = original
        try:
            return type(self).fetch(self, index)
        finally:
            try:
                done(rng_states())
            except Exception:  # noqa: BLE001
                pass

    for kind in kinds:
        kind.fetch = first_fetch


def _watch_main_process_fetch(iterator: _SingleProcessDataLoaderIter, loader: DataLoader,
                              loader_id: int, epoch: int) -> None:
    """num_workers=0: the rank's own generators feed the augmentation. The first fetch of this
    epoch is wrapped on the iterator's fetcher alone (an instance attribute, removed after it)."""
    fetcher = iterator._dataset_fetcher
    original = fetcher.fetch

    def first_fetch(index: Any) -> Any:
        fetcher.__dict__.pop("fetch", None)
        try:
            before = rng_states()
        except Exception:  # noqa: BLE001
            return original(index)
        data = original(index)
        try:
            recorder.get().write(tm.WorkerSeed(time.time(), loader_id, epoch, -1, 0, _initial_seed(),
                                               before, rng_states(), _name_of(loader.worker_init_fn)))
        except Exception as exc:  # noqa: BLE001
            recorder.get().note_once("worker_seed", f"could not read the random state: {exc!r}")
        return data

    fetcher.fetch = first_fetch


def install() -> None:
    """Numbers a loader's epoch as the DataLoader instrument is about to (it runs first:
    hooks.ORDER), and watches the workers' seeding while the iterator starts them."""

    def __iter__(call: Any, self: DataLoader) -> Any:
        fields = self.__dict__
        watch = None
        try:
            if "_ddpdoctor_id" not in fields:
                fields["_ddpdoctor_id"] = next(batches._ids)
            loader_id, epoch = fields["_ddpdoctor_id"], fields.get("_ddpdoctor_epochs", -1) + 1
            path = recorder.get().path
            if self.num_workers > 0 and path and not isinstance(self.worker_init_fn, SeedWatch):
                # Only while this iterator starts its workers: the iterator reads it then.
                watch = SeedWatch(self.worker_init_fn, path, loader_id, epoch, self.num_workers)
                self.worker_init_fn = watch
        except Exception as exc:  # noqa: BLE001 - never break the user's data pipeline
            recorder.get().note_once("worker_seed", f"could not watch the workers' seeds: {exc!r}")
        try:
            iterator = call(self)
        finally:
            if watch is not None:
                self.worker_init_fn = watch.user_fn
        try:
            if isinstance(iterator, _SingleProcessDataLoaderIter):
                _watch_main_process_fetch(iterator, self, loader_id, epoch)
        except Exception as exc:  # noqa: BLE001
            recorder.get().note_once("worker_seed", f"could not watch the random state: {exc!r}")
        return iterator

    hooks.register("DataLoader.__iter__", "worker_seeds", __iter__)
