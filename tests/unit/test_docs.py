"""The documentation says what the tool does: docs/checks.md is what `ddpdoctor explain` prints,
the README stays short with working links, and its tables name the exit codes and the tests
that back each fault it promises to survive."""

from __future__ import annotations

import re
from pathlib import Path

from ddpdoctor.core import catalogue, findings
from ddpdoctor.core.registry import all_checks

REPO = Path(__file__).resolve().parents[2]
README = REPO / "README.md"
CHECKS_PAGE = REPO / "docs" / "checks.md"
REGENERATE = "python -m ddpdoctor.core.catalogue > docs/checks.md"

# Pages other people are writing; a link to one of them may point nowhere until it lands.
# Remove a name from here once its page exists.
PENDING_PAGES = {"docs/cpu.md", "docs/verdicts.md", "docs/lint.md", "docs/live-view.md",
                 "docs/performance.md", "docs/frameworks.md", "docs/multi-node.md"}

LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")


def test_checks_page_is_what_the_catalogue_generates():
    assert CHECKS_PAGE.read_text(encoding="utf-8") == catalogue.markdown(), (
        f"docs/checks.md is stale: run `{REGENERATE}`")


def test_each_entry_of_the_checks_page_is_what_explain_prints():
    codes = [s.code for s in all_checks()]
    page = catalogue.entries(CHECKS_PAGE.read_text(encoding="utf-8"))
    assert list(page) == codes, f"docs/checks.md lists other checks: run `{REGENERATE}`"
    # `ddpdoctor explain` prints explain_many's text; the CLI itself: tests/integration/test_docs_cli.py
    assert catalogue.explain_many(all_checks()) == catalogue.SEPARATOR.join(page[c] for c in codes)
    for code, text in page.items():
        assert text.startswith(f"{code}: ")
        for part in ("What it detects", "Why it hurts", "How to fix"):
            assert part in text, f"{code}'s docstring lacks {part!r}"


def test_entries_reads_back_what_markdown_writes():
    specs = all_checks()[:3]
    assert catalogue.entries(catalogue.markdown(specs)) == {
        s.code: catalogue.explain_text(s) for s in specs}


def test_readme_is_at_most_400_lines():
    lines = README.read_text(encoding="utf-8").count("\n")
    assert lines <= 400, f"README.md has {lines} lines: move reference material to docs/"


def _relative_links(page: Path) -> list[tuple[str, Path]]:
    text = page.read_text(encoding="utf-8")
    text = re.sub(r"```.*?```", "", text, flags=re.S)  # links inside code blocks are not links
    found = []
    for target in LINK.findall(text):
        if re.match(r"^[a-z]+:", target) or target.startswith("#"):
            continue
        path = target.split("#", 1)[0]
        found.append((target, (page.parent / path).resolve()))
    return found


def test_every_relative_link_of_the_readme_and_docs_resolves():
    pages = [README, *sorted((REPO / "docs").glob("*.md"))]
    broken = []
    for page in pages:
        for target, path in _relative_links(page):
            if path.exists():
                continue
            where = path.relative_to(REPO).as_posix() if path.is_relative_to(REPO) else str(path)
            if where not in PENDING_PAGES:
                broken.append(f"{page.relative_to(REPO)}: {target}")
    assert broken == []


def test_readme_links_every_page_of_docs():
    linked = {path for _, path in _relative_links(README)}
    unlinked = [p.name for p in (REPO / "docs").glob("*.md") if p.resolve() not in linked]
    assert unlinked == [], "README.md does not link these docs pages"


def test_quick_start_test_command_is_where_ci_reads_it():
    lines = README.read_text(encoding="utf-8").splitlines()
    assert lines.count("<!-- quickstart:run -->") == 1
    assert lines.count("<!-- quickstart:test -->") == 1
    at = lines.index("<!-- quickstart:test -->")
    # .ci/run runs this line: the suite on three workers (mostly waiting), then the timing tests alone.
    # --no-loadscope-reorder: files in the order tests/conftest.py gives them, heaviest first.
    assert lines[at + 2] == ("pip install -e '.[test]' && python -m pytest -q -n 3 --dist loadfile "
                             "--no-loadscope-reorder -m 'not serial' && python -m pytest -q -m serial")


def test_readme_exit_code_table_has_every_code():
    text = README.read_text(encoding="utf-8")
    for code in (findings.EXIT_OK, findings.EXIT_FINDINGS, findings.EXIT_USAGE, findings.EXIT_TOOL,
                 findings.EXIT_INCOMPLETE):
        assert re.search(rf"^\| {code} \|", text, flags=re.M), f"exit code {code} not in the README's table"


def test_every_fault_table_row_names_a_test_that_exists():
    text = README.read_text(encoding="utf-8")
    section = text.split("## When things go wrong", 1)[1].split("\n## ", 1)[0]
    rows = [line for line in section.splitlines() if line.startswith("| ") and not line.startswith("| fault")]
    rows = [r for r in rows if not set(r) <= set("|- ")]
    assert len(rows) >= 8
    for row in rows:
        named = re.findall(r"`((?:tests/)?[\w/]+\.py)::(\w+)`", row)
        assert named, f"a fault row names no test: {row}"
        for file, test in named:
            path = REPO / (file if file.startswith("tests/") else f"tests/integration/{file}")
            assert path.exists(), f"{file} does not exist"
            assert re.search(rf"^def {test}\(", path.read_text(encoding="utf-8"), flags=re.M), (
                f"{file} has no test {test}")


def test_api_page_names_every_argument_of_the_api():
    import inspect

    import ddpdoctor

    page = (REPO / "docs" / "api.md").read_text(encoding="utf-8")
    for func in (ddpdoctor.run_probe, ddpdoctor.run_preflight):
        missing = [name for name in inspect.signature(func).parameters if not re.search(rf"\b{name}=", page)
                   and name not in ("script", "nodes")]
        assert missing == [], f"docs/api.md does not show {func.__name__}'s {missing}"


def test_the_lint_page_lists_every_lint_rule():
    # labellers of the lint corpus read this table: a rule missing there was taken for no rule
    page = (REPO / "docs" / "lint.md").read_text(encoding="utf-8")
    table = set(re.findall(r"^\| (DDP8\d\d) \|", page, flags=re.MULTILINE))
    assert table == {s.code for s in all_checks() if s.stage == "lint"}
