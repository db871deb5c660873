"""Shapes from session 44 (holdout 54, read after it was scored unread): a rank kept by unpacking
a helper's tuple into the instance's fields, the transformers 4.x API a project without a pin
speaks, a script's own loop beside a Trainer it builds on another switch, a lambda that draws in
a transform, webdataset's WebLoader and lazy pipelines, a graph's `number_of_nodes()`, a switch
kept on the instance, a class whose only base is `object`, an ignite handler that stores the
sampler's epoch, a Python launcher that writes `--nnodes`. Each with its twin, in our own words."""

from __future__ import annotations

from tests.unit.test_lint_round50_shapes import at, line_of
from tests.unit.test_lint_session39_shapes import lint_tree


# -------------------------------------------------- `self.device, self.device_id = get_ids()`
UNPACKED_RANK = """
import os
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP


def get_device_and_id(use_ddp):
    if use_ddp and "LOCAL_RANK" in os.environ:
        device_id = int(os.environ["LOCAL_RANK"])
    else:
        device_id = 0
    return int(os.environ.get("GPU_INDEX", 0)), device_id


class Runner:
    def __init__(self):
        self.device, self.device_id = get_device_and_id(True)
        self.model = DDP(torch.nn.Linear(4, 1))

    def save(self, path):
        if self.{field} != 0:
            return
        torch.save(self.model.state_dict(), path)  # the save


def main():
    dist.init_process_group("gloo")
    runner = Runner()
    runner.save("last.pt")


if __name__ == "__main__":
    main()
"""


def test_a_field_unpacked_from_a_helper_returning_the_local_rank_is_a_rank_test(tmp_path):
    found = lint_tree(tmp_path, {"train.py": UNPACKED_RANK.replace("{field}", "device_id")})
    assert at(found, "DDP806") == []


def test_its_twin_the_other_field_of_the_tuple_is_no_rank(tmp_path):
    code = UNPACKED_RANK.replace("{field}", "device")
    found = lint_tree(tmp_path, {"train.py": code})
    assert at(found, "DDP806") == [(line_of(code, "# the save"), "warning")]


# -------------------------------------------------- a `_save` override in a project written for 4.x
HF_SAVE = """
import os
import torch
from transformers import Trainer, TrainingArguments


class MyTrainer(Trainer):
    def _save(self, output_dir=None, state_dict=None):
        os.makedirs(output_dir, exist_ok=True)
        torch.save(self.args, os.path.join(output_dir, "training_args.bin"))  # the save


def main():
    args = TrainingArguments(output_dir="out")
    trainer = MyTrainer(model=torch.nn.Linear(4, 1), args=args{given})
    trainer.train()


if __name__ == "__main__":
    main()
"""


def test_a_trainer_built_with_tokenizer_runs_transformers_4_where_save_model_tests_should_save(tmp_path):
    found = lint_tree(tmp_path, {"train.py": HF_SAVE.replace("{given}", ", tokenizer=None")})
    assert at(found, "DDP806") == []


def test_its_twin_no_4x_api_and_no_pin_is_read_as_5x_where_every_rank_calls_save(tmp_path):
    code = HF_SAVE.replace("{given}", ", processing_class=None")
    found = lint_tree(tmp_path, {"train.py": code})
    assert at(found, "DDP806") == [(line_of(code, "# the save"), "warning")]


def test_a_4x_project_that_calls_save_itself_on_every_rank_still_writes_there(tmp_path):
    code = HF_SAVE.replace("{given}", ", tokenizer=None").replace(
        "    trainer.train()\n", "    trainer.train()\n    trainer._save(\"out\")\n")
    found = lint_tree(tmp_path, {"train.py": code})
    assert at(found, "DDP806") == [(line_of(code, "# the save"), "warning")]


# -------------------------------------------------- the script's own loop beside a Trainer it builds
OWN_LOOP = """
import argparse
import torch
import torch.distributed as dist
import transformers
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, DistributedSampler


class Runner:
    def __init__(self, use_hf):
        self.model = DDP(torch.nn.Linear(4, 1))
        self.opt = torch.optim.SGD(self.model.parameters(), lr=0.1)
        self.accumulate = 4
        data = [torch.randn(4) for _ in range(64)]
        self.loader = DataLoader(data, batch_size=8, sampler=DistributedSampler(data))
        self.run = self.with_hf if use_hf else self.own_loop

    def own_loop(self):
        for epoch in range(2):
            self.loader.sampler.set_epoch(epoch)
            for i, x in enumerate(self.loader):
                loss = self.model(x).sum() / self.accumulate
                loss.backward()  # the backward
                if (i + 1) % self.accumulate == 0:
                    self.opt.step()
                    self.opt.zero_grad()

    def with_hf(self):
        trainer = transformers.Trainer(model=self.model.module, args=transformers.TrainingArguments("out"))
        trainer.train()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--use_hf", action="store_true")
    args = parser.parse_args()
    dist.init_process_group("gloo")
    Runner(args.use_hf).run()


if __name__ == "__main__":
    main()
"""


def test_a_loop_of_the_scripts_own_beside_a_trainer_it_may_build_accumulates_without_no_sync(tmp_path):
    found = lint_tree(tmp_path, {"train.py": OWN_LOOP})
    assert at(found, "DDP805") == [(line_of(OWN_LOOP, "# the backward"), "warning")]


def test_its_twin_the_loop_inside_a_trainer_subclass_is_the_frameworks(tmp_path):
    code = OWN_LOOP.replace("class Runner:", "class Runner(transformers.Trainer):")
    found = lint_tree(tmp_path, {"train.py": code})
    assert at(found, "DDP805") == []


# -------------------------------------------------- a lambda in a transform that draws
LAMBDA_DRAW = """
import random
import torch
import torch.distributed as dist
import torchvision.transforms as T
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, DistributedSampler
from torchvision.datasets import ImageFolder


def build(root, transform):
    return ImageFolder(root, transform=transform)


def main():
    dist.init_process_group("gloo")
    torch.manual_seed(0)  # the seeding
    model = DDP(torch.nn.Linear(4, 1))
    transform = T.Compose([T.TenCrop(32), T.Lambda(lambda crops: {pick}), T.ToTensor()])
    data = build("data", transform)
    loader = DataLoader(data, batch_size=8, num_workers=4, sampler=DistributedSampler(data))  # the loader
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for epoch in range(2):
        loader.sampler.set_epoch(epoch)
        for x, y in loader:
            opt.zero_grad()
            model(x).sum().backward()
            opt.step()


if __name__ == "__main__":
    main()
"""


def test_a_lambda_drawing_a_random_crop_in_the_transform_draws_in_the_workers(tmp_path):
    code = LAMBDA_DRAW.replace("{pick}", "random.choice(crops)")
    found = lint_tree(tmp_path, {"train.py": code})
    assert at(found, "DDP808") == [(line_of(code, "# the loader"), "warning")]
    assert "torch.manual_seed(0)" in next(f.message for f in found if f.code == "DDP808")


def test_its_twin_a_lambda_taking_the_first_crop_draws_nothing(tmp_path):
    found = lint_tree(tmp_path, {"train.py": LAMBDA_DRAW.replace("{pick}", "crops[0]")})
    assert at(found, "DDP808") == []


# -------------------------------------------------- webdataset: WebLoader, a lazy pipeline's stages
WEB = """
import random
import torch
import torch.distributed as dist
import webdataset as wds
from torch.nn.parallel import DistributedDataParallel as DDP


def crop(x):
    {crop}


def make_loader(urls, workers):
    dataset = wds.WebDataset(urls, nodesplitter=wds.split_by_node)
    dataset = dataset.shuffle(1000)
    dataset = dataset.decode("rgb").to_tuple("jpg").map_tuple(crop)
    return wds.WebLoader(dataset, batch_size=8, num_workers=workers)  # the loader


def main():
    dist.init_process_group("gloo")
    torch.manual_seed(42)  # the seeding
    model = DDP(torch.nn.Linear(4, 1))
    loader = make_loader("shards-{000..009}.tar", 4)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for (x,) in loader:
        opt.zero_grad()
        model(x).sum().backward()
        opt.step()


if __name__ == "__main__":
    main()
"""


def test_a_webloader_over_a_pipeline_whose_stage_draws_is_seeded_alike(tmp_path):
    code = WEB.replace("{crop}", "return x[random.randint(0, 3):]")
    found = lint_tree(tmp_path, {"train.py": code})
    assert at(found, "DDP808") == [(line_of(code, "# the loader"), "warning")]
    assert at(found, "DDP802") == []  # (a webdataset pipeline splits itself: no sampler wanted)


def test_its_twin_a_stage_that_draws_nothing(tmp_path):
    found = lint_tree(tmp_path, {"train.py": WEB.replace("{crop}", "return x[1:]")})
    assert at(found, "DDP808") == [] and at(found, "DDP802") == []


# -------------------------------------------------- `g.number_of_nodes()` is a graph's, not the job's
PER_NODE_SAVE = """
import os
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP


def mask(g):
    n = g.{count}()
    return torch.zeros(n)


def main():
    dist.init_process_group("gloo")
    local_rank = int(os.environ["LOCAL_RANK"])
    model = DDP(torch.nn.Linear(4, 1))
    if local_rank == 0:
        torch.save(model.state_dict(), "ckpt.pt")  # the save


if __name__ == "__main__":
    main()
"""


def test_a_graphs_number_of_nodes_says_nothing_of_the_machines(tmp_path):
    found = lint_tree(tmp_path, {"train.py": PER_NODE_SAVE.replace("{count}", "number_of_nodes")})
    assert at(found, "DDP806") == []


def test_its_twin_a_node_rank_read_from_slurm_is_several_machines(tmp_path):
    code = PER_NODE_SAVE.replace("n = g.{count}()", "n = int(os.environ['SLURM_NODEID'])")
    found = lint_tree(tmp_path, {"train.py": code})
    assert at(found, "DDP806") == [(line_of(code, "# the save"), "warning")]


# -------------------------------------------------- `if self.ddp: set_epoch` where no one sets ddp
SWITCH_ON_SELF = """
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, DistributedSampler


class Trainer:
    def __init__(self, model, ddp=False):
        self.model = model
        self.ddp = ddp

    def fit(self, loader):
        opt = torch.optim.SGD(self.model.parameters(), lr=0.1)
        for epoch in range(5):
            if self.ddp:
                loader.sampler.set_epoch(epoch)
            for x in loader:
                opt.zero_grad()
                self.model(x).sum().backward()
                opt.step()


def main():
    dist.init_process_group("gloo")
    data = [torch.randn(4) for _ in range(64)]
    sampler = DistributedSampler(data, shuffle=True)  # the sampler
    loader = DataLoader(data, batch_size=8, sampler=sampler)
    Trainer(DDP(torch.nn.Linear(4, 1)){ddp}).fit(loader)


if __name__ == "__main__":
    main()
"""


def test_a_set_epoch_under_a_field_every_construction_leaves_false_never_runs(tmp_path):
    code = SWITCH_ON_SELF.replace("{ddp}", "")
    found = lint_tree(tmp_path, {"train.py": code})
    assert at(found, "DDP804") == [(line_of(code, "# the sampler"), "warning")]
    assert "sits under a switch" in next(f.message for f in found if f.code == "DDP804")


def test_its_twin_the_construction_turns_the_field_on(tmp_path):
    found = lint_tree(tmp_path, {"train.py": SWITCH_ON_SELF.replace("{ddp}", ", ddp=True")})
    assert at(found, "DDP804") == []


# -------------------------------------------------- `class Launcher(object)` is no framework's hook
OBJECT_BASE = """
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

import helpers


class Launcher({base}):
    def __call__(self):
        helpers.evaluate_on_rank_zero()


def main():
    dist.init_process_group("gloo")


if __name__ == "__main__":
    main()
"""
HELPERS = """
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP


def evaluate_on_rank_zero():
    model = DDP(torch.nn.BatchNorm1d(4))
    if dist.get_rank() == 0:
        with torch.no_grad():
            model(torch.randn(8, 4))  # the forward
"""


def test_a_class_of_the_script_based_on_object_alone_runs_only_where_it_is_built(tmp_path):
    found = lint_tree(tmp_path, {"train.py": OBJECT_BASE.replace("{base}", "object"), "helpers.py": HELPERS})
    assert at(found, "DDP801") == []


def test_its_twin_a_class_on_a_frameworks_base_is_found_and_called_by_it(tmp_path):
    code = OBJECT_BASE.replace("{base}", "torch.nn.Module")
    found = lint_tree(tmp_path, {"train.py": code, "helpers.py": HELPERS})
    assert [code for code, _ in at(found, "DDP801")] != []


# -------------------------------------------------- ignite's handler storing the sampler's epoch
IGNITE_EPOCH = """
import torch
import torch.distributed as dist
from ignite.engine import Events, create_supervised_trainer
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, DistributedSampler


def update_sampler_epoch(data_loader):
    def handler(engine):
        {store}
    return handler


def main():
    dist.init_process_group("gloo")
    model = DDP(torch.nn.Linear(4, 1))
    data = [(torch.randn(4), torch.randn(1)) for _ in range(64)]
    sampler = DistributedSampler(data)  # the sampler
    loader = DataLoader(data, batch_size=8, sampler=sampler)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    trainer = create_supervised_trainer(model, opt, torch.nn.functional.mse_loss)
    trainer.add_event_handler(Events.EPOCH_STARTED, update_sampler_epoch(loader))
    trainer.run(loader, max_epochs=5)


if __name__ == "__main__":
    main()
"""


def test_storing_the_samplers_epoch_is_setting_it(tmp_path):
    code = IGNITE_EPOCH.replace("{store}", "data_loader.sampler.epoch = engine.state.epoch")
    found = lint_tree(tmp_path, {"train.py": code})
    assert at(found, "DDP804") == []


def test_its_twin_storing_something_else_sets_no_epoch(tmp_path):
    code = IGNITE_EPOCH.replace("{store}", "data_loader.last_epoch = engine.state.epoch")
    found = lint_tree(tmp_path, {"train.py": code})
    assert at(found, "DDP804") == [(line_of(code, "# the sampler"), "warning")]


# -------------------------------------------------- a Python launcher writing `--nnodes={n}`
NODE_SAVE = """
import os
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP


def main():
    dist.init_process_group("gloo")
    local_rank = int(os.environ["LOCAL_RANK"])
    model = DDP(torch.nn.Linear(4, 1))
    if local_rank == 0:
        torch.save(model.state_dict(), "ckpt.pt")  # the save


if __name__ == "__main__":
    main()
"""
LAUNCHER = """
import subprocess


def launch(machines, hosts):
    for i, host in enumerate(hosts):
        command = f"python -m torch.distributed.launch --nproc_per_node=8 --nnodes={count} --node_rank={i} train.py"
        subprocess.run(["ssh", host, command])
"""


def test_a_python_launcher_writing_several_nodes_makes_local_rank_zero_one_writer_per_node(tmp_path):
    files = {"train.py": NODE_SAVE, "launch.py": LAUNCHER.replace("{count}", "{machines}")}
    found = lint_tree(tmp_path, files)
    assert at(found, "DDP806") == [(line_of(NODE_SAVE, "# the save"), "warning")]


def test_its_twin_a_launcher_of_one_node(tmp_path):
    found = lint_tree(tmp_path, {"train.py": NODE_SAVE, "launch.py": LAUNCHER.replace("{count}", "1")})
    assert at(found, "DDP806") == []


# -------------------------------------------------- a WebLoader over a pipeline a library builds
LIBRARY_WDS = """
import torch
import torch.distributed as dist
import webdataset as wds
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader
from clip_train.data import get_wds_dataset


def main():
    dist.init_process_group("gloo")
    model = DDP(torch.nn.Linear(4, 1))
    dataset = get_wds_dataset("shards-{000..009}.tar")
    loader = {loader}(dataset, batch_size=8, num_workers=4)  # the loader
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for x in loader:
        opt.zero_grad()
        model(x).sum().backward()
        opt.step()


if __name__ == "__main__":
    main()
"""


def test_a_webloader_over_a_dataset_the_source_does_not_show_is_a_webdataset_pipeline(tmp_path):
    found = lint_tree(tmp_path, {"train.py": LIBRARY_WDS.replace("{loader}", "wds.WebLoader")})
    assert at(found, "DDP802") == []


def test_its_twin_a_plain_dataloader_over_it_wants_a_sampler(tmp_path):
    code = LIBRARY_WDS.replace("{loader}", "DataLoader")
    found = lint_tree(tmp_path, {"train.py": code})
    assert at(found, "DDP802") == [(line_of(code, "# the loader"), "error")]


# -------------------------------------------------- a launch's node count past int()'s digit limit
def test_a_node_count_of_thousands_of_digits_is_several_nodes_not_a_crash(tmp_path):
    launch = "torchrun --nnodes=" + "9" * 5000 + " --node_rank=0 train.py\n"
    found = lint_tree(tmp_path, {"train.py": NODE_SAVE, "launch.sh": launch})
    assert at(found, "DDP806") == [(line_of(NODE_SAVE, "# the save"), "warning")]


def test_its_twin_a_count_of_one_with_leading_zeros_is_one_node(tmp_path):
    found = lint_tree(tmp_path, {"train.py": NODE_SAVE, "launch.sh": "torchrun --nnodes=001 --node_rank=0 train.py\n"})
    assert at(found, "DDP806") == []
