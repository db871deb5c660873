"""What the launcher tells each rank, through environment variables (set by launcher.py)."""

from __future__ import annotations

import os
from dataclasses import dataclass

ENV_RUN_DIR = "DDPDOCTOR_RUN_DIR"
ENV_RUN_ID = "DDPDOCTOR_RUN_ID"
ENV_MAX_STEPS = "DDPDOCTOR_MAX_STEPS"
ENV_STEPS_PER_EPOCH = "DDPDOCTOR_STEPS_PER_EPOCH"
ENV_PG_TIMEOUT = "DDPDOCTOR_PG_TIMEOUT"
ENV_CHECKED_BUCKET_ITERATIONS = "DDPDOCTOR_CHECKED_BUCKET_ITERATIONS"
ENV_LAUNCHER = "DDPDOCTOR_LAUNCHER"
ENV_CPU = "DDPDOCTOR_CPU"  # "1": probe --cpu, run a CUDA/NCCL script on the CPU (cpu_shim.py)


@dataclass(frozen=True)
class RankConfig:
    run_dir: str
    run_id: str
    max_steps: int  # 0: no limit
    steps_per_epoch: int  # 0: no limit
    pg_timeout_s: float
    # DDP bucket all-reduces go through the DETAIL-checked group for this many backward
    # iterations, then through an unchecked twin so that timing is not distorted (see ddp.py).
    checked_bucket_iterations: int
    launcher: str
    cpu: bool = False

    @classmethod
    def from_env(cls) -> "RankConfig":
        env = os.environ
        return cls(
            run_dir=env[ENV_RUN_DIR],
            run_id=env.get(ENV_RUN_ID, ""),
            max_steps=int(env.get(ENV_MAX_STEPS, "20")),
            steps_per_epoch=int(env.get(ENV_STEPS_PER_EPOCH, "5")),
            pg_timeout_s=float(env.get(ENV_PG_TIMEOUT, "60")),
            checked_bucket_iterations=int(env.get(ENV_CHECKED_BUCKET_ITERATIONS, "3")),
            launcher=env.get(ENV_LAUNCHER, "torchrun"),
            cpu=env.get(ENV_CPU) == "1",
        )
