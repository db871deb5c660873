# Stands for facebookresearch/dinov2 b8931f7b dinov2/distributed/__init__.py:255-270: the
# enable() helper refuses to run twice by testing its module globals, still at their -1
# sentinel on every rank, and raising; then it starts the process group, meets in a barrier and
# only then stores the local rank. A rank that raised would crash the job, so the barrier after
# the test is not one rank's: every rank reaches it.
# expect: clean
import os

import torch.distributed as dist

_LOCAL_RANK = -1
_LOCAL_WORLD_SIZE = -1


def enable():
    global _LOCAL_RANK, _LOCAL_WORLD_SIZE
    if _LOCAL_RANK >= 0 or _LOCAL_WORLD_SIZE >= 0:
        raise RuntimeError("distributed mode already enabled")
    dist.init_process_group(backend="gloo")
    dist.barrier()
    _LOCAL_RANK = int(os.environ["LOCAL_RANK"])
    _LOCAL_WORLD_SIZE = int(os.environ["LOCAL_WORLD_SIZE"])


enable()
