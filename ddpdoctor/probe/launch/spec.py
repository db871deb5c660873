"""What the launcher side reads of a probe's options: the job to start, how long it may run, how
it is shown. probe/options.py's ProbeOptions has every one of these, so the probe hands it over
as it is; launch/ names this spec instead, and never imports options.py (which reads the
--baseline report through the run model and asks launch/choice.py for a module's file: options
sit above launch/, not beside it)."""

from __future__ import annotations

from typing import Optional, Protocol


class JobSpec(Protocol):
    # The script and its launcher
    script: str
    args: list[str]
    module: bool  # `script` is a module name (python -m)
    nproc_per_node: int
    nnodes: int
    node_rank: int
    rdzv_endpoint: Optional[str]
    master_addr: Optional[str]
    master_port: Optional[int]
    # What the ranks are told (inrank/config.py)
    max_steps: int
    steps_per_epoch: int
    checked_bucket_iterations: int
    cpu: bool
    # Supervision and output
    stall_timeout_s: Optional[float]
    timeout_s: float
    log_limit_mb: float
    live: str
    quiet_script: bool
    scaling: list[int]  # world sizes to probe in turn (scaling.py)

    @property
    def world_size(self) -> int: ...
