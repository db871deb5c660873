"""Issue 38, vision repositories new to the corpus (helper b): what the lint misjudged there, written
again in our own words as small scripts, each with its healthy twin."""

from __future__ import annotations

import textwrap

from ddpdoctor.lint.driver import gather, lint_results
from tests.unit.test_lint_real_patterns import lint


# ------------------------------------------------ DDP805: an `if` around both sides of the accumulation
ACCUMULATE_UNDER_A_SWITCH = """
model = DDP(torch.nn.Linear(4, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.1)
loader = DataLoader(TensorDataset(torch.randn(64, 4)), sampler=DistributedSampler(range(64)), batch_size=4)
def fit(every, half):
    for i, (x,) in enumerate(loader):
        opt.zero_grad()
        if half:
            model(x).sum().backward()
            opt.step()
        else:
            loss = model(x).sum()
            if every > 1:
                if (i + 1) % every == 0:
                    loss.backward()
                    opt.step()
                else:
                    with model.no_sync():
                        loss.backward()
            else:
                loss.backward()
                opt.step()
for epoch in range(2):
    loader.sampler.set_epoch(epoch)
    fit(4, False)
"""


def test_a_switch_around_the_stepping_and_the_no_sync_sides_does_not_put_no_sync_on_the_step(tmp_path):
    # `if every > 1:` holds both sides; only the inner test decides which micro-step steps
    found, _ = lint(tmp_path, ACCUMULATE_UNDER_A_SWITCH)
    assert [f for f in found if "is on for a micro-step on which the optimizer steps" in f.message] == []


def test_no_sync_on_the_micro_step_that_steps_is_still_reported(tmp_path):
    # the twin under the same switch: no_sync is chosen by `i % every != 0`, which is on for the
    # micro-step `(i + 1) % every == 0` that steps, so that step's gradients are never all-reduced
    source = ACCUMULATE_UNDER_A_SWITCH.replace("""\
                if (i + 1) % every == 0:
                    loss.backward()
                    opt.step()
                else:
                    with model.no_sync():
                        loss.backward()""", """\
                with model.no_sync() if i % every != 0 else contextlib.nullcontext():
                    loss.backward()
                if (i + 1) % every == 0:
                    opt.step()""")
    assert "contextlib" in source
    found, _ = lint(tmp_path, "import contextlib\n" + source)
    assert [f.code for f in found if "is on for a micro-step on which the optimizer steps" in f.message] == ["DDP805"]


# ------------------------------------------- DDP804: set_epoch(0) for an evaluation pass beside set_epoch(epoch)
EVAL_PASS_OVER_THE_TRAIN_LOADER = """
model = DDP(torch.nn.Linear(4, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.1)
loader = DataLoader(TensorDataset(torch.randn(64, 4)), sampler=DistributedSampler(range(64)), batch_size=4)
for epoch in range(3):
{first}
    for x, in loader:
        model(x).sum().backward()
        opt.step()
    if epoch % 2 == 1:
        loader.sampler.set_epoch(0)
        with torch.no_grad():
            scores = [model.module(x).mean() for x, in loader]
"""


def test_a_fixed_epoch_for_an_evaluation_pass_beside_the_per_epoch_set_epoch_keeps_the_shuffle(tmp_path):
    # the next epoch's set_epoch(epoch) undoes the set_epoch(0) the evaluation pass used
    found, _ = lint(tmp_path, EVAL_PASS_OVER_THE_TRAIN_LOADER.format(first="    loader.sampler.set_epoch(epoch)"))
    assert [f.code for f in found if f.code == "DDP804"] == []


def test_the_fixed_epoch_alone_repeats_the_order_every_epoch(tmp_path):
    # the twin: no per-epoch set_epoch, only the constant one - the order never changes
    found, _ = lint(tmp_path, EVAL_PASS_OVER_THE_TRAIN_LOADER.format(first="    pass"))
    assert [f.code for f in found if f.code == "DDP804"] == ["DDP804"]


# ---------------------- DDP801: a rank-0 evaluation through a DDP model built by a helper the package re-exports
NETS_PACKAGE = {
    "__init__.py": "from .build_net import build_net\n",
    "build_net.py": """
        import torch

        class Head(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.fc = torch.nn.Linear(4, 4)
                self.norm = torch.nn.BatchNorm1d(4)

            def forward(self, x):
                return self.norm(self.fc(x))

        def build_net():
            net = Head()
            return net
    """,
}


def _nets(tmp_path):
    """A package whose __init__ re-exports a helper from the submodule of the same name."""
    (tmp_path / "nets").mkdir()
    for name, body in NETS_PACKAGE.items():
        (tmp_path / "nets" / name).write_text(textwrap.dedent(body))


EVALUATE_ON_RANK_ZERO = """
from nets import build_net
def fit(model, loader):
    model = DDP(model)
    for x, in loader:
        model(x).sum().backward()
    if dist.get_rank() == 0:
        with torch.no_grad():
            for x, in loader:
                model(x)
net = build_net()
fit(net, DataLoader(TensorDataset(torch.randn(8, 4)), sampler=DistributedSampler(range(8))))
"""


def test_a_rank_zero_evaluation_through_a_ddp_model_built_by_a_re_exported_helper_is_reported(tmp_path):
    # `from nets import build_net` is the function the package's __init__ re-exports (not the
    # submodule of the same name), and `model = DDP(model)` wraps what the caller passed in
    found, _ = _nets(tmp_path) or lint(tmp_path, EVALUATE_ON_RANK_ZERO)
    assert [(f.code, f.severity.value) for f in found if f.code == "DDP801"] == [("DDP801", "warning")]


def test_the_same_evaluation_through_the_plain_module_is_clean(tmp_path):
    # the twin: rank 0 evaluates model.module, which broadcasts nothing
    source = EVALUATE_ON_RANK_ZERO.replace("                model(x)\n", "                model.module(x)\n")
    assert "model.module(x)" in source
    found, _ = _nets(tmp_path) or lint(tmp_path, source)
    assert [f.code for f in found if f.code == "DDP801"] == []


# --------------------------- DDP801: rank 0 signals from a closure that the others' loop answers
SIGNAL_FROM_A_CLOSURE = """
def drive(model, rank):
    flag = torch.zeros(1)
    def work():
        if rank == 0:
            flag.fill_(1)
            dist.broadcast(flag, src=0)
        dist.all_reduce(model.weight.data)
{leader}
drive(torch.nn.Linear(2, 2), dist.get_rank())
"""


def test_a_closure_rank_zero_signals_from_pairs_with_the_others_answering_loop(tmp_path):
    # rank 0 runs work() (its broadcast says "one more"), the others loop on the same broadcast
    found, _ = lint(tmp_path, SIGNAL_FROM_A_CLOSURE.format(leader="""\
    if rank == 0:
        for _ in range(3):
            work()
        flag.fill_(0)
        dist.broadcast(flag, src=0)
    else:
        while True:
            dist.broadcast(flag, src=0)
            if flag.item() == 0:
                break
            work()"""))
    assert [f.code for f in found if f.code == "DDP801"] == []


def test_the_same_closure_signal_with_no_one_answering_is_one_sided(tmp_path):
    # the twin: every rank runs work(), so rank 0's broadcast has no partner on the others
    found, _ = lint(tmp_path, SIGNAL_FROM_A_CLOSURE.format(leader="""\
    for _ in range(3):
        work()"""))
    assert [f.code for f in found if f.code == "DDP801"] == ["DDP801"]


# ---------------------------- DDP802: a loader a builder returns that no caller ever reads
LOADERS_FROM_A_BUILDER = """
def make_loaders(data):
    train_loader = DataLoader(data, sampler=DistributedSampler(data), batch_size=4)
    train_plain = DataLoader(data, batch_size=4, shuffle=False)
    return train_loader, train_plain
model = DDP(torch.nn.Linear(4, 1))
train_loader, train_plain = make_loaders(TensorDataset(torch.randn(64, 4)))
for epoch in range(2):
    train_loader.sampler.set_epoch(epoch)
    for x, in train_loader:
        model(x).sum().backward()
{more}
"""


def test_a_loader_returned_into_a_name_no_caller_reads_is_not_reported(tmp_path):
    # `train_plain` is unpacked and then never used: no rank iterates it
    found, _ = lint(tmp_path, LOADERS_FROM_A_BUILDER.format(more=""))
    assert [f.code for f in found if f.code == "DDP802"] == []


def test_the_same_loader_read_by_the_caller_is_still_reported(tmp_path):
    # the twin: the caller trains on it too, every rank over the whole dataset
    found, _ = lint(tmp_path, LOADERS_FROM_A_BUILDER.format(more="""\
    for x, in train_plain:
        model(x).sum().backward()"""))
    assert [f.code for f in found if f.code == "DDP802"] == ["DDP802"]


# ------------------------------- DDP809: rank 0 alone leaves the epoch loop on its own early stop
STOP_EARLY = """
model = DDP(torch.nn.Linear(4, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.1)
loader = DataLoader(TensorDataset(torch.randn(64, 4)), sampler=DistributedSampler(range(64)), batch_size=4)
def one_epoch():
    for x, in loader:
        model(x).sum().backward()
        opt.step()
best, stale = 1e9, 0
for epoch in range(10):
    loader.sampler.set_epoch(epoch)
    one_epoch()
{stop}
"""


def test_a_break_rank_zero_alone_takes_on_its_own_validation_leaves_the_others_in_the_next_epoch(tmp_path):
    found, _ = lint(tmp_path, STOP_EARLY.format(stop="""\
    if dist.get_rank() == 0:
        loss = float(model.module(torch.ones(1, 4)).sum())
        stale = 0 if loss < best else stale + 1
        if stale > 3:
            break"""))
    assert [(f.code, f.severity.value) for f in found if f.code == "DDP809"] == [("DDP809", "warning")]


def test_the_same_stop_shared_by_a_broadcast_and_taken_on_every_rank_is_clean(tmp_path):
    # the twin: rank 0 decides, the flag is broadcast, and every rank breaks together
    found, _ = lint(tmp_path, STOP_EARLY.format(stop="""\
    stop = torch.zeros(1)
    if dist.get_rank() == 0:
        loss = float(model.module(torch.ones(1, 4)).sum())
        stale = 0 if loss < best else stale + 1
        stop.fill_(float(stale > 3))
    dist.broadcast(stop, src=0)
    if stop.item():
        break"""))
    assert [f.code for f in found if f.code == "DDP809"] == []


def test_a_break_directly_under_the_rank_test_is_an_error(tmp_path):
    # no further condition: rank 0 leaves after the first epoch, the others never can
    found, _ = lint(tmp_path, STOP_EARLY.format(stop="""\
    if dist.get_rank() == 0:
        break"""))
    assert [(f.code, f.severity.value) for f in found if f.code == "DDP809"] == [("DDP809", "error")]


# ------------------- sources: a module imported for its effect of putting the repository on sys.path
def _tools_layout(tmp_path, script: str):
    (tmp_path / "tools").mkdir()
    (tmp_path / "kit").mkdir()
    (tmp_path / "kit" / "__init__.py").write_text("")
    (tmp_path / "kit" / "saving.py").write_text("import torch\n\ndef keep(model, path):\n    torch.save(model.state_dict(), path)\n")
    (tmp_path / "tools" / "_set_path.py").write_text("import sys\nsys.path.insert(0, '../')\n")
    (tmp_path / "tools" / "train.py").write_text(textwrap.dedent(script))
    return tmp_path / "tools" / "train.py"


PATH_SETTER_SCRIPT = """
{first}
import torch
import torch.distributed as dist
from kit.saving import keep
dist.init_process_group("gloo")
model = torch.nn.Linear(2, 2)
keep(model, "last.pt")
"""


def test_the_folder_an_imported_path_setter_puts_on_sys_path_is_read(tmp_path, monkeypatch):
    # `import _set_path` runs `sys.path.insert(0, '../')` from the tools folder: kit/ is found
    script = _tools_layout(tmp_path, PATH_SETTER_SCRIPT.format(first="import _set_path"))
    monkeypatch.chdir(script.parent)
    facts = gather(str(script))
    assert any(f.endswith("saving.py") for f in facts.files)
    assert [f.code for r in lint_results(facts, set()) for f in r.findings] == ["DDP806"]


def test_without_the_path_setter_the_package_stays_unread(tmp_path, monkeypatch):
    script = _tools_layout(tmp_path, PATH_SETTER_SCRIPT.format(first="import os"))
    monkeypatch.chdir(script.parent)
    facts = gather(str(script))
    assert not any(f.endswith("saving.py") for f in facts.files)


# ------------- DDP806: a rank from a setup helper picked by name at run time, unpacked into an attribute
LAUNCHER_PICKED_BY_NAME = {
    "setup_utils": """
        import os
        import torch.distributed as dist

        def init_dist_torchrun(port):
            dist.init_process_group("gloo")
            return 1, {rank}

        def init_dist_slurm(port):
            dist.init_process_group("gloo")
            return 1, {rank}
    """,
}
SAVE_ON_THE_PICKED_RANK = """
import setup_utils
class Config:
    pass
cfg = Config()
launcher = os.environ.get("LAUNCHER", "torchrun")
gpus, cfg.LOCAL_RANK = getattr(setup_utils, 'init_dist_%s' % launcher)(29500)
model = DDP(torch.nn.Linear(2, 2))
if cfg.LOCAL_RANK == 0:
    torch.save(model.state_dict(), "last.pt")
NNODES = int(os.environ.get("NNODES", 1))  # a job on several nodes
"""


def test_a_rank_the_launcher_helper_reads_with_get_rank_is_global_whatever_the_attribute_is_called(tmp_path):
    # every `init_dist_*` candidate returns dist.get_rank(): cfg.LOCAL_RANK holds the global rank
    modules = {k: v.format(rank="dist.get_rank()") for k, v in LAUNCHER_PICKED_BY_NAME.items()}
    found, _ = lint(tmp_path, SAVE_ON_THE_PICKED_RANK, **modules)
    assert [f.code for f in found if f.code == "DDP806"] == []


def test_the_same_helpers_returning_the_local_rank_save_once_per_node(tmp_path):
    modules = {k: v.format(rank="int(os.environ['LOCAL_RANK'])") for k, v in LAUNCHER_PICKED_BY_NAME.items()}
    found, _ = lint(tmp_path, SAVE_ON_THE_PICKED_RANK, **modules)
    assert [f.code for f in found if f.code == "DDP806"] == ["DDP806"]


# -------- DDP802: a sampler-less loader on the side of a configuration test that never meets the switch
LOADER_BY_SAMPLING_MODE = """
import argparse
parser = argparse.ArgumentParser()
parser.add_argument("--mode", default="pairs")
parser.add_argument("--dist", action="store_true")
args = parser.parse_args()
def build(data):
    if args.mode == "pairs":
        if args.dist:
            train_loader = DataLoader(data, sampler=DistributedSampler(data), batch_size=4)
        else:
            train_loader = DataLoader(data, shuffle=True, batch_size=4)
    else:
        train_loader = DataLoader(data, shuffle=True, batch_size=4)
    return train_loader, len(data)
if args.dist:
    dist.init_process_group("gloo")
model = torch.nn.Linear(4, 1)
train_loader, size = build({data})
for epoch in range(2):
    for x, in train_loader:
        model(x).sum().backward()
"""


def test_a_loader_on_the_side_of_a_configuration_test_that_never_meets_the_switch_is_a_warning(tmp_path):
    # the "pairs" side shards when --dist is given; the other side never asks, so it meets a
    # distributed run only if that mode is chosen with --dist: a warning naming the choice
    # (here the mode is launched as "triplets": with "pairs", the default, that side never runs)
    source = LOADER_BY_SAMPLING_MODE.replace('default="pairs"', 'default="triplets"')
    found, _ = lint(tmp_path, source.format(data="TensorDataset(torch.randn(64, 4))"))
    reported = [(f.code, f.severity.value) for f in found if f.code == "DDP802"]
    assert reported == [("DDP802", "warning")]
    assert "args.mode == 'pairs'" in next(f.message for f in found if f.code == "DDP802")


def test_a_loader_on_a_side_the_options_as_launched_never_take_is_not_judged(tmp_path):
    # --mode defaults to "pairs": the `else:` side's loader is a switched-off path's
    found, _ = lint(tmp_path, LOADER_BY_SAMPLING_MODE.format(data="TensorDataset(torch.randn(64, 4))"))
    assert [f.code for f in found if f.code == "DDP802"] == []


def test_a_sampler_less_loader_with_no_configuration_choice_around_it_stays_an_error(tmp_path):
    # the twin: the loader is built on every way through, distributed or not
    body = LOADER_BY_SAMPLING_MODE.split("def build(data):\n")[1].split("    return train_loader, len(data)")[0]
    source = LOADER_BY_SAMPLING_MODE.replace(body, "    train_loader = DataLoader(data, shuffle=True, batch_size=4)\n")
    assert "pairs" not in source.split("def build")[1]
    found, _ = lint(tmp_path, source.format(data="TensorDataset(torch.randn(64, 4))"))
    assert [(f.code, f.severity.value) for f in found if f.code == "DDP802"] == [("DDP802", "error")]
