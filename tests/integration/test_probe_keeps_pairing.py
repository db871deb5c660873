"""The probe must not change how a bug fails: a zoo of collective-pairing bugs stops every rank
at the same collective, at the same step, run plainly with torchrun and under the probe."""

from __future__ import annotations

import pytest

from tests.helpers.probe_runner import REPO, probe
from tests.helpers.zoo import plain_failure, probed_failure

pytestmark = pytest.mark.multiprocess

ZOO = ["nan_skip", "rank0_interval_allreduce"]


@pytest.mark.parametrize("name", ZOO)
def test_a_pairing_bug_fails_at_the_same_collective_and_step_with_and_without_the_probe(name, tmp_path):
    script = f"tests/scripts/{name}.py"
    plain = plain_failure(script, tmp_path, REPO)
    assert all(line is not None for line, _ in plain.values()), f"the plain run did not fail: {plain}"
    result = probe(script, "--stall-timeout", "5", "--steps-per-epoch", "0", run_dir=tmp_path / "run")
    assert result.code == 1
    probed = probed_failure(tmp_path / "run")
    for rank, (line, step) in plain.items():
        assert probed[rank][0] == line, f"rank {rank}: plain {plain}, probed {probed}"
        if step is not None:
            assert probed[rank][1] == step, f"rank {rank}: plain {plain}, probed {probed}"
