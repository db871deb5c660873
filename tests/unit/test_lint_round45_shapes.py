"""Shapes from session 24 (holdout 24, blind round 45), each with its healthy twin, written in our own words."""

from __future__ import annotations

from tests.unit.test_lint_round17_shapes import lint_plain
from tests.unit.test_lint_round25_shapes import lines_of


def at(found, code: str) -> list:
    return sorted((f.location.line, f.severity.value) for f in found if f.code == code)


# -------------------------------------------------- the test a DDP wrapper is built under is the run's switch
WRAP_SWITCH = """
import os, torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, DistributedSampler, TensorDataset

def launched() -> bool:
    return os.environ.get("LOCAL_RANK") is not None

def wrap(model):
    if {test}:
        return DDP(model)
    return model

def make_loader(ds):
    if {test}:
        return DataLoader(ds, batch_size=4, sampler=DistributedSampler(ds))
    else:
        return DataLoader(ds, batch_size=4, shuffle=True)

def main():
    if torch.cuda.is_available():
        dist.init_process_group("nccl")
    model = wrap(torch.nn.Linear(2, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    loader = make_loader(TensorDataset(torch.randn(32, 2)))
    for epoch in range(2):
        if {test}:
            loader.sampler.set_epoch(epoch)
        for (x,) in loader:
            opt.zero_grad()
            model(x).sum().backward()
            opt.step()

main()
"""


def test_the_else_of_the_test_the_ddp_wrapper_is_built_under_is_the_one_process_run(tmp_path):
    # the group is set up under another test (`torch.cuda.is_available()`): the helper that picks
    # the DDP wrapper picks the distributed run, so its `else:` loader is the one-process run's
    assert lines_of(lint_plain(tmp_path, WRAP_SWITCH.replace("{test}", "launched()")), "DDP802") == []


def test_its_twin_a_test_on_the_data_is_no_switch(tmp_path):
    code = WRAP_SWITCH.replace("{test}", "len(ds) > 16").replace(
        "    model = wrap(torch.nn.Linear(2, 1))", "    ds = TensorDataset(torch.randn(32, 2))\n"
        "    model = wrap(torch.nn.Linear(2, 1), ds)").replace("def wrap(model):", "def wrap(model, ds):").replace(
        "    loader = make_loader(TensorDataset(torch.randn(32, 2)))", "    loader = make_loader(ds)").replace(
        "        if len(ds) > 16:\n            loader.sampler", "        if hasattr(loader.sampler, 'set_epoch'):\n"
        "            loader.sampler")
    assert lines_of(lint_plain(tmp_path, code), "DDP802") == [18]


# -------------------------------------------------- a group-creation loop left early
GROUPS = """
import torch, torch.distributed as dist

_GROUP = None

def init_groups(size):
    global _GROUP
    rank, world = dist.get_rank(), dist.get_world_size()
    for i in range(0, world, size):
        ranks = range(i, i + size)
        group = dist.new_group(ranks)
        if rank in ranks:
            _GROUP = group
            {leave}

dist.init_process_group("gloo")
init_groups(2)
"""


def test_leaving_the_group_creation_loop_early_is_a_warning_that_says_why(tmp_path):
    found = [f for f in lint_plain(tmp_path, GROUPS.replace("{leave}", "break")) if f.code == "DDP809"]
    assert [(f.location.line, f.severity.value) for f in found] == [(11, "warning")]
    assert "new_group" in found[0].message and "TORCH_DIST_INIT_BARRIER" in found[0].message


def test_its_twin_every_rank_creates_every_group(tmp_path):
    assert lines_of(lint_plain(tmp_path, GROUPS.replace("{leave}", "pass")), "DDP809") == []


# -------------------------------------------------- one rank ending the process inside the training loop
EXIT = """
import sys, torch, torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

dist.init_process_group("gloo")
rank = dist.get_rank()
model = DDP(torch.nn.Linear(2, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.1)
epoch = 0
while True:
    opt.zero_grad()
    model(torch.randn(4, 2)).sum().backward()
    opt.step()
    {guard}
        if epoch >= 10:
            dist.destroy_process_group()
            sys.exit(0)
    epoch += 1
"""


def test_rank_zero_ending_the_process_inside_the_loop_is_a_rank_exit(tmp_path):
    found = [f for f in lint_plain(tmp_path, EXIT.replace("{guard}", "if rank == 0:")) if f.code == "DDP809"]
    assert [(f.location.line, f.severity.value) for f in found] == [(14, "warning")]
    assert "the program (exit)" in found[0].message


def test_its_twin_every_rank_ends(tmp_path):
    assert lines_of(lint_plain(tmp_path, EXIT.replace("{guard}", "if True:")), "DDP809") == []


# -------------------------------------------------- a rank test whose `and` holds only without a group
STOPPER = """
import os, torch, torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

RANK = int(os.getenv("RANK", -1))

def stopper(fitness):
    return fitness > 0.9

dist.init_process_group("gloo")
model = DDP(torch.nn.Linear(2, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for epoch in range(10):
    opt.zero_grad()
    model(torch.randn(4, 2)).sum().backward()
    opt.step()
    fitness = float(epoch) / 10
    if RANK in {-1, 0}:
        if {test} and stopper(fitness):
            break
"""


def test_a_stop_only_a_run_without_a_group_takes_is_no_rank_exit(tmp_path):
    assert lines_of(lint_plain(tmp_path, STOPPER.replace("{test}", "RANK == -1")), "DDP809") == []


def test_its_twin_the_stop_of_rank_zero_alone(tmp_path):
    assert lines_of(lint_plain(tmp_path, STOPPER.replace("{test}", "RANK == 0")), "DDP809") == [18]


# -------------------------------------------------- `rank test or X` reaching the collective only where X holds
STAGE3 = """
import argparse, torch, torch.distributed as dist

def my_save(args, state, path):
    if {inner}:
        dist.barrier()
    torch.save(state, path)

def train(args):
    dist.init_process_group("gloo")
    for step in range(5):
        if dist.get_rank() == 0 or "stage_3" in args.strategy:
            my_save(args, {}, f"ckpt{step}.pt")

p = argparse.ArgumentParser()
p.add_argument("--strategy", default="ddp")
p.add_argument("--sync", type=int, default=1)
train(p.parse_args())
"""


def test_a_collective_reached_only_under_the_or_that_makes_every_rank_take_the_branch(tmp_path):
    code = STAGE3.replace("{inner}", '"stage_3" in args.strategy')
    assert lines_of(lint_plain(tmp_path, code), "DDP801") == []


def test_its_twin_a_collective_under_another_test(tmp_path):
    code = STAGE3.replace("{inner}", "args.sync")
    assert lines_of(lint_plain(tmp_path, code), "DDP801") == [5]


# -------------------------------------------------- a main-process helper whose fallback is `return 0`
MAIN_GPU = """
import torch, torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

def is_main_gpu():
    if not dist.is_initialized():
        return 0
    return {answer}

def fit(model):
    for epoch in range(3):
        if epoch % 2 == 0 and is_main_gpu():
            torch.save(model.state_dict(), f"ckpt{epoch}.pt")

dist.init_process_group("gloo")
fit(DDP(torch.nn.Linear(2, 1)))
"""


def test_a_rank_helper_with_a_zero_fallback_is_a_rank_test(tmp_path):
    assert lines_of(lint_plain(tmp_path, MAIN_GPU.replace("{answer}", "dist.get_rank() == 0")), "DDP806") == []


def test_its_twin_a_helper_true_on_every_rank(tmp_path):
    code = MAIN_GPU.replace("{answer}", "dist.get_world_size() > 0")
    assert lines_of(lint_plain(tmp_path, code), "DDP806") == [12]


# -------------------------------------------------- a test loader read with next() by an evaluation helper
NEXT_READ = """
import random, torch, torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, Dataset, DistributedSampler

class Crops(Dataset):
    def __len__(self):
        return 64
    def __getitem__(self, i):
        return torch.randn(3) * random.random()

def evaluate(model, batches):
    x = next(batches)
    with torch.no_grad():
        score = model(x).mean().item()
    {tail}

torch.manual_seed(0)
dist.init_process_group("gloo")
model = DDP(torch.nn.Linear(3, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.1)
train_sampler = DistributedSampler(Crops())
train_loader = DataLoader(Crops(), sampler=train_sampler, num_workers=2)
holdout = DataLoader(Crops(), sampler=DistributedSampler(Crops(), shuffle=False), num_workers=2)
for epoch in range(3):
    train_sampler.set_epoch(epoch)
    for x in train_loader:
        opt.zero_grad()
        model(x).sum().backward()
        opt.step()
        evaluate(model, iter(holdout))
"""


def test_a_loader_only_an_evaluation_helper_reads_with_next_trains_nothing(tmp_path):
    found = lint_plain(tmp_path, NEXT_READ.replace("{tail}", "print(score)"))
    assert lines_of(found, "DDP808") == [22]  # the training loader only


def test_its_twin_a_helper_handing_the_batch_back_to_the_training_loop(tmp_path):
    code = NEXT_READ.replace("{tail}", "return x").replace(
        "        evaluate(model, iter(holdout))",
        "        opt.zero_grad(); model(evaluate(model, iter(holdout))).sum().backward(); opt.step()")
    found = lint_plain(tmp_path, code)  # (one seeding feeds both: one finding naming the other)
    assert lines_of(found, "DDP808") == [22]
    assert [f.evidence.get("other_loaders") for f in found if f.code == "DDP808"][0][0].endswith(":23")


# -------------------------------------------------- a builder's loader its callers keep under an evaluation name
KEPT_AS = """
import random, torch, torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, Dataset, DistributedSampler

class Crops(Dataset):
    def __init__(self, split):
        self.split = split
    def __len__(self):
        return 64
    def __getitem__(self, i):
        return torch.randn(3) * random.random()

class Loaders:
    def __init__(self, split):
        self.split = split
    def loader(self):
        ds = Crops(self.split)
        self.sampler = DistributedSampler(ds)
        loader = DataLoader(ds, batch_size=4, sampler=self.sampler, num_workers=1)
        return loader

class Trainer:
    def prepare(self):
        self.train_dataloader = Loaders("train").loader()
        self.{name} = Loaders("test").loader()
    def fit(self, model):
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        for epoch in range(3):
            self.train_dataloader.sampler.set_epoch(epoch)
            for x in self.train_dataloader:
                opt.zero_grad()
                model(x).sum().backward()
                opt.step()
        print(next(iter(self.{name})).shape)

torch.manual_seed(0)
dist.init_process_group("gloo")
t = Trainer()
t.prepare()
t.fit(DDP(torch.nn.Linear(3, 1)))
"""


def test_a_builders_loader_kept_only_under_evaluation_names_is_an_evaluation_loader(tmp_path):
    found = lint_plain(tmp_path, KEPT_AS.replace("{name}", "test_dataloader"))
    # one builder makes both: the training one is reported there, not twice
    assert lines_of(found, "DDP808") == [19]
    assert found[0].message.count("training") >= 1


# -------------------------------------------------- a rank exported as RANK by a self-launching script
EXPORTED = """
import argparse, os, sys, subprocess, torch, torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

def train(rank, world_size):
    {export}
    os.environ["WORLD_SIZE"] = str(world_size)
    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = "29500"
    dist.init_process_group("gloo")
    model = DDP(torch.nn.Linear(2, 1))
    if rank == 0:
        torch.save(model.state_dict(), "model.pt")

if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--local_rank", type=int, default=-1)
    args = parser.parse_args()
    if args.local_rank != -1:
        train(args.local_rank, 2)
    else:
        for i in range(2):
            subprocess.Popen([sys.executable, __file__, "--local_rank", str(i)])
"""


def test_a_local_rank_exported_as_rank_is_the_jobs_rank(tmp_path):
    found = lint_plain(tmp_path, EXPORTED.replace("{export}", 'os.environ["RANK"] = str(rank)'))
    assert lines_of(found, "DDP806") == []


def test_its_twin_a_local_rank_the_job_never_takes_as_its_rank(tmp_path):
    code = EXPORTED.replace("{export}", 'os.environ["RANK"] = os.environ.get("NODE_RANK", "0")')
    found = [f for f in lint_plain(tmp_path, code) if f.code == "DDP806"]
    assert [f.location.line for f in found] == [12] and "one rank per node" in found[0].message


# -------------------------------------------------- set_epoch on a sampler unpacked from a container
PHASES = """
import torch, torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, DistributedSampler, TensorDataset

def get_loaders():
    ds = TensorDataset(torch.randn(64, 2))
    train_sampler = DistributedSampler(ds)
    return DataLoader(ds, batch_size=4, sampler=train_sampler), train_sampler

class Manager:
    def __init__(self):
        self.phase = {"data": get_loaders()}
        self.trn_dl, self.trn_smp = self.phase["data"]
    def set_epoch(self, epoch):
        {call}

dist.init_process_group("gloo")
model = DDP(torch.nn.Linear(2, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.1)
dm = Manager()
for epoch in range(3):
    dm.set_epoch(epoch)
    for (x,) in dm.trn_dl:
        opt.zero_grad()
        model(x).sum().backward()
        opt.step()
"""


def test_set_epoch_on_a_sampler_unpacked_from_a_container_may_be_the_samplers(tmp_path):
    found = lint_plain(tmp_path, PHASES.replace("{call}", "self.trn_smp.set_epoch(epoch)"))
    assert lines_of(found, "DDP804") == []


def test_its_twin_no_set_epoch_at_all(tmp_path):
    found = lint_plain(tmp_path, PHASES.replace("{call}", "pass"))
    assert lines_of(found, "DDP804") == [7]


# -------------------------------------------------- a loader handed down two parameters to its loop
TWO_HOPS = """
import torch, torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, DistributedSampler, TensorDataset

def one_epoch(model, opt, train_loader):
    for (x,) in train_loader:
        opt.zero_grad()
        model(x).sum().backward()
        opt.step()

def train(model, opt, train_loader, epochs):
    for epoch in range(epochs):
        {set_epoch}
        one_epoch(model, opt, train_loader)

dist.init_process_group("gloo")
ds = TensorDataset(torch.randn(64, 2))
sampler = DistributedSampler(ds, shuffle=True)
train_dataloader = DataLoader(ds, batch_size=4, sampler=sampler)
model = DDP(torch.nn.Linear(2, 1))
train(model, torch.optim.SGD(model.parameters(), lr=0.1), train_dataloader, 5)
"""


def test_a_loader_iterated_two_parameters_down_inside_the_epoch_loop(tmp_path):
    assert lines_of(lint_plain(tmp_path, TWO_HOPS.replace("{set_epoch}", "pass")), "DDP804") == [18]


def test_its_twin_set_epoch_through_the_loader(tmp_path):
    code = TWO_HOPS.replace("{set_epoch}", "train_loader.sampler.set_epoch(epoch)")
    assert lines_of(lint_plain(tmp_path, code), "DDP804") == []


# -------------------------------------------------- a loader returned again by the caller that bound it
RETURNED_AGAIN = """
import torch, torch.distributed as dist, torch.multiprocessing as mp
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, TensorDataset

def prepare_data(x, y):
    train_dl = DataLoader(TensorDataset(x, y), batch_size=8, shuffle=True)
    return train_dl

def pre_processing():
    train_dat = prepare_data(torch.randn(64, 4), torch.randn(64, 1))
    valid_dat = prepare_data(torch.randn(16, 4), torch.randn(16, 1))
    return train_dat, valid_dat

def main(rank, world):
    dist.init_process_group("gloo", rank=rank, world_size=world)
    train_dat, valid_dat = pre_processing()
    model = DDP(torch.nn.Linear(4, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for epoch in range(3):
        for x, y in {iterated}:
            opt.zero_grad()
            torch.nn.functional.mse_loss(model(x), y).backward()
            opt.step()

if __name__ == "__main__":
    mp.spawn(main, args=(2,), nprocs=2)
"""


def test_a_loader_returned_again_by_its_callers_caller_trains_there(tmp_path):
    found = [f for f in lint_plain(tmp_path, RETURNED_AGAIN.replace("{iterated}", "train_dat"))
             if f.code == "DDP802"]
    assert [(f.location.line, f.severity.value) for f in found] == [(6, "error")]


def test_its_twin_no_loop_trains_on_it(tmp_path):
    found = [f for f in lint_plain(tmp_path, RETURNED_AGAIN.replace("{iterated}", "[]")) if f.code == "DDP802"]
    assert found == []


# -------------------------------------------------- a class picked from a module-level table by a constant key
TABLE = """
import torch, torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

class ModelConfig:
    @staticmethod
    def make_model():
        return DDP(torch.nn.BatchNorm1d(4))

class PipelineA(ModelConfig):
    pass

class PipelineB(ModelConfig):
    pass

CONFIGS = {"a": PipelineA, "b": PipelineB}
Pipeline = CONFIGS["b"]

def validate(model):
    with torch.no_grad():
        model(torch.randn(2, 4))

def main():
    dist.init_process_group("gloo")
    model = {made}
    for epoch in range(2):
        model(torch.randn(2, 4)).sum().backward()
        if dist.get_rank() == 0:
            validate(model)

main()
"""


def test_a_factory_of_a_class_picked_from_a_table_makes_the_ddp_model(tmp_path):
    found = lint_plain(tmp_path, TABLE.replace("{made}", "Pipeline.make_model()"))
    assert lines_of(found, "DDP801") == [20]  # the no-grad forward rank 0 alone runs


def test_its_twin_a_plain_model(tmp_path):
    found = lint_plain(tmp_path, TABLE.replace("{made}", "torch.nn.BatchNorm1d(4)"))
    assert lines_of(found, "DDP801") == []


# -------------------------------------------------- a worker_init_fn a factory returns, the seed handed down
FACTORY_SEED = """
import argparse, random, numpy as np, torch, torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, Dataset, DistributedSampler

class Aug(Dataset):
    def __len__(self):
        return 64
    def __getitem__(self, i):
        return torch.randn(4) * random.random()

def get_seed_worker(seed):
    def seed_worker(worker_id):
        worker_seed = {seed}
        np.random.seed(worker_seed)
        random.seed(worker_seed)
    return seed_worker

def prepare(ds, seed=1024, num_workers=0):
    sampler = DistributedSampler(ds)
    return DataLoader(ds, sampler=sampler, worker_init_fn=get_seed_worker(seed), num_workers=num_workers), sampler

def main(args):
    dist.init_process_group("gloo")
    model = DDP(torch.nn.Linear(4, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    loader, sampler = prepare(Aug(), seed=args.seed, num_workers=args.workers)
    for epoch in range(3):
        sampler.set_epoch(epoch)
        for x in loader:
            opt.zero_grad()
            model(x).sum().backward()
            opt.step()

p = argparse.ArgumentParser()
p.add_argument("--seed", type=int, default=1024)
p.add_argument("--workers", type=int, default=4)
main(p.parse_args())
"""


def test_a_worker_init_a_factory_returns_seeding_alike_on_every_rank(tmp_path):
    found = lint_plain(tmp_path, FACTORY_SEED.replace("{seed}", "seed"))
    assert lines_of(found, "DDP808") == [14]  # the seeding in the returned worker_init_fn


def test_its_twin_the_factorys_worker_seeds_by_rank(tmp_path):
    found = lint_plain(tmp_path, FACTORY_SEED.replace("{seed}", "seed + dist.get_rank() * 100 + worker_id"))
    assert lines_of(found, "DDP808") == []


# -------------------------------------------------- DDP801 at the call into a helper names the collective
HELPER_AT_CALL = """
import torch, torch.distributed as dist

def save_checkpoint(state):
    dist.barrier()
    torch.save(state, "ckpt.pt")

dist.init_process_group("gloo")
for epoch in range(3):
    save_checkpoint({"epoch": epoch})
if dist.get_rank() == 0:
    save_checkpoint({"final": True})
"""


def test_a_ddp801_placed_at_the_call_names_the_collective_inside(tmp_path):
    found = [f for f in lint_plain(tmp_path, HELPER_AT_CALL) if f.code == "DDP801"]
    assert [f.location.line for f in found] == [11]
    assert found[0].evidence["collective_at"].endswith("train.py:4")
    assert "(the collective itself at " in found[0].message


# -------------------------------------------------- a backward inside the __call__ of an object handed down
STEPPER = """
import argparse, torch, torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

def train_epoch(model, opt, stepper):
    for i in range(4):
        loss = model(torch.randn(2, 3)).sum()
        stepper(loss, opt)

class Step:
    def __call__(self, loss, opt):
        loss.backward()
        opt.step()

def main(cfg):
    model = DDP(torch.nn.Linear(3, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    stepper = Step()
    if {test}:
        return
    train_epoch(model, opt, stepper)

p = argparse.ArgumentParser()
p.add_argument("--bench", type=int, default=1)  # (a store_true would leave the branch off: no run)
dist.init_process_group("gloo")
main(p.parse_args())
"""


def test_a_backward_in_the_call_of_an_object_a_parameter_holds_is_a_ddp_backward(tmp_path):
    # the helper is written above the function that hands it the object: bound once the pass is done
    # (since session 94 rank 0's return on a test that is more than a rank test is the exit
    # DDP809 reports once, at the decision, as for `sys.exit()`: the backward is what the others
    # wait in, found through the object's __call__)
    found = lint_plain(tmp_path, STEPPER.replace("{test}", "cfg.bench and dist.get_rank() == 0"))
    assert not [f for f in found if f.code == "DDP801"]
    exits = [f for f in found if f.code == "DDP809"]
    assert [(f.location.line, f.severity.value) for f in exits] == [(18, "warning")]
    assert "loss.backward()" in exits[0].message


def test_its_twin_every_rank_takes_the_same_way(tmp_path):
    assert lines_of(lint_plain(tmp_path, STEPPER.replace("{test}", "cfg.bench")), "DDP801") == []


# -------------------------------------------------- a builder's switch spelled `ddp == True`
EQ_TRUE = """
import argparse, os, torch, torch.distributed as dist, torch.multiprocessing as mp
from torch.utils.data import DataLoader, DistributedSampler, TensorDataset

def make_loader(data, ddp):
    if {test}:
        return DataLoader(data, batch_size=8, sampler=DistributedSampler(data))
    else:
        return DataLoader(data, batch_size=8, shuffle=True)

def run(rank, ddp, world):
    if ddp:
        dist.init_process_group("gloo", rank=rank, world_size=world)
    net = torch.nn.Linear(4, 1)
    if ddp:
        net = torch.nn.parallel.DistributedDataParallel(net)
    opt = torch.optim.SGD(net.parameters(), lr=0.1)
    loader = make_loader(TensorDataset(torch.randn(64, 4)), ddp)
    for epoch in range(3):
        if ddp:
            loader.sampler.set_epoch(epoch)
        for (x,) in loader:
            opt.zero_grad(); net(x).sum().backward(); opt.step()

p = argparse.ArgumentParser()
p.add_argument("--ddp", action="store_true")
a = p.parse_args()
if a.ddp:
    mp.spawn(run, args=(a.ddp, 2), nprocs=2)
else:
    run(0, False, 1)
"""


def test_a_switch_compared_with_true_is_the_switch(tmp_path):
    assert lines_of(lint_plain(tmp_path, EQ_TRUE.replace("{test}", "ddp == True")), "DDP802") == []


def test_its_twin_a_switch_compared_with_false_turns_the_sides(tmp_path):
    # (the `else:` of `ddp == False` is the distributed side: its plain loader is the bug)
    assert lines_of(lint_plain(tmp_path, EQ_TRUE.replace("{test}", "ddp == False")), "DDP802") == [8]


# -------------------------------------------------- resuming on a Subset of the indices this rank's sampler lists
RESUME = """
import torch, torch.distributed as dist
from torch.utils.data import DataLoader, Subset, TensorDataset
from torch.utils.data.distributed import DistributedSampler

def main(resume, bs=8):
    dist.init_process_group("gloo")
    model = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(4, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    ds = TensorDataset(torch.randn(256, 4))
    sampler = DistributedSampler(ds, shuffle=True)
    loader = DataLoader(ds, batch_size=bs, sampler=sampler)
    if resume:
        sampler.set_epoch(3)
        epoch_indices = {listed}
        resume_indices = epoch_indices[40:]
        loader = DataLoader(Subset(ds, resume_indices), batch_size=bs, shuffle=False)
    for (x,) in loader:
        opt.zero_grad(); model(x).sum().backward(); opt.step()

main(True)
"""


def test_a_subset_of_what_the_ranks_sampler_lists_is_the_ranks_share(tmp_path):
    assert lines_of(lint_plain(tmp_path, RESUME.replace("{listed}", "list(sampler)")), "DDP802") == []


def test_its_twin_a_subset_of_every_index(tmp_path):
    code = RESUME.replace("{listed}", "list(range(len(ds)))")
    assert lines_of(lint_plain(tmp_path, code), "DDP802") == [16]


# -------------------------------------------------- a process group pinned to one process
WORLD_OF_ONE = """
import os, torch, torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

def setup():
    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = "29511"
    os.environ["RANK"] = "0"
    os.environ["WORLD_SIZE"] = {size}
    dist.init_process_group(backend="gloo", init_method="env://")

setup()
data = torch.utils.data.TensorDataset(torch.randn(64, 4))
model = DDP(torch.nn.Linear(4, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for (x,) in torch.utils.data.DataLoader(data, batch_size=8, shuffle=True):
    opt.zero_grad(); model(x).sum().backward(); opt.step()
"""


def test_a_group_pinned_to_one_process_splits_nothing(tmp_path):
    assert lines_of(lint_plain(tmp_path, WORLD_OF_ONE.replace("{size}", '"1"')), "DDP802") == []


def test_its_twin_a_world_the_launcher_sizes(tmp_path):
    code = WORLD_OF_ONE.replace("{size}", 'os.environ.get("NPROC", "2")')
    assert lines_of(lint_plain(tmp_path, code), "DDP802") == [15]


# -------------------------------------------------- a seed a rank is added to with `+=`
STEPPED_SEED = """
import os, random, torch, torch.distributed as dist
from torch.utils.data import DataLoader, Dataset, DistributedSampler

def set_random_seed(seed):
    random.seed(seed)
    torch.manual_seed(seed)

class Jitter(Dataset):
    def __len__(self):
        return 100
    def __getitem__(self, i):
        return torch.tensor([float(i)]) + torch.randn(1) * 0.01

def main(base):
    dist.init_process_group("gloo")
    seed = base
    {step}
    set_random_seed(seed)
    ds = Jitter()
    sampler = DistributedSampler(ds)
    loader = DataLoader(ds, sampler=sampler, batch_size=4, num_workers=2)
    model = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(1, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for epoch in range(3):
        sampler.set_epoch(epoch)
        for x in loader:
            opt.zero_grad(); model(x).sum().backward(); opt.step()

main(1234)
"""


def test_a_seed_stepped_by_the_rank_seeds_apart(tmp_path):
    found = lint_plain(tmp_path, STEPPED_SEED.replace("{step}", "seed += dist.get_rank()"))
    assert lines_of(found, "DDP808") == []


def test_its_twin_a_seed_stepped_by_a_constant(tmp_path):
    found = lint_plain(tmp_path, STEPPED_SEED.replace("{step}", "seed += 7"))
    assert lines_of(found, "DDP808") == [21]


# -------------------------------------------------- a method guessed by name that the call cannot be
NAME_CLASH = """
import torch, torch.distributed as dist

class Keeper:
    def __init__(self, **things):
        self.things = things
    def step(self, it):
        torch.save({k: v.state_dict() for k, v in self.things.items()}, f"ckpt_{it}.pth")

class Factory:
    PRODUCTS = {"step": torch.optim.lr_scheduler.StepLR}
    @classmethod
    def create(cls, name, *args, **kwargs):
        return cls.PRODUCTS[name](*args, **kwargs)

dist.init_process_group("gloo")
net = torch.nn.Linear(4, 2)
opt = torch.optim.SGD(net.parameters(), lr=0.1)
sched = Factory.create("step", opt, step_size=10)
keepers = [Keeper(model=net)]  # (in a list: the receiver's value is not known to be no Keeper)
model = torch.nn.parallel.DistributedDataParallel(net)
for it in range(100):
    opt.zero_grad(); model(torch.randn(8, 4)).sum().backward(); opt.step()
    sched.step({arg})
"""


def test_a_method_guessed_by_name_needing_an_argument_the_call_does_not_give_is_not_it(tmp_path):
    assert lines_of(lint_plain(tmp_path, NAME_CLASH.replace("{arg}", "")), "DDP806") == []


def test_its_twin_a_call_that_fits_the_guessed_method(tmp_path):
    assert lines_of(lint_plain(tmp_path, NAME_CLASH.replace("{arg}", "it")), "DDP806") == [7]


# -------------------------------------------------- a DeepSpeed engine's save_checkpoint on one rank
DS_SAVE = """
import torch, deepspeed
import torch.distributed as dist

def main(args):
    model = torch.nn.Linear(4, 1)
    model_engine, optimizer, _, _ = deepspeed.initialize(args=args, model=model, model_parameters=model.parameters())
    for step in range(100):
        model_engine.backward(model_engine(torch.randn(2, 4)).sum())
        model_engine.step()
        if {test}:
            model_engine.save_checkpoint("ckpt", tag=str(step))

main(None)
"""


def test_a_deepspeed_engines_save_checkpoint_on_rank_zero_alone(tmp_path):
    found = lint_plain(tmp_path, DS_SAVE.replace("{test}", "step % 10 == 0 and dist.get_rank() == 0"))
    assert at(found, "DDP801") == [(11, "error")]


def test_its_twin_every_rank_saves_its_partition(tmp_path):
    assert lines_of(lint_plain(tmp_path, DS_SAVE.replace("{test}", "step % 10 == 0")), "DDP801") == []


# -------------------------------------------------- clearing one part's gradients between backward and step
PART_CLEAR = """
import torch
from torch import nn
from accelerate import Accelerator

class StudentTeacher(nn.Module):
    def __init__(self):
        super().__init__()
        self.student, self.teacher = nn.Linear(4, 4), nn.Linear(4, 4)
    def forward(self, x):
        return self.student(x) - self.teacher(x).detach()

accelerator = Accelerator()
net = StudentTeacher()
opt = torch.optim.SGD(net.student.parameters(), lr=0.1)
net, opt = accelerator.prepare(net, opt)
for step in range(64):
    loss = net(torch.randn(2, 4)).pow(2).mean()
    accelerator.backward(loss)
    {clear}
    if (step + 1) % 4 == 0:
        opt.step()
        opt.zero_grad()
"""


def test_clearing_a_parts_gradients_leaves_the_rest_accumulating(tmp_path):
    found = lint_plain(tmp_path, PART_CLEAR.replace("{clear}", "net.module.teacher.zero_grad()"))
    assert lines_of(found, "DDP805") == [18]


def test_its_twin_clearing_the_optimizers_gradients_every_pass(tmp_path):
    assert lines_of(lint_plain(tmp_path, PART_CLEAR.replace("{clear}", "opt.zero_grad()")), "DDP805") == []


# -------------------------------------------------- a helper returning a value on rank 0 only
GATHER_ON_ZERO = """
import torch, torch.distributed as dist

def collect(part):
    rank = dist.get_rank()
    bucket = [None] * dist.get_world_size()
    dist.all_gather_object(bucket, part)
    if rank < 1:
        merged = {}
        for b in bucket:
            merged.update(b)
        return merged
    {other}

dist.init_process_group("gloo")
for epoch in range(3):
    merged = collect({dist.get_rank(): float(epoch)})
    if merged:
        dist.barrier()
        torch.save(merged, "scores.pt")
"""


def test_a_value_only_rank_zero_gets_back_makes_its_test_a_rank_test(tmp_path):
    assert at(lint_plain(tmp_path, GATHER_ON_ZERO.replace("{other}", "")), "DDP801") == [(18, "error")]


def test_its_twin_every_rank_gets_the_merged_value(tmp_path):
    code = GATHER_ON_ZERO.replace("{other}", "return {k: v for b in bucket for k, v in b.items()}")
    assert lines_of(lint_plain(tmp_path, code), "DDP801") == []


# -------------------------------------------------- a loader read through an endless cycle() generator
CYCLE = """
import torch, torch.distributed as dist
from torch.utils.data import DataLoader, DistributedSampler, TensorDataset

def cycle(iterable):
    it = iter(iterable)
    while True:
        try:
            yield next(it)
        except StopIteration:
            {renew}
            it = iter(iterable)

dist.init_process_group("gloo")
model = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(4, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.1)
ds = TensorDataset(torch.randn(256, 4))
sampler = DistributedSampler(ds, shuffle=True)
batches = cycle(DataLoader(ds, batch_size=8, sampler=sampler))
for step in range(1000):
    (x,) = next(batches)
    opt.zero_grad(); model(x).sum().backward(); opt.step()
"""


def test_a_loader_renewed_by_a_cycle_generator_is_read_pass_after_pass(tmp_path):
    assert lines_of(lint_plain(tmp_path, CYCLE.replace("{renew}", "pass")), "DDP804") == [17]


def test_its_twin_the_generator_sets_the_epoch_as_it_renews(tmp_path):
    code = CYCLE.replace("{renew}", "iterable.sampler.set_epoch(iterable.sampler.epoch + 1)")
    assert lines_of(lint_plain(tmp_path, code), "DDP804") == []


# -------------------------------------------------- a library object built with a config's setting
SCALER = """
import argparse, torch, torch.distributed as dist

class Keeper:
    def __init__(self, **things):
        self.things = things
    def step(self, it):
        torch.save({k: v.state_dict() for k, v in self.things.items()}, f"ckpt_{it}.pth")

p = argparse.ArgumentParser()
p.add_argument("--amp", action="store_true")
cfg = p.parse_args()
dist.init_process_group("gloo")
net = torch.nn.Linear(4, 2)
opt = torch.optim.SGD(net.parameters(), lr=0.1)
keeper = Keeper(model=net)
scaler = torch.cuda.amp.GradScaler(enabled={setting})
model = torch.nn.parallel.DistributedDataParallel(net)
for it in range(100):
    opt.zero_grad(); scaler.scale(model(torch.randn(8, 4)).sum()).backward()
    scaler.step(opt)
    scaler.update()
    if dist.get_rank() == 0:
        keeper.step(it)
"""


def test_a_library_object_built_with_a_configs_setting_is_no_local_class(tmp_path):
    assert lines_of(lint_plain(tmp_path, SCALER.replace("{setting}", "cfg.amp")), "DDP806") == []


def test_its_twin_an_object_handed_to_the_library_may_come_back(tmp_path):
    # a name of the script's handed in: the library may hand it back, so `scaler.step(opt)` may
    # be Keeper.step on every rank (a warning that says so, as before)
    assert lines_of(lint_plain(tmp_path, SCALER.replace("{setting}", "keeper")), "DDP806") == [7]


# -------------------------------------------------- a collective past a rank's early exit: one finding
PAST_EXIT = """
import torch, torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

dist.init_process_group("gloo")
model = DDP(torch.nn.Linear(2, 1))
for step in range(100):
    loss = model(torch.randn(4, 2)).sum()
    loss.backward()
    if loss.item() < 0.1 and dist.get_rank() == 0:
        {leave}
    dist.barrier()
"""


def test_a_collective_past_a_ranks_break_is_told_once_at_the_break(tmp_path):
    found = lint_plain(tmp_path, PAST_EXIT.replace("{leave}", "break"))
    assert lines_of(found, "DDP809") == [9] and lines_of(found, "DDP801") == []


def test_a_continue_is_told_once_at_the_skip_too(tmp_path):
    # (session 26: HybridNets' `if iter < resumed and rank == 0: continue` gave five DDP801s, one
    # per reduction it skips, beside the DDP809 at the skip: one decision, one finding)
    found = lint_plain(tmp_path, PAST_EXIT.replace("{leave}", "continue"))
    assert lines_of(found, "DDP809") == [9] and lines_of(found, "DDP801") == []


def test_its_twin_the_collective_under_the_rank_test_itself_is_the_place(tmp_path):
    code = PAST_EXIT.replace("        {leave}\n    dist.barrier()", "        dist.barrier()")
    found = lint_plain(tmp_path, code)
    assert lines_of(found, "DDP801") == [10] and lines_of(found, "DDP809") == []


def test_a_deepspeed_save_on_one_rank_says_to_save_on_every_rank(tmp_path):
    found = [f for f in lint_plain(tmp_path, DS_SAVE.replace("{test}", "dist.get_rank() == 0")) if f.code == "DDP801"]
    assert "save_checkpoint() on every rank" in found[0].hint


def test_a_file_with_null_bytes_is_refused_without_a_made_up_line(tmp_path):
    import pytest
    from ddpdoctor.core.errors import UsageError
    from ddpdoctor.lint.driver import gather

    path = tmp_path / "train.py"
    path.write_bytes(b"import torch\x00\n")
    with pytest.raises(UsageError) as refused:
        gather(str(path))
    assert "not valid Python" in str(refused.value) and ":?" not in str(refused.value)
