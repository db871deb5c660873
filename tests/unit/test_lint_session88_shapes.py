"""Shapes from session 88 (holdout 124's leftovers and holdout 125's reading), each with its
twin, in our own words."""

from __future__ import annotations

from tests.unit.test_lint_session39_shapes import lint_tree
from tests.unit.test_lint_session61_shapes import _codes, _line

# ---------------------------------- a patience counter stepped under a test on rank 0's best loss
# Rank 0 alone lowers the best validation loss (beside its save); every rank compares the reduced
# loss with its own copy and steps a patience counter, leaving the epoch loop at the limit. The
# other ranks' best stays at infinity, their counter is reset each epoch: rank 0 leaves alone.
PATIENCE = """import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel


class Runner:
    def __init__(self, model, rank):
        self.chief = rank == 0
        self.model = DistributedDataParallel(model)
        self.best = float("inf")
        self.stale = 0

    def mean(self, value):
        t = torch.tensor(value)
        dist.all_reduce(t)
        return t.item() / dist.get_world_size()

    def fit(self, batches, epochs):
        for epoch in range(epochs):
            for x in batches:
                self.model(x).sum().backward()
            loss = self.mean(1.0)
            if loss >= self.best:
                self.stale += 1
                if self.stale >= 5:
                    break
            else:
                self.stale = 0
            if self.chief:
                if loss < self.best:
                    self.best = loss
                    torch.save(self.model.state_dict(), "best.pt")


dist.init_process_group("gloo")
Runner(torch.nn.Linear(2, 1), dist.get_rank()).fit([torch.ones(2)], 50)
"""


def test_a_counter_stepped_under_a_test_on_rank_zeros_best_is_a_divergence(tmp_path):
    found = _codes(lint_tree(tmp_path, {"train.py": PATIENCE}), "DDP809")
    assert [(f.location.line, f.severity) for f in found] == [(_line(PATIENCE, "if loss >= self.best:"), "error")]


def test_a_best_every_rank_lowers_is_no_divergence(tmp_path):
    # twin: every rank lowers its best (from the reduced loss), rank 0 alone saves
    body = PATIENCE.replace("""            if self.chief:
                if loss < self.best:
                    self.best = loss
                    torch.save""", """            if loss < self.best:
                self.best = loss
                if self.chief:
                    torch.save""")
    assert body != PATIENCE
    assert not _codes(lint_tree(tmp_path, {"train.py": body}), "DDP809")


PATIENCE_LOCALS = """import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel

dist.init_process_group("gloo")
rank = dist.get_rank()
model = DistributedDataParallel(torch.nn.Linear(2, 1))
best = float("inf")
stale = 0
for epoch in range(50):
    for x in [torch.ones(2)]:
        model(x).sum().backward()
    t = torch.tensor(1.0)
    dist.all_reduce(t)
    loss = t.item()
    if loss >= best:
        stale += 1
        if stale >= 5:
            break
    else:
        stale = 0
    if rank == 0 and loss < best:
        best = loss
        torch.save(model.state_dict(), "best.pt")
"""


def test_the_same_with_plain_names(tmp_path):
    found = _codes(lint_tree(tmp_path, {"train.py": PATIENCE_LOCALS}), "DDP809")
    assert [f.location.line for f in found] == [_line(PATIENCE_LOCALS, "if loss >= best:")]
    # twin: the inner leave sits in a loop of its own (it leaves that loop, not the epochs)
    body = PATIENCE_LOCALS.replace("""        if stale >= 5:
            break""", """        for _ in range(stale):
            if stale >= 5:
                break""")
    assert body != PATIENCE_LOCALS
    assert not _codes(lint_tree(tmp_path, {"train.py": body}), "DDP809")


# ---------------------------- a rank-0-first cache helper called again by rank 0 alone, after the pair
# The cache helper holds the usual pair (the others wait, rank 0 builds, then rank 0 releases
# them). main() also holds such a pair of its own. After training, rank 0 alone runs the test
# through the helper, whose closing barrier it then reaches by itself.
ZERO_FIRST = """import argparse
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel


def load_examples(args, evaluate=False):
    if args.local_rank not in [-1, 0] and not evaluate:
        dist.barrier()
    items = [torch.ones(2)]
    if args.local_rank in [-1, 0]:
        torch.save(items, "cache.pt")
    if args.local_rank == 0 and not evaluate:
        dist.barrier()
    return items


def run_test(args, model):
    return [model(x) for x in load_examples(args, evaluate=False)]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--local_rank", type=int, default=-1)
    parser.add_argument("--do_eval", action="store_true")
    args = parser.parse_args()
    dist.init_process_group("gloo")
    if args.local_rank not in [-1, 0]:
        dist.barrier()
    net = torch.nn.Linear(2, 2)
    if args.local_rank == 0:
        dist.barrier()
    model = DistributedDataParallel(net)
    for x in load_examples(args):
        model(x).sum().backward()
    if args.do_eval and args.local_rank in [-1, 0]:
        run_test(args, net)


if __name__ == "__main__":
    main()
"""
LAUNCH = "python -m torch.distributed.launch --nproc_per_node 2 train.py --do_eval\n"


def test_a_rank_zero_call_past_a_closed_pair_reaches_the_closing_barrier_alone(tmp_path):
    found = _codes(lint_tree(tmp_path, {"train.py": ZERO_FIRST, "run.sh": LAUNCH}), "DDP801")
    assert [(f.location.line, f.severity) for f in found] == [(_line(ZERO_FIRST, "run_test(args, net)"), "error")]


def test_the_pairs_alone_are_no_finding(tmp_path):
    # twin: the evaluation loads with evaluate=True (the helper's pair is closed off): main's own
    # pair still pairs, and nothing is left over
    body = ZERO_FIRST.replace("load_examples(args, evaluate=False)]", "load_examples(args, evaluate=True)]")
    assert body != ZERO_FIRST
    assert not _codes(lint_tree(tmp_path, {"train.py": body, "run.sh": LAUNCH}), "DDP801")


def test_a_switch_no_launch_gives_is_no_finding(tmp_path):
    # twin: no launch gives --do_eval (a store_true, off by default): that run never gets there
    assert not _codes(lint_tree(tmp_path, {"train.py": ZERO_FIRST}), "DDP801")


# ---------------------------------------- a logger's `sync=True` barrier asked for by rank 0 alone
# The run's logger waits in a barrier when a call passes sync=True (a timing mark all ranks
# share). Rank 0 logs the end of its checkpoint with sync=True inside its save branch; the save
# runs only when --save_every is raised above its default 0.
SYNCED_LOG = """import argparse
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel


class RunLog:
    def mark(self, key, **kwargs):
        self._emit(key, **kwargs)

    def _emit(self, key, **kwargs):
        if kwargs.pop("sync", False):
            dist.barrier()
        if dist.get_rank() == 0:
            print(key)


parser = argparse.ArgumentParser()
parser.add_argument("--save_every", type=int, default=0)
parser.add_argument("--epochs", type=int, default=3)
args = parser.parse_args()
dist.init_process_group("gloo")
rank = dist.get_rank()
log = RunLog()
model = DistributedDataParallel(torch.nn.Linear(2, 1))
for epoch in range(args.epochs):
    model(torch.ones(2)).sum().backward()
    log.mark("epoch_end", sync=True)
    if args.save_every > 0 and epoch % args.save_every == 0:
        if rank == 0:
            torch.save(model.state_dict(), "ckpt.pt")
            log.mark("save_end", sync=True)
"""


def test_a_count_off_by_default_names_the_run_that_hangs(tmp_path):
    found = _codes(lint_tree(tmp_path, {"train.py": SYNCED_LOG}), "DDP801")
    assert [(f.location.line, f.severity) for f in found] == [(_line(SYNCED_LOG, 'log.mark("save_end"'), "warning")]
    assert "`args.save_every > 0` holds" in found[0].message


def test_the_count_a_launch_raises_is_no_assumption(tmp_path):
    launch = "torchrun --nproc_per_node 2 train.py --save_every 2\n"
    found = _codes(lint_tree(tmp_path, {"train.py": SYNCED_LOG, "run.sh": launch}), "DDP801")
    assert [(f.location.line, f.severity) for f in found] == [(_line(SYNCED_LOG, 'log.mark("save_end"'), "error")]
    # twin: the mark on rank 0's side does not ask for the barrier
    body = SYNCED_LOG.replace('log.mark("save_end", sync=True)', 'log.mark("save_end")')
    assert body != SYNCED_LOG
    assert not _codes(lint_tree(tmp_path, {"train.py": body, "run.sh": launch}), "DDP801")


# ------------------------------------------- loaders kept in a table by kind, with their samplers
# One loader per kind of agent, each stored with its sampler (`loaders[kind] = (loader, sampler)`)
# and read by a loop over the table's items that sets each sampler's epoch. The evaluation
# loaders sit in a table of their own, read under no_grad by a loop binding the same name.
TABLES = """import torch
import torch.distributed as dist
from torch.utils.data import DataLoader, DistributedSampler
from torch.nn.parallel import DistributedDataParallel


def main():
    dist.init_process_group("gloo")
    model = DistributedDataParallel(torch.nn.Linear(2, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    kinds = {"car": [torch.ones(2)] * 8, "walker": [torch.zeros(2)] * 8}
    train_loaders = dict()
    for kind, items in kinds.items():
        train_sampler = DistributedSampler(items)
        loader = DataLoader(items, batch_size=2, sampler=train_sampler)
        train_loaders[kind] = (loader, train_sampler)
    eval_loaders = dict()
    for kind, items in kinds.items():
        eval_sampler = DistributedSampler(items)
        loader = DataLoader(items, batch_size=2, sampler=eval_sampler)
        eval_loaders[kind] = loader
    for epoch in range(5):
        for kind, (data_loader, data_sampler) in train_loaders.items():
            data_sampler.set_epoch(epoch)
            for x in data_loader:
                opt.zero_grad()
                model(x).sum().backward()
                opt.step()
        with torch.no_grad():
            for kind, data_loader in eval_loaders.items():
                for x in data_loader:
                    model.module(x)


main()
"""


def test_samplers_kept_beside_their_loaders_in_a_table_are_set(tmp_path):
    assert not _codes(lint_tree(tmp_path, {"train.py": TABLES}), "DDP804")


def test_the_table_read_without_set_epoch_is_told_and_the_evaluation_table_is_not(tmp_path):
    # twin: the training loop no longer sets the epoch: the training sampler alone is told
    body = TABLES.replace("            data_sampler.set_epoch(epoch)\n", "")
    assert body != TABLES
    found = _codes(lint_tree(tmp_path, {"train.py": body}), "DDP804")
    assert [f.location.line for f in found] == [_line(TABLES, "train_sampler = DistributedSampler")]
    # and the evaluation table read by a loop that trains is a training loader too
    trained = body.replace("                    model.module(x)", "                    model(x).sum().backward()")
    assert trained != body
    found = _codes(lint_tree(tmp_path, {"train.py": trained}), "DDP804")
    assert sorted(f.location.line for f in found) == sorted(
        [_line(TABLES, "train_sampler = DistributedSampler"), _line(TABLES, "eval_sampler = DistributedSampler")])


# ------------------------------ a dataset that indexes its rows once, handing its augment flag on
# The constructor builds every row (in the launching process) through a helper handed the
# class's `augment` flag by name, keeping the rows and their index by one tuple assignment;
# __getitem__ only hands back a kept row. The workers draw nothing, however alike they are seeded.
INDEXED = """import random
from functools import partial
import torch
import torch.distributed as dist
from torch.utils.data import DataLoader, Dataset, DistributedSampler
from torch.nn.parallel import DistributedDataParallel


def make_row(i, augment=False):
    row = torch.full((2,), float(i))
    if augment:
        row = row + random.random()
    return row


class Rows(Dataset):
    def __init__(self, n, augment=False):
        self.augment = augment
        self.index, self.rows = self.build(n)

    def build(self, n):
        rows = list(map(partial(make_row, augment=self.augment), range(n)))
        return list(range(n)), rows

    def __len__(self):
        return len(self.index)

    def __getitem__(self, i):
        return self.rows[self.index[i]]


dist.init_process_group("gloo")
torch.manual_seed(0)
model = DistributedDataParallel(torch.nn.Linear(2, 1))
data = Rows(64, augment=True)
sampler = DistributedSampler(data)
loader = DataLoader(data, batch_size=4, sampler=sampler, num_workers=2)
for epoch in range(2):
    sampler.set_epoch(epoch)
    for x in loader:
        model(x).sum().backward()
"""


def test_rows_made_once_with_a_flag_handed_on_draw_nothing_in_the_workers(tmp_path):
    assert not _codes(lint_tree(tmp_path, {"train.py": INDEXED}), "DDP808")


def test_rows_that_draw_as_they_are_read_are_told(tmp_path):
    # twin: the item method draws a jitter of its own
    body = INDEXED.replace("return self.rows[self.index[i]]", "return self.rows[self.index[i]] + torch.rand(2)")
    assert body != INDEXED
    assert _codes(lint_tree(tmp_path, {"train.py": body}), "DDP808")


# ------------------------------------- a part built with the norm its owner picks by a constant
# The block builds a GroupNorm or a BatchNorm by its `norm` argument; the network's constructor
# picks GroupNorm through a local constant. Rank 0's no-grad forward of the DDP model broadcasts
# no buffers then: nothing to disagree on. With "BN" picked, it does.
PICKED_NORM = """import torch
import torch.nn as nn
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel


class Block(nn.Module):
    def __init__(self, n_in, n_out, norm="BN"):
        super().__init__()
        self.fc = nn.Linear(n_in, n_out)
        if norm == "GN":
            self.norm = nn.GroupNorm(1, n_out)
        elif norm == "BN":
            self.norm = nn.BatchNorm1d(n_out)

    def forward(self, x):
        return self.norm(self.fc(x))


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        norm = "GN"
        self.block = Block(2, 4, norm=norm)

    def forward(self, x):
        return self.block(x)


dist.init_process_group("gloo")
rank = dist.get_rank()
model = DistributedDataParallel(Net())
for epoch in range(2):
    model(torch.ones(4, 2)).sum().backward()
    if rank == 0:
        with torch.no_grad():
            model(torch.ones(4, 2))
"""


def test_a_part_built_on_the_groupnorm_side_holds_no_buffers(tmp_path):
    assert not _codes(lint_tree(tmp_path, {"train.py": PICKED_NORM}), "DDP801")


def test_a_part_built_on_the_batchnorm_side_does(tmp_path):
    body = PICKED_NORM.replace('norm = "GN"', 'norm = "BN"')
    assert body != PICKED_NORM
    found = _codes(lint_tree(tmp_path, {"train.py": body}), "DDP801")
    assert [f.location.line for f in found] == [len(PICKED_NORM.splitlines())]


# ------------------------------------------ a trainer that moves the wrapper it is handed with .to()
# The base trainer keeps `self.model = model.to(device)` of the DDP model its subclass is handed;
# rank 0 alone validates through it, with BatchNorm buffers to broadcast.
MOVED = """import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel


class BaseTrainer:
    def __init__(self, model, loader, rank=-1):
        self.device = torch.device("cpu")
        self.model = model.to(self.device)
        self.rank = rank
        self.loader = loader

    def train(self):
        for epoch in range(3):
            self._train_epoch(epoch)


class Trainer(BaseTrainer):
    def __init__(self, model, loader, rank=-1):
        super().__init__(model, loader, rank=rank)

    def _train_epoch(self, epoch):
        for x in self.loader:
            self.model(x).sum().backward()
        if self.rank <= 0:
            self._valid_epoch()

    def _valid_epoch(self):
        with torch.no_grad():
            for x in self.loader:
                self.model(x)


dist.init_process_group("gloo")
net = torch.nn.Sequential(torch.nn.Linear(2, 2), torch.nn.BatchNorm1d(2))
model = DistributedDataParallel(net)
Trainer(model, [torch.ones(4, 2)], rank=dist.get_rank()).train()
"""


def test_the_wrapper_moved_with_to_is_still_the_ddp_model(tmp_path):
    found = _codes(lint_tree(tmp_path, {"train.py": MOVED}), "DDP801")
    assert [f.location.line for f in found] == [_line(MOVED, "                self.model(x)")]
    # twin: the trainer is handed the plain module
    body = MOVED.replace("Trainer(model, [", "Trainer(net, [")
    assert body != MOVED
    assert not _codes(lint_tree(tmp_path, {"train.py": body}), "DDP801")


# ---------------------------- both sides of one rank test train, rank 0's side also evaluating
# `if rank == 0: (train with a progress bar; evaluate the plain module) else: (train)`: the
# training forwards pair across the two sides of the one test.
SIDES = """import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel


def step(model, x):
    model(x).sum().backward()


dist.init_process_group("gloo")
rank = dist.get_rank()
model = DistributedDataParallel(torch.nn.Sequential(torch.nn.Linear(2, 2), torch.nn.BatchNorm1d(2)))
data = [torch.ones(4, 2)] * 3
for epoch in range(2):
    if rank == 0:
        for x in data:
            step(model, x)
        with torch.no_grad():
            model.module(data[0])
    else:
        for x in data:
            step(model, x)
"""


def test_the_two_sides_of_one_rank_test_pair_their_training_steps(tmp_path):
    assert not _codes(lint_tree(tmp_path, {"train.py": SIDES}), "DDP801")
    # twin: the other side trains no more
    body = SIDES.replace("""    else:
        for x in data:
            step(model, x)
""", "")
    assert body != SIDES
    assert _codes(lint_tree(tmp_path, {"train.py": body}), "DDP801")


# ------------------------------------------ a module's rank global that is only ever set to 0
# A helper module keeps the process's rank in a global its set-up function fills - with the
# constant 0 (the rank left commented out). `if ptu.dist_rank == 0:` holds on every rank.
PTU = """import os
import torch.distributed as dist

dist_rank = 0
world_size = 1


def set_mode():
    global dist_rank, world_size
    dist_rank = VALUE
    world_size = 1
"""
PTU_TRAIN = """import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel
import ptu

dist.init_process_group("gloo")
ptu.set_mode()
model = DistributedDataParallel(torch.nn.Linear(2, 1))
for epoch in range(3):
    model(torch.ones(2)).sum().backward()
    if ptu.dist_rank == 0:
        torch.save(model.state_dict(), "ckpt.pt")
"""


def test_a_rank_global_set_only_to_zero_guards_nothing(tmp_path):
    found = _codes(lint_tree(tmp_path, {"train.py": PTU_TRAIN, "ptu.py": PTU.replace("VALUE", "0")},
                             script="train.py"), "DDP806")
    assert [f.location.line for f in found] == [_line(PTU_TRAIN, "torch.save")]


def test_a_rank_global_set_from_the_group_is_a_rank_test(tmp_path):
    files = {"train.py": PTU_TRAIN, "ptu.py": PTU.replace("VALUE", "dist.get_rank()")}
    assert not _codes(lint_tree(tmp_path, files, script="train.py"), "DDP806")


# ------------------------------------------ a README that launches the script on several nodes
# The per-node writer (`local_rank == 0`) saves one checkpoint path; the README's command block
# starts the script with torchrun over several nodes: each node's writer saves it at once.
PER_NODE = """import os
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel

dist.init_process_group("gloo")
local_rank = int(os.environ["LOCAL_RANK"])
model = DistributedDataParallel(torch.nn.Linear(2, 1))
for epoch in range(3):
    model(torch.ones(2)).sum().backward()
    if local_rank == 0:
        torch.save(model.state_dict(), "last.pth")
"""
README = """# Training

```shell
torchrun --nproc_per_node=8 --nnodes=NODES --node_rank=RANK --master_addr=HOST train.py --bs 32
```
"""


def test_a_readme_command_over_several_nodes_makes_the_per_node_writer_a_finding(tmp_path):
    found = _codes(lint_tree(tmp_path, {"train.py": PER_NODE, "README.md": README}), "DDP806")
    assert [f.location.line for f in found] == [_line(PER_NODE, "torch.save")]
    assert "README.md:4" in found[0].message


def test_a_readme_command_on_one_node_or_for_another_script_is_not(tmp_path):
    one = README.replace("--nnodes=NODES --node_rank=RANK", "--nnodes=1 --node_rank=0")
    assert not _codes(lint_tree(tmp_path, {"train.py": PER_NODE, "README.md": one}), "DDP806")
    other = README.replace("train.py --bs", "eval.py --bs")
    assert not _codes(lint_tree(tmp_path, {"train.py": PER_NODE, "README.md": other}), "DDP806")
