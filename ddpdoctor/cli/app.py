"""The `ddpdoctor` command line: flags in, a report and an exit code out.

Every command ends the same way: a Report, rendered to the outputs asked for, and the exit code
of findings.py (0 clean, 1 findings at or above --fail-on, 2 bad input, 3 ddpdoctor failed).
"""

from __future__ import annotations

import json
import signal
import sys
from typing import List, Optional

import typer

try:  # typer >= 0.20 vendors its own click
    from typer._click import exceptions as click_exceptions
except ImportError:  # older typer uses click itself
    from click import exceptions as click_exceptions
from rich.console import Console
from rich.markup import escape

from ddpdoctor.core.config import CommandDefaults
from ddpdoctor.core.errors import ToolFailure, UsageError
from ddpdoctor.core.findings import EXIT_TOOL, EXIT_USAGE
from ddpdoctor.core.registry import all_checks, get_check

app = typer.Typer(
    add_completion=False,
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
    help="Find out why a PyTorch DDP run hangs, crashes or crawls, before it burns cluster hours.",
)


def version_line() -> str:
    """ddpdoctor's version, and torch's as installed (read from its metadata: importing torch
    would cost seconds)."""
    import platform
    from importlib import metadata

    from ddpdoctor.core.version import __version__

    try:
        torch = f"torch {metadata.version('torch')}"
    except metadata.PackageNotFoundError:
        torch = "torch not installed"
    return f"ddpdoctor {__version__} ({torch}, Python {platform.python_version()})"


def _show_version(value: bool) -> None:
    if value:
        sys.stdout.write(version_line() + "\n")
        raise typer.Exit(0)


@app.callback()
def _options(
    version: bool = typer.Option(False, "--version", "-V", is_eager=True, callback=_show_version,
                                 help="Print ddpdoctor's version and torch's, and exit."),
) -> None:
    """Find out why a PyTorch DDP run hangs, crashes or crawls, before it burns cluster hours."""

@app.command("checks")
def checks_command(
    json_out: bool = typer.Option(False, "--json", help="Print the catalogue as JSON."),
) -> int:
    """List every check: code, stage, default severity and title."""
    specs = all_checks()
    if json_out:
        rows = [{"code": s.code, "stage": s.stage, "severity": s.severity.value, "title": s.title}
                for s in specs]
        sys.stdout.write(json.dumps(rows, indent=2) + "\n")
        return 0
    from ddpdoctor.report.terminal import console_for

    console = console_for()  # in a pipe: each title whole on its line
    for s in specs:
        console.print(f"{s.code}  {s.stage:<9} {s.severity.value:<7}  {escape(s.title)}")
    return 0


@app.command("explain")
def explain_command(codes: List[str] = typer.Argument(..., help="Check codes, e.g. DDP301 (several: each in turn).")) -> int:
    """Print a check's documentation: what it detects, why it hurts, how to fix it."""
    from ddpdoctor.core.catalogue import explain_many  # the text docs/checks.md is made of

    specs = [get_check(code) for code in codes]  # every code checked before anything is printed
    sys.stdout.write(explain_many(specs))
    return 0


def _register_commands() -> None:
    # The command modules define plain functions and import only cli/options.py, so that no
    # command module imports this one back.
    from ddpdoctor.cli import attach, lint, preflight, probe

    for name, func in (("preflight", preflight.preflight_command), ("facts", preflight.facts_command),
                       ("probe", probe.probe_command), ("report", probe.report_command),
                       ("lint", lint.lint_command), ("attach", attach.attach_command),
                       ("env", attach.env_command)):
        if not any(c.name == name for c in app.registered_commands):
            app.command(name)(func)


def _one_line(text: str) -> str:
    """Bad input is one line on stderr, even when the bad input holds a newline."""
    return text.replace("\r", "\\r").replace("\n", "\\n")


class _Terminated(KeyboardInterrupt):
    """SIGTERM, raised in the main thread like Ctrl-C's KeyboardInterrupt, so that every
    `finally` that ends ddpdoctor's children (ssh, listeners) runs for it too. The probe's job
    loop installs its own handler while a job runs, to end the job in order and keep a report."""


_terminated: list[int] = []


def _on_sigterm(signum, _frame) -> None:
    _terminated.append(signum)
    raise _Terminated()


def main(argv: Optional[List[str]] = None) -> None:
    """Console entry point: maps every outcome to the documented exit code."""
    try:
        signal.signal(signal.SIGTERM, _on_sigterm)
        # Ctrl-C is ours to handle even when we were started with SIGINT ignored (a CI step's
        # `ddpdoctor ... &` without job control, nohup): Python would then never raise
        # KeyboardInterrupt, and a preflight would wait out every ssh's --timeout.
        signal.signal(signal.SIGINT, signal.default_int_handler)
    except ValueError:  # not the main thread: main() called from a library's worker thread
        pass
    _register_commands()
    err = Console(file=sys.stderr, highlight=False)
    try:
        # [tool.ddpdoctor] in pyproject.toml gives the defaults; a flag given wins (config.py).
        code = app(args=argv, prog_name="ddpdoctor", standalone_mode=False,
                   default_map=CommandDefaults())
    except click_exceptions.NoArgsIsHelpError as exc:
        sys.stdout.write(exc.ctx.get_help() + "\n")
        code = EXIT_USAGE
    except click_exceptions.UsageError as exc:
        where = f" ({exc.ctx.command_path})" if exc.ctx else ""
        err.print(f"ddpdoctor: error{escape(where)}: {escape(_one_line(exc.format_message()))}", soft_wrap=True)
        code = EXIT_USAGE
    except typer.Abort:
        err.print("ddpdoctor: interrupted")
        code = 130
    except UsageError as exc:
        err.print(f"ddpdoctor: error: {escape(_one_line(str(exc)))}", soft_wrap=True)
        code = EXIT_USAGE
    except ToolFailure as exc:
        err.print(f"ddpdoctor: failed: {escape(_one_line(str(exc)))}", soft_wrap=True)
        code = EXIT_TOOL
    except typer.Exit as exc:
        code = exc.exit_code
    except Exception:  # noqa: BLE001 - a bug of ours: its traceback, and 3, never 1 (a FAIL's code)
        import traceback

        traceback.print_exc()
        err.print("ddpdoctor: internal error (a ddpdoctor bug; the traceback above says where)")
        code = EXIT_TOOL
    if code == 130 and _terminated:  # typer answers any KeyboardInterrupt with 130
        code = 128 + signal.SIGTERM
    sys.exit(code if isinstance(code, int) else 0)
