"""Shapes from session 17's fourteenth blind round, each with its twin, written in our own words."""

from __future__ import annotations

from tests.unit.test_lint_real_patterns import codes, lint

INITIALIZED = """
ds = TensorDataset(torch.randn(64, 4))
net = DDP(torch.nn.Linear(4, 1))
opt = torch.optim.SGD(net.parameters(), lr=0.1)
if {test}:
    sampler = DistributedSampler(ds)
    loader = DataLoader(ds, batch_size=8, sampler=sampler)
else:
    sampler = None
    loader = DataLoader(ds, batch_size=8, shuffle=True)
for epoch in range(3):
    if sampler is not None:
        sampler.set_epoch(epoch)
    for (x,) in loader:
        net(x).sum().backward()
        opt.step()
"""


def test_the_loader_built_where_no_process_group_is_initialized_is_one_process(tmp_path):
    # HydraGNN: `if dist.is_initialized(): <sharded> else: DataLoader(shuffle=True)`
    found, _ = lint(tmp_path, INITIALIZED.format(test="dist.is_initialized()"))
    assert [f for f in found if f.code == "DDP802"] == []


def test_the_same_else_under_a_test_of_something_else_is_every_ranks(tmp_path):
    found, _ = lint(tmp_path, INITIALIZED.format(test="len(ds) > 100"))
    assert ("DDP802", "error", 15) in codes(found)


RECURSIVE = """
def save_best(metric, state, path):
    if isinstance(metric, list):
        return save_best(sum(metric) / len(metric), state, path)
    torch.save(state, path)

model = DDP(torch.nn.Linear(4, 4))
{test}
    save_best([1.0, 2.0], model.state_dict(), "best.pt")
"""


def test_a_save_helper_calling_itself_is_entered_as_its_callers_enter_it(tmp_path):
    # CLAP: update_top_k_performance recurses over a list of metrics, under is_master
    found, _ = lint(tmp_path, RECURSIVE.format(test="if dist.get_rank() == 0:"))
    assert [f for f in found if f.code == "DDP806"] == []


def test_the_recursive_save_helper_called_on_every_rank_saves_on_every_rank(tmp_path):
    found, _ = lint(tmp_path, RECURSIVE.format(test="if True:"))
    assert ("DDP806", "warning", 10) in codes(found)


OPTIMIZERS = """
model = DDP(torch.nn.Linear(4, 4))
optimizer = {{"a": torch.optim.SGD(model.parameters(), lr=0.1)}}
ds = TensorDataset(torch.randn(8, 4))
loader = DataLoader(ds, sampler=DistributedSampler(ds))
for i, (x,) in enumerate(loader):
    loss = model(x).sum()
    if isinstance(optimizer, dict):
        loss.backward()
{step}
    else:
        loss.backward()
        optimizer.step()
"""


def test_a_loop_over_the_optimizers_steps_them_on_every_pass(tmp_path):
    # CLAP: `for o_ in optimizer.values(): o_.step()` on one side, `optimizer.step()` on the other
    found, _ = lint(tmp_path, OPTIMIZERS.format(step="        for o in optimizer.values():\n            o.step()"))
    assert [f for f in found if f.code == "DDP805"] == []


def test_the_optimizers_stepped_every_kth_pass_accumulate(tmp_path):
    found, _ = lint(tmp_path, OPTIMIZERS.format(
        step="        if i % 4 == 3:\n            for o in optimizer.values():\n                o.step()"))
    assert "DDP805" in [c for c, _, _ in codes(found)]


SWITCHED_SAMPLER = """
def get_loader(ds, use_distributed_sampler=False):
    if use_distributed_sampler:
        sampler = DistributedSampler(ds)
    else:
        sampler = None
    return DataLoader(ds, batch_size=4, sampler=sampler, shuffle=(sampler is None))

model = DDP(torch.nn.Linear(4, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.1)
loader = get_loader(TensorDataset(torch.randn(64, 4)){given})
for (x,) in loader:
    model(x).sum().backward()
    opt.step()
"""


def test_a_sampler_every_caller_switches_off_shards_nothing(tmp_path):
    # operator_learning: `use_distributed_sampler` left at its default False
    found, _ = lint(tmp_path, SWITCHED_SAMPLER.format(given=""))
    assert ("DDP802", "error", 12) in codes(found)


def test_a_sampler_switched_off_through_a_literal_spread_shards_nothing(tmp_path):
    found, _ = lint(tmp_path, SWITCHED_SAMPLER.format(given=', **{"use_distributed_sampler": False}'))
    assert ("DDP802", "error", 12) in codes(found)


def test_a_sampler_the_caller_switches_on_shards_the_loader(tmp_path):
    found, _ = lint(tmp_path, SWITCHED_SAMPLER.format(given=", use_distributed_sampler=True"))
    assert [f for f in found if f.code == "DDP802"] == []


def test_a_folder_a_method_puts_on_sys_path_is_read(tmp_path):
    # SMPLer-X: a config method puts the trainer's folder on sys.path, then main() imports it
    from tests.unit.test_lint_round13_shapes import lint_bare

    (tmp_path / "common").mkdir()
    (tmp_path / "common" / "trainer_lib.py").write_text(
        "import torch\nimport torch.distributed as dist\n"
        "def save(model):\n    torch.save(model.state_dict(), 'model.pt')\n")
    source = '''
import os, sys
import torch
import torch.distributed as dist

class Config:
    def setup(self):
        self.root = os.path.dirname(os.path.abspath(__file__))
        sys.path.insert(0, os.path.join(self.root, "{folder}"))

def main():
    Config().setup()
    from trainer_lib import save
    dist.init_process_group("gloo")
    save(torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(1, 1)))

main()
'''
    found, facts = lint_bare(tmp_path, source.format(folder="common"))
    assert ("DDP806", "warning", 4) in codes(found)
    assert any(f.endswith("trainer_lib.py") for f in facts.files)


def test_a_folder_no_code_puts_on_sys_path_is_not_read(tmp_path):
    from tests.unit.test_lint_round13_shapes import lint_bare

    (tmp_path / "common").mkdir()
    (tmp_path / "common" / "trainer_lib.py").write_text("def save(model):\n    pass\n")
    found, facts = lint_bare(tmp_path, "import sys\nsys.path.insert(0, 'elsewhere')\nfrom trainer_lib import save\n")
    assert not any(f.endswith("trainer_lib.py") for f in facts.files)


NOT_FLAG = """
def load_examples(n, evaluate=False):
    if dist.is_initialized() and not evaluate:
        counts = [None] * dist.get_world_size()
        dist.all_gather_object(counts, n)
        n = min(counts)
    return list(range(n))

def run_eval(model):
    data = load_examples(10, evaluate={given})
    with torch.no_grad():
        return [model(torch.tensor([float(x)])) for x in data]

model = torch.nn.Linear(1, 1)
train = load_examples(100, evaluate=False)
if dist.get_rank() == 0:
    run_eval(model)
"""


def test_a_switch_the_call_passes_true_rules_out_its_not_side(tmp_path):
    # DensePhrases: rank 0's evaluation loads with evaluate=True; the gather runs under `not evaluate`
    found, _ = lint(tmp_path, NOT_FLAG.format(given="True"))
    assert [f for f in found if f.code == "DDP801"] == []


def test_the_same_call_passing_false_gathers_on_rank_0_alone(tmp_path):
    found, _ = lint(tmp_path, NOT_FLAG.format(given="False"))
    assert "DDP801" in [c for c, _, _ in codes(found)]


UNLAUNCHED = """
def count_everywhere(n):
    out = [None] * dist.get_world_size()
    dist.all_gather_object(out, n)
    return out

local_rank = int(os.environ.get("LOCAL_RANK", -1))
for step in range(10):
    if local_rank in [-1, 0] and step % 5 == 0:
        if {inner}:
            count_everywhere(3)
"""


def test_code_under_local_rank_minus_one_never_runs_in_a_distributed_job(tmp_path):
    # DensePhrases: evaluation inside the rank-0 branch is itself under `args.local_rank == -1`
    found, _ = lint(tmp_path, UNLAUNCHED.format(inner="local_rank == -1"))
    assert [f for f in found if f.code == "DDP801"] == []


def test_the_same_call_under_another_test_runs_on_rank_0_alone(tmp_path):
    found, _ = lint(tmp_path, UNLAUNCHED.format(inner="step > 0"))
    assert "DDP801" in [c for c, _, _ in codes(found)]


COUNTED = """
import torch.distributed as tdist

def run(rank, gpus):
    is_mp = len(gpus) > 1
    ds = TensorDataset(torch.randn(64, 4))
    if is_mp:
        loader = DataLoader(ds, batch_size=8, sampler=DistributedSampler(ds, len(gpus), rank))
    else:
        loader = DataLoader(ds, batch_size=8, shuffle=True)
    model = torch.nn.Linear(4, 1)
    if {setup_test}:
        model = model
    else:
        tdist.init_process_group("gloo", rank=rank, world_size=len(gpus))
        model = DDP(model)
    for (x,) in loader:
        model(x).sum().backward()

run(0, [0])
"""


def test_a_loader_on_the_one_gpu_side_never_meets_the_group_set_up_on_the_many_gpu_side(tmp_path):
    # SimCLS: `is_mp = len(gpus) > 1` for the loaders, `if len(gpus) == 1:` for the group
    found, _ = lint(tmp_path, COUNTED.format(setup_test="len(gpus) == 1"))
    assert [f for f in found if f.code == "DDP802"] == []


def test_a_loader_whose_count_test_overlaps_the_group_s_is_every_ranks(tmp_path):
    found, _ = lint(tmp_path, COUNTED.format(setup_test="len(gpus) == 0"))
    assert "DDP802" in [c for c, _, _ in codes(found)]


EVAL_LOADER = """
import numpy as np
from torch.utils.data import Dataset

class Noisy(Dataset):
    def __len__(self):
        return 100
    def __getitem__(self, i):
        return torch.tensor([float(np.random.choice(10))])

def evaluate(model, loader):
    with torch.no_grad():
        for x in loader:
            model(x)

torch.manual_seed(0)
model = DDP(torch.nn.Linear(1, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.1)
ds = Noisy()
train = DataLoader(ds, sampler=DistributedSampler(ds), num_workers=2)
{name} = DataLoader(ds, sampler=DistributedSampler(ds, shuffle=False), num_workers=2)
for epoch in range(3):
    train.sampler.set_epoch(epoch)
    for x in train:
        model(x).sum().backward()
        opt.step()
    evaluate(model, {name})
"""


def test_an_evaluation_loader_is_known_by_its_loops_whatever_its_name(tmp_path):
    # mt-dnn: `dev_data`, read only by an evaluation under no_grad
    for name in ("dev_data", "holdout_batches", "extra"):
        found, _ = lint(tmp_path, EVAL_LOADER.format(name=name))
        assert [f.location.line for f in found if f.code == "DDP808"] == [25], name


NEGATED_PASS = """
def convert(examples, is_training):
    if is_training:
        counts = [None] * dist.get_world_size()
        dist.all_gather_object(counts, len(examples))
    return examples

def load(evaluate=False):
    return convert(list(range(10)), is_training=not evaluate)

if dist.get_rank() == 0:
    load(evaluate={given})
"""


def test_a_switch_handed_on_negated_is_read_where_it_was_given(tmp_path):
    # DensePhrases: `squad_convert_examples_to_features(..., is_training=not evaluate)`
    found, _ = lint(tmp_path, NEGATED_PASS.format(given="True"))
    assert [f for f in found if f.code == "DDP801"] == []


def test_the_negated_switch_given_false_gathers_on_rank_0_alone(tmp_path):
    found, _ = lint(tmp_path, NEGATED_PASS.format(given="False"))
    assert "DDP801" in [c for c, _, _ in codes(found)]


SPAWNED_AND_CALLED = """
import torch.multiprocessing as mp

def test(loader, scorer):
    with torch.no_grad():
        for (x,) in loader:
            scorer(x)

class Options:
    gpus, n = 2, 16

def run(rank, args):
    train_set, val_set = TensorDataset(torch.randn(64, 4)), TensorDataset(torch.randn(args.n, 4))
    train_sampler = DistributedSampler(train_set)
    loader = DataLoader(train_set, batch_size=8, sampler=train_sampler)
    val_sampler = DistributedSampler(val_set)
    val_loader = DataLoader(val_set, batch_size=8, sampler=val_sampler)
    scorer = DDP(torch.nn.Linear(4, 1))
    for epoch in range(3):
        for (x,) in loader:
            scorer(x).sum().backward()
        test(val_loader, scorer)

def main(args, other):
    if args.gpus > 1:
        mp.spawn(run, args=(args,), nprocs=args.gpus)
    else:
        run(0, args)
        run(1, {given})

main(Options(), Options())
"""


def test_a_validation_sampler_built_alike_on_every_call_needs_no_set_epoch(tmp_path):
    # SimCLS: `run` is mp.spawn'd and also called directly on one GPU, with the same args
    found, _ = lint(tmp_path, SPAWNED_AND_CALLED.format(given="args"))
    assert [f.location.line for f in found if f.code == "DDP804"] == [19]  # the training sampler alone
    # (the twin below: a second call handing the dataset's parameter something else)


def test_a_validation_sampler_built_from_what_differing_calls_give_is_still_judged(tmp_path):
    found, _ = lint(tmp_path, SPAWNED_AND_CALLED.format(given="other"))
    # (session 48: judged, and its loader is read only by `test()`, which runs no backward, beside
    # the training loader that does: an evaluation's order changes no result - not reported)
    assert [f.location.line for f in found if f.code == "DDP804"] == [19]
