"""The one rank-file reader and the JSON-lines codec: whole lines only, the kind from the
record's own field, at most a torn last line skipped, and only what was appended is read."""

from __future__ import annotations

import math

from ddpdoctor.probe import jsonl
from ddpdoctor.probe import telemetry as tm
from ddpdoctor.probe.rank_files import RankFileTail, read_all


def test_a_tail_hands_out_whole_lines_and_keeps_the_torn_one_for_later(tmp_path):
    path = tmp_path / "rank-0.jsonl"
    step = tm.encode(tm.Step(1.0, 1, 1, 1))
    path.write_bytes(step + step[:10])
    tail = RankFileTail(path)
    assert tail.grew()
    assert [line.kind for line in tail.records()] == ["step"]
    assert tail.offset == len(step)
    assert not tail.grew() and tail.records() == []
    with open(path, "ab") as handle:
        handle.write(step[10:])
    assert tail.grew()
    assert [line.data["step"] for line in tail.records()] == [1]


def test_the_kind_comes_from_the_field_never_from_the_text(tmp_path):
    path = tmp_path / "rank-0.jsonl"
    path.write_bytes(tm.encode(tm.Note(1.0, 'said {"kind":"step"} here')) + b'["kind"]\n' + b"{not json\n")
    assert [line.kind for line in RankFileTail(path).records()] == ["note"]


def test_a_finished_file_counts_a_whole_last_line_without_its_newline(tmp_path):
    path = tmp_path / "rank-0.jsonl"
    note = tm.encode(tm.Note(1.0, "x"))
    path.write_bytes(note + note.rstrip(b"\n"))
    assert len(list(read_all(path))) == 2
    path.write_bytes(note + note[:-5])
    assert len(tm.read_records(path)) == 1
    assert list(read_all(tmp_path / "missing.jsonl")) == []


def test_the_codec_is_strict_only_where_asked():
    assert jsonl.encode({"kind": "note", "x": 1}) == b'{"kind":"note","x":1}\n'
    assert jsonl.decode(jsonl.encode({"v": math.nan}))["v"] != 0
    assert jsonl.decode(b'{"v":NaN}', strict=True) is None
    assert jsonl.decode(b"[1]") is None and jsonl.decode(b"{torn") is None
    assert jsonl.decode(b"[" * 100000 + b"]" * 100000, strict=True) is None
