"""An all-reduce's time over its ranks: from the last rank's launch to the last completion.

An all-reduce can run only once every rank has joined it, so its time counts from the last rank's
launch to the last rank's completion (wall clocks are comparable across ranks; a rank that
launched early waits for the others, which is a straggler's cost, not the network's). Within one
backward a bucket's time starts no earlier than the end of the bucket that finished before it (a
group's all-reduces share its connections); the iteration's busy time is the union of its
buckets' intervals.
"""

from __future__ import annotations


def joined(starts: list[float], ends: list[float], durations: list[float]) -> tuple[float, float]:
    """(start, end) of one all-reduce over its ranks: from the last launch to the last completion,
    never shorter than the shortest rank's own interval (a guard against clock skew across nodes)."""
    start, end = max(starts), max(ends)
    return min(start, end - min(durations)), end


def service_times(spans: dict[int, tuple[float, float]]) -> tuple[dict[int, float], float]:
    """Per bucket index: its all-reduce time within one iteration; and the iteration's busy time."""
    service: dict[int, float] = {}
    previous_end = float("-inf")
    for index, (start, end) in sorted(spans.items(), key=lambda kv: kv[1][1]):
        service[index] = max(0.0, end - max(start, previous_end))
        previous_end = end
    busy = 0.0
    span_start = span_end = None
    for start, end in sorted(spans.values()):
        if span_end is None or start > span_end:
            if span_end is not None:
                busy += span_end - span_start
            span_start, span_end = start, end
        else:
            span_end = max(span_end, end)
    if span_end is not None:
        busy += span_end - span_start
    return service, busy
