"""Shapes from session 70's reading of holdout 99 (after its unread score), each with its twin, in
our own words."""

from __future__ import annotations

from tests.unit.test_lint_session39_shapes import lint_tree
from tests.unit.test_lint_session61_shapes import _codes, _line

# -------------------------------------------------- a launch written with variables that the launch
# script itself sets to one node (`export NUM_NODES=1`, `--nnodes=$NUM_NODES --node_rank $NODE_RANK`):
# one writer per node is the job's one writer
PER_NODE_SAVE = """
import os

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP


def main():
    local_rank = int(os.environ["LOCAL_RANK"])
    dist.init_process_group("gloo")
    model = DDP(torch.nn.Linear(4, 4))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for step in range(10):
        opt.zero_grad()
        model(torch.randn(2, 4)).sum().backward()
        opt.step()
    if local_rank == 0:
        torch.save(model.module.state_dict(), "checkpoint.pth")


if __name__ == "__main__":
    main()
"""
VARIABLE_LAUNCH = """
# export NUM_NODES=2
export NUM_NODES=NODES
export NODE_RANK=0
torchrun --nproc_per_node=2 \\
    --nnodes=$NUM_NODES \\
    --node_rank $NODE_RANK \\
    train.py
"""


def test_a_launch_whose_own_variables_say_one_node_tells_no_nodes_apart(tmp_path):
    files = {"train.py": PER_NODE_SAVE, "run.sh": VARIABLE_LAUNCH.replace("NODES", "1")}
    assert _codes(lint_tree(tmp_path, files), "DDP806") == []


def test_its_twin_the_variable_set_to_two_nodes_is_a_multi_node_launch(tmp_path):
    files = {"train.py": PER_NODE_SAVE, "run.sh": VARIABLE_LAUNCH.replace("NODES", "2")}
    found = _codes(lint_tree(tmp_path, files), "DDP806")
    assert [f.location.line for f in found] == [_line(PER_NODE_SAVE, "torch.save")]


def test_its_twin_a_variable_the_environment_fills_in_may_be_several_nodes(tmp_path):
    launch = VARIABLE_LAUNCH.replace("export NUM_NODES=NODES\n", "")
    files = {"train.py": PER_NODE_SAVE, "run.sh": launch}
    assert len(_codes(lint_tree(tmp_path, files), "DDP806")) == 1


# -------------------------------------------------- samplers kept in a table by split, the table handed
# on inside a config dict and read back by key (`self.config["sampler"]["train"].set_epoch(e)`); the
# loaders' table handed to accelerator.prepare the same way (`prepare(config["loader"]["train"])`)
TABLES = """
import torch
import torch.distributed as dist
from accelerate import Accelerator
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, DistributedSampler, TensorDataset


def get_loader():
    train_set = TensorDataset(torch.randn(64, 4))
    valid_set = TensorDataset(torch.randn(16, 4))
    train_sampler = DistributedSampler(train_set, shuffle=True)
    valid_sampler = DistributedSampler(valid_set, shuffle=False)
    loader = {"train": DataLoader(train_set, batch_size=8, sampler=train_sampler),
              "valid": DataLoader(valid_set, batch_size=8, sampler=valid_sampler)}
    sampler = {"train": train_sampler, "valid": valid_sampler}
    return loader, sampler


class Processor:
    def build(self):
        dist.init_process_group("gloo")
        loader, sampler = get_loader()
        model = DDP(torch.nn.Linear(4, 1))
        optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
        accelerator = Accelerator()
        config = {"loader": loader, "sampler": sampler, "train_dl": None, "optimizer": optimizer}
        config["model"], config["optimizer"], config["train_dl"] = accelerator.prepare(
            model, optimizer, PREPARED)
        self.config = config

    def train(self, epoch):
        SET_EPOCH
        for (x,) in self.config["train_dl"]:
            self.config["optimizer"].zero_grad()
            self.config["model"](x).sum().backward()
            self.config["optimizer"].step()


def main():
    processor = Processor()
    processor.build()
    for epoch in range(10):
        processor.train(epoch)


if __name__ == "__main__":
    main()
"""


def _tables(prepared, set_epoch):
    return TABLES.replace("PREPARED", prepared).replace("SET_EPOCH", set_epoch)


def test_a_sampler_read_back_from_its_table_by_key_has_its_set_epoch(tmp_path):
    # (no prepare(): Accelerate's prepared loader would set the epoch itself)
    body = _tables("[]", 'self.config["sampler"]["train"].set_epoch(epoch)')
    assert _codes(lint_tree(tmp_path, {"train.py": body}), "DDP804") == []


def test_its_twin_the_other_key_sets_another_samplers_epoch(tmp_path):
    body = _tables("[]", 'self.config["sampler"]["valid"].set_epoch(epoch)')
    found = _codes(lint_tree(tmp_path, {"train.py": body}), "DDP804")
    assert [f.location.line for f in found] == [_line(body, "train_sampler = DistributedSampler")]


def test_a_loader_of_the_table_handed_to_prepare_by_key_is_sharded_twice(tmp_path):
    body = _tables('config["loader"]["train"]', 'self.config["sampler"]["train"].set_epoch(epoch)')
    found = _codes(lint_tree(tmp_path, {"train.py": body}), "DDP803")
    assert [f.location.line for f in found] == [_line(body, '{"train": DataLoader(')]


def test_its_twin_a_loader_prepare_never_sees_is_sharded_once(tmp_path):
    body = _tables("[]", 'self.config["sampler"]["train"].set_epoch(epoch)')
    assert _codes(lint_tree(tmp_path, {"train.py": body}), "DDP803") == []


# -------------------------------------------------- a trainer class handed to the spawned worker as a
# parameter (`mp.spawn(worker, args=(..., Trainer))`, then `trainer = trainer_fn(model=ddp_model)`):
# its methods are what the loop calls
HANDED_CLASS = """
import torch
import torch.distributed as dist
import torch.multiprocessing as mp
from torch.nn.parallel import DistributedDataParallel as DDP


class Trainer:
    def __init__(self, model, accumulate):
        self.model = model
        self.accumulate = accumulate
        self.optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
        self.global_step = 0

    def training_step(self):
        loss = self.model(torch.randn(2, 4)).sum() / self.accumulate
        loss.backward()
        self.global_step += 1

    def optimizer_step(self):
        self.optimizer.step()
        self.optimizer.zero_grad()


def worker(rank, world_size, accumulate, trainer_fn):
    dist.init_process_group("gloo", rank=rank, world_size=world_size)
    trainer = trainer_fn(model=DDP(torch.nn.Linear(4, 4)), accumulate=accumulate)
    for step in range(100):
        trainer.training_step()
        if STEPPED:
            trainer.optimizer_step()


if __name__ == "__main__":
    mp.spawn(worker, args=(2, 8, Trainer), nprocs=2)
"""


def test_a_trainer_class_handed_in_as_a_parameter_is_followed_into_its_methods(tmp_path):
    body = HANDED_CLASS.replace("STEPPED", "trainer.global_step % accumulate == 0")
    found = _codes(lint_tree(tmp_path, {"train.py": body}), "DDP805")
    assert [f.location.line for f in found] == [_line(body, "loss.backward()")]


def test_its_twin_a_step_every_pass_accumulates_nothing(tmp_path):
    body = HANDED_CLASS.replace("STEPPED", "True")
    assert _codes(lint_tree(tmp_path, {"train.py": body}), "DDP805") == []


# -------------------------------------------------- a `--rank` option no launch passes (torch.distributed.launch
# hands `--local_rank` alone) and only a set-up helper nothing calls assigns: `opts.rank == 0` holds on
# every rank, so the save under it runs on every rank
RANK_OPTION = """
import argparse
import os

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP


def init_for_distributed(rank, opts):
    opts.rank = rank
    dist.init_process_group("gloo", rank=opts.rank, world_size=opts.world_size)


def main(opts):
    dist.init_process_group("gloo", rank=opts.local_rank, world_size=int(os.environ["WORLD_SIZE"]))
    SET_RANK
    model = DDP(torch.nn.Linear(4, 4))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for step in range(10):
        opt.zero_grad()
        model(torch.randn(2, 4)).sum().backward()
        opt.step()
    if opts.rank == 0:
        torch.save(model.module.state_dict(), "checkpoint.pth")


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--rank", type=int, default=0)
    parser.add_argument("--local_rank", type=int)
    main(parser.parse_args())
"""
LEGACY_LAUNCH = "python -m torch.distributed.launch --nproc_per_node=4 train.py\n"


def test_a_rank_option_no_launch_passes_and_nothing_sets_keeps_its_default(tmp_path):
    body = RANK_OPTION.replace("SET_RANK", "pass")
    found = _codes(lint_tree(tmp_path, {"train.py": body, "run.sh": LEGACY_LAUNCH}), "DDP806")
    assert [f.location.line for f in found] == [_line(body, "torch.save")]
    assert "no launch beside the script passes --rank" in found[0].message


def test_its_twin_the_code_that_runs_sets_the_rank(tmp_path):
    body = RANK_OPTION.replace("SET_RANK", "opts.rank = dist.get_rank()")
    assert _codes(lint_tree(tmp_path, {"train.py": body, "run.sh": LEGACY_LAUNCH}), "DDP806") == []


def test_its_twin_a_launch_that_passes_the_rank(tmp_path):
    body = RANK_OPTION.replace("SET_RANK", "pass")
    launch = "python -m torch.distributed.launch --nproc_per_node=4 train.py --rank $RANK\n"
    assert _codes(lint_tree(tmp_path, {"train.py": body, "run.sh": launch}), "DDP806") == []


# -------------------------------------------------- a loader builder picked by a TOML config's key
# (`task = "Pretraining"`): the builder of another task never runs, nor does its sampler
TOML_TASK = """
import sys
import tomllib

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, DistributedSampler, TensorDataset


class Config:
    def __init__(self, values):
        self.__dict__.update(values)


def load_config(path):
    with open(path, "rb") as f:
        return Config(tomllib.load(f))


def cell_loader(dataset, args):
    sampler = DistributedSampler(dataset)
    return DataLoader(dataset, batch_size=args.batch_size, sampler=sampler)


def pretrain_loader(dataset, args):
    sampler = DistributedSampler(dataset, shuffle=False)
    return DataLoader(dataset, batch_size=args.batch_size, sampler=sampler)


def get_loader(dataset, args):
    if args.task == "Cell_annotation":
        return cell_loader(dataset, args)
    elif args.task == "Pretraining":
        return pretrain_loader(dataset, args)


def main():
    args = load_config(sys.argv[1])
    dist.init_process_group("gloo")
    model = DDP(torch.nn.Linear(4, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    loader = get_loader(TensorDataset(torch.randn(64, 4)), args)
    for epoch in range(args.epochs):
        for (x,) in loader:
            opt.zero_grad()
            model(x).sum().backward()
            opt.step()


if __name__ == "__main__":
    main()
"""


def test_a_toml_config_settles_which_builder_runs(tmp_path):
    files = {"train.py": TOML_TASK, "configs/pretrain.toml": 'task = "Pretraining"\nepochs = 3\nbatch_size = 8\n'}
    assert _codes(lint_tree(tmp_path, files), "DDP804") == []


def test_its_twin_the_config_picks_the_builder_whose_sampler_shuffles(tmp_path):
    files = {"train.py": TOML_TASK, "configs/cell.toml": 'task = "Cell_annotation"\nepochs = 3\nbatch_size = 8\n'}
    found = _codes(lint_tree(tmp_path, files), "DDP804")
    assert [f.location.line for f in found] == [_line(TOML_TASK, "sampler = DistributedSampler(dataset)")]


# -------------------------------------------------- a Hugging Face sequence-to-sequence generator
# (BART's LM-head class keeps `final_logits_bias` as a buffer) wrapped in DDP, evaluated on rank 0
BART_EVAL = """
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from transformers import BartForConditionalGeneration


def main():
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    model = DDP(BartForConditionalGeneration.from_pretrained("./kobart"))
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    for step in range(10):
        ids = torch.randint(0, 100, (2, 16))
        opt.zero_grad()
        model(input_ids=ids, labels=ids).loss.backward()
        opt.step()
    if rank == 0:
        with torch.no_grad():
            EVAL


if __name__ == "__main__":
    main()
"""


def test_a_bart_generator_under_ddp_broadcasts_its_buffers_in_a_rank_0_evaluation(tmp_path):
    body = BART_EVAL.replace("EVAL", "model(input_ids=torch.randint(0, 100, (2, 16)))")
    found = _codes(lint_tree(tmp_path, {"train.py": body}), "DDP801")
    assert [(f.location.line, f.severity.value) for f in found] == [(_line(body, "model(input_ids=torch.randint(0, 100, (2, 16)))"), "warning")]


def test_its_twin_the_plain_module_evaluated_on_rank_0(tmp_path):
    body = BART_EVAL.replace("EVAL", "model.module(input_ids=torch.randint(0, 100, (2, 16)))")
    assert _codes(lint_tree(tmp_path, {"train.py": body}), "DDP801") == []


# -------------------------------------------------- a click option counting the nodes (`--nb_nodes`), and
# the node's offset handed to the spawned worker as a product (`current_rank * nb_gpus`): the spawn
# index is a rank within the node, so `gpu_idx == 0` is one writer per node
CLICK_NODES = """
import click
import torch
import torch.distributed as dist
import torch.multiprocessing as mp
from torch.nn.parallel import DistributedDataParallel as DDP


def train(gpu_idx, node_offset, world_size):
    dist.init_process_group("gloo", world_size=world_size, rank=node_offset + gpu_idx)
    model = DDP(torch.nn.Linear(4, 4))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for step in range(10):
        opt.zero_grad()
        model(torch.randn(2, 4)).sum().backward()
        opt.step()
    if gpu_idx == 0:
        torch.save(model.module.state_dict(), "generator.pt")


@click.command()
@click.option("--NODES_OPTION", type=int, default=1)
@click.option("--nb_gpus", type=int, default=1)
@click.option("--current_rank", type=int, default=0)
def main(NODES_PARAM, nb_gpus, current_rank):
    mp.spawn(train, args=(current_rank * nb_gpus, NODES_PARAM * nb_gpus), nprocs=nb_gpus)


if __name__ == "__main__":
    main()
"""


def test_a_click_option_counting_nodes_makes_the_spawn_index_one_writer_per_node(tmp_path):
    body = CLICK_NODES.replace("NODES_OPTION", "nb_nodes").replace("NODES_PARAM", "nb_nodes")
    found = _codes(lint_tree(tmp_path, {"train.py": body}), "DDP806")
    assert [f.location.line for f in found] == [_line(body, "torch.save")]
    assert "one rank per node" in found[0].message


def test_its_twin_a_count_of_something_else_tells_no_nodes_apart(tmp_path):
    body = CLICK_NODES.replace("NODES_OPTION", "nb_procs").replace("NODES_PARAM", "nb_procs")
    assert _codes(lint_tree(tmp_path, {"train.py": body}), "DDP806") == []


# -------------------------------------------------- a SLURM header read beside the commands whose
# variables are filled in: `#SBATCH --nodes=1` is one node, `--nodes=2` several
SBATCH_LAUNCH = """#!/bin/bash
#SBATCH --nodes=NODES
#SBATCH --gres=gpu:2
srun torchrun --nproc_per_node=2 train.py
"""


def test_a_slurm_header_asking_one_node_tells_no_nodes_apart(tmp_path):
    files = {"train.py": PER_NODE_SAVE, "job.sh": SBATCH_LAUNCH.replace("NODES", "1")}
    assert _codes(lint_tree(tmp_path, files), "DDP806") == []


def test_its_twin_a_slurm_header_asking_two_nodes_is_a_multi_node_launch(tmp_path):
    files = {"train.py": PER_NODE_SAVE, "job.sh": SBATCH_LAUNCH.replace("NODES", "2")}
    assert len(_codes(lint_tree(tmp_path, files), "DDP806")) == 1
