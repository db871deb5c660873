"""Each rank's stack at the end of a run, from the watchdog (py-spy) or a faulthandler dump, and
how ranks are grouped by where they stand.

Frames are innermost first. A "user frame" is one in the user's code: not torch, not
ddpdoctor, not the standard library, not an installed package. Two ranks stand in the same
place when their innermost user frame, the library call made from it and their chain of user
frames are the same; lines inside torch internals are ignored.
"""

from __future__ import annotations

import re
import sys
from dataclasses import dataclass, field
from typing import Optional

from ddpdoctor.core.findings import Location
from ddpdoctor.probe.analysis.runmodel import Frame, RunModel

MAX_CALLERS = 3  # outer user frames kept as a location's context

_LIBRARY_SEGMENTS = {"site-packages", "dist-packages", "torch", "ddpdoctor", "torchvision"}
# Standard-library names a user plausibly gives a script or folder of their own.
_USER_PLAUSIBLE = {"test", "tests", "code", "this", "site", "main", "data", "model", "train"}
_STDLIB = set(getattr(sys, "stdlib_module_names", ())) - _USER_PLAUSIBLE
_PYTHON_DIR = re.compile(r"^python\d+(\.\d+)?$")
# Library frames that only forward a call: skipped when naming what the user's code called.
_FORWARDERS = {"wrapper", "inner", "_fn", "decorate_context", "_call_impl", "_wrapped_call_impl",
               "<lambda>", "wrapped", "_wrapper", "forward_wrapper", "_exception_logger"}
_FAULTHANDLER_FRAME = re.compile(r'File "(?P<file>[^"]+)", line (?P<line>\d+) in (?P<func>\S+)')


def is_user_file(path: str) -> bool:
    """True for a file of the user's code, False for torch, ddpdoctor, packages, stdlib."""
    if not path or path.startswith("<"):
        return False
    parts = [p for p in path.replace("\\", "/").split("/") if p]
    if not parts:
        return False
    for part in parts[:-1]:
        if part in _LIBRARY_SEGMENTS or _PYTHON_DIR.match(part):
            return False
    # py-spy shortens library paths relative to sys.path: "torch/...", "threading.py".
    head = parts[0].removesuffix(".py") if len(parts) == 1 else parts[0]
    if not path.startswith("/") and head in _STDLIB:
        return False
    return True


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
            return f"{'are' if plural else 'is'} running {user.func}{where}"
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


def parse_faulthandler(text: str) -> list[Frame]:
    """The main thread's frames (innermost first) from faulthandler output.

    faulthandler prints one block per thread, most recent call first. The main thread is the
    block that reaches the script's module level (`<module>`); else the first block."""
    blocks: list[list[Frame]] = []
    current: Optional[list[Frame]] = None
    for line in text.splitlines():
        stripped = line.strip()
        if stripped.startswith(("Thread ", "Current thread ")) or "most recent call first" in stripped:
            current = []
            blocks.append(current)
            continue
        match = _FAULTHANDLER_FRAME.search(stripped)
        if match:
            if current is None:
                current = []
                blocks.append(current)
            current.append(Frame(match["func"], match["file"], int(match["line"])))
    blocks = [b for b in blocks if b]
    if not blocks:
        return []
    for block in blocks:
        if any(f.func == "<module>" for f in block):
            return block
    return blocks[0]


@dataclass
class StackGroups:
    """Ranks grouped by where their stacks stand, largest group first."""

    groups: list[tuple[list[int], StackView]] = field(default_factory=list)
    method: str = ""  # how the stacks were obtained, for the message

    def __bool__(self) -> bool:
        return bool(self.groups)


def rank_stacks(run: RunModel) -> dict[int, StackView]:
    """Every rank's stack: the watchdog's (py-spy or faulthandler) first, else the
    faulthandler text the rank wrote itself on a signal (rank-<R>.stack)."""
    # Asked once per rank by the checks (whereabouts): computed once per run, or a world of
    # 1,024 ranks costs a million stack views.
    outcome = run.outcome
    key = (id(outcome), id(outcome.stacks) if outcome else None, len(outcome.stacks) if outcome else -1,
           id(run.ranks), len(run.ranks))
    cached = run.__dict__.get("_rank_stacks")
    if cached is not None and cached[0] == key:
        return dict(cached[1])
    views: dict[int, StackView] = {}
    short = _short_paths(run)
    if run.outcome is not None:
        for stack in run.outcome.stacks:
            if stack.frames:
                views[stack.rank] = StackView(stack.rank, short(stack.frames), stack.method,
                                              stack.idle, stack.text)
            elif stack.text:
                frames = parse_faulthandler(stack.text)
                if frames:
                    views[stack.rank] = StackView(stack.rank, short(frames), "faulthandler", None,
                                                  stack.text)
    for rank, rank_run in run.ranks.items():
        if rank in views or not rank_run.signal_dump:
            continue
        frames = parse_faulthandler(rank_run.signal_dump)
        if frames:
            views[rank] = StackView(rank, short(frames), "faulthandler", None, rank_run.signal_dump)
    run.__dict__["_rank_stacks"] = (key, views)
    return dict(views)


def _short_paths(run: RunModel):
    """Stacks carry absolute paths; telemetry sites are relative to the rank's working
    directory. A user frame whose absolute path ends in a path the telemetry names is shown
    as that name, so one file reads the same in every finding."""
    known = {run.meta.script} if run.meta.script and not run.meta.script.startswith("/") else set()
    for rank_run in run.ranks.values():
        for record in rank_run.records:
            site = getattr(record, "site", None)
            if site is not None and site.file and not site.file.startswith("/"):
                known.add(site.file)
    suffixes = sorted(known, key=len, reverse=True)

    def shorten(frames: list[Frame]) -> list[Frame]:
        result = []
        for frame in frames:
            name = frame.file
            if name.startswith("/") and is_user_file(name):
                name = next((k for k in suffixes if name.endswith("/" + k.lstrip("./"))), name)
            result.append(Frame(frame.func, name, frame.line))
        return result

    return shorten


def group_stacks(views: dict[int, StackView]) -> StackGroups:
    """Ranks with the same stack signature together; largest group first, ties by lowest rank."""
    by_signature: dict[tuple, list[int]] = {}
    for rank in sorted(views):
        by_signature.setdefault(views[rank].signature, []).append(rank)
    groups = [(ranks, views[ranks[0]]) for ranks in by_signature.values()]
    groups.sort(key=lambda g: (-len(g[0]), g[0][0]))
    methods = sorted({v.method for v in views.values()})
    return StackGroups(groups, "/".join(methods))
