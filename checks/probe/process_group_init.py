"""DDP505: the process group never formed (world size, rank, rendezvous)."""

from __future__ import annotations

from typing import Optional

from ddpdoctor.core.findings import Problem, Severity
from ddpdoctor.probe.records import telemetry as tm
from ddpdoctor.probe.run_model.loaded_run import RunModel
from ddpdoctor.core.registry import Skipped, check

from ddpdoctor.probe.analysis.rank_state import CrashEvent, crash_events, ending
from ddpdoctor.probe.words.wording import at, location, rank_list, verb
from ddpdoctor.postmortem.causality import none_found, who, grouped, problem, when
from ddpdoctor.postmortem.evidence import Evidence


@check("DDP505", "The process group never formed", Severity.ERROR, stages=("evidence",))
def process_group_init(run: RunModel) -> list[Problem] | Skipped:
    """
    What it detects:
        init_process_group did not return on any rank (no rank recorded a formed group), or
        every rank formed a group of a different size than the probe launched (a hard-coded
        world_size=1: each rank trains alone). The finding gives the reasons it can see:

        - the world_size or rank the script passes differs from what the probe launched
          ("the script passes world_size=4 at train.py:20 but the probe launched 2
          processes"), or two ranks pass the same rank;
        - ranks pass different init_method or backend values;
        - a rank crashed inside init_process_group (its error and traceback);
        - some ranks never called init_process_group, or left no telemetry at all (a rank
          that crashed before it, and nothing else wrong, is DDP504's one finding, which names
          the ranks it left waiting in init_process_group);
        - else: the ranks entered it and waited (a rendezvous address nobody can reach).

        A script that never calls init_process_group in a run that ended by itself is not
        judged; one that stalled before any rank got there is reported.

    Why it hurts:
        init_process_group waits for world_size ranks to join at the rendezvous address. If
        fewer come, or they look for each other at different addresses, every rank waits until
        the timeout (30 minutes by default) and then fails with a rendezvous error that does
        not say which argument was wrong.

    How to fix:
        Let the launcher set the world: with torchrun, pass neither world_size nor rank and
        use the env:// rendezvous it prepares:

            dist.init_process_group(backend="nccl")      # reads RANK, WORLD_SIZE, MASTER_ADDR/PORT
            # not: dist.init_process_group("nccl", world_size=4, rank=0)

        If MASTER_ADDR/MASTER_PORT are unreachable, `ddpdoctor preflight` says which node
        cannot reach which.
    """
    if isinstance(run, Evidence):
        return _from_evidence(run)
    if not any(rank_run.records for rank_run in run.ranks.values()):
        return Skipped("no rank recorded telemetry")
    launched = run.meta.world_size
    entered = {r: rr.first(tm.InitEnter) for r, rr in run.ranks.items() if rr.first(tm.InitEnter)}
    formed = {r: rr.first(tm.Init) for r, rr in run.ranks.items() if rr.formed}
    if formed:
        sizes = {i.world_size for i in formed.values()}
        if sizes == {launched} or launched in sizes:
            return []
        return [_wrong_size(run, entered, formed, launched)]
    if any(rank_run.of(tm.Collective) for rank_run in run.ranks.values()):
        return []  # collectives ran, so a group did form: its Init records were lost
    status = run.outcome.status if run.outcome is not None else None
    if not entered and status not in ("stalled", "timeout"):
        return Skipped("the script never called init_process_group")
    never_formed = _never_formed(run, entered, launched, status)
    return [never_formed] if never_formed is not None else []


def _wrong_size(run: RunModel, entered: dict, formed: dict, launched: int) -> Problem:
    sizes = sorted({i.world_size for i in formed.values()})
    passed = {e.world_size for e in entered.values() if e.world_size is not None}
    site = next((e.site for e in entered.values() if e.site), None)
    how = (f"the script passes world_size={sorted(passed)[0]}{at(site)}" if passed
           else f"the script's group has world_size={sizes[0]}")
    return Problem(
        message=(f"{rank_list(sorted(formed))} formed process groups of world_size="
                 f"{'/'.join(map(str, sizes))} but the probe launched {launched} processes: {how}, "
                 "so the ranks do not train together"),
        hint=_SIZE_HINT,
        ranks=sorted(formed),
        location=location(site),
        evidence={"launched_world_size": launched, "formed_world_sizes": sizes,
                  "passed": _passed(entered)},
    )


def _never_formed(run: RunModel, entered: dict[int, tm.InitEnter], launched: int,
                  status: Optional[str]) -> Optional[Problem]:
    """None when a crash before init_process_group is the whole story: DDP504 reports it, saying
    which ranks it left waiting in init_process_group (one cause, one finding)."""
    reasons: list[str] = []
    site = next((e.site for e in entered.values() if e.site), None)
    odd_site = None

    wrong_size = {r: e for r, e in entered.items() if e.world_size is not None and e.world_size != launched}
    if wrong_size:
        by_size: dict[int, list[int]] = {}
        for rank, e in sorted(wrong_size.items()):
            by_size.setdefault(e.world_size, []).append(rank)
        first = next(iter(wrong_size.values()))
        odd_site = odd_site or first.site
        said = ", ".join(f"world_size={size}" + ("" if len(by_size) == 1 else f" ({rank_list(ranks)})")
                         for size, ranks in by_size.items())
        reasons.append(f"the script passes {said}{at(first.site)} but the probe launched "
                       f"{launched} processes")

    passed_ranks: dict[int, list[int]] = {}
    for rank, e in sorted(entered.items()):
        if e.rank is not None:
            passed_ranks.setdefault(e.rank, []).append(rank)
    clashes = {value: ranks for value, ranks in passed_ranks.items() if len(ranks) > 1}
    for value, ranks in clashes.items():
        odd_site = odd_site or entered[ranks[0]].site
        reasons.append(f"{rank_list(ranks)} all pass rank={value}{at(entered[ranks[0]].site)}")
    out_of_range = sorted(r for r, e in entered.items() if e.rank is not None
                          and not 0 <= e.rank < (e.world_size or launched))
    if out_of_range:
        odd_site = odd_site or entered[out_of_range[0]].site
        reasons.append(f"{rank_list(out_of_range)} pass a rank outside 0..world_size-1 "
                       f"({', '.join(f'rank={entered[r].rank}' for r in out_of_range)})")

    passed = {"init_method": {rank: e.init_method for rank, e in entered.items()},
              "backend": {rank: e.backend for rank, e in entered.items()}}
    for attribute, by_rank in passed.items():
        values: dict[str, list[int]] = {}
        for rank, value in sorted(by_rank.items()):
            values.setdefault(str(value), []).append(rank)
        if len(values) > 1:
            odd = min(values.values(), key=len)
            odd_site = odd_site or entered[odd[0]].site
            reasons.append(f"the ranks pass different {attribute} values: " + ", ".join(
                f"{rank_list(ranks)} {value!r}" for value, ranks in values.items()))

    events = crash_events(run)
    crashes = {r: e for r, e in events.items() if r in entered}
    for rank, event in sorted(crashes.items()):
        crash = run.ranks[rank].crash
        odd_site = odd_site or (crash.site if crash else None)
        reasons.append(f"rank {rank} failed inside init_process_group: {event.summary()}")

    never = sorted(r for r in run.ranks if r not in entered)
    own_crashes = {r for r, e in events.items() if not e.collateral}  # (collateral: after the end too)
    crashed_first = bool(never) and bool(entered) and set(never) <= own_crashes and not reasons
    if never and entered:
        texts: dict[str, list[int]] = {}
        for rank in never:
            texts.setdefault(ending(run, rank), []).append(rank)
        reasons.append(f"{rank_list(never)} never called init_process_group (" + "; ".join(
            f"{rank_list(ranks)} {text}" for text, ranks in texts.items()) + ")")
    missing = sorted(set(range(launched)) - set(run.ranks))
    if missing:
        reasons.append(f"{rank_list(missing)} left no telemetry (never started)")

    if crashed_first and not missing:
        return None
    if not entered:
        head = (f"no rank reached init_process_group before the run "
                f"{'stalled' if status == 'stalled' else 'hit the overall timeout'}")
        where = {ending(run, r) for r in run.ranks}
        if len(where) == 1:
            head += f" (every rank {where.pop()})"
    else:
        waiting = sorted(r for r in entered if r not in crashes)
        head = (f"the process group never formed: {rank_list(sorted(entered))} entered "
                f"init_process_group{at(site)}")
        if waiting:
            head += (f" and {rank_list(waiting)} {verb(waiting, 'was', 'were')} still waiting when "
                     "the run ended")
    if entered and not reasons:
        method = next(iter(entered.values())).init_method
        reasons.append(f"every rank passed the same arguments; the rendezvous at "
                       f"{method or 'MASTER_ADDR:MASTER_PORT'} never completed (unreachable address or "
                       "port, or a firewall)")
    message = head + ("; " + "; ".join(reasons) if reasons else "")
    ranks = sorted(set(run.ranks) | set(missing))
    detail = "\n".join(_traceback(run, r, e) for r, e in sorted(crashes.items())).strip()
    evidence = {"launched_world_size": launched, "passed": _passed(entered),
                "entered": sorted(entered), "never_entered": never, "missing": missing,
                "crashed_inside_init": sorted(crashes), "status": status}
    if detail:
        evidence["detail"] = detail
    return Problem(message=message, hint=_SIZE_HINT if (wrong_size or clashes or out_of_range) else _HINT,
                   ranks=ranks, location=location(odd_site or site), evidence=evidence)


def _traceback(run: RunModel, rank: int, event: CrashEvent) -> str:
    if event.traceback:
        return f"rank {rank}:\n{event.traceback.strip()}"
    return f"rank {rank}: {event.summary()}"


def _passed(entered: dict[int, tm.InitEnter]) -> dict[str, dict]:
    return {str(r): {"backend": e.backend, "init_method": e.init_method, "world_size": e.world_size,
                     "rank": e.rank, "site": str(e.site) if e.site else None}
            for r, e in sorted(entered.items())}


_SIZE_HINT = ("let torchrun set the world: call dist.init_process_group(backend) without world_size "
              "and rank (env:// reads WORLD_SIZE and RANK), or pass int(os.environ['WORLD_SIZE']) "
              "and int(os.environ['RANK'])")
_HINT = ("make every rank call dist.init_process_group with the same backend and init_method, and "
         "check that MASTER_ADDR:MASTER_PORT is reachable from every node (`ddpdoctor preflight`)")


def _from_evidence(ev: Evidence) -> list[Problem] | Skipped:
    """A dead job's logs: a rank (or torchrun) that failed to form the process group: client
    socket timeout, DistNetworkError, no socket interface, no route to host, rendezvous errors."""
    facts = [e for e in ev.errors if e.kind == "rendezvous"]
    if not facts:
        return none_found(ev)
    problems = []
    for group in grouped(facts):
        who_ = who(group, "torchrun")
        problems.append(problem(ev, group, f"{who_} could not form the process group{when(group)}: {group[0].summary()}",
                                "check MASTER_ADDR/MASTER_PORT (or --rdzv-endpoint) reach the master from "
                                "every node, that every node starts, and the socket interface "
                                "(GLOO_SOCKET_IFNAME / NCCL_SOCKET_IFNAME): `ddpdoctor preflight` checks these",
                                extra={"detail": group[0].traceback}))
    return problems
