"""Issue 34's first causes, each with its healthy twin: a launch that fails is never a pass, an
error in flight at a cleanup collective is the cause (not the hang it leads to), and a rank-local
skip is named at its branch."""

from __future__ import annotations

import os
import socket

import pytest

from tests.helpers.probe_runner import probe

pytestmark = pytest.mark.multiprocess


def _listening() -> socket.socket:
    sock = socket.socket()
    sock.bind(("0.0.0.0", 0))
    sock.listen(1)
    return sock


def test_a_taken_rendezvous_port_fails_the_probe_naming_the_port_and_its_holder(tmp_path):
    with _listening() as held:
        port = held.getsockname()[1]
        result = probe("examples/healthy.py", "--master-port", str(port), run_dir=tmp_path / "run")
    assert result.code == 1
    finding = result.one("DDP104")
    assert f"port {port}" in finding["message"]
    assert f"pid {os.getpid()}" in finding["message"]
    assert not list((tmp_path / "run").glob("rank-*.jsonl")), "the job must not have been started"


def test_a_free_rendezvous_port_given_with_master_port_passes(tmp_path):
    with _listening() as probe_for_free:
        port = probe_for_free.getsockname()[1]
    result = probe("examples/healthy.py", "--master-port", str(port), "--max-steps", "6",
                   run_dir=tmp_path / "run")
    assert result.code == 0, result.report["findings"]
    assert "DDP104" not in result.codes
