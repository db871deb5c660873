"""docs/checks.md is what the installed `ddpdoctor explain` prints, entry for entry (the page's
text against the catalogue, in-process, is tests/unit/test_docs.py)."""

from __future__ import annotations

from pathlib import Path

from ddpdoctor.core import catalogue
from ddpdoctor.core.registry import all_checks
from tests.helpers.cli_runner import run_cli

CHECKS_PAGE = Path(__file__).resolve().parents[2] / "docs" / "checks.md"


def test_each_entry_of_the_checks_page_is_what_the_explain_command_prints():
    codes = [s.code for s in all_checks()]
    page = catalogue.entries(CHECKS_PAGE.read_text(encoding="utf-8"))
    result = run_cli("explain", *codes)  # one CLI start for the whole catalogue
    assert result.code == 0, result.stderr
    assert result.stdout == catalogue.SEPARATOR.join(page[c] for c in codes)
