"""Shapes from session 27 (holdout 27, spent, and blind round 53), each with its healthy twin,
written in our own words."""

from __future__ import annotations

from tests.unit.test_lint_round17_shapes import lint_plain
from tests.unit.test_lint_round50_shapes import at, line_of


# -------------------------------------------------- the binding the flow brings, not every binding
NODE_RANK = """
import os, torch, torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

def train(model, rank):
    model(torch.randn(2, 4)).sum().backward()
    if rank == 0:
        torch.save(model.module.state_dict(), "epoch.bin")  # the save

def main():
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    {rebind}
    nnodes = int(os.environ.get("NNODES", 1))  # a job on several nodes
    model = DDP(torch.nn.Linear(4, 1))
    train(model, rank)

main()
"""


def test_a_rank_rebound_to_the_rank_within_the_node_writes_once_per_node(tmp_path):
    code = NODE_RANK.replace("{rebind}", "rank = rank % torch.cuda.device_count()")
    assert at(lint_plain(tmp_path, code), "DDP806") == [(line_of(code, "# the save"), "warning")]


def test_its_twin_the_global_rank_kept_writes_once(tmp_path):
    code = NODE_RANK.replace("{rebind}", "print(rank % torch.cuda.device_count())")
    assert at(lint_plain(tmp_path, code), "DDP806") == []


# -------------------------------------------------- a rank decorator applied by hand
HAND_DECORATED = """
import os, torch, torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from audiotools.ml.decorators import when

def checkpoint(model, path):
    torch.save(model.state_dict(), f"{path}/latest.pth")  # the save

def train(model, path, local_rank):
    global checkpoint
    {wrap}
    for step in range(10):
        model(torch.randn(2, 4)).sum().backward()
        checkpoint(model, path)

if __name__ == "__main__":
    dist.init_process_group("gloo")
    nnodes = int(os.environ.get("NNODES", 1))  # a job on several nodes
    train(DDP(torch.nn.Linear(4, 1)), "runs", 0)
"""


def test_a_function_rewrapped_by_a_predicate_decorator_runs_where_it_holds(tmp_path):
    code = HAND_DECORATED.replace("{wrap}", "checkpoint = when(lambda: dist.get_rank() == 0)(checkpoint)")
    assert at(lint_plain(tmp_path, code), "DDP806") == []


def test_the_same_with_the_local_rank_writes_once_per_node(tmp_path):
    code = HAND_DECORATED.replace("{wrap}", "checkpoint = when(lambda: local_rank == 0)(checkpoint)")
    assert at(lint_plain(tmp_path, code), "DDP806") == [(line_of(code, "# the save"), "warning")]


def test_its_twin_unwrapped_every_rank_writes(tmp_path):
    code = HAND_DECORATED.replace("{wrap}", "pass")
    assert at(lint_plain(tmp_path, code), "DDP806") == [(line_of(code, "# the save"), "warning")]


def test_a_wrap_below_the_call_does_not_gate_it(tmp_path):
    code = HAND_DECORATED.replace("{wrap}", "pass").replace(
        "        checkpoint(model, path)\n",
        "        checkpoint(model, path)\n    checkpoint = when(lambda: dist.get_rank() == 0)(checkpoint)\n")
    assert at(lint_plain(tmp_path, code), "DDP806") == [(line_of(code, "# the save"), "warning")]


# -------------------------------------------------- audiotools: its Accelerator sets up the group, its saves write
AUDIOTOOLS = """
import argbind, os, torch
from audiotools import ml
NNODES = int(os.environ.get("NNODES", 1))  # a job on several nodes

Accelerator = argbind.bind(ml.Accelerator, without_prefix=True)

def save(accel, generator, path):
    accel.unwrap(generator).save_to_folder(f"{path}/latest", {"step": 1})  # the save

def train(accel):
    generator = accel.prepare_model(torch.nn.Linear(4, 1))
    for step in range(10):
        {save}

if __name__ == "__main__":
    with Accelerator() as accel:
        train(accel)
"""


def test_save_to_folder_on_every_process_is_an_every_rank_write(tmp_path):
    code = AUDIOTOOLS.replace("{save}", "save(accel, generator, 'runs')")
    assert at(lint_plain(tmp_path, code), "DDP806") == [(line_of(code, "# the save"), "warning")]


def test_its_twin_under_the_local_rank_zero_test_is_once_per_node(tmp_path):
    code = AUDIOTOOLS.replace("{save}", "if accel.local_rank == 0:\n            save(accel, generator, 'runs')")
    found = lint_plain(tmp_path, code)
    assert at(found, "DDP806") == [(line_of(code, "# the save"), "warning")]
    assert "one rank per node" in next(f.message for f in found if f.code == "DDP806")


def test_and_under_the_global_rank_zero_test_it_is_once(tmp_path):
    code = AUDIOTOOLS.replace("{save}", "if accel.rank == 0:\n            save(accel, generator, 'runs')")
    assert at(lint_plain(tmp_path, code), "DDP806") == []


# -------------------------------------------------- is_primary() of a library is the main-process test
PRIMARY = """
import torch
from tensorfn import distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

def train(model):
    for i in range(10):
        model(torch.randn(2, 4)).sum().backward()
        {test}
            torch.save(model.module.state_dict(), f"ckpt_{i}.pt")  # the save

if __name__ == "__main__":
    torch.distributed.init_process_group("gloo")
    train(DDP(torch.nn.Linear(4, 1)))
"""


def test_a_save_under_is_primary_is_one_rank_s(tmp_path):
    code = PRIMARY.replace("{test}", "if dist.is_primary():")
    assert at(lint_plain(tmp_path, code), "DDP806") == []


def test_its_twin_under_a_test_of_something_else_is_every_rank_s(tmp_path):
    code = PRIMARY.replace("{test}", "if i % 5 == 0:")
    assert at(lint_plain(tmp_path, code), "DDP806") == [(line_of(code, "# the save"), "warning")]


# -------------------------------------------------- a closure's training flag, fixed by the factory's call
CLOSURE_STEP = """
import torch, torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, DistributedSampler

def get_step_fn(train, opt):
    def step_fn(model, batch, optimize=True):
        if train:
            loss = model(batch).sum()
            if optimize:
                opt.zero_grad()
                loss.backward()
                opt.step()
        else:
            with torch.no_grad():
                loss = model(batch).sum()
        return loss
    return step_fn

def get_loaders(ds, distributed):
    sampler = DistributedSampler(ds) if distributed else None  # the sampler
    return DataLoader(ds, sampler=sampler, batch_size=4), None

def build(ds):
    return get_loaders(ds, True)

def main():
    dist.init_process_group("gloo")
    model = DDP(torch.nn.Linear(4, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    step = get_step_fn({flag}, opt)
    loader, _ = build(torch.randn(64, 4))
    for epoch in range(10):
        for x in loader:
            step(model, x)

main()
"""


def test_a_training_step_closure_makes_its_loop_a_training_loop(tmp_path):
    code = CLOSURE_STEP.replace("{flag}", "True")
    assert at(lint_plain(tmp_path, code), "DDP804") == [(line_of(code, "# the sampler"), "warning")]


def unsampled(code: str) -> str:
    return code.replace("sampler = DistributedSampler(ds) if distributed else None  # the sampler",
                        "sampler = None").replace("batch_size=4), None", "batch_size=4, shuffle=True), None  # the loader")


def test_a_training_closure_s_loader_without_a_sampler_is_a_training_loader(tmp_path):
    code = unsampled(CLOSURE_STEP.replace("{flag}", "True"))
    assert at(lint_plain(tmp_path, code), "DDP802") == [(line_of(code, "# the loader"), "error")]


def test_its_twin_the_evaluation_closure_trains_nothing(tmp_path):
    code = unsampled(CLOSURE_STEP.replace("{flag}", "False"))
    assert at(lint_plain(tmp_path, code), "DDP802") == []


# -------------------------------------------------- Accelerate: a loader no prepare() takes
UNPREPARED = """
import copy, torch
from accelerate import Accelerator
from torch.utils.data import DataLoader, Dataset, TensorDataset

class Rows(Dataset):
    def __len__(self):
        return 64
    def __getitem__(self, i):
        return (torch.ones(4) * i,)

def loader(batch_size):
    return DataLoader(Rows(), batch_size=batch_size, shuffle=True)  # the loader

def main():
    accelerator = Accelerator()
    model = torch.nn.Linear(4, 1)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    train_dataloader = loader(8)
    {prepare}
    for epoch in range(3):
        for (x,) in train_dataloader:
            accelerator.backward(model(x).sum())
            opt.step()

main()
"""


def test_a_prepared_copy_thrown_away_leaves_the_loader_unsharded(tmp_path):
    code = UNPREPARED.replace(
        "{prepare}", "model, opt, _ = accelerator.prepare(model, opt, copy.deepcopy(train_dataloader))")
    assert at(lint_plain(tmp_path, code), "DDP802") == [(line_of(code, "# the loader"), "error")]


def test_a_loader_never_prepared_is_unsharded(tmp_path):
    code = UNPREPARED.replace("{prepare}", "model = accelerator.prepare(model)\n    opt = accelerator.prepare(opt)")
    assert at(lint_plain(tmp_path, code), "DDP802") == [(line_of(code, "# the loader"), "error")]


def test_its_twin_the_loader_prepared_under_the_name_the_builder_returns_to(tmp_path):
    code = UNPREPARED.replace(
        "{prepare}", "model, opt, train_dataloader = accelerator.prepare(model, opt, train_dataloader)")
    assert at(lint_plain(tmp_path, code), "DDP802") == []


def test_a_loader_of_tensors_the_run_made_is_left_alone(tmp_path):
    # (rollouts a rank generated itself: not prepared on purpose, nothing to shard)
    code = UNPREPARED.replace("Rows()", "TensorDataset(torch.randn(64, 4))").replace(
        "{prepare}", "model = accelerator.prepare(model)\n    opt = accelerator.prepare(opt)")
    assert at(lint_plain(tmp_path, code), "DDP802") == []


def test_a_prepare_handed_a_parameter_is_not_read_as_proof(tmp_path):
    code = UNPREPARED.replace("{prepare}", "model, opt, train_dataloader = setup(accelerator, model, opt, "
                                           "train_dataloader)").replace(
        "def main():", "def setup(acc, *objs):\n    return acc.prepare(*objs)\n\ndef main():")
    assert at(lint_plain(tmp_path, code), "DDP802") == []


# -------------------------------------------------- a prepared loader over a dataset that keeps its rank's share
SELF_SHARED = """
import torch
from accelerate import Accelerator
from torch.utils.data import DataLoader, Dataset

class Clips(Dataset):
    def __init__(self, accelerator, items):
        rank, world = accelerator.process_index, accelerator.num_processes
        self.items = [x for count, x in enumerate(items) if {keep}]
    def __len__(self):
        return len(self.items)
    def __getitem__(self, i):
        return self.items[i]

def main():
    accelerator = Accelerator()
    model = torch.nn.Linear(4, 1)
    loader = DataLoader(Clips(accelerator, list(range(64))), batch_size=8, shuffle=True)  # the loader
    model, loader = accelerator.prepare(model, loader)
    for epoch in range(3):
        for x in loader:
            accelerator.backward(model(x.float().view(-1, 1).repeat(1, 4)).sum())

main()
"""


def test_a_prepared_loader_over_a_rank_share_is_sharded_twice(tmp_path):
    code = SELF_SHARED.replace("{keep}", "count % world == rank")
    assert at(lint_plain(tmp_path, code), "DDP803") == [(line_of(code, "# the loader"), "warning")]


def test_its_twin_a_dataset_of_every_item_is_sharded_once(tmp_path):
    code = SELF_SHARED.replace("{keep}", "count % 2 == 0")
    assert at(lint_plain(tmp_path, code), "DDP803") == []


# -------------------------------------------------- a worker seeded from the clock in whole seconds
CLOCK_SEED = """
import time, numpy as np, torch, torch.distributed as dist
from torch.utils.data import DataLoader, Dataset, DistributedSampler

def worker_init_fn(worker_id):
    np.random.seed({seed})  # the seeding

class Windows(Dataset):
    def __len__(self):
        return 64
    def __getitem__(self, i):
        return torch.ones(4) * np.random.rand()

def main():
    dist.init_process_group("gloo")
    ds = Windows()
    sampler = DistributedSampler(ds)
    loader = DataLoader(ds, batch_size=4, sampler=sampler, num_workers=4, worker_init_fn=worker_init_fn)
    model = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(4, 1))
    for epoch in range(2):
        sampler.set_epoch(epoch)
        for x in loader:
            model(x).sum().backward()

main()
"""


def test_whole_seconds_of_the_clock_seed_every_worker_alike(tmp_path):
    code = CLOCK_SEED.replace("{seed}", "int(time.time())")
    assert at(lint_plain(tmp_path, code), "DDP808") == [(line_of(code, "# the seeding"), "warning")]


def test_its_twin_nanoseconds_differ_between_workers(tmp_path):
    code = CLOCK_SEED.replace("{seed}", "time.time_ns() % 2**32")
    assert at(lint_plain(tmp_path, code), "DDP808") == []


# -------------------------------------------------- loaders of a dict comprehension over split names
DICT_LOADERS = """
import torch, torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, DistributedSampler
from torchvision import transforms, datasets

def get_loaders():
    tf = {"train": transforms.Compose([{augment}transforms.ToTensor()]), "test": transforms.ToTensor()}
    splits = {"train": True, "test": False}
    ds = {i: datasets.CIFAR10(".", transform=tf[i], train=splits[i]) for i in splits.keys()}
    ds["pretrain"] = datasets.CIFAR10(".", transform=tf["train"])
    samplers = {"pretrain": DistributedSampler(ds["pretrain"]), "test": None}
    return {i: DataLoader(ds[i], sampler=samplers[i], num_workers=8, batch_size=64) for i in samplers}  # the loaders

def main():
    torch.manual_seed(420)
    dist.init_process_group("gloo")
    model = DDP(torch.nn.Linear(4, 1))
    loaders = get_loaders()
    for epoch in range(10):
        loaders["pretrain"].sampler.set_epoch(epoch)
        for x, y in loaders["pretrain"]:
            model(x).sum().backward()

main()
"""


def test_items_set_by_key_and_comprehension_items_are_read_for_their_draws(tmp_path):
    code = DICT_LOADERS.replace("{augment}", "transforms.RandomResizedCrop(32), ")
    assert at(lint_plain(tmp_path, code), "DDP808") == [(line_of(code, "# the loaders"), "warning")]


def test_its_twin_without_random_transforms_draws_nothing(tmp_path):
    code = DICT_LOADERS.replace("{augment}", "")
    assert at(lint_plain(tmp_path, code), "DDP808") == []


# -------------------------------------------------- an evaluation sampler feeding a library's loader
LIBRARY_LOADER = """
import torch, torch.distributed as dist
from torch.utils.data.distributed import DistributedSampler
from ffrecord.torch import Dataset

def train_one_epoch(model, data_loader):
    for x in data_loader:
        model(x).sum().backward()

def score(data_loader, model):
    with torch.no_grad():
        for x in data_loader:
            model(x)

def main(train_dataset, held_dataset):
    dist.init_process_group("gloo")
    model = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(4, 1))
    train_sampler = DistributedSampler(train_dataset, shuffle=True)
    train_loader = train_dataset.loader(8, sampler=train_sampler)
    {name}_sampler = DistributedSampler(held_dataset)  # the sampler
    {name}_loader = held_dataset.loader(8, sampler={name}_sampler)
    for epoch in range(10):
        train_one_epoch(model, train_loader)
        score({name}_loader, model)
"""


def test_a_shuffling_evaluation_sampler_needs_no_set_epoch(tmp_path):
    code = LIBRARY_LOADER.replace("{name}", "val")
    assert at(lint_plain(tmp_path, code), "DDP804") == [(line_of(code, "train_sampler = "), "warning")]


def test_its_twin_a_sampler_named_for_nothing_is_judged(tmp_path):
    code = LIBRARY_LOADER.replace("{name}", "aux")
    assert at(lint_plain(tmp_path, code), "DDP804") == [(line_of(code, "train_sampler = "), "warning"),
                                                        (line_of(code, "# the sampler"), "warning")]


# -------------------------------------------------- a counter resumed from the checkpoint file
RESUMED = """
import torch, torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

def main(path, max_steps):
    dist.init_process_group("gloo")
    model = DDP(torch.nn.Linear(4, 1))
    step = 1
    checkpoint = torch.load(path)
    step = {resume}
    while True:
        loss = model(torch.randn(2, 4)).sum()
        loss.backward()
        if step >= max_steps:  # the test
            break
        step += 1

main("ckpt.pt", 100)
"""


def test_a_step_read_back_from_the_checkpoint_is_the_same_on_every_rank(tmp_path):
    code = RESUMED.replace("{resume}", 'checkpoint["step"].item()')
    assert at(lint_plain(tmp_path, code), "DDP809") == []


def test_its_twin_a_step_counted_from_the_rank_s_own_loss_is_not(tmp_path):
    code = RESUMED.replace("{resume}", "int(model(torch.randn(2, 4)).sum().item())")
    assert at(lint_plain(tmp_path, code), "DDP809") == [(line_of(code, "# the test"), "warning")]


# -------------------------------------------------- a loader read one batch ahead: None is its end
AHEAD = """
import torch
from accelerate import Accelerator
from torch.utils.data import DataLoader, TensorDataset

def main():
    acc = Accelerator()
    model = torch.nn.Linear(8, 1)
    loader = DataLoader(TensorDataset(torch.randn(64, 8)), batch_size=4, shuffle=True)
    model, loader = acc.prepare(model, loader)
    for epoch in range(3):
        it = iter(loader)
        cur = next(it, None)
        for step in range(len(loader) - 1):
            nxt = {read}
            if nxt is None:  # the test
                break
            n = acc.gather(torch.tensor([cur[0].size(0)]))
            acc.backward(model(cur[0][:int(n.min())]).pow(2).mean())
            cur = nxt

main()
"""


def test_the_end_of_a_loader_read_ahead_is_met_by_every_rank_at_once(tmp_path):
    assert at(lint_plain(tmp_path, AHEAD.replace("{read}", "next(it, None)")), "DDP809") == []


def test_its_twin_a_batch_a_filter_may_drop_on_one_rank_is_judged(tmp_path):
    code = AHEAD.replace("{read}", "keep_or_none(next(it), model(cur[0]).sum().item())").replace(
        "def main():", "def keep_or_none(batch, loss):\n    return batch if loss < 10 else None\n\ndef main():")
    assert at(lint_plain(tmp_path, code), "DDP809") == [(line_of(code, "# the test"), "warning")]


# -------------------------------------------------- a Trainer's `_save` under the transformers the project pins
SAVE_OVERRIDE = """
import os, torch, transformers, torch.distributed as dist

class AdapterTrainer(transformers.Trainer):
    def _save(self, output_dir=None, state_dict=None):
        out = output_dir or self.args.output_dir
        torch.save(self.args, os.path.join(out, "training_args.bin"))  # the save

def main(model, args, data):
    AdapterTrainer(model=model, args=args, train_dataset=data).train()

if __name__ == "__main__":
    main(None, None, None)
"""


def test_a_save_override_under_a_transformers_4_pin_is_the_main_process_s(tmp_path):
    (tmp_path / "requirements.txt").write_text("torch>=2.0\ntransformers==4.30.2\n")
    assert at(lint_plain(tmp_path, SAVE_OVERRIDE), "DDP806") == []


def test_its_twin_without_a_pin_it_is_every_process_s(tmp_path):
    assert at(lint_plain(tmp_path, SAVE_OVERRIDE), "DDP806") == [(line_of(SAVE_OVERRIDE, "# the save"), "warning")]


def test_and_with_a_lower_bound_alone_it_is_every_process_s(tmp_path):
    (tmp_path / "requirements.txt").write_text("transformers>=4.40\n")
    assert at(lint_plain(tmp_path, SAVE_OVERRIDE), "DDP806") == [(line_of(SAVE_OVERRIDE, "# the save"), "warning")]


def test_pins_are_read_as_a_major_version():
    from ddpdoctor.lint.pins import _from_ops
    assert [_from_ops(o) for o in ("==4.30.2", "~=4.30", "<5", "<5.0", "<4.40", "<=4.46.1", ">=4.2,<5.0",
                                   ">=4.2", "!=4.1")] == [4, 4, 4, 4, 4, 4, 4, None, None]


# -------------------------------------------------- a per-batch step helper that returns before its backward
STEP_HELPER = """
import torch, torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, DistributedSampler, TensorDataset

def step(net, opt, x, target):
    valid = (target > 0) & (target < 192)
    {test}
        return 0.0
    opt.zero_grad()
    loss = torch.nn.functional.smooth_l1_loss(net(x)[valid], target[valid])
    loss.backward()
    opt.step()
    return loss.item()

def main():
    dist.init_process_group("gloo")
    net = DDP(torch.nn.Linear(4, 4))
    opt = torch.optim.Adam(net.parameters())
    ds = TensorDataset(torch.randn(64, 4), torch.rand(64, 4) * 300)
    sampler = DistributedSampler(ds)
    loader = DataLoader(ds, batch_size=4, sampler=sampler)
    for epoch in range(10):
        sampler.set_epoch(epoch)
        for x, t in loader:
            step(net, opt, x, t)

main()
"""


def test_a_step_helper_returning_on_its_own_batch_s_values_skips_the_all_reduce(tmp_path):
    code = STEP_HELPER.replace("{test}", "if valid.sum() == 0:  # the test")
    assert at(lint_plain(tmp_path, code), "DDP809") == [(line_of(code, "# the test"), "warning")]


def test_its_twin_a_test_on_a_constant_of_the_run_is_the_same_everywhere(tmp_path):
    code = STEP_HELPER.replace("{test}", "if opt.param_groups[0]['lr'] == 0:  # the test")
    assert at(lint_plain(tmp_path, code), "DDP809") == []


# -------------------------------------------------- a gradient norm read after DDP's backward
GRAD_NORM = """
import torch, torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

def main(loader):
    dist.init_process_group("gloo")
    model = DDP(torch.nn.Linear(4, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for x, y in loader:
        loss = torch.nn.functional.mse_loss(model(x), y)
        opt.zero_grad()
        loss.backward()
        norm = {norm}
        if norm > 100.0:  # the test
            continue
        opt.step()
        dist.all_reduce(torch.ones(1))

main([])
"""


def test_a_norm_of_gradients_ddp_averaged_is_the_same_on_every_rank(tmp_path):
    code = GRAD_NORM.replace("{norm}", "torch.nn.utils.clip_grad_norm_(model.parameters(), 1e9).item()")
    assert at(lint_plain(tmp_path, code), "DDP809") == []


def test_its_twin_the_rank_s_own_loss_is_not(tmp_path):
    code = GRAD_NORM.replace("{norm}", "loss.item()")
    assert at(lint_plain(tmp_path, code), "DDP809") == [(line_of(code, "# the test"), "warning")]


# -------------------------------------------------- the subclass the run builds overrides the validation
OVERRIDDEN = """
import torch, torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

class Base:
    def __init__(self, loader, val_loader):
        self.net = DDP(torch.nn.Linear(4, 1))
        self.opt = torch.optim.SGD(self.net.parameters(), lr=0.1)
        self.loader, self.val_loader = loader, val_loader

    def _validate(self):
        total = torch.zeros(1)
        with torch.no_grad():
            for x, y in self.val_loader:
                total += torch.nn.functional.mse_loss(self.net(x), y)
        dist.all_reduce(total)
        return total.item()

    def train(self, epochs):
        best, stale = 1e9, 0
        for epoch in range(epochs):
            for x, y in self.loader:
                self.opt.zero_grad()
                torch.nn.functional.mse_loss(self.net(x), y).backward()
                self.opt.step()
            val = self._validate()
            if val < best:
                best, stale = val, 0
            else:
                stale += 1
                if stale > 5:  # the test
                    break

class Tagger(Base):
    def _validate(self):
        losses = []
        with torch.no_grad():
            for x, y in self.val_loader:
                losses.append(torch.nn.functional.mse_loss(self.net(x), y).item())
        return sum(losses) / len(losses)

def main(loader, val_loader):
    dist.init_process_group("gloo")
    {built}(loader, val_loader).train(100)

main([], [])
"""


def test_the_built_subclass_s_validation_of_its_own_shard_decides_the_stop(tmp_path):
    code = OVERRIDDEN.replace("{built}", "Tagger")
    assert at(lint_plain(tmp_path, code), "DDP809") == [(line_of(code, "# the test"), "warning")]


def test_its_twin_the_base_class_built_all_reduces_first(tmp_path):
    assert at(lint_plain(tmp_path, OVERRIDDEN.replace("{built}", "Base")), "DDP809") == []


# -------------------------------------------------- a collate method that calls a randomizer its module made
COLLATE_METHOD = """
import os, torch, pytorch_lightning as pl
from torch.utils.data import DataLoader
from pysmilesutils.augment import MolRandomizer

class Molecules(pl.LightningDataModule):
    def __init__(self, data):
        super().__init__()
        self.data = data
        self.aug = {aug}

    def train_dataloader(self):
        return DataLoader(self.data, batch_size=32, num_workers=4, collate_fn=self._collate, shuffle=True)  # the loader

    def _collate(self, batch):
        return torch.tensor([len(m) for m in (self.aug(batch) if self.aug is not None else batch)])

class Model(pl.LightningModule):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(1, 1)
    def training_step(self, batch, i):
        return self.lin(batch.float().unsqueeze(1)).pow(2).mean()
    def configure_optimizers(self):
        return torch.optim.Adam(self.parameters())

def main():
    pl.seed_everything(37)
    pl.Trainer(accelerator="gpu", devices=2, strategy="ddp").fit(Model(), Molecules(["CCO"] * 100))

main()
"""


def test_a_collate_method_calling_a_randomizer_draws_in_the_workers(tmp_path):
    code = COLLATE_METHOD.replace("{aug}", "MolRandomizer()")
    assert at(lint_plain(tmp_path, code), "DDP808") == [(line_of(code, "# the loader"), "warning")]


def test_its_twin_a_collate_calling_a_tokenizer_draws_nothing(tmp_path):
    code = COLLATE_METHOD.replace("{aug}", "str.upper")
    assert at(lint_plain(tmp_path, code), "DDP808") == []


# -------------------------------------------------- a save on the side of a switch where Lightning does not run
SWITCHED = """
import os, torch, lightning as L

def save_state(net, out_dir):
    torch.save(net.state_dict(), os.path.join(out_dir, "last.pth"))  # the save

class Runner:
    def __init__(self, lightning):
        self.lightning = lightning
        if lightning:
            self.pl = L.Trainer(devices="auto", strategy="ddp")

    def fit(self, module, net, loader):
        if self.lightning:
            self.pl.fit(module, loader)
        {other}
            for x, y in loader:
                torch.nn.functional.mse_loss(net(x), y).backward()
            save_state(net, "out")

def main(module, net, loader, flag):
    Runner(flag).fit(module, net, loader)

main(None, None, [], True)
"""


def test_a_save_on_the_plain_side_of_the_lightning_switch_runs_in_one_process(tmp_path):
    assert at(lint_plain(tmp_path, SWITCHED.replace("{other}", "else:")), "DDP806") == []


def test_its_twin_after_the_switch_every_rank_saves(tmp_path):
    code = SWITCHED.replace("{other}", "if True:")
    assert at(lint_plain(tmp_path, code), "DDP806") == [(line_of(code, "# the save"), "warning")]


# -------------------------------------------------- a builder of (dataset, loader), and a branch only the "val" call builds
SPLIT_BUILDER = """
import numpy as np, torch, torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, Dataset, DistributedSampler

class Points(Dataset):
    def __init__(self, split):
        self.split = split
    def __len__(self):
        return 128
    def __getitem__(self, i):
        pts = np.ones((8, 3), dtype=np.float32) * i
        if self.split != "val":
            pts = pts * float(torch.rand(1))
        return torch.from_numpy(pts)

def get_loader(split):
    ds = Points(split)
    sampler = DistributedSampler(ds)  # the sampler
    if split == "val":
        loader = DataLoader(ds, batch_size=1, num_workers=4, sampler=sampler)  # the val loader
    else:
        loader = DataLoader(ds, batch_size=8, num_workers=4, sampler=sampler)  # the train loader
    return ds, loader

def main(max_epoch):
    torch.manual_seed(0)
    dist.init_process_group("gloo")
    _, train_loader = get_loader("train")
    _, val_loader = get_loader("val")
    net = DDP(torch.nn.Linear(3, 1))
    epoch = 1
    while epoch <= max_epoch:
        {set_epoch}
        for x in train_loader:
            net(x).sum().backward()
        with torch.no_grad():
            for x in val_loader:
                net(x)
        epoch = epoch + 1

main(10)
"""


def test_a_while_loop_over_epochs_reads_the_builder_s_loader_again_and_again(tmp_path):
    code = SPLIT_BUILDER.replace("{set_epoch}", "pass")
    assert at(lint_plain(tmp_path, code), "DDP804") == [(line_of(code, "# the sampler"), "warning")]


def test_its_twin_with_set_epoch_is_clean(tmp_path):
    code = SPLIT_BUILDER.replace("{set_epoch}", "train_loader.sampler.set_epoch(epoch)")
    assert at(lint_plain(tmp_path, code), "DDP804") == []


def test_only_the_branch_the_train_call_builds_is_a_training_loader(tmp_path):
    code = SPLIT_BUILDER.replace("{set_epoch}", "train_loader.sampler.set_epoch(epoch)")
    assert at(lint_plain(tmp_path, code), "DDP808") == [(line_of(code, "# the train loader"), "warning")]


# -------------------------------------------------- `local_rank != -1` decides where the group is set up
MINUS_ONE = """
import argparse, torch, torch.distributed as dist

def save_model(model, args, out):
    if args.local_rank != -1:
        if args.local_rank == 0:
            torch.save(model.module.state_dict(), out)
    else:
        torch.save(model.state_dict(), out)  # the one-process save

def main():
    p = argparse.ArgumentParser()
    p.add_argument("--local_rank", type=int, default=-1)
    p.add_argument("--nnodes", type=int, default=1)  # a job on several nodes
    args = p.parse_args()
    model = torch.nn.Linear(4, 1)
    if args.local_rank {test} -1:
        model = model
    else:
        dist.init_process_group("gloo")
        model = torch.nn.parallel.DistributedDataParallel(model)
    save_model(model, args, "out.pt")

main()
"""


def test_the_minus_one_side_of_the_launch_switch_is_one_process(tmp_path):
    code = MINUS_ONE.replace("{test}", "==")
    assert [line for line, _ in at(lint_plain(tmp_path, code), "DDP806")] == \
        [line_of(code, "torch.save(model.module")]


def test_its_twin_the_group_set_up_on_that_side_makes_it_every_rank_s(tmp_path):
    code = MINUS_ONE.replace("{test}", "!=")
    assert line_of(code, "# the one-process save") in [line for line, _ in at(lint_plain(tmp_path, code), "DDP806")]


# -------------------------------------------------- a masking collator's draw in an inherited method
COLLATOR = """
import torch, torch.distributed as dist
from torch.utils.data import DataLoader, DistributedSampler, TensorDataset

class Collator:
    def mask(self, ids):
        m = {draw}
        return ids.masked_fill(m, 0)

class ContextCollator(Collator):
    def __call__(self, batch):
        return self.mask(torch.stack([b[0] for b in batch]))

def main():
    torch.manual_seed(42)
    dist.init_process_group("gloo")
    model = torch.nn.parallel.DistributedDataParallel(torch.nn.Embedding(100, 8))
    ds = TensorDataset(torch.randint(1, 100, (64, 12)))
    sampler = DistributedSampler(ds)
    loader = DataLoader(ds, batch_size=8, sampler=sampler, collate_fn=ContextCollator(), num_workers=4)  # the loader
    for epoch in range(3):
        sampler.set_epoch(epoch)
        for ids in loader:
            model(ids).sum().backward()

main()
"""


def test_a_collator_s_bernoulli_mask_draws_in_the_workers(tmp_path):
    code = COLLATOR.replace("{draw}", "torch.bernoulli(torch.full(ids.shape, 0.15)).bool()")
    assert at(lint_plain(tmp_path, code), "DDP808") == [(line_of(code, "# the loader"), "warning")]


def test_its_twin_a_fixed_mask_draws_nothing(tmp_path):
    code = COLLATOR.replace("{draw}", "ids == 3")
    assert at(lint_plain(tmp_path, code), "DDP808") == []


# -------------------------------------------------- an FSDP model's forward on one rank
FSDP_EVAL = """
import torch, torch.distributed as dist
from torch.distributed.fsdp import FullyShardedDataParallel as FSDP, ShardingStrategy

def evaluate(model, loader):
    with torch.no_grad():
        for x in loader:
            model(x)  # the forward

def main(loader, dev, local_rank):
    dist.init_process_group("gloo")
    model = FSDP(torch.nn.Linear(16, 2){strategy})
    for step, x in enumerate(loader):
        model(x).sum().backward()
        if step % 4 == 0 and local_rank == 0:
            evaluate(model, dev)

main([], [], 0)
"""


def test_an_fsdp_forward_on_one_rank_all_gathers_alone(tmp_path):
    code = FSDP_EVAL.replace("{strategy}", "")
    assert at(lint_plain(tmp_path, code), "DDP801") == [(line_of(code, "# the forward"), "error")]


def test_its_twin_an_unsharded_fsdp_gathers_nothing(tmp_path):
    code = FSDP_EVAL.replace("{strategy}", ", sharding_strategy=ShardingStrategy.NO_SHARD")
    assert at(lint_plain(tmp_path, code), "DDP801") == []


# -------------------------------------------------- a Lightning step that returns on an empty part of its batch
EMPTY_PART = """
import torch, pytorch_lightning as pl

class Diffusion(pl.LightningModule):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(4, 1)
    def training_step(self, batch, i):
        {test}
            return
        return self.lin(batch.x).pow(2).mean()
    def configure_optimizers(self):
        return torch.optim.Adam(self.parameters())

pl.Trainer(accelerator="gpu", devices=4, strategy="ddp").fit(Diffusion(), [])
"""


def test_a_step_skipped_on_its_batch_s_empty_edges_is_the_rank_s_own(tmp_path):
    code = EMPTY_PART.replace("{test}", "if batch.edge_index.numel() == 0:  # the test")
    assert at(lint_plain(tmp_path, code), "DDP809") == [(line_of(code, "# the test"), "warning")]


def test_its_twin_a_skip_on_the_epoch_is_every_rank_s(tmp_path):
    code = EMPTY_PART.replace("{test}", "if self.current_epoch > 100:  # the test")
    assert at(lint_plain(tmp_path, code), "DDP809") == []


# -------------------------------------------------- a BatchNorm default the block never builds
NORM_DEFAULT = """
import torch, torch.nn as nn, torch.distributed as dist

class Block(nn.Module):
    def __init__(self, ch, norm=nn.BatchNorm1d):
        super().__init__()
        self.lin = nn.Linear(ch, ch)
        self.norm = {norm}
    def forward(self, x):
        return self.norm(self.lin(x))

def main(rank):
    dist.init_process_group("gloo")
    model = nn.parallel.DistributedDataParallel(Block(4))
    model(torch.randn(2, 4)).sum().backward()
    if rank == 0:
        with torch.no_grad():
            model(torch.randn(2, 4))  # the forward

main(0)
"""


def test_a_norm_class_default_nobody_builds_holds_no_buffer(tmp_path):
    code = NORM_DEFAULT.replace("{norm}", "nn.InstanceNorm1d(ch, affine=True)")
    assert at(lint_plain(tmp_path, code), "DDP801") == []


def test_its_twin_the_default_built_broadcasts_its_running_stats(tmp_path):
    code = NORM_DEFAULT.replace("{norm}", "norm(ch)")
    assert [line for line, _ in at(lint_plain(tmp_path, code), "DDP801")] == [line_of(code, "# the forward")]


# -------------------------------------------------- a random transform built, never applied
UNUSED_TRANSFORM = """
import torch, torch.distributed as dist
from torch.utils.data import DataLoader, Dataset, DistributedSampler
from torchvision.transforms import Compose, Resize, RandomResizedCrop

class Clips(Dataset):
    def __init__(self):
        self.fixed = Compose([Resize(64)])
        self.table = {"train": Compose([RandomResizedCrop(64)]), "test": Compose([Resize(64)])}
    def __len__(self):
        return 256
    def __getitem__(self, i):
        return {apply}(torch.zeros(3, 80, 80) + i)

def main():
    dist.init_process_group("gloo")
    torch.manual_seed(42)
    model = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(3 * 64 * 64, 1))
    ds = Clips()
    sampler = DistributedSampler(ds)
    loader = DataLoader(ds, batch_size=8, sampler=sampler, num_workers=4)  # the loader
    for epoch in range(3):
        sampler.set_epoch(epoch)
        for x in loader:
            model(x.flatten(1)).mean().backward()

main()
"""


def test_a_random_transform_table_nobody_reads_draws_nothing(tmp_path):
    assert at(lint_plain(tmp_path, UNUSED_TRANSFORM.replace("{apply}", "self.fixed")), "DDP808") == []


def test_its_twin_the_table_read_in_the_workers_draws(tmp_path):
    code = UNUSED_TRANSFORM.replace("{apply}", 'self.table["train"]')
    assert at(lint_plain(tmp_path, code), "DDP808") == [(line_of(code, "# the loader"), "warning")]


# -------------------------------------------------- a lambda a library's runner calls
SWEEP = """
import torch, torch.distributed as dist, torch.multiprocessing as mp, wandb
from torch.utils.data import DataLoader, TensorDataset

def train(rank, world):
    dist.init_process_group("gloo", rank=rank, world_size=world)
    model = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(4, 1))
    loader = DataLoader(TensorDataset(torch.randn(64, 4)), batch_size=8, shuffle=True)  # the loader
    for epoch in range(3):
        for (x,) in loader:
            model(x).sum().backward()

def main_train(args):
    mp.spawn(train, args=(2,), nprocs=2)

wandb.agent("sweep", function={handed})
"""


def test_the_functions_a_lambda_handed_to_a_runner_calls_are_reached(tmp_path):
    code = SWEEP.replace("{handed}", "lambda: main_train(None)")
    assert at(lint_plain(tmp_path, code), "DDP802") == [(line_of(code, "# the loader"), "error")]


def test_its_twin_a_lambda_calling_nothing_of_the_script_reaches_nothing(tmp_path):
    code = SWEEP.replace("{handed}", "lambda: print('sweep')")
    assert at(lint_plain(tmp_path, code), "DDP802") == []


# -------------------------------------------------- a parameter rebound before the test is not the caller's
REBOUND_MODE = """
import torch, torch.distributed as dist
from torch.utils.data import DataLoader, DistributedSampler, SequentialSampler, TensorDataset

def build(split, mode="auto"):
    ds = TensorDataset(torch.randn(64, 4))
    {rebind}
    if mode == "train":
        sampler = DistributedSampler(ds)
    else:
        sampler = SequentialSampler(ds)
    loader = DataLoader(ds, batch_size=8, sampler=sampler)  # the loader
    return loader, sampler

def main():
    dist.init_process_group("gloo")
    model = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(4, 1))
    loader, sampler = build("train")
    for epoch in range(3):
        sampler.set_epoch(epoch)
        for (x,) in loader:
            model(x).sum().backward()

main()
"""


def test_a_mode_rebound_from_the_split_reaches_the_distributed_sampler(tmp_path):
    code = REBOUND_MODE.replace("{rebind}", 'mode = split if mode == "auto" else mode')
    assert at(lint_plain(tmp_path, code), "DDP802") == []


def test_its_twin_the_default_left_as_it_is_builds_the_plain_sampler(tmp_path):
    code = REBOUND_MODE.replace("{rebind}", "pass")
    assert at(lint_plain(tmp_path, code), "DDP802") == [(line_of(code, "# the loader"), "error")]


# -------------------------------------------------- an augmentation only a mode no construction picks applies
MODE_ONLY = """
import torch, torch.distributed as dist
from torch.utils.data import DataLoader, Dataset, DistributedSampler
from torchvision.transforms import RandomResizedCrop

class Clips(Dataset):
    def __init__(self, n, mode="pair"):
        self.n, self.mode = n, mode
        self.aug = RandomResizedCrop(64)
    def __len__(self):
        return self.n
    def _video_only(self, i):
        return self.aug(torch.zeros(3, 80, 80) + i)
    def __getitem__(self, i):
        if self.mode == "video":
            return self._video_only(i)
        return torch.zeros(3, 64, 64) + i

def main():
    dist.init_process_group("gloo")
    torch.manual_seed(42)
    model = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(3 * 64 * 64, 1))
    ds = Clips({args})
    sampler = DistributedSampler(ds)
    loader = DataLoader(ds, batch_size=8, sampler=sampler, num_workers=4)  # the loader
    for epoch in range(3):
        sampler.set_epoch(epoch)
        for x in loader:
            model(x.flatten(1)).mean().backward()

main()
"""


def test_an_augmentation_only_an_unchosen_mode_applies_draws_nothing(tmp_path):
    assert at(lint_plain(tmp_path, MODE_ONLY.replace("{args}", "256")), "DDP808") == []


def test_its_twin_the_mode_chosen_draws_in_the_workers(tmp_path):
    code = MODE_ONLY.replace("{args}", '256, mode="video"')
    assert at(lint_plain(tmp_path, code), "DDP808") == [(line_of(code, "# the loader"), "warning")]


# -------------------------------------------------- a loader handed to Lightning's fit under a plain name
FIT_LOADER = """
import torch, pytorch_lightning as pl
from torch.utils.data import DataLoader, Dataset

class Frames(Dataset):
    def __len__(self):
        return 64
    def __getitem__(self, i):
        return torch.rand(4)

class Depth(pl.LightningModule):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(4, 1)
    def training_step(self, batch, i):
        return self.lin(batch).pow(2).mean()
    def configure_optimizers(self):
        return torch.optim.Adam(self.parameters())

pl.seed_everything(1994{workers})
loader = DataLoader(Frames(), batch_size=8, num_workers=4, shuffle=True)  # the loader
pl.Trainer(accelerator="gpu", devices=2, strategy="ddp").fit(Depth(), train_dataloaders=loader)
"""


def test_a_loader_handed_to_fit_is_the_training_loader(tmp_path):
    code = FIT_LOADER.replace("{workers}", "")
    assert at(lint_plain(tmp_path, code), "DDP808") == [(line_of(code, "# the loader"), "warning")]


def test_its_twin_seeded_with_workers_true_puts_the_rank_in(tmp_path):
    assert at(lint_plain(tmp_path, FIT_LOADER.replace("{workers}", ", workers=True")), "DDP808") == []


# -------------------------------------------------- a builder that replaces its plain loader under the launch switch
REPLACED = """
import os, torch, torch.distributed as dist
from torch.utils.data import DataLoader, DistributedSampler, TensorDataset

def make_loader(args):
    tiles = TensorDataset(torch.randn(64, 3))
    loader = DataLoader(tiles, batch_size=4, shuffle=True)  # the plain loader
    sampler = None
    if {test}:
        sampler = DistributedSampler(tiles)
        loader = DataLoader(tiles, sampler=sampler, batch_size=4)
    return loader, sampler

def main(args):
    if torch.cuda.device_count() > 1 and args.ddp == 1:
        dist.init_process_group("nccl")
    model = torch.nn.Linear(3, 1)
    if torch.cuda.device_count() > 1 and args.ddp == 1:
        model = torch.nn.parallel.DistributedDataParallel(model)
    loader, sampler = make_loader(args)
    for epoch in range(3):
        if sampler is not None:
            sampler.set_epoch(epoch)
        for (x,) in loader:
            model(x).sum().backward()

main(None)
"""


def test_a_plain_loader_replaced_under_the_launch_switch_is_the_one_process_s(tmp_path):
    code = REPLACED.replace("{test}", "torch.cuda.device_count() > 1 and args.ddp == 1")
    assert at(lint_plain(tmp_path, code), "DDP802") == []


def test_its_twin_replaced_under_another_test_is_left_on_the_ranks(tmp_path):
    code = REPLACED.replace("{test}", "args.big")
    assert at(lint_plain(tmp_path, code), "DDP802") == [(line_of(code, "# the plain loader"), "error")]


# -------------------------------------------------- an augmentation function the dataset keeps as an attribute
KEPT_FUNCTION = """
import numpy as np, torch, torch.distributed as dist
from torch.utils.data import DataLoader, Dataset, DistributedSampler

def train_augm(sample):
    return np.rot90(sample, np.random.randint(4)).copy()

def valid_augm(sample):
    return sample

class Tiles(Dataset):
    def __init__(self, train):
        self.augm = {kept}
    def __len__(self):
        return 64
    def __getitem__(self, i):
        return torch.from_numpy(self.augm(np.zeros((8, 8), np.float32)))

def main():
    np.random.seed(0)
    torch.manual_seed(0)
    dist.init_process_group("gloo")
    model = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(64, 1))
    ds = Tiles(True)
    sampler = DistributedSampler(ds)
    loader = DataLoader(ds, batch_size=4, sampler=sampler, num_workers=2)  # the loader
    for epoch in range(3):
        sampler.set_epoch(epoch)
        for x in loader:
            model(x.flatten(1)).sum().backward()

main()
"""


def test_a_kept_augmentation_function_draws_in_the_workers(tmp_path):
    code = KEPT_FUNCTION.replace("{kept}", "train_augm if train else valid_augm")
    assert at(lint_plain(tmp_path, code), "DDP808") == [(line_of(code, "# the loader"), "warning")]


def test_its_twin_a_kept_function_that_draws_nothing(tmp_path):
    assert at(lint_plain(tmp_path, KEPT_FUNCTION.replace("{kept}", "valid_augm")), "DDP808") == []


# -------------------------------------------------- a flag a method sets, called on rank 0 only
METHOD_FLAG = """
import torch, torch.distributed as dist

class Trainer:
    def __init__(self):
        self.net = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(4, 1))
        self.early_stop = False
        self.bad = 0
    def step(self, x):
        self.net(x).sum().backward()
    def early_stopping(self, loss):
        self.bad += 1
        if self.bad >= 3:
            self.early_stop = True

def train(rank, model, loader):
    while True:
        for x in loader:
            model.step(x)
            {guard}
                model.early_stopping(float(x.sum()))
        if model.early_stop:  # the test
            break

def main():
    dist.init_process_group("gloo")
    train(dist.get_rank(), Trainer(), [torch.randn(2, 4)] * 4)

main()
"""


def test_a_flag_set_by_a_method_only_rank_0_calls_splits_the_loop(tmp_path):
    code = METHOD_FLAG.replace("{guard}", "if rank == 0:")
    assert at(lint_plain(tmp_path, code), "DDP809") == [(line_of(code, "# the test"), "error")]


def test_its_twin_every_rank_calling_it_decides_alike(tmp_path):
    code = METHOD_FLAG.replace("{guard}", "if True:")
    assert at(lint_plain(tmp_path, code), "DDP809") == []


# -------------------------------------------------- a transform object whose base class applies what the subclass built
BASE_CALL = """
import torch, torch.distributed as dist
from torch.utils.data import DataLoader, Dataset, DistributedSampler
from torchvision import transforms

class Transform:
    def __call__(self, image):
        return self.ops(image)

class TrainTransform(Transform):
    def __init__(self):
        self.ops = transforms.Compose([{ops}])

class Pages(Dataset):
    def __init__(self):
        self.transform = TrainTransform()
    def __len__(self):
        return 64
    def __getitem__(self, i):
        return self.transform(torch.zeros(3, 8, 8) + i)

torch.manual_seed(42)

def main():
    dist.init_process_group("gloo")
    model = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(192, 1))
    ds = Pages()
    sampler = DistributedSampler(ds)
    loader = DataLoader(ds, batch_size=4, sampler=sampler, num_workers=2)  # the loader
    for epoch in range(3):
        sampler.set_epoch(epoch)
        for x in loader:
            model(x.flatten(1)).sum().backward()

main()
"""


def test_a_random_pipeline_a_base_class_applies_draws_in_the_workers(tmp_path):
    code = BASE_CALL.replace("{ops}", "transforms.RandomRotation(10)")
    assert at(lint_plain(tmp_path, code), "DDP808") == [(line_of(code, "# the loader"), "warning")]


def test_its_twin_a_fixed_pipeline_draws_nothing(tmp_path):
    assert at(lint_plain(tmp_path, BASE_CALL.replace("{ops}", "transforms.Resize(8)")), "DDP808") == []


# -------------------------------------------------- a dataset keeping its rank's part, returned as a tuple's item
TUPLE_PART = """
import torch, torch.distributed as dist
from torch.utils.data import DataLoader, Dataset

class RankPart(Dataset):
    def __init__(self, items):
        self.items = {keep}
    def __len__(self):
        return len(self.items)
    def __getitem__(self, i):
        return torch.tensor([float(self.items[i])])

def define_datasets():
    files = list(range(100))
    return RankPart(files), RankPart(files[:10])

def main():
    dist.init_process_group("gloo")
    model = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(1, 1))
    train_set, test_set = define_datasets()
    train_loader = DataLoader(train_set, batch_size=4, shuffle=True)  # the loader
    for epoch in range(3):
        for x in train_loader:
            model(x).sum().backward()

main()
"""


def test_a_dataset_keeping_its_rank_s_part_needs_no_sampler_through_a_tuple(tmp_path):
    code = TUPLE_PART.replace("{keep}", "items[dist.get_rank()::dist.get_world_size()]")
    assert at(lint_plain(tmp_path, code), "DDP802") == []


def test_its_twin_a_dataset_of_every_item_needs_one(tmp_path):
    code = TUPLE_PART.replace("{keep}", "items")
    assert at(lint_plain(tmp_path, code), "DDP802") == [(line_of(code, "# the loader"), "error")]


def test_a_prepared_dataset_shuffled_with_the_rank_s_seed_still_holds_every_item(tmp_path):
    # (it mentions the rank, so it is no unsharded loader; it keeps every item, so it is no shard)
    code = SELF_SHARED.replace("{keep}", "True").replace(
        "Clips(accelerator, list(range(64)))",
        "Clips(accelerator, sorted(range(64), key=lambda i: (i * (7 + accelerator.process_index)) % 64))")
    assert "process_index)) % 64" in code
    assert at(lint_plain(tmp_path, code), "DDP803") == []


def test_where_no_file_pins_it_the_first_place_a_pin_would_be_read_is_named(tmp_path):
    # (the cache keys on it: a requirements.txt added later with a pin is a different answer)
    from ddpdoctor.lint.pins import pinned_major
    script = tmp_path / "deep" / "train.py"
    script.parent.mkdir()
    script.write_text("")
    major, path, read = pinned_major(script, "transformers")
    assert (major, path) == (None, None) and script.parent.resolve() / "requirements.txt" in read
    (script.parent / "requirements.txt").write_text("transformers==4.30.2\n")
    assert pinned_major(script, "transformers")[:2] == (4, script.parent.resolve() / "requirements.txt")
