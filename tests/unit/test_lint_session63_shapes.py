"""Shapes from session 63 (holdout 80, read after its unread score), each with its twin, in our
own words."""

from __future__ import annotations

from tests.unit.test_lint_session39_shapes import lint_tree
from tests.unit.test_lint_session61_shapes import _codes, _line


# -------------------------------------------------- an epoch loop that makes one pass
# a course script's `for epoch in range(1): train(model, loader, ...)`: the loader is read once,
# so there is no second epoch whose order set_epoch would change
ONE_PASS = """
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler


def train_model(model, train_loader, opt):
    for x, y in train_loader:
        opt.zero_grad()
        torch.nn.functional.mse_loss(model(x), y).backward()
        opt.step()


def main():
    dist.init_process_group("gloo")
    data = TensorDataset(torch.randn(64, 4), torch.randn(64, 1))
    sampler = DistributedSampler(data, shuffle=True)
    train_loader = DataLoader(data, batch_size=8, sampler=sampler)
    model = DDP(torch.nn.Linear(4, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for epoch in range(EPOCHS):
        train_model(model, train_loader, opt)


if __name__ == "__main__":
    main()
"""


def test_a_loader_read_by_a_one_pass_epoch_loop_needs_no_set_epoch(tmp_path):
    found = lint_tree(tmp_path, {"train.py": ONE_PASS.replace("EPOCHS", "1")})
    assert not _codes(found, "DDP804")


def test_twin_a_loader_read_epoch_after_epoch_without_set_epoch(tmp_path):
    body = ONE_PASS.replace("EPOCHS", "3")
    found = lint_tree(tmp_path, {"train.py": body})
    assert [f.location.line for f in _codes(found, "DDP804")] == [_line(body, "sampler = DistributedSampler")]


# -------------------------------------------------- items reordered after the dataset is built
# each process seeds numpy with its rank, then the script reorders the sample list it stores into
# the dataset with a draw from numpy's global stream (sklearn's `shuffle`), and a loader factory
# shards that dataset with a DistributedSampler over its parameter
REORDERED = """
import numpy as np
import torch
import torch.distributed as dist
from sklearn.utils import shuffle
from torch.utils.data import DataLoader, Dataset
from torch.utils.data.distributed import DistributedSampler


class Folder(Dataset):
    def __init__(self):
        self.samples = []

    def __len__(self):
        return len(self.samples)

    def __getitem__(self, i):
        return torch.tensor(self.samples[i])


def make_loader(dataset, batch_size):
    return DataLoader(dataset, batch_size=batch_size, sampler=DistributedSampler(dataset))


def main():
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    np.random.seed(17 + rank)
    torch.manual_seed(17 + rank)
    dataset_train = Folder()
    samples = list(range(100))
    samples = SHUFFLED
    dataset_train.samples = samples
    loader = make_loader(dataset_train, 8)
    for epoch in range(2):
        loader.sampler.set_epoch(epoch)
        for batch in loader:
            pass


if __name__ == "__main__":
    main()
"""


def test_items_reordered_by_a_per_rank_seeded_draw_after_the_dataset_is_built(tmp_path):
    body = REORDERED.replace("SHUFFLED", "shuffle(samples)")
    found = lint_tree(tmp_path, {"train.py": body})
    assert [f.location.line for f in _codes(found, "DDP803")] == [_line(body, "sampler=DistributedSampler(dataset)")]


def test_twin_items_reordered_by_a_draw_with_its_own_seed(tmp_path):
    found = lint_tree(tmp_path, {"train.py": REORDERED.replace("SHUFFLED", "shuffle(samples, random_state=0)")})
    assert not _codes(found, "DDP803")


# -------------------------------------------------- a constructor that shuffles, through a builder
# MoCo's seeding only where --seed is given (None by default), and a dataset a builder returns
# whose constructor shuffles its items with Python's global random stream
BUILT_SHUFFLED = """
import argparse
import random
import torch
import torch.distributed as dist
from torch.utils.data import DataLoader, Dataset
from torch.utils.data.distributed import DistributedSampler

parser = argparse.ArgumentParser()
parser.add_argument("--seed", default=SEED, type=int)


class Views(Dataset):
    def __init__(self):
        self.items = list(range(100))
        random.shuffle(self.items)

    def __len__(self):
        return len(self.items)

    def __getitem__(self, i):
        return torch.tensor(self.items[i])


def get_dataset():
    return Views()


def main():
    args = parser.parse_args()
    if args.seed is not None:
        random.seed(args.seed)
        torch.manual_seed(args.seed)
    dist.init_process_group("gloo")
    train_dataset = get_dataset()
    sampler = DistributedSampler(train_dataset)
    loader = DataLoader(train_dataset, batch_size=8, sampler=sampler)
    for epoch in range(2):
        sampler.set_epoch(epoch)
        for batch in loader:
            pass


if __name__ == "__main__":
    main()
"""


def test_a_builder_returned_dataset_that_shuffles_unseeded_is_sharded_apart(tmp_path):
    body = BUILT_SHUFFLED.replace("SEED", "None")
    found = lint_tree(tmp_path, {"train.py": body})
    assert [f.location.line for f in _codes(found, "DDP803")] == [_line(body, "sampler = DistributedSampler")]


def test_twin_the_same_dataset_with_the_seed_given_by_default(tmp_path):
    found = lint_tree(tmp_path, {"train.py": BUILT_SHUFFLED.replace("SEED", "0")})
    assert not _codes(found, "DDP803")


# -------------------------------------------------- a datamodule's dataset class from a property
# `self.dataset_cls(...)` of `@property def dataset_cls(self): return Atoms`: every rank seeded
# alike by seed_everything (workers off), workers drawing in the dataset's __getitem__
PROPERTY_CLASS = """
import random
import torch
import pytorch_lightning as pl
from torch.utils.data import DataLoader, Dataset


class Atoms(Dataset):
    def __len__(self):
        return 100

    def __getitem__(self, i):
        return torch.tensor([DRAW])


class Data(pl.LightningDataModule):
    @property
    def dataset_cls(self):
        return Atoms

    def setup(self, stage=None):
        self.train_dataset = self.dataset_cls()

    def train_dataloader(self):
        return DataLoader(self.train_dataset, batch_size=8, num_workers=4, shuffle=True)


class Model(pl.LightningModule):
    def __init__(self):
        super().__init__()
        self.layer = torch.nn.Linear(1, 1)

    def training_step(self, batch, i):
        return self.layer(batch.float()).sum()

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.1)


def main():
    pl.seed_everything(0)
    trainer = pl.Trainer(accelerator="gpu", devices=4, strategy="ddp", max_epochs=2)
    trainer.fit(Model(), datamodule=Data())


if __name__ == "__main__":
    main()
"""


def test_a_dataset_class_a_property_returns_is_the_one_built(tmp_path):
    body = PROPERTY_CLASS.replace("DRAW", "random.random()")
    found = lint_tree(tmp_path, {"train.py": body})
    assert [f.location.line for f in _codes(found, "DDP808")] == [_line(body, "return DataLoader(self.train_dataset")]


def test_twin_the_property_returns_a_dataset_that_draws_nothing(tmp_path):
    found = lint_tree(tmp_path, {"train.py": PROPERTY_CLASS.replace("DRAW", "float(i)")})
    assert not _codes(found, "DDP808")


# -------------------------------------------------- a signal flag read through a getter
# the handler sets a module-level Event; a getter returns it, handed to the trainer as
# `shutdown_checker=` and called every step; the rank that sees it first exits cleanly
SHUTDOWN = """
import signal
import threading
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

_STOP = threading.Event()


def _on_signal(signum, frame):
    _STOP.set()


def stop_requested():
    return GETTER


class Trainer:
    def __init__(self, model, shutdown_checker=None):
        self.model = model
        self.shutdown_checker = shutdown_checker
        self.opt = torch.optim.SGD(model.parameters(), lr=0.1)
        self.step = 0

    def fit(self):
        for i in range(1000):
            self.model(torch.randn(8, 4)).sum().backward()
            self.opt.step()
            self.step += 1
            if self.shutdown_checker is not None and self.shutdown_checker():
                raise SystemExit(0)


def main():
    dist.init_process_group("gloo")
    signal.signal(signal.SIGUSR1, _on_signal)
    Trainer(DDP(torch.nn.Linear(4, 4)), shutdown_checker=stop_requested).fit()


if __name__ == "__main__":
    main()
"""


def test_a_signal_flag_read_through_a_getter_decides_a_clean_exit(tmp_path):
    body = SHUTDOWN.replace("GETTER", "_STOP.is_set()")
    found = lint_tree(tmp_path, {"train.py": body})
    assert [f.location.line for f in _codes(found, "DDP809")] == [
        _line(body, "if self.shutdown_checker is not None")]


def test_twin_a_getter_that_reads_no_signal_flag(tmp_path):
    found = lint_tree(tmp_path, {"train.py": SHUTDOWN.replace("GETTER", "False")})
    assert not _codes(found, "DDP809")


# -------------------------------------------------- prepare() through a helper's *args
# `prepare_all(data, model)` hands Accelerate a wrapper object that is no DataLoader; the
# loader its method builds afterwards goes to the trainer unprepared
PREPARE_ALL = """
import torch
from accelerate import Accelerator
from torch.utils.data import DataLoader


class Reader:
    def __init__(self, path):
        self.path = path
        self.triples = []

    def get_train(self):
        return self.triples


class Data:
    def __init__(self, path):
        self.reader = Reader(path)
        self.train_set = self.reader.get_train()

    def train_dataloader(self):
        return DataLoader(self.train_set, batch_size=8, shuffle=True)


def prepare_all(*args):
    accelerator = Accelerator()
    result = list(accelerator.prepare(*args))
    result.append(accelerator)
    return result


class Trainer:
    def __init__(self, model, data_loader, accelerator):
        self.model = model
        self.data_loader = data_loader
        self.accelerator = accelerator
        self.opt = torch.optim.SGD(model.parameters(), lr=0.1)

    def run(self):
        for epoch in range(10):
            for batch in self.data_loader:
                loss = self.model(batch).sum()
                self.accelerator.backward(loss)
                self.opt.step()


data = Data("triples.txt")
model = torch.nn.Linear(3, 1)
PREPARED
trainer.run()
"""


def test_a_loader_built_after_a_helper_prepared_its_wrapper_is_not_sharded(tmp_path):
    body = PREPARE_ALL.replace("PREPARED", "data, model, accelerator = prepare_all(data, model)\n"
                                           "trainer = Trainer(model, data_loader=data.train_dataloader(), "
                                           "accelerator=accelerator)")
    found = lint_tree(tmp_path, {"train.py": body})
    assert [f.location.line for f in _codes(found, "DDP802")] == [
        _line(body, "return DataLoader(self.train_set")]


def test_twin_the_helper_prepares_the_loader_itself(tmp_path):
    body = PREPARE_ALL.replace("PREPARED", "loader, model, accelerator = prepare_all(data.train_dataloader(), model)\n"
                                           "trainer = Trainer(model, data_loader=loader, accelerator=accelerator)")
    found = lint_tree(tmp_path, {"train.py": body})
    assert not _codes(found, "DDP802")
