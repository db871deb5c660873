"""The gather port's schema and framing (launch/node_wire.py): what a peer may say, checked
before anything of it is used."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ddpdoctor.probe.launch import node_wire as wire
from ddpdoctor.probe.records.rundir import rank_of_name

KEY = wire.job_token("a-shared-secret")


def roundtrip(kind: str, sender: wire.Codec, receiver: wire.Codec, allowed=None, **fields):
    line = sender.encode(kind, fields).rstrip(b"\n")
    return receiver.decode(line, allowed or frozenset({kind}))


def test_rank_names_are_ascii_digits_without_leading_zeros():
    assert rank_of_name("rank-0.jsonl") == 0
    assert rank_of_name("rank-12.stack") == 12
    for bad in ("rank-\u0660.jsonl", "rank-\u0661\u0662.jsonl", "rank-007.jsonl", "rank-00.jsonl",
                "rank-12345678.jsonl", "rank--1.jsonl", "rank-1.jsonl\n", "../rank-1.jsonl", 7, None):
        assert rank_of_name(bad) is None, bad


@pytest.mark.parametrize("kind, fields", [
    ("stacks", {"id": [1]}),
    ("stacks_reply", {"id": 1, "stacks": "many"}),
    ("verdict", {"exit_code": "zero", "report": {}, "where": "x"}),
    ("verdict", {"exit_code": True, "report": {}, "where": "x"}),
    ("hello", {"node_rank": 1, "nproc": 10 ** 7, "host": "h", "addr": "a", "nonce": "ab" * 16, "challenge": "cd" * 16}),
    ("hello", {"node_rank": "1", "nproc": 1, "host": "h", "addr": "a", "nonce": "ab" * 16, "challenge": "cd" * 16}),
    ("hello", {"node_rank": 1, "nproc": 1, "host": "h", "addr": "a", "nonce": "ab" * 16}),  # no challenge answered
    ("end", {"reason": ["x"]}),
    ("beat", {"now": "soon"}),
])
def test_malformed_but_valid_json_is_a_bad_message(kind, fields):
    with pytest.raises(wire.BadMessage):
        roundtrip(kind, wire.Codec(None, "j"), wire.Codec(None, "j"), **fields)


def test_a_final_with_exit_codes_of_other_ranks_or_odd_keys_is_refused():
    for codes in ({"x": 0}, {"\u0661": 1}, {"01": 1}, {"9": 0}, {"1": "zero"}):
        with pytest.raises(wire.BadMessage):
            wire.check_outcome({"status": "completed", "exit_codes": codes}, {1})
    good = wire.check_outcome({"status": "crashed", "exit_codes": {"1": 1}, "log_tail": "a\x1b[2Jb"}, {1})
    assert good["exit_codes"] == {1: 1} and "\x1b" not in good["log_tail"]


def test_with_a_token_only_signed_messages_of_this_job_in_order_pass():
    node, node0 = wire.Codec(KEY, "job"), wire.Codec(KEY, "job")
    assert roundtrip("beat", node, node0, now=1.0)["now"] == 1.0
    unsigned = wire.Codec(None, "job").encode("beat", {"now": 1.0}).rstrip(b"\n")
    with pytest.raises(wire.BadMessage, match="without a gather token"):
        node0.decode(unsigned, frozenset({"beat"}))
    forged = wire.Codec(wire.job_token("guessed-secret"), "job")
    forged.sent = node.sent
    with pytest.raises(wire.BadMessage, match="not signed"):
        roundtrip("beat", forged, node0, now=1.0)
    replay = node.encode("beat", {"now": 2.0}).rstrip(b"\n")
    node0.decode(replay, frozenset({"beat"}))
    with pytest.raises(wire.BadMessage, match="out of order"):
        node0.decode(replay, frozenset({"beat"}))


def test_another_jobs_messages_and_another_connections_are_refused():
    with pytest.raises(wire.BadMessage, match="another job"):
        roundtrip("beat", wire.Codec(None, "job-a"), wire.Codec(None, "job-b"), now=1.0)
    node, node0 = wire.Codec(None, "j"), wire.Codec(None, "j")
    node.start_session("aa" * 8, "bb" * 8, node_side=True)
    node0.start_session("aa" * 8, "cc" * 8, node_side=False)
    with pytest.raises(wire.BadMessage, match="another connection"):
        roundtrip("beat", node, node0, now=1.0)


def test_the_job_identity_differs_with_the_script_the_nodes_or_slurm_job():
    base = wire.job_identity("train.py", 2, "10.0.0.1:29501", env={})
    assert base == wire.job_identity("/other/dir/train.py", 2, "10.0.0.1:29501", env={})
    assert base != wire.job_identity("eval.py", 2, "10.0.0.1:29501", env={})
    assert base != wire.job_identity("train.py", 3, "10.0.0.1:29501", env={})
    assert base != wire.job_identity("train.py", 2, "10.0.0.1:29501", env={"SLURM_JOB_ID": "7"})


def test_forwarded_records_are_of_their_rank_in_the_launched_world_and_typed():
    start = {"kind": "start", "t": 1.0, "rank": 1, "local_rank": 0, "world_size": 2, "pid": 5,
             "host": "h\x1b]0;pwned\x07", "script": "s", "argv": [], "python": "3", "torch": "2"}
    cleaned = json.loads(wire.check_records(json.dumps(start) + "\n", 1, 2)[0])
    assert cleaned["host"] == "h?]0;pwned?"
    for bad in ({**start, "world_size": 10 ** 7}, {**start, "rank": 0}, {**start, "pid": "many"},
                {"kind": "step", "t": 1.0, "step": "many"}, {"kind": "nope"}, {"kind": []}, [1]):
        with pytest.raises(wire.BadMessage):
            wire.check_records(json.dumps(bad) + "\n", 1, 2)
    with pytest.raises(wire.BadMessage):
        wire.check_records("{not json\n", 1, 2)
    steps = "".join(json.dumps({"kind": "step", "t": 1.0, "step": n, "backward_iterations": 1,
                                "allreduce_rounds": 1}) + "\n" for n in (3, 7, 5))
    assert wire.check_records(steps, 1, 2)[1] == 7  # the node's progress, from the records' fields


def test_every_recorded_telemetry_file_passes_the_schema():
    """The schema must never drop an honest node: every rank file recorded from real runs passes."""
    root = Path(__file__).resolve().parents[1] / "probe_recordings"
    files = sorted(root.glob("*/rank-*.jsonl"))
    assert files
    for path in files:
        rank = rank_of_name(path.name)
        world = json.loads((path.parent / "probe.json").read_text()).get("world_size", 2)
        lines = [ln for ln in path.read_text().splitlines() if ln.strip()]
        worlds = {json.loads(ln).get("world_size") for ln in lines if '"kind":"init"' in ln}
        world = next(iter(worlds - {None}), world)
        wire.check_records("\n".join(lines) + "\n", rank, world)


def test_clean_replaces_control_and_bidi_characters_but_keeps_newlines():
    assert wire.clean("a\x1b[31mb\nc\td\x9b\u202ee") == "a?[31mb\nc\td??e"
    assert wire.clean_deep({"k\x07": ["\x00x", 1]}) == {"k?": ["?x", 1]}


def test_a_heartbeat_flood_drops_the_link_and_a_heartbeat_a_second_keeps_it():
    # Beats are never queued, but each costs a decode on node 0's CPU (the job's): a flood is a
    # bad message, the link dropped; a peer's normal beat keeps it and sets its clock offset.
    import socket
    import time

    from ddpdoctor.probe.launch.node_link import BEAT_BURST, Link

    def link_pair():
        with socket.create_server(("127.0.0.1", 0)) as server:
            theirs = socket.create_connection(server.getsockname())
            ours, _ = server.accept()
        return Link(ours, wire.Codec(None, "j"), wire.FROM_NODE, "-test"), theirs, wire.Codec(None, "j")

    link, peer, codec = link_pair()
    try:
        peer.sendall(b"".join(codec.encode("beat", {"now": time.time()}) for _ in range(BEAT_BURST * 5)))
        deadline = time.monotonic() + 10
        while link.bad_message is None and time.monotonic() < deadline:
            time.sleep(0.01)
        assert link.bad_message and "heartbeats faster" in link.bad_message and not link.alive
    finally:
        link.close()
        peer.close()
    link, peer, codec = link_pair()
    try:
        for _ in range(3):
            peer.sendall(codec.encode("beat", {"now": time.time() + 2.0}))
        deadline = time.monotonic() + 10
        while link.clock_offset_s is None and time.monotonic() < deadline:
            time.sleep(0.01)
        assert link.alive and link.bad_message is None and 1.0 < link.clock_offset_s < 3.0
    finally:
        link.close()
        peer.close()
