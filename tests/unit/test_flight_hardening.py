"""Flight Recorder dumps that are incomplete, stale, odd or hostile: never a PASS they cannot back,
never a traceback, never a run that does not end, never a file outside the folder."""

from __future__ import annotations

import json
import os
import pickle
import struct
import time

from ddpdoctor.attach import flight
from ddpdoctor.core.findings import Severity
from ddpdoctor.postmortem.report import postmortem


def entry(seq, op="all_reduce", t=0):
    return {"pg_id": 0, "process_group": ("0", "default_pg"), "collective_seq_id": seq,
            "profiling_name": f"nccl:{op}", "input_sizes": [[10]], "input_dtypes": ["Float"],
            "retired": True, "is_p2p": False, "time_created_ns": t,
            "frames": [{"name": "<module>", "filename": "/home/u/train.py", "line": 41}]}


def dump(ranks_in_world, seqs, t=0, version="2.10"):
    return {"version": version, "entries": [entry(s, t=t + s) for s in seqs],
            "pg_config": {"0": {"name": "0", "desc": "default_pg", "ranks": str(list(ranks_in_world))}}}


def write(folder, name, data):
    (folder / name).write_bytes(pickle.dumps(data) if not isinstance(data, bytes) else data)


def statuses(report):
    return {r.spec.code: r.status for r in report.results}


def test_dumps_with_no_entries_are_incomplete_not_a_pass(tmp_path):
    for r in range(2):
        write(tmp_path, f"rank_{r}", dump(range(2), []))
    report = flight.report(str(tmp_path), Severity.ERROR, set())
    assert report.status == "incomplete" and "no entries" in " ".join(report.missing)


def test_two_dumps_of_a_four_rank_job_are_incomplete_naming_the_missing_ranks(tmp_path):
    for r in range(2):
        write(tmp_path, f"rank_{r}", dump(range(4), range(1, 6)))
    report = flight.report(str(tmp_path), Severity.ERROR, set())
    assert report.status == "incomplete"
    assert any("ranks 2 and 3" in m or "ranks 2, 3" in m or "ranks 2-3" in m for m in report.missing), report.missing


def test_stale_dumps_of_an_earlier_four_rank_job_are_set_apart_not_blamed_on(tmp_path):
    now = time.time_ns()
    for r in (2, 3):
        write(tmp_path, f"rank_{r}", dump(range(4), range(1, 40), t=now - 10 ** 12))
    for r in (0, 1):
        write(tmp_path, f"rank_{r}", dump(range(2), range(1, 6), t=now))
    report = flight.report(str(tmp_path), Severity.ERROR, set())
    assert report.status == "pass", [f.message for f in report.findings]
    assert any("another job" in n for n in report.notes)


def test_a_sequence_gap_and_a_non_numeric_sequence_number_give_no_traceback(tmp_path):
    a = dump(range(2), [1, 2, 3, 10 ** 15])
    b = dump(range(2), [1, 2, 3, 10 ** 15])
    b["entries"].append(dict(entry(4), collective_seq_id="four"))
    b["entries"].append(dict(entry(5), collective_seq_id=None))
    write(tmp_path, "rank_0", a)
    write(tmp_path, "rank_1", b)
    report = flight.report(str(tmp_path), Severity.ERROR, set())
    assert report.status in ("pass", "fail")


def _nested_pickle(depth: int) -> bytes:
    """{'entries': [{'input_sizes': [[[...]]]}]} nested `depth` deep, written as opcodes (the
    pickler itself would recurse)."""
    def text(s):
        raw = s.encode()
        return b"X" + struct.pack("<I", len(raw)) + raw
    body = b"]" * depth + b"a" * (depth - 1)
    return (b"\x80\x02}" + text("entries") + b"]}" + text("input_sizes") + body + b"s" + b"a" + b"s.")


def test_input_sizes_nested_200000_deep_are_refused_without_a_traceback(tmp_path):
    write(tmp_path, "rank_0", _nested_pickle(200_000))
    write(tmp_path, "rank_1", dump(range(2), [1]))
    dumps, notes = flight.load(str(tmp_path))
    assert list(dumps) == [1] and "refused" in notes[0]
    (tmp_path / "rank_0").write_text('{"version": "2.4", "pg_config": {}, "entries": [{"input_sizes": '
                                     + "[" * 200_000 + "]" * 200_000 + "}]}")
    dumps, notes = flight.load(str(tmp_path))
    assert list(dumps) == [1] and "deeper" in notes[0]


def test_a_small_pickle_expanding_through_its_memo_is_refused_quickly(tmp_path):
    bomb = [0]
    for _ in range(25):
        bomb = [bomb] * 10  # one list shared ten times, 25 levels: 10^25 elements walked
    raw = pickle.dumps({"entries": [dict(entry(1), input_sizes=bomb)]}, protocol=2)
    assert len(raw) < 2000
    write(tmp_path, "rank_0", raw)
    write(tmp_path, "rank_1", dump(range(2), [1]))
    start = time.monotonic()
    dumps, notes = flight.load(str(tmp_path))
    assert time.monotonic() - start < 10
    assert list(dumps) == [1] and "refused" in notes[0]


def test_a_link_to_a_dump_outside_the_folder_is_not_read(tmp_path):
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    write(outside, "secret_dump", dump(range(2), [1, 2]))
    folder = tmp_path / "dumps"
    folder.mkdir()
    write(folder, "rank_0", dump(range(2), [1, 2]))
    os.symlink(outside / "secret_dump", folder / "rank_1")
    dumps, _ = flight.load(str(folder))
    assert list(dumps) == [0]
    report = postmortem([str(folder)], Severity.ERROR, set())
    assert report.status != "pass"


def test_json_dumps_beside_logs_line_up_and_name_the_skipping_rank(tmp_path):
    for r in range(3):
        seqs = range(1, 8) if r != 2 else range(1, 6)
        (tmp_path / f"nccl_trace_rank_{r}.json").write_text(json.dumps(dump(range(3), seqs)))
    (tmp_path / "job.log").write_text("[rank0]: step 1\n[rank1]: step 1\n")
    report = postmortem([str(tmp_path)], Severity.ERROR, set())
    skipped = [f for f in report.findings if f.code == "DDP502"]
    assert skipped and skipped[0].ranks == [2] and skipped[0].evidence["role"] == "cause"
