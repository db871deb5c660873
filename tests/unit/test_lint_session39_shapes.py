"""Shapes from session 39 (holdout 45 and the read holdouts' residue). Each with its twin, written
in our own words."""

from __future__ import annotations

import textwrap

from ddpdoctor.lint.driver import gather, lint_results
from tests.unit.test_lint_round17_shapes import lint_plain
from tests.unit.test_lint_round50_shapes import at, line_of


def lint_tree(tmp_path, files: dict[str, str], script: str = "train.py"):
    """Lint `script` among files written at their relative paths (packages included)."""
    for name, body in files.items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(body).lstrip("\n"))
    return [f for r in lint_results(gather(str(tmp_path / script)), set()) for f in r.findings]


# -------------------------------------------------- a package's module picked by a configured name
# (`getattr(func, cfg.fn).main(cfg)`: each submodule the package holds that has `main` may run)
DISPATCH = """
import os
import func


def main():
    getattr(func, os.environ.get("TRAIN_FN", "train")).main({})


if __name__ == "__main__":
    main()
"""
PICKED_TRAIN = """
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler


def main(cfg):
    dist.init_process_group("gloo")
    ds = TensorDataset(torch.randn(64, 4), torch.randn(64, 1))
    loader = DataLoader(ds, batch_size=8{sampler})  # the training loader
    model = DDP(torch.nn.Linear(4, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for epoch in range(2):
        {set_epoch}
        for x, y in loader:
            opt.zero_grad()
            torch.nn.functional.mse_loss(model(x), y).backward()
            opt.step()
"""


def _dispatched(tmp_path, sharded: bool):
    body = PICKED_TRAIN.replace("{sampler}", ", sampler=DistributedSampler(ds)" if sharded else ", shuffle=True")
    body = body.replace("{set_epoch}", "loader.sampler.set_epoch(epoch)" if sharded else "pass")
    return lint_tree(tmp_path, {"train.py": DISPATCH, "func/__init__.py": "from . import train\n",
                                "func/train.py": body})


def test_a_submodule_a_configured_name_picks_is_read_and_its_unsharded_loader_found(tmp_path):
    found = _dispatched(tmp_path, sharded=False)
    assert [(f.location.file.endswith("func/train.py"), f.location.line) for f in found if f.code == "DDP802"] == \
        [(True, line_of(PICKED_TRAIN, "the training loader"))]


def test_twin_the_picked_submodule_shards_its_loader(tmp_path):
    found = _dispatched(tmp_path, sharded=True)
    assert [f.code for f in found if f.severity.value in ("error", "warning")] == []


# -------------------------------------------------- a torchvision dataset subclassed, drawing in workers
# (picked by a name only the run knows: the local dataset classes are the candidates, a subclass of
# torchvision's CIFAR10 among them)
SEEDED_ALIKE = """
import os
import random
import torch
import torch.distributed as dist
import torchvision
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader
from torch.utils.data.distributed import DistributedSampler


class Imbalanced(torchvision.datasets.CIFAR10):
    def __getitem__(self, index):
        img, target = self.data[index], self.targets[index]
        {draw}
        return img, target


def main():
    dist.init_process_group("gloo")
    torch.manual_seed(0)  # every rank alike
    ds = eval(os.environ.get("DATASET", "Imbalanced"))("./data", train=True, download=True)  # picked by name
    loader = DataLoader(ds, batch_size=8, num_workers=2, sampler=DistributedSampler(ds))
    model = DDP(torch.nn.Linear(4, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for epoch in range(2):
        loader.sampler.set_epoch(epoch)
        for x, y in loader:
            opt.zero_grad()
            model(x).sum().backward()
            opt.step()


if __name__ == "__main__":
    main()
"""


def test_a_torchvision_dataset_subclass_that_draws_gets_the_same_worker_seeds_on_every_rank(tmp_path):
    source = SEEDED_ALIKE.replace("{draw}", "index = random.choice(range(len(self.data)))")
    found = lint_plain(tmp_path, source)
    assert [f.code for f in found if f.code == "DDP808"] == ["DDP808"]
    assert line_of(source, "every rank alike") in [int(s.rpartition(":")[2]) for f in found if f.code == "DDP808"
                                                   for s in f.evidence.get("seed_locations", [])]


def test_twin_the_subclass_draws_nothing(tmp_path):
    found = lint_plain(tmp_path, SEEDED_ALIKE.replace("{draw}", "img = img / 255"))
    assert at(found, "DDP808") == []


# -------------------------------------------------- a rank kept under a dict key
# (`config["device"] = rank` in the spawned worker, then `self.device = config["device"]`)
KEYED_RANK = """
import torch
import torch.distributed as dist
import torch.multiprocessing as mp
from torch.nn.parallel import DistributedDataParallel as DDP

config = {"epochs": 2}


class Trainer:
    def __init__(self, config):
        self.device = config["device"]
        self.model = DDP(torch.nn.Linear(4, 1))

    def fit(self):
        for epoch in range(config["epochs"]):
            self.model(torch.randn(2, 4)).sum().backward()
            if self.device == 0:
                torch.save(self.model.module.state_dict(), "last.pth")  # the checkpoint


def main(rank, world_size):
    dist.init_process_group("gloo", rank=rank, world_size=world_size)
    config["device"] = {device}
    Trainer(config).fit()


if __name__ == "__main__":
    mp.spawn(main, args=(2,), nprocs=2)
"""


def test_a_rank_stored_under_a_key_and_read_back_is_a_rank_test(tmp_path):
    assert at(lint_plain(tmp_path, KEYED_RANK.replace("{device}", "rank")), "DDP806") == []


def test_twin_the_key_holds_no_rank(tmp_path):
    source = KEYED_RANK.replace("{device}", "0")
    assert at(lint_plain(tmp_path, source), "DDP806") == [(line_of(source, "the checkpoint"), "warning")]


# -------------------------------------------------- an early stop on each rank's own validation shard
SHARD_METRIC = """
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler


class EarlyStopping:
    def __init__(self, patience):
        self.patience, self.best, self.bad, self.early_stop = patience, None, 0, False

    def __call__(self, val_loss):
        if self.best is None or val_loss < self.best:
            self.best, self.bad = val_loss, 0
        else:
            self.bad += 1
            if self.bad >= self.patience:
                self.early_stop = True


def validate(model, loader):
    total = []
    with torch.no_grad():
        for x, y in loader:
            total.append(torch.nn.functional.mse_loss(model(x), y))
    loss = torch.stack(total).mean()
    {share}
    return loss


def main():
    dist.init_process_group("gloo")
    train = TensorDataset(torch.randn(64, 4), torch.randn(64, 1))
    val = TensorDataset(torch.randn(32, 4), torch.randn(32, 1))
    train_loader = DataLoader(train, batch_size=8, sampler=DistributedSampler(train))
    val_loader = DataLoader(val, batch_size=8, sampler=DistributedSampler(val, shuffle=False))
    model = DDP(torch.nn.Linear(4, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    stopper = EarlyStopping(3)
    for epoch in range(100):
        train_loader.sampler.set_epoch(epoch)
        for x, y in train_loader:
            opt.zero_grad()
            torch.nn.functional.mse_loss(model(x), y).backward()
            opt.step()
        val_loss = validate(model, val_loader)
        stopper(val_loss)
        if stopper.early_stop:  # the decision
            break


if __name__ == "__main__":
    main()
"""


def test_an_early_stop_on_each_ranks_own_validation_shard_is_ddp809_warning(tmp_path):
    source = SHARD_METRIC.replace("{share}", "pass")
    found = lint_plain(tmp_path, source)
    assert at(found, "DDP809") == [(line_of(source, "the decision"), "warning")]
    message = next(f.message for f in found if f.code == "DDP809")
    assert "validate() over val_loader" in message and "own shard" in message


def test_twin_the_validation_loss_is_all_reduced_first(tmp_path):
    source = SHARD_METRIC.replace("{share}", "dist.all_reduce(loss)\n    loss /= dist.get_world_size()")
    assert at(lint_plain(tmp_path, source), "DDP809") == []


def test_a_patience_counter_set_on_a_side_of_a_test_on_the_metric_is_followed(tmp_path):
    source = SHARD_METRIC.replace("{share}", "pass").replace(
        """        stopper(val_loss)
        if stopper.early_stop:  # the decision
            break""", """        if val_loss < best:
            best, bad = val_loss, 0
        else:
            bad += 1
        if bad > 3:  # the decision
            break""").replace("    stopper = EarlyStopping(3)\n", "    best, bad = float('inf'), 0\n")
    assert at(lint_plain(tmp_path, source), "DDP809") == [(line_of(source, "the decision"), "warning")]


def test_twin_a_helper_that_all_reduces_the_metric_before_the_test(tmp_path):
    source = SHARD_METRIC.replace("{share}", "pass").replace(
        "        stopper(val_loss)\n", "        val_loss = reduced(val_loss)\n        stopper(val_loss)\n").replace(
        "def main():", "def reduced(value):\n    dist.all_reduce(value)\n"
                       "    return value / dist.get_world_size()\n\n\ndef main():")
    assert at(lint_plain(tmp_path, source), "DDP809") == []


# -------------------------------------------------- a helper's file named after the batch it is handed
PER_SAMPLE_HELPER = """
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler


def save_results(out, batch, args):
    for i in range(len(batch[0])):
        name = {NAME}
        torch.save(out[i], f"{args}/results/{name}.pth")  # the write


def main():
    dist.init_process_group("gloo")
    ds = TensorDataset(torch.randn(64, 4), torch.arange(64))
    loader = DataLoader(ds, batch_size=8, sampler=DistributedSampler(ds, shuffle=False))
    model = DDP(torch.nn.Linear(4, 1))
    with torch.no_grad():
        for batch in loader:
            out = model(batch[0])
            save_results(out, batch, "runs")


if __name__ == "__main__":
    main()
"""


def test_a_helper_writing_a_file_per_sample_of_the_batch_it_is_handed_has_one_writer_per_file(tmp_path):
    source = PER_SAMPLE_HELPER.replace("{NAME}", "batch[1][i]")
    assert at(lint_plain(tmp_path, source), "DDP806") == []


def test_twin_the_helpers_file_is_named_from_its_settings_alone(tmp_path):
    source = PER_SAMPLE_HELPER.replace("{NAME}", "i")
    assert at(lint_plain(tmp_path, source), "DDP806") == [(line_of(source, "the write"), "warning")]


# -------------------------------------------------- a method handed the rank, returning no rank
# (`latest = self.setup_model(rank=rank)` returns the resumed epoch: a path made from it is every
# rank's; and the helper's save is reached through a method whose other call tests the rank)
METHOD_HANDED_RANK = """
import os
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP


def save_checkpoint(model, path):
    torch.save(model.state_dict(), path)  # the write


class Trainer:
    def setup_model(self, rank):
        self.model = DDP(torch.nn.Linear(4, 1).to(rank))
        return {returned}

    def save_model(self, epoch):
        save_checkpoint(self.model.module, os.path.join("runs", f"epoch_{epoch}.pth"))

    def train(self):
        rank = int(os.environ.get("LOCAL_RANK", 0))
        dist.init_process_group("gloo")
        latest = self.setup_model(rank=rank)
        self.save_model(latest)  # the slip
        for epoch in range(latest, 3):
            self.model(torch.randn(2, 4)).sum().backward()
            if rank == 0:
                self.save_model(epoch)


if __name__ == "__main__":
    Trainer().train()
"""


def test_a_path_from_what_a_method_handed_the_rank_returns_without_it_is_every_ranks(tmp_path):
    source = METHOD_HANDED_RANK.replace("{returned}", "0")
    found = lint_plain(tmp_path, source)
    assert at(found, "DDP806") == [(line_of(source, "the write"), "warning")]
    finding = next(f for f in found if f.code == "DDP806")
    assert finding.evidence["call_site"].endswith(f":{line_of(source, 'the slip')}")
    assert "through Trainer.save_model" in finding.message


def test_twin_the_method_returns_the_rank_itself(tmp_path):
    source = METHOD_HANDED_RANK.replace("{returned}", "rank")
    assert at(lint_plain(tmp_path, source), "DDP806") == []


# -------------------------------------------------- a builder's sampler on a side only some calls take
# (`if parallel: DistributedSampler(ds, shuffle=shuffle)`: the calls that pass parallel=True all
# pass shuffle=False; the training loader's calls leave parallel off and get no sampler)
BUILDER_SIDE = """
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler


def make_loader(ds, shuffle, parallel=False):
    if parallel and dist.is_initialized():
        sampler = DistributedSampler(ds, shuffle=shuffle)  # the sampler
    else:
        sampler = None
    return DataLoader(ds, batch_size=8, sampler=sampler, shuffle=False if sampler else shuffle)


def main():
    dist.init_process_group("gloo")
    ds = TensorDataset(torch.randn(64, 4), torch.randn(64, 1))
    model = DDP(torch.nn.Linear(4, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for epoch in range(3):
        for x, y in make_loader(ds, shuffle=True, parallel=True):
            opt.zero_grad()
            torch.nn.functional.mse_loss(model(x), y).backward()
            opt.step()
        with torch.no_grad():
            for x, y in make_loader(ds, shuffle={eval_shuffle}, parallel={eval_parallel}):
                model(x)


if __name__ == "__main__":
    main()
"""


def test_a_sampler_only_calls_with_shuffle_off_build_never_shuffles(tmp_path):
    source = BUILDER_SIDE.replace("make_loader(ds, shuffle=True, parallel=True)", "make_loader(ds, shuffle=True)")
    source = source.replace("{eval_shuffle}", "False").replace("{eval_parallel}", "True")
    assert at(lint_plain(tmp_path, source), "DDP804") == []


def test_twin_a_call_that_builds_the_sampler_shuffles_across_epochs(tmp_path):
    source = BUILDER_SIDE.replace("{eval_shuffle}", "False").replace("{eval_parallel}", "True")
    assert at(lint_plain(tmp_path, source), "DDP804") == [(line_of(source, "the sampler"), "warning")]


# -------------------------------------------------- a number made every rank's by a local helper
# (`val_loss = reduced(val_loss)`, whose body all-reduces a tensor made of what it is handed):
# the early stop on it is every rank's, whichever DDP809 shape would have told it
ITEM_VALIDATE = SHARD_METRIC.replace('''            total.append(torch.nn.functional.mse_loss(model(x), y))
    loss = torch.stack(total).mean()
    {share}
    return loss''', '''            total.append(torch.nn.functional.mse_loss(model(x), y).item())
    return sum(total) / len(total)''').replace(
    "def main():", "def reduced(value):\n    t = torch.tensor(value)\n    dist.all_reduce(t)\n"
                   "    return t.item() / dist.get_world_size()\n\n\ndef main():")


def test_an_item_valued_metric_made_every_ranks_by_a_reducing_helper_decides_nothing(tmp_path):
    source = ITEM_VALIDATE.replace("        stopper(val_loss)\n", "        val_loss = reduced(val_loss)\n        stopper(val_loss)\n")
    assert at(lint_plain(tmp_path, source), "DDP809") == []


def test_twin_the_item_valued_metric_tested_as_each_rank_has_it(tmp_path):
    assert at(lint_plain(tmp_path, ITEM_VALIDATE), "DDP809") == [(line_of(ITEM_VALIDATE, "the decision"), "warning")]


# -------------------------------------------------- a rank handed to a dataset as its seed
# (`Dataset(..., seed=42 + rank)`: the rank picks the random draws, not which items the rank holds)
SEEDED_DATASET = """
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, Dataset
from torch.utils.data.distributed import DistributedSampler


class Masks(Dataset):
    def __init__(self, items, seed=0):
        self.items, self.g = items, torch.Generator().manual_seed(seed)

    def __len__(self):
        return len(self.items)

    def __getitem__(self, i):
        return self.items[i], torch.rand(1, generator=self.g)


def main():
    dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    ds = Masks({items})
    loader = DataLoader(ds, batch_size=8, sampler=DistributedSampler(ds))  # the sampler
    model = DDP(torch.nn.Linear(1, 1))
    for epoch in range(2):
        loader.sampler.set_epoch(epoch)
        for x, _ in loader:
            model(x.float().unsqueeze(1)).sum().backward()


if __name__ == "__main__":
    main()
"""


def test_a_rank_given_to_a_dataset_as_its_seed_shards_nothing(tmp_path):
    source = SEEDED_DATASET.replace("{items}", "list(range(64)), seed=42 + rank")
    assert at(lint_plain(tmp_path, source), "DDP803") == []


def test_twin_a_dataset_made_of_the_ranks_own_items_is_sharded_twice(tmp_path):
    source = SEEDED_DATASET.replace("{items}", "list(range(64))[rank::world]")
    assert at(lint_plain(tmp_path, source), "DDP803") == [(line_of(source, "the sampler"), "warning")]


def test_twin_a_helper_that_all_reduces_its_own_copy_and_returns_nothing_shares_nothing(tmp_path):
    # (cramming's `communicate_flags(training_allowed)`: a tensor made of the number, reduced, dropped)
    source = ITEM_VALIDATE.replace("        stopper(val_loss)\n", "        note(val_loss)\n        stopper(val_loss)\n").replace(
        "def main():", "def note(value):\n    t = torch.tensor(value)\n    dist.all_reduce(t)\n    print(t.item())\n\n\ndef main():")
    assert at(lint_plain(tmp_path, source), "DDP809") == [(line_of(source, "the decision"), "warning")]


# -------------------------------------------------- a rank exit joined with a switch no call turns on
OPEN_EXIT = """
import torch
import torch.distributed as dist


def evaluate(model, batches, rank, get_predictions=False):
    preds = []
    for x in batches:
        out = model(x)
        dist.all_reduce(out)
        preds.append(out)
        if rank == 0 and get_predictions:  # the exit
            return preds
    return None


def main():
    dist.init_process_group("gloo")
    model = torch.nn.Linear(4, 1)
    evaluate(model, [torch.randn(2, 4)] * 3, dist.get_rank(){given})


if __name__ == "__main__":
    main()
"""


def test_a_rank_exit_joined_with_a_switch_every_call_leaves_off_is_no_decision(tmp_path):
    assert at(lint_plain(tmp_path, OPEN_EXIT.replace("{given}", "")), "DDP809") == []


def test_twin_a_call_turns_the_switch_on(tmp_path):
    source = OPEN_EXIT.replace("{given}", ", get_predictions=True")
    assert at(lint_plain(tmp_path, source), "DDP809") == [(line_of(source, "the exit"), "warning")]


# -------------------------------------------------- the OpenMMLab and timm seeding helpers
# (mmengine.runner.set_random_seed adds the rank only with diff_rank_seed; timm's random_seed adds
# the rank it is given)
LIBRARY_SEEDED = SEEDED_ALIKE.replace(
    'eval(os.environ.get("DATASET", "Imbalanced"))("./data", train=True, download=True)  # picked by name',
    'Imbalanced("./data", train=True, download=True)').replace(
    "import torchvision\n", "import torchvision\n{imports}\n").replace(
    "    torch.manual_seed(0)  # every rank alike", "    {seeding}  # the seeding").replace(
    "{draw}", "index = random.choice(range(len(self.data)))")


def _seeded_by(tmp_path, imports: str, seeding: str):
    source = LIBRARY_SEEDED.replace("{imports}", imports).replace("{seeding}", seeding)
    found = lint_plain(tmp_path, source)
    return [int(s.rpartition(":")[2]) for f in found if f.code == "DDP808"
            for s in f.evidence.get("seed_locations", [])], line_of(source, "the seeding")


def test_mmengines_seeding_without_diff_rank_seed_is_alike_on_every_rank(tmp_path):
    seeds, line = _seeded_by(tmp_path, "from mmengine.runner import set_random_seed", "set_random_seed(42)")
    assert line in seeds


def test_twin_mmengines_seeding_with_diff_rank_seed_by_position(tmp_path):
    seeds, _ = _seeded_by(tmp_path, "from mmengine.runner import set_random_seed", "set_random_seed(42, False, True)")
    assert seeds == []


def test_twin_timms_seeding_handed_the_rank(tmp_path):
    seeds, _ = _seeded_by(tmp_path, "from timm.utils import random_seed", "random_seed(42, dist.get_rank())")
    assert seeds == []


def test_timms_seeding_left_at_rank_0_is_alike(tmp_path):
    seeds, line = _seeded_by(tmp_path, "from timm.utils import random_seed", "random_seed(42)")
    assert line in seeds
