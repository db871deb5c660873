"""Shapes from session 72's reading of holdout 101 (after its unread score), each with its twin, in
our own words."""

from __future__ import annotations

from tests.unit.test_lint_session39_shapes import lint_tree
from tests.unit.test_lint_session61_shapes import _codes, _line

# -------------------------------------------------- the step's forward runs in a helper that calls the
# module the wrapper holds (`model.module.encode(x)`): the loss backs through no DDP hook, so the
# epoch's own loss deciding `break` on each rank leaves nobody waiting in a collective
AROUND_IN_HELPER = """import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.body = torch.nn.Linear(4, 4)
        self.head = torch.nn.Linear(4, 1)

    def encode(self, x):
        return self.body(x)


class Trainer:
    def __init__(self, opt):
        self.opt = opt

    def _forward(self, model, batch):
        x, y = batch
        hidden = model.module.encode(x)
        pred = model.module.head(hidden).squeeze(-1)
        return pred, y

    def train_epoch(self, model, loader):
        total = 0
        for batch in loader:
            self.opt.zero_grad()
            pred, y = self._forward(model, batch)
            loss = ((pred - y) ** 2).mean()
            total += loss
            loss.backward()
            self.opt.step()
        return total

    def fit(self, model, loader):
        for epoch in range(100):
            loader.sampler.set_epoch(epoch)
            stop = self.train_epoch(model, loader)
            if stop:
                break


def main():
    dist.init_process_group("gloo")
    model = DDP(Net())
    data = TensorDataset(torch.randn(64, 4), torch.randn(64))
    loader = DataLoader(data, batch_size=8, sampler=DistributedSampler(data))
    Trainer(torch.optim.SGD(model.parameters(), lr=0.1)).fit(model, loader)


if __name__ == "__main__":
    main()
"""
THROUGH_IN_HELPER = AROUND_IN_HELPER.replace(
    "hidden = model.module.encode(x)\n        pred = model.module.head(hidden).squeeze(-1)",
    "pred = model(x).squeeze(-1)")


def test_a_loss_a_helper_computes_round_the_wrapper_backs_through_no_collective(tmp_path):
    assert _codes(lint_tree(tmp_path, {"train.py": AROUND_IN_HELPER}), "DDP809") == []


def test_its_twin_the_helper_runs_the_wrappers_forward(tmp_path):
    assert THROUGH_IN_HELPER != AROUND_IN_HELPER
    found = _codes(lint_tree(tmp_path, {"train.py": THROUGH_IN_HELPER}), "DDP809")
    assert [f.location.line for f in found] == [_line(THROUGH_IN_HELPER, "if stop:")]


# -------------------------------------------------- DDP810: the same step without the epoch-loss
# break: the backward of a loss computed round the wrapper all-reduces nothing
def test_a_training_forward_round_the_wrapper_is_ddp810_at_the_backward(tmp_path):
    found = lint_tree(tmp_path, {"train.py": AROUND_IN_HELPER})
    assert [(f.code, f.severity.value, f.location.line) for f in _codes(found, "DDP810")] == [
        ("DDP810", "error", _line(AROUND_IN_HELPER, "loss.backward()"))]
    assert f"at train.py:{_line(AROUND_IN_HELPER, 'model.module.head(hidden)')}" in found[0].message or any(
        f"train.py:{_line(AROUND_IN_HELPER, 'model.module.head(hidden)')}" in f.message for f in _codes(found, "DDP810"))


def test_its_twins_the_wrappers_forward_or_gradients_averaged_by_hand(tmp_path):
    assert _codes(lint_tree(tmp_path / "a", {"train.py": THROUGH_IN_HELPER}), "DDP810") == []
    averaged = AROUND_IN_HELPER.replace(
        "            loss.backward()\n",
        "            loss.backward()\n            for p in model.parameters():\n"
        "                dist.all_reduce(p.grad)\n")
    assert averaged != AROUND_IN_HELPER
    assert _codes(lint_tree(tmp_path / "b", {"train.py": averaged}), "DDP810") == []


UNWRAPPED_NAME = """import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.body = torch.nn.Linear(4, 1)

    def forward_features(self, x):
        return self.body(x)


def main():
    dist.init_process_group("gloo")
    model = DDP(Net())
    model_without_ddp = model.module
    data = TensorDataset(torch.randn(64, 4), torch.randn(64))
    sampler = DistributedSampler(data)
    loader = DataLoader(data, batch_size=8, sampler=sampler)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for epoch in range(3):
        sampler.set_epoch(epoch)
        for x, y in loader:
            out = model_without_ddp.forward_features(x).squeeze(-1)
            loss = ((out - y) ** 2).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
    with torch.no_grad():
        probe = model_without_ddp.forward_features(torch.randn(2, 4))
    torch.save(model_without_ddp.state_dict(), "final.pt")


if __name__ == "__main__":
    main()
"""
DATA_PARALLEL = UNWRAPPED_NAME.replace("model = DDP(Net())", "model = torch.nn.DataParallel(Net())")


def test_a_name_bound_to_the_wrappers_module_trains_round_it(tmp_path):
    found = _codes(lint_tree(tmp_path, {"train.py": UNWRAPPED_NAME}), "DDP810")
    assert [f.location.line for f in found] == [_line(UNWRAPPED_NAME, "loss.backward()")]


def test_its_twin_a_data_parallel_module_is_no_ddp_bypass(tmp_path):
    assert DATA_PARALLEL != UNWRAPPED_NAME
    assert _codes(lint_tree(tmp_path, {"train.py": DATA_PARALLEL}), "DDP810") == []


# -------------------------------------------------- DeiT's shape in a trainer: `self.raw = self.model`,
# then on the distributed side `self.model = DDP(self.model); self.raw = self.model.module`; the
# step's forward through `self.raw`, its predictions appended per frame and stacked into the loss
TRAINER_RAW = """import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.body = torch.nn.Linear(4, 4)

    def step_frame(self, x):
        return self.body(x)


class Trainer:
    def __init__(self, distributed):
        self.model = Net()
        self.raw = self.model
        if distributed:
            self.model = DDP(self.model)
            self.raw = self.model.module
        self.opt = torch.optim.SGD(self.model.parameters(), lr=0.1)

    def train(self, loader, epochs):
        for epoch in range(epochs):
            loader.sampler.set_epoch(epoch)
            for x, y in loader:
                preds = []
                for t in range(3):
                    out = self.raw.step_frame(x)
                    preds.append(out)
                loss = ((torch.stack(preds, 0) - y) ** 2).mean()
                self.opt.zero_grad()
                loss.backward()
                self.opt.step()


def main():
    dist.init_process_group("gloo")
    data = TensorDataset(torch.randn(64, 4), torch.randn(64, 4))
    loader = DataLoader(data, batch_size=8, sampler=DistributedSampler(data))
    Trainer(True).train(loader, 3)


if __name__ == "__main__":
    main()
"""
TRAINER_WRAPPED = TRAINER_RAW.replace("out = self.raw.step_frame(x)", "out = self.model(x)")


def test_a_trainer_field_holding_the_module_on_the_wrapped_run_trains_round_it(tmp_path):
    found = _codes(lint_tree(tmp_path, {"train.py": TRAINER_RAW}), "DDP810")
    assert [f.location.line for f in found] == [_line(TRAINER_RAW, "loss.backward()")]
    assert f"train.py:{_line(TRAINER_RAW, 'self.model = DDP(self.model)')}" in found[0].message


def test_its_twin_the_step_calls_the_wrapper(tmp_path):
    assert TRAINER_WRAPPED != TRAINER_RAW
    assert _codes(lint_tree(tmp_path, {"train.py": TRAINER_WRAPPED}), "DDP810") == []


# -------------------------------------------------- a builder makes the plain loader, then under its
# `distributed` parameter the sharded one in its place; the script's call hands `distributed=True`
# through a dispatching helper: the plain loader is dropped on every way in
DATA_PY = """from torch.utils.data import DataLoader
from torch.utils.data.distributed import DistributedSampler


def get_loaders(name, data, batch_size, distributed):
    if name == "toy":
        return build_loaders(data, batch_size, distributed)


def build_loaders(data, batch_size, distributed):
    train_loader = DataLoader(data, batch_size=batch_size, shuffle=True)
    if distributed:
        train_loader = DataLoader(train_loader.dataset, batch_size=batch_size,
                                  sampler=DistributedSampler(train_loader.dataset))
    return train_loader, 10
"""
TRAIN_PY = """import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import TensorDataset

from data import get_loaders


def main(flag):
    dist.init_process_group("gloo")
    model = DDP(torch.nn.Linear(4, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    data = TensorDataset(torch.randn(64, 4), torch.randn(64, 1))
    loader, _ = get_loaders("toy", data, 8, distributed=True)
    for epoch in range(3):
        loader.sampler.set_epoch(epoch)
        for x, y in loader:
            opt.zero_grad()
            ((model(x) - y) ** 2).mean().backward()
            opt.step()


if __name__ == "__main__":
    main(False)
"""


def test_a_plain_loader_replaced_under_a_parameter_every_call_sets_true_is_never_iterated(tmp_path):
    assert _codes(lint_tree(tmp_path, {"train.py": TRAIN_PY, "data.py": DATA_PY}), "DDP802") == []


def test_its_twin_the_call_hands_a_value_the_source_does_not_settle(tmp_path):
    unsettled = TRAIN_PY.replace("distributed=True", "distributed=flag")
    assert unsettled != TRAIN_PY
    found = _codes(lint_tree(tmp_path, {"train.py": unsettled, "data.py": DATA_PY}), "DDP802")
    assert [f.location.line for f in found] == [_line(DATA_PY, "train_loader = DataLoader(data")]


# -------------------------------------------------- the dataset's constructor hands its item list to a
# method of its own that shuffles it with the unseeded global stream: each process keeps another
# order, and the DistributedSampler shards different lists
SHUFFLED_IN_METHOD = """import random

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, Dataset
from torch.utils.data.distributed import DistributedSampler


class Pairs(Dataset):
    def __init__(self, n):
        self.ids = list(range(n))
        self._init_ids()

    def _init_ids(self):
        random.shuffle(self.ids)
        self.ids = self.ids[: len(self.ids) // 2]

    def __len__(self):
        return len(self.ids)

    def __getitem__(self, i):
        return torch.full((4,), float(self.ids[i]))


def main():
    dist.init_process_group("gloo")
    model = DDP(torch.nn.Linear(4, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    data = Pairs(64)
    sampler = DistributedSampler(data)
    loader = DataLoader(data, batch_size=8, sampler=sampler)
    for epoch in range(3):
        sampler.set_epoch(epoch)
        for x in loader:
            opt.zero_grad()
            model(x).sum().backward()
            opt.step()


if __name__ == "__main__":
    main()
"""
SEEDED_FIRST = SHUFFLED_IN_METHOD.replace('    dist.init_process_group("gloo")\n',
                                          '    dist.init_process_group("gloo")\n    random.seed(0)\n')


def test_an_unseeded_shuffle_in_a_method_the_constructor_calls_shards_different_lists(tmp_path):
    found = _codes(lint_tree(tmp_path, {"train.py": SHUFFLED_IN_METHOD}), "DDP803")
    assert len(found) == 1 and "random.shuffle(self.ids)" in found[0].message


def test_its_twin_every_process_seeds_the_stream_alike_first(tmp_path):
    assert SEEDED_FIRST != SHUFFLED_IN_METHOD
    assert _codes(lint_tree(tmp_path, {"train.py": SEEDED_FIRST}), "DDP803") == []


# -------------------------------------------------- RAFT's datasets seed the generators on the first item
# each worker loads, from the worker's id alone: worker k of every rank draws from seed k
RESEEDED_BY_WORKER_ID = """import random

import numpy as np
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, Dataset
from torch.utils.data.distributed import DistributedSampler


class FlowData(Dataset):
    def __init__(self):
        self.init_seed = False

    def __len__(self):
        return 64

    def __getitem__(self, i):
        if not self.init_seed:
            worker_info = torch.utils.data.get_worker_info()
            if worker_info is not None:
                torch.manual_seed(worker_info.id)
                np.random.seed(worker_info.id)
                self.init_seed = True
        flip = np.random.rand() < 0.5
        return torch.full((4,), float(i) * (-1.0 if flip else 1.0))


class Sintel(FlowData):
    pass


def main():
    dist.init_process_group("gloo")
    model = DDP(torch.nn.Linear(4, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    data = Sintel()
    sampler = DistributedSampler(data)
    loader = DataLoader(data, batch_size=8, sampler=sampler, num_workers=4)
    for epoch in range(3):
        sampler.set_epoch(epoch)
        for x in loader:
            opt.zero_grad()
            model(x).sum().backward()
            opt.step()


if __name__ == "__main__":
    main()
"""
RESEEDED_WITH_RANK = RESEEDED_BY_WORKER_ID.replace(
    "torch.manual_seed(worker_info.id)\n                np.random.seed(worker_info.id)",
    "torch.manual_seed(worker_info.seed)\n                np.random.seed(worker_info.seed % 2**32)")


def test_a_dataset_reseeding_its_workers_from_the_worker_id_alone_is_ddp808_at_the_seeding(tmp_path):
    found = _codes(lint_tree(tmp_path, {"train.py": RESEEDED_BY_WORKER_ID}), "DDP808")
    assert [f.location.line for f in found] == [_line(RESEEDED_BY_WORKER_ID, "torch.manual_seed(worker_info.id)")]
    assert "FlowData.__getitem__" in found[0].message


def test_its_twin_the_workers_own_seed_differs_per_rank(tmp_path):
    assert RESEEDED_WITH_RANK != RESEEDED_BY_WORKER_ID
    assert _codes(lint_tree(tmp_path, {"train.py": RESEEDED_WITH_RANK}), "DDP808") == []


# -------------------------------------------------- lucidrains' Trainer with a backward per part of the
# model (`for i in range(self.num_parts): accelerator.backward(loss[i])`) inside the micro-step loop,
# beside a numpy `np.add.accumulate` (a running sum, no Accelerator context)
PARTS_TRAINER = """import numpy as np
import torch
from accelerate import Accelerator


def offsets(lengths):
    return list(np.add.accumulate(lengths))


class Trainer:
    def __init__(self, model, num_parts=1, accumulate_every=1):
        self.accelerator = Accelerator()
        self.num_parts = num_parts
        self.accumulate_every = accumulate_every
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        self.model, self.opt = self.accelerator.prepare(model, opt)

    def train(self, batches, steps):
        for step in range(steps):
            for _ in range(self.accumulate_every):
                loss = self.model(next(batches))
                for i in range(self.num_parts):
                    self.accelerator.backward(loss[i] / self.accumulate_every)
            self.opt.step()
            self.opt.zero_grad()


def main():
    model = torch.nn.Linear(4, 2)
    batches = iter([torch.randn(8, 4)] * 100)
    Trainer(model, num_parts=2, accumulate_every=2).train(batches, 10)
    print(offsets([1, 2]))


if __name__ == "__main__":
    main()
"""


def test_a_backward_per_part_inside_the_micro_step_loop_accumulates_by_hand(tmp_path):
    found = _codes(lint_tree(tmp_path, {"train.py": PARTS_TRAINER}), "DDP805")
    assert [f.location.line for f in found] == [_line(PARTS_TRAINER, "self.accelerator.backward(")]
    # (told once, of the micro-step loop, not of the loop over the parts inside it)
    assert found[0].evidence["loop"].endswith(f"train.py:{_line(PARTS_TRAINER, 'for _ in range(self.accumulate_every)')}")


def test_its_twin_inside_accelerate_s_accumulate_context(tmp_path):
    inside = PARTS_TRAINER.replace("            for _ in range(self.accumulate_every):\n",
                                   "            for _ in range(self.accumulate_every):\n"
                                   "              with self.accelerator.accumulate(self.model):\n")
    inside = inside.replace("                loss = self.model(", "                  loss = self.model(").replace(
        "                for i in range(self.num_parts):\n                    self.accelerator",
        "                  for i in range(self.num_parts):\n                      self.accelerator")
    assert inside != PARTS_TRAINER
    assert _codes(lint_tree(tmp_path, {"train.py": inside}), "DDP805") == []
