"""Shapes from session 67's reading of holdout 94 (after its unread scores), each with its twin, in
our own words."""

from __future__ import annotations

from tests.unit.test_lint_session39_shapes import lint_tree
from tests.unit.test_lint_session61_shapes import _codes, _line

# -------------------------------------------------- a save decision made on rank 0 and broadcast
# on the distributed side of the run's switch: the one-process value never reaches the ranks
BROADCAST_DECISION = """
import os
import torch
import torch.distributed as dist
from torch.distributed.fsdp import FullyShardedDataParallel as FSDP

is_distributed = int(os.environ.get("RANK", -1)) != -1
if is_distributed:
    dist.init_process_group("gloo")
    master = int(os.environ["RANK"]) == 0
else:
    master = True
model = FSDP(torch.nn.Linear(4, 4))
opt = torch.optim.SGD(model.parameters(), lr=0.1)
best = 1e9


def save(path):
    state = model.state_dict()
    if master:
        torch.save(state, path)
    if is_distributed:
        dist.barrier()  # the barrier


for step in range(100):
    loss = model(torch.randn(2, 4)).sum()
    loss.backward()
    opt.step()
    if step % 10 == 0:
        do_save = master and float(loss) < best
        if is_distributed:
            flag = torch.tensor([1 if do_save else 0])
            dist.broadcast(flag, src=0)
            SHARED
        if do_save:
            save("ckpt.pt")
"""


def test_a_decision_broadcast_on_the_distributed_side_is_shared(tmp_path):
    body = BROADCAST_DECISION.replace("SHARED", "do_save = bool(flag.item())")
    assert _codes(lint_tree(tmp_path, {"train.py": body}), "DDP801") == []


def test_its_twin_a_decision_kept_as_rank_0_made_it(tmp_path):
    body = BROADCAST_DECISION.replace("SHARED", "pass")
    found = _codes(lint_tree(tmp_path, {"train.py": body}), "DDP801")
    assert _line(body, "# the barrier") in [f.location.line for f in found]


# -------------------------------------------------- a pipeline-stage worker spawned beside the DDP
# worker (another parallel mode): it wraps nothing in DDP, so its micro-steps have nothing to sync
TWO_WORKERS = """
import sys
from collections import deque
import torch
import torch.distributed as dist
import torch.multiprocessing as mp
from torch.nn.parallel import DistributedDataParallel as DDP


def ddp_worker(rank, world):
    dist.init_process_group("gloo", rank=rank, world_size=world)
    model = DDP(torch.nn.Linear(4, 4))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for x in torch.randn(8, 2, 4):
        with model.no_sync():
            model(x).sum().backward()
        model(x).sum().backward()
        opt.step()
        opt.zero_grad()


def make_optimizer(params):
    opt = torch.optim.SGD(params, lr=0.1)
    return opt, torch.optim.lr_scheduler.StepLR(opt, 10)


def run_stage(stage, opt, batches):
    pending = deque()

    def forward(x):
        return stage(x).sum()

    for group in batches:
        opt.zero_grad()
        for micro in group:
            pending.append(forward(micro))
            pending.popleft().backward()  # the stage's backward
        opt.step()


def stage_worker(rank, world):
    dist.init_process_group("gloo", rank=rank, world_size=world)
    stage = torch.nn.Linear(4, 4)
    WRAP
    opt, _ = make_optimizer(stage.parameters())
    run_stage(stage, opt, torch.randn(4, 3, 2, 4))


if __name__ == "__main__":
    if sys.argv[1] == "pipeline":
        mp.spawn(stage_worker, args=(2,), nprocs=2)
    else:
        mp.spawn(ddp_worker, args=(2,), nprocs=2)
"""


def test_a_stage_worker_that_wraps_nothing_has_nothing_to_sync(tmp_path):
    body = TWO_WORKERS.replace("WRAP", "pass")
    assert _codes(lint_tree(tmp_path, {"train.py": body}), "DDP805") == []


def test_its_twin_the_stage_worker_wraps_its_model(tmp_path):
    body = TWO_WORKERS.replace("WRAP", "stage = DDP(stage)")
    found = _codes(lint_tree(tmp_path, {"train.py": body}), "DDP805")
    assert [f.location.line for f in found] == [_line(body, "# the stage's backward")]


# -------------------------------------------------- a vendored package's SLURM set-up the script
# never runs says nothing of how the script is launched: its local rank 0 is the job's one writer
LOCAL_WRITER = """
import os
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from vendored.dist_util import get_dist_info

rank = int(os.environ["LOCAL_RANK"])
dist.init_process_group("nccl")
model = DDP(torch.nn.Linear(4, 1))
CALL
for step in range(10):
    model(torch.randn(2, 4)).sum().backward()
if rank == 0:
    torch.save(model.module.state_dict(), "model.pt")  # the save
"""
VENDORED = """
import os
import subprocess
import torch.distributed as dist


def init_slurm(backend="nccl"):
    proc = int(os.environ["SLURM_PROCID"])
    nodes = os.environ["SLURM_NODELIST"]
    addr = subprocess.getoutput(f"scontrol show hostname {nodes} | head -n1")
    os.environ["MASTER_ADDR"] = addr
    dist.init_process_group(backend, rank=proc)


def get_dist_info():
    if dist.is_available() and dist.is_initialized():
        return dist.get_rank(), dist.get_world_size()
    return 0, 1
"""


def test_an_unreached_package_slurm_setup_tells_no_nodes_apart(tmp_path):
    body = LOCAL_WRITER.replace("CALL", "print(get_dist_info())")
    found = lint_tree(tmp_path, {"train.py": body, "vendored/__init__.py": "", "vendored/dist_util.py": VENDORED})
    assert _codes(found, "DDP806") == []


def test_its_twin_the_script_runs_the_slurm_setup(tmp_path):
    body = LOCAL_WRITER.replace("from vendored.dist_util import get_dist_info",
                                "from vendored.dist_util import get_dist_info, init_slurm").replace(
        "CALL", "init_slurm() if 'SLURM_PROCID' in os.environ else None")
    found = lint_tree(tmp_path, {"train.py": body, "vendored/__init__.py": "", "vendored/dist_util.py": VENDORED})
    assert [(f.location.line, f.severity.value) for f in _codes(found, "DDP806")] == \
        [(_line(body, "# the save"), "warning")]


# one LightningModule for both shapes below (`{module}` the package's alias)
NET = """class Net({module}.LightningModule):
    def __init__(self):
        super().__init__()
        self.layer = torch.nn.Linear(4, 2)

    def training_step(self, batch, batch_idx):
        x, y = batch
        return torch.nn.functional.cross_entropy(self.layer(x), y)

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.1)
"""

# -------------------------------------------------- an unseeded random_split that every process
# Lightning starts runs again: Lightning's DistributedSampler shards N different splits
LIGHTNING_SPLIT = """
import torch
from torch.utils.data import DataLoader, TensorDataset, random_split
import lightning as L


NET


SEED
dataset = TensorDataset(torch.randn(100, 4), torch.randint(0, 2, (100,)))
train_set, val_set = random_split(dataset, [90, 10]SPLIT_ARGS)
train_loader = DataLoader(train_set, batch_size=8, shuffle=True)  # the training loader
val_loader = DataLoader(val_set, batch_size=8)
trainer = L.Trainer(max_epochs=1, TRAINER_ARGS)
trainer.fit(Net(), train_dataloaders=train_loader, val_dataloaders=val_loader)
"""


def _lightning(tmp_path, seed="", split="", trainer='accelerator="gpu", devices=2'):
    body = LIGHTNING_SPLIT.replace("NET", NET.format(module="L")).replace("SEED", seed)
    body = body.replace("SPLIT_ARGS", split).replace("TRAINER_ARGS", trainer)
    return body, _codes(lint_tree(tmp_path, {"train.py": body}), "DDP803")


def test_an_unseeded_split_before_lightning_trains(tmp_path):
    body, found = _lightning(tmp_path)
    assert [(f.location.line, f.severity.value) for f in found] == [(_line(body, "# the training loader"), "warning")]
    assert "random_split" in found[0].message and "Lightning" in found[0].message


def test_its_twins_seeded_split_seeded_processes_spawned_ranks_one_device(tmp_path):
    assert _lightning(tmp_path / "a", seed="L.seed_everything(7)")[1] == []
    assert _lightning(tmp_path / "b", split=", generator=torch.Generator().manual_seed(0)")[1] == []
    assert _lightning(tmp_path / "c", trainer='devices=2, strategy="ddp_spawn"')[1] == []
    assert _lightning(tmp_path / "d", trainer="devices=1")[1] == []


DATAMODULE = """
import torch
from torch.utils.data import DataLoader, TensorDataset, random_split
import pytorch_lightning as pl


class Data(pl.LightningDataModule):
    def setup(self, stage=None):
        full = TensorDataset(torch.randn(100, 4), torch.randint(0, 2, (100,)))
        self.train_set, self.val_set = random_split(full, [90, 10]SPLIT_ARGS)

    def train_dataloader(self):
        return DataLoader(self.train_set, batch_size=8, shuffle=True)  # the training loader

    def val_dataloader(self):
        return DataLoader(self.val_set, batch_size=8)


NET


if __name__ == "__main__":
    pl.Trainer(max_epochs=1, devices=4, strategy="ddp").fit(Net(), datamodule=Data())
"""


def test_a_datamodule_setup_split_unseeded(tmp_path):
    body = DATAMODULE.replace("NET", NET.format(module="pl")).replace("SPLIT_ARGS", "")
    found = _codes(lint_tree(tmp_path, {"train.py": body}), "DDP803")
    assert [f.location.line for f in found] == [_line(body, "# the training loader")]


def test_its_twin_the_datamodule_split_seeded(tmp_path):
    body = DATAMODULE.replace("NET", NET.format(module="pl")).replace(
        "SPLIT_ARGS", ", generator=torch.Generator().manual_seed(1)")
    assert _codes(lint_tree(tmp_path, {"train.py": body}), "DDP803") == []


# -------------------------------------------------- a loader's batches passed on by the caller's
# own generator (`data = load_data(bs)`, then `for b in data: yield b`) into the training loop
PASSED_ON = """
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, TensorDataset


def load_data(batch_size):
    loader = DataLoader(TensorDataset(torch.randn(64, 4)), batch_size=batch_size, shuffle=True)  # the loader
    while True:
        yield from loader


def load_pairs(batch_size):
    data = load_data(batch_size)
    for (x,) in data:
        yield x, {}


class Loop:
    def __init__(self, model, data):
        self.model = model
        self.data = data

    def run(self):
        for _ in range(10):
            x, cond = next(self.data)
            self.model(x).sum().backward()


dist.init_process_group("gloo")
model = DDP(torch.nn.Linear(4, 1))
data = load_pairs(8)
READ
"""


def test_a_loader_passed_on_by_a_generator_into_the_training_loop(tmp_path):
    body = PASSED_ON.replace("READ", "Loop(model, data).run()")
    found = _codes(lint_tree(tmp_path, {"train.py": body}), "DDP802")
    assert [(f.location.line, f.severity.value) for f in found] == [(_line(body, "# the loader"), "error")]


def test_its_twin_the_passed_on_batches_only_evaluated(tmp_path):
    body = PASSED_ON.replace("READ", "with torch.no_grad():\n    for _ in range(3):\n        print(next(data)[0].sum())")
    found = _codes(lint_tree(tmp_path, {"train.py": body}), "DDP802")
    assert [f.severity.value for f in found] != ["error"]


def test_every_launch_beside_starting_one_process_makes_it_a_warning(tmp_path):
    body = PASSED_ON.replace("READ", "Loop(model, data).run()")
    found = _codes(lint_tree(tmp_path, {"train.py": body, "run.sh": "mpiexec -n 1 python train.py --lr 1e-4\n"}),
                   "DDP802")
    assert [f.severity.value for f in found] == ["warning"]
    assert "mpiexec -n 1" in found[0].message


def test_its_twin_a_launch_on_four_processes_keeps_the_error(tmp_path):
    body = PASSED_ON.replace("READ", "Loop(model, data).run()")
    found = _codes(lint_tree(tmp_path, {"train.py": body, "run.sh": "mpiexec -n 1 python train.py\n"
                                        "mpiexec -n 4 python train.py\n"}), "DDP802")
    assert [f.severity.value for f in found] == ["error"]


# -------------------------------------------------- names made from a list rank 0 alone appends to
# (`recent = [m["wer"] for m in history[-k:]]`), tested by every rank for an early stop
DERIVED = """
import os
import yaml
import torch
from accelerate import Accelerator

accelerator = Accelerator()
model = torch.nn.Linear(4, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
model, opt = accelerator.prepare(model, opt)
history = []
if os.path.exists("metrics.yaml"):
    with open("metrics.yaml") as f:
        history = yaml.safe_load(f)
for step in range(1000):
    accelerator.backward(model(torch.randn(2, 4)).sum())
    opt.step()
    opt.zero_grad()
    if step > 0 and step % 100 == 0:
        wer = accelerator.reduce(torch.tensor([1.0]), reduction="sum").item()
        GUARD
            history.append({"step": step, "wer": wer})
        recent = [m["wer"] for m in history[-3:]]
        every = [m["wer"] for m in history]
    if step > 0 and step % 100 == 0:
        if len(every) > 3 and all(v > min(every) for v in recent):  # the stop
            break
"""


def test_a_stop_read_from_lists_made_from_rank_0s_history(tmp_path):
    body = DERIVED.replace("GUARD", "if accelerator.is_main_process:")
    found = _codes(lint_tree(tmp_path, {"train.py": body}), "DDP809")
    assert [(f.location.line, f.severity.value) for f in found] == [(_line(body, "# the stop"), "error")]
    assert "`history` is set only under `accelerator.is_main_process`" in found[0].message


def test_its_twin_every_rank_appends_the_reduced_value(tmp_path):
    body = DERIVED.replace("GUARD", "if True:")
    assert _codes(lint_tree(tmp_path, {"train.py": body}), "DDP809") == []


# -------------------------------------------------- options declared from a dict (guided-diffusion's
# `add_dict_to_argparser(parser, defaults)`), given through a launch script's shell variables
DICT_OPTIONS = """
import argparse
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, TensorDataset


def add_dict_to_argparser(parser, default_dict):
    for k, v in default_dict.items():
        parser.add_argument(f"--{k}", default=v, type=type(v))


def data_defaults():
    return dict(set_name="", batch_size=4)


def load_data(batch_size, set_name="train"):
    dataset = TensorDataset(torch.randn(64, 4))
    deterministic = False if set_name == "train" else True
    if deterministic:
        loader = DataLoader(dataset, batch_size=batch_size, shuffle=False)  # the evaluation loader
    else:
        loader = DataLoader(dataset, batch_size=batch_size, shuffle=True)  # the training loader
    while True:
        yield from loader


def main():
    defaults = dict(lr=1e-4)
    defaults.update(data_defaults())
    parser = argparse.ArgumentParser()
    add_dict_to_argparser(parser, defaults)
    args = parser.parse_args()
    dist.init_process_group("gloo")
    model = DDP(torch.nn.Linear(4, 1))
    data = load_data(args.batch_size, set_name=args.set_name)
    for _ in range(10):
        (x,) = next(data)
        model(x).sum().backward()


if __name__ == "__main__":
    main()
"""


def test_dict_declared_options_given_through_shell_variables(tmp_path):
    launch = 'FLAGS="--set_name train --batch_size 8"\ntorchrun --nproc_per_node 4 train.py $FLAGS\n'
    found = _codes(lint_tree(tmp_path, {"train.py": DICT_OPTIONS, "run.sh": launch}), "DDP802")
    assert [f.location.line for f in found] == [_line(DICT_OPTIONS, "# the training loader")]


def test_its_twin_the_launch_names_another_set(tmp_path):
    launch = 'FLAGS="--set_name val --batch_size 8"\ntorchrun --nproc_per_node 4 train.py $FLAGS\n'
    found = _codes(lint_tree(tmp_path, {"train.py": DICT_OPTIONS, "run.sh": launch}), "DDP802")
    assert [f.location.line for f in found] == [_line(DICT_OPTIONS, "# the evaluation loader")]
