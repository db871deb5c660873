"""The probe checks as a set: declared as documented, quiet on a healthy run, and never crashing
on partial telemetry (a killed run, torn files, no outcome)."""

from __future__ import annotations

import json

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ddpdoctor.core.findings import Severity
from ddpdoctor.probe.run_model.loaded_run import RankRun, RunModel
from ddpdoctor.core.registry import CRASHED, FAILED, NOTED, WARNED, all_checks, run_checks
from tests.helpers.telemetry_builders import (UNFINISHED_REDUCTION, RunBuilder, faulthandler_dump, running, sample,
                                site, waiting_in)

EXPECTED = {
    "DDP301": Severity.ERROR, "DDP302": Severity.WARNING, "DDP303": Severity.ERROR,
    "DDP401": Severity.ERROR, "DDP402": Severity.WARNING, "DDP403": Severity.WARNING,
    "DDP404": Severity.WARNING, "DDP405": Severity.ERROR, "DDP501": Severity.ERROR,
    "DDP502": Severity.ERROR, "DDP503": Severity.ERROR, "DDP504": Severity.ERROR,
    "DDP505": Severity.ERROR, "DDP701": Severity.ERROR,
}


def healthy_run(world_size: int = 2, epochs: int = 2, steps: int = 4) -> RunBuilder:
    """A correct DDP job: DistributedSampler with set_epoch, every parameter used, rank-0 saves."""
    run = RunBuilder(world_size=world_size)
    for rank in run.ranks:
        builder = run[rank]
        builder.ddp(params=["fc.weight", "fc.bias"])
        for epoch in range(epochs):
            builder.loader(epoch=epoch, sampler_epoch=epoch, batches=steps, batch_size=4,
                           dataset_len=steps * 4 * world_size)
            for index in range(steps):
                base = epoch * 1000 + (index * world_size + rank) * 4
                builder.batch([sample(base + k) for k in range(4)], epoch=epoch)
                builder.train_steps(1, buckets=2)
            builder.epoch_end(epoch=epoch, batches_seen=steps)
        builder.collective("all_reduce", [[1]], site=site(80, func="log"))
        if rank == 0:
            builder.save("/ckpt/last.pt")
        builder.collective("barrier", [], [], site=site(82))
        builder.params({"fc.weight": "w0", "fc.bias": "b0"})
        builder.end()
    run.outcome("completed")
    return run


def test_every_probe_check_is_declared_with_its_code_severity_and_three_part_doc():
    specs = {spec.code: spec for spec in all_checks("probe")}
    assert set(EXPECTED) <= set(specs)
    for code, severity in EXPECTED.items():
        spec = specs[code]
        assert spec.severity is severity, code
        doc = spec.doc
        for part in ("What it detects:", "Why it hurts:", "How to fix:"):
            assert part in doc, f"{code} lacks {part!r}"
        assert doc.index("What it detects:") < doc.index("Why it hurts:") < doc.index("How to fix:")
        assert spec.module.startswith("ddpdoctor.checks.probe.")


def test_a_healthy_run_passes_every_probe_check():
    results = run_checks("probe", healthy_run().model())
    assert {r.spec.code: r.status for r in results if r.status in (FAILED, WARNED, NOTED, CRASHED)} == {}


def test_a_healthy_run_read_back_from_disk_with_torn_lines_passes(tmp_path):
    model = healthy_run(world_size=3).load(tmp_path, torn=[0, 2])
    assert sorted(model.ranks) == [0, 1, 2]
    results = run_checks("probe", model)
    assert {r.spec.code: r.status for r in results if r.status in (FAILED, WARNED, NOTED, CRASHED)} == {}


def broken_run() -> RunBuilder:
    """A job with a bit of everything wrong, to be cut short anywhere."""
    run = RunBuilder(world_size=3)
    for rank in run.ranks:
        builder = run[rank]
        builder.ddp(fup=rank == 0, params=["fc.weight", "fc.bias", "aux.weight"])
        builder.dataparallel()
        for epoch in range(2):
            builder.loader(epoch=epoch, sampler="RandomSampler", distributed=False, sampler_epoch=None,
                           batches=3 + (rank == 2), batch_size=2, dataset_len=6)
            for index in range(3):
                builder.batch([sample(index * 2), sample(index * 2 + 1)], epoch=epoch)
                builder.grads(["aux.weight"] if rank else [])
                builder.bucket(0)
                builder.step(backward_iterations=2, allreduce_rounds=2)
            builder.epoch_end(epoch=epoch, batches_seen=3, truncated=rank == 1)
        builder.collective("all_reduce", [[3 + rank]], site=site(57), done=False)
        builder.save("/ckpt/model.pt")
        builder.params({"fc.weight": f"w{rank}", "fc.bias": "b"})
    run[1].crash("RuntimeError", UNFINISHED_REDUCTION, site=site(70))
    run[2].signal_dump = faulthandler_dump()
    return run


OUTCOMES = st.one_of(st.none(), st.sampled_from(
    ["completed", "crashed", "stalled", "timeout", "interrupted", "launch_failed"]))
EXIT_CODES = st.sampled_from([None, 0, 1, -6, -9, -11, -15])


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_no_probe_check_crashes_on_a_run_cut_short_anywhere(data):
    run = broken_run()
    status = data.draw(OUTCOMES)
    if status is not None:
        stacks = data.draw(st.sampled_from([[], [waiting_in(0), running(1)], [waiting_in(2)]]))
        codes = {r: data.draw(EXIT_CODES) for r in run.ranks}
        run.outcome(status, exit_codes=codes, stacks=stacks, stall_s=data.draw(st.sampled_from([None, 12.0])),
                    stall_timeout_s=10.0, stack_note=data.draw(st.sampled_from(["", "py-spy failed"])))
    model = run.model()
    ranks = {}
    for rank, rank_run in model.ranks.items():
        if data.draw(st.booleans(), label=f"rank {rank} left a file"):
            cut = data.draw(st.integers(0, len(rank_run.records)), label=f"rank {rank} records kept")
            ranks[rank] = RankRun(rank, rank_run.records[:cut], rank_run.signal_dump)
    model = RunModel(model.run_dir, model.meta, ranks, model.outcome)
    for result in run_checks("probe", model):
        assert result.status != CRASHED, f"{result.spec.code}: {result.reason}"
        for finding in result.findings:
            json.dumps(finding.to_dict())  # evidence must be plain JSON
            assert finding.message and finding.hint
