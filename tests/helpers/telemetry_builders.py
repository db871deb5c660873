"""Build probe runs from telemetry records, the way ranks would have written them.

    run = RunBuilder(world_size=2)
    run.all("collective", op="all_reduce", shapes=[[3]])
    run[1].collective(op="barrier", done=False)
    run.outcome(status="stalled", stall_s=12.0, stall_timeout_s=10.0)
    model = run.model()                # a RunModel in memory
    model = run.load(tmp_path)         # written as jsonl + probe.json + outcome.json, then loaded

Every record gets a wall-clock time that increases per rank; `step` defaults to the optimizer
steps the rank has done, and collective `seq` numbers are assigned per group as ranks do.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any, Iterable, Optional, Sequence

from ddpdoctor.probe.records import telemetry as tm
from ddpdoctor.core.registry import Skipped, get_check
from ddpdoctor.probe.run_model.loaded_run import RankRun, RunModel
from ddpdoctor.probe.records.rundir import META_FILE, OUTCOME_FILE
from ddpdoctor.probe.run_model.outcome import Frame, Outcome, ProbeMeta, RankStack, rank_file, stack_file

T0 = 1_700_000_000.0


def site(line: int, file: str = "train.py", func: str = "main") -> tm.Site:
    return tm.Site(file, line, func)


def sample(i: int) -> str:
    """The fingerprint of sample number i (distinct numbers, distinct fingerprints)."""
    return f"{i:016x}"


def batch_fingerprint(samples: Sequence[str]) -> str:
    return hashlib.blake2b("|".join(samples).encode(), digest_size=8).hexdigest()


SITE_INIT = site(20, func="setup")
SITE_DDP = site(30, func="build")
SITE_LOADER = site(40, func="build")
SITE_ALLREDUCE = site(57, func="train_step")
SITE_BACKWARD = site(60, func="train_step")


class RankBuilder:
    """One rank's records, in the order the rank would have written them."""

    def __init__(self, rank: int, world_size: int, t0: float = T0):
        self.rank = rank
        self.world_size = world_size
        self.records: list[Any] = []
        self.t = t0
        self.steps = 0
        self.iterations: dict[int, int] = {}
        self._seq: dict[str, int] = {}
        self.signal_dump = ""

    def _now(self) -> float:
        self.t += 0.01
        return self.t

    def add(self, record: Any) -> "RankBuilder":
        self.records.append(record)
        return self

    def start(self) -> "RankBuilder":
        return self.add(tm.Start(self._now(), self.rank, self.rank, self.world_size, 1000 + self.rank,
                                 "node0", "train.py", ["train.py"], "3.11.7", "2.13.0+cpu"))

    def init_enter(self, backend: str = "gloo", init_method: Optional[str] = "env://",
                   world_size: Optional[int] = None, rank: Optional[int] = None,
                   site: Optional[tm.Site] = SITE_INIT) -> "RankBuilder":
        return self.add(tm.InitEnter(self._now(), backend, init_method, world_size, rank, site))

    def init(self, backend: str = "gloo", timeout_s: float = 60.0,
             world_size: Optional[int] = None) -> "RankBuilder":
        return self.add(tm.Init(self._now(), backend, world_size or self.world_size, self.rank, timeout_s))

    def ddp(self, ddp_id: int = 0, fup: bool = False, params: Sequence[str] = ("fc.weight", "fc.bias"),
            site: Optional[tm.Site] = SITE_DDP, static_graph: bool = False) -> "RankBuilder":
        return self.add(tm.DDPInfo(self._now(), ddp_id, fup, static_graph, False, 25.0, None,
                                   list(params), 4096, site))

    def loader(self, loader_id: int = 0, epoch: int = 0, sampler: str = "DistributedSampler",
               distributed: Optional[bool] = None, shuffle: Optional[bool] = True,
               sampler_epoch: Optional[int] = None, batches: Optional[int] = None,
               batch_size: Optional[int] = 4, drop_last: bool = False,
               dataset_len: Optional[int] = None, iterable: bool = False,
               site: Optional[tm.Site] = SITE_LOADER, batch_sampler: str = "") -> "RankBuilder":
        if distributed is None:
            distributed = sampler == "DistributedSampler"
        return self.add(tm.Loader(self._now(), loader_id, epoch, self.steps, sampler, distributed,
                                  shuffle, sampler_epoch, batches, batch_size, drop_last,
                                  "TensorDataset", dataset_len, 0, iterable, site,
                                  batch_sampler=batch_sampler))

    def batch(self, samples: Sequence[str], loader_id: int = 0, epoch: int = 0,
              index: Optional[int] = None, step: Optional[int] = None) -> "RankBuilder":
        if index is None:
            index = sum(1 for r in self.records if isinstance(r, tm.Batch)
                        and r.loader_id == loader_id and r.epoch == epoch)
        return self.add(tm.Batch(self._now(), loader_id, epoch, index,
                                 self.steps if step is None else step, list(samples),
                                 batch_fingerprint(samples)))

    def epoch_end(self, loader_id: int = 0, epoch: int = 0, batches_seen: int = 0,
                  truncated: bool = False) -> "RankBuilder":
        return self.add(tm.EpochEnd(self._now(), loader_id, epoch, batches_seen, truncated))

    def collective(self, op: str = "all_reduce", shapes: Sequence[Sequence[int]] = ((3,),),
                   dtypes: Sequence[str] = ("float32",), group: str = "WORLD",
                   site: Optional[tm.Site] = SITE_ALLREDUCE, bucket: Optional[int] = None,
                   done: bool = True, group_ranks: Optional[list[int]] = None,
                   step: Optional[int] = None, reduce_op: str = "",
                   result: Optional[list] = None) -> "RankBuilder":
        seq = self._seq.get(group, 0)
        self._seq[group] = seq + 1
        self.add(tm.Collective(self._now(), group, group_ranks, seq, op, [list(s) for s in shapes],
                               list(dtypes), self.steps if step is None else step, site, bucket,
                               reduce_op=reduce_op))
        if done:
            self.add(tm.CollectiveDone(self._now(), group, seq, result))
        return self

    def bucket(self, index: int = 0, size: int = 306, done: bool = True,
               group: str = "WORLD", site: Optional[tm.Site] = SITE_BACKWARD) -> "RankBuilder":
        return self.collective("ddp_bucket_allreduce", [[size]], ["float32"], group, site,
                               bucket=index, done=done)

    def grads(self, unused: Iterable[str] = (), ddp_id: int = 0, used_count: int = 2,
              twice: Iterable[str] = ()) -> "RankBuilder":
        iteration = self.iterations.get(ddp_id, 0)
        self.iterations[ddp_id] = iteration + 1
        return self.add(tm.Grads(self._now(), ddp_id, iteration, self.steps, sorted(unused), used_count,
                                 list(twice)))

    def step(self, backward_iterations: int = 1, allreduce_rounds: int = 1) -> "RankBuilder":
        self.steps += 1
        return self.add(tm.Step(self._now(), self.steps, backward_iterations, allreduce_rounds,
                                {"forward": 0.01, "backward": 0.02}))

    def params(self, fingerprints: dict[str, str], ddp_id: int = 0,
               step: Optional[int] = None) -> "RankBuilder":
        return self.add(tm.Params(self._now(), ddp_id, self.steps if step is None else step,
                                  dict(fingerprints)))

    def save(self, path: str, host: str = "node0", site: Optional[tm.Site] = site(90)) -> "RankBuilder":
        return self.add(tm.Save(self._now(), path, host, self.steps, site))

    def dataparallel(self, site: Optional[tm.Site] = site(33)) -> "RankBuilder":
        return self.add(tm.DataParallelUse(self._now(), site))

    def crash(self, exc_type: str = "RuntimeError", message: str = "boom", traceback: str = "",
              site: Optional[tm.Site] = None) -> "RankBuilder":
        traceback = traceback or (f"Traceback (most recent call last):\n  File \"train.py\", line "
                                  f"{site.line if site else 1}, in main\n{exc_type}: {message}\n")
        return self.add(tm.Crash(self._now(), exc_type, message, traceback, site, self.steps))

    def error_in_flight(self, exc_type: str = "RuntimeError", message: str = "boom",
                        site: Optional[tm.Site] = None, group: str = "WORLD",
                        seq: Optional[int] = None) -> "RankBuilder":
        """The exception being handled when the rank entered its last collective on `group`."""
        seq = self._seq.get(group, 1) - 1 if seq is None else seq
        traceback = (f"Traceback (most recent call last):\n  File \"train.py\", line "
                     f"{site.line if site else 1}, in main\n{exc_type}: {message}\n")
        return self.add(tm.ErrorInFlight(self._now(), group, seq, exc_type, message, traceback, site,
                                         self.steps))

    def forward_no_backward(self, site: Optional[tm.Site] = None, ddp_id: int = 0) -> "RankBuilder":
        """A training forward with no backward: the next backward belongs to the next forward."""
        iteration = self.iterations.get(ddp_id, 0)
        self.iterations[ddp_id] = iteration + 1
        return self.add(tm.ForwardNoBackward(self._now(), ddp_id, iteration, self.steps, site))

    def end(self, reason: str = "max_steps") -> "RankBuilder":
        return self.add(tm.End(self._now(), reason, self.steps))

    def train_steps(self, count: int, buckets: int = 1, unused: Iterable[str] = ()) -> "RankBuilder":
        """`count` plain DDP steps: backward (grads + bucket all-reduces) then optimizer step."""
        for _ in range(count):
            self.grads(unused)
            for index in range(buckets):
                self.bucket(index)
            self.step()
        return self


class RunBuilder:
    """A whole probe run: meta, every rank's records, and (optionally) the outcome."""

    def __init__(self, world_size: int = 2, formed: bool = True, ranks: Optional[Iterable[int]] = None,
                 **meta: Any):
        self.world_size = world_size
        self.ranks: dict[int, RankBuilder] = {}
        for rank in (range(world_size) if ranks is None else ranks):
            builder = RankBuilder(rank, world_size)
            builder.start()
            if formed:
                builder.init_enter()
                builder.init()
            self.ranks[rank] = builder
        fields = dict(script="train.py", args=[], nproc_per_node=world_size, nnodes=1, node_rank=0,
                      world_size=world_size, max_steps=20, steps_per_epoch=0, stall_timeout_s=10.0,
                      pg_timeout_s=60.0, timeout_s=120.0, backend="gloo", launcher="torchrun")
        fields.update(meta)
        self.meta = ProbeMeta(**fields)
        self._outcome: Optional[Outcome] = None

    def __getitem__(self, rank: int) -> RankBuilder:
        return self.ranks[rank]

    def all(self, method: str, *args: Any, **kwargs: Any) -> "RunBuilder":
        """Call one RankBuilder method on every rank."""
        for builder in self.ranks.values():
            getattr(builder, method)(*args, **kwargs)
        return self

    def outcome(self, status: str = "completed", exit_codes: Optional[dict[int, Optional[int]]] = None,
                stacks: Sequence[RankStack] = (), stall_s: Optional[float] = None,
                stall_timeout_s: Optional[float] = None, stack_note: str = "",
                wall_s: float = 30.0) -> "RunBuilder":
        if exit_codes is None:
            exit_codes = {r: 0 for r in self.ranks} if status == "completed" else {}
        self._outcome = Outcome(status, wall_s, dict(exit_codes), stall_s, stall_timeout_s,
                                list(stacks), stack_note)
        return self

    def model(self) -> RunModel:
        ranks = {r: RankRun(r, list(b.records), b.signal_dump) for r, b in self.ranks.items()}
        return RunModel("/tmp/run", self.meta, ranks, self._outcome)

    def write(self, directory: Path, torn: Iterable[int] = ()) -> Path:
        """Write the run dir; ranks in `torn` get a half-written last line, as after SIGKILL."""
        directory.mkdir(parents=True, exist_ok=True)
        (directory / META_FILE).write_text(json.dumps(vars(self.meta)))
        torn = set(torn)
        for rank, builder in self.ranks.items():
            data = b"".join(tm.encode(r) for r in builder.records)
            if rank in torn:
                data += tm.encode(tm.Note(builder.t, "half a line"))[:17]
            rank_file(directory, rank).write_bytes(data)
            if builder.signal_dump:
                stack_file(directory, rank).write_text(builder.signal_dump)
        if self._outcome is not None:
            (directory / OUTCOME_FILE).write_text(json.dumps(self._outcome.to_dict()))
        return directory

    def load(self, directory: Path, torn: Iterable[int] = ()) -> RunModel:
        return RunModel.load(self.write(directory, torn))


def stack(rank: int, frames: Sequence[tuple[str, str, int]], idle: Optional[bool] = True,
          method: str = "py-spy") -> RankStack:
    """A watchdog stack, innermost frame first: frames are (func, file, line)."""
    built = [Frame(func, file, line) for func, file, line in frames]
    text = "\n".join(f"    {f}" for f in built)
    return RankStack(rank, 1000 + rank, method, built, idle, text)


def waiting_in(rank: int, call: str = "all_reduce", line: int = 57, func: str = "train_step",
               torch_line: int = 3252) -> RankStack:
    """A py-spy stack of a rank blocked in a torch.distributed call made at train.py:`line`."""
    return stack(rank, [(call, "torch/distributed/distributed_c10d.py", torch_line),
                        ("wrapper", "torch/distributed/c10d_logger.py", 83),
                        (func, "train.py", line),
                        ("main", "train.py", 90),
                        ("<module>", "train.py", 95),
                        ("run_path", "<frozen runpy>", 291),
                        ("main", "ddpdoctor/probe/bootstrap.py", 40)])


def running(rank: int, func: str = "spin", line: int = 12) -> RankStack:
    """A py-spy stack of a rank busy in its own Python at train.py:`line`."""
    return stack(rank, [(func, "train.py", line), ("main", "train.py", 90),
                        ("<module>", "train.py", 95)], idle=False)


def faulthandler_dump(line: int = 57, call: str = "all_reduce") -> str:
    """What faulthandler writes for a rank blocked in a collective called at train.py:`line`."""
    return (
        "Thread 0x00007f2a4c9fe640 (most recent call first):\n"
        '  File "/usr/lib/python3.11/threading.py", line 327 in wait\n'
        '  File "/usr/lib/python3.11/threading.py", line 1002 in _bootstrap\n'
        "\n"
        "Current thread 0x00007f2a5d1b7740 (most recent call first):\n"
        f'  File "/venv/lib/python3.11/site-packages/torch/distributed/distributed_c10d.py", line 3252 in {call}\n'
        '  File "/venv/lib/python3.11/site-packages/torch/distributed/c10d_logger.py", line 83 in wrapper\n'
        f'  File "/home/u/proj/train.py", line {line} in train_step\n'
        '  File "/home/u/proj/train.py", line 90 in main\n'
        '  File "/home/u/proj/train.py", line 95 in <module>\n'
        '  File "<frozen runpy>", line 291 in run_path\n'
    )


def judge(code: str, model: RunModel):
    """Run one check on a model: its findings (code, severity, title stamped) or its Skipped."""
    spec = get_check(code)
    value = spec.func(model)
    if isinstance(value, Skipped):
        return value
    return [spec.finding(problem) for problem in value]


UNFINISHED_REDUCTION = (
    "Expected to have finished reduction in the prior iteration before starting a new one. This "
    "error indicates that your module has parameters that were not used in producing loss.")
