"""The check catalogue as text: what `ddpdoctor explain CODE` prints, and docs/checks.md.

Both come from the checks' docstrings through `explain_text`, so the page and the command cannot
say different things. Regenerate the page after adding or changing a check:

    python -m ddpdoctor.core.catalogue > docs/checks.md

tests/unit/test_docs.py fails when the committed page differs from what this prints.
"""

from __future__ import annotations

import sys
from typing import Iterable, Optional

from ddpdoctor.core.registry import CheckSpec, all_checks

# Between two checks when `ddpdoctor explain` is given several codes.
SEPARATOR = "\n" + "-" * 72 + "\n\n"

STAGE_TITLES = {
    "preflight": "Preflight: the machines (`ddpdoctor preflight`)",
    "probe": "Probe: the running job (`ddpdoctor probe`)",
    "lint": "Lint: the script's source (`ddpdoctor lint`, also inside `probe`)",
}


def explain_text(spec: CheckSpec) -> str:
    """One check's documentation, exactly as `ddpdoctor explain CODE` prints it."""
    return (f"{spec.code}: {spec.title}\n"
            f"stage: {spec.stage}    default severity: {spec.severity.value}\n\n"
            f"{spec.doc.rstrip()}\n")


def explain_many(specs: Iterable[CheckSpec]) -> str:
    """What `ddpdoctor explain CODE CODE ...` prints: each check's text, separated by a rule."""
    return SEPARATOR.join(explain_text(s) for s in specs)


def _anchor(spec: CheckSpec) -> str:
    return spec.code.lower()


def markdown(specs: Optional[list[CheckSpec]] = None) -> str:
    """docs/checks.md: an index table, then each check's `explain` text in a fenced block."""
    specs = all_checks() if specs is None else specs
    out = [
        "# Check catalogue",
        "",
        "<!-- Generated from the checks' docstrings: do not edit by hand.",
        "     Regenerate: python -m ddpdoctor.core.catalogue > docs/checks.md -->",
        "",
        "Every finding carries one of these codes. Codes are stable: a code never changes its",
        "meaning, new checks take new codes. Each entry below is exactly what",
        "`ddpdoctor explain CODE` prints; `ddpdoctor checks` lists the codes in a terminal.",
        "Silence a code with `--ignore CODE`, make warnings fatal with `--fail-on warning`.",
        "",
    ]
    stages = [s for s in STAGE_TITLES if any(spec.stage == s for spec in specs)]
    for stage in stages:
        out += [f"## {STAGE_TITLES[stage]}", "", "| code | severity | title |", "|---|---|---|"]
        for spec in specs:
            if spec.stage == stage:
                title = spec.title.replace("|", "\\|")
                out.append(f"| [{spec.code}](#{_anchor(spec)}) | {spec.severity.value} | {title} |")
        out.append("")
    out += ["## The checks", ""]
    for spec in specs:
        out += [f'<a id="{_anchor(spec)}"></a>', "", f"### {spec.code}: {spec.title}", "",
                "```text", explain_text(spec).rstrip("\n"), "```", ""]
    return "\n".join(out)


def entries(page: str) -> dict[str, str]:
    """The explain text of each check in a rendered page, by code (the inverse of `markdown`)."""
    found, lines = {}, page.splitlines()
    i = 0
    while i < len(lines):
        if lines[i].startswith("### DDP") and i + 2 < len(lines) and lines[i + 2] == "```text":
            code = lines[i][4:].split(":", 1)[0]
            end = lines.index("```", i + 3)
            found[code] = "\n".join(lines[i + 3:end]) + "\n"
            i = end
        i += 1
    return found


def main() -> None:
    sys.stdout.write(markdown())


if __name__ == "__main__":
    main()
