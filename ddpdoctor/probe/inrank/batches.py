"""DataLoader epochs and batches: what each rank reads, fingerprinted per sample (DDP301-303).

Also where --steps-per-epoch cuts an epoch short, so that epoch boundaries (set_epoch,
validation, checkpointing: where many real hangs live) are reached within the probe. The number
of batches the rank would have had is recorded before the cut.
"""

from __future__ import annotations

import collections
import functools
import itertools
import time
from typing import Any, Optional

import torch
from torch.utils.data import BatchSampler, DataLoader, DistributedSampler, IterableDataset, RandomSampler
from torch.utils.data.dataloader import _BaseDataLoaderIter

from ddpdoctor.probe.records import telemetry as tm
from ddpdoctor.probe.inrank import fingerprint, hooks, recorder

_ids = itertools.count()


class _EpochState:
    __slots__ = ("loader_id", "epoch", "index", "limit", "ended", "with_indices")

    def __init__(self, loader_id: int, epoch: int, limit: int, with_indices: bool) -> None:
        self.loader_id, self.epoch, self.index, self.limit, self.ended = loader_id, epoch, 0, limit, False
        self.with_indices = with_indices


def _as_indices(index: Any) -> Optional[list[int]]:
    if isinstance(index, int):
        return [index]
    if isinstance(index, (list, tuple)) and index and all(isinstance(i, int) for i in index[:4096]):
        return list(index)
    return None


def _sampler_of(loader: DataLoader) -> Any:
    sampler = loader.sampler
    batch_sampler = loader.batch_sampler
    inner = getattr(batch_sampler, "sampler", None)
    if batch_sampler is not None and inner is not None and not isinstance(sampler, DistributedSampler):
        sampler = inner  # a custom batch sampler wrapping the real one
    return sampler


def _shuffles(sampler: Any) -> Optional[bool]:
    if isinstance(sampler, DistributedSampler):
        return bool(sampler.shuffle)
    if isinstance(sampler, RandomSampler):
        return True
    name = type(sampler).__name__
    if name == "SequentialSampler":
        return False
    shuffle = getattr(sampler, "shuffle", None)
    return bool(shuffle) if isinstance(shuffle, bool) else None


def _length(obj: Any) -> Optional[int]:
    try:
        return len(obj)
    except (TypeError, NotImplementedError):
        return None


def _record_epoch(loader: DataLoader, loader_id: int, epoch: int) -> None:
    rec = recorder.get()
    sampler = _sampler_of(loader)
    iterable = isinstance(loader.dataset, IterableDataset)
    rec.write(tm.Loader(
        time.time(), loader_id, epoch, rec.step,
        type(sampler).__name__ if sampler is not None else "none",
        isinstance(sampler, DistributedSampler),
        None if iterable else _shuffles(sampler),
        getattr(sampler, "epoch", None) if isinstance(sampler, DistributedSampler) else None,
        _length(loader), loader.batch_size, bool(loader.drop_last), type(loader.dataset).__name__,
        _length(loader.dataset), int(loader.num_workers), iterable, recorder.user_site(3),
        sampler.__dict__.get("_ddpdoctor_set_epoch", 0) if isinstance(sampler, DistributedSampler) else None,
        _custom_batch_sampler(loader)))


def _custom_batch_sampler(loader: DataLoader) -> str:
    """The class name of a batch_sampler the script passed ("" for torch's own BatchSampler)."""
    batch_sampler = loader.batch_sampler
    if batch_sampler is None or type(batch_sampler) is BatchSampler:
        return ""
    return type(batch_sampler).__name__


def install(steps_per_epoch: int) -> None:
    original_set_epoch = DistributedSampler.set_epoch

    @functools.wraps(original_set_epoch)
    def set_epoch(self: DistributedSampler, epoch: int) -> None:
        # Counted, so that DDP302 tells "never called" from "called with the same value".
        fields = self.__dict__
        fields["_ddpdoctor_set_epoch"] = fields.get("_ddpdoctor_set_epoch", 0) + 1
        return original_set_epoch(self, epoch)

    DistributedSampler.set_epoch = set_epoch
    original_next_index = _BaseDataLoaderIter._next_index

    @functools.wraps(original_next_index)
    def _next_index(self: _BaseDataLoaderIter) -> Any:
        # Indices are drawn in batch order (also when workers prefetch, with in-order delivery),
        # so a FIFO beside the iterator pairs each batch with its indices.
        index = original_next_index(self)
        queue = self.__dict__.get("_ddpdoctor_indices")
        if queue is None:
            queue = self.__dict__["_ddpdoctor_indices"] = collections.deque(maxlen=4096)
        queue.append(index)
        return index

    def __iter__(call: Any, self: DataLoader) -> Any:
        iterator = call(self)
        try:
            fields = self.__dict__
            if "_ddpdoctor_id" not in fields:
                fields["_ddpdoctor_id"] = next(_ids)
            epoch = fields["_ddpdoctor_epochs"] = fields.get("_ddpdoctor_epochs", -1) + 1
            _record_epoch(self, fields["_ddpdoctor_id"], epoch)
            if isinstance(iterator, _BaseDataLoaderIter):
                # A persistent iterator is reset with batches of the last epoch in flight: its
                # index queue cannot be trusted, so its batches go without indices.
                ordered = getattr(self, "in_order", True) is not False
                iterator.__dict__["_ddpdoctor"] = _EpochState(
                    fields["_ddpdoctor_id"], epoch, steps_per_epoch,
                    with_indices=ordered and not self.persistent_workers)
        except Exception as exc:  # noqa: BLE001 - never break the user's data pipeline
            recorder.get().note_once("loader", f"DataLoader instrument failed: {exc!r}")
        return iterator

    def __next__(call: Any, self: _BaseDataLoaderIter) -> Any:
        state: Optional[_EpochState] = self.__dict__.get("_ddpdoctor")
        if state is None:
            return call(self)
        if state.limit and state.index >= state.limit:
            _end_epoch(state, truncated=True)
            raise StopIteration
        waited = time.time()
        try:
            batch = call(self)
        except StopIteration:
            _end_epoch(state, truncated=False)
            raise
        rec = recorder.get()
        # Batches drawn under torch.no_grad() feed evaluation, not training: they count in the
        # fingerprints, not in the training step's data time or throughput.
        training = torch.is_grad_enabled()
        if training:
            rec.add_phase("data", time.time() - waited)
        queue = self.__dict__.get("_ddpdoctor_indices")
        index = queue.popleft() if queue else None
        try:
            samples = fingerprint.sample_fingerprints(batch)
            if samples is not None:
                if training:
                    rec.samples += len(samples)
                indices = _as_indices(index) if state.with_indices else None
                if indices is not None and len(indices) != len(samples):
                    indices = None
                rec.write(tm.Batch(time.time(), state.loader_id, state.epoch, state.index,
                                   rec.step, samples, fingerprint.batch_fingerprint(samples),
                                   indices))
        except Exception as exc:  # noqa: BLE001
            recorder.get().note_once("batch", f"could not fingerprint a batch: {exc!r}")
        state.index += 1
        return batch

    hooks.register("DataLoader.__iter__", "batches", __iter__)
    hooks.register("DataLoader iterator.__next__", "batches", __next__)
    _BaseDataLoaderIter._next_index = _next_index


def _end_epoch(state: _EpochState, truncated: bool) -> None:
    if not state.ended:
        state.ended = True
        recorder.get().write(tm.EpochEnd(time.time(), state.loader_id, state.epoch, state.index,
                                         truncated))
