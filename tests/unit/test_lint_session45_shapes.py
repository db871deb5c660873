"""Shapes from session 45 (holdout 55, read after it was scored unread): a dataset that draws its
sample through an object it holds, a flip mask drawn once at construction, a keyword dict a rank
test adds to before it is spread into a call, launches that name different values of one option,
an early stopper whose barrier sits behind a switch every construction turns off, a method whose
name says "augmentation", a distributed branch that turns the workers off, and a rank-0 barrier
reached only through a store_true switch. Each with its twin, in our own words."""

from __future__ import annotations

from tests.unit.test_lint_round50_shapes import at, line_of
from tests.unit.test_lint_session39_shapes import lint_tree


# -------------------------------------------------- __getitem__ ignores idx; a held mixer draws
MIXER = """
import random
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, Dataset


class Mixer:
    def __init__(self, names):
        self.names = names

    def pair(self):
        first, second = random.sample(self.names, 2)
        return torch.tensor([len(first), len(second)], dtype=torch.float32)


class Mixtures(Dataset):
    def __init__(self):
        self.mixer = Mixer(["a", "bb", "ccc"])

    def __len__(self):
        return 100

    def __getitem__(self, idx):
        return {drawn}


def main():
    dist.init_process_group("gloo")
    model = DDP(torch.nn.Linear(2, 1))
    loader = DataLoader(Mixtures(), batch_size=4)  # the loader
    for batch in loader:
        model(batch).sum().backward()


if __name__ == "__main__":
    main()
"""


def test_a_dataset_drawing_through_an_object_it_holds_makes_the_missing_sampler_a_warning(tmp_path):
    code = MIXER.replace("{drawn}", "self.mixer.pair()")
    found = lint_tree(tmp_path, {"train.py": code})
    assert at(found, "DDP802") == [(line_of(code, "# the loader"), "warning")]


def test_its_twin_a_dataset_reading_its_index_is_an_error(tmp_path):
    code = MIXER.replace("{drawn}", "torch.tensor([float(idx), 1.0])")
    found = lint_tree(tmp_path, {"train.py": code})
    assert at(found, "DDP802") == [(line_of(code, "# the loader"), "error")]


# -------------------------------------------------- a flip mask drawn once, in the launching process
FLIP_MASK = """
import random
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, Dataset, DistributedSampler


class Pairs(Dataset):
    def __init__(self, n, flip=False):
        self.n = n
        self._flip = torch.randint(0, 2, (n,)) if flip else torch.zeros(n)

    def __len__(self):
        return self.n

    def flip_boxes(self, x):
        return x.flip(0)

    def __getitem__(self, i):
        x = torch.arange(4.0)
        if {test}:
            x = self.flip_boxes(x)
        return x


def main():
    dist.init_process_group("gloo")
    torch.manual_seed(1)  # the seed
    data = Pairs(64, flip=True)
    loader = DataLoader(data, batch_size=4, num_workers=2, sampler=DistributedSampler(data))
    model = DDP(torch.nn.Linear(4, 1))
    for epoch in range(2):
        loader.sampler.set_epoch(epoch)
        for x in loader:
            model(x).sum().backward()


if __name__ == "__main__":
    main()
"""


def test_a_mask_drawn_at_construction_and_indexed_per_item_is_no_worker_draw(tmp_path):
    found = lint_tree(tmp_path, {"train.py": FLIP_MASK.replace("{test}", "self._flip[i]")})
    assert at(found, "DDP808") == []


def test_its_twin_a_coin_tossed_in_the_worker_is_one(tmp_path):
    code = FLIP_MASK.replace("{test}", "random.random() < 0.5")
    found = lint_tree(tmp_path, {"train.py": code})
    assert [line for line, _ in at(found, "DDP808")] != []


# -------------------------------------------------- `kwargs.update(...)` under a rank test, then `f(**kwargs)`
SPREAD = """
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP


def train(model, epochs=1, checkpoint_dir=None, verbose=False):
    for epoch in range(epochs):
        model(torch.ones(2, 4)).sum().backward()
        if checkpoint_dir is not None:
            torch.save(model.state_dict(), checkpoint_dir + "/last.pt")  # the save


def main(rank):
    dist.init_process_group("gloo")
    model = DDP(torch.nn.Linear(4, 1))
    kwargs = dict(model=model, epochs=3)
    {test}
        kwargs.update(dict(checkpoint_dir="ckpt", verbose=True))
    train(**kwargs)


if __name__ == "__main__":
    main(dist.get_rank() if dist.is_initialized() else 0)
"""


def test_a_keyword_added_to_a_spread_dict_under_a_rank_test_makes_its_none_test_a_rank_test(tmp_path):
    found = lint_tree(tmp_path, {"train.py": SPREAD.replace("{test}", "if rank == 0:")})
    assert at(found, "DDP806") == []


def test_its_twin_added_on_every_rank_the_save_is_every_rank_s(tmp_path):
    code = SPREAD.replace("{test}", "if epochs_given():").replace(
        "def main(rank):", "def epochs_given():\n    return True\n\n\ndef main(rank):")
    found = lint_tree(tmp_path, {"train.py": code})
    assert at(found, "DDP806") == [(line_of(code, "# the save"), "warning")]


# -------------------------------------------------- launches that name different values of one option
LAUNCHED = """
import argparse
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP


def train_small(model):
    model(torch.ones(2, 4)).sum().backward()
    torch.save(model.state_dict(), "small.pt")  # the save


def train_big(model):
    model(torch.ones(2, 4)).sum().backward()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--model", default="small")
    args = parser.parse_args()
    dist.init_process_group("gloo")
    model = DDP(torch.nn.Linear(4, 1))
    if args.model == "small":
        train_small(model)
    else:
        train_big(model)


if __name__ == "__main__":
    main()
"""


def test_a_helper_no_launch_picks_does_not_save_on_the_run_as_launched(tmp_path):
    found = lint_tree(tmp_path, {"train.py": LAUNCHED,
                                 "run_big.sh": "torchrun --nproc_per_node 4 train.py --model big\n",
                                 "run_huge.sh": "torchrun --nproc_per_node 8 train.py --model huge\n"})
    assert at(found, "DDP806") == []


def test_its_twin_one_launch_picks_it(tmp_path):
    found = lint_tree(tmp_path, {"train.py": LAUNCHED,
                                 "run_big.sh": "torchrun --nproc_per_node 4 train.py --model big\n",
                                 "run_small.sh": "torchrun --nproc_per_node 8 train.py --model small\n"})
    assert at(found, "DDP806") == [(line_of(LAUNCHED, "# the save"), "warning")]


# -------------------------------------------------- an early stopper's barrier behind a switched-off save
STOPPER = """
import math
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP


class Stopper:
    def __init__(self, patience=3, save_mode=True):
        self.patience = patience
        self.save_mode = save_mode
        self.best = None
        self.stop = False

    def __call__(self, val_loss, model):
        if math.isnan(val_loss):  # the decision
            self.stop = True
            return
        if self.best is None or val_loss < self.best:
            self.best = val_loss
            if self.save_mode:
                self.save(model)

    def save(self, model):
        dist.barrier()
        if dist.get_rank() == 0:
            torch.save(model.state_dict(), "best.pt")


def main():
    dist.init_process_group("gloo")
    model = DDP(torch.nn.Linear(4, 1))
    stopper = Stopper(patience=5, save_mode={mode})
    for epoch in range(10):
        loss = model(torch.ones(2, 4)).sum()
        loss.backward()
        stopper(loss.item(), model)


if __name__ == "__main__":
    main()
"""


def test_a_decision_whose_collectives_sit_behind_a_switch_every_construction_turns_off_is_none(tmp_path):
    found = lint_tree(tmp_path, {"train.py": STOPPER.replace("{mode}", "False")})
    assert at(found, "DDP809") == []


def test_its_twin_with_the_switch_on_the_decision_is_a_warning(tmp_path):
    code = STOPPER.replace("{mode}", "True")
    found = lint_tree(tmp_path, {"train.py": code})
    assert at(found, "DDP809") == [(line_of(code, "# the decision"), "warning")]


# -------------------------------------------------- a method whose name says "augmentation"
AUGMENT_NAME = """
import numpy as np
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, Dataset, DistributedSampler


class Frames(Dataset):
    def __len__(self):
        return 64

    def sample_augmentation(self):
        {body}

    def __getitem__(self, idx):
        scale = self.sample_augmentation()
        return torch.full((4,), float(scale))


def main():
    dist.init_process_group("gloo")
    torch.manual_seed(0)
    data = Frames()
    loader = DataLoader(data, batch_size=4, num_workers=2, sampler=DistributedSampler(data))  # the loader
    model = DDP(torch.nn.Linear(4, 1))
    for epoch in range(2):
        loader.sampler.set_epoch(epoch)
        for x in loader:
            model(x).sum().backward()


if __name__ == "__main__":
    main()
"""


def test_a_method_named_for_augmentation_that_draws_nothing_is_no_draw(tmp_path):
    found = lint_tree(tmp_path, {"train.py": AUGMENT_NAME.replace("{body}", "return 0.5")})
    assert at(found, "DDP808") == []


def test_its_twin_the_same_method_drawing_a_scale(tmp_path):
    found = lint_tree(tmp_path, {"train.py": AUGMENT_NAME.replace("{body}", "return np.random.uniform(0.8, 1.2)")})
    assert len(at(found, "DDP808")) == 1


# -------------------------------------------------- `if args.distributed: args.num_workers = 0`
NO_WORKERS = """
import argparse
import random
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, Dataset, DistributedSampler


class Crops(Dataset):
    def __len__(self):
        return 64

    def __getitem__(self, idx):
        return torch.full((4,), random.random())


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--num_workers", type=int, default=4)
    parser.add_argument("--distributed", action="store_true")
    args = parser.parse_args()
    dist.init_process_group("gloo")
    torch.manual_seed(0)
    random.seed(0)
    data = Crops()
    if args.distributed:
        {zeroed}
        sampler = DistributedSampler(data)
    else:
        sampler = None
    loader = DataLoader(data, batch_size=4, sampler=sampler, num_workers=args.num_workers)
    model = DDP(torch.nn.Linear(4, 1))
    for epoch in range(2):
        sampler.set_epoch(epoch)
        for x in loader:
            model(x).sum().backward()


if __name__ == "__main__":
    main()
"""


def test_workers_turned_off_on_the_distributed_side_draw_nothing_alike(tmp_path):
    found = lint_tree(tmp_path, {"train.py": NO_WORKERS.replace("{zeroed}", "args.num_workers = 0")})
    assert at(found, "DDP808") == []


def test_its_twin_workers_left_on(tmp_path):
    found = lint_tree(tmp_path, {"train.py": NO_WORKERS.replace("{zeroed}", "args.pin = True")})
    assert len(at(found, "DDP808")) == 1


# -------------------------------------------------- a rank-0 barrier reached only with a store_true switch
SWITCHED = """
import argparse
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP


def evaluate(model):
    model.module(torch.ones(2, 4))
    if dist.get_rank() == 0:
        print("done")
        dist.barrier()  # the barrier


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--val_only", action="store_true")
    args = parser.parse_args()
    dist.init_process_group("gloo")
    model = DDP(torch.nn.Linear(4, 1))
    for epoch in range(2):
        model(torch.ones(2, 4)).sum().backward()
    {call}


if __name__ == "__main__":
    main()
"""


def test_a_rank_zero_barrier_reached_only_with_a_switch_off_by_default_is_a_warning(tmp_path):
    code = SWITCHED.replace("{call}", "if args.val_only:\n        evaluate(model)")
    found = lint_tree(tmp_path, {"train.py": code})
    assert at(found, "DDP801") == [(line_of(code, "# the barrier"), "warning")]


def test_its_twin_reached_on_every_run_is_an_error(tmp_path):
    code = SWITCHED.replace("{call}", "evaluate(model)")
    found = lint_tree(tmp_path, {"train.py": code})
    assert at(found, "DDP801") == [(line_of(code, "# the barrier"), "error")]


# -------------------------------------------------- rank 0 wraps a loader in a progress bar
PROGRESS = """
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from tqdm import tqdm


def train(model, epochs, train_loader, val_loader=None):
    rank = dist.get_rank()
    for epoch in range(epochs):
        for x in train_loader:
            model(x).sum().backward()
        if val_loader is not None:  # the decision
            if rank == 0:
                val_loader = {rank_zero}
            for x in val_loader:
                loss = model(x).sum()
                dist.all_reduce(loss)


def main():
    dist.init_process_group("gloo")
    model = DDP(torch.nn.Linear(4, 1))
    batches = [torch.ones(2, 4)] * 3
    train(model, 2, batches, batches)


if __name__ == "__main__":
    main()
"""


def test_a_loader_rank_zero_wraps_in_a_progress_bar_is_not_none_on_every_rank(tmp_path):
    found = lint_tree(tmp_path, {"train.py": PROGRESS.replace("{rank_zero}", 'tqdm(val_loader, desc="val")')})
    assert at(found, "DDP809") == []


def test_its_twin_rank_zero_dropping_it_decides_alone(tmp_path):
    code = PROGRESS.replace("{rank_zero}", "None")
    found = lint_tree(tmp_path, {"train.py": code})
    assert [line for line, _ in at(found, "DDP809")] == [line_of(code, "# the decision")]
