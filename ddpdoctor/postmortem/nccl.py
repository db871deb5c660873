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

# NCCL 2.2x prints a WARN line's time and source first: `[2026-12-04 12:05:58] host:pid:tid [0]
# init.cc:904 NCCL WARN ...` (seen with NCCL 2.28.9; the time's format is NCCL_DEBUG_TIMESTAMP_FORMAT's).
_DEBUG = re.compile(r"^\s*(?:\[[^\]]{1,64}\]\s*)?(\S+?):(\d+):(\d+) \[(-?\d+)\]"
                    r"(?: [\w./-]{1,128}:\d+)? NCCL (WARN|INFO) ?(.*)$")
_VENDOR = re.compile(r"vendor err (\d+)")
ANCHORS = (b"NCCL WARN",)  # INFO lines are read only where another anchor brought them


def kind_of(text: str) -> str:
    """What an NCCL message is about: shm | ib | system | cuda | internal | remote | same_gpu |
    usage | other."""
    low = text.lower()
    if "duplicate gpu detected" in low:
        return "same_gpu"
    if "invalid usage" in low or "ncclinvalidusage" in low:
        return "usage"
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


HINTS = {
    "ib": ("an InfiniBand completion failed (the vendor code says which: 12 is a transport retry "
           "timeout, a peer or link that stopped answering): check the link and switch logs of the "
           "hosts named, `ibstat`, and set NCCL_IB_TIMEOUT / NCCL_IB_RETRY_CNT only after the link is sound"),
    "system": ("a system call NCCL made failed (a socket, a connect, a file): rerun with NCCL_DEBUG=INFO "
               "NCCL_DEBUG_SUBSYS=INIT,NET to see which; check NCCL_SOCKET_IFNAME names an interface every "
               "node has and that the ranks can reach each other on it"),
    "cuda": ("a CUDA call inside NCCL failed: an earlier CUDA error on that rank (an illegal memory access, "
             "a device lost: see the Xid lines in dmesg) usually comes first; rerun with CUDA_LAUNCH_BLOCKING=1"),
    "internal": ("NCCL's 'internal error - please report this issue' is, most of the time, a configuration it "
                 "cannot work with, not an NCCL bug: /dev/shm too small in a container, NCCL_* variables that "
                 "differ across nodes, a network interface or IB device that does not exist, mismatched NCCL "
                 "versions. Rerun with NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,NET,ENV and read the WARN before it"),
    "same_gpu": ("two ranks of one node use the same GPU, which NCCL refuses in one communicator: "
                 "give each rank its own device before its first collective, "
                 "`torch.cuda.set_device(int(os.environ['LOCAL_RANK']))` or "
                 "`init_process_group('nccl', device_id=torch.device('cuda', local_rank))`, and start "
                 "no more processes per node than it has GPUs (--nproc-per-node, CUDA_VISIBLE_DEVICES)"),
    "usage": ("NCCL refused how it was called (ncclInvalidUsage); the line after `Last error:` says "
              "why: most often a tensor on another GPU than the rank's communicator (set the rank's "
              "device before its first collective), or two ranks on one GPU"),
    "other": "rerun with NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,NET to see what NCCL was doing",
}
_LABELS = {"same_gpu": "error, two ranks on one GPU", "usage": "invalid usage"}


def label(kind: str) -> str:
    """How a finding names the kind: "ib error", "error, two ranks on one GPU"."""
    return _LABELS.get(kind, f"{kind} error")


def hint(kind: str) -> str:
    """What to do about an NCCL error of this kind (DDP508; the probe's crash advice too)."""
    return HINTS.get(kind, HINTS["other"])


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
