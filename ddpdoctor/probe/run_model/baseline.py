"""The `--baseline` report: an earlier JSON report of `ddpdoctor probe`, read once before the
probe starts (bad input is one line then) and kept in the run dir (BASELINE_FILE) so that
`ddpdoctor report RUN_DIR` compares with the same numbers. What counts as a regression is
analysis/regression.py's."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional

from ddpdoctor.core.errors import UsageError
from ddpdoctor.probe.records.rundir import BASELINE_FILE


@dataclass
class Baseline:
    """The numbers of the earlier report, and where they came from."""

    source: str
    metrics: dict[str, Any]
    world_size: Optional[int] = None
    script: str = ""


def number(value: Any) -> Optional[float]:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        return None
    return float(value)


def parse(data: Any, source: str) -> Baseline:
    """An earlier report's numbers; UsageError (one line) for anything that is not one."""
    if not isinstance(data, dict) or data.get("tool") != "ddpdoctor":
        raise UsageError(f"--baseline {source} is not a ddpdoctor JSON report")
    if data.get("command") != "probe":
        raise UsageError(f"--baseline {source} is a report of `ddpdoctor {data.get('command')}`, "
                         "not of `ddpdoctor probe`")
    metrics = data.get("metrics")
    if not isinstance(metrics, dict) or number(metrics.get("step_ms_median")) is None:
        raise UsageError(f"--baseline {source} has no step time to compare with (its probe "
                         "judged no steps)")
    world = metrics.get("world_size")
    return Baseline(source, metrics, int(world) if number(world) is not None else None,
                    str(data.get("script") or ""))


def load_baseline(path: str | Path) -> Baseline:
    """Read an earlier JSON report given to --baseline."""
    text_path = str(path)
    try:
        text = Path(path).read_text()
    except FileNotFoundError:
        raise UsageError(f"--baseline {text_path}: no such file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise UsageError(f"--baseline {text_path}: cannot read it ({getattr(exc, 'strerror', None) or exc})") from None
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise UsageError(f"--baseline {text_path} is not JSON ({exc})") from None
    return parse(data, text_path)


def store(run_dir: Path, baseline: Baseline) -> None:
    """Keep the baseline's numbers beside the run (for `ddpdoctor report RUN_DIR`)."""
    from ddpdoctor.core.files import write_atomic

    data = {"tool": "ddpdoctor", "command": "probe", "source": baseline.source,
            "metrics": baseline.metrics}
    write_atomic(run_dir / BASELINE_FILE, json.dumps(data, indent=2) + "\n", mode=0o600)


def stored(run_dir: str | Path) -> Optional[Baseline]:
    """The baseline kept in a run dir, if --baseline was given (a damaged copy: none)."""
    path = Path(run_dir) / BASELINE_FILE
    if not path.is_file():
        return None
    try:
        data = json.loads(path.read_text())
        found = parse(data, str(data.get("source") or path))
    except (ValueError, UsageError, OSError):
        return None
    return found
