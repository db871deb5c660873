"""Shapes from session 71's reading of holdout 100 (after its unread score), each with its twin, in
our own words."""

from __future__ import annotations

from tests.unit.test_lint_session39_shapes import lint_tree
from tests.unit.test_lint_session61_shapes import _codes, _line

# -------------------------------------------------- a step helper returns a second loss that it sets
# to None under a config switch and an iteration count; the loop's `if aux is not None:` before that
# loss's backward is decided alike on every rank (the None is the config's, not the batch's)
HELPER_NONE = """import os

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler


class Trainer:
    def __init__(self, cfg):
        self.cfg = cfg
        self.net = DDP(torch.nn.Linear(4, 4))
        self.post = DDP(torch.nn.Linear(4, 4))
        self.opt = torch.optim.SGD(self.net.parameters(), lr=0.1)
        self.post_opt = torch.optim.SGD(self.post.parameters(), lr=0.1)

    def train_on_batch(self, x, y, iteration):
        out = self.net(x)
        loss = ((out - y) ** 2).mean()
        if self.cfg["post_active"]:
            if iteration > self.cfg["post_after"]:
                post_loss = ((self.post(out.detach()) - y) ** 2).mean()
            else:
                post_loss = None
        else:
            post_loss = None
        return loss, post_loss

    def fit(self, loader, epochs):
        for epoch in range(epochs):
            loader.sampler.set_epoch(epoch)
            for iteration, (x, y) in enumerate(loader):
                loss, post_loss = self.train_on_batch(x, y, iteration)
                self.opt.zero_grad()
                loss.backward()
                self.opt.step()
                if not self.cfg["joint"] and post_loss is not None:
                    self.post_opt.zero_grad()
                    post_loss.backward()
                    self.post_opt.step()


def main():
    dist.init_process_group("gloo")
    data = TensorDataset(torch.randn(64, 4), torch.randn(64, 4))
    loader = DataLoader(data, batch_size=8, sampler=DistributedSampler(data))
    Trainer({"post_active": True, "post_after": 10, "joint": False}).fit(loader, 3)


if __name__ == "__main__":
    main()
"""
DATA_NONE = HELPER_NONE.replace('if iteration > self.cfg["post_after"]:', "if y.abs().sum() > 1.0:")


def test_a_none_the_step_helper_sets_by_config_and_count_decides_alike_on_every_rank(tmp_path):
    assert _codes(lint_tree(tmp_path, {"train.py": HELPER_NONE}), "DDP809") == []


def test_its_twin_a_none_the_helper_sets_from_the_batch_is_each_ranks_own(tmp_path):
    found = _codes(lint_tree(tmp_path, {"train.py": DATA_NONE}), "DDP809")
    assert [f.location.line for f in found] == [_line(DATA_NONE, "post_loss is not None")]


# -------------------------------------------------- pytorch-template's config factory picks the loader
# class from torch's own module (`config.init_obj("train_loader", torch.utils.data.dataloader, ...)`):
# a DataLoader with workers, on every rank seeded alike
CONFIG_PARSER = """
class ConfigParser:
    def __init__(self, config):
        self.config = config

    def __getitem__(self, name):
        return self.config[name]

    def init_obj(self, name, module, *args, **kwargs):
        module_name = self[name]["type"]
        module_args = dict(self[name]["args"])
        module_args.update(kwargs)
        return getattr(module, module_name)(*args, **module_args)
"""
FACTORY_LOADER = """
import json
import os

import torch
import torch.distributed as dist
import torch.utils.data
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import Dataset
from torchvision import transforms

from parse_config import ConfigParser


class Crops(Dataset):
    def __init__(self, n):
        self.n = n
        self.aug = transforms.RandomResizedCrop(32)

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        return self.aug(torch.zeros(3, 40, 40)), i % 10


def main(config):
    rank = int(os.environ["RANK"])
    dist.init_process_group("gloo")
    torch.manual_seed(config["seed"]SEED)
    dataset = Crops(256)
    sampler = torch.utils.data.distributed.DistributedSampler(dataset)
    loader = config.init_obj("train_loader", torch.utils.data.dataloader, dataset=dataset,
                             sampler=sampler, num_workers=4)
    model = DDP(torch.nn.Linear(3 * 32 * 32, 10))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for epoch in range(3):
        sampler.set_epoch(epoch)
        for x, y in loader:
            opt.zero_grad()
            torch.nn.functional.cross_entropy(model(x.flatten(1)), y).backward()
            opt.step()


if __name__ == "__main__":
    main(ConfigParser(json.load(open("config.json"))))
"""
FACTORY_CONFIG = '{"seed": 7, "train_loader": {"type": "DataLoader", "args": {"batch_size": 8}}}'


def test_a_loader_a_config_factory_builds_from_torchs_module_has_its_workers_judged(tmp_path):
    source = FACTORY_LOADER.replace("SEED", "")
    files = {"train.py": source, "parse_config.py": CONFIG_PARSER, "config.json": FACTORY_CONFIG}
    found = _codes(lint_tree(tmp_path, files), "DDP808")
    assert [f.location.line for f in found] == [_line(source, 'config.init_obj("train_loader"')]


def test_its_twin_torch_seeded_with_the_rank_gives_each_ranks_workers_their_own_seeds(tmp_path):
    files = {"train.py": FACTORY_LOADER.replace("SEED", " + rank"), "parse_config.py": CONFIG_PARSER,
             "config.json": FACTORY_CONFIG}
    assert _codes(lint_tree(tmp_path, files), "DDP808") == []


# -------------------------------------------------- a Hugging Face stream split by node, wrapped in a
# local endless dataset, and then handed to accelerator.prepare(): Accelerate shards it again
SPLIT_STREAM = """
import accelerate
import datasets
import datasets.distributed
import torch
from torch.utils import data


class Endless(data.IterableDataset):
    def __init__(self, stream):
        self.stream = stream

    def __iter__(self):
        while True:
            yield from self.stream


def main():
    accelerator = accelerate.Accelerator(dispatch_batches=False)
    stream = datasets.load_dataset("json", data_files="rows.jsonl", streaming=True)["train"]
    stream = datasets.distributed.split_dataset_by_node(
        stream, accelerator.process_index, accelerator.num_processes
    )
    loader = data.DataLoader(Endless(stream), batch_size=4, drop_last=True)
    model = torch.nn.Linear(8, 8)
    opt = torch.optim.Adam(model.parameters())
    model, opt, loader = accelerator.prepare(model, opt, loader)
    for step, batch in enumerate(loader):
        loss = model(batch["x"]).sum()
        accelerator.backward(loss)
        opt.step()
        opt.zero_grad()
        if step == 100:
            break


if __name__ == "__main__":
    main()
"""


def test_a_stream_split_by_node_then_prepared_is_sharded_twice(tmp_path):
    found = _codes(lint_tree(tmp_path, {"train.py": SPLIT_STREAM}), "DDP803")
    assert [f.location.line for f in found] == [_line(SPLIT_STREAM, "loader = data.DataLoader(")]
    assert "train.py:%d, which shards it again" % _line(SPLIT_STREAM, "accelerator.prepare(") in found[0].message
    assert found[0].evidence["split_at"].endswith("train.py:%d" % _line(SPLIT_STREAM, "split_dataset_by_node("))


def test_its_twin_the_split_stream_left_out_of_prepare_is_sharded_once(tmp_path):
    source = SPLIT_STREAM.replace("model, opt, loader = accelerator.prepare(model, opt, loader)",
                                  "model, opt = accelerator.prepare(model, opt)")
    assert _codes(lint_tree(tmp_path, {"train.py": source}), "DDP803") == []


# -------------------------------------------------- a dataset whose only draw picks a stand-in sample
# when a read fails (`except: return self[np.random.randint(len(self))]`) draws no augmentation; one
# that draws in __getitem__ itself does, and so does a library transform built with `_aug=True`
FALLBACK_DRAW = """
import os

import numpy as np
import torch
import torch.distributed as dist
from imagekit import Preprocess
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, Dataset
from torch.utils.data.distributed import DistributedSampler


class Rows(Dataset):
    def __init__(self, root, transform):
        self.files = sorted(os.listdir(root))
        self.root = root
        self.transform = transform

    def __len__(self):
        return len(self.files)

    def __getitem__(self, i):
        try:
            x = np.load(os.path.join(self.root, self.files[i]))
        except Exception:
            return self[np.random.randint(len(self))]
        x = x + 0.0
        return self.transform(x), 0


def main():
    dist.init_process_group("gloo")
    torch.manual_seed(0)
    dataset = Rows("data", Preprocess(8ARGS))
    sampler = DistributedSampler(dataset)
    loader = DataLoader(dataset, batch_size=4, sampler=sampler, num_workers=4)
    model = DDP(torch.nn.Linear(8, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for epoch in range(2):
        sampler.set_epoch(epoch)
        for x, y in loader:
            opt.zero_grad()
            model(x).sum().backward()
            opt.step()


if __name__ == "__main__":
    main()
"""


def test_a_draw_only_on_a_read_error_is_no_augmentation_the_workers_share(tmp_path):
    assert _codes(lint_tree(tmp_path, {"train.py": FALLBACK_DRAW.replace("ARGS", "")}), "DDP808") == []


def test_its_twin_a_draw_in_getitem_itself_is_drawn_in_every_worker(tmp_path):
    source = FALLBACK_DRAW.replace("ARGS", "").replace("x = x + 0.0", "x = x + np.random.normal(0, 0.1, x.shape)")
    found = _codes(lint_tree(tmp_path, {"train.py": source}), "DDP808")
    assert [f.location.line for f in found] == [_line(source, "loader = DataLoader(")]


def test_its_twin_a_transform_built_with_aug_on_draws_in_every_worker(tmp_path):
    source = FALLBACK_DRAW.replace("ARGS", ", _aug=True")
    found = _codes(lint_tree(tmp_path, {"train.py": source}), "DDP808")
    assert [f.location.line for f in found] == [_line(source, "loader = DataLoader(")]


# -------------------------------------------------- set_epoch(start) at the top of every pass of an
# endless loop, with start computed once; a later set_epoch inside the `for` over the loader runs after
# that pass's iterator was made, and the top one undoes it before the next: every pass has `start`
START_EPOCH = """
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler


def train(model, opt, loader, resume_iteration, total):
    iteration = resume_iteration
    start_epoch = resume_iteration * 8 // len(loader.dataset)
    while True:
        loader.sampler.set_epoch(START)
        for x, y in loader:
            opt.zero_grad()
            torch.nn.functional.mse_loss(model(x), y).backward()
            opt.step()
            iteration += 1
            done_epoch = iteration * 8 // len(loader.dataset)
            loader.sampler.set_epoch(done_epoch - 1)
            if iteration >= total:
                return


def main():
    dist.init_process_group("gloo")
    data = TensorDataset(torch.randn(64, 4), torch.randn(64, 1))
    loader = DataLoader(data, batch_size=8, sampler=DistributedSampler(data, shuffle=True))
    model = DDP(torch.nn.Linear(4, 1))
    train(model, torch.optim.SGD(model.parameters(), lr=0.1), loader, 0, 100)


if __name__ == "__main__":
    main()
"""


def test_a_start_epoch_set_before_every_pass_undoes_the_set_epoch_inside_it(tmp_path):
    source = START_EPOCH.replace("START", "start_epoch")
    found = _codes(lint_tree(tmp_path, {"train.py": source}), "DDP804")
    assert [f.location.line for f in found] == [_line(source, "loader.sampler.set_epoch(start_epoch)")]


def test_its_twin_the_pass_count_set_before_every_pass_moves(tmp_path):
    source = START_EPOCH.replace("START", "done_epoch").replace(
        "    start_epoch = resume_iteration * 8 // len(loader.dataset)\n",
        "    done_epoch = resume_iteration * 8 // len(loader.dataset)\n")
    assert _codes(lint_tree(tmp_path, {"train.py": source}), "DDP804") == []


# -------------------------------------------------- an accumulation period read from a config that
# every config beside the script sets to 1: through OmegaConf attributes, or `.get(key, 1)` of a
# section with `max(..., 1)` around it; and one a Python launcher hands as `--accum 1` in an argv list
ACCUMULATE = """
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

READ


def main():
    dist.init_process_group("gloo")
    model = DDP(torch.nn.Linear(4, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for step in range(100):
        model(torch.randn(8, 4)).sum().backward()
        if (step + 1) % accum == 0:
            opt.step()
            opt.zero_grad()


if __name__ == "__main__":
    main()
"""
OMEGA = 'from omegaconf import OmegaConf\nconfig = OmegaConf.load("config/base.yaml")\naccum = config.basic.accum_iter'
SECTION = ('import yaml\nwith open("config.yaml") as f:\n    cfg = yaml.safe_load(f)\ntraining_cfg = cfg["training"]\n'
           'accum = max(training_cfg.get("grad_accum_steps", 1), 1)')


def test_an_accumulation_period_every_omegaconf_config_sets_to_one_accumulates_nothing(tmp_path):
    files = {"train.py": ACCUMULATE.replace("READ", OMEGA), "config/base.yaml": "basic:\n  accum_iter: 1\n",
             "config/large.yaml": "basic:\n  accum_iter: 1\n  epochs: 9\n"}
    assert _codes(lint_tree(tmp_path, files), "DDP805") == []


def test_its_twin_a_config_with_four_accumulates(tmp_path):
    files = {"train.py": ACCUMULATE.replace("READ", OMEGA), "config/base.yaml": "basic:\n  accum_iter: 1\n",
             "config/large.yaml": "basic:\n  accum_iter: 4\n"}
    assert len(_codes(lint_tree(tmp_path, files), "DDP805")) == 1


def test_a_period_read_with_get_from_a_section_every_config_sets_to_one_accumulates_nothing(tmp_path):
    files = {"train.py": ACCUMULATE.replace("READ", SECTION), "config.yaml": "training:\n  grad_accum_steps: 1\n"}
    assert _codes(lint_tree(tmp_path, files), "DDP805") == []
    files["config.yaml"] = "training:\n  grad_accum_steps: 8\n"
    assert len(_codes(lint_tree(tmp_path, files), "DDP805")) == 1


OPTION = 'import argparse\np = argparse.ArgumentParser()\np.add_argument("--accum", type=int, default=1)\naccum = p.parse_args().accum'
PY_LAUNCHER = """
import subprocess
import sys

port = sys.argv[1]
command = ["torchrun", "--nproc_per_node", "8", "--master_port", port, "train.py", "--accum", "VALUE"]
subprocess.run(command, check=True)
"""


def test_a_python_launcher_that_passes_the_period_as_one_settles_it(tmp_path):
    files = {"train.py": ACCUMULATE.replace("READ", OPTION), "launch.py": PY_LAUNCHER.replace("VALUE", "1")}
    assert _codes(lint_tree(tmp_path, files), "DDP805") == []


def test_its_twin_a_python_launcher_that_passes_four_accumulates(tmp_path):
    files = {"train.py": ACCUMULATE.replace("READ", OPTION), "launch.py": PY_LAUNCHER.replace("VALUE", "4")}
    assert len(_codes(lint_tree(tmp_path, files), "DDP805")) == 1


# -------------------------------------------------- a builder whose `if <switch> and flag == "train":`
# side shards the training loader: its `else:` builds, in the distributed run, only the other flags'
# (evaluation) loaders
FLAG_BUILDER = """
import argparse

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler


def data_provider(args, flag):
    data_set = TensorDataset(torch.randn(64, 4), torch.randn(64, 1))
    if TEST:
        sampler = DistributedSampler(data_set)
        loader = DataLoader(data_set, batch_size=8, sampler=sampler)
    else:
        loader = DataLoader(data_set, batch_size=8, shuffle=flag == "train")
    return data_set, loader


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--use_multi_gpu", action="store_true")
    parser.add_argument("--big", action="store_true")
    args = parser.parse_args()
    if args.use_multi_gpu:
        dist.init_process_group("gloo")
    _, train_loader = data_provider(args, "train")
    _, vali_loader = data_provider(args, "val")
    model = DDP(torch.nn.Linear(4, 1)) if args.use_multi_gpu else torch.nn.Linear(4, 1)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for epoch in range(3):
        if args.use_multi_gpu:
            train_loader.sampler.set_epoch(epoch)
        for x, y in train_loader:
            opt.zero_grad()
            torch.nn.functional.mse_loss(model(x), y).backward()
            opt.step()
        with torch.no_grad():
            total = sum(torch.nn.functional.mse_loss(model(x), y).item() for x, y in vali_loader)
        print(total)


if __name__ == "__main__":
    main()
"""


def test_the_else_of_a_switched_training_flag_builds_only_evaluation_loaders_there(tmp_path):
    source = FLAG_BUILDER.replace("TEST", 'args.use_multi_gpu and flag == "train"')
    assert _codes(lint_tree(tmp_path, {"train.py": source}), "DDP802") == []


def test_its_twin_a_training_flag_beside_another_option_leaves_the_training_loader_unsharded(tmp_path):
    source = FLAG_BUILDER.replace("TEST", 'args.big and flag == "train"')
    found = _codes(lint_tree(tmp_path, {"train.py": source}), "DDP802")
    assert [f.location.line for f in found] == [_line(source, "loader = DataLoader(data_set, batch_size=8, shuffle")]


# -------------------------------------------------- an early-stopping object whose __call__ sets the
# stop flag: the default task's trainer calls it on rank 0 only; another task's trainer (picked by a
# non-default option) calls its own on every rank before it tests the flag
STOPPER = """
class EarlyStopping:
    def __init__(self, patience=3):
        self.patience = patience
        self.counter = 0
        self.best = None
        self.early_stop = False

    def __call__(self, val_loss):
        if self.best is None or val_loss < self.best:
            self.best = val_loss
            self.counter = 0
        else:
            self.counter += 1
            if self.counter >= self.patience:
                self.early_stop = True


"""
MAIN_TRAINER = """
import torch
from torch.nn.parallel import DistributedDataParallel as DDP
from tools import EarlyStopping


class Forecast:
    def __init__(self, args):
        self.args = args
        self.model = DDP(torch.nn.Linear(4, 1))
        self.opt = torch.optim.SGD(self.model.parameters(), lr=0.1)

    def train(self):
        stopper = EarlyStopping()
        for epoch in range(100):
            self.opt.zero_grad()
            loss = self.model(torch.randn(8, 4)).pow(2).mean()
            loss.backward()
            self.opt.step()
            if GUARD:
                stopper(loss.item())
                if stopper.early_stop:
                    break


"""
OTHER_TRAINER = """
import torch
from torch.nn.parallel import DistributedDataParallel as DDP
from tools import EarlyStopping


class Impute:
    def __init__(self, args):
        self.args = args
        self.model = DDP(torch.nn.Linear(4, 1))
        self.opt = torch.optim.SGD(self.model.parameters(), lr=0.1)

    def train(self):
        stopper = EarlyStopping()
        for epoch in range(100):
            self.opt.zero_grad()
            loss = self.model(torch.randn(8, 4)).abs().mean()
            loss.backward()
            self.opt.step()
            stopper(loss.item())
            if stopper.early_stop:
                break


"""
PICKS_A_TRAINER = """
import argparse
import os

import torch.distributed as dist

from exp_impute import Impute
from exp_main import Forecast


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--task", default="forecast")
    args = parser.parse_args()
    args.local_rank = int(os.environ["LOCAL_RANK"])
    dist.init_process_group("gloo")
    if args.task == "forecast":
        Exp = Forecast
    elif args.task == "impute":
        Exp = Impute
    else:
        Exp = Forecast
    for ii in range(2):
        exp = Exp(args)
        exp.train()


if __name__ == "__main__":
    main()
"""


def _trainers(guard: str) -> dict:
    return {"tools.py": STOPPER, "exp_main.py": MAIN_TRAINER.replace("GUARD", guard),
            "exp_impute.py": OTHER_TRAINER, "train.py": PICKS_A_TRAINER}


def test_a_trainer_that_steps_its_own_stopper_on_every_rank_is_not_parted_by_another_trainers_rank_test(tmp_path):
    found = _codes(lint_tree(tmp_path, _trainers("self.args.local_rank == 0")), "DDP809")
    assert [(f.location.file.rpartition("/")[2], f.location.line) for f in found] == [
        ("exp_main.py", _line(MAIN_TRAINER, "if stopper.early_stop:"))]


def test_its_twin_with_no_rank_test_anywhere_neither_trainer_is_parted(tmp_path):
    assert _codes(lint_tree(tmp_path, _trainers("epoch > 0")), "DDP809") == []


# -------------------------------------------------- `if distributed_type == DEEPSPEED or
# is_main_process: accelerator.save_state()` where the launch's Accelerate config picks DeepSpeed:
# every rank takes the branch; under FSDP only the main process does
ENGINE_OR_MAIN = """
import torch
from accelerate import Accelerator
from accelerate.utils import DistributedType


def main():
    accelerator = Accelerator()
    model = torch.nn.Linear(2, 2)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    model, opt = accelerator.prepare(model, opt)
    for step in range(100):
        accelerator.backward(model(torch.ones(1, 2)).sum())
        opt.step()
        if accelerator.distributed_type == DistributedType.DEEPSPEED or accelerator.is_main_process:
            if step % 10 == 0:
                accelerator.save_state(f"ckpt-{step}")


if __name__ == "__main__":
    main()
"""
ENGINE_LAUNCH = "accelerate launch --config_file configs/zero2.yaml train.py\n"


def test_a_save_every_rank_reaches_by_the_engine_the_launch_picks_is_no_rank_branch(tmp_path):
    files = {"train.py": ENGINE_OR_MAIN, "train.sh": ENGINE_LAUNCH,
             "configs/zero2.yaml": "compute_environment: LOCAL_MACHINE\ndistributed_type: DEEPSPEED\n"}
    assert _codes(lint_tree(tmp_path, files), "DDP801") == []


def test_its_twin_a_test_on_the_other_engine_leaves_the_main_process_alone_there(tmp_path):
    source = ENGINE_OR_MAIN.replace("DistributedType.DEEPSPEED or", "DistributedType.FSDP or")
    files = {"train.py": source, "train.sh": ENGINE_LAUNCH,
             "configs/zero2.yaml": "compute_environment: LOCAL_MACHINE\ndistributed_type: DEEPSPEED\n"}
    found = _codes(lint_tree(tmp_path, files), "DDP801")
    assert [f.location.line for f in found] == [_line(ENGINE_OR_MAIN, "accelerator.save_state(")]


# -------------------------------------------------- `if train_one_step(step, batch): break` where the
# helper answers True only past a step count: the helper's test decides, alike on every rank
HELPER_STOP = """
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler


def main():
    dist.init_process_group("gloo")
    data = TensorDataset(torch.randn(64, 4), torch.randn(64, 1))
    sampler = DistributedSampler(data)
    loader = DataLoader(data, batch_size=8, sampler=sampler)
    model = DDP(torch.nn.Linear(4, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    state = {"step": 0}

    def train_one_step(batch):
        x, y = batch
        opt.zero_grad()
        torch.nn.functional.mse_loss(model(x), y).backward()
        opt.step()
        state["step"] += 1
        if STOP:
            return True
        return False

    for epoch in range(10):
        sampler.set_epoch(epoch)
        for batch in loader:
            if train_one_step(batch):
                break


if __name__ == "__main__":
    main()
"""


def test_a_step_helper_that_answers_from_a_step_count_decides_alike_on_every_rank(tmp_path):
    source = HELPER_STOP.replace("STOP", 'state["step"] >= 50')
    assert _codes(lint_tree(tmp_path, {"train.py": source}), "DDP809") == []


def test_its_twin_a_flag_read_off_the_batch_itself_is_each_ranks_own(tmp_path):
    source = HELPER_STOP.replace("            if train_one_step(batch):\n                break",
                                 "            x, y = batch\n            if y[0] > 3:\n                break\n"
                                 "            train_one_step(batch)").replace("STOP", 'state["step"] >= 50')
    found = _codes(lint_tree(tmp_path, {"train.py": source}), "DDP809")
    assert [f.location.line for f in found] == [_line(source, "if y[0] > 3:")]


# -------------------------------------------------- GPT-2 under DDP evaluated on rank 0: its attention
# keeps the causal mask and `masked_bias` as buffers, which DDP's forward broadcasts
GPT2_EVAL = """
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from transformers.models.gpt2.modeling_gpt2 import GPT2Model


class Forecaster(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.gpt = GPT2Model.from_pretrained("gpt2")
        self.head = torch.nn.Linear(768, 1)

    def forward(self, x):
        return self.head(self.gpt(inputs_embeds=x).last_hidden_state)


def main():
    dist.init_process_group("gloo")
    model = DDP(Forecaster())
    opt = torch.optim.Adam(model.parameters())
    for epoch in range(3):
        opt.zero_grad()
        model(torch.randn(2, 8, 768)).sum().backward()
        opt.step()
        if dist.get_rank() == 0:
            with torch.no_grad():
                EVAL


if __name__ == "__main__":
    main()
"""


def test_a_gpt2_model_under_ddp_broadcasts_its_buffers_in_a_rank_0_evaluation(tmp_path):
    source = GPT2_EVAL.replace("EVAL", "model(torch.randn(2, 8, 768))")
    found = _codes(lint_tree(tmp_path, {"train.py": source}), "DDP801")
    assert [f.location.line for f in found] == [_line(source, "                model(torch.randn(2, 8, 768))")]


def test_its_twin_the_plain_module_evaluated_on_rank_0_broadcasts_nothing(tmp_path):
    source = GPT2_EVAL.replace("EVAL", "model.module(torch.randn(2, 8, 768))")
    assert _codes(lint_tree(tmp_path, {"train.py": source}), "DDP801") == []


# -------------------------------------------------- a dataset that reads an option named for augmentation
# (`self.args.data_augment`) and mirrors by index parity draws nothing; one that calls an augment does
MIRROR = """
import argparse

import numpy as np
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, Dataset
from torch.utils.data.distributed import DistributedSampler


class Tracks(Dataset):
    def __init__(self, args):
        self.args = args
        self.rows = np.zeros((100, 4), dtype=np.float32)

    def __len__(self):
        return 2 * len(self.rows) if self.args.data_augment else len(self.rows)

    def __getitem__(self, index):
        row = self.rows[index // 2].copy()
        if self.args.data_augment and index % 2 == 0:
            row = MIRRORED
        return torch.from_numpy(row), 0.0


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--data_augment", type=int, default=1)
    args = parser.parse_args()
    dist.init_process_group("gloo")
    torch.manual_seed(0)
    dataset = Tracks(args)
    sampler = DistributedSampler(dataset)
    loader = DataLoader(dataset, batch_size=8, sampler=sampler, num_workers=4)
    model = DDP(torch.nn.Linear(4, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for epoch in range(2):
        sampler.set_epoch(epoch)
        for x, y in loader:
            opt.zero_grad()
            model(x).sum().backward()
            opt.step()


if __name__ == "__main__":
    main()
"""


def test_an_option_named_for_augmentation_that_mirrors_by_index_draws_nothing(tmp_path):
    source = MIRROR.replace("MIRRORED", "-row")
    assert _codes(lint_tree(tmp_path, {"train.py": source}), "DDP808") == []


def test_its_twin_a_dataset_that_calls_an_augment_draws_in_every_worker(tmp_path):
    source = MIRROR.replace("MIRRORED", "augment_row(row)").replace(
        "class Tracks(Dataset):", "from rowaug import augment_row\n\n\nclass Tracks(Dataset):")
    found = _codes(lint_tree(tmp_path, {"train.py": source}), "DDP808")
    assert [f.location.line for f in found] == [_line(source, "loader = DataLoader(")]


# -------------------------------------------------- the lint cache and the launches beside the script: a
# launch script added after a cached lint (shell or a Python launcher's argv list) is a miss, not the
# first verdict again; an unchanged tree is a hit
def _lint_cached(tmp_path, monkeypatch, files: dict) -> list:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setenv("DDPDOCTOR_LINT_CACHE", "1")
    return _codes(lint_tree(tmp_path, files), "DDP805")


def test_a_launch_added_after_a_cached_lint_is_read(tmp_path, monkeypatch):
    option = ACCUMULATE.replace("READ", OPTION)
    assert len(_lint_cached(tmp_path, monkeypatch, {"train.py": option})) == 1
    assert _lint_cached(tmp_path, monkeypatch, {"launch.py": PY_LAUNCHER.replace("VALUE", "1")}) == []
    (tmp_path / "launch.py").unlink()
    assert len(_lint_cached(tmp_path, monkeypatch, {})) == 1
    assert _lint_cached(tmp_path, monkeypatch, {"run.sh": "torchrun --nproc_per_node 2 train.py --accum 1\n"}) == []


def test_its_twin_an_unchanged_tree_comes_back_from_the_cache(tmp_path, monkeypatch):
    from ddpdoctor.lint import cache

    option = ACCUMULATE.replace("READ", OPTION)
    files = {"train.py": option, "run.sh": "torchrun --nproc_per_node 2 train.py --accum 4\n"}
    assert len(_lint_cached(tmp_path, monkeypatch, files)) == 1
    assert cache.load(str(tmp_path / "train.py")) is not None  # (a hit: nothing beside it changed)
