"""DDP802's fix: the DataLoader gets `sampler=DistributedSampler(<dataset>, shuffle=<its shuffle>)`
in place of its `shuffle=` (or of a RandomSampler / SequentialSampler), the import where the file
lacks it, and `<loader>.sampler.set_epoch(epoch)` at the top of the epoch loop when it shuffles."""

from __future__ import annotations

import ast

from ddpdoctor.core.findings import Finding
from ddpdoctor.lint.fix import set_epoch
from ddpdoctor.lint.fix.edits import Edit
from ddpdoctor.lint.fix.syntax import NoFix, Parsed, Proposal
from ddpdoctor.lint.nodes import walk
from ddpdoctor.lint.patterns import dotted, is_const, keyword, last_name

CODE = "DDP802"
SAMPLER_MODULES = ("torch.utils.data", "torch.utils.data.distributed")
# the plain samplers whose order a DistributedSampler keeps: shuffled or not
KEEPS = {"RandomSampler": "True", "SequentialSampler": "False"}


def propose(finding: Finding, parsed: Parsed) -> list[Proposal]:
    calls = parsed.calls_on_line(finding.location.line, {"DataLoader"})
    if len(calls) != 1:
        raise NoFix(f"line {finding.location.line} does not hold exactly one DataLoader(...) call")
    call = calls[0]
    if finding.evidence.get("stream"):
        raise NoFix(f"{finding.evidence['stream']} is an IterableDataset: a DistributedSampler cannot take it "
                    "(split its stream by rank)")
    if any(k.arg is None for k in call.keywords) or any(isinstance(a, ast.Starred) for a in call.args):
        raise NoFix("the DataLoader's options come from *args / **kwargs")
    if keyword(call, "batch_sampler") is not None:
        raise NoFix("the DataLoader has a batch_sampler: its sampling is the user's own")
    dataset = call.args[0] if call.args else keyword(call, "dataset")
    if dataset is None or dotted(dataset) is None:
        raise NoFix("the dataset is not a plain name (it would be evaluated twice): bind it to a name first")
    _after_init(finding, parsed, call)
    data = parsed.source.segment(dataset)
    name, imports = _sampler_name(parsed)
    edits, shuffled = _loader_edits(parsed, call, name, data)
    edits += imports
    loader = str(finding.evidence.get("loader") or "")
    unset = ""
    if finding.evidence.get("trainer_hook"):
        # a Trainer's get_train_dataloader override: the Trainer's epoch loop calls the sampler's
        # set_epoch itself (transformers' _inner_training_loop), nothing for the edit to place
        unset = "; the Trainer's training loop sets the sampler's epoch itself"
    elif shuffled != "False":
        try:
            if not loader or dotted(ast.parse(loader, mode="eval").body) is None:
                raise NoFix("the loader has no name")
            edits.append(set_epoch.insert(parsed, call.lineno, f"{loader}.sampler"))
        except (NoFix, SyntaxError) as exc:
            # iterated once there is nothing to reseed; if it is iterated epoch after epoch,
            # the re-lint reports DDP804 and the fix is declined with this reason
            unset = f"; no set_epoch placed: {exc}"
    return [(edits, f"give the loader sampler={name}({data}, shuffle={shuffled})"
             + (" and set its epoch" if not unset and shuffled != "False" else unset))]


def _after_init(finding: Finding, parsed: Parsed, call: ast.Call) -> None:
    """DistributedSampler reads the world size when it is made: the process group must exist."""
    where = str(finding.evidence.get("process_group") or "")
    file, _, line = where.rpartition(":")
    if file != parsed.display or not line.isdigit():
        return
    inits = [n for n in walk(parsed.tree) if isinstance(n, ast.Call) and n.lineno == int(line)]
    if inits and parsed.scope(inits[0]) is parsed.scope(call) and inits[0].lineno > call.lineno:
        raise NoFix(f"the loader is built before the process group is set up (line {line}): "
                    "a DistributedSampler made there would fail")


def _sampler_name(parsed: Parsed) -> tuple[str, list[Edit]]:
    """What the file calls DistributedSampler, and the import to add when it has none."""
    name = parsed.imported_as("DistributedSampler", SAMPLER_MODULES)
    if name:
        return name, []
    if "DistributedSampler" in parsed.bound_in(parsed.tree, 10 ** 9):
        raise NoFix("the file binds the name DistributedSampler to something else")
    return "DistributedSampler", [parsed.add_import("from torch.utils.data.distributed import DistributedSampler")]


def _loader_edits(parsed: Parsed, call: ast.Call, name: str, data: str) -> tuple[list[Edit], str]:
    """The edits of the DataLoader call and the shuffle its sampler gets."""
    shuffle = keyword(call, "shuffle")
    given = keyword(call, "sampler")
    if given is not None:
        kind = last_name(given.func) if isinstance(given, ast.Call) else None
        if kind not in KEEPS:
            raise NoFix(f"the loader's sampler `{parsed.source.segment(given)}` is not a Random/SequentialSampler: "
                        "what it draws is the user's choice")
        value = KEEPS[kind]
        start, end = parsed.source.span(given)
        edits = [Edit(start, end, f"{name}({data}, shuffle={value})")]
        if shuffle is not None:
            edits.append(_drop_keyword(parsed, call, "shuffle"))
        return edits, value
    if shuffle is not None:
        value = parsed.source.segment(shuffle)
        kw = next(k for k in call.keywords if k.arg == "shuffle")
        start, end = parsed.source.span(kw)
        return [Edit(start, end, f"sampler={name}({data}, shuffle={value})")], \
            ("False" if is_const(shuffle, False) else value)
    last = (call.args + call.keywords)[-1]
    at = parsed.source.span(last)[1]
    return [Edit(at, at, f", sampler={name}({data}, shuffle=False)")], "False"


def _drop_keyword(parsed: Parsed, call: ast.Call, arg: str) -> Edit:
    """Remove `, arg=value` (with the comma before it)."""
    items = sorted(call.args + call.keywords, key=lambda n: (n.lineno, n.col_offset))
    index = next(i for i, n in enumerate(items) if isinstance(n, ast.keyword) and n.arg == arg)
    start, end = parsed.source.span(items[index])
    if index > 0:
        start = parsed.source.span(items[index - 1])[1]
    elif index + 1 < len(items):
        end = parsed.source.span(items[index + 1])[0]
    return Edit(start, end, "")
