"""Shapes from session 92 (holdout 130's leftovers and holdout 131's reading), each with its twin,
in our own words."""

from __future__ import annotations

from tests.unit.test_lint_session39_shapes import lint_tree
from tests.unit.test_lint_session61_shapes import _codes, _line

# ------------------------------------ a rank's own skip whose other side ends the rank
# `if not math.isfinite(value):` holding `if keep_going and rank == 0: continue / else: sys.exit(1)`:
# the ranks that do not skip exit with an error, so none of them goes on past the outer `if` to
# the collectives after it (no DDP801 there). What splits the ranks is the loss value each rank
# tests: a rank-local decision (DDP809) at the outer test.
SKIP_OR_EXIT = """import math
import sys
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP


def main():
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    model = DDP(torch.nn.Linear(8, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    keep_going = True
    for step in range(10):
        x = torch.randn(4, 8)
        loss = model(x).sum()
        value = loss.item()
        if not math.isfinite(value):
            if keep_going and rank == 0:
                print("skipping")
                continue
            else:
                print("stopping")
                sys.exit(1)
        opt.zero_grad()
        loss.backward()
        opt.step()
        total = torch.tensor([value])
        dist.all_reduce(total)


if __name__ == "__main__":
    main()
"""


def test_a_rank_skip_whose_other_side_exits_splits_nothing_after_it(tmp_path):
    found = lint_tree(tmp_path, {"train.py": SKIP_OR_EXIT})
    assert _codes(found, "DDP801") == []
    assert [f.location.line for f in _codes(found, "DDP809")] == [_line(SKIP_OR_EXIT, "if not math.isfinite")]


def test_a_rank_skip_whose_other_side_goes_on_still_splits_the_ranks(tmp_path):
    # twin: the ranks that do not skip go on to the backward and the all-reduce
    body = SKIP_OR_EXIT.replace("                sys.exit(1)", "                pass")
    found = lint_tree(tmp_path, {"train.py": body})
    assert [f.location.line for f in _codes(found, "DDP809") + _codes(found, "DDP801")] == \
        [_line(body, "if keep_going and rank == 0")]


def test_a_rank_skip_beside_a_raise_in_the_loop_is_no_divergence(tmp_path):
    # rank 0 skips, every other rank raises: the launcher ends the job, nobody waits
    body = SKIP_OR_EXIT.replace("""        if not math.isfinite(value):
            if keep_going and rank == 0:
                print("skipping")
                continue
            else:
                print("stopping")
                sys.exit(1)""", """        if keep_going and rank == 0:
            continue
        else:
            raise RuntimeError("stop")""")
    found = lint_tree(tmp_path, {"train.py": body})
    assert _codes(found, "DDP809") + _codes(found, "DDP801") == []


def test_a_rank_skip_beside_a_clean_exit_in_the_loop_is_still_told(tmp_path):
    # twin: `sys.exit(0)` ends the others cleanly; torchrun waits for rank 0, alone in the loop
    body = SKIP_OR_EXIT.replace("""        if not math.isfinite(value):
            if keep_going and rank == 0:
                print("skipping")
                continue
            else:
                print("stopping")
                sys.exit(1)""", """        if keep_going and rank == 0:
            print("skipping")
        else:
            sys.exit(0)""")
    found = lint_tree(tmp_path, {"train.py": body})
    assert [f.location.line for f in _codes(found, "DDP809") + _codes(found, "DDP801")] == \
        [_line(body, "if keep_going and rank == 0")]


# ------------------------------------------- the module inside the wrapper, picked by a conditional expression
# `out = model(x) if not is_distributed else model.module(x)` with `model = DDP(model)` under
# `if is_distributed:`: the distributed side's forward runs round the wrapper (DDP810), as the
# same choice written as an `if` statement is. A side of a conditional expression holds its test
# as an `if`'s block does, `not x` said as x on the other side.
PICKED = """import os
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler


def main():
    is_distributed = "RANK" in os.environ
    if is_distributed:
        dist.init_process_group("gloo")
    model = torch.nn.Linear(8, 1)
    if is_distributed:
        model = DDP(model)
    data = TensorDataset(torch.randn(64, 8))
    sampler = DistributedSampler(data) if is_distributed else None
    loader = DataLoader(data, batch_size=4, sampler=sampler, shuffle=sampler is None)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for epoch in range(3):
        if sampler is not None:
            sampler.set_epoch(epoch)
        for (x,) in loader:
            out = model(x) if not is_distributed else model.module(x)
            loss = out.sum()
            loss.backward()
            opt.step()
            opt.zero_grad()


if __name__ == "__main__":
    main()
"""


def test_the_module_inside_picked_by_a_conditional_expression_bypasses_the_wrapper(tmp_path):
    found = _codes(lint_tree(tmp_path, {"train.py": PICKED}), "DDP810")
    assert [(f.location.line, f.severity.value) for f in found] == [(_line(PICKED, "loss.backward()"), "error")]


def test_the_wrapper_picked_by_a_conditional_expression_on_the_distributed_side_is_fine(tmp_path):
    # twin: the sides the other way round - the distributed run's forward is the wrapper's
    body = PICKED.replace("model(x) if not is_distributed else model.module(x)",
                          "model.module(x) if not is_distributed else model(x)")
    assert _codes(lint_tree(tmp_path, {"train.py": body}), "DDP810") == []


# ---------------------------------------------- a transform built in the dataset's constructor draws
# `random.seed(seed + rank)` seeds each rank apart. A dataset whose constructor builds a transform
# that shuffles the order of its own steps (`random.shuffle(steps)`) picks no items by that draw:
# no DDP803. An inner dataset it builds that shuffles its items is one (the twin).
BUILT_INSIDE = """import random
import torch
import torch.distributed as dist
from torch.utils.data import DataLoader, Dataset
from torch.utils.data.distributed import DistributedSampler


class Noise:
    def __call__(self, x):
        return x + 0.1


class Blur:
    def __call__(self, x):
        return x * 0.9


class Degrade:
    def __init__(self, p=0.5):
        self.p = p
        steps = [Noise(), Blur()]
        random.shuffle(steps)
        self.steps = steps

    def __call__(self, x):
        for step in self.steps:
            x = step(x)
        return x


class Shards:
    def __init__(self, n):
        items = list(range(n))
        random.shuffle(items)
        self.items = items

    def __len__(self):
        return len(self.items)

    def __getitem__(self, i):
        return self.items[i]


class Lines(Dataset):
    def __init__(self, n):
        self.aug = INNER
        self.n = n

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        return torch.full((4,), float(i))


def main():
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    random.seed(1234 + rank)
    data = Lines(64)
    sampler = DistributedSampler(data)
    loader = DataLoader(data, batch_size=4, sampler=sampler)
    model = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(4, 1))
    for epoch in range(2):
        sampler.set_epoch(epoch)
        for x in loader:
            model(x).sum().backward()


if __name__ == "__main__":
    main()
"""


def test_a_transform_that_shuffles_its_own_steps_picks_no_items(tmp_path):
    body = BUILT_INSIDE.replace("INNER", "Degrade(p=0.25)")
    assert _codes(lint_tree(tmp_path, {"train.py": body}), "DDP803") == []


def test_an_inner_dataset_that_shuffles_its_items_still_picks_them(tmp_path):
    # twin: what the constructor builds is a dataset of its own, drawn apart on each rank
    body = BUILT_INSIDE.replace("INNER", "Shards(n)")
    found = _codes(lint_tree(tmp_path, {"train.py": body}), "DDP803")
    assert [f.location.line for f in found] == [_line(body, "sampler = DistributedSampler(")]


# ---------------------------------------------- a sampler's shuffle handed in from a config section
# `data_config = config["data"]`, then `make_sampler(ds, shuffle=data_config["shuffle"])` whose
# helper builds `DistributedSampler(ds, shuffle=shuffle)`: with `shuffle: False` in every config
# beside the script the sampler keeps its order, and no set_epoch is needed (no DDP804).
SECTION_SHUFFLE = """import sys
import torch
import torch.distributed as dist
import yaml
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler


def make_sampler(dataset, shuffle, distributed):
    if distributed:
        return DistributedSampler(dataset, shuffle=shuffle)
    return None


def main():
    dist.init_process_group("gloo")
    with open(sys.argv[1]) as stream:
        config = yaml.safe_load(stream)
    data_config = config["data"]
    data = TensorDataset(torch.randn(64, 8))
    loader = DataLoader(data, batch_size=4,
                        sampler=make_sampler(data, shuffle=data_config["shuffle"], distributed=True))
    model = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(8, 1))
    for epoch in range(3):
        for (x,) in loader:
            model(x).sum().backward()


if __name__ == "__main__":
    main()
"""


def test_a_sampler_unshuffled_by_every_configs_section_needs_no_set_epoch(tmp_path):
    files = {"train.py": SECTION_SHUFFLE, "configs/run.yaml": "data:\n  shuffle: false\n  seed: 1\n"}
    assert _codes(lint_tree(tmp_path, files), "DDP804") == []


def test_a_sampler_shuffled_by_a_configs_section_still_needs_set_epoch(tmp_path):
    # twin: the config shuffles
    files = {"train.py": SECTION_SHUFFLE, "configs/run.yaml": "data:\n  shuffle: true\n  seed: 1\n"}
    found = _codes(lint_tree(tmp_path, files), "DDP804")
    assert len(found) == 1


# ---------------------------------------------- a dataset class handed to a builder through a name
# `dataset_class = Shaken`, then `build(dataset_class, 64)` whose body runs `ds_type(n)`: the
# loader's dataset is a Shaken, whose __getitem__ draws; with every rank seeding torch alike its
# workers draw alike (DDP808). The twin hands a class that draws nothing (the drawing class the
# script builds elsewhere, read in the process, is not the loader's).
HANDED_CLASS = """import random
import torch
import torch.distributed as dist
from torch.utils.data import DataLoader, Dataset
from torch.utils.data.distributed import DistributedSampler


class Shaken(Dataset):
    def __init__(self, n):
        self.n = n

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        return torch.full((4,), float(i) + random.random())


class Crops(Dataset):
    def __init__(self, n):
        self.n = n

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        return torch.full((4,), float(random.randint(0, i)))


class Plain(Dataset):
    def __init__(self, n):
        self.n = n

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        return torch.full((4,), float(i))


def make_loader(seed):
    def build(ds_type, n):
        parts = []
        for _ in range(2):
            parts.append(ds_type(n))
        return torch.utils.data.ConcatDataset(parts)

    dataset_class = CLASS
    data = build(dataset_class, 64)
    sampler = DistributedSampler(data)
    return DataLoader(data, batch_size=4, sampler=sampler, num_workers=4)


def main():
    dist.init_process_group("gloo")
    torch.manual_seed(0)
    loader = make_loader(0)
    model = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(4, 1))
    for epoch in range(2):
        loader.sampler.set_epoch(epoch)
        for x in loader:
            model(x).sum().backward()
    probe = Crops(8)
    print(probe[0])


if __name__ == "__main__":
    main()
"""


def test_a_drawing_class_handed_to_a_builder_through_a_name_draws_in_the_workers(tmp_path):
    body = HANDED_CLASS.replace("CLASS", "Shaken")
    found = _codes(lint_tree(tmp_path, {"train.py": body}), "DDP808")
    assert [f.location.line for f in found] == [_line(body, "return DataLoader(")]


def test_a_plain_class_handed_to_a_builder_through_a_name_draws_nothing(tmp_path):
    body = HANDED_CLASS.replace("CLASS", "Plain")
    assert _codes(lint_tree(tmp_path, {"train.py": body}), "DDP808") == []


# ---------------------------------------------- a class imported only for a config to name it
# The script imports `Loader` and reads it nowhere; the YAML beside it says `class: Loader`, and a
# factory builds what the config names from the script's own names (`getattr(sys.modules[
# "__main__"], name)(**args)`, beside the packages it imports by name). The
# Loader's constructor runs: its workers are seeded by the worker id alone, alike on every rank
# (DDP808). The twin's config names another class, and nothing builds the Loader.
CONFIG_BUILT = {
    "train.py": """import sys
import torch
import torch.distributed as dist
import yaml

from factory import build
from loaders import Loader, Other


def main():
    dist.init_process_group("gloo")
    with open(sys.argv[1]) as stream:
        config = yaml.safe_load(stream)
    loader = build(config["loader"])
    model = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(4, 1))
    for epoch in range(2):
        for x in loader:
            model(x).sum().backward()


if __name__ == "__main__":
    main()
""",
    "factory.py": """import importlib
import sys


def build(args, packages=()):
    args = dict(args)
    name = args.pop("class")
    modules = [importlib.import_module(p) for p in packages] + [sys.modules["__main__"]]
    for module in modules:
        if hasattr(module, name):
            return getattr(module, name)(**args)
    raise KeyError(name)
""",
    "loaders.py": """import numpy as np
import torch
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler


def by_worker(worker_id):
    np.random.seed(worker_id)


class Loader(DataLoader):
    def __init__(self, num_workers=4):
        data = TensorDataset(torch.randn(64, 4))
        DataLoader.__init__(self, data, batch_size=4, sampler=DistributedSampler(data, shuffle=False),
                            num_workers=num_workers, worker_init_fn=by_worker)


class Other:
    def __init__(self, num_workers=4):
        self.num_workers = num_workers
""",
}


def test_a_class_imported_for_the_config_to_name_is_built(tmp_path):
    files = {**CONFIG_BUILT, "configs/run.yaml": "loader:\n  class: Loader\n  num_workers: 8\n"}
    found = _codes(lint_tree(tmp_path, files), "DDP808")
    assert [(f.location.file.rsplit("/", 1)[-1], f.location.line) for f in found] == \
        [("loaders.py", _line(CONFIG_BUILT["loaders.py"], "np.random.seed(worker_id)"))]


def test_a_class_imported_but_named_by_no_config_is_not_built(tmp_path):
    files = {**CONFIG_BUILT, "configs/run.yaml": "loader:\n  class: Other\n  num_workers: 8\n"}
    assert _codes(lint_tree(tmp_path, files), "DDP808") == []


# ---------------------------------------------- a torch Module that keeps the DDP model in a field
# `class Train(nn.Module)` whose `self.model` is the DDP wrapper (under `if multi_gpu:`), and whose
# forward computes the loss as `self.model.module.get_loss(x)` on that side (the `else:` is the
# one-process run's, `self.model.get_loss(x)`): the backward runs round the wrapper (DDP810). A
# Module's own method fits itself only where it keeps no wrapper.
TRAIN_MODULE = """import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

MULTI_GPU = torch.cuda.device_count() > 1


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 1)

    def forward(self, x):
        return self.lin(x)

    def get_loss(self, x):
        return self.lin(x).pow(2).mean()


class Train(nn.Module):
    def __init__(self):
        super().__init__()
        model = Net()
        if MULTI_GPU:
            model = DDP(model)
        self.model = model
        self.opt = torch.optim.SGD(self.model.parameters(), lr=0.1)

    def forward(self, x):
        if MULTI_GPU:
            loss = DISTRIBUTED_LOSS
        else:
            loss = self.model.get_loss(x)
        loss.backward()
        self.opt.step()
        self.opt.zero_grad()


def main():
    if MULTI_GPU:
        dist.init_process_group("gloo")
    train = Train()
    for step in range(5):
        train(torch.randn(8, 4))


if __name__ == "__main__":
    main()
"""


def test_a_module_keeping_the_wrapper_that_runs_round_it_bypasses_the_wrapper(tmp_path):
    body = TRAIN_MODULE.replace("DISTRIBUTED_LOSS", "self.model.module.get_loss(x)")
    found = _codes(lint_tree(tmp_path, {"train.py": body}), "DDP810")
    assert [f.location.line for f in found] == [_line(body, "loss.backward()")]


def test_a_module_keeping_the_wrapper_that_runs_through_it_is_fine(tmp_path):
    # twin: the distributed side's loss comes from the wrapper's own forward
    body = TRAIN_MODULE.replace("DISTRIBUTED_LOSS", "self.model(x).pow(2).mean()")
    assert _codes(lint_tree(tmp_path, {"train.py": body}), "DDP810") == []


# ---------------------------------------------- a seeding helper called on import of a spawned script
# `seed_all(0)` at the script's top (outside `__main__`): each rank mp.spawn starts imports the
# script and seeds alike, so the training loader's workers draw alike (DDP808). Under `if __name__
# == "__main__":` only the launcher seeds, and the ranks keep their own generators.
SPAWN_SEEDED = """import random
import torch
import torch.distributed as dist
import torch.multiprocessing as mp
from torch.utils.data import DataLoader, Dataset
from torch.utils.data.distributed import DistributedSampler


def seed_all(seed):
    random.seed(seed)
    torch.manual_seed(seed)


class Shaken(Dataset):
    def __len__(self):
        return 64

    def __getitem__(self, i):
        return torch.full((4,), float(i) + random.uniform(0, 1))


TOP_SEED


def worker(rank, world):
    dist.init_process_group("gloo", rank=rank, world_size=world)
    data = Shaken()
    loader = DataLoader(data, batch_size=4, sampler=DistributedSampler(data), num_workers=4)
    model = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(4, 1))
    for epoch in range(2):
        loader.sampler.set_epoch(epoch)
        for x in loader:
            model(x).sum().backward()


if __name__ == "__main__":
    MAIN_SEED
    mp.spawn(worker, args=(2,), nprocs=2)
"""


def test_a_seeding_helper_called_on_import_seeds_every_spawned_rank_alike(tmp_path):
    body = SPAWN_SEEDED.replace("TOP_SEED", "seed_all(0)").replace("MAIN_SEED", "pass")
    found = _codes(lint_tree(tmp_path, {"train.py": body}), "DDP808")
    assert [f.location.line for f in found] == [_line(body, "loader = DataLoader(")]


def test_a_seeding_helper_called_in_the_main_block_seeds_only_the_launcher(tmp_path):
    body = SPAWN_SEEDED.replace("TOP_SEED", "").replace("MAIN_SEED", "seed_all(0)")
    assert _codes(lint_tree(tmp_path, {"train.py": body}), "DDP808") == []


# ---------------------------------------------- two exits rank 0 decides in its own block
# In `if is_main:` rank 0 counts epochs without improvement and breaks at its patience (an error),
# and also breaks once its own clock passes a limit (a warning: it rests on the run lasting that
# long). Each is a decision of its own, told apart. The twin's second exit is every rank's.
TWO_EXITS = """import time
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP


def main():
    dist.init_process_group("gloo")
    is_main = dist.get_rank() == 0
    model = DDP(torch.nn.Linear(4, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    start = time.time()
    best, stale, patience = float("inf"), 0, 5
    for epoch in range(100):
        loss = model(torch.randn(8, 4)).pow(2).mean()
        loss.backward()
        opt.step()
        opt.zero_grad()
        if is_main:
            value = loss.item()
            if value < best:
                best, stale = value, 0
            else:
                stale += 1
            if stale == patience:
                break
            SECOND
        if epoch > 90:
            break


if __name__ == "__main__":
    main()
"""


def test_each_exit_rank_zero_decides_in_its_block_is_told(tmp_path):
    body = TWO_EXITS.replace("            SECOND", "            if time.time() - start > 3600:\n                break")
    found = sorted(_codes(lint_tree(tmp_path, {"train.py": body}), "DDP809"), key=lambda f: f.location.line)
    assert [(f.location.line, f.severity.value) for f in found] == \
        [(_line(body, "if stale == patience"), "error"), (_line(body, "if time.time() - start"), "warning")]


def test_an_exit_every_rank_takes_beside_rank_zeros_is_not_told(tmp_path):
    # twin: rank 0's block has one exit; the loop's own bound is every rank's
    body = TWO_EXITS.replace("            SECOND\n", "")
    found = _codes(lint_tree(tmp_path, {"train.py": body}), "DDP809")
    assert [f.location.line for f in found] == [_line(body, "if stale == patience")]


# ---------------------------------------------- a wrapper made and thrown away in the builder of a field
# `torch.nn.parallel.DistributedDataParallel(model, device_ids=[d])` as a statement of its own in
# `_init_model`, which returns `model, tokenizer` into `self.model, self.tokenizer`: nothing keeps
# the wrapper, the trainer trains the plain module (DDP810, an error at the backward).
THROWN_AWAY = """import torch
import torch.distributed as dist
import torch.nn as nn


class Trainer:
    def __init__(self, is_ddp):
        self.is_ddp = is_ddp
        self.model, self.tokenizer = self._init_model()
        self.optimizer = torch.optim.SGD(self.model.parameters(), lr=0.1)

    def _init_model(self):
        model = nn.Linear(4, 2)
        tokenizer = str.split
        if self.is_ddp:
            WRAP
        return model, tokenizer

    def train(self):
        for step in range(10):
            x = torch.randn(8, 4)
            self.optimizer.zero_grad()
            output = self.model(x)
            loss = output.pow(2).mean()
            loss.backward()
            self.optimizer.step()


def main():
    dist.init_process_group("gloo")
    Trainer(True).train()


if __name__ == "__main__":
    main()
"""


def test_a_wrapper_thrown_away_in_the_fields_builder_trains_the_plain_module(tmp_path):
    body = THROWN_AWAY.replace("WRAP", "torch.nn.parallel.DistributedDataParallel(model)")
    found = _codes(lint_tree(tmp_path, {"train.py": body}), "DDP810")
    assert [(f.location.line, f.severity.value) for f in found] == [(_line(body, "loss.backward()"), "error")]
    assert "thrown away" in found[0].message


def test_a_wrapper_kept_in_the_fields_builder_is_trained_through(tmp_path):
    # twin: the builder keeps the wrapper and returns it
    body = THROWN_AWAY.replace("WRAP", "model = torch.nn.parallel.DistributedDataParallel(model)")
    assert _codes(lint_tree(tmp_path, {"train.py": body}), "DDP810") == []


# ---------------------------------------------- a field kept beside the one wrapped in place
# `self.ac = ac.to(d)` and `self._ac = ac` (the "unwrapped reference"), then `self.ac = DDP(self.ac)`:
# `self._ac` holds the module inside. The actor's loss computed through `self._ac.head.score(...)`
# (a submodule of it) from the world model's DDP forward, run with gradients off, goes round the
# actor-critic's wrapper: that no-grad forward carries no graph for the backward (DDP810). (A
# forward with gradients on in the loss's graph still counts as the loss's DDP forward: which
# parameters the step trains is not read.)
TWO_WRAPPERS = """import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP


class Head(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 1)

    def score(self, x):
        return self.lin(x)


class ActorCritic(nn.Module):
    def __init__(self):
        super().__init__()
        self.head = Head()

    def forward(self, x):
        return self.head.score(x)


class Trainer:
    def __init__(self, world, ac, device):
        self.world = world.to(device)
        self.ac = ac.to(device)
        self._world = world
        self._ac = ac
        self.world = DDP(self.world)
        self.ac = DDP(self.ac)
        self.opt = torch.optim.SGD(list(self.world.parameters()) + list(self.ac.parameters()), lr=0.1)

    def step(self, x):
        with torch.no_grad():
            feats = self.world(x)
        loss = LOSS
        self.opt.zero_grad()
        loss.backward()
        self.opt.step()


def main():
    dist.init_process_group("gloo")
    trainer = Trainer(nn.Linear(4, 4), ActorCritic(), "cpu")
    for _ in range(5):
        trainer.step(torch.randn(8, 4))


if __name__ == "__main__":
    main()
"""


def test_a_field_kept_beside_the_one_wrapped_in_place_runs_round_the_wrapper(tmp_path):
    body = TWO_WRAPPERS.replace("LOSS", "self._ac.head.score(feats).pow(2).mean()")
    found = _codes(lint_tree(tmp_path, {"train.py": body}), "DDP810")
    assert [(f.location.line, f.severity.value) for f in found] == [(_line(body, "loss.backward()"), "error")]


def test_the_field_wrapped_in_place_is_trained_through(tmp_path):
    # twin: the actor's loss goes through the actor-critic's own wrapper
    body = TWO_WRAPPERS.replace("LOSS", "self.ac(feats).pow(2).mean()")
    assert _codes(lint_tree(tmp_path, {"train.py": body}), "DDP810") == []


# ---------------------------------------------- a rank-0 callback's no-grad forward of a wrapper handed by name
# `DistributedDataParallel(module=net, broadcast_buffers=True)` (the module by keyword) of a
# BatchNorm model, rebound each step through a helper that hands it back (`model =
# freeze(model)`), evaluated by a callback only rank 0 runs, under `@torch.no_grad()`: that
# forward's buffer broadcast is rank 0's alone (DDP801, a warning at the forward).
CALLBACK_EVAL = """import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 4)
        NORM

    def forward(self, x):
        return self.norm(self.lin(x))


def freeze(model):
    for part in model.modules():
        part.training = part.training
    return model


@torch.no_grad()
def evaluate(backbone):
    out = backbone(torch.randn(2, 4))
    return float(out.mean())


class Verify:
    def __init__(self, rank):
        self.rank = rank

    def __call__(self, step, backbone):
        if self.rank == 0 and step % 10 == 0:
            backbone.eval()
            evaluate(backbone)
            backbone.train()


def main():
    dist.init_process_group("gloo")
    model = DistributedDataParallel(module=Net(), broadcast_buffers=True)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    verify = Verify(dist.get_rank())
    for step in range(100):
        model = freeze(model)
        loss = model(torch.randn(8, 4)).pow(2).mean()
        loss.backward()
        opt.step()
        opt.zero_grad()
        verify(step, model)


if __name__ == "__main__":
    main()
"""


def test_a_rank_zero_callbacks_no_grad_forward_of_a_buffered_wrapper_is_told(tmp_path):
    body = CALLBACK_EVAL.replace("NORM", "self.norm = nn.BatchNorm1d(4)")
    found = _codes(lint_tree(tmp_path, {"train.py": body}), "DDP801")
    assert [(f.location.line, f.severity.value) for f in found] == [(_line(body, "out = backbone("), "warning")]


def test_a_rank_zero_callbacks_no_grad_forward_of_an_unbuffered_wrapper_is_fine(tmp_path):
    # twin: the module holds no buffers, so the no-grad forward broadcasts nothing
    body = CALLBACK_EVAL.replace("NORM", "self.norm = nn.Identity()")
    assert _codes(lint_tree(tmp_path, {"train.py": body}), "DDP801") == []
