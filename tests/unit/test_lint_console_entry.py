"""An entry file that runs nothing itself (only definitions, no `__main__` block) is a console
script's module: setup.py's `entry_points` runs its `main`. The lint starts there too; before,
nothing in such a file was reached, so a real bug in it linted clean."""

from __future__ import annotations

import textwrap

from ddpdoctor.lint.driver import gather, lint_results
from tests.unit.test_lint_real_patterns import codes

CONSOLE = """
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
def evaluate(model):
    if dist.get_rank() == 0:
        dist.all_reduce(torch.zeros(1))
def main():
    dist.init_process_group("gloo")
    model = DDP(torch.nn.Linear(4, 1))
    evaluate(model)
"""


def lint(tmp_path, source):
    path = tmp_path / "cli.py"
    path.write_text(textwrap.dedent(source).lstrip("\n"))
    return [f for r in lint_results(gather(str(path)), set()) for f in r.findings]


def test_a_console_scripts_main_is_linted_and_its_rank0_only_collective_found(tmp_path):
    found = lint(tmp_path, CONSOLE)
    assert [c for c, _, _ in codes(found)] == ["DDP801"]


def test_its_twin_with_the_collective_on_every_rank_is_clean(tmp_path):
    found = lint(tmp_path, CONSOLE.replace("    if dist.get_rank() == 0:\n        dist", "    if True:\n        dist"))
    assert codes(found) == []


def test_a_file_with_a_main_block_that_never_calls_main_is_not_taken_from_main(tmp_path):
    found = lint(tmp_path, CONSOLE + "if __name__ == '__main__':\n    print('usage: see the docs')\n")
    assert codes(found) == []
