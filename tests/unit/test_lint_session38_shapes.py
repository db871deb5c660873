"""Shapes from session 38 (holdout 43, read after its unread score). Each with its twin, written
in our own words."""

from __future__ import annotations

from tests.unit.test_lint_round17_shapes import lint_plain
from tests.unit.test_lint_round50_shapes import at, line_of

# -------------------------------------------------- a builder that refuses the distributed run
# (`if is_distributed(): raise NotImplementedError(...)` first: what follows, and the loaders the
# helpers it calls build, run only in a process that joined no group)
REFUSING_DATA = """import torch.distributed as dist
from torch.utils.data import DataLoader


def is_distributed():
    return dist.is_available() and dist.is_initialized()


def get_plain(ds):
{guard}
    train_loader = DataLoader(ds, batch_size=8, shuffle=True)  # the plain loader
    return train_loader
"""
PICKS_A_BUILDER = """
import os
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler
from loaders import get_plain


def get_sharded(ds):
    return DataLoader(ds, batch_size=8, sampler=DistributedSampler(ds))


def main():
    dist.init_process_group("gloo")
    ds = TensorDataset(torch.randn(64, 4), torch.randn(64, 1))
    loader = {"plain": get_plain, "sharded": get_sharded}[os.environ.get("KIND", "sharded")](ds)
    model = DDP(torch.nn.Linear(4, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for epoch in range(2):
        loader.sampler.set_epoch(epoch)
        for x, y in loader:
            opt.zero_grad()
            torch.nn.functional.mse_loss(model(x), y).backward()
            opt.step()


if __name__ == "__main__":
    main()
"""


def test_a_loader_past_a_refusal_of_the_distributed_run_is_one_process_s(tmp_path):
    data = REFUSING_DATA.replace("{guard}", '    if is_distributed():\n        raise NotImplementedError("no DDP")')
    assert at(lint_plain(tmp_path, PICKS_A_BUILDER, loaders=data), "DDP802") == []


def test_its_twin_without_the_refusal(tmp_path):
    data = REFUSING_DATA.replace("{guard}", "    pass")
    assert at(lint_plain(tmp_path, PICKS_A_BUILDER, loaders=data), "DDP802") == [
        (line_of(data, "the plain loader"), "error")]


def test_a_refusal_of_the_one_process_run_leaves_the_loader_to_the_ranks(tmp_path):
    data = REFUSING_DATA.replace("{guard}", '    if not is_distributed():\n        raise RuntimeError("launch with torchrun")')
    assert at(lint_plain(tmp_path, PICKS_A_BUILDER, loaders=data), "DDP802") == [
        (line_of(data, "the plain loader"), "error")]


# -------------------------------------------------- rank 0 builds a file the first run lacks
FIRST_RUN = """
import os
import torch
import torch.distributed as dist


def build_vocab():
    words = sorted(set(open("corpus.txt").read().split()))
    dist.barrier()  # the helper's barrier
    return words


def main():
    dist.init_process_group("gloo")
{outer}
        if dist.get_rank() == 0:
            build_vocab()  # rank 0's build
    dist.barrier()


if __name__ == "__main__":
    main()
"""


def test_a_rank_zero_collective_under_a_test_of_the_disk_is_a_warning(tmp_path):
    source = FIRST_RUN.replace("{outer}", '    if not os.path.exists("vocab.txt"):')
    found = [f for f in lint_plain(tmp_path, source) if f.code == "DDP801"]
    assert [(f.location.line, f.severity.value) for f in found] == [(line_of(source, "the helper's barrier"), "warning")]
    assert "what is on disk" in found[0].message


def test_its_twin_under_a_test_that_holds_on_every_run_is_an_error(tmp_path):
    source = FIRST_RUN.replace("{outer}", "    if True:")
    assert at(lint_plain(tmp_path, source), "DDP801") == [(line_of(source, "the helper's barrier"), "error")]


# -------------------------------------------------- FSDP's full state dict and generate on rank 0
FSDP_SAVE = """
import torch
import torch.distributed as dist
from torch.distributed.fsdp import FullyShardedDataParallel as FSDP{imports}


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(4, 4)

    def forward(self, x):
        return self.fc(x)

    def generate(self, x, n):
        for _ in range(n):
            x = self(x)
        return x


def main():
    dist.init_process_group("gloo")
    model = FSDP(Net())
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    for step in range(4):
        model(torch.randn(2, 4)).sum().backward()
        opt.step()
        opt.zero_grad()
{setup}
    if dist.get_rank() == 0:
        state = model.state_dict() if not isinstance(model, FSDP) else {k: v.cpu() for k, v in model.state_dict().items()}  # the save
        torch.save(state, "final.pt")
        print(model.generate(torch.zeros(1, 4), 3))  # the sample


if __name__ == "__main__":
    main()
"""


def test_fsdp_state_dict_and_generate_on_rank_zero_are_collectives(tmp_path):
    source = FSDP_SAVE.replace("{imports}", "").replace("{setup}", "")
    found = [f for f in lint_plain(tmp_path, source) if f.code == "DDP801"]
    assert [(f.location.line, f.severity.value) for f in found] == [
        (line_of(source, "the save"), "error"), (line_of(source, "the sample"), "error")]
    # (one finding for the statement: the state_dict() on the plain side of `isinstance(model,
    # FSDP)` is a plain module's, no gather)
    assert "state_dict() of the FSDP model" in found[0].message


def test_its_twin_with_a_sharded_state_dict_type_set(tmp_path):
    source = FSDP_SAVE.replace("{imports}", ", StateDictType").replace(
        "{setup}", "    FSDP.set_state_dict_type(model, StateDictType.SHARDED_STATE_DICT)")
    found = [f for f in lint_plain(tmp_path, source) if f.code == "DDP801"]
    assert [(f.location.line, f.severity.value) for f in found] == []


# -------------------------------------------------- the wrapped model unpacked from a helper's tuple
UNPACKED = """
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP


def build():
    dist.init_process_group("gloo")
    model = DDP(torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.BatchNorm1d(4)))
    return model, torch.optim.SGD(model.parameters(), lr=0.1)


def train(model, optimizer):
    for step in range(3):
        optimizer.zero_grad()
        model(torch.randn(8, 4)).sum().backward()  # the training step
        optimizer.step()


if __name__ == "__main__":
    model, optimizer = build()
    on_main = dist.get_rank() == 0
{call}
"""


def test_a_ddp_model_unpacked_from_a_builder_trained_by_rank_zero_alone(tmp_path):
    source = UNPACKED.replace("{call}", "    if on_main:\n        train(model=model, optimizer=optimizer)")
    found = at(lint_plain(tmp_path, source), "DDP801")
    assert found and all(severity == "error" for _, severity in found)
    assert line_of(source, "the training step") in {line for line, _ in found}


def test_its_twin_trained_by_every_rank(tmp_path):
    source = UNPACKED.replace("{call}", "    train(model=model, optimizer=optimizer)")
    assert at(lint_plain(tmp_path, source), "DDP801") == []


# the seeded scripts' training, after their seeding and `ds = ...`: a sharded loader with workers
SEEDED_TRAINING = """    sampler = DistributedSampler(ds)
    loader = DataLoader(ds, batch_size=8, sampler=sampler, num_workers=2)  # the loader
    model = DDP(torch.nn.Linear(4, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for epoch in range(2):
        sampler.set_epoch(epoch)
        for x, y in loader:
            opt.zero_grad()
            torch.nn.functional.mse_loss(model(x), y).backward()
            opt.step()


if __name__ == "__main__":
    main()
"""

# -------------------------------------------------- rank 0's seed broadcast to every rank
BROADCAST_SEED = """
import random
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, Dataset
from torch.utils.data.distributed import DistributedSampler


class Flips(Dataset):
    def __len__(self):
        return 64

    def __getitem__(self, i):
        x = torch.randn(4)
        return (-x if random.random() < 0.5 else x), torch.randn(1)


def main(seed=3):
    dist.init_process_group("gloo")
    t = torch.tensor(seed if dist.get_rank() == 0 else 0)
    dist.broadcast(t, src=0)
    seed = {seed}
    torch.manual_seed(seed)
    ds = Flips()
""" + SEEDED_TRAINING


def test_a_seed_broadcast_from_rank_zero_is_the_same_on_every_rank(tmp_path):
    source = BROADCAST_SEED.replace("{seed}", "t.item()")
    assert at(lint_plain(tmp_path, source), "DDP808") == [(line_of(source, "the loader"), "warning")]


def test_its_twin_that_adds_the_rank_after_the_broadcast(tmp_path):
    source = BROADCAST_SEED.replace("{seed}", "t.item() + dist.get_rank()")
    assert at(lint_plain(tmp_path, source), "DDP808") == []


# -------------------------------------------------- lhotse's fix_random_seed seeds torch
LHOTSE_SEEDED = BROADCAST_SEED.replace("import random\n", "import random\nfrom lhotse.utils import fix_random_seed\n") \
    .replace("    t = torch.tensor(seed if dist.get_rank() == 0 else 0)\n    dist.broadcast(t, src=0)\n"
             "    seed = {seed}\n    torch.manual_seed(seed)\n", "    fix_random_seed({seed})\n")


def test_lhotse_fix_random_seed_alike_on_every_rank(tmp_path):
    source = LHOTSE_SEEDED.replace("{seed}", "114514")
    assert "fix_random_seed(114514)" in source
    assert at(lint_plain(tmp_path, source), "DDP808") == [(line_of(source, "the loader"), "warning")]


def test_its_twin_with_the_rank_in_the_seed(tmp_path):
    source = LHOTSE_SEEDED.replace("{seed}", "114514 + dist.get_rank()")
    assert at(lint_plain(tmp_path, source), "DDP808") == []


# -------------------------------------------------- the resume checkpoint the run saves itself
RESUMED = """
import os
import torch
import torch.distributed as dist


def evaluate():
    dist.all_reduce(torch.zeros(1))  # the helper's reduce


def save(state, path):
    torch.save(state, path)


def main():
    dist.init_process_group("gloo")
    ckpt = "last.pt"
    if os.path.exists({tested}):
        state = torch.load(ckpt)
    elif dist.get_rank() == 0:
        evaluate()
    if dist.get_rank() == 0:
        save({"step": 1}, ckpt)


if __name__ == "__main__":
    main()
"""


def test_the_first_run_side_of_the_run_s_own_checkpoint_is_settled(tmp_path):
    # (the script saves `ckpt` itself: a first run never finds it, and takes the branch)
    source = RESUMED.replace("{tested}", "ckpt")
    assert at(lint_plain(tmp_path, source), "DDP801") == [(line_of(source, "the helper's reduce"), "error")]


def test_its_twin_testing_a_file_the_run_never_writes(tmp_path):
    source = RESUMED.replace("{tested}", '"vocab.txt"')
    assert at(lint_plain(tmp_path, source), "DDP801") == [(line_of(source, "the helper's reduce"), "warning")]


# -------------------------------------------------- a rank's own skip, told at its test and its continue
SKIPS = """
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP


def main():
    dist.init_process_group("gloo")
    model = DDP(torch.nn.Linear(4, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for step in range(4):
        loss = model(torch.randn(8, 4)).sum()
        if not torch.isfinite(loss):  # the test
{leave}
        loss.backward()
        opt.step()


if __name__ == "__main__":
    main()
"""


def test_a_rank_local_skip_names_the_continue_on_its_own_line_too(tmp_path):
    source = SKIPS.replace("{leave}", "            print('no rows')\n            continue  # the skip")
    [found] = [f for f in lint_plain(tmp_path, source) if f.code == "DDP809"]
    assert found.location.line == line_of(source, "the test")
    assert found.evidence["also"] == [line_of(source, "the skip")]


def test_its_twin_with_the_continue_on_the_test_s_line_names_no_other(tmp_path):
    source = SKIPS.replace("        if not torch.isfinite(loss):  # the test\n{leave}",
                           "        if not torch.isfinite(loss): continue  # the test")
    [found] = [f for f in lint_plain(tmp_path, source) if f.code == "DDP809"]
    assert found.location.line == line_of(source, "the test") and "also" not in found.evidence


# -------------------------------------------------- the last step's save, every rank's exit
LAST_SAVE = """
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP


def main(max_steps=8, every=4):
    dist.init_process_group("gloo")
    model = DDP(torch.nn.Linear(4, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    step = 0
    for epoch in range(100):
        for _ in range(4):
            model(torch.randn(8, 4)).sum().backward()
            opt.step()
            step += 1
            if {outer}:
                torch.save(model.module.state_dict(), f"ckpt-{step}.pt")
                if step >= max_steps:  # the exit
                    break


if __name__ == "__main__":
    main()
"""


def test_an_exit_under_the_uniform_side_of_an_or_is_every_rank_s(tmp_path):
    source = LAST_SAVE.replace("{outer}", "(dist.get_rank() == 0 and step % every == 0) or step >= max_steps")
    assert at(lint_plain(tmp_path, source), "DDP809") == []


def test_its_twin_under_the_rank_side_alone(tmp_path):
    source = LAST_SAVE.replace("{outer}", "dist.get_rank() == 0 and step % every == 0")
    assert [line for line, _ in at(lint_plain(tmp_path, source), "DDP809")] == [line_of(source, "the exit")]


# -------------------------------------------------- a seeding the callers' constants switch off
SEEDED_FOR_EVAL = """
import random
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, Dataset
from torch.utils.data.distributed import DistributedSampler


class Crops(Dataset):
    def __init__(self, eval_time=False):
        if eval_time:
            torch.manual_seed(0)
            random.seed(0)

    def __len__(self):
        return 64

    def __getitem__(self, i):
        x = torch.randn(4)
        return (-x if random.random() < 0.5 else x), torch.randn(1)


def main():
    dist.init_process_group("gloo")
    ds = Crops({given})
""" + SEEDED_TRAINING


def test_a_seeding_no_caller_switches_on_seeds_nothing(tmp_path):
    assert at(lint_plain(tmp_path, SEEDED_FOR_EVAL.replace("{given}", "")), "DDP808") == []


def test_its_twin_whose_caller_switches_it_on(tmp_path):
    source = SEEDED_FOR_EVAL.replace("{given}", "eval_time=True")
    assert at(lint_plain(tmp_path, source), "DDP808") == [(line_of(source, "the loader"), "warning")]


# -------------------------------------------------- a Trainer given a stream that keeps its rank's lines
TRAINER_STREAM = """
import json
import os
import torch
from torch.utils.data import IterableDataset
from transformers import GPT2Config, GPT2LMHeadModel, Trainer, TrainingArguments

RANK = int(os.environ.get("RANK", 0))
WORLD = int(os.environ.get("WORLD_SIZE", 1))


class Lines(IterableDataset):
    def __init__(self, path, rank=0, world=1):
        self.path, self.rank, self.world = path, rank, world

    def __iter__(self):
        with open(self.path) as f:
            for i, line in enumerate(f):
{filter}
                yield {"input_ids": torch.tensor(json.loads(line)["ids"])}


model = GPT2LMHeadModel(GPT2Config(n_layer=2))
args = TrainingArguments(output_dir="out", max_steps=10)
trainer = Trainer(model=model, args=args, train_dataset=Lines("train.jsonl", RANK, WORLD))
trainer.train()
"""


def test_a_trainer_given_a_dataset_that_keeps_its_rank_s_share_shards_twice(tmp_path):
    source = TRAINER_STREAM.replace("{filter}", "                if i % self.world != self.rank:  # the filter\n"
                                                "                    continue")
    found = [f for f in lint_plain(tmp_path, source) if f.code == "DDP803"]
    assert [(f.location.line, f.severity.value) for f in found] == [(line_of(source, "the filter"), "warning")]
    assert "Trainer at" in found[0].message


def test_its_twin_whose_stream_yields_every_line(tmp_path):
    source = TRAINER_STREAM.replace("{filter}", "                pass")
    assert at(lint_plain(tmp_path, source), "DDP803") == []


# -------------------------------------------------- the trainer's class decides the side, through mp.spawn
BY_TRAINER_CLASS = """
import torch
import torch.distributed as dist
import torch.multiprocessing as mp
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler


class GanTrainer:
    def __init__(self):
        self.model = None

    def wrap(self):
        self.model = DDP(torch.nn.Linear(4, 1))

    def fit(self, loader):
        opt = torch.optim.SGD(self.model.parameters(), lr=0.1)
        for epoch in range(2):
            if hasattr(loader.sampler, "set_epoch"):
                loader.sampler.set_epoch(epoch)
            for x, y in loader:
                opt.zero_grad()
                torch.nn.functional.mse_loss(self.model(x), y).backward()
                opt.step()


class AeTrainer(GanTrainer):
    pass


def setup(rank, trainer):
    trainer.wrap()
    return trainer


def run(rank, world, trainer):
    dist.init_process_group("gloo", rank=rank, world_size=world)
    trainer = setup(rank, trainer)
    ds = TensorDataset(torch.randn(64, 4), torch.randn(64, 1))
    if isinstance(trainer, AeTrainer):
        loader = DataLoader(ds, batch_size=8, shuffle=True)  # the autoencoder's loader
    else:
        loader = DataLoader(ds, batch_size=8, sampler=DistributedSampler(ds))
    trainer.fit(loader)


if __name__ == "__main__":
    trainer = {built}
    mp.spawn(run, args=(2, trainer), nprocs=2)
"""


def test_a_side_for_a_trainer_class_the_script_never_builds_is_never_taken(tmp_path):
    assert at(lint_plain(tmp_path, BY_TRAINER_CLASS.replace("{built}", "GanTrainer()")), "DDP802") == []


def test_its_twin_that_builds_that_class(tmp_path):
    source = BY_TRAINER_CLASS.replace("{built}", "AeTrainer()")
    assert at(lint_plain(tmp_path, source), "DDP802") == [(line_of(source, "the autoencoder's loader"), "error")]


# -------------------------------------------------- the epoch loop by what it holds, not its name
SPLIT_LOADERS = """
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler


def init_dataloaders(splits):
    loaders = {}
    for split in splits:
        ds = TensorDataset(torch.randn(64, 4), torch.randn(64, 1))
        sampler = DistributedSampler(ds)  # the sampler
        loaders[split] = DataLoader(ds, batch_size=8, sampler=sampler)
    return loaders


def main(passes=3):
    dist.init_process_group("gloo")
    loaders = init_dataloaders(["train", "val"])
    model = DDP(torch.nn.Linear(4, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
{loop}
        for split in ["train", "val"]:
            for x, y in loaders[split]:
                loss = torch.nn.functional.mse_loss(model(x), y)
                if split == "train":
                    opt.zero_grad()
                    loss.backward()
                    opt.step()


if __name__ == "__main__":
    main()
"""


def test_a_loop_around_the_training_loop_is_an_epoch_loop_whatever_its_name(tmp_path):
    source = SPLIT_LOADERS.replace("{loop}", "    for e in range(passes):")
    assert at(lint_plain(tmp_path, source), "DDP804") == [(line_of(source, "the sampler"), "warning")]


def test_its_twin_that_runs_one_pass(tmp_path):
    source = SPLIT_LOADERS.replace("{loop}", "    if passes:")
    assert at(lint_plain(tmp_path, source), "DDP804") == []


# -------------------------------------------------- buffers in a module handed to the constructor by keyword
HANDED_MODULES = """
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP


class Encoding(torch.nn.Module):
    def __init__(self, n):
        super().__init__()
{encoding}

    def forward(self, x):
        return x


class Render(torch.nn.Module):
    def __init__(self, embedder=None, width=4):
        super().__init__()
        self.embedder = embedder
        self.fc = torch.nn.Linear(width, 1)

    def forward(self, x):
        return self.fc(self.embedder(x) if self.embedder is not None else x)


def main(freqs=4):
    dist.init_process_group("gloo")
    model = DDP(Render(embedder=Encoding(freqs) if freqs > 0 else None))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for step in range(4):
        model(torch.randn(8, 4)).sum().backward()
        opt.step()
        if dist.get_rank() == 0:
            with torch.no_grad():
                model(torch.randn(2, 4))  # rank 0's look
    dist.barrier()


if __name__ == "__main__":
    main()
"""


def test_buffers_of_a_module_handed_by_keyword_make_rank_zero_s_forward_a_collective(tmp_path):
    source = HANDED_MODULES.replace("{encoding}", '        self.register_buffer("bands", 2.0 ** torch.arange(n))')
    assert at(lint_plain(tmp_path, source), "DDP801") == [(line_of(source, "rank 0's look"), "warning")]


def test_its_twin_whose_handed_module_holds_no_buffer(tmp_path):
    source = HANDED_MODULES.replace("{encoding}", "        self.n = n")
    assert at(lint_plain(tmp_path, source), "DDP801") == []


# -------------------------------------------------- per call: the side only a parameter's default takes
DEFAULT_SIDE = """
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, Dataset
from torch.utils.data.distributed import DistributedSampler


class Points(Dataset):
    def __len__(self):
        return 64

    def __getitem__(self, i):
        return torch.randn(4), torch.randn(1)

    def get_loader(self, shuffle=True, rank=-1, world_size=-1):
        if world_size > 0:
            sampler = DistributedSampler(self, num_replicas=world_size, rank=rank)
            return DataLoader(self, batch_size=8, sampler=sampler)
        return DataLoader(self, batch_size=8, shuffle=shuffle)  # the default's loader


def validate(model, data):
    val_loader = data.get_loader(shuffle=False)
    with torch.no_grad():
        return sum(float(model.module(x).sum()) for x, _ in val_loader)


def main():
    dist.init_process_group("gloo")
    data = Points()
    train_loader = {train}
    model = DDP(torch.nn.Linear(4, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for epoch in range(2):
        if hasattr(train_loader.sampler, "set_epoch"):
            train_loader.sampler.set_epoch(epoch)
        for x, y in train_loader:
            opt.zero_grad()
            torch.nn.functional.mse_loss(model(x), y).backward()
            opt.step()
        validate(model, data)


if __name__ == "__main__":
    main()
"""


def test_a_builder_s_default_side_only_the_validation_call_takes_is_no_training_loader(tmp_path):
    source = DEFAULT_SIDE.replace("{train}", "data.get_loader(rank=dist.get_rank(), world_size=dist.get_world_size())")
    assert at(lint_plain(tmp_path, source), "DDP802") == []


def test_its_twin_whose_training_call_leaves_the_default(tmp_path):
    source = DEFAULT_SIDE.replace("{train}", "data.get_loader()")
    assert at(lint_plain(tmp_path, source), "DDP802") == [(line_of(source, "the default's loader"), "error")]
