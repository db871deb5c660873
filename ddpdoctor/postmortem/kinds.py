"""What a rank's exception is about, in the words the checks of the evidence stage own.

collateral: the rank failed because a peer vanished or its watchdog fired (a consequence);
mismatch: TORCH_DISTRIBUTED_DEBUG=DETAIL's collective-mismatch report (DDP501);
unused_parameters: DDP's reducer found parameters without gradients (DDP401);
port_in_use / rendezvous: the process group never formed (DDP104 / DDP505);
nccl: an NCCL error (DDP508); device: a CUDA device the rank could not use; own: anything else
(DDP504). The probe reads the same words (probe/analysis/rank_state.py).
"""

from __future__ import annotations

import re

from ddpdoctor.postmortem import nccl
from ddpdoctor.probe.analysis.rank_state import COLLECTIVE_MISMATCH, UNFINISHED_REDUCTION, is_collateral

_PORT = re.compile(r"EADDRINUSE|address already in use", re.IGNORECASE)
_RDZV_TYPE = re.compile(r"DistNetworkError|Rendezvous\w*Error|DistStoreError")
_RDZV_TEXT = re.compile(r"client socket has timed out|no socket interface|No route to host|Connection refused"
                        r"|Name or service not known|failed to connect|Timed out after \d+ seconds waiting for clients",
                        re.IGNORECASE)
_INIT = re.compile(r"init_process_group|rendezvous|TCPStore|_create_c10d_store|_store_based_barrier")


def error_kind(exc_type: str, text: str) -> str:
    if COLLECTIVE_MISMATCH in text:
        return "mismatch"
    if UNFINISHED_REDUCTION in text:
        return "unused_parameters"
    if _PORT.search(text):
        return "port_in_use"
    if (_RDZV_TYPE.search(exc_type) or _RDZV_TEXT.search(text)) and _INIT.search(text):
        return "rendezvous"
    if is_collateral(text) or nccl.kind_of(text) == "remote" and "NCCL" in text:
        return "collateral"
    if "NCCL error" in text or re.search(r"nccl\w*Error", text):
        return "nccl"
    if "invalid device ordinal" in text:
        return "device"
    return "own"
