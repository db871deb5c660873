"""Judge a probe run recorded in tests/probe_recordings/ again, as `ddpdoctor probe` judged it
when it ran: the same judgement (driver.analyse, the one `ddpdoctor report` runs too, the lint of
the same script merged in) over a copy of the run dir, its paths moved from the checkout that
recorded it to this one. No process is started.

A recording is the run dir of `ddpdoctor probe tests/scripts/<script>.py --stall-timeout 5
--run-dir tests/probe_recordings/<name> [-- --healthy]` (2 ranks, gloo, CPU), run from the
repository's root, without job.log and report.json and with outcome.json's log_tail emptied. It
must be recorded again when what the instruments write changes (the schema test of
test_node_wire.py reads every recording)."""

from __future__ import annotations

import json
import os
import re
import shutil
from pathlib import Path

from ddpdoctor.core.findings import Severity
from ddpdoctor.probe.driver import analyse
from ddpdoctor.report import json as json_report
from tests.helpers.probe_runner import REPO, ProbeResult

RECORDINGS = REPO / "tests" / "probe_recordings"


def judge_recording(name: str, script: str, tmp_path: Path) -> ProbeResult:
    """The recording `name` of a probe of `script` (a path from the repository's root), judged
    again: the ProbeResult the live probe's assertions read (exit code and JSON report)."""
    run_dir = tmp_path / name
    shutil.copytree(RECORDINGS / name, run_dir)
    texts = {path: path.read_text() for path in run_dir.iterdir()}
    # The recording checkout's root: where its stacks (absolute paths) found the script.
    roots = {m.group(1) for text in texts.values()
             for m in re.finditer(r'(/[^"\s:]*/)' + re.escape(script), text)}
    assert len(roots) <= 1, roots
    for root in roots:  # (none where the run recorded no absolute path: nothing to move)
        for path, text in texts.items():
            path.write_text(text.replace(root, f"{REPO}/"))
    before = os.getcwd()
    os.chdir(REPO)  # where the live probe ran: files named from the root
    try:
        report = analyse(run_dir, Severity.ERROR, set())
    finally:
        os.chdir(before)
    return ProbeResult(report.exit_code, json.loads(json_report.render(report, set())), "", "", 0.0, run_dir)
