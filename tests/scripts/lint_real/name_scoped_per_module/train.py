# Stands for pytorch/torchtitan b5bcd76 torchtitan/trainer.py + components/metrics.py: a local
# called `emit` is a rank test inside the metrics module and a step test here; the early return
# on the step test is taken by every rank alike, so the all_reduce after it is not rank-only.
# expect: clean
import torch
import torch.distributed as dist

from meters import Meter

dist.init_process_group("gloo")
meter = Meter()
for step in range(1, 21):
    loss = torch.ones(1)
    emit = meter.due(step)
    if not emit:
        continue
    dist.all_reduce(loss)
    meter.show(step, loss)
