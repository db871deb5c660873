"""Shapes from session 55 (holdout 65), each with its twin, in our own words: a worker_init_fn and a
sampler handed to the loader in a dict of its options, a data object a config factory makes in a
spawned rank, a mode asserted to run as one process, Accelerate's engine named only by a model's
inference code, attack steps that clear the gradients by their own counter, a nested save handed
on by a helper nothing calls, Lightning Fabric accumulating by hand, and a set_epoch on the sampler
the previous pass built."""

from __future__ import annotations

from tests.unit.test_lint_round50_shapes import at, line_of
from tests.unit.test_lint_session39_shapes import lint_tree


def lint_one(tmp_path, code: str, **more: str):
    return lint_tree(tmp_path, {"train.py": code, **more})


# -------------------------------------------------- a loader's options in a dict, worker init bound by partial
OPTIONS_DICT = """
import argparse, random
from functools import partial
import numpy as np
import torch, torch.distributed as dist
from torch.utils.data import DataLoader, Dataset, DistributedSampler
from torch.nn.parallel import DistributedDataParallel as DDP


class Flipped(Dataset):
    def __len__(self):
        return 64

    def __getitem__(self, i):
        x = torch.full((4,), float(i))
        return x.flip(0) if random.random() < 0.5 else x


def init_worker(worker_id, numpy_too=True):
    info = torch.utils.data.get_worker_info()
    if numpy_too:
        np.random.seed(info.seed % (2 ** 32 - 1))


def make_loader(data, workers):
    sampler = DistributedSampler(data, drop_last=True)
    options = {"batch_size": 8, "num_workers": workers, "sampler": sampler,
               "worker_init_fn": partial(init_worker, numpy_too=True)}
    return DataLoader(data, **options)  # the loader


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--seed", type=int, default=3)
    args = parser.parse_args()
    dist.init_process_group("gloo")
    torch.manual_seed({seed})
    model = DDP(torch.nn.Linear(4, 1))
    loader = make_loader(Flipped(), 2)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for epoch in range(2):
        loader.sampler.set_epoch(epoch)
        for x in loader:
            opt.zero_grad()
            model(x).sum().backward()
            opt.step()


main()
"""


def test_a_worker_init_in_the_options_dict_keeps_the_alike_base_seed(tmp_path):
    code = OPTIONS_DICT.replace("{seed}", "args.seed")
    assert at(lint_one(tmp_path, code), "DDP808") == [(line_of(code, "# the loader"), "warning")]


def test_its_twin_seeds_torch_per_rank(tmp_path):
    code = OPTIONS_DICT.replace("{seed}", "args.seed + dist.get_rank()")
    assert at(lint_one(tmp_path, code), "DDP808") == []


# -------------------------------------------------- a data object a config factory makes in a spawned rank
SPAWNED_FACTORY = """
import torch, torch.distributed as dist, torch.multiprocessing as mp
from torch.utils.data import DistributedSampler
from torch.nn.parallel import DistributedDataParallel as DDP
import datasets as module_data
from settings import Config


def worker(gpu, config):
    dist.init_process_group("gloo", init_method="tcp://127.0.0.1:29511", world_size=2, rank=gpu)
    torch.manual_seed({seed})
    data = config.init_obj("data_loader", module_data)
    loader = data.get_train_loader(DistributedSampler(data.train_set))
    model = DDP(torch.nn.Linear(4, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for epoch in range(2):
        loader.sampler.set_epoch(epoch)
        for x in loader:
            opt.zero_grad()
            model(x).sum().backward()
            opt.step()


def main(config):
    mp.spawn(worker, nprocs=2, args=(config,))


if __name__ == "__main__":
    main(Config.from_args({"data_loader": {"type": "Shards", "args": {"workers": 2}}}))
"""

SETTINGS = """
class Config:
    def __init__(self, config):
        self.config = config

    @classmethod
    def from_args(cls, given):
        return cls(dict(given))

    def __getitem__(self, name):
        return self.config[name]

    def init_obj(self, name, module, *args, **kwargs):
        kind = self[name]["type"]
        options = dict(self[name]["args"])
        options.update(kwargs)
        try:
            return getattr(module, kind)(*args, **options)
        except AttributeError:
            return None
"""

DATASETS = """
import random
import torch
from torch.utils.data import DataLoader, Dataset


class Jittered(Dataset):
    def __len__(self):
        return 64

    def __getitem__(self, i):
        return torch.full((4,), float(i)) + random.random()


class Shards:
    def __init__(self, workers):
        self.train_set = Jittered()
        self.options = {"num_workers": workers, "batch_size": 8}

    def get_train_loader(self, sampler=None):
        return DataLoader(self.train_set, **self.options, drop_last=True, sampler=sampler)  # the loader
"""


def test_a_loader_method_of_a_factory_made_object_runs_in_the_spawned_ranks(tmp_path):
    found = lint_one(tmp_path, SPAWNED_FACTORY.replace("{seed}", "0"), **{"datasets.py": DATASETS, "settings.py": SETTINGS})
    assert [(f.location.file.rpartition("/")[2], f.location.line) for f in found if f.code == "DDP808"] == [
        ("datasets.py", line_of(DATASETS, "# the loader"))]


def test_its_twin_seeds_each_spawned_rank_apart(tmp_path):
    found = lint_one(tmp_path, SPAWNED_FACTORY.replace("{seed}", "gpu"), **{"datasets.py": DATASETS, "settings.py": SETTINGS})
    assert at(found, "DDP808") == []


# -------------------------------------------------- a mode asserted to run as one process
ASSERTED = """
import os
import torch, torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP


def cache_all(path):
    rows = [torch.randn(4) for _ in range(8)]
    torch.save(rows, path)  # the cache
    return path


def main(mode):
    world_size = int(os.environ.get("WORLD_SIZE", "1"))
    if world_size > 1:
        dist.init_process_group("gloo")
    if mode == "cutoff":
        {assertion}
        cache_all("rows.pt")
    model = DDP(torch.nn.Linear(4, 1))
    model(torch.randn(2, 4)).sum().backward()


main(os.environ.get("MODE", "cutoff"))
"""


def test_a_mode_asserted_to_run_as_one_process_writes_from_one_process(tmp_path):
    found = lint_one(tmp_path, ASSERTED.replace("{assertion}", "assert world_size == 1"))
    assert at(found, "DDP806") == []


def test_its_twin_runs_the_mode_on_every_rank(tmp_path):
    code = ASSERTED.replace("{assertion}", "pass")
    assert at(lint_one(tmp_path, code), "DDP806") == [(line_of(code, "# the cache"), "warning")]


# -------------------------------------------------- Accelerate's engine named only by a model's generation code
ACCELERATE_SAVE = """
import torch
from accelerate import Accelerator{plugin}
from model import Voice


def main():
    accelerator = Accelerator({plugged})
    model = Voice()
    opt = torch.optim.AdamW(model.parameters())
    model, opt = accelerator.prepare(model, opt)
    for _ in range(3):
        loss = model(torch.randn(2, 4)).sum()
        accelerator.backward(loss)
        opt.step()
        opt.zero_grad()
    accelerator.wait_for_everyone()
    if accelerator.is_main_process:
        accelerator.save_state("final")  # the final state


main()
"""

VOICE = """
import torch.nn as nn


class Voice(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Linear(4, 4)

    def forward(self, x):
        return self.body(x)

    def for_generation(self, use_deepspeed=False):
        if use_deepspeed:
            import deepspeed
            self.engine = deepspeed.init_inference(model=self.body)
"""


def test_a_model_modules_inference_engine_says_nothing_of_the_training_engine(tmp_path):
    found = lint_one(tmp_path, ACCELERATE_SAVE.replace("{plugin}", "").replace("{plugged}", ""), **{"model.py": VOICE})
    assert at(found, "DDP801") == []


def test_its_twin_takes_deepspeeds_plugin_where_it_builds_the_accelerator(tmp_path):
    code = ACCELERATE_SAVE.replace("{plugin}", ", DeepSpeedPlugin").replace(
        "{plugged}", "deepspeed_plugin=DeepSpeedPlugin(zero_stage=2)")
    found = lint_one(tmp_path, code, **{"model.py": VOICE})
    assert at(found, "DDP801") == [(line_of(code, "# the final state"), "warning")]


# -------------------------------------------------- attack steps that clear the gradients by their counter
ATTACK = """
import torch, torch.distributed as dist
from torch.utils.data import DataLoader, TensorDataset, DistributedSampler
from torch.nn.parallel import DistributedDataParallel as DDP

dist.init_process_group("gloo")
model = DDP(torch.nn.Linear(4, 1))
data = TensorDataset(torch.randn(64, 4))
loader = DataLoader(data, batch_size=8, sampler=DistributedSampler(data))
opt = torch.optim.SGD(model.parameters(), lr=0.1)
steps = 3
for epoch in range(2):
    loader.sampler.set_epoch(epoch)
    for (x,) in loader:
        for t in range(steps):
            {clear}
            model(x + 0.01 * t).sum().backward()  # the backward
        opt.step()
        opt.zero_grad()
"""


def test_attack_steps_that_clear_the_gradients_by_their_counter_accumulate_nothing(tmp_path):
    found = lint_one(tmp_path, ATTACK.replace("{clear}", "if t != steps - 1:\n                opt.zero_grad()"))
    assert at(found, "DDP805") == []


def test_its_twin_keeps_every_steps_gradients(tmp_path):
    code = ATTACK.replace("{clear}", "pass")
    assert at(lint_one(tmp_path, code), "DDP805") == [(line_of(code, "# the backward"), "warning")]


# -------------------------------------------------- a nested save handed on by a helper nothing calls
EPOCH_END = """
import torch


def on_epoch_end(save_func):
    save_func()


def save_whole_model(model):
    def save_whole():
        torch.save(model.state_dict(), "whole.pt")  # the whole model
    on_epoch_end(save_whole)
"""

HANDED_SAVE = """
import torch, torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from epochs import on_epoch_end, save_whole_model

dist.init_process_group("gloo")
rank = dist.get_rank()
model = DDP(torch.nn.Linear(4, 1))
for epoch in range(2):
    model(torch.randn(2, 4)).sum().backward()

    def save_func():
        if rank == 0:
            torch.save(model.module.state_dict(), f"epoch{epoch}.pt")
    on_epoch_end(save_func)
{more}
"""


def test_a_nested_save_only_an_uncalled_helper_hands_on_never_runs(tmp_path):
    found = lint_one(tmp_path, HANDED_SAVE.replace("{more}", ""), **{"epochs.py": EPOCH_END})
    assert at(found, "DDP806") == []


def test_its_twin_calls_that_helper_too(tmp_path):
    found = lint_one(tmp_path, HANDED_SAVE.replace("{more}", "save_whole_model(model.module)"),
                     **{"epochs.py": EPOCH_END})
    assert [(f.location.file.rpartition("/")[2], f.location.line) for f in found if f.code == "DDP806"] == [
        ("epochs.py", line_of(EPOCH_END, "# the whole model"))]


# -------------------------------------------------- Lightning Fabric accumulating by hand
FABRIC = """
import torch
import lightning as L


def main(accumulate=4):
    fabric = L.Fabric(accelerator="cpu", devices=2, strategy="ddp")
    fabric.launch()
    model = torch.nn.Linear(4, 1)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    model, opt = fabric.setup(model, opt)
    data = torch.utils.data.TensorDataset(torch.randn(64, 4))
    loader = fabric.setup_dataloaders(torch.utils.data.DataLoader(data, batch_size=8))
    for i, (x,) in enumerate(loader):
        stepping = (i + 1) % accumulate == 0
        {body}
        if stepping:
            opt.step()
            opt.zero_grad()


main()
"""


def test_fabric_backward_on_every_batch_with_a_step_every_k_syncs_every_time(tmp_path):
    code = FABRIC.replace("{body}", "fabric.backward(model(x).sum())  # the backward")
    assert at(lint_one(tmp_path, code), "DDP805") == [(line_of(code, "# the backward"), "warning")]


def test_its_twin_skips_the_sync_with_no_backward_sync(tmp_path):
    code = FABRIC.replace("{body}", "with fabric.no_backward_sync(model, enabled=not stepping):\n"
                                    "            fabric.backward(model(x).sum())")
    assert at(lint_one(tmp_path, code), "DDP805") == []


# -------------------------------------------------- set_epoch on the sampler the previous pass built
REBUILT = """
import torch, torch.distributed as dist
from torch.utils.data import DataLoader, TensorDataset, DistributedSampler
from torch.nn.parallel import DistributedDataParallel as DDP


def build_sampler(data):
    return DistributedSampler(data, shuffle=True)  # the sampler


dist.init_process_group("gloo")
model = DDP(torch.nn.Linear(4, 1))
data = TensorDataset(torch.randn(64, 4))
sampler = build_sampler(data)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for epoch in range(3):
    {before}
    sampler = build_sampler(data)
    {after}
    loader = DataLoader(data, batch_size=8, sampler=sampler)
    for (x,) in loader:
        opt.zero_grad()
        model(x).sum().backward()
        opt.step()
"""


def test_set_epoch_before_the_pass_builds_its_sampler_sets_the_old_one(tmp_path):
    code = REBUILT.replace("{before}", "sampler.set_epoch(epoch)").replace("{after}", "pass")
    assert at(lint_one(tmp_path, code), "DDP804") == [(line_of(code, "# the sampler"), "warning")]


def test_its_twin_sets_the_epoch_of_the_sampler_the_pass_built(tmp_path):
    code = REBUILT.replace("{before}", "pass").replace("{after}", "sampler.set_epoch(epoch)")
    assert at(lint_one(tmp_path, code), "DDP804") == []
