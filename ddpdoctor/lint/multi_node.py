"""Where a script's source tells the nodes of a job apart: a node rank, a number of nodes, a
SLURM node id. One writer per node (`if local_rank == 0: torch.save(...)`) is a finding only
where the code is written for several nodes; code that knows only the rank within the node
is, as written, a one-node job, and its local rank 0 is the job's rank 0 (docs/lint.md, "One
writer per node")."""

from __future__ import annotations

import ast
import re
from typing import Optional

from ddpdoctor.core.findings import Location
from ddpdoctor.lint.config_files import multi_node_launch
from ddpdoctor.lint.patterns import OPTIONS_HOLDER
from ddpdoctor.lint.ranks import PER_NODE

# Names that hold a node's index or the number of nodes wherever they appear...
NODE_NAME = re.compile(
    r"^(?:node_?rank|nnodes|num_?machines|machine_?rank|world_?nodes|"
    r"slurm_?nodeid|slurm_?nnodes|slurm_?job_?num_?nodes|slurm_?job_?nodelist|slurm_?nodelist|"
    r"slurm_?step_?node_?list|pmix_?nodeid|ompi_?comm_?world_?node_?rank)$",
    re.IGNORECASE)
# ...and names a graph uses too (`data.num_nodes`, `node_index`): a machine's only as an option
# (`--num_nodes`, `args.num_nodes`, `cfg.n_nodes`), an environment variable's name, or a keyword
# of a Trainer (Lightning's `Trainer(num_nodes=2)`); and torchrun's GROUP_RANK (the node's index), a
# name only as the environment variable (`group_rank` is also a rank within a process subgroup)
SHARED_NAME = re.compile(r"^(?:num_?nodes|n_?nodes|nb_?nodes|nodes_?num|node_?num|node_?id|node_?idx|node_?index|nodes|"
                         r"number_?of_?nodes)$",  # (DGL's and networkx's `g.number_of_nodes()` too)
                         re.IGNORECASE)
# what a count of processes per node is spelt with (ranks.PER_NODE's words, lower case)
_PER_NODE_HINTS = ("per_node", "gpus", "device_count", "nproc", "local_size", "local_world_size")
_MULTI_NODE_FILE = re.compile(r"multi[_-]?node", re.IGNORECASE)


def told_apart(files, script, unreached: tuple = ()) -> Optional[Location]:
    """The first place in the files read where the source names a node's index or the node
    count, or in a shell script beside the entry script that launches it on several nodes
    (`#SBATCH --nodes=2`, `torchrun --nnodes 2`); None where nothing tells nodes apart.
    unreached: (file, first line, last line) of the package's functions the script never runs - a
    vendored package's SLURM set-up beside the script's own one-node launch (SinSR's basicsr
    copy) says nothing of how this script is launched."""
    found = _in_sources(files, unreached)
    if found is None and script is not None:
        launch = multi_node_launch(script.path, script.hydra_configs)
        found = Location(*launch) if launch else None
    return found


def _in_sources(files, unreached: tuple = ()) -> Optional[Location]:
    # an ambiguous option name the code itself assigns (`args.num_nodes = len(VOCAB)`, a graph's
    # node types) is the program's own value, not the machine count a launch hands it
    # (every SHARED_NAME word says "node": the files that never do are not walked for them)
    noded = [source for source in files if source.tree is not None
             and "node" in "\n".join(source.lines).lower()]
    assigned = {node.attr for source in noded for node in source.of(ast.Attribute)
                if node.ctx.__class__ is ast.Store and SHARED_NAME.match(node.attr)}
    # and one no code reads (`--node_num`, "number of nodes for a tree", declared and never read):
    # the launch's value goes nowhere, so it tells no nodes apart; a read (`args.num_nodes`,
    # `getattr(args, "num_nodes")`, `cfg["num_nodes"]`) is where the value goes
    read = {node.attr for source in noded for node in source.of(ast.Attribute)
            if node.ctx.__class__ is ast.Load and SHARED_NAME.match(node.attr)} | \
        {node.value for source in noded for node in source.of(ast.Constant)
         if isinstance(node.value, str) and SHARED_NAME.match(node.value)} | \
        {node.id for source in noded for node in source.of(ast.Name)
         if node.ctx.__class__ is ast.Load and SHARED_NAME.match(node.id)}  # (click's option, a parameter)
    for source in files:
        if source.tree is None:
            continue
        # an option handed one node in the command the code builds (`["torchrun", "--nnodes",
        # "1", ...]`): the value says one node, whatever the option is called
        one_node = {id(elts[i]) for seq in source.of(ast.List, ast.Tuple)
                    for elts in (seq.elts,) for i in range(len(elts) - 1)
                    if elts[i + 1].__class__ is ast.Constant and str(elts[i + 1].value) == "1"}
        if _MULTI_NODE_FILE.search(source.path.stem):
            return Location(source.display, 1)  # `multinode.py`: the file says what it is for
        # a look at the text first (most files name no node): an AST walk only where it may pay
        body = "\n".join(source.lines).lower()
        named = "node" in body or "machine" in body or "group_rank" in body
        counted = "*" in body and any(hint in body for hint in _PER_NODE_HINTS)
        if not (named or counted):
            continue
        # each kind's nodes are a list the file keeps (SourceFile.of); the first place by line
        kinds = (ast.Name, ast.Attribute, ast.arg, ast.Constant, ast.Call) if named else ()
        found = [node for kind in kinds for node in source.of(kind) if _names_a_node(node)
                 and not (node.__class__ is ast.Attribute and node.attr in assigned)
                 and not (node.__class__ is ast.Constant and node.value.lstrip("-").replace("-", "_") in assigned)
                 and not (node.__class__ is ast.Constant and node.value.startswith("--") and _unread_option(node, read))
                 and id(node) not in one_node]
        aside = [(first, last) for display, first, last in unreached if display == source.display]
        if counted:
            # (and in two steps: `base_rank = opt.rank * opt.ngpus_per_node`, then `opt.rank =
            # base_rank + gpu`: the product kept in a name first)
            products = {t.id for a in source.of(ast.Assign) if _per_node_product(a.value)
                        for t in a.targets if t.__class__ is ast.Name}
            found += [node for node in source.of(ast.BinOp) if _node_offset(node, products)
                      and not _one_node_index(node, files)]
        if aside:
            found = [node for node in found if not any(first <= getattr(node, "lineno", 0) <= last
                                                       for first, last in aside)]
        if found:
            return Location(source.display, min(getattr(node, "lineno", 1) for node in found))
    return None


def _unread_option(node: ast.Constant, read: set) -> bool:
    """`"--node_num"`, a count a graph has too (SHARED_NAME, not NODE_NAME), that nothing reads.
    (An index option - `--node_index` beside `--gpu_per_node` - names which machine a process
    runs on even unread: a graph's node has no use for one on the command line.)"""
    word = node.value.lstrip("-").replace("-", "_")
    return not NODE_NAME.match(word) and bool(_NODE_COUNT.match(word)) and word not in read


# the SHARED_NAME words that count nodes (not one node's index)
_NODE_COUNT = re.compile(r"^(?:num_?nodes|n_?nodes|nb_?nodes|nodes_?num|node_?num|nodes|number_?of_?nodes)$", re.IGNORECASE)


def _node_offset(node: ast.BinOp, products: frozenset = frozenset()) -> bool:
    """`args.rank * ngpus_per_node + gpu` (torch's ImageNet example, MoCo...): the job's rank
    made from a node's index times the processes a node runs, plus the rank within it; also
    `base_rank + gpu` where the file binds `base_rank` to such a product (products: those names)."""
    if node.op.__class__ is not ast.Add:
        return False
    return any(_per_node_product(side) or (side.__class__ is ast.Name and side.id in products)
               for side in (node.left, node.right))


def _per_node_product(node: ast.AST) -> bool:
    """`args.rank * ngpus_per_node`: a node's index times the processes a node runs."""
    return node.__class__ is ast.BinOp and node.op.__class__ is ast.Mult and any(
        PER_NODE.search(_identifier(operand)) for operand in (node.left, node.right))


def _one_node_index(node: ast.BinOp, files) -> bool:
    """The node's index in `args.rank * ngpus_per_node + gpu` is pinned to 0: the code sets
    `args.rank = 0` and offers no option or variable of that name (RawNeXt's main.py, which also
    sets `world_size = ngpus_per_node`): the formula of torch's ImageNet example kept for one node."""
    side = next((s for s in (node.left, node.right) if s.__class__ is ast.BinOp
                 and s.op.__class__ is ast.Mult), None)
    if side is None:
        return False
    index = next((o for o in (side.left, side.right) if not PER_NODE.search(_identifier(o))), None)
    key = _identifier(index) if index is not None and index.__class__ in (ast.Name, ast.Attribute) else ""
    if not key:
        return False
    pinned = False
    for source in files:
        if source.tree is None:
            continue
        for assign in source.of(ast.Assign):
            for target in assign.targets:
                if _identifier(target) != key or ast.dump(target, include_attributes=False).replace("Store", "Load") \
                        != ast.dump(index, include_attributes=False):
                    continue  # (`self.rank = dist.get_rank()` elsewhere is another object's)
                if assign.value.__class__ is ast.Constant and assign.value.value == 0:
                    pinned = True
                elif not any(n is side for n in ast.walk(assign.value)):
                    return False  # set from something else somewhere: not known to be 0
        if any(c.value.lstrip("-") == key or c.value == key.upper() for c in source.of(ast.Constant)
               if isinstance(c.value, str)):
            return False  # an option or an environment variable of that name: a launch may set it
    return pinned


def _identifier(node: ast.AST) -> str:
    """The name an operand is read by: `ngpus_per_node`, `args.gpus` -> "gpus",
    `torch.cuda.device_count()` -> "device_count"; "" for anything else."""
    if node.__class__ is ast.Call:
        # `len(args.gpus)`: the list's name; else the function's (`device_count()`)
        node = node.args[0] if getattr(node.func, "id", "") == "len" and node.args else node.func
    if node.__class__ is ast.Name:
        return node.id
    if node.__class__ is ast.Attribute:
        return node.attr
    return ""


def _names_a_node(node: ast.AST) -> bool:
    cls = node.__class__
    if cls is ast.Constant:
        if not isinstance(node.value, str) or len(node.value) > 40:
            return False
        word = node.value.lstrip("-").replace("-", "_")
        # an option (`"--num_nodes"`) or an environment variable (`"SLURM_NNODES"`, `"NUM_NODES"`)
        return bool(NODE_NAME.match(word)) or word == "GROUP_RANK" or (bool(SHARED_NAME.match(word)) and (
            node.value.startswith("--") or word.isupper()))
    if cls is ast.Name:
        return bool(NODE_NAME.match(node.id))
    if cls is ast.arg:
        return bool(NODE_NAME.match(node.arg))
    if cls is ast.Call:
        func = node.func
        called = func.attr if func.__class__ is ast.Attribute else getattr(func, "id", "")
        return called in ("Trainer", "Fabric") and any(k.arg == "num_nodes" for k in node.keywords)
    if cls is ast.Attribute:
        if NODE_NAME.match(node.attr):
            return True
        owner = node.value  # `args.num_nodes`, `self.args.num_nodes`
        held = owner.id if owner.__class__ is ast.Name else owner.attr if owner.__class__ is ast.Attribute else ""
        return bool(SHARED_NAME.match(node.attr)) and bool(OPTIONS_HOLDER.match(held))
    return False
