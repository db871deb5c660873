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
