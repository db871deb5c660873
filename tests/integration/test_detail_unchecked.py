"""groups.unchecked_backend against torch's own DETAIL wrapper, on two real gloo ranks: the
backend behind the check is the plain one, its all-reduce sums, and without DETAIL (or on a twin
made unwrapped) there is nothing to go around."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from tests.helpers.ports import free_port

pytestmark = pytest.mark.multiprocess

RANK = r"""
import os, sys
import torch, torch.distributed as dist
from ddpdoctor.probe.inrank import groups
dist.init_process_group("gloo")
backend = groups.unchecked_backend(None, torch.device("cpu"))
wrapped = type(dist.distributed_c10d._get_default_group()._get_backend(torch.device("cpu"))).__name__
if os.environ["TORCH_DISTRIBUTED_DEBUG"] == "DETAIL":
    assert wrapped == "_ProcessGroupWrapper", wrapped
    assert backend is not None and type(backend).__name__ == "ProcessGroupGloo", backend
    options = dist.AllreduceOptions()
    options.reduceOp = dist.ReduceOp.SUM
    t = torch.full((4,), float(dist.get_rank() + 1))
    backend.allreduce([t], options).get_future().wait()
    assert t.tolist() == [3.0] * 4, t
    twin = dist.new_group(backend="gloo")  # made under DETAIL: wrapped too
    assert groups.unchecked_backend(twin, torch.device("cpu")) is not None
else:
    assert wrapped == "ProcessGroupGloo" and backend is None, (wrapped, backend)
dist.barrier()
dist.destroy_process_group()
print("ok", dist.get_rank() if dist.is_initialized() else "")
"""


@pytest.mark.parametrize("level", ["DETAIL", "INFO"])
def test_the_backend_behind_the_detail_check_is_plain_and_sums(tmp_path, level):
    script = tmp_path / "rank.py"
    script.write_text(RANK)
    port = free_port()
    procs = []
    for rank in (0, 1):
        env = dict(os.environ, RANK=str(rank), WORLD_SIZE="2", MASTER_ADDR="127.0.0.1",
                   MASTER_PORT=str(port), TORCH_DISTRIBUTED_DEBUG=level, LOCAL_RANK=str(rank))
        procs.append(subprocess.Popen([sys.executable, str(script)], env=env,
                                      stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True))
    outs = []
    for proc in procs:
        try:
            out, _ = proc.communicate(timeout=120)
        finally:
            proc.kill()
        outs.append(out)
    assert all(p.returncode == 0 for p in procs), "\n".join(outs)
