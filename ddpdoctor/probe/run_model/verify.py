"""`probe --verify-fix`: the step times measured with the fixes the performance findings suggest.

probe/launch/verify.py reruns the script once per suggested set of DDP arguments, each a probe of
its own in RUN_DIR/verify/<n> (a complete run dir), and lists them in RUN_DIR/verify.json; this
module reads that list back, and perf.what_if puts each measured step time beside the estimate
of the finding that suggested it.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Optional

from ddpdoctor.probe.records.rundir import VERIFY_FILE


@dataclass
class VerifyResult:
    """One finding's fix, applied by the probe and measured."""

    code: str
    ddp_kwargs: dict = field(default_factory=dict)  # {} : the probe cannot apply this fix
    estimated_step_ms: Optional[float] = None
    step_ms: Optional[float] = None  # the rerun's median step; None: not measured (see note)
    run_dir: str = ""  # relative to the main run dir
    status: str = ""  # how the rerun ended (pass, fail, ...)
    note: str = ""

    @property
    def step_s(self) -> Optional[float]:
        return self.step_ms / 1e3 if self.step_ms is not None else None

    @property
    def error(self) -> Optional[float]:
        """(measured - estimated) / measured."""
        if self.step_ms is None or self.estimated_step_ms is None or self.step_ms <= 0:
            return None
        return (self.step_ms - self.estimated_step_ms) / self.step_ms

    def to_dict(self) -> dict[str, Any]:
        found = asdict(self)
        found["error"] = round(self.error, 4) if self.error is not None else None
        return found


def load(run_dir: str | Path) -> list[VerifyResult]:
    """The verification results of a run dir ([] without --verify-fix). A damaged file is
    treated as none: the report of the main run must still come."""
    path = Path(run_dir) / VERIFY_FILE
    if not path.is_file():
        return []
    try:
        data = json.loads(path.read_text())
        known = set(VerifyResult.__dataclass_fields__)
        return [VerifyResult(**{k: v for k, v in item.items() if k in known})
                for item in data.get("results", [])]
    except (ValueError, TypeError, AttributeError):
        return []
