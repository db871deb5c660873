"""What each DistributedSampler shards (DDP304): its dataset, and the dataset at the bottom of
a Subset chain, so that a sampler over a share of the data already split by rank (each rank
then reads 1/world² of it) can be told from one over the whole dataset. Once per sampler."""

from __future__ import annotations

import functools
import hashlib
import time
from typing import Any, Optional

from torch.utils.data import DistributedSampler, Subset

from ddpdoctor.probe.records import telemetry as tm
from ddpdoctor.probe.inrank import recorder


def _length(obj: Any) -> Optional[int]:
    try:
        return len(obj)
    except Exception:  # noqa: BLE001 - a dataset without a length, or one that raises
        return None


def _indices_fingerprint(subset: Subset) -> Optional[str]:
    try:
        head = [int(i) for i in list(subset.indices[:256])]
    except Exception:  # noqa: BLE001
        return None
    return hashlib.blake2b(repr((len(subset.indices), head)).encode(), digest_size=8).hexdigest()


def _record(sampler: DistributedSampler) -> None:
    dataset = sampler.dataset
    root, subset, depth = dataset, None, 0
    while isinstance(root, Subset) and depth < 8:
        if subset is None:
            subset = _indices_fingerprint(root)
        root, depth = root.dataset, depth + 1
    rec = recorder.get()
    rec.write(tm.SamplerShard(time.time(), int(sampler.num_replicas), int(sampler.rank),
                              type(dataset).__name__, _length(dataset), type(root).__name__,
                              _length(root), subset, recorder.user_site(3), rec.step))


def install() -> None:
    original_init = DistributedSampler.__init__

    @functools.wraps(original_init)
    def __init__(self: DistributedSampler, *args: Any, **kwargs: Any) -> None:
        original_init(self, *args, **kwargs)
        try:
            _record(self)
        except Exception as exc:  # noqa: BLE001 - never break the user's data pipeline
            recorder.get().note_once("sampler", f"DistributedSampler instrument failed: {exc!r}")

    DistributedSampler.__init__ = __init__
