"""Ranks kept in a module's private globals (`__rank`, `_local_rank`, set by an initialise()
function through `global`), read by helpers of that module: VAR (FoundationVision/VAR 78b95394,
dist.py) saves under `dist.is_local_master()`, which returns `__local_rank == 0`."""

from __future__ import annotations

import textwrap
from pathlib import Path

from ddpdoctor.lint.driver import gather, lint_results

DIST_UTILS = """
import torch.distributed as tdist

__rank, __local_rank, __world_size = 0, 0, 1


def initialize(local_rank):
    global __rank, __local_rank, __world_size
    tdist.init_process_group("gloo")
    __local_rank = local_rank
    __rank, __world_size = tdist.get_rank(), tdist.get_world_size()


def is_master():
    return __rank == 0


def is_local_master():
    return __local_rank == 0
"""


def findings(tmp_path: Path, train: str) -> list:
    (tmp_path / "dist_utils.py").write_text(textwrap.dedent(DIST_UTILS))
    (tmp_path / "train.py").write_text(textwrap.dedent(train))
    return [f for r in lint_results(gather(str(tmp_path / "train.py")), set()) for f in r.findings]


def test_a_save_under_the_local_master_test_is_named_one_writer_per_node(tmp_path):
    [found] = findings(tmp_path, """
        import os
        import torch
        import dist_utils

        dist_utils.initialize(int(os.environ["LOCAL_RANK"]))
        model = torch.nn.Linear(4, 4)
        if dist_utils.is_local_master():
            torch.save(model.state_dict(), "ckpt-last.pth")
        NNODES = int(os.environ.get("NNODES", 1))  # a job on several nodes
        """)
    assert (found.code, found.severity.value, found.location.line) == ("DDP806", "warning", 9)
    assert "runs on one rank per node" in found.message, found.message


def test_a_barrier_under_the_private_rank_test_is_one_sided(tmp_path):
    [found] = findings(tmp_path, """
        import os
        import torch
        import torch.distributed as tdist
        import dist_utils

        dist_utils.initialize(int(os.environ["LOCAL_RANK"]))
        if dist_utils.is_master():
            torch.save(torch.nn.Linear(4, 4).state_dict(), "ckpt.pth")
            tdist.barrier()
        """)
    assert (found.code, found.severity.value, found.location.line) == ("DDP801", "error", 10)
    assert "`dist_utils.is_master()`" in found.message
