"""Shapes from session 81 (holdout 111's and 112's leftovers, holdout 113's reading after its
unread score), each with its twin, in our own words."""

from __future__ import annotations

from tests.unit.test_lint_session39_shapes import lint_tree
from tests.unit.test_lint_session61_shapes import _codes, _line

# -------------------------------------------------- a "rank 0 first" pair whose closing side tests a function
# The loader's cache is built by rank 0 while the others wait: `if local_rank not in [-1, 0] and
# split != "train": barrier()` at the top, `if local_rank == 0 and not {closing}: barrier()` at the
# bottom. With `evaluate` the module's own evaluation function (not a flag), `not evaluate` is
# always false: rank 0 never enters its barrier, the others wait in theirs for ever.
CACHE_FIRST = """import torch
import torch.distributed as dist


def evaluate(args, model, split="dev"):
    data = load_and_cache(args, split=split{handed})
    return sum(model(x).sum() for x in data)


def load_and_cache(args, split="train"{param}):
    if args.local_rank not in [-1, 0] and split != "train":
        dist.barrier()  # the others wait for rank 0's cache
    data = [torch.randn(2, 4) for _ in range(3)]
    torch.save(data, f"cache_{{split}}.pt")
    if args.local_rank == 0 and not {closing}:
        dist.barrier()  # rank 0 lets them read it
    return data


def main(args):
    dist.init_process_group("gloo")
    model = torch.nn.Linear(4, 1)
    data = load_and_cache(args, split="train")
    dev = load_and_cache(args, split="dev"{handed})
    print(len(data), len(dev))
"""


def test_not_a_function_is_false_so_its_barrier_never_runs(tmp_path):
    script = CACHE_FIRST.format(handed="", param="", closing="evaluate")
    found = _codes(lint_tree(tmp_path, {"train.py": script}), "DDP801")
    assert [(f.location.line, f.severity.name) for f in found] == \
        [(_line(script, "# the others wait"), "ERROR")]
    # the call that opens the test by its constant is said
    assert "`split='dev'`" in found[0].message


def test_its_twin_a_flag_of_that_name_pairs_the_barriers(tmp_path):
    # the transformers examples' own shape: `evaluate` a parameter, False on the training load
    script = CACHE_FIRST.format(handed=", evaluate=False", param=", evaluate=False", closing="evaluate")
    assert not _codes(lint_tree(tmp_path, {"train.py": script}), "DDP801")


def test_its_twin_a_local_of_that_name_is_no_function(tmp_path):
    script = CACHE_FIRST.format(handed="", param="", closing="evaluate").replace(
        '    if args.local_rank == 0 and not evaluate:', '    evaluate = split != "train"\n'
        '    if args.local_rank == 0 and not evaluate:')
    found = _codes(lint_tree(tmp_path, {"train.py": script}), "DDP801")
    assert not [f for f in found if f.severity.name == "ERROR"]


# -------------------------------------------------- a rank test the way in already decided the other way
# Rank 0 alone calls a helper whose barrier only the other ranks take: on that way the barrier
# never runs (no rank is both 0 and not 0), so the call is no one-sided collective.
OPPOSED = """import torch
import torch.distributed as dist


def load(args, split):
    if args.local_rank not in [-1, 0]:
        dist.barrier()  # the others wait
    data = [torch.randn(2, 4)]
    if args.local_rank == 0:
        dist.barrier()  # rank 0 releases them
    return data


def refine(args):
    if args.local_rank in [-1, 0]:
        load(args, "dev")  # rank 0 alone
    {tail}


def main(args):
    dist.init_process_group("gloo")
    refine(args)
"""


def test_a_rank_zero_call_into_a_rank_first_pair_leaves_rank_zero_waiting(tmp_path):
    # the others' barrier is not on rank 0's way; rank 0's own is, and no one else enters it
    script = OPPOSED.format(tail="return None")
    found = _codes(lint_tree(tmp_path, {"train.py": script}), "DDP801")
    assert [f.location.line for f in found] == [_line(script, "# rank 0 releases them")]
    assert f"train.py:{_line(script, '# rank 0 alone')}" in found[0].message


def test_its_twin_every_rank_calls_the_pair(tmp_path):
    script = OPPOSED.format(tail="return None").replace(
        '    if args.local_rank in [-1, 0]:\n        load(args, "dev")  # rank 0 alone', '    load(args, "dev")')
    assert 'load(args, "dev")\n' in script
    assert not _codes(lint_tree(tmp_path, {"train.py": script}), "DDP801")


def test_its_twin_no_call_hands_a_constant_that_opens_it(tmp_path):
    # the split comes from the command line: the test's other part stays an assumption
    script = CACHE_FIRST.format(handed="", param="", closing="evaluate").replace(
        'load_and_cache(args, split="dev")', 'load_and_cache(args, split=args.split)')
    found = _codes(lint_tree(tmp_path, {"train.py": script}), "DDP801")
    assert [(f.location.line, f.severity.name) for f in found] == \
        [(_line(script, "# the others wait"), "WARNING")]


# -------------------------------------------------- a trainer handed the model before it was wrapped
# `learn = Learner(mdl=mdl)` first, `mdl = DDP(mdl)` after, the wrapper then only moved: the
# learner keeps the plain module, its step's forward runs round the wrapper (no all-reduce).
HANDED_FIRST = """import dataclasses
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel


{learner}

    def fit(self, data):
        opt = torch.optim.SGD(self.mdl.parameters(), lr=0.1)
        for x in data:
            out = self.mdl(x)
            loss = out.sum()
            loss.backward()  # the step's backward
            opt.step()


def learner_init(cfg):
    mdl = torch.nn.Linear(4, 1)
{body}
    return learn


def main(cfg):
    dist.init_process_group("gloo")
    learn = learner_init(cfg)
    learn.fit([torch.randn(2, 4) for _ in range(3)])
"""
DATACLASS = """@dataclasses.dataclass
class Learner:
    name: str
    mdl: torch.nn.Module"""
PLAIN_CLASS = """class Learner:
    def __init__(self, name, mdl):
        self.name = name
        self.mdl = mdl"""
LATE = """    learn = Learner("run", mdl=mdl)
    if cfg.do_dist:
        mdl = DistributedDataParallel(mdl)
    elif cfg.do_dp:
        mdl = torch.nn.DataParallel(mdl)
    mdl = mdl.to("cpu")"""


def test_a_dataclass_learner_handed_the_model_before_wrapping_trains_it_unwrapped(tmp_path):
    script = HANDED_FIRST.format(learner=DATACLASS, body=LATE)
    found = _codes(lint_tree(tmp_path, {"train.py": script}), "DDP810")
    assert [(f.location.line, f.severity.name) for f in found] == [(_line(script, "# the step's backward"), "ERROR")]


def test_a_class_learner_handed_it_by_place_too(tmp_path):
    script = HANDED_FIRST.format(learner=PLAIN_CLASS, body=LATE.replace('Learner("run", mdl=mdl)', 'Learner("run", mdl)'))
    found = _codes(lint_tree(tmp_path, {"train.py": script}), "DDP810")
    assert [f.location.line for f in found] == [_line(script, "# the step's backward")]


def test_its_twin_wrapped_before_it_is_handed(tmp_path):
    body = """    if cfg.do_dist:
        mdl = DistributedDataParallel(mdl)
    learn = Learner("run", mdl=mdl)"""
    script = HANDED_FIRST.format(learner=DATACLASS, body=body)
    assert not _codes(lint_tree(tmp_path, {"train.py": script}), "DDP810")


def test_its_twin_the_wrapper_handed_to_the_learner_after(tmp_path):
    script = HANDED_FIRST.format(learner=DATACLASS, body=LATE + "\n    learn.mdl = mdl")
    assert not _codes(lint_tree(tmp_path, {"train.py": script}), "DDP810")


# -------------------------------------------------- holdout 113, read after its unread score
# A loss from a callable the lint does not resolve, handed the DDP model itself: its forward may
# be the wrapper's (a margin loss picked by name from a module; only the Lipschitz constant it
# is given comes from `model.module`) - nothing is proven round the wrapper.
PICKED_LOSS = """import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
import losses


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.body = torch.nn.Linear(4, 2)

    def forward(self, x):
        return self.body(x)

    def lipschitz(self):
        return self.body.weight.norm()


def main(cfg):
    dist.init_process_group("gloo")
    model = DDP(Net())
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    train_fn = getattr(losses, cfg["loss_type"])
    for x, y in [(torch.randn(2, 4), torch.tensor([0, 1]))]:
        lc = model.module.lipschitz()
        {loss}
        loss.backward()  # the step's backward
        opt.step()
"""


def test_a_loss_from_a_picked_callable_handed_the_wrapper_is_no_bypass(tmp_path):
    script = PICKED_LOSS.format(loss="loss = train_fn(model, x=x, label=y, lc=lc)")
    found = lint_tree(tmp_path, {"train.py": script, "losses.py": "def margin(model, x, label, lc):\n    return model(x).sum() * lc\n"})
    assert not _codes(found, "DDP810")


def test_its_twin_the_loss_only_from_the_module_inside(tmp_path):
    script = PICKED_LOSS.format(loss="loss = torch.nn.functional.cross_entropy(model.module(x), y) * lc")
    found = lint_tree(tmp_path, {"train.py": script, "losses.py": "def margin(model, x, label, lc):\n    return model(x).sum() * lc\n"})
    assert [f.location.line for f in _codes(found, "DDP810")] == [_line(script, "# the step's backward")]


# A model class a config names by its package (`Model = importlib.import_module(
# cfg.model_module_path).Model`, each package's __init__ re-exporting its model module's class),
# evaluated on rank 0 by a helper that builds its own model only when handed none (in a try).
CONFIGURED_MODEL = """import importlib
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from evaluate import test


def main(cfg):
    dist.init_process_group("gloo")
    Model = importlib.import_module(cfg.model_module_path).Model
    model = DDP(Model(cfg))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for epoch in range(3):
        model(torch.randn(2, 4)).sum().backward()
        opt.step()
        if dist.get_rank() == 0:
            test(cfg, model)  # rank 0 alone
"""
EVALUATE = """import importlib
import torch


def test(cfg, model=None):
    if model is not None:
        model.eval()
    else:
        Model = importlib.import_module(cfg.model_module_path).Model
        try:
            model = Model(cfg, "cpu")
        except TypeError:
            model = Model(cfg)
    with torch.no_grad():
        return model(torch.randn(2, 4))  # the evaluation forward
"""
PACKAGE_MODEL = """import torch


class {name}(torch.nn.Module):
    def __init__(self, cfg, device="cpu"):
        super().__init__()
        self.body = torch.nn.Linear(4, 4)
        self.{layer}

    def forward(self, x):
        return self.body(x)
"""


def _configured_tree(layer: str) -> dict:
    files = {"train.py": CONFIGURED_MODEL, "evaluate.py": EVALUATE}
    for pkg, name in (("models/lossy", "PCC"), ("models/lossless", "Coder")):
        files[f"{pkg}/__init__.py"] = f"from .model import {name} as Model\n"
        files[f"{pkg}/model.py"] = PACKAGE_MODEL.format(name=name, layer=layer)
        files[f"config/{pkg.rpartition('/')[2]}.yaml"] = f"model_module_path: {pkg.replace('/', '.')}\n"
    files["models/__init__.py"] = ""
    return files


def test_a_configured_model_package_evaluated_on_rank_zero_broadcasts_its_buffers(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    found = _codes(lint_tree(tmp_path, _configured_tree("norm = torch.nn.BatchNorm1d(4)")), "DDP801")
    assert [(f.location.file, f.location.line, f.severity.name) for f in found] == \
        [("evaluate.py", _line(EVALUATE, "# the evaluation forward"), "WARNING")]


def test_its_twin_configured_models_without_buffers(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert not _codes(lint_tree(tmp_path, _configured_tree("head = torch.nn.Linear(4, 4)")), "DDP801")


# A long-tailed CIFAR whose constructor seeds numpy with a constant, then calls the method that
# shuffles each class's indices: every rank draws the same subset, whatever the rank seeds.
LONG_TAILED = """import numpy as np
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, Dataset, DistributedSampler


class LongTailed(Dataset):
    def __init__(self, n, rand_number=0, train=True):
        self.items = list(range(n))
        {seed}
        counts = self.counts()
        if train:
            self.subsample()

    def counts(self):
        return [len(self.items)]

    def subsample(self):
        kept = []
        for part in range(2):
            idx = np.arange(part, len(self.items), 2)
            np.random.shuffle(idx)
            kept += [self.items[i] for i in idx[: len(idx) // 2]]
        self.items = kept

    def __len__(self):
        return len(self.items)

    def __getitem__(self, i):
        return torch.full((4,), float(self.items[i]))


def build(train):
    return LongTailed(100, rand_number=0, train=train)


def main():
    dist.init_process_group("gloo")
    seed = 0 + dist.get_rank()
    torch.manual_seed(seed)
    np.random.seed(seed)
    data = build(True)
    sampler = DistributedSampler(data)  # the sampler
    loader = DataLoader(data, batch_size=4, sampler=sampler)
    model = DDP(torch.nn.Linear(4, 1))
    for epoch in range(2):
        sampler.set_epoch(epoch)
        for x in loader:
            model(x).sum().backward()
"""


def test_a_draw_after_the_constructor_seeded_its_stream_is_alike_on_every_rank(tmp_path):
    script = LONG_TAILED.format(seed="np.random.seed(rand_number)")
    assert not _codes(lint_tree(tmp_path, {"train.py": script}), "DDP803")


def test_its_twin_no_seed_before_the_call(tmp_path):
    script = LONG_TAILED.format(seed="pass")
    found = _codes(lint_tree(tmp_path, {"train.py": script}), "DDP803")
    assert [f.location.line for f in found] == [_line(script, "# the sampler")]


# Accumulation whose period option defaults to 1, given 1 in one launch and left out of the
# other: every launch steps on every pass.
ACCUMULATE = """import argparse
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

parser = argparse.ArgumentParser()
parser.add_argument("--gradient_accumulation_steps", default=1, type=int)
args = parser.parse_args()
dist.init_process_group("gloo")
model = DDP(torch.nn.Linear(4, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for step in range(10):
    model(torch.randn(2, 4)).sum().backward()  # the backward
    if (step + 1) % args.gradient_accumulation_steps == 0:
        opt.step()
"""


def test_an_accumulation_option_every_launch_runs_at_one(tmp_path):
    files = {"train.py": ACCUMULATE,
             "scripts/a.sh": "torchrun --nproc_per_node=2 train.py --gradient_accumulation_steps 1\n",
             "scripts/b.sh": "torchrun --nproc_per_node=2 train.py\n"}
    assert not _codes(lint_tree(tmp_path, files), "DDP805")


def test_its_twin_one_launch_raises_it(tmp_path):
    files = {"train.py": ACCUMULATE,
             "scripts/a.sh": "torchrun --nproc_per_node=2 train.py --gradient_accumulation_steps 4\n",
             "scripts/b.sh": "torchrun --nproc_per_node=2 train.py\n"}
    found = _codes(lint_tree(tmp_path, files), "DDP805")
    assert [f.location.line for f in found] == [_line(ACCUMULATE, "# the backward")]


# A copy of DistributedSampler under another name and base: it takes num_replicas and rank and
# permutes by its epoch, so it needs set_epoch like the original.
ITER_SAMPLER = """import math
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, Sampler, TensorDataset


class DistIterSampler(Sampler):
    def __init__(self, dataset, num_replicas, rank):
        self.dataset, self.num_replicas, self.rank = dataset, num_replicas, rank
        self.epoch = 0
        self.num_samples = math.ceil(len(dataset) / num_replicas)

    def __iter__(self):
        g = torch.Generator()
        g.manual_seed(self.epoch)
        order = torch.randperm(len(self.dataset), generator=g).tolist()
        return iter(order[self.rank::self.num_replicas])

    def __len__(self):
        return self.num_samples

    def set_epoch(self, epoch):
        self.epoch = epoch


def main():
    dist.init_process_group("gloo")
    data = TensorDataset(torch.randn(64, 4))
    sampler = DistIterSampler(data, dist.get_world_size(), dist.get_rank())  # the sampler
    loader = DataLoader(data, batch_size=4, sampler=sampler)
    model = DDP(torch.nn.Linear(4, 1))
    for epoch in range(3):
        {set_epoch}
        for (x,) in loader:
            model(x).sum().backward()
"""


def test_a_sampler_that_copies_distributed_sampler_needs_its_epoch(tmp_path):
    script = ITER_SAMPLER.format(set_epoch="pass")
    found = _codes(lint_tree(tmp_path, {"train.py": script}), "DDP804")
    assert [f.location.line for f in found] == [_line(script, "# the sampler")]


def test_its_twin_the_copy_given_its_epoch(tmp_path):
    script = ITER_SAMPLER.format(set_epoch="sampler.set_epoch(epoch)")
    assert not _codes(lint_tree(tmp_path, {"train.py": script}), "DDP804")


# Two checkpoint writes under one per-node test, the second only on chosen epochs: one test to
# fix, one finding.
PER_NODE = """import argparse
import torch
import torch.distributed as dist
import torch.multiprocessing as mp
from torch.nn.parallel import DistributedDataParallel as DDP


def worker(gpu, ngpus, args):
    rank = args.node_rank * ngpus + gpu
    dist.init_process_group("gloo", rank=rank, world_size=args.nodes * ngpus)
    model = DDP(torch.nn.Linear(4, 1))
    for epoch in range(10):
        model(torch.randn(2, 4)).sum().backward()
        if gpu == 0:
            torch.save(model.state_dict(), "latest.pt")  # the latest
            if epoch in (5, 9):
                torch.save(model.state_dict(), f"epoch{epoch}.pt")


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--nodes", type=int, default=1)
    parser.add_argument("--node_rank", type=int, default=0)
    args = parser.parse_args()
    mp.spawn(worker, nprocs=2, args=(2, args))
"""


def test_writes_under_one_per_node_test_are_one_finding(tmp_path):
    found = _codes(lint_tree(tmp_path, {"train.py": PER_NODE}), "DDP806")
    assert [f.location.line for f in found] == [_line(PER_NODE, "# the latest")]
    assert "1 more write" in found[0].message


# A DistributedSampler made where the run is distributed, then replaced for every run by a
# SubsetRandomSampler before any loader takes it (ESD's ImageNet main): the loader gets the plain one.
REPLACED = """import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler
from torch.utils.data.sampler import SubsetRandomSampler


def main(args):
    dist.init_process_group("gloo")
    data = TensorDataset(torch.randn(64, 4))
    if args.distributed:
        train_sampler = DistributedSampler(data)
    else:
        train_sampler = None
    {replaced}
    loader = DataLoader(data, batch_size=4, sampler=train_sampler)  # the loader
    model = DDP(torch.nn.Linear(4, 1))
    for epoch in range(3):
        for (x,) in loader:
            model(x).sum().backward()
"""


def test_a_sampler_replaced_for_every_run_before_the_loader(tmp_path):
    script = REPLACED.format(replaced="train_sampler = SubsetRandomSampler(list(range(48)))")
    found = _codes(lint_tree(tmp_path, {"train.py": script}), "DDP802")
    assert [f.location.line for f in found] == [_line(script, "# the loader")]


def test_its_twin_the_replacement_only_on_one_side(tmp_path):
    script = REPLACED.format(replaced="if args.subset:\n        train_sampler = SubsetRandomSampler(list(range(48)))")
    found = _codes(lint_tree(tmp_path, {"train.py": script}), "DDP802")
    assert not [f for f in found if f.severity.name == "ERROR"]


# The transformers examples' pair with `evaluate` a flag, entered from rank 0's evaluation:
# `evaluate=True` switches both barriers off on that way.
FLAG_PAIR = """import torch
import torch.distributed as dist


def load_and_cache(args, evaluate=False):
    if args.local_rank not in [-1, 0] and not evaluate:
        dist.barrier()
    data = [torch.randn(2, 4)]
    if args.local_rank == 0 and not evaluate:
        dist.barrier()  # rank 0 releases the others
    return data


def evaluate_model(args, model):
    data = load_and_cache(args, evaluate={flag})
    return [model(x) for x in data]


def main(args):
    dist.init_process_group("gloo")
    model = torch.nn.Linear(4, 1)
    load_and_cache(args)
    if args.local_rank in [-1, 0]:
        evaluate_model(args, model)  # rank 0's evaluation
"""


def test_a_rank_zero_evaluation_entering_the_pair_with_its_switch_off(tmp_path):
    assert not _codes(lint_tree(tmp_path, {"train.py": FLAG_PAIR.format(flag="True")}), "DDP801")


def test_its_twin_entered_with_the_switch_on(tmp_path):
    script = FLAG_PAIR.format(flag="False")
    found = _codes(lint_tree(tmp_path, {"train.py": script}), "DDP801")
    # (the helper runs on every rank elsewhere: the one-sided call is the place)
    assert [f.location.line for f in found] == [_line(script, "# rank 0's evaluation")]
    assert f"train.py:{_line(script, '# rank 0 releases')}" in found[0].message


def test_a_builtin_handed_the_wrapper_proves_no_forward_through_it(tmp_path):
    # `core = model.module if hasattr(model, "module") else model`: hasattr is handed the DDP
    # model, and runs no forward of it - the loss is still computed round the wrapper
    script = PICKED_LOSS.format(loss='core = model.module if hasattr(model, "module") else model\n'
                                     '        loss = core.lipschitz() * core.body(x).sum()')
    found = lint_tree(tmp_path, {"train.py": script, "losses.py": "def margin(model, x, label, lc):\n    return model(x).sum() * lc\n"})
    assert [f.location.line for f in _codes(found, "DDP810")] == [_line(script, "# the step's backward")]


def test_the_learner_finding_names_where_it_was_handed_and_fixes_there(tmp_path):
    script = HANDED_FIRST.format(learner=DATACLASS, body=LATE)
    found = _codes(lint_tree(tmp_path, {"train.py": script}), "DDP810")
    assert f"handed at {tmp_path / 'train.py'}:{_line(script, 'learn = Learner(')}" in found[0].message
    assert "before handing it to the object" in found[0].hint
