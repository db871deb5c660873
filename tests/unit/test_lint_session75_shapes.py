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
