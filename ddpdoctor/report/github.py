"""GitHub Actions workflow commands: `::error file=…,line=…,title=…::message`."""

from __future__ import annotations

import os
from typing import Optional

from ddpdoctor.report.model import Report

LEVEL = {"error": "error", "warning": "warning", "info": "notice"}


def _escape_data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _escape_property(text: str) -> str:
    return _escape_data(text).replace(":", "%3A").replace(",", "%2C")


def workspace_path(path: str, workspace: Optional[str] = None) -> str:
    """`path` as GitHub wants it in an annotation: relative to the repository checkout
    ($GITHUB_WORKSPACE, else the working directory) when the file is inside it; GitHub attaches
    an annotation to a file only by that relative path. A file outside is left as it is."""
    base = workspace or os.environ.get("GITHUB_WORKSPACE") or os.getcwd()
    try:
        full = os.path.realpath(os.path.join(os.getcwd(), path))  # a relative path: from the cwd
        root = os.path.realpath(base)
        if os.path.commonpath([full, root]) != root:
            return path
        return os.path.relpath(full, root).replace(os.sep, "/")
    except (OSError, ValueError):  # another drive, an unreadable cwd
        return path


def render(report: Report, workspace: Optional[str] = None) -> str:
    lines = []
    for f in report.findings:
        props = []
        if f.location:
            props.append(f"file={_escape_property(workspace_path(f.location.file, workspace))}")
            if f.location.line:
                props.append(f"line={f.location.line}")
        props.append(f"title={_escape_property(f'{f.code} {f.title}')}")
        message = f"{f.message} Fix: {f.hint}"
        fix = f.evidence.get("fix")
        if isinstance(fix, dict) and fix.get("start_line"):
            # the edit itself is in the JSON report's evidence.fix, for a review suggestion
            message += (f" Suggested edit (`ddpdoctor lint --fix`): {fix.get('description', '')}"
                        f" at line {fix['start_line']}")
        lines.append(f"::{LEVEL[f.severity.value]} {','.join(props)}::{_escape_data(message)}")
    if report.tool_error:
        lines.append(f"::error title=ddpdoctor::{_escape_data(report.tool_error)}")
    return "\n".join(lines) + ("\n" if lines else "")
