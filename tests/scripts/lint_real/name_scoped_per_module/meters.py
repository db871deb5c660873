# Helper module of name_scoped_per_module/train.py.
import torch.distributed as dist


class Meter:
    def __init__(self, every=10, reporting_rank=0):
        self.every = every
        emit = dist.get_rank() == reporting_rank
        self.active = emit

    def due(self, step):
        return step % self.every == 0

    def show(self, step, value):
        if self.active:
            print(step, value.item())
