"""Rank tests recognised by data flow, scope by scope (issue 23): each case re-writes, in our own
words, a pattern seen in public training code, with the code, severity and line it must give."""

from __future__ import annotations

import textwrap
from pathlib import Path

from ddpdoctor.lint.driver import gather, lint_results

HEAD = """\
import os
import torch
import torch.distributed as dist
import torch.multiprocessing as mp
from torch.nn.parallel import DistributedDataParallel as DDP
dist.init_process_group("gloo")
"""  # 6 lines: the sources below start at line 7


def lint(tmp_path: Path, source: str, **modules: str):
    for name, body in modules.items():
        (tmp_path / f"{name}.py").write_text(textwrap.dedent(body))
    path = tmp_path / "train.py"
    path.write_text(HEAD + textwrap.dedent(source).lstrip("\n"))
    facts = gather(str(path))
    return [f for r in lint_results(facts, set()) for f in r.findings], facts


def codes(found) -> list[tuple[str, str, int]]:
    return sorted((f.code, f.severity.value, f.location.line) for f in found)


def test_a_helper_that_returns_the_rank_test_guards_saves_and_collectives(tmp_path):
    # open_clip style: is_master(args) -> is_global_master(args) -> args.rank == 0
    found, _ = lint(tmp_path, """
        def is_global_master(args):
            return args.rank == 0
        def is_master(args, local=False):
            return is_global_master(args) if not local else args.local_rank == 0
        def run(args, model):
            if is_master(args):
                torch.save(model.state_dict(), "ckpt.pt")
            if is_master(args):
                dist.barrier()
        run(None, None)
    """)
    assert codes(found) == [("DDP801", "error", 15)]


def test_a_flag_assigned_from_a_rank_test_states_its_assumption(tmp_path):
    found, _ = lint(tmp_path, """
        def is_master(args):
            return args.rank == 0
        def run(args, model):
            args.save_logs = args.logs and args.logs.lower() != "none" and is_master(args)
            if args.save_logs:
                torch.save(model.state_dict(), "ckpt.pt")   # one writer: fine
            if args.save_logs:
                dist.barrier()                              # a hang only if args.logs is set
        run(None, None)
    """)
    assert codes(found) == [("DDP801", "warning", 14)]
    (f,) = found
    assert "`args.logs`" in f.evidence["assumption"] and f.message.startswith("if `args.logs`")


def test_an_attribute_set_from_the_spawned_process_index(tmp_path):
    found, _ = lint(tmp_path, """
        class Trainer:
            def __init__(self, model, gpu_id):
                self.gpu_id = gpu_id
                self.model = model
            def save(self):
                torch.save(self.model.state_dict(), "ckpt.pt")
            def train(self):
                if self.gpu_id == 0:
                    self.save()
                if self.gpu_id == 0:
                    dist.barrier()
        def main(rank, world_size):
            Trainer(torch.nn.Linear(2, 2), rank).train()
        mp.spawn(main, args=(2,), nprocs=2)
    """)
    assert codes(found) == [("DDP801", "error", 17)]


def test_an_object_that_exists_on_one_rank_only(tmp_path):
    found, _ = lint(tmp_path, """
        class Saver:
            def save(self, state):
                torch.save(state, "ckpt.pt")
        rank = dist.get_rank()
        saver = Saver() if rank == 0 else None
        logger = None
        if rank == 0:
            logger = Saver()
        if saver is not None:
            saver.save({})
        if logger is not None:
            logger.save({})
        if saver is not None:
            dist.barrier()
    """)
    assert codes(found) == [("DDP801", "error", 20)]


def test_names_are_scoped_per_function_not_program_wide(tmp_path):
    found, _ = lint(tmp_path, """
        from logs import setup
        def train(step):
            should_log = step % 10 == 0
            if should_log:
                dist.all_reduce(torch.ones(1))   # every rank: a step test, not a rank test
        setup()
        train(0)
    """, logs="""
        import torch.distributed as dist
        def setup():
            should_log = dist.get_rank() == 0
            return should_log
    """)
    assert codes(found) == []


def test_a_config_field_ending_in_rank_is_not_a_rank(tmp_path):
    found, _ = lint(tmp_path, """
        def build(cfg):
            lora_rank = cfg.lora_rank
            if lora_rank == 0:
                dist.barrier()
            if cfg.model.lora_rank > 0:
                dist.all_reduce(torch.ones(1))
        build(None)
    """)
    assert codes(found) == []


EARLY_RETURN = """
    def evaluate(model, use_fsdp_eval):
        is_rank0 = dist.get_rank() == 0
        if not use_fsdp_eval and not is_rank0:
            return
        if use_fsdp_eval:
            dist.all_reduce(torch.ones(1))   # every rank is here
        dist.barrier()                       # rank 0 alone when use_fsdp_eval is false
    evaluate(None, USE)
"""


def test_a_guard_related_to_an_earlier_early_return(tmp_path):
    # an evaluation helper: every rank goes on when FSDP evaluation is on, rank 0 alone otherwise
    found, _ = lint(tmp_path, EARLY_RETURN.replace("USE", "cfg.fsdp_eval"))
    assert codes(found) == [("DDP801", "warning", 13)]


def test_a_guard_related_to_an_earlier_early_return_a_call_settles(tmp_path):
    # the same helper entered with `use_fsdp_eval=False` by every rank: rank 0 alone reaches
    # the barrier on that way, proven (session 81: the constant a call hands opens the test)
    found, _ = lint(tmp_path, EARLY_RETURN.replace("USE", "False"))
    assert codes(found) == [("DDP801", "error", 13)]


def test_library_helpers_named_as_main_process_tests(tmp_path):
    found, _ = lint(tmp_path, """
        from utils import is_main_process, is_root_worker
        if is_main_process():
            torch.save({}, "a.pt")
        if is_root_worker():
            torch.save({}, "b.pt")
        if not dist.is_initialized() or dist.get_rank() == 0:
            torch.save({}, "c.pt")
    """)
    assert codes(found) == []
