"""Shapes from session 20's blind round 28, each with its healthy twin, written in our own words."""

from __future__ import annotations

from tests.unit.test_lint_round17_shapes import lint_plain
from tests.unit.test_lint_round25_shapes import lines_of

# --------------------------------------------------- one option's values as a list membership
MEMBERSHIP = """
import argparse, torch, torch.distributed as dist
from torch.utils.data import DataLoader, DistributedSampler, TensorDataset

parser = argparse.ArgumentParser()
parser.add_argument("--mode", default="GPU")
args = parser.parse_args()
if args.mode == "DDP":
    dist.init_process_group("gloo")
data = TensorDataset(torch.randn(64, 4))
if args.mode in {modes}:
    loader = DataLoader(data, batch_size=8, shuffle=True)
else:
    loader = DataLoader(data, batch_size=8, sampler=DistributedSampler(data))
model = torch.nn.Linear(4, 1)
for (x,) in loader:
    model(x).sum().backward()
"""


def test_a_loader_under_the_modes_that_exclude_the_distributed_one_is_one_process(tmp_path):
    assert lines_of(lint_plain(tmp_path, MEMBERSHIP.replace("{modes}", '["CPU", "GPU"]')), "DDP802") == []


def test_its_twin_a_list_holding_the_distributed_mode(tmp_path):
    assert lines_of(lint_plain(tmp_path, MEMBERSHIP.replace("{modes}", '["GPU", "DDP"]')), "DDP802") == [11]


# -------------------------------------- the rank a set-up helper returns as an item of a tuple
TUPLE_RANK = """
import os, torch, torch.distributed as dist

def setup():
    dist.init_process_group("gloo")
    local_rank = {rank}
    return local_rank, torch.device("cpu")

local_rank, device = setup()
net = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(4, 4).to(device))
if local_rank == 0:
    torch.save(net.state_dict(), "ckpt.pth")
NNODES = int(os.environ.get("NNODES", 1))  # a job on several nodes
"""


def test_the_global_rank_a_helper_returns_in_a_tuple_is_one_writer(tmp_path):
    assert lines_of(lint_plain(tmp_path, TUPLE_RANK.replace("{rank}", "dist.get_rank()")), "DDP806") == []


def test_its_twin_the_local_rank_returned_is_one_writer_per_node(tmp_path):
    found = lint_plain(tmp_path, TUPLE_RANK.replace("{rank}", 'int(os.environ["LOCAL_RANK"])'))
    assert lines_of(found, "DDP806") == [11]


# ----------------------------------------------------- a sampler picked by a conditional expression
PICKED_SAMPLER = """
import torch, torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, DistributedSampler, RandomSampler, SequentialSampler, TensorDataset

def make(data, split):
    sampler = {sampler}
    return DataLoader(data, batch_size=8, sampler=sampler)

dist.init_process_group("gloo")
model = DDP(torch.nn.Linear(4, 1))
loader = make(TensorDataset(torch.randn(64, 4)), "train")
for epoch in range(2):
    for (x,) in loader:
        model(x).sum().backward()
"""


def test_a_plain_sampler_on_either_side_of_a_conditional_feeds_every_rank_everything(tmp_path):
    sampler = 'RandomSampler(data) if split == "train" else SequentialSampler(data)'
    assert lines_of(lint_plain(tmp_path, PICKED_SAMPLER.replace("{sampler}", sampler)), "DDP802") == [7]


def test_its_twin_a_distributed_sampler_on_the_training_side(tmp_path):
    sampler = 'DistributedSampler(data) if split == "train" else SequentialSampler(data)'
    assert lines_of(lint_plain(tmp_path, PICKED_SAMPLER.replace("{sampler}", sampler)), "DDP802") == []


# ----------------------------------- a step the flags dispatch to, on a way that sets up no group
DISPATCH = """
import argparse, torch, torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

def prepare():
    torch.save([torch.randn(4) for _ in range(8)], "features.pt")

def train():
    dist.init_process_group("gloo")
    model = DDP(torch.nn.Linear(4, 1))
    if dist.get_rank() == 0:
        torch.save(model.module.state_dict(), "model.pt")

parser = argparse.ArgumentParser()
parser.add_argument("--do_prepare", action="store_true")
parser.add_argument("--do_train", action="store_true")
args = parser.parse_args()
if args.do_prepare:
    prepare()
{second} args.do_train:
    train()
"""


def test_a_save_on_a_way_the_setup_never_takes_is_one_processs(tmp_path):
    assert lines_of(lint_plain(tmp_path, DISPATCH.replace("{second}", "elif")), "DDP806") == []


def test_its_twin_both_flags_may_run_the_save_before_the_setup(tmp_path):
    assert lines_of(lint_plain(tmp_path, DISPATCH.replace("{second}", "if")), "DDP806") == [5]


# ------------------------- a dataset reseeded by the main process between epochs, not by its workers
RESEEDED = """
import numpy as np, torch, torch.distributed as dist
from torch.utils.data import DataLoader, Dataset, DistributedSampler

class Noisy(Dataset):
    def __init__(self):
        self.items = list(range(100))

    def reorder(self, epoch):
        np.random.seed(epoch)

    def __len__(self):
        return len(self.items)

    def __getitem__(self, i):
        {reseed}
        return torch.tensor(self.items[i] + np.random.randint(0, 10))

torch.manual_seed(0)
dist.init_process_group("gloo")
data = Noisy()
loader = DataLoader(data, batch_size=4, sampler=DistributedSampler(data), num_workers=2)
net = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(1, 1))
for epoch in range(3):
    loader.sampler.set_epoch(epoch)
    loader.dataset.reorder(epoch)
    for x in loader:
        net(x.float()[:, None]).sum().backward()
"""


def test_a_seeding_only_the_main_process_runs_leaves_the_workers_draws_alike(tmp_path):
    assert lines_of(lint_plain(tmp_path, RESEEDED.replace("{reseed}", "pass")), "DDP808") == [21]


def test_its_twin_the_workers_reseed_as_they_read(tmp_path):
    found = lint_plain(tmp_path, RESEEDED.replace("{reseed}", "np.random.seed(i)"))
    assert lines_of(found, "DDP808") == []
