"""What the lint recognises in an expression: a rank, a rank-conditional test, a collective.

Everything here reads names, never values: `rank == 0` is rank-conditional because of what
`rank` is called and where it came from (dist.get_rank(), os.environ["RANK"], ...), which is
how people write DDP scripts.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from typing import Callable, Optional

# Names that hold a process's rank (or a per-rank index).
RANK_NAME = re.compile(r"^(?:\w*_)?rank$|^(?:local_|global_)?process_index$|^ordinal$|^proc_id$",
                       re.IGNORECASE)
# Calls that return a rank.
RANK_CALLS = {"get_rank", "get_local_rank", "get_global_rank", "get_node_local_rank", "get_ordinal",
              "get_process_index", "get_local_process_index", "local_process_index"}
RANK_ENV = {"RANK", "LOCAL_RANK", "GROUP_RANK", "NODE_RANK", "SLURM_PROCID", "SLURM_LOCALID",
            "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_LOCAL_RANK", "PMI_RANK", "MV2_COMM_WORLD_RANK"}
# Booleans that say "this is the main / zero rank".
MAIN_FLAG = re.compile(
    r"^(?:is_)?(?:global_|local_)?(?:master|main|chief|leader)(?:_process|_rank|_proc|_node|_worker)?$"
    r"|^is_(?:global_|local_)?(?:rank_?)?zero$|^(?:is_)?rank_?zero$|^is_world_process_zero$"
    r"|^is_local_process_zero$|^is_master_ordinal$|^is_logging_rank$",
    re.IGNORECASE)
# Decorators that make a function run on one rank only.
RANK_ONLY_DECORATORS = {"rank_zero_only", "main_process_only", "on_main_process",
                        "on_local_main_process", "on_process", "on_local_process", "rank_zero_first"}

# torch.distributed functions every rank of the group must enter.
TORCH_COLLECTIVES = {
    "all_reduce", "all_gather", "all_gather_into_tensor", "_all_gather_base", "all_gather_object",
    "all_gather_coalesced", "all_reduce_coalesced", "reduce", "reduce_scatter",
    "reduce_scatter_tensor", "_reduce_scatter_base", "broadcast", "broadcast_object_list", "barrier",
    "monitored_barrier", "gather", "gather_object", "scatter", "scatter_object_list", "all_to_all",
    "all_to_all_single", "new_group", "new_subgroups", "batch_isend_irecv",
}
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


def last_name(node: ast.AST) -> Optional[str]:
    """The last component of a name, attribute or call target: `self.train_loader` -> train_loader."""
    if isinstance(node, ast.Call):
        node = node.func
    if isinstance(node, ast.Attribute):
        return node.attr
    if isinstance(node, ast.Name):
        return node.id
    return None


def text(node: ast.AST, limit: int = 80) -> str:
    try:
        out = ast.unparse(node)
    except Exception:  # noqa: BLE001 - unparse of odd trees; the text is only for messages
        return "?"
    out = " ".join(out.split())
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


class RankNames:
    """Which names hold a rank (`rank`, `gpu_id = int(os.environ["LOCAL_RANK"])`) and which hold
    a rank test (`master_process = ddp_rank == 0`), learnt from the program's assignments."""

    def __init__(self) -> None:
        self.values: set[str] = set()
        self.flags: set[str] = set()

    def learn(self, trees: list[ast.Module]) -> None:
        assigns = [n for tree in trees for n in ast.walk(tree)
                   if isinstance(n, (ast.Assign, ast.AnnAssign)) and n.value is not None]
        changed = True
        while changed:  # a few rounds: seed_rank = rank; is_first = seed_rank == 0
            changed = False
            for node in assigns:
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                names = [last_name(t) for t in targets if isinstance(t, (ast.Name, ast.Attribute))]
                value = node.value
                for name in filter(None, names):
                    if name not in self.values and self.is_rank(value):
                        self.values.add(name)
                        changed = True
                    elif name not in self.flags and name not in self.values and self.guard(value) is not None:
                        self.flags.add(name)
                        changed = True

    def is_rank(self, node: ast.AST) -> bool:
        """The expression's value is (a function of only) this process's rank."""
        if isinstance(node, (ast.Name, ast.Attribute)):
            name = last_name(node)
            return bool(name) and (bool(RANK_NAME.match(name)) or name in self.values)
        if isinstance(node, ast.Call):
            if env_key(node) in RANK_ENV:
                return True
            name = last_name(node.func)
            if name in RANK_CALLS:
                return True
            if name in ("int", "str") and node.args:
                return self.is_rank(node.args[0])
            return False
        if isinstance(node, ast.Subscript):
            return env_key(node) in RANK_ENV
        if isinstance(node, ast.BinOp):
            return self.is_rank(node.left) or self.is_rank(node.right)
        return False

    def is_flag(self, node: ast.AST) -> bool:
        """A boolean that is true on the main rank only (`master_process`, `is_main_process`)."""
        if isinstance(node, ast.Call) and not node.args:
            node = node.func  # is_main_process(), trainer.is_global_zero()
        if isinstance(node, (ast.Name, ast.Attribute)):
            name = last_name(node)
            return bool(name) and (bool(MAIN_FLAG.match(name)) or name in self.flags)
        return False

    def guard(self, test: ast.AST) -> Optional["RankTest"]:
        """The rank test in an `if`/`while` test, or None when the test is the same on every rank."""
        if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
            inner = self.guard(test.operand)
            return inner.negated() if inner else None
        if isinstance(test, ast.BoolOp):
            found = [g for g in (self.guard(v) for v in test.values) if g is not None]
            if not found:
                return None
            if len(found) == 1 and isinstance(test.op, ast.And):
                return RankTest(text(test), found[0].key, found[0].polarity)
            return RankTest(text(test), found[0].key, "other")
        if self.is_flag(test):
            return RankTest(text(test), last_name(test.func if isinstance(test, ast.Call) else test) or "?", "zero")
        if isinstance(test, ast.Compare) and len(test.ops) == 1:
            left, op, right = test.left, test.ops[0], test.comparators[0]
            if self.is_rank(right) and not self.is_rank(left):
                left, right = right, left
                op = {ast.Lt: ast.Gt(), ast.Gt: ast.Lt(), ast.LtE: ast.GtE(), ast.GtE: ast.LtE()}.get(type(op), op)
            if not self.is_rank(left):
                return None
            # local_rank == -1 / rank is None: "are we distributed at all", the same on every rank
            if is_const(right, -1, None):
                return None
            if isinstance(right, (ast.List, ast.Tuple, ast.Set)):
                if all(is_const(e, -1, None) for e in right.elts):
                    return None
                has_zero = any(is_const(e, 0) for e in right.elts)
                polarity = "other"
                if has_zero and isinstance(op, ast.In):
                    polarity = "zero"
                elif has_zero and isinstance(op, ast.NotIn):
                    polarity = "nonzero"
                return RankTest(text(test), _key(left), polarity)
            polarity = "other"
            if is_const(right, 0):
                if isinstance(op, (ast.Eq, ast.LtE, ast.Is)):
                    polarity = "zero"
                elif isinstance(op, (ast.NotEq, ast.Gt, ast.IsNot)):
                    polarity = "nonzero"
            elif is_const(right, 1):
                if isinstance(op, ast.Lt):
                    polarity = "zero"
                elif isinstance(op, ast.GtE):
                    polarity = "nonzero"
            return RankTest(text(test), _key(left), polarity)
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

    def negated(self) -> "RankTest":
        flip = {"zero": "nonzero", "nonzero": "zero"}.get(self.polarity, "other")
        return RankTest(f"not ({self.text})", self.key, flip)


def keyword(call: ast.Call, name: str) -> Optional[ast.AST]:
    for kw in call.keywords:
        if kw.arg == name:
            return kw.value
    return None


def truthy(node: Optional[ast.AST]) -> bool:
    """A keyword value that is not literally False/None/0."""
    return node is not None and not is_const(node, False, None, 0)


CollectiveMatcher = Callable[[ast.Call], Optional[str]]
