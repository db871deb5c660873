"""Shapes from session 40: how values reach a statement (a branch that leaves, a rank handed
through a constructor to a method that only asks who it is) and how a loader is tied to the loop
that trains on it. Each with its twin, written in our own words."""

from __future__ import annotations

from tests.unit.test_lint_round17_shapes import lint_plain
from tests.unit.test_lint_round50_shapes import at, line_of

# -------------------------------------------------- a branch that returns does not reach what follows
# (a vendored trainer's `get_eval_dataloader`: the stream is cut per rank on the side that
# returns its own loader; the map-style dataset below it reaches the DistributedSampler whole)
LEAVING = """
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, DistributedSampler, IterableDataset, TensorDataset


class PerRank(IterableDataset):
    def __init__(self, data, rank, world):
        self.data, self.rank, self.world = data, rank, world

    def __iter__(self):
        return iter(self.data[self.rank::self.world])


def eval_loader(data, streaming):
    rank, world = dist.get_rank(), dist.get_world_size()
    if streaming:
        data = PerRank(data, rank, world)
        {leave}
    sampler = DistributedSampler(data, shuffle=False)  # the sampler
    return DataLoader(data, sampler=sampler, batch_size=8)


def main():
    dist.init_process_group("gloo")
    model = DDP(torch.nn.Linear(4, 1))
    data = TensorDataset(torch.randn(64, 4))
    with torch.no_grad():
        for (x,) in eval_loader(data, streaming=False):
            model(x)


if __name__ == "__main__":
    main()
"""


def test_a_dataset_cut_per_rank_on_a_side_that_returns_never_reaches_the_sampler(tmp_path):
    code = LEAVING.replace("{leave}", "return DataLoader(data, batch_size=8)")
    assert at(lint_plain(tmp_path, code), "DDP803") == []


def test_its_twin_the_side_falls_through_and_the_sampler_shards_the_cut_again(tmp_path):
    code = LEAVING.replace("{leave}", "print('streaming')")
    assert at(lint_plain(tmp_path, code), "DDP803") == [(line_of(code, "# the sampler"), "warning")]


# -------------------------------------------------- a rank handed on to a method that only asks who it is
# (a pretraining dataset given `local_rank` positionally, whose constructor hands it to a loading
# method that writes the cache on local rank 0: a flag, not a shard)
HANDED_ON = """
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, Dataset, DistributedSampler


class Pretraining(Dataset):
    def __init__(self, size, local_rank):
        self.items = self.load(size, local_rank)

    def load(self, size, local_rank):
        {load}

    def __len__(self):
        return len(self.items)

    def __getitem__(self, i):
        return self.items[i]


def main(local_rank):
    dist.init_process_group("gloo")
    data = Pretraining(64, local_rank)
    sampler = DistributedSampler(data)  # the sampler
    model = DDP(torch.nn.Linear(4, 1))
    for epoch in range(2):
        sampler.set_epoch(epoch)
        for x in DataLoader(data, sampler=sampler, batch_size=8):
            model(x).sum().backward()


if __name__ == "__main__":
    main(0)
"""


def test_a_rank_a_constructor_hands_to_a_method_that_only_tests_it_is_no_shard(tmp_path):
    load = ("items = [torch.randn(4) for _ in range(size)]\n"
            "        if local_rank == 0:\n"
            "            torch.save(items, 'cache.pt')\n"
            "        return items")
    assert at(lint_plain(tmp_path, HANDED_ON.replace("{load}", load)), "DDP803") == []


def test_its_twin_the_method_keeps_that_ranks_items_and_the_sampler_shards_them_again(tmp_path):
    load = "return [torch.randn(4) for _ in range(size)][local_rank::2]"
    code = HANDED_ON.replace("{load}", load)
    assert at(lint_plain(tmp_path, code), "DDP803") == [(line_of(code, "# the sampler"), "warning")]


# -------------------------------------------------- a side the options, as launched, never take
# (a time-series library's `data_provider`: one branch per task, the task an option with a
# default; a bug only on a switched-off path is at most optional, so it is not reported)
BY_TASK = """
import argparse
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

parser = argparse.ArgumentParser()
parser.add_argument("--task", type=str, default="{default}")
args = parser.parse_args()


def main():
    dist.init_process_group("gloo")
    model = DDP(torch.nn.Linear(4, 1))
    for step in range(4):
        model(torch.randn(8, 4)).sum().backward()
    if args.task == "pretrain":
        torch.save(model.module.state_dict(), "encoder.pt")  # the save
    elif args.task in ("probe", "sweep"):
        if dist.get_rank() == 0:
            dist.barrier()  # the barrier


if __name__ == "__main__":
    main()
"""


def test_a_save_and_a_barrier_on_sides_the_launched_task_never_takes_are_not_reported(tmp_path):
    found = lint_plain(tmp_path, BY_TASK.replace("{default}", "finetune"))
    assert at(found, "DDP806") == [] and at(found, "DDP801") == []


def test_its_twin_the_launched_task_takes_the_save(tmp_path):
    code = BY_TASK.replace("{default}", "pretrain")
    assert at(lint_plain(tmp_path, code), "DDP806") == [(line_of(code, "# the save"), "warning")]


def test_its_twin_the_launched_task_takes_the_barrier(tmp_path):
    code = BY_TASK.replace("{default}", "probe")
    assert [line for line, _ in at(lint_plain(tmp_path, code), "DDP801")] == [line_of(code, "# the barrier")]


# -------------------------------------------------- a dataset's branch that asserts one process
# (a model-compression repository's `create_dataset`: ImageNet sharded, the small datasets
# headed by `assert not distributed`)
ASSERTED = """
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, DistributedSampler, TensorDataset


def create_dataset(name, distributed):
    data = TensorDataset(torch.randn(64, 4))
    if name == "imagenet":
        return DataLoader(data, sampler=DistributedSampler(data), batch_size=8)
    elif name == "mnist":
        {check}
        return DataLoader(data, shuffle=True, batch_size=8)  # the small one


def main(name, distributed=True):
    if distributed:
        dist.init_process_group("gloo")
    model = DDP(torch.nn.Linear(4, 1))
    for (x,) in create_dataset(name, distributed):
        model(x).sum().backward()


if __name__ == "__main__":
    import sys
    main(sys.argv[1])
"""


def test_a_loader_after_assert_not_distributed_runs_in_one_process_only(tmp_path):
    assert at(lint_plain(tmp_path, ASSERTED.replace("{check}", "assert not distributed")), "DDP802") == []


def test_its_twin_without_the_assert_every_rank_reads_it_whole(tmp_path):
    code = ASSERTED.replace("{check}", "print(name)")
    assert at(lint_plain(tmp_path, code), "DDP802") == [(line_of(code, "# the small one"), "error")]


# -------------------------------------------------- an epoch loop the options run once
ONE_EPOCH = """
import argparse
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, DistributedSampler, TensorDataset

parser = argparse.ArgumentParser()
parser.add_argument("--epochs", type=int, default={epochs})
args = parser.parse_args()


def main():
    dist.init_process_group("gloo")
    data = TensorDataset(torch.randn(64, 4))
    sampler = DistributedSampler(data)  # the sampler
    loader = DataLoader(data, sampler=sampler, batch_size=8)
    model = DDP(torch.nn.Linear(4, 1))
    for epoch in range(1, args.epochs + 1):
        for (x,) in loader:
            model(x).sum().backward()


if __name__ == "__main__":
    main()
"""


def test_a_sampler_read_for_the_one_epoch_the_options_launch_needs_no_set_epoch(tmp_path):
    assert at(lint_plain(tmp_path, ONE_EPOCH.replace("{epochs}", "1")), "DDP804") == []


def test_its_twin_three_epochs_repeat_the_order(tmp_path):
    code = ONE_EPOCH.replace("{epochs}", "3")
    assert at(lint_plain(tmp_path, code), "DDP804") == [(line_of(code, "# the sampler"), "warning")]


# -------------------------------------------------- the script's own switch between its two ways
# (a segmentation repository's validation: `if cfg["DDP"]["flag"]:` rank 0 saves, `else:` the
# one process saves; the group is set up unconditionally, the switch comes from a config file)
MIRRORED = """
import json
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP


def save_best(model, path):
    torch.save(model.state_dict(), path)  # the save


def validate(model, cfg):
    if cfg["DDP"]["flag"]:
        if dist.get_rank() == 0:
            save_best(model, "best.pt")
    else:
        {other}


def main():
    cfg = json.load(open("config.json"))
    dist.init_process_group("gloo")
    model = DDP(torch.nn.Linear(4, 1))
    for epoch in range(2):
        model(torch.randn(8, 4)).sum().backward()
        validate(model, cfg)


if __name__ == "__main__":
    main()
"""


def test_the_other_side_of_a_switch_whose_distributed_side_saves_on_rank_0_is_the_one_process_way(tmp_path):
    assert at(lint_plain(tmp_path, MIRRORED.replace("{other}", 'save_best(model, "best.pt")')), "DDP806") == []


def test_its_twin_the_other_side_saves_something_else_on_every_rank(tmp_path):
    code = MIRRORED.replace("{other}", 'torch.save(model.state_dict(), "last.pt")  # every rank')
    assert at(lint_plain(tmp_path, code), "DDP806") == [(line_of(code, "# every rank"), "warning")]


# -------------------------------------------------- a rank kept in a pydantic model's field
# (a small LM pretraining repository: `TrainConfig(device=local_rank)`, read back as
# `config.device` and tested `== 0` around the evaluation)
PYDANTIC = """
import os
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from pydantic import BaseModel


class TrainConfig({base}):
    device: int
    steps: int = 10
{init}

def train(model, config):
    gpu_id = config.device
    model = DDP(model)
    for step in range(config.steps):
        model(torch.randn(4, 4)).sum().backward()
        if gpu_id == 0:
            dist.barrier()  # the barrier


def main():
    dist.init_process_group("gloo")
    local_rank = int(os.environ["LOCAL_RANK"])
    train(torch.nn.Linear(4, 1), TrainConfig(device=local_rank))


if __name__ == "__main__":
    main()
"""


def test_a_rank_handed_to_a_pydantic_models_field_is_read_back_as_the_rank(tmp_path):
    code = PYDANTIC.replace("{base}", "BaseModel").replace("{init}", "")
    assert at(lint_plain(tmp_path, code), "DDP801") == [(line_of(code, "# the barrier"), "error")]


def test_its_twin_a_class_of_that_base_name_with_its_own_constructor_is_no_record(tmp_path):
    # (its constructor decides what `device` holds: here the device count, whatever it is handed)
    init = ("    def __init__(self, device):\n"
            "        self.device = torch.cuda.device_count()\n"
            "        self.steps = 10\n")
    code = PYDANTIC.replace("{base}", "BaseModel").replace("{init}", init)
    assert at(lint_plain(tmp_path, code), "DDP801") == []


# -------------------------------------------------- a side that leaves a name the distributed run reads unbound
# (the knowledge-distillation family: the small dataset's builder returns no sampler, the large
# one's does, and the epoch loop calls `train_sampler.set_epoch(epoch)` under the distributed switch)
KD_LOADERS = """
import argparse
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, DistributedSampler, TensorDataset

parser = argparse.ArgumentParser()
parser.add_argument("--dataset", default="small")
parser.add_argument("--distributed", action="store_true")
opt = parser.parse_args()


def small_loaders():
    data = TensorDataset(torch.randn(64, 4))
    train_loader = DataLoader(data, shuffle=True, batch_size=8)  # the small one
    return train_loader, DataLoader(data, batch_size=8)


def large_loaders(distributed):
    data = TensorDataset(torch.randn(256, 4))
    sampler = DistributedSampler(data) if distributed else None
    return DataLoader(data, sampler=sampler, shuffle=sampler is None, batch_size=8), \\
        DataLoader(data, batch_size=8), sampler


def main():
    if opt.distributed:
        dist.init_process_group("gloo")
    model = DDP(torch.nn.Linear(4, 1)) if opt.distributed else torch.nn.Linear(4, 1)
    if opt.dataset == "small":
        train_loader, val_loader = small_loaders()
        {bind}
    else:
        train_loader, val_loader, train_sampler = large_loaders(opt.distributed)
    for epoch in range(3):
        if opt.distributed:
            train_sampler.set_epoch(epoch)
        for (x,) in train_loader:
            model(x).sum().backward()


if __name__ == "__main__":
    main()
"""


def test_a_loader_on_a_side_that_would_die_at_set_epoch_in_any_distributed_run_is_not_the_runs(tmp_path):
    assert at(lint_plain(tmp_path, KD_LOADERS.replace("{bind}", "pass")), "DDP802") == []


def test_its_twin_the_side_binds_the_sampler_name_too_and_trains_every_rank_on_everything(tmp_path):
    code = KD_LOADERS.replace("{bind}", "train_sampler = None")
    code = code.replace("            train_sampler.set_epoch(epoch)", "            if train_sampler is not None:\n"
                        "                train_sampler.set_epoch(epoch)")
    assert at(lint_plain(tmp_path, code), "DDP802") == [(line_of(code, "# the small one"), "error")]


def test_a_builder_called_on_a_side_the_options_as_launched_never_take_builds_no_training_loader(tmp_path):
    code = KD_LOADERS.replace("{bind}", "train_sampler = None").replace('default="small"', 'default="large"')
    code = code.replace("            train_sampler.set_epoch(epoch)", "            if train_sampler is not None:\n"
                        "                train_sampler.set_epoch(epoch)")
    assert at(lint_plain(tmp_path, code), "DDP802") == []


# -------------------------------------------------- an iterator made once and read step by step
# (a segmentation repository's `trainloader_iter = enumerate(trainloader)`, then
# `_, batch = trainloader_iter.__next__()` for num_steps: one pass over a dataset sized for it)
STEPPED = """
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, DistributedSampler, TensorDataset


def main(num_steps=8):
    dist.init_process_group("gloo")
    data = TensorDataset(torch.randn(64, 4))
    sampler = DistributedSampler(data)  # the sampler
    loader = DataLoader(data, sampler=sampler, batch_size=8)
    model = DDP(torch.nn.Linear(4, 1))
    {make}
    for step in range(num_steps):
        {again}
        _, (x,) = batches.__next__()
        model(x).sum().backward()


if __name__ == "__main__":
    main()
"""


def test_an_enumerate_made_once_and_read_with_next_is_one_pass(tmp_path):
    code = STEPPED.replace("{make}", "batches = enumerate(loader)").replace("{again}", "pass")
    assert at(lint_plain(tmp_path, code), "DDP804") == []


def test_its_twin_made_again_every_few_steps_repeats_the_order(tmp_path):
    code = STEPPED.replace("{make}", "batches = enumerate(loader)").replace(
        "{again}", "if step % 4 == 0:\n            batches = enumerate(loader)")
    assert at(lint_plain(tmp_path, code), "DDP804") == [(line_of(code, "# the sampler"), "warning")]


# -------------------------------------------------- a rank flag handed to a library base's constructor
# (a tracking repository's checkpointer over fvcore's: `super().__init__(..., save_to_disk=main if
# save_to_disk is None else save_to_disk)`, then `if not self.save_to_disk: return` before the save)
LIBRARY_BASE = """
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from fvcore.common.checkpoint import Checkpointer


def is_main_process():
    return dist.get_rank() == 0


class Saver(Checkpointer):
    def __init__(self, model, save_dir, *, save_to_disk=None):
        main = is_main_process()
        super().__init__(model, save_dir, save_to_disk=main if save_to_disk is None else save_to_disk)

    def save(self, name):
        if not self.save_dir or not self.save_to_disk:
            return
        torch.save(self.model.state_dict(), name)  # the save


def main():
    dist.init_process_group("gloo")
    model = DDP(torch.nn.Linear(4, 1))
    saver = Saver({args})
    for step in range(3):
        model(torch.randn(2, 4)).sum().backward()
    saver.save("model_final.pth")


if __name__ == "__main__":
    main()
"""


def test_a_flag_a_library_base_keeps_from_its_constructor_is_the_rank_test_it_was_handed(tmp_path):
    assert at(lint_plain(tmp_path, LIBRARY_BASE.replace("{args}", 'model, "out"')), "DDP806") == []


def test_its_twin_every_rank_hands_save_to_disk_true(tmp_path):
    code = LIBRARY_BASE.replace("{args}", 'model, "out", save_to_disk=True')
    assert at(lint_plain(tmp_path, code), "DDP806") == [(line_of(code, "# the save"), "warning")]


# -------------------------------------------------- a trainer class picked by a configured name
# (a TTS toolkit: `trainer_class = getattr(pkg.trainers, config.get("trainer_type"))`, then
# `trainer_class(...).run()`; the recipe's YAML names the one the launch runs)
PICKED_SCRIPT = """
import sys
import yaml
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
import pkg.trainers


def main():
    config = yaml.safe_load(open(sys.argv[1]))
    dist.init_process_group("gloo")
    trainer_class = getattr(pkg.trainers, config.get("trainer_type", "PlainTrainer"))
    trainer = trainer_class(DDP(torch.nn.Linear(4, 1)))
    trainer.run()


if __name__ == "__main__":
    main()
"""
PICKED_TRAINERS = {
    "pkg/__init__.py": "",
    "pkg/trainers/__init__.py": "from .fast import *  # noqa\nfrom .steady import *  # noqa\n",
    "pkg/trainers/fast.py": '''
        import torch
        import torch.distributed as dist


        class FastTrainer:
            def __init__(self, model):
                self.model = model

            def run(self):
                for step in range(4):
                    self.model(torch.randn(2, 4)).sum().backward()
                    if dist.get_rank() == 0:
                        dist.barrier()  # the fast barrier
    ''',
    "pkg/trainers/steady.py": '''
        import torch
        import torch.distributed as dist


        class SteadyTrainer:
            def __init__(self, model):
                self.model = model

            def run(self):
                for step in range(4):
                    self.model(torch.randn(2, 4)).sum().backward()
                    if dist.get_rank() == 0:
                        dist.barrier()  # the steady barrier
    ''',
}


def _picked(tmp_path, config: str):
    from tests.unit.test_lint_session39_shapes import lint_tree
    files = {"train.py": PICKED_SCRIPT, **PICKED_TRAINERS, "conf/recipe.yaml": config}
    return sorted((f.location.file.rpartition("/")[2], f.location.line)
                  for f in lint_tree(tmp_path, files) if f.code == "DDP801")


def test_a_class_picked_by_a_configured_name_is_read_and_the_config_says_which(tmp_path):
    assert _picked(tmp_path, "trainer_type: SteadyTrainer\nbatch: 8\n") == [("steady.py", 13)]


def test_its_twin_no_config_names_one_and_every_candidate_is_judged(tmp_path):
    assert _picked(tmp_path, "batch: 8\n") == [("fast.py", 13), ("steady.py", 13)]


# -------------------------------------------------- a graph's node count is no machine count
# (a molecular pretraining repository: `args.num_nodes = len(VOCAB)` sizes an embedding; the
# saves under `local_rank == 0` are one writer per node only where the code knows of nodes)
NODE_TYPES = """
import argparse
import os
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

parser = argparse.ArgumentParser()
parser.add_argument("--num_nodes", type=int, default=1)
args = parser.parse_args()


def main():
    {graph}
    local_rank = int(os.environ["LOCAL_RANK"])
    dist.init_process_group("gloo")
    model = DDP(torch.nn.Embedding(args.num_nodes or 8, 4))
    for step in range(3):
        model(torch.zeros(2, dtype=torch.long)).sum().backward()
    if local_rank == 0:
        torch.save(model.module.state_dict(), "model.pt")  # the save


if __name__ == "__main__":
    main()
"""


def test_an_option_the_code_assigns_a_graph_size_tells_no_nodes_apart(tmp_path):
    code = NODE_TYPES.replace("{graph}", "args.num_nodes = len(['C', 'N', 'O'])")
    assert at(lint_plain(tmp_path, code), "DDP806") == []


def test_its_twin_the_launch_hands_the_node_count_and_local_rank_0_writes_once_per_node(tmp_path):
    code = NODE_TYPES.replace("{graph}", "pass")
    assert at(lint_plain(tmp_path, code), "DDP806") == [(line_of(code, "# the save"), "warning")]


def test_a_single_loop_over_enumerate_of_the_loader_is_one_pass_too(tmp_path):
    # (`for i, batch in enumerate(loader):` once, the dataset sized for every step: the loop's own
    # enumerate is no iterator made again)
    code = STEPPED.replace("{make}", "pass").replace("    for step in range(num_steps):\n        {again}\n"
                                                     "        _, (x,) = batches.__next__()\n",
                                                     "    for step, (x,) in enumerate(loader):\n")
    assert "enumerate(loader)" in code and at(lint_plain(tmp_path, code), "DDP804") == []
