"""The README's sample outputs, kept to the code.

A sample block is a fenced block that starts with `$ ddpdoctor probe|lint|preflight ...` and
shows its command's check lines (`[✓] DDP301 Ranks read the same samples  none found`). Where a
block shows the whole list (not cut with `...`), the list must be the checks that command runs
today, in its order, with today's titles: `refresh` rewrites those lines from the catalogue,
each check's status taken from a report of a real run where one is given (`--json` of the
command the block shows), else from the README's own line for that code, else "none found".

    python -m ddpdoctor.report.samples README.md [--report probe=healthy.json] [--report lint=...]

tests/unit/test_readme_samples.py fails when the README and the catalogue drift apart.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path
from typing import Optional

from ddpdoctor.core.registry import all_checks

# Which checks each command's report lists, in order (the probe runs the lint too).
STAGES = {"probe": ("probe", "lint"), "lint": ("lint",), "preflight": ("preflight",)}
CHECK_LINE = re.compile(r"^\[(?P<mark>.)\] (?P<code>DDP\d{3}) (?P<title>.+?)(?:  (?P<status>.*))?$")
FULL_LIST = 4  # fewer check lines than this: an excerpt (attach's, a failing run's), not a list
_MARK = {"passed": "✓", "failed": "✗", "warning": "!", "note": "i", "skipped": "-", "ignored": "~"}


def _command(block: list[str]) -> Optional[str]:
    first = block[0] if block else ""
    match = re.match(r"^\$ ddpdoctor (\w+)", first)
    return match.group(1) if match and match.group(1) in STAGES else None


def _blocks(lines: list[str]) -> list[tuple[int, int]]:
    """(first, last) line indexes of every fenced block's body."""
    found, start = [], None
    for index, line in enumerate(lines):
        if line.startswith("```"):
            if start is None:
                start = index + 1
            else:
                found.append((start, index))
                start = None
    return found


def _check_run(lines: list[str], start: int, end: int) -> Optional[tuple[int, int]]:
    """The one contiguous run of check lines in a block, when it is a whole list."""
    indexes = [i for i in range(start, end) if CHECK_LINE.match(lines[i])]
    if len(indexes) < FULL_LIST or indexes != list(range(indexes[0], indexes[-1] + 1)):
        return None
    return indexes[0], indexes[-1] + 1


def _status_from_report(check: dict, findings: list) -> Optional[tuple[str, str]]:
    """A check's mark and status as the terminal prints them (report/terminal.py)."""
    status, reason = check.get("status", ""), check.get("reason", "")
    if status not in _MARK:
        return None
    counts: dict[str, int] = {}
    for finding in findings:
        if isinstance(finding, dict) and finding.get("code") == check.get("code"):
            severity = str(finding.get("severity", ""))
            counts[severity] = counts.get(severity, 0) + 1
    if counts:
        return _MARK[status], ", ".join(f"{n} {sev}{'s' if n > 1 else ''}" for sev, n in counts.items())
    if status == "passed":
        return "✓", "none found"
    return _MARK[status], f"{'skipped' if status == 'skipped' else status}: {reason}" if reason else ""


def expected_lines(command: str, current: dict[str, tuple[str, str]],
                   report: Optional[dict] = None) -> list[str]:
    """The check lines of `command` as the catalogue has them today."""
    from_report = {}
    findings = (report or {}).get("findings", [])
    for check in (report or {}).get("checks", []):
        status = _status_from_report(check, findings) if isinstance(check, dict) else None
        if status is not None:
            from_report[check.get("code")] = status
    lines = []
    for stage in STAGES[command]:
        for spec in all_checks(stage):
            known = from_report.get(spec.code) or current.get(spec.code)
            mark, status = known or ("✓", "none found")
            # as report/terminal.py: another stage's check is listed only where it applied
            if spec.stage != command and mark in ("-", "~"):
                continue
            if spec.stage not in STAGES[command] and known is None:
                continue  # one the probe runs for another stage (DDP104), with no run to say it applied
            lines.append(f"[{mark}] {spec.code} {spec.title}" + (f"  {status}" if status else ""))
    return lines


def refresh(text: str, reports: Optional[dict[str, dict]] = None) -> str:
    """The README with every whole list of check lines as the catalogue has it today."""
    lines = text.split("\n")
    for start, end in reversed(_blocks(lines)):
        command = _command(lines[start:end])
        run = _check_run(lines, start, end) if command else None
        if run is None:
            continue
        current = {}
        for line in lines[run[0]:run[1]]:
            match = CHECK_LINE.match(line)
            current[match["code"]] = (match["mark"], match["status"] or "")
        lines[run[0]:run[1]] = expected_lines(command, current, (reports or {}).get(command))
    return "\n".join(lines)


def listed(text: str) -> dict[str, list[list[str]]]:
    """command -> the codes each of its whole lists shows, in order."""
    lines = text.split("\n")
    found: dict[str, list[list[str]]] = {}
    for start, end in _blocks(lines):
        command = _command(lines[start:end])
        run = _check_run(lines, start, end) if command else None
        if run is not None:
            found.setdefault(command, []).append([CHECK_LINE.match(l)["code"] for l in lines[run[0]:run[1]]])
    return found


def main(argv: Optional[list[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("readme", type=Path)
    parser.add_argument("--report", action="append", default=[], metavar="COMMAND=FILE.json",
                        help="a real run's --json report whose statuses the command's list takes")
    args = parser.parse_args(argv)
    reports = {}
    for item in args.report:
        command, _, path = item.partition("=")
        if command not in STAGES or not path:
            parser.error(f"--report {item}: COMMAND=FILE.json, COMMAND one of {', '.join(STAGES)}")
        reports[command] = json.loads(Path(path).read_text())
    text = args.readme.read_text(encoding="utf-8")
    new = refresh(text, reports)
    if new != text:
        args.readme.write_text(new, encoding="utf-8")
        print(f"{args.readme}: sample check lines regenerated")
    return 0


if __name__ == "__main__":
    sys.exit(main())
