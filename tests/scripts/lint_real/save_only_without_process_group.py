# Stands for meta-llama/llama-recipes faae2fd src/llama_cookbook (finetuning.py, train_utils.py,
# checkpoint_handler.py): the process group is set up only when sharding is on, and the plain
# torch.save is the branch taken when it is off (one process); sharded runs save on rank 0.
# expect: clean
import argparse

import torch
import torch.distributed as dist


def dump_plain(net, folder):
    torch.save(net.state_dict(), f"{folder}/model.pt")


opts = argparse.Namespace(enable_fsdp=True, out="out")
rank = 0
if opts.enable_fsdp:
    dist.init_process_group("gloo")
    rank = dist.get_rank()
net = torch.nn.Linear(4, 2)
if not opts.enable_fsdp:
    dump_plain(net, opts.out)
elif rank == 0:
    torch.save(net.state_dict(), f"{opts.out}/sharded-full.pt")
