"""Shapes from session 30 (holdout 31, read after it was scored unread twice). Each with its
healthy (or buggy) twin, written in our own words."""

from __future__ import annotations

from tests.unit.test_lint_round17_shapes import lint_plain
from tests.unit.test_lint_round50_shapes import at, line_of

# -------------------------------------------------- a parameter hides the module's global of its name
SHADOWED = """
import torch, torch.distributed as dist, torch.multiprocessing as mp
from torch.nn.parallel import DistributedDataParallel as DDP

@torch.no_grad()
def validate(step, model):
    model.eval()
    return model(torch.randn(2, 4)).sum()  # the forward

def training(rank, world, model):
    dist.init_process_group("gloo", init_method="tcp://localhost:29500", rank=rank, world_size=world)
    model = DDP(model)
    for step in range(3):
        model(torch.randn(2, 4)).sum().backward()
        if rank == 0:
            validate(step, {handed})  # the call

if __name__ == "__main__":
    model = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.BatchNorm1d(4))
    mp.spawn(training, args=(2, model), nprocs=2)
"""


def test_a_parameter_is_what_the_callers_hand_not_the_global_of_its_name(tmp_path):
    """validate's `model` is the DDP model training hands it, not the plain module the
    `__main__` block binds to the same name: its forward on rank 0 broadcasts the buffers."""
    code = SHADOWED.replace("{handed}", "model")
    assert at(lint_plain(tmp_path, code), "DDP801") == [(line_of(code, "# the forward"), "warning")]


def test_its_twin_the_plain_module_handed_is_no_ddp_forward(tmp_path):
    assert at(lint_plain(tmp_path, SHADOWED.replace("{handed}", "model.module")), "DDP801") == []


# -------------------------------------------------- mp.spawn's arguments bound to a name first
SPAWN_TUPLE = """
import torch, torch.distributed as dist, torch.multiprocessing as mp
from torch.nn.parallel import DistributedDataParallel as DDP

def training(rank, world, net):
    dist.init_process_group("gloo", init_method="tcp://localhost:29500", rank=rank, world_size=world)
    model = DDP(net)
    for step in range(3):
        model(torch.randn(2, 4)).sum().backward()
        if rank == 0:
            with torch.no_grad():
                model(torch.randn(2, 4))  # the forward

if __name__ == "__main__":
    plain = torch.nn.Sequential(torch.nn.Linear(4, 4), {norm})
    training_args = (2, plain)
    mp.spawn(training, args=training_args, nprocs=2)
"""


def test_a_tuple_bound_to_a_name_then_handed_to_spawn_binds_the_workers_parameters(tmp_path):
    """`net` is the module built with BatchNorm in the launcher, handed through `training_args`."""
    code = SPAWN_TUPLE.replace("{norm}", "torch.nn.BatchNorm1d(4)")
    assert at(lint_plain(tmp_path, code), "DDP801") == [(line_of(code, "# the forward"), "warning")]


def test_its_twin_a_module_without_buffers_broadcasts_nothing(tmp_path):
    assert at(lint_plain(tmp_path, SPAWN_TUPLE.replace("{norm}", "torch.nn.ReLU()")), "DDP801") == []


# -------------------------------------------------- a callback keeps the model it is handed
CALLBACK = """
import os
import torch, torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

class EvalCallback:
    def __init__(self, net):
        self.net = net

    def on_epoch_end(self, epoch, model_eval):
        self.net = model_eval
        with torch.no_grad():
            return self.net(torch.randn(2, 4))  # the forward

def fit_one_epoch(model_train, model, callback, local_rank):
    model_train(torch.randn(2, 4)).sum().backward()
    if local_rank == 0:
        callback.on_epoch_end(1, {handed})  # the call

def main():
    local_rank = int(os.environ["LOCAL_RANK"])
    dist.init_process_group("gloo")
    model = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.BatchNorm1d(4))
    model_train = DDP(model)
    callback = EvalCallback(model)
    for epoch in range(2):
        fit_one_epoch(model_train, model, callback, local_rank)

main()
"""


def test_a_field_set_from_a_parameter_two_calls_from_the_ddp_model_is_that_model(tmp_path):
    code = CALLBACK.replace("{handed}", "model_train")
    assert at(lint_plain(tmp_path, code), "DDP801") == [(line_of(code, "# the forward"), "warning")]


def test_its_twin_the_plain_module_handed_to_the_callback(tmp_path):
    assert at(lint_plain(tmp_path, CALLBACK.replace("{handed}", "model")), "DDP801") == []


# -------------------------------------------------- buffers of a library base class, through a factory's tuple
BACKBONE = """
import torch, torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from torchvision.models.resnet import ResNet, Bottleneck

class Features({base}):
    def __init__(self):
        super().__init__({args})

def load_backbone():
    backbone = Features()
    normalize = None
    return backbone, normalize

class Head(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.backbone, self.normalize = load_backbone()

    def forward(self, x):
        return self.backbone(x)

dist.init_process_group("gloo")
model = DDP(Head())
for step in range(3):
    model(torch.randn(2, 3, 32, 32)).sum().backward()
    if dist.get_rank() == 0:
        with torch.no_grad():
            model(torch.randn(2, 3, 32, 32))  # the forward
"""


def test_a_class_built_on_torchvisions_resnet_holds_batchnorm_buffers(tmp_path):
    code = BACKBONE.replace("{base}", "ResNet").replace("{args}", "Bottleneck, [1, 1, 1, 1]")
    assert at(lint_plain(tmp_path, code), "DDP801") == [(line_of(code, "# the forward"), "warning")]


def test_its_twin_a_plain_module_base_holds_none(tmp_path):
    code = BACKBONE.replace("{base}", "torch.nn.Module").replace("{args}", "")
    assert at(lint_plain(tmp_path, code), "DDP801") == []


# -------------------------------------------------- the launcher's loader, built by a helper, handed to the ranks
HANDED_LOADER = """
import torch, torch.distributed as dist, torch.multiprocessing as mp
from torch.utils.data import DataLoader, TensorDataset
from torch.nn.parallel import DistributedDataParallel as DDP

def get_train_loader(n):
    data = TensorDataset(torch.randn(n, 4))
    loader = DataLoader(data, batch_size=4, shuffle=True)  # the loader
    return loader

def training(rank, world, train_loader):
    dist.init_process_group("gloo", init_method="tcp://localhost:29500", rank=rank, world_size=world)
    model = DDP(torch.nn.Linear(4, 1))
    for (x,) in train_loader:
        model(x).sum().backward()

if __name__ == "__main__":
    train_loader = get_train_loader(64)
    training_args = (2, {handed})
    mp.spawn(training, args=training_args, nprocs=2)
"""


def test_a_helpers_loader_the_launcher_hands_to_every_rank_has_no_sampler(tmp_path):
    code = HANDED_LOADER.replace("{handed}", "train_loader")
    assert at(lint_plain(tmp_path, code), "DDP802") == [(line_of(code, "# the loader"), "error")]


def test_its_twin_a_launcher_loader_kept_in_the_launcher(tmp_path):
    """The ranks get a loader of their own making (here: none handed): the launcher's loader
    is the launching process's, no rank iterates it."""
    code = HANDED_LOADER.replace("{handed}", "None").replace(
        "    for (x,) in train_loader:", "    for (x,) in [(torch.randn(4, 4),)]:")
    assert at(lint_plain(tmp_path, code), "DDP802") == []


# -------------------------------------------------- a loader returned through a local endless generator
GENERATOR = """
import torch, torch.distributed as dist, torch.multiprocessing as mp
from torch.utils.data import DataLoader, TensorDataset
from torch.nn.parallel import DistributedDataParallel as DDP

def sample_data(loader):
    while True:
        for batch in loader:
            yield batch

def create_loader(n):
    data = TensorDataset(torch.randn(n, 4))
    data_loader = DataLoader(data, batch_size=4, shuffle=True)  # the loader
    return {returned}

class Trainer:
    def __init__(self):
        self.dataloader = create_loader(64)
        self.model = DDP(torch.nn.Linear(4, 1))

    def train(self):
        for step in range(10):
            (x,) = next(self.dataloader)
            self.model(x).sum().backward()

def main(rank, world):
    dist.init_process_group("gloo", init_method="tcp://localhost:29500", rank=rank, world_size=world)
    Trainer().train()

if __name__ == "__main__":
    mp.spawn(main, args=(2,), nprocs=2)
"""


def test_a_loader_returned_through_a_generator_over_it_is_the_training_loader(tmp_path):
    code = GENERATOR.replace("{returned}", "sample_data(data_loader)")
    assert at(lint_plain(tmp_path, code), "DDP802") == [(line_of(code, "# the loader"), "error")]


def test_its_twin_a_generator_over_something_else_returns_no_loader(tmp_path):
    """`sample_data(other)` hands on other batches: the loader itself is read by nothing."""
    code = GENERATOR.replace("{returned}", "sample_data([(torch.randn(4, 4),)] * 10)")
    assert [line for line, severity in at(lint_plain(tmp_path, code), "DDP802") if severity == "error"] == []


# -------------------------------------------------- worker seeds: where the dataset is made
SEEDED = """
import torch, torch.distributed as dist
from torch.utils.data import DataLoader, Dataset, DistributedSampler
import torchvision.transforms as T

class Images(Dataset):
    def __init__(self, root, transform=None):
        self.root, self.transform = root, transform

    def __len__(self):
        return 64

    def __getitem__(self, i):
        return self.transform(torch.zeros(3, 8, 8))

class Template:
    def create_dataset(self, root, transform):
        dataset = Images(root, transform=transform)
        return dataset, True

    def build_dataloader(self, transform):
        dataset, has_subfolder = self.create_dataset("data", transform=transform)
        dataset = list(dataset) if has_subfolder is None else dataset
        sampler = DistributedSampler(dataset)
        return DataLoader(dataset, batch_size=4, sampler=sampler, num_workers=4), sampler  # the loader

    def train_transform(self):
        return T.Compose([{crop}, T.ToTensor()])

    def fit(self):
        torch.manual_seed(0)
        train_transform = self.train_transform()
        loader, sampler = self.build_dataloader(train_transform)
        model = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(3, 1))
        for epoch in range(2):
            sampler.set_epoch(epoch)
            for x in loader:
                model(x.mean((2, 3))).sum().backward()

dist.init_process_group("gloo")
Template().fit()
"""


def test_a_dataset_unpacked_from_a_builder_draws_what_the_callers_transform_draws(tmp_path):
    code = SEEDED.replace("{crop}", "T.RandomResizedCrop(8)")
    assert at(lint_plain(tmp_path, code), "DDP808") == [(line_of(code, "# the loader"), "warning")]


def test_its_twin_a_transform_that_draws_nothing(tmp_path):
    assert at(lint_plain(tmp_path, SEEDED.replace("{crop}", "T.CenterCrop(8)")), "DDP808") == []


PICKED_CLASS = """
import os, random
import torch, torch.distributed as dist
from torch.utils.data import DataLoader, Dataset, DistributedSampler

class Folder(Dataset):
    def __len__(self):
        return 64
    def __getitem__(self, i):
        return torch.zeros(4)

class Packed(Dataset):
    def __len__(self):
        return 64
    def __getitem__(self, i):
        start = {start}
        return torch.zeros(4) + start

def make(path):
    Chosen = Folder if os.path.isdir(path) else Packed
    return Chosen()

dist.init_process_group("gloo")
torch.manual_seed(1234)
dataset = make("data")
sampler = DistributedSampler(dataset)
loader = DataLoader(dataset, batch_size=4, sampler=sampler, num_workers=4)  # the loader
model = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(4, 1))
for epoch in range(2):
    sampler.set_epoch(epoch)
    for x in loader:
        model(x).sum().backward()
"""


def test_a_dataset_class_picked_by_a_test_is_either_class(tmp_path):
    code = PICKED_CLASS.replace("{start}", "random.randint(0, 9)")
    assert at(lint_plain(tmp_path, code), "DDP808") == [(line_of(code, "# the loader"), "warning")]


def test_its_twin_neither_class_draws(tmp_path):
    assert at(lint_plain(tmp_path, PICKED_CLASS.replace("{start}", "i % 9")), "DDP808") == []


SACRED = """
import random
import torch, torch.distributed as dist
import pytorch_lightning as pl
from sacred import Experiment
from torch.utils.data import DataLoader, Dataset, DistributedSampler

ex = Experiment("meter")

class Pairs(Dataset):
    def __len__(self):
        return 64
    def __getitem__(self, i):
        return torch.zeros(4) + random.randint(0, 9)

@ex.{decorator}
def run(_config):
    pl.seed_everything(_config["seed"])
    dist.init_process_group("gloo")
    dataset = Pairs()
    sampler = DistributedSampler(dataset)
    loader = DataLoader(dataset, batch_size=4, sampler=sampler, num_workers=8)  # the loader
    model = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(4, 1))
    for epoch in range(2):
        sampler.set_epoch(epoch)
        for x in loader:
            model(x).sum().backward()
"""


def test_sacreds_automain_runs_its_function_and_its_seeding(tmp_path):
    code = SACRED.replace("{decorator}", "automain")
    assert at(lint_plain(tmp_path, code), "DDP808") == [(line_of(code, "# the loader"), "warning")]


def test_its_twin_a_plain_main_decorator_runs_nothing_by_itself(tmp_path):
    """`@ex.main` waits for `ex.run_commandline()`, which this file never calls (and `run` is
    no console script's `main`)."""
    assert at(lint_plain(tmp_path, SACRED.replace("{decorator}", "main")), "DDP808") == []


# -------------------------------------------------- a loop's name and a parameter's are the function's own
LOOP_NAME = """
import torch, torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

def evaluate(nets):
    for model in nets:
        with torch.no_grad():
            model(torch.randn(2, 4))  # the forward

dist.init_process_group("gloo")
model = DDP(torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.BatchNorm1d(4)))
for step in range(3):
    model(torch.randn(2, 4)).sum().backward()
    if dist.get_rank() == 0:
        evaluate({handed})
"""


def test_a_loops_name_is_not_the_modules_global_of_that_name(tmp_path):
    """`model` in evaluate's loop is each plain module handed in, not the DDP model the module
    binds to the same name: no DDP forward on rank 0."""
    assert at(lint_plain(tmp_path, LOOP_NAME.replace("{handed}", "[model.module]")), "DDP801") == []


def test_its_twin_the_global_itself_read_on_rank_0(tmp_path):
    code = LOOP_NAME.replace("    for model in nets:\n        with torch.no_grad():\n            model(",
                             "    with torch.no_grad():\n        model(").replace("{handed}", "[]")
    assert at(lint_plain(tmp_path, code), "DDP801") == [(line_of(code, "# the forward"), "warning")]


PARAM_FUNCTION = """
import torch, torch.distributed as dist

def evaluate(model):
    dist.barrier()  # the barrier
    return 0.0

def quiet(model):
    return 1.0

def run(evaluate, model):
    for epoch in range(2):
        if dist.get_rank() == 0:
            evaluate(model)

dist.init_process_group("gloo")
run({handed}, torch.nn.Linear(2, 2))
"""


def test_a_parameter_named_like_a_module_function_calls_what_the_caller_hands(tmp_path):
    """run's `evaluate` is the `quiet` the caller hands, not the module's `evaluate`."""
    assert at(lint_plain(tmp_path, PARAM_FUNCTION.replace("{handed}", "quiet")), "DDP801") == []


def test_its_twin_the_caller_hands_the_barrier_one(tmp_path):
    code = PARAM_FUNCTION.replace("{handed}", "evaluate")
    assert [line for line, _ in at(lint_plain(tmp_path, code), "DDP801")] != []


# -------------------------------------------------- holdout 32's shapes (read after it was scored twice)
GENERATOR_TWICE = """
import random
import numpy as np
import torch, torch.distributed as dist
from torch.utils.data import DataLoader, Dataset, DistributedSampler

class Patches(Dataset):
    def __len__(self):
        return 64
    def __getitem__(self, i):
        return torch.zeros(4) + random.random()

def seed_worker(worker_id):
    worker_seed = torch.initial_seed() % 2**32
    np.random.seed(worker_seed)
    random.seed(worker_seed)

def create_dataloaders(is_ddp, rank, seed=42):
    dataset = Patches()
    if not is_ddp:
        g = torch.Generator()
        g.manual_seed(seed)
        return DataLoader(dataset, batch_size=4, shuffle=True, num_workers=2, worker_init_fn=seed_worker, generator=g)
    sampler = DistributedSampler(dataset)
    g = torch.Generator()
    g.manual_seed({ddp_seed})  # the seeding
    return DataLoader(dataset, batch_size=4, sampler=sampler, num_workers=2, worker_init_fn=seed_worker, generator=g)

dist.init_process_group("gloo")
loader = create_dataloaders(dist.get_world_size() > 1, dist.get_rank())
model = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(4, 1))
for epoch in range(2):
    loader.sampler.set_epoch(epoch)
    for x in loader:
        model(x).sum().backward()
"""


def test_the_last_seeding_of_a_generator_above_its_loader_is_the_one_it_reads(tmp_path):
    """`g.manual_seed(seed)` seeds the one-process loader's generator; the DDP loader's is
    `g.manual_seed(42)` right above it: the same on every rank."""
    code = GENERATOR_TWICE.replace("{ddp_seed}", "42")
    assert at(lint_plain(tmp_path, code), "DDP808") == [(line_of(code, "# the seeding"), "warning")]


def test_a_loader_on_the_side_of_a_switch_no_call_takes_is_not_judged(tmp_path):
    """`create_dataloaders(True, ...)`: the `if not is_ddp:` loader (its generator seeded from the
    default 42, alike) is built on no way in; the DDP one is."""
    code = GENERATOR_TWICE.replace("{ddp_seed}", "42").replace(
        "create_dataloaders(dist.get_world_size() > 1, dist.get_rank())", "create_dataloaders(True, dist.get_rank())")
    assert at(lint_plain(tmp_path, code), "DDP808") == [(line_of(code, "# the seeding"), "warning")]


def test_its_twin_the_ddp_generator_seeded_with_the_rank(tmp_path):
    assert at(lint_plain(tmp_path, GENERATOR_TWICE.replace("{ddp_seed}", "42 + rank")), "DDP808") == []


DROPPED_WRAPPER = """
import torch, torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel

class Manager:
    def init_training(self, models, optimizers):
        models = models.to("cpu")
        models = DistributedDataParallel(models)
        return models

class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(4, 1)

    def train_one_step(self, x):
        return self.fc(x).sum()

dist.init_process_group("gloo")
model = Net()
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
manager = Manager()
{kept}manager.init_training(model, optimizer)
for step in range(8):
    loss = model.train_one_step(torch.randn(2, 4))
    loss.backward()  # the backward
    if step % 4 == 3:
        optimizer.step()
        optimizer.zero_grad()
"""


def test_a_wrapper_every_caller_drops_wraps_nothing_the_loop_runs(tmp_path):
    """`models = models.to(device)` above the wrap is the plain module, not a use of the wrapper:
    the caller drops what init_training returns, and the loop trains the plain model."""
    assert at(lint_plain(tmp_path, DROPPED_WRAPPER.replace("{kept}", "")), "DDP805") == []


def test_its_twin_the_caller_keeps_the_wrapper(tmp_path):
    """(`model.train_one_step` through the wrapper: here the backward is taken to pass DDP's hooks)"""
    code = DROPPED_WRAPPER.replace("{kept}", "model = ")
    assert at(lint_plain(tmp_path, code), "DDP805") == [(line_of(code, "# the backward"), "warning")]


COUNTED_EXIT = """
import torch, torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

class Trainer:
    def __init__(self, max_steps):
        self.iters, self.best, self.stale, self.max_steps = 0, 1e9, 0, max_steps
        self.model = DDP(torch.nn.Linear(4, 1))

    def _process_batch(self, x):
        loss = self.model(x).sum()
        loss.backward()
        if loss.item() < self.best:
            self.best = loss.item()
        else:
            self.stale += 1
        self.iters += 1

    def train(self):
        for epoch in range(100):
            for x in torch.randn(10, 2, 4):
                self._process_batch(x)
                if {test} and dist.get_rank() == 0:  # the exit
                    break

dist.init_process_group("gloo")
Trainer(50).train()
"""


def test_a_rank_0_exit_at_the_step_count_every_pass_steps_up_is_certain(tmp_path):
    code = COUNTED_EXIT.replace("{test}", "self.iters >= self.max_steps")
    assert at(lint_plain(tmp_path, code), "DDP809") == [(line_of(code, "# the exit"), "error")]


def test_its_twin_a_counter_stepped_only_when_the_loss_stalls_is_an_assumption(tmp_path):
    code = COUNTED_EXIT.replace("{test}", "self.stale >= self.max_steps")
    assert at(lint_plain(tmp_path, code), "DDP809") == [(line_of(code, "# the exit"), "warning")]


OTHER_LOADERS_SAMPLER = """
import torch, torch.distributed as dist
from torch.utils.data import DataLoader, TensorDataset, DistributedSampler

dist.init_process_group("gloo")
dataset = TensorDataset(torch.randn(64, 4))
sampler = DistributedSampler(dataset, shuffle=True)
data_loader = DataLoader(dataset, batch_size=4, sampler=sampler)
l_dataset = TensorDataset(torch.randn(32, 4))
l_sampler = DistributedSampler(l_dataset, shuffle=True)  # the labelled sampler
l_data_loader = DataLoader(l_dataset, batch_size=4, sampler=l_sampler)
model = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(4, 1))
for epoch in range(3):
    data_loader.sampler.set_epoch(epoch){also}
    for (x,) in data_loader:
        model(x).sum().backward()
    for (x,) in l_data_loader:
        model(x).sum().backward()
"""


def test_set_epoch_through_another_loaders_sampler_leaves_this_one_unset(tmp_path):
    code = OTHER_LOADERS_SAMPLER.replace("{also}", "")
    assert at(lint_plain(tmp_path, code), "DDP804") == [(line_of(code, "# the labelled sampler"), "warning")]


def test_its_twin_each_loaders_sampler_set(tmp_path):
    code = OTHER_LOADERS_SAMPLER.replace("{also}", "\n    l_data_loader.sampler.set_epoch(epoch)")
    assert at(lint_plain(tmp_path, code), "DDP804") == []


TRANSFORM_TABLE = """
import torch, torch.distributed as dist
from torch.utils.data import DataLoader, Dataset, DistributedSampler
import torchvision.transforms as T

def get_transforms(size):
    return {"train": T.Compose([{crop}, T.ToTensor()]), "val": T.Compose([T.CenterCrop(size), T.ToTensor()])}

class Folder(Dataset):
    def __init__(self, root, transform):
        self.transform = transform
    def __len__(self):
        return 64
    def __getitem__(self, i):
        return self.transform(torch.zeros(3, 8, 8))

dist.init_process_group("gloo")
torch.manual_seed(0)
transf = get_transforms(8)
train_set = Folder("train", transform=transf["train"])
sampler = DistributedSampler(train_set)
loader = DataLoader(train_set, batch_size=4, sampler=sampler, num_workers=4)  # the loader
model = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(3, 1))
for epoch in range(2):
    sampler.set_epoch(epoch)
    for x in loader:
        model(x.mean((2, 3))).sum().backward()
"""


def test_a_transform_picked_from_a_builders_table_draws_what_the_builder_makes(tmp_path):
    code = TRANSFORM_TABLE.replace("{crop}", "T.RandomResizedCrop(size)")
    assert at(lint_plain(tmp_path, code), "DDP808") == [(line_of(code, "# the loader"), "warning")]


def test_its_twin_a_builder_that_draws_nothing(tmp_path):
    assert at(lint_plain(tmp_path, TRANSFORM_TABLE.replace("{crop}", "T.Resize(size)")), "DDP808") == []


VARS_DICT = """
import argparse, torch, torch.distributed as dist, torch.multiprocessing as mp
from torch.nn.parallel import DistributedDataParallel as DDP

def main_worker(gpu, n, args):
    args.rank = args.rank * n + gpu
    args.first_gpu = bool((not args.multiprocessing_distributed) or (args.multiprocessing_distributed and args.rank == 0))
    args.save_every = 1
    dist.init_process_group("gloo", init_method="tcp://localhost:29500", world_size=n, rank=args.rank)
    args = vars(args)
    model = DDP(torch.nn.Linear(2, 2))
    for epoch in range(2):
        model(torch.randn(2, 2)).sum().backward()
        if args["{key}"]:
            torch.save(model.state_dict(), "ckpt.pt")  # the save

if __name__ == "__main__":
    p = argparse.ArgumentParser()
    p.add_argument("--rank", type=int, default=0)
    p.add_argument("--multiprocessing-distributed", action="store_true")
    mp.spawn(main_worker, nprocs=2, args=(2, p.parse_args()))
"""


def test_an_entry_of_vars_of_the_options_is_the_options_attribute(tmp_path):
    """`args = vars(args)` then `args["first_gpu"]`: the namespace's `first_gpu`, rank 0's test."""
    assert at(lint_plain(tmp_path, VARS_DICT.replace("{key}", "first_gpu")), "DDP806") == []


def test_its_twin_another_entry_is_no_rank_test(tmp_path):
    code = VARS_DICT.replace("{key}", "save_every")
    assert at(lint_plain(tmp_path, code), "DDP806") == [(line_of(code, "# the save"), "warning")]
