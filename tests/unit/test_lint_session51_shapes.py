"""Shapes from session 51 (holdout 61), each with its twin, in our own words: a rank helper that
unpacks a local helper's `(rank, world size)` tuple (`r, _ = ddp_info()`, which returns `0, 1`
without a process group)."""

from __future__ import annotations

from tests.unit.test_lint_round50_shapes import at, line_of
from tests.unit.test_lint_session39_shapes import lint_tree


def lint_one(tmp_path, code: str, **more: str):
    return lint_tree(tmp_path, {"train.py": code, **more})


# -------------------------------------------------- a rank unpacked from a helper's tuple
UNPACKED = """
import torch, torch.distributed as dist
from torch.distributed import is_initialized, get_rank, get_world_size
from torch.nn.parallel import DistributedDataParallel as DDP


def ddp_info():
    if is_initialized():
        return get_rank(), get_world_size()
    return 0, 1


def is_main_process():
    {unpack}
    return {test}


def save_checkpoint(path, model):
    torch.save(model.state_dict(), path)  # the save


def main():
    dist.init_process_group("gloo")
    model = DDP(torch.nn.Linear(4, 4))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for step in range(10):
        model(torch.randn(2, 4)).sum().backward()
        opt.step()
        if step % 5 == 0 and is_main_process():
            save_checkpoint("ckpt.pt", model)
    if is_main_process():
        save_checkpoint("final.pt", model)


main()
"""


def test_a_rank_unpacked_from_a_helpers_tuple_is_the_rank(tmp_path):
    code = UNPACKED.replace("{unpack}", "r, _ = ddp_info()").replace("{test}", "r == 0")
    assert at(lint_one(tmp_path, code), "DDP806") == []


def test_its_twin_unpacks_the_world_size(tmp_path):
    code = UNPACKED.replace("{unpack}", "_, w = ddp_info()").replace("{test}", "w >= 1")
    assert [line for line, _ in at(lint_one(tmp_path, code), "DDP806")] == [line_of(code, "# the save")]


# -------------------------------------------------- early stops counted to their bound
STOPPER = """
import torch, torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
{imports}


class Stopper:
    def __init__(self, patience=5):
        self.patience, self.counter, self.best = patience, 0, float("inf")

    def early_stop(self, score):
        if score < self.best:
            self.best, self.counter = score, 0
        else:
            self.counter += 1
            if self.counter >= self.patience:
                return True
        return False

    def worse(self, score):
        return score > self.best


def main():
    dist.init_process_group("gloo")
    model = DDP(torch.nn.Linear(4, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    stopper = {stopper}
    for epoch in range(100):
        model(torch.randn(2, 4)).sum().backward()
        opt.step()
        if dist.get_rank() == 0:
            val = float(model.module(torch.randn(2, 4)).sum())
            {step}
            if {test}:
                break  # the exit


main()
"""


def _stop(imports="", stopper="Stopper()", step="", test="stopper.early_stop(val)"):
    return STOPPER.replace("{imports}", imports).replace("{stopper}", stopper).replace(
        "{step}", step or "pass").replace("{test}", test)


def test_a_stoppers_method_that_returns_true_at_its_count_is_an_error(tmp_path):
    code = _stop()
    assert at(lint_one(tmp_path, code), "DDP809") == [(line_of(code, "# the exit") - 1, "error")]


def test_its_twin_returns_a_comparison_and_stays_a_warning(tmp_path):
    code = _stop(test="stopper.worse(val)")
    assert at(lint_one(tmp_path, code), "DDP809") == [(line_of(code, "# the exit") - 1, "warning")]


def test_early_stopping_pytorchs_stopper_counts_to_its_patience(tmp_path):
    code = _stop(imports="from early_stopping_pytorch import EarlyStopping", stopper="EarlyStopping(patience=3)",
                 step="stopper(val, model)", test="stopper.early_stop")
    assert at(lint_one(tmp_path, code), "DDP809") == [(line_of(code, "# the exit") - 1, "error")]


def test_its_twin_an_unknown_librarys_stopper_stays_a_warning(tmp_path):
    code = _stop(imports="from somewhere_else import EarlyStopping", stopper="EarlyStopping(patience=3)",
                 step="stopper(val, model)", test="stopper.early_stop")
    assert at(lint_one(tmp_path, code), "DDP809") == [(line_of(code, "# the exit") - 1, "warning")]


# -------------------------------------------------- a stop flag sent round a broadcast
ROUND_TRIP = """
import torch, torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP


def main():
    dist.init_process_group("gloo")
    model = DDP(torch.nn.Linear(4, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    best = float("inf")
    for epoch in range(100):
        model(torch.randn(2, 4)).sum().backward()
        opt.step()
        stop = False
        if dist.get_rank() == 0:
            val = float(model.module(torch.randn(2, 4)).sum())
            stop = val > best
            best = min(best, val)
        signal = torch.tensor(1.0 if stop else 0.0)
        dist.broadcast(signal, src=0)
        {read_back}
        if stop:
            break  # the exit


main()
"""


def test_a_flag_read_back_from_the_broadcast_is_every_ranks(tmp_path):
    code = ROUND_TRIP.replace("{read_back}", "if signal.item() == 1.0:\n            stop = True")
    assert at(lint_one(tmp_path, code), "DDP809") == []


def test_its_twin_broadcasts_the_flag_and_never_reads_it_back(tmp_path):
    code = ROUND_TRIP.replace("{read_back}", "pass")
    assert [line for line, _ in at(lint_one(tmp_path, code), "DDP809")] == [line_of(code, "# the exit") - 1]


# -------------------------------------------------- a counter its author never advanced
PINNED_STOP = """
import torch, torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

dist.init_process_group("gloo")
model = DDP(torch.nn.Linear(4, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.1)
best = float("inf")
stale = 0
for epoch in range(100):
    model(torch.randn(2, 4)).sum().backward()
    opt.step()
    if dist.get_rank() == 0:
        val = float(model.module(torch.randn(2, 4)).sum())
        if val < best:
            best = val
        {step}
        if stale > 10:
            break  # the exit
"""


def test_a_stop_counter_never_stepped_never_leaves(tmp_path):
    assert at(lint_one(tmp_path, PINNED_STOP.replace("{step}", "pass")), "DDP809") == []


def test_its_twin_steps_the_counter(tmp_path):
    code = PINNED_STOP.replace("{step}", "stale += 1")
    assert [line for line, _ in at(lint_one(tmp_path, code), "DDP809")] == [line_of(code, "# the exit") - 1]


# -------------------------------------------------- a helper entered with distributed=False
LINEAR_PROBE = """
import torch, torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP


def linear_probe(features, labels, distributed=False):
    probe = torch.nn.Linear(4, 2)
    if distributed:
        probe = DDP(probe)
    opt = torch.optim.SGD(probe.parameters(), lr=0.1)
    for _ in range(10):
        loss = torch.nn.functional.cross_entropy(probe(features), labels)
        loss.backward()  # the backward
        opt.step()


def main():
    dist.init_process_group("gloo")
    model = DDP(torch.nn.Linear(4, 4))
    model(torch.randn(2, 4)).sum().backward()
    if dist.get_rank() == 0:
        with torch.no_grad():
            feats = model.module(torch.randn(8, 4))
        linear_probe(feats, torch.zeros(8, dtype=torch.long), distributed={given})


main()
"""


def test_a_helper_entered_with_distributed_false_trains_a_plain_probe(tmp_path):
    assert at(lint_one(tmp_path, LINEAR_PROBE.replace("{given}", "False")), "DDP801") == []


def test_its_twin_enters_it_with_distributed_true(tmp_path):
    found = at(lint_one(tmp_path, LINEAR_PROBE.replace("{given}", "True")), "DDP801")
    assert found and all(severity == "error" for _, severity in found)


# -------------------------------------------------- the loader of a run with no process group
NO_GROUP = """
import os
import torch, torch.distributed as dist
from torch.utils.data import DataLoader, DistributedSampler
from torch.distributed.fsdp import FullyShardedDataParallel as FSDP


def is_dist():
    return {helper}


def main():
    if "RANK" in os.environ or "SLURM_PROCID" in os.environ:
        dist.init_process_group("gloo")
    data = torch.randn(64, 4)
    if is_dist():
        sampler = DistributedSampler(data)
        loader = DataLoader(data, batch_size=8, sampler=sampler)
    else:
        loader = DataLoader(data, batch_size=8, shuffle=True)  # the plain loader
    model = FSDP(torch.nn.Linear(4, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for epoch in range(2):
        if is_dist():
            sampler.set_epoch(epoch)
        for x in loader:
            model(x).sum().backward()
            opt.step()


main()
"""


def test_the_else_of_a_helper_asking_for_the_group_has_no_group(tmp_path):
    code = NO_GROUP.replace("{helper}", "dist.is_available() and dist.is_initialized()")
    assert at(lint_one(tmp_path, code), "DDP802") == []


def test_its_twin_helper_asks_for_a_gpu(tmp_path):
    code = NO_GROUP.replace("{helper}", "torch.cuda.is_available()")
    assert [line for line, _ in at(lint_one(tmp_path, code), "DDP802")] == [line_of(code, "# the plain loader")]


# -------------------------------------------------- a replay buffer this pass filled
REPLAY = """
import torch, torch.distributed as dist
from torch.utils.data import DataLoader, DistributedSampler
from torch.nn.parallel import DistributedDataParallel as DDP


class Buffer:
    def __init__(self):
        self.items = []

    def append(self, item):
        self.items.append(item)

    def clear(self):
        self.items.clear()

    def __len__(self):
        return len(self.items)

    def __getitem__(self, i):
        return self.items[i]


def main():
    dist.init_process_group("gloo")
    prompts = torch.randn(64, 4)
    prompt_loader = DataLoader(prompts, batch_size=8, sampler=DistributedSampler(prompts))
    model = DDP(torch.nn.Linear(4, 4))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    buffer = Buffer()
    for batch in prompt_loader:
        buffer.clear()
        with torch.no_grad():
            for prompt in batch:
                buffer.append({item})
        experience = DataLoader(buffer, batch_size=4, shuffle=True)  # the update's loader
        for x in experience:
            model(x).sum().backward()
            opt.step()


main()
"""


def test_a_buffer_filled_with_this_passs_rollouts_is_the_ranks_own(tmp_path):
    assert at(lint_one(tmp_path, REPLAY.replace("{item}", "model.module(prompt)")), "DDP802") == []


def test_its_twin_fills_it_from_a_file(tmp_path):
    code = REPLAY.replace("{item}", "torch.load('episodes.pt')")
    assert [line for line, _ in at(lint_one(tmp_path, code), "DDP802")] == [line_of(code, "# the update's loader")]


# -------------------------------------------------- a torchmetrics metric kept on an object
METRICS = """
import torch, torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from torchmetrics.regression import MeanSquaredError


class Scores:
    def __init__(self):
        self.mse = MeanSquaredError({sync})


def main():
    dist.init_process_group("gloo")
    model = DDP(torch.nn.Linear(4, 1))
    scores = Scores()
    model(torch.randn(2, 4)).sum().backward()
    if dist.get_rank() == 0:
        scores.mse.update(torch.zeros(2), torch.ones(2))
        print(scores.mse.compute())  # the compute


main()
"""


def test_a_metric_an_object_keeps_gathers_in_compute(tmp_path):
    code = METRICS.replace("{sync}", "")
    assert at(lint_one(tmp_path, code), "DDP801") == [(line_of(code, "# the compute"), "error")]


def test_its_twin_is_told_not_to_sync(tmp_path):
    assert at(lint_one(tmp_path, METRICS.replace("{sync}", "sync_on_compute=False")), "DDP801") == []
