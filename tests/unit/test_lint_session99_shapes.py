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


# ------------------------------------------------- the `else:` of `if args.local_rank != -1:`
# The group is set up in the `else:` of `if args.local_rank == -1 or args.no_cuda:`; the loader
# built in the `else:` of `if args.local_rank != -1:` (no sampler) is the one-process run's: no
# DDP802. Twin: the sampler-less loader built on the launched side.
LOCAL_RANK_SIDES = """
    import argparse
    import torch
    import torch.distributed as dist
    from torch.utils.data import DataLoader, DistributedSampler, TensorDataset
    from torch.nn.parallel import DistributedDataParallel as DDP


    def main():
        parser = argparse.ArgumentParser()
        parser.add_argument("--local_rank", type=int, default=-1)
        parser.add_argument("--no_cuda", action="store_true")
        args = parser.parse_args()
        if args.local_rank == -1 or args.no_cuda:
            device = torch.device("cpu")
        else:
            device = torch.device("cuda", args.local_rank)
            dist.init_process_group("nccl")
        model = torch.nn.Linear(4, 1).to(device)
        if args.local_rank != -1:
            model = DDP(model)
        items = TensorDataset(torch.randn(64, 4))
        if args.local_rank != -1:
            sampler = DistributedSampler(items)
            loader = DataLoader(items, batch_size=8, sampler=sampler)
        else:
            loader = DataLoader(items, batch_size=8, shuffle=True)
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        for epoch in range(2):
            if args.local_rank != -1:
                sampler.set_epoch(epoch)
            for (x,) in loader:
                opt.zero_grad()
                model(x).sum().backward()
                opt.step()


    if __name__ == "__main__":
        main()
"""


def test_loader_on_the_unlaunched_side_of_local_rank_is_the_one_process_run(tmp_path):
    assert not _codes(lint_tree(tmp_path, {"train.py": LOCAL_RANK_SIDES}), "DDP802")


def test_loader_without_sampler_on_the_launched_side(tmp_path):
    body = LOCAL_RANK_SIDES.replace("            loader = DataLoader(items, batch_size=8, sampler=sampler)",
                                    "            loader = DataLoader(items, batch_size=8, shuffle=True)")
    [found] = _codes(lint_tree(tmp_path, {"train.py": body}), "DDP802")
    assert found.location.line == _line(body, "loader = DataLoader(items, batch_size=8, shuffle=True)")


# ------------------------------------------------- options declared by a loop over a YAML file
# `cfg = yaml_config_hook("./configs/run.yaml")`, `for k, v in cfg.items():
# parser.add_argument(f"--{k}", default=v, type=type(v))`: each top-level key an option with the
# file's value. `workers: 0` there: no workers, no DDP808. Twin: `workers: 4`.
YAML_LOOP = {
    "configs/run.yaml": "# run settings\nseed: 3\nworkers: 0\nbackbone: \"Plain\"\nepochs: 2\n",
    "utils.py": """
        import yaml


        def yaml_config_hook(path):
            with open(path) as f:
                return yaml.safe_load(f)
    """,
    "train.py": """
        import argparse
        import random

        import torch
        import torch.distributed as dist
        from torch.nn.parallel import DistributedDataParallel as DDP
        from torch.utils.data import DataLoader, Dataset, DistributedSampler
        from utils import yaml_config_hook


        class Noisy(Dataset):
            def __len__(self):
                return 64

            def __getitem__(self, i):
                return torch.full((4,), float(i)) * random.random()


        def main(args):
            dist.init_process_group("gloo")
            torch.manual_seed(args.seed)
            random.seed(args.seed)
            model = DDP(torch.nn.Linear(4, 1))
            opt = torch.optim.SGD(model.parameters(), lr=0.1)
            sampler = DistributedSampler(Noisy())
            loader = DataLoader(Noisy(), batch_size=8, sampler=sampler, num_workers=args.workers)
            for epoch in range(args.epochs):
                sampler.set_epoch(epoch)
                for x in loader:
                    opt.zero_grad()
                    model(x).sum().backward()
                    opt.step()


        if __name__ == "__main__":
            parser = argparse.ArgumentParser()
            config = yaml_config_hook("./configs/run.yaml")
            for k, v in config.items():
                parser.add_argument(f"--{k}", default=v, type=type(v))
            main(parser.parse_args())
    """,
}


def test_options_from_a_yaml_loop_take_the_files_values(tmp_path):
    assert not _codes(lint_tree(tmp_path, YAML_LOOP), "DDP808")


def test_options_from_a_yaml_loop_with_workers(tmp_path):
    files = dict(YAML_LOOP, **{"configs/run.yaml": YAML_LOOP["configs/run.yaml"].replace("workers: 0", "workers: 4")})
    assert _codes(lint_tree(tmp_path, files), "DDP808")


# ------------------------------------------------- a parser function nothing calls
# utils.py's `def legacy_args():` declares `--workers` with default 0 and is never called; the
# script's own parser takes `--workers` from its YAML (4): the legacy default describes no run
# (DDP808 found). Twin: the YAML sets 0.
UNCALLED_PARSER = dict(YAML_LOOP, **{
    "configs/run.yaml": YAML_LOOP["configs/run.yaml"].replace("workers: 0", "workers: 4"),
    "utils.py": YAML_LOOP["utils.py"] + """

        def legacy_args():
            import argparse
            parser = argparse.ArgumentParser()
            parser.add_argument("--workers", type=int, default=0)
            return parser.parse_args()
    """,
})


def test_a_parser_nothing_calls_declares_no_default(tmp_path):
    [found] = _codes(lint_tree(tmp_path, UNCALLED_PARSER), "DDP808")
    assert "above its default" not in found.message  # (4 workers from the YAML, no assumption)


# ------------------------------------------------- a model picked by an option's launched value
# `if args.backbone == "Normed": model = Normed()` (BatchNorm) / `elif ... == "Plain": Plain()`
# (no buffers), the YAML loop's default "Plain": rank 0's evaluation forward through the DDP
# model under no_grad broadcasts nothing (no DDP801). Twin: the default picks "Normed".
PICKED_MODEL = dict(YAML_LOOP, **{"train.py": """
    import argparse

    import torch
    import torch.distributed as dist
    from torch import nn
    from torch.nn.parallel import DistributedDataParallel as DDP
    from utils import yaml_config_hook


    class Normed(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(4, 4)
            self.bn = nn.BatchNorm1d(4)

        def forward(self, x):
            return self.bn(self.fc(x))


    class Plain(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(4, 4)

        def forward(self, x):
            return self.fc(x)


    def get_model(args):
        if args.backbone == "Normed":
            model = Normed()
        elif args.backbone == "Plain":
            model = Plain()
        return model


    def main(args):
        dist.init_process_group("gloo")
        model = DDP(get_model(args))
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        for epoch in range(args.epochs):
            for _ in range(8):
                opt.zero_grad()
                model(torch.randn(8, 4)).sum().backward()
                opt.step()
            if dist.get_rank() == 0:
                with torch.no_grad():
                    model(torch.randn(8, 4))


    if __name__ == "__main__":
        parser = argparse.ArgumentParser()
        config = yaml_config_hook("./configs/run.yaml")
        for k, v in config.items():
            parser.add_argument(f"--{k}", default=v, type=type(v))
        main(parser.parse_args())
"""})


def test_model_picked_by_the_launched_option_holds_no_buffers(tmp_path):
    assert not _codes(lint_tree(tmp_path, PICKED_MODEL), "DDP801")


def test_model_picked_by_the_launched_option_holds_buffers(tmp_path):
    files = dict(PICKED_MODEL, **{"configs/run.yaml": YAML_LOOP["configs/run.yaml"].replace('"Plain"', '"Normed"')})
    [found] = _codes(lint_tree(tmp_path, files), "DDP801")
    assert found.severity.value == "warning"


# ------------------------------------------------- one seeded generator handed to two loaders
# `g = torch.Generator(); g.manual_seed(0)` handed to both sides' loaders: one DDP808 at the
# seeding, naming the other loader. Twin: each loader its own seeded generator - two findings.
SHARED_GENERATOR = """
    import random

    import torch
    import torch.distributed as dist
    from torch.nn.parallel import DistributedDataParallel as DDP
    from torch.utils.data import DataLoader, Dataset, DistributedSampler


    class Jitter(Dataset):
        def __len__(self):
            return 64

        def __getitem__(self, i):
            return torch.full((4,), float(i)) * random.uniform(0.9, 1.1)


    def get_loader(data, strict):
        g = torch.Generator()
        g.manual_seed(0)
        sampler = DistributedSampler(data, drop_last=strict)
        if strict:
            return DataLoader(data, batch_size=8, sampler=sampler, num_workers=4, generator=g, drop_last=True), sampler
        else:
            return DataLoader(data, batch_size=8, sampler=sampler, num_workers=4, generator=g), sampler


    def main():
        dist.init_process_group("gloo")
        model = DDP(torch.nn.Linear(4, 1))
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        loader, sampler = get_loader(Jitter(), strict=dist.get_world_size() > 4)
        for epoch in range(2):
            sampler.set_epoch(epoch)
            for x in loader:
                opt.zero_grad()
                model(x).sum().backward()
                opt.step()


    if __name__ == "__main__":
        main()
"""


def test_one_generator_for_two_loaders_is_one_finding(tmp_path):
    [found] = _codes(lint_tree(tmp_path, {"train.py": SHARED_GENERATOR}), "DDP808")
    assert found.location.line == _line(SHARED_GENERATOR, "g.manual_seed(0)")
    assert "(and the DataLoader at" in found.message


def test_two_generators_for_two_loaders_are_two_findings(tmp_path):
    body = SHARED_GENERATOR.replace(
        "        else:\n            return DataLoader(data, batch_size=8, sampler=sampler, num_workers=4, generator=g), sampler",
        "        else:\n            h = torch.Generator()\n            h.manual_seed(1)\n"
        "            return DataLoader(data, batch_size=8, sampler=sampler, num_workers=4, generator=h), sampler")
    assert len(_codes(lint_tree(tmp_path, {"train.py": body}), "DDP808")) == 2


# ------------------------------------------------- a factory's `Model(...).float()` in a tuple
# `self.clip, cfg = build_clip(...)` in the model's constructor, the factory returning
# `model, cfg` with `model = Clip(...).float()` and Clip registering a buffer: rank 0's
# evaluation forward under no_grad is a DDP801 warning. Twin: Clip registers none.
FLOAT_FACTORY = """
    import torch
    import torch.distributed as dist
    from torch import nn
    from torch.nn.parallel import DistributedDataParallel as DDP


    class Clip(nn.Module):
        def __init__(self, width):
            super().__init__()
            self.fc = nn.Linear(width, width)
            self.register_buffer("position_ids", torch.arange(width))

        def forward(self, x):
            return self.fc(x)


    def build_clip(width):
        model = Clip(width).float()
        return model, {"width": width}


    class Retriever(nn.Module):
        def __init__(self, width):
            super().__init__()
            self.clip, self.cfg = build_clip(width)

        def forward(self, x):
            return self.clip(x)


    def main():
        dist.init_process_group("gloo")
        model = DDP(Retriever(4))
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        for epoch in range(2):
            for _ in range(4):
                opt.zero_grad()
                model(torch.randn(8, 4)).sum().backward()
                opt.step()
            if dist.get_rank() == 0:
                with torch.no_grad():
                    model(torch.randn(8, 4))


    if __name__ == "__main__":
        main()
"""


def test_buffered_model_built_by_a_factory_with_float(tmp_path):
    assert _codes(lint_tree(tmp_path, {"train.py": FLOAT_FACTORY}), "DDP801")


def test_unbuffered_model_built_by_a_factory_with_float(tmp_path):
    body = FLOAT_FACTORY.replace('            self.register_buffer("position_ids", torch.arange(width))\n', "")
    assert not _codes(lint_tree(tmp_path, {"train.py": body}), "DDP801")


# ------------------------------------------------- per-sample files of a config-factory loader
# pytorch-template's shape: `data_loader = config.init_data_loader()` returning
# `self.init_obj("data_loader", module_data)` (a BaseDataLoader(DataLoader) the config names),
# handed to the trainer's constructor; the epoch loop hands each batch's indices to a helper that
# writes `params_{idx}.pt` per index: each rank's own samples (no DDP806). Twin: one fixed name.
TEMPLATE_LOADER = {
    "config.json": '{"data_loader": {"type": "PairLoader", "args": {"batch_size": 4}}}\n',
    "loaders.py": """
        import torch
        from torch.utils.data import DataLoader, Dataset, DistributedSampler


        class Pairs(Dataset):
            def __len__(self):
                return 32

            def __getitem__(self, i):
                return i, torch.randn(4)


        class BaseLoader(DataLoader):
            pass


        class PairLoader(BaseLoader):
            def __init__(self, batch_size):
                data = Pairs()
                super().__init__(data, batch_size=batch_size, sampler=DistributedSampler(data))
    """,
    "parse_config.py": """
        import json


        class ConfigParser:
            def __init__(self, path):
                with open(path) as f:
                    self.config = json.load(f)

            def __getitem__(self, name):
                return self.config[name]

            def init_obj(self, name, module, *args, **kwargs):
                module_name = self[name]["type"]
                module_args = dict(self[name]["args"])
                module_args.update(kwargs)
                return getattr(module, module_name)(*args, **module_args)

            def init_data_loader(self):
                import loaders
                data_loader = self.init_obj("data_loader", loaders)
                return data_loader
    """,
    "writer.py": """
        import os

        import torch


        def save_params(indices, out_dir, params):
            def save_one(idx, state):
                torch.save(state, os.path.join(out_dir, f"params_{idx}.pt"))

            for row, idx in enumerate(indices):
                save_one(idx, params[row])
    """,
    "train.py": """
        import torch
        import torch.distributed as dist
        from torch.nn.parallel import DistributedDataParallel as DDP
        from parse_config import ConfigParser
        from writer import save_params


        class Trainer:
            def __init__(self, model, data_loader):
                self.model = model
                self.data_loader = data_loader
                self.opt = torch.optim.SGD(model.parameters(), lr=0.1)

            def train_epoch(self):
                for step, (indices, x) in enumerate(self.data_loader):
                    indices = indices.tolist()
                    self.opt.zero_grad()
                    out = self.model(x)
                    out.sum().backward()
                    self.opt.step()
                    save_params(indices, "params", out.detach())


        def main():
            dist.init_process_group("gloo")
            config = ConfigParser("config.json")
            data_loader = config.init_data_loader()
            trainer = Trainer(DDP(torch.nn.Linear(4, 2)), data_loader=data_loader)
            for epoch in range(2):
                trainer.train_epoch()


        if __name__ == "__main__":
            main()
    """,
}


def test_per_sample_files_of_a_config_factory_loader(tmp_path):
    assert not _codes(lint_tree(tmp_path, TEMPLATE_LOADER), "DDP806")


def test_one_fixed_file_of_a_config_factory_loader(tmp_path):
    files = dict(TEMPLATE_LOADER, **{"writer.py": TEMPLATE_LOADER["writer.py"].replace('f"params_{idx}.pt"', '"params.pt"')})
    assert _codes(lint_tree(tmp_path, files), "DDP806")


# ------------------------------------------------- the distributed run's own switch, a comparison
# `if args.nodes > 1: init_process_group(...)` with `--nodes` defaulting to 1: the findings are
# about the run that turns it on, so the sampler built under the same test is judged (its
# set_epoch never called: DDP804). Twin: set_epoch called under that test.
NODES_SWITCH = """
    import argparse
    import torch
    import torch.distributed as dist
    from torch.nn.parallel import DistributedDataParallel as DDP
    from torch.utils.data import DataLoader, DistributedSampler, TensorDataset


    def main(args):
        if args.nodes > 1:
            dist.init_process_group("gloo")
        data = TensorDataset(torch.randn(64, 4))
        if args.nodes > 1:
            sampler = DistributedSampler(data)
        else:
            sampler = None
        loader = DataLoader(data, batch_size=8, sampler=sampler, shuffle=sampler is None)
        model = torch.nn.Linear(4, 1)
        if args.nodes > 1:
            model = DDP(model)
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        for epoch in range(3):
            for (x,) in loader:
                opt.zero_grad()
                model(x).sum().backward()
                opt.step()


    if __name__ == "__main__":
        p = argparse.ArgumentParser()
        p.add_argument("--nodes", type=int, default=1)
        main(p.parse_args())
"""


def test_sampler_under_the_set_up_comparison_is_judged(tmp_path):
    [found] = _codes(lint_tree(tmp_path, {"train.py": NODES_SWITCH}), "DDP804")
    assert found.location.line == _line(NODES_SWITCH, "sampler = DistributedSampler(data)")


def test_sampler_under_the_set_up_comparison_with_set_epoch(tmp_path):
    body = NODES_SWITCH.replace("        for epoch in range(3):\n",
                                "        for epoch in range(3):\n            if args.nodes > 1:\n"
                                "                sampler.set_epoch(epoch)\n")
    assert not _codes(lint_tree(tmp_path, {"train.py": body}), "DDP804")
