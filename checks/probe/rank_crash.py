"""DDP504: a rank crashed while the others waited (its traceback)."""

from __future__ import annotations

from typing import Optional

from ddpdoctor.core.findings import Location, Problem, Severity
from ddpdoctor.probe.records import telemetry as tm
from ddpdoctor.probe.analysis import frameworks
from ddpdoctor.probe.run_model.loaded_run import RunModel
from ddpdoctor.core.registry import Incomplete, Skipped, check
from ddpdoctor.probe.analysis.collective_alignment import divergences
from ddpdoctor.probe.analysis.launch_failure import launch_failure

from ddpdoctor.probe.analysis.rank_state import (COLLECTIVE_MISMATCH, READY_TWICE, UNFINISHED_REDUCTION, CrashEvent,
                          crash_events, describe_collective, last_collective, whereabouts)
from ddpdoctor.probe.analysis.stack_groups import rank_stacks
from ddpdoctor.probe.words.wording import at, location, rank_list
from ddpdoctor.postmortem import nccl
from ddpdoctor.postmortem.kinds import error_kind
from ddpdoctor.postmortem.causality import none_found, who, grouped, problem, when
from ddpdoctor.postmortem.evidence import Evidence

# CUDA's "invalid device ordinal": a rank asked for a GPU index its node does not have. Seen on a
# one-GPU H100 with torchrun's default two processes and torch.cuda.set_device(LOCAL_RANK): the
# script is right, the launch is not. The probe and the post-mortem give the same advice.
_DEVICE_HINT = ("the rank asked for a GPU its node does not have (CUDA's 'invalid device ordinal'): "
                "start at most one process per GPU (torchrun --nproc-per-node = the node's GPU count, "
                "`nvidia-smi -L`; CUDA_VISIBLE_DEVICES hides the others) and set each rank's device from "
                "LOCAL_RANK: torch.cuda.set_device(int(os.environ['LOCAL_RANK']))")

_SIGNAL_NOTES = {
    "SIGSEGV": "a crash in native code",
    "SIGABRT": "an abort in native code, e.g. gloo's check on mismatched collective sizes",
    "SIGBUS": "a bad memory access in native code",
    "SIGFPE": "an arithmetic fault in native code",
    "SIGILL": "an illegal instruction: a binary built for another CPU",
    "SIGKILL": "the kernel's OOM killer sends this",
}


@check("DDP504", "A rank crashed while others waited", Severity.ERROR, stages=("evidence",))
def rank_crash(run: RunModel) -> list[Problem] | Skipped | Incomplete:
    """
    What it detects:
        A rank that died: an exception escaped the script (its type, message, file:line and
        traceback are recorded), a fatal signal (a negative exit code: -11 is SIGSEGV, -6
        SIGABRT; SIGKILL only when nothing else explains the crash, as the OOM killer's mark),
        or a non-zero exit code. Ranks that failed only because a peer vanished ("Connection
        closed by peer", "Timed out waiting ...") are consequences: the finding names the
        first cause and says what every other rank was doing then (waiting in a collective,
        its stack, exited normally, or failing in turn). An error after the probe began
        ending the job (a stall verdict, a lost node) is the teardown's consequence: shown,
        never reported as a crash, so one node or many give the same finding. Ranks that
        crashed the same way (same exception type, message up to numbers, and site) are one
        finding; when every rank did, the finding says so. A crash inside
        init_process_group is DDP505's.

    Why it hurts:
        When one rank dies, the others do not: they sit in their next collective until the
        process-group timeout (30 minutes on gloo, 10 on NCCL), and the log fills with their
        timeout errors, which bury the one traceback that matters.

    How to fix:
        Fix the exception in the traceback shown. For errors that only some ranks hit
        (rank-specific data, a file only rank 0 has), make sure every rank can run every step.
        If a rank can legitimately fail, tear the group down instead of leaving the others
        hanging:

            try:
                train()
            finally:
                dist.destroy_process_group()

        CUDA's "invalid device ordinal" means a rank asked for a GPU its node does not have:
        more processes than GPUs (torchrun's --nproc-per-node against `nvidia-smi -L`), not a
        bug in the script's set_device(LOCAL_RANK). A job a crash stopped is not also reported
        as one that never trained.

        "Expected to have finished reduction in the prior iteration" is DDP's unused-parameter
        error: see DDP401. "Expected to mark a variable ready only once" is reported as DDP406
        (reentrant checkpointing, a shared parameter), not here.

        An exception still being handled when the rank entered a collective that never
        returned (`dist.barrier()` in a `finally:` or `except:`) is that rank's crash: it
        may never have left the script, the wait being its consequence ("rank 1 raised
        RuntimeError: CUDA out of memory at train.py:40; with that error in flight, its cleanup
        entered barrier at train.py:52 and waited there for the others").

        A launcher (torchrun) that failed by itself, no rank crashing, is reported here with
        its first error line; one that failed on a taken rendezvous port is DDP104's. A launcher
        that failed and said nothing readable leaves the verdict incomplete, never a pass.
    """
    if isinstance(run, Evidence):
        return _from_evidence(run)
    if not any(rank_run.records for rank_run in run.ranks.values()) and run.outcome is None:
        return Skipped("no rank recorded telemetry")
    failure = launch_failure(run)
    if failure is not None:
        return _launcher_failed(run, failure)
    events = {r: e for r, e in crash_events(run).items() if not _inside_init(run, r)}
    if any(READY_TWICE in (e.message or "") for e in events.values()):
        # DDP406 explains this crash (the parameter, the cause, the fix): one finding, not two.
        # Ranks that only lost their peer because of it go with it.
        events = {r: e for r, e in events.items()
                  if READY_TWICE not in (e.message or "") and not e.collateral}
    # An error after the probe began ending the job is the teardown's doing: shown with the
    # cause, never a finding of its own.
    blamed = {r: e for r, e in events.items() if not e.after_end}
    if divergences(run):
        # The probe's DETAIL check stopped ranks whose collectives diverged: DDP501/DDP502 name
        # the divergence, the cause; that error is its consequence, in words no plain run prints.
        blamed = {r: e for r, e in blamed.items() if not e.probe_worded}
    if not blamed:
        return []
    causes = {r: e for r, e in blamed.items() if not e.collateral} or blamed
    groups: dict[tuple, list[CrashEvent]] = {}
    for event in sorted(causes.values(), key=lambda e: (e.t is None, e.t or 0.0, e.rank)):
        groups.setdefault(event.signature(), []).append(event)
    everyone = sorted(set(run.ranks) | set(_exit_codes(run)))
    return [frameworks.worded("DDP504", _problem(run, members, events, causes, everyone), run)
            for members in groups.values()]


def _launcher_failed(run: RunModel, failure) -> list[Problem] | Incomplete:
    if failure.address_in_use:
        # DDP104 names the port and its holder; this keeps the run from passing without it.
        return Incomplete(f"the job never ran: its rendezvous port{f' {failure.port}' if failure.port else ''} "
                          "was taken (DDP104)")
    if not failure.first_error:
        return Incomplete(f"the launcher exited with code {failure.launcher_exit} while no rank crashed, "
                          "and its output (job.log) holds no error line to say why")
    started = sorted(run.ranks)
    ranks_said = (f"{rank_list(started)} had started" if started else "no rank had started")
    return [Problem(
        message=f"the launcher failed (exit {failure.launcher_exit}; {ranks_said}): {failure.first_error}",
        hint=("fix what the launcher's error says (job.log in the run dir holds its whole output); "
              "a rendezvous error: check MASTER_ADDR/MASTER_PORT or --rdzv-endpoint with "
              "`ddpdoctor preflight`"),
        evidence={"launcher_exit": failure.launcher_exit, "first_error": failure.first_error,
                  "ranks_started": started},
    )]


def _exit_codes(run: RunModel) -> dict[int, Optional[int]]:
    return dict(run.outcome.exit_codes) if run.outcome is not None else {}


def _inside_init(run: RunModel, rank: int) -> bool:
    rank_run = run.ranks.get(rank)
    return rank_run is not None and rank_run.first(tm.InitEnter) is not None and not rank_run.formed


def _problem(run: RunModel, members: list[CrashEvent], events: dict[int, CrashEvent],
             causes: dict[int, CrashEvent], everyone: list[int]) -> Problem:
    first = members[0]
    ranks = sorted(e.rank for e in members)
    steps = sorted({e.step for e in members if e.step is not None})
    when = f" (step {steps[0]})" if len(steps) == 1 else ""
    site = first.site or _signal_site(run, first)
    what = _what(first)
    others: dict[str, list[int]] = {}
    for rank in everyone:
        if rank in ranks:
            continue
        others.setdefault(_doing(run, rank, events, causes), []).append(rank)
    if not others and len(ranks) > 1:
        message = f"every rank ({', '.join(map(str, ranks))}) {what}{at(site)}{when}"
    else:
        message = f"{rank_list(ranks)} {what}{at(site)}{when}"
        if others:
            message += " while " + "; ".join(f"{rank_list(r)} {text}" for text, r in others.items())
    if first.waited_in is not None:
        waited = first.waited_in
        message += (f"; with that error in flight, its cleanup entered {describe_collective(waited)}"
                    f"{at(waited.site)} and waited there for the others, so the error never left "
                    "the script")
    detail = first.traceback.strip() if first.traceback else ""
    dump = run.ranks[first.rank].signal_dump if first.rank in run.ranks else ""
    if dump.strip():
        detail = (detail + "\n" if detail else "") + dump.strip()
    evidence = {
        "crashed_ranks": ranks,
        "kind": first.kind,
        "exc_type": first.name,
        "message": first.message,
        "step": first.step,
        "exit_codes": {str(r): c for r, c in _exit_codes(run).items()},
        "others": {str(r): text for text, rs in others.items() for r in rs},
        "consequences": sorted(r for r in events if r not in causes),
    }
    if first.waited_in is not None:
        evidence["waited_in"] = {"op": first.waited_in.op, "group": first.waited_in.group,
                                 "seq": first.waited_in.seq,
                                 "site": str(first.waited_in.site) if first.waited_in.site else None}
    if detail:
        evidence["detail"] = detail
    return Problem(message=message, hint=_hint(first, ranks), ranks=ranks,
                   location=location(site), evidence=evidence)


def _what(event: CrashEvent) -> str:
    if event.kind == "signal":
        note = _SIGNAL_NOTES.get(event.name)
        number = -(event.exit_code or 0)
        return f"was killed by {event.name} (signal {number}{': ' + note if note else ''})"
    if event.kind == "exit":
        return event.summary()
    if event.probe_worded:
        # In a plain run's words: the rank waits in a collective its peers do not call alike.
        return ("stopped in a collective its peers did not call the same way (the probe's collective "
                "check, TORCH_DISTRIBUTED_DEBUG=DETAIL, ended the wait; a plain run waits there until "
                "the process-group timeout)")
    return f"raised {event.summary()}"


def _doing(run: RunModel, rank: int, events: dict[int, CrashEvent], causes: dict[int, CrashEvent]) -> str:
    """What another rank was doing when this one crashed."""
    rank_run = run.ranks.get(rank)
    event = events.get(rank)
    if event is not None and rank in causes:
        return f"crashed too ({event.summary()}, reported separately)"
    if event is not None:
        record, returned = last_collective(rank_run) if rank_run else (None, False)
        # A collective of the step it failed in was where it waited (the instruments may mark
        # it returned: it did return, with the peer's error).
        if record is not None and (not returned or record.step == event.step):
            return (f"was waiting in {describe_collective(record)}{at(record.site)} (seq {record.seq}) "
                    f"and then failed with {event.summary()}")
        return f"failed in turn with {event.summary()}"
    return whereabouts(run, rank)


def _signal_site(run: RunModel, event: CrashEvent) -> Optional[Location]:
    """For a rank killed by a signal: the innermost user frame of its faulthandler dump."""
    view = rank_stacks(run).get(event.rank)
    return view.location if view is not None else None


def _hint(event: CrashEvent, ranks: list[int]) -> str:
    if event.waited_in is not None:
        return (f"fix the {event.name} on {rank_list(ranks)}; and keep collectives out of the "
                f"cleanup of a failed rank: its {event.waited_in.op} waits for ranks that went on "
                "and hides the error. Call only dist.destroy_process_group() in `finally:`, and "
                "the barrier after the `try` block, where only a rank without an error reaches it")
    if UNFINISHED_REDUCTION in (event.message or ""):
        return ("this is DDP's unused-parameter error: DDP401 names the parameters that got no "
                "gradient; make them take part in the loss, freeze them (requires_grad=False) or "
                "pass find_unused_parameters=True")
    if COLLECTIVE_MISMATCH in (event.message or ""):
        return ("torch's collective check (TORCH_DISTRIBUTED_DEBUG=DETAIL) caught ranks calling "
                "different collectives: DDP501/DDP502 name them and their call sites; make every "
                "rank call the same collectives with the same shapes")
    if error_kind(event.name or "", event.message or "") == "device":
        return _DEVICE_HINT
    kind = nccl.kind_of(event.message) if "NCCL" in (event.message or "") else "other"
    if kind not in ("other", "remote"):
        return nccl.hint(kind)  # NCCL said why: advice for that cause, not for the code
    if event.collateral:
        return ("every rank timed out or lost a peer: the ranks disagreed on their collectives "
                "(see DDP501/DDP502) or a rank was missing; fix that first")
    if event.kind == "signal" and event.name == "SIGKILL":
        return ("the process was killed from outside, most likely by the kernel's OOM killer "
                "(check `dmesg`): lower the batch size or DataLoader num_workers")
    if event.kind == "signal":
        return ("a native crash: the faulthandler stack shows where; check that torch, CUDA and "
                "NCCL versions match across nodes (`ddpdoctor preflight`), and that every rank "
                "passes the same shapes to each collective (DDP501)")
    return (f"fix the {event.name} shown in the traceback on {rank_list(ranks)}; the other ranks "
            f"only waited for {'it' if len(ranks) == 1 else 'them'}, so make sure every rank can run "
            "every step (rank-specific data or files), and call dist.destroy_process_group() in a "
            "`finally:` so a failure does not leave the others hanging")


def _from_evidence(ev: Evidence) -> list[Problem] | Skipped:
    """A dead job's logs: each rank's own exception (not a peer's doing, not another code's),
    and a rank that died by a signal leaving no traceback (its watchdog's abort excepted)."""
    from ddpdoctor.postmortem.causality import signal_deaths

    facts = [e for e in ev.errors if not e.collateral and e.kind in ("own", "device")]
    facts += signal_deaths(ev)
    if not facts:
        return none_found(ev)
    problems = []
    for group in grouped(facts):
        first = group[0]
        ranks = sorted({f.rank for f in group if f.rank is not None})
        who_ = who(group, "the launcher")
        if hasattr(first, "exc_type"):
            what = first.summary()
            hint = ("fix the exception in the traceback shown; every other rank then waited for "
                    f"{'it' if len(ranks) == 1 else 'them'} (the consequences)")
            if first.kind == "device":
                hint = _DEVICE_HINT
            detail = first.traceback
            site = first.site
        else:
            what = f"died by signal {-first.exitcode} with no traceback ({first.message or 'no message'})"
            hint = "a native crash: rerun with PYTHONFAULTHANDLER=1 to get that rank's stack"
            detail = first.message
            site = None
        problems.append(problem(ev, group, f"{who_}: {what}{at(site) if site else ''}{when(group)}",
                                hint, extra={"detail": detail, "crashed_ranks": ranks}))
    return problems
