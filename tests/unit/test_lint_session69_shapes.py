"""Shapes from session 69's reading of holdout 97 (after its unread score), each with its twin, in
our own words."""

from __future__ import annotations

from tests.unit.test_lint_session39_shapes import lint_tree
from tests.unit.test_lint_session61_shapes import _codes

# -------------------------------------------------- a seeding under a key of the YAML config that
# no shipped config sets (each holds it commented out) and the loader fills with None: the ranks
# are never seeded alike, so their workers' seeds differ
KEY_SEEDED = """
import argparse
import random

import numpy as np
import torch
import torch.distributed as dist
import yaml
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, Dataset, DistributedSampler


def read_config(path):
    with open(path) as f:
        config = yaml.safe_load(f)
    if not config.get("seed"):
        config["seed"] = None
    return config


def seed_all(seed):
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)


class RandomCrops(Dataset):
    def __len__(self):
        return 128

    def __getitem__(self, i):
        return torch.randn(3, 8, 8)[:, : random.randint(4, 8)]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--config", default="configs/base.yaml")
    args = parser.parse_args()
    dist.init_process_group("gloo")
    config = read_config(args.config)
    if config["seed"] is not None:
        seed_all(config["seed"])
    model = DDP(torch.nn.Linear(3, 3))
    data = RandomCrops()
    sampler = DistributedSampler(data)
    loader = DataLoader(data, batch_size=config["batch_size"], sampler=sampler, num_workers=4)
    opt = torch.optim.SGD(model.parameters(), lr=config["lr"])
    for epoch in range(config["epochs"]):
        sampler.set_epoch(epoch)
        for x in loader:
            opt.zero_grad()
            model(x.mean((2, 3))).sum().backward()
            opt.step()


if __name__ == "__main__":
    main()
"""


def _configs(seed_line: str) -> dict:
    return {"configs/base.yaml": f"{seed_line}\nbatch_size: 8\nlr: 0.1\nepochs: 2\n",
            "configs/large.yaml": f"{seed_line}\nbatch_size: 32\nlr: 0.2\nepochs: 4\n"}


def test_a_seeding_under_a_config_key_no_config_sets_never_runs(tmp_path):
    files = {"train.py": KEY_SEEDED, **_configs("#seed: 0")}
    assert _codes(lint_tree(tmp_path, files), "DDP808") == []


def test_its_twin_a_config_that_sets_the_key_seeds_every_rank_alike(tmp_path):
    files = {"train.py": KEY_SEEDED, **_configs("seed: 0")}
    assert len(_codes(lint_tree(tmp_path, files), "DDP808")) == 1


def test_its_twin_the_code_filling_the_key_with_a_seed_seeds_alike(tmp_path):
    body = KEY_SEEDED.replace('config["seed"] = None', 'config["seed"] = 1234')
    files = {"train.py": body, **_configs("#seed: 0")}
    assert len(_codes(lint_tree(tmp_path, files), "DDP808")) == 1


def test_its_twin_configs_that_are_not_the_scripts_say_nothing(tmp_path):
    # (YAML files beside the script that set none of the keys it reads are not its configs)
    files = {"train.py": KEY_SEEDED, "env/conda.yaml": "name: work\nchannels:\n  - defaults\n"}
    assert len(_codes(lint_tree(tmp_path, files), "DDP808")) == 1
