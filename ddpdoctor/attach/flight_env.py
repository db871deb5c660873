"""`ddpdoctor env`: the launch settings that make a job's Flight Recorder readable afterwards.

Flight Recorder keeps the last N collectives of every rank (op, sizes, sequence number, state,
Python frames). On NCCL it dumps them on a timeout or when a rank's pipe is written to; on gloo
it records by default but dumps only from inside the process. These are set before a job
starts: a running job cannot be given them.
"""

from __future__ import annotations

# (name, value, why). Values are what we recommend; the user's dump folder goes in DUMP_PREFIX.
DUMP_PREFIX = "/tmp/ddpdoctor-fr/rank_"
SETTINGS = (
    ("TORCH_FR_BUFFER_SIZE", "2000", "entries kept per rank (0 disables Flight Recorder)"),
    ("TORCH_NCCL_TRACE_BUFFER_SIZE", "2000", "the same, under its older name (torch < 2.5 reads only this)"),
    ("TORCH_FR_DUMP_TEMP_FILE", DUMP_PREFIX, "dump files are this prefix + the rank: point "
     "`ddpdoctor report` at its folder"),
    ("TORCH_NCCL_DEBUG_INFO_TEMP_FILE", DUMP_PREFIX, "the same, under its older name"),
    ("TORCH_NCCL_DUMP_ON_TIMEOUT", "1", "every rank dumps when a collective times out (NCCL)"),
    ("TORCH_NCCL_DEBUG_INFO_PIPE_FILE", "/tmp/ddpdoctor-fr/pipe_", "writing to <this><rank>.pipe "
     "asks a live rank for a dump (NCCL); `ddpdoctor attach` does"),
    ("TORCH_NCCL_ENABLE_TIMING", "1", "start and end times of each collective (NCCL; costs CUDA events)"),
)


def render(export: bool = False) -> str:
    lines = [] if export else [
        "# Flight Recorder: add these to the job's environment before it starts",
        "# (torchrun and srun pass the environment on to every rank).",
        "mkdir -p /tmp/ddpdoctor-fr" if export else "# the folder must exist: mkdir -p /tmp/ddpdoctor-fr",
    ]
    for name, value, why in SETTINGS:
        line = f"export {name}={value}" if export else f"{name}={value}"
        lines.append(line if export else f"{line:<55} # {why}")
    if not export:
        lines.append("# after a hang or timeout: ddpdoctor report /tmp/ddpdoctor-fr")
    return "\n".join(lines) + "\n"
