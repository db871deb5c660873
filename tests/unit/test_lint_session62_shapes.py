"""Shapes from session 62 (holdout 78), each with its twin, in our own words."""

from __future__ import annotations

import textwrap

from tests.unit.test_lint_session39_shapes import lint_tree
from tests.unit.test_lint_session61_shapes import _codes, _line


# -------------------------------------------------- a rank test with a one-process fallback, inline
# `(cfg["ddp"] and rank == 0) or not cfg["ddp"]`: where the run is distributed the other side is
# false - the test is rank 0's there, and the whole run's where it is not
FALLBACK = """
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

cfg = {"ddp": True}


def main():
    dist.init_process_group("gloo")
    model = DDP(torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.BatchNorm1d(4)))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for epoch in range(3):
        model(torch.randn(8, 4)).sum().backward()
        opt.step()
        if {TEST}:
            with torch.no_grad():
                model(torch.randn(8, 4))
            torch.save(model.module.state_dict(), "best.pt")


if __name__ == "__main__":
    main()
"""


def test_an_inline_one_process_fallback_of_a_rank_test_is_that_rank_test(tmp_path):
    body = FALLBACK.replace("{TEST}", '(cfg["ddp"] and dist.get_rank() == 0) or not cfg["ddp"]')
    found = lint_tree(tmp_path, {"train.py": body})
    assert not _codes(found, "DDP806")  # rank 0 alone writes in the distributed run
    # (its DDP forward, BatchNorm's buffers, runs on rank 0 alone)
    assert [f.location.line for f in _codes(found, "DDP801")] == [_line(body, "with torch.no_grad():") + 1]


def test_twin_an_or_whose_other_side_is_a_plain_value_still_lets_every_rank_in(tmp_path):
    body = FALLBACK.replace("{TEST}", '(cfg["ddp"] and dist.get_rank() == 0) or epoch == 2')
    found = lint_tree(tmp_path, {"train.py": body})
    assert _codes(found, "DDP806")  # at the last epoch every rank writes best.pt


# -------------------------------------------------- a per-utterance cache, pre-built by rank 0 only
# the dataset writes `<wav>.spec.pt` next to each sample it loads (its sampler hands each rank its
# own samples) and, where told to, pre-builds every one in its constructor: told only on rank 0
CACHED = """
import os
import torch
import torch.distributed as dist
from torch.utils.data import DataLoader, Dataset, DistributedSampler


class Utterances(Dataset):
    def __init__(self, paths, prebuild=False):
        self.paths = paths
        if prebuild:
            for item in self.paths:
                self.pair(item, True)

    def features(self, path, force=False):
        cached = path.replace(".wav", ".spec.pt")
        if os.path.exists(cached) and not force:
            return torch.load(cached)
        spec = torch.randn(80, 100)
        torch.save(spec, cached)
        return spec

    def pair(self, item, force=False):
        path, label = item[0], item[1]
        return self.features(path, force), label

    def __getitem__(self, index):
        return self.pair(self.paths[index])

    def __len__(self):
        return len(self.paths)


def main(prebuild):
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    items = [("a.wav", 0), ("b.wav", 1)]
    ds = Utterances(items, {PREBUILD})
    loader = DataLoader(ds, sampler=DistributedSampler(ds), batch_size=1)
    for epoch in range(2):
        loader.sampler.set_epoch(epoch)
        for spec, label in loader:
            pass


if __name__ == "__main__":
    main(True)
"""


def test_a_per_sample_cache_prebuilt_on_rank_0_alone_has_one_writer_per_file(tmp_path):
    body = CACHED.replace("{PREBUILD}", "rank == 0 and prebuild")
    assert not _codes(lint_tree(tmp_path, {"train.py": body}), "DDP806")


def test_twin_a_per_sample_cache_prebuilt_on_every_rank_is_written_by_all(tmp_path):
    body = CACHED.replace("{PREBUILD}", "prebuild")
    found = _codes(lint_tree(tmp_path, {"train.py": body}), "DDP806")
    assert [f.location.line for f in found] == [_line(body, "torch.save(spec, cached)")]


# -------------------------------------------------- a worker count a loader helper leaves at 0
# `def get_loaders(rank, world, num_workers=0)`, every call leaving it out: no workers draw
WORKERS = """
import torch
import torch.distributed as dist
from torch.utils.data import DataLoader, Dataset, DistributedSampler


class Noisy(Dataset):
    def __getitem__(self, i):
        return torch.rand(3) + i

    def __len__(self):
        return 64


def get_loaders(rank, world, batch_size=8, num_workers=0):
    ds = Noisy()
    sampler = DistributedSampler(ds, num_replicas=world, rank=rank, shuffle=True)
    return DataLoader(ds, batch_size=batch_size, sampler=sampler, num_workers=num_workers), sampler


def main():
    dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.manual_seed(0)
    loader, sampler = {CALL}
    model = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(3, 1))
    for epoch in range(2):
        sampler.set_epoch(epoch)
        for x in loader:
            model(x).sum().backward()


if __name__ == "__main__":
    main()
"""


def test_a_worker_count_left_at_its_default_zero_runs_no_workers(tmp_path):
    body = WORKERS.replace("{CALL}", "get_loaders(rank, world)")
    assert not _codes(lint_tree(tmp_path, {"train.py": body}), "DDP808")


def test_twin_a_worker_count_a_call_gives_runs_workers_seeded_alike(tmp_path):
    body = WORKERS.replace("{CALL}", "get_loaders(rank, world, num_workers=4)")
    assert _codes(lint_tree(tmp_path, {"train.py": body}), "DDP808")


# -------------------------------------------------- the `.module` of an auto-wrapped FSDP model
# `raw = model.module if ddp else model`: the inner module holds the FSDP units the policy made,
# each of whose state_dict() all-gathers - under `if master:` rank 0 waits alone
FSDP_INNER = """
import functools
import os
import torch
import torch.distributed as dist
from torch.distributed.fsdp import FullyShardedDataParallel as FSDP
from torch.distributed.fsdp.wrap import size_based_auto_wrap_policy

ddp = int(os.environ.get("RANK", -1)) != -1
if ddp:
    dist.init_process_group("nccl")
    master = dist.get_rank() == 0
else:
    master = True
model = torch.nn.Sequential(torch.nn.Linear(64, 64), torch.nn.Linear(64, 64))
if ddp:
    model = FSDP(model{POLICY})
raw = model.module if ddp else model
opt = torch.optim.AdamW(model.parameters())
for step in range(10):
    model(torch.randn(2, 64)).sum().backward()
    opt.step()
    if master and step % 5 == 0:
        state = {"model": raw.state_dict(), "step": step}
        torch.save(state, "ckpt.pt")
"""


def test_the_inner_module_of_an_auto_wrapped_fsdp_model_gathers_in_state_dict(tmp_path):
    policy = ", auto_wrap_policy=functools.partial(size_based_auto_wrap_policy, min_num_params=100)"
    body = FSDP_INNER.replace("{POLICY}", policy)
    found = _codes(lint_tree(tmp_path, {"train.py": body}), "DDP801")
    assert [(f.location.line, f.severity.value) for f in found] == [(_line(body, "raw.state_dict()"), "error")]


def test_twin_the_inner_module_of_an_fsdp_model_without_units_is_plain(tmp_path):
    body = FSDP_INNER.replace("{POLICY}", "")
    assert not _codes(lint_tree(tmp_path, {"train.py": body}), "DDP801")


# -------------------------------------------------- a Trainer's save_model under a rank test, FSDP on
TRAINER = """
import torch
from transformers import AutoModelForCausalLM, Trainer, TrainingArguments


def main(local_rank, data, fsdp_mode):
    model = AutoModelForCausalLM.from_pretrained("gpt2")
    options = {"output_dir": "out", "per_device_train_batch_size": 2, "fsdp": {FSDP}}
    args = TrainingArguments(**options)
    trainer = Trainer(model=model, args=args, train_dataset=data)
    trainer.train()
    if local_rank == 0:
        trainer.save_model("out/final")


if __name__ == "__main__":
    main(0, [], "full_shard")
"""


def test_a_trainers_save_model_on_rank_0_under_the_fsdp_it_chooses_hangs(tmp_path):
    body = TRAINER.replace("{FSDP}", '"full_shard auto_wrap"')
    found = _codes(lint_tree(tmp_path, {"train.py": body}), "DDP801")
    assert [(f.location.line, f.severity.value) for f in found] == [(_line(body, "trainer.save_model("), "error")]


def test_a_trainers_save_model_under_fsdp_from_a_setting_is_a_warning(tmp_path):
    body = TRAINER.replace("{FSDP}", "fsdp_mode")
    found = _codes(lint_tree(tmp_path, {"train.py": body}), "DDP801")
    assert [f.severity.value for f in found] == ["warning"]


def test_twin_a_trainers_save_model_on_rank_0_without_fsdp_is_no_collective(tmp_path):
    body = TRAINER.replace("{FSDP}", '""')
    assert not _codes(lint_tree(tmp_path, {"train.py": body}), "DDP801")


# -------------------------------------------------- a datasets split drawn after a per-rank seed
SPLIT = """
import numpy as np
import torch
import torch.distributed as dist
from datasets import load_from_disk
from torch.utils.data import DataLoader, DistributedSampler


def main(seed):
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    torch.manual_seed({SEED})
    np.random.seed({SEED})
    raw = load_from_disk("cells").with_format("torch")
    parts = raw.train_test_split(test_size=0.1{SPLIT_SEED})
    train = parts["train"]
    sampler = DistributedSampler(train, shuffle=True)
    loader = DataLoader(train, sampler=sampler, batch_size=8)
    model = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(4, 1))
    for epoch in range(2):
        sampler.set_epoch(epoch)
        for batch in loader:
            model(batch["x"]).sum().backward()


if __name__ == "__main__":
    main(0)
"""


def test_a_split_drawn_from_a_stream_seeded_with_the_rank_differs_between_ranks(tmp_path):
    body = SPLIT.replace("{SEED}", "seed + rank").replace("{SPLIT_SEED}", "")
    found = _codes(lint_tree(tmp_path, {"train.py": body}), "DDP803")
    assert [f.location.line for f in found] == [_line(body, "sampler = DistributedSampler(")]
    assert "seeds with its own rank" in found[0].message


def test_twin_a_split_with_its_own_seed_is_the_same_on_every_rank(tmp_path):
    body = SPLIT.replace("{SEED}", "seed + rank").replace("{SPLIT_SEED}", ", seed=42")
    assert not _codes(lint_tree(tmp_path, {"train.py": body}), "DDP803")


def test_twin_a_split_after_a_seed_alike_on_every_rank_is_the_same(tmp_path):
    body = SPLIT.replace("{SEED}", "seed").replace("{SPLIT_SEED}", "")
    assert not _codes(lint_tree(tmp_path, {"train.py": body}), "DDP803")


# -------------------------------------------------- a DeepSpeed engine subclass a loader builds
# the trainer keeps the engine loader in a dataclass field (a partial of it) and calls it; the
# loop skips a NaN step before the engine's backward on one rank's own loss
ENGINE = """
from dataclasses import dataclass
from functools import partial

import deepspeed
import torch
from deepspeed.runtime.engine import DeepSpeedEngine


class Engine(DeepSpeedEngine):
    def __init__(self, model, config):
        super().__init__(args=None, model=model, config=config)


def load_engine(run_dir, config):
    model = torch.nn.Linear(4, 1)
    return {BUILT}


@dataclass
class Loop:
    run_dir: str
    loader: list
    load: object

    def __post_init__(self):
        self.engine = self.load(self.run_dir)

    def run(self):
        engine = self.engine
        for x in self.loader:
            loss = engine(x).sum()
            if loss.isnan().item():
                continue
            engine.backward(loss)
            engine.step()


def main():
    deepspeed.init_distributed()
    Loop(run_dir="runs", loader=[torch.randn(2, 4)], load=partial(load_engine, config={})).run()


if __name__ == "__main__":
    main()
"""


def test_a_nan_skip_before_the_backward_of_a_deepspeed_engine_subclass_parts_the_ranks(tmp_path):
    body = ENGINE.replace("{BUILT}", "Engine(model, config)")
    found = _codes(lint_tree(tmp_path, {"train.py": body}), "DDP809")
    assert [f.location.line for f in found] == [_line(body, "if loss.isnan().item():")]
    assert "DeepSpeed engine" in found[0].message


def test_twin_a_nan_skip_before_a_plain_models_backward_parts_nothing(tmp_path):
    body = ENGINE.replace("{BUILT}", "model")
    assert not _codes(lint_tree(tmp_path, {"train.py": body}), "DDP809")


# -------------------------------------------------- a sync flag out of phase with the step
# `require_backward_grad_sync = (i == k - 1)` over a loop whose counter runs past k: true in the
# first period alone, so every later step goes without the all-reduce
PHASE = """
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP


def main(loader, k=8):
    dist.init_process_group("gloo")
    model = DDP(torch.nn.Linear(4, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for i, x in enumerate(loader):
        model.require_backward_grad_sync = {FLAG}
        loss = model(x).sum() / k
        loss.backward()
        if (i + 1) % k == 0:
            opt.step()
            opt.zero_grad()


if __name__ == "__main__":
    main([torch.randn(2, 4)] * 64)
"""


def test_a_sync_flag_true_in_the_first_period_alone_leaves_later_steps_unsynced(tmp_path):
    body = PHASE.replace("{FLAG}", "(i == k - 1)")
    found = _codes(lint_tree(tmp_path, {"train.py": body}), "DDP805")
    assert [f.location.line for f in found] == [_line(body, "require_backward_grad_sync")]
    assert "false on a micro-step on which the optimizer steps" in found[0].message


def test_twin_a_sync_flag_from_the_steps_own_test_is_in_phase(tmp_path):
    body = PHASE.replace("{FLAG}", "((i + 1) % k == 0)")
    assert not _codes(lint_tree(tmp_path, {"train.py": body}), "DDP805")


# -------------------------------------------------- a Hugging Face stream inside a local IterableDataset
# datasets hands a streaming split's shards out among one process's loader workers, never among
# the ranks: every rank reads the same items unless split_dataset_by_node splits them
STREAM = """
import torch
import torch.distributed as dist
from datasets import load_dataset
from datasets.distributed import split_dataset_by_node
from torch.utils.data import DataLoader, IterableDataset


class Images(IterableDataset):
    def __init__(self, split):
        super().__init__()
        self.stream = {STREAM}

    def __iter__(self):
        for sample in self.stream:
            yield torch.as_tensor(sample["pixels"])


def main():
    dist.init_process_group("gloo")
    loader = DataLoader(Images("train"), batch_size=16, num_workers=2)
    model = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(4, 1))
    for x in loader:
        model(x).sum().backward()


if __name__ == "__main__":
    main()
"""


def test_a_streaming_datasets_split_read_by_every_rank_is_not_sharded(tmp_path):
    body = STREAM.replace("{STREAM}", 'load_dataset("images", streaming=True, split=split)')
    found = _codes(lint_tree(tmp_path, {"train.py": body}), "DDP802")
    assert [(f.location.line, f.severity.value) for f in found] == [(_line(body, "loader = DataLoader("), "error")]
    assert "Hugging Face streaming dataset" in found[0].message and found[0].evidence["stream"] == "Images"


def test_twin_a_streaming_split_divided_by_node_is_sharded(tmp_path):
    stream = ('split_dataset_by_node(load_dataset("images", streaming=True, split=split), '
              'rank=dist.get_rank(), world_size=dist.get_world_size())')
    assert not _codes(lint_tree(tmp_path, {"train.py": STREAM.replace("{STREAM}", stream)}), "DDP802")


def test_the_sampler_fix_declines_an_iterable_dataset(tmp_path):
    from ddpdoctor.lint.fix.plan import plan

    body = STREAM.replace("{STREAM}", 'load_dataset("images", streaming=True, split=split)')
    (tmp_path / "train.py").write_text(textwrap.dedent(body).lstrip("\n"))
    lines = plan([str(tmp_path / "train.py")], set()).lines()
    assert any(line.startswith("no fix DDP802") and "IterableDataset" in line for line in lines), lines


# -------------------------------------------------- Hydra's compose API names the workspace class
# `with hydra.initialize(config_path=...)` then `hydra.compose(config_name=...)` and
# `hydra.utils.get_class(cfg._target_)`: the class the named config's `_target_` gives runs
COMPOSED = """
import argparse
import hydra
import torch.distributed as dist


def main(config_path, config_name):
    with hydra.initialize(version_base=None, config_path=config_path):
        cfg = hydra.compose(config_name=config_name)
        dist.init_process_group("gloo")
        cls = hydra.utils.get_class(cfg._target_)
        cls(cfg).run()


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--config_path", type=str, default="./conf")
    parser.add_argument("--config_name", type=str, default="train_ddp")
    args = parser.parse_args()
    main(args.config_path, args.config_name)
"""
WORKSPACE = """
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP


class Workspace:
    def __init__(self, cfg):
        self.cfg = cfg

    def run(self):
        model = DDP(torch.nn.Linear(4, 1))
        for step in range(10):
            model(torch.randn(2, 4)).sum().backward()
        if dist.get_rank() == 0:
            dist.barrier()
"""


def test_the_class_a_composed_hydra_config_names_is_judged(tmp_path):
    files = {"train.py": COMPOSED, "work/__init__.py": "", "work/ddp_space.py": WORKSPACE,
             "conf/train_ddp.yaml": "_target_: work.ddp_space.Workspace\nlr: 0.1\n"}
    found = _codes(lint_tree(tmp_path, files), "DDP801")
    assert [(f.location.file.endswith("work/ddp_space.py"), f.location.line) for f in found] == \
        [(True, _line(WORKSPACE, "dist.barrier()"))]


def test_twin_another_runs_top_level_config_is_not_read_for_this_one(tmp_path):
    files = {"train.py": COMPOSED, "work/__init__.py": "", "work/ddp_space.py": WORKSPACE,
             "conf/train_ddp.yaml": "lr: 0.1\n", "conf/other_run.yaml": "_target_: work.ddp_space.Workspace\n"}
    assert not _codes(lint_tree(tmp_path, files), "DDP801")


# -------------------------------------------------- a model class a config names by eval()
# `model = eval(model_cfg["NAME"])(...)` over the star-imported model package: the classes it may
# build are the package's nn.Modules (its datasets are no models)
EVALED = """
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from models import *

model_cfg = {"NAME": "SegNet"}


def main():
    dist.init_process_group("gloo")
    model = DDP(eval(model_cfg["NAME"])(4))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for epoch in range(3):
        model(torch.randn(8, 4)).sum().backward()
        opt.step()
        if dist.get_rank() == 0:
            with torch.no_grad():
                model(torch.randn(8, 4))


if __name__ == "__main__":
    main()
"""
MODELS = """
import torch
from .segnet import SegNet

__all__ = ["SegNet"]
"""
SEGNET = """
import torch


class SegNet(torch.nn.Module):
    def __init__(self, width):
        super().__init__()
        self.body = torch.nn.Sequential(torch.nn.Linear(width, width), {NORM})

    def forward(self, x):
        return self.body(x)
"""


def test_a_config_named_model_among_star_imported_classes_is_judged_by_them(tmp_path):
    files = {"train.py": EVALED, "models/__init__.py": MODELS,
             "models/segnet.py": SEGNET.replace("{NORM}", "torch.nn.BatchNorm1d(width)")}
    found = _codes(lint_tree(tmp_path, files), "DDP801")
    assert [f.location.line for f in found] == [_line(EVALED, "with torch.no_grad():") + 1]


def test_twin_a_config_named_model_without_buffers_broadcasts_nothing(tmp_path):
    files = {"train.py": EVALED, "models/__init__.py": MODELS,
             "models/segnet.py": SEGNET.replace("{NORM}", "torch.nn.ReLU()")}
    assert not _codes(lint_tree(tmp_path, files), "DDP801")


# -------------------------------------------------- a branch a local constant never takes
# `sliding = False` above `if sliding: sliding_predict(model, x)`: the forward that runs is the
# other side's, and that is where the finding points
SLIDING = """
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP


def sliding_predict(model, x):
    return model(x[:, :4])


@torch.no_grad()
def evaluate(model, batches):
    sliding = {SLIDING}
    for x in batches:
        if sliding:
            out = sliding_predict(model, x)
        else:
            out = model(x)
    return out


def main():
    dist.init_process_group("gloo")
    model = DDP(torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.BatchNorm1d(4)))
    model(torch.randn(8, 4)).sum().backward()
    if dist.get_rank() == 0:
        evaluate(model, [torch.randn(8, 4)])


if __name__ == "__main__":
    main()
"""


def test_a_forward_behind_a_local_constant_false_is_not_the_one_reported(tmp_path):
    body = SLIDING.replace("{SLIDING}", "False")
    found = _codes(lint_tree(tmp_path, {"train.py": body}), "DDP801")
    assert [f.location.line for f in found] == [_line(body, "out = model(x)")]
    assert "sliding" not in found[0].message


def test_twin_a_forward_behind_a_local_constant_true_is_reported_there(tmp_path):
    body = SLIDING.replace("{SLIDING}", "True")
    found = _codes(lint_tree(tmp_path, {"train.py": body}), "DDP801")
    assert [f.location.line for f in found] == [_line(body, "return model(x[:, :4])")]


# -------------------------------------------------- a configuration switch inside a per-batch step helper
# `if not self.use_acc: backward; step  else: backward; if (self.iter + 1) % k == 0: step` at the
# top of the helper the loop calls for each batch (YOLOX-style trainers): the accumulating side
HELPER_SWITCH = """
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP


class Trainer:
    def __init__(self, k, use_acc):
        dist.init_process_group("gloo")
        self.model = DDP(torch.nn.Linear(4, 1))
        self.opt = torch.optim.SGD(self.model.parameters(), lr=0.1)
        self.k, self.use_acc = k, use_acc
        self.loader = [torch.randn(2, 4)] * 8

    def train(self):
        for self.iter, x in enumerate(self.loader):
            self.one_iter(x)

    def one_iter(self, x):
        loss = self.model(x).sum() / self.k
        if not self.use_acc:
            self.opt.zero_grad()
            loss.backward()
            self.opt.step()
        else:
{ACCUMULATE}


if __name__ == "__main__":
    Trainer(2, True).train()
"""


def test_an_accumulating_side_of_a_switch_in_a_step_helper_is_judged(tmp_path):
    side = ("            loss.backward()\n            if (self.iter + 1) % self.k == 0:\n"
            "                self.opt.step()\n                self.opt.zero_grad()")
    body = HELPER_SWITCH.replace("{ACCUMULATE}", side)
    found = _codes(lint_tree(tmp_path, {"train.py": body}), "DDP805")
    # (at the accumulating side's backward, the line above its conditional step)
    assert [(f.location.line, f.severity.value) for f in found] == [(_line(body, "if (self.iter + 1)") - 1, "warning")]


def test_twin_a_switch_whose_other_side_steps_every_pass_accumulates_nothing(tmp_path):
    side = "            loss.backward()\n            self.opt.step()\n            self.opt.zero_grad()"
    assert not _codes(lint_tree(tmp_path, {"train.py": HELPER_SWITCH.replace("{ACCUMULATE}", side)}), "DDP805")


def test_a_trainers_save_model_on_rank_0_under_the_fsdp_config_the_launch_names_hangs(tmp_path):
    body = TRAINER.replace('"fsdp": {FSDP}', '"bf16": True')
    files = {"train.py": body, "configs/fsdp.yaml": "compute_environment: LOCAL_MACHINE\ndistributed_type: FSDP\n",
             "run.sh": "accelerate launch --config_file configs/fsdp.yaml train.py\n"}
    found = _codes(lint_tree(tmp_path, files), "DDP801")
    assert [(f.location.line, f.severity.value) for f in found] == [(_line(body, "trainer.save_model("), "error")]


def test_twin_a_trainers_save_model_under_a_ddp_launch_config_is_no_collective(tmp_path):
    body = TRAINER.replace('"fsdp": {FSDP}', '"bf16": True')
    files = {"train.py": body, "configs/ddp.yaml": "compute_environment: LOCAL_MACHINE\ndistributed_type: MULTI_GPU\n",
             "run.sh": "accelerate launch --config_file configs/ddp.yaml train.py\n"}
    assert not _codes(lint_tree(tmp_path, files), "DDP801")


# ================================================== second wave (holdout 79)
# -------------------------------------------------- an unseeded draw a construction rules out
# `if max_samples > 0 and len(raw) > max_samples: random.sample(...)` in the dataset's
# constructor, which the loader builder hands its own `max_samples=0` default: never drawn
SUBSET = """
import random
import torch
import torch.distributed as dist
from torch.utils.data import DataLoader, Dataset, DistributedSampler


class Prompts(Dataset):
    def __init__(self, rows, max_samples=0):
        if max_samples > 0 and len(rows) > max_samples:
            rows = [rows[i] for i in random.sample(range(len(rows)), max_samples)]
        self.rows = rows

    def __getitem__(self, i):
        return torch.tensor(self.rows[i])

    def __len__(self):
        return len(self.rows)


def make_loader(rows, max_samples=0):
    ds = Prompts(rows, max_samples=max_samples)
    return DataLoader(ds, sampler=DistributedSampler(ds, shuffle=True), batch_size=4)


def main():
    dist.init_process_group("gloo")
    loader = make_loader(list(range(100)){GIVEN})
    model = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(1, 1))
    for epoch in range(2):
        loader.sampler.set_epoch(epoch)
        for x in loader:
            model(x.float()[:, None]).sum().backward()


if __name__ == "__main__":
    main()
"""


def test_a_draw_under_a_test_the_construction_leaves_false_never_runs(tmp_path):
    assert not _codes(lint_tree(tmp_path, {"train.py": SUBSET.replace("{GIVEN}", "")}), "DDP803")


def test_twin_a_draw_the_construction_asks_for_parts_the_ranks(tmp_path):
    body = SUBSET.replace("{GIVEN}", ", max_samples=50")
    found = _codes(lint_tree(tmp_path, {"train.py": body}), "DDP803")
    assert [f.location.line for f in found] == [_line(body, "return DataLoader(")]


# -------------------------------------------------- accumulation round the wrapper, by Accelerate
# `loss = self.model.module.training_step(batch)` (or the `else:` of `isinstance(self.model, DDP)`)
# handed to `accelerator.backward(loss)`: no DDP forward, nothing is all-reduced to waste
ROUND = """
import torch
from accelerate import Accelerator
from torch import nn


class Trainer:
    def __init__(self, model, loader, k):
        self.accelerator = Accelerator()
        self.opt = torch.optim.SGD(model.parameters(), lr=0.1)
        self.model, self.opt = self.accelerator.prepare(model, self.opt)
        self.dl, self.k = loader, k

    def train(self):
        for step in range(100):
            for i in range(self.k):
                batch = next(self.dl)
                if isinstance(self.model, nn.parallel.DistributedDataParallel):
                    loss = {WRAPPED}
                else:
                    loss = self.model.training_step(batch)
                self.accelerator.backward(loss / self.k)
            self.opt.step()
            self.opt.zero_grad()


if __name__ == "__main__":
    Trainer(nn.Linear(4, 1), iter([torch.randn(2, 4)] * 1000), 4).train()
"""


def test_an_accelerate_accumulation_round_the_wrapper_syncs_nothing(tmp_path):
    body = ROUND.replace("{WRAPPED}", "self.model.module.training_step(batch)")
    assert not _codes(lint_tree(tmp_path, {"train.py": body}), "DDP805")


def test_twin_an_accelerate_accumulation_through_the_wrapper_syncs_each_micro_step(tmp_path):
    body = ROUND.replace("{WRAPPED}", "self.model(batch).sum()")
    assert _codes(lint_tree(tmp_path, {"train.py": body}), "DDP805")


# -------------------------------------------------- a collective past a loop that may never end
# guided-diffusion's `while not self.lr_anneal_steps or self.step < self.lr_anneal_steps:` with
# no break: the final rank-0 save (ending in a barrier) runs only where the option is set
ENDLESS = """
import torch
import torch.distributed as dist


class Loop:
    def __init__(self, lr_anneal_steps):
        self.lr_anneal_steps = lr_anneal_steps
        self.step = 0
        self.rank = dist.get_rank()

    def run_loop(self):
        while {LOOP}:
            self.step += 1
        if self.rank == 0:
            self.save()

    def save(self):
        torch.save({"step": self.step}, "last.pt")
        dist.barrier()


if __name__ == "__main__":
    dist.init_process_group("gloo")
    Loop(0).run_loop()
"""


def test_a_collective_past_a_loop_endless_where_an_option_is_unset_is_a_warning(tmp_path):
    body = ENDLESS.replace("{LOOP}", "not self.lr_anneal_steps or self.step < self.lr_anneal_steps")
    found = _codes(lint_tree(tmp_path, {"train.py": body}), "DDP801")
    assert [f.severity.value for f in found] == ["warning"]
    assert "runs on for ever where `self.lr_anneal_steps` is unset" in found[0].message


def test_twin_a_collective_past_a_loop_that_ends_is_an_error(tmp_path):
    body = ENDLESS.replace("{LOOP}", "self.step < self.lr_anneal_steps")
    found = _codes(lint_tree(tmp_path, {"train.py": body}), "DDP801")
    assert [f.severity.value for f in found] == ["error"]


# -------------------------------------------------- an attribute the spawner set on what it hands on
# `args.data = ds` in main, `Process(target=worker, args=(rank, args))`, and `Loop(data=args.data)`
# in the worker building the loader: the dataset main built, with its random transform
SPAWNED = """
import random
import torch
import torch.distributed as dist
from torch.multiprocessing import Process
from torch.utils.data import DataLoader, Dataset, DistributedSampler
from torchvision import transforms


class Flips(Dataset):
    def __init__(self, transform=None):
        self.transform = transform

    def __getitem__(self, i):
        x = torch.ones(4) * i
        return self.transform(x) if self.transform else x

    def __len__(self):
        return 64


class Loop:
    def __init__(self, data, seed):
        self.seed = seed
        self.sampler = DistributedSampler(data)
        self.loader = DataLoader(data, sampler=self.sampler, num_workers=4)
        self.model = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(4, 1))

    def run(self):
        torch.manual_seed(self.seed)
        for epoch in range(2):
            self.sampler.set_epoch(epoch)
            for x in self.loader:
                self.model(x).sum().backward()


def worker(rank, args):
    dist.init_process_group("gloo", rank=rank, world_size=2)
    Loop(data=args.data, seed=args.seed).run()


def main():
    import argparse
    args = argparse.Namespace(seed=0)
    args.data = Flips({TRANSFORM})
    workers = [Process(target=worker, args=(rank, args)) for rank in range(2)]
    for p in workers:
        p.start()


if __name__ == "__main__":
    main()
"""


def test_an_attribute_set_on_the_spawned_namespace_is_what_the_worker_reads(tmp_path):
    body = SPAWNED.replace("{TRANSFORM}", "transform=transforms.RandomHorizontalFlip()")
    found = _codes(lint_tree(tmp_path, {"train.py": body}), "DDP808")
    assert [f.location.line for f in found] == [_line(body, "self.loader = DataLoader(")]


def test_twin_the_spawned_namespaces_dataset_without_a_draw_seeds_nothing_alike(tmp_path):
    body = SPAWNED.replace("{TRANSFORM}", "")
    assert not _codes(lint_tree(tmp_path, {"train.py": body}), "DDP808")


# -------------------------------------------------- a generation loop over an FSDP model stopped per rank
# `for _ in range(n): out = model(ids); ...; unfinished &= tok != eos; if not unfinished.any(): break`
# with the model a helper wraps in FSDP: the rank that stops first strands the others in their
# next forward's all-gather
GENERATE = """
import torch
import torch.distributed as dist
from torch.distributed.fsdp import FullyShardedDataParallel as FSDP


def wrap(model):
    return FSDP(model)


@torch.no_grad()
def sample(model, ids, eos, n):
    unfinished = torch.ones(ids.shape[0], dtype=torch.bool)
    for _ in range(n):
        logits = model(ids)[:, -1]
        token = logits.argmax(-1)
        ids = torch.cat([ids, token[:, None]], dim=1)
        unfinished = unfinished & (token != eos)
        if {STOP}:
            break
    return ids


def main():
    dist.init_process_group("nccl")
    policy = wrap(torch.nn.Linear(8, 8))
    for step in range(10):
        sample(policy, torch.zeros(2, 1, dtype=torch.long), 2, 32)


if __name__ == "__main__":
    main()
"""


def test_a_generation_loop_over_an_fsdp_model_stopped_by_each_ranks_tokens_parts_the_ranks(tmp_path):
    body = GENERATE.replace("{STOP}", "not unfinished.any()")
    found = _codes(lint_tree(tmp_path, {"train.py": body}), "DDP809")
    assert [f.location.line for f in found] == [_line(body, "if not unfinished.any():")]
    assert "FSDP" in found[0].message


def test_twin_a_generation_loop_stopped_by_its_own_count_parts_nothing(tmp_path):
    body = GENERATE.replace("{STOP}", "ids.shape[1] > n")
    assert not _codes(lint_tree(tmp_path, {"train.py": body}), "DDP809")


# -------------------------------------------------- a pass-through helper judged per call
# `resolve(value, config, attr)` returns `value if value is not None else getattr(config, attr,
# None)`: called with `attr="rank"` it gives a rank, with `attr="fedopt"` a setting - each call
# is judged on what it hands the helper, not on what another call hands it
RESOLVED = """
import torch
import torch.distributed as dist


def resolve(value, config, attr):
    return value if value is not None else getattr(config, attr, None)


def train(config, rank=None, fedopt=None):
    dist.init_process_group("gloo")
    my_rank = resolve(rank, config, "rank")
    use_fedopt = resolve(fedopt, config, "fedopt")
    if {TEST}:
        dist.barrier()


if __name__ == "__main__":
    train(object())
"""


def test_a_pass_through_helper_handed_a_setting_gives_no_rank_test(tmp_path):
    assert not _codes(lint_tree(tmp_path, {"train.py": RESOLVED.replace("{TEST}", "use_fedopt")}), "DDP801")


def test_twin_the_same_helper_handed_the_rank_gives_a_rank_test(tmp_path):
    body = RESOLVED.replace("{TEST}", "my_rank == 0")
    found = _codes(lint_tree(tmp_path, {"train.py": body}), "DDP801")
    assert [f.location.line for f in found] == [_line(body, "dist.barrier()")]
