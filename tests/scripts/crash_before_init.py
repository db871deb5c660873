"""Broken: rank 1 fails at start-up, before init_process_group, while rank 0 waits there (as a
second process does on a one-GPU node when it calls torch.cuda.set_device(1))."""

import os

if int(os.environ.get("RANK", "0")) == 1:
    open("/nonexistent/calibration-%s.json" % os.environ["LOCAL_RANK"], "rb")

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402

dist.init_process_group("gloo")
tensor = torch.ones(4)
dist.all_reduce(tensor)
dist.destroy_process_group()
