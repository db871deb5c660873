"""Shapes from session 65's reading of holdout 88 (left unread by session 64), each with its twin,
in our own words."""

from __future__ import annotations

import os

from ddpdoctor.lint.sources import load_program
from tests.unit.test_lint_session39_shapes import lint_tree
from tests.unit.test_lint_session44_shapes import NODE_SAVE
from tests.unit.test_lint_session61_shapes import _codes, _line


def _write(tmp_path, files: dict[str, str]) -> None:
    for name, body in files.items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(body.lstrip("\n"))


# -------------------------------------------------- a copy of a modelled library kept beside the script
# (gdGPT ships a patched deepspeed/ of hundreds of files): `import deepspeed` is the library, whose
# calls the rules know by name - not a second, unmodelled copy read as the script's own code
VENDORED = """
import deepspeed
from deepspeed.pipe import PipelineModule


def main():
    deepspeed.init_distributed()


if __name__ == "__main__":
    main()
"""


def test_a_vendored_deepspeed_package_is_read_as_the_library_and_said(tmp_path, monkeypatch):
    _write(tmp_path, {"train.py": VENDORED, "deepspeed/__init__.py": "from .engine import Engine\n",
                      "deepspeed/engine.py": "class Engine:\n    pass\n", "deepspeed/pipe/__init__.py": "X = 1\n",
                      "deepspeed/runtime/__init__.py": "Y = 2\n"})
    monkeypatch.chdir(tmp_path)
    notes: list[str] = []
    files = load_program("train.py", notes)
    assert [f.display for f in files] == ["train.py"]
    assert any("copy of the library deepspeed" in n for n in notes)


def test_twin_a_module_of_the_scripts_own_named_like_a_library_is_read(tmp_path, monkeypatch):
    # (a `lightning.py` beside the script is the user's code: only a package copy is the library's)
    _write(tmp_path, {"train.py": "import lightning\n\nlightning.fit()\n",
                      "lightning.py": "def fit():\n    return 1\n"})
    monkeypatch.chdir(tmp_path)
    notes: list[str] = []
    files = load_program("train.py", notes)
    assert sorted(f.display for f in files) == ["lightning.py", "train.py"]
    assert not any("copy of the library" in n for n in notes)


# -------------------------------------------------- a callback every construction disables
# (GERPT's downstream callback: `if not self.enabled: return` first, the rank-0 work after it)
CALLBACK = """
import torch
import torch.distributed as dist


class Reporter:
    def __init__(self, interval, enabled=True):
        self.interval = interval
        self.enabled = enabled

    def end_epoch(self, epoch):
        if not self.enabled:
            return
        if dist.get_rank() == 0:
            dist.barrier()  # the collective


def main():
    dist.init_process_group("gloo")
    reporter = Reporter(interval=10, enabled=ENABLED)
    for epoch in range(3):
        reporter.end_epoch(epoch)


if __name__ == "__main__":
    main()
"""


def test_a_rank_zero_collective_in_a_callback_every_construction_disables_never_runs(tmp_path):
    found = lint_tree(tmp_path, {"train.py": CALLBACK.replace("ENABLED", "False")})
    assert not _codes(found, "DDP801")


def test_twin_the_callback_enabled_hangs_rank_zero(tmp_path):
    found = lint_tree(tmp_path, {"train.py": CALLBACK.replace("ENABLED", "True")})
    assert [(f.location.line, f.severity.value) for f in _codes(found, "DDP801")] == \
        [(_line(CALLBACK, "# the collective"), "error")]


# -------------------------------------------------- a loader built again after training, unsharded,
# that only rank 0's visualization reads (an X-ray tracker's `train_loader` rebound for pictures)
REBOUND = """
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, DistributedSampler, TensorDataset


def visualize(model, loader):
    batch = next(iter(loader))
    return model(batch[0])


def main():
    dist.init_process_group("gloo")
    data = TensorDataset(torch.randn(64, 4))
    sampler = DistributedSampler(data)
    train_loader = DataLoader(data, batch_size=8, sampler=sampler)
    model = DDP(torch.nn.Linear(4, 1))
    for epoch in range(2):
        sampler.set_epoch(epoch)
        for (x,) in train_loader:
            model(x).sum().backward()
    train_loader = DataLoader(data, batch_size=8, shuffle=False)  # the second loader
    AFTER


if __name__ == "__main__":
    main()
"""


def test_a_loader_rebound_after_training_that_only_rank_zero_reads_is_no_ranks_epoch(tmp_path):
    body = REBOUND.replace("AFTER", "if dist.get_rank() == 0:\n        visualize(model.module, train_loader)")
    found = lint_tree(tmp_path, {"train.py": body})
    assert not _codes(found, "DDP802")


def test_twin_the_rebound_loader_trains_again_on_every_rank(tmp_path):
    body = REBOUND.replace("AFTER", "for (x,) in train_loader:\n        model(x).sum().backward()")
    found = lint_tree(tmp_path, {"train.py": body})
    assert [f.location.line for f in _codes(found, "DDP802")] == [_line(REBOUND, "# the second loader")]


# -------------------------------------------------- a shell launch of another program says nothing of
# this script's nodes (a vendored sub-project's dist.sh starting its own train_v2.py on five nodes)
def test_a_launch_that_runs_only_another_program_is_no_multi_node_evidence(tmp_path):
    launch = "torchrun --nnodes=5 --node_rank=$i --nproc_per_node=8 train_v2.py configs/big.py\n"
    found = lint_tree(tmp_path, {"train.py": NODE_SAVE, "sub/dist.sh": launch})
    assert not _codes(found, "DDP806")


def test_twin_the_launch_runs_the_script_on_several_nodes(tmp_path):
    launch = "torchrun --nnodes=5 --node_rank=$i --nproc_per_node=8 train.py --cfg configs/big.py\n"
    found = lint_tree(tmp_path, {"train.py": NODE_SAVE, "sub/dist.sh": launch})
    assert [f.location.line for f in _codes(found, "DDP806")] == [_line(NODE_SAVE, "# the save")]


def test_a_launch_line_of_thousands_of_characters_is_read_in_linear_time(tmp_path):
    # (the .py names of a launch are found from each `.py` back, a bounded stem: no regex that
    # backtracks over a 5,000-digit argument)
    launch = "torchrun --nnodes=2 --node_rank=0 " + "9" * 20000 + " other.py\n"
    found = lint_tree(tmp_path, {"train.py": NODE_SAVE, "launch.sh": launch})
    assert not _codes(found, "DDP806")


# -------------------------------------------------- a run-state object's field set on rank 0 alone
# (a nanoGPT fork's `rs.iter_num = checkpoint["iter_num"]` in a builder, under `rank == 0`), then
# stepped on every rank and tested to leave the loop
STATE = """
import dataclasses
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP


@dataclasses.dataclass
class RunState:
    rank: int = 0
    iter_num: int = 0

    def say(self, text):
        if self.rank == 0:
            print(text)


def build(rs: RunState):
    model = torch.nn.Linear(4, 1)
    if RESUME_TEST:
        checkpoint = torch.load("ckpt.pt")
        rs.iter_num = checkpoint["iter_num"]
    return DDP(model)


if __name__ == "__main__":
    dist.init_process_group("gloo")
    rs = RunState(rank=dist.get_rank())
    model = build(rs)
    rs.say("ready")
    while True:
        if rs.iter_num % 100 == 0:
            if rs.iter_num == 0 and rs.rank < 0:
                break
        model(torch.randn(8, 4)).sum().backward()
        rs.iter_num += 1
        if rs.iter_num > 1000:  # the exit
            break
"""


def test_a_held_objects_field_read_back_on_rank_zero_alone_decides_the_loops_exit(tmp_path):
    # (an error since session 94: `while True:` enters its body, so the exit's test is read on
    # every rank, and rank 0 alone resumes the count)
    found = lint_tree(tmp_path, {"train.py": STATE.replace("RESUME_TEST", "rs.rank == 0")})
    assert [(f.location.line, f.severity.value) for f in _codes(found, "DDP809")] == \
        [(_line(STATE, "# the exit"), "error")]
    assert "`rs.iter_num` is set only under" in _codes(found, "DDP809")[0].message


def test_twin_every_rank_reads_the_checkpoint(tmp_path):
    found = lint_tree(tmp_path, {"train.py": STATE.replace("RESUME_TEST", "True")})
    assert not _codes(found, "DDP809")


# -------------------------------------------------- a class of the script's own that drives a library
# Trainer, in an imported module, saving its adapter on every process (a QLoRA SFT wrapper)
DRIVER_SCRIPT = """
from accelerate import Accelerator
from model_training import ModelTrainer

if __name__ == "__main__":
    Accelerator()
    ModelTrainer().run()
"""
DRIVER = """
from transformers import AutoModelForCausalLM, Trainer, TrainingArguments


class ModelTrainer:
    def __init__(self):
        self.model = AutoModelForCausalLM.from_pretrained("tiny")

    def run(self):
        trainer = Trainer(model=self.model, args=TrainingArguments(output_dir="out"), train_dataset=None)
        trainer.train()
        SAVE
"""


def test_a_save_pretrained_in_the_class_that_drives_a_trainer_runs_on_every_rank(tmp_path):
    body = DRIVER.replace("SAVE", 'trainer.model.save_pretrained("adapter")  # the save')
    found = lint_tree(tmp_path, {"train.py": DRIVER_SCRIPT, "model_training.py": body})
    assert [(os.path.basename(f.location.file), f.location.line) for f in _codes(found, "DDP806")] == \
        [("model_training.py", _line(body, "# the save"))]


def test_twin_the_trainers_own_save_model_writes_from_the_main_process(tmp_path):
    body = DRIVER.replace("SAVE", 'trainer.save_model("adapter")')
    found = lint_tree(tmp_path, {"train.py": DRIVER_SCRIPT, "model_training.py": body})
    assert not _codes(found, "DDP806")


# -------------------------------------------------- an unseeded datasets split handed to a Trainer
SPLIT = """
from datasets import load_dataset
from transformers import AutoModelForCausalLM, Trainer, TrainingArguments


class Data:
    def splits(self, dataset):
        parts = dataset.train_test_split(test_size=0.1SEED)  # the draw
        return [parts["train"], parts["test"]]


if __name__ == "__main__":
    data = Data()
    train, test = data.splits(load_dataset("csv", data_files="qa.csv", split="train"))
    trainer = Trainer(model=AutoModelForCausalLM.from_pretrained("tiny"),  # the trainer
                      args=TrainingArguments(output_dir="out"), train_dataset=train, eval_dataset=test)
    trainer.train()
"""


def test_an_unseeded_split_handed_to_a_trainer_is_drawn_apart_on_each_process(tmp_path):
    found = lint_tree(tmp_path, {"train.py": SPLIT.replace("SEED", "")})
    [finding] = _codes(found, "DDP803")
    assert finding.location.line == _line(SPLIT, "# the trainer") and "train_test_split" in finding.message


def test_twin_the_split_takes_a_seed(tmp_path):
    found = lint_tree(tmp_path, {"train.py": SPLIT.replace("SEED", ", seed=42")})
    assert not _codes(found, "DDP803")


# -------------------------------------------------- the process group set up through a local alias
# (old fairseq: `init_fn = dist_c10d.init_process_group` or the legacy one, then `init_fn(...)`)
ALIAS = """
import torch
import torch.distributed as dist
from torch.utils.data import DataLoader, TensorDataset


def distributed_init(backend):
    init_fn = dist.init_process_group
    INIT


def main():
    distributed_init("gloo")
    loader = DataLoader(TensorDataset(torch.randn(64, 4)), batch_size=8, shuffle=True)  # the loader
    model = torch.nn.Linear(4, 1)
    for epoch in range(2):
        for (x,) in loader:
            model(x).sum().backward()


if __name__ == "__main__":
    main()
"""


def test_a_process_group_set_up_through_an_alias_is_a_distributed_run(tmp_path):
    found = lint_tree(tmp_path, {"train.py": ALIAS.replace("INIT", "init_fn(backend=backend)")})
    assert [f.location.line for f in _codes(found, "DDP802")] == [_line(ALIAS, "# the loader")]


def test_twin_the_alias_never_called_sets_up_nothing(tmp_path):
    found = lint_tree(tmp_path, {"train.py": ALIAS.replace("INIT", "return init_fn")})
    assert not _codes(found, "DDP802")


def test_a_package_is_read_before_a_stray_module_of_its_name(tmp_path, monkeypatch):
    # (Python's path finder takes `tools/` the package over a `tools.py` beside it; an mmdetection
    # fork ships both, the module importing code the package never reaches)
    _write(tmp_path, {"train.py": "import tools\n\ntools.run()\n", "tools/__init__.py": "def run():\n    pass\n",
                      "tools.py": "import broken\n"})
    monkeypatch.chdir(tmp_path)
    files = load_program("train.py", [])
    assert sorted(f.display for f in files) == ["tools/__init__.py", "train.py"]
