# DDP503, written differently: a point-to-point exchange where both ranks receive first, so
# each waits for the other forever (no collective is involved).
import torch, torch.distributed as dist

dist.init_process_group("gloo")
rank = dist.get_rank()
peer = 1 - rank
buf = torch.zeros(4)
for step in range(3):
    dist.all_reduce(buf)
dist.recv(buf, src=peer)  # both ranks block here
dist.send(buf, dst=peer)
