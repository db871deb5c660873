"""The JSON report (the schema of DESIGN.md)."""

from __future__ import annotations

import json

from ddpdoctor.report.model import Report


def render(report: Report) -> str:
    return json.dumps(report.to_dict(), indent=2, default=str) + "\n"
