"""Shapes from session 77 (the shapes holdout 107 left, then holdout 108's reading after its
unread score), each with its twin, in our own words."""

from __future__ import annotations

from tests.unit.test_lint_session39_shapes import lint_tree
from tests.unit.test_lint_session61_shapes import _codes, _line

# -------------------------------------------------- a switch read from a JSON parameters file
# the options are merged with a JSON file each launch names (`--params_file cfg/a.json`, then
# `vars(args).update(json.load(f))`); every file says "fp16": "", so the run as launched takes the
# plain backward: DDP805 names it, not the amp side's
PARAMS_MERGED = """import argparse
import json
from argparse import Namespace

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP


def train(args, net, opt, batches):
    for step, x in enumerate(batches):
        loss = net(x).sum() / args.accumulate
        if args.fp16:
            with amp_scale(loss, opt) as scaled:
                scaled.backward()
        else:
            loss.backward()
        if (step + 1) % args.accumulate == 0:
            opt.step()
            opt.zero_grad()


def amp_scale(loss, opt):
    raise NotImplementedError


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--params_file", type=str)
    args = parser.parse_args()
    with open(args.params_file) as f:
        merged = vars(args)
        merged.update(json.load(f))
        args = Namespace(**merged)
    dist.init_process_group("gloo")
    net = DDP(torch.nn.Linear(1, 1))
    train(args, net, torch.optim.SGD(net.parameters(), lr=0.1), [torch.ones(2, 1)] * 8)


if __name__ == "__main__":
    main()
"""
LAUNCHES = """#!/bin/bash
torchrun --nproc_per_node 4 train.py --params_file cfg/short.json
torchrun --nproc_per_node 4 train.py --params_file cfg/long.json
"""
SHORT = '{"task": "short", "accumulate": 4, "fp16": "", "optim": {"lr": 0.1}}\n'
LONG = '{"task": "long", "accumulate": 8, "fp16": "", "optim": {"lr": 0.01}}\n'


def test_a_switch_every_launched_parameters_file_turns_off_settles_the_backward_ddp805_names(tmp_path):
    found = _codes(lint_tree(tmp_path, {"train.py": PARAMS_MERGED, "run.sh": LAUNCHES, "cfg/short.json": SHORT,
                                        "cfg/long.json": LONG}), "DDP805")
    assert [f.location.line for f in found] == [_line(PARAMS_MERGED, "loss.backward()")]


def test_its_twin_where_one_launched_file_turns_it_on_names_the_first_backward(tmp_path):
    found = _codes(lint_tree(tmp_path, {"train.py": PARAMS_MERGED, "run.sh": LAUNCHES, "cfg/short.json": SHORT,
                                        "cfg/long.json": LONG.replace('"fp16": ""', '"fp16": "O1"')}), "DDP805")
    assert [f.location.line for f in found] == [_line(PARAMS_MERGED, "scaled.backward()")]


# -------------------------------------------------- a JSON config over the declared default
# UNITER's parse_with_config: `--config pretrain.json` sets the options the command line leaves
# alone, over their declared defaults (`--accum` declared 16, every launched file says 1); a
# launched file json.load refuses (a trailing comma) stops its run before any training
UNITER = """import argparse
import json

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP


def parse_with_config(parser):
    args = parser.parse_args()
    if args.config is not None:
        given = json.load(open(args.config))
        for key, value in given.items():
            setattr(args, key, value)
    return args


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--accum", type=int, default=16)
    parser.add_argument("--config", required=True)
    opts = parse_with_config(parser)
    dist.init_process_group("gloo")
    net = DDP(torch.nn.Linear(1, 1))
    opt = torch.optim.SGD(net.parameters(), lr=0.1)
    for step, x in enumerate([torch.ones(2, 1)] * 8):
        loss = net(x).sum()
        loss.backward()
        if (step + 1) % opts.accum == 0:
            opt.step()
            opt.zero_grad()


if __name__ == "__main__":
    main()
"""
UNITER_RUNS = """torchrun --nproc_per_node 2 train.py --config cfg/a.json
torchrun --nproc_per_node 2 train.py --config cfg/b.json
"""


def test_a_launched_json_config_sets_an_option_over_its_declared_default(tmp_path):
    found = _codes(lint_tree(tmp_path, {"train.py": UNITER, "run.bash": UNITER_RUNS,
                                        "cfg/a.json": '{"accum": 1, "lr": 0.1}\n',
                                        "cfg/b.json": '{"accum": 1, "lr": 0.2,}\n'}), "DDP805")
    assert found == []


def test_its_twin_whose_launched_config_accumulates_is_ddp805(tmp_path):
    found = _codes(lint_tree(tmp_path, {"train.py": UNITER, "run.bash": UNITER_RUNS,
                                        "cfg/a.json": '{"accum": 4, "lr": 0.1}\n',
                                        "cfg/b.json": '{"accum": 1, "lr": 0.2,}\n'}), "DDP805")
    assert [f.location.line for f in found] == [_line(UNITER, "loss.backward()")]


# -------------------------------------------------- a model builder unpacked from a table
# `net, weights = table[arch]; model = net(weights=weights)`: the builder is one of the table's,
# which the options pick; most of them are BatchNorm networks, so the DDP model broadcasts
# buffers, and rank 0's evaluation forward through it with gradients off is DDP801's warning
TABLED = """import argparse

import torch
import torch.distributed as dist
import torchvision.models as models
from torch.nn.parallel import DistributedDataParallel as DDP

TABLE = {
    "resnet18": (models.resnet18, 512),
    "resnet50": (models.resnet50, 2048),
    "shufflenet": (models.shufflenet_v2_x1_0, 1024),
    "vit": (models.vit_b_16, 768),
}


def build(arch):
    net, width = TABLE[arch]
    return net(num_classes=width)


@torch.no_grad()
def evaluate(model, batches):
    model.eval()
    for x in batches:
        model(x)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--arch", default="resnet50")
    args = parser.parse_args()
    dist.init_process_group("gloo")
    model = DDP(build(args.arch))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    batches = [torch.ones(2, 3, 32, 32)] * 4
    for epoch in range(3):
        model.train()
        for x in batches:
            opt.zero_grad()
            model(x).sum().backward()
            opt.step()
        if dist.get_rank() == 0:
            evaluate(model, batches)


if __name__ == "__main__":
    main()
"""


def test_a_builder_unpacked_from_a_table_of_mostly_batchnorm_networks_holds_buffers(tmp_path):
    found = _codes(lint_tree(tmp_path, {"train.py": TABLED}), "DDP801")
    assert [(f.severity, f.location.line) for f in found] == [("warning", _line(TABLED, "        model(x)"))]


def test_its_twin_whose_table_holds_mostly_transformers_holds_none(tmp_path):
    twin = TABLED.replace("models.resnet18,", "models.vit_l_16,").replace("models.resnet50,", "models.swin_t,")
    assert _codes(lint_tree(tmp_path, {"train.py": twin}), "DDP801") == []


# -------------------------------------------------- a Hydra model under a decorator of the project's
# `@main_distributed(config_path="conf", config_name="config")` wraps hydra.main; the model is
# `instantiate(cfg.model)` (a partial), its class named by `conf/model/*.yaml`: a positional
# encoding kept with register_buffer, so rank 0's plot forward through DDP is DDP801's warning
HYDRA_MAIN = """import functools

import hydra
import torch
import torch.distributed as dist
from hydra.utils import instantiate
from torch.nn.parallel import DistributedDataParallel as DDP


def main_distributed(config_path, config_name):
    def wrap(fn):
        @hydra.main(config_path=config_path, config_name=config_name, version_base=None)
        @functools.wraps(fn)
        def run(cfg):
            dist.init_process_group("gloo", rank=cfg.rank, world_size=cfg.world_size)
            return fn(cfg)
        return run
    return wrap


@main_distributed(config_path="conf", config_name="config")
def main(cfg):
    partial = instantiate(cfg.model)
    model = DDP(partial(width=8))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for step in range(4):
        opt.zero_grad()
        model(torch.ones(2, 8)).sum().backward()
        opt.step()
        if cfg.rank == 0:
            with torch.no_grad():
                model(torch.ones(1, 8))


if __name__ == "__main__":
    main()
"""
HYDRA_NETS = """import torch


class Encoded(torch.nn.Module):
    def __init__(self, width):
        super().__init__()
        self.register_buffer("pe", torch.zeros(width))
        self.proj = torch.nn.Linear(width, width)

    def forward(self, x):
        return self.proj(x + self.pe)
"""
HYDRA_FILES = {"conf/config.yaml": "defaults:\n  - model: encoded\nrank: 0\nworld_size: 2\n",
               "conf/model/encoded.yaml": "_target_: nets.Encoded\n_partial_: true\n"}


def test_a_hydra_partial_of_a_class_with_buffers_under_a_projects_decorator_is_ddp801(tmp_path):
    found = _codes(lint_tree(tmp_path, {"train.py": HYDRA_MAIN, "nets.py": HYDRA_NETS, **HYDRA_FILES}), "DDP801")
    assert [(f.severity, f.location.line) for f in found] == [("warning", _line(HYDRA_MAIN, "model(torch.ones(1, 8))"))]


def test_its_twin_whose_configured_class_keeps_no_buffer(tmp_path):
    plain = HYDRA_NETS.replace('self.register_buffer("pe", torch.zeros(width))', "self.pe = 0.0")
    assert _codes(lint_tree(tmp_path, {"train.py": HYDRA_MAIN, "nets.py": plain, **HYDRA_FILES}), "DDP801") == []


# -------------------------------------------------- an early stop read through a property
# `stopper.step(val_loss)` with this rank's own validation loss, the counter the method steps
# under a comparison with it, and `if stopper.stop: break` where `stop` is a property reading
# that counter: a rank can leave the loop alone (DDP809); the twin all-reduces the loss first
STOPPER = """import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP


class EarlyStopping:
    def __init__(self, patience=3):
        self.patience = patience
        self.best = float("inf")
        self.bad_epochs = 0

    def step(self, metric):
        current = metric
        if current < self.best:
            self.best = current
            self.bad_epochs = 0
        else:
            self.bad_epochs += 1

    @property
    def stop(self):
        return self.bad_epochs > self.patience


def validate(model, batches):
    total = 0.0
    with torch.no_grad():
        for x in batches:
            total += model(x).sum().item()
    return total / len(batches)


def main():
    dist.init_process_group("gloo")
    model = DDP(torch.nn.Linear(1, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    stopper = EarlyStopping()
    batches = [torch.ones(2, 1)] * 4
    for epoch in range(100):
        for x in batches:
            opt.zero_grad()
            model(x).sum().backward()
            opt.step()
        val_loss = validate(model, batches)
        stopper.step(val_loss)
        if stopper.stop:
            break


if __name__ == "__main__":
    main()
"""


def test_an_early_stop_property_over_a_counter_stepped_by_the_ranks_own_loss_is_ddp809(tmp_path):
    found = _codes(lint_tree(tmp_path, {"train.py": STOPPER}), "DDP809")
    assert [f.location.line for f in found] == [_line(STOPPER, "if stopper.stop:")]


def test_its_twin_steps_the_stopper_with_the_all_reduced_loss(tmp_path):
    twin = STOPPER.replace("        stopper.step(val_loss)\n", "        shared = torch.tensor(val_loss)\n"
                           "        dist.all_reduce(shared)\n        stopper.step(shared.item())\n")
    assert _codes(lint_tree(tmp_path, {"train.py": twin}), "DDP809") == []


# -------------------------------------------------- a trainer a YAML's `target:` picks
# CompVis' `instantiate_from_config(cfg.trainer)` then `trainer.train(loader)`: the trainer
# classes the configs beside the script name run (their Accelerator is the run's); every rank
# seeds alike and the configured dataset draws in 8 workers (DDP808)
COMPVIS = """import argparse
import importlib
import random

import torch
from omegaconf import OmegaConf
from torch.utils.data import DataLoader


def get_obj_from_str(string):
    module, cls = string.rsplit(".", 1)
    return getattr(importlib.import_module(module), cls)


def instantiate_from_config(config):
    return get_obj_from_str(config["target"])(**config.get("params", dict()))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("-c", "--cfg", default="configs/train.yaml")
    parser.add_argument("--seed", type=int, default=42)
    opt = parser.parse_args()
    config = OmegaConf.load(opt.cfg)
    random.seed(opt.seed)
    torch.manual_seed(opt.seed)
    data = instantiate_from_config(config.data)
    train_loader = DataLoader(data, batch_size=4, shuffle=True, num_workers=config.data.workers)
    trainer = instantiate_from_config(config.trainer)
    trainer.train(train_loader)


if __name__ == "__main__":
    main()
"""
COMPVIS_TRAINER = """import torch
from accelerate import Accelerator


class Trainer:
    def train(self, loader):
        accelerator = Accelerator()
        model = torch.nn.Linear(4, 1)
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        model, opt, loader = accelerator.prepare(model, opt, loader)
        for x in loader:
            opt.zero_grad()
            accelerator.backward(model(x).sum())
            opt.step()
"""
COMPVIS_DATA = """import random

import torch
from torch.utils.data import Dataset


class Pairs(Dataset):
    def __len__(self):
        return 100

    def __getitem__(self, i):
        a, b = random.sample(range(10), 2)
        return torch.tensor([i, a, b, 0.0])
"""
COMPVIS_FILES = {"trainers/__init__.py": "", "trainers/base.py": COMPVIS_TRAINER,
                 "datasets_own/__init__.py": "", "datasets_own/pairs.py": COMPVIS_DATA,
                 "configs/train.yaml": "trainer:\n  target: trainers.base.Trainer\ndata:\n"
                                       "  target: datasets_own.pairs.Pairs\n  workers: 8\n",
                 "run.sh": "accelerate launch --num_processes 2 train.py -c configs/train.yaml\n"}


def test_a_trainer_a_configs_target_names_runs_and_its_loaders_workers_are_ddp808(tmp_path):
    found = _codes(lint_tree(tmp_path, {"train.py": COMPVIS, **COMPVIS_FILES}), "DDP808")
    assert [f.location.line for f in found] == [_line(COMPVIS, "train_loader = DataLoader(")]


def test_its_twin_seeds_each_process_with_its_rank(tmp_path):
    twin = COMPVIS.replace("    torch.manual_seed(opt.seed)\n",
                           "    torch.manual_seed(opt.seed + int(os.environ['RANK']))\n").replace(
        "import random\n", "import os\nimport random\n", 1).replace("    random.seed(opt.seed)\n", "")
    assert _codes(lint_tree(tmp_path, {"train.py": twin, **COMPVIS_FILES}), "DDP808") == []


# -------------------------------------------------- an accumulation count of a star-imported setting
# `from config import *` with `ACCUMULATION_STEPS = 1`: the batch is cut into pieces of its own
# size (`split(batch, BATCH_SIZE // ACCUMULATION_STEPS)`), one piece, one backward a step
STARRED = """import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from config import *


def split_into(batch, size):
    return [batch[i:i + size] for i in range(0, len(batch), size)]


def main():
    dist.init_process_group("gloo")
    model = DDP(torch.nn.Linear(1, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for batch in [torch.ones(BATCH_SIZE, 1)] * 4:
        for piece in split_into(batch, BATCH_SIZE // ACCUMULATION_STEPS):
            loss = model(piece).sum() / ACCUMULATION_STEPS
            loss.backward()
        opt.step()
        opt.zero_grad()


if __name__ == "__main__":
    main()
"""


def test_pieces_of_the_batchs_size_over_a_star_imported_count_of_one_accumulate_nothing(tmp_path):
    found = _codes(lint_tree(tmp_path, {"train.py": STARRED, "config.py": "BATCH_SIZE = 8\nACCUMULATION_STEPS = 1\n"}),
                   "DDP805")
    assert found == []


def test_its_twin_with_a_count_of_four_is_ddp805(tmp_path):
    found = _codes(lint_tree(tmp_path, {"train.py": STARRED, "config.py": "BATCH_SIZE = 8\nACCUMULATION_STEPS = 4\n"}),
                   "DDP805")
    assert [f.location.line for f in found] == [_line(STARRED, "loss.backward()")]


# -------------------------------------------------- a file list shuffled in place, seeded by rank
# `random.seed(0 + rank)` then `random.shuffle(files)` and `Files(files)` under a DistributedSampler:
# each rank shards its own order of the list (DDP803)
SHUFFLED = """import os
import random

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, Dataset
from torch.utils.data.distributed import DistributedSampler


class Files(Dataset):
    def __init__(self, files):
        self.files = files

    def __len__(self):
        return len(self.files)

    def __getitem__(self, i):
        return torch.tensor([float(len(self.files[i]))])


rank = int(os.environ["RANK"])
random.seed(0 + rank)
dist.init_process_group("gloo")
files = [f"f{i}.bin" for i in range(100)]
random.shuffle(files)
train_set = Files(files)
sampler = DistributedSampler(train_set)
loader = DataLoader(train_set, batch_size=4, sampler=sampler)
model = DDP(torch.nn.Linear(1, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for epoch in range(3):
    sampler.set_epoch(epoch)
    for x in loader:
        opt.zero_grad()
        model(x).sum().backward()
        opt.step()
"""


def test_a_list_shuffled_in_place_by_a_rank_seeded_stream_then_sharded_is_ddp803(tmp_path):
    found = _codes(lint_tree(tmp_path, {"train.py": SHUFFLED}), "DDP803")
    assert [f.location.line for f in found] == [_line(SHUFFLED, "sampler = DistributedSampler(")]


def test_its_twin_seeds_every_rank_alike(tmp_path):
    twin = SHUFFLED.replace("random.seed(0 + rank)", "random.seed(0)")
    assert _codes(lint_tree(tmp_path, {"train.py": twin}), "DDP803") == []


# -------------------------------------------------- per-key all_reduces over keys kept where present
# a fixed list of modes, each kept only where this rank's share drew some of it (`if not
# mask.any(): continue`), then one all_reduce per kept key: ranks that drew different modes run
# different numbers of them (DDP807); the twin keeps every mode (an empty mean is 0)
MODES = """import torch
import torch.distributed as dist


def report(types, scores, modes):
    per_mode = {}
    for i, mode in enumerate(modes):
        mask = types == i
        if not mask.any():
            continue
        per_mode[mode] = scores[mask].mean()
    for mode in per_mode.keys():
        dist.all_reduce(per_mode[mode])
    return per_mode


def main():
    dist.init_process_group("gloo")
    types = torch.randint(0, 3, (8,))
    print(report(types, torch.rand(8), ["a", "b", "c"]))


if __name__ == "__main__":
    main()
"""


def test_per_key_all_reduces_over_keys_kept_only_where_the_data_has_them_are_ddp807(tmp_path):
    found = _codes(lint_tree(tmp_path, {"train.py": MODES}), "DDP807")
    assert [f.location.line for f in found] == [_line(MODES, "dist.all_reduce(per_mode[mode])")]


def test_its_twin_keeps_every_key(tmp_path):
    twin = MODES.replace("        if not mask.any():\n            continue\n", "")
    assert _codes(lint_tree(tmp_path, {"train.py": twin}), "DDP807") == []


def test_a_batch_cut_into_a_count_of_one_chunks_accumulates_nothing(tmp_path):
    chunked = STARRED.replace("split_into(batch, BATCH_SIZE // ACCUMULATION_STEPS)", "batch.chunk(ACCUMULATION_STEPS)")
    found = _codes(lint_tree(tmp_path, {"train.py": chunked, "config.py": "BATCH_SIZE = 8\nACCUMULATION_STEPS = 1\n"}),
                   "DDP805")
    assert found == []


def test_its_twin_cut_into_four_chunks_is_ddp805(tmp_path):
    chunked = STARRED.replace("split_into(batch, BATCH_SIZE // ACCUMULATION_STEPS)", "batch.chunk(ACCUMULATION_STEPS)")
    found = _codes(lint_tree(tmp_path, {"train.py": chunked, "config.py": "BATCH_SIZE = 8\nACCUMULATION_STEPS = 4\n"}),
                   "DDP805")
    assert [f.location.line for f in found] == [_line(chunked, "loss.backward()")]


def test_a_parameters_file_nested_past_the_decoders_recursion_is_read_as_no_json(tmp_path):
    # (a hostile or broken file: `{"a": {"a": ...}}` 40,000 deep, under the 256 KB a config file
    # may have, is no run's parameters; the declared default stands and the lint does not fail)
    deep = '{"a":' * 40000 + "1" + "}" * 40000
    assert len(deep) < 256_000
    found = _codes(lint_tree(tmp_path, {"train.py": UNITER, "run.bash": UNITER_RUNS, "cfg/a.json": deep,
                                        "cfg/b.json": '{"accum": 1, "lr": 0.2,}\n'}), "DDP805")
    assert [f.location.line for f in found] == [_line(UNITER, "loss.backward()")]
