"""DDP502: a rank skipped a collective the others entered."""

from __future__ import annotations

from ddpdoctor.attach.observation import Observation
from ddpdoctor.attach.flight import SKIPPED as FLIGHT_SKIPPED, Divergence as FlightDivergence, DumpSet, completed
from ddpdoctor.attach.window import DEVICE_WAIT, EXITED, HUNG, NOTHING_SAMPLED, OWN_PHASE, Window, window
from ddpdoctor.core.findings import Problem, Severity
from ddpdoctor.probe.records import telemetry as tm
from ddpdoctor.probe.analysis import frameworks
from ddpdoctor.probe.run_model.loaded_run import RunModel
from ddpdoctor.core.registry import Incomplete, Skipped, check

from ddpdoctor.probe.analysis.collective_alignment import SKIPPED, Divergence, divergences
from ddpdoctor.probe.analysis.loaders import batch_sampler_fix, custom_batch_sampler
from ddpdoctor.probe.analysis.rank_state import describe_collective, forward_only_on, whereabouts
from ddpdoctor.probe.run_model.busy_or_blocked import DDP_BUFFER_BROADCAST
from ddpdoctor.probe.run_model.stack_view import bare_name
from ddpdoctor.probe.analysis.skipped_backward import SkippedBackward, skipped_backwards
from ddpdoctor.probe.words.wording import at, location, rank_list, verb
from ddpdoctor.postmortem.causality import grouped, problem, when
from ddpdoctor.postmortem.evidence import Evidence


@check("DDP502", "A rank skipped a collective the others entered", Severity.ERROR,
       stages=("evidence", "attach", "flight"))
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

        A rank-local skip is named where it happened: a rank whose DDP training forward had
        no backward while its peers' same forward had one skipped DDP's all-reduce for it
        ("rank 1 ran DDP training forward 3 (step 3) at train.py:40 without a backward"), with
        the lines between that forward and its backward, where the branch is. Where the
        shifted all-reduces finally stopped the job is its consequence, not reported apart.
        Decide such a skip on every rank alike:

            bad = torch.tensor(float(not torch.isfinite(loss)))
            dist.all_reduce(bad, op=dist.ReduceOp.MAX)
            if bad.item():
                continue                 # every rank skips this batch together

        Collectives on two groups called in opposite orders (rank 0: group A then B; rank 1:
        B then A) are one finding naming both orders, not two skipped collectives: call them
        in the same order on every rank.
    """
    if isinstance(run, Evidence):
        return _from_evidence(run)
    if isinstance(run, DumpSet):
        return _from_dumps(run)
    if isinstance(run, Observation):
        return _from_attach(run)
    calls = [r for rank_run in run.ranks.values() for r in rank_run.of(tm.Collective)]
    if not calls:
        return Skipped("no collective was recorded")
    if len(run.ranks) < 2:
        return Skipped("fewer than 2 ranks left telemetry: nothing to compare")
    skips = [frameworks.worded("DDP502", _skip_problem(run, s), run) for s in skipped_backwards(run)]
    return skips + [frameworks.worded("DDP502", _problem(run, d), run)
                    for d in divergences(run) if d.kind == SKIPPED]


def _skip_problem(run: RunModel, skip: SkippedBackward) -> Problem:
    """A rank's training forward with no backward where its peers ran one: the skipped
    all-reduce is the cause; the collective where the shifted pairs finally met is not."""
    forward = skip.forward
    where = ""
    if skip.backward_site is not None and forward.site is not None:
        where = (f"; the branch that ran only there lies between the forward{at(forward.site)} and "
                 f"its backward{at(skip.backward_site)} (a `continue` or an `if` around backward)")
    stops = "; ".join(f"rank {r} {whereabouts(run, r)}" for r in sorted(run.ranks))
    message = (f"rank {skip.rank} ran DDP training forward {forward.iteration} (step {forward.step})"
               f"{at(forward.site)} without a backward, so it skipped DDP's gradient all-reduce for "
               f"it, which {rank_list(list(skip.others))} entered{where}; from there each of its "
               "gradient all-reduces paired with the wrong one of its peers'"
               + (f" (where the ranks stopped: {stops})" if stops else ""))
    return Problem(
        message=message,
        hint=(f"decide to skip a batch on every rank alike: e.g. `bad = torch.tensor(float(not "
              "torch.isfinite(loss))); dist.all_reduce(bad, op=dist.ReduceOp.MAX)` and `continue` "
              "on every rank when bad > 0; or keep the step and zero its loss (`loss = loss * 0`) "
              f"so the backward and its all-reduce still run on rank {skip.rank}"),
        ranks=[skip.rank],
        location=location(forward.site),
        evidence={"rank": skip.rank, "forward": forward.iteration, "step": forward.step,
                  "ddp_id": forward.ddp_id, "forward_site": str(forward.site) if forward.site else None,
                  "backward_site": str(skip.backward_site) if skip.backward_site else None,
                  "peers_with_backward": list(skip.others)},
    )


_PLURAL = (("is ", "are "), ("waits ", "wait "), ("was ", "were "), ("has ", "have "))


def _agree(text: str, count: int) -> str:
    """A rank's whereabouts said of several ranks: "is running" -> "are running"."""
    if count > 1:
        for one, many in _PLURAL:
            if text.startswith(one):
                return many + text[len(one):]
    return text


def _crossed(run: RunModel, one: Divergence, other: Divergence) -> Problem:
    """The two groups' collectives called in opposite orders: each side's order, named."""
    a, b = one.entered.call.record, other.entered.call.record

    def order(ranks: list[int], first: tm.Collective, first_group: str, then_group: str) -> str:
        return (f"{rank_list(ranks)} entered {describe_collective(first)} on group {first_group}"
                f"{at(first.site)} first and waits there, before its collective on group {then_group}")

    message = (f"the ranks call collectives on groups {one.group} and {other.group} in opposite "
               f"orders: {order(one.entered.ranks, a, one.group, other.group)}; "
               f"{order(other.entered.ranks, b, other.group, one.group)}; each waits for the "
               "others in the one they call second")
    return Problem(
        message=message,
        hint=(f"call the collectives of groups {one.group} and {other.group} in the same order on "
              "every rank (decide the order from something every rank shares, never from the rank)"),
        ranks=sorted(set(one.entered.ranks) | set(other.entered.ranks)),
        location=location(a.site),
        evidence={"groups": [one.group, other.group],
                  "orders": {str(r): [one.group, other.group] for r in one.entered.ranks}
                  | {str(r): [other.group, one.group] for r in other.entered.ranks},
                  "first_calls": {one.group: one.entered.call.evidence(),
                                  other.group: other.entered.call.evidence()}},
    )


def _problem(run: RunModel, divergence: Divergence) -> Problem:
    if divergence.crossed is not None:
        return _crossed(run, divergence, divergence.crossed)
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
        hint=_hint(record, entered.ranks, skipped, custom_batch_sampler(run),
                   still_training=any(c is not None and c.record.op == "ddp_bucket_allreduce"
                                      for c in divergence.instead.values())),
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


def _hint(record: tm.Collective, entered: list[int], skipped: list[int], batch_sampler: str = "",
          still_training: bool = False) -> str:
    if record.op == DDP_BUFFER_BROADCAST:
        return forward_only_on(entered, record)
    if record.op == "ddp_bucket_allreduce" and batch_sampler:
        return batch_sampler_fix(batch_sampler, skipped)
    if still_training and batch_sampler:
        # The entering ranks ran out of batches while the others still trained: the sampler's.
        return batch_sampler_fix(batch_sampler, entered)
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
        skipped = _flight_skips(ev.flight)
        if not ev.flight.complete:
            return Incomplete(f"Flight Recorder dumps incomplete: {ev.flight.missing}")
        for found in skipped:
            found.evidence.setdefault("role", "cause")
            problems.append(found)
    if not problems and ev.empty:
        return Skipped("no evidence was read")
    return problems


def _from_dumps(dumps: DumpSet) -> list[Problem] | Incomplete:
    """A folder of Flight Recorder dumps (`ddpdoctor report DUMPS`): judged only when every rank
    of the job left one (a rank without a dump would look like a rank that skipped)."""
    if not dumps.complete:
        return Incomplete(f"the dumps are incomplete: {dumps.missing}")
    if len(dumps.dumps) < 2:
        return Incomplete("fewer than 2 ranks' dumps: nothing to line up")
    return _flight_skips(dumps)


def _flight_skips(dumps: DumpSet) -> list[Problem]:
    return [_flight_skip(d) for d in dumps.lineup.divergences if d.kind == FLIGHT_SKIPPED]


def _flight_skip(d: FlightDivergence) -> Problem:
    """Ranks that entered a collective at one position of a group that others never did."""
    have, lacking, by_rank = d.entered, d.lacking, d.by_rank
    call = by_rank[have[0]][d.seq]
    instead = []
    for r in lacking:
        calls = by_rank.get(r, {})
        if calls:
            last = calls[max(calls)]
            state = "completed" if completed(last.entry) else "not completed"
            instead.append(f"rank {r}'s last collective was {last.describe()}{last.at()} ({state})")
        else:
            instead.append(f"rank {r} recorded no collective on this group")
    stuck = "" if completed(call.entry) else f"; {rank_list(have)} {verb(have, 'waits', 'wait')} in it"
    frames = {str(r): by_rank[r][max(by_rank[r])].view.lines() for r in lacking if by_rank.get(r)}
    return Problem(
        message=(f"{rank_list(have)} entered {call.describe()}{call.at()} on group {d.group} and "
                 f"{rank_list(lacking)} never did: " + "; ".join(instead) + stuck),
        hint=(f"call {call.op} on every rank, outside any rank- or data-dependent branch; "
              f"{rank_list(lacking)} stopped before it: {verb(lacking, 'its', 'their')} last "
              "collective's frames (in the details) show where"),
        ranks=lacking if len(lacking) <= len(have) else have,
        location=call.view.location,
        evidence={"group": d.group, "seq": d.seq, "op": call.op, "entered_ranks": have,
                  "skipped_ranks": lacking, "source": "flight recorder",
                  "detail": "\n".join([f"rank {have[0]} (entered): {call.view.lines()}"] +
                                      [f"rank {r} (last collective): {t}" for r, t in frames.items()])},
    )


def _from_attach(observation: Observation) -> list[Problem] | Incomplete:
    """A running job (`ddpdoctor attach`): from the sampled stacks, a hung rank waiting in a
    collective of its own that the others never entered; from the Flight Recorder dumps its pipe
    fetched (NCCL), the same with sequence numbers."""
    win = window(observation)
    flight = _flight_skips(observation.flight) if observation.flight is not None else []
    found: list[Problem] | Incomplete = []
    if win.phase == HUNG:
        found = [p for p in (_stack_skip(win),) if p is not None]
    elif win.phase in (NOTHING_SAMPLED, OWN_PHASE, EXITED, DEVICE_WAIT):
        found = Incomplete(win.short_reason())
    if flight:  # the dumps' evidence (sequence numbers, every rank's frames) joins the stacks' own
        return (found if isinstance(found, list) else []) + flight
    return found


def _stack_skip(win: Window) -> Problem | None:
    """The odd group waits in a collective of its own that the other ranks never entered (they
    went on, and wait in DDP's gradient all-reduce or another collective)."""
    groups = win.groups()
    odd = win.odd(groups)
    if not odd.waiting or odd.view is None or bare_name(odd.view.call) == "backward":
        return None
    others = [g for g in groups if g is not odd]
    if not others or not all(g.waiting and g.view is not None
                             and g.view.signature != odd.view.signature for g in others):
        return None
    call = bare_name(odd.view.call)
    skipped = sorted(r for g in others for r in g.ranks)
    where = f" at {odd.view.location}" if odd.view.location else ""
    elsewhere = "; ".join(f"{rank_list(g.ranks)} {g.where}" for g in others)
    return Problem(
        message=(f"{rank_list(odd.ranks)} entered {call}{where} and {rank_list(skipped)} "
                 f"skipped it: {elsewhere}"),
        hint=(f"call {call} on every rank, outside any rank- or data-dependent branch "
              "(`if rank == 0:` around a collective hangs the job)"),
        ranks=odd.ranks if len(odd.ranks) <= len(skipped) else skipped,
        location=odd.view.location,
        evidence={"op": call, "entered_ranks": odd.ranks, "skipped_ranks": skipped,
                  "from": "sampled stacks (no telemetry: sequence numbers unknown)"},
    )
