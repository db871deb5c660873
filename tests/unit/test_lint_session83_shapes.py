"""Shapes from session 83 (holdout 115's reading after its unread score), each with its twin,
in our own words."""

from __future__ import annotations

from tests.unit.test_lint_session39_shapes import lint_tree
from tests.unit.test_lint_session61_shapes import _codes, _line

# -------------------------------------------------- a library object's save() is no local save()
# The project has one class with a `save(self, path)` method that torch.saves. Elsewhere, on every
# rank, a list of images (a library's objects) is written as an animation with keywords that
# method does not take: a call it cannot be is no call of it.
GIF = """import torch
import torch.distributed as dist
from PIL import Image


class Flow(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.net = torch.nn.Linear(2, 2)

    def save(self, path):
        torch.save(self.net.state_dict(), path)  # the local save


def make_gif(files, out):
    frames = [Image.open(f) for f in files]
    frames[0].{call}


def main():
    dist.init_process_group("gloo")
    model = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(2, 2))
    for x in torch.randn(4, 2):
        model(x).sum().backward()
    make_gif(["a.png", "b.png"], f"anim_{{dist.get_rank()}}.gif")


main()
"""


def test_a_call_with_keywords_the_method_does_not_take_is_not_that_method(tmp_path):
    script = GIF.format(call="save(out, save_all=True, append_images=frames[1:], loop=0)")
    assert _codes(lint_tree(tmp_path, {"train.py": script}), "DDP806") == []


def test_its_twin_a_call_that_fits_the_method_may_be_it(tmp_path):
    # the same receiver, a call the local method could take: the guess stands, as before (on a
    # path every rank shares: the guessed call's own per-rank `out` would be no finding, session 97)
    script = GIF.format(call="save(out)").replace('f"anim_{dist.get_rank()}.gif"', '"anim.gif"')
    assert '"anim.gif"' in script
    found = _codes(lint_tree(tmp_path, {"train.py": script}), "DDP806")
    assert [f.location.line for f in found] == [_line(script, "# the local save")]


# -------------------------------------------------- a builtin that looks at a function runs none
# Rank 0 keeps a best score on the training function's own attribute (`hasattr(train_step,
# "best")`, `train_step.best = acc`): nothing there calls train_step, whose backward goes
# through the DDP model.
LOOKED_AT = """import torch
import torch.distributed as dist


def train_step(model, x):
    model(x).sum().backward()


def main():
    dist.init_process_group("gloo")
    model = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(2, 2))
    for epoch in range(3):
        train_step(model, torch.randn(4, 2))
        if dist.get_rank() == 0:
            acc = float(epoch)
            {looked}


main()
"""


def test_hasattr_of_a_function_under_a_rank_test_calls_nothing(tmp_path):
    script = LOOKED_AT.format(looked='if not hasattr(train_step, "best") or acc > train_step.best:\n'
                                     '                train_step.best = acc  # the record')
    assert _codes(lint_tree(tmp_path, {"train.py": script}), "DDP801") == []


def test_its_twin_a_callback_handed_the_function_under_a_rank_test_runs_it(tmp_path):
    # handed to the script's own runner, which calls what it is given: rank 0's backward alone
    script = LOOKED_AT.replace("def main():", "def run(step, model):\n    step(model, torch.randn(4, 2))\n\n\ndef main():")
    script = script.format(looked="run(train_step, model)  # the extra step")
    found = _codes(lint_tree(tmp_path, {"train.py": script}), "DDP801")
    assert found and found[0].severity == "error"


# -------------------------------------------------- a raise swallowed a few calls up
# A tracker's loss checks its own predictions (`if torch.isnan(pred).any(): raise ValueError`)
# after the DDP forward; the step loop backpropagates what the loss returns; the trainer wraps
# the epoch in a bare `except:` that, with fail_safe on, prints and restarts the epoch. The
# rank whose predictions went NaN skips its backward and starts over while the others wait in
# their gradient all-reduce.
SWALLOWED = """import traceback

import torch
import torch.distributed as dist


class Actor:
    def __init__(self, net):
        self.net = net

    def __call__(self, x):
        pred = self.net(x)
        return self.compute_losses(pred)

    def compute_losses(self, pred):
        if torch.isnan(pred).any():  # the check
            raise ValueError("network output is NaN")
        return pred.pow(2).mean()


class Trainer:
    def __init__(self, actor, opt):
        self.actor, self.opt = actor, opt

    def cycle(self):
        for x in torch.randn(8, 4, 2):
            loss = self.actor(x)
            self.opt.zero_grad()
            loss.backward()
            self.opt.step()

    def train(self, epochs, fail_safe=True):
        epoch = 0
        while epoch < epochs:
            try:
                self.cycle()
                epoch += 1
            except:
                {handler}


def main():
    dist.init_process_group("gloo")
    net = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(2, 2))
    Trainer(Actor(net), torch.optim.SGD(net.parameters(), lr=0.1)).train(3)


main()
"""
RESTARTS = """if fail_safe:
                    print(traceback.format_exc())
                else:
                    raise"""


def test_a_nan_raise_a_callers_handler_swallows_is_a_skip(tmp_path):
    script = SWALLOWED.format(handler=RESTARTS)
    found = _codes(lint_tree(tmp_path, {"train.py": script}), "DDP809")
    assert [(f.location.line, f.severity) for f in found] == [(_line(script, "# the check"), "warning")]
    assert "backward" in found[0].message


def test_its_twin_a_handler_that_raises_again_ends_the_job(tmp_path):
    script = SWALLOWED.format(handler="print(traceback.format_exc())\n                raise")
    assert _codes(lint_tree(tmp_path, {"train.py": script}), "DDP809") == []


def test_its_twin_no_handler_up_the_calls_ends_the_job(tmp_path):
    script = SWALLOWED.format(handler=RESTARTS).replace("self.cycle()\n                epoch += 1",
                                                       "epoch += 1").replace(
        "Trainer(Actor(net), torch.optim.SGD(net.parameters(), lr=0.1)).train(3)",
        "t = Trainer(Actor(net), torch.optim.SGD(net.parameters(), lr=0.1))\n    t.train(3)\n    t.cycle()")
    assert _codes(lint_tree(tmp_path, {"train.py": script}), "DDP809") == []


# -------------------------------------------------- rows a helper samples, kept out of training
# The validation galaxies are picked with pandas' `temp.sample(1)` (no random_state) in a helper;
# the training frame is what is left (`frame[~frame.name.isin(val.name)]`) and is sharded by a
# DistributedSampler. Nothing seeds numpy: each rank holds out other rows and shards its own set.
FRAMES = """import numpy as np
import pandas as pd
import torch
import torch.distributed as dist
from torch.utils.data import DataLoader, DistributedSampler

{seeded}

def pick_rows(frame):
    picked = []
    for t in sorted(frame["t"].unique()):
        picked.append(frame[frame["t"] == t].sample(1{state})["name"].values[0])
    return frame[frame["name"].isin(picked)]


def load(path):
    frame = pd.read_parquet(path)
    val = pd.concat([pick_rows(frame[frame["m"] < 1]), pick_rows(frame[frame["m"] >= 1])])
    frame = frame[~frame["name"].isin(val["name"])]
    return torch.from_numpy(frame[["a", "b"]].values), torch.from_numpy(val[["a", "b"]].values)


def main():
    dist.init_process_group("gloo")
    train, val = load("galaxies.parquet")
    loader = DataLoader(train, batch_size=4, sampler=DistributedSampler(train))  # the sampler
    model = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(2, 1))
    for epoch in range(2):
        loader.sampler.set_epoch(epoch)
        for x in loader:
            model(x.float()).sum().backward()


main()
"""


def test_rows_a_helper_samples_out_of_the_training_frame_part_the_ranks(tmp_path):
    script = FRAMES.format(seeded="", state="")
    found = _codes(lint_tree(tmp_path, {"train.py": script}), "DDP803")
    assert [f.location.line for f in found] == [_line(script, "# the sampler")]
    assert "sample(1)" in found[0].message


def test_its_twin_a_seeded_sample_draws_alike(tmp_path):
    script = FRAMES.format(seeded="", state=", random_state=0")
    assert _codes(lint_tree(tmp_path, {"train.py": script}), "DDP803") == []


def test_its_twin_numpy_seeded_alike_draws_alike(tmp_path):
    script = FRAMES.format(seeded="np.random.seed(0)\n", state="")
    assert _codes(lint_tree(tmp_path, {"train.py": script}), "DDP803") == []


def test_a_distributions_sample_is_no_row_draw(tmp_path):
    # `dist.sample((n,))` of a torch distribution draws values, not rows of a frame
    script = FRAMES.format(seeded="", state="").replace(
        'frame[frame["t"] == t].sample(1)["name"].values[0]',
        'frame[frame["t"] == t]["name"].values[int(torch.distributions.Uniform(0, 1).sample((1,)).item())]')
    assert _codes(lint_tree(tmp_path, {"train.py": script}), "DDP803") == []


# -------------------------------------------------- launches that disagree settle nothing
# One README launch runs one process; the other starts several nodes with `--nodes 4`. A save
# under `if args.nodes > 1:` without a rank test is on the multi-node run's way.
NODES = """import argparse

import torch
import torch.distributed as dist


def save(args, model):
    if args.nodes > 1:
        torch.save(model.module.state_dict(), "last.pt")  # the save


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--nodes", type=int, default=1)
    parser.add_argument("--nr", type=int, default=0)
    args = parser.parse_args()
    dist.init_process_group("gloo", rank=args.nr, world_size=args.nodes)
    model = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(2, 2))
    model(torch.randn(4, 2)).sum().backward()
    save(args, model)


main()
"""
README = """# Training

```
python train.py --epochs 5
{second}
```
"""


def test_an_option_one_launch_raises_is_not_settled_by_its_default(tmp_path):
    files = {"train.py": NODES, "README.md": README.format(second="python train.py --nodes 4 --nr 0")}
    found = _codes(lint_tree(tmp_path, files), "DDP806")
    assert [f.location.line for f in found] == [_line(NODES, "# the save")]


def test_its_twin_launches_that_all_leave_the_default_settle_it(tmp_path):
    files = {"train.py": NODES, "README.md": README.format(second="python train.py --epochs 9")}
    assert _codes(lint_tree(tmp_path, files), "DDP806") == []


# -------------------------------------------------- one process a node: the node index is the rank
# The tutorial's `rank = args.nr * args.gpus + gpu`, with `args.gpus = 1` set once: one process a
# node, so `if args.nr == 0:` is rank 0's test and the save under it is one rank's.
PER_NODE = """import argparse

import torch
import torch.distributed as dist
import torch.multiprocessing as mp


def main(gpu, args):
    rank = args.nr * args.gpus + gpu
    dist.init_process_group("gloo", rank=rank, world_size=args.world_size)
    model = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(2, 2))
    model(torch.randn(4, 2)).sum().backward()
    if args.nr == 0:
        torch.save(model.module.state_dict(), "last.pt")  # the save


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--nodes", type=int, default=1)
    parser.add_argument("--nr", type=int, default=0)
    args = parser.parse_args()
    args.gpus = {gpus}
    args.world_size = args.gpus * args.nodes
    mp.spawn(main, args=(args,), nprocs=args.gpus)
"""


def test_the_node_index_with_one_process_a_node_is_the_rank(tmp_path):
    script = PER_NODE.format(gpus="1")
    assert _codes(lint_tree(tmp_path, {"train.py": script}), "DDP806") == []


def test_its_twin_several_processes_a_node_all_write(tmp_path):
    # every process of node 0 passes `args.nr == 0`
    script = PER_NODE.format(gpus="torch.cuda.device_count()")
    found = _codes(lint_tree(tmp_path, {"train.py": script}), "DDP806")
    assert [f.location.line for f in found] == [_line(script, "# the save")]


# -------------------------------------------------- a remainder compared with a value it never takes
# `if epoch % 10 == -1:` is never true (Python's `%` by 10 is in 0..9): rank 0's DDP forward under
# it never runs.
DEAD_REMAINDER = """import torch
import torch.distributed as dist


def main():
    dist.init_process_group("gloo")
    model = torch.nn.parallel.DistributedDataParallel(torch.nn.BatchNorm1d(2))
    for epoch in range(1, 20):
        model(torch.randn(4, 2)).sum().backward()
        if dist.get_rank() == 0 and epoch % 10 == {value}:
            with torch.no_grad():
                print(model(torch.randn(4, 2)).mean())  # the probe


main()
"""


def test_a_remainder_that_never_meets_its_value_runs_nothing(tmp_path):
    script = DEAD_REMAINDER.format(value="-1")
    assert _codes(lint_tree(tmp_path, {"train.py": script}), "DDP801") == []


def test_its_twin_a_remainder_in_range_runs(tmp_path):
    script = DEAD_REMAINDER.format(value="0")
    found = _codes(lint_tree(tmp_path, {"train.py": script}), "DDP801")
    assert [f.location.line for f in found] == [_line(script, "# the probe")]


# -------------------------------------------------- rank 0 unwraps its own field before evaluating
# After training, rank 0 rebinds `self.model = self.model.module` and runs its evaluation methods,
# whose forwards read `self.model`, and a helper handed `model=self.model`: plain modules there.
UNWRAPPED_FIELD = """import torch
import torch.distributed as dist


class Evaluator:
    def run(self, model):
        with torch.no_grad():
            return model(torch.randn(4, 2)).mean()  # the helper's forward


class Trainer:
    def __init__(self):
        self.model = torch.nn.parallel.DistributedDataParallel(torch.nn.BatchNorm1d(2))

    def _test(self):
        with torch.no_grad():
            return self.model(torch.randn(4, 2)).mean()  # the method's forward

    def train(self):
        for step in range(3):
            self.model(torch.randn(4, 2)).sum().backward()
        if dist.get_rank() == 0:
            {unwrap}
            print(self._test())
            print(Evaluator().run(model=self.model))


dist.init_process_group("gloo")
Trainer().train()
"""


def test_a_field_unwrapped_before_rank_zeros_evaluation_runs_no_collective(tmp_path):
    script = UNWRAPPED_FIELD.format(unwrap="if isinstance(self.model, torch.nn.parallel.DistributedDataParallel):\n"
                                           "                self.model = self.model.module")
    assert _codes(lint_tree(tmp_path, {"train.py": script}), "DDP801") == []


def test_its_twin_the_wrapper_kept_broadcasts_on_rank_zero_alone(tmp_path):
    script = UNWRAPPED_FIELD.format(unwrap="pass")
    found = _codes(lint_tree(tmp_path, {"train.py": script}), "DDP801")
    assert sorted(f.location.line for f in found) == \
        sorted([_line(script, "# the method's forward"), _line(script, "# the helper's forward")])


# -------------------------------------------------- a skipped batch of a no-grad evaluation loop
# Every rank evaluates; a rank skips a batch whose images hold a NaN. With gradients off DDP
# broadcasts the buffers once, in a rank's first forward after training: the skip meets no one.
SKIPPED_EVAL = """import torch
import torch.distributed as dist
from torch.utils.data import DataLoader, DistributedSampler, TensorDataset


class Trainer:
    def __init__(self):
        self.model = torch.nn.parallel.DistributedDataParallel(torch.nn.BatchNorm1d(2))
        data = TensorDataset(torch.randn(64, 2), torch.randn(64, 2))
        self.loader = DataLoader(data, batch_size=8, sampler=DistributedSampler(data))

    def train_epoch(self):
        for x, y in self.loader:
            self.model(x).sum().backward()

    def validate(self):
        {grad}
            for i, (x, y) in enumerate(self.loader):
                x = x.to("cpu")
                if torch.isnan(x).any() or torch.isnan(y).any():  # the skip
                    continue
                out = self.model(x)
                {step}


dist.init_process_group("gloo")
trainer = Trainer()
for epoch in range(2):
    trainer.train_epoch()
    trainer.validate()
"""


def test_a_skipped_batch_of_a_no_grad_evaluation_is_no_divergence(tmp_path):
    script = SKIPPED_EVAL.format(grad="with torch.no_grad():", step="print(out.mean())")
    assert _codes(lint_tree(tmp_path, {"train.py": script}), "DDP809") == []


def test_its_twin_a_skipped_training_batch_parts_the_ranks(tmp_path):
    script = SKIPPED_EVAL.format(grad="if True:", step="out.sum().backward()")
    found = _codes(lint_tree(tmp_path, {"train.py": script}), "DDP809")
    assert [f.location.line for f in found] == [_line(script, "# the skip")]


# -------------------------------------------------- the one-process side of the run's own switch
# Rank 0's validation calls `self.model.module(x)` where the run is distributed and `self.model(x)`
# on the other side of `if cfg.distributed:`: no DDP forward on rank 0 alone.
SWITCHED = """import torch
import torch.distributed as dist


class Cfg:
    distributed = True


cfg = Cfg()


class Trainer:
    def __init__(self):
        self.model = torch.nn.parallel.DistributedDataParallel(torch.nn.BatchNorm1d(2))

    def validate(self):
        with torch.no_grad():
            x = torch.randn(4, 2)
            {forward}

    def run(self):
        self.model(torch.randn(4, 2)).sum().backward()
        if dist.get_rank() == 0:
            self.validate()
        dist.barrier()


dist.init_process_group("gloo")
Trainer().run()
"""


def test_a_forward_on_the_one_process_side_of_the_switch_is_no_collective(tmp_path):
    script = SWITCHED.format(forward="if cfg.distributed:\n                print(self.model.module(x))\n"
                                     "            else:\n                print(self.model(x))  # the forward")
    assert _codes(lint_tree(tmp_path, {"train.py": script}), "DDP801") == []


def test_its_twin_the_wrapper_on_the_distributed_side_broadcasts(tmp_path):
    script = SWITCHED.format(forward="if cfg.distributed:\n                print(self.model(x))  # the forward\n"
                                     "            else:\n                print(self.model.module(x))")
    found = _codes(lint_tree(tmp_path, {"train.py": script}), "DDP801")
    assert [f.location.line for f in found] == [_line(script, "# the forward")]


# -------------------------------------------------- a main-process helper falling back on the environment
# `is_main_process()` answers from RANK where the launcher set it, and True otherwise (one
# process): a rank test, so the save under it is rank 0's.
ENV_HELPER = """import os

import torch
import torch.distributed as dist


def is_main_process():
    if {test}:
        return int(os.environ["RANK"]) == 0
    return True


def main():
    dist.init_process_group("gloo")
    model = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(2, 2))
    model(torch.randn(4, 2)).sum().backward()
    if is_main_process():
        torch.save(model.module.state_dict(), "last.pt")  # the save


main()
"""


def test_a_helper_answering_from_the_launchers_variables_is_a_rank_test(tmp_path):
    script = ENV_HELPER.format(test="'RANK' in os.environ and 'WORLD_SIZE' in os.environ")
    assert _codes(lint_tree(tmp_path, {"train.py": script}), "DDP806") == []


def test_a_helper_asking_the_variable_the_other_way_is_one_too(tmp_path):
    script = ENV_HELPER.format(test="not 'RANK' not in os.environ")
    assert _codes(lint_tree(tmp_path, {"train.py": script}), "DDP806") == []


def test_its_twin_a_helper_whose_test_is_some_rank_own_state_is_not(tmp_path):
    # (a test of the rank's own file: true on some ranks, `True` then on those: every rank may save)
    script = ENV_HELPER.format(test="os.path.exists(f'lock_{os.getpid()}')")
    found = _codes(lint_tree(tmp_path, {"train.py": script}), "DDP806")
    assert [f.location.line for f in found] == [_line(script, "# the save")]


# -------------------------------------------------- a retry draw picks another sample
# The dataset's reader, on a sample whose files are missing, draws another index and retries: no
# augmentation the workers draw. (Every rank seeds alike; four workers.)
RETRY = """import os
import random

import torch
import torch.distributed as dist
from torch.utils.data import DataLoader, Dataset, DistributedSampler


class Frames(Dataset):
    def __init__(self, files):
        self.files = files

    def __len__(self):
        return len(self.files)

    def __getitem__(self, idx):
        while True:
            path = self.files[idx]
            if not os.path.exists(path):
                idx = random.randint(0, len(self.files) - 1)
                continue
            x = torch.load(path){augment}
            return x


def main():
    dist.init_process_group("gloo")
    torch.manual_seed(0)
    data = Frames([f"f{{i}}.pt" for i in range(64)])
    loader = DataLoader(data, batch_size=4, sampler=DistributedSampler(data), num_workers=4)  # the loader
    model = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(2, 2))
    for epoch in range(2):
        loader.sampler.set_epoch(epoch)
        for x in loader:
            model(x).sum().backward()


main()
"""


def test_a_draw_that_only_picks_a_stand_in_sample_is_no_augmentation(tmp_path):
    script = RETRY.format(augment="")
    assert _codes(lint_tree(tmp_path, {"train.py": script}), "DDP808") == []


def test_its_twin_a_side_that_reshuffles_before_it_retries_draws(tmp_path):
    # (not a stand-in pick: the side reorders the files in the worker, every later item with it)
    script = RETRY.format(augment="").replace(
        "idx = random.randint(0, len(self.files) - 1)", "random.shuffle(self.files)")
    found = _codes(lint_tree(tmp_path, {"train.py": script}), "DDP808")
    assert [f.location.line for f in found] == [_line(script, "# the loader")]


def test_its_twin_a_random_flip_is_one(tmp_path):
    script = RETRY.format(augment="\n            if random.random() < 0.5:\n                x = x.flip(0)")
    found = _codes(lint_tree(tmp_path, {"train.py": script}), "DDP808")
    assert [f.location.line for f in found] == [_line(script, "# the loader")]


# -------------------------------------------------- a config flag every config sets false
# A Lightning run (its Trainer keeps the checkpoints) saves an extra model under
# `if cfg.method.save_model:`, which every method config beside the script sets false.
LIGHTNING_FLAG = """import hydra
import lightning as L
import torch


class Net(L.LightningModule):
    def __init__(self):
        super().__init__()
        self.layer = torch.nn.Linear(2, 2)

    def training_step(self, batch, i):
        return self.layer(batch).sum()

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.1)


def extra_save(cfg, model):
    if cfg.method.save_model:
        torch.save(model, "merged.ckpt")  # the save


@hydra.main(config_path="config", config_name="config")
def main(cfg):
    model = Net()
    L.Trainer(strategy="ddp", devices=2).fit(model, torch.utils.data.DataLoader(torch.randn(16, 2)))
    extra_save(cfg, model)


main()
"""
METHOD = """method:
  name: {name}
  save_model: {value}
"""


def test_a_flag_every_config_sets_false_keeps_the_extra_save_off(tmp_path):
    files = {"train.py": LIGHTNING_FLAG, "config/config.yaml": "defaults:\n  - method: a\n",
             "config/method/a.yaml": METHOD.format(name="a", value="false"),
             "config/method/b.yaml": METHOD.format(name="b", value="false")}
    assert _codes(lint_tree(tmp_path, files), "DDP806") == []


def test_its_twin_a_config_that_turns_it_on_saves_on_every_rank(tmp_path):
    files = {"train.py": LIGHTNING_FLAG, "config/config.yaml": "defaults:\n  - method: a\n",
             "config/method/a.yaml": METHOD.format(name="a", value="false"),
             "config/method/b.yaml": METHOD.format(name="b", value="true")}
    found = _codes(lint_tree(tmp_path, files), "DDP806")
    assert [f.location.line for f in found] == [_line(LIGHTNING_FLAG, "# the save")]


# -------------------------------------------------- an imported function that drives the training
# The entry script calls `run(cfg)` of its package; run builds a transformers Trainer, trains, then
# every rank writes `model.save_pretrained(dir)`. The DeepSpeed configs beside it hold ZeRO stages
# below 3: every rank holds the whole model, and writes the same files.
DRIVER = """import torch
from transformers import Trainer, TrainingArguments


def run(cfg, model, data):
    args = TrainingArguments(output_dir="out", deepspeed=cfg["ds_config"])
    trainer = Trainer(model=model, args=args, train_dataset=data)
    trainer.train()
    model.save_pretrained(cfg["save_dir"])  # the save
"""
ENTRY = """import torch
import torch.distributed as dist
from transformers import AutoModelForCausalLM

from src.driver import run

dist.init_process_group("nccl")
run({"ds_config": "config/ds.json", "save_dir": "out/final"},
    AutoModelForCausalLM.from_pretrained("gpt2"), torch.utils.data.TensorDataset(torch.randn(8, 2)))
"""
DS = '{"zero_optimization": {"stage": %d}, "train_micro_batch_size_per_gpu": "auto"}'


def test_a_save_in_an_imported_training_driver_is_every_ranks(tmp_path):
    files = {"train.py": ENTRY, "src/__init__.py": "", "src/driver.py": DRIVER, "config/ds.json": DS % 0}
    found = _codes(lint_tree(tmp_path, files), "DDP806")
    assert [(f.location.file.rpartition("/")[2], f.location.line) for f in found] == \
        [("driver.py", _line(DRIVER, "# the save"))]


def test_its_twin_zero_three_shards_what_each_rank_holds(tmp_path):
    # (a ZeRO-3 config beside it: which ranks hold the state save_pretrained writes is not in sight)
    files = {"train.py": ENTRY, "src/__init__.py": "", "src/driver.py": DRIVER, "config/ds.json": DS % 3}
    assert _codes(lint_tree(tmp_path, files), "DDP806") == []


def test_its_twin_an_imported_helper_that_trains_nothing_is_not_judged(tmp_path):
    # a converter that only writes what it is handed: which ranks call it is the caller's business
    helper = DRIVER.replace("    trainer.train()\n", "")
    files = {"train.py": ENTRY, "src/__init__.py": "", "src/driver.py": helper, "config/ds.json": DS % 0}
    assert _codes(lint_tree(tmp_path, files), "DDP806") == []


# -------------------------------------------------- a model class picked into a local name
# `model_cls = select_model(kind)` returns a class an if/elif binds to a local name; the class's
# base loads `AutoModel.from_pretrained(base_model_name)`, the name a dataclass field's default
# ("bert-base-uncased": buffers). Rank 0's no-grad validation through the DDP wrapper broadcasts.
PICKED = """from dataclasses import dataclass

import torch
import torch.distributed as dist
from transformers import AutoModel


@dataclass
class Config:
    base_model_name: str = "{checkpoint}"
    kind: int = 1


class Base(torch.nn.Module):
    def __init__(self, base_model_name):
        super().__init__()
        self.encoder = AutoModel.from_pretrained(base_model_name)

    def forward(self, x):
        return self.encoder(x).last_hidden_state.mean()


class Joint(Base):
    def __init__(self, base_model_name):
        super().__init__(base_model_name)


class Span(Base):
    def __init__(self, base_model_name):
        super().__init__(base_model_name)


def select_model(kind):
    model = None
    if kind == 1:
        model = Joint
    elif kind == 2:
        model = Span
    return model


class Trainer:
    def __init__(self, config: Config):
        model_cls = select_model(config.kind)
        self.model = torch.nn.parallel.DistributedDataParallel(model_cls(base_model_name=config.base_model_name))

    def train(self):
        x = torch.randint(0, 100, (4, 8))
        self.model(x).backward()
        if dist.get_rank() == 0:
            with torch.no_grad():
                print(self.model(x))  # the validation


dist.init_process_group("gloo")
Trainer(Config()).train()
"""


def test_a_picked_class_built_from_a_dataclass_default_checkpoint_holds_buffers(tmp_path):
    script = PICKED.format(checkpoint="bert-base-uncased")
    found = _codes(lint_tree(tmp_path, {"train.py": script}), "DDP801")
    assert [f.location.line for f in found] == [_line(script, "# the validation")]


def test_its_twin_a_checkpoint_of_a_family_without_buffers(tmp_path):
    script = PICKED.format(checkpoint="my-org/tiny-mlp")
    assert _codes(lint_tree(tmp_path, {"train.py": script}), "DDP801") == []


def test_a_deepspeed_config_nested_past_the_parser_is_no_config(tmp_path):
    # (a hostile or broken JSON beside the script: read as saying no stage, never a crash)
    nested = '{"zero_optimization": ' + "[" * 50_000 + "]" * 50_000 + "}"
    files = {"train.py": ENTRY, "src/__init__.py": "", "src/driver.py": DRIVER, "config/ds.json": nested}
    assert _codes(lint_tree(tmp_path, files), "DDP806") == []
