"""DDP511: a rank exited without destroy_process_group (the heartbeat monitor at teardown)."""

from __future__ import annotations

from ddpdoctor.core.findings import Problem, Severity
from ddpdoctor.core.registry import Skipped, check
from ddpdoctor.postmortem.causality import none_found, CONSEQUENCE, problem, verdict
from ddpdoctor.postmortem.evidence import Evidence
from ddpdoctor.probe.words.wording import rank_list


@check("DDP511", "A rank exited without destroy_process_group", Severity.INFO, stages=("evidence",))
def teardown_heartbeat(ev: Evidence) -> list[Problem] | Skipped:
    """
    What it detects:
        ProcessGroupNCCL's "process group has NOT been destroyed before we destruct
        ProcessGroupNCCL" warning, and its heartbeat monitor's "Heartbeat monitor timed out!" /
        "watchdog got stuck" when no rank left an error and no collective timed out: the
        script ended without `dist.destroy_process_group()`. Beside a real failure these lines
        are its consequence, never the cause.

    Why it hurts:
        Usually it does not: the job had finished. But the heartbeat monitor's words look like
        a hang, and a rank that exits while a peer still has collectives in flight can leave
        that peer waiting.

    How to fix:
        End the script with the process group torn down:

            try:
                train()
            finally:
                dist.destroy_process_group()
    """
    if not ev.teardowns:
        return none_found(ev)
    failed = verdict(ev).known or ev.timeouts
    ranks = sorted({t.rank for t in ev.teardowns if t.rank is not None})
    who_ = rank_list(ranks) if ranks else "the job"
    kinds = {t.kind for t in ev.teardowns}
    what = ("the heartbeat monitor fired at exit" if "heartbeat" in kinds else
            "the process group was not destroyed before exit")
    if failed:
        message = f"{who_}: {what}, after the failure: a consequence of it, not a cause"
    else:
        message = (f"{who_}: {what}; no rank left an error and no collective timed out: the job "
                   "ended without dist.destroy_process_group()")
    return [problem(ev, ev.teardowns[:20], message,
                    "call dist.destroy_process_group() at the end of the script (in a finally)",
                    severity=Severity.INFO, role_=CONSEQUENCE if failed else "cause")]
