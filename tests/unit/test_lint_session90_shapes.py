"""Shapes from session 90 (holdout 128's reading), each with its twin, in our own words."""

from __future__ import annotations

from tests.unit.test_lint_session39_shapes import lint_tree
from tests.unit.test_lint_session61_shapes import _codes, _line

# ------------------------------------------- `--local_rank` is the launcher's, not its default
# torch.distributed.launch appends `--local-rank=N` to each process's command line: the option's
# declared default (-1, "not distributed") is no value a launched run holds, so the sampler
# built on `rank >= 0` is the run's.
LAUNCHED = """import argparse

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel


def train(rank):
    is_distributed = rank >= 0
    data = torch.utils.data.TensorDataset(torch.randn(64, 4))
    model = torch.nn.Linear(4, 1)
    if is_distributed:
        model = DistributedDataParallel(model)
    sampler = torch.utils.data.distributed.DistributedSampler(data, shuffle=True) if is_distributed else None
    loader = torch.utils.data.DataLoader(data, batch_size=8, shuffle=False if is_distributed else True,
                                         sampler=sampler)
    for epoch in range(3):
        if is_distributed:
            sampler.set_epoch(epoch)
        for (x,) in loader:
            model(x).sum().backward()


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--local_rank", type=int, default=-1)
    opt = parser.parse_args()
    if opt.local_rank >= 0:
        dist.init_process_group("gloo")
    train(opt.local_rank)
"""


def test_a_sampler_under_the_launchers_local_rank_is_the_runs(tmp_path):
    assert _codes(lint_tree(tmp_path, {"train.py": LAUNCHED}), "DDP802") == []


def test_a_sampler_left_out_under_the_launchers_local_rank_is_still_told(tmp_path):
    # twin: the same script whose conditional never builds the sampler
    body = LAUNCHED.replace("DistributedSampler(data, shuffle=True) if is_distributed else None", "RandomSampler(data)")
    body = body.replace("            sampler.set_epoch(epoch)\n", "            pass\n")
    found = _codes(lint_tree(tmp_path, {"train.py": body}), "DDP802")
    assert [f.location.line for f in found] == [_line(body, "loader = torch.utils.data.DataLoader(")]


# ------------------------------------------------ a model handed in a list and unpacked by the callee
# `train_and_evaluate(rank, epoch, [model, aux], ...)` and `model, aux = nets` inside (the VITS-style
# trainers): the name holds the DDP wrapper the caller built, and `model.module.loss(...)` goes
# round it.
LISTED = """import torch
import torch.distributed as dist
import torch.multiprocessing as mp
from torch.nn.parallel import DistributedDataParallel as DDP


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.body = torch.nn.Linear(4, 4)

    def loss(self, x):
        return self.body(x).pow(2).mean()

    def forward(self, x):
        return self.loss(x)


def train_and_evaluate(rank, epoch, nets, optimizer):
    model, aux = nets
    model.train()
    for step in range(10):
        x = aux(torch.randn(8, 4))
        optimizer.zero_grad()
        loss = model.module.loss(x)
        loss.backward()
        optimizer.step()


def run(rank, n_gpus):
    dist.init_process_group("gloo", rank=rank, world_size=n_gpus)
    model = DDP(Net())
    aux = torch.nn.Identity()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for epoch in range(3):
        train_and_evaluate(rank, epoch, [model, aux], optimizer)


if __name__ == "__main__":
    mp.spawn(run, args=(2,), nprocs=2)
"""


def test_a_wrapper_handed_in_a_list_and_unpacked_is_gone_round_by_module(tmp_path):
    found = _codes(lint_tree(tmp_path, {"train.py": LISTED}), "DDP810")
    assert [(f.location.line, f.severity) for f in found] == [(_line(LISTED, "loss.backward()"), "error")]


def test_a_wrapper_handed_in_a_list_and_called_itself_is_the_ddp_forward(tmp_path):
    # twin: the unpacked wrapper's own forward
    body = LISTED.replace("loss = model.module.loss(x)", "loss = model(x)")
    assert _codes(lint_tree(tmp_path, {"train.py": body}), "DDP810") == []


# -------------------------------------------------- a DDP wrapper made by wrap() under enable_wrap
# `with enable_wrap(wrapper_cls=DistributedDataParallel): model = wrap(model)` builds the DDP
# wrapper (enable_wrap names the class; FSDP is only its usual one): the loss computed through
# `model.module` goes round it.
WRAPPED = """import torch
import torch.distributed as dist
import torch.distributed.fsdp.wrap as auto
import torch.nn.parallel as parallel


class Reader(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.encoder = torch.nn.Linear(4, 4)

    def score(self, x):
        return self.encoder(x).sum()


def build():
    model = Reader()
    with auto.enable_wrap(wrapper_cls=parallel.DistributedDataParallel):
        model = auto.wrap(model)
    return model


def main():
    dist.init_process_group("gloo")
    model = build()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for step in range(10):
        loss = model.module.score(torch.randn(8, 4))
        loss.backward()
        optimizer.step()


if __name__ == "__main__":
    main()
"""


def test_a_wrap_under_enable_wrap_of_ddp_is_a_ddp_wrapper_gone_round(tmp_path):
    found = _codes(lint_tree(tmp_path, {"train.py": WRAPPED}), "DDP810")
    assert [(f.location.line, f.severity) for f in found] == [(_line(WRAPPED, "loss.backward()"), "error")]


def test_a_wrap_under_enable_wrap_of_fsdp_is_no_ddp_wrapper(tmp_path):
    # twin: the same block naming FSDP, whose wrapper this check does not judge
    body = WRAPPED.replace("import torch.nn.parallel as parallel",
                           "from torch.distributed.fsdp import FullyShardedDataParallel").replace(
        "wrapper_cls=parallel.DistributedDataParallel", "wrapper_cls=FullyShardedDataParallel")
    assert _codes(lint_tree(tmp_path, {"train.py": body}), "DDP810") == []


# ------------------------------------------ a rank flag asked of an object the lint cannot type
# The options object travels through four hands before the save helper asks it
# `state.may_write()`; only one class of the project defines `may_write`, whose answer is the flag
# `set_writes(self.rank == 0)` set: rank 0 alone writes.
ASKED = {"train.py": """import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

from store import write_results


class Options:
    def __init__(self):
        self._writes = True
        self.rank = 0

    def may_write(self):
        return self._writes

    def set_writes(self, value):
        self._writes = value

    def finish(self):
        dist.init_process_group("gloo")
        self.rank = dist.get_rank()
        self.set_writes(self.rank == 0)
        return self


class Trainer:
    def __init__(self, state, model):
        self.state = state
        self.model = model

    def save(self):
        write_results(self.state, self.model.module.state_dict())

    def fit(self):
        opt = torch.optim.SGD(self.model.parameters(), lr=0.1)
        for step in range(10):
            opt.zero_grad()
            self.model(torch.randn(2, 4)).sum().backward()
            opt.step()
        self.save()


def distill(state):
    Trainer(state, DDP(torch.nn.Linear(4, 4))).fit()


def run(state):
    distill(state)


def main(state):
    run(state)


if __name__ == "__main__":
    main(Options().finish())
""",
         "store.py": """import torch


def write_results(state, weights):
    if not state.may_write():
        return
    torch.save(weights, "weights.pt")
"""}


def test_a_rank_flag_asked_of_an_untyped_object_by_its_one_definer_guards_the_save(tmp_path):
    assert _codes(lint_tree(tmp_path, dict(ASKED)), "DDP806") == []


def test_a_flag_set_true_on_every_rank_leaves_the_save_on_every_rank(tmp_path):
    # twin: the flag the one definer answers is set alike on every rank
    files = dict(ASKED, **{"train.py": ASKED["train.py"].replace("self.set_writes(self.rank == 0)", "self.set_writes(True)")})
    found = _codes(lint_tree(tmp_path, files), "DDP806")
    assert [(f.location.file.endswith("store.py"), f.location.line) for f in found] == [
        (True, _line(ASKED["store.py"], "torch.save("))]


# ------------------------------------------ the configs every launch names, over the code's default
# A yacs project: the code defaults LOADER.MODE to "plain", and every launch in tools/run.sh names
# a config that sets "episode". The DistributedSampler of the "plain" side (never given an epoch)
# is not the launched run's: no YAML the launches name takes that side.
YACS = {
    "tools/train.py": """import argparse

import torch
import torch.distributed as dist
from yacs.config import CfgNode as CN

from project.loader import build_loader

_C = CN()
_C.LOADER = CN()
_C.LOADER.MODE = "plain"


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--config-file", default="")
    parser.add_argument("--local_rank", type=int, default=0)
    args = parser.parse_args()
    cfg = _C.clone()
    cfg.merge_from_file(args.config_file)
    dist.init_process_group("gloo")
    model = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(4, 1))
    loader = build_loader(cfg)
    for epoch in range(5):
        for (x,) in loader:
            model(x).sum().backward()


if __name__ == "__main__":
    main()
""",
    "project/__init__.py": "",
    "project/loader.py": """import torch
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler


class Episodes(torch.utils.data.Sampler):
    def __init__(self, n, rank):
        self.n, self.rank = n, rank

    def __iter__(self):
        return iter([list(range(self.rank, self.n, 2))])

    def __len__(self):
        return 1


def build_loader(cfg):
    data = TensorDataset(torch.randn(64, 4))
    if cfg.LOADER.MODE == "plain":
        sampler = DistributedSampler(data, shuffle=True)
        return DataLoader(data, batch_size=8, sampler=sampler)
    return DataLoader(data, batch_sampler=Episodes(64, torch.distributed.get_rank()))
""",
    "tools/run.sh": """python -m torch.distributed.launch --nproc_per_node=4 tools/train.py --config-file configs/a.yaml
python -m torch.distributed.launch --nproc_per_node=4 tools/train.py --config-file configs/b.yaml
""",
    "configs/a.yaml": "LOADER:\n  MODE: 'episode'\n",
    "configs/b.yaml": "LOADER:\n  MODE: episode\n",
}


def test_a_side_no_named_config_takes_holds_no_launched_sampler(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert _codes(lint_tree(tmp_path, dict(YACS), script="tools/train.py"), "DDP804") == []


def test_a_named_config_that_takes_the_side_keeps_its_sampler(tmp_path, monkeypatch):
    # twin: one launch names a config that leaves the key to the code's default ("plain")
    monkeypatch.chdir(tmp_path)
    files = dict(YACS, **{"configs/b.yaml": "SOLVER:\n  LR: 0.1\n"})
    found = _codes(lint_tree(tmp_path, files, script="tools/train.py"), "DDP804")
    assert [f.location.line for f in found] == [_line(YACS["project/loader.py"], "sampler = DistributedSampler(")]


# ----------------------------------------- items kept by an unseeded scalar draw, in a later method
# The dataset is filled by a method the script calls after building it: each file is kept when an
# unseeded `randint` passes a threshold. Every process keeps its own subset (of its own length)
# before the DistributedSampler shards it.
KEPT = {"train.py": """import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel
from torch.utils.data import DataLoader
from torch.utils.data.distributed import DistributedSampler

from pool import Pool


def main():
    dist.init_process_group("gloo")
    pool = Pool(["a", "b", "c"], share=0.1)
    pool.fill()
    sampler = DistributedSampler(pool)
    loader = DataLoader(pool, batch_size=4, sampler=sampler)
    model = DistributedDataParallel(torch.nn.Linear(4, 1))
    for epoch in range(3):
        sampler.set_epoch(epoch)
        for x in loader:
            model(x).sum().backward()


if __name__ == "__main__":
    main()
""", "pool.py": """import os
from random import randint

import torch


class Pool(torch.utils.data.Dataset):
    def __init__(self, folders, share):
        self.folders = folders
        self.share = share
        self.items = []

    def fill(self):
        self._scan()

    def _scan(self):
        for folder in self.folders:
            for name in os.listdir(folder):
                ticket = randint(0, 1000)
                if ticket > self.share * 1000:
                    continue
                self.items.append(os.path.join(folder, name))

    def __len__(self):
        return len(self.items)

    def __getitem__(self, i):
        return torch.zeros(4)
"""}


def test_items_kept_by_an_unseeded_draw_in_a_method_called_later_are_each_ranks_own(tmp_path):
    found = _codes(lint_tree(tmp_path, dict(KEPT)), "DDP803")
    assert [(f.location.line, f.severity) for f in found] == [(_line(KEPT["train.py"], "sampler = DistributedSampler("),
                                                              "warning")]


def test_items_kept_by_a_draw_from_a_stream_seeded_alike_are_the_same_on_every_rank(tmp_path):
    # twin: Python's stream seeded alike before the pool is filled
    files = dict(KEPT, **{"train.py": KEPT["train.py"].replace(
        '    dist.init_process_group("gloo")\n', '    dist.init_process_group("gloo")\n    random.seed(0)\n').replace(
        "import torch\n", "import random\n\nimport torch\n", 1)})
    assert _codes(lint_tree(tmp_path, files), "DDP803") == []


def test_a_sampler_under_switches_left_off_by_default_is_still_the_run_asked_for(tmp_path):
    # twin of the launched configs: plain store_true switches (`--multi-gpu --dist`) around the
    # sampler are the run the user turns on by name, not a side the launch rules out
    body = """import argparse

import torch
import torch.distributed as dist
from torch.utils.data import BatchSampler, DataLoader, DistributedSampler, TensorDataset


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--multi-gpu", action="store_true")
    parser.add_argument("--dist", action="store_true")
    args = parser.parse_args()
    data = TensorDataset(torch.randn(64, 4))
    if args.multi_gpu and args.dist:
        dist.init_process_group("gloo")
        sampler = DistributedSampler(data, shuffle=True)
        loader = DataLoader(data, batch_sampler=BatchSampler(sampler, 8, drop_last=True))
    else:
        loader = DataLoader(data, batch_size=8, shuffle=True)
    model = torch.nn.Linear(4, 1)
    for epoch in range(5):
        for (x,) in loader:
            model(x).sum().backward()


if __name__ == "__main__":
    main()
"""
    found = _codes(lint_tree(tmp_path, {"train.py": body}), "DDP804")
    assert [f.location.line for f in found] == [_line(body, "sampler = DistributedSampler(")]


# ------------------------------------------------- the project's own DataLoader subclass, built plain
# `class Loader(DataLoader)` calls `super().__init__(...)` with a DistributedSampler under its
# `distributed` parameter and without one otherwise; the factory always hands False. The loader
# is each instance the program builds, and the training loop iterates the one the factory returns.
SUBCLASS = """import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler


class Loader(DataLoader):
    def __init__(self, dataset, batch_size, distributed):
        if distributed:
            sampler = DistributedSampler(dataset, shuffle=True)
            super().__init__(dataset, batch_size=batch_size, sampler=sampler)
        else:
            super().__init__(dataset, batch_size=batch_size, shuffle=True)

    def set_epoch(self, epoch):
        if isinstance(self.sampler, DistributedSampler):
            self.sampler.set_epoch(epoch)


def create(batch_size):
    data = TensorDataset(torch.randn(64, 4))
    loader = Loader(data, batch_size, distributed=False)
    return loader


def main():
    dist.init_process_group("gloo")
    model = DistributedDataParallel(torch.nn.Linear(4, 1))
    train_loader = create(8)
    for epoch in range(3):
        train_loader.set_epoch(epoch)
        for (x,) in train_loader:
            model(x).sum().backward()


if __name__ == "__main__":
    main()
"""


def test_a_dataloader_subclass_built_plain_on_every_way_in_is_unsharded(tmp_path):
    found = _codes(lint_tree(tmp_path, {"train.py": SUBCLASS}), "DDP802")
    assert [(f.location.line, f.severity) for f in found] == [
        (_line(SUBCLASS, "super().__init__(dataset, batch_size=batch_size, shuffle=True)"), "error")]


def test_a_dataloader_subclass_built_with_its_sampler_is_sharded(tmp_path):
    # twin: the factory hands True, the sampler's side
    body = SUBCLASS.replace("distributed=False)", "distributed=True)")
    assert _codes(lint_tree(tmp_path, {"train.py": body}), "DDP802") == []


# ----------------------------------------- a loss method of the module inside, fed the wrapper's outputs
# The step runs the wrapper's forward (`codes = self.model_ddp(x)`) and hands its outputs to a
# loss method of the module inside (`self.model.objective(codes)`), through a helper's
# parameters: the forward prepared the reducer, and the backward runs through it.
FED = """import torch
import torch.distributed as dist
from torch import nn


class Hasher(nn.Module):
    def __init__(self):
        super().__init__()
        self.encode = nn.Linear(4, 8)

    def forward(self, x):
        h = self.encode(x)
        return h, torch.tanh(h)

    def objective(self, feats, codes):
        return (codes.abs() - 1).pow(2).mean() + feats.pow(2).mean()


class Runner:
    def __init__(self):
        dist.init_process_group("gloo")
        self.model = Hasher()
        self.model_ddp = nn.parallel.DistributedDataParallel(self.model)
        self.optimizer = torch.optim.SGD(self.model.parameters(), lr=0.1)

    def compute_loss(self, feats=None, codes=None):
        return self.model.objective(feats=feats, codes=codes)

    def train_epoch(self):
        for step in range(10):
            x = torch.randn(8, 4)
            feats, codes = self.model_ddp(x) if self.model_ddp is not None else self.model(x)
            loss = self.compute_loss(feats=feats, codes=codes)
            self.optimizer.zero_grad()
            loss.backward()
            self.optimizer.step()


if __name__ == "__main__":
    Runner().train_epoch()
"""


def test_a_loss_method_of_the_module_fed_the_wrappers_outputs_runs_through_it(tmp_path):
    assert _codes(lint_tree(tmp_path, {"train.py": FED}), "DDP810") == []


def test_a_loss_method_fed_the_module_insides_own_forward_goes_round_it(tmp_path):
    # twin: the forward is the module inside's too
    body = FED.replace("self.model_ddp(x) if self.model_ddp is not None else self.model(x)", "self.model(x)")
    found = _codes(lint_tree(tmp_path, {"train.py": body}), "DDP810")
    assert [(f.location.line, f.severity) for f in found] == [(_line(body, "loss.backward()"), "error")]


# ------------------------------------------------------- a method called `backward` that is no backward
# An evaluation set built in a constructor iterates a plain loader and maps each sample back to its
# scale with `self.normalizer.backward(x)`, a method of the project's own that back-propagates
# nothing: the loader trains nothing.
NAMED_BACKWARD = """import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel
from torch.utils.data import DataLoader, DistributedSampler, TensorDataset


class Normalizer:
    def __init__(self):
        self.scale = 2.0

    def backward(self, x):
        return x * self.scale


class Generated(torch.utils.data.Dataset):
    def __init__(self, model, dataset):
        self.normalizer = Normalizer()
        loader = DataLoader(dataset, batch_size=1, shuffle=True)
        self.items = []
        for (x,) in loader:
            self.items.append(self.normalizer.backward(model(x)))

    def __len__(self):
        return len(self.items)

    def __getitem__(self, i):
        return self.items[i]


def main():
    dist.init_process_group("gloo")
    data = TensorDataset(torch.randn(64, 4))
    model = DistributedDataParallel(torch.nn.Linear(4, 4))
    sampler = DistributedSampler(data)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for epoch in range(3):
        sampler.set_epoch(epoch)
        for (x,) in DataLoader(data, batch_size=8, sampler=sampler):
            optimizer.zero_grad()
            model(x).sum().backward()
            optimizer.step()
        Generated(model.module, data)


if __name__ == "__main__":
    main()
"""


def test_a_project_method_named_backward_that_back_propagates_nothing_trains_no_loader(tmp_path):
    assert _codes(lint_tree(tmp_path, {"train.py": NAMED_BACKWARD}), "DDP802") == []


def test_a_project_backward_that_back_propagates_trains_its_loader(tmp_path):
    # twin: the project's own `backward` does run the autograd backward
    body = NAMED_BACKWARD.replace("        return x * self.scale", "        x.sum().backward()\n        return x")
    found = _codes(lint_tree(tmp_path, {"train.py": body}), "DDP802")
    assert [f.location.line for f in found] == [_line(body, "loader = DataLoader(dataset, batch_size=1")]


# ------------------------------------------ a step helper whose backward runs on `mode == "train"`
# The loop calls `step(batch, model, mode="train", ...)`; the helper back-propagates only under
# `if mode == "train":`. The call's constant takes that side: the loop trains, and its loader,
# whose sampler a helper returns (`make_sampler(ds)` -> a RandomSampler), is unsharded.
MODED = """import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel
from torch.utils.data import DataLoader, RandomSampler, TensorDataset


def make_sampler(dataset):
    sampler = RandomSampler(dataset)
    return sampler


def step(batch, model, mode="train", optimizer=None):
    loss = model(batch).pow(2).mean()
    if mode == "train":
        loss.backward()
        optimizer.step()
    return loss


def main():
    dist.init_process_group("gloo")
    data = TensorDataset(torch.randn(64, 4))
    model = DistributedDataParallel(torch.nn.Linear(4, 1))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    loader = DataLoader(data, batch_size=8, sampler=make_sampler(data))
    held_out = DataLoader(TensorDataset(torch.randn(16, 4)), batch_size=8)
    for epoch in range(3):
        for (x,) in loader:
            step(x, model, mode="train", optimizer=optimizer)
        with torch.no_grad():
            for (x,) in held_out:
                step(x, model, mode="val")


if __name__ == "__main__":
    main()
"""


def test_a_loop_whose_helper_back_propagates_on_the_mode_it_is_handed_trains_its_loader(tmp_path):
    found = _codes(lint_tree(tmp_path, {"train.py": MODED}), "DDP802")
    assert [(f.location.line, "RandomSampler" in f.message) for f in found] == [
        (_line(MODED, "loader = DataLoader(data"), True)]


def test_a_loop_handing_the_evaluation_mode_trains_nothing(tmp_path):
    # twin: the same helper handed mode="val" never back-propagates
    body = MODED.replace('step(x, model, mode="train", optimizer=optimizer)', 'step(x, model, mode="val")')
    assert _codes(lint_tree(tmp_path, {"train.py": body}), "DDP802") == []


def test_a_helper_returning_a_distributed_sampler_shards_the_loader(tmp_path):
    # twin of the sampler's helper: it returns a DistributedSampler
    body = MODED.replace("sampler = RandomSampler(dataset)", "sampler = DistributedSampler(dataset)").replace(
        "RandomSampler, TensorDataset", "DistributedSampler, TensorDataset")
    assert _codes(lint_tree(tmp_path, {"train.py": body}), "DDP802") == []


# --------------------------------------------------------------------- a wrapper made and dropped
# The trainer hands its model to a set-up helper that wraps the parameter in DDP and returns only
# the optimizer: the wrapper is dropped, and the trainer's own field - the plain module - trains.
DROPPED = """import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel


def build_optimizer(model, distributed=True):
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    if distributed:
        model = DistributedDataParallel(model)
    return optimizer


class Trainer:
    def __init__(self):
        dist.init_process_group("gloo")
        self.parser = torch.nn.Linear(4, 1)
        self.optimizer = build_optimizer(self.parser, distributed=True)

    def train(self):
        for step in range(10):
            loss = self.parser(torch.randn(8, 4)).pow(2).mean()
            self.optimizer.zero_grad()
            loss.backward()
            self.optimizer.step()


if __name__ == "__main__":
    Trainer().train()
"""


def test_a_wrapper_a_helper_makes_and_drops_leaves_the_plain_module_training(tmp_path):
    found = _codes(lint_tree(tmp_path, {"train.py": DROPPED}), "DDP810")
    assert [(f.location.line, f.severity) for f in found] == [(_line(DROPPED, "loss.backward()"), "error")]


def test_a_wrapper_the_helper_returns_and_the_trainer_keeps_is_trained_through(tmp_path):
    # twin: the helper hands the wrapper back and the trainer keeps it in its field
    body = DROPPED.replace("    return optimizer\n", "    return model, optimizer\n").replace(
        "self.optimizer = build_optimizer(self.parser, distributed=True)",
        "self.parser, self.optimizer = build_optimizer(self.parser, distributed=True)")
    assert _codes(lint_tree(tmp_path, {"train.py": body}), "DDP810") == []


# ---------------------------------------------------------------- a table of loaders, taken by key
# The builder keeps its loaders in a dict by split and returns the dict; the script binds it and
# takes `loaders["train"]` for the training loop.
TABLED = {"train.py": """import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel

from loaders import get_loaders


def fit(loader, model, optimizer):
    for (x,) in loader:
        optimizer.zero_grad()
        model(x).sum().backward()
        optimizer.step()


def main():
    dist.init_process_group("gloo")
    model = DistributedDataParallel(torch.nn.Linear(4, 1))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    loaders = get_loaders(8)
    train_loader = loaders["train"]
    for epoch in range(3):
        fit(train_loader, model, optimizer)


if __name__ == "__main__":
    main()
""", "loaders.py": """import torch
from torch.utils import data


def get_loaders(batch_size):
    table = {}
    table["train"] = data.DataLoader(data.TensorDataset(torch.randn(64, 4)), batch_size=batch_size, shuffle=True)
    table["valid"] = data.DataLoader(data.TensorDataset(torch.randn(16, 4)), batch_size=1, shuffle=False)
    return table
"""}


def test_a_loader_kept_by_key_in_a_returned_table_trains_where_the_caller_takes_its_key(tmp_path):
    found = _codes(lint_tree(tmp_path, dict(TABLED)), "DDP802")
    assert [f.location.line for f in found] == [_line(TABLED["loaders.py"], 'table["train"] =')]


def test_the_key_the_caller_takes_decides_which_loader_trains(tmp_path):
    # twin: the script trains on the "valid" entry; the "train" one is never iterated
    files = dict(TABLED, **{"train.py": TABLED["train.py"].replace('loaders["train"]', 'loaders["valid"]')})
    found = _codes(lint_tree(tmp_path, files), "DDP802")
    assert [f.location.line for f in found] == [_line(TABLED["loaders.py"], 'table["valid"] =')]


def test_a_field_wrapped_in_place_beside_a_helper_that_drops_its_own_wrapper_is_the_ddp_forward(tmp_path):
    # twin: the trainer wraps its field itself after the helper: its forward is the wrapper's
    body = DROPPED.replace("self.optimizer = build_optimizer(self.parser, distributed=True)",
                           "self.optimizer = build_optimizer(self.parser, distributed=True)\n"
                           "        self.parser = DistributedDataParallel(self.parser)")
    assert _codes(lint_tree(tmp_path, {"train.py": body}), "DDP810") == []
