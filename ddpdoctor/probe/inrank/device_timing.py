"""Which clock a duration comes from, and device-side timing on CUDA.

A CPU clock around a collective is its duration only where the collective's future completes
when the bytes have moved: gloo on CPU tensors (its worker thread completes the future after the
transfer; notes §1). ProcessGroupNCCL completes the future right after it enqueued the kernel,
and CUDA kernels run asynchronously, so on a GPU the CPU sees launches, not work. The clock is
therefore decided per DDP model from facts, the process group's backend for the gradients'
device and that device, and recorded (tm.DeviceClock):

- "cpu": gloo with CPU tensors. The completion callback's time.time() is the truth (unchanged).
- "cuda-events": CUDA tensors on a backend whose futures are CUDA-aware (NCCL, gloo): an event
  recorded on the current stream before the launch, and one recorded inside the future's then()
  callback, which torch runs on a stream made to wait on the work's own CUDA events (so the end
  event completes when the collective has, on the device). Events are read off the hot path: they
  wait in a queue and are resolved with query() at the next optimizer step, or at the end with a
  deadline; never a synchronize() per bucket.
- "none": anything else (another backend, whose futures may complete at enqueue as NCCL's do,
  with CPU tensors that have no device clock; another device type; CUDA events failing). The
  tables then say "device time not measured" and the checks that need it skip with the reason:
  never an untrue number.

Device times are written as wall-clock seconds, like every other time in the telemetry: one
anchor per device (a synchronize, then an event and time.time() at once, when the clock is first
decided) maps the device timeline onto the wall clock, so the analysis lines ranks up as it does
on the CPU. Everything here is guarded: any CUDA failure turns the clock to "none" with the
reason, never an exception into the script.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from typing import Any, Callable, Optional

import torch

from ddpdoctor.probe.records import telemetry as tm
from ddpdoctor.probe.inrank import recorder

CPU, CUDA_EVENTS, NONE = "cpu", "cuda-events", "none"
# Backends whose future, for CPU tensors, completes when the collective has completed.
CPU_COMPLETING = ("gloo",)
# Backends whose futures carry CUDA events, so a then() callback's stream waits on the work.
CUDA_AWARE = ("nccl", "gloo")
MAX_PENDING = 4096  # unresolved entries kept; beyond, the oldest are dropped (and counted)
FINAL_WAIT_S = 2.0  # at the end, how long to wait for the last events (a hung GPU must not hang us)


def backend_of(group: Any, device: torch.device) -> str:
    """The backend that carries `device`'s tensors on `group`, lower case ("" if unknown)."""
    try:
        return str(group._get_backend(device).name()).lower()
    except Exception:  # noqa: BLE001 - a Python process group has no per-device backends
        pass
    try:
        import torch.distributed as dist

        name = str(dist.get_backend(group)).lower()
    except Exception:  # noqa: BLE001
        return ""
    if ":" in name:  # "cpu:gloo,cuda:nccl"
        pairs = dict(part.split(":", 1) for part in name.split(",") if ":" in part)
        return pairs.get(device.type, "")
    return name


def decide(backend: str, device: torch.device) -> tuple[str, str]:
    """(clock, why not measured) for collectives of `device` tensors on `backend`."""
    if device.type == "cpu":
        if backend in CPU_COMPLETING:
            return CPU, ""
        return NONE, (f"device time not measured: the process group's backend {backend or '?'!r} "
                      "is not one whose collective completion ddpdoctor can time (its futures "
                      "may complete when the work is enqueued, as NCCL's do), and CPU tensors "
                      "have no device clock")
    if device.type == "cuda":
        if backend in CUDA_AWARE:
            return CUDA_EVENTS, ""
        return NONE, (f"device time not measured: the backend {backend or '?'!r} is not one whose "
                      "futures are known to carry CUDA events, so an event cannot be made to "
                      "wait for its collectives")
    return NONE, f"device time not measured: no device clock for {device.type} tensors"


def _short(exc: BaseException) -> str:
    text = str(exc).splitlines()[0][:160] if str(exc) else ""
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


class DeviceTimer:
    """CUDA events for one device: recorded on the hot path, resolved later (never synchronized
    per bucket). `failed` holds the reason once any CUDA call failed; from then on nothing is
    recorded and the clock is "none"."""

    def __init__(self, device: torch.device) -> None:
        self.device = device
        self.failed = ""
        self._pending: deque = deque()  # (events, on_resolved) in recording order
        self._lock = threading.Lock()  # the autograd thread records, the main thread resolves
        self.dropped = 0
        self.anchor_event: Any = None
        self.anchor_wall = 0.0
        try:
            torch.cuda.synchronize(device)  # once: the device idle, the anchor event runs at once
            event = torch.cuda.Event(enable_timing=True)
            before = time.time()
            event.record(torch.cuda.current_stream(device))
            event.synchronize()
            after = time.time()
            self.anchor_event, self.anchor_wall = event, (before + after) / 2
        except Exception as exc:  # noqa: BLE001 - then device time is not measured
            self.fail(f"CUDA events unavailable ({_short(exc)})")

    def fail(self, reason: str) -> None:
        if not self.failed:
            self.failed = reason
            with self._lock:
                self._pending.clear()

    def record(self) -> Optional[Any]:
        """An event recorded now on the current stream, or None once timing failed."""
        if self.failed:
            return None
        try:
            # A new event each time: one event may sit in two entries (a bucket's and its step's).
            event = torch.cuda.Event(enable_timing=True)
            event.record(torch.cuda.current_stream(self.device))
            return event
        except Exception as exc:  # noqa: BLE001
            self.fail(f"recording a CUDA event failed ({_short(exc)})")
            return None

    def wall(self, event: Any) -> float:
        """The wall-clock time at which a completed event ran on the device."""
        return self.anchor_wall + self.anchor_event.elapsed_time(event) / 1e3

    def later(self, events: list[Any], on_resolved: Callable[[list[float]], None]) -> None:
        """Call on_resolved(wall times of `events`) once they have all completed."""
        if self.failed or any(e is None for e in events):
            return
        with self._lock:
            if len(self._pending) >= MAX_PENDING:
                self._pending.popleft()
                self.dropped += 1
            self._pending.append((events, on_resolved))

    def poll(self, deadline: float = 0.0) -> int:
        """Resolve the completed entries, in order; wait for the rest until `deadline` (0: no
        waiting). Returns how many are still pending."""
        while True:
            with self._lock:
                entry = self._pending[0] if self._pending else None
            if entry is None or self.failed:
                return 0
            events, on_resolved = entry
            try:
                ready = all(e.query() for e in events)
                if not ready:
                    if time.time() >= deadline:
                        return len(self._pending)
                    time.sleep(0.001)
                    continue
                walls = [self.wall(e) for e in events]
            except Exception as exc:  # noqa: BLE001
                self.fail(f"reading CUDA events failed ({_short(exc)})")
                return 0
            with self._lock:
                if self._pending and self._pending[0] is entry:
                    self._pending.popleft()
            try:
                on_resolved(walls)
            except Exception as exc:  # noqa: BLE001 - runs in the script's forward or step
                self.fail(f"ddpdoctor bug: writing device timings failed ({exc!r})")
                return 0


_timers: dict[str, DeviceTimer] = {}


def timer_for(device: torch.device) -> DeviceTimer:
    """One DeviceTimer (one anchor) per device of this process."""
    key = str(device)
    if key not in _timers:
        _timers[key] = DeviceTimer(device)
    return _timers[key]


def poll_all(deadline: float = 0.0) -> None:
    """Resolve what has completed on every device (at a step boundary; at the end with a
    deadline). Never raises."""
    for timer in list(_timers.values()):
        try:
            left = timer.poll(deadline)
            if deadline and left:
                recorder.get().note_once(
                    "device-pending", f"{left} device timings on {timer.device} had not completed "
                    f"{FINAL_WAIT_S:g} s after the last step: left out")
            if timer.dropped and deadline:
                recorder.get().note_once(
                    "device-dropped", f"{timer.dropped} device timings on {timer.device} were "
                    "dropped: more were waiting than the probe keeps")
        except Exception as exc:  # noqa: BLE001 - the user's job goes on
            timer.fail(f"ddpdoctor bug: resolving device timings failed ({exc!r})")


def _guarded(method: Callable) -> Callable:
    """A StepTimeline method that never raises into the script: a failure turns timing off."""

    def guarded(self: "StepTimeline", *args: Any, **kwargs: Any) -> None:
        if self.timer is None:
            return  # nothing on the device to time (every CPU run): as cheap as it gets
        try:
            method(self, *args, **kwargs)
        except Exception as exc:  # noqa: BLE001 - called from the script's forward, backward, step
            if self.timer is not None:
                self.timer.fail(f"ddpdoctor bug: device phases failed ({exc!r})")

    guarded.__name__ = method.__name__
    return guarded


class StepTimeline:
    """The device-side phases of the current optimizer step, from events on the compute stream:
    forward start/end (per training forward), per backward iteration the last bucket's launch
    (every gradient ready: backward done on the device) and the end of its buckets'
    all-reduces, and the optimizer's start/end. Closed at each optimizer step and resolved later
    into a tm.DevicePhases record for that step."""

    def __init__(self) -> None:
        self.timer: Optional[DeviceTimer] = None
        self._reset()

    def _reset(self) -> None:
        self.forwards: list[list[Any]] = []  # [start, end]
        self.iterations: list[tuple[Any, list[Any], Any]] = []  # (forward end, bucket ends, backward end)
        self.optimizer: list[Any] = []
        self._bucket_ends: list[Any] = []
        self._backward_end: Any = None

    def attach(self, timer: DeviceTimer) -> None:
        self.timer = self.timer or timer

    @_guarded
    def forward_start(self) -> None:
        if self.timer is not None:
            self.forwards.append([self.timer.record(), None])

    @_guarded
    def forward_end(self) -> None:
        if self.timer is not None and self.forwards and self.forwards[-1][1] is None:
            self.forwards[-1][1] = self.timer.record()

    @_guarded
    def bucket(self, start: Any, end: Any, is_last: bool) -> None:
        """A bucket's events: the start of the last bucket is the end of backward."""
        if self.timer is None:
            return
        self._bucket_ends.append(end)
        if is_last:
            self._backward_end = start
            forward_end = self.forwards[-1][1] if self.forwards else None
            self.iterations.append((forward_end, self._bucket_ends, self._backward_end))
            self._bucket_ends, self._backward_end = [], None

    @_guarded
    def optimizer_start(self) -> None:
        if self.timer is not None:
            self.optimizer = [self.timer.record()]

    @_guarded
    def close(self, step: int) -> None:
        """The optimizer step `step` ended: queue its events, start the next step's."""
        timer = self.timer
        if timer is None:
            return
        if self.optimizer:
            self.optimizer.append(timer.record())
        forwards = [f for f in self.forwards if f[0] is not None and f[1] is not None]
        iterations = [it for it in self.iterations
                      if it[0] is not None and it[2] is not None and all(e is not None for e in it[1])]
        optimizer = self.optimizer if len(self.optimizer) == 2 and None not in self.optimizer else []
        self._reset()
        events: list[Any] = [e for f in forwards for e in f]
        layout = []  # where each iteration's events sit in `events`
        for forward_end, ends, backward_end in iterations:
            layout.append((len(events), len(ends)))
            events.extend([forward_end, backward_end, *ends])
        events.extend(optimizer)
        if not events:
            return

        def resolved(walls: list[float]) -> None:
            phases: dict[str, float] = {}
            n = 2 * len(forwards)
            if forwards:
                phases["forward"] = sum(max(0.0, walls[i + 1] - walls[i]) for i in range(0, n, 2))
            backward = exposed = 0.0
            for at, count in layout:
                forward_end, backward_end = walls[at], walls[at + 1]
                comm_end = max(walls[at + 2:at + 2 + count], default=backward_end)
                backward += max(0.0, backward_end - forward_end)
                exposed += max(0.0, comm_end - backward_end)
            if layout:
                phases["backward"] = backward
                phases["comm_exposed"] = exposed
            if optimizer:
                phases["optimizer"] = max(0.0, walls[-1] - walls[-2])
            recorder.get().write(tm.DevicePhases(time.time(), step,
                                                 {k: round(v, 7) for k, v in phases.items()}))

        timer.later(events, resolved)


timeline = StepTimeline()  # one per process: the step is the process's
