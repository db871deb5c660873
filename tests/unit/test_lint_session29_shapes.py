"""Shapes from session 29 (holdout 30, part A, read after it was scored). Each with its healthy (or
buggy) twin, written in our own words."""

from __future__ import annotations

import textwrap

from ddpdoctor.lint.driver import gather, lint_results
from tests.unit.test_lint_round17_shapes import lint_plain
from tests.unit.test_lint_round50_shapes import at, line_of

# -------------------------------------------------- a rank kept in a dict, read with .get
CONFIG_RANK = """
import torch, torch.distributed as dist, torch.multiprocessing as mp
from torch.nn.parallel import DistributedDataParallel as DDP

class Trainer:
    def __init__(self, config):
        self.rank = {read}
        self.model = DDP(torch.nn.Linear(4, 1))

    def save(self):
        torch.save(self.model.state_dict(), "last.pt")  # the save

    def fit(self):
        for epoch in range(3):
            self.model(torch.randn(2, 4)).sum().backward()
            if self.rank == 0:
                self.save()

def run(rank, world_size, config):
    dist.init_process_group("gloo", init_method="tcp://localhost:29500", rank=rank, world_size=world_size)
    config["rank"] = rank
    Trainer(config).fit()

if __name__ == "__main__":
    mp.spawn(run, nprocs=2, args=(2, {}))
"""


def test_a_rank_read_from_a_dict_with_get_is_the_rank(tmp_path):
    assert at(lint_plain(tmp_path, CONFIG_RANK.replace("{read}", 'config.get("rank", 0)')), "DDP806") == []


def test_its_twin_another_key_read_with_get_is_no_rank_test(tmp_path):
    code = CONFIG_RANK.replace("{read}", 'config.get("save_every", 0)')
    assert at(lint_plain(tmp_path, code), "DDP806") == [(line_of(code, "# the save"), "warning")]


def test_the_subscript_and_the_get_read_the_same_entry(tmp_path):
    assert at(lint_plain(tmp_path, CONFIG_RANK.replace("{read}", 'config["rank"]')), "DDP806") == []


# -------------------------------------------------- a file per sample of each rank's batches
PER_SAMPLE = """
import torch, torch.distributed as dist
from torch.utils.data import DataLoader, TensorDataset, DistributedSampler
from torch.nn.parallel import DistributedDataParallel as DDP

class Logger:
    def log_every(self, iterable, n):
        for i, item in enumerate(iterable):
            yield item

def evaluate(model, data_loader, names):
    for ids, x in Logger().log_every(data_loader, 10):
        out = model(x)
        for sample_id, row in zip(ids, out):
            name = names[sample_id.item()]
            torch.save(row, {path})  # the save

def main():
    dist.init_process_group("gloo")
    ds = TensorDataset(torch.arange(64), torch.randn(64, 4))
    model = DDP(torch.nn.Linear(4, 1))
    loader = DataLoader(ds, batch_size=8, sampler=DistributedSampler(ds))
    for (ids, x) in loader:
        model(x).sum().backward()
    with torch.no_grad():
        evaluate(model, loader, [str(i) for i in range(64)])

main()
"""


def test_a_file_named_for_each_sample_of_the_batch_has_one_writer(tmp_path):
    assert at(lint_plain(tmp_path, PER_SAMPLE.replace("{path}", 'f"out/{name}.pt"')), "DDP806") == []


def test_its_twin_a_file_named_for_the_step_is_every_ranks(tmp_path):
    code = PER_SAMPLE.replace("for ids, x in Logger().log_every(data_loader, 10):",
                              "for step, (ids, x) in enumerate(data_loader):").replace("{path}", 'f"out/{step}.pt"')
    assert at(lint_plain(tmp_path, code), "DDP806") == [(line_of(code, "# the save"), "warning")]


def test_a_file_named_from_a_setting_in_the_loop_is_every_ranks(tmp_path):
    code = PER_SAMPLE.replace("{path}", 'f"out/{len(names)}.pt"')
    assert at(lint_plain(tmp_path, code), "DDP806") == [(line_of(code, "# the save"), "warning")]


# -------------------------------------------------- a parent folder put on sys.path with os.path.pardir
def test_a_folder_put_on_sys_path_through_os_path_pardir_is_read(tmp_path):
    (tmp_path / "util").mkdir()
    (tmp_path / "util" / "__init__.py").write_text("from .parallel import DDP\n")
    (tmp_path / "util" / "parallel.py").write_text(
        "from torch.nn.parallel import DistributedDataParallel\n\n"
        "class DDP(DistributedDataParallel):\n    pass\n")
    (tmp_path / "run").mkdir()
    code = '''
import os, sys
import torch, torch.distributed as dist
from torch.utils.data import DataLoader, TensorDataset, DistributedSampler, RandomSampler
sys.path.append(os.path.abspath(os.path.join(os.path.dirname(__file__), {parent})))
from util import *

dist.init_process_group("gloo")
ds = TensorDataset(torch.randn(64, 4))
model = torch.nn.Linear(4, 1)
if torch.cuda.device_count() > 1:
    model = DDP(model)
    loader = DataLoader(ds, batch_size=8, sampler=DistributedSampler(ds))
else:
    loader = DataLoader(ds, batch_size=8, sampler=RandomSampler(ds))  # the one-process loader
for (x,) in loader:
    model(x).sum().backward()
'''
    script = tmp_path / "run" / "train.py"
    for parent, expected in (("os.path.pardir", []), ('"nowhere"', [(line_of(code, "# the one-process"), "error")])):
        script.write_text(textwrap.dedent(code.replace("{parent}", parent)).lstrip("\n"))
        found = [f for r in lint_results(gather(str(script)), set()) for f in r.findings]
        assert at(found, "DDP802") == expected, parent


# -------------------------------------------------- a save helper whose other callers test the rank
SAVE_HELPER = """
import torch, torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

def save_checkpoint(model, tag):
    torch.save(model.state_dict(), f"ckpt_{tag}.pt")  # the save

def main():
    dist.init_process_group("gloo")
    model = DDP(torch.nn.Linear(4, 1))
    for epoch in range(3):
        model(torch.randn(2, 4)).sum().backward()
        {inside}
    save_checkpoint(model, "last")  # the last

main()
"""


def test_a_save_helper_called_without_the_rank_test_its_other_callers_have_names_that_call(tmp_path):
    code = SAVE_HELPER.replace("{inside}", "if dist.get_rank() == 0:\n            save_checkpoint(model, epoch)")
    found = [f for f in lint_plain(tmp_path, code) if f.code == "DDP806"]
    # (at the write, as every DDP806: the call without the test is named, in the message and the evidence)
    assert [f.location.line for f in found] == [line_of(code, "# the save")]
    assert found[0].evidence["call_site"].endswith(f"train.py:{line_of(code, '# the last')}")
    assert f"train.py:{line_of(code, '# the last')}, where its other callers test the rank" in found[0].message


def test_its_twin_a_helper_no_caller_guards_names_no_call(tmp_path):
    code = SAVE_HELPER.replace("{inside}", "save_checkpoint(model, epoch)")
    found = [f for f in lint_plain(tmp_path, code) if f.code == "DDP806"]
    assert [(f.location.line, f.evidence.get("call_site")) for f in found] == [(line_of(code, "# the save"), None)]


# -------------------------------------------------- a model with buffers, handed through a factory and a trainer
BUFFERED_FAR = """
import torch, torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

class Positions(torch.nn.Module):
    def __init__(self):
        super().__init__()
        {buffer}

class Encoder(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.positions = Positions()
        self.proj = torch.nn.Linear(4, 1)

    def forward(self, x):
        return self.proj(x)

def load_objects(size):
    first = torch.nn.Linear(size, 1)
    model = Encoder().to("cpu")
    model.load_state_dict(first.state_dict(), strict=False)
    return "tokenizer", model

class Trainer:
    def __init__(self, model, rank):
        self.rank = rank
        self.model = model.to("cpu")
        self.model = DDP(self.model)

    @torch.no_grad()
    def evaluate(self):
        return self.model(torch.randn(2, 4))  # the forward

    def train(self):
        for step in range(10):
            self.model(torch.randn(2, 4)).sum().backward()
            if step % 5 == 0 and self.rank == 0:
                self.evaluate()

def main():
    dist.init_process_group("gloo")
    tokenizer, model = load_objects(4)
    trainer = Trainer(model=model, rank=dist.get_rank())
    trainer.train()

main()
"""


def test_a_buffer_of_a_model_handed_through_a_factory_and_a_trainer_is_seen(tmp_path):
    code = BUFFERED_FAR.replace("{buffer}", 'self.register_buffer("pos", torch.zeros(4))')
    assert at(lint_plain(tmp_path, code), "DDP801") == [(line_of(code, "# the forward"), "warning")]


def test_its_twin_the_same_model_without_a_buffer_broadcasts_nothing(tmp_path):
    assert at(lint_plain(tmp_path, BUFFERED_FAR.replace("{buffer}", "pass")), "DDP801") == []


# -------------------------------------------------- a loader handed back through two builders, set_epoch(0) once
TWO_BUILDERS = """
import torch, torch.distributed as dist
from torch.utils.data import DataLoader, TensorDataset, DistributedSampler
from torch.nn.parallel import DistributedDataParallel as DDP

def endless(loader):
    while True:
        for batch in loader:
            yield batch

def prepare_loader(ds):
    return DataLoader(ds, batch_size=8, sampler=DistributedSampler(ds))  # the sampler

def get_loaders():
    ds = TensorDataset(torch.randn(64, 4))
    train_loader = prepare_loader(ds)
    return train_loader, None

def main():
    dist.init_process_group("gloo")
    model = DDP(torch.nn.Linear(4, 1))
    train_data, dev_data = get_loaders()
    train_data.sampler.set_epoch(0)
    {read}
    for step in range(1000):
        (x,) = next(batches)
        model(x).sum().backward()

main()
"""


def test_a_loader_handed_back_through_two_builders_and_read_endlessly_needs_set_epoch(tmp_path):
    code = TWO_BUILDERS.replace("{read}", "batches = endless(train_data)")
    # (at its lone set_epoch call, the line to move into the loop)
    assert at(lint_plain(tmp_path, code), "DDP804") == [(line_of(code, "set_epoch(0)"), "warning")]


def test_its_twin_read_once_through_iter_is_one_pass(tmp_path):
    assert at(lint_plain(tmp_path, TWO_BUILDERS.replace("{read}", "batches = iter(train_data)")), "DDP804") == []


# -------------------------------------------------- the DDP constructor by its alias, through a base called with self
BASE_CALL = """
import argparse
import torch, torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

class Base:
    def initialize(self, opt, rank=None):
        self.rank = rank

class Model(Base):
    def initialize(self, opt, rank):
        {base}
        self.net = self.to_cuda(torch.nn.Linear(4, 1))

    def to_cuda(self, network):
        if self.rank:
            return DDP(network)  # the wrap
        return network

parser = argparse.ArgumentParser()
parser.add_argument("--local_rank", type=int, default=0)
opt = parser.parse_args()
dist.init_process_group("gloo")
model = Model()
model.initialize(opt, opt.local_rank)
"""


def test_the_ddp_constructor_under_the_ranks_truth_is_ddp801_through_an_explicit_base_call(tmp_path):
    code = BASE_CALL.replace("{base}", "Base.initialize(self, opt, rank)")
    assert at(lint_plain(tmp_path, code), "DDP801") == [(line_of(code, "# the wrap"), "error")]


def test_the_same_through_super(tmp_path):
    code = BASE_CALL.replace("{base}", "super().initialize(opt, rank)")
    assert at(lint_plain(tmp_path, code), "DDP801") == [(line_of(code, "# the wrap"), "error")]


def test_its_twin_a_base_handed_a_setting_not_the_rank_is_no_rank_test(tmp_path):
    code = BASE_CALL.replace("{base}", "Base.initialize(self, opt, opt.gpu_count)")
    assert at(lint_plain(tmp_path, code), "DDP801") == []


# -------------------------------------------------- a method nothing names is not run
DEAD_METHOD = """
import torch, torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

class Model(torch.nn.Module):
    def __init__(self, rank):
        super().__init__()
        self.rank = rank
        self.net = self.wrap(torch.nn.Linear(4, 1))

    def old_wrap(self, network):
        if self.rank:
            return DDP(network)  # the old wrap
        return network

    def wrap(self, network):
        return DDP(network)

dist.init_process_group("gloo")
model = Model(dist.get_rank())
{use}
"""


def test_a_method_no_file_names_is_not_judged(tmp_path):
    assert at(lint_plain(tmp_path, DEAD_METHOD.replace("{use}", "")), "DDP801") == []


def test_its_twin_a_method_named_in_a_string_runs(tmp_path):
    code = DEAD_METHOD.replace("{use}", 'getattr(model, "old_wrap")(torch.nn.Linear(4, 1))')
    assert at(lint_plain(tmp_path, code), "DDP801") == [(line_of(code, "# the old wrap"), "error")]


def test_a_hook_a_framework_base_calls_by_name_is_still_judged(tmp_path):
    code = DEAD_METHOD.replace("class Model(torch.nn.Module):", "class Model(pl.LightningModule):").replace(
        "import torch, torch.distributed as dist", "import torch, torch.distributed as dist\nimport pytorch_lightning as pl")
    assert at(lint_plain(tmp_path, code), "DDP801") == [(line_of(code, "# the old wrap"), "error")]


# -------------------------------------------------- a rank compared with a word is the same test on every rank
DEVICE_WORD = """
import torch, torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

def main(rank, device):
    dist.init_process_group("gloo", init_method="env://", rank=rank, world_size=2)
    net = torch.nn.Linear(4, 1)
    device = rank
    if {test}:
        net = DDP(net)  # the wrap
    net(torch.randn(2, 4)).sum().backward()

main(0, "cuda")
"""


def test_a_rank_held_as_the_device_compared_with_a_word_is_no_rank_test(tmp_path):
    assert at(lint_plain(tmp_path, DEVICE_WORD.replace("{test}", 'device != "cpu"')), "DDP801") == []


def test_its_twin_the_ranks_digits_compared_as_text_are_a_rank_test(tmp_path):
    code = DEVICE_WORD.replace("{test}", 'str(device) == "0"')
    assert at(lint_plain(tmp_path, code), "DDP801") == [(line_of(code, "# the wrap"), "error")]


def test_a_word_beside_a_rank_test_drops_out_of_it(tmp_path):
    # mlpf's `rank == 0 or rank == "cpu"`: on the CPU the rank is the word; in a distributed run
    # that side is false everywhere, and the test is rank 0's
    code = DEVICE_WORD.replace("{test}", 'device == 0 or device == "cpu"')
    assert at(lint_plain(tmp_path, code), "DDP801") == [(line_of(code, "# the wrap"), "error")]


# -------------------------------------------------- a project in the src layout
def test_a_package_of_the_src_layout_is_read_from_a_script_in_scripts(tmp_path):
    (tmp_path / "src" / "proj").mkdir(parents=True)
    (tmp_path / "src" / "proj" / "__init__.py").write_text("")
    (tmp_path / "src" / "proj" / "train.py").write_text(textwrap.dedent('''
        import torch, torch.distributed as dist
        from torch.nn.parallel import DistributedDataParallel as DDP

        def main():
            dist.init_process_group("gloo")
            model = DDP(torch.nn.Linear(4, 1))
            if dist.get_rank() == 0:
                dist.barrier()  # the barrier
    '''))
    (tmp_path / "scripts").mkdir()
    script = tmp_path / "scripts" / "train.py"
    script.write_text("from proj.train import main\n\nif __name__ == '__main__':\n    main()\n")
    for packaged, expected in ((True, [(9, "error")]), (False, [])):
        marker = tmp_path / "pyproject.toml"
        if packaged:
            marker.write_text('[tool.setuptools.packages.find]\nwhere = ["src"]\n')
        elif marker.exists():
            marker.unlink()
        found = [f for r in lint_results(gather(str(script)), set()) for f in r.findings]
        assert at(found, "DDP801") == expected, packaged


# -------------------------------------------------- a static method called through the class hands no class on
ONE_RANK_LOGGER = """
import torch, torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

class Logger:
    def __init__(self, model):
        self.model = model

    def save(self):
        torch.save(self.model.state_dict(), "last.pt")  # the save

    def __exit__(self, *exc):
        self.save()

    @staticmethod
    def load(path, model):
        model.load_state_dict(torch.load(path))

dist.init_process_group("gloo")
model = DDP(torch.nn.Linear(4, 1))
{load}
if dist.get_rank() == 0:
    logger = Logger(model)
"""


def test_a_class_built_on_rank_0_whose_static_method_every_rank_calls_saves_on_rank_0(tmp_path):
    code = ONE_RANK_LOGGER.replace("{load}", 'Logger.load("init.pt", model)')
    assert at(lint_plain(tmp_path, code), "DDP806") == []


def test_its_twin_the_class_itself_handed_on_may_be_built_anywhere(tmp_path):
    code = ONE_RANK_LOGGER.replace("{load}", "factory = Logger\nother = factory(model)")
    assert at(lint_plain(tmp_path, code), "DDP806") == [(line_of(code, "# the save"), "warning")]


# -------------------------------------------------- a builder's evaluation side past a membership test for training
MODE_BUILDER = """
import torch, torch.distributed as dist
from torch.utils.data import DataLoader, TensorDataset, DistributedSampler

def build_loader(ds, mode):
    if {train}:
        return DataLoader(ds, batch_size=8, sampler=DistributedSampler(ds))
    elif "eval" in mode:
        return DataLoader(ds, batch_size=1)  # the other loader

dist.init_process_group("gloo")
model = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(4, 1))
loader = build_loader(TensorDataset(torch.randn(64, 4)), "train")
for (x,) in loader:
    model(x).sum().backward()
"""


def test_the_other_side_of_a_membership_test_for_training_is_the_evaluation_loader(tmp_path):
    assert at(lint_plain(tmp_path, MODE_BUILDER.replace("{train}", '"train" in mode')), "DDP802") == []


def test_its_twin_the_other_side_of_a_test_of_something_else_may_train(tmp_path):
    code = MODE_BUILDER.replace("{train}", '"fast" in mode')
    assert at(lint_plain(tmp_path, code), "DDP802") == [(line_of(code, "# the other loader"), "error")]


# -------------------------------------------------- a rank's part, handed to a loader builder
RANK_PART_BUILDER = """
import torch, torch.distributed as dist
from torch.utils.data import DataLoader, TensorDataset

def get_train_dataset(items):
    {part}
    return TensorDataset(torch.tensor(items, dtype=torch.float32).view(-1, 1))

def get_train_dataloader(train_dataset):
    return DataLoader(train_dataset, shuffle=True, batch_size=8)  # the loader

dist.init_process_group("gloo")
model = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(1, 1))
train_dataset = get_train_dataset(list(range(64)))
for (x,) in get_train_dataloader(train_dataset):
    model(x).sum().backward()
"""


def test_a_rank_part_made_by_one_helper_and_loaded_by_another_is_sharded(tmp_path):
    code = RANK_PART_BUILDER.replace("{part}", "items = items[dist.get_rank()::dist.get_world_size()]")
    assert at(lint_plain(tmp_path, code), "DDP802") == []


def test_its_twin_the_whole_list_loaded_by_the_other_helper_is_not(tmp_path):
    code = RANK_PART_BUILDER.replace("{part}", "items = sorted(items)")
    assert at(lint_plain(tmp_path, code), "DDP802") == [(line_of(code, "# the loader"), "error")]


# -------------------------------------------------- a sampler no loader takes
UNUSED_SAMPLER = """
import torch, torch.distributed as dist
from torch.utils.data import DataLoader, TensorDataset, DistributedSampler

def main():
    dist.init_process_group("gloo")
    ds = TensorDataset(torch.randn(64, 4))
    model = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(4, 1))
    sampler = DistributedSampler(ds)  # the sampler
    loader = DataLoader(ds, batch_size=8{given})  # the loader
    for epoch in range(3):
        for (x,) in loader:
            model(x).sum().backward()

main()
"""


def test_a_sampler_no_loader_takes_needs_no_set_epoch_its_loader_is_ddp802(tmp_path):
    found = lint_plain(tmp_path, UNUSED_SAMPLER.replace("{given}", ""))
    assert at(found, "DDP804") == []
    assert at(found, "DDP802") == [(line_of(UNUSED_SAMPLER, "# the loader"), "error")]


def test_its_twin_the_sampler_handed_to_the_loader_needs_set_epoch(tmp_path):
    code = UNUSED_SAMPLER.replace("{given}", ", sampler=sampler")
    assert at(lint_plain(tmp_path, code), "DDP804") == [(line_of(code, "# the sampler"), "warning")]


# -------------------------------------------------- a DataLoader subclass that keeps a parameter of its own
LOADER_X = """
import numpy as np, torch, torch.distributed as dist
from torch.utils.data import DataLoader, TensorDataset, DistributedSampler

class DataLoaderX(DataLoader):
    def __init__(self, local_rank, **kwargs):
        super().__init__(**kwargs)
        self.local_rank = local_rank

def main():
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    ds = TensorDataset(torch.randn(64, 4))
    def worker_init_fn(worker_id):
        np.random.seed({seed})  # the seeding
    loader = DataLoaderX(local_rank=rank, dataset=ds, batch_size=8, num_workers=4,
                         sampler=DistributedSampler(ds), worker_init_fn=worker_init_fn)
    model = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(4, 1))
    for (x,) in loader:
        model(x).sum().backward()

main()
"""


def test_a_loader_subclass_built_with_the_loaders_options_is_judged_where_it_is_built(tmp_path):
    code = LOADER_X.replace("{seed}", "240 + worker_id")
    assert at(lint_plain(tmp_path, code), "DDP808") == [(line_of(code, "# the seeding"), "warning")]


def test_its_twin_the_rank_in_the_workers_seed(tmp_path):
    assert at(lint_plain(tmp_path, LOADER_X.replace("{seed}", "240 + 16 * rank + worker_id")), "DDP808") == []


# -------------------------------------------------- sub-batches in two loops, the step after the outer one
SUB_BATCHES = """
import torch, torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

def train(model, opt, images, sub):
    for i in range(len(images)):
        j = 0
        while j < 4:
            model(images[i]).sum().backward()  # the backward
            {inner}
            j += sub
    {outer}

dist.init_process_group("gloo")
model = DDP(torch.nn.Linear(4, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for step in range(100):
    train(model, opt, torch.randn(4, 2, 4), 2)
"""


def test_sub_batches_in_two_loops_stepped_after_the_outer_one_accumulate(tmp_path):
    code = SUB_BATCHES.replace("{inner}", "pass").replace("{outer}", "opt.step(); opt.zero_grad()")
    assert at(lint_plain(tmp_path, code), "DDP805") == [(line_of(code, "# the backward"), "warning")]


def test_its_twin_a_step_after_each_sub_batch_accumulates_nothing(tmp_path):
    code = SUB_BATCHES.replace("{inner}", "opt.step(); opt.zero_grad()").replace("{outer}", "pass")
    assert at(lint_plain(tmp_path, code), "DDP805") == []


# -------------------------------------------------- a field a method sets under a rank test, read by every rank
SOLVER_STOP = """
import sys
import torch, torch.distributed as dist, torch.multiprocessing as mp
from torch.nn.parallel import DistributedDataParallel as DDP

class Solver:
    def setup(self, args):
        self.model = DDP(torch.nn.Linear(4, 1))
        self.stop = False
        self.best = 1e9

    def train(self, args):
        self.model(torch.randn(2, 4)).sum().backward()

    def validate(self, args):
        score = float(torch.rand(()))
        {validate}

def worker(gpu, solver, args):
    args.gpu = gpu
    dist.init_process_group("gloo", init_method="tcp://127.0.0.1:29500", rank=gpu, world_size=2)
    solver.setup(args)
    for epoch in range(10):
        solver.train(args)
        solver.validate(args)
        if solver.stop == True:  # the stop
            {leave}

class Args:
    gpu = 0

if __name__ == "__main__":
    mp.spawn(worker, nprocs=2, args=(Solver(), Args()))
"""
RANK_0_STOP = "if args.gpu == 0:\n            self.stop = score > self.best\n            self.best = min(self.best, score)"


def test_a_field_a_method_sets_under_a_rank_test_then_every_rank_exits_on_is_ddp809(tmp_path):
    code = SOLVER_STOP.replace("{validate}", RANK_0_STOP).replace("{leave}", "sys.exit()")
    assert at(lint_plain(tmp_path, code), "DDP809") == [(line_of(code, "# the stop"), "error")]


def test_the_same_with_a_break(tmp_path):
    code = SOLVER_STOP.replace("{validate}", RANK_0_STOP).replace("{leave}", "break")
    assert at(lint_plain(tmp_path, code), "DDP809") == [(line_of(code, "# the stop"), "error")]


def test_its_twin_the_field_set_on_every_rank_is_shared(tmp_path):
    code = SOLVER_STOP.replace("{validate}", "self.stop = epoch_done(score)").replace("{leave}", "sys.exit()")
    code = code.replace("class Solver:", "def epoch_done(score):\n    return False\n\nclass Solver:")
    assert at(lint_plain(tmp_path, code), "DDP809") == []


def test_its_twin_an_exit_with_an_error_code_ends_the_job(tmp_path):
    code = SOLVER_STOP.replace("{validate}", RANK_0_STOP).replace("{leave}", "sys.exit(1)")
    assert at(lint_plain(tmp_path, code), "DDP809") == []


# -------------------------------------------------- a loader's options spread from dict(...)
DICT_OPTIONS = """
import torch, torch.distributed as dist
from torch.utils.data import DataLoader, TensorDataset

def main():
    dist.init_process_group("gloo")
    model = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(4, 1))
    ds = TensorDataset(torch.randn(64, 4))
    loader_args = dict({options})
    train_loader = DataLoader(ds, shuffle=True, **loader_args)  # the loader
    for (x,) in train_loader:
        model(x).sum().backward()

main()
"""


def test_options_spread_from_a_dict_call_without_a_sampler_are_seen(tmp_path):
    code = DICT_OPTIONS.replace("{options}", "batch_size=8, num_workers=2, pin_memory=True")
    assert at(lint_plain(tmp_path, code), "DDP802") == [(line_of(code, "# the loader"), "error")]


def test_its_twin_a_dict_call_copying_another_may_hold_a_sampler(tmp_path):
    code = DICT_OPTIONS.replace("{options}", "base_options(), batch_size=8").replace(
        "def main():", "def base_options():\n    return {}\n\ndef main():")
    assert at(lint_plain(tmp_path, code), "DDP802") == []


def test_a_generator_the_loader_subclass_keeps_for_itself_seeds_no_worker(tmp_path):
    # OpenFold's loader takes `generator=` for its own batch draws, never handing it to DataLoader
    code = LOADER_X.replace("def __init__(self, local_rank, **kwargs):",
                            "def __init__(self, local_rank, generator=None, **kwargs):").replace(
        "worker_init_fn=worker_init_fn)", "generator=torch.Generator().manual_seed(7))").replace(
        "np.random.seed({seed})  # the seeding", "pass")
    assert at(lint_plain(tmp_path, code), "DDP808") == []


# -------------------------------------------------- the test a function's rest passed, said as written
EARLY_RETURN = """
import torch, torch.distributed as dist

def save_and_wait(is_main):
    if not is_main:
        return
    dist.barrier()  # the barrier

dist.init_process_group("gloo")
save_and_wait(dist.get_rank() == 0)
"""


def test_the_rest_after_an_early_return_is_told_under_the_test_it_passed_not_a_double_negation(tmp_path):
    found = [f for f in lint_plain(tmp_path, EARLY_RETURN) if f.code == "DDP801"]
    assert [f.location.line for f in found] == [line_of(EARLY_RETURN, "# the barrier")]
    assert "runs only where `is_main` holds" in found[0].message and "not (not" not in found[0].message
