"""The lint (DDP8xx) on patterns seen in real public training code, rewritten in our own words.

Each file under tests/scripts/lint_real/ (or `train.py` of a folder there, for patterns that
span modules) names in its top comment the repository and commit it stands for, and states what
a careful reviewer expects from the lint:

    # expect: clean
    # expect: DDP806 warning line 21        (one line per expected finding)

The test lints the file exactly as `ddpdoctor lint` would and asserts exactly that set of
(code, severity, line): nothing missing, nothing more. The measurement on the real code itself
is benchmarks/lint_corpus.py (the corpus stays outside the repository). No torch import, no
process.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from ddpdoctor.lint.driver import gather, lint_results

HERE = Path(__file__).resolve().parents[1] / "scripts" / "lint_real"
EXPECT = re.compile(r"^# expect: (?:(clean)|(DDP\d{3}) (error|warning|note) line (\d+))\s*$")


def pattern_files() -> list[Path]:
    return sorted([*HERE.glob("*.py"), *HERE.glob("*/train.py")])


def expectations(path: Path) -> set[tuple[str, str, int]]:
    """The (code, severity, line) set the file's `# expect:` lines state; clean is the empty set."""
    expected: set[tuple[str, str, int]] = set()
    clean = False
    for line in path.read_text().splitlines():
        match = EXPECT.match(line)
        if match is None:
            continue
        if match.group(1):
            clean = True
        else:
            expected.add((match.group(2), match.group(3), int(match.group(4))))
    assert clean != bool(expected), f"{path.name}: state `# expect: clean` or findings, not both/neither"
    return expected


def test_every_pattern_names_its_source_and_expectation():
    files = pattern_files()
    assert len(files) >= 20
    for path in files:
        head = path.read_text().split("\n", 8)[:8]
        assert head[0].startswith("# Stands for "), f"{path.name}: first line names the repository"
        assert re.search(r"\b[0-9a-f]{7,40}\b", " ".join(head)), f"{path.name}: names a commit"
        expectations(path)


@pytest.mark.parametrize("path", pattern_files(), ids=lambda p: str(p.relative_to(HERE)))
def test_real_pattern_gives_exactly_the_expected_findings(path: Path, monkeypatch):
    monkeypatch.chdir(path.parent)  # as `cd there && ddpdoctor lint train.py`
    findings = [f for result in lint_results(gather(path.name), set()) for f in result.findings]
    elsewhere = [f"{f.code} {f.location.file}:{f.location.line}" for f in findings
                 if f.location is not None and Path(f.location.file).name != path.name]
    assert not elsewhere, f"findings in the pattern's helper modules: {elsewhere}"
    found = {(f.code, f.severity.value, f.location.line if f.location else None) for f in findings}
    assert found == expectations(path)


def test_save_state_on_the_main_process_is_told_to_run_on_every_process(monkeypatch):
    monkeypatch.chdir(HERE)
    [found] = [f for r in lint_results(gather("save_state_on_main_with_deepspeed.py"), set())
               for f in r.findings]
    assert "(every process takes part under DeepSpeed)" in found.message
    assert found.hint.startswith("call accelerator.save_state() on every process")
