"""Shapes from session 20's corpus misses and blind round 25, each with its healthy twin,
written in our own words."""

from __future__ import annotations

from ddpdoctor.lint.driver import gather
from tests.unit.test_lint_round17_shapes import lint_plain


def lines_of(found, code: str) -> list:
    return sorted(f.location.line for f in found if f.code == code)


# ------------------------------------------------ early stop on each rank's own validation loss
EARLY_STOP = """
import torch, torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, DistributedSampler

def fit(model, train_loader, val_loader, epochs):
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    best, stale, better = 1e9, 0, False
    for epoch in range(epochs):
        train_loader.sampler.set_epoch(epoch)
        for x, y in train_loader:
            opt.zero_grad()
            ((model(x) - y) ** 2).mean().backward()
            opt.step()
        seen = 0.0
        with torch.no_grad():
            for x, y in val_loader:
                seen += ((model(x) - y) ** 2).mean().item() * x.size(0)
        {reduce}
        if seen < best:
            best = seen
            better = True
        if not better:
            stale += 1
        if stale >= 5:
            break
        better = False

def main():
    dist.init_process_group("gloo")
    data = [(torch.randn(4), torch.randn(1)) for _ in range(64)]
    fit(DDP(torch.nn.Linear(4, 1)), DataLoader(data, sampler=DistributedSampler(data)),
        DataLoader(data, sampler=DistributedSampler(data, shuffle=False)), 10)

if __name__ == "__main__":
    main()
"""


def test_a_flag_set_under_each_ranks_own_validation_loss_decides_the_early_stop(tmp_path):
    # The batch's size (`x.size(0)`, x handed to the DDP forward) does not make the sum shared.
    found = lint_plain(tmp_path, EARLY_STOP.replace("{reduce}", "pass"))
    assert lines_of(found, "DDP809") == [24]


def test_its_twin_the_loss_all_reduced_back_into_the_same_name_decides_alike_everywhere(tmp_path):
    reduce = "total = torch.tensor([seen]); dist.all_reduce(total); seen = total.item()"
    assert lines_of(lint_plain(tmp_path, EARLY_STOP.replace("{reduce}", reduce)), "DDP809") == []


# ----------------------------------------------- a check helper's verdict, a constant on failure
CHECKED = """
import torch, torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

def sane(loss, value):
    if value != value or value in (float("inf"), float("-inf")):
        return False, "not finite"
    return True, ""

def main():
    dist.init_process_group("gloo")
    model = DDP(torch.nn.Linear(4, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for step in range(10):
        loss = model(torch.randn(8, 4)).mean()
        value = loss.item()
        ok, why = sane(loss, {handed})
        if ok:
            opt.zero_grad()
            loss.backward()
            opt.step()
        else:
            value = 0
        print(value)

if __name__ == "__main__":
    main()
"""


def test_a_check_helpers_verdict_on_the_ranks_own_number_decides_the_backward(tmp_path):
    # `value = 0` where the check failed leaves `value` each rank's own number
    assert lines_of(lint_plain(tmp_path, CHECKED.replace("{handed}", "value")), "DDP809") == [17]


def test_its_twin_a_verdict_on_the_step_number_is_the_same_everywhere(tmp_path):
    assert lines_of(lint_plain(tmp_path, CHECKED.replace("{handed}", "step")), "DDP809") == []


# ------------------------------------------------- rank 0 skips the rest of the pass (continue)
SKIP = """
import os, torch, torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

class Runner:
    def __init__(self, rank, validate_only):
        self.rank = rank
        self.validate_only = validate_only
        self.model = DDP(torch.nn.Linear(4, 1))
        self.opt = torch.optim.SGD(self.model.parameters(), lr=0.1)

    def epoch(self):
        for _ in range(4):
            self.opt.zero_grad()
            self.model(torch.randn(8, 4)).mean().backward()
            self.opt.step()

    def run(self, epochs):
        for epoch in range(epochs):
            if self.validate_only and self.rank == 0:
                print("validation only")
                continue
            self.epoch()
            {after}

def main():
    dist.init_process_group("gloo")
    # (a switch the run sets: a constant False in the only construction never skips - session 44)
    Runner(dist.get_rank(), os.environ.get("VALIDATE_ONLY") == "1").run(3)

if __name__ == "__main__":
    main()
"""


def test_a_continue_under_a_rank_test_skips_the_training_the_others_run(tmp_path):
    assert lines_of(lint_plain(tmp_path, SKIP.replace("{after}", "")), "DDP809") == [19]


def test_its_twin_a_continue_with_only_logging_after_it_skips_no_collective(tmp_path):
    # every rank trains first; rank 0 alone then skips only the printing after the test
    twin = SKIP.replace("            if self.validate_only", "            self.epoch()\n            if self.validate_only")
    twin = twin.replace("            self.epoch()\n            {after}", "            print(epoch)")
    assert lines_of(lint_plain(tmp_path, twin), "DDP809") == []


# -------------------------------------------------- a random draw decides a discriminator's step
DRAW = """
import random
import torch, torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

def main():
    dist.init_process_group("gloo")
    random.seed(dist.get_rank())
    critic = DDP(torch.nn.Linear(4, 1))
    opt = torch.optim.SGD(critic.parameters(), lr=0.1)
    for step in range(10):
        go = torch.tensor([random.random() < 0.5])
        {share}
        if go:
            opt.zero_grad()
            critic(torch.randn(8, 4)).mean().backward()
            opt.step()

if __name__ == "__main__":
    main()
"""


def test_each_ranks_own_random_draw_decides_the_backward(tmp_path):
    assert lines_of(lint_plain(tmp_path, DRAW.replace("{share}", "pass")), "DDP809") == [13]


def test_its_twin_the_draw_broadcast_from_rank_0_first(tmp_path):
    assert lines_of(lint_plain(tmp_path, DRAW.replace("{share}", "dist.broadcast(go, 0)")), "DDP809") == []


# ------------------------------------ the step under a switch nested in the helper's training side
NESTED_STEP = """
import torch, torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

def objective(model, x, opt, training, update):
    loss = model(x).mean()
    if training:
        loss.backward()
        if update:
            if x.numel() > 4:
                opt.step()
            else:
                opt.step()
            opt.zero_grad()
    return loss.item()

def main():
    dist.init_process_group("gloo")
    model = DDP(torch.nn.Linear(4, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    count = 0
    for i in range(16):
        count += 1
        objective(model, torch.randn(8, 4), opt, training=True, update={update})

if __name__ == "__main__":
    main()
"""


def test_a_step_under_a_switch_inside_the_helpers_training_side_is_accumulation(tmp_path):
    found = lint_plain(tmp_path, NESTED_STEP.replace("{update}", "count % 4 == 0"))
    assert lines_of(found, "DDP805") == [7]  # the backward inside `objective`, which computes the loss


def test_its_twin_the_switch_always_on_steps_every_pass(tmp_path):
    assert lines_of(lint_plain(tmp_path, NESTED_STEP.replace("{update}", "True")), "DDP805") == []


# ------------------------------------------- one option's two values: a single-process loader
MODES = """
import argparse, torch, torch.distributed as dist
from torch.utils.data import DataLoader, DistributedSampler, TensorDataset

def train(args):
    if {setup}:
        dist.init_process_group("gloo")
    mode = args.mode
    data = TensorDataset(torch.randn(64, 4))
    if mode == "single":
        loader = DataLoader(data, batch_size=8, shuffle=True)
    else:
        loader = DataLoader(data, batch_size=8, sampler=DistributedSampler(data))
    for epoch in range(2):
        if mode != "single":
            loader.sampler.set_epoch(epoch)
        for (x,) in loader:
            x.sum().backward()

parser = argparse.ArgumentParser()
parser.add_argument("--mode", default="single")
train(parser.parse_args())
"""


def test_a_loader_under_the_other_value_of_the_option_that_sets_up_the_group_is_one_process(tmp_path):
    assert lines_of(lint_plain(tmp_path, MODES.replace("{setup}", 'args.mode == "multi"')), "DDP802") == []


def test_its_twin_a_group_set_up_under_another_option_leaves_the_loader_distributed(tmp_path):
    found = lint_plain(tmp_path, MODES.replace("{setup}", 'args.backend == "gloo"'))
    assert lines_of(found, "DDP802") == [10]


# ---------------------------------------------- mp.spawn's target: a method of an object made in place
SPAWNED_METHOD = """
import torch, torchvision, torch.distributed as dist, torch.multiprocessing as mp
from torch.utils.data import DataLoader, DistributedSampler

class Trainer:
    def train(self, rank):
        dist.init_process_group("gloo", rank=rank, world_size=2)
        torch.manual_seed({seed})
        crop = torchvision.transforms.RandomResizedCrop(32)
        data = torchvision.datasets.ImageFolder("data", transform=crop)
        loader = DataLoader(data, batch_size=4, sampler=DistributedSampler(data), num_workers=2)
        for epoch in range(3):
            loader.sampler.set_epoch(epoch)
            for x, y in loader:
                x.sum().backward()

if __name__ == "__main__":
    mp.spawn(Trainer().train, nprocs=2)
"""


def test_a_spawned_method_of_an_object_made_in_place_is_each_ranks_code(tmp_path):
    assert lines_of(lint_plain(tmp_path, SPAWNED_METHOD.replace("{seed}", "0")), "DDP808") == [10]


def test_its_twin_seeded_with_the_rank(tmp_path):
    assert lines_of(lint_plain(tmp_path, SPAWNED_METHOD.replace("{seed}", "rank")), "DDP808") == []


# ------------------------------------- a DDP model handed to a trainer class the config names
CONFIG_TRAINER = """
import importlib, sys, json, torch, torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, DistributedSampler, TensorDataset

def made(path):
    module, name = path.rsplit(".", 1)
    return getattr(importlib.import_module(module), name)

def main():
    cfg = json.load(open(sys.argv[1]))
    dist.init_process_group("gloo")
    data = TensorDataset(torch.randn(64, 4))
    loader = DataLoader(data, batch_size=8, sampler=DistributedSampler(data))
    model = DDP(torch.nn.Linear(4, 1))
    made(cfg["trainer"])(model, loader).fit()
    {own}

if __name__ == "__main__":
    main()
"""


def test_a_ddp_model_handed_to_a_trainer_the_config_names_leaves_the_verdict_incomplete(tmp_path):
    path = tmp_path / "train.py"
    path.write_text(CONFIG_TRAINER.replace("{own}", "pass"))
    assert gather(str(path)).config_named is not None


def test_its_twin_a_training_loop_the_script_runs_itself_is_judged(tmp_path):
    own = "for (x,) in loader:\n        model(x).sum().backward()"
    path = tmp_path / "train.py"
    path.write_text(CONFIG_TRAINER.replace("{own}", own))
    assert gather(str(path)).config_named is None
