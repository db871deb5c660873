"""The names torch.distributed gives its calls, and the units its bandwidths are said in: the one
home the ranks (inrank/collectives.py), the stack readers (run_model/stack_view.py), the lint
(lint/patterns.py, lint/data_sized.py) and the analysis read them from.

Each use needs a different set, so the sets are named by what they hold and each reader composes
the ones it needs (and says why beside its composition); a name is spelled here once.

Standard library only: code inside the user's ranks imports this.
"""

# Tensor collectives of torch.distributed (2.13): every rank of the group enters them.
TENSOR_COLLECTIVES = (
    "all_reduce", "all_gather", "all_gather_into_tensor", "broadcast", "reduce", "reduce_scatter",
    "reduce_scatter_tensor", "all_to_all", "all_to_all_single", "gather", "scatter",
)
# Collectives of picklable objects: they exchange the sizes themselves, over tensor collectives
# of their own.
OBJECT_COLLECTIVES = ("all_gather_object", "broadcast_object_list", "gather_object", "scatter_object_list")
BARRIERS = ("barrier", "monitored_barrier")
# The public collectives a script calls: every rank of the group must enter each one.
COLLECTIVES = TENSOR_COLLECTIVES + OBJECT_COLLECTIVES + BARRIERS

# torch 2.13's single-tensor forms: all_gather_into_tensor and reduce_scatter_tensor call them,
# FSDP and FSDP2 call them directly. Not what a user frame calls.
SINGLE_TENSOR_FORMS = ("all_gather_single", "reduce_scatter_single")
# Older and private spellings still found in scripts (a static reading sees them).
LEGACY_COLLECTIVES = ("_all_gather_base", "_reduce_scatter_base", "all_gather_coalesced",
                      "all_reduce_coalesced")
# Making a group is itself collective: every rank of the world calls it.
GROUP_CREATION = ("new_group", "new_subgroups")
# Where a rank waits for the others while the job sets up (a frame of a stack, py-spy's names).
SETUP_WAITS = ("init_process_group", "new_group", "rendezvous", "_store_based_barrier")

# Point-to-point: only the pair meets.
BLOCKING_P2P = ("send", "recv")
ASYNC_P2P = ("isend", "irecv")
P2P_BATCH = ("batch_isend_irecv",)

# What a user frame calls when it waits for the other ranks, read from a stack (py-spy names the
# Python function): the collectives, blocking p2p, and setup.
STACK_COLLECTIVE_CALLS = frozenset(COLLECTIVES + BLOCKING_P2P + SETUP_WAITS)
# The same, plus where a rank waiting on its peers sits without a collective frame of its own:
# a p2p work's wait(), isend/irecv, and backward() (DDP's reducer waits in C++ under it). Stacks
# judged after the fact (DDP503, attach) read these as waiting; the live watchdog does not count
# backward, where a working rank also computes.
WAITING_CALLS = STACK_COLLECTIVE_CALLS | frozenset(ASYNC_P2P + ("wait", "backward"))

# Collectives whose result can carry a size every rank then holds, so a later collective sized
# by it is agreed (DDP506 in the probe, DDP807 in the lint): gathers and broadcasts of a tensor
# or an object list. all_reduce exchanges a size only with ReduceOp.MAX, which each reader tests.
SIZE_GATHERS = ("all_gather", "all_gather_into_tensor", "all_gather_single", "broadcast")
# What fills the tensor (or list) it is handed with another rank's value: a receive, a broadcast,
# a scatter (DDP809 in the lint: a count one side computes and the other receives is shared).
RECEIVING = ("recv", "irecv", "broadcast", "broadcast_object_list", "scatter", "scatter_object_list")
OBJECT_EXCHANGES = ("all_gather_object", "broadcast_object_list")
# The tensor collectives whose values the probe reads after completion when small (all_reduce
# for its MAX).
VALUE_EXCHANGES = ("all_reduce",) + SIZE_GATHERS

# Bandwidths as nccl-tests defines them: in GB/s of 1e9 bytes; busbw = algbw x bus_factor(n).
GB = 1e9


def bus_factor(world: int) -> float:
    """busbw / algbw for an all-reduce over `world` ranks (nccl-tests: 2(n-1)/n); 0 for one rank."""
    return 2 * (world - 1) / world if world > 1 else 0.0
