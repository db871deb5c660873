"""Issue 34's first causes: a launch that fails is never a pass, an error in flight at a cleanup
collective is the cause (not the hang it leads to), and a rank-local skip is named at its branch.
Each one's healthy twin: the busy port's in test_probe_first_cause_twins.py, the others over
what their probes recorded (tests/unit/test_probe_scripts_recorded.py)."""

from __future__ import annotations

import os
import socket

import pytest

from tests.helpers.probe_runner import REPO, probe

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


def test_an_error_swallowed_by_the_cleanup_barrier_is_ddp504_naming_the_rank_and_the_error(tmp_path):
    result = probe("tests/scripts/swallowed_oom.py", "--stall-timeout", "5", run_dir=tmp_path / "run")
    assert result.code == 1
    crash = result.one("DDP504")
    assert crash["ranks"] == [1]
    assert "RuntimeError: CUDA out of memory" in crash["message"]
    assert crash["location"]["file"] == "tests/scripts/swallowed_oom.py"
    assert "barrier at tests/scripts/swallowed_oom.py:" in crash["message"]
    assert not result.findings("DDP502")
    assert all(f["severity"] == "info" for f in result.findings("DDP503"))


def _line(script: str, text: str) -> int:
    lines = (REPO / "tests" / "scripts" / script).read_text().splitlines()
    return next(i for i, line in enumerate(lines, 1) if text in line)


def test_a_rank_local_skip_is_ddp502_at_the_forward_that_had_no_backward(tmp_path):
    result = probe("tests/scripts/nan_skip.py", "--stall-timeout", "5", run_dir=tmp_path / "run")
    [skip] = result.findings("DDP502")
    assert skip["ranks"] == [1]
    assert skip["location"]["line"] == _line("nan_skip.py", "loss = model(")
    assert "step 3" in skip["message"]
    assert all(f["severity"] == "info" for f in result.findings("DDP503"))


def test_collectives_on_two_groups_in_opposite_orders_are_named_as_both_orders(tmp_path):
    result = probe("tests/scripts/crossed_groups.py", "--stall-timeout", "5", run_dir=tmp_path / "run")
    [crossed] = result.findings("DDP502")
    assert "opposite orders" in crossed["message"]
    assert crossed["ranks"] == [0, 1]


def test_a_rank0_only_ddp_forward_is_the_odd_call_not_the_barrier(tmp_path):
    result = probe("tests/scripts/rank0_ddp_forward.py", "--stall-timeout", "5", run_dir=tmp_path / "run")
    [odd] = result.findings("DDP501") + result.findings("DDP502")
    assert odd["location"]["line"] == _line("rank0_ddp_forward.py", 'print("val", model(')
    assert "buffer broadcast" in odd["message"] and "model.module" in odd["hint"]


def test_uneven_batches_from_a_custom_batch_sampler_are_fixed_in_the_sampler(tmp_path):
    result = probe("tests/scripts/uneven_batch_sampler.py", "--stall-timeout", "5", run_dir=tmp_path / "run")
    uneven = result.one("DDP303")
    assert uneven["ranks"] == [1]
    assert "ContiguousBatches" in uneven["hint"] and "DistributedSampler or drop_last does not apply" in uneven["hint"]
    for skipped in result.findings("DDP502"):
        assert "ContiguousBatches" in skipped["hint"]


def test_drift_after_a_cast_after_wrapping_states_zero_gradient_all_reduces(tmp_path):
    result = probe("tests/scripts/cast_after_wrap.py", "--stall-timeout", "5", run_dir=tmp_path / "run")
    drift = result.one("DDP405")
    assert "0 gradient all-reduces" in drift["message"]
    assert "after DistributedDataParallel" in drift["hint"]


def test_a_dataloader_worker_that_blocks_is_shown_where_it_blocks(tmp_path):
    result = probe("tests/scripts/stuck_worker.py", "--stall-timeout", "5", run_dir=tmp_path / "run")
    assert result.code == 1
    assert not result.findings("DDP502")
    stall = result.one("DDP503")
    assert stall["location"]["line"] == _line("stuck_worker.py", "NEVER.wait()")
    assert "DataLoader worker" in stall["message"] and "drop_last" not in stall["hint"]
