"""The JSON report (the schema of DESIGN.md): its form as data, and that data as text."""

from __future__ import annotations

import json
from typing import Any, Optional

from ddpdoctor.core import redact
from ddpdoctor.report.model import Report


def data(report: Report, secrets: Optional[list[str]] = None) -> dict[str, Any]:
    """The report as JSON data, what `render` writes: a value JSON has no word for (a path) as
    its str(). With `secrets`, every string in it scrubbed of them: the form node 0 sends to the
    other nodes through the node link's codec, never parsed back from rendered text."""
    return _plain(report.to_dict(), secrets or [])


def render(report: Report, secrets: Optional[list[str]] = None) -> str:
    """The JSON report as text; with `secrets`, scrubbed string by string (`data`), so a secret
    that JSON escapes (a quote, a backslash) is still caught and a number is never touched."""
    return json.dumps(data(report, secrets), indent=2) + "\n"


def _plain(value: Any, secrets: list[str]) -> Any:
    if isinstance(value, str):
        return redact.scrub(value, secrets) if secrets else value
    if value is None or isinstance(value, (bool, int, float)):
        return value
    if isinstance(value, dict):
        # Keys as json writes them: a number, bool or None key becomes its JSON text.
        return {_plain(k if isinstance(k, str) else json.dumps(k), secrets): _plain(v, secrets)
                for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v, secrets) for v in value]
    return _plain(str(value), secrets)
