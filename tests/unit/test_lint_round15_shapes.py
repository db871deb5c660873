"""Shapes from session 17's fifteenth blind round, each with its twin, written in our own words."""

from __future__ import annotations

from tests.unit.test_lint_real_patterns import codes, lint

NAN_SKIP = """
ds = TensorDataset(torch.randn(64, 4))
sampler = DistributedSampler(ds)
loader = DataLoader(ds, sampler=sampler)
model = DDP(torch.nn.Linear(4, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for epoch in range(3):
    sampler.set_epoch(epoch)
    for (x,) in loader:
        loss = model(x).mean()
        if {test}:
            loss.backward()
            opt.step()
        else:
            print("skip batch")
"""


def test_a_backward_only_where_the_ranks_own_loss_is_finite_is_a_rank_local_skip(tmp_path):
    # PANGAEA before its fix: `if not torch.isnan(loss): backward ... else: log`
    found, _ = lint(tmp_path, NAN_SKIP.format(test="not torch.isnan(loss)"))
    assert ("DDP809", "warning", 16) in codes(found)


def test_a_backward_under_a_test_every_rank_shares_is_no_skip(tmp_path):
    found, _ = lint(tmp_path, NAN_SKIP.format(test="epoch < 10"))
    assert [f for f in found if f.code == "DDP809"] == []


GENERATOR = """
def make_gen(seed):
    g = torch.Generator()
    g.manual_seed(seed)
    return g

def main(cfg):
    ds = TensorDataset(torch.randn(64, 4))
    gen = make_gen({given})
    loader = DataLoader(ds, sampler=DistributedSampler(ds), num_workers=4, generator=gen)
    model = DDP(torch.nn.Linear(4, 1))
    for epoch in range(3):
        loader.sampler.set_epoch(epoch)
        for (x,) in loader:
            model(x).sum().backward()

main({{}})
"""


def test_a_generator_a_helper_seeds_alike_gives_every_rank_the_same_worker_seeds(tmp_path):
    # PANGAEA's get_generator(cfg.seed), BFN's: `g.manual_seed(seed); return g`
    found, _ = lint(tmp_path, GENERATOR.format(given="cfg.seed"))
    assert ("DDP808", "warning", 9) in codes(found)


def test_a_generator_a_helper_seeds_with_the_rank_is_healthy(tmp_path):
    found, _ = lint(tmp_path, GENERATOR.format(given="cfg.seed + dist.get_rank()"))
    assert [f for f in found if f.code == "DDP808"] == []


OR_SAVE = """
master = dist.get_rank() == 0
model = DDP(torch.nn.Linear(4, 4))
for step in range(100):
    model(torch.randn(2, 4)).sum().backward()
    if {test}:
        torch.save(model.module.state_dict(), f"ckpt{{step}}.pt")
"""


def test_a_save_under_an_or_whose_other_side_holds_on_every_rank_is_every_ranks(tmp_path):
    # Adam-mini: `if master and step % k == 0 or step in milestones:`
    found, _ = lint(tmp_path, OR_SAVE.format(test="master and step % 10 == 0 or step in [25, 50, 99]"))
    [save] = [f for f in found if f.code == "DDP806"]
    assert save.location.line == 12 and "whose other side holds on every rank" in save.message


def test_a_save_under_the_rank_test_around_the_or_is_one_writer(tmp_path):
    found, _ = lint(tmp_path, OR_SAVE.format(test="master and (step % 10 == 0 or step in [25, 50, 99])"))
    assert [f for f in found if f.code == "DDP806"] == []


RESEED = """
import random
from torch.utils.data import Dataset

class Prompts(Dataset):
    def __len__(self):
        return 1000
    def __getitem__(self, i):
        return torch.tensor([float(random.random() < 0.2)])

def setup_seed(seed):
    random.seed(seed)
    torch.manual_seed(seed)

setup_seed(42 + dist.get_rank())
model = DDP(torch.nn.Linear(1, 1))
ds = Prompts()
sampler = DistributedSampler(ds)
for epoch in range(3):
    sampler.set_epoch(epoch)
    setup_seed({reseed})
    loader = DataLoader(ds, batch_size=8, sampler=sampler, num_workers=2)
    for x in loader:
        model(x).sum().backward()
"""


def test_the_seeding_last_before_the_loader_decides_its_workers_seeds(tmp_path):
    # MiniMind-V: per rank at the start, then `setup_seed(42 + epoch)` alike before each loader
    found, _ = lint(tmp_path, RESEED.format(reseed="42 + epoch"))
    assert ("DDP808", "warning", 27) in codes(found)


def test_a_reseeding_with_the_rank_before_the_loader_is_healthy(tmp_path):
    found, _ = lint(tmp_path, RESEED.format(reseed="42 + epoch + dist.get_rank()"))
    assert [f for f in found if f.code == "DDP808"] == []


REGISTERED = """
class Registry:
    def __init__(self):
        self.fns = {{}}
    def register_function(self):
        def add(fn):
            self.fns[fn.__name__] = fn
            return fn
        return add
    def build(self, cfg):
        return self.fns[cfg["type"]]()

ENGINE = Registry()

{decorator}
def train_entrance():
    ds = TensorDataset(torch.randn(64, 4))
    sampler = DistributedSampler(ds)
    loader = DataLoader(ds, sampler=sampler)
    model = DDP(torch.nn.Linear(4, 1))
    for epoch in range(3):
        for (x,) in loader:
            model(x).sum().backward()

ENGINE.build(dict(type=os.environ["TASK_TYPE"]))
"""


def test_a_training_function_a_registry_decorator_collects_is_reached(tmp_path):
    # VGen: `@ENGINE.register_function()` entrances that `ENGINE.build(dict(type=...))` runs
    found, _ = lint(tmp_path, REGISTERED.format(decorator="@ENGINE.register_function()"))
    assert ("DDP804", "warning", 23) in codes(found)


def test_an_undecorated_function_nothing_calls_is_not(tmp_path):
    found, _ = lint(tmp_path, REGISTERED.format(decorator=""))
    assert [f for f in found if f.code == "DDP804"] == []


def test_a_function_importing_its_own_name_locally_calls_the_import(tmp_path):
    # OpenSTL: `def load_data(...)` does `from .moving_mnist import load_data` and calls it
    (tmp_path / "loaders.py").write_text(
        "import torch\n"
        "def load_data(distributed=False):\n"
        "    ds = torch.utils.data.TensorDataset(torch.randn(64, 4))\n"
        "    sampler = torch.utils.data.distributed.DistributedSampler(ds) if distributed else None\n"
        "    return torch.utils.data.DataLoader(ds, batch_size=8, sampler=sampler)\n")
    found, _ = lint(tmp_path, """
def load_data(name, distributed=False):
    if name == "a":
        from loaders import load_data
        return load_data(distributed=distributed)
    raise ValueError(name)

model = DDP(torch.nn.Linear(4, 1))
loader = load_data("a", distributed=True)
for epoch in range(10):
    for (x,) in loader:
        model(x).sum().backward()
""")
    assert [(f.code, f.location.line, f.location.file.endswith("loaders.py")) for f in found
            if f.code == "DDP804"] == [("DDP804", 4, True)]


GROUP_GIVEN = """
def gather_and_log(metrics, process_group=None):
    if process_group is not None:
        out = [None] * dist.get_world_size(process_group)
        dist.all_gather_object(out, metrics, group=process_group)

group = dist.new_group(list(range(dist.get_world_size())))
gather_and_log({{"loss": 1.0}}, group)
if dist.get_rank() == 0:
    gather_and_log({{"reward": 0.5}}{given})
"""


def test_a_group_left_at_none_on_the_rank_0_call_runs_no_collective_there(tmp_path):
    # RL2: the rank-0 logging call hands no process group, so the gather is skipped there
    found, _ = lint(tmp_path, GROUP_GIVEN.format(given=""))
    assert [f for f in found if f.code == "DDP801"] == []


def test_the_rank_0_call_handing_a_group_gathers_alone(tmp_path):
    found, _ = lint(tmp_path, GROUP_GIVEN.format(given=", group"))
    assert "DDP801" in [c for c, _, _ in codes(found)]


ORDERED = """
from timm.data.distributed_sampler import OrderedDistributedSampler
ds = TensorDataset(torch.randn(64, 4))
train = DataLoader(ds, sampler=DistributedSampler(ds))
val = DataLoader(ds, sampler={sampler}(ds))
model = DDP(torch.nn.Linear(4, 1))
for epoch in range(10):
    for (x,) in train:
        model(x).sum().backward()
    with torch.no_grad():
        for (x,) in val:
            model.module(x)
"""


def test_a_library_sampler_named_ordered_never_shuffles(tmp_path):
    # OpenSTL's evaluation loaders: timm's OrderedDistributedSampler, no set_epoch needed
    found, _ = lint(tmp_path, ORDERED.format(sampler="OrderedDistributedSampler"))
    assert [f.location.line for f in found if f.code == "DDP804"] == [9]


def test_a_shuffling_sampler_on_the_same_loader_is_still_judged(tmp_path):
    found, _ = lint(tmp_path, ORDERED.format(sampler="DistributedSampler").replace("with torch.no_grad():", "if True:").replace("model.module(x)", "model(x).sum().backward()"))
    assert [f.location.line for f in found if f.code == "DDP804"] == [9, 10]


def test_an_open_or_is_read_from_the_test_itself_however_long(tmp_path):
    # Adam-mini's test runs past the 80 characters a message quotes
    long_test = ("master and step > 0 and step % ckpt_interval == 0 or step in "
                 "[round(max_iters * 0.01), round(max_iters * 0.25), round(max_iters * 0.5)]")
    found, _ = lint(tmp_path, "max_iters, ckpt_interval = 100, 10\n" + OR_SAVE.format(test=long_test))
    assert ("DDP806", "warning", 14) in codes(found)


HELPER_DRAWS = """
import random
from torch.utils.data import Dataset

def add_system_prompt(conversation):
    if {draw}:
        return ["system"] + conversation
    return conversation

class Chats(Dataset):
    def __len__(self):
        return 1000
    def __getitem__(self, i):
        return torch.tensor([float(len(add_system_prompt([str(i)])))])

torch.manual_seed(42)
ds = Chats()
sampler = DistributedSampler(ds)
loader = DataLoader(ds, batch_size=8, sampler=sampler, num_workers=2)
model = DDP(torch.nn.Linear(1, 1))
for epoch in range(3):
    sampler.set_epoch(epoch)
    for x in loader:
        model(x).sum().backward()
"""


def test_a_draw_in_a_module_function_the_dataset_calls_is_the_workers(tmp_path):
    # MiniMind-V: `__getitem__` -> `pre_processing_chat()`, which draws with `random.random()`
    found, _ = lint(tmp_path, HELPER_DRAWS.format(draw="random.random() < 0.2"))
    assert ("DDP808", "warning", 24) in codes(found)


def test_a_module_function_the_dataset_calls_that_draws_nothing_is_healthy(tmp_path):
    found, _ = lint(tmp_path, HELPER_DRAWS.format(draw="len(conversation) > 1"))
    assert [f for f in found if f.code == "DDP808"] == []


SUBGROUP = """
def launch(group):
    urls = [None] * 2
    dist.all_gather_object(urls, "url"{group})

group = dist.new_group([0, 2])
if dist.get_rank() == 0:
    launch(group)
"""


def test_a_collective_over_a_subgroup_under_a_rank_test_is_a_warning_that_names_the_group(tmp_path):
    # RL2: tp-rank-0 processes gather over their dp group, which holds exactly them
    found, _ = lint(tmp_path, SUBGROUP.format(group=", group=group"))
    [one] = [f for f in found if f.code == "DDP801"]
    assert one.severity.value == "warning" and one.message.startswith("if `group` holds ranks that skip the branch")


def test_the_same_collective_over_the_default_group_is_an_error(tmp_path):
    found, _ = lint(tmp_path, SUBGROUP.format(group=""))
    assert [f.severity.value for f in found if f.code == "DDP801"] == ["error"]
