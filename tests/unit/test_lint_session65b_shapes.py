"""Shapes from session 65's reading of holdout 89 (after its unread score), each with its twin, in
our own words."""

from __future__ import annotations

from tests.unit.test_lint_session39_shapes import lint_tree
from tests.unit.test_lint_session61_shapes import _codes, _line


# -------------------------------------------------- a BatchSampler around the sampler
# (`te_batch = BatchSampler(te_sampler, 1, drop_last=True)`, then `DataLoader(ds, batch_sampler=
# te_batch)`): the loader that sampler feeds, here an evaluation under no_grad
BATCHED = """
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import BatchSampler, DataLoader, DistributedSampler, TensorDataset


def main():
    dist.init_process_group("gloo")
    train_set, test_set = TensorDataset(torch.randn(64, 4)), TensorDataset(torch.randn(16, 4))
    tr_sampler = DistributedSampler(train_set)  # the training sampler
    te_sampler = DistributedSampler(test_set)
    tr_batches = BatchSampler(tr_sampler, 8, drop_last=True)
    te_batches = BatchSampler(te_sampler, 1, drop_last=True)
    tr_dl = DataLoader(train_set, batch_sampler=tr_batches)
    te_dl = DataLoader(test_set, batch_sampler=te_batches)
    model = DDP(torch.nn.Linear(4, 1))
    for epoch in range(3):
        SET_EPOCH
        for (x,) in tr_dl:
            model(x).sum().backward()
        with torch.no_grad():
            for (x,) in te_dl:
                model(x)


if __name__ == "__main__":
    main()
"""


def test_an_evaluation_sampler_behind_a_batch_sampler_wants_no_set_epoch(tmp_path):
    found = lint_tree(tmp_path, {"train.py": BATCHED.replace("SET_EPOCH", "tr_sampler.set_epoch(epoch)")})
    assert not _codes(found, "DDP804")


def test_twin_the_training_sampler_behind_its_batch_sampler_does(tmp_path):
    found = lint_tree(tmp_path, {"train.py": BATCHED.replace("SET_EPOCH", "pass")})
    assert [f.location.line for f in _codes(found, "DDP804")] == [_line(BATCHED, "# the training sampler")]


# -------------------------------------------------- a loader on a side the callers' option rules out
# (a builder with one branch per dataset, the launch's default naming another): as its sampler
PER_DATASET = """
import argparse
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, DistributedSampler, TensorDataset


def get_loader(dataset):
    data = TensorDataset(torch.randn(64, 4))
    if dataset == "small":
        sampler = DistributedSampler(data, shuffle=True)
        loader = DataLoader(data, batch_size=8, sampler=sampler)  # the small loader
        return loader, sampler
    if dataset == "large":
        sampler = DistributedSampler(data, shuffle=True)
        loader = DataLoader(data, batch_size=8, sampler=sampler)
        return loader, sampler


def prepare(args):
    return get_loader(dataset=args.dataset)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--dataset", default="DEFAULT")
    args = parser.parse_args()
    dist.init_process_group("gloo")
    loader, sampler = prepare(args)
    model = DDP(torch.nn.Linear(4, 1))
    for epoch in range(3):
        sampler.set_epoch(epoch)
        for (x,) in loader:
            model(x).sum().backward()


if __name__ == "__main__":
    main()
"""


def test_a_loader_with_its_sampler_on_a_side_the_default_rules_out_is_not_told_samplerless(tmp_path):
    found = lint_tree(tmp_path, {"train.py": PER_DATASET.replace("DEFAULT", "large")})
    assert not _codes(found, "DDP802")


def test_twin_the_small_side_without_its_sampler_taken_by_default(tmp_path):
    body = PER_DATASET.replace("DEFAULT", "small").replace(
        "loader = DataLoader(data, batch_size=8, sampler=sampler)  # the small loader",
        "loader = DataLoader(data, batch_size=8, shuffle=True)  # the small loader")
    found = lint_tree(tmp_path, {"train.py": body})
    assert [f.location.line for f in _codes(found, "DDP802")] == [_line(body, "# the small loader")]


# -------------------------------------------------- a generator's own seed is no process seeding
# (`torch.randperm(n, generator=torch.Generator().manual_seed(42))` for one pick beside a dataset
# whose constructor shuffles with numpy's unseeded stream)
GENERATOR = """
import numpy as np
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, Dataset, DistributedSampler


class Mixed(Dataset):
    def __init__(self, items):
        self.items = np.random.permutation(items)  # the draw

    def __len__(self):
        return len(self.items)

    def __getitem__(self, i):
        return torch.tensor([float(self.items[i])])


def main():
    dist.init_process_group("gloo")
    SEEDING
    picked = torch.randperm(10, generator=torch.Generator().manual_seed(42)).tolist()
    data = Mixed(list(range(64)) + picked)
    sampler = DistributedSampler(data)  # the sampler
    model = DDP(torch.nn.Linear(1, 1))
    for epoch in range(2):
        sampler.set_epoch(epoch)
        for x in DataLoader(data, batch_size=8, sampler=sampler):
            model(x).sum().backward()


if __name__ == "__main__":
    main()
"""


def test_a_generators_own_manual_seed_leaves_numpys_stream_unseeded(tmp_path):
    found = lint_tree(tmp_path, {"train.py": GENERATOR.replace("SEEDING", "pass")})
    assert [f.location.line for f in _codes(found, "DDP803")] == [_line(GENERATOR, "# the sampler")]


def test_twin_numpy_seeded_alike_on_every_rank(tmp_path):
    found = lint_tree(tmp_path, {"train.py": GENERATOR.replace("SEEDING", "np.random.seed(0)")})
    assert not _codes(found, "DDP803")


# -------------------------------------------------- samplers and loaders made in list comprehensions
# (one per evaluation set, zipped), read by an evaluation with gradients off
LISTED = """
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, DistributedSampler, TensorDataset


def evaluate(model, loader):
    with torch.no_grad():
        for (x,) in loader:
            model(x)


def main():
    dist.init_process_group("gloo")
    train_set = TensorDataset(torch.randn(64, 4))
    sets = [TensorDataset(torch.randn(16, 4)) for _ in range(3)]
    train_sampler = DistributedSampler(train_set)
    samplers = [DistributedSampler(ds) for ds in sets]  # the evaluation samplers
    loaders = [DataLoader(ds, batch_size=4, sampler=s) for ds, s in zip(sets, samplers)]
    train_loader = DataLoader(train_set, batch_size=8, sampler=train_sampler)
    model = DDP(torch.nn.Linear(4, 1))
    for epoch in range(3):
        train_sampler.set_epoch(epoch)
        for (x,) in train_loader:
            model(x).sum().backward()
        for loader in loaders:
            READ


if __name__ == "__main__":
    main()
"""


def test_listed_evaluation_samplers_want_no_set_epoch(tmp_path):
    found = lint_tree(tmp_path, {"train.py": LISTED.replace("READ", "evaluate(model, loader)")})
    assert not _codes(found, "DDP804")


def test_twin_the_listed_loaders_train(tmp_path):
    body = LISTED.replace("READ", "for (x,) in loader:\n                model(x).sum().backward()")
    found = lint_tree(tmp_path, {"train.py": body})
    assert [f.location.line for f in _codes(found, "DDP804")] == [_line(body, "# the evaluation samplers")]


# -------------------------------------------------- a dataset that reseeds from a draw of numpy's
# stream as it reads (`seed = np.random.randint(2**31); random.seed(seed); torch.manual_seed(seed)`
# before paired transforms): the seed follows the worker's stream, seeded alike on every rank
RELAY = """
import random
import numpy as np
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, Dataset, DistributedSampler


class Slices(Dataset):
    def __init__(self, n):
        self.n = n
        self.base = 1234

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        SEED_LINE
        random.seed(seed)
        torch.manual_seed(seed)
        return torch.rand(4) * random.random()


def main():
    dist.init_process_group("gloo")
    torch.manual_seed(42)
    data = Slices(64)
    sampler = DistributedSampler(data)
    loader = DataLoader(data, batch_size=8, sampler=sampler, num_workers=4)  # the loader
    model = DDP(torch.nn.Linear(4, 1))
    for epoch in range(2):
        sampler.set_epoch(epoch)
        for x in loader:
            model(x).sum().backward()


if __name__ == "__main__":
    main()
"""


def test_a_reseed_from_a_global_draw_keeps_the_workers_alike_across_ranks(tmp_path):
    found = lint_tree(tmp_path, {"train.py": RELAY.replace("SEED_LINE", "seed = np.random.randint(2147483647)")})
    assert [f.location.line for f in _codes(found, "DDP808")] == [_line(RELAY, "# the loader")]


def test_twin_a_reseed_from_the_items_own_index_is_the_datasets_own(tmp_path):
    found = lint_tree(tmp_path, {"train.py": RELAY.replace("SEED_LINE", "seed = self.base + i")})
    assert not _codes(found, "DDP808")


# -------------------------------------------------- the launcher's direct call past a flag it sets
# just above (`args.multiprocessing_distributed = True` before `if ...: mp.spawn(worker) else:
# worker(...)`): its seeding before the spawn is the launcher's, no rank's
LAUNCHER = """
import argparse
import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torchvision.transforms as T
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, Dataset, DistributedSampler


class Clips(Dataset):
    def __init__(self):
        self.augment = T.RandomResizedCrop(8)

    def __len__(self):
        return 64

    def __getitem__(self, i):
        return self.augment(torch.rand(3, 16, 16))


def worker(gpu, args):
    dist.init_process_group("gloo", rank=gpu, world_size=2)
    data = Clips()
    sampler = DistributedSampler(data)
    loader = DataLoader(data, batch_size=8, sampler=sampler, num_workers=2)  # the loader
    model = DDP(torch.nn.Linear(8, 1))
    for epoch in range(2):
        sampler.set_epoch(epoch)
        for x in loader:
            model(x.flatten(1)[:, :8]).sum().backward()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--seed", default=1, type=int)
    parser.add_argument("--multiprocessing-distributed", action="store_true")
    args = parser.parse_args()
    torch.manual_seed(args.seed)
    FORCED
    if args.multiprocessing_distributed:
        mp.spawn(worker, nprocs=2, args=(args,))
    else:
        worker(0, args)


if __name__ == "__main__":
    main()
"""


def test_the_launchers_seeding_with_the_direct_path_ruled_out_just_above_is_no_ranks(tmp_path):
    found = lint_tree(tmp_path, {"train.py": LAUNCHER.replace("FORCED", "args.multiprocessing_distributed = True")})
    assert not _codes(found, "DDP808")


def test_twin_the_direct_path_open_runs_the_seeded_process_as_a_rank(tmp_path):
    # (the direct call hands the rank it is launched as: a constant 0 there, with the group
    # joined at the rank handed, is the one process - session 95's reading of ULE's launcher)
    found = lint_tree(tmp_path, {"train.py": LAUNCHER.replace("FORCED", "pass").replace(
        "        worker(0, args)", "        worker(args.local_rank, args)")})
    assert [f.location.line for f in _codes(found, "DDP808")] == [_line(LAUNCHER, "# the loader")]


# -------------------------------------------------- SageMaker's DistributedDataParallel, imported on
# one side of a switch over torch's: a DDP model all the same (no_sync and all)
SAGEMAKER = """
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, DistributedSampler, TensorDataset

if USE_SMDDP:
    from smdistributed.dataparallel.torch.parallel.distributed import DistributedDataParallel as DDP


def main():
    dist.init_process_group("gloo")
    data = TensorDataset(torch.randn(64, 4))
    sampler = DistributedSampler(data)
    model = DDP(torch.nn.Linear(4, 1))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for epoch in range(2):
        sampler.set_epoch(epoch)
        for i, (x,) in enumerate(DataLoader(data, batch_size=8, sampler=sampler)):
            (model(x).sum() / 4).backward()  # the backward
            if (i + 1) % 4 == 0:
                optimizer.step()
                optimizer.zero_grad()


if __name__ == "__main__":
    main()
"""


def test_sagemakers_ddp_accumulating_without_no_sync_is_found(tmp_path):
    found = lint_tree(tmp_path, {"train.py": SAGEMAKER.replace("USE_SMDDP", "__name__ == 'x'")})
    assert [f.location.line for f in _codes(found, "DDP805")] == [_line(SAGEMAKER, "# the backward")]


# -------------------------------------------------- an optimizer wrapper's backward(loss) (fairseq's
# FairseqOptimizer, apex's FP16_Optimizer), micro-batches in the trainer's step, a DDP class made
# over a base the wrapping function picks, and the launcher importing the script by its own name
FAIRSEQ_TRAIN = """
import torch
import torch.distributed as dist
from trainer import Trainer


def main(world):
    trainer = Trainer(world)
    for epoch in range(2):
        for step in range(10):
            trainer.train_step([torch.randn(8, 4) for _ in range(4)])


if __name__ == "__main__":
    from launcher import launch
    launch()
"""
FAIRSEQ_LAUNCHER = """
import torch.distributed as dist
import torch.multiprocessing as mp
from train import main as single_process_main


def run(rank):
    init_fn = dist.init_process_group
    init_fn(backend="gloo", rank=rank, world_size=2)
    single_process_main(2)


def launch():
    mp.spawn(run, nprocs=2)
"""
FAIRSEQ_TRAINER = """
import torch
from torch.nn import parallel


class Wrapped:
    def __init__(self, params):
        self._optimizer = torch.optim.SGD(params, lr=0.1)

    def backward(self, loss):
        loss.backward()

    def step(self):
        self._optimizer.step()

    def zero_grad(self):
        self._optimizer.zero_grad()


def distributed_model(model, legacy):
    if not legacy:
        ddp_class = parallel.DistributedDataParallel
    else:
        ddp_class = object

    class _Distributed(ddp_class):
        pass

    return _Distributed(module=model)


class Trainer:
    def __init__(self, world):
        self.model = distributed_model(torch.nn.Linear(4, 1), legacy=False)
        self.optimizer = Wrapped(self.model.parameters())

    def train_step(self, samples):
        self.optimizer.zero_grad()
        for i, sample in enumerate(samples):
            SYNC
            loss = self.model(sample).sum()
            self.optimizer.backward(loss)  # the backward
        self.optimizer.step()
"""


def test_micro_batches_through_an_optimizer_wrappers_backward_on_a_made_ddp_class(tmp_path):
    files = {"train.py": FAIRSEQ_TRAIN, "launcher.py": FAIRSEQ_LAUNCHER,
             "trainer.py": FAIRSEQ_TRAINER.replace("SYNC", "pass")}
    found = lint_tree(tmp_path, files)
    assert [f.location.line for f in _codes(found, "DDP805")] == [_line(FAIRSEQ_TRAINER, "# the backward")]


def test_twin_the_micro_batches_but_the_last_skip_the_sync(tmp_path):
    files = {"train.py": FAIRSEQ_TRAIN, "launcher.py": FAIRSEQ_LAUNCHER,
             "trainer.py": FAIRSEQ_TRAINER.replace(
                 "SYNC", "self.model.require_backward_grad_sync = i == len(samples) - 1")}
    found = lint_tree(tmp_path, files)
    assert not _codes(found, "DDP805")
