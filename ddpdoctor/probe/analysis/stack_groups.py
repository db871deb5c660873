"""Each rank's stack at the end of a run, from the watchdog (py-spy) or a faulthandler dump, and
how ranks are grouped by where they stand: the one grouping, "waiting in a collective" test and
stall advice of every stall verdict (the probe's DDP503 and attach's, over its sampled stacks).

Frames are innermost first. A "user frame" is one in the user's code: not torch, not
ddpdoctor, not the standard library, not an installed package. Two ranks stand in the same
place when their innermost user frame, the library call made from it and their chain of user
frames are the same; lines inside torch internals are ignored.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Mapping, Optional

from ddpdoctor.core.findings import Location
from ddpdoctor.probe.run_model.loaded_run import RunModel
from ddpdoctor.probe.words.large_world import SHOWN_PER_GROUP
from ddpdoctor.probe.run_model.outcome import Frame
from ddpdoctor.probe.run_model.stack_text import parse_faulthandler
from ddpdoctor.probe.run_model.stack_view import WAITING_CALLS, StackView, bare_name, is_user_file
from ddpdoctor.probe.words.wording import rank_list


@dataclass
class StackGroups:
    """Ranks grouped by where their stacks stand, largest group first."""

    groups: list[tuple[list[int], StackView]] = field(default_factory=list)
    method: str = ""  # how the stacks were obtained, for the message

    def __bool__(self) -> bool:
        return bool(self.groups)


@dataclass
class StandGroup:
    """Ranks that stand in one place, as a stall finding names them."""

    ranks: list[int]
    where: str  # "wait in all_reduce at train.py:57"
    location: Optional[Location]
    waiting: bool  # waiting in a collective (waits_in_collective), not working on its own
    lines: list[str] = field(default_factory=list)  # the stack, or what the records say, for the detail
    view: Optional[StackView] = None  # the group's stack, where it has one


def waits_in_collective(view: StackView) -> bool:
    """The stack waits for the other ranks: in one of torch.distributed's waiting calls, or inside
    torch.distributed. A rank waiting for its peers under DDP shows no torch.distributed frame: it
    sits inside loss.backward() (the reducer waits in C++), so backward counts as waiting."""
    return bare_name(view.call) in WAITING_CALLS or view.in_torch_distributed


def stall_hint(groups: list[StandGroup], odd: StandGroup, unseen_rank: str, stall_timeout: bool) -> str:
    """stall_advice for these groups and the odd one out."""
    return stall_advice(len(groups), any(g.waiting for g in groups), odd.ranks, odd.waiting,
                        f"at {odd.location}" if odd.location else "", unseen_rank, stall_timeout)


def detail_line(group: StandGroup, label: str = "") -> str:
    """"ranks 0, 1: <its stack>" (or where it stands, without one) for a finding's detail."""
    label = label or ("rank " if len(group.ranks) == 1 else "ranks ") + ", ".join(map(str, group.ranks))
    return f"{label}: " + (group.lines[0] if group.lines else group.where)


def on_hosts(hosts: dict[int, str], ranks: list[int], large: bool = False) -> str:
    """" on node 1 (gpu-b)": the hosts of these ranks, where hosts were told apart (several nodes)."""
    names = sorted({hosts[r] for r in ranks if r in hosts})
    if large and len(names) > SHOWN_PER_GROUP:  # 128 nodes: the first few by number, then a count
        names = sorted(names, key=_node_number)
        return f" on {', '.join(names[:SHOWN_PER_GROUP])} and {len(names) - SHOWN_PER_GROUP:,} more nodes"
    return f" on {', '.join(names)}" if names else ""


def _node_number(name: str) -> tuple:
    """"node 12 (gpu-b)" -> (12, name): nodes in numeric order, not 1, 10, 100."""
    digits = "".join(c for c in name.split("(")[0] if c.isdigit())
    return (int(digits) if digits else -1, name)


def rank_stacks(run: RunModel) -> Mapping[int, StackView]:
    """Every rank's stack: the watchdog's (py-spy or faulthandler) first, else the
    faulthandler text the rank wrote itself on a signal (rank-<R>.stack)."""
    # Asked once per rank by the checks (whereabouts): computed once per run, or a world of
    # 1,024 ranks costs a million stack views; and handed out read-only, not copied, or each
    # question copies every rank's entry (16 million at 4,096 ranks).
    outcome = run.outcome
    key = (outcome, outcome.stacks if outcome else None, len(outcome.stacks) if outcome else -1,
           run.ranks, len(run.ranks))
    return MappingProxyType(run.derived_once("rank_stacks", key, lambda: _rank_stacks(run)))


def _rank_stacks(run: RunModel) -> dict[int, StackView]:
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
    return views


def _short_paths(run: RunModel):
    """Stacks carry absolute paths; telemetry sites are relative to the rank's working
    directory. A user frame whose absolute path ends in a path the telemetry names is shown
    as that name, so one file reads the same in every finding."""
    suffixes = run.derived_once("site_files", run.launch_key(), lambda: _site_files(run))

    def shorten(frames: list[Frame]) -> list[Frame]:
        result = []
        for frame in frames:
            name = frame.file
            if name.startswith("/") and is_user_file(name):
                name = next((k for k in suffixes if name.endswith("/" + k.lstrip("./"))), name)
            result.append(Frame(frame.func, name, frame.line))
        return result

    return shorten


def _site_files(run: RunModel) -> list[str]:
    """Every relative file name the records' sites (and the script) give, longest first: one
    pass over every record of every rank, once per run (stacks and workers' stacks read it)."""
    known = {run.meta.script} if run.meta.script and not run.meta.script.startswith("/") else set()
    for rank_run in run.ranks.values():
        for site in rank_run.sites():
            if site.file and not site.file.startswith("/"):
                known.add(site.file)
    return sorted(known, key=len, reverse=True)


def group_stacks(views: Mapping[int, StackView]) -> StackGroups:
    """Ranks with the same stack signature together; largest group first, ties by lowest rank."""
    by_signature: dict[tuple, list[int]] = {}
    for rank in sorted(views):
        by_signature.setdefault(views[rank].signature, []).append(rank)
    groups = [(ranks, views[ranks[0]]) for ranks in by_signature.values()]
    groups.sort(key=lambda g: (-len(g[0]), g[0][0]))
    methods = sorted({v.method for v in views.values()})
    return StackGroups(groups, "/".join(methods))


def stall_advice(groups: int, any_waiting: bool, odd_ranks: list[int], odd_waiting: bool,
                 where: str, unseen_rank: str, stall_timeout: bool) -> str:
    """What to do about ranks that stopped making progress, from how their stacks group: the
    one wording of probe's DDP201 and attach's stall verdict, which see the same groups.

    `groups`: how many places the ranks stand in; `odd_ranks`/`odd_waiting`/`where` ("at
    train.py:57" or ""): the group that stands apart; `unseen_rank`: where a rank outside what
    was looked at may be ("a rank outside this job"); `stall_timeout`: whether the caller judged
    by a --stall-timeout the user can raise (probe), so a slow step can be told from a hang."""
    if groups == 1 and any_waiting:
        return (f"every rank waits in the same place: {unseen_rank} may be missing, or the ranks "
                "cannot reach each other (run `ddpdoctor preflight`)"
                + ("; if a step is just slow, raise --stall-timeout" if stall_timeout else ""))
    look = f" {where}" if where else ""
    if any_waiting and not odd_waiting:
        return (f"{rank_list(odd_ranks)} never reached the collective the others wait in: look"
                f"{look} for a rank-dependent branch, an endless loop or blocking I/O; every rank "
                "must reach the same collectives in the same order")
    if any_waiting:
        return ("the ranks wait in different collectives: every rank must call the same collectives "
                "in the same order (DDP501/DDP502 name the first divergence)")
    return ("no rank is waiting in a collective: the script is busy (an endless loop, blocking I/O) "
            f"{where or 'somewhere'}"
            + (", or a step takes longer than the stall timeout (raise --stall-timeout)"
               if stall_timeout else ""))


# A rank's main thread in here waits for a batch from its DataLoader workers.
_DATALOADER_FILE = "torch/utils/data/dataloader.py"


def blocking_workers(run: RunModel) -> dict[int, StackView]:
    """rank -> the stack of its DataLoader worker that blocks in the user's code (a Dataset's
    __getitem__, a collate_fn), for every rank whose main thread waits for a batch: that rank
    is stuck on its worker, not skipping its peers' collectives."""
    views = rank_stacks(run)
    short = _short_paths(run)
    found: dict[int, StackView] = {}
    for stack in (run.outcome.stacks if run.outcome is not None else []):
        view = views.get(stack.rank)
        if view is None or not stack.workers:
            continue
        if not any(f.file.replace("\\", "/").endswith(_DATALOADER_FILE) for f in view.frames):
            continue
        for worker in stack.workers:
            worker_view = StackView(stack.rank, short(worker.frames), worker.method, worker.idle,
                                    worker.text)
            if worker_view.user_frame is not None:
                found[stack.rank] = worker_view
                break
    return found
