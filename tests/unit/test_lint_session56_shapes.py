"""Shapes from session 56, each with its twin, in our own words: an accumulation period kept as a
module constant at 1, which a run-time configurator may raise (nanoGPT's `exec` of
configurator.py) or nothing rebinds; a dataset split by the process index in a builder, whose
loader accelerator.prepare() shards again; Accelerate's load_state on the main process alone in a
script that builds the FSDP plugin by its full name; a switch between stepping every pass and
accumulating; a loader's generator handed through a builder from `torch.manual_seed`; a token count
Accelerate's reduce shares; a batch sampler Lightning Fabric sets the epoch of; a shutdown Event a
signal handler sets; an Accelerate trainer accumulating by hand beside one that skips the sync."""

from __future__ import annotations

from tests.unit.test_lint_round50_shapes import at, line_of
from tests.unit.test_lint_session39_shapes import lint_tree


def lint_one(tmp_path, code: str, **more: str):
    return lint_tree(tmp_path, {"train.py": code, **more})


def messages(found, code: str) -> list:
    return [f.message for f in found if f.code == code]


# -------------------------------------------------- a period kept as a module constant at 1
CONFIGURATOR = """
import sys
for item in sys.argv[1:]:
    key, value = item.lstrip("-").split("=")
    globals()[key] = eval(value)
"""

MICRO_STEPS = """
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

micro_steps = 1
learning_rate = 0.01
{configure}

dist.init_process_group("gloo")
model = DDP(torch.nn.Linear(4, 1))
opt = torch.optim.SGD(model.parameters(), lr=learning_rate)
for it in range(20):
    for micro in range(micro_steps):
        (model(torch.randn(2, 4)).sum() / micro_steps).backward()  # the backward
    opt.step()
    opt.zero_grad(set_to_none=True)
"""


def test_a_period_the_configurator_may_raise_is_a_warning_that_says_so(tmp_path):
    code = MICRO_STEPS.replace("{configure}", 'exec(open("configurator.py").read())')
    found = lint_one(tmp_path, code, **{"configurator.py": CONFIGURATOR})
    assert at(found, "DDP805") == [(line_of(code, "# the backward"), "warning")]
    assert messages(found, "DDP805")[0].startswith("if `micro_steps` is set above its default 1: ")


def test_its_twin_keeps_the_period_at_one_and_accumulates_nothing(tmp_path):
    code = MICRO_STEPS.replace("{configure}", "")
    assert at(lint_one(tmp_path, code), "DDP805") == []


FABRIC_MICRO_STEPS = """
import torch
import lightning as L

micro_steps = 1
{configure}

fabric = L.Fabric(accelerator="cpu", devices=2, strategy="ddp")
fabric.launch()
model = torch.nn.Linear(4, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
model, opt = fabric.setup(model, opt)
for it in range(20):
    for micro in range(micro_steps):
        fabric.backward(model(torch.randn(2, 4)).sum() / micro_steps)  # the backward
    opt.step()
    opt.zero_grad()
"""


def test_fabric_by_hand_with_a_period_the_configurator_may_raise_says_so(tmp_path):
    code = FABRIC_MICRO_STEPS.replace("{configure}", 'exec(open("configurator.py").read())')
    found = lint_one(tmp_path, code, **{"configurator.py": CONFIGURATOR})
    assert at(found, "DDP805") == [(line_of(code, "# the backward"), "warning")]
    message = messages(found, "DDP805")[0]
    assert message.startswith("if `micro_steps` is set above its default 1: ") and "Lightning Fabric" in message


def test_its_fabric_twin_keeps_the_period_at_one(tmp_path):
    code = FABRIC_MICRO_STEPS.replace("{configure}", "")
    assert at(lint_one(tmp_path, code), "DDP805") == []


CONDITIONAL_STEP = """
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

accumulate = 1
{configure}

dist.init_process_group("gloo")
model = DDP(torch.nn.Linear(4, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for it in range(20):
    (model(torch.randn(2, 4)).sum() / accumulate).backward()  # the backward
    if (it + 1) % accumulate == 0:
        opt.step()
        opt.zero_grad()
"""


def test_a_conditional_step_on_a_raisable_constant_is_a_warning_that_says_so(tmp_path):
    code = CONDITIONAL_STEP.replace("{configure}", "globals().update(dict(a.split('=') for a in []))")
    found = lint_one(tmp_path, code)
    assert at(found, "DDP805") == [(line_of(code, "# the backward"), "warning")]
    assert messages(found, "DDP805")[0].startswith("if `accumulate` is set above its default 1: ")


def test_its_twin_steps_every_pass(tmp_path):
    code = CONDITIONAL_STEP.replace("{configure}", "")
    assert at(lint_one(tmp_path, code), "DDP805") == []


# -------------------------------------------------- a rank's split of the data, prepared again
SPLIT_DATA = """
import torch
from torch.utils.data import DataLoader, Subset, TensorDataset


def make_loader(batch_size, index=0, count=1):
    data = TensorDataset(torch.randn(256, 4))
    if count > 1:
        share = len(data) // count
        data = {split}
    else:
        data = TensorDataset(torch.randn(64, 4))
    loader = DataLoader(data, batch_size=batch_size, shuffle=True)  # the loader
    return loader, len(data)
"""

PREPARED = """
import torch
from accelerate import Accelerator
from data import make_loader


def main():
    accelerator = Accelerator()
    model = torch.nn.Linear(4, 1)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    loader, _ = make_loader(8, index=accelerator.process_index, count=accelerator.num_processes)
    model, opt, loader = accelerator.prepare(model, opt, loader)  # the prepare
    for (x,) in loader:
        accelerator.backward(model(x).sum())
        opt.step()
        opt.zero_grad()


if __name__ == "__main__":
    main()
"""


def test_a_subset_split_by_the_process_index_then_prepared_is_sharded_twice(tmp_path):
    data = SPLIT_DATA.replace("{split}", "Subset(data, range(index * share, index * share + share))")
    found = lint_one(tmp_path, PREPARED, **{"data.py": data})
    loader = line_of(data, "# the loader")
    assert [(f.location.file.rsplit("/", 1)[-1], f.location.line) for f in found if f.code == "DDP803"] == \
        [("data.py", loader)]
    finding = next(f for f in found if f.code == "DDP803")
    assert finding.evidence["prepared_at"].endswith(f"train.py:{line_of(PREPARED, '# the prepare')}")
    assert finding.evidence["split_at"].endswith(f"data.py:{line_of(data, 'Subset(data, range')}")


def test_its_twin_prepares_the_whole_dataset(tmp_path):
    data = SPLIT_DATA.replace("{split}", "data")
    assert at(lint_one(tmp_path, PREPARED, **{"data.py": data}), "DDP803") == []


def test_a_dataset_the_rank_only_seeds_is_no_split(tmp_path):
    data = SPLIT_DATA.replace("{split}", "Subset(data, torch.randperm(len(data), generator=torch.Generator()"
                                         ".manual_seed(7)).tolist())")
    assert at(lint_one(tmp_path, PREPARED, **{"data.py": data}), "DDP803") == []


# -------------------------------------------------- load_state on the main process under FSDP
RESUME = """
import torch
from accelerate import Accelerator, FullyShardedDataParallelPlugin


def main(resume=None):
    accelerator = Accelerator(fsdp_plugin=FullyShardedDataParallelPlugin())
    model = torch.nn.Linear(4, 1)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    model, opt = accelerator.prepare(model, opt)
    if resume{test}:
        accelerator.load_state(resume)  # the load
    for _ in range(3):
        accelerator.backward(model(torch.randn(2, 4)).sum())
        opt.step()
        opt.zero_grad()


if __name__ == "__main__":
    main()
"""


def test_load_state_on_the_main_process_alone_under_fsdp_is_a_warning(tmp_path):
    code = RESUME.replace("{test}", " and accelerator.is_main_process")
    found = lint_one(tmp_path, code)
    assert at(found, "DDP801") == [(line_of(code, "# the load"), "warning")]
    assert "accelerator.load_state() (every process takes part under FSDP)" in messages(found, "DDP801")[0]


def test_its_twin_loads_on_every_process(tmp_path):
    code = RESUME.replace("{test}", "")
    assert at(lint_one(tmp_path, code), "DDP801") == []


# -------------------------------------------------- one side steps every pass, the other accumulates
SWITCHED = """
import argparse
from contextlib import nullcontext
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

parser = argparse.ArgumentParser()
parser.add_argument("--accumulation_steps", type=int, default=1)
args = parser.parse_args()
dist.init_process_group("gloo")
net = DDP(torch.nn.Linear(4, 1))
optimizer = torch.optim.SGD(net.parameters(), lr=0.1)
for i in range(100):
    x = torch.randn(2, 4)
    if args.accumulation_steps == 1:
        net(x).sum().backward()
        optimizer.step()
        optimizer.zero_grad()
    elif args.accumulation_steps > 1:
        with {context}:
            (net(x).sum() / args.accumulation_steps).backward()  # the backward
        if (i + 1) % args.accumulation_steps == 0:
            optimizer.step()
            optimizer.zero_grad()
"""


def test_the_accumulating_side_of_a_switch_is_judged_with_its_assumption(tmp_path):
    code = SWITCHED.replace("{context}", "nullcontext()")
    found = lint_one(tmp_path, code)
    assert at(found, "DDP805") == [(line_of(code, "# the backward"), "warning")]
    assert messages(found, "DDP805")[0].startswith("if `args.accumulation_steps` is set above its default 1: ")


def test_its_twin_skips_the_sync_on_the_accumulating_side(tmp_path):
    code = SWITCHED.replace("{context}", "net.no_sync() if (i + 1) % args.accumulation_steps else nullcontext()")
    assert at(lint_one(tmp_path, code), "DDP805") == []


# -------------------------------------------------- a generator torch.manual_seed hands back, through a builder
GENERATOR_HANDED = """
import random
import torch
import torch.distributed as dist
from torch.utils.data import DataLoader, Dataset, DistributedSampler
from torch.nn.parallel import DistributedDataParallel as DDP


class Cropped(Dataset):
    def __len__(self):
        return 64

    def __getitem__(self, i):
        start = random.randint(0, 4)
        return torch.arange(8.0)[start:start + 4]


def fix_seed(seed):
    generator = torch.manual_seed(seed)  # the seeding
    random.seed(seed)
    return generator


def reset_seed(worker_id):
    random.seed(torch.initial_seed() % 2 ** 31)


def make_loader(data, sampler, training, generator, workers=2):
    return DataLoader(data, batch_size=8, num_workers=workers, sampler=sampler,
                      worker_init_fn=reset_seed if training else None, generator=generator)


def main():
    dist.init_process_group("gloo")
    rng = fix_seed({seed})
    data = Cropped()
    sampler = DistributedSampler(data)
    loader = make_loader(data, sampler, True, rng)
    probe = make_loader(data, DistributedSampler(data, shuffle=False), False, None)
    model = DDP(torch.nn.Linear(4, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for epoch in range(2):
        sampler.set_epoch(epoch)
        for x in loader:
            opt.zero_grad()
            model(x).sum().backward()
            opt.step()


if __name__ == "__main__":
    main()
"""


def test_a_generator_seeded_alike_reaches_the_builders_loader(tmp_path):
    code = GENERATOR_HANDED.replace("{seed}", "1234")
    assert at(lint_one(tmp_path, code), "DDP808") == [(line_of(code, "# the seeding"), "warning")]


def test_its_twin_seeds_the_generator_per_rank(tmp_path):
    code = GENERATOR_HANDED.replace("{seed}", "1234 + dist.get_rank()")
    assert at(lint_one(tmp_path, code), "DDP808") == []


# -------------------------------------------------- a count Accelerate's reduce makes every rank's
REDUCED_COUNT = """
import torch
from accelerate import Accelerator


def main(budget=10_000):
    accelerator = Accelerator()
    model = torch.nn.Linear(4, 1)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    data = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(torch.randn(64, 4)), batch_size=8)
    model, opt, data = accelerator.prepare(model, opt, data)
    seen = 0
    for (x,) in data:
        accelerator.backward(model(x).sum())
        opt.step()
        opt.zero_grad()
        {count}
        seen += tokens
        if seen >= budget:  # the test
            break


if __name__ == "__main__":
    main()
"""


def test_a_count_every_rank_reduced_decides_alike(tmp_path):
    code = REDUCED_COUNT.replace("{count}", "tokens = accelerator.reduce(torch.tensor(x.numel()), "
                                            "reduction='sum').item()")
    assert at(lint_one(tmp_path, code), "DDP809") == []


def test_its_twin_counts_the_ranks_own_batch(tmp_path):
    code = REDUCED_COUNT.replace("{count}", "tokens = int((x > 0).sum().item())")
    assert at(lint_one(tmp_path, code), "DDP809") == [(line_of(code, "# the test"), "warning")]


# -------------------------------------------------- a batch sampler handed to Fabric through a list
FABRIC_SAMPLERS = """
import torch
import lightning as L
from torch.utils.data import DataLoader, DistributedSampler, TensorDataset


def main():
    fabric = L.Fabric(accelerator="cpu", devices=2, strategy="ddp")
    fabric.launch()
    model = torch.nn.Linear(4, 1)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    model, opt = fabric.setup(model, opt)
    loaders = []
    for part in (TensorDataset(torch.randn(64, 4)), TensorDataset(torch.randn(32, 4))):
        sampler = DistributedSampler(part, num_replicas=fabric.world_size, rank=fabric.global_rank)  # the sampler
        loader = DataLoader(part, batch_size=8, sampler=sampler)
        loaders.append(loader)
    {setup}
    for epoch in range(3):
        for (x,) in train:
            fabric.backward(model(x).sum())
            opt.step()
            opt.zero_grad()


main()
"""


def test_fabric_sets_the_epoch_of_the_loaders_it_sets_up(tmp_path):
    code = FABRIC_SAMPLERS.replace("{setup}", "train, test = fabric.setup_dataloaders(*loaders, "
                                              "use_distributed_sampler=False)")
    assert at(lint_one(tmp_path, code), "DDP804") == []


def test_its_twin_iterates_the_loader_fabric_never_set_up(tmp_path):
    code = FABRIC_SAMPLERS.replace("{setup}", "train, test = loaders")
    assert at(lint_one(tmp_path, code), "DDP804") == [(line_of(code, "# the sampler"), "warning")]


# -------------------------------------------------- a shutdown Event a signal handler sets
SHUTDOWN = """
import signal
import threading
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

_stop = threading.Event()


def on_signal(signum, frame):
    _stop.set()


def run_epoch(model, opt, stop_event=None):
    for _ in range(10):
        {test}
        opt.zero_grad()
        model(torch.randn(2, 4)).sum().backward()
        opt.step()


def main():
    dist.init_process_group("gloo")
    signal.signal(signal.SIGTERM, on_signal)
    model = DDP(torch.nn.Linear(4, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for epoch in range(3):
        run_epoch(model, opt, stop_event=_stop)


if __name__ == "__main__":
    main()
"""


def test_a_shutdown_event_each_rank_sees_at_its_own_step_decides_apart(tmp_path):
    code = SHUTDOWN.replace("{test}", "if stop_event is not None and stop_event.is_set():  # the test\n"
                                      "            break")
    assert at(lint_one(tmp_path, code), "DDP809") == [(line_of(code, "# the test"), "warning")]


def test_its_twin_shares_the_flag_first(tmp_path):
    code = SHUTDOWN.replace("{test}", "flag = torch.tensor(float(stop_event is not None and stop_event.is_set()))\n"
                                      "        dist.all_reduce(flag, op=dist.ReduceOp.MAX)\n"
                                      "        if flag.item() > 0:\n"
                                      "            break")
    assert at(lint_one(tmp_path, code), "DDP809") == []


# -------------------------------------------------- one Accelerate trainer skips the sync, another does not
TWO_TRAINERS = """
from contextlib import nullcontext
from functools import partial
import torch
from accelerate import Accelerator


class Trainer:
    def __init__(self, micro_steps=4):
        self.accelerator = Accelerator()
        self.micro_steps = accumulate
        model = torch.nn.Linear(4, 1)
        self.opt = torch.optim.SGD(model.parameters(), lr=0.1)
        self.model, self.opt = self.accelerator.prepare(model, self.opt)

    def step(self):
        for micro in range(self.micro_steps):
            {body}
        self.opt.step()
        self.opt.zero_grad()


class SyncedTrainer(Trainer):
    def step(self):
        for micro in range(self.micro_steps):
            last = micro == self.micro_steps - 1
            context = partial(self.accelerator.no_sync, self.model) if not last else nullcontext
            with context():
                self.accelerator.backward(self.model(torch.randn(2, 4)).sum())
        self.opt.step()
        self.opt.zero_grad()


if __name__ == "__main__":
    plain, synced = Trainer(), SyncedTrainer()
    for _ in range(10):
        plain.step()
        synced.step()
"""


def test_a_by_hand_loop_is_not_covered_by_another_trainers_no_sync(tmp_path):
    code = TWO_TRAINERS.replace("{body}", "self.accelerator.backward(self.model(torch.randn(2, 4)).sum())  "
                                          "# the backward")
    assert at(lint_one(tmp_path, code), "DDP805") == [(line_of(code, "# the backward"), "warning")]


def test_its_twin_skips_the_sync_in_both_trainers(tmp_path):
    code = TWO_TRAINERS.replace("{body}", "with self.accelerator.no_sync(self.model) if micro < self.micro_steps - 1 "
                                          "else nullcontext():\n"
                                          "                self.accelerator.backward(self.model(torch.randn(2, 4)).sum())")
    assert at(lint_one(tmp_path, code), "DDP805") == []


# -------------------------------------------------- a dataset split by an unseeded draw in each process
UNSEEDED_SPLIT = """
import torch
import torch.distributed as dist
from torch.utils.data import DataLoader, Dataset, DistributedSampler
from torch.nn.parallel import DistributedDataParallel as DDP


class Split(Dataset):
    def __init__(self, part, held_out=16):
        items = torch.randn(256, 4)
        order = {draw}
        self.items = items[order[held_out:]] if part == "train" else items[order[:held_out]]

    def __len__(self):
        return len(self.items)

    def __getitem__(self, i):
        return self.items[i]


def main():
    dist.init_process_group("gloo")
    {seed}
    train, valid = Split("train"), Split("valid")
    sampler = DistributedSampler(train)  # the sampler
    loader = DataLoader(train, batch_size=8, sampler=sampler)
    valid_loader = DataLoader(valid, batch_size=8, sampler=DistributedSampler(valid, shuffle=False))
    model = DDP(torch.nn.Linear(4, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for epoch in range(2):
        sampler.set_epoch(epoch)
        for x in loader:
            opt.zero_grad()
            model(x).sum().backward()
            opt.step()


if __name__ == "__main__":
    main()
"""


def test_a_dataset_split_by_an_unseeded_draw_differs_on_every_rank(tmp_path):
    code = UNSEEDED_SPLIT.replace("{draw}", "torch.randperm(len(items))").replace("{seed}", "pass")
    found = lint_one(tmp_path, code)
    assert at(found, "DDP803") == [(line_of(code, "# the sampler"), "warning")]
    assert "torch.randperm(len(items))" in messages(found, "DDP803")[0]


def test_its_twin_seeds_the_process_before_the_split(tmp_path):
    code = UNSEEDED_SPLIT.replace("{draw}", "torch.randperm(len(items))").replace("{seed}", "torch.manual_seed(0)")
    assert at(lint_one(tmp_path, code), "DDP803") == []


def test_a_split_drawn_from_its_own_seeded_generator_is_alike(tmp_path):
    code = UNSEEDED_SPLIT.replace("{draw}", "torch.randperm(len(items), generator=torch.Generator().manual_seed(0))")
    code = code.replace("{seed}", "pass")
    assert at(lint_one(tmp_path, code), "DDP803") == []


def test_a_random_split_with_no_generator_in_an_unseeded_script_differs_too(tmp_path):
    code = UNSEEDED_SPLIT.replace("{draw}", "torch.arange(len(items))").replace("{seed}", "pass")
    code = code.replace('train, valid = Split("train"), Split("valid")',
                        'train, valid = torch.utils.data.random_split(Split("train"), [200, 40])')
    assert at(lint_one(tmp_path, code), "DDP803") == [(line_of(code, "# the sampler"), "warning")]


# -------------------------------------------------- a wrapper built around the plain module before prepare()
WRAPPED_FIRST = """
import torch
from accelerate import Accelerator


class LossWrapper(torch.nn.Module):
    def __init__(self, net):
        super().__init__()
        self.net = net

    def forward(self, x):
        return self.net(x).sum()


class Trainer:
    def __init__(self, micro_steps=4):
        self.accelerator = Accelerator()
        self.micro_steps = micro_steps
        self.net = torch.nn.Linear(4, 1)
        self.opt = torch.optim.SGD(self.net.parameters(), lr=0.1)
        {order}

    def step(self):
        for micro in range(self.micro_steps):
            loss = self.wrapper(torch.randn(2, 4))
            self.accelerator.backward(loss / self.micro_steps)  # the backward
        self.opt.step()
        self.opt.zero_grad()


if __name__ == "__main__":
    trainer = Trainer()
    for _ in range(10):
        trainer.step()
"""


def test_a_wrapper_prepared_itself_syncs_every_micro_step(tmp_path):
    code = WRAPPED_FIRST.replace("{order}", "self.wrapper = LossWrapper(self.net)\n"
                                            "        self.wrapper, self.opt = self.accelerator.prepare(self.wrapper, self.opt)")
    assert at(lint_one(tmp_path, code), "DDP805") == [(line_of(code, "# the backward"), "warning")]


def test_its_twin_wraps_the_plain_module_before_prepare(tmp_path):
    code = WRAPPED_FIRST.replace("{order}", "self.wrapper = LossWrapper(self.net)\n"
                                            "        self.net, self.opt = self.accelerator.prepare(self.net, self.opt)")
    assert at(lint_one(tmp_path, code), "DDP805") == []


def test_a_wrapper_built_after_prepare_holds_the_ddp_module(tmp_path):
    code = WRAPPED_FIRST.replace("{order}", "self.net, self.opt = self.accelerator.prepare(self.net, self.opt)\n"
                                            "        self.wrapper = LossWrapper(self.net)")
    assert at(lint_one(tmp_path, code), "DDP805") == [(line_of(code, "# the backward"), "warning")]


def test_a_module_that_only_reads_its_globals_keeps_the_period_at_one(tmp_path):
    code = MICRO_STEPS.replace("{configure}", "settings = {k: v for k, v in globals().items() if not k.startswith('_')}")
    assert at(lint_one(tmp_path, code), "DDP805") == []


def test_a_count_named_accumulate_is_not_accelerates_context(tmp_path):
    code = TWO_TRAINERS.replace("self.micro_steps", "self.accumulate").replace("micro_steps=4", "accumulate=4")
    code = code.replace("{body}", "self.accelerator.backward(self.model(torch.randn(2, 4)).sum())  # the backward")
    assert at(lint_one(tmp_path, code), "DDP805") == [(line_of(code, "# the backward"), "warning")]


# -------------------------------------------------- holdout 67's shapes (scored before they were read)
WORLD_BY_VALUE = """
import os
from contextlib import nullcontext
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP


def setup():
    rank = int(os.environ.get("RANK", 0))
    world = int(os.environ.get("WORLD_SIZE", 1))
    dist.init_process_group("gloo")
    return rank, world


def main(accum=4):
    rank, {world} = setup()
    model = DDP(torch.nn.Linear(4, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for step in range(10):
        for micro in range(accum):
            last = micro == accum - 1
            with model.no_sync() if ({world} > 1 and not last) else nullcontext():
                model(torch.randn(2, 4)).sum().backward()  # the backward
        opt.step()
        opt.zero_grad()


if __name__ == "__main__":
    main()
"""


def test_a_world_size_read_by_value_is_no_configuration_switch(tmp_path):
    code = WORLD_BY_VALUE.replace("{world}", "world")
    assert at(lint_one(tmp_path, code), "DDP805") == []


def test_its_twin_switches_no_sync_on_a_setting(tmp_path):
    code = WORLD_BY_VALUE.replace("rank, {world} = setup()", "rank, world = setup()\n    fast = world > 1") \
        .replace("({world} > 1 and not last)", "(fast and not last)").replace("{world}", "world")
    code = code.replace("    fast = world > 1", "    fast = os.environ.get('FAST') == '1'")
    assert at(lint_one(tmp_path, code), "DDP805") == [(line_of(code, "# the backward"), "warning")]


MAIN_OR_SINGLE = """
import os
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP


class DistContext:
    def __init__(self):
        self._rank = int(os.environ.get("RANK", 0))
        dist.init_process_group("gloo")

    def is_main_process(self):
        return self._rank == 0

    def wrap(self, model):
        return DDP(model)


def train(model, opt, dist_ctx=None):
    is_main = dist_ctx.is_main_process() if dist_ctx else True
    for epoch in range(3):
        opt.zero_grad()
        model(torch.randn(2, 4)).sum().backward()
        opt.step()
        if is_main:
            torch.save(model.state_dict(), "last.pt")  # the save


def main():
    ctx = DistContext()
    model = ctx.wrap(torch.nn.Linear(4, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    {call}


main()
"""


def test_a_context_handed_in_makes_its_rank_test_the_guard(tmp_path):
    code = MAIN_OR_SINGLE.replace("{call}", "train(model, opt, dist_ctx=ctx)")
    assert at(lint_one(tmp_path, code), "DDP806") == []


def test_its_twin_leaves_the_context_at_none_so_every_rank_saves(tmp_path):
    code = MAIN_OR_SINGLE.replace("{call}", "train(model, opt)")
    assert at(lint_one(tmp_path, code), "DDP806") == [(line_of(code, "# the save"), "warning")]


def test_a_wrapping_method_nothing_calls_builds_no_ddp_model(tmp_path):
    # (named in a comment, as a docstring's usage example would: the method's class is built, the
    # method itself never called)
    code = MAIN_OR_SINGLE.replace("model = ctx.wrap(torch.nn.Linear(4, 1))",
                                  "model = torch.nn.Linear(4, 1)  # ctx.wrap(model) would wrap it in DDP")
    code = code.replace("{call}", "train(model, opt, dist_ctx=ctx)")
    # (the loss made by a library's helper: which module it runs is not in the source)
    code = code.replace("import torch\n", "import torch\nfrom losses import training_loss\n", 1)
    code = code.replace("        model(torch.randn(2, 4)).sum().backward()",
                        "        for micro in range(4):\n            training_loss(model, torch.randn(2, 4)).backward()")
    assert at(lint_one(tmp_path, code), "DDP805") == []
    called = code.replace("model = torch.nn.Linear(4, 1)  #", "model = ctx.wrap(torch.nn.Linear(4, 1))  #")
    assert [f.code for f in lint_one(tmp_path / "called", called)].count("DDP805") == 1


SWITCHED_REBUILD = """
import torch
import torch.distributed as dist
from torch.utils.data import DataLoader, DistributedSampler, TensorDataset
from torch.nn.parallel import DistributedDataParallel as DDP


def rebuild(loader):
    kept = TensorDataset(torch.randn(32, 4))
    return DataLoader(kept, batch_size=loader.batch_size, shuffle=True)  # the rebuild


def main(cfg):
    dist.init_process_group("gloo")
    data = TensorDataset(torch.randn(64, 4))
    sampler = DistributedSampler(data)
    loader = DataLoader(data, batch_size=8, sampler=sampler)
    model = DDP(torch.nn.Linear(4, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for epoch in range(4):
        sampler.set_epoch(epoch)
        if {test} and epoch > 0:
            loader = rebuild(loader)
        for (x,) in loader:
            opt.zero_grad()
            model(x).sum().backward()
            opt.step()


if __name__ == "__main__":
    main({"mining": True})
"""


def test_a_loader_rebuilt_under_a_setting_off_by_default_is_a_warning_that_says_so(tmp_path):
    code = SWITCHED_REBUILD.replace("{test}", 'cfg.get("mining", False)')
    found = lint_one(tmp_path, code)
    assert at(found, "DDP802") == [(line_of(code, "# the rebuild"), "warning")]
    assert messages(found, "DDP802")[0].startswith("if `cfg.get('mining', False)` holds")


def test_its_twin_rebuilds_on_every_run(tmp_path):
    code = SWITCHED_REBUILD.replace("{test}", "True")
    assert at(lint_one(tmp_path, code), "DDP802") == [(line_of(code, "# the rebuild"), "error")]


def test_a_random_split_handed_generator_none_draws_from_the_default_one(tmp_path):
    code = UNSEEDED_SPLIT.replace("{draw}", "torch.arange(len(items))").replace("{seed}", "pass")
    code = code.replace('train, valid = Split("train"), Split("valid")',
                        'train, valid = torch.utils.data.random_split(Split("train"), [200, 40], generator=None)')
    assert at(lint_one(tmp_path, code), "DDP803") == [(line_of(code, "# the sampler"), "warning")]
