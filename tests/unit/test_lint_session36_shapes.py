"""Shapes from session 36 (holdout 39, read). Each with its healthy (or buggy) twin, written in
our own words."""

from __future__ import annotations

from tests.unit.test_lint_round17_shapes import lint_plain
from tests.unit.test_lint_round50_shapes import at, line_of

# -------------------------------------------------- `rank is None or rank == 0`
SAVER = """
import torch, torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP


class BestSaver:
    def __init__(self, model, path, rank=None):
        self.model, self.path, self.rank = model, path, rank

    def save(self):
        if {test}:
            torch.save(self.model.state_dict(), self.path)  # the best model


def main():
    dist.init_process_group("gloo")
    model = DDP(torch.nn.Linear(4, 1))
    saver = BestSaver(model.module, "best.pt", rank=dist.get_rank())
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for step in range(10):
        model(torch.randn(2, 4)).sum().backward()
        opt.step()
        saver.save()


if __name__ == "__main__":
    main()
"""


def test_no_rank_handed_in_is_the_one_process_side_of_a_rank_test(tmp_path):
    # (a checkpoint keeper built with `dist_rank=None` by default and the global rank in DDP)
    source = SAVER.replace("{test}", "self.rank is None or self.rank == 0")
    assert at(lint_plain(tmp_path, source), "DDP806") == []


def test_its_twin_with_a_flag_that_is_no_rank_saves_on_every_rank(tmp_path):
    source = SAVER.replace("{test}", "self.path is None or self.rank == 0")
    assert at(lint_plain(tmp_path, source), "DDP806") == [(line_of(source, "the best model"), "warning")]


# -------------------------------------------------- a modified library shipped as a sub-project
SHIPPED = """
import torch, torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from mylib.models import Keeper


def main():
    dist.init_process_group("gloo")
    model = DDP(torch.nn.Linear(4, 1))
    keeper = Keeper(model.module)
    for step in range(10):
        model(torch.randn(2, 4)).sum().backward()
        keeper.save_state()
"""

KEEPER = """
import functools
import torch
import torch.distributed as dist


def main_only(func):
    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        if dist.get_rank() == 0:
            return func(*args, **kwargs)
    return wrapper


class Keeper:
    def __init__(self, net):
        self.net = net

    {decorator}
    def save_state(self):
        torch.save(self.net.state_dict(), "state.pth")  # the state
"""


def _shipped(tmp_path, monkeypatch, decorator: str):
    package = tmp_path / "mylib_modified" / "mylib"
    package.mkdir(parents=True)
    (tmp_path / "mylib_modified" / "setup.py").write_text("from setuptools import setup\nsetup(name='mylib')\n")
    (package / "__init__.py").write_text("")
    (package / "models.py").write_text(KEEPER.lstrip("\n").replace("{decorator}", decorator))
    monkeypatch.chdir(tmp_path)
    return lint_plain(tmp_path, SHIPPED)


def test_a_library_shipped_as_a_sub_project_is_read_and_its_main_only_saves_are_rank_zero(tmp_path, monkeypatch):
    # (BasicSR forks: `basicsr_modified/` with its setup.py, imported as `basicsr`)
    assert at(_shipped(tmp_path, monkeypatch, "@main_only"), "DDP806") == []


def test_its_twin_without_the_decorator_saves_on_every_rank(tmp_path, monkeypatch):
    found = _shipped(tmp_path, monkeypatch, "")
    assert [(f.location.file.rsplit("/", 1)[-1], f.location.line, f.severity.value) for f in found if f.code == "DDP806"] == \
        [("models.py", line_of(KEEPER, "the state"), "warning")]


# -------------------------------------------------- `if evaluator is None:` where it never is
EVALUATED = """
import argparse
import torch, torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP


class VOCEvaluator:
    def evaluate(self, model):
        return 0.5


class COCOEvaluator(VOCEvaluator):
    pass


def build(name):
    data = torch.randn(64, 4)
    if name == "voc":
        evaluator = VOCEvaluator()
    elif name == "coco":
        evaluator = COCOEvaluator()
    else:
        {other}
    return data, evaluator


def train(args):
    dist.init_process_group("gloo")
    data, evaluator = build(args.dataset)
    model = DDP(torch.nn.Linear(4, 1))
    for epoch in range(3):
        model(data).sum().backward()
        if evaluator is None:
            torch.save(model.module.state_dict(), "last.pth")  # no evaluator: keep the weights
        elif dist.get_rank() == 0:
            evaluator.evaluate(model.module)


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--dataset", default="voc")
    train(parser.parse_args())
"""


def test_a_name_a_builder_always_makes_an_object_is_never_none(tmp_path):
    # (detector trainers: `dataset, evaluator = build_dataset(args)`, an evaluator class per
    # dataset and `exit()` for an unknown one)
    source = EVALUATED.replace("{other}", "raise SystemExit('unknown dataset')")
    assert at(lint_plain(tmp_path, source), "DDP806") == []


def test_its_twin_leaving_the_evaluator_none_on_one_way_saves_on_every_rank(tmp_path):
    source = EVALUATED.replace("{other}", "evaluator = None")
    assert at(lint_plain(tmp_path, source), "DDP806") == [(line_of(source, "keep the weights"), "warning")]


# -------------------------------------------------- the `else:` of the test that picks DDP
BOTH = """
import argparse
import torch, torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, DistributedSampler, TensorDataset


def train(args):
    if args.distributed:
        dist.init_process_group("gloo")
    dataset = TensorDataset(torch.randn(64, 4))
    model = torch.nn.Linear(4, 1)
    if {wrap_test}:
        model = DDP(model)
    if args.distributed and args.num_gpu > 1:
        loader = DataLoader(dataset, batch_size=8, sampler=DistributedSampler(dataset))
    else:
        loader = DataLoader(dataset, batch_size=8, shuffle=True)  # the one-process loader
    for (x,) in loader:
        model(x).sum().backward()


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("-dist", "--distributed", action="store_true")
    parser.add_argument("--num_gpu", type=int, default=1)
    train(parser.parse_args())
"""


def test_the_else_of_the_test_that_picks_the_ddp_model_is_the_one_process_run(tmp_path):
    # (`if args.distributed and args.num_gpu > 1:` both wraps the model and picks the sampler)
    source = BOTH.replace("{wrap_test}", "args.distributed and args.num_gpu > 1")
    assert at(lint_plain(tmp_path, source), "DDP802") == []


def test_its_twin_wrapping_on_the_switch_alone_trains_ddp_on_the_plain_loader(tmp_path):
    source = BOTH.replace("{wrap_test}", "args.distributed")
    assert at(lint_plain(tmp_path, source), "DDP802") == [(line_of(source, "the one-process loader"), "error")]


# -------------------------------------------------- a one-process launch beside a distributed one
def test_a_one_process_launch_says_nothing_of_the_distributed_runs_options(tmp_path):
    # (the README's `python train.py` for one GPU, then `torch.distributed.launch
    # --nproc_per_node=8 train.py --accum-iter 4` for eight)
    from tests.unit.test_lint_session35_shapes import ACCUMULATE
    (tmp_path / "README.md").write_text("```Shell\npython train.py --epochs 3\n```\n\n```Shell\n"
                                        "python -m torch.distributed.launch --nproc_per_node=8 train.py \\\n"
                                        "    --accum-iter 4\n```\n")
    found = [f for f in lint_plain(tmp_path, ACCUMULATE) if f.code == "DDP805"]
    assert len(found) == 1 and "above its default" not in found[0].message


def test_its_twin_with_two_distributed_launches_that_disagree_keeps_the_default(tmp_path):
    from tests.unit.test_lint_session35_shapes import ACCUMULATE
    (tmp_path / "README.md").write_text("```Shell\ntorchrun --nproc_per_node=2 train.py --epochs 3\n```\n\n"
                                        "```Shell\ntorchrun --nproc_per_node=8 train.py --accum-iter 4\n```\n")
    found = [f for f in lint_plain(tmp_path, ACCUMULATE) if f.code == "DDP805"]
    assert len(found) == 1 and "above its default 1" in found[0].message


# -------------------------------------------------- a rank four steps away from the save
SHARDED_SAVE = """
import os
import torch, torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP


def rank_tag():
    return {tag}


class Checkpointer:
    def __init__(self, model, save_dir):
        self.model, self.save_dir = model, save_dir

    def save(self, name):
        basename = f"{name}.{rank_tag()}.pth"
        save_file = os.path.join(self.save_dir, basename)
        with open(save_file, "wb") as f:
            torch.save(self.model.state_dict(), f)  # each rank's shard


def main():
    dist.init_process_group("gloo")
    model = DDP(torch.nn.Linear(4, 1))
    keeper = Checkpointer(model.module, "ckpt")
    for step in range(10):
        model(torch.randn(2, 4)).sum().backward()
    keeper.save("last")


if __name__ == "__main__":
    main()
"""


def test_a_file_named_by_a_rank_helper_through_a_join_and_an_open_is_the_ranks_own(tmp_path):
    # (DINOv2-style FSDP checkpointers: `f"{name}.{rankstr()}.pth"`, then `with open(...) as f`)
    source = SHARDED_SAVE.replace("{tag}", 'f"rank_{dist.get_rank()}"')
    assert at(lint_plain(tmp_path, source), "DDP806") == []


def test_its_twin_whose_tag_is_the_same_on_every_rank_saves_one_file_from_all(tmp_path):
    source = SHARDED_SAVE.replace("{tag}", '"main"')
    assert at(lint_plain(tmp_path, source), "DDP806") == [(line_of(source, "each rank's shard"), "warning")]


# -------------------------------------------------- a factory entered with its class's constant
FACTORY = """
import torch, torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, DistributedSampler, TensorDataset


class LoaderFactory:
    small = 1
    large = 5

    def make(self, kind):
        dataset = TensorDataset(torch.randn(64, 4))
        if kind == self.small:
            loader = DataLoader(dataset, batch_size=8, shuffle=True)  # the small set's loader
        elif kind == self.large:
            loader = DataLoader(dataset, batch_size=8, sampler=DistributedSampler(dataset))
        return loader


def main():
    dist.init_process_group("gloo")
    model = DDP(torch.nn.Linear(4, 1))
    factory = LoaderFactory()
    loader = factory.make(factory.{kind})
    for (x,) in loader:
        model(x).sum().backward()


if __name__ == "__main__":
    main()
"""


def test_a_factory_side_no_call_takes_by_its_class_constant_builds_no_loader(tmp_path):
    # (ImageNet trainers with a loader factory for several datasets: `df.make(df.imagenet2012)`)
    source = FACTORY.replace("{kind}", "large")
    assert at(lint_plain(tmp_path, source), "DDP802") == []


def test_its_twin_entered_with_the_small_set_trains_on_the_plain_loader(tmp_path):
    source = FACTORY.replace("{kind}", "small")
    assert at(lint_plain(tmp_path, source), "DDP802") == [(line_of(source, "the small set's loader"), "error")]


# -------------------------------------------------- a save behind an option off by default
RESAVE = """
import argparse
import torch, torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

parser = argparse.ArgumentParser()
parser.add_argument("--resave", action="store_true", default={default})
args = parser.parse_args()
dist.init_process_group("gloo")
model = torch.nn.Linear(4, 1)
if args.resave:
    torch.save(model.state_dict(), "weights_only.pth")  # the re-save
model = DDP(model)
model(torch.randn(2, 4)).sum().backward()
if dist.get_rank() == 0:
    torch.save(model.module.state_dict(), "trained.pth")  # the run's own checkpoint
"""


def test_a_save_behind_a_store_true_option_is_not_on_the_run_as_launched(tmp_path):
    # (`--resave` re-writes a loaded checkpoint as bare weights: a tool's path, off by default)
    assert at(lint_plain(tmp_path, RESAVE.replace("{default}", "False")), "DDP806") == []


def test_its_twin_on_by_default_saves_on_every_rank(tmp_path):
    source = RESAVE.replace("{default}", "True")
    assert at(lint_plain(tmp_path, source), "DDP806") == [(line_of(source, "the re-save"), "warning")]


def test_an_option_that_holds_every_save_of_the_run_is_taken_as_given(tmp_path):
    # (`--use_writer` around the checkpoints and the logs, turned on by the repository's own
    # launcher): a training run that keeps nothing is not the one launched
    source = RESAVE.replace("{default}", "False").replace(
        'if dist.get_rank() == 0:\n    torch.save(model.module.state_dict(), "trained.pth")  # the run\'s own checkpoint\n', "")
    assert "trained.pth" not in source
    assert at(lint_plain(tmp_path, source), "DDP806") == [(line_of(source, "the re-save"), "warning")]


# -------------------------------------------------- one epoch loop for training and validation
ONE_LOOP = """
import torch, torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, DistributedSampler, TensorDataset


def build():
    train_set, val_set = TensorDataset(torch.randn(64, 4)), TensorDataset(torch.randn(16, 4))
    train_loader = DataLoader(train_set, batch_size=8, sampler=DistributedSampler(train_set))  # the training sampler
    val_loader = DataLoader(val_set, batch_size=8, sampler=DistributedSampler(val_set))  # the validation sampler
    return train_loader, val_loader


class Trainer:
    def __init__(self, model):
        self.model = model

    def train_step(self, x):
        self.model(x).sum().backward()

    @torch.no_grad()
    def test_step(self, x):
        return self.model(x).sum().item()

    def run_epoch(self, dl, training=True):
        for (x,) in dl:
            if training is True:
                self.train_step(x)
            else:
                self.test_step(x)

    def train(self, train_dl, val_dl):
        for epoch in range(10):  # (no set_epoch at all)
            self.run_epoch(train_dl, training=True)
            self.run_epoch(val_dl, training={validation})


def main():
    dist.init_process_group("gloo")
    train_loader, val_loader = build()
    Trainer(DDP(torch.nn.Linear(4, 1))).train(train_loader, val_loader)


if __name__ == "__main__":
    main()
"""


def test_a_validation_loader_run_through_the_shared_loop_with_training_off_needs_no_epoch(tmp_path):
    # (speech-enhancement trainers: `run_epoch(dl, training)` with `if training is True:`)
    source = ONE_LOOP.replace("{validation}", "False")
    assert at(lint_plain(tmp_path, source), "DDP804") == [(line_of(source, "the training sampler"), "warning")]


def test_its_twin_training_on_the_second_loader_too_needs_its_epoch_set(tmp_path):
    source = ONE_LOOP.replace("{validation}", "True")
    assert at(lint_plain(tmp_path, source), "DDP804") == [(line_of(source, "the training sampler"), "warning"),
                                                          (line_of(source, "the validation sampler"), "warning")]


# -------------------------------------------------- a flat project: tools/train.py and setup.py
def _flat(tmp_path, monkeypatch, packaged: bool):
    from ddpdoctor.lint.driver import gather, lint_results
    project = tmp_path / "Tracker"
    (project / "mylib").mkdir(parents=True)
    (project / "tools").mkdir()
    (project / "experiments" / "full").mkdir(parents=True)
    if packaged:
        (project / "setup.py").write_text("from setuptools import setup\nsetup(name='mylib')\n")
    (project / "mylib" / "__init__.py").write_text("")
    (project / "mylib" / "models.py").write_text(KEEPER.lstrip("\n").replace("{decorator}", ""))
    (project / "tools" / "train.py").write_text(SHIPPED.lstrip("\n"))
    monkeypatch.chdir(project / "experiments" / "full")  # (the README: cd experiments/full; python ../../tools/train.py)
    return [f for r in lint_results(gather("../../tools/train.py"), set()) for f in r.findings]


def test_a_flat_project_with_its_setup_py_reads_its_package_from_a_tools_script(tmp_path, monkeypatch):
    # (pysot-style trackers: `python setup.py develop`, then tools/train.py imports the package)
    found = _flat(tmp_path, monkeypatch, packaged=True)
    assert [(f.location.file.rsplit("/", 1)[-1], f.location.line) for f in found if f.code == "DDP806"] == \
        [("models.py", line_of(KEEPER, "the state"))]


def test_its_twin_without_a_setup_py_leaves_the_package_unread(tmp_path, monkeypatch):
    found = _flat(tmp_path, monkeypatch, packaged=False)
    assert [f for f in found if f.code == "DDP806"] == []


# -------------------------------------------------- the loader under another name in the epoch loop
GLUE_STYLE = """
import torch, torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, DistributedSampler, TensorDataset
from tqdm import tqdm, trange


def train(model, dataset, epochs):
    train_sampler = DistributedSampler(dataset)  # the training sampler
    train_dataloader = DataLoader(dataset, batch_size=8, sampler=train_sampler)
    train_iterator = trange(epochs, desc="Epoch")
    for i in train_iterator:  # (no loop names an epoch)
        {set_epoch}
        epoch_iterator = train_dataloader
        for step, (x,) in enumerate(tqdm(epoch_iterator)):
            model(x).sum().backward()


def main():
    dist.init_process_group("gloo")
    train(DDP(torch.nn.Linear(4, 1)), TensorDataset(torch.randn(64, 4)), 20)  # twenty passes


if __name__ == "__main__":
    main()
"""


def test_a_loader_read_through_a_plain_alias_each_epoch_needs_its_epoch_set(tmp_path):
    # (run_glue-style fine-tuning scripts: `epoch_iterator = train_dataloader` in the epoch loop)
    source = GLUE_STYLE.replace("{set_epoch}", "pass")
    assert at(lint_plain(tmp_path, source), "DDP804") == [(line_of(source, "the training sampler"), "warning")]


def test_its_twin_setting_the_epoch_is_healthy(tmp_path):
    source = GLUE_STYLE.replace("{set_epoch}", "train_sampler.set_epoch(i)")
    assert at(lint_plain(tmp_path, source), "DDP804") == []


# -------------------------------------------------- the accumulation period kept inside the step helper
COUNTED = """
import torch, torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP


class Trainer:
    def __init__(self, accum):
        self.model = DDP(torch.nn.Linear(4, 1))
        self.optimizer = torch.optim.SGD(self.model.parameters(), lr=0.1)
        self.accum, self.accum_iter = accum, 0
        self.train_step = self._train_step_linear

    def optimizer_step(self):
        self.accum_iter += 1
        {early_return}
        self.optimizer.step()
        self.optimizer.zero_grad()
        self.accum_iter = 0

    def _train_step_linear(self, x):
        loss = self.model(x).sum()
        loss.backward()  # every batch
        self.optimizer_step()

    def train(self):
        for epoch in range(3):
            for i in range(10):
                self.train_step(torch.randn(2, 4))


def main():
    dist.init_process_group("gloo")
    Trainer(4).train()


if __name__ == "__main__":
    main()
"""


def test_a_step_helper_that_returns_early_on_its_own_counter_accumulates(tmp_path):
    # (TTS trainers: `self.accum_iter += 1; if self.accum_iter != accum_grad: return`)
    source = COUNTED.replace("{early_return}", "if self.accum_iter != self.accum:\n            return None")
    assert at(lint_plain(tmp_path, source), "DDP805") == [(line_of(source, "every batch"), "warning")]


def test_its_twin_returning_early_on_a_non_finite_loss_only_steps_every_batch(tmp_path):
    source = COUNTED.replace("{early_return}", "if not torch.isfinite(torch.tensor(1.0)):\n            return None")
    assert at(lint_plain(tmp_path, source), "DDP805") == []


# -------------------------------------------------- a random transform a local builder makes
BUILT_TRANSFORM = """
import torch, torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, Dataset, DistributedSampler
from torchvision import transforms

torch.manual_seed(41)  # the module's fixed seed, run again by every spawned rank


def build_transform(is_train, size):
    if is_train:
        return transforms.Compose([{train_ops}transforms.Resize(size)])
    return transforms.Resize(size)


class Images(Dataset):
    def __init__(self, is_train=True):
        self.transform = build_transform(is_train, 32)

    def __len__(self):
        return 64

    def __getitem__(self, i):
        return self.transform(torch.full((3, 40, 40), float(i)))


def worker(rank):
    dist.init_process_group("gloo", rank=rank, world_size=2)
    dataset = Images(is_train=True)
    loader = DataLoader(dataset, batch_size=8, sampler=DistributedSampler(dataset), num_workers=4)  # the loader
    model = DDP(torch.nn.Linear(3 * 32 * 32, 1))
    for epoch in range(3):
        loader.sampler.set_epoch(epoch)
        for x in loader:
            model(x.flatten(1)).sum().backward()


if __name__ == "__main__":
    torch.multiprocessing.spawn(worker, nprocs=2)
"""


def test_a_random_transform_a_local_builder_makes_draws_alike_in_every_ranks_workers(tmp_path):
    # (BEiT-style VQA fine-tuning: `self.transform = build_transform(is_train, img_size)`)
    source = BUILT_TRANSFORM.replace("{train_ops}", "transforms.RandomHorizontalFlip(), ")
    assert at(lint_plain(tmp_path, source), "DDP808") == [(line_of(source, "the loader"), "warning")]


def test_its_twin_whose_builder_draws_nothing_is_healthy(tmp_path):
    source = BUILT_TRANSFORM.replace("{train_ops}", "")
    assert at(lint_plain(tmp_path, source), "DDP808") == []


# -------------------------------------------------- a rank helper compared with `is True`
IS_TRUE = """
import argparse
import torch, torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP


def is_global_primary(args):
    return {answer}


def main(args):
    dist.init_process_group("gloo")
    args.rank = dist.get_rank()
    model = DDP(torch.nn.Linear(4, 1))
    model(torch.randn(2, 4)).sum().backward()
    if is_global_primary(args) is True:
        torch.save(model.module.state_dict(), "model.pt")  # the checkpoint


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--verbose", action="store_true")
    main(parser.parse_args())
"""


def test_a_rank_helper_compared_with_is_true_is_the_rank_test(tmp_path):
    # (typed training frameworks: `if training_utils.is_global_primary(args) is True:`)
    assert at(lint_plain(tmp_path, IS_TRUE.replace("{answer}", "args.rank == 0")), "DDP806") == []


def test_its_twin_whose_helper_answers_a_flag_saves_on_every_rank(tmp_path):
    source = IS_TRUE.replace("{answer}", "args.verbose is False")
    assert at(lint_plain(tmp_path, source), "DDP806") == [(line_of(source, "the checkpoint"), "warning")]


# -------------------------------------------------- a module's function picked into a name
PICKED_LOADER = """
import torch
from torch.utils.data import DataLoader, DistributedSampler, TensorDataset


def load_data(batch_size):
    dataset = TensorDataset(torch.randn(64, 4))
    loader = DataLoader(dataset, batch_size=batch_size, sampler=DistributedSampler(dataset{shuffle}))  # the sampler
    while True:
        yield from loader
"""
PICKING = """
import torch, torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
import data_loading


def create(name, batch_size):
    if name == "knee":
        load = data_loading.load_data
    else:
        raise ValueError(name)
    return load(batch_size)


def main():
    dist.init_process_group("gloo")
    model = DDP(torch.nn.Linear(4, 1))
    batches = create("knee", 8)
    for step in range(1000):
        (x,) = next(batches)
        model(x).sum().backward()


if __name__ == "__main__":
    main()
"""


def test_a_modules_function_picked_into_a_name_runs_where_the_name_is_called(tmp_path):
    # (guided-diffusion style trainers: `load_data = fastmri.load_data` then `return load_data(...)`,
    # an endless `while True: yield from loader` with a shuffling sampler and no set_epoch)
    module = PICKED_LOADER.replace("{shuffle}", "").lstrip("\n")
    found = lint_plain(tmp_path, PICKING, data_loading=module)
    assert [(f.location.file.rsplit("/", 1)[-1], f.location.line) for f in found if f.code == "DDP804"] == \
        [("data_loading.py", line_of(module, "the sampler"))]


def test_its_twin_with_an_ordered_sampler_needs_no_epoch(tmp_path):
    module = PICKED_LOADER.replace("{shuffle}", ", shuffle=False")
    assert at(lint_plain(tmp_path, PICKING, data_loading=module), "DDP804") == []


# -------------------------------------------------- a table of lambdas, each building a dataset
LAMBDA_TABLE = """
import torch, torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, DistributedSampler
from torchvision import datasets, transforms

torch.manual_seed(0)


def pipeline(size):
    return transforms.Compose([{ops}transforms.ToTensor()])


class Views:
    def __init__(self, root):
        self.root = root

    def get_dataset(self, name):
        table = {"cifar10": lambda: datasets.CIFAR10(self.root, train=True, transform=pipeline(32)),
                 "stl10": lambda: datasets.STL10(self.root, split="unlabeled", transform=pipeline(96))}
        build = table[name]
        return build()


def main():
    dist.init_process_group("gloo")
    train_dataset = Views("data").get_dataset("cifar10")
    loader = DataLoader(train_dataset, batch_size=8, sampler=DistributedSampler(train_dataset), num_workers=4)  # the loader
    model = DDP(torch.nn.Linear(4, 1))
    for epoch in range(3):
        loader.sampler.set_epoch(epoch)
        for x, y in loader:
            model(x.flatten(1)[:, :4]).sum().backward()


if __name__ == "__main__":
    main()
"""


def test_a_table_of_lambdas_building_datasets_is_followed_to_their_transforms(tmp_path):
    # (SimCLR forks: `valid_datasets = {"cifar10": lambda: datasets.CIFAR10(..., transform=...)}`)
    source = LAMBDA_TABLE.replace("{ops}", "transforms.RandomResizedCrop(size), ")
    assert at(lint_plain(tmp_path, source), "DDP808") == [(line_of(source, "the loader"), "warning")]


def test_its_twin_whose_transforms_draw_nothing_is_healthy(tmp_path):
    assert at(lint_plain(tmp_path, LAMBDA_TABLE.replace("{ops}", "transforms.Resize(size), ")), "DDP808") == []


# -------------------------------------------------- the modulus a call hands a rank helper
MASTER_PROC = """
import argparse
import torch, torch.distributed as dist
import torch.multiprocessing as mp
from torch.nn.parallel import DistributedDataParallel as DDP


def is_master_proc(num_gpus=8):
    if dist.is_initialized():
        return dist.get_rank() % num_gpus == 0
    return True


def save_checkpoint(model, args):
    if not is_master_proc({modulus}):
        return
    torch.save(model.state_dict(), "checkpoint.pyth")  # the checkpoint


def run(local_rank, args):
    rank = args.shard_id * args.num_gpus + local_rank
    dist.init_process_group("gloo", rank=rank, world_size=args.num_gpus * args.num_shards)
    model = DDP(torch.nn.Linear(4, 1))
    model(torch.randn(2, 4)).sum().backward()
    save_checkpoint(model.module, args)


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--num_gpus", type=int, default=8)
    parser.add_argument("--num_shards", type=int, default=1)
    parser.add_argument("--shard_id", type=int, default=0)
    args = parser.parse_args()
    mp.spawn(run, nprocs=args.num_gpus, args=(args,))
"""


def test_a_rank_helpers_modulus_given_the_jobs_size_is_rank_zero(tmp_path):
    # (SlowFast-style codebases: `du.is_master_proc(cfg.NUM_GPUS * cfg.NUM_SHARDS)` before the save)
    source = MASTER_PROC.replace("{modulus}", "args.num_gpus * args.num_shards")
    assert at(lint_plain(tmp_path, source), "DDP806") == []


def test_its_twin_given_the_per_node_count_writes_once_per_node(tmp_path):
    source = MASTER_PROC.replace("{modulus}", "args.num_gpus")
    assert at(lint_plain(tmp_path, source), "DDP806") == [(line_of(source, "the checkpoint"), "warning")]


# -------------------------------------------------- a registry's dataset, a factory's worker_init_fn
REGISTRY_MAIN = """
import torch, torch.distributed as dist
import torch.multiprocessing as mp
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, DistributedSampler
from videos import REGISTRY, load_config


def worker_init_factory(dataset):
    {factory_body}


def build_dataset(name, cfg, split):
    return REGISTRY.get(name.capitalize())(cfg, split)


def train(rank, cfg):
    dist.init_process_group("gloo", rank=rank, world_size=2)
    torch.manual_seed(cfg["seed"])  # the same seed on every rank
    dataset = build_dataset(cfg["dataset"], cfg, "train")
    loader = DataLoader(dataset, batch_size=4, sampler=DistributedSampler(dataset), num_workers=8,
                        worker_init_fn=worker_init_factory(dataset))  # the loader
    model = DDP(torch.nn.Linear(4, 1))
    for epoch in range(3):
        loader.sampler.set_epoch(epoch)
        for x in loader:
            model(x).sum().backward()


if __name__ == "__main__":
    mp.spawn(train, nprocs=2, args=(load_config("kinetics.yaml"),))
"""
VIDEOS = """
import random
import torch
from torch.utils.data import Dataset


class Registry:
    def __init__(self):
        self.table = {}

    def register(self):
        def add(cls):
            self.table[cls.__name__] = cls
            return cls
        return add

    def get(self, name):
        return self.table[name]


REGISTRY = Registry()


def load_config(path):
    return {"seed": 0, "dataset": "kinetics", "path": path}


@REGISTRY.register()
class Kinetics(Dataset):
    def __init__(self, cfg, split):
        self.split = split

    def __len__(self):
        return 64

    def __getitem__(self, i):
        start = {start}
        return torch.arange(8.0)[start:start + 4]
"""


def _registry(tmp_path, factory_body: str, start: str):
    return lint_plain(tmp_path, REGISTRY_MAIN.replace("{factory_body}", factory_body),
                      videos=VIDEOS.replace("{start}", start))


def test_a_registry_built_dataset_and_a_factory_returning_no_worker_init_fn_draw_alike(tmp_path):
    # (SlowFast-style video codebases: `DATASET_REGISTRY.get(name)(cfg, split)` and
    # `worker_init_fn=utils.loader_worker_init_fn(dataset)`, which returns None)
    found = _registry(tmp_path, "return None", "random.randint(0, 4)")
    assert at(found, "DDP808") == [(line_of(REGISTRY_MAIN, "the loader") - 1, "warning")]


def test_its_twin_whose_dataset_draws_nothing_is_healthy(tmp_path):
    assert at(_registry(tmp_path, "return None", "i % 4"), "DDP808") == []


def test_its_twin_whose_factory_returns_a_function_of_its_own_is_not_judged_here(tmp_path):
    body = "def init(worker_id):\n        pass\n    return init"
    assert at(_registry(tmp_path, body, "random.randint(0, 4)"), "DDP808") == []


def test_a_sub_projects_package_named_like_the_standard_library_does_not_shadow_it(tmp_path, monkeypatch):
    # an installed sub-project comes after the standard library on the path: its vendored
    # `json/` is not what `import json` loads (a `json.py` beside the script still would be)
    (tmp_path / "vendored" / "json").mkdir(parents=True)
    (tmp_path / "vendored" / "setup.py").write_text("")
    (tmp_path / "vendored" / "json" / "__init__.py").write_text(
        "import torch\n\ndef dumps(x):\n    torch.save(x, 'oops.pt')\n")
    monkeypatch.chdir(tmp_path)
    source = SHIPPED.replace("from mylib.models import Keeper", "import json").replace(
        "    keeper = Keeper(model.module)\n", "").replace("        keeper.save_state()", "        json.dumps(step)")
    assert "json.dumps(step)" in source
    assert at(lint_plain(tmp_path, source), "DDP806") == []
