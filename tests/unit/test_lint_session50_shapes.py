"""Shapes from session 50 (holdout 60), each with its twin, in our own words: a training helper
entered for evaluation with no optimiser (`is_train = optimiser is not None`), an epoch counter
its author never advances, a dump in an `except` that exits, a cache rank 0 builds before a
barrier and every rank builds again, a PPO update's TensorDataset of this rank's rollouts, and a
loss the module computes round the DDP wrapper (`model.module.forward_train(batch)`), and
a step counter offset by the rank and taken off again (`iteration - rank`)."""

from __future__ import annotations

from tests.unit.test_lint_round50_shapes import at, line_of
from tests.unit.test_lint_session39_shapes import lint_tree


def lint_one(tmp_path, code: str, **more: str):
    return lint_tree(tmp_path, {"train.py": code, **more})


# -------------------------------------------------- a training helper entered for evaluation
RUN_EPOCH = """
import torch, torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP


def run_epoch(model, batches, optimiser=None):
    is_train = optimiser is not None
    for x in batches:
        loss = model(x).sum()
        if is_train:
            optimiser.zero_grad()
            loss.backward()  # the backward
            optimiser.step()


def main():
    dist.init_process_group("gloo")
    model = DDP(torch.nn.Linear(4, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    batches = [torch.randn(2, 4)]
    for epoch in range(3):
        run_epoch(model, batches, opt)
        if dist.get_rank() == 0:
            with torch.no_grad():
                run_epoch(model, batches, {given})  # the call


main()
"""


def test_a_helper_entered_with_no_optimiser_runs_no_backward_on_rank_0(tmp_path):
    assert at(lint_one(tmp_path, RUN_EPOCH.replace("{given}", "None")), "DDP801") == []


def test_its_twin_hands_rank_0_the_optimiser(tmp_path):
    code = RUN_EPOCH.replace("{given}", "opt")
    assert [line for line, _ in at(lint_one(tmp_path, code), "DDP801")] == [line_of(code, "# the call")]


# -------------------------------------------------- an epoch counter never advanced
PINNED = """
import torch, torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, DistributedSampler, TensorDataset

dist.init_process_group("gloo")
model = DDP(torch.nn.Linear(4, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.1)
data = TensorDataset(torch.randn(64, 4), torch.randn(64, 1))
loader = DataLoader(data, batch_size=8, sampler=DistributedSampler(data))
epoch_iter = 0
while True:
    loader.sampler.set_epoch(epoch_iter)  # the epoch
    for x, y in loader:
        opt.zero_grad()
        (model(x) - y).pow(2).mean().backward()
        opt.step()
    {moved}
"""


def test_an_epoch_counter_never_advanced_is_a_constant_epoch(tmp_path):
    code = PINNED.replace("{moved}", "print(epoch_iter)")
    assert at(lint_one(tmp_path, code), "DDP804") == [(line_of(code, "# the epoch"), "warning")]


def test_the_finding_names_the_counter_nothing_advances(tmp_path):
    # (the script passes a name, not a number: the message says which name, and the fix advances it)
    found = [f for f in lint_one(tmp_path, PINNED.replace("{moved}", "print(epoch_iter)")) if f.code == "DDP804"]
    assert len(found) == 1 and "`epoch_iter`, set once and never advanced" in found[0].message
    assert "advance `epoch_iter`" in found[0].hint


def test_its_twin_advances_the_counter(tmp_path):
    assert at(lint_one(tmp_path, PINNED.replace("{moved}", "epoch_iter += 1")), "DDP804") == []


# -------------------------------------------------- a dump in an except that exits
DUMP = """
import sys, time
import torch, torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP


def save(model, path):
    torch.save(model.module.state_dict(), path)  # the write


def main():
    dist.init_process_group("gloo")
    model = DDP(torch.nn.Linear(4, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for step in range(10):
        try:
            opt.zero_grad()
            model(torch.randn(2, 4)).sum().backward()
            opt.step()
        except RuntimeError:
            save(model, f"error_{time.time():.0f}.pt")
            {after}
        if dist.get_rank() == 0:
            save(model, "last.pt")


main()
"""


def test_a_dump_in_a_handler_that_exits_is_the_failing_ranks(tmp_path):
    assert at(lint_one(tmp_path, DUMP.replace("{after}", "sys.exit(1)")), "DDP806") == []


def test_its_twin_goes_on_training_after_the_dump(tmp_path):
    code = DUMP.replace("{after}", "continue")
    assert [line for line, _ in at(lint_one(tmp_path, code), "DDP806")] == [line_of(code, "# the write")]


# -------------------------------------------------- a cache rank 0 builds first, written out
FIRST = """
import os
import torch, torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, Dataset, DistributedSampler


class Shards(Dataset):
    def __init__(self, root, download=True):
        self.files = []
        for i in range(8):
            path = os.path.join(root, f"{i}.pt")
            if os.path.exists(path):
                self.files.append(path)
                continue
            torch.save(torch.randn(4), path)  # the write
            self.files.append(path)

    def __len__(self):
        return len(self.files)

    def __getitem__(self, i):
        return torch.load(self.files[i])


def main():
    dist.init_process_group("gloo")
    local_rank = int(os.environ["LOCAL_RANK"])
    if local_rank == 0:
        data = Shards("cache", download=True)
    {wait}
    data = Shards("cache", download=False)
    model = DDP(torch.nn.Linear(4, 1))
    sampler = DistributedSampler(data)
    for epoch in range(2):
        sampler.set_epoch(epoch)
        for x in DataLoader(data, batch_size=2, sampler=sampler):
            model(x).sum().backward()


main()
"""


def test_a_cache_rank_0_builds_before_a_barrier_is_written_once(tmp_path):
    assert at(lint_one(tmp_path, FIRST.replace("{wait}", "dist.barrier()")), "DDP806") == []


def test_its_twin_writes_again_what_rank_0_wrote(tmp_path):
    # no test of what is on disk: every rank's second build writes the files again (a checkpoint
    # saved on rank 0 and then by every rank after the barrier is two writes, not a cache)
    code = FIRST.replace("{wait}", "dist.barrier()").replace(
        "            if os.path.exists(path):\n                self.files.append(path)\n                continue\n", "")
    assert [line for line, _ in at(lint_one(tmp_path, code), "DDP806")] == [line_of(code, "# the write")]


def test_its_twin_has_no_barrier_between(tmp_path):
    code = FIRST.replace("{wait}", "print(local_rank)")
    assert [line for line, _ in at(lint_one(tmp_path, code), "DDP806")] == [line_of(code, "# the write")]


# -------------------------------------------------- a PPO update over this rank's rollouts
ROLLOUTS = """
import torch, torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, TensorDataset


def main():
    dist.init_process_group("gloo")
    policy = DDP(torch.nn.Linear(4, 2))
    opt = torch.optim.Adam(policy.parameters())
    {before}
    for episode in range(100):
        {states}
        returns = torch.randn(len(states))
        dataset = TensorDataset(torch.stack(states), returns)
        loader = DataLoader(dataset, batch_size=16, shuffle=True)  # the loader
        for s, r in loader:
            opt.zero_grad()
            (policy(s).sum(-1) - r).pow(2).mean().backward()
            opt.step()


main()
"""


def test_a_loader_over_the_rollouts_this_rank_just_made_is_its_own(tmp_path):
    code = ROLLOUTS.replace("{before}", "pass").replace("{states}", "states = [torch.randn(4) for _ in range(64)]")
    assert at(lint_one(tmp_path, code), "DDP802") == []


def test_its_twin_reads_the_same_file_on_every_rank(tmp_path):
    code = ROLLOUTS.replace("{before}", "stored = torch.load('states.pt')").replace("{states}", "states = list(stored)")
    assert at(lint_one(tmp_path, code), "DDP802") == [(line_of(code, "# the loader"), "error")]


# -------------------------------------------------- the module's own method, round the wrapper
ROUND = """
import torch, torch.distributed as dist
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP

Loss = F.mse_loss


class Policy(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.net = torch.nn.Linear(4, 2)

    def forward_train(self, batch):
        return self.net(batch["x"])


def train(model, batches, opt, rank):
    for batch in batches:
        {forward}
        target = batch["y"]
        if rank == 0 and target.shape[1] == 0:  # the skip
            continue
        loss = Loss(output, target)
        opt.zero_grad()
        loss.backward()
        opt.step()


def main():
    dist.init_process_group("gloo")
    model = DDP(Policy())
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    train(model, [{"x": torch.randn(2, 4), "y": torch.randn(2, 2)}], opt, dist.get_rank())


main()
"""


def test_a_loss_the_module_computes_round_the_wrapper_all_reduces_nothing(tmp_path):
    forward = ("if isinstance(model, DDP):\n            output = model.module.forward_train(batch)\n"
               "        else:\n            output = model.forward_train(batch)")
    assert at(lint_one(tmp_path, ROUND.replace("{forward}", forward)), "DDP809") == []


def test_its_twin_calls_the_wrapper(tmp_path):
    code = ROUND.replace("{forward}", "output = model(batch['x'])")
    assert [line for line, _ in at(lint_one(tmp_path, code), "DDP809")] == [line_of(code, "# the skip")]


ACCUMULATE = """
import torch, torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, DistributedSampler, TensorDataset


def main():
    dist.init_process_group("gloo")
    model = DDP(torch.nn.Linear(4, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    data = TensorDataset(torch.randn(64, 4), torch.randn(64, 1))
    sampler = DistributedSampler(data)
    for epoch in range(2):
        sampler.set_epoch(epoch)
        for i, (x, y) in enumerate(DataLoader(data, batch_size=8, sampler=sampler)):
            pred = {forward}
            loss = (pred - y).pow(2).mean() / 4
            loss.backward()  # the backward
            if (i + 1) % 4 == 0:
                opt.step()
                opt.zero_grad()


main()
"""


def test_accumulating_through_the_module_round_the_wrapper_needs_no_no_sync(tmp_path):
    assert at(lint_one(tmp_path, ACCUMULATE.replace("{forward}", "model.module(x)")), "DDP805") == []


def test_its_twin_accumulates_through_the_wrapper(tmp_path):
    code = ACCUMULATE.replace("{forward}", "model(x)")
    assert [line for line, _ in at(lint_one(tmp_path, code), "DDP805")] == [line_of(code, "# the backward")]


# -------------------------------------------------- a counter offset by the rank, taken off again
INTERLEAVED = """
import torch, torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP


def train(model, opt, steps):
    rank, world = dist.get_rank(), dist.get_world_size()
    iteration = 0 + rank
    while True:
        opt.zero_grad()
        model(torch.randn(2, 4)).sum().backward()
        opt.step()
        iteration += {step}
        if {test} > steps:  # the stop
            break


def main():
    dist.init_process_group("gloo")
    model = DDP(torch.nn.Linear(4, 1))
    train(model, torch.optim.SGD(model.parameters(), lr=0.1), 100)


main()
"""


def test_a_counter_offset_by_the_rank_and_taken_off_again_is_every_ranks(tmp_path):
    code = INTERLEAVED.replace("{step}", "world").replace("{test}", "(iteration - rank)")
    assert at(lint_one(tmp_path, code), "DDP809") == []


def test_its_twin_tests_the_offset_counter_itself(tmp_path):
    code = INTERLEAVED.replace("{step}", "world").replace("{test}", "iteration")
    assert [line for line, _ in at(lint_one(tmp_path, code), "DDP809")] == [line_of(code, "# the stop")]
