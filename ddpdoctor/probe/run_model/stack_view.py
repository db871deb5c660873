"""One rank's stack, read for where it stands: its innermost user frame, the library call made
from it, and a finding location. The watchdog reads it live (launch/watchdog.py, run_model/busy_or_blocked.py), the
analysis at the end of a run (analysis/stack_groups.py), attach from sampled stacks.

A "user frame" is one in the user's code: not torch, not ddpdoctor, not the standard library,
not an installed package (core/paths.is_user_file, the one rule).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from ddpdoctor.core.findings import Location
from ddpdoctor.core.paths import is_user_file  # noqa: F401 - the one rule, as stack readers import it
from ddpdoctor.probe.run_model.outcome import Frame
# What a user frame calls when it waits for the other ranks, and the wider set stacks judged
# after the fact read as waiting (core/torch_names.py says which is which).
from ddpdoctor.core.torch_names import STACK_COLLECTIVE_CALLS as COLLECTIVE_CALLS
from ddpdoctor.core.torch_names import WAITING_CALLS  # noqa: F401 - stack readers import it here

MAX_CALLERS = 3  # outer user frames kept as a location's context

# Library frames that only forward a call: skipped when naming what the user's code called.
_FORWARDERS = {"wrapper", "inner", "_fn", "decorate_context", "_call_impl", "_wrapped_call_impl",
               "<lambda>", "wrapped", "_wrapper", "forward_wrapper", "_exception_logger"}


def func_words(func: str) -> str:
    """A frame's function as a message names it: Python calls a script's module level `<module>`,
    which a reader (and a template check) takes for a hole; say what it is."""
    return "the script's top level" if func == "<module>" else func


@dataclass
class StackView:
    """One rank's main-thread stack, innermost frame first."""

    rank: int
    frames: list[Frame]
    method: str  # "py-spy" | "faulthandler"
    idle: Optional[bool] = None
    text: str = ""

    @property
    def user_frame(self) -> Optional[Frame]:
        """The innermost frame in the user's code."""
        return next((f for f in self.frames if is_user_file(f.file)), None)

    @property
    def location(self) -> Optional[Location]:
        """The innermost user frame as a finding location, the outer user frames as its
        context ("called from Trainer.fit at train.py:70")."""
        user = self.user_frame
        if user is None:
            return None
        index = self.frames.index(user)
        context = []
        for i in range(index + 1, len(self.frames)):
            frame = self.frames[i]
            if is_user_file(frame.file) and len(context) < MAX_CALLERS:
                context.append((frame.file, frame.line, bare_callee(self.frames[i - 1].func)))
        return Location(user.file, user.line, tuple(context))

    @property
    def call(self) -> str:
        """What the innermost user frame was calling: "all_reduce", "backward", or the user
        function itself when it was running its own Python."""
        user = self.user_frame
        if user is None:
            return self.frames[0].func if self.frames else "?"
        index = self.frames.index(user)
        inner = self.frames[:index]
        for frame in reversed(inner):  # from the user frame inwards
            if bare_name(frame.func) not in _FORWARDERS:
                return frame.func
        return inner[0].func if inner else user.func

    @property
    def in_torch_distributed(self) -> bool:
        """The rank was inside torch.distributed or DDP (where ranks wait for each other)."""
        return any("torch/distributed/" in f.file.replace("\\", "/")
                   or "torch/nn/parallel/distributed" in f.file.replace("\\", "/")
                   for f in self.frames)

    @property
    def in_library(self) -> bool:
        user = self.user_frame
        return user is not None and self.frames.index(user) > 0

    @property
    def signature(self) -> tuple:
        user = self.user_frame
        chain = tuple((f.func, f.file, f.line) for f in self.frames if is_user_file(f.file))
        head = (user.func, user.file, user.line) if user else None
        return (head, self.call, chain)

    def place(self, plural: bool = False) -> str:
        """"waits in all_reduce at train.py:57" / "is running spin at train.py:12" (or the
        plural forms "wait", "are running", for a group of ranks)."""
        user = self.user_frame
        where = f" at {user.file}:{user.line}" if user else ""
        if not self.in_library and user is not None:
            return f"{'are' if plural else 'is'} running {func_words(user.func)}{where}"
        if self.idle is False:
            return f"{'are' if plural else 'is'} busy in {self.call}{where}"
        return f"{'wait' if plural else 'waits'} in {self.call}{where}"

    def lines(self, limit: int = 25) -> str:
        """"all_reduce (torch/distributed/distributed_c10d.py:3252) <- train_step (train.py:57)"."""
        shown = [str(f) for f in self.frames[:limit]]
        if len(self.frames) > limit:
            shown.append(f"... {len(self.frames) - limit} outer frames")
        return " <- ".join(shown)


def bare_callee(func: str) -> str:
    """py-spy's "Trainer.fit" stays; "_exception_logger.<locals>.wrapper" -> "wrapper"."""
    return func.rsplit("<locals>.", 1)[-1]


def bare_name(func: str) -> str:
    """py-spy qualifies names: "_exception_logger.<locals>.wrapper" -> "wrapper"."""
    return func.rsplit(".", 1)[-1]
