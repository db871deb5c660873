"""Shapes from session 86 (holdouts 118-120's leftovers and holdout 121's reading), each with
its twin, in our own words."""

from __future__ import annotations

from tests.unit.test_lint_session39_shapes import lint_tree
from tests.unit.test_lint_session61_shapes import _codes, _line

# -------------------------------------------------- the device index handed as the rank
# The spawned worker builds its CUDA device from the spawn index and the runner hands
# `self.device.index` to init_process_group as rank=; `device.index == 0`, read from the
# parameter the runner keeps as `self.device`, is that same rank 0.
DEVICE_RANK = """import torch
import torch.multiprocessing as mp
from torch.distributed import init_process_group
from torch.nn.parallel import DistributedDataParallel


class Runner:
    def __init__(self, device, n_gpus):
        self.device = device
        self.n_gpus = n_gpus
        self.is_main = device.index is None or device.index == 0
        if n_gpus > 1:
            init_process_group("gloo", "tcp://localhost:29511", world_size=n_gpus, rank=self.device.index)
        self.net = torch.nn.Linear(4, 4)
        self.ddp = DistributedDataParallel(self.net) if n_gpus > 1 else self.net

    def run(self):
        for epoch in range(3):
            self.ddp(torch.randn(2, 4)).sum().backward()
            self.save()

    def save(self):
        if self.is_main:
            torch.save(self.net.state_dict(), "ckpt.pt")


def start(index, n):
    runner = Runner(torch.device("cuda:%d" % index), n)
    runner.run()


if __name__ == "__main__":
    n = torch.cuda.device_count()
    if n > 1:
        mp.spawn(start, (n,), n)
    else:
        start(0, 1)
"""
# twin: the rank is handed apart; the device's index is the GPU within a node (two a node)
DEVICE_NOT_RANK = """import torch
import torch.multiprocessing as mp
from torch.distributed import init_process_group
from torch.nn.parallel import DistributedDataParallel


class Runner:
    def __init__(self, device, n_gpus, rank):
        self.device = device
        self.n_gpus = n_gpus
        self.is_main = device.index is None or device.index == 0
        if n_gpus > 1:
            init_process_group("gloo", "tcp://localhost:29511", world_size=n_gpus, rank=rank)
        self.net = torch.nn.Linear(4, 4)
        self.ddp = DistributedDataParallel(self.net) if n_gpus > 1 else self.net

    def run(self):
        for epoch in range(3):
            self.ddp(torch.randn(2, 4)).sum().backward()
            self.save()

    def save(self):
        if self.is_main:
            torch.save(self.net.state_dict(), "ckpt.pt")


def start(index, n):
    runner = Runner(torch.device("cuda:%d" % (index % 2)), n, index)
    runner.run()


if __name__ == "__main__":
    n = torch.cuda.device_count()
    if n > 1:
        mp.spawn(start, (n,), n)
    else:
        start(0, 1)
"""


def test_the_kept_device_index_handed_as_rank_is_the_rank(tmp_path):
    assert not _codes(lint_tree(tmp_path, {"train.py": DEVICE_RANK}), "DDP806")


def test_a_device_index_not_handed_as_rank_is_no_rank_test(tmp_path):
    found = _codes(lint_tree(tmp_path, {"train.py": DEVICE_NOT_RANK}), "DDP806")
    assert [f.location.line for f in found] == [_line(DEVICE_NOT_RANK, "torch.save(")]


# -------------------------------------------------- a dispatcher's branch no caller's constant takes
# The script calls its copy of a launcher dispatcher with the constant "pytorch"; the SLURM
# set-up beside it (which names the node list) never runs, so it says nothing of several nodes
# and `local_rank == 0` is rank 0 of a one-node job.
DISPATCH_SETUP = """import os

import torch
import torch.distributed as dist


def start_group(launcher, backend="gloo"):
    if launcher == "pytorch":
        _from_env(backend)
    elif launcher == "slurm":
        _from_slurm(backend)
    else:
        raise ValueError(launcher)


def _from_env(backend):
    dist.init_process_group(backend)


def _from_slurm(backend):
    proc = int(os.environ["SLURM_PROCID"])
    hosts = os.environ["SLURM_NODELIST"]
    os.environ["RANK"] = str(proc)
    os.environ["LOCAL_RANK"] = str(proc % torch.cuda.device_count())
    os.environ["MASTER_ADDR"] = hosts.split(",")[0]
    dist.init_process_group(backend)
"""
DISPATCH_CONST = """import argparse
import os

import torch
from torch.nn.parallel import DistributedDataParallel as DDP

from dist_setup import start_group


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--local_rank", type=int, default=int(os.environ.get("LOCAL_RANK", 0)))
    args = parser.parse_args()
    start_group("pytorch")
    model = DDP(torch.nn.Linear(4, 4))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for step in range(10):
        model(torch.randn(2, 4)).sum().backward()
        opt.step()
        opt.zero_grad()
        if args.local_rank == 0:
            torch.save(model.module.state_dict(), "last.pt")


if __name__ == "__main__":
    main()
"""
# twin: the launcher is an option that may name SLURM: the node list is on the way
DISPATCH_OPTION = """import argparse
import os

import torch
from torch.nn.parallel import DistributedDataParallel as DDP

from dist_setup import start_group


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--local_rank", type=int, default=int(os.environ.get("LOCAL_RANK", 0)))
    parser.add_argument("--launcher", choices=["pytorch", "slurm"], default="pytorch")
    args = parser.parse_args()
    start_group(args.launcher)
    model = DDP(torch.nn.Linear(4, 4))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for step in range(10):
        model(torch.randn(2, 4)).sum().backward()
        opt.step()
        opt.zero_grad()
        if args.local_rank == 0:
            torch.save(model.module.state_dict(), "last.pt")


if __name__ == "__main__":
    main()
"""


def test_a_set_up_the_callers_constant_rules_out_names_no_nodes(tmp_path):
    found = lint_tree(tmp_path, {"dist_setup.py": DISPATCH_SETUP, "train.py": DISPATCH_CONST})
    assert not _codes(found, "DDP806")


def test_a_set_up_an_option_may_pick_names_the_nodes(tmp_path):
    found = _codes(lint_tree(tmp_path, {"dist_setup.py": DISPATCH_SETUP, "train.py": DISPATCH_OPTION}), "DDP806")
    assert [f.location.line for f in found] == [_line(DISPATCH_OPTION, "torch.save(")]
    assert "one rank per node" in found[0].message


def test_a_set_up_a_default_leaves_on_the_way_names_the_nodes(tmp_path):
    # (a second call leaves the launcher at a default that picks SLURM)
    setup = DISPATCH_SETUP.replace('def start_group(launcher, backend="gloo"):',
                                   'def start_group(launcher="slurm", backend="gloo"):')
    train = DISPATCH_CONST.replace('    start_group("pytorch")\n',
                                   '    if os.environ.get("SLURM_PROCID"):\n        start_group()\n'
                                   '    else:\n        start_group("pytorch")\n')
    assert setup != DISPATCH_SETUP and train != DISPATCH_CONST
    found = _codes(lint_tree(tmp_path, {"dist_setup.py": setup, "train.py": train}), "DDP806")
    assert [f.location.line for f in found] == [_line(train, "torch.save(")]


# -------------------------------------------------- what a helper hands back on one rank only
# The evaluation all-reduces its sums and hands them back only where the spawn index is 0
# (None elsewhere); the caller saves where the answer is not None: one writer per node, on a
# script written for several nodes (a node index times the GPUs a node runs).
RETURNED_PER_NODE = """import argparse

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
from torch.nn.parallel import DistributedDataParallel as DDP


def evaluate(model, gpu):
    total = torch.zeros(2)
    for _ in range(3):
        total[0] += model(torch.randn(2, 4)).sum().item()
        total[1] += 1
    dist.all_reduce(total)
    if gpu == 0:
        return total / total[1]
    return None


def worker(gpu, per_node, args):
    rank = args.node * per_node + gpu
    dist.init_process_group("gloo", init_method=args.url, world_size=args.nodes * per_node, rank=rank)
    model = DDP(torch.nn.Linear(4, 4))
    best = None
    for epoch in range(3):
        model(torch.randn(2, 4)).sum().backward()
        measures = evaluate(model, gpu)
        if measures is not None:
            if best is None or measures[0] < best:
                best = measures[0]
                torch.save(model.state_dict(), "best.pt")


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--node", type=int, default=0)
    parser.add_argument("--nodes", type=int, default=1)
    parser.add_argument("--url", default="tcp://127.0.0.1:29512")
    args = parser.parse_args()
    per_node = torch.cuda.device_count()
    mp.spawn(worker, nprocs=per_node, args=(per_node, args))
"""
# twin: the helper is handed the job's rank, so the answer comes back on rank 0 alone
RETURNED_GLOBAL = """import argparse

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
from torch.nn.parallel import DistributedDataParallel as DDP


def evaluate(model, rank):
    total = torch.zeros(2)
    for _ in range(3):
        total[0] += model(torch.randn(2, 4)).sum().item()
        total[1] += 1
    dist.all_reduce(total)
    if rank == 0:
        return total / total[1]
    return None


def worker(gpu, per_node, args):
    rank = args.node * per_node + gpu
    dist.init_process_group("gloo", init_method=args.url, world_size=args.nodes * per_node, rank=rank)
    model = DDP(torch.nn.Linear(4, 4))
    best = None
    for epoch in range(3):
        model(torch.randn(2, 4)).sum().backward()
        measures = evaluate(model, rank)
        if measures is not None:
            if best is None or measures[0] < best:
                best = measures[0]
                torch.save(model.state_dict(), "best.pt")


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--node", type=int, default=0)
    parser.add_argument("--nodes", type=int, default=1)
    parser.add_argument("--url", default="tcp://127.0.0.1:29512")
    args = parser.parse_args()
    per_node = torch.cuda.device_count()
    mp.spawn(worker, nprocs=per_node, args=(per_node, args))
"""


def test_an_answer_handed_back_only_where_the_local_index_is_0_is_one_writer_per_node(tmp_path):
    found = _codes(lint_tree(tmp_path, {"train.py": RETURNED_PER_NODE}), "DDP806")
    assert [f.location.line for f in found] == [_line(RETURNED_PER_NODE, "torch.save(")]
    assert "one rank per node" in found[0].message


def test_an_answer_handed_back_only_on_rank_0_is_one_writer(tmp_path):
    assert not _codes(lint_tree(tmp_path, {"train.py": RETURNED_GLOBAL}), "DDP806")


# -------------------------------------------------- a loop over a progress bar on one side
# The epoch loop iterates `tqdm(loader) if rank == 0 else loader`: the training loader on every
# rank, whose dataset reseeds each worker from its id alone (worker k of every rank alike).
BAR_ONE_SIDE = """import random

import numpy as np
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, Dataset
from torch.utils.data.distributed import DistributedSampler
from tqdm import tqdm


class Pairs(Dataset):
    def __init__(self):
        self.seeded = False

    def __len__(self):
        return 64

    def __getitem__(self, index):
        if not self.seeded:
            info = torch.utils.data.get_worker_info()
            if info is not None:
                torch.manual_seed(info.id)
                np.random.seed(info.id)
                random.seed(info.id)
                self.seeded = True
        return torch.randn(4) * random.random()


def main():
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    data = Pairs()
    loader = DataLoader(data, batch_size=8, sampler=DistributedSampler(data), num_workers=2)
    model = DDP(torch.nn.Linear(4, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for epoch in range(2):
        loader.sampler.set_epoch(epoch)
        shown = tqdm(loader) if rank == 0 else loader
        for batch in shown:
            opt.zero_grad()
            model(batch).sum().backward()
            opt.step()


if __name__ == "__main__":
    main()
"""
# twin: the dataset seeds each worker from the seed torch gives it (per worker, per rank)
BAR_ONE_SIDE_SEEDED = """import random

import numpy as np
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, Dataset
from torch.utils.data.distributed import DistributedSampler
from tqdm import tqdm


class Pairs(Dataset):
    def __init__(self):
        self.seeded = False

    def __len__(self):
        return 64

    def __getitem__(self, index):
        if not self.seeded:
            info = torch.utils.data.get_worker_info()
            if info is not None:
                torch.manual_seed(info.seed % 2**32)
                np.random.seed(info.seed % 2**32)
                random.seed(info.seed)
                self.seeded = True
        return torch.randn(4) * random.random()


def main():
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    data = Pairs()
    loader = DataLoader(data, batch_size=8, sampler=DistributedSampler(data), num_workers=2)
    model = DDP(torch.nn.Linear(4, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for epoch in range(2):
        loader.sampler.set_epoch(epoch)
        shown = tqdm(loader) if rank == 0 else loader
        for batch in shown:
            opt.zero_grad()
            model(batch).sum().backward()
            opt.step()


if __name__ == "__main__":
    main()
"""


def test_a_loader_iterated_through_a_bar_on_one_side_trains(tmp_path):
    found = _codes(lint_tree(tmp_path, {"train.py": BAR_ONE_SIDE}), "DDP808")
    assert [f.location.line for f in found] == [_line(BAR_ONE_SIDE, "torch.manual_seed(info.id)")]


def test_a_loader_iterated_through_a_bar_whose_workers_seed_apart(tmp_path):
    assert not _codes(lint_tree(tmp_path, {"train.py": BAR_ONE_SIDE_SEEDED}), "DDP808")


# -------------------------------------------------- a bound rank 0 alone works out again
# Every rank takes the schedule's length from a helper handed the options; rank 0 alone then
# sets the epoch count again, and every rank runs `range(start, total)`: a different number
# of passes, each with the gradient all-reduce.
BOUND_RESET_ON_ZERO = """import argparse
import os

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP


def make_schedule(args, optimizer):
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, args.epochs)
    return sched, args.epochs + args.cooldown


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--epochs", type=int, default=4)
    parser.add_argument("--cooldown", type=int, default=1)
    parser.add_argument("--extra", type=int, default=2)
    args = parser.parse_args()
    dist.init_process_group("gloo")
    local_rank = int(os.environ["LOCAL_RANK"])
    model = DDP(torch.nn.Linear(4, 1))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    sched, total = make_schedule(args, optimizer)
    start = 0
    if local_rank == 0:
        print("scheduled", total)
        total = start + args.extra
    for epoch in range(start, total):
        optimizer.zero_grad()
        model(torch.randn(2, 4)).sum().backward()
        optimizer.step()
        sched.step()


if __name__ == "__main__":
    main()
"""
# twin: every rank sets the count again
BOUND_RESET_EVERYWHERE = """import argparse
import os

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP


def make_schedule(args, optimizer):
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, args.epochs)
    return sched, args.epochs + args.cooldown


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--epochs", type=int, default=4)
    parser.add_argument("--cooldown", type=int, default=1)
    parser.add_argument("--extra", type=int, default=2)
    args = parser.parse_args()
    dist.init_process_group("gloo")
    local_rank = int(os.environ["LOCAL_RANK"])
    model = DDP(torch.nn.Linear(4, 1))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    sched, total = make_schedule(args, optimizer)
    start = 0
    if local_rank == 0:
        print("scheduled", total)
    total = start + args.extra
    for epoch in range(start, total):
        optimizer.zero_grad()
        model(torch.randn(2, 4)).sum().backward()
        optimizer.step()
        sched.step()


if __name__ == "__main__":
    main()
"""


def test_a_bound_from_the_options_reset_on_rank_0_splits_the_passes(tmp_path):
    found = _codes(lint_tree(tmp_path, {"train.py": BOUND_RESET_ON_ZERO}), "DDP809")
    assert [(f.location.line, f.severity.value) for f in found] == [(_line(BOUND_RESET_ON_ZERO, "for epoch in"), "error")]


def test_a_bound_every_rank_resets_splits_nothing(tmp_path):
    assert not _codes(lint_tree(tmp_path, {"train.py": BOUND_RESET_EVERYWHERE}), "DDP809")


# -------------------------------------------------- an object rank 0 found, broadcast to all
# Rank 0 alone looks for the newest checkpoint; the answer is broadcast and taken back on every
# rank before the resume test, so the first epoch is the same everywhere.
RESUME_BROADCAST = """import glob
import os

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP


def in_group():
    return int(os.environ.get("WORLD_SIZE", "1")) > 1


def main_rank():
    return int(os.environ.get("RANK", "0")) == 0


def newest(folder):
    found = sorted(glob.glob(os.path.join(folder, "*.pt")))
    return found[-1] if found else None


def main():
    if in_group():
        dist.init_process_group("gloo")
    model = torch.nn.Linear(4, 1)
    first = 0
    latest = newest("ckpts") if main_rank() else None
    if in_group():
        box = [latest]
        dist.broadcast_object_list(box, src=0)
        latest = box[0]
    if latest is not None:
        state = torch.load(latest)
        model.load_state_dict(state["model"])
        first = int(state.get("epoch", -1)) + 1
    if in_group():
        model = DDP(model)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for epoch in range(first, 10):
        opt.zero_grad()
        model(torch.randn(2, 4)).sum().backward()
        opt.step()
        if main_rank():
            torch.save({"model": model.state_dict(), "epoch": epoch}, f"ckpts/{epoch:03d}.pt")


if __name__ == "__main__":
    main()
"""
# twin: no broadcast - the other ranks start from epoch 0 while rank 0 resumes
RESUME_RANK0_ONLY = """import glob
import os

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP


def in_group():
    return int(os.environ.get("WORLD_SIZE", "1")) > 1


def main_rank():
    return int(os.environ.get("RANK", "0")) == 0


def newest(folder):
    found = sorted(glob.glob(os.path.join(folder, "*.pt")))
    return found[-1] if found else None


def main():
    if in_group():
        dist.init_process_group("gloo")
    model = torch.nn.Linear(4, 1)
    first = 0
    latest = newest("ckpts") if main_rank() else None
    if latest is not None:
        state = torch.load(latest)
        model.load_state_dict(state["model"])
        first = int(state.get("epoch", -1)) + 1
    if in_group():
        model = DDP(model)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for epoch in range(first, 10):
        opt.zero_grad()
        model(torch.randn(2, 4)).sum().backward()
        opt.step()
        if main_rank():
            torch.save({"model": model.state_dict(), "epoch": epoch}, f"ckpts/{epoch:03d}.pt")


if __name__ == "__main__":
    main()
"""


def test_a_value_broadcast_after_rank_0_found_it_is_shared(tmp_path):
    assert not _codes(lint_tree(tmp_path, {"train.py": RESUME_BROADCAST}), "DDP809")


def test_a_value_only_rank_0_found_splits_the_epochs(tmp_path):
    found = _codes(lint_tree(tmp_path, {"train.py": RESUME_RANK0_ONLY}), "DDP809")
    assert [f.location.line for f in found] == [_line(RESUME_RANK0_ONLY, "for epoch in")]


# -------------------------------------------------- an accumulation count read as int(config)
ACCUM_INT = """import argparse

import torch
import torch.distributed as dist
import yaml
from torch.nn.parallel import DistributedDataParallel as DDP


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--config", default="configs/base.yaml")
    args = parser.parse_args()
    with open(args.config) as f:
        settings = yaml.safe_load(f)
    training = settings["training"]
    accum = int(training.get("accumulate", 1))
    dist.init_process_group("gloo")
    model = DDP(torch.nn.Linear(4, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for step in range(100):
        loss = model(torch.randn(2, 4)).sum() / accum
        loss.backward()
        if (step + 1) % accum == 0:
            opt.step()
            opt.zero_grad()


if __name__ == "__main__":
    main()
"""


def test_an_accumulation_count_every_config_sets_to_1_accumulates_nothing(tmp_path):
    files = {"train.py": ACCUM_INT, "configs/base.yaml": "training:\n  accumulate: 1\n  lr: 0.1\n"}
    assert not _codes(lint_tree(tmp_path, files), "DDP805")


def test_an_accumulation_count_a_config_sets_to_4_accumulates(tmp_path):
    files = {"train.py": ACCUM_INT, "configs/base.yaml": "training:\n  accumulate: 4\n  lr: 0.1\n"}
    found = _codes(lint_tree(tmp_path, files), "DDP805")
    assert [f.location.line for f in found] == [_line(ACCUM_INT, "loss.backward()")]


# -------------------------------------------------- a dataset's draw behind a field left off
# The dataset shuffles its order only where `self.random` holds, a constructor's
# parameter every construction leaves at its False default: its workers draw nothing.
FLAG_LEFT_OFF = """import numpy as np
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, Dataset
from torch.utils.data.distributed import DistributedSampler


class Shards(Dataset):
    def __init__(self, count, random=False):
        self.count = count
        self.random = random
        self.order = list(range(count))

    def _refill(self):
        self.order = list(range(self.count))
        if self.random:
            np.random.shuffle(self.order)

    def __len__(self):
        return self.count

    def __getitem__(self, index):
        if index == 0:
            self._refill()
        return torch.full((4,), float(self.order[index]))


def main():
    torch.manual_seed(0)
    dist.init_process_group("gloo")
    data = Shards(64)
    loader = DataLoader(data, batch_size=8, sampler=DistributedSampler(data), num_workers=2)
    model = DDP(torch.nn.Linear(4, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for epoch in range(2):
        loader.sampler.set_epoch(epoch)
        for batch in loader:
            opt.zero_grad()
            model(batch).sum().backward()
            opt.step()


if __name__ == "__main__":
    main()
"""
# twin: the construction turns the shuffle on
FLAG_TURNED_ON = """import numpy as np
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, Dataset
from torch.utils.data.distributed import DistributedSampler


class Shards(Dataset):
    def __init__(self, count, random=False):
        self.count = count
        self.random = random
        self.order = list(range(count))

    def _refill(self):
        self.order = list(range(self.count))
        if self.random:
            np.random.shuffle(self.order)

    def __len__(self):
        return self.count

    def __getitem__(self, index):
        if index == 0:
            self._refill()
        return torch.full((4,), float(self.order[index]))


def main():
    torch.manual_seed(0)
    dist.init_process_group("gloo")
    data = Shards(64, random=True)
    loader = DataLoader(data, batch_size=8, sampler=DistributedSampler(data), num_workers=2)
    model = DDP(torch.nn.Linear(4, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for epoch in range(2):
        loader.sampler.set_epoch(epoch)
        for batch in loader:
            opt.zero_grad()
            model(batch).sum().backward()
            opt.step()


if __name__ == "__main__":
    main()
"""


def test_a_draw_behind_a_field_every_construction_leaves_off_draws_nothing(tmp_path):
    assert not _codes(lint_tree(tmp_path, {"train.py": FLAG_LEFT_OFF}), "DDP808")


def test_a_draw_behind_a_field_a_construction_turns_on_draws(tmp_path):
    found = _codes(lint_tree(tmp_path, {"train.py": FLAG_TURNED_ON}), "DDP808")
    assert [f.location.line for f in found] == [_line(FLAG_TURNED_ON, "loader = DataLoader(")]


# -------------------------------------------------- a sharded loader the script never reads
# The script builds a DistributedSampler loader and never reads it again: the trainer builds
# and iterates a loader of its own under the same name. The unread loader's sampler orders
# nothing (the trainer's sampler-less loader is DDP802's).
LOADER_UNREAD = """import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler


class Tracker:
    def __init__(self):
        self.net = DDP(torch.nn.Linear(4, 1))
        self.opt = torch.optim.SGD(self.net.parameters(), lr=0.1)

    def fit(self, dataset, epochs=3):
        dataloader = DataLoader(dataset, batch_size=8, shuffle=True)
        for epoch in range(epochs):
            for (batch,) in dataloader:
                self.opt.zero_grad()
                self.net(batch).sum().backward()
                self.opt.step()


def main():
    dist.init_process_group("gloo")
    tracker = Tracker()
    dataset = TensorDataset(torch.randn(64, 4))
    sampler = DistributedSampler(dataset)
    dataloader = DataLoader(dataset, batch_size=8, sampler=sampler)
    tracker.fit(dataset)


if __name__ == "__main__":
    main()
"""
# twin: the script hands its loader to the trainer, which iterates it epoch after epoch
LOADER_HANDED = """import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler


class Tracker:
    def __init__(self):
        self.net = DDP(torch.nn.Linear(4, 1))
        self.opt = torch.optim.SGD(self.net.parameters(), lr=0.1)

    def fit(self, dataloader, epochs=3):
        for epoch in range(epochs):
            for (batch,) in dataloader:
                self.opt.zero_grad()
                self.net(batch).sum().backward()
                self.opt.step()


def main():
    dist.init_process_group("gloo")
    tracker = Tracker()
    dataset = TensorDataset(torch.randn(64, 4))
    sampler = DistributedSampler(dataset)
    dataloader = DataLoader(dataset, batch_size=8, sampler=sampler)
    tracker.fit(dataloader)


if __name__ == "__main__":
    main()
"""


def test_a_sampler_whose_loader_nothing_reads_needs_no_set_epoch(tmp_path):
    found = lint_tree(tmp_path, {"train.py": LOADER_UNREAD})
    assert not _codes(found, "DDP804")
    assert [f.location.line for f in _codes(found, "DDP802")] == [_line(LOADER_UNREAD, "shuffle=True")]


def test_a_sampler_whose_loader_is_handed_on_needs_set_epoch(tmp_path):
    found = _codes(lint_tree(tmp_path, {"train.py": LOADER_HANDED}), "DDP804")
    assert [f.location.line for f in found] == [_line(LOADER_HANDED, "sampler = DistributedSampler(")]



# (and an unseeded draw ordering the dataset of that unread loader: nothing it orders is read)
DRAWN_UNREAD = """import numpy as np
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, Dataset
from torch.utils.data.distributed import DistributedSampler


class Pairs(Dataset):
    def __init__(self):
        self.order = np.random.permutation(64)

    def __len__(self):
        return 64

    def __getitem__(self, index):
        return (torch.full((4,), float(self.order[index])),)


class Tracker:
    def __init__(self):
        self.net = DDP(torch.nn.Linear(4, 1))
        self.opt = torch.optim.SGD(self.net.parameters(), lr=0.1)

    def fit(self, dataset, epochs=3):
        dataloader = DataLoader(dataset, batch_size=8, shuffle=True)
        for epoch in range(epochs):
            for (batch,) in dataloader:
                self.opt.zero_grad()
                self.net(batch).sum().backward()
                self.opt.step()


def main():
    dist.init_process_group("gloo")
    tracker = Tracker()
    dataset = Pairs()
    sampler = DistributedSampler(dataset)
    dataloader = DataLoader(dataset, batch_size=8, sampler=sampler)
    tracker.fit(dataset)


if __name__ == "__main__":
    main()
"""
DRAWN_HANDED = """import numpy as np
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, Dataset
from torch.utils.data.distributed import DistributedSampler


class Pairs(Dataset):
    def __init__(self):
        self.order = np.random.permutation(64)

    def __len__(self):
        return 64

    def __getitem__(self, index):
        return (torch.full((4,), float(self.order[index])),)


class Tracker:
    def __init__(self):
        self.net = DDP(torch.nn.Linear(4, 1))
        self.opt = torch.optim.SGD(self.net.parameters(), lr=0.1)

    def fit(self, dataloader, epochs=3):
        for epoch in range(epochs):
            for (batch,) in dataloader:
                self.opt.zero_grad()
                self.net(batch).sum().backward()
                self.opt.step()


def main():
    dist.init_process_group("gloo")
    tracker = Tracker()
    dataset = Pairs()
    sampler = DistributedSampler(dataset)
    dataloader = DataLoader(dataset, batch_size=8, sampler=sampler)
    tracker.fit(dataloader)


if __name__ == "__main__":
    main()
"""


def test_an_unseeded_order_under_an_unread_sampler_shards_nothing(tmp_path):
    assert not _codes(lint_tree(tmp_path, {"train.py": DRAWN_UNREAD}), "DDP803")


def test_an_unseeded_order_under_a_read_sampler_shards_apart(tmp_path):
    found = _codes(lint_tree(tmp_path, {"train.py": DRAWN_HANDED}), "DDP803")
    assert [f.location.line for f in found] == [_line(DRAWN_HANDED, "sampler = DistributedSampler(")]


# -------------------------------------------------- a sampler kept in a field, a loader class handed in
# The runner keeps its DistributedSampler as `self.train_sampler` and builds the loader with a
# loader class it was handed: the sampler is read through the object, and the epoch loop reads
# its loader pass after pass without set_epoch.
FIELD_SAMPLER = """import os

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler


class Runner:
    def __init__(self, trainset, loader=DataLoader):
        dist.init_process_group("gloo")
        self.loader = loader
        self.train_sampler = DistributedSampler(trainset, num_replicas=int(os.environ["WORLD_SIZE"]))
        self.train_loader = self.loader(trainset, batch_size=8, shuffle=False, sampler=self.train_sampler)
        self.net = DDP(torch.nn.Linear(4, 1))
        self.opt = torch.optim.SGD(self.net.parameters(), lr=0.1)

    def train(self, epoch):
        return self.iteration(epoch, self.train_loader)

    def iteration(self, epoch, batches):
        for (batch,) in batches:
            self.opt.zero_grad()
            self.net(batch).sum().backward()
            self.opt.step()


def main():
    runner = Runner(TensorDataset(torch.randn(64, 4)))
    for epoch in range(5):
        runner.train(epoch)


if __name__ == "__main__":
    main()
"""
# twin: train() sets the sampler's epoch first
FIELD_SAMPLER_SET = """import os

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler


class Runner:
    def __init__(self, trainset, loader=DataLoader):
        dist.init_process_group("gloo")
        self.loader = loader
        self.train_sampler = DistributedSampler(trainset, num_replicas=int(os.environ["WORLD_SIZE"]))
        self.train_loader = self.loader(trainset, batch_size=8, shuffle=False, sampler=self.train_sampler)
        self.net = DDP(torch.nn.Linear(4, 1))
        self.opt = torch.optim.SGD(self.net.parameters(), lr=0.1)

    def train(self, epoch):
        self.train_sampler.set_epoch(epoch)
        return self.iteration(epoch, self.train_loader)

    def iteration(self, epoch, batches):
        for (batch,) in batches:
            self.opt.zero_grad()
            self.net(batch).sum().backward()
            self.opt.step()


def main():
    runner = Runner(TensorDataset(torch.randn(64, 4)))
    for epoch in range(5):
        runner.train(epoch)


if __name__ == "__main__":
    main()
"""


def test_a_sampler_kept_in_a_field_is_read_through_the_object(tmp_path):
    found = _codes(lint_tree(tmp_path, {"train.py": FIELD_SAMPLER}), "DDP804")
    assert [f.location.line for f in found] == [_line(FIELD_SAMPLER, "self.train_sampler = DistributedSampler(")]


def test_a_sampler_kept_in_a_field_whose_epoch_is_set(tmp_path):
    assert not _codes(lint_tree(tmp_path, {"train.py": FIELD_SAMPLER_SET}), "DDP804")


# -------------------------------------------------- a file of workers a launcher elsewhere starts
# The file defines its worker and helpers and runs nothing itself (a notebook imports the worker
# and hands it to mp.spawn): the worker, which nothing in the file calls, is where a run starts.
# Its validation runs only on rank 0 through the DDP model under no_grad - told once, as the
# rank branch it is (the held-out set, set on rank 0, is read beside that same rank test).
WORKERS_ONLY = """import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP


def log(*parts):
    print(*parts, flush=True)


def join(rank, world_size):
    dist.init_process_group("gloo", init_method="tcp://127.0.0.1:29513", rank=rank, world_size=world_size)


def train_worker(rank, world_size, epochs):
    join(rank, world_size)
    net = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.BatchNorm1d(4))
    model = DDP(net)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    held_out = None
    if rank == 0:
        held_out = [torch.randn(8, 4) for _ in range(2)]
    for epoch in range(epochs):
        model.train()
        opt.zero_grad()
        model(torch.randn(8, 4)).sum().backward()
        opt.step()
        if rank == 0 and held_out is not None:
            model.eval()
            with torch.no_grad():
                for batch in held_out:
                    log("val", model(batch).mean().item())
        dist.barrier()
"""
# twin: the validation runs the plain module
WORKERS_ONLY_PLAIN = """import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP


def log(*parts):
    print(*parts, flush=True)


def join(rank, world_size):
    dist.init_process_group("gloo", init_method="tcp://127.0.0.1:29513", rank=rank, world_size=world_size)


def train_worker(rank, world_size, epochs):
    join(rank, world_size)
    net = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.BatchNorm1d(4))
    model = DDP(net)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    held_out = None
    if rank == 0:
        held_out = [torch.randn(8, 4) for _ in range(2)]
    for epoch in range(epochs):
        model.train()
        opt.zero_grad()
        model(torch.randn(8, 4)).sum().backward()
        opt.step()
        if rank == 0 and held_out is not None:
            model.eval()
            with torch.no_grad():
                for batch in held_out:
                    log("val", model.module(batch).mean().item())
        dist.barrier()
"""


def test_a_worker_nothing_in_its_file_calls_is_an_entry(tmp_path):
    found = lint_tree(tmp_path, {"workers.py": WORKERS_ONLY}, script="workers.py")
    assert [f.location.line for f in _codes(found, "DDP801")] == [_line(WORKERS_ONLY, 'log("val", model(batch)')]
    assert not _codes(found, "DDP809")


def test_a_worker_nothing_calls_validating_the_plain_module(tmp_path):
    found = lint_tree(tmp_path, {"workers.py": WORKERS_ONLY_PLAIN}, script="workers.py")
    assert not _codes(found, "DDP801") and not _codes(found, "DDP809")



# twin of the read beside its rank test: a flag set on rank 0, read beside another test
STOP_BESIDE_EPOCH = """import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP


def main():
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    model = DDP(torch.nn.Linear(4, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    stop = False
    for epoch in range(20):
        opt.zero_grad()
        loss = model(torch.randn(8, 4)).pow(2).mean()
        loss.backward()
        opt.step()
        if rank == 0:
            stop = loss.item() < 0.01
        if epoch > 2 and stop:
            break


if __name__ == "__main__":
    main()
"""


def test_a_rank_0_flag_read_beside_another_test_splits_the_ranks(tmp_path):
    found = _codes(lint_tree(tmp_path, {"train.py": STOP_BESIDE_EPOCH}), "DDP809")
    assert [(f.location.line, f.severity.value) for f in found] == [(_line(STOP_BESIDE_EPOCH, "if epoch > 2 and stop"), "error")]


# -------------------------------------------------- a list of samplers kept in a field
# One DistributedSampler per data part, kept as `self.samplers`; the epoch loop sets the epoch
# of `self.samplers[index]` before reading that part's loader.
SAMPLER_LIST_SET = """import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler


class Trainer:
    def __init__(self, sets):
        self.model = DDP(torch.nn.Linear(4, 1))
        self.opt = torch.optim.SGD(self.model.parameters(), lr=0.1)
        self.samplers = [DistributedSampler(part) for part in sets]
        self.loaders = [DataLoader(sets[i], batch_size=8, sampler=self.samplers[i]) for i in range(len(sets))]

    def fit(self, epochs):
        for epoch in range(epochs):
            for index in range(len(self.loaders)):
                self.samplers[index].set_epoch(epoch)
                for (batch,) in self.loaders[index]:
                    self.opt.zero_grad()
                    self.model(batch).sum().backward()
                    self.opt.step()


def main():
    dist.init_process_group("gloo")
    Trainer([TensorDataset(torch.randn(32, 4)) for _ in range(3)]).fit(4)


if __name__ == "__main__":
    main()
"""
# twin: nothing sets their epoch
SAMPLER_LIST_UNSET = """import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler


class Trainer:
    def __init__(self, sets):
        self.model = DDP(torch.nn.Linear(4, 1))
        self.opt = torch.optim.SGD(self.model.parameters(), lr=0.1)
        self.samplers = [DistributedSampler(part) for part in sets]
        self.loaders = [DataLoader(sets[i], batch_size=8, sampler=self.samplers[i]) for i in range(len(sets))]

    def fit(self, epochs):
        for epoch in range(epochs):
            for index in range(len(self.loaders)):
                for (batch,) in self.loaders[index]:
                    self.opt.zero_grad()
                    self.model(batch).sum().backward()
                    self.opt.step()


def main():
    dist.init_process_group("gloo")
    Trainer([TensorDataset(torch.randn(32, 4)) for _ in range(3)]).fit(4)


if __name__ == "__main__":
    main()
"""


def test_a_list_of_samplers_set_through_its_elements(tmp_path):
    assert not _codes(lint_tree(tmp_path, {"train.py": SAMPLER_LIST_SET}), "DDP804")


def test_a_list_of_samplers_nothing_sets(tmp_path):
    found = _codes(lint_tree(tmp_path, {"train.py": SAMPLER_LIST_UNSET}), "DDP804")
    assert [f.location.line for f in found] == [_line(SAMPLER_LIST_UNSET, "self.samplers = [")]


def test_a_draw_behind_a_field_left_on_by_one_construction_and_off_by_another_draws(tmp_path):
    # (the training set keeps the default `random=True`; an evaluation set passes False)
    body = FLAG_LEFT_OFF.replace("def __init__(self, count, random=False):", "def __init__(self, count, random=True):") \
        .replace("    data = Shards(64)\n", "    data = Shards(64)\n    held_out = Shards(16, random=False)\n")
    assert body.count("random=") == 2 and "held_out" in body
    found = _codes(lint_tree(tmp_path, {"train.py": body}), "DDP808")
    assert [f.location.line for f in found] == [_line(body, "loader = DataLoader(")]


# -------------------------------------------------- a Trainer handed its datasets through `**`
# `Trainer(model=..., **data_module)` with `data_module` a helper's `dict(train_dataset=...)`:
# the training set is the helper's, whose constructor shuffles with an unseeded stream, so each
# process holds its own order and the Trainer's sampler shards N different lists.
SPREAD_SHUFFLED = """import random

import torch
from torch.utils.data import Dataset
from transformers import AutoModelForCausalLM, Trainer, TrainingArguments


class Pairs(Dataset):
    def __init__(self, count):
        self.items = list(range(count))
        random.shuffle(self.items)

    def __len__(self):
        return len(self.items)

    def __getitem__(self, index):
        return {"input_ids": torch.tensor([self.items[index]]), "labels": torch.tensor([self.items[index]])}


def make_data_module(count):
    train_dataset = Pairs(count)
    return dict(train_dataset=train_dataset, eval_dataset=None)


def main():
    args = TrainingArguments(output_dir="out", per_device_train_batch_size=4)
    model = AutoModelForCausalLM.from_pretrained("gpt2")
    data_module = make_data_module(256)
    trainer = Trainer(model=model, args=args, **data_module)
    trainer.train()


if __name__ == "__main__":
    main()
"""
# twin: the dataset shuffles with a generator of its own, seeded alike everywhere
SPREAD_SEEDED = """import random

import torch
from torch.utils.data import Dataset
from transformers import AutoModelForCausalLM, Trainer, TrainingArguments


class Pairs(Dataset):
    def __init__(self, count):
        self.items = list(range(count))
        random.Random(0).shuffle(self.items)

    def __len__(self):
        return len(self.items)

    def __getitem__(self, index):
        return {"input_ids": torch.tensor([self.items[index]]), "labels": torch.tensor([self.items[index]])}


def make_data_module(count):
    train_dataset = Pairs(count)
    return dict(train_dataset=train_dataset, eval_dataset=None)


def main():
    args = TrainingArguments(output_dir="out", per_device_train_batch_size=4)
    model = AutoModelForCausalLM.from_pretrained("gpt2")
    data_module = make_data_module(256)
    trainer = Trainer(model=model, args=args, **data_module)
    trainer.train()


if __name__ == "__main__":
    main()
"""


def test_a_training_set_spread_into_the_trainer_is_read_in_its_helper(tmp_path):
    found = _codes(lint_tree(tmp_path, {"train.py": SPREAD_SHUFFLED}), "DDP803")
    assert [f.location.line for f in found] == [_line(SPREAD_SHUFFLED, "trainer = Trainer(")]


def test_a_training_set_spread_into_the_trainer_ordered_alike(tmp_path):
    assert not _codes(lint_tree(tmp_path, {"train.py": SPREAD_SEEDED}), "DDP803")


# -------------------------------------------------- a trainer class a factory picks, a hook the base leaves out
# `trainer = pick_trainer(kind)` returns one of two classes by name and `trainer = trainer(model,
# ...)` builds it; the subclass hands its `*args` to the base's constructor, which keeps the DDP
# model a helper made; the base's epoch loop calls `self.report(...)` - a hook each subclass
# defines - only on the master rank, and the flow trainer's report runs the DDP model (or its
# EMA copy, also wrapped) under no_grad: a one-rank forward of a model with buffers.
TMPL_TRAIN = """import copy
import sys

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel

from trainers import pick_trainer


def wrap(model):
    if dist.is_initialized():
        model = DistributedDataParallel(model)
    else:
        model = torch.nn.DataParallel(model)
    return model


if __name__ == "__main__":
    dist.init_process_group("gloo")
    net = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.BatchNorm1d(4))
    ema = copy.deepcopy(net)
    model = wrap(net)
    model_ema = wrap(ema)
    trainer = pick_trainer(sys.argv[1])
    trainer = trainer(model, model_ema, [torch.randn(8, 4) for _ in range(4)], dist.get_rank() == 0)
    trainer.run(3)
"""
TMPL_PICK = """from trainers.flow import Trainer as FlowTrainer
from trainers.plain import Trainer as PlainTrainer


def pick_trainer(kind):
    if kind == "flow":
        return FlowTrainer
    elif kind == "plain":
        return PlainTrainer
    raise ValueError(kind)
"""
TMPL_BASE = """import torch
import torch.distributed as dist


class TrainerBase:
    def __init__(self, model, model_ema, data, master):
        self.model = model
        self.model_ema = model_ema
        self.data = data
        self.master = master
        self.opt = torch.optim.SGD(model.parameters(), lr=0.1)

    def train(self, epoch):
        raise NotImplementedError

    def run(self, epochs):
        for epoch in range(epochs):
            summary = self.train(epoch)
            if self.master:
                self.report(summary, epoch)
            dist.barrier()
"""
TMPL_FLOW = """import torch

from trainers.base import TrainerBase


class Trainer(TrainerBase):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)

    def train(self, epoch):
        model = self.model
        model.train()
        for batch in self.data:
            self.opt.zero_grad()
            model(batch).sum().backward()
            self.opt.step()
        return {"last": self.data[-1]}

    def report(self, summary, epoch, mode="ema"):
        self.render(summary, mode)

    @torch.no_grad()
    def render(self, summary, mode):
        model = self.model_ema if "ema" in mode else self.model
        model.eval()
        print(model(summary["last"]).mean().item())
"""
TMPL_PLAIN = """from trainers.base import TrainerBase


class Trainer(TrainerBase):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.quiet = True

    def train(self, epoch):
        for batch in self.data:
            self.opt.zero_grad()
            self.model(batch).sum().backward()
            self.opt.step()
        return {}

    def report(self, summary, epoch):
        print(epoch)
"""


def _tmpl(flow: str = TMPL_FLOW) -> dict:
    return {"train.py": TMPL_TRAIN, "trainers/__init__.py": TMPL_PICK, "trainers/base.py": TMPL_BASE,
            "trainers/flow.py": flow, "trainers/plain.py": TMPL_PLAIN}


def test_a_hook_a_picked_trainer_defines_runs_under_the_bases_rank_test(tmp_path):
    found = _codes(lint_tree(tmp_path, _tmpl()), "DDP801")
    assert [(f.location.file.endswith("trainers/flow.py"), f.location.line) for f in found] == \
        [(True, _line(TMPL_FLOW, "print(model("))]


def test_a_hook_of_a_picked_trainer_rendering_the_plain_module(tmp_path):
    flow = TMPL_FLOW.replace("print(model(summary", "print(model.module(summary")
    assert flow != TMPL_FLOW
    assert not _codes(lint_tree(tmp_path, _tmpl(flow)), "DDP801")


# -------------------------------------------------- a section of the config picked by name
# Each part trains with `section = getattr(self.settings, name)` and steps every
# `section.accumulate` passes; the YAML beside the script sets `accumulate: 1` in every section.
SECTION_COUNT = """import types

import torch
import torch.distributed as dist
import yaml
from torch.nn.parallel import DistributedDataParallel as DDP


def load(path):
    with open(path) as f:
        raw = yaml.safe_load(f)
    return types.SimpleNamespace(**{k: types.SimpleNamespace(**v) for k, v in raw.items()})


class Runner:
    def __init__(self, settings):
        self.settings = settings
        self.models = {"encoder": DDP(torch.nn.Linear(4, 4)), "decoder": DDP(torch.nn.Linear(4, 4))}

    def fit_part(self, name, steps):
        section = getattr(self.settings, name)
        model = self.models[name]
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        for i in range(steps):
            model(torch.randn(2, 4)).sum().backward()
            if (i + 1) % section.accumulate == 0:
                opt.step()
                opt.zero_grad()


def main():
    dist.init_process_group("gloo")
    runner = Runner(load("configs/parts.yaml"))
    for name in ("encoder", "decoder"):
        runner.fit_part(name, 10)


if __name__ == "__main__":
    main()
"""


def test_a_count_every_section_sets_to_1_accumulates_nothing(tmp_path):
    files = {"train.py": SECTION_COUNT,
             "configs/parts.yaml": "encoder:\n  accumulate: 1\n  lr: 0.1\ndecoder:\n  accumulate: 1\n  lr: 0.2\n"}
    assert not _codes(lint_tree(tmp_path, files), "DDP805")


def test_a_count_one_section_sets_to_4_accumulates(tmp_path):
    files = {"train.py": SECTION_COUNT,
             "configs/parts.yaml": "encoder:\n  accumulate: 1\n  lr: 0.1\ndecoder:\n  accumulate: 4\n  lr: 0.2\n"}
    found = _codes(lint_tree(tmp_path, files), "DDP805")
    assert [f.location.line for f in found] == [_line(SECTION_COUNT, "model(torch.randn(2, 4)).sum().backward()")]


# -------------------------------------------------- a partial kept in a field, called on rank 0
# The constructor keeps `partial(keep_copy, ...)` as `self._keep`; the epoch loop calls it only on
# rank 0: the partial's making runs nothing, the guarded call is the way in.
PARTIAL_FIELD = """from functools import partial

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP


def keep_copy(state, epoch, folder, every):
    if epoch % every == 0:
        torch.save(state, f"{folder}/agent_{epoch}.pt")


class Runner:
    def __init__(self):
        self.rank = dist.get_rank()
        self.model = DDP(torch.nn.Linear(4, 1))
        self.opt = torch.optim.SGD(self.model.parameters(), lr=0.1)
        self._keep = partial(keep_copy, folder="ckpts", every=2)

    def run(self, epochs):
        for epoch in range(epochs):
            self.opt.zero_grad()
            self.model(torch.randn(2, 4)).sum().backward()
            self.opt.step()
            if self.rank == 0:
                self._keep(self.model.module.state_dict(), epoch)


if __name__ == "__main__":
    dist.init_process_group("gloo")
    Runner().run(4)
"""
# twin: every rank calls it
PARTIAL_FIELD_EVERYWHERE = """from functools import partial

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP


def keep_copy(state, epoch, folder, every):
    if epoch % every == 0:
        torch.save(state, f"{folder}/agent_{epoch}.pt")


class Runner:
    def __init__(self):
        self.rank = dist.get_rank()
        self.model = DDP(torch.nn.Linear(4, 1))
        self.opt = torch.optim.SGD(self.model.parameters(), lr=0.1)
        self._keep = partial(keep_copy, folder="ckpts", every=2)

    def run(self, epochs):
        for epoch in range(epochs):
            self.opt.zero_grad()
            self.model(torch.randn(2, 4)).sum().backward()
            self.opt.step()
            self._keep(self.model.module.state_dict(), epoch)


if __name__ == "__main__":
    dist.init_process_group("gloo")
    Runner().run(4)
"""


def test_a_partial_kept_in_a_field_runs_where_the_field_is_called(tmp_path):
    assert not _codes(lint_tree(tmp_path, {"train.py": PARTIAL_FIELD}), "DDP806")


def test_a_partial_kept_in_a_field_called_on_every_rank(tmp_path):
    found = _codes(lint_tree(tmp_path, {"train.py": PARTIAL_FIELD_EVERYWHERE}), "DDP806")
    assert [f.location.line for f in found] == [_line(PARTIAL_FIELD_EVERYWHERE, "torch.save(")]


# -------------------------------------------------- a project shipping its own transformers
# A rank-0 evaluation runs the DDP-wrapped BertModel under no_grad. Released transformers
# registers `position_ids` as a buffer (a broadcast on that forward); a project that ships an
# older copy of transformers whose modeling_bert registers none builds that copy's model.
VENDORED_EVAL = """import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from transformers import BertModel


def main():
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    model = DDP(BertModel.from_pretrained("bert-base-uncased"))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    ids = torch.randint(0, 100, (2, 8))
    for epoch in range(3):
        opt.zero_grad()
        model(ids)[0].sum().backward()
        opt.step()
        if rank == 0:
            with torch.no_grad():
                print(model(ids)[0].mean().item())


if __name__ == "__main__":
    main()
"""
_VENDORED_BERT = (
    "import torch\n\n\nclass BertModel(torch.nn.Module):\n    def __init__(self):\n        super().__init__()\n"
    "        self.embed = torch.nn.Embedding(100, 8){extra}\n\n    @classmethod\n    def from_pretrained(cls, name):\n"
    "        return cls()\n\n    def forward(self, ids):\n        return (self.embed(ids),)\n")


def _vendored(extra: str = "") -> dict:
    return {"train.py": VENDORED_EVAL, "transformers/__init__.py": "from .modeling_bert import BertModel\n",
            "transformers/modeling_bert.py": _VENDORED_BERT.replace("{extra}", extra)}


def test_a_shipped_transformers_whose_bert_holds_no_buffer(tmp_path):
    assert not _codes(lint_tree(tmp_path, _vendored()), "DDP801")


def test_a_shipped_transformers_whose_bert_registers_a_buffer(tmp_path):
    files = _vendored('\n        self.register_buffer("position_ids", torch.arange(8))')
    found = _codes(lint_tree(tmp_path, files), "DDP801")
    assert [f.location.line for f in found] == [_line(VENDORED_EVAL, "print(model(ids)")]


def test_the_released_transformers_bert_holds_buffers(tmp_path):
    found = _codes(lint_tree(tmp_path, {"train.py": VENDORED_EVAL}), "DDP801")
    assert [f.location.line for f in found] == [_line(VENDORED_EVAL, "print(model(ids)")]


# -------------------------------------------------- a step skipped with its gradients thrown away
# The generator steps only where its loss is finite; the other side clears the gradients, so a
# skipped pass accumulates nothing (the discriminator steps what it back-propagated itself).
SKIP_CLEARED = """import sys

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP


def main():
    dist.init_process_group("gloo")
    gen = DDP(torch.nn.Linear(4, 4))
    disc = DDP(torch.nn.Linear(4, 1))
    opt_g = torch.optim.SGD(gen.parameters(), lr=0.1)
    opt_d = torch.optim.SGD(disc.parameters(), lr=0.1)
    use_gan = len(sys.argv) > 1
    for step in range(100):
        loss = gen(torch.randn(8, 4)).pow(2).mean()
        loss.backward()
        if not torch.isfinite(loss).item():
            opt_g.zero_grad()
            print("skipped a non-finite loss")
        else:
            opt_g.step()
            opt_g.zero_grad()
        if use_gan:
            opt_d.zero_grad()
            loss = disc(gen(torch.randn(8, 4)).detach()).mean()
            loss.backward()
            opt_d.step()
        else:
            loss = None


if __name__ == "__main__":
    main()
"""
# twin: the skipping side keeps the gradients - they add to the next pass's
SKIP_KEPT = """import sys

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP


def main():
    dist.init_process_group("gloo")
    gen = DDP(torch.nn.Linear(4, 4))
    disc = DDP(torch.nn.Linear(4, 1))
    opt_g = torch.optim.SGD(gen.parameters(), lr=0.1)
    opt_d = torch.optim.SGD(disc.parameters(), lr=0.1)
    use_gan = len(sys.argv) > 1
    for step in range(100):
        loss = gen(torch.randn(8, 4)).pow(2).mean()
        loss.backward()
        if not torch.isfinite(loss).item():
            print("skipped a non-finite loss")
        else:
            opt_g.step()
            opt_g.zero_grad()
        if use_gan:
            opt_d.zero_grad()
            loss = disc(gen(torch.randn(8, 4)).detach()).mean()
            loss.backward()
            opt_d.step()
        else:
            loss = None


if __name__ == "__main__":
    main()
"""


def test_a_step_whose_other_side_clears_the_gradients_accumulates_nothing(tmp_path):
    assert not _codes(lint_tree(tmp_path, {"train.py": SKIP_CLEARED}), "DDP805")


def test_a_step_whose_other_side_keeps_the_gradients_accumulates(tmp_path):
    found = _codes(lint_tree(tmp_path, {"train.py": SKIP_KEPT}), "DDP805")
    assert [f.location.line for f in found] == [_line(SKIP_KEPT, "    loss.backward()")]


def test_a_worker_named_like_a_method_it_calls_is_still_an_entry(tmp_path):
    # (`def train(...)` whose body calls `model.train()`: an attribute, not the file's function)
    body = WORKERS_ONLY.replace("def train_worker(", "def train(")
    assert body != WORKERS_ONLY and "model.train()" in body
    found = lint_tree(tmp_path, {"workers.py": body}, script="workers.py")
    assert [f.location.line for f in _codes(found, "DDP801")] == [_line(body, 'log("val", model(batch)')]
