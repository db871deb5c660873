"""Where a bug makes a job fail, plainly and under the probe, to prove the probe does not change
it (issue 34: the same collective, at the same step, on every rank).

A zoo script prints `ZOO-FAILED rank=R line=L step=S` when an exception leaves it (a collective
that timed out, a peer's reset) and, run plainly (ZOO_PLAIN=1), enables faulthandler so a rank
that aborts in native code (gloo's size check) still names its line. Under the probe, the
rank's last collective that never returned says the same.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Optional

from ddpdoctor.probe.records import telemetry as tm
from ddpdoctor.probe.run_model.loaded_run import RunModel

_REPORTED = re.compile(r"ZOO-FAILED rank=(\d+) line=(\d+|None) step=(\d+)")


def plain_failure(script: str, tmp: Path, cwd: Path, timeout_s: float = 20.0) -> dict[int, tuple]:
    """rank -> (line, step or None) where each rank failed in a plain torchrun of `script`."""
    logs = tmp / "plain-logs"
    env = dict(os.environ, ZOO_PLAIN="1", ZOO_PG_TIMEOUT=str(timeout_s), OMP_NUM_THREADS="1")
    env.pop("TORCH_DISTRIBUTED_DEBUG", None)
    subprocess.run([sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", "2",
                    "--redirects", "3", "--log-dir", str(logs), script],
                   cwd=cwd, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL, timeout=300)
    found: dict[int, tuple] = {}
    for rank in (0, 1):
        texts = [p.read_text(errors="replace") for p in sorted(logs.glob(f"**/attempt_0/{rank}/std*.log"))]
        found[rank] = _where(script, "\n".join(texts))
    return found


def _where(script: str, text: str) -> tuple:
    reported = _REPORTED.search(text)
    if reported and reported.group(2) != "None":
        return int(reported.group(2)), int(reported.group(3))
    # faulthandler: the innermost frame of the script in the thread that ran it (gloo aborts on
    # its own thread, so the script's may not be the "Current thread"), from the last dump.
    name = re.escape(os.path.basename(script))
    for block in reversed(re.split(r"\n(?=(?:Current thread|Thread) 0x)", text)):
        frame = re.search(rf'File "[^"]*{name}", line (\d+)', block)
        if frame:
            return int(frame.group(1)), None
    return None, None


def probed_failure(run_dir: Path) -> dict[int, tuple]:
    """rank -> (line, step) of the collective each rank entered last and never left."""
    model = RunModel.load(run_dir)
    found: dict[int, tuple] = {}
    for rank, rank_run in model.ranks.items():
        done = {(d.group, d.seq) for d in rank_run.of(tm.CollectiveDone)}
        pending: Optional[tm.Collective] = None
        for record in rank_run.of(tm.Collective):
            if (record.group, record.seq) not in done:
                pending = record
        found[rank] = ((pending.site.line if pending.site else None), pending.step) if pending else (None, None)
    return found
