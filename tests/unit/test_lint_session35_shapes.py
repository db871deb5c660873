"""Shapes from session 35 (holdout 37, read). Each with its healthy (or buggy) twin, written in
our own words."""

from __future__ import annotations

from tests.unit.test_lint_round17_shapes import lint_plain
from tests.unit.test_lint_round50_shapes import at, line_of
from tests.unit.test_lint_session34_shapes import PER_NODE

# -------------------------------------------------- a rank test joined with `&`
BITWISE = """
import torch, torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP


def is_main_process():
    return dist.get_rank() == 0


def main():
    dist.init_process_group("gloo")
    model = DDP(torch.nn.Linear(4, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for step in range(100):
        model(torch.randn(2, 4)).sum().backward()
        opt.step()
        if (step > 0) & (step % 10 == 0){main}:
            torch.save(model.module.state_dict(), f"ckpt-{step}.pt")  # the periodic save
        dist.barrier()


if __name__ == "__main__":
    main()
"""


def test_a_rank_test_joined_by_bitwise_and_keeps_the_save_to_rank_zero(tmp_path):
    # (LlamaGen-style trainers: `(train_steps > 0) & (train_steps % every == 0) & is_main_process()`)
    source = BITWISE.replace("{main}", " & is_main_process()")
    assert at(lint_plain(tmp_path, source), "DDP806") == []


def test_its_twin_without_the_rank_part_saves_on_every_rank(tmp_path):
    source = BITWISE.replace("{main}", "")
    assert at(lint_plain(tmp_path, source), "DDP806") == [(line_of(source, "the periodic save"), "warning")]


# -------------------------------------------------- a node rank handed to a one-node launch
def test_a_node_rank_in_a_one_node_launch_does_not_make_the_code_multi_node(tmp_path):
    # (`torch.distributed.run --nnodes=1 --node_rank=0`, one option per continued line)
    source = PER_NODE.replace("{node_option}", "pass")
    (tmp_path / "run.sh").write_text("python -m torch.distributed.run \\\n  --nproc_per_node=4 \\\n"
                                     "  --nnodes=1 \\\n  --node_rank=0 \\\n  train.py\n")
    assert at(lint_plain(tmp_path, source), "DDP806") == []


def test_its_twin_handing_a_node_rank_variable_is_multi_node(tmp_path):
    source = PER_NODE.replace("{node_option}", "pass")
    (tmp_path / "run.sh").write_text("torchrun --nproc_per_node=4 \\\n  --node_rank=$NODE_RANK train.py\n")
    assert at(lint_plain(tmp_path, source), "DDP806") == [(line_of(source, "local rank 0 saves"), "warning")]


# -------------------------------------------------- a host process and its trainers
ROLES = """
import argparse
import torch, torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

parser = argparse.ArgumentParser()
parser.add_argument("--local_rank", type=int, default=0)
parser.add_argument("--trainers", type=int, default=2)
args = parser.parse_args()
dist.init_process_group("gloo")
trainers = dist.new_group(ranks=list(range(args.trainers)))

if args.local_rank < args.trainers:
    model = DDP(torch.nn.Linear(4, 1), process_group=trainers)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    while True:
        command = [None]
        dist.scatter_object_list(command, [None] * (args.trainers + 1), src=args.trainers)  # a trainer's order
        if command[0] == -1:
            break
        batch = [None]
        dist.scatter_object_list(batch, [None] * (args.trainers + 1), src=args.trainers)
        loss = model(batch[0]).sum()
        loss.backward()
        opt.step()
        {answer}
else:
    for step in range(10):
        dist.scatter_object_list([None], [0] * (args.trainers + 1), src=args.trainers)
        dist.scatter_object_list([None], [torch.randn(2, 4)] * (args.trainers + 1), src=args.trainers)
        losses = [None] * (args.trainers + 1)
        dist.gather_object(0.0, losses, dst=args.trainers)
    dist.scatter_object_list([None], [-1] * (args.trainers + 1), src=args.trainers)
"""


def test_a_host_and_trainers_answering_each_other_in_loops_pair_their_collectives(tmp_path):
    # (TGL-style samplers: the host scatters commands and batches, gathers the losses; each
    # trainer takes them one by one over its own loop, its DDP model on the trainers' group)
    source = ROLES.replace("{answer}", "dist.gather_object(float(loss), None, dst=args.trainers)")
    assert at(lint_plain(tmp_path, source), "DDP801") == []


def test_its_twin_whose_trainers_never_answer_the_gather_is_one_sided(tmp_path):
    source = ROLES.replace("{answer}", "pass")
    found = at(lint_plain(tmp_path, source), "DDP801")
    assert (line_of(source, "dist.gather_object(0.0"), "error") in found
    # (the trainers' DDP model is built on their own group: said as an assumption, a warning)
    assert (line_of(source, "process_group=trainers"), "warning") in found


# -------------------------------------------------- a plain loader replaced at each epoch's top
REBOUND = """
import torch, torch.distributed as dist
from torch.utils.data import DataLoader, DistributedSampler, RandomSampler, TensorDataset
from torch.nn.parallel import DistributedDataParallel as DDP


class Task:
    def __init__(self, local_rank):
        self.local_rank = local_rank
        if self.distributed():
            dist.init_process_group("gloo")
        self.model = DDP(torch.nn.Linear(4, 1))
        self.data = TensorDataset(torch.randn(64, 4))

    def distributed(self):
        return self.local_rank >= 0

    def plain_loader(self, dataset):
        loader = DataLoader(dataset, batch_size=8, sampler=RandomSampler(dataset))  # the plain loader
        return loader

    def shared_loader(self, dataset, epoch):
        sampler = DistributedSampler(dataset)
        sampler.set_epoch(epoch)
        return DataLoader(dataset, batch_size=8, sampler=sampler)

    def train(self):
        loader = self.plain_loader(self.data)
        opt = torch.optim.SGD(self.model.parameters(), lr=0.1)
        for epoch in range(3):
            {rebind}
            for (x,) in loader:
                self.model(x).sum().backward()
                opt.step()

    def evaluate(self):
        eval_loader = self.plain_loader(self.data)
        with torch.no_grad():
            for (x,) in eval_loader:
                self.model.module(x)


task = Task(0)
task.train()
task.evaluate()
"""


def test_a_plain_loader_replaced_under_the_distributed_switch_each_epoch_is_not_iterated(tmp_path):
    # (document-level extraction trainers: `loader = self.prepare_data_loader(...)`, then at each
    # epoch's top `if self.in_distributed_mode(): loader = self.prepare_dist_data_loader(...)`;
    # the evaluation's own use of the plain builder is no training loader)
    source = REBOUND.replace("{rebind}", "if self.distributed():\n                loader = "
                             "self.shared_loader(self.data, epoch)")
    assert at(lint_plain(tmp_path, source), "DDP802") == []


def test_its_twin_that_never_replaces_it_trains_every_rank_on_everything(tmp_path):
    source = REBOUND.replace("{rebind}", "pass")
    assert at(lint_plain(tmp_path, source), "DDP802") == [(line_of(source, "the plain loader"), "error")]


# -------------------------------------------------- a main-node helper answering with constants
CONSTANT_ANSWERS = """
import torch, torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP


class Task:
    def __init__(self, local_rank):
        self.local_rank = local_rank
        if self.distributed():
            dist.init_process_group("gloo")
        self.model = DDP(torch.nn.Linear(4, 1))

    def distributed(self):
        return self.local_rank >= 0

    def is_master(self, epoch):
        {answers}

    def save(self, epoch):
        torch.save(self.model.module.state_dict(), f"cpt.{epoch}")  # the checkpoint

    def after_epoch(self, epoch, save_flag=True):
        if self.is_master(epoch) and save_flag:
            self.save(epoch)


task = Task(0)
for epoch in range(3):
    task.after_epoch(epoch)
"""


def test_a_helper_answering_true_on_rank_zero_and_when_not_distributed_is_a_rank_test(tmp_path):
    answers = ("if self.distributed():\n            if dist.get_rank() == 0:\n                return True\n"
               "            else:\n                return False\n        else:\n            return True")
    source = CONSTANT_ANSWERS.replace("{answers}", answers)
    assert at(lint_plain(tmp_path, source), "DDP806") == []


def test_its_twin_also_true_every_tenth_epoch_on_every_rank_is_no_rank_test(tmp_path):
    answers = ("if epoch % 10 == 0:\n            return True\n        if dist.get_rank() == 0:\n"
               "            return True\n        return False")
    source = CONSTANT_ANSWERS.replace("{answers}", answers)
    assert at(lint_plain(tmp_path, source), "DDP806") == [(line_of(source, "the checkpoint"), "warning")]


# -------------------------------------------------- a one-sided branch behind an option left off
OPTION_OFF = """
import argparse
import torch, torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP


def evaluate(model):
    with torch.no_grad():
        model.module(torch.randn(2, 4))
    dist.barrier()  # the evaluation's barrier


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--eval_first", action="store_true", default={default})
    args = parser.parse_args()
    dist.init_process_group("gloo")
    model = DDP(torch.nn.Linear(4, 1))
    if args.eval_first and dist.get_rank() == 0:
        evaluate(model)  # the first evaluation
    for step in range(10):
        model(torch.randn(2, 4)).sum().backward()


if __name__ == "__main__":
    main()
"""


def test_a_one_sided_barrier_behind_a_store_true_option_is_not_on_the_run_as_launched(tmp_path):
    # (YOLO trainers' `if args.eval_first and is_main_process(): val_one_epoch(...)`, whose
    # evaluator ends in a barrier: `--eval_first` is off unless given)
    source = OPTION_OFF.replace("{default}", "False")
    assert at(lint_plain(tmp_path, source), "DDP801") == []


def test_its_twin_with_the_option_on_by_default_hangs(tmp_path):
    source = OPTION_OFF.replace('action="store_true", default={default}', "type=int, default=1")
    assert at(lint_plain(tmp_path, source), "DDP801") == [(line_of(source, "the evaluation's barrier"), "warning")]


# -------------------------------------------------- worker seeds: drawn seeds, config-named datasets
SEEDED = """
import random
import numpy as np
import torch, torch.distributed as dist
from torch.utils.data import DataLoader, Dataset, DistributedSampler
from torch.nn.parallel import DistributedDataParallel as DDP
from factory import instantiate


def set_seed(seed):
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)


{seeding}


def main():
    dist.init_process_group("gloo")
    dataset = instantiate({{"target": "{target}"}})
    loader = DataLoader(dataset, batch_size=4, sampler=DistributedSampler(dataset), num_workers=4)
    model = DDP(torch.nn.Linear(4, 1))
    for epoch in range(3):
        loader.sampler.set_epoch(epoch)
        for x in loader:
            model(x).sum().backward()


if __name__ == "__main__":
    main()
"""
FACTORY = """
import importlib


def from_name(path):
    module, name = path.rsplit(".", 1)
    return getattr(importlib.import_module(module), name)


def instantiate(config):
    return from_name(config["target"])(**config.get("params", {}))
"""
CROPS = """
import random
import torch
from torch.utils.data import Dataset


class Crops(Dataset):
    def __len__(self):
        return 64

    def __getitem__(self, i):
        start = random.randint(0, 4)
        return torch.arange(8.0)[start:start + 4]


class Plain(Dataset):
    def __len__(self):
        return 64

    def __getitem__(self, i):
        return torch.full((4,), float(i))
"""


AROUND_SAMPLING = """
def around_sampling(func):
    def wrapper(*args):
        seed = np.random.randint(2 ** 31)
        set_seed(0)
        out = func(*args)
        set_seed(seed)
        return out
    return wrapper


set_seed(42)  # alike on every rank
"""


def _seeded(tmp_path, seeding: str, target: str) -> str:
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "__init__.py").write_text("")
    (tmp_path / "data" / "crops.py").write_text(CROPS)
    (tmp_path / "configs").mkdir()
    (tmp_path / "configs" / "train.yaml").write_text(f"data:\n  target: {target}\n  params: {{}}\n")
    return SEEDED.replace("{seeding}", seeding).replace("{target}", target).replace("{{", "{").replace("}}", "}")


def test_a_dataset_a_config_names_for_a_by_name_factory_is_read_for_its_draws(tmp_path):
    # (CompVis-style `instantiate_from_config`: the class comes from a config's `target:`, the
    # seeds from `set_seed(42)` at import and a draw from numpy it restores afterwards)
    source = _seeded(tmp_path, AROUND_SAMPLING, "data.crops.Crops")
    found = [f for f in lint_plain(tmp_path, source, factory=FACTORY) if f.code == "DDP808"]
    assert [(f.location.line, f.severity.value) for f in found] == [(line_of(source, "loader = DataLoader"), "warning")]


def test_its_twin_naming_a_dataset_that_draws_nothing_is_quiet(tmp_path):
    source = _seeded(tmp_path, AROUND_SAMPLING, "data.crops.Plain")
    assert at(lint_plain(tmp_path, source, factory=FACTORY), "DDP808") == []


def test_a_seed_drawn_with_nothing_seeded_alike_before_is_not_judged_alike(tmp_path):
    # the only seeding a draw from numpy's own state: unseeded, each process's differs
    source = _seeded(tmp_path, "set_seed(np.random.randint(2 ** 31))  # drawn", "data.crops.Crops")
    assert at(lint_plain(tmp_path, source, factory=FACTORY), "DDP808") == []


# -------------------------------------------------- draws behind a conditional expression
CHOSEN = """
import random
import torch, torch.distributed as dist
from torch.utils.data import DataLoader, Dataset, DistributedSampler
from torch.nn.parallel import DistributedDataParallel as DDP


class Tokens(Dataset):
    def __len__(self):
        return 64

    def __getitem__(self, i):
        return torch.full((4,), float(i))


def plain_collate(items):
    return torch.stack(items)


def masking_collator(rate):
    def collate(items):
        batch = torch.stack(items)
        return batch * (torch.rand(batch.shape) > rate)  # a random mask
    return collate


def main(plain):
    torch.manual_seed(0)
    dist.init_process_group("gloo")
    data = Tokens()
    collate = plain_collate if plain else {chosen}
    loader = DataLoader(data, batch_size=4, sampler=DistributedSampler(data), num_workers=2,
                        collate_fn=collate)  # the training loader
    model = DDP(torch.nn.Linear(4, 1))
    for epoch in range(2):
        loader.sampler.set_epoch(epoch)
        for x in loader:
            model(x).sum().backward()


if __name__ == "__main__":
    main(False)
"""


def test_a_collator_chosen_by_a_conditional_expression_is_read_on_both_sides(tmp_path):
    # (video world models: `collate_fn = default_data_collator if llama else get_maskgit_collator(cfg)`,
    # the masks drawn in the workers from a torch generator every rank seeded alike)
    source = CHOSEN.replace("{chosen}", "masking_collator(0.5)")
    assert at(lint_plain(tmp_path, source), "DDP808") == [(line_of(source, "loader = DataLoader"), "warning")]


def test_its_twin_choosing_between_two_plain_collators_draws_nothing(tmp_path):
    source = CHOSEN.replace("{chosen}", "plain_collate")
    assert at(lint_plain(tmp_path, source), "DDP808") == []


UNPACKED_TRANSFORMS = """
import torch, torch.distributed as dist
import torchvision.datasets as dset
import torchvision.transforms as T
from torch.utils.data import DataLoader, DistributedSampler
from torch.nn.parallel import DistributedDataParallel as DDP


def cifar_transforms():
    train = T.Compose([{train_ops}T.ToTensor()])
    return train, T.Compose([T.ToTensor()])


def get_data(root, transforms=None):
    train_tf, val_tf = cifar_transforms() if transforms is None else transforms
    return dset.CIFAR10(root, train=True, transform=train_tf), dset.CIFAR10(root, train=False, transform=val_tf)


def main():
    torch.manual_seed(2)
    dist.init_process_group("gloo")
    train_data, _ = get_data("data")
    loader = DataLoader(train_data, batch_size=8, sampler=DistributedSampler(train_data), num_workers=4)  # the loader
    model = DDP(torch.nn.Linear(4, 1))
    for epoch in range(2):
        loader.sampler.set_epoch(epoch)
        for x, y in loader:
            model(x.flatten(1)[:, :4]).sum().backward()


if __name__ == "__main__":
    main()
"""


def test_transforms_unpacked_from_either_side_of_a_conditional_expression_are_read(tmp_path):
    # (NAS toolkits: `train_tf, valid_tf = transforms_cifar10(cutout) if transforms is None else transforms`)
    source = UNPACKED_TRANSFORMS.replace("{train_ops}", "T.RandomCrop(32, padding=4), T.RandomHorizontalFlip(), ")
    assert at(lint_plain(tmp_path, source), "DDP808") == [(line_of(source, "the loader"), "warning")]


def test_its_twin_without_random_transforms_draws_nothing(tmp_path):
    source = UNPACKED_TRANSFORMS.replace("{train_ops}", "")
    assert at(lint_plain(tmp_path, source), "DDP808") == []


# -------------------------------------------------- a model factory that wraps DDP where asked
FACTORY_MODEL = """
import torch, torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(4, 4)
        self.bn = torch.nn.BatchNorm1d(4)

    def forward(self, x):
        return self.bn(self.lin(x))


def get_model(name, local_rank=-1):
    if name == "net":
        model = Net()
    else:
        raise NameError(name)
    if local_rank >= 0:
        model = DistributedDataParallel(model, device_ids=[local_rank])
    return model


def run_epoch(model, loader, optimizer):
    for x in loader:
        preds = model(x)  # the epoch's forward
        if optimizer is not None:
            preds.sum().backward()
            optimizer.step()


def main(local_rank):
    dist.init_process_group("gloo")
    is_master = dist.get_rank() == 0
    model = get_model("net", local_rank=local_rank)
    model_ema = get_model("net", local_rank=-1)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    loader = [torch.randn(2, 4) for _ in range(4)]
    for epoch in range(10):
        run_epoch(model, loader, opt)
        if is_master and epoch % 5 == 0:
            with torch.no_grad():
                run_epoch({evaluated}, loader, None)  # rank 0 evaluates


main(0)
"""


def test_a_model_a_factory_wraps_in_ddp_evaluated_on_rank_zero_is_a_ddp_forward(tmp_path):
    # (AutoAugment searchers: `model = get_model(conf, n, local_rank=local_rank)` ending in
    # `if local_rank >= 0: model = DistributedDataParallel(model)`, BatchNorm in the module)
    source = FACTORY_MODEL.replace("{evaluated}", "model")
    assert at(lint_plain(tmp_path, source), "DDP801") == [(line_of(source, "rank 0 evaluates"), "warning")]


def test_its_twin_evaluating_the_copy_the_factory_left_unwrapped_runs_no_collective(tmp_path):
    source = FACTORY_MODEL.replace("{evaluated}", "model_ema")
    assert at(lint_plain(tmp_path, source), "DDP801") == []


# -------------------------------------------------- the options a written-down launch gives
def test_a_switch_the_launch_script_gives_puts_the_branch_on_the_run(tmp_path):
    # the store_true twin above: `--eval_first` in the repository's own run.sh is the run (and,
    # given by every launch, no assumption the finding rests on: an error since session 88)
    source = OPTION_OFF.replace("{default}", "False")
    (tmp_path / "run.sh").write_text("torchrun --nproc_per_node 8 \\\n  train.py --eval_first \\\n  --lr 0.1\n")
    assert at(lint_plain(tmp_path, source), "DDP801") == [(line_of(source, "the evaluation's barrier"), "error")]


def test_launches_that_disagree_give_no_value(tmp_path):
    # one launch gives the switch, another runs the script without it: which one runs is not known,
    # so the option keeps its declared default
    source = OPTION_OFF.replace("{default}", "False")
    (tmp_path / "a.sh").write_text("torchrun train.py --eval_first\n")
    (tmp_path / "b.sh").write_text("torchrun train.py\n")
    assert at(lint_plain(tmp_path, source), "DDP801") == []


ACCUMULATE = """
import argparse
import torch, torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

parser = argparse.ArgumentParser()
parser.add_argument("--accum-iter", type=int, default=1)
args = parser.parse_args()
dist.init_process_group("gloo")
model = DDP(torch.nn.Linear(4, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for step in range(10):
    model(torch.randn(2, 4)).sum().backward()  # every micro-step
    if (step + 1) % args.accum_iter == 0:
        opt.step()
        opt.zero_grad()
"""


def test_an_accumulation_the_readme_launches_is_no_assumption(tmp_path):
    # (MAE-style `--accum_iter` defaulting to 1, the README's command giving 4)
    (tmp_path / "README.md").write_text("# train\n\n```bash\ntorchrun --nproc_per_node 8 train.py \\\n"
                                        "    --accum-iter 4 --epochs 400\n```\n")
    found = [f for f in lint_plain(tmp_path, ACCUMULATE) if f.code == "DDP805"]
    assert [(f.location.line, f.severity.value) for f in found] == [(line_of(ACCUMULATE, "every micro-step"), "warning")]
    assert "above its default" not in found[0].message


def test_its_twin_whose_launch_leaves_the_value_to_the_shell_keeps_the_assumption(tmp_path):
    (tmp_path / "README.md").write_text("```bash\ntorchrun train.py --accum-iter $ACCUM\n```\n")
    found = [f for f in lint_plain(tmp_path, ACCUMULATE) if f.code == "DDP805"]
    assert len(found) == 1 and "above its default 1" in found[0].message


def test_launch_values_read_the_commands_that_run_the_script_only(tmp_path):
    from ddpdoctor.lint.config_files import launch_values
    script = tmp_path / "train.py"
    script.write_text("")
    (tmp_path / "train.sh").write_text(
        "# torchrun train.py --lr 9\n"
        "torchrun --nproc_per_node=2 train.py --lr=0.5 --fp16 --name 'run one' --no-ema | tee log\n"
        "python eval.py --lr 3\n"
        "python mytrain.py --lr 7\n")
    read: list = []
    values = launch_values(script, {"lr": ("lr", ""), "fp16": ("fp16", "store_true"), "name": ("name", ""),
                                    "no_ema": ("no_ema", "store_false"), "steps": ("steps", "")}, read)
    assert values == {"lr": 0.5, "fp16": True, "name": "run one", "no_ema": False}
    assert read == [str(tmp_path / "train.sh")]


def test_a_launch_option_spelt_apart_from_its_dest_sets_the_dest(tmp_path):
    # `add_argument("-a", "--accum-iter", dest="accum")`: the launch spells the option, the code reads the dest
    from ddpdoctor.lint.options import declared_options
    source = ACCUMULATE.replace('parser.add_argument("--accum-iter", type=int, default=1)',
                                'parser.add_argument("-a", "--accum-iter", dest="accum", type=int, default=1)').replace(
        "args.accum_iter", "args.accum")
    (tmp_path / "run.sh").write_text("torchrun train.py --accum-iter 4\n")
    found = [f for f in lint_plain(tmp_path, source) if f.code == "DDP805"]
    assert len(found) == 1 and "above its default" not in found[0].message

    class One:  # (a source as the parser hands it: the calls it holds)
        def of(self, kind):
            import ast
            return [n for n in ast.walk(ast.parse(source)) if isinstance(n, kind)]
    assert declared_options([One()])["accum_iter"] == ("accum", "")

