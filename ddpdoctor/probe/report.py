"""Turn a loaded run into the probe's Report: checks, header, per-rank table, notes, numbers."""

from __future__ import annotations

from ddpdoctor.core.findings import Severity
from ddpdoctor.probe.analysis import perf_tables
from ddpdoctor.probe import telemetry as tm
from ddpdoctor.probe.analysis.runmodel import RankRun, RunModel
from ddpdoctor.core.registry import run_checks
from ddpdoctor.report.model import Report, Table

OUTCOME_WORDS = {
    "completed": "completed",
    "crashed": "a rank crashed",
    "stalled": "stalled (ended by the watchdog)",
    "timeout": "hit --timeout (ended)",
    "interrupted": "interrupted (ended)",
    "launch_failed": "could not be launched",
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


def rank_table(model: RunModel) -> Table:
    rows = []
    codes = model.outcome.exit_codes if model.outcome else {}
    for rank in model.rank_ids():
        run = model.ranks[rank]
        start = run.first(tm.Start)
        exit_code = codes.get(rank)
        rows.append([
            rank, start.host if start else "?", start.pid if start else "?", run.steps,
            len(run.of(tm.Batch)), len(run.of(tm.Collective)), _last_event(run),
            "" if exit_code is None else exit_code,
        ])
    return Table("Ranks", ["rank", "host", "pid", "steps", "batches", "collectives", "last", "exit"], rows)


def build_report(model: RunModel, fail_on: Severity, ignore: set[str]) -> Report:
    results = run_checks("probe", model, ignore)
    meta, outcome = model.meta, model.outcome
    state = OUTCOME_WORDS.get(outcome.status, outcome.status) if outcome else "outcome unknown"
    wall = f" in {outcome.wall_s:.1f} s" if outcome else ""
    steps = max((r.steps for r in model.ranks.values()), default=0)
    header = (f"{meta.script} {' '.join(meta.args)}".rstrip()
              + f": {model.world_size} rank(s) on {meta.nnodes} node(s), {meta.backend}"
              f"{' (--cpu)' if meta.cpu else ''}, "
              f"{'launched by the script, ' if meta.launcher == 'none' else ''}"
              f"{steps}/{meta.max_steps or '∞'} steps; {state}{wall}")
    notes = [meta.launcher_reason] if meta.launcher_reason and meta.launcher != "torchrun" else []
    if model.main is not None and model.main.crash is not None:
        notes.append(f"the script's main process ended with {model.main.crash.exc_type}: "
                     f"{model.main.crash.message.strip().splitlines()[0][:300] if model.main.crash.message.strip() else ''}")
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
    missing = sorted(set(range(model.world_size)) - set(model.ranks)) if meta.nnodes == 1 else []
    if missing:
        notes.append(f"no telemetry from rank(s) {', '.join(map(str, missing))}: they never started the bootstrap")
    if outcome and outcome.leftover_pids:
        notes.append(f"ended {len(outcome.leftover_pids)} process(es) the job left running")
    metrics = {
        "wall_s": round(outcome.wall_s, 3) if outcome else None,
        "outcome": outcome.status if outcome else None,
        "steps": steps,
        "world_size": model.world_size,
        "launcher": meta.launcher,
        "stall_timeout_s": outcome.stall_timeout_s if outcome else None,
        **perf_tables.metrics(model),
    }
    tool_error = None
    if outcome and outcome.status == "launch_failed":
        tool_error = outcome.log_tail or "the launcher could not start"
    return Report(command="probe", results=results, fail_on=fail_on, header=header,
                  metrics=metrics,
                  tables=([rank_table(model)] if model.ranks else []) + perf_tables.tables(model),
                  notes=notes, run_dir=model.run_dir, tool_error=tool_error,
                  interrupted_by=outcome.signal if outcome and outcome.status == "interrupted" else None)
