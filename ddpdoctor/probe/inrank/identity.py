"""Giving a rank its identity once it is known: the Start record and its own telemetry file.

A rank launched by torchrun knows its rank from the environment; one started by mp.spawn or a
framework's own launcher learns it only in init_process_group, which calls become_rank.
"""

from __future__ import annotations

import json
import os
import socket
import sys
import time

from ddpdoctor.probe.records import rundir

ENV_TARGET = "DDPDOCTOR_TARGET"  # what the root ran, for the Start records of spawned ranks


def start_record(rank: int, local_rank: int, world_size: int, launcher: str):
    import torch

    from ddpdoctor.core.paths import OWN_DIR
    from ddpdoctor.probe.records import telemetry as tm

    target = json.loads(os.environ.get(ENV_TARGET, '["?", []]'))
    return tm.Start(time.time(), rank, local_rank, world_size, os.getpid(), socket.gethostname(),
                    target[0], target[1], sys.version.split()[0], torch.__version__, launcher,
                    OWN_DIR.rstrip(os.sep))


def become_rank(rank: int, world_size: int) -> None:
    """Called by init_process_group in a process whose rank was not known before."""
    from ddpdoctor.probe.inrank import recorder
    from ddpdoctor.probe.inrank.config import RankConfig

    rec = recorder.get()
    if not rec.pending:
        return
    config = RankConfig.from_env()
    pid_dump = os.path.join(config.run_dir, rundir.pid_stack_name(os.getpid()))
    if os.path.exists(pid_dump):
        os.replace(pid_dump, os.path.join(config.run_dir, rundir.rank_stack_name(rank)))
    rec.buffer.insert(0, __import__("ddpdoctor.probe.records.telemetry", fromlist=["encode"]).encode(
        start_record(rank, int(os.environ.get("LOCAL_RANK", rank)), world_size, config.launcher)))
    rec.bind(os.path.join(config.run_dir, rundir.rank_telemetry_name(rank)))
