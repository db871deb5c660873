"""A rank test that also reads a config switch (`if rank != 0 and not cfg.flag: return`): taken
at the switch's class-body default when the source settles it (an error naming the default), an
assumption (a warning) when it does not."""

from __future__ import annotations

from tests.unit.test_lint_real_patterns import codes, lint

SAVE_THEN_BARRIER = """
from dataclasses import dataclass, field
from confparse import parse_config


@dataclass
class RunConfig:
    lr: float = 1e-3
    {declared}


class Runner:
    def __init__(self, cfg: RunConfig, model):
        self.cfg = cfg
        self.model = model

    def save(self):
        if dist.get_rank() != 0 and not self.cfg.every_rank:
            return
        torch.save(self.model.state_dict(), "ckpt.pt")
        dist.barrier()


def main(cfg):
    model = DDP(torch.nn.Linear(2, 2))
    {setup}
    Runner(cfg, model).save()


main(parse_config())  # a library's parser: the type comes from the annotation
"""


def _found(tmp_path, declared="every_rank: bool = False", setup="pass"):
    found, _ = lint(tmp_path, SAVE_THEN_BARRIER.format(declared=declared, setup=setup))
    return [f for f in found if f.code == "DDP801"]


def test_a_switch_whose_default_leaves_rank_zero_alone_at_the_barrier_is_an_error_that_names_it(tmp_path):
    found = _found(tmp_path)
    assert [f.severity.value for f in found] == ["error"]
    assert found[0].evidence["given"].endswith("train.py:14)")
    assert found[0].message.startswith("with `RunConfig.every_rank` at its default `False`")


def test_a_default_given_through_field_counts_the_same(tmp_path):
    found = _found(tmp_path, declared="every_rank: bool = field(default=False)")
    assert [f.severity.value for f in found] == ["error"]


def test_a_default_that_keeps_every_rank_together_leaves_the_finding_a_warning_on_an_assumption(tmp_path):
    found = _found(tmp_path, declared="every_rank: bool = True")
    assert [(f.severity.value, f.evidence["assumption"]) for f in found] == [
        ("warning", "`not self.cfg.every_rank` is true on every rank")]


def test_a_switch_the_script_sets_is_not_taken_at_its_default(tmp_path):
    found = _found(tmp_path, setup="cfg.every_rank = bool(cfg.lr)")
    assert [f.severity.value for f in found] == ["warning"]


def test_a_required_field_without_a_default_stays_an_assumption(tmp_path):
    found = _found(tmp_path, declared="every_rank: bool")
    assert [f.severity.value for f in found] == ["warning"]


def test_a_subclass_that_declares_another_default_leaves_it_open(tmp_path):
    found, _ = lint(tmp_path, SAVE_THEN_BARRIER.format(declared="every_rank: bool = False", setup="pass")
                    + "\n\nclass SweepConfig(RunConfig):\n    every_rank: bool = True\n")
    assert [f.severity.value for f in found if f.code == "DDP801"] == ["warning"]
