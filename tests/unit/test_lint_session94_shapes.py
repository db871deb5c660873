"""Shapes from session 94 (holdout 133's leftovers and holdout 134's reading), each with its twin,
in our own words."""

from __future__ import annotations

from tests.unit.test_lint_session39_shapes import lint_tree
from tests.unit.test_lint_session61_shapes import _codes, _line

# ------------------------------------ a constructor's `distributed=False` no construction changes
# `if self.distributed: sampler = DistributedSampler(pool) else: sampler = None` in a trainer the
# script builds as `pkg.trainer.PoolTrainer(model, opt)`, never handing `distributed`: the sampler
# side is never taken, so the training loader has none (every rank iterates the whole pool).
POOL = {
    "pkg/__init__.py": "from . import trainer\n",
    "pkg/trainer.py": """
        import torch
        from torch.utils.data import DataLoader, DistributedSampler, TensorDataset


        class PoolTrainer:
            def __init__(self, model, opt, batch_size=8, distributed=False):
                self.model = model
                self.opt = opt
                self.batch_size = batch_size
                self.distributed = distributed

            def run_epoch(self, epoch):
                pool = TensorDataset(torch.randn(64, 4))
                if self.distributed:
                    sampler = DistributedSampler(pool)
                    sampler.set_epoch(epoch)
                else:
                    sampler = None
                loader = DataLoader(pool, batch_size=self.batch_size, shuffle=(sampler is None), sampler=sampler)
                for (x,) in loader:
                    self.opt.zero_grad()
                    self.model(x).sum().backward()
                    self.opt.step()
    """,
    "train.py": """
        import torch
        import torch.distributed as dist
        from torch.nn.parallel import DistributedDataParallel as DDP
        import pkg


        def main():
            dist.init_process_group("gloo")
            model = DDP(torch.nn.Linear(4, 1))
            opt = torch.optim.SGD(model.parameters(), lr=0.1)
            trainer = pkg.trainer.PoolTrainer(model, opt, batch_size=16)
            for epoch in range(3):
                trainer.run_epoch(epoch)


        if __name__ == "__main__":
            main()
    """,
}


def test_sampler_behind_a_constructor_flag_no_construction_turns_on(tmp_path):
    findings = lint_tree(tmp_path, POOL)
    hits = _codes(findings, "DDP802")
    assert len(hits) == 1 and hits[0].severity.value == "error"
    assert hits[0].location.file.endswith("pkg/trainer.py")
    assert hits[0].location.line == _line(POOL["pkg/trainer.py"], "loader = DataLoader(")


def test_sampler_behind_a_constructor_flag_the_script_turns_on(tmp_path):
    files = dict(POOL, **{"train.py": POOL["train.py"].replace("batch_size=16)", "batch_size=16, distributed=True)")})
    assert not _codes(lint_tree(tmp_path, files), "DDP802")


# ------------------------------------------------------------ a command picked by name from globals()
# `globals()["run_" + args.task]()`: each function of the module that name may spell runs, so the
# training command's loader without a sampler is judged (it was unreached: an incomplete verdict).
COMMANDS = """
    import argparse
    import torch
    import torch.distributed as dist
    from torch.nn.parallel import DistributedDataParallel as DDP
    from torch.utils.data import DataLoader, TensorDataset


    def run_train(args):
        dist.init_process_group("gloo")
        model = DDP(torch.nn.Linear(4, 1))
        loader = DataLoader(TensorDataset(torch.randn(64, 4)), batch_size=8, shuffle=True)
        for (x,) in loader:
            model(x).sum().backward()


    def run_export(args):
        print("export")


    if __name__ == "__main__":
        parser = argparse.ArgumentParser()
        parser.add_argument("--task", default="train")
        args = parser.parse_args()
        globals()[PREFIX + args.task](args)
"""


def test_a_command_picked_from_globals_by_its_prefix_is_reached(tmp_path):
    found = lint_tree(tmp_path, {"train.py": COMMANDS.replace("PREFIX", '"run_"')})
    assert [f.location.line for f in _codes(found, "DDP802")] == [_line(COMMANDS, "loader = DataLoader(")]


def test_a_prefix_no_function_has_reaches_nothing(tmp_path):
    found = lint_tree(tmp_path, {"train.py": COMMANDS.replace("PREFIX", '"do_"')})
    assert not _codes(found, "DDP802")


# ------------------------------------------------- a resumed count rank 0 alone steps, read by every rank
# `trainer.iter = start_iter + 1` on every rank, with `start_iter = load_model(...)` a helper that
# returns 0 or the checkpoint's count (the same on every rank); then only rank 0 steps it, past
# `if local_rank > 0: continue`, and the `while True:` loop every rank runs leaves on it: rank 0
# leaves early (an error: the loop's body is entered, its first test read on every rank).
RESUMED = """
    import time
    import torch
    import torch.distributed as dist
    from torch.nn.parallel import DistributedDataParallel as DDP
    from torch.utils.data import DataLoader, DistributedSampler, TensorDataset


    def load_model(path, resume):
        if not resume:
            return 0
        ckpt = torch.load(path)
        return ckpt["iter"]


    class Trainer:
        def __init__(self, rank):
            self.rank = rank
            self.iter = 0

        def train(self, loader, model, opt):
            for (x,) in loader:
                opt.zero_grad()
                model(x).sum().backward()
                opt.step()
                if self.rank > 0:
                    continue
                print("step", self.iter)
                self.iter += 1


    def main():
        dist.init_process_group("gloo")
        data = TensorDataset(torch.randn(64, 4))
        sampler = DistributedSampler(data)
        loader = DataLoader(data, batch_size=8, sampler=sampler)
        model = DDP(torch.nn.Linear(4, 1))
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        trainer = Trainer(dist.get_rank())
        start_iter = START
        trainer.iter = start_iter + 1
        epoch = 0
        while LOOP:
            if trainer.iter > 100:  # the exit
                break
            sampler.set_epoch(epoch)
            trainer.train(loader, model, opt)
            epoch += 1


    main()
"""


def _resumed(start="load_model('ckpt.pt', False)", loop="True"):
    return RESUMED.replace("START", start).replace("LOOP", loop)


def test_a_count_resumed_alike_then_stepped_by_rank_zero_alone_decides_the_exit(tmp_path):
    found = _codes(lint_tree(tmp_path, {"train.py": _resumed()}), "DDP809")
    assert [(f.location.line, f.severity.value) for f in found] == [(_line(RESUMED, "# the exit"), "error")]
    assert "`self.iter` is set only under" in found[0].message


def test_a_start_that_differs_per_process_is_no_rank_zero_state(tmp_path):
    found = _codes(lint_tree(tmp_path, {"train.py": _resumed(start="int(time.time())")}), "DDP809")
    assert not found


def test_a_loop_whose_test_may_not_enter_it_leaves_the_exit_a_warning(tmp_path):
    found = _codes(lint_tree(tmp_path, {"train.py": _resumed(loop="epoch < 10")}), "DDP809")
    assert [f.severity.value for f in found] == ["warning"]


# ------------------------------------------------ rank 0 returns on a resume test, the others train on
# `if remaining <= 0 and is_main(): return` outside any loop: rank 0 leaves the training function
# (and the program) while the others go on into the training's all-reduces - the exit is the one
# finding (DDP809), not each collective after it (DDP801).
RETURNS = """
    import torch
    import torch.distributed as dist
    from torch.nn.parallel import DistributedDataParallel as DDP


    def is_main():
        return dist.get_rank() == 0


    def train(model, total_steps, start_step):
        remaining = total_steps - start_step
        if TEST:
            print("nothing left to train")
            return
        for step in range(remaining):
            model(torch.randn(8, 4)).sum().backward()
        dist.barrier()


    def main():
        dist.init_process_group("gloo")
        model = DDP(torch.nn.Linear(4, 1))
        start = torch.load("state.pt")["step"]
        train(model, 100, start)


    main()
"""


def test_rank_zero_returning_on_a_resume_test_is_one_exit(tmp_path):
    found = lint_tree(tmp_path, {"train.py": RETURNS.replace("TEST", "remaining <= 0 and is_main()")})
    assert not _codes(found, "DDP801")
    exits = _codes(found, "DDP809")
    assert [(f.location.line, f.severity.value) for f in exits] == [(_line(RETURNS, "if TEST:"), "warning")]
    assert "leaves the function (return)" in exits[0].message


def test_every_rank_returning_on_the_resume_test_parts_nothing(tmp_path):
    found = lint_tree(tmp_path, {"train.py": RETURNS.replace("TEST", "remaining <= 0")})
    assert not _codes(found, "DDP809") and not _codes(found, "DDP801")


# ------------------------------------------------------ a seeding behind the script's own off switch
# `deterministic = False` at the top, then `if deterministic: torch.manual_seed(SEED)`: the run as
# shipped seeds nothing, so the ranks' workers are not seeded alike (no DDP808).
SWITCHED_SEED = """
    import random
    import torch
    import torch.distributed as dist
    from torch.nn.parallel import DistributedDataParallel as DDP
    from torch.utils.data import DataLoader, Dataset, DistributedSampler

    deterministic = SWITCH
    if deterministic:
        torch.manual_seed(123)


    class Crops(Dataset):
        def __len__(self):
            return 64

        def __getitem__(self, i):
            return torch.randn(4) * random.random()


    def main():
        dist.init_process_group("gloo")
        model = DDP(torch.nn.Linear(4, 1))
        data = Crops()
        sampler = DistributedSampler(data)
        loader = DataLoader(data, batch_size=8, sampler=sampler, num_workers=4)
        for epoch in range(3):
            sampler.set_epoch(epoch)
            for x in loader:
                model(x).sum().backward()


    main()
"""


def test_a_seeding_behind_a_script_switch_left_off_seeds_no_rank_alike(tmp_path):
    assert not _codes(lint_tree(tmp_path, {"train.py": SWITCHED_SEED.replace("SWITCH", "False")}), "DDP808")


def test_the_switch_turned_on_seeds_every_rank_alike(tmp_path):
    assert _codes(lint_tree(tmp_path, {"train.py": SWITCHED_SEED.replace("SWITCH", "True")}), "DDP808")


# ------------------------------------------ a model zoo's class picked by a JSON config (pytorch-template)
# `model = config.init_obj("arch", module_arch)`, a factory returning `getattr(module, name)(...)`,
# over a module of more than eight classes: the JSON configs beside the script name the ones a
# launch picks (`"type": "Net3"`), a BatchNorm net, so rank 0's evaluation forward through the
# DDP wrapper the trainer keeps broadcasts its buffers alone (DDP801).
ZOO_MODELS = "import torch.nn as nn\n\n" + "\n".join(
    f"class Net{i}(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
    f"        self.body = nn.Sequential(nn.Linear(4, 4), {'nn.BatchNorm1d(4)' if i % 2 else 'nn.ReLU()'})\n\n"
    f"    def forward(self, x):\n        return self.body(x)\n"
    for i in range(10))
ZOO = {
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
    """,
    "model/__init__.py": "",
    "model/model.py": ZOO_MODELS,
    "configs/a.json": '{\n  "arch": {\n    "type": "NAME",\n    "args": {}\n  }\n}\n',
    "trainer.py": """
        import torch
        from torch.nn.parallel import DistributedDataParallel as DDP


        class BaseTrainer:
            def __init__(self, model):
                self.model = model
                self.model = self.model.to("cpu")
                self.model = DDP(self.model)


        class Trainer(BaseTrainer):
            def __init__(self, model, rank):
                super().__init__(model)
                self.rank = rank
                self.opt = torch.optim.SGD(self.model.parameters(), lr=0.1)

            def train(self, epochs):
                for epoch in range(epochs):
                    for step in range(10):
                        self.opt.zero_grad()
                        self.model(torch.randn(8, 4)).sum().backward()
                        self.opt.step()
                    if self.rank <= 0:
                        self.validate()

            def validate(self):
                with torch.no_grad():
                    for step in range(5):
                        self.model(torch.randn(8, 4))  # the evaluation forward
    """,
    "train.py": """
        import argparse
        import torch.distributed as dist
        import model.model as module_arch
        from parse_config import ConfigParser
        from trainer import Trainer


        def main(config):
            dist.init_process_group("gloo")
            model = config.init_obj("arch", module_arch)
            Trainer(model, dist.get_rank()).train(3)


        if __name__ == "__main__":
            parser = argparse.ArgumentParser()
            parser.add_argument("-c", "--config", default="configs/a.json")
            main(ConfigParser(parser.parse_args().config))
    """,
}


def _zoo(name):
    return dict(ZOO, **{"configs/a.json": ZOO["configs/a.json"].replace("NAME", name)})


def test_a_zoo_class_a_json_config_names_is_the_model_the_trainer_wraps(tmp_path):
    found = _codes(lint_tree(tmp_path, _zoo("Net3")), "DDP801")
    assert [f.location.line for f in found] == [_line(ZOO["trainer.py"], "# the evaluation forward")]


def test_a_zoo_class_without_buffers_named_by_the_config_broadcasts_nothing(tmp_path):
    assert not _codes(lint_tree(tmp_path, _zoo("Net4")), "DDP801")


# ------------------------------------------- a Hydra config folder spelt from the script's own path
# `@hydra.main(config_path=str(pathlib.Path(__file__).parent.joinpath("pkg", "config")))` (the
# diffusion_policy family): `hydra.utils.get_class(cfg._target_)` builds the workspace the
# config names, whose training loss goes round its DDP wrapper (DDP810).
WORKSPACE = {
    "pkg/__init__.py": "",
    "pkg/config/train_ddp.yaml": "_target_: pkg.workspace.DDPWorkspace\nepochs: 2\n",
    "pkg/workspace.py": """
        import torch
        import torch.distributed as dist
        from torch.nn.parallel import DistributedDataParallel as DDP


        class Policy(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.net = torch.nn.Linear(4, 1)

            def compute_loss(self, x):
                return self.net(x).sum()


        class DDPWorkspace:
            def __init__(self, cfg):
                self.cfg = cfg

            def run(self):
                dist.init_process_group("gloo")
                model = DDP(Policy())
                opt = torch.optim.SGD(model.parameters(), lr=0.1)
                for epoch in range(self.cfg.epochs):
                    loss = LOSS  # the loss
                    loss.backward()
                    opt.step()
    """,
    "train.py": """
        import pathlib
        import hydra
        from omegaconf import OmegaConf


        @hydra.main(version_base=None, config_path=str(pathlib.Path(__file__).parent.joinpath("pkg", "config")))
        def main(cfg):
            cls = hydra.utils.get_class(cfg._target_)
            workspace = cls(cfg)
            workspace.run()


        if __name__ == "__main__":
            main()
    """,
}


def test_a_workspace_named_in_a_config_folder_spelt_from_the_script_path_is_read(tmp_path):
    files = dict(WORKSPACE, **{"pkg/workspace.py": WORKSPACE["pkg/workspace.py"].replace(
        "LOSS", "model.module.compute_loss(torch.randn(8, 4))")})
    found = _codes(lint_tree(tmp_path, files), "DDP810")
    assert found and found[0].location.file.endswith("pkg/workspace.py")


def test_the_workspace_through_its_wrapper_is_clean(tmp_path):
    # (its rank-0 barrier is found: the workspace is read, and its loss judged healthy)
    files = dict(WORKSPACE, **{"pkg/workspace.py": WORKSPACE["pkg/workspace.py"].replace(
        "LOSS", "model(torch.randn(8, 4)).sum()").replace(
        "opt.step()", "opt.step()\n" + " " * 20 + "if dist.get_rank() == 0:\n" + " " * 24 + "dist.barrier()")})
    found = lint_tree(tmp_path, files)
    assert not _codes(found, "DDP810")
    assert _codes(found, "DDP801")


# ----------------------------------- an evaluation builder's own `sampler`, a conditional expression
# `sampler = DistributedSampler(ds, shuffle=False) if distributed else None`, then
# `sampler.set_epoch(0)` in the validation builder: that sets its own sampler, not the training
# one's, which the training loop never sets (DDP804 stays).
EPOCHS = """
    import torch
    import torch.distributed as dist
    from torch.nn.parallel import DistributedDataParallel as DDP
    from torch.utils.data import DataLoader, DistributedSampler, TensorDataset


    def train_loader(distributed):
        ds = TensorDataset(torch.randn(64, 4))
        train_sampler = DistributedSampler(ds, shuffle=True) if distributed else None
        return DataLoader(ds, batch_size=8, sampler=train_sampler), train_sampler


    def valid_loader(distributed):
        ds = TensorDataset(torch.randn(16, 4))
        sampler = DistributedSampler(ds, shuffle=False) if distributed else None
        if sampler is not None:
            sampler.set_epoch(0)
        return DataLoader(ds, batch_size=8, sampler=sampler)


    def main():
        dist.init_process_group("gloo")
        model = DDP(torch.nn.Linear(4, 1))
        loader, sampler = train_loader(True)
        valid = valid_loader(True)
        for epoch in range(3):
            SET_EPOCH
            for (x,) in loader:
                model(x).sum().backward()
            with torch.no_grad():
                for (x,) in valid:
                    model(x)


    main()
"""


def test_an_evaluation_builders_own_sampler_epoch_is_not_the_training_ones(tmp_path):
    found = _codes(lint_tree(tmp_path, {"train.py": EPOCHS.replace("SET_EPOCH", "pass")}), "DDP804")
    assert [f.location.line for f in found] == [_line(EPOCHS, "train_sampler = DistributedSampler(")]


def test_the_training_sampler_set_each_epoch_needs_nothing(tmp_path):
    found = _codes(lint_tree(tmp_path, {"train.py": EPOCHS.replace("SET_EPOCH", "sampler.set_epoch(epoch)")}), "DDP804")
    assert not found


# -------------------------------- a draw behind a config key no shipped config sets (`.get` of it, None)
# `noise_ratio=opt.dataloader.get("noise_ratio")` handed down two builders into a dataset whose
# `if not noise_ratio: ... else: np.random.shuffle(idx)` draws only where the key is set; the
# YAML config sets other keys of `dataloader`, not that one: the draw never runs (no DDP803).
NOISY = {
    "configs/base.yaml": "dataloader:\n  batch_size: 8\n  workers: 2\nKEY",
    "train.py": """
        import numpy as np
        import torch
        import torch.distributed as dist
        import yaml
        from torch.nn.parallel import DistributedDataParallel as DDP
        from torch.utils.data import DataLoader, Dataset, DistributedSampler


        class Pairs(Dataset):
            def __init__(self, n, noise_ratio=None):
                self.n = n
                if not noise_ratio:
                    self.mapper = list(range(n))
                else:
                    idx = np.arange(n)
                    np.random.shuffle(idx)
                    self.mapper = list(idx)

            def __len__(self):
                return self.n

            def __getitem__(self, i):
                return torch.full((4,), float(self.mapper[i]))


        def get_loader(opt, noise_ratio=None):
            ds = Pairs(64, noise_ratio=noise_ratio)
            return DataLoader(ds, batch_size=opt.dataloader.batch_size, sampler=DistributedSampler(ds))


        def get_loaders(opt):
            return get_loader(opt, noise_ratio=opt.dataloader.get("noise_ratio")), get_loader(opt)


        class Opt(dict):
            __getattr__ = dict.get


        def main():
            with open("configs/base.yaml") as f:
                opt = Opt({k: Opt(v) for k, v in yaml.safe_load(f).items()})
            dist.init_process_group("gloo")
            model = DDP(torch.nn.Linear(4, 1))
            loader, _ = get_loaders(opt)
            for epoch in range(3):
                loader.sampler.set_epoch(epoch)
                for x in loader:
                    model(x).sum().backward()


        main()
    """,
}


def test_a_draw_behind_a_config_key_no_config_sets_never_runs(tmp_path):
    files = dict(NOISY, **{"configs/base.yaml": NOISY["configs/base.yaml"].replace("KEY", "")})
    assert not _codes(lint_tree(tmp_path, files), "DDP803")


def test_the_key_set_in_the_config_draws_on_each_rank(tmp_path):
    files = dict(NOISY, **{"configs/base.yaml": NOISY["configs/base.yaml"].replace("KEY", "  noise_ratio: 0.2\n")})
    assert _codes(lint_tree(tmp_path, files), "DDP803")


# ------------------------------------------ a worker_init_fn whose seeding waits for a seed never given
# `worker_init_fn=partial(worker_init_fn, seed=seed)` in `build_dataloader(..., seed=None)`, every
# call leaving seed out; the init seeds only `if seed is not None:` - on no way in (no DDP808).
UNSEEDED_INIT = """
    import random
    from functools import partial
    import numpy as np
    import torch
    import torch.distributed as dist
    from torch.nn.parallel import DistributedDataParallel as DDP
    from torch.utils.data import DataLoader, Dataset, DistributedSampler


    def worker_init_fn(worker_id, seed=666):
        if seed is not None:
            np.random.seed(seed + worker_id)
            random.seed(seed + worker_id)


    class Views(Dataset):
        def __len__(self):
            return 64

        def __getitem__(self, i):
            return torch.randn(4) * np.random.rand()


    def build_dataloader(dataset, workers=4, seed=None):
        sampler = DistributedSampler(dataset)
        loader = DataLoader(dataset, batch_size=8, sampler=sampler, num_workers=workers,
                            worker_init_fn=partial(worker_init_fn, seed=seed))
        return loader, sampler


    def main():
        dist.init_process_group("gloo")
        model = DDP(torch.nn.Linear(4, 1))
        loader, sampler = build_dataloader(Views()CALL_SEED)
        for epoch in range(3):
            sampler.set_epoch(epoch)
            for x in loader:
                model(x).sum().backward()


    main()
"""


def test_a_worker_seeding_under_a_seed_no_call_gives_seeds_nothing(tmp_path):
    assert not _codes(lint_tree(tmp_path, {"train.py": UNSEEDED_INIT.replace("CALL_SEED", "")}), "DDP808")


def test_the_seed_given_seeds_every_ranks_workers_alike(tmp_path):
    found = _codes(lint_tree(tmp_path, {"train.py": UNSEEDED_INIT.replace("CALL_SEED", ", seed=7")}), "DDP808")
    assert found


# ---------------------------------------------------- one value drawn for an item, not items picked
# `next_view = random.choices(range(len(w)), weights=w, k=1)[0]` while building each item: each
# rank draws its own field values (an augmentation), the items and their order stay (no DDP803).
PICKS = """
    import random
    import torch
    import torch.distributed as dist
    from torch.nn.parallel import DistributedDataParallel as DDP
    from torch.utils.data import DataLoader, Dataset, DistributedSampler


    class Paths(Dataset):
        def __init__(self, paths):
            self.items = []
            for path in paths:
                w = [1.0 + i for i in range(len(path))]
                DRAW
                self.items.append((path, pick))

        def __len__(self):
            return len(self.items)

        def __getitem__(self, i):
            return torch.tensor([float(self.items[i][1])])


    def main():
        dist.init_process_group("gloo")
        random.seed(dist.get_rank())
        model = DDP(torch.nn.Linear(1, 1))
        data = Paths([[1, 2, 3]] * 64)
        sampler = DistributedSampler(data)
        loader = DataLoader(data, batch_size=8, sampler=sampler)
        for epoch in range(3):
            sampler.set_epoch(epoch)
            for x in loader:
                model(x).sum().backward()


    main()
"""


def test_one_weighted_pick_per_item_picks_no_items(tmp_path):
    code = PICKS.replace("DRAW", "pick = random.choices(list(range(len(w))), weights=w, k=1)[0]")
    assert not _codes(lint_tree(tmp_path, {"train.py": code}), "DDP803")


def test_a_weighted_pick_of_several_items_picks_them_apart_per_rank(tmp_path):
    code = PICKS.replace("DRAW", "pick = len(random.choices(paths, weights=[1.0] * len(paths), k=8))")
    assert _codes(lint_tree(tmp_path, {"train.py": code}), "DDP803")
