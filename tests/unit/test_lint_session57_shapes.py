"""Shapes from session 57, each with its twin, in our own words: a sampler's set_epoch handed a
value the epoch loop around it never moves (`set_epoch(args.epochs)` in `for epoch in
range(args.epochs)`), in two training stages; a seeding helper whose default seed is a module
constant; a loader's options spread from a method's dict; a loader class picked by a
conditional, with a worker-init factory's seed handed through a `**` dict; Lightning's
seed_everything re-exported by a local module, under an option the script requires for
distributed runs; a DDP model handed back by the training helper and evaluated on rank 0; two
loaders a local wrapper iterates; a split drawn with numpy's seeded RandomState."""

from __future__ import annotations

from ddpdoctor.lint import cache
from ddpdoctor.lint.driver import gather
from tests.unit.test_lint_round50_shapes import at, line_of
from tests.unit.test_lint_session39_shapes import lint_tree


def lint_one(tmp_path, code: str, **more: str):
    return lint_tree(tmp_path, {"train.py": code, **more})


def messages(found, code: str) -> list:
    return [f.message for f in found if f.code == code]


# -------------------------------------------------- set_epoch of a value the loop never moves
STAGES = """
import argparse
import torch
import torch.distributed as dist
from torch.utils.data import DataLoader, DistributedSampler, TensorDataset
from torch.nn.parallel import DistributedDataParallel as DDP

parser = argparse.ArgumentParser()
parser.add_argument("--epochs", type=int, default=10)
args = parser.parse_args()


def make_loader(n):
    data = TensorDataset(torch.randn(n, 4))
    sampler = DistributedSampler(data)
    return DataLoader(data, batch_size=8, sampler=sampler), sampler


def run(model, loader):
    for (x,) in loader:
        model(x).sum().backward()


dist.init_process_group("gloo")
model = DDP(torch.nn.Linear(4, 1))
warm_loader, warm_sampler = make_loader(64)
for epoch in range(args.epochs // 2):
    warm_sampler.set_epoch({warm})  # the warm-up stage
    {moves}
    run(model, warm_loader)
loader, sampler = make_loader(256)
for epoch in range(args.epochs):
    sampler.set_epoch({main})  # the main stage
    run(model, loader)
"""


def test_set_epoch_of_a_value_the_loop_never_moves_is_a_warning_in_each_stage(tmp_path):
    code = STAGES.format(warm="args.epochs", main="args.epochs", moves="pass")
    found = lint_one(tmp_path, code)
    assert sorted(at(found, "DDP804")) == [(line_of(code, "# the warm-up stage"), "warning"),
                                          (line_of(code, "# the main stage"), "warning")]
    said = messages(found, "DDP804")
    assert len(said) == 2 and all("(`args.epochs`, which the loop at " in m and "never changes)" in m for m in said)


def test_its_twin_hands_the_loop_its_own_epoch(tmp_path):
    code = STAGES.format(warm="epoch", main="epoch", moves="pass")
    assert at(lint_one(tmp_path, code), "DDP804") == []


def test_a_value_the_loop_moves_is_the_epoch_too(tmp_path):
    # `args.epochs = epoch` in the warm-up loop: that set_epoch varies; the main stage's still not
    code = STAGES.format(warm="args.start", main="epoch", moves="args.start = epoch")
    assert at(lint_one(tmp_path, code), "DDP804") == []


def test_an_attribute_a_method_may_move_is_not_taken_as_fixed(tmp_path):
    # `self.epoch`: a method the loop calls may advance it
    code = """
import torch
import torch.distributed as dist
from torch.utils.data import DataLoader, DistributedSampler, TensorDataset
from torch.nn.parallel import DistributedDataParallel as DDP


class Trainer:
    def __init__(self):
        self.epoch = 0
        data = TensorDataset(torch.randn(64, 4))
        self.sampler = DistributedSampler(data)
        self.loader = DataLoader(data, batch_size=8, sampler=self.sampler)
        self.model = DDP(torch.nn.Linear(4, 1))

    def step_epoch(self):
        for (x,) in self.loader:
            self.model(x).sum().backward()
        self.epoch += 1

    def fit(self, n):
        for _ in range(n):
            self.sampler.set_epoch(self.epoch)
            self.step_epoch()


dist.init_process_group("gloo")
Trainer().fit(5)
"""
    assert at(lint_one(tmp_path, code), "DDP804") == []


def test_the_findings_of_each_stage_come_back_from_the_cache(tmp_path, monkeypatch):
    # a typed record in the facts (the value and the loop it holds still in) is read back as
    # written: the cached run says what the first said
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    monkeypatch.delenv("DDPDOCTOR_LINT_CACHE", raising=False)
    monkeypatch.setattr(cache, "_said", set())
    code = STAGES.format(warm="args.epochs", main="args.epochs", moves="pass")
    script = tmp_path / "train.py"
    script.write_text(code)
    first = gather(str(script))
    again = gather(str(script))
    assert not first.cached and again.cached
    assert again.samplers == first.samplers
    assert any(s.invariant_epoch for s in again.samplers) and any(s.more_constant_epochs for s in again.samplers)


# -------------------------------------------------- a seeding helper whose default is a module constant
DEFAULT_SEED = """
import os
import random
import numpy as np
import torch
import torch.distributed as dist
from torch.utils.data import DataLoader, Dataset, DistributedSampler
from torch.nn.parallel import DistributedDataParallel as DDP

SEED = {seed}


def set_seed(seed=SEED):
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)


class Crops(Dataset):
    def __len__(self):
        return 64

    def __getitem__(self, i):
        return torch.randn(4) * random.random()


set_seed()  # at import, before main builds its loader


def main():
    dist.init_process_group("gloo")
    model = DDP(torch.nn.Linear(4, 1))
    data = Crops()
    sampler = DistributedSampler(data)
    loader = DataLoader(data, batch_size=8, sampler=sampler, num_workers=4)  # the loader
    for epoch in range(2):
        sampler.set_epoch(epoch)
        for x in loader:
            model(x).sum().backward()


main()
"""


def test_a_seed_left_at_a_module_constant_default_seeds_every_rank_alike(tmp_path):
    code = DEFAULT_SEED.format(seed="42")
    assert at(lint_one(tmp_path, code), "DDP808") == [(line_of(code, "# the loader"), "warning")]


def test_its_twin_defaults_to_a_seed_with_the_rank_in_it(tmp_path):
    code = DEFAULT_SEED.format(seed="42 + int(os.environ[\"RANK\"])")
    assert at(lint_one(tmp_path, code), "DDP808") == []


# -------------------------------------------------- a worker-init factory behind a picked class
FACTORY = """
import random
import numpy as np
import torch
import torch.distributed as dist
from torch.utils.data import DataLoader, Dataset, DistributedSampler
from torch.nn.parallel import DistributedDataParallel as DDP


class Clips(Dataset):
    def __len__(self):
        return 64

    def __getitem__(self, i):
        start = random.randint(0, 10)
        return torch.arange(start, start + 4).float()


class PinnedLoader(DataLoader):
    pass


def seeded_worker(seed):
    def init(worker_id):
        np.random.seed(seed)  # the worker seeding
        random.seed(seed)
    return init


def build(dataset, seed=1024, num_workers=0, pinned=False):
    sampler = DistributedSampler(dataset)
    cls = PinnedLoader if pinned else DataLoader
    return cls(dataset, batch_size=8, sampler=sampler, num_workers=num_workers,
               worker_init_fn=seeded_worker(seed)), sampler


dist.init_process_group("gloo")
cfg = {{"seed": 7, "workers": 4}}
options = dict(seed={seed}, num_workers=cfg.get("workers", 4), pinned=True)
loader, sampler = build(Clips(), **options)
model = DDP(torch.nn.Linear(4, 1))
for epoch in range(2):
    sampler.set_epoch(epoch)
    for x in loader:
        model(x).sum().backward()
"""


def test_a_factorys_seed_handed_through_a_spread_dict_is_every_ranks_alike(tmp_path):
    code = FACTORY.format(seed='cfg.get("seed", 1024)')
    assert at(lint_one(tmp_path, code), "DDP808") == [(line_of(code, "# the worker seeding"), "warning")]


def test_its_twin_hands_the_factory_a_seed_with_the_rank(tmp_path):
    code = FACTORY.format(seed='cfg.get("seed", 1024) + dist.get_rank()')
    assert at(lint_one(tmp_path, code), "DDP808") == []


# -------------------------------------------------- a loader's options from a method's dict
SPREAD = """
import random
import torch
import torch.distributed as dist
from torch.utils.data import DataLoader, Dataset, DistributedSampler
from torch.nn.parallel import DistributedDataParallel as DDP


class Crops(Dataset):
    def __len__(self):
        return 64

    def __getitem__(self, i):
        return torch.randn(4) * random.random()


class Trainer:
    def __init__(self):
        torch.manual_seed(0)
        self.model = DDP(torch.nn.Linear(4, 1))

    def _loader_options(self):
        return {{"num_workers": {workers}, "pin_memory": False}}

    def fit(self):
        data = Crops()
        sampler = DistributedSampler(data)
        loader = DataLoader(data, batch_size=8, sampler=sampler, **self._loader_options())  # the loader
        for epoch in range(2):
            sampler.set_epoch(epoch)
            for x in loader:
                self.model(x).sum().backward()


dist.init_process_group("gloo")
Trainer().fit()
"""


def test_options_a_method_returns_are_read_where_they_are_spread(tmp_path):
    code = SPREAD.format(workers=8)
    assert at(lint_one(tmp_path, code), "DDP808") == [(line_of(code, "# the loader"), "warning")]


def test_its_twin_spreads_no_workers(tmp_path):
    code = SPREAD.format(workers=0)
    assert at(lint_one(tmp_path, code), "DDP808") == []


# -------------------------------------------------- seed_everything through a local module
REEXPORT = """
import argparse
import random
import torch
import torch.distributed as dist
from torch.utils.data import DataLoader, Dataset, DistributedSampler
from torch.nn.parallel import DistributedDataParallel as DDP
from helpers.seeding import seed_everything

parser = argparse.ArgumentParser()
parser.add_argument("--seed", type=int, default=None)
parser.add_argument("--gpus", type=int, default=1)
args = parser.parse_args()
{require}


class Crops(Dataset):
    def __len__(self):
        return 64

    def __getitem__(self, i):
        return torch.randn(4) * random.random()


if args.seed is not None:
    seed_everything(args.seed{workers})
dist.init_process_group("gloo")
model = DDP(torch.nn.Linear(4, 1))
data = Crops()
sampler = DistributedSampler(data)
loader = DataLoader(data, batch_size=8, sampler=sampler, num_workers=4)  # the loader
for epoch in range(2):
    sampler.set_epoch(epoch)
    for x in loader:
        model(x).sum().backward()
"""
SEEDING = """
from lightning.pytorch import seed_everything
"""
REQUIRED = """if args.seed is None and args.gpus > 1:
    raise ValueError("--seed must be given for a distributed run")"""


def test_a_re_exported_seed_everything_required_for_distributed_runs_seeds_alike(tmp_path):
    code = REEXPORT.format(require=REQUIRED, workers="")
    found = lint_tree(tmp_path, {"train.py": code, "helpers/__init__.py": "", "helpers/seeding.py": SEEDING})
    assert at(found, "DDP808") == [(line_of(code, "# the loader"), "warning")]


def test_its_twins_seed_the_workers_per_rank_or_leave_the_seed_unset(tmp_path):
    files = {"helpers/__init__.py": "", "helpers/seeding.py": SEEDING}
    code = REEXPORT.format(require=REQUIRED, workers=", workers=True")
    assert at(lint_tree(tmp_path / "a", {"train.py": code, **files}), "DDP808") == []
    code = REEXPORT.format(require="", workers="")  # --seed optional and unset by default
    assert at(lint_tree(tmp_path / "b", {"train.py": code, **files}), "DDP808") == []


# -------------------------------------------------- the model a training helper hands back
HANDED_BACK = """
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, DistributedSampler, TensorDataset


def train_one_epoch(model, loader, opt):
    for (x,) in loader:
        opt.zero_grad()
        model(x).sum().backward()
        opt.step()
    return {returned}, 0.0


@torch.no_grad()
def evaluate(model, loader):
    for (x,) in loader:
        model(x)  # the evaluation forward


dist.init_process_group("gloo")
rank = dist.get_rank()
model = DDP(torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.BatchNorm1d(4)))
data = TensorDataset(torch.randn(64, 4))
sampler = DistributedSampler(data)
loader = DataLoader(data, batch_size=8, sampler=sampler)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for epoch in range(3):
    sampler.set_epoch(epoch)
    model, loss = train_one_epoch(model, loader, opt)
    if rank == 0:
        evaluate(model, loader)
"""


def test_a_ddp_model_handed_back_by_the_training_helper_is_still_the_ddp_model(tmp_path):
    code = HANDED_BACK.format(returned="model")
    assert at(lint_one(tmp_path, code), "DDP801") == [(line_of(code, "# the evaluation forward"), "warning")]


def test_its_twin_hands_back_the_plain_module(tmp_path):
    code = HANDED_BACK.format(returned="model.module")
    assert at(lint_one(tmp_path, code), "DDP801") == []


# -------------------------------------------------- two loaders a local wrapper iterates
MIXED = """
import torch
from accelerate import Accelerator
from torch.utils.data import DataLoader, Dataset


class Frames(Dataset):
    def __init__(self, split):
        self.items = torch.load(f"{{split}}.pt")

    def __len__(self):
        return len(self.items)

    def __getitem__(self, i):
        return self.items[i]


class Mixed:
    def __init__(self, first, second):
        self.first = first
        self.second = second

    def __iter__(self):
        self.a = iter(self.first)
        self.b = iter({second})
        return self

    def __next__(self):
        return next(self.a) if torch.rand(1).item() < 0.9 else next(self.b)


accelerator = Accelerator()
model = torch.nn.Linear(4, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
first_set, second_set = Frames("first"), Frames("second")
one = DataLoader(first_set, batch_size=8, shuffle=True)  # the first loader
two = DataLoader(second_set, batch_size=8, shuffle=True)  # the second loader
loader = Mixed(one, two)
model, opt, loader = accelerator.prepare(model, opt, loader)
for (x,) in loader:
    accelerator.backward(model(x).sum())
    opt.step()
"""


def test_each_loader_a_local_wrapper_iterates_is_a_training_loader(tmp_path):
    code = MIXED.format(second="self.second")
    assert sorted(at(lint_one(tmp_path, code), "DDP802")) == [(line_of(code, "# the first loader"), "error"),
                                                             (line_of(code, "# the second loader"), "error")]


def test_its_twin_keeps_the_second_loader_without_iterating_it(tmp_path):
    code = MIXED.format(second="self.first")
    assert at(lint_one(tmp_path, code), "DDP802") == [(line_of(code, "# the first loader"), "error")]


# -------------------------------------------------- a split drawn with numpy's seeded RandomState
SPLIT = """
import numpy as np
import torch
import torch.distributed as dist
from torch.utils.data import DataLoader, Dataset, DistributedSampler
from torch.nn.parallel import DistributedDataParallel as DDP
import torchvision.transforms as T


class Table(Dataset):
    def __init__(self, n, transform=None):
        self.n, self.transform = n, transform

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        x = torch.full((4,), float(i))
        return self.transform(x) if self.transform else x


class Part(Dataset):
    def __init__(self, base, idx):
        self.base, self.idx = base, idx

    def __len__(self):
        return len(self.idx)

    def __getitem__(self, i):
        return self.base[self.idx[i]]


torch.manual_seed(42)
dist.init_process_group("gloo")
base = Table(100{transform})
perm = np.random.RandomState(0).permutation(100)
train = Part(base, perm[:80])
sampler = DistributedSampler(train)
loader = DataLoader(train, batch_size=8, sampler=sampler, num_workers=4)  # the loader
model = DDP(torch.nn.Linear(4, 1))
for epoch in range(2):
    sampler.set_epoch(epoch)
    for x in loader:
        model(x).sum().backward()
"""


def test_a_split_drawn_from_a_seeded_random_state_is_no_draw_in_the_workers(tmp_path):
    assert at(lint_one(tmp_path, SPLIT.format(transform="")), "DDP808") == []


def test_its_twin_flips_in_the_workers(tmp_path):
    code = SPLIT.format(transform=", transform=T.RandomHorizontalFlip()")
    assert at(lint_one(tmp_path, code), "DDP808") == [(line_of(code, "# the loader"), "warning")]


def test_a_wrapper_built_by_keywords_alone_is_read_the_same(tmp_path):
    # (no positional argument at all: nothing to skip as the first)
    code = MIXED.format(second="self.second").replace("loader = Mixed(one, two)", "loader = Mixed(first=one, second=two)")
    assert sorted(at(lint_one(tmp_path, code), "DDP802")) == [(line_of(code, "# the first loader"), "error"),
                                                             (line_of(code, "# the second loader"), "error")]



def test_one_loop_handing_the_fixed_value_twice_is_one_finding(tmp_path):
    # (one finding per loop, however many of its calls hold still)
    code = STAGES.format(warm="args.epochs", main="args.epochs", moves="warm_sampler.set_epoch(args.epochs)")
    assert sorted(at(lint_one(tmp_path, code), "DDP804")) == [(line_of(code, "# the warm-up stage"), "warning"),
                                                              (line_of(code, "# the main stage"), "warning")]
