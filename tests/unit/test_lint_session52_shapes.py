"""Shapes from session 52 (holdout 61's unread wave and holdout 62), each with its twin, in our own
words: an option named like a tensor field (`--data` beside `p.data = p.data * mask`), an option's
value carried into a builder's parameter, what only sizes a value, a registry's trainer that never
joins a group, a model unwrapped by `m.module if isinstance(m, DDP) else m`, Accelerate's reduce,
`mp.Process` arguments, and the binding of a loop's loader that reaches the loop."""

from __future__ import annotations

from tests.unit.test_lint_round50_shapes import at, line_of
from tests.unit.test_lint_session39_shapes import lint_tree


def lint_one(tmp_path, code: str, **more: str):
    return lint_tree(tmp_path, {"train.py": code, **more})


def lines(found, code: str) -> list[int]:
    return [line for line, _ in at(found, code)]


# -------------------------------------------------- `--data` beside `p.data = p.data * mask`
OPTION_DATA = """
import argparse, torch, torch.distributed as dist
from torch.utils.data import DataLoader, TensorDataset
from torch.nn.parallel import DistributedDataParallel as DDP


def mnist_loaders():
    return DataLoader(TensorDataset(torch.randn(64, 4)), batch_size=8, shuffle=True)  # mnist


def cifar_loaders():
    return DataLoader(TensorDataset(torch.randn(64, 4)), batch_size=8, shuffle=True)  # cifar


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--data", default="cifar10", choices=["mnist", "cifar10"])
    args = parser.parse_args()
    dist.init_process_group("gloo")
    model = DDP(torch.nn.Linear(4, 4))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    if args.data == "mnist":
        loader = mnist_loaders()
    else:
        loader = cifar_loaders()
    {reassign}
    for (x,) in loader:
        model(x).sum().backward()
        opt.step()
        for p in model.parameters():
            p.data = p.data * (p.data.abs() > 1e-3)  # sparse training's mask


main()
"""


def test_a_tensors_data_field_leaves_the_data_option_at_its_default(tmp_path):
    code = OPTION_DATA.replace("{reassign}", "")
    assert lines(lint_one(tmp_path, code), "DDP802") == [line_of(code, "# cifar")]


def test_its_twin_sets_the_option_itself(tmp_path):
    code = OPTION_DATA.replace("{reassign}", "args.data = args.data.lower()")
    assert lines(lint_one(tmp_path, code), "DDP802") == sorted([line_of(code, "# mnist"), line_of(code, "# cifar")])


# -------------------------------------------------- an option's value handed to a builder
SPLIT = """
import argparse, torch, torch.distributed as dist
from torch.utils.data import DataLoader, TensorDataset
from torch.nn.parallel import DistributedDataParallel as DDP


def get_loaders(args, validation_split):
    data = TensorDataset(torch.randn(64, 4))
    if validation_split > 0.0:
        train_loader = DataLoader(data, batch_size=8, shuffle=True)  # with a split
    else:
        train_loader = DataLoader(data, batch_size=8, shuffle=True)  # without
    return train_loader


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--valid-split", type=float, default={default})
    args = parser.parse_args()
    dist.init_process_group("gloo")
    model = DDP(torch.nn.Linear(4, 4))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    train_loader = get_loaders(args, args.valid_split)
    for (x,) in train_loader:
        model(x).sum().backward()
        opt.step()


main()
"""


def test_an_options_value_decides_the_builders_side(tmp_path):
    code = SPLIT.replace("{default}", "0.1")
    assert lines(lint_one(tmp_path, code), "DDP802") == [line_of(code, "# with a split")]


def test_its_twin_defaults_to_no_split(tmp_path):
    code = SPLIT.replace("{default}", "0.0")
    assert lines(lint_one(tmp_path, code), "DDP802") == [line_of(code, "# without")]


# -------------------------------------------------- what only sizes a value does not feed it
SIZED = """
import torch, torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP


def derive_seed(seed):
    g = torch.Generator()
    g.manual_seed(seed)
    return torch.randint(0, 1000, (), generator=g).item()


def with_steps(cfg, steps):
    cfg["steps"] = steps
    return cfg


def main(cfg):
    dist.init_process_group("gloo")
    seed = derive_seed(cfg["seed"])
    data = [torch.randn(4) for _ in range(seed % 7 + 8)]
    cfg = with_steps(cfg, {steps})
    model = DDP(torch.nn.Linear(4, 4))
    for x in data:
        model(x).sum().backward()
    if cfg["steps"] > 10:  # the test
        dist.barrier()


main({"seed": 1})
"""


def test_a_size_of_a_seeded_list_does_not_make_the_config_a_ranks_number(tmp_path):
    code = SIZED.replace("{steps}", "len(data)")
    assert at(lint_one(tmp_path, code), "DDP809") == []


def test_its_twin_hands_the_drawn_number_itself(tmp_path):
    code = SIZED.replace("{steps}", "seed")
    assert lines(lint_one(tmp_path, code), "DDP809") == [line_of(code, "# the test")]


# -------------------------------------------------- a registry's trainer that joins no group
REGISTRY = """
import torch
from trainers import train_vae, train_flow

TRAINERS = {"vae": train_vae, "flow": train_flow}


def main(kind):
    trainer = TRAINERS.get(kind)
    if trainer is None:
        raise ValueError(kind)
    trainer(torch.randn(64, 4))


main("flow")
"""
TRAINERS = """
import torch, torch.distributed as dist
from torch.utils.data import DataLoader, DistributedSampler, TensorDataset
from torch.nn.parallel import DistributedDataParallel as DDP


def setup():
    dist.init_process_group("gloo")


def save(model, path):
    torch.save(model.state_dict(), path)  # the save


def train_vae(x):
    {vae_setup}
    model = {vae_model}
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    loader = DataLoader(TensorDataset(x), batch_size=8, shuffle=True)  # vae loader
    for (b,) in loader:
        model(b).sum().backward()
        opt.step()
    save(model, "vae.pt")


def train_flow(x):
    setup()
    data = TensorDataset(x)
    model = DDP(torch.nn.Linear(4, 4))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for (b,) in DataLoader(data, batch_size=8, sampler=DistributedSampler(data)):
        model(b).sum().backward()
        opt.step()
    if dist.get_rank() == 0:
        save(model, "flow.pt")
"""


def test_a_registrys_trainer_that_sets_up_no_group_is_one_process(tmp_path):
    found = lint_tree(tmp_path, {"train.py": REGISTRY, "trainers.py": TRAINERS.replace("{vae_setup}", "").replace(
        "{vae_model}", "torch.nn.Linear(4, 4)")})
    assert at(found, "DDP802") == [] and at(found, "DDP806") == []


def test_its_twin_sets_the_group_up_in_that_trainer_too(tmp_path):
    trainers = TRAINERS.replace("{vae_setup}", "setup()").replace("{vae_model}", "DDP(torch.nn.Linear(4, 4))")
    found = lint_tree(tmp_path, {"train.py": REGISTRY, "trainers.py": trainers})
    assert lines(found, "DDP802") == [line_of(trainers, "# vae loader")]


# -------------------------------------------------- a model unwrapped where it is the wrapper
UNWRAPPED = """
import torch, torch.distributed as dist
from typing import cast
from torch.nn.parallel import DistributedDataParallel as DDP


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(4, 4)

    def compute_loss(self, x):
        return self.lin(x).pow(2).mean()


def run(model, opt, accum=4):
    for step in range(20):
        for micro in range(accum):
            loss = {loss}
            (loss / accum).backward()  # the backward
        opt.step()
        opt.zero_grad()


def main():
    dist.init_process_group("gloo")
    active = DDP(Net())
    raw = cast(Net, active.module if isinstance(active, DDP) else active)
    opt = torch.optim.SGD(raw.parameters(), lr=0.1)
    run(model={model}, opt=opt)


main()
"""


def test_a_method_of_the_unwrapped_model_syncs_nothing_to_accumulate(tmp_path):
    code = UNWRAPPED.replace("{loss}", "model.compute_loss(torch.randn(2, 4))").replace("{model}", "raw")
    assert at(lint_one(tmp_path, code), "DDP805") == []


def test_its_twin_runs_the_wrappers_forward(tmp_path):
    code = UNWRAPPED.replace("{loss}", "model(torch.randn(2, 4)).pow(2).mean()").replace("{model}", "active")
    assert lines(lint_one(tmp_path, code), "DDP805") != []


# -------------------------------------------------- Accelerate's reduce hands every process the sum
REDUCED = """
import torch
from accelerate import Accelerator


def validate(model, loader, accelerator):
    total = torch.zeros(1, device=accelerator.device)
    for (x,) in loader:
        total += model(x).pow(2).mean().detach()
    {reduce}
    return total.item()


def main():
    accelerator = Accelerator()
    model = torch.nn.Linear(4, 4)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    data = torch.utils.data.TensorDataset(torch.randn(64, 4))
    loader = torch.utils.data.DataLoader(data, batch_size=8, shuffle=True)
    model, opt, loader = accelerator.prepare(model, opt, loader)
    best, stale = float("inf"), 0
    for epoch in range(50):
        for (x,) in loader:
            accelerator.backward(model(x).sum())
            opt.step()
            opt.zero_grad()
        val = validate(model, loader, accelerator)
        if val < best:
            best, stale = val, 0
        else:
            stale += 1
        if stale >= 3:  # the stop
            break


main()
"""


def test_accelerates_reduce_makes_the_validation_number_every_processs(tmp_path):
    code = REDUCED.replace("{reduce}", "total = accelerator.reduce(total, reduction='sum')")
    assert at(lint_one(tmp_path, code), "DDP809") == []


def test_its_twin_keeps_each_processs_own_total(tmp_path):
    code = REDUCED.replace("{reduce}", "")
    assert lines(lint_one(tmp_path, code), "DDP809") != []


# -------------------------------------------------- mp.Process hands each rank its own file
PROCESS = """
import numpy as np, torch, torch.distributed as dist, torch.multiprocessing as mp
from torch.utils.data import DataLoader, Dataset
from torch.nn.parallel import DistributedDataParallel as DDP


class Records(Dataset):
    def __init__(self, cfg, rows):
        self.rows = rows

    def __len__(self):
        return len(self.rows)

    def __getitem__(self, i):
        return torch.as_tensor(self.rows[i], dtype=torch.float32)


def run(cfg, rank, train_path):
    data = Records(cfg, np.load(train_path))
    loader = DataLoader(data, batch_size=8, shuffle=True)  # the loader
    model = DDP(torch.nn.Linear(4, 4))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for x in loader:
        model(x).sum().backward()
        opt.step()


def init_processes(cfg, rank, path, fn):
    dist.init_process_group("gloo", rank=rank, world_size=cfg["gpus"])
    fn(cfg, rank, train_path=path)


def main(cfg):
    procs = []
    for rank in range(cfg["gpus"]):
        p = mp.Process(target=init_processes, args=(cfg, rank, {path}, run))
        p.start()
        procs.append(p)
    for p in procs:
        p.join()


main({"gpus": 2})
"""


def test_a_process_handed_its_ranks_file_reads_its_own_shard(tmp_path):
    code = PROCESS.replace("{path}", '"train-{}.npy".format(rank)')
    assert at(lint_one(tmp_path, code), "DDP802") == []


def test_its_twin_hands_every_process_the_same_file(tmp_path):
    code = PROCESS.replace("{path}", '"train.npy"')
    assert lines(lint_one(tmp_path, code), "DDP802") == [line_of(code, "# the loader")]


# -------------------------------------------------- the loader that reaches the training loop
REBOUND = """
import torch, torch.distributed as dist
from torch.utils.data import DataLoader, DistributedSampler, TensorDataset
from torch.nn.parallel import DistributedDataParallel as DDP
from tqdm import tqdm


def main():
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    train = TensorDataset(torch.randn(64, 4))
    train_loader = DataLoader(train, batch_size=8, {train_sampler})  # train loader
    val_loader = DataLoader(TensorDataset(torch.randn(16, 4)), batch_size=1)  # val loader
    model = DDP(torch.nn.Linear(4, 4))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for epoch in range(3):
        if rank == 0:
            data_loader = tqdm(train_loader)
        else:
            data_loader = train_loader
        for (x,) in data_loader:
            model(x).sum().backward()
            opt.step()
        with torch.no_grad():
            if rank == 0:
                data_loader = tqdm(val_loader)
            else:
                data_loader = val_loader
            for (x,) in data_loader:
                model(x)


main()
"""


def test_the_validation_loader_bound_to_the_same_name_later_trains_nothing(tmp_path):
    code = REBOUND.replace("{train_sampler}", "sampler=DistributedSampler(train)")
    assert at(lint_one(tmp_path, code), "DDP802") == []


def test_its_twin_trains_on_a_loader_without_a_sampler(tmp_path):
    code = REBOUND.replace("{train_sampler}", "shuffle=True")
    assert lines(lint_one(tmp_path, code), "DDP802") == [line_of(code, "# train loader")]
