"""Each finding code has exactly one judge: one check under checks/, run by the registry over
whatever observation a command gathered (a probe's run, a dead job's evidence, attach's sampled
window, a set of Flight Recorder dumps). The places that name each code are listed from the
source (an AST scan of ddpdoctor/ and checks/), and the ones outside checks/ must be on the list
below with the reason they are no judge."""

from __future__ import annotations

import ast
import functools
import pickle
import re
from pathlib import Path

from ddpdoctor.attach.observation import Observation, RankObservation
from ddpdoctor.attach.flight import DumpSet, report as dumps_report
from ddpdoctor.attach.judge import judge
from ddpdoctor.core.findings import Severity
from ddpdoctor.core.registry import all_checks
from ddpdoctor.postmortem.report import postmortem
from ddpdoctor.probe.run_model.outcome import Frame
from tests.helpers.source_tree import walked

REPO = Path(__file__).resolve().parents[2]
CODE = re.compile(r"^DDP\d{3}$")

# Modules outside checks/ that name codes, none of them deciding a finding of that code.
NOT_JUDGES = {
    "ddpdoctor/attach/judge.py": "the order attach lists its checks in, and the one it lists only with dumps",
    "ddpdoctor/lint/merge.py": "which probe check is each lint check's run-time twin (merging, after both judged)",
    "ddpdoctor/probe/analysis/frameworks.py": "each framework's words for a finding the check makes (the check asks)",
    "ddpdoctor/preflight/collective_smoke.py": "the checks whose failure means the smoke test would only time out",
    "ddpdoctor/preflight/store_mode.py": "runs DDP103's own check (run_checks(..., only=...))",
    "ddpdoctor/probe/launch/verify.py": "the DDP arguments --verify-fix sets for a finding already made",
    "ddpdoctor/lint/fix/plan.py": "why a finding's fix is left to a person",
    "ddpdoctor/lint/fix/minlength.py": "the code a fix mends",
    "ddpdoctor/lint/fix/no_sync.py": "the code a fix mends",
    "ddpdoctor/lint/fix/sampler.py": "the code a fix mends",
    "ddpdoctor/lint/fix/save_guard.py": "the code a fix mends",
    "ddpdoctor/lint/fix/set_epoch.py": "the code a fix mends",
}
# Modules that build a check result or a finding: the registry's runner, and two that only carry
# results made there (none decides a status of its own).
BUILDS_RESULTS = {
    "ddpdoctor/core/registry.py": "the runner: every check's problems become its findings here",
    "ddpdoctor/report/model.py": "a report rebuilt from its JSON form (relayed from node 0)",
    "ddpdoctor/lint/driver.py": "one lint check's results over several files merged into one",
}


# Text a module must hold to name a code or build a result: the others are not parsed (parsing
# every module costs seconds on a loaded machine).
_HINT = re.compile(r"""["']DDP\d{3}["']|CheckResult\(|Finding\(|finding\(""")


@functools.lru_cache(maxsize=1)
def _sources() -> dict[str, tuple[ast.AST, ...]]:
    """module -> every node of its tree (walked once per session: tests/helpers/source_tree.py)."""
    found = {}
    for root in ("ddpdoctor", "checks"):
        for path in sorted((REPO / root).rglob("*.py")):
            text = path.read_text(encoding="utf-8")
            if _HINT.search(text):
                found[path.relative_to(REPO).as_posix()] = walked(path)
    return found


def _named_codes(nodes: tuple[ast.AST, ...]) -> set[str]:
    """Every string that is exactly a code ("DDP503"), not a code mentioned inside a text."""
    return {n.value for n in nodes
            if isinstance(n, ast.Constant) and isinstance(n.value, str) and CODE.match(n.value)}


def _declared(nodes: tuple[ast.AST, ...]) -> set[str]:
    """The codes a module declares with @check("DDPnnn", ...)."""
    return {d.args[0].value for n in nodes if isinstance(n, ast.FunctionDef)
            for d in n.decorator_list
            if isinstance(d, ast.Call) and getattr(d.func, "id", "") == "check"
            and d.args and isinstance(d.args[0], ast.Constant)}


def _result_builders(nodes: tuple[ast.AST, ...]) -> bool:
    for node in nodes:
        if isinstance(node, ast.Call):
            name = getattr(node.func, "id", None) or getattr(node.func, "attr", None)
            if name in ("CheckResult", "Finding", "finding"):
                return True
    return False


@functools.lru_cache(maxsize=1)
def places() -> dict[str, set[str]]:
    """code -> every module that names it."""
    out: dict[str, set[str]] = {}
    for module, nodes in _sources().items():
        for code in _named_codes(nodes):
            out.setdefault(code, set()).add(module)
    return out


def test_every_code_is_declared_by_exactly_one_check_module_under_checks():
    declared: dict[str, list[str]] = {}
    for module, nodes in _sources().items():
        for code in _declared(nodes):
            declared.setdefault(code, []).append(module)
    assert {c: m for c, m in declared.items() if len(m) != 1} == {}
    assert all(m[0].startswith("checks/") for m in declared.values())
    assert set(declared) == {s.code for s in all_checks()}


def test_the_places_naming_each_code_are_its_check_and_no_other_judge():
    sources = _sources()
    owner = {code: module for module, nodes in sources.items() if module.startswith("checks/")
             for code in _declared(nodes)}
    strays = {}
    for code, modules in sorted(places().items()):
        for module in sorted(modules):
            if module.startswith("checks/"):
                if owner.get(code) != module:  # a check deciding another check's code
                    strays.setdefault(code, []).append(module)
            elif module not in NOT_JUDGES:
                strays.setdefault(code, []).append(module)
    assert strays == {}, f"codes named outside their check: {strays}"
    outside = {m for ms in places().values() for m in ms if not m.startswith("checks/")}
    assert outside == set(NOT_JUDGES), "NOT_JUDGES lists a module that names no code any more"


def test_only_the_runner_builds_check_results_and_findings():
    builders = {m for m, nodes in _sources().items() if _result_builders(nodes)}
    assert builders == set(BUILDS_RESULTS)
    assert not set(NOT_JUDGES) & builders


def test_the_collective_checks_judge_every_observation_kind_with_one_declaration():
    by_stage = {stage: {s.code: s for s in all_checks(stage)} for stage in ("probe", "evidence", "attach", "flight")}
    for code in ("DDP501", "DDP502"):
        assert {id(by_stage[stage][code]) for stage in by_stage} == {id(by_stage["probe"][code])}
    for code in ("DDP503", "DDP601"):
        assert by_stage["attach"][code] is by_stage["probe"][code]


def _entry(seq):
    return {"pg_id": 0, "process_group": ("0", "default_pg"), "collective_seq_id": seq,
            "profiling_name": "nccl:all_reduce", "input_sizes": [[10]], "input_dtypes": ["Float"],
            "retired": seq < 5, "is_p2p": False, "time_created_ns": seq,
            "frames": [{"name": "<module>", "filename": "/home/u/train.py", "line": 40 + seq}]}


def _dumps():
    return {r: {"version": "2.10", "entries": [_entry(s) for s in range(1, 8 if r != 2 else 5)],
                "pg_config": {"0": {"name": "0", "desc": "default_pg", "ranks": "[0, 1, 2]"}}}
            for r in range(3)}


def _same(finding):
    evidence = {k: v for k, v in finding.evidence.items() if k != "role"}
    return (finding.code, finding.message, finding.hint, finding.ranks, str(finding.location), evidence)


def test_a_skipped_collective_in_dumps_is_one_finding_whichever_command_read_them(tmp_path):
    for rank, dump in _dumps().items():
        (tmp_path / f"rank_{rank}").write_bytes(pickle.dumps(dump))
    from_report = [f for f in dumps_report(str(tmp_path), Severity.ERROR, set()).findings if f.code == "DDP502"]
    from_postmortem = [f for f in postmortem([str(tmp_path)], Severity.ERROR, set()).findings
                       if f.code == "DDP502"]
    waiting = (Frame("all_reduce", "torch/distributed/distributed_c10d.py", 2800), Frame("<module>", "train.py", 45))
    observation = Observation("job", 3, 3.0, [RankObservation(r, 100 + r, "h", [waiting] * 60, proc={
        "seconds": 3.0, "io_calls": 0, "io_quiet_s": 3.0, "main_cpu_share": 0.0}) for r in range(3)])
    observation.flight = DumpSet(_dumps())
    from_attach = [f for r in judge(observation).results for f in r.findings if f.code == "DDP502"]
    assert len(from_report) == len(from_postmortem) == 1 and from_report[0].ranks == [2]
    assert _same(from_report[0]) == _same(from_postmortem[0]) == _same(from_attach[-1])
    assert from_postmortem[0].evidence["role"] == "cause"


def test_attach_honours_ignore_for_the_dumps_own_check():
    observation = Observation("job", 2, 3.0, [RankObservation(r, 100 + r, "h") for r in range(2)])
    dumps = {r: {"entries": [_entry(1), dict(_entry(2), input_sizes=[[10 + r]])]} for r in range(2)}
    observation.flight = DumpSet(dumps)
    results = {r.spec.code: r for r in judge(observation, {"DDP501"}).results}
    assert results["DDP501"].status == "ignored" and not results["DDP501"].findings
    assert [r.spec.code for r in judge(observation).results] == ["DDP503", "DDP502", "DDP601", "DDP501"]
    assert {r.spec.code: r.status for r in judge(observation).results}["DDP501"] == "failed"


def test_a_stage_discovered_from_its_home_packages_misses_none_of_its_checks():
    """all_checks("attach") imports only checks/probe: every check of the stage must be declared
    there, or in a check module one there imports (DDP104 judges the probe's port from preflight)."""
    from ddpdoctor.core.registry import _HOMES

    every = all_checks()
    for stage, homes in _HOMES.items():
        reached = set()
        for home in homes:
            for path in (REPO / "checks" / home).glob("*.py"):
                reached.add(f"ddpdoctor.checks.{home}.{path.stem}")
                reached |= {f"{n.module}.{a.name}" for n in walked(path)
                            if isinstance(n, ast.ImportFrom) and (n.module or "").startswith("ddpdoctor.checks")
                            for a in n.names}
        missed = [s.code for s in every if stage in s.stages and s.module not in reached]
        assert missed == [], f"stage {stage}: checks outside {homes} that its discovery never imports"
