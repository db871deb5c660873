"""Code other people structure differently: what the lint reaches through declared types and
module functions, and what it says when it cannot reach the distributed code at all (a registry of
lambdas): an incomplete verdict (exit 4), never a PASS."""

from __future__ import annotations

import textwrap

from ddpdoctor.core.findings import EXIT_INCOMPLETE, EXIT_OK, Severity
from ddpdoctor.lint.driver import lint, lint_files

REGISTRY = """
import torch
import torch.distributed as dist


class Agent:
    def __init__(self, **kw):
        dist.init_process_group("gloo")
        self.model = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(2, 2))

    def train(self):
        if dist.get_rank() == 0:
            dist.barrier()


class Factory:
    def __init__(self):
        self._builders = {}

    def register(self, name, builder):
        self._builders[name] = builder

    def create(self, name, **kw):
        return self._builders[name](**kw)


factory = Factory()
factory.register("ppo", lambda **kw: Agent(**kw))
agent = factory.create("ppo")
agent.train()
"""


def _lint(tmp_path, source: str):
    path = tmp_path / "run.py"
    path.write_text(textwrap.dedent(source).lstrip("\\n"))
    return lint(str(path), Severity.ERROR, set())


def test_a_process_group_set_up_only_where_a_registry_leads_is_not_judged_and_never_a_pass(tmp_path):
    report = _lint(tmp_path, REGISTRY)
    assert report.status == "incomplete" and report.exit_code == EXIT_INCOMPLETE
    assert any("run.py:8, in a function no call from the script leads to" in m for m in report.missing)
    assert any("ddpdoctor probe" in n for n in report.notes)


def test_the_same_agent_typed_where_it_is_made_is_reached_and_its_rank_zero_barrier_found(tmp_path):
    typed = REGISTRY.replace('agent = factory.create("ppo")', 'agent: Agent = factory.create("ppo")')
    report = _lint(tmp_path, typed)
    assert report.status == "fail" and not report.missing
    assert [(f.code, f.location.line) for r in report.results for f in r.findings] == [("DDP801", 13)]


def test_an_optional_type_declared_before_a_factory_sets_the_name_counts_too(tmp_path):
    typed = REGISTRY.replace('agent = factory.create("ppo")',
                             'agent: "Agent | None" = None\nagent = factory.create("ppo")')
    report = _lint(tmp_path, typed)
    assert [f.code for r in report.results for f in r.findings] == ["DDP801"]


def test_a_spawn_target_named_through_its_module_is_reached(tmp_path):
    (tmp_path / "workers.py").write_text(textwrap.dedent("""
        import torch.distributed as dist


        def run(rank, world):
            dist.init_process_group("gloo", rank=rank, world_size=world)
            if rank == 0:
                dist.barrier()
    """))
    report = _lint(tmp_path, """
        import torch.multiprocessing as mp
        import workers

        mp.spawn(workers.run, args=(2,), nprocs=2)
    """)
    assert not report.missing
    assert [(f.code, f.location.file.endswith("workers.py")) for r in report.results for f in r.findings] == [
        ("DDP801", True)]


def test_a_script_that_never_runs_distributed_code_it_does_not_define_stays_a_pass(tmp_path):
    # another module's own entry point (its `__main__` block) is not this script's code
    (tmp_path / "tool.py").write_text(textwrap.dedent("""
        import torch.distributed as dist
        SCALE = 2
        if __name__ == "__main__":
            dist.init_process_group("gloo")
    """))
    report = _lint(tmp_path, "import tool\nprint(tool.SCALE)\n")
    assert report.status == "pass" and report.exit_code == EXIT_OK


def test_the_files_mode_of_pre_commit_and_diff_is_incomplete_for_the_same_script(tmp_path):
    path = tmp_path / "run.py"
    path.write_text(textwrap.dedent(REGISTRY).lstrip("\n"))
    report = lint_files([str(path)], Severity.ERROR, set(), "changed")
    assert report.status == "incomplete" and report.exit_code == EXIT_INCOMPLETE
    assert any("not reached" in m for m in report.missing)
