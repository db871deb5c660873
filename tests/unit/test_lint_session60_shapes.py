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


# `if not experiments and is_main: sys.exit(0)`, then the work in loops over `experiments`: where
# the list is empty those loops run nothing on the ranks that stay either (holdout 75's swallow SED)
EMPTIED = """
import os
import sys
import torch
from accelerate import Accelerator
from torch.utils.data import DataLoader, TensorDataset


def train(accelerator):
    model = torch.nn.Linear(4, 1)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    loader = DataLoader(TensorDataset(torch.randn(64, 4), torch.randn(64, 1)), batch_size=8)
    model, opt, loader = accelerator.prepare(model, opt, loader)
    for x, y in loader:
        loss = (model(x) - y).pow(2).mean()
        accelerator.backward(loss)
        opt.step()
        opt.zero_grad()


if __name__ == "__main__":
    accelerator = Accelerator()
    experiments = [e for e in os.environ.get("RUNS", "a,b").split(",") if e]
    if not experiments and accelerator.is_main_process:
        sys.exit(0)
{AFTER}
"""


def test_twin_an_exit_on_an_empty_list_before_loops_over_it_is_no_finding(tmp_path):
    after = "    for name in experiments:\n        train(accelerator)"
    found = lint_tree(tmp_path, {"train.py": EMPTIED.replace("{AFTER}", after)})
    assert not [f for f in found if f.code == "DDP809"]


def test_an_exit_on_an_empty_list_before_work_outside_its_loops_is_a_finding(tmp_path):
    after = "    train(accelerator)"
    found = lint_tree(tmp_path, {"train.py": EMPTIED.replace("{AFTER}", after)})
    assert len([f for f in found if f.code == "DDP809"]) == 1


# -------------------------------------------------- a rank return inside a `try`
# `try: from utils.ddp_utils import is_main_process; if not is_main_process(): return / except
# ImportError: pass` at the top of a stopper's __call__: the rest of the method (the count, the
# stop flag) runs on rank 0 alone, as after the same `if` outside a `try`
STOPPER = """
class EarlyStopping:
    def __init__(self, patience=3):
        self.patience, self.counter, self.best, self.early_stop = patience, 0, None, False

    def __call__(self, val_loss):
{GUARD}
        if self.best is None or val_loss < self.best:
            self.best, self.counter = val_loss, 0
        else:
            self.counter += 1
            if self.counter >= self.patience:
                self.early_stop = True
"""

IN_TRY = """\
        try:
            from utils.ddp_utils import is_main_process
            if not is_main_process():
                return
        except ImportError:
            pass"""

STOP_LOOP = """
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from utils.stopper import EarlyStopping


def main():
    dist.init_process_group("gloo")
    model = DDP(torch.nn.Linear(4, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    stopper = EarlyStopping()
    for epoch in range(100):
        loss = model(torch.randn(8, 4)).pow(2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        val = torch.tensor(loss.item())
        dist.all_reduce(val)
        stopper(val.item())
        if stopper.early_stop:
            break


main()
"""

DDP_UTILS = """
import torch.distributed as dist


def is_main_process():
    return not dist.is_initialized() or dist.get_rank() == 0
"""


def _stops(tmp_path, guard: str) -> list:
    found = lint_tree(tmp_path, {"train.py": STOP_LOOP, "utils/__init__.py": "", "utils/ddp_utils.py": DDP_UTILS,
                                 "utils/stopper.py": STOPPER.replace("{GUARD}", guard)})
    return [f for f in found if f.code == "DDP809"]


def test_a_rank_return_inside_a_try_keeps_the_stoppers_state_on_rank_0(tmp_path):
    [found] = _stops(tmp_path, IN_TRY)
    assert "`self.early_stop` is set only under" in found.message and "train.py:20" in found.message


def test_twin_a_stopper_every_rank_runs_is_no_finding(tmp_path):
    assert _stops(tmp_path, "        pass") == []



# -------------------------------------------------- a builder's sampler, said by the caller's name
# `def get_loader(ds): return DataLoader(ds, sampler=DistributedSampler(ds))` called as
# `train_loader = get_loader(...)` and iterated epoch after epoch: the fix names
# `train_loader.sampler`, not `get_loader.sampler` (which names no object)
BUILDER = """
import torch
import torch.distributed as dist
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler


def get_loader(ds):
    return DataLoader(ds, batch_size=8, sampler=DistributedSampler(ds))


def main():
    dist.init_process_group("gloo")
    model = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(4, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    train_loader = get_loader(TensorDataset(torch.randn(64, 4), torch.randn(64, 1)))
    for epoch in range(3):
        for x, y in train_loader:
            loss = (model(x) - y).pow(2).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()


main()
"""


def test_a_builders_sampler_is_named_by_the_loader_its_caller_iterates(tmp_path):
    [found] = [f for f in lint_tree(tmp_path, {"train.py": BUILDER}) if f.code == "DDP804"]
    assert "train_loader.sampler.set_epoch(epoch)" in found.hint and "get_loader.sampler" not in found.message


def test_twin_a_sampler_bound_to_a_name_keeps_its_name(tmp_path):
    script = BUILDER.replace("    return DataLoader(ds, batch_size=8, sampler=DistributedSampler(ds))",
                             "    sampler = DistributedSampler(ds)\n    return DataLoader(ds, batch_size=8, sampler=sampler)")
    [found] = [f for f in lint_tree(tmp_path, {"train.py": script}) if f.code == "DDP804"]
    assert found.message.startswith("sampler (DistributedSampler")
