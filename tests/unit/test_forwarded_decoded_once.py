"""Node 0 decodes each record another node forwards once: the gather checks it
(node_wire.check_records) and hands the checked record to the watchdogs (the launcher's and the
live view's ProgressWatch), which no longer read back the files the gather writes; the files of
node 0's own ranks are still followed. At 1,024 ranks every record decoded twice or three times
made the stall verdict seconds late."""

from __future__ import annotations

import json

import pytest

from tests.helpers.gather_peer import FakeNode, until
from ddpdoctor.probe.launch.node_gather import NodeGather
from ddpdoctor.probe.launch.watchdog import ProgressWatch
from tests.helpers.ports import free_port

JOB = "job-under-test"
WORLD = 4  # 2 nodes of 2 ranks: node 1 runs ranks 2 and 3


def lines(rank: int, first_t: float, steps: int) -> list[str]:
    """A rank's start and `steps` steps, each with its own t (the key the decodes are counted by)."""
    out = [{"kind": "start", "t": first_t, "rank": rank, "local_rank": rank % 2, "world_size": WORLD,
            "pid": 9, "host": "h", "script": "s", "argv": [], "python": "3", "torch": "2"}]
    out += [{"kind": "step", "t": first_t + k, "step": k, "backward_iterations": 1, "allreduce_rounds": 1}
            for k in range(1, steps + 1)]
    return [json.dumps(r) for r in out]


@pytest.fixture
def decodes(monkeypatch):
    """t -> how many times a telemetry record with that t was decoded, wherever (every decoder
    of the JSON-lines codec and json.loads end in JSONDecoder.raw_decode)."""
    seen: dict[float, int] = {}
    real = json.JSONDecoder.raw_decode

    def counting(self, s, idx=0):
        value, end = real(self, s, idx)
        if isinstance(value, dict) and "kind" in value and isinstance(value.get("t"), float):
            seen[value["t"]] = seen.get(value["t"], 0) + 1
        return value, end

    monkeypatch.setattr(json.JSONDecoder, "raw_decode", counting)
    return seen


def test_each_forwarded_line_is_decoded_once_for_the_gather_and_both_watchdogs(tmp_path, decodes):
    gather = NodeGather(str(tmp_path), free_port(), 2, "node0", "127.0.0.1", 2, job=JOB)
    try:
        watch, live_watch = ProgressWatch(str(tmp_path), 5.0), ProgressWatch(str(tmp_path), 5.0)
        gather.watches += [watch, live_watch]
        node = FakeNode(gather.port, JOB)
        assert node.hello(node_rank=1, nproc=2)["t"] == "welcome"
        sent = {2: lines(2, 100.5, 3), 3: lines(3, 200.5, 2)}
        for rank, rank_lines in sent.items():
            node.send("file", name=f"rank-{rank}.jsonl", data="\n".join(rank_lines) + "\n")
        # Node 0's own rank 0 writes its file itself: followed from the file, as before.
        (tmp_path / "rank-0.jsonl").write_text("\n".join(lines(0, 300.5, 1)) + "\n")
        written = tmp_path / "rank-3.jsonl"
        assert until(lambda: (gather.poll(), written.exists() and written.read_text().count("\n") == 3)[1])
        for _ in range(3):  # polls after the first find nothing new
            watch.poll()
            live_watch.poll()
        forwarded = [100.5 + k for k in range(4)] + [200.5 + k for k in range(3)]
        assert {t: decodes.pop(t, 0) for t in forwarded} == {t: 1 for t in forwarded}
        for w in (watch, live_watch):
            assert {r: s.steps for r, s in w.ranks.items()} == {0: 1, 2: 3, 3: 2}
            assert w.steps == 3 and w.heard
        # Rank 0's lines: read from its file by each watchdog (no gather in between).
        assert set(decodes.values()) == {2}
        assert (tmp_path / "rank-2.jsonl").read_text().splitlines() == sent[2]
    finally:
        gather.close()


def test_a_forwarded_rank_is_not_read_back_from_the_file_the_gather_writes(tmp_path):
    watch = ProgressWatch(str(tmp_path), 5.0)
    record = {"kind": "step", "t": 1.0, "step": 4, "backward_iterations": 1, "allreduce_rounds": 1}
    watch.forwarded(5, [record])
    (tmp_path / "rank-5.jsonl").write_text(json.dumps(record) + "\n")
    assert watch.poll() and watch.ranks[5].steps == 4 and not watch.tails
    assert not watch.poll()  # the file grew, but its lines came by the inbox
