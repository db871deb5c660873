"""Shapes from the third blind round (session 14), each with its twin: a loader whose plain sampler
draws with replacement (RF-DETR's tiny-dataset fallback); a helper shared by training and
evaluation that turns gradients off with `torch.set_grad_enabled(is_training)` (VALL-E); names
unpacked from a returned tuple, typed by their position (Sockeye); a train-named loader read only
with gradients off to build a feature cache (CLIP-ReID); and a config attribute cleared to None on
the other ranks, whose `is not None` test is then a rank test (FrameDiff)."""

from __future__ import annotations

import textwrap

from ddpdoctor.lint.driver import gather
from tests.unit.test_lint_real_patterns import codes, lint

WITH_REPLACEMENT = """
rank = dist.get_rank()
torch.manual_seed(1234{by_rank})
ds = TensorDataset(torch.randn(12, 8))
model = DDP(torch.nn.Linear(8, 1))
loader = DataLoader(ds, batch_size=4, sampler=RandomSampler(ds{how}))
for (x,) in loader:
    model(x).sum().backward()
"""


def test_a_sampler_drawing_with_replacement_is_a_warning_that_says_why(tmp_path):
    found, _ = lint(tmp_path, WITH_REPLACEMENT.format(how=", replacement=True, num_samples=20", by_rank=""))
    ddp802 = [f for f in found if f.code == "DDP802"]
    assert [(f.severity.value, f.location.line) for f in ddp802] == [("warning", 11)]
    assert "draws with replacement" in ddp802[0].message


def test_ranks_seeded_apart_drawing_with_replacement_draw_their_own_samples(tmp_path):
    # session 15 (RoMa): a sampler that draws, on ranks whose generators differ, is no DDP802
    found, _ = lint(tmp_path, WITH_REPLACEMENT.format(how=", replacement=True, num_samples=20", by_rank=" + rank"))
    assert [f for f in found if f.code == "DDP802"] == []


def test_a_shuffling_sampler_over_the_whole_set_stays_an_error(tmp_path):
    found, _ = lint(tmp_path, WITH_REPLACEMENT.format(how="", by_rank=" + rank"))
    assert [(f.code, f.severity.value) for f in found if f.code == "DDP802"] == [("DDP802", "error")]


SHARED_STEP = """
from torch import nn
rank = dist.get_rank()
model = DDP(nn.Sequential(nn.Linear(4, 4), nn.BatchNorm1d(4)))

def compute_loss(model, x, is_training):
    with torch.set_grad_enabled(is_training):
        return model(x).sum()

for step in range(100):
    compute_loss(model, torch.randn(8, 4), is_training=True).backward()
    if step % 10 == 0:
        if rank == 0:
            compute_loss(model, torch.randn(8, 4), is_training={flag})
        dist.barrier()
"""


def test_a_helper_called_with_gradients_off_on_rank_0_is_the_no_grad_warning(tmp_path):
    found, _ = lint(tmp_path, SHARED_STEP.format(flag="False"))
    ddp801 = [f for f in found if f.code == "DDP801"]
    assert [(f.severity.value, f.location.line) for f in ddp801] == [("warning", 19)]
    assert "set_grad_enabled(is_training=False)" in ddp801[0].message


def test_with_gradients_on_it_stays_an_error(tmp_path):
    found, _ = lint(tmp_path, SHARED_STEP.format(flag="True"))
    assert [(f.code, f.severity.value) for f in found if f.code == "DDP801"] == [("DDP801", "error")]


UNPACKED = """
import json

class Info:
    def save(self, path):
        with open(path, "w") as f:
            json.dump({{}}, f)

class Shards:
    def save(self, path):
        torch.save({{}}, path)

def load_data():
    return {returned}

data, info = load_data()
info.save("data.info")
model = DDP(torch.nn.Linear(4, 1))
"""


def test_an_unpacked_name_is_typed_by_its_own_position(tmp_path):
    found, _ = lint(tmp_path, UNPACKED.format(returned="Shards(), Info()"))
    assert [f.code for f in found if f.code == "DDP806"] == []


def test_the_other_position_is_the_writer(tmp_path):
    found, _ = lint(tmp_path, UNPACKED.format(returned="Info(), Shards()"))
    assert [(c, s, line) for c, s, line in codes(found) if c == "DDP806"] == [("DDP806", "warning", 16)]


FEATURE_CACHE = """
encoder, head = torch.nn.Linear(8, 4), DDP(torch.nn.Linear(4, 2))
opt = torch.optim.SGD(head.parameters(), lr=0.1)
train_loader_feats = DataLoader(TensorDataset(torch.randn(64, 8)), batch_size=8, shuffle=True)
{reading}
"""
CACHED = """
with torch.no_grad():
    cache = [encoder(x) for x, in train_loader_feats]
feats = torch.cat(cache)
for i in range(0, len(feats), 16):
    head(feats[i:i + 16]).sum().backward()
    opt.step()
"""
TRAINED = """
for x, in train_loader_feats:
    head(encoder(x)).sum().backward()
    opt.step()
"""


def test_a_train_named_loader_read_only_without_gradients_is_not_a_training_loader(tmp_path):
    found, _ = lint(tmp_path, FEATURE_CACHE.format(reading=CACHED))
    assert [f.code for f in found if f.code == "DDP802"] == []


def test_the_same_loader_trained_on_is(tmp_path):
    found, _ = lint(tmp_path, FEATURE_CACHE.format(reading=TRAINED))
    assert [(c, s) for c, s, _ in codes(found) if c == "DDP802"] == [("DDP802", "error")]


CLEARED = """
import types

class Experiment:
    def __init__(self, conf):
        self.conf = conf
        {clearing}
        self.model = DDP(torch.nn.Linear(4, 4))

    def train_step(self, step):
        if self.conf.ckpt_dir is not None and step % 100 == 0:
            torch.save(self.model.module.state_dict(), f"{{self.conf.ckpt_dir}}/step_{{step}}.pth")

exp = Experiment(types.SimpleNamespace(ckpt_dir="ckpt"))
for step in range(1000):
    exp.train_step(step)
"""


def test_a_folder_cleared_on_the_other_ranks_makes_its_test_a_rank_test(tmp_path):
    found, _ = lint(tmp_path, CLEARED.format(clearing="if dist.get_rank() != 0:\n            self.conf.ckpt_dir = None"))
    assert [f.code for f in found if f.code == "DDP806"] == []


def test_cleared_on_every_rank_by_an_option_it_is_no_rank_test(tmp_path):
    found, _ = lint(tmp_path, CLEARED.format(clearing="if conf.no_save:\n            self.conf.ckpt_dir = None"))
    assert [(c, s) for c, s, _ in codes(found) if c == "DDP806"] == [("DDP806", "warning")]


SPAWNED_SAVE = """
import torch.multiprocessing as mp

def worker(gpu, ngpus, node):
    dist.init_process_group("gloo", rank={rank}, world_size=2 * ngpus)
    model = DDP(torch.nn.Linear(4, 4))
    model(torch.randn(2, 4)).sum().backward()
    torch.save(model.module.state_dict(), "/shared/final_{{}}.pt".format({key}))

if __name__ == "__main__":
    mp.spawn(worker, nprocs=2, args=(2, 0))
"""


def test_a_path_keyed_by_the_spawn_index_of_a_multi_node_script_has_one_writer_per_node(tmp_path):
    found, _ = lint(tmp_path, SPAWNED_SAVE.format(rank="node * ngpus + gpu", key="gpu"))
    ddp806 = [f for f in found if f.code == "DDP806"]
    assert [(f.severity.value, f.location.line) for f in ddp806] == [("warning", 13)]
    assert "rank within a node" in ddp806[0].message


def test_keyed_by_the_global_rank_it_is_clean(tmp_path):
    found, _ = lint(tmp_path, SPAWNED_SAVE.format(rank="node * ngpus + gpu", key="dist.get_rank()"))
    assert [f.code for f in found if f.code == "DDP806"] == []


def test_keyed_by_the_spawn_index_of_a_one_node_script_it_is_clean(tmp_path):
    found, _ = lint(tmp_path, SPAWNED_SAVE.format(rank="gpu", key="gpu"))
    assert [f.code for f in found if f.code == "DDP806"] == []


DEEP = """
def reduce_mean(t):
    if distributed:
        dist.all_reduce(t)
    return t

class Running:
    def __init__(self):
        self.total = torch.zeros(1)
    def get(self):
        return reduce_mean(self.total)

class Maps:
    def __init__(self):
        self.mean = Running()
    def dataset(self):
        return {{"mean": self.mean.get()}}

class Metrics:
    def __init__(self):
        self.maps = Maps()
    def dataset(self):
        return self.maps.dataset()

class Report:
    def __init__(self):
        self.metrics = Metrics()
    def dataset(self):
        return self.metrics.dataset()

class Parts:
    def __init__(self):
        self.parts = [Report()]
        self.parts += [Metrics()]
    def dataset(self):
        found = []
        for part in self.parts:
            if hasattr(part, "dataset"):
                found.append(part.dataset())
        return found

distributed = True
reduce_mean(torch.ones(1))  # every rank, every step
{call}
"""


def test_a_collective_five_calls_below_a_rank_test_is_found_at_the_call(tmp_path):
    found, _ = lint(tmp_path, DEEP.format(call="if dist.get_rank() == 0:\n    Report().dataset()"))
    assert [(c, s) for c, s, _ in codes(found) if c == "DDP801"] == [("DDP801", "error")]
    ddp801 = next(f for f in found if f.code == "DDP801")
    lines = (tmp_path / "train.py").read_text().splitlines()
    # at the guarded call: reduce_mean runs on every rank elsewhere
    assert lines[ddp801.location.line - 1] == "    Report().dataset()"


def test_through_the_items_of_a_list_of_parts(tmp_path):
    source = DEEP.format(call="if dist.get_rank() == 0:\n    Parts().dataset()")
    found, _ = lint(tmp_path, source)
    assert [c for c, _, _ in codes(found) if c == "DDP801"] == ["DDP801"]


def test_every_rank_asking_is_clean(tmp_path):
    found, _ = lint(tmp_path, DEEP.format(call="Report().dataset()"))
    assert [f.code for f in found if f.code == "DDP801"] == []


PROCESS_PER_GPU = """
from torch.multiprocessing import Process

class Worker:
    def __init__(self, global_rank):
        self.global_rank = global_rank
    def train(self, step):
        if self.global_rank == 0:
            dist.barrier()
        if self.global_rank == 0:
            torch.save({{}}, "last.pt")

def load_worker(local_rank, gpus_per_node, node):
    global_rank = {global_rank}
    Worker(global_rank).train(0)

def main():
    gpus, rank = torch.cuda.device_count(), torch.cuda.current_device()
    if gpus > 1:
        for local_rank in range(gpus):
            Process(target=load_worker, args=(local_rank, gpus, 0)).start()
    else:
        load_worker(local_rank=rank, gpus_per_node=1, node=0)

main()
NNODES = int(os.environ.get("NNODES", 1))  # a job on several nodes
"""


def test_a_rank_made_from_the_node_offset_through_a_worker_object_is_the_global_rank(tmp_path):
    found, _ = lint(tmp_path, PROCESS_PER_GPU.format(global_rank="node * gpus_per_node + local_rank"))
    assert [(c, s) for c, s, _ in codes(found) if c in ("DDP801", "DDP806")] == [("DDP801", "error")]


def test_the_local_rank_alone_saves_once_per_node(tmp_path):
    found, _ = lint(tmp_path, PROCESS_PER_GPU.format(global_rank="local_rank"))
    assert [(c, s) for c, s, _ in codes(found) if c in ("DDP801", "DDP806")] == [
        ("DDP801", "error"), ("DDP806", "warning")]


NAN_HELPER = """
import numpy as np
model = DDP(torch.nn.Linear(8, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.1)

def train_batch(x, fp16):
    if fp16:
        with torch.autocast("cpu"):
            loss = model(x).mean()
            loss_val = {value}
            if np.isnan(loss_val):
                opt.zero_grad()
                return loss_val
    else:
        loss = model(x).mean()
    loss.backward()
    opt.step()
    return loss.item()

for step in range(100):
    train_batch(torch.randn(4, 8), fp16=True)
"""


def test_a_step_helper_returning_before_its_backward_on_a_nan_loss_is_ddp809(tmp_path):
    found, _ = lint(tmp_path, NAN_HELPER.format(value="loss.item()"))
    assert [(c, s, line) for c, s, line in codes(found) if c == "DDP809"] == [("DDP809", "warning", 16)]


def test_on_an_all_reduced_loss_it_is_clean(tmp_path):
    value = "loss.detach().clone()\n            dist.all_reduce(loss_val)"
    found, _ = lint(tmp_path, NAN_HELPER.format(value=value))
    assert [f.code for f in found if f.code == "DDP809"] == []


HASATTR_SYNC = """
from contextlib import nullcontext
model = DDP(torch.nn.Linear(8, 1))
opt, accum = torch.optim.SGD(model.parameters(), lr=0.1), 4
for step in range(100):
    if (step + 1) % accum != 0:
        ctx = model.no_sync() if {test} else nullcontext()
        with ctx:
            model(torch.randn(4, 8)).sum().backward()
    else:
        model(torch.randn(4, 8)).sum().backward()
        opt.step()
        opt.zero_grad()
"""


def test_no_sync_behind_hasattr_covers_every_ddp_model(tmp_path):
    found, _ = lint(tmp_path, HASATTR_SYNC.format(test='hasattr(model, "no_sync")'))
    assert [f.code for f in found if f.code == "DDP805"] == []


def test_no_sync_behind_a_configuration_switch_leaves_the_other_side(tmp_path):
    found, _ = lint(tmp_path, HASATTR_SYNC.format(test="use_fsdp"))
    assert [(c, s) for c, s, _ in codes(found) if c == "DDP805"] == [("DDP805", "warning")]


def test_a_trainer_loaded_by_a_run_time_name_leaves_the_verdict_incomplete(tmp_path):
    from ddpdoctor.lint.driver import unreached

    source = """
    import importlib
    def get_obj(path):
        module, name = path.rsplit(".", 1)
        return getattr(importlib.import_module(module), name)
    trainer = get_obj(config["trainer"])(config)
    trainer.train()
    """
    trainer = """
    import torch.distributed as dist
    class Trainer:
        def __init__(self, config):
            dist.init_process_group("gloo")
    """
    path = tmp_path / "main.py"
    path.write_text(textwrap.dedent(source))
    (tmp_path / "my_trainer.py").write_text(textwrap.dedent(trainer))
    facts = gather(str(path))
    notes, missing = unreached(facts)
    assert facts.unreached_setup is not None and facts.unreached_setup.line == 5
    assert "my_trainer.py" in str(facts.unreached_setup) and missing


def test_with_the_module_named_in_the_source_it_is_read_and_judged(tmp_path):
    source = """
    import importlib
    mod = importlib.import_module("my_trainer")
    trainer = mod.Trainer(config)
    """
    trainer = """
    import torch.distributed as dist
    class Trainer:
        def __init__(self, config):
            dist.init_process_group("gloo")
    """
    path = tmp_path / "main.py"
    path.write_text(textwrap.dedent(source))
    (tmp_path / "my_trainer.py").write_text(textwrap.dedent(trainer))
    facts = gather(str(path))
    assert facts.unreached_setup is None and facts.distributed is not None


TRAINER_PACKAGE = """
    import torch

    class {name}:
        def __init__(self, model):
            self.model = model
        def fit(self):
            torch.save(self.model.state_dict(), "ckpt.pth")
"""


def test_a_trainer_got_by_name_from_a_package_that_re_exports_it_is_judged(tmp_path):
    (tmp_path / "trainers").mkdir()
    (tmp_path / "trainers" / "__init__.py").write_text("from trainers.base import *\n")
    found, _ = lint(tmp_path, """
        import importlib
        model = DDP(torch.nn.Linear(4, 4))
        getattr(importlib.import_module("trainers"), "Trainer")(model).fit()
        """, trainers__base=TRAINER_PACKAGE.format(name="Trainer"))
    assert [(c, s) for c, s, _ in codes(found) if c == "DDP806"] == [("DDP806", "warning")]


def test_so_is_one_whose_name_is_built_at_run_time(tmp_path):
    found, _ = lint(tmp_path, """
        import importlib
        model = DDP(torch.nn.Linear(4, 4))
        name = choose()
        getattr(importlib.import_module("trainers"), name + "Trainer")(model).fit()
        """, trainers=TRAINER_PACKAGE.format(name="BPRTrainer"))
    assert [(c, s) for c, s, _ in codes(found) if c == "DDP806"] == [("DDP806", "warning")]


def test_a_config_field_that_names_no_rank_leaves_the_path_shared(tmp_path):
    source = """
    config = {{"model": "S3Rec", "local_rank": int(os.environ["LOCAL_RANK"])}}
    model = DDP(torch.nn.Linear(4, 4))
    torch.save(model.module.state_dict(), "{{}}.pth".format(config["{field}"]))
    """
    found, _ = lint(tmp_path, source.format(field="model"))
    assert [(c, s) for c, s, _ in codes(found) if c == "DDP806"] == [("DDP806", "warning")]
    found, _ = lint(tmp_path, source.format(field="local_rank"))
    assert [c for c, _, _ in codes(found) if c == "DDP806"] == []


CONSOLIDATE = """
from torch.distributed.optim import ZeroRedundancyOptimizer

def save(model, optimizer, path):
    optimizer.consolidate_state_dict()
    torch.save({{"model": model.state_dict(), "optim": optimizer.state_dict()}}, path)

model = DDP(torch.nn.Linear(8, 1))
optimizer = {optimizer}
for step in range(1, 1001):
    model(torch.randn(4, 8)).sum().backward()
    optimizer.step()
    if step % 100 == 0 {guard}:
        save(model.module, optimizer, "ckpt.pt")
"""


def test_a_sharded_optimizer_consolidated_on_rank_0_alone_is_ddp801(tmp_path):
    zero = "ZeroRedundancyOptimizer(model.parameters(), optimizer_class=torch.optim.SGD, lr=0.1)"
    found, _ = lint(tmp_path, CONSOLIDATE.format(optimizer=zero, guard="and dist.get_rank() == 0"))
    assert [(c, s) for c, s, _ in codes(found) if c == "DDP801"] == [("DDP801", "error")]
    found, _ = lint(tmp_path, CONSOLIDATE.format(optimizer="build_optimizer(model)", guard="and dist.get_rank() == 0"))
    assert [(c, s) for c, s, _ in codes(found) if c == "DDP801"] == [("DDP801", "warning")]


def test_consolidated_on_every_rank_it_is_clean(tmp_path):
    zero = "ZeroRedundancyOptimizer(model.parameters(), optimizer_class=torch.optim.SGD, lr=0.1)"
    found, _ = lint(tmp_path, CONSOLIDATE.format(optimizer=zero, guard=""))
    assert [c for c, _, _ in codes(found) if c == "DDP801"] == []


KEYED_RANK = """
KEY_RANK = "rank"

def run_epochs(model, config):
    rank = config[KEY_RANK]
    def write_checkpoint(epoch):
        if config["is_ddp"] and rank != 0:
            return
        torch.save(model.state_dict(), f"out/checkpoint_{{epoch}}.pth")
    for epoch in range(10):
        model(torch.randn(2, 4)).sum().backward()
        write_checkpoint(epoch)

config = {{"is_ddp": True}}
config[KEY_RANK] = {rank}
run_epochs(DDP(torch.nn.Linear(4, 1)), config)
"""


def test_a_rank_kept_under_a_key_named_by_a_constant_is_a_rank(tmp_path):
    found, _ = lint(tmp_path, KEYED_RANK.format(rank='int(os.environ["RANK"])'))
    assert [c for c, _, _ in codes(found) if c == "DDP806"] == []


def test_a_key_holding_no_rank_is_no_rank_test(tmp_path):
    found, _ = lint(tmp_path, KEYED_RANK.format(rank="0").replace('KEY_RANK = "rank"', 'KEY_RANK = "verbose"'))
    assert [(c, s) for c, s, _ in codes(found) if c == "DDP806"] == [("DDP806", "warning")]


UNUSED_SYNC = """
import contextlib

@contextlib.contextmanager
def ddp_sync(module, sync):
    if sync:
        yield
    else:
        with module.no_sync():
            yield

model = DDP(torch.nn.Linear(4, 1))
optimizer = torch.optim.Adam(model.parameters())
for step in range(100):
    optimizer.zero_grad()
    for micro in range(4):
        {body}
    optimizer.step()
"""


def test_a_no_sync_helper_nothing_calls_does_not_cover_the_accumulation(tmp_path):
    found, _ = lint(tmp_path, UNUSED_SYNC.format(body="model(torch.randn(8, 4)).sum().backward()"))
    assert [(c, s) for c, s, _ in codes(found) if c == "DDP805"] == [("DDP805", "warning")]


def test_called_around_the_backward_it_does(tmp_path):
    body = "with ddp_sync(model, micro == 3):\n            model(torch.randn(8, 4)).sum().backward()"
    found, _ = lint(tmp_path, UNUSED_SYNC.format(body=body))
    assert [c for c, _, _ in codes(found) if c == "DDP805"] == []


COUNTER_AHEAD = """
def main(rank, data, val_data, n_iter):
    net = DDP(torch.nn.Linear(4, 1))
    opt = torch.optim.SGD(net.parameters(), lr=0.1)
    sampler = DistributedSampler(data)
    loader = DataLoader(data, batch_size=8, sampler=sampler)
    it, epoch = 0, 0
    while it <= n_iter:
        epoch += 1
        sampler.set_epoch(epoch)
        for x in loader:
            opt.zero_grad()
            net(x).sum().backward()
            opt.step()
            it += len(x)
        if rank == 0:
            with torch.no_grad():
                for x in val_data:
                    net.module(x)
                    {counting}

torch.multiprocessing.spawn(main, args=(torch.randn(64, 4), torch.randn(16, 4), 10_000), nprocs=2)
"""


def test_a_counter_rank_0_steps_further_decides_the_loop_on_every_rank(tmp_path):
    found, _ = lint(tmp_path, COUNTER_AHEAD.format(counting="it += len(x)"))
    ddp809 = [f for f in found if f.code == "DDP809"]
    assert [(f.severity.value, f.location.line) for f in ddp809] == [("error", 13)]
    assert "steps it further" in ddp809[0].message


def test_a_counter_of_its_own_for_validation_is_clean(tmp_path):
    found, _ = lint(tmp_path, COUNTER_AHEAD.format(counting="seen = len(x)"))
    assert [f.code for f in found if f.code == "DDP809"] == []


MODULE_TRAIN = """
class Trainer:
    def __init__(self, n):
        self.model = DDP(build_model())
        self.opt = torch.optim.SGD(self.model.parameters(), lr=0.1)
        self.setup_data(n)

    def setup_data(self, n):
        data = TensorDataset(torch.randn(n, 4))
        self.sampler = DistributedSampler(data)
        self.loader = DataLoader(data, batch_size=8, sampler=self.sampler)
        self.sampler.set_epoch(0)

    def train(self, new_n=None):
        if new_n:
            self.setup_data(new_n)
        for epoch in range(10):
            self.sampler.set_epoch(epoch)
            self.train_one_epoch()

    def train_one_epoch(self):
        self.model.{mode}()
        for (x,) in self.loader:
            self.model(x).sum().backward()
            self.opt.step()

def build_model():
    return torch.nn.Linear(4, 1)

Trainer(64).train()
"""


def test_a_models_own_train_is_no_call_of_the_trainers_train(tmp_path):
    found, _ = lint(tmp_path, MODULE_TRAIN.format(mode="train"))
    assert [f.code for f in found if f.code == "DDP804"] == []


OFFSET_RANK = """
import argparse
p = argparse.ArgumentParser()
p.add_argument("--local_rank", type=int, default=-1)
p.add_argument("--node_index", type=int, default=0)
p.add_argument("--gpu_per_node", type=int, default=8)
args = p.parse_args()
{offset}
model = DDP(torch.nn.Linear(4, 4))
if args.local_rank in [-1, 0]:
    torch.save(model.module.state_dict(), "ckpt.pt")
"""


def test_a_local_rank_offset_by_its_node_is_the_global_rank(tmp_path):
    found, _ = lint(tmp_path, OFFSET_RANK.format(offset="args.local_rank += args.node_index * args.gpu_per_node"))
    assert [c for c, _, _ in codes(found) if c == "DDP806"] == []


def test_without_the_offset_it_saves_once_per_node(tmp_path):
    found, _ = lint(tmp_path, OFFSET_RANK.format(offset="pass"))
    assert [(c, s) for c, s, _ in codes(found) if c == "DDP806"] == [("DDP806", "warning")]


PER_HOST = """
import socket
def make_logdir(name):
    return os.path.join("runs", {folder})
local_rank = int(os.environ["LOCAL_RANK"])
log_dir = make_logdir("gpt2")
model = DDP(torch.nn.Linear(4, 4))
if local_rank == 0:
    torch.save(model.module.state_dict(), log_dir + "/model.bin")
NNODES = int(os.environ.get("NNODES", 1))  # a job on several nodes
"""


def test_a_per_node_writer_of_a_folder_named_after_its_host_writes_its_own_file(tmp_path):
    found, _ = lint(tmp_path, PER_HOST.format(folder='socket.gethostname() + "_" + name'))
    assert [c for c, _, _ in codes(found) if c == "DDP806"] == []


def test_a_shared_folder_has_one_writer_per_node(tmp_path):
    found, _ = lint(tmp_path, PER_HOST.format(folder='"latest_" + name'))
    assert [(c, s) for c, s, _ in codes(found) if c == "DDP806"] == [("DDP806", "warning")]


def test_a_namespace_packages_dotted_call_is_followed(tmp_path):
    (tmp_path / "nspkg").mkdir()
    (tmp_path / "nspkg" / "train.py").write_text(textwrap.dedent("""
        import torch
        import torch.distributed as dist
        def train(path):
            dist.init_process_group("gloo")
            model = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(4, 4))
            torch.save(model.module.state_dict(), path)
        """))
    path = tmp_path / "main.py"
    path.write_text("import nspkg.train\n\nnspkg.train.train('ckpt.pt')\n")
    from ddpdoctor.lint.driver import lint_results
    found = [f for r in lint_results(gather(str(path)), set()) for f in r.findings]
    assert [f.code for f in found] == ["DDP806"]


SPAWNING_BASE = """
import torch.multiprocessing as mp

class Trainable:
    def __init__(self):
        self.model = torch.nn.Linear(4, 2)
        self.data = TensorDataset(torch.randn(64, 4))
    def train(self):
        mp.spawn(Trainable._worker, nprocs=2, args=(self,))
    @staticmethod
    def _worker(rank, self):
        dist.init_process_group("gloo", rank=rank, world_size=2)
        model = DDP(self.model)
        sampler = DistributedSampler(self.data)
        for epoch in range(3):
            sampler.set_epoch(epoch)
            for x, in DataLoader(self.data, batch_size=8, sampler=sampler):
                model(x).sum().backward()

class Transfer(Trainable):
    def train(self):
        loader = DataLoader(self.data, batch_size=8, shuffle=True)
        for x, in loader:
            self.model(x).sum().backward()
        torch.save(self.model.state_dict(), "transfer.pt")

if __name__ == "__main__":
    for t in (Trainable(), Transfer()):
        {call}
"""


def test_a_subclass_training_in_the_launching_process_is_one_process(tmp_path):
    found, _ = lint(tmp_path, SPAWNING_BASE.format(call="t.train()"))
    assert [c for c, _, _ in codes(found) if c in ("DDP802", "DDP806")] == []


def test_the_same_loop_run_by_the_spawned_ranks_is_judged(tmp_path):
    source = SPAWNING_BASE.format(call="t.train()").replace(
        "        model = DDP(self.model)", "        model = DDP(self.model)\n        Transfer.train(self)")
    found, _ = lint(tmp_path, source)
    assert sorted(c for c, _, _ in codes(found) if c in ("DDP802", "DDP806")) == ["DDP802", "DDP806"]


SAVE_EVERY = """
class Trainer:
    def train(self, model, n_epochs, save_every=None):
        self.save_every = save_every
        for epoch in range(n_epochs):
            model(torch.randn(8, 4)).sum().backward()
            if self.save_every is not None and epoch % self.save_every == 0:
                torch.save(model.module.state_dict(), "ckpt.pt")

Trainer().train(DDP(torch.nn.Linear(4, 1)), 3{given})
"""


def test_a_save_switched_off_through_an_attribute_left_at_none_is_never_reached(tmp_path):
    found, _ = lint(tmp_path, SAVE_EVERY.format(given=""))
    assert [c for c, _, _ in codes(found) if c == "DDP806"] == []


def test_switched_on_it_is_every_ranks(tmp_path):
    found, _ = lint(tmp_path, SAVE_EVERY.format(given=", save_every=2"))
    assert [(c, s) for c, s, _ in codes(found) if c == "DDP806"] == [("DDP806", "warning")]


EARLY_RETURN = """
def main(eval_first):
    model = DDP(torch.nn.Linear(4, 2))
    if eval_first and dist.get_rank() == 0:
        print(model.module(torch.zeros(1, 4)))
        return
    for step in range(10):
        model(torch.randn(8, 4)).sum().backward()
        torch.save(model.state_dict(), {path})

main(False)
"""


def test_a_save_after_rank_0_returned_early_still_has_every_other_rank_writing(tmp_path):
    found, _ = lint(tmp_path, EARLY_RETURN.format(path='"ckpt.pt"'))
    assert [(c, s) for c, s, _ in codes(found) if c == "DDP806"] == [("DDP806", "warning")]


def test_a_per_rank_path_there_is_clean(tmp_path):
    found, _ = lint(tmp_path, EARLY_RETURN.format(path='f"ckpt-{dist.get_rank()}.pt"'))
    assert [c for c, _, _ in codes(found) if c == "DDP806"] == []
