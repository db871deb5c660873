"""A script that starts a daemon the classic way (setsid, fork twice, exec with an empty
environment: no run id, no launcher ancestor) and trains briefly. Its marker names the daemon's
pid, for the test to check that the probe ended it.

    python daemon_escape.py MARKER
"""

import os
import sys
import time

import torch
import torch.distributed as dist

marker = sys.argv[1]
dist.init_process_group("gloo")
if dist.get_rank() == 0:
    first = os.fork()
    if first == 0:
        os.setsid()
        if os.fork() == 0:
            with open(marker, "w") as handle:
                handle.write(str(os.getpid()))
            os.execve("/bin/sleep", ["sleep", "300"], {})
        os._exit(0)
    os.waitpid(first, 0)
    while not os.path.exists(marker) or not open(marker).read():
        time.sleep(0.05)
model = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(4, 1))
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
for step in range(3):
    optimizer.zero_grad()
    model(torch.randn(8, 4)).sum().backward()
    optimizer.step()
dist.destroy_process_group()
