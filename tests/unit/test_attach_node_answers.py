"""What a node sends node 0 in a multi-node attach is a peer's word: checked for type and range,
bounded in count, its text cleaned; a node whose answer fails is a lost node (never a pass).
The child runner that collects a node's output: tests/integration/test_child_runner.py."""

from __future__ import annotations

import pytest

from ddpdoctor.attach.observation import MAX_FRAMES, Observation, RankObservation, most_samples
from ddpdoctor.attach.judge import judge
from ddpdoctor.attach.nodes import _answers, merge
from ddpdoctor.probe.launch.node_wire import BadMessage
from ddpdoctor.probe.run_model.outcome import Frame

WAIT = (Frame("barrier", "torch/distributed/distributed_c10d.py", 4800), Frame("<module>", "train.py", 53))


def node(host: str, ranks: list[int], world: int = 2, stacks: int = 20, **proc) -> dict:
    observed = [RankObservation(r, 100 + r, host, [WAIT] * stacks,
                                proc={"seconds": 3.0, "io_calls": 500, "io_quiet_s": 0.1, **proc})
                for r in ranks]
    return {"host": host, "node_rank": ranks[0], "observation": Observation("job", world, 3.0, observed).to_dict()}


def test_two_valid_nodes_merge_into_one_job():
    merged = merge([node("a", [0]), node("b", [1])], 3.0, 2, rate=50)
    assert [r.rank for r in merged.ranks] == [0, 1] and not merged.lost_nodes


@pytest.mark.parametrize("spoil, why", [
    (lambda o: o["ranks"][0]["proc"].update(io_quiet_s="forever"), "proc's io_quiet_s is out of range"),
    (lambda o: o["ranks"][0]["proc"].update(io_calls=-5), "proc's io_calls is out of range"),
    (lambda o: o["ranks"][0].update(rank="1"), "a rank or pid is not a number in range"),
    (lambda o: o["ranks"][0].update(rank=7), "a rank beyond the world size of 2"),
    (lambda o: o["ranks"][0].update(stacks=[[["f", "x.py", 1]]] * 10_000), "more than 316 stacks"),
    (lambda o: o["ranks"][0]["stacks"][0].append(["f", "x.py", "nine"]), "a frame is not [function, file, line]"),
    (lambda o: o.update(ranks=[o["ranks"][0]] * 2000), "ranks is not a list of at most 1024"),
    (lambda o: o.update(notes=["n"] * 100), "notes are not at most 64 texts"),
    (lambda o: o.update(world_size=0), "job, world_size, duration_s or nodes is malformed"),
])
def test_a_node_whose_observation_is_not_valid_is_left_out_and_the_verdict_is_no_pass(spoil, why):
    bad = node("b", [1])
    spoil(bad["observation"])
    merged = merge([node("a", [0]), bad], 3.0, 2, rate=50)
    assert merged.lost_nodes == ["b"] and [r.rank for r in merged.ranks] == [0]
    assert any(n.startswith("node b: sent an observation that is not valid (") and why in n
               for n in merged.notes), merged.notes
    verdict = judge(merged)
    assert "passed" not in {r.status for r in verdict.results if r.spec.code in ("DDP503", "DDP601")}


def test_a_node_that_disagrees_on_the_world_size_is_left_out():
    merged = merge([node("a", [0], world=2), node("b", [1], world=4)], 3.0, 2, rate=50)
    assert merged.lost_nodes == ["b"] and "says the job has 4 ranks" in merged.notes[0]


def test_a_peer_text_is_cleaned_and_a_deep_stack_cut_to_its_innermost_frames():
    answer = node("a\x1b[2J", [0])
    frames = [["f\x1b]0;pwned\x07", "train\u202e.py", i] for i in range(MAX_FRAMES + 300)]
    answer["observation"]["ranks"][0]["stacks"] = [frames]
    answer["observation"]["notes"] = ["look \x1b[31mred"]
    merged = merge([answer], 3.0, 1, rate=50)
    stack = merged.ranks[0].stacks[0]
    assert len(stack) == MAX_FRAMES and stack[0].line == 0
    assert "\x1b" not in stack[0].func and "\u202e" not in stack[0].file
    assert all("\x1b" not in n for n in merged.notes) and "\x1b" not in merged.ranks[0].host


def test_unknown_proc_keys_are_dropped_and_the_rest_kept():
    answer = node("a", [0], extra="x" * 100)
    obs = Observation.from_dict(answer["observation"], most_samples(3.0, 50))
    assert "extra" not in obs.ranks[0].proc and obs.ranks[0].proc["io_calls"] == 500


def test_answers_that_are_not_objects_are_skipped():
    marker = "DDPDOCTOR-ATTACH-NODE "
    out = "\n".join([marker + "[1, 2]", marker + "{not json", marker + '{"host": "a", "error": "x"}',
                     marker + "[" * 100_000])
    assert _answers(out) == [{"host": "a", "error": "x"}]


def test_an_error_answer_is_a_lost_node_with_its_text_cleaned():
    merged = merge([{"host": "b", "error": "boom\x1b[1m"}, {"host": 5}], 3.0, 2, rate=50)
    assert merged.lost_nodes == ["b", "?"] and merged.notes[:2] == ["node b: boom?[1m", "node ?: no answer"]


def test_bad_message_is_a_value_error_the_merge_catches_and_nothing_else():
    with pytest.raises(BadMessage):
        Observation.from_dict([], 10)


STUCK = (Frame("wait_for_file_that_never_comes", "train.py", 35), Frame("<module>", "train.py", 50))


def local_node(host: str, ranks: list[int], base: int, world: int = 4, stack=WAIT, pid0: int = 100,
               **local) -> dict:
    observed = [RankObservation(r, pid0 + r, host, [stack] * 20, local_rank=local.get(str(r), r - base),
                                proc={"seconds": 3.0, "io_calls": 500, "io_quiet_s": 0.1})
                for r in ranks]
    return {"host": host, "observation": Observation("job", world, 3.0, observed).to_dict()}


def test_a_node_claiming_another_nodes_rank_is_dropped_and_the_real_stack_kept():
    hostile = local_node("a", [0, 1, 3], base=0, pid0=100)  # rank 3 is not in its block
    honest = local_node("b", [2, 3], base=2, pid0=200)
    honest["observation"]["ranks"][1]["stacks"] = [[[f.func, f.file, f.line] for f in STUCK]] * 20
    merged = merge([hostile, honest], 3.0, 2, rate=50)
    three = [r for r in merged.ranks if r.rank == 3]
    assert len(three) == 1 and three[0].pid == 203 and three[0].stacks[0] == STUCK
    assert any("node a claims rank 3" in n and "not its own" in n for n in merged.notes)


def test_a_rank_two_nodes_claim_as_different_processes_is_believed_from_neither():
    # each claim is consistent on its own (a forged whole block): neither is believed, and the
    # verdict cannot pass on a rank no one honestly observed
    first = local_node("a", [0, 1], base=0, pid0=100)
    second = local_node("b", [1], base=1, pid0=300)
    merged = merge([first, second], 3.0, 2, rate=50)
    assert [r.rank for r in merged.ranks] == [0]
    assert any("rank 1 is claimed by several nodes" in n for n in merged.notes)
    assert judge(merged).state != "healthy"


def test_the_same_process_reported_by_two_names_of_one_machine_counts_once():
    merged = merge([local_node("a", [0, 1], base=0), local_node("a", [0, 1], base=0)], 3.0, 2, rate=50)
    assert [r.rank for r in merged.ranks] == [0, 1]
    assert not [n for n in merged.notes if "claim" in n]


def test_a_node_answer_beyond_the_bound_is_not_parsed_and_the_node_is_lost():
    import resource
    import time

    from ddpdoctor.attach.observation import NODE_MARKER
    from ddpdoctor.attach.nodes import MAX_ANSWER

    huge = NODE_MARKER + '{"host": "b", "observation": {"notes": ["' + "x" * (MAX_ANSWER + 10) + '"]}}\n'
    before, started = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, time.process_time()
    [answer] = _answers(huge)
    assert "more than 32 MiB: left out" in answer["error"]
    assert time.process_time() - started < 5
    assert resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before < 300 * 1024  # KiB: no parse
    merged = merge([node("a", [0]), {"host": "b", **answer}], 3.0, 2, rate=50)
    assert merged.lost_nodes == ["b"] and judge(merged).state != "healthy"
