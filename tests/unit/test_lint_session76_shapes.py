"""Shapes from session 76 (the shapes holdout 106 left, then holdout 107's reading after its
unread score), each with its twin, in our own words."""

from __future__ import annotations

from tests.unit.test_lint_session39_shapes import lint_tree
from tests.unit.test_lint_session61_shapes import _codes, _line

TRAIN_TAIL = """

def main():
    dist.init_process_group("gloo")
    net = DDP(torch.nn.Linear(1, 1))
    opt = torch.optim.SGD(net.parameters(), lr=0.1)
    data = SETS()
    sampler = DistributedSampler(data)
    loader = DataLoader(data, batch_size=4, sampler=sampler)
    for epoch in range(3):
        sampler.set_epoch(epoch)
        for x in loader:
            opt.zero_grad()
            net(x).sum().backward()
            opt.step()


if __name__ == "__main__":
    main()
"""

HEAD = """import numpy as np
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, Dataset
from torch.utils.data.distributed import DistributedSampler
"""

# -------------------------------------------------- a pick in a module-level helper, two builds down
# the dataset is built through a name bound to a local factory function (`SETS = make_train`), its
# constructor builds a file index whose constructor keeps `pick_every(files, k)`: an unseeded
# `np.random.choice` there gives each rank its own list to shard (DDP803)
PICKER = HEAD + """

def pick_every(files, k):
    return list(np.random.choice(files, len(files) // k, replace=False))


class FileIndex:
    def __init__(self, k):
        self.files = pick_every([f"f{i}" for i in range(100)], k)


class Frames(Dataset):
    def __init__(self, k):
        self.index = FileIndex(k)

    def __len__(self):
        return len(self.index.files)

    def __getitem__(self, i):
        return torch.tensor([float(i)])


def make_train():
    return Frames(3)


SETS = make_train
""" + TRAIN_TAIL


def test_a_pick_in_a_helper_two_constructors_down_a_factory_alias_is_ddp803(tmp_path):
    found = _codes(lint_tree(tmp_path, {"train.py": PICKER}), "DDP803")
    assert [f.location.line for f in found] == [_line(PICKER, "sampler = DistributedSampler")]
    assert "np.random.choice(files" in found[0].message


def test_its_twin_seeds_numpy_alike_before_the_dataset_is_built(tmp_path):
    twin = PICKER.replace('    dist.init_process_group("gloo")', '    dist.init_process_group("gloo")\n    np.random.seed(0)')
    assert _codes(lint_tree(tmp_path, {"train.py": twin}), "DDP803") == []


# -------------------------------------------------- a catalogue that returns one of several classes
# `build(name)` returns `Catalog.get(name)`, which builds one of three dataset classes by name;
# the first one draws a class-balanced list in its constructor when it is handed a length
CATALOG = HEAD + """

class Balanced(Dataset):
    def __init__(self, n=None):
        self.ids = list(range(50))
        if n is not None:
            self.ids = list(np.random.choice(self.ids, n))

    def __len__(self):
        return len(self.ids)

    def __getitem__(self, i):
        return torch.tensor([float(self.ids[i])])


class Plain(Dataset):
    def __init__(self, n=None):
        self.ids = list(range(50))

    def __len__(self):
        return len(self.ids)

    def __getitem__(self, i):
        return torch.tensor([float(self.ids[i])])


class Catalog:
    @staticmethod
    def get(name, n=None):
        if "balanced" in name:
            return Balanced(n=n)
        return Plain(n=n)


def build(name, n):
    data = Catalog.get(name, n=n)
    return data


def SETS():
    return build("balanced_train", 400)
""" + TRAIN_TAIL


def test_a_catalogue_class_among_several_that_draws_in_its_constructor_is_ddp803(tmp_path):
    found = _codes(lint_tree(tmp_path, {"train.py": CATALOG}), "DDP803")
    assert [f.location.line for f in found] == [_line(CATALOG, "sampler = DistributedSampler")]
    assert "np.random.choice(self.ids, n)" in found[0].message


def test_its_twin_draws_with_a_seeded_generator_of_its_own(tmp_path):
    twin = CATALOG.replace("np.random.choice(self.ids, n)", "np.random.default_rng(0).choice(self.ids, n)")
    assert _codes(lint_tree(tmp_path, {"train.py": twin}), "DDP803") == []


# -------------------------------------------------- a mode flag read from sys.argv picks the import
# `if "--generate" in sys.argv: from pkg import generate as main` / `else: from pkg import main`:
# the run as launched trains (the flag is absent unless given), so pkg/main.py is read (DDP804)
DISPATCHER = """import sys

if __name__ == "__main__":
    if "--generate" in sys.argv:
        from pkg import generate as main
    else:
        from pkg import main
    main.main()
"""
PKG_MAIN = """import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler


def main():
    dist.init_process_group("gloo")
    net = DDP(torch.nn.Linear(1, 1))
    opt = torch.optim.SGD(net.parameters(), lr=0.1)
    data = TensorDataset(torch.randn(64, 1))
    loader = DataLoader(data, batch_size=4, sampler=DistributedSampler(data))
    for epoch in range(3):
        for (x,) in loader:
            opt.zero_grad()
            net(x).sum().backward()
            opt.step()
"""
PKG_GENERATE = """import torch


def main():
    print(torch.zeros(1))
"""


def test_the_import_an_absent_argv_flag_leaves_is_the_one_read(tmp_path):
    found = _codes(lint_tree(tmp_path, {"run.py": DISPATCHER, "pkg/__init__.py": "", "pkg/main.py": PKG_MAIN,
                                        "pkg/generate.py": PKG_GENERATE}, script="run.py"), "DDP804")
    assert [(f.location.file.endswith("pkg/main.py"), f.location.line) for f in found] == \
        [(True, _line(PKG_MAIN, "loader = "))]


def test_its_twin_whose_training_side_needs_a_flag_reads_the_other_import(tmp_path):
    twin = DISPATCHER.replace('"--generate" in sys.argv', '"--train" not in sys.argv')
    assert _codes(lint_tree(tmp_path, {"run.py": twin, "pkg/__init__.py": "", "pkg/main.py": PKG_MAIN,
                                       "pkg/generate.py": PKG_GENERATE}, script="run.py"), "DDP804") == []


# -------------------------------------------------- a cache written once under a file lock
LOCKED = """import os
import torch
import torch.distributed as dist
from filelock import FileLock
from torch.nn.parallel import DistributedDataParallel as DDP


def load_tensors(path):
    with FileLock(path + ".lock"):
        if not os.path.exists(path):
            tmp = path + ".tmp"
            torch.save({"x": torch.randn(64, 1)}, tmp)
            os.rename(tmp, path)
        return torch.load(path)


def main():
    dist.init_process_group("gloo")
    net = DDP(torch.nn.Linear(1, 1))
    data = load_tensors("/tmp/cache.pt")["x"]
    opt = torch.optim.SGD(net.parameters(), lr=0.1)
    for x in data.split(4):
        opt.zero_grad()
        net(x).sum().backward()
        opt.step()


if __name__ == "__main__":
    main()
"""


def test_a_file_written_once_under_a_file_lock_where_it_is_missing_is_no_ddp806(tmp_path):
    assert _codes(lint_tree(tmp_path, {"train.py": LOCKED}), "DDP806") == []


def test_its_twin_without_the_missing_test_writes_on_every_rank(tmp_path):
    twin = LOCKED.replace("        if not os.path.exists(path):\n", "        if True:\n")
    found = _codes(lint_tree(tmp_path, {"train.py": twin}), "DDP806")
    assert [f.location.line for f in found] == [_line(twin, "torch.save(")]


# -------------------------------------------------- the tutorial's launcher helper hands the ranks on
# `def run_demo(fn, world): mp.spawn(fn, ...)` called with the worker: the launcher's save in
# `__main__` runs once, before the ranks exist (no DDP806); the worker's own save runs on every rank
SPAWN_HELPER = """import os
import torch
import torch.distributed as dist
import torch.multiprocessing as mp
from torch.nn.parallel import DistributedDataParallel as DDP


def worker(rank, world, model):
    dist.init_process_group("gloo", rank=rank, world_size=world)
    net = DDP(model)
    opt = torch.optim.SGD(net.parameters(), lr=0.1)
    for x in torch.randn(8, 4, 1):
        opt.zero_grad()
        net(x).sum().backward()
        opt.step()
    if rank == 0:
        torch.save(net.module.state_dict(), "final.pt")


def run_demo(fn, world, model):
    mp.spawn(fn, args=(world, model), nprocs=world, join=True)


if __name__ == "__main__":
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    os.environ.setdefault("MASTER_PORT", "29541")
    model = torch.nn.Linear(1, 1)
    torch.save(model.state_dict(), "before_training.pt")
    run_demo(worker, 2, model)
"""


def test_a_save_in_the_launcher_of_ranks_a_helper_spawns_is_no_ddp806(tmp_path):
    assert _codes(lint_tree(tmp_path, {"train.py": SPAWN_HELPER}), "DDP806") == []


def test_its_twin_saving_in_the_spawned_worker_on_every_rank_is_ddp806(tmp_path):
    twin = SPAWN_HELPER.replace("    if rank == 0:\n        torch.save(net.module", "    if True:\n        torch.save(net.module")
    found = _codes(lint_tree(tmp_path, {"train.py": twin}), "DDP806")
    assert [f.location.line for f in found] == [_line(twin, 'torch.save(net.module')]


# -------------------------------------------------- a draw on a side the launched options rule out
# `elif self.args.raw_label:` (a store_true every launch gives) keeps the draw of the `else:` side out
# of the workers: alike seeds make nothing alike (no DDP808)
RAW_LABEL = """import argparse
import random
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, Dataset
from torch.utils.data.distributed import DistributedSampler


def parse_args():
    parser = argparse.ArgumentParser()
    parser.add_argument("--raw_label", action="store_true")
    parser.add_argument("--classifier", action="store_true")
    parser.add_argument("--seed", type=int, default=9)
    return parser.parse_args()


class Answers(Dataset):
    def __init__(self, args):
        self.args = args

    def __len__(self):
        return 64

    def __getitem__(self, i):
        if self.args.classifier:
            target = 0.0
        elif self.args.raw_label:
            target = float(i)
        else:
            target = random.choice([0.0, 1.0])
        return torch.tensor([target])


def main(args):
    dist.init_process_group("gloo")
    torch.manual_seed(args.seed)
    net = DDP(torch.nn.Linear(1, 1))
    opt = torch.optim.SGD(net.parameters(), lr=0.1)
    data = Answers(args)
    sampler = DistributedSampler(data)
    loader = DataLoader(data, batch_size=4, sampler=sampler, num_workers=2)
    for epoch in range(3):
        sampler.set_epoch(epoch)
        for x in loader:
            opt.zero_grad()
            net(x).sum().backward()
            opt.step()


if __name__ == "__main__":
    main(parse_args())
"""
LAUNCH_RAW = "torchrun --nproc_per_node 2 train.py --raw_label\n"


def test_a_draw_on_the_side_the_launched_store_true_rules_out_is_no_ddp808(tmp_path):
    assert _codes(lint_tree(tmp_path, {"train.py": RAW_LABEL, "run.sh": LAUNCH_RAW}), "DDP808") == []


def test_its_twin_launched_without_the_flag_draws_alike_in_every_ranks_workers(tmp_path):
    found = _codes(lint_tree(tmp_path, {"train.py": RAW_LABEL, "run.sh": LAUNCH_RAW.replace(" --raw_label", "")}),
                   "DDP808")
    assert [f.location.line for f in found] == [_line(RAW_LABEL, "loader = DataLoader")]


# -------------------------------------------------- a branch of subclasses nothing names
# the base's `self.init_data()` may run each subclass's override; the `Other` branch is built
# nowhere and named nowhere, so its loader (no sampler) is no loader of the run (no DDP802). (The
# engines live in a module the script imports: the script's own classes on a base are all live.)
ENGINES = """import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler


class Base:
    def __init__(self):
        dist.init_process_group("gloo")
        self.net = DDP(torch.nn.Linear(1, 1))
        self.opt = torch.optim.SGD(self.net.parameters(), lr=0.1)
        self.init_data()

    def init_data(self):
        raise NotImplementedError

    def run(self):
        for epoch in range(3):
            self.sampler.set_epoch(epoch)
            for (x,) in self.loader:
                self.opt.zero_grad()
                self.net(x).sum().backward()
                self.opt.step()


class Used(Base):
    def init_data(self):
        data = TensorDataset(torch.randn(64, 1))
        self.sampler = DistributedSampler(data)
        self.loader = DataLoader(data, batch_size=4, sampler=self.sampler)


class Other(Base):
    def init_data(self):
        data = TensorDataset(torch.randn(64, 1))
        self.loader = DataLoader(data, batch_size=4, shuffle=True)


class OtherVariant(Other):
    pass
"""
RUN_ENGINE = """from engines import Used

if __name__ == "__main__":
    Used().run()
"""


def test_an_override_in_a_branch_of_classes_nothing_builds_or_names_is_not_read(tmp_path):
    assert _codes(lint_tree(tmp_path, {"train.py": RUN_ENGINE, "engines.py": ENGINES}), "DDP802") == []


def test_its_twin_builds_the_variant_and_its_loader_is_read(tmp_path):
    twin = RUN_ENGINE.replace("import Used", "import OtherVariant, Used") + "    OtherVariant().run()\n"
    found = _codes(lint_tree(tmp_path, {"train.py": twin, "engines.py": ENGINES}), "DDP802")
    assert [f.location.line for f in found] == [_line(ENGINES, "shuffle=True")]


# -------------------------------------------------- a SLURM requeue flag in the environment
# the handler (in a module of its own) sets `os.environ["SIGNAL_RECEIVED"] = "True"`; rank 0 alone
# tests it each step and calls a helper that requeues and ends with `exit(0)`: the others go on
# into the next step (DDP809)
SLURM = """import os


def on_signal(signum, frame):
    os.environ["SIGNAL_RECEIVED"] = "True"


def requeue():
    os.system("scontrol requeue " + os.environ.get("SLURM_JOB_ID", ""))
    exit(0)
"""
REQUEUE = """import os
import signal
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from slurm import on_signal, requeue


def main():
    os.environ["SIGNAL_RECEIVED"] = "False"
    signal.signal(signal.SIGUSR1, on_signal)
    dist.init_process_group("gloo")
    net = DDP(torch.nn.Linear(1, 1))
    opt = torch.optim.SGD(net.parameters(), lr=0.1)
    for x in torch.randn(100, 4, 1):
        opt.zero_grad()
        net(x).sum().backward()
        opt.step()
        if dist.get_rank() == 0 and os.environ["SIGNAL_RECEIVED"] == "True":
            requeue()


if __name__ == "__main__":
    main()
"""


def test_an_environment_flag_a_signal_handler_sets_deciding_an_exit_through_a_helper_is_ddp809(tmp_path):
    found = _codes(lint_tree(tmp_path, {"train.py": REQUEUE, "slurm.py": SLURM}), "DDP809")
    assert [f.location.line for f in found] == [_line(REQUEUE, 'if dist.get_rank() == 0 and os.environ')]
    assert "on_signal" in found[0].message


def test_its_twin_whose_helper_only_requeues_and_returns_decides_nothing(tmp_path):
    twin = SLURM.replace("    exit(0)\n", "    return None\n")
    assert _codes(lint_tree(tmp_path, {"train.py": REQUEUE, "slurm.py": twin}), "DDP809") == []


# -------------------------------------------------- a split in a helper, the dataset from a tuple
# `train_set, eval_set = load_objs()`, handed to `make_loader(dataset)` whose sampler shards it;
# load_objs splits the rows with sklearn's `train_test_split` and no random_state (DDP803)
SPLIT = """import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, Dataset
from torch.utils.data.distributed import DistributedSampler


class Rows(Dataset):
    def __init__(self, rows):
        self.rows = rows

    def __len__(self):
        return len(self.rows)

    def __getitem__(self, i):
        return torch.tensor([float(self.rows[i])])


def split_rows(rows):
    from sklearn.model_selection import train_test_split
    train, test = train_test_split(rows, test_size=0.2)
    return train, test


def load_objs():
    train, test = split_rows(list(range(100)))
    return Rows(train), Rows(test)


def make_loader(dataset):
    return DataLoader(dataset, batch_size=4, sampler=DistributedSampler(dataset))


def main():
    dist.init_process_group("gloo")
    train_set, eval_set = load_objs()
    loader = make_loader(train_set)
    net = DDP(torch.nn.Linear(1, 1))
    opt = torch.optim.SGD(net.parameters(), lr=0.1)
    for epoch in range(3):
        loader.sampler.set_epoch(epoch)
        for x in loader:
            opt.zero_grad()
            net(x).sum().backward()
            opt.step()


if __name__ == "__main__":
    main()
"""


def test_a_split_in_a_helper_of_a_dataset_unpacked_from_a_builders_tuple_is_ddp803(tmp_path):
    found = _codes(lint_tree(tmp_path, {"train.py": SPLIT}), "DDP803")
    assert [f.location.line for f in found] == [_line(SPLIT, "return DataLoader(dataset")]
    assert "train_test_split(rows, test_size=0.2)" in found[0].message


def test_its_twin_splits_with_a_random_state(tmp_path):
    twin = SPLIT.replace("test_size=0.2)", "test_size=0.2, random_state=0)")
    assert _codes(lint_tree(tmp_path, {"train.py": twin}), "DDP803") == []


# -------------------------------------------------- a Trainer class picked by a conditional
# `cls = CachedTrainer if args.cache else MyTrainer; trainer = cls(...)`, the classes in a module of
# their own: a Hugging Face Trainer all the same; its get_train_dataloader override shards with its own DistributedSampler and runs
# workers over a dataset that draws, every rank seeded alike (DDP808)
TRAINERS = """from torch.utils.data import DataLoader
from torch.utils.data.distributed import DistributedSampler
from transformers import Trainer


class MyTrainer(Trainer):
    def _get_train_sampler(self):
        return DistributedSampler(self.train_dataset)

    def get_train_dataloader(self):
        return DataLoader(self.train_dataset, batch_size=4, sampler=self._get_train_sampler(), num_workers=4)


class CachedTrainer(MyTrainer):
    pass
"""
HF_PICKED = """import random
import torch
from torch.utils.data import Dataset
from transformers import HfArgumentParser, TrainingArguments, set_seed
from trainers import CachedTrainer, MyTrainer


class Groups(Dataset):
    def __len__(self):
        return 64

    def __getitem__(self, i):
        return {"x": torch.tensor([float(random.randint(0, 9))])}


def main():
    (args,) = HfArgumentParser((TrainingArguments,)).parse_args_into_dataclasses()
    set_seed(args.seed)
    cls = CachedTrainer if args.past_index > 0 else MyTrainer
    trainer = cls(model=torch.nn.Linear(1, 1), args=args, train_dataset=Groups())
    trainer.train()


if __name__ == "__main__":
    main()
"""


def test_a_trainer_class_a_conditional_picks_is_a_trainer_and_its_override_loader_is_read(tmp_path):
    found = _codes(lint_tree(tmp_path, {"train.py": HF_PICKED, "trainers.py": TRAINERS}), "DDP808")
    assert [f.location.line for f in found] == [_line(TRAINERS, "return DataLoader(self.train_dataset")]


def test_its_twin_whose_dataset_draws_nothing(tmp_path):
    twin = HF_PICKED.replace("float(random.randint(0, 9))", "float(i)")
    assert _codes(lint_tree(tmp_path, {"train.py": twin, "trainers.py": TRAINERS}), "DDP808") == []


# -------------------------------------------------- a name that holds one of several step helpers
# `step_fn = step_mse` / `elif ...: step_fn = step_nce`, then `step_fn(...)` each batch: each helper
# backpropagates every call and steps every k-th; told at the first helper's backward (DDP805)
STEP_FNS = """import argparse
from accelerate import Accelerator
import torch


def step_mse(model, x, opt, accelerator, k, step):
    loss = model(x).pow(2).mean() / k
    accelerator.backward(loss)
    if step % k == 0:
        opt.step()
        opt.zero_grad()


def step_nce(model, x, opt, accelerator, k, step):
    loss = model(x).abs().mean() / k
    accelerator.backward(loss)
    if step % k == 0:
        opt.step()
        opt.zero_grad()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--loss", default="mse")
    args = parser.parse_args()
    accelerator = Accelerator()
    model = torch.nn.Linear(1, 1)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    loader = torch.utils.data.DataLoader(torch.randn(64, 1), batch_size=4)
    model, opt, loader = accelerator.prepare(model, opt, loader)
    step_fn = None
    if args.loss == "mse":
        step_fn = step_mse
    elif args.loss == "nce":
        step_fn = step_nce
    for step, x in enumerate(loader, start=1):
        step_fn(model, x, opt, accelerator, 4, step)


if __name__ == "__main__":
    main()
"""


def test_gradient_accumulation_in_one_of_several_step_helpers_is_told_at_the_first_helpers_backward(tmp_path):
    found = _codes(lint_tree(tmp_path, {"train.py": STEP_FNS}), "DDP805")
    assert [f.location.line for f in found] == [_line(STEP_FNS, "accelerator.backward(loss)")]


def test_its_twin_steps_every_call(tmp_path):
    twin = STEP_FNS.replace("    if step % k == 0:\n        opt.step()\n        opt.zero_grad()\n",
                            "    opt.step()\n    opt.zero_grad()\n")
    assert _codes(lint_tree(tmp_path, {"train.py": twin}), "DDP805") == []
