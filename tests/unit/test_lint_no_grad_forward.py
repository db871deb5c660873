"""DDP801 on a one-rank forward of a DDP model whose module holds buffers: an error with
gradients on (every such forward broadcasts the buffers), a warning with them off, whether the
no_grad is around the forward itself or around the call that leads to it."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from ddpdoctor.lint.driver import gather, lint_results

HEAD = """
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

dist.init_process_group("gloo")
model = DDP(torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.BatchNorm1d(4)))


def evaluate(batch):
    return model(batch).mean()

"""


def ddp801(tmp_path: Path, tail: str) -> list:
    (tmp_path / "train.py").write_text(textwrap.dedent(HEAD) + textwrap.dedent(tail))
    return [f for r in lint_results(gather(str(tmp_path / "train.py")), set()) for f in r.findings
            if f.code == "DDP801"]


@pytest.mark.parametrize("tail", [
    """
    if dist.get_rank() == 0:
        with torch.no_grad():
            print(evaluate(torch.randn(8, 4)))
    """,
    """
    @torch.inference_mode()
    def validate():
        return evaluate(torch.randn(8, 4))


    if dist.get_rank() == 0:
        print(validate())
    """,
])
def test_gradients_off_in_a_caller_make_the_one_rank_forward_a_warning(tmp_path, tail):
    [found] = ddp801(tmp_path, tail)
    assert found.severity.value == "warning" and found.location.line == 11
    assert "under torch." in found.message and "pairs with the other ranks' next training forward" in found.message


def test_with_gradients_on_it_stays_an_error(tmp_path):
    [found] = ddp801(tmp_path, """
    if dist.get_rank() == 0:
        print(evaluate(torch.randn(8, 4)))
    """)
    assert found.severity.value == "error" and "in every forward" in found.message
