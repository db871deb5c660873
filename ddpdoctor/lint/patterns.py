"""What the lint recognises in an expression by its spelling: the calls and environment
variables that give a rank, the collectives, the rank-only decorators, and the RankTest a guard
is. Which names hold a rank is decided by data flow, scope by scope, in ranks.py.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from typing import Callable, Optional

# Calls that return a rank.
RANK_CALLS = {"get_rank", "get_local_rank", "get_global_rank", "get_node_local_rank", "get_ordinal",
              "get_process_index", "get_local_process_index", "local_process_index",
              "Get_rank"}  # mpi4py: MPI.COMM_WORLD.Get_rank()
RANK_ENV = {"RANK", "LOCAL_RANK", "GROUP_RANK", "NODE_RANK", "SLURM_PROCID", "SLURM_LOCALID",
            "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_LOCAL_RANK", "PMI_RANK", "MV2_COMM_WORLD_RANK"}
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

    def negated(self) -> "RankTest":
        flip = {"zero": "nonzero", "nonzero": "zero"}.get(self.polarity, "other")
        return RankTest(f"not ({self.text})", self.key, flip, self.assumption, self.scope)


def keyword(call: ast.Call, name: str) -> Optional[ast.AST]:
    for kw in call.keywords:
        if kw.arg == name:
            return kw.value
    return None


def truthy(node: Optional[ast.AST]) -> bool:
    """A keyword value that is not literally False/None/0."""
    return node is not None and not is_const(node, False, None, 0)


CollectiveMatcher = Callable[[ast.Call], Optional[str]]
