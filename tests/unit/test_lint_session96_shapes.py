"""Shapes from session 96 (holdout 135's leftovers and holdout 136's reading), each with its twin,
in our own words."""

from __future__ import annotations

from tests.unit.test_lint_session39_shapes import lint_tree
from tests.unit.test_lint_session61_shapes import _codes, _line

# ------------------------------------------------- a hyperparameter grid over the YAML config
# `for cnf in grid(config): Handler(cnf).run()`, where the project's grid(kwargs) returns a list
# comprehension of dicts built from the config's items: a scalar the YAML sets (`task: regress`) is
# the same in every point. The constructor's `if cfg['task'] == 'probe':` side, which wraps a model
# with BatchNorm in DDP, is taken by no config: the field holds the DDP model without buffers (no
# DDP801 on rank 0's forward), and the probe epoch method, which only that side calls, never runs
# (no DDP809 there). Twin: the config picks the probe task.
GRID = {
    "train.py": """
        import itertools
        import yaml
        import torch.distributed as dist
        from handler import Handler


        def grid(kwargs):
            lists = {k: v for k, v in kwargs.items() if isinstance(v, list)}
            return [dict({k: v for k, v in kwargs.items() if not isinstance(v, list)}, **dict(zip(lists, point)))
                    for point in itertools.product(*lists.values())]


        if __name__ == "__main__":
            dist.init_process_group("gloo")
            with open("config.yaml") as f:
                config = yaml.safe_load(f)
            for cnf in grid(config):
                Handler(cnf).run()
    """,
    "handler.py": """
        import torch
        import torch.distributed as dist
        from torch import nn
        from torch.nn.parallel import DistributedDataParallel as DDP
        from torch.utils.data import DataLoader, DistributedSampler, TensorDataset


        class Handler:
            def __init__(self, cfg):
                self.rank = dist.get_rank()
                if cfg['task'] == 'probe':
                    self.model = DDP(nn.Sequential(nn.Linear(8, 8), nn.BatchNorm1d(8)))
                else:
                    self.model = DDP(nn.Linear(8, 8))
                self.cfg = cfg

            def _epoch_probe(self, loader):
                for x, y in loader:
                    loss = self.model(x).sum()
                    if torch.sum(y > 0).item() <= 0:
                        continue
                    loss.backward()

            def _epoch_regress(self, loader):
                for x, y in loader:
                    self.model(x).sum().backward()

            def run(self):
                data = TensorDataset(torch.zeros(16, 8), torch.zeros(16))
                sampler = DistributedSampler(data)
                loader = DataLoader(data, sampler=sampler)
                for epoch in range(2):
                    sampler.set_epoch(epoch)
                    if self.cfg['task'] == 'probe':
                        self._epoch_probe(loader)
                    else:
                        self._epoch_regress(loader)
                if self.rank == 0:
                    with torch.no_grad():
                        self.model(torch.zeros(2, 8))
    """,
    "config.yaml": """
        task: regress
        lr: [0.1, 0.01]
    """,
}


def test_grid_point_of_the_config_settles_the_task(tmp_path):
    found = lint_tree(tmp_path, GRID)
    assert not _codes(found, "DDP801") and not _codes(found, "DDP809")


def test_grid_point_of_the_config_taking_the_ddp_side(tmp_path):
    found = lint_tree(tmp_path, {**GRID, "config.yaml": "task: probe\nlr: [0.1, 0.01]\n"})
    assert [f.location.line for f in _codes(found, "DDP809")] == [_line(GRID["handler.py"], "if torch.sum(y > 0)")]
    assert len(_codes(found, "DDP801")) == 1


def test_grid_helper_that_builds_its_points_otherwise(tmp_path):
    # (a grid helper whose points are not made of the config's items: nothing known of them)
    body = GRID["train.py"].replace(
        "return [dict({k: v for k, v in kwargs.items() if not isinstance(v, list)}, **dict(zip(lists, point)))",
        "return [dict(task='probe', **dict(zip(lists, point)))")
    found = lint_tree(tmp_path, {**GRID, "train.py": body})
    assert _codes(found, "DDP809")


# ------------------------------------------------- a DeepSpeed engine kept in a field
# `self.model, self.optimizer, _, _ = deepspeed.initialize(...)` in the constructor, then a
# `continue` on the rank's own batch before `self.model.backward(loss)`: the engine reduces the
# gradients in its backward, so the rank that skips leaves the others waiting (DDP809). Twin: the
# field holds the plain module (no engine, no DDP: nothing collective to skip).
ENGINE = {
    "train.py": """
        import deepspeed
        import torch
        from torch import nn
        from torch.utils.data import DataLoader, DistributedSampler, TensorDataset


        class Runner:
            def __init__(self):
                net = nn.Linear(8, 1)
                self.model, self.optimizer, _, _ = deepspeed.initialize(
                    model=net, model_parameters=net.parameters(), config="ds.json")

            def epoch(self, loader):
                for x, y in loader:
                    loss = self.model(x).sum()
                    if torch.sum(y > 0).item() <= 0:
                        continue
                    self.model.backward(loss)
                    self.model.step()


        if __name__ == "__main__":
            deepspeed.init_distributed()
            data = TensorDataset(torch.zeros(16, 8), torch.zeros(16))
            sampler = DistributedSampler(data)
            runner = Runner()
            for epoch in range(2):
                sampler.set_epoch(epoch)
                runner.epoch(DataLoader(data, sampler=sampler))
    """,
}


def test_deepspeed_engine_field_backward_skipped_on_a_batch(tmp_path):
    found = _codes(lint_tree(tmp_path, ENGINE), "DDP809")
    assert [f.location.line for f in found] == [_line(ENGINE["train.py"], "if torch.sum(y > 0)")]


def test_plain_field_backward_skipped_on_a_batch(tmp_path):
    body = ENGINE["train.py"].replace("""self.model, self.optimizer, _, _ = deepspeed.initialize(
                    model=net, model_parameters=net.parameters(), config="ds.json")""",
                                      "self.model, self.optimizer = net, torch.optim.SGD(net.parameters(), 0.1)")
    assert "deepspeed.initialize" not in body
    assert not _codes(lint_tree(tmp_path, {"train.py": body}), "DDP809")


# ------------------------------------------------- an option every launch gives from the shell
# `torchrun --nproc_per_node=$N run.py --n_gpu=$N`: the launch script works the count out, so the
# declared default (1) is no launch's value. The sampler built under `if n_gpu > 1:` - the same
# switch the process group is set up under - may be the run's: no DDP802 error on a loader that
# has "no sampler" on the default path alone. Twin: the launch hands --n_gpu=1, and the sampler
# side is taken by no launch.
SHELL_COUNT = {
    "run.py": """
        import argparse
        import torch
        import torch.distributed as dist
        from torch.nn.parallel import DistributedDataParallel as DDP
        from torch.utils.data import DataLoader, DistributedSampler, TensorDataset


        def ddp_setup():
            dist.init_process_group("gloo")


        def get_loader(dataset, sampler=None):
            return DataLoader(dataset, sampler=sampler, shuffle=sampler is None, batch_size=4)


        def load_objects(n_gpu):
            data = TensorDataset(torch.zeros(16, 8))
            sampler = None
            if n_gpu > 1:
                sampler = DistributedSampler(data)
            return get_loader(data, sampler), sampler


        def run(args):
            if args.n_gpu > 1:
                ddp_setup()
            loader, sampler = load_objects(args.n_gpu)
            model = DDP(torch.nn.Linear(8, 1))
            for epoch in range(2):
                if sampler is not None:
                    sampler.set_epoch(epoch)
                for (x,) in loader:
                    model(x).sum().backward()


        if __name__ == "__main__":
            parser = argparse.ArgumentParser()
            parser.add_argument("--n_gpu", type=int, default=1)
            run(parser.parse_args())
    """,
    "run.sh": """
        N=$(echo $GPUS | tr ',' ' ' | wc -w)
        torchrun --standalone --nproc_per_node=$N run.py --n_gpu=$N
    """,
}


def test_option_every_launch_gives_from_the_shell_is_not_its_default(tmp_path):
    assert not _codes(lint_tree(tmp_path, SHELL_COUNT, "run.py"), "DDP802")


def _program(tmp_path, files: dict[str, str], script: str):
    import textwrap
    from ddpdoctor.lint.program import Program
    from ddpdoctor.lint.sources import load_program
    for name, body in files.items():
        (tmp_path / name).write_text(textwrap.dedent(body).lstrip("\n"))
    return Program(load_program(str(tmp_path / script), []))


def test_option_every_launch_gives_from_the_shell_has_no_known_value(tmp_path):
    program = _program(tmp_path, SHELL_COUNT, "run.py")
    assert "n_gpu" not in program.option_defaults() and "n_gpu" in program.launched_unknown()


def test_option_a_launch_gives_as_one_is_known(tmp_path):
    launch = SHELL_COUNT["run.sh"].replace("--n_gpu=$N", "--n_gpu=1")
    program = _program(tmp_path, {**SHELL_COUNT, "run.sh": launch}, "run.py")
    assert program.option_defaults()["n_gpu"] == 1 and not program.launched_unknown()


# ------------------------------------------------- a block a loop runs on its first pass only
# `first = True` before the loop, `if first:` blocks inside, the last of which sets it False on
# every pass: the model a helper gets (`load_weights(model)`, whose rank-0 `model.state_dict()`
# would all-gather an FSDP model) is the plain module there, built and wrapped in FSDP further
# down the same first pass; the wrapped binding never reaches the call through the loop (no
# DDP801). Twin: nothing resets the flag, so a later pass hands the helper the FSDP model.
FIRST_PASS = {
    "train.py": """
        import torch
        import torch.distributed as dist
        from torch.distributed.fsdp import FullyShardedDataParallel as FSDP


        def load_weights(model, path):
            if dist.get_rank() == 0:
                state = model.state_dict()
                torch.save(state, path)


        def main():
            dist.init_process_group("gloo")
            first = True
            model = None
            epoch = 0
            while epoch < 4:
                for key in ["era5", "prism"]:
                    if first:
                        model = torch.nn.Linear(8, 8)
                        load_weights(model, "init.pt")
                        model = FSDP(model)
                    model(torch.zeros(2, 8)).sum().backward()
                    if first:
                        first = False
                epoch += 1


        if __name__ == "__main__":
            main()
    """,
}


def test_first_pass_block_hands_the_helper_the_plain_module(tmp_path):
    assert not _codes(lint_tree(tmp_path, FIRST_PASS), "DDP801")


def test_flag_never_reset_lets_the_wrapped_model_come_round(tmp_path):
    body = FIRST_PASS["train.py"].replace("""                    if first:
                        first = False
""", "")
    assert "first = False" not in body
    hits = _codes(lint_tree(tmp_path, {"train.py": body}), "DDP801")
    assert [f.location.line for f in hits] == [_line(body, "state = model.state_dict()")]


# ------------------------------------------------- a path suffixed on some ranks, tested for None
# `if pretrain is not None and rank < tp: pretrain = pretrain + "_rank_" + str(rank)`: a path
# made from itself where it was set stays set; `if pretrain is None and ckpt is None:` then
# answers alike on every rank (no DDP809 on the barrier behind it). Twin: the rank-only side sets
# it to None, and the ranks part there.
NONE_KEPT = {
    "train.py": """
        import argparse
        import torch
        import torch.distributed as dist


        def prepare(model, pretrain, ckpt, tp):
            rank = dist.get_rank()
            if pretrain is not None and rank < tp:
                pretrain = pretrain + "_rank_" + str(rank)
                model.load_state_dict(torch.load(pretrain))
            if pretrain is None and ckpt is None:
                dist.barrier()


        if __name__ == "__main__":
            parser = argparse.ArgumentParser()
            parser.add_argument("--pretrain", default=None)
            parser.add_argument("--ckpt", default=None)
            args = parser.parse_args()
            dist.init_process_group("gloo")
            prepare(torch.nn.Linear(2, 2), args.pretrain, args.ckpt, 2)
    """,
}


def test_path_suffixed_on_some_ranks_is_set_on_all_alike(tmp_path):
    found = lint_tree(tmp_path, NONE_KEPT)
    assert not _codes(found, "DDP809") and not _codes(found, "DDP801")


def test_path_cleared_on_some_ranks_parts_them(tmp_path):
    # (the barrier is then one only some ranks reach: DDP801 tells it)
    body = NONE_KEPT["train.py"].replace('pretrain = pretrain + "_rank_" + str(rank)', "pretrain = None")
    hits = _codes(lint_tree(tmp_path, {"train.py": body}), "DDP801")
    assert [f.location.line for f in hits] == [_line(body, "dist.barrier()")]


# ------------------------------------------------- what a builder's dict hands out by .values()
# `train_tf, eval_tf, _ = ZOO[args.dataset](root).values()`, the builder returning a dict literal
# whose first value is a random Compose: ImageFolder's transform draws in the loader's workers,
# seeded alike on every rank (DDP808). Twin: the builder's transforms draw nothing.
VALUES = {
    "train.py": """
        import argparse
        import torch
        import torch.distributed as dist
        import torchvision
        from torchvision import transforms
        from torch.nn.parallel import DistributedDataParallel as DDP
        from torch.utils.data import DataLoader, DistributedSampler


        def cifar(root):
            train = transforms.Compose([transforms.RandomHorizontalFlip(), transforms.ToTensor()])
            plain = transforms.Compose([transforms.ToTensor()])
            return {"train_transformation": train, "eval_transformation": plain, "root": root}


        ZOO = {"cifar10": cifar}


        if __name__ == "__main__":
            parser = argparse.ArgumentParser()
            parser.add_argument("--dataset", default="cifar10")
            args = parser.parse_args()
            dist.init_process_group("gloo")
            torch.manual_seed(8)
            make = ZOO[args.dataset]
            train_tf, eval_tf, _ = make("data").values()
            data = torchvision.datasets.ImageFolder("data/train", train_tf)
            sampler = DistributedSampler(data)
            loader = DataLoader(data, sampler=sampler, num_workers=4)
            model = DDP(torch.nn.Linear(8, 1))
            for epoch in range(2):
                sampler.set_epoch(epoch)
                for x, y in loader:
                    model(x.flatten(1)).sum().backward()
    """,
}


def test_transform_handed_out_by_a_builders_dict_values(tmp_path):
    hits = _codes(lint_tree(tmp_path, VALUES), "DDP808")
    assert [f.location.line for f in hits] == [_line(VALUES["train.py"], "loader = DataLoader(")]


def test_builders_dict_of_plain_transforms(tmp_path):
    body = VALUES["train.py"].replace("[transforms.RandomHorizontalFlip(), transforms.ToTensor()]",
                                      "[transforms.ToTensor()]")
    assert not _codes(lint_tree(tmp_path, {"train.py": body}), "DDP808")


# ------------------------------------------------- a collate lambda whose helpers draw further down
# `collate_fn=lambda x: collate(x, train=True)`, collate -> load_batch -> load_clip ->
# pick_frames, whose np.random picks the frames: the workers run it, seeded alike (DDP808). Twin:
# pick_frames takes every frame.
COLLATE = {
    "train.py": """
        import numpy as np
        import torch
        import torch.distributed as dist
        from torch.nn.parallel import DistributedDataParallel as DDP
        from torch.utils.data import DataLoader, DistributedSampler
        from clips import collate


        class Names(torch.utils.data.Dataset):
            def __len__(self):
                return 32

            def __getitem__(self, i):
                return {"name": str(i), "frames": 40}


        if __name__ == "__main__":
            dist.init_process_group("gloo")
            torch.manual_seed(42)
            data = Names()
            sampler = DistributedSampler(data)
            loader = DataLoader(data, sampler=sampler, num_workers=4, batch_size=2,
                                collate_fn=lambda x: collate(x, train=True))
            model = DDP(torch.nn.Linear(8, 1))
            for epoch in range(2):
                sampler.set_epoch(epoch)
                for batch in loader:
                    model(batch).sum().backward()
    """,
    "clips.py": """
        import numpy as np
        import torch


        def pick_frames(n, keep):
            return sorted(np.random.permutation(np.arange(n))[:keep])


        def load_clip(item, train):
            index = pick_frames(item["frames"], 16) if train else list(range(16))
            return torch.zeros(len(index), 8)


        def load_batch(items, train):
            return torch.stack([load_clip(i, train) for i in items]).mean(1)


        def collate(items, train):
            return load_batch(items, train)
    """,
}


def test_collate_helper_three_calls_down_draws(tmp_path):
    hits = _codes(lint_tree(tmp_path, COLLATE), "DDP808")
    assert [f.location.line for f in hits] == [_line(COLLATE["train.py"], "loader = DataLoader(")]


def test_collate_helpers_that_draw_nothing(tmp_path):
    clips = COLLATE["clips.py"].replace("sorted(np.random.permutation(np.arange(n))[:keep])", "list(range(keep))")
    assert not _codes(lint_tree(tmp_path, {**COLLATE, "clips.py": clips}), "DDP808")


# ------------------------------------------------- a dataset that reseeds its workers itself
# The dataset's `__getitem__` reseeds torch, numpy and random from the worker's id on its first
# item: that decides what worker k draws on every rank, whatever seed the loader handed it. One
# DDP808, at the reseed, not a second at the loader for the process's alike seed. Twin: the
# dataset leaves its workers' seeds alone, and the loader's finding stands.
RESEED = {
    "train.py": """
        import random
        import numpy as np
        import torch
        import torch.distributed as dist
        from torch.nn.parallel import DistributedDataParallel as DDP
        from torch.utils.data import DataLoader, Dataset, DistributedSampler


        class Jitter:
            def __call__(self, x):
                return x * np.random.uniform(0.8, 1.2)


        class Pairs(Dataset):
            def __init__(self, aug=None):
                self.init_seed = False
                self.aug = aug

            def __len__(self):
                return 32

            def __getitem__(self, i):
                if not self.init_seed:
                    info = torch.utils.data.get_worker_info()
                    if info is not None:
                        torch.manual_seed(info.id)
                        np.random.seed(info.id)
                        random.seed(info.id)
                        self.init_seed = True
                x = torch.zeros(8)
                if self.aug is not None:
                    x = self.aug(x)
                return x


        class Flying(Pairs):
            def __init__(self):
                super().__init__(aug=Jitter())


        if __name__ == "__main__":
            dist.init_process_group("gloo")
            torch.manual_seed(1234)
            data = Flying()
            sampler = DistributedSampler(data)
            loader = DataLoader(data, sampler=sampler, num_workers=4)
            model = DDP(torch.nn.Linear(8, 1))
            for epoch in range(2):
                sampler.set_epoch(epoch)
                for x in loader:
                    model(x).sum().backward()
    """,
}


def test_dataset_reseeding_its_workers_is_the_one_finding(tmp_path):
    hits = _codes(lint_tree(tmp_path, RESEED), "DDP808")
    assert [f.location.line for f in hits] == [_line(RESEED["train.py"], "torch.manual_seed(info.id)")]


def test_dataset_leaving_its_workers_seeds_alone(tmp_path):
    full = RESEED["train.py"]
    body = full[:full.index("if not self.init_seed:")] + full[full.index("x = torch.zeros(8)"):]
    assert "info.id" not in body
    hits = _codes(lint_tree(tmp_path, {"train.py": body}), "DDP808")
    assert [f.location.line for f in hits] == [_line(body, "loader = DataLoader(")]


# ------------------------------------------------- a DistributedSampler subclass that never shuffles
# `super().__init__(dataset=inds, ..., shuffle=False)`, then an `__iter__` handing out what a
# batch sampler of its own draws: set_epoch would only reseed the base's shuffle, which is off (no
# DDP804). Twin: the base is handed shuffle=True, and its order never changes without set_epoch.
UNSHUFFLED = {
    "train.py": """
        import torch
        import torch.distributed as dist
        from torch.nn.parallel import DistributedDataParallel as DDP
        from torch.utils.data import BatchSampler, DataLoader, RandomSampler, TensorDataset
        from torch.utils.data.distributed import DistributedSampler


        class SplitBatches(DistributedSampler):
            def __init__(self, inds, batch_size, num_replicas, rank):
                super().__init__(dataset=inds, num_replicas=num_replicas, rank=rank, shuffle=False)
                mine = list(super().__iter__())
                self.batches = BatchSampler(RandomSampler(mine), batch_size, drop_last=True)

            def __iter__(self):
                yield from self.batches

            def __len__(self):
                return len(self.batches)


        if __name__ == "__main__":
            dist.init_process_group("gloo")
            data = TensorDataset(torch.zeros(64, 8))
            batches = SplitBatches(list(range(64)), 8, dist.get_world_size(), dist.get_rank())
            loader = DataLoader(data, batch_sampler=batches)
            model = DDP(torch.nn.Linear(8, 1))
            for epoch in range(3):
                for (x,) in loader:
                    model(x).sum().backward()
    """,
}


def test_sampler_subclass_handing_its_base_shuffle_off(tmp_path):
    assert not _codes(lint_tree(tmp_path, UNSHUFFLED), "DDP804")


def test_sampler_subclass_handing_its_base_shuffle_on(tmp_path):
    body = UNSHUFFLED["train.py"].replace("rank=rank, shuffle=False)", "rank=rank, shuffle=True)")
    assert _codes(lint_tree(tmp_path, {"train.py": body}), "DDP804")
