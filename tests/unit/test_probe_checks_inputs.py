"""DDP301 from the model's forward inputs, DDP302 over whole passes, and the incomplete verdict of a
run that never trained: the checks and the report fed built telemetry."""

from __future__ import annotations

from ddpdoctor.core.findings import Severity
from ddpdoctor.core.registry import Skipped
from ddpdoctor.probe.records import telemetry as tm
from ddpdoctor.probe.report import build_report
from tests.helpers.telemetry_builders import RunBuilder, judge, sample

MASK, POS = "00000000000000aa", "00000000000000bb"  # the same every step, on every rank


def forward(run: RunBuilder, rank: int, iteration: int, x: str, y: str, model_id: int = 0) -> None:
    builder = run[rank]
    builder.add(tm.ForwardInputs(builder._now(), model_id, iteration, builder.steps,
                                 {"args[0]": x, "args[1]": MASK, "args[2]": POS, "kwargs.targets": y}))
    builder.train_steps(1)


def feed_inputs(run: RunBuilder, same_on_every_rank: bool, steps: int = 6) -> None:
    for rank in run.ranks:
        run[rank].ddp()
        for i in range(steps):
            seed = i if same_on_every_rank else 100 * rank + i
            forward(run, rank, i, sample(seed), sample(1000 + seed))


# DDP301 from the forward inputs -------------------------------------------------------------

def test_identical_forward_inputs_without_a_dataloader_are_reported():
    run = RunBuilder(world_size=2)
    feed_inputs(run, same_on_every_rank=True)
    [finding] = judge("DDP301", run.model())
    assert finding.severity is Severity.ERROR and finding.ranks == [0, 1]
    assert "identical inputs at steps 0-5 (6/6 training forwards)" in finding.message
    # Only the inputs that change per step are judged: the mask and position ids are left out.
    assert finding.evidence["inputs_judged"] == ["args[0]", "kwargs.targets"]
    assert finding.location.file == "train.py"  # where the DDP model was built


def test_per_rank_inputs_with_shared_constant_mask_and_positions_are_clean():
    run = RunBuilder(world_size=2)
    feed_inputs(run, same_on_every_rank=False)
    assert judge("DDP301", run.model()) == []


def test_one_varying_input_differing_across_ranks_clears_the_others():
    """A broadcast prompt that changes per step is the same on every rank, by design; the
    per-rank data beside it differs, so the ranks did not train on the same batches."""
    run = RunBuilder(world_size=2)
    for rank in run.ranks:
        run[rank].ddp()
        for i in range(6):
            forward(run, rank, i, sample(i), sample(1000 + 100 * rank + i))
    assert judge("DDP301", run.model()) == []


def test_the_same_inputs_one_step_apart_are_reported_as_reordered():
    run = RunBuilder(world_size=2)
    for rank in run.ranks:
        run[rank].ddp()
        for i in range(6):
            seed = i + rank  # rank 1 is one step ahead on the same stream
            forward(run, rank, i, sample(seed), sample(1000 + seed))
    [finding] = judge("DDP301", run.model())
    assert "the same inputs at different steps" in finding.message


def test_inputs_that_never_change_prove_nothing():
    run = RunBuilder(world_size=2)
    for rank in run.ranks:
        run[rank].ddp()
        for i in range(6):
            forward(run, rank, i, sample(0), sample(1))
    skipped = judge("DDP301", run.model())
    assert isinstance(skipped, Skipped) and "did not change" in skipped.reason


def test_dataloader_finding_takes_the_forward_inputs_as_evidence_instead_of_a_second_finding():
    run = RunBuilder(world_size=2)
    for rank in run.ranks:
        run[rank].ddp()
        run[rank].loader(sampler="RandomSampler", shuffle=True, batches=6, batch_size=2, dataset_len=12)
        for i in range(6):
            run[rank].batch([sample(2 * i), sample(2 * i + 1)])
            forward(run, rank, i, sample(i), sample(1000 + i))
    [finding] = judge("DDP301", run.model())
    assert "identical batches" in finding.message
    assert "the DDP model's inputs were the same too (6/6 training forwards)" in finding.message
    assert finding.evidence["forward_inputs"]["pairs"][0]["identical"] == 6


# DDP302 over whole passes --------------------------------------------------------------------

def pass_over(run: RunBuilder, rank: int, epoch: int, sampler_epoch: int, peek: bool) -> None:
    """One epoch of a tutorial loop: an optional peek (one batch, no step), then a full pass."""
    builder = run[rank]
    iterators = sum(1 for r in builder.records if isinstance(r, tm.Loader))
    if peek:
        builder.loader(epoch=iterators, sampler_epoch=sampler_epoch if epoch == 0 else sampler_epoch - 1,
                       batches=4, batch_size=2, dataset_len=16)
        builder.batch([sample(0), sample(1)], epoch=iterators)
        iterators += 1
    builder.loader(epoch=iterators, sampler_epoch=sampler_epoch, batches=4, batch_size=2, dataset_len=16)
    for b in range(4):
        seed = 10 * sampler_epoch + 4 * rank + b
        builder.batch([sample(seed), sample(seed + 100)], epoch=iterators)
        builder.step()
    builder.epoch_end(epoch=iterators, batches_seen=4)


def test_a_peek_before_set_epoch_is_not_an_epoch():
    run = RunBuilder(world_size=2)
    for rank in run.ranks:
        for epoch in range(3):
            pass_over(run, rank, epoch, sampler_epoch=epoch, peek=True)
    assert judge("DDP302", run.model()) == []


def test_a_peek_does_not_hide_set_epoch_never_called():
    run = RunBuilder(world_size=2)
    for rank in run.ranks:
        for epoch in range(3):
            pass_over(run, rank, epoch, sampler_epoch=0, peek=True)
    [finding] = judge("DDP302", run.model())
    assert "never called" in finding.message and "epochs 1, 2" in finding.message
    assert finding.evidence["passes"] == {"0": 3, "1": 3}


def test_set_epoch_after_the_loop_is_reported_as_too_late():
    run = RunBuilder(world_size=2)
    for rank in run.ranks:
        for epoch, value in enumerate([0, 0, 1, 2]):
            pass_over(run, rank, epoch, sampler_epoch=value, peek=False)
    [finding] = judge("DDP302", run.model())
    assert "too late" in finding.message and "epoch 1 " in finding.message
    assert finding.evidence["set_epoch"] == "late"
    assert "before the epoch's loop" in finding.hint


# Incomplete: a job that never trained ---------------------------------------------------------

def test_ranks_that_returned_before_training_make_the_report_incomplete_with_their_last_lines():
    run = RunBuilder(world_size=2, formed=False, cpu=True)
    for rank in run.ranks:
        run[rank].add(tm.DeviceQuery(run[rank]._now(), "torch.accelerator.device_count()", "2", None))
        run[rank].add(tm.OutputTail(run[rank]._now(), ["Unable to locate sufficient 2 gpus. Exiting."]))
        run[rank].end("script_exit")
    run.outcome("completed")
    report = build_report(run.model(), Severity.ERROR, set())
    assert report.status == "incomplete" and report.exit_code == 4
    assert "INCOMPLETE: the script never trained" in report.header
    reasons = "\n".join(report.incomplete_because)
    assert "0 optimizer steps, 0 DataLoader batches and 0 collectives" in reasons
    assert "ranks 0, 1 printed last: Unable to locate sufficient 2 gpus. Exiting." in reasons
    assert "torch.accelerator.device_count() -> 2" in reasons


def test_a_script_that_trained_fewer_steps_than_the_budget_is_judged_on_what_ran():
    run = RunBuilder(world_size=2, max_steps=20)
    for rank in run.ranks:
        run[rank].ddp()
        run[rank].train_steps(3)
        run[rank].end("script_exit")
    run.outcome("completed")
    report = build_report(run.model(), Severity.ERROR, set())
    assert report.incomplete_because == [] and report.status == "pass"
    assert any("returned after 3 of the 20 steps" in note for note in report.notes)


def test_a_crash_before_training_is_left_to_the_crash_check():
    run = RunBuilder(world_size=2)
    run[0].end("script_exit")
    run[1].crash().end("crash")
    run.outcome("crashed", exit_codes={0: 0, 1: 1})
    report = build_report(run.model(), Severity.ERROR, set())
    assert "DDP504" in {f.code for f in report.findings}
    # Rank 0 returned without training: said, though the crash decides the verdict.
    assert report.status == "fail"


def test_set_epoch_called_with_a_constant_is_told_from_never_called():
    run = RunBuilder(world_size=2)
    for rank in run.ranks:
        for epoch in range(3):
            pass_over(run, rank, epoch, sampler_epoch=0, peek=True)
    for rank in run.ranks:  # the sampler counted its set_epoch calls: one per epoch
        for n, record in enumerate(r for r in run[rank].records if isinstance(r, tm.Loader)):
            record.set_epoch_calls = n // 2
    [finding] = judge("DDP302", run.model())
    assert "is called, but always with 0" in finding.message
    assert finding.evidence["set_epoch"] == "constant"
    assert finding.hint.startswith("pass the epoch number")
