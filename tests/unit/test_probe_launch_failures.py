"""A launch that fails is a finding or an incomplete verdict, never a pass: DDP104 for a taken
rendezvous port (the probe's port test, or the launcher's own "address already in use"), DDP504
quoting the launcher's first error line otherwise (analysis/launch_failure.py reads them)."""

from __future__ import annotations

from ddpdoctor.core.registry import Incomplete, Skipped, get_check
from tests.helpers.telemetry_builders import RunBuilder, judge

IN_USE_LOG = (
    "[I1128 00:40:25.9 TCPStoreLibUvBackend.cpp:1266] [c10d] Failed to bind to ipv6 address, trying ipv4. "
    "port: 29777, useIpv6: true, code: -98, name: EADDRINUSE, message: address already in use\n"
    "Traceback (most recent call last):\n"
    '  File "torch/distributed/run.py", line 1028, in main\n'
    "torch.distributed.DistNetworkError: The server socket has failed to listen on any local network "
    "address. port: 29777, useIpv6: false, code: -98, name: EADDRINUSE, message: address already in use\n")


def _failed_launch(log: str, port_bind=None, status: str = "crashed", launcher_exit=1):
    run = RunBuilder(world_size=2, ranks=[])
    run.outcome(status=status, exit_codes={})
    run._outcome.launcher_exit = launcher_exit
    run._outcome.log_tail = log
    run._outcome.port_bind = port_bind
    return run.model()


def test_launcher_address_in_use_is_ddp104_naming_the_port():
    model = _failed_launch(IN_USE_LOG)
    [finding] = judge("DDP104", model)
    assert "port 29777" in finding.message
    assert finding.evidence["port"] == 29777
    assert isinstance(get_check("DDP504").func(model), Incomplete)


def test_port_test_after_the_failure_names_the_holder():
    fact = {"status": "in-use", "port": 29777, "detail": "Address already in use", "holder_pid": 4242,
            "holder_name": "python", "host": "127.0.0.1", "when": "after"}
    [finding] = judge("DDP104", _failed_launch(IN_USE_LOG, fact))
    assert "python (pid 4242)" in finding.message and "kill 4242" in finding.hint


def test_port_taken_before_launch_is_ddp104_and_the_job_not_started():
    fact = {"status": "in-use", "port": 29600, "detail": "Address already in use", "holder_pid": 77,
            "holder_name": "torchrun", "host": "localhost", "when": "before"}
    model = _failed_launch("", fact, status="not_launched", launcher_exit=None)
    [finding] = judge("DDP104", model)
    assert "port 29600" in finding.message and "pid 77" in finding.message
    assert isinstance(get_check("DDP504").func(model), Incomplete)


def test_other_launcher_error_is_ddp504_quoting_its_first_error_line():
    log = ("some launcher chatter\nTraceback (most recent call last):\n  File \"x.py\", line 3, in f\n"
           "ValueError: Unsupported nproc_per_node value: zero\nRuntimeError: later line\n")
    model = _failed_launch(log)
    [finding] = judge("DDP504", model)
    assert "ValueError: Unsupported nproc_per_node value: zero" in finding.message
    assert "exit 1" in finding.message
    assert isinstance(judge("DDP104", model), Skipped)


def test_launcher_failure_without_an_error_line_is_incomplete_not_a_pass():
    model = _failed_launch("nothing useful here\n")
    assert isinstance(get_check("DDP504").func(model), Incomplete)


def test_a_job_the_probe_ended_is_no_launch_failure():
    model = _failed_launch(IN_USE_LOG, status="stalled")
    assert isinstance(judge("DDP104", model), Skipped)
    assert judge("DDP504", model) == []


def test_a_rank_prefixed_error_is_the_rank_s_not_the_launcher_s():
    model = _failed_launch("[rank1]: RuntimeError: address already in use on my own socket\n")
    assert isinstance(judge("DDP104", model), Skipped)
    assert isinstance(get_check("DDP504").func(model), Incomplete)
