"""The README's sample outputs list the checks each command runs today (report/samples.py
regenerates them: `python -m ddpdoctor.report.samples README.md --report probe=RUN.json`)."""

from __future__ import annotations

from pathlib import Path

from ddpdoctor.core.registry import all_checks
from ddpdoctor.report.samples import listed, refresh

README = Path(__file__).resolve().parents[2] / "README.md"


def _codes(*stages: str, shown: tuple = ()) -> list[str]:
    """The checks a command runs, in order: those of its own stages always; another stage's check
    it runs too (DDP104 in the probe) where the sample shows it (the terminal lists such a check
    only when it applied)."""
    return [spec.code for stage in stages for spec in all_checks(stage)
            if spec.stage in stages or spec.code in shown]


def test_the_readme_samples_are_what_the_generator_makes_of_them():
    text = README.read_text(encoding="utf-8")
    assert refresh(text) == text, "run: python -m ddpdoctor.report.samples README.md"


def test_every_whole_sample_list_shows_every_check_its_command_runs_in_order():
    shown = listed(README.read_text(encoding="utf-8"))
    probe, = shown["probe"]
    assert probe == _codes("probe", "lint", shown=tuple(probe))
    assert shown["lint"] == [_codes("lint")]
    assert shown["preflight"] == [_codes("preflight")]


def test_another_stages_check_is_listed_only_where_it_applied():
    lines = "\n".join(f"[✓] {s.code} {s.title}  none found" for s in all_checks("probe")[1:6])
    text = "```\n$ ddpdoctor probe x.py\n" + lines + "\n```\n"
    report = {"checks": [{"code": "DDP104", "status": "skipped", "reason": "the launcher did not fail"}]}
    assert "DDP104" not in refresh(text, {"probe": report})
    report["checks"][0] = {"code": "DDP104", "status": "failed"}
    report["findings"] = [{"code": "DDP104", "severity": "error"}]
    assert "[✗] DDP104 Rendezvous port already in use on the master  1 error" in refresh(text, {"probe": report})


def test_a_missing_check_and_a_stale_title_are_regenerated_and_statuses_kept():
    lint = all_checks("lint")
    lines = [f"[✓] {s.code} {s.title}  none found" for s in lint[1:]]
    lines[0] = f"[✗] {lint[1].code} an old title  1 error"
    text = "```\n$ ddpdoctor lint train.py\nddpdoctor lint — train.py\n" + "\n".join(lines) + "\n```\n"
    fresh = refresh(text)
    assert listed(fresh)["lint"] == [_codes("lint")]
    assert f"[✓] {lint[0].code} {lint[0].title}  none found" in fresh
    assert f"[✗] {lint[1].code} {lint[1].title}  1 error" in fresh


def test_an_excerpt_of_a_report_is_left_as_written():
    text = "```\n$ ddpdoctor probe x.py\n...\n[✗] DDP301 Ranks read the same samples  1 error\n...\n```\n"
    assert refresh(text) == text and listed(text) == {}
