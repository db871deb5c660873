"""Shapes from session 16's eleventh blind round, each with its twin, written in our own words."""

from __future__ import annotations

from tests.unit.test_lint_real_patterns import codes, lint

KEYWORD_ONLY = """
def save_state(obj, path, *, synchronize=True):
    if synchronize:
        dist.barrier()
    torch.save(obj, path)

if dist.get_rank() == 0:
    save_state({{"step": 1}}, "train.pt"{given})
dist.barrier()
"""


def test_a_keyword_only_switch_given_false_keeps_the_barrier_off(tmp_path):
    # OLMo's checkpointer: `synchronize` after `*`, passed False by rank 0's calls
    found, _ = lint(tmp_path, KEYWORD_ONLY.format(given=", synchronize=False"))
    assert [f for f in found if f.code == "DDP801"] == []


def test_a_keyword_only_switch_left_at_its_default_keeps_the_barrier(tmp_path):
    found, _ = lint(tmp_path, KEYWORD_ONLY.format(given=""))
    assert [c for c, _, _ in codes(found) if c == "DDP801"] == ["DDP801"]


RETIRED = """
def save_retired(model, path):
    {first}
    torch.save(model.state_dict(), path)

model = DDP(torch.nn.Linear(4, 1))
model(torch.randn(8, 4)).sum().backward()
save_retired(model, "retired.pt")
"""


def test_a_save_after_an_unconditional_raise_never_runs(tmp_path):
    # relora's retired FSDP save helper
    found, _ = lint(tmp_path, RETIRED.format(first='raise RuntimeError("not supported any more")'))
    assert [f for f in found if f.code == "DDP806"] == []


def test_a_save_after_a_conditional_raise_runs(tmp_path):
    found, _ = lint(tmp_path, RETIRED.format(first='if path is None:\n        raise ValueError("no path")'))
    assert [c for c, _, _ in codes(found) if c == "DDP806"] == ["DDP806"]


UNUSED_DRAW = """
import random


class Clips(torch.utils.data.Dataset):
    def __init__(self, n=64):
        self.items = list(range(n))

    def random_slice(self, x):
        start = random.randint(0, 3)
        return x[start:]

    def __len__(self):
        return len(self.items)

    def __getitem__(self, i):
        return torch.ones(8){use}


torch.manual_seed(0)
ds = Clips()
sampler = DistributedSampler(ds)
loader = DataLoader(ds, batch_size=8, sampler=sampler, num_workers=2)
model = DDP(torch.nn.Linear(8, 1))
for epoch in range(2):
    sampler.set_epoch(epoch)
    for x in loader:
        model(x).sum().backward()
"""


def test_a_draw_in_a_method_no_item_reaches_is_no_worker_draw(tmp_path):
    # GPT-SoVITS: a random_slice() nothing calls
    found, _ = lint(tmp_path, UNUSED_DRAW.format(use=""))
    assert [f for f in found if f.code == "DDP808"] == []


def test_the_same_draw_an_item_reaches_is_a_worker_draw(tmp_path):
    found, _ = lint(tmp_path, UNUSED_DRAW.format(use="[self.random_slice(torch.ones(8)).numel() - 8:]"))
    assert [(c, s) for c, s, _ in codes(found) if c == "DDP808"] == [("DDP808", "warning")]


PINNED_ORDER = """
def make_loader(ds):
    return DataLoader(ds, batch_size=8, sampler=DistributedSampler(ds, shuffle=True))

def evaluate(model, loader):
    loader.sampler.set_epoch(0)
    with torch.no_grad():
        return sum(model(x).sum().item() for (x,) in loader)

ds = TensorDataset(torch.randn(64, 4))
train_loader, eval_loader = make_loader(ds), make_loader(ds)
model = DDP(torch.nn.Linear(4, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for epoch in range(3):
    train_loader.sampler.set_epoch({epoch})
    for (x,) in train_loader:
        opt.zero_grad()
        model(x).sum().backward()
        opt.step()
    evaluate(model.module, eval_loader)
"""


def test_an_evaluation_that_pins_its_order_with_set_epoch_0_is_not_ddp804(tmp_path):
    # py-meanflow's FID loader: set_epoch(0) on purpose, no backward there
    found, _ = lint(tmp_path, PINNED_ORDER.format(epoch="epoch"))
    assert [f for f in found if f.code == "DDP804"] == []


def test_a_training_loop_that_pins_its_order_is_ddp804(tmp_path):
    found, _ = lint(tmp_path, PINNED_ORDER.format(epoch="0"))
    assert [c for c, _, _ in codes(found) if c == "DDP804"] == ["DDP804"]


OWN_OPTIONS = """
def main():
    ds = TensorDataset(torch.randn(64, 4))
    options = {{"batch_size": 8}}
    options.update({update})
    loader = DataLoader(ds, **options)
    model = DDP(torch.nn.Linear(4, 1))
    for (x,) in loader:
        model(x).sum().backward()

main()
"""


def test_options_the_script_spells_without_a_sampler_are_no_hiding_place(tmp_path):
    # PyTorch's MNIST example's train_kwargs, as tutel's MoE example keeps it
    found, _ = lint(tmp_path, OWN_OPTIONS.format(update='{"num_workers": 1, "shuffle": True}'))
    assert [(c, s) for c, s, _ in codes(found) if c == "DDP802"] == [("DDP802", "error")]


def test_options_updated_from_elsewhere_may_hold_a_sampler(tmp_path):
    found, _ = lint(tmp_path, OWN_OPTIONS.format(update="dict(os.environ)"))
    assert [f for f in found if f.code == "DDP802"] == []


def test_options_updated_from_another_local_dict_literal_are_read_too(tmp_path):
    # tutel's MoE MNIST example: `train_kwargs.update(cuda_kwargs)`
    source = OWN_OPTIONS.format(update="extra").replace(
        '    options = {{"batch_size": 8}}\n'.replace("{{", "{").replace("}}", "}"),
        '    options = {"batch_size": 8}\n    extra = {"num_workers": 1, "shuffle": True}\n')
    found, _ = lint(tmp_path, source)
    assert [(c, s) for c, s, _ in codes(found) if c == "DDP802"] == [("DDP802", "error")]


PLACEHOLDER_METRICS = """
def grad_max_metrics(opt, collect):
    maxes = []
    for group in opt.param_groups:
        for p in group["params"]:
            if p.grad is not None and p.grad.numel() > 0:
                if {flag}:
                    maxes.append(p.grad.abs().max().unsqueeze(0))
            else:
                if collect:
                    maxes.append(torch.zeros(1))
    if maxes:
        all_max = torch.cat(maxes)
        dist.all_reduce(all_max, op=dist.ReduceOp.MAX)

model = DDP(torch.nn.Linear(8, 1))
opt = torch.optim.AdamW(model.parameters())
model(torch.randn(4, 8)).sum().backward()
grad_max_metrics(opt, collect=True)
"""


def test_one_append_per_item_on_both_sides_under_the_same_flag_has_a_fixed_length(tmp_path):
    # OLMo's clip_grads_and_collect_metrics: a real value or a placeholder, both under `if collect:`
    found, _ = lint(tmp_path, PLACEHOLDER_METRICS.format(flag="collect"))
    assert [f for f in found if f.code == "DDP807"] == []


def test_an_append_under_a_test_on_the_item_on_one_side_is_data_sized(tmp_path):
    found, _ = lint(tmp_path, PLACEHOLDER_METRICS.format(flag="p.grad.abs().max() > 0"))
    assert [c for c, _, _ in codes(found) if c == "DDP807"] == ["DDP807"]


OWN_RNG = """
import numpy as np


class GlobalOrder(torch.utils.data.IterableDataset):
    def __init__(self, n, seed=0):
        self.n, self.seed, self.epoch = n, seed, 0

    def __iter__(self):
        rng = {rng}
        for i in rng.permutation(self.n):
            yield torch.full((8,), float(i))


torch.manual_seed(0)
loader = DataLoader(GlobalOrder(1024), batch_size=16, num_workers=2)
model = DDP(torch.nn.Linear(8, 1))
for x in loader:
    model(x).sum().backward()
"""


def test_draws_from_a_generator_the_dataset_seeds_itself_are_no_worker_draws(tmp_path):
    # OLMo's global data order: np.random.Generator(PCG64(seed + epoch)), alike on every rank by design
    found, _ = lint(tmp_path, OWN_RNG.format(rng="np.random.Generator(np.random.PCG64(self.seed + self.epoch))"))
    assert [f for f in found if f.code == "DDP808"] == []


def test_draws_from_the_global_generator_the_workers_inherit_are(tmp_path):
    found, _ = lint(tmp_path, OWN_RNG.format(rng="np.random"))
    assert [c for c, _, _ in codes(found) if c == "DDP808"] == ["DDP808"]


def test_a_package_init_given_as_the_script_resolves_its_relative_imports(tmp_path, monkeypatch):
    # LibreYOLO's console module libreyolo/cli/__init__.py: `from ..training.loop import train`
    from ddpdoctor.lint.driver import gather

    for folder in ("pkg", "pkg/cli", "pkg/training"):
        (tmp_path / folder).mkdir(exist_ok=True)
        (tmp_path / folder / "__init__.py").write_text("")
    (tmp_path / "pkg/training/loop.py").write_text(
        "import torch.distributed as dist\n\ndef train():\n    dist.init_process_group('gloo')\n")
    (tmp_path / "pkg/cli/__init__.py").write_text(
        "def main():\n    from ..training.loop import train\n    train()\n")
    monkeypatch.chdir(tmp_path)
    facts = gather("pkg/cli/__init__.py")
    assert "pkg/training/loop.py" in facts.files
    assert facts.distributed is not None  # its `main` is the console command: reached


EVAL_HELD = """
from dataclasses import dataclass


def build_eval_dataloader(ds, batch_size):
    sampler = DistributedSampler(ds)
    return DataLoader(ds, batch_size=batch_size, sampler=sampler)


@dataclass
class Evaluator:
    eval_loader: DataLoader


class Trainer:
    def __init__(self, model, loader, evaluators):
        self.model, self.loader, self.evaluators = model, loader, evaluators
        self.opt = torch.optim.SGD(model.parameters(), lr=0.1)

    def eval(self):
        for ev in self.evaluators:
            for (x,) in ev.eval_loader:
                with torch.no_grad():
                    self.model(x)

    def fit(self):
        for epoch in range(3):
            for (x,) in self.loader:
                self.opt.zero_grad()
                self.model(x).sum().backward()
                self.opt.step()
            self.eval()


ds = TensorDataset(torch.randn(256, 8))
ev = Evaluator({evaluated})
train = DataLoader(ds, batch_size=16, sampler=DistributedSampler(ds, shuffle=False))
Trainer(DDP(torch.nn.Linear(8, 1)), {trained}, [ev]).fit()
"""


def test_an_evaluation_loader_kept_in_a_record_needs_no_set_epoch(tmp_path):
    # OLMo's Evaluator: the loader a builder named for evaluation makes, read with gradients off
    found, _ = lint(tmp_path, EVAL_HELD.format(evaluated="build_eval_dataloader(ds, 16)", trained="train"))
    assert [f for f in found if f.code == "DDP804"] == []


def test_a_shuffling_training_loader_beside_it_still_needs_set_epoch(tmp_path):
    source = EVAL_HELD.format(evaluated="build_eval_dataloader(ds, 16)", trained="train").replace(
        "DistributedSampler(ds, shuffle=False)", "DistributedSampler(ds)")
    found, _ = lint(tmp_path, source)
    assert [(c, line) for c, _, line in codes(found) if c == "DDP804"] == [("DDP804", 42)]
