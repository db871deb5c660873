"""What a program hands init_process_group as its rank is the rank, however it is spelled
(OpenNMT-py's `opt.gpu_ranks[device_id]`): the same expression elsewhere, and what is built from
it (`gpu_rank = opt.gpu_ranks[device_id]`, handed to a trainer as `self.gpu_rank`), is the rank,
so rank 0's early-stop `break` in a loop whose every pass runs a collective is found. The
collective there is reached through the package's dotted path (`onmt.utils.distributed.
all_gather_list(...)` after `import onmt.utils`)."""

from __future__ import annotations

from tests.unit.test_lint_table_dispatch import lint

DISTRIBUTED = """
import torch.distributed as dist


def multi_init(opt, device_id):
    dist.init_process_group("gloo", world_size=opt.world_size, rank=opt.gpu_ranks[device_id])
    return dist.get_rank()


def all_gather_list(x):
    out = [None] * dist.get_world_size()
    dist.all_gather_object(out, x)
    return out
"""
TRAINER = """
import onmt.utils


def report(opt, gpu_rank):
    return gpu_rank


def build_trainer(opt, device_id, stopper):
    if device_id >= 0:
        gpu_rank = opt.gpu_ranks[device_id]
    else:
        gpu_rank = -1
    report(opt, gpu_rank)
    return Trainer(2, gpu_rank, stopper)


class Trainer:
    def __init__(self, n_gpu, gpu_rank, stopper):
        self.n_gpu = n_gpu
        self.gpu_rank = gpu_rank
        self.stopper = stopper

    def train(self, batches):
        for step, x in enumerate(batches):
            if self.n_gpu > 1:
                n = sum(onmt.utils.distributed.all_gather_list(len(x)))
            if step % 10 == 0 and {test}:
                if self.stopper is not None:
                    self.stopper(x, step)
                    if self.stopper.has_stopped():
                        break
"""
SCRIPT = """
import argparse
from onmt.utils.distributed import multi_init
from onmt.trainer import build_trainer


def main(opt, device_id):
    multi_init(opt, device_id)
    build_trainer(opt, device_id, None).train([[1.0]] * 100)


main(argparse.Namespace(gpu_ranks=[0, 1], world_size=2), 0)
"""


def modules(test: str) -> dict:
    return {"onmt/__init__": "", "onmt/utils/__init__": "from onmt.utils import distributed\n",
            "onmt/utils/distributed": DISTRIBUTED, "onmt/trainer": TRAINER.format(test=test)}


def test_rank_zero_alone_stopping_a_loop_of_collectives_is_found(tmp_path):
    found, _ = lint(tmp_path, SCRIPT, **modules("self.gpu_rank <= 0"))
    assert [(f.code, f.severity.value) for f in found if f.code == "DDP809"] == [("DDP809", "warning")]


def test_a_stop_every_rank_decides_alike_is_clean(tmp_path):
    found, _ = lint(tmp_path, SCRIPT, **modules("self.n_gpu > 0"))
    assert [f.code for f in found if f.code in ("DDP809", "DDP801")] == []


def test_an_answer_worked_out_with_the_depth_spent_is_not_the_answer_to_a_fresh_question(tmp_path):
    import ast

    from ddpdoctor.lint.program import Program
    from ddpdoctor.lint.sources import load_program

    (tmp_path / "train.py").write_text(
        "import torch.distributed as dist\n\n\ndef main(opt, i):\n    who = opt.ranks[i]\n"
        "    dist.init_process_group('gloo', rank=opt.ranks[i], world_size=2)\n    return who\n")
    program = Program(load_program(str(tmp_path / "train.py"), []))
    fn = next(f for f in program.functions if f.name == "main")
    ret = next(n for n in ast.walk(fn.node) if isinstance(n, ast.Return))
    assert program.ranks.is_rank(ret.value, fn, 0) is False  # no depth left to follow `who`
    assert program.ranks.is_rank(ret.value, fn, 4) is True  # who = opt.ranks[i], init's rank
