"""More post-mortem evidence: the desync report, each kind alone (no other line), hostile logs,
and the registry serving one check to two stages."""

from __future__ import annotations

import pytest

from ddpdoctor.core.findings import Severity
from ddpdoctor.core.registry import all_checks
from ddpdoctor.postmortem.report import postmortem
from tests.helpers.postmortem_logs import interleaved, traceback, watchdog


def _findings(tmp_path, text: str, name: str = "job.log"):
    tmp_path.mkdir(parents=True, exist_ok=True)
    (tmp_path / name).write_text(text)
    out = {}
    for f in postmortem([str(tmp_path / name)], Severity.ERROR, set()).findings:
        out.setdefault(f.code, []).append(f)
    return out


def test_the_desync_report_names_the_rank_that_never_joined_the_next_collective(tmp_path):
    special = {r: watchdog(r, 31) + [
        f"[rank{r}]: \t - To our best knowledge, the lagging/dead/mismatched ranks that caused the desync are:",
        f"[rank{r}]: \t   - [2] finished collective #30, but didn't join collective #31 (count from 1)"]
        for r in (0, 1)}
    skipped, = _findings(tmp_path, interleaved(3, special))["DDP502"]
    assert skipped.ranks == [2] and "never joined #31" in skipped.message


ALONE = {
    "exception": ("DDP504", [1], traceback(1, "AssertionError: labels out of range")),
    "host-oom": ("DDP510", [1], [
        "[rank0]:[E1128 01:00:00.000000000 x.cpp:1] [Rank 0] Watchdog caught collective operation timeout: "
        "WorkNCCL(SeqNum=5, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=1000) ran for 1001 milliseconds before timing out.",
        "Root Cause (first observed failure):", "[0]:", "  time      : 2026-11-28_01:00:00",
        "  rank      : 1 (local_rank: 1)", "  exitcode  : -9 (pid: 777)", "=" * 20,
        "Nov 28 01:00:01 node0 kernel: Out of memory: Killed process 777 (python) total-vm:1kB, anon-rss:1kB"]),
    "shm": ("DDP509", [1], ["[rank1]: node0:55:66 [1] NCCL WARN Error while creating shared memory segment "
                            "/dev/shm/nccl-x (size 9637888)"]),
    "desync": ("DDP501", [0, 1], watchdog(0, 8, "ALLGATHER") + watchdog(1, 8, "ALLREDUCE")),
}


@pytest.mark.parametrize("kind", sorted(ALONE))
def test_each_kind_alone_gives_the_same_cause_as_buried(tmp_path, kind):
    code, ranks, lines = ALONE[kind]
    alone = _findings(tmp_path / "alone", "\n".join(lines) + "\n")
    assert alone[code][0].evidence["role"] == "cause" and alone[code][0].ranks == ranks


def test_a_line_of_megabytes_and_a_binary_file_are_read_without_harm(tmp_path):
    (tmp_path / "blob.bin").write_bytes(b"\x00\x01" * 1000)
    text = "[rank0]: " + "x" * (3 * 1024 * 1024) + "\n" + "\n".join(traceback(0, "ValueError: late")) + "\n"
    assert _findings(tmp_path, text)["DDP504"][0].ranks == [0]
    report = postmortem([str(tmp_path / "blob.bin"), str(tmp_path / "job.log")], Severity.ERROR, set())
    assert any("binary" in n for n in report.notes)


def test_one_check_serves_the_probe_and_the_evidence_stage_and_keeps_one_judge_per_code():
    evidence = {s.code: s for s in all_checks("evidence")}
    probe = {s.code: s for s in all_checks("probe")}
    for code in ("DDP401", "DDP501", "DDP502", "DDP503", "DDP504", "DDP505"):
        assert evidence[code] is probe[code] and evidence[code].stages[:2] == ("probe", "evidence")
    assert evidence["DDP104"].stage == "preflight"
    assert {"DDP508", "DDP509", "DDP510", "DDP511", "DDP512"} <= set(evidence)
    assert "DDP508" not in probe


def test_ray_worker_lines_are_assembled_per_process_and_named_by_the_pid_torchrun_or_nccl_gave(tmp_path):
    lines = ["[rank1]: node5:4101:4150 [1] NCCL WARN Cuda failure 'out of memory'"]  # pid 4101 is rank 1
    lines += ["(RayTrainWorker pid=4100, ip=10.0.0.5) epoch 1 step 3",
              "(RayTrainWorker pid=4101, ip=10.0.0.5) Traceback (most recent call last):",
              "(RayTrainWorker pid=4100, ip=10.0.0.5) epoch 1 step 4",
              '(RayTrainWorker pid=4101, ip=10.0.0.5)   File "/home/u/train.py", line 33, in train_func',
              "(RayTrainWorker pid=4101, ip=10.0.0.5) ValueError: bad label"]
    crash, = _findings(tmp_path, "\n".join(lines) + "\n")["DDP504"]
    assert crash.ranks == [1] and str(crash.location) == "/home/u/train.py:33"


def test_a_log_collectors_time_before_the_rank_prefix_is_read_and_kept(tmp_path):
    lines = [f"2026-11-28T01:0{i}:00.000000000Z stderr F {x}" for i, x in enumerate(
        traceback(2, "RuntimeError: CUDA error: an illegal memory access was encountered"))]
    crash, = _findings(tmp_path, "\n".join(lines) + "\n")["DDP504"]
    assert crash.ranks == [2] and crash.location.line == 57
