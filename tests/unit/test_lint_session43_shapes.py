"""Shapes from session 43 (the residue of holdouts 44-52, then holdout 53, read after it was
scored unread): a switch named for the negation (`--no_ddp`), a dataset list filled by
`append`, a seeding helper's default seed, `generator=None`, a `gpu=` handed to a dataset, the
values of the config file the launch names. Each with its twin, written in our own words."""

from __future__ import annotations

from tests.unit.test_lint_round50_shapes import at, line_of
from tests.unit.test_lint_session39_shapes import lint_tree


# -------------------------------------------------- `not args.no_ddp` is the distributed side
NEGATED = """
import argparse
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, DistributedSampler


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--no_ddp", action="store_true")
    args = parser.parse_args()
    model = torch.nn.Linear(4, 1)
    if not args.no_ddp:
        dist.init_process_group("gloo")
        model = DDP(model)
    data = [torch.randn(4) for _ in range(64)]
    if {single}:
        loader = DataLoader(data, batch_size=8, shuffle=True)  # the plain loader
    else:
        loader = DataLoader(data, batch_size=8, sampler=DistributedSampler(data))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for epoch in range(3):
        if not args.no_ddp and hasattr(loader.sampler, "set_epoch"):
            loader.sampler.set_epoch(epoch)
        for x in loader:
            opt.zero_grad()
            model(x).sum().backward()
            opt.step()


if __name__ == "__main__":
    main()
"""


def test_a_plain_loader_on_the_side_of_no_ddp_is_one_process(tmp_path):
    found = lint_tree(tmp_path, {"train.py": NEGATED.replace("{single}", "args.no_ddp")})
    assert at(found, "DDP802") == []


def test_its_twin_the_plain_loader_where_no_ddp_is_false_is_the_distributed_run(tmp_path):
    code = NEGATED.replace("{single}", "not args.no_ddp")
    found = lint_tree(tmp_path, {"train.py": code})
    assert at(found, "DDP802") == [(line_of(code, "# the plain loader"), "error")]


# -------------------------------------------------- a dataset list filled by append, then concatenated
FACTORY = """
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import ConcatDataset, DataLoader, Dataset, DistributedSampler


class Scenes(Dataset):
    def __init__(self, name):
        self.name = name

    def __len__(self):
        return 64

    def __getitem__(self, i):
        x = torch.ones(4)
        {draw}
        return x


def build(names):
    parts = []
    for name in names:
        parts.append(Scenes(name))
    return ConcatDataset(parts)


def main():
    dist.init_process_group("gloo")
    torch.manual_seed(0)  # the seeding
    model = DDP(torch.nn.Linear(4, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    data = build(["a", "b"])
    sampler = DistributedSampler(data)
    loader = DataLoader(data, batch_size=8, sampler=sampler, num_workers=4)  # the loader
    for epoch in range(3):
        sampler.set_epoch(epoch)
        for x in loader:
            opt.zero_grad()
            model(x).sum().backward()
            opt.step()


if __name__ == "__main__":
    main()
"""


def test_workers_of_datasets_a_list_is_filled_with_draw_alike_on_every_rank(tmp_path):
    code = FACTORY.replace("{draw}", "x = x * torch.rand(1)")
    found = lint_tree(tmp_path, {"train.py": code})
    # (told at the loader where the seeding is in the loader's own function)
    assert at(found, "DDP808") == [(line_of(code, "# the loader"), "warning")]


def test_its_twin_datasets_that_draw_nothing(tmp_path):
    found = lint_tree(tmp_path, {"train.py": FACTORY.replace("{draw}", "x = x * 2")})
    assert at(found, "DDP808") == []


# -------------------------------------------------- a seeding helper's default seed, and generator=None
DEFAULT_SEED = """
import random
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, Dataset, DistributedSampler


def seed_everything(seed=1):
    random.seed(seed)
    torch.manual_seed(seed)  # the seeding


class Crops(Dataset):
    def __len__(self):
        return 64

    def __getitem__(self, i):
        return torch.ones(4) * random.random()


def main():
    dist.init_process_group("gloo")
    seed_everything({seed})
    model = DDP(torch.nn.Linear(4, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    data = Crops()
    sampler = DistributedSampler(data)
    loader = DataLoader(data, batch_size=8, sampler=sampler, num_workers=4, generator=None)  # the loader
    for epoch in range(3):
        sampler.set_epoch(epoch)
        for x in loader:
            opt.zero_grad()
            model(x).sum().backward()
            opt.step()


if __name__ == "__main__":
    main()
"""


def test_a_seeding_helper_called_without_a_seed_seeds_its_default_on_every_rank(tmp_path):
    code = DEFAULT_SEED.replace("{seed}", "")
    found = lint_tree(tmp_path, {"train.py": code})
    assert at(found, "DDP808") == [(line_of(code, "# the loader"), "warning")]


def test_its_twin_the_helper_handed_the_rank(tmp_path):
    found = lint_tree(tmp_path, {"train.py": DEFAULT_SEED.replace("{seed}", "dist.get_rank()")})
    assert at(found, "DDP808") == []


# -------------------------------------------------- `gpu=` handed to a dataset places, it does not shard
PLACED = """
import torch
import torch.distributed as dist
import torch.multiprocessing as mp
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, Dataset, DistributedSampler


class Pairs(Dataset):
    def __init__(self, root, {param}=0):
        self.items = list(range(64))
        {use}

    def __len__(self):
        return len(self.items)

    def __getitem__(self, i):
        return torch.ones(4) * self.items[i]


def train(gpu, world):
    dist.init_process_group("gloo", init_method="tcp://127.0.0.1:29500", rank=gpu, world_size=world)
    model = DDP(torch.nn.Linear(4, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    data = Pairs("data", {param}=gpu)
    sampler = DistributedSampler(data, num_replicas=world, rank=gpu)  # the sampler
    loader = DataLoader(data, batch_size=8, sampler=sampler)
    for epoch in range(3):
        sampler.set_epoch(epoch)
        for x in loader:
            opt.zero_grad()
            model(x).sum().backward()
            opt.step()


if __name__ == "__main__":
    mp.spawn(train, nprocs=2, args=(2,))
"""


def test_a_gpu_index_handed_to_the_dataset_is_no_shard(tmp_path):
    code = PLACED.replace("{param}", "gpu").replace("{use}", "self.device = torch.device('cpu', gpu)")
    found = lint_tree(tmp_path, {"train.py": code})
    assert at(found, "DDP803") == []


def test_its_twin_a_shard_index_handed_to_the_dataset_shards_it(tmp_path):
    code = PLACED.replace("{param}", "shard").replace("{use}", "self.items = self.items[shard::2]")
    found = lint_tree(tmp_path, {"train.py": code})
    assert at(found, "DDP803") == [(line_of(code, "# the sampler"), "warning")]


# -------------------------------------------------- the config file the launch names holds the options
CONFIGURED = """
import argparse
import torch
import torch.distributed as dist
import yaml
from types import SimpleNamespace
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, Dataset, DistributedSampler


def get_parser():
    parser = argparse.ArgumentParser()
    parser.add_argument("--config", type=str, default="config/base.yaml")
    args = parser.parse_args()
    flat = {}
    for section in yaml.safe_load(open(args.config)).values():
        flat.update(section)
    return SimpleNamespace(**flat)


class Clouds(Dataset):
    def __len__(self):
        return 64

    def __getitem__(self, i):
        return torch.ones(4) * torch.rand(1)


def main():
    args = get_parser()
    if args.manual_seed is not None:
        torch.manual_seed(args.manual_seed)  # the seeding
    dist.init_process_group("gloo")
    model = DDP(torch.nn.Linear(4, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    data = Clouds()
    sampler = DistributedSampler(data)
    loader = DataLoader(data, batch_size=8, sampler=sampler, num_workers=args.workers)  # the loader
    for epoch in range(3):
        sampler.set_epoch(epoch)
        for x in loader:
            opt.zero_grad()
            model(x).sum().backward()
            opt.step()


if __name__ == "__main__":
    main()
"""
LAUNCH = "torchrun --nproc_per_node=4 train.py --config config/run.yaml\n"
CONFIG = """
TRAIN:
  workers: 4
  manual_seed: {seed}  # the run's seed
"""


def test_a_seed_the_named_config_gives_seeds_every_rank_alike(tmp_path):
    code = CONFIGURED
    found = lint_tree(tmp_path, {"train.py": code, "train.sh": LAUNCH,
                                 "config/run.yaml": CONFIG.replace("{seed}", "123")})
    assert at(found, "DDP808") == [(line_of(code, "# the loader"), "warning")]


def test_its_twin_the_named_config_leaves_the_seed_unset(tmp_path):
    found = lint_tree(tmp_path, {"train.py": CONFIGURED, "train.sh": LAUNCH,
                                 "config/run.yaml": CONFIG.replace("{seed}", "null")})
    assert at(found, "DDP808") == []


# -------------------------------------------------- a list filled under a test of the loop's own count
COUNTED = """
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP


def train(model, opt, cfg):
    losses = []
    for epoch in range(cfg["epochs"]):
        for start in range(0, 64, 8):
            loss = model(torch.randn(8, 4)).sum()
            loss.backward()
            if {test}:
                losses.append(loss.detach().unsqueeze(0))
        opt.step()
    gathered = [torch.zeros(1)] * dist.get_world_size()
    dist.all_gather(gathered, torch.cat(losses))  # the gather


def main():
    dist.init_process_group("gloo")
    model = DDP(torch.nn.Linear(4, 1))
    train(model, torch.optim.SGD(model.parameters(), lr=0.1), {"epochs": 3})


if __name__ == "__main__":
    main()
"""


def test_a_list_filled_only_on_the_last_epoch_has_the_same_length_everywhere(tmp_path):
    found = lint_tree(tmp_path, {"train.py": COUNTED.replace("{test}", 'epoch == cfg["epochs"] - 1')})
    assert at(found, "DDP807") == []


def test_its_twin_a_list_filled_where_the_loss_is_small_is_data_sized(tmp_path):
    code = COUNTED.replace("{test}", "loss.item() < 1.0")
    found = lint_tree(tmp_path, {"train.py": code})
    assert at(found, "DDP807") == [(line_of(code, "# the gather"), "warning")]


# -------------------------------------------------- a key of the YAML config the launch names
YAML_OPTIONS = """
import argparse
import torch
import torch.distributed as dist
import yaml
from torch.nn.parallel import DistributedDataParallel as DDP


class Trainer:
    def __init__(self, args, model):
        self.args = args
        self.model = model
        self.opt = torch.optim.SGD(model.parameters(), lr=0.1)
        self.stop = False

    def step(self, epoch):
        self.model(torch.randn(8, 4)).sum().backward()
        self.opt.step()
        if self.args["logging"]["track_best"] and dist.get_rank() == 0:
            if epoch > 5:
                self.stop = True


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--config", required=True)
    args = yaml.safe_load(open(parser.parse_args().config))
    dist.init_process_group("gloo")
    trainer = Trainer(args, DDP(torch.nn.Linear(4, 1)))
    for epoch in range(100):
        trainer.step(epoch)
        if trainer.stop:  # the stop
            break


if __name__ == "__main__":
    main()
"""
YAML_LAUNCH = "torchrun --nproc_per_node=4 train.py --config conf/run.yml\n"


def test_a_further_test_the_named_config_makes_true_is_no_assumption(tmp_path):
    code = YAML_OPTIONS
    found = lint_tree(tmp_path, {"train.py": code, "run.sh": YAML_LAUNCH,
                                 "conf/run.yml": "logging:\n  track_best: True\n"})
    assert at(found, "DDP809") == [(line_of(code, "# the stop"), "error")]


def test_its_twin_without_the_config_the_test_stays_an_assumption(tmp_path):
    code = YAML_OPTIONS
    found = lint_tree(tmp_path, {"train.py": code, "run.sh": YAML_LAUNCH})
    assert at(found, "DDP809") == [(line_of(code, "# the stop"), "warning")]


# -------------------------------------------------- a Hugging Face checkpoint named by an option, in a wrapper class
WRAPPED_ENCODER = """
import argparse
import torch
import torch.distributed as dist
from torch import nn
from torch.nn.parallel import DistributedDataParallel as DDP
from transformers import AutoModel


class Encoder(nn.Module):
    def __init__(self, base_model):
        super().__init__()
        self.backbone = AutoModel.from_pretrained(base_model)

    def forward(self, x):
        return self.backbone(x).last_hidden_state[:, 0]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--base_model", default="{checkpoint}")
    args = parser.parse_args()
    dist.init_process_group("gloo")
    model = DDP(Encoder(args.base_model))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for step in range(100):
        model(torch.ones(8, 16, dtype=torch.long)).sum().backward()
        opt.step()
        if dist.get_rank() == 0 and step % 10 == 0:
            with torch.no_grad():
                model(torch.ones(2, 16, dtype=torch.long))  # the evaluation


if __name__ == "__main__":
    main()
"""


def test_a_rank0_forward_of_a_bert_family_encoder_built_inside_a_wrapper(tmp_path):
    code = WRAPPED_ENCODER.replace("{checkpoint}", "klue/roberta-base")
    found = lint_tree(tmp_path, {"train.py": code})
    assert at(found, "DDP801") == [(line_of(code, "# the evaluation"), "warning")]


def test_its_twin_a_checkpoint_of_a_family_without_buffers(tmp_path):
    found = lint_tree(tmp_path, {"train.py": WRAPPED_ENCODER.replace("{checkpoint}", "t5-small")})
    assert at(found, "DDP801") == []


# -------------------------------------------------- python-fire options, accumulation by hand under Accelerate
FIRE = """
import torch
from types import SimpleNamespace
from accelerate import Accelerator
from torch.utils.data import DataLoader


def training_function(args):
    accelerator = Accelerator()
    model = torch.nn.Linear(4, 1)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    loader = DataLoader([torch.randn(4) for _ in range(64)], batch_size=8, shuffle=True)
    model, opt, loader = accelerator.prepare(model, opt, loader)
    for epoch in range(3):
        for step, x in enumerate(loader):
            loss = model(x).sum() / args.gradient_accumulation_steps
            accelerator.backward(loss)  # the backward
            if step % args.gradient_accumulation_steps == 0:
                opt.step()
                opt.zero_grad()


def main(gradient_accumulation_steps: int = {steps}):
    training_function(SimpleNamespace(gradient_accumulation_steps=gradient_accumulation_steps))


if __name__ == "__main__":
    import fire
    fire.Fire(main)
"""


def test_a_fire_option_accumulating_by_hand_under_accelerate(tmp_path):
    code = FIRE.replace("{steps}", "4")
    found = lint_tree(tmp_path, {"train.py": code})
    assert at(found, "DDP805") == [(line_of(code, "# the backward"), "warning")]


def test_its_twin_accumulating_inside_accelerator_accumulate(tmp_path):
    code = FIRE.replace("{steps}", "4").replace(
        "            loss = model(x).sum() / args.gradient_accumulation_steps\n",
        "            with accelerator.accumulate(model):\n"
        "                loss = model(x).sum() / args.gradient_accumulation_steps\n")
    found = lint_tree(tmp_path, {"train.py": code})
    assert at(found, "DDP805") == []


def _option_defaults(tmp_path, source: str) -> dict:
    from ddpdoctor.lint.program import Program
    from ddpdoctor.lint.sources import load_program

    path = tmp_path / "train.py"
    path.write_text(source)
    return Program(load_program(str(path), [])).option_defaults()


def test_the_parameters_of_the_function_fire_runs_are_options(tmp_path):
    found = _option_defaults(tmp_path, FIRE.replace("{steps}", "4"))
    assert found == {"gradient_accumulation_steps": 4}


def test_its_twin_a_function_fire_does_not_run_declares_nothing(tmp_path):
    found = _option_defaults(tmp_path, FIRE.replace("{steps}", "4").replace("fire.Fire(main)", "main()"))
    assert found == {}


# -------------------------------------------------- a dataset handed the DistributedSampler class, then prepared
VIDEO = """
import torch
from accelerate import Accelerator
from torch.utils.data import DataLoader, DistributedSampler, RandomSampler
from pytorchvideo.data import Kinetics


def main():
    accelerator = Accelerator()
    sampler = RandomSampler if accelerator.num_processes == 1 else {sampler}
    data = Kinetics("videos/train", clip_sampler=None, video_sampler=sampler)
    loader = DataLoader(data, batch_size=8)  # the loader
    model = torch.nn.Linear(4, 1)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    model, opt, loader = accelerator.prepare(model, opt, loader)
    for batch in loader:
        accelerator.backward(model(batch["video"]).sum())
        opt.step()
        opt.zero_grad()


if __name__ == "__main__":
    main()
"""


def test_a_video_dataset_sampling_its_rank_share_and_a_prepared_loader_shard_twice(tmp_path):
    code = VIDEO.replace("{sampler}", "DistributedSampler")
    found = lint_tree(tmp_path, {"train.py": code})
    assert at(found, "DDP803") == [(line_of(code, "# the loader"), "warning")]


def test_its_twin_a_video_dataset_sampling_every_video(tmp_path):
    found = lint_tree(tmp_path, {"train.py": VIDEO.replace("{sampler}", "RandomSampler")})
    assert at(found, "DDP803") == []


# -------------------------------------------------- spectral norm's buffers, a class picked from globals()
DISCRIMINATOR = """
import torch
import torch.distributed as dist
from torch import nn
from torch.nn.parallel import DistributedDataParallel as DDP


class Critic64(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = {layer}

    def forward(self, x):
        return self.fc(x)


def main(size=64):
    dist.init_process_group("gloo")
    netD = DDP(globals()[f"Critic{size}"]())
    opt = torch.optim.SGD(netD.parameters(), lr=0.1)
    for epoch in range(10):
        netD(torch.randn(8, 4)).sum().backward()
        opt.step()
        if dist.get_rank() == 0:
            with torch.no_grad():
                netD(torch.randn(8, 4))  # the evaluation


if __name__ == "__main__":
    main()
"""


def test_a_rank0_forward_of_a_spectral_norm_critic_picked_from_globals(tmp_path):
    code = DISCRIMINATOR.replace("{layer}", "nn.utils.spectral_norm(nn.Linear(4, 1))")
    found = lint_tree(tmp_path, {"train.py": code})
    assert at(found, "DDP801") == [(line_of(code, "# the evaluation"), "warning")]


def test_its_twin_a_plain_critic_has_no_buffers(tmp_path):
    found = lint_tree(tmp_path, {"train.py": DISCRIMINATOR.replace("{layer}", "nn.Linear(4, 1)")})
    assert at(found, "DDP801") == []


# -------------------------------------------------- a loader left unsharded by a default, read through cycle() and next()
CYCLED = """
import torch
import torch.distributed as dist
import torch.multiprocessing as mp
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, DistributedSampler


def cycle(dl):
    while True:
        for data in dl:
            yield data


class Trainer:
    def __init__(self, model, train_dl, steps):
        self.model = model
        self.opt = torch.optim.SGD(model.parameters(), lr=0.1)
        self.train_dl = cycle(train_dl)
        self.steps = steps

    def train(self):
        for step in range(self.steps):
            self.model(next(self.train_dl)).sum().backward()
            self.opt.step()


def load_data(batch_size, distributed=False):
    data = [torch.randn(4) for _ in range(64)]
    sampler = DistributedSampler(data) if distributed else None
    return DataLoader(data, batch_size=batch_size, shuffle=not distributed, sampler=sampler)  # the loader


def main(rank, world):
    dist.init_process_group("gloo", init_method="tcp://127.0.0.1:29500", rank=rank, world_size=world)
    loader = load_data(8{given})
    Trainer(DDP(torch.nn.Linear(4, 1)), loader, 100).train()


if __name__ == "__main__":
    mp.spawn(main, args=(2,), nprocs=2)
"""


def test_a_loader_its_builder_leaves_unsharded_by_default_read_through_cycle(tmp_path):
    code = CYCLED.replace("{given}", "")
    found = lint_tree(tmp_path, {"train.py": code})
    assert at(found, "DDP802") == [(line_of(code, "# the loader"), "error")]


def test_its_twin_the_caller_asks_for_the_distributed_sampler(tmp_path):
    found = lint_tree(tmp_path, {"train.py": CYCLED.replace("{given}", ", distributed=True")})
    assert at(found, "DDP802") == []


# -------------------------------------------------- a builder's plain loader replaced by one over its dataset
REBUILT = """
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, DistributedSampler


def get_dataloaders(batch_size):
    data = [torch.randn(4) for _ in range(64)]
    train_loader = DataLoader(data, batch_size=batch_size, shuffle=True)  # the builder's loader
    val_loader = DataLoader(data, batch_size=batch_size, shuffle=False)
    return train_loader, val_loader


def main():
    dist.init_process_group("gloo")
    train_loader, val_loader = get_dataloaders(8)
{rebuild}
    model = DDP(torch.nn.Linear(4, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for epoch in range(3):
        if isinstance(train_loader.sampler, DistributedSampler):
            train_loader.sampler.set_epoch(epoch)
        for x in train_loader:
            opt.zero_grad()
            model(x).sum().backward()
            opt.step()


if __name__ == "__main__":
    main()
"""
REBUILD = """    sampler = DistributedSampler(train_loader.dataset)
    train_loader = DataLoader(train_loader.dataset, batch_size=train_loader.batch_size, sampler=sampler)
"""


def test_a_builders_loader_replaced_by_one_over_its_dataset_trains_nothing(tmp_path):
    found = lint_tree(tmp_path, {"train.py": REBUILT.replace("{rebuild}", REBUILD)})
    assert at(found, "DDP802") == []


def test_its_twin_the_builders_loader_is_the_one_the_loop_reads(tmp_path):
    code = REBUILT.replace("{rebuild}", "")
    found = lint_tree(tmp_path, {"train.py": code})
    assert at(found, "DDP802") == [(line_of(code, "# the builder's loader"), "error")]


def test_the_named_config_changed_after_a_cached_lint_is_read_again(tmp_path, monkeypatch):
    # the config file the answer rests on is digested with it (a missing or too large one keeps
    # the answer out of the cache): an edited config is a miss, not the first verdict again
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setenv("DDPDOCTOR_LINT_CACHE", "1")
    code = YAML_OPTIONS
    files = {"train.py": code, "run.sh": YAML_LAUNCH, "conf/run.yml": "logging:\n  track_best: True\n"}
    assert at(lint_tree(tmp_path, files), "DDP809") == [(line_of(code, "# the stop"), "error")]
    (tmp_path / "conf/run.yml").write_text("x" * 300_000)  # (over the size a config is read at)
    assert at(lint_tree(tmp_path, {}), "DDP809") == [(line_of(code, "# the stop"), "warning")]
    (tmp_path / "conf/run.yml").write_text("logging:\n  track_best: True\n")
    assert at(lint_tree(tmp_path, {}), "DDP809") == [(line_of(code, "# the stop"), "error")]


def test_the_finding_says_which_config_value_settled_the_test(tmp_path):
    found = lint_tree(tmp_path, {"train.py": YAML_OPTIONS, "run.sh": YAML_LAUNCH,
                                 "conf/run.yml": "logging:\n  track_best: True\n"})
    [decision] = [f for f in found if f.code == "DDP809"]
    assert "`logging.track_best` set to `True` in run.yml" in decision.message
