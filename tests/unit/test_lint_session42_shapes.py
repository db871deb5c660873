"""Shapes from session 42 (holdout 52, read after it was scored unread, and the residue of the
sets before it): values the launch decides (a constant `if`, an option's text, a seeding helper
called only under an option left off, a `--local_rank` torchrun never hands), loaders read by
what runs them (an ignite Engine), FSDP units made by
`enable_wrap`, DeepSpeed chosen by the launch config, a raise a handler swallows. Each with its
twin, written in our own words."""

from __future__ import annotations

from tests.unit.test_lint_round17_shapes import lint_plain
from tests.unit.test_lint_round50_shapes import at, line_of
from tests.unit.test_lint_session39_shapes import lint_tree


# -------------------------------------------------- an ignite Engine runs the loader epoch after epoch
ENGINE = """
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, DistributedSampler
from ignite.engine import Engine, Events


def main():
    dist.init_process_group("gloo")
    model = DDP(torch.nn.Linear(4, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    data = [torch.randn(4) for _ in range(64)]
    loader = DataLoader(data, batch_size=8, sampler=DistributedSampler(data))  # the loader

    def update(engine, batch):
        opt.zero_grad()
        model(batch).sum().backward()
        opt.step()

    trainer = Engine(update)
{handler}
    trainer.run(loader, max_epochs=30)


if __name__ == "__main__":
    main()
"""
SETS_EPOCH = """
    @trainer.on(Events.EPOCH_STARTED)
    def reshuffle(engine):
        loader.sampler.set_epoch(engine.state.epoch)
"""


def test_a_loader_an_ignite_engine_runs_for_many_epochs_needs_set_epoch(tmp_path):
    code = ENGINE.replace("{handler}", "")
    found = lint_plain(tmp_path, code)
    assert at(found, "DDP804") == [(line_of(code, "# the loader"), "warning")]
    [unset] = [f for f in found if f.code == "DDP804"]
    assert "Events.EPOCH_STARTED" in unset.hint  # the fix where the Engine starts an epoch


def test_its_twin_an_epoch_started_handler_sets_the_epoch(tmp_path):
    code = ENGINE.replace("{handler}", SETS_EPOCH)
    assert at(lint_plain(tmp_path, code), "DDP804") == []


def test_nor_where_ignites_common_training_handlers_are_given_the_sampler(tmp_path):
    # (ignite.contrib.engines.common adds the EPOCH_STARTED handler that calls set_epoch)
    code = ENGINE.replace("{handler}", "    import ignite.contrib.engines.common as common\n"
                                       "    common.setup_common_training_handlers(trainer, train_sampler=loader.sampler)")
    assert at(lint_plain(tmp_path, code), "DDP804") == []


def test_nor_where_the_handler_is_a_lambda_the_engine_calls_each_epoch(tmp_path):
    code = ENGINE.replace("{handler}", "    trainer.add_event_handler(Events.EPOCH_STARTED,\n"
                                       "                              lambda e: loader.sampler.set_epoch(e.state.epoch))")
    assert at(lint_plain(tmp_path, code), "DDP804") == []


# -------------------------------------------------- FSDP units made by enable_wrap inside a helper
WRAPPED = """
import torch
import torch.distributed as dist
from torch.distributed.fsdp import FullyShardedDataParallel as FSDP
from torch.distributed.fsdp.wrap import enable_wrap, wrap


def shard_blocks(model):
    with enable_wrap(wrapper_cls=FSDP):
        for name, child in model.named_children():
            model.add_module(name, wrap(child))
    return model


def main():
    dist.init_process_group("gloo")
    model = shard_blocks(torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.Linear(4, 1)))
    model(torch.randn(2, 4)).sum().backward()
{save}


if __name__ == "__main__":
    main()
"""


def test_the_state_dict_of_a_model_whose_parts_enable_wrap_sharded_gathers_under_rank_0(tmp_path):
    code = WRAPPED.replace("{save}", "    if dist.get_rank() == 0:\n"
                                     "        torch.save(model.state_dict(), 'final.pt')  # the gather")
    assert at(lint_plain(tmp_path, code), "DDP801") == [(line_of(code, "# the gather"), "error")]


def test_its_twin_every_rank_takes_the_state_dict_and_rank_0_writes_it(tmp_path):
    code = WRAPPED.replace("{save}", "    state = model.state_dict()\n"
                                     "    if dist.get_rank() == 0:\n"
                                     "        torch.save(state, 'final.pt')")
    assert at(lint_plain(tmp_path, code), "DDP801") == []


# -------------------------------------------------- torch_geometric's list loader is a DataLoader
GRAPHS = """
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DistributedSampler
from torch_geometric.loader import DataListLoader


def main():
    dist.init_process_group("gloo")
    model = DDP(torch.nn.Linear(4, 1))
    graphs = [torch.randn(4) for _ in range(64)]
    loader = DataListLoader(graphs, batch_size=8, {how})  # the loader
    for epoch in range(10):
        for batch in loader:
            model(torch.stack(batch)).sum().backward()


if __name__ == "__main__":
    main()
"""


def test_a_pyg_list_loader_without_a_sampler_trains_on_everything_on_every_rank(tmp_path):
    code = GRAPHS.replace("{how}", "shuffle=True")
    assert at(lint_plain(tmp_path, code), "DDP802") == [(line_of(code, "# the loader"), "error")]


def test_its_twin_the_list_loader_with_a_distributed_sampler(tmp_path):
    code = GRAPHS.replace("{how}", "sampler=DistributedSampler(graphs)").replace(
        "    for epoch in range(10):\n", "    for epoch in range(10):\n        loader.sampler.set_epoch(epoch)\n")
    found = lint_plain(tmp_path, code)
    assert at(found, "DDP802") == [] and at(found, "DDP804") == []


# -------------------------------------------------- one write on both sides of an `if`, further in
BOTH_SIDES = """
import os
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

MODE = "hybrid"


def main():
    dist.init_process_group("gloo")
    nets = [DDP(torch.nn.Linear(4, 1)) for _ in range(3)]
    if MODE == "hybrid":
        for i, net in enumerate(nets):
            torch.save(net.module.state_dict(), os.path.join("ckpt", f"net_{i}.pth"))  # the first
    else:
        for i, net in enumerate(nets):
            torch.save(net.module.state_dict(), os.path.join("ckpt", {other}))


if __name__ == "__main__":
    main()
"""


def test_the_same_write_in_loops_on_both_sides_of_an_if_is_one_finding(tmp_path):
    code = BOTH_SIDES.replace("{other}", 'f"net_{i}.pth"')
    assert at(lint_plain(tmp_path, code), "DDP806") == [(line_of(code, "# the first"), "warning")]


def test_its_twin_two_sides_writing_two_different_files_are_two_findings(tmp_path):
    code = BOTH_SIDES.replace("{other}", 'f"plain_{i}.pth"')
    assert len(at(lint_plain(tmp_path, code), "DDP806")) == 2


# -------------------------------------------------- Accelerate under a launch config that picks DeepSpeed
ACCELERATED = """
import torch
from accelerate import Accelerator


def main():
    accelerator = Accelerator(gradient_accumulation_steps=4)
    model = torch.nn.Linear(4, 1)
    opt = torch.optim.AdamW(model.parameters())
    data = torch.utils.data.DataLoader([torch.randn(4) for _ in range(64)], batch_size=8, shuffle=True)
    model, opt, data = accelerator.prepare(model, opt, data)
    for epoch in range(3):
        for step, x in enumerate(data):
            loss = model(x).sum()
            accelerator.backward(loss)  # the backward
            if (step + 1) % 4 == 0:
                opt.step()
                opt.zero_grad()
        if accelerator.is_main_process:
            accelerator.save_state(f"ckpt/{epoch}")  # the save


if __name__ == "__main__":
    main()
"""
LAUNCH_CONFIG = """
compute_environment: LOCAL_MACHINE
distributed_type: {kind}
num_processes: 2
"""


LAUNCH = "accelerate launch --config_file configs/launch.yaml train.py --epochs 3\n"


def test_a_deepspeed_launch_config_makes_the_main_process_save_a_hang_and_accumulation_deepspeeds(tmp_path):
    found = lint_tree(tmp_path, {"train.py": ACCELERATED, "run.sh": LAUNCH,
                                             "configs/launch.yaml": LAUNCH_CONFIG.replace("{kind}", "DEEPSPEED")})
    assert at(found, "DDP801") == [(line_of(ACCELERATED, "# the save"), "error")]
    assert at(found, "DDP805") == []


def test_without_a_launch_naming_that_config_the_hang_stays_a_warning(tmp_path):
    # (the config lies there; the user's default Accelerate config may be the one run)
    found = lint_tree(tmp_path, {"train.py": ACCELERATED,
                                             "configs/launch.yaml": LAUNCH_CONFIG.replace("{kind}", "DEEPSPEED")})
    assert at(found, "DDP801") == [(line_of(ACCELERATED, "# the save"), "warning")]


def test_its_twin_a_multi_gpu_launch_config_keeps_the_no_sync_advice_and_no_hang(tmp_path):
    found = lint_tree(tmp_path, {"train.py": ACCELERATED, "run.sh": LAUNCH,
                                             "configs/launch.yaml": LAUNCH_CONFIG.replace("{kind}", "MULTI_GPU")})
    assert at(found, "DDP801") == []
    assert at(found, "DDP805") == [(line_of(ACCELERATED, "# the backward"), "warning")]


# -------------------------------------------------- seeding only under an option no launch turns on
DEBUG_SEED = """
import argparse
import random
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, Dataset, DistributedSampler


class Jittered(Dataset):
    def __len__(self):
        return 64

    def __getitem__(self, i):
        return torch.full((4,), float(i)) + torch.rand(4)  # random augmentation


def fix_seed(seed):
    random.seed(seed)
    torch.manual_seed(seed)


def main(opt):
    dist.init_process_group("gloo")
    model = DDP(torch.nn.Linear(4, 1))
    data = Jittered()
    sampler = DistributedSampler(data)
    loader = DataLoader(data, sampler=sampler, batch_size=8, num_workers=4)  # the loader
    for epoch in range(5):
        sampler.set_epoch(epoch)
        for x in loader:
            model(x).sum().backward()


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--debug", action="store_true")
    opt = parser.parse_args()
{seeding}
    main(opt)
"""


def test_a_seeding_helper_called_only_under_an_option_left_off_seeds_nothing(tmp_path):
    code = DEBUG_SEED.replace("{seeding}", "    if opt.debug:\n        fix_seed(0)")
    assert at(lint_plain(tmp_path, code), "DDP808") == []


def test_its_twin_the_helper_called_on_every_run_seeds_every_ranks_workers_alike(tmp_path):
    code = DEBUG_SEED.replace("{seeding}", "    fix_seed(0)")
    assert at(lint_plain(tmp_path, code), "DDP808") == [(line_of(code, "# the loader"), "warning")]


# -------------------------------------------------- an `if` on a constant runs one side
DATASETS = '''class Plain(Dataset):
    def __len__(self):
        return 64

    def __getitem__(self, i):
        return torch.full((4,), float(i))


class Jittered(Plain):
    def __getitem__(self, i):
        return torch.full((4,), float(i)) + torch.rand(4)  # random augmentation
'''

DEAD_SIDE = """
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, Dataset, DistributedSampler


{datasets}

def main():
    torch.manual_seed(0)
    dist.init_process_group("gloo")
    model = DDP(torch.nn.Linear(4, 1))
    if {switch}:
        data = Jittered()
    else:
        data = Plain()
    sampler = DistributedSampler(data)
    loader = DataLoader(data, sampler=sampler, batch_size=8, num_workers=4)  # the loader
    for epoch in range(5):
        sampler.set_epoch(epoch)
        for x in loader:
            model(x).sum().backward()


if __name__ == "__main__":
    main()
""".replace("{datasets}", DATASETS)


def test_a_random_dataset_built_only_under_if_false_draws_nothing(tmp_path):
    assert at(lint_plain(tmp_path, DEAD_SIDE.replace("{switch}", "False")), "DDP808") == []


def test_its_twin_under_if_true_it_is_the_dataset_the_workers_draw_alike(tmp_path):
    code = DEAD_SIDE.replace("{switch}", "True")
    assert at(lint_plain(tmp_path, code), "DDP808") == [(line_of(code, "# the loader"), "warning")]


# -------------------------------------------------- an option's text decides a branch
ROOT_TEXT = """
import argparse
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, Dataset, DistributedSampler


{datasets}

def train(model, data):
    sampler = DistributedSampler(data)
    loader = DataLoader(data, sampler=sampler, batch_size=8, num_workers={workers})  # the {kind} loader
    for epoch in range(5):
        sampler.set_epoch(epoch)
        for x in loader:
            model(x).sum().backward()


def train_augmented(model):
    data = Jittered()
    sampler = DistributedSampler(data)
    loader = DataLoader(data, sampler=sampler, batch_size=8, num_workers=4)  # the augmented loader
    for epoch in range(5):
        sampler.set_epoch(epoch)
        for x in loader:
            model(x).sum().backward()


def main(args):
    torch.manual_seed(0)
    dist.init_process_group("gloo")
    model = DDP(torch.nn.Linear(4, 1))
    if {switch}:
        train_augmented(model)
    else:
        train(model, Plain())


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--root", default="{root}")
    main(parser.parse_args())
""".replace("{datasets}", DATASETS).replace("{workers}", "4").replace("{kind}", "plain")


def test_a_branch_on_an_options_text_the_default_rules_out_is_not_the_run(tmp_path):
    code = ROOT_TEXT.replace("{switch}", 'args.root.find("aug") >= 0').replace("{root}", "data/plain")
    assert at(lint_plain(tmp_path, code), "DDP808") == []


def test_its_twin_the_default_text_takes_that_branch(tmp_path):
    code = ROOT_TEXT.replace("{switch}", 'args.root.find("aug") >= 0').replace("{root}", "data/aug")
    assert at(lint_plain(tmp_path, code), "DDP808") == [(line_of(code, "# the augmented loader"), "warning")]


def test_a_substring_test_on_an_option_is_read_the_same_way(tmp_path):
    code = ROOT_TEXT.replace("{switch}", '"aug" in args.root').replace("{root}", "data/plain")
    assert at(lint_plain(tmp_path, code), "DDP808") == []


# -------------------------------------------------- a raise a broad handler swallows is a skip
SWALLOWED = """
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP


def main():
    dist.init_process_group("gloo")
    model = DDP(torch.nn.Linear(4, 1))
    for step in range(100):
        try:
            loss = model(torch.randn(8, 4)).sum()
            if not torch.isfinite(loss):  # the test
                raise FloatingPointError("non-finite loss")
            loss.backward()
        except Exception as exc:
            print("skipped", exc){again}


if __name__ == "__main__":
    main()
"""


def test_a_non_finite_loss_raised_into_a_broad_except_skips_this_ranks_backward(tmp_path):
    code = SWALLOWED.replace("{again}", "")
    assert at(lint_plain(tmp_path, code), "DDP809") == [(line_of(code, "# the test"), "warning")]


def test_its_twin_the_handler_raises_again_and_the_rank_crashes(tmp_path):
    code = SWALLOWED.replace("{again}", "\n            raise")
    assert at(lint_plain(tmp_path, code), "DDP809") == []


# -------------------------------------------------- a return at a function's end skips nothing
COUNTED = """
import math
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP


def run_epoch(model, batches):
    total, kept = 0.0, 0
    for x in batches:
        loss = model(x).sum()
        loss.backward()
        value = loss.item()
        if math.isfinite(value):
            total += value
            kept += 1
{tail}


def main():
    dist.init_process_group("gloo")
    model = DDP(torch.nn.Linear(4, 1))
    for epoch in range(5):
        run_epoch(model, [torch.randn(8, 4) for _ in range(10)])


if __name__ == "__main__":
    main()
"""


def test_a_rank_local_count_tested_by_the_last_return_decides_nothing_collective(tmp_path):
    code = COUNTED.replace("{tail}", "    if kept == 0:\n        return 0.0\n    return total / kept")
    assert at(lint_plain(tmp_path, code), "DDP809") == []


def test_its_twin_the_same_return_before_a_collective_the_others_run(tmp_path):
    code = COUNTED.replace("{tail}", "    if kept == 0:  # the test\n        return 0.0\n"
                                     "    mean = torch.tensor([total / kept])\n    dist.all_reduce(mean)\n"
                                     "    return mean.item()")
    assert at(lint_plain(tmp_path, code), "DDP809") == [(line_of(code, "# the test"), "warning")]


# -------------------------------------------------- `--local_rank` that torchrun never hands
LOCAL_RANK = """
import argparse
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--local_rank", type=int, default=0)
    args = parser.parse_args()
    dist.init_process_group("gloo")
    model = DDP(torch.nn.Linear(4, 1))
    model(torch.randn(2, 4)).sum().backward()
    if args.local_rank == 0:
        torch.save(model.module.state_dict(), "final.pt")  # the save


if __name__ == "__main__":
    main()
"""


def test_a_local_rank_option_under_torchrun_keeps_its_default_on_every_rank(tmp_path):
    found = lint_tree(tmp_path, {"train.py": LOCAL_RANK,
                                             "run.sh": "torchrun --nproc_per_node=4 train.py --epochs 3\n"})
    [save] = [f for f in found if f.code == "DDP806"]
    assert save.location.line == line_of(LOCAL_RANK, "# the save") and "torchrun" in save.message


def test_its_twin_the_old_launcher_hands_each_process_its_local_rank(tmp_path):
    found = lint_tree(tmp_path, {
        "train.py": LOCAL_RANK,
        "run.sh": "python -m torch.distributed.launch --nproc_per_node=4 train.py --epochs 3\n"})
    assert at(found, "DDP806") == []


def test_nor_under_torchrun_where_the_script_reads_local_rank_from_the_environment(tmp_path):
    code = LOCAL_RANK.replace("    args = parser.parse_args()\n",
                              "    args = parser.parse_args()\n"
                              "    args.local_rank = int(__import__('os').environ['LOCAL_RANK'])\n")
    found = lint_tree(tmp_path, {"train.py": code,
                                             "run.sh": "torchrun --nproc_per_node=4 train.py --epochs 3\n"})
    assert at(found, "DDP806") == []
