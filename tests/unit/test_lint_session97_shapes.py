"""Shapes from session 97 (holdout 136's leftovers and holdout 137's reading), each with its twin,
in our own words."""

from __future__ import annotations

from tests.unit.test_lint_session39_shapes import lint_tree
from tests.unit.test_lint_session61_shapes import _codes, _line

# ------------------------------------------------- a switch the launch script exports
# `use_store = int(os.environ.get("USE_STORE", 0))`, then `if use_store:` builds a shuffling
# DistributedSampler whose set_epoch is never called. The launch script exports USE_STORE=0 above
# the srun that runs the script: no launched run takes that side (no DDP804). Twins: the launch
# exports 1; the launch exports nothing (the user's environment decides); the script writes the
# variable itself; two launches that export it differently.
STORE = {
    "train.py": """
        import os
        import torch
        import torch.distributed as dist
        from torch.nn.parallel import DistributedDataParallel as DDP
        from torch.utils.data import DataLoader, DistributedSampler, TensorDataset


        def train_loader(data):
            use_store = int(os.environ.get("USE_STORE", 0))
            if use_store:
                sampler = DistributedSampler(data, shuffle=True)
                return DataLoader(data, sampler=sampler, batch_size=4)
            return DataLoader(data, sampler=DistributedSampler(data, shuffle=False), batch_size=4)


        def main():
            dist.init_process_group("gloo")
            data = TensorDataset(torch.zeros(16, 8))
            model = DDP(torch.nn.Linear(8, 1))
            loader = train_loader(data)
            for epoch in range(3):
                for (x,) in loader:
                    model(x).sum().backward()


        if __name__ == "__main__":
            main()
    """,
    "launch.sh": """
        #!/bin/bash
        export OMP_NUM_THREADS=4
        export USE_STORE=0 ## 1 to read the samples from the store
        srun -n 8 python ./train.py
    """,
}


def _store(tmp_path, **changed):
    return _codes(lint_tree(tmp_path, {**STORE, **changed}), "DDP804")


def test_switch_every_launch_exports_off(tmp_path):
    assert not _store(tmp_path)


def test_switch_the_launch_exports_on(tmp_path):
    assert _store(tmp_path, **{"launch.sh": STORE["launch.sh"].replace("USE_STORE=0", "USE_STORE=1")})


def test_switch_no_launch_exports(tmp_path):
    assert _store(tmp_path, **{"launch.sh": STORE["launch.sh"].replace("export USE_STORE=0", "")})


def test_switch_exported_for_the_command_alone(tmp_path):
    assert not _store(tmp_path, **{"launch.sh": "USE_STORE=0 torchrun --nproc_per_node 2 train.py\n"})


def test_switch_the_script_writes_itself(tmp_path):
    script = STORE["train.py"].replace('dist.init_process_group("gloo")',
                                       'os.environ["USE_STORE"] = "1"\n            dist.init_process_group("gloo")')
    assert _store(tmp_path, **{"train.py": script})


def test_switch_two_launches_export_differently(tmp_path):
    other = STORE["launch.sh"].replace("USE_STORE=0", "USE_STORE=1")
    assert _store(tmp_path, **{"launch_store.sh": other})


# ------------------------------------------------- a switch handed to the worker it spawns
# `distr = False` in the main block, `if distr: mp.spawn(main, args=(world, distr))` else a plain
# call; the worker joins the group through a set-up helper it calls under `if distr:`, and saves
# under `if not distr or rank == 0:`. The helper's one call sits under `distr`, so the distributed
# run is where `distr` holds, and there only rank 0 saves (no DDP806). Twin: the worker calls the
# helper on every path, so `distr` says nothing of the run, and `not distr` may hold on every rank.
SPAWNED_SWITCH = {
    "train.py": """
        import torch
        import torch.distributed as dist
        import torch.multiprocessing as mp
        from torch.nn.parallel import DistributedDataParallel as DDP


        def setup(rank, world_size):
            dist.init_process_group("gloo", rank=rank, world_size=world_size)


        def main(rank, world_size, distr):
            if distr:
                setup(rank, world_size)
            model = torch.nn.Linear(8, 1)
            if distr:
                model = DDP(model)
            opt = torch.optim.SGD(model.parameters(), lr=0.1)
            for step in range(3):
                model(torch.zeros(4, 8)).sum().backward()
                opt.step()
            if not distr or rank == 0:
                torch.save(model.state_dict(), "model.pt")


        if __name__ == "__main__":
            distr = False
            world_size = 2
            if distr:
                mp.spawn(main, args=(world_size, distr), nprocs=world_size)
            else:
                main(0, 1, distr)
    """,
}


def test_switch_the_set_up_helper_is_called_under(tmp_path):
    assert not _codes(lint_tree(tmp_path, SPAWNED_SWITCH), "DDP806")


def test_flag_the_set_up_helper_is_called_without(tmp_path):
    script = SPAWNED_SWITCH["train.py"].replace("            if distr:\n                setup(rank, world_size)",
                                                "            setup(rank, world_size)")
    assert script != SPAWNED_SWITCH["train.py"]
    assert _codes(lint_tree(tmp_path, {"train.py": script}), "DDP806")


# ------------------------------------------------- a factory's side no call hands the value for
# `make_attack(model, kind)` builds the early-stopping attack (a rank-local `break` before the
# backward through the DDP model: DDP809) only under `kind == "fool"`; every call hands it the
# --attack option (default "pgd", no launch changing it) or the constant "pgd": that attack is
# never built, and its loop never runs (no DDP809). Twins: a call hands "fool"; a launch script
# gives --attack fool; the factory is also handed on as a value (a caller the lint cannot see).
ATTACK = {
    "train.py": """
        import argparse
        import torch
        import torch.distributed as dist
        from torch.nn.parallel import DistributedDataParallel as DDP
        from torch.utils.data import DataLoader, DistributedSampler, TensorDataset
        from attacks import make_attack


        def main():
            parser = argparse.ArgumentParser()
            parser.add_argument("--attack", default="pgd", choices=["pgd", "fool"])
            args = parser.parse_args()
            dist.init_process_group("gloo")
            model = DDP(torch.nn.Linear(8, 3))
            data = TensorDataset(torch.zeros(16, 8), torch.zeros(16, dtype=torch.long))
            sampler = DistributedSampler(data)
            loader = DataLoader(data, sampler=sampler, batch_size=4)
            attack = make_attack(model, args.attack)
            probe = make_attack(model, "pgd")
            opt = torch.optim.SGD(model.parameters(), lr=0.1)
            for epoch in range(2):
                sampler.set_epoch(epoch)
                for x, y in loader:
                    x_adv = attack.perturb(x, y)
                    probe.perturb(x, y)
                    opt.zero_grad()
                    torch.nn.functional.cross_entropy(model(x_adv), y).backward()
                    opt.step()


        if __name__ == "__main__":
            main()
    """,
    "attacks.py": """
        import torch


        class FoolAttack:
            def __init__(self, model):
                self.model = model

            def perturb(self, x, y):
                x = x.clone().requires_grad_(True)
                for _ in range(5):
                    logits = self.model(x)
                    not_done = logits.argmax(1) == y
                    if not_done.sum() == 0:
                        break
                    logits.sum().backward()
                return x.detach()


        class PGDAttack:
            def __init__(self, model):
                self.model = model

            def perturb(self, x, y):
                x = x.clone().requires_grad_(True)
                for _ in range(5):
                    torch.nn.functional.cross_entropy(self.model(x), y).backward()
                return x.detach()


        def make_attack(model, kind):
            if kind == "fool":
                return FoolAttack(model)
            return PGDAttack(model)
    """,
}


def _attack(tmp_path, **changed):
    return _codes(lint_tree(tmp_path, {**ATTACK, **changed}), "DDP809")


def test_factory_side_no_call_hands_its_value(tmp_path):
    assert not _attack(tmp_path)


def test_factory_side_a_call_hands_its_value(tmp_path):
    script = ATTACK["train.py"].replace('make_attack(model, "pgd")', 'make_attack(model, "fool")')
    assert script != ATTACK["train.py"] and _attack(tmp_path, **{"train.py": script})


def test_factory_side_a_launch_gives_the_option(tmp_path):
    assert _attack(tmp_path, **{"run.sh": "torchrun --nproc_per_node 2 train.py --attack fool\n"})


def test_factory_also_handed_on_as_a_value(tmp_path):
    script = ATTACK["train.py"].replace("    attack = make_attack(", "    builders = [make_attack]\n            attack = make_attack(")
    assert script != ATTACK["train.py"] and _attack(tmp_path, **{"train.py": script})


# A rank handed as an option (`train(model, args.rank)`, --rank defaulting to 0): each process is
# handed its own, so `if rank == 0:` is a rank test, not a side every call settles (no DDP806).
HANDED_RANK = {
    "train.py": """
        import argparse
        import torch
        import torch.distributed as dist
        from torch.nn.parallel import DistributedDataParallel as DDP


        def train(model, rank):
            for step in range(3):
                model(torch.zeros(4, 8)).sum().backward()
                if rank == 0:
                    torch.save(model.state_dict(), "model.pt")


        if __name__ == "__main__":
            parser = argparse.ArgumentParser()
            parser.add_argument("--rank", type=int, default=0)
            parser.add_argument("--world-size", type=int, default=1)
            args = parser.parse_args()
            dist.init_process_group("gloo", rank=args.rank, world_size=args.world_size)
            train(DDP(torch.nn.Linear(8, 1)), args.rank)
    """,
}


def test_rank_handed_as_an_option_stays_a_rank_test(tmp_path):
    assert not _codes(lint_tree(tmp_path, HANDED_RANK), "DDP806")


# ------------------------------------------------- loaders in a dict read by the phase's key
# The fine-tuning tutorial's loop: `for phase in ["train", "val"]:` then `for x, y in
# dataloaders[phase]:`, the dict handed in as `{"train": train_loader, "val": val_loader}` and the
# backward under `if phase == "train":`. The train loader, with no sampler, trains on every rank
# (DDP802 at its line); the val loader is only evaluated (none at its line). Twin: the train loader
# gets a DistributedSampler.
PHASES = {
    "train.py": """
        import torch
        import torch.distributed as dist
        from torch.nn.parallel import DistributedDataParallel as DDP
        from torch.utils.data import DataLoader, DistributedSampler, TensorDataset


        def train_model(dataloaders, model, optimizer, epochs):
            for epoch in range(epochs):
                for phase in ["train", "val"]:
                    model.train(phase == "train")
                    for x, y in dataloaders[phase]:
                        optimizer.zero_grad()
                        loss = torch.nn.functional.mse_loss(model(x), y)
                        if phase == "train":
                            loss.backward()
                            optimizer.step()
            return model


        def main():
            dist.init_process_group("gloo")
            train_set = TensorDataset(torch.zeros(32, 8), torch.zeros(32, 1))
            val_set = TensorDataset(torch.zeros(8, 8), torch.zeros(8, 1))
            train_loader = DataLoader(train_set, batch_size=4, shuffle=True)
            val_loader = DataLoader(val_set, batch_size=4, shuffle=False)
            model = DDP(torch.nn.Linear(8, 1))
            optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
            dataloaders = {"train": train_loader, "val": val_loader}
            train_model(dataloaders, model, optimizer, 3)


        if __name__ == "__main__":
            main()
    """,
}


def test_loader_read_by_the_phase_key_trains(tmp_path):
    found = _codes(lint_tree(tmp_path, PHASES), "DDP802")
    assert [f.location.line for f in found] == [_line(PHASES["train.py"], "train_loader = DataLoader")]
    assert found[0].severity == "error"


def test_loader_read_by_the_phase_key_with_its_sampler(tmp_path):
    script = PHASES["train.py"].replace("batch_size=4, shuffle=True)", "batch_size=4, sampler=DistributedSampler(train_set))")
    assert script != PHASES["train.py"]
    assert not _codes(lint_tree(tmp_path, {"train.py": script}), "DDP802")


# ------------------------------------------------- a value reduced again just above its test
# `kl = out.mean()` in the batch loop (each rank's own), then `kl = accelerator.reduce(kl,
# reduction="mean")` after it and `if kl > 0.5: break`: at the test the name holds what every
# rank got back (no DDP809). Twin: the reduced value goes into another name, and the test reads
# the rank's own.
REDUCED_AGAIN = {
    "train.py": """
        import torch
        from accelerate import Accelerator
        from torch.utils.data import DataLoader, TensorDataset


        def main():
            accelerator = Accelerator()
            model = torch.nn.Linear(8, 1)
            optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
            loader = DataLoader(TensorDataset(torch.zeros(32, 8)), batch_size=4, shuffle=True)
            model, optimizer, loader = accelerator.prepare(model, optimizer, loader)
            for epoch in range(4):
                kl = torch.zeros(())
                for (x,) in loader:
                    out = model(x)
                    kl = out.mean().detach()
                    accelerator.backward(out.sum())
                    optimizer.step()
                    optimizer.zero_grad()
                kl = accelerator.reduce(kl, reduction="mean")
                if kl > 0.5:
                    break


        if __name__ == "__main__":
            main()
    """,
}


def test_value_reduced_again_above_its_test(tmp_path):
    assert not _codes(lint_tree(tmp_path, REDUCED_AGAIN), "DDP809")


def test_value_reduced_into_another_name(tmp_path):
    script = REDUCED_AGAIN["train.py"].replace("kl = accelerator.reduce(", "total = accelerator.reduce(")
    assert script != REDUCED_AGAIN["train.py"]
    assert _codes(lint_tree(tmp_path, {"train.py": script}), "DDP809")


# ------------------------------------------------- an early return before a collective of its own
# The module's forward returns a fresh zero where this rank's similarities are NaN, before it
# all-gathers its features into the queue: that rank skips the all_gather the others wait in
# (DDP809). So does a return of `loss * 0.0`, which still passes the backward: the all_gather is
# skipped all the same. Twin: the gather comes first, and the zero made of the loss is returned
# after it (the backward runs on every rank).
QUEUE = {
    "train.py": """
        import torch
        import torch.distributed as dist
        from torch.nn.parallel import DistributedDataParallel as DDP
        from torch.utils.data import DataLoader, DistributedSampler, TensorDataset


        def gather_all(tensor):
            parts = [torch.zeros_like(tensor) for _ in range(dist.get_world_size())]
            dist.all_gather(parts, tensor)
            return torch.cat(parts)


        class Contrast(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.proj = torch.nn.Linear(8, 4)
                self.register_buffer("queue", torch.zeros(16, 4))

            def forward(self, x):
                feat = self.proj(x)
                sim = feat @ self.queue.t()
                loss = -torch.log_softmax(sim, dim=1).mean()
                if torch.isnan(sim).any() or torch.isnan(loss):
                    return torch.tensor(0.)
                self.queue = gather_all(feat.detach())[:16]
                return loss


        def main():
            dist.init_process_group("gloo")
            data = TensorDataset(torch.zeros(32, 8))
            sampler = DistributedSampler(data)
            loader = DataLoader(data, sampler=sampler, batch_size=4)
            model = DDP(Contrast())
            opt = torch.optim.SGD(model.parameters(), lr=0.1)
            for epoch in range(2):
                sampler.set_epoch(epoch)
                for (x,) in loader:
                    loss = model(x)
                    opt.zero_grad()
                    loss.backward()
                    opt.step()


        if __name__ == "__main__":
            main()
    """,
}


def _queue(tmp_path, script):
    return _codes(lint_tree(tmp_path, {"train.py": script}), "DDP809")


def test_fresh_zero_returned_before_the_gather(tmp_path):
    assert _queue(tmp_path, QUEUE["train.py"])


def test_zero_of_the_loss_returned_before_the_gather(tmp_path):
    script = QUEUE["train.py"].replace("return torch.tensor(0.)", "return loss * 0.0")
    assert script != QUEUE["train.py"] and _queue(tmp_path, script)


def test_zero_of_the_loss_returned_after_the_gather(tmp_path):
    gather = "                self.queue = gather_all(feat.detach())[:16]\n"
    script = QUEUE["train.py"].replace("return torch.tensor(0.)", "return loss * 0.0").replace(gather, "")
    script = script.replace("                if torch.isnan(sim)", gather + "                if torch.isnan(sim)")
    assert script.count("gather_all(feat") == 1 and not _queue(tmp_path, script)


# ------------------------------------------------- a manual backward on one side of a value test
# A LightningModule with manual optimization: `if loss != torch.tensor(0.0): self.manual_backward(
# loss); opt.step()` - a rank whose batch gives a zero loss skips the backward whose gradients DDP
# all-reduces (DDP809). Twin: the other side backpropagates a zero made of the loss.
MANUAL_SIDE = {
    "train.py": """
        import torch
        import pytorch_lightning as pl
        from torch.utils.data import DataLoader, TensorDataset


        class Model(pl.LightningModule):
            def __init__(self):
                super().__init__()
                self.automatic_optimization = False
                self.net = torch.nn.Linear(8, 1)

            def training_step(self, batch, batch_idx):
                opt = self.optimizers()
                opt.zero_grad()
                (x,) = batch
                loss = self.net(x).pow(2).mean()
                if loss != torch.tensor(0.0):
                    self.manual_backward(loss)
                    opt.step()
                else:
                    print("zero loss, step skipped")

            def configure_optimizers(self):
                return torch.optim.SGD(self.parameters(), lr=0.1)


        if __name__ == "__main__":
            loader = DataLoader(TensorDataset(torch.zeros(32, 8)), batch_size=4, shuffle=True)
            trainer = pl.Trainer(accelerator="cpu", devices=2, strategy="ddp", max_epochs=2)
            trainer.fit(Model(), loader)
    """,
}


def test_manual_backward_on_one_side_of_a_value_test(tmp_path):
    assert _codes(lint_tree(tmp_path, MANUAL_SIDE), "DDP809")


def test_manual_backward_on_both_sides_of_a_value_test(tmp_path):
    script = MANUAL_SIDE["train.py"].replace('print("zero loss, step skipped")', "self.manual_backward(loss * 0.0)")
    assert script != MANUAL_SIDE["train.py"]
    assert not _codes(lint_tree(tmp_path, {"train.py": script}), "DDP809")


# A loss helper returning a fresh zero before it runs the DDP forward (`return torch.tensor(0.0)`
# beside `return torch.mean(out ** 2)`): both read the module `torch`, but share no result - the
# rank that returns skips the forward and the gradient all-reduce (DDP809). Twin: the forward
# comes first and the test reads its output.
FRESH_ZERO = {
    "train.py": """
        import torch
        import torch.distributed as dist
        from torch.nn.parallel import DistributedDataParallel as DDP
        from torch.utils.data import DataLoader, DistributedSampler, TensorDataset


        def compute_loss(model, x):
            if torch.isnan(x).any():
                return torch.tensor(0.0, requires_grad=True)
            out = model(x)
            return torch.mean(out ** 2)


        def main():
            dist.init_process_group("gloo")
            data = TensorDataset(torch.zeros(32, 8))
            sampler = DistributedSampler(data)
            loader = DataLoader(data, sampler=sampler, batch_size=4)
            model = DDP(torch.nn.Linear(8, 1))
            opt = torch.optim.SGD(model.parameters(), lr=0.1)
            for epoch in range(2):
                sampler.set_epoch(epoch)
                for (x,) in loader:
                    loss = compute_loss(model, x)
                    opt.zero_grad()
                    loss.backward()
                    opt.step()


        if __name__ == "__main__":
            main()
    """,
}


def test_fresh_zero_returned_before_the_forward(tmp_path):
    assert _codes(lint_tree(tmp_path, FRESH_ZERO), "DDP809")


def test_zero_of_the_output_returned_after_the_forward(tmp_path):
    script = FRESH_ZERO["train.py"].replace(
        "            if torch.isnan(x).any():\n                return torch.tensor(0.0, requires_grad=True)\n            out = model(x)\n",
        "            out = model(x)\n            if torch.isnan(out).any():\n                return out.sum() * 0.0\n")
    assert script != FRESH_ZERO["train.py"]
    assert not _codes(lint_tree(tmp_path, {"train.py": script}), "DDP809")


# ------------------------------------------------- a split's part handed to the dataset class
# At import time, `split = data_all.train_test_split(train_size=0.9)` with no seed=, then
# `PairDataset(split["train"])` handed to the Trainer: each rank draws its own split before the
# Trainer's sampler shards it (DDP803), also through `train = split["train"]` first. Twin: the
# split takes seed=7.
SPLIT_PART = {
    "finetune.py": """
        import torch
        from datasets import load_dataset
        from transformers import AutoModelForSequenceClassification, Trainer, TrainingArguments, HfArgumentParser


        class PairDataset(torch.utils.data.Dataset):
            def __init__(self, rows):
                self.rows = rows

            def __len__(self):
                return len(self.rows)

            def __getitem__(self, i):
                return {"input_ids": torch.tensor(self.rows[i]["ids"]), "labels": torch.tensor(self.rows[i]["y"])}


        data_all = load_dataset("csv", data_files="pairs.csv", split="train")
        split = data_all.train_test_split(train_size=0.9)
        train_dataset = PairDataset(split["train"])
        val_dataset = PairDataset(split["test"])


        def main():
            (args,) = HfArgumentParser(TrainingArguments).parse_args_into_dataclasses()
            model = AutoModelForSequenceClassification.from_pretrained("bert-base-uncased", num_labels=1)
            trainer = Trainer(model=model, args=args, train_dataset=train_dataset, eval_dataset=val_dataset)
            trainer.train()


        if __name__ == "__main__":
            main()
    """,
}


def _split(tmp_path, script):
    return _codes(lint_tree(tmp_path, {"finetune.py": script}, "finetune.py"), "DDP803")


def test_split_part_handed_to_the_dataset_class(tmp_path):
    assert _split(tmp_path, SPLIT_PART["finetune.py"])


def test_split_part_named_before_the_dataset_class(tmp_path):
    script = SPLIT_PART["finetune.py"].replace('train_dataset = PairDataset(split["train"])',
                                               'train = split["train"]\n        train_dataset = PairDataset(train)')
    assert script != SPLIT_PART["finetune.py"] and _split(tmp_path, script)


def test_split_part_of_a_seeded_split(tmp_path):
    script = SPLIT_PART["finetune.py"].replace("train_size=0.9)", "train_size=0.9, seed=7)")
    assert script != SPLIT_PART["finetune.py"] and not _split(tmp_path, script)


# ------------------------------------------------- registries kept as class attributes
# `LoaderFactory.builders[args.loader].build(args)`, with `builders: Dict[str, Any] = {"plain":
# PlainBuilder}` in the class body, builds a loader over a shuffling DistributedSampler; the solver
# comes from `SolverFactory.solvers[args.solver](loader, model)`, and its epoch loop sets
# `self.loader.epoch = epoch` - an attribute of the DataLoader the sampler never reads (DDP804).
# Twin: the loop calls `self.loader.sampler.set_epoch(epoch)`.
CLASS_TABLES = {
    "train.py": """
        import argparse
        import torch
        import torch.distributed as dist
        from torch.nn.parallel import DistributedDataParallel as DDP
        from data.factory import LoaderFactory
        from solvers import SolverFactory


        def main():
            parser = argparse.ArgumentParser()
            parser.add_argument("--loader", default="plain")
            parser.add_argument("--solver", default="base")
            args = parser.parse_args()
            dist.init_process_group("gloo")
            model = DDP(torch.nn.Linear(8, 1))
            loader = LoaderFactory.get_loader(args)
            solver = SolverFactory.solvers[args.solver](loader, model)
            solver.train(3)


        if __name__ == "__main__":
            main()
    """,
    "data/__init__.py": """

    """,
    "data/factory.py": """
        from typing import Any, Dict
        from data.plain import PlainBuilder


        class LoaderFactory:
            builders: Dict[str, Any] = {"plain": PlainBuilder}

            @staticmethod
            def get_loader(args):
                return LoaderFactory.builders[args.loader].build(args)
    """,
    "data/plain.py": """
        import torch
        from torch.utils.data import DataLoader, DistributedSampler, TensorDataset


        class PlainBuilder:
            @staticmethod
            def build(args):
                data = TensorDataset(torch.zeros(32, 8))
                return DataLoader(data, sampler=DistributedSampler(data, shuffle=True), batch_size=4)
    """,
    "solvers.py": """
        import torch


        class BaseSolver:
            def __init__(self, loader, model):
                self.loader = loader
                self.model = model
                self.opt = torch.optim.SGD(model.parameters(), lr=0.1)

            def train(self, epochs):
                for epoch in range(epochs):
                    self.loader.epoch = epoch
                    for (x,) in self.loader:
                        self.opt.zero_grad()
                        self.model(x).sum().backward()
                        self.opt.step()


        class SolverFactory:
            solvers = {"base": BaseSolver}
    """,
}


def test_registries_kept_as_class_attributes(tmp_path):
    found = _codes(lint_tree(tmp_path, CLASS_TABLES), "DDP804")
    assert len(found) == 1 and found[0].location.file.endswith("data/plain.py")


def test_registries_kept_as_class_attributes_with_set_epoch(tmp_path):
    solvers = CLASS_TABLES["solvers.py"].replace("self.loader.epoch = epoch", "self.loader.sampler.set_epoch(epoch)")
    assert solvers != CLASS_TABLES["solvers.py"]
    assert not _codes(lint_tree(tmp_path, {**CLASS_TABLES, "solvers.py": solvers}), "DDP804")


# ------------------------------------------------- a step closure's backward on the settled side
# A step closure handed to a timer helper backpropagates on two sides of `if use_bf16:` (the
# scaler's backward, or the plain one), `use_bf16 = args["meta"]["use_bf16"]` of the YAML config
# the main block reads: the finding is at the backward of the side the config takes (`use_bf16:
# true`: the scaler's). Twins: the config says false (the plain backward); no config beside the
# script (the loop's call, which names both).
BF16_STEP = {
    "train.py": """
        import yaml
        import torch
        import torch.distributed as dist
        from torch.nn.parallel import DistributedDataParallel as DDP
        from torch.utils.data import DataLoader, DistributedSampler, TensorDataset


        def timed(closure):
            result = closure()
            return result


        def main(args):
            dist.init_process_group("gloo")
            use_bf16 = args["meta"]["use_bf16"]
            accumulation_steps = args["optimization"]["accumulation_steps"]
            data = TensorDataset(torch.zeros(32, 8))
            sampler = DistributedSampler(data)
            loader = DataLoader(data, sampler=sampler, batch_size=4)
            model = DDP(torch.nn.Linear(8, 1))
            optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
            scaler = torch.cuda.amp.GradScaler() if use_bf16 else None
            for epoch in range(2):
                sampler.set_epoch(epoch)
                for itr, (x,) in enumerate(loader):
                    def train_step():
                        loss = model(x).sum() / accumulation_steps
                        if use_bf16:
                            scaler.scale(loss).backward()
                        else:
                            loss.backward()
                        if (itr + 1) % accumulation_steps == 0:
                            optimizer.step()
                            optimizer.zero_grad()
                        return float(loss)
                    timed(train_step)


        if __name__ == "__main__":
            with open("configs/run.yaml") as f:
                params = yaml.safe_load(f)
            main(params)
    """,
    "configs/run.yaml": """
        meta:
          use_bf16: true
        optimization:
          accumulation_steps: 8
    """,
}


def _bf16_line(tmp_path, files):
    found = _codes(lint_tree(tmp_path, files), "DDP805")
    assert len(found) == 1
    return found[0].location.line


def test_step_closure_backward_on_the_side_the_config_takes(tmp_path):
    assert _bf16_line(tmp_path, BF16_STEP) == _line(BF16_STEP["train.py"], "scaler.scale(loss).backward()")


def test_step_closure_backward_on_the_other_side(tmp_path):
    config = BF16_STEP["configs/run.yaml"].replace("use_bf16: true", "use_bf16: false")
    assert _bf16_line(tmp_path, {**BF16_STEP, "configs/run.yaml": config}) == \
        _line(BF16_STEP["train.py"], "                loss.backward()")


def test_step_closure_backward_without_a_config(tmp_path):
    assert _bf16_line(tmp_path, {"train.py": BF16_STEP["train.py"]}) == \
        _line(BF16_STEP["train.py"], "timed(train_step)")


# ------------------------------------------------- a rank-named folder set on the options namespace
# main sets `config.root_dir = os.path.join(config.log_dir, f"run_{config.world_rank}")` (the rank
# from dist.get_rank()) and `config.model_dir` under it, then hands the config on: to a builder that
# hands it to a class writing `buffers.pt` into `config.root_dir`, and `model_dir=config.model_dir`
# to the training loop's checkpoint folder. Each rank writes its own files (no DDP806). Twin: the
# folder holds no rank.
RANK_FOLDER = {
    "train.py": """
        import argparse
        import os
        import torch.distributed as dist
        from runner import experiment


        def main():
            parser = argparse.ArgumentParser()
            parser.add_argument("--log_dir", default="logs")
            config = parser.parse_args()
            dist.init_process_group("gloo")
            config.world_rank = dist.get_rank()
            config.root_dir = os.path.join(config.log_dir, f"run_{config.world_rank}")
            config.model_dir = os.path.join(config.root_dir, "models")
            experiment(config)


        if __name__ == "__main__":
            main()
    """,
    "runner.py": """
        import os
        import torch
        from torch.nn.parallel import DistributedDataParallel as DDP


        class Buffers:
            def __init__(self, log_dir):
                torch.save({"scale": 1.0}, os.path.join(log_dir, "buffers.pt"))


        class Simulator:
            def __init__(self, config):
                self.buffers = Buffers(log_dir=config.root_dir)


        def build(config):
            return Simulator(config)


        def train(model, model_dir, prefix=""):
            postfixed = os.path.join(model_dir, prefix)
            checkpoints = os.path.join(postfixed, "checkpoints")
            for epoch in range(2):
                model(torch.zeros(4, 4)).sum().backward()
                torch.save(model.state_dict(), os.path.join(checkpoints, "last.pth"))


        def experiment(config):
            build(config)
            model = DDP(torch.nn.Linear(4, 1))
            train(model, model_dir=config.model_dir)
    """,
}


def test_rank_folder_set_on_the_namespace_and_handed_on(tmp_path):
    assert not _codes(lint_tree(tmp_path, RANK_FOLDER), "DDP806")


def test_shared_folder_set_on_the_namespace_and_handed_on(tmp_path):
    script = RANK_FOLDER["train.py"].replace('f"run_{config.world_rank}"', '"run"')
    assert script != RANK_FOLDER["train.py"]
    assert len(_codes(lint_tree(tmp_path, {**RANK_FOLDER, "train.py": script}), "DDP806")) == 2


# ------------------------------------------------- values drawn for simulated items, no items picked
# A simulated dataset draws each item's parameters with `np.random.choice(means, size=(n, 2, 3))`,
# unseeded: an array of values from a list of numbers, not a set of items picked (no DDP803). Twin:
# `np.random.choice(4 * n, size=n, replace=False)` picks which items it keeps (DDP803).
SIMULATED = {
    "train.py": """
        import numpy as np
        import torch
        import torch.distributed as dist
        from torch.nn.parallel import DistributedDataParallel as DDP
        from torch.utils.data import DataLoader, Dataset, DistributedSampler


        class Simulated(Dataset):
            def __init__(self, n, means):
                self.n = n
                drawn = np.random.choice(means, size=(n, 2, 3))
                self.params = torch.tensor(drawn).float()

            def __len__(self):
                return self.n

            def __getitem__(self, idx):
                return self.params[idx].flatten()


        def main():
            dist.init_process_group("gloo")
            data = Simulated(64, [0.5, 1.0, 2.0])
            sampler = DistributedSampler(data)
            loader = DataLoader(data, sampler=sampler, batch_size=8)
            model = DDP(torch.nn.Linear(6, 1))
            for epoch in range(2):
                sampler.set_epoch(epoch)
                for x in loader:
                    model(x).sum().backward()


        if __name__ == "__main__":
            main()
    """,
}


def test_values_drawn_for_simulated_items(tmp_path):
    assert not _codes(lint_tree(tmp_path, SIMULATED), "DDP803")


def test_items_picked_by_an_unseeded_choice(tmp_path):
    script = SIMULATED["train.py"].replace(
        "drawn = np.random.choice(means, size=(n, 2, 3))\n                self.params = torch.tensor(drawn).float()",
        "keep = np.random.choice(4 * n, size=n, replace=False)\n                self.params = torch.randn(4 * n, 2, 3)[keep]")
    assert script != SIMULATED["train.py"]
    assert _codes(lint_tree(tmp_path, {"train.py": script}), "DDP803")


# ------------------------------------------------- a launcher class building its command in pieces
# run_ddp.py's Runner starts `["torchrun", ..., script]` and adds the options with
# `self.cmd.extend(["--accum_iter", "1"])`, the script named where the runner is made: the launch
# gives --accum_iter 1, so the step every pass accumulates nothing (no DDP805). Twins: the runner
# gives 4 (DDP805); no runner (DDP805, resting on the option being raised).
RUNNER = {
    "train.py": """
        import argparse
        import torch
        import torch.distributed as dist
        from torch.nn.parallel import DistributedDataParallel as DDP
        from torch.utils.data import DataLoader, DistributedSampler, TensorDataset


        def main():
            parser = argparse.ArgumentParser()
            parser.add_argument("--accum_iter", type=int, default=1)
            args = parser.parse_args()
            dist.init_process_group("gloo")
            data = TensorDataset(torch.zeros(32, 8))
            sampler = DistributedSampler(data)
            loader = DataLoader(data, sampler=sampler, batch_size=4)
            model = DDP(torch.nn.Linear(8, 1))
            opt = torch.optim.SGD(model.parameters(), lr=0.1)
            for epoch in range(2):
                sampler.set_epoch(epoch)
                for i, (x,) in enumerate(loader):
                    (model(x).sum() / args.accum_iter).backward()
                    if (i + 1) % args.accum_iter == 0:
                        opt.step()
                        opt.zero_grad()


        if __name__ == "__main__":
            main()
    """,
    "run_ddp.py": """
        import subprocess


        class Runner:
            def __init__(self, script):
                self.cmd = ["torchrun", "--standalone", "--nproc_per_node", "2", script]

            def set_up_options(self):
                self.cmd.extend(["--accum_iter", "1"])

            def run(self):
                subprocess.run(self.cmd, check=True)


        if __name__ == "__main__":
            runner = Runner("train.py")
            runner.set_up_options()
            runner.run()
    """,
}


def test_launcher_class_giving_the_option_as_one(tmp_path):
    assert not _codes(lint_tree(tmp_path, RUNNER), "DDP805")


def test_launcher_class_giving_the_option_above_one(tmp_path):
    runner = RUNNER["run_ddp.py"].replace('"--accum_iter", "1"', '"--accum_iter", "4"')
    assert runner != RUNNER["run_ddp.py"]
    assert _codes(lint_tree(tmp_path, {**RUNNER, "run_ddp.py": runner}), "DDP805")


def test_no_launcher_class(tmp_path):
    assert _codes(lint_tree(tmp_path, {"train.py": RUNNER["train.py"]}), "DDP805")


# ------------------------------------------------- an epoch read back from a checkpoint
# `checkpoint = torch.load("last.pth", map_location={"cuda:0": f"cuda:{rank}"})`, then the epochs
# counted from `checkpoint["epoch"]` name the saved files: the map_location only places the loaded
# tensors, so the epoch is every rank's and every rank writes `model_{epoch}.pth` (DDP806). Twin:
# the file's name holds the rank.
RESUMED_EPOCH = {
    "train.py": """
        import torch
        import torch.distributed as dist
        from torch.nn.parallel import DistributedDataParallel as DDP


        def save(model, epoch):
            torch.save(model.module.state_dict(), f"model_{epoch}.pth")


        def main():
            dist.init_process_group("gloo")
            rank = dist.get_rank()
            model = DDP(torch.nn.Linear(4, 1))
            checkpoint = torch.load("last.pth", map_location={"cuda:0": f"cuda:{rank}"})
            epoch = checkpoint["epoch"]
            while epoch < 3:
                model(torch.zeros(2, 4)).sum().backward()
                save(model, epoch)
                epoch += 1


        if __name__ == "__main__":
            main()
    """,
}


def test_epoch_read_back_from_a_checkpoint_names_no_rank(tmp_path):
    assert _codes(lint_tree(tmp_path, RESUMED_EPOCH), "DDP806")


def test_rank_in_the_saved_files_name(tmp_path):
    script = RESUMED_EPOCH["train.py"].replace("        save(model, epoch)", "        save(model, f\"{epoch}_{rank}\")")
    assert script != RESUMED_EPOCH["train.py"]
    assert not _codes(lint_tree(tmp_path, {"train.py": script}), "DDP806")


# ------------------------------------------------- a seeding helper called with the rank left out
# `def random_seed(seed=42, rank=0): np.random.seed(seed + rank)`, called as `random_seed(args.seed)`
# before the dataset picks its subset with `np.random.choice(...)`, and with the rank only after:
# every rank picks the same subset (no DDP803). Twin: the first call hands the rank too.
SEED_HELPER = {
    "train.py": """
        import argparse
        import random
        import numpy as np
        import torch
        import torch.distributed as dist
        from torch.nn.parallel import DistributedDataParallel as DDP
        from torch.utils.data import DataLoader, DistributedSampler, Subset, TensorDataset


        def random_seed(seed=42, rank=0):
            torch.manual_seed(seed + rank)
            np.random.seed(seed + rank)
            random.seed(seed + rank)


        def build_dataset(sample):
            dataset = TensorDataset(torch.zeros(1000, 8))
            picked = np.random.choice(len(dataset), min(sample, len(dataset)), replace=False)
            return Subset(dataset, picked)


        def main():
            parser = argparse.ArgumentParser()
            parser.add_argument("--seed", type=int, default=42)
            args = parser.parse_args()
            dist.init_process_group("gloo")
            args.rank = dist.get_rank()
            random_seed(args.seed)
            dataset = build_dataset(512)
            loader = DataLoader(dataset, batch_size=8, sampler=DistributedSampler(dataset, shuffle=False))
            random_seed(args.seed, args.rank)
            model = DDP(torch.nn.Linear(8, 1))
            for (x,) in loader:
                model(x).sum().backward()


        if __name__ == "__main__":
            main()
    """,
}


def test_seeding_helper_called_with_the_rank_left_out(tmp_path):
    assert not _codes(lint_tree(tmp_path, SEED_HELPER), "DDP803")


def test_seeding_helper_handed_the_rank_before_the_pick(tmp_path):
    script = SEED_HELPER["train.py"].replace("random_seed(args.seed)\n", "random_seed(args.seed, args.rank)\n", 1)
    assert script != SEED_HELPER["train.py"]
    assert _codes(lint_tree(tmp_path, {"train.py": script}), "DDP803")


# ------------------------------------------------- an accumulation flag from a record's field at 1
# `if_accum_grad = (iteration % cfg.grad_accum_iters) != 0` handed to a step helper that steps
# under `if not if_accum_grad:`, the config a namedtuple a local factory builds with its
# `grad_accum_iters=1` default, which no call changes: the flag is never set, the optimizer steps
# every pass (no DDP805). Twin: the factory is handed 4.
RECORD_PERIOD = {
    "train.py": """
        from collections import namedtuple
        import torch
        import torch.distributed as dist
        from torch.nn.parallel import DistributedDataParallel as DDP
        from torch.utils.data import DataLoader, DistributedSampler, TensorDataset

        Config = namedtuple("Config", ["lr", "grad_accum_iters"])


        def make_config(lr, grad_accum_iters=1):
            return Config(lr=lr, grad_accum_iters=grad_accum_iters)


        def train_one_step(model, x, optimizer, if_accum_grad=False):
            loss = model(x).sum()
            loss.backward()
            if not if_accum_grad:
                optimizer.step()
                optimizer.zero_grad()
            return loss


        def train(cfg, model, loader, sampler):
            optimizer = torch.optim.SGD(model.parameters(), lr=cfg.lr)
            iteration = 0
            for epoch in range(2):
                sampler.set_epoch(epoch)
                for (x,) in loader:
                    iteration += 1
                    if_accum_grad = (iteration % cfg.grad_accum_iters) != 0
                    train_one_step(model, x, optimizer, if_accum_grad)


        def main():
            dist.init_process_group("gloo")
            data = TensorDataset(torch.zeros(32, 8))
            sampler = DistributedSampler(data)
            loader = DataLoader(data, sampler=sampler, batch_size=4)
            train(make_config(0.1), DDP(torch.nn.Linear(8, 1)), loader, sampler)


        if __name__ == "__main__":
            main()
    """,
}


def test_accumulation_flag_from_a_record_field_at_one(tmp_path):
    assert not _codes(lint_tree(tmp_path, RECORD_PERIOD), "DDP805")


def test_accumulation_flag_from_a_record_field_at_four(tmp_path):
    script = RECORD_PERIOD["train.py"].replace("make_config(0.1)", "make_config(0.1, grad_accum_iters=4)")
    assert script != RECORD_PERIOD["train.py"]
    assert _codes(lint_tree(tmp_path, {"train.py": script}), "DDP805")


# ------------------------------------------------- a period handed down from a runner's property
# The inner loop's `accum_grad_iters=1` parameter is handed the runner's property, which reads
# `int(self.config.run_cfg.get("accum_grad_iters", 1))`, and the YAML config sets
# `accum_grad_iters: 1`: the optimizer steps every pass (no DDP805). Twin: the config sets 4.
RUNNER_PERIOD = {
    "train.py": """
        import yaml
        import torch
        import torch.distributed as dist
        from torch.nn.parallel import DistributedDataParallel as DDP
        from torch.utils.data import DataLoader, DistributedSampler, TensorDataset


        class Config:
            def __init__(self, path):
                with open(path) as f:
                    self.run_cfg = yaml.safe_load(f)["run"]


        def inner_loop(model, loader, optimizer, accum_grad_iters=1):
            for i, (x,) in enumerate(loader):
                loss = model(x).sum() / accum_grad_iters
                loss.backward()
                if (i + 1) % accum_grad_iters == 0:
                    optimizer.step()
                    optimizer.zero_grad()


        class Runner:
            def __init__(self, config, model, loader):
                self.config = config
                self.model = model
                self.loader = loader
                self.optimizer = torch.optim.SGD(model.parameters(), lr=0.1)

            @property
            def accum_grad_iters(self):
                return int(self.config.run_cfg.get("accum_grad_iters", 1))

            def train_epoch(self):
                inner_loop(self.model, self.loader, self.optimizer, accum_grad_iters=self.accum_grad_iters)


        def main():
            dist.init_process_group("gloo")
            data = TensorDataset(torch.zeros(32, 8))
            sampler = DistributedSampler(data)
            loader = DataLoader(data, sampler=sampler, batch_size=4)
            runner = Runner(Config("configs/train.yaml"), DDP(torch.nn.Linear(8, 1)), loader)
            for epoch in range(2):
                sampler.set_epoch(epoch)
                runner.train_epoch()


        if __name__ == "__main__":
            main()
    """,
    "configs/train.yaml": """
        run:
          accum_grad_iters: 1
          lr: 0.1
    """,
}


def test_period_handed_down_from_a_runner_property_at_one(tmp_path):
    assert not _codes(lint_tree(tmp_path, RUNNER_PERIOD), "DDP805")


def test_period_handed_down_from_a_runner_property_at_four(tmp_path):
    config = RUNNER_PERIOD["configs/train.yaml"].replace("accum_grad_iters: 1", "accum_grad_iters: 4")
    assert _codes(lint_tree(tmp_path, {**RUNNER_PERIOD, "configs/train.yaml": config}), "DDP805")
