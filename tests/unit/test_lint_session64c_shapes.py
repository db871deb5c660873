"""Shapes from session 64's third reading (holdout 86, read after its unread score), each with its
twin, in our own words."""

from __future__ import annotations

from tests.unit.test_lint_session39_shapes import lint_tree
from tests.unit.test_lint_session61_shapes import _codes, _line


# -------------------------------------------------- an accumulation count every YAML config sets to 1
# `grad_acc_step = train_config["optimizer"]["grad_acc_step"]` read from the YAML file a required
# option names, each config beside the script giving 1: the step runs on every pass
YAML_ACCUM = """
import argparse
import torch
import torch.distributed as dist
import yaml
from torch.nn.parallel import DistributedDataParallel as DDP


def main(dataset):
    train_config = yaml.load(open(f"config/{dataset}/train.yaml"), Loader=yaml.FullLoader)
    grad_acc_step = train_config["optimizer"]["grad_acc_step"]
    dist.init_process_group("gloo")
    model = DDP(torch.nn.Linear(4, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for step in range(1, 100):
        loss = model(torch.randn(2, 4)).sum() / grad_acc_step
        loss.backward()
        if step % grad_acc_step == 0:
            opt.step()
            opt.zero_grad()


if __name__ == "__main__":
    p = argparse.ArgumentParser()
    p.add_argument("--dataset", required=True)
    main(p.parse_args().dataset)
"""


def _yaml(count: int) -> dict:
    return {"train.py": YAML_ACCUM,
            "config/ms/train.yaml": f"optimizer:\n  batch_size: 8\n  grad_acc_step: {count}\n"}


def test_an_accumulation_count_every_config_sets_to_one_accumulates_nothing(tmp_path):
    assert not _codes(lint_tree(tmp_path, _yaml(1)), "DDP805")


def test_twin_a_config_that_accumulates(tmp_path):
    found = lint_tree(tmp_path, _yaml(4))
    assert [f.location.line for f in _codes(found, "DDP805")] == [_line(YAML_ACCUM, "loss.backward()")]


# -------------------------------------------------- a config class every construction settles
# `if self.config.use_deepspeed: self.model.backward(loss) else: loss.backward()`, with the one
# construction `TrainConfig(use_deepspeed=args.deepspeed)` and --deepspeed a store_true that
# defaults to True; the engine comes back from a setup helper, and its save_checkpoint runs
# after `if not self.is_main_process: return`
CONFIGURED = """
import argparse
import os
from dataclasses import dataclass
import deepspeed
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP


@dataclass
class TrainConfig:
    accum: int = 8
    use_deepspeed: bool = True


class Trainer:
    def __init__(self, model, config):
        self.model, self.config = model, config
        self.is_main_process = int(os.environ.get("LOCAL_RANK", 0)) == 0

    def _setup(self):
        engine, opt, _, _ = deepspeed.initialize(model=self.model, config="ds.json")
        return engine, opt

    def train(self, batches):
        if self.config.use_deepspeed:
            self.model, opt = self._setup()
        else:
            self.model = DDP(self.model)
            opt = torch.optim.SGD(self.model.parameters(), lr=0.1)
        for step, x in enumerate(batches):
            loss = self.model(x).sum()
            if self.config.use_deepspeed:
                self.model.backward(loss)
            else:
                loss.backward()
            if (step + 1) % self.config.accum == 0:
                if self.config.use_deepspeed:
                    self.model.step()
                else:
                    opt.step()
        self._save()

    def _save(self):
        if not self.is_main_process:
            return
        if self.config.use_deepspeed:
            self.model.save_checkpoint("ckpt")


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--deepspeed", action="store_true", default=DEFAULT)
    args = p.parse_args()
    dist.init_process_group("gloo")
    Trainer(torch.nn.Linear(4, 1), TrainConfig(use_deepspeed=args.deepspeed)).train([torch.randn(2, 4)] * 8)


if __name__ == "__main__":
    main()
"""


def test_a_config_every_construction_settles_picks_the_engine_side(tmp_path):
    body = CONFIGURED.replace("DEFAULT", "True")
    found = lint_tree(tmp_path, {"train.py": body})
    assert not _codes(found, "DDP805")
    assert [(f.location.line, f.severity.value) for f in _codes(found, "DDP801")] == \
        [(_line(body, 'self.model.save_checkpoint("ckpt")'), "error")]


def test_twin_the_switch_left_off_takes_the_ddp_side(tmp_path):
    body = CONFIGURED.replace("DEFAULT", "False")
    found = lint_tree(tmp_path, {"train.py": body})
    assert [f.location.line for f in _codes(found, "DDP805")] == [_line(body, "                loss.backward()")]


# -------------------------------------------------- a rank handed through a tuple of the launcher's
# `main(args, distributed_state=(world_size, rank))` from the spawned process, read as
# `world_size, rank = int(state[0]), int(state[1])`; a save helper nested in main returns
# `if rank != 0`
STATE = """
import torch
import torch.distributed as dist
import torch.multiprocessing as mp
from torch.nn.parallel import DistributedDataParallel as DDP


def app_main(args, distributed_state=None):
    world_size, rank = int(distributed_state[0]), int(distributed_state[1])
    model = DDP(torch.nn.Linear(4, 1))

    def save_snapshot(path):
        if GUARD:
            return
        torch.save(model.state_dict(), path)

    for step in range(10):
        model(torch.randn(2, 4)).sum().backward()
        save_snapshot("latest.pt")


def process_main(rank, world_size):
    dist.init_process_group("gloo", rank=rank, world_size=world_size)
    app_main({}, distributed_state=(world_size, rank))


if __name__ == "__main__":
    mp.spawn(process_main, args=(2,), nprocs=2)
"""


def test_a_rank_read_from_the_launchers_tuple(tmp_path):
    assert not _codes(lint_tree(tmp_path, {"train.py": STATE.replace("GUARD", "rank != 0")}), "DDP806")


def test_twin_the_world_size_read_from_the_same_tuple_is_no_rank(tmp_path):
    body = STATE.replace("GUARD", "world_size != 2")
    found = lint_tree(tmp_path, {"train.py": body})
    assert [f.location.line for f in _codes(found, "DDP806")] == [_line(body, "torch.save(model.state_dict(), path)")]


# -------------------------------------------------- a loader handed its dataset in a spread dict
# `DataLoader(**loader_kwargs)` with `"dataset": dataset`, an IterableDataset that shards itself
# by rank and worker: no sampler is wanted
SPREAD = """
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, IterableDataset, get_worker_info


class Shards(IterableDataset):
    def __init__(self, rank):
        self.rank = rank

    def __iter__(self):
        worker = get_worker_info()
        part = self.rank * 4 + (worker.id if worker else 0)
        for i in range(part, 1000, 8):
            yield torch.full((4,), float(i))


def main():
    dist.init_process_group("gloo")
    dataset = DATASET
    loader_kwargs = {"dataset": dataset, "batch_size": 8, "num_workers": 2}
    loader = DataLoader(**loader_kwargs)
    model = DDP(torch.nn.Linear(4, 1))
    for epoch in range(3):
        for x in loader:
            model(x).sum().backward()


if __name__ == "__main__":
    main()
"""


def test_a_self_sharding_dataset_handed_in_a_spread_dict(tmp_path):
    found = lint_tree(tmp_path, {"train.py": SPREAD.replace("DATASET", "Shards(dist.get_rank())")})
    assert not _codes(found, "DDP802")


def test_twin_a_map_dataset_handed_in_the_same_dict(tmp_path):
    body = SPREAD.replace("DATASET", "torch.utils.data.TensorDataset(torch.randn(64, 4))").replace(
        '"num_workers": 2}', '"num_workers": 2, "shuffle": True}')
    found = lint_tree(tmp_path, {"train.py": body})
    assert [f.location.line for f in _codes(found, "DDP802")] == [_line(body, "loader = DataLoader(**loader_kwargs)")]


# -------------------------------------------------- draws from a generator of the method's own
# the dataset's worker method builds `rng = np.random.default_rng(seed + rank * n + worker)` and
# hands it on to a helper typed `rng: np.random.Generator`: no draw from the inherited streams
OWN_RNG = """
import numpy as np
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, Dataset, DistributedSampler


class Crops(Dataset):
    def __init__(self, seed):
        self.seed = seed

    def __len__(self):
        return 64

    def _box(self, rng: np.random.Generator):
        return rng.integers(0, 10)

    def __getitem__(self, i):
        DRAW
        return torch.full((4,), float(self._box(rng)))


def main():
    dist.init_process_group("gloo")
    torch.manual_seed(0)
    data = Crops(0)
    sampler = DistributedSampler(data)
    loader = DataLoader(data, batch_size=8, num_workers=2, sampler=sampler)
    model = DDP(torch.nn.Linear(4, 1))
    for epoch in range(3):
        sampler.set_epoch(epoch)
        for x in loader:
            model(x).sum().backward()


if __name__ == "__main__":
    main()
"""


def test_draws_from_a_generator_the_method_seeds_itself(tmp_path):
    body = OWN_RNG.replace("DRAW", "rng = np.random.default_rng(self.seed + i)")
    assert not _codes(lint_tree(tmp_path, {"train.py": body}), "DDP808")


def test_twin_a_draw_from_the_inherited_stream(tmp_path):
    body = OWN_RNG.replace("DRAW", "rng = np.random.default_rng(self.seed + i)\n        i = np.random.randint(0, 64)")
    found = lint_tree(tmp_path, {"train.py": body})
    assert [f.location.line for f in _codes(found, "DDP808")] == [_line(body, "loader = DataLoader(")]


# -------------------------------------------------- an attribute only rank 0 sets
# a logger's `__exit__` saves `if "models" in self.__dict__:`, and `self.models` is set only in
# `log_epoch()`, which the training calls under `if rank == 0:`
PRESENCE = """
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP


class Logger:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        if "models" in self.__dict__:
            self.save()

    def log_epoch(self, epoch, models):
        self.epoch, self.models = epoch, models

    def save(self):
        torch.save({k: m.state_dict() for k, m in self.models.items()}, "last.pt")


def main():
    dist.init_process_group("gloo")
    model = DDP(torch.nn.Linear(4, 1))
    with Logger() as logger:
        for epoch in range(3):
            model(torch.randn(2, 4)).sum().backward()
            if GUARD:
                logger.log_epoch(epoch, {"model": model})


if __name__ == "__main__":
    main()
"""


def test_a_save_under_an_attribute_only_rank_zero_sets(tmp_path):
    assert not _codes(lint_tree(tmp_path, {"train.py": PRESENCE.replace("GUARD", "dist.get_rank() == 0")}), "DDP806")


def test_twin_the_attribute_every_rank_sets(tmp_path):
    body = PRESENCE.replace("GUARD", "epoch >= 0")
    found = lint_tree(tmp_path, {"train.py": body})
    assert [f.location.line for f in _codes(found, "DDP806")] == [_line(body, "torch.save(")]


# -------------------------------------------------- a debug call under configargparse's option
# the only call of the save helper without a rank test sits under `if args.debug:`, declared with
# configargparse's `p.add("--debug", default=False)`; the other under `if rank == 0:`
DEBUG = """
import configargparse
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP


def save(model, path):
    torch.save(model.state_dict(), path)


def main():
    p = configargparse.ArgParser()
    p.add("--debug", default=DEFAULT, type=bool)
    args = p.parse_args()
    dist.init_process_group("gloo")
    model = DDP(torch.nn.Linear(4, 1))
    for epoch in range(3):
        model(torch.randn(2, 4)).sum().backward()
        if args.debug:
            save(model, f"last_{epoch}.pt")
        if dist.get_rank() == 0:
            save(model, "best.pt")


if __name__ == "__main__":
    main()
"""


def test_a_debug_only_call_is_no_way_the_run_takes(tmp_path):
    assert not _codes(lint_tree(tmp_path, {"train.py": DEBUG.replace("DEFAULT", "False")}), "DDP806")


def test_twin_the_debug_option_on_by_default(tmp_path):
    body = DEBUG.replace("DEFAULT", "True")
    found = lint_tree(tmp_path, {"train.py": body})
    assert [f.location.line for f in _codes(found, "DDP806")] == [_line(body, "torch.save(")]


# -------------------------------------------------- a draw that only perturbs a per-rank seed
# the dataset's first call in a worker seeds its own generator with `seed + worker + rank * n +
# random.randint(0, 1000)` and permutes its files with it: nothing else it does draws
PERTURBED = """
import random
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, Dataset, get_worker_info


class Files(Dataset):
    def __init__(self, seed):
        self.seed, self.files, self.ready = seed, list(range(64)), False

    def __len__(self):
        return 64

    def __getitem__(self, i):
        if not self.ready:
            worker = get_worker_info()
            rank = dist.get_rank()
            g = torch.Generator()
            seed = SEED
            g.manual_seed(seed)
            self.files = [self.files[j] for j in torch.randperm(64, generator=g).tolist()]
            self.ready = True
        return torch.full((4,), float(self.files[i]))


def main():
    dist.init_process_group("gloo")
    torch.manual_seed(0)
    loader = DataLoader(Files(0), batch_size=8, num_workers=2, shuffle=False)
    model = DDP(torch.nn.Linear(4, 1))
    for epoch in range(3):
        for x in loader:
            model(x).sum().backward()


if __name__ == "__main__":
    main()
"""


def test_a_draw_folded_into_a_per_rank_seed(tmp_path):
    body = PERTURBED.replace("SEED", "self.seed + worker.id + rank * worker.num_workers + random.randint(0, 1000)")
    assert not _codes(lint_tree(tmp_path, {"train.py": body}), "DDP808")


def test_twin_the_same_draw_in_a_seed_without_the_rank(tmp_path):
    body = PERTURBED.replace("SEED", "self.seed + worker.id + random.randint(0, 1000)")
    found = lint_tree(tmp_path, {"train.py": body})
    assert [f.location.line for f in _codes(found, "DDP808")] == [_line(body, "loader = DataLoader(")]


# -------------------------------------------------- a set_epoch handed the loop's bound
# `for epoch_id in range(epoch): sampler.set_epoch(epoch)`: the total count, the same every pass
BOUND = """
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, DistributedSampler, TensorDataset


def train(loader, sampler, model, epoch):
    for epoch_id in range(epoch):
        sampler.set_epoch(ARG)
        for (x,) in loader:
            model(x).sum().backward()


def main():
    dist.init_process_group("gloo")
    ds = TensorDataset(torch.randn(64, 4))
    sampler = DistributedSampler(ds, shuffle=True)
    loader = DataLoader(ds, batch_size=8, sampler=sampler)
    train(loader, sampler, DDP(torch.nn.Linear(4, 1)), 10)


if __name__ == "__main__":
    main()
"""


def test_set_epoch_handed_the_loops_bound(tmp_path):
    body = BOUND.replace("ARG", "epoch")
    found = lint_tree(tmp_path, {"train.py": body})
    assert [f.location.line for f in _codes(found, "DDP804")] == [_line(body, "sampler.set_epoch(")]


def test_twin_set_epoch_handed_the_loop_variable(tmp_path):
    assert not _codes(lint_tree(tmp_path, {"train.py": BOUND.replace("ARG", "epoch_id")}), "DDP804")


# -------------------------------------------------- a NaN check before the all-reduce of the value
# `avg_loss = torch.tensor(running / n)`, `if torch.isnan(avg_loss).any().item(): return`, then
# `dist.all_reduce(avg_loss)`: the test reads the rank's own value, the reduce comes after
NAN_FIRST = """
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP


def main():
    dist.init_process_group("gloo")
    model = DDP(torch.nn.Linear(4, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    running, n = 0.0, 0
    for step in range(100):
        loss = model(torch.randn(2, 4)).sum()
        opt.zero_grad()
        loss.backward()
        opt.step()
        running += loss.item()
        n += 1
        if step % 10 == 0:
            avg_loss = torch.tensor(running / n)
            ORDER


if __name__ == "__main__":
    main()
"""
CHECK = "if torch.isnan(avg_loss).any().item():\n                return"
REDUCE = "dist.all_reduce(avg_loss)"


def test_a_nan_check_before_the_values_all_reduce(tmp_path):
    body = NAN_FIRST.replace("ORDER", f"{CHECK}\n            {REDUCE}")
    found = lint_tree(tmp_path, {"train.py": body})
    assert [f.location.line for f in _codes(found, "DDP809")] == [_line(body, "if torch.isnan(avg_loss)")]


def test_twin_the_same_check_after_the_all_reduce(tmp_path):
    body = NAN_FIRST.replace("ORDER", f"{REDUCE}\n            {CHECK}")
    assert not _codes(lint_tree(tmp_path, {"train.py": body}), "DDP809")


# -------------------------------------------------- a worker_init_fn bound to rank 0
# `worker_init_fn=partial(init_fn, rank=0, seed=seed)` where init_fn seeds with `rank + seed`:
# every worker of every rank seeds alike
BOUND_RANK = """
import random
from functools import partial
import numpy as np
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, Dataset, DistributedSampler


def init_fn(worker_id, rank, seed):
    worker_seed = rank + seed
    random.seed(worker_seed)
    np.random.seed(worker_seed)


class Jitter(Dataset):
    def __len__(self):
        return 64

    def __getitem__(self, i):
        return torch.full((4,), random.random())


def main(seed=11):
    dist.init_process_group("gloo")
    data = Jitter()
    sampler = DistributedSampler(data)
    loader = DataLoader(data, batch_size=8, num_workers=2, sampler=sampler,
                        worker_init_fn=partial(init_fn, rank=RANK, seed=seed))
    model = DDP(torch.nn.Linear(4, 1))
    for epoch in range(3):
        sampler.set_epoch(epoch)
        for x in loader:
            model(x).sum().backward()


if __name__ == "__main__":
    main()
"""


def test_a_worker_init_fn_bound_to_rank_zero(tmp_path):
    found = lint_tree(tmp_path, {"train.py": BOUND_RANK.replace("RANK", "0")})
    assert [f.location.line for f in _codes(found, "DDP808")] == [_line(BOUND_RANK, "random.seed(worker_seed)")]


def test_twin_a_worker_init_fn_bound_to_the_rank(tmp_path):
    assert not _codes(lint_tree(tmp_path, {"train.py": BOUND_RANK.replace("RANK", "dist.get_rank()")}), "DDP808")


# -------------------------------------------------- a rank read from a field the config never has
# `self.local_rank = self.config.local_rank if hasattr(self.config, "local_rank") else 0` where the
# config dataclass declares no such field: every rank is "main", and every rank saves
NO_FIELD = """
import os
from dataclasses import dataclass
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP


@dataclass
class Config:
    epochs: int = 3
    FIELD


class Trainer:
    def __init__(self, config):
        self.config = config
        self.local_rank = self.config.local_rank if hasattr(self.config, "local_rank") else 0
        self.is_main_process = self.local_rank == 0
        self.model = DDP(torch.nn.Linear(4, 1))

    def train(self):
        for epoch in range(self.config.epochs):
            self.model(torch.randn(2, 4)).sum().backward()
            self._save()

    def _save(self):
        if not self.is_main_process:
            return
        torch.save(self.model.state_dict(), "last.pt")


def main():
    dist.init_process_group("gloo")
    Trainer(Config()).train()


if __name__ == "__main__":
    main()
"""


def test_a_rank_read_from_a_field_the_config_never_has(tmp_path):
    body = NO_FIELD.replace("FIELD", "lr: float = 0.1")
    found = lint_tree(tmp_path, {"train.py": body})
    assert [f.location.line for f in _codes(found, "DDP806")] == [_line(body, "torch.save(")]


def test_twin_the_config_declares_the_field(tmp_path):
    body = NO_FIELD.replace("FIELD", 'local_rank: int = int(os.environ.get("LOCAL_RANK", 0))')
    assert not _codes(lint_tree(tmp_path, {"train.py": body}), "DDP806")
