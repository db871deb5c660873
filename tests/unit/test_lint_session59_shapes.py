"""Shapes from session 59, each with its twin, in our own words."""

from __future__ import annotations

from tests.unit.test_lint_session39_shapes import lint_tree

# -------------------------------------------------- a launcher choice whose other side shards
# `if launcher == "slurm":` builds the loader with a library builder told `dist=True`; the
# `else:` builds a plain shuffled loader, and the process group is set up for any launcher but
# None: the plain loader meets a process group only with `--launcher pytorch`, a choice the
# source leaves open - a warning naming the choice, not an error
LAUNCHER = """
import argparse
import torch
import torch.distributed as dist
from torch.utils.data import DataLoader, TensorDataset
from builders import build_dataloader


def load(launcher, data_dir="data/mnist"):
    ds = TensorDataset(torch.randn(64, 4), torch.randn(64, 1))
    if {TEST}:
        return build_dataloader(ds, 8, 2, dist=True)
    else:
        return DataLoader(ds, batch_size=8, shuffle=True)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--launcher", default=None, choices=["none", "slurm", "pytorch"])
    args = parser.parse_args()
    if args.launcher is not None:
        dist.init_process_group("gloo")
    model = torch.nn.Linear(4, 1)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    loader = load(args.launcher)
    for x, y in loader:
        loss = (model(x) - y).pow(2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()


main()
"""

BUILDERS = """
def build_dataloader(ds, batch, workers, dist=False):
    raise NotImplementedError
"""


def _loaders(tmp_path, test: str) -> list:
    found = lint_tree(tmp_path, {"train.py": LAUNCHER.replace("{TEST}", test), "builders.py": BUILDERS})
    return [f for f in found if f.code == "DDP802"]


def test_plain_loader_beside_a_sharding_side_is_a_warning_naming_the_choice(tmp_path):
    found = _loaders(tmp_path, 'launcher == "slurm"')
    assert len(found) == 1
    assert found[0].severity.value == "warning"
    assert "launcher == 'slurm'" in found[0].message and "shards" in found[0].message


def test_without_a_sharding_side_the_plain_loader_is_an_error(tmp_path):
    # twin: both sides build plain loaders (the builder is not told to shard): nothing in the
    # source is written for the process group, so the training loader is proven unsharded
    found = lint_tree(tmp_path, {"train.py": LAUNCHER.replace("{TEST}", 'launcher == "slurm"')
                                 .replace("dist=True", "dist=False"), "builders.py": BUILDERS})
    found = [f for f in found if f.code == "DDP802"]
    assert found and all(f.severity.value == "error" for f in found)


def test_a_data_choice_beside_a_sharding_side_stays_an_error(tmp_path):
    # twin: the test picks the data, not the launch: every launch is the distributed one, and
    # the plain side is an oversight the source proves (a shipped MNIST config takes it)
    found = _loaders(tmp_path, '"mnist" in data_dir')
    assert len(found) == 1 and found[0].severity.value == "error"


# -------------------------------------------------- Fabric's save, load and setup are collectives
# Lightning documents `Fabric.save` / `Fabric.load` as "must be called on all processes": each
# ends in the Fabric's barrier; `setup_module` wraps the model in the strategy's DDP, whose
# constructor broadcasts the parameters. Under `if fabric.global_rank != 0: return`, rank 0
# alone enters them.
FABRIC = """
import torch
from lightning.fabric import Fabric


def checkpoint(fabric, model, path):
    if fabric.global_rank != 0:
        {OTHERS}
    {CALL}


def main():
    fabric = Fabric(accelerator="cpu", devices=2, strategy="ddp")
    fabric.launch()
    model = fabric.setup_module(torch.nn.Linear(4, 1))
    checkpoint(fabric, model, "ckpt.pt")


main()
"""


def _fabric(tmp_path, others: str, call: str) -> list:
    found = lint_tree(tmp_path, {"train.py": FABRIC.replace("{OTHERS}", others).replace("{CALL}", call)})
    return [f for f in found if f.code == "DDP801"]


def test_fabric_save_reached_by_rank_zero_alone_is_a_ddp801(tmp_path):
    found = _fabric(tmp_path, "return", 'fabric.save(path, {"model": model})')
    assert len(found) == 1 and found[0].severity.value == "error"
    assert "fabric.save()" in found[0].message and "barrier" in found[0].message


def test_fabric_setup_module_on_rank_zero_alone_is_a_ddp801(tmp_path):
    found = _fabric(tmp_path, "return", "copy = fabric.setup_module(torch.nn.Linear(4, 1))")
    assert len(found) == 1 and "setup_module" in found[0].message


def test_fabric_save_on_every_rank_is_quiet(tmp_path):
    # twin: the other ranks do not leave; every process calls save (Fabric writes on rank 0 itself)
    assert _fabric(tmp_path, "pass", 'fabric.save(path, {"model": model})') == []
    assert _fabric(tmp_path / "setup", "pass", "copy = fabric.setup_module(torch.nn.Linear(4, 1))") == []


# -------------------------------------------------- `x is None` decided by which side bound it
# `labels` is a slice of the batch where gradients are wanted and None otherwise: `if labels is
# None:` asks which side ran (a parameter every rank shares), not what the batch held.
NONE_TEST = """
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler


def extract(model, loader, compute_gradients):
    for batch in loader:
        ids = batch[0]
        {BIND}
        if labels is None:
            with torch.no_grad():
                model(ids)
            continue
        loss = (model(ids) - labels).pow(2).mean()
        loss.backward()


def main():
    dist.init_process_group("gloo")
    ds = TensorDataset(torch.randn(64, 4), torch.randn(64, 1))
    loader = DataLoader(ds, batch_size=8, sampler=DistributedSampler(ds))
    model = DDP(torch.nn.Linear(4, 1))
    extract(model, loader, compute_gradients=True)


main()
"""

BY_PARAMETER = """if compute_gradients:
            labels = batch[1][:, :1]
        else:
            labels = None"""

BY_BATCH = """if batch[1].sum() > 0:
            labels = batch[1][:, :1]
        else:
            labels = None"""


def _none_tests(tmp_path, bind: str) -> list:
    found = lint_tree(tmp_path, {"train.py": NONE_TEST.replace("{BIND}", bind)})
    return [f for f in found if f.code == "DDP809"]


def test_none_test_of_a_name_bound_by_a_shared_parameter_is_quiet(tmp_path):
    assert _none_tests(tmp_path, BY_PARAMETER) == []


def test_none_test_of_a_name_bound_by_the_batch_is_reported(tmp_path):
    # twin: which side binds None is each rank's own batch's: the ranks part ways at the backward
    assert _none_tests(tmp_path, BY_BATCH)


# -------------------------------------------------- an instance called at once: `Data(...)()`
# The dataset wrapper builds its loaders in __call__; the script calls the new instance at once
# and trains on the loader it returns.
CALLED = """
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler


class Tumours:
    def __init__(self, batch_size):
        self.batch_size = batch_size

    def __call__(self):
        ds = TensorDataset(torch.randn(64, 4), torch.randn(64, 1))
        return DataLoader(ds, batch_size=self.batch_size, {SAMPLING}), len(ds)


def main():
    dist.init_process_group("gloo")
    model = DDP(torch.nn.Linear(4, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    loader, n = Tumours(batch_size=8)()
    for x, y in loader:
        opt.zero_grad()
        (model(x) - y).pow(2).mean().backward()
        opt.step()


main()
"""


def test_loader_built_by_an_instance_called_at_once_is_judged(tmp_path):
    found = lint_tree(tmp_path, {"train.py": CALLED.replace("{SAMPLING}", "shuffle=True")})
    assert [f.location.line for f in found if f.code == "DDP802"] == [14]


def test_loader_built_by_an_instance_called_at_once_with_a_sampler_is_quiet(tmp_path):
    # twin: __call__ gives the loader its DistributedSampler
    found = lint_tree(tmp_path, {"train.py": CALLED.replace("{SAMPLING}", "sampler=DistributedSampler(ds)")})
    assert [f for f in found if f.code == "DDP802"] == []


# -------------------------------------------------- a seed handed in by a config spread into main
# `main(**OmegaConf.load(args.config))` with `seed: 42` in the config the run names: every rank
# seeds torch alike, so a loader without seeding of its own gives worker k of every rank the same
# augmentation (the third way of DDP808).
SPREAD = """
import argparse
import torch
import torch.distributed as dist
from omegaconf import OmegaConf
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, Dataset
from torch.utils.data.distributed import DistributedSampler


class Crops(Dataset):
    def __len__(self):
        return 64

    def __getitem__(self, i):
        return torch.rand(4), torch.randn(1)


def main(output_dir: str, seed=None, num_workers: int = 4):
    dist.init_process_group("gloo")
    if seed is not None:
        torch.manual_seed(seed)
    ds = Crops()
    loader = DataLoader(ds, batch_size=8, sampler=DistributedSampler(ds), num_workers=num_workers)
    model = DDP(torch.nn.Linear(4, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for x, y in loader:
        opt.zero_grad()
        (model(x) - y).pow(2).mean().backward()
        opt.step()


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--config", type=str, default="configs/train.yaml")
    args = parser.parse_args()
    main(**OmegaConf.load(args.config))
"""


def _spread_seeds(tmp_path, config: str) -> list:
    found = lint_tree(tmp_path, {"train.py": SPREAD, "configs/train.yaml": config})
    return [f for f in found if f.code == "DDP808"]


def test_seed_from_the_named_config_spread_into_main_seeds_every_rank_alike(tmp_path):
    found = _spread_seeds(tmp_path, "output_dir: out\nseed: 42\nnum_workers: 4\n")
    assert len(found) == 1 and "torch.manual_seed(seed)" in found[0].message


def test_config_without_a_seed_leaves_the_seeding_unjudged(tmp_path):
    # twin: the config gives no seed: the parameter stays None, the seeding never runs
    assert _spread_seeds(tmp_path, "output_dir: out\nnum_workers: 4\n") == []


# -------------------------------------------------- a model built by a name put together: eval(...)
# `eval(arch + "_sparse_" + dataset)(...)` builds one of the model factories the script imports
# whose names hold "_sparse_"; where (most of) those build BatchNorm networks, the DDP model has
# buffers, and rank 0's evaluation forward broadcasts them alone.
EVAL_MODELS = """
import torch.nn as nn


def resnet_20_sparse_cifar10():
    return nn.Sequential(nn.Conv2d(3, 8, 3), {LAYER}, nn.Flatten(), nn.LazyLinear(10))


def resnet_56_sparse_cifar10():
    return nn.Sequential(nn.Conv2d(3, 8, 3), {LAYER}, nn.Flatten(), nn.LazyLinear(10))
"""

EVAL_TRAIN = """
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from models import resnet_20_sparse_cifar10, resnet_56_sparse_cifar10


class Trainer:
    def __init__(self, arch, dataset):
        dist.init_process_group("gloo")
        self.rank = dist.get_rank()
        self.student = DDP(eval(arch + "_sparse_" + dataset)())

    def train(self, batches):
        opt = torch.optim.SGD(self.student.parameters(), lr=0.1)
        for epoch in range(2):
            for x in batches:
                opt.zero_grad()
                self.student(x).sum().backward()
                opt.step()
            if self.rank == 0:
                with torch.no_grad():
                    self.student(batches[0])


Trainer("resnet_56", "cifar10").train([torch.randn(2, 3, 8, 8)])
"""


def _eval_forwards(tmp_path, layer: str) -> list:
    found = lint_tree(tmp_path, {"train.py": EVAL_TRAIN, "models.py": EVAL_MODELS.replace("{LAYER}", layer)})
    return [f for f in found if f.code == "DDP801"]


def test_rank_zero_forward_of_an_eval_named_batchnorm_model_is_reported(tmp_path):
    found = _eval_forwards(tmp_path, "nn.BatchNorm2d(8)")
    assert len(found) == 1 and found[0].severity.value == "warning"
    assert "self.student" in found[0].message


def test_rank_zero_forward_of_an_eval_named_model_without_buffers_is_quiet(tmp_path):
    # twin: the factories build no BatchNorm (nothing to broadcast): rank 0's forward is local
    assert _eval_forwards(tmp_path, "nn.ReLU()") == []


# -------------------------------------------------- Hydra's primary config sets the options
# `@hydra.main(config_path="conf", config_name="default")`: conf/default.yaml is what the run
# reads; its `evaluate: false` keeps the seeding under `if cfg.evaluate:` off on a training run.
HYDRA = """
import hydra
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, Dataset
from torch.utils.data.distributed import DistributedSampler


class Clips(Dataset):
    def __len__(self):
        return 64

    def __getitem__(self, i):
        return torch.rand(4), torch.randn(1)


def validate(model, cfg):
    if cfg.evaluate:
        torch.manual_seed(cfg.seed)


@hydra.main(config_path="conf", config_name="default")
def main(cfg):
    dist.init_process_group("gloo")
    ds = Clips()
    loader = DataLoader(ds, batch_size=8, sampler=DistributedSampler(ds), num_workers=cfg.workers)
    model = DDP(torch.nn.Linear(4, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for x, y in loader:
        opt.zero_grad()
        (model(x) - y).pow(2).mean().backward()
        opt.step()
    validate(model, cfg)


main()
"""


def _hydra_seeds(tmp_path, config: str) -> list:
    files = {"train.py": HYDRA}
    if config:
        files["conf/default.yaml"] = config
    return [f for f in lint_tree(tmp_path, files) if f.code == "DDP808"]


def test_hydra_primary_config_leaves_an_evaluation_seeding_off(tmp_path):
    assert _hydra_seeds(tmp_path, "evaluate: false\nseed: 7\nworkers: 4\n") == []


def test_without_the_hydra_config_the_seeding_is_judged_as_before(tmp_path):
    # twin: no config to read: `cfg.evaluate` is not known to be off, the seeding counts
    assert _hydra_seeds(tmp_path, "")


# -------------------------------------------------- a seed helper's parameter inside an expression
# `def set_random_seed(seed): torch.manual_seed(seed + 2)`: the parameter is what the callers hand
# it; here a number each process draws for itself, so the ranks are not seeded alike.
SEED_HELPER = """
import numpy as np
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, Dataset
from torch.utils.data.distributed import DistributedSampler


def set_random_seed(seed):
    np.random.seed(seed + 1)
    torch.manual_seed(seed + 2)


class Crops(Dataset):
    def __len__(self):
        return 64

    def __getitem__(self, i):
        return torch.rand(4), torch.randn(1)


def main(base_seed=7):
    dist.init_process_group("gloo")
    set_random_seed({SEED})
    ds = Crops()
    loader = DataLoader(ds, batch_size=8, sampler=DistributedSampler(ds), num_workers=4)
    model = DDP(torch.nn.Linear(4, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for x, y in loader:
        opt.zero_grad()
        (model(x) - y).pow(2).mean().backward()
        opt.step()


main()
"""


def _helper_seeds(tmp_path, seed: str) -> list:
    return [f for f in lint_tree(tmp_path, {"train.py": SEED_HELPER.replace("{SEED}", seed)}) if f.code == "DDP808"]


def test_seed_helper_handed_a_per_process_draw_does_not_seed_alike(tmp_path):
    assert _helper_seeds(tmp_path, "np.random.randint(0, 2 ** 31)") == []


def test_seed_helper_handed_a_shared_setting_seeds_alike(tmp_path):
    # twin: the helper is handed the same default on every rank: worker k of each rank draws alike
    assert _helper_seeds(tmp_path, "base_seed")


# -------------------------------------------------- leaving an evaluation loop after its forwards
# `@torch.no_grad() def evaluate(): for batch in loader: try: model(batch) except: errors += 1;
# if errors > 10: break`: the broadcast DDP makes in the first forward after training ran on
# every rank before any can break; the forwards the breaking rank skips meet no one.
EVAL_BREAK = """
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP


class Trainer:
    def __init__(self):
        dist.init_process_group("gloo")
        self.model = DDP(torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.BatchNorm1d(4)))

    def _forward(self, batch):
        return self.model(batch).sum()

    @torch.no_grad()
    def evaluate(self, loader):
        losses, errors = [], 0
        for batch in loader:
            {BODY}
        total = torch.tensor([sum(losses)])
        dist.all_reduce(total)
        return total


Trainer().evaluate([torch.randn(2, 4)] * 4)
"""

AFTER_FORWARD = """try:
                loss = self._forward(batch)
                if torch.isfinite(loss):
                    losses.append(loss.item())
                else:
                    errors += 1
            except Exception:
                errors += 1
                if errors > 10:
                    break"""

BEFORE_FORWARD = """if errors > 10:
                break
            loss = self._forward(batch)
            if torch.isfinite(loss):
                losses.append(loss.item())
            else:
                errors += 1"""


def _eval_breaks(tmp_path, body: str) -> list:
    found = lint_tree(tmp_path, {"train.py": EVAL_BREAK.replace("{BODY}", body)})
    return [f for f in found if f.code == "DDP809" and "errors > 10" in f.message]


def test_break_after_the_grad_off_forward_is_quiet(tmp_path):
    assert _eval_breaks(tmp_path, AFTER_FORWARD) == []


def test_break_before_any_forward_is_reported(tmp_path):
    # twin: the test comes first in each pass: a rank can leave before its first forward, whose
    # buffer broadcast the others then make alone
    assert _eval_breaks(tmp_path, BEFORE_FORWARD)


# -------------------------------------------------- a stream split among workers, never by rank
# A local IterableDataset whose __iter__ takes its share by `get_worker_info()` alone: the loader's
# workers of one process split the file, and every rank reads the same lines.
STREAM = """
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, IterableDataset, get_worker_info


class Lines(IterableDataset):
    def __init__(self, n):
        self.n = n

    def __iter__(self):
        info = get_worker_info()
        start, step = (info.id, info.num_workers) if info is not None else (0, 1)
        {SHARE}
        for i in range(start, self.n, step):
            yield torch.randn(4), torch.randn(1)


def main():
    dist.init_process_group("gloo")
    loader = DataLoader(Lines(64), batch_size=8, num_workers=2)
    model = DDP(torch.nn.Linear(4, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for x, y in loader:
        opt.zero_grad()
        (model(x) - y).pow(2).mean().backward()
        opt.step()


main()
"""


def _streams(tmp_path, share: str) -> list:
    return [f for f in lint_tree(tmp_path, {"train.py": STREAM.replace("{SHARE}", share)}) if f.code == "DDP802"]


def test_stream_split_by_worker_alone_is_a_ddp802(tmp_path):
    found = _streams(tmp_path, "pass")
    assert len(found) == 1 and found[0].severity.value == "error"
    assert "get_worker_info" in found[0].message and "never by rank" in found[0].message


def test_stream_split_by_rank_and_worker_is_quiet(tmp_path):
    # twin: the share counts the ranks too (rank * workers + worker of world * workers)
    share = ("start, step = dist.get_rank() * step + start, dist.get_world_size() * step")
    assert _streams(tmp_path, share) == []


# -------------------------------------------------- a list kept only where the value was finite
# `if torch.isfinite(loss): losses.append(loss.item())`, then `if len(losses) == 0: return` ahead
# of the all_reduce: how many a rank kept is what its own batches gave.
KEPT = """
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP


def evaluate(model, batches):
    losses = []
    with torch.no_grad():
        for x in batches:
            loss = model(x).sum()
            {KEEP}
    if len(losses) == 0:
        return None
    total = torch.tensor([sum(losses) / len(losses)])
    dist.all_reduce(total)
    return total


def main():
    dist.init_process_group("gloo")
    model = DDP(torch.nn.Linear(4, 1))
    evaluate(model, [torch.randn(2, 4)] * 3)


main()
"""


def _kept(tmp_path, keep: str) -> list:
    found = lint_tree(tmp_path, {"train.py": KEPT.replace("{KEEP}", keep)})
    return [f for f in found if f.code == "DDP809" and "len(losses)" in f.message]


def test_length_of_a_list_kept_under_a_value_test_decides_per_rank(tmp_path):
    found = _kept(tmp_path, "if torch.isfinite(loss):\n                losses.append(loss.item())")
    assert len(found) == 1 and "all_reduce" in found[0].message


def test_length_of_a_list_every_pass_appends_to_is_quiet(tmp_path):
    # twin: every pass keeps its loss: the ranks' counts are their batch counts, alike
    assert _kept(tmp_path, "losses.append(loss.item())") == []


# -------------------------------------------------- the job's rank made in two steps
# `base_rank = opt.rank * opt.ngpus_per_node; opt.rank = base_rank + gpu`: torch's ImageNet
# formula with the product kept in a name first. It names the node's index: mp.spawn's `gpu`
# is the rank within a node, and `if gpu == 0:` saves once per node.
TWO_STEP = """
import argparse
import torch
import torch.distributed as dist
import torch.multiprocessing as mp


def train(gpu, opt):
    {RANK}
    dist.init_process_group("gloo", init_method=opt.dist_url, world_size=opt.world_size, rank=opt.rank)
    model = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(4, 1))
    for epoch in range(3):
        model(torch.randn(2, 4)).sum().backward()
        if gpu == 0:
            torch.save(model.state_dict(), "%s/epoch_%d.pth" % (opt.out, epoch))


if __name__ == "__main__":
    p = argparse.ArgumentParser()
    p.add_argument("--rank", type=int, default=0)
    p.add_argument("--world_size", type=int, default=1)
    p.add_argument("--dist_url", default="tcp://127.0.0.1:29500")
    p.add_argument("--out", default="out")
    opt = p.parse_args()
    opt.ngpus_per_node = torch.cuda.device_count()
    opt.world_size = opt.ngpus_per_node * opt.world_size
    mp.spawn(train, nprocs=opt.ngpus_per_node, args=(opt,))
"""


def _per_node_saves(tmp_path, rank: str) -> list:
    return [f for f in lint_tree(tmp_path, {"train.py": TWO_STEP.replace("{RANK}", rank)}) if f.code == "DDP806"]


def test_rank_made_in_two_steps_names_the_node(tmp_path):
    found = _per_node_saves(tmp_path, "base_rank = opt.rank * opt.ngpus_per_node\n    opt.rank = base_rank + gpu")
    assert len(found) == 1 and "one rank per node" in found[0].message


def test_rank_that_is_the_spawn_index_alone_is_one_node(tmp_path):
    # twin: the job's rank is mp.spawn's index itself: nothing names a node, local rank 0 is rank 0
    assert _per_node_saves(tmp_path, "opt.rank = gpu") == []


# -------------------------------------------------- a sampler held in a dict of loader options
# `val_sampler = {"sampler": DistributedSampler(val_ds, shuffle=True)}` then `DataLoader(val_ds,
# **val_sampler)`: the dict's name says what the sampler serves; an evaluation's order changes
# no result, the training sampler's does.
HELD = """
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler


def main():
    dist.init_process_group("gloo")
    train_ds = TensorDataset(torch.randn(64, 4), torch.randn(64, 1))
    val_ds = TensorDataset(torch.randn(16, 4), torch.randn(16, 1))
    train_sampler = DistributedSampler(train_ds, shuffle=True)
    train_loader = DataLoader(train_ds, batch_size=8, sampler=train_sampler)
    {NAME} = {"sampler": DistributedSampler(val_ds, shuffle=True)}
    val_loader = DataLoader(val_ds, batch_size=8, **{NAME})
    model = DDP(torch.nn.Linear(4, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for epoch in range(3):
        train_sampler.set_epoch(epoch)
        for x, y in train_loader:
            opt.zero_grad()
            (model(x) - y).pow(2).mean().backward()
            opt.step()
        with torch.no_grad():
            for x, y in val_loader:
                model(x)


main()
"""


def _held_samplers(tmp_path, name: str) -> list:
    return [f for f in lint_tree(tmp_path, {"train.py": HELD.replace("{NAME}", name)}) if f.code == "DDP804"]


def test_evaluation_sampler_held_in_a_dict_needs_no_set_epoch(tmp_path):
    assert _held_samplers(tmp_path, "val_sampler") == []


def test_training_sampler_held_in_a_dict_without_set_epoch_is_reported(tmp_path):
    # twin: the held sampler feeds the training loop and nothing sets its epoch
    code = HELD.replace("{NAME}", "train_opts").replace("train_sampler.set_epoch(epoch)", "pass") \
        .replace("for x, y in train_loader:", "for x, y in val_loader:")
    found = [f for f in lint_tree(tmp_path, {"train.py": code}) if f.code == "DDP804"]
    assert found


# -------------------------------------------------- a rank parameter left at its default
# `def worker_init_fn(worker_id, seed, rank=0)` handed to the loader as `partial(worker_init_fn,
# seed=self.seed)`: its rank stays 0 on every rank, so worker k seeds alike everywhere. The seed
# is the trainer's field, set in its constructor from the config every rank reads.
PINNED_UTILS = """
import random
import numpy as np
import torch


def worker_init_fn(worker_id, seed, rank=0):
    worker_seed = seed + rank * 1000 + worker_id
    random.seed(worker_seed)
    np.random.seed(worker_seed)
    torch.manual_seed(worker_seed)
"""

PINNED_TRAIN = """
from functools import partial
import argparse
import torch
import torch.distributed as dist
from torch.utils.data import DataLoader, Dataset
from torch.utils.data.distributed import DistributedSampler
from utils import *


class Crops(Dataset):
    def __len__(self):
        return 64

    def __getitem__(self, i):
        return torch.rand(4), torch.randn(1)


class Trainer:
    def __init__(self, mode, seed):
        self.seed = seed
        dist.init_process_group("gloo")
        ds = Crops()
        self.loader = DataLoader(ds, batch_size=8, sampler=DistributedSampler(ds), num_workers=4,
                                 worker_init_fn=partial(worker_init_fn, {BIND}))
        self.model = nn.parallel.DistributedDataParallel(nn.Linear(4, 1))

    def train(self):
        opt = torch.optim.SGD(self.model.parameters(), lr=0.1)
        for x, y in self.loader:
            opt.zero_grad()
            (self.model(x) - y).pow(2).mean().backward()
            opt.step()


if __name__ == "__main__":
    p = argparse.ArgumentParser()
    p.add_argument("--seed", type=int, default=42)
    args = p.parse_args()
    Trainer("train_ddp", args.seed).train()
"""


def _pinned(tmp_path, bind: str) -> list:
    found = lint_tree(tmp_path, {"train.py": PINNED_TRAIN.replace("{BIND}", bind),
                                 "utils.py": PINNED_UTILS + "from torch import nn\n"})
    return found


def test_rank_parameter_left_at_zero_seeds_workers_alike(tmp_path):
    found = [f for f in _pinned(tmp_path, "seed=self.seed") if f.code == "DDP808"]
    assert len(found) == 1 and "worker_init_fn" in found[0].message


def test_rank_parameter_bound_to_the_rank_seeds_workers_apart(tmp_path):
    # twin: partial() hands the rank: worker k of each rank seeds apart
    assert [f for f in _pinned(tmp_path, "seed=self.seed, rank=dist.get_rank()") if f.code == "DDP808"] == []


def test_star_import_brings_the_modules_library_imports(tmp_path):
    # `from utils import *` where utils has `from torch import nn`: `nn.parallel.Distributed
    # DataParallel(...)` is the DDP constructor (DDP805 is judged, not skipped for want of a model)
    from ddpdoctor.lint.driver import gather
    _pinned(tmp_path, "seed=self.seed")
    assert gather(str(tmp_path / "train.py")).ddp_model


def test_without_the_star_import_nn_is_no_library_name(tmp_path):
    # twin: the module names nothing `nn`: the call is not known to build a DDP model
    from ddpdoctor.lint.driver import gather
    (tmp_path / "utils.py").write_text(PINNED_UTILS)
    (tmp_path / "train.py").write_text(PINNED_TRAIN.replace("{BIND}", "seed=self.seed"))
    assert not gather(str(tmp_path / "train.py")).ddp_model


# -------------------------------------------------- the process group's own switch is no option left off
# `--ddp` is a store_true, and the process group is set up under it: a callee's `if cfg.ddp:
# dist.barrier()` reached from `if cfg.rank == 0:` is reached on every distributed run. Inside
# the branch, a test on an option left unset (`if cfg.time_limit is not None:`) makes the
# finding rest on a launch that sets it (a warning).
SWITCHED = """
import argparse
import torch
import torch.distributed as dist


class Trainer:
    def __init__(self, cfg):
        self.cfg = cfg
        self.model = torch.nn.Linear(4, 1)

    def save_checkpoint(self):
        if self.cfg.rank == 0:
            torch.save(self.model.state_dict(), "ckpt.pt")
        if self.cfg.{FLAG}:
            dist.barrier()

    def post_epoch(self):
        if self.cfg.rank == 0:
            {INNER}self.save_checkpoint()
        if self.cfg.ddp:
            dist.barrier()

    def train(self):
        for epoch in range(3):
            self.model(torch.randn(2, 4)).sum().backward()
            self.post_epoch()


if __name__ == "__main__":
    p = argparse.ArgumentParser()
    p.add_argument("--ddp", action="store_true")
    p.add_argument("--extra", action="store_true")
    p.add_argument("--time_limit", type=float, default=None)
    cfg = p.parse_args()
    cfg.rank = 0
    if cfg.ddp:
        dist.init_process_group("gloo")
        cfg.rank = dist.get_rank()
    Trainer(cfg).train()
"""


def _switched(tmp_path, flag: str, inner: str = "") -> list:
    code = SWITCHED.replace("{FLAG}", flag).replace("{INNER}", inner)
    return [(f.severity.value, f.location.line) for f in lint_tree(tmp_path, {"train.py": code}) if f.code == "DDP801"]


def test_callee_barrier_under_the_process_groups_switch_is_a_ddp801(tmp_path):
    assert [s for s, _ in _switched(tmp_path, "ddp")] == ["error"]


def test_callee_barrier_under_another_option_left_off_is_quiet(tmp_path):
    # twin: `--extra` is no switch the group is set up under: a launch as written never barriers there
    assert _switched(tmp_path, "extra") == []


def test_a_test_on_an_unset_option_inside_the_branch_makes_it_a_warning(tmp_path):
    inner = "if self.cfg.time_limit is not None:\n                "
    assert [s for s, _ in _switched(tmp_path, "ddp", inner)] == ["warning"]


# -------------------------------------------------- `if batch is None: continue` over a loader
# torch's default collate never yields None: over a DataLoader built without a collate_fn the test
# is never true. A collate_fn of the script's own that drops a bad sample may yield None on one
# rank's batch: a rank that skips its backward leaves the others in the all-reduce.
NONE_BATCH = """
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler
from tqdm import tqdm


def drop_bad(items):
    items = [x for x in items if x[0].sum() > 0]
    return None if not items else torch.utils.data.default_collate(items)


class Trainer:
    def __init__(self):
        dist.init_process_group("gloo")
        self.rank = dist.get_rank()
        self.model = DDP(torch.nn.Linear(4, 1))
        self.opt = torch.optim.SGD(self.model.parameters(), lr=0.1)

    def forward(self, batch):
        self.out = self.model(batch[0])
        self.target = batch[1]

    def backward_g(self):
        self.total_loss = (self.out - self.target).pow(2).mean()

    def train(self):
        ds = TensorDataset(torch.randn(64, 4), torch.randn(64, 1))
        loader = DataLoader(ds, batch_size=8, sampler=DistributedSampler(ds){COLLATE})
        pbar = tqdm(loader) if self.rank == 0 else loader
        for step, batch in enumerate(pbar):
            if batch is None:
                continue
            self.forward(batch)
            self.backward_g()
            loss = self.total_loss
            self.opt.zero_grad()
            loss.backward()
            self.opt.step()


Trainer().train()
"""


def _never_none(tmp_path, collate: str) -> bool:
    """rank_state.never_none_batch on the loop's `if batch is None:` (the end-to-end case is
    holdout 73's motion-diffusion trainer, whose false DDP809 it removed)."""
    import ast
    from ddpdoctor.lint import rank_state
    from ddpdoctor.lint.program import Program
    from ddpdoctor.lint.sources import load_program
    (tmp_path / "train.py").write_text(NONE_BATCH.replace("{COLLATE}", collate))
    program = Program(load_program(str(tmp_path / "train.py"), []))
    fn = next(f for f in program.functions if f.name == "train")
    loop = next(n for n in ast.walk(fn.node) if isinstance(n, ast.For))
    test = next(n for n in ast.walk(loop) if isinstance(n, ast.If)).test
    return rank_state.never_none_batch(program, fn, loop, test)


def test_none_batch_of_a_default_collated_loader_is_never_taken(tmp_path):
    assert _never_none(tmp_path, "")


def test_none_batch_of_a_dropping_collate_fn_is_the_ranks_own(tmp_path):
    # twin: the script's own collate_fn returns None for a batch of bad samples
    assert not _never_none(tmp_path, ", collate_fn=drop_bad")


# -------------------------------------------------- an all_reduce into a tensor made for the call
# `dist.all_reduce(torch.tensor(avg_loss))` sums into a temporary that is dropped: `avg_loss` stays
# this rank's own, and the early stop that reads it parts the ranks.
TEMP_REDUCE = """
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP


def main():
    dist.init_process_group("gloo")
    model = DDP(torch.nn.Linear(4, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    best, stale = float("inf"), 0
    for epoch in range(50):
        total = 0.0
        for _ in range(4):
            opt.zero_grad()
            loss = model(torch.randn(8, 4)).pow(2).mean()
            loss.backward()
            opt.step()
            total += loss.item()
        avg_loss = total / 4
        {REDUCE}
        if avg_loss < best:
            best, stale = avg_loss, 0
        else:
            stale += 1
        if stale >= 3:
            break
        dist.barrier()


main()
"""


def _temp_reduce(tmp_path, reduce: str) -> list:
    found = lint_tree(tmp_path, {"train.py": TEMP_REDUCE.replace("{REDUCE}", reduce)})
    return [f for f in found if f.code == "DDP809"]


def test_all_reduce_into_a_temporary_shares_nothing(tmp_path):
    assert _temp_reduce(tmp_path, "dist.all_reduce(torch.tensor(avg_loss))")


def test_all_reduce_of_a_kept_tensor_shares_the_value(tmp_path):
    # twin: the sum is read back from the tensor the call was handed
    assert _temp_reduce(tmp_path, "t = torch.tensor(avg_loss)\n        dist.all_reduce(t)\n"
                                  "        avg_loss = t.item() / dist.get_world_size()") == []
