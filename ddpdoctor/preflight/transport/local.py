"""Gather this machine's facts in this process: no ssh, no child Python.

facts.gather bounds its own waits, but name resolution inside it (getfqdn) cannot be interrupted,
so it runs in a daemon thread that we stop waiting for at the deadline.
"""

from __future__ import annotations

import threading
import time

from ddpdoctor.preflight.node import facts
from ddpdoctor.preflight.node.facts import NodeFacts
from ddpdoctor.preflight.transport import FactsRequest, TransportFailure


def facts_here(request: FactsRequest) -> NodeFacts | TransportFailure:
    """This machine's facts, or a timeout failure if gathering them overran the deadline."""
    params = request.params("local")
    box: dict[str, object] = {}

    def work() -> None:
        try:
            box["facts"] = facts.gather(params["connect"], params["timeout"], params["import_torch"], "local")
        except Exception as exc:  # noqa: BLE001 - reported as this node's failure, with its words
            box["error"] = exc

    began = time.monotonic()
    thread = threading.Thread(target=work, name="ddpdoctor-local-facts", daemon=True)
    thread.start()
    thread.join(request.timeout)
    seconds = round(time.monotonic() - began, 3)
    if "facts" in box:
        return box["facts"]  # type: ignore[return-value]
    if "error" in box:
        exc = box["error"]
        return TransportFailure("other", f"gathering this machine's facts failed: {exc}",
                                f"{type(exc).__name__}: {exc}", None, seconds)
    return TransportFailure("timeout", f"gathering this machine's facts took over {request.timeout:g} s",
                            "", None, seconds)
