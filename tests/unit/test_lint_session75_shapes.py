"""Shapes from session 75 (the shapes holdout 105 left, then holdout 106's reading after its
unread score), each with its twin, in our own words."""

from __future__ import annotations

from tests.unit.test_lint_session39_shapes import lint_tree
from tests.unit.test_lint_session61_shapes import _codes, _line

# -------------------------------------------------- the launcher seeds, the spawned ranks draw
# `random.seed(0)` in `__main__` before `mp.spawn(worker)` seeds only the launcher: each spawned
# rank's dataset constructor shuffles its list from its own entropy (DDP803)
SPAWN_SHUFFLE = """import os
import random
import torch
import torch.distributed as dist
import torch.multiprocessing as mp
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, Dataset
from torch.utils.data.distributed import DistributedSampler


class Clips(Dataset):
    def __init__(self, n):
        self.names = [f"clip{i}" for i in range(n)]
        random.shuffle(self.names)

    def __len__(self):
        return len(self.names)

    def __getitem__(self, i):
        return torch.tensor([float(len(self.names[i]))])


def run(rank, world):
    dist.init_process_group("gloo", rank=rank, world_size=world)
    net = DDP(torch.nn.Linear(1, 1))
    opt = torch.optim.SGD(net.parameters(), lr=0.1)
    clips = Clips(32)
    sampler = DistributedSampler(clips)
    loader = DataLoader(clips, batch_size=4, sampler=sampler)
    for epoch in range(2):
        sampler.set_epoch(epoch)
        for x in loader:
            opt.zero_grad()
            net(x).sum().backward()
            opt.step()


if __name__ == "__main__":
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    os.environ.setdefault("MASTER_PORT", "29533")
    random.seed(3)
    mp.spawn(run, args=(2,), nprocs=2)
"""


def test_a_seed_set_only_in_the_launcher_before_mp_spawn_leaves_a_ranks_shuffle_unseeded(tmp_path):
    found = _codes(lint_tree(tmp_path, {"train.py": SPAWN_SHUFFLE}), "DDP803")
    assert [f.location.line for f in found] == [_line(SPAWN_SHUFFLE, "sampler = DistributedSampler")]
    assert "random.shuffle(self.names)" in found[0].message and "launcher" in found[0].message


def test_its_twin_the_spawned_rank_seeds_alike_before_it_builds_the_dataset(tmp_path):
    twin = SPAWN_SHUFFLE.replace("    net = DDP(", "    random.seed(3)\n    net = DDP(")
    assert _codes(lint_tree(tmp_path, {"train.py": twin}), "DDP803") == []


# -------------------------------------------------- two `with amp.scale_loss(...) as scaled:` blocks
# the second block's `scaled` is the loss of `agent.module.learn()`, a method of the module inside
# the DDP wrapper: that backward all-reduces nothing (DDP810), whatever the first block binds
TWO_SCALED = """import torch
import torch.distributed as dist
from apex import amp
from torch.nn.parallel import DistributedDataParallel as DDP


class Agent(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.online = torch.nn.Linear(4, 2)
        self.frozen = torch.nn.Linear(4, 2)

    def forward(self, x):
        return self.online(x)

    def learn(self, x):
        guess = self.online(x)
        with torch.no_grad():
            aim = self.frozen(x)
        return guess, aim


def main():
    dist.init_process_group("gloo")
    net = DDP(torch.nn.Linear(4, 2))
    agent = DDP(Agent())
    opt = torch.optim.SGD(net.parameters(), lr=0.1)
    opt_agent = torch.optim.SGD(agent.parameters(), lr=0.1)
    gap = torch.nn.MSELoss()
    for step in range(10):
        x = torch.randn(8, 4)
        loss = net(x).pow(2).mean()
        opt.zero_grad()
        with amp.scale_loss(loss, opt) as scaled:
            scaled.backward()
        opt.step()
        guess, aim = agent.module.learn(x)
        agent_loss = gap(guess, aim)
        opt_agent.zero_grad()
        with amp.scale_loss(agent_loss, opt_agent) as scaled:
            scaled.backward()
        opt_agent.step()


if __name__ == "__main__":
    main()
"""


def test_a_scaled_loss_of_a_method_run_on_the_module_inside_is_ddp810_at_its_own_block(tmp_path):
    found = _codes(lint_tree(tmp_path, {"train.py": TWO_SCALED}), "DDP810")
    lines = [i for i, line in enumerate(TWO_SCALED.splitlines(), 1) if "scaled.backward()" in line]
    assert [f.location.line for f in found] == [lines[1]]
    assert "agent.module.learn(x)" in found[0].message


def test_its_twin_the_method_run_through_a_forward_of_the_wrapper(tmp_path):
    twin = TWO_SCALED.replace("guess, aim = agent.module.learn(x)", "guess, aim = agent(x), x[:, :2]")
    assert _codes(lint_tree(tmp_path, {"train.py": twin}), "DDP810") == []


# -------------------------------------------------- a loader rebuilt in its own loop, never prepared again
# the first chunk's loader goes through accelerator.prepare(); every chunk swap rebinds the name the
# loop iterates to a fresh plain loader (DDP802 error at the builder's DataLoader)
CHUNK_SWAP = """import torch
from accelerate import Accelerator
from torch.utils.data import DataLoader, TensorDataset


def chunk_loader(chunk, batch_size):
    data = TensorDataset(torch.randn(64, 4) + chunk, torch.randn(64, 1))
    loader = DataLoader(data, batch_size=batch_size, shuffle=True)
    return loader


def main():
    accelerator = Accelerator()
    model = torch.nn.Linear(4, 1)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    chunk = 0
    loader = chunk_loader(chunk, 8)
    model, opt, loader = accelerator.prepare(model, opt, loader)
    step = 0
    while step < 100:
        for x, y in loader:
            loss = ((model(x) - y) ** 2).mean()
            opt.zero_grad()
            accelerator.backward(loss)
            opt.step()
            step += 1
            if step % 10 == 0:
                chunk = (chunk + 1) % 4
                loader = chunk_loader(chunk, 8)


if __name__ == "__main__":
    main()
"""


def test_a_loader_the_training_loop_builds_again_and_never_prepares_is_ddp802(tmp_path):
    found = _codes(lint_tree(tmp_path, {"train.py": CHUNK_SWAP}), "DDP802")
    assert [(f.location.line, f.severity.name) for f in found] == [(_line(CHUNK_SWAP, "loader = DataLoader("), "ERROR")]
    again = found[0].message.split("builds it again at ")[1].split(" ")[0]
    assert again.endswith(f"train.py:{_line(CHUNK_SWAP, '                loader = chunk_loader')}")


def test_its_twin_each_rebuilt_loader_prepared_again(tmp_path):
    twin = CHUNK_SWAP.replace("                loader = chunk_loader(chunk, 8)\n",
                              "                loader = chunk_loader(chunk, 8)\n"
                              "                loader = accelerator.prepare(loader)\n")
    assert _codes(lint_tree(tmp_path, {"train.py": twin}), "DDP802") == []


# -------------------------------------------------- a graph of groups built whole on every process
# `for rank in range(world_size):` hands each rank in turn to a helper that makes a group per new
# edge (and asks `self.passive(rank)` of each): every process makes the same groups in the same
# order; the all_reduce over an edge's group runs where the process is one of its two members
GOSSIP = """import torch
import torch.distributed as dist


class Link:
    def __init__(self, me, src, dest):
        self.src = src
        self.dest = dest
        self.group = dist.new_group([src, dest])
        if me in [self.src, self.dest] and torch.cuda.device_count() >= 0:
            probe = torch.ones(1)
            dist.all_reduce(probe, group=self.group)


class Ring:
    def __init__(self, me, world_size):
        self.me = me
        self.world_size = world_size
        self.book = [[] for _ in range(world_size)]
        for rank in range(self.world_size):
            if not self.passive(rank):
                self._link(rank, [(rank + 1) % world_size, (rank - 1) % world_size])

    def passive(self, rank=None):
        rank = self.me if rank is None else rank
        return rank % 2 == 1

    def _link(self, rank, peers):
        for peer in peers:
            if peer not in self.book[rank]:
                self.book[rank].append(Link(self.me, rank, peer))


def main():
    dist.init_process_group("gloo")
    ring = Ring(dist.get_rank(), dist.get_world_size())
    model = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(2, 2))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for _ in range(3):
        opt.zero_grad()
        model(torch.randn(4, 2)).sum().backward()
        opt.step()


if __name__ == "__main__":
    main()
"""


def test_groups_made_for_each_rank_in_turn_and_reduced_by_their_members_are_no_ddp801(tmp_path):
    assert _codes(lint_tree(tmp_path, {"train.py": GOSSIP}), "DDP801") == []


def test_its_twin_a_group_made_only_where_the_process_itself_is_passive(tmp_path):
    twin = GOSSIP.replace("            if not self.passive(rank):\n", "            if not self.passive():\n")
    found = _codes(lint_tree(tmp_path, {"train.py": twin}), "DDP801")
    assert _line(twin, "self.group = dist.new_group") in [f.location.line for f in found]


def test_its_twin_an_all_reduce_over_the_edge_by_a_test_that_is_not_its_membership(tmp_path):
    twin = GOSSIP.replace("if me in [self.src, self.dest] and", "if me in [self.src] and")
    found = _codes(lint_tree(tmp_path, {"train.py": twin}), "DDP801")
    assert [f.location.line for f in found] == [_line(twin, "dist.all_reduce(probe")]


# -------------------------------------------------- a save under a parameter every call hands an option off
# `if save_path: torch.save(...)` in an evaluation helper every call hands `args.save_pred_path`,
# which defaults to "": a launch that leaves the option never writes (no DDP806)
HANDED_OFF = """import argparse
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP


def evaluate(model, data, save_path):
    preds = []
    with torch.no_grad():
        for x in data:
            preds.append(model(x))
    if save_path:
        torch.save(torch.cat(preds), save_path + "preds.pt")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--save_pred_path", default="")
    args = parser.parse_args()
    dist.init_process_group("gloo")
    model = DDP(torch.nn.Linear(4, 2))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    data = [torch.randn(8, 4) for _ in range(4)]
    for epoch in range(2):
        for x in data:
            opt.zero_grad()
            model(x).sum().backward()
            opt.step()
        evaluate(model.module, data, args.save_pred_path)
    if dist.get_rank() == 0:
        torch.save(model.module.state_dict(), "last.pt")


if __name__ == "__main__":
    main()
"""


def test_a_save_under_a_parameter_every_call_hands_an_option_off_by_default_is_no_ddp806(tmp_path):
    assert _codes(lint_tree(tmp_path, {"train.py": HANDED_OFF}), "DDP806") == []


def test_its_twin_the_option_on_by_default(tmp_path):
    twin = HANDED_OFF.replace('default="")', 'default="preds/")')
    found = _codes(lint_tree(tmp_path, {"train.py": twin}), "DDP806")
    assert [f.location.line for f in found] == [_line(twin, 'torch.save(torch.cat(preds)')]


# -------------------------------------------------- a sampler kept as a field from a builder's tuple
# `loader, sampler = make_loader(ds)` then `self.shuffler = sampler`: the method's
# `self.shuffler.set_epoch(step)` sets the sampler the builder made (no DDP804)
FIELD_SAMPLER = """import os
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, DistributedSampler, TensorDataset


def make_loader(dataset, batch_size):
    if int(os.environ.get("WORLD_SIZE", 1)) > 1:
        sampler = DistributedSampler(dataset)
    else:
        sampler = None
    loader = DataLoader(dataset, batch_size=batch_size, shuffle=sampler is None, sampler=sampler)
    return loader, sampler


class Runner:
    def __init__(self):
        dist.init_process_group("gloo")
        self.model = DDP(torch.nn.Linear(4, 1))
        self.opt = torch.optim.SGD(self.model.parameters(), lr=0.1)
        self.build(TensorDataset(torch.randn(64, 4), torch.randn(64, 1)))

    def build(self, dataset):
        loader, sampler = make_loader(dataset, 8)
        self.train_loader = loader
        self.shuffler = sampler

    def fit(self):
        for epoch in range(5):
            self.shuffler.set_epoch(epoch)
            for x, y in self.train_loader:
                self.opt.zero_grad()
                ((self.model(x) - y) ** 2).mean().backward()
                self.opt.step()


if __name__ == "__main__":
    Runner().fit()
"""


def test_set_epoch_on_a_field_kept_from_a_builders_tuple_sets_its_sampler(tmp_path):
    assert _codes(lint_tree(tmp_path, {"train.py": FIELD_SAMPLER}), "DDP804") == []


def test_its_twin_the_field_never_set_epoch(tmp_path):
    twin = FIELD_SAMPLER.replace("            self.shuffler.set_epoch(epoch)\n", "")
    found = _codes(lint_tree(tmp_path, {"train.py": twin}), "DDP804")
    assert [f.location.line for f in found] == [_line(twin, "sampler = DistributedSampler(dataset)")]


# -------------------------------------------------- a rank's own NaN test that stops through a helper
# `if torch.isnan(loss).any(): self.stop()` where stop() waits in a barrier and exits: the rank
# that takes it waits alone, the others go on into their next backward (DDP809 warning)
STOP_HELPER = """import sys
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP


class Trainer:
    def __init__(self):
        dist.init_process_group("gloo")
        self.model = DDP(torch.nn.Linear(4, 1))
        self.opt = torch.optim.SGD(self.model.parameters(), lr=0.1)

    def stop(self):
        if dist.get_rank() == 0:
            torch.save(self.model.module.state_dict(), "failed.pt")
        dist.barrier()
        dist.destroy_process_group()
        sys.exit(1)

    def run(self):
        for step in range(100):
            x = torch.randn(8, 4)
            loss = self.model(x).pow(2).mean()
            self.opt.zero_grad()
            loss.backward()
            self.opt.step()
            if torch.isnan(loss).any() or torch.isinf(loss).any():
                self.stop()


if __name__ == "__main__":
    Trainer().run()
"""


def test_a_ranks_own_nan_test_that_stops_through_a_helper_waiting_in_a_barrier_is_ddp809(tmp_path):
    found = _codes(lint_tree(tmp_path, {"train.py": STOP_HELPER}), "DDP809")
    assert [(f.location.line, f.severity.name) for f in found] == [(_line(STOP_HELPER, "if torch.isnan(loss)"), "WARNING")]
    assert "dist.barrier()" in found[0].message and "before it stops the job" in found[0].message


def test_its_twin_the_helper_exits_without_a_collective(tmp_path):
    twin = STOP_HELPER.replace("        dist.barrier()\n", "")
    assert _codes(lint_tree(tmp_path, {"train.py": twin}), "DDP809") == []


# -------------------------------------------------- a package's module and model class picked by name
# `self.method = getattr(methods, cfg.method)` then `self.method.train(...)` (each module of the
# package with that function may run), and `getattr(models, cfg.name)(...)` building a class of
# the project's models package (BatchNorm: the no-grad DDP forward rank 0 runs alone broadcasts)
BY_NAME = {
    "methods/__init__.py": "from . import plain\n",
    "methods/plain.py": """
import torch


def train(model, loader, opt):
    for x, target in loader:
        mask = target > 0
        if not mask.any():
            continue
        loss = ((model(x) - target) ** 2)[mask].mean()
        opt.zero_grad()
        loss.backward()
        opt.step()


@torch.no_grad()
def test(model, loader):
    model.eval()
    return [model(x) for x, _ in loader]
""",
    "models/__init__.py": "from .net import Net\n",
    "models/net.py": """
import torch


class Net(torch.nn.Module):
    def __init__(self, width=4):
        super().__init__()
        self.fc = torch.nn.Linear(width, 1)
        self.norm = torch.nn.BatchNorm1d(1)

    def forward(self, x):
        return self.norm(self.fc(x))
""",
    "train.py": """
import argparse
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, DistributedSampler, TensorDataset

import methods
import models


class Manager:
    def __init__(self, args):
        self.args = args
        self.method = getattr(methods, args.method)
        net = getattr(models, args.model)(width=4)
        self.model = DDP(net)
        self.opt = torch.optim.SGD(self.model.parameters(), lr=0.1)
        data = TensorDataset(torch.randn(64, 4), torch.randn(64, 1))
        self.sampler = DistributedSampler(data)
        self.loader = DataLoader(data, batch_size=8, sampler=self.sampler)

    def fit(self):
        for epoch in range(3):
            self.sampler.set_epoch(epoch)
            self.method.train(self.model, self.loader, self.opt)

    def evaluate(self):
        if dist.get_rank() == 0:
            return self.method.test(self.model, self.loader)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--method", default="plain")
    parser.add_argument("--model", default="Net")
    dist.init_process_group("gloo")
    manager = Manager(parser.parse_args())
    manager.fit()
    manager.evaluate()


if __name__ == "__main__":
    main()
""",
}


def test_a_module_and_a_model_class_picked_by_a_configured_name_are_followed(tmp_path):
    found = lint_tree(tmp_path, BY_NAME)
    assert [f.location.line for f in _codes(found, "DDP809")] == [_line(BY_NAME["methods/plain.py"], "if not mask.any()")]
    assert [f.location.line for f in _codes(found, "DDP801")] == [_line(BY_NAME["methods/plain.py"], "return [model(x)")]


def test_its_twin_no_skip_and_a_model_without_buffers(tmp_path):
    files = dict(BY_NAME)
    files["methods/plain.py"] = files["methods/plain.py"].replace("        if not mask.any():\n            continue\n", "")
    files["models/net.py"] = files["models/net.py"].replace("torch.nn.BatchNorm1d(1)", "torch.nn.Identity()")
    found = lint_tree(tmp_path, files)
    assert _codes(found, "DDP809") == [] and _codes(found, "DDP801") == []


# -------------------------------------------------- a dataset class picked by eval of a configured name
# `eval(args.dataset)("train")` over `from data import *`: the class is a subclass of the package's
# own `BaseSet(Dataset)`, in a module only that name reaches; it draws in __getitem__, every rank
# seeds torch alike and the loader has workers (DDP808)
EVAL_DATASET = {
    "data/__init__.py": "from .birds import Birds\nfrom .base import BaseSet\n",
    "data/base.py": """
from torch.utils.data import Dataset


class BaseSet(Dataset):
    def __init__(self, mode):
        self.mode = mode
        self.items = list(range(64))

    def __len__(self):
        return len(self.items)
""",
    "data/birds.py": """
import random
import torch
from .base import BaseSet


class Birds(BaseSet):
    def __getitem__(self, index):
        shift = random.random()
        return torch.tensor([float(self.items[index]) + shift])
""",
    "train.py": """
import argparse
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, DistributedSampler
from data import *


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--dataset", default="Birds")
    args = parser.parse_args()
    torch.manual_seed(7)
    dist.init_process_group("gloo")
    train_set = eval(args.dataset)("train")
    sampler = DistributedSampler(train_set)
    loader = DataLoader(train_set, batch_size=8, sampler=sampler, num_workers=4)
    model = DDP(torch.nn.Linear(1, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for epoch in range(3):
        sampler.set_epoch(epoch)
        for x in loader:
            opt.zero_grad()
            model(x).sum().backward()
            opt.step()


if __name__ == "__main__":
    main()
""",
}


def test_a_dataset_subclass_picked_by_eval_of_a_configured_name_is_read_for_its_draws(tmp_path):
    found = _codes(lint_tree(tmp_path, EVAL_DATASET), "DDP808")
    assert [f.location.line for f in found] == [_line(EVAL_DATASET["train.py"], "loader = DataLoader(")]


def test_its_twin_the_subclass_draws_nothing(tmp_path):
    files = dict(EVAL_DATASET)
    files["data/birds.py"] = files["data/birds.py"].replace("random.random()", "0.5")
    assert _codes(lint_tree(tmp_path, files), "DDP808") == []


# -------------------------------------------------- a Trainer's save_model on the main process under ZeRO-3
# the launch names an Accelerate config that picks DeepSpeed ZeRO stage 3: save_model() gathers
# every rank's partitions first, so on the main process alone it waits for the others (DDP801)
ZERO3 = {
    "configs/zero3.yaml": """
compute_environment: LOCAL_MACHINE
distributed_type: DEEPSPEED
deepspeed_config:
  zero_stage: 3
  zero3_save_16bit_model: true
num_processes: 4
""",
    "run.sh": "accelerate launch --config_file configs/zero3.yaml train.py --lr 1e-5\n",
    "train.py": """
from datasets import Dataset
from transformers import AutoModelForCausalLM, AutoTokenizer
from trl import SFTConfig, SFTTrainer

tokenizer = AutoTokenizer.from_pretrained("tiny")
model = AutoModelForCausalLM.from_pretrained("tiny")
data = Dataset.from_dict({"text": ["a b c"] * 64})
trainer = SFTTrainer(model=model, args=SFTConfig(output_dir="out"), train_dataset=data)
trainer.train()
trainer.accelerator.wait_for_everyone()
if trainer.accelerator.is_main_process:
    trainer.save_model("out/final")
    tokenizer.save_pretrained("out/final")
trainer.accelerator.wait_for_everyone()
""",
}


def test_a_trainers_save_model_on_the_main_process_under_a_launched_zero3_config_is_ddp801(tmp_path):
    found = _codes(lint_tree(tmp_path, ZERO3), "DDP801")
    assert [(f.location.line, f.severity.name) for f in found] == [(_line(ZERO3["train.py"], "trainer.save_model("), "ERROR")]
    assert "ZeRO-3" in found[0].message
    assert found[0].hint.startswith("call trainer.save_model() on every rank")


def test_its_twin_a_zero2_config(tmp_path):
    files = dict(ZERO3)
    files["configs/zero3.yaml"] = files["configs/zero3.yaml"].replace("zero_stage: 3", "zero_stage: 2")
    assert _codes(lint_tree(tmp_path, files), "DDP801") == []


# -------------------------------------------------- an imported module's own self-test block
# `if __name__ == "__main__":` at the foot of a losses module the script imports: a small loop that
# breaks on its loss never runs in the job (no DDP809)
SELF_TEST = {
    "losses.py": """
import torch


class PushPull(torch.nn.Module):
    def forward(self, pred, target):
        return ((pred - target) ** 2).mean()


if __name__ == "__main__":
    model = torch.nn.Linear(4, 1)
    crit = PushPull()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for i in range(50):
        opt.zero_grad()
        loss = crit(model(torch.randn(8, 4)), torch.zeros(8, 1))
        loss.backward()
        opt.step()
        if loss.item() < 0.1:
            break
""",
    "train.py": """
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from losses import PushPull


def main():
    dist.init_process_group("gloo")
    model = DDP(torch.nn.Linear(4, 1))
    crit = PushPull()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for step in range(100):
        opt.zero_grad()
        loss = crit(model(torch.randn(8, 4)), torch.zeros(8, 1))
        loss.backward()
        opt.step()


if __name__ == "__main__":
    main()
""",
}


def test_an_imported_modules_own_main_block_is_not_judged(tmp_path):
    assert _codes(lint_tree(tmp_path, SELF_TEST), "DDP809") == []


def test_its_twin_the_same_break_in_the_scripts_training_loop(tmp_path):
    files = dict(SELF_TEST)
    files["train.py"] = files["train.py"].replace("        opt.step()\n", "        opt.step()\n        if loss.item() < 0.1:\n            break\n")
    found = _codes(lint_tree(tmp_path, files), "DDP809")
    assert [f.location.line for f in found] == [_line(files["train.py"], "if loss.item() < 0.1")]
