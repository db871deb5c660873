"""The quick tier stays pure: every way to start a process fails inside a unit test (the guard of
tests/unit/conftest.py), so a test that needs one is written in tests/integration/; so does an
import of torch."""

from __future__ import annotations

import asyncio
import multiprocessing
import os
import pickle
import subprocess
import sys
import types

import pytest

from tests.unit.conftest import ProcessStarted, TorchImported, torch_stays_out


@pytest.mark.parametrize("start", [
    lambda: subprocess.run([sys.executable, "-c", "pass"]),
    lambda: os.popen("true"),
    lambda: os.system("true"),
    lambda: os.fork(),
    lambda: os.posix_spawn(sys.executable, [sys.executable, "-c", "pass"], os.environ),
    lambda: multiprocessing.get_context("fork").Process(target=print).start(),
    lambda: multiprocessing.get_context("spawn").Process(target=print).start(),
    lambda: asyncio.run(asyncio.create_subprocess_exec(sys.executable, "-c", "pass")),
], ids=["subprocess", "os.popen", "os.system", "os.fork", "posix_spawn", "mp-fork", "mp-spawn", "asyncio"])
def test_starting_a_process_in_a_unit_test_fails_naming_the_way_out(start):
    with pytest.raises(ProcessStarted, match="move this test to tests/integration/"):
        start()


def test_a_guarded_call_still_pickles_by_name_as_the_original_does():
    assert pickle.loads(pickle.dumps(os.system)) is os.system


def test_a_unit_test_that_imports_torch_fails_naming_the_way_out():
    # A stand-in module under torch's name: importing the real one is what the tier must not do.
    real = sys.modules.pop("torch", None)
    try:
        with pytest.raises(TorchImported, match="tests/integration/test_inrank_with_torch.py"):
            with torch_stays_out("tests/unit/test_x.py::test_y"):
                sys.modules["torch"] = types.ModuleType("torch")
    finally:
        sys.modules.pop("torch", None)
        if real is not None:
            sys.modules["torch"] = real
