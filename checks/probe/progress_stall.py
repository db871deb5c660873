"""DDP503: the job stopped making progress; every rank's stack, grouped."""

from __future__ import annotations

from typing import Optional

from ddpdoctor.attach.observation import Observation
from ddpdoctor.attach.window import HUNG, PROGRESSING, Window, window
from ddpdoctor.core.findings import Problem, Severity
from ddpdoctor.probe.records import telemetry as tm
from ddpdoctor.probe.analysis import frameworks
from ddpdoctor.probe.run_model.loaded_run import RunModel
from ddpdoctor.core.registry import Incomplete, Skipped, check

from ddpdoctor.probe.analysis.collective_alignment import SKIPPED, divergences
from ddpdoctor.probe.analysis.outside_steps import final_spell
from ddpdoctor.probe.analysis.skipped_backward import skipped_backwards
from ddpdoctor.probe.analysis.rank_state import crash_events, describe_collective, last_collective
from ddpdoctor.probe.analysis.stack_groups import (StandGroup, blocking_workers, detail_line, group_stacks,
                                                   on_hosts, rank_stacks, stall_hint, waits_in_collective)
from ddpdoctor.probe.run_model.stack_view import StackView
from ddpdoctor.probe.words.wording import at, location, rank_list, ranges, seconds
from ddpdoctor.probe.words.large_world import LARGE_WORLD, MAX_GROUPS, SHOWN_PER_GROUP, summarised
from ddpdoctor.postmortem.causality import grouped, problem, when
from ddpdoctor.postmortem.evidence import Evidence


@check("DDP503", "The job stopped making progress", Severity.ERROR, stages=("evidence", "attach"))
def progress_stall(run: RunModel) -> list[Problem] | Skipped | Incomplete:
    """
    What it detects:
        The probe's watchdog saw no rank advance (no new telemetry) for the stall timeout
        while a rank was blocked: waiting in a collective, a barrier or a store wait that its
        peers had not reached, or every rank waiting. Peers still running inside the same
        statement (importing what the call needs, a slower backward) are late, not a stall.
        Ranks busy in their own code (CPU time advancing, the stack moving, or all sleeping at
        one line with no collective pending: data preparation, evaluation, a checkpoint
        upload) are not a stall; the watchdog
        keeps watching up to --timeout, and if --timeout ends such a job the verdict is
        incomplete (exit 4) with where the time went, not this error. A job --timeout ends
        while it was still training or blocked is reported here. Every rank's stack at that moment
        (py-spy, else the faulthandler dump the rank wrote) is grouped: ranks whose innermost
        user frame, the library call made from it and their chain of user frames are the
        same stand in one group. The message says where each group stands; the odd group out
        gives the location: the smallest group; between equal groups, the one not waiting in a
        collective, else the one that entered a collective the others skipped (DDP502). The
        evidence holds every stack plus the last step and collective each rank recorded.
        Without stacks, each rank's last records say what they can, and the message says so.
        `ddpdoctor attach` reports it for a job already running, from every rank's sampled
        stacks and /proc (docs/attach.md): the ranks waiting in a collective made no read or
        write call and their stacks stayed in place over the window.

    Why it hurts:
        A hung DDP job burns every GPU it holds until the process-group timeout (30 minutes
        on gloo, 10 on NCCL) or forever, and then dies with a timeout error that says nothing
        about which rank was where.

    How to fix:
        Read the groups: the ranks that wait in a collective are waiting for the odd group.
        Typical causes: a collective called on some ranks only, a rank with fewer batches
        (DDP303), a rank stuck in I/O or an endless loop. Every rank must reach the same
        collectives in the same order:

            # before: rank 0 evaluates (with a barrier inside) while the others move on
            if rank == 0:
                evaluate(model)          # calls dist.barrier()
            # after
            evaluate(model)              # on every rank, or no collective inside

        If a step is legitimately slower than the stall timeout, raise --stall-timeout.

        A stall that follows a rank's error in flight (its cleanup barrier waited for ranks
        that went on: DDP504) or a rank-local skipped backward (DDP502) is shown as that
        cause's consequence, at info severity. A rank waiting for a batch whose DataLoader
        worker blocks in the user's code (a Dataset's __getitem__ waiting on a lock or a read)
        is named with the worker's own frame, where the hang is (its workers are sampled too).
    """
    if isinstance(run, Evidence):
        return _from_evidence(run)
    if isinstance(run, Observation):
        return _from_attach(run)
    outcome = run.outcome
    if outcome is None:
        return Skipped("the probe was stopped before it recorded how the job ended")
    if outcome.status == "timeout_busy":
        # Slow is not stuck: --timeout ended ranks that were working (or sleeping) in their own
        # code with nothing pending. Not a hang, and not a pass either: the job was not judged.
        steps = f"the {run.meta.max_steps} steps it needs" if run.meta.max_steps else "its steps"
        ended = f"--timeout ({seconds(run.meta.timeout_s)}) ended the job before it finished, and"
        if not run.ranks:  # no rank to block: where the start-up stood
            return Incomplete(f"{ended} {final_spell(run)}; raise --timeout: its start-up alone took longer")
        return Incomplete(
            f"{ended} no rank ever blocked: {final_spell(run)}; raise --timeout, or let the script "
            f"reach {steps} sooner (a smaller dataset or evaluation flag)")
    if outcome.status not in ("stalled", "timeout"):
        return []
    everyone = set(run.ranks) | set(outcome.exit_codes) | {s.rank for s in outcome.stacks}
    if run.meta.nnodes == 1:  # every rank of the job ran here: one without a file never started
        everyone |= set(range(run.world_size))
    if not everyone:
        # Several nodes, and no rank of any wrote a line, left a stack or an exit code (they
        # hung before their first record: a hung shared filesystem, an import that never
        # returns): the launched world is every rank there is.
        everyone = set(range(run.world_size))
    if not everyone:
        return Incomplete("the job stalled before any rank recorded anything, and its world size is unknown")
    everyone = sorted(everyone)
    views = rank_stacks(run)
    groups = [_from_stacks(run, ranks, view) for ranks, view in group_stacks(views).groups]
    groups += _from_records(run, [r for r in everyone if r not in views])
    if not groups:
        groups = [StandGroup(everyone, "left no telemetry", None, False, [])]
    # The odd group: the fewest ranks; between equals, ranks not waiting in a collective (the
    # others wait for them), then ranks that entered a collective the others skipped (DDP502's
    # reading of the sequences), then the group without rank 0.
    entered = [sorted(d.entered.ranks) for d in divergences(run) if d.kind == SKIPPED]
    odd = min(groups, key=lambda g: (len(g.ranks), g.waiting, sorted(g.ranks) not in entered,
                                     0 in g.ranks, g.ranks[0]))

    if outcome.status == "timeout":
        head = (f"the probe's overall timeout ({seconds(run.meta.timeout_s)}) expired after "
                f"{seconds(outcome.wall_s)} without the job finishing")
    elif outcome.stall_s is not None:
        limit = outcome.stall_timeout_s if outcome.stall_timeout_s is not None else run.meta.stall_timeout_s
        head = f"no rank advanced for {seconds(outcome.stall_s)} (stall timeout {seconds(limit)})"
    else:
        head = "the watchdog saw no rank advance"
    hosts = _hosts(run)
    large = len(everyone) > LARGE_WORLD
    if len(groups) == 1 and len(everyone) > 1:
        clauses = [f"{_ranks(groups[0].ranks, large)} all {groups[0].where}"]
    else:
        clauses = [f"{_ranks(g.ranks, large)}{on_hosts(hosts, g.ranks, large)} {g.where}"
                   for g in sorted(groups, key=lambda g: g.ranks[0])]
        if large and len(clauses) > MAX_GROUPS:  # one screen: the first places, then a count
            rest = sorted(groups, key=lambda g: g.ranks[0])[MAX_GROUPS:]
            clauses = clauses[:MAX_GROUPS] + [f"{sum(len(g.ranks) for g in rest):,} more ranks in "
                                              f"{len(rest)} other places (see the detail)"]
    message = f"{head}; " + ", ".join(clauses)
    steps = {r: run.ranks[r].steps for r in everyone if r in run.ranks}
    if len(set(steps.values())) > 1:
        message += "; steps done: " + (_steps_by_group(steps) if large else
                                       ", ".join(f"rank {r} → {n}" for r, n in steps.items()))
    how = sorted({v.method for v in views.values()})
    note = f": {outcome.stack_note}" if outcome.stack_note else ""
    if not views:
        message += f" (no stacks were captured{note}; from the last records)"
    elif "faulthandler" in how and "py-spy" not in how:
        message += f" (stacks from faulthandler dumps{note})"

    per_rank = {str(r): _last_records(run, r) for r in everyone}
    hint, severity = stall_hint(groups, odd, "a rank outside this job", stall_timeout=True), None
    caused = sorted((e for e in crash_events(run).values() if e.waited_in is not None and not e.after_end),
                    key=lambda e: (e.t or 0.0, e.rank))
    skips = skipped_backwards(run)
    workers = blocking_workers(run)
    worker_location = None
    if caused:
        # Cause before consequence: the rank's error (DDP504) is why it waited; the stall is
        # what followed, shown as such and not as a second error.
        first = caused[0]
        message = (f"a consequence of rank {first.rank}'s {first.name} (DDP504), whose cleanup "
                   f"waited in {first.waited_in.op}{at(first.waited_in.site)}: " + message)
        hint, severity = f"fix rank {first.rank}'s {first.name} first (DDP504)", Severity.INFO
    elif workers:
        # Cause before consequence: the rank waits for a worker that blocks in the user's code;
        # the worker's frame is where the hang is, not the collective its peers wait in.
        rank, worker = sorted(workers.items())[0]
        message += (f"; rank {rank} waits for a batch from its DataLoader worker, which "
                    f"{worker.place()} (worker stack: {worker.lines(8)})")
        hint = (f"rank {rank}'s DataLoader worker never returns its batch: it {worker.place()}. "
                "Fix what it waits on there (a lock, a queue, a network or file read), or pass "
                "DataLoader(timeout=...) so a stuck worker raises instead of hanging the job")
        worker_location = worker.location
    elif skips:
        skip = skips[0]
        message = (f"a consequence of rank {skip.rank}'s skipped backward at step {skip.forward.step} "
                   "(DDP502): " + message)
        hint, severity = f"fix rank {skip.rank}'s rank-local skip first (DDP502)", Severity.INFO
    return [frameworks.worded("DDP503", Problem(
        message=message,
        hint=hint,
        severity=severity,
        ranks=odd.ranks if len(groups) > 1 and len(odd.ranks) < len(everyone) / 2 else everyone,
        hosts=sorted({hosts[r] for r in odd.ranks if r in hosts}) if len(groups) > 1 else [],
        location=worker_location or odd.location,
        evidence={
            "status": outcome.status,
            "blocking_workers": {str(r): w.lines() for r, w in workers.items()},
            "stall_s": outcome.stall_s,
            "stall_timeout_s": outcome.stall_timeout_s,
            "timeout_s": run.meta.timeout_s,
            "groups": [{"ranks": g.ranks, "where": g.where} for g in groups],
            "odd_ranks": odd.ranks,
            "per_rank": per_rank,
            "stack_method": "/".join(how) or "none",
            "stack_note": outcome.stack_note,
            "detail": _detail(run, groups, everyone, outcome.stack_note, per_rank),
        },
    ), run)]


def _hosts(run: RunModel) -> dict[int, str]:
    """Multi-node: the node each rank's stack was taken on ("node 1 (gpu-b)"), for naming the
    odd group out by host as well as by rank. Empty on one node, where it says nothing."""
    if run.meta.nnodes <= 1 or run.outcome is None:
        return {}
    return {s.rank: s.host for s in run.outcome.stacks if s.host}


def _ranks(ranks: list[int], large: bool) -> str:
    """rank_list, but in a large world a scattered set is its count and its first ranks."""
    if large and len(ranges(ranks).split(", ")) > SHOWN_PER_GROUP * 2:
        first = ", ".join(str(r) for r in sorted(ranks)[:SHOWN_PER_GROUP])
        return f"{len(ranks):,} ranks ({first}, …)"
    return rank_list(ranks)


def _steps_by_group(steps: dict[int, int]) -> str:
    """A large world's step counts: the ranks at each count, the odd ones out first."""
    by_count: dict[int, list[int]] = {}
    for rank, count in steps.items():
        by_count.setdefault(count, []).append(rank)
    ordered = sorted(by_count.items(), key=lambda item: (len(item[1]), item[1][0]))
    parts = [f"{_ranks(ranks, True)} → {count}" for count, ranks in ordered[:MAX_GROUPS]]
    rest = ordered[MAX_GROUPS:]
    if rest:
        parts.append(f"{sum(len(r) for _c, r in rest):,} more ranks at {len(rest)} other step counts")
    return ", ".join(parts)


def _from_stacks(run: RunModel, ranks: list[int], view: StackView) -> StandGroup:
    # A rank running its own Python is not waiting, whatever its records say (async collectives).
    waiting = view.idle is not False and (
        waits_in_collective(view)
        or (view.in_library and any(_in_collective_by_records(run, r) for r in ranks)))
    return StandGroup(ranks, view.place(plural=len(ranks) > 1),
                      view.location, waiting, [view.lines()])


def _in_collective_by_records(run: RunModel, rank: int) -> bool:
    rank_run = run.ranks.get(rank)
    if rank_run is None:
        return False
    record, returned = last_collective(rank_run)
    return record is not None and not returned


def _from_records(run: RunModel, ranks: list[int]) -> list[StandGroup]:
    """Ranks without a stack, grouped by what their last records say."""
    by_key: dict[tuple, tuple[list[int], Optional[tm.Collective]]] = {}
    for rank in ranks:
        rank_run = run.ranks.get(rank)
        record, returned = last_collective(rank_run) if rank_run else (None, False)
        if rank_run is None or not rank_run.records:
            key, pending = ("none",), None
        elif record is not None and not returned:
            key, pending = ("collective", record.op, record.seq, str(record.site)), record
        else:
            key, pending = ("steps", rank_run.steps), None
        by_key.setdefault(key, ([], pending))[0].append(rank)
    groups = []
    for key, (members, pending) in by_key.items():
        plural = len(members) > 1
        if key[0] == "none":
            groups.append(StandGroup(members, "left no telemetry", None, False, []))
        elif pending is not None:
            text = (f"{'wait' if plural else 'waits'} in {describe_collective(pending)}{at(pending.site)} "
                    "(last record; no stack)")
            groups.append(StandGroup(members, text, location(pending.site), True, []))
        else:
            text = f"{'were' if plural else 'was'} last seen at step {key[1]} (no stack)"
            groups.append(StandGroup(members, text, None, False, []))
    return groups


def _last_records(run: RunModel, rank: int) -> dict:
    rank_run = run.ranks.get(rank)
    if rank_run is None:
        return {"step": None, "last_collective": None}
    record, returned = last_collective(rank_run)
    return {
        "step": rank_run.steps,
        "last_collective": (f"{describe_collective(record)}{at(record.site)} (seq {record.seq} on "
                            f"{record.group})" if record else None),
        "returned": returned if record else None,
    }


def _detail(run: RunModel, groups: list[StandGroup], everyone: list[int], note: str,
            per_rank: dict[str, dict]) -> str:
    large = len(everyone) > LARGE_WORLD
    lines = []
    for group in sorted(groups, key=lambda g: g.ranks[0]):
        lines.append(detail_line(group, _ranks(group.ranks, True) if large else ""))
    rows = []  # rank, steps, what it last did, exit (none here): the Ranks table's summary groups them
    for rank in everyone:
        last = per_rank[str(rank)]
        if last["step"] is None:
            rows.append([rank, None, "no telemetry", ""])
        elif last["last_collective"] is None:
            rows.append([rank, last["step"], "no collective recorded", ""])
        else:
            state = "returned" if last["returned"] else "not returned"
            rows.append([rank, last["step"], f"last collective {last['last_collective']}, {state}", ""])
    for rank, step, what, _exit in summarised(rows, ["rank", "steps", "last", "exit"]) if large else rows:
        if rank == "…":  # "… 1,012 more ranks like rank 12 (step 29)"
            lines.append(f"… {what}" + (f" (step{'s' if '-' in str(step) else ''} {step})" if step != "" else ""))
        elif step is None:
            lines.append(f"rank {rank}: no telemetry")
        else:
            lines.append(f"rank {rank}: step {step}, {what}")
    if note:
        lines.append(f"stacks: {note}")
    return "\n".join(lines)


def _from_evidence(ev: Evidence):
    """A dead job whose ranks timed out and none left a cause: where each stopped, stated as
    found (a rank behind the others is named), or an honest incomplete with what to capture."""
    from ddpdoctor.postmortem.causality import verdict

    if ev.empty:
        return Incomplete("nothing in the evidence could be read as a rank's error, a timeout, an "
                          "NCCL line, a launcher summary or a Flight Recorder dump")
    waited = [e for e in ev.errors if e.collateral]
    if ev.stopped and not (verdict(ev).known or ev.timeouts or ev.pg_status or waited):
        # Ended from outside with no rank's error or timeout before: a hang the scheduler's limit
        # (or a person) ended before any collective timed out, or a job stopped while healthy.
        from ddpdoctor.postmortem.stopped import describe

        return Incomplete(f"{describe(ev)}; no rank left an error or a watchdog timeout before it, so "
                          "the log cannot say whether the ranks were stuck: a collective timeout shorter "
                          "than the time limit (init_process_group(timeout=...)), Flight Recorder dumps "
                          "(`ddpdoctor env`), or `ddpdoctor attach` while it runs would show where they stood")
    if verdict(ev).known or not (ev.timeouts or ev.pg_status or waited):
        return []
    if not (ev.timeouts or ev.pg_status):
        # gloo (or an older NCCL) says only that a rank waited in vain: whom for, the log does not say.
        ranks = sorted({e.rank for e in waited if e.rank is not None})
        quiet = sorted(r for r in ev.ranks if r not in ranks)
        return Incomplete(f"no rank left an error of its own: {rank_list(ranks) if ranks else 'a rank'} failed "
                          f"waiting for a peer ({waited[0].summary()[:160]})"
                          + (f", and {rank_list(quiet)} left no error: look at where "
                             f"{'it' if len(quiet) == 1 else 'they'} stood" if quiet else "")
                          + "; capture the cause next time: `ddpdoctor attach` while it hangs, Flight Recorder "
                            "dumps (`ddpdoctor env`), or `ddpdoctor probe` on the script")
    stopped: dict[int, int] = {}
    for w in ev.timeouts:
        if w.rank is not None:
            stopped[w.rank] = max(stopped.get(w.rank, -1), w.seq)
    for status in ev.pg_status:
        if status.rank is not None and status.rank not in stopped and status.last_completed is not None:
            stopped[status.rank] = status.last_completed + 1
    world = sorted(ev.ranks | set(stopped))
    silent = [r for r in range(max(world) + 1) if r not in ev.ranks and r not in stopped] if world else []
    # Flight Recorder is advice only where no dump was given: with dumps read, asking for them
    # again does not fit.
    dumps = ev.flight is not None and bool(ev.flight.dumps)
    capture = ("capture the cause next time: "
               + ("" if dumps else "Flight Recorder dumps (`ddpdoctor env` prints the settings), ")
               + "TORCH_NCCL_DESYNC_DEBUG=1, NCCL_DEBUG=WARN, or `ddpdoctor attach` while it hangs")
    listing = "/".join(str(stopped[r]) for r in sorted(stopped))
    if len(set(stopped.values())) > 1:
        low = min(stopped.values())
        behind = sorted(r for r, s in stopped.items() if s == low)
        message = (f"no rank left an error; ranks stopped at SeqNum {listing} "
                   f"({rank_list(sorted(stopped))}): {rank_list(behind)} {'is' if len(behind) == 1 else 'are'} behind")
        found = problem(ev, [w for w in ev.timeouts if w.rank in behind] or ev.pg_status[:5], message,
                        f"{rank_list(behind)} never reached the collective the others waited in: its own "
                        "log or stack shows where it stood; " + capture, role_="cause",
                        extra={"stopped_at": {str(r): s for r, s in stopped.items()}})
        found.ranks = behind
        return [found]
    if silent:
        return Incomplete(f"no rank left an error; {rank_list(sorted(stopped))} timed out at SeqNum {listing}, "
                          f"and {rank_list(silent)} left no line at all: its log is missing; {capture}")
    return Incomplete(f"no rank left an error and every rank that reported stopped at the same collective "
                      f"(SeqNum {listing}): the evidence does not show the first cause; {capture}")


def _from_attach(observation: Observation) -> list[Problem] | Incomplete:
    """A running job (`ddpdoctor attach`): hung when every rank waiting in a collective stayed in
    place with no read or write call over the window (attach/window.py), every rank's sampled
    stack grouped as the probe groups them."""
    win = window(observation)
    if win.phase == HUNG:
        return [_attach_stall(win)]
    if win.phase == PROGRESSING:
        why = win.unjudged()
        return Incomplete(why) if why else []
    return Incomplete(win.reason())


def _attach_stall(win: Window) -> Problem:
    observation = win.observation
    groups = win.groups()
    odd = win.odd(groups)
    everyone = sorted(r.rank for r in win.reads)
    hosts = win.hosts
    quiet = [r.quiet_s for r in win.reads if r.quiet_s is not None and r.waiting]
    span = (f"the last {seconds(min(quiet))} of the {win.span} sampled"
            if quiet and min(quiet) < observation.duration_s - 0.5 else f"the {win.span} sampled")
    head = (f"no rank advanced in {span} (the waiting ranks' stacks stayed in place and made no "
            "read or write system call)")
    if len(groups) == 1 and len(everyone) > 1:
        clauses = [f"{rank_list(groups[0].ranks)} all {groups[0].where}"]
    else:
        clauses = [f"{rank_list(g.ranks)}{on_hosts(hosts, g.ranks)} {g.where}"
                   for g in sorted(groups, key=lambda g: g.ranks[0])]
    blamed = odd.ranks if len(groups) > 1 and len(odd.ranks) < len(everyone) / 2 or (
        len(groups) == 2 and len(odd.ranks) == len(everyone) / 2) else everyone
    return Problem(
        message=f"{head}; " + ", ".join(clauses),
        # attach has no stall timeout to raise: it judged ranks that did not advance while it looked.
        hint=stall_hint(groups, odd, "a rank outside this machine (attach to every node: --nodes)",
                        stall_timeout=False),
        ranks=blamed,
        hosts=sorted({hosts[r] for r in odd.ranks if r in hosts}) if len(groups) > 1 else [],
        location=odd.location,
        evidence={
            "status": "hung",
            "window_s": observation.duration_s,
            "groups": [{"ranks": g.ranks, "where": g.where} for g in groups],
            "odd_ranks": odd.ranks,
            "per_rank": {str(r.rank): r.evidence() for r in win.reads},
            "stack_method": "py-spy record",
            "detail": "\n".join(detail_line(g) for g in sorted(groups, key=lambda g: g.ranks[0])),
        },
    )
