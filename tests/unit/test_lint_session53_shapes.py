"""Shapes from session 53 (holdout 62's read residue and holdout 63), each with its twin, in our own
words: an early-stop counter stepped where each rank's own validation loss did not improve, a
stopper method's verdict on that loss, and rank 0's counted early stop beside another exit it
takes on a loss of its own."""

from __future__ import annotations

from tests.unit.test_lint_round50_shapes import at, line_of
from tests.unit.test_lint_session39_shapes import lint_tree


def lint_one(tmp_path, code: str, **more: str):
    return lint_tree(tmp_path, {"train.py": code, **more})


# -------------------------------------------------- a counter of what the rank's own loss did
COUNTER = """
import torch, torch.distributed as dist
from torch.utils.data import DataLoader, TensorDataset, DistributedSampler
from torch.nn.parallel import DistributedDataParallel as DDP


class Trainer:
    def __init__(self, model, train, val):
        self.model, self.train, self.val = DDP(model), train, val
        self.opt = torch.optim.SGD(self.model.parameters(), lr=0.1)
        self.last = float("inf")
        self.stale = 0

    def epoch(self):
        for (x,) in self.train:
            self.opt.zero_grad()
            self.model(x).sum().backward()
            self.opt.step()

    def validate(self):
        total, n = 0.0, 0
        with torch.no_grad():
            for (x,) in self.val:
                total += self.model(x).pow(2).mean().item()
                n += 1
        {share}
        return total / max(n, 1), n

    def fit(self, epochs):
        for e in range(epochs):
            self.train.sampler.set_epoch(e)
            self.epoch()
            val_loss, _ = self.validate()
            if self.last < val_loss:
                self.stale += 1
            else:
                self.stale = 0
            if self.stale > 3:  # the stop
                break
            self.last = val_loss


def main():
    dist.init_process_group("gloo")
    data = TensorDataset(torch.randn(64, 4))
    train = DataLoader(data, batch_size=8, sampler=DistributedSampler(data))
    val = DataLoader(data, batch_size=8, sampler=DistributedSampler(data, shuffle=False))
    Trainer(torch.nn.Linear(4, 4), train, val).fit(10)


main()
"""

SHARED = """t = torch.tensor([total, n], dtype=torch.float64)
        dist.all_reduce(t)
        total, n = t[0].item(), int(t[1].item())"""


def test_a_counter_stepped_on_the_ranks_own_validation_loss_decides_the_stop(tmp_path):
    code = COUNTER.replace("{share}", "")
    assert at(lint_one(tmp_path, code), "DDP809") == [(line_of(code, "# the stop"), "warning")]


def test_its_twin_all_reduces_the_validation_sums_first(tmp_path):
    code = COUNTER.replace("{share}", SHARED)
    assert at(lint_one(tmp_path, code), "DDP809") == []


# -------------------------------------------------- a stopper's verdict on the rank's own loss
STOPPER = """
import torch, torch.distributed as dist
from torch.utils.data import DataLoader, TensorDataset, DistributedSampler
from torch.nn.parallel import DistributedDataParallel as DDP


class Stopper:
    def __init__(self, patience):
        self.patience, self.count, self.best = patience, 0, float("inf")

    def should_stop(self, loss, state):
        if loss < self.best:
            self.best, self.count = loss, 0
        else:
            self.count += 1
            if self.count >= self.patience:
                return True, state
        return False, state


def evaluate(model, loader):
    total = 0.0
    with torch.no_grad():
        for (x,) in loader:
            total += model(x).pow(2).mean().item()
    {share}
    return total / len(loader), {}


def main():
    dist.init_process_group("gloo")
    data = TensorDataset(torch.randn(64, 4))
    train = DataLoader(data, batch_size=8, sampler=DistributedSampler(data))
    val = DataLoader(data, batch_size=8, sampler=DistributedSampler(data, shuffle=False))
    model = DDP(torch.nn.Linear(4, 4))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    stopper = Stopper(3)
    for epoch in range(10):
        train.sampler.set_epoch(epoch)
        for (x,) in train:
            opt.zero_grad()
            model(x).sum().backward()
            opt.step()
        val_loss, metrics = evaluate(model, val)
        end, state = stopper.should_stop(val_loss, model.state_dict())
        if end:  # the verdict
            break


main()
"""

SHARED_TOTAL = """t = torch.tensor(total)
    dist.all_reduce(t)
    total = t.item() / dist.get_world_size()"""


def test_a_stoppers_verdict_on_the_ranks_own_validation_loss_decides_the_stop(tmp_path):
    code = STOPPER.replace("{share}", "")
    assert at(lint_one(tmp_path, code), "DDP809") == [(line_of(code, "# the verdict"), "warning")]


def test_its_twin_hands_the_stopper_the_all_reduced_loss(tmp_path):
    code = STOPPER.replace("{share}", SHARED_TOTAL)
    assert at(lint_one(tmp_path, code), "DDP809") == []


# -------------------------------------------------- rank 0's counted stop beside a loss exit
RANK0 = """
import torch, torch.distributed as dist
from torch.utils.data import DataLoader, TensorDataset, DistributedSampler
from torch.nn.parallel import DistributedDataParallel as DDP


def main():
    dist.init_process_group("gloo")
    data = TensorDataset(torch.randn(64, 4))
    train = DataLoader(data, batch_size=8, sampler=DistributedSampler(data))
    model = DDP(torch.nn.Linear(4, 4))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    best, stale = float("inf"), 0
    for epoch in range(10):
        train.sampler.set_epoch(epoch)
        total = 0.0
        for (x,) in train:
            opt.zero_grad()
            loss = model(x).sum()
            loss.backward()
            opt.step()
            total += loss.item()
        if dist.get_rank() == 0:
            if total > 1e6:  # exploded
                break
            {counted}


main()
"""

COUNTED = """if total < best:
                best, stale = total, 0
            else:
                stale += 1
            if stale == 5:  # counted
                break"""


def test_rank_zeros_counted_stop_is_the_reason_told(tmp_path):
    # (the exit on the loss is a decision of its own beside it, told apart as a warning: session 92)
    code = RANK0.replace("{counted}", COUNTED)
    assert sorted(at(lint_one(tmp_path, code), "DDP809")) == [(line_of(code, "# exploded"), "warning"),
                                                              (line_of(code, "# counted"), "error")]


def test_its_twin_has_only_the_exit_on_the_loss(tmp_path):
    code = RANK0.replace("{counted}", "")
    assert at(lint_one(tmp_path, code), "DDP809") == [(line_of(code, "# exploded"), "warning")]


# -------------------------------------------------- prepare()'s result bound to a name never read
PREPARED = """
import torch
from accelerate import Accelerator
from torch.utils.data import DataLoader, TensorDataset, DistributedSampler


def main():
    accelerator = Accelerator()
    data = TensorDataset(torch.randn(64, 4))
    sampler = DistributedSampler(data, seed=42)
    train_data_loader = DataLoader(data, batch_size=8, sampler=sampler)  # the loader
    model = torch.nn.Linear(4, 4)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    model, opt, {bound} = accelerator.prepare(model, opt, train_data_loader)
    for epoch in range(3):
        sampler.set_epoch(epoch)
        for (x,) in train_data_loader:
            accelerator.backward(model(x).sum())
            opt.step()
            opt.zero_grad()


main()
"""


def test_a_prepared_loader_bound_to_a_name_never_read_leaves_the_original_sharded_once(tmp_path):
    code = PREPARED.replace("{bound}", "train_dataloader")
    assert at(lint_one(tmp_path, code), "DDP803") == []


def test_its_twin_iterates_the_prepared_loader(tmp_path):
    code = PREPARED.replace("{bound}", "train_data_loader")
    assert at(lint_one(tmp_path, code), "DDP803") == [(line_of(code, "# the loader"), "warning")]


# -------------------------------------------------- a rank a dataset keeps as a flag, by keyword
FLAG_RANK = """
import torch, torch.distributed as dist
from torch.utils.data import DataLoader, Dataset, DistributedSampler


class Slices(Dataset):
    def __init__(self, n, cache_rank=None, cache_rank_only=None):
        self.n = n
        self.cache_rank = cache_rank
        self.cache_rank_only = cache_rank_only

    def build_cache(self):
        {use}

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        return torch.randn(4)


def main():
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    data = Slices(64, cache_rank=rank, cache_rank_only=0)
    sampler = DistributedSampler(data, num_replicas=dist.get_world_size(), rank=rank)  # the sampler
    loader = DataLoader(data, batch_size=8, sampler=sampler)
    model = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(4, 4))
    for epoch in range(2):
        sampler.set_epoch(epoch)
        for x in loader:
            model(x).sum().backward()


main()
"""


def test_a_rank_a_dataset_only_compares_with_its_fields_is_no_shard(tmp_path):
    use = ("if self.cache_rank is not None and self.cache_rank != self.cache_rank_only:\n"
           "            return")
    code = FLAG_RANK.replace("{use}", use)
    assert at(lint_one(tmp_path, code), "DDP803") == []


def test_its_twin_keeps_every_worlds_share_by_the_rank(tmp_path):
    code = FLAG_RANK.replace("{use}", "self.n = len(range(self.cache_rank, self.n, 2))")
    assert at(lint_one(tmp_path, code), "DDP803") == [(line_of(code, "# the sampler"), "warning")]


# -------------------------------------------------- a dataclass's accumulation left at 1
DATACLASS = """
from dataclasses import dataclass
import torch
from accelerate import Accelerator
from torch.utils.data import DataLoader, TensorDataset


@dataclass
class TrainingConfig:
    lr: float = 1e-3
    gradient_accumulation_steps: int = 1


def main():
    config = TrainingConfig()
    {override}
    accelerator = Accelerator()
    model = torch.nn.Linear(4, 4)
    opt = torch.optim.SGD(model.parameters(), lr=config.lr)
    loader = DataLoader(TensorDataset(torch.randn(64, 4)), batch_size=8)
    model, opt, loader = accelerator.prepare(model, opt, loader)
    steps = 0
    for (x,) in loader:
        accelerator.backward(model(x).sum())  # the backward
        steps += 1
        if steps % config.gradient_accumulation_steps == 0:
            opt.step()
            opt.zero_grad()


main()
"""


def test_a_dataclass_field_left_at_one_steps_every_batch(tmp_path):
    code = DATACLASS.replace("{override}", "")
    assert at(lint_one(tmp_path, code), "DDP805") == []


def test_its_twin_sets_the_field(tmp_path):
    code = DATACLASS.replace("{override}", "config.gradient_accumulation_steps = 4")
    assert [line for line, _ in at(lint_one(tmp_path, code), "DDP805")] == [line_of(code, "# the backward")]


# -------------------------------------------------- pytorch-template's init_obj picks the trainer
FACTORY = """
import torch, torch.distributed as dist
import trainers as module_trainer
from torch.utils.data import DataLoader, TensorDataset, DistributedSampler


def init_obj(obj_dict, module, *args):
    return getattr(module, obj_dict["type"])(*args, **dict(obj_dict["args"]))


def main(config):
    dist.init_process_group("gloo")
    data = TensorDataset(torch.randn(64, 4))
    sampler = DistributedSampler(data, shuffle=True)  # the sampler
    loader = DataLoader(data, batch_size=8, sampler=sampler)
    model = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(4, 4))
    trainer = init_obj(config["trainer"], module_trainer, model, loader, sampler)
    trainer.train()


main({"trainer": {"type": "Trainer", "args": {}}})
"""

TRAINERS = """
class Trainer:
    def __init__(self, model, loader, sampler):
        self.model, self.loader, self.sampler = model, loader, sampler

    def train(self):
        for epoch in range(3):
            {set_epoch}
            for (x,) in self.loader:
                self.model(x).sum().backward()
"""


def test_a_trainer_a_config_factory_builds_from_a_module_is_followed(tmp_path):
    found = lint_one(tmp_path, FACTORY, **{"trainers.py": TRAINERS.replace("{set_epoch}",
                                                                          "self.sampler.set_epoch(epoch)")})
    assert at(found, "DDP804") == []


def test_its_twin_never_sets_the_epoch(tmp_path):
    found = lint_one(tmp_path, FACTORY, **{"trainers.py": TRAINERS.replace("{set_epoch}", "pass")})
    assert at(found, "DDP804") == [(line_of(FACTORY, "# the sampler"), "warning")]


# -------------------------------------------------- a mode whose block returns on every rank
EVAL_ONLY = """
import torch, torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP


def main(eval_only: bool):
    dist.init_process_group("gloo")
    if eval_only:
        if dist.get_rank() != 0:
            dist.barrier()
            return
        print("evaluating on rank 0")
        {leave}
    model = DDP(torch.nn.Linear(4, 4))  # the wrap
    model(torch.randn(2, 4)).sum().backward()


main(False)
"""


def test_a_mode_whose_block_returns_on_every_rank_leaves_no_rank_test_after_it(tmp_path):
    code = EVAL_ONLY.replace("{leave}", "dist.barrier()\n        return")
    assert at(lint_one(tmp_path, code), "DDP801") == []


def test_its_twin_falls_through_to_the_training(tmp_path):
    code = EVAL_ONLY.replace("{leave}", "dist.barrier()")
    assert line_of(code, "# the wrap") in [line for line, _ in at(lint_one(tmp_path, code), "DDP801")]


# -------------------------------------------------- the same factory as a method of the config
CONFIG_METHOD = FACTORY.replace('''def init_obj(obj_dict, module, *args):
    return getattr(module, obj_dict["type"])(*args, **dict(obj_dict["args"]))
''', '''class Config(dict):
    def init_obj(self, name, module, *args):
        return getattr(module, self[name]["type"])(*args, **dict(self[name]["args"]))
''').replace('init_obj(config["trainer"], module_trainer,', 'config.init_obj("trainer", module_trainer,').replace(
    'main({"trainer": {"type": "Trainer", "args": {}}})', 'main(Config(trainer={"type": "Trainer", "args": {}}))')


def test_the_factory_as_a_method_of_the_config_is_followed_too(tmp_path):
    found = lint_one(tmp_path, CONFIG_METHOD, **{"trainers.py": TRAINERS.replace("{set_epoch}",
                                                                                "self.sampler.set_epoch(epoch)")})
    assert at(found, "DDP804") == []


def test_its_twin_as_a_method_never_sets_the_epoch(tmp_path):
    found = lint_one(tmp_path, CONFIG_METHOD, **{"trainers.py": TRAINERS.replace("{set_epoch}", "pass")})
    assert at(found, "DDP804") == [(line_of(CONFIG_METHOD, "# the sampler"), "warning")]
