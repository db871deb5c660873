"""Shapes from session 20's blind round 26, each with its healthy twin, written in our own words."""

from __future__ import annotations

from tests.unit.test_lint_round17_shapes import lint_plain
from tests.unit.test_lint_round25_shapes import lines_of

# ------------------------------------------------------ distributed checkpointing is collective
DCP = """
import torch, torch.distributed as dist
import torch.distributed.checkpoint as dcp

def keep(model, epoch):
    dcp.save({"model": model.state_dict()}, checkpoint_id=f"ckpt/{epoch}")

def main():
    dist.init_process_group("gloo")
    model = torch.nn.Linear(4, 4)
    for epoch in range(3):
        {guard}
            keep(model, epoch)
        dist.barrier()

main()
"""


def test_a_distributed_checkpoint_save_on_rank_0_alone_is_a_collective_under_a_rank_test(tmp_path):
    found = lint_plain(tmp_path, DCP.replace("{guard}", "if dist.get_rank() == 0:"))
    assert lines_of(found, "DDP801") == [5]


def test_its_twin_every_rank_saves_its_share(tmp_path):
    assert lines_of(lint_plain(tmp_path, DCP.replace("{guard}", "if epoch >= 0:")), "DDP801") == []


# -------------------------------------------------------- the clock read through local names
CLOCK = """
import time, torch.distributed as dist

class Saver:
    def __init__(self, every):
        self.last, self.every = time.time(), every

    def maybe(self, step):
        now = {now}
        since = now - self.last
        if since > self.every:
            dist.barrier()
            self.last = now

def main():
    dist.init_process_group("gloo")
    saver = Saver(60)
    for step in range(100):
        saver.maybe(step)

main()
"""


def test_a_clock_read_through_locals_decides_a_collective_on_each_rank(tmp_path):
    assert lines_of(lint_plain(tmp_path, CLOCK.replace("{now}", "time.time()")), "DDP809") == [10]


def test_its_twin_a_step_count_is_the_same_everywhere(tmp_path):
    assert lines_of(lint_plain(tmp_path, CLOCK.replace("{now}", "step")), "DDP809") == []


# ------------------------------------------------------------ a subclass of DDP of the source's own
SUBCLASS = """
import torch, torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel

class {name}(DistributedDataParallel):
    def inner(self):
        return self.module

def main():
    dist.init_process_group("gloo")
    model = {name}(torch.nn.Linear(4, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for i in range(16):
        model(torch.randn(8, 4)).sum().backward()
        if (i + 1) % 4 == 0:
            opt.step()
            opt.zero_grad()

main()
"""


def test_a_local_subclass_of_ddp_is_a_ddp_model(tmp_path):
    assert lines_of(lint_plain(tmp_path, SUBCLASS.replace("{name}", "Wrapped")), "DDP805") == [13]


def test_its_twin_a_plain_module_subclass_accumulates_nothing_to_sync(tmp_path):
    twin = SUBCLASS.replace("(DistributedDataParallel)", "(torch.nn.Module)").replace(
        "        return self.module", "        return self").replace("{name}(torch.nn.Linear(4, 1))", "torch.nn.Linear(4, 1)")
    assert lines_of(lint_plain(tmp_path, twin.replace("{name}", "Wrapped")), "DDP805") == []


# ------------------------------- a Hugging Face checkpoint whose family holds buffers (rotary)
CHECKPOINT = """
import torch, torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from transformers import AutoModelForSequenceClassification

def main(batches):
    dist.init_process_group("gloo")
    base = AutoModelForSequenceClassification.from_pretrained("{name}", num_labels=2)
    model = DDP(base)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for b in batches:
        model(**b).loss.backward()
        opt.step()
    if dist.get_rank() == 0:
        with torch.no_grad():
            model(**batches[0])
    dist.barrier()

main([])
"""


def test_rank_0_alone_through_a_llama_checkpoints_ddp_wrapper_broadcasts_buffers(tmp_path):
    found = lint_plain(tmp_path, CHECKPOINT.replace("{name}", "meta-llama/Llama-3.2-1B"))
    assert lines_of(found, "DDP801") == [15]


def test_its_twin_a_checkpoint_of_no_known_family_is_not_assumed_to_hold_buffers(tmp_path):
    assert lines_of(lint_plain(tmp_path, CHECKPOINT.replace("{name}", "our/classifier")), "DDP801") == []


# ------------------------------------------- the model a factory returns beside its optimizer
FACTORY = """
import torch, torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

def make():
    net = torch.nn.Sequential(torch.nn.Linear(4, 4), {norm})
    return net, torch.optim.SGD(net.parameters(), lr=0.1)

def main():
    dist.init_process_group("gloo")
    model, opt = make()
    model = DDP(model)
    for step in range(10):
        model(torch.randn(8, 4)).sum().backward()
        opt.step()
        if dist.get_rank() == 0:
            with torch.no_grad():
                model(torch.randn(8, 4))
    dist.barrier()

main()
"""


def test_the_buffers_of_a_model_a_factory_returns_in_a_tuple_are_seen(tmp_path):
    found = lint_plain(tmp_path, FACTORY.replace("{norm}", "torch.nn.BatchNorm1d(4)"))
    assert lines_of(found, "DDP801") == [17]


def test_its_twin_a_factory_model_without_buffers(tmp_path):
    assert lines_of(lint_plain(tmp_path, FACTORY.replace("{norm}", "torch.nn.ReLU()")), "DDP801") == []


# ------------------------------ a validation loss a helper returns with .item(), through a list
VAL_HELPER = """
import torch, torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, DistributedSampler

def val_step(model, x):
    with torch.no_grad():
        return model(x).pow(2).mean().item()

def main(data):
    dist.init_process_group("gloo")
    model = DDP(torch.nn.Linear(4, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    sampler = DistributedSampler(data)
    best, stale = float("inf"), 0
    for epoch in range(50):
        sampler.set_epoch(epoch)
        for x in DataLoader(data, sampler=sampler, batch_size=8):
            model(x).sum().backward()
            opt.step()
        losses = []
        for x in DataLoader(data, sampler=DistributedSampler(data, shuffle=False), batch_size=8):
            losses.append(val_step(model, x))
        val = {val}
        if val < best:
            best, stale = val, 0
        else:
            stale += 1
        if stale >= 5:
            break

main([torch.zeros(4)] * 64)
"""


def test_each_ranks_validation_loss_from_a_helper_through_a_list_decides_the_stop(tmp_path):
    found = lint_plain(tmp_path, VAL_HELPER.replace("{val}", "sum(losses) / len(losses)"))
    assert lines_of(found, "DDP809") == [28]


def test_its_twin_the_epoch_count_decides_alike(tmp_path):
    assert lines_of(lint_plain(tmp_path, VAL_HELPER.replace("{val}", "float(epoch)")), "DDP809") == []


# ----------------------------------- the helper that gave init_process_group its rank, asked again
HELPER_RANK = """
import os, torch, torch.distributed as dist

def local_rank():
    return int(os.environ["LOCAL_RANK"])

def main():
    mine = local_rank()
    dist.init_process_group("gloo", world_size=2, rank={rank})
    model = torch.nn.Linear(4, 4)
    if local_rank() == 0:
        torch.save(model.state_dict(), "model.pt")

main()
NNODES = int(os.environ.get("NNODES", 1))  # a job on several nodes
"""


def test_a_helper_whose_answer_init_process_group_took_as_rank_is_the_jobs_rank(tmp_path):
    assert lines_of(lint_plain(tmp_path, HELPER_RANK.replace("{rank}", "mine")), "DDP806") == []


def test_its_twin_a_job_ranked_otherwise_writes_once_per_node(tmp_path):
    found = lint_plain(tmp_path, HELPER_RANK.replace("{rank}", 'int(os.environ["RANK"])'))
    assert lines_of(found, "DDP806") == [11]


# ---------------------------------------------- loaders past an early return every caller takes
EARLY_RETURN = """
import torch, torch.distributed as dist
from torch.utils.data import DataLoader, DistributedSampler

def build(data, as_sets=False):
    train_set = data[:48]
    if as_sets:
        return train_set
    return DataLoader(train_set, shuffle=True, batch_size=8)

def main(data):
    dist.init_process_group("gloo")
    train_set = build(data, as_sets={given})
    sampler = DistributedSampler(data)
    for epoch in range(2):
        sampler.set_epoch(epoch)
        for x in DataLoader(data, sampler=sampler, batch_size=8):
            x.sum()

main([torch.zeros(4)] * 64)
"""


def test_a_loader_past_an_early_return_every_caller_takes_is_never_built(tmp_path):
    assert lines_of(lint_plain(tmp_path, EARLY_RETURN.replace("{given}", "True")), "DDP802") == []


def test_its_twin_a_caller_that_asks_for_the_loader_and_trains_on_it(tmp_path):
    code = EARLY_RETURN.replace("{given}", "False").replace(
        "            x.sum()\n", "            x.sum()\n    for x in train_set:\n        x.sum().backward()\n")
    assert lines_of(lint_plain(tmp_path, code), "DDP802") == [8]


def test_a_caller_that_asks_for_the_loader_and_never_trains_on_it_is_not_judged(tmp_path):
    assert lines_of(lint_plain(tmp_path, EARLY_RETURN.replace("{given}", "False")), "DDP802") == []


# ------------------------------------------------- the launcher's loader handed to every rank
HANDED = """
import torch, torch.distributed as dist, torch.multiprocessing as mp
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, TensorDataset

def run(rank, world, loader):
    dist.init_process_group("gloo", rank=rank, world_size=world)
    model = DDP(torch.nn.Linear(4, 1))
    for (x,) in loader:
        model(x).sum().backward()

if __name__ == "__main__":
    loader = DataLoader(TensorDataset(torch.randn(64, 4)), batch_size=8, shuffle=True)
    {spawn}
"""


def test_a_loader_the_launcher_hands_to_the_spawned_ranks_is_each_ranks_whole_dataset(tmp_path):
    found = lint_plain(tmp_path, HANDED.replace("{spawn}", "mp.spawn(run, args=(2, loader), nprocs=2)"))
    assert lines_of(found, "DDP802") == [12]


def test_its_twin_a_loader_the_launcher_keeps_for_itself(tmp_path):
    spawn = "print(len(loader))\n    mp.spawn(run, args=(2, None), nprocs=2)"
    assert lines_of(lint_plain(tmp_path, HANDED.replace("{spawn}", spawn)), "DDP802") == []
