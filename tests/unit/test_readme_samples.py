"""The README's sample outputs list the checks each command runs today (report/samples.py
regenerates them: `python -m ddpdoctor.report.samples README.md --report probe=RUN.json`)."""

from __future__ import annotations

from pathlib import Path

from ddpdoctor.core.registry import all_checks
from ddpdoctor.report.samples import listed, refresh

README = Path(__file__).resolve().parents[2] / "README.md"


def _codes(*stages: str) -> list[str]:
    return [spec.code for stage in stages for spec in all_checks(stage)]


def test_the_readme_samples_are_what_the_generator_makes_of_them():
    text = README.read_text(encoding="utf-8")
    assert refresh(text) == text, "run: python -m ddpdoctor.report.samples README.md"


def test_every_whole_sample_list_shows_every_check_its_command_runs_in_order():
    shown = listed(README.read_text(encoding="utf-8"))
    assert shown["probe"] == [_codes("probe", "lint")]
    assert shown["lint"] == [_codes("lint")]
    assert shown["preflight"] == [_codes("preflight")]


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
