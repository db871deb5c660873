"""Shapes from session 46 (holdout 56, read after it was scored unread): a data iterator whose
`__iter__` reads its own loader, a model class named by `eval` of a config value, the full state
dict of torch.distributed.checkpoint, a switch looked up in a config by name, an accumulation
branch taken only above a count's default 1, Ray Train's report, a constant that rules out a
random crop, an object's rank-0 counter read by the caller that holds it, an early stop counted to
its bound, a Hugging Face Trainer's loop past a rank-0 return, and a `ddp=False` parameter no call
sets. Each with its twin, in our own words."""

from __future__ import annotations

from tests.unit.test_lint_round50_shapes import at, line_of
from tests.unit.test_lint_session39_shapes import lint_tree


def lint_one(tmp_path, code: str, **more: str):
    return lint_tree(tmp_path, {"train.py": code, **more})


# -------------------------------------------------- a loop over an object whose __iter__ reads a loader
ITERATOR = """
import torch, torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, DistributedSampler, TensorDataset


class Batches:
    def __init__(self, dataset):
        self.sampler = DistributedSampler(dataset)  # the sampler
        self.loader = DataLoader(dataset, batch_size=4, sampler=self.sampler)

    def __iter__(self):
        for x, y in self.loader:
            yield x, y


def main():
    dist.init_process_group("gloo")
    model = DDP(torch.nn.Linear(2, 1))
    batches = Batches(TensorDataset(torch.randn(64, 2), torch.randn(64, 1)))
    for epoch in range(10):
        {set_epoch}
        for i, (x, y) in enumerate(batches):
            (model(x) - y).pow(2).mean().backward()


if __name__ == "__main__":
    main()
"""


def test_a_loop_over_an_object_that_iterates_its_own_loader_reads_the_loader_each_epoch(tmp_path):
    code = ITERATOR.replace("{set_epoch}", "pass")
    assert at(lint_one(tmp_path, code), "DDP804") == [(line_of(code, "# the sampler"), "warning")]


def test_its_twin_sets_the_epoch_on_the_objects_sampler(tmp_path):
    code = ITERATOR.replace("{set_epoch}", "batches.sampler.set_epoch(epoch)")
    assert at(lint_one(tmp_path, code), "DDP804") == []


# -------------------------------------------------- eval(config name) builds the model
EVALUATED = """
import torch, torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from nets import WithNorm, Plain


def main(config):
    dist.init_process_group("gloo")
    model = eval(config["model"])(config)
    model = DDP(model)
    for step in range(10):
        model(torch.randn(4, 2)).sum().backward()
        if dist.get_rank() == 0:
            with torch.no_grad():
                model(torch.randn(4, 2))  # the evaluation


if __name__ == "__main__":
    main({"model": "WithNorm"})
"""
NETS = """
import torch


class WithNorm(torch.nn.Module):
    def __init__(self, config):
        super().__init__()
        self.body = torch.nn.Sequential(torch.nn.Linear(2, 2), {norm})

    def forward(self, x):
        return self.body(x)


class Plain(torch.nn.Module):
    def __init__(self, config):
        super().__init__()
        self.body = torch.nn.Linear(2, 2)

    def forward(self, x):
        return self.body(x)
"""


def test_a_model_class_named_by_eval_of_a_config_value_may_be_the_one_with_buffers(tmp_path):
    found = lint_one(tmp_path, EVALUATED, **{"nets.py": NETS.replace("{norm}", "torch.nn.BatchNorm1d(2)")})
    assert at(found, "DDP801") == [(line_of(EVALUATED, "# the evaluation"), "warning")]


def test_its_twin_no_class_it_may_name_holds_a_buffer(tmp_path):
    found = lint_one(tmp_path, EVALUATED, **{"nets.py": NETS.replace("{norm}", "torch.nn.ReLU()")})
    assert at(found, "DDP801") == []


# -------------------------------------------------- the full state dict, on rank 0 only, behind a config switch
FULL_STATE = """
import torch, torch.distributed as dist
from torch.distributed.checkpoint.state_dict import StateDictOptions, get_state_dict
from torch.distributed.fsdp import FullyShardedDataParallel as FSDP


def save(model, optimizer, config):
    if dist.get_rank() != 0:
        return
    {switch}
        options = StateDictOptions(full_state_dict={full}, cpu_offload=True)
        state = get_state_dict(model, [optimizer], options=options)  # the gather
        torch.save(state, "full.pt")


def main(config):
    dist.init_process_group("gloo")
    model = FSDP(torch.nn.Linear(2, 2))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    save(model, optimizer, config)


if __name__ == "__main__":
    main({})
"""


def test_the_full_state_dict_on_rank_0_alone_behind_a_config_switch_is_a_warning(tmp_path):
    code = FULL_STATE.replace("{switch}", 'if config.get("upload", False):').replace("{full}", "True")
    found = lint_one(tmp_path, code)
    assert at(found, "DDP801") == [(line_of(code, "# the gather"), "warning")]
    assert "config.get(" in next(f for f in found if f.code == "DDP801").message


def test_its_twin_without_the_switch_is_an_error(tmp_path):
    code = FULL_STATE.replace("{switch}", "if True:").replace("{full}", "True")
    assert at(lint_one(tmp_path, code), "DDP801") == [(line_of(code, "# the gather"), "error")]


def test_its_twin_a_sharded_state_dict_gathers_nothing(tmp_path):
    code = FULL_STATE.replace("{switch}", "if True:").replace("{full}", "False")
    assert at(lint_one(tmp_path, code), "DDP801") == []


# -------------------------------------------------- accumulation only above the count's default 1
COUNTED = """
import argparse, torch, torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

parser = argparse.ArgumentParser()
parser.add_argument("--gradient_accumulation_steps", type=int, default=1)
args = parser.parse_args()
dist.init_process_group("gloo")
model = DDP(torch.nn.Linear(2, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for i in range(100):
    if args.gradient_accumulation_steps > 1:
        {backward}
        if (i + 1) % args.gradient_accumulation_steps == 0:
            opt.step()
            opt.zero_grad()
    else:
        model(torch.randn(4, 2)).sum().backward()
        opt.step()
        opt.zero_grad()
"""


def test_an_accumulation_branch_taken_above_the_counts_default_is_a_warning_on_it(tmp_path):
    code = COUNTED.replace("{backward}", "model(torch.randn(4, 2)).sum().backward()  # the backward")
    found = [f for f in lint_one(tmp_path, code) if f.code == "DDP805"]
    assert [f.severity.value for f in found] == ["warning"]
    assert "args.gradient_accumulation_steps" in found[0].message


def test_its_twin_steps_every_pass_on_both_sides(tmp_path):
    code = COUNTED.replace("{backward}", "model(torch.randn(4, 2)).sum().backward()\n        opt.step()")
    code = code.replace("(i + 1) % args.gradient_accumulation_steps == 0", "True")
    assert at(lint_one(tmp_path, code), "DDP805") == []


# -------------------------------------------------- Ray Train's report on rank 0 alone
RAY = """
import torch
from ray import train as ray_train
from ray.train.torch import TorchTrainer


def loop(config):
    rank = ray_train.get_context().get_world_rank()
    model = ray_train.torch.prepare_model(torch.nn.Linear(2, 1))
    for step in range(10):
        model(torch.randn(4, 2)).sum().backward()
        {guard}
            ray_train.report({"step": step})  # the report


TorchTrainer(loop).fit()
"""


def test_ray_trains_report_on_rank_0_alone_hangs(tmp_path):
    code = RAY.replace("{guard}", "if rank == 0:")
    assert at(lint_one(tmp_path, code), "DDP801") == [(line_of(code, "# the report"), "error")]


def test_its_twin_every_worker_reports(tmp_path):
    assert at(lint_one(tmp_path, RAY.replace("{guard}", "if True:")), "DDP801") == []


# -------------------------------------------------- a constant that rules out the random crop
CROP = """
import torch, torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, Dataset, DistributedSampler


class Crop:
    def random_crop(self, x, center):
        if center:
            top = 1
        else:
            top = int(torch.randint(0, 2, (1,)))
        return x[top:top + 2]

    def __call__(self, x):
        return self.random_crop(x, center={center})


class Clips(Dataset):
    def __init__(self):
        self.transform = Crop()

    def __len__(self):
        return 64

    def __getitem__(self, i):
        return self.transform(torch.ones(4, 2) * i)


def main():
    torch.manual_seed(0)
    dist.init_process_group("gloo")
    model = DDP(torch.nn.Linear(2, 1))
    data = Clips()
    sampler = DistributedSampler(data)
    loader = DataLoader(data, batch_size=4, sampler=sampler, num_workers=2)  # the loader
    for epoch in range(3):
        sampler.set_epoch(epoch)
        for x in loader:
            model(x).sum().backward()


if __name__ == "__main__":
    main()
"""


def test_a_crop_every_call_centres_draws_nothing_in_the_workers(tmp_path):
    assert at(lint_one(tmp_path, CROP.replace("{center}", "True")), "DDP808") == []


def test_its_twin_a_random_crop_draws_alike_on_every_rank(tmp_path):
    code = CROP.replace("{center}", "False")
    assert at(lint_one(tmp_path, code), "DDP808") == [(line_of(code, "# the loader"), "warning")]


# -------------------------------------------------- a held trainer's rank-0 counter decides the loop
HELD = """
import torch, torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP


class Trainer:
    def __init__(self):
        self.model = DDP(torch.nn.Linear(2, 1))
        self.best = float("inf")
        self.stale = 0

    def step(self):
        self.model(torch.randn(4, 2)).sum().backward()

    def save(self, loss):
        {rank_test}
        torch.save(self.model.module.state_dict(), "last.pt")
        if loss < self.best:
            self.best, self.stale = loss, 0
        else:
            self.stale += 1

    def should_stop(self, patience):
        return self.stale >= patience


def main():
    dist.init_process_group("gloo")
    trainer = Trainer()
    for epoch in range(100):
        trainer.step()
        trainer.save(float(torch.rand(())))
        if trainer.should_stop(5):  # the test
            break


if __name__ == "__main__":
    main()
"""


def test_a_counter_a_method_steps_on_rank_0_read_by_the_caller_holding_the_object_is_ddp809(tmp_path):
    code = HELD.replace("{rank_test}", "if dist.get_rank() != 0:\n            return")
    assert at(lint_one(tmp_path, code), "DDP809") == [(line_of(code, "# the test"), "error")]


def test_its_twin_every_rank_steps_the_counter(tmp_path):
    assert at(lint_one(tmp_path, HELD.replace("{rank_test}", "pass")), "DDP809") == []


# -------------------------------------------------- rank 0's extra scoring, then both sides return
SCORED = """
import torch, torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP


class Trainer:
    def __init__(self):
        self.model = DDP(torch.nn.Linear(2, 1))
        self.reference = None
        if dist.get_rank() == 0:
            self.reference = torch.randn(4, 2)

    def validate(self):
        total = torch.ones(())
        dist.all_reduce(total)  # (every rank, before the test)
        loss = float(total)
        if self.reference is not None:  # the test
            return float(self.model.module(self.reference).sum())
        {after}
        return loss


def main():
    dist.init_process_group("gloo")
    trainer = Trainer()
    for epoch in range(3):
        trainer.model(torch.randn(4, 2)).sum().backward()
        trainer.validate()


if __name__ == "__main__":
    main()
"""


def test_rank_0s_own_scoring_on_the_plain_module_then_a_return_decides_nothing_shared(tmp_path):
    assert at(lint_one(tmp_path, SCORED.replace("{after}", "pass")), "DDP809") == []


def test_its_twin_the_others_go_on_to_a_collective_rank_0_skips(tmp_path):
    code = SCORED.replace("{after}", "dist.barrier()")
    assert [line for line, _ in at(lint_one(tmp_path, code), "DDP809")] == [line_of(code, "# the test")]


# -------------------------------------------------- early stops counted to their bound, on rank 0
STOPPER = """
import torch, torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP


class Stopper:
    def __init__(self, patience):
        self.patience, self.counter, self.best, self.stop = patience, 0, None, False

    def __call__(self, loss):
        if self.best is None or loss < self.best:
            self.best, self.counter = loss, 0
        else:
            self.counter += 1
            if self.counter >= self.patience:
                self.stop = {flag}


def main():
    dist.init_process_group("gloo")
    model = DDP(torch.nn.Linear(2, 1))
    stopper = Stopper(3)
    for epoch in range(100):
        model(torch.randn(4, 2)).sum().backward()
        if dist.get_rank() == 0:
            stopper(float(torch.rand(())))
            if stopper.stop:  # the test
                break


if __name__ == "__main__":
    main()
"""


def test_a_stopper_that_counts_to_its_patience_stops_rank_0_for_certain(tmp_path):
    code = STOPPER.replace("{flag}", "True")
    assert at(lint_one(tmp_path, code), "DDP809") == [(line_of(code, "# the test"), "error")]


def test_its_twin_a_flag_the_stopper_never_counts_to_stays_an_assumption(tmp_path):
    code = STOPPER.replace("{flag}", "self.best is None")
    assert at(lint_one(tmp_path, code), "DDP809") == [(line_of(code, "# the test"), "warning")]


PATIENCE = """
import torch, torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP


def main():
    dist.init_process_group("gloo")
    model = DDP(torch.nn.Linear(2, 1))
    best, patience = 0.0, 5
    for epoch in range(100):
        model(torch.randn(4, 2)).sum().backward()
        if dist.get_rank() == 0:
            score = float(torch.rand(()))
            if score > best:
                best, patience = score, 5
            else:
                {step}
            if patience == 0:  # the test
                break


if __name__ == "__main__":
    main()
"""


def test_a_patience_counted_down_on_rank_0_stops_it_for_certain(tmp_path):
    code = PATIENCE.replace("{step}", "patience -= 1")
    assert at(lint_one(tmp_path, code), "DDP809") == [(line_of(code, "# the test"), "error")]


def test_its_twin_a_patience_nothing_counts_down_stays_an_assumption(tmp_path):
    code = PATIENCE.replace("{step}", "patience = int(score * 10)")
    assert at(lint_one(tmp_path, code), "DDP809") == [(line_of(code, "# the test"), "warning")]


# -------------------------------------------------- a Hugging Face Trainer's loop past rank 0's return
HF = """
import os
from transformers import Trainer, TrainingArguments


class MyTrainer(Trainer):
    def compute_loss(self, model, inputs, return_outputs=False):
        return model(**inputs).loss


def main():
    local_rank = int(os.environ.get("LOCAL_RANK", 0))
    {rank_test}
        print("already done")
        return
    trainer = MyTrainer(model=None, args=TrainingArguments(output_dir="out"))
    trainer.train()  # the loop


if __name__ == "__main__":
    main()
"""


def test_a_trainers_loop_the_ranks_but_0_enter_alone_hangs(tmp_path):
    code = HF.replace("{rank_test}", "if local_rank == 0:")
    assert at(lint_one(tmp_path, code), "DDP801") == [(line_of(code, "# the loop"), "error")]


def test_its_twin_every_rank_enters_the_loop(tmp_path):
    assert at(lint_one(tmp_path, HF.replace("{rank_test}", "if False:")), "DDP801") == []


# -------------------------------------------------- `ddp=False` that no call sets: the saves are every rank's
LEFT_OFF = """
import torch, torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP


def train(model, ddp=False):
    for step in range(100):
        model(torch.randn(4, 2)).sum().backward()
    if ddp:
        torch.save(model.module, "final.pt")
    else:
        torch.save(model, "final.pt")  # the save


def main():
    dist.init_process_group("gloo")
    model = DDP(torch.nn.Linear(2, 1))
    train(model{given})


if __name__ == "__main__":
    main()
"""


def test_the_else_of_a_ddp_switch_no_call_turns_on_is_the_distributed_runs_save(tmp_path):
    code = LEFT_OFF.replace("{given}", "")
    assert at(lint_one(tmp_path, code), "DDP806") == [(line_of(code, "# the save"), "warning")]


def test_its_twin_the_call_turns_the_switch_on(tmp_path):
    code = LEFT_OFF.replace("{given}", ", ddp=True")
    assert at(lint_one(tmp_path, code), "DDP806") == [(line_of(code, "# the save") - 2, "warning")]
