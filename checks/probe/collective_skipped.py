"""DDP502: a rank skipped a collective the others entered."""

from __future__ import annotations

from ddpdoctor.core.findings import Problem, Severity
from ddpdoctor.probe import telemetry as tm
from ddpdoctor.probe.analysis import frameworks
from ddpdoctor.probe.analysis.runmodel import RunModel
from ddpdoctor.core.registry import Skipped, check

from ddpdoctor.probe.analysis.collective_alignment import SKIPPED, Divergence, divergences
from ddpdoctor.probe.analysis.rank_state import whereabouts
from ddpdoctor.probe.wording import at, location, rank_list, verb
from ddpdoctor.postmortem.causality import grouped, problem, when
from ddpdoctor.postmortem.evidence import Evidence


@check("DDP502", "A rank skipped a collective the others entered", Severity.ERROR, stages=("evidence",))
def collective_skipped(run: RunModel) -> list[Problem] | Skipped:
    """
    What it detects:
        Lining up every rank's collectives per process group (see DDP501), a collective that
        some ranks entered and others never did. Either the sequences line up again once that
        one call is removed (the others went straight on to the next collective), or the
        other ranks' sequences stop there while they ended normally or were stuck elsewhere
        (a stalled run). The finding names the collective (op, shapes, call site), its
        position (seq), the ranks that entered it, and what the skipping ranks did instead.
        A rank whose sequence stops because it crashed is DDP504's, not this check's. One
        finding per process group; later divergences are counted in the evidence. When the
        extra collective is on one group and DDP's gradient all-reduce on another, the ranks
        that skipped it wait in the gradient all-reduce: that wait is named as the consequence,
        not reported on its own. `ddpdoctor attach` reports it from a running job's stacks (a
        rank waiting in a collective of its own while the others wait elsewhere) and from
        Flight Recorder dumps (`ddpdoctor report FR_DUMP_DIR`, with sequence numbers).

    Why it hurts:
        A collective completes only when every rank of the group enters it. The ranks that
        entered wait for the ones that never come: the job hangs until the process-group
        timeout (30 minutes on gloo, 10 on NCCL by default). Worse, the waiting collective can
        pair with the skipper's next, unrelated one and return garbage.

    How to fix:
        Call the collective on every rank, outside any rank- or data-dependent branch:

            # before: only rank 0 reduces, the others move on and hang later
            if dist.get_rank() == 0:
                dist.all_reduce(loss)
            # after
            dist.all_reduce(loss)
            if dist.get_rank() == 0:
                print(loss.item())

        A skipped DDP gradient all-reduce means a rank ran fewer backward passes (an early
        `continue`, uneven batches): give every rank the same number of steps, or wrap the
        loop in `with model.join():`.
    """
    if isinstance(run, Evidence):
        return _from_evidence(run)
    calls = [r for rank_run in run.ranks.values() for r in rank_run.of(tm.Collective)]
    if not calls:
        return Skipped("no collective was recorded")
    if len(run.ranks) < 2:
        return Skipped("fewer than 2 ranks left telemetry: nothing to compare")
    return [frameworks.worded("DDP502", _problem(run, d), run) for d in divergences(run) if d.kind == SKIPPED]


_PLURAL = (("is ", "are "), ("waits ", "wait "), ("was ", "were "), ("has ", "have "))


def _agree(text: str, count: int) -> str:
    """A rank's whereabouts said of several ranks: "is running" -> "are running"."""
    if count > 1:
        for one, many in _PLURAL:
            if text.startswith(one):
                return many + text[len(one):]
    return text


def _problem(run: RunModel, divergence: Divergence) -> Problem:
    entered = divergence.entered
    record = entered.call.record
    what = entered.call.describe()
    skipped = divergence.skipped
    instead: dict[str, list[int]] = {}
    for rank in skipped:
        call = divergence.instead.get(rank)
        if call is not None:
            text = f"called {call.describe()}{at(call.record.site)} at that position instead"
        else:
            text = whereabouts(run, rank)
        instead.setdefault(text, []).append(rank)
    elsewhere = "; ".join(f"{rank_list(ranks)} {_agree(text, len(ranks))}" for text, ranks in instead.items())
    never = "never entered it" if divergence.tail else "skipped it"
    message = (f"{rank_list(entered.ranks)} entered {what}{at(record.site)} "
               f"(seq {record.seq} on group {divergence.group}, step {record.step}) "
               f"and {rank_list(skipped)} {never}: {elsewhere}")
    effect = divergence.consequence
    if effect is not None:
        waiting = effect.entered
        message += (f"; so {rank_list(waiting.ranks)} {verb(waiting.ranks, 'waits', 'wait')} in "
                    f"{waiting.call.describe()}{at(waiting.call.record.site)} (group {effect.group}), "
                    f"which {rank_list(effect.skipped)} never reached")
    if divergence.later:
        message += f"; {divergence.later} more divergent position(s) follow"
    if len(entered.ranks) < len(skipped):
        blamed = entered.ranks
    elif len(skipped) < len(entered.ranks):
        blamed = skipped
    else:
        blamed = entered.ranks + skipped
    return Problem(
        message=message,
        hint=_hint(record, entered.ranks, skipped),
        ranks=blamed,
        location=location(record.site),
        evidence={
            "group": divergence.group,
            "seq": record.seq,
            "position": divergence.position,
            **entered.call.evidence(),
            "entered_ranks": entered.ranks,
            "skipped_ranks": skipped,
            "instead": {str(r): text for text, ranks in instead.items() for r in ranks},
            "sequence_ended": divergence.tail,
            "later_divergences": divergence.later,
            "consequence": None if effect is None else {
                "group": effect.group, "seq": effect.seq, "op": effect.entered.call.record.op,
                "bucket": effect.entered.call.record.bucket, "waiting_ranks": effect.entered.ranks},
        },
    )


def _hint(record: tm.Collective, entered: list[int], skipped: list[int]) -> str:
    if record.op == "ddp_bucket_allreduce":
        return (f"{rank_list(skipped)} ran fewer backward passes than {rank_list(entered)}: give "
                "every rank the same number of batches (DistributedSampler, drop_last=True), do not "
                "`continue` before loss.backward() on some ranks only, or wrap the loop in "
                "`with model.join():` for uneven inputs")
    return (f"call the collective{at(record.site)} on every rank of the group, not only on "
            f"{rank_list(entered)}: move it out of the rank- or data-dependent branch (e.g. "
            "all_reduce on every rank, print on rank 0 only)")


def _from_evidence(ev: Evidence):
    """A dead job's evidence: a complete set of Flight Recorder dumps in which ranks entered a
    collective another never did, or the desync report (TORCH_NCCL_DESYNC_DEBUG) naming ranks
    that never joined or did not join the next collective."""
    from ddpdoctor.core.registry import Incomplete

    problems = []
    for report in ev.desync:
        lagging = report.never_joined or report.not_joined_next
        if not lagging:
            continue
        what = ("never joined any collective" if report.never_joined else
                f"finished collective #{report.seq} but never joined #{(report.seq or 0) + 1}")
        found = problem(ev, [report], f"{rank_list(sorted(set(lagging)))} {what} (the desync report of "
                        f"rank {report.rank})", "the rank named stopped before the collective the others "
                        "entered: its own log (or stack) shows where", role_="cause")
        found.ranks = sorted(set(lagging))
        problems.append(found)
        break
    if ev.flight is not None:
        skipped = [p for code, p in ev.flight.problems if code == "DDP502"]
        if not ev.flight.complete:
            return Incomplete(f"Flight Recorder dumps incomplete: {ev.flight.missing}")
        for found in skipped:
            found.evidence.setdefault("role", "cause")
            problems.append(found)
    if not problems and ev.empty:
        return Skipped("no evidence was read")
    return problems
