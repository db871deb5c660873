# Every rank hangs before init_process_group (waiting for a dataset download, a lock, a mount
# that never comes): no process group, no step, only the stacks can say where.
import time

import torch.distributed as dist


def wait_for_dataset():
    time.sleep(3600)


wait_for_dataset()
dist.init_process_group("gloo")
