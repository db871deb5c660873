"""Shapes from session 89 (holdout 126's reading), each with its twin, in our own words."""

from __future__ import annotations

from tests.unit.test_lint_session39_shapes import lint_tree
from tests.unit.test_lint_session61_shapes import _codes, _line

# ------------------------------- a count test whose side never reaches the set-up's own count test
# The launcher spawns one rank per listed GPU where more than one is listed, and calls the worker
# in place otherwise; the worker sets the group up on the `else:` of `if len(gpus) == 1:`. The
# launcher's `else:` (one GPU) never reaches the set-up, so its test is no side of a one-process
# run: the loader built under `if is_mp:` (more than one GPU) is the distributed run's.
SPAWNED = """import argparse
import random

import numpy as np
import torch
import torch.distributed as dist
import torch.multiprocessing as mp
from torch.nn.parallel import DistributedDataParallel
from torch.utils.data import DataLoader, Dataset
from torch.utils.data.distributed import DistributedSampler


class Pairs(Dataset):
    def __len__(self):
        return 1000

    def __getitem__(self, i):
        picked = np.random.choice(10, size=4, replace=False) + i
        return torch.tensor(picked, dtype=torch.float32)


def run(rank, args):
    torch.manual_seed(args.seed)
    np.random.seed(args.seed)
    is_mp = len(args.gpus) > 1
    model = torch.nn.Linear(4, 1)
    if len(args.gpus) == 1:
        model = model.cuda()
    else:
        dist.init_process_group("nccl", rank=rank, world_size=len(args.gpus))
        model = DistributedDataParallel(model.to(rank), [rank])
    data = Pairs()
    if is_mp:
        sampler = DistributedSampler(data, num_replicas=len(args.gpus), rank=rank)
        loader = DataLoader(data, batch_size=8, sampler=sampler, num_workers=4)
    else:
        loader = DataLoader(data, batch_size=8, shuffle=True, num_workers=4)
    for epoch in range(3):
        for x in loader:
            model(x).sum().backward()


def main(args):
    if len(args.gpus) > 1:
        mp.spawn(run, args=(args,), nprocs=len(args.gpus))
    else:
        run(0, args)


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--gpus", nargs="+", type=int, default=[0])
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()
    if len(args.gpus) == 1:
        main(args)
    else:
        main(args)
"""


def test_a_loader_on_the_side_a_contradicting_count_test_leaves_is_the_distributed_runs(tmp_path):
    found = _codes(lint_tree(tmp_path, {"train.py": SPAWNED}), "DDP808")
    assert [f.location.line for f in found] == [_line(SPAWNED, "loader = DataLoader(data, batch_size=8, sampler")]


def test_the_one_gpu_side_of_the_count_test_stays_a_one_process_run(tmp_path):
    # twin: the only loader with workers is the one-GPU side's (the sharded one has none)
    body = SPAWNED.replace("sampler=sampler, num_workers=4)", "sampler=sampler)")
    assert _codes(lint_tree(tmp_path, {"train.py": body}), "DDP808") == []


def test_a_plain_loader_on_the_many_gpu_side_is_unsharded(tmp_path):
    # the same side test decides DDP802: a loader without a sampler where more than one GPU is listed
    body = SPAWNED.replace("""    if is_mp:
        sampler = DistributedSampler(data, num_replicas=len(args.gpus), rank=rank)
        loader = DataLoader(data, batch_size=8, sampler=sampler, num_workers=4)
    else:
        loader = DataLoader(data, batch_size=8, shuffle=True, num_workers=4)""", """    if is_mp:
        loader = DataLoader(data, batch_size=8, shuffle=True)
    else:
        loader = DataLoader(data, batch_size=8, shuffle=True, num_workers=4)""")
    found = _codes(lint_tree(tmp_path, {"train.py": body}), "DDP802")
    assert [(f.location.line, f.severity) for f in found] == [
        (_line(body, "loader = DataLoader(data, batch_size=8, shuffle=True)"), "error")]


# ------------------------------------------ a per-node save under an option no launch turns on
# Local rank 0 of each node saves every epoch (told: the project runs on several nodes), and also
# every 50 iterations under `if args.iter_resume:`, a store_true the launch never gives.
PER_NODE = """import argparse
import os

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--iter-resume", action="store_true", default=False)
    parser.add_argument("--work-dir", default="out")
    args = parser.parse_args()
    dist.init_process_group("nccl")
    local_rank = int(os.environ["LOCAL_RANK"])
    model = DistributedDataParallel(torch.nn.Linear(2, 1).cuda(local_rank))
    for epoch in range(10):
        for i in range(200):
            model(torch.ones(2).cuda(local_rank)).sum().backward()
            if args.iter_resume:
                if (i + 1) % 50 == 0 and local_rank == 0:
                    torch.save(model.state_dict(), os.path.join(args.work_dir, "iter.pth"))
        if local_rank == 0:
            torch.save(model.state_dict(), os.path.join(args.work_dir, f"epoch_{epoch}.pth"))


if __name__ == "__main__":
    main()
"""
NODES_LAUNCH = """#!/bin/bash
torchrun --nnodes 2 --node_rank $NODE_RANK --nproc_per_node 8 train.py --work-dir out{extra}
"""


def test_a_per_node_save_under_an_option_no_launch_gives_is_not_reported(tmp_path):
    found = _codes(lint_tree(tmp_path, {"train.py": PER_NODE, "run.sh": NODES_LAUNCH.format(extra="")}), "DDP806")
    assert [f.location.line for f in found] == [_line(PER_NODE, 'f"epoch_{epoch}.pth"')]


def test_a_per_node_save_under_an_option_the_launch_gives_is_reported(tmp_path):
    # twin: the launch turns the option on
    files = {"train.py": PER_NODE, "run.sh": NODES_LAUNCH.format(extra=" --iter-resume")}
    found = _codes(lint_tree(tmp_path, files), "DDP806")
    assert sorted(f.location.line for f in found) == [_line(PER_NODE, '"iter.pth"'), _line(PER_NODE, 'f"epoch_{epoch}.pth"')]


# ------------------------- the Accelerate config a launch names by a path outside the script's folder
# `accelerate launch --config_file ../../configs/fsdp.yaml train.py`: the FSDP config lies two
# folders up; the main process alone saves the unwrapped model, whose FSDP units all-gather.
ACCELERATE_SAVE = """import torch
from accelerate import Accelerator


def main():
    accelerator = Accelerator()
    model = torch.nn.Linear(2, 1)
    optimizer = torch.optim.AdamW(model.parameters())
    model, optimizer = accelerator.prepare(model, optimizer)
    for epoch in range(3):
        loss = model(torch.ones(2)).sum()
        accelerator.backward(loss)
        optimizer.step()
        if accelerator.is_local_main_process:
            unwrapped = accelerator.unwrap_model(model)
            unwrapped.save_pretrained(f"out/epoch_{epoch}")
        accelerator.wait_for_everyone()


if __name__ == "__main__":
    main()
"""
FSDP_CONFIG = """compute_environment: LOCAL_MACHINE
distributed_type: {kind}
num_processes: 2
"""


def _accelerate_files(kind: str, launches: str) -> dict:
    return {"train/embed/train.py": ACCELERATE_SAVE, "configs/launch.yaml": FSDP_CONFIG.format(kind=kind),
            "configs/zero2.yaml": FSDP_CONFIG.format(kind="DEEPSPEED"), "train/embed/run.sh": launches}


FSDP_LAUNCH = "accelerate launch --config_file ../../configs/launch.yaml train.py\n"


def test_an_fsdp_config_a_launch_names_by_its_path_makes_the_main_process_save_hang(tmp_path):
    found = _codes(lint_tree(tmp_path, _accelerate_files("FSDP", FSDP_LAUNCH), script="train/embed/train.py"), "DDP801")
    assert [(f.location.line, f.severity) for f in found] == [
        (_line(ACCELERATE_SAVE, "unwrapped.save_pretrained("), "error")]


def test_a_multi_gpu_config_a_launch_names_by_its_path_saves_on_the_main_process_alone(tmp_path):
    # twin: the config the launch names is plain DDP
    found = _codes(lint_tree(tmp_path, _accelerate_files("MULTI_GPU", FSDP_LAUNCH), script="train/embed/train.py"),
                   "DDP801")
    assert found == []


def test_one_launch_on_fsdp_among_others_on_deepspeed_still_hangs(tmp_path):
    # the README documents a second launch on DeepSpeed ZeRO-2 (no gather there): the FSDP one hangs
    launches = FSDP_LAUNCH + "accelerate launch --config_file ../../configs/zero2.yaml train.py\n"
    found = _codes(lint_tree(tmp_path, _accelerate_files("FSDP", launches), script="train/embed/train.py"), "DDP801")
    assert [(f.location.line, f.severity) for f in found] == [
        (_line(ACCELERATE_SAVE, "unwrapped.save_pretrained("), "error")]


# ------------------------------------------------ a dataset a LazyConfig Python config names
# `cfg = LazyConfig.load(args.config)` reads configs/train.py, whose `dataset = L(Shards)(...)`
# names a stream that splits its shards by rank; `instantiate(cfg.dataset)` builds it, and the
# loader over it needs no sampler.
LAZY_SCRIPT = """import argparse

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel
from torch.utils.data import DataLoader

from proj.config import LazyConfig, instantiate


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--config", default="configs/train.py")
    args = parser.parse_args()
    cfg = LazyConfig.load(args.config)
    dist.init_process_group("nccl")
    model = DistributedDataParallel(torch.nn.Linear(2, 1))
    loader = DataLoader(instantiate(cfg.dataset), batch_size=8, num_workers=2)
    for x in loader:
        model(x).sum().backward()


if __name__ == "__main__":
    main()
"""
LAZY_LIB = """from hydra.utils import instantiate
from omegaconf import OmegaConf


class LazyCall:
    def __init__(self, target):
        self._target = target

    def __call__(self, **kwargs):
        return OmegaConf.create({"_target_": self._target, **kwargs})


class LazyConfig:
    @staticmethod
    def load(path):
        return OmegaConf.create({})
"""
LAZY_DATA = """import torch
import torch.distributed as dist
from torch.utils.data import Dataset, IterableDataset


class Shards(IterableDataset):
    def __init__(self, files):
        self.files = files[dist.get_rank()::dist.get_world_size()]

    def __iter__(self):
        for f in self.files:
            yield torch.ones(2)


class Rows(Dataset):
    def __len__(self):
        return 100

    def __getitem__(self, i):
        return torch.ones(2)
"""
LAZY_CONFIG = """from proj.config import LazyCall as L
from proj.data import {kind}

dataset = L({kind})(files=["a.tar", "b.tar"])
"""


def _lazy_files(kind: str) -> dict:
    return {"scripts/train.py": LAZY_SCRIPT, "proj/__init__.py": "", "proj/config.py": LAZY_LIB,
            "proj/data.py": LAZY_DATA, "configs/train.py": LAZY_CONFIG.format(kind=kind)}


def test_a_stream_a_lazy_config_names_for_the_loader_takes_no_sampler(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert _codes(lint_tree(tmp_path, _lazy_files("Shards"), script="scripts/train.py"), "DDP802") == []


def test_a_map_style_dataset_a_lazy_config_names_is_unsharded(tmp_path, monkeypatch):
    # twin: the config names a map-style dataset
    monkeypatch.chdir(tmp_path)
    found = _codes(lint_tree(tmp_path, _lazy_files("Rows"), script="scripts/train.py"), "DDP802")
    assert [(f.location.line, f.severity) for f in found] == [
        (_line(LAZY_SCRIPT, "loader = DataLoader(instantiate("), "error")]


# ------------------------------------------ one visible GPU pinned by the script that counts them
# The script pins `CUDA_VISIBLE_DEVICES` to one device in its `__main__` block and spawns a
# process per GPU it sees: one process as shipped, so the unsharded loader is a warning that
# says why (it bites once the pin is edited).
PINNED = """import os

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
from torch.nn.parallel import DistributedDataParallel
from torch.utils.data import DataLoader, TensorDataset


def worker(rank, world):
    dist.init_process_group("nccl", init_method="tcp://127.0.0.1:29500", rank=rank, world_size=world)
    model = DistributedDataParallel(torch.nn.Linear(2, 1).cuda(rank))
    loader = DataLoader(TensorDataset(torch.arange(100.0).view(50, 2)), batch_size=4, shuffle=True)
    for (x,) in loader:
        model(x.cuda(rank)).sum().backward()


if __name__ == "__main__":
    os.environ["CUDA_VISIBLE_DEVICES"] = "0"
    world = torch.cuda.device_count()
    mp.spawn(worker, args=(world,), nprocs=world)
"""


def test_a_loader_of_a_script_that_pins_one_gpu_and_spawns_per_gpu_is_a_warning(tmp_path):
    found = _codes(lint_tree(tmp_path, {"train.py": PINNED}), "DDP802")
    assert [(f.location.line, f.severity) for f in found] == [(_line(PINNED, "loader = DataLoader("), "warning")]
    assert "pins one" in found[0].message and "CUDA_VISIBLE_DEVICES" in found[0].message


def test_two_pinned_gpus_leave_the_unsharded_loader_an_error(tmp_path):
    # twin: two devices stay visible, two processes start
    body = PINNED.replace('"CUDA_VISIBLE_DEVICES"] = "0"', '"CUDA_VISIBLE_DEVICES"] = "0,1"')
    found = _codes(lint_tree(tmp_path, {"train.py": body}), "DDP802")
    assert [(f.location.line, f.severity) for f in found] == [(_line(body, "loader = DataLoader("), "error")]


def test_a_pin_beside_a_fixed_process_count_leaves_the_unsharded_loader_an_error(tmp_path):
    # twin: the count of processes is no count of devices (four ranks share the one GPU)
    body = PINNED.replace("mp.spawn(worker, args=(world,), nprocs=world)", "mp.spawn(worker, args=(4,), nprocs=4)")
    found = _codes(lint_tree(tmp_path, {"train.py": body}), "DDP802")
    assert [(f.location.line, f.severity) for f in found] == [(_line(body, "loader = DataLoader("), "error")]


# ------------------------------------------------------ a file named after the rank's own device
# Every rank saves at the end without a rank test, to a path holding the device the rank trains
# on (`torch.device(f"cuda:{rank}")`, handed to the training function): each rank's own file.
DEVICE_PATH = """import torch
import torch.distributed as dist
import torch.multiprocessing as mp
from torch.nn.parallel import DistributedDataParallel


def train(model, steps, save_dir="", device="cpu"):
    for _ in range(steps):
        model(torch.ones(2, device=device)).sum().backward()
    path = "{}{}_final.pt".format(save_dir, device)
    torch.save(model.state_dict(), path)


def main(rank, world):
    dist.init_process_group("nccl", init_method="tcp://127.0.0.1:29500", rank=rank, world_size=world)
    device = torch.device("cuda:{:d}".format(rank))
    model = DistributedDataParallel(torch.nn.Linear(2, 1).to(device), device_ids=[device])
    train(model, 10, save_dir="out/", device=device)


if __name__ == "__main__":
    mp.spawn(main, args=(4,), nprocs=4)
"""


def test_a_save_path_holding_the_ranks_device_is_each_ranks_own_file(tmp_path):
    assert _codes(lint_tree(tmp_path, {"train.py": DEVICE_PATH}), "DDP806") == []


def test_a_save_path_holding_a_device_every_rank_shares_is_one_file(tmp_path):
    # twin: every rank's device is the same constant one
    body = DEVICE_PATH.replace('torch.device("cuda:{:d}".format(rank))', 'torch.device("cuda")')
    found = _codes(lint_tree(tmp_path, {"train.py": body}), "DDP806")
    assert [f.location.line for f in found] == [_line(body, "torch.save(model.state_dict(), path)")]


# ----------------------------------------- an early stop under a patience no launch turns on
# The validation loss each rank computes from its own shard decides an early stop, but only under
# `if patience > 0:`, handed `args.patience` whose default is -1 (a negative default is a constant
# too) and no launch gives it: the run as launched never decides there.
PATIENCE_OFF = """import argparse

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler


def evaluate(model, loader):
    total = 0.0
    with torch.no_grad():
        for (x,) in loader:
            total += model(x).sum().item()
    return {"loss": total / len(loader)}


def fit(model, train_loader, val_loader, epochs, patience=-1):
    best, stale = float("inf"), 0
    for epoch in range(epochs):
        train_loader.sampler.set_epoch(epoch)
        for (x,) in train_loader:
            model(x).sum().backward()
        metrics = evaluate(model, val_loader)
        improved = metrics["loss"] < best
        if improved:
            best = metrics["loss"]
        if patience > 0:
            stale = 0 if improved else stale + 1
            if stale >= patience:
                break


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--epochs", type=int, default=10)
    parser.add_argument("--patience", type=int, default=-1)
    args = parser.parse_args()
    dist.init_process_group("nccl")
    model = DistributedDataParallel(torch.nn.Linear(2, 1))
    data = TensorDataset(torch.ones(64, 2))
    train_loader = DataLoader(data, batch_size=8, sampler=DistributedSampler(data))
    val_loader = DataLoader(data, batch_size=8, sampler=DistributedSampler(data, shuffle=False))
    fit(model, train_loader, val_loader, args.epochs, patience=args.patience)


if __name__ == "__main__":
    main()
"""


def test_an_early_stop_under_a_patience_no_launch_turns_on_is_not_reported(tmp_path):
    assert _codes(lint_tree(tmp_path, {"train.py": PATIENCE_OFF}), "DDP809") == []


def test_an_early_stop_under_a_patience_on_by_default_is_reported(tmp_path):
    # twin: the patience is on by default
    body = PATIENCE_OFF.replace('"--patience", type=int, default=-1', '"--patience", type=int, default=5')
    found = _codes(lint_tree(tmp_path, {"train.py": body}), "DDP809")
    assert [f.location.line for f in found] == [_line(body, "if stale >= patience:")]


# ---------------------------------------------- a conditional forward whose switch the script pins
# `pred = model(x) if opt.single_gpu else model.module(x)` after `opt.single_gpu = False`: the
# distributed side alone runs, and it goes round the wrapper (DDP810).
PINNED_SWITCH = """import argparse

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--single_gpu", action="store_true")
    opt = parser.parse_args()
    opt.single_gpu = False
    if not opt.single_gpu:
        dist.init_process_group("nccl")
    net = torch.nn.Linear(2, 1)
    net = net if opt.single_gpu else DistributedDataParallel(net)
    optimizer = torch.optim.SGD(net.parameters(), lr=0.1)
    for step in range(100):
        x = torch.ones(4, 2)
        pred = net(x) if opt.single_gpu else net.module(x)
        loss = pred.pow(2).sum()
        loss.backward()
        optimizer.step()


if __name__ == "__main__":
    main()
"""


def test_a_forward_round_the_wrapper_on_the_side_the_script_pins_is_a_bypass(tmp_path):
    found = _codes(lint_tree(tmp_path, {"train.py": PINNED_SWITCH}), "DDP810")
    assert [(f.location.line, f.severity) for f in found] == [(_line(PINNED_SWITCH, "loss.backward()"), "error")]


def test_a_forward_round_the_wrapper_on_a_side_the_option_picks_is_not_proven(tmp_path):
    # twin: the switch is left to the command line (one side goes through the wrapper)
    body = PINNED_SWITCH.replace("    opt.single_gpu = False\n", "")
    assert _codes(lint_tree(tmp_path, {"train.py": body}), "DDP810") == []


# --------------------------------------- a switch read off a module whose globals are constants
# A helper module keeps `distributed = world_size > 1` with `world_size = 1` the only value it is
# ever given (the real count left in a comment); the loader factory is handed `ptu.distributed`,
# so its plain side is the one every rank of the torchrun launch builds.
PTU = """import torch.distributed

distributed = False
world_size = 1


def set_gpu_mode(local_rank):
    global distributed
    global world_size
    world_size = 1  # len(os.environ["CUDA_VISIBLE_DEVICES"].split(","))
    distributed = world_size > 1
"""
FACTORY_TRAIN = """import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler

import ptu


def make_loader(dataset, distributed):
    if distributed:
        return DataLoader(dataset, batch_size=8, sampler=DistributedSampler(dataset))
    return DataLoader(dataset, batch_size=8, shuffle=True)


def main():
    dist.init_process_group("nccl")
    ptu.set_gpu_mode(0)
    model = DistributedDataParallel(torch.nn.Linear(2, 1))
    loader = make_loader(TensorDataset(torch.arange(128.0).view(64, 2)), distributed=ptu.distributed)
    for epoch in range(3):
        for (x,) in loader:
            model(x).sum().backward()


if __name__ == "__main__":
    main()
"""


def test_a_plain_loader_a_module_constant_switch_always_picks_is_unsharded(tmp_path):
    found = _codes(lint_tree(tmp_path, {"train.py": FACTORY_TRAIN, "ptu.py": PTU}), "DDP802")
    assert [(f.location.line, f.severity) for f in found] == [
        (_line(FACTORY_TRAIN, "return DataLoader(dataset, batch_size=8, shuffle=True)"), "error")]


def test_a_module_switch_the_set_up_may_turn_on_leaves_the_plain_loader_to_one_process(tmp_path):
    # twin: the module's world size comes from the environment, so `distributed` may be true
    body = PTU.replace('    world_size = 1  # len(os.environ["CUDA_VISIBLE_DEVICES"].split(","))',
                       '    world_size = int(__import__("os").environ.get("WORLD_SIZE", 1))')
    assert _codes(lint_tree(tmp_path, {"train.py": FACTORY_TRAIN, "ptu.py": body}), "DDP802") == []
