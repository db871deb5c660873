"""Shapes from session 74's reading of holdout 104 (after its unread score), each with its twin,
in our own words."""

from __future__ import annotations

from tests.unit.test_lint_session39_shapes import lint_tree
from tests.unit.test_lint_session61_shapes import _codes, _line

# -------------------------------------------------- a sampler left None only where no group is set up
# (`DistributedSampler(ds) if multi else None`): the loader built under `if sampler is None:` is the
# one-process run's, no DDP802
NONE_SAMPLER = """import argparse
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, DistributedSampler, TensorDataset


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--local-rank", type=int, default=-1)
    parser.add_argument("--shard", action="store_true")
    args = parser.parse_args()
    if args.local_rank >= 0:
        dist.init_process_group("gloo")
        multi_gpu = True
    else:
        multi_gpu = False
    data = TensorDataset(torch.randn(64, 4), torch.randn(64, 1))
    sampler = DistributedSampler(data) if multi_gpu else None
    if sampler is None:
        loader = DataLoader(data, shuffle=True, batch_size=8)
    else:
        loader = DataLoader(data, sampler=sampler, batch_size=8)
    model = torch.nn.Linear(4, 1)
    if multi_gpu:
        model = DDP(model)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for epoch in range(3):
        if sampler is not None:
            sampler.set_epoch(epoch)
        for x, y in loader:
            loss = ((model(x) - y) ** 2).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()


if __name__ == "__main__":
    main()
"""


def test_a_loader_built_where_the_sampler_is_left_none_without_a_group_is_no_ddp802(tmp_path):
    assert _codes(lint_tree(tmp_path, {"train.py": NONE_SAMPLER}), "DDP802") == []


def test_its_twin_a_sampler_left_none_by_an_unrelated_option(tmp_path):
    twin = NONE_SAMPLER.replace("DistributedSampler(data) if multi_gpu else None",
                                "DistributedSampler(data) if args.shard else None")
    assert twin != NONE_SAMPLER
    found = _codes(lint_tree(tmp_path, {"train.py": twin}), "DDP802")
    assert [f.location.line for f in found] == [_line(twin, "shuffle=True")]


# -------------------------------------------------- `device == "cuda:0"` where the device is made of the
# rank (`"cuda:" + str(rank)`): a rank-0 test, the save under it is one rank's
DEVICE_NAMED = """import os
import torch
import torch.distributed as dist
import torch.multiprocessing as mp
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, DistributedSampler, TensorDataset


def keep(model, name):
    torch.save(model.state_dict(), f"models/{name}.pt")


def fit(model, loader, sampler, opt, device, steps):
    best = float("inf")
    for step in range(steps):
        sampler.set_epoch(step)
        total = 0.0
        for x, y in loader:
            loss = ((model(x) - y) ** 2).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
            total += loss.item()
        if device == "cuda:0" and total < best:
            best = total
            keep(model, "best")


def worker(rank, world):
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    os.environ.setdefault("MASTER_PORT", "29500")
    dist.init_process_group("gloo", rank=rank, world_size=world)
    device = "cuda:" + str(rank)
    data = TensorDataset(torch.randn(64, 4), torch.randn(64, 1))
    sampler = DistributedSampler(data)
    model = DDP(torch.nn.Linear(4, 1))
    fit(model, DataLoader(data, sampler=sampler, batch_size=8), sampler,
        torch.optim.SGD(model.parameters(), lr=0.1), device, 3)


if __name__ == "__main__":
    mp.spawn(worker, args=(2,), nprocs=2)
"""


def test_a_device_made_of_the_rank_compared_with_cuda_0_is_a_rank_test(tmp_path):
    assert _codes(lint_tree(tmp_path, {"train.py": DEVICE_NAMED}), "DDP806") == []


def test_its_twin_the_same_save_with_no_device_test(tmp_path):
    twin = DEVICE_NAMED.replace('if device == "cuda:0" and total < best:', "if total < best:")
    assert twin != DEVICE_NAMED
    found = _codes(lint_tree(tmp_path, {"train.py": twin}), "DDP806")
    assert [f.location.line for f in found] == [_line(twin, "torch.save(")]


# -------------------------------------------------- a library loss scaler called on the loss
# (`loss_scaler(loss, optimizer)`, timm's NativeScaler) back-propagates: its loop trains, so its
# loader's alike-seeded workers are DDP808 even with a no-grad EMA helper in the loop
SCALER_LOOP = """import random
import torch
import torch.distributed as dist
from timm.utils import NativeScaler
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, Dataset, DistributedSampler

torch.manual_seed(42)


class Masked(Dataset):
    def __len__(self):
        return 64

    def __getitem__(self, i):
        keep = random.sample(range(16), 8)
        x = torch.zeros(16)
        x[keep] = 1.0
        return x, x.sum()


@torch.no_grad()
def follow(model):
    for p in model.parameters():
        p.mul_(0.99)


def main():
    dist.init_process_group("gloo")
    data = Masked()
    sampler = DistributedSampler(data)
    loader = DataLoader(data, batch_size=8, num_workers=4, sampler=sampler)
    model = DDP(torch.nn.Linear(16, 1))
    opt = torch.optim.AdamW(model.parameters())
    loss_scaler = NativeScaler()
    for epoch in range(3):
        sampler.set_epoch(epoch)
        for x, y in loader:
            loss = ((model(x).squeeze(1) - y) ** 2).mean()
            opt.zero_grad()
            loss_scaler(loss, opt, parameters=model.parameters())
            follow(model)


if __name__ == "__main__":
    main()
"""


def test_a_loop_backpropagating_through_a_library_loss_scaler_trains(tmp_path):
    found = _codes(lint_tree(tmp_path, {"train.py": SCALER_LOOP}), "DDP808")
    assert [f.location.line for f in found] == [_line(SCALER_LOOP, "loader = DataLoader(")]


def test_its_twin_a_loop_with_the_no_grad_helper_alone_evaluates(tmp_path):
    twin = SCALER_LOOP.replace("            loss_scaler(loss, opt, parameters=model.parameters())\n", "")
    assert twin != SCALER_LOOP
    assert _codes(lint_tree(tmp_path, {"train.py": twin}), "DDP808") == []


# -------------------------------------------------- `try: if get_rank() == 0: save` / `except: save`:
# the handler runs where asking the rank raised (no group) or rank 0's save failed
FALLBACK_SAVE = """import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, DistributedSampler, TensorDataset


class Wrapper(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(4, 1)

    def forward(self, x):
        return self.lin(x)

    def save_model(self, path):
        try:
            if dist.get_rank() == 0:
                torch.save(self.state_dict(), path)
        except Exception:
            torch.save(self.state_dict(), path)


def main():
    dist.init_process_group("gloo")
    data = TensorDataset(torch.randn(64, 4), torch.randn(64, 1))
    sampler = DistributedSampler(data)
    inner = Wrapper()
    model = DDP(inner)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for epoch in range(3):
        sampler.set_epoch(epoch)
        for x, y in DataLoader(data, sampler=sampler, batch_size=8):
            loss = ((model(x) - y) ** 2).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
        inner.save_model("last.pt")


if __name__ == "__main__":
    main()
"""


def test_a_save_in_the_handler_of_a_rank_zero_save_is_no_every_rank_save(tmp_path):
    assert _codes(lint_tree(tmp_path, {"train.py": FALLBACK_SAVE}), "DDP806") == []


def test_its_twin_a_try_with_no_rank_test_in_its_body(tmp_path):
    twin = FALLBACK_SAVE.replace("            if dist.get_rank() == 0:\n                torch.save(",
                                 "            if path:\n                torch.save(")
    assert twin != FALLBACK_SAVE
    assert _codes(lint_tree(tmp_path, {"train.py": twin}), "DDP806") != []


# -------------------------------------------------- convert_sync_batchnorm adds no buffers: a rank-0
# no-grad forward of a wrapped model with none broadcasts nothing
SYNCBN_CONVERTED = """import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, DistributedSampler, TensorDataset


class Encoder(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(4, 4)
        self.norm = torch.nn.LayerNorm(4)

    def forward(self, x):
        return self.norm(self.lin(x))


def picture(model, x):
    with torch.no_grad():
        return model(x)


def main():
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    model = Encoder()
    model = torch.nn.SyncBatchNorm.convert_sync_batchnorm(model)
    model = DDP(model)
    data = TensorDataset(torch.randn(64, 4))
    sampler = DistributedSampler(data)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for epoch in range(3):
        sampler.set_epoch(epoch)
        for (x,) in DataLoader(data, sampler=sampler, batch_size=8):
            loss = model(x).pow(2).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
        if rank == 0:
            picture(model, x)


if __name__ == "__main__":
    main()
"""


def test_a_converted_model_without_buffers_forwards_on_rank_zero_without_a_collective(tmp_path):
    assert _codes(lint_tree(tmp_path, {"train.py": SYNCBN_CONVERTED}), "DDP801") == []


def test_its_twin_a_converted_model_with_batchnorm(tmp_path):
    twin = SYNCBN_CONVERTED.replace("torch.nn.LayerNorm(4)", "torch.nn.BatchNorm1d(4)")
    assert twin != SYNCBN_CONVERTED
    found = _codes(lint_tree(tmp_path, {"train.py": twin}), "DDP801")
    assert [f.location.line for f in found] == [_line(twin, "return model(x)")]


# -------------------------------------------------- a second group over the whole world (`new_group(
# backend="gloo")`, detectron2-style comm helpers) parts no ranks into model-parallel groups: the
# alike-seeded workers of a loader every rank reads are still reported
WORLD_GROUP = """import random
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, Dataset, DistributedSampler

_GLOO = None


def gloo_group():
    global _GLOO
    if _GLOO is None:
        _GLOO = dist.new_group(backend="gloo")
    return _GLOO


class Crops(Dataset):
    def __len__(self):
        return 64

    def __getitem__(self, i):
        return torch.full((4,), random.random()), torch.ones(1)


def main():
    dist.init_process_group("gloo")
    group = gloo_group()
    data = Crops()
    loader = DataLoader(data, batch_size=8, num_workers=2, shuffle=True,
                        worker_init_fn=lambda wid: random.seed(1234 + wid))
    model = torch.nn.Linear(4, 1)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for epoch in range(3):
        for x, y in loader:
            loss = ((model(x) - y) ** 2).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
        dist.barrier(group=group)


if __name__ == "__main__":
    main()
"""


def test_a_whole_world_gloo_group_parts_no_ranks(tmp_path):
    found = _codes(lint_tree(tmp_path, {"train.py": WORLD_GROUP}), "DDP808")
    assert len(found) == 1
    assert "runs a lambda as worker_init_fn" in found[0].message, found[0].message


def test_its_twin_a_group_of_some_ranks(tmp_path):
    twin = WORLD_GROUP.replace('dist.new_group(backend="gloo")', "dist.new_group(ranks=[0, 1])")
    assert twin != WORLD_GROUP
    assert _codes(lint_tree(tmp_path, {"train.py": twin}), "DDP808") == []


# -------------------------------------------------- a generator made by a method of the trainer
# (`generator=self._make_generator(self.seed)`) seeded from the options alike on every rank
METHOD_GENERATOR = """import argparse
import numpy as np
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, Dataset, DistributedSampler


class Pairs(Dataset):
    def __len__(self):
        return 64

    def __getitem__(self, i):
        return torch.tensor(np.random.choice(100, 4), dtype=torch.float32), torch.ones(1)


class Trainer:
    def __init__(self, args):
        self.seed = args.seed
        self.rank = dist.get_rank()
        self.data = Pairs()
        self.sampler = DistributedSampler(self.data)
        self.model = DDP(torch.nn.Linear(4, 1))
        self.opt = torch.optim.SGD(self.model.parameters(), lr=0.1)

    def _make_generator(self, seed):
        g = torch.Generator()
        g.manual_seed(seed)
        return g

    def loader(self):
        return DataLoader(self.data, sampler=self.sampler, batch_size=8, num_workers=4,
                          generator=self._make_generator(self.seed))

    def fit(self):
        for epoch in range(3):
            self.sampler.set_epoch(epoch)
            for x, y in self.loader():
                loss = ((self.model(x) - y) ** 2).mean()
                self.opt.zero_grad()
                loss.backward()
                self.opt.step()


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--seed", type=int, default=0)
    dist.init_process_group("gloo")
    Trainer(parser.parse_args()).fit()
"""


def test_a_generator_a_method_seeds_from_the_options_is_ddp808(tmp_path):
    found = _codes(lint_tree(tmp_path, {"train.py": METHOD_GENERATOR}), "DDP808")
    assert [f.location.line for f in found] == [_line(METHOD_GENERATOR, "g.manual_seed(seed)")]


def test_its_twin_the_method_handed_the_rank(tmp_path):
    twin = METHOD_GENERATOR.replace("self._make_generator(self.seed)", "self._make_generator(self.seed + self.rank)")
    assert twin != METHOD_GENERATOR
    assert _codes(lint_tree(tmp_path, {"train.py": twin}), "DDP808") == []


# ==================================================== holdout 105's shapes (read after its unread score)

# -------------------------------------------------- `if ngpus > 1:` rebinds the plain loader to a
# sharded one before anything reads it: the plain one is the one-GPU run's
GPU_COUNT_REBIND = """import torch
import torch.distributed as dist
import torch.multiprocessing as mp
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, DistributedSampler, TensorDataset


def get_data(ngpus, batch_size):
    data = TensorDataset(torch.randn(64, 4), torch.randn(64, 1))
    train_loader = DataLoader(data, batch_size=batch_size, shuffle=True)
    if ngpus > 1:
        sampler = DistributedSampler(data)
        train_loader = DataLoader(data, batch_size=batch_size // ngpus, sampler=sampler)
    return train_loader


def worker(rank, world):
    dist.init_process_group("gloo", init_method="tcp://127.0.0.1:29500", rank=rank, world_size=world)
    loader = get_data(world, 16)
    model = DDP(torch.nn.Linear(4, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for epoch in range(3):
        loader.sampler.set_epoch(epoch)
        for x, y in loader:
            loss = ((model(x) - y) ** 2).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()


if __name__ == "__main__":
    mp.spawn(worker, args=(4,), nprocs=4)
"""


def test_a_plain_loader_rebound_under_more_than_one_gpu_is_no_ddp802(tmp_path):
    assert _codes(lint_tree(tmp_path, {"train.py": GPU_COUNT_REBIND}), "DDP802") == []


def test_its_twin_a_rebinding_under_another_count(tmp_path):
    twin = GPU_COUNT_REBIND.replace("if ngpus > 1:", "if batch_size > 1:")
    assert twin != GPU_COUNT_REBIND
    found = _codes(lint_tree(tmp_path, {"train.py": twin}), "DDP802")
    assert [f.location.line for f in found] == [_line(twin, "shuffle=True")]


# -------------------------------------------------- per-sample files of a prepared loader read through
# `bar = tqdm(loader)`, the loader a field set from `model, loader = accelerator.prepare(...)`
PREPARED_SAMPLES = """import torch
from accelerate import Accelerator
from torch.utils.data import DataLoader, Dataset
from tqdm import tqdm


class Named(Dataset):
    def __len__(self):
        return 32

    def __getitem__(self, i):
        return {"x": torch.randn(4), "name": f"item{i}"}


class Runner:
    def __init__(self):
        self.accelerator = Accelerator()
        model = torch.nn.Linear(4, 1)
        loader = DataLoader(Named(), batch_size=4)
        model, loader = self.accelerator.prepare(model, loader)
        self.model, self.loader = model, loader

    def predict(self):
        self.sample(self.loader)

    def sample(self, dataloader):
        bar = tqdm(dataloader)
        for step, batch in enumerate(bar):
            with torch.no_grad():
                out = self.model(batch["x"])
            for i in range(len(out)):
                name = batch["name"][i]
                torch.save(out[i], f"preds/{name}.pt")


if __name__ == "__main__":
    Runner().predict()
"""


def test_a_file_per_sample_of_a_prepared_loader_read_through_tqdm_has_one_writer(tmp_path):
    assert _codes(lint_tree(tmp_path, {"train.py": PREPARED_SAMPLES}), "DDP806") == []


def test_its_twin_one_path_for_every_batch(tmp_path):
    twin = PREPARED_SAMPLES.replace('f"preds/{name}.pt"', '"preds/last.pt"')
    assert twin != PREPARED_SAMPLES
    assert len(_codes(lint_tree(tmp_path, {"train.py": twin}), "DDP806")) == 1


# -------------------------------------------------- a main-process flag unpacked from a set-up helper
# (`lead, device = setup(opts)`, `lead = dist.get_rank() == 0` there) picks the real saver;
# the other ranks get a no-op
UNPACKED_FLAG = """import os
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, DistributedSampler, TensorDataset


class NoOp:
    def __getattr__(self, name):
        return self.noop

    def noop(self, *args, **kwargs):
        return None


class Saver:
    def __init__(self, folder):
        self.folder = folder

    def save(self, model, step):
        torch.save(model.state_dict(), os.path.join(self.folder, f"step_{step}.pt"))


def setup(local_rank):
    if local_rank != -1:
        dist.init_process_group("gloo")
        lead = dist.get_rank() == 0
    else:
        lead = True
    return lead, torch.device("cpu")


def main():
    lead, device = setup(int(os.environ.get("LOCAL_RANK", -1)))
    if lead:
        saver = Saver("ckpts")
    else:
        saver = NoOp()
    data = TensorDataset(torch.randn(64, 4), torch.randn(64, 1))
    sampler = DistributedSampler(data)
    model = DDP(torch.nn.Linear(4, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for epoch in range(3):
        sampler.set_epoch(epoch)
        for x, y in DataLoader(data, sampler=sampler, batch_size=8):
            loss = ((model(x) - y) ** 2).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
        saver.save(model, epoch)


if __name__ == "__main__":
    main()
"""


def test_a_saver_made_only_where_an_unpacked_main_flag_holds(tmp_path):
    assert _codes(lint_tree(tmp_path, {"train.py": UNPACKED_FLAG}), "DDP806") == []


def test_its_twin_a_flag_every_rank_holds(tmp_path):
    twin = UNPACKED_FLAG.replace("lead = dist.get_rank() == 0", "lead = dist.is_initialized()")
    assert twin != UNPACKED_FLAG
    assert len(_codes(lint_tree(tmp_path, {"train.py": twin}), "DDP806")) == 1


# -------------------------------------------------- `self.net_ddp = DDP(self.net)`, then the training
# step calls `self.net(x)`: the module the wrapper holds, its loss summed from None
FIELD_BESIDE_WRAPPER = """import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, DistributedSampler, TensorDataset


class Solver:
    def __init__(self, net, data):
        self.net = net
        self.net_ddp = DDP(self.net)
        self.sampler = DistributedSampler(data)
        self.loader = DataLoader(data, sampler=self.sampler, batch_size=8)
        self.opt = torch.optim.SGD(self.net.parameters(), lr=0.1)

    def epoch(self, e):
        self.sampler.set_epoch(e)
        for x, y in self.loader:
            pred = self.net(x)
            losses = [((pred - y) ** 2).mean(), pred.abs().mean()]
            total = None
            for part in losses:
                part = part.mean()
                if total is None:
                    total = part
                else:
                    total += part
            loss = total
            self.opt.zero_grad()
            loss.backward()
            self.opt.step()


if __name__ == "__main__":
    dist.init_process_group("gloo")
    solver = Solver(torch.nn.Linear(4, 1), TensorDataset(torch.randn(64, 4), torch.randn(64, 1)))
    for e in range(3):
        solver.epoch(e)
"""


def test_a_forward_of_the_field_a_wrapper_was_made_around_is_ddp810(tmp_path):
    found = _codes(lint_tree(tmp_path, {"train.py": FIELD_BESIDE_WRAPPER}), "DDP810")
    assert [f.location.line for f in found] == [_line(FIELD_BESIDE_WRAPPER, "loss.backward()")]


def test_its_twin_the_forward_through_the_wrapper(tmp_path):
    twin = FIELD_BESIDE_WRAPPER.replace("pred = self.net(x)", "pred = self.net_ddp(x)")
    assert twin != FIELD_BESIDE_WRAPPER
    assert _codes(lint_tree(tmp_path, {"train.py": twin}), "DDP810") == []


# -------------------------------------------------- one builder makes two loaders; `source.sampler.
# set_epoch(e)` sets the source sampler only, the target's is never set
TWO_SAMPLERS = """import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, DistributedSampler, TensorDataset


def build_loader(dataset, sampler):
    return DataLoader(dataset, batch_size=8, sampler=sampler, drop_last=True)


def main():
    dist.init_process_group("gloo")
    source = TensorDataset(torch.randn(64, 4), torch.randn(64, 1))
    target = TensorDataset(torch.randn(64, 4), torch.randn(64, 1))
    source_sampler = DistributedSampler(source, shuffle=True)
    target_sampler = DistributedSampler(target, shuffle=True)
    source_loader = build_loader(source, sampler=source_sampler)
    target_loader = build_loader(target, sampler=target_sampler)
    model = DDP(torch.nn.Linear(4, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for epoch in range(3):
        source_loader.sampler.set_epoch(epoch)
        for (xs, ys), (xt, _) in zip(source_loader, target_loader):
            loss = ((model(xs) - ys) ** 2).mean() + model(xt).pow(2).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()


if __name__ == "__main__":
    main()
"""


def test_the_set_epoch_of_one_builders_loader_sets_only_its_own_sampler(tmp_path):
    found = _codes(lint_tree(tmp_path, {"train.py": TWO_SAMPLERS}), "DDP804")
    assert [f.location.line for f in found] == [_line(TWO_SAMPLERS, "target_sampler = DistributedSampler")]


def test_its_twin_both_loaders_samplers_set(tmp_path):
    twin = TWO_SAMPLERS.replace("        source_loader.sampler.set_epoch(epoch)\n",
                                "        source_loader.sampler.set_epoch(epoch)\n        target_loader.sampler.set_epoch(epoch)\n")
    assert twin != TWO_SAMPLERS
    assert _codes(lint_tree(tmp_path, {"train.py": twin}), "DDP804") == []


# -------------------------------------------------- a DistributedSampler over a dataset that ignores the
# index and draws from streams every rank seeds alike, in the rank's own process: it splits nothing
INDEX_IGNORED = """import random
import torch
import torch.distributed as dist
import torch.multiprocessing as mp
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, Dataset, DistributedSampler


def seed_all(seed):
    random.seed(seed)
    torch.manual_seed(seed)


class Walks(Dataset):
    def __len__(self):
        return 1000

    def __getitem__(self, index):
        start = random.randint(0, 99)
        return torch.tensor([float(start)]), torch.ones(1)


def worker(rank, world):
    dist.init_process_group("gloo", init_method="tcp://127.0.0.1:29500", rank=rank, world_size=world)
    seed_all(999)
    data = Walks()
    sampler = DistributedSampler(data)
    loader = DataLoader(data, batch_size=8, sampler=sampler)
    model = DDP(torch.nn.Linear(1, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for epoch in range(3):
        sampler.set_epoch(epoch)
        for x, y in loader:
            loss = ((model(x) - y) ** 2).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()


if __name__ == "__main__":
    mp.spawn(worker, args=(2,), nprocs=2)
"""


def test_a_sampler_over_a_dataset_that_ignores_its_index_splits_nothing(tmp_path):
    found = _codes(lint_tree(tmp_path, {"train.py": INDEX_IGNORED}), "DDP802")
    assert [f.location.line for f in found] == [_line(INDEX_IGNORED, "loader = DataLoader(")]
    assert "splits nothing" in found[0].message


def test_its_twin_the_ranks_seeded_apart(tmp_path):
    twin = INDEX_IGNORED.replace("seed_all(999)", "seed_all(999 + rank)")
    assert twin != INDEX_IGNORED
    assert _codes(lint_tree(tmp_path, {"train.py": twin}), "DDP802") == []


# -------------------------------------------------- a sampler made each step and read for one batch
# (`next(iter(loader))`): no epoch of it repeats an order
FRESH_SAMPLER = """import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, DistributedSampler, TensorDataset


def main():
    dist.init_process_group("gloo")
    model = DDP(torch.nn.Linear(4, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for step in range(10):
        picked = TensorDataset(torch.randn(16, 4), torch.randn(16, 1))
        picked_sampler = DistributedSampler(picked, shuffle=True)
        picked_loader = DataLoader(picked, batch_size=16, sampler=picked_sampler)
        x, y = next(iter(picked_loader))
        loss = ((model(x) - y) ** 2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()


if __name__ == "__main__":
    main()
"""


def test_a_sampler_made_for_one_batch_needs_no_set_epoch(tmp_path):
    assert _codes(lint_tree(tmp_path, {"train.py": FRESH_SAMPLER}), "DDP804") == []


def test_its_twin_one_sampler_iterated_every_step(tmp_path):
    twin = FRESH_SAMPLER.replace(
        "        x, y = next(iter(picked_loader))\n",
        "        for x, y in picked_loader:\n            pass\n").replace(
        "    for step in range(10):\n        picked = TensorDataset(torch.randn(16, 4), torch.randn(16, 1))\n"
        "        picked_sampler = DistributedSampler(picked, shuffle=True)\n"
        "        picked_loader = DataLoader(picked, batch_size=16, sampler=picked_sampler)\n",
        "    picked = TensorDataset(torch.randn(16, 4), torch.randn(16, 1))\n"
        "    picked_sampler = DistributedSampler(picked, shuffle=True)\n"
        "    picked_loader = DataLoader(picked, batch_size=16, sampler=picked_sampler)\n"
        "    for step in range(10):\n")
    assert twin != FRESH_SAMPLER
    assert len(_codes(lint_tree(tmp_path, {"train.py": twin}), "DDP804")) == 1
