"""DDP809: every rank decides control flow on a value only some ranks hold."""

from __future__ import annotations

from ddpdoctor.core.findings import Problem, Severity
from ddpdoctor.core.registry import Skipped, check
from ddpdoctor.lint.facts import LintFacts


@check("DDP809", "Control flow decided by a rank-local value", Severity.ERROR)
def rank_local_decision(facts: LintFacts) -> list[Problem] | Skipped:
    """
    What it detects:
        A test that every rank runs - an `if` or `while` that breaks, continues, returns or
        runs a collective - on a value only some ranks hold:
        - a variable assigned or updated only under a rank test (rank 0 counts the epochs
          without improvement of its validation loss; every rank then runs
          `if stale > patience: break`; or rank 0 alone lowers `best`, and every rank steps
          its counter under `if loss >= best:` and leaves at a test inside it,
          `if stale >= patience: break` - told at the test on `best`), also through names every rank makes from it (rank 0
          alone appends to `history`; every rank tests `recent = [m["wer"] for m in
          history[-k:]]`), or over a setting every rank read first (rank 0
          alone resumes `begin_epoch` from a checkpoint, or every rank resumes `step` from the
          checkpoint it loads and only rank 0 steps it on); read only beside a setting in the
          same `and` / `or` (`step >= steps or (config.EARLY_STOPPING and stop)`) it is a
          warning naming the setting, and nothing where the launch's options settle it off;
          also as a loop's bound
          (`for epoch in range(begin_epoch + 1, end)`: the ranks run different numbers of
          passes of the backward inside);
        - a rank's own tensor value (`if not torch.isfinite(loss): continue` or
          `if loss.item() > limit: continue` before the backward - a DDP model's, or a DeepSpeed
          engine's `engine.backward(loss)`, also of a local subclass of DeepSpeedEngine a
          loader builds), each rank testing its own
          batch; also a loop of an FSDP model's forwards stopped on what they produced (a
          generation loop's `if not unfinished.any(): break` on each rank's sampled tokens: the
          rank that stops first strands the others in their next all-gather) (not where the test asks a check that all-reduces a flag made of the value and
          answers from the reduced flag: every rank's verdict, nor where the flag is read back
          from its all_reduce before the test, `skip = flag.item() > 0` under `if
          dist.is_initialized():`, whose other side is one process); also a side that stops the job
          on such a test after a collective of its own
          (`if not math.isfinite(loss.item()): dump(all_gather(x)); sys.exit(1)`: the others,
          in their backward, never join it), or exits before the backward in a helper that
          runs it once a batch (`def optimize(self, loss): if (loss != loss).data.any():
          exit()`, called from the per-batch `iter()`); also a LightningModule's `training_step` returning None on such a test
          (Lightning then skips that rank's backward alone), and a `raise` on such a test that
          a broad handler around it swallows (`except Exception:` without raising again, or
          with a way through that does not, `if fail_safe: restart() else: raise`: the rank
          skips the rest of the `try`, its backward with it; not a `continue` in a loop whose
          only collective work is DDP forwards with gradients off - a validation loop skipping
          a NaN batch: the one buffer broadcast a rank makes after training happens at its
          next forward) - also a handler a caller a few
          calls up wraps round the call (a tracker's loss raising on NaN predictions, the
          trainer's `except:` round the epoch restarting it: the rank skips the backward the
          step loop runs after the loss; with no such handler up the calls the raise ends the job);
        - a flag a signal handler sets (`signal.signal(SIGUSR2, on_preempt)` where
          `on_preempt` sets `stop["now"] = True`, or `stop_event.set()` of a module-level
          `threading.Event`, also read through a parameter every call hands it, or a field the
          handler method sets on its object, `signal.signal(SIGTERM, self._handle)`, read as
          `handler.should_shutdown()` or the field itself, or an environment variable it sets,
          `os.environ["SIGNAL_RECEIVED"] = "True"`, read as `os.environ[...]` or
          `os.getenv(...)` anywhere in the process), tested every
          step before a collective save, a break or an exit (also a helper whose body ends in
          `exit(0)`: a SLURM requeue): each rank runs its handler at its own step (a warning);
        - a round-robin share (`if i % world != rank: continue`) whose pass then runs a
          collective itself: each rank runs it once per item it keeps, and the counts differ
          unless the items divide evenly among the ranks (a warning; a collective after the
          loop, nanoGPT's HellaSwag sum, is fine);
        - a validation metric each rank computes from its own shard (`val_loss =
          validate(model, val_loader)` over a DistributedSampler, never all-reduced) that an
          early stop then tests (`stopper(val_loss)`; `if stopper.early_stop: break`), also
          through a counter set on a side of a test on it (or a property that returns from
          such a counter: `@property def stop(self): return self.bad > self.patience`), and
          where the evaluation is a loop
          written inline (`for batch in eval_loader: preds.extend(...)`, then `f1 =
          score(preds, refs)`) that grows what it keeps from its own batches, not from what it
          gathers (a warning);
        - a `break` (or a `return`) of a loop taken inside a rank test in that loop (`if rank == 0:` ...
          `if stopper.early_stop(val_loss): break`) while the rest of the loop's body runs
          collective work on every rank: rank 0 leaves, the others stay (a warning when a
          further test decides the break - a loss threshold, a flag the code does not show
          counting - or a store_true switch on the way to it names the run:
          `if args.early_stopping:`, or the count it tests moves only under such a switch;
          an error where that test is how the run stops - a step
          count the pass steps up (also `==` on one that takes every value, `step = epoch *
          n + i + 1`), `epoch - best_epoch > patience` with `best_epoch = epoch` on
          the improving pass, or a stopper object (a name, or a field of the trainer:
          `self.early_stopping.early_stop`) whose own method counts the passes without
          improvement to its patience, `self.counter += 1; if self.counter >= self.patience:
          self.early_stop = True`, then `if stopper.early_stop: break`: any run that stops
          improving takes it; each exit rank 0 decides under a test of its own is told apart, a
          wall-clock limit beside the early stop too; not a skip whose other side raises or
          exits with an error, `if keep and rank == 0: continue / else: sys.exit(1)`: the others
          end, and a rank-local value tested around it is what parts the ranks);
        - the program ended under a rank test outside any loop (`if accelerator.is_local_main_process
          and os.path.exists(out): exit(0)` in the main block) while the rest runs collective work
          on every rank: a rank that exits 0 ends nothing else, the others wait for it (a warning
          when a further test decides the exit); so is rank 0's plain `return` out of the
          function on a test that is more than a rank test (`if remaining_steps <= 0 and
          is_main(): return` on a resume, the training after it every other rank's), once, at
          the decision (not `if rank != 0 and not cfg.every_rank: return`, which leaves rank 0
          alone at what follows: DDP801's place, the collective; nor a plain `if rank > 0:
          continue` before rank 0's evaluation, where DDP801 reports the collective past it).
          A flag rank 0 sets only under a test the options as launched make false (`if
          args.early_stop > 1:` with every launch beside the script leaving it at -1) keeps the
          value every rank started with: no decision.
        The same for a script whose model is FSDP (FSDP1's class or FSDP2's `fully_shard`)
        and not DDP: its forward all-gathers and its backward reduce-scatters, so a rank that
        skips either strands the others as a skipped DDP backward does.
        An error where the variable is provably set on some ranks only and the test runs on
        every rank (a test at the top of a `while True:` body runs: the body is entered; a
        count every rank starts alike - a constant, a checkpoint's value, `start + 1` of what
        a local loading helper returns, `0` or `ckpt["iter"]` - then steps only on rank 0, is
        set on rank 0 alone); a warning, naming the assumption, otherwise (and always for a tensor
        value: it differs only when the batches do; and where the rank-only assignment of a
        flag to a constant sits under a further test, unless that test is a counter its own
        method steps reaching its bound - `self.counter += 1; if self.counter >=
        self.patience: self.early_stop = True` in a stopper rank 0 alone calls - which any
        run that stops improving takes: an error; and where the work the test decides is only
        a DDP forward with gradients off, which broadcasts buffers only as the first forward
        after a training step: a warning resting on a training step between). A decision on
        the `else:` / `elif` side of `if world_size > 1:` is the one-process run's and not
        reported. A variable handed to a collective in the
        same function (`dist.broadcast_object_list([stop])`) is shared and not reported.
        The finding points at the test that decides (the `if` or `while`, or the `for` whose
        bound it is); for a `break` taken inside a rank test, at the innermost `if` around
        that `break`. A field each rank sets on the pass over its own group (`for ranks in
        groups: if rank in ranks: self.world_size = len(ranks)`) is every rank's own value, not
        a rank test's.
        `kl = accelerator.reduce(kl, reduction="mean")` just above `if kl > limit: break`, the name
        bound to the rank's own value elsewhere in the loop, holds every rank's value at the test
        (no finding). A LightningModule with manual optimization that backpropagates on one side of
        a test on its own loss (`if loss != 0: self.manual_backward(loss)`) skips that backward on
        a rank whose loss is 0 (a warning). An early return before a collective of the function's
        own (`if torch.isnan(sim).any(): return torch.tensor(0.)` before the all_gather into a
        feature queue) is a skip whatever it returns; a fresh zero (`torch.tensor(0.)`) shares no
        result with the function's own return, whatever module both read. A side of a factory no
        call reaches (`if attack_type == "linf-df":` in `create_attack(model, kind)`, every call
        handing a constant or an option whose default no launch changes - not an option that says
        how the job is launched, `--launcher`) builds nothing: the class it would build runs
        nothing there.

        A test on a value that the function all-reduces only after the test (`avg_loss =
        torch.tensor(running / n)`, `if torch.isnan(avg_loss).any().item(): return`, then
        `dist.all_reduce(avg_loss)`) reads each rank's own value. A decision in code every way
        into which passes a test the options as launched make false (`elif args.attack ==
        "AA": run_attack(...)` with --attack at "PGD"), or under a test of its own function on a
        parameter every way in hands such an option (`if patience > 0:` handed
        `args.patience`, -1 by default), is not reported. Nor is a None a step
        helper returns under its config and counters (`loss, aux = step(x)`, then `if aux is not
        None:`), the answer of a helper that returns constants only (`if train_one_step(batch):
        break`, True past a step count), or a stopper a trainer steps itself on every rank before
        testing it, whatever another trainer does with its own under a rank test. Nor is a
        loop that waits only in the backward of a model built plain (a probe classifier fitted
        on each rank's embeddings, `self.model = nn.Sequential(...)`, stopping early on its own
        dev accuracy): that backward all-reduces nothing. Nor is a None
        test on the batch a prefetcher of the script's own hands out (`input, labels = data`,
        `if input is None: break`) when that class catches the wrapped loader's StopIteration
        and hands out None instead: the loader's end, which ranks reading equal shards meet at
        the same pass (a None it hands out for a failed read is the rank's own). A metric grown
        from what a collective handed back (`losses.append(accelerator.gather_for_metrics(l))`,
        `preds += accelerator.gather(logits).argmax(-1).tolist()`) is every rank's, whatever
        ids the rank hands beside it. A step count stepped on every pass and compared with `==`
        / `!=` (`or total_step == num_batch`, `and step != 0`) meets and misses its value on
        some pass of any run: no assumption, so a state only rank 0 sets under such a test is
        proven rank-only (an error).
        A signal flag imported from the module whose handler sets it (`from .ddp_utils import
        EXIT`) is read as the handler's own; a decision on such a flag inside a helper called only
        from the block of another one (`if EXIT.is_set(): ...; requeue(); return`, requeue()
        testing REQUEUE, which the same signal sets) is that decision's way out, not a second
        finding. A skip on the number of a batch field's dimensions (`if not
        batch["pairs"].ndim == 2: continue`, an empty match collated to fewer) is each rank's own
        items deciding, as a value test is; a test on the batch's size alone is not.
        A decision inside the block of another in the same function (`if np.isnan(loss.item()):
        nan += 1; if nan > 100: raise ... else: continue`) is a step of the outer one's way out:
        one finding, at the outer test.
        A signal handler installed only under a test no shipped config turns on (`if
        cfg.cluster.requeue and main_node: signal.signal(SIGTERM, handler)`) is never installed:
        the flag it sets decides nothing.
    Why it hurts:
        The ranks take different branches: rank 0 leaves the loop while the others enter the
        next epoch's forward and wait in its all-reduce for a rank that never comes - a hang
        until the NCCL timeout; a skipped backward on one rank does the same at the next
        gradient all-reduce, or pairs the wrong buckets.

        A DeepSpeed engine kept in a field (`self.model, self.optimizer, _, _ =
        deepspeed.initialize(...)`) reduces the gradients in `self.model.backward(loss)`, so a
        rank-local skip before it is reported as before a DDP backward. Not reported: a path
        some ranks suffix where it is set (`if path is not None and rank < tp: path = path +
        "_rank_" + str(rank)`) and a later test only of whether it is None; a method its class
        calls only on a side of an `if` no run takes.
    How to fix:
        Make the decision the same on every rank: share the value, then test it.

            stop = torch.tensor(int(rank == 0 and stale > patience))
            dist.broadcast(stop, src=0)     # or all_reduce(flag, op=MAX) for a per-rank flag
            if stop.item():
                break
    """
    if facts.distributed is None and facts.framework is None:
        return Skipped("the script sets up no process group")
    problems = []
    # (past a plain rank test's `continue` - `if rank > 0: continue`, then rank 0's evaluation -
    # the collective DDP801 reports is the place, the test its guard: one finding, not two)
    guarding = {str(g.guard_location) for g in getattr(facts, "guarded_collectives", [])}
    for found in facts.rank_local:
        if found.kind == "rank_exit" and found.action == "continue" and not found.open_test and \
                str(found.location) in guarding:
            continue
        if found.kind == "rank_exit":
            if found.action == "continue":
                message = (f"`{found.decision}` at {found.location} skips the rest of the pass (continue) only "
                           f"where `{found.guard}` holds: the other ranks run it and wait in {found.work}")
            else:
                leaves = {"return": "the function (return)", "exit": "the program (exit)",
                          "end": "the function (return) outside any loop"}.get(found.action, "the loop (break)")
                # (a rank that ends the program, or its function, leaves the others wherever they
                # stand next)
                then = "go on and wait" if found.action in ("exit", "end") else "go on into the next pass and wait"
                message = (f"`{found.decision}` at {found.location} leaves {leaves} only where `{found.guard}` "
                           f"holds: the other ranks {then} in {found.work}")
            hint = ("decide the stop on every rank: compute it where it is known, share it "
                    "(dist.broadcast from that rank), then "
                    + ("exit on every rank" if found.action == "exit" else "return on every rank"
                       if found.action == "end" else "break on every rank"))
        elif found.kind == "signal_state":
            message = (f"`{found.decision}` at {found.location} decides ({found.action}) on every rank on "
                       f"`{found.value}`, which the signal handler {found.guard} sets (at {found.assigned}) in "
                       f"each process when its signal arrives: the first rank to see it goes on alone and the "
                       f"others wait in {found.work}")
            hint = (f"share `{found.value}` before the test: all_reduce it each step (op=MAX) and test "
                    "the result, so every rank acts on the signal at the same step")
        elif found.kind == "exception":
            message = (f"`{found.decision}` at {found.location} leaves the pass ({found.action}) on the rank "
                       f"that raises it: the others go on and wait in {found.work}")
            hint = ("keep every rank in step: catch it, all_reduce a flag (op=MAX), and skip on every rank "
                    "together; or filter such batches before the loop")
        elif found.kind == "shard_metric":
            message = (f"`{found.decision}` at {found.location} decides ({found.action}) on every rank on "
                       f"`{found.value}`, which {found.guard} computes (at {found.assigned}) from this rank's own "
                       f"shard ({getattr(found, 'shard', 'a DistributedSampler')}) and never all-reduces: one rank stops while the others "
                       f"wait in {found.work}")
            inline = found.guard.startswith("the loop at")  # (shard_metrics: a loop that grows its lists)
            hint = ((f"gather what the loop collects per batch (its predictions and labels) from every rank and "
                     f"compute `{found.value}` from that" if inline else
                     f"all-reduce what makes `{found.value}` (the sum of the losses and the count of samples) "
                     "before deciding")
                    + ", so every rank tests the whole validation set's number"
                    + ((" (under Accelerate: accelerator.gather_for_metrics(...) of each batch's outputs"
                        + (")" if inline else ", or accelerator.reduce(...) of the sums)"))
                       if "accelerator" in getattr(found, "shard", "") else
                       " (dist.all_gather_object, or all_gather of padded tensors)" if inline else ""))
        elif found.kind == "rank_state":
            how = (f"every rank steps `{found.value}` and `{found.guard}` steps it further (at {found.assigned}): "
                   "that rank's count runs ahead" if getattr(found, "stepped", False) else
                   f"`{found.value}` is set only under `{found.guard}` (at {found.assigned})")
            message = (f"`{found.decision}` at {found.location} decides ({found.action}) on every rank, but "
                       f"{how}: the ranks disagree and the others wait in {found.work}")
            hint = (f"share `{found.value}` before the test (dist.broadcast from the rank that sets it, "
                    "or all_reduce a flag), or update it on every rank")
        else:
            message = (f"`{found.decision}` at {found.location} decides ({found.action}) on each rank's own "
                       f"`{found.value}`: " + (
                           f"the rank that takes it waits alone in {found.work}, the others never call it"
                           if found.action.endswith("before it stops the job") else
                           f"a rank that skips leaves the others waiting in {found.work}"))
            hint = ("all-reduce the flag first so every rank decides the same "
                    "(flag = torch.tensor(float(bad)); dist.all_reduce(flag, op=dist.ReduceOp.MAX))")
            if found.action == "return None":  # a LightningModule's training_step
                hint = ("share the decision before returning None, so every rank skips the same step: "
                        "`bad = self.all_gather(torch.tensor(float(bad), device=self.device)).any()`")
        if found.assumption:
            message = f"if {found.assumption}: {message}"
        elif getattr(found, "given", ""):  # the rank test's other parts, settled by a config or a default
            message = f"with {found.given}: {message}"
        problems.append(Problem(
            message=message, hint=hint, location=found.location,
            severity=Severity.WARNING if found.assumption else None,
            evidence={"decision": found.decision, "value": found.value, "kind": found.kind,
                      "action": found.action,
                      # the `continue` / `break` the test leads to, on its own line: the same decision
                      **({"also": [found.exit_line]} if getattr(found, "exit_line", None) else {})}))
    return problems
