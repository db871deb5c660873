"""Shapes from session 26 (holdout 26, spent), each with its healthy twin, written in our own words."""

from __future__ import annotations

from tests.unit.test_lint_round17_shapes import lint_plain


def at(found, code: str) -> list:
    return sorted((f.location.line, f.severity.value) for f in found if f.code == code)


def line_of(source: str, marker: str) -> int:
    return next(i for i, line in enumerate(source.lstrip("\n").splitlines(), 1) if marker in line)


# -------------------------------------------------- a seed helper that puts the rank in itself
SEED_HELPER = """
import random, torch, torch.distributed as dist
from torch.utils.data import DataLoader, Dataset, DistributedSampler

def set_seed(seed):
    {rebind}
    torch.manual_seed(seed)

class Crops(Dataset):
    def __len__(self):
        return 64
    def __getitem__(self, i):
        return torch.ones(4) * random.random()

def main(cfg):
    dist.init_process_group("gloo")
    set_seed(cfg["seed"])
    ds = Crops()
    loader = DataLoader(ds, batch_size=4, num_workers=2, sampler=DistributedSampler(ds))  # the loader
    for epoch in range(2):
        loader.sampler.set_epoch(epoch)
        for x in loader:
            pass

if __name__ == "__main__":
    main({"seed": 1})
"""


def test_a_seed_helper_that_adds_the_rank_to_its_parameter_seeds_apart(tmp_path):
    code = SEED_HELPER.replace("{rebind}", "seed = seed + dist.get_rank()")
    assert at(lint_plain(tmp_path, code), "DDP808") == []


def test_its_twin_the_helper_seeds_with_the_value_given(tmp_path):
    code = SEED_HELPER.replace("{rebind}", "pass")
    assert [line for line, _ in at(lint_plain(tmp_path, code), "DDP808")] == [line_of(code, "# the loader")]


# -------------------------------------------------- a collate that reverses a tensor draws nothing
FLIP_COLLATE = """
import random, torch, torch.distributed as dist
from torch.utils.data import DataLoader, DistributedSampler

def collate(items):
    {body}
    return torch.stack(ids)

def main():
    dist.init_process_group("gloo")
    torch.manual_seed(0)
    ds = [torch.arange(4) for _ in range(64)]
    loader = DataLoader(ds, batch_size=4, num_workers=2, collate_fn=collate, sampler=DistributedSampler(ds))  # the loader
    for epoch in range(2):
        loader.sampler.set_epoch(epoch)
        for x in loader:
            pass

if __name__ == "__main__":
    main()
"""


def test_a_tensor_flipped_on_the_spot_is_no_random_draw(tmp_path):
    code = FLIP_COLLATE.replace("{body}", "ids = [x.flip(0) for x in items]")
    assert at(lint_plain(tmp_path, code), "DDP808") == []


def test_its_twin_a_flip_a_coin_decides(tmp_path):
    code = FLIP_COLLATE.replace("{body}", "ids = [x.flip(0) if random.random() < 0.5 else x for x in items]")
    assert [line for line, _ in at(lint_plain(tmp_path, code), "DDP808")] == [line_of(code, "# the loader")]


# -------------------------------------------------- the resumed skip on rank 0, then each rank's own loss test
RESUME_SKIP = """
import torch, torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

def train(rank, batches, resumed):
    dist.init_process_group("gloo")
    model = DDP(torch.nn.Linear(4, 1))
    for epoch in range(3):
        for it, x in enumerate(batches):
            if it < resumed and rank == 0:  # the skip
                continue
            loss = model(x).mean()
            {shared}
            if not torch.isfinite(loss):  # the test
                continue
            loss.backward()
            dist.reduce(loss, 0)

if __name__ == "__main__":
    import torch.multiprocessing as mp
    mp.spawn(train, args=([], 0), nprocs=2)
"""


def test_a_rank_skip_on_a_resumed_count_is_told_once_and_the_loss_test_past_it_too(tmp_path):
    code = RESUME_SKIP.replace("{shared}", "pass")
    found = lint_plain(tmp_path, code)
    assert [line for line, _ in at(found, "DDP809")] == [line_of(code, "# the skip"), line_of(code, "# the test")]
    assert at(found, "DDP801") == []  # the reductions it skips are that skip's consequence


def test_its_twin_the_loss_is_shared_before_the_test(tmp_path):
    code = RESUME_SKIP.replace("{shared}", "dist.all_reduce(loss)")
    found = lint_plain(tmp_path, code)
    assert [line for line, _ in at(found, "DDP809")] == [line_of(code, "# the skip")]


# -------------------------------------------------- a save helper whose scaler argument is never None
SCALER_SAVE = """
import torch, torch.distributed as dist

class Scaler:
    def state_dict(self):
        return {}

def save_on_master(obj, path):
    if dist.get_rank() == 0:
        torch.save(obj, path)

def save_model(model, scaler, path):
    if scaler is not None:
        save_on_master({"model": model.state_dict(), "scaler": scaler.state_dict()}, path)
    else:
        torch.save({"model": model.state_dict()}, path)  # the plain save

def main():
    dist.init_process_group("gloo")
    model = torch.nn.Linear(2, 2)
    scaler = {scaler}
    for epoch in range(2):
        save_model(model=model, scaler=scaler, path="best.pth")

if __name__ == "__main__":
    main()
"""


def test_the_none_side_of_a_helper_every_call_hands_an_object_is_never_taken(tmp_path):
    assert at(lint_plain(tmp_path, SCALER_SAVE.replace("{scaler}", "Scaler()")), "DDP806") == []


def test_its_twin_a_call_that_hands_none(tmp_path):
    code = SCALER_SAVE.replace("{scaler}", "None")
    assert [line for line, _ in at(lint_plain(tmp_path, code), "DDP806")] == [line_of(code, "# the plain save")]


# -------------------------------------------------- one builder, a training loader read once and an evaluation loader
SHARED_BUILDER = """
import torch, torch.distributed as dist
from torch.utils.data import DataLoader, DistributedSampler

def make_loader(ds, mode="train"):
    sampler = DistributedSampler(ds, shuffle=True)  # the sampler
    return DataLoader(ds, batch_size=4, sampler=sampler)

def evaluate(model, loader):
    with torch.no_grad():
        for (x,) in loader:
            model(x)

def main():
    dist.init_process_group("gloo")
    model = torch.nn.Linear(2, 1)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    train_loader = make_loader(torch.utils.data.TensorDataset(torch.randn(64, 2)), mode="train")
    valid_loader = make_loader(torch.utils.data.TensorDataset(torch.randn(16, 2)), mode="valid")
{train}
        if step % 10 == 0:
            evaluate(model, valid_loader)

if __name__ == "__main__":
    main()
"""
ONE_PASS = """    batches = iter(train_loader)
    for step in range(16):
        (x,) = next(batches)
        model(x).sum().backward()
        opt.step()"""
EPOCHS = """    for step in range(16):
        for (x,) in train_loader:
            model(x).sum().backward()
            opt.step()"""


def test_a_shared_builder_whose_training_loader_is_read_once_needs_no_set_epoch(tmp_path):
    assert at(lint_plain(tmp_path, SHARED_BUILDER.replace("{train}", ONE_PASS)), "DDP804") == []


def test_its_twin_the_training_loader_is_read_epoch_after_epoch(tmp_path):
    code = SHARED_BUILDER.replace("{train}", EPOCHS)
    assert [line for line, _ in at(lint_plain(tmp_path, code), "DDP804")] == [line_of(code, "# the sampler")]


# -------------------------------------------------- set_epoch on the name a sampler builder's result is bound to
SAMPLER_BUILDER = """
import torch, torch.distributed as dist
from torch.utils.data import DataLoader, DistributedSampler, RandomSampler

def build_sampler(ds, shuffle):
    if dist.is_initialized():
        sampler = DistributedSampler(ds, shuffle=shuffle)  # the sampler
    else:
        sampler = RandomSampler(ds)
    return sampler

def main():
    dist.init_process_group("gloo")
    model = torch.nn.Linear(2, 1)
    ds = torch.utils.data.TensorDataset(torch.randn(64, 2))
    for epoch in range(3):
        sampler_train = build_sampler(ds, shuffle=True)
        loader = DataLoader(ds, batch_size=4, sampler=sampler_train)
        {set_epoch}
        for (x,) in loader:
            model(x).sum().backward()

if __name__ == "__main__":
    main()
"""


def test_set_epoch_on_the_name_the_builders_sampler_is_bound_to(tmp_path):
    code = SAMPLER_BUILDER.replace("{set_epoch}", "sampler_train.set_epoch(epoch)")
    assert at(lint_plain(tmp_path, code), "DDP804") == []


def test_its_twin_no_set_epoch_at_all(tmp_path):
    code = SAMPLER_BUILDER.replace("{set_epoch}", "pass")
    assert [line for line, _ in at(lint_plain(tmp_path, code), "DDP804")] == [line_of(code, "# the sampler")]


# -------------------------------------------------- a debug switch the spawn test requires off
DEBUG_OFF = """
import torch, torch.distributed as dist, torch.multiprocessing as mp
from torch.nn.parallel import DistributedDataParallel as DDP

class Cfg:
    debug = False

def worker(rank, world, cfg):
    dist.init_process_group("gloo", rank=rank, world_size=world)
    model = DDP(torch.nn.Linear(2, 1))
    for epoch in range(3):
        for step in range(8):
            model(torch.ones(1, 2)).sum().backward()
            if rank == 0:
                if cfg.debug:  # the stop
                    break

def main(cfg, world):
    if {spawn_test}:
        mp.spawn(worker, nprocs=world, args=(world, cfg))
    else:
        print("one process")

if __name__ == "__main__":
    main(Cfg(), 2)
"""


def test_a_break_on_a_switch_the_spawn_requires_off_never_runs_in_the_ranks(tmp_path):
    code = DEBUG_OFF.replace("{spawn_test}", "world > 1 and not cfg.debug")
    assert at(lint_plain(tmp_path, code), "DDP809") == []


def test_its_twin_the_spawn_does_not_ask_for_it(tmp_path):
    code = DEBUG_OFF.replace("{spawn_test}", "world > 1")
    assert [line for line, _ in at(lint_plain(tmp_path, code), "DDP809")] == [line_of(code, "# the stop")]


# -------------------------------------------------- rank 0's counter tested under the same plain test that holds it
COUNTER_UNDER_FLAG = """
import torch, torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

class Runner:
    def __init__(self, evaluate_only):
        self.evaluate_only = evaluate_only
        self.model = DDP(torch.nn.Linear(2, 1))

    def train(self):
        stale = 0
        if not self.evaluate_only:
            for epoch in range(100):
                self.model(torch.ones(1, 2)).sum().backward()
                if dist.get_rank() == 0:
                    stale += 1
                dist.barrier()
{test}

if __name__ == "__main__":
    dist.init_process_group("gloo")
    Runner(False).train()
"""


def test_a_counter_tested_inside_the_plain_test_that_holds_its_update_is_an_error(tmp_path):
    code = COUNTER_UNDER_FLAG.replace("{test}", "                if stale > 20:  # the test\n                    break")
    assert at(lint_plain(tmp_path, code), "DDP809") == [(line_of(code, "# the test"), "error")]


def test_its_twin_a_test_under_a_further_plain_test_stays_a_warning(tmp_path):
    code = COUNTER_UNDER_FLAG.replace(
        "{test}", "                if epoch > 2:\n                    if stale > 20:  # the test\n                        break")
    assert at(lint_plain(tmp_path, code), "DDP809") == [(line_of(code, "# the test"), "warning")]


# -------------------------------------------------- a list filled under a test of which keys the output has
KEYED_FILL = """
import torch, torch.distributed as dist

def evaluate(model, batches):
    labels = []
    for x in batches:
        out = {"logits": model(x)}
        if {test}:
            labels.extend(out["logits"].tolist())
    mine = torch.tensor(labels)
    gathered = [torch.zeros_like(mine) for _ in range(dist.get_world_size())]
    dist.all_gather(gathered, mine)  # the gather

if __name__ == "__main__":
    dist.init_process_group("gloo")
    evaluate(torch.nn.Linear(2, 1), [torch.ones(4, 2)] * 8)
"""


def test_a_list_filled_under_a_key_test_grows_alike_on_every_rank(tmp_path):
    assert at(lint_plain(tmp_path, KEYED_FILL.replace("{test}", '"logits" in out.keys()')), "DDP807") == []


def test_its_twin_a_list_filled_under_a_test_of_the_values(tmp_path):
    code = KEYED_FILL.replace("{test}", 'out["logits"].max() > 0')
    assert [line for line, _ in at(lint_plain(tmp_path, code), "DDP807")] == [line_of(code, "# the gather")]


# -------------------------------------------------- Accelerate's prepared loader thrown away
DISCARDED_PREPARE = """
import torch
from accelerate import Accelerator
from torch.utils.data import DataLoader, DistributedSampler

def main():
    accelerator = Accelerator()
    model = torch.nn.Linear(2, 1)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    ds = torch.utils.data.TensorDataset(torch.randn(64, 2))
    sampler = DistributedSampler(ds, num_replicas=1, rank=0)  # the sampler
    loader = DataLoader(ds, batch_size=8, sampler=sampler)
    model, opt, {kept} = accelerator.prepare(model, opt, loader)
    for epoch in range(3):
        for (x,) in loader:
            accelerator.backward(model(x).sum())
            opt.step()

if __name__ == "__main__":
    main()
"""


def test_a_loader_whose_prepared_copy_is_thrown_away_is_iterated_as_built(tmp_path):
    code = DISCARDED_PREPARE.replace("{kept}", "_")
    found = lint_plain(tmp_path, code)
    assert [line for line, _ in at(found, "DDP804")] == [line_of(code, "# the sampler")]
    assert at(found, "DDP803") == []  # nothing shards it again


def test_its_twin_the_prepared_loader_is_kept(tmp_path):
    found = lint_plain(tmp_path, DISCARDED_PREPARE.replace("{kept}", "loader"))
    assert at(found, "DDP804") == []


# -------------------------------------------------- a raise the same function catches is a skip
CAUGHT_RAISE = """
import numpy as np, torch, torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

class NanError(Exception):
    pass

def train_sample(model, x):
    try:
        loss = model(x).mean()
        if np.isnan(loss.item()):  # the test
            raise NanError
        loss.backward()
    except NanError:
        {handler}
    dist.reduce(loss.detach(), 0)

if __name__ == "__main__":
    dist.init_process_group("gloo")
    model = DDP(torch.nn.Linear(2, 1))
    for step in range(8):
        train_sample(model, torch.ones(4, 2))
"""


def test_a_raise_its_own_function_catches_skips_that_ranks_backward(tmp_path):
    code = CAUGHT_RAISE.replace("{handler}", 'print("nan")')
    assert [line for line, _ in at(lint_plain(tmp_path, code), "DDP809")] == [line_of(code, "# the test")]


def test_its_twin_the_handler_raises_again(tmp_path):
    code = CAUGHT_RAISE.replace("{handler}", "raise")
    assert at(lint_plain(tmp_path, code), "DDP809") == []


# -------------------------------------------------- a dataset module picked by name with str.format
FORMAT_IMPORT = """
import importlib, torch, torch.distributed as dist
from torch.utils.data import DataLoader, DistributedSampler

def find_dataset(name):
    module = importlib.import_module("mvsdata.{}".format(name))
    return getattr(module, "MVSDataset")

def main():
    dist.init_process_group("gloo")
    torch.manual_seed(1)
    MVSDataset = find_dataset("dtu")
    ds = MVSDataset()
    loader = DataLoader(ds, batch_size=2, num_workers=2, sampler=DistributedSampler(ds))  # the loader
    for epoch in range(2):
        loader.sampler.set_epoch(epoch)
        for x in loader:
            pass

if __name__ == "__main__":
    main()
"""
DTU = """
import random, torch
from torch.utils.data import Dataset

class MVSDataset(Dataset):
    def __len__(self):
        return 8
    def __getitem__(self, i):
        return torch.ones(2) * {draw}
"""


def _with_package(tmp_path, draw: str) -> None:
    package = tmp_path / "mvsdata"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "dtu.py").write_text(DTU.replace("{draw}", draw))


def test_a_dataset_module_named_by_format_is_read_for_its_draws(tmp_path):
    _with_package(tmp_path, "random.uniform(0.8, 1.25)")
    found = lint_plain(tmp_path, FORMAT_IMPORT)
    assert [line for line, _ in at(found, "DDP808")] == [line_of(FORMAT_IMPORT, "# the loader")]


def test_its_twin_that_dataset_draws_nothing(tmp_path):
    _with_package(tmp_path, "i")
    assert at(lint_plain(tmp_path, FORMAT_IMPORT), "DDP808") == []


# -------------------------------------------------- a transform object whose __call__ draws
CALLED_TRANSFORM = """
import torch, torch.distributed as dist
from torch.utils.data import DataLoader, Dataset, DistributedSampler

class Transform:
    def __init__(self, train):
        self.train = train
    def __call__(self, image):
        {body}
        return image

class Captions(Dataset):
    def __init__(self, train):
        self.transform = Transform(train=train)
    def __len__(self):
        return 8
    def __getitem__(self, i):
        return self.transform(torch.ones(3, 4, 4))

def main():
    dist.init_process_group("gloo")
    torch.manual_seed(42)
    ds = Captions(train=True)
    loader = DataLoader(ds, batch_size=2, num_workers=2, sampler=DistributedSampler(ds))  # the loader
    for epoch in range(2):
        loader.sampler.set_epoch(epoch)
        for x in loader:
            pass

if __name__ == "__main__":
    main()
"""


def test_a_transform_kept_by_the_dataset_draws_in_its_call(tmp_path):
    code = CALLED_TRANSFORM.replace("{body}", "if self.train and torch.rand(1) > 0.5:\n            image = image * 2")
    assert [line for line, _ in at(lint_plain(tmp_path, code), "DDP808")] == [line_of(code, "# the loader")]


def test_its_twin_the_transform_only_scales(tmp_path):
    code = CALLED_TRANSFORM.replace("{body}", "image = image / 255")
    assert at(lint_plain(tmp_path, code), "DDP808") == []


# -------------------------------------------------- an accumulation's backward on the side a copied option picks
COPIED_OPTION = """
import argparse, torch, torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

class Config:
    AMP_OPT_LEVEL = ""

def update_config(config, args):
    if args.amp_opt_level:
        config.AMP_OPT_LEVEL = args.amp_opt_level

def main():
    p = argparse.ArgumentParser()
    p.add_argument("--amp-opt-level", type=str, default="{default}")
    p.add_argument("--accumulation-steps", type=int, default=4)
    args = p.parse_args()
    config = Config()
    update_config(config, args)
    dist.init_process_group("gloo")
    model = DDP(torch.nn.Linear(2, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for idx in range(16):
        loss = model(torch.ones(1, 2)).sum() / args.accumulation_steps
        if config.AMP_OPT_LEVEL != "O0":
            scaled = loss * 1024
            scaled.backward()  # the apex side
        else:
            loss.backward()  # the plain side
        if (idx + 1) % args.accumulation_steps == 0:
            opt.step()
            opt.zero_grad()

if __name__ == "__main__":
    main()
"""


def test_the_accumulation_is_told_at_the_side_the_copied_options_default_takes(tmp_path):
    code = COPIED_OPTION.replace("{default}", "O0")
    assert [line for line, _ in at(lint_plain(tmp_path, code), "DDP805")] == [line_of(code, "# the plain side")]


def test_its_twin_a_default_that_takes_the_other_side(tmp_path):
    code = COPIED_OPTION.replace("{default}", "O1")
    assert [line for line, _ in at(lint_plain(tmp_path, code), "DDP805")] == [line_of(code, "# the apex side")]


# -------------------------------------------------- a trainer's class told by an isinstance test
NARROWED = """
import torch, torch.distributed as dist, torch.multiprocessing as mp
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader

class GanTrainer:
    def __init__(self):
        self.model = None
    def training(self, loader):
        for (x,) in loader:
            self.model(x).sum().backward()

class Sampler:
    def training(self, loader):
        with torch.no_grad():
            for (x,) in loader:
                self.model(x)

def run(rank, world, trainer):
    dist.init_process_group("gloo", rank=rank, world_size=world)
    trainer.model = DDP(torch.nn.Linear(2, 1))
    ds = torch.utils.data.TensorDataset(torch.randn(64, 2))
    if isinstance(trainer, {kind}):
        loader = DataLoader(ds, batch_size=4, shuffle=True)  # the loader
        trainer.training(loader)

if __name__ == "__main__":
    mp.spawn(run, args=(2, GanTrainer()), nprocs=2)
"""


def test_an_isinstance_test_tells_which_trainer_reads_the_loader(tmp_path):
    code = NARROWED.replace("{kind}", "GanTrainer")
    assert at(lint_plain(tmp_path, code), "DDP802") == [(line_of(code, "# the loader"), "error")]


def test_its_twin_the_class_tested_only_evaluates(tmp_path):
    code = NARROWED.replace("{kind}", "Sampler")
    assert [sev for _, sev in at(lint_plain(tmp_path, code), "DDP802")] != ["error"]


# -------------------------------------------------- set_epoch on a field unpacked from the builder's tuple
FIELD_SAMPLER = """
import torch, torch.distributed as dist
from torch.utils.data import DataLoader, DistributedSampler

class Trainer:
    def __init__(self):
        self.model = torch.nn.Linear(2, 1)
        self.train_loader, self.trainSampler = self.prepare()

    def prepare(self):
        ds = torch.utils.data.TensorDataset(torch.randn(64, 2))
        train_sampler = DistributedSampler(ds)  # the sampler
        train_loader = DataLoader(ds, batch_size=4, sampler=train_sampler)
        return train_loader, train_sampler

    def train(self):
        for epoch in range(3):
            {set_epoch}
            for (x,) in self.train_loader:
                self.model(x).sum().backward()

if __name__ == "__main__":
    dist.init_process_group("gloo")
    Trainer().train()
"""


def test_set_epoch_on_a_field_unpacked_from_the_builders_tuple(tmp_path):
    code = FIELD_SAMPLER.replace("{set_epoch}", "self.trainSampler.set_epoch(epoch)")
    assert at(lint_plain(tmp_path, code), "DDP804") == []


def test_its_twin_set_epoch_on_nothing(tmp_path):
    code = FIELD_SAMPLER.replace("{set_epoch}", "pass")
    assert [line for line, _ in at(lint_plain(tmp_path, code), "DDP804")] == [line_of(code, "# the sampler")]


# -------------------------------------------------- a subgroup whose members are the branch, or answer from elsewhere
GROUPS = """
import torch, torch.distributed as dist

class Server:
    def __init__(self, group, master):
        self.group, self.master = group, master

    def serve(self):
        calls = [None]
        dist.broadcast_object_list(calls, src=self.master, group=self.group)  # the broadcast

class Caller:
    def __init__(self, group, master):
        self.group, self.master = group, master

    def ask(self):
        dist.broadcast_object_list([None], src=self.master, group={caller_group})  # the ask

def main():
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    servers = [0, 1]
    server_group = dist.new_group(ranks=servers)
    other_group = dist.new_group(ranks=[0, 2])
    if {test}:
        Server(server_group, 1).serve()
    if rank == 0:
        Caller(server_group, 1).ask()  # the question

if __name__ == "__main__":
    main()
"""


def test_a_collective_on_the_group_the_branch_is_made_of_pairs_up(tmp_path):
    code = GROUPS.replace("{test}", "rank in servers").replace("{caller_group}", "other_group")
    found = [line for line, _ in at(lint_plain(tmp_path, code), "DDP801")]
    assert line_of(code, "# the broadcast") not in found


def test_a_collective_the_other_ranks_answer_on_the_same_group_from_elsewhere_pairs_up(tmp_path):
    code = GROUPS.replace("{test}", "rank == 1").replace("{caller_group}", "self.group")
    assert at(lint_plain(tmp_path, code), "DDP801") == []


def test_their_twin_neither_the_members_nor_an_answer(tmp_path):
    code = GROUPS.replace("{test}", "rank == 1").replace("{caller_group}", "other_group")
    assert [line for line, _ in at(lint_plain(tmp_path, code), "DDP801")] == [
        line_of(code, "# the broadcast"), line_of(code, "# the ask")]


# ================================================== round 50 (blind, session 26): each shape with its twin

# -------------------------------------------------- a seeding only rank 0 runs leaves the ranks apart
RANK0_SEED = """
import os, random, torch, torch.distributed as dist
from torch.utils.data import DataLoader, Dataset, DistributedSampler

class Noisy(Dataset):
    def __len__(self):
        return 64
    def __getitem__(self, i):
        return torch.ones(3) * random.random()

local_rank = int(os.environ["LOCAL_RANK"])
dist.init_process_group("gloo")
ds = Noisy()
sampler = DistributedSampler(ds)
loader = DataLoader(ds, batch_size=4, sampler=sampler, num_workers=2)  # the loader
for epoch in range(3):
    sampler.set_epoch(epoch)
    for x in loader:
        pass
    {seed}
"""


def test_a_seeding_under_a_rank_test_leaves_the_other_ranks_seeds_their_own(tmp_path):
    code = RANK0_SEED.replace("{seed}", "if local_rank == 0:\n        torch.manual_seed(20)")
    assert at(lint_plain(tmp_path, code), "DDP808") == []


def test_its_twin_every_rank_seeds_alike(tmp_path):
    code = RANK0_SEED.replace("{seed}", "torch.manual_seed(20)")
    assert [line for line, _ in at(lint_plain(tmp_path, code), "DDP808")] == [line_of(code, "# the loader")]


# -------------------------------------------------- writes on both sides of a config switch are one block
SWITCHED_BLOCK = """
import argparse, os, torch, torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

p = argparse.ArgumentParser()
p.add_argument("--local_rank", type=int, default=-1)
p.add_argument("--two_optims", action="store_true")
p.add_argument("--nnodes", type=int, default=1)  # a job on several nodes
args = p.parse_args()
dist.init_process_group("gloo")
net = DDP(torch.nn.Linear(4, 4))
opt_a = torch.optim.SGD(net.parameters(), lr=0.1)
opt_b = torch.optim.Adam(net.parameters())

def write_all(tag):
    torch.save(net.state_dict(), f"{tag}_net.pt")  # the first
    if args.two_optims:
        torch.save(opt_a.state_dict(), f"{tag}_a.pt")
        torch.save(opt_b.state_dict(), f"{tag}_b.pt")
    else:
        torch.save(opt_a.state_dict(), f"{tag}_a.pt")

for epoch in range(3):
    net(torch.randn(2, 4)).sum().backward()
    if {test}:
        write_all(f"ep{epoch}")
"""


def test_writes_on_both_sides_of_a_switch_after_the_models_are_one_finding(tmp_path):
    code = SWITCHED_BLOCK.replace("{test}", "args.local_rank <= 0")
    assert [line for line, _ in at(lint_plain(tmp_path, code), "DDP806")] == [line_of(code, "# the first")]


def test_its_twin_under_the_global_rank_test_nothing(tmp_path):
    code = SWITCHED_BLOCK.replace("{test}", "dist.get_rank() == 0")
    assert at(lint_plain(tmp_path, code), "DDP806") == []


# -------------------------------------------------- a draw only an option away from its default makes
GATED_DRAW = """
import argparse, numpy as np, torch, torch.distributed as dist
from torch.utils.data import DataLoader, Dataset, DistributedSampler

p = argparse.ArgumentParser()
p.add_argument("--frame_order", type=int, default={default})
args = p.parse_args()
dist.init_process_group("gloo")
torch.manual_seed(42)

class Clips(Dataset):
    def __init__(self, order):
        self.order = order
    def __len__(self):
        return 64
    def reorder(self, frames):
        if self.order == 1:
            frames = frames.flip(0)
        elif self.order == 2:
            idx = np.arange(frames.size(0))
            np.random.shuffle(idx)
            frames = frames[idx]
        return frames
    def __getitem__(self, i):
        return self.reorder(torch.full((8, 3), float(i)))

ds = Clips(args.frame_order)
sampler = DistributedSampler(ds)
loader = DataLoader(ds, batch_size=4, sampler=sampler, num_workers=2)  # the loader
for epoch in range(2):
    sampler.set_epoch(epoch)
    for x in loader:
        pass
"""


def test_a_draw_only_a_non_default_option_reaches_is_off_the_default_path(tmp_path):
    assert at(lint_plain(tmp_path, GATED_DRAW.replace("{default}", "0")), "DDP808") == []


def test_its_twin_the_default_takes_the_draw(tmp_path):
    code = GATED_DRAW.replace("{default}", "2")
    assert [line for line, _ in at(lint_plain(tmp_path, code), "DDP808")] == [line_of(code, "# the loader")]


# -------------------------------------------------- a plain loop on the one-process side of the spawn switch
PLAIN_SIDE = """
import torch, torch.distributed as dist, torch.multiprocessing as mp
from torch.nn.parallel import DistributedDataParallel as DDP

ACCUM = 4

def make_net():
    return torch.nn.Linear(8, 1)

def train_plain():
    net = make_net()
    opt = torch.optim.SGD(net.parameters(), lr=0.1)
    scaler = torch.cuda.amp.GradScaler()
    for i in range(64):
        loss = net(torch.randn(4, 8)).sum() / ACCUM
        scaler.scale(loss).backward()  # the plain backward
        if (i + 1) % ACCUM == 0:
            scaler.step(opt)
            opt.zero_grad()

def train_ddp(rank, world):
    dist.init_process_group("gloo", rank=rank, world_size=world)
    net = DDP(make_net())
    opt = torch.optim.SGD(net.parameters(), lr=0.1)
    scaler = torch.cuda.amp.GradScaler()
    for i in range(64):
        loss = net(torch.randn(4, 8)).sum() / ACCUM
        scaler.scale(loss).backward()  # the ddp backward
        if (i + 1) % ACCUM == 0:
            scaler.step(opt)
            opt.zero_grad()

if __name__ == "__main__":
    n = torch.cuda.device_count()
    if n >= 2:
        mp.spawn(train_ddp, args=(n,), nprocs=n)
    {plain_side}
"""


def test_an_accumulation_only_the_one_process_side_runs_is_no_finding(tmp_path):
    code = PLAIN_SIDE.replace("{plain_side}", "else:\n        train_plain()")
    assert [line for line, _ in at(lint_plain(tmp_path, code), "DDP805")] == [line_of(code, "# the ddp backward")]


def test_its_twin_the_plain_loop_runs_whatever_the_switch(tmp_path):
    # (session 80: the launcher that only starts the ranks never joins a group, so its own loop
    # syncs nothing - `test_a_loop_only_the_launcher_runs...` below; here it joins one itself)
    code = PLAIN_SIDE.replace("{plain_side}", "dist.init_process_group('gloo')\n    train_plain()")
    found = [line for line, _ in at(lint_plain(tmp_path, code), "DDP805")]
    assert line_of(code, "# the plain backward") in found


def test_a_loop_only_the_launcher_runs_beside_its_ranks_is_no_finding(tmp_path):
    code = PLAIN_SIDE.replace("{plain_side}", "train_plain()")
    assert [line for line, _ in at(lint_plain(tmp_path, code), "DDP805")] == [line_of(code, "# the ddp backward")]


# -------------------------------------------------- save_function alone decides no writer
SAVE_FUNCTION = """
import torch
from accelerate import Accelerator
from transformers import AutoModelForSeq2SeqLM

def checkpoint(accelerator, model):
    accelerator.wait_for_everyone()
    plain = accelerator.unwrap_model(model)
    plain.save_pretrained("out/best", {gate}save_function=accelerator.save)  # the save

def main():
    accelerator = Accelerator()
    model = accelerator.prepare(AutoModelForSeq2SeqLM.from_pretrained("t5-small"))
    for epoch in range(3):
        checkpoint(accelerator, model)

if __name__ == "__main__":
    main()
"""


def test_save_pretrained_handed_only_a_save_function_writes_on_every_rank(tmp_path):
    code = SAVE_FUNCTION.replace("{gate}", "")
    assert [line for line, _ in at(lint_plain(tmp_path, code), "DDP806")] == [line_of(code, "# the save")]


def test_its_twin_told_which_process_is_the_main_one(tmp_path):
    code = SAVE_FUNCTION.replace("{gate}", "is_main_process=accelerator.is_main_process, ")
    assert at(lint_plain(tmp_path, code), "DDP806") == []


# -------------------------------------------------- Accelerate's gather of a data-sized tensor
ACCEL_GATHER = """
import torch
from accelerate import Accelerator

accelerator = Accelerator()

def evaluate(batches):
    for x in batches:
        outs = []
        for k in set(x[:, 0].tolist()):
            rows = x[x[:, 0] == k]
            if rows.size(0) != 0:
                outs.append(rows)
        out = torch.cat(outs, dim=0)
        {pad}
        gathered = accelerator.gather(out)  # the gather

evaluate([torch.randint(0, 3, (8, 4))])
"""


def test_accelerates_gather_of_a_data_sized_tensor_is_a_data_sized_collective(tmp_path):
    code = ACCEL_GATHER.replace("{pad}", "pass")
    assert [line for line, _ in at(lint_plain(tmp_path, code), "DDP807")] == [line_of(code, "# the gather")]


def test_its_twin_padded_across_processes_first(tmp_path):
    code = ACCEL_GATHER.replace("{pad}", "out = accelerator.pad_across_processes(out, dim=0)")
    assert at(lint_plain(tmp_path, code), "DDP807") == []


# -------------------------------------------------- a trainer class picked by name from a module loaded by name
NAMED_TRAINER = """
from importlib import import_module
import torch.distributed as dist
import torch.multiprocessing as mp

def build(args, module):
    kind = args.pop("type")
    cls = getattr(import_module({module}), kind)
    return cls(**args)

def worker(rank, world, cfg):
    dist.init_process_group("gloo", rank=rank, world_size=world)
    trainer = build({"type": cfg["trainer"], "config": cfg}, "osph")
    trainer.run()

if __name__ == "__main__":
    mp.spawn(worker, args=(2, {"trainer": "PlainTrainer"}), nprocs=2)
"""
OSPH = """
import torch, torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

class PlainTrainer:
    def __init__(self, config):
        self.net = DDP(torch.nn.Linear(4, 2))

    def run(self):
        for epoch in range(3):
            self.net(torch.ones(2, 4)).sum().backward()
            torch.save(self.net.module.state_dict(), "last.pth")  # the save
"""


def _with_trainers(tmp_path) -> None:
    package = tmp_path / "osph"
    package.mkdir()
    (package / "__init__.py").write_text(OSPH.lstrip("\n"))


def test_a_class_picked_by_name_from_a_module_its_only_caller_names_is_followed(tmp_path):
    _with_trainers(tmp_path)
    found = lint_plain(tmp_path, NAMED_TRAINER.replace("{module}", "module"))
    assert [(f.location.file.endswith("osph/__init__.py"), f.location.line) for f in found if f.code == "DDP806"] \
        == [(True, line_of(OSPH, "# the save"))]


def test_so_is_one_from_a_module_spelled_in_place(tmp_path):
    _with_trainers(tmp_path)
    found = lint_plain(tmp_path, NAMED_TRAINER.replace("{module}", '"osph"'))
    assert [(f.location.file.endswith("osph/__init__.py"), f.location.line) for f in found if f.code == "DDP806"] \
        == [(True, line_of(OSPH, "# the save"))]


def test_their_twin_a_module_no_caller_spells(tmp_path):
    _with_trainers(tmp_path)
    code = NAMED_TRAINER.replace("{module}", "module").replace('cfg}, "osph")', 'cfg}, cfg["pkg"])')
    assert [f for f in lint_plain(tmp_path, code) if f.code == "DDP806"] == []


# -------------------------------------------------- a base's self.save() where the spawned run builds an override
OVERRIDDEN_SAVE = """
import torch, torch.distributed as dist, torch.multiprocessing as mp
from torch.nn.parallel import DistributedDataParallel as DDP

class Trainer:
    def __init__(self):
        self.rank = 0
        self.model = torch.nn.Linear(2, 1)

    def save_checkpoint(self):
        torch.save(self.model.state_dict(), "last.pt")  # the base save

    def training(self):
        for epoch in range(3):
            self.model(torch.ones(1, 2)).sum().backward()
            self.save_checkpoint()

class DDPTrainer(Trainer):
{override}

def run(rank, world, trainer):
    dist.init_process_group("gloo", rank=rank, world_size=world)
    trainer.rank = rank
    trainer.model = DDP(trainer.model)
    if isinstance(trainer, DDPTrainer):
        trainer.training()

def main(ddp):
    if ddp:
        mp.spawn(run, args=(2, DDPTrainer()), nprocs=2)
    else:
        trainer = Trainer()
        trainer.training()

if __name__ == "__main__":
    main(True)
"""
OVERRIDE = """    def save_checkpoint(self):
        if self.rank == 0:
            super().save_checkpoint()
"""


def test_a_base_save_the_distributed_runs_class_overrides_is_rank_zeros(tmp_path):
    code = OVERRIDDEN_SAVE.replace("{override}", OVERRIDE)
    assert at(lint_plain(tmp_path, code), "DDP806") == []


def test_its_twin_the_subclass_inherits_the_save(tmp_path):
    code = OVERRIDDEN_SAVE.replace("{override}", "    pass")
    assert [line for line, _ in at(lint_plain(tmp_path, code), "DDP806")] == [line_of(code, "# the base save")]


# ================================================== round 51 (blind, session 26): each shape with its twin

# -------------------------------------------------- the spawn index copied into args, handed as rank=
INDEX_COPY = """
import argparse, torch, torch.distributed as dist, torch.multiprocessing as mp

def worker(local_rank, nprocs, args):
    args.local_rank = local_rank
    dist.init_process_group("gloo", init_method="tcp://127.0.0.1:29511", world_size=nprocs, rank={rank})
    net = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(4, 2))
    for epoch in range(3):
        if args.local_rank == 0:
            torch.save(net.module.state_dict(), "best.pth")  # the save

if __name__ == "__main__":
    args = argparse.Namespace(node=0)
    mp.spawn(worker, nprocs=2, args=(2, args))
"""


def test_a_spawn_index_copied_into_args_and_handed_as_rank_is_the_jobs_rank(tmp_path):
    assert at(lint_plain(tmp_path, INDEX_COPY.replace("{rank}", "local_rank")), "DDP806") == []


def test_its_twin_the_job_rank_adds_the_nodes_offset(tmp_path):
    code = INDEX_COPY.replace("{rank}", "args.node * nprocs + local_rank")
    assert [line for line, _ in at(lint_plain(tmp_path, code), "DDP806")] == [line_of(code, "# the save")]


# -------------------------------------------------- a save under a flag every call leaves at its default
FLAG_SAVE = """
import os, torch, torch.distributed as dist

def train(model, epochs, main_process=True, qat=False):
    for epoch in range(epochs):
        model(torch.randn(2, 4)).sum().backward()
        if main_process:
            if qat:
                torch.save(model.state_dict(), "qat_last.pth")  # the save

def main():
    dist.init_process_group("gloo")
    main_process = int(os.environ["LOCAL_RANK"]) == 0
    nnodes = int(os.environ.get("NNODES", 1))  # a job on several nodes
    model = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(4, 2))
    train(model, 10, main_process{qat})

if __name__ == "__main__":
    main()
"""


def test_a_save_under_a_flag_every_call_leaves_off_is_never_written(tmp_path):
    assert at(lint_plain(tmp_path, FLAG_SAVE.replace("{qat}", "")), "DDP806") == []


def test_its_twin_a_call_that_turns_it_on(tmp_path):
    code = FLAG_SAVE.replace("{qat}", ", qat=True")
    assert [line for line, _ in at(lint_plain(tmp_path, code), "DDP806")] == [line_of(code, "# the save")]


# -------------------------------------------------- a function handed in as a parameter runs where it is called
CALLBACK = """
import torch, torch.distributed as dist, torch.nn as nn

def validate(model, batches):
    with torch.no_grad():
        for x in batches:
            model(x)  # the forward

def train(model, batches, validate_func, main_process=True):
    for epoch in range(3):
        for x in batches:
            model(x).sum().backward()
    {guard}validate_func(model, batches)

def main():
    dist.init_process_group("gloo")
    main_process = dist.get_rank() == 0
    net = nn.parallel.DistributedDataParallel(nn.Sequential(nn.Linear(4, 4), nn.BatchNorm1d(4)))
    train(net, [torch.randn(2, 4)], validate, main_process)
    dist.destroy_process_group()

if __name__ == "__main__":
    main()
"""


def test_a_rank_zero_evaluation_through_a_function_parameter_is_found(tmp_path):
    code = CALLBACK.replace("{guard}", "if main_process:\n        ")
    assert at(lint_plain(tmp_path, code), "DDP801") != []


def test_its_twin_every_rank_evaluates(tmp_path):
    assert at(lint_plain(tmp_path, CALLBACK.replace("{guard}", "")), "DDP801") == []


# -------------------------------------------------- the process's GPU handed through a holder is a placement
DEVICE_HOLDER = """
import torch, torch.distributed as dist
from torch.utils.data import DataLoader, Dataset, DistributedSampler

class Holder:
    def __init__(self, device):
        self.device = device
        self.tokenizer = str.split

class Pairs(Dataset):
    def __init__(self, tokenizer, part):
        self.rows = [torch.ones(4) * len(tokenizer(f"row {k}")) for k in range(64)][part::1]
    def __len__(self):
        return len(self.rows)
    def __getitem__(self, i):
        return self.rows[i]

def main():
    dist.init_process_group("gloo")
    device = torch.cuda.current_device()
    holder = Holder(device)
    dataset = Pairs(holder.tokenizer, {part})
    sampler = DistributedSampler(dataset, shuffle=True)  # the sampler
    loader = DataLoader(dataset, batch_size=8, sampler=sampler)
    for epoch in range(2):
        sampler.set_epoch(epoch)
        for x in loader:
            pass

if __name__ == "__main__":
    main()
"""


def test_the_device_index_reaching_a_dataset_through_a_holder_shards_nothing(tmp_path):
    assert at(lint_plain(tmp_path, DEVICE_HOLDER.replace("{part}", "0")), "DDP803") == []


def test_its_twin_a_dataset_cut_by_the_rank(tmp_path):
    code = DEVICE_HOLDER.replace("{part}", "dist.get_rank()")
    assert [line for line, _ in at(lint_plain(tmp_path, code), "DDP803")] == [line_of(code, "# the sampler")]


# -------------------------------------------------- an optimizer's own state_dict inside the full-state context
FULL_STATE = """
import torch, torch.distributed as dist
from torch.distributed.fsdp import FullyShardedDataParallel as FSDP
from torch.distributed.fsdp import FullStateDictConfig, StateDictType

def keep(model, opt, rank):
    if rank == 0:
        policy = FullStateDictConfig(offload_to_cpu=True, rank0_only=True)
        with FSDP.state_dict_type(model, StateDictType.FULL_STATE_DICT, policy):
            weights = model.state_dict()  # the gather
            moments = {moments}  # the optimizer
            torch.save({"model": weights, "opt": moments}, "rm.pt")

def train(rank, world):
    dist.init_process_group("gloo", rank=rank, world_size=world)
    model = FSDP(torch.nn.Linear(8, 8))
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    model(torch.randn(2, 8)).sum().backward()
    keep(model, opt, rank)

if __name__ == "__main__":
    import torch.multiprocessing as mp
    mp.spawn(train, args=(2,), nprocs=2)
"""


def test_a_plain_optimizers_state_dict_in_the_full_state_block_gathers_nothing(tmp_path):
    code = FULL_STATE.replace("{moments}", "opt.state_dict()")
    assert [line for line, _ in at(lint_plain(tmp_path, code), "DDP801")] == [line_of(code, "# the gather")]


def test_its_twin_fsdps_optimizer_state_gathers(tmp_path):
    code = FULL_STATE.replace("{moments}", "FSDP.optim_state_dict(model, opt)")
    assert [line for line, _ in at(lint_plain(tmp_path, code), "DDP801")] == [
        line_of(code, "# the gather"), line_of(code, "# the optimizer")]


# -------------------------------------------------- one class's prepared field is not another class's
TWO_TRAINERS = """
import torch, torch.distributed as dist
from accelerate import Accelerator
from torch.utils.data import DataLoader, DistributedSampler, TensorDataset

DATA = TensorDataset(torch.randn(64, 4))

class FSDPTrainer:
    def __init__(self):
        sampler = DistributedSampler(DATA)
        self.loader = DataLoader(DATA, batch_size=8, sampler=sampler)  # the loader
        self.sampler = sampler
    def fit(self):
        for epoch in range(2):
            self.sampler.set_epoch(epoch)
            for (x,) in self.loader:
                pass

class AccelTrainer:
    def __init__(self):
        self.accelerator = Accelerator()
        self.loader = DataLoader(DATA, batch_size=8, shuffle=True)
        self.loader = self.accelerator.prepare(self.loader)
    def fit(self):
        for (x,) in self.loader:
            pass

def main(strategy):
    if strategy == "fsdp":
        dist.init_process_group("gloo")
        {which}().fit()
    else:
        AccelTrainer().fit()

if __name__ == "__main__":
    main("fsdp")
"""


def test_a_field_another_class_prepares_is_not_this_classs(tmp_path):
    assert at(lint_plain(tmp_path, TWO_TRAINERS.replace("{which}", "FSDPTrainer")), "DDP803") == []


def test_its_twin_the_class_prepares_its_own_sampled_loader(tmp_path):
    code = TWO_TRAINERS.replace("{which}", "FSDPTrainer").replace(
        "        self.sampler = sampler\n",
        "        self.sampler = sampler\n        self.loader = Accelerator().prepare(self.loader)\n")
    assert at(lint_plain(tmp_path, code), "DDP803") != []


# -------------------------------------------------- the evaluation loader a builder returns as a tuple's item
TUPLE_VAL = """
import torch, torch.distributed as dist
from torch.utils.data import DataLoader, Dataset, DistributedSampler
from torchvision import transforms

class Crops(Dataset):
    def __init__(self, tf):
        self.tf = tf
    def __getitem__(self, i):
        return self.tf(torch.zeros(3, 9, 9))
    def __len__(self):
        return 32

def build_one(split):
    ds = Crops(transforms.RandomCrop(8))
    return DataLoader(ds, sampler=DistributedSampler(ds), batch_size=4, num_workers=2)  # the val loader

def build_train():
    ds = Crops(transforms.RandomCrop(8))
    return DataLoader(ds, sampler=DistributedSampler(ds), batch_size=4, num_workers=2)  # the train loader

def get_loaders():
    return build_train(), build_one("val")

def main():
    dist.init_process_group("gloo")
    torch.manual_seed(0)
    model = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(192, 2))
    train, val = get_loaders()
    for epoch in range(2):
        train.sampler.set_epoch(epoch)
        for x in train:
            model(x.flatten(1)).sum().backward()
        {val_loop}

if __name__ == "__main__":
    main()
"""


def test_a_validation_loader_returned_as_a_tuples_item_is_no_training_loader(tmp_path):
    code = TUPLE_VAL.replace("{val_loop}", "with torch.no_grad():\n            for x in val:\n                model(x.flatten(1))")
    assert [line for line, _ in at(lint_plain(tmp_path, code), "DDP808")] == [line_of(code, "# the train loader")]


def test_its_twin_that_loader_trains_too(tmp_path):
    code = TUPLE_VAL.replace("{val_loop}", "for x in val:\n            model(x.flatten(1)).sum().backward()")
    found = lint_plain(tmp_path, code)  # (one seeding feeds both: one finding naming the other)
    named = [[f"{f.location.line}"] + [x.rpartition(":")[2] for x in f.evidence.get("other_loaders", [])]
             for f in found if f.code == "DDP808"]
    assert [sorted(map(int, n)) for n in named] == [sorted([line_of(code, "# the train loader"),
                                                            line_of(code, "# the val loader")])]


# -------------------------------------------------- a model module named "models." + name + "_model", its class picked from its namespace
MODEL_BY_NAME = """
import importlib, torch.distributed as dist

def find_model(name):
    filename = {filename}
    lib = importlib.import_module(filename)
    model = None
    for key, cls in lib.__dict__.items():
        if key.lower() == name.lower() + "model":
            model = cls
    return model

def main(opt):
    dist.init_process_group("gloo")
    M = find_model(opt["model"])
    m = M(opt)
    for step in range(8):
        m.optimize()

if __name__ == "__main__":
    main({"model": "plain"})
"""
PLAIN_MODEL = """
import torch, torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

class PlainModel:
    def __init__(self, opt):
        self.net = DDP(torch.nn.Linear(4, 1))

    def optimize(self):
        loss = self.net(torch.randn(2, 4)).sum()
        if torch.isfinite(loss):  # the test
            loss.backward()
"""


def _with_models(tmp_path) -> None:
    package = tmp_path / "models"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "plain_model.py").write_text(PLAIN_MODEL.lstrip("\n"))


def test_a_model_module_named_around_its_varying_part_is_read_and_its_class_followed(tmp_path):
    _with_models(tmp_path)
    found = lint_plain(tmp_path, MODEL_BY_NAME.replace("{filename}", '"models." + name + "_model"'))
    assert [(f.location.file.endswith("plain_model.py"), f.location.line) for f in found if f.code == "DDP809"] \
        == [(True, line_of(PLAIN_MODEL, "# the test"))]


def test_its_twin_a_module_name_nothing_spells(tmp_path):
    _with_models(tmp_path)
    found = lint_plain(tmp_path, MODEL_BY_NAME.replace("{filename}", "name"))
    assert [f for f in found if f.code == "DDP809"] == []


# -------------------------------------------------- a trainer of its own beside an Accelerate one
OWN_BESIDE_ACCELERATE = """
import torch, torch.distributed as dist, torch.multiprocessing as mp
from accelerate import Accelerator
from torch.utils.data import DataLoader, DistributedSampler, TensorDataset

class ShardedTrainer:
    def __init__(self, train_set, rank, world):
        self.sampler = DistributedSampler(train_set, rank=rank, num_replicas=world, shuffle=True)
        self.loader = DataLoader(train_set, batch_size=4, {sampling})  # the loader
        self.model = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(16, 1))

    def fit(self, epochs):
        for epoch in range(epochs):
            self.sampler.set_epoch(epoch)
            for (x,) in self.loader:
                self.model(x).mean().backward()

class AccelTrainer:
    def __init__(self, train_set):
        self.loader = DataLoader(train_set, batch_size=4, shuffle=True)

    def fit(self):
        acc = Accelerator()
        net, loader = acc.prepare(torch.nn.Linear(16, 1), self.loader)
        for (x,) in loader:
            acc.backward(net(x).mean())

def run(rank, world):
    dist.init_process_group("gloo", rank=rank, world_size=world)
    ShardedTrainer(TensorDataset(torch.randn(256, 16)), rank, world).fit(2)

def main(strategy):
    if strategy == "ddp":
        mp.spawn(run, args=(2,), nprocs=2)
    else:
        AccelTrainer(TensorDataset(torch.randn(256, 16))).fit()

if __name__ == "__main__":
    main("ddp")
"""


def test_a_loader_built_apart_from_accelerate_in_a_run_of_its_own_is_judged(tmp_path):
    code = OWN_BESIDE_ACCELERATE.replace("{sampling}", "shuffle=True")
    assert [line for line, _ in at(lint_plain(tmp_path, code), "DDP802")] == [line_of(code, "# the loader")]


def test_its_twin_that_loader_takes_its_sampler(tmp_path):
    code = OWN_BESIDE_ACCELERATE.replace("{sampling}", "sampler=self.sampler")
    assert at(lint_plain(tmp_path, code), "DDP802") == []


# ================================================== round 52 (blind, session 26)

# -------------------------------------------------- a round-robin share with a collective inside each pass
ROUND_ROBIN_INSIDE = """
import torch, torch.distributed as dist

def eval_items(items, rank, world):
    seen = torch.zeros(1)
    for i, x in enumerate(items):
        if i % world != rank:  # the share
            continue
        seen += 1
        {collective}
    {after}
    return seen

def main():
    dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    print(eval_items([torch.ones(2)] * 11, rank, world))

if __name__ == "__main__":
    main()
"""


def test_a_collective_in_each_pass_a_round_robin_share_keeps_is_a_warning(tmp_path):
    code = ROUND_ROBIN_INSIDE.replace("{collective}", "dist.all_reduce(seen)").replace("{after}", "pass")
    assert at(lint_plain(tmp_path, code), "DDP809") == [(line_of(code, "# the share"), "warning")]


def test_its_twin_the_collective_after_the_loop(tmp_path):
    code = ROUND_ROBIN_INSIDE.replace("{collective}", "pass").replace("{after}", "dist.all_reduce(seen)")
    assert at(lint_plain(tmp_path, code), "DDP809") == []


# -------------------------------------------------- a worker_init_fn that seeds nothing keeps the base seed
QUIET_INIT = """
import random, torch, torch.distributed as dist
from torch.utils.data import DataLoader, Dataset, DistributedSampler

def init_worker(worker_id):
    {body}

class Clips(Dataset):
    def __len__(self):
        return 64
    def __getitem__(self, i):
        return torch.ones(3) * random.random()

def main():
    dist.init_process_group("gloo")
    torch.manual_seed(0)
    ds = Clips()
    loader = DataLoader(ds, batch_size=4, num_workers=2, sampler=DistributedSampler(ds),
                        worker_init_fn=init_worker)  # the loader
    for epoch in range(2):
        loader.sampler.set_epoch(epoch)
        for x in loader:
            pass

if __name__ == "__main__":
    main()
"""


def test_a_worker_init_fn_that_seeds_nothing_keeps_the_alike_base_seed(tmp_path):
    code = QUIET_INIT.replace("{body}", 'torch.multiprocessing.set_sharing_strategy("file_system")')
    assert [line for line, _ in at(lint_plain(tmp_path, code), "DDP808")] == [line_of(code, "DataLoader(ds")]


def test_its_twin_the_worker_reseeds_with_the_rank(tmp_path):
    code = QUIET_INIT.replace("{body}", "random.seed(dist.get_rank() * 100 + worker_id)")
    assert at(lint_plain(tmp_path, code), "DDP808") == []


# -------------------------------------------------- a Trainer subclass's own save_model
TRAINER_SAVE = """
import os, torch
from transformers import HfArgumentParser, Trainer, TrainingArguments, AutoModelForCausalLM

class AdapterOnlyTrainer(Trainer):
    def save_model(self, output_dir=None, _internal_call=False):
        target = output_dir or self.args.output_dir
        {gate}
        torch.save(self.args, os.path.join(target, "training_args.bin"))  # the save

def main():
    (args,) = HfArgumentParser((TrainingArguments,)).parse_args_into_dataclasses()
    trainer = AdapterOnlyTrainer(model=AutoModelForCausalLM.from_pretrained("gpt2"), args=args)
    trainer.train()

if __name__ == "__main__":
    main()
"""


def test_a_trainers_own_save_model_writes_on_every_rank(tmp_path):
    code = TRAINER_SAVE.replace("{gate}", "pass")
    assert [line for line, _ in at(lint_plain(tmp_path, code), "DDP806")] == [line_of(code, "# the save")]


def test_its_twin_it_asks_should_save_first(tmp_path):
    code = TRAINER_SAVE.replace("{gate}", "if not self.args.should_save:\n            return")
    assert at(lint_plain(tmp_path, code), "DDP806") == []


# -------------------------------------------------- ZeRO-3 consolidation on the main process alone
ZERO3 = """
from transformers import HfArgumentParser, Trainer, TrainingArguments, AutoModelForCausalLM
from transformers.integrations import is_deepspeed_zero3_enabled

def gather_full_weights(trainer):
    return trainer.model_wrapped._zero3_consolidated_16bit_state_dict()  # the gather

def main():
    (args,) = HfArgumentParser((TrainingArguments,)).parse_args_into_dataclasses()
    trainer = Trainer(model=AutoModelForCausalLM.from_pretrained("gpt2"), args=args)
    trainer.train()
    {guard}
        if is_deepspeed_zero3_enabled():
            gather_full_weights(trainer)

if __name__ == "__main__":
    main()
"""


def test_a_zero3_consolidation_on_the_main_process_alone_is_a_warning(tmp_path):
    code = ZERO3.replace("{guard}", "if trainer.is_world_process_zero():")
    assert at(lint_plain(tmp_path, code), "DDP801") == [(line_of(code, "# the gather"), "warning")]


def test_its_twin_every_rank_consolidates(tmp_path):
    code = ZERO3.replace("{guard}", "if True:")
    assert at(lint_plain(tmp_path, code), "DDP801") == []
