"""DDP604: gradient communication that backward does not hide takes a large share of the step."""

from __future__ import annotations

from ddpdoctor.core.findings import Problem, Severity
from ddpdoctor.probe.analysis import perf
from ddpdoctor.probe.analysis.perf import megabytes, ms
from ddpdoctor.probe.analysis.runmodel import RunModel
from ddpdoctor.core.registry import Skipped, check

from ddpdoctor.probe.analysis.wording import counted
from .bucket_sizes import many_tiny_buckets

MIN_SHARE = 0.20  # exposed communication per step, as a share of the median step
MIN_EXPOSED_S = 0.020  # ... and at least this long per step


@check("DDP604", "Communication not hidden behind backward", Severity.WARNING)
def exposed_comm(run: RunModel) -> list[Problem] | Skipped:
    """
    What it detects:
        Gradient all-reduces still running after the last gradient of the backward pass was
        computed, for at least 20% of the median step and at least 20 ms per step (medians over
        the steps after the first 3). It is measured on the rank that arrives last at each step,
        so time the other ranks spend waiting for a straggler (DDP601) does not count here.

    Why it hurts:
        DDP hides communication by all-reducing each bucket while backward is still computing
        the gradients of earlier layers. What is left after the last gradient is pure waiting:
        no rank computes anything until it completes. When it is a large share of the step, the
        job is communication bound: more or faster GPUs will not make it faster, and adding
        ranks makes it slower per sample.

    How to fix:
        Send fewer bytes per unit of compute, or start sending earlier:

            # more compute per all-reduce: a larger batch per rank, or accumulate gradients
            with model.no_sync():                  # k-1 micro-batches without all-reduce
                loss(model(x1)).backward()
            loss(model(xk)).backward()             # the k-th all-reduces the sum

            # fewer bytes: compress gradients to bf16 on the wire
            from torch.distributed.algorithms.ddp_comm_hooks import default_hooks
            model.register_comm_hook(None, default_hooks.bf16_compress_hook)

        Sparse gradients for large embedding tables (`nn.Embedding(..., sparse=True)`) send only
        the rows a batch touched. If a single bucket holds most of the gradient (DDP603), a
        smaller bucket_cap_mb lets the first buckets start during backward.
    """
    perfs = perf.step_perf(run)
    if not perfs:
        return Skipped(f"no rank recorded {perf.MIN_STEPS} steps after the first {perf.WARMUP_STEPS}")
    if run.world_size < 2:
        return Skipped("a single rank communicates with nobody")
    exposed, step_time, steps = perf.pure_exposed(perfs)
    if steps < perf.MIN_STEPS or step_time <= 0:
        return Skipped("too few steps recorded by every rank")
    share = exposed / step_time
    if share < MIN_SHARE or exposed < MIN_EXPOSED_S:
        return []
    comms = perf.model_comm(run)
    traffic = ""
    if comms:
        total = sum(c.bytes_per_iteration for c in comms)
        buckets = sum(round(c.buckets_per_iteration) for c in comms)
        busy = sum(c.busy_s for c in comms)
        busbw = total / busy / perf.GB * perf.bus_factor(run.world_size) if busy > 0 else 0.0
        traffic = (f"; each step all-reduces {megabytes(total)} of gradients in "
                   f"{counted(buckets, 'bucket')}, {ms(busy)} at {busbw:.2f} GB/s bus bandwidth")
    hint = ("do more compute per all-reduce (a larger batch per rank, or accumulate gradients "
            "under model.no_sync()) or send fewer bytes (bf16_compress_hook, sparse embedding "
            "gradients)")
    if any(many_tiny_buckets(c, step_time) for c in comms):
        hint = ("first merge the many tiny buckets (DDP603: a larger bucket_cap_mb); then, if "
                "communication still shows, " + hint)
    return [Problem(
        message=(f"{ms(exposed)} of every {ms(step_time)} step ({share:.0%}) is gradient "
                 f"communication still running after backward finished, even on the rank that "
                 f"arrives last (median of {steps} steps){traffic}: the job is communication "
                 "bound"),
        hint=hint,
        ranks=sorted(perfs),
        evidence={"exposed_ms": round(exposed * 1e3, 2), "step_ms": round(step_time * 1e3, 2),
                  "share": round(share, 3), "steps": steps},
    )]
