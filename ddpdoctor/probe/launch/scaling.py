"""`probe --scaling 1,2,4`: the same script at several world sizes, one probe after another.

Each world size is a probe of its own, in RUN_DIR/scaling/ws-<N> (a complete run dir: `ddpdoctor
report` opens it), except the size the main probe already ran, which is reused. RUN_DIR/scaling.json
lists them; analysis/scaling.py turns them into points and efficiencies.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ddpdoctor.core.errors import ToolFailure, UsageError
from ddpdoctor.core.files import write_atomic
from ddpdoctor.probe.records.rundir import SCALING_FILE, scaling_run_name

if TYPE_CHECKING:
    from ddpdoctor.probe.launch.spec import JobSpec

MAX_SIZE = 256


def parse_sizes(text: str) -> list[int]:
    """"1,2,4" -> [1, 2, 4]; bad input is one UsageError line."""
    sizes = []
    for part in str(text).replace(" ", "").split(","):
        if not part:
            continue
        if not part.isdigit() or not 1 <= int(part) <= MAX_SIZE:
            raise UsageError(f"--scaling takes world sizes like 1,2,4 (each 1..{MAX_SIZE}); got {text!r}")
        sizes.append(int(part))
    if len(set(sizes)) < 2:
        raise UsageError(f"--scaling needs at least two different world sizes, like 1,2,4 (got {text!r})")
    return sorted(set(sizes))


def run_sizes(options: "JobSpec", run_dir: Path, probe_one: Any) -> None:
    """Probe the script at each size in options.scaling, one after another, under run_dir.

    `probe_one(options)` runs one probe (driver.probe, without --scaling) and returns its Report.
    An interrupted probe ends the series; its point shows as "interrupted" in the table."""
    runs: dict[str, str] = {}
    for size in options.scaling:
        if size == options.world_size:
            runs[str(size)] = "."
        else:
            rel = scaling_run_name(size)
            sub = dataclasses.replace(options, nproc_per_node=size, run_dir=str(run_dir / rel),
                                      scaling=[])
            try:
                report = probe_one(sub)
            except ToolFailure:
                continue  # that size could not be launched: its row stays out of the table
            runs[str(size)] = rel
        write_atomic(run_dir / SCALING_FILE, json.dumps({"sizes": options.scaling, "runs": runs},
                                                        indent=2) + "\n", mode=0o600)
        if size != options.world_size and report.interrupted_by:
            break
