"""The quick tier is pure: a unit test that starts a process (subprocess, fork, posix_spawn,
multiprocessing, torch.multiprocessing) fails at once, naming the call. Tests that need a real
process belong in tests/integration/. The guard holds through each unit test's setup, call and
teardown only, so integration tests running in the same xdist worker are untouched.

The quick tier never imports torch either (~3 s of CPU, a tenth of the tier): a unit test module
or test that does fails, naming where such tests go."""

from __future__ import annotations

import _posixsubprocess
import gc
import multiprocessing.process
import os
import subprocess
import sys
from contextlib import contextmanager

import pytest


class ProcessStarted(AssertionError):
    """A unit test tried to start a process."""


class TorchImported(AssertionError):
    """A unit test, or the module holding it, imported torch."""


def _torch_imported(where: str) -> TorchImported:
    return TorchImported(f"tests/unit never imports torch (~3 s of CPU): {where} did; move the test "
                         "to tests/integration/test_inrank_with_torch.py")


@contextmanager
def torch_stays_out(where: str):
    """Fails when the block imported torch (when torch was not there before it: in an xdist
    worker that ran integration tests first, it may already be)."""
    fresh = "torch" not in sys.modules
    yield
    if fresh and "torch" in sys.modules:
        raise _torch_imported(where)


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
    @pytest.hookimpl(wrapper=True)  # new-style: it may raise after the test ran
    def wrapper(item):
        with torch_stays_out(item.nodeid), pytest.MonkeyPatch.context() as patch:
            for owner, attr, name in _DOORS:
                patch.setattr(owner, attr, _refuse(owner, attr, name))
            return (yield)
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


@pytest.hookimpl(hookwrapper=True)
def pytest_make_collect_report(collector):
    """A unit test module that imports torch is a collection error (path-scoped: only collectors
    under tests/unit/)."""
    fresh = "torch" not in sys.modules
    outcome = yield
    if fresh and "torch" in sys.modules and isinstance(collector, pytest.Module):
        report = outcome.get_result()
        report.outcome, report.longrepr = "failed", str(_torch_imported(collector.nodeid))


@pytest.fixture(autouse=True)
def _no_lint_cache(monkeypatch):
    """The lint's cache off: a unit test proves the analysis, not an entry another run (or
    another checkout) left in ~/.cache; and each store there fsyncs and stats every entry (500)
    to prune the oldest. tests/unit/test_lint_cache.py turns it on, in a folder of its own."""
    monkeypatch.setenv("DDPDOCTOR_LINT_CACHE", "0")


@pytest.hookimpl(hookwrapper=True)
def pytest_collection(session):
    """No cyclic garbage collection while the tier is collected: importing the test modules and
    what they import builds ~700,000 objects that live for the whole session, and the collector's
    full passes over the growing heap cost ~3 s (12 of them). Frozen afterwards, those objects are
    never walked again; the tests' own objects are collected as usual. (Called where this
    conftest is loaded before collection starts, as with `pytest tests/unit`.)"""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        gc.freeze()
        if was_enabled:
            gc.enable()
