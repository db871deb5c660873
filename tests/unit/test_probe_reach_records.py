"""The boundary line, step-interval hints and statement coverage of a probe report, from built
telemetry and small scripts written to tmp_path."""

from __future__ import annotations

import textwrap

from ddpdoctor.probe.records import telemetry as tm
from ddpdoctor.probe.analysis import boundaries, coverage
from tests.helpers.telemetry_builders import RunBuilder

SCRIPT = textwrap.dedent('''\
    """A training script."""
    import argparse
    import torch

    parser = argparse.ArgumentParser()
    parser.add_argument("--eval-every", type=int, default=100)
    args = parser.parse_args()


    def evaluate(model):
        model.eval()
        with torch.no_grad():
            return 1.0


    def train(model, steps):
        for step in range(steps):
            if step % args.eval_every == 0 and step:
                evaluate(model)
                torch.save(model, "ckpt.pt")
            model.train()
        if torch.cuda.is_available():
            print("cuda")
            print("more")
        return model


    if args.eval_every < 0:
        model = torch.load("ckpt.pt")
    train(None, 3)
    ''')
# Lines that ran when the interval was never hit (module level, train's loop, the cuda check).
RAN = {1, 2, 3, 5, 6, 7, 10, 16, 17, 18, 21, 22, 25, 28, 30}


def write(tmp_path):
    path = tmp_path / "train.py"
    path.write_text(SCRIPT)
    return path


def run_with_coverage(path, lines, **meta) -> RunBuilder:
    run = RunBuilder(world_size=2, script=str(path), **meta)
    run[0].add(tm.Coverage(1.0, {str(path): sorted(lines)}, 0))
    run[1].add(tm.Coverage(1.0, {str(path): [1]}, 0, final=True, traced_steps=2))
    run.all("train_steps", 3)
    return run


def test_statements_that_never_ran_are_grouped_into_blocks_with_their_function(tmp_path):
    path = write(tmp_path)
    result = coverage.file_coverage(str(path), RAN)
    assert result.statements == 22 and result.ran == 14
    assert [b.to_list() for b in result.blocks] == [
        [11, 13, 3, "evaluate"], [19, 20, 2, "train"], [23, 24, 2, "train"], [29, 29, 1, ""]]


def test_report_parts_give_the_boundary_line_the_interval_hint_and_coverage(tmp_path):
    path = write(tmp_path)
    run = run_with_coverage(path, RAN)
    notes, metrics, tables = coverage.report_parts(run.model())
    assert notes[0] == ("boundaries: epoch end — no DataLoader epochs (the script draws its own "
                        "batches), evaluation — not reached (model.eval() at train.py:11 never ran), "
                        "checkpoint save — not reached (torch.save at train.py:20 never ran), "
                        "checkpoint load — not reached (torch.load at train.py:29 never ran)")
    assert "`step % args.eval_every == 0`" in notes[1] and "-- --eval-every 2`" in notes[1]
    assert notes[2].startswith("coverage: ") and "14 of 22 statements" in notes[2]
    assert "and 1 more block (table below)" in notes[2]
    assert "(2 of 3 steps)" in notes[3]
    assert metrics["coverage"]["files"][0]["ran"] == 14 and metrics["coverage"]["mode"] == "boundaries"
    assert metrics["boundaries"]["interval_branches"][0]["reached"] is False
    assert tables[0].rows[0][1:] == ["11-13", 3, "evaluate"]


def test_reached_boundaries_are_ticked_with_their_site_and_count(tmp_path):
    path = write(tmp_path)
    run = RunBuilder(world_size=2, script=str(path), steps_per_epoch=5)
    for rank in run.ranks:
        for epoch in range(3):
            run[rank].loader(epoch=epoch)
            run[rank].train_steps(5)
            run[rank].epoch_end(epoch=epoch, batches_seen=5, truncated=True)
            run[rank].add(tm.Boundary(1.0, "eval", run[rank].steps, tm.Site(str(path), 11, "evaluate")))
    summary = boundaries.summarize(run.model(), str(path))
    line = boundaries.line(summary, None, 5, 20)
    assert line.startswith("boundaries: epoch end ✓ (3 epochs, each cut at 5 batches by --steps-per-epoch), "
                           "evaluation ✓ (train.py:11, 3×), checkpoint save — not reached")


def test_an_evaluation_loader_is_not_an_epoch_end(tmp_path):
    run = RunBuilder(world_size=1)
    run[0].loader(loader_id=1, epoch=0)
    run[0].epoch_end(loader_id=1, epoch=0, batches_seen=4)  # no step during it: evaluation
    summary = boundaries.summarize(run.model(), None)
    assert summary.epoch_ends == 0
    assert "epoch end — not reached" in boundaries.line(summary, None, 5, 20)


def test_an_evaluation_loader_between_training_epochs_is_not_an_epoch_end(tmp_path):
    run = RunBuilder(world_size=1)
    for epoch in range(3):
        run[0].loader(loader_id=0, epoch=epoch).train_steps(4).epoch_end(loader_id=0, epoch=epoch, batches_seen=4)
        run[0].loader(loader_id=1, epoch=epoch).epoch_end(loader_id=1, epoch=epoch, batches_seen=2)
    assert boundaries.summarize(run.model(), None).epoch_ends == 3


def test_a_dataloader_built_anew_each_epoch_counts_every_epoch(tmp_path):
    """`for epoch in ...: loader = DataLoader(...)`: each loader has one epoch (a real pattern:
    the dataset is rebuilt, or the loader made inside a train_one_epoch function)."""
    run = RunBuilder(world_size=2)
    for rank in run.ranks:
        for epoch in range(3):
            run[rank].loader(loader_id=epoch, epoch=0).train_steps(4).epoch_end(loader_id=epoch, batches_seen=4)
    summary = boundaries.summarize(run.model(), None)
    assert summary.epoch_ends == 3
    assert boundaries.line(summary, None, 0, 20).startswith("boundaries: epoch end ✓ (3 epochs")


def test_two_loaders_iterated_side_by_side_are_one_epoch(tmp_path):
    run = RunBuilder(world_size=1)
    run[0].loader(loader_id=0).loader(loader_id=1).train_steps(4)
    run[0].epoch_end(loader_id=0, batches_seen=4).epoch_end(loader_id=1, batches_seen=4)
    assert boundaries.summarize(run.model(), None).epoch_ends == 1


def test_no_coverage_records_mean_no_coverage_note(tmp_path):
    run = RunBuilder(world_size=2)
    run.all("train_steps", 2)
    notes, metrics, tables = coverage.report_parts(run.model())
    assert [n for n in notes if n.startswith("coverage")] == [] and "coverage" not in metrics
