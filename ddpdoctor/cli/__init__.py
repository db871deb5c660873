"""The `ddpdoctor` command line: app.py holds the typer app and the exit-code mapping, one module
per command family (probe.py, preflight.py, lint.py), options.py the flags they share."""

from ddpdoctor.cli.app import app, main

__all__ = ["app", "main"]
