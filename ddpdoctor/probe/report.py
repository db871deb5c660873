"""Turn a loaded run into the probe's Report: checks, header, per-rank table, notes, numbers."""

from __future__ import annotations

from typing import Optional

from ddpdoctor.core.findings import Severity
from ddpdoctor.probe.analysis import coverage, frameworks, memory, outside_steps, perf_tables
from ddpdoctor.probe.analysis.rank_state import crash_events
from ddpdoctor.probe.records import telemetry as tm
from ddpdoctor.probe.words.large_world import summarised
from ddpdoctor.probe.run_model.outcome import MachineLoad
from ddpdoctor.probe.run_model.loaded_run import RankRun, RunModel
from ddpdoctor.core.registry import run_checks
from ddpdoctor.lint.merge import static_part
from ddpdoctor.report.model import Report, Table

OUTCOME_WORDS = {
    "completed": "completed",
    "crashed": "a rank crashed",
    "stalled": "stalled (ended by the watchdog)",
    "timeout": "hit --timeout (ended)",
    "timeout_busy": "hit --timeout while its ranks were busy, never blocked (ended)",
    "interrupted": "interrupted (ended)",
    "launch_failed": "could not be launched",
    "not_launched": "not launched: its rendezvous port was taken",
    "node_lost": "a node was lost (the job was ended)",
    "run_dir_failed": "ended: its records could no longer be stored",
}


# What a CPU-only torch says when a script reaches for CUDA or NCCL.
GPU_ONLY = ("NCCL built in", "not compiled with CUDA", "no attribute '_cuda_",
            "accelerator device when none is available", "No CUDA GPUs are available",
            "Found no NVIDIA driver")


def _needs_gpu(run: RankRun) -> bool:
    return run.crash is not None and any(marker in run.crash.message for marker in GPU_ONLY)


def _last_event(run: RankRun) -> str:
    if run.crash:
        site = f" at {run.crash.site}" if run.crash.site else ""
        return f"crashed: {run.crash.exc_type}{site}"
    end = run.last(tm.End)
    if end:
        return {"max_steps": "stopped at --max-steps", "script_exit": "script returned"}.get(end.reason, end.reason)
    done = {(d.group, d.seq) for d in run.of(tm.CollectiveDone)}
    for record in reversed(run.records):
        if isinstance(record, tm.Collective):
            if (record.group, record.seq) not in done:
                where = f" at {record.site}" if record.site else ""
                return f"waiting in {record.op} #{record.seq}{where}"
            break
    if not run.formed and run.first(tm.InitEnter):
        return "waiting in init_process_group"
    return "running"


def node_of_rank(model: RunModel) -> dict[int, int]:
    """Multi-node: which node each rank ran on (node 0's ranks are those no other node sent)."""
    nodes = model.outcome.nodes if model.outcome else []
    found = {rank: node["node_rank"] for node in nodes[1:] for rank in node.get("ranks", [])}
    return {rank: found.get(rank, 0) for rank in model.rank_ids()} if nodes else {}


def rank_table(model: RunModel) -> Table:
    rows = []
    codes = model.outcome.exit_codes if model.outcome else {}
    nodes = node_of_rank(model)
    for rank in model.rank_ids():
        run = model.ranks[rank]
        start = run.first(tm.Start)
        exit_code = codes.get(rank)
        rows.append([
            rank, *([nodes.get(rank, "?")] if nodes else []), start.host if start else "?",
            start.pid if start else "?", run.steps,
            len(run.of(tm.Batch)), len(run.of(tm.Collective)), _last_event(run),
            "" if exit_code is None else exit_code,
        ])
    columns = ["rank", *(["node"] if nodes else []), "host", "pid", "steps", "batches", "collectives",
               "last", "exit"]
    return Table("Ranks", columns, summarised(rows, columns))


UNAUTHENTICATED = ("this verdict relied on an unauthenticated gather port: any machine that could reach "
                   "it could have posed as a node; give every node the same --gather-token (or "
                   "$DDPDOCTOR_GATHER_TOKEN) to authenticate it")


def gather_notes(model: RunModel) -> list[str]:
    """Multi-node: what the verdict relied on (node 0's entry in outcome.nodes, node_gather.py)."""
    nodes = model.outcome.nodes if model.outcome else []
    if not nodes:
        return []
    here = nodes[0]
    notes = [] if here.get("authenticated", True) else [UNAUTHENTICATED]
    return notes + [str(line) for line in (here.get("refusals") or [])[:10]]


def _loaded(load: Optional[MachineLoad]) -> bool:
    """Whether other work took enough of the machine to be said: a quarter of a core and a
    tenth of the machine: less is what a quiet machine's own daemons take."""
    return load is not None and load.other_cores >= max(0.25, 0.1 * load.cpus)


def missing_nodes(model: RunModel) -> list[str]:
    """Multi-node: the nodes whose telemetry stopped or never came, said as what the verdict lacks."""
    reasons = []
    for node in (model.outcome.nodes if model.outcome else [])[1:]:
        label = f"node {node['node_rank']} ({node.get('host', '?')})"
        if node.get("status") == "never_connected":
            reasons.append(f"{label} never reported: none of its ranks were seen")
        elif node.get("status") == "refused":
            reasons.append(f"{label} was refused by node 0 ({node.get('reason') or 'not one of this job'}): "
                           f"none of its ranks were judged")
        elif node.get("status") == "lost":
            reasons.append(f"{label} stopped reporting after step {node.get('last_step', 0)} "
                           f"({node.get('reason') or 'lost'}): its later records are missing")
    return reasons


def judged_on_training(model: RunModel, incomplete: list[str], notes: list[str]) -> str:
    """A job that never trained cannot pass: every check would find nothing to judge.

    A rank that returned (or ended without a crash) with no optimizer step, no DataLoader batch
    and no DDP backward (its only collectives, if any, setup ones) makes the verdict incomplete:
    the reason, each rank's last lines of output and the hint that fits are appended to
    `incomplete`; the headline's suffix is returned. A crash, a stall or a timeout is left to the
    checks that explain it (DDP503-505). A script that trained fewer steps than the budget and
    returned is judged on what ran, and a note says how many.
    """
    outcome, meta = model.outcome, model.meta
    if outcome is None or outcome.status not in ("completed", "crashed"):
        return ""
    if outcome.status == "crashed" and any(not e.collateral for e in crash_events(model).values()):
        # A rank's own crash is why the others never trained (they waited for it): DDP504/505
        # say so, with that rank's traceback; "it never trained" and a --cpu hint would bury it
        # (a one-GPU H100 run of two ranks: 'invalid device ordinal' on rank 1).
        return ""
    if not model.ranks:
        if outcome.status != "completed":
            return ""
        incomplete.append("no rank started: the script ended without calling init_process_group, "
                          "so nothing was trained or judged")
        return "; INCOMPLETE: no rank started"
    idle: dict[int, RankRun] = {}
    for rank, run in model.ranks.items():
        end = run.last(tm.End)
        if run.crash is not None or run.steps or run.of(tm.Batch) or run.of(tm.Grads):
            continue
        if (end is not None and end.reason == "script_exit") or (end is None and not run.of(tm.Collective)):
            idle[rank] = run
    if not idle:
        trained = [r.steps for r in model.ranks.values() if r.last(tm.End) and r.last(tm.End).reason == "script_exit"]
        if trained and meta.max_steps and max(trained) < meta.max_steps:
            notes.append(f"the script returned after {max(trained)} of the {meta.max_steps} steps the "
                         "probe allowed: judged on those")
        return ""
    collectives = max(len(run.of(tm.Collective)) for run in idle.values())
    did = "returned" if all(run.last(tm.End) for run in idle.values()) else "ended"
    ranks = sorted(idle)
    who = f"ranks {', '.join(map(str, ranks))}" if len(ranks) > 1 else f"rank {ranks[0]}"
    if len(ranks) == len(model.ranks) and len(ranks) > 1:
        who = f"every rank ({', '.join(map(str, ranks))})"
    incomplete.append(
        f"the script never trained: {who} {did} after 0 optimizer steps, 0 DataLoader batches "
        f"and {collectives} collective{'' if collectives == 1 else 's'} (the probe allowed "
        f"{meta.max_steps or 'unlimited'} steps), so no check had a training step to judge")
    tails: dict[tuple, list[int]] = {}
    for rank, run in sorted(idle.items()):
        tail = run.last(tm.OutputTail)
        tails.setdefault(tuple(tail.lines[-3:]) if tail else (), []).append(rank)
    for lines, by in tails.items():
        name = f"ranks {', '.join(map(str, by))}" if len(by) > 1 else f"rank {by[0]}"
        incomplete.append(f"{name} printed last: " + (" / ".join(lines) if lines else "(nothing)"))
    asked: dict[str, tm.DeviceQuery] = {}
    for run in idle.values():
        for query in run.of(tm.DeviceQuery):
            asked.setdefault(query.call, query)
    if meta.cpu and asked:
        told = ", ".join(f"{q.call} -> {q.answer}" for q in asked.values())
        site = next((q.site for q in asked.values() if q.site), None)
        incomplete.append(
            f"hint: under --cpu the script was told {told}{f' (first at {site})' if site else ''}; "
            "if it still decided it had no GPU, it asked something --cpu does not answer "
            "(torch.version.cuda, torch.backends.cudnn, nvidia-smi, CUDA_VISIBLE_DEVICES): its last "
            "lines above say which")
    elif meta.cpu:
        incomplete.append(
            "hint: under --cpu the script asked no torch.cuda or torch.accelerator question, so it "
            "stopped for another reason: its arguments (0 epochs, a missing data path), or a device "
            "check --cpu does not answer (torch.version.cuda, torch.backends.cudnn, nvidia-smi)")
    else:
        incomplete.append(
            "hint: if the script stopped because it found no GPU, "
            f"`ddpdoctor probe --cpu {meta.script}` makes torch.cuda and torch.accelerator answer "
            "as if each local rank had one (gloo on the CPU); otherwise check its arguments so "
            "that it reaches its training loop")
    return f"; INCOMPLETE: the script never trained ({who} {did} without a step)"


def add_reach(model: RunModel, notes: list[str], metrics: dict, tables: list[Table]) -> None:
    """What the probe reached: boundary paths (epoch end, evaluation, checkpoints) and the lines
    of the script that ran (analysis/boundaries.py, analysis/coverage.py). Never fails a report."""
    try:
        more_notes, more_metrics, more_tables = coverage.report_parts(model)
    except Exception as exc:  # noqa: BLE001 - a report without coverage beats no report
        notes.append(f"ddpdoctor bug: boundary and coverage summary failed ({exc!r})")
        return
    notes.extend(more_notes)
    metrics.update(more_metrics)
    tables.extend(more_tables)


def build_report(model: RunModel, fail_on: Severity, ignore: set[str], lint: bool = False) -> Report:
    """The probe's Report, built once from the run and every input: the probe's checks (each
    finding already in the framework's words, analysis/frameworks.py) and, with `lint`, the
    static DDP8xx checks of the same script merged with them (lint/merge.py)."""
    results = run_checks("probe", model, ignore)
    framework = frameworks.detect(model)
    static = static_part(results, model.meta.script, model.meta.module, ignore) if lint else None
    meta, outcome = model.meta, model.outcome
    state = OUTCOME_WORDS.get(outcome.status, outcome.status) if outcome else "outcome unknown"
    wall = f" in {outcome.wall_s:.1f} s" if outcome and outcome.status != "not_launched" else ""
    steps = max((r.steps for r in model.ranks.values()), default=0)
    header = (f"{meta.script} {' '.join(meta.args)}".rstrip()
              + f": {model.world_size} rank(s) on {meta.nnodes} node(s), {model.backend}"
              f"{' (--cpu)' if meta.cpu else ''}, "
              f"{'launched by the script, ' if meta.launcher == 'none' else ''}"
              f"{steps}/{meta.max_steps or '∞'} steps; {state}{wall}")
    notes = [meta.launcher_reason] if meta.launcher_reason and meta.launcher != "torchrun" else []
    if framework is not None:
        notes.append(framework.describe())
    if model.main is not None and model.main.crash is not None:
        notes.append(f"the script's main process ended with {model.main.crash.exc_type}: "
                     f"{model.main.crash.message.strip().splitlines()[0][:300] if model.main.crash.message.strip() else ''}")
    for rank, run in sorted(model.ranks.items()):
        dropped = run.contradicted_crash
        if dropped is not None:
            notes.append(f"rank {rank}: a crash record ({dropped.exc_type[:80]} at step {dropped.step}) is followed "
                         "by more of the rank's own steps or collectives: inconsistent (an injected or relayed "
                         "record), not believed")
    if outcome is None:
        notes.append("the probe was ended before it wrote outcome.json: judged from what the ranks recorded")
    elif outcome.stack_note:
        notes.append(outcome.stack_note)
    seen = set()
    for run in model.ranks.values():
        for note in run.of(tm.Note):
            if note.text not in seen:
                seen.add(note.text)
                # A --cpu remap is the script's, not one rank's: every rank hits it alike.
                notes.append(note.text if note.text.startswith("--cpu: ") else f"rank {run.rank}: {note.text}")
    if not meta.cpu and any(_needs_gpu(run) for run in model.ranks.values()):
        notes.append("the script needs CUDA or NCCL, which this machine lacks: "
                     f"`ddpdoctor probe --cpu {meta.script}` runs it on the CPU with gloo, unchanged")
    missing = sorted(set(range(model.world_size)) - set(model.ranks))
    incomplete = missing_nodes(model)
    if missing and meta.nnodes == 1 and not (outcome and outcome.status == "not_launched"):
        notes.append(f"no telemetry from rank(s) {', '.join(map(str, missing))}: they had not started the bootstrap when the job ended")
    elif missing and not incomplete and model.outcome is not None:
        incomplete.append(f"no telemetry from rank(s) {', '.join(map(str, missing))} of {model.world_size}")
    if outcome and outcome.leftover_pids:
        notes.append(f"ended {len(outcome.leftover_pids)} process(es) the job left running")
    notes.extend(gather_notes(model))
    header += judged_on_training(model, incomplete, notes)
    notes.extend(outside_steps.notes(model))  # start-up and pauses, where they were spent
    load = outcome.machine_load if outcome else None
    if _loaded(load):
        # The timing checks' caveat only where they had steps to time.
        timed = any(run.steps for run in model.ranks.values())
        notes.append(f"other processes kept {load.other_cores:.1f} of this machine's {load.cpus} "
                     f"CPUs busy while the job ran (the job itself {load.job_cores:.1f})"
                     + (": the timing checks (DDP601-605) measured under that load, and their "
                        "medians move with it from run to run" if timed else ""))
    metrics = {
        "wall_s": round(outcome.wall_s, 3) if outcome else None,
        "outcome": outcome.status if outcome else None,
        "steps": steps,
        "world_size": model.world_size,
        "launcher": meta.launcher,
        "stall_timeout_s": outcome.stall_timeout_s if outcome else None,
        **perf_tables.metrics(model),
        **outside_steps.metrics(model),
        "framework": framework.to_dict() if framework is not None else None,
        "machine_load": None if load is None else load.to_dict(),
    }
    tables = ([rank_table(model)] if model.ranks else []) + perf_tables.tables(model)
    memory.add_to_report(model, metrics, tables)
    add_reach(model, notes, metrics, tables)
    if static is not None:  # DDP8xx of the same script, merged with the probe's findings
        results = results + static.results
        notes.extend(static.notes)
        if static.metrics is not None:
            metrics["lint"] = static.metrics
    tool_error = None
    if outcome and outcome.status == "launch_failed":
        tool_error = outcome.log_tail or "the launcher could not start"
    elif outcome and outcome.status == "run_dir_failed":
        tool_error = outcome.stack_note
    return Report(command="probe", results=results, fail_on=fail_on, header=header,
                  metrics=metrics,
                  tables=tables,
                  notes=notes, run_dir=model.run_dir, tool_error=tool_error,
                  interrupted_by=outcome.signal if outcome and outcome.status == "interrupted" else None,
                  incomplete_because=incomplete)
