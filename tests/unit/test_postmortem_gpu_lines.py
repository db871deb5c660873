"""Post-mortem over the lines a real NCCL job printed on an H200 (torch 2.11, NCCL 2.28.9),
written again here in their formats: NCCL's WARN lines with a time and a source in front, two
ranks on one GPU, and one watchdog timeout that torch prints twice."""

from __future__ import annotations

from ddpdoctor.core.findings import Severity
from ddpdoctor.postmortem import nccl
from ddpdoctor.postmortem.report import postmortem
from tests.helpers.postmortem_logs import child_failed


def _findings(tmp_path, text: str) -> dict:
    path = tmp_path / "train.log"
    path.write_text(text)
    out: dict = {}
    for f in postmortem([str(path)], Severity.ERROR, set()).findings:
        out.setdefault(f.code, []).append(f)
    return out


def _same_gpu_log(warn_lines: bool) -> str:
    lines = []
    if warn_lines:  # NCCL_DEBUG=WARN: printed before anything names the rank of pid 4101/4102
        lines += ["[2026-12-04 12:05:58] gpu7:4102:4102 [0] init.cc:904 NCCL WARN Duplicate GPU "
                  "detected : rank 1 and rank 0 both on CUDA device 60",
                  "[2026-12-04 12:05:58] gpu7:4101:4101 [0] init.cc:904 NCCL WARN Duplicate GPU "
                  "detected : rank 0 and rank 1 both on CUDA device 60"]
    for rank in (0, 1):
        p = f"[rank{rank}]: "
        lines += [p + "Traceback (most recent call last):",
                  p + '  File "/work/job/train.py", line 7, in <module>',
                  p + "    dist.all_reduce(x)",
                  p + "torch.distributed.DistBackendError: NCCL error in: /pytorch/torch/csrc/distributed/"
                      "c10d/NCCLUtils.cpp:93, invalid usage (run with NCCL_DEBUG=WARN for details), NCCL version 2.28.9",
                  p + "ncclInvalidUsage: This usually reflects invalid usage of NCCL library.",
                  p + "Last error:",
                  p + f"Duplicate GPU detected : rank {rank} and rank {1 - rank} both on CUDA device 60"]
    lines += child_failed([{"rank": 1, "exitcode": 1, "pid": 4102}], {"rank": 0, "exitcode": 1, "pid": 4101})
    return "\n".join(lines) + "\n"


def test_nccl_warn_lines_with_a_time_and_a_source_are_read():
    for text, want in [
            ("[2026-12-04 12:05:58] gpu7:4102:4102 [0] init.cc:904 NCCL WARN Duplicate GPU detected",
             ("gpu7", "4102", "4102", "0", "WARN", "Duplicate GPU detected")),
            ("gpu7:4102:4190 [3] transport/net_ib.cc:1295 NCCL WARN NET/IB : Got completion",
             ("gpu7", "4102", "4190", "3", "WARN", "NET/IB : Got completion")),
            ("gpu7:4102:4190 [3] NCCL WARN Cuda failure 'out of memory'",  # the older form, still read
             ("gpu7", "4102", "4190", "3", "WARN", "Cuda failure 'out of memory'"))]:
        assert nccl._DEBUG.match(text).groups() == want
    assert nccl._DEBUG.match("[rank0]: ValueError: gpu7:1:2 [0] NCCL WARN x") is None


def test_two_ranks_on_one_gpu_is_one_nccl_error_with_advice_for_that_cause(tmp_path):
    found = _findings(tmp_path, _same_gpu_log(warn_lines=True))
    error, = found["DDP508"]  # NCCL's WARN lines and the errors they raised: one finding
    assert error.ranks == [0, 1]  # the WARN lines' pids named by torchrun's summary after them
    assert "two ranks on one GPU" in error.message and "Duplicate GPU detected" in error.message
    assert "torch.cuda.set_device(int(os.environ['LOCAL_RANK']))" in error.hint
    assert error.evidence["role"] == "cause" and error.evidence["kind"] == "same_gpu"


def test_the_error_alone_without_nccl_debug_gets_the_same_advice_and_other_usage_errors_their_own(tmp_path):
    error, = _findings(tmp_path, _same_gpu_log(warn_lines=False))["DDP508"]
    assert "set_device" in error.hint
    # twin: an invalid usage that is not two ranks on one GPU is not told it is
    assert nccl.kind_of("NCCL error in: x, invalid usage ... Last error: Tensor is on cuda:1, "
                        "communicator on cuda:0") == "usage"
    assert "Last error:" in nccl.hint("usage") and "set_device" not in nccl.hint("ib")
    assert nccl.kind_of("NCCL WARN NET/IB : Got completion from peer 10.0.0.2 with status=12") == "ib"


def test_a_timeout_torch_prints_twice_is_one_consequence(tmp_path):
    caught = ("Watchdog caught collective operation timeout: WorkNCCL(SeqNum=17, OpType=ALLREDUCE, "
              "NumelIn=4195328, NumelOut=4195328, Timeout(ms)=8000) ran for 8071 milliseconds before timing out.")
    lines = [f"[rank0]:[E1204 12:04:16.969130715 ProcessGroupNCCL.cpp:689] [Rank 0] {caught}",
             "[rank0]:[E1204 12:04:16.979626198 ProcessGroupNCCL.cpp:2303] [PG ID 0 PG GUID 0(default_pg) "
             "Rank 0]  failure detected by watchdog at work sequence id: 17 PG status: last enqueued work: 18, "
             "last completed work: 16",
             "[rank0]:[E1204 12:05:39.811802790 ProcessGroupNCCL.cpp:2119] [PG ID 0 PG GUID 0(default_pg) "
             f"Rank 0] Process group watchdog thread terminated with exception: [Rank 0] {caught}"]
    waits = _findings(tmp_path, "\n".join(lines) + "\n")["DDP512"]
    assert len(waits) == 1 and "SeqNum 17 on group default_pg" in waits[0].message


def test_timeouts_of_two_named_groups_at_one_seqnum_stay_apart(tmp_path):
    # twin: a line without its group joins a named one only where exactly one matches
    def line(rank, pg):
        head = f"[PG ID {pg} PG GUID {pg}(g{pg}) Rank {rank}] Process group watchdog thread terminated with exception: "
        return (f"[rank{rank}]:[E1204 12:04:16.0 ProcessGroupNCCL.cpp:2119] {head}[Rank {rank}] Watchdog caught "
                "collective operation timeout: WorkNCCL(SeqNum=5, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, "
                "Timeout(ms)=8000) ran for 8071 milliseconds before timing out.")
    plain = ("[rank2]:[E1204 12:04:16.0 ProcessGroupNCCL.cpp:689] [Rank 2] Watchdog caught collective operation "
             "timeout: WorkNCCL(SeqNum=5, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=8000) ran for "
             "8071 milliseconds before timing out.")
    waits = _findings(tmp_path, "\n".join([line(0, 1), line(1, 2), plain]) + "\n")["DDP512"]
    assert len(waits) == 3
