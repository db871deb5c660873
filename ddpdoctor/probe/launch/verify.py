"""`probe --verify-fix`: rerun the script with each fix the performance findings suggest.

A finding whose evidence carries `ddp_kwargs` (DDP603: a bucket_cap_mb) names DDP arguments the
probe can set itself, in the DDP constructor (inrank/ddp.py reads RUN_DIR/ddp_overrides.json), so
the script runs unchanged. Each distinct set is one more probe, in RUN_DIR/verify/<n>, with the
same options; its median step time is stored in RUN_DIR/verify.json (run_model/verify.py) and the
report puts it beside the finding's estimate. Findings whose fix needs the script changed
(hiding communication, a faster network) are listed with a note instead.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any, Callable

from ddpdoctor.core.errors import ToolFailure
from ddpdoctor.core.files import write_atomic
from ddpdoctor.probe.run_model.verify import VerifyResult
from ddpdoctor.probe.records.rundir import VERIFY_FILE, verify_run_name

MAX_RERUNS = 3
# Findings that change a DDP argument without saying so in ddp_kwargs (older checks).
IMPLIED = {"DDP402": {"find_unused_parameters": False}}


def fixes(report: Any) -> list[VerifyResult]:
    """What the report's performance findings suggest, in the order of the report."""
    found: list[VerifyResult] = []
    seen: set[str] = set()
    for finding in report.findings:
        evidence = finding.evidence or {}
        kwargs = evidence.get("ddp_kwargs") or IMPLIED.get(finding.code)
        estimate = evidence.get("estimated_step_ms")
        if kwargs is None and estimate is None:
            continue
        key = f"{finding.code}:{json.dumps(kwargs or {}, sort_keys=True)}"
        if key in seen:
            continue
        seen.add(key)
        found.append(VerifyResult(finding.code, dict(kwargs or {}), estimate))
    return found


def write(run_dir: Path, results: list[VerifyResult]) -> None:
    write_atomic(run_dir / VERIFY_FILE,
                 json.dumps({"results": [r.to_dict() for r in results]}, indent=2) + "\n",
                 mode=0o600)


def run_fixes(options: Any, run_dir: Path, report: Any, probe_one: Callable[[Any], Any]) -> list[VerifyResult]:
    """Rerun the script once per set of DDP arguments the report's findings suggest.

    `probe_one(options)` runs one probe (driver.probe, without --verify-fix) and returns its Report."""
    results = fixes(report)
    reruns: dict[str, tuple[str, Any]] = {}  # kwargs -> (rel dir, report) : one rerun per set
    for result in results:
        if not result.ddp_kwargs:
            result.note = "this fix needs the script changed; the probe cannot apply it by itself"
            continue
        key = json.dumps(result.ddp_kwargs, sort_keys=True)
        if key not in reruns:
            if len(reruns) >= MAX_RERUNS:
                result.note = f"not rerun: at most {MAX_RERUNS} reruns per probe"
                continue
            rel = verify_run_name(len(reruns))
            sub = dataclasses.replace(options, run_dir=str(run_dir / rel), verify_fix=False,
                                      scaling=[], baseline=None, ddp_overrides=dict(result.ddp_kwargs))
            try:
                reruns[key] = (rel, probe_one(sub))
            except ToolFailure as exc:
                result.note = f"the rerun could not be launched: {exc}"
                continue
        rel, sub_report = reruns[key]
        result.run_dir = rel
        result.status = sub_report.status
        step = (sub_report.metrics or {}).get("step_ms_median")
        if step is None:
            result.note = f"the rerun recorded too few steps to time ({sub_report.status})"
        else:
            result.step_ms = step
        if sub_report.interrupted_by:
            break
    write(run_dir, results)
    return results
