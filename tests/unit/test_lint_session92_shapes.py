"""Shapes from session 92 (holdout 130's leftovers and holdout 131's reading), each with its twin,
in our own words."""

from __future__ import annotations

from tests.unit.test_lint_session39_shapes import lint_tree
from tests.unit.test_lint_session61_shapes import _codes, _line

# ------------------------------------ a rank's own skip whose other side ends the rank
# `if not math.isfinite(value):` holding `if keep_going and rank == 0: continue / else: sys.exit(1)`:
# the ranks that do not skip exit with an error, so none of them goes on past the outer `if` to
# the collectives after it (no DDP801 there). What splits the ranks is the loss value each rank
# tests: a rank-local decision (DDP809) at the outer test.
SKIP_OR_EXIT = """import math
import sys
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP


def main():
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    model = DDP(torch.nn.Linear(8, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    keep_going = True
    for step in range(10):
        x = torch.randn(4, 8)
        loss = model(x).sum()
        value = loss.item()
        if not math.isfinite(value):
            if keep_going and rank == 0:
                print("skipping")
                continue
            else:
                print("stopping")
                sys.exit(1)
        opt.zero_grad()
        loss.backward()
        opt.step()
        total = torch.tensor([value])
        dist.all_reduce(total)


if __name__ == "__main__":
    main()
"""


def test_a_rank_skip_whose_other_side_exits_splits_nothing_after_it(tmp_path):
    found = lint_tree(tmp_path, {"train.py": SKIP_OR_EXIT})
    assert _codes(found, "DDP801") == []
    assert [f.location.line for f in _codes(found, "DDP809")] == [_line(SKIP_OR_EXIT, "if not math.isfinite")]


def test_a_rank_skip_whose_other_side_goes_on_still_splits_the_ranks(tmp_path):
    # twin: the ranks that do not skip go on to the backward and the all-reduce
    body = SKIP_OR_EXIT.replace("                sys.exit(1)", "                pass")
    found = lint_tree(tmp_path, {"train.py": body})
    assert [f.location.line for f in _codes(found, "DDP809") + _codes(found, "DDP801")] == \
        [_line(body, "if keep_going and rank == 0")]


def test_a_rank_skip_beside_a_raise_in_the_loop_is_no_divergence(tmp_path):
    # rank 0 skips, every other rank raises: the launcher ends the job, nobody waits
    body = SKIP_OR_EXIT.replace("""        if not math.isfinite(value):
            if keep_going and rank == 0:
                print("skipping")
                continue
            else:
                print("stopping")
                sys.exit(1)""", """        if keep_going and rank == 0:
            continue
        else:
            raise RuntimeError("stop")""")
    found = lint_tree(tmp_path, {"train.py": body})
    assert _codes(found, "DDP809") + _codes(found, "DDP801") == []


def test_a_rank_skip_beside_a_clean_exit_in_the_loop_is_still_told(tmp_path):
    # twin: `sys.exit(0)` ends the others cleanly; torchrun waits for rank 0, alone in the loop
    body = SKIP_OR_EXIT.replace("""        if not math.isfinite(value):
            if keep_going and rank == 0:
                print("skipping")
                continue
            else:
                print("stopping")
                sys.exit(1)""", """        if keep_going and rank == 0:
            print("skipping")
        else:
            sys.exit(0)""")
    found = lint_tree(tmp_path, {"train.py": body})
    assert [f.location.line for f in _codes(found, "DDP809") + _codes(found, "DDP801")] == \
        [_line(body, "if keep_going and rank == 0")]
