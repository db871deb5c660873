"""The rank files node 0 reads while it waits out a quiet spell (records/read_ahead.py): the
analysis that follows loads exactly the records a full read gives (what was read ahead, then the
rest from the offset reached, a line being written included once whole), for that run dir only,
and once."""

from __future__ import annotations

import json
from pathlib import Path

from ddpdoctor.probe.records import read_ahead
from ddpdoctor.probe.records import telemetry as tm
from ddpdoctor.probe.records.read_ahead import ReadAhead


def step_line(step: int, t: float) -> str:
    return json.dumps({"kind": "step", "t": t, "step": step, "backward_iterations": 1, "allreduce_rounds": 1})


def loaded(run_dir: Path) -> dict[str, list]:
    ahead = read_ahead.take(run_dir)
    return {p.name: tm.read_records(p, ahead.get(p.name)) for p in sorted(run_dir.glob("rank-*.jsonl"))}


def test_records_read_ahead_and_the_rest_are_exactly_a_full_read(tmp_path):
    for rank in range(3):
        (tmp_path / f"rank-{rank}.jsonl").write_text("".join(step_line(k, rank + k / 10) + "\n" for k in range(4)))
    ahead = ReadAhead(tmp_path)
    ahead.step(10.0)
    with open(tmp_path / "rank-1.jsonl", "a") as handle:
        handle.write(step_line(4, 9.0) + "\n" + step_line(5, 9.5)[:20])  # a line still being written
    ahead.step(10.0)
    with open(tmp_path / "rank-1.jsonl", "a") as handle:
        handle.write(step_line(5, 9.5)[20:] + "\n" + "{torn")
    (tmp_path / "rank-3.jsonl").write_text(step_line(1, 3.0) + "\n")  # a file the reader never saw
    full = {p.name: tm.read_records(p) for p in sorted(tmp_path.glob("rank-*.jsonl"))}
    read_ahead.hand_over(ahead)
    assert loaded(tmp_path) == full
    assert [r.step for r in full["rank-1.jsonl"]] == [0, 1, 2, 3, 4, 5]
    assert read_ahead.take(tmp_path) == {}  # handed over once


def test_what_was_read_for_another_run_dir_is_not_used_and_past_the_bound_the_rest_is_read_later(tmp_path, monkeypatch):
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    (tmp_path / "a" / "rank-0.jsonl").write_text(step_line(1, 1.0) + "\n")
    ahead = ReadAhead(tmp_path / "a")
    ahead.step(10.0)
    read_ahead.hand_over(ahead)
    assert read_ahead.take(tmp_path / "b") == {} and read_ahead.take(tmp_path / "a") == {}
    (tmp_path / "a" / "rank-1.jsonl").write_text(step_line(2, 2.0) + "\n")
    full = loaded(tmp_path / "a")
    monkeypatch.setattr(read_ahead, "MAX_BYTES", len(step_line(1, 1.0)) + 5)  # room for one file
    ahead = ReadAhead(tmp_path / "a")
    ahead.step(10.0)
    assert ahead.full and sum(map(len, ahead.records.values())) == 1
    read_ahead.hand_over(ahead)
    assert loaded(tmp_path / "a") == full
