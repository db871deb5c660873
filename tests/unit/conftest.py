"""The quick tier is pure: a unit test that starts a process (subprocess, fork, posix_spawn,
multiprocessing, torch.multiprocessing) fails at once, naming the call. Tests that need a real
process belong in tests/integration/. The guard holds through each unit test's setup, call and
teardown only, so integration tests running in the same xdist worker are untouched."""

from __future__ import annotations

import _posixsubprocess
import multiprocessing.process
import os
import subprocess

import pytest


class ProcessStarted(AssertionError):
    """A unit test tried to start a process."""


def _refuse(owner, attr: str, name: str):
    def refused(*args, **kwargs):
        raise ProcessStarted(f"tests/unit is pure: {name}() starts a process; "
                             "move this test to tests/integration/")
    # Pickled by name as the original is (a test pickles `os.system` to forge a hostile dump).
    refused.__module__ = getattr(owner, "__module__", None) or owner.__name__
    refused.__qualname__ = f"{owner.__qualname__}.{attr}" if isinstance(owner, type) else attr
    return refused


# Every door to a new process on POSIX: subprocess (and asyncio, os.popen through it) reaches
# Popen._execute_child; multiprocessing's spawn and forkserver reach _posixsubprocess.fork_exec,
# its fork start method os.fork; os.system and os.spawn* fork.
_DOORS = [(subprocess.Popen, "_execute_child", "subprocess.Popen"),
          (_posixsubprocess, "fork_exec", "_posixsubprocess.fork_exec"),
          (multiprocessing.process.BaseProcess, "start", "multiprocessing.Process.start")]
_DOORS += [(os, name, f"os.{name}") for name in
           ("fork", "forkpty", "posix_spawn", "posix_spawnp", "system", "spawnv", "spawnve",
            "spawnvp", "spawnvpe", "spawnl", "spawnle", "spawnlp", "spawnlpe") if hasattr(os, name)]


def _guarded(phase):
    @pytest.hookimpl(hookwrapper=True)
    def wrapper(item):
        with pytest.MonkeyPatch.context() as patch:
            for owner, attr, name in _DOORS:
                patch.setattr(owner, attr, _refuse(owner, attr, name))
            yield
    wrapper.__name__ = phase
    return wrapper


# Path-scoped hooks: pytest calls these only for items under tests/unit/.
pytest_runtest_setup = _guarded("pytest_runtest_setup")
pytest_runtest_call = _guarded("pytest_runtest_call")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_teardown(item, nextitem):
    """The last item's teardown (nextitem None) also ends the session's fixtures, an integration
    module's among them when an xdist worker ran one before its unit tests (the network-namespace
    lab kills its namespaces' processes with `ip`): unguarded there, guarded everywhere else."""
    if nextitem is None:
        yield
        return
    with pytest.MonkeyPatch.context() as patch:
        for owner, attr, name in _DOORS:
            patch.setattr(owner, attr, _refuse(owner, attr, name))
        yield
