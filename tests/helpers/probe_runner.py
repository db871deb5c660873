"""Run `ddpdoctor probe` through the CLI and check that the job left nothing behind."""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional

import psutil

from tests.helpers.cli_runner import run_cli

REPO = Path(__file__).resolve().parents[2]
TIMING_CODES = {"DDP601", "DDP602", "DDP603", "DDP604", "DDP605"}


@dataclass
class ProbeResult:
    code: int
    report: dict[str, Any]
    stderr: str
    stdout: str
    wall_s: float
    run_dir: Path

    def __repr__(self) -> str:
        # what a failed assertion shows: the verdict and each finding's code and severity first
        # (pytest keeps the start and the end of a long repr), then the messages - a flake under
        # load must be readable from the CI log, not a truncated dict
        found = self.report.get("findings", [])
        codes = ", ".join(f"{f['code']} {f['severity']}" for f in found)
        said = "; ".join(f"{f['code']}: {f['message'][:160]}" for f in found)
        return (f"ProbeResult(code={self.code}, {self.report.get('status')}, [{codes}], "
                f"incomplete={self.report.get('incomplete')!r}, {said}, run_dir={str(self.run_dir)!r})")

    def findings(self, code: str) -> list[dict[str, Any]]:
        return [f for f in self.report["findings"] if f["code"] == code]

    def one(self, code: str) -> dict[str, Any]:
        found = self.findings(code)
        assert found, f"{code} not reported; got {[f['code'] for f in self.report['findings']]}"
        return found[0]

    @property
    def codes(self) -> set[str]:
        return {f["code"] for f in self.report["findings"]}

    @property
    def problems(self) -> list[dict[str, Any]]:
        """Findings at warning or above."""
        return [f for f in self.report["findings"] if f["severity"] in ("error", "warning")]

    @property
    def problems_beyond_timing(self) -> list[dict[str, Any]]:
        """Findings at warning or above, leaving out the ones judged from timings (DDP601-605):
        on a test machine shared with other tests, a rank slowed by a neighbour is a straggler.
        The timing checks are proven on recorded telemetry and in test_probe_perf.py, run alone."""
        return [f for f in self.problems if f["code"] not in TIMING_CODES]


def processes_of(run_dir: Path) -> list[psutil.Process]:
    """Processes whose environment names this run dir: every process of the job carries it."""
    found = []
    for proc in psutil.process_iter():
        try:
            if proc.environ().get("DDPDOCTOR_RUN_DIR") == str(run_dir):
                found.append(proc)
        except psutil.Error:
            continue
    return found


def probe(script: str, *flags: str, run_dir: Path, args: Optional[list[str]] = None,
          timeout: float = 240) -> ProbeResult:
    report_path = run_dir.parent / f"{run_dir.name}.json"
    cli_args = ["probe", script, "--run-dir", str(run_dir), "--json", str(report_path), "-q", *flags]
    if args:
        cli_args += ["--", *args]
    started = time.monotonic()
    result = run_cli(*cli_args, timeout=timeout, cwd=str(REPO))
    wall = time.monotonic() - started
    assert report_path.exists(), f"no report written; stderr:\n{result.stderr}"
    report = json.loads(report_path.read_text())
    left = processes_of(run_dir.resolve())
    assert not left, f"processes left running: {[p.pid for p in left]}"
    return ProbeResult(result.code, report, result.stderr, result.stdout, wall, run_dir)


def run_example(name: str, tmp_path: Path, *flags: str) -> ProbeResult:
    """`ddpdoctor probe examples/NAME.py FLAGS` into tmp_path/run."""
    return probe(f"examples/{name}.py", *flags, run_dir=tmp_path / "run")
