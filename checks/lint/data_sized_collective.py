"""DDP807: a collective whose tensor's size comes from the data (the static twin of DDP506)."""

from __future__ import annotations

from ddpdoctor.core.findings import Problem, Severity
from ddpdoctor.core.registry import Skipped, check
from ddpdoctor.lint.facts import LintFacts


@check("DDP807", "A collective's size comes from the data", Severity.WARNING)
def data_sized_collective(facts: LintFacts) -> list[Problem] | Skipped:
    """
    What it detects:
        A tensor collective (all_reduce, all_gather, broadcast, reduce, ..., and Accelerate's
        `accelerator.gather` / `accelerator.reduce`) handed a tensor whose length follows the
        values in the batch, with no exchange of that size before it in the same function. Sizes from the data: `torch.bincount(x)` without `minlength`,
        `unique`, `nonzero`, `argwhere`, `masked_select`, boolean-mask indexing (`x[x > 0]`,
        `x[mask]`), a list filled under a condition in a loop over the batch (or a filtered
        comprehension) turned into a tensor, and what is computed elementwise from them. A
        size exchange is an all_reduce with `ReduceOp.MAX`, an all_gather, all_gather_object,
        broadcast, broadcast_object_list or `accelerator.pad_across_processes` before the
        collective. Padding (`F.pad`), reductions
        (`.sum()`, `len()`) and `minlength` fix the size. `ddpdoctor probe` sees the same bug
        at run time as DDP506 (sizes that change at one call site) or DDP501 (sizes that differ
        between ranks); a probe reports one finding with both evidences. A list appended once
        on every pass (in both branches of an `if`) has a fixed length. The count twin: a
        collective run once per key of a dict whose keys come from the data
        (`for d in domain.tolist(): losses[d] = ...`, then `for k, v in losses.items():
        dist.all_reduce(v)`): ranks that saw different keys run different numbers of calls.
        Also keys of a fixed list kept only where the rank's own data has them (`for i, mode
        in enumerate(modes): if not (types == i).any(): continue; acc[mode] = ...`).

        A list extended (`outs.extend(batch_out)`) on both sides of a branch inside the loop
        grows alike on every pass, as one appended on both sides does: no data size.
        A dict's own keys rewritten in place (`for key in losses: losses[key] = losses[key][0]`)
        are the keys it had: the rewrite adds none from the data.
    Why it hurts:
        Every rank must pass a tensor of the same size to a collective. A size that follows the
        batch agrees while the batches happen to agree (the same classes seen, the same number
        of selected items), and the first batch where they do not hangs the job, or on gloo
        aborts it or returns a wrong sum - hours into a run that passed every short test.

    How to fix:
        Give the tensor a size that does not depend on the data, or agree on the size first:

            counts = torch.bincount(preds, minlength=num_classes)   # fixed size
            dist.all_reduce(counts)

            # variable length: agree on the longest, pad, then reduce or gather
            n = torch.tensor([len(x)]); dist.all_reduce(n, op=dist.ReduceOp.MAX)
            x = torch.nn.functional.pad(x, (0, int(n) - len(x)))

        or `dist.all_gather_object(out, items)` for variable-size Python objects.
    """
    if facts.distributed is None and facts.framework is None and not facts.data_sized:
        return Skipped("the script sets up no process group")
    problems = []
    for found in facts.data_sized:
        where = "at the top level" if found.function == "<module>" else f"in {found.function}()"
        if getattr(found, "kind", "size") == "count":
            message = (f"{found.op} at {found.location} ({where}) runs {found.source} "
                       f"({found.source_location}): ranks that saw different data run a different "
                       "number of them, pairing one key's value with another's or hanging")
            hint = ("agree on the keys first (all_gather_object of the key set, then loop over the "
                    "union in a fixed order, with zeros for the missing), or reduce one fixed-size tensor")
        else:
            message = (f"{found.op} at {found.location} ({where}) is handed a tensor whose "
                       f"size comes from the data: {found.source} ({found.source_location}), and "
                       "nothing before it in that function exchanges the size (an all_reduce with "
                       "MAX, an all_gather, a broadcast): the ranks agree only while their batches "
                       "happen to agree")
            hint = ("make the size independent of the data (torch.bincount(x, minlength=num_classes)) "
                    "or agree on it first: all_reduce(MAX) of the length, then pad")
            if found.op.startswith("accelerator."):
                hint = ("pad to the longest rank's size first: `t = accelerator.pad_across_processes(t, dim=0)`, "
                        f"then {found.op} (drop the padding rows after it), or make the size independent of the data")
        problems.append(Problem(
            message=message, hint=hint, location=found.location,
            evidence={"op": found.op, "source": found.source,
                      "source_location": str(found.source_location), "function": found.function},
        ))
    return problems
