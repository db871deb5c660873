"""The collective instrument records each collective's reduce op and, for small collectives, its
values after completion (sync at CollectiveDone, async at the next collective), in a fresh
one-rank gloo process."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from ddpdoctor.probe.records import telemetry as tm

SCRIPT = """
import sys, torch, torch.distributed as dist
from ddpdoctor.probe.inrank import collectives, recorder
rec = recorder.Recorder(sys.argv[1]); recorder.set_recorder(rec)
collectives.install()
dist.init_process_group("gloo", store=dist.HashStore(), rank=0, world_size=1)
n = torch.tensor([5]); dist.all_reduce(n, op=dist.ReduceOp.MAX)
dist.all_reduce(torch.ones(3))                                   # SUM by default
dist.all_reduce(torch.ones(100))                                 # too large to read
work = dist.all_reduce(torch.tensor([7, 8]), async_op=True); work.wait()
out = [torch.zeros(1, dtype=torch.long)]; dist.all_gather(out, torch.tensor([4]))
objects = [None]; dist.all_gather_object(objects, 12)
dist.barrier()                                                   # flushes the async result
dist.destroy_process_group()
"""

pytestmark = pytest.mark.multiprocess


def test_reduce_op_and_small_results_are_recorded(tmp_path):
    path = tmp_path / "rank-0.jsonl"
    done = subprocess.run([sys.executable, "-c", SCRIPT, str(path)], capture_output=True, text=True,
                          timeout=120, env={**os.environ, "OMP_NUM_THREADS": "1"})
    assert done.returncode == 0, done.stderr
    records = tm.read_records(path)
    calls = [r for r in records if isinstance(r, tm.Collective)]
    assert [(c.op, c.reduce_op) for c in calls[:4]] == [
        ("all_reduce", "MAX"), ("all_reduce", "SUM"), ("all_reduce", "SUM"), ("all_reduce", "SUM")]
    results = {(d.group, d.seq): d.result for d in records
               if isinstance(d, (tm.CollectiveDone, tm.CollectiveResult)) and d.result is not None}
    by_op = [results.get((c.group, c.seq)) for c in calls]
    assert by_op[:3] == [[[5]], [[1.0, 1.0, 1.0]], None]
    assert by_op[3] == [[7, 8]]  # async: read once its work completed, at the next collective
    assert by_op[4] == [[4], [4]] and by_op[5] == [[12]]
    assert any(isinstance(r, tm.CollectiveResult) for r in records)
