"""Shapes from session 41: what a write holds (a cache of data every rank builds is told as a
cache, with the cure a cache needs), where a function is bound, how a sampler and a loader are
read. Each with its twin, written in our own words."""

from __future__ import annotations

from tests.unit.test_lint_round17_shapes import lint_plain
from tests.unit.test_lint_round50_shapes import at, line_of


def saves(findings):
    return [f for f in findings if f.code == "DDP806"]


# -------------------------------------------------- a data cache is told as a cache
# (a video dataset filters out clips too short for its window once and keeps the indices beside
# the data; every rank builds the dataset, finds the file or makes it)
CACHED = """
import os
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, DistributedSampler


def short_clips(lengths, window, where):
    path = os.path.join(where, "short.pt")
    if os.path.isfile(path):
        dropped = torch.load(path)
    else:
        dropped = [i for i, n in enumerate(lengths) if n < window]
        torch.save({saved}, path)  # the write
    return dropped


def main():
    dist.init_process_group("gloo")
    model = DDP(torch.nn.Linear(4, 1))
    dropped = short_clips([3, 9, 12], 8, "/tmp/data")
    data = [torch.randn(4) for i in range(64) if i not in dropped]
    loader = DataLoader(data, sampler=DistributedSampler(data), batch_size=8)
    for x in loader:
        model(x).sum().backward()


if __name__ == "__main__":
    main()
"""


def test_a_cache_of_data_built_where_missing_is_told_with_the_cure_of_a_cache(tmp_path):
    code = CACHED.replace("{saved}", "dropped")
    [found] = saves(lint_plain(tmp_path, code))
    assert (found.location.line, found.severity.value) == (line_of(code, "# the write"), "warning")
    assert "a cache of data" in found.message and "build it on one rank first" in found.hint
    assert found.evidence["data_cache"]


def test_its_twin_the_same_place_holding_the_models_state_is_a_checkpoint(tmp_path):
    code = CACHED.replace("{saved}", "model.state_dict()")
    [found] = saves(lint_plain(tmp_path, code))
    assert found.location.line == line_of(code, "# the write")
    assert "all ranks write the same file at once" in found.message and "data_cache" not in found.evidence


# (a detection dataset reads its label files once and keeps a table of them; the class serves
# samples by index, so what it writes is data for its samples)
DATASET_METHOD = """
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, DistributedSampler


class Boxes:
    def __init__(self, files, table):
        self.files = files
        self.labels = self.read_labels(table)

    def read_labels(self, table):
        labels = {name: torch.zeros(0, 5) for name in self.files}
        torch.save(labels, table)  # the write
        return labels
{serves}

def main():
    dist.init_process_group("gloo")
    model = DDP(torch.nn.Linear(5, 1))
    data = Boxes(["a", "b"], "/tmp/labels.cache")
    loader = DataLoader(list(range(8)), sampler=DistributedSampler(list(range(8))), batch_size=2)
    for x in loader:
        model(torch.randn(len(x), 5)).sum().backward()


if __name__ == "__main__":
    main()
"""


def test_a_table_a_dataset_class_writes_for_its_samples_is_told_as_data(tmp_path):
    code = DATASET_METHOD.replace("{serves}", """
    def __len__(self):
        return len(self.files)

    def __getitem__(self, i):
        return self.labels[self.files[i]]
""")
    [found] = saves(lint_plain(tmp_path, code))
    assert found.location.line == line_of(code, "# the write")
    assert "data a dataset class writes" in found.message


def test_its_twin_the_same_class_serving_no_samples_writes_a_file_every_rank_writes(tmp_path):
    code = DATASET_METHOD.replace("{serves}", "")
    [found] = saves(lint_plain(tmp_path, code))
    assert found.location.line == line_of(code, "# the write")
    assert "all ranks write the same file at once" in found.message


# -------------------------------------------------- a handler defined under a rank test
# (an event-driven trainer: the checkpoint handler is registered with the evaluator on rank 0
# alone; nothing in the script calls it, the engine does, and only where it was bound)
HANDLER = """
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, DistributedSampler


class Engine:
    def __init__(self):
        self.handlers = []

    def on(self, event):
        def register(f):
            self.handlers.append(f)
            return f
        return register


def keep(model, where):
    torch.save(model.state_dict(), where)  # the write


def main(local_rank):
    dist.init_process_group("gloo")
    model = DDP(torch.nn.Linear(4, 1))
    evaluator = Engine()
{handler}
    data = list(range(16))
    for x in DataLoader(data, sampler=DistributedSampler(data), batch_size=4):
        model(torch.randn(len(x), 4)).sum().backward()
    for f in evaluator.handlers:
        f(evaluator)


if __name__ == "__main__":
    main(0)
"""
SAVER = """
    @evaluator.on("epoch_completed")
    def save(engine):
        keep(model, "best.pt")
"""


def test_a_handler_defined_under_a_rank_test_runs_on_that_rank_alone(tmp_path):
    handler = "    if local_rank == 0:\n" + "".join("    " + ln + "\n" for ln in SAVER.strip("\n").splitlines())
    code = HANDLER.replace("{handler}", handler)
    assert at(lint_plain(tmp_path, code), "DDP806") == []


def test_its_twin_the_handler_defined_on_every_rank_writes_on_every_rank(tmp_path):
    code = HANDLER.replace("{handler}", SAVER.strip("\n"))
    assert at(lint_plain(tmp_path, code), "DDP806") == [(line_of(code, "# the write"), "warning")]


# -------------------------------------------------- a sampler drawn whole, once
# (a fairseq-style epoch iterator: the batches are drawn from the sampler when the iterator is
# built and shuffled again by seed + epoch on every pass; the sampler itself is never read again)
FROZEN = """
import numpy as np
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import BatchSampler, DistributedSampler


class EpochBatches:
    def __init__(self, data, batch_sampler, seed=1):
        self.data = data
{keep}
        self.seed = seed
        self.epoch = 0

    def next_epoch(self):
        self.epoch += 1
        order = np.random.RandomState(self.seed + self.epoch).permutation(len(self.batches))
        return ([self.data[i] for i in self.batches[k]] for k in order)


def main():
    dist.init_process_group("gloo")
    model = DDP(torch.nn.Linear(4, 1))
    data = [torch.randn(4) for _ in range(64)]
    train_sampler = DistributedSampler(data)  # the sampler
    train_sampler = BatchSampler(train_sampler, 8, True)
    batches = EpochBatches(data, train_sampler)
    for epoch in range(3):
        for batch in batches.next_epoch():
            model(torch.stack(batch)).sum().backward()


if __name__ == "__main__":
    main()
"""


def test_a_sampler_drawn_whole_when_the_iterator_is_built_is_read_once(tmp_path):
    code = FROZEN.replace("{keep}", "        self.batches = tuple(batch_sampler)")
    assert at(lint_plain(tmp_path, code), "DDP804") == []


def test_its_twin_an_iterator_that_keeps_the_sampler_reads_it_every_epoch(tmp_path):
    code = FROZEN.replace("{keep}", "        self.sampler = batch_sampler\n"
                                    "        self.batches = property(lambda: list(self.sampler))")
    assert at(lint_plain(tmp_path, code), "DDP804") == [(line_of(code, "# the sampler"), "warning")]


# -------------------------------------------------- a script inside the package it imports by name
# (src/training/main.py runs with the README's `PYTHONPATH=$PWD/src` and imports its own folder as
# the package `training`: that folder's parent is where the import is found)
OWN_PACKAGE_MAIN = """
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from {package}.evaluation import evaluate


def main():
    dist.init_process_group("gloo")
    model = DDP(torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.BatchNorm1d(4)))
    for _ in range(3):
        model(torch.randn(8, 4)).sum().backward()
        evaluate(model, dist.get_rank())


if __name__ == "__main__":
    main()
"""
OWN_PACKAGE_EVAL = """
import torch


def evaluate(model, rank):
    if rank != 0:
        return
    with torch.no_grad():
        model(torch.randn(8, 4))  # the forward
"""


def own_package(tmp_path, folder):
    from tests.unit.test_lint_session39_shapes import lint_tree
    return lint_tree(tmp_path, {f"src/{folder}/main.py": OWN_PACKAGE_MAIN.replace("{package}", "training"),
                                f"src/{folder}/evaluation.py": OWN_PACKAGE_EVAL}, script=f"src/{folder}/main.py")


def test_a_script_inside_the_package_it_imports_reads_that_package(tmp_path):
    found = at(own_package(tmp_path, "training"), "DDP801")
    assert found == [(line_of(OWN_PACKAGE_EVAL, "# the forward"), "warning")]


def test_its_twin_a_folder_of_another_name_is_no_package_the_script_imports(tmp_path):
    assert at(own_package(tmp_path, "trainer"), "DDP801") == []


# -------------------------------------------------- the loader class through an attribute
# (a data module keeps `self.loader = torch.utils.data.DataLoader` and builds each split's
# loader through it)
ALIASED_LOADER = """
import torch
import torch.distributed as dist
import torch.utils.data
from torch.nn.parallel import DistributedDataParallel as DDP


class Data:
    def __init__(self, data):
        self.data = data
        self.loader = torch.utils.data.DataLoader

    def train_loader(self):
        return self.loader(self.data, batch_size=8, {order})  # the loader


def main():
    dist.init_process_group("gloo")
    model = DDP(torch.nn.Linear(4, 1))
    data = [torch.randn(4) for _ in range(64)]
    for epoch in range(2):
        for x in Data(data).train_loader():
            model(x).sum().backward()


if __name__ == "__main__":
    main()
"""


def test_a_loader_built_through_an_attribute_holding_the_class_is_a_loader(tmp_path):
    code = ALIASED_LOADER.replace("{order}", "shuffle=True")
    assert at(lint_plain(tmp_path, code), "DDP802") == [(line_of(code, "# the loader"), "error")]


def test_its_twin_the_same_loader_given_a_distributed_sampler(tmp_path):
    code = ALIASED_LOADER.replace("{order}", "sampler=torch.utils.data.DistributedSampler(self.data)")
    assert at(lint_plain(tmp_path, code), "DDP802") == []


# -------------------------------------------------- one node, said by the value
# (a project that starts its own torchrun: the command it builds says one node, so its
# `--nnodes` option is no sign that the code tells nodes apart)
ONE_NODE = """
import os
import subprocess
import sys
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP


def launch(gpus):
    subprocess.run(["torchrun", "--nnodes", "{nodes}", "--nproc_per_node", str(gpus), sys.argv[0], "--worker"])


def train():
    dist.init_process_group("gloo")
    model = DDP(torch.nn.Linear(4, 1))
    model(torch.randn(2, 4)).sum().backward()
    if int(os.environ["LOCAL_RANK"]) == 0:
        torch.save(model.state_dict(), "last.pt")  # the write


if __name__ == "__main__":
    train() if "--worker" in sys.argv else launch(2)
"""


def test_a_command_that_says_one_node_is_no_multi_node_code(tmp_path):
    assert at(lint_plain(tmp_path, ONE_NODE.replace("{nodes}", "1")), "DDP806") == []


def test_its_twin_the_command_says_two_nodes_and_local_rank_0_writes_on_each(tmp_path):
    code = ONE_NODE.replace("{nodes}", "2")
    assert at(lint_plain(tmp_path, code), "DDP806") == [(line_of(code, "# the write"), "warning")]


# -------------------------------------------------- a warm-up loop beside the epoch loop
# (the epoch loop sets the sampler's epoch; the warm-up's epochs before it read the same loader
# and never do)
WARMUP = """
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, DistributedSampler


def train(loader, model):
    for x in loader:
        model(x).sum().backward()


def main(warmup_epochs=5, epochs=20):
    dist.init_process_group("gloo")
    model = DDP(torch.nn.Linear(4, 1))
    data = [torch.randn(4) for _ in range(64)]
    sampler = DistributedSampler(data)
    loader = DataLoader(data, sampler=sampler, batch_size=8)
    for w in range(warmup_epochs):
{warm}
        train(loader, model)  # the warm-up pass
    for epoch in range(epochs):
        sampler.set_epoch(epoch)
        train(loader, model)


if __name__ == "__main__":
    main()
"""


def test_a_warm_up_loop_that_never_sets_the_epoch_repeats_one_order(tmp_path):
    code = WARMUP.replace("{warm}", "        pass")
    assert at(lint_plain(tmp_path, code), "DDP804") == [(line_of(code, "# the warm-up pass"), "warning")]


def test_its_twin_the_warm_up_sets_an_epoch_of_its_own(tmp_path):
    code = WARMUP.replace("{warm}", "        sampler.set_epoch(epochs + w)")
    assert at(lint_plain(tmp_path, code), "DDP804") == []


# -------------------------------------------------- an FSDP model's backward skipped on one rank
# (each rank tests its own loss and skips the backward; FSDP's backward reduce-scatters the
# gradients, so the ranks that go on wait for the one that skipped)
FSDP_SKIP = """
import torch
import torch.distributed as dist
from torch.distributed.fsdp import FullyShardedDataParallel as FSDP
from torch.utils.data import DataLoader, DistributedSampler


def main():
    dist.init_process_group("gloo")
    model = FSDP(torch.nn.Linear(4, 1))
    data = [torch.randn(4) for _ in range(64)]
    sampler = DistributedSampler(data)
    for epoch in range(2):
        sampler.set_epoch(epoch)
        for x in DataLoader(data, sampler=sampler, batch_size=8):
            loss = model(x).sum()
{shared}
            if not torch.isfinite(loss):  # the test
                continue
            loss.backward()


if __name__ == "__main__":
    main()
"""


def test_a_rank_that_skips_an_fsdp_backward_on_its_own_loss_is_told(tmp_path):
    code = FSDP_SKIP.replace("{shared}", "")
    found = [f for f in lint_plain(tmp_path, code) if f.code == "DDP809"]
    assert [(f.location.line, f.severity.value) for f in found] == [(line_of(code, "# the test"), "warning")]
    assert "FSDP reduce-scatters the gradients" in found[0].message


def test_its_twin_the_loss_all_reduced_first_is_every_ranks(tmp_path):
    code = FSDP_SKIP.replace("{shared}", "            dist.all_reduce(loss)")
    assert at(lint_plain(tmp_path, code), "DDP809") == []


# -------------------------------------------------- a hook a runner calls by name
# (a runner calls each hook's `before_train_epoch` through `getattr(hook, action)(runner)` in its
# epoch loop; the sampler hook sets the epoch there: how often it runs is the runner's, not the
# source's to show, so it is no set_epoch "run once before any loop")
HOOKED = """
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, DistributedSampler


class SamplerHook:
    def before_train_epoch(self, runner):
        runner.loader.sampler.set_epoch(runner.epoch)  # the set_epoch


class Runner:
    def __init__(self, model, loader, hooks):
        self.model, self.loader, self.hooks, self.epoch = model, loader, hooks, 0

    def call(self, action):
        for hook in self.hooks:
            getattr(hook, action)(self)

    def run(self, epochs):
{prologue}
        for self.epoch in range(epochs):
            self.call("before_train_epoch")
            for x in self.loader:
                self.model(x).sum().backward()


def main():
    dist.init_process_group("gloo")
    data = [torch.randn(4) for _ in range(64)]
    loader = DataLoader(data, sampler=DistributedSampler(data), batch_size=8)
    Runner(DDP(torch.nn.Linear(4, 1)), loader, [SamplerHook()]).run(3)


if __name__ == "__main__":
    main()
"""


def test_a_hook_the_runner_calls_by_name_is_no_set_epoch_run_once(tmp_path):
    assert at(lint_plain(tmp_path, HOOKED.replace("{prologue}", "        pass")), "DDP804") == []


def test_its_twin_the_hook_called_once_by_the_source_before_the_loop(tmp_path):
    code = HOOKED.replace("{prologue}", "        self.hooks[0].before_train_epoch(self)") \
                 .replace('            self.call("before_train_epoch")\n', "")
    found = at(lint_plain(tmp_path, code), "DDP804")
    assert len(found) == 1 and found[0][1] == "warning"


# -------------------------------------------------- a yacs-style config field settles a branch
# (the config module assigns each field its default; the YAML files beside the script override
# some; a dataset chosen by `cfg.DATASET.TYPE` is built only where some value of it picks it)
YACS_CFG = """
class CN(dict):
    def __getattr__(self, name):
        return self[name]

    def __setattr__(self, name, value):
        self[name] = value


CFG = CN()
CFG.DATASET = CN()
CFG.DATASET.TYPE = "cifar100"
CFG.SOLVER = CN()
CFG.SOLVER.EPOCHS = 240
"""
YACS_MAIN = """
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, DistributedSampler
from cfg import CFG as cfg


def loaders(cfg, data):
    if cfg.DATASET.TYPE == "cifar100":
        return DataLoader(data, sampler=DistributedSampler(data), batch_size=8)
    elif cfg.DATASET.TYPE == "imagenet":
        return DataLoader(data, shuffle=True, batch_size=8)  # the plain loader
    raise ValueError(cfg.DATASET.TYPE)


def main():
    dist.init_process_group("gloo")
    model = DDP(torch.nn.Linear(4, 1))
    data = [torch.randn(4) for _ in range(64)]
    for epoch in range(2):
        loader = loaders(cfg, data)
        loader.sampler.set_epoch(epoch) if hasattr(loader.sampler, "set_epoch") else None
        for x in loader:
            model(x).sum().backward()


if __name__ == "__main__":
    main()
"""


def yacs(tmp_path, configs: dict):
    from tests.unit.test_lint_session39_shapes import lint_tree
    return lint_tree(tmp_path, {"train.py": YACS_MAIN, "cfg.py": YACS_CFG, **configs})


def test_a_branch_no_value_of_a_config_field_takes_builds_no_training_loader(tmp_path):
    found = yacs(tmp_path, {"configs/kd.yaml": "SOLVER:\n  EPOCHS: 100\n"})
    assert at(found, "DDP802") == []


def test_its_twin_a_config_file_beside_the_script_picks_that_branch(tmp_path):
    found = yacs(tmp_path, {"configs/in1k.yaml": "DATASET:\n  TYPE: imagenet\nSOLVER:\n  EPOCHS: 100\n"})
    assert at(found, "DDP802") == [(line_of(YACS_MAIN, "# the plain loader"), "error")]


# -------------------------------------------------- a trainer class picked by a YAML config's key
# (`config.trainer` is a key of the YAML the launch loads, no option and no code default: each
# trainer builds its own sampler; only the one the configs beside the script name is built)
PICKED_MAIN = """
import argparse
import torch
import torch.distributed as dist
from omegaconf import OmegaConf
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, DistributedSampler


def train(model, loader):
    for epoch in range(3):
        for x in loader:
            model(x).sum().backward()


class Diffusion:
    def __init__(self, config):
        data = [torch.randn(4) for _ in range(64)]
        self.loader = DataLoader(data, sampler=DistributedSampler(data), batch_size=8)  # diffusion's
        self.model = DDP(torch.nn.Linear(4, 1))

    def run(self):
        train(self.model, self.loader)


class Distill:
    def __init__(self, config):
        data = [torch.randn(4) for _ in range(32)]
        self.loader = DataLoader(data, sampler=DistributedSampler(data), batch_size=4)  # distill's
        self.model = DDP(torch.nn.Linear(4, 1))

    def run(self):
        train(self.model, self.loader)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--config_path", required=True)
    config = OmegaConf.load(parser.parse_args().config_path)
    dist.init_process_group("gloo")
    if config.trainer == "diffusion":
        trainer = Diffusion(config)
    elif config.trainer == "distill":
        trainer = Distill(config)
    trainer.run()


if __name__ == "__main__":
    main()
"""


def picked(tmp_path, name):
    from tests.unit.test_lint_session39_shapes import lint_tree
    found = lint_tree(tmp_path, {"train.py": PICKED_MAIN, "configs/run.yaml": f"trainer: {name}\nlr: 0.1\n"})
    return at(found, "DDP804")


def test_the_trainer_the_configs_name_is_the_only_one_built(tmp_path):
    assert picked(tmp_path, "distill") == [(line_of(PICKED_MAIN, "# distill's"), "warning")]


def test_its_twin_the_configs_name_the_other_trainer(tmp_path):
    assert picked(tmp_path, "diffusion") == [(line_of(PICKED_MAIN, "# diffusion's"), "warning")]


# -------------------------------------------------- a switch named for its negation
# (`gpu == 0 or args.no_ddp`: --no_ddp runs one process; in the distributed run the test is
# rank 0's alone)
NEGATED = """
import argparse
import torch
import torch.distributed as dist
import torch.multiprocessing as mp
from torch.nn.parallel import DistributedDataParallel as DDP


def train(gpu, args):
    if not args.{switch_off}:
        dist.init_process_group("gloo", rank=gpu, world_size=2)
    model = torch.nn.Linear(4, 1)
    if not args.{switch_off}:
        model = DDP(model)
    model(torch.randn(2, 4)).sum().backward()
    if gpu == 0 or args.{switch}:
        torch.save(model.state_dict(), "last.pt")  # the write


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--no_ddp", action="store_true")
    parser.add_argument("--ddp", action="store_true")
    args = parser.parse_args()
    mp.spawn(train, nprocs=2, args=(args,))
"""


def test_a_switch_named_for_its_negation_is_the_one_process_side(tmp_path):
    code = NEGATED.replace("{switch_off}", "no_ddp").replace("{switch}", "no_ddp")
    assert at(lint_plain(tmp_path, code), "DDP806") == []


def test_its_twin_the_distributed_switch_itself_opens_the_write_to_every_rank(tmp_path):
    code = NEGATED.replace("{switch_off}", "no_ddp").replace("{switch}", "ddp")
    assert at(lint_plain(tmp_path, code), "DDP806") == [(line_of(code, "# the write"), "warning")]


def test_a_config_value_not_read_as_a_plain_scalar_settles_nothing(tmp_path):
    # a flow mapping, an interpolation and an alias are values this does not read: the branch
    # they may pick stays the run's (and a binary file beside them is no config and no crash)
    plain = line_of(YACS_MAIN, "# the plain loader")
    for name, body in [("flow", "DATASET: {TYPE: imagenet}\n"), ("env", "DATASET:\n  TYPE: ${oc.env:DS}\n"),
                       ("alias", "base: &ds imagenet\nDATASET:\n  TYPE: *ds\n")]:
        found = yacs(tmp_path / name, {f"configs/{name}.yaml": body, "configs/junk.yml": "\x00\xff" * 500})
        assert at(found, "DDP802") == [(plain, "error")], name
