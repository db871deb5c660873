"""The report for a person: one line per check, then what failed, then the numbers."""

from __future__ import annotations

from typing import IO, Optional

from rich.console import Console
from rich.markup import escape
from rich.table import Table as RichTable

from ddpdoctor.core.registry import CRASHED, FAILED, IGNORED, INCOMPLETE, NOTED, PASSED, SKIPPED, WARNED
from ddpdoctor.report.model import Report

MARKS = {
    PASSED: ("[green][✓][/]", "passed"),
    FAILED: ("[red][✗][/]", "failed"),
    WARNED: ("[yellow][!][/]", "warning"),
    NOTED: ("[cyan][i][/]", "note"),
    SKIPPED: ("[dim][-][/]", "skipped"),
    IGNORED: ("[dim][~][/]", "ignored"),
    CRASHED: ("[magenta][?][/]", "not checked"),
    INCOMPLETE: ("[magenta][?][/]", "incomplete"),
}
SEVERITY_STYLE = {"error": "red", "warning": "yellow", "info": "cyan"}
# Not a terminal (a CI log, a pipe, a file): no width to fit, so none is imposed. Each message
# stays on its one line, whatever its length, for grep and for the log viewer to wrap.
UNBOUNDED_WIDTH = 1 << 14


def console_for(file: Optional[IO[str]] = None) -> Console:
    """A console for person-facing text: a terminal's width and colours on a terminal; plain
    text at full line length (no wrapping, no escape codes) anywhere else."""
    console = Console(file=file, highlight=False, soft_wrap=False)
    if console.is_terminal:
        return console
    return Console(file=file, highlight=False, soft_wrap=True, width=UNBOUNDED_WIDTH)


def render(report: Report, console: Console, verbose: bool = False) -> None:
    if report.header:
        console.print(f"[bold]ddpdoctor {report.command}[/] — {escape(report.header)}")
    for result in report.results:
        if result.status in (SKIPPED, IGNORED) and not verbose and result.spec.stage != report.command:
            continue
        mark, word = MARKS[result.status]
        tail = ""
        if result.findings:
            counts = {}
            for f in result.findings:
                counts[f.severity.value] = counts.get(f.severity.value, 0) + 1
            tail = ", ".join(f"{n} {sev}{'s' if n > 1 else ''}" for sev, n in counts.items())
        elif result.reason:
            tail = f"{word}: {result.reason}"
        elif result.status == PASSED:
            tail = "none found"
        console.print(f"{mark} {result.spec.code} {escape(result.spec.title)}"
                      + (f"  [dim]{escape(tail)}[/]" if tail else ""))

    findings = report.findings
    if findings:
        console.print()
        console.print("[bold]Details[/]")
    for f in findings:
        style = SEVERITY_STYLE[f.severity.value]
        console.print(f"[{style}]{f.severity.value.upper()}[/] [bold]{f.code}[/] {escape(f.title)}")
        console.print(f"    {escape(f.message)}", soft_wrap=True)
        where = []
        if f.ranks:
            where.append("ranks " + ", ".join(str(r) for r in f.ranks))
        if f.hosts:
            where.append("hosts " + ", ".join(f.hosts))
        if f.location:
            where.append(f"at {f.location}")
            if f.location.context:
                where.append(f.location.context)
        if where:
            console.print(f"    [dim]{escape('; '.join(where))}[/]")
        extra = f.evidence.get("detail") if verbose or f.severity.value == "error" else None
        if isinstance(extra, str) and extra.strip():
            for line in extra.rstrip().splitlines()[:60]:
                console.print(f"      {escape(line)}", soft_wrap=True, highlight=False)
        console.print(f"    [green]fix:[/] {escape(f.hint)}", soft_wrap=True)

    for table in report.tables:
        console.print()
        rich_table = RichTable(title=table.title, title_justify="left", show_edge=False)
        for column in table.columns:
            rich_table.add_column(column)
        for row in table.rows:
            rich_table.add_row(*[escape(str(c)) for c in row])
        console.print(rich_table)

    if report.metrics and verbose:
        console.print()
        console.print("[bold]Numbers[/]")
        for key, value in report.metrics.items():
            console.print(f"    {escape(str(key))}: {escape(str(value))}")
    for note in report.notes:
        console.print(f"[dim]note: {escape(note)}[/]", soft_wrap=True)
    if report.tool_error:
        console.print(f"[magenta]ddpdoctor could not finish: {escape(report.tool_error)}[/]")
    if report.run_dir:
        console.print(f"[dim]run dir: {escape(report.run_dir)}[/]")

    errors = sum(1 for f in findings if f.severity.value == "error")
    warnings = sum(1 for f in findings if f.severity.value == "warning")
    if report.missing:
        # Said before the verdict line, whatever the verdict: a FAIL over part of the job is
        # still a judgement of part of the job.
        console.print("[magenta]incomplete:[/] the verdict covers only what was seen; missing:")
        for reason in report.missing:
            console.print(f"    {escape(reason)}", soft_wrap=True)
    summary = {"pass": "[green]PASS[/]", "fail": "[red]FAIL[/]", "error": "[magenta]ERROR[/]",
               "incomplete": "[magenta]INCOMPLETE[/]"}[report.status]
    if report.interrupted_by:
        summary = "[magenta]INTERRUPTED[/] (partial report)"
    console.print(f"{summary}  {errors} error(s), {warnings} warning(s); "
                  f"failing on {report.fail_on.value} and above; exit {report.exit_code}")
