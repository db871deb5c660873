"""Shapes from session 64's second reading (holdout 85, read after its unread score), each with its
twin, in our own words."""

from __future__ import annotations

from tests.unit.test_lint_session39_shapes import lint_tree
from tests.unit.test_lint_session61_shapes import _codes, _line


# -------------------------------------------------- rank 0 returns only in a mode the launch leaves off
# `if args.mode == "eval": if rank == 0: evaluate(); return` with --mode at "train": every rank
# of the launched run goes on past it, so what follows runs on every rank
EVAL_MODE = """
import argparse
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP


def main(args):
    dist.init_process_group("gloo")
    model = DDP(torch.nn.Linear(4, 1))
    if args.mode == "eval":
        if dist.get_rank() == 0:
            print(model.module.weight)
            return
    for step in range(10):
        model(torch.randn(2, 4)).sum().backward()
    dist.barrier()


if __name__ == "__main__":
    p = argparse.ArgumentParser()
    p.add_argument("--mode", default="MODE")
    main(p.parse_args())
"""


def test_a_rank_return_in_a_mode_left_off_divides_nothing(tmp_path):
    found = lint_tree(tmp_path, {"train.py": EVAL_MODE.replace("MODE", "train")})
    assert not _codes(found, "DDP801")


def test_twin_the_same_return_in_the_mode_launched(tmp_path):
    body = EVAL_MODE.replace("MODE", "eval")
    found = lint_tree(tmp_path, {"train.py": body})
    assert _line(body, "dist.barrier()") in [f.location.line for f in _codes(found, "DDP801")]


# -------------------------------------------------- a DeepSpeed engine handed to a save helper
# `if master: save_checkpoint(engine, step)` (periodic) and again after the loop, where the helper
# calls `engine.save_checkpoint(...)`: one finding at the engine's save, told through both calls
ENGINE_HELPER = """
import os
import deepspeed
import torch


def save_checkpoint(engine, step, out_dir):
    engine.save_checkpoint(out_dir, tag=f"step_{step}")


def main():
    master = int(os.environ.get("RANK", 0)) == 0
    deepspeed.init_distributed()
    engine, _, _, _ = deepspeed.initialize(model=torch.nn.Linear(4, 1), config="ds.json")
    for step in range(10):
        engine.backward(engine(torch.randn(2, 4)).sum())
        engine.step()
        if step % 5 == 0 and GUARD:
            save_checkpoint(engine, step, "out")
    if GUARD:
        save_checkpoint(engine, 10, "out")


if __name__ == "__main__":
    main()
"""


def test_an_engine_handed_to_a_save_helper_under_a_rank_test(tmp_path):
    body = ENGINE_HELPER.replace("GUARD", "master")
    found = _codes(lint_tree(tmp_path, {"train.py": body}), "DDP801")
    assert [(f.location.line, f.severity.value) for f in found] == [(_line(body, "engine.save_checkpoint("), "error")]
    assert found[0].evidence["also"] == [_line(body, 'save_checkpoint(engine, 10, "out")')]


def test_twin_the_helper_called_on_every_rank(tmp_path):
    found = lint_tree(tmp_path, {"train.py": ENGINE_HELPER.replace("GUARD", "True")})
    assert not _codes(found, "DDP801")


# -------------------------------------------------- a side command that ends the program first
# `if args.merge: merge_and_save(args); sys.exit(0)` before the training sets up its ranks: the
# merge's torch.save is one process's command, not every rank's
SIDE_COMMAND = """
import argparse
import sys
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP


def merge_and_save(args):
    state = torch.load(args.ckpt)
    torch.save(state, "merged.pt")


def train(args):
    dist.init_process_group("gloo")
    model = DDP(torch.nn.Linear(4, 1))
    for step in range(10):
        model(torch.randn(2, 4)).sum().backward()


if __name__ == "__main__":
    p = argparse.ArgumentParser()
    p.add_argument("--merge", action="store_true")
    p.add_argument("--ckpt")
    args = p.parse_args()
    if args.merge:
        merge_and_save(args)
        END
    train(args)
"""


def test_a_save_in_a_side_command_that_exits_first(tmp_path):
    found = lint_tree(tmp_path, {"train.py": SIDE_COMMAND.replace("END", "sys.exit(0)")})
    assert not _codes(found, "DDP806")


def test_twin_the_side_command_runs_on_into_the_training(tmp_path):
    body = SIDE_COMMAND.replace("END", "pass")
    found = lint_tree(tmp_path, {"train.py": body})
    assert [f.location.line for f in _codes(found, "DDP806")] == [_line(body, 'torch.save(state, "merged.pt")')]


# -------------------------------------------------- a loader behind an endless generator
# `data = yielder(DataLoader(ds, shuffle=True))` with `def yielder(loader): while True: yield from
# loader`, read by `next(data)` in a helper that draws and backpropagates itself
YIELDER = """
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, TensorDataset


def yielder(loader):
    while True:
        yield from loader


def main():
    dist.init_process_group("gloo")
    model = DDP(torch.nn.Linear(4, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    data = yielder(LOADER)

    def forward_backward(batches):
        (x,) = next(batches)
        loss = model(x).sum()
        if loss.requires_grad:
            loss.backward()

    for step in range(100):
        forward_backward(data)
        opt.step()
        opt.zero_grad()


if __name__ == "__main__":
    main()
"""


def test_a_loader_read_through_an_endless_generator_trains(tmp_path):
    body = YIELDER.replace("LOADER", "DataLoader(TensorDataset(torch.randn(64, 4)), batch_size=8, shuffle=True)")
    found = lint_tree(tmp_path, {"train.py": body})
    assert [f.location.line for f in _codes(found, "DDP802")] == [_line(body, "data = yielder(")]


def test_twin_the_generator_over_a_sharded_loader(tmp_path):
    body = YIELDER.replace("LOADER", "DataLoader(ds, batch_size=8, sampler=DistributedSampler(ds))").replace(
        "    data = yielder(", "    ds = TensorDataset(torch.randn(64, 4))\n    data = yielder(").replace(
        "import DataLoader, TensorDataset", "import DataLoader, DistributedSampler, TensorDataset")
    found = lint_tree(tmp_path, {"train.py": body})
    assert not _codes(found, "DDP802")


# -------------------------------------------------- a no_sync on a side no run takes
# `if last or not self.use_ddp: compute() else: with self.ddp_model.no_sync(): compute()` where
# every assignment of `self.use_ddp` is False; the step follows the call in the caller, itself
# called once a step
NEVER_SYNCED = """
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP


class Loop:
    def __init__(self, data, micro):
        self.use_ddp = USE_DDP
        self.ddp_model = DDP(torch.nn.Linear(4, 1))
        self.opt = torch.optim.SGD(self.ddp_model.parameters(), lr=0.1)
        self.data, self.micro = data, micro

    def run_loop(self):
        while True:
            self.run_step(next(self.data))

    def run_step(self, batch):
        self.forward_backward(batch)
        self.opt.step()

    def forward_backward(self, batch):
        self.opt.zero_grad()
        for i in range(0, batch.shape[0], self.micro):
            micro = batch[i: i + self.micro]
            last = i + self.micro >= batch.shape[0]
            if last or not self.use_ddp:
                loss = self.ddp_model(micro).sum()
            else:
                with self.ddp_model.no_sync():
                    loss = self.ddp_model(micro).sum()
            loss.backward()


def main():
    dist.init_process_group("gloo")
    Loop(iter([torch.randn(8, 4)] * 10), 2).run_loop()


if __name__ == "__main__":
    main()
"""


def test_a_no_sync_on_a_side_no_run_takes_covers_nothing(tmp_path):
    body = NEVER_SYNCED.replace("USE_DDP", "False")
    found = lint_tree(tmp_path, {"train.py": body})
    assert [f.location.line for f in _codes(found, "DDP805")] == [_line(body, "            loss.backward()")]


def test_twin_the_no_sync_side_taken(tmp_path):
    found = lint_tree(tmp_path, {"train.py": NEVER_SYNCED.replace("USE_DDP", "True")})
    assert not _codes(found, "DDP805")


# -------------------------------------------------- a model class looked up by name at run time
# `NetClass = load_model(cfg.model)` returns a class its module picks from a table built at run
# time over the model modules; most of those classes hold BatchNorm: a rank-0 no-grad forward of
# the DDP model broadcasts buffers the others never send
ZOO_INIT = """
import models.nets as nets

MODELS = [getattr(nets, a) for a in dir(nets) if "Net" in a]


def load_model(name):
    table = {m.__name__: m for m in MODELS}
    NetClass = table[name]
    return NetClass
"""
ZOO_NETS = """
import torch.nn as nn


class SmallNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)
        self.norm = NORM

    def forward(self, x):
        return self.norm(self.fc(x))


class BigNet(SmallNet):
    pass
"""
ZOO_MAIN = """
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from models import load_model


def main(name="SmallNet"):
    dist.init_process_group("gloo")
    NetClass = load_model(name)
    model = DDP(NetClass())
    for step in range(10):
        model(torch.randn(2, 4)).sum().backward()
        if dist.get_rank() == 0:
            with torch.no_grad():
                model(torch.randn(2, 4))


if __name__ == "__main__":
    main()
"""


def _zoo(norm: str) -> dict:
    return {"train.py": ZOO_MAIN, "models/__init__.py": ZOO_INIT, "models/nets.py": ZOO_NETS.replace("NORM", norm)}


def test_a_model_class_looked_up_at_run_time_holds_the_family_buffers(tmp_path):
    found = _codes(lint_tree(tmp_path, _zoo("nn.BatchNorm1d(4)")), "DDP801")
    assert [f.location.line for f in found] == [_line(ZOO_MAIN, "                model(torch.randn(2, 4))")]


def test_twin_a_family_without_buffers(tmp_path):
    assert not _codes(lint_tree(tmp_path, _zoo("nn.Identity()")), "DDP801")


# -------------------------------------------------- the author's checkout on sys.path
# scripts/train.py appends an absolute folder of the author's machine and imports the project's
# packages from the folder above it (utils/, at the checkout's root)
CHECKOUT_SCRIPT = """
import sys
sys.path.append("/home/someone/projects/myproj")
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from utils.io import save_model


def main():
    dist.init_process_group("gloo")
    model = DDP(torch.nn.Linear(4, 1))
    for step in range(10):
        model(torch.randn(2, 4)).sum().backward()
    save_model(model, "out.pt")


if __name__ == "__main__":
    main()
"""
CHECKOUT_IO = """
import torch


def save_model(model, path):
    torch.save(model.state_dict(), path)
"""


def test_an_absent_absolute_checkout_is_the_folder_above_the_script(tmp_path):
    found = lint_tree(tmp_path, {"scripts/train.py": CHECKOUT_SCRIPT, "utils/__init__.py": "",
                                 "utils/io.py": CHECKOUT_IO}, script="scripts/train.py")
    assert [(f.location.file.rsplit("/", 2)[-2:], f.location.line) for f in _codes(found, "DDP806")] == \
        [(["utils", "io.py"], _line(CHECKOUT_IO, "torch.save("))]


def test_twin_the_packages_are_nowhere_above(tmp_path):
    # (the folder above holds no utils/: nothing is read there, nothing judged)
    found = lint_tree(tmp_path, {"scripts/train.py": CHECKOUT_SCRIPT, "other/io.py": CHECKOUT_IO},
                      script="scripts/train.py")
    assert not _codes(found, "DDP806")


# -------------------------------------------------- a data decision in code the launch never reaches
# `elif args.attack == "AA": run_attack(model, x)` with --attack at "PGD": the per-batch `break`
# in run_attack decides nothing on the run as launched
ATTACK = """
import argparse
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP


def run_attack(model, xs):
    for x in xs:
        robust = (model(x) > 0).sum().item()
        if robust == 0:
            break
        model(x).sum().backward()


def main(args):
    dist.init_process_group("gloo")
    model = DDP(torch.nn.Linear(4, 1))
    xs = [torch.randn(2, 4)] * 5
    if args.attack == "PGD":
        model(xs[0]).sum().backward()
    elif args.attack == "AA":
        run_attack(model, xs)


if __name__ == "__main__":
    p = argparse.ArgumentParser()
    p.add_argument("--attack", default="DEFAULT")
    main(p.parse_args())
"""


def test_a_decision_only_a_mode_left_off_reaches(tmp_path):
    assert not _codes(lint_tree(tmp_path, {"train.py": ATTACK.replace("DEFAULT", "PGD")}), "DDP809")


def test_twin_the_same_decision_in_the_mode_launched(tmp_path):
    body = ATTACK.replace("DEFAULT", "AA")
    found = lint_tree(tmp_path, {"train.py": body})
    assert [f.location.line for f in _codes(found, "DDP809")] == [_line(body, "if robust == 0:")]


# -------------------------------------------------- a seeding in a private method nothing calls
# the trainer's `_seed()` is called only from `_init_validation()`, whose one call is commented
# out: the ranks never seed alike, so their workers draw apart
UNCALLED_SEED = """
import random
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, Dataset, DistributedSampler


class Jitter(Dataset):
    def __len__(self):
        return 64

    def __getitem__(self, i):
        return torch.full((4,), random.random())


class Builder:
    def __init__(self, seed):
        self.seed = seed
        data = Jitter()
        self.loader = DataLoader(data, batch_size=8, num_workers=2, sampler=DistributedSampler(data))
        self.model = DDP(torch.nn.Linear(4, 1))
        CALL

    def _seed(self):
        torch.manual_seed(self.seed)

    def _init_validation(self):
        self._seed()

    def train(self):
        for epoch in range(3):
            self.loader.sampler.set_epoch(epoch)
            for x in self.loader:
                self.model(x).sum().backward()


def main():
    dist.init_process_group("gloo")
    Builder(0).train()


if __name__ == "__main__":
    main()
"""


def test_a_seeding_no_code_calls_seeds_nothing(tmp_path):
    found = lint_tree(tmp_path, {"train.py": UNCALLED_SEED.replace("CALL", "# self._init_validation()")})
    assert not _codes(found, "DDP808")


def test_twin_the_seeding_called(tmp_path):
    body = UNCALLED_SEED.replace("CALL", "self._init_validation()")
    found = lint_tree(tmp_path, {"train.py": body})
    assert [f.location.line for f in _codes(found, "DDP808")] == [_line(body, "self.loader = DataLoader(")]


# -------------------------------------------------- a local class's step that only clips
# `clipper.step(master_params(optimizer))` every batch, of a class of the script's own that clips the
# gradients and steps nothing; the optimizer steps every K batches, with no no_sync
CLIPPED = """
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP


class Clipper:
    def __init__(self, max_norm):
        self.max_norm = max_norm

    def step(self, params):
        torch.nn.utils.clip_grad_norm_(params, self.max_norm)
        STEP


def master_params(optimizer):
    return [p for group in optimizer.param_groups for p in group["params"]]


def main(accum=4):
    dist.init_process_group("gloo")
    model = DDP(torch.nn.Linear(4, 1))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    clipper = Clipper(1.0)
    for step in range(100):
        loss = model(torch.randn(2, 4)).sum() / accum
        loss.backward()
        clipper.step(master_params(optimizer))
        if (step + 1) % accum == 0:
            optimizer.step()
            optimizer.zero_grad()


if __name__ == "__main__":
    main()
"""


def test_a_clipper_step_is_no_optimizer_step(tmp_path):
    body = CLIPPED.replace("STEP", "return None")
    found = lint_tree(tmp_path, {"train.py": body})
    assert [f.location.line for f in _codes(found, "DDP805")] == [_line(body, "loss.backward()")]


def test_twin_a_local_class_whose_step_steps_the_optimizer(tmp_path):
    body = CLIPPED.replace("STEP", "self.opt.step()").replace(
        "    def __init__(self, max_norm):\n        self.max_norm = max_norm",
        "    def __init__(self, max_norm, opt):\n        self.max_norm = max_norm\n        self.opt = opt").replace(
        "clipper = Clipper(1.0)", "clipper = Clipper(1.0, optimizer)")
    found = lint_tree(tmp_path, {"train.py": body})
    assert not _codes(found, "DDP805")


# -------------------------------------------------- a split shuffled by Python's own stream
# the script seeds torch alike on every rank but never Python's `random`, and a local helper
# `random.shuffle`s the file list before cutting it into the training split
SPLIT = """
import random
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, Dataset, DistributedSampler


class Files(Dataset):
    def __init__(self, files):
        self.files = files

    def __len__(self):
        return len(self.files)

    def __getitem__(self, i):
        return torch.full((4,), float(self.files[i]))


def split_list(items, ratio):
    random.shuffle(items)
    cut = int(len(items) * (1 - ratio))
    return items[:cut], items[cut:]


def make(factory, **kwargs):
    return factory(**kwargs)


def main():
    dist.init_process_group("gloo")
    SEED
    train, test = split_list(list(range(100)), 0.2)
    data = make(Files, files=train)
    sampler = DistributedSampler(data)
    loader = DataLoader(data, batch_size=8, sampler=sampler)
    model = DDP(torch.nn.Linear(4, 1))
    for epoch in range(3):
        sampler.set_epoch(epoch)
        for x in loader:
            model(x).sum().backward()


if __name__ == "__main__":
    main()
"""


def test_a_split_shuffled_by_a_stream_no_rank_seeds(tmp_path):
    body = SPLIT.replace("SEED", "torch.manual_seed(0)")
    found = lint_tree(tmp_path, {"train.py": body})
    assert [f.location.line for f in _codes(found, "DDP803")] == [_line(body, "sampler = DistributedSampler(data)")]


def test_twin_the_same_split_after_python_is_seeded_alike(tmp_path):
    found = lint_tree(tmp_path, {"train.py": SPLIT.replace("SEED", "torch.manual_seed(0)\n    random.seed(0)")})
    assert not _codes(found, "DDP803")


# -------------------------------------------------- an unwrapped FSDP model saved on the main process
# `accelerate launch --use_fsdp train.py`, then `if accelerator.is_main_process: net =
# accelerator.unwrap_model(net); net.save_pretrained(out)`: the unwrapped module's auto-wrapped
# FSDP units all-gather in state_dict(), which only the main process enters
FSDP_SAVE = """
import torch
from accelerate import Accelerator
from diffusers import UNet2DModel


def main(out="out"):
    accelerator = Accelerator()
    net = UNet2DModel()
    opt = torch.optim.AdamW(net.parameters())
    net, opt = accelerator.prepare(net, opt)
    for step in range(10):
        accelerator.backward(net(torch.randn(1, 3, 8, 8), 0).sample.sum())
        opt.step()
    accelerator.wait_for_everyone()
    if accelerator.is_main_process:
        net = accelerator.unwrap_model(net)
        SAVE


if __name__ == "__main__":
    main()
"""
FSDP_LAUNCH = "accelerate launch --use_fsdp --fsdp_offload_params false train.py\\n"


def test_an_unwrapped_fsdp_model_saved_on_the_main_process(tmp_path):
    body = FSDP_SAVE.replace("SAVE", "net.save_pretrained(out)")
    found = _codes(lint_tree(tmp_path, {"train.py": body, "train.sh": FSDP_LAUNCH}), "DDP801")
    assert [(f.location.line, f.severity.value) for f in found] == [(_line(body, "net.save_pretrained(out)"), "error")]


def test_twin_the_state_dict_gathered_on_every_process_first(tmp_path):
    body = FSDP_SAVE.replace("SAVE", "net.save_pretrained(out, state_dict=state)").replace(
        "    accelerator.wait_for_everyone()\n", "    accelerator.wait_for_everyone()\n"
        "    state = accelerator.get_state_dict(net)\n")
    found = _codes(lint_tree(tmp_path, {"train.py": body, "train.sh": FSDP_LAUNCH}), "DDP801")
    assert not found


# -------------------------------------------------- a save only what is on disk leads to
# `checkpoints = os.listdir(out)`, then `if len(checkpoints) > 0 and ...: accelerator.save_state()`
# on the main process of an FSDP launch: the hang rests on what an earlier run left
ON_DISK = """
import os
import torch
from accelerate import Accelerator


def main(out="out"):
    accelerator = Accelerator()
    model = torch.nn.Linear(4, 1)
    model = accelerator.prepare(model)
    if accelerator.is_main_process:
        checkpoints = os.listdir(out)
        if TEST:
            accelerator.save_state(os.path.join(out, "last"))


if __name__ == "__main__":
    main()
"""


def test_a_sharded_save_under_a_test_of_the_listed_files_is_a_warning(tmp_path):
    body = ON_DISK.replace("TEST", "len(checkpoints) > 0")
    found = _codes(lint_tree(tmp_path, {"train.py": body, "train.sh": FSDP_LAUNCH}), "DDP801")
    assert [f.severity.value for f in found] == ["warning"]
    assert "what is on disk" in found[0].message


def test_twin_the_same_save_under_no_such_test(tmp_path):
    body = ON_DISK.replace("TEST", "True")
    found = _codes(lint_tree(tmp_path, {"train.py": body, "train.sh": FSDP_LAUNCH}), "DDP801")
    assert [f.severity.value for f in found] == ["error"]


# -------------------------------------------------- Lightning's sanity check is no assumption
# a callback's `trainer.save_checkpoint()` under `trainer.is_global_zero and not
# trainer.sanity_checking`: false only in the check before training, on every rank alike
LIGHTNING_CKPT = """
import lightning.pytorch as pl
import torch


class Saver(pl.Callback):
    def on_validation_end(self, trainer, module):
        if trainer.is_global_zero and TEST:
            trainer.save_checkpoint("last.ckpt")


class Net(pl.LightningModule):
    def __init__(self):
        super().__init__()
        self.layer = torch.nn.Linear(4, 1)

    def training_step(self, batch, i):
        return self.layer(batch).sum()

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.1)


def main():
    trainer = pl.Trainer(accelerator="gpu", devices=2, strategy="ddp", callbacks=[Saver()])
    trainer.fit(Net(), torch.utils.data.DataLoader(torch.randn(64, 4), batch_size=8))


if __name__ == "__main__":
    main()
"""


def test_past_the_sanity_check_is_no_assumption(tmp_path):
    body = LIGHTNING_CKPT.replace("TEST", "not trainer.sanity_checking")
    found = _codes(lint_tree(tmp_path, {"train.py": body}), "DDP801")
    assert [(f.location.line, f.severity.value) for f in found] == \
        [(_line(body, 'trainer.save_checkpoint("last.ckpt")'), "error")]


def test_twin_another_state_test_stays_the_assumption(tmp_path):
    body = LIGHTNING_CKPT.replace("TEST", "trainer.current_epoch > 3")
    found = _codes(lint_tree(tmp_path, {"train.py": body}), "DDP801")
    assert [f.severity.value for f in found] == ["warning"]


# -------------------------------------------------- a switch every launch beside the script gives
# the rank-0 save helper runs only under `if args.keep:` (a store_true), and each launch script
# beside the training script passes --keep: the run as launched takes it
KEPT = """
import argparse
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP


def keep(model):
    if dist.get_rank() == 0:
        dist.barrier()


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--keep", action="store_true")
    args = p.parse_args()
    dist.init_process_group("gloo")
    model = DDP(torch.nn.Linear(4, 1))
    for step in range(10):
        model(torch.randn(2, 4)).sum().backward()
    if args.keep:
        keep(model)


if __name__ == "__main__":
    main()
"""


def test_a_switch_each_launch_gives_is_no_assumption(tmp_path):
    found = _codes(lint_tree(tmp_path, {"train.py": KEPT, "run.sh": "torchrun --nproc_per_node 2 train.py --keep\n"}),
                   "DDP801")
    assert [(f.location.line, f.severity.value) for f in found] == [(_line(KEPT, "dist.barrier()"), "error")]


def test_twin_a_switch_the_launch_leaves_off(tmp_path):
    found = _codes(lint_tree(tmp_path, {"train.py": KEPT, "run.sh": "torchrun --nproc_per_node 2 train.py\n"}),
                   "DDP801")
    assert "error" not in [f.severity.value for f in found]


def test_an_absent_relative_checkout_is_the_folder_above_the_script_too(tmp_path):
    script = CHECKOUT_SCRIPT.replace('"/home/someone/projects/myproj"', '"../../MyProject"')
    found = lint_tree(tmp_path, {"scripts/train.py": script, "utils/__init__.py": "",
                                 "utils/io.py": CHECKOUT_IO}, script="scripts/train.py")
    assert [f.location.line for f in _codes(found, "DDP806")] == [_line(CHECKOUT_IO, "torch.save(")]
