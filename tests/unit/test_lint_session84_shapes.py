"""Shapes from session 84 (holdout 116's leftovers and holdout 117's reading), each with its twin,
in our own words."""

from __future__ import annotations

from ddpdoctor.lint.config_files import _list_elements
from tests.unit.test_lint_session39_shapes import lint_tree
from tests.unit.test_lint_session61_shapes import _codes, _line

# -------------------------------------------------- a loop over the models every config lists
# The runner reads its YAML config into a dict, keeps `config["models"]` on the object and trains
# each listed model: `if model in ["plain"]:` builds a trainer whose loader has no sampler. Where
# no config lists "plain", no run trains it.
RUNNER = """import torch
import torch.distributed as dist
import yaml
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler


class PlainTrainer:
    def train(self):
        data = TensorDataset(torch.randn(8, 2))
        model = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(2, 2))
        loader = DataLoader(data, batch_size=2, shuffle=True)  # the plain loader
        for (x,) in loader:
            model(x).sum().backward()


class DdpTrainer:
    def train(self):
        data = TensorDataset(torch.randn(8, 2))
        model = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(2, 2))
        for (x,) in DataLoader(data, batch_size=2, sampler=DistributedSampler(data)):
            model(x).sum().backward()


class Runner:
    def __init__(self, path):
        with open(path) as stream:
            config = yaml.safe_load(stream)
        self.models = config["models"]

    def run(self):
        for model in self.models:
            if model in ["plain", "plain_small"]:
                PlainTrainer().train()
            if model == "ddp":
                DdpTrainer().train()


if __name__ == "__main__":
    dist.init_process_group("gloo")
    Runner("config.yaml").run()
"""


def test_a_model_no_config_lists_is_not_trained(tmp_path):
    found = lint_tree(tmp_path, {"train.py": RUNNER, "config.yaml": "seed: 1\nmodels: ['ddp']\n"})
    assert _codes(found, "DDP802") == []


def test_its_twin_a_model_a_config_lists_is_trained(tmp_path):
    found = lint_tree(tmp_path, {"train.py": RUNNER, "config.yaml": "models: ['ddp']\n",
                                 "other.yaml": "models:\n  - ddp\n  - plain\n"})
    assert [f.location.line for f in _codes(found, "DDP802")] == [_line(RUNNER, "# the plain loader")]


def test_a_block_list_is_read_as_the_flow_one(tmp_path):
    found = lint_tree(tmp_path, {"train.py": RUNNER, "config.yaml": "models:\n  - ddp\n  # - plain\nlr: 1\n"})
    assert _codes(found, "DDP802") == []


def test_a_list_the_lint_cannot_read_settles_nothing(tmp_path):
    # (a list of mappings: its elements are not the names the test compares)
    found = lint_tree(tmp_path, {"train.py": RUNNER, "config.yaml": "models:\n  - name: ddp\n"})
    assert [f.location.line for f in _codes(found, "DDP802")] == [_line(RUNNER, "# the plain loader")]


def test_the_loop_name_bound_again_settles_nothing(tmp_path):
    # `model = model.lower()` in the loop: the name holds more than the list's elements
    script = RUNNER.replace("        for model in self.models:\n",
                            "        for model in self.models:\n            model = model.lower()\n")
    found = lint_tree(tmp_path, {"train.py": script, "config.yaml": "models: ['ddp']\n"})
    assert [f.location.line for f in _codes(found, "DDP802")] == [_line(script, "# the plain loader")]


def test_yaml_list_elements():
    assert _list_elements("a: 1\nmodels: [x, 'y', 3]\n", ("models",)) == {"x", "y", 3}
    assert _list_elements("models:\n- x\n# - z\n- y", ("models",)) == {"x", "y"}
    assert _list_elements("t:\n  models: [a]\nmodels: [b]\n", ("t", "models")) == {"a"}
    assert _list_elements("models: x\n", ("models",)) is None
    assert _list_elements("models: [x, ${y}]\n", ("models",)) is None
    assert _list_elements("models:\nlr: 1\n", ("models",)) is None
    assert _list_elements("lr: 1\n", ("models",)) == set()


# -------------------------------------------------- a method chain below a call names no field
# A trainer's step computes its loss through what a method returns (`self.policy().module.loss(x)`):
# the lint once stopped on it (exit 3) while asking whether a field was wrapped elsewhere.
CHAIN = """import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(2, 2)

    def loss(self, x):
        return self.lin(x).sum()


class Trainer:
    def __init__(self):
        self.ddp = DDP(Net())

    def policy(self):
        return self.ddp

    def step(self, x):
        loss = self.policy().{call}(x)
        loss.backward()  # the backward


if __name__ == "__main__":
    dist.init_process_group("gloo")
    trainer = Trainer()
    for x in torch.randn(4, 2):
        trainer.step(x)
"""


def test_a_loss_through_a_chain_below_a_call_is_judged(tmp_path):
    found = lint_tree(tmp_path, {"train.py": CHAIN.format(call="module.loss")})
    assert all(f.code != "DDP810" or f.location.line == _line(CHAIN, "# the backward") for f in found)


def test_its_twin_the_wrapper_forward_through_the_chain(tmp_path):
    assert _codes(lint_tree(tmp_path, {"train.py": CHAIN.format(call="__call__")}), "DDP810") == []


# -------------------------------------------------- a trainer picked by name, distributed by name
# The worker picks its trainer class by the configured name and joins the process group only when
# that name says FSDP: a trainer whose name does not is never run by a distributed job.
TRAINERS = """import torch
import torch.distributed as dist


class SimpleTrainer:
    def __init__(self, rank):
        self.model = torch.nn.Linear(2, 2)

    def train(self):
        self.model(torch.randn(2, 2)).sum().backward()
        torch.save(self.model.state_dict(), "model.pt")  # the simple save


class FSDPTrainer:
    def __init__(self, rank):
        self.rank = rank
        self.model = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(2, 2))

    def train(self):
        self.model(torch.randn(2, 2)).sum().backward()
        if self.rank == 0:
            torch.save(self.model.state_dict(), "model.pt")
"""
WORKER = """import sys
import torch.distributed as dist
import torch.multiprocessing as mp
import trainers


def worker(rank, world, config):
    if {test}:
        dist.init_process_group("gloo", rank=rank, world_size=world)
    picked = getattr(trainers, config.trainer)
    picked(rank).train()


class Config:
    trainer = sys.argv[1]


if __name__ == "__main__":
    mp.spawn(worker, nprocs=2, args=(2, Config()))
"""


def test_a_trainer_whose_name_the_distributed_test_excludes_is_not_judged(tmp_path):
    found = lint_tree(tmp_path, {"train.py": WORKER.format(test='"FSDP" in config.trainer'), "trainers.py": TRAINERS})
    assert _codes(found, "DDP806") == []


def test_its_twin_every_trainer_joins_the_group(tmp_path):
    found = lint_tree(tmp_path, {"train.py": WORKER.format(test="world > 1"), "trainers.py": TRAINERS})
    assert [f.location.line for f in _codes(found, "DDP806")] == [_line(TRAINERS, "# the simple save")]


# -------------------------------------------------- a buffered submodule behind a switch left off
# The model builds its one buffered submodule only under `if args.keep_attn:` (a store_true the
# launch does not pass): rank 0's no-grad evaluation through the DDP model broadcasts nothing.
OFF_BUFFER = """import argparse
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP


class Smearing(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("offset", torch.linspace(0, 1, 8))


class Net(torch.nn.Module):
    def __init__(self, args):
        super().__init__()
        self.lin = torch.nn.Linear(2, 2)
        if args.keep_attn:
            self.smear = Smearing()

    def forward(self, x):
        return self.lin(x)


parser = argparse.ArgumentParser()
parser.add_argument("--keep-attn", action="store_true", default=False)
args = parser.parse_args()
dist.init_process_group("gloo")
model = DDP(Net(args))
for x in torch.randn(4, 2):
    model(x).sum().backward()
if dist.get_rank() == 0:
    with torch.no_grad():
        print(model(torch.randn(2, 2)))  # the evaluation
dist.barrier()
"""


def test_a_buffer_behind_a_switch_the_launch_leaves_off_is_not_broadcast(tmp_path):
    files = {"train.py": OFF_BUFFER, "run.sh": "torchrun --nproc_per_node 2 train.py\n"}
    assert _codes(lint_tree(tmp_path, files), "DDP801") == []


def test_its_twin_the_switch_on_builds_the_buffer(tmp_path):
    files = {"train.py": OFF_BUFFER, "run.sh": "torchrun --nproc_per_node 2 train.py --keep-attn\n"}
    found = _codes(lint_tree(tmp_path, files), "DDP801")
    assert [f.location.line for f in found] == [_line(OFF_BUFFER, "# the evaluation")]


# -------------------------------------------------- a helper defined on each side of a switch
# `reduce_mean` all-reduces where the run is distributed and is the identity otherwise, both
# defined at module level under one `if`; rank 0 alone runs the test pass that calls it.
BRANCHED_DEF = """import torch
import torch.distributed as dist

distributed = True
if distributed:
    dist.init_process_group("gloo")

    def reduce_mean(t):
        dist.all_reduce(t)
        return t / dist.get_world_size()
else:
    def reduce_mean(t):
        return t


def test(model):
    return reduce_mean(model(torch.randn(2, 2)).sum())  # the reduce


model = torch.nn.Linear(2, 2)
{tail}
"""


def test_either_definition_of_a_branched_helper_may_run(tmp_path):
    script = BRANCHED_DEF.format(tail="if dist.get_rank() == 0:\n    test(model)")
    found = _codes(lint_tree(tmp_path, {"train.py": script}), "DDP801")
    assert found and found[0].severity.value == "error"


def test_its_twin_every_rank_runs_the_test(tmp_path):
    script = BRANCHED_DEF.format(tail="test(model)")
    assert _codes(lint_tree(tmp_path, {"train.py": script}), "DDP801") == []


# -------------------------------------------------- a wrapper object built before the DDP wrap
# The loss wrapper keeps the plain nets (`self.a, self.b = a, b`); the names are wrapped in DDP
# only afterwards and the wrappers are handed to nothing but a helper that saves their weights.
KEPT_PLAIN = """import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP


class Wrapper(torch.nn.Module):
    def __init__(self, net_a, net_b):
        super().__init__()
        self.net_a, self.net_b = net_a, net_b

    def forward(self, x):
        return self.net_b(self.net_a(x)).sum()


def checkpoint(net_a, net_b):
    {body}


def main():
    dist.init_process_group("gloo")
    net_a, net_b = torch.nn.Linear(2, 2), torch.nn.Linear(2, 2)
    wrapper = Wrapper(net_a, net_b)
    net_a = DDP(net_a)
    net_b = DDP(net_b)
    for x in torch.randn(4, 2):
        loss = wrapper.forward(x)
        loss.backward()  # the backward
    checkpoint(net_a, net_b)


main()
"""
SAVES = 'torch.save(net_a.state_dict(), "a.pt")\n    torch.save(net_b.state_dict(), "b.pt")'


def test_a_wrapper_object_built_before_the_wrap_bypasses_it(tmp_path):
    script = KEPT_PLAIN.format(body=SAVES)
    found = _codes(lint_tree(tmp_path, {"train.py": script}), "DDP810")
    assert [f.location.line for f in found] == [_line(script, "# the backward")]


def test_its_twin_a_helper_that_runs_the_wrappers(tmp_path):
    # (the helper runs a forward of what it is handed: the wrappers are used, nothing is proven)
    script = KEPT_PLAIN.format(body="print(net_b(net_a(torch.randn(2, 2))))")
    assert _codes(lint_tree(tmp_path, {"train.py": script}), "DDP810") == []


# -------------------------------------------------- a library the repository vendors and installs
# The training loop lives in `third_party/Runner/runner/loop.py` (a package with its own
# setup.py, installed with `pip install -e`): the script's `from runner.loop import run` reads it.
VENDORED_LOOP = """import torch


def run(model, rank):
    for x in torch.randn(4, 2):
        model(x).sum().backward()
    torch.save(model.state_dict(), "weights.pt")  # the vendored save
"""
VENDORING_SCRIPT = """import torch
import torch.distributed as dist
import torch.multiprocessing as mp
from runner.loop import run


def worker(rank):
    dist.init_process_group("gloo", rank=rank, world_size=2)
    run(torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(2, 2)), rank)


if __name__ == "__main__":
    mp.spawn(worker, nprocs=2)
"""


def test_a_vendored_package_beside_the_project_is_read(tmp_path, monkeypatch):
    files = {"proj/train.py": VENDORING_SCRIPT, "{vendor}/Runner/setup.py": "from setuptools import setup\n",
             "{vendor}/Runner/runner/__init__.py": "", "{vendor}/Runner/runner/loop.py": VENDORED_LOOP}
    (tmp_path / "proj").mkdir()
    monkeypatch.chdir(tmp_path / "proj")
    found = lint_tree(tmp_path, {k.format(vendor="third_party"): v for k, v in files.items()}, "proj/train.py")
    assert [f.location.line for f in _codes(found, "DDP806")] == [_line(VENDORED_LOOP, "# the vendored save")]


def test_its_twin_a_folder_that_vendors_nothing_is_not_read(tmp_path, monkeypatch):
    files = {"proj/train.py": VENDORING_SCRIPT, "{vendor}/Runner/setup.py": "from setuptools import setup\n",
             "{vendor}/Runner/runner/__init__.py": "", "{vendor}/Runner/runner/loop.py": VENDORED_LOOP}
    (tmp_path / "proj").mkdir()
    monkeypatch.chdir(tmp_path / "proj")
    found = lint_tree(tmp_path, {k.format(vendor="others"): v for k, v in files.items()}, "proj/train.py")
    assert _codes(found, "DDP806") == []


# -------------------------------------------------- a torch.hub model with BatchNorm
# The encoder loads an EfficientNet from torch.hub by a name bound in its constructor: it holds
# BatchNorm buffers, so rank 0's no-grad evaluation through the DDP model broadcasts them alone.
HUB = """import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP


class Encoder(torch.nn.Module):
    def __init__(self):
        super().__init__()
        name = "{name}"
        self.base = torch.hub.load("someone/gen-models", name, pretrained=True)

    def forward(self, x):
        return self.base(x)


dist.init_process_group("gloo")
model = DDP(Encoder())
for x in torch.randn(4, 3, 8, 8):
    model(x[None]).sum().backward()
if dist.get_rank() == 0:
    with torch.no_grad():
        model(torch.randn(1, 3, 8, 8))  # the evaluation
dist.barrier()
"""


def test_a_hub_model_named_as_a_batchnorm_architecture_has_buffers(tmp_path):
    script = HUB.format(name="tf_efficientnet_b5_ap")
    found = _codes(lint_tree(tmp_path, {"train.py": script}), "DDP801")
    assert [f.location.line for f in found] == [_line(script, "# the evaluation")]


def test_its_twin_a_hub_model_of_another_name(tmp_path):
    assert _codes(lint_tree(tmp_path, {"train.py": HUB.format(name="vit_base_patch16")}), "DDP801") == []


# -------------------------------------------------- Accelerate's wrapper read off after prepare()
# `if isinstance(model, DistributedDataParallel): model = model.module` right after prepare(): in
# a run of several processes the test holds, and the training forward is the plain module's.
PREPARED = """import torch
from accelerate import Accelerator


def main():
    accelerator = Accelerator()
    model = torch.nn.Linear(2, 2)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    model, optimizer = accelerator.prepare(model, optimizer)
    if isinstance(model, (torch.nn.DataParallel, torch.nn.parallel.DistributedDataParallel)):
        {unwrap} = model.module
    for x in torch.randn(4, 2):
        loss = model(x).sum()
        accelerator.backward(loss)  # the backward
        optimizer.step()
    torch.save(accelerator.unwrap_model(model).state_dict(), "m.pt")


main()
"""


def test_a_prepared_model_read_off_its_wrapper_bypasses_it(tmp_path):
    script = PREPARED.format(unwrap="model")
    found = _codes(lint_tree(tmp_path, {"train.py": script}), "DDP810")
    assert [(f.location.line, f.severity.value) for f in found] == [(_line(script, "# the backward"), "error")]
    assert "accelerator.prepare()" in found[0].message


def test_its_twin_the_module_read_off_under_another_name(tmp_path):
    # (`raw = model.module` for saving: the training forward is the prepared wrapper's)
    assert _codes(lint_tree(tmp_path, {"train.py": PREPARED.format(unwrap="raw")}), "DDP810") == []


# -------------------------------------------------- a loop of steps that counts epochs
# The SSD-style trainer: one loop over iterations builds a fresh loader (and sampler) each epoch,
# draws its batches with next(), and counts the epochs itself; nothing sets the sampler's epoch.
STEPS = """import torch
import torch.distributed as dist
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler

dist.init_process_group("gloo")
dataset = TensorDataset(torch.randn(64, 2))
model = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(2, 2))
epoch, epoch_size = 0, 8
for iteration in range(0, 80):
    if iteration % epoch_size == 0:
        sampler = DistributedSampler(dataset)  # the sampler
        {set_epoch}
        batches = iter(DataLoader(dataset, batch_size=8, sampler=sampler))
        epoch += 1
    (x,) = next(batches)
    model(x).sum().backward()
"""


def test_a_fresh_sampler_each_counted_epoch_needs_its_epoch(tmp_path):
    script = STEPS.format(set_epoch="pass")
    found = _codes(lint_tree(tmp_path, {"train.py": script}), "DDP804")
    assert [f.location.line for f in found] == [_line(script, "# the sampler")]


def test_its_twin_each_fresh_sampler_given_the_epoch(tmp_path):
    assert _codes(lint_tree(tmp_path, {"train.py": STEPS.format(set_epoch="sampler.set_epoch(epoch)")}), "DDP804") == []


# -------------------------------------------------- the switch that starts the run, by any name
# `--parallel` (a store_true the README's launch leaves off) starts mp.spawn and hands the loader
# builder parallel=True: the distributed run is the one that turns it on.
SWITCHED = """import argparse
import torch
import torch.distributed as dist
import torch.multiprocessing as mp
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler

parser = argparse.ArgumentParser()
parser.add_argument("--parallel", action="store_true")
parser.add_argument("--swa", action="store_true")
args = parser.parse_args()


def load_data(parallel=False):
    data = TensorDataset(torch.randn(64, 2))
    if parallel:
        return DataLoader(data, batch_size=8, sampler=DistributedSampler(data))  # the sampler
    return DataLoader(data, batch_size=8, shuffle=True)


def main(rank, world):
    if args.parallel:
        dist.init_process_group("gloo", rank=rank, world_size=world)
    if {gate}:
        loader = load_data(parallel=True)
    else:
        loader = load_data(parallel=False)
    model = torch.nn.Linear(2, 2)
    for epoch in range(3):
        for (x,) in loader:
            model(x).sum().backward()


if __name__ == "__main__":
    if args.parallel:
        mp.spawn(main, args=(2,), nprocs=2)
    else:
        main(0, 1)
"""


def test_the_switch_that_starts_the_run_is_on_in_the_run_judged(tmp_path):
    script = SWITCHED.format(gate="args.parallel")
    found = _codes(lint_tree(tmp_path, {"train.py": script, "run.sh": "python train.py\n"}), "DDP804")
    assert [f.location.line for f in found] == [_line(script, "# the sampler")]


def test_its_twin_another_flag_left_off_switches_the_sampler_off(tmp_path):
    # (`--swa`, off as launched, starts nothing: the builder's distributed side is never taken)
    # (what the lint did before for every flag, the distributed run's own switch included)
    script = SWITCHED.format(gate="args.swa")
    assert _codes(lint_tree(tmp_path, {"train.py": script, "run.sh": "python train.py\n"}), "DDP804") == []


# -------------------------------------------------- a choice pinned by the constant that reaches it
# `searcher = "bid_search"` a line above `if searcher == "evolution":` (the other choices left in
# the code): the evolution searcher, whose checkpoint every rank writes, never runs.
PINNED = """import sys
import torch
import torch.distributed as dist


class Evolution:
    def run(self):
        torch.save({{"top": 1}}, "search.pth")  # the search save


def main():
    dist.init_process_group("gloo")
    model = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(2, 2))
    model(torch.randn(2, 2)).sum().backward()
    searcher = {choice}
    if searcher == "evolution":
        searcher = Evolution()
        searcher.run()


main()
"""


def test_a_choice_the_reaching_constant_rules_out_never_runs(tmp_path):
    assert _codes(lint_tree(tmp_path, {"train.py": PINNED.format(choice='"bid_search"')}), "DDP806") == []


def test_its_twin_a_choice_from_the_command_line(tmp_path):
    script = PINNED.format(choice="sys.argv[1]")
    found = _codes(lint_tree(tmp_path, {"train.py": script}), "DDP806")
    assert [f.location.line for f in found] == [_line(script, "# the search save")]
