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


# ================================================== holdout 81, read after its unread score

# -------------------------------------------------- rank 0 or the spawn index 0
# MoCo's `(args.distributed and args.rank == 0) or args.index == 0`, args.index the mp.spawn
# index: global rank 0 is a node's first process too, so the whole is each node's first process
SPAWN_INDEX = """
import torch
import torch.distributed as dist
import torch.multiprocessing as mp
from torch.nn.parallel import DistributedDataParallel as DDP


def main_worker(index, args):
    args.index = index
    args.rank = args.node_rank * args.gpus + index
    dist.init_process_group("gloo", rank=args.rank, world_size=args.world_size)
    model = DDP(torch.nn.Linear(4, 4))
    for epoch in range(10):
        model(torch.randn(8, 4)).sum().backward()
        if TEST:
            torch.save(model.state_dict(), "checkpoint.pth.tar")


class Args:
    node_rank, gpus, world_size, distributed = 0, 4, 8, True


if __name__ == "__main__":
    mp.spawn(main_worker, nprocs=4, args=(Args(),))
"""


def test_rank_zero_or_the_spawn_index_zero_is_one_writer_per_node(tmp_path):
    body = SPAWN_INDEX.replace("TEST", "(args.distributed and args.rank == 0) or (args.index == 0)")
    found = lint_tree(tmp_path, {"train.py": body})
    assert [f.location.line for f in _codes(found, "DDP806")] == [_line(body, "torch.save(")]
    assert "node" in _codes(found, "DDP806")[0].message


def test_twin_rank_zero_alone_writes_once(tmp_path):
    found = lint_tree(tmp_path, {"train.py": SPAWN_INDEX.replace("TEST", "args.rank == 0")})
    assert not _codes(found, "DDP806")


# -------------------------------------------------- a model module picked inside a function
# `if args.application == "a": from apps.a import model` / `elif ...` in train(): the option's
# default picks which module's class is built, and so whether the DDP model holds buffers
APPS = {
    "apps/__init__.py": "",
    "apps/plain/__init__.py": "",
    "apps/plain/model.py": """
        import torch


        class Net(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.fc = torch.nn.Linear(4, 4)

            def forward(self, x):
                return self.fc(x)
    """,
    "apps/normed/__init__.py": "",
    "apps/normed/model.py": """
        import torch


        class Net(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.fc = torch.nn.Linear(4, 4)
                self.bn = torch.nn.BatchNorm1d(4)

            def forward(self, x):
                return self.bn(self.fc(x))
    """,
}
PICKED = """
import argparse
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP


def train(args):
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    if args.application == "plain":
        from apps.plain import model
        net = model.Net()
    elif args.application == "normed":
        from apps.normed import model
        net = model.Net()
    net = DDP(net)
    for step in range(100):
        net(torch.randn(8, 4)).sum().backward()
        if step % 10 == 0 and rank == 0:
            with torch.no_grad():
                net(torch.randn(8, 4))


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--application", default="DEFAULT")
    train(parser.parse_args())
"""


def test_the_module_an_option_picks_inside_a_function_holds_buffers(tmp_path):
    body = PICKED.replace("DEFAULT", "normed")
    found = lint_tree(tmp_path, {**APPS, "train.py": body})
    assert [f.location.line for f in _codes(found, "DDP801")] == [_line(body, "                net(torch.randn(8, 4))")]


def test_twin_the_module_the_option_picks_holds_no_buffers(tmp_path):
    found = lint_tree(tmp_path, {**APPS, "train.py": PICKED.replace("DEFAULT", "plain")})
    assert not _codes(found, "DDP801")


# -------------------------------------------------- a sampler kept in a dict at a key nothing reads
# `samplers = {"train": ..., "val": ...}` with the validation loader's `sampler=samplers["val"]`
# commented out, the dict handed whole to a helper that reads only "train" (and sets no epoch)
SAMPLER_TABLE = """
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler


def train_model(model, samplers, loaders, epochs):
    for epoch in range(epochs):
        for x, y in loaders["train"]:
            torch.nn.functional.mse_loss(model(x), y).backward()
        for x, y in loaders["val"]:
            VAL_STEP


if __name__ == "__main__":
    dist.init_process_group("gloo")
    sets = {k: TensorDataset(torch.randn(64, 4), torch.randn(64, 1)) for k in ("train", "val")}
    samplers = {
        "train": DistributedSampler(sets["train"]),
        "val": DistributedSampler(sets["val"]),
    }
    loaders = {
        "train": DataLoader(sets["train"], batch_size=8, sampler=samplers["train"]),
        "val": DataLoader(sets["val"], batch_size=8VAL),
    }
    train_model(DDP(torch.nn.Linear(4, 1)), samplers, loaders, 10)
"""


def test_a_sampler_at_a_key_nothing_reads_feeds_no_loader(tmp_path):
    body = SAMPLER_TABLE.replace("VAL_STEP", "model(x)").replace("VAL", "")
    found = lint_tree(tmp_path, {"train.py": body})
    assert [f.location.line for f in _codes(found, "DDP804")] == [_line(body, '"train": DistributedSampler(')]


def test_twin_the_same_sampler_handed_to_a_training_loader(tmp_path):
    body = SAMPLER_TABLE.replace("VAL_STEP", "torch.nn.functional.mse_loss(model(x), y).backward()").replace(
        "VAL", ', sampler=samplers["val"]')
    found = lint_tree(tmp_path, {"train.py": body})
    assert [f.location.line for f in _codes(found, "DDP804")] == [
        _line(body, '"train": DistributedSampler('), _line(body, '"val": DistributedSampler(')]


# -------------------------------------------------- a sampler the option's default leaves unbuilt
DROPPED = """
import argparse
import torch
import torch.distributed as dist
import torch.multiprocessing as mp
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler


def get_loader(num_gpus):
    ds = TensorDataset(torch.randn(64, 4), torch.randn(64, 1))
    return DataLoader(ds, batch_size=8, SAMPLER)


def worker(rank, args):
    dist.init_process_group("gloo", rank=rank, world_size=torch.cuda.device_count())
    model = DDP(torch.nn.Linear(4, 1))
    loader = get_loader(args.num_gpus)
    for epoch in range(3):
        loader.sampler.set_epoch(epoch) if args.num_gpus > 1 else None
        for x, y in loader:
            torch.nn.functional.mse_loss(model(x), y).backward()


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--num_gpus", type=int, default=1)
    mp.spawn(worker, nprocs=torch.cuda.device_count(), args=(parser.parse_args(),))
"""


def test_a_sampler_the_launch_defaults_leave_unbuilt_is_a_warning(tmp_path):
    body = DROPPED.replace("SAMPLER", "sampler=DistributedSampler(ds) if num_gpus > 1 else None")
    found = lint_tree(tmp_path, {"train.py": body})
    assert [(f.location.line, f.severity.value) for f in _codes(found, "DDP802")] == [
        (_line(body, "return DataLoader("), "warning")]
    assert "num_gpus > 1" in _codes(found, "DDP802")[0].message


def test_twin_no_sampler_at_all_is_an_error(tmp_path):
    body = DROPPED.replace("SAMPLER", "shuffle=True")
    found = lint_tree(tmp_path, {"train.py": body})
    assert [(f.location.line, f.severity.value) for f in _codes(found, "DDP802")] == [
        (_line(body, "return DataLoader("), "error")]


# -------------------------------------------------- Accelerate's save-state hook, saved on rank 0
SAVE_HOOK = """
import os
import torch
from accelerate import Accelerator
from transformers import AutoModel

accelerator = Accelerator()
adapter = torch.nn.Linear(4, 4)


def save_model_hook(models, weights, output_dir):
    for model in models:
        model.save_pretrained(os.path.join(output_dir, "adapter"))
        weights.pop()


accelerator.register_save_state_pre_hook(save_model_hook)
adapter, opt = accelerator.prepare(adapter, torch.optim.SGD(adapter.parameters(), lr=0.1))


def save_checkpoint():
    accelerator.save_state("out")


for step in range(100):
    accelerator.backward(adapter(torch.randn(8, 4)).sum())
    opt.step()
    if GATE step % 10 == 0:
        save_checkpoint()
"""


def test_a_save_state_hook_whose_helper_runs_on_the_main_process_alone(tmp_path):
    found = lint_tree(tmp_path, {"train.py": SAVE_HOOK.replace("GATE", "accelerator.is_main_process and")})
    assert not _codes(found, "DDP806")


def test_twin_the_helper_runs_on_every_process(tmp_path):
    body = SAVE_HOOK.replace("GATE", "")
    found = lint_tree(tmp_path, {"train.py": body})
    assert [f.location.line for f in _codes(found, "DDP806")] == [_line(body, "model.save_pretrained(")]


# -------------------------------------------------- a cache file named by the process id
PID_PATH = """
import os
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP


def put(path, feats):
    if os.path.exists(path):
        return
    tmp = PATH
    torch.save(feats, tmp)
    os.replace(tmp, path)


dist.init_process_group("gloo")
model = DDP(torch.nn.Linear(4, 4))
for i in range(10):
    out = model(torch.randn(8, 4))
    put(f"cache/{i}.pt", out.detach())
    out.sum().backward()
"""


def test_a_path_that_holds_the_process_id_is_each_rank_s_own(tmp_path):
    found = lint_tree(tmp_path, {"train.py": PID_PATH.replace("PATH", 'path + f".tmp{os.getpid()}"')})
    assert not _codes(found, "DDP806")


def test_twin_a_path_every_rank_shares(tmp_path):
    body = PID_PATH.replace("PATH", 'path + ".tmp"')
    found = lint_tree(tmp_path, {"train.py": body})
    assert [f.location.line for f in _codes(found, "DDP806")] == [_line(body, "torch.save(feats")]


# -------------------------------------------------- the accumulation count every launch gives
ACCUM = """
import argparse
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

parser = argparse.ArgumentParser()
parser.add_argument("--accum_iter", type=int, default=1)
args = parser.parse_args()
dist.init_process_group("gloo")
model = DDP(torch.nn.Linear(4, 4))
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for i in range(100):
    model(torch.randn(8, 4)).sum().backward()
    if (i + 1) % args.accum_iter == 0:
        opt.step()
        opt.zero_grad()
"""


def test_every_launch_giving_one_micro_step_accumulates_nothing(tmp_path):
    found = lint_tree(tmp_path, {"train.py": ACCUM, "run.sh": "torchrun --nproc_per_node=4 train.py --accum_iter 1\n"})
    assert not _codes(found, "DDP805")


def test_twin_a_launch_giving_four_micro_steps(tmp_path):
    found = lint_tree(tmp_path, {"train.py": ACCUM, "run.sh": "torchrun --nproc_per_node=4 train.py --accum_iter 4\n"})
    assert [f.location.line for f in _codes(found, "DDP805")]


# -------------------------------------------------- a derived dataset keeps its source's draw
DERIVED = """
import torch
import torch.distributed as dist
from datasets import load_dataset
from torch.utils.data import DataLoader
from torch.utils.data.distributed import DistributedSampler

dist.init_process_group("gloo")
torch.manual_seed(1337 + dist.get_rank())
dataset = load_dataset("text", data_files="corpus.txt", split="train")
split = dataset.train_test_split(SPLIT)
train = split["train"]
tokenized = train.map(lambda row: {"n": len(row["text"])})
sampler = DistributedSampler(tokenized)
loader = DataLoader(tokenized, batch_size=8, sampler=sampler)
for epoch in range(3):
    sampler.set_epoch(epoch)
    for batch in loader:
        pass
"""


def test_a_mapped_split_keeps_the_split_s_per_rank_draw(tmp_path):
    body = DERIVED.replace("SPLIT", "test_size=0.1")
    found = lint_tree(tmp_path, {"train.py": body})
    assert [f.location.line for f in _codes(found, "DDP803")] == [_line(body, "sampler = DistributedSampler")]


def test_twin_the_split_has_its_own_seed(tmp_path):
    found = lint_tree(tmp_path, {"train.py": DERIVED.replace("SPLIT", "test_size=0.1, seed=0")})
    assert not _codes(found, "DDP803")


# -------------------------------------------------- a test on the forward's output, loss reduced later
OUTPUT_NONE = """
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP


def reduce_value(value):
    value = value.clone()
    dist.all_reduce(value)
    return value / dist.get_world_size()


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(4, 4)

    def forward(self, x):
        out = self.fc(x)
        return out, (None if out.isnan().any() else out.sum())


dist.init_process_group("gloo")
model = DDP(Net())
opt = torch.optim.SGD(model.parameters(), lr=0.1)
batches = [torch.randn(8, 4) for _ in range(100)]
for x in batches:
    out, score = model(x)
    if TESTED is None:
        continue
    loss = out.pow(2).mean() + score
    loss.backward()
    opt.step()
    loss = reduce_value(loss)
"""


def test_a_test_on_the_forward_s_output_skips_the_backward_on_one_rank(tmp_path):
    body = OUTPUT_NONE.replace("TESTED", "score")
    found = lint_tree(tmp_path, {"train.py": body})
    assert [f.location.line for f in _codes(found, "DDP809")] == [_line(body, "    if score is None:")]


def test_twin_a_test_on_a_value_every_rank_holds_alike(tmp_path):
    found = lint_tree(tmp_path, {"train.py": OUTPUT_NONE.replace("TESTED", "opt.param_groups[0].get('x')")})
    assert not _codes(found, "DDP809")


# ================================================== holdout 82, read after its unread score

# -------------------------------------------------- SystemExit with a message is a failed rank
SHARD_CHECK = """
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

dist.init_process_group("gloo")
rank, world = dist.get_rank(), dist.get_world_size()
data = torch.randn(1000, 4)
start, end = rank * len(data) // world, (rank + 1) * len(data) // world
if end - start <= 64:
    EXIT
model = DDP(torch.nn.Linear(4, 4))
dist.barrier()
"""


def test_a_system_exit_with_a_message_fails_the_rank_and_the_job(tmp_path):
    found = lint_tree(tmp_path, {"train.py": SHARD_CHECK.replace("EXIT", 'raise SystemExit(f"rank {rank}: shard too short")')})
    assert not _codes(found, "DDP801")


def test_twin_a_clean_system_exit_leaves_the_others_waiting(tmp_path):
    body = SHARD_CHECK.replace("EXIT", "raise SystemExit(0)")
    found = lint_tree(tmp_path, {"train.py": body})
    assert _line(body, "dist.barrier()") in [f.location.line for f in _codes(found, "DDP801")]


# -------------------------------------------------- Lightning: a loader with a worker_init_fn of its own
OWN_INIT = """
import random
import numpy as np
import torch
import pytorch_lightning as pl
from torch.utils.data import DataLoader, Dataset


def worker_init_fn(worker_id):
    seed = torch.initial_seed() % 2 ** 32
    np.random.seed(seed)
    random.seed(seed)


class Patches(Dataset):
    def __len__(self):
        return 100

    def __getitem__(self, i):
        return torch.tensor([random.random()])


class Data(pl.LightningDataModule):
    def train_dataloader(self):
        return DataLoader(Patches(), batch_size=8, shuffle=True, num_workers=2INIT)


class Model(pl.LightningModule):
    def __init__(self):
        super().__init__()
        self.layer = torch.nn.Linear(1, 1)

    def training_step(self, batch, i):
        return self.layer(batch).sum()

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.1)


if __name__ == "__main__":
    pl.seed_everything(42, workers=True)
    pl.Trainer(accelerator="gpu", devices=2, strategy="ddp").fit(Model(), datamodule=Data())
"""


def test_lightning_leaves_a_loader_s_own_worker_init_fn_to_reseed_from_the_alike_base(tmp_path):
    body = OWN_INIT.replace("INIT", ", worker_init_fn=worker_init_fn")
    found = lint_tree(tmp_path, {"train.py": body})
    assert [f.location.line for f in _codes(found, "DDP808")] == [_line(body, "return DataLoader(Patches()")]


def test_twin_lightning_seeds_the_workers_of_a_loader_without_one(tmp_path):
    found = lint_tree(tmp_path, {"train.py": OWN_INIT.replace("INIT", "")})
    assert not _codes(found, "DDP808")


# -------------------------------------------------- Lightning: manual optimization skipped on a NaN
MANUAL = """
import torch
import pytorch_lightning as pl


class GAN(pl.LightningModule):
    def __init__(self):
        super().__init__()
        self.automatic_optimization = False
        self.g = torch.nn.Linear(4, 4)

    def training_step(self, batch, i):
        opt = self.optimizers()
        loss = self.g(batch).pow(2).mean()
        BEFORE
        opt.zero_grad()
        self.manual_backward(loss)
        opt.step()
        AFTER

    def configure_optimizers(self):
        return torch.optim.Adam(self.g.parameters())


if __name__ == "__main__":
    pl.Trainer(accelerator="gpu", devices=2, strategy="ddp").fit(GAN(), torch.utils.data.DataLoader(torch.randn(64, 4)))
"""
NAN_SKIP = "if torch.isnan(loss):\n            return None"


def test_a_manual_step_that_returns_on_its_own_nan_before_manual_backward(tmp_path):
    body = MANUAL.replace("BEFORE", NAN_SKIP).replace("AFTER", "")
    found = lint_tree(tmp_path, {"train.py": body})
    assert [f.location.line for f in _codes(found, "DDP809")] == [_line(body, "if torch.isnan(loss):")]


def test_twin_the_same_check_after_the_backward(tmp_path):
    found = lint_tree(tmp_path, {"train.py": MANUAL.replace("BEFORE", "").replace("AFTER", NAN_SKIP)})
    assert not _codes(found, "DDP809")


# -------------------------------------------------- per-class reductions over the classes seen
PER_CLASS = """
import torch
import torch.distributed as dist


def evaluate(model, loader):
    inter = {}
    for images, labels in loader:
        preds = model(images).argmax(1)
        classes = CLASSES
        for cls in classes:
            cls = int(cls)
            if cls not in inter:
                inter[cls] = torch.tensor(0.0)
            inter[cls] += ((preds == cls) & (labels == cls)).sum().float()
    for cls in list(inter.keys()):
        dist.reduce(inter[cls], 0)
    return inter


def get_eval_fn(task):
    if task == "segmentation":
        return evaluate
    raise ValueError(task)


if __name__ == "__main__":
    dist.init_process_group("gloo")
    eval_fn = get_eval_fn("segmentation")
    eval_fn(torch.nn.Linear(4, 3), [(torch.randn(8, 4), torch.randint(0, 3, (8,)))])
"""


def test_a_reduction_per_class_seen_in_a_function_a_helper_hands_back(tmp_path):
    body = PER_CLASS.replace("CLASSES", "torch.unique(torch.cat([preds, labels]))")
    found = lint_tree(tmp_path, {"train.py": body})
    assert [f.location.line for f in _codes(found, "DDP807")] == [_line(body, "dist.reduce(inter[cls], 0)")]


def test_twin_a_reduction_per_class_of_a_fixed_range(tmp_path):
    found = lint_tree(tmp_path, {"train.py": PER_CLASS.replace("CLASSES", "range(3)")})
    assert not _codes(found, "DDP807")


# -------------------------------------------------- a training loader handed out by a property
PROPERTY_LOADER = """
import torch
from accelerate import Accelerator
from torch.utils.data import DataLoader, Dataset


class Images(Dataset):
    def __len__(self):
        return 100

    def __getitem__(self, i):
        return torch.randn(4)


class Reader:
    def __init__(self, batch_size):
        self._train_dataloader = DataLoader(Images(), batch_size=batch_size, shuffle=True)

    @property
    def train_dataloader(self):
        return self._train_dataloader


def create_dataloader(batch_size):
    reader = Reader(batch_size)
    train_dataloader = reader.train_dataloader
    return train_dataloader


def train_one_epoch(model, opt, loader, accelerator):
    for batch in loader:
        accelerator.backward(model(batch).sum())
        opt.step()


accelerator = Accelerator()
model = torch.nn.Linear(4, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
train_dataloader = create_dataloader(8)
PREPARED
for epoch in range(3):
    train_one_epoch(model, opt, train_dataloader, accelerator)
"""


def test_a_property_s_loader_no_prepare_takes_is_every_process_s_whole_set(tmp_path):
    body = PROPERTY_LOADER.replace("PREPARED", "model, opt = accelerator.prepare(model, opt)")
    found = lint_tree(tmp_path, {"train.py": body})
    assert [f.location.line for f in _codes(found, "DDP802")] == [_line(body, "self._train_dataloader = DataLoader(")]


def test_twin_the_property_s_loader_prepared(tmp_path):
    body = PROPERTY_LOADER.replace("PREPARED", "model, opt, train_dataloader = accelerator.prepare(model, opt, train_dataloader)")
    found = lint_tree(tmp_path, {"train.py": body})
    assert not _codes(found, "DDP802")


# -------------------------------------------------- a loader factory's switch nobody turns on
# ezflow's DataloaderCreator: `if self.distributed: ... DistributedSampler ... else: DataLoader(
# shuffle=True)`, built with the default distributed=False and asked for its loader inside the
# ranks a distributed trainer spawns; the base trainer's epoch loop reads what the subclass set
FACTORY_SWITCH = """
import torch
import torch.distributed as dist
import torch.multiprocessing as mp
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler


class LoaderCreator:
    def __init__(self, batch_size, distributed=False, world_size=1):
        self.batch_size = batch_size
        self.distributed = distributed
        self.world_size = world_size

    def get_dataloader(self, rank=0):
        data = TensorDataset(torch.randn(64, 4), torch.randn(64, 1))
        if self.distributed:
            sampler = DistributedSampler(data, rank=rank, num_replicas=self.world_size)
            loader = DataLoader(data, batch_size=self.batch_size, sampler=sampler)
        else:
            loader = DataLoader(data, batch_size=self.batch_size, shuffle=True)
        return loader


class BaseTrainer:
    def __init__(self):
        self.train_loader = None
        self.model = None

    def _epoch_trainer(self, epochs):
        opt = torch.optim.SGD(self.model.parameters(), lr=0.1)
        for epoch in range(epochs):
            for x, y in self.train_loader:
                torch.nn.functional.mse_loss(self.model(x), y).backward()
                opt.step()


class DistributedTrainer(BaseTrainer):
    def __init__(self, creator):
        super().__init__()
        self.creator = creator

    def _main_worker(self, rank):
        dist.init_process_group("gloo", rank=rank, world_size=2)
        self.model = DDP(torch.nn.Linear(4, 1))
        self.train_loader = self.creator.get_dataloader(rank=rank)
        self._epoch_trainer(3)

    def train(self):
        mp.spawn(self._main_worker, nprocs=2)


if __name__ == "__main__":
    DistributedTrainer(LoaderCreator(8CREATOR)).train()
"""


def test_the_side_of_a_switch_no_construction_turns_on_is_the_distributed_run_s(tmp_path):
    body = FACTORY_SWITCH.replace("CREATOR", "")
    found = lint_tree(tmp_path, {"train.py": body})
    assert [f.location.line for f in _codes(found, "DDP802")] == [
        _line(body, "loader = DataLoader(data, batch_size=self.batch_size, shuffle=True)")]


def test_twin_the_factory_built_with_the_switch_on(tmp_path):
    found = lint_tree(tmp_path, {"train.py": FACTORY_SWITCH.replace("CREATOR", ", distributed=True, world_size=2")})
    assert not _codes(found, "DDP802")


# ================================================== holdout 83, read after its unread score

# -------------------------------------------------- items split by an unseeded draw, then wrapped
SPLIT_THEN_WRAPPED = """
import torch
import torch.distributed as dist
from sklearn.model_selection import train_test_split
from torch.utils.data import DataLoader, Dataset
from torch.utils.data.distributed import DistributedSampler


class Data(Dataset):
    def __init__(self, x, y):
        self.x, self.y = x, y

    def __len__(self):
        return len(self.x)

    def __getitem__(self, i):
        return self.x[i], self.y[i]


dist.init_process_group("gloo")
x, y = list(range(100)), [i % 2 for i in range(100)]
x_train, x_test, y_train, y_test = train_test_split(x, y, test_size=0.1SEED)
train_data = Data(x_train, y_train)
sampler = DistributedSampler(train_data)
loader = DataLoader(train_data, batch_size=8, sampler=sampler)
for epoch in range(3):
    sampler.set_epoch(epoch)
    for batch in loader:
        pass
"""


def test_a_dataset_built_from_an_unseeded_split_s_items(tmp_path):
    body = SPLIT_THEN_WRAPPED.replace("SEED", "")
    found = lint_tree(tmp_path, {"train.py": body})
    assert [f.location.line for f in _codes(found, "DDP803")] == [_line(body, "sampler = DistributedSampler")]


def test_twin_the_split_has_a_random_state(tmp_path):
    found = lint_tree(tmp_path, {"train.py": SPLIT_THEN_WRAPPED.replace("SEED", ", random_state=0")})
    assert not _codes(found, "DDP803")


# -------------------------------------------------- rank 0 first, then the others: every rank builds
RANK_ZERO_FIRST = """
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler


def make_loaders(batch_size, distributed=False):
    data = TensorDataset(torch.randn(64, 4), torch.randn(64, 1))
    sampler = DistributedSampler(data) if distributed else None
    return DataLoader(data, batch_size=batch_size, shuffle=sampler is None, sampler=sampler), sampler


dist.init_process_group("gloo")
local_rank = dist.get_rank()
FIRST
model = DDP(torch.nn.Linear(4, 1))
for epoch in range(3):
    for x, y in loader:
        torch.nn.functional.mse_loss(model(x), y).backward()
"""


def test_a_builder_called_by_rank_0_first_then_by_the_others_is_every_rank_s(tmp_path):
    body = RANK_ZERO_FIRST.replace("FIRST", "if local_rank == 0:\n    loader, sampler = make_loaders(8)\n"
                                            "dist.barrier()\nif local_rank != 0:\n    loader, sampler = make_loaders(8)\n"
                                            "dist.barrier()")
    found = lint_tree(tmp_path, {"train.py": body})
    assert [f.location.line for f in _codes(found, "DDP802")] == [_line(body, "return DataLoader(")]


def test_twin_a_builder_rank_0_alone_calls(tmp_path):
    body = RANK_ZERO_FIRST.replace("FIRST", "loader, sampler = make_loaders(8, distributed=True)\n"
                                            "if local_rank == 0:\n    preview, _ = make_loaders(8)")
    found = lint_tree(tmp_path, {"train.py": body})
    assert not _codes(found, "DDP802")


# -------------------------------------------------- a trainer's own unwrapping method
UNWRAP = """
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(4, 4)

    def compute_loss(self, x):
        return self.fc(x).pow(2).mean()


class Trainer:
    def __init__(self):
        self.model = DDP(Net())
        self.opt = torch.optim.SGD(self.model.parameters(), lr=0.1)

    def _get_model(self):
        if isinstance(self.model, DDP):
            return UNWRAPPED
        return self.model

    def step(self, batch, chunks=4):
        model = self._get_model()
        for part in batch.chunk(chunks):
            model.compute_loss(part).backward()
        self.opt.step()


dist.init_process_group("gloo")
trainer = Trainer()
for i in range(10):
    trainer.step(torch.randn(16, 4))
"""


def test_chunks_backpropagated_through_the_unwrapped_module_accumulate_nothing_ddp_syncs(tmp_path):
    found = lint_tree(tmp_path, {"train.py": UNWRAP.replace("UNWRAPPED", "self.model.module")})
    assert not _codes(found, "DDP805")


def test_twin_the_method_hands_back_the_wrapper(tmp_path):
    body = UNWRAP.replace("UNWRAPPED", "self.model").replace(
        "model.compute_loss(part).backward()", "model(part).pow(2).mean().backward()")
    found = lint_tree(tmp_path, {"train.py": body})
    assert [f.location.line for f in _codes(found, "DDP805")]
