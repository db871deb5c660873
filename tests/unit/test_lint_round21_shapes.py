"""Shapes from session 19's blind rounds 20 and 21, each with its twin, written in our own words."""

from __future__ import annotations

import textwrap

from ddpdoctor.lint.driver import gather, lint_results
from tests.unit.test_lint_real_patterns import lint
from tests.unit.test_lint_round17_shapes import lint_plain


def found_codes(found) -> list:
    return sorted((f.code, f.location.line) for f in found)


# ------------------------------------------------------------- command-line frameworks' dispatch
CLICK = """
import click
import torch, torch.distributed as dist

@click.group()
def cli():
    pass

@cli.command()
def train():
    dist.init_process_group("gloo")
    model = torch.nn.Linear(2, 2)
    torch.save(model.state_dict(), "last.pt")

if __name__ == "__main__":
    {run}
"""


def test_a_click_subcommand_is_reached_through_its_group(tmp_path):
    found = lint_plain(tmp_path, CLICK.format(run="cli()"))
    assert found_codes(f for f in found if f.code == "DDP806") == [("DDP806", 12)]


def test_its_twin_an_unregistered_function_the_group_never_runs_is_not_judged(tmp_path):
    found = lint_plain(tmp_path, CLICK.format(run="cli()").replace("@cli.command()\n", ""))
    assert [f for f in found if f.code == "DDP806"] == []


def test_a_typer_command_is_reached_through_its_app(tmp_path):
    found = lint_plain(tmp_path, """
import typer, torch, torch.distributed as dist
app = typer.Typer()

@app.command()
def main(epochs: int = 1):
    dist.init_process_group("gloo")
    torch.save(torch.nn.Linear(2, 2).state_dict(), "model.pt")

if __name__ == "__main__":
    app()
""")
    assert found_codes(f for f in found if f.code == "DDP806") == [("DDP806", 7)]


# ------------------------------------------------------- a package runs before its module
def test_a_trainer_the_package_registers_on_import_is_reached(tmp_path, monkeypatch):
    files = {
        "pkg/__init__.py": "from pkg.trainers.dist import DistTrainer\n",
        "pkg/trainers/__init__.py": "",
        "pkg/app/__init__.py": "",
        "pkg/registry.py": "TRAINERS = {}\ndef register(name):\n    def deco(cls):\n"
                           "        TRAINERS[name] = cls\n        return cls\n    return deco\n",
        "pkg/trainers/dist.py": textwrap.dedent("""\
            import torch, torch.distributed as dist
            from pkg.registry import register
            @register("dist")
            class DistTrainer:
                def __init__(self, cfg):
                    self.cfg = cfg
                def train(self):
                    dist.init_process_group("gloo")
                    torch.save(torch.nn.Linear(2, 1).state_dict(), "ckpt.pth")
            """),
        "pkg/app/run.py": "import sys\nfrom pkg.registry import TRAINERS\n\ndef main():\n"
                          "    TRAINERS[sys.argv[1]]({}).train()\n\nif __name__ == '__main__':\n    main()\n",
    }
    for name, body in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(body)
    monkeypatch.chdir(tmp_path)
    facts = gather("pkg/app/run.py")
    assert "pkg/__init__.py" in facts.files
    found = [f for r in lint_results(facts, set()) for f in r.findings]
    assert [(f.code, f.location.file, f.location.line) for f in found if f.code == "DDP806"] == \
        [("DDP806", "pkg/trainers/dist.py", 9)]


# ----------------------------------------------- the else of `flag and rank == 0` is every rank's
SEARCH_OR_TRAIN = """
def train():
    loader = DataLoader(TensorDataset(torch.randn(64, 4)), batch_size=8, shuffle=True)
    model = DDP(torch.nn.Linear(4, 1))
    for x, in loader:
        model(x).sum().backward()
    torch.save(model.module.state_dict(), "best.pt")

rank = dist.get_rank()
if {test}:
    print("search on rank 0")
else:
    train()
"""


def test_the_else_of_a_flag_and_a_rank_test_runs_on_every_rank_where_the_flag_is_off(tmp_path):
    found, _ = lint(tmp_path, SEARCH_OR_TRAIN.format(test='"--search" in os.sys.argv and rank == 0'))
    assert ("DDP802", 8) in found_codes(found) and ("DDP806", 12) in found_codes(found)


def test_its_twin_the_else_of_a_plain_rank_test_is_the_other_ranks(tmp_path):
    found, _ = lint(tmp_path, SEARCH_OR_TRAIN.format(test="rank == 0"))
    assert ("DDP806", 12) not in found_codes(found)


# ------------------------------------------------- a local alias of a switch a caller turns off
WRITER = """
class Writer:
    def __init__(self, path, distributed=True):
        sync = distributed and dist.is_initialized()
        if sync:
            dist.barrier()
        self.path = path

def save_once(path):
    Writer(path, distributed={given})

if dist.get_rank() == 0:
    save_once("scores")
"""


def test_a_switch_off_through_a_local_alias_never_reaches_the_barrier(tmp_path):
    found, _ = lint(tmp_path, WRITER.format(given="False"))
    assert [f for f in found if f.code == "DDP801"] == []


def test_its_twin_the_switch_left_on_reaches_it_on_rank_0_alone(tmp_path):
    found, _ = lint(tmp_path, WRITER.format(given="True"))
    assert [f.location.line for f in found if f.code == "DDP801"] == [11]


# ------------------------------------------- set in one branch of an if/elif, read in another
CHAIN = """
def work(out, mode):
    t = torch.ones(1)
    {loop}if not out and mode == "per_query":
    {ind}    dist.all_reduce(t)
    {ind}    if dist.get_rank() == 0:
    {ind}        out = "scores"
    {ind}elif not out:
    {ind}    dist.all_reduce(t)

work("", "aggregate")
"""


def test_a_name_set_in_one_branch_of_a_chain_is_not_what_a_later_branch_reads(tmp_path):
    found, _ = lint(tmp_path, CHAIN.format(loop="", ind=""))
    assert [f for f in found if f.code == "DDP809"] == []


def test_its_twin_in_a_loop_the_next_pass_reads_it(tmp_path):
    found, _ = lint(tmp_path, CHAIN.format(loop="for step in range(3):\n        ", ind="    "))
    assert [f.location.line for f in found if f.code == "DDP809"] == [14]


# --------------------------------------------- a check of a rank's own loss before a hand-written all-reduce
HAND_SYNC = """
import math
def sync_grads(net):
    for p in net.parameters():
        dist.all_reduce(p.grad)

net = torch.nn.Linear(4, 1)
opt = torch.optim.SGD(net.parameters(), lr=0.1)
ok = lambda v: not (math.isnan(v) or v > 1e4)
for step in range(100):
    loss = net(torch.randn(8, 4)).pow(2).mean()
    {shared}if ok(loss.item()):
        loss.backward()
        sync_grads(net)
        opt.step()
"""


def test_a_check_of_a_ranks_own_loss_value_around_a_hand_written_all_reduce_is_a_skip(tmp_path):
    found, _ = lint(tmp_path, HAND_SYNC.format(shared=""))
    assert [(f.code, f.location.line) for f in found if f.code == "DDP809"] == [("DDP809", 17)]


def test_its_twin_the_loss_all_reduced_first_is_the_same_on_every_rank(tmp_path):
    found, _ = lint(tmp_path, HAND_SYNC.format(shared="dist.all_reduce(loss)\n    "))
    assert [f for f in found if f.code == "DDP809"] == []


# --------------------------------------------------------- a rank's own shard file read by key
SHARD_FILE = """
import pickle
local_rank = int(os.environ["LOCAL_RANK"])
with open({path}, "rb") as f:
    inputs = pickle.load(f)
dataset = TensorDataset(torch.tensor(inputs["x"]))
loader = DataLoader(dataset, sampler=RandomSampler(dataset), batch_size=8)
model = DDP(torch.nn.Linear(1, 1))
for x, in loader:
    model(x).sum().backward()
"""


def test_a_dataset_read_from_the_ranks_own_shard_file_is_sharded(tmp_path):
    found, _ = lint(tmp_path, SHARD_FILE.format(path='"shards/train-%d.pkl" % local_rank'))
    assert [f for f in found if f.code == "DDP802"] == []


def test_its_twin_one_file_for_every_rank_is_no_shard(tmp_path):
    found, _ = lint(tmp_path, SHARD_FILE.format(path='"shards/train.pkl"'))
    assert [f.location.line for f in found if f.code == "DDP802"] == [12]


# ------------------------------------------------------------- a generated table is not parsed
def test_a_megabyte_table_with_a_loader_at_its_end_is_a_data_table():
    from ddpdoctor.lint.sources import _data_table
    table = "phrases = {\n" + "".join(f"    'w{i}': [['p{i}']],\n" for i in range(40_000)) + "}\n\ndef load():\n    pass\n"
    assert len(table) > 256_000 and _data_table(table)


def test_its_twin_a_large_module_of_code_is_parsed():
    from ddpdoctor.lint.sources import _data_table
    code = "".join(f"def f{i}(x):\n    y = x + {i}\n    return y * 2 + len(str(y))\n\n" for i in range(6_000))
    assert len(code) > 256_000 and not _data_table(code)


# ------------------------------------------------- the rank init_process_group was handed, passed on
HANDED_RANK = """
import os, torch, torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

def save(local_rank, model, path):
    if local_rank == 0:
        torch.save(model.module.state_dict(), path)

if __name__ == "__main__":
    local_rank = int(os.environ["LOCAL_RANK"])
    dist.init_process_group("gloo"{rank})
    model = DDP(torch.nn.Linear(4, 4))
    save(local_rank, model, "ckpt.pt")
    nnodes = int(os.environ.get("NNODES", 1))  # a job on several nodes
"""


def test_a_parameter_handed_the_rank_init_process_group_was_given_is_the_jobs_rank(tmp_path):
    found = lint_plain(tmp_path, HANDED_RANK.format(rank=", rank=local_rank"))
    assert [f for f in found if f.code == "DDP806"] == []


def test_its_twin_a_local_rank_never_given_as_the_rank_is_one_writer_per_node(tmp_path):
    found = lint_plain(tmp_path, HANDED_RANK.format(rank=""))
    assert [(f.code, f.location.line, f.evidence.get("per_node")) for f in found if f.code == "DDP806"] == \
        [("DDP806", 6, True)]


# ------------------------------------------------------- a dataset's own seeded generator
OWN_RNG = """
import random
class Crops(torch.utils.data.Dataset):
    def __init__(self, seed):
        self.rng = random.Random(seed)
    def __len__(self):
        return 1000
    def __getitem__(self, i):
        start = {draw}.randint(0, 10)
        return torch.arange(start, start + 4).float()

torch.manual_seed(0)
model = DDP(torch.nn.Linear(4, 1))
ds = Crops(0)
sampler = DistributedSampler(ds)
loader = DataLoader(ds, sampler=sampler, batch_size=8, num_workers=4)
for epoch in range(3):
    sampler.set_epoch(epoch)
    for x in loader:
        model(x).sum().backward()
"""


def test_draws_from_the_datasets_own_seeded_generator_do_not_follow_the_workers_seed(tmp_path):
    found, _ = lint(tmp_path, OWN_RNG.format(draw="self.rng"))
    assert [f for f in found if f.code == "DDP808"] == []


def test_its_twin_draws_from_the_global_generator_do(tmp_path):
    found, _ = lint(tmp_path, OWN_RNG.format(draw="random"))
    assert [f.code for f in found if f.code == "DDP808"] == ["DDP808"]


# ---------------------------------------------- a DDP model made by a method, a table, a picked function
BUFFERED = """
class Net(torch.nn.Module):
    def __init__(self, *args):
        super().__init__()
        self.fc = torch.nn.Linear(4, 4)
        self.register_buffer("mask", torch.ones(4))
    def forward(self, x):
        return self.fc(x) * self.mask

@torch.no_grad()
def evaluate(model):
    return model(torch.randn(2, 4)).sum().item()
"""


def test_a_ddp_model_a_method_of_the_scripts_backend_returns_is_one(tmp_path):
    found, _ = lint(tmp_path, BUFFERED + """
class Backend:
    def wrap(self, m):
        return DDP(m)

model = Backend().wrap(Net())
for it in range(10):
    model(torch.randn(2, 4)).sum().backward()
    if dist.get_rank() == 0:
        evaluate(model)
""")
    assert [(f.code, f.location.line) for f in found if f.code == "DDP801"] == [("DDP801", 17)]


def test_a_model_class_from_a_table_literal_holds_its_buffers(tmp_path):
    found, _ = lint(tmp_path, BUFFERED + """
MODELS = {"base": Net}
model = DDP(MODELS[os.environ.get("MODEL", "base")]())
for it in range(10):
    model(torch.randn(2, 4)).sum().backward()
    if dist.get_rank() == 0:
        evaluate(model)
""")
    assert [(f.code, f.location.line) for f in found if f.code == "DDP801"] == [("DDP801", 17)]


def test_a_function_picked_into_a_name_runs_where_the_name_is_called(tmp_path):
    source = BUFFERED + """
def train(model):
    for it in range(10):
        model(torch.randn(2, 4)).sum().backward()
        if dist.get_rank() == 0:
            evaluate(model)

def train_quiet(model):
    model(torch.randn(2, 4)).sum().backward()

model = DDP(Net())
if os.environ.get("QUIET"):
    run = train_quiet
else:
    run = {picked}
run(model)
"""
    found, _ = lint(tmp_path, source.format(picked="train"))
    assert [(f.code, f.location.line) for f in found if f.code == "DDP801"] == [("DDP801", 17)]
    found, _ = lint(tmp_path, source.format(picked="train_quiet"))
    assert [f for f in found if f.code == "DDP801"] == []


# ------------------------------------------- a DistributedSampler subclass named otherwise
BUCKETS = """
class BucketSampler(torch.utils.data.distributed.DistributedSampler):
    def __iter__(self):
        g = torch.Generator()
        g.manual_seed(self.epoch)
        idx = torch.randperm(len(self.dataset), generator=g)[self.rank::self.num_replicas].tolist()
        return iter([idx[i:i + 8] for i in range(0, len(idx), 8)])

model = DDP(torch.nn.Linear(4, 1))
ds = TensorDataset(torch.randn(64, 4))
loader = DataLoader(ds, batch_sampler=BucketSampler(ds))
for epoch in range(10):
    {set_epoch}for x, in loader:
        model(x).sum().backward()
"""


def test_a_distributed_sampler_subclass_named_otherwise_needs_set_epoch_too(tmp_path):
    found, _ = lint(tmp_path, BUCKETS.format(set_epoch=""))
    assert [(f.code, f.location.line) for f in found if f.code == "DDP804"] == [("DDP804", 16)]


def test_its_twin_with_set_epoch_on_the_batch_sampler_is_clean(tmp_path):
    found, _ = lint(tmp_path, BUCKETS.format(set_epoch="loader.batch_sampler.set_epoch(epoch)\n    "))
    assert [f for f in found if f.code == "DDP804"] == []


def test_a_package_above_a_module_is_a_package_not_a_module_file_of_its_name(tmp_path, monkeypatch):
    # loaders/loaders.py appends its own folder to sys.path: `loaders` there would name the module
    # file itself, but Python imported the package `loaders` before that line ran
    (tmp_path / "loaders").mkdir()
    (tmp_path / "loaders" / "loaders.py").write_text(textwrap.dedent("""\
        import os, sys, torch
        sys.path.append(os.path.dirname(__file__))
        from loaders.misc import size
        def get_loader():
            ds = torch.utils.data.TensorDataset(torch.randn(size(), 2))
            return torch.utils.data.DataLoader(ds, batch_size=4, shuffle=True)
        """))
    (tmp_path / "loaders" / "misc.py").write_text("def size():\n    return 64\n")
    (tmp_path / "train.py").write_text(textwrap.dedent("""\
        import torch, torch.distributed as dist
        from torch.nn.parallel import DistributedDataParallel as DDP
        from loaders.loaders import get_loader
        dist.init_process_group("gloo")
        model = DDP(torch.nn.Linear(2, 1))
        loader = get_loader()
        for x, in loader:
            model(x).sum().backward()
        """))
    monkeypatch.chdir(tmp_path)
    found = [f for r in lint_results(gather("train.py"), set()) for f in r.findings]
    assert [(f.code, f.location.file, f.location.line) for f in found if f.code == "DDP802"] == \
        [("DDP802", "loaders/loaders.py", 6)]


# ------------------------------------- a switch with a collective on both its sides decides which, not whether
SAVER = """
def write_rows(path):
    dist.barrier()

def write_tokens(path):
    {other}

def save(path, per_token):
    if per_token:
        write_tokens(path)
    else:
        write_rows(path)

if dist.get_rank() == 0:
    save("scores", os.environ.get("PER_TOKEN") == "1")
"""


def test_a_collective_on_both_sides_of_a_switch_on_the_way_is_no_assumption(tmp_path):
    found, _ = lint(tmp_path, SAVER.format(other="dist.barrier()"))
    assert sorted((f.location.line, f.severity.value) for f in found if f.code == "DDP801") == \
        [(8, "error"), (11, "error")]


def test_its_twin_a_collective_on_one_side_rests_on_the_switch(tmp_path):
    found, _ = lint(tmp_path, SAVER.format(other="pass"))
    assert [(f.location.line, f.severity.value) for f in found if f.code == "DDP801"] == [(8, "warning")]


def test_a_distributed_sampler_subclass_wrapping_another_sampler_takes_that_ones_order(tmp_path):
    # a proxy built on a sampler (often one pass covering the whole run): not judged as a
    # shuffling DistributedSampler of its own
    found, _ = lint(tmp_path, BUCKETS.replace("BucketSampler(ds)", "BucketSampler(RandomSampler(ds))")
                    .format(set_epoch=""))
    assert [f for f in found if f.code == "DDP804"] == []


SHARD_ATTR = """
import pickle
class Data:
    def __init__(self, local_rank):
        self.local_rank = local_rank
        self.inputs = None
    def load(self):
        with open({path}, "rb") as f:
            inputs = pickle.load(f)
        self.inputs = inputs
    def loader(self):
        inputs = self.inputs
        dataset = TensorDataset(torch.tensor(inputs["x"]))
        return DataLoader(dataset, sampler=RandomSampler(dataset), batch_size=8)

data = Data(int(os.environ["LOCAL_RANK"]))
data.load()
model = DDP(torch.nn.Linear(1, 1))
loader = data.loader()
for x, in loader:
    model(x).sum().backward()
"""


def test_a_dataset_from_a_field_another_method_read_from_the_ranks_own_file_is_sharded(tmp_path):
    found, _ = lint(tmp_path, SHARD_ATTR.format(path='"train-rank=%d.pkl" % self.local_rank'))
    assert [f for f in found if f.code == "DDP802"] == []


def test_its_twin_one_file_for_all_is_no_shard(tmp_path):
    found, _ = lint(tmp_path, SHARD_ATTR.format(path='"train.pkl"'))
    assert [f.location.line for f in found if f.code == "DDP802"] == [19]


# ------------------------------------------------------------ round 22's shapes
HELPER_DRAW = """
from numpy.random import randint
class Frames:
    def __init__(self, shift):
        self.shift = shift
    def indices(self, n):
        return list(range(0, n, 4)) if not self.shift else [i + {draw} for i in range(0, n, 4)]

class Clips(torch.utils.data.Dataset):
    def __init__(self):
        self.frames = Frames(shift=True)
    def __len__(self):
        return 64
    def __getitem__(self, i):
        return torch.tensor(self.frames.indices(32), dtype=torch.float)

torch.manual_seed(42)
model = DDP(torch.nn.Linear(8, 1))
ds = Clips()
sampler = DistributedSampler(ds)
loader = DataLoader(ds, batch_size=8, sampler=sampler, num_workers=4)
for epoch in range(3):
    sampler.set_epoch(epoch)
    for x in loader:
        model(x).sum().backward()
"""


def test_a_draw_in_a_method_of_a_helper_object_the_dataset_keeps_is_the_datasets(tmp_path):
    found, _ = lint(tmp_path, HELPER_DRAW.format(draw="randint(0, 4)"))
    assert [f.code for f in found if f.code == "DDP808"] == ["DDP808"]


def test_its_twin_a_helper_that_draws_nothing(tmp_path):
    found, _ = lint(tmp_path, HELPER_DRAW.format(draw="1"))
    assert [f for f in found if f.code == "DDP808"] == []


NULL_SAVER = """
class NoOp:
    def __getattr__(self, name):
        return self.noop
    def noop(self, *args, **kwargs):
        return None

class Saver:
    def save(self, model):
        torch.save(model.module.state_dict(), "model.bin")

model = DDP(torch.nn.Linear(4, 1))
if dist.get_rank() != 0:
    saver = {other}
else:
    saver = Saver()
for step in range(10):
    model(torch.randn(8, 4)).sum().backward()
    saver.save(model)
"""


def test_a_do_nothing_stand_in_on_the_other_ranks_leaves_the_save_to_rank_0(tmp_path):
    found, _ = lint(tmp_path, NULL_SAVER.format(other="NoOp()"))
    assert [f for f in found if f.code == "DDP806"] == []


def test_its_twin_a_real_saver_on_every_rank_writes_on_every_rank(tmp_path):
    found, _ = lint(tmp_path, NULL_SAVER.format(other="Saver()"))
    assert [f.location.line for f in found if f.code == "DDP806"] == [15]


ENGINE_STEP = """
import deepspeed
class Checkpointer:
    def __init__(self, model):
        self.model = model
    def step(self):
        torch.save(self.model.state_dict(), "restore.pt")

engine, *_ = deepspeed.initialize(model=torch.nn.Linear(4, 1), config={{}})
ckpt = Checkpointer(engine.module) if dist.get_rank() == 0 else None
for step in range(10):
    engine.backward(engine(torch.randn(8, 4)).sum())
    {call}.step()
    if ckpt is not None:
        ckpt.step()
"""


def test_a_library_engines_step_is_not_the_scripts_method_of_that_name(tmp_path):
    found, _ = lint(tmp_path, ENGINE_STEP.format(call="engine"))
    assert [f for f in found if f.code == "DDP806"] == []


def test_its_twin_the_scripts_own_object_on_every_rank_is(tmp_path):
    found, _ = lint(tmp_path, ENGINE_STEP.format(call="Checkpointer(engine.module)"))
    assert [f.location.line for f in found if f.code == "DDP806"] == [12]


def test_a_stand_in_handed_to_the_training_function_leaves_the_save_to_rank_0(tmp_path):
    found, _ = lint(tmp_path, NULL_SAVER.split("model = DDP")[0] + """
def train(model, saver):
    for step in range(10):
        model(torch.randn(8, 4)).sum().backward()
        saver.save(model)

model = DDP(torch.nn.Linear(4, 1))
if dist.get_rank() != 0:
    print("quiet")
    saver = {other}
else:
    saver = Saver()
    print("saving to model.bin")
train(model, saver)
""".format(other="NoOp()"))
    assert [f for f in found if f.code == "DDP806"] == []


def test_a_class_a_module_names_again_is_that_class(tmp_path):
    # `Extractor = ExtractorCV2` at the helper module's top: its draws are the dataset's
    found, _ = lint(tmp_path, """
from frames import Extractor
class Clips(torch.utils.data.Dataset):
    def __init__(self):
        self.frames = Extractor()
    def __len__(self):
        return 64
    def __getitem__(self, i):
        return torch.tensor(self.frames.get(32), dtype=torch.float)

torch.manual_seed(42)
model = DDP(torch.nn.Linear(8, 1))
ds = Clips()
sampler = DistributedSampler(ds)
loader = DataLoader(ds, batch_size=8, sampler=sampler, num_workers=4)
for epoch in range(3):
    sampler.set_epoch(epoch)
    for x in loader:
        model(x).sum().backward()
""", frames="""
from numpy.random import randint
class ExtractorCV2:
    def get(self, n):
        return self.offsets(n)
    def offsets(self, n):
        return [i + randint(0, 4) for i in range(0, n, 4)]
Extractor = ExtractorCV2
""")
    assert [f.code for f in found if f.code == "DDP808"] == ["DDP808"]


# ------------------------------------------------------------ round 23's shapes
GATHERED = """
def gather_stats(x):
    out = [torch.zeros_like(x) for _ in range(dist.get_world_size())]
    dist.all_gather(out, x)
    return torch.stack(out).mean()

def show(x, gathered=None):
    if dist.get_rank() != 0:
        return
    value = gather_stats(x) if gathered is None else gathered
    print(value)

x = torch.ones(1)
show(x{given})
"""


def test_a_gather_on_the_side_of_a_conditional_every_caller_skips_is_never_reached(tmp_path):
    found, _ = lint(tmp_path, GATHERED.format(given=", gathered=gather_stats(x)"))
    assert [f for f in found if f.code == "DDP801"] == []


def test_its_twin_left_at_its_default_rank_0_gathers_alone(tmp_path):
    found, _ = lint(tmp_path, GATHERED.format(given=""))
    assert [(f.code, f.severity.value) for f in found if f.code == "DDP801"] == [("DDP801", "error")]


TOML_LOADER = """
import sys, toml
import torch.multiprocessing as mp
def entry(rank, world, cfg):
    train_loader = DataLoader(TensorDataset(torch.randn(64, 4)), **cfg["loader"])
    model = DDP(torch.nn.Linear(4, 1))
    for x, in train_loader:
        model(x).sum().backward()

mp.spawn(entry, args=(2, {cfg}), nprocs=2)
"""


def test_options_spread_from_a_parsed_config_file_hold_no_sampler(tmp_path):
    found, _ = lint(tmp_path, TOML_LOADER.format(cfg="toml.load(sys.argv[1])"))
    assert [(f.code, f.severity.value) for f in found if f.code == "DDP802"] == [("DDP802", "error")]


def test_its_twin_options_from_the_scripts_own_helper_may_hold_one(tmp_path):
    found, _ = lint(tmp_path, "def options():\n    return make_options()\n" +
                    TOML_LOADER.format(cfg="options()"))
    assert [f for f in found if f.code == "DDP802"] == []


def test_a_module_level_literal_without_a_sampler_key_holds_no_sampler(tmp_path):
    found, _ = lint(tmp_path, """
CFG = {"batch_size": 8, "shuffle": True}
train_loader = DataLoader(TensorDataset(torch.randn(64, 4)), **CFG)
model = DDP(torch.nn.Linear(4, 1))
for x, in train_loader:
    model(x).sum().backward()
""")
    assert [f.code for f in found if f.code == "DDP802"] == ["DDP802"]


STREAM = """
class Chunks(torch.utils.data.IterableDataset):
    def __iter__(self):
        for i in range(1000):
            yield torch.full((16,), {item})
model = DDP(torch.nn.Linear(16, 1))
for x in DataLoader(Chunks(), batch_size=8):
    model(x).sum().backward()
"""


def test_a_stream_that_never_reads_the_rank_is_the_same_on_every_rank(tmp_path):
    found, _ = lint(tmp_path, STREAM.format(item="float(i)"))
    assert [(f.code, f.severity.value) for f in found if f.code == "DDP802"] == [("DDP802", "error")]


def test_its_twins_a_stream_split_by_rank_or_of_generated_samples(tmp_path):
    for item in ("float(i) if i % dist.get_world_size() == dist.get_rank() else 0.0", "torch.randn(1).item()"):
        found, _ = lint(tmp_path, STREAM.format(item=item))
        assert [f for f in found if f.code == "DDP802"] == [], item


def test_a_loader_handed_to_a_trainer_the_config_names_is_incomplete(tmp_path):
    _, facts = lint(tmp_path, """
import importlib
train_loader = DataLoader(TensorDataset(torch.randn(64, 4)), batch_size=8)
module, name = os.environ["TRAINER"].rsplit(".", 1)
getattr(importlib.import_module(module), name)(train_loader).train()
""")
    assert facts.config_named is not None and facts.config_named.line == 10


# ------------------------------------------------------------ from session 19's holdout (after scoring)
ENV_FLAG = """
local_rank = {read}
if local_rank:
    dist.barrier()
"""


def test_an_environment_variables_text_is_true_wherever_it_is_set(tmp_path):
    # "0" is a true string: `if os.environ.get("LOCAL_RANK"):` asks whether the launcher set it
    found, _ = lint(tmp_path, ENV_FLAG.format(read='os.environ.get("LOCAL_RANK")'))
    assert [f for f in found if f.code == "DDP801"] == []


def test_its_twin_the_ranks_number_is_a_rank_test(tmp_path):
    found, _ = lint(tmp_path, ENV_FLAG.format(read='int(os.environ.get("LOCAL_RANK", 0))'))
    assert [f.code for f in found if f.code == "DDP801"] == ["DDP801"]


CHECKED = """
def check_loss(loss, value):
    ok = not (math.isnan(value) or math.isinf(value) or value < 0)
    return ok, "" if ok else "bad loss"

import math
model = DDP(torch.nn.Linear(4, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for step in range(10):
    loss = model(torch.randn(8, 4)).pow(2).mean()
    value = loss.item()
    {shared}valid, error = check_loss(loss, value)
    if valid:
        loss.backward()
        opt.step()
"""


def test_a_check_helpers_verdict_on_a_ranks_own_loss_decides_the_backward(tmp_path):
    found, _ = lint(tmp_path, CHECKED.format(shared=""))
    assert [(f.code, f.location.line) for f in found if f.code == "DDP809"] == [("DDP809", 18)]


def test_its_twin_a_verdict_on_the_reduced_value_is_every_ranks(tmp_path):
    found, _ = lint(tmp_path, CHECKED.format(shared="t = torch.tensor([value]); dist.all_reduce(t); value = t.item()\n    "))
    assert [f for f in found if f.code == "DDP809"] == []


def test_options_that_are_one_of_two_literals_and_spread_into_two_loaders_hold_no_sampler(tmp_path):
    found, _ = lint(tmp_path, """
def main(use_cuda):
    kwargs = {"num_workers": 1, "pin_memory": True} if use_cuda else {}
    train_loader = DataLoader(TensorDataset(torch.randn(64, 4)), batch_size=8, shuffle=True, **kwargs)
    test_loader = DataLoader(TensorDataset(torch.randn(16, 4)), batch_size=8, **kwargs)
    model = DDP(torch.nn.Linear(4, 1))
    for x, in train_loader:
        model(x).sum().backward()
main(True)
""")
    assert [(f.code, f.location.line) for f in found if f.code == "DDP802"] == [("DDP802", 9)]


# ------------------------------------------------------------ round 24's shapes
def test_the_else_of_a_world_size_above_one_is_one_process(tmp_path):
    found, _ = lint(tmp_path, """
world_size = int(os.environ["WORLD_SIZE"])
local_rank = int(os.environ["LOCAL_RANK"])
model = DDP(torch.nn.Linear(2, 2))
if local_rank == 0:
    if world_size > 1:
        torch.save(model.module.state_dict(), "ckpt.pth")
    else:
        torch.save(model.state_dict(), "ckpt.pth")
NNODES = int(os.environ.get("NNODES", 1))  # a job on several nodes
""")
    assert [f.location.line for f in found if f.code == "DDP806"] == [12]


SET_EPOCH_ON_RANK_0 = """
rank = dist.get_rank()
model = DDP(torch.nn.Linear(4, 1))
data = TensorDataset(torch.randn(64, 4))
sampler = DistributedSampler(data, shuffle=True)
loader = DataLoader(data, batch_size=8, sampler=sampler)
for epoch in range(10):
    {guard}sampler.set_epoch(epoch)
    for x, in loader:
        model(x).sum().backward()
"""


def test_set_epoch_called_under_a_rank_test_leaves_the_other_ranks_on_the_first_order(tmp_path):
    found, _ = lint(tmp_path, SET_EPOCH_ON_RANK_0.format(guard="if rank <= 0:\n        "))
    [f] = [f for f in found if f.code == "DDP804"]
    assert f.location.line == 10 and "only where `rank <= 0`" in f.message


def test_its_twin_set_epoch_on_every_rank(tmp_path):
    found, _ = lint(tmp_path, SET_EPOCH_ON_RANK_0.format(guard=""))
    assert [f for f in found if f.code == "DDP804"] == []


def test_colossal_ais_launcher_sets_up_the_process_group(tmp_path):
    found = lint_plain(tmp_path, """
import torch, colossalai
from torch.utils.data import DataLoader, TensorDataset
colossalai.launch_from_torch(config={})
model = torch.nn.Linear(4, 1)
loader = DataLoader(TensorDataset(torch.randn(64, 4)), batch_size=8)
for x, in loader:
    model(x).sum().backward()
torch.save(model.state_dict(), "model.pth")
""")
    assert sorted(f.code for f in found if f.code in ("DDP802", "DDP806")) == ["DDP802", "DDP806"]


def test_folders_added_with_plus_equals_or_extend_are_searched(tmp_path, monkeypatch):
    lib = tmp_path / "lib" / "helpers"
    lib.mkdir(parents=True)
    (lib / "__init__.py").write_text("")
    (lib / "util.py").write_text("import torch.distributed as dist\ndef is_first_worker():\n"
                                 "    return dist.get_rank() == 0\n")
    (tmp_path / "drivers").mkdir()
    for add in ('sys.path += ["../lib"]', 'sys.path.extend(["../lib"])'):
        (tmp_path / "drivers" / "train.py").write_text(textwrap.dedent(f"""\
            import sys, torch, torch.distributed as dist
            {add}
            from helpers.util import is_first_worker
            dist.init_process_group("gloo")
            if is_first_worker():
                torch.save(torch.nn.Linear(2, 2).state_dict(), "model.pt")
            """))
        monkeypatch.chdir(tmp_path / "drivers")
        facts = gather("train.py")
        found = [f for r in lint_results(facts, set()) for f in r.findings]
        assert len(facts.files) == 3 and [f for f in found if f.code == "DDP806"] == [], add


def test_a_function_called_on_import_modules_result_is_reached(tmp_path, monkeypatch):
    (tmp_path / "apps" / "pretrain").mkdir(parents=True)
    (tmp_path / "apps" / "pretrain" / "train.py").write_text(textwrap.dedent("""\
        import torch
        def main(cfg):
            torch.save(torch.nn.Linear(2, 2).state_dict(), "model.pt")
        """))
    (tmp_path / "main.py").write_text(textwrap.dedent("""\
        import importlib
        import torch.distributed as dist
        dist.init_process_group("gloo")
        importlib.import_module("apps.pretrain.train").main({})
        """))
    monkeypatch.chdir(tmp_path)
    found = [f for r in lint_results(gather("main.py"), set()) for f in r.findings]
    assert [(f.code, f.location.file, f.location.line) for f in found if f.code == "DDP806"] == \
        [("DDP806", "apps/pretrain/train.py", 3)]
