"""A proven fix travels with its finding: evidence["fix"] in the JSON report, a line in the GitHub
annotation, and a pull-request review whose comments are ```suggestion blocks. `--fix` writes
only files the lint read, and nothing when one changed since it was read. Pure."""

from __future__ import annotations

from pathlib import Path

import pytest

from ddpdoctor.core.errors import UsageError
from ddpdoctor.core.findings import Finding, Location, Severity
from ddpdoctor.core.registry import CheckResult, CheckSpec, FAILED
from ddpdoctor.lint.fix.apply import attach, confirmed_by_probe, write
from ddpdoctor.lint.fix.plan import plan
from ddpdoctor.report import github
from ddpdoctor.report.model import Report
from ddpdoctor.report.suggestions import review

SCRIPT = """\
import torch
import torch.distributed as dist
from torch.utils.data import DataLoader, DistributedSampler, TensorDataset
dist.init_process_group("gloo")
ds = TensorDataset(torch.randn(64, 4))
sampler = DistributedSampler(ds, shuffle=True)
loader = DataLoader(ds, batch_size=8, sampler=sampler)
for epoch in range(3):
    for (x,) in loader:
        pass
"""


def planned(tmp_path: Path):
    path = tmp_path / "train.py"
    path.write_text(SCRIPT)
    return path, plan([str(path)], set())


def test_the_fix_is_attached_to_its_finding_as_lines_and_replacement(tmp_path):
    path, made = planned(tmp_path)
    [fix] = made.fixes
    finding = Finding(**{**fix.finding.__dict__, "evidence": dict(fix.finding.evidence)})
    assert attach([finding], made) == 1
    given = finding.evidence["fix"]
    assert (given["start_line"], given["end_line"]) == (9, 9)
    assert given["replacement"] == "    sampler.set_epoch(epoch)\n    for (x,) in loader:"
    assert given["file"] == fix.display


def test_the_review_has_one_suggestion_per_hunk_of_the_changed_files_only():
    report = {"findings": [
        {"code": "DDP804", "title": "t", "evidence": {"fix": {
            "file": "./train.py", "start_line": 9, "end_line": 9, "replacement": "a\nb", "description": "d"}}},
        {"code": "DDP806", "title": "t", "evidence": {"fix": {
            "file": "other.py", "start_line": 3, "end_line": 4, "replacement": "x", "description": "d"}}},
        {"code": "DDP802", "title": "t", "evidence": {}},
    ]}
    body = review(report, only=["train.py"])
    [comment] = body["comments"]
    assert comment["path"] == "train.py" and comment["line"] == 9 and "start_line" not in comment
    assert "```suggestion\na\nb\n```" in comment["body"]
    both = review(report)["comments"]
    assert both[1]["start_line"] == 3 and both[1]["line"] == 4


def test_the_github_annotation_names_the_suggested_edit():
    spec = CheckSpec("DDP804", "set_epoch missing", Severity.WARNING, "lint", lambda f: [])
    finding = Finding("DDP804", Severity.WARNING, "set_epoch missing", "m", "h", location=Location("train.py", 6),
                      evidence={"fix": {"file": "train.py", "start_line": 9, "end_line": 9,
                                        "replacement": "x", "description": "call sampler.set_epoch"}})
    report = Report(command="lint", results=[CheckResult(spec, FAILED, [finding])])
    out = github.render(report)
    assert "Suggested edit" in out and "call sampler.set_epoch at line 9" in out


def test_write_refuses_a_file_changed_since_it_was_read_and_writes_nothing(tmp_path):
    path, made = planned(tmp_path)
    path.write_text(SCRIPT + "# edited meanwhile\n")
    with pytest.raises(UsageError, match="changed while it was being fixed"):
        write(made)
    assert path.read_text().endswith("# edited meanwhile\n")


def test_write_refuses_a_path_the_lint_did_not_read(tmp_path):
    path, made = planned(tmp_path)
    stranger = tmp_path / "stranger.py"
    stranger.write_text("x = 1\n")
    made.old[stranger.resolve()] = "x = 1\n"
    made.new[stranger.resolve()] = "x = 2\n"
    with pytest.raises(UsageError, match="not one of the linted sources"):
        write(made)
    assert stranger.read_text() == "x = 1\n"


def test_write_keeps_the_file_mode(tmp_path):
    path, made = planned(tmp_path)
    path.chmod(0o755)
    assert write(made) == [made.fixes[0].display]
    assert path.stat().st_mode & 0o777 == 0o755 and "sampler.set_epoch(epoch)" in path.read_text()


def test_the_findings_a_probe_confirmed_are_read_from_their_twins():
    twin = Finding("DDP302", Severity.WARNING, "t", "m", "h",
                   evidence={"static": {"code": "DDP804", "location": "train.py:6"}})
    plain = Finding("DDP301", Severity.ERROR, "t", "m", "h")
    assert confirmed_by_probe([twin, plain]) == {("DDP804", "train.py:6")}


def test_probe_patch_offers_only_what_the_run_confirmed(tmp_path, capsys):
    import io

    from ddpdoctor.lint.fix.apply import offer_for_probe

    path = tmp_path / "train.py"
    path.write_text(SCRIPT)
    [static] = [f for f in plan([str(path)], set()).fixes]
    where = str(static.finding.location)
    twin = Finding("DDP302", Severity.WARNING, "t", "m", "h",
                   evidence={"static": {"code": "DDP804", "location": where}})
    notes = io.StringIO()
    offer_for_probe([twin], str(path), set(), write_files=False, show_patch=True, notes=notes)
    assert "+    sampler.set_epoch(epoch)" in capsys.readouterr().out
    assert twin.evidence["fix"]["start_line"] == 9 and f"fix DDP804 {where}" in notes.getvalue()
    assert path.read_text() == SCRIPT

    unconfirmed = Finding("DDP804", Severity.INFO, "t", "m", "h", location=static.finding.location,
                          evidence={"confirmed": False})
    notes = io.StringIO()
    offer_for_probe([unconfirmed], str(path), set(), write_files=True, show_patch=False, notes=notes)
    assert "not offered DDP804" in notes.getvalue() and "fixed 0 confirmed finding(s)" in notes.getvalue()
    assert path.read_text() == SCRIPT


def test_a_spent_time_budget_declines_the_rest_as_not_planned(tmp_path):
    path = tmp_path / "train.py"
    path.write_text(SCRIPT)
    made = plan([str(path)], set(), budget_s=0.0)
    assert not made.fixes and not made.changed
    assert "not planned" in made.declined[0].reason


def test_a_fix_kinds_own_error_declines_its_fix_and_keeps_the_rest(tmp_path, monkeypatch):
    from ddpdoctor.lint.fix import plan as plan_module

    def broken(finding, parsed):
        raise KeyError("bug")

    monkeypatch.setitem(plan_module.FIXERS, "DDP804", broken)
    path = tmp_path / "train.py"
    path.write_text(SCRIPT)
    made = plan([str(path)], set())
    assert not made.fixes and "its own error: KeyError" in made.declined[0].reason


def test_a_fix_touching_several_places_suggests_at_its_findings_line_and_lists_every_hunk(tmp_path):
    path = tmp_path / "train.py"
    path.write_text("""\
import torch
import torch.distributed as dist
from torch.utils.data import DataLoader, TensorDataset
dist.init_process_group("gloo")
model = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(4, 1))
ds = TensorDataset(torch.randn(64, 4))
loader = DataLoader(ds, batch_size=8, shuffle=True)
for epoch in range(3):
    for (x,) in loader:
        model(x).sum().backward()
""")
    [fix] = plan([str(path)], set()).fixes
    given = fix.suggestion()
    assert fix.finding.code == "DDP802" and given["start_line"] == fix.finding.location.line == 7
    assert "sampler=DistributedSampler(ds, shuffle=True)" in given["replacement"]
    assert [h["start_line"] for h in given["hunks"]] == [4, 7, 9]  # the import, the loader, set_epoch
