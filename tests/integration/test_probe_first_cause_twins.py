"""The healthy twin of issue 34's busy-port first cause (test_probe_first_cause.py) stays clean:
the same launch with a free port. (The twins of the other first causes, each script with its bug
switched off by `--healthy`, are judged over what their probes recorded:
tests/unit/test_probe_scripts_recorded.py.)"""

from __future__ import annotations

import pytest

from tests.helpers.ports import free_port
from tests.helpers.probe_runner import probe

pytestmark = pytest.mark.multiprocess


def test_a_free_rendezvous_port_given_with_master_port_passes(tmp_path):
    port = free_port("0.0.0.0")
    result = probe("examples/healthy.py", "--master-port", str(port), "--max-steps", "6",
                   run_dir=tmp_path / "run")
    assert result.code == 0, result.report["findings"]
    assert "DDP104" not in result.codes
