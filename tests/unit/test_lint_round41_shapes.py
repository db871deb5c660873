"""Shapes from session 23 (holdout 22 and blind round 41), each with its healthy twin, written in our own words."""

from __future__ import annotations

from tests.unit.test_lint_round17_shapes import lint_plain
from tests.unit.test_lint_round25_shapes import lines_of

# -------------------------------------------------- a support loader read with iter()/next() by a no-grad evaluation
SUPPORT = """
import torch, torch.distributed as dist
from torch.utils.data import DataLoader, DistributedSampler, TensorDataset
from torch.nn.parallel import DistributedDataParallel as DDP

dist.init_process_group("gloo")
train_ds = TensorDataset(torch.randn(64, 3))
support_ds = TensorDataset(torch.randn(32, 3))
main_sampler = DistributedSampler(train_ds)
support_sampler = DistributedSampler(support_ds)
train_loader = DataLoader(train_ds, sampler=main_sampler)
support_loader = DataLoader(support_ds, sampler=support_sampler)
net = DDP(torch.nn.Linear(3, 3))
opt = torch.optim.SGD(net.parameters(), lr=0.1)

{decorator}
def codes(model, loader):
    batches = iter(loader)
    out = []
    for _ in range(40):
        try:
            (x,) = next(batches)
        except StopIteration:
            batches = iter(loader)
            (x,) = next(batches)
        out.append(model.module(x).mean())
    {extra}
    return out

for epoch in range(5):
    main_sampler.set_epoch(epoch)
    for (x,) in train_loader:
        opt.zero_grad()
        net(x).sum().backward()
        opt.step()
    codes(net, support_loader)
"""


def test_a_loader_read_by_iter_in_a_no_grad_function_is_an_evaluation_loader(tmp_path):
    code = SUPPORT.replace("{decorator}", "@torch.no_grad()").replace("{extra}", "")
    assert lines_of(lint_plain(tmp_path, code), "DDP804") == []


def test_its_twin_the_same_reads_with_a_backward_train_and_need_set_epoch(tmp_path):
    code = SUPPORT.replace("{decorator}", "").replace("{extra}", "torch.stack(out).sum().backward()")
    assert lines_of(lint_plain(tmp_path, code), "DDP804") == [9]


# -------------------------------------------------- an engine object's switch and the rank it hands init_process_group
ENGINE = """
import os, torch, torch.distributed as dist

class Engine:
    def __init__(self):
        self.distributed = int(os.environ.get("WORLD_SIZE", "1")) > 1
        self.local_rank = int(os.environ.get("LOCAL_RANK", "0"))
        self.rank = int(os.environ.get("RANK", "0"))
        if self.distributed:
            dist.init_process_group("gloo", rank=self.{given}, world_size=int(os.environ["WORLD_SIZE"]))

    def save(self, model, path):
        torch.save(model.state_dict(), path)

engine = Engine()
model = torch.nn.Linear(3, 3)
for epoch in range(3):
    if engine.distributed and engine.local_rank == 0:
        engine.save(model, "last.pt")
    elif not engine.distributed:
        engine.save(model, "last.pt")
"""


def test_the_field_an_engine_hands_init_process_group_is_the_jobs_rank_and_its_else_is_one_process(tmp_path):
    assert lines_of(lint_plain(tmp_path, ENGINE.replace("{given}", "local_rank")), "DDP806") == []


def test_its_twin_a_local_rank_beside_another_global_rank_is_one_writer_per_node(tmp_path):
    assert lines_of(lint_plain(tmp_path, ENGINE.replace("{given}", "rank")), "DDP806") == [12]


def test_its_twin_both_sides_of_the_rank_test_on_a_distributed_run_are_every_rank(tmp_path):
    code = ENGINE.replace("{given}", "local_rank").replace("    elif not engine.distributed:", "    else:")
    assert lines_of(lint_plain(tmp_path, code), "DDP806") == [12]


# -------------------------------------------------- save_state on the main process or wherever DeepSpeed runs
SAVE_STATE = """
import argparse, torch
from accelerate import Accelerator
from accelerate.utils import DeepSpeedPlugin

parser = argparse.ArgumentParser()
parser.add_argument("--big", action="store_true")
parser.add_argument("--zero", type=int, default=0)
args = parser.parse_args()
accelerator = Accelerator(deepspeed_plugin=DeepSpeedPlugin(zero_stage=args.zero) if args.zero else None)
model = torch.nn.Linear(3, 3)
opt = torch.optim.AdamW(model.parameters())
model, opt = accelerator.prepare(model, opt)
every_process = False
if {condition}:
    every_process = True
for step in range(100):
    loss = model(torch.randn(2, 3)).sum()
    accelerator.backward(loss)
    opt.step()
    opt.zero_grad()
    if step % 10 == 0:
        if accelerator.is_main_process or every_process:
            accelerator.save_state("ckpt")
"""


def test_save_state_on_the_main_process_or_where_the_flag_deepspeed_sets_is_every_process(tmp_path):
    code = SAVE_STATE.replace("{condition}", "getattr(accelerator.state, 'deepspeed_plugin', None) is not None")
    assert lines_of(lint_plain(tmp_path, code), "DDP801") == []


def test_its_twin_a_flag_set_by_another_option_leaves_deepspeed_on_the_main_process(tmp_path):
    code = SAVE_STATE.replace("{condition}", "args.big")
    assert lines_of(lint_plain(tmp_path, code), "DDP801") == [23]


# -------------------------------------------------- the rank added to an option's seed in place
AUG_SEED = """
import argparse, random, torch, torch.distributed as dist
from torch.utils.data import DataLoader, Dataset, DistributedSampler

class Flips(Dataset):
    def __len__(self):
        return 64
    def __getitem__(self, i):
        x = torch.randn(4)
        return x.flip(0) if random.random() < 0.5 else x

def seed_all(seed):
    random.seed(seed)
    torch.manual_seed(seed)

parser = argparse.ArgumentParser()
parser.add_argument("--seed", type=int, default=3)
opts = parser.parse_args()
dist.init_process_group("gloo")
opts.seed += {added}
seed_all(opts.seed)
ds = Flips()
sampler = DistributedSampler(ds)
loader = DataLoader(ds, batch_size=8, num_workers=2, sampler=sampler)
for epoch in range(2):
    sampler.set_epoch(epoch)
    for x in loader:
        pass
"""


def test_the_rank_added_to_an_options_seed_in_place_seeds_each_rank_apart(tmp_path):
    assert lines_of(lint_plain(tmp_path, AUG_SEED.replace("{added}", "dist.get_rank()")), "DDP808") == []


def test_its_twin_a_constant_added_in_place_leaves_the_seed_alike(tmp_path):
    assert lines_of(lint_plain(tmp_path, AUG_SEED.replace("{added}", "1")), "DDP808") == [23]


# -------------------------------------------------- shard keywords a local dataset never reads
SHARD_KW = """
import torch, torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, Dataset

class Strokes(Dataset):
    def __init__(self, n, shard=0, num_shards=1):
        items = torch.randn(n, 8)
        self.items = {kept}

    def __len__(self):
        return len(self.items)

    def __getitem__(self, i):
        return self.items[i]

def batches():
    ds = Strokes(1000, shard=dist.get_rank(), num_shards=dist.get_world_size())
    loader = DataLoader(ds, batch_size=16, shuffle=True)
    while True:
        yield from loader

dist.init_process_group("gloo")
model = DDP(torch.nn.Linear(8, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.1)
data = batches()
for _ in range(100):
    model(next(data)).pow(2).mean().backward()
    opt.step()
    opt.zero_grad()
"""


def test_shard_keywords_a_local_dataset_never_reads_shard_nothing(tmp_path):
    assert lines_of(lint_plain(tmp_path, SHARD_KW.replace("{kept}", "items")), "DDP802") == [18]


def test_its_twin_a_dataset_that_keeps_its_shard_needs_no_sampler(tmp_path):
    assert lines_of(lint_plain(tmp_path, SHARD_KW.replace("{kept}", "items[shard::num_shards]")), "DDP802") == []
