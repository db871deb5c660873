"""DDP801: a collective runs under a rank-conditional branch."""

from __future__ import annotations

from ddpdoctor.core.findings import Problem, Severity
from ddpdoctor.core.registry import Skipped, check
from ddpdoctor.lint.facts import LintFacts
from ddpdoctor.lint.patterns import (DDP_BACKWARD, DDP_FORWARD, DEEPSPEED_SAVE, HF_FSDP_SAVE, HF_FSDP_SAVE_SET,
                                     HF_ZERO3_SAVE, ZERO3_GATHER, no_grad_forward, sharded_save)


@check("DDP801", "A collective runs under a rank-conditional branch", Severity.ERROR)
def collective_under_rank_branch(facts: LintFacts) -> list[Problem] | Skipped:
    """
    What it detects:
        A collective - or a call that ends in one - inside a branch that only some ranks take:
        `if rank == 0:`, `if dist.get_rank() == 0:`, `if master_process:`,
        `if local_rank == 0:`, `if accelerator.is_main_process:`,
        `if trainer.is_global_zero:`, a function decorated with `@rank_zero_only`, the code
        after `if rank != 0: return`, or a callback registered on rank 0 only. Calls to
        functions of the script and its local modules are followed a few levels deep, so a
        `dist.barrier()` inside `save_checkpoint()` called under `if rank == 0:` is found (a
        function handed to a builtin that only looks at it, `hasattr(train_step, "best")` or
        `getattr(...)`, is not called there).
        Collectives include every torch.distributed collective (all_reduce, barrier,
        broadcast, all_gather, new_group, ...), the DistributedDataParallel constructor, the
        forward of a DDP model whose module holds buffers (BatchNorm, torch's `nn.Buffer(...)`:
        DDP broadcasts them in every forward; a Hugging Face BERT-family encoder's `position_ids` - also a project
        class whose constructor keeps one, `self.roberta = RobertaModel(config)` - a BART, Marian,
        Pegasus or Blenderbot generator's `final_logits_bias`; not a BatchNorm its constructor builds only on a side of its own
        argument the construction rules out, `Model(core_name="mlp")` past `if core_name ==
        "pointnet":`, nor in a part its owner's constructor builds with a constant that rules
        that side out (`norm = "GN"`, then `self.block = Block(n, m, norm=norm)` past the block's
        `elif norm == "BN":`); also a DDP model a training helper hands back as it was given,
        or a trainer keeps moved (`self.model = model.to(device)` of the wrapper it is handed),
        `model, loss = train_one_epoch(model, ...)`; a builder unpacked from a table of
        networks, `net, w = table[arch]; net(weights=w)`, or a Hydra `instantiate(cfg.model)`
        of the classes the `model` config group names, or pytorch-template's `config.init_obj(
        "arch", module_arch)` of a module's classes the JSON or YAML configs beside the script
        name (`"type": "ResNeXt50Model"`), stands for them as most of them are),
        the forward of a FullyShardedDataParallel model (torch's or
        fairscale's, not NO_SHARD: it all-gathers the parameters, gradients on or off; a
        warning where the name holds a DDP model on another way, `model = FSDP(model) if
        use_fsdp else DDP(model)`, and where a nanoGPT-style configurator switch such as
        `use_fsdp`, set at the top of a script that rewrites its own globals, is on the way), an
        FSDP model's `state_dict()` (its default FULL_STATE_DICT unshards every parameter; where
        the script chooses a state dict type itself, only inside `with FSDP.state_dict_type(
        model, StateDictType.FULL_STATE_DICT)`; not on the side of `isinstance(model, FSDP)`
        where the model is none; also a model a helper returns after wrapping its parts under
        `with enable_wrap(wrapper_cls=FSDP):`, whose state_dict runs every unit's, and the
        `.module` of an FSDP model built with an `auto_wrap_policy`, `raw = model.module if ddp
        else model`, whose inner module holds the units), its
        `generate()` (the wrapped units' forwards) and `FSDP.summon_full_params(model)` (an
        all-gather of every rank's shard, `rank0_only=True` too),
        the backward of a loss computed through a DDP model (a rank-0
        learning-rate finder on the wrapper: its hooks all-reduce every gradient bucket; not
        under `no_sync()`, and a side that also trains through the wrapper pairs with it),
        Lightning's `self.log(..., sync_dist=True)`,
        `trainer.save_checkpoint()` and `strategy.barrier()`, Fabric's `save(path, state)` and
        `load()` (each ends in a barrier; not the state-first `save(state, path)` of Fabric before
        2.0, which ran none), a Hugging Face Trainer's
        `save_model()` where its arguments choose FSDP (`fsdp="full_shard auto_wrap"`, also
        in a dict spread into an SFTConfig: the full state dict is gathered from every rank's
        shards before the main process writes; a warning where a setting gives `fsdp=` or the
        arguments ask for FSDP 2) or where the Accelerate config every launch beside the script
        names picks DeepSpeed ZeRO stage 3 (`zero_stage: 3`: the 16-bit weights are consolidated
        from every rank's partitions first), Accelerate's
        `gather`, `reduce`, `wait_for_everyone`, `pad_across_processes`, and a sharded
        optimizer's `consolidate_state_dict()` (ZeroRedundancyOptimizer, fairscale's OSS: every
        rank sends its shard; a warning where the optimizer's class is not shown), a DeepSpeed
        engine's `save_checkpoint()` (the engine `deepspeed.initialize` returns, or
        `accelerator.deepspeed_engine`: every rank saves its own partition), its ZeRO-3
        consolidation (`_zero3_consolidated_16bit_state_dict()`, `save_16bit_model()`: a
        warning, a gather only under stage 3), and a
        torchmetrics metric's `compute()` (it all-gathers the metric's state, unless built with
        `sync_on_compute=False` or a `dist_sync_fn` of its own). A branch whose
        other side runs the same collectives (`if rank == 0: work(); barrier()` /
        `else: barrier()`), and the paired `if local_rank != 0: barrier()` ...
        `if local_rank == 0: barrier()` idiom, are balanced and not reported - also across a
        nested function and the one it is defined in (rank 0 signals from a closure with
        `if rank == 0: broadcast(flag)`, the others answer in the enclosing `else:` loop) -
        unless the way in already took one side away (rank 0's call into a helper that holds
        the pair reaches its own barrier alone) or the entering call's constants switch a side
        off (`not evaluate` entered with `evaluate=True`). The pairs are counted in the
        order they come: a third `if local_rank in [-1, 0]: test(...)` past a pair that has
        closed, whose helper reaches the closing barrier again, is rank 0's alone. A keyword a
        helper pops from its `**kwargs` (`if kwargs.pop("sync", False): barrier()`, a logger's
        timing mark) is read on each way in, through callers that hand their `**kwargs` on:
        `log.mark("save_end", sync=True)` on rank 0's side waits alone. A test of a name that holds a
        function or class the program defines (`not evaluate`, `evaluate` the module's own
        evaluation function) is true: its block never runs, and the other side of the pair is
        then one-sided. A rank test's other part on a parameter that a call every rank makes
        opens with a constant (`split != "train"`, a call handing `split="dev"`) is no
        assumption: an error that names that call.
        Nor is a collective on the one-process side of the run's own switch, however deep
        (`if cfg.distributed: self.model.module(x) else: self.model(x)` in rank 0's
        validation), nor a forward on a field rank 0 rebinds to the plain module before it
        evaluates (`if isinstance(self.model, DDP): self.model = self.model.module`, then
        `self._test_loop()` or `run(model=self.model)`), nor one under a remainder compared
        with a value it never takes (`epoch % 10 == -1`). A main-process helper answering
        `int(os.environ["RANK"]) == 0` under `if "RANK" in os.environ:` (the same on every
        rank) and `True` otherwise is a rank test. A helper that picks a class into a local
        name (`model = Joint` on one side of an if/elif) builds one of those where its result
        is called, and a config object's field reads its dataclass default for the
        checkpoint a model loads (`base_model_name: str = "bert-base"`: buffers).
        Nor is a rank test that can only hold in a run of one process (`if not distributed
        and device_id > 0: return`, `world_size == 1`): every distributed rank goes on; nor a
        check that the launch gave each process a GPU (`if local_rank >= torch.cuda.
        device_count(): return`), the same answer on every rank of a launch that fits its node.
        A decision rank 0 makes and broadcasts on the distributed side of the run's switch
        (`do_save = master and better` / `if is_distributed: dist.broadcast(t, 0); do_save =
        bool(t.item())`) is every rank's: the rank-0 value reaches the one-process run only.
        Rank tests are followed by data flow, scope by scope: a helper returning one
        (`is_master(args)`), an inline one-process fallback (`(cfg["DDP"] and get_rank() == 0)
        or not cfg["DDP"]`: rank 0's test wherever the run is distributed), a flag assigned from one, `self.gpu_id` set from mp.spawn's
        process index, an object that exists on one rank only (`if saver is not None:`). A
        name is the DDP model only where a binding to the wrapper reaches the call (`del model;
        model = GPT(conf)` on rank 0 after training rebuilds a plain model: its forward is no
        DDP forward).
        Reported as an error when the code proves the branch differs between ranks; as a
        warning, naming the assumption, when the test also reads a value the source does not
        show (`if args.logs and is_master(args):` splits the ranks only if `args.logs` is set;
        not a store_true every launch beside the script gives, the run's own switch),
        or under a test of what is on disk (`if not os.path.exists("vocab.txt"):`: what an
        earlier run left) - except the missing side of the run's own checkpoint, a file the
        script saves itself: its first run always takes that side. A warning too past a `while`
        that runs on for ever where a value is unset (`while not self.lr_anneal_steps or
        self.step < self.lr_anneal_steps:`, guided-diffusion's loop, with no `break`): its final
        rank-0 save runs only on a launch that sets it. A warning too where every way
        into the function that holds the branch passes a switch off by default (`if
        args.val_only: evaluate(...)`, a store_true; also a count declared 0 that turns the work
        on, `if args.save_every > 0 and ...`): the training run never gets there, and the
        finding names the switch a run that hangs is launched with.
        A switch that is a field of a local config class (`distribute_layers: bool = False`),
        declared with one constant default and assigned nowhere the lint reads, is taken at
        that default: an error that names it (the run hangs as shipped; a run that sets the
        switch may not).
        A branch no shipped config takes is not reported: `if opt['model'] in ['vsr'] and
        rank <= 0:` on the dict the project's own loader read from YAML (`opt =
        options.parse(args.opt)` returning what `yaml.load(f)` read, and a converter handing it
        back), where every config beside the script gives the key another value and no code sets it.
        A collective under a module's `if self.training:` reached from a function the rank
        test guards that puts the model in eval mode first (`model.eval()`, no `.train()`
        after it) is not reported: on that way the module is not training.
        A DDP forward with gradients off (`@torch.no_grad()`, `with torch.inference_mode():`
        around it or around a call that leads to it), one rank's evaluation, is a warning too: DDP then
        broadcasts the buffers only in the first forward after a training step, one broadcast
        that pairs with the other ranks' next training forward, and the job hangs only where
        they reach another collective or the end first (open_clip hung so after its last
        epoch; llama2.c's evaluation at the top of each iteration never does). So is
        Accelerate's `save_state()` on the main process only in a script that prepares for
        DeepSpeed or FSDP, or whose Accelerate launch config beside it picks one
        (`distributed_type: DEEPSPEED` in a YAML under the script's folder): every process
        takes part in the save under them; under DDP it writes from the main process alone.
        The same for `load_state()` (under FSDP Accelerate's model loading starts with
        `wait_for_everyone()`).
        An error where the launch written beside the script names that config (`accelerate
        launch --config_file configs/gpu.yaml train.py`, or a file outside the script's folder
        by its path, `--config_file ../../configs/fsdp.yaml`, read from the launch file's
        folder) or the engine itself (`accelerate launch --use_fsdp ...`): the run as launched
        hangs. Under FSDP the same for
        `accelerator.unwrap_model(model).save_pretrained(dir)` on the main process: the unwrapped
        module still holds the auto-wrapped units, whose `state_dict()` all-gathers the shards
        (not where `state_dict=` is handed in, gathered on every process first); also where one
        documented launch of several names FSDP and another DeepSpeed (ZeRO-2 gathers nothing
        there): the FSDP launch hangs. A DeepSpeed
        engine handed to a save helper (`save_checkpoint(engine, step)` calling
        `engine.save_checkpoint(...)`), or returned by a setup helper (`self.model, opt, _, _ =
        self._setup_deepspeed(...)`), is the engine; one finding per collective, naming each
        guarded call that reaches it (the periodic and the final save). A switch on the way that
        the run as launched takes is no assumption: a store_true left off (`if not opt.evolve:`),
        one every launch beside the script gives (`--wandb` in each), a field every construction
        sets (`Trainer(ckpt_dir="checkpoints")`, `Config(use_deepspeed=args.deepspeed)` with the
        option on by default), Lightning's `not trainer.sanity_checking` (false only in the check
        before training). A test reading a list of what is on disk (`checkpoints =
        os.listdir(out)`, `if len(checkpoints) > 0:`) is a test of the disk as above. Code after
        `if args.mode == "eval": (if rank == 0: ...; return)` where the launch leaves --mode at
        another value runs on every rank.
        A rank that raises under a rank test crashes the job;
        what follows is not rank-conditional. A collective that runs only past a rank's early
        exit from a loop (`if stop and is_main: break`, or `sys.exit()`, or rank 0's `return`
        from the function on a test that is more than a rank test), or past its skip of
        the rest of a pass on a test that is more than a rank test (`if resuming and rank == 0:
        continue`), is that exit's
        consequence: DDP809 reports the exit, once, and DDP801 does not report each collective
        after it. A model of the script's own class loaded by its own `from_pretrained(path)`
        (no transformers base) holds what that class builds, whatever the checkpoint's name
        says; a Lightning Fabric model handed back by `fabric.setup(model, opt)` where every
        `Fabric(...)` of the file takes a DDP strategy (`strategy="ddp"`) is the DDP wrapper,
        as Accelerate's prepared model is.
        A script whose every `accelerate launch` names a config with `distributed_type: MULTI_GPU`
        runs DDP, whatever DeepSpeed helper its template keeps (`AcceleratorState().deepspeed_plugin`):
        `save_state()` on the main process is its alone there.
        A `save_state()` under a test the engine fails (`if accelerator.distributed_type !=
        DistributedType.FSDP:`) is not the run of a launch whose config picks that engine. A part of
        the rank test's `and` that no shipped config turns on (`if cfg.cluster.requeue and
        main_node:` with `requeue: false` in every file of the Hydra group) is a side no run takes;
        `if args.hub_repo:` of a `required=True` text option holds on every run (no assumption).
        The model is the one the run as launched builds: `if args.backbone == "PathAgents": model =
        PathAgents(...) elif args.backbone == "TreeMamba": model = TreeMamba(...)` holds the buffers
        of the side the options' values take, and a factory's `model = CLIP(...).float()` is the
        CLIP it builds.
        A value a loop over constants hands down is each of them: rank 0's `for fold in ("dev",
        "test"): evaluate(args, model, fold)` into `load_examples(args, fold=fold)` never takes
        its `if local_rank == 0 and fold == "train": dist.barrier()`.

    Why it hurts:
        A collective completes only when every rank of the group enters it. The ranks
        inside the branch wait for the others, which never come (or come later, into a
        different collective): the job hangs until the process-group timeout (30 min on
        gloo, 10 on NCCL), or two unrelated collectives pair up and return garbage.

        Values a block no run takes never reach a use: a field bound on a side of an `if` the
        configs settle (`self.model = DDP(...)` under `if cfg['task'] == 'fine_tuning':` where every
        config, also each point of a project's hyperparameter `grid(config)` built from the
        config's items, says `task: mcat`) is not the field's value, and a block a loop runs on
        its first pass alone (`if first:` with `first = True` before the loop and set False on
        every pass) hands a helper the module it holds there, not the FSDP model the same pass
        wraps further down.
    How to fix:
        Run the collective on every rank, and only the side effect on one:

            # before
            if rank == 0:
                dist.all_reduce(loss)          # rank 0 waits forever
                print(loss.item() / world)
            # after
            dist.all_reduce(loss)
            if rank == 0:
                print(loss.item() / world)

        (A module a loader reads by a config key - `module = cfg.renderer_module`, then
        `imp.load_source(module, path).Renderer(net)` or `import_module(cfg.X)` - is read with
        its own imports: the network parts holding buffers are seen.)

        For Lightning, log with `sync_dist=True` from every rank (or `rank_zero_only=True`
        without sync_dist); for Accelerate, call `gather`/`wait_for_everyone` on every
        process and test `accelerator.is_main_process` only around the printing or saving.
    """
    if not facts.guarded_collectives:
        return []
    problems = []
    # a collective that runs only past a rank's early exit from the loop (`if stop and is_main:
    # break`) is that exit's consequence, which DDP809 reports at the exit: one finding, not two;
    # so is one past a `continue` whose test is more than a rank test (`if iter < resumed and
    # rank == 0: continue`: five reductions skipped in that pass, one decision). Past a plain
    # `if not is_master: continue` the collective is the place, as past `if rank != 0: return`
    # (also where the test that leaves reads rank 0's own state: `if rank == 0 and epoch -
    # last_better > patience: break`, reported as that state's decision)
    exits = {str(d.location) for d in getattr(facts, "rank_local", [])
             if (d.kind == "rank_exit" and (d.action in ("break", "exit", "end")
                                            or (d.action == "continue" and d.open_test)))
             or (d.kind == "rank_state" and d.action == "break")}
    for found in facts.guarded_collectives:
        if str(found.guard_location) in exits:
            continue
        via = ""
        if found.chain:
            via = " through " + " -> ".join(found.chain)
        latent = no_grad_forward(found.op)
        conditional = sharded_save(found.op)  # a collective only under the engine it names
        consequence = ("with gradients off that is one buffer broadcast, which pairs with the "
                       "other ranks' next training forward; where they reach another collective "
                       "or the end of the job first (after the last evaluation, a barrier), the "
                       "job hangs" if latent else
                       "the ranks that skip the branch never enter it, and the job hangs or "
                       "pairs it with another collective")
        inner = f" (the collective itself at {found.inner})" if found.inner else ""
        others = getattr(found, "other_ways", [])
        more = f" (and through {', '.join(others[:3])})" if others else ""
        message = (f"{found.op} at {found.location}{inner} runs only where `{found.guard}` holds "
                   f"({found.guard_location}, {found.function}){via}{more}: {consequence}")
        if found.assumption:  # the test also reads values the source does not show
            message = f"if {found.assumption}: {message}"
        elif found.given:  # and values the source settles only by their defaults
            message = f"with {found.given}: {message}"
        problems.append(Problem(
            message=message,
            hint=_hint(found.op),
            location=found.location,
            evidence={"op": found.op, "guard": found.guard, "guard_location": str(found.guard_location),
                      "function": found.function, "chain": found.chain,
                      "assumption": found.assumption or None, "given": found.given or None,
                      # the collective's own place where the finding stands at the call into it
                      "collective_at": str(found.inner) if found.inner else None,
                      # the other guarded calls that reach it, in the finding's own file
                      **({"also": also} if (also := [int(w.rpartition(":")[2]) for w in others
                                                      if w.rpartition(":")[0] == str(found.location.file)
                                                      and w.rpartition(":")[2].isdigit()]) else {})},
            severity=Severity.WARNING if found.assumption or latent or conditional else None,
        ))
    return problems


def _hint(op: str) -> str:
    if "consolidate_state_dict()" in op:
        return ("call optimizer.consolidate_state_dict() on every rank (it gathers the shards to rank 0), "
                "then save the optimizer's state_dict() on rank 0 alone")
    if op.startswith("accelerator.load_state()"):
        return ("call accelerator.load_state() on every process: each process loads its own copy of the "
                "state, and under FSDP or DeepSpeed every process loads its part of it together with the others")
    if op.startswith("accelerator.save_state()"):
        return ("call accelerator.save_state() on every process: Accelerate writes the files from "
                "the main process itself where only it should, and under DeepSpeed or FSDP every "
                "process holds a part of the state (or test `accelerator.distributed_type == "
                "DistributedType.DEEPSPEED or accelerator.is_main_process`)")
    if op.endswith((HF_FSDP_SAVE, HF_FSDP_SAVE_SET, HF_ZERO3_SAVE)):
        return (f"call {op.partition(' (')[0]} on every rank: the Trainer gathers the weights from every "
                "rank's shards and writes from the main process itself (args.should_save); keep only "
                "what one rank writes by hand (a tokenizer) under the rank test")
    if op.endswith(ZERO3_GATHER):
        return ("call the consolidation on every rank (under ZeRO-3 each rank hands in its "
                "partition), then write the result on rank 0 alone")
    if op.endswith(DEEPSPEED_SAVE):
        return ("call save_checkpoint() on every rank: DeepSpeed writes each rank's own partition and "
                "decides itself which files rank 0 alone writes; keep only what one rank writes by "
                "hand (a tokenizer, a log line) under the rank test")
    if op.startswith(DDP_BACKWARD):
        return ("train on every rank, or on one rank through the plain module (`model.module`), "
                "whose backward all-reduces nothing")
    if op.startswith(DDP_FORWARD):
        return ("on one rank, run the plain module (`model.module(x)`), not the DDP wrapper; or "
                "evaluate on every rank and reduce the metric")
    if op.startswith("DistributedDataParallel"):
        return "wrap the model in DDP on every rank"
    return ("call the collective on every rank: move it out of the rank-conditional branch "
            "(every rank all_reduces / waits in the barrier, only rank 0 prints or saves)")
