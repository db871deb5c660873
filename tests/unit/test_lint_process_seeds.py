"""DDP808's third way (lint/process_seeds.py): every rank seeds its torch generator alike and a
training loader's workers, which draw random augmentation, take their base seed from it. Each
shape is found at the loader; each healthy twin (the rank in the seed, the launcher's seeding
before mp.spawn, a dataset that draws nothing, a generator per rank, no workers...) stays clean."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from ddpdoctor.core.findings import Finding
from ddpdoctor.lint.driver import gather, lint_results

HEAD = """\
import random
import torch
import torch.distributed as dist
from torch.utils.data import DataLoader, Dataset, DistributedSampler

class Crops(Dataset):
    def __init__(self, n):
        self.n = n
    def __len__(self):
        return self.n
    def __getitem__(self, i):
        x = torch.zeros(8)
        if random.random() < 0.5:  # a flip, drawn in the worker
            x = x.flip(0)
        return x

"""

TRAIN = """model = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(8, 1))
        for epoch in range(3):
            sampler.set_epoch(epoch)
            for x in loader:
                model(x).sum().backward()
"""  # indented as the bodies below, which it ends (their last line holds the first line's indent)


def ddp808(tmp_path: Path, body: str, head: str = HEAD) -> list[Finding]:
    path = tmp_path / "train.py"
    path.write_text(head + textwrap.dedent(body).lstrip("\n"))
    return [f for r in lint_results(gather(str(path)), set()) for f in r.findings if f.code == "DDP808"]


def line_of(tmp_path: Path, text: str) -> int:
    return next(i for i, line in enumerate((tmp_path / "train.py").read_text().splitlines(), 1) if text in line)


FOUND = {
    "torchrun, a config's seed": """\
        dist.init_process_group("gloo")
        torch.manual_seed(args.seed)
        dataset = Crops(64)
        sampler = DistributedSampler(dataset)
        loader = DataLoader(dataset, sampler=sampler, num_workers=4)  # <-
        """ + TRAIN,
    "mp.spawn, seeded in the rank, a torchvision transform": """\
        import torchvision.transforms as T
        from torchvision.datasets import ImageFolder
        import torch.multiprocessing as mp
        def worker(rank, args):
            dist.init_process_group("gloo", rank=rank, world_size=2)
            torch.manual_seed(2024)
            dataset = ImageFolder(args.root, transform=T.Compose([T.RandomResizedCrop(224), T.ToTensor()]))
            sampler = DistributedSampler(dataset)
            loader = DataLoader(dataset, sampler=sampler, num_workers=2)  # <-
            model = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(8, 1))
            for x, y in loader:
                model(x).sum().backward()
        if __name__ == "__main__":
            mp.spawn(worker, args=(parse(),), nprocs=2)
        """,
    "a worker_init_fn that reseeds from torch's base seed": """\
        import numpy as np
        def seed_worker(worker_id):
            s = torch.initial_seed() % 2 ** 32
            np.random.seed(s)
            random.seed(s)
        dist.init_process_group("gloo")
        torch.manual_seed(7)
        dataset = Crops(64)
        sampler = DistributedSampler(dataset)
        loader = DataLoader(dataset, sampler=sampler, num_workers=4, worker_init_fn=seed_worker)  # <-
        """ + TRAIN,
    "transformers' set_seed, datasets handed through a dict": """\
        from transformers import set_seed
        dist.init_process_group("gloo")
        set_seed(cfg.seed)
        datasets = {"train": Crops(64), "val": Crops(8)}
        def make_loader(ds, workers):
            return DataLoader(ds, sampler=DistributedSampler(ds), num_workers=workers)  # <-
        loader = make_loader(datasets["train"], 4)
        model = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(8, 1))
        for x in loader:
            model(x).sum().backward()
        """,
}


@pytest.mark.parametrize("body", list(FOUND.values()), ids=list(FOUND))
def test_a_rank_shared_torch_seed_reaches_the_training_workers(tmp_path: Path, body: str) -> None:
    found = ddp808(tmp_path, body)
    assert len(found) == 1, [f.message for f in found]
    assert found[0].location.line == line_of(tmp_path, "# <-")
    assert found[0].severity.value == "warning"
    assert found[0].evidence["how"] == "process"
    assert "every rank seeds alike" in found[0].message and found[0].evidence["seed_locations"]


CLEAN = {
    "the rank in the seed": """\
        dist.init_process_group("gloo")
        torch.manual_seed(args.seed + dist.get_rank())
        dataset = Crops(64)
        sampler = DistributedSampler(dataset)
        loader = DataLoader(dataset, sampler=sampler, num_workers=4)
        """ + TRAIN,
    "the rank in one of two seedings": """\
        dist.init_process_group("gloo")
        torch.manual_seed(args.seed)
        rank = dist.get_rank()
        torch.manual_seed(args.seed + rank)
        dataset = Crops(64)
        sampler = DistributedSampler(dataset)
        loader = DataLoader(dataset, sampler=sampler, num_workers=4)
        """ + TRAIN,
    "a seed of unknown origin": """\
        dist.init_process_group("gloo")
        torch.manual_seed(make_seed())
        dataset = Crops(64)
        sampler = DistributedSampler(dataset)
        loader = DataLoader(dataset, sampler=sampler, num_workers=4)
        """ + TRAIN,
    "the launcher seeds before mp.spawn; the ranks never run it": """\
        import torch.multiprocessing as mp
        def worker(rank, n):
            dist.init_process_group("gloo", rank=rank, world_size=n)
            dataset = Crops(64)
            sampler = DistributedSampler(dataset)
            loader = DataLoader(dataset, sampler=sampler, num_workers=2)
            model = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(8, 1))
            for x in loader:
                model(x).sum().backward()
        if __name__ == "__main__":
            torch.manual_seed(0)
            mp.spawn(worker, args=(2,), nprocs=2)
        """,
    "a dataset that draws nothing (tokens)": """\
        class Tokens(Dataset):
            def __init__(self, n):
                self.n = n
                self.order = list(range(n))
                random.shuffle(self.order)  # once, in the launching process
            def __len__(self):
                return self.n
            def __getitem__(self, i):
                return torch.full((8,), float(self.order[i]))
        dist.init_process_group("gloo")
        torch.manual_seed(args.seed)
        dataset = Tokens(64)
        sampler = DistributedSampler(dataset)
        loader = DataLoader(dataset, sampler=sampler, num_workers=4)
        """ + TRAIN,
    "a generator seeded per rank": """\
        dist.init_process_group("gloo")
        torch.manual_seed(args.seed)
        g = torch.Generator()
        g.manual_seed(args.seed + dist.get_rank())
        dataset = Crops(64)
        sampler = DistributedSampler(dataset)
        loader = DataLoader(dataset, sampler=sampler, num_workers=4, generator=g)
        """ + TRAIN,
    "no workers": """\
        dist.init_process_group("gloo")
        torch.manual_seed(args.seed)
        dataset = Crops(64)
        sampler = DistributedSampler(dataset)
        loader = DataLoader(dataset, sampler=sampler, num_workers=0)
        """ + TRAIN,
    "an evaluation loader only": """\
        dist.init_process_group("gloo")
        torch.manual_seed(args.seed)
        model = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(8, 1))
        val_loader = DataLoader(Crops(16), batch_size=4, num_workers=4)
        with torch.no_grad():
            for x in val_loader:
                model(x)
        """,
    "Accelerate's device_specific seeding": """\
        from accelerate.utils import set_seed
        dist.init_process_group("gloo")
        set_seed(args.seed, device_specific=True)
        dataset = Crops(64)
        sampler = DistributedSampler(dataset)
        loader = DataLoader(dataset, sampler=sampler, num_workers=4)
        """ + TRAIN,
    "a model's own test method seeds, and nothing calls it": """\
        class Net(torch.nn.Module):
            def forward(self, x):
                return x
            def check_sample(self):
                torch.manual_seed(42)
                return self(torch.randn(2, 8))
        dist.init_process_group("gloo")
        net = Net()
        dataset = Crops(64)
        sampler = DistributedSampler(dataset)
        loader = DataLoader(dataset, sampler=sampler, num_workers=4)
        """ + TRAIN,
}


@pytest.mark.parametrize("body", list(CLEAN.values()), ids=list(CLEAN))
def test_healthy_twins_stay_clean(tmp_path: Path, body: str) -> None:
    assert ddp808(tmp_path, body) == []
