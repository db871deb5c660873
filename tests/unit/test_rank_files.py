"""The one rank-file reader and the JSON-lines codec: whole lines only, the kind from the
record's own field, at most a torn last line skipped, and only what was appended is read."""

from __future__ import annotations

import math

from ddpdoctor.probe.records import jsonl
from ddpdoctor.probe.records import telemetry as tm
from ddpdoctor.probe.records.rank_files import RankFileTail, read_all


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


def test_a_whole_file_decoded_in_one_pass_is_what_each_line_gives():
    """jsonl.objects (one pass over a rank file's text) against jsonl.decode line by line, on
    lines good and bad: spaces around a value, a value spanning lines, two values on a line,
    non-objects, NaN, deep nesting, a torn last line, blank and CR-ended lines."""
    import random

    pieces = ['{"kind":"step","step":1}', ' {"kind":"note"} ', '{"a":', '1}', '{"a":1}{"b":2}',
              '{"a":1},{"b":2}', "[1]", "3", '"s"', '{"v":NaN}', "{" * 3000 + "}" * 3000,
              '{"kind":"x"}\r', "", "{torn", '{"s":"a\\nb"}', '{"u":"\\u00e9"}', "   "]
    rng = random.Random(7)
    for _ in range(300):
        lines = [rng.choice(pieces) for _ in range(rng.randint(0, 12))]
        text = "\n".join(lines) + rng.choice(["", "\n"])
        one_by_one = [d for d in (jsonl.decode(line) for line in text.split("\n") if line) if d is not None]
        assert list(jsonl.objects(text)) == one_by_one, lines


def test_bad_bytes_in_a_file_are_replaced_as_line_by_line(tmp_path):
    path = tmp_path / "rank-0.jsonl"
    path.write_bytes(b'{"kind":"note","t":1,"text":"caf\xc3"}\n'  # a character cut short
                     b'{"kind":"note","t":2,"text":"caf\xc3\xa9"}\n'
                     b'{"kind":"note","t":3,"text":"\xff"}\n')
    assert [line.data["text"] for line in read_all(path)] == ["caf\ufffd", "caf\u00e9", "\ufffd"]
