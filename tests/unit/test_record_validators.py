"""Node 0 checks each forwarded record with one validator per kind (node_wire._record_validator,
written once from telemetry.py's annotations) instead of a call per field: every field of every
kind is still checked, a bad one is named, and a good record passes unchanged."""

from __future__ import annotations

import json
from dataclasses import fields

import pytest

from ddpdoctor.probe.launch import node_wire as wire
from ddpdoctor.probe.records import telemetry as tm

WORLD = 8
RANK = 3

# One value each annotation must take, and values it must refuse (a JSON value of another type,
# or out of its bounds). A 400-digit number is valid JSON and no float.
GOOD = {"int": 7, "float": 1.5, "bool": True, "str": "x", "Site": {"file": "a.py", "line": 3, "func": "f"},
        "list": [1], "dict": {"a": 1.0}}
BAD = {"int": ["7", 1.5, True, 2 ** 31 + 1, -(2 ** 31) - 1, None],
       "float": ["1.5", True, 1e19, -1e19, 10 ** 400, None],
       "bool": [1, "true", None],
       "str": [1, "x" * (wire.MAX_TEXT * 4 + 1), None],
       "Site": [{"file": 1, "line": 3}, {"file": "a.py", "line": "3"}, "a.py:3", None],
       "list": [{}, "x", None],
       "dict": [[], "x", None]}


def base(annotation: str) -> tuple[str, bool]:
    maybe = annotation.startswith("Optional[")
    inner = annotation[len("Optional["):-1] if maybe else annotation
    return inner.split("[")[0], maybe


def fields_of_every_kind():
    for kind, cls in tm.RECORD_TYPES.items():
        for f in fields(cls):
            if kind in wire._WORLD_FIELDS and f.name in ("rank", wire._WORLD_FIELDS[kind]):
                continue  # checked against the file's rank and the launched world (test_node_wire)
            yield kind, f.name, str(f.type)


def record(kind: str, **values) -> str:
    values.setdefault("rank", RANK)
    if kind in wire._WORLD_FIELDS:
        values.setdefault(wire._WORLD_FIELDS[kind], WORLD)
    return json.dumps({"kind": kind, **values}) + "\n"


def test_every_field_of_every_kind_is_checked_and_named_when_bad():
    checked = [field_is_checked(*each) for each in fields_of_every_kind()]
    assert len(checked) > 100


def field_is_checked(kind: str, name: str, annotation: str) -> None:
    inner, maybe = base(annotation)
    assert inner in GOOD, f"{kind}.{name}: {annotation} has no test values: add them here"
    good = record(kind, **{name: GOOD[inner]})
    decoded: list = []
    assert wire.check_records(good, RANK, WORLD, decoded) == (good, 0 if kind != "step" or name != "step" else 7)
    assert decoded == [json.loads(good)]
    if maybe:
        wire.check_records(record(kind, **{name: None}), RANK, WORLD)
    for value in BAD[inner]:
        if value is None and maybe:
            continue
        with pytest.raises(wire.BadMessage, match=rf"rank {RANK}: {kind}\.{name} is "):
            wire.check_records(record(kind, **{name: value}), RANK, WORLD)


def test_a_record_without_its_fields_passes_and_the_first_bad_field_is_named():
    wire.check_records(record("step"), RANK, WORLD)
    first, second = [f.name for f in fields(tm.RECORD_TYPES["step"]) if str(f.type) == "int"][:2]
    with pytest.raises(wire.BadMessage, match=rf"step\.{first} is 'a'"):
        wire.check_records(record("step", **{second: "b", first: "a"}), RANK, WORLD)


def test_a_number_too_large_for_a_float_is_a_bad_message_not_a_crash():
    """math.isfinite raised OverflowError on such an int: out of node 0's poll, for any field or
    message checked as a float (a heartbeat's clock too)."""
    assert not wire.float_in(0.0, 1e12)(10 ** 400)
    assert not wire.float_in(0.0, 1e12)(float("nan")) and not wire.float_in(0.0, 1e12)(float("inf"))
    with pytest.raises(wire.BadMessage):
        wire.check("beat", {"now": 10 ** 400})
