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
