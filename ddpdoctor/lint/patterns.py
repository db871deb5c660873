"""What the lint knows about DDP: the calls and environment variables that give a rank, the
collectives (torch.distributed, Accelerate, Lightning, Fabric, a DDP model's forward that
broadcasts buffers), saves, init_process_group, the rank-only decorators, and the RankTest a
guard is. program.py resolves names and follows control flow and asks these what a resolved call
means; which names hold a rank is decided by data flow, scope by scope, in ranks.py.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional

from ddpdoctor.core import torch_names as names
from ddpdoctor.lint import reaching
from ddpdoctor.lint.config_files import engine_launched, engines_named, launch_engine_only, launch_engines, launched_plain, launched_zero_stage
from ddpdoctor.lint.nodes import apart, children, param_defaults, walk
from ddpdoctor.lint.receivers import _unpacked_from

# Calls that return a rank.
RANK_CALLS = {"get_rank", "get_local_rank", "get_global_rank", "get_node_local_rank", "get_ordinal",
              "get_process_index", "get_local_process_index", "local_process_index",
              "Get_rank",  # mpi4py: MPI.COMM_WORLD.Get_rank()
              "current_device"}  # torch.cuda.current_device(): the local rank once set_device(local_rank) ran
RANK_ENV = {"RANK", "LOCAL_RANK", "GROUP_RANK", "NODE_RANK", "SLURM_PROCID", "SLURM_LOCALID",
            "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_LOCAL_RANK", "PMI_RANK", "MV2_COMM_WORLD_RANK"}
# Decorators that make a function run on one rank only.
RANK_ONLY_DECORATORS = {"rank_zero_only", "main_process_only", "on_main_process",
                        "on_local_main_process", "on_process", "on_local_process", "rank_zero_first"}

# torch.distributed functions every rank of the group must enter, as a script spells them: the
# public collectives, the older and private spellings, making a group, and a batch of p2p ops
# (every rank of the batch's group enters it). Not init_process_group: its own rules read it.
TORCH_COLLECTIVES = frozenset(names.COLLECTIVES + names.LEGACY_COLLECTIVES + names.GROUP_CREATION
                              + names.P2P_BATCH)
ACCELERATE_COLLECTIVES = {"gather", "gather_for_metrics", "reduce", "wait_for_everyone",
                          "pad_across_processes", "broadcast"}
FABRIC_COLLECTIVES = {"barrier", "all_reduce", "all_gather", "broadcast"}


def dotted(node: ast.AST) -> Optional[str]:
    """`a.b.c` for a chain of names and attributes, else None."""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
        return ".".join(reversed(parts))
    return None


def call_chain(call: ast.Call) -> list[ast.Call]:
    """The calls of a method chain, outermost first (`a(x).b(y).c(z)`: c, b, a): a pipeline
    written as one expression (`wds.WebDataset(urls).shuffle(1000).decode("pil")`)."""
    found = [call]
    while found[-1].func.__class__ is ast.Attribute and found[-1].func.value.__class__ is ast.Call:
        found.append(found[-1].func.value)
    return found


def last_name(node: ast.AST) -> Optional[str]:
    """The last component of a name, attribute or call target: `self.train_loader` -> train_loader."""
    cls = node.__class__  # exact classes (a parsed tree has no subclasses): asked 50,000 times on open_clip
    if cls is ast.Call:
        node = node.func
        cls = node.__class__
    if cls is ast.Attribute:
        return node.attr
    if cls is ast.Name:
        return node.id
    return None


def text(node: ast.AST, limit: int = 80) -> str:
    # kept on the node (as nodes.walk keeps its walk): the walk and the rules say the same tests
    # again and again, each unparse a visitor over the subtree; the trees never change once
    # parsed. With the node's id: a copy made to be changed (ranks' deepcopy of a rank
    # expression, its parameters swapped for a caller's arguments) carries the original's text.
    held = getattr(node, "__dict__", None)
    kept = held.get("_text") if held is not None else None
    if kept is not None and kept[0] == id(node):
        out = kept[1]
    else:
        try:
            out = " ".join(ast.unparse(node).split())
        except Exception:  # noqa: BLE001 - unparse of odd trees; the text is only for messages
            return "?"
        if held is not None:
            held["_text"] = (id(node), out)
    return out if len(out) <= limit else out[:limit - 1] + "…"


def is_const(node: ast.AST, *values) -> bool:
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub) and isinstance(node.operand, ast.Constant):
        return any(v == -node.operand.value for v in values if isinstance(v, (int, float)))
    return isinstance(node, ast.Constant) and any(node.value == v and type(node.value) is type(v)
                                                  for v in values)


def env_key(node: ast.AST) -> Optional[str]:
    """"RANK" for os.environ["RANK"], os.environ.get("RANK", ...), os.getenv("RANK")."""
    if isinstance(node, ast.Subscript) and (dotted(node.value) or "").endswith("environ"):
        key = node.slice
        if isinstance(key, ast.Constant) and isinstance(key.value, str):
            return key.value
    if isinstance(node, ast.Call) and node.args:
        name = dotted(node.func) or ""
        if name.endswith("environ.get") or name.endswith("getenv"):
            key = node.args[0]
            if isinstance(key, ast.Constant) and isinstance(key.value, str):
                return key.value
    return None


def _key(node: ast.AST) -> str:
    return last_name(node) or text(node)


@dataclass(frozen=True)
class RankTest:
    """A test whose outcome differs between ranks. polarity: "zero" (true on rank 0 only),
    "nonzero" (true on every rank but 0), "other"."""

    text: str
    key: str
    polarity: str
    # Empty when the code proves the test differs between ranks; else what must hold for it to
    # ("`args.logs` is true on every rank"): findings that rest on it are warnings that say so.
    assumption: str = ""
    scope: str = "global"  # "node" when it tests the rank within a node (local_rank, rank % gpus)
    # The config defaults the test's other parts hold at, when they settle it in place of an
    # assumption ("`Cfg.flag` at its default `False` (config.py:5)"): said, not assumed.
    given: str = ""
    # `A and rank == 0` with A a value the source does not settle: A's text. Its negation holds
    # on every rank wherever A is false, so the `else:` of such a test is no rank branch.
    open: tuple = ()
    # the negation of such a test (its `else:`): true on every rank wherever the open parts are
    # false. A collective there still pairs with the other side's; who writes or trains there is
    # every rank (saves, loaders: fact_builder.rank_guards)
    everyone: bool = False

    def negated(self) -> "RankTest":
        flip = {"zero": "nonzero", "nonzero": "zero"}.get(self.polarity, "other")
        return RankTest(_negated_text(self.text), self.key, flip, self.assumption, self.scope, self.given,
                        self.open, bool(self.open) and not self.everyone)


def _negated_text(test: str) -> str:
    """`not (x)`, or `x` where the test already reads `not x` (the rest of a function after
    `if not accelerator.is_local_main_process: return` is said as the test it passed, not as
    `not (not (...))`)."""
    try:
        node = ast.parse(test, mode="eval").body
    except SyntaxError:
        return f"not ({test})"
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
        return ast.unparse(node.operand)
    return f"not ({test})"


def keyword(call: ast.Call, name: str) -> Optional[ast.AST]:
    for kw in call.keywords:
        if kw.arg == name:
            return kw.value
    return None


def call_keywords(program: Program, call: ast.Call, fn: Function) -> Optional[dict[str, ast.AST]]:
    """A call's keyword arguments by name, those spread from `**loader_kwargs` included where
    the name holds a dict literal of string keys (every value it may hold, merged); None when a
    `**` spread cannot be read."""
    found: dict[str, ast.AST] = {}
    for kw in call.keywords:
        if kw.arg is not None:
            found[kw.arg] = kw.value
            continue
        spread = getattr(getattr(getattr(fn, "node", None), "args", None), "kwarg", None)
        if spread is not None and isinstance(kw.value, ast.Name) and kw.value.id == spread.arg:
            # `def get_loader(ds, **kwargs): return DataLoader(ds, **kwargs)`: what its callers
            # give by name (none that spreads a dict of its own, which cannot be read)
            if fn.__dict__.get("_spread_calls"):
                return None
            for given, _ in fn.arguments.get(f"**{spread.arg}", []):
                found.setdefault(given.arg, given.value)
            continue
        # (`kwargs = {"num_workers": n, ...} if config["cuda"] else {}`: either side's keys)
        values = [(_dict_call_literal(side), s) for v, s in _spread_values(program, kw.value, fn)
                  for side in ((v.body, v.orelse) if isinstance(v, ast.IfExp) else (v,))]
        if not values or not all(isinstance(v, ast.Dict) and all(isinstance(k, ast.Constant) and
                                                                  isinstance(k.value, str) for k in v.keys)
                                 for v, _ in values):
            return None
        for v, _ in values:
            for key, value in zip(v.keys, v.values):
                found.setdefault(key.value, value)
        if isinstance(kw.value, ast.Name):
            # `train_kwargs.update(cuda_kwargs)` before the call, a dict literal of its own (the
            # PyTorch examples' `{'num_workers': 1, 'pin_memory': True, 'shuffle': True}`): merged in
            for merged in _updates(program, kw.value.id, fn, call):
                if merged is None:
                    return None
                for key, value in zip(merged.keys, merged.values):
                    found[key.value] = value
    return found


def _updates(program: Program, name: str, fn: Function, call: ast.Call) -> list:
    """The dict literals fn merges into `name` with `name.update(...)` above the call (None for
    one that cannot be read)."""
    found = []
    for node in fn.own_calls:
        if not (isinstance(node.func, ast.Attribute) and node.func.attr == "update" and
                isinstance(node.func.value, ast.Name) and node.func.value.id == name and
                node.lineno < call.lineno and len(node.args) == 1 and not node.keywords):
            continue
        held = [_dict_call_literal(v) for v, _ in program.values_of(node.args[0], fn)]
        found.extend(v if isinstance(v, ast.Dict) and all(isinstance(k, ast.Constant) and isinstance(k.value, str)
                                                         for k in v.keys) else None for v in held or [None])
    return found


def _spread_values(program: Program, value: ast.AST, fn: Function) -> list:
    """What a `**` spread may hold: the values of a name, and where one is a call of local
    functions, what they return (`**self._loader_kwargs()`, a method returning a dict literal)."""
    found = []
    for held, scope in program.values_of(value, fn):
        targets = program.resolve(held.func, scope)[0] if isinstance(held, ast.Call) else []
        returned = [(r, t) for t in targets if t.node is not None and not isinstance(t.node, ast.Module)
                    for r in t.returned]
        if targets and returned:
            found.extend(v for r, t in returned for v in program.values_of(r, t))
        else:
            found.append((held, scope))
    return found


def spread_keyword(program: Program, call: ast.Call, fn: Function, key: str) -> tuple:
    """(value, the function it is read in) of `key` in a `**` spread of the call: `Trainer(model,
    **data_module)` of `data_module = make_data_module(...)`, a helper returning `dict(train_dataset=
    ds, ...)` - the value in that helper's scope; (None, None) where no spread gives it, or two
    give it differently."""
    found = []
    for kw in call.keywords:
        if kw.arg is not None:
            continue
        for held, scope in _spread_values(program, kw.value, fn):
            literal = _dict_call_literal(held)
            if isinstance(literal, ast.Dict):
                found += [(value, scope) for k, value in zip(literal.keys, literal.values)
                          if isinstance(k, ast.Constant) and k.value == key]
    return found[0] if len(found) == 1 else (None, None)


def own_keyword(program: Program, call: ast.Call, fn: Function, key: str) -> Optional[ast.AST]:
    """What a call is given for `key`: its own keyword, or the entry of a `**options` dict
    literal that fn itself writes (`options = {"sampler": s}; DataLoader(ds, **options)`); None
    where neither gives one (a dict a caller hands in is not read: its names are not fn's)."""
    value = keyword(call, key)
    if value is not None:
        return value
    value = (call_keywords(program, call, fn) or {}).get(key)
    return value if value is not None and any(n is value for n in fn.own) else None


def _dict_call_literal(value: ast.AST) -> ast.AST:
    """`dict(dataset=ds, num_workers=4)` as the literal `{"dataset": ds, "num_workers": 4}` it
    spells (the value itself otherwise)."""
    if isinstance(value, ast.Call) and isinstance(value.func, ast.Name) and value.func.id == "dict" \
            and not value.args and value.keywords and all(kw.arg for kw in value.keywords):
        return ast.Dict(keys=[ast.Constant(kw.arg) for kw in value.keywords], values=[kw.value for kw in value.keywords])
    return value


def truthy(node: Optional[ast.AST]) -> bool:
    """A keyword value that is not literally False/None/0."""
    return node is not None and not is_const(node, False, None, 0)


# ---------------------------------------------------------------------- what calls mean for DDP
# Each takes the Program (lint/program.py: name resolution and control flow) and the function a
# call sits in; the Program resolves names, these say what the resolved call means.
Program = Any  # ddpdoctor.lint.program.Program (program imports this module, not the reverse)
Function = Any

# Models whose modules hold buffers (BatchNorm running stats) that a DDP forward broadcasts.
# (spectral_norm keeps its power-iteration vectors `weight_u` / `_u` as buffers: a GAN
# discriminator's, LaMa's)
BUFFER_MARKERS = ("BatchNorm", "register_buffer", "SyncBatchNorm", "track_running_stats=True", "spectral_norm")
# torch's own buffer type (2.5 on): a module attribute assigned one is registered as a buffer
TORCH_BUFFERS = frozenset({"torch.nn.Buffer", "torch.nn.parameter.Buffer"})
# the calls that set up the default process group (lint/facts.py), and with a launcher of ranks
# those that start the distributed run (Program.starts_run)
SETUP_CALLS = ("init_process_group", "init_distributed", "initialize_distributed")
RUN_STARTS = frozenset({*SETUP_CALLS, "spawn", "start_processes"})
BUFFERED_ZOO = ("resnet", "resnext", "densenet", "mobilenet", "efficientnet", "inception", "regnet",
                "_bn", "googlenet", "shufflenet", "mnasnet", "wide_resnet")
# Hugging Face encoders whose embeddings register `position_ids` (and `token_type_ids`) with
# register_buffer: BERT and the models built on its embeddings (RoBERTa, DistilBERT, ALBERT,
# ELECTRA, DeBERTa, CamemBERT...). DDP broadcasts buffers, persistent or not.
# And the sequence-to-sequence generators that keep `final_logits_bias` as a buffer: BART's
# (mBART, KoBART), Marian's, Pegasus's and Blenderbot's LM-head classes (not their bare encoders).
# (GPT-2's attention keeps its causal mask and `masked_bias` as buffers - not persistent, which
# keeps them out of the checkpoint, not out of DDP's broadcast)
BUFFERED_TRANSFORMERS = ("bert", "electra", "longformer", "bartforconditionalgeneration", "marianmtmodel",
                         "pegasusforconditionalgeneration", "blenderbotforconditionalgeneration",
                         "blenderbotsmallforconditionalgeneration", "gpt2")
# the names that hold the run's options (parsed arguments, a config): read the same on every rank
OPTIONS_HOLDER = re.compile(r"^(?:args|opts?|cfg|config|conf|hparams|hp|params|flags|FLAGS|hyp|train_config|"
                            r"dist_config|distributed|launch_config)$")
# Checkpoint families whose models register buffers: BERT's embeddings (above) and the rotary
# embeddings' `inv_freq` (Llama, Mistral, Qwen, Gemma, Phi, GPT-NeoX...), as a model's name or
# path says it (`from_pretrained("meta-llama/Meta-Llama-3-8B")`, `--model_name` defaulting to one).
BUFFERED_CHECKPOINTS = re.compile(r"bert|electra|longformer|gpt2|llama|mistral|mixtral|qwen|gemma|phi-?\d|"
                                  r"gpt-?neox|pythia|falcon|deepseek|internlm|baichuan|yi-", re.IGNORECASE)


def rank_only_decorator(node: ast.AST) -> Optional[str]:
    """The text of a decorator that runs the function on one rank only (`@rank_zero_only`)."""
    for deco in getattr(node, "decorator_list", []):
        target = deco.func if isinstance(deco, ast.Call) else deco
        if last_name(target) in RANK_ONLY_DECORATORS:
            return "@" + text(deco)
    return None


def is_init(program: Program, call: ast.Call, fn: Function) -> bool:
    """The call sets up the default process group."""
    return last_name(call.func) == "init_process_group"


def is_save(program: Program, call: ast.Call, fn: Function) -> bool:
    """The call writes a checkpoint file on the rank that runs it: torch.save (whatever it was
    imported as), safetensors' save_file / save_model, a model's `save_pretrained(dir)`
    (transformers, PEFT, diffusers write on every rank that calls it unless told
    `is_main_process=`), audiotools' `save_to_folder(dir)`. Not Accelerate's save / save_state / save_model nor a transformers
    Trainer's save_model: they write from the main process themselves."""
    return save_call(program, call, fn) is not None


def save_call(program: Program, call: ast.Call, fn: Function) -> Optional[str]:
    """The save's name as a finding words it (`torch.save`, `model.save_pretrained`), or None."""
    full = program.qualify(call.func, fn) or ""
    if full == "torch.save":
        return "torch.save"
    if full.startswith("safetensors.") and full.rsplit(".", 1)[-1] in ("save_file", "save_model"):
        return full.rsplit(".", 2)[-2] + "." + full.rsplit(".", 1)[-1]
    if isinstance(call.func, ast.Attribute) and call.func.attr == "save_pretrained" and \
            not (_GATED_SAVE & _given_keywords(program, call, fn)) and not program.resolve(call.func, fn)[0] \
            and not _SIDE_FILES.search(_saved_name(call.func.value)) and not _side_object(program, call.func.value, fn):
        return f"{text(call.func.value, 40)}.save_pretrained"
    if isinstance(call.func, ast.Attribute) and call.func.attr == "save_to_folder" and \
            not program.resolve(call.func, fn)[0]:
        # audiotools' BaseModel.save_to_folder(folder, extra): torch.save of the weights (and
        # the extras) into the folder on every process that calls it (DAC and the codecs built on it)
        return f"{text(call.func.value, 40)}.save_to_folder"
    return None


def _side_object(program: Program, receiver: ast.AST, fn: Function) -> bool:
    """The name holds what a side-file class loads, on every way it is bound (`extractor =
    WhisperFeatureExtractor.from_pretrained(name)`): a few small files, as _SIDE_FILES."""
    if receiver.__class__ is not ast.Name:
        return False
    held = program.values_of(receiver, fn, 1)
    return bool(held) and all(v is not receiver and v.__class__ is ast.Call and _SIDE_FILES.search(_saved_name(v))
                              for v, _ in held)


def _saved_name(receiver: ast.AST) -> str:
    """The name of what save_pretrained is called on: `tokenizer`, or the class a loaded one is
    made from (`AutoConfig.from_pretrained(name).save_pretrained(dir)`: AutoConfig)."""
    if receiver.__class__ is ast.Call and receiver.func.__class__ is ast.Attribute \
            and receiver.func.attr == "from_pretrained":
        return last_name(receiver.func.value) or ""
    return last_name(receiver) or ""


# What a tokenizer, processor or config writes: a few small text files of the same content
# from every rank (labelled optional every time reviewers met one), not the model's state.
_SIDE_FILES = re.compile(r"token|processor|feature_?extractor|config$|^tok$", re.IGNORECASE)


# The keywords that make save_pretrained write from one process. (`save_function=accelerator.save`
# alone is none: config.json, and the weights under safetensors, the default since transformers
# 4.35, are written by every rank that calls it.)
_GATED_SAVE = frozenset({"is_main_process"})


def _given_keywords(program: Program, call: ast.Call, fn: Function) -> set[str]:
    """The keyword names a call may pass: its own, a spread dict literal's keys, and for a
    spread of the function's own `**kwargs`, what its known callers pass into it; a spread that
    cannot be read may pass anything (the gated keywords included)."""
    given = {kw.arg for kw in call.keywords if kw.arg is not None}
    for kw in call.keywords:
        if kw.arg is not None:
            continue
        own = getattr(fn.node, "args", None)
        if isinstance(kw.value, ast.Name) and own is not None and own.kwarg is not None and kw.value.id == own.kwarg.arg:
            # what the calls into the function pass by name (judged again, once every call is
            # resolved, by save_facts.forwarded_gate)
            given |= {k.arg for k, _ in fn.arguments.get(f"**{own.kwarg.arg}", [])}
            sites = fn.__dict__.get("_spread_given")
            if sites and not any(None in site for site in sites):
                # every call into it is known: a gate only where each of them gives one
                given -= {name for name in _GATED_SAVE if not all(name in site for site in sites)}
            continue
        # (the stand-in call keeps the call's place: what is merged into the dict is read above it)
        spread = call_keywords(program, ast.copy_location(ast.Call(func=call.func, args=[], keywords=[kw]), call), fn)
        given |= set(spread) if spread is not None else set(_GATED_SAVE)
    return given


def save_path(call: ast.Call, how: str) -> Optional[ast.AST]:
    """Where a save call writes: torch.save's second argument, save_pretrained's first."""
    if how.endswith(("save_pretrained", "save_to_folder")):
        return call.args[0] if call.args else keyword(call, "save_directory")
    if how.endswith(("save_file", "save_model")):
        return call.args[1] if len(call.args) > 1 else keyword(call, "filename")
    return call.args[1] if len(call.args) > 1 else keyword(call, "f")


# FSDP's gathers of a full optimizer state (torch.distributed.fsdp's static methods): collective
# on every rank. (torch.distributed.checkpoint.state_dict's getters gather only for a sharded
# model, which the source shows by a flag the lint does not carry: open_clip's `if fsdp_enabled:`.)
# `FSDP.summon_full_params(model)` too: it all-gathers every rank's shard, `rank0_only=True`
# included (torch documents that every rank must call it; NeuronSpark's rank-0 dashboard hung).
FSDP_GATHERS = frozenset({"optim_state_dict", "full_optim_state_dict", "sharded_optim_state_dict",
                          "summon_full_params"})


def _under_full_state_dict(program: Program, call: ast.Call, fn: Function) -> bool:
    """`with FSDP.state_dict_type(model, StateDictType.FULL_STATE_DICT, ...): model.state_dict()`:
    in that context an FSDP model's state_dict all-gathers every rank's shard."""
    for node in fn.own_of(ast.With):
        for item in node.items:
            ctx = item.context_expr
            if isinstance(ctx, ast.Call) and last_name(ctx.func) == "state_dict_type" and \
                    (program.qualify(ctx.func, fn) or "").startswith("torch.distributed.fsdp.") and \
                    any("FULL_STATE_DICT" in text(a) for a in ctx.args[1:2]) and \
                    any(n is call for part in node.body for n in walk(part)) and \
                    _same_module(call, ctx):
                return True
    return False


def _on_the_plain_side(program: Program, call: ast.Call, fn: Function) -> bool:
    """The call sits on the side of `isinstance(model, FSDP)` where the model is no FSDP
    (`model.state_dict() if not isinstance(model, FSDP) else gathered(model)`)."""
    for node in fn.own_of(ast.If, ast.IfExp):
        test, plain = node.test, True
        if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
            test, plain = test.operand, False
        if not (isinstance(test, ast.Call) and last_name(test.func) == "isinstance" and len(test.args) == 2
                and any((program.qualify(t, fn) or "").endswith("FullyShardedDataParallel")
                        for t in (test.args[1].elts if isinstance(test.args[1], ast.Tuple) else [test.args[1]]))):
            continue
        side = node.orelse if plain else node.body
        for part in (side if isinstance(side, list) else [side]):
            if any(n is call for n in walk(part)):
                return True
    return False


def _state_dict_type_chosen(program: Program) -> bool:
    """The script chooses FSDP's state dict type itself somewhere (`set_state_dict_type`, `with
    FSDP.state_dict_type(model, ...)`, a sharded or local type named): the `with` context rule
    judges its state_dict() calls, not FSDP's default."""
    found = program.__dict__.get("_state_dict_type_chosen")
    if found is None:
        found = program.__dict__["_state_dict_type_chosen"] = any(
            any("state_dict_type" in line or "SHARDED_STATE_DICT" in line or "LOCAL_STATE_DICT" in line
                for line in f.lines)
            for f in program.files)
    return found


def _same_module(call: ast.Call, ctx: ast.Call) -> bool:
    """The state_dict() asked of the module the context was given (or of what it wraps,
    `model.module`), not of another object in the block (a plain optimizer's `opt.state_dict()`
    stays on the rank: only `FSDP.optim_state_dict` gathers)."""
    module = ctx.args[0] if ctx.args else None
    receiver = call.func.value if isinstance(call.func, ast.Attribute) else None
    if module is None or receiver is None:
        return True  # not told apart: as before
    wanted, got = text(module), text(receiver)
    return got == wanted or got.startswith(wanted + ".") or wanted.startswith(got + ".")


# A DeepSpeed engine's methods that gather the ZeRO-3 partitions from every rank.
ZERO3_GATHERS = frozenset({"_zero3_consolidated_16bit_state_dict", "save_16bit_model"})
# (a collective only where the engine runs ZeRO stage 3, which the config decides: a warning)
ZERO3_GATHER = " (under DeepSpeed ZeRO-3 it gathers every rank's partition)"

# torch.distributed.checkpoint's entry points that coordinate every rank of the process group.
DCP_COLLECTIVES = frozenset({"save", "load", "async_save", "save_state_dict", "load_state_dict"})


# Ray Train's calls that every worker must make alike (ray.train.report's documented barrier,
# and its collective module's).
RAY_TRAIN_COLLECTIVES = frozenset({"report", "barrier", "broadcast_from_rank_zero"})

# torch.distributed.checkpoint.state_dict's getters: collective when asked for the full state.
DCP_STATE_GETTERS = frozenset({"get_state_dict", "get_model_state_dict", "get_optimizer_state_dict"})


def _full_state_options(program: Program, options: Optional[ast.AST], fn: Function) -> bool:
    """The options handed to a state-dict getter say `full_state_dict=True`, as a literal
    `StateDictOptions(...)` there or bound to the name handed on."""
    if options is None:
        return False
    values = [options] if options.__class__ is ast.Call else \
        [v for v, _ in program.values_of(options, fn, 1)] if options.__class__ is ast.Name else []
    return any(v.__class__ is ast.Call and last_name(v.func) == "StateDictOptions" and
               is_const(keyword(v, "full_state_dict"), True) for v in values)


def collective(program: Program, call: ast.Call, fn: Function) -> Optional[str]:
    """What a call is, in the user's words, when it is a collective (or ends in one)."""
    full = program.qualify(call.func, fn) or ""
    name = last_name(call.func) or ""
    if full.startswith("torch.distributed.") and name in TORCH_COLLECTIVES:
        return f"dist.{name}()"
    if name in WRAPPED_COLLECTIVES and "." in full and not full.startswith("torch.") and \
            (dotted(call.func) or "").split(".")[0] in fn.module.imports and not program.resolve(call.func, fn)[0]:
        # `from ding.utils import broadcast_object_list`: a library's thin wrapper of the
        # torch.distributed collective of that name (the script's own are followed instead)
        return f"{full}() (a library's wrapper of dist.{name})"
    if name in FSDP_GATHERS and full.startswith("torch.distributed.fsdp."):
        # the full (unsharded) state is all-gathered from every rank's shard, whoever keeps it
        return f"{text(call.func, 40)}() (gathers the state from every rank's shard)"
    if name == "state_dict" and not call.args and _under_full_state_dict(program, call, fn):
        return f"{text(call.func, 40)}() under FSDP.state_dict_type (gathers the full state from every rank)"
    if name in ("state_dict", "generate") and isinstance(call.func, ast.Attribute) and \
            _fsdp_held(program, call.func.value, call.lineno, fn) and not _state_dict_type_chosen(program) and \
            not _on_the_plain_side(program, call, fn):
        # FSDP's own state_dict type is FULL_STATE_DICT: `model.state_dict()` unshards (all-gathers)
        # every parameter, on every rank that holds a shard; `generate` runs the wrapped units'
        # forwards, each an all-gather. (A script that chooses a state dict type somewhere may
        # have set it for this model: judged by the `with FSDP.state_dict_type(...)` rule above.)
        what = "gathers the full state from every rank" if name == "state_dict" else \
            "its forwards all-gather the sharded parameters"
        return f"{text(call.func, 40)}() of the FSDP model ({what})"
    if name in ZERO3_GATHERS and isinstance(call.func, ast.Attribute):
        # a DeepSpeed engine's ZeRO-3 consolidation: every rank hands its partition of each
        # parameter (an all-gather per parameter), whichever rank keeps the result
        return f"{text(call.func, 40)}(){ZERO3_GATHER}"
    if full.startswith("torch.distributed.checkpoint.") and name in DCP_COLLECTIVES:
        # Distributed checkpointing plans the save (or load) across every rank of the group:
        # gathers and a barrier inside (torch.distributed.checkpoint's save / load)
        return f"torch.distributed.checkpoint.{name}() (plans the checkpoint with every rank)"
    if name in RAY_TRAIN_COLLECTIVES and full.startswith(("ray.train.", "ray.air.session.")) and \
            not _one_ray_worker(program):
        # Ray Train synchronises its workers in report(): each must call it as often as the others
        return f"{full}() (every Ray Train worker must call it, as often as the others)"
    if full.startswith("torch.distributed.checkpoint.") and name in DCP_STATE_GETTERS and \
            _full_state_options(program, keyword(call, "options"), fn):
        # `get_state_dict(model, [opt], options=StateDictOptions(full_state_dict=True))`: each
        # sharded parameter is all-gathered from every rank (FSDP2's DTensors, FSDP1's flat shards)
        return f"{name}(..., full_state_dict=True) (gathers the full state from every rank's shard)"
    # (by what the name stands for: `from torch.nn.parallel import DistributedDataParallel as
    # DDP` then `DDP(net)` is the same constructor)
    if full.endswith("DistributedDataParallel") and full.startswith("torch."):
        return DDP_BUILT
    if full.startswith("accelerate.") and name in ACCELERATE_COLLECTIVES:
        return f"accelerate {name}()"
    receiver = call.func.value if isinstance(call.func, ast.Attribute) else None
    if receiver is not None and name == "compute" and program.uses("torchmetrics"):
        metric = _torchmetrics_metric(program, receiver, fn)
        if metric:
            # a Metric all-gathers its states across the process group inside compute()
            # (sync_on_compute defaults to True) whenever one is initialised
            return f"{text(call.func, 40)}() (the {metric} metric all-gathers its state from every rank)"
    if receiver is not None and name == "consolidate_state_dict":
        # ZeroRedundancyOptimizer's / fairscale OSS's: every rank sends its shard to the target
        if made_by(program, receiver, fn, "ZeroRedundancyOptimizer") or made_by(program, receiver, fn, "OSS"):
            return f"{text(call.func, 40)}() (the sharded optimizer gathers every rank's shard)"
        return f"{text(call.func, 40)}() {SHARDED_OPTIMIZER}"
    if receiver is not None and name == "save_checkpoint" \
            and (program.uses("deepspeed") or program.uses("accelerate")) \
            and not program.resolve(call.func, fn)[0] and _deepspeed_engine(program, receiver, fn):
        # every rank writes its own ZeRO partition and they meet in a barrier: the
        # DeepSpeed docs require the call on every process
        return f"{text(call.func, 40)}() {DEEPSPEED_SAVE}"
    if name == "save_pretrained" and receiver is not None and program.uses("accelerate") \
            and keyword(call, "state_dict") is None and _unwrapped_by_accelerator(program, receiver, fn):
        # `accelerator.unwrap_model(model).save_pretrained(dir)` under FSDP: the unwrapped module
        # still holds the auto-wrapped FSDP units, whose state_dict() all-gathers every shard
        # (Accelerate's docs: take `accelerator.get_state_dict(model)` on every process first)
        chosen = launched_engine(program, proven=True)
        if chosen == "FSDP" or "FSDP" in launched_engines(program):
            # (or one launch of several names FSDP, `accelerate launch --config_file
            # ../../config/fsdp.yaml` beside another on DeepSpeed ZeRO-2: that one hangs)
            return f"{text(call.func, 40)}() {UNWRAPPED_FSDP_CHOSEN}"
        if not chosen and sharded_engine(program) == "FSDP":
            return f"{text(call.func, 40)}() {UNWRAPPED_FSDP}"
    if receiver is not None:
        owner = (last_name(receiver) or "").lower()
        if program.uses("accelerate") and name in ACCELERATE_COLLECTIVES and (
                "accelerator" in owner or made_by(program, receiver, fn, "Accelerator")):
            return f"accelerator.{name}()"
        if name in ("save_state", "load_state") and program.uses("accelerate") and (
                "accelerator" in owner or made_by(program, receiver, fn, "Accelerator")):
            # (load_state alike: under FSDP its model loading starts with wait_for_everyone and
            # loads through FSDP's collectives; under DeepSpeed each engine loads its partition)
            engine = sharded_engine(program)
            chosen = launched_engine(program, proven=True)
            if chosen:
                return f"accelerator.{name}() {CHOSEN_SAVE.format(chosen)}"
            if engine:
                return f"accelerator.{name}() {SHARDED_SAVE.format(engine)}"
        if program.uses_lightning():
            if isinstance(receiver, ast.Name) and receiver.id == "self":
                if name in ("log", "log_dict") and truthy(keyword(call, "sync_dist")):
                    return f"self.{name}(..., sync_dist=True) (all-reduces the value)"
                if name == "all_gather" and program.resolve(call.func, fn)[0] == []:
                    return "self.all_gather()"
            if name == "save_checkpoint" and owner.endswith("trainer") and not program.resolve(call.func, fn)[0]:
                return "trainer.save_checkpoint() (all ranks meet in a barrier)"
            if name == "barrier" and owner == "strategy":
                return "strategy.barrier()"
            if name in FABRIC_COLLECTIVES and ("fabric" in owner or made_by(program, receiver, fn, "Fabric")):
                return f"fabric.{name}()"
            if name in ("save", "load") and ("fabric" in owner or made_by(program, receiver, fn, "Fabric")) \
                    and not program.resolve(call.func, fn)[0] and not _content_first(program, call, fn):
                # Fabric documents both as "must be called on all processes": each ends in
                # self.barrier() after the strategy saved (rank 0 under DDP) or loaded
                return f"fabric.{name}() (ends in fabric.barrier(): every process must call it)"
            if name in ("setup", "setup_module") and ("fabric" in owner or made_by(program, receiver, fn, "Fabric")) \
                    and not program.resolve(call.func, fn)[0]:
                # the strategy wraps the module: DDP's constructor broadcasts rank 0's parameters
                # (FSDP's, DeepSpeed's initialisation communicate too)
                return f"fabric.{name}() (wraps the model: DDP's constructor broadcasts the parameters)"
    if name in HF_TRAINER_RUNS and receiver is not None and (program.uses("transformers") or program.uses("trl")) \
            and not program.resolve(call.func, fn)[0] and hf_trainer(program, receiver, fn):
        # (asked of every `model.train()`: only where a Hugging Face trainer can be in the script)
        # the library's loop: DDP's forwards and backwards, and the gathers of its evaluation,
        # on every rank the launch started
        return f"{text(call.func, 40)}() (a Hugging Face Trainer's loop runs collectives on every rank)"
    if name == "save_model" and receiver is not None and (program.uses("transformers") or program.uses("trl")) \
            and not program.resolve(call.func, fn)[0]:
        chosen = trainer_fsdp(program)
        if chosen and hf_trainer(program, receiver, fn):
            # under FSDP the Trainer's save_model() gathers the full state dict (Accelerate's
            # get_state_dict: every shard's all-gather) before its main process writes
            return f"{text(call.func, 40)}() {HF_FSDP_SAVE if chosen == 'literal' else HF_FSDP_SAVE_SET}"
        if not chosen and trainer_zero3(program) and hf_trainer(program, receiver, fn):
            # under ZeRO-3 the Trainer's save_model() consolidates the 16-bit weights (Accelerate's
            # get_state_dict: `_zero3_consolidated_16bit_state_dict`, every rank's partitions)
            return f"{text(call.func, 40)}() {HF_ZERO3_SAVE}"
    # `model.forward(x)` on the wrapper is the wrapper's forward, as `model(x)` is (spkver's
    # `self.__model__.forward(inp)` in a rank-0 evaluation)
    called = ast.copy_location(ast.Call(func=call.func.value, args=call.args, keywords=call.keywords), call) \
        if name == "forward" and receiver is not None else call
    wrapped = ddp_model(program, called, fn)
    if wrapped is not None and has_buffers(program, wrapped[0], wrapped[1]):
        gate = buffers_by_setting(program)
        marked = BUFFERS_BY_SETTING.format(gate) if gate else ""
        return through_grad_off(program, f"{DDP_FORWARD} {text(call.func)}{marked}{_GRAD_ON}", call, fn)
    if _fsdp_model(program, called, fn):
        # (also a name that holds a DDP model on another side of a switch: `model = FSDP(model)
        # if use_fsdp else DDP(model)` all-gathers in its forward wherever the switch is on - a
        # collective on the runs that choose FSDP, which the source does not settle)
        return f"{FSDP_FORWARD} {text(call.func, 40)}() (all-gathers the sharded parameters)" + \
            (FSDP_ON_ONE_WAY if wrapped is not None else "")
    if name == "backward" and receiver is not None and _through_ddp(program, _loss_of(receiver), fn, 3) \
            and not _in_no_sync(program, call, fn):
        return f"{DDP_BACKWARD} (DDP all-reduces the gradients): {text(call.func, 40)}()"
    return None


# A backward of a loss computed through a DDP model (checks/lint/collective_under_rank_branch.py
# words its finding from it): DDP's hooks all-reduce every gradient bucket in it.
# Its text before the first "(" is the same for every backward (fact_builder._op_kind): the
# backwards of two branches pair up whatever their loss is called.
DDP_BACKWARD = "backward through the DDP model"
# The DDP constructor, as a collective: it broadcasts rank 0's parameters and buffers
DDP_BUILT = "DistributedDataParallel(...) (its constructor broadcasts the parameters)"


# the objects whose `backward(loss)` takes the loss as its argument (Accelerate, Fabric, a
# DeepSpeed engine), not a tensor's `out.backward(grad)`
HANDS_THE_LOSS = re.compile(r"accelerator|fabric|engine|deepspeed", re.IGNORECASE)


def backward_loss(call: ast.Call) -> Optional[ast.AST]:
    """The loss a backward runs on: `loss.backward()`, `scaler.scale(loss).backward()`,
    `accelerator.backward(loss)` (HANDS_THE_LOSS); None for a call that is no backward."""
    func = call.func
    if not isinstance(func, ast.Attribute) or func.attr != "backward":
        return None
    if call.args and HANDS_THE_LOSS.search(last_name(func.value) or ""):
        return call.args[0]
    return _loss_of(func.value)


# A library's loss scaler called on the loss: timm's `loss_scaler = NativeScaler()` then
# `loss_scaler(loss, optimizer, parameters=...)` back-propagates the loss and steps the optimizer
# in its __call__ (a local class of that kind is read through its own __call__).
_LIBRARY_SCALER = re.compile(r"Scaler\w*$")


def library_scaler_backward(program, call: ast.Call, fn) -> bool:
    """The call is an instance of an imported loss-scaler class handed the loss (timm's
    `loss_scaler(loss, optimizer)`); not torch's GradScaler, which is no callable."""
    if not call.args or call.func.__class__ is not ast.Name:
        return False
    for value, scope in program.values_of(call.func, fn, 1):
        if value.__class__ is ast.Call and _LIBRARY_SCALER.search(last_name(value.func) or "") and \
                program.class_of(value, scope) is None and \
                not (program.qualify(value.func, scope) or "").startswith("torch."):
            return True
    return False


def averages_gradients(call: ast.Call) -> bool:
    """The call averages gradients by hand: a reduction handed a gradient (`dist.all_reduce(p.grad)`)
    or a helper named for it (`allreduce_grads(params)`, `average_gradients(model)`)."""
    name = (last_name(call.func) or "").lower()
    if "grad" in name and any(w in name for w in ("reduce", "sync", "average", "avg")):
        return True
    return "reduce" in name and bool(call.args) and "grad" in text(call.args[0])


def _loss_of(receiver: ast.AST) -> ast.AST:
    """`scaler.scale(loss)` / `accelerator.scale(loss)`... -> loss: what the backward runs on."""
    if isinstance(receiver, ast.Call) and isinstance(receiver.func, ast.Attribute) and \
            receiver.func.attr == "scale" and receiver.args:
        return receiver.args[0]
    return receiver


def _through_ddp(program: Program, node: ast.AST, fn: Function, depth: int) -> bool:
    """The value is computed from a forward of a DDP model: a call ddp_model() recognises in
    it, or in what the names in it were assigned (a few assignments back, in fn), or, for a
    parameter, what a caller hands it (`def step(loss): scaler.scale(loss).backward()`, called
    with the loss of a DDP forward)."""
    for sub in walk(node):
        if isinstance(sub, ast.Call) and ddp_model(program, sub, fn) is not None:
            return True
    if depth <= 0:
        return False
    for sub in walk(node):
        if isinstance(sub, ast.Name):
            handed = sub.id in fn.params and not fn.bindings.get(sub.id)
            for value, scope in program.values_of(sub, fn, 1):
                if value is not sub and (scope is fn or handed) and _through_ddp(program, value, scope, depth - 1):
                    return True
    return False


def fresh_model(program: Program, value: ast.AST, fn: Function, depth: int = 3,
                seen: Optional[set] = None) -> bool:
    """A model built here, not a wrapper: `X.from_pretrained(...)` / `from_config`, an instance
    of a local class (a factory's too) or of a torch.nn module that is not a
    DistributedDataParallel (moved with `.to()` / `.cuda()`, or in a one-process DataParallel),
    or a name bound only to such (`model = net`, the module the DDP wrapper was built around;
    `model = model.to(device)` adds nothing)."""
    seen = set() if seen is None else seen
    if id(value) in seen:
        return True  # a binding that refers back to one already being judged
    seen.add(id(value))
    if isinstance(value, ast.Name):
        if depth <= 0:
            return False
        bound = reaching.reaching_values(fn.node, value.id, value) if fn is not None else None
        if bound:  # the bindings that reach this use, each one earlier in fn (no depth spent)
            return all(fresh_model(program, v, fn, depth, seen) for v in bound)
        values = [(v, scope) for v, scope in program.values_of(value, fn, 2) if v is not value]
        return bool(values) and all(fresh_model(program, v, scope, depth - 1, seen) for v, scope in values)
    if _self_field(value):
        # `self.model(x)` with `self.model = nn.Sequential(...)` in the object's own methods (a
        # probe classifier fitted on embeddings), a field no DDP(...) anywhere is handed
        if depth <= 0 or value.attr in _fields_handed_to_ddp(program):
            return False
        values = [(v, scope) for v, scope in program.values_of(value, fn, 2) if v is not value]
        return bool(values) and all(fresh_model(program, v, scope, depth - 1, seen) for v, scope in values)
    if not isinstance(value, ast.Call) or program.ddp_call(value, fn):
        return False
    if value.args and program.qualify(value.func, fn) == "copy.deepcopy":
        return fresh_model(program, value.args[0], fn, depth, seen)  # (`bestmodel = copy.deepcopy(self.model)`)
    if not isinstance(value.func, ast.Attribute) and _ddp_made(program, value, fn) is not None:
        return False  # `model = get_model(cfg, local_rank)` ending in `return DDP(model)`: a factory's wrapper
    if isinstance(value.func, ast.Attribute) and value.func.attr in ("from_pretrained", "from_config"):
        return True
    if isinstance(value.func, ast.Attribute) and value.func.attr in ("to", "cuda", "float", "half", "bfloat16"):
        return fresh_model(program, value.func.value, fn, depth, seen)
    full = program.qualify(value.func, fn) or ""
    if full.endswith(".DataParallel") and value.args:  # one process's replicas: no all-reduce
        return fresh_model(program, value.args[0], fn, depth, seen)
    if full.startswith("torch.nn.") and not full.endswith("DataParallel"):
        return True
    return program.is_class(program.callee(value.func, fn)) or program.class_of(value, fn) is not None


def _fields_handed_to_ddp(program: Program) -> frozenset:
    """The attribute names of the objects' fields a reached DDP(...) wraps (`DDP(self.model)`,
    `DDP(trainer.model)`), worked out once: a field of that name may hold a wrapper."""
    found = program.__dict__.get("_fields_to_ddp")
    if found is None:
        found = program.__dict__["_fields_to_ddp"] = frozenset(
            call.args[0].attr for fn in program.reachable for call in fn.own_calls
            if call.args and call.args[0].__class__ is ast.Attribute and program.ddp_call(call, fn))
    return found


def plain_loss(program: Program, node: ast.AST, fn: Function, depth: int = 3) -> bool:
    """The loss provably never passes through a DDP forward: every name in it is assigned in fn
    (or imported), what a DDP model computes enters only detached (`teacher(x).detach()`), and
    some call in it is the forward of a model built plain (TinyBERT's student beside a
    DDP-wrapped teacher). Unknown parts (a parameter, a helper's return) prove nothing."""
    seen_plain = False
    if loss_round_the_wrapper(program, node, fn):
        return True
    todo = [(node, depth)]
    while todo:
        expr, left = todo.pop()
        for sub in _undetached(expr):
            if isinstance(sub, ast.Call):
                if ddp_model(program, sub, fn) is not None:
                    return False
                if (isinstance(sub.func, ast.Name) or _self_field(sub.func)) and fresh_model(program, sub.func, fn):
                    seen_plain = True
                continue
            if not (isinstance(sub, ast.Name) and isinstance(sub.ctx, ast.Load)):
                continue
            if sub.id in fn.module.imports or sub.id in _BUILTINS:
                continue  # torch, F.mse_loss: a library's
            if sub.id in _loop_targets(fn):
                continue  # `for (x,) in loader:`: the batch, data whichever model it enters
            values = [(v, scope) for v, scope in program.values_of(sub, fn, 1) if v is not sub]
            if values and all(isinstance(v, (ast.Name, ast.Attribute)) and
                              (program.qualify(v, scope) or "").startswith("torch.nn.functional.") for v, scope in values):
                continue  # `Loss = F.mse_loss` at the top of the module: torch's function
            if not values or left <= 0 or any(scope is not fn for _, scope in values):
                if fresh_model(program, sub, fn):
                    continue  # the plain model's own name (`student` in `student(x)`)
                return False
            todo.extend((v, left - 1) for v, _ in values)
    return seen_plain


_BUILTINS = frozenset({"len", "sum", "min", "max", "abs", "float", "int", "range", "zip", "list", "tuple"})


def _loop_targets(fn: Function) -> frozenset:
    """The names fn's `for` loops bind (each pass's batch), and no other statement of fn does."""
    found = fn.__dict__.get("_loop_target_names")
    if found is None:
        targets = {n.id for node in fn.own if isinstance(node, (ast.For, ast.AsyncFor))
                   for n in walk(node.target) if isinstance(n, ast.Name)}
        assigned = {n.id for node in fn.own if isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign))
                    for t in (node.targets if isinstance(node, ast.Assign) else [node.target])
                    for n in walk(t) if isinstance(n, ast.Name)}
        found = fn.__dict__["_loop_target_names"] = frozenset(targets - assigned)
    return found


def loss_round_the_wrapper(program: Program, node: ast.AST, fn: Function) -> bool:
    """The loss is computed round the DDP wrapper's forward: each value it may hold comes, through
    what its names hold in fn (a few assignments back, tuple items too), from a call on the module
    the wrapper holds (`loss = self.model.module.loss(x) / k`; `pred = model.module(x)`, then
    `criterion(pred, y)`), and from no call of the wrapper (`out = model(x)`, then
    `model.module.criterion(out, y)` is the loss of a DDP forward). Its backward all-reduces
    nothing. A value whose source is not seen proves nothing."""
    # (a sum's starting `loss = 0.0` carries no graph: the terms added to it decide)
    values = [v for v in _loss_values(program, node, fn) if v.__class__ is not ast.Constant]
    # (`if cfg.multi_gpu: loss = self.model.module.get_loss(x) else: loss = self.model.get_loss(x)`:
    # the `else:` is the one-process run's, with no wrapper to go round)
    values = [v for v in values if not one_process_side(program, v, fn)] or values
    return bool(values) and all(_computed_round_the_wrapper(program, value, fn) for value in values)


def one_process_side(program: Program, node: ast.AST, fn: Function) -> bool:
    """node sits on the side of an `if` in fn that only a one-process run takes: the `else:` of
    the distributed run's own test, or the body of its negation."""
    if fn.node is None or isinstance(fn.node, ast.Module):
        return False
    for _, _, owner, field in reaching._path_to(fn.node, node) or ():
        if owner.__class__ is ast.If and (
                (field == "orelse" and (program.ranks.distributed_run(owner.test, fn)
                                        or program.ranks.launched(owner.test, fn))) or
                # (`if self.rank == -1:` of a trainer handed no rank: launched without a launcher)
                (field == "body" and (program.ranks.one_process_run(owner.test, fn)
                                      or program.ranks.single_process(owner.test, fn)))):
            return True
    return False


def _loss_values(program: Program, node: ast.AST, fn: Function) -> list[ast.AST]:
    """What the backward's loss may hold: the `with` around it that binds its name (apex's
    `with amp.scale_loss(q_loss, opt) as scaled: scaled.backward()`, one block of several that
    each bind `scaled`), else what its name holds in fn."""
    if node.__class__ is not ast.Name:
        return [node]
    held = reaching.with_bound(fn.node, node.id, node) if fn.node is not None else None
    if held is not None:
        return [held]
    # (the bindings that reach the backward, where the walk can tell: `loss_total_step` bound
    # after each of two stages' forwards in one loop, JOWA's - each backward its own)
    reached = reaching.reaching_values(fn.node, node.id, node) if fn.node is not None else None
    return reached or [v for v, _ in program.values_of(node, fn, 1)]


def _computed_round_the_wrapper(program: Program, value: ast.AST, fn: Function, helpers: int = 1) -> bool:
    # (the bindings that reach the value where the walk can tell: two stages' losses in one loop)
    calls = _loss_calls(program, value, fn, True) or _loss_calls(program, value, fn)
    if next(_round_among(program, calls, fn, helpers), None) is None:
        return False
    # (a DDP forward with gradients off - the world model's under `torch.no_grad()`, whose
    # features the actor reads - carries no graph: the backward runs through no wrapper there)
    return not any((ddp_model(program, c, fn) is not None and not grad_off(program, c, fn))
                   or _wrapper_forward(program, c, fn) or _hands_the_wrapper(program, c, fn, helpers) for c in calls)


def _wrapper_forward(program: Program, call: ast.Call, fn: Function) -> bool:
    """`model.forward(x)` on the DDP wrapper itself: DDP's own forward, which prepares the
    reducer as `model(x)` does (GLNet's global branch, whose features the patch loss reads)."""
    func = call.func
    return func.__class__ is ast.Attribute and func.attr == "forward" and \
        func.value.__class__ in (ast.Name, ast.Attribute) and _ddp_held(program, func.value, fn, call) is not None


def _hands_the_wrapper(program: Program, call: ast.Call, fn: Function, helpers: int) -> bool:
    """A call the loss comes from that is handed the DDP model itself and is not seen to run
    round it (`train_fn = getattr(losses, cfg["loss"])`, then `loss = train_fn(model, x=x,
    lc=model.module.lipschitz())`): its forward may be the wrapper's, nothing is proven.
    (helpers: whether a local helper's returns may be read, as _returns_round does)"""
    func = call.func
    if not ((func.__class__ is ast.Name and program.lookup(func.id, fn)) or _self_field(func)):
        return False  # (a callable the source binds: not `hasattr(model, "module")`, a builtin)
    if program.resolve(func, fn)[0] and (not helpers or _returns_round(program, call, fn)):
        return False
    return any(arg.__class__ is ast.Name and _ddp_held(program, arg, fn, call) is not None
               for arg in [*call.args, *(k.value for k in call.keywords)])


def _unpacked_names(fn: Function) -> dict[str, list[ast.Name]]:
    """{name: [the names it is unpacked from]} of fn's `a, b, pred = outputs` (made once)."""
    index = fn.__dict__.get("_names_unpacked_from")
    if index is None:
        index = fn.__dict__["_names_unpacked_from"] = {}
        for node in fn.own_of(ast.Assign):
            if len(node.targets) == 1 and node.targets[0].__class__ in (ast.Tuple, ast.List) and \
                    node.value.__class__ is ast.Name:
                for target in node.targets[0].elts:
                    target = target.value if target.__class__ is ast.Starred else target
                    if target.__class__ is ast.Name:
                        index.setdefault(target.id, []).append(node.value)
    return index


def _returned_pieces(fn: Function) -> list[ast.AST]:
    """What fn's returns are made of, way by way: each return's value, or, where a name it returns
    is bound on several ways to it (`if stage: loss = a else: loss = b`, then `return loss, info`),
    each binding that reaches it."""
    pieces: list[ast.AST] = []
    for ret in fn.own_of(ast.Return):
        if ret.value is None:
            continue
        split = [held for name in walk(ret.value) if name.__class__ is ast.Name and name.ctx.__class__ is ast.Load
                 for held in [reaching.reaching_values(fn.node, name.id, name, unpacked=True)] if held and len(held) > 1]
        pieces += [value for held in split for value in held] if split else [ret.value]
    return pieces


def _computed_along(program: Program, value: ast.AST, fn: Function) -> bool:
    """_computed_round_the_wrapper over the bindings that reach the value's names (along)."""
    calls = _loss_calls(program, value, fn, True)
    return next(_round_among(program, calls, fn, 0), None) is not None and \
        not any(ddp_model(program, c, fn) is not None for c in calls)


def _loss_calls(program: Program, value: ast.AST, fn: Function, along: bool = False) -> list[ast.Call]:
    """The calls a value is computed from outside `.detach()`, through what its names hold in fn
    (seven assignments back, tuple items too, and what a list name is appended: MemFlow's
    `preds.append(torch.stack(flow))` per frame, then `loss = loss_fn(torch.stack(preds), ...)`).
    along: only the bindings that reach each name where it is read (one side of an `if` that
    binds `loss` on both), where the walk can tell."""
    calls, frontier, seen = [], [value], set()
    # (PRNet++'s `loss = total_loss` of a sum of `losses = criterion(model(x), y)` items; SAM
    # adapter's per-image `loss_ = bce_ + iou_` of masks read off the batch's outputs, summed)
    for _ in range(7):
        found = []
        for expr in frontier:
            for sub in _undetached(expr, fn):
                if isinstance(sub, ast.Call):
                    calls.append(sub)
                elif isinstance(sub, ast.Name) and isinstance(sub.ctx, ast.Load) and along and id(sub) not in seen \
                        and fn.node is not None and \
                        (held := reaching.reaching_values(fn.node, sub.id, sub, unpacked=True)) is not None:
                    seen.add(id(sub))
                    found += held
                    found += _appended(fn).get(sub.id, [])
                elif isinstance(sub, ast.Name) and isinstance(sub.ctx, ast.Load) and sub.id not in seen:
                    seen.add(sub.id)
                    found += [v for v, scope in program.values_of(sub, fn, 1) if v is not sub and scope is fn]
                    found += _unpacked_from(sub.id, fn)
                    found += _unpacked_names(fn).get(sub.id, [])
                    found += _appended(fn).get(sub.id, [])
                    found += _iterated_into(fn).get(sub.id, [])
        frontier = found
    return calls


def _iterated_into(fn: Function) -> dict[str, list]:
    """What fn's loops hand each name they bind: `for part in losses:` -> losses (an item of it,
    computed as it was). Kept per function."""
    index = fn.__dict__.get("_iterated_by_name")
    if index is None:
        index = fn.__dict__["_iterated_by_name"] = {}
        for loop in fn.own_of(ast.For):
            source = loop.iter
            if source.__class__ is ast.Call and last_name(source.func) == "enumerate" and source.args:
                source = source.args[0]  # (zip's items come from each of its arguments: the call itself)
            for target in walk(loop.target):
                if target.__class__ is ast.Name:
                    index.setdefault(target.id, []).append(source)
    return index


def _appended(fn: Function) -> dict[str, list]:
    """What fn appends to (or extends, or adds to) each local name by: `name.append(x)`, `name +=
    x` -> x. Kept per function."""
    index = fn.__dict__.get("_appended_by_name")
    if index is None:
        index = fn.__dict__["_appended_by_name"] = {}
        for call in fn.own_calls:
            func = call.func
            if func.__class__ is ast.Attribute and func.attr in ("append", "extend") and \
                    func.value.__class__ is ast.Name and len(call.args) == 1:
                index.setdefault(func.value.id, []).append(call.args[0])
        # (and what a sum started at 0 is added: `quantize_loss += q_loss` per step of a rollout)
        for node in fn.own_of(ast.AugAssign):
            if node.target.__class__ is ast.Name and node.op.__class__ is ast.Add:
                index.setdefault(node.target.id, []).append(node.value)
    return index


def _returns_round(program: Program, call: ast.Call, fn: Function) -> bool:
    """A local helper handed the wrapper whose every return is computed round it
    (`pred, y = self._forward(model, batch)` where `_forward` returns `model.module.head(...)`,
    pharmaVQA's step): the caller's loss backs through no DDP hook either. One level only."""
    targets = program.resolve(call.func, fn)[0] if call.args or call.keywords else []
    if len(targets) != 1:
        return False
    target = targets[0]
    returns = [r.value for r in target.own_of(ast.Return) if r.value is not None]
    return bool(returns) and all(_computed_round_the_wrapper(program, r, target, 0) for r in returns)


def bypassed_on_a_side(program: Program, loss: ast.AST, fn: Function):
    """A loss a local helper returns (`loss, info = self.forward(kwargs)`) computed round a DDP
    wrapper on one side of a test in the helper and through it on the other (`if not
    self.rl_stage: logit = self.model(x) ... else: seq, logp = self.model.module.decode(x)`, an
    SCST stage): (the call on the module inside, its function, the DDP(...) call, its function,
    the test's text and the side, True or False) for the bypassing side; None otherwise."""
    if fn.node is None:
        return None
    for value in _loss_values(program, loss, fn):
        for call in _loss_calls(program, value, fn):
            targets = program.resolve(call.func, fn)[0] if call.args or call.keywords else []
            if len(targets) != 1 or targets[0].node is None or isinstance(targets[0].node, ast.Module):
                continue
            target = targets[0]
            pieces = _returned_pieces(target)
            round_ = [p for p in pieces if _computed_along(program, p, target)]
            if not round_ or len(round_) == len(pieces):
                continue  # (every way round it: bypassed_wrapper's own case)
            for stmt in target.own_of(ast.If):
                for side, sides in ((True, stmt.body), (False, stmt.orelse)):
                    inside = {id(n) for part in sides for n in walk(part)}
                    # (the side holds every piece round the wrapper and none through it; those
                    # are on the other side or after the `if`)
                    if all(id(p) in inside for p in round_) and \
                            not any(id(p) in inside for p in pieces if p not in round_):
                        for inner, scope in _round_among(program, _loss_calls(program, round_[0], target, True),
                                                         target, 0):
                            wrapper = _wrapper_of(program, inner, scope)
                            if wrapper is not None and not grad_off(program, inner, scope) and \
                                    not _fed_by_the_wrapper(program, inner, scope):
                                return inner, scope, *wrapper, text(stmt.test, 60), side
    return None


def bypassed_wrapper(program: Program, loss: ast.AST, fn: Function):
    """Where a loss is computed round the wrapper (loss_round_the_wrapper) and that wrapper is
    provably a DDP model: (the call on the module inside, its function, the DDP(...) call, its
    function). None on the plain side of `isinstance(model, DDP)`, for a wrapper not seen to be
    DDP (DataParallel's `.module`), and for a forward with gradients off (a probe's features)."""
    if not loss_round_the_wrapper(program, loss, fn) or _wrapper_ran_first(program, loss, fn):
        return None
    for value in _loss_values(program, loss, fn):
        # (the bindings that reach the backward first: `losses` bound by each of two stages'
        # forwards in one loop, JOWA's tokenizer then its world model - each backward its own)
        along = list(_round_among(program, _loss_calls(program, value, fn, True), fn, 1))
        for call, scope in along or _round_among(program, _loss_calls(program, value, fn), fn, 1):
            wrapper = _wrapper_of(program, call, scope)
            if wrapper is not None and not grad_off(program, call, scope) and \
                    not _fed_by_the_wrapper(program, call, scope):
                return call, scope, *wrapper
    return None


def _fed_by_the_wrapper(program: Program, call: ast.Call, fn: Function, depth: int = 3) -> bool:
    """The call round the wrapper computes from what the wrapper's own forward returned in the
    same step: `img_hash, txt_hash = self.model_ddp(image, text)`, then `self.model.object_function(
    img_hash=img_hash, ...)` (a loss method of the module inside, handed the wrapper's outputs
    directly or through a helper's parameters, depth callers up). The forward prepared the
    reducer, and the backward runs through it - not a forward with gradients off (the world
    model's under `torch.no_grad()`, whose features the actor-critic's plain module reads): no
    backward runs through that."""
    args = [*call.args, *(k.value for k in call.keywords)]
    return any(_from_ddp_forward(program, arg, fn, depth) for arg in args)


def _from_ddp_forward(program: Program, expr: ast.AST, fn: Function, depth: int) -> bool:
    """Some name expr reads holds what a DDP forward returned (a binding that reaches it, or a
    parameter whose callers hand such a value)."""
    if fn.node is None or isinstance(fn.node, ast.Module):
        return False
    for name in (n for n in walk(expr) if n.__class__ is ast.Name and n.ctx.__class__ is ast.Load):
        held = reaching.reaching_values(fn.node, name.id, name, unpacked=True)
        if held is None:
            # (bound in the loop around the call, or by unpacking the forward's tuple: `a, h =
            # self.model_ddp(x)`, which the bindings keep out)
            held = [value for _, value in fn.bindings.get(name.id, ())] + [
                node.value for node in fn.own_of(ast.Assign) for target in node.targets
                if target.__class__ in (ast.Tuple, ast.List)
                and any(t.__class__ is ast.Name and t.id == name.id for t in target.elts)]
        if held:
            for value in held:
                sides = (value.body, value.orelse) if value.__class__ is ast.IfExp else (value,)
                if any(side.__class__ is ast.Call and ddp_model(program, side, fn) is not None
                       and not grad_off(program, side, fn) for side in sides):
                    return True
                if depth > 0 and _from_ddp_forward(program, value, fn, depth - 1):
                    return True  # (`h = out[:, :n].clone()`, a piece of the wrapper's output)
        elif depth > 0 and (name.id in fn.params or name.id in fn.kwonly):
            if any(_from_ddp_forward(program, given, caller, depth - 1)
                   for given, caller in fn.arguments.get(name.id, ())):
                return True
    return False


def _wrapper_ran_first(program: Program, loss: ast.AST, fn: Function) -> bool:
    """The step runs the DDP wrapper's forward as a statement of its own before the loss, in the
    same pass of the same loop (`self.ddp.forward(inputs)`, then `loss = self.model.get_loss()`,
    CamLiFlow's trainer): the module reads back what that forward kept, and the reducer is
    prepared for the backward."""
    if fn.node is None or isinstance(fn.node, ast.Module):
        return False
    loops = lambda node: [owner for _, _, owner, _ in (reaching._path_to(fn.node, node) or ())
                          if owner.__class__ in (ast.For, ast.While, ast.AsyncFor)]
    mine = loops(loss)
    return any(stmt.value.__class__ is ast.Call and stmt.lineno < loss.lineno and loops(stmt) == mine
               and (ddp_model(program, stmt.value, fn) is not None or _wrapper_forward(program, stmt.value, fn))
               for stmt in fn.own_of(ast.Expr))


def _round_among(program: Program, calls: list[ast.Call], fn: Function, helpers: int):
    """Of a value's calls (_loss_calls), those round the wrapper, each with its function: also in
    the returns of a local helper whose every return is computed so (helpers: how deep)."""
    for call in calls:
        if _round_the_wrapper(program, call, fn):
            yield call, fn
        elif helpers and _returns_round(program, call, fn):
            target = program.resolve(call.func, fn)[0][0]
            for ret in target.own_of(ast.Return):
                if ret.value is not None:
                    yield from _round_among(program, _loss_calls(program, ret.value, target), target, helpers - 1)
        elif helpers and (held := _held_plain_forward(program, call, fn)) is not None:
            yield held


def _held_plain_forward(program: Program, call: ast.Call, fn: Function, depth: int = 3):
    """`loss = self.diffusion(x, cond)` on an object of a local class whose method (and the
    class's own `self.m()` calls from it, a few deep: forward -> loss -> p_losses) runs a field the
    object was handed plain before the module was wrapped, the wrapper then never run
    (handed_unwrapped: EDGE's GaussianDiffusion round the prepared DanceDecoder). The call of the
    field and its method, or None."""
    held = program.class_of(call.func, fn)  # (an object called: nn.Module's __call__ runs its forward)
    start = (program.method(held, "__call__") or program.method(held, "forward")) if held is not None else None
    if start is None:
        targets = program.resolve(call.func, fn)[0]
        start = targets[0] if len(targets) == 1 else None
    if start is None or start.cls is None or start.node is None or start.parent is not None:
        return None
    klass = program._class_of_fn(start)
    todo, seen = [(start, depth)], set()
    while todo and klass is not None:
        method, left = todo.pop()
        if id(method) in seen:
            continue
        seen.add(id(method))
        for inner in method.own_calls:
            func = inner.func
            if _self_field(func) and func.attr not in klass.methods and handed_unwrapped(program, inner, method):
                return inner, method
            if left and func.__class__ is ast.Attribute and func.value.__class__ is ast.Name and \
                    func.value.id == "self" and (found := program.method(klass, func.attr)) is not None:
                todo.append((found, left - 1))
    return None


def _wrapper_of(program: Program, call: ast.Call, fn: Function):
    """The DDP(...) call (and its function) whose module `call` runs round it: the part before
    `.module` (`model.module.encode(x)`), what an unwrapped name came from (`raw = model.module`,
    `getattr(m, "module", m)`, `accelerator.unwrap_model(m)`), or the wrapper fn built around the
    name (`model = DDP(policy)`, then `policy.loss(b)`)."""
    field = _field_wrapped_elsewhere(program, call, fn) or _field_left_unwrapped(program, call, fn) or \
        _dropped_wrapper(program, call, fn)
    if field is not None:
        return field
    if call.func.__class__ is ast.Name and (method := _method_call(program, call, fn)) is not None:
        return _wrapper_of(program, method, fn)
    node = call.func
    while isinstance(node, ast.Attribute):
        if node.attr == "module":
            return _ddp_held(program, node.value, fn, call)
        node = node.value
    receiver = call.func.value if isinstance(call.func, ast.Attribute) else call.func
    if receiver.__class__ is ast.Call and (inner := unwrapped_from(receiver)) is not None:
        # (`accelerator.unwrap_model(model).get_loss(x)`: the module inside, read off in the call)
        return _ddp_held(program, inner, fn, call)
    # (`self.model(x)` with `self.model = model.module`: the field's values, as a name's)
    field = _unwrapped_apart(program, call.func, fn) if _self_field(call.func) else []
    if not isinstance(receiver, ast.Name) and not (isinstance(receiver, ast.Attribute) and dotted(receiver)):
        return None
    held = field or (_unwrapped_apart(program, receiver, fn) if receiver is call.func and isinstance(receiver, ast.Name)
                     else [])
    for value, scope in [(receiver, fn), *program.values_of(receiver, fn, 3), *held]:
        inner = unwrapped_from(value)
        if inner is not None:
            # (`model = model.module`: the name held the wrapper where it was read off, not at the call)
            itself = inner.__class__ is ast.Name and receiver.__class__ is ast.Name and inner.id == receiver.id
            found = _ddp_held(program, inner, scope, call if scope is fn and not itself else value)
            if found is not None:
                return found
    for node in fn.own_of(ast.Assign) if isinstance(receiver, ast.Name) else ():
        value = node.value
        if value.__class__ is ast.Call and program.ddp_call(value, fn) and value.args and \
                isinstance(value.args[0], ast.Name) and (value.args[0].id == receiver.id or (
                    node.lineno < receiver.lineno and _one_module(fn, value.args[0], receiver))) and \
                _handed_into_wrapper(program, receiver, fn):
            return value, fn
    return None


def _dropped_wrapper(program: Program, call: ast.Call, fn: Function):
    """`self.parser(x)` where the object's field was handed to a helper that wraps its parameter
    (`model = DistributedDataParallel(model, ...)`) and then drops the wrapper - no later read
    of that name, no return of it, nothing stored: the object trains the plain module, and no
    gradient is ever all-reduced. The DDP(...) call and its function, or None."""
    func = call.func
    found = program.__dict__.setdefault("_dropped_wrappers", None)
    if found is None:
        found = program.__dict__["_dropped_wrappers"] = _dropped_wrappers(program)
    if func.__class__ is ast.Name and found:
        # (`configure_multi_gpu_model(args, model, ...)` as a statement, then `train(loader,
        # model)` and its `model(images)`: the name handed to the helper is the plain module)
        # (the name here, and the names the calls into fn hand it, up to 8 of them)
        origins = [(func, fn)]
        at = 0
        while at < len(origins) and len(origins) < 8:
            name, scope = origins[at]
            at += 1
            if name.id in scope.params:
                origins += [(given, caller) for given, caller in scope.arguments.get(name.id, ())
                            if given.__class__ is ast.Name][:4]
        for helper, param, made in found:
            for given, caller in helper.arguments.get(param, ()):
                if given.__class__ is ast.Name and any(v.id == given.id and scope is caller for v, scope in origins) \
                        and _handed_then_read(caller, given, origins):
                    return made, helper
        return None
    if not (_self_field(func) and fn.cls is not None):
        return None
    klass = program._class_of_fn(fn)
    for helper, param, made in found:
        for given, caller in helper.arguments.get(param, ()):
            if _self_field(given) and given.attr == func.attr and caller.cls is not None and \
                    program._class_of_fn(caller) is klass:
                # (a field wrapped in place as well, `self.parser = DDP(self.parser)`, is a call
                # of the wrapper: loss_round_the_wrapper has ruled it out before this is asked)
                return made, helper
    # (`DistributedDataParallel(model, device_ids=[d])` as a statement of its own in the helper
    # that builds the field, `self.model, self.tok = self._init_model(cfg)` returning `model, tok`:
    # the wrapper is made and thrown away, the field is the plain module)
    discarded = program.__dict__.get("_discarded_wrappers")
    if discarded is None:
        discarded = program.__dict__["_discarded_wrappers"] = _discarded_wrappers(program)
    for helper, name, made in discarded:
        if klass is not None and _field_returned(program, klass, func.attr, helper, name):
            return made, helper
    return None


def _handed_then_read(caller: Function, given: ast.Name, origins: list) -> bool:
    """The name handed to the dropping helper is read again in caller after that call, by the
    reads origins name in it, and never rebound in between (`model = helper(model)` keeps what
    the helper returns)."""
    reads = [v for v, scope in origins if scope is caller and v.__class__ is ast.Name and v.id == given.id
             and (v.lineno, v.col_offset) > (given.lineno, given.col_offset)]
    rebound = [n for n in walk(caller.node) if n.__class__ is ast.Name and n.id == given.id
               and n.ctx.__class__ is ast.Store and n.lineno >= given.lineno]
    return bool(reads) and not any(n.lineno <= min(r.lineno for r in reads) for n in rebound)


def discarded(fn: Function, call: ast.Call) -> bool:
    """`DistributedDataParallel(model)` as a statement of its own: the wrapper is dropped at once
    (its reducer with it), and what trains is the plain module."""
    return any(node.__class__ is ast.Expr and node.value is call for node in fn.own_of(ast.Expr))


def _discarded_wrappers(program: Program) -> list:
    """(function, name, the DDP(...) call) for each `DistributedDataParallel(name, ...)` a reached
    function makes as a statement of its own (discarded): nothing holds the wrapper."""
    return [(fn, node.value.args[0].id, node.value) for fn in program.reachable
            if fn.node is not None and not isinstance(fn.node, ast.Module)
            for node in fn.own_of(ast.Expr)
            if node.value.__class__ is ast.Call and node.value.args and node.value.args[0].__class__ is ast.Name
            and program.ddp_call(node.value, fn)]


def _field_returned(program: Program, klass, attr: str, helper: Function, name: str) -> bool:
    """Some method of klass sets `self.<attr>` from what helper returns (alone, or at its place of
    an unpacked tuple), and helper returns `name` there."""
    for method in klass.methods.values():
        for node in method.own_of(ast.Assign) if method.node is not None else ():
            target, value = node.targets[0], node.value
            if len(node.targets) != 1 or value.__class__ is not ast.Call or \
                    helper not in program.resolve(value.func, method)[0]:
                continue
            places = [None] if _self_field(target) and target.attr == attr else \
                [i for i, t in enumerate(target.elts) if _self_field(t) and t.attr == attr] \
                if target.__class__ is ast.Tuple else []
            for place in places:
                for ret in helper.own_of(ast.Return):
                    held = ret.value
                    if place is not None:
                        held = held.elts[place] if held.__class__ is ast.Tuple and place < len(held.elts) else None
                    if held.__class__ is ast.Name and held.id == name:
                        return True
    return False


def _dropped_wrappers(program: Program) -> list:
    """(function, parameter, the DDP(...) call) for each `p = DDP(p, ...)` of a parameter whose
    wrapper the function never reads again: not returned, stored, handed on or called."""
    out = []
    for fn in program.reachable:
        if fn.node is None or isinstance(fn.node, ast.Module):
            continue
        for node in fn.own_of(ast.Assign):
            value = node.value
            if not (len(node.targets) == 1 and node.targets[0].__class__ is ast.Name and value.__class__ is ast.Call
                    and value.args and value.args[0].__class__ is ast.Name and value.args[0].id == node.targets[0].id
                    and node.targets[0].id in fn.params and program.ddp_call(value, fn)):
                continue
            name = node.targets[0].id
            # (a read on the other side of an `if` - `elif cuda: model = DataParallel(model)` - is
            # another run's, not a read of this wrapper)
            after = [n for n in walk(fn.node) if n.__class__ is ast.Name and n.id == name
                     and n.ctx.__class__ is ast.Load and (n.lineno, n.col_offset) > (node.end_lineno, node.end_col_offset)
                     and not apart(fn.node.body, node, n)]
            if not after:
                out.append((fn, name, value))
    return out


def _iterated_elements(program: Program, name: ast.Name, fn: Function) -> list:
    """`for opt, net in zip(self.all_optimizers, self.all_nets):` where `all_nets` is a method or
    property of fn's class returning a tuple or list it spells (`return (self.jowa_model,)`):
    each element the loop hands `net`, with that method. Empty otherwise."""
    klass = program._class_of_fn(fn) if fn.cls is not None and fn.node is not None else None
    found = []
    for loop in fn.own_of(ast.For) if klass is not None else ():
        target, source = loop.target, loop.iter
        if target.__class__ is ast.Tuple and source.__class__ is ast.Call and last_name(source.func) == "zip":
            place = next((i for i, t in enumerate(target.elts) if t.__class__ is ast.Name and t.id == name.id), None)
            source = source.args[place] if place is not None and place < len(source.args) else None
        elif not (target.__class__ is ast.Name and target.id == name.id):
            continue
        source = source.func if source.__class__ is ast.Call and not source.args else source
        method = program.method(klass, source.attr) if _self_field(source) else None
        for ret in method.own_of(ast.Return) if method is not None else ():
            if ret.value.__class__ in (ast.Tuple, ast.List):
                found += [(element, method) for element in ret.value.elts]
    return found


def _method_call(program: Program, call: ast.Call, fn: Function) -> Optional[ast.Call]:
    """`loss_func(x)` where the name holds one bound method of an object (`loss_func = loss_func
    or self.model.calculate_loss`, the parameter left at None by every call - RecBole's trainers):
    the call as `self.model.calculate_loss(x)`, made once per call; None otherwise."""
    made = program.__dict__.setdefault("_method_calls", {})
    key = (id(call), id(fn))
    if key in made:
        return made[key][0]
    held = []
    for value, scope in program.values_of(call.func, fn, 1):
        for part in value.values if value.__class__ is ast.BoolOp and value.op.__class__ is ast.Or else [value]:
            if part.__class__ is ast.Name and part.id in scope.params and not scope.arguments.get(part.id) \
                    and is_const(param_defaults(scope.node).get(part.id), None):
                continue  # (the parameter no call hands: None, so `or` goes on)
            held.append(part)
    method = None
    if held and all(h.__class__ is ast.Attribute and h.value.__class__ in (ast.Name, ast.Attribute) for h in held) \
            and len({text(h) for h in held}) == 1:
        method = ast.copy_location(ast.Call(func=held[0], args=call.args, keywords=call.keywords), call)
    made[key] = (method, call)  # (the call kept alive: its id is the key)
    return method


def _ddp_held(program: Program, holder: ast.AST, fn: Function, at: ast.AST):
    """The DDP(...) call a name or `self.attr` holds where `at` runs (ddp_model asked of a call of it);
    the call itself where the holder is one (`DistributedDataParallel(net).module`, read off on
    the spot)."""
    if holder.__class__ is ast.Call:
        return (holder, fn) if program.ddp_call(holder, fn) else None
    if not isinstance(holder, (ast.Name, ast.Attribute)):
        return None
    return ddp_model(program, ast.copy_location(ast.Call(func=holder, args=[], keywords=[]), at), fn)


def _round_the_wrapper(program: Program, call: ast.Call, fn: Function) -> bool:
    """`model.module.forward_train(batch)`: a method of the module the wrapper holds, not the
    wrapper's forward - the reducer is not prepared, and the backward of what it computes
    all-reduces nothing. Also `model.forward_train(batch)` on the side of `isinstance(model, DDP)`
    where the model is not the wrapper (DistributedDataParallel hands no method on to its module:
    there the model is the plain one)."""
    func = call.func
    if _dropped_wrapper(program, call, fn) is not None:
        return True
    if func.__class__ is ast.Name and (method := _method_call(program, call, fn)) is not None:
        return _round_the_wrapper(program, method, fn)
    if isinstance(func, ast.Name):
        # `raw = ddp.module; out = raw(x)`, or a helper handed `model = sam.module` (SAM
        # adapter's trainer): the module's own forward; or the module a wrapper built in fn was
        # handed under another name (`raw_model = model`, `DDP(torch.compile(model))`)
        return bool(_unwrapped_apart(program, func, fn)) or (fn.node is not None and _handed_into_wrapper(program, func, fn))
    if not isinstance(func, ast.Attribute):
        return False
    if _field_wrapped_elsewhere(program, call, fn) is not None or _field_left_unwrapped(program, call, fn) is not None:
        return True
    if _self_field(func) and _unwrapped_apart(program, func, fn):
        # `self.model = model.module` in the trainer's `__init__`, then `self.model(x)` in its
        # step (a brain-MRI trainer handed the DDP model): the module's own forward
        return True
    if func.attr in ("forward", "__call__"):
        # `model.module.forward(x)` goes round it all the same; `model.forward(x)` is DDP's forward
        return isinstance(func.value, ast.Attribute) and func.value.attr == "module"
    if _through_module(call):
        return True
    receiver = func.value
    if receiver.__class__ is ast.Call and unwrapped_from(receiver) is not None:
        return True  # (`accelerator.unwrap_model(model).get_loss(x)`: read off in the call itself)
    if isinstance(receiver, ast.Attribute) and dotted(receiver):
        # `self.model.training_step(batch)` in the `else:` of `isinstance(self.model, DDP)`; and
        # `self.model.calculate_loss(x)` with `self.model = DDP(net).module` (the field's values)
        return _off_the_wrapper_side(fn, call, dotted(receiver)) or _module_once_wrapped(program, receiver, fn) \
            or (_self_field(receiver) and bool(_unwrapped_apart(program, receiver, fn)))
    return isinstance(receiver, ast.Name) and (_off_the_wrapper_side(fn, call, receiver.id)
                                               or _unwrapped(program, receiver, fn)
                                               or _handed_into_wrapper(program, receiver, fn)
                                               or _module_once_wrapped(program, receiver, fn))


def _self_field(node: ast.AST) -> bool:
    """`self.model`: a field of the object itself, one attribute deep."""
    return node.__class__ is ast.Attribute and node.value.__class__ is ast.Name and node.value.id == "self"


def _field_wrapped_elsewhere(program: Program, call: ast.Call, fn: Function):
    """`self.net_ddp = DDP(self.net)` in the class, then `self.net(x)` (or `self.net.encode(x)`) in
    its training step (PRNet++'s Solver): the field still holds the module the wrapper was handed,
    and no method of the class makes it the wrapper. (the DDP(...) call, its function) or None."""
    func = call.func
    klass = program._class_of_fn(fn) if fn.cls is not None else None
    if klass is None or not isinstance(func, ast.Attribute):
        return None
    holder = func if (dotted(func) or "").count(".") == 1 and func.attr not in klass.methods else func.value
    # (`self._actor_critic.actor.log_prob(x)`: a submodule of the field's module, round it too)
    while isinstance(holder, ast.Attribute) and (dotted(holder) or "").count(".") > 1:
        holder = holder.value
    # (`self.engine().module.loss(x)`: a chain below a call names no field)
    name = (dotted(holder) or "") if isinstance(holder, ast.Attribute) else ""
    if not name.startswith("self.") or name.count(".") != 1:
        return None
    return _fields_wrapped_elsewhere(program, klass).get(name)


def _field_left_unwrapped(program: Program, call: ast.Call, fn: Function):
    """`learn = Learner(mdl=mdl)`, then `mdl = DDP(mdl)` and the wrapper handed to nothing
    (Video-QAP's learner_init): the object keeps the plain module its constructor was given, so
    `self.mdl(batch)` in its training step runs round the wrapper. (the DDP(...) call, its
    function) or None."""
    found = handed_unwrapped(program, call, fn)
    return found[:2] if found is not None else None


def _pairs(node: ast.Assign) -> list:
    """An assignment as one `target = value` per target: `self.a, self.b = a, b` as two (each a
    copy placed at the statement), others as they are."""
    target = node.targets[0] if len(node.targets) == 1 else None
    if target.__class__ is ast.Tuple and node.value.__class__ is ast.Tuple and len(target.elts) == len(node.value.elts):
        return [ast.copy_location(ast.Assign(targets=[t], value=v), node) for t, v in zip(target.elts, node.value.elts)]
    return [node]


def handed_unwrapped(program: Program, call: ast.Call, fn: Function):
    """_field_left_unwrapped's answer with the construction that handed the plain module: (the
    DDP(...) call, its function, the `Learner(mdl=mdl)` call, its function) or None."""
    func = call.func
    holder = func if _self_field(func) else func.value if func.__class__ is ast.Attribute and _self_field(func.value) \
        else None
    klass = program._class_of_fn(fn) if holder is not None and fn.cls is not None else None
    if klass is None:
        return None
    memo = klass.__dict__.setdefault("_fields_left_unwrapped", {})
    if holder.attr not in memo:
        memo[holder.attr] = _handed_before_wrapping(program, klass, holder.attr)
    return memo[holder.attr]


def constructions(klass, program: Program) -> list:
    """(call, scope) of each `Klass(...)` in code the script reaches, found once per class: not a
    classmethod's `cls(**saved)`, the class's own reload of what a run wrote."""
    memo = program.__dict__.setdefault("_constructions", {})
    if id(klass) not in memo:
        reached = getattr(program, "reachable", None) or program.functions
        memo[id(klass)] = [(call, scope) for scope in reached for call in scope.own_calls
                           if call.func.__class__ is ast.Name and program.symbol(call.func.id, scope) is klass
                           and not (call.func.id == "cls" and scope.cls is klass)]
    return memo[id(klass)]


def _handed_before_wrapping(program: Program, klass, attr: str):
    """Where every construction of klass hands the parameter its `__init__` keeps in `self.<attr>`
    (and no other method sets) a name that its function wraps in DDP only afterwards, the wrapper
    then read only to move it (`mdl = mdl.to(device)`): the first such DDP(...) call and its
    function; None otherwise."""
    init = klass.methods.get("__init__")
    kept = [(pair, n) for m in klass.methods.values() for n in m.own_of(ast.Assign)
            for pair in _pairs(n) if any(_self_field(t) and t.attr == attr for t in pair.targets)]
    if init is None:
        # a dataclass's field (`mdl: nn.Module`): the constructor's parameter of that name, in
        # the order the fields are declared, and no method sets it
        fields = [n.target.id for n in klass.node.body if n.__class__ is ast.AnnAssign and n.target.__class__ is ast.Name]
        if kept or attr not in fields or not any(last_name(d) == "dataclass" for d in klass.node.decorator_list):
            return None
        param, place = attr, fields.index(attr)
    else:
        if len(kept) != 1 or kept[0][1] not in init.own_of(ast.Assign) or kept[0][0].value.__class__ is not ast.Name:
            return None
        param = kept[0][0].value.id
        if param not in init.params:
            return None
        place = init.params.index(param)  # (the params leave `self` out)
    found = None
    sites = constructions(klass, program)
    for site, scope in sites:
        given = next((k.value for k in site.keywords if k.arg == param), None)
        if given is None and 0 <= place < len(site.args) and not any(a.__class__ is ast.Starred for a in site.args):
            given = site.args[place]
        wrapped = _wrapped_after(program, given, site, scope) if given.__class__ is ast.Name else None
        if wrapped is None:
            return None
        found = found or (*wrapped, site, scope)
    return found


def _wrapped_after(program: Program, name: ast.Name, site: ast.Call, scope: Function):
    """`W = DDP(name, ...)` below `site` in scope (or Accelerate's `self.W =
    accelerator.prepare(name)`, a field of scope's class), W then never run: read only to move,
    save or load its weights (_wrapper_idle) and never stored, returned or handed on. The DDP(...)
    call (the one the prepare stands for), else None."""
    built = [n for n in scope.own_of(ast.Assign) if n.lineno > site.lineno and n.value.__class__ is ast.Call
             and program.ddp_call(n.value, scope) and n.value.args and n.value.args[0].__class__ is ast.Name
             and n.value.args[0].id == name.id and len(n.targets) == 1 and n.targets[0].__class__ is ast.Name]
    if built:
        wrapper, call, line = built[0].targets[0], built[0].value, built[0].lineno
    else:
        prepared = next(((node, i) for node in _prepares(scope) if node.lineno > site.lineno
                         for i, a in enumerate(node.value.args) if a.__class__ is ast.Name and a.id == name.id), None)
        if prepared is None:
            return None
        node, place = prepared
        held = node.targets[0]
        elts = held.elts if held.__class__ in (ast.Tuple, ast.List) else [held]
        wrapper = elts[place] if place < len(elts) else None
        if not (wrapper.__class__ is ast.Name or _self_field(wrapper)):
            return None
        found = prepared_ddp(program, wrapper, scope, node.lineno + 1)
        if found is None or found[1] is not scope:
            return None
        call, line = found[0], node.lineno
    if wrapper.__class__ is ast.Name:
        spans = [(scope, line)]
    elif scope.cls is not None and scope.parent is None and (klass := program._class_of_fn(scope)) is not None:
        spans = [(m, 0) for m in klass.methods.values() if m.node is not None]
    else:
        return None
    key = text(wrapper)
    for where, after in spans:
        idle = _wrapper_idle(program, where, key)
        for node in walk(where.node):
            if node.__class__ in (ast.Name, ast.Attribute) and node.ctx.__class__ is ast.Load and \
                    getattr(node, "lineno", 0) > after and text(node) == key and id(node) not in idle:
                return None
    return call, scope


# What reading a wrapper for these runs no forward of it: its weights, its place, its mode.
_IDLE_USES = frozenset({"to", "cuda", "state_dict", "load_state_dict", "parameters", "named_parameters",
                        "train", "eval", "module"})


def _wrapper_idle(program: Program, scope: Function, key: str) -> set[int]:
    """The ids of scope's reads of the wrapper `key` (a name, `self.W`) that run none of it: the
    receiver of a move or of its weights (`W.to(dev)`, `W.state_dict()`, `W.load_state_dict(sd)`),
    what a wrapper or Accelerate's unwrap_model is handed, and an argument a local helper reads
    only for its weights (_only_saved)."""
    idle = set()
    for n in walk(scope.node):
        if n.__class__ is ast.Attribute and n.attr in _IDLE_USES:
            idle.add(id(n.value))
        elif n.__class__ is ast.Call and n.args and (
                program.ddp_call(n, scope) or last_name(n.func) in ("DataParallel", "unwrap_model")):
            idle.add(id(n.args[0]))
        elif n.__class__ is ast.Call:
            idle.update(id(a) for i, a in enumerate(n.args) if text(a) == key and _only_saved(program, n, i, scope))
    return idle


def _only_saved(program: Program, call: ast.Call, index: int, scope: Function) -> bool:
    """The local function `call` runs reads the parameter at that place only for its weights
    (`torch.save(net_sound.state_dict(), path)` in a checkpoint helper): handing the wrapper
    there runs no forward of it."""
    targets = program.resolve(call.func, scope)[0]
    if len(targets) != 1 or targets[0].node is None or targets[0].node.__class__ is ast.Module:
        return False
    target = targets[0]
    params = target.params
    if not 0 <= index < len(params) or target.bindings.get(params[index]):
        return False
    name = params[index]
    uses = [n for n in walk(target.node) if n.__class__ is ast.Name and n.id == name and n.ctx.__class__ is ast.Load]
    weights = {id(n.value) for n in walk(target.node) if n.__class__ is ast.Attribute and n.attr == "state_dict"
               and n.value.__class__ is ast.Name and n.value.id == name}
    return bool(uses) and all(id(n) in weights for n in uses)


def _fields_wrapped_elsewhere(program: Program, klass) -> dict:
    """{"self.net": (the DDP(...) call, its method)} for each field a method of the class hands to
    a wrapper kept under another name, and that no method makes the wrapper (`self.net =
    DDP(self.net)`) or the module read off one (`self.net = self.net_ddp.module`: DeiT's
    model_without_ddp, which _module_once_wrapped judges). Read once per class."""
    found = klass.__dict__.get("_fields_wrapped")
    if found is not None:
        return found
    wrapped, rebound = {}, set()
    for method in klass.methods.values():
        # (`self.actor_critic = actor_critic.to(device)` beside `self._actor_critic = actor_critic`,
        # then `self.actor_critic = DDP(self.actor_critic)`: the other field holds the module inside)
        sources: dict[str, list[str]] = {}
        for node in method.own_of(ast.Assign):
            source = _moved_name(node.value)
            if source is not None and len(node.targets) == 1 and _self_field(node.targets[0]):
                sources.setdefault(source, []).append(text(node.targets[0]))
        for node in method.own_of(ast.Assign):
            if node.value.__class__ is ast.Call and program.ddp_call(node.value, method):
                inner = text(node.value.args[0]) if node.value.args else ""
                targets = {text(t) for t in node.targets}
                if inner.startswith("self.") and inner not in targets:
                    wrapped.setdefault(inner, (node.value, method))
                elif inner in targets:
                    for fields in sources.values():
                        if inner in fields:
                            for alias in fields:
                                if alias != inner:
                                    wrapped.setdefault(alias, (node.value, method))
                rebound |= targets
            elif isinstance(node.value, ast.Attribute) and node.value.attr == "module":
                rebound |= {text(t) for t in node.targets}
    found = klass.__dict__["_fields_wrapped"] = {k: v for k, v in wrapped.items() if k not in rebound}
    return found


def _moved_name(value: ast.AST) -> Optional[str]:
    """The plain name a value is, or is moved from (`net`, `net.to(device)`, `net.cuda()`: a
    module's `.to()` hands back the module itself, SELF_RETURNING); None otherwise."""
    while value.__class__ is ast.Call and value.func.__class__ is ast.Attribute and value.func.attr in SELF_RETURNING:
        value = value.func.value
    return value.id if value.__class__ is ast.Name else None


def _module_once_wrapped(program: Program, holder: ast.AST, fn: Function) -> bool:
    """`self.model_without_ddp = self.model`, then, where the run is distributed, `self.model =
    DDP(self.model); self.model_without_ddp = self.model.module` (DeiT's and MAE's shape): on the
    run that wraps, the name holds the module inside. Its values are `X.module` and X itself."""
    values = [v for v, _ in program.values_of(holder, fn, 1) if v is not holder]
    inner = {text(v.value) for v in values if isinstance(v, ast.Attribute) and v.attr == "module"}
    return bool(inner) and all((isinstance(v, ast.Attribute) and v.attr == "module") or
                               (isinstance(v, (ast.Name, ast.Attribute)) and text(v) in inner) for v in values)


def _handed_into_wrapper(program: Program, name: ast.Name, fn: Function) -> bool:
    """`model = DDP(policy, ...)`, then `policy.compute_loss(batch)` (vla-scratch's trainer): the
    name holds, where it is used, just what it held when fn handed it to the wrapper under another
    name - the module inside, whatever its factory made, since no wrapper is wrapped again."""
    at = reaching.reaching_values(fn.node, name.id, name)
    if not at:
        return False
    mine = {id(v) for v in at}
    for node in fn.own_of(ast.Assign, ast.AnnAssign):
        value = node.value
        if value.__class__ is not ast.Call or not program.ddp_call(value, fn):
            continue
        inner = value.args[0] if value.args else next((k.value for k in value.keywords if k.arg == "module"), None)
        targets = node.targets if node.__class__ is ast.Assign else [node.target]
        if inner.__class__ is not ast.Name or any(
                n.__class__ is ast.Name and n.id == name.id for t in targets for n in walk(t)):
            continue  # (`policy = DDP(policy)`: from there on the name is the wrapper)
        if inner.id != name.id:
            # (`raw_model = model` and `compiled = torch.compile(model)`, `DDP(compiled)`: both
            # come from the one module)
            if node.lineno < name.lineno and _one_module(fn, inner, name):
                return True
            continue
        handed = reaching.reaching_values(fn.node, name.id, inner)
        if handed and {id(v) for v in handed} == mine:
            return True
    return False


def _module_origins(fn: Function, name: ast.Name, depth: int = 4) -> Optional[frozenset]:
    """The ids of the values a name comes from where it is read, through plain copies (`raw =
    model`) and `torch.compile(model)` (a wrapper that shares the module's parameters): None
    where a way is not known."""
    held = reaching.reaching_values(fn.node, name.id, name)
    if not held or depth <= 0:
        return None
    found: set = set()
    for value in held:
        inner = value.args[0] if value.__class__ is ast.Call and last_name(value.func) == "compile" and value.args \
            else value
        if inner.__class__ is ast.Name:
            more = _module_origins(fn, inner, depth - 1)
            if more is None:
                return None
            found |= more
        else:
            found.add(id(inner))
    return frozenset(found)


def _one_module(fn: Function, a: ast.Name, b: ast.Name) -> bool:
    """Two names that hold, where each is read, the one module (_module_origins)."""
    left = _module_origins(fn, a)
    return bool(left) and left == _module_origins(fn, b)


def _unwrapped(program: Program, name: ast.Name, fn: Function, depth: int = 3) -> bool:
    """Every value the name holds, through the names and parameters it comes from, is the
    module a wrapper holds (plain_module: `raw = ddp.module`, `m.module if isinstance(m, DDP)
    else m`, `getattr(m, "module", m)`). A value not seen proves nothing."""
    frontier, seen = [(name, fn)], set()
    found = False
    for _ in range(depth):
        next_frontier = []
        for node, scope in frontier:
            values = [(v, s) for v, s in program.values_of(node, scope, 1) if v is not node]
            if not values:
                return False
            for value, where in values:
                if isinstance(value, ast.Call) and last_name(value.func) == "cast" and len(value.args) == 2:
                    value = value.args[1]  # typing.cast(Harold, m.module): the value itself
                if plain_module(program, value, where, 1):
                    found = True
                elif isinstance(value, ast.Name):
                    if (value.id, id(where)) not in seen:
                        seen.add((value.id, id(where)))
                        next_frontier.append((value, where))
                else:
                    return False
        frontier = next_frontier
        if not frontier:
            return found
    return False


def _unwrapped_apart(program: Program, name: ast.Name, fn: Function, depth: int = 3) -> list:
    """The values of the module a wrapper holds (plain_module), each with its function, that the
    name holds on every way where a wrapper is built: a value of another kind is bound only on a
    side of a test whose other side binds the unwrapped one (`if opts.dist: model = ddp.module`
    / `if not opts.dist: model = net`, the one-process run's model, which no wrapper holds).
    [] where any other value may reach it (a value not seen proves nothing)."""
    frontier, seen, found = [(name, fn)], set(), []
    for _ in range(depth):
        values = [(v, s) for node, scope in frontier for v, s in program.values_of(node, scope, 1) if v is not node
                  and not _superseded_in_init(program, node, v, s)]
        if frontier and not values:
            return []
        unwrapped = [(v, s) for v, s in values if plain_module(program, v, s, 1)]
        found += unwrapped
        frontier = []
        for value, where in values:
            if any(value is v for v, _ in unwrapped):
                continue
            if any(s is where and _apart(where, value, v) for v, s in unwrapped):
                continue  # (the other side of the test the unwrapping sits under)
            if any(s is where and _unwrapped_if_ddp(where, v, name) for v, s in unwrapped):
                # (`if isinstance(unet, DistributedDataParallel): unet = unet.module` after
                # Accelerate's prepare: what passes the test untouched is the one-process run's)
                continue
            if not isinstance(value, ast.Name):
                return []
            if (value.id, id(where)) not in seen:
                seen.add((value.id, id(where)))
                frontier.append((value, where))
        if not frontier:
            return found
    return []


def _superseded_in_init(program: Program, field: ast.AST, value: ast.AST, scope: Function) -> bool:
    """`self.model = model` in a constructor that then calls `self._build()`, whose own body
    (not under a test) binds `self.model` again (`self.model = DistributedDataParallel(self.model)
    .module`): once the object is built, the constructor's first value is gone."""
    if not (_self_field(field) and scope.name == "__init__" and scope.cls is not None
            and scope.node.__class__ is not ast.Module):
        return False
    body = scope.node.body
    at = next((i for i, stmt in enumerate(body) if any(n is value for n in walk(stmt))), None)
    if at is None or body[at].__class__ not in (ast.Assign, ast.AnnAssign):
        return False  # (bound under a test, or inside a block: its way is not the constructor's own)
    for stmt in body[at + 1:]:
        made = stmt.value if stmt.__class__ in (ast.Expr, ast.Assign) else None
        if not (made.__class__ is ast.Call and _self_field(made.func)):
            continue
        method = program.method(program._class_of_fn(scope), made.func.attr)
        if method is not None and method.node is not None and method.node.__class__ is not ast.Module and any(
                s.__class__ is ast.Assign and any(_self_field(t) and t.attr == field.attr for t in s.targets)
                for s in method.node.body):
            return True
    return False


def _unwrapped_if_ddp(fn: Function, value: ast.AST, name: ast.AST) -> bool:
    """`value` (the module read off the wrapper) is bound in the body of `if isinstance(<name>,
    (..., DistributedDataParallel))` of the name itself: in a distributed run the test holds."""
    if name.__class__ is not ast.Name:
        return False
    for node in fn.own_of(ast.If):
        test = node.test
        if test.__class__ is ast.Call and last_name(test.func) == "isinstance" and len(test.args) == 2 and \
                test.args[0].__class__ is ast.Name and test.args[0].id == name.id and \
                re.search(r"\b(DistributedDataParallel|DDP)\b", text(test.args[1], 200)) and \
                any(n is value for stmt in node.body for n in walk(stmt)):
            return True
    return False


def _apart(fn: Function, one: ast.AST, other: ast.AST) -> bool:
    """Two nodes of fn sit on the two sides of one test (`if x:` / `if not x:`, or its `else:`)."""
    return opposite_sides(_sides(fn, one), _sides(fn, other))


def tests_around(root: ast.AST, node: ast.AST) -> list[tuple[ast.AST, bool]]:
    """(test, side) of each `if` of root's body (a loop, a function) that holds the statement
    node, outermost first: the tests themselves, for one statement (not a nested def's)."""
    def down(stmts: list, around: list) -> Optional[list]:
        for stmt in stmts:
            if stmt is node:
                return around
            if isinstance(stmt, ast.If):
                for side, branch in ((True, stmt.body), (False, stmt.orelse)):
                    found = down(branch, around + [(stmt.test, side)])
                    if found is not None:
                        return found
            elif not isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                found = down([c for f in ("body", "orelse", "finalbody") for c in getattr(stmt, f, [])]
                             + [c for h in getattr(stmt, "handlers", []) for c in h.body], around)
                if found is not None:
                    return found
        return None
    return down(root.body, []) or []


def opposite_sides(a, b) -> bool:
    """Two places' (test text, side) sets share a test on opposite sides (read twice, not
    changed between)."""
    return any((test, not side) in b for test, side in a)


def _sides(fn: Function, node: ast.AST) -> set:
    """(the test as written without a leading `not`, the side) of each `if` around node in fn."""
    found = set()
    for _, _, owner, field in (reaching._path_to(fn.node, node) or ()) if fn.node is not None else ():
        if owner.__class__ is ast.If and field in ("body", "orelse"):
            test, truth = owner.test, field == "body"
            while isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
                test, truth = test.operand, not truth
            found.add((text(test, 200), truth))
    return found


def plain_module(program: Program, value: ast.AST, fn: Function, depth: int) -> bool:
    """`x.module`, `getattr(x, "module", x)`, `x.module if hasattr(x, "module") else x` (or
    `if isinstance(x, DDP)`: the other side is x where x is no wrapper), Accelerate's
    `unwrap_model(x)`, or a local helper whose every return is one: the module whenever there
    is a wrapper."""
    if unwrapped_from(value) is not None:
        return True
    if isinstance(value, ast.IfExp):
        return False
    if isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute) and value.func.attr == "unwrap_model":
        return True  # (its model handed in some other way: the module whenever there is a wrapper)
    if isinstance(value, ast.Call) and depth > 0:
        target = program.callee(value.func, fn)
        if target is None and isinstance(value.func, ast.Attribute) and isinstance(value.func.value, ast.Name) \
                and value.func.value.id == "self":
            # `model = self._get_model()`, the trainer's own unwrapping method
            found = program.resolve(value.func, fn)[0]
            target = found[0] if len(found) == 1 else None
        returns = target.returned if program.is_function(target) else []
        return bool(returns) and all(plain_module(program, r, target, depth - 1) or _past_unwrap(target, r)
                                     for r in returns)
    return False


def unwrapped_from(value: ast.AST) -> Optional[ast.AST]:
    """The wrapper a value unwraps, written in place: x of `x.module`, `getattr(x, "module", x)`,
    `x.module if hasattr(x, "module") else x` (or `if isinstance(x, DDP)`), Accelerate's (and
    Lightning Fabric's) `accelerator.unwrap_model(x)`; None for any other value."""
    if isinstance(value, ast.Attribute) and value.attr == "module":
        return value.value
    if isinstance(value, ast.IfExp):
        test, body = value.test, value.body
        if isinstance(body, ast.Attribute) and body.attr == "module" and (
                (isinstance(test, ast.Call) and last_name(test.func) == "hasattr" and len(test.args) == 2
                 and is_const(test.args[1], "module")) or text(body.value) == text(value.orelse)):
            return body.value
        return None
    if isinstance(value, ast.Call) and last_name(value.func) == "getattr" and len(value.args) >= 2 and \
            is_const(value.args[1], "module"):
        return value.args[0]
    if isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute) and value.func.attr == "unwrap_model":
        return value.args[0] if value.args else keyword(value, "model")
    return None


def _past_unwrap(fn: Function, value: ast.AST) -> bool:
    """`return self.model` after `if isinstance(self.model, DDP): return self.model.module` (Todd
    Atlas' `_get_model`): where this return is reached the value is no wrapper."""
    said = dotted(value) if isinstance(value, (ast.Name, ast.Attribute)) else None
    if not said:
        return False
    for stmt in fn.own_of(ast.If):
        test = stmt.test
        if isinstance(test, ast.Call) and last_name(test.func) == "isinstance" and len(test.args) == 2 and \
                dotted(test.args[0]) == said and re.search(r"\bDDP\b|DistributedDataParallel", text(test.args[1], 200)) \
                and stmt.body and isinstance(stmt.body[-1], ast.Return) and stmt.body[-1].value is not None \
                and plain_module(None, stmt.body[-1].value, fn, 0) and not stmt.orelse \
                and (getattr(stmt, "end_lineno", 0) or 0) < getattr(value, "lineno", 0):
            return True
    return False


def _off_the_wrapper_side(fn: Function, call: ast.Call, name: str) -> bool:
    """The call sits where `isinstance(name, DistributedDataParallel)` (or `DDP`) is false: the
    `else:` of that test, or the body of its `not` (name: a local or a dotted `self.model`)."""
    for stmt in fn.own_of(ast.If):
        test, negated = stmt.test, False
        if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
            test, negated = test.operand, True
        if not (isinstance(test, ast.Call) and last_name(test.func) == "isinstance" and len(test.args) == 2
                and isinstance(test.args[0], (ast.Name, ast.Attribute)) and dotted(test.args[0]) == name
                and re.search(r"\bDDP\b|DistributedDataParallel", text(test.args[1], 200))):
            continue
        side = stmt.body if negated else stmt.orelse
        if any(n is call for part in side for n in walk(part)):
            return True
    return False


def _through_module(call: ast.Call) -> bool:
    """`model.module(x)`, `self.net.module.loss(x)`: a call on the module a wrapper holds."""
    func = call.func
    inner = func.value if isinstance(func, ast.Attribute) else None
    while isinstance(inner, ast.Attribute):
        if inner.attr == "module":
            return True
        inner = inner.value
    return isinstance(func, ast.Attribute) and func.attr == "module"


def _undetached(node: ast.AST, fn: Optional[Function] = None):
    """The nodes of an expression outside `.detach()` calls (and their receivers); of a
    conditional expression whose test fn pins (_pinned_side), the side taken alone."""
    todo = [node]
    while todo:
        sub = todo.pop()
        if isinstance(sub, ast.Call) and isinstance(sub.func, ast.Attribute) and sub.func.attr == "detach":
            continue
        yield sub
        side = _pinned_side(sub, fn) if fn is not None and sub.__class__ is ast.IfExp else None
        todo.extend(children(sub) if side is None else [side])


def _pinned_side(choice: ast.IfExp, fn: Function) -> Optional[ast.AST]:
    """The side of `a if opt.single_gpu else b` taken where fn binds the test's name (or
    field) only to constants (`opt.single_gpu = False` after the options are parsed): the
    other side never runs there. None where the test is not so pinned."""
    test, negated = choice.test, False
    if test.__class__ is ast.UnaryOp and test.op.__class__ is ast.Not:
        test, negated = test.operand, True
    if test.__class__ is ast.Name and test.id not in fn.params:
        values = [v for _, v in fn.bindings.get(test.id, ())]
    elif test.__class__ is ast.Attribute and test.value.__class__ is ast.Name and test.value.id != "self":
        values = list(fn.attr_bindings.get(dotted(test) or "", ()))
    else:
        return None
    if not values or not all(v.__class__ is ast.Constant for v in values) or len({bool(v.value) for v in values}) != 1:
        return None
    return choice.body if bool(values[0].value) != negated else choice.orelse


def _in_no_sync(program: Program, call: ast.Call, fn: Function) -> bool:
    """The call sits in a `with <model>.no_sync():` block of its own function: no all-reduce."""
    for stmt in fn.own_of(ast.With, ast.AsyncWith):
        if any(
                isinstance(item.context_expr, ast.Call) and last_name(item.context_expr.func) == "no_sync"
                for item in stmt.items) and any(inner is call for s in stmt.body for inner in walk(s)):
            return True
    return False


# A DDP forward's op text (checks/lint/collective_under_rank_branch.py words its finding from it).
DDP_FORWARD = "forward of the DDP model"
# With gradients off, DDP syncs buffers only in a forward that follows a grad-enabled one, and
# then marks the next forward as not to sync (torch's DistributedDataParallel._pre_forward /
# _post_forward: require_forward_param_sync): one broadcast, the same count as the other
# ranks', which pairs with their next training forward. It hangs only where they reach another
# collective or the end first (open_clip #1121: at the last epoch's evaluation).
NO_GRAD_FORWARD = "(DDP broadcasts its buffers in the first forward after a training step)"
_GRAD_ON = " (DDP broadcasts its buffers in every forward)"
_GRAD_OFF = {"no_grad", "inference_mode"}


def grad_off(program: Program, call: ast.Call, fn: Function) -> str:
    """How gradients are off around `call` in its own function: a `@torch.no_grad()` /
    `@torch.inference_mode()` decorator, or a `with torch.no_grad():` /
    `torch.inference_mode()` / `torch.set_grad_enabled(False)` block around it; "" if not."""
    node = fn.node
    for deco in getattr(node, "decorator_list", []):
        name = _grad_context(program, deco, fn)
        if name:
            return name
    for stmt in fn.own_of(ast.With, ast.AsyncWith):
        names = [_grad_context(program, item.context_expr, fn) for item in stmt.items]
        name = next((n for n in names if n), "")
        if name and any(inner is call for s in stmt.body for inner in walk(s)):
            return name
    return ""


def _grad_context(program: Program, node: ast.AST, fn: Function) -> str:
    """`torch.no_grad()` / `torch.no_grad` / `torch.inference_mode()` /
    `torch.set_grad_enabled(False)` as written, else ""."""
    target = node.func if isinstance(node, ast.Call) else node
    full = program.qualify(target, fn) or ""
    name = full.rsplit(".", 1)[-1]
    if full.startswith("torch.") and name in _GRAD_OFF:
        return f"torch.{name}"
    if full.startswith("torch.") and name == "set_grad_enabled" and isinstance(node, ast.Call) \
            and node.args and isinstance(node.args[0], ast.Constant) and node.args[0].value is False:
        return "torch.set_grad_enabled(False)"
    return ""


def grad_switch(program: Program, call: ast.Call, fn: Function) -> str:
    """The parameter of fn that turns gradients on or off around `call`: `with
    torch.set_grad_enabled(is_training):` in a helper that training and evaluation share; ""
    when there is none. The way in decides (fact_builder.reach reads the value it passes)."""
    for stmt in fn.own_of(ast.With, ast.AsyncWith):
        for item in stmt.items:
            node = item.context_expr
            if isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Name) \
                    and node.args[0].id in fn.params and (program.qualify(node.func, fn) or "").startswith("torch.") \
                    and last_name(node.func) == "set_grad_enabled" \
                    and any(inner is call for s in stmt.body for inner in walk(s)):
                return node.args[0].id
    return ""


def grad_off_by(op: str, switch: str) -> str:
    """A DDP forward's op under `set_grad_enabled(<switch>)` that the way in leaves False."""
    if not (op.startswith(DDP_FORWARD) and op.endswith(_GRAD_ON)):
        return op
    return f"{op[:-len(_GRAD_ON)]} under torch.set_grad_enabled({switch}=False) {NO_GRAD_FORWARD}"


# Accelerate's save_state() writes from the main process alone under DDP, but under DeepSpeed
# (engine.save_checkpoint) and FSDP (the sharded state dict) every process takes part: on the
# main process only it hangs (diffusers' training examples, issue #2606). A warning: the script
# prepares for one of them, whether the config picks it is not in the source.
SHARDED_SAVE = "(every process takes part under {})"

# The same where the launches beside the script name an Accelerate config that picks that engine
# (`accelerate launch --config_file configs/gpu.yaml train.py`): the run as launched takes part on
# every process (an error, as any proven collective under a rank test).
CHOSEN_SAVE = "(every rank takes part under {}, the engine of the Accelerate config the launch beside the script names)"

# A test on Accelerate's engine as a condition's text says it: `accelerator.distributed_type ==
# DistributedType.FSDP` (passed where FSDP runs), `... != DistributedType.DEEPSPEED` or `not (... ==
# ...)` (failed where DeepSpeed runs).
_ENGINE_TEST = re.compile(r"^(not \(?)?[\w.]*distributed_type\s*(==|!=)\s*[\w.]*\b(FSDP|DEEPSPEED)\)?$")


def engine_tested(cond: str) -> Optional[tuple[str, bool]]:
    """("FSDP" / "DeepSpeed", whether the test holds under that engine) for a test on Accelerate's
    engine (_ENGINE_TEST); None for any other test."""
    found = _ENGINE_TEST.match(cond.strip())
    if found is None:
        return None
    return ("FSDP" if found.group(3) == "FSDP" else "DeepSpeed"), (found.group(1) is None) == (found.group(2) == "==")


# save_pretrained of what accelerator.unwrap_model() returns, under FSDP (its state_dict gathers)
UNWRAPPED_FSDP = ("of the model accelerator.unwrap_model() returns (under FSDP its state_dict() "
                  "all-gathers the shards: every process takes part)")
UNWRAPPED_FSDP_CHOSEN = ("of the model accelerator.unwrap_model() returns (its state_dict() all-gathers "
                         "the shards under FSDP, the engine the launch beside the script picks)")


def _unwrapped_by_accelerator(program: Program, receiver: ast.AST, fn: Function) -> bool:
    """`accelerator.unwrap_model(net)`, there or as what the name was bound to."""
    values = [receiver] if receiver.__class__ is ast.Call else [v for v, _ in program.values_of(receiver, fn, 1)]
    return any(v.__class__ is ast.Call and v.func.__class__ is ast.Attribute and v.func.attr == "unwrap_model"
               and "accelerator" in (last_name(v.func.value) or "").lower() for v in values)


def launched_engine(program: Program, proven: bool = False) -> str:
    """"DeepSpeed" / "FSDP" where every Accelerate launch config beside the script picks it
    (config_files.launch_engine_only), else "". proven: only where the launches written beside
    the script name such a config (config_files.engine_launched)."""
    memo = program.__dict__.setdefault("_launched_engine", {})
    if proven not in memo:
        script = next((f for f in program.files if not f.module), None)
        if script is None or script.path is None or not program.uses("accelerate"):
            memo[proven] = ""
        else:
            read = engine_launched if proven else launch_engine_only
            memo[proven] = read(script.path, script.hydra_configs) or ""
    return memo[proven]


def launched_engines(program: Program) -> set[str]:
    """The engines the Accelerate launches written beside the script name, one or more
    (config_files.engines_named); once per program."""
    memo = program.__dict__.get("_launched_engines")
    if memo is None:
        script = next((f for f in program.files if not f.module), None)
        memo = program.__dict__["_launched_engines"] = set() if (
            script is None or script.path is None or not program.uses("accelerate")) else \
            engines_named(script.path, script.hydra_configs)
    return memo


# A DeepSpeed engine's save_checkpoint(): a collective wherever the engine is one.
DEEPSPEED_SAVE = "(DeepSpeed: every rank saves its own partition and waits for the others)"


def _deepspeed_engine(program: Program, receiver: ast.AST, fn: Function, depth: int = 2) -> bool:
    """The receiver is a DeepSpeed engine: an item `deepspeed.initialize(...)` returns
    (`model_engine, opt, _, _ = deepspeed.initialize(...)`, there or in a method of the class
    for `self.<name>`), or Accelerate's `accelerator.deepspeed_engine`; or a parameter of a
    helper its callers hand such an engine (`save_checkpoint(engine, step, out_dir)`)."""
    if depth > 0 and receiver.__class__ is ast.Name and receiver.id in fn.params \
            and not fn.bindings.get(receiver.id) and fn.arguments.get(receiver.id):
        return any(given is not receiver and _deepspeed_engine(program, given, caller, depth - 1)
                   for given, caller in fn.arguments[receiver.id])
    key = dotted(receiver) or ""
    if key.endswith("deepspeed_engine"):
        return True
    for value, _ in program.values_of(receiver, fn, 2):
        if (dotted(value) or "").endswith("deepspeed_engine"):
            return True
    klass = fn.cls if fn.parent is None else None
    scopes = [fn] if isinstance(receiver, ast.Name) else \
        (list(klass.methods.values()) if key.startswith("self.") and klass is not None else [])
    if any((program.qualify(made.func, scope) or "") == "deepspeed.initialize"
           for scope in scopes for made in _unpacked_from(key, scope)):
        return True
    # `self.model, opt, _, sched = self._setup_deepspeed(opt, sched)`, a helper returning the
    # engine `deepspeed.initialize` gave it: that item of what the helper returns
    return depth > 0 and any(_deepspeed_engine(program, item, helper, depth - 1)
                             for scope in scopes for item, helper in returned_items(program, key, scope))


def returned_items(program: Program, key: str, scope: Function) -> list:
    """(returned element, helper) for each `a, key, ... = helper(...)` in scope: the element at
    key's place of each tuple the helper returns."""
    found = []
    for node in scope.own_of(ast.Assign):
        if len(node.targets) != 1 or node.targets[0].__class__ not in (ast.Tuple, ast.List) \
                or node.value.__class__ is not ast.Call:
            continue
        names = [dotted(t) for t in node.targets[0].elts]
        if key not in names:
            continue
        at = names.index(key)
        for helper in program.resolve(node.value.func, scope)[0]:
            for ret in helper.returned:
                if ret.__class__ is ast.Tuple and len(ret.elts) == len(names):
                    found.append((ret.elts[at], helper))
    return found


def engine_subclass(program: Program, receiver: ast.AST, fn: Function) -> bool:
    """The receiver is an instance of a local class derived from DeepSpeed's engine (`class
    Engine(DeepSpeedEngine)`, built by a loader the trainer keeps): its backward() reduces the
    gradients across the ranks as the engine `deepspeed.initialize` returns does."""
    klass = program.class_of(receiver, fn)
    return klass is not None and any(base.startswith("deepspeed.") and base.endswith("DeepSpeedEngine")
                                     for base in program.library_bases(klass))


def sharded_engine(program: Program) -> str:
    """"DeepSpeed" / "FSDP" when the script's own code mentions it (a plugin, a
    DistributedType, an import) in a module that configures Accelerate (_configures_accelerate),
    where the engine the run takes is chosen or asked, else "": computed once per program. (A model module's
    `deepspeed.init_inference` for generation, or a vendored transformers `generate` asking
    `is_deepspeed_zero3_enabled()`, chooses nothing for the training run: IndexTTS2's trainer.)"""
    found = program.__dict__.get("_sharded_engine")
    if found is None:
        words = set()
        for source in program.files:
            if not _configures_accelerate(source):
                continue
            for node in [*source.of(ast.Attribute), *source.of(ast.Name)]:  # a set of words: any order
                word = node.attr if isinstance(node, ast.Attribute) else getattr(node, "id", None)
                if isinstance(word, str):
                    lowered = word.lower()
                    if "deepspeed" in lowered:
                        words.add("DeepSpeed")
                    elif "fsdp" in lowered or "fullyshardeddataparallel" in lowered:
                        words.add("FSDP")  # (also the plugin by its full name: FullyShardedDataParallelPlugin)
        script = next((f for f in program.files if not f.module), None)
        if words and script is not None and program.uses("accelerate") and \
                launched_plain(script.path, script.hydra_configs):
            # (diffusers' template asks `AcceleratorState().deepspeed_plugin` for its zero-3
            # context; every launch written beside the script names a MULTI_GPU config: DDP runs)
            words = set()
        if not words and script is not None and program.uses("accelerate"):
            # `accelerate launch --config_file configs/gpu.yaml` with `distributed_type: DEEPSPEED`
            words |= launch_engines(script.path, script.hydra_configs)
        found = program.__dict__["_sharded_engine"] = " or ".join(sorted(words))
    return found


def _configures_accelerate(source) -> bool:
    """The module builds the Accelerator, or takes from Accelerate what says which engine runs
    (DistributedType, a DeepSpeed / FSDP plugin): not one that imports Accelerate's device-map
    helpers (a vendored transformers `modeling_utils`)."""
    return any(last_name(c.func) == "Accelerator" for c in source.of(ast.Call)) or any(
        (n.module or "").split(".")[0] == "accelerate" and any(
            a.name == "DistributedType" or a.name.endswith("Plugin") for a in n.names)
        for n in source.of(ast.ImportFrom))


# consolidate_state_dict() on an optimizer the source does not show being built: a collective
# where it is a sharded one (the only optimizers that have it), which the config may choose.
SHARDED_OPTIMIZER = "(every rank takes part where the optimizer is sharded: ZeroRedundancyOptimizer, OSS)"


# an FSDP forward through a name that holds a DDP model on another way (a switch between them)
FSDP_ON_ONE_WAY = " where it holds the FSDP model (another way gives it a DDP model)"


def sharded_save(op: str) -> bool:
    """The op is a collective only under an engine the source names but does not prove chosen:
    accelerator.save_state() in a script that prepares for DeepSpeed or FSDP, an optimizer's
    consolidate_state_dict() where the optimizer's class is not shown, the forward of a name that
    holds an FSDP model on one way and a DDP model on another, a DDP forward whose buffers come
    only from norm layers built under a setting."""
    return (op.startswith(("accelerator.save_state()", "accelerator.load_state()"))
            and "every process takes part" in op) or op.endswith(UNWRAPPED_FSDP) or \
        op.endswith(SHARDED_OPTIMIZER) or op.endswith(ZERO3_GATHER) or op.endswith(FSDP_ON_ONE_WAY) or \
        op.endswith(HF_FSDP_SAVE_SET) or \
        (op.startswith(DDP_FORWARD) and _BY_SETTING_MARK in op)


def through_grad_off(program: Program, op: str, call: ast.AST, fn: Function) -> str:
    """A DDP forward's op with gradients on, as seen at `call` in `fn`: the forward itself, or
    a call on the way to it (`with torch.no_grad(): evaluate()`). Where gradients are off
    there, the forward runs with them off."""
    if not (op.startswith(DDP_FORWARD) and op.endswith(_GRAD_ON)):
        return op
    off = grad_off(program, call, fn)
    return f"{op[:-len(_GRAD_ON)]} under {off} {NO_GRAD_FORWARD}" if off else op


def no_grad_forward(op: str) -> bool:
    """The op is a DDP forward with gradients off (NO_GRAD_FORWARD), also as reached through a
    helper (`... (in Trainer._forward())`)."""
    return op.startswith(DDP_FORWARD) and NO_GRAD_FORWARD in op


# The collectives' names no library uses but for a collective of its process group: not
# `reduce`, `gather`, `scatter`, `broadcast` (functools', torch's tensor ops, numpy's), nor the
# group makers.
WRAPPED_COLLECTIVES = TORCH_COLLECTIVES - {"reduce", "gather", "scatter", "broadcast"} - set(names.GROUP_CREATION)


def _torchmetrics_metric(program: Program, node: ast.AST, fn: Function) -> str:
    """The torchmetrics class a receiver was built from, unless told not to sync on compute
    (`sync_on_compute=False`, or a `dist_sync_fn` of its own); "" otherwise."""
    values = program.values_of(node, fn)
    if node.__class__ is ast.Attribute and values == [(node, fn)]:
        # `metrics.fid.compute()` of `metrics = RealismMetrics(device)`, whose constructor keeps
        # `self.fid = FrechetInceptionDistance(...)`: what the object's class stores there
        klass = program.class_of(node.value, fn)
        values = program._attr(klass, node.attr) if klass is not None else []
    for value, scope in values:
        # `torchmetrics.Accuracy(...).to(device)`: a module method that returns the metric itself
        while isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute) and \
                value.func.attr in SELF_RETURNING and isinstance(value.func.value, ast.Call):
            value = value.func.value
        if isinstance(value, ast.Call) and (program.qualify(value.func, scope) or "").startswith("torchmetrics."):
            sync = keyword(value, "sync_on_compute")
            # (a switch in its place, `sync_on_compute=not args.no_sync_on_compute`, is one the
            # author added to turn the sync off where it hangs: not taken as on)
            if (sync is not None and not is_const(sync, True)) or keyword(value, "dist_sync_fn") is not None \
                    or any(kw.arg is None for kw in value.keywords):
                return ""
            return last_name(value.func) or "torchmetrics"
    return ""


# A Hugging Face Trainer's methods that run its distributed loop (training, or evaluation's gathers).
HF_TRAINER_RUNS = frozenset({"train", "evaluate", "predict"})
_HF_TRAINER_HOMES = ("transformers.", "trl.")


# A Hugging Face Trainer's save_model() where its arguments choose FSDP: the full state dict is
# gathered from every rank's shards first (FULL_STATE_DICT, Accelerate's default for FSDP 1), then
# the main process writes it - on the main process alone it waits for shards that never come.
HF_FSDP_SAVE = "(under the FSDP its arguments choose, every rank's shards are gathered first)"
# The same where only a setting the source does not show (a config value) chooses FSDP, or the
# arguments ask for FSDP 2 (whose default state dict type is sharded): a warning.
HF_FSDP_SAVE_SET = "(every rank's shards are gathered first where the trainer's arguments choose FSDP 1)"


# The same under the DeepSpeed ZeRO-3 the launch's Accelerate config chooses (`zero_stage: 3`).
HF_ZERO3_SAVE = "(under the DeepSpeed ZeRO-3 the launch's config chooses, every rank's partitions are gathered first)"


def trainer_zero3(program: Program) -> bool:
    """The Accelerate config every launch beside the script names picks DeepSpeed ZeRO stage 3
    (config_files.launched_zero_stage). Once per program."""
    found = program.__dict__.get("_trainer_zero3")
    if found is None:
        script = next((f for f in program.files if not f.module), None)
        found = program.__dict__["_trainer_zero3"] = bool(
            script is not None and script.path is not None
            and launched_zero_stage(script.path, script.hydra_configs) == 3)
    return found


def trainer_fsdp(program: Program) -> str:
    """"literal" where the script hands a Trainer's arguments FSDP as a non-empty string
    (`TrainingArguments(fsdp="full_shard auto_wrap")`, or `{"fsdp": "full_shard", ...}` spread
    into an SFTConfig), "setting" where a value the source does not show gives `fsdp=`, or the
    arguments choose FSDP 2; "" where nothing does. Once per program."""
    found = program.__dict__.get("_trainer_fsdp")
    if found is None:
        given = []
        for source in program.files:
            for call in source.of(ast.Call):
                if (last_name(call.func) or "").endswith(("Arguments", "Config")):
                    given += [kw.value for kw in call.keywords if kw.arg == "fsdp"]
            for literal in source.of(ast.Dict):
                given += [v for k, v in zip(literal.keys, literal.values) if is_const(k, "fsdp")]
        version_two = any("fsdp_version" in line and re.search(r"fsdp_version\W+2", line)
                          for source in program.files for line in source.lines)
        literal = [v for v in given if isinstance(v, ast.Constant) and isinstance(v.value, str) and v.value.strip()]
        found = "literal" if literal and not version_two else "setting" if literal or any(
            not isinstance(v, ast.Constant) for v in given) else ""
        script = next((f for f in program.files if not f.module), None)
        if not found and script is not None and script.path is not None:
            # (or the Accelerate config the launch names picks FSDP: `accelerate launch
            # --config_file configs/fsdp.yaml train.py` runs the Trainer under it; one lying
            # beside the script, no launch naming it, is a setting)
            if engine_launched(script.path, script.hydra_configs) == "FSDP" and not version_two:
                found = "literal"
            elif launch_engine_only(script.path, script.hydra_configs) == "FSDP":
                found = "setting"
        program.__dict__["_trainer_fsdp"] = found
    return found


def hf_trainer(program: Program, node: ast.AST, fn: Function) -> bool:
    """The name holds a Hugging Face Trainer: built by transformers' or trl's `...Trainer(...)`,
    or by a local class derived from one (`class TJDTrainer(Trainer)`, a subclass of that)."""
    for value, scope in program.values_of(node, fn, 2):
        if value.__class__ is not ast.Call:
            continue
        full = program.qualify(value.func, scope) or ""
        if full.startswith(_HF_TRAINER_HOMES) and full.endswith("Trainer"):
            return True
        klass = program.callee(value.func, scope) if value.func.__class__ in (ast.Name, ast.Attribute) else None
        if hf_trainer_class(program, klass):
            return True
    return False


def hf_trainer_class(program: Program, klass) -> bool:
    """A local class derived from transformers' or trl's Trainer (through local bases too)."""
    return program.is_class(klass) and any(
        (c.module.imports.get(b.split(".")[0], "") + b[len(b.split(".")[0]):]).startswith(_HF_TRAINER_HOMES)
        and b.endswith("Trainer") for c in (klass, *program.bases(klass)) for b in c.bases)


def made_by(program: Program, node: ast.AST, fn: Function, cls_name: str) -> bool:
    """The name or attribute holds an object built by `cls_name(...)`."""
    for value, scope in program.values_of(node, fn):
        if isinstance(value, ast.Call) and last_name(value.func) == cls_name:
            return True
    return False


def ddp_call(program: Program, value: ast.AST, fn: Function) -> bool:
    """`DistributedDataParallel(...)` (torch's or apex's, under any import name): both all-reduce
    the gradients in every backward."""
    return isinstance(value, ast.Call) and (ddp_class(program, value.func, fn) or _wrapped_as_ddp(program, value, fn))


def _wrapped_as_ddp(program: Program, call: ast.Call, fn: Function) -> bool:
    """torch's `wrap(model)` inside `with enable_wrap(wrapper_cls=DistributedDataParallel):` in
    the same function: the wrapper the block names, DDP here (not FSDP, enable_wrap's usual)."""
    if (program.qualify(call.func, fn) or "") not in _WRAP_CALLS or fn.node is None:
        return False
    for _, _, owner, _ in reaching._path_to(fn.node, call) or ():
        if owner.__class__ is ast.With:
            for item in owner.items:
                made = item.context_expr
                if made.__class__ is ast.Call and (program.qualify(made.func, fn) or "").endswith(
                        "fsdp.wrap.enable_wrap") and (kind := keyword(made, "wrapper_cls")) is not None:
                    return ddp_class(program, kind, fn)
    return False


# torch's auto-wrapping call, by the names it is importable under
_WRAP_CALLS = frozenset({"torch.distributed.fsdp.wrap.wrap", "torch.distributed.fsdp.wrap"})


def ddp_class(program: Program, node: ast.AST, fn: Function) -> bool:
    """The name of DistributedDataParallel (torch's or apex's, under any import name), or of a
    subclass of it: what `DDP(...)` builds and what `isinstance(model, DDP)` tests."""
    full = program.qualify(node, fn) or ""
    if not full.endswith("DistributedDataParallel") and "." in full:
        full = _reexported(program, full)
    # (OpenMMLab's MMDistributedDataParallel, mmcv's or mmengine's, is torch's subclass; SageMaker's
    # smdistributed one keeps torch's interface, no_sync included, on its own collectives)
    if full.endswith("DistributedDataParallel") and full.startswith(("torch.", "apex.parallel.", "mmcv.", "mmengine.",
                                                                      "smdistributed.dataparallel.")):
        return True
    # a subclass of its own (`class DDP(DistributedDataParallel): def get_module(...)`, GEqTrain)
    klass = program.callee(node, fn) if isinstance(node, (ast.Name, ast.Attribute)) else None
    # (also under its import alias: `class DDPPassthrough(DDP)`, OpenGait's)
    if program.is_class(klass) and (any(
            b.rsplit(".", 1)[-1] == "DistributedDataParallel" for c in (klass, *program.bases(klass)) for b in c.bases)
            or any(b.startswith("torch.") and b.endswith(".DistributedDataParallel") for b in program.library_bases(klass))):
        return True
    # a class made in fn over a base fn picks (`ddp_class = parallel.DistributedDataParallel` on
    # one side, a legacy wrapper on the other; `class _Wrapped(ddp_class): ...`, old fairseq)
    if program.is_class(klass) and any(
            base.__class__ is ast.Name and any(value.__class__ is ast.Attribute and ddp_class(program, value, fn)
                                               for _, value in fn.bindings.get(base.id, ()))
            for base in klass.node.bases):
        return True
    # a local name the class is bound to first (`ddp_module = torch.nn.parallel.DistributedDataParallel`,
    # then `model = ddp_module(model, ...)`: SelfOcc)
    if node.__class__ is ast.Name and klass is None and fn.bindings.get(node.id):
        return any(value is not node and value.__class__ is ast.Attribute and ddp_class(program, value, scope)
                   for value, scope in program.values_of(node, fn, 1))
    return False


def _reexported(program: Program, full: str, hops: int = 3) -> str:
    """The name a local module's attribute stands for when that module only imports it:
    `ext_dist.DDP`, where extend_distributed.py did `from torch.nn.parallel import
    DistributedDataParallel as DDP`, is torch's DistributedDataParallel. Once per name."""
    known = program.__dict__.setdefault("_reexported", {})
    if full in known:
        return known[full]
    asked = full
    for _ in range(hops):
        owner, _, attr = full.rpartition(".")
        module = program._module(owner) if owner else None
        target = module.imports.get(attr) if module is not None else None
        if not target or target == full:
            break
        full = target
    if getattr(program, "_phase", "") != "arguments":  # a module deferred then is read later
        known[asked] = full
    return full


def prepared_ddp(program: Program, target: ast.AST, fn: Function, line: int,
                 depth: int = 2) -> Optional[tuple[ast.Call, Function]]:
    """`model, opt, loader = accelerator.prepare(model, opt, loader)` (or `self.net, ... =
    self.accelerator.prepare(net, ...)` in a method of fn's class): in a run of several processes
    Accelerate hands back the module wrapped in DistributedDataParallel (broadcast_buffers on).
    Returned as the `DistributedDataParallel(<module>)` it stands for, the module the argument at
    the name's place; a plain name only where fn prepares it before the line."""
    key = dotted(target)
    if not key:
        return None
    klass = fn.cls if fn.parent is None else None
    scopes = [fn] if isinstance(target, ast.Name) else \
        (list(klass.methods.values()) if key.startswith("self.") and klass is not None else [])
    for scope in scopes:
        for node in _prepares(scope):
            if isinstance(target, ast.Name) and node.lineno >= line:
                continue
            held = node.targets[0]
            elts = held.elts if isinstance(held, (ast.Tuple, ast.List)) else [held]
            place = next((i for i, e in enumerate(elts) if dotted(e) == key), None)
            if place is None or place >= len(node.value.args) or isinstance(node.value.args[place], ast.Starred):
                continue
            if isinstance(target, ast.Name) and any(node.lineno < at < line and unwrapped_from(value) is not None
                                                    for at, value in fn.bindings.get(target.id, ())):
                continue  # (`model = model.module` between the prepare and the use: the module itself)
            memo = scope.__dict__.setdefault("_prepared_as_ddp", {})
            made = memo.get((id(node), place))
            if made is None:
                given = node.value.args[place]
                # (a DataLoader prepared - `loader = accelerator.prepare(loader)` - comes back a
                # loader: no module, no wrapper)
                loader = any(v.__class__ is ast.Call and loader_call(program, v, where)
                             for v, where in program.values_of(given, scope, 1))
                made = memo[(id(node), place)] = False if loader else ast.copy_location(ast.Call(
                    func=ast.Name(id="DistributedDataParallel", ctx=ast.Load()), args=[given], keywords=[]), node.value)
            if made is False:
                continue
            return made, scope
    if isinstance(target, ast.Name) and depth > 0:
        # `model_unwrapped = model` (a copy of the name, not `accelerator.unwrap_model(model)`)
        copies = [(line_at, value) for line_at, value in fn.bindings.get(target.id, []) if line_at < line]
        if copies and all(isinstance(v, ast.Name) for _, v in copies):
            line_at, value = copies[-1]
            return prepared_ddp(program, value, fn, line_at, depth - 1)
    return None


def _prepares(scope: Function) -> list[ast.Assign]:
    """The function's `... = accelerator.prepare(...)` assignments, found once (asked at every call
    a forward may be)."""
    found = scope.__dict__.get("_prepares")
    if found is None:
        found = scope.__dict__["_prepares"] = [
            node for node in scope.own
            if node.__class__ is ast.Assign and len(node.targets) == 1 and isinstance(node.value, ast.Call)
            and isinstance(node.value.func, ast.Attribute) and (
                (node.value.func.attr == "prepare" and "accelerator" in (dotted(node.value.func.value) or "").lower())
                or (node.value.func.attr in ("setup", "setup_module")
                    and "fabric" in (dotted(node.value.func.value) or "").lower() and _fabric_ddp(scope)))]
    return found


def _fabric_ddp(scope: Function) -> bool:
    """Every `Fabric(...)` of the file builds it with a DDP strategy (`strategy="ddp"`, or
    "ddp_spawn", "ddp_find_unused_parameters_true"): `model, opt = fabric.setup(model, opt)`
    hands back the module wrapped in DistributedDataParallel, as Accelerate's prepare does."""
    made = [c for c in scope.file.of(ast.Call) if last_name(c.func) == "Fabric"]
    strategies = [keyword(c, "strategy") for c in made]
    return bool(made) and all(s is not None and s.__class__ is ast.Constant and isinstance(s.value, str)
                              and s.value.startswith("ddp") for s in strategies)


# A forward of a FullyShardedDataParallel model (torch's or fairscale's): every forward
# all-gathers the parameters each rank holds a shard of, with gradients on or off.
FSDP_FORWARD = "forward of the FSDP model"
FSDP_CLASSES = ("torch.distributed.fsdp.", "fairscale.nn.")


def fsdp_builder(full: str) -> bool:
    """A full name that builds an FSDP model: FSDP1's class (torch's, fairscale's) or FSDP2's
    `fully_shard`."""
    return full.startswith(FSDP_CLASSES) and full.endswith(("FullyShardedDataParallel", "fully_shard"))


def _fsdp_model(program: Program, call: ast.Call, fn: Function) -> bool:
    """The called name or `self.attr` holds an `FSDP(...)` built before the call (there, or
    handed in), not told `sharding_strategy=NO_SHARD` (which shards nothing)."""
    return _fsdp_held(program, call.func, call.lineno, fn)


def _fsdp_held(program: Program, func: ast.AST, line: int, fn: Function, units: bool = False,
               depth: int = 2) -> bool:
    """The name (or `self.attr`) holds an FSDP model built before `line`. units: only one whose
    wrapped module holds FSDP units of its own (an `auto_wrap_policy`): what its `.module` is."""
    if not (isinstance(func, ast.Name) or (isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name)
                                           and func.value.id == "self")):
        return False
    for value, scope in program.values_of(func, fn, 3):
        if scope is fn and getattr(value, "lineno", 0) >= line and isinstance(func, ast.Name):
            continue  # `model = FSDP(model)` below this call
        if isinstance(value, ast.IfExp) and depth > 0:
            # `raw_model = model.module if ddp else model` (llama2.c's fine-tuning): the side a
            # distributed run takes, or either side where the test says nothing of that
            side = program._distributed_side(value, scope)
            value_sides = [side] if side is not None else [value.body, value.orelse]
            if any(_fsdp_side(program, s, line, scope, units, depth - 1) for s in value_sides):
                return True
            continue
        if isinstance(value, ast.Attribute) and value.attr == "module" and value is not func and depth > 0:
            if _fsdp_held(program, value.value, line, scope, True, depth - 1):
                return True
            continue
        if isinstance(value, ast.Call):
            if _fsdp_call(program, value, scope, units):
                return True
            targets = program.resolve(value.func, scope)[0]
            if any(_wraps_in_fsdp(program, target) for target in targets):
                return True
            if depth > 0 and any(_returns_fsdp(program, target, units, depth - 1) for target in targets):
                return True  # `model = setup_fsdp(cfg)` whose `return FSDP(model, ...)`
    return False


def _returns_fsdp(program: Program, helper: Function, units: bool, depth: int) -> bool:
    """A local helper (not a constructor) that returns an FSDP model: `return FSDP(...)`, or a
    name it bound to one. Answered once per helper and kind (every call through it asks)."""
    if helper.node is None or isinstance(helper.node, ast.Module) or helper.name == "__init__":
        return False
    memo = program.__dict__.setdefault("_returns_fsdp", {})
    key = (id(helper), units)
    if key not in memo:
        memo[key] = False  # (a helper that returns its own call's result: not round again)
        end = getattr(helper.node, "end_lineno", 0) + 1
        memo[key] = any(
            _fsdp_held(program, ret, end, helper, units, depth) if isinstance(ret, ast.Name) else
            isinstance(ret, ast.Call) and _fsdp_call(program, ret, helper, units)
            for ret in helper.returned)
    return memo[key]


def _fsdp_call(program: Program, call: ast.Call, fn: Function, units: bool) -> bool:
    """`FullyShardedDataParallel(...)` (torch's or fairscale's) that shards (not NO_SHARD); units:
    one whose wrapped module holds FSDP units of its own (an `auto_wrap_policy`)."""
    full = program.qualify(call.func, fn) or ""
    return full.endswith("FullyShardedDataParallel") and full.startswith(FSDP_CLASSES) and \
        "NO_SHARD" not in text(keyword(call, "sharding_strategy") or ast.Constant(None), 80) and \
        (not units or not is_const(keyword(call, "auto_wrap_policy") or ast.Constant(None), None))


def _fsdp_side(program: Program, side: ast.AST, line: int, fn: Function, units: bool, depth: int) -> bool:
    """One side of a choice holds an FSDP model: a name that does, or the `.module` of one whose
    wrapped module holds FSDP units (an `auto_wrap_policy` made them: their state_dict and
    forwards all-gather as the root's do)."""
    if isinstance(side, ast.Attribute) and side.attr == "module":
        return _fsdp_held(program, side.value, line, fn, True, depth)
    return _fsdp_held(program, side, line, fn, units, depth)


def _wraps_in_fsdp(program: Program, helper: Function) -> bool:
    """A local helper that wraps the model's parts in FSDP units under `with
    enable_wrap(wrapper_cls=FSDP, ...)` (`model.add_module(name, wrap(child))`) and returns the
    model: the root is no FSDP object, but its state_dict() runs every unit's, which all-gathers
    (FULL_STATE_DICT is the default). Answered once per helper (asked of every call whose
    callee holds a helper's result)."""
    memo = program.__dict__.setdefault("_wraps_in_fsdp", {})
    if id(helper) not in memo:
        memo[id(helper)] = _enable_wrap_fsdp(program, helper)
    return memo[id(helper)]


def _enable_wrap_fsdp(program: Program, helper: Function) -> bool:
    for node in walk(helper.node):
        if isinstance(node, ast.With):
            for item in node.items:
                ctx = item.context_expr
                wrapper = keyword(ctx, "wrapper_cls") if isinstance(ctx, ast.Call) and \
                    last_name(ctx.func) == "enable_wrap" else None
                if wrapper is not None and fsdp_builder(program.qualify(wrapper, helper) or ""):
                    return True
    return False


def _parameter_reaches(fn: Function, name: ast.Name) -> bool:
    """A parameter of fn that the function rebinds, where some way to this use passes no
    binding: the value the callers hand in is what the use may see."""
    if fn.node is None or not isinstance(fn.node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return False
    reached = reaching.reaching_values(fn.node, name.id, name, params=True)
    return reached is not None and any(isinstance(value, ast.arg) for value in reached)


def _one_ray_worker(program: Program) -> bool:
    """Every Ray Train run the source configures has one worker (`ScalingConfig(num_workers=1)`,
    a tuning sweep's trials, each a single process): no other worker waits in report()."""
    found = program.__dict__.get("_one_ray_worker")
    if found is None:
        configs = [c for f in program.functions for c in f.own_calls if last_name(c.func) == "ScalingConfig"]
        found = program.__dict__["_one_ray_worker"] = bool(configs) and all(
            is_const(keyword(c, "num_workers"), 1) for c in configs)
    return found


def ddp_model(program: Program, call: ast.Call, fn: Function) -> Optional[tuple[ast.Call, Function]]:
    """The DDP(...) call that a called name or `self.attr` holds, if any: built there or
    returned by a local helper (`model = build_model(cfg)` ending in `return DDP(net)`)."""
    func = call.func
    if isinstance(func, ast.Name):
        found = program.lookup(func.id, fn)
        own = [value for _, value, scope in found if scope is fn]
        reached = reaching.reaching_values(fn.node, func.id, func) if len(own) > 1 else None
        for line, value, scope in found:
            # `model = DDP(model)` in this very function: only calls after it are DDP forwards
            if scope is fn and line >= call.lineno:
                continue
            if reached is not None and scope is fn and not any(value is r for r in reached):
                # (`del model; model = GPT(conf)` after training, then `model(x)` on rank 0: the
                # DDP binding above it never reaches this call)
                continue
            wrapped = _ddp_made(program, value, scope) or _same_object(program, func.id, value, scope)
            if wrapped is None and scope is fn:
                # `model = self.model` then `model(x)` (GIMM-VFI's trainers): the field's DDP; or
                # either field of `self.model_ema if "ema" in mode else self.model`
                for side in (value.body, value.orelse) if value.__class__ is ast.IfExp else (value,):
                    if side.__class__ is ast.Attribute and side.value.__class__ is ast.Name and side.value.id == "self":
                        wrapped = wrapped or ddp_model(
                            program, ast.copy_location(ast.Call(func=side, args=[], keywords=[]), call), fn)
            if wrapped is not None:
                return wrapped
        for scope in {id(s): s for _, _, s in found if s is not fn}.values():
            wrapped = prepared_ddp(program, func, scope, 1 << 30)  # a global the module prepares
            if wrapped is not None:
                return wrapped
        if not found or _parameter_reaches(fn, func):
            # a parameter: what the callers hand it, a step further than a name's own value (a
            # tester's `forward_fn(x, self._module)` holding the DDP model its constructor was given);
            # also one the function rebinds on one side only (`if n_gpu > 1: model =
            # DataParallel(model)` in an evaluate() handed the DDP model): the argument reaches
            for value, scope in program.values_of(func, fn, 4):
                wrapped = _ddp_made(program, value, scope)
                if wrapped is not None:
                    return wrapped
                # `model, optimizer, loader = build(args)` where build returns the wrapped
                # model first: that element of the tuples the helper returns
                unpacked = program.unpacked(value.id, scope) if isinstance(value, ast.Name) else \
                    program.unpacked_attribute(value.attr, scope) if _self_field(value) else ()
                if unpacked:
                    for held, where in unpacked:
                        for inner, place in program.values_of(held, where, 2):
                            wrapped = _ddp_made(program, inner, place)
                            if wrapped is not None:
                                return wrapped
            for value, scope in program._passed(func.id, fn):  # `sampler.sample(model=prepared_model)`
                wrapped = prepared_ddp(program, value, scope, value.lineno) \
                    if isinstance(value, (ast.Name, ast.Attribute)) else None
                if wrapped is not None:
                    return wrapped
        for value, scope in _iterated_elements(program, func, fn):
            wrapped = _ddp_held(program, value, scope, value)
            if wrapped is not None:
                return wrapped
        return prepared_ddp(program, func, fn, call.lineno)
    if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and func.value.id == "self":
        prepared = prepared_ddp(program, func, fn, call.lineno)
        if prepared is not None:
            return prepared
        for value, scope in program.values_of(func, fn, depth=1):
            wrapped = _ddp_made(program, value, scope)
            if wrapped is None and isinstance(value, (ast.Name, ast.Subscript, ast.Call)) and scope.parent is None \
                    and scope.cls is not None:
                # `self.model = model` in __init__: what its callers (a factory's `cls(...)`) pass;
                # a step further for one handed on (`fit_one_epoch(model_train)` ->
                # `eval_callback.on_epoch_end(epoch, model_train)` -> `self.net = model_eval`);
                # also `self.net = kwargs["net"]` of a `def __init__(self, **kwargs)`: the `net=`
                # each construction passes
                for arg, caller in program.values_of(value, scope, depth=3):
                    wrapped = wrapped or _ddp_made(program, arg, caller)
            if wrapped is not None:
                return wrapped
        # `self.model, self.optimizer = self.loading()` with loading() returning the wrapped
        # model first (signdagc's Processor)
        for value, scope in program.unpacked_attribute(func.attr, fn):
            wrapped = _ddp_made(program, value, scope)
            if wrapped is not None:
                return wrapped
    return None


# Module methods that return the module itself: `model = model.train()` keeps the DDP wrapper.
SELF_RETURNING = frozenset({"train", "eval", "to", "cuda", "cpu", "float", "half", "bfloat16", "double",
                            "requires_grad_"})


def _same_object(program: Program, name: str, value: ast.AST, fn: Function) -> Optional[tuple[ast.Call, Function]]:
    """`model = model.train()` on a parameter: the DDP call the callers' argument holds."""
    if not (isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute) and value.func.attr in SELF_RETURNING
            and isinstance(value.func.value, ast.Name) and value.func.value.id == name):
        return None
    for arg, caller in program._passed(name, fn):
        for held, scope in program.values_of(arg, caller):
            wrapped = _ddp_made(program, held, scope)
            if wrapped is not None:
                return wrapped
    return None


def _ddp_made(program: Program, value: ast.AST, fn: Function, depth: int = 2) -> Optional[tuple[ast.Call, Function]]:
    """The DDP(...) call a value is, or that the local helper it calls returns (the side a
    conditional expression takes where fn pins its test: `m if opt.single_gpu else DDP(m)`
    after `opt.single_gpu = False`)."""
    if ddp_call(program, value, fn):
        return value, fn
    if value.__class__ is ast.IfExp and fn.node is not None:
        side = _pinned_side(value, fn)
        if side is not None:
            return _ddp_made(program, side, fn, depth)
    if isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute) and value.func.attr in SELF_RETURNING \
            and ddp_call(program, value.func.value, fn):
        return value.func.value, fn  # `DistributedDataParallel(model, ...).to(device)` (CompTransTTS)
    if depth > 0 and isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute) and \
            value.func.attr in SELF_RETURNING and isinstance(value.func.value, ast.Name):
        # `self.model = model.to(self.device)` on a trainer handed the wrapper: what the name
        # holds, the callers' argument for a parameter (DLMC's BaseTrainer)
        for held, scope in program.values_of(value.func.value, fn, 2):
            # (a name the values stop at - the module's `model` a constructor was handed - once more)
            for inner, where in (program.values_of(held, scope, 1) if held.__class__ is ast.Name else [(held, scope)]):
                found = _ddp_made(program, inner, where, depth - 1) if inner is not value else None
                if found is not None:
                    return found
    if depth > 0 and isinstance(value, ast.Call):
        target = program.callee(value.func, fn)
        targets = [target] if program.is_function(target) else \
            (program.resolve(value.func, fn)[0] if isinstance(value.func, ast.Attribute) else [])
        # a helper, or a method of an object the source builds (`backend.wrap(net)` ending in
        # `return DDP(m)`)
        for target in targets:
            if isinstance(target.node, ast.Module) or target.name == "__init__":
                continue
            for ret in target.returned:
                for inner, scope in program.values_of(ret, target, 2):
                    found = _ddp_made(program, inner, scope, depth - 1)
                    if found is not None:
                        return found
    return None


def holds_no_ddp(program: Program, value: ast.AST, fn: Function, depth: int = 3) -> bool:
    """The value is no DistributedDataParallel wrapper on any way it can be bound: a name's
    bindings that reach it (reaching.py: weaver rebinds `model = orig_model.to(dev)` before
    rank 0 tests), moved with `.to()` or put in a one-process DataParallel, down to values
    ddp_model would not take for a DDP call either (`_ddp_made`). False where it cannot tell."""
    if isinstance(value, ast.Name):
        bound = reaching.reaching_values(fn.node, value.id, value, unpacked=True)
        if bound:
            return all(holds_no_ddp(program, v, fn, depth) for v in bound)
        if depth <= 0:
            return False
        # a parameter, or bound in a way reaching.py does not follow: every binding the name
        # has (program._reaching leaves out those written below it)
        values = [(v, scope) for v, scope in program.values_of(value, fn, 2) if v is not value]
        return bool(values) and all(holds_no_ddp(program, v, scope, depth - 1) for v, scope in values)
    if isinstance(value, ast.Attribute) and value.attr == "module":
        return True
    if not isinstance(value, ast.Call):
        return False
    if isinstance(value.func, ast.Attribute) and value.func.attr in SELF_RETURNING:
        return holds_no_ddp(program, value.func.value, fn, depth)
    if (program.qualify(value.func, fn) or "").endswith(".DataParallel") and value.args:
        return holds_no_ddp(program, value.args[0], fn, depth)
    if depth > 0 and any(not holds_no_ddp(program, given, fn, depth - 1)
                         for given in _handed_back(program, value, fn)):
        return False  # `model, loss = train_one_epoch(model, ...)` returning the model it was given
    return _ddp_made(program, value, fn) is None


def _handed_back(program: Program, call: ast.Call, fn: Function) -> list[ast.AST]:
    """The arguments of a call that the local function it runs returns as they came (`return
    model, loss`, `return model`): what the caller binds from the result holds them."""
    found = []
    for target in program.resolve(call.func, fn)[0]:
        if target.node is None or isinstance(target.node, ast.Module):
            continue
        for returned in target.returned:
            for item in (returned.elts if isinstance(returned, ast.Tuple) else [returned]):
                if isinstance(item, ast.Name) and item.id in target.params and not target.bindings.get(item.id):
                    given = program.handed(target, item.id, call, fn)
                    if given is not None:
                        found.append(given)
    return found


def built_class(program: Program, func: ast.AST, fn: Function):
    """What a call's name reaches (program.callee), and where that is nothing but the call
    resolves to a local class's constructor through a package's names (`ppgs.model.Transformer()`,
    `penn.data.Dataset(...)`), that class."""
    target = program.callee(func, fn)
    if target is None and func.__class__ is ast.Attribute:
        init = next(iter(program.resolve(func, fn)[0]), None)
        if program.is_function(init) and init.name == "__init__" and init.cls is not None:
            return init.cls
        if program.is_function(init):
            return program.property_class(init) or target  # `self.dataset_cls(...)` of a property
    return target


def _content_first(program: Program, call: ast.Call, fn: Function) -> bool:
    """`fabric.save(checkpoint, path)` with the state dict first: Fabric's API before 2.0
    (`save(content, filepath)`), which handed the strategy the save (DDP's writes on rank 0) and
    ran no barrier; 2.0 made it `save(path, state)` and ends in a barrier."""
    if call.func.attr != "save" or len(call.args) < 2:
        return False
    # (a name also bound to what a resume loads, `checkpoint = torch.load(path)`: a dict either way)
    values = [v for v, _ in program.values_of(call.args[0], fn)]
    dicts = [v for v in values if v.__class__ is ast.Dict or (v.__class__ is ast.Call and last_name(v.func) == "dict")]
    return bool(dicts) and not any(_path_like(v) for v in values)


def _path_like(node: ast.AST) -> bool:
    """A file's path as written: a string, an f-string, `os.path.join(...)`, `Path(...)`, `a / b`."""
    return (node.__class__ is ast.Constant and isinstance(node.value, str)) or node.__class__ is ast.JoinedStr or (
        node.__class__ is ast.BinOp and node.op.__class__ is ast.Div) or (
        node.__class__ is ast.Call and last_name(node.func) in ("join", "Path", "PurePath", "abspath", "format"))


# The most kinds of model a list the script picks one from (`nets[i]`) is read for.
LISTED_KINDS = 64


def has_buffers(program: Program, ddp: ast.Call, fn: Function) -> bool:
    """The wrapped module visibly holds buffers that DDP broadcasts (broadcast_buffers on)."""
    flag = keyword(ddp, "broadcast_buffers")
    if flag is not None and not truthy(flag):
        return False
    if (program.qualify(ddp.func, fn) or "").startswith("apex."):
        return False  # apex's DistributedDataParallel syncs no buffers in its forward
    # (the module handed by place or by name: `DistributedDataParallel(module=net, ...)`)
    wrapped = ddp.args[0] if ddp.args else keyword(ddp, "module")
    if wrapped is None:
        return False
    return _buffered(program, wrapped, fn, 4, set())


def _buffered(program: Program, node: ast.AST, fn: Function, depth: int, seen: set) -> bool:
    if depth <= 0:
        return False
    # each (value, scope) once per depth: `model = DDP(model)`, `model = amp.initialize(model)`...
    # each refer back to every other binding of `model`, which without this grew exponentially
    # (a copied Trainer.train: 105,000 visits, 4 s); a state seen at this depth or deeper found
    # nothing, or the search would have returned already
    if any((id(node), id(fn), d) in seen for d in range(depth, depth + 8)):
        return False
    seen.add((id(node), id(fn), depth))
    if isinstance(node, ast.Name) and program.lookup(node.id, fn):
        # a parameter the function also rebinds (`model = DDP(model)`): the argument wrapped is
        # what the callers passed in, which the local binding hides from values_of
        if any(_buffered(program, value, caller, depth - 1, seen)
               for value, caller in program._passed(node.id, fn)):
            return True
    values = program.values_of(node, fn)
    if isinstance(node, ast.Name):
        # `model, opt = get_model(rank)`: the item the factory returns for it (CompTransTTS)
        values = [*values, *program.unpacked(node.id, fn)]
    for value, scope in values:
        if program.off_as_launched(value, scope):
            continue  # (`if args.backbone == "PathAgents": model = PathAgents(...)`, another backbone launched)
        if isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute) and \
                value.func.attr in SELF_RETURNING:  # `return model.eval()`: the module itself
            if _buffered(program, value.func.value, scope, depth - 1, seen):
                return True
            continue
        if isinstance(value, ast.Call) and last_name(value.func) == "convert_sync_batchnorm" and value.args:
            # `SyncBatchNorm.convert_sync_batchnorm(model)` swaps the BatchNorms the model has and
            # adds none: buffered as the model it is handed (DreamDiffusion's MAE has none)
            if _buffered(program, value.args[0], scope, depth - 1, seen):
                return True
            continue
        body = text(value, 100000)
        if any(m in body for m in BUFFER_MARKERS):
            return True
        if isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute) and \
                value.func.attr in ("from_pretrained", "from_config"):
            # `model_class.from_pretrained(path)`: an instance of the class the receiver names,
            # or of the family the checkpoint's name says (an Auto class)
            owner = built_class(program, value.func.value, scope)
            own = program.is_class(owner) and all(
                b.startswith("torch.") or "." not in b for b in program.library_bases(owner))
            # (not for a class of the script's own deriving from no library model, whose
            # from_pretrained loads weights into its own layers: `BertTextModel.from_pretrained(
            # "bert_model")` of a re-written BERT holds what that class builds, not HF's buffers)
            if _buffered(program, value.func.value, scope, depth - 1, seen) or \
                    (not own and _buffered_checkpoint(program, value, scope)):
                return True
            # (the project's own model class, `XLMR_PMR.from_pretrained(path)`: what it builds)
            if program.is_class(owner) and _class_buffered(program, owner, seen):
                return True
        full = (program.qualify(value.func, scope) or "") if isinstance(value, ast.Call) else \
            (program.qualify(value, scope) or "") if isinstance(value, (ast.Name, ast.Attribute)) else ""
        if _buffered_zoo(full):
            return True
        if isinstance(value, ast.Call) and _zoo_by_name(program, value.func, scope):
            return True
        if _buffered_transformer(full, program):
            return True
        if value.__class__ is ast.Subscript:
            # `nets[i]` of `nets = [resnet18(), vgg16(), mobilenet_v2(), ...]`, a benchmark's loop
            # over a list of models: they stand for the one picked as most of them are
            items = [(item, owner) for listed, owner in program.values_of(value.value, scope)
                     if listed.__class__ in (ast.List, ast.Tuple) for item in listed.elts]
            if _mostly_buffered(program, items, depth, seen):
                return True
        if isinstance(value, ast.Name):  # unpacked from a call the program does not resolve
            if any(_buffered(program, v, s, depth - 1, seen)
                   for v, s in [*program.unpacked(value.id, scope), *_unpacked_dispatch(program, value.id, scope)]):
                return True
            # (or a name of another scope where values_of stopped following: the trainer's
            # `self.model` handed `model` by the script's main, `model = config.init_obj(...)`)
            if value is not node and scope is not fn and _buffered(program, value, scope, depth - 1, seen):
                return True
        if isinstance(value, ast.Call) and value.func.__class__ is ast.Call:
            # `Model()()`: a factory that returns a builder (`return lambda: Wrapper([Conv(),
            # Transformer()])`), called at once: what the builder's body builds (ppgs' models)
            for maker in program.resolve(value.func.func, scope)[0]:
                if maker.node is not None and not isinstance(maker.node, ast.Module) and any(
                        ret.__class__ is ast.Lambda and _buffered(program, ret.body, maker, depth - 1, seen)
                        for ret in maker.returned):
                    return True
        if isinstance(value, ast.Call) and value.func.__class__ is ast.Name and \
                _unpacked_makers_buffered(program, value, scope, depth, seen):
            return True
        if isinstance(value, ast.Call):
            if _picked_buffered(program, _instantiated(program, value, scope), seen):
                return True  # (the classes a Hydra config key names: they stand for it as most are)
            if value.func.__class__ is ast.Attribute and value.args and value.args[0].__class__ is ast.Constant and \
                    _picked_buffered(program, program._module_factory_classes(value, scope), seen):
                return True  # (`config.init_obj("arch", module_arch)`: the classes the configs name)
            picked = _eval_picks(program, value.func, scope)
            if picked and 2 * sum(
                    _class_buffered(program, k, seen) if program.is_class(k)
                    else any(_buffered(program, ret, k, depth - 1, seen) for ret in k.returned)
                    for k in picked) >= len(picked):
                return True  # (a config picks one of them: they stand for it as most of them are)
            for target in _dispatched(program, value.func, scope):
                if (program.is_class(target) and _class_buffered(program, target, seen)) or \
                        (program.is_function(target) and any(
                            _buffered(program, ret, target, depth - 1, seen) for ret in target.returned)):
                    return True
            if _picked_buffered(program, _looked_up_classes(program, value.func, scope), seen):
                return True  # (a name looked up at run time picks one: they stand for it as most are)
            if value.func.__class__ is ast.Name and program.symbol(value.func.id, scope) is None and \
                    _picked_buffered(program, [t.cls for t in program.resolve(value.func, scope)[0]
                                               if t.name == "__init__" and t.cls is not None], set()):
                # (`model_cls = select_model(kind)`, a helper picking a class: those it may return;
                # judged afresh - the classes the lookups above just visited are marked seen)
                return True
            if _picked_buffered(program, [k for k in program.attribute_of_loaded(value.func, scope) if program.is_class(k)],
                                seen):
                return True  # (`Model = import_module(cfg.model_module_path).Model`: the classes the configs name)
            target = built_class(program, value.func, scope)
            if program.is_class(target) and _class_buffered(program, target, seen,
                                                            _construction_constants(program, target, value, scope)):
                return True
            if program.is_function(target) and target.cls is None:
                # `build_from_cfg(cfg, MODEL)` returning `obj_cls(cfg)` of `obj_cls =
                # registry.get(cfg.TYPE)`: one of the classes registered in the table this call
                # hands in, which a config picks; the table stands for them as most of them are
                # (POEM's four models, two with BatchNorm backbones)
                picked = [k for ret in target.returned if ret.__class__ is ast.Call
                          for k in _registry_picks(program, ret.func, target, value, scope)]
                if _picked_buffered(program, picked, seen):
                    return True
            if target is None and value.func.__class__ is ast.Attribute:
                # `self._get_net(name)`: a method of the object's class that returns the network
                # it builds (a volume classifier's own factory, one import per architecture)
                target = next((m for m in program.resolve(value.func, scope)[0]
                               if program.is_function(m) and m.name != "__init__"), None)
            if program.is_function(target):
                for ret in target.returned:
                    if _buffered(program, ret, target, depth - 1, seen):
                        return True
            # the modules handed to its constructor, by position or keyword (`NeRFRender(
            # embedder=PositionalEncoding(...) if n > 0 else None, sampler=Sampler(...))`)
            for arg in [*value.args, *(k.value for k in value.keywords)]:
                # (and each module of a list handed in: `Wrapper([Conv1d(...), Transformer()])`)
                for part in ([arg.body, arg.orelse] if isinstance(arg, ast.IfExp) else
                             arg.elts if isinstance(arg, (ast.List, ast.Tuple)) else [arg]):
                    if _buffered(program, part, scope, depth - 1, seen):
                        return True
    return False


# Numbers drawn from a process's global random streams (Python's, numpy's, torch's), by
# qualified name: what a test can decide on (`if random.random() < p:`)...
SCALAR_DRAWS = frozenset({"random.random", "random.uniform", "random.randint", "random.randrange", "random.choice",
                          "numpy.random.rand", "numpy.random.random", "numpy.random.uniform", "numpy.random.randint",
                          "numpy.random.choice", "numpy.random.random_sample", "torch.rand", "torch.randint"})
# ...and every draw from them, samples and shuffles too: what a dataset may draw instead of
# reading the index it is handed
GLOBAL_DRAWS = SCALAR_DRAWS | {"random.choices", "random.sample", "random.shuffle", "random.gauss",
                               "numpy.random.randn", "numpy.random.normal", "numpy.random.permutation",
                               "numpy.random.shuffle", "torch.randn", "torch.randperm", "torch.normal",
                               "torch.multinomial"}


def _eval_picks(program: Program, func: ast.AST, fn: Function) -> list:
    """`eval(self.arch + "_sparse_" + self.dataset_type)(...)`: the local classes and model
    factories the module imports or defines whose names hold the string's constant parts, in
    order (resnet_56_sparse_cifar10, VGG_16_bn_sparse_cifar10, ...): the names the configured
    one is built from. Likewise `getattr(models, cfg.NAME)(...)`: the classes the package holds."""
    if isinstance(func, ast.Call) and isinstance(func.func, ast.Name) and func.func.id == "getattr" \
            and len(func.args) == 2 and not isinstance(func.args[1], ast.Constant) and not program.lookup("getattr", fn):
        # `getattr(models, cfg.NAME)(**params)` over a package of the project's own (se-cff's
        # `from components import models`): any model class the package holds or re-exports
        owner = program._callee_symbol(func.args[0], fn)
        return _module_classes_seen(program, owner) if owner.__class__.__name__ == "Module" else []
    if not (isinstance(func, ast.Call) and isinstance(func.func, ast.Name) and func.func.id == "eval"
            and len(func.args) == 1 and not program.lookup("eval", fn)):
        return []
    parts: list[str] = []
    keys = {id(n) for sub in walk(func.args[0]) if isinstance(sub, ast.Subscript) for n in walk(sub.slice)}
    for node in walk(func.args[0]):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value and id(node) not in keys:
            parts.append(node.value)
        elif not isinstance(node, (ast.BinOp, ast.Add, ast.JoinedStr, ast.FormattedValue, ast.Name, ast.Attribute,
                                   ast.Load, ast.Subscript, ast.Constant)):
            return []  # a call or anything else inside: not a name put together from settings
    module = fn.module
    if not parts:
        # `eval(model_cfg["NAME"])(...)` (DELIVER-style segmentation trainers) with the models
        # star-imported (`from semseg.models import *`): a config names one of the model classes
        # the module sees, any of them
        return _module_classes_seen(program, module)
    pattern = re.compile(".*".join(re.escape(p) for p in parts))
    names = [n for n in (*module.imports, *module.classes, *module.functions) if pattern.search(n)]
    found = []
    for name in names:
        # (an imported name read from its module: a quiet one is read for it)
        target = module.classes.get(name) or module.functions.get(name) or \
            (program.full_symbol(module.imports[name]) if name in module.imports else None)
        if (program.is_class(target) or program.is_function(target)) and target not in found:
            found.append(target)
    return found


def _looked_up_classes(program: Program, func: ast.AST, fn: Function) -> list:
    """`NetClass = load_model(config.model)` then `NetClass(...)`, where load_model returns a class
    it looks up by name at run time (`mdict[name]` over the classes its model modules hold): the
    torch module classes of the helper's module and of the modules it imports, a few dozen at
    most - the family the configured name picks from."""
    if func.__class__ is not ast.Name:
        return []
    values = program.values_of(func, fn, 1)
    if not values or any(v.__class__ is not ast.Call for v, _ in values):
        return []
    found: list = []
    for value, scope in values:
        targets = program.resolve(value.func, scope)[0]
        if len(targets) != 1:
            return []
        helper = targets[0]
        if helper.cls is not None or helper.node is None or isinstance(helper.node, ast.Module) or \
                not helper.returned or any(r is None or r.__class__ not in (ast.Subscript, ast.Name)
                                           for r in helper.returned if not is_const(r, None)):
            return []  # (a helper returning a call or an attribute is read by the other ways)
        if any(program.is_class(program.symbol(r.id, helper)) for r in helper.returned if r.__class__ is ast.Name):
            return []  # (a class it names: built_class reads that one)
        modules = [helper.module] + [m for alias, full in helper.module.imports.items() if alias[0] != "*"
                                     for m in [program._module(full)] if m is not None and m is not helper.module]
        # (a module class: a torch Module by its library bases, or one with a forward of its own
        # or a local base's - MinkowskiEngine's networks derive from a library class of theirs)
        for module in modules:
            found += [k for k in module.classes.values() if k not in found and (any(
                base in ("torch.nn.Module", "torch.nn.modules.module.Module") for base in program.library_bases(k))
                or any("forward" in c.methods for c in [k, *program.bases(k)]))]
    return found if len(found) <= 64 else []


def _module_classes_seen(program: Program, module) -> list:
    """The local torch.nn.Module classes a module defines, imports by name or star-imports (a
    package's re-exported names), at most a few dozen: what a name from a config can build."""
    seen = list(module.classes.values())
    for alias, full in module.imports.items():
        if alias[0] == "*":
            star = program._module(full)
            if star is not None:
                seen += list(star.classes.values())
                seen += [program.full_symbol(f) for a, f in star.imports.items() if a[0] not in "*_"]
        else:
            seen.append(program.full_symbol(full))
    found = []
    for klass in seen:
        if program.is_class(klass) and klass not in found and any(
                base in ("torch.nn.Module", "torch.nn.modules.module.Module") for base in program.library_bases(klass)):
            found.append(klass)
    return found if len(found) <= 32 else []


# a DDP forward whose module's buffers exist only under a setting (the mark's test; a warning)
BUFFERS_BY_SETTING = " (its buffers come from a norm layer the code builds only where `{}` holds)"
_BY_SETTING_MARK = " (its buffers come from a norm layer the code builds only where `"
# (the calls among BUFFER_MARKERS; its `track_running_stats=True` is a keyword, asked of each call)
_BUFFER_CALLS = re.compile("|".join(re.escape(m) for m in BUFFER_MARKERS if "=" not in m) + "|track_running_stats")


def buffers_by_setting(program: Program) -> str:
    """Every place the program's own classes build buffers (a BatchNorm, `register_buffer`,
    `spectral_norm`) sits under an `if` on a setting - a module's constant or a config's field
    (`if penn.NORMALIZATION == 'batch':`), not a parameter - and no library model with buffers is
    built: that test's text, the one a forward's buffer broadcast rests on. "" otherwise. Worked
    out once per program (asked only where a DDP forward with buffers is found)."""
    # (asked during the walk, while modules are still being read: answered again once more are)
    generation = (len(program.files), len(program.classes))
    found = program.__dict__.get("_buffers_by_setting")
    if found is None or found[0] != generation:
        found = program.__dict__["_buffers_by_setting"] = (generation, _buffers_by_setting(program))
    return found[1]


def _buffers_by_setting(program: Program) -> str:
    gates: list[str] = []
    for klass in program.classes:
        found = _class_buffer_gates(klass)
        if found is None:
            return ""  # one built on every way: the buffers are there whatever the settings
        gates.extend(found)
    if not gates or any(_library_model(program, call, fn) for fn in program.functions for call in fn.own_calls):
        return ""
    return gates[0]


# Where a library builds a model whose buffers the local classes do not show.
_MODEL_LIBRARIES = ("torchvision.models", "timm", "transformers", "diffusers")


def _library_model(program: Program, call: ast.Call, fn: Function) -> bool:
    """The call builds a library's model (torchvision's or timm's zoo, a Hugging Face
    `from_pretrained`, `timm.create_model`, a zoo architecture picked by name): its buffers,
    if any, come from no setting of the script's own code."""
    if last_name(call.func) in ("from_pretrained", "create_model", "from_config"):
        return True
    full = program.qualify(call.func, fn) or ""
    return full.startswith(_MODEL_LIBRARIES) or _zoo_by_name(program, call.func, fn)


def _class_buffer_gates(klass) -> Optional[list]:
    """The setting tests the class builds its buffers under ([] where it builds none), None where
    it builds one on every way. Worked out once per class."""
    if "_buffer_gates" in klass.__dict__:
        return klass.__dict__["_buffer_gates"]
    lines = klass.file.lines[klass.node.lineno - 1:klass.node.end_lineno]
    found: Optional[list] = []
    if _BUFFER_CALLS.search("\n".join(lines)):
        parents = {id(c): n for n in walk(klass.node) for c in children(n)}
        for node in walk(klass.node):
            named = last_name(node.func) if node.__class__ is ast.Call else \
                node.attr if node.__class__ is ast.Attribute else ""
            if node.__class__ is ast.Call and truthy(keyword(node, "track_running_stats")):
                named = "track_running_stats"  # (`InstanceNorm2d(n, track_running_stats=True)`)
            if not named or not _BUFFER_CALLS.search(named):
                continue
            held = parents.get(id(node))
            if held.__class__ is ast.Call and last_name(held.func) in ("isinstance", "issubclass"):
                continue  # `if isinstance(m, nn.BatchNorm2d):` asks of a layer, builds none
            up, gate = held, ""
            while up is not None and not gate:
                if up.__class__ in (ast.If, ast.IfExp) and _setting_test(up.test):
                    gate = text(up.test, 200)
                up = parents.get(id(up))
            if not gate:
                found = None
                break
            found.append(gate)
    klass.__dict__["_buffer_gates"] = found
    return found


def _setting_test(test: ast.AST) -> bool:
    """A test on a module's constant or a config's field (`penn.NORMALIZATION == 'batch'`,
    `cfg.MODEL.NORM == "BN"`, `NORM == "bn"`): the same on every rank, set by the run's config."""
    for node in walk(test):
        if node.__class__ is ast.Call and last_name(node.func) in ("isinstance", "issubclass", "hasattr"):
            return False  # a question about an object, not a setting
        if node.__class__ is ast.Attribute and node.value.__class__ in (ast.Name, ast.Attribute):
            root = node
            while root.__class__ is ast.Attribute:
                root = root.value
            if root.__class__ is ast.Name and root.id != "self":
                return True
        if node.__class__ is ast.Name and node.id.isupper() and len(node.id) > 1:
            return True
    return False


def _unpacked_makers_buffered(program: Program, call: ast.Call, fn: Function, depth: int, seen: set) -> bool:
    """`net, weights = model_map[args.arch]; model = net(weights=weights)`: the builder called
    is one of the table's, which the options pick; they stand for it as most of them are (a
    camera-trap classifier's ResNets and ShuffleNet beside ConvNeXt, Swin and ViT)."""
    # (each maker asked as the call of it, `models.resnet50()`, which the zoo and class rules read)
    makers = [(ast.copy_location(ast.Call(func=item, args=[], keywords=[]), call), owner)
              for item, owner in program.unpacked(call.func.id, fn) if item.__class__ in (ast.Name, ast.Attribute)]
    return _mostly_buffered(program, makers, depth, seen)


def _mostly_buffered(program: Program, items: list, depth: int, seen: set) -> bool:
    """More than half of the (value, scope) items hold buffers, each kind (as written) asked once
    - `[Net0(), Net1(), Net0()]`: a second ask would meet `seen` and answer no - and a few dozen
    kinds at most (LISTED_KINDS), not a generated table. The items stay alive while asked:
    `seen` holds node ids."""
    kinds: dict[str, bool] = {}
    for item, owner in items:
        key = text(item, 200)
        if key not in kinds and len(kinds) < LISTED_KINDS:
            kinds[key] = _buffered(program, item, owner, depth - 1, seen)
    return bool(items) and len(kinds) < LISTED_KINDS and \
        2 * sum(kinds[text(item, 200)] for item, _ in items) > len(items)


def _picked_buffered(program: Program, picked: list, seen: set) -> bool:
    """A configured name picks one of these local classes: they stand for it as most of them
    are (a tie counts as buffered, as a pick among two may be the buffered one)."""
    return bool(picked) and 2 * sum(_class_buffered(program, k, seen) for k in picked) >= len(picked)


def _instantiated(program: Program, call: ast.Call, fn: Function) -> list:
    """The local classes `hydra.utils.instantiate(cfg.model)` may build, by the config key it
    reads (sources.SourceFile.hydra_keyed): called at once, or a partial it returns called later
    (`make = instantiate(cfg.model)`, `_partial_: true`, then `make(h=...)`)."""
    made = [call]
    if call.func.__class__ is ast.Name:
        made += [v for v, _ in program.values_of(call.func, fn, 2) if v.__class__ is ast.Call]
    keyed = program.sources[0].hydra_keyed if program.sources else {}
    found = []
    for one in made:
        if last_name(one.func) == "instantiate" and one.args and one.args[0].__class__ is ast.Attribute:
            for target in keyed.get(one.args[0].attr, ()):
                klass = program.full_symbol(target)
                if program.is_class(klass) and klass not in found:
                    found.append(klass)
    return found


def _kept_fields(klass) -> set[int]:
    """The ids of the values the class assigns to its own fields (`self.x = <value>`), made once."""
    found = klass.__dict__.get("_kept_field_values")
    if found is None:
        found = klass.__dict__["_kept_field_values"] = {
            id(n.value) for n in walk(klass.node) if n.__class__ is ast.Assign and any(_self_field(t) for t in n.targets)}
    return found


def _buffered_transformer(full: str, program: Optional[Program] = None) -> bool:
    """A transformers class of a family with buffers, by its qualified name: the first part that
    names a class, wherever it was imported from (`transformers.BertModel.from_pretrained`,
    `transformers.models.roberta.modeling_roberta.RobertaModel`); not where the project ships a
    copy of transformers whose modeling file for it registers none (_vendored_unbuffered)."""
    if not full.startswith("transformers."):
        return False
    klass = next((part for part in full.split(".")[1:] if part[:1].isupper()), "").lower()
    # (a model class, `BertModel`, `RobertaForSequenceClassification`: not its `BertConfig` or tokenizer)
    family = next((z for z in BUFFERED_TRANSFORMERS if z in klass), None)
    return ("model" in klass or "for" in klass) and family is not None and not (
        program is not None and _vendored_unbuffered(program, family))


def _buffered_zoo(full: str) -> bool:
    """A torchvision or timm architecture with BatchNorm, by its qualified name."""
    return full.startswith(("torchvision.models", "timm")) and any(z in full.lower() for z in BUFFERED_ZOO)


def _hub_buffered(call: ast.Call, klass) -> bool:
    """A torch.hub model whose name is that of an architecture with BatchNorm (BUFFERED_ZOO), the
    name written in place or bound once to a constant in the class (`basemodel_name =
    'tf_efficientnet_b5_ap'`)."""
    name = call.args[1] if len(call.args) > 1 else keyword(call, "model")
    if name.__class__ is ast.Name:
        bound = [n.value for n in walk(klass.node) if n.__class__ is ast.Assign and len(n.targets) == 1
                 and n.targets[0].__class__ is ast.Name and n.targets[0].id == name.id]
        name = bound[0] if len(bound) == 1 else None
    return name.__class__ is ast.Constant and isinstance(name.value, str) and \
        any(z in name.value.lower() for z in BUFFERED_ZOO)


def _zoo_by_name(program: Program, func: ast.AST, fn: Function) -> bool:
    """`models.__dict__[args.arch](...)` / `getattr(models, arch)(...)` over torchvision's model
    zoo (the ImageNet example's way): an architecture picked by name, BatchNorm in nearly all of
    them (ResNets, RegNets, MobileNets, EfficientNets, DenseNets...)."""
    if isinstance(func, ast.Subscript) and isinstance(func.value, ast.Attribute) and func.value.attr == "__dict__":
        owner = func.value.value
    elif isinstance(func, ast.Call) and last_name(func.func) == "getattr" and func.args:
        owner = func.args[0]
    else:
        return False
    return (program.qualify(owner, fn) or "") == "torchvision.models"


def _buffered_checkpoint(program: Program, call: ast.Call, fn: Function) -> bool:
    """from_pretrained's checkpoint names a family with buffers: a string in place, bound to the
    name it is given, or the default of the option it reads (`args.model_name`)."""
    given = call.args[0] if call.args else keyword(call, "pretrained_model_name_or_path")
    if given is None:
        return False
    held = program.values_of(given, fn, 2)
    names = [v.value for v, _ in held if isinstance(v, ast.Constant)]
    # (a parameter the callers hand an option: `SimCSEModel(args.model_name)`, then
    # `AutoModel.from_pretrained(base_model)` in its constructor)
    names += [program.option_defaults().get(v.attr) for v, _ in held if isinstance(v, ast.Attribute) and v is not given]
    # (or a config object's field, its default declared in the class: `model_cls(base_model_name=
    # config.base_model_name)` with `config: TrainerConfig`, a dataclass naming a BERT checkpoint)
    names += [found[0] for v, scope in held if isinstance(v, ast.Attribute)
              for found in [program.field_default(v, scope)] if found is not None]
    if isinstance(given, ast.Constant):
        names.append(given.value)
    if isinstance(given, ast.Attribute):
        names.append(program.option_defaults().get(given.attr))
    return any(isinstance(n, str) and BUFFERED_CHECKPOINTS.search(n)
               and not _vendored_unbuffered(program, BUFFERED_CHECKPOINTS.search(n).group(0).lower()) for n in names)


def _vendored_unbuffered(program: Program, family: str) -> bool:
    """The project ships its own copy of transformers (PL-Marker's `transformers/src/transformers`,
    HGN's `transformers/`: releases from before BERT's embeddings registered `position_ids`) whose
    modeling file for the family (`bert`) registers no buffer: the model the run builds is that
    copy's, and holds none."""
    found = program.__dict__.setdefault("_vendored_modeling", {})
    if family not in found:
        found[family] = None
        script = program.sources[0].path if program.sources and program.sources[0].path is not None else None
        roots = [script.parent, Path.cwd()] if script is not None else []
        for root in dict.fromkeys(r.resolve() for r in roots):
            for package in (root / "transformers", root / "transformers" / "src" / "transformers"):
                modeling = package / f"modeling_{family.replace('-', '_')}.py"
                try:
                    if (package / "__init__.py").is_file() and modeling.is_file() and \
                            modeling.stat().st_size < 2_000_000:
                        found[family] = "register_buffer" not in modeling.read_text(errors="replace")
                        # (a changed copy is a lint-cache miss: its digest is kept with the facts)
                        if str(modeling) not in program.sources[0].hydra_configs:
                            program.sources[0].hydra_configs.append(str(modeling))
                        break
                except OSError:
                    continue
            if found[family] is not None:
                break
    return bool(found[family])


def _unread_defaults(klass, arguments: ast.arguments) -> bool:
    """Every parameter a BatchNorm class is the default of is never read in its function (a
    block that takes `norm=nn.BatchNorm2d` and builds InstanceNorm2d itself): nothing builds it."""
    owner = next((n for n in walk(klass.node) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))
                  and n.args is arguments), None)
    if owner is None:
        return False
    positional = [*arguments.posonlyargs, *arguments.args]
    pairs = list(zip(positional[len(positional) - len(arguments.defaults):], arguments.defaults)) + \
        [(a, d) for a, d in zip(arguments.kwonlyargs, arguments.kw_defaults) if d is not None]
    names = {a.arg for a, d in pairs if isinstance(d, (ast.Name, ast.Attribute)) and "BatchNorm" in (last_name(d) or "")}
    read = {n.id for stmt in owner.body for n in walk(stmt) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}
    return bool(names) and not (names & read)


def _norm_class_value(node: ast.AST) -> bool:
    """A BatchNorm class handed on as a value to be called later: assigned, or a default."""
    values = []
    if isinstance(node, ast.Assign):
        values = [node.value]
    elif isinstance(node, ast.arguments):
        values = [*node.defaults, *(d for d in node.kw_defaults if d is not None)]
    return any(isinstance(v, (ast.Name, ast.Attribute)) and "BatchNorm" in (last_name(v) or "") for v in values)


# torch_geometric's other DataLoader subclasses over a map-style dataset of graphs, with the same
# sampler and shuffle arguments (a list of graphs per batch, or dense tensors)
PYG_LIST_LOADERS = frozenset({"DataListLoader", "DenseDataLoader"})


def torch_loader(full: str) -> bool:
    """A call's full name is a torch DataLoader: by what it is, not what the file calls it (`from
    torch.utils.data import DataLoader as DL`); torch_geometric's loaders are torch DataLoaders
    with the same arguments, as is MONAI's (whose own worker_init_fn seeds each worker's random
    transforms from the worker's torch seed); a bare `DataLoader` whose import the lint did not
    see counts too. torchdata's StatefulDataLoader is a DataLoader that also saves its position."""
    if full in ("torchdata.stateful_dataloader.StatefulDataLoader", "webdataset.WebLoader",
                "webdataset.compat.WebLoader"):
        return True  # (webdataset's WebLoader is a DataLoader subclass taking its arguments)
    if full.startswith("torch_geometric.") and full.rpartition(".")[2] in PYG_LIST_LOADERS:
        return True
    return full.rpartition(".")[2] == "DataLoader" and (full.startswith(("torch.", "torch_geometric.", "monai."))
                                                        or full == "DataLoader")


LOADER_MODULES = ("torch.utils.data", "torch.utils.data.dataloader")


def loader_dataset(program: Program, call: ast.Call, fn: Function) -> Optional[ast.AST]:
    """The dataset a DataLoader call is handed: first argument, `dataset=`, or the "dataset" key
    of a dict literal spread into it (`DataLoader(**loader_kwargs)`). In a config factory's call
    (`config.init_obj("train_loader", torch.utils.data.dataloader, ds, ...)`) the first two are
    the config key and the module: the loader's own arguments come after them."""
    args = call.args
    if args and args[0].__class__ is ast.Constant and isinstance(args[0].value, str):
        args = args[2:]  # (no DataLoader takes a string first: a factory's config key)
    if args:
        return args[0]
    found = keyword(call, "dataset")
    if found is None and any(k.arg is None for k in call.keywords):
        spread = call_keywords(program, call, fn)
        found = spread.get("dataset") if spread else None
    return found


def loader_call(program: Program, call: ast.Call, fn: Function) -> bool:
    """A call that builds a torch DataLoader: torch's own (torch_loader), or a local subclass of it
    (`class FastLoader(DataLoader)`, a loader that keeps its workers alive), a few bases up."""
    if torch_loader(program.qualify(call.func, fn) or ""):
        return True
    func = call.func
    if func.__class__ is ast.Attribute and program.factory_module(call, fn) in LOADER_MODULES:
        # pytorch-template's `config.init_obj("train_loader", torch.utils.data.dataloader,
        # dataset=ds, sampler=s, num_workers=n)`: the config's type picks from torch's loader module
        return True
    if func.__class__ is ast.Attribute and func.attr == "__init__" and func.value.__class__ is ast.Call and \
            func.value.func.__class__ is ast.Name and func.value.func.id == "super":
        # `class TrainLoader(DataLoader): def __init__(...): super().__init__(dataset, sampler=...,
        # num_workers=n)`: the loader every construction of the subclass builds
        return fn.cls is not None and fn.name == "__init__" and _loader_class(program, fn.cls, 3)
    klass = program._callee_symbol(call.func, fn)
    if klass is None and func.__class__ is ast.Name and func.id == "cls" and fn.cls is not None and \
            getattr(fn.node, "args", None) is not None and fn.node.args.args[:1] and fn.node.args.args[0].arg == "cls":
        # `return cls(dataset=dataset, **params)` in a classmethod of the DataLoader subclass
        # (`EgoDataLoader.from_config(config, ds, sampler)`)
        klass = fn.cls
    if klass is None and (func.__class__ is ast.Name or (func.__class__ is ast.Attribute and
                                                          func.value.__class__ is ast.Name and func.value.id == "self")):
        # `self.loader = torch.utils.data.DataLoader` in __init__, then `self.loader(dataset, ...)`:
        # the class is what the name holds
        # (`dl_cls = FastLoader if cached else DataLoader`: each side a loader class)
        held = [(side, where) for v, where in program.values_of(func, fn, 1) if v is not func
                for side in ((v.body, v.orelse) if v.__class__ is ast.IfExp else (v,))]
        return bool(held) and all(_names_loader_class(program, v, where) for v, where in held)
    return klass.__class__.__name__ == "Klass" and _passes_through(program, klass) and \
        _loader_class(program, klass, 3)


def _names_loader_class(program: Program, value: ast.AST, scope: Function) -> bool:
    """The value names torch's DataLoader or a local subclass that takes its options as they come."""
    if value.__class__ not in (ast.Name, ast.Attribute):
        return False
    if torch_loader(program.qualify(value, scope) or ""):
        return True
    klass = program._callee_symbol(value, scope)
    return klass.__class__.__name__ == "Klass" and _passes_through(program, klass) and _loader_class(program, klass, 3)


def passing_loader_class(program: Program, klass) -> bool:
    """A local DataLoader subclass whose construction takes the DataLoader's options as they come
    (`DataLoaderX(local_rank=..., dataset=ds, worker_init_fn=...)`): the construction is the loader."""
    return _passes_through(program, klass) and _loader_class(program, klass, 3)


def kept_keywords(program: Program, call: ast.Call, fn: Function) -> set[str]:
    """The keywords a local DataLoader subclass keeps for itself (`def __init__(self, *args,
    stage="train", generator=None, **kwargs)`): they never reach the DataLoader."""
    klass = program._callee_symbol(call.func, fn)
    return set(kept_parameters(klass)) if klass.__class__.__name__ == "Klass" else set()


def kept_parameters(klass) -> frozenset:
    """The parameters a local DataLoader subclass's `__init__` names (keyword-only ones, and
    those before `**kwargs` where it takes no `*args`): kept for itself, never the DataLoader's."""
    init = klass.methods.get("__init__")
    if init is None or init.node is None:
        return frozenset()
    args = init.node.args
    return frozenset({a.arg for a in args.kwonlyargs} | ({a.arg for a in args.args[1:]} if args.vararg is None else set()))


def _passes_through(program: Program, klass, depth: int = 3) -> bool:
    """The subclass takes a DataLoader's arguments as they are: no `__init__` of its own (nor in
    its local bases), or one of `(self, *args, **kwargs)` only. picotron's MicroBatchDataLoader
    builds its own sampler from arguments of its own: its call is no DataLoader's."""
    init = klass.methods.get("__init__")
    if init is None:
        return depth > 0 and all(_passes_through(program, b, depth - 1) for b in program.bases(klass))
    args = init.node.args
    if args.vararg is None and args.kwarg is not None and len(args.args) > 1 and not args.posonlyargs and \
            not LOADER_PARAMS.intersection(a.arg for a in args.args[1:]):
        # `def __init__(self, local_rank, **kwargs): super().__init__(**kwargs)` (a prefetching
        # DataLoaderX): its own parameters kept, every DataLoader option handed on by keyword
        return any(isinstance(call.func, ast.Attribute) and call.func.attr == "__init__" and not call.args
                   and [k.value.id for k in call.keywords if k.arg is None and isinstance(k.value, ast.Name)]
                   == [args.kwarg.arg] for call in init.own_calls)
    if args.vararg is None or args.kwarg is None:
        return False
    if len(args.args) == 1 and not args.kwonlyargs:
        return True
    # `def __init__(self, *args, stage="train", **kwargs): super().__init__(*args, **kwargs)`:
    # keywords of its own beside what it hands the base as it came (OpenFold's loader)
    return len(args.args) == 1 and any(
        isinstance(call.func, ast.Attribute) and call.func.attr == "__init__"
        and any(isinstance(a, ast.Starred) and isinstance(a.value, ast.Name) and a.value.id == args.vararg.arg
                for a in call.args)
        and any(k.arg is None and isinstance(k.value, ast.Name) and k.value.id == args.kwarg.arg for k in call.keywords)
        for call in init.own_calls)


# DataLoader's own parameters: a subclass that names one of them takes the loader's options itself
LOADER_PARAMS = frozenset({"dataset", "batch_size", "shuffle", "sampler", "batch_sampler", "num_workers",
                           "collate_fn", "pin_memory", "drop_last", "timeout", "worker_init_fn",
                           "generator", "prefetch_factor", "persistent_workers"})


def _loader_class(program: Program, klass, depth: int) -> bool:
    for base in klass.bases:
        head, _, rest = base.partition(".")
        full = klass.module.imports.get(head, head) + (f".{rest}" if rest else "")
        if full.rpartition(".")[2] == "DataLoader" and full.startswith(("torch.", "torch_geometric.")):
            return True
    return depth > 0 and any(_loader_class(program, b, depth - 1) for b in program.bases(klass))


def name_pattern(node: ast.AST) -> Optional[tuple[str, Optional[str]]]:
    """A name as the source spells it: (name, None) for a constant; (prefix, suffix) around the
    one part known only at run time (`'init_dist_%s' % x`, `'init_dist_' + x`,
    `f"pkg.trainers.{cfg.trainer}_trainer"`, `'datasets.{}'.format(x)`); None when nothing of it is spelled."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value, None
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add) and isinstance(node.right, ast.Constant) and \
            isinstance(node.right.value, str) and isinstance(node.left, ast.BinOp) and \
            isinstance(node.left.op, ast.Add) and isinstance(node.left.left, ast.Constant) and \
            isinstance(node.left.left.value, str) and not isinstance(node.left.right, ast.Constant):
        # `"models." + opt["model"] + "_model"` (HCFlow's model loader): around the one varying part
        return node.left.left.value, node.right.value
    if isinstance(node, ast.BinOp) and isinstance(node.left, ast.Constant) and isinstance(node.left.value, str):
        if isinstance(node.op, ast.Mod) and node.left.value.count("%") == 1:
            prefix, _, rest = node.left.value.partition("%")
            return prefix, rest[1:]  # the conversion letter (`%s`, `%d`) is the varying part
        if isinstance(node.op, ast.Add):
            return node.left.value, ""
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add) and isinstance(node.right, ast.Constant) \
            and isinstance(node.right.value, str) and not isinstance(node.left, ast.Constant):
        return "", node.right.value  # `model_name + "Trainer"`
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "format" and \
            isinstance(node.func.value, ast.Constant) and isinstance(node.func.value.value, str) and \
            node.func.value.value.count("{") == 1 and len(node.args) + len(node.keywords) == 1:
        # `'datasets.{}'.format(name)` (MVSNet's find_dataset_def)
        prefix, _, rest = node.func.value.value.partition("{")
        return prefix, rest.partition("}")[2]
    if isinstance(node, ast.JoinedStr) and sum(isinstance(v, ast.FormattedValue) for v in node.values) == 1:
        parts = [v.value if isinstance(v, ast.Constant) else None for v in node.values]
        cut = parts.index(None)
        return "".join(parts[:cut]), "".join(parts[cut + 1:])
    return None


def _registry_picks(program: Program, func: ast.AST, fn: Function, site: ast.Call, caller: Function) -> list:
    """The classes a name bound to a registry's lookup may hold: `obj_cls = registry.get(name)`
    where `registry` is a table filled by `@TABLE.register_module()`, named there or handed in
    by the call `site` (in caller) into fn (`build_from_cfg(cfg, MODEL)`)."""
    if func.__class__ is not ast.Name or not program.lookup(func.id, fn):
        return []
    found: list = []
    for value, scope in program.values_of(func, fn, 1):
        if not (value.__class__ is ast.Call and value.func.__class__ is ast.Attribute
                and value.func.attr == "get" and value.args):
            continue
        receiver = value.func.value
        if receiver.__class__ is ast.Name and receiver.id in fn.params:
            receiver = program.handed(fn, receiver.id, site, caller)
        table = last_name(receiver) if receiver is not None else None
        found += [k for k in (program._registered_with(table) if table else ())
                  if program.is_class(k) and k not in found]
    return found


def _dispatched(program: Program, func: ast.AST, fn: Function) -> list:
    """`models.__dict__[name]`, `vars(models)[name]`, `getattr(models, name)`: a local module's
    table looked up by a name only known at run time; every function and class it defines."""
    owner = None
    if isinstance(func, ast.Name) and program.lookup(func.id, fn):
        # `model_class = DETECTOR[cfg["model_name"]]` then `model_class(cfg)`; and `model_class =
        # SongUNet` / `= DhariwalUNet` on two sides of a config switch: each class it may name
        found = []
        for v, s in program.values_of(func, fn, 1):
            if isinstance(v, ast.Subscript) or (isinstance(v, ast.Call) and last_name(v.func) == "getattr"):
                found.extend(_dispatched(program, v, s))
            elif isinstance(v, (ast.Name, ast.Attribute)):
                target = program.callee(v, s)
                if program.is_class(target) or program.is_function(target):
                    found.append(target)
        return list(dict.fromkeys(found))
    if isinstance(func, ast.Subscript) and isinstance(func.value, ast.Call) and last_name(func.value.func) == "globals":
        return _from_globals(program, func.slice, fn)
    if func.__class__ is ast.Call and func.func.__class__ is ast.Name and func.func.id == "eval" and \
            len(func.args) == 1 and not program.lookup("eval", fn):
        return _evaluated(program, func.args[0], fn)
    if isinstance(func, ast.Subscript):
        table = func.value
        if isinstance(table, ast.Attribute) and table.attr == "__dict__":
            owner = table.value
        elif isinstance(table, ast.Call) and last_name(table.func) == "vars" and table.args:
            owner = table.args[0]
        else:
            # `MODELS[args.model](args)`: an entry of a table literal the source spells
            while isinstance(table, ast.Subscript):
                table = table.value
            return program._table_entries(table, fn)
    elif isinstance(func, ast.Call) and last_name(func.func) == "getattr" and len(func.args) >= 2:
        owner = func.args[0]
    if not isinstance(owner, ast.Name):
        return []
    module = program.symbol(owner.id, fn)
    if module is None or program.is_class(module) or program.is_function(module):
        return []
    return [*module.functions.values(), *module.classes.values()]


def _from_globals(program: Program, key: ast.AST, fn: Function) -> list:
    """`globals()[f"CombineDiscriminator{img_size}"]` (LaMa's): the classes and functions the
    module sees (its own, or star-imported) whose names the key may spell - the one a constant
    names, or each one starting with an f-string's leading text."""
    if isinstance(key, ast.Constant) and isinstance(key.value, str):
        found = program.symbol(key.value, fn)
        return [found] if program.is_class(found) or program.is_function(found) else []
    if not (isinstance(key, ast.JoinedStr) and key.values and isinstance(key.values[0], ast.Constant)):
        return []
    prefix = str(key.values[0].value)
    if len(prefix) < 3:
        return []  # (too little of the name to pick among the module's symbols)
    return [k for k in program.classes if k.name.startswith(prefix) and program.symbol(k.name, fn) is k]


def _evaluated(program: Program, source: ast.AST, fn: Function) -> list:
    """`eval(config.SELECT_MODEL)(config)`: a class the module sees by a name a config holds.
    A constant names one symbol; anything else may name each model class the module sees (its
    own, or imported by name), none of which the source rules out."""
    if source.__class__ is ast.Constant and isinstance(source.value, str):
        found = program.symbol(source.value, fn) if source.value.isidentifier() else None
        return [found] if program.is_class(found) or program.is_function(found) else []
    if source.__class__ is ast.JoinedStr or source.__class__ is ast.BinOp:
        return []  # a dotted path spelt in pieces: not followed
    names = [*fn.module.classes, *fn.module.imports]
    found = [program.symbol(name, fn) for name in names]
    return list(dict.fromkeys(k for k in found if program.is_class(k) and _module_like(program, k)))


def _module_like(program: Program, klass) -> bool:
    """A torch module class: a base of its own, or of a local class it derives from, is a `...Module`."""
    return any(base.split(".")[-1] == "Module" for k in [klass, *program.bases(klass)] for base in k.bases)


def _unpacked_dispatch(program: Program, name: str, fn: Function) -> list[tuple[ast.AST, Function]]:
    """`backbone, width = models.__dict__[arch](...)`: that element of what each candidate returns."""
    out = []
    for node in fn.own_of(ast.Assign):
        if not (isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.value, ast.Call)
                and isinstance(node.targets[0], (ast.Tuple, ast.List))):
            continue
        names = [t.id if isinstance(t, ast.Name) else None for t in node.targets[0].elts]
        if name not in names:
            continue
        for target in _dispatched(program, node.value.func, fn):
            if not program.is_function(target):
                continue
            for ret in target.own_of(ast.Return):
                if isinstance(ret.value, (ast.Tuple, ast.List)) \
                        and len(ret.value.elts) == len(names):
                    out.append((ret.value.elts[names.index(name)], target))
    return out


def _class_buffered(program: Program, klass, seen: set, given: Optional[dict] = None) -> bool:
    """The class builds a BatchNorm-like module or registers a buffer unconditionally
    (nanoGPT's causal-mask buffer sits under `if not self.flash:`: not counted). given: the
    constants this construction hands __init__ (_construction_constants); a side of its
    `if core_model_name == "regpointnet_seg":` they rule out builds nothing for this model."""
    if klass in seen:
        return False
    seen.add(klass)
    conditional = {id(n) for branch in walk(klass.node) if isinstance(branch, (ast.If, ast.IfExp))
                   for part in (branch.body, branch.orelse)
                   for stmt in (part if isinstance(part, list) else [part]) for n in walk(stmt)}
    dead = _ruled_out(program.method(klass, "__init__"), given) if given else frozenset()
    if conditional:
        dead = dead | program.off_at_launch(klass)
    pretrained = []  # `X.from_pretrained(...)` calls, judged by their checkpoint below
    for node in walk(klass.node):
        if id(node) in dead:
            continue
        if _norm_class_value(node) and not (isinstance(node, ast.arguments) and _unread_defaults(klass, node)):
            return True  # `norm_layer = nn.BatchNorm2d`, `def __init__(..., norm=nn.BatchNorm2d)`: built later
        if not isinstance(node, ast.Call):
            continue
        name = last_name(node.func) or ""
        if name == "from_pretrained" and node.func.__class__ is ast.Attribute and id(node) not in conditional:
            pretrained.append(node)
        if "BatchNorm" in name or (name in ("register_buffer", "spectral_norm") and id(node) not in conditional):
            return True
        if truthy(keyword(node, "track_running_stats")) and id(node) not in conditional:
            return True
        built = program.qualify(node.func, klass.module.body) or ""
        if built in TORCH_BUFFERS and id(node) not in conditional:
            return True  # `self.weights = nn.Buffer(torch.empty(n, d))` (torch 2.5): a registered buffer
        if _buffered_zoo(built):
            return True  # `self.image = models.resnet18(pretrained=True)`: its BatchNorms
        if built == "torch.hub.load" and _hub_buffered(node, klass):
            return True  # `torch.hub.load("rwightman/gen-efficientnet-pytorch", "tf_efficientnet_b5_ap")`
        if _buffered_transformer(built, program) and id(node) not in conditional and id(node) in _kept_fields(klass):
            # `self.roberta = RobertaModel(config)`: its embeddings' position_ids (not a model a
            # classmethod loads to copy weights from, nanoGPT's `GPT2LMHeadModel.from_pretrained`)
            return True
        target = program.callee(node.func, klass.module.body)
        if program.is_class(target) and _class_buffered(program, target, seen, _built_with(program, klass, target, node)):
            return True
        if program.is_function(target) and target not in seen and not isinstance(target.node, ast.Module):
            # `self.blip = blip_pretrain(...)`, a factory returning `BLIP_Pretrain(...)` (ImageReward);
            # `self.backbone, self.normalize = load_clip()`, one returning `backbone, normalize`
            # where `backbone = ModifiedResNetFeatures(...)` (Hiveformer)
            seen.add(target)
            for ret in target.returned:
                for item in (ret.elts if isinstance(ret, ast.Tuple) else [ret]):
                    made = [item] if isinstance(item, ast.Call) else [
                        v for v, _ in program.values_of(item, target, 1) if isinstance(v, ast.Call)] \
                        if isinstance(item, ast.Name) else []
                    for call in made:
                        while call.func.__class__ is ast.Attribute and call.func.attr in SELF_RETURNING and \
                                call.func.value.__class__ is ast.Call:
                            call = call.func.value  # `model = CLIP(...).float()`: the module itself
                        built = program.callee(call.func, target)
                        if program.is_class(built) and _class_buffered(program, built, seen):
                            return True
                        if any(m in text(call, 100000) for m in BUFFER_MARKERS):
                            return True  # `return nn.Sequential(Conv2d(...), BatchNorm2d(...), ...)`: Darknet's blocks
                        if call.func.__class__ is ast.Name and _unpacked_makers_buffered(program, call, target, 3, seen):
                            return True  # `net, weights = model_map[arch]; return net(weights=weights)`
    # `self.backbone = AutoModel.from_pretrained(base_model)` in its constructor, with a checkpoint
    # of a family that registers buffers (the callers hand `--base_model`, "klue/roberta-base")
    for node in pretrained:
        method = next((m for m in klass.methods.values() if m.node.__class__ is not ast.Module
                       and m.node.lineno <= node.lineno <= m.node.end_lineno), None)
        if method is not None and _buffered_checkpoint(program, node, method):
            return True
    # a library base that is a BatchNorm network (`class ResNetFeatures(torchvision's ResNet)`,
    # `class Features(clip.model.ModifiedResNet)`)
    if any(_batchnorm_family(base) for base in program.library_bases(klass)):
        return True
    return any(_class_buffered(program, b, seen) for b in program.bases(klass))


def _built_with(program: Program, klass, part, call: ast.Call) -> Optional[dict]:
    """The constants the class's constructor hands a part it builds (`norm = "GN"`, then
    `self.fuse = Linear(n, n, norm=norm)`): the sides of the part's own `if norm == "BN":` they
    rule out build nothing for it (LaneGCN's GroupNorm blocks). None outside __init__."""
    init = program.method(klass, "__init__")
    if init is None or init.node is None or init.node.__class__ is ast.Module or \
            not init.node.lineno <= call.lineno <= (init.node.end_lineno or init.node.lineno):
        return None
    return _construction_constants(program, part, call, init) or None


def _construction_constants(program: Program, klass, call: ast.Call, scope: Function) -> dict:
    """{parameter: the constants it may hold} for what one construction hands the class's
    __init__ (`Model(params, core_model_name=core_model)` with `core_model` bound only to
    "encode_process_decode" where it is made, or a default left as it is): the values that
    decide the constructor's branches for this model. (By keyword, place or default; a call
    that spreads `*args` / `**kw` tells nothing.)"""
    init = program.method(klass, "__init__")
    if init is None or init.node is None or init.node.__class__ is ast.Module or \
            any(a.__class__ is ast.Starred for a in call.args) or any(k.arg is None for k in call.keywords):
        return {}
    args = init.node.args
    positional = [a.arg for a in args.posonlyargs + args.args][1:]  # (after self)
    defaults = dict(zip(positional[len(positional) - len(args.defaults):], args.defaults))
    defaults.update((a.arg, d) for a, d in zip(args.kwonlyargs, args.kw_defaults) if d is not None)
    given = {}
    for param in (*positional, *(a.arg for a in args.kwonlyargs)):
        value = keyword(call, param)
        if value is None and param in positional and positional.index(param) < len(call.args):
            value = call.args[positional.index(param)]
        value = defaults.get(param) if value is None else value
        if value.__class__ is ast.Name and value.id not in scope.params:
            bound = [v for v, where in program.values_of(value, scope, 1) if where is scope]
            value = bound[0] if len(bound) == 1 and len(scope.bindings.get(value.id, ())) == 1 else None
        if value.__class__ is ast.Constant:
            given[param] = {value.value}
    return given


def _ruled_out(init, given: dict) -> frozenset:
    """The ids of the nodes on the sides of init's `if param == const:` tests (`!=`, `in`, `not
    in` a literal too) that the given constants never take; the test's parameter not rebound in
    init."""
    if init is None or init.node is None or init.node.__class__ is ast.Module:
        return frozenset()
    dead: set = set()
    for branch in walk(init.node):
        if branch.__class__ is not ast.If:
            continue
        taken = _decided_by(branch.test, given, init)
        if taken is not None:
            for stmt in (branch.orelse if taken else branch.body):
                dead.update(id(n) for n in walk(stmt))
    return frozenset(dead)


def _decided_by(test: ast.AST, given: dict, init) -> Optional[bool]:
    """What `param == const` (!=, in, not in a literal) comes to with the parameter at the
    constants given; also a field a construction kept (`self.split == "demo"`, given under
    "self.split": process_seeds._draws_as_built). None where the test reads anything else."""
    if not (test.__class__ is ast.Compare and len(test.ops) == 1 and (test.left.__class__ is ast.Name or (
            test.left.__class__ is ast.Attribute and test.left.value.__class__ is ast.Name
            and test.left.value.id == "self"))):
        return None
    name = test.left.id if test.left.__class__ is ast.Name else f"self.{test.left.attr}"
    op, right = test.ops[0].__class__, test.comparators[0]
    if name not in given or init.bindings.get(name):
        return None
    if right.__class__ is ast.Constant:
        answers = {v == right.value for v in given[name]} if op in (ast.Eq, ast.NotEq) else set()
    elif right.__class__ in (ast.Tuple, ast.List, ast.Set) and all(e.__class__ is ast.Constant for e in right.elts):
        listed = [e.value for e in right.elts]
        answers = {v in listed for v in given[name]} if op in (ast.In, ast.NotIn) else set()
    else:
        return None
    if len(answers) != 1:
        return None
    holds = answers.pop()
    return not holds if op in (ast.NotEq, ast.NotIn) else holds


# Library classes by their own name: the convolutional families built with BatchNorm, whichever
# library defines them (torchvision's ResNet, CLIP's ModifiedResNet, timm's EfficientNet).
BATCHNORM_FAMILIES = re.compile(r"resnet|resnext|densenet|mobilenet|efficientnet|regnet|inception|batchnorm",
                                re.IGNORECASE)


def _batchnorm_family(full: str) -> bool:
    return bool(BATCHNORM_FAMILIES.search(full.rpartition(".")[2]))
