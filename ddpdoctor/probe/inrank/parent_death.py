"""A rank that dies with its parent: no rank may outlive a killed ddpdoctor or torchrun agent.

Lives with the in-rank code because the bootstrap calls it first thing in every rank; the
launcher side (launch/teardown.py) uses it too, as the preexec_fn of the processes it starts.
"""

from __future__ import annotations

import ctypes
import signal

PR_SET_CHILD_SUBREAPER = 36
PR_SET_PDEATHSIG = 1


def prctl(option: int, value: int) -> None:
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(option, value, 0, 0, 0)
    except (OSError, AttributeError):
        pass  # not Linux: the environment marker still finds the processes


def die_with_parent(sig: int = signal.SIGTERM) -> None:
    """In a child: be sent `sig` when the parent dies, even by SIGKILL, so that a killed
    ddpdoctor (or a killed torchrun agent) cannot leave ranks running."""
    prctl(PR_SET_PDEATHSIG, sig)


def killed_with_parent() -> None:
    """For the torchrun agent: SIGKILL when ddpdoctor dies. Its own SIGTERM shutdown can wait
    30 s for workers and longer on a rendezvous whose other nodes are gone; killed outright, its
    ranks get their own parent-death SIGTERM (die_with_parent) at once."""
    prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
