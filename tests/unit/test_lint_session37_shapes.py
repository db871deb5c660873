"""Shapes from session 37 (holdouts 40 and 41, read). Each with its healthy (or buggy) twin,
written in our own words."""

from __future__ import annotations

from tests.unit.test_lint_round17_shapes import lint_plain
from tests.unit.test_lint_round50_shapes import at, line_of

# -------------------------------------------------- a dataset registry filled by a decorator
# (the datasets package imports its modules only for the decorator's side effect; a models
# package beside it has a `register` decorator of its own)
REGISTRY = """
import copy
datasets = {}

def register(name):
    def decorator(cls):
        datasets[name] = cls
        return cls
    return decorator

def make(spec):
    return datasets[spec["name"]](**spec["args"])
"""
MODELS = """
import torch
models = {}

def register(name):
    def decorator(cls):
        models[name] = cls
        return cls
    return decorator

@register("mlp")
class MLP(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(4, 1)

    def forward(self, x):
        return self.fc(x)
"""
CROPS = """
# (a module of over 2,000 characters that names nothing of DDP waits unread until a rule asks for
# a name it defines: nothing names Crops, the decorator files it)
""" + "# padding\n" * 240 + """
import random
import torch
from torch.utils.data import Dataset
from datasets import register

@register("crops")
class Crops(Dataset):
    def __len__(self):
        return 64

    def __getitem__(self, i):
        return torch.full((4,), {draw})
"""
REGISTERED = """
import json
import torch, torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, DistributedSampler
import datasets
from nets.mlp import MLP

torch.manual_seed(0)

def main():
    dist.init_process_group("gloo")
    with open("data.json") as f:
        data = datasets.make(json.load(f))  # {"name": "crops", "args": {}}
    loader = DataLoader(data, batch_size=8, sampler=DistributedSampler(data), num_workers=2)  # the loader
    model = DDP(MLP())
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for epoch in range(2):
        loader.sampler.set_epoch(epoch)
        for x in loader:
            model(x).sum().backward()
            opt.step()

if __name__ == "__main__":
    main()
"""


def _registered(tmp_path, draw: str):
    for package, files in (("datasets", {"__init__.py": "from .datasets import register, make\nfrom . import crops\n",
                                         "datasets.py": REGISTRY, "crops.py": CROPS.replace("{draw}", draw)}),
                           ("nets", {"__init__.py": "", "mlp.py": MODELS})):
        (tmp_path / package).mkdir()
        for name, body in files.items():
            (tmp_path / package / name).write_text(body.lstrip("\n"))
    return lint_plain(tmp_path, REGISTERED)


def test_a_dataset_filed_by_a_register_decorator_is_read_for_its_draws(tmp_path):
    assert at(_registered(tmp_path, "random.random()"), "DDP808") == [(line_of(REGISTERED, "the loader"), "warning")]
    # (read because the decorator files it: the models' `@register` beside it files no dataset)


def test_its_twin_whose_registered_dataset_draws_nothing(tmp_path):
    assert at(_registered(tmp_path, "float(i)"), "DDP808") == []


# -------------------------------------------------- a seed option a `-m` launch gives
SEEDED_BY_OPTION = """
import argparse, random
import torch, torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, Dataset, DistributedSampler


class Flips(Dataset):
    def __len__(self):
        return 64

    def __getitem__(self, i):
        return torch.full((4,), float(random.random() < 0.5))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--seed", type=int, default=None)
    args = parser.parse_args()
    if args.seed is not None:
        torch.manual_seed(args.seed)
    dist.init_process_group("gloo")
    data = Flips()
    loader = DataLoader(data, batch_size=8, sampler=DistributedSampler(data), num_workers=2)  # the loader
    model = DDP(torch.nn.Linear(4, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for epoch in range(2):
        loader.sampler.set_epoch(epoch)
        for x in loader:
            model(x).sum().backward()
            opt.step()


if __name__ == "__main__":
    main()
"""


def _launched(tmp_path, seed: str):
    (tmp_path / "scripts").mkdir()
    (tmp_path / "scripts" / "run.sh").write_text(
        f"torchrun --nproc_per_node=2 -m pipelines.train_flips {seed}--epochs 2\n")
    (tmp_path / "pipelines").mkdir()
    (tmp_path / "pipelines" / "__init__.py").write_text("")
    script = tmp_path / "pipelines" / "train_flips.py"
    script.write_text(SEEDED_BY_OPTION.lstrip("\n"))
    from ddpdoctor.lint.driver import gather, lint_results
    return [f for r in lint_results(gather(str(script)), set()) for f in r.findings]


def test_a_seed_a_module_launch_gives_zero_is_not_none_and_seeds_every_rank_alike(tmp_path, monkeypatch):
    # (`accelerate launch -m pkg.train --seed=0`: the option set, 0 is a seed like any other)
    monkeypatch.chdir(tmp_path)
    assert at(_launched(tmp_path, "--seed=0 "), "DDP808") == [(line_of(SEEDED_BY_OPTION, "the loader"), "warning")]


def test_its_twin_whose_launch_leaves_the_seed_unset_seeds_nothing(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert at(_launched(tmp_path, ""), "DDP808") == []


# -------------------------------------------------- a worker_init_fn parameter nobody hands in
DEFAULTED_INIT = """
import random, numpy as np
import torch, torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, Dataset, DistributedSampler


def per_rank(worker_id):
    np.random.seed(torch.initial_seed() % 2 ** 31 + dist.get_rank())


class Crops(Dataset):
    def __len__(self):
        return 64

    def __getitem__(self, i):
        return torch.full((4,), float(np.random.rand()))


class Runner:
    def __init__(self):
        self.data = Crops()
        self.loader = self._loader(self.data, DistributedSampler(self.data){handed})

    def _loader(self, data, sampler, wif=None):
        return DataLoader(data, batch_size=8, sampler=sampler, num_workers=2, worker_init_fn=wif)  # the loader


def main():
    torch.manual_seed(7)
    dist.init_process_group("gloo")
    runner = Runner()
    model = DDP(torch.nn.Linear(4, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for epoch in range(2):
        runner.loader.sampler.set_epoch(epoch)
        for x in runner.loader:
            model(x).sum().backward()
            opt.step()


if __name__ == "__main__":
    main()
"""


def test_a_worker_init_fn_parameter_left_at_none_keeps_the_ranks_alike_seed(tmp_path):
    source = DEFAULTED_INIT.replace("{handed}", "")
    assert at(lint_plain(tmp_path, source), "DDP808") == [(line_of(source, "the loader"), "warning")]


def test_its_twin_handing_in_a_function_that_reseeds_by_the_rank(tmp_path):
    source = DEFAULTED_INIT.replace("{handed}", ", wif=per_rank")
    assert at(lint_plain(tmp_path, source), "DDP808") == []


# -------------------------------------------------- a generator seeded from a config mapping
GENERATOR_FROM_CONFIG = """
import random
import torch, torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, Dataset, DistributedSampler


class Crops(Dataset):
    def __len__(self):
        return 64

    def __getitem__(self, i):
        return torch.full((4,), random.random())


def main(config):
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    seed = int(config.get("seed", 0))
    g = torch.Generator()
    g.manual_seed({seed})  # the generator's seed
    data = Crops()
    loader = DataLoader(data, batch_size=8, sampler=DistributedSampler(data), num_workers=2, generator=g)
    model = DDP(torch.nn.Linear(4, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for epoch in range(2):
        loader.sampler.set_epoch(epoch)
        for x in loader:
            model(x.float()).sum().backward()
            opt.step()


if __name__ == "__main__":
    main({"seed": 3})
"""


def test_a_generator_seeded_from_a_config_field_is_alike_on_every_rank(tmp_path):
    source = GENERATOR_FROM_CONFIG.replace("{seed}", "seed")
    assert at(lint_plain(tmp_path, source), "DDP808") == [(line_of(source, "the generator's seed"), "warning")]


def test_its_twin_adding_the_rank_seeds_each_rank_apart(tmp_path):
    source = GENERATOR_FROM_CONFIG.replace("{seed}", "seed + rank")
    assert at(lint_plain(tmp_path, source), "DDP808") == []


# -------------------------------------------------- an early stopper that works from a copy of the loss
STOPPER = """
import torch, torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, DistributedSampler, TensorDataset


class Stopper:
    def __init__(self, patience=3):
        self.patience, self.best, self.bad, self.stop = patience, None, 0, False

    def __call__(self, val_loss):
        score = -val_loss
        if self.best is None or score > self.best:
            self.best, self.bad = score, 0
        else:
            self.bad += 1
            if self.bad >= self.patience:
                self.stop = True


def main():
    dist.init_process_group("gloo")
    data = TensorDataset(torch.randn(64, 4))
    loader = DataLoader(data, batch_size=8, sampler=DistributedSampler(data))
    model = DDP(torch.nn.Linear(4, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    stopper = Stopper()
    for epoch in range(50):
        loader.sampler.set_epoch(epoch)
        for (x,) in loader:
            model(x).sum().backward()
            opt.step()
        total = 0.0
        with torch.no_grad():
            for (x,) in loader:
                total += model.module(x).sum().item()
{share}        stopper(total)
        if stopper.stop:  # the decision
            break


if __name__ == "__main__":
    main()
"""


def test_a_stopper_comparing_a_copy_of_the_ranks_own_loss_parts_the_ranks(tmp_path):
    source = STOPPER.replace("{share}", "")
    assert at(lint_plain(tmp_path, source), "DDP809") == [(line_of(source, "the decision"), "warning")]


def test_its_twin_fed_the_all_reduced_loss_decides_alike(tmp_path):
    source = STOPPER.replace("{share}", "        t = torch.tensor(total)\n        dist.all_reduce(t)\n"
                                        "        total = t.item()\n")
    assert at(lint_plain(tmp_path, source), "DDP809") == []


# -------------------------------------------------- a loader bound, then bound again unread
FIRST_PASS = """
import torch, torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, DistributedSampler, TensorDataset


def provide(n):
    data = TensorDataset(torch.randn(n, 4))
    return data, DataLoader(data, batch_size=8, shuffle=True)  # the provider's loader


def main():
    dist.init_process_group("gloo")
    smallest = 10 ** 9
    for n in (64, 96):
        data, loader = provide(n)
        smallest = min(smallest, len(data))
{between}    loader = DataLoader(data, batch_size=8, sampler=DistributedSampler(data))
    model = DDP(torch.nn.Linear(4, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for epoch in range(2):
        loader.sampler.set_epoch(epoch)
        for (x,) in loader:
            model(x).sum().backward()
            opt.step()


if __name__ == "__main__":
    main()
"""


def test_a_loader_bound_and_bound_again_before_any_read_trains_nothing(tmp_path):
    # (TEMPO's first pass over the datasets only counts their samples)
    assert at(lint_plain(tmp_path, FIRST_PASS.replace("{between}", "")), "DDP802") == []


def test_its_twin_that_trains_on_the_first_loader_before_rebinding_it(tmp_path):
    source = FIRST_PASS.replace("{between}", "    model0 = DDP(torch.nn.Linear(4, 1))\n"
                                             "    for (x,) in loader:\n"
                                             "        model0(x).sum().backward()\n")
    assert at(lint_plain(tmp_path, source), "DDP802") == [(line_of(source, "the provider's loader"), "error")]


# -------------------------------------------------- a step period settled by the options
PERIOD = """
import argparse
import torch, torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, DistributedSampler, TensorDataset


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--mix", default="{mix}")
    args = parser.parse_args()
    dist.init_process_group("gloo")
    data = TensorDataset(torch.randn(64, 4))
    loader = DataLoader(data, batch_size=8, sampler=DistributedSampler(data))
    model = DDP(torch.nn.Linear(4, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for epoch in range(2):
        loader.sampler.set_epoch(epoch)
        for i, (x,) in enumerate(loader):
            model(x).sum().backward()  # the backward
            if (args.mix == "accum" and (i + 1) % 4 == 0) or args.mix in ["random", "round-robin"]:
                opt.step()
                opt.zero_grad()


if __name__ == "__main__":
    main()
"""


def test_a_step_test_the_options_make_true_on_every_pass_accumulates_nothing(tmp_path):
    assert at(lint_plain(tmp_path, PERIOD.replace("{mix}", "random")), "DDP805") == []


def test_its_twin_with_the_accumulating_mode_by_default_is_reported(tmp_path):
    source = PERIOD.replace("{mix}", "accum")
    assert at(lint_plain(tmp_path, source), "DDP805") == [(line_of(source, "the backward"), "warning")]


LATE_NO_SYNC = """
import argparse
import torch, torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, DistributedSampler, TensorDataset


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--mode", default="{mode}")
    args = parser.parse_args()
    dist.init_process_group("gloo")
    data = TensorDataset(torch.randn(64, 4))
    loader = DataLoader(data, batch_size=8, sampler=DistributedSampler(data))
    model = DDP(torch.nn.Linear(4, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for epoch in range(2):
        loader.sampler.set_epoch(epoch)
        for i, (x,) in enumerate(loader):
            loss = model(x).sum()
            if args.mode != "accum" or (i + 1) % 4 == 0:
                loss.backward()
            else:
                with model.no_sync():  # the late no_sync
                    loss.backward()
            if args.mode != "accum" or (i + 1) % 4 == 0:
                opt.step()
                opt.zero_grad()


if __name__ == "__main__":
    main()
"""


def test_a_no_sync_on_the_side_the_options_never_take_is_not_reported(tmp_path):
    assert at(lint_plain(tmp_path, LATE_NO_SYNC.replace("{mode}", "plain")), "DDP805") == []


def test_its_twin_accumulating_by_default_enters_no_sync_too_late(tmp_path):
    source = LATE_NO_SYNC.replace("{mode}", "accum")
    # (at the backward the late context holds, the line below it: session 80)
    assert (line_of(source, "the late no_sync") + 1, "warning") in at(lint_plain(tmp_path, source), "DDP805")


# -------------------------------------------------- a rank-0 property that joins two rank tests
PROPERTY = """
import os
import torch
from torch import distributed
from torch.nn.parallel import DistributedDataParallel as DDP


class Trainer:
    def __init__(self, opts):
        self.opts = opts
        self.model = DDP(torch.nn.Linear(4, 1))

    @property
    def distributed_run(self):
        return distributed.is_available() and distributed.is_initialized()

    @property
    def main_thread(self):
        return not self.distributed_run or ({test})

    def keep(self):
        if self.main_thread:
            torch.save(self.model.module.state_dict(), "last.pt")  # the save


class Opts:
    local_rank = int(os.environ.get("LOCAL_RANK", 0))


def main():
    distributed.init_process_group("gloo")
    trainer = Trainer(Opts())
    trainer.keep()


if __name__ == "__main__":
    main()
"""


def test_a_property_true_on_local_and_global_rank_zero_is_the_jobs_rank_zero(tmp_path):
    source = PROPERTY.replace("{test}", "self.opts.local_rank <= 0 and distributed.get_rank() == 0")
    assert at(lint_plain(tmp_path, source), "DDP806") == []


def test_its_twin_whose_property_tests_no_rank_saves_on_every_rank(tmp_path):
    source = PROPERTY.replace("{test}", "os.path.isdir('.')")
    assert at(lint_plain(tmp_path, source), "DDP806") == [(line_of(source, "the save"), "warning")]


# -------------------------------------------------- a local copy of a library's save method
VENDORED_MODEL = """
import os
import torch


class PreTrainedModel(torch.nn.Module):
    def save_pretrained(self, directory):
        torch.save(self.state_dict(), os.path.join(directory, "weights.bin"))  # the inner write
"""
VENDORED = """
import torch, torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from mytransformers.modeling import PreTrainedModel


class Net(PreTrainedModel):
    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(4, 1)

    def forward(self, x):
        return self.fc(x)


def main():
    dist.init_process_group("gloo")
    model = DDP(Net())
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    model(torch.randn(2, 4)).sum().backward()
    opt.step()
    keep(getattr(model, "module", model))


def keep(to_save):
    to_save.save_pretrained("out")  # the script's save
{more}

if __name__ == "__main__":
    main()
"""


def _vendored(tmp_path, more: str):
    (tmp_path / "mytransformers").mkdir()
    (tmp_path / "mytransformers" / "__init__.py").write_text("")
    (tmp_path / "mytransformers" / "modeling.py").write_text(VENDORED_MODEL.lstrip("\n"))
    return lint_plain(tmp_path, VENDORED.replace("{more}", more))


def test_a_write_inside_a_vendored_save_method_is_told_once_at_the_scripts_call(tmp_path):
    found = [(f.location.file.rsplit("/", 1)[-1], f.location.line) for f in _vendored(tmp_path, "") if f.code == "DDP806"]
    assert found == [("train.py", line_of(VENDORED, "the script's save"))]


def test_its_twin_reaching_the_inner_write_another_way_too_tells_both(tmp_path):
    found = [(f.location.file.rsplit("/", 1)[-1], f.location.line) for f in
             _vendored(tmp_path, "    Net.save_pretrained(Net(), 'again')\n") if f.code == "DDP806"]
    assert ("modeling.py", line_of(VENDORED_MODEL, "the inner write")) in found


# -------------------------------------------------- a loader tied to training by its name alone
NAMED_ONLY = """
import torch, torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, DistributedSampler, TensorDataset

data = TensorDataset(torch.randn(64, 4))
train_loader = DataLoader(data, batch_size=8, shuffle=True)  # the named loader


def main():
    dist.init_process_group("gloo")
    model = DDP(torch.nn.Linear(4, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    steps = len(train_loader)
{loop}

if __name__ == "__main__":
    main()
"""
REBUILT = """    sharded = DataLoader(train_loader.dataset, batch_size=8, sampler=DistributedSampler(train_loader.dataset))
    for epoch in range(2):
        sharded.sampler.set_epoch(epoch)
        for (x,) in sharded:
            model(x).sum().backward()
            opt.step()
"""


def test_a_loader_named_for_training_beside_the_loop_that_trains_on_another_is_not_reported(tmp_path):
    assert at(lint_plain(tmp_path, NAMED_ONLY.replace("{loop}", REBUILT)), "DDP802") == []


def test_its_twin_a_loop_that_trains_on_the_named_loader(tmp_path):
    source = NAMED_ONLY.replace("{loop}", "    for (x,) in train_loader:\n        model(x).sum().backward()\n")
    assert at(lint_plain(tmp_path, source), "DDP802") == [(line_of(source, "the named loader"), "error")]


def test_with_no_training_loop_in_sight_the_named_loader_is_not_judged(tmp_path):
    source = NAMED_ONLY.replace("{loop}", "    print(steps)\n")
    assert at(lint_plain(tmp_path, source), "DDP802") == []


def test_a_registry_table_holds_the_classes_its_own_decorator_files_not_another_tables(tmp_path, monkeypatch):
    # (the models' `@register("mlp")` is another function of the same name: MLP is no dataset)
    import ast

    from ddpdoctor.lint.program import Program
    from ddpdoctor.lint.sources import load_program

    _registered(tmp_path, "random.random()")
    monkeypatch.chdir(tmp_path)
    program = Program(load_program(str(tmp_path / "train.py")))
    make = next(f for f in program.functions if f.name == "make")
    table = next(n for n in ast.walk(make.node) if isinstance(n, ast.Subscript)).value
    assert sorted(k.name for k in program._table_entries(table, make, read=True)) == ["Crops"]


# -------------------------------------------------- a sampler returned in a tuple, either side of a choice
TUPLE_SAMPLER = """
import argparse
import torch, torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, DistributedSampler, TensorDataset


def training_data(args):
    data = TensorDataset(torch.randn(64, 4))
    sampler = DistributedSampler(data) if args.distributed else None  # the sampler
    return data, sampler


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--distributed", action="store_true")
    args = parser.parse_args()
    dist.init_process_group("gloo")
    data, data_sampler = training_data(args)
    loader = DataLoader(data, batch_size=8, sampler=data_sampler, shuffle=data_sampler is None)
    model = DDP(torch.nn.Linear(4, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for epoch in range(3):
        for (x,) in loader:
            model(x).sum().backward()
            opt.step()
{set_epoch}

if __name__ == "__main__":
    main()
"""


def test_a_sampler_unpacked_from_a_builders_tuple_gets_its_epoch_there(tmp_path):
    source = TUPLE_SAMPLER.replace("{set_epoch}", "        if args.distributed:\n"
                                                  "            data_sampler.set_epoch(epoch + 1)\n")
    assert at(lint_plain(tmp_path, source), "DDP804") == []


def test_its_twin_that_never_sets_the_epoch(tmp_path):
    source = TUPLE_SAMPLER.replace("{set_epoch}", "")
    assert at(lint_plain(tmp_path, source), "DDP804") == [(line_of(source, "the sampler"), "warning")]


def test_a_launch_naming_other_scripts_is_not_read_for_this_scripts_options(tmp_path):
    # (`train` of train.py is in every `--train_steps` of a launch folder: only the file name, or
    # the module after `-m`, says a command runs the script - the rest is never split into words)
    from ddpdoctor.lint.config_files import launch_values

    script = tmp_path / "train.py"
    script.write_text("")
    (tmp_path / "other.sh").write_text("python tools/other.py --train_steps 5\n")
    (tmp_path / "this.sh").write_text("torchrun --nproc_per_node=2 -m train --train_steps 7\n")
    read: list = []
    assert launch_values(script, {"train_steps": ("train_steps", None)}, read) == {"train_steps": 7}
    assert [p.rsplit("/", 1)[-1] for p in read] == ["this.sh"]
