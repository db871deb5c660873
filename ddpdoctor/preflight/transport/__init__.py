"""How facts are gathered from nodes: in this process (local.py) or over ssh (ssh.py).

Every transport returns either a node's `NodeFacts` or a `TransportFailure` saying, in one word
and one line of evidence, why the node could not be asked.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional


@dataclass
class TransportFailure:
    """Why a node's facts could not be gathered."""

    kind: str  # refused | auth | timeout | host-key | unresolvable | unreachable | no-python | other
    message: str  # one line for people: "ssh to gpu07 timed out after 10 s"
    evidence: str = ""  # the line from ssh or the node that says so, secrets scrubbed
    exit_code: Optional[int] = None
    seconds: float = 0.0


@dataclass
class FactsRequest:
    """What to ask every node: its facts, and optionally a connect test to the rendezvous port."""

    timeout: float = 10.0
    connect: Optional[dict[str, Any]] = None  # {"host", "port", "timeout"} for facts.gather
    import_torch: bool = True

    def params(self, collected_by: str) -> dict[str, Any]:
        # Budget the node's own work a little under our deadline, so a slow node still answers.
        return {"connect": self.connect, "timeout": max(1.0, self.timeout * 0.8),
                "import_torch": self.import_torch, "collected_by": collected_by}
