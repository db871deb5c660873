"""DistributedDataParallel under the probe.

- Under DETAIL on gloo, DDP is built on the unchecked twin of its group (groups.py) and its
  bucket all-reduces go through the checked group for the first few gradient all-reduce rounds,
  so a mismatched collective is caught by torch's fingerprint check at once; later ones go
  through the twin, so that bucket timings are not distorted by the check's extra barrier.
  On NCCL, DDP keeps its checked group and the later rounds go straight to the NCCL backend
  behind the check (groups.unchecked_backend): no second communicator is made. The
  switch is counted in all-reduce rounds launched, which pair across ranks whatever the script
  does: counted in forwards, a rank that skips a backward switched a round early and the probe
  itself changed which all-reduces paired (issue 34).
- Training forwards are counted; one with no backward before the next (a rank-local `continue`)
  is recorded (ForwardNoBackward): that rank skipped DDP's gradient all-reduce for it.
- Every bucket all-reduce is recorded as a collective and timed, by a comm hook whose numerics
  are bit-identical to DDP's default path: multiply by 1/world_size, then SUM (notes §1; the stock
  allreduce_hook divides and differs at world sizes that are not powers of two).
- A user's own Python comm hook is wrapped and timed; a builtin C++ hook cannot be (said in a Note).
- Parameters that got no local gradient in a backward are recorded per iteration (DDP401/402),
  from post-accumulate-grad hooks, before DDP's own error at the next forward can kill the rank.
- Which clock the bucket times come from is decided per model from its group's backend and the
  gradients' device (device_timing.py): the completion callback's CPU time on gloo/CPU, CUDA
  events on a GPU, and on anything else no time at all ("device time not measured").
"""

from __future__ import annotations

import functools
import inspect
import itertools
import time
from typing import Any, Callable, Optional

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

from ddpdoctor.probe.records import rundir
from ddpdoctor.probe.records import telemetry as tm
from ddpdoctor.probe.inrank import (collectives, coverage, device_timing, fingerprint, forward_inputs,
                                    frameworks, groups, hooks, recorder)

_ids = itertools.count()
SITE_EVERY = 20  # the backward call site is looked up afresh every this many iterations
# Strong references: the parameters are fingerprinted when the rank ends, which is after the
# script's main() has returned and dropped its model.
_all_states: list["DDPState"] = []


class DDPState:
    """What the probe keeps beside one DDP model."""

    def __init__(self, model: DDP, checked_group: Any, logical_group: Any,
                 checked_iterations: int) -> None:
        self.id = next(_ids)
        self.model = model
        self.names = [n for n, p in model.module.named_parameters() if p.requires_grad]
        self.name_of = {id(p): n for n, p in model.module.named_parameters()}
        self.used: set[str] = set()
        self.twice: list[str] = []  # gradients accumulated twice in this backward (DDP406)
        self.iteration = -1  # DDP training forwards so far, minus one
        self.pending = False  # a backward happened whose Grads record is not written yet
        self.backward_iterations = 0  # since the previous optimizer step
        self.allreduce_rounds = 0
        self.forwards = 0  # training forwards since the previous optimizer step
        self.rounds_launched = 0  # gradient all-reduce rounds launched (the last bucket's launch)
        self.grads_iteration = -1  # the last iteration whose backward was recorded (Grads)
        self.forward_site: Optional[tm.Site] = None  # of the current training forward
        self.forward_step = 0  # optimizer steps done at the current training forward
        self.no_backward_records = 0
        self.checked_group = checked_group
        self.checked_iterations = checked_iterations
        self.checked_round = True  # the round being launched goes through torch's DETAIL check
        self.unchecked: dict[tuple, Any] = {}  # (id(group), device) -> backend behind the check
        self.group_name, _ = groups.describe(logical_group)
        self.world = dist.get_world_size(model.process_group)
        self.hook_registered = False
        self.layouts: dict[int, int] = {}
        self.site_iteration = -2
        self.site: Optional[tm.Site] = None
        # Wall-clock marks of the current iteration, for the step's phases (DDP601/604).
        self.forward_start = self.forward_end = 0.0
        self.last_grad = 0.0  # the last local gradient became ready: backward compute done
        self.last_bucket_end = 0.0  # the last bucket's all-reduce completed
        # The clock of its bucket times (device_timing.py): decided at construction from the
        # parameters' device, checked against the first bucket's.
        self.clock: Optional[str] = None
        self.clock_device = ""
        self.device: Optional[torch.device] = None  # the device the clock was decided for
        self.timer: Optional[device_timing.DeviceTimer] = None

    def decide_clock(self, device: torch.device) -> None:
        """Decide (and record) which clock this model's bucket times come from."""
        backend = device_timing.backend_of(self.model.process_group, device)
        clock, reason = device_timing.decide(backend, device)
        self.timer = None
        if clock == device_timing.CUDA_EVENTS:
            timer = device_timing.timer_for(device)
            if timer.failed:
                clock, reason = device_timing.NONE, f"device time not measured: {timer.failed}"
            else:
                self.timer = timer
                device_timing.timeline.attach(timer)
        self.clock, self.clock_device, self.device = clock, str(device), device
        recorder.get().write(tm.DeviceClock(time.time(), self.id, clock, backend, str(device), reason))

    def check_timer(self) -> None:
        """CUDA events failed since the clock was decided: from now on, not measured."""
        timer = self.timer
        if timer is not None and timer.failed:
            self.timer = None
            self.clock = device_timing.NONE
            recorder.get().write(tm.DeviceClock(time.time(), self.id, device_timing.NONE, "",
                                                self.clock_device,
                                                f"device time not measured: {timer.failed}"))

    def flush_grads(self) -> None:
        if not self.used:
            return
        rec = recorder.get()
        if self.timer is not None:
            self.check_timer()
        if self.last_grad > self.forward_end > 0:
            rec.add_phase("backward", self.last_grad - self.forward_end)
            # Only where the completion callback is the all-reduce's end (gloo on CPU): on a
            # GPU the device timeline has it (DevicePhases), elsewhere nothing does.
            if self.clock == device_timing.CPU and self.last_bucket_end > self.last_grad:
                # Communication still running after the last gradient was computed: the share
                # of the all-reduce that backward did not hide.
                rec.add_phase("comm_exposed", self.last_bucket_end - self.last_grad)
        unused = [n for n in self.names if n not in self.used]
        rec.write(tm.Grads(time.time(), self.id, self.iteration, rec.step, unused, len(self.used),
                           self.twice))
        self.grads_iteration = self.iteration
        self.used = set()
        self.twice = []
        self.backward_iterations += 1

    def take_counts(self) -> tuple[int, int, int]:
        counts = (self.backward_iterations, self.allreduce_rounds, self.forwards)
        self.backward_iterations = self.allreduce_rounds = self.forwards = 0
        return counts

    def training_forward(self) -> None:
        """A training forward begins: the previous one's backward, if any, is recorded first;
        a previous one without a backward skipped DDP's gradient all-reduce for it."""
        self.flush_grads()
        if self.iteration >= 0 and self.grads_iteration != self.iteration and self.no_backward_records < 64:
            self.no_backward_records += 1
            recorder.get().write(tm.ForwardNoBackward(time.time(), self.id, self.iteration,
                                                      self.forward_step, self.forward_site))
        self.iteration += 1
        self.forwards += 1
        rec = recorder.get()
        self.forward_step = rec.step
        # Walked like the backward's site: the first SITE_EVERY forwards, then every SITE_EVERY-th.
        if self.forward_site is None or self.iteration < SITE_EVERY or self.iteration % SITE_EVERY == 0:
            self.forward_site = recorder.user_site(3)

    def record_params(self) -> None:
        model = self.model
        rec = recorder.get()
        prints = {n: fingerprint.tensor_fingerprint(p) for n, p in model.module.named_parameters()
                  if p.requires_grad}
        rec.write(tm.Params(time.time(), self.id, rec.step, prints))

    # -- the comm path ---------------------------------------------------------------------

    def _backward_site(self) -> Optional[tm.Site]:
        # Every bucket of one backward shares the site, and a training loop calls backward from
        # the same line every iteration: the stack is walked for the first SITE_EVERY iterations,
        # then every SITE_EVERY-th (a stack walk is ~1% of a millisecond step).
        if self.site_iteration != self.iteration and (
                self.site is None or self.iteration < SITE_EVERY or self.iteration % SITE_EVERY == 0):
            self.site_iteration = self.iteration
            self.site = recorder.user_site(3)
        return self.site

    def _record_layout(self, bucket: Any, index: int, nbytes: int) -> None:
        if self.layouts.get(index) == nbytes:
            return
        self.layouts[index] = nbytes
        names = [self.name_of.get(id(p), "?") for p in bucket.parameters()]
        recorder.get().write(tm.BucketLayout(time.time(), self.id, index, names, nbytes))

    def launch(self, bucket: Any, tensor: torch.Tensor, hook_name: str,
               reduce: Callable[[torch.Tensor, Any], Any]) -> torch.futures.Future:
        """Start one bucket's reduction through `reduce(tensor, group)`, recorded and timed."""
        rec = recorder.get()
        model = self.model
        index, is_last = bucket.index(), bucket.is_last()
        nbytes = tensor.numel() * tensor.element_size()
        self._record_layout(bucket, index, nbytes)
        # Counted in rounds launched, never in forwards: every rank switches at the same
        # all-reduce, whatever it skipped (the pairing of the script's collectives stays as is).
        self.checked_round = self.rounds_launched < self.checked_iterations
        if self.checked_group is not None and self.checked_round:
            group = self.checked_group
        else:
            group = model.process_group if model is not None else None
        if is_last:
            self.rounds_launched += 1
        seq = collectives.next_seq(self.group_name)
        if self.clock is None or tensor.device != self.device:
            self.decide_clock(tensor.device)
        timer = self.timer
        rec.write(tm.Collective(time.time(), self.group_name, None, seq, "ddp_bucket_allreduce",
                                [[tensor.numel()]], [str(tensor.dtype).replace("torch.", "")],
                                rec.step, self._backward_site(), index))
        step, iteration, state = rec.step, self.iteration, self
        # The clocks start right before the launch, after our own record: on a GPU that waits
        # for launches (a short step), every microsecond of Python between the start event and
        # the launch would count as all-reduce time on the device (measured on an H200: buckets
        # at 20x a raw all_reduce with the record in between). On CUDA the event sits on the
        # current stream, after the gradients and the mul_ above it.
        start_event = timer.record() if timer is not None else None
        start = time.time()
        future = reduce(tensor, group)

        def finished(fut: torch.futures.Future) -> Any:
            # gloo: runs on its worker thread, within ~0.2 ms of completion (notes §1). NCCL:
            # runs at enqueue, on a stream torch made wait for the work's CUDA events; the end
            # event is recorded first, before any Python of ours, for the reason above.
            end_event = timer.record() if timer is not None else None
            end = time.time()
            value = fut.value()  # raises if the all-reduce failed: then it is not "done"
            rec.write(tm.CollectiveDone(end, state.group_name, seq))
            if end_event is not None and start_event is not None:
                device_timing.timeline.bucket(start_event, end_event, is_last)

                def resolved(walls: list[float]) -> None:
                    rec.write(tm.BucketTiming(walls[1], state.id, index, nbytes, walls[0], walls[1],
                                              step, iteration, is_last, hook_name,
                                              device_timing.CUDA_EVENTS))

                timer.later([start_event, end_event], resolved)
            else:
                # CPU times: the all-reduce's on gloo/CPU; on anything else launch and callback
                # times, recorded as such ("none") and never judged as the all-reduce's.
                clock = device_timing.NONE if timer is not None else state.clock
                rec.write(tm.BucketTiming(end, state.id, index, nbytes, start, end, step,
                                          iteration, is_last, hook_name, clock))
            state.last_bucket_end = end
            if is_last:
                state.allreduce_rounds += 1
            return value[0] if isinstance(value, list) else value

        return future.then(finished)


def _default_reduce(state: DDPState) -> Callable:
    all_reduce = collectives.original("all_reduce")

    options = dist.AllreduceOptions()  # SUM, made once: this runs for every bucket
    options.reduceOp = dist.ReduceOp.SUM

    def reduce(tensor: torch.Tensor, group: Any) -> torch.futures.Future:
        if not state.checked_round:
            key = (id(group), tensor.device)
            backend = state.unchecked.get(key, state)
            if backend is state:
                backend = state.unchecked[key] = groups.unchecked_backend(group, tensor.device)
            if backend is not None:  # past the checked rounds, every rank at once
                return backend.allreduce([tensor], options).get_future()
        return all_reduce(tensor, group=group, async_op=True).get_future()

    return reduce


# DDP checks a hook's annotations against the real classes, and this module's annotations are
# strings (__future__), so the hooks carry none.
def _timed_default_hook(state, bucket):
    buffer = bucket.buffer()
    # What the reducer does without a hook, bit for bit. Before launch() starts the clock: DDP's
    # own path fuses it into the copy into the bucket, so it is not all-reduce time (DDP602).
    buffer.mul_(1.0 / state.world)
    return state.launch(bucket, buffer, "default", state.default_reduce)


def _wrap_user_hook(state: DDPState, user_state: Any, hook: Callable) -> Callable:
    """Time a user's Python hook. DDP reads the hook's parameter named `bucket` and special-cases
    some hooks by __name__, so the wrapper keeps both."""

    def timed(user_state_arg, bucket):
        def reduce(tensor: torch.Tensor, group: Any) -> torch.futures.Future:
            return hook(user_state_arg, bucket)

        return state.launch(bucket, bucket.buffer(), getattr(hook, "__name__", "user hook"), reduce)

    timed.__name__ = getattr(hook, "__name__", "timed")
    timed.__qualname__ = f"ddpdoctor_timed({getattr(hook, '__qualname__', timed.__name__)})"
    return timed


def all_states() -> list[DDPState]:
    return list(_all_states)


# `probe --verify-fix` reruns the script with some DDP arguments changed, the script untouched:
# the launcher's run dir holds them as JSON (probe/launch/verify.py writes it).
OVERRIDES_FILE = rundir.DDP_OVERRIDES_FILE
OVERRIDABLE = ("bucket_cap_mb", "gradient_as_bucket_view", "static_graph", "find_unused_parameters")
signature_defaults: dict = {}  # DDP.__init__'s defaults, to say what an override replaced


def _overrides() -> dict:
    import json
    import os

    from ddpdoctor.probe.inrank.config import ENV_RUN_DIR

    run_dir = os.environ.get(ENV_RUN_DIR)
    path = os.path.join(run_dir, OVERRIDES_FILE) if run_dir else ""
    if not path or not os.path.isfile(path):
        return {}
    with open(path) as handle:
        data = json.load(handle)
    return {k: v for k, v in data.items() if k in OVERRIDABLE}


def _override(arguments: dict, overrides: dict) -> None:
    """Apply --verify-fix's DDP arguments, and say what the script had asked for."""
    changed = []
    for name, value in overrides.items():
        before = arguments.get(name, signature_defaults.get(name))
        arguments[name] = value
        if before != value:
            changed.append(f"{name}={value!r} (the script: {before!r})")
    if changed:
        recorder.get().note_once("verify-fix", "--verify-fix: DDP built with " + ", ".join(changed))


def install(checked_iterations: int) -> None:
    signature = inspect.signature(hooks.original("DDP.__init__"))
    original_register = DDP.register_comm_hook
    original_builtin = DDP._register_builtin_comm_hook
    signature_defaults.update({name: p.default for name, p in signature.parameters.items()
                               if p.default is not inspect.Parameter.empty})
    try:
        overrides = _overrides()
    except Exception as exc:  # noqa: BLE001 - the script must run as written then
        overrides = {}
        recorder.get().note_once("verify-fix", f"ddpdoctor bug: --verify-fix arguments unreadable ({exc!r})")

    def __init__(call: Callable, self: DDP, *args: Any, **kwargs: Any) -> None:
        bound = hooks.bind(signature, (self, *args), kwargs)
        if bound is None:
            return call(self, *args, **kwargs)
        arguments = bound.arguments
        if overrides:
            _override(arguments, overrides)
        logical_group = arguments.get("process_group")
        checked_group = None
        workaround = False
        if groups.detail_on_gloo(logical_group):
            twin = groups.twin_of(logical_group)
            if twin is not None:
                arguments["process_group"] = twin
                checked_group = logical_group or dist.distributed_c10d._get_default_group()
                workaround = True
        site = recorder.user_site(2)
        frameworks.record_driver("DistributedDataParallel")  # built by HF, Lightning, ...?
        with coverage.paused():
            call(*bound.args, **bound.kwargs)
        try:
            _instrument(self, arguments, logical_group, checked_group, workaround, site,
                        checked_iterations)
        except Exception as exc:  # noqa: BLE001 - the user's model must still train
            recorder.get().note_once("ddp", f"DDP instruments failed: {exc!r}")

    @functools.wraps(original_register)
    def register_comm_hook(self: DDP, state: Any, hook: Callable) -> None:
        probe_state: Optional[DDPState] = self.__dict__.get("_ddpdoctor")
        if probe_state is None or hook is _timed_default_hook:
            return original_register(self, state, hook)
        probe_state.hook_registered = True
        return original_register(self, state, _wrap_user_hook(probe_state, state, hook))

    @functools.wraps(original_builtin)
    def _register_builtin_comm_hook(self: DDP, comm_hook_type: Any) -> None:
        probe_state: Optional[DDPState] = self.__dict__.get("_ddpdoctor")
        if probe_state is not None:
            probe_state.hook_registered = True
            recorder.get().note_once(
                "builtin-hook", f"DDP uses the builtin C++ comm hook {comm_hook_type}: its bucket "
                "all-reduces cannot be timed or recorded from Python")
        return original_builtin(self, comm_hook_type)

    hooks.register("DDP.__init__", "ddp", __init__)
    DDP.register_comm_hook = register_comm_hook
    DDP._register_builtin_comm_hook = _register_builtin_comm_hook


def _instrument(model: DDP, arguments: dict, logical_group: Any, checked_group: Any,
                workaround: bool, site: Optional[tm.Site], checked_iterations: int) -> None:
    state = DDPState(model, checked_group, logical_group, checked_iterations)
    state.default_reduce = _default_reduce(state)  # once per model, not once per bucket
    model.__dict__["_ddpdoctor"] = state
    _all_states.append(state)
    params = [p for p in model.module.parameters() if p.requires_grad]
    if params:
        # Now rather than in the first backward: on CUDA the clock's anchor synchronizes once.
        state.decide_clock(params[0].device)
    device_ids = arguments.get("device_ids")
    recorder.get().write(tm.DDPInfo(
        time.time(), state.id, bool(arguments.get("find_unused_parameters", False)),
        bool(arguments.get("static_graph", False)),
        bool(arguments.get("gradient_as_bucket_view", False)), arguments.get("bucket_cap_mb"),
        [str(d) for d in device_ids] if device_ids is not None else None, state.names,
        sum(p.numel() * p.element_size() for p in params), site, workaround))

    for name, param in model.module.named_parameters():
        if param.requires_grad:
            param.register_post_accumulate_grad_hook(functools.partial(_mark_used, state, name))

    def before_forward(module: DDP, args: Any) -> None:
        if not state.hook_registered:
            state.hook_registered = True
            module.register_comm_hook(state, _timed_default_hook)
        if module.training and torch.is_grad_enabled():
            state.training_forward()
        state.forward_start = time.time()
        if state.timer is not None:
            state.timer.poll()  # what completed on the device since (a query, no waiting)
        device_timing.timeline.forward_start()  # nothing unless a model is timed by CUDA events

    def after_forward(module: DDP, args: Any, output: Any) -> None:
        state.forward_end = time.time()
        device_timing.timeline.forward_end()
        recorder.get().add_phase("forward", state.forward_end - state.forward_start)

    _record_buffer_broadcasts(model, state)
    model.register_forward_pre_hook(before_forward)
    model.register_forward_hook(after_forward)
    forward_inputs.attach(model, state.id)  # what the model is fed, for DDP301


# run_model/busy_or_blocked.py's name for it (inrank may not import run_model).
BUFFER_BROADCAST = "ddp_buffer_broadcast"


def _record_buffer_broadcasts(model: DDP, state: DDPState) -> None:
    """DDP broadcasts the module's buffers from rank 0 at the start of each forward (when it has
    buffers and broadcast_buffers=True): a collective of its own, recorded like the script's, at
    the forward's call site, so a forward run on some ranks only is the odd call (not the
    barrier its peers wait in)."""
    original = model._distributed_broadcast_coalesced

    def broadcast(tensors: Any, buffer_size: Any, authoritative_rank: int = 0) -> Any:
        rec = recorder.get()
        seq = collectives.next_seq(state.group_name)
        try:
            training = model.training and torch.is_grad_enabled()
            # A training forward's site is the one training_forward keeps; another forward (an
            # evaluation, perhaps on one rank only) is looked up now.
            site = state.forward_site if training and state.forward_site is not None else recorder.user_site(2)
            numel = sum(t.numel() for t in tensors)
            dtypes = sorted({str(t.dtype).replace("torch.", "") for t in tensors})
            rec.write(tm.Collective(time.time(), state.group_name, None, seq, BUFFER_BROADCAST,
                                    [[numel]], dtypes, rec.step, site))
        except Exception:  # noqa: BLE001 - recording is a nicety; the broadcast must happen
            pass
        result = original(tensors, buffer_size, authoritative_rank)
        rec.write(tm.CollectiveDone(time.time(), state.group_name, seq))
        return result

    model._distributed_broadcast_coalesced = broadcast


def _mark_used(state: DDPState, name: str, _param: torch.Tensor) -> None:
    if name in state.used and len(state.twice) < 64:
        state.twice.append(name)  # a second gradient in one backward: DDP marks it ready twice
    state.used.add(name)
    state.last_grad = time.time()
