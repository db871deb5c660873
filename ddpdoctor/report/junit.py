"""JUnit XML: one testcase per check, a failure per finding at or above --fail-on."""

from __future__ import annotations

import xml.etree.ElementTree as ET

from ddpdoctor.core.registry import CRASHED, IGNORED, INCOMPLETE, SKIPPED
from ddpdoctor.report.model import Report


def render(report: Report) -> str:
    suite = ET.Element("testsuite", name=f"ddpdoctor.{report.command}")
    failures = errors = skipped = 0
    gating = {id(f) for f in report.gating_findings}
    for result in report.results:
        case = ET.SubElement(suite, "testcase", classname=f"ddpdoctor.{report.command}",
                             name=f"{result.spec.code} {result.spec.title}")
        if result.status in (SKIPPED, IGNORED):
            ET.SubElement(case, "skipped", message=result.reason or result.status)
            skipped += 1
            continue
        if result.status in (CRASHED, INCOMPLETE):
            ET.SubElement(case, "error", message=result.reason)
            errors += 1
            continue
        lines = []
        for f in result.findings:
            text = f"[{f.severity.value}] {f.message}\nfix: {f.hint}"
            if f.location:
                text += f"\nat {f.location}"
                if f.location.context:
                    text += f" ({f.location.context})"
            if id(f) in gating:
                failure = ET.SubElement(case, "failure", message=f.message, type=f.severity.value)
                failure.text = text
                failures += 1
            else:
                lines.append(text)
        if lines:
            ET.SubElement(case, "system-out").text = "\n\n".join(lines)
    suite.set("tests", str(len(report.results)))
    suite.set("failures", str(failures))
    suite.set("errors", str(errors))
    suite.set("skipped", str(skipped))
    if report.tool_error:
        ET.SubElement(suite, "system-err").text = report.tool_error
    ET.indent(suite)
    return '<?xml version="1.0" encoding="utf-8"?>\n' + ET.tostring(suite, encoding="unicode") + "\n"
