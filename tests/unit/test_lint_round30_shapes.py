"""Shapes from session 21 (the s20 holdout's false alarms and blind round 30), each with its
healthy twin, written in our own words."""

from __future__ import annotations

from tests.unit.test_lint_round17_shapes import lint_plain
from tests.unit.test_lint_round25_shapes import lines_of

# -------------------------------------------------- a flag set on rank 0, then broadcast to all
BROADCAST_FLAG = """
import os, torch, torch.distributed as dist

def load(path, rank, distributed):
    found = None
    if rank == 0:
        found = os.path.isfile(path)
    if distributed:
        {sync}
    if found is not None:
        t = torch.zeros(1)
        dist.broadcast(t, 0)

dist.init_process_group("gloo")
load("ckpt.pt", dist.get_rank(), dist.get_world_size() > 1)
"""


def test_a_flag_broadcast_from_rank_0_is_the_same_on_every_rank(tmp_path):
    code = BROADCAST_FLAG.replace("{sync}", "found = bcast_object(found)").replace(
        "def load", "def bcast_object(x):\n    box = [x]\n    dist.broadcast_object_list(box, 0)\n    return box[0]\n\ndef load")
    assert lines_of(lint_plain(tmp_path, code), "DDP801") == []


def test_its_twin_a_flag_left_as_rank_0_set_it_keeps_the_broadcast_on_rank_0(tmp_path):
    code = BROADCAST_FLAG.replace("{sync}", "pass")
    assert lines_of(lint_plain(tmp_path, code), "DDP801") == [11]


# -------------------------------------------------- a dataset sharded by rank, returned in a tuple
UNPACKED = """
import torch, torch.distributed as dist
from torch.utils.data import DataLoader, Dataset

class Lines(Dataset):
    def __init__(self, path, part=0, parts=1):
        self.items = [l for i, l in enumerate(open(path)) if i % parts == part]
    def __len__(self):
        return len(self.items)
    def __getitem__(self, i):
        return self.items[i]

def load(path):
    data = {made}
    count = torch.tensor(len(data))
    dist.all_reduce(count, dist.ReduceOp.MIN)
    return data, count

def one_epoch(model, data):
    loader = DataLoader(data, shuffle=True, batch_size=4)
    for x in loader:
        model(x).sum().backward()

if __name__ == "__main__":
    dist.init_process_group("gloo")
    model = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(4, 1))
    data, count = load("lines.txt")
    for epoch in range(3):
        one_epoch(model, data)
"""


def test_a_dataset_given_the_rank_and_returned_in_a_tuple_is_sharded(tmp_path):
    code = UNPACKED.replace("{made}", "Lines(path, dist.get_rank(), dist.get_world_size())")
    assert lines_of(lint_plain(tmp_path, code), "DDP802") == []


def test_its_twin_the_same_dataset_not_given_the_rank_is_read_whole_by_every_rank(tmp_path):
    assert lines_of(lint_plain(tmp_path, UNPACKED.replace("{made}", "Lines(path)")), "DDP802") == [19]


# -------------------------------------------------- a loader built by a helper, iterated at its call
ITERATED_AT_CALL = """
import torch, torch.distributed as dist
from torch.utils.data import DataLoader, DistributedSampler, TensorDataset

def make_loader(data):
    return DataLoader(data, batch_size=4{sampler})

dist.init_process_group("gloo")
model = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(4, 1))
data = TensorDataset(torch.randn(64, 4))
for (x,) in make_loader(data):
    model(x).sum().backward()
"""


def test_a_loader_iterated_where_its_builder_is_called_trains_without_a_sampler(tmp_path):
    assert lines_of(lint_plain(tmp_path, ITERATED_AT_CALL.replace("{sampler}", ", shuffle=True")), "DDP802") == [5]


def test_its_twin_the_builder_gives_it_a_distributed_sampler(tmp_path):
    code = ITERATED_AT_CALL.replace("{sampler}", ", sampler=DistributedSampler(data)")
    assert lines_of(lint_plain(tmp_path, code), "DDP802") == []


# -------------------------------------------------- the project's own Accelerator subclass
OWN_ACCELERATOR = """
import os, torch, torch.distributed as dist
from torch.utils.data import DataLoader, TensorDataset
from myacc import MyAccelerator

def ensure_group():
    if int(os.getenv("WORLD_SIZE", 1)) > 1 and not dist.is_initialized():
        dist.init_process_group("gloo")

acc = MyAccelerator()
model = acc.prepare(torch.nn.Linear(4, 1))
loader = DataLoader(TensorDataset(torch.randn(64, 4)), batch_size=8, shuffle=True)
loader = acc.prepare(loader)
ensure_group()
for (x,) in loader:
    acc.backward(model(x).sum())
"""
DERIVED = """
import accelerate

class MyAccelerator(accelerate.Accelerator):
    def __repr__(self):
        return "mine"
"""
PLAIN = """
class MyAccelerator:
    def prepare(self, thing):
        return thing
    def backward(self, loss):
        loss.backward()
"""


def test_a_local_subclass_of_accelerator_is_accelerate_and_prepares_the_loader(tmp_path):
    assert lines_of(lint_plain(tmp_path, OWN_ACCELERATOR, myacc=DERIVED), "DDP802") == []


def test_the_stock_class_imported_under_another_name_is_accelerate_too(tmp_path):
    code = OWN_ACCELERATOR.replace("from myacc import MyAccelerator", "from accelerate import Accelerator as MyAccelerator")
    assert lines_of(lint_plain(tmp_path, code), "DDP802") == []


def test_its_twin_a_local_class_of_the_same_name_prepares_nothing(tmp_path):
    assert lines_of(lint_plain(tmp_path, OWN_ACCELERATOR, myacc=PLAIN), "DDP802") == [11]
