"""The training framework a run used, and every finding said in that framework's words.

HF Trainer, Lightning and Accelerate build DDP, the sampler and the metric all-reduces for the
user, so a finding that names `DistributedDataParallel(find_unused_parameters=False)` or
"look for `if rank == 0:`" points at code the user never wrote. This module, the one place
that knows each framework's knobs, moves a finding's location to the line where the user
configured the framework (TrainingArguments(...), Trainer(...), Accelerator(...), a
`self.log(..., sync_dist=True)`) and gives its fix in the framework's own terms. A check asks
for its words as it makes a finding (`worded`, `ddp_builder`); no text is patched afterwards.

What the ranks recorded: telemetry.FrameworkUse (inrank/frameworks.py).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Optional

from ddpdoctor.core.findings import Location, Problem
from ddpdoctor.probe.records import telemetry as tm
from ddpdoctor.probe.run_model.loaded_run import RunModel
from ddpdoctor.probe.words.wording import location as site_location, rank_list

NAMES = {"transformers": "Hugging Face Transformers", "lightning": "Lightning",
         "accelerate": "Accelerate", "fsdp": "PyTorch FSDP", "fsdp2": "PyTorch FSDP2",
         "deepspeed": "DeepSpeed"}
# Which framework drives the run when several show up (HF Trainer runs on Accelerate).
_PRECEDENCE = ("transformers", "lightning", "accelerate", "deepspeed", "fsdp2", "fsdp")
# The event where the user configured each framework: its location is "the line to fix".
_CONFIG_EVENT = {"transformers": "TrainingArguments", "lightning": "Trainer",
                 "accelerate": "Accelerator", "fsdp": "FullyShardedDataParallel",
                 "fsdp2": "fully_shard"}
COLLECTIVE_CODES = {"DDP501", "DDP502", "DDP503", "DDP504", "DDP506"}
DATA_CODES = {"DDP301", "DDP303", "DDP304"}


@dataclass
class Framework:
    """The framework of a run: what it is, how it distributes, where the user configured it."""

    name: str
    version: str
    strategy: str
    config: Optional[tm.FrameworkUse]  # the configuring call (TrainingArguments(...), ...)
    uses: list[tuple[int, tm.FrameworkUse]] = field(default_factory=list)  # (rank, record)

    @property
    def title(self) -> str:
        return NAMES.get(self.name, self.name)

    @property
    def settings(self) -> dict[str, Any]:
        return dict(self.config.settings) if self.config else {}

    @property
    def config_location(self) -> Optional[Location]:
        return site_location(self.config.site) if self.config else None

    def events(self, event: str, name: Optional[str] = None) -> list[tuple[int, tm.FrameworkUse]]:
        return [(r, u) for r, u in self.uses if u.event == event and (name is None or u.name == name)]

    def to_dict(self) -> dict[str, Any]:
        where = self.config_location
        return {"name": self.name, "version": self.version, "strategy": self.strategy,
                "configured_at": str(where) if where else None}

    def describe(self) -> str:
        where = self.config_location
        return (f"framework: {self.title} {self.version}".rstrip() + f", strategy {self.strategy}"
                + (f", configured at {where}" if where else ""))


def detect(run: RunModel) -> Optional[Framework]:
    """The framework that drove the run, from what the ranks recorded; None for plain DDP."""
    uses = [(rank, use) for rank, rank_run in sorted(run.ranks.items())
            for use in rank_run.of(tm.FrameworkUse)]
    if not uses:
        return None
    names = {use.name for _, use in uses}
    name = next((n for n in _PRECEDENCE if n in names), sorted(names)[0])
    mine = [use for _, use in uses if use.name == name]
    config = next((u for u in mine if u.event == _CONFIG_EVENT.get(name)), None)
    version = next((u.version for u in mine if u.version), "")
    if name in ("fsdp", "fsdp2") and not version:
        starts = [r.first(tm.Start) for r in run.ranks.values()]
        version = next((s.torch for s in starts if s is not None), "")
    return Framework(name, version, _strategy(name, config, names), config, uses)


def _strategy(name: str, config: Optional[tm.FrameworkUse], names: set[str]) -> str:
    settings = config.settings if config else {}
    sharded = "FSDP2" if "fsdp2" in names else "FSDP" if "fsdp" in names else ""
    if name == "transformers":
        if settings.get("fsdp"):
            return "fsdp"
        return "deepspeed" if settings.get("deepspeed") else (sharded.lower() or "ddp")
    if name == "lightning":
        return str(settings.get("strategy") or "ddp")
    if name == "accelerate":
        kind = str(settings.get("distributed_type") or "")
        return sharded or {"MULTI_CPU": "ddp", "MULTI_GPU": "ddp"}.get(kind, kind.lower() or "ddp")
    if name == "fsdp2":
        return "fully_shard"
    if name == "fsdp":
        return "FullyShardedDataParallel"
    return name


# -- findings in the framework's words ----------------------------------------------------------

# Who built the DDP model for the user, in the words of DDP402's message.
_DDP_BUILDER = {"transformers": "Trainer", "lightning": "Lightning", "accelerate": "prepare"}


def ddp_builder(run: RunModel) -> str:
    """Who built the run's DDP model when a framework did ("Trainer", "Lightning", "prepare"),
    "" when the user's own code called DistributedDataParallel(...)."""
    framework = detect(run)
    return _DDP_BUILDER.get(framework.name, "") if framework is not None else ""


def worded(code: str, problem: Problem, run: RunModel) -> Problem:
    """A check's problem said in the words of the run's framework, asked by the check as it
    makes the finding: moved to the line where the user configured the framework, its fix in
    the framework's own knobs, evidence["framework"] naming it. Plain DDP: unchanged."""
    framework = detect(run)
    if framework is not None and _word(code, problem, run, framework):
        problem.evidence.setdefault("framework", framework.to_dict())
    return problem


def _word(code: str, problem: Problem, run: RunModel, framework: Framework) -> bool:
    rule = _RULES.get((framework.name, code))
    if rule is None and code in COLLECTIVE_CODES:
        rule = _COLLECTIVE_RULES.get(framework.name)
    if rule is None and code in DATA_CODES:
        rule = _DATA_RULES.get(framework.name)
    return rule is not None and rule(problem, run, framework)


def _move_to(finding: Problem, where: Optional[Location]) -> None:
    """Point the finding at the user's configuring line; the old place becomes context."""
    if where is None:
        return
    old = finding.location
    if old is not None and (old.file, old.line) != (where.file, where.line):
        context = ((old.file, old.line, "this call"),) if not where.called_from else where.called_from
        where = Location(where.file, where.line, context)
    finding.location = where


def _config_phrase(framework: Framework) -> str:
    where = framework.config_location
    return f" (at {where})" if where else ""


# DDP402: find_unused_parameters=True with every parameter used.

def _hf_find_unused(finding: Problem, run: RunModel, fw: Framework) -> bool:
    explicit = fw.settings.get("ddp_find_unused_parameters") is True
    _move_to(finding, fw.config_location)
    why = ("you set ddp_find_unused_parameters=True" if explicit else
           "left at its default (None), Trainer turns DDP's find_unused_parameters on for any "
           "model without gradient checkpointing")
    finding.hint = (f"pass TrainingArguments(..., ddp_find_unused_parameters=False){_config_phrase(fw)}: "
                    f"{why}, and every parameter got a gradient here")
    return True


def _lightning_find_unused(finding: Problem, run: RunModel, fw: Framework) -> bool:
    _move_to(finding, fw.config_location)
    finding.hint = ("use Trainer(strategy=\"ddp\") or Trainer(strategy=DDPStrategy(find_unused_parameters=False))"
                    f"{_config_phrase(fw)} instead of strategy=\"ddp_find_unused_parameters_true\" "
                    "or find_unused_parameters=True: every parameter got a gradient here")
    return True


def _accelerate_find_unused(finding: Problem, run: RunModel, fw: Framework) -> bool:
    _move_to(finding, fw.config_location)
    finding.hint = ("drop DistributedDataParallelKwargs(find_unused_parameters=True) from "
                    f"Accelerator(kwargs_handlers=[...]){_config_phrase(fw)} (the default is False): "
                    "every parameter got a gradient here")
    return True


# DDP401: parameters without a gradient.

def _hf_unused(finding: Problem, run: RunModel, fw: Framework) -> bool:
    _move_to(finding, fw.config_location)
    finding.hint = ("make those parameters take part in the loss or freeze them "
                    "(requires_grad=False); if some steps really skip them, pass "
                    f"TrainingArguments(..., ddp_find_unused_parameters=True){_config_phrase(fw)}")
    return True


def _lightning_unused(finding: Problem, run: RunModel, fw: Framework) -> bool:
    _move_to(finding, fw.config_location)
    finding.hint = ("make those parameters take part in the loss or freeze them "
                    "(requires_grad=False); if some steps really skip them, use "
                    "Trainer(strategy=\"ddp_find_unused_parameters_true\") or "
                    f"Trainer(strategy=DDPStrategy(find_unused_parameters=True)){_config_phrase(fw)}")
    return True


def _accelerate_unused(finding: Problem, run: RunModel, fw: Framework) -> bool:
    _move_to(finding, fw.config_location)
    finding.hint = ("make those parameters take part in the loss or freeze them "
                    "(requires_grad=False); if some steps really skip them, pass "
                    "Accelerator(kwargs_handlers=[DistributedDataParallelKwargs("
                    f"find_unused_parameters=True)]){_config_phrase(fw)}")
    return True


# DDP403: accumulation without no_sync.

def _accelerate_accumulation(finding: Problem, run: RunModel, fw: Framework) -> bool:
    finding.hint = ("run each micro-step inside `with accelerator.accumulate(model):` with "
                    "Accelerator(gradient_accumulation_steps=N): it skips the all-reduce until the "
                    "last micro-step")
    return True


# DDP301/303/304: ranks read the same data.

def _lightning_data(finding: Problem, run: RunModel, fw: Framework) -> bool:
    if fw.settings.get("use_distributed_sampler") is False:
        _move_to(finding, fw.config_location)
        finding.hint = (f"drop use_distributed_sampler=False from Trainer(...){_config_phrase(fw)}: "
                        "with the default (True) Lightning wraps your loader's sampler in a "
                        "DistributedSampler; or give the DataLoader a DistributedSampler yourself")
    else:
        finding.hint = ("Lightning only replaces a RandomSampler or SequentialSampler: give a "
                        "custom sampler a DistributedSampler (or a rank-aware split) yourself, "
                        "and keep Trainer(use_distributed_sampler=True)")
    return True


def _accelerate_data(finding: Problem, run: RunModel, fw: Framework) -> bool:
    prepared = fw.events("prepare", "accelerate")
    where = site_location(prepared[0][1].site) if prepared else None
    finding.hint = ("pass the DataLoader to accelerator.prepare(...) with the model and optimizer"
                    + (f" (at {where})" if where else "")
                    + " and iterate over the loader it returns: prepare shards the batches across "
                    "processes; a loader left out of it gives every process the same batches")
    return True


def _hf_data(finding: Problem, run: RunModel, fw: Framework) -> bool:
    finding.hint = ("let Trainer build the loader from train_dataset (it shards it across "
                    "processes); an overridden get_train_dataloader must return "
                    "self.accelerator.prepare(loader)")
    return True


# DDP5xx: ranks left the same sequence of collectives.

def _finding_step(finding: Problem) -> float:
    """The step at which the ranks diverged, where the finding says (else no bound): a call
    that some ranks made only later cannot explain it."""
    step = finding.evidence.get("step")
    return step if isinstance(step, (int, float)) and not isinstance(step, bool) else float("inf")


def _partial_synced_logs(run: RunModel, fw: Framework,
                         until: float = float("inf")) -> list[tuple[tm.FrameworkUse, list[int]]]:
    """Metrics logged with sync_dist=True on some ranks but not on others (by step `until`)."""
    ranks_by_name: dict[str, set[int]] = {}
    first: dict[str, tm.FrameworkUse] = {}
    for rank, use in fw.events("log_sync_dist", "lightning"):
        if use.step > until:
            continue
        name = str(use.settings.get("name"))
        ranks_by_name.setdefault(name, set()).add(rank)
        first.setdefault(name, use)
    formed = set(run.ranks)
    return [(first[name], sorted(ranks)) for name, ranks in ranks_by_name.items()
            if ranks and ranks != formed]


def _lightning_collective(finding: Problem, run: RunModel, fw: Framework) -> bool:
    partial = _partial_synced_logs(run, fw, _finding_step(finding))
    if partial:
        use, ranks = partial[0]
        where = site_location(use.site)
        name = use.settings.get("name")
        if where is not None:
            finding.location = where
        finding.message += (f"; the metric {name!r} was logged with self.log(..., sync_dist=True)"
                            f"{' at ' + str(where) if where else ''} on {rank_list(ranks)} only, and "
                            "Lightning all-reduces it across every rank")
        finding.hint = ("call self.log(..., sync_dist=True) on every rank: not under "
                        "`if self.trainer.is_global_zero:` (or `if self.global_rank == 0:`). For a "
                        "value only rank 0 has, log it with rank_zero_only=True and without sync_dist")
        finding.evidence["synced_log"] = {"name": name, "ranks": ranks,
                                          "site": str(where) if where else None}
        return True
    partial_calls = _partial_calls(run, _is_lightning_collective, _finding_step(finding))
    if partial_calls:
        site, call, ranks = partial_calls[0]
        where = site_location(site)
        finding.location = where
        method = call.split(".")[-1]
        finding.message += f"; {call} at {where} was called on {rank_list(ranks)} only"
        finding.evidence["partial_call"] = {"call": call, "ranks": ranks, "site": str(where)}
        if method == "save_checkpoint":
            finding.hint = ("call trainer.save_checkpoint(path) on every rank, not under "
                            "`if trainer.is_global_zero:`: it synchronises the ranks and writes "
                            "the file from rank 0 only")
        else:
            finding.hint = (f"{call}(...) is a collective: call it on every rank, not under "
                            "`if self.trainer.is_global_zero:`; keep only rank 0's own work "
                            "(printing, writing) in that branch")
        return True
    finding.hint += ("; with Lightning, look for self.log(..., sync_dist=True), "
                     "trainer.save_checkpoint or self.all_gather under `if self.trainer.is_global_zero:`")
    return True


_LIGHTNING_COLLECTIVES = ("save_checkpoint", "all_gather", "barrier", "reduce", "broadcast")


def _is_lightning_collective(call: str) -> bool:
    return "." in call and call.split(".")[-1] in _LIGHTNING_COLLECTIVES


_ACCELERATE_COLLECTIVES = ("gather", "gather_for_metrics", "reduce", "pad_across_processes",
                           "wait_for_everyone", "save_state", "broadcast")


def _partial_calls(run: RunModel, wanted,
                   until: float = float("inf")) -> list[tuple[tm.Site, str, list[int]]]:
    """User lines whose collective (through a call `wanted(call)` accepts) only some ranks made:
    (site, call, ranks), first made first."""
    ranks_at: dict[tuple, set[int]] = {}
    first: dict[tuple, tuple[float, tm.Site]] = {}
    for rank, rank_run in run.ranks.items():
        for record in rank_run.of(tm.Collective):
            site = record.site
            if site is None or record.step > until or not wanted(site.call):
                continue
            key = (site.file, site.line, site.call)
            ranks_at.setdefault(key, set()).add(rank)
            if key not in first or record.t < first[key][0]:
                first[key] = (record.t, site)
    formed = set(run.ranks)
    partial = [(first[k][0], first[k][1], k[2], sorted(r)) for k, r in ranks_at.items() if r != formed]
    return [(site, call, ranks) for _, site, call, ranks in sorted(partial, key=lambda p: p[0])]


def _is_accelerate_collective(call: str) -> bool:
    return call.startswith("Accelerator.") and call.split(".")[-1] in _ACCELERATE_COLLECTIVES


def _accelerate_collective(finding: Problem, run: RunModel, fw: Framework) -> bool:
    partial = _partial_calls(run, _is_accelerate_collective, _finding_step(finding))
    if partial:
        site, call, ranks = partial[0]
        method = call.split(".")[-1]
        where = site_location(site)
        finding.location = where
        finding.message += (f"; accelerator.{method}(...) at {where} was called on {rank_list(ranks)} "
                            "only")
        finding.hint = (f"accelerator.{method}(...) is a collective: every process must call it. "
                        "Keep only what the main process alone does (print, save) under "
                        "`if accelerator.is_main_process:`, and call "
                        f"accelerator.{method}(...) before that branch")
        finding.evidence["partial_call"] = {"call": call, "ranks": ranks, "site": str(where)}
    else:
        finding.hint += ("; with Accelerate, look for accelerator.gather / reduce / "
                         "wait_for_everyone under `if accelerator.is_main_process:`")
    return True


# DDP701: several ranks write one checkpoint.

def _lightning_checkpoint(finding: Problem, run: RunModel, fw: Framework) -> bool:
    finding.hint = ("save with trainer.save_checkpoint(path), called on every rank: Lightning "
                    "writes the file from rank 0 only")
    return True


def _accelerate_checkpoint(finding: Problem, run: RunModel, fw: Framework) -> bool:
    finding.hint = ("save under `if accelerator.is_main_process:` (call accelerator.wait_for_everyone() "
                    "on every process first), or use accelerator.save_state / save_model, which "
                    "write from the main process only")
    return True


def _hf_checkpoint(finding: Problem, run: RunModel, fw: Framework) -> bool:
    finding.hint = ("save with trainer.save_model(path) (or TrainingArguments(save_strategy=...)): "
                    "Trainer writes from the main process only")
    return True


_RULES = {
    ("transformers", "DDP402"): _hf_find_unused,
    ("lightning", "DDP402"): _lightning_find_unused,
    ("accelerate", "DDP402"): _accelerate_find_unused,
    ("transformers", "DDP401"): _hf_unused,
    ("lightning", "DDP401"): _lightning_unused,
    ("accelerate", "DDP401"): _accelerate_unused,
    ("accelerate", "DDP403"): _accelerate_accumulation,
    ("lightning", "DDP701"): _lightning_checkpoint,
    ("accelerate", "DDP701"): _accelerate_checkpoint,
    ("transformers", "DDP701"): _hf_checkpoint,
}
_COLLECTIVE_RULES = {"lightning": _lightning_collective, "accelerate": _accelerate_collective}
_DATA_RULES = {"lightning": _lightning_data, "accelerate": _accelerate_data,
               "transformers": _hf_data}
