"""Rank-local skips: a rank whose DDP training forward had no backward (ForwardNoBackward) where
another rank's same forward had one (a Grads record of the same iteration). That rank skipped
DDP's gradient all-reduce for the forward: from there each of its all-reduces pairs with the
wrong one of its peers', so where the job finally stops (a hang, a size error at the epoch's
last collective) is a consequence, and the skip is the cause (DDP502).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from ddpdoctor.probe.records import telemetry as tm
from ddpdoctor.probe.run_model.loaded_run import RunModel


@dataclass(frozen=True)
class SkippedBackward:
    rank: int
    forward: tm.ForwardNoBackward  # its first training forward without a backward
    others: tuple[int, ...]  # ranks whose same forward had a backward
    backward_site: Optional[tm.Site]  # where this rank's backwards are called (its other steps)


def skipped_backwards(run: RunModel) -> list[SkippedBackward]:
    """The first skipped backward of every rank that skipped one its peers did not."""
    return run.derived_once("skipped_backwards", run.records_key(), lambda: _skipped(run))


def _skipped(run: RunModel) -> list[SkippedBackward]:
    with_backward: dict[tuple[int, int], set[int]] = {}
    for rank, rank_run in run.ranks.items():
        for grads in rank_run.of(tm.Grads):
            with_backward.setdefault((grads.ddp_id, grads.iteration), set()).add(rank)
    found = []
    for rank, rank_run in sorted(run.ranks.items()):
        for forward in rank_run.of(tm.ForwardNoBackward):
            others = with_backward.get((forward.ddp_id, forward.iteration), set()) - {rank}
            if others:
                bucket = next((c for c in rank_run.of(tm.Collective)
                               if c.op == "ddp_bucket_allreduce" and c.site is not None), None)
                found.append(SkippedBackward(rank, forward, tuple(sorted(others)),
                                             bucket.site if bucket is not None else None))
                break
    return found


def skip_explains(run: RunModel, ranks: set[int], t: Optional[float]) -> Optional[SkippedBackward]:
    """The skip that a divergence or stall among `ranks` (first seen at time t) follows from."""
    for skip in skipped_backwards(run):
        if skip.rank in ranks and (t is None or t >= skip.forward.t):
            return skip
    return None
