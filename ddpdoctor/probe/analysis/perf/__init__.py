"""The performance numbers of a probe run, derived once for the DDP6xx checks and the report.

A check and the table beside its finding quote the same numbers because both come from here.
One module per job: `steps` (each rank's judged steps and their phases, step noise), `clock`
(which clock timed them), `spans` (an all-reduce's time over its ranks), `cost_fit` (latency +
bytes / bandwidth of one all-reduce), `buckets` (per-bucket times and bandwidth), `what_if` (what
a fix would buy, and what --verify-fix measured), `stats` and `units`. This package's names are
theirs, for the modules that read several (`perf.step_perf`, `perf.model_comm`).
"""

from ddpdoctor.probe.analysis.perf.buckets import GB, BucketPerf, ModelComm, bucket_comms, bus_factor, model_comm
from ddpdoctor.probe.analysis.perf.clock import CPU_CLOCK, CUDA_CLOCK, NO_CLOCK, DeviceTime, comm_unjudged, device_time
from ddpdoctor.probe.analysis.perf.cost_fit import (FALLBACK_KNEE_BYTES, LATENCY_MAX_BYTES, MIN_BANDWIDTH_BYTES,
                                                   CallCost, call_cost)
from ddpdoctor.probe.analysis.perf.spans import joined, service_times
from ddpdoctor.probe.analysis.perf.stats import median, quantile, spread
from ddpdoctor.probe.analysis.perf.steps import (BASELINE_STEP, COMPUTE_PHASES, DEVICE_PHASES, MIN_STEPS, PHASE_WORDS,
                                                PHASES, WARMUP_STEPS, RankPerf, StepSample, comm_shares_cores,
                                                exposed_spread, pure_exposed, rank_steps, rounds_per_step,
                                                step_noise, step_perf, step_spread, step_time, throughput)
from ddpdoctor.probe.analysis.perf.units import estimate, megabytes, ms
from ddpdoctor.probe.analysis.perf.what_if import WhatIf, matters, what_if

__all__ = [
    "GB", "BucketPerf", "ModelComm", "bucket_comms", "bus_factor", "model_comm",
    "CPU_CLOCK", "CUDA_CLOCK", "NO_CLOCK", "DeviceTime", "comm_unjudged", "device_time",
    "FALLBACK_KNEE_BYTES", "LATENCY_MAX_BYTES", "MIN_BANDWIDTH_BYTES", "CallCost", "call_cost",
    "joined", "service_times", "median", "quantile", "spread",
    "BASELINE_STEP", "COMPUTE_PHASES", "DEVICE_PHASES", "MIN_STEPS", "PHASE_WORDS", "PHASES", "WARMUP_STEPS",
    "RankPerf", "StepSample", "comm_shares_cores", "exposed_spread", "pure_exposed", "rank_steps",
    "rounds_per_step", "step_noise", "step_perf", "step_spread", "step_time", "throughput",
    "estimate", "megabytes", "ms", "WhatIf", "matters", "what_if",
]
