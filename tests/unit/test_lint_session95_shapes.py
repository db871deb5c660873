"""Shapes from session 95 (holdout 134's leftovers and holdout 135's reading), each with its twin,
in our own words."""

from __future__ import annotations

from tests.unit.test_lint_session39_shapes import lint_tree
from tests.unit.test_lint_session61_shapes import _codes, _line

# ------------------------------------------------- the launcher seeds, then mp.spawn or a direct call
# The launcher seeds torch in `__main__`; the ranks are started by mp.spawn through a name bound to
# the worker under a test (`if args.exp == "e2e": runner = worker`), or the worker is called
# directly with a constant process index (`runner(rank=0, ...)`): one process. The spawned ranks
# start from their own generators, so no rank seeds alike (no DDP808). Twin: the direct call hands
# the rank a launcher gives (torchrun's LOCAL_RANK), so the process that seeded is a rank.
LAUNCHER = {
    "train.py": """
        import argparse
        import os
        import random
        import torch
        import torch.distributed as dist
        import torch.multiprocessing as mp
        from torch.utils.data import DataLoader, Dataset, DistributedSampler


        class Crops(Dataset):
            def __len__(self):
                return 64

            def __getitem__(self, i):
                x = torch.zeros(8)
                if random.random() < 0.5:
                    x = x.flip(0)
                return x


        def worker(rank, args):
            dist.init_process_group("gloo", init_method="file:///tmp/rdzv", rank=rank, world_size=args.n_gpus)
            dataset = Crops()
            sampler = DistributedSampler(dataset)
            loader = DataLoader(dataset, sampler=sampler, num_workers=4)
            model = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(8, 1))
            for epoch in range(3):
                sampler.set_epoch(epoch)
                for x in loader:
                    model(x).sum().backward()


        if __name__ == "__main__":
            parser = argparse.ArgumentParser()
            parser.add_argument("--n_gpus", type=int, default=1)
            parser.add_argument("--exp", default="e2e")
            parser.add_argument("--eval", action="store_true")
            parser.add_argument("--seed", type=int, default=0)
            args = parser.parse_args()
            torch.manual_seed(args.seed)
            if args.exp == "e2e":
                runner = worker
            else:
                raise SystemExit("unknown experiment")
            if args.n_gpus == 1 or args.eval:
                runner(rank=0, args=args)
            else:
                mp.spawn(runner, args=(args,), nprocs=args.n_gpus)
    """,
}


def test_launcher_seeding_before_a_spawn_through_a_bound_name(tmp_path):
    assert not _codes(lint_tree(tmp_path, LAUNCHER), "DDP808")


def test_launcher_seeding_on_a_direct_path_the_ranks_take(tmp_path):
    body = LAUNCHER["train.py"].replace("runner(rank=0, args=args)", 'runner(rank=int(os.environ["LOCAL_RANK"]), args=args)')
    hits = _codes(lint_tree(tmp_path, {"train.py": body}), "DDP808")
    assert len(hits) == 1 and hits[0].location.line == _line(body, "loader = DataLoader(")


# ------------------------------------------------- a singleton accessor's namedtuple field as the test
# `Env.get().master`, where the singleton is a `collections.namedtuple` record built with
# `dist.get_rank() == 0` (or True where no group is set up): the save under it is rank 0's (no
# DDP806). Twin: the field is built from an option every rank shares, so every rank saves.
SINGLETON = {
    "pkg/__init__.py": "",
    "pkg/env.py": """
        import collections
        import torch.distributed as dist


        class Env:
            _instance = None

            @staticmethod
            def get():
                if Env._instance is None:
                    Env()
                return Env._instance

            def __init__(self):
                Record = collections.namedtuple("Record", ["world_size", "master", "writer"])
                if dist.is_initialized():
                    Env._instance = Record(dist.get_world_size(), dist.get_rank() == 0, None)
                else:
                    Env._instance = Record(1, True, None)
    """,
    "train.py": """
        import torch
        import torch.distributed as dist
        from torch.nn.parallel import DistributedDataParallel as DDP
        from pkg import env


        def main():
            dist.init_process_group("gloo")
            model = DDP(torch.nn.Linear(4, 1))
            opt = torch.optim.SGD(model.parameters(), lr=0.1)
            for step in range(10):
                opt.zero_grad()
                model(torch.randn(8, 4)).sum().backward()
                opt.step()
            if env.Env.get().master:
                torch.save(model.module.state_dict(), "last.pt")


        if __name__ == "__main__":
            main()
    """,
}


def test_singleton_namedtuple_field_built_from_the_rank(tmp_path):
    assert not _codes(lint_tree(tmp_path, SINGLETON), "DDP806")


def test_singleton_namedtuple_field_built_from_a_shared_option(tmp_path):
    files = dict(SINGLETON, **{"pkg/env.py": SINGLETON["pkg/env.py"].replace("dist.get_rank() == 0, None", "True, None")})
    hits = _codes(lint_tree(tmp_path, files), "DDP806")
    assert len(hits) == 1 and hits[0].location.line == _line(files["train.py"], "torch.save(")


# ------------------------------------------------- a config section spread into the DataLoader
# `DataLoader(ds, sampler=s, **self.loader_config["train"])`, the object keeping the
# `cfg["loader"]` its builder is handed, and the YAML config beside the script giving
# `loader: train: num_workers: 4`: the loader has workers (no generator, no worker_init_fn: a
# YAML file holds neither), and every rank seeds torch alike, so DDP808. Twin: `num_workers: 0`.
SPREAD = {
    "config.yaml": """
        seed: 7
        loader:
          train:
            batch_size: 8
            num_workers: 4
            drop_last: true
    """,
    "pkg/__init__.py": "",
    "pkg/data.py": """
        import random
        import torch
        from torch.utils.data import DataLoader, Dataset, DistributedSampler


        class Crops(Dataset):
            def __len__(self):
                return 64

            def __getitem__(self, i):
                x = torch.zeros(8)
                if random.random() < 0.5:
                    x = x.flip(0)
                return x


        class Loaders:
            def __init__(self, loader_config):
                self.loader_config = loader_config

            def train_loader(self):
                dataset = Crops()
                sampler = DistributedSampler(dataset)
                return DataLoader(dataset, sampler=sampler, **self.loader_config["train"]), sampler
    """,
    "train.py": """
        import torch
        import torch.distributed as dist
        import yaml
        from torch.nn.parallel import DistributedDataParallel as DDP
        from pkg.data import Loaders


        def run(cfg):
            dist.init_process_group("gloo")
            torch.manual_seed(cfg["seed"])
            loader, sampler = Loaders(cfg["loader"]).train_loader()
            model = DDP(torch.nn.Linear(8, 1))
            for epoch in range(3):
                sampler.set_epoch(epoch)
                for x in loader:
                    model(x).sum().backward()


        if __name__ == "__main__":
            with open("config.yaml") as f:
                run(yaml.safe_load(f))
    """,
}


def test_config_section_spread_gives_the_loader_workers(tmp_path):
    hits = _codes(lint_tree(tmp_path, SPREAD), "DDP808")
    assert len(hits) == 1 and hits[0].location.file.endswith("pkg/data.py")
    assert hits[0].location.line == _line(SPREAD["pkg/data.py"], "return DataLoader(")


def test_config_section_spread_without_workers(tmp_path):
    files = dict(SPREAD, **{"config.yaml": SPREAD["config.yaml"].replace("num_workers: 4", "num_workers: 0")})
    assert not _codes(lint_tree(tmp_path, files), "DDP808")


# ------------------------------------------------- past a plain rank test's `continue`: one finding
# `if dist.get_rank() > 0: continue`, then rank 0's evaluation forward of a buffered DDP model
# under no_grad: DDP801 (a warning) at that forward, the `continue` its guard - not also a DDP809
# error at the test. Twin: past the `continue`, rank 0 alone trains (a backward every rank must
# join): one DDP801 error at that backward, still not a second finding at the test.
SKIP = """
    import torch
    import torch.distributed as dist
    from torch.nn.parallel import DistributedDataParallel as DDP


    class Net(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = torch.nn.Linear(4, 1)
            self.register_buffer("scale", torch.ones(1))

        def forward(self, x):
            return self.lin(x) * self.scale


    def val(model):
        with torch.no_grad():
            model(torch.randn(2, 4))


    def main():
        dist.init_process_group("gloo")
        model = DDP(Net())
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        for step in range(100):
            opt.zero_grad()
            model(torch.randn(8, 4)).sum().backward()
            opt.step()
            if dist.get_rank() > 0:
                continue
            print(step)
            if step % 10 == 0:
                val(model)


    if __name__ == "__main__":
        main()
"""


def test_rank_zero_evaluation_past_a_plain_continue_is_one_ddp801(tmp_path):
    found = lint_tree(tmp_path, {"train.py": SKIP})
    assert not _codes(found, "DDP809")
    hits = _codes(found, "DDP801")
    assert len(hits) == 1 and hits[0].severity.value == "warning"


def test_rank_zero_training_past_a_plain_continue_is_one_ddp801_error(tmp_path):
    body = SKIP.replace("                val(model)", "                model(torch.randn(8, 4)).sum().backward()  # rank 0's")
    found = lint_tree(tmp_path, {"train.py": body})
    assert not _codes(found, "DDP809")
    hits = _codes(found, "DDP801")
    assert len(hits) == 1 and hits[0].severity.value == "error"
    assert hits[0].location.line == _line(body, "# rank 0's")


# ------------------------------------------------- a module loaded by the config key a loader reads
# `module = cfg.network_module; imp.load_source(module, path).Network()` (the neuralbody family):
# the module the YAML config names at that key is read, and so are its own imports - the part
# holding a buffer. Rank 0's evaluation forward under no_grad through the DDP model is then a
# DDP801 warning. Twin: the part holds no buffer, the forward broadcasts nothing.
LOADED = {
    "config.yaml": """
        network_module: lib.networks.body
        network_path: lib/networks/body.py
        renderer_module: lib.renderers.plain
        renderer_path: lib/renderers/plain.py
    """,
    "lib/__init__.py": "",
    "lib/networks/__init__.py": "",
    "lib/renderers/__init__.py": "",
    "lib/loader.py": """
        import imp


        def make_network(cfg):
            module = cfg.network_module
            path = cfg.network_path
            return imp.load_source(module, path).Network()


        def make_renderer(cfg, network):
            module = cfg.renderer_module
            path = cfg.renderer_path
            return imp.load_source(module, path).Renderer(network)
    """,
    "lib/networks/parts.py": """
        import torch


        class Light(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.register_buffer("xyz", torch.zeros(16, 3))

            def forward(self, x):
                return x + self.xyz.sum()
    """,
    "lib/networks/body.py": """
        import torch
        from lib.networks.parts import Light


        class Network(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.lin = torch.nn.Linear(4, 1)
                self.light = Light()

            def forward(self, x):
                return self.light(self.lin(x))
    """,
    "lib/renderers/plain.py": """
        import torch


        class Renderer(torch.nn.Module):
            def __init__(self, net):
                super().__init__()
                self.net = net

            def forward(self, x):
                return self.net(x)
    """,
    "train.py": """
        import types
        import torch
        import torch.distributed as dist
        import yaml
        from torch.nn.parallel import DistributedDataParallel as DDP
        from lib.loader import make_network, make_renderer


        def evaluate(renderer):
            with torch.no_grad():
                return renderer(torch.randn(2, 4))  # rank 0's


        def main(cfg):
            dist.init_process_group("gloo")
            renderer = DDP(make_renderer(cfg, make_network(cfg)))
            opt = torch.optim.SGD(renderer.parameters(), lr=0.1)
            for step in range(100):
                opt.zero_grad()
                renderer(torch.randn(8, 4)).sum().backward()
                opt.step()
                if dist.get_rank() == 0 and step % 10 == 0:
                    evaluate(renderer)


        if __name__ == "__main__":
            with open("config.yaml") as f:
                main(types.SimpleNamespace(**yaml.safe_load(f)))
    """,
}


def test_module_loaded_by_a_config_key_has_its_imports_read(tmp_path):
    hits = _codes(lint_tree(tmp_path, LOADED), "DDP801")
    assert len(hits) == 1 and hits[0].severity.value == "warning"
    assert hits[0].location.line == _line(LOADED["train.py"], "# rank 0's")


def test_module_loaded_by_a_config_key_whose_parts_hold_no_buffer(tmp_path):
    files = dict(LOADED, **{"lib/networks/parts.py": LOADED["lib/networks/parts.py"].replace(
        'self.register_buffer("xyz", torch.zeros(16, 3))', "self.scale = 2.0").replace("self.xyz.sum()", "self.scale")})
    assert not _codes(lint_tree(tmp_path, files), "DDP801")


# ------------------------------------------------- a base trainer's train() only the one-process run keeps
# `trainer = TrainerDDP(...)` where the group is set up (`if n_gpus > 1:`), `Trainer(...)` on the
# other side, and TrainerDDP overrides train() with a rank-0 save: the base's unguarded
# `self.save_checkpoint()` runs in the one-process job only (no DDP806). Twin: TrainerDDP keeps
# the base's train(), so every rank of the distributed run saves.
TRAINERS = {
    "trainers.py": """
        import torch
        import torch.distributed as dist


        class Trainer:
            def __init__(self, model, epochs=3):
                self.model = model
                self.epochs = epochs
                self.opt = torch.optim.SGD(model.parameters(), lr=0.1)

            def step(self):
                self.opt.zero_grad()
                self.model(torch.randn(8, 4)).sum().backward()
                self.opt.step()

            def save_checkpoint(self, epoch):
                torch.save(self.model.state_dict(), f"ckpt-{epoch}.pt")

            def train(self):
                for epoch in range(self.epochs):
                    self.step()
                    self.save_checkpoint(epoch)


        class TrainerDDP(Trainer):
            def setup(self):
                self.model = torch.nn.parallel.DistributedDataParallel(self.model)

            def train(self):
                self.setup()
                for epoch in range(self.epochs):
                    self.step()
                    if dist.get_rank() == 0:
                        self.save_checkpoint(epoch)
    """,
    "train.py": """
        import torch
        import torch.distributed as dist
        import torch.multiprocessing as mp
        from trainers import Trainer, TrainerDDP


        def train_func(rank, n_gpus):
            if n_gpus > 1:
                dist.init_process_group("gloo", rank=rank, world_size=n_gpus)
            model = torch.nn.Linear(4, 1)
            if n_gpus > 1:
                trainer = TrainerDDP(model)
            else:
                trainer = Trainer(model)
            trainer.train()


        if __name__ == "__main__":
            mp.spawn(train_func, args=(2,), nprocs=2)
    """,
}


def test_base_train_only_the_one_process_run_keeps(tmp_path):
    assert not _codes(lint_tree(tmp_path, TRAINERS), "DDP806")


def test_base_train_the_distributed_trainer_keeps(tmp_path):
    body = TRAINERS["trainers.py"]
    body = body[:body.index("            def train(self):\n                self.setup()")] + """            def step(self):
                self.setup()
                super().step()
    """
    hits = _codes(lint_tree(tmp_path, dict(TRAINERS, **{"trainers.py": body})), "DDP806")
    assert len(hits) == 1 and hits[0].location.line == _line(body, "torch.save(")


# ------------------------------------------------- a sampler method that returns None first
# `self._get_sampler(ds, is_distributed=is_distributed)` of `def _get_sampler(...): if not
# is_distributed: return None; return DistributedSampler(...)`, and the script calls
# `train_dataloader()` leaving `is_distributed=False`: the loader has no sampler (DDP802).
# Twin: the script hands `is_distributed=True`.
MODULE = {
    "datamodule.py": """
        import torch
        from torch.utils.data import DataLoader, DistributedSampler, TensorDataset


        class DataModule:
            def __init__(self):
                self.train_set = TensorDataset(torch.randn(64, 4))

            def _get_sampler(self, dataset, shuffle, is_distributed, num_tasks, global_rank):
                if not is_distributed:
                    return None
                return DistributedSampler(dataset, num_replicas=num_tasks, rank=global_rank, shuffle=shuffle)

            def train_dataloader(self, is_distributed=False, num_tasks=0, global_rank=0):
                sampler = self._get_sampler(self.train_set, True, is_distributed, num_tasks, global_rank)
                return DataLoader(self.train_set, batch_size=8, sampler=sampler, shuffle=sampler is None)
    """,
    "train.py": """
        import torch
        import torch.distributed as dist
        from torch.nn.parallel import DistributedDataParallel as DDP
        from datamodule import DataModule


        def main():
            dist.init_process_group("gloo")
            loader = DataModule().train_dataloader()
            model = DDP(torch.nn.Linear(4, 1))
            opt = torch.optim.SGD(model.parameters(), lr=0.1)
            for epoch in range(3):
                for (x,) in loader:
                    opt.zero_grad()
                    model(x).sum().backward()
                    opt.step()


        if __name__ == "__main__":
            main()
    """,
}


def test_sampler_method_returning_none_for_the_flag_left_off(tmp_path):
    hits = _codes(lint_tree(tmp_path, MODULE), "DDP802")
    assert len(hits) == 1 and hits[0].severity.value == "error"
    assert hits[0].location.line == _line(MODULE["datamodule.py"], "return DataLoader(")


def test_sampler_method_with_the_flag_handed_on(tmp_path):
    files = dict(MODULE, **{"train.py": MODULE["train.py"].replace(
        "train_dataloader()", "train_dataloader(True, dist.get_world_size(), dist.get_rank())")})
    assert not _codes(lint_tree(tmp_path, files), "DDP802")


# ------------------------------------------------- a minGPT-style config object's field
# `class TrainerConfig: num_workers = 0; def __init__(self, **kwargs): for k, v in kwargs.items():
# setattr(self, k, v)`, built `TrainerConfig(max_epochs=2, num_workers=workers)` with `workers =
# 0` above: the loader's `num_workers=config.num_workers` is 0, no workers to seed alike (no
# DDP808). Twin: the construction hands 4.
CONFIGURED = """
    import random
    import torch
    import torch.distributed as dist
    from torch.utils.data import DataLoader, Dataset, DistributedSampler

    workers = 0


    class Crops(Dataset):
        def __len__(self):
            return 64

        def __getitem__(self, i):
            x = torch.zeros(8)
            if random.random() < 0.5:
                x = x.flip(0)
            return x


    class TrainerConfig:
        max_epochs = 10
        num_workers = 0

        def __init__(self, **kwargs):
            for k, v in kwargs.items():
                setattr(self, k, v)


    class Trainer:
        def __init__(self, model, config):
            self.model = model
            self.config = config

        def train(self):
            model, config = self.model, self.config
            data = Crops()
            sampler = DistributedSampler(data)
            loader = DataLoader(data, sampler=sampler, batch_size=8, num_workers=config.num_workers)
            for epoch in range(config.max_epochs):
                sampler.set_epoch(epoch)
                for x in loader:
                    model(x).sum().backward()


    if __name__ == "__main__":
        dist.init_process_group("gloo")
        torch.manual_seed(42)
        model = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(8, 1))
        Trainer(model, TrainerConfig(max_epochs=2, num_workers=workers)).train()
"""


def test_config_object_field_set_from_its_keywords_no_workers(tmp_path):
    assert not _codes(lint_tree(tmp_path, {"train.py": CONFIGURED}), "DDP808")


def test_config_object_field_set_from_its_keywords_with_workers(tmp_path):
    body = CONFIGURED.replace("    workers = 0", "    workers = 4")
    hits = _codes(lint_tree(tmp_path, {"train.py": body}), "DDP808")
    assert len(hits) == 1 and hits[0].location.line == _line(body, "loader = DataLoader(")


# ------------------------------------------------- options every launch written beside the script leaves
# run.sh launches `train.py` without --workers (default 0) and without --early_stop (default -1):
# the loader has no workers (no DDP808), and rank 0's early-stop flag, set only under `if
# args.early_stop > 1:`, never changes (no DDP809). Twin: the launch gives `--workers 4
# --early_stop 3`: both are found.
LAUNCHED = {
    "run.sh": """
        torchrun --nproc_per_node=4 train.py --epochs 20
    """,
    "train.py": """
        import argparse
        import random
        import torch
        import torch.distributed as dist
        from torch.nn.parallel import DistributedDataParallel as DDP
        from torch.utils.data import DataLoader, Dataset, DistributedSampler


        class Crops(Dataset):
            def __len__(self):
                return 64

            def __getitem__(self, i):
                x = torch.zeros(8)
                if random.random() < 0.5:
                    x = x.flip(0)
                return x


        def main():
            parser = argparse.ArgumentParser()
            parser.add_argument("--epochs", type=int, default=10)
            parser.add_argument("--workers", type=int, default=0)
            parser.add_argument("--early_stop", type=int, default=-1)
            args = parser.parse_args()
            dist.init_process_group("gloo")
            torch.manual_seed(7)
            data = Crops()
            sampler = DistributedSampler(data)
            loader = DataLoader(data, sampler=sampler, batch_size=8, num_workers=args.workers)
            model = DDP(torch.nn.Linear(8, 1))
            stop, history = False, []
            for epoch in range(args.epochs):
                sampler.set_epoch(epoch)
                for x in loader:
                    model(x).sum().backward()
                if dist.get_rank() == 0:
                    history.append(random.random())
                    if args.early_stop > 1 and len(history) > args.early_stop:
                        stop = True
                if stop:  # the decision
                    break


        if __name__ == "__main__":
            main()
    """,
}


def test_options_every_launch_leaves_at_their_defaults(tmp_path):
    found = lint_tree(tmp_path, LAUNCHED)
    assert not _codes(found, "DDP808") and not _codes(found, "DDP809")


def test_options_the_launch_gives(tmp_path):
    files = dict(LAUNCHED, **{"run.sh": LAUNCHED["run.sh"].replace("--epochs 20", "--epochs 20 --workers 4 --early_stop 3")})
    found = lint_tree(tmp_path, files)
    assert [f.location.line for f in _codes(found, "DDP808")] == [_line(LAUNCHED["train.py"], "loader = DataLoader(")]
    assert [f.location.line for f in _codes(found, "DDP809")] == [_line(LAUNCHED["train.py"], "# the decision")]


# ------------------------------------------------- a loader over offsets into a rank's own share
# Transformer-XL's ordered iterator: the constructor keeps `data = parts[rank]`, and the loader
# iterates offsets with `collate_fn=self.get_batch` reading that share: no DDP802. Twin: the
# constructor keeps the whole stream (every rank the same batches).
STREAM = {
    "data_utils.py": """
        import torch
        import torch.distributed as dist
        from torch.utils.data import DataLoader


        class OrderedIterator:
            def __init__(self, data, tgt_len):
                world_size = dist.get_world_size()
                rank = dist.get_rank()
                step = len(data) // world_size
                parts = [data[i:i + step] for i in range(0, len(data), step)]
                data = parts[rank]
                data = [data[i:i + 64] for i in range(0, len(data), 64)]
                self.txt = data
                self.data = torch.cat([torch.as_tensor(self.txt[j]) for j in range(len(self.txt))])
                self.data_len = self.data.size(0)
                self.tgt_len = tgt_len

            def get_batch(self, i):
                i = i[0]
                chunk = self.data[i:i + self.tgt_len + 1]
                return chunk[:-1], chunk[1:]

            def get_fixlen_iter(self):
                offsets = [i for i in range(0, self.data_len - 1, self.tgt_len)]
                return DataLoader(offsets, batch_size=1, shuffle=False, collate_fn=self.get_batch)
    """,
    "train.py": """
        import torch
        import torch.distributed as dist
        from torch.nn.parallel import DistributedDataParallel as DDP
        from data_utils import OrderedIterator


        def main():
            dist.init_process_group("gloo")
            model = DDP(torch.nn.Linear(8, 1))
            tr_iter = OrderedIterator(torch.randn(4096), tgt_len=8)
            for epoch in range(2):
                for x, y in tr_iter.get_fixlen_iter():
                    model(x.unsqueeze(0)).sum().backward()


        if __name__ == "__main__":
            main()
    """,
}


def test_loader_over_offsets_into_a_ranks_share(tmp_path):
    assert not _codes(lint_tree(tmp_path, STREAM), "DDP802")


def test_loader_over_offsets_into_the_whole_stream(tmp_path):
    body = STREAM["data_utils.py"].replace("                data = parts[rank]\n", "")
    hits = _codes(lint_tree(tmp_path, dict(STREAM, **{"data_utils.py": body})), "DDP802")
    assert len(hits) == 1 and hits[0].location.line == _line(body, "return DataLoader(")


# ------------------------------------------------- a namedtuple type bound at the module's top
# `Env = collections.namedtuple("Env", "world master")` under the imports, built in `main()` as
# `Env(world, dist.get_rank() == 0)`: `env.master` is a rank test (no DDP806). Twin: built
# `Env(world, True)`, every rank saves.
MODULE_RECORD = """
    import collections
    import torch
    import torch.distributed as dist
    from torch.nn.parallel import DistributedDataParallel as DDP

    Env = collections.namedtuple("Env", "world master")


    def main():
        dist.init_process_group("gloo")
        env = Env(dist.get_world_size(), dist.get_rank() == 0)
        model = DDP(torch.nn.Linear(4, 1))
        for step in range(10):
            model(torch.randn(8, 4)).sum().backward()
        if env.master:
            torch.save(model.module.state_dict(), "last.pt")


    if __name__ == "__main__":
        main()
"""


def test_module_level_namedtuple_field_built_from_the_rank(tmp_path):
    assert not _codes(lint_tree(tmp_path, {"train.py": MODULE_RECORD}), "DDP806")


def test_module_level_namedtuple_field_built_alike(tmp_path):
    body = MODULE_RECORD.replace("dist.get_rank() == 0)", "True)")
    hits = _codes(lint_tree(tmp_path, {"train.py": body}), "DDP806")
    assert len(hits) == 1 and hits[0].location.line == _line(body, "torch.save(")
