"""Shapes from session 93 (holdout 132's leftover and holdout 133's reading), each with its twin,
in our own words."""

from __future__ import annotations

from tests.unit.test_lint_session39_shapes import lint_tree
from tests.unit.test_lint_session61_shapes import _codes, _line

# ------------------------------------ a key of the dict the project's own loader read from YAML
# `opt = options.parse(args.opt)` (the helper returns what `yaml.load(f)` read), then a converter
# handing it back, `opt = options.to_none_dict(opt)`: `if opt['mode'] in ['video'] and rank <= 0:`
# is false on every config beside the script (`mode: image`), so its gather runs on no rank.
LOADED = {
    "options.py": """
        import yaml


        def parse(path):
            with open(path) as f:
                opt = yaml.safe_load(f)
            opt['is_train'] = True
            return opt


        def to_none_dict(opt):
            if isinstance(opt, dict):
                return {k: to_none_dict(v) for k, v in opt.items()}
            return opt
    """,
    "options/train_a.yml": "mode: image\nlr: 0.1\n",
    "options/train_b.yml": "mode: image\nlr: 0.2\n",
    "train.py": """
        import argparse
        import torch
        import torch.distributed as dist
        from torch.nn.parallel import DistributedDataParallel as DDP
        import options


        def main():
            parser = argparse.ArgumentParser()
            parser.add_argument("-opt", type=str)
            args = parser.parse_args()
            opt = options.parse(args.opt)
            opt = options.to_none_dict(opt)
            dist.init_process_group("gloo")
            rank = dist.get_rank()
            model = DDP(torch.nn.Linear(4, 1))
            for step in range(10):
                model(torch.randn(2, 4)).sum().backward()
                if opt['mode'] in ['video'] and rank <= 0:
                    score = torch.zeros(1)
                    dist.reduce(score, 0)
                    dist.barrier()


        if __name__ == "__main__":
            main()
    """,
}


def test_a_key_the_loaded_config_never_gives_that_value_is_a_dead_branch(tmp_path):
    found = lint_tree(tmp_path, LOADED)
    assert _codes(found, "DDP801") == []


def test_a_key_some_config_gives_that_value_keeps_the_branch(tmp_path):
    # twin: one config trains on video, so the rank-0 gather runs there
    files = dict(LOADED, **{"options/train_b.yml": "mode: video\nlr: 0.2\n"})
    found = lint_tree(tmp_path, files)
    assert len(_codes(found, "DDP801")) == 2


def test_a_key_the_code_sets_is_not_the_files_alone(tmp_path):
    # twin: the script sets the key itself; the configs no longer settle it
    files = dict(LOADED)
    files["train.py"] = files["train.py"].replace(
        "            opt = options.to_none_dict(opt)\n",
        "            opt = options.to_none_dict(opt)\n            opt['mode'] = args.opt\n")
    found = lint_tree(tmp_path, files)
    assert len(_codes(found, "DDP801")) == 2


def test_a_key_a_dict_update_sets_is_not_the_files_alone(tmp_path):
    # twin: `opt.update({"mode": ...})` may change the key the configs give
    files = dict(LOADED)
    files["train.py"] = files["train.py"].replace(
        "            opt = options.to_none_dict(opt)\n",
        "            opt = options.to_none_dict(opt)\n            opt.update({'mode': args.opt})\n")
    found = lint_tree(tmp_path, files)
    assert len(_codes(found, "DDP801")) == 2


# ------------------------------------ Accelerate's unwrap_model read off inside the call
# `accelerator.unwrap_model(model).get_loss(items)` runs the module inside the wrapper prepare()
# built: the backward that follows all-reduces nothing (DDP810), and no accumulation sync is
# wasted either (no DDP805).
UNWRAPPED = """
import torch
from accelerate import Accelerator


def main():
    accelerator = Accelerator()
    model = torch.nn.Linear(4, 1)
    opt = torch.optim.AdamW(model.parameters())
    loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(torch.randn(64, 4)), batch_size=8)
    model, opt, loader = accelerator.prepare(model, opt, loader)
    step = 0
    for epoch in range(3):
        for items in loader:
            loss = accelerator.unwrap_model(model).get_loss(items)
            accelerator.backward(loss / 4)
            if (step + 1) % 4 == 0:
                opt.step()
                opt.zero_grad()
            step += 1


if __name__ == "__main__":
    main()
"""


def test_a_loss_of_the_module_unwrapped_in_the_call_bypasses_the_wrapper(tmp_path):
    found = lint_tree(tmp_path, {"train.py": UNWRAPPED})
    assert [f.location.line for f in _codes(found, "DDP810")] == [_line(UNWRAPPED, "accelerator.backward(loss / 4)")]
    assert _codes(found, "DDP805") == []


def test_a_loss_of_the_prepared_model_itself_is_no_bypass(tmp_path):
    # twin: the wrapper's own forward; the hand-made accumulation is DDP805's
    body = UNWRAPPED.replace("accelerator.unwrap_model(model).get_loss(items)", "model(items[0]).sum()")
    found = lint_tree(tmp_path, {"train.py": body})
    assert _codes(found, "DDP810") == []
    assert len(_codes(found, "DDP805")) == 1


# ------------------------------------ a trainer reached through three star imports, on rank -1
# `from kit import *` -> kit/__init__ `from .core import *` -> core/__init__ `from .trainer import *`:
# the Trainer is the package's. Its `if self.rank == -1:` side is the one-process run's, the
# `else:` (`self.model.module.loss(batch)`) the distributed one's: DDP810 at the plain backward,
# not at apex's scaled one beside it.
STARS = {
    "kit/__init__.py": "from .core import *\n",
    "kit/core/__init__.py": "from .trainer import *\n",
    "kit/core/trainer.py": """
        import torch
        from torch.nn.parallel import DistributedDataParallel as DDP


        class Trainer:
            def __init__(self, model, data, rank=-1, fp16=False):
                self.rank = rank
                self.fp16 = fp16
                self.data = data
                self.model = model
                if self.rank != -1:
                    self.model = DDP(self.model, device_ids=[rank])
                self.optimizer = torch.optim.SGD(self.model.parameters(), lr=0.1)

            def train(self):
                for epoch in range(3):
                    for batch in self.data:
                        if self.rank == -1:
                            loss = self.model.loss(batch)
                        else:
                            loss = self.model.module.loss(batch)
                        if self.fp16:
                            from apex import amp
                            with amp.scale_loss(loss, self.optimizer) as scaled_loss:
                                scaled_loss.backward()
                        else:
                            loss.backward()
                        self.optimizer.step()
                        self.optimizer.zero_grad()
    """,
    "train.py": """
        import os
        import torch
        import torch.distributed as dist
        from kit import *


        class Net(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.fc = torch.nn.Linear(4, 1)

            def loss(self, batch):
                return self.fc(batch).sum()


        def main():
            dist.init_process_group("gloo")
            trainer = Trainer(Net(), [torch.randn(2, 4)] * 4, rank=int(os.environ["LOCAL_RANK"]))
            trainer.train()


        if __name__ == "__main__":
            main()
    """,
}


def test_a_trainer_three_star_imports_away_bypasses_on_its_distributed_side(tmp_path):
    found = lint_tree(tmp_path, STARS)
    trainer = STARS["kit/core/trainer.py"]
    assert [(f.location.file.endswith("kit/core/trainer.py"), f.location.line) for f in _codes(found, "DDP810")] == \
        [(True, _line(trainer, " loss.backward()"))]


def test_a_trainer_whose_distributed_side_runs_the_wrapper_bypasses_nothing(tmp_path):
    # twin: the distributed side runs the wrapper's forward
    files = dict(STARS)
    files["kit/core/trainer.py"] = files["kit/core/trainer.py"].replace(
        "loss = self.model.module.loss(batch)", "loss = self.model(batch).sum()")
    found = lint_tree(tmp_path, files)
    assert _codes(found, "DDP810") == []


# ------------------------------------ an accumulating step whose both sides step, then clear
# `if (i + 1) % k == 0:` holding `if not amp: opt.step(); opt.zero_grad() else: scaler.step(opt);
# scaler.update(); opt.zero_grad()`: each side steps before it clears, so the `if` around them is
# the period - not a skip that throws the gradients away.
BOTH_STEP = """
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP


def main():
    dist.init_process_group("gloo")
    model = DDP(torch.nn.Linear(4, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    scaler = torch.cuda.amp.GradScaler()
    use_amp = False
    accumulate = 4
    for i, x in enumerate(torch.randn(32, 2, 4)):
        loss = model(x).sum() / accumulate
        if not use_amp:
            loss.backward()
        else:
            scaler.scale(loss).backward()
        if (i + 1) % accumulate == 0:
            if not use_amp:
                opt.step()
                opt.zero_grad()
            else:
                scaler.step(opt)
                scaler.update()
                opt.zero_grad()


if __name__ == "__main__":
    main()
"""


def test_an_accumulation_whose_both_sides_step_is_reported(tmp_path):
    found = lint_tree(tmp_path, {"train.py": BOTH_STEP})
    assert len(_codes(found, "DDP805")) == 1


def test_a_side_that_only_clears_is_a_skip_not_accumulation(tmp_path):
    # twin: the other side clears without stepping (a skipped batch): nothing accumulates
    body = BOTH_STEP.replace("                scaler.step(opt)\n                scaler.update()\n", "")
    body = body.replace("if (i + 1) % accumulate == 0:", "if torch.isfinite(loss):")
    found = lint_tree(tmp_path, {"train.py": body})
    assert _codes(found, "DDP805") == []


# ------------------------------------ a shuffle seeded just before it, under the same tests
# `if not test_only: random.seed(seed); random.shuffle(train_set.samples)`: every rank draws the
# same order (no DDP803), whatever each process seeded with its rank before (`set_seed(seed + rank)`
# behind a flag).
SEEDED_SHUFFLE = """
import argparse
import random
import torch
import torch.distributed as dist
from torch.utils.data import DataLoader, Dataset, DistributedSampler


class Items(Dataset):
    def __init__(self):
        self.samples = list(range(100))

    def __len__(self):
        return len(self.samples)

    def __getitem__(self, i):
        return torch.tensor([float(self.samples[i])])


def set_seed(seed):
    random.seed(seed)
    torch.manual_seed(seed)


def main(flags, seed=7):
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    set_seed(seed)
    if flags.diff_seed:
        set_seed(seed + rank)
    if flags.dataset == "small":
        train_set = Items()
    elif not flags.test_only:
        train_set = Items()
        random.seed(seed)
        random.shuffle(train_set.samples)
        train_set.samples = train_set.samples[50:]
    if not flags.test_only:
        sampler = DistributedSampler(train_set)
        loader = DataLoader(train_set, sampler=sampler, batch_size=4)
        for epoch in range(3):
            sampler.set_epoch(epoch)
            for x in loader:
                pass


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--test_only", type=int, required=True)
    parser.add_argument("--dataset", required=True)
    parser.add_argument("--diff_seed", type=int, required=True)
    main(parser.parse_args())
"""


def test_a_shuffle_seeded_alike_under_the_same_test_shards_one_dataset(tmp_path):
    found = lint_tree(tmp_path, {"train.py": SEEDED_SHUFFLE})
    assert _codes(found, "DDP803") == []


def test_a_shuffle_after_only_the_rank_seed_shards_different_datasets(tmp_path):
    # twin: no seeding of its own before the shuffle; the stream is the rank's
    body = SEEDED_SHUFFLE.replace("        random.seed(seed)\n", "")
    found = lint_tree(tmp_path, {"train.py": body})
    assert len(_codes(found, "DDP803")) == 1


# ------------------------------------ a probe classifier's early stop: a backward of a plain model
# A SentEval-like classifier fitted on each rank's embeddings: `self.model = nn.Sequential(...)`
# (and `copy.deepcopy` of it), its loop stopping on its own dev accuracy. Its backward all-reduces
# nothing, so no rank waits there (no DDP809).
PROBE = {
    "probe.py": """
        import copy
        import numpy as np
        import torch
        from torch import nn


        class Probe:
            def __init__(self, dim, classes):
                self.model = nn.Sequential(nn.Linear(dim, classes))
                self.loss_fn = nn.CrossEntropyLoss()
                self.optimizer = torch.optim.Adam(self.model.parameters())

            def fit(self, X, y, devX, devy, tenacity=3):
                stop = False
                best = -1
                bad = 0
                epoch = 0
                while not stop and epoch <= 50:
                    self.epoch(X, y)
                    epoch += 1
                    accuracy = self.score(devX, devy)
                    if accuracy > best:
                        best = accuracy
                        kept = copy.deepcopy(self.model)
                    else:
                        if bad >= tenacity:
                            stop = True
                        bad += 1
                self.model = kept
                return best

            def epoch(self, X, y):
                order = np.random.permutation(len(X))
                for i in range(0, len(X), 8):
                    idx = torch.from_numpy(order[i:i + 8])
                    output = self.model(X[idx])
                    loss = self.loss_fn(output, y[idx])
                    self.optimizer.zero_grad()
                    loss.backward()
                    self.optimizer.step()

            def score(self, X, y):
                with torch.no_grad():
                    return (self.model(X).argmax(1) == y).float().mean().item()
    """,
    "train.py": """
        import torch
        import torch.distributed as dist
        from torch.nn.parallel import DistributedDataParallel as DDP
        from probe import Probe


        def main():
            dist.init_process_group("gloo")
            encoder = DDP(torch.nn.Linear(8, 4))
            opt = torch.optim.SGD(encoder.parameters(), lr=0.1)
            for step in range(5):
                encoder(torch.randn(2, 8)).sum().backward()
                opt.step()
                opt.zero_grad()
            with torch.no_grad():
                emb = encoder.module(torch.randn(32, 8))
            Probe(4, 2).fit(emb, torch.randint(0, 2, (32,)), emb, torch.randint(0, 2, (32,)))


        if __name__ == "__main__":
            main()
    """,
}


def test_a_plain_probe_models_early_stop_waits_for_no_rank(tmp_path):
    found = lint_tree(tmp_path, PROBE)
    assert _codes(found, "DDP809") == []


def test_a_probe_that_trains_the_ddp_model_splits_the_ranks(tmp_path):
    # twin: the probe is handed the DDP model itself; its backward all-reduces
    files = dict(PROBE)
    files["probe.py"] = files["probe.py"].replace(
        "            def __init__(self, dim, classes):\n                self.model = nn.Sequential(nn.Linear(dim, classes))",
        "            def __init__(self, model):\n                self.model = model")
    files["train.py"] = files["train.py"].replace("Probe(4, 2).fit(emb,", "Probe(encoder).fit(emb,")
    found = lint_tree(tmp_path, files)
    assert len(_codes(found, "DDP809")) >= 1


# ------------------------------------ a draw imported by its bare name
# `from random import sample`, then `sample(...)` in `__getitem__`: the workers draw, seeded from a
# torch generator every rank seeded alike (DDP808).
BARE_DRAW = """
import torch
import torch.distributed as dist
from random import sample
from torch.utils.data import DataLoader, Dataset, DistributedSampler


class Pairs(Dataset):
    def __init__(self):
        self.groups = [list(range(i, i + 10)) for i in range(0, 100, 10)]

    def __len__(self):
        return len(self.groups)

    def __getitem__(self, i):
        return torch.tensor(sample(self.groups[i], 3))


def main():
    dist.init_process_group("gloo")
    torch.manual_seed(72)
    dataset = Pairs()
    sampler = DistributedSampler(dataset)
    loader = DataLoader(dataset, sampler=sampler, batch_size=2, num_workers=2)
    for epoch in range(3):
        sampler.set_epoch(epoch)
        for batch in loader:
            pass


if __name__ == "__main__":
    main()
"""


def test_a_draw_imported_by_its_bare_name_draws_in_the_workers(tmp_path):
    found = lint_tree(tmp_path, {"train.py": BARE_DRAW})
    assert [f.location.line for f in _codes(found, "DDP808")] == [_line(BARE_DRAW, "loader = DataLoader")]


def test_a_bare_name_that_is_no_draw_draws_nothing(tmp_path):
    # twin: the bare name is a function of the script's own that draws nothing
    body = BARE_DRAW.replace("from random import sample\n", "").replace(
        "class Pairs(Dataset):", "def sample(items, k):\n    return items[:k]\n\n\nclass Pairs(Dataset):")
    found = lint_tree(tmp_path, {"train.py": body})
    assert _codes(found, "DDP808") == []
