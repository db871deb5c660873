"""Shapes from session 68's reading of holdout 95 and 96 (after their unread scores), each with its
twin, in our own words."""

from __future__ import annotations

from tests.unit.test_lint_session39_shapes import lint_tree
from tests.unit.test_lint_session61_shapes import _codes, _line

# -------------------------------------------------- a micro-step loop whose loss comes from a
# method of the module handed into the wrapper, under annotated names: no DDP forward runs, so
# there is no sync to skip
HANDED_IN = """
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, DistributedSampler, TensorDataset
from policies import build_policy


def main(cfg):
    dist.init_process_group("gloo")
    policy: "BasePolicy" = build_policy(cfg)
    if cfg.low_mem:
        policy = policy.bfloat16()
    model: "DDP" = DDP(policy)
    opt = torch.optim.AdamW(model.parameters())
    data = TensorDataset(torch.randn(64, 4))
    loader = DataLoader(data, sampler=DistributedSampler(data))
    for epoch in range(3):
        loader.sampler.set_epoch(epoch)
        batches = iter(loader)
        for step in range(4):
            opt.zero_grad()
            for _ in range(4):
                (x,) = next(batches)
                loss, logs = FORWARD
                (loss / 4).backward()
            opt.step()


if __name__ == "__main__":
    main(None)
"""


def test_a_loss_from_the_module_handed_into_the_wrapper_has_no_sync_to_skip(tmp_path):
    body = HANDED_IN.replace("FORWARD", "policy.compute_loss(x)")
    assert _codes(lint_tree(tmp_path, {"train.py": body}), "DDP805") == []


def test_its_twin_the_wrappers_own_forward_syncs_each_micro_step(tmp_path):
    body = HANDED_IN.replace("FORWARD", "model(x)")
    assert len(_codes(lint_tree(tmp_path, {"train.py": body}), "DDP805")) == 1


def test_its_twin_the_name_rebound_to_the_wrapper_is_the_wrapper(tmp_path):
    body = HANDED_IN.replace('model: "DDP" = DDP(policy)', 'policy = model = DDP(policy)').replace(
        "FORWARD", "policy(x)")
    assert len(_codes(lint_tree(tmp_path, {"train.py": body}), "DDP805")) == 1


# -------------------------------------------------- a step when a counter reaches a config's
# period (`if num_iter == config.step_per_update: num_iter = 0; opt.step()`), 1 in every config
COUNTER = """
import torch
import torch.distributed as dist
import yaml
from easydict import EasyDict
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, DistributedSampler, TensorDataset


def run(config):
    dist.init_process_group("gloo")
    model = DDP(torch.nn.Linear(4, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    data = TensorDataset(torch.randn(64, 4))
    loader = DataLoader(data, sampler=DistributedSampler(data))
    for epoch in range(3):
        loader.sampler.set_epoch(epoch)
        num_iter = 0
        for (x,) in loader:
            num_iter += 1
            loss = model(x).sum()
            loss.backward()
            if num_iter == config.step_per_update:
                num_iter = 0
                opt.step()
                model.zero_grad()


if __name__ == "__main__":
    run(EasyDict(yaml.safe_load(open("cfgs/pretrain.yaml"))))
"""


def test_a_counter_reaching_a_period_every_config_sets_to_1_steps_every_pass(tmp_path):
    files = {"train.py": COUNTER, "cfgs/pretrain.yaml": "lr: 0.1\nstep_per_update: 1\n",
             "cfgs/finetune.yaml": "lr: 0.01\nstep_per_update : 1\n"}
    assert _codes(lint_tree(tmp_path, files), "DDP805") == []


def test_its_twin_a_config_that_raises_the_period_accumulates(tmp_path):
    files = {"train.py": COUNTER, "cfgs/pretrain.yaml": "lr: 0.1\nstep_per_update: 1\n",
             "cfgs/finetune.yaml": "lr: 0.01\nstep_per_update: 4\n"}
    assert len(_codes(lint_tree(tmp_path, files), "DDP805")) == 1


# -------------------------------------------------- a Hydra config group's option: `cfg.train.k`
# is what conf/train/<option>.yaml sets at `k`
HYDRA_GROUP = """
import hydra
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, DistributedSampler, TensorDataset


@hydra.main(config_path="conf", config_name="train_cfg")
def main(cfg):
    dist.init_process_group("gloo")
    model = DDP(torch.nn.Linear(4, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    data = TensorDataset(torch.randn(64, 4))
    loader = DataLoader(data, sampler=DistributedSampler(data))
    for epoch in range(3):
        loader.sampler.set_epoch(epoch)
        for i, (x,) in enumerate(loader):
            model(x).sum().backward()
            if (i + 1) % cfg.train.gradient_accumulation_steps == 0:
                opt.step()
                opt.zero_grad()


if __name__ == "__main__":
    main()
"""


def test_a_hydra_groups_options_all_at_1_accumulate_nothing(tmp_path):
    files = {"train.py": HYDRA_GROUP, "conf/train_cfg.yaml": "defaults:\n  - train: small\nseed: 1\n",
             "conf/train/small.yaml": "# @package _group_\nbatch_size: 2\ngradient_accumulation_steps: 1\n",
             "conf/train/large.yaml": "batch_size: 8\ngradient_accumulation_steps: 1\n"}
    assert _codes(lint_tree(tmp_path, files), "DDP805") == []


def test_its_twin_a_group_option_that_accumulates(tmp_path):
    files = {"train.py": HYDRA_GROUP, "conf/train_cfg.yaml": "defaults:\n  - train: small\nseed: 1\n",
             "conf/train/small.yaml": "# @package _group_\nbatch_size: 2\ngradient_accumulation_steps: 1\n",
             "conf/train/large.yaml": "batch_size: 8\ngradient_accumulation_steps: 8\n"}
    assert len(_codes(lint_tree(tmp_path, files), "DDP805")) == 1


def test_its_twin_a_global_package_file_is_not_the_groups(tmp_path):
    files = {"train.py": HYDRA_GROUP, "conf/train_cfg.yaml": "defaults:\n  - train: small\nseed: 1\n",
             "conf/train/small.yaml": "# @package _global_\ngradient_accumulation_steps: 1\n"}
    assert len(_codes(lint_tree(tmp_path, files), "DDP805")) == 1


# -------------------------------------------------- a model whose constructor builds BatchNorm only
# on a side of its own argument the construction rules out: no buffers to broadcast
PICKED_CORE = """
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, DistributedSampler, TensorDataset
from nets import Model


def train(rank, world):
    dist.init_process_group("gloo", rank=rank, world_size=world)
    core = CORE
    model = Model(4, core_name=core).to("cpu")
    model = DDP(model)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    data = TensorDataset(torch.randn(64, 4))
    loader = DataLoader(data, sampler=DistributedSampler(data))
    for epoch in range(3):
        loader.sampler.set_epoch(epoch)
        for (x,) in loader:
            opt.zero_grad()
            model(x).sum().backward()
            opt.step()
        if dist.get_rank() == 0:
            with torch.no_grad():
                print(model(torch.randn(2, 4)))
        dist.barrier()


if __name__ == "__main__":
    torch.multiprocessing.spawn(train, args=(2,), nprocs=2)
"""
NETS = """
import torch.nn as nn


class PointNet(nn.Module):
    def __init__(self, width):
        super().__init__()
        self.fc = nn.Linear(width, width)
        self.bn = nn.BatchNorm1d(width)

    def forward(self, x):
        return self.bn(self.fc(x))


class Model(nn.Module):
    def __init__(self, width, core_name="mlp"):
        super().__init__()
        if core_name == "mlp":
            self.core = nn.Linear(width, 1)
        elif core_name == "pointnet":
            self.core = PointNet(width)
        else:
            raise ValueError(core_name)

    def forward(self, x):
        return self.core(x)
"""


def test_batchnorm_on_a_side_the_construction_rules_out_broadcasts_nothing(tmp_path):
    files = {"train.py": PICKED_CORE.replace("CORE", '"mlp"'), "nets.py": NETS}
    assert _codes(lint_tree(tmp_path, files), "DDP801") == []


def test_its_twin_the_construction_picks_the_batchnorm_core(tmp_path):
    files = {"train.py": PICKED_CORE.replace("CORE", '"pointnet"'), "nets.py": NETS}
    assert len(_codes(lint_tree(tmp_path, files), "DDP801")) == 1


# -------------------------------------------------- an early stop on a metric an inline loop over
# the sharded evaluation loader grows from this rank's batches alone
INLINE_EVAL = """
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, DistributedSampler, TensorDataset
from metrics import f1


def main():
    dist.init_process_group("gloo")
    model = DDP(torch.nn.Linear(4, 2))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    train_data = TensorDataset(torch.randn(64, 4), torch.randint(0, 2, (64,)))
    eval_data = TensorDataset(torch.randn(32, 4), torch.randint(0, 2, (32,)))
    train_loader = DataLoader(train_data, sampler=DistributedSampler(train_data))
    eval_loader = DataLoader(eval_data, sampler=DistributedSampler(eval_data, shuffle=False))
    best, stale = 0.0, 0
    for epoch in range(100):
        train_loader.sampler.set_epoch(epoch)
        for x, y in train_loader:
            opt.zero_grad()
            torch.nn.functional.cross_entropy(model(x), y).backward()
            opt.step()
        preds, refs = [], []
        for x, y in eval_loader:
            with torch.no_grad():
                logits = model(x)
            GATHER
            preds.extend(predicted.tolist())
            refs.extend(labels.tolist())
        score = f1(preds, refs)
        if score > best:
            best, stale = score, 0
        else:
            stale += 1
        if stale >= 5:  # the early stop
            break


if __name__ == "__main__":
    main()
"""


def test_an_early_stop_on_an_inline_evaluation_of_the_ranks_own_shard(tmp_path):
    body = INLINE_EVAL.replace("GATHER", "predicted, labels = logits.argmax(-1), y")
    found = _codes(lint_tree(tmp_path, {"train.py": body}), "DDP809")
    assert [f.location.line for f in found] == [_line(body, "# the early stop")]
    assert found[0].severity.name.lower() == "warning"


def test_its_twin_the_loop_gathers_what_it_grows(tmp_path):
    body = INLINE_EVAL.replace("GATHER", "predicted, labels = gather_all(logits.argmax(-1)), gather_all(y)").replace(
        "def main():", GATHER_ALL + "\n\ndef main():")
    assert _codes(lint_tree(tmp_path, {"train.py": body}), "DDP809") == []


GATHER_ALL = """def gather_all(t):
    out = [torch.zeros_like(t) for _ in range(dist.get_world_size())]
    dist.all_gather(out, t)
    return torch.cat(out)
"""


# -------------------------------------------------- argparse subcommands: `args.func(args)` runs
# what `set_defaults(func=...)` handed, and a module named on either side of a conditional
SUBCOMMAND = """
import argparse
from workers import train


def build():
    parser = argparse.ArgumentParser()
    sub = parser.add_subparsers()
    p = sub.add_parser("train")
    p.set_defaults(func=train)
    p.add_argument("--trainer", default="general")
    return parser


if __name__ == "__main__":
    args = build().parse_args()
    args.func(args)
"""
WORKERS = """
from importlib import import_module
import torch.multiprocessing as mp


def worker(rank, args):
    name = f"{args.trainer}_trainer"
    path = f"trainers.{name}" if "general" in name else f"trainers.apps.{args.task}.{name}"
    module = import_module(path)
    module.run(rank)


def train(args):
    mp.spawn(worker, nprocs=2, args=(args,))
"""
TRAINER = """
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, TensorDataset


def run(rank):
    dist.init_process_group("gloo", rank=rank, world_size=2)
    model = DDP(torch.nn.Linear(4, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    loader = DataLoader(TensorDataset(torch.randn(64, 4)), shuffle=True)  # the loader
    for epoch in range(3):
        for (x,) in loader:
            opt.zero_grad()
            model(x).sum().backward()
            opt.step()
"""


def test_a_subcommands_function_and_a_module_named_either_way_are_reached(tmp_path):
    files = {"train.py": SUBCOMMAND, "workers.py": WORKERS, "trainers/__init__.py": "",
             "trainers/general_trainer.py": TRAINER}
    found = _codes(lint_tree(tmp_path, files), "DDP802")
    assert [(f.location.file.endswith("general_trainer.py"), f.location.line) for f in found] == \
        [(True, _line(TRAINER, "# the loader"))]


def test_its_twin_an_unrelated_default_is_no_subcommand(tmp_path):
    body = SUBCOMMAND.replace("p.set_defaults(func=train)", "p.set_defaults(verbose=False)")
    files = {"train.py": body, "workers.py": WORKERS, "trainers/__init__.py": "",
             "trainers/general_trainer.py": TRAINER}
    assert _codes(lint_tree(tmp_path, files), "DDP802") == []


def test_its_twin_a_settings_class_declares_the_period_the_users_configs_set(tmp_path):
    body = COUNTER.replace("def run(config):", "@dataclass\nclass Config:\n    step_per_update: int = 1\n\n\ndef run(config):") \
        .replace("import yaml", "import yaml\nfrom dataclasses import dataclass")
    files = {"train.py": body, "cfgs/pretrain.yaml": "lr: 0.1\nstep_per_update: 1\n"}
    assert len(_codes(lint_tree(tmp_path, files), "DDP805")) == 1


# -------------------------------------------------- holdout 97 (read after its unread score): a
# block switched off in the source, and a rank-only decorator defined in the class body
SWITCHED_OFF = """
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, DistributedSampler, TensorDataset


def main(args):
    dist.init_process_group("gloo")
    model = DDP(torch.nn.Linear(4, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    data = TensorDataset(torch.randn(64, 4))
    loader = DataLoader(data, sampler=DistributedSampler(data))
    for epoch in range(3):
        loader.sampler.set_epoch(epoch)
        for (x,) in loader:
            opt.zero_grad()
            model(x).sum().backward()
            opt.step()
            if SWITCH:
                torch.save(model.state_dict(), "ckpt.pt")  # the save


if __name__ == "__main__":
    main(None)
"""


def test_a_block_switched_off_in_the_source_never_runs(tmp_path):
    body = SWITCHED_OFF.replace("SWITCH", "False and args.save_steps > 0")
    assert _codes(lint_tree(tmp_path, {"train.py": body}), "DDP806") == []


def test_its_twin_a_block_left_on_runs(tmp_path):
    body = SWITCHED_OFF.replace("SWITCH", "True or args.save_steps > 0")
    found = _codes(lint_tree(tmp_path, {"train.py": body}), "DDP806")
    assert [f.location.line for f in found] == [_line(body, "# the save")]


CLASS_DECORATOR = """
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, DistributedSampler, TensorDataset


class Trainer:
    def __init__(self):
        dist.init_process_group("gloo")
        self.is_master = dist.get_rank() == 0
        self.model = DDP(torch.nn.Linear(4, 1))
        self.opt = torch.optim.SGD(self.model.parameters(), lr=0.1)
        data = TensorDataset(torch.randn(64, 4))
        self.loader = DataLoader(data, sampler=DistributedSampler(data))

    def master_only(func):
        def wrapper(self, *args, **kwargs):
            if GATE:
                return func(self, *args, **kwargs)
            return None
        return wrapper

    @master_only
    def save_checkpoint(self, epoch):
        torch.save(self.model.state_dict(), f"ckpt-{epoch}.pt")  # the save

    def train(self):
        for epoch in range(3):
            self.loader.sampler.set_epoch(epoch)
            for (x,) in self.loader:
                self.opt.zero_grad()
                self.model(x).sum().backward()
                self.opt.step()
            self.save_checkpoint(epoch)


if __name__ == "__main__":
    Trainer().train()
"""


def test_a_rank_only_decorator_of_the_class_body_gates_the_save(tmp_path):
    body = CLASS_DECORATOR.replace("GATE", "self.is_master")
    assert _codes(lint_tree(tmp_path, {"train.py": body}), "DDP806") == []


def test_its_twin_a_class_body_decorator_that_gates_nothing(tmp_path):
    body = CLASS_DECORATOR.replace("GATE", "func is not None")
    found = _codes(lint_tree(tmp_path, {"train.py": body}), "DDP806")
    assert [f.location.line for f in found] == [_line(body, "# the save")]


# -------------------------------------------------- a Trainer subclass's get_train_dataloader
# override over the base class's own `_get_train_sampler()`: from transformers 4.30 a plain
# RandomSampler (the base method's prepare() shards, and the override skips it)
HF_OVERRIDE = """
import torch
from torch.utils.data import DataLoader, Dataset
from transformers import Trainer, TrainingArguments


class Windows(Dataset):
    def __len__(self):
        return 64

    def __getitem__(self, i):
        return {"x": torch.randn(4) + torch.rand(1)}


class EEGTrainer(Trainer):
    def get_train_dataloader(self):
        sampler = self._get_train_sampler()
        return DataLoader(self.train_dataset, batch_size=8, sampler=sampler, num_workers=4)  # the loader


if __name__ == "__main__":
    torch.manual_seed(0)
    args = TrainingArguments(output_dir="out")
    EEGTrainer(model=torch.nn.Linear(4, 1), args=args, train_dataset=Windows()).train()
"""


def test_a_trainer_override_over_the_base_sampler_reads_everything_on_every_process(tmp_path):
    files = {"train.py": HF_OVERRIDE, "requirements.txt": "torch\ntransformers==4.38.1\n",
             "run.sh": "torchrun --nproc_per_node=4 train.py\n"}
    found = lint_tree(tmp_path, files)
    assert [(f.code, f.location.line) for f in _codes(found, "DDP802")] == [("DDP802", _line(HF_OVERRIDE, "# the loader"))]
    assert _codes(found, "DDP808") == []  # (the same samples on every process: DDP802's finding)


def test_its_twin_a_plain_python_launch_makes_it_a_warning(tmp_path):
    files = {"train.py": HF_OVERRIDE, "requirements.txt": "transformers==4.38.1\n", "run.sh": "python train.py\n"}
    found = _codes(lint_tree(tmp_path, files), "DDP802")
    assert [f.severity.name.lower() for f in found] == ["warning"]


def test_its_twin_before_4_30_the_base_sampler_is_not_known(tmp_path):
    files = {"train.py": HF_OVERRIDE, "requirements.txt": "transformers==4.28.0\n",
             "run.sh": "torchrun --nproc_per_node=4 train.py\n"}
    assert _codes(lint_tree(tmp_path, files), "DDP802") == []


# -------------------------------------------------- a Trainer subclass's own `_get_train_sampler`
# (the pre-4.30 method, copied) returning a rank-sharding sampler, the loader left to the library,
# which from 4.30 prepares it again
SAMPLER_OVERRIDE = """
import torch
from torch.utils.data import Dataset, DistributedSampler, RandomSampler
from transformers import Trainer, TrainingArguments


class Cells(Dataset):
    def __len__(self):
        return 64

    def __getitem__(self, i):
        return {"x": torch.randn(4)}


class CellTrainer(Trainer):
    def _get_train_sampler(self):
        if self.args.world_size <= 1:
            return RandomSampler(self.train_dataset)
        return DistributedSampler(self.train_dataset, num_replicas=self.args.world_size,
                                  rank=self.args.process_index)  # the sampler
    EXTRA


if __name__ == "__main__":
    args = TrainingArguments(output_dir="out")
    CellTrainer(model=torch.nn.Linear(4, 1), args=args, train_dataset=Cells()).train()
"""


def test_a_trainer_subclasss_rank_sampler_is_sharded_again_by_the_librarys_loader(tmp_path):
    body = SAMPLER_OVERRIDE.replace("EXTRA", "")
    files = {"train.py": body, "requirements.txt": "transformers==4.30.0\n"}
    found = _codes(lint_tree(tmp_path, files), "DDP803")
    assert [f.location.line for f in found] == [_line(body, "return DistributedSampler(")]


def test_its_twin_an_older_transformers_shards_with_that_sampler_alone(tmp_path):
    body = SAMPLER_OVERRIDE.replace("EXTRA", "")
    files = {"train.py": body, "requirements.txt": "transformers==4.28.1\n"}
    assert _codes(lint_tree(tmp_path, files), "DDP803") == []


def test_its_twin_the_subclass_builds_its_own_loader_too(tmp_path):
    body = SAMPLER_OVERRIDE.replace("EXTRA", "def get_train_dataloader(self):\n"
                                             "        return torch.utils.data.DataLoader(self.train_dataset, sampler=self._get_train_sampler())")
    files = {"train.py": body, "requirements.txt": "transformers==4.30.0\n"}
    assert _codes(lint_tree(tmp_path, files), "DDP803") == []


def test_a_pin_with_a_run_of_thousands_of_digits_is_no_pin_and_no_crash(tmp_path):
    # (int() converts at most 4,300 digits: a hostile requirements.txt once ended the lint in a traceback)
    for pin in ("transformers==4." + "9" * 5000, "transformers==" + "9" * 5000 + ".1"):
        files = {"train.py": HF_OVERRIDE, "requirements.txt": pin + "\n",
                 "run.sh": "torchrun --nproc_per_node=4 train.py\n"}
        assert _codes(lint_tree(tmp_path, files), "DDP802") == []
