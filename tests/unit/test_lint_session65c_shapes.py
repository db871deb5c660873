"""Shapes from session 65's reading of holdout 90 (after its unread score), each with its twin, in
our own words."""

from __future__ import annotations

from tests.unit.test_lint_session39_shapes import lint_tree
from tests.unit.test_lint_session61_shapes import _codes, _line


# -------------------------------------------------- loader options merged with dict.update
# (the PyTorch examples' `train_kwargs.update(cuda_kwargs)` with `num_workers` in the second dict)
MERGED = """
import torch
import torch.distributed as dist
import torchvision.transforms as T
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, Dataset


class Images(Dataset):
    def __init__(self):
        self.flip = T.RandomHorizontalFlip()

    def __len__(self):
        return 64

    def __getitem__(self, i):
        return self.flip(torch.rand(3, 8, 8))


def main():
    torch.manual_seed(1)
    dist.init_process_group("gloo")
    model = DDP(torch.nn.Linear(8, 1))
    train_kwargs = {"batch_size": 8}
    cuda_kwargs = {"num_workers": WORKERS, "pin_memory": True, "shuffle": True}
    train_kwargs.update(cuda_kwargs)
    loader = DataLoader(Images(), **train_kwargs)  # the loader
    for epoch in range(2):
        for x in loader:
            model(x[:, 0, 0]).sum().backward()


if __name__ == "__main__":
    main()
"""


def test_workers_merged_in_by_update_draw_alike_on_ranks_seeded_alike(tmp_path):
    found = lint_tree(tmp_path, {"train.py": MERGED.replace("WORKERS", "2")})
    assert [f.location.line for f in _codes(found, "DDP808")] == [_line(MERGED, "# the loader")]


def test_twin_no_workers_merged_in(tmp_path):
    found = lint_tree(tmp_path, {"train.py": MERGED.replace("WORKERS", "0")})
    assert not _codes(found, "DDP808")


# -------------------------------------------------- loader options from either side of a choice
# (`kwargs = {"num_workers": n, ...} if config["cuda"] else {}`)
CHOSEN = MERGED.replace(
    '''    train_kwargs = {"batch_size": 8}
    cuda_kwargs = {"num_workers": WORKERS, "pin_memory": True, "shuffle": True}
    train_kwargs.update(cuda_kwargs)
    loader = DataLoader(Images(), **train_kwargs)  # the loader''',
    '''    kwargs = {"num_workers": WORKERS, "pin_memory": True} if torch.cuda.is_available() else {}
    loader = DataLoader(Images(), batch_size=8, **kwargs)  # the loader''')


def test_workers_from_one_side_of_a_choice_are_read(tmp_path):
    found = lint_tree(tmp_path, {"train.py": CHOSEN.replace("WORKERS", "2")})
    assert [f.location.line for f in _codes(found, "DDP808")] == [_line(CHOSEN, "# the loader")]


def test_twin_no_workers_on_either_side(tmp_path):
    found = lint_tree(tmp_path, {"train.py": CHOSEN.replace("WORKERS", "0")})
    assert not _codes(found, "DDP808")


# -------------------------------------------------- a callee's flag made the way its caller's was
# (`ddp = True if world_size else False` in both; the caller's `if ddp: if rank == 0:
# metrics(..., world_size=world_size)`, the callee's `if not ddp: validate()` - not on this way)
FLAGGED = """
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP


def validate(model):
    with torch.no_grad():
        result = model(torch.randn(4, 4)).sum()
    dist.all_reduce(result)  # the collective
    return result


def metrics(model, world_size=None):
    ddp = True if world_size else False
    if not ddp:
        validate(model)
    return 0.0


def train_model(rank, world_size):
    ddp = True if world_size else False
    if ddp:
        dist.init_process_group("gloo", rank=rank, world_size=world_size)
    model = DDP(torch.nn.Linear(4, 1)) if ddp else torch.nn.Linear(4, 1)
    for epoch in range(2):
        model(torch.randn(8, 4)).sum().backward()
        if ddp:
            validate(model)
            if rank == 0:
                metrics(model, world_size=HANDED)


if __name__ == "__main__":
    torch.multiprocessing.spawn(train_model, args=(2,), nprocs=2)
"""


def test_the_callees_flag_copies_the_callers_so_its_other_side_is_not_taken(tmp_path):
    found = lint_tree(tmp_path, {"train.py": FLAGGED.replace("HANDED", "world_size")})
    assert not _codes(found, "DDP801")


def test_twin_the_callee_handed_no_world_size_takes_its_one_process_side(tmp_path):
    found = lint_tree(tmp_path, {"train.py": FLAGGED.replace("HANDED", "None")})
    assert _codes(found, "DDP801")


# -------------------------------------------------- a settings module's accumulation of 1
# (`import hparams`; `hparams.accum_size = 1` at its top; `if (it + 1) % hparams.accum_size == 0:`)
HPARAMS_TRAIN = """
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
import hparams


def main():
    dist.init_process_group("gloo")
    model = DDP(torch.nn.Linear(4, 1))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for it in range(100):
        (model(torch.randn(8, 4)).sum() / hparams.accum_size).backward()  # the backward
        if (it + 1) % hparams.accum_size == 0:
            optimizer.step()
            optimizer.zero_grad()


if __name__ == "__main__":
    main()
"""


def test_a_settings_modules_accumulation_of_one_steps_every_pass(tmp_path):
    found = lint_tree(tmp_path, {"train.py": HPARAMS_TRAIN, "hparams.py": "epochs = 10\naccum_size = 1\n"})
    assert not _codes(found, "DDP805")


def test_twin_a_settings_module_accumulating_four(tmp_path):
    found = lint_tree(tmp_path, {"train.py": HPARAMS_TRAIN, "hparams.py": "epochs = 10\naccum_size = 4\n"})
    assert [f.location.line for f in _codes(found, "DDP805")] == [_line(HPARAMS_TRAIN, "# the backward")]


# -------------------------------------------------- BatchNorm in the Sequential a block factory
# returns, in a backbone reached through a dotted import (`import models.backbones`, then
# `models.backbones.Darknet53()`), evaluated on rank 0 alone through the DDP wrapper
BACKBONE = """
import torch.nn as nn


def conv_bn(i, o):
    return nn.Sequential(nn.Conv2d(i, o, 3, padding=1, bias=False), NORM, nn.LeakyReLU(0.1))


class Darknet(nn.Module):
    def __init__(self):
        super().__init__()
        self.layers = nn.ModuleList()
        self.layers.append(conv_bn(3, 8))

    def forward(self, x):
        for layer in self.layers:
            x = layer(x)
        return x
"""
DETECTOR = """
import torch.nn as nn
import models.backbones


class Detector(nn.Module):
    def __init__(self):
        super().__init__()
        self.backbone = models.backbones.Darknet()

    def forward(self, x):
        return self.backbone(x)
"""
RANK0_EVAL = """
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from models.detector import Detector


def main():
    dist.init_process_group("gloo")
    model = DDP(Detector())
    for it in range(10):
        model(torch.randn(2, 3, 8, 8)).sum().backward()
        if dist.get_rank() == 0:
            with torch.no_grad():
                model(torch.randn(1, 3, 8, 8))  # the evaluation


if __name__ == "__main__":
    main()
"""


def _detector_tree(norm: str) -> dict[str, str]:
    return {"train.py": RANK0_EVAL, "models/__init__.py": "", "models/detector.py": DETECTOR,
            "models/backbones.py": BACKBONE.replace("NORM", norm)}


def test_a_rank_zero_forward_of_a_ddp_model_whose_backbone_factory_holds_batchnorm(tmp_path):
    found = lint_tree(tmp_path, _detector_tree("nn.BatchNorm2d(o)"))
    assert [(f.location.line, f.severity.value) for f in _codes(found, "DDP801")] == \
        [(_line(RANK0_EVAL, "# the evaluation"), "warning")]


def test_twin_the_factory_holds_no_buffers(tmp_path):
    found = lint_tree(tmp_path, _detector_tree("nn.GroupNorm(1, o)"))
    assert not _codes(found, "DDP801")


# -------------------------------------------------- a config value and a loop counter in the rank
# test (`if accelerator.is_main_process and cfg.training.ckpt_steps and current_step %
# cfg.training.ckpt_steps == 0 and current_step >= cfg.training.ckpt_steps:` with `ckpt_steps: 10`)
CONFIGURED = """
import hydra
import torch
from accelerate import Accelerator


@hydra.main(config_path="configs", config_name="config")
def main(cfg):
    accelerator = Accelerator()
    model = accelerator.prepare(torch.nn.Linear(4, 1))
    base_step = 0
    for step, batch in enumerate(range(100)):
        current_step = base_step + step
        accelerator.backward(model(torch.randn(8, 4)).sum())
        if accelerator.is_main_process and cfg.training.ckpt_steps and current_step >= cfg.training.ckpt_steps:
            accelerator.wait_for_everyone()  # the wait


if __name__ == "__main__":
    main()
"""


def test_a_config_set_checkpoint_period_is_no_assumption_of_the_rank_zero_wait(tmp_path):
    found = lint_tree(tmp_path, {"train.py": CONFIGURED, "configs/config.yaml": "training:\n  ckpt_steps: 10\n"})
    assert [(f.location.line, f.severity.value) for f in _codes(found, "DDP801")] == \
        [(_line(CONFIGURED, "# the wait"), "error")]


def test_twin_the_config_turns_checkpoints_off(tmp_path):
    found = lint_tree(tmp_path, {"train.py": CONFIGURED, "configs/config.yaml": "training:\n  ckpt_steps: 0\n"})
    assert not [f for f in _codes(found, "DDP801") if f.severity.value == "error"]


# -------------------------------------------------- detectron2's launch starts the ranks
LAUNCHED = """
import torch
from detectron2.engine import launch
from torch.utils.data import DataLoader, TensorDataset


def main(args):
    model = torch.nn.Linear(4, 1)
    loader = DataLoader(TensorDataset(torch.randn(64, 4)), batch_size=8, shuffle=True)  # the loader
    for epoch in range(2):
        for (x,) in loader:
            model(x).sum().backward()


if __name__ == "__main__":
    launch(main, 2, num_machines=1, machine_rank=0, dist_url="auto", args=({},))
"""


def test_detectron2s_launch_is_a_distributed_run(tmp_path):
    found = lint_tree(tmp_path, {"train.py": LAUNCHED})
    assert [f.location.line for f in _codes(found, "DDP802")] == [_line(LAUNCHED, "# the loader")]


def test_twin_main_called_directly_is_one_process(tmp_path):
    found = lint_tree(tmp_path, {"train.py": LAUNCHED.replace(
        'launch(main, 2, num_machines=1, machine_rank=0, dist_url="auto", args=({},))', "main({})")})
    assert not _codes(found, "DDP802")


def test_a_configured_bound_no_finite_count_reaches_is_the_findings_assumption(tmp_path):
    # (a 5,000-digit `ckpt_steps` is read as inf: `current_step >= inf` never holds, so the rank-0
    # wait is no certainty - said as what it rests on, a warning)
    config = "training:\n  ckpt_steps: " + "9" * 5000 + "\n"
    found = lint_tree(tmp_path, {"train.py": CONFIGURED, "configs/config.yaml": config})
    assert [(f.location.line, f.severity.value) for f in _codes(found, "DDP801")] == \
        [(_line(CONFIGURED, "# the wait"), "warning")]
