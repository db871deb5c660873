"""Reading Flight Recorder dumps: only plain data is unpickled; ranks lined up by sequence."""

from __future__ import annotations

import os
import pickle
import time

from ddpdoctor.attach import flight
from ddpdoctor.core.registry import run_checks


def entry(seq, op="all_reduce", sizes=((10,),), retired=True, line=41):
    return {"pg_id": 0, "process_group": ("0", "default_pg"), "collective_seq_id": seq,
            "profiling_name": f"gloo:{op}", "input_sizes": [list(s) for s in sizes],
            "input_dtypes": ["Float"], "retired": retired, "is_p2p": False,
            "frames": [{"name": op, "filename": "/x/site-packages/torch/distributed/distributed_c10d.py", "line": 3245},
                       {"name": "<module>", "filename": "/home/u/train.py", "line": line}]}


class _Evil:
    def __reduce__(self):
        return (os.system, ("touch /tmp/ddpdoctor-pwned",))


def test_a_dump_that_builds_objects_is_refused_never_run(tmp_path):
    (tmp_path / "rank_0").write_bytes(pickle.dumps({"entries": [_Evil()]}))
    (tmp_path / "rank_1").write_bytes(pickle.dumps({"entries": [entry(1)]}))
    dumps, notes = flight.load(str(tmp_path))
    assert list(dumps) == [1] and "refused to build" in notes[0]
    assert not os.path.exists("/tmp/ddpdoctor-pwned")


def test_different_shapes_at_one_position_are_a_mismatch():
    dumps = {0: {"entries": [entry(1), entry(2, sizes=((10,),))]},
             1: {"entries": [entry(1), entry(2, sizes=((12,),), line=50)]},
             2: {"entries": [entry(1), entry(2, sizes=((10,),))]}}
    found = {r.spec.code: r for r in run_checks("flight", flight.DumpSet(dumps))}
    assert found["DDP502"].status == "passed"
    problem, = found["DDP501"].findings
    assert list(problem.ranks) == [1]
    assert str(problem.location) == "/home/u/train.py:50"


def test_ring_buffers_that_start_at_different_positions_line_up_on_the_common_part():
    dumps = {0: {"entries": [entry(s) for s in range(3, 9)]},
             1: {"entries": [entry(s) for s in range(5, 9)]}}
    assert flight.line_up(dumps).divergences == []


def test_a_probe_run_dir_is_not_a_dump_dir(tmp_path):
    (tmp_path / "probe.json").write_text("{}")
    (tmp_path / "rank_0").write_bytes(pickle.dumps({"entries": []}))
    assert not flight.is_dump_dir(str(tmp_path))


def test_a_rank_listening_on_its_dump_pipe_is_asked_and_its_dump_found(tmp_path):
    """The writer side for real: a FIFO read by a thread standing in for NCCL's watchdog, which
    writes the dump where the rank's environment says (no GPU here for a real NCCL rank)."""
    import threading

    from ddpdoctor.attach import flight_pipe
    from ddpdoctor.attach.discover import Job, RankProc

    env = {"TORCH_NCCL_DEBUG_INFO_PIPE_FILE": str(tmp_path / "pipe_"),
           "TORCH_NCCL_DEBUG_INFO_TEMP_FILE": str(tmp_path / "rank_")}
    fifo = tmp_path / "pipe_1.pipe"
    os.mkfifo(fifo)

    listening = threading.Event()

    def watchdog():
        fd = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)  # as the rank keeps it open
        listening.set()
        deadline = time.monotonic() + 10
        try:
            while time.monotonic() < deadline:
                try:
                    if os.read(fd, 1):
                        (tmp_path / "rank_1").write_bytes(pickle.dumps({"entries": [entry(1)]}))
                        return
                except BlockingIOError:
                    pass
                time.sleep(0.02)
        finally:
            os.close(fd)

    reader = threading.Thread(target=watchdog, daemon=True)
    reader.start()
    assert listening.wait(5)
    job = Job("job", 2, [RankProc(0, 10, flight_env={}), RankProc(1, 11, flight_env=env)])
    files, note = flight_pipe.request_dumps(job)
    assert files == {1: str(tmp_path / "rank_1")} and "1 wrote one" in note


def nccl_entry(seq, state):
    """An entry as NCCL's Flight Recorder writes it when a rank dumps on demand (version 2.10,
    seen on an H200: torch 2.11, NCCL 2.28.9): `state` read from the work's CUDA events at
    dump time, `retired` still false until the watchdog sweeps the work up."""
    return {"pg_id": 0, "process_group": ("0", "default_pg"), "collective_seq_id": seq,
            "profiling_name": "nccl:all_reduce", "input_sizes": [[1048576]], "input_dtypes": ["Float"],
            "state": state, "retired": False, "is_p2p": False, "timeout_ms": 12000,
            "time_discovered_completed_ns": 1 if state == "completed" else None,
            "frames": [{"name": "<module>", "filename": "/home/u/train.py", "line": 40 + seq}]}


def test_a_completed_entry_the_watchdog_has_not_retired_yet_is_completed(tmp_path):
    config = {"0": {"name": "0", "desc": "default_pg", "ranks": "[0, 1]"}}
    ahead = [nccl_entry(1, "completed"), nccl_entry(2, "completed"), nccl_entry(3, "scheduled")]
    behind = [nccl_entry(1, "completed"), nccl_entry(2, "completed")]
    for rank, entries in ((0, ahead), (1, behind)):
        (tmp_path / f"rank_{rank}").write_bytes(pickle.dumps(
            {"version": "2.10", "pg_config": config, "entries": entries,
             "pg_status": {"0": {"last_enqueued_collective": len(entries), "last_started_collective": -1,
                                 "last_completed_collective": -1}}}))
    from ddpdoctor.core.findings import Severity

    report = flight.report(str(tmp_path), Severity.ERROR, set())
    [table] = report.tables
    assert [row[2] for row in table.rows] == [1, 0]  # not completed: rank 0's third, nothing of rank 1's
    [skip] = [r for r in report.results if r.spec.code == "DDP502"][0].findings
    assert "rank 1's last collective was all_reduce #2" in skip.message
    assert "(completed)" in skip.message and "rank 0 waits in it" in skip.message


def test_an_old_dump_without_state_is_completed_by_retired_alone():
    assert flight.completed({"retired": True}) and not flight.completed({"retired": False})
    assert not flight.completed({"state": "started", "retired": False})
