"""GitHub Actions workflow commands: `::error file=…,line=…,title=…::message`."""

from __future__ import annotations

from ddpdoctor.report.model import Report

LEVEL = {"error": "error", "warning": "warning", "info": "notice"}


def _escape_data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _escape_property(text: str) -> str:
    return _escape_data(text).replace(":", "%3A").replace(",", "%2C")


def render(report: Report) -> str:
    lines = []
    for f in report.findings:
        props = []
        if f.location:
            props.append(f"file={_escape_property(f.location.file)}")
            if f.location.line:
                props.append(f"line={f.location.line}")
        props.append(f"title={_escape_property(f'{f.code} {f.title}')}")
        message = f"{f.message} Fix: {f.hint}"
        lines.append(f"::{LEVEL[f.severity.value]} {','.join(props)}::{_escape_data(message)}")
    if report.tool_error:
        lines.append(f"::error title=ddpdoctor::{_escape_data(report.tool_error)}")
    return "\n".join(lines) + ("\n" if lines else "")
