"""What each rank records during a probe: one JSON object per line in RUN_DIR/rank-<R>.jsonl.

This module is the schema, shared by the writer (inside each rank, on the hot path) and the
reader (the parent, `ddpdoctor report`). Every record is one of the dataclasses below; its JSON
is `{"kind": <Class.kind>, **fields}`. Each line is written with a single os.write on an
O_APPEND descriptor, so a rank killed with SIGKILL leaves whole lines behind, and a reader skips
at most one torn last line.

Times are `time.time()` seconds (wall clock, comparable across ranks on one host).
`step` is always the number of optimizer steps this rank had completed when the record was made.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field, fields
from typing import Any, Optional

from ddpdoctor.probe.records import rank_files
from ddpdoctor.probe.records import jsonl


@dataclass
class Site:
    """A place in the user's code: the innermost frame outside torch and ddpdoctor."""

    file: str
    line: int
    func: str = ""
    # The user frames outside this one, innermost first, each [file, line, func, callee]: the
    # call of the user's that led here through library code (e.g. trainer.fit -> a callback).
    # Context only: two sites at the same line are the same site whatever their callers.
    callers: list = field(default_factory=list, compare=False)
    # What this frame was calling when the record was made: the library function, qualified
    # where Python says so ("Trainer.save_checkpoint", "Accelerator.gather", "all_reduce").
    call: str = field(default="", compare=False)

    def __str__(self) -> str:
        return f"{self.file}:{self.line}"


@dataclass
class Start:
    """The bootstrap began in this rank, before the user's script ran."""

    kind = "start"
    t: float
    rank: int
    local_rank: int
    world_size: int
    pid: int
    host: str
    script: str
    argv: list[str]
    python: str
    torch: str
    launcher: str = "torchrun"  # "torchrun" | "none" (the script starts its own ranks)
    # The ddpdoctor package directory this rank imported (core/paths.OWN_DIR there): its frames
    # are ddpdoctor's in every stack read afterwards, wherever it lies (core/paths.note_own_dir).
    ddpdoctor_dir: str = ""


@dataclass
class InitEnter:
    """init_process_group was called, with the arguments the script passed."""

    kind = "init_enter"
    t: float
    backend: str
    init_method: Optional[str]
    world_size: Optional[int]  # as passed by the script (None: from the environment)
    rank: Optional[int]
    site: Optional[Site]


@dataclass
class Init:
    """The process group formed."""

    kind = "init"
    t: float
    backend: str
    world_size: int
    rank: int
    timeout_s: float  # the timeout the probe imposed


@dataclass
class DDPInfo:
    """A DistributedDataParallel was constructed."""

    kind = "ddp"
    t: float
    ddp_id: int
    find_unused_parameters: bool
    static_graph: bool
    gradient_as_bucket_view: bool
    bucket_cap_mb: Optional[float]
    device_ids: Optional[list]
    param_names: list[str]  # trainable parameters, in module order
    param_bytes: int
    site: Optional[Site]
    detail_workaround: bool = False  # DDP built on an unwrapped gloo group (see notes §4)


@dataclass
class Loader:
    """A DataLoader began an epoch (its __iter__ was called)."""

    kind = "loader"
    t: float
    loader_id: int  # creation order of the DataLoader in this rank
    epoch: int  # how many times this loader has been iterated before, from 0
    step: int
    sampler: str  # class name of the sampler
    distributed_sampler: bool  # a DistributedSampler (or subclass) is in use
    shuffle: Optional[bool]  # the sampler shuffles (None: unknown)
    sampler_epoch: Optional[int]  # DistributedSampler.epoch when iteration began
    batches: Optional[int]  # len(loader): batches this rank would get this epoch (None: unknown)
    batch_size: Optional[int]
    drop_last: bool
    dataset: str  # class name
    dataset_len: Optional[int]
    num_workers: int
    iterable: bool  # an IterableDataset
    site: Optional[Site]
    # DistributedSampler.set_epoch calls on this sampler so far (None: not a DistributedSampler
    # or not counted): tells "never called" from "called with the same value" (DDP302).
    set_epoch_calls: Optional[int] = None
    # The class of a custom batch_sampler the loader was given ("": torch's own BatchSampler or
    # none): it decides how many batches a rank gets, so DDP303's fix is in it.
    batch_sampler: str = ""


@dataclass
class Batch:
    """One batch the loader yielded, fingerprinted per sample."""

    kind = "batch"
    t: float
    loader_id: int
    epoch: int
    index: int  # position in the epoch, from 0
    step: int
    samples: list[str]  # one 16-hex-digit fingerprint per sample, in batch order
    fingerprint: str  # of the whole batch (order-sensitive)
    # Dataset indices of the samples (map-style loaders): exact where random augmentation makes
    # the fingerprints of the same sample differ. None where unknown.
    indices: Optional[list[int]] = None


@dataclass
class EpochEnd:
    """A loader epoch ended: naturally, or cut short by --steps-per-epoch."""

    kind = "epoch_end"
    t: float
    loader_id: int
    epoch: int
    batches_seen: int
    truncated: bool


@dataclass
class Collective:
    """A rank entered a collective (torch.distributed call or a DDP bucket all-reduce).

    `seq` counts collectives per process group in this rank, from 0, in call order: the same
    seq on two ranks is meant to be the same collective.
    """

    kind = "collective"
    t: float
    group: str  # "WORLD" or the group's name
    group_ranks: Optional[list[int]]
    seq: int
    op: str  # "all_reduce", "broadcast", ..., or "ddp_bucket_allreduce"
    shapes: list[list[int]]
    dtypes: list[str]
    step: int
    site: Optional[Site]
    bucket: Optional[int] = None  # DDP bucket index for ddp_bucket_allreduce
    # The torch library that issued it, not the script: "fsdp" (FSDP / FSDP2's all-gathers and
    # reduce-scatters), "zero" (ZeroRedundancyOptimizer), "comm_hook" (a DDP comm hook such as
    # fp16_compress_hook or PowerSGD), "dtensor"; "" when the script called it. Its sizes
    # follow the model's layout, not the data.
    via: str = ""
    # The reduce op of a reducing collective ("SUM", "MAX", "AVG", ...); "" where it has none.
    # With `result` (CollectiveDone / CollectiveResult), what proves a size was exchanged (DDP506).
    reduce_op: str = ""


@dataclass
class CollectiveDone:
    """A collective returned (synchronous calls and DDP buckets)."""

    kind = "collective_done"
    t: float
    group: str
    seq: int
    # For a small collective (a few elements): the values of its tensors after it completed,
    # one flat list per recorded tensor (objects' list for the object collectives). None: not
    # read (too large, on a device, or not a collective that can exchange a size).
    result: Optional[list] = None


@dataclass
class CollectiveResult:
    """The values of a small collective read after it completed, when that was not at its
    CollectiveDone: an async_op=True call (read at the next collective once its work completed)
    or a device tensor (copied to the host and read once the copy's event completed)."""

    kind = "collective_result"
    t: float
    group: str
    seq: int
    result: list


@dataclass
class BucketTiming:
    """One DDP bucket all-reduce, timed by the probe's comm hook."""

    kind = "bucket"
    t: float
    ddp_id: int
    index: int
    nbytes: int
    start: float
    end: float
    step: int
    iteration: int  # DDP backward iteration, from 0
    is_last: bool
    hook: str  # "default" or the wrapped user hook's name
    # Where start/end come from (inrank/device_timing.py): "cpu" (the launch and the completion
    # callback: gloo completes the future when the bytes have moved), "cuda-events" (CUDA events
    # on the device timeline, mapped onto the wall clock), "none" (launch and callback times on
    # the CPU of a backend whose futures may complete at enqueue: not the all-reduce's time).
    clock: str = "cpu"


@dataclass
class BucketLayout:
    """Which parameters are in which bucket (recorded when it first appears or changes)."""

    kind = "bucket_layout"
    t: float
    ddp_id: int
    index: int
    params: list[str]
    nbytes: int


@dataclass
class BaselineTiming:
    """Raw all-reduces of one bucket size on the DDP model's own group, timed after the last step.

    The in-job baseline for bucket bandwidth (DDP602): the same bytes, the same group, the same
    machine and network, nothing else running (inrank/baseline.py). `times` are seconds per timed
    all-reduce, from the call to its completion callback, as the bucket hook measures; `starts`
    the wall-clock time of each call, to line the ranks up as bucket timings are. On CUDA both
    come from CUDA events, as the buckets' do (`clock`). A size measured again after the last
    step (a bucket near the knee) has a second record; readers pool them (perf/cost_fit.py).
    """

    kind = "baseline"
    t: float
    ddp_id: int
    nbytes: int
    dtype: str
    warmup: int  # untimed all-reduces before the timed ones
    times: list[float]
    starts: list[float] = field(default_factory=list)
    clock: str = "cpu"  # as BucketTiming.clock


@dataclass
class DeviceClock:
    """Which clock the durations of one DDP model's collectives come from on this rank, decided
    from the process group's backend for the gradients' device and that device
    (inrank/device_timing.py): "cpu", "cuda-events" or "none" (device time not measured, with the
    reason). Written when the first bucket is all-reduced, and again if CUDA events fail later."""

    kind = "device_clock"
    t: float
    ddp_id: int
    clock: str  # "cpu" | "cuda-events" | "none"
    backend: str
    device: str  # "cpu", "cuda:0", ...
    reason: str = ""  # why device time is not measured ("" when it is)


@dataclass
class DevicePhases:
    """One optimizer step's phases on the device timeline (CUDA events on the compute stream),
    written once its events completed (at a later step or at the end): forward, backward (to
    the last bucket's launch: every gradient ready), comm_exposed (the last all-reduce's end
    after that), optimizer; seconds. The Step record of the same step keeps the CPU (launch)
    times."""

    kind = "device_phases"
    t: float
    step: int
    phases: dict[str, float] = field(default_factory=dict)
    clock: str = "cuda-events"


@dataclass
class Grads:
    """After one backward through a DDP model: the parameters that got no local gradient."""

    kind = "grads"
    t: float
    ddp_id: int
    iteration: int
    step: int
    unused: list[str]  # trainable parameters with no gradient computed on this rank
    used_count: int
    # Parameters whose gradient was accumulated twice in this one backward (a reentrant
    # torch.utils.checkpoint over a shared module): DDP marks them ready twice (DDP406).
    twice: list[str] = field(default_factory=list)


@dataclass
class Step:
    """An optimizer step finished."""

    kind = "step"
    t: float
    step: int  # steps done, after this one
    backward_iterations: int  # DDP backwards since the previous step
    allreduce_rounds: int  # complete DDP gradient all-reduces (last bucket) since the previous step
    phases: dict[str, float] = field(default_factory=dict)  # seconds: data, forward, backward, ...
    forwards: int = 0  # DDP training forwards since the previous step (grad on, train mode)


@dataclass
class Params:
    """Fingerprints of every trainable parameter of each DDP model, at the end of the probe."""

    kind = "params"
    t: float
    ddp_id: int
    step: int
    fingerprints: dict[str, str]


@dataclass
class Save:
    """torch.save was called with a path."""

    kind = "save"
    t: float
    path: str  # absolute
    host: str
    step: int
    site: Optional[Site]


@dataclass
class DataParallelUse:
    """nn.DataParallel was constructed."""

    kind = "dataparallel"
    t: float
    site: Optional[Site]


@dataclass
class FrameworkUse:
    """A training framework configured or drove this rank (inrank/frameworks.py), recorded once
    per call site: HF TrainingArguments, a Lightning Trainer or a synced self.log, an Accelerator
    or its prepare, FSDP / fully_shard, or the framework found in the stack of
    init_process_group / DDP construction."""

    kind = "framework"
    t: float
    name: str  # "transformers" | "lightning" | "accelerate" | "fsdp" | "fsdp2" | "deepspeed"
    version: str
    event: str  # "TrainingArguments", "Trainer", "log_sync_dist", "Accelerator", "prepare", ...
    settings: dict  # what the user set there, e.g. {"ddp_find_unused_parameters": None}
    site: Optional[Site]
    step: int


@dataclass
class Crash:
    """An exception escaped the user's script in this rank."""

    kind = "crash"
    t: float
    exc_type: str
    message: str
    traceback: str
    site: Optional[Site]  # innermost user frame of the traceback
    step: int


@dataclass
class ErrorInFlight:
    """A collective was entered while an exception was being handled in the same thread (the
    cleanup barrier in a `finally:` or `except:`): that exception, which may never leave the
    script if the collective waits for ranks that went on. Written at most once per exception."""

    kind = "error_in_flight"
    t: float
    group: str
    seq: int  # the collective entered with it (the Collective record of this group and seq)
    exc_type: str
    message: str  # secrets scrubbed, at most 1,000 characters
    traceback: str  # the user's part, at most 4,000 characters
    site: Optional[Site]  # where it was raised: the innermost user frame of its traceback
    step: int


@dataclass
class ForwardNoBackward:
    """A DDP training forward (train mode, gradients on) was followed by another with no
    backward in between: this rank skipped DDP's gradient all-reduce for it (a rank-local
    `continue` before backward). Written at the next training forward; at most 64 per model."""

    kind = "forward_no_backward"
    t: float
    ddp_id: int
    iteration: int  # the training forward without a backward (from 0, per model)
    step: int  # optimizer steps done when it ran
    site: Optional[Site]  # where that forward was called


@dataclass
class Note:
    """Something the instruments could not do, said plainly (e.g. a builtin comm hook)."""

    kind = "note"
    t: float
    text: str


@dataclass
class DeviceQuery:
    """`probe --cpu`: the script asked a device question (torch.cuda / torch.accelerator) and the
    shim answered it; once per call and rank. Says which call answered what, for a script that
    still decided it had no GPU."""

    kind = "device_query"
    t: float
    call: str  # "torch.accelerator.device_count()"
    answer: str  # repr of what the script got
    site: Optional[Site]


@dataclass
class ForwardInputs:
    """The tensor inputs of one training forward of a DDP (or FSDP) model, fingerprinted cheaply
    (shape, dtype and a fixed sample of the values): DDP301 without a DataLoader."""

    kind = "forward_inputs"
    t: float
    model_id: int
    iteration: int  # training forwards of this model before this one, from 0
    step: int
    tensors: dict[str, str]  # argument path ("args[0]", "kwargs.input_ids") -> 16-hex fingerprint


@dataclass
class OutputTail:
    """The last lines the script wrote to sys.stdout / sys.stderr in this rank, at its end."""

    kind = "output_tail"
    t: float
    lines: list[str]


@dataclass
class End:
    """The rank stopped: the probe's step limit, or the script returned."""

    kind = "end"
    t: float
    reason: str  # "max_steps" | "script_exit" | "crash"
    step: int


@dataclass
class ActivationCheckpoint:
    """torch.utils.checkpoint was called: once per call site and mode (DDP406 names the cause)."""

    kind = "activation_checkpoint"
    t: float
    reentrant: bool  # the reentrant (autograd.Function) variant ran
    explicit: bool  # the caller passed use_reentrant (False: torch's default was used)
    function: str  # what was checkpointed: the module's class or the function's name
    step: int
    site: Optional[Site]


@dataclass
class Boundary:
    """A boundary path ran: "eval" (Module.eval()), "no_grad" (a torch.no_grad() /
    inference_mode() block opened by the user's code), "save" (torch.save), "load"
    (torch.load). At most a few hundred per kind and rank (inrank/boundaries.py)."""

    kind = "boundary"
    t: float
    what: str
    step: int
    site: Optional[Site]


@dataclass
class Coverage:
    """Lines of the user's script (and its local modules) that ran since the previous Coverage
    record of this rank: file (as the code object names it) -> line numbers (inrank/coverage.py)."""

    kind = "coverage"
    t: float
    lines: dict[str, list[int]]
    step: int
    final: bool = False  # written at the rank's end (the tracer had stopped by then or now stops)
    traced_steps: Optional[int] = None  # the tracer stopped after this many steps (None: never)


@dataclass
class SamplerShard:
    """A DistributedSampler was built: what it shards (DDP304). `dataset_len` is its dataset's
    length, `root_len` that of the dataset at the bottom of its Subset chain; `subset` a
    fingerprint of the outermost Subset's indices (None: no Subset), to tell a split that
    differs by rank from one every rank shares."""

    kind = "sampler_shard"
    t: float
    num_replicas: int
    rank: int
    dataset: str
    dataset_len: Optional[int]
    root: str
    root_len: Optional[int]
    subset: Optional[str]
    site: Optional[Site]
    step: int


@dataclass
class Memory:
    """What this rank holds in memory, and its peak (inrank/memory.py), at a few moments only:
    "start" (instruments installed: the interpreter and torch), "step" (after an optimizer's
    first step: parameters, gradients, optimizer state; then at steps 2, 4, 8, ...: the peak so
    far), "activations" (after the training step that follows the first one) and "end".

    Bytes. On CPU `current` / `peak` are the process's resident set and its high-water mark
    (/proc/self/status VmRSS / VmHWM); on a GPU, the caching allocator's memory_allocated /
    max_memory_allocated on the parameters' device. `params` and `params_full` are what this
    rank holds of the trained parameters and what they take unsharded: equal when replicated
    (DDP), about full / world size when sharded (FSDP, FSDP2). `activations`: the tensors saved
    for backward in one training step (parameters excluded), counted once per storage."""

    kind = "memory"
    t: float
    step: int
    moment: str  # "start" | "step" | "activations" | "end"
    device: str  # "cpu" | "cuda:N"
    current: Optional[int] = None
    peak: Optional[int] = None
    params: Optional[int] = None
    params_full: Optional[int] = None
    grads: Optional[int] = None
    optimizer: Optional[int] = None
    activations: Optional[int] = None
    sharding: str = ""  # "" (replicated) | "fsdp" | "fsdp2" | "zero"
    reserved: Optional[int] = None  # GPU: memory_reserved


@dataclass
class WorkerSeed:
    """The random state a DataLoader's samples were drawn with, once per worker start (DDP305,
    inrank/worker_seeds.py): in each worker after torch seeded it and the script's
    worker_init_fn ran, and, with num_workers=0, in the rank itself before the first batch of
    each epoch. `before` / `after` hash each global generator's state ("torch", "numpy",
    "random": 16 hex digits) before and after the first batch was fetched: a generator that
    moved is one the dataset's augmentation draws from. Equal hashes on two ranks for the same
    worker are the same random draws on both."""

    kind = "worker_seed"
    t: float
    loader_id: int  # as the rank's Loader records number it
    epoch: int  # the loader's epoch (iterator) on this rank, as in its Loader record
    worker: int  # the worker's id; -1: the rank's own process (num_workers=0)
    num_workers: int
    torch_seed: Optional[str]  # torch.initial_seed() there, in hex (64 bits: no wire int)
    before: dict[str, str]
    after: dict[str, str]
    init_fn: str = ""  # the loader's worker_init_fn as the script named it ("" none)


RECORD_TYPES = {cls.kind: cls for cls in (
    Start, InitEnter, Init, DDPInfo, Loader, Batch, EpochEnd, Collective, CollectiveDone, CollectiveResult,
    BucketTiming, BucketLayout, BaselineTiming, DeviceClock, DevicePhases, Grads, Step, Params, Save, DataParallelUse, Crash, Note, End,
    ErrorInFlight, ForwardNoBackward,
    DeviceQuery, ForwardInputs, OutputTail, FrameworkUse, ActivationCheckpoint, Boundary, Coverage,
    SamplerShard, Memory, WorkerSeed)}

# The records that name a place in the user's code (each declares `site: Optional[Site]`), for
# readers that want every site a rank recorded (tests/unit/test_telemetry.py keeps it complete).
SITED = (InitEnter, DDPInfo, Loader, Collective, Save, DataParallelUse, Crash, DeviceQuery, FrameworkUse,
         ActivationCheckpoint, Boundary, SamplerShard, ErrorInFlight, ForwardNoBackward)

# Each kind's field names, once: the watchdog decodes every line a rank appends.
_FIELD_NAMES = {kind: frozenset(f.name for f in fields(cls)) for kind, cls in RECORD_TYPES.items()}


def encode(record: Any) -> bytes:
    """One record as one JSON line. Called inside ranks: keep it cheap (no deep copies)."""
    data = {"kind": record.kind}
    for key, value in vars(record).items():
        data[key] = vars(value) if isinstance(value, Site) else value
    return jsonl.encode(data)


def decode(line: str) -> Optional[Any]:
    """A record from one JSON line; None for a torn, unknown or malformed line."""
    data = jsonl.decode(line)
    return from_dict(data) if data is not None else None


def from_dict(data: dict) -> Optional[Any]:
    """A record from its decoded line; None for an unknown kind or fields that do not fit."""
    kind = data.get("kind")
    cls = RECORD_TYPES.get(kind) if isinstance(kind, str) else None
    if cls is None:
        return None
    names = _FIELD_NAMES[cls.kind]
    kwargs = dict(data)
    del kwargs["kind"]
    if not kwargs.keys() <= names:  # a field this version does not know: dropped
        kwargs = {k: v for k, v in kwargs.items() if k in names}
    if isinstance(kwargs.get("site"), dict):
        try:
            kwargs["site"] = Site(**kwargs["site"])
        except TypeError:
            return None
    try:
        return cls(**kwargs)
    except TypeError:
        return None


def read_records(path: str | os.PathLike, ahead: Optional[tuple[list[Any], int]] = None) -> list[Any]:
    """Every whole record of one rank's telemetry file, in order. `ahead`: its records up to an
    offset, already read (records/read_ahead.py): only the rest is read."""
    done, offset = ahead if ahead is not None else ([], 0)
    found = (from_dict(line.data) for line in rank_files.read_all(path, offset))
    return done + [record for record in found if record is not None]
