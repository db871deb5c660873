"""Shapes from session 23 (holdout 22 and blind round 41), each with its healthy twin, written in our own words."""

from __future__ import annotations

import ast

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
NNODES = int(os.environ.get("NNODES", 1))  # a job on several nodes
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


# -------------------------------------------------- a comprehension of the grads a module's parameters hold
GRADS = """
import torch, torch.distributed as dist
from torch import nn

class Bonus(nn.Module):
    def __init__(self):
        super().__init__()
        self.head = nn.Linear(4, 8)

class Algo:
    def __init__(self):
        self.bonus = Bonus()

    def average(self, batch):
        grads = {listed}
        flat = torch.cat(grads)
        dist.all_reduce(flat)
        return flat

dist.init_process_group("gloo")
algo = Algo()
batch = torch.randn(16, 4)
algo.bonus.head(batch).sum().backward()
algo.average(batch)
"""


def test_a_comprehension_of_the_grads_a_modules_parameters_hold_has_the_models_size(tmp_path):
    code = GRADS.replace("{listed}", "[p.grad.view(-1) for p in self.bonus.parameters() if p.grad is not None]")
    assert lines_of(lint_plain(tmp_path, code), "DDP807") == []


def test_its_twin_a_comprehension_filtered_by_the_data_has_the_datas_size(tmp_path):
    code = GRADS.replace("{listed}", "[row for row in batch if row.sum() > 0]")
    assert lines_of(lint_plain(tmp_path, code), "DDP807") == [16]


# -------------------------------------------------- a builder stored into a config dict the callers hand down
STORED_BUILDER = """
import deepspeed, torch
from torch.utils.data import DataLoader, DistributedSampler, TensorDataset

def build(**cfg):
    ds = TensorDataset(torch.randn(100, 4), torch.randn(100, 1))
    return DataLoader(ds, cfg["batch_size"]{sampler})

def make_cfg():
    return {"batch_size": 8, "epochs": 3}

def worker(cfg):
    loader = cfg["make_loader"](**cfg)
    net = torch.nn.Linear(4, 1)
    engine, _, _, _ = deepspeed.initialize(model=net, model_parameters=net.parameters(), config={})
    for epoch in range(cfg["epochs"]):
        for x, y in loader:
            engine.backward(torch.nn.functional.mse_loss(engine(x), y))
            engine.step()

def train(cfg):
    worker(cfg)

if __name__ == "__main__":
    cfg = make_cfg()
    cfg["make_loader"] = build
    train(cfg=cfg)
"""


def test_a_builder_stored_into_the_config_a_caller_hands_down_is_reached(tmp_path):
    assert lines_of(lint_plain(tmp_path, STORED_BUILDER.replace("{sampler}", "")), "DDP802") == [6]


def test_its_twin_the_stored_builder_with_a_distributed_sampler_is_healthy(tmp_path):
    code = STORED_BUILDER.replace("{sampler}", ", sampler=DistributedSampler(ds, shuffle=False)")
    assert lines_of(lint_plain(tmp_path, code), "DDP802") == []


# -------------------------------------------------- a DDP wrapper built and dropped at once
DROPPED = """
import time, torch, torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel

dist.init_process_group("gloo")
model = torch.nn.Linear(8, 2)
{wrap}
opt = torch.optim.SGD(model.parameters(), lr=0.1)
start = time.time()
for step in range(1000):
    if time.time() - start > 60:
        break
    opt.zero_grad()
    model(torch.randn(4, 8)).sum().backward()
    opt.step()
"""


def test_a_ddp_wrapper_dropped_at_once_leaves_a_plain_module_that_meets_no_one(tmp_path):
    assert lines_of(lint_plain(tmp_path, DROPPED.replace("{wrap}", "DistributedDataParallel(model)")), "DDP809") == []


def test_its_twin_the_kept_wrapper_all_reduces_and_the_clock_decides_alone(tmp_path):
    code = DROPPED.replace("{wrap}", "model = DistributedDataParallel(model)")
    assert lines_of(lint_plain(tmp_path, code), "DDP809") == [10]


# -------------------------------------------------- the script's own subclass of HF's Trainer is the framework
HF_SUBCLASS = """
import os, torch
from transformers import AutoModelForMaskedLM, HfArgumentParser, Trainer, TrainingArguments

class LossTrainer(Trainer):
    def compute_loss(self, model, inputs, return_outputs=False):
        out = model(**inputs)
        return (out.loss, out) if return_outputs else out.loss

(args,) = HfArgumentParser(TrainingArguments).parse_args_into_dataclasses()
model = AutoModelForMaskedLM.from_pretrained("bert-base-uncased")
table = {f"node{i}": torch.randn(4) for i in range(10)}
{save}
trainer = LossTrainer(model=model, args=args, train_dataset=[])
trainer.train()
"""


def test_a_save_beside_the_scripts_own_hf_trainer_subclass_runs_on_every_rank(tmp_path):
    assert lines_of(lint_plain(tmp_path, HF_SUBCLASS.replace("{save}", "torch.save(table, 'table.pt')")), "DDP806") == [12]


def test_its_twin_the_save_on_the_main_process_alone(tmp_path):
    code = HF_SUBCLASS.replace("{save}", "if args.process_index == 0:\n    torch.save(table, 'table.pt')")
    assert lines_of(lint_plain(tmp_path, code), "DDP806") == []


# -------------------------------------------------- a loader helper that forwards **kwargs
KWARGS_LOADER = """
import random, torch, torch.distributed as dist
from torch.utils.data import DataLoader, Dataset, DistributedSampler
from torch.nn.parallel import DistributedDataParallel as DDP

class Clips(Dataset):
    def __len__(self):
        return 512
    def __getitem__(self, i):
        start = random.randint(0, 100)
        return torch.arange(start, start + 8).float()

def get_loader(ds, **kwargs):
    return DataLoader(ds, sampler=DistributedSampler(ds), **kwargs)

dist.init_process_group("gloo")
torch.manual_seed(1234)
loader = get_loader(Clips(), batch_size=8, num_workers={workers})
model = DDP(torch.nn.Linear(8, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for epoch in range(3):
    loader.sampler.set_epoch(epoch)
    for x in loader:
        model(x).mean().backward()
        opt.step()
"""


def test_workers_given_through_a_helpers_kwargs_draw_alike_on_every_rank(tmp_path):
    assert lines_of(lint_plain(tmp_path, KWARGS_LOADER.replace("{workers}", "8")), "DDP808") == [13]


def test_its_twin_no_workers_through_the_kwargs(tmp_path):
    assert lines_of(lint_plain(tmp_path, KWARGS_LOADER.replace("{workers}", "0")), "DDP808") == []


# -------------------------------------------------- a worker seeding in a loader helper whose workers stay at 0
HELPER_WORKERS = """
import random, numpy as np, torch, torch.distributed as dist
from torch.utils.data import DataLoader, Dataset, DistributedSampler

class Crops(Dataset):
    def __len__(self):
        return 64
    def __getitem__(self, i):
        return torch.randn(4) * random.random()

def make_loader(ds, batch_size, seed, num_workers=0):
    def seed_worker(worker_id):
        np.random.seed(seed)
        random.seed(seed)
    return DataLoader(ds, batch_size=batch_size, sampler=DistributedSampler(ds),
                      num_workers=num_workers, worker_init_fn=seed_worker)

dist.init_process_group("gloo")
loader = make_loader(Crops(), 8, 1024{workers})
for epoch in range(2):
    loader.sampler.set_epoch(epoch)
    for x in loader:
        pass
"""


def test_a_worker_seeding_in_a_helper_whose_callers_leave_its_workers_at_zero_seeds_no_worker(tmp_path):
    assert lines_of(lint_plain(tmp_path, HELPER_WORKERS.replace("{workers}", "")), "DDP808") == []


def test_its_twin_a_caller_that_gives_workers(tmp_path):
    assert lines_of(lint_plain(tmp_path, HELPER_WORKERS.replace("{workers}", ", num_workers=4")), "DDP808") != []


# -------------------------------------------------- a helper's DDP wrapper whose every caller drops it
DROPPED_BY_CALLER = """
import torch, torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel

def wrap(model):
    model = DistributedDataParallel(model)
    return model

dist.init_process_group("gloo")
model = torch.nn.Linear(4, 1)
{wrap}
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for step in range(100):
    model(torch.randn(8, 4)).sum().backward()
    if step % 4 == 3:
        opt.step()
        opt.zero_grad()
"""


def test_a_helpers_ddp_wrapper_every_caller_drops_wraps_nothing(tmp_path):
    assert lines_of(lint_plain(tmp_path, DROPPED_BY_CALLER.replace("{wrap}", "wrap(model)")), "DDP805") == []


def test_its_twin_the_caller_keeps_the_wrapper_and_accumulates_without_no_sync(tmp_path):
    assert lines_of(lint_plain(tmp_path, DROPPED_BY_CALLER.replace("{wrap}", "model = wrap(model)")), "DDP805") != []


# -------------------------------------------------- a draw in a helper the dataset inherits from its local base
INHERITED_DRAW = """
import random, torch, torch.distributed as dist
from torch.utils.data import ConcatDataset, DataLoader, Dataset, DistributedSampler
from torch.nn.parallel import DistributedDataParallel as DDP

class Base(Dataset):
    def __init__(self, n):
        self.n = n
    def __len__(self):
        return self.n
    def negative(self):
        return float({negative})
    def suite(self, i):
        return torch.tensor([float(i), self.negative()])

class Coco(Base):
    def __getitem__(self, i):
        return self.suite(i)

dist.init_process_group("gloo")
torch.manual_seed(0)
ds = ConcatDataset([Coco(100), Coco(50)])
sampler = DistributedSampler(ds)
loader = DataLoader(ds, batch_size=8, sampler=sampler, num_workers=4)
model = DDP(torch.nn.Linear(2, 1))
for epoch in range(2):
    sampler.set_epoch(epoch)
    for x in loader:
        model(x).sum().backward()
"""


def test_a_draw_in_a_helper_the_dataset_inherits_makes_its_workers_draw(tmp_path):
    assert lines_of(lint_plain(tmp_path, INHERITED_DRAW.replace("{negative}", "random.randint(0, self.n - 1)")),
                    "DDP808") == [23]


def test_its_twin_the_inherited_helper_draws_nothing(tmp_path):
    assert lines_of(lint_plain(tmp_path, INHERITED_DRAW.replace("{negative}", "self.n - 1")), "DDP808") == []


# -------------------------------------------------- a self-sharding dataset class reached through a name or a table
TABLE_SHARDS = """
import torch, torch.distributed as dist
from torch.utils.data import DataLoader, Dataset, RandomSampler

class Tables(Dataset):
    def __init__(self, n, epoch=0):
        g = torch.Generator()
        g.manual_seed(epoch)
        order = torch.randperm(n, generator=g).tolist()
        self.rows = {rows}
    def __len__(self):
        return len(self.rows)
    def __getitem__(self, i):
        return torch.tensor([float(self.rows[i])])

TASKS = {"vanilla": {"dataset": Tables}}
dist.init_process_group("gloo")
model = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(1, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.1)
dataset_cls = {picked}
for epoch in range(3):
    ds = dataset_cls(1000, epoch=epoch)
    loader = DataLoader(ds, sampler=RandomSampler(ds), batch_size=8)
    for x in loader:
        model(x).sum().backward()
        opt.step()
"""
OWN_SHARE = "order[dist.get_rank()::dist.get_world_size()]"


def test_a_dataset_class_picked_from_a_table_that_keeps_its_rank_share_needs_no_sampler(tmp_path):
    for picked in ('TASKS["vanilla"]["dataset"]', "Tables"):
        code = TABLE_SHARDS.replace("{rows}", OWN_SHARE).replace("{picked}", picked)
        assert lines_of(lint_plain(tmp_path, code), "DDP802") == [], picked


def test_its_twin_the_picked_class_keeps_every_row(tmp_path):
    for picked in ('TASKS["vanilla"]["dataset"]', "Tables"):
        code = TABLE_SHARDS.replace("{rows}", "order").replace("{picked}", picked)
        assert lines_of(lint_plain(tmp_path, code), "DDP802") == [22], picked


# -------------------------------------------------- Python 3.12's f-string quoting, read by an older interpreter
def test_a_line_of_python_312_fstring_quoting_is_read_not_refused(tmp_path):
    import sys

    import pytest

    from ddpdoctor.core.errors import UsageError
    from ddpdoctor.lint.sources import _tree
    code = 'import torch\ncfg = {"lr": 1}\nprint(f"{cfg["lr"]}")\ntorch.save(cfg, "c.pt")\n'
    tree = _tree(tmp_path / "s.py", code)
    assert [type(n).__name__ for n in tree.body][-1] == "Expr"  # the save still read
    if sys.version_info < (3, 12):
        # read with its inner quotes swapped (session 25): nothing left out
        assert tree.skipped_lines == []
        assert "print" in ast.unparse(tree.body[2])
        # quotes of both kinds inside the braces: that line alone is read as `pass`
        both = code.replace('print(f"{cfg["lr"]}")', "print(f\"{cfg[\"lr\"] + cfg['lr']}\")")
        assert _tree(tmp_path / "s.py", both).skipped_lines == [3]
    with pytest.raises(UsageError):  # a file broken otherwise is still refused
        _tree(tmp_path / "s.py", code + "y = (\n")


def test_a_312_fstring_inside_a_call_over_two_lines_keeps_the_call(tmp_path):
    import sys

    from ddpdoctor.lint.sources import _tree
    code = ('import wandb\nhp = {"name": "x"}\nwandb.init(project="p", name=f"{hp["name"]}-run",\n'
            '           config=hp)\nprint("after")\n')
    tree = _tree(tmp_path / "s.py", code)
    assert len(tree.body) == 4  # the import, hp, the call over two lines, the print
    if sys.version_info < (3, 12):
        assert tree.skipped_lines == []


# -------------------------------------------------- the forward of an Accelerate-prepared model on the main process
PREPARED = """
import torch
from torch import nn
from accelerate import Accelerator

class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(8, 8)
        self.register_buffer("pos", torch.zeros(8))
    def forward(self, x):
        return self.proj(x + self.pos)

class Sampler:
    def sample(self, model, x):
        return model(x)

accelerator = Accelerator()
model = Net()
opt = torch.optim.AdamW(model.parameters())
loader = torch.utils.data.DataLoader(torch.randn(64, 8), batch_size=8)
model, opt, loader = accelerator.prepare(model, opt, loader)
for x in loader:
    accelerator.backward(model(x).pow(2).mean())
    opt.step()
    opt.zero_grad()
    if accelerator.is_main_process:
        with torch.no_grad():
            Sampler().sample(model={passed}, x=x)
"""


def test_the_forward_of_an_accelerate_prepared_buffered_model_on_the_main_process_is_a_broadcast(tmp_path):
    assert lines_of(lint_plain(tmp_path, PREPARED.replace("{passed}", "model")), "DDP801") == [15]


def test_its_twin_the_unwrapped_module_on_the_main_process(tmp_path):
    code = PREPARED.replace("{passed}", "accelerator.unwrap_model(model)")
    assert lines_of(lint_plain(tmp_path, code), "DDP801") == []


# -------------------------------------------------- a rank read through a config property with a one-process fallback
PROPERTY_RANK = """
import torch, torch.distributed as dist

class Config:
    def __init__(self):
        self.distributed = True

    @property
    def cuda_rank(self):
        if self.distributed:
            return {rank}
        return 0

config = Config()
dist.init_process_group("gloo")
model = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(4, 1))
for epoch in range(3):
    model(torch.randn(8, 4)).mean().backward()
    torch.save(model.state_dict(), f"model_{config.cuda_rank}_{epoch}.pt")
"""


def test_a_path_holding_a_property_that_returns_the_rank_is_each_ranks_own(tmp_path):
    assert lines_of(lint_plain(tmp_path, PROPERTY_RANK.replace("{rank}", "dist.get_rank()")), "DDP806") == []


def test_its_twin_a_property_that_returns_a_device_count(tmp_path):
    code = PROPERTY_RANK.replace("{rank}", "torch.cuda.device_count()")
    assert lines_of(lint_plain(tmp_path, code), "DDP806") == [18]


# -------------------------------------------------- an HF TrainerCallback from a module of its own, handed in a list
CALLBACK_SCRIPT = """
import transformers
from callbacks import SaveAdapter

model = transformers.AutoModelForCausalLM.from_pretrained("some/base")
trainer = transformers.Trainer(model=model, args=transformers.TrainingArguments(output_dir="out"),
                               callbacks=[SaveAdapter])
trainer.train()
"""
CALLBACK_MODULE = """
import os
from transformers import TrainerCallback

class SaveAdapter(TrainerCallback):
    def on_save(self, args, state, control, **kwargs):
        folder = os.path.join(args.output_dir, f"checkpoint-{state.global_step}")
        {save}
        return control
"""


def _callback_findings(tmp_path, save: str):
    return [f for f in lint_plain(tmp_path, CALLBACK_SCRIPT, callbacks=CALLBACK_MODULE.replace("{save}", save))
            if f.code == "DDP806"]


def test_a_trainer_callbacks_on_save_in_its_own_module_writes_on_every_rank(tmp_path):
    found = _callback_findings(tmp_path, 'kwargs["model"].save_pretrained(folder)')
    assert [(f.location.file.endswith("callbacks.py"), f.location.line) for f in found] == [(True, 8)]


def test_its_twin_the_hook_saves_on_the_main_process_alone(tmp_path):
    save = 'if state.is_world_process_zero:\n            kwargs["model"].save_pretrained(folder)'
    assert _callback_findings(tmp_path, save) == []


# -------------------------------------------------- accumulation under a finite-loss guard
FINITE_GUARD = """
import torch, torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel

dist.init_process_group("gloo")
model = DistributedDataParallel(torch.nn.Linear(8, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for step in range(100):
    loss = model(torch.randn(4, 8)).mean() / 4
    if {guard}:
        loss.backward()
        if step % 4 == 0:
            opt.step()
            opt.zero_grad()
"""


def test_accumulation_under_a_finite_loss_guard_still_all_reduces_every_backward(tmp_path):
    code = FINITE_GUARD.replace("{guard}", "not (torch.isinf(loss) or torch.isnan(loss))")
    assert lines_of(lint_plain(tmp_path, code), "DDP805") != []


def test_its_twin_a_guard_that_follows_the_step_counter_is_no_accumulation_of_every_pass(tmp_path):
    code = FINITE_GUARD.replace("{guard}", "step % 2 == 0 and torch.isfinite(loss)")
    assert lines_of(lint_plain(tmp_path, code), "DDP805") == []


# -------------------------------------------------- a saver object only rank 0 builds, called on every rank that holds one
RANK0_SAVER = """
import torch, torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

class Saver:
    def __init__(self, path):
        self.path = path
    def on_epoch_end(self, model):
        torch.save(model.module.state_dict(), self.path)

dist.init_process_group("gloo")
model = DDP(torch.nn.Linear(4, 1))
callbacks = []
{build}
for epoch in range(3):
    model(torch.randn(8, 4)).sum().backward()
    for cb in callbacks:
        cb.on_epoch_end(model)
"""


def test_a_saver_only_rank_zero_builds_writes_on_rank_zero_alone(tmp_path):
    code = RANK0_SAVER.replace("{build}", 'if dist.get_rank() == 0:\n    callbacks.append(Saver("ckpt.pt"))')
    assert lines_of(lint_plain(tmp_path, code), "DDP806") == []


def test_its_twin_every_rank_builds_the_saver(tmp_path):
    code = RANK0_SAVER.replace("{build}", 'callbacks.append(Saver("ckpt.pt"))')
    assert lines_of(lint_plain(tmp_path, code), "DDP806") == [8]


# -------------------------------------------------- a rank copy set to -1 where no process group is set up
RANK_COPY = """
import os, torch, torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, SequentialSampler, TensorDataset, DistributedSampler

local_rank = int(os.environ.get("LOCAL_RANK", -1))
if local_rank >= 0:
    global_rank = local_rank
    dist.init_process_group("gloo")
else:
    global_rank = -1
net = torch.nn.Linear(8, 2)
data = TensorDataset(torch.randn(256, 8))
if {test}:
    loader = DataLoader(data, batch_size=16, sampler=SequentialSampler(data))
else:
    net = DDP(net)
    loader = DataLoader(data, batch_size=16, sampler=DistributedSampler(data, shuffle=False))
opt = torch.optim.SGD(net.parameters(), lr=0.1)
for (x,) in loader:
    net(x).sum().backward()
    opt.step()
"""


def test_a_loader_where_the_rank_copy_is_minus_one_is_the_one_process_runs(tmp_path):
    assert lines_of(lint_plain(tmp_path, RANK_COPY.replace("{test}", "global_rank == -1")), "DDP802") == []


def test_its_twin_a_loader_on_the_side_of_a_test_every_run_may_take(tmp_path):
    assert lines_of(lint_plain(tmp_path, RANK_COPY.replace("{test}", "len(data) < 1000")), "DDP802") == [14]


# -------------------------------------------------- DistributedSampler imported under another name
ALIASED_SAMPLER = """
import torch, torch.distributed as dist
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler as DistSampler
from torch.nn.parallel import DistributedDataParallel as DDP

dist.init_process_group("gloo")
ds = TensorDataset(torch.randn(64, 4))
sampler = DistSampler(ds)
loader = DataLoader(ds, batch_size=8, sampler=sampler)
model = DDP(torch.nn.Linear(4, 1))
for epoch in range(3):
    {set_epoch}
    for (x,) in loader:
        model(x).sum().backward()
"""


def test_a_distributed_sampler_imported_under_another_name_still_needs_set_epoch(tmp_path):
    code = ALIASED_SAMPLER.replace("{set_epoch}", "pass")
    found = lint_plain(tmp_path, code)
    assert lines_of(found, "DDP804") == [8] and lines_of(found, "DDP802") == []


def test_its_twin_the_aliased_sampler_gets_its_epoch(tmp_path):
    assert lines_of(lint_plain(tmp_path, ALIASED_SAMPLER.replace("{set_epoch}", "sampler.set_epoch(epoch)")),
                    "DDP804") == []


# -------------------------------------------------- a branch an assert above rules out
ASSERTED = """
import argparse, torch, torch.distributed as dist

def reduce_mean(t):
    dist.all_reduce(t)
    return t

def run_plain(cfg):
    if dist.get_rank() == 0:
        reduce_mean(torch.ones(1))

def run_teacher(cfg):
    reduce_mean(torch.zeros(1))

if __name__ == "__main__":
    p = argparse.ArgumentParser()
    p.add_argument("--teacher", action="store_true")
    cfg = p.parse_args()
    {assertion}
    dist.init_process_group("gloo")
    if cfg.teacher:
        run_teacher(cfg)
    else:
        run_plain(cfg)
"""


def test_the_side_an_assert_above_rules_out_never_runs(tmp_path):
    assert lines_of(lint_plain(tmp_path, ASSERTED.replace("{assertion}", "assert cfg.teacher")), "DDP801") == []


def test_its_twin_without_the_assert_the_other_side_may_run(tmp_path):
    assert lines_of(lint_plain(tmp_path, ASSERTED.replace("{assertion}", "pass")), "DDP801") == [9]


# -------------------------------------------------- set_epoch in an endless iterator's __next__
ENDLESS = """
import torch, torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, DistributedSampler, TensorDataset

class Endless:
    def __init__(self, loader, sampler):
        self.loader, self.sampler, self.epoch = loader, sampler, 0
        self._next_epoch()
    def _next_epoch(self):
        self.sampler.set_epoch(self.epoch)
        self.it = iter(self.loader)
        {advance}
    def __next__(self):
        try:
            return next(self.it)
        except StopIteration:
            self._next_epoch()
            return next(self.it)

dist.init_process_group("gloo")
ds = TensorDataset(torch.randn(64, 8))
sampler = DistributedSampler(ds)
batches = Endless(DataLoader(ds, batch_size=4, sampler=sampler), sampler)
model = DDP(torch.nn.Linear(8, 1))
for step in range(1000):
    (x,) = next(batches)
    model(x).sum().backward()
"""


def test_set_epoch_in_an_endless_iterators_next_runs_every_pass(tmp_path):
    assert lines_of(lint_plain(tmp_path, ENDLESS.replace("{advance}", "self.epoch += 1")), "DDP804") == []



# -------------------------------------------------- how many a list holds is not what it holds
COUNTED = """
import torch, torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

dist.init_process_group("gloo")
net = DDP(torch.nn.Linear(4, 1))
kept = []
for step in range(10):
    out = net(torch.randn(8, 4))
    out.pow(2).mean().backward()
    kept.append(out.sum().item())
if {test}:
    every = [torch.zeros(1) for _ in range(dist.get_world_size())]
    dist.all_gather(every, torch.ones(1))
"""


def test_the_length_of_a_list_every_step_appends_to_is_the_same_on_every_rank(tmp_path):
    assert lines_of(lint_plain(tmp_path, COUNTED.replace("{test}", "len(kept) > 0")), "DDP809") == []


def test_its_twin_the_sum_of_the_ranks_own_numbers_differs(tmp_path):
    assert lines_of(lint_plain(tmp_path, COUNTED.replace("{test}", "sum(kept) > 0")), "DDP809") == [11]


def test_no_two_fact_gatherers_define_the_same_method():
    """FactBuilder is one class made of mixins: a helper named alike in two of them silently
    replaces the other's (a save rule's `_per_item` once shadowed a sampler rule's)."""
    from collections import defaultdict

    from ddpdoctor.lint.facts import FactBuilder
    owners = defaultdict(list)
    for klass in FactBuilder.__mro__:
        for name, value in vars(klass).items():
            if callable(value) and not name.startswith("__"):
                owners[name].append(klass.__name__)
    assert {name: where for name, where in owners.items() if len(where) > 1} == {}


# -------------------------------------------------- a DDP subclass's own switch around its forward
SUBCLASS_SWITCH = """
import torch, torch.distributed as dist
from torch import nn

class Wrapped(nn.parallel.DistributedDataParallel):
    def accumulate(self, enable):
        self.accumulating = enable
    def forward(self, *inputs):
        if {test}:
            return self.module(*inputs)
        return super().forward(*inputs)

def run_step(model, opt, samples):
    for i, x in enumerate(samples):
        model.accumulate(i < len(samples) - 1)
        model(x).sum().backward()
    opt.step()

dist.init_process_group("gloo")
model = Wrapped(nn.Linear(4, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for epoch in range(3):
    run_step(model, opt, [torch.randn(2, 4) for _ in range(4)])
"""


def test_a_ddp_subclass_switch_that_runs_the_plain_module_is_its_own_no_sync(tmp_path):
    assert lines_of(lint_plain(tmp_path, SUBCLASS_SWITCH.replace("{test}", "self.accumulating")), "DDP805") == []


def test_its_twin_a_subclass_whose_forward_never_reads_the_switch(tmp_path):
    assert lines_of(lint_plain(tmp_path, SUBCLASS_SWITCH.replace("{test}", "False")), "DDP805") == [15]


# -------------------------------------------------- one call on one side of a rank test, the same call in each way of the other
SAME_CALLS = """
import os, torch, torch.distributed as dist

def get_world_rank():
    if not dist.is_initialized():
        return 0
    return dist.get_rank()

class Trainer:
    def train(self, profiler=None):
        for step in range(10):
            dist.barrier()

dist.init_process_group("gloo")
world_rank = get_world_rank()
trainer = Trainer()
capture = [int(r) for r in os.environ.get("CAPTURE_RANKS", "0").split(",")]
if world_rank in capture:
    if os.environ.get("MODE") == "torch":
        with torch.profiler.profile() as profiler:
            trainer.train(profiler=profiler)
    elif os.environ.get("MODE") == "cuda":
        trainer.train(profiler=1)
else:
    {other}
"""


def test_the_same_call_on_both_sides_of_a_rank_test_balances_whatever_its_ways(tmp_path):
    assert lines_of(lint_plain(tmp_path, SAME_CALLS.replace("{other}", "trainer.train()")), "DDP801") == []


def test_its_twin_the_other_side_calls_nothing(tmp_path):
    assert lines_of(lint_plain(tmp_path, SAME_CALLS.replace("{other}", "pass")), "DDP801") != []


# -------------------------------------------------- processing steps handed to an iterable dataset
PIPELINE = """
import random
from functools import partial
import torch, torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, IterableDataset

def crop(samples, size=8):
    for s in samples:
        start = {start}
        yield s[start:start + size]

class Pipeline(IterableDataset):
    def __init__(self, rows, steps):
        self.rows, self.steps = rows, steps
    def __iter__(self):
        data = iter(self.rows[dist.get_rank()::dist.get_world_size()])
        for step in self.steps:
            data = step(data)
        return data

dist.init_process_group("gloo")
torch.manual_seed(1234)
net = DDP(torch.nn.Linear(8, 1))
loader = DataLoader(Pipeline([torch.randn(16) for _ in range(64)], [partial(crop, size=8)]), batch_size=4, num_workers=4)
for epoch in range(3):
    for x in loader:
        net(x).sum().backward()
"""


def test_a_processing_step_that_draws_makes_the_workers_draw(tmp_path):
    code = PIPELINE.replace("{start}", "random.randint(0, s.shape[0] - size)")
    assert lines_of(lint_plain(tmp_path, code), "DDP808") == [24]


def test_its_twin_a_step_that_draws_nothing(tmp_path):
    assert lines_of(lint_plain(tmp_path, PIPELINE.replace("{start}", "0")), "DDP808") == []


# -------------------------------------------------- a step helper whose backward runs in its own micro-batch loop
MICRO_HELPER = """
import torch, torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, TensorDataset

def load_data():
    loader = DataLoader(TensorDataset(torch.randn(256, 4)), batch_size=16, shuffle=True)
    while True:
        yield from loader

class Loop:
    def __init__(self, model, data):
        self.model, self.data = model, data
        self.opt = torch.optim.SGD(model.parameters(), lr=0.1)
    def forward_backward(self, batch):
        for i in range(0, batch.shape[0], 4):
            {micro}
    def run_step(self, batch):
        self.forward_backward(batch)
        self.opt.step()
    def run(self):
        for step in range(100):
            (batch,) = next(self.data)
            self.run_step(batch)

dist.init_process_group("gloo")
data = load_data()
Loop(DDP(torch.nn.Linear(4, 1)), data).run()
"""


def test_a_loader_feeding_a_step_whose_backward_is_in_a_micro_batch_loop_trains(tmp_path):
    code = MICRO_HELPER.replace("{micro}", "self.model(batch[i:i + 4]).sum().backward()")
    assert lines_of(lint_plain(tmp_path, code), "DDP802") == [6]


def test_its_twin_the_micro_loop_only_evaluates(tmp_path):
    code = MICRO_HELPER.replace("{micro}", "print(self.model(batch[i:i + 4]).sum().item())")
    found = [f for f in lint_plain(tmp_path, code) if f.code == "DDP802"]
    assert [f.severity.value for f in found] in ([], ["warning"])  # no backward: never an error


def test_a_saver_rank_zero_builds_after_an_isinstance_test_on_the_class_stays_rank_zeros(tmp_path):
    build = ('if dist.get_rank() == 0 and not any(isinstance(c, Saver) for c in callbacks):\n'
             '    callbacks.append(Saver("ckpt.pt"))')
    assert lines_of(lint_plain(tmp_path, RANK0_SAVER.replace("{build}", build)), "DDP806") == []


# -------------------------------------------------- set_epoch in a callback's on_epoch_begin
EPOCH_CALLBACK = """
import torch, torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, DistributedSampler, TensorDataset

class Callback:
    def on_epoch_begin(self, epoch):
        pass

class EpochSetter(Callback):
    def __init__(self, loader):
        self.loader = loader
    def on_epoch_begin(self, epoch):
        self.loader.sampler.set_epoch({epoch})

dist.init_process_group("gloo")
ds = TensorDataset(torch.randn(64, 4))
loader = DataLoader(ds, batch_size=8, sampler=DistributedSampler(ds))
callbacks = [Callback(), EpochSetter(loader)]
model = DDP(torch.nn.Linear(4, 1))
for epoch in range(5):
    for cb in callbacks:
        cb.on_epoch_begin(epoch)
    for (x,) in loader:
        model(x).sum().backward()
"""


def test_set_epoch_in_a_callbacks_epoch_hook_runs_every_epoch(tmp_path):
    assert lines_of(lint_plain(tmp_path, EPOCH_CALLBACK.replace("{epoch}", "epoch")), "DDP804") == []


def test_its_twin_the_hook_pins_the_epoch(tmp_path):
    assert lines_of(lint_plain(tmp_path, EPOCH_CALLBACK.replace("{epoch}", "0")), "DDP804") != []


def test_a_copy_of_the_prepared_models_name_is_the_wrapper_and_one_broadcast_is_reported_per_way(tmp_path):
    code = PREPARED.replace("        return model(x)", "        cond = model(x)\n        return model(x) - cond").replace(
        "    if accelerator.is_main_process:", "    plain = model\n    if accelerator.is_main_process:").replace(
        "{passed}", "plain")
    assert lines_of(lint_plain(tmp_path, code), "DDP801") == [15]


def test_a_dataset_class_picked_in_two_steps_from_a_table_of_tables(tmp_path):
    code = TABLE_SHARDS.replace("{rows}", OWN_SHARE).replace(
        "dataset_cls = {picked}", 'task = TASKS["vanilla"]\ndataset_cls = task["dataset"]')
    assert lines_of(lint_plain(tmp_path, code), "DDP802") == []
    code = TABLE_SHARDS.replace("{rows}", "order").replace(
        "dataset_cls = {picked}", 'task = TASKS["vanilla"]\ndataset_cls = task["dataset"]')
    assert lines_of(lint_plain(tmp_path, code), "DDP802") == [23]


# -------------------------------------------------- a draw only a non-default option or subset reaches
DEFAULT_PATH = """
import argparse, random, torch, torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, Dataset, DistributedSampler

class Frames:
    def __init__(self, subset="test"):
        self.subset = subset
    def jitter(self, clip):
        return clip * random.uniform(0.5, 1.5)
    def reorder(self, clip, order=0):
        if order == 0:
            return clip
        idx = list(range(len(clip)))
        random.shuffle(idx)
        return clip[idx]
    def read(self, clip):
        if self.subset == "train":
            clip = self.jitter(clip)
        return clip

class Clips(Dataset):
    def __init__(self, order=0):
        self.order, self.frames = order, Frames({subset})
    def __len__(self):
        return 64
    def __getitem__(self, i):
        clip = self.frames.read(torch.arange(8.0) + i)
        return self.frames.reorder(clip, order=self.order)

p = argparse.ArgumentParser()
p.add_argument("--order", type=int, default={order})
args = p.parse_args()
dist.init_process_group("gloo")
torch.manual_seed(0)
ds = Clips(order=args.order)
sampler = DistributedSampler(ds)
loader = DataLoader(ds, batch_size=4, sampler=sampler, num_workers=4)
net = DDP(torch.nn.Linear(8, 1))
for epoch in range(2):
    sampler.set_epoch(epoch)
    for x in loader:
        net(x).sum().backward()
"""


def test_draws_only_a_non_default_option_or_subset_reaches_leave_the_workers_drawing_nothing(tmp_path):
    code = DEFAULT_PATH.replace("{subset}", "").replace("{order}", "0")
    assert lines_of(lint_plain(tmp_path, code), "DDP808") == []


def test_its_twin_the_reader_built_for_training_draws(tmp_path):
    code = DEFAULT_PATH.replace("{subset}", 'subset="train"').replace("{order}", "0")
    assert lines_of(lint_plain(tmp_path, code), "DDP808") == [37]


def test_its_twin_the_option_defaults_to_the_shuffle(tmp_path):
    code = DEFAULT_PATH.replace("{subset}", "").replace("{order}", "2")
    assert lines_of(lint_plain(tmp_path, code), "DDP808") == [37]


# -------------------------------------------------- two readers handing a flag to each other
MUTUAL = """
import torch, torch.distributed as dist

def read_plain(f, binary):
    if binary:
        if f.read(1) == b"C":
            return read_packed(f, binary)
    return torch.zeros(3)

def read_packed(f, binary):
    if binary:
        return read_plain(f, binary) * 2
    return torch.ones(3)

dist.init_process_group("gloo")
with open("feats.ark", "rb") as f:
    x = read_plain(f, True)
{reduce}
"""


def test_a_flag_two_functions_hand_each_other_is_judged_not_refused(tmp_path):
    assert lines_of(lint_plain(tmp_path, MUTUAL.replace("{reduce}", "dist.all_reduce(x)")), "DDP801") == []


def test_its_twin_a_collective_under_a_rank_test_beside_them_is_still_found(tmp_path):
    code = MUTUAL.replace("{reduce}", "if dist.get_rank() == 0:\n    dist.all_reduce(x)")
    assert lines_of(lint_plain(tmp_path, code), "DDP801") == [18]


# -------------------------------------------------- one run_epoch(phase, loader) for training and validation
PHASES = """
import random, torch, torch.distributed as dist
from torch.utils.data import DataLoader, Dataset, DistributedSampler

class Poses(Dataset):
    def __len__(self):
        return 100
    def __getitem__(self, i):
        return torch.randn(3) * random.random()

def run_epoch(phase, model, opt, loader):
    for x in loader:
        loss = model(x).sum()
        if phase == "train":
            opt.zero_grad()
            loss.backward()
            opt.step()

dist.init_process_group("gloo")
torch.manual_seed(317)
model = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(3, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.1)
val_loader = DataLoader(Poses(), batch_size=1, shuffle=False, num_workers=1)
train_set = Poses()
sampler = DistributedSampler(train_set)
train_loader = DataLoader(train_set, batch_size=4, sampler=sampler, num_workers=4)
for epoch in range(3):
    sampler.set_epoch(epoch)
    run_epoch("train", model, opt, train_loader)
    with torch.no_grad():
        run_epoch({phase}, model, opt, val_loader)
"""


def test_a_loader_handed_in_the_phase_that_skips_the_backward_is_no_training_loader(tmp_path):
    assert lines_of(lint_plain(tmp_path, PHASES.replace("{phase}", '"val"')), "DDP808") == [25]


def test_its_twin_the_second_loader_handed_in_the_training_phase_trains_too(tmp_path):
    # (one seeding feeds both: one finding, told at the sharded loader, naming the other too)
    found = lint_plain(tmp_path, PHASES.replace("{phase}", '"train"'))
    assert lines_of(found, "DDP808") == [25]
    assert [f.evidence.get("other_loaders") for f in found if f.code == "DDP808"][0][0].endswith(":22")


# -------------------------------------------------- a tokenizer's files are no model state
TOKENIZER_SAVE = """
from transformers import AutoModelForCausalLM, AutoTokenizer, Trainer, TrainingArguments

tok = AutoTokenizer.from_pretrained("base")
model = AutoModelForCausalLM.from_pretrained("base")
trainer = Trainer(model=model, args=TrainingArguments(output_dir="out"))
trainer.train()
{save}
"""


def test_every_rank_writing_the_tokenizer_files_is_no_finding(tmp_path):
    code = TOKENIZER_SAVE.replace("{save}", 'trainer.tokenizer.save_pretrained("out")\ntok.save_pretrained("out")')
    assert lines_of(lint_plain(tmp_path, code), "DDP806") == []


def test_its_twin_every_rank_writing_the_model_is(tmp_path):
    assert lines_of(lint_plain(tmp_path, TOKENIZER_SAVE.replace("{save}", 'model.save_pretrained("out")')),
                    "DDP806") == [7]


# -------------------------------------------------- a loader built only when the caller hands no loader
TYPED = """
import torch, torch.distributed as dist
from torch.utils.data import DataLoader, DistributedSampler, TensorDataset
from torch.nn.parallel import DistributedDataParallel as DDP

def fit_epoch(net, opt, data):
    if type(data) == DataLoader:
        batches = data
    else:
        batches = DataLoader(data, batch_size=8, shuffle=False)
    for x, y in batches:
        opt.zero_grad()
        torch.nn.functional.mse_loss(net(x), y).backward()
        opt.step()

dist.init_process_group("gloo")
ds = TensorDataset(torch.randn(64, 4), torch.randn(64, 1))
net = DDP(torch.nn.Linear(4, 1))
opt = torch.optim.SGD(net.parameters(), lr=0.1)
smp = DistributedSampler(ds)
{handed}
for epoch in range(3):
    smp.set_epoch(epoch)
    fit_epoch(net, opt, ds)
"""


def test_the_loader_a_helper_builds_only_for_what_is_no_loader_never_runs_when_callers_hand_one(tmp_path):
    code = TYPED.replace("{handed}", "ds = DataLoader(ds, batch_size=8, sampler=smp)")
    assert lines_of(lint_plain(tmp_path, code), "DDP802") == []


def test_its_twin_a_caller_hands_the_dataset(tmp_path):
    assert lines_of(lint_plain(tmp_path, TYPED.replace("{handed}", "pass")), "DDP802") == [9]


# -------------------------------------------------- accumulation through `if k < accum: continue`
COUNTED_SKIP = """
import torch, torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

dist.init_process_group("gloo")
model = DDP(torch.nn.Linear(4, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.1)
accum, step, k = 8, 0, 0
while step < 100:
    {around}
    k += 1
    if k < accum:
        continue
    opt.step()
    opt.zero_grad()
    k = 0
    step += 1
"""


def test_a_counted_skip_before_the_step_is_accumulation(tmp_path):
    code = COUNTED_SKIP.replace("{around}", "model(torch.randn(2, 4)).sum().backward()")
    assert lines_of(lint_plain(tmp_path, code), "DDP805") == [9]


def test_its_twin_the_micro_steps_under_no_sync(tmp_path):
    code = COUNTED_SKIP.replace("{around}", "with model.no_sync() if k < accum - 1 else torch.enable_grad():\n"
                                            "        model(torch.randn(2, 4)).sum().backward()")
    assert lines_of(lint_plain(tmp_path, code), "DDP805") == []


# -------------------------------------------------- a save per parameter after the model's, in one block
PARTS_SAVED = """
import torch, torch.distributed as dist

dist.init_process_group("gloo")
model = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(4, 4))
for epoch in range(3):
    model(torch.randn(2, 4)).sum().backward()
    torch.save(model.module.state_dict(), f"model_{epoch}.pt")
    for name, p in model.module.{parts}:
        torch.save(p.grad, f"grad_{name}_{epoch}.pt")
"""


def test_saves_in_a_loop_over_the_models_parameters_are_one_block_with_the_models(tmp_path):
    assert lines_of(lint_plain(tmp_path, PARTS_SAVED.replace("{parts}", "named_parameters()")), "DDP806") == [7]


def test_its_twin_a_loop_over_something_else_is_a_write_of_its_own(tmp_path):
    code = PARTS_SAVED.replace("{parts}", "named_parameters()").replace(
        "for name, p in model.module.named_parameters():", "for name, p in zip(['a', 'b'], [model.module.weight, model.module.bias]):")
    assert lines_of(lint_plain(tmp_path, code), "DDP806") == [7, 9]


# -------------------------------------------------- a sampler helper's DistributedSampler handed to accelerate
SAMPLER_HELPER = """
import torch
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler
from accelerate import Accelerator

def pick_sampler(ds, acc):
    if acc.num_processes > 1:
        return {made}
    return None

acc = Accelerator()
ds = TensorDataset(torch.randn(64, 4), torch.randn(64, 1))
net = torch.nn.Linear(4, 1)
opt = torch.optim.SGD(net.parameters(), lr=0.1)
smp = pick_sampler(ds, acc)
dl = DataLoader(ds, batch_size=8, sampler=smp, shuffle=smp is None)
net, opt, dl = acc.prepare(net, opt, dl)
for x, y in dl:
    acc.backward(torch.nn.functional.mse_loss(net(x), y))
    opt.step()
"""


def test_a_helpers_distributed_sampler_handed_to_accelerate_shards_twice(tmp_path):
    code = SAMPLER_HELPER.replace("{made}", "DistributedSampler(ds, num_replicas=acc.num_processes, rank=acc.process_index)")
    assert lines_of(lint_plain(tmp_path, code), "DDP803") == [16]


def test_its_twin_the_helper_returns_a_plain_sampler(tmp_path):
    code = SAMPLER_HELPER.replace("{made}", "torch.utils.data.RandomSampler(ds)")
    assert lines_of(lint_plain(tmp_path, code), "DDP803") == []


# -------------------------------------------------- `sampler=val_sampler if val_sampler else None`
SET_WHERE_SET = """
import torch, torch.distributed as dist
from torch.utils.data import DataLoader, DistributedSampler, TensorDataset

dist.init_process_group("gloo")
model = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(4, 1))
train_set, val_set = TensorDataset(torch.randn(64, 4)), TensorDataset(torch.randn(16, 4))
tr_sampler = DistributedSampler(train_set)
val_sampler = DistributedSampler(val_set)
train_loader = DataLoader(train_set, sampler=tr_sampler if tr_sampler else None)
val_loader = DataLoader(val_set, sampler={val})

def evaluate(loader):
    model.eval()
    with torch.no_grad():
        return sum(model(x).sum().item() for (x,) in loader)

for epoch in range(3):
    tr_sampler.set_epoch(epoch)
    for (x,) in train_loader:
        model(x).sum().backward()
    evaluate(val_loader)
"""


def test_an_evaluation_sampler_handed_where_it_is_set_is_the_evaluation_loaders(tmp_path):
    code = SET_WHERE_SET.replace("{val}", "val_sampler if val_sampler else None")
    assert lines_of(lint_plain(tmp_path, code), "DDP804") == []


def test_its_twin_the_training_loop_reads_that_loader(tmp_path):
    code = SET_WHERE_SET.replace("{val}", "val_sampler if val_sampler else None").replace(
        "    evaluate(val_loader)", "    for (x,) in val_loader:\n        model(x).sum().backward()")
    assert lines_of(lint_plain(tmp_path, code), "DDP804") == [8]


# -------------------------------------------------- a poor man's distributed sampler: `if j % world != rank: continue`
ROUND_ROBIN = """
import torch, torch.distributed as dist

dist.init_process_group("gloo")
world, rank = dist.get_world_size(), dist.get_rank()
for j in range(64):
    if {skip}:
        continue
    emb = torch.randn(4)
    out = [torch.zeros(4) for _ in range(world)]
    dist.all_gather(out, emb)
"""


def test_a_round_robin_skip_gives_every_rank_its_turn(tmp_path):
    assert lines_of(lint_plain(tmp_path, ROUND_ROBIN.replace("{skip}", "(j % world) != rank")), "DDP801") == []


def test_its_twin_a_skip_on_the_rank_alone(tmp_path):
    assert lines_of(lint_plain(tmp_path, ROUND_ROBIN.replace("{skip}", "rank != 0")), "DDP801") == [10]


# -------------------------------------------------- an options field rank 0 alone resumes, bounding every rank's loop
RESUMED_FIELD = """
import argparse, torch, torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

p = argparse.ArgumentParser()
p.add_argument("--epoch_count", type=int, default=1)
p.add_argument("--resume", action="store_true")
opt = p.parse_args()
dist.init_process_group("gloo")
rank = dist.get_rank()
if {who}:
    if opt.resume:
        opt.epoch_count = int(open("last_epoch.txt").read())
model = DDP(torch.nn.Linear(4, 1))
for epoch in range(opt.epoch_count, 10):
    model(torch.randn(2, 4)).sum().backward()
"""


def test_an_options_field_rank_zero_alone_resumes_gives_the_ranks_different_loops(tmp_path):
    assert lines_of(lint_plain(tmp_path, RESUMED_FIELD.replace("{who}", "rank == 0")), "DDP809") == [14]


def test_its_twin_every_rank_resumes_the_field(tmp_path):
    assert lines_of(lint_plain(tmp_path, RESUMED_FIELD.replace("{who}", "True")), "DDP809") == []


# -------------------------------------------------- a NaN test on the rank's own summed loss around a barrier
NAN_SUM = """
import math, torch, torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

dist.init_process_group("gloo")
model = DDP(torch.nn.Linear(4, 1))
tot_loss = 0.0
for step in range(100):
    loss = model(torch.randn(2, 4)).sum()
    loss.backward()
    tot_loss += {summed}
    if step % 10 == 0:
        if not math.isnan(tot_loss):
            dist.barrier()
        tot_loss = 0.0
"""


def test_a_nan_test_on_the_ranks_own_summed_loss_around_a_barrier_splits_the_ranks(tmp_path):
    assert lines_of(lint_plain(tmp_path, NAN_SUM.replace("{summed}", "loss.item()")), "DDP809") == [12]


def test_its_twin_a_sum_of_a_constant_is_the_same_everywhere(tmp_path):
    assert lines_of(lint_plain(tmp_path, NAN_SUM.replace("{summed}", "1.0")), "DDP809") == []


def test_a_file_broken_past_its_312_fstrings_is_refused_at_the_real_error(tmp_path):
    import sys

    import pytest

    from ddpdoctor.core.errors import UsageError
    from ddpdoctor.lint.sources import _tree
    code = 'cfg = {"lr": 1}\nprint(f"{cfg["lr"]}")\ny = (\n'
    with pytest.raises(UsageError) as refused:
        _tree(tmp_path / "s.py", code)
    if sys.version_info < (3, 12):
        assert ":3: not valid Python" in str(refused.value)  # the unclosed `(`, not the f-string
