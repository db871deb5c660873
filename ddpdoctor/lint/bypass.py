"""DDP810's facts: a training backward whose loss the forward computed round the DDP wrapper
(`model.module.encode(x)`, `raw = model.module; raw(x)`), where no other step all-reduces the
gradients by hand.

DDP's forward prepares its reducer for the backward that follows; a forward of the module inside
skips that, the autograd hooks then all-reduce nothing, and each rank's optimizer steps on its
own gradients: the replicas drift apart silently (no hang, no error). Which losses count is
patterns.bypassed_wrapper's (the one home of "round the wrapper")."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from ddpdoctor.core.findings import Location
from ddpdoctor.lint.patterns import (averages_gradients, backward_loss, bypassed_on_a_side, bypassed_wrapper,
                                     discarded, dotted, handed_unwrapped, text)
from ddpdoctor.lint.rank_state import module_method


@dataclass
class BypassedBackward:
    """A backward of a loss the forward computed round a DDP wrapper."""

    location: Location  # the backward
    forward: str  # the call on the module inside, as written
    forward_at: Optional[Location] = None
    wrapper_at: Optional[Location] = None  # the DDP(...) that wraps it
    # the test of the helper that computes the loss round the wrapper on one side only, and
    # that side ("" where every way does): `if not self.rl_stage:` ... `else:` an SCST stage
    test: str = ""
    side: bool = True
    # the construction that handed the object the plain module before the wrapper was built
    # (`learn = Learner(mdl=mdl)`, then `mdl = DDP(mdl)`): the wrapper never reaches the forward
    handed_at: Optional[Location] = None
    # the DDP(...) is a statement of its own: made and thrown away, nothing holds the wrapper
    discarded: bool = False


def gather(builder) -> list[BypassedBackward]:
    program = builder.program
    reached = list(program.reachable)
    if any(averages_gradients(call) for fn in reached if not module_method(program, fn) for call in fn.own_calls):
        return []  # (some step averages the gradients itself: a forward round the wrapper may be the design)
    found, told = [], set()
    for fn in reached:
        # (a torch Module's own method fits the module itself - not through a wrapper - unless
        # the object keeps the DDP model in a field: a `Train(nn.Module)` whose `self.model` is
        # the wrapper, its `forward` running `self.model.module.get_loss(x)`)
        fitted = module_method(program, fn)
        for call in fn.own_calls:
            loss = backward_loss(call)
            if loss is None:
                continue
            hit = bypassed_wrapper(program, loss, fn)
            test, side = "", True
            if hit is None:
                hit = bypassed_on_a_side(program, loss, fn)
                if hit is None:
                    continue
                *hit, test, side = hit
            forward, where, ddp, ddp_fn = hit
            if fitted and not (where is fn and (dotted(forward.func) or "").startswith("self.")):
                continue
            key = (where.file.display, forward.lineno)
            if key in told:
                continue  # (`scaler.scale(loss).backward()` and `loss.backward()` of one forward)
            told.add(key)
            handed = handed_unwrapped(program, forward, where)
            found.append(BypassedBackward(
                Location(fn.file.display, call.lineno), text(forward, 80),
                Location(where.file.display, forward.lineno), Location(ddp_fn.file.display, ddp.lineno),
                test, side, Location(handed[3].file.display, handed[2].lineno) if handed else None,
                discarded(ddp_fn, ddp)))
    return found

