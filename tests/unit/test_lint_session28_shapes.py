"""Shapes from session 28 (holdout 28, read after it was scored): proof before a warning, and
values followed where the source hands them on. Each with its healthy (or buggy) twin, written in
our own words."""

from __future__ import annotations

import textwrap

from ddpdoctor.lint.driver import gather, lint_results
from tests.unit.test_lint_round17_shapes import lint_plain
from tests.unit.test_lint_round50_shapes import at, line_of


def lint_tree(tmp_path, files: dict[str, str]):
    """A script with packages beside it: {"train.py": ..., "base/__init__.py": ...}."""
    for name, body in files.items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(body).lstrip("\n"))
    return [f for r in lint_results(gather(str(tmp_path / "train.py")), set()) for f in r.findings]


# -------------------------------------------------- a subclass whose base lives in a package read mid-walk
TEMPLATE = {
    "train.py": """
        import torch, torch.distributed as dist
        from torch.utils.data import DataLoader, TensorDataset, DistributedSampler
        from torch.nn.parallel import DistributedDataParallel as DDP
        from trainer import Trainer

        def main():
            dist.init_process_group("gloo")
            ds = TensorDataset(torch.randn(64, 4))
            sampler = DistributedSampler(ds, shuffle=True)  # the sampler
            loader = DataLoader(ds, batch_size=8, sampler=sampler)
            Trainer(DDP(torch.nn.Linear(4, 1)), loader, sampler).train()

        main()
    """,
    "base/__init__.py": "from .base_trainer import BaseTrainer\n",
    "base/base_trainer.py": """
        class BaseTrainer:
            def __init__(self, model, loader, sampler):
                self.model, self.loader, self.sampler = model, loader, sampler

            def train(self):
                for epoch in range(10):
                    self._train_epoch(epoch)

            def _train_epoch(self, epoch):
                raise NotImplementedError
    """,
    "trainer.py": """
        from base import BaseTrainer

        class Trainer(BaseTrainer):
            def _train_epoch(self, epoch):
                {set_epoch}
                for (x,) in self.loader:
                    self.model(x).sum().backward()
    """,
}


def _template(set_epoch: str) -> dict:
    return {**TEMPLATE, "trainer.py": TEMPLATE["trainer.py"].replace("{set_epoch}", set_epoch)}


def test_the_subclass_hook_that_sets_the_epoch_is_found_through_a_package_base(tmp_path):
    assert at(lint_tree(tmp_path, _template("self.sampler.set_epoch(epoch)")), "DDP804") == []


def test_its_twin_a_hook_that_never_sets_it_is_ddp804(tmp_path):
    found = lint_tree(tmp_path, _template("pass"))
    assert at(found, "DDP804") == [(line_of(TEMPLATE["train.py"], "# the sampler"), "warning")]


# -------------------------------------------------- a class picked into a name, then built
PICKED_CLASS = """
import torch, torch.distributed as dist
import savers

def main():
    dist.init_process_group("gloo")
    if {test}:
        saver_cls = savers.Saver
    else:
        saver_cls = savers.Saver
    saver_cls("ckpt.pt")

main()
"""
SAVERS = """
import torch

class Saver:
    def __init__(self, path):
        torch.save({}, path)  # the save
"""


def test_a_class_picked_into_a_name_runs_its_init_where_it_is_called(tmp_path):
    found = lint_plain(tmp_path, PICKED_CLASS.replace("{test}", "torch.cuda.is_available()"), savers=SAVERS)
    assert at(found, "DDP806") == [(line_of(SAVERS, "# the save") + 1, "warning")]  # (modules keep their first line)


# -------------------------------------------------- one node: mp.spawn's index is the job's rank
SPAWNED = """
import torch, torch.distributed as dist, torch.multiprocessing as mp
from torch.nn.parallel import DistributedDataParallel as DDP

def train(local_rank, args):
    {rank}
    gpu = local_rank
    dist.init_process_group("gloo", init_method="tcp://localhost:29500", rank=rank, world_size=args)
    model = DDP(torch.nn.Linear(4, 1))
    model(torch.randn(2, 4)).sum().backward()
    if gpu == 0:
        torch.save(model.state_dict(), "last.pt")  # the save

if __name__ == "__main__":
    mp.spawn(train, nprocs=2, args=(2,))
"""


def test_a_spawn_index_handed_on_as_the_rank_is_the_jobs_rank(tmp_path):
    assert at(lint_plain(tmp_path, SPAWNED.replace("{rank}", "rank = local_rank")), "DDP806") == []


def test_its_twin_a_rank_offset_by_the_node_writes_once_per_node(tmp_path):
    # a job on several nodes: the world size over two processes a node
    code = SPAWNED.replace("{rank}", "nnodes = int(args) // 2\n    rank = int(args) * 2 + local_rank")
    assert at(lint_plain(tmp_path, code), "DDP806") == [(line_of(code, "# the save"), "warning")]


NODE_OFFSET = """
import torch, torch.distributed as dist, torch.multiprocessing as mp
from torch.nn.parallel import DistributedDataParallel as DDP

def main(gpu, ngpus, config):
    config["rank"] = gpu + ngpus * config["n_node"]
    dist.init_process_group("gloo", rank=config["rank"], world_size=ngpus)
    model = DDP(torch.nn.Linear(4, 1))
    model(torch.randn(2, 4)).sum().backward()
    if gpu == 0:
        torch.save(model.state_dict(), "last.pt")  # the save

if __name__ == "__main__":
    config = {"dist_url": "tcp://127.0.0.1:29500"}
    config["n_node"] = {nodes}
    mp.spawn(main, nprocs=2, args=(2, config))
"""


def test_a_node_offset_held_at_zero_leaves_one_node(tmp_path):
    assert at(lint_plain(tmp_path, NODE_OFFSET.replace("{nodes}", "0  # one node")), "DDP806") == []


def test_its_twin_a_node_count_from_the_command_line_writes_once_per_node(tmp_path):
    code = NODE_OFFSET.replace("{nodes}", "int(__import__('sys').argv[1])")
    assert at(lint_plain(tmp_path, code), "DDP806") == [(line_of(code, "# the save"), "warning")]


# -------------------------------------------------- a rank's own entry of a list, a device test
LOOKUP = """
import torch, torch.distributed as dist, torch.multiprocessing as mp
from torch.nn.parallel import DistributedDataParallel as DDP

class Trainer:
    def __init__(self, model, gpu_id, devices):
        self.model, self.gpu_id, self.devices = model, gpu_id, devices

    def epoch(self):
        self.model(torch.randn(2, 4)).sum().backward()
        if {test}:
            torch.save(self.model.state_dict(), "best.pt")  # the save

def train(rank, devices):
    dist.init_process_group("gloo", rank=rank, world_size=len(devices))
    Trainer(DDP(torch.nn.Linear(4, 1)), devices[rank], devices).epoch()

if __name__ == "__main__":
    mp.spawn(train, nprocs=2, args=([0, 1],))
"""


def test_the_ranks_own_entry_of_a_device_list_compared_with_the_first_is_a_rank_test(tmp_path):
    assert at(lint_plain(tmp_path, LOOKUP.replace("{test}", "self.gpu_id == self.devices[0]")), "DDP806") == []


def test_its_twin_a_test_of_the_list_alone_is_every_rank(tmp_path):
    code = LOOKUP.replace("{test}", "len(self.devices) > 0")
    assert at(lint_plain(tmp_path, code), "DDP806") == [(line_of(code, "# the save"), "warning")]


DEVICE_TEST = """
import torch, torch.distributed as dist, torch.multiprocessing as mp
from torch.nn.parallel import DistributedDataParallel as DDP

def work(rank, world):
    dist.init_process_group("gloo", rank=rank, world_size=world)
    device = torch.device(f"cuda:{rank}")
    model = torch.nn.Linear(4, 1).to(device)
    DDP(model)(torch.randn(2, 4)).sum().backward()
    if {test}:
        torch.save(model.state_dict(), "model.pt")  # the save

if __name__ == "__main__":
    mp.spawn(work, args=(2,), nprocs=2)
"""


def test_a_model_on_the_first_gpu_of_a_one_node_spawn_is_rank_zero(tmp_path):
    code = DEVICE_TEST.replace("{test}", "model.weight.device == torch.device('cuda:0')")
    assert at(lint_plain(tmp_path, code), "DDP806") == []


def test_its_twin_a_device_type_test_holds_on_every_gpu(tmp_path):
    code = DEVICE_TEST.replace("{test}", "model.weight.device.type == 'cuda'")
    assert at(lint_plain(tmp_path, code), "DDP806") == [(line_of(code, "# the save"), "warning")]


def test_habitats_rank0_only_is_a_main_process_test(tmp_path):
    code = """
    import torch, torch.distributed as dist
    from habitat_baselines.rl.ddppo.ddp_utils import rank0_only

    dist.init_process_group("gloo")
    model = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(4, 1))
    model(torch.randn(2, 4)).sum().backward()
    if {test}:
        torch.save(model.state_dict(), "ckpt.pth")  # the save
    """
    assert at(lint_plain(tmp_path, code.replace("{test}", "rank0_only()")), "DDP806") == []
    twin = code.replace("{test}", "model.training")
    assert at(lint_plain(tmp_path, twin), "DDP806") == [(line_of(textwrap.dedent(twin), "# the save"), "warning")]


# -------------------------------------------------- `self.m()` in a mixin is a subclass's method
MIXIN = """
import torch, torch.distributed as dist
from models import Model, Hub

dist.init_process_group("gloo")
model = Model()
if dist.get_rank() == 0:
    model.save_pretrained("out")
Hub.push = staticmethod(Hub.push)
"""
MODELS = """
import torch

class Hub:
    def push(self, folder):
        self.save_pretrained(folder)

class {model}:
    def save_pretrained(self, folder):
        torch.save({}, folder + "/weights.pt")  # the save
"""


def test_a_mixins_self_call_does_not_reach_an_unrelated_class(tmp_path):
    found = lint_plain(tmp_path, MIXIN, models=MODELS.replace("{model}", "Model"))
    assert at(found, "DDP806") == []


def test_its_twin_a_class_that_mixes_it_in_is_reached(tmp_path):
    found = lint_plain(tmp_path, MIXIN, models=MODELS.replace("{model}", "Model(Hub)"))
    assert at(found, "DDP806") == [(line_of(MODELS, "# the save") + 1, "warning")]


# -------------------------------------------------- model-parallel groups read the same batches
TENSOR_PARALLEL = """
import torch, torch.distributed as dist
from torch.utils.data import DataLoader, TensorDataset

dist.init_process_group("gloo")
{groups}
model = torch.nn.Linear(4, 1)
loader = DataLoader(TensorDataset(torch.randn(64, 4)), batch_size=8)  # the loader
for (x,) in loader:
    print(model(x).sum().item())
"""


def test_ranks_split_into_model_parallel_groups_may_all_read_every_batch(tmp_path):
    code = TENSOR_PARALLEL.replace("{groups}", "group = dist.new_group(list(range(dist.get_world_size())))")
    assert at(lint_plain(tmp_path, code), "DDP802") == []


def test_its_twin_without_groups_every_rank_doing_the_whole_job_is_told(tmp_path):
    code = TENSOR_PARALLEL.replace("{groups}", "")
    assert at(lint_plain(tmp_path, code), "DDP802") == [(line_of(code, "# the loader"), "warning")]


# -------------------------------------------------- a side the constants never take
ACCUMULATE = """
import torch, torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

def main():
    dist.init_process_group("gloo")
    model = DDP(torch.nn.Linear(4, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    grad_accum = {k}
    for i in range(100):
        model(torch.randn(2, 4)).sum().backward()  # the backward
        if grad_accum > 1:
            if (i + 1) % grad_accum == 0:
                opt.step()
                opt.zero_grad()
        else:
            opt.step()
            opt.zero_grad()

main()
"""


def test_accumulation_under_a_switch_its_constant_turns_off_is_no_ddp805(tmp_path):
    assert at(lint_plain(tmp_path, ACCUMULATE.replace("{k}", "1")), "DDP805") == []


def test_its_twin_the_constant_turns_it_on(tmp_path):
    code = ACCUMULATE.replace("{k}", "4")
    assert at(lint_plain(tmp_path, code), "DDP805") == [(line_of(code, "# the backward"), "warning")]


# -------------------------------------------------- an early return that still hands back a loss
KEEPS_LOSS = """
import torch, torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

dist.init_process_group("gloo")
model = DDP(torch.nn.Linear(4, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.1)

def compute_loss(x):
    pred = model(x)
    scale = pred.detach().abs().max().item()
    total = pred.pow(2).mean() / scale
    if not torch.isfinite(total):  # the test
        {early}
    return total

for step in range(100):
    loss = compute_loss(torch.randn(2, 4))
    loss.backward()
    opt.step()
    opt.zero_grad()
"""


def test_a_skipped_batch_that_returns_a_zero_loss_through_the_forward_runs_the_backward(tmp_path):
    code = KEEPS_LOSS.replace("{early}", "return pred.sum() * 0.0")
    assert at(lint_plain(tmp_path, code), "DDP809") == []


# -------------------------------------------------- rank 0's early stop after `if not main: continue`
REST_OF_PASS = """
import torch, torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

def is_main_process():
    return dist.get_rank() == 0

dist.init_process_group("gloo")
model = DDP(torch.nn.Linear(4, 1))
best, stale = 0.0, 0
for epoch in range(10):
    score = model(torch.randn(8, 4)).sum()
    score.backward()
    if not is_main_process():
        continue
    if score.item() > best:
        best = score.item()
        continue
    stale += 1
    if {stop}:  # the stop
        break
"""


def test_rank_zeros_early_stop_below_a_continue_of_the_others_is_ddp809(tmp_path):
    code = REST_OF_PASS.replace("{stop}", "stale > 3")
    assert at(lint_plain(tmp_path, code), "DDP809") == [(line_of(code, "# the stop"), "warning")]


def test_its_twin_a_stop_every_rank_takes_before_the_continue(tmp_path):
    code = REST_OF_PASS.replace("    if not is_main_process():\n        continue\n", "").replace(
        "{stop}", "epoch > 8")
    assert at(lint_plain(tmp_path, code), "DDP809") == []


# -------------------------------------------------- loaders: which is training, which evaluation
BOTH_BUILDER = {
    "train.py": """
        import torch, torch.distributed as dist, numpy as np
        from torch.nn.parallel import DistributedDataParallel as DDP
        from data import create_train_and_valid_dataloader

        class Trainer:
            def __init__(self, seed):
                torch.manual_seed(seed)
                self.model = DDP(torch.nn.Linear(4, 1))
                self.tr_loader, self.vl_loader = create_train_and_valid_dataloader(8)

            def run_epoch(self, validate):
                loader = self.vl_loader if validate else self.tr_loader
                for x in loader:
                    loss = self.model(x).sum()
                    if not validate:
                        loss.backward()

        dist.init_process_group("gloo")
        t = Trainer(0)
        for epoch in range(3):
            t.run_epoch(False)
            t.run_epoch(True)
    """,
    "data.py": """
        import numpy as np, torch
        from torch.utils.data import DataLoader, Dataset, DistributedSampler

        class Crops(Dataset):
            def __len__(self):
                return 64

            def __getitem__(self, i):
                start = np.random.randint(0, 4)
                return torch.randn(8)[start:start + 4]

        def create_train_and_valid_dataloader(workers):
            dataset = Crops()
            sampler = DistributedSampler(dataset)
            tr_loader = DataLoader(dataset, sampler=sampler, batch_size=4, num_workers=workers)  # train
            dataset = Crops()
            sampler = DistributedSampler(dataset, shuffle=False)
            vl_loader = DataLoader(dataset, sampler=sampler, batch_size=1, num_workers=workers)  # valid
            return tr_loader, vl_loader
    """,
}


def test_a_builder_named_for_both_splits_and_a_conditional_pick_tell_train_from_valid(tmp_path):
    found = lint_tree(tmp_path, BOTH_BUILDER)
    assert [line for line, _ in at(found, "DDP808")] == [line_of(BOTH_BUILDER["data.py"], "# train")]


HANDED_CLASS = """
import random, torch, torch.distributed as dist
from torch.utils.data import DataLoader, Dataset, DistributedSampler
from torch.nn.parallel import DistributedDataParallel as DDP

class Lines(Dataset):
    def __len__(self):
        return 64

    def __getitem__(self, i):
        return torch.full((4,), {value})

class Collate:
    def __call__(self, batch):
        return torch.stack(batch)

class Manager:
    def __init__(self, params):
        self.dataset_class = params["dataset_class"]
        self.train_dataset = self.dataset_class()
        self.loader = DataLoader(self.train_dataset, sampler=DistributedSampler(self.train_dataset),  # the loader
                                 num_workers=4, collate_fn=Collate())

params = {"dataset_class": Lines}
seed = 1111 if "seed" not in params.keys() else params["seed"]
dist.init_process_group("gloo")
torch.manual_seed(seed)
model = DDP(torch.nn.Linear(4, 1))
for epoch in range(3):
    for x in Manager(params).loader:
        model(x).sum().backward()
"""


def test_a_dataset_class_handed_in_a_dict_is_judged_by_the_dataset_classes_not_the_collate(tmp_path):
    code = HANDED_CLASS.replace("{value}", "random.random()")
    assert at(lint_plain(tmp_path, code), "DDP808") == [(line_of(code, "# the loader"), "warning")]


def test_its_twin_a_dataset_that_draws_nothing(tmp_path):
    assert at(lint_plain(tmp_path, HANDED_CLASS.replace("{value}", "float(i)")), "DDP808") == []


def test_a_field_named_random_is_no_draw(tmp_path):
    code = HANDED_CLASS.replace("{value}", "float(self.is_random_next[i])").replace(
        "    def __len__(self):\n        return 64\n\n    def __getitem__",
        "    is_random_next = [0.0] * 64\n\n    def __len__(self):\n        return 64\n\n    def __getitem__", 1)
    assert at(lint_plain(tmp_path, code), "DDP808") == []


PHASE_BUILDER = """
import random, torch, torch.distributed as dist
from torch.utils.data import DataLoader, Dataset, DistributedSampler
from torch.nn.parallel import DistributedDataParallel as DDP

class Frames(Dataset):
    def __len__(self):
        return 64

    def __getitem__(self, i):
        return torch.full((4,), random.random())

def create_dataloader(dataset, phase, sampler=None):
    if phase == "train":
        return DataLoader(dataset, batch_size=4, num_workers=4, sampler=sampler)  # train
    else:
        return DataLoader(dataset, batch_size=1, num_workers=1)  # test

dist.init_process_group("gloo")
torch.manual_seed(0)
model = DDP(torch.nn.Linear(4, 1))
ds = Frames()
train_loader = create_dataloader(ds, "train", DistributedSampler(ds))
for epoch in range(3):
    for x in train_loader:
        model(x).sum().backward()
"""


def test_the_non_training_side_of_a_phase_builder_is_no_training_loader(tmp_path):
    assert [line for line, _ in at(lint_plain(tmp_path, PHASE_BUILDER), "DDP808")] == \
        [line_of(PHASE_BUILDER, "# train")]


SAMPLER_HELPER = """
import torch, torch.distributed as dist
from torch.utils.data import DataLoader, TensorDataset, DistributedSampler, SequentialSampler
from torch.nn.parallel import DistributedDataParallel as DDP

def data_sampler(dataset, shuffle, distributed):
    if distributed:
        return DistributedSampler(dataset, shuffle=shuffle)  # the sampler
    return SequentialSampler(dataset)

def endless(loader):
    while True:
        for batch in loader:
            yield batch

dist.init_process_group("gloo")
train_ds, test_ds = TensorDataset(torch.randn(64, 4)), TensorDataset(torch.randn(16, 4))
train_dl = DataLoader(train_ds, batch_size=4, sampler=data_sampler(train_ds, shuffle=True, distributed=True))
test_dl = DataLoader(test_ds, batch_size=4, sampler=data_sampler(test_ds, shuffle=False, distributed=True))
model = DDP(torch.nn.Linear(4, 1))
batches = endless(train_dl)
for step in range(1000):
    (x,) = next(batches)
    model(x).sum().backward()
"""


def test_a_sampler_helper_feeding_several_loaders_is_judged_by_the_one_it_shuffles(tmp_path):
    found = lint_plain(tmp_path, SAMPLER_HELPER)
    assert at(found, "DDP804") == [(line_of(SAMPLER_HELPER, "# the sampler"), "warning")]


MODULE_FIELD = {
    "train.py": """
        import torch, torch.distributed as dist
        from torch.nn.parallel import DistributedDataParallel as DDP
        from data import vid as vid_data

        class Trainer:
            def init_training(self):
                self.data_module = vid_data
                self.dataloader = self.data_module.data_loader(8)

            def train(self):
                model = DDP(torch.nn.Linear(4, 1))
                for epoch in range(10):
                    for (x,) in self.dataloader:
                        model(x).sum().backward()

        dist.init_process_group("gloo")
        t = Trainer()
        t.init_training()
        t.train()
    """,
    "data/__init__.py": "",
    "data/vid.py": """
        import torch
        from torch.utils.data import DataLoader, TensorDataset, DistributedSampler

        def data_loader(batch_size):
            ds = TensorDataset(torch.randn(64, 4))
            sampler = DistributedSampler(ds, shuffle=True)  # the sampler
            return DataLoader(ds, batch_size=batch_size, sampler=sampler)
    """,
}


def test_a_function_of_a_module_kept_in_a_field_is_followed(tmp_path):
    found = lint_tree(tmp_path, MODULE_FIELD)
    assert at(found, "DDP804") == [(line_of(MODULE_FIELD["data/vid.py"], "# the sampler"), "warning")]


def test_its_twin_a_fresh_zero_skips_the_forwards_backward(tmp_path):
    code = KEEPS_LOSS.replace("{early}", "return torch.tensor(0.0, requires_grad=True)")
    assert at(lint_plain(tmp_path, code), "DDP809") == [(line_of(code, "# the test"), "warning")]


# -------------------------------------------------- the analysis's budget: no verdict on half a reading
def test_an_analysis_past_its_budget_is_not_judged_and_not_cached(tmp_path, monkeypatch):
    import pytest

    from ddpdoctor.core.errors import UsageError
    from ddpdoctor.lint.driver import unreached

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setenv("DDPDOCTOR_LINT_BUDGET_S", "0.000001")
    script = tmp_path / "train.py"
    script.write_text(textwrap.dedent(ACCUMULATE.replace("{k}", "4")).lstrip("\n"))
    facts = gather(str(script))
    assert facts.stopped and not facts.cached
    notes, incomplete = unreached(facts)
    assert incomplete and "budget" in incomplete[0]
    monkeypatch.setenv("DDPDOCTOR_LINT_BUDGET_S", "60")
    again = gather(str(script))
    assert not again.stopped and not again.cached  # (the stopped run left nothing in the cache)
    assert [f.code for r in lint_results(again, set()) for f in r.findings] == ["DDP805"]
    monkeypatch.setenv("DDPDOCTOR_LINT_BUDGET_S", "soon")
    with pytest.raises(UsageError):
        gather(str(script))


MAIN_PROCESS_DRAW = """
import random, torch, torch.distributed as dist
from torch.utils.data import DataLoader, Dataset, DistributedSampler
from torch.nn.parallel import DistributedDataParallel as DDP

class Molecules(Dataset):
    def __init__(self, items):
        self.items = items

    def shuffle(self, seed):
        random.seed(seed)
        random.shuffle(self.items)

    def __len__(self):
        return len(self.items)

    def __getitem__(self, i):
        return {item}

def collate(batch):
    return torch.stack(batch)

dist.init_process_group("gloo")
torch.manual_seed(42)
data = Molecules([torch.randn(4) for _ in range(64)])
data.shuffle(0)
model = DDP(torch.nn.Linear(4, 1))
loader = DataLoader(data, sampler=DistributedSampler(data), num_workers=4, collate_fn=collate)  # the loader
for epoch in range(3):
    for x in loader:
        model(x).sum().backward()
"""


def test_a_draw_only_the_main_process_makes_is_no_worker_draw(tmp_path):
    code = MAIN_PROCESS_DRAW.replace("{item}", "self.items[i]")
    assert at(lint_plain(tmp_path, code), "DDP808") == []


def test_its_twin_a_draw_in_getitem_is(tmp_path):
    code = MAIN_PROCESS_DRAW.replace("{item}", "self.items[i] * random.random()")
    assert at(lint_plain(tmp_path, code), "DDP808") == [(line_of(code, "# the loader"), "warning")]


def test_an_evaluations_own_training_split_stays_evaluation():
    from ddpdoctor.lint.loader_facts import BOTH_SPLITS

    assert BOTH_SPLITS.search("create_train_and_valid_dataloader")
    assert BOTH_SPLITS.search("build_train_val_loaders")
    assert not BOTH_SPLITS.search("get_eval_train_dataloader")


LOOP_BATCH = """
import torch, torch.distributed as dist
from torch.utils.data import DataLoader, TensorDataset, DistributedSampler
from torch.nn.parallel import DistributedDataParallel as DDP

def prepare(batch):
    return {"masks": batch[0] > 0, "x": batch[0]}

dist.init_process_group("gloo")
ds = TensorDataset(torch.randn(64, 4))
model = DDP(torch.nn.Linear(4, 1))
for i, batch in enumerate(DataLoader(ds, batch_size=8, sampler=DistributedSampler(ds))):
    inputs = prepare(batch)
    if {test}:  # the skip
        continue
    model(inputs["x"]).sum().backward()
"""


def test_a_skip_on_the_values_of_the_batch_the_loop_prepared_is_ddp809(tmp_path):
    code = LOOP_BATCH.replace("{test}", "(inputs['masks'].sum(-1) < 2).sum() > 0")
    assert at(lint_plain(tmp_path, code), "DDP809") == [(line_of(code, "# the skip"), "warning")]


def test_its_twin_a_skip_on_the_counter_every_rank_shares(tmp_path):
    code = LOOP_BATCH.replace("{test}", "torch.tensor(i).sum() > 5")
    assert at(lint_plain(tmp_path, code), "DDP809") == []


def test_a_device_built_by_a_call_and_names_copied_round_in_a_circle_are_read_without_a_crash(tmp_path):
    code = """
    import torch, torch.distributed as dist, torch.multiprocessing as mp

    def kind():
        return "cuda"

    def work(i, n):
        a = b
        b = a
        dist.init_process_group("gloo", rank=a, world_size=n)
        model = torch.nn.Linear(4, 1)
        if model.weight.device == torch.device(kind()):
            torch.save(model.state_dict(), "m.pt")  # the save

    if __name__ == "__main__":
        mp.spawn(work, args=(2,), nprocs=2)
    """
    assert at(lint_plain(tmp_path, code), "DDP806") == [(line_of(textwrap.dedent(code), "# the save"), "warning")]
