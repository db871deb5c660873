"""The kernel's OOM killer, from `dmesg` or the journal the user saved beside the logs.

mm/oom_kill.c prints `Out of memory: Killed process PID (COMM) total-vm:...kB, anon-rss:...kB,
...` (before 5.x: `Out of memory: Kill process PID (COMM) score N or sacrifice child` then
`Killed process PID (COMM) total-vm:...`), a memory cgroup's `Memory cgroup out of memory: Killed
process PID (COMM) ...`, and `oom-kill:constraint=...,task=COMM,pid=PID,uid=N`. The killed rank
leaves no traceback: its pid, matched with the pids the launcher's or NCCL's lines give, names it.
"""

from __future__ import annotations

import re
from typing import Optional

from ddpdoctor.postmortem.evidence import Evidence, Line, OomKill

_KILLED = re.compile(r"(?:Out of memory: Kill(?:ed)? process|Killed process) (\d+) \(([^)]{0,64})\)")
_OOM_KILL = re.compile(r"oom-kill:.*?task=([^,\s]{0,64}),pid=(\d+)")
ANCHORS = (b"Killed process",)  # old kernels print it too, after "Kill process"


def read(text: str, rank: Optional[int], where: Line, t: Optional[float], order: int, ev: Evidence) -> bool:
    match = _KILLED.search(text)
    if match:
        pid, comm = int(match.group(1)), match.group(2)
    else:
        match = _OOM_KILL.search(text)
        if not match:
            return False
        comm, pid = match.group(1), int(match.group(2))
    if any(o.pid == pid for o in ev.ooms):
        return True  # the same kill, reported on its second line
    if len(ev.ooms) < 10000:
        ev.ooms.append(OomKill(None, where, t, order, pid=pid, process=comm))
    return True
