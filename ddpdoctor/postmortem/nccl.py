"""NCCL's own output and the NCCL errors PyTorch raises.

NCCL's debug lines (NCCL_DEBUG=WARN/INFO) read `host:pid:tid [cuda-dev] NCCL WARN text` (and
`NCCL INFO`); WARN lines are NCCL's errors: a /dev/shm segment it could not create or grow
(shared memory too small, the usual container default of 64 MB), an InfiniBand completion with an
error status and the vendor's code (`NET/IB : Got completion from peer ... with status=N opcode=N
len=N vendor err N`, older `... with error N, opcode N, len N, vendor err N`), a system call that
failed (socket, connect), a CUDA call that failed. PyTorch raises them as `DistBackendError: NCCL
error in: file:line, <reason>`, the reason being ncclUnhandledCudaError ("unhandled cuda error"),
ncclSystemError ("unhandled system error"), ncclInternalError ("internal error - please report
this issue to the NCCL developers": mostly a configuration NCCL could not work with, not a bug),
ncclRemoteError ("remote process exited or there was a network error": another rank's doing).
INFO lines are kept only for the pid -> rank map they give under a rank prefix.
"""

from __future__ import annotations

import re
from typing import Optional

from ddpdoctor.postmortem.evidence import Evidence, Line, NcclWarn

_DEBUG = re.compile(r"^\s*(\S+?):(\d+):(\d+) \[(\d+|-?\d+)\] NCCL (WARN|INFO) ?(.*)$")
_VENDOR = re.compile(r"vendor err (\d+)")
ANCHORS = (b"NCCL WARN",)  # INFO lines are read only where another anchor brought them


def kind_of(text: str) -> str:
    """What an NCCL message is about: shm | ib | system | cuda | internal | remote | other."""
    low = text.lower()
    if "/dev/shm" in low or "shared memory" in low or "shm_open" in low or "shmopen" in low or "shm " in low:
        return "shm"
    if "net/ib" in low or "ibv_" in low or "vendor err" in low or "completion from peer" in low:
        return "ib"
    if "remote process exited" in low or "ncclremoteerror" in low:
        return "remote"
    if "internal error" in low or "ncclinternalerror" in low or "internal check failed" in low:
        return "internal"
    if "unhandled cuda error" in low or "ncclunhandledcudaerror" in low or "cuda failure" in low or "cuda error" in low:
        return "cuda"
    if "unhandled system error" in low or "ncclsystemerror" in low or "call to " in low or "socket" in low:
        return "system"
    return "other"


def read(text: str, rank: Optional[int], where: Line, t: Optional[float], order: int, ev: Evidence) -> bool:
    match = _DEBUG.match(text)
    if not match:
        return False
    host, pid, _, _, level, body = match.groups()
    pid_n = int(pid)
    if rank is not None and pid_n not in ev.pids and len(ev.pids) < 1_000_000:
        ev.pids[pid_n] = rank
    if level != "WARN":
        return True
    if rank is None:
        rank = ev.pids.get(pid_n)
    vendor = _VENDOR.search(body)
    if not ev.room(ev.nccl):
        return True
    ev.nccl.append(NcclWarn(rank, where, t, order, kind=kind_of(body), host=host, pid=pid_n,
                            text=body.strip()[:500], vendor_err=int(vendor.group(1)) if vendor else None))
    return True
