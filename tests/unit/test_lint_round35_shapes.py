"""Shapes from session 22 (blind round 35), each with its healthy twin, written in our own words."""

from __future__ import annotations

from tests.unit.test_lint_round17_shapes import lint_plain
from tests.unit.test_lint_round25_shapes import lines_of

# -------------------------------------------------- a rank's own draw around a no_grad DDP forward
SELF_CONDITION = """
import random, torch, torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

dist.init_process_group("gloo")
random.seed(7 + dist.get_rank())
net = DDP({module}{options})
opt = torch.optim.SGD(net.parameters(), lr=0.1)
for _ in range(10):
    x = torch.randn(4, 3)
    prior = torch.zeros_like(x)
    if random.random() < 0.3:
        with torch.no_grad():
            prior = net(x)
    loss = net(x + prior).sum()
    opt.zero_grad()
    loss.backward()
    opt.step()
"""


def test_a_no_grad_forward_without_buffers_to_broadcast_meets_no_other_rank(tmp_path):
    code = SELF_CONDITION.replace("{module}", "torch.nn.Linear(3, 3)").replace(
        "{options}", ", broadcast_buffers=False")
    assert lines_of(lint_plain(tmp_path, code), "DDP809") == []
    plain = SELF_CONDITION.replace("{module}", "torch.nn.Linear(3, 3)").replace("{options}", "")
    assert lines_of(lint_plain(tmp_path, plain), "DDP809") == []  # a Linear holds no buffers


def test_its_twin_a_batchnorm_broadcast_in_that_forward_is_a_decision(tmp_path):
    code = SELF_CONDITION.replace("{module}", "torch.nn.Sequential(torch.nn.Linear(3, 3), torch.nn.BatchNorm1d(3))") \
        .replace("{options}", "")
    assert lines_of(lint_plain(tmp_path, code), "DDP809") == [11]


def test_its_twin_the_same_draw_around_a_forward_with_gradients_on_is_a_decision(tmp_path):
    code = SELF_CONDITION.replace("{module}", "torch.nn.Linear(3, 3)").replace(
        "{options}", ", broadcast_buffers=False").replace(
        "        with torch.no_grad():\n            prior = net(x)", "        prior = net(x)")
    assert lines_of(lint_plain(tmp_path, code), "DDP809") == [11]


# -------------------------------------------------- a rank's part through a picked class and a generator
PARTS = """
import torch, torch.distributed as dist
from torch.utils.data import DataLoader, TensorDataset

class Shards:
    def __init__(self, n):
        self.n = n
        self.rank = dist.get_rank()
        self.world = dist.get_world_size()

    def cut(self, x):
        per = len(x) // self.world
        return TensorDataset(x[self.rank * per:(self.rank + 1) * per])

    def load(self):
        return {part}

    def passes(self):
        while True:
            yield self.load()

def pick(kind):
    if kind == "shards":
        return Shards

class Loop:
    def __init__(self, kind):
        self.model = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(2, 1))
        self.opt = torch.optim.SGD(self.model.parameters(), lr=0.1)
        self.sets = {sets}

    def next_loader(self):
        self.data = {data}
        self.loader = DataLoader(self.data, batch_size=4, shuffle=True)

    def update(self, loss):
        self.opt.zero_grad()
        loss.backward()
        self.opt.step()

    def one_pass(self):
        for (x,) in self.loader:
            self.update(self.model(x).sum())

    def run(self):
        for _ in range(3):
            self.next_loader()
            self.one_pass()

dist.init_process_group("gloo")
Loop("shards").run()
"""
GENERATOR = {"{sets}": 'pick(kind)(64).passes()', "{data}": "next(self.sets)"}
PICKED = {"{sets}": "None", "{data}": 'pick("shards")(64).load()'}


def _parts(choice: dict, part: str) -> str:
    code = PARTS.replace("{part}", part)
    for key, value in choice.items():
        code = code.replace(key, value)
    return code


def test_a_rank_part_yielded_by_a_generator_of_a_picked_class_needs_no_sampler(tmp_path):
    for choice in (GENERATOR, PICKED):
        code = _parts(choice, "self.cut(torch.randn(self.n, 2))")
        assert lines_of(lint_plain(tmp_path, code), "DDP802") == []


def test_its_twin_the_whole_set_yielded_is_a_training_loader_without_a_sampler(tmp_path):
    for choice in (GENERATOR, PICKED):
        code = _parts(choice, "TensorDataset(torch.randn(self.n, 2))")
        found = [f for f in lint_plain(tmp_path, code) if f.code == "DDP802"]
        # the loop of another method reads the attribute the loader was bound to: it trains
        assert [(f.location.line, f.severity.value) for f in found] == [(33, "error")]


# -------------------------------------------------- a switch parameter spelled `dist`
SWITCH = """
import sys, torch
from torch.utils.data import DataLoader, TensorDataset
from torch.distributed import init_process_group
from torch.utils.data.distributed import DistributedSampler
from torch.nn.parallel import DistributedDataParallel as DDP

def fit(model, loader):
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for (x,) in loader:
        opt.zero_grad()
        model(x).sum().backward()
        opt.step()

def build(model, dist):
    data = TensorDataset(torch.randn(32, 2))
    if {test}:
        loader = DataLoader(data, batch_size=4, sampler=DistributedSampler(data))
        fit(DDP(model), loader)
    else:
        loader = DataLoader(data, batch_size=4, shuffle=True)
        fit(model, loader)

if len(sys.argv) > 1:
    init_process_group("gloo")
    build(torch.nn.Linear(2, 1), dist=True)
else:
    build(torch.nn.Linear(2, 1), dist=False)
"""


def test_the_plain_loader_of_a_switch_spelled_dist_is_the_one_process_side(tmp_path):
    assert lines_of(lint_plain(tmp_path, SWITCH.replace("{test}", "dist")), "DDP802") == []


def test_its_twin_a_test_on_another_value_leaves_the_plain_loader_to_every_rank(tmp_path):
    code = SWITCH.replace("{test}", "len(data) > 64")
    assert lines_of(lint_plain(tmp_path, code), "DDP802") == [20]


# -------------------------------------------------- a save method of the module DDP wraps
OWN_SAVE = """
import torch, torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

class Head(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(2, 2)
    def save_pretrained(self, folder):
        torch.save(self.fc.state_dict(), folder + "/head.pt")

class Encoder(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(2, 2)
    def save_pretrained(self, folder):
        torch.save(self.fc.state_dict(), folder + "/encoder.pt")

class Fitter:
    def __init__(self, frozen, model):
        self.frozen, self.model = frozen, model
        self.opt = torch.optim.SGD(model.parameters(), lr=0.1)
    def run(self):
        for step in range(3):
            with torch.no_grad():
                x = self.frozen(torch.randn(4, 2))
            self.opt.zero_grad()
            self.model(x).sum().backward()
            self.opt.step()
            {guard}self.model.module.save_pretrained("out")

dist.init_process_group("gloo")
Fitter(Encoder(), DDP(Head())).run()
"""


def test_the_save_of_the_wrapped_module_is_its_class_method_and_no_other(tmp_path):
    found = lint_plain(tmp_path, OWN_SAVE.replace("{guard}", ""))
    assert lines_of(found, "DDP806") == [9]  # Head's torch.save; not Encoder's, not a library write


def test_its_twin_under_rank_0_no_write_is_every_rank(tmp_path):
    code = OWN_SAVE.replace("{guard}", "if dist.get_rank() == 0:\n                ")
    assert lines_of(lint_plain(tmp_path, code), "DDP806") == []


# -------------------------------------------------- a draw under an option no construction sets
ORDER = """
import os, numpy as np, torch, torch.distributed as dist
from torch.utils.data import DataLoader, Dataset, DistributedSampler

class Frames(Dataset):
    def __init__(self, n, order=0):
        self.n, self.order = n, order
    def __len__(self):
        return self.n
    def arrange(self, clip, order=0):
        if order == 3:
            np.random.shuffle(clip)
        return clip
    def __getitem__(self, i):
        return self.arrange(np.arange(6.0) + i, order=self.order)

dist.init_process_group("gloo")
torch.manual_seed(0)
np.random.seed(0)
opts = {"n": 32, "order": int(os.environ.get("ORDER", 0))}
data = {built}
loader = DataLoader(data, batch_size=4, sampler=DistributedSampler(data), num_workers=2)
model = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(6, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for epoch in range(2):
    loader.sampler.set_epoch(epoch)
    for x in loader:
        opt.zero_grad()
        model(x.float()).sum().backward()
        opt.step()
"""


def test_a_draw_under_an_option_every_construction_leaves_at_its_default_never_runs(tmp_path):
    assert lines_of(lint_plain(tmp_path, ORDER.replace("{built}", "Frames(32)")), "DDP808") == []


def test_its_twins_the_option_given_or_spread_from_a_dict_draws(tmp_path):
    for built in ("Frames(32, order=3)", "Frames(**opts)"):
        assert lines_of(lint_plain(tmp_path, ORDER.replace("{built}", built)), "DDP808") == [21], built


# -------------------------------------------------- an engine's own step on one side of a switch
ENGINE = """
import sys, torch, torch.distributed as dist, deepspeed
from torch.nn.parallel import DistributedDataParallel as DDP

dist.init_process_group("gloo")
net = torch.nn.Linear(3, 1)
use_engine = "--deepspeed" in sys.argv
if use_engine:
    engine, opt, _, _ = deepspeed.initialize(model=net, model_parameters=net.parameters())
    model = engine
else:
    model = DDP(net)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
for i in range(20):
    loss = model(torch.randn(4, 3)).sum()
    if use_engine:
        engine.backward(loss)
        engine.step()
    else:
        loss.backward()
        {step}
"""


def test_an_engine_that_runs_the_backward_steps_its_own_optimizer(tmp_path):
    code = ENGINE.replace("{step}", "opt.step()\n        opt.zero_grad()")
    assert lines_of(lint_plain(tmp_path, code), "DDP805") == []


def test_its_twin_the_ddp_side_stepping_every_fourth_pass_accumulates(tmp_path):
    code = ENGINE.replace("{step}", "if (i + 1) % 4 == 0:\n            opt.step()\n            opt.zero_grad()")
    assert lines_of(lint_plain(tmp_path, code), "DDP805") == [19]  # the DDP side's backward


# -------------------------------------------------- a stop flag shared on the distributed side only
STOP = """
import sys, torch, torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

def from_zero(value):
    t = torch.tensor([float(value)])
    dist.broadcast(t, src=0)
    return t.item()

distributed = len(sys.argv) > 1
if distributed:
    dist.init_process_group("gloo")
main = not distributed or dist.get_rank() == 0
model = DDP(torch.nn.Linear(2, 1)) if distributed else torch.nn.Linear(2, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
stale = 0
for epoch in range(50):
    opt.zero_grad()
    model(torch.randn(4, 2)).sum().backward()
    opt.step()
    own = False
    if main:
        stale += 1
    if main and stale > 5:
        own = True
    if distributed:
        stop = {shared}
    else:
        stop = own
    if stop:
        break
"""


def test_a_flag_broadcast_on_the_distributed_side_and_kept_on_the_other_is_the_same_everywhere(tmp_path):
    code = STOP.replace("{shared}", "bool(int(from_zero(int(own))))")
    assert lines_of(lint_plain(tmp_path, code), "DDP809") == []


def test_its_twin_rank_0s_own_flag_on_the_distributed_side_splits_the_ranks(tmp_path):
    assert lines_of(lint_plain(tmp_path, STOP.replace("{shared}", "bool(own)")), "DDP809") == [29]


# -------------------------------------------------- the main-rank flag handed back in a dict
KEYED = """
import os, torch, torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

def setup():
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    return {"world": dist.get_world_size(), "lead": rank == 0}

env = setup()
net = DDP(torch.nn.Linear(3, 3))
opt = torch.optim.SGD(net.parameters(), lr=0.1)
for step in range(40):
    opt.zero_grad()
    net(torch.randn(2, 3)).sum().backward()
    opt.step()
    if step % 10 == 0 and env["{key}"]:
        torch.save(net.state_dict(), "ckpt.pt")
"""


def test_a_rank_test_kept_in_a_dict_a_helper_returns_guards_the_save(tmp_path):
    assert lines_of(lint_plain(tmp_path, KEYED.replace("{key}", "lead")), "DDP806") == []


def test_its_twin_another_key_of_the_same_dict_is_no_rank_test(tmp_path):
    code = KEYED.replace('env["{key}"]', 'env["world"] > 1')
    assert lines_of(lint_plain(tmp_path, code), "DDP806") == [17]


# -------------------------------------------------- a trainer switched to one process before rank 0 reuses it
SWITCHED_OFF = """
import sys, torch, torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

class Runner:
    def __init__(self, distributed):
        self.distributed = distributed
        self.model = DDP(torch.nn.Linear(2, 1)) if distributed else torch.nn.Linear(2, 1)

    def evaluate(self):
        with torch.no_grad():
            score = float(self.model(torch.randn(3, 2)).sum()) if not self.distributed else 0.0
        if self.distributed:
            dist.barrier()
        return score

def main(distributed):
    if distributed:
        dist.init_process_group("gloo")
    runner = Runner(distributed)
    for _ in range(3):
        runner.model(torch.randn(4, 2)).sum().backward()
        runner.evaluate()
    if dist.get_rank() == 0:
        runner.model = torch.nn.Linear(2, 1)
    {switch}
        print(runner.evaluate())

main(len(sys.argv) > 1)
"""


def test_rank_0_turning_the_trainers_distributed_flag_off_first_meets_no_barrier(tmp_path):
    code = SWITCHED_OFF.replace("{switch}", "    runner.distributed = False")
    assert lines_of(lint_plain(tmp_path, code), "DDP801") == []


def test_its_twin_the_flag_left_on_keeps_the_barrier_on_rank_0_alone(tmp_path):
    code = SWITCHED_OFF.replace("{switch}", "    runner.name = 'final'")
    assert lines_of(lint_plain(tmp_path, code), "DDP801") == [26]


# -------------------------------------------------- a rank's own epoch average handed back in a dict
EPOCH_AVERAGE = """
import torch, torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

def one_epoch(model, opt):
    total, n = 0.0, 0
    for _ in range(5):
        opt.zero_grad()
        loss = model(torch.randn(4, 3)).pow(2).mean()
        loss.backward()
        opt.step()
        total += loss.item()
        n += 1
    {share}
    return {"mean": total / n}

def keep_best(model):
    dist.barrier()
    if dist.get_rank() == 0:
        torch.save(model.module.state_dict(), "best.pt")

dist.init_process_group("gloo")
model = DDP(torch.nn.Linear(3, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.1)
seen = []
for epoch in range(4):
    stats = one_epoch(model, opt)
    seen.append(stats["mean"])
    if stats["mean"] <= min(seen):
        keep_best(model)
"""


def test_a_barrier_behind_a_test_on_the_ranks_own_epoch_average_is_a_decision(tmp_path):
    code = EPOCH_AVERAGE.replace("{share}", "pass")
    assert lines_of(lint_plain(tmp_path, code), "DDP809") == [28]


def test_its_twin_the_average_all_reduced_first_is_the_same_on_every_rank(tmp_path):
    code = EPOCH_AVERAGE.replace("{share}", "t = torch.tensor([total]); dist.all_reduce(t); total = t.item() / dist.get_world_size()")
    assert lines_of(lint_plain(tmp_path, code), "DDP809") == []


# -------------------------------------------------- one setting read through two holders of the config
CONFIG_KEY = """
import torch, torch.distributed as dist
from torch.utils.data import DataLoader, TensorDataset, DistributedSampler

class Config(dict):
    def get(self, key, default=None):
        return super().get(key, default)

def set_up(runner):
    if runner.cfg.get("net.distributed", default=False):
        dist.init_process_group("gloo")

class Loaders:
    def __init__(self, cfg):
        self.cfg = cfg

    def train(self):
        data = TensorDataset(torch.randn(32, 2))
        if self.cfg.get("loader") == "plain":
            sampler = None
            if {test}:
                sampler = DistributedSampler(data)
            return DataLoader(data, sampler=sampler, shuffle=sampler is None)
        else:
            return DataLoader(data, batch_size=4, shuffle=True)

class Runner:
    def __init__(self, cfg):
        self.cfg = cfg
        set_up(self)
        self.model = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(2, 1))
        self.loader = Loaders(cfg).train()

    def run(self):
        opt = torch.optim.SGD(self.model.parameters(), lr=0.1)
        for (x,) in self.loader:
            opt.zero_grad()
            self.model(x).sum().backward()
            opt.step()

Runner(Config({"net.distributed": True})).run()
"""


def _severity(found, code):
    return [(f.location.line, f.severity.value) for f in found if f.code == code]


def test_the_other_side_reading_the_same_setting_through_another_holder_makes_it_a_choice(tmp_path):
    code = CONFIG_KEY.replace("{test}", 'self.cfg.get("net.distributed")')
    assert _severity(lint_plain(tmp_path, code), "DDP802") == [(24, "warning")]


def test_its_twin_another_setting_on_the_other_side_leaves_an_error(tmp_path):
    code = CONFIG_KEY.replace("{test}", 'self.cfg.get("net.sharded")')
    assert _severity(lint_plain(tmp_path, code), "DDP802") == [(24, "error")]


# -------------------------------------------------- a device chosen by the rank, handed to the dataset's helper
PLACED = """
import torch, torch.distributed as dist
from torch.utils.data import DataLoader, Dataset, DistributedSampler

def set_up(rank, world):
    dist.init_process_group("gloo", rank=rank, world_size=world)
    {made}
    return device

class Tools:
    def __init__(self, device):
        self.device = device

class Rows(Dataset):
    def __init__(self, rows, tools):
        self.rows, self.tools = rows, tools
    def __len__(self):
        return len(self.rows)
    def __getitem__(self, i):
        return torch.tensor(self.rows[i])

def main(rank, world):
    device = set_up(rank, world)
    tools = Tools(device)
    data = Rows(list(range(64)), tools)
    sampler = DistributedSampler(data, num_replicas=world, rank=rank)
    model = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(1, 1))
    for epoch in range(2):
        sampler.set_epoch(epoch)
        for x in DataLoader(data, sampler=sampler, batch_size=8):
            model(x.float()[:, None]).sum().backward()

main(0, 1)
"""


def test_a_device_picked_by_the_rank_chooses_no_data(tmp_path):
    code = PLACED.replace("{made}", 'device = torch.device(f"cuda:{rank % 8}")')
    assert lines_of(lint_plain(tmp_path, code), "DDP803") == []


def test_its_twin_a_part_picked_by_the_rank_is_a_shard(tmp_path):
    code = PLACED.replace("{made}", "device = list(range(64))[rank::world]").replace(
        "data = Rows(list(range(64)), tools)", "data = Rows(device, tools)")
    assert lines_of(lint_plain(tmp_path, code), "DDP803") == [25]


# -------------------------------------------------- a sharded loader handed to Accelerate
PREPARED = """
import torch
from torch.utils.data import DataLoader, DistributedSampler, TensorDataset
from accelerate import Accelerator

acc = Accelerator()
data = TensorDataset(torch.randn(64, 4), torch.randn(64, 1))
loader = DataLoader(data, batch_size=8, sampler=DistributedSampler(data, shuffle=True))
net = torch.nn.Linear(4, 1)
opt = torch.optim.SGD(net.parameters(), lr=0.1)
{prepare}
for epoch in range(3):
    for x, y in loader:
        opt.zero_grad()
        acc.backward(torch.nn.functional.mse_loss(net(x), y))
        opt.step()
"""


def test_accelerates_loader_sets_the_epoch_of_the_sampler_it_wraps(tmp_path):
    found = lint_plain(tmp_path, PREPARED.replace("{prepare}", "net, opt, loader = acc.prepare(net, opt, loader)"))
    assert lines_of(found, "DDP804") == [] and lines_of(found, "DDP803") == [7]  # sharded twice still


def test_its_twin_a_loader_left_out_of_prepare_repeats_its_order(tmp_path):
    found = lint_plain(tmp_path, PREPARED.replace("{prepare}", "net, opt = acc.prepare(net, opt)"))
    assert lines_of(found, "DDP804") == [7]


# -------------------------------------------------- one batch peeked on rank 0 to render
PEEK = """
import torch, torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, DistributedSampler, TensorDataset

dist.init_process_group("gloo")
train_set = TensorDataset(torch.randn(64, 4), torch.randn(64, 1))
sampler = DistributedSampler(train_set)
loader = DataLoader(train_set, batch_size=8, sampler=sampler)
show_loader = DataLoader(train_set, batch_size=4, shuffle=True)
model = DDP(torch.nn.Linear(4, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for epoch in range(3):
    {peek}
    sampler.set_epoch(epoch)
    for x, y in loader:
        opt.zero_grad()
        torch.nn.functional.mse_loss(model(x), y).backward()
        opt.step()
"""


def test_a_batch_rank_0_peeks_at_to_render_needs_no_sampler(tmp_path):
    code = PEEK.replace("{peek}", "if dist.get_rank() == 0:\n        x, _ = next(iter(show_loader))\n"
                                  "        print(model.module(x).mean().item())")
    assert lines_of(lint_plain(tmp_path, code), "DDP802") == []


def test_its_twin_every_rank_training_on_a_peeked_batch_each_epoch_reads_the_whole_set(tmp_path):
    code = PEEK.replace("{peek}", "x, y = next(iter(show_loader))\n"
                                  "    torch.nn.functional.mse_loss(model(x), y).backward()")
    # (`next(iter(loader))` in the loop that runs backward: read as the loop reads a batch)
    assert [(f.location.line, f.severity.value) for f in lint_plain(tmp_path, code)
            if f.code == "DDP802"] == [(9, "error")]


# -------------------------------------------------- a sampler that steps its own epoch
SELF_STEPPING = """
import numpy as np, torch, torch.distributed as dist
from torch.utils.data import DataLoader, DistributedSampler, TensorDataset

class Batches(DistributedSampler):
    def __init__(self, data, size):
        super().__init__(data)
        self.size = size
    def __iter__(self):
        order = np.random.RandomState(self.epoch).permutation(len(self.dataset))
        mine = order[self.rank::self.num_replicas]
        for i in range(0, len(mine), self.size):
            yield mine[i:i + self.size].tolist()
        {after}
    def __len__(self):
        return self.num_samples // self.size

dist.init_process_group("gloo")
data = TensorDataset(torch.randn(64, 2))
loader = DataLoader(data, batch_sampler=Batches(data, 8))
net = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(2, 1))
for epoch in range(3):
    for (x,) in loader:
        net(x).sum().backward()
"""


def test_a_sampler_whose_iter_steps_its_own_epoch_reshuffles_without_set_epoch(tmp_path):
    assert lines_of(lint_plain(tmp_path, SELF_STEPPING.replace("{after}", "self.epoch += 1")), "DDP804") == []


def test_its_twin_the_same_sampler_left_at_epoch_0_repeats_its_order(tmp_path):
    assert lines_of(lint_plain(tmp_path, SELF_STEPPING.replace("{after}", "pass")), "DDP804") == [19]


# -------------------------------------------------- the plain side of `hasattr(model, "module")`
UNWRAPPED_SIDE = """
import torch, torch.distributed as dist

class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(2, 2)
        self.register_buffer("scale", torch.ones(2))
    def forward(self, x):
        return self.fc(x) * self.scale

def check(net):
    with torch.no_grad():
        {plain}

dist.init_process_group("gloo")
net = torch.nn.parallel.DistributedDataParallel(Net())
for step in range(5):
    net(torch.randn(4, 2)).sum().backward()
    if dist.get_rank() == 0:
        check(net)
"""


def test_the_forward_on_the_side_where_the_model_has_no_module_is_no_ddp_forward(tmp_path):
    code = UNWRAPPED_SIDE.replace("{plain}", "if hasattr(net, 'module'):\n            return net.module(torch.randn(1, 2))\n"
                                                 "        else:\n            return net(torch.randn(1, 2))")
    assert lines_of(lint_plain(tmp_path, code), "DDP801") == []


def test_its_twin_the_same_forward_without_the_test_is_the_ddp_models(tmp_path):
    code = UNWRAPPED_SIDE.replace("{plain}", "return net(torch.randn(1, 2))")
    assert lines_of(lint_plain(tmp_path, code), "DDP801") == [13]


# -------------------------------------------------- one block of writes, the last under a plain test
SAVES = """
import os, torch, torch.distributed as dist

def save_all(net, opt, scaler, folder):
    torch.save(opt.state_dict(), os.path.join(folder, "opt.pt"))
    torch.save(net.state_dict(), os.path.join(folder, "net.pt"))
    if scaler is not None:
        torch.save(scaler.state_dict(), os.path.join(folder, "scaler.pt"))

dist.init_process_group("gloo")
net = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(2, 1))
opt = torch.optim.SGD(net.parameters(), lr=0.1)
for epoch in range(2):
    net(torch.randn(4, 2)).sum().backward()
    opt.step()
    {call}
"""


def test_a_write_under_a_plain_test_after_the_blocks_other_writes_is_the_same_finding(tmp_path):
    assert lines_of(lint_plain(tmp_path, SAVES.replace("{call}", 'save_all(net, opt, None, "out")')), "DDP806") == [4]


def test_its_twin_a_write_in_its_own_helper_is_its_own_finding(tmp_path):
    code = SAVES.replace("{call}", 'save_all(net, opt, None, "out")\n    torch.save({"epoch": epoch}, "state.pt")')
    assert lines_of(lint_plain(tmp_path, code), "DDP806") == [4, 16]


# -------------------------------------------------- a discriminator stepping every batch beside an accumulating generator
GAN = """
import torch, torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

dist.init_process_group("gloo")
gen, disc = DDP(torch.nn.Linear(4, 1)), DDP(torch.nn.Linear(1, 1))
opt_g = torch.optim.SGD(gen.parameters(), lr=0.1)
opt_d = torch.optim.SGD(disc.parameters(), lr=0.1)
for step in range(16):
    x = torch.randn(4, 4)
    loss = gen(x).pow(2).mean()
    loss.backward()
    if (step + 1) % 4 == 0:
        opt_g.step()
        opt_g.zero_grad()
    opt_d.zero_grad()
    disc({fake}).pow(2).mean().backward()
    opt_d.step()
"""


def test_an_accumulating_generator_beside_a_discriminator_stepping_every_batch(tmp_path):
    assert lines_of(lint_plain(tmp_path, GAN.replace("{fake}", "gen(x).detach()")), "DDP805") == [11]


def test_its_twin_one_model_stepping_every_batch_accumulates_nothing(tmp_path):
    code = GAN.replace("opt_d = torch.optim.SGD(disc.parameters(), lr=0.1)",
                       "opt_d = torch.optim.SGD(list(disc.parameters()) + list(gen.parameters()), lr=0.1)")
    assert lines_of(lint_plain(tmp_path, code.replace("{fake}", "gen(x).detach()")), "DDP805") == []


# -------------------------------------------------- one iterator kept for the whole run
ONE_PASS = """
import torch, torch.distributed as dist
from torch.utils.data import DataLoader, DistributedSampler, TensorDataset

class Trainer:
    def __init__(self, loader, model):
        self.batches = iter(loader)
        self.model = model
    def train_epoch(self, steps):
        for _ in range(steps):
            (x,) = next(self.batches)
            self.model(x).sum().backward()

dist.init_process_group("gloo")
epochs, per_epoch = 3, 4
data = TensorDataset(torch.randn(epochs * per_epoch * 8, 2))
loader = DataLoader(data, batch_size=8, sampler=DistributedSampler(data))
trainer = Trainer(loader, torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(2, 1)))
for epoch in range(epochs):
    {each}
    trainer.train_epoch(per_epoch)
"""


def test_a_loader_read_through_one_iterator_for_the_whole_run_is_one_pass(tmp_path):
    assert lines_of(lint_plain(tmp_path, ONE_PASS.replace("{each}", "pass")), "DDP804") == []


def test_its_twin_a_new_iterator_each_epoch_repeats_the_order(tmp_path):
    code = ONE_PASS.replace("{each}", "trainer.batches = iter(loader)")
    assert lines_of(lint_plain(tmp_path, code), "DDP804") == [16]


# -------------------------------------------------- a save_state hook, save_state on the main process
HOOK = """
import os, torch
from accelerate import Accelerator

acc = Accelerator()
net = torch.nn.Linear(3, 3)

def keep(models, weights, folder):
    torch.save(models[0].state_dict(), os.path.join(folder, "net.pt"))
    weights.pop()

acc.register_save_state_pre_hook(keep)
opt = torch.optim.SGD(net.parameters(), lr=0.1)
net, opt = acc.prepare(net, opt)
for epoch in range(4):
    acc.backward(net(torch.randn(2, 3)).sum())
    opt.step()
    {save}
"""


def test_a_save_state_hook_runs_where_save_state_does(tmp_path):
    code = HOOK.replace("{save}", "if acc.is_main_process:\n        acc.save_state()")
    assert lines_of(lint_plain(tmp_path, code), "DDP806") == []


def test_its_twin_save_state_on_every_process_runs_the_hook_on_every_process(tmp_path):
    assert lines_of(lint_plain(tmp_path, HOOK.replace("{save}", "acc.save_state()")), "DDP806") == [8]


# -------------------------------------------------- the rank read back from **kwargs
KWARGS_RANK = """
import torch, torch.distributed as dist, torch.multiprocessing as mp
from torch.nn.parallel import DistributedDataParallel as DDP

class Fitter:
    def __init__(self, **options):
        index = options.get("{key}", 0)
        self.lead = index == 0
        self.index, self.world = index, options.get("world", 1)

    def fit(self):
        dist.init_process_group("gloo", rank=self.index, world_size=self.world)
        net = DDP(torch.nn.Linear(2, 2))
        for step in range(4):
            net(torch.randn(2, 2)).sum().backward()
            if self.lead:
                torch.save(net.module.state_dict(), "net.pt")

def worker(i, world):
    Fitter(local_rank=i, seed=7, world=world).fit()

mp.spawn(worker, args=(2,), nprocs=2)
"""


def test_a_rank_handed_in_by_keyword_and_read_with_kwargs_get_is_the_rank(tmp_path):
    assert lines_of(lint_plain(tmp_path, KWARGS_RANK.replace("{key}", "local_rank")), "DDP806") == []


def test_its_twin_another_keyword_read_the_same_way_is_no_rank(tmp_path):
    code = KWARGS_RANK.replace("{key}", "seed").replace("rank=self.index", "rank=int(__import__('os').environ['RANK'])")
    assert lines_of(lint_plain(tmp_path, code), "DDP806") == [16]


# -------------------------------------------------- a dataset that never reads the index it is handed
NO_INDEX = """
import numpy as np, torch, torch.distributed as dist
from torch.utils.data import DataLoader, Dataset

class Codes(Dataset):
    def __len__(self):
        return 1000
    def __getitem__(self, i):
        {body}

dist.init_process_group("gloo")
net = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(4, 1))
for x in DataLoader(Codes(), batch_size=8):
    net(x).sum().backward()
"""


def _loader_severity(found):
    return [(f.location.line, f.severity.value) for f in found if f.code == "DDP802"]


def test_a_dataset_drawing_a_sample_and_never_reading_its_index_is_a_warning(tmp_path):
    code = NO_INDEX.replace("{body}", "return torch.tensor(np.random.choice(10, 4), dtype=torch.float32)")
    assert _loader_severity(lint_plain(tmp_path, code)) == [(12, "warning")]


def test_its_twin_a_dataset_reading_its_index_is_an_error(tmp_path):
    code = NO_INDEX.replace("{body}", "return torch.full((4,), float(i))")
    assert _loader_severity(lint_plain(tmp_path, code)) == [(12, "error")]


# -------------------------------------------------- a generator seeded in another module's helper
def test_a_generator_seeded_by_a_helper_of_another_module_is_told_in_that_module(tmp_path):
    code = '''
import argparse, torch, torch.distributed as dist
from torch.utils.data import DataLoader, DistributedSampler, TensorDataset
from seeding import make_gen

ap = argparse.ArgumentParser()
ap.add_argument("--seed", type=int, default=3)
ap.add_argument("--workers", type=int, default=2)
cfg = ap.parse_args()
dist.init_process_group("gloo")
data = TensorDataset(torch.randn(32, 2))
loader = DataLoader(data, sampler=DistributedSampler(data), num_workers=cfg.workers, generator=make_gen(cfg.seed))
net = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(2, 1))
for epoch in range(2):
    loader.sampler.set_epoch(epoch)
    for (x,) in loader:
        net(x).sum().backward()
'''
    seeding = '''
import torch

def make_gen(seed):
    g = torch.Generator()
    g.manual_seed(seed)
    return g
'''
    found = [f for f in lint_plain(tmp_path, code, seeding=seeding) if f.code == "DDP808"]
    assert [(f.location.file.rsplit("/", 1)[-1], f.location.line) for f in found] == [("seeding.py", 6)]


# -------------------------------------------------- augmentations appended to a list before Compose
EXTENDED = """
import torch, torch.distributed as dist
import torchvision.transforms as T
from torchvision.datasets import ImageFolder

def transforms():
    ops = []
    ops.extend([{ops}])
    return T.Compose(ops), T.Compose([T.ToTensor()])

dist.init_process_group("gloo")
torch.manual_seed(0)
train_tf, val_tf = transforms()
data = ImageFolder("/data", transform=train_tf)
sampler = torch.utils.data.distributed.DistributedSampler(data)
loader = torch.utils.data.DataLoader(data, sampler=sampler, batch_size=8, num_workers=4)
net = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(2, 1))
for epoch in range(2):
    sampler.set_epoch(epoch)
    for x, _ in loader:
        net(x).sum().backward()
"""


def test_random_augmentations_extended_into_the_list_draw_in_the_workers(tmp_path):
    code = EXTENDED.replace("{ops}", "T.RandomResizedCrop(224), T.RandomHorizontalFlip(), T.ToTensor()")
    assert lines_of(lint_plain(tmp_path, code), "DDP808") == [15]


def test_its_twin_fixed_transforms_extended_draw_nothing(tmp_path):
    code = EXTENDED.replace("{ops}", "T.Resize(256), T.CenterCrop(224), T.ToTensor()")
    assert lines_of(lint_plain(tmp_path, code), "DDP808") == []


# -------------------------------------------------- a worker seed closed over the builder's parameter
CLOSURE_SEED = """
import random, numpy as np, torch, torch.distributed as dist
from torch.utils.data import DataLoader, DistributedSampler
import torchvision.transforms as T
from torchvision.datasets import CIFAR10

def make_loader(data, workers=0, seed=1234):
    sampler = DistributedSampler(data)
    def start(worker_id):
        np.random.seed(seed)
        torch.manual_seed(seed)
        random.seed(seed)
    return DataLoader(data, sampler=sampler, batch_size=8, num_workers=workers, worker_init_fn=start)

dist.init_process_group("gloo")
net = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(3072, 10))
loader = make_loader(CIFAR10("data", transform=T.Compose([T.RandomHorizontalFlip(), T.ToTensor()])), {given})
for epoch in range(2):
    loader.sampler.set_epoch(epoch)
    for x, y in loader:
        net(x.flatten(1)).sum().backward()
"""


def test_a_worker_seed_closed_over_a_parameter_every_call_leaves_at_its_default(tmp_path):
    assert lines_of(lint_plain(tmp_path, CLOSURE_SEED.replace("{given}", "workers=4")), "DDP808") == [9]


def test_its_twin_a_call_that_gives_the_rank_as_the_seed(tmp_path):
    code = CLOSURE_SEED.replace("{given}", "workers=4, seed=1234 + dist.get_rank()")
    assert lines_of(lint_plain(tmp_path, code), "DDP808") == []


# -------------------------------------------------- the set-up picked by a %-formatted name
def test_a_set_up_function_picked_by_a_formatted_name_is_followed(tmp_path):
    setup = '''
import torch.distributed as dist

def start_pytorch(port):
    dist.init_process_group("gloo", init_method="tcp://127.0.0.1:%d" % port)
    return dist.get_rank()
'''
    code = '''
import sys, torch, torch.distributed as dist
import setup

rank = getattr(setup, "start_%s" % sys.argv[1])(29500)
net = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(2, 1))
net(torch.randn(2, 2)).sum().backward()
if rank == 0:
    dist.barrier()
'''
    found = lint_plain(tmp_path, code, setup=setup)
    assert lines_of(found, "DDP801") == [8]


# -------------------------------------------------- the module picked either way, then moved to the CPU
EITHER_WAY = """
import os, torch, torch.nn as nn, torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

class Translator(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(2, 2)
    def save(self, folder):
        torch.save(self.state_dict(), os.path.join(folder, "translator.pt"))

class Teacher(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(2, 2)
    def save(self, folder):
        torch.save(self.state_dict(), os.path.join(folder, "teacher.pt"))

def train(net):
    model = DDP(net.cpu())
    model(torch.randn(2, 2)).sum().backward()
    plain = model.module if hasattr(model, "module") else model
    plain.cpu().save("out")

dist.init_process_group("gloo")
{made}
"""


def test_the_module_picked_either_way_and_moved_keeps_its_class(tmp_path):
    found = lint_plain(tmp_path, EITHER_WAY.replace("{made}", "net = Translator()\nTeacher()\ntrain(net)"))
    assert lines_of(found, "DDP806") == [9]  # Translator.save alone


def test_its_twin_the_other_class_trained_is_the_other_save(tmp_path):
    found = lint_plain(tmp_path, EITHER_WAY.replace("{made}", "train(Teacher())"))
    assert lines_of(found, "DDP806") == [16]


# -------------------------------------------------- a torchvision backbone inside the DDP-wrapped module
BACKBONE = """
import torch, torch.nn as nn, torch.distributed as dist
from torchvision import models
from torch.nn.parallel import DistributedDataParallel as DDP

class Captioner(nn.Module):
    def __init__(self):
        super().__init__()
        self.image = models.{arch}(weights=None)
        self.out = nn.Linear(1000, 8)
    def forward(self, x):
        return self.out(self.image(x))

dist.init_process_group("gloo")
net = DDP(Captioner())
for step in range(3):
    net(torch.randn(2, 3, 64, 64)).sum().backward()
    if dist.get_rank() == 0:
        with torch.no_grad():
            net(torch.randn(1, 3, 64, 64))
"""


def test_a_resnet_inside_the_wrapped_module_holds_batchnorm_buffers(tmp_path):
    assert lines_of(lint_plain(tmp_path, BACKBONE.replace("{arch}", "resnet18")), "DDP801") == [19]


def test_its_twin_a_vision_transformer_backbone_holds_no_buffers(tmp_path):
    assert lines_of(lint_plain(tmp_path, BACKBONE.replace("{arch}", "vit_b_16")), "DDP801") == []


# -------------------------------------------------- loader options in a dict that sets no sampler
def test_a_spread_dict_literal_setting_the_sampler_to_none_leaves_the_loader_without_one(tmp_path):
    code = '''
import itertools, torch, torch.distributed as dist
from torch.utils.data import DataLoader, TensorDataset

dist.init_process_group("gloo")
opts = {"batch_size": 4, "shuffle": True, "sampler": {sampler}}
data = TensorDataset(torch.randn(32, 2))
loader = DataLoader(dataset=data, **opts)
net = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(2, 1))
for step in range(4):
    for (x,) in itertools.islice(loader, 2):
        net(x).sum().backward()
'''
    assert lines_of(lint_plain(tmp_path, code.replace("{sampler}", "None")), "DDP802") == [7]
    twin = code.replace('"shuffle": True, "sampler": {sampler}', '"sampler": torch.utils.data.DistributedSampler(data)')
    assert lines_of(lint_plain(tmp_path, twin.replace("opts = ", "data = TensorDataset(torch.randn(32, 2))\nopts = ")),
                    "DDP802") == []


# -------------------------------------------------- an early stop on the mean of the rank's own numbers
MEAN_STOP = """
import numpy as np, torch, torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

def evaluate(model, batches):
    values = []
    for x in batches:
        with torch.no_grad():
            values.append(model(x).abs().mean().item())
    {share}
    return np.mean(values)

dist.init_process_group("gloo")
model = DDP(torch.nn.Linear(4, 4))
mine = [torch.randn(2, 4) for _ in range(3)]
for step in range(100):
    model(torch.randn(2, 4)).sum().backward()
    if evaluate(model, mine) >= 1.0:
        break
"""


def test_a_break_on_the_mean_of_the_ranks_own_item_values_splits_the_ranks(tmp_path):
    assert lines_of(lint_plain(tmp_path, MEAN_STOP.replace("{share}", "pass")), "DDP809") == [17]


def test_its_twin_the_values_all_reduced_first_decide_alike(tmp_path):
    code = MEAN_STOP.replace("{share}", "t = torch.tensor(values); dist.all_reduce(t); values = (t / dist.get_world_size()).tolist()")
    assert lines_of(lint_plain(tmp_path, code), "DDP809") == []


# -------------------------------------------------- a sampler copy handed the epoch when it is built
EPOCH_BUILT = """
import torch, torch.distributed as dist
from torch.utils.data import DataLoader, Sampler, TensorDataset

class DistributedSampler(Sampler):
    def __init__(self, data, epoch=0):
        self.data, self.epoch = data, epoch
        self.rank, self.world = dist.get_rank(), dist.get_world_size()
    def __iter__(self):
        g = torch.Generator()
        g.manual_seed(self.epoch)
        return iter(torch.randperm(len(self.data), generator=g)[self.rank::self.world].tolist())
    def __len__(self):
        return len(self.data) // self.world
    def set_epoch(self, epoch):
        self.epoch = epoch

dist.init_process_group("gloo")
data = TensorDataset(torch.randn(32, 2))
net = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(2, 1))
for epoch in range(3):
    loader = DataLoader(data, batch_size=4, sampler=DistributedSampler(data, {epoch}))
    for (x,) in loader:
        net(x).sum().backward()
"""


def test_a_sampler_built_each_epoch_with_the_epoch_needs_no_set_epoch(tmp_path):
    assert lines_of(lint_plain(tmp_path, EPOCH_BUILT.replace("{epoch}", "epoch=epoch")), "DDP804") == []


def test_its_twin_a_constant_epoch_at_construction_repeats_the_order(tmp_path):
    assert lines_of(lint_plain(tmp_path, EPOCH_BUILT.replace("{epoch}", "epoch=0")), "DDP804") == [21]


# -------------------------------------------------- the starred rest of enumerate's pair holds one item
STARRED = """
import torch, torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

dist.init_process_group("gloo")
net = DDP(torch.nn.Linear(2, 1))
opt = torch.optim.SGD(net.parameters(), lr=0.1)
loader = [torch.randn(4, 2) for _ in range(8)]
for {target} in enumerate(loader):
    for sample in {inner}:
        net(sample).sum().backward()
    opt.step()
    opt.zero_grad()
"""


def test_a_loop_over_the_starred_rest_of_enumerates_pair_runs_once(tmp_path):
    code = STARRED.replace("{target}", "i, *batch").replace("{inner}", "batch")
    assert lines_of(lint_plain(tmp_path, code), "DDP805") == []


def test_its_twin_a_loop_over_the_chunks_of_each_batch_accumulates(tmp_path):
    code = STARRED.replace("{target}", "i, batch").replace("{inner}", "batch.chunk(2)")
    assert lines_of(lint_plain(tmp_path, code), "DDP805") == [10]
