"""Shapes from session 17's thirteenth blind round, each with its twin, written in our own words."""

from __future__ import annotations

import textwrap

from ddpdoctor.lint.driver import gather, lint_results
from tests.unit.test_lint_real_patterns import codes, lint


def lint_bare(tmp_path, source: str):
    """Lint a script with no header (one that sets up its process group its own way)."""
    path = tmp_path / "train.py"
    path.write_text(textwrap.dedent(source).lstrip("\n"))
    facts = gather(str(path))
    return [f for r in lint_results(facts, set()) for f in r.findings], facts


GROUP_RANK = """
from fairscale.nn.model_parallel import initialize as fs_init
fs_init.initialize_model_parallel(2)
model = DDP(torch.nn.Linear(4, 4))
path = {path}
{test}
    torch.save(model.state_dict(), path)
"""


def test_a_save_under_a_libraries_data_parallel_rank_test_is_one_writer(tmp_path):
    # LLaMA2-Accessory: data-parallel rank 0 of each model-parallel group writes its own shard
    found, _ = lint(tmp_path, GROUP_RANK.format(path='f"ckpt/consolidated.{fs_init.get_model_parallel_rank():02d}.pth"',
                                                test="if fs_init.get_data_parallel_rank() == 0:"))
    assert [f for f in found if f.code == "DDP806"] == []


def test_a_save_under_a_test_of_something_else_is_every_ranks(tmp_path):
    found, _ = lint(tmp_path, GROUP_RANK.format(path='"ckpt/consolidated.pth"',
                                                test="if fs_init.model_parallel_is_initialized():"))
    assert ("DDP806", "warning", 12) in codes(found)


ENGINE = """
import deepspeed
import torch
net = torch.nn.Linear(8, 1)
engine, _, _, _ = deepspeed.initialize(model=net, model_parameters=net.parameters(){switch})
cache = "cache/train.pt"
torch.save([torch.randn(8) for _ in range(16)], cache)
"""


def test_deepspeed_initialize_sets_up_the_process_group(tmp_path):
    # LOMO: no init_process_group anywhere; deepspeed.initialize does it
    found, facts = lint_bare(tmp_path, ENGINE.format(switch=""))
    assert facts.distributed is not None
    assert ("DDP806", "warning", 6) in codes(found)


def test_deepspeed_initialize_told_not_to_sets_up_nothing(tmp_path):
    _, facts = lint_bare(tmp_path, ENGINE.format(switch=", dist_init_required=False"))
    assert facts.distributed is None


ENGINE_LOOP = """
import deepspeed
deepspeed.init_distributed()
net, reference = torch.nn.Linear(8, 1), torch.nn.Linear(8, 1)
model, _, _, _ = deepspeed.initialize(model=net, model_parameters=net.parameters())
data = TensorDataset(torch.randn(256, 8))
sampler = DistributedSampler(data)
loader = DataLoader(data, batch_size=16, sampler=sampler)
for epoch in range(3):
{set_epoch}
    for (x,) in loader:
        with torch.no_grad():
            ref = reference(x)
        loss = (model(x) - ref).pow(2).mean()
        model.backward(loss)
        model.step()
"""


def test_an_engines_backward_makes_a_loop_with_a_no_grad_block_a_training_loop(tmp_path):
    # DeepSpeed-Chat's DPO: the frozen reference model runs under no_grad in the training loop
    found, _ = lint(tmp_path, ENGINE_LOOP.format(set_epoch="    pass"))
    assert ("DDP804", "warning", 12) in codes(found)


def test_the_same_loop_with_set_epoch_is_healthy(tmp_path):
    found, _ = lint(tmp_path, ENGINE_LOOP.format(set_epoch="    sampler.set_epoch(epoch)"))
    assert [f for f in found if f.code == "DDP804"] == []


LAUNCHER = """
import torch
import torch.distributed as dist
from torch.multiprocessing import Process

def fetch(path):
    torch.save({{"w": torch.zeros(3)}}, path)

def worker(rank, world):
{setup}
    model = torch.nn.Linear(3, 3)

if __name__ == "__main__":
    fetch("data/base.pt")
    procs = [Process(target=worker, args=(r, 2)) for r in range(2)]
    for p in procs:
        p.start()
"""


def test_a_save_before_process_ranks_start_runs_once_in_the_launcher(tmp_path):
    # I2SB: `Process(target=...)` starts the ranks, which set up the group themselves
    found, _ = lint_bare(tmp_path, LAUNCHER.format(setup='    dist.init_process_group("gloo", rank=rank, world_size=world)'))
    assert [f for f in found if f.code == "DDP806"] == []


def test_a_process_that_joins_no_group_leaves_the_script_a_rank(tmp_path):
    # the script is the rank (torchrun); its Process only prefetches: the save is every rank's
    source = 'import torch.distributed as _d\n_d.init_process_group("gloo")\n' + textwrap.dedent(
        LAUNCHER.format(setup="    pass")).lstrip("\n")
    found, _ = lint_bare(tmp_path, source)
    assert ("DDP806", "warning", 8) in codes(found)


HANDED = """
import torch
import torch.distributed as dist
from torch.multiprocessing import Process

def init_processes(rank, size, fn, opt):
    dist.init_process_group("gloo", rank=rank, world_size=size)
    fn(opt)

def main(opt):
{save}

class Opt:
    pass

if __name__ == "__main__":
    opt = Opt()
    opt.distributed = torch.cuda.device_count() > 1
    if opt.distributed:
        procs = [Process(target=init_processes, args=(r, 2, main, opt)) for r in range(2)]
        for p in procs:
            p.start()
    else:
        init_processes(0, 1, main, opt)
"""


def test_a_function_handed_to_process_ranks_in_args_runs_on_every_rank(tmp_path):
    # I2SB: the worker body reaches init_processes through Process(args=(..., main, opt))
    found, _ = lint_bare(tmp_path, HANDED.format(save='    torch.save([1, 2], "/data/index.pt")'))
    assert ("DDP806", "warning", 10) in codes(found)


def test_the_handed_function_saving_on_rank_0_is_healthy(tmp_path):
    found, _ = lint_bare(tmp_path, HANDED.format(
        save='    if dist.get_rank() == 0:\n        torch.save([1, 2], "/data/index.pt")'))
    assert [f for f in found if f.code == "DDP806"] == []


PHASE = """
class Trainer:
    def __init__(self):
        self.rank = dist.get_rank()
        self.model = DDP(torch.nn.BatchNorm1d(3))

    def forward(self, x, phase):
        if phase == "train":
            return self.model(x)
        with torch.no_grad():
            return self.model.module(x)

    def train(self):
        for step in range(100):
            self.forward(torch.randn(8, 3), phase="train").sum().backward()
            if step % 10 == 0 and self.rank == 0:
                self.forward(torch.randn(8, 3), phase="{phase}")

Trainer().train()
"""


def test_a_literal_phase_rank_0_passes_rules_out_the_ddp_forward(tmp_path):
    # DifFace: validation on rank 0 passes phase="val", and only phase == "train" runs DDP
    found, _ = lint(tmp_path, PHASE.format(phase="val"))
    assert [f for f in found if f.code == "DDP801"] == []


def test_the_same_call_with_the_training_phase_is_a_one_sided_forward(tmp_path):
    found, _ = lint(tmp_path, PHASE.format(phase="train"))
    assert ("DDP801", "error", 22) in codes(found)


WORKER_INIT = """
import numpy as np
from torch.utils.data import Dataset

class Noisy(Dataset):
    def __len__(self):
        return 1000
    def __getitem__(self, i):
        return torch.tensor(np.random.uniform(0, 1, 3), dtype=torch.float32)

def worker_init(worker_id):
    np.random.seed({seed})

torch.manual_seed(1234)
ds = Noisy()
sampler = DistributedSampler(ds)
loader = DataLoader(ds, batch_size=8, sampler=sampler, num_workers=4, worker_init_fn=worker_init)
model = DDP(torch.nn.Linear(3, 1))
for epoch in range(2):
    sampler.set_epoch(epoch)
    for x in loader:
        model(x).sum().backward()
"""


def test_a_worker_init_seeding_from_numpys_worker_state_keeps_every_ranks_seeds_alike(tmp_path):
    # DifFace: np.random.get_state() in the worker is the base seed again
    found, _ = lint(tmp_path, WORKER_INIT.format(seed="np.random.get_state()[1][0] + worker_id"))
    assert ("DDP808", "warning", 22) in codes(found)


def test_a_worker_init_seeding_from_the_rank_is_healthy(tmp_path):
    found, _ = lint(tmp_path, WORKER_INIT.format(seed="1000 * dist.get_rank() + worker_id"))
    assert [f for f in found if f.code == "DDP808"] == []


CLOCK = """
import time
import numpy as np
from torch.utils.data import Dataset

class Jitter(Dataset):
    def __len__(self):
        return 1000
    def __getitem__(self, i):
        return torch.tensor([i, np.random.uniform(-5, 5)], dtype=torch.float32)

ds = Jitter()
sampler = DistributedSampler(ds)
loader = DataLoader(ds, batch_size=8, sampler=sampler, num_workers=4)
model = DDP(torch.nn.Linear(2, 1))
for epoch in range(3):
    sampler.set_epoch(epoch)
    torch.manual_seed({seed})
    for x in loader:
        model(x).sum().backward()
"""


def test_a_whole_second_clock_seed_is_the_same_on_ranks_in_lockstep(tmp_path):
    # CompletionFormer: every epoch, every rank seeds torch with int(time.time())
    found, _ = lint(tmp_path, CLOCK.format(seed="int(time.time())"))
    assert ("DDP808", "warning", 19) in codes(found)


def test_a_clock_seed_with_the_rank_in_is_healthy(tmp_path):
    found, _ = lint(tmp_path, CLOCK.format(seed="int(time.time()) + dist.get_rank()"))
    assert [f for f in found if f.code == "DDP808"] == []


OPTION_WORKERS = """
import argparse, random
from torch.utils.data import Dataset

class Clips(Dataset):
    def __len__(self):
        return 1000
    def __getitem__(self, i):
        return torch.randn(20)[random.randint(0, 10):][:1]

p = argparse.ArgumentParser()
p.add_argument("--num_workers", default=0, type=int)
args = p.parse_args()
torch.manual_seed(777)
ds = Clips()
sampler = DistributedSampler(ds)
loader = DataLoader(ds, batch_size=8, sampler=sampler, num_workers={workers})
model = DDP(torch.nn.Linear(1, 1))
for epoch in range(3):
    sampler.set_epoch(epoch)
    for x in loader:
        model(x).sum().backward()
"""


def test_workers_an_option_gives_are_judged_with_the_assumption_said(tmp_path):
    # wekws: --num_workers defaults to 0, the recipe passes 8
    found, _ = lint(tmp_path, OPTION_WORKERS.format(workers="args.num_workers"))
    [seeds] = [f for f in found if f.code == "DDP808"]
    assert seeds.message.startswith("if --num_workers is above its default 0: ")
    assert (seeds.severity.value, seeds.location.line) == ("warning", 22)


def test_a_loader_without_workers_draws_in_the_rank_itself(tmp_path):
    found, _ = lint(tmp_path, OPTION_WORKERS.format(workers="0"))
    assert [f for f in found if f.code == "DDP808"] == []


FALLBACK = """
import logging

def stamp():
    dist.barrier()
    return "now"

def board_dir(logger):
    dir_name = None
    for h in logger.handlers:
        if hasattr(h, "baseFilename"):
            dir_name = h.baseFilename
            break
{test}
        dir_name = "model-" + stamp()
    return dir_name

if dist.get_rank() == 0:
    print(board_dir(logging.getLogger()))
"""


def test_a_collective_in_a_searchs_fallback_is_a_warning_that_says_when(tmp_path):
    # HLLM: the barrier runs only where no log handler has a file name
    found, _ = lint(tmp_path, FALLBACK.format(test="    if dir_name is None:"))
    [one] = [f for f in found if f.code == "DDP801"]
    assert one.severity.value == "warning" and "`dir_name is None`" in one.message


def test_the_same_collective_on_every_way_is_an_error(tmp_path):
    found, _ = lint(tmp_path, FALLBACK.format(test="    if True:"))
    assert ("DDP801", "error", 10) in codes(found)


TWO_LEVELS = """
model = DDP(torch.nn.Linear(8, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.1)
ds = TensorDataset(torch.randn(64, 8))
loader = DataLoader(ds, sampler=DistributedSampler(ds), batch_size=4)
period = 4

def run_optimizer(loss, i):
    loss.backward()
{step}
        opt.step()
        opt.zero_grad()

def train_step(i, x):
    loss = model(x).sum()
    run_optimizer(loss, i)

for i, (x,) in enumerate(loader):
    train_step(i, x)
"""


def test_a_step_two_calls_below_the_loop_every_kth_pass_accumulates(tmp_path):
    # ClassyVision: loop -> train_step (forward) -> run_optimizer (backward, step every k)
    found, _ = lint(tmp_path, TWO_LEVELS.format(step="    if i % period == period - 1:"))
    assert ("DDP805", "warning", 24) in codes(found)


def test_a_step_two_calls_below_the_loop_on_every_pass_is_healthy(tmp_path):
    found, _ = lint(tmp_path, TWO_LEVELS.format(step="    if True:"))
    assert [f for f in found if f.code == "DDP805"] == []


REBOUND = """
ds = TensorDataset(torch.randn(64, 4))
{maps}
ds = {last}
loader = DataLoader(ds, batch_size=8)
model = DDP(torch.nn.Linear(4, 1))
for (x,) in loader:
    model(x).sum().backward()
"""


def test_a_name_rebound_many_times_is_read_through_its_nearest_binding(tmp_path):
    # a generated pipeline: `ds = ds.map(f)` over and over, then sharded by rank
    maps = "\n".join(f"ds = ds.map(lambda x: x + {i})" for i in range(40))
    found, _ = lint(tmp_path, REBOUND.format(maps=maps, last="ds.shard(num_shards=dist.get_world_size(), "
                                                           "index=dist.get_rank())"))
    assert [f for f in found if f.code == "DDP802"] == []


def test_the_same_pipeline_never_sharded_reads_every_sample_on_every_rank(tmp_path):
    maps = "\n".join(f"ds = ds.map(lambda x: x + {i})" for i in range(40))
    found, _ = lint(tmp_path, REBOUND.format(maps=maps, last="ds.map(lambda x: x)"))
    assert "DDP802" in [c for c, _, _ in codes(found)]


ENDLESS = """
def endless(ds, bs):
    loader = DataLoader(ds, batch_size=bs, {order}, drop_last=True)
    while True:
        yield from loader

model = DDP(torch.nn.Linear(3, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.1)
ds = TensorDataset(torch.randn(64, 3))
batches = endless(ds, 8)
for it in range(100):
    (x,) = next(batches)
    model(x).sum().backward()
    opt.step()
"""


def test_a_loader_an_endless_generator_wraps_is_read_by_the_loop_that_calls_next(tmp_path):
    # I2SB: `while True: yield from loader`, then `next(...)` in the training loop
    found, _ = lint(tmp_path, ENDLESS.format(order="shuffle=True"))
    assert ("DDP802", "error", 8) in codes(found)


def test_the_same_generator_over_a_sharded_loader_is_healthy(tmp_path):
    found, _ = lint(tmp_path, ENDLESS.format(order="sampler=DistributedSampler(ds)"))
    assert [f for f in found if f.code == "DDP802"] == []


PICKED = """
from data import get as get_data
torch.manual_seed({seed})
data = get_data("Noisy")
ds = data("train")
sampler = DistributedSampler(ds)
loader = DataLoader(dataset=ds, batch_size=8, sampler=sampler, num_workers=4)
model = DDP(torch.nn.Linear(3, 1))
for epoch in range(2):
    sampler.set_epoch(epoch)
    for x in loader:
        model(x).sum().backward()
"""
PICKED_DATA = {
    "__init__": """
        from importlib import import_module
        from torch.utils.data import Dataset

        def get(name):
            module_name = "data." + name.lower()
            module = import_module(module_name)
            return getattr(module, name)

        class BaseDataset(Dataset):
            def __len__(self):
                return 100
    """,
    "noisy": """
        import numpy as np
        import torch
        from data import BaseDataset

        class Noisy(BaseDataset):
            def __init__(self, mode):
                self.mode = mode
            def __getitem__(self, i):
                return torch.tensor(np.random.uniform(0, 1, 3), dtype=torch.float32)
    """,
}


def picked_package(tmp_path):
    (tmp_path / "data").mkdir()
    for name, body in PICKED_DATA.items():
        (tmp_path / "data" / f"{name}.py").write_text(textwrap.dedent(body))


def test_a_dataset_module_picked_by_a_name_bound_first_is_read_for_its_draws(tmp_path):
    # CompletionFormer: `module_name = "data." + name.lower()`, import_module(module_name)
    picked_package(tmp_path)
    found, facts = lint(tmp_path, PICKED.format(seed="1234"))
    assert any(f.endswith("noisy.py") for f in facts.files)
    assert ("DDP808", "warning", 12) in codes(found)


def test_the_picked_dataset_with_a_seed_per_rank_is_healthy(tmp_path):
    picked_package(tmp_path)
    found, _ = lint(tmp_path, PICKED.format(seed="1234 + dist.get_rank()"))
    assert [f for f in found if f.code == "DDP808"] == []
