"""Shapes from session 99 (holdout 141's reading), each with its twin, in our own words."""

from __future__ import annotations

from tests.unit.test_lint_session39_shapes import lint_tree
from tests.unit.test_lint_session61_shapes import _codes, _line

# ------------------------------------------------- samplers bound by one tuple assignment
# `train_sampler, val_sampler = DistributedSampler(a), DistributedSampler(b)`: each call is known
# by the name in its place. The training sampler's set_epoch is called; the validation loader is
# read with gradients off: no DDP804. Twin: no set_epoch at all - the training sampler's DDP804.
PAIRED_SAMPLERS = """
    import torch
    import torch.distributed as dist
    from torch.utils.data import DataLoader, DistributedSampler, TensorDataset
    from torch.nn.parallel import DistributedDataParallel as DDP


    def fit(loader, model, opt):
        for x, y in loader:
            opt.zero_grad()
            model(x).sum().backward()
            opt.step()


    def check(loader, model):
        with torch.no_grad():
            for x, y in loader:
                model(x)


    def main():
        dist.init_process_group("gloo")
        model = DDP(torch.nn.Linear(4, 1))
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        seen = TensorDataset(torch.randn(64, 4), torch.randn(64, 1))
        held = TensorDataset(torch.randn(32, 4), torch.randn(32, 1))
        fit_order, check_order = DistributedSampler(seen), DistributedSampler(held)
        fit_loader = DataLoader(seen, batch_size=8, sampler=fit_order)
        check_loader = DataLoader(held, batch_size=8, sampler=check_order)
        for epoch in range(3):
            fit_order.set_epoch(epoch)
            fit(fit_loader, model, opt)
            check(check_loader, model)


    if __name__ == "__main__":
        main()
"""


def test_samplers_bound_by_one_tuple_are_told_apart(tmp_path):
    assert not _codes(lint_tree(tmp_path, {"train.py": PAIRED_SAMPLERS}), "DDP804")


def test_samplers_bound_by_one_tuple_training_one_never_set(tmp_path):
    body = PAIRED_SAMPLERS.replace("            fit_order.set_epoch(epoch)\n", "")
    [found] = _codes(lint_tree(tmp_path, {"train.py": body}), "DDP804")
    assert found.location.line == _line(body, "fit_order, check_order =")


# ------------------------------------------------- a sampler returned through two helpers' tuples
# `loader, _, fit_order, _ = build(...)` in get_loaders, which returns `(loader, fit_order)` to
# the script's `loader, shuffle_order = get_loaders(cfg)`, then `shuffle_order.set_epoch(epoch)`:
# the sampler built in build() is set every epoch (no DDP804). Twin: no set_epoch at all.
TWO_HOPS = {
    "data.py": """
        import torch
        from torch.utils.data import DataLoader, DistributedSampler, TensorDataset


        def build(size, distributed):
            items = TensorDataset(torch.randn(size, 4))
            held = TensorDataset(torch.randn(8, 4))
            order = DistributedSampler(items) if distributed else None
            return DataLoader(items, batch_size=4, sampler=order), DataLoader(held, batch_size=4), order, None


        def get_loaders(size):
            loader, _, fit_order, _ = build(size, distributed=True)
            return loader, fit_order
    """,
    "train.py": """
        import torch
        import torch.distributed as dist
        from torch.nn.parallel import DistributedDataParallel as DDP
        from data import get_loaders


        def main():
            dist.init_process_group("gloo")
            model = DDP(torch.nn.Linear(4, 1))
            opt = torch.optim.SGD(model.parameters(), lr=0.1)
            loader, shuffle_order = get_loaders(64)
            for epoch in range(3):
                shuffle_order.set_epoch(epoch)
                for (x,) in loader:
                    opt.zero_grad()
                    model(x).sum().backward()
                    opt.step()


        if __name__ == "__main__":
            main()
    """,
}


def test_sampler_returned_through_two_tuples_is_set(tmp_path):
    assert not _codes(lint_tree(tmp_path, TWO_HOPS), "DDP804")


def test_sampler_returned_through_two_tuples_never_set(tmp_path):
    files = dict(TWO_HOPS, **{"train.py": TWO_HOPS["train.py"].replace("                shuffle_order.set_epoch(epoch)\n", "")})
    assert _codes(lint_tree(tmp_path, files), "DDP804")


# ------------------------------------------------- a required text option read as a test
# `if args.hub_repo:` of `add_argument("--hub_repo", type=str, required=True)`: every run gives
# one, so a DeepSpeed save_checkpoint under `if rank == 0:` and that test is rank 0's alone on
# every run (a DDP801 error, no assumption). Twin: an int option (0 is false): the warning that
# states it.
REQUIRED = """
    import argparse
    import deepspeed
    import torch
    import torch.distributed as dist


    def main():
        parser = argparse.ArgumentParser()
        parser.add_argument("--hub_repo", type=str, required=True)
        args = parser.parse_args()
        deepspeed.init_distributed()
        rank = dist.get_rank()
        engine, _, _, _ = deepspeed.initialize(model=torch.nn.Linear(4, 1), config={"train_batch_size": 8})
        for step in range(10):
            loss = engine(torch.randn(8, 4)).sum()
            engine.backward(loss)
            engine.step()
        if rank == 0:
            if args.hub_repo:
                engine.save_checkpoint(".", tag="last")


    if __name__ == "__main__":
        main()
"""


def test_required_text_option_holds_on_every_run(tmp_path):
    [found] = _codes(lint_tree(tmp_path, {"train.py": REQUIRED}), "DDP801")
    assert found.severity.value == "error"
    assert found.location.line == _line(REQUIRED, "engine.save_checkpoint(")


def test_required_number_option_is_the_stated_assumption(tmp_path):
    body = REQUIRED.replace('"--hub_repo", type=str, required=True', '"--hub_repo", type=int, required=True')
    [found] = _codes(lint_tree(tmp_path, {"train.py": body}), "DDP801")
    assert found.severity.value == "warning" and "args.hub_repo" in found.message


# ------------------------------------------------- a wrapper a set-up helper drops, by a plain name
# `setup_parallel(args, model)` as a statement; the helper's `model = DistributedDataParallel(model)`
# (on one side of its tests, a DataParallel on another) is never returned or stored: the
# script's `model` stays the plain module, and `train(loader, model, ...)` runs round the wrapper
# (DDP810 at the backward). Twin: the helper returns the wrapper and the script keeps it.
DROPPED = """
    import torch
    import torch.distributed as dist
    from torch.nn.parallel import DistributedDataParallel


    def setup_parallel(distributed, model):
        if distributed:
            model = DistributedDataParallel(model)
        else:
            model = torch.nn.DataParallel(model)


    def train(batches, model, opt):
        for x in batches:
            loss = model(x).sum()
            opt.zero_grad()
            loss.backward()
            opt.step()


    def main():
        dist.init_process_group("gloo")
        model = torch.nn.Linear(4, 1)
        setup_parallel(True, model)
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        train([torch.randn(8, 4) for _ in range(4)], model, opt)


    if __name__ == "__main__":
        main()
"""


def test_wrapper_dropped_by_a_helper_leaves_the_plain_module(tmp_path):
    [found] = _codes(lint_tree(tmp_path, {"train.py": DROPPED}), "DDP810")
    assert found.location.line == _line(DROPPED, "loss.backward()")
    assert found.severity.value == "error"


def test_wrapper_returned_by_the_helper_is_kept(tmp_path):
    body = DROPPED.replace("            model = torch.nn.DataParallel(model)\n",
                           "            model = torch.nn.DataParallel(model)\n        return model\n") \
        .replace("        setup_parallel(True, model)", "        model = setup_parallel(True, model)")
    assert not _codes(lint_tree(tmp_path, {"train.py": body}), "DDP810")


# ------------------------------------------------- a save_state hook and the engine's own tests
# Accelerate calls a `register_save_state_pre_hook` hook from inside save_state(). The script
# calls save_state under `if accelerator.is_main_process:` and, for FSDP, on every rank under
# `if accelerator.distributed_type == DistributedType.FSDP:`. Every launch names a MULTI_GPU
# config: the FSDP side never runs, so the hook's write is rank 0's (no DDP806). Twin: the config
# picks FSDP - every rank calls save_state there, and the hook writes on every rank.
ENGINE_SIDES = {
    "run.sh": 'accelerate launch --config_file config.yml train.py --out ckpt\n',
    "config.yml": "distributed_type: MULTI_GPU\nnum_processes: 8\nmixed_precision: fp16\n",
    "train.py": """
        import argparse
        import os

        import accelerate
        import torch
        from accelerate import Accelerator


        def main():
            parser = argparse.ArgumentParser()
            parser.add_argument("--out", default="ckpt")
            args = parser.parse_args()
            accelerator = Accelerator()
            model = torch.nn.Linear(4, 1)

            def keep_weights(models, weights, output_dir):
                while weights:
                    weights.pop()
                    torch.save(models[0].state_dict(), os.path.join(output_dir, "weights.pt"))

            accelerator.register_save_state_pre_hook(keep_weights)
            opt = torch.optim.SGD(model.parameters(), lr=0.1)
            data = torch.utils.data.DataLoader(torch.randn(64, 4), batch_size=8)
            model, opt, data = accelerator.prepare(model, opt, data)
            for step, x in enumerate(data):
                accelerator.backward(model(x).sum())
                opt.step()
                opt.zero_grad()
                if accelerator.is_main_process:
                    if accelerator.distributed_type != accelerate.DistributedType.FSDP:
                        accelerator.save_state(os.path.join(args.out, str(step)))
                if accelerator.distributed_type == accelerate.DistributedType.FSDP:
                    accelerator.save_state(os.path.join(args.out, str(step)))


        if __name__ == "__main__":
            main()
    """,
}


def test_hook_of_save_state_on_a_multi_gpu_launch_is_rank_zeros(tmp_path):
    found = lint_tree(tmp_path, ENGINE_SIDES)
    assert not _codes(found, "DDP806") and not _codes(found, "DDP801")


def test_hook_of_save_state_on_an_fsdp_launch_writes_on_every_rank(tmp_path):
    files = dict(ENGINE_SIDES, **{"config.yml": "distributed_type: FSDP\nnum_processes: 8\n"})
    found = lint_tree(tmp_path, files)
    [write] = _codes(found, "DDP806")
    assert write.location.line == _line(ENGINE_SIDES["train.py"], "torch.save(")
    # the save_state under `!= FSDP` is not the launched run's: no DDP801 at it
    assert not _codes(found, "DDP801")


def test_main_process_save_state_on_an_fsdp_launch_without_the_engine_test(tmp_path):
    body = ENGINE_SIDES["train.py"].replace(
        "                if accelerator.is_main_process:\n"
        "                    if accelerator.distributed_type != accelerate.DistributedType.FSDP:\n"
        "                        accelerator.save_state(",
        "                if accelerator.is_main_process:\n"
        "                    if step % 2 == 0:\n"
        "                        accelerator.save_state(")
    files = dict(ENGINE_SIDES, **{"config.yml": "distributed_type: FSDP\nnum_processes: 8\n", "train.py": body})
    [found] = _codes(lint_tree(tmp_path, files), "DDP801")
    assert found.severity.value == "error"


# ------------------------------------------------- a config group's flag set false everywhere
# Hydra's `cfg.cluster.requeue` of configs/cluster/*.yaml, false in every file of the group:
# `if cfg.cluster.requeue and is_main:` installs a SIGTERM handler that saves through a barrier,
# and a rank-0 barrier sits under the same test. No run takes that side: no DDP801, no DDP809.
# Twin: one config of the group turns it on.
REQUEUE = {
    "configs/config.yaml": "defaults:\n  - cluster: local\n  - _self_\nepochs: 2\n",
    "configs/cluster/local.yaml": "requeue: false\nnodes: 1\n",
    "configs/cluster/slurm.yaml": "requeue: false\nnodes: 4\n",
    "train.py": """
        import signal

        import hydra
        import torch
        import torch.distributed as dist
        from torch.nn.parallel import DistributedDataParallel as DDP

        state = {"stop": False}


        def save(model):
            dist.barrier()
            torch.save(model.state_dict(), "last.pt")


        @hydra.main(version_base=None, config_path="configs", config_name="config")
        def main(cfg):
            dist.init_process_group("gloo")
            is_main = dist.get_rank() == 0
            model = DDP(torch.nn.Linear(4, 1))
            opt = torch.optim.SGD(model.parameters(), lr=0.1)

            if cfg.cluster.requeue and is_main:
                def on_term(*args):
                    if not state["stop"]:
                        state["stop"] = True
                        save(model)

                signal.signal(signal.SIGTERM, on_term)

            for epoch in range(cfg.epochs):
                for _ in range(8):
                    opt.zero_grad()
                    model(torch.randn(8, 4)).sum().backward()
                    opt.step()
                if cfg.cluster.requeue and is_main:
                    dist.barrier()


        if __name__ == "__main__":
            main()
    """,
}


def test_config_group_flag_off_everywhere_takes_no_side(tmp_path):
    found = lint_tree(tmp_path, REQUEUE)
    assert not _codes(found, "DDP801") and not _codes(found, "DDP809")


def test_config_group_flag_on_in_one_config(tmp_path):
    files = dict(REQUEUE, **{"configs/cluster/slurm.yaml": "requeue: true\nnodes: 4\n"})
    found = lint_tree(tmp_path, files)
    assert _codes(found, "DDP801")
