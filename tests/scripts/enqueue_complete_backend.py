"""DDP on a process-group backend whose all-reduce futures complete at enqueue, as NCCL's do.

`enqueue_complete` is registered with torch.distributed.Backend.register_backend and written in
Python over gloo: its allreduce returns a Work whose future is already complete, and the real
reduction runs later on a worker thread, after DELAY_S. That is what ProcessGroupNCCL looks like
from the CPU (the future completes once the kernel is enqueued; the bytes move later), without
a GPU. A probe that took the completion callback's time for the all-reduce's would report each
bucket at a fraction of a millisecond; the truth is at least DELAY_S.

Later work must wait for the collective (on a GPU, the stream does that): here the gradients
are views of the bucket buffers (gradient_as_bucket_view=True, so the reduction writes them in
place) and an optimizer pre-hook drains the backend before the optimizer reads them.

Run it:
    torchrun --nproc-per-node 2 tests/scripts/enqueue_complete_backend.py
"""

import queue
import threading
import time

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.optim.optimizer import register_optimizer_step_pre_hook
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler

DELAY_S = 0.02  # every all-reduce finishes at least this long after its future completed


class Done(dist.Work):
    """A Work whose wait() blocks until the worker thread did the job."""

    def __init__(self, finished: threading.Event, future: torch.futures.Future):
        super().__init__()
        self._finished, self._future = finished, future

    def wait(self, timeout=None):
        self._finished.wait()
        return True

    def is_completed(self):
        return self._finished.is_set()

    def get_future(self):
        return self._future


class EnqueueCompleteGroup(dist.ProcessGroup):
    """Every collective runs on one worker thread, in call order (so every rank issues gloo's in
    the same order); all-reduce futures complete at once, the others when the job is done."""

    def __init__(self, store, rank, world_size, timeout):
        super().__init__(rank, world_size)
        self._gloo = dist.ProcessGroupGloo(dist.PrefixStore("enqueue_complete", store), rank,
                                           world_size, timeout)
        self._jobs = queue.Queue()
        threading.Thread(target=self._work, daemon=True).start()

    def getBackendName(self):
        return "enqueue_complete"

    def _work(self):
        while True:
            job, finished, future, value, delay = self._jobs.get()
            if delay:
                time.sleep(delay)
            if job is not None:
                job().wait()
            finished.set()
            if not future.done():
                future.set_result(value)

    def _submit(self, job, value, complete_now=False, delay=0.0):
        finished, future = threading.Event(), torch.futures.Future()
        if complete_now:
            future.set_result(value)  # what ProcessGroupNCCL does right after the enqueue
        self._jobs.put((job, finished, future, value, delay))
        return Done(finished, future)

    def allreduce(self, tensors, opts=None):
        return self._submit(lambda: self._gloo.allreduce(tensors, opts), tensors, True, DELAY_S)

    def broadcast(self, tensors, opts=None):
        return self._submit(lambda: self._gloo.broadcast(tensors, opts), tensors)

    def allgather(self, outputs, inputs, opts=None):
        return self._submit(lambda: self._gloo.allgather(outputs, inputs, opts), outputs)

    def barrier(self, opts=None):
        return self._submit(lambda: self._gloo.barrier(), [])

    def drain(self):
        self._submit(None, []).wait()


def main():
    dist.Backend.register_backend("enqueue_complete", EnqueueCompleteGroup, devices=["cpu"])
    dist.init_process_group("enqueue_complete")
    group = dist.distributed_c10d._get_default_group()
    register_optimizer_step_pre_hook(lambda *_: group.drain())
    torch.manual_seed(0)
    x, y = torch.randn(512, 32), torch.randint(0, 4, (512,))
    data = TensorDataset(x, y)
    sampler = DistributedSampler(data)
    loader = DataLoader(data, batch_size=32, sampler=sampler)
    model = DDP(nn.Sequential(nn.Linear(32, 128), nn.ReLU(), nn.Linear(128, 128), nn.ReLU(),
                              nn.Linear(128, 4)), bucket_cap_mb=0.04, gradient_as_bucket_view=True)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
    for epoch in range(4):
        sampler.set_epoch(epoch)
        for inputs, labels in loader:
            optimizer.zero_grad(set_to_none=False)
            F.cross_entropy(model(inputs), labels).backward()
            optimizer.step()
    group.drain()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
