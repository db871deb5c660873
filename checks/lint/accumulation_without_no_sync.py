"""DDP805: gradient accumulation without no_sync."""

from __future__ import annotations

from ddpdoctor.core.findings import Problem, Severity
from ddpdoctor.core.registry import Skipped, check
from ddpdoctor.lint.facts import LintFacts


@check("DDP805", "Gradient accumulation without no_sync", Severity.WARNING)
def accumulation_without_no_sync(facts: LintFacts) -> list[Problem] | Skipped:
    """
    What it detects:
        A DistributedDataParallel model trained with gradient accumulation - `backward()` on
        every pass of a micro-step loop with the optimizer step after it, or a step under
        `if (i + 1) % accum == 0:` - while the source never uses `model.no_sync()` nor sets
        `model.require_backward_grad_sync` (nanoGPT's way). The backward and the step may sit
        in a helper (an AMP loss scaler's `__call__` with `update_grad=`, a `backward(loss,
        scaler)` function) or on both sides of `if scaler is not None: ... else: ...`. An
        Accelerate script that accumulates by hand (`accelerator.backward()` every batch, the
        step every K, or once after a micro-step loop; a plain `loss.backward()` of a prepared
        model alike) without `accelerator.accumulate()` is reported too, and so is
        `model.require_backward_grad_sync = last` set after the micro-step's forward (DDP reads
        it in the forward: it takes effect one micro-step late), and `with model.no_sync():`
        (or Lightning Fabric's `fabric.no_backward_sync(model)`, the same no_sync)
        entered after the forward, around the backward only (it changes nothing), or on for the
        micro-step that steps (`no_sync() if i % k != 0` with the step at `(i + 1) % k == 0`:
        that step's gradients are never all-reduced) or left on for every micro-step (`with
        model.no_sync():` around the whole stepping loop, or entered round every pass's forward;
        not where the loop all-reduces the gradients by hand, `dist.all_reduce(p.grad)`), and a
        sync flag out of phase with the step
        (`model.require_backward_grad_sync = (i == k - 1)` over a loop whose counter runs on past
        k: false on every later stepping micro-step). An ignite `Engine(update)` calls
        `update` once per batch: its body is judged as a loop's. Scripts whose
        framework handles accumulation (Lightning, the Hugging Face Trainer, DeepSpeed
        engines, and Accelerate where every launch config beside the script picks DeepSpeed:
        `accelerator.backward` hands the loss to the engine, which accumulates) are not
        judged, nor loops that only processes wrapping no model run (every way in starts at an
        mp.spawn target whose calls, a few deep, build no DDP model and prepare nothing: a
        pipeline stage's worker spawned beside the DDP one), nor loops whose backward never reaches a DDP model (a plain student trained
        against a detached DDP teacher), whose step helper clears the gradients first, whose
        step sits beside a side that clears them without stepping (`if not isfinite(loss):
        opt.zero_grad() else: opt.step()`: a skipped batch - not a side that steps, then clears,
        `else: scaler.step(opt); opt.zero_grad()`, the mixed-precision half of the step), or
        whose accumulation count is 1 on every way in (a literal `% 1`, a module constant at 1
        nothing rebinds, an option at 1 on the run as launched - given 1 by some launches and
        left at its declared default 1 by the others too -, or a step test the options make
        true on every pass: `mode in ["random", "round-robin"]` with `--mode` at "random"); a
        `no_sync` in a helper the loop never runs covers nothing, nor does one in another loop
        (an Accelerate or Fabric trainer beside one that skips the sync), and a loss whose forward
        runs a module no `accelerator.prepare()` wrapped (a wrapper built around the plain model
        before the model was prepared) syncs nothing, nor does a loss computed round the wrapper
        (`self.model.module.training_step(batch)`, or the `else:` of `isinstance(self.model,
        DDP)`) and handed to `accelerator.backward(loss)`, or computed by a method of the module
        handed into the wrapper under another name (`model = DDP(policy)`, then
        `policy.compute_loss(batch)`: no DDP forward runs). A count at 1 that a launch may raise - a
        command-line option's default, or a module constant the module's run-time configurator
        may rebind (nanoGPT's `exec(open("configurator.py").read())`) - is reported as a warning
        that starts with that assumption. `if args.accum == 1: <step every pass> elif
        args.accum > 1: <accumulate>` is judged on the accumulating side, also where the switch
        sits at the top of the per-batch step helper the loop calls (`if not self.exp.use_grad_acc:
        ... else: backward; if (self.iter + 1) % k == 0: step`, YOLOX-style trainers). Nor is a step that follows its own backward
        on the same side of an `if` (`if amp: scaler_step(loss) else: loss.backward();
        opt.step()`). The finding points at the backward the loop runs: inside the helper that
        computes the loss and backpropagates it (`train_step(model, batch)` -> `loss.backward()`),
        or at the loop's call where it hands the loss to a helper that only runs the backward
        (a loss scaler's `__call__`) or the helper backpropagates on two sides of a switch;
        where the loop itself backpropagates on several sides (`if args.fp16: scaler.scale(
        loss).backward() ... else: loss.backward()`), at the side the options' defaults take.
        `no_sync` wraps the loop's call either way, forward included; for a `no_sync` entered
        after the forward (also a forward a helper handed the model runs, `loss = compute(model,
        x)`), at the backward the context holds, the message naming where it is entered. A loop
        only mp.spawn's launcher runs beside its ranks, where the ranks alone join a process
        group, syncs nothing and is not reported. The step's period is read
        from any step the loop takes (an engine's `model.step()` on one side, a loss scaler's
        `update_grad=(i + 1) % update_freq == 0` on the other): `--update_freq 1` in every launch
        accumulates nothing (the launches are the shell scripts and README command blocks beside
        the script, and the argv lists a Python launcher beside it spells: `["accelerate",
        "launch", "train.py", "--gradient_accumulation_steps", "1"]`). Nor is a loop in a method that runs only on objects built where the
        run is one process: its class built under `if world_size == 1:`, and the subclass built
        for the distributed run replacing the method (one that sets the sync flag), where the
        source uses the classes' names for nothing else (no factory or registry may build them).
        A step closure (handed to a timer helper) that backpropagates on both sides of a switch
        (`if use_bf16: scaler.scale(loss).backward() else: loss.backward()`) is reported at the
        backward of the side the options or every YAML config beside the script settle (`use_bf16 =
        args["meta"]["use_bf16"]` with `use_bf16: true`), at the loop's call where nothing does.
        A flag handed to a step helper that steps under `if not if_accum_grad:`, the flag `(it %
        cfg.grad_accum_iters) != 0` with the record's field 1 (a namedtuple a local factory builds
        with its `grad_accum_iters=1` default, which no call changes), never holds: a step every
        pass. So does a period handed down from a runner's property reading
        `int(self.config.run_cfg.get("accum_grad_iters", 1))` where every YAML config beside the
        script sets 1. A launcher class that builds its command in pieces (`self.cmd.extend(
        ["--iters_to_accumulate", "1"])`, the script named where it is made) is read as a launch.

        The step test's count is read where the source settles it: a name bound to a YAML config's
        key (`grad_acc_step = train_config["optimizer"]["grad_acc_step"]`) that every config
        beside the script sets to 1 accumulates nothing, as does a one-level read of a loaded
        config (`config.step_per_update`, no option and no settings class declaring it) or a
        Hydra config group's key (`cfg.train.gradient_accumulation_steps`, each
        `conf/train/*.yaml` setting it to 1), an OmegaConf attribute chain (`config.basic.
        accum_iter`) or a section's `.get("grad_accum_steps", 1)` (inside `max(..., 1)` too), also where the step waits for a counter raised
        once a pass to reach it (`if num_iter == config.step_per_update: num_iter = 0;
        opt.step()`); a switch on a config object every
        construction settles (`if self.config.use_deepspeed:` with `Config(use_deepspeed=
        args.deepspeed)`, the option on by default) takes that side; a `.step()` of an object
        of the script's own class (a gradient clipper's) is what its method does, not an
        optimizer step; a no_sync on a side no run takes (`if last or not self.use_ddp:`
        where every assignment of `self.use_ddp` is False) covers nothing, and one under a test
        on the period itself (`if accum > 1 and not update_step: ctx = model.no_sync()`)
        covers every configuration that accumulates; the step may follow
        the call of the micro-step function in its caller (`self.forward_backward(batch);
        self.opt.step()` in a step method called once per step). A backward under a test no way
        in passes is no accumulation (`if self.mode == 2:` in a trainer built with `mode`, where
        `mode = args.mode` and every launch runs --mode 1). A forward with gradients off before
        the sync flag is set (nanoGPT's `estimate_loss(model)` under `@torch.no_grad()`) prepares
        no backward and decides no sync, and a forward in an `if` side that leaves the pass
        (`if eval_only: ...; break`) is not in the pass that sets the flag.
        A count handed down from a settings module's record (`from config import train_args`,
        `train_args = TrainArgs()` of a dataclass declaring `gradient_accumulation_steps: int = 1`,
        set nowhere) is 1 on every run; optparse's options (`add_option("--acc", dest="accum",
        default=1)`) are read as argparse's. Loops resting on one assumed count (the option left at
        its default 1 in each) are one finding, at the first loop's backward, the others named.
        A top-level key of the dict a YAML reader returned (`config_args = load_hyperpyyaml(f)`,
        then `% config_args["accu_steps"]`) is read off every config beside the script.
        So is a number an OmegaConf tree sets in the base every config names (`if
        config.train.accumulation_steps > 1:` with `accumulation_steps: 0` in `configs/default.yml`,
        the `_base_` of each run's config): that side no launch with them takes. A helper that
        returns the model's no_sync() on some passes (`def maybe_no_sync(step): ... return
        model.no_sync()`, a closure of the training method) is that no_sync: entered after the
        forward, around the backward alone, it changes nothing (the finding above).
    Why it hurts:
        DDP all-reduces the gradients in every backward. With K micro-steps per optimizer
        step, K-1 of those all-reduces are thrown away: up to K times the communication per
        step, often most of the step time on a multi-node job. The result is numerically the
        same, so nothing looks wrong. The probe (DDP403) counts the all-reduces per step.

    How to fix:
        Skip the synchronisation on all but the last micro-step:

            for micro_step in range(accum):
                last = micro_step == accum - 1
                with (contextlib.nullcontext() if last else model.no_sync()):
                    loss = model(x, y) / accum
                    loss.backward()
            optimizer.step()

        or, as nanoGPT does: `model.require_backward_grad_sync = last` before the backward.
    """
    if facts.framework == "accelerate":
        return _by_hand_with_accelerate(facts)
    if facts.framework == "lightning" and any(acc.by == "fabric" for acc in facts.accumulations):
        return _by_hand_with_fabric(facts)
    if not facts.ddp_model:
        return Skipped("no DistributedDataParallel model in the script")
    # (under a framework, only a loop of the script's own with its own DDP model and no no_sync
    # of any kind: a Trainer it builds on one switch beside its own loop on the other runs
    # nothing of that loop; a vendored copy of a framework's loop, syncing on some switch, is
    # left to the framework's own handling)
    accumulations = facts.accumulations if facts.framework is None else \
        [acc for acc in facts.accumulations if acc.own_loop and acc.no_sync is None and not facts.no_sync]
    if facts.framework is not None and not accumulations:
        return Skipped(f"{facts.framework} handles gradient accumulation")
    problems = _misplaced(accumulations)
    assumed: dict[str, list[str]] = {}  # option -> the backwards of the later loops resting on it
    for acc in accumulations:
        if acc.by == "accelerate" or acc.pattern in _MISPLACED_PATTERNS:
            continue
        partial = getattr(acc, "no_sync", None) is False
        if getattr(acc, "no_sync", None) is True:
            continue  # covered on every configuration (a DDP subclass's own switch, lint/accumulation_facts)
        if facts.no_sync and not partial and not getattr(acc, "no_sync_off_way", False):
            continue
        shape = ("backward() runs on every pass of the micro-step loop at "
                 f"{acc.loop} and the optimizer steps after it at {acc.step}"
                 if acc.pattern == "micro_step_loop" else
                 f"backward() runs on every pass of the loop at {acc.loop} and the optimizer steps "
                 f"only under a condition at {acc.step}")
        if partial:
            shape += ("; no_sync is used in this loop only under a configuration switch (the "
                      "FSDP path, say), so the other configuration goes without it")
        # (a period left at its default 1 accumulates nothing: the finding rests on the option)
        option = getattr(acc, "period_option", None)
        if option and option in assumed:
            # (another loop on the same assumed count: one finding for the option, the loops named)
            assumed[option].append(str(acc.backward))
            continue
        # (a backward inside a helper: no_sync wraps the loop's call into it, forward included)
        call = getattr(acc, "call", None)
        through = f", reached from the loop's call at {call}: wrap that call" if call else ""
        problems.append(Problem(
            message=(f"if `{option}` is set above its default 1: " if option else "")
            + (f"gradient accumulation without no_sync: {shape}; DDP all-reduces the "
               f"gradients in every backward ({acc.backward}{through}), K-1 of K times for nothing"),
            hint=("wrap all but the last micro-step's forward and backward in `with model.no_sync():` "
                  "(or set model.require_backward_grad_sync = is_last_micro_step, as nanoGPT does)"),
            location=acc.backward,
            evidence={"loop": str(acc.loop), "step": str(acc.step) if acc.step else None,
                      "pattern": acc.pattern, **({"call": str(call)} if call else {})},
        ))
        if option:
            assumed[option] = problems[-1].evidence.setdefault("also", [])
    for problem in problems:
        also = problem.evidence.get("also")
        if also:
            problem.message += f" (the same in {len(also)} more loop{'s' if len(also) > 1 else ''} " \
                               f"on that count: backward at {', '.join(also)})"
        elif "also" in problem.evidence:
            del problem.evidence["also"]
    return problems


# The ways the sync is switched at the wrong moment: (pattern, message, hint, the evidence key of
# the other line: the forward that already decided, or the step)
_MISPLACED = [
    ("sync_flag_after_forward",
     "require_backward_grad_sync is set at {backward}, after the forward at {step} in the same micro-step: "
     "DDP reads the flag in the forward, so it takes effect one micro-step late - the first micro-step "
     "all-reduces and the last does not",
     "set model.require_backward_grad_sync before the forward (or wrap the forward and backward "
     "in `with model.no_sync():` on all but the last micro-step)", "forward"),
    ("no_sync_after_forward",
     "`{context}` is entered at {entered}, after the forward at {step}: DDP decides in the forward whether "
     "the backward all-reduces, so the context around the backward at {backward} alone changes nothing - "
     "every micro-step still all-reduces",
     "put the forward inside `{context}` with the backward (all but the last micro-step)", "forward"),
    ("no_sync_on_step",
     "no_sync at {backward} is on for a micro-step on which the optimizer steps ({step}): that micro-step's "
     "gradients are never all-reduced, so each rank steps on its own gradients and the replicas drift apart",
     "skip the sync on all but the micro-step that steps: `no_sync() if (i + 1) % k != 0 else nullcontext()`",
     "step"),
    ("sync_flag_off_on_step",
     "require_backward_grad_sync set at {backward} is false on a micro-step on which the optimizer steps "
     "({step}): that micro-step's gradients are never all-reduced, so each rank steps on its own gradients "
     "and the replicas drift apart",
     "set the flag from the same test as the step: `model.require_backward_grad_sync = (i + 1) % k == 0`",
     "step"),
]
_MISPLACED_PATTERNS = frozenset(pattern for pattern, *_ in _MISPLACED)


# How each framework's by-hand accumulation is told: the backward it calls, the context that
# would skip the sync, and the fix.
_BY_HAND = {
    "accelerate": ("Accelerate", "accelerator.backward()", "accelerator.accumulate(model)",
                   "Accelerator(gradient_accumulation_steps=K) and `with accelerator.accumulate(model):` around "
                   "the forward, backward and step (it skips the sync on all but the last micro-step)"),
    "fabric": ("Lightning Fabric", "fabric.backward()", "fabric.no_backward_sync(model)",
               "wrap the forward and backward of every micro-batch but the last in "
               "`with fabric.no_backward_sync(model, enabled=is_accumulating):`"),
}


def _by_hand_with_accelerate(facts: LintFacts) -> list[Problem]:
    """Accelerate accumulates without syncing only inside `accelerator.accumulate(model)`:
    `accelerator.backward()` on every batch and a step every K batches all-reduce every time.
    (a plain `loss.backward()` of a model accelerator.prepare() wrapped all-reduces as
    accelerator.backward() does; a micro-step loop before one step wastes the same syncs)"""
    if facts.accumulate:
        return []
    return _by_hand(facts, "accelerate", ("accelerate", None))


def _by_hand_with_fabric(facts: LintFacts) -> list[Problem]:
    """Lightning Fabric skips the sync only inside `fabric.no_backward_sync(model, enabled=...)`:
    `fabric.backward()` on every batch and a step every K batches all-reduce every time under a
    DDP strategy (devices > 1); and that context entered after the forward skips nothing (it is
    DDP's no_sync: the forward decides)."""
    return _misplaced(facts.accumulations, "fabric.no_backward_sync(model)") + _by_hand(facts, "fabric", ("fabric",))


def _misplaced(accumulations: list, context: str = "no_sync()") -> list[Problem]:
    """The findings of _MISPLACED's shapes among the loops' facts (context: the no_sync as the
    script spells it)."""
    return [Problem(
        message=message.format(backward=acc.backward, step=acc.step, context=context,
                               entered=acc.entered or acc.backward),
        hint=hint.format(context=context), location=acc.backward,
        evidence={"loop": str(acc.loop), key: str(acc.step), "pattern": acc.pattern,
                  **({"entered": str(acc.entered)} if acc.entered else {})},
    ) for pattern, message, hint, key in _MISPLACED for acc in accumulations if acc.pattern == pattern]


def _by_hand(facts: LintFacts, framework: str, by: tuple) -> list[Problem]:
    name, backward, context, hint = _BY_HAND[framework]
    shapes = {"conditional_step": "runs on every batch and the optimizer steps only under a condition at {step}",
              "micro_step_loop": "runs on every pass of the micro-step loop at {loop} and the optimizer steps "
                                 "once after it, at {step}"}
    return [Problem(
        # (a period left at 1 until a launch raises it: the finding rests on that, said first)
        message=(f"if `{acc.period_option}` is set above its default 1: " if acc.period_option else "")
        + f"gradient accumulation by hand under {name}: "
        + f"{backward if acc.by == framework else 'backward()'} at {acc.backward} "
        + shapes[acc.pattern].format(step=acc.step, loop=acc.loop)
        + f", outside `{context}`: the gradients are all-reduced on every backward, K-1 of K times for nothing",
        hint=hint,
        location=acc.backward,
        evidence={"loop": str(acc.loop), "step": str(acc.step) if acc.step else None,
                  "pattern": acc.pattern, "framework": framework},
    ) for acc in facts.accumulations if acc.by in by and acc.pattern in shapes and not _synced(facts, acc)]


def _synced(facts: LintFacts, acc) -> bool:
    """The loop's sync is skipped by a no_sync of its own (`accelerator.no_sync(model)`,
    `fabric.no_backward_sync(model)`) on every configuration, or by one somewhere on its way
    where the script has one: not by another trainer's no_sync elsewhere in the source (a
    library with one trainer that skips the sync and another that does not)."""
    if acc.no_sync is not None:
        return acc.no_sync
    return facts.no_sync and not acc.no_sync_off_way
