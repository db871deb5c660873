"""The names of everything in a probe's run dir, in one place: the ranks write them (inrank/),
the launcher watches them (launch/), node 0 receives other nodes' copies of them
(launch/node_gather.py), the analysis reads them (run_model/loaded_run.py); the types written
into them are in run_model/, and probe/records/rank_files.py is the one reader of the rank files.

    probe.json        what was launched and with which limits (written before launch)
    rank-<R>.jsonl    rank R's telemetry (telemetry.py), one JSON record per line
    rank-<R>.stack    faulthandler text rank R wrote on a fatal signal, SIGTERM or SIGUSR1
    pid-<PID>.stack   the same, for a process whose rank is not known yet (mp.spawn)
    main.jsonl        the script's own process under --launcher none, when it is no rank
    main.stack        its faulthandler text
    outcome.json      how the job ended: exit codes, the watchdog's stacks, the nodes (written last)
    job.log           the job's output, secrets replaced, bounded per rank (launch/joblog.py)
    report.json       the report (written by `probe` and `report`)
    scaling.json      the world sizes of `probe --scaling` (analysis/scaling.py)
    scaling/ws-<N>/   the run dir of world size N under --scaling (launch/scaling.py)
    verify.json       what `probe --verify-fix` reran and with which DDP arguments
    verify/<N>/       the run dir of its N-th rerun (launch/verify.py)
    ddp_overrides.json  the DDP arguments the probe sets in place of the script's (inrank/ddp.py)
    regression_baseline.json  the --baseline report's numbers (analysis/regression.py)
    torchrun/         torchrun's own --log-dir (PET_LOG_DIR), unless the user set one
    watch.jsonl       the watchdog's looks at the ranks in quiet spells: where each stood, busy
                      or blocked (launch/watchdog.py; the live view and the report read it)

Standard library only: code inside the user's ranks imports this.
"""

import os
import re
from typing import Optional

META_FILE = "probe.json"
OUTCOME_FILE = "outcome.json"
LOG_FILE = "job.log"
REPORT_FILE = "report.json"
SCALING_FILE = "scaling.json"
SCALING_DIR = "scaling"
VERIFY_FILE = "verify.json"
VERIFY_DIR = "verify"
DDP_OVERRIDES_FILE = "ddp_overrides.json"
BASELINE_FILE = "regression_baseline.json"
TORCHRUN_LOG_DIR = "torchrun"
WATCH_FILE = "watch.jsonl"
MAIN_TELEMETRY = "main.jsonl"
MAIN_STACK = "main.stack"
RANK_TELEMETRY_GLOB = "rank-*.jsonl"
# What one node may forward to node 0: its ranks' telemetry and signal dumps, nothing else.
# ASCII digits without a leading zero ("\d" and int() would take "rank-\u0660" for rank 0 and
# "rank-007" for rank 7), and \Z, not $ (which matches before a trailing newline).
RANK_FILE = re.compile(r"rank-(0|[1-9][0-9]{0,6})\.(jsonl|stack)\Z")


def rank_telemetry_name(rank: int) -> str:
    return f"rank-{rank}.jsonl"


def is_rank_telemetry(name: str) -> bool:
    """rank-3.jsonl: True; rank-3.stack, or a name that is no rank file: False."""
    match = RANK_FILE.match(name) if isinstance(name, str) else None
    return match is not None and match.group(2) == "jsonl"


def rank_stack_name(rank: int) -> str:
    return f"rank-{rank}.stack"


def pid_stack_name(pid: int) -> str:
    return f"pid-{pid}.stack"


def scaling_run_name(world_size: int) -> str:
    """The run dir of one world size of --scaling, relative to the run dir."""
    return f"{SCALING_DIR}/ws-{world_size}"


def verify_run_name(index: int) -> str:
    """The run dir of --verify-fix's index-th rerun, relative to the run dir."""
    return f"{VERIFY_DIR}/{index}"


def rank_of_name(name) -> Optional[int]:
    """rank-12.jsonl -> 12; None for anything else, a path included (a name another node sent:
    never int() on its raw text)."""
    match = RANK_FILE.match(name) if isinstance(name, str) else None
    return int(match.group(1)) if match else None


def rank_of(name: str) -> int:
    """rank-3.jsonl (or a path ending in it) -> 3; ValueError for any other name."""
    rank = rank_of_name(os.path.basename(str(name)))
    if rank is None:
        raise ValueError(f"not a rank file: {name}")
    return rank
