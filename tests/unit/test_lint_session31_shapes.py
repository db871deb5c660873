"""Shapes from session 31 (holdout 33, read after it was scored unread twice). Each with its
healthy (or buggy) twin, written in our own words."""

from __future__ import annotations

import textwrap

from ddpdoctor.lint.driver import gather, lint_results
from tests.unit.test_lint_round17_shapes import lint_plain
from tests.unit.test_lint_round50_shapes import at, line_of

# -------------------------------------------------- a step under the same test as the backward
TRAIN_OR_VALIDATE = """
import torch, torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

dist.init_process_group("gloo")
model = DDP(torch.nn.Linear(4, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.1)
scaler = None

def run(loader, mode):
    for i, x in enumerate(loader):
        if mode == "train":
            loss = model(x).sum()
            {clear}
            if scaler is None:
                loss.backward()  # the backward
                {step}
            else:
                scaler.scale(loss).backward()
                scaler.step(opt)
                scaler.update()
        else:
            with torch.no_grad():
                model(x)

for epoch in range(2):
    run([torch.randn(2, 4)] * 4, "train")
    run([torch.randn(2, 4)] * 2, "val")
"""


def test_a_step_under_the_backwards_own_test_is_every_pass(tmp_path):
    """`if mode == "train":` holds the zero_grad, the backward and the step alike: each pass that
    backpropagates also steps, so nothing accumulates (RangeViT's train/validate loop)."""
    code = TRAIN_OR_VALIDATE.replace("{clear}", "opt.zero_grad()").replace("{step}", "opt.step()")
    assert at(lint_plain(tmp_path, code), "DDP805") == []


def test_its_twin_a_periodic_step_inside_that_test_accumulates(tmp_path):
    code = TRAIN_OR_VALIDATE.replace("{clear}", "pass").replace(
        "{step}", "if (i + 1) % 4 == 0:\n                    opt.step()\n                    opt.zero_grad()")
    assert at(lint_plain(tmp_path, code), "DDP805") == [(line_of(code, "# the backward"), "warning")]


# -------------------------------------------------- an accumulation count only ever bound to 1
ACCUMULATE_BY_CONSTANT = """
import torch, torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

dist.init_process_group("gloo")
model = DDP(torch.nn.Linear(4, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.1)
accumulation = {k}
loader = [torch.randn(2, 4)] * 8

for epoch in range(2):
    for step, x in enumerate(loader):
        loss = model(x).sum() / accumulation
        loss.backward()  # the backward
        if step % accumulation == 0 or step == len(loader) - 1:
            opt.step()
            opt.zero_grad()
"""


def test_a_count_bound_only_to_one_steps_every_pass(tmp_path):
    """`accumulation = 1` in the script, then `step % accumulation == 0 or step == last`: the
    test holds on every pass (NLX-GPT's fine-tuning)."""
    assert at(lint_plain(tmp_path, ACCUMULATE_BY_CONSTANT.replace("{k}", "1")), "DDP805") == []


def test_its_twin_a_count_of_four_accumulates(tmp_path):
    code = ACCUMULATE_BY_CONSTANT.replace("{k}", "4")
    assert at(lint_plain(tmp_path, code), "DDP805") == [(line_of(code, "# the backward"), "warning")]


# -------------------------------------------------- a dataset registry keyed by an option
REGISTRY = """
import argparse, random, torch, torch.distributed as dist
from torch.utils.data import DataLoader, Dataset, DistributedSampler
from torch.nn.parallel import DistributedDataParallel as DDP

class Hourly(Dataset):
    def __len__(self): return 64
    def __getitem__(self, i): return torch.full((4,), float(i))

class Minutely(Hourly):
    def __getitem__(self, i): return torch.full((4,), float(i) / 60)

class Weekly(Hourly):
    def __getitem__(self, i): return torch.full((4,), float(i) * 7)

class Cropped(Hourly):
    def __getitem__(self, i):
        start = random.randint(0, 8)  # a random crop, drawn in the worker
        return torch.full((4,), float(i + start))

TABLE = {"hourly": Hourly, "minutely": Minutely, "weekly": Weekly, "cropped": Cropped}

parser = argparse.ArgumentParser()
parser.add_argument("--data", type=str, {option})
parser.add_argument("--seed", type=int, default=0)
args = parser.parse_args()

dist.init_process_group("gloo")
torch.manual_seed(args.seed)
Data = TABLE[args.data]
data = Data()
loader = DataLoader(data, batch_size=8, sampler=DistributedSampler(data), num_workers=2)  # the loader
model = DDP(torch.nn.Linear(4, 1))
for epoch in range(2):
    loader.sampler.set_epoch(epoch)
    for x in loader:
        model(x).sum().backward()
"""


def test_a_registry_picked_by_a_required_option_draws_only_where_most_entries_do(tmp_path):
    """One class in four draws: with the key given at run time, the warning would rest on the
    rare pick (aLLM4TS's sixteen forecasting datasets)."""
    code = REGISTRY.replace("{option}", "required=True")
    assert at(lint_plain(tmp_path, code), "DDP808") == []


def test_the_registry_entry_the_default_names_decides(tmp_path):
    code = REGISTRY.replace("{option}", 'default="cropped"')
    assert at(lint_plain(tmp_path, code), "DDP808") == [(line_of(code, "# the loader"), "warning")]
    assert at(lint_plain(tmp_path, REGISTRY.replace("{option}", 'default="weekly"')), "DDP808") == []


# -------------------------------------------------- a switch left off: store_true defaults to False
SEEDED_WHEN_ASKED = """
import argparse, random, torch, torch.distributed as dist
from torch.utils.data import DataLoader, Dataset, DistributedSampler
from torch.nn.parallel import DistributedDataParallel as DDP

class Cropped(Dataset):
    def __len__(self): return 64
    def __getitem__(self, i):
        return torch.full((4,), float(i + random.randint(0, 8)))

parser = argparse.ArgumentParser()
parser.add_argument("--deterministic", action="{action}")
args = parser.parse_args()

dist.init_process_group("gloo")
if args.deterministic:
    torch.manual_seed(12345)
data = Cropped()
loader = DataLoader(data, batch_size=8, sampler=DistributedSampler(data), num_workers=2)  # the loader
model = DDP(torch.nn.Linear(4, 1))
for epoch in range(2):
    loader.sampler.set_epoch(epoch)
    for x in loader:
        model(x).sum().backward()
"""


def test_seeding_under_a_store_true_switch_is_off_by_default(tmp_path):
    """`--deterministic` is False unless given: the ranks keep the seeds torch drew for their own
    processes (SimKD's `if opt.deterministic: torch.manual_seed(12345)`)."""
    assert at(lint_plain(tmp_path, SEEDED_WHEN_ASKED.replace("{action}", "store_true")), "DDP808") == []


def test_its_twin_a_store_false_switch_is_on_by_default(tmp_path):
    code = SEEDED_WHEN_ASKED.replace("{action}", "store_false")
    assert at(lint_plain(tmp_path, code), "DDP808") == [(line_of(code, "# the loader"), "warning")]


# -------------------------------------------------- `rank % ngpus_per_node` in a one-node world
ONE_NODE = """
import argparse, torch, torch.distributed as dist, torch.multiprocessing as mp
from torch.nn.parallel import DistributedDataParallel as DDP

def worker(gpu, ngpus_per_node, opt):
    opt.rank = gpu
    dist.init_process_group("gloo", init_method="tcp://127.0.0.1:29500", world_size=opt.world_size, rank=opt.rank)
    model = DDP(torch.nn.Linear(4, 1))
    model(torch.randn(2, 4)).sum().backward()
    if opt.rank % ngpus_per_node == 0:
        torch.save(model.module.state_dict(), "best.pth")  # the save

if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--nodes", type=int, default=1)
    opt = parser.parse_args()
    ngpus_per_node = torch.cuda.device_count()
    nodes = {nodes}
    opt.world_size = ngpus_per_node * nodes
    mp.spawn(worker, nprocs=ngpus_per_node, args=(ngpus_per_node, opt))
"""


def test_rank_modulo_the_node_count_in_a_one_node_world_is_rank_zero(tmp_path):
    """The world is `ngpus_per_node * 1`: `rank % ngpus_per_node == 0` is global rank 0 alone,
    one writer (SimKD's "only one node now")."""
    assert at(lint_plain(tmp_path, ONE_NODE.replace("{nodes}", "1")), "DDP806") == []


def test_its_twin_several_nodes_make_it_one_writer_per_node(tmp_path):
    code = ONE_NODE.replace("{nodes}", "opt.nodes")
    assert at(lint_plain(tmp_path, code), "DDP806") == [(line_of(code, "# the save"), "warning")]


# -------------------------------------------------- the else of `distributed and rank != 0`
EARLY_STOP_ELSE = """
import argparse, os, torch, torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

parser = argparse.ArgumentParser()
parser.add_argument("--use_gpu", type=int, default=1)
parser.add_argument("--use_multi_gpu", action="store_true")
args = parser.parse_args()
if args.use_gpu and args.use_multi_gpu:
    args.local_rank = int(os.environ["LOCAL_RANK"])
    dist.init_process_group("gloo")

class Stopper:
    def __init__(self, patience):
        self.patience, self.counter, self.best, self.early_stop = patience, 0, None, False

    def __call__(self, loss):
        if self.best is None or loss < self.best:
            self.best, self.counter = loss, 0
        else:
            self.counter += 1
            if self.counter >= self.patience:
                self.early_stop = True

model = DDP(torch.nn.Linear(4, 1))
stopper = Stopper(3)
for epoch in range(100):
    loss = model(torch.randn(2, 4)).sum()
    loss.backward()
    if args.use_multi_gpu and args.use_gpu and args.local_rank != 0:
        pass
    else:
        stopper(float(loss))
        {leave}
"""


def test_a_break_on_the_else_side_of_a_rank_test_is_rank_zeros_alone(tmp_path):
    """`if distributed and local_rank != 0: pass / else: ... if stopper.early_stop: break`: the
    `else:` is local rank 0's side, which leaves the loop while the others go on into the next
    backward (aLLM4TS). The process group's own switches hold on every rank of the run: no
    assumption is said about them. (Since session 46 an error: the stopper's own __call__ sets
    early_stop once the counter it steps reaches the patience - a stop the code is written to
    take, not an assumption about the data.)"""
    code = EARLY_STOP_ELSE.replace("{leave}", "if stopper.early_stop:\n            break  # the break")
    found = [f for f in lint_plain(tmp_path, code) if f.code == "DDP809"]
    assert [(f.location.line, f.severity.value) for f in found] == [(line_of(code, "# the break") - 1, "error")]
    assert "`args.use_gpu` is true" not in found[0].message


def test_its_twin_rank_zero_only_logs_there(tmp_path):
    code = EARLY_STOP_ELSE.replace("{leave}", "print(stopper.counter)")
    assert at(lint_plain(tmp_path, code), "DDP809") == []


# -------------------------------------------------- a package __init__ that puts lib/ on sys.path
PACKAGE_SCRIPT = """
from .base import *

def train():
    dist.init_process_group("gloo")
    model = DDP(torch.nn.Linear(4, 1))
    for epoch in range(2):
        model(torch.randn(2, 4)).sum().backward()
        save_model(model, f"epoch_{epoch}.pkl")

if __name__ == "__main__":
    train()
"""


def _package(tmp_path, init: str) -> list:
    """`python -m proj.train` from tmp_path: proj/__init__.py runs first."""
    pkg = tmp_path / "proj"
    (pkg / "lib" / "helpers").mkdir(parents=True)
    (pkg / "__init__.py").write_text(init)
    (pkg / "_paths.py").write_text(textwrap.dedent("""
        import os.path as osp, sys

        def add_path(path):
            if path not in sys.path:
                sys.path.insert(0, path)

        add_path(osp.join(osp.dirname(__file__), "lib"))
    """))
    (pkg / "base.py").write_text(textwrap.dedent("""
        import torch, torch.distributed as dist
        from torch.nn.parallel import DistributedDataParallel as DDP
        from helpers.saving import save_model
    """))
    (pkg / "lib" / "helpers" / "__init__.py").write_text("")
    (pkg / "lib" / "helpers" / "saving.py").write_text(textwrap.dedent("""
        import torch

        def save_model(model, path):
            torch.save(model.module.state_dict(), path)  # the save
    """))
    (pkg / "train.py").write_text(textwrap.dedent(PACKAGE_SCRIPT).lstrip("\n"))
    return [f for r in lint_results(gather(str(pkg / "train.py")), set()) for f in r.findings]


def test_the_folder_a_package_init_puts_on_sys_path_is_an_import_root(tmp_path, monkeypatch):
    """The script's relative imports say it runs as `python -m proj.train`, so Python first runs
    proj/__init__.py, whose `from . import _paths` inserts proj/lib (ROMP's `_init_paths_`): the
    save helper found there runs on every rank."""
    monkeypatch.chdir(tmp_path)
    found = _package(tmp_path, "from . import _paths\n")
    assert [(f.location.file, f.severity.value) for f in found if f.code == "DDP806"] == \
        [("proj/lib/helpers/saving.py", "warning")]


def test_its_twin_an_init_that_adds_nothing_leaves_the_helper_unread(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert [f for f in _package(tmp_path, "") if f.code == "DDP806"] == []


# -------------------------------------------------- a loader kept by a constructor, handed out by a getter
GETTER = """
import torch, torch.distributed as dist
from torch.utils.data import DataLoader, DistributedSampler, TensorDataset
from torch.nn.parallel import DistributedDataParallel as DDP

class Squares:
    def __init__(self, batch_size):
        data = TensorDataset(torch.randn(64, 4))
        self.train_loader = DataLoader(data, batch_size=batch_size, shuffle=True)  # the plain loader
        self.test_loader = DataLoader(data, batch_size=batch_size)

    def get_data_loader(self):
        return self.train_loader, self.test_loader

class Circles(Squares):
    pass

DATASETS = {"squares": Squares, "circles": Circles}

def get_dataset(name, distributed):
    dataset = DATASETS[name](8)
    train_loader, test_loader = dataset.get_data_loader()
    {rebuild}
    return train_loader, test_loader

def main(distributed=True):
    if distributed:
        dist.init_process_group("gloo")
    train_loader, _ = get_dataset("squares", distributed)
    model = DDP(torch.nn.Linear(4, 1))
    for epoch in range(2):
        for (x,) in train_loader:
            model(x).sum().backward()

main()
"""


def test_a_getters_loader_rebuilt_with_a_sampler_when_distributed_is_not_the_runs(tmp_path):
    """The constructor's plain loader reaches the run only through the getter, and the caller
    builds it again with a DistributedSampler under the switch the group is set up under
    (proVLAE's dataset classes)."""
    code = GETTER.replace("{rebuild}", "if distributed:\n        train_loader = DataLoader(train_loader.dataset, "
                                       "batch_size=8, sampler=DistributedSampler(train_loader.dataset))")
    assert at(lint_plain(tmp_path, code), "DDP802") == []


def test_its_twin_a_getters_loader_kept_as_it_is_trains_every_rank_on_everything(tmp_path):
    code = GETTER.replace("{rebuild}", "pass")
    # (the constructor's field, handed out by the getter, unpacked by its callers' callers and
    # iterated by the loop that runs backward: the training loader, an error)
    assert at(lint_plain(tmp_path, code), "DDP802") == [(line_of(code, "# the plain loader"), "error")]


def test_a_flag_one_set_up_does_without_is_still_an_assumption(tmp_path):
    """A second set-up that does not need `args.use_gpu` (a CPU run over gloo): the flag is not
    known to hold on every rank of a distributed run, so the finding says it rests on it."""
    code = EARLY_STOP_ELSE.replace(
        '    dist.init_process_group("gloo")\n',
        '    dist.init_process_group("gloo")\nelif args.use_multi_gpu:\n    dist.init_process_group("gloo")\n', 1
    ).replace("{leave}", "if stopper.early_stop:\n            break")
    found = [f for f in lint_plain(tmp_path, code) if f.code == "DDP809"]
    assert len(found) == 1 and "`args.use_gpu` is true" in found[0].message


# -------------------------------------------------- an accumulation period an option leaves at 1
ACCUM_OPTION = """
import argparse, torch, torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

parser = argparse.ArgumentParser()
parser.add_argument("--accum_iter", type=int, default={default})
args = parser.parse_args()
dist.init_process_group("gloo")
model = DDP(torch.nn.Linear(4, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.1)

def train_one_epoch(loader):
    accum_iter = args.accum_iter
    for i, x in enumerate(loader):
        (model(x).sum() / accum_iter).backward()  # the backward
        if (i + 1) % accum_iter == 0:
            opt.step()
            opt.zero_grad()

for epoch in range(2):
    train_one_epoch([torch.randn(2, 4)] * 8)
"""


def test_a_period_whose_option_defaults_to_one_is_said_as_the_assumption(tmp_path):
    """`--accum_iter` defaults to 1 (MAE, CroCo, DUSt3R): a plain launch accumulates nothing, so
    the warning says it rests on the option being raised."""
    code = ACCUM_OPTION.replace("{default}", "1")
    found = [f for f in lint_plain(tmp_path, code) if f.code == "DDP805"]
    assert [(f.location.line, f.severity.value) for f in found] == [(line_of(code, "# the backward"), "warning")]
    assert found[0].message.startswith("if `args.accum_iter` is set above its default 1: ")


def test_its_twin_a_period_of_four_by_default_is_no_assumption(tmp_path):
    found = [f for f in lint_plain(tmp_path, ACCUM_OPTION.replace("{default}", "4")) if f.code == "DDP805"]
    assert len(found) == 1 and found[0].message.startswith("gradient accumulation without no_sync")
