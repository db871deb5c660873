"""Send one report to every output the user asked for, each written atomically and scrubbed."""

from __future__ import annotations

import sys
from dataclasses import dataclass
from typing import Optional

from rich.console import Console

from ddpdoctor.core import redact
from ddpdoctor.core.files import write_atomic
from ddpdoctor.report import github, json as json_report, junit, terminal
from ddpdoctor.report.model import Report


@dataclass
class OutputOptions:
    json_path: Optional[str] = None  # "-" for stdout
    junit_path: Optional[str] = None
    github: bool = False
    verbose: bool = False
    quiet: bool = False

    @property
    def stdout_is_json(self) -> bool:
        return self.json_path == "-"


def terminal_console(options: OutputOptions) -> Console:
    """Where the person-facing text goes: stderr when stdout carries the JSON report."""
    return terminal.console_for(sys.stderr if options.stdout_is_json else sys.stdout)


def emit(report: Report, options: OutputOptions) -> None:
    secrets = redact.secret_values()
    if not options.quiet:
        console = terminal_console(options)
        with console.capture() as capture:
            terminal.render(report, console, verbose=options.verbose)
        console.file.write(redact.scrub(capture.get(), secrets))
        console.file.flush()
    if options.json_path:
        text = json_report.render(report, secrets)
        if options.stdout_is_json:
            sys.stdout.write(text)
            sys.stdout.flush()
        else:
            write_atomic(options.json_path, text)
    if options.junit_path:
        write_atomic(options.junit_path, redact.scrub(junit.render(report), secrets))
    if options.github:
        # Annotations go to stdout, where the Actions runner reads workflow commands.
        out = sys.stderr if options.stdout_is_json else sys.stdout
        out.write(redact.scrub(github.render(report), secrets))
        out.flush()
