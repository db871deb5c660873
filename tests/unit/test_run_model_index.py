"""What the run model keeps so a large world is judged once, not once per question: a rank's
records indexed by type, and what several checks derive from the records (the lined-up
collectives) computed once per model, again when the records change."""

from __future__ import annotations

from ddpdoctor.probe.records import telemetry as tm
from ddpdoctor.probe.analysis.collective_alignment import divergences
from ddpdoctor.probe.run_model.loaded_run import RankRun
from tests.helpers.telemetry_builders import RunBuilder


def rank_with_records() -> RankRun:
    run = RunBuilder(world_size=1)
    run[0].start().init().collective().train_steps(3).collective(done=False).end()
    return run.model().ranks[0]


def test_the_index_answers_as_a_scan_of_the_records_does():
    rank = rank_with_records()
    for cls in {type(r) for r in rank.records} | {tm.Crash, tm.Memory}:
        scanned = [r for r in rank.records if isinstance(r, cls)]
        assert rank.of(cls) == scanned
        assert rank.first(cls) is (scanned[0] if scanned else None)
        assert rank.last(cls) is (scanned[-1] if scanned else None)
    assert rank.of(object) == rank.records  # not one record type: scanned
    assert rank.of(tm.Step) is not rank.of(tm.Step)  # the caller's own list


def test_replaced_or_extended_records_are_indexed_again():
    rank = rank_with_records()
    assert rank.steps == 3
    rank.records = [r for r in rank.records if not isinstance(r, tm.Step) or r.step < 3]
    assert rank.steps == 2
    rank.records.append(tm.Step(9.0, 7, 7, 7))
    assert rank.steps == 7


def test_the_lined_up_collectives_are_computed_once_per_model_and_again_when_records_change():
    run = RunBuilder(world_size=2)
    run.all("init")
    run[0].collective().collective(op="broadcast", done=False)
    run[1].collective()
    model = run.outcome("stalled", exit_codes={0: -15, 1: -15}).model()
    first = divergences(model)
    assert [d.kind for d in first] == ["skipped"]
    assert divergences(model) is first  # DDP501, DDP502, DDP503 share it
    model.ranks[1].records = model.ranks[1].records + [
        tm.Collective(9.0, "WORLD", None, 1, "broadcast", [[3]], ["float32"], 0, None, None)]
    assert divergences(model) == []
