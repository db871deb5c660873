"""One report, each derived thing computed once: the checks and the report's tables share what
the analysis derives from the records (each rank's type index, the lined-up collectives, every
rank's steps, the job's step times, the bucket and FSDP numbers, the stacks and the file names
they are shortened to, the DataLoader epochs), instead of each question deriving it again (at 1,024 ranks that was most
of the analysis: benchmarks/gather_scale.py measures it). Counted, not timed."""

from __future__ import annotations

from collections import Counter

import pytest

from ddpdoctor.core.findings import Severity
from ddpdoctor.probe.analysis import (collective_alignment, fsdp_comm, loaders, outside_steps, skipped_backward,
                                      stack_groups)
from ddpdoctor.probe.analysis.perf import buckets, steps
from ddpdoctor.probe.report import build_report
from ddpdoctor.probe.run_model import loaded_run
from tests.helpers.telemetry_builders import RunBuilder, faulthandler_dump, sample, waiting_in

WORLD = 4

# module, function: each derives one thing from the whole run (or, the index, from one rank).
COUNTED = [(collective_alignment, "_divergences"), (steps, "_step_perf"), (buckets, "_model_comm"),
           (stack_groups, "_site_files"), (stack_groups, "_rank_stacks"), (loaders, "_loader_epochs"),
           (skipped_backward, "_skipped"), (outside_steps, "_step_times"), (fsdp_comm, "_fsdp_comm"),
           (loaded_run, "records_by_type")]


def stalled_run() -> RunBuilder:
    """Four DDP ranks that read batches and train, then rank 3 never joins the others' last
    all_reduce: every check family has something to read (steps, buckets, epochs, stacks)."""
    run = RunBuilder(world_size=WORLD)
    run.all("ddp")
    run.all("loader")
    for rank in range(WORLD):
        for step in range(12):
            run[rank].batch([sample(100 * rank + 4 * step + i) for i in range(4)])
            run[rank].train_steps(1, buckets=2)
            run[rank].collective()
    for rank in range(WORLD - 1):
        run[rank].collective(done=False)
    run[WORLD - 1].signal_dump = faulthandler_dump(line=61)
    return run.outcome("stalled", exit_codes={r: -15 for r in range(WORLD)},
                       stacks=[waiting_in(r) for r in range(WORLD - 1)], stall_s=12.0, stall_timeout_s=10.0)


@pytest.fixture
def calls(monkeypatch) -> Counter:
    counted: Counter = Counter()
    for module, name in COUNTED:
        real = getattr(module, name)

        def counting(*args, _real=real, _name=name, **kwargs):
            counted[_name] += 1
            return _real(*args, **kwargs)

        monkeypatch.setattr(module, name, counting)
    return counted


def test_one_report_derives_each_thing_once_and_indexes_each_rank_once(calls):
    model = stalled_run().model()
    report = build_report(model, Severity.ERROR, set())
    assert "DDP502" in {f.code for r in report.results for f in r.findings}  # the stall was judged
    assert calls["records_by_type"] == WORLD
    once = {name: calls[name] for _, name in COUNTED if name != "records_by_type"}
    assert once == {name: 1 for name in once}


def test_a_second_report_of_the_same_run_derives_nothing_again(calls):
    model = stalled_run().model()
    first = build_report(model, Severity.ERROR, set())
    before = Counter(calls)
    second = build_report(model, Severity.ERROR, set())
    assert calls == before
    assert [r.to_dict() for r in second.results] == [r.to_dict() for r in first.results]


def test_changed_records_or_launch_are_derived_again(calls):
    """What a value is derived from is its key: a new record, or a --cpu meta, is seen."""
    model = stalled_run().model()
    build_report(model, Severity.ERROR, set())
    before = Counter(calls)
    model.ranks[0].records = model.ranks[0].records[:-1]  # rank 0's lone all_reduce undone
    model.meta.cpu = True
    build_report(model, Severity.ERROR, set())
    assert calls["_divergences"] == before["_divergences"] + 1
    assert calls["_model_comm"] == before["_model_comm"] + 1
    assert calls["records_by_type"] == before["records_by_type"] + 1  # rank 0's only


def test_what_the_paused_collector_let_build_is_not_walked_again_as_young_nor_kept_frozen(monkeypatch):
    """The records built while the collector was paused leave the young generation at the end
    (the collector's next pass would walk them all once more), and nothing stays frozen."""
    import gc

    from ddpdoctor.probe.run_model.loaded_run import collector_paused

    assert gc.isenabled()
    host_frozen = gc.get_freeze_count()  # tests/unit's conftest freezes what collection built
    gc.unfreeze()
    monkeypatch.setattr(loaded_run, "_host_freezes", False)  # as in a process that never froze
    try:
        with collector_paused():
            built = [[i] for i in range(50_000)]
        assert gc.isenabled() and gc.get_freeze_count() == 0
        assert any(o is built[0] for o in gc.get_objects(generation=2))  # the oldest, not walked as young
        del built
    finally:
        if host_frozen:
            gc.freeze()


def test_the_paused_collector_leaves_a_freeze_of_the_hosts_as_it_was(monkeypatch):
    """A host that froze objects of its own (a forking server, a test session) keeps them frozen:
    gc.unfreeze() would thaw all of them, and every later full collection walk them again."""
    import gc

    from ddpdoctor.probe.run_model.loaded_run import collector_paused

    monkeypatch.setattr(loaded_run, "_host_freezes", False)  # not yet seen: found at the end
    hosts = [[i] for i in range(1_000)]
    gc.freeze()
    frozen = gc.get_freeze_count()
    with collector_paused():
        built = [[i] for i in range(50_000)]
    # None thawed (that would be 0), none of ours frozen (50,000 more). A frozen object can still
    # be freed by its reference count meanwhile (the full suite's worker dropped 2 of 718,311).
    assert gc.isenabled() and frozen - 1_000 <= gc.get_freeze_count() <= frozen
    assert not any(o is hosts[0] for o in gc.get_objects())  # still frozen: no generation holds it
    assert any(o is built[0] for o in gc.get_objects())
