"""Per-rank memory (the Memory table, DDP608) and FSDP's collectives per step, fed telemetry
built the way ranks write it. The in-rank memory instrument itself, in a fresh process, is
tests/integration/test_memory_instrument.py."""

from __future__ import annotations

import json
from typing import Optional

from ddpdoctor.probe.records import telemetry as tm
from ddpdoctor.probe.analysis import fsdp_comm, memory, perf_tables
from ddpdoctor.core.registry import Skipped
from tests.helpers.telemetry_builders import RunBuilder, judge, site

MiB = 2**20
RUNTIME = 230 * MiB


def with_memory(run: RunBuilder, rank: int, *, peak: int, params: int = 300_000,
                grads: Optional[int] = None, optimizer: Optional[int] = None,
                params_full: Optional[int] = None, current: Optional[int] = None,
                activations: int = 70_000, sharding: str = "", device: str = "cpu") -> RunBuilder:
    """The Memory records one rank writes: start, after its first step, activations, end."""
    b = run[rank]
    start = 0 if device != "cpu" else RUNTIME
    b.add(tm.Memory(b._now(), 0, "start", "cpu", RUNTIME, RUNTIME))
    b.step()
    b.add(tm.Memory(b._now(), 1, "step", device, start + peak // 2, start + peak // 2, params,
                    params if params_full is None else params_full,
                    params if grads is None else grads, 2 * params if optimizer is None else optimizer,
                    sharding=sharding))
    b.add(tm.Memory(b._now(), 1, "activations", device, start + peak // 2, start + peak // 2,
                    activations=activations))
    b.step()
    b.add(tm.Memory(b._now(), 2, "end", device, start + (peak if current is None else current),
                    start + peak))
    return run


def load_on(run: RunBuilder, rank: int, line: int = 64) -> None:
    b = run[rank]
    b.add(tm.Boundary(b._now(), "load", b.steps, site(line)))


def healthy_run(world: int = 2, peaks=(100 * MiB, 103 * MiB)) -> RunBuilder:
    run = RunBuilder(world_size=world)
    for rank in range(world):
        with_memory(run, rank, peak=peaks[rank % len(peaks)])
    return run


# -- the figures -------------------------------------------------------------------------------

def test_memory_record_round_trips_through_json():
    record = tm.Memory(1.0, 3, "step", "cpu", 10, 20, 1, 2, 3, 4, 5, "fsdp2", None)
    assert tm.decode(tm.encode(record).decode()) == record


def test_breakdown_takes_the_last_figure_of_each_kind_and_the_highest_peak():
    run = healthy_run(peaks=(100 * MiB,))
    m = memory.rank_memory(run.model())[0]
    assert (m.runtime, m.peak, m.params, m.grads, m.optimizer, m.activations) == (
        RUNTIME, RUNTIME + 100 * MiB, 300_000, 300_000, 600_000, 70_000)
    assert m.job_peak == 100 * MiB
    assert m.rest == 100 * MiB - 1_200_000 - 70_000
    table = memory.memory_table(memory.rank_memory(run.model()))
    assert table.columns[:9] == ["rank", "device", "peak", "runtime", "params", "grads", "optim",
                                 "activ", "rest"]
    assert table.rows[0][2] == f"{(RUNTIME + 100 * MiB) / 1e6:.1f}"


def test_gpu_figures_have_no_runtime_share():
    run = RunBuilder(world_size=1)
    with_memory(run, 0, peak=2_000 * MiB, params=500 * MiB, device="cuda:0")
    m = memory.rank_memory(run.model())[0]
    assert m.device == "cuda:0" and m.runtime == 0 and m.job_peak == 2_000 * MiB


def test_memory_metrics_are_in_bytes_per_rank():
    numbers = memory.metrics(memory.rank_memory(healthy_run().model()))
    assert [r["rank"] for r in numbers["ranks"]] == [0, 1]
    assert numbers["ranks"][1]["peak_bytes"] == RUNTIME + 103 * MiB
    assert numbers["ranks"][0]["optimizer_bytes"] == 600_000
    assert numbers["job_peak_spread"] is not None


# -- DDP608 ------------------------------------------------------------------------------------

def test_ranks_a_few_mb_apart_are_not_reported():
    assert judge("DDP608", healthy_run().model()) == []
    assert judge("DDP608", healthy_run(4, (100 * MiB, 130 * MiB, 101 * MiB, 99 * MiB)).model()) == []


def test_rank_keeping_a_loaded_checkpoint_is_named_with_its_torch_load_line():
    run = RunBuilder(world_size=2)
    with_memory(run, 0, peak=235 * MiB)
    with_memory(run, 1, peak=100 * MiB)
    load_on(run, 0, line=64)
    [finding] = judge("DDP608", run.model())
    assert finding.ranks == [0]
    assert finding.location.line == 64
    assert "torch.load at train.py:64 ran on rank 0 only" in finding.message
    assert "still held it" in finding.message
    assert "mmap=True" in finding.hint and "map_location" in finding.hint
    assert finding.evidence["kind"] == "peak" and finding.evidence["still_held"] is True


def test_a_transient_copy_is_said_to_be_transient():
    run = RunBuilder(world_size=2)
    with_memory(run, 0, peak=300 * MiB, current=101 * MiB)
    with_memory(run, 1, peak=100 * MiB)
    [finding] = judge("DDP608", run.model())
    assert "transient" in finding.message and finding.location is None
    assert finding.evidence["still_held"] is False


def test_a_rank_holding_a_second_model_is_reported_from_exact_bytes():
    run = RunBuilder(world_size=4)
    for rank in range(4):
        # rank 2 keeps an EMA copy with its own optimizer: 3x the parameters, gradients, state
        with_memory(run, rank, peak=200 * MiB, params=(60 if rank == 2 else 20) * MiB)
    [finding] = judge("DDP608", run.model())
    assert finding.ranks == [2] and finding.evidence["kind"] == "held"
    assert "parameters, gradients and optimizer state" in finding.message


def test_zero_redundancy_optimizer_state_spread_is_by_design():
    run = RunBuilder(world_size=2)
    with_memory(run, 0, peak=120 * MiB, params=20 * MiB, optimizer=36 * MiB, sharding="zero")
    with_memory(run, 1, peak=110 * MiB, params=20 * MiB, optimizer=4 * MiB, sharding="zero")
    assert judge("DDP608", run.model()) == []


def test_fsdp_holding_most_of_the_model_saves_less_than_expected():
    run = RunBuilder(world_size=2)
    for rank in range(2):
        with_memory(run, rank, peak=150 * MiB, params=8_800_000, params_full=9_200_000,
                    sharding="fsdp2")
        b = run[rank]
        b.add(tm.FrameworkUse(b._now(), "fsdp2", "2.13.0", "fully_shard", {}, site(60), 0))
    [finding] = judge("DDP608", run.model())
    assert finding.ranks == [0, 1] and finding.location.line == 60
    assert "FSDP saves less than expected" in finding.message and "(96%)" in finding.message
    assert "fully_shard" in finding.hint and finding.evidence["kind"] == "sharding"


def test_fsdp_sharded_by_world_size_is_clean_also_on_one_rank():
    run = RunBuilder(world_size=2)
    for rank in range(2):
        with_memory(run, rank, peak=150 * MiB, params=4_700_000, params_full=9_200_000,
                    sharding="fsdp")
    assert judge("DDP608", run.model()) == []
    one = RunBuilder(world_size=1)
    with_memory(one, 0, peak=150 * MiB, params=9_200_000, params_full=9_200_000, sharding="fsdp")
    assert judge("DDP608", one.model()) == []  # one rank: nothing to shard over


def test_without_memory_figures_the_check_skips():
    run = RunBuilder(world_size=2)
    run.all("train_steps", 3)
    assert isinstance(judge("DDP608", run.model()), Skipped)


# -- FSDP collectives per step ----------------------------------------------------------------

def fsdp_run(steps: int = 8, world: int = 2) -> RunBuilder:
    """Each step: 3 block all-gathers (forward) + 3 (backward) + 3 reduce-scatters, FSDP2-style
    (output, input); rank 1 enters each call 2 ms after rank 0, every call lasts 4 ms on rank 1."""
    run = RunBuilder(world_size=world)
    shard = 8352
    for rank in range(world):
        b = run[rank]
        seq = 0
        for step in range(steps):
            t = 1000.0 + step
            for k in range(9):
                gather = k < 6
                shapes = [[shard * world], [shard]] if gather else [[shard], [shard * world]]
                start = t + k * 0.01 + (0.002 if rank == 1 else 0.0)
                end = t + k * 0.01 + 0.006
                b.add(tm.Collective(start, "WORLD", None, seq,
                                    "all_gather_single" if gather else "reduce_scatter_single",
                                    shapes, ["float32", "float32"], step, site(54), via="fsdp"))
                b.add(tm.CollectiveDone(end, "WORLD", seq))
                seq += 1
            b.add(tm.Step(t + 0.1, step + 1, 0, 0, {"step": 0.1}))
    return run


def test_fsdp_table_counts_calls_bytes_and_time_per_step():
    comm = fsdp_comm.fsdp_comm(fsdp_run().model())
    assert comm.judged_steps == 5  # steps 4-8
    gather, scatter = comm.ops
    assert (gather.op, gather.nbytes, gather.calls_per_step) == ("all-gather", 8352 * 2 * 4, 6)
    assert (scatter.op, scatter.nbytes, scatter.calls_per_step) == ("reduce-scatter", 8352 * 2 * 4, 3)
    # the transfer: the last rank to enter (rank 1) was in each call 4 ms
    assert abs(gather.seconds - 0.004) < 1e-6
    assert abs(gather.busbw - 8352 * 8 / 0.004 / 2 / 1e9) < 1e-9
    # blocked per step: median of rank 0 (6 ms per call) and rank 1 (4 ms per call)
    assert abs(gather.blocked_per_step - 6 * 0.005) < 1e-6
    assert abs(comm.share - 9 * 0.005 / 0.1) < 1e-6
    table = fsdp_comm.table(comm)
    assert [row[0] for row in table.rows] == ["all-gather", "reduce-scatter", "total"]
    assert table.rows[-1][-1] == "45%"
    numbers = perf_tables.metrics(fsdp_run().model())
    assert numbers["fsdp_collectives"][0]["calls_per_step"] == 6
    assert numbers["fsdp_comm_share"] == 0.45


def test_fsdp_list_all_gather_counts_its_output_list():
    record = tm.Collective(0.0, "WORLD", None, 0, "all_gather", [[8352], [8352], [8352]],
                           ["float32"] * 3, 0, None, via="fsdp")
    assert fsdp_comm.call_bytes(record) == 8352 * 2 * 4


def test_no_fsdp_table_without_fsdp_collectives():
    run = RunBuilder(world_size=2)
    run.all("train_steps", 6)
    assert fsdp_comm.fsdp_comm(run.model()) is None
    assert not any(t.title.startswith("FSDP") for t in perf_tables.tables(run.model()))


def test_library_collectives_whose_size_follows_the_model_are_not_latent_desyncs():
    run = RunBuilder(world_size=2)
    for rank in range(2):
        b = run[rank]
        for step, size in enumerate([8352, 33, 8352, 33]):
            b.add(tm.Collective(b._now(), "WORLD", None, step, "reduce_scatter_single",
                                [[size], [2 * size]], ["float32"] * 2, step, site(54), via="fsdp"))
            b.add(tm.CollectiveDone(b._now(), "WORLD", step))
    assert judge("DDP506", run.model()) == []
    for rank in range(2):  # the same calls made by the script itself are one
        for record in run[rank].records:
            if isinstance(record, tm.Collective):
                record.via = ""
    assert len(judge("DDP506", run.model())) == 1


# -- the instrument, in a fresh process ---------------------------------------------------------

def test_a_step_of_two_to_the_31_sizes_nothing():
    # a forged record (as a peer or a run dir may hold): the steps judged are the recorded ones
    import resource
    import time

    run = fsdp_run()
    run[1].add(tm.Step(2000.0, 2 ** 31, 0, 0, {"step": 0.1}))
    before, started = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, time.process_time()
    comm = fsdp_comm.fsdp_comm(run.model())
    assert comm is not None and comm.judged_steps <= 9
    assert time.process_time() - started < 5
    assert resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before < 200 * 1024  # KiB
