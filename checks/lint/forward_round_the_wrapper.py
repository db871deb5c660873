"""DDP810: the training forward runs the module a DDP wrapper holds, not the wrapper."""

from __future__ import annotations

from ddpdoctor.core.findings import Problem, Severity
from ddpdoctor.core.registry import Skipped, check
from ddpdoctor.lint.facts import LintFacts


@check("DDP810", "The training forward bypasses the DDP wrapper", Severity.ERROR)
def forward_round_the_wrapper(facts: LintFacts) -> list[Problem] | Skipped:
    """
    What it detects:
        A backward (`loss.backward()`, `scaler.scale(loss).backward()`,
        `accelerator.backward(loss)`) of a loss that the training step computed only through
        the module a DistributedDataParallel wrapper holds, never through the wrapper:
        `model.module(x)`, `model.module.forward_features(x)` (also the side of `net(x) if
        opt.single_gpu else net.module(x)` that a script pinning `opt.single_gpu = False`
        takes, and the distributed side of `model(x) if not is_distributed else
        model.module(x)` with the model wrapped under `if is_distributed:`; an `else:` of the
        distributed run's own test, `self.model.get_loss(x)` beside `if cfg.multi_gpu: loss =
        self.model.module.get_loss(x)`, is the one-process run's, as is the body of a trainer's
        `if self.rank == -1:`), a name bound to it
        (`model_without_ddp = model.module`, a trainer's field `self.model = model.module`
        set in `__init__` from the wrapper it is handed, `getattr(model, "module", model)`,
        `accelerator.unwrap_model(model)`, also read off in the call itself:
        `accelerator.unwrap_model(model).get_loss(items)`), called as it is (`raw = model.module; raw(x)`,
        or a helper handed `model = wrapped.module` where the other value of `model` sits on the
        one-process side of the same test: `if not args.dist: model = net`), the model handed to `DDP(...)` under its own name
        (`ddp = DDP(net)`, then `net.loss(batch)`), an object handed the plain module before
        it is wrapped (`learn = Learner(mdl=mdl)`, then `mdl = DDP(mdl)` with the wrapper only
        moved afterwards: the learner's `self.mdl(batch)`, a dataclass field or a constructor's
        parameter kept in a field), also inside a local helper whose every
        return is computed so (`pred = self._forward(model, batch)`); and, as a warning naming
        the test, a helper that computes the loss round the wrapper on one side of a test of its
        own and through it on the other (`if not self.rl_stage: out = self.model(x)` ... `else:
        seq, logp = self.model.module.decode(x)`, a self-critical stage switched on at run
        time), the way by way binding of the name it returns read. The wrapper must be
        seen to be DDP where the forward runs (a DataParallel's `.module` is not reported;
        torch's `wrap(model)` inside `with enable_wrap(wrapper_cls=DistributedDataParallel):`
        builds one, and a wrapper handed to a helper in a list its parameter unpacks, `model,
        aux = nets` of `train_and_evaluate(rank, epoch, [model, aux], ...)`, is still one; a
        set-up helper that wraps its parameter, `model = DistributedDataParallel(model)`, and
        then drops the wrapper - never read, returned or stored again - leaves the object that
        handed it its field, `self.parser`, training the plain module: its forward goes round
        the wrapper; so does a `DistributedDataParallel(model, ...)` made as a statement of its
        own in the helper that builds the field (`self.model, self.tok = self._init_model()`
        returning the plain `model`): made and thrown away, nothing keeps it. A field set beside
        the one wrapped in place (`self.ac = ac.to(d)` and `self._ac = ac`, then `self.ac =
        DDP(self.ac)`) holds the module inside, and a call of a submodule of it
        (`self._ac.actor.log_prob(x)`) runs round the wrapper too. A loss method of the module inside fed the wrapper's own outputs in the
        same step, `codes = self.model_ddp(x)` then `self.model.objective(codes)` (also through
        a helper's parameters), is no bypass: the forward prepared the reducer - not a DDP
        forward run with gradients off, `with torch.no_grad(): out = self.world_model(x)` whose
        features the actor-critic's plain module then reads: no backward runs through it);
        Accelerate's `prepare()` builds one in a run of several processes, so a prepared model
        read off its wrapper (`if isinstance(model, DistributedDataParallel): model =
        model.module` right after prepare) and trained through that name is reported too. An
        object handed plain modules in a tuple of fields (`self.a, self.b = a, b`) whose
        wrappers go afterwards only to a helper that saves their weights keeps the plain ones;
        so does one (`GaussianDiffusion(model)`) whose forward runs the plain module a few of
        its own methods down (forward -> loss -> p_losses) while the wrapper Accelerate
        prepared is only saved or loaded. Each backward is judged by the loss bindings that
        reach it (two stages binding `losses` in one loop are two findings), and the
        wrapper's own `model.forward(x)` is DDP's forward.
        Not reported: a loss where any part goes through the wrapper's own forward in the
        same step (`out = model(x)`, then `model.module.criterion(out, y)`), a forward with
        gradients off (a probe's features under `torch.no_grad()`), the side of
        `isinstance(model, DDP)` where the model is the plain one, a method of a Module
        subclass fitting itself (not one whose object keeps the DDP model in a field and runs
        round it: `class Train(nn.Module)` with `self.model = DDP(net)` and
        `self.model.module.get_loss(x)` in its forward), a loss from a callable the source binds but the lint does not
        resolve that is handed the DDP model itself (`train_fn = getattr(losses, name)`, then
        `train_fn(model, x, lc=model.module.lipschitz())`: its forward may be the wrapper's),
        and a program that averages gradients by hand
        (`dist.all_reduce(p.grad)`, a library's `allreduce_grads(params)`).
        The finding points at the backward, and names the forward and the wrapper.
        `self._train_epoch()` in a base's method runs the override of the subclass the script
        builds (the base built nowhere, named only in its subclasses' lines and `super(Base, self)`):
        the base's own method is not judged.
        A set-up helper that drops its wrapper (above) is read the same where the script hands it a
        plain name: `setup_parallel(args, model)` as a statement, the helper wrapping its parameter (`model = DistributedDataParallel(model)` on one side of its tests, a
        DataParallel on another) and returning nothing, leaves the script's `model` - and every
        function it hands it to (`train(loader, model)`) - training the plain module.

    Why it hurts:
        DDP prepares its reducer in the wrapper's forward; the backward that follows is what
        all-reduces the gradients. A forward of the module inside skips that step: the
        gradient hooks fire but reduce nothing, and every rank's optimizer steps on its own
        batch's gradients. Nothing hangs or fails; the replicas drift apart from the first
        step, the checkpoint rank 0 saves is one rank's model trained on 1/world of the data,
        and the run costs the GPUs of a distributed one.

    How to fix:
        Call the wrapper (`model(x)`); to reach another method through DDP, make it the
        module's forward or route it through forward (`model(x, mode="features")`). Keep
        `model.module` for saving, loading and evaluation without gradients. If the
        bypass is meant, average the gradients yourself after the backward
        (`dist.all_reduce(p.grad); p.grad /= world_size` for each parameter).
    """
    # (Accelerate's prepare() builds the DistributedDataParallel in a run of several processes:
    # a forward round what it handed back is judged as one round DDP(...)'s)
    # (and a DDP(...) made as a statement of its own, thrown away at once: no DDP model, but the
    # loop that trains what it was handed trains it plain)
    if not facts.ddp_model and not ((facts.framework == "accelerate" or any(f.discarded for f in facts.bypassed))
                                    and facts.bypassed):
        return Skipped("no DistributedDataParallel model is built")
    # (the wrapper as the user wrote it: Accelerate's prepare() where no DDP(...) is in sight)
    wrapper = "DDP(...)" if facts.ddp_model else "DistributedDataParallel that accelerator.prepare()"
    built = "" if facts.ddp_model else " returns"
    problems = []
    for found in facts.bypassed:
        # (one side of a helper's test: the run takes it where that test goes so - a stage the
        # options or the epoch switch on; the finding rests on it)
        side = f"where `{found.test}` is {'true' if found.side else 'false'}: " if found.test else ""
        # (an object handed the module before the wrapper was built: the fix is where it is built)
        inside = f"the plain module the object was handed at {found.handed_at}, before the {wrapper}{built} at " \
            f"{found.wrapper_at} wrapped it (the wrapper never reaches the object):" if found.handed_at else \
            f"the module handed to the DDP(...) at {found.wrapper_at}, whose wrapper is a statement of its own, " \
            "made and thrown away (nothing keeps it):" if found.discarded else \
            f"the module inside the {wrapper}{built} at {found.wrapper_at} instead of the wrapper:"
        problems.append(Problem(
            severity=Severity.WARNING if found.test else None,
            message=side + (f"the backward at {found.location} runs on a loss computed by {found.forward} at "
                     f"{found.forward_at}, which calls {inside} DDP never prepares its reducer, so this backward "
                     "all-reduces no gradient and each rank steps on its own"),
            hint=("wrap the model in DDP before handing it to the object (or hand the object the wrapper "
                  "once it is built)") if found.handed_at else
                 ("keep the wrapper - `model = DistributedDataParallel(model, ...)` - and train through it")
            if found.discarded else
                 ("call the wrapper itself (model(x)) in the training step; keep .module for saving and "
                  "evaluation, or all-reduce the gradients yourself after the backward"),
            location=found.location,
            evidence={"forward": found.forward, "forward_location": str(found.forward_at),
                      "wrapper_location": str(found.wrapper_at),
                      **({"handed_location": str(found.handed_at)} if found.handed_at else {}),
                      **({"test": found.test, "side": found.side} if found.test else {})}))
    return problems
