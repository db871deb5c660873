"""`ddpdoctor report EVIDENCE...` over logs written in the formats a dead job leaves: the first
cause named at its rank and line, the rest as consequences, and the traps each with a test."""

from __future__ import annotations

import gzip
import json

import pytest

from ddpdoctor.core.findings import Severity
from ddpdoctor.postmortem.report import postmortem
from tests.helpers.postmortem_logs import child_failed, glog, interleaved, traceback, watchdog


def _report(tmp_path, files: dict[str, str]):
    paths = []
    for name, text in files.items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        if name.endswith(".gz"):
            path.write_bytes(gzip.compress(text.encode()))
        else:
            path.write_text(text)
        paths.append(str(path))
    return postmortem(paths, Severity.ERROR, set())


def _by_code(report):
    out = {}
    for f in report.findings:
        out.setdefault(f.code, []).append(f)
    return out


def _line_of(text: str, needle: str) -> int:
    return next(i for i, line in enumerate(text.splitlines(), 1) if needle in line)


def test_a_rank_exception_is_the_cause_and_the_watchdog_timeouts_its_consequences(tmp_path):
    special = {0: traceback(0, "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB")}
    special.update({r: watchdog(r, 1583, second=30) for r in range(1, 8)})
    text = interleaved(8, special)
    found = _by_code(_report(tmp_path, {"train.log": text}))
    cause, = found["DDP504"]
    assert cause.ranks == [0] and cause.evidence["role"] == "cause"
    assert str(cause.location) == "/home/u/train.py:57"
    line = _line_of(text, "OutOfMemoryError")
    assert cause.evidence["lines"][0].startswith(f"{tmp_path / 'train.log'}:{line}:")
    waits, = found["DDP512"]
    assert waits.ranks == list(range(1, 8)) and waits.evidence["role"] == "consequence"
    assert "ALLREDUCE SeqNum 1583 after 600 s" in waits.message and "waiting for rank 0" in waits.message


def test_torchruns_root_cause_naming_an_aborted_rank_is_not_taken_for_the_cause(tmp_path):
    special = {2: traceback(2, "ValueError: bad label 7 in batch")}
    special.update({r: watchdog(r, 40, second=30) for r in (0, 1, 3)})
    summary = child_failed([{"rank": 2, "exitcode": 1, "pid": 102, "minute": 21}],
                           {"rank": 3, "exitcode": -6, "pid": 103, "minute": 20})
    report = _report(tmp_path, {"out.log": interleaved(4, special, tail=summary)})
    found = _by_code(report)
    assert [f.ranks for f in found["DDP504"]] == [[2]]
    assert "Root Cause" in found["DDP512"][0].message and "rank 3" in found["DDP512"][0].message
    assert report.metrics["first_cause_ranks"] == [2]


def test_the_watchdog_line_names_the_waiting_ranks_never_the_culprit(tmp_path):
    # Rank 1 stopped (nothing printed); ranks 0, 2, 3 timed out at 1583 while rank 1 was behind.
    special = {r: watchdog(r, 1583) for r in (0, 2, 3)}
    special[1] = [glog(1, "E", 5, "ProcessGroupNCCL.cpp:2271") +
                  "[PG ID 0 PG GUID 0(default_pg) Rank 1]  failure detected by watchdog at work sequence id: "
                  "1581 PG status: last enqueued work: 1581, last completed work: 1580"]
    report = _report(tmp_path, {"job.log": interleaved(4, special)})
    found = _by_code(report)
    assert "DDP504" not in found
    stall, = found["DDP503"]
    assert stall.ranks == [1] and "no rank left an error" in stall.message and "behind" in stall.message
    assert all(1 not in f.ranks for f in found["DDP512"])


def test_ranks_stopped_in_different_collectives_at_one_seqnum_are_a_desync(tmp_path):
    special = {0: watchdog(0, 77, "ALLREDUCE"), 1: watchdog(1, 77, "BROADCAST"), 2: watchdog(2, 77, "ALLREDUCE")}
    found = _by_code(_report(tmp_path, {"job.log": interleaved(3, special)}))
    mismatch, = found["DDP501"]
    assert "SeqNum 77" in mismatch.message and "BROADCAST" in mismatch.message
    assert mismatch.evidence["role"] == "cause"


def test_every_rank_timing_out_at_the_same_collective_is_an_honest_unknown(tmp_path):
    special = {r: watchdog(r, 12) for r in range(4)}
    report = _report(tmp_path, {"job.log": interleaved(4, special)})
    assert report.status == "incomplete" and report.exit_code == 4
    assert any("does not show the first cause" in m for m in report.missing)


def test_a_rank_killed_by_the_host_oom_killer_is_named_by_its_pid(tmp_path):
    special = {r: watchdog(r, 9) for r in (0, 2, 3)}
    summary = child_failed([], {"rank": 1, "exitcode": -9, "pid": 4242,
                                "message": "Signal 9 (SIGKILL) received by PID 4242"})
    dmesg = ("[812345.100001] python invoked oom-killer: gfp_mask=0x140cca(GFP_HIGHUSER_MOVABLE|__GFP_COMP), order=0, oom_score_adj=0\n"
             "[812345.100900] oom-kill:constraint=CONSTRAINT_NONE,nodemask=(null),cpuset=/,mems_allowed=0,global_oom,task_memcg=/,task=python,pid=4242,uid=1000\n"
             "[812345.101000] Out of memory: Killed process 4242 (python) total-vm:98765432kB, anon-rss:61234567kB, file-rss:0kB, shmem-rss:0kB, UID:1000 pgtables:123456kB oom_score_adj:0\n")
    report = _report(tmp_path, {"a/job.log": interleaved(4, special, tail=summary), "b/dmesg.txt": dmesg})
    found = _by_code(report)
    oom, = found["DDP510"]
    assert oom.ranks == [1] and oom.evidence["role"] == "cause" and "no traceback" in oom.message
    assert "DDP504" not in found  # the SIGKILL is the OOM kill, not a second crash
    assert report.metrics["first_cause_ranks"] == [1]


def test_ncclinternalerror_is_worded_as_configuration_not_a_bug_to_report(tmp_path):
    exc = ("torch.distributed.DistBackendError: NCCL error in: /pytorch/torch/csrc/distributed/c10d/"
           "ProcessGroupNCCL.cpp:3356, internal error - please report this issue to the NCCL developers, NCCL version 2.21.5")
    special = {0: ["node0:5101:5101 [0] NCCL WARN Bootstrap : no socket interface found"] + traceback(0, exc, extra=("ncclInternalError: Internal check failed.",))}
    special[1] = traceback(1, exc)
    found = _by_code(_report(tmp_path, {"job.log": interleaved(2, special)}))
    nccl = found["DDP508"]
    assert nccl[0].evidence["role"] == "cause"
    assert any("configuration" in f.hint for f in nccl)


def test_shared_memory_too_small_is_its_own_finding(tmp_path):
    special = {1: ["[rank1]: node0:7001:7044 [1] NCCL WARN Error: failed to extend /dev/shm/nccl-Ab12Cd to 9637892 bytes"]}
    special[0] = watchdog(0, 3)
    found = _by_code(_report(tmp_path, {"job.log": interleaved(2, special)}))
    shm, = found["DDP509"]
    assert shm.ranks == [1] and shm.evidence["role"] == "cause"


def test_an_ib_completion_error_carries_its_vendor_code(tmp_path):
    special = {3: ["[rank3]: gpu-17:3301:3390 [3] NCCL WARN NET/IB : Got completion from peer 10.1.2.3<40121> "
                   "with status=12 opcode=0 len=0 vendor err 129 (Recv) localGid ::ffff:10.1.2.4 remoteGids ::ffff:10.1.2.3"]}
    special.update({r: watchdog(r, 500) for r in (0, 1, 2)})
    found = _by_code(_report(tmp_path, {"job.log": interleaved(4, special)}))
    ib, = found["DDP508"]
    assert ib.ranks == [3] and ib.evidence["vendor_err"] == 129 and ib.evidence["kind"] == "ib"


def test_a_heartbeat_at_a_normal_teardown_is_information_not_a_cause(tmp_path):
    lines = {r: [glog(r, "W", 50, "ProcessGroupNCCL.cpp:1250") + "Warning: WARNING: process group has NOT been "
                 "destroyed before we destruct ProcessGroupNCCL. On normal program exit, the application should "
                 "call destroy_process_group to ensure that any pending NCCL operations have finished"]
             for r in range(2)}
    report = _report(tmp_path, {"job.log": interleaved(2, lines)})
    found = _by_code(report)
    teardown, = found["DDP511"]
    assert teardown.severity == Severity.INFO and report.exit_code == 0
    assert "DDP504" not in found and "DDP503" not in found


def test_a_heartbeat_beside_a_real_failure_is_a_consequence(tmp_path):
    special = {0: traceback(0, "AssertionError: bad shapes") +
               [glog(0, "E", 59) + "[PG ID 0 PG GUID 0(default_pg) Rank 0] Heartbeat monitor timed out! Process "
                "will be terminated after dumping debug info. workMetaList_.size()=1"]}
    special[1] = watchdog(1, 10)
    found = _by_code(_report(tmp_path, {"job.log": interleaved(2, special)}))
    assert found["DDP511"][0].evidence["role"] == "consequence"
    assert found["DDP504"][0].evidence["role"] == "cause"


def test_per_rank_files_of_torchruns_log_dir_and_an_error_file(tmp_path):
    attempt = "logs/none_abc/attempt_0"
    error = {"message": {"message": "RuntimeError: invalid device ordinal",
                         "extraInfo": {"py_callstack": "\n".join(
                             ["Traceback (most recent call last):",
                              '  File "/home/u/train.py", line 12, in <module>',
                              "    torch.cuda.set_device(rank)",
                              "RuntimeError: invalid device ordinal"]), "timestamp": "1764292800"}}}
    files = {f"{attempt}/0/stderr.log": "\n".join(f"step {i}" for i in range(50)) + "\n" +
             "\n".join(x[len("[rank0]:"):] for x in watchdog(0, 2)) + "\n",
             f"{attempt}/1/error.json": json.dumps(error),
             f"{attempt}/1/stderr.log.gz": "starting\n"}
    found = _by_code(_report(tmp_path, files))
    crash, = found["DDP504"]
    assert crash.ranks == [1] and "invalid device ordinal" in crash.message
    assert "LOCAL_RANK" in crash.hint and str(crash.location) == "/home/u/train.py:12"
    assert found["DDP512"][0].ranks == [0]


def test_srun_prefixed_lines_name_their_task(tmp_path):
    text = "".join(f"{r}: epoch 1 step {s}\n" for s in range(30) for r in range(2))
    text += "1: Traceback (most recent call last):\n1:   File \"/home/u/train.py\", line 8, in <module>\n"
    text += "1: KeyError: 'label'\n"
    found = _by_code(_report(tmp_path, {"slurm-77.out": text}))
    assert found["DDP504"][0].ranks == [1]


def test_the_detail_mismatch_report_is_ddp501_and_unused_parameters_ddp401(tmp_path):
    mismatch = ("RuntimeError: Detected mismatch between collectives on ranks. Rank 0 is running collective: "
                "CollectiveFingerPrint(SequenceNumber=9, OpType=ALLREDUCE, TensorShape=[10], TensorDtypes=Float), "
                "but Rank 1 is running collective: CollectiveFingerPrint(SequenceNumber=9, OpType=BROADCAST).")
    unused = ("RuntimeError: Expected to have finished reduction in the prior iteration before starting a new one. "
              "Parameter indices which did not receive grad for rank 0: 4 5")
    a = _by_code(_report(tmp_path / "a", {"job.log": interleaved(2, {0: traceback(0, mismatch)})}))
    assert a["DDP501"][0].ranks == [0] and "DDP504" not in a
    b = _by_code(_report(tmp_path / "b", {"job.log": interleaved(2, {1: traceback(1, unused.replace("rank 0", "rank 1"))})}))
    assert b["DDP401"][0].ranks == [1] and "4 5" in b["DDP401"][0].message


def test_address_in_use_and_a_rendezvous_timeout_have_their_own_codes(tmp_path):
    port = ["Traceback (most recent call last):", '  File "/usr/bin/torchrun", line 8, in <module>',
            "    rdzv = _create_c10d_store(...)",
            "torch.distributed.DistNetworkError: The server socket has failed to listen on any local network address. "
            "port: 29500, useIpv6: false, code: -98, name: EADDRINUSE, message: address already in use"]
    a = _by_code(_report(tmp_path / "a", {"job.log": "\n".join(port) + "\n"}))
    assert a["DDP104"][0].evidence["role"] == "cause"
    rdzv = traceback(1, "torch.distributed.DistNetworkError: The client socket has timed out after 600000ms "
                        "while trying to connect to (10.0.0.1, 29500).",
                     extra=()) 
    rdzv.insert(3, '[rank1]:   File "/x/site-packages/torch/distributed/distributed_c10d.py", line 1, in init_process_group')
    b = _by_code(_report(tmp_path / "b", {"job.log": "\n".join(rdzv) + "\n"}))
    assert b["DDP505"][0].ranks == [1]


def test_an_empty_or_unrelated_log_is_incomplete_never_a_pass(tmp_path):
    report = _report(tmp_path, {"job.log": "hello\nworld\n"})
    assert report.status == "incomplete" and report.exit_code == 4


DATA = __import__("pathlib").Path(__file__).resolve().parents[1] / "data" / "postmortem"


def test_a_real_gloo_job_whose_rank_raised_names_that_rank_and_its_line():
    report = postmortem([str(DATA / "gloo_oom_like.log")], Severity.ERROR, set())
    found = _by_code(report)
    cause, = found["DDP504"]
    assert cause.ranks == [1] and "MemoryError" in cause.message
    assert cause.location.file.endswith("postmortem_job.py") and cause.location.line == 21
    assert found["DDP512"][0].ranks == [0] and found["DDP512"][0].evidence["role"] == "consequence"


def test_a_real_gloo_timeout_without_an_error_is_an_honest_unknown():
    report = postmortem([str(DATA / "gloo_timeout.log")], Severity.ERROR, set())
    assert report.status == "incomplete" and report.exit_code == 4
    assert any("no rank left an error of its own" in m and "rank 1 left no error" in m for m in report.missing)


def test_a_real_desync_under_detail_is_one_ddp501_over_both_ranks():
    found = _by_code(postmortem([str(DATA / "gloo_desync_detail.log")], Severity.ERROR, set()))
    mismatch, = found["DDP501"]
    assert mismatch.ranks == [0, 1] and "BROADCAST" in mismatch.message
    assert "DDP504" not in found


def test_the_failed_collectives_stack_names_the_users_line_of_the_timeout(tmp_path):
    from tests.helpers.postmortem_logs import failed_stack

    special = {r: watchdog(r, 1583, second=30) + failed_stack(r, 120, second=30) for r in (0, 1, 2)}
    report = _report(tmp_path, {"job.log": interleaved(4, special)})
    waits, = _by_code(report)["DDP512"]
    assert "(called at /home/u/train.py:120)" in waits.message
    assert str(waits.location) == "/home/u/train.py:120"
