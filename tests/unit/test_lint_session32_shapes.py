"""Shapes from session 32 (holdouts 33 and 34, read). Each with its healthy (or buggy) twin,
written in our own words."""

from __future__ import annotations

from tests.unit.test_lint_round17_shapes import lint_plain
from tests.unit.test_lint_round50_shapes import at, line_of

# -------------------------------------------------- a class started by mp.spawn through a name
SPAWNED_CLASS = """
import torch, torch.distributed as dist, torch.multiprocessing as mp
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, DistributedSampler


class Jittered(torch.utils.data.Dataset):
    def __len__(self):
        return 64

    def __getitem__(self, i):
        return (torch.full((4,), float(i)) + torch.rand(4),)  # a random jitter


class Base:
    def __init__(self, gpu, world):
        dist.init_process_group("gloo", rank=gpu, world_size=world)
        {rank_seed}
        data = Jittered()
        self.sampler = DistributedSampler(data, shuffle=True)
        self.loader = DataLoader(data, batch_size=8, sampler=self.sampler, num_workers=2)  # the loader
        self.model = DDP(torch.nn.Linear(4, 1))
        self.opt = torch.optim.SGD(self.model.parameters(), lr=0.1)


class Plain(Base):
    def __init__(self, gpu, world):
        super().__init__(gpu, world)
        self.run()

    def run(self):
        for epoch in range(3):
            self.sampler.set_epoch(epoch)
            for (x,) in self.loader:
                self.opt.zero_grad()
                self.model(x).sum().backward()
                self.opt.step()


class Other(Plain):
    pass


def main(kind="plain"):
    {launcher_seed}
    trainer = Plain
    if kind == "other":
        trainer = Other
    mp.spawn(trainer, nprocs=2, args=(2,))


if __name__ == "__main__":
    main()
"""


def test_a_seed_in_the_launcher_of_a_spawned_class_seeds_no_rank(tmp_path):
    """`trainer = Net` (or GAN, or KD...), then `mp.spawn(trainer, ...)`: the class's constructor
    is the rank. The launcher's torch.manual_seed before the spawn never reaches the spawned
    processes (each starts its own generator), so their workers' seeds differ."""
    code = SPAWNED_CLASS.replace("{rank_seed}", "pass").replace("{launcher_seed}", "torch.manual_seed(0)")
    assert at(lint_plain(tmp_path, code), "DDP808") == []


def test_its_twin_the_same_seed_in_the_spawned_constructor_is_every_ranks(tmp_path):
    code = SPAWNED_CLASS.replace("{rank_seed}", "torch.manual_seed(0)").replace("{launcher_seed}", "pass")
    assert at(lint_plain(tmp_path, code), "DDP808") == [(line_of(code, "# the loader"), "warning")]


# -------------------------------------------------- the first node's local rank 0 is rank 0
FIRST_NODE = """
import os, torch, torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP


def get_node_rank():
    rank = os.getenv("NODE_RANK") or os.getenv("GROUP_RANK")
    return int(rank) if rank else rank


def get_local_rank():
    return int(os.environ.get("LOCAL_RANK", 0))


def is_writer():
    return {test}


dist.init_process_group("gloo")
model = DDP(torch.nn.Linear(4, 1))
if is_writer():
    torch.save(model.module.state_dict(), "model.pt")  # the save
"""


def test_local_rank_0_of_the_first_node_is_the_jobs_rank_0(tmp_path):
    """`node_rank in [None, 0] and local_rank == 0`: one process in the job saves, not one per
    node (a helper named `is_global_zero` in the code it came from)."""
    code = FIRST_NODE.replace("{test}", "get_node_rank() in [None, 0] and get_local_rank() == 0")
    assert at(lint_plain(tmp_path, code), "DDP806") == []


def test_its_twin_local_rank_0_alone_is_one_writer_per_node(tmp_path):
    code = FIRST_NODE.replace("{test}", "get_local_rank() == 0")
    assert at(lint_plain(tmp_path, code), "DDP806") == [(line_of(code, "# the save"), "warning")]


def test_a_node_rank_named_as_such_counts_too(tmp_path):
    code = FIRST_NODE.replace("{test}", "int(os.environ['LOCAL_RANK']) == 0 and not node_rank").replace(
        "def is_writer():", "node_rank = int(os.environ.get('NODE_RANK', 0))\n\n\ndef is_writer():")
    assert at(lint_plain(tmp_path, code), "DDP806") == []


# -------------------------------------------------- a rank's own number only on the one-process side
EARLY_STOP = """
import torch, torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

dist.init_process_group("gloo")
world_size = dist.get_world_size()
model = DDP(torch.nn.Linear(4, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.1)
best, best_epoch, patience = 1e9, 0, 3
for epoch in range(100):
    for x in [torch.randn(2, 4)] * 4:
        opt.zero_grad()
        model(x).sum().backward()
        opt.step()
    valid = 0.0
    with torch.no_grad():
        for x in [torch.randn(2, 4)] * 2:
            loss = model(x).pow(2).mean()
            {sum}
    if valid < best:
        best, best_epoch = valid, epoch
    if epoch - best_epoch > patience:  # the decision
        break
"""


def test_a_sum_of_own_items_only_where_no_group_runs_is_shared(tmp_path):
    """`if world_size > 1: all_reduce(t); valid += t.item() / world_size` / `else: valid +=
    loss.item()`: the else is the one-process run; every rank of the job sums the shared value,
    so the early stop decides alike (OneScience's FourCastNet loop)."""
    code = EARLY_STOP.replace("{sum}", (
        "if world_size > 1:\n"
        "                t = loss.detach()\n"
        "                dist.all_reduce(t)\n"
        "                valid += t.item() / world_size\n"
        "            else:\n"
        "                valid += loss.item()"))
    assert at(lint_plain(tmp_path, code), "DDP809") == []


def test_its_twin_each_ranks_own_sum_decides_the_break(tmp_path):
    code = EARLY_STOP.replace("{sum}", "valid += loss.item()")
    assert at(lint_plain(tmp_path, code), "DDP809") == [(line_of(code, "# the decision"), "warning")]


# -------------------------------------------------- a batch_sampler that is a fixed list of batches
STATISTICS = """
import torch, torch.distributed as dist
from torch.utils.data import DataLoader, DistributedSampler


class Flipped(torch.utils.data.Dataset):
    def __len__(self):
        return 64

    def __getitem__(self, i):
        x = torch.full((4,), float(i))
        return x.flip(0) if torch.rand(()) < 0.5 else x  # a random flip


dist.init_process_group("gloo")
torch.manual_seed(0)
data = Flipped()
{batches}
loader = DataLoader(data, num_workers=2, {how})  # the loader
total = torch.zeros(4)
for x in loader:
    total += x.sum(0)
dist.all_reduce(total)
"""


def test_batches_cut_once_from_a_range_are_an_evaluations_order(tmp_path):
    """`torch.arange(n).tensor_split(k)[rank::world]` as batch_sampler: the same batches in the
    same order on every pass, read by no backward - statistics over the data (an FID pass), not
    a training loader whose augmentations must differ between ranks."""
    code = STATISTICS.replace("{batches}", "mine = torch.arange(len(data)).tensor_split(8)"
                              "[dist.get_rank()::dist.get_world_size()]").replace("{how}", "batch_sampler=mine")
    assert at(lint_plain(tmp_path, code), "DDP808") == []


def test_its_twin_a_shuffling_sampler_is_taken_for_training(tmp_path):
    code = STATISTICS.replace("{batches}", "mine = DistributedSampler(data)").replace(
        "{how}", "sampler=mine, batch_size=8")
    assert at(lint_plain(tmp_path, code), "DDP808") == [(line_of(code, "# the loader"), "warning")]


# -------------------------------------------------- a model out of a registry object
REGISTRY = """
import torch, torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP


class Registry:
    def __init__(self):
        self.data = {}

    def register_module(self, name=None):
        def _register(cls):
            self.data[name or cls.__name__] = cls
            return cls
        return _register

    def __getitem__(self, key):
        return self.data[key]


DETECTOR = Registry()


@DETECTOR.register_module(name="small")
class Small(torch.nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.body = torch.nn.Sequential(torch.nn.Linear(4, 4), {norm})

    def forward(self, x):
        return self.body(x)


def main(cfg):
    dist.init_process_group("gloo")
    model_class = DETECTOR[cfg["model_name"]]
    model = DDP(model_class(cfg))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for epoch in range(2):
        for x in [torch.randn(2, 4)] * 4:
            opt.zero_grad()
            model(x).sum().backward()
            opt.step()
        if dist.get_rank() == 0:
            with torch.no_grad():
                model(torch.randn(2, 4))  # rank 0's evaluation


main({"model_name": "small"})
"""


def test_a_class_a_registry_object_hands_out_is_the_models(tmp_path):
    """`DETECTOR = Registry()` filled by `@DETECTOR.register_module(...)`, then
    `DETECTOR[cfg["model_name"]](cfg)` wrapped in DDP: the registered classes are what it may
    build, so their BatchNorm makes rank 0's evaluation through the wrapper a buffer broadcast
    the other ranks do not make (DeepfakeBench's detectors)."""
    code = REGISTRY.replace("{norm}", "torch.nn.BatchNorm1d(4)")
    assert at(lint_plain(tmp_path, code), "DDP801") == [(line_of(code, "# rank 0's evaluation"), "warning")]


def test_its_twin_a_registered_class_without_buffers_broadcasts_nothing(tmp_path):
    code = REGISTRY.replace("{norm}", "torch.nn.ReLU()")
    assert at(lint_plain(tmp_path, code), "DDP801") == []


def test_a_sampler_picked_from_a_list_of_samplers_still_shuffles(tmp_path):
    """`[DistributedSampler(a), DistributedSampler(b)][i]` is one shuffling sampler, not a list of
    fixed index batches: the loader stays a training one."""
    code = STATISTICS.replace("{batches}", "mine = [DistributedSampler(data), DistributedSampler(data)]"
                              "[dist.get_rank() % 2]").replace("{how}", "sampler=mine, batch_size=8")
    assert at(lint_plain(tmp_path, code), "DDP808") == [(line_of(code, "# the loader"), "warning")]


def test_slurms_node_id_read_from_the_environment_is_a_node_index(tmp_path):
    code = FIRST_NODE.replace("{test}", "int(os.environ['SLURM_NODEID']) == 0 and get_local_rank() == 0")
    assert at(lint_plain(tmp_path, code), "DDP806") == []
