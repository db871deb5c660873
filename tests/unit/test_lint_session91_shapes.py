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


# ------------------------------------------- a save handed a dict of options merged in above it
# `opts.update({...})` above `model.save_pretrained(path, **opts)`: what the dict holds is read
# from the merges above the call (a crash on the stand-in call once).
MERGED_OPTIONS = """import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel


def save_all(model, path):
    opts = {"max_shard_size": "2GB"}
    opts.update({"safe_serialization": True})
    model.save_pretrained(path, **opts)


def main():
    dist.init_process_group("gloo")
    model = DistributedDataParallel(torch.nn.Linear(4, 1))
    model(torch.randn(8, 4)).sum().backward()
    if GUARD:
        save_all(model.module, "out")


if __name__ == "__main__":
    main()
"""


def test_a_save_handed_merged_options_on_every_rank_is_told(tmp_path):
    body = MERGED_OPTIONS.replace("GUARD", "True")
    found = _codes(lint_tree(tmp_path, {"train.py": body}), "DDP806")
    assert [f.location.line for f in found] == [_line(body, "model.save_pretrained(")]


def test_a_save_handed_merged_options_on_rank_zero_is_not(tmp_path):
    body = MERGED_OPTIONS.replace("GUARD", "dist.get_rank() == 0")
    assert _codes(lint_tree(tmp_path, {"train.py": body}), "DDP806") == []


# ------------------------------------------- torch's own Buffer type is a buffer
# `self.table = nn.Buffer(torch.zeros(n, d))` (torch 2.5 on) registers a buffer as register_buffer
# does: a DDP forward broadcasts it, so rank 0's evaluation through the wrapper runs a collective
# the others do not (DDP801). A project class that happens to be called Buffer is no such thing.
TORCH_BUFFER = """import torch
import torch.distributed as dist
from torch import nn
from torch.nn.parallel import DistributedDataParallel

OWN


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 4)
        self.table = MAKE(torch.zeros(4))

    def forward(self, x):
        return self.lin(x) + 1.0


def evaluate(model):
    with torch.no_grad():
        return model(torch.randn(8, 4)).mean().item()


def main():
    dist.init_process_group("gloo")
    model = DistributedDataParallel(Net())
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for step in range(10):
        model(torch.randn(8, 4)).sum().backward()
        opt.step()
        opt.zero_grad()
        if dist.get_rank() == 0:
            print(evaluate(model))


if __name__ == "__main__":
    main()
"""


def test_a_torch_buffer_makes_a_rank_zero_forward_through_the_wrapper_a_collective(tmp_path):
    body = TORCH_BUFFER.replace("OWN\n", "").replace("MAKE", "nn.Buffer")
    found = _codes(lint_tree(tmp_path, {"train.py": body}), "DDP801")
    assert [f.location.line for f in found] == [_line(body, "return model(torch.randn(8, 4))")]


def test_a_project_class_called_buffer_is_no_buffer(tmp_path):
    body = TORCH_BUFFER.replace("OWN", "class Buffer:\n    def __init__(self, data):\n        self.data = data\n")
    body = body.replace("MAKE", "Buffer")
    assert _codes(lint_tree(tmp_path, {"train.py": body}), "DDP801") == []


# ------------------------------------------- a README command written one option a line
# ```python3 train.py` / `--accum 1` / ...``` with no backslashes: readers run it as one command,
# so every launch gives --accum 1 and nothing accumulates (DDP805 not told).
ACCUMULATING = """import argparse

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel

parser = argparse.ArgumentParser()
parser.add_argument("--accum", type=int, default=1)
parser.add_argument("--lr", type=float, default=0.1)
args = parser.parse_args()
dist.init_process_group("gloo")
model = DistributedDataParallel(torch.nn.Linear(4, 1))
opt = torch.optim.SGD(model.parameters(), lr=args.lr)
for step in range(100):
    loss = model(torch.randn(8, 4)).sum() / args.accum
    loss.backward()
    if (step + 1) % args.accum == 0:
        opt.step()
        opt.zero_grad()
"""

README_BLOCK = """# ours

```shell
python3 train.py
--lr 0.01
OPTION
```
"""


def test_a_readme_command_one_option_a_line_is_one_launch(tmp_path):
    readme = README_BLOCK.replace("OPTION", "--accum 1")
    assert _codes(lint_tree(tmp_path, {"train.py": ACCUMULATING, "README.md": readme}), "DDP805") == []


def test_a_readme_command_one_option_a_line_leaving_the_count_out_is_still_told(tmp_path):
    readme = README_BLOCK.replace("OPTION", "--seed 1")
    found = _codes(lint_tree(tmp_path, {"train.py": ACCUMULATING, "README.md": readme}), "DDP805")
    assert [f.location.line for f in found] == [_line(ACCUMULATING, "    loss.backward()")]


# ------------------------------------------- a wrapper read off where it is made, in a set-up method
# `self.model = DistributedDataParallel(self.model).module` in a method the constructor calls after
# `self.model = model`: the object trains the module, never the wrapper; and `loss_func = loss_func
# or self.model.calculate_loss` (the parameter no call hands) is that module's bound method (DDP810).
READ_OFF = """import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(4, 1)

    def forward(self, x):
        return self.lin(x).pow(2).mean()

    def calculate_loss(self, x):
        return self(x)


class Trainer:
    def __init__(self, model):
        self.model = model
        self.rank = self._build()

    def _build(self):
        dist.init_process_group("gloo")
        self.model = WRAPPED
        return dist.get_rank()

    def fit(self, loss_func=None):
        loss_func = loss_func or LOSS
        opt = torch.optim.SGD(self.model.parameters(), lr=0.1)
        for step in range(10):
            loss = loss_func(torch.randn(8, 4))
            loss.backward()
            opt.step()
            opt.zero_grad()


Trainer(Net()).fit()
"""


def test_a_wrapper_read_off_where_it_is_made_trains_the_module(tmp_path):
    body = READ_OFF.replace("WRAPPED", "DistributedDataParallel(self.model).module")
    body = body.replace("LOSS", "self.model.calculate_loss")
    found = _codes(lint_tree(tmp_path, {"train.py": body}), "DDP810")
    assert [(f.location.line, f.severity.value) for f in found] == [(_line(body, "            loss.backward()"), "error")]


def test_a_wrapper_kept_and_called_is_no_bypass(tmp_path):
    # twin: the wrapper is kept, and the bound name is the wrapper's own call
    body = READ_OFF.replace("WRAPPED", "DistributedDataParallel(self.model)").replace("LOSS", "self.model")
    assert _codes(lint_tree(tmp_path, {"train.py": body}), "DDP810") == []


def test_a_field_read_off_where_it_is_made_called_directly_is_told(tmp_path):
    body = READ_OFF.replace("WRAPPED", "DistributedDataParallel(self.model).module").replace("LOSS", "None")
    body = body.replace("loss = loss_func(torch.randn(8, 4))", "loss = self.model(torch.randn(8, 4))")
    found = _codes(lint_tree(tmp_path, {"train.py": body}), "DDP810")
    assert [f.location.line for f in found] == [_line(body, "            loss.backward()")]


# ------------------------------------------- a loader handed on as an argument, kept in a field
# `_train(rank, model, from_path(distributed=True))`, then `Learner(model, dataset)` keeps it as
# `self.dataset`, read in `while True: for x in self.dataset:` with the step in a helper: the loader
# is read pass after pass, and nothing sets the sampler's epoch (DDP804).
HANDED_LOADER = """import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler


def from_path(distributed=False):
    data = TensorDataset(torch.randn(64, 4))
    return DataLoader(data, batch_size=8, shuffle=not distributed,
                      sampler=DistributedSampler(data) if distributed else None, drop_last=True)


class Learner:
    def __init__(self, model, dataset):
        self.model = model
        self.dataset = dataset
        self.step = 0

    def train_step(self, x):
        loss = self.model(x).sum()
        loss.backward()
        return loss

    def train(self, max_steps):
        LOOP
            for (x,) in self.dataset:
                if self.step >= max_steps:
                    return
                self.train_step(x)
                self.step += 1


def _train(rank, model, dataset):
    Learner(model, dataset).train(100)


def train_distributed(rank, world):
    dist.init_process_group("gloo", rank=rank, world_size=world)
    _train(rank, DistributedDataParallel(torch.nn.Linear(4, 1)), from_path(distributed=True))


if __name__ == "__main__":
    torch.multiprocessing.spawn(train_distributed, args=(2,), nprocs=2)
"""


def test_a_loader_handed_on_and_kept_in_a_field_read_pass_after_pass_is_told(tmp_path):
    body = HANDED_LOADER.replace("LOOP", "while True:")
    found = _codes(lint_tree(tmp_path, {"train.py": body}), "DDP804")
    assert [f.location.line for f in found] == [_line(body, "sampler=DistributedSampler(data)")]


def test_a_loader_handed_on_and_read_once_is_not(tmp_path):
    # twin: one pass over the loader
    body = HANDED_LOADER.replace("LOOP", "if True:")
    assert _codes(lint_tree(tmp_path, {"train.py": body}), "DDP804") == []


# ------------------------------------------- a sampler built and read in a gradients-off method
# `@torch.no_grad() def compute_scores(self)` builds its own DistributedSampler and loader each
# time it is called: an evaluation's pass, whatever the training loop elsewhere calls its own
# loader (DDP804 is the training loader's).
GRAD_OFF_PASS = """import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel
from torch.utils.data import DataLoader, DistributedSampler, TensorDataset


class Trainer:
    def __init__(self, model, data):
        self.model = model
        self.data = data

    def train(self, epoch):
        sampler = DistributedSampler(self.data)
        sampler.set_epoch(epoch)
        dataloader = DataLoader(self.data, batch_size=8, sampler=sampler)
        for (x,) in dataloader:
            self.model(x).sum().backward()

    DECORATOR
    def compute_scores(self):
        sampler = DistributedSampler(self.data)
        dataloader = DataLoader(self.data, batch_size=8, sampler=sampler)
        total = 0.0
        for (x,) in dataloader:
            STEP
        return total


def main():
    dist.init_process_group("gloo")
    trainer = Trainer(DistributedDataParallel(torch.nn.Linear(4, 1)), TensorDataset(torch.randn(64, 4)))
    for epoch in range(5):
        trainer.train(epoch)
        print(trainer.compute_scores())


if __name__ == "__main__":
    main()
"""


def test_a_sampler_built_and_read_with_gradients_off_is_an_evaluations(tmp_path):
    body = GRAD_OFF_PASS.replace("DECORATOR", "@torch.no_grad()").replace("STEP", "total += self.model(x).sum().item()")
    assert _codes(lint_tree(tmp_path, {"train.py": body}), "DDP804") == []


def test_a_sampler_built_and_read_by_a_training_pass_is_still_told(tmp_path):
    # twin: the same method trains, gradients on
    body = GRAD_OFF_PASS.replace("    DECORATOR\n", "").replace("STEP", "self.model(x).sum().backward()")
    found = _codes(lint_tree(tmp_path, {"train.py": body}), "DDP804")
    assert [f.location.line for f in found] == [_line(body, "def compute_scores(self):") + 1]


# ------------------------------------------- a metric made of what a gathering helper hands back
# `ranks = comm_cat(ranks)`, a helper that unpacks what it is handed (`values, sizes = read(obj)`),
# fills a buffer, all-reduces it and hands back what it makes of it: what it returns is every
# rank's, and so is the metric the evaluation makes of it; `if mrr > best: save()` (a barrier
# inside) decides alike (no DDP809).
GATHERED_METRIC = """import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel
from torch.utils.data import DataLoader, DistributedSampler, TensorDataset


def read(obj):
    return [obj], [torch.tensor([obj.numel()])]


def write(obj, buffer):
    return [buffer.view(-1, 1)]


def comm_cat(obj):
    values, sizes = read(obj)
    total = torch.stack(sizes).sum()
    for value in values:
        buffer = torch.zeros(int(total) * dist.get_world_size(), dtype=value.dtype)
        buffer[:value.numel()] = value
        REDUCE
    return write(obj, buffer)[0]


def evaluate(model, loader):
    found = []
    with torch.no_grad():
        for (x,) in loader:
            score = model.module(x).sum().item()
            found += [[score]]
    ranks = torch.tensor(found)
    if dist.get_world_size() > 1:
        ranks = comm_cat(ranks)
    mrr = 0.0
    for (score,) in ranks.tolist():
        mrr += 1.0 / (abs(score) + 1)
    return mrr


def save(model):
    if dist.get_rank() == 0:
        torch.save(model.state_dict(), "best.pt")
    dist.barrier()


def main():
    dist.init_process_group("gloo")
    model = DistributedDataParallel(torch.nn.Linear(4, 1))
    data = TensorDataset(torch.randn(64, 4))
    loader = DataLoader(data, batch_size=8, sampler=DistributedSampler(data, shuffle=False))
    best = 0.0
    for epoch in range(5):
        model(torch.randn(8, 4)).sum().backward()
        mrr = evaluate(model, loader)
        if mrr > best:
            best = mrr
            save(model)


if __name__ == "__main__":
    main()
"""


def test_a_metric_made_of_a_gathering_helpers_result_is_every_ranks(tmp_path):
    body = GATHERED_METRIC.replace("REDUCE", "dist.all_reduce(buffer)")
    assert _codes(lint_tree(tmp_path, {"train.py": body}), "DDP809") == []


def test_a_metric_made_of_a_helper_reducing_to_rank_zero_stays_the_ranks_own(tmp_path):
    # twin: only rank 0 holds the sum
    body = GATHERED_METRIC.replace("REDUCE", "dist.reduce(buffer, dst=0)")
    found = _codes(lint_tree(tmp_path, {"train.py": body}), "DDP809")
    assert [f.location.line for f in found] == [_line(body, "if mrr > best:")]


def test_a_readme_placeholder_with_a_hash_is_no_comment(tmp_path):
    # `--nproc_per_node=<#gpus>`: the shell reads `#` as a comment only at a word's start, so the
    # options after the placeholder are the launch's (--accum 1: nothing accumulates)
    readme = "```\ntorchrun --nproc_per_node=<#gpus> train.py --accum 1\n```\n"
    assert _codes(lint_tree(tmp_path, {"train.py": ACCUMULATING, "README.md": readme}), "DDP805") == []


def test_a_readme_placeholder_launch_that_accumulates_is_told(tmp_path):
    readme = "```\ntorchrun --nproc_per_node=<#gpus> train.py --accum 4  # four steps a update\n```\n"
    found = _codes(lint_tree(tmp_path, {"train.py": ACCUMULATING, "README.md": readme}), "DDP805")
    assert [f.location.line for f in found] == [_line(ACCUMULATING, "    loss.backward()")]


# ------------------------------------------- the one-GPU side of `if world_size > 1:`, and a no-grad tail
# `if world_size > 1: <broadcast rank 0's stop flag>; ... elif stop: break` - the `elif` runs only
# where the run is one process: no ranks there to disagree. And after the loop, `if not stop:
# evaluate(model)` on every rank while rank 0 alone set `stop`: with gradients off that forward
# broadcasts buffers only as the first after a training step (a warning naming that), with
# gradients on it is the hang itself (an error).
STOP_FLAG = """import torch
import torch.distributed as dist
from torch import nn
from torch.nn.parallel import DistributedDataParallel


def evaluate(model):
    GRAD
        return model(torch.randn(8, 4)).mean().item()


def train(model, rank, world_size):
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    stop = False
    best, bad = 1e9, 0
    for epoch in range(50):
        model(torch.randn(8, 4)).sum().backward()
        opt.step()
        opt.zero_grad()
        if rank == 0:
            loss = evaluate(model)
            if loss < best:
                best, bad = loss, 0
            else:
                bad += 1
            if bad >= 3:
                stop = True
        if world_size > 1:
            flag = torch.tensor(1.0 if stop else 0.0)
            dist.broadcast(flag, src=0)
            if flag.item() == 1.0:
                break
        ELSE
    if not stop:
        evaluate(model)


def main():
    dist.init_process_group("gloo")
    model = DistributedDataParallel(nn.Sequential(nn.Linear(4, 4), nn.BatchNorm1d(4)))
    train(model, dist.get_rank(), dist.get_world_size())


if __name__ == "__main__":
    main()
"""


def _stop_flag(grad: str, otherwise: str) -> str:
    return STOP_FLAG.replace("GRAD", grad).replace("ELSE", otherwise)


def test_the_one_process_side_of_the_world_size_test_decides_nothing_and_a_no_grad_tail_is_a_warning(tmp_path):
    body = _stop_flag("with torch.no_grad():", "elif stop:\n            break")
    found = _codes(lint_tree(tmp_path, {"train.py": body}), "DDP809")
    assert [(f.location.line, f.severity.value) for f in found] == [(_line(body, "if not stop:"), "warning")]


def test_a_stop_read_on_every_rank_and_a_training_tail_are_errors(tmp_path):
    # twin: the stop flag read outside the world-size test, and the tail's forward with gradients on
    body = _stop_flag("if True:", "if stop:\n            break")
    found = _codes(lint_tree(tmp_path, {"train.py": body}), "DDP809")
    assert [(f.location.line, f.severity.value) for f in found] == [
        (_line(body, "        if stop:"), "error"), (_line(body, "if not stop:"), "error")]


def test_a_readme_command_one_option_a_line_with_comments_keeps_the_options_after_them(tmp_path):
    # each line's own comment ends that line only, not the joined command
    readme = README_BLOCK.replace("--lr 0.01", "--lr 0.01  # smaller than the paper's").replace("OPTION", "--accum 1")
    assert _codes(lint_tree(tmp_path, {"train.py": ACCUMULATING, "README.md": readme}), "DDP805") == []
