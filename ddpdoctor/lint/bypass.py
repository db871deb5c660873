"""DDP810's facts: a training backward whose loss the forward computed round the DDP wrapper
(`model.module.encode(x)`, `raw = model.module; raw(x)`), where no other step all-reduces the
gradients by hand.

DDP's forward prepares its reducer for the backward that follows; a forward of the module inside
skips that, the autograd hooks then all-reduce nothing, and each rank's optimizer steps on its
own gradients: the replicas drift apart silently (no hang, no error). Which losses count is
patterns.bypassed_wrapper's (the one home of "round the wrapper")."""

from __future__ import annotations

import ast
from dataclasses import dataclass
from typing import Optional

from ddpdoctor.core.findings import Location
from ddpdoctor.core.torch_names import LEGACY_COLLECTIVES, TENSOR_COLLECTIVES
from ddpdoctor.lint.nodes import walk
from ddpdoctor.lint.patterns import _loss_of, bypassed_wrapper, last_name, text
from ddpdoctor.lint.rank_state import module_method

# collectives that, handed a gradient, average it by hand (`dist.all_reduce(p.grad)`)
_GRADIENT_COLLECTIVES = frozenset(TENSOR_COLLECTIVES + LEGACY_COLLECTIVES)


@dataclass
class BypassedBackward:
    """A backward of a loss the forward computed round a DDP wrapper."""

    location: Location  # the backward
    forward: str  # the call on the module inside, as written
    forward_at: Optional[Location] = None
    wrapper_at: Optional[Location] = None  # the DDP(...) that wraps it


def gather(builder) -> list[BypassedBackward]:
    program = builder.program
    reached = [f for f in program.reachable if not module_method(program, f)]
    if _syncs_gradients(reached):
        return []
    found, told = [], set()
    for fn in reached:
        for call in fn.own_calls:
            loss = _backward_loss(call)
            if loss is None:
                continue
            hit = bypassed_wrapper(program, loss, fn)
            if hit is None:
                continue
            forward, where, ddp, ddp_fn = hit
            key = (where.file.display, forward.lineno)
            if key in told:
                continue  # (`scaler.scale(loss).backward()` and `loss.backward()` of one forward)
            told.add(key)
            found.append(BypassedBackward(
                Location(fn.file.display, call.lineno), text(forward, 80),
                Location(where.file.display, forward.lineno), Location(ddp_fn.file.display, ddp.lineno)))
    return found


def _backward_loss(call: ast.Call) -> Optional[ast.AST]:
    """The loss of `loss.backward()`, `scaler.scale(loss).backward()`, `accelerator.backward(loss)`."""
    func = call.func
    if not isinstance(func, ast.Attribute) or func.attr != "backward":
        return None
    if call.args and "accelerator" in (last_name(func.value) or "").lower():
        return call.args[0]
    return _loss_of(func.value)


def _syncs_gradients(functions) -> bool:
    """Some reached step averages gradients itself (`dist.all_reduce(p.grad)` over the
    parameters, a library's `allreduce_grads(params)`): a forward round the wrapper may be the design."""
    for fn in functions:
        for call in fn.own_calls:
            name = last_name(call.func) or ""
            lowered = name.lower()
            if "grad" in lowered and any(w in lowered for w in ("reduce", "sync", "average", "avg")):
                return True
            if name in _GRADIENT_COLLECTIVES and any(
                    (isinstance(n, ast.Attribute) and n.attr == "grad")
                    or (isinstance(n, ast.Name) and "grad" in n.id.lower()) for a in call.args[:1] for n in walk(a)):
                return True
    return False
