"""Shapes from session 60 (holdout 75), each with its twin, in our own words."""

from __future__ import annotations

from tests.unit.test_lint_session39_shapes import lint_tree

# -------------------------------------------------- a launcher's variables filled in for a plain run
# `if "RANK" not in os.environ: os.environ["WORLD_SIZE"] = "1"` before an env:// set-up is the
# fallback of a run no launcher started; under torchrun the launcher's WORLD_SIZE stands, so the
# group is the job's, not a group of one (which had switched every data and checkpoint rule off)
FALLBACK = """
import os
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler


def setup():
{WRITE}
    dist.init_process_group("gloo")
    return int(os.environ["RANK"])


def main():
    setup()
    data = TensorDataset(torch.randn(64, 4), torch.randn(64, 1))
    sampler = DistributedSampler(data)
    loader = DataLoader(data, batch_size=8, sampler=sampler)
    model = DDP(torch.nn.Linear(4, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for epoch in range(2):
        sampler.set_epoch(epoch)
        for x, y in loader:
            loss = (model(x) - y).pow(2).mean()
            if not torch.isfinite(loss):
                continue
            opt.zero_grad()
            loss.backward()
            opt.step()


main()
"""

FALLBACK_WRITE = """\
    if "RANK" not in os.environ:
        os.environ["RANK"] = "0"
        os.environ["WORLD_SIZE"] = "1"
        os.environ["MASTER_ADDR"] = "localhost"
        os.environ["MASTER_PORT"] = "29500\""""

ALWAYS_WRITE = """\
    os.environ["WORLD_SIZE"] = "1"
    os.environ["RANK"] = "0\""""


def test_a_world_size_written_only_when_no_launcher_set_one_leaves_the_job_distributed(tmp_path):
    found = lint_tree(tmp_path, {"train.py": FALLBACK.replace("{WRITE}", FALLBACK_WRITE)})
    skips = [f for f in found if f.code == "DDP809"]
    assert len(skips) == 1 and "torch.isfinite(loss)" in skips[0].message


def test_twin_a_world_size_of_one_written_on_every_run_is_a_group_of_one(tmp_path):
    found = lint_tree(tmp_path, {"train.py": FALLBACK.replace("{WRITE}", ALWAYS_WRITE)})
    assert not [f for f in found if f.code == "DDP809"]


# -------------------------------------------------- a rank ends the program outside any loop
# `if accelerator.is_local_main_process and os.path.exists(out): exit(0)` in the script's main
# block, then the training every rank runs: the local main process is gone, the other ranks wait
# in the first gradient all-reduce (a rank exiting 0 ends nothing else under torchrun)
EXITS = """
import os
import torch
from accelerate import Accelerator
from torch.utils.data import DataLoader, TensorDataset


def train(model, opt, loader, accelerator):
    for x, y in loader:
        loss = (model(x) - y).pow(2).mean()
        accelerator.backward(loss)
        opt.step()
        opt.zero_grad()


if __name__ == "__main__":
    out = os.environ.get("OUT", "runs/one")
    accelerator = Accelerator()
    if {TEST}:
        print("already trained")
        exit(0)
    model = torch.nn.Linear(4, 1)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    loader = DataLoader(TensorDataset(torch.randn(64, 4), torch.randn(64, 1)), batch_size=8)
    model, opt, loader = accelerator.prepare(model, opt, loader)
    train(model, opt, loader, accelerator)
{TAIL}
"""


def _exits(tmp_path, test: str, tail: str = "") -> list:
    found = lint_tree(tmp_path, {"train.py": EXITS.replace("{TEST}", test).replace("{TAIL}", tail)})
    return [f for f in found if f.code == "DDP809"]


def test_a_rank_that_ends_the_program_before_the_shared_training_is_a_finding(tmp_path):
    found = _exits(tmp_path, "accelerator.is_local_main_process and os.path.exists(out)")
    assert len(found) == 1 and found[0].severity.name == "WARNING"
    assert "leaves the program (exit)" in found[0].message and "go on and wait in accelerator.backward()" in found[0].message
    assert "os.path.exists(out)" in found[0].message and "exit on every rank" in found[0].hint


def test_a_plain_rank_test_that_ends_the_program_is_an_error(tmp_path):
    found = _exits(tmp_path, "not accelerator.is_main_process")
    assert len(found) == 1 and found[0].severity.name == "ERROR"


def test_twin_every_rank_ending_the_program_alike_is_no_finding(tmp_path):
    assert _exits(tmp_path, "os.path.exists(out)") == []


def test_twin_a_rank_leaving_after_the_shared_work_is_no_finding(tmp_path):
    tail = "    if accelerator.is_main_process:\n        exit(0)\n    print('done')"
    assert _exits(tmp_path, "False", tail) == []
