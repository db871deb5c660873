"""Shapes from session 100 (holdout 143's reading), each with its twin, in our own words."""

from __future__ import annotations

from tests.unit.test_lint_session39_shapes import lint_tree
from tests.unit.test_lint_session61_shapes import _codes, _line

# ------------------------------------------- a fold handed by a loop over constants, a call down
# Rank 0 alone evaluates after training, once per fold of `for fold in ("dev", "test")`; the
# loader builder barriers only for the training fold (`rank != 0 and fold == "train"`: the others
# wait while rank 0 builds the cache) and builds the evaluation folds' loaders without a sampler.
# Neither barrier runs on rank 0's evaluation way (no DDP801), and the training call's
# `fold="train"` never builds the sampler-less side (no DDP802). Twins: a loop that also hands
# "train" reaches the barrier on rank 0 alone; a training call handed "dev" trains on the loader
# without a sampler.
FOLDS = """
    import torch
    import torch.distributed as dist
    from torch.utils.data import DataLoader, DistributedSampler, TensorDataset
    from torch.nn.parallel import DistributedDataParallel as DDP


    def build(rank, fold="train"):
        if rank != 0 and fold == "train":
            dist.barrier()
        rows = TensorDataset(torch.randn(64, 4))
        if rank == 0 and fold == "train":
            dist.barrier()
        if fold in ("dev", "test"):
            loader = DataLoader(rows, batch_size=8, shuffle=False)
        else:
            loader = DataLoader(rows, batch_size=8, sampler=DistributedSampler(rows))
        return loader


    def score(rank, model, fold="dev"):
        loader = build(rank, fold=fold)
        with torch.no_grad():
            return sum(float(model(x).sum()) for (x,) in loader)


    def main():
        dist.init_process_group("gloo")
        rank = dist.get_rank()
        net = torch.nn.Linear(4, 1)
        model = DDP(net)
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        loader = build(rank, fold="train")
        for epoch in range(2):
            loader.sampler.set_epoch(epoch)
            for (x,) in loader:
                opt.zero_grad()
                model(x).sum().backward()
                opt.step()
        if rank != 0:
            return
        for fold in ("dev", "test"):
            print(fold, score(rank, net, fold))


    if __name__ == "__main__":
        main()
"""


def test_folds_a_loop_hands_settle_the_callees_tests(tmp_path):
    found = lint_tree(tmp_path, {"train.py": FOLDS})
    assert not _codes(found, "DDP801")
    assert not _codes(found, "DDP802")


def test_folds_a_loop_hands_the_training_fold_reach_the_barrier(tmp_path):
    body = FOLDS.replace('for fold in ("dev", "test"):', 'for fold in ("train", "dev"):')
    assert _codes(lint_tree(tmp_path, {"train.py": body}), "DDP801")


def test_training_call_handed_an_evaluation_fold_trains_without_a_sampler(tmp_path):
    body = FOLDS.replace('loader = build(rank, fold="train")', 'loader = build(rank, fold="dev")')
    body = body.replace("            loader.sampler.set_epoch(epoch)\n", "")
    [found] = _codes(lint_tree(tmp_path, {"train.py": body}), "DDP802")
    assert found.location.line == _line(body, "shuffle=False)")


# ------------------------------------------- no_sync through a closure entered after the forward
# `def maybe_no_sync(step): ... return model.no_sync() ... return ExitStack()` in the training
# method, `with maybe_no_sync(step):` round the backward only: DDP decided in the forward, so
# every micro-step all-reduces (DDP805). Twin: the forward inside the context - no finding.
CLOSURE_NO_SYNC = """
    import argparse
    import contextlib
    import torch
    import torch.distributed as dist
    from torch.nn.parallel import DistributedDataParallel as DDP


    def train(args, model, opt, batches):
        def maybe_no_sync(step):
            if (step + 1) % args.accum != 0:
                return model.no_sync()
            return contextlib.ExitStack()

        for step, x in enumerate(batches):
            loss = model(x).sum() / args.accum
            with maybe_no_sync(step):
                loss.backward()
            if (step + 1) % args.accum == 0:
                opt.step()
                opt.zero_grad()


    def main():
        p = argparse.ArgumentParser()
        p.add_argument("--accum", type=int, default=4)
        args = p.parse_args()
        dist.init_process_group("gloo")
        model = DDP(torch.nn.Linear(4, 1))
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        train(args, model, opt, [torch.randn(8, 4) for _ in range(16)])


    if __name__ == "__main__":
        main()
"""


def test_closure_no_sync_entered_after_the_forward(tmp_path):
    [found] = _codes(lint_tree(tmp_path, {"train.py": CLOSURE_NO_SYNC}), "DDP805")
    assert found.location.line == _line(CLOSURE_NO_SYNC, "loss.backward()")


def test_helper_handed_the_model_no_sync_entered_after_the_forward(tmp_path):
    # the same context from a module-level helper handed the model: its parameter is the model
    body = CLOSURE_NO_SYNC.replace(
        "def train(args, model, opt, batches):\n        def maybe_no_sync(step):\n"
        "            if (step + 1) % args.accum != 0:\n                return model.no_sync()\n"
        "            return contextlib.ExitStack()\n",
        "def maybe_no_sync(net, step, accum):\n        if (step + 1) % accum != 0:\n"
        "            return net.no_sync()\n        return contextlib.ExitStack()\n\n\n"
        "    def train(args, model, opt, batches):\n")
    body = body.replace("with maybe_no_sync(step):", "with maybe_no_sync(model, step, args.accum):")
    assert "def maybe_no_sync(net, step, accum)" in body
    [found] = _codes(lint_tree(tmp_path, {"train.py": body}), "DDP805")
    assert found.location.line == _line(body, "loss.backward()")


def test_closure_no_sync_round_the_forward(tmp_path):
    body = CLOSURE_NO_SYNC.replace(
        "            loss = model(x).sum() / args.accum\n            with maybe_no_sync(step):\n",
        "            with maybe_no_sync(step):\n                loss = model(x).sum() / args.accum\n")
    assert not _codes(lint_tree(tmp_path, {"train.py": body}), "DDP805")


# ------------------------------------------- an accumulation period every config leaves at 0
# `if config.train.accumulation_steps > 1:` round the accumulating side, the YAML every config
# bases itself on setting `accumulation_steps: 0` (an OmegaConf `_base_` tree): no launch with
# them accumulates (no DDP805). Twin: the base config sets 4 - the warning.
ACCUM_CONFIG = """
    import argparse
    import torch
    import torch.distributed as dist
    from omegaconf import OmegaConf
    from torch.nn.parallel import DistributedDataParallel as DDP


    def train(config, model, opt, batches):
        for idx, x in enumerate(batches):
            loss = model(x).sum()
            if config.train.accumulation_steps > 1:
                loss = loss / config.train.accumulation_steps
                loss.backward()
                if (idx + 1) % config.train.accumulation_steps == 0:
                    opt.step()
                    opt.zero_grad()
            else:
                opt.zero_grad()
                loss.backward()
                opt.step()


    def main():
        p = argparse.ArgumentParser()
        p.add_argument("--cfg", required=True)
        args = p.parse_args()
        config = OmegaConf.load(args.cfg)
        dist.init_process_group("gloo")
        model = DDP(torch.nn.Linear(4, 1))
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        train(config, model, opt, [torch.randn(8, 4) for _ in range(16)])


    if __name__ == "__main__":
        main()
"""

BASE_YAML = """
    train:
      epochs: 30
      accumulation_steps: 0
"""

RUN_YAML = """
    _base_: '../default.yml'
    train:
      epochs: 10
"""


def test_accumulation_every_config_leaves_off(tmp_path):
    files = {"train.py": ACCUM_CONFIG, "configs/default.yml": BASE_YAML, "configs/runs/pretrain.yml": RUN_YAML}
    assert not _codes(lint_tree(tmp_path, files), "DDP805")


def test_accumulation_the_base_config_turns_on(tmp_path):
    files = {"train.py": ACCUM_CONFIG, "configs/default.yml": BASE_YAML.replace("accumulation_steps: 0",
                                                                                "accumulation_steps: 4"),
             "configs/runs/pretrain.yml": RUN_YAML}
    assert _codes(lint_tree(tmp_path, files), "DDP805")


# ------------------------------------------- a rank that only places a progress bar
# `AudioSet(..., bar_rank=rank)` whose constructor reads it only as `tqdm(files,
# position=bar_rank)`: the dataset holds the same items on every rank, so its DistributedSampler
# shards once (no DDP803). Twin: the constructor keeps `files[bar_rank::4]` - sharded twice.
BAR_RANK = """
    import torch
    import torch.distributed as dist
    from torch.utils.data import DataLoader, Dataset, DistributedSampler
    from torch.nn.parallel import DistributedDataParallel as DDP
    from tqdm import tqdm


    class AudioSet(Dataset):
        def __init__(self, files, bar_rank=0):
            self.items = []
            for name in tqdm(files, total=len(files), position=bar_rank):
                self.items.append(torch.randn(4))

        def __len__(self):
            return len(self.items)

        def __getitem__(self, i):
            return self.items[i]


    def main():
        dist.init_process_group("gloo")
        rank = dist.get_rank()
        data = AudioSet([f"clip{i}.wav" for i in range(64)], bar_rank=rank)
        sampler = DistributedSampler(data)
        loader = DataLoader(data, batch_size=8, sampler=sampler)
        model = DDP(torch.nn.Linear(4, 1))
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        for epoch in range(2):
            sampler.set_epoch(epoch)
            for x in loader:
                opt.zero_grad()
                model(x).sum().backward()
                opt.step()


    if __name__ == "__main__":
        main()
"""


def test_rank_that_places_a_progress_bar_shards_nothing(tmp_path):
    assert not _codes(lint_tree(tmp_path, {"train.py": BAR_RANK}), "DDP803")


def test_rank_that_picks_the_files_shards_them(tmp_path):
    body = BAR_RANK.replace("for name in tqdm(files, total=len(files), position=bar_rank):",
                            "for name in tqdm(files[bar_rank::4], position=bar_rank):")
    assert _codes(lint_tree(tmp_path, {"train.py": body}), "DDP803")


# ------------------------------------------- a loss dict's own keys rewritten in place
# `for key in losses: losses[key] = losses[key][0]` only rewrites the keys the dict holds (each
# loss term the code names), so the per-key all_reduce that follows runs as many times on every
# rank (no DDP807). Twin: a key per task id the batch holds - each rank's own count.
LOSS_KEYS = """
    import torch
    import torch.distributed as dist
    from torch.nn.parallel import DistributedDataParallel as DDP


    def step(model, opt, batch, world):
        out = model(batch["x"])
        losses = {}
        losses["mse"] = ((out - batch["y"]) ** 2).mean(0)
        losses["l1"] = (out - batch["y"]).abs().mean(0)
        for key in losses:
            if len(losses[key].shape) > 0:
                losses[key] = losses[key][0]
        loss = torch.stack(list(losses.values())).sum()
        opt.zero_grad()
        loss.backward()
        opt.step()
        for name, value in losses.items():
            value = value.detach() / world
            dist.all_reduce(value)
            losses[name] = value
        return losses


    def main():
        dist.init_process_group("gloo")
        model = DDP(torch.nn.Linear(4, 1))
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        for _ in range(4):
            step(model, opt, {"x": torch.randn(8, 4), "y": torch.randn(8, 1), "task": torch.randint(0, 3, (8,))},
                 dist.get_world_size())


    if __name__ == "__main__":
        main()
"""


def test_loss_keys_rewritten_in_place_are_fixed(tmp_path):
    assert not _codes(lint_tree(tmp_path, {"train.py": LOSS_KEYS}), "DDP807")


def test_loss_keys_named_by_the_batch_are_the_data(tmp_path):
    body = LOSS_KEYS.replace("        for key in losses:\n",
                             "        for task in torch.unique(batch[\"task\"]).tolist():\n"
                             "            losses[task] = out.mean(0)\n"
                             "        for key in losses:\n")
    [found] = _codes(lint_tree(tmp_path, {"train.py": body}), "DDP807")
    assert found.location.line == _line(body, "dist.all_reduce(value)")


# The same rewrite where the dict's values come from the batch a loop over the loader holds (the
# dict is then a value of the data, and a loop over it a loop over the data): still its own keys.
LOSS_KEYS_IN_LOOP = """
    import torch
    import torch.distributed as dist
    from torch.nn.parallel import DistributedDataParallel as DDP


    def train(model, opt, loader, world):
        for batch in loader:
            out = model(batch["x"])
            losses = {}
            losses["mse"] = ((out - batch["y"]) ** 2).mean(0)
            losses["scale"] = batch["y"].abs().mean(0)
            for key in losses:
                losses[key] = losses[key].reshape(-1)[0]
            loss = torch.stack(list(losses.values())).sum()
            opt.zero_grad()
            loss.backward()
            opt.step()
            for name, value in losses.items():
                value = value.detach() / world
                dist.all_reduce(value)


    def main():
        dist.init_process_group("gloo")
        model = DDP(torch.nn.Linear(4, 1))
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        loader = [{"x": torch.randn(8, 4), "y": torch.randn(8, 1)} for _ in range(4)]
        train(model, opt, loader, dist.get_world_size())


    if __name__ == "__main__":
        main()
"""


def test_loss_keys_rewritten_in_place_in_a_loop_over_the_data(tmp_path):
    assert not _codes(lint_tree(tmp_path, {"train.py": LOSS_KEYS_IN_LOOP}), "DDP807")


# ------------------------------------------- a yacs seed every config leaves at -1
# `cfg = CN(new_allowed=True)`, `cfg.SEED_VALUE = -1` in the config module, `SEED_VALUE: -1` in
# the YAML beside it, and `if cfg.SEED_VALUE >= 0: torch.manual_seed(cfg.SEED_VALUE)`: no run
# seeds, so each process keeps the seed torch drew for it and the workers differ (no DDP808).
# Twin: a default of 7 seeds every rank alike.
YACS_CFG = """
    from yacs.config import CfgNode as CN

    cfg = CN(new_allowed=True)
    cfg.OUTPUT_DIR = "results"
    cfg.SEED_VALUE = -1
    cfg.TRAIN = CN(new_allowed=True)
    cfg.TRAIN.NUM_WORKERS = 4
"""

YACS_YAML = """
    SEED_VALUE: -1
    TRAIN:
      NUM_WORKERS: 8
"""

YACS_TRAIN = """
    import random
    import torch
    import torch.distributed as dist
    from torch.utils.data import DataLoader, Dataset, DistributedSampler
    from torch.nn.parallel import DistributedDataParallel as DDP
    from core.cfgs import cfg


    class Jitter(Dataset):
        def __len__(self):
            return 64

        def __getitem__(self, i):
            return torch.randn(4) * random.uniform(0.5, 1.5)


    def main():
        dist.init_process_group("gloo")
        data = Jitter()
        sampler = DistributedSampler(data)
        loader = DataLoader(data, batch_size=8, sampler=sampler, num_workers=cfg.TRAIN.NUM_WORKERS)
        model = DDP(torch.nn.Linear(4, 1))
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        for epoch in range(2):
            sampler.set_epoch(epoch)
            for x in loader:
                opt.zero_grad()
                model(x).sum().backward()
                opt.step()


    if __name__ == "__main__":
        if cfg.SEED_VALUE >= 0:
            random.seed(cfg.SEED_VALUE)
            torch.manual_seed(cfg.SEED_VALUE)
        main()
"""


def test_yacs_seed_every_config_leaves_unset(tmp_path):
    files = {"train.py": YACS_TRAIN, "core/__init__.py": "", "core/cfgs.py": YACS_CFG,
             "configs/run.yaml": YACS_YAML}
    assert not _codes(lint_tree(tmp_path, files), "DDP808")


def test_yacs_seed_set_by_default(tmp_path):
    files = {"train.py": YACS_TRAIN, "core/__init__.py": "", "core/cfgs.py": YACS_CFG.replace("= -1", "= 7"),
             "configs/run.yaml": YACS_YAML.replace("-1", "7")}
    [found] = _codes(lint_tree(tmp_path, files), "DDP808")
    assert found.location.line == _line(YACS_TRAIN, "loader = DataLoader(")
