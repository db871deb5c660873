"""Shapes from session 91 (holdouts 129 and 130's reading), each with its twin, in our own words."""

from __future__ import annotations

from tests.unit.test_lint_session39_shapes import lint_tree
from tests.unit.test_lint_session61_shapes import _codes, _line

# ---------------------------------------------- a draw on a split the training set is not built for
# `self.split = split` in the constructor and `if self.split == "demo": start = randint(...)` in
# __getitem__: the training loader's dataset, built with "train", draws nothing in its workers, so
# workers seeded alike across ranks do no harm (DDP808). The "demo" construction elsewhere still
# takes that side, so the answer is the construction's, not the class's.
SPLIT_DRAW = """import numpy as np
import torch
import torch.distributed as dist
from torch.utils.data import DataLoader, Dataset
from torch.utils.data.distributed import DistributedSampler


class Clips(Dataset):
    def __init__(self, root, split):
        self.root = root
        self.split = split
        self.items = list(range(100))

    def __len__(self):
        return len(self.items)

    def __getitem__(self, idx):
        x = np.zeros(16, dtype=np.float32)
        if self.split == "demo":
            start = np.random.randint(0, 8)
            x = x[start:start + 8]
        return torch.from_numpy(x[:8])


TABLE = {"clips": Clips}


def dataset_class(name):
    found = TABLE.get(name)
    if found is None:
        raise KeyError(name)
    return found


def main():
    dist.init_process_group("gloo")
    torch.manual_seed(0)
    data = BUILD("/data", "train")
    sampler = DistributedSampler(data)
    loader = DataLoader(data, batch_size=4, sampler=sampler, num_workers=4)
    model = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(8, 1))
    for epoch in range(2):
        sampler.set_epoch(epoch)
        for x in loader:
            model(x).sum().backward()
    demo = BUILD("/data", "demo")
    print(len(demo))


if __name__ == "__main__":
    main()
"""


def test_a_draw_on_a_split_the_training_set_is_not_built_for_is_no_worker_draw(tmp_path):
    body = SPLIT_DRAW.replace("BUILD", "Clips")
    assert _codes(lint_tree(tmp_path, {"train.py": body}), "DDP808") == []


def test_a_draw_on_the_split_the_training_set_is_built_for_is_still_told(tmp_path):
    # twin: the training set is the one built for the drawing split
    body = SPLIT_DRAW.replace("BUILD", "Clips").replace('Clips("/data", "train")', 'Clips("/data", "demo")')
    found = _codes(lint_tree(tmp_path, {"train.py": body}), "DDP808")
    assert [f.location.line for f in found] == [_line(body, "loader = DataLoader(")]


def test_a_class_handed_back_by_a_table_helper_is_built_as_called(tmp_path):
    body = SPLIT_DRAW.replace("BUILD", 'dataset_class("clips")')
    assert _codes(lint_tree(tmp_path, {"train.py": body}), "DDP808") == []


def test_a_class_handed_back_by_a_table_helper_still_draws_on_its_drawing_split(tmp_path):
    body = SPLIT_DRAW.replace("BUILD", 'dataset_class("clips")').replace('"/data", "train")', '"/data", "demo")', 1)
    found = _codes(lint_tree(tmp_path, {"train.py": body}), "DDP808")
    assert [f.location.line for f in found] == [_line(body, "loader = DataLoader(")]


# ------------------------------------------- a None batch from the collator, tested before the forward
# A collator that drops over-long samples hands back None when it drops them all: `if batch is
# None: continue` is then each rank's own data deciding whether it runs the DDP forward and
# backward (DDP809). Handing the batch to the DDP forward later shares nothing of it: the forward
# is no collective over its inputs.
NONE_BATCH = """import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler


class DropLong:
    def __init__(self, longest):
        self.longest = longest

    def __call__(self, items):
        kept = [x for (x,) in items if int(x.sum()) <= self.longest]
        if not kept:
            return None
        return {"input": torch.stack(kept)}


def main():
    dist.init_process_group("gloo")
    data = TensorDataset(torch.randint(0, 9, (64, 4)).float())
    sampler = DistributedSampler(data)
    loader = DataLoader(data, batch_size=8, sampler=sampler, COLLATE)
    model = DistributedDataParallel(torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.BatchNorm1d(4)))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for epoch in range(2):
        sampler.set_epoch(epoch)
        for batch in loader:
            if batch is None:
                continue
            loss = model(**batch).sum()
            loss.backward()
            opt.step()
            opt.zero_grad()


if __name__ == "__main__":
    main()
"""


def test_a_none_batch_from_a_dropping_collator_decides_the_ranks_forward(tmp_path):
    body = NONE_BATCH.replace("COLLATE", "collate_fn=DropLong(20)")
    found = _codes(lint_tree(tmp_path, {"train.py": body}), "DDP809")
    assert [f.location.line for f in found] == [_line(body, "if batch is None:")]


def test_a_none_test_under_the_default_collate_is_never_true(tmp_path):
    # twin: torch's default collate never hands back None
    body = NONE_BATCH.replace("COLLATE", "drop_last=True").replace("model(**batch)", "model(batch[0])")
    assert _codes(lint_tree(tmp_path, {"train.py": body}), "DDP809") == []


# ------------------------------------------- a stopper counted to its patience on rank 0 alone
# `self.counter += 1; if self.counter >= self.patience: self.early_stop = True` in a stopper only
# rank 0 calls, and `if stopper.early_stop: break` on every rank: any run that stops improving sets
# the flag, so this is the hang itself (an error), not an assumption about a further test. A flag
# set past a threshold the code does not count to stays a warning naming that test.
COUNTED_STOP = """import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel


class Stopper:
    def __init__(self, patience):
        self.patience = patience
        self.counter = 0
        self.best = None
        self.early_stop = False

    def __call__(self, loss):
        if self.best is None or loss < self.best:
            self.best = loss
            self.counter = 0
        else:
            COUNT
            if TEST:
                self.early_stop = True


def main():
    dist.init_process_group("gloo")
    model = DistributedDataParallel(torch.nn.Linear(4, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    stopper = Stopper(5)
    for epoch in range(100):
        loss = model(torch.randn(8, 4)).pow(2).mean()
        loss.backward()
        opt.step()
        opt.zero_grad()
        if dist.get_rank() == 0:
            stopper(loss.item())
        if stopper.early_stop:
            break


if __name__ == "__main__":
    main()
"""


def test_a_stopper_counted_to_its_patience_on_rank_zero_is_an_error(tmp_path):
    body = COUNTED_STOP.replace("COUNT", "self.counter += 1").replace("TEST", "self.counter >= self.patience")
    found = _codes(lint_tree(tmp_path, {"train.py": body}), "DDP809")
    assert [(f.location.line, f.severity.value) for f in found] == [(_line(body, "if stopper.early_stop:"), "error")]


def test_a_flag_set_past_a_threshold_nothing_counts_stays_a_warning(tmp_path):
    # twin: the flag waits on the loss itself, which a run may never reach
    body = COUNTED_STOP.replace("COUNT", "self.counter += 1").replace("TEST", "loss < 1e-6")
    found = _codes(lint_tree(tmp_path, {"train.py": body}), "DDP809")
    assert [(f.location.line, f.severity.value) for f in found] == [(_line(body, "if stopper.early_stop:"), "warning")]
