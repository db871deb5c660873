"""Broken: every rank of the second node (ranks >= LOCAL_WORLD_SIZE) fails to open a file that
exists only on the first node, at start-up, before it joins the process group."""

import os

rank = int(os.environ.get("RANK", "0"))
if rank >= int(os.environ.get("LOCAL_WORLD_SIZE", "1")):
    open("/nonexistent/shard-%d.bin" % rank, "rb")

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402

dist.init_process_group("gloo")
tensor = torch.ones(4)
dist.all_reduce(tensor)
dist.destroy_process_group()
