# Stands for facebookresearch/mae efb2a80 engine_pretrain.py:57 + util/misc.py:258-267 (also
# engine_finetune.py:66): the AMP loss-scaler OBJECT does backward and, when told to, the optimizer
# step inside its __call__; the loop accumulates accum_iter micro-batches with no no_sync, so DDP
# all-reduces on every one.
# expect: DDP805 warning line 34
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP


class ScaledStep:
    def __init__(self):
        self.scaler = torch.cuda.amp.GradScaler()

    def __call__(self, loss, optimizer, update_grad=True):
        self.scaler.scale(loss).backward()
        if update_grad:
            self.scaler.step(optimizer)
            self.scaler.update()


dist.init_process_group("gloo")
net = DDP(torch.nn.Linear(4, 1))
optimizer = torch.optim.SGD(net.parameters(), lr=0.1)
loss_scaler = ScaledStep()
accum_iter = 4


def train_one_epoch(batches):
    optimizer.zero_grad()
    for it, x in enumerate(batches):
        loss = net(x).pow(2).mean() / accum_iter
        update = (it + 1) % accum_iter == 0
        loss_scaler(loss, optimizer, update_grad=update)
        if update:
            optimizer.zero_grad()


train_one_epoch([torch.randn(8, 4) for _ in range(16)])
