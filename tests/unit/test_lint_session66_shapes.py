"""Shapes from session 66's reading of holdout 92 (after its unread score), each with its twin, in
our own words."""

from __future__ import annotations

from tests.unit.test_lint_session39_shapes import lint_tree
from tests.unit.test_lint_session61_shapes import _codes, _line

# -------------------------------------------------- a benchmark's loop over a list of zoo models,
# each handed to main() by index: the list stands for the one picked as most of its models are
ZOO_LIST = """
import torch
import torch.distributed as dist
import torchvision


def evaluate(model, batch):
    with torch.no_grad():
        return model(batch)  # the forward


def main(model):
    dist.init_process_group("gloo")
    ddp = torch.nn.parallel.DistributedDataParallel(model)
    for epoch in range(2):
        if dist.get_rank() == 0:
            evaluate(ddp, torch.randn(2, 3, 32, 32))
        ddp(torch.randn(2, 3, 32, 32)).sum().backward()


if __name__ == "__main__":
    nets = [MODELS]
    for i in range(len(nets)):
        main(nets[i])
"""


def test_a_model_picked_by_index_from_a_list_of_batchnorm_zoo_models_has_buffers(tmp_path):
    body = ZOO_LIST.replace("MODELS", "torchvision.models.resnet18(), torchvision.models.vgg16(), "
                                      "torchvision.models.mobilenet_v2()")
    found = lint_tree(tmp_path, {"train.py": body})
    assert [f.location.line for f in _codes(found, "DDP801")] == [_line(body, "# the forward")]


def test_twin_a_list_of_models_mostly_without_batchnorm(tmp_path):
    body = ZOO_LIST.replace("MODELS", "torchvision.models.vgg16(), torchvision.models.alexnet(), "
                                      "torchvision.models.resnet18()")
    assert not _codes(lint_tree(tmp_path, {"train.py": body}), "DDP801")


# -------------------------------------------------- a classifier's own method that imports and
# returns the network its name picks (`self._get_net(name)`), wrapped in DDP in the rank's
# training function; rank 0 validates through the wrapper
NETS = """
import torch.nn as nn


def volume_net(channels):
    return nn.Sequential(nn.Conv3d(channels, 8, 3), LAYER, nn.Flatten(), nn.LazyLinear(2))
"""
CLASSIFIER = """
import torch
import torch.distributed as dist
import torch.multiprocessing as mp
from torch.nn.parallel import DistributedDataParallel


class VolumeClassifier:
    def __init__(self, net_name="volume"):
        self.net = self._get_net(net_name)

    def _get_net(self, net_name):
        if net_name == "volume":
            from nets import volume_net
            net = volume_net(1)
        return net

    def trainer(self, gpu, world_size):
        dist.init_process_group("gloo", rank=gpu, world_size=world_size)
        net = DistributedDataParallel(self.net)
        for epoch in range(2):
            net(torch.randn(2, 1, 8, 8, 8)).sum().backward()
            if gpu == 0:
                self._validate(net)

    def _validate(self, net):
        with torch.no_grad():
            net(torch.randn(2, 1, 8, 8, 8))  # the forward


if __name__ == "__main__":
    mp.spawn(VolumeClassifier().trainer, args=(2,), nprocs=2)
"""


def test_a_network_a_method_of_the_class_returns_is_read_for_buffers(tmp_path):
    files = {"train.py": CLASSIFIER, "nets.py": NETS.replace("LAYER", "nn.BatchNorm3d(8)")}
    found = lint_tree(tmp_path, files)
    assert [f.location.line for f in _codes(found, "DDP801")] == [_line(CLASSIFIER, "# the forward")]


def test_twin_the_returned_network_holds_no_buffers(tmp_path):
    files = {"train.py": CLASSIFIER, "nets.py": NETS.replace("LAYER", "nn.ReLU()")}
    assert not _codes(lint_tree(tmp_path, files), "DDP801")


# -------------------------------------------------- a worker count a constructor keeps from its
# parameter (default 0), the class built with `**CONFIG`: `super().__init__()` is no call that
# leaves it out, the class's own calls say whether any run hands it
SETTINGS = """
INIT = {"num_workers": 2, "lr": 0.1}
"""
WORKERS = """
import random

import torch
import torch.distributed as dist
from torch.utils.data import DataLoader, Dataset, DistributedSampler
from settings import INIT


class Jitter(Dataset):
    def __len__(self):
        return 64

    def __getitem__(self, i):
        return torch.full((4,), random.random())


class Base:
    def __init__(self):
        pass


class Trainer(Base):
    def __init__(self, lr=0.1, num_workers=0):
        super().__init__()
        self.lr = lr
        self.num_workers = num_workers

    def train(self):
        dist.init_process_group("gloo")
        torch.manual_seed(0)
        ds = Jitter()
        loader = DataLoader(ds, batch_size=8, sampler=DistributedSampler(ds), num_workers=self.num_workers)  # the loader
        model = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(4, 1))
        for epoch in range(2):
            loader.sampler.set_epoch(epoch)
            for x in loader:
                model(x).sum().backward()


if __name__ == "__main__":
    BUILT.train()
"""


def test_a_constructors_worker_count_given_through_a_config_spread(tmp_path):
    body = WORKERS.replace("BUILT", "Trainer(**INIT)")
    found = lint_tree(tmp_path, {"train.py": body, "settings.py": SETTINGS})
    assert [f.location.line for f in _codes(found, "DDP808")] == [_line(body, "# the loader")]


def test_twin_every_construction_leaves_the_count_at_its_default_0(tmp_path):
    body = WORKERS.replace("BUILT", "Trainer(lr=0.2)")
    assert not _codes(lint_tree(tmp_path, {"train.py": body, "settings.py": SETTINGS}), "DDP808")


# -------------------------------------------------- a reseed from the config's seed plus the count of
# optimizer updates (fairseq's `get_num_updates()`): the same on every rank
UPDATES = """
import random

import torch
import torch.distributed as dist
from torch.utils.data import DataLoader, Dataset, DistributedSampler


class Masked(Dataset):
    def __len__(self):
        return 64

    def __getitem__(self, i):
        return torch.bernoulli(torch.full((4,), 0.5))


class Trainer:
    def __init__(self, seed, rank):
        self.seed, self.rank, self._num_updates = seed, rank, 0

    def get_num_updates(self):
        return self._num_updates

    def reseed(self):
        torch.manual_seed(SEED)

    def loader(self, ds):
        return DataLoader(ds, batch_size=8, sampler=DistributedSampler(ds), num_workers=4)  # the loader

    def train(self):
        model = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(4, 1))
        loader = self.loader(Masked())
        for epoch in range(2):
            self.reseed()
            loader.sampler.set_epoch(epoch)
            for x in loader:
                model(x).sum().backward()
                self._num_updates += 1


dist.init_process_group("gloo")
Trainer(1, dist.get_rank()).train()
"""


def test_a_seed_plus_the_count_of_updates_is_alike_on_every_rank(tmp_path):
    body = UPDATES.replace("SEED", "self.seed + self.get_num_updates()")
    found = lint_tree(tmp_path, {"train.py": body})
    assert [f.location.line for f in _codes(found, "DDP808")] == [_line(body, "# the loader")]


def test_twin_the_rank_added_to_the_seed(tmp_path):
    body = UPDATES.replace("SEED", "self.seed + self.get_num_updates() + self.rank")
    assert not _codes(lint_tree(tmp_path, {"train.py": body}), "DDP808")


# -------------------------------------------------- a loader factory whose base class shards
# `self.train_set`, which a subclass's build_datasets split with `random_split` (tuple-unpacked
# into two fields) and nothing seeds the process
FACTORY = """
import torch
import torch.distributed as dist
from torch.utils.data import DataLoader, DistributedSampler, TensorDataset, random_split


class LoaderFactory:
    def __init__(self, batch_size):
        self.batch_size = batch_size
        self.train_set = None
        self.valid_set = None
        self.build_datasets()

    def build_datasets(self):
        raise NotImplementedError

    def to_distributed(self):
        self.sampler = DistributedSampler(self.train_set)  # the sampler
        self.loader = DataLoader(self.train_set, self.batch_size, sampler=self.sampler)


class Scans(LoaderFactory):
    def build_datasets(self):
        full = TensorDataset(torch.randn(100, 4))
        self.train_set, self.valid_set = random_split(full, [90, 10]SPLIT_SEED)


dist.init_process_group("gloo")
data = Scans(8)
data.to_distributed()
model = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(4, 1))
for epoch in range(2):
    data.sampler.set_epoch(epoch)
    for (x,) in data.loader:
        model(x).sum().backward()
"""


def test_a_base_sampler_over_a_subclasss_unseeded_split_is_ddp803(tmp_path):
    body = FACTORY.replace("SPLIT_SEED", "")
    found = lint_tree(tmp_path, {"train.py": body})
    assert [f.location.line for f in _codes(found, "DDP803")] == [_line(body, "# the sampler")]


def test_twin_the_split_seeded_alike(tmp_path):
    body = FACTORY.replace("SPLIT_SEED", ", generator=torch.Generator().manual_seed(0)")
    assert not _codes(lint_tree(tmp_path, {"train.py": body}), "DDP803")


# -------------------------------------------------- a multi-task builder that keeps an iterator over
# each task's loader in a list it returns; a helper draws `next()` from a random one of them
MULTI = """
import random

import torch
import torch.distributed as dist
from torch.utils.data import DataLoader, DistributedSampler, TensorDataset


def build_loaders(datasets):
    loaders = []
    for ds in datasets:
        loader = DataLoader(ds, batch_size=8, SAMPLING)  # the loader
        loaders.append(iter(loader))
    return loaders, len(datasets)


def next_batch(loaders):
    while loaders:
        i = random.randint(0, len(loaders) - 1)
        picked = loaders[i]
        try:
            return next(picked)
        except StopIteration:
            loaders.pop(i)
    return None


dist.init_process_group("gloo")
model = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(4, 1))
tasks = [TensorDataset(torch.randn(64, 4)), TensorDataset(torch.randn(32, 4))]
for epoch in range(2):
    loaders, n = build_loaders(tasks)
    while True:
        batch = next_batch(loaders)
        if batch is None:
            break
        model(batch[0]).sum().backward()
"""


def test_a_list_of_task_loaders_a_helper_draws_from_trains(tmp_path):
    body = MULTI.replace("SAMPLING", "shuffle=True")
    found = lint_tree(tmp_path, {"train.py": body})
    assert [f.location.line for f in _codes(found, "DDP802")] == [_line(body, "# the loader")]


def test_twin_each_task_loader_sharded(tmp_path):
    body = MULTI.replace("SAMPLING", "sampler=DistributedSampler(ds)")
    assert not _codes(lint_tree(tmp_path, {"train.py": body}), "DDP802")


# -------------------------------------------------- mp.spawn'd ranks that save on rank 0, and the
# launching process's one-process fallback that saves after them: no rank runs the fallback
FALLBACK = """
import torch
import torch.distributed as dist
import torch.multiprocessing as mp


class Net(torch.nn.Linear):
    def save_checkpoint(self, path):
        torch.save(self.state_dict(), path)  # the save


def worker(rank, world_size):
    dist.init_process_group("gloo", rank=rank, world_size=world_size)
    net = Net(4, 1)
    model = torch.nn.parallel.DistributedDataParallel(net)
    for epoch in range(2):
        model(torch.randn(2, 4)).sum().backward()
        WORKER_SAVE


def single_process():
    net = Net(4, 1)
    net(torch.randn(2, 4)).sum().backward()
    net.save_checkpoint("best.pt")


def main():
    try:
        mp.spawn(worker, args=(2,), nprocs=2)
    except Exception:
        single_process()


if __name__ == "__main__":
    main()
"""


def test_a_save_the_launcher_makes_in_its_fallback_is_no_ranks(tmp_path):
    body = FALLBACK.replace("WORKER_SAVE", "if rank == 0:\n            net.save_checkpoint('best.pt')")
    assert not _codes(lint_tree(tmp_path, {"train.py": body}), "DDP806")


def test_twin_the_ranks_save_without_a_rank_test(tmp_path):
    body = FALLBACK.replace("WORKER_SAVE", "net.save_checkpoint('best.pt')")
    found = lint_tree(tmp_path, {"train.py": body})
    assert [f.location.line for f in _codes(found, "DDP806")] == [_line(body, "# the save")]


# -------------------------------------------------- an environment object the trainer keeps
# (`self.env = env`) saves to a path holding `self.env.rank`: one file per rank
ENV = """
import torch
import torch.distributed as dist


class Environment:
    def __init__(self):
        dist.init_process_group("gloo")
        self.rank = dist.get_rank()
        self.model = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(4, 1))

    def save_model(self, filename):
        torch.save(self.model.state_dict(), filename)  # the save


class Trainer:
    def __init__(self, env):
        self.env = env

    def train(self):
        for epoch in range(2):
            self.env.model(torch.randn(2, 4)).sum().backward()
            self.env.save_model(PATH)


def main():
    Trainer(Environment()).train()


main()
"""


def test_a_kept_environments_save_to_a_path_with_its_rank(tmp_path):
    body = ENV.replace("PATH", 'f"model_{epoch}.{self.env.rank}.pt"')
    assert not _codes(lint_tree(tmp_path, {"train.py": body}), "DDP806")


def test_twin_the_path_names_no_rank(tmp_path):
    body = ENV.replace("PATH", 'f"model_{epoch}.pt"')
    found = lint_tree(tmp_path, {"train.py": body})
    assert [f.location.line for f in _codes(found, "DDP806")] == [_line(body, "# the save")]


# -------------------------------------------------- a loss scaler told `update_grad=(i + 1) % ACCUM
# == 0`, ACCUM a module constant 1: it steps on every call
SCALER = """
import torch
import torch.distributed as dist

ACCUM = STEPS


class Scaler:
    def __call__(self, loss, optimizer, update_grad=True):
        loss.backward()
        if update_grad:
            optimizer.step()


dist.init_process_group("gloo")
model = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(4, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.1)
scaler = Scaler()
for idx in range(100):
    loss = model(torch.randn(2, 4)).sum() / ACCUM
    scaler(loss, opt, update_grad=(idx + 1) % ACCUM == 0)  # the backward
    if (idx + 1) % ACCUM == 0:
        opt.zero_grad()
"""


def test_an_update_switch_every_call_makes_true_is_no_accumulation(tmp_path):
    assert not _codes(lint_tree(tmp_path, {"train.py": SCALER.replace("STEPS", "1")}), "DDP805")


def test_twin_four_micro_steps_per_update(tmp_path):
    body = SCALER.replace("STEPS", "4")
    found = lint_tree(tmp_path, {"train.py": body})
    assert [f.location.line for f in _codes(found, "DDP805")] == [_line(body, "# the backward")]


# -------------------------------------------------- a GAN's micro-step loop: the discriminator's step
# (a DDP backward, the step on the last micro-step) runs under `self.iteration % d_freq == 0`, a
# counter the micro-step loop never advances - on such iterations every micro-step backpropagates
GAN = """
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP


class Runner:
    def __init__(self, accum):
        self.accum, self.iteration, self.d_freq = accum, 0, 2
        self.disc = DDP(torch.nn.Linear(4, 1))
        self.gen = DDP(torch.nn.Linear(4, 4))
        self.d_opt = torch.optim.SGD(self.disc.parameters(), lr=0.1)
        self.g_opt = torch.optim.SGD(self.gen.parameters(), lr=0.1)

    def disc_step(self, x, micro):
        loss = self.disc(x).mean() / self.accum
        loss.backward()  # the discriminator's backward
        if micro == self.accum - 1:
            self.d_opt.step()
            self.d_opt.zero_grad()

    def gen_step(self, x, micro):
        loss = self.gen.module(x).mean() / self.accum
        loss.backward()
        if micro == self.accum - 1:
            self.g_opt.step()
            self.g_opt.zero_grad()

    def train_iteration(self):
        for micro in range(self.accum):
            x = torch.randn(2, 4)
            if self.iteration % self.d_freq == 0:
                self.disc_step(x, micro)  # the discriminator's micro-step
            self.gen_step(x, micro)

    def train(self):
        for _ in range(10):
            self.train_iteration()
            self.iteration += 1


dist.init_process_group("gloo")
Runner(4).train()
"""


def test_a_backward_under_a_counter_test_the_micro_steps_never_change(tmp_path):
    found = _codes(lint_tree(tmp_path, {"train.py": GAN}), "DDP805")
    assert [f.location.line for f in found] == [_line(GAN, "# the discriminator's backward")]
    assert f"train.py:{_line(GAN, '# the discriminator' + chr(39) + 's micro-step')}" in found[0].message


def test_twin_one_micro_step_per_iteration(tmp_path):
    assert not _codes(lint_tree(tmp_path, {"train.py": GAN.replace("Runner(4)", "Runner(1)")}), "DDP805")


# -------------------------------------------------- a second training loop left below the
# function's `return` (never run): it sets no epoch, and that is no finding
DEAD = """
import torch
import torch.distributed as dist
from torch.utils.data import DataLoader, DistributedSampler, TensorDataset


def train():
    dist.init_process_group("gloo")
    ds = TensorDataset(torch.randn(64, 4))
    loader = DataLoader(ds, batch_size=8, sampler=DistributedSampler(ds))
    model = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(4, 1))
    for epoch in range(2):
        loader.sampler.set_epoch(epoch)
        for (x,) in loader:
            model(x).sum().backward()
    RETURN
    for epoch in range(2):
        for (x,) in loader:  # the second loop
            model(x).sum().backward()


train()
"""


def test_a_loop_after_the_return_never_runs(tmp_path):
    assert not _codes(lint_tree(tmp_path, {"train.py": DEAD.replace("RETURN", "return")}), "DDP804")


def test_twin_the_same_loop_where_it_runs(tmp_path):
    found = lint_tree(tmp_path, {"train.py": DEAD.replace("RETURN", "pass")})
    assert _codes(found, "DDP804")


def test_a_list_naming_the_same_local_model_several_times_is_read_as_that_model(tmp_path):
    # each kind of model asked once: a second ask of the same class used to meet the search's
    # `seen` and count as no buffers, which turned a list of repeats into a majority without
    body = ZOO_LIST.replace("import torchvision", "import torchvision\n\n\nclass Net(torch.nn.Module):\n"
                            "    def __init__(self):\n        super().__init__()\n        self.bn = torch.nn.BatchNorm2d(3)\n")
    body = body.replace("MODELS", "Net(), Net(), Net(), torchvision.models.vgg16()")
    found = lint_tree(tmp_path, {"train.py": body})
    assert [f.location.line for f in _codes(found, "DDP801")] == [_line(body, "# the forward")]
