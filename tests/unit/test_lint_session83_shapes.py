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
    # the same receiver, a call the local method could take: the guess stands, as before
    script = GIF.format(call="save(out)")
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
