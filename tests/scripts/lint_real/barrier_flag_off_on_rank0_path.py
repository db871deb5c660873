# Stands for pytorch/torchtune bd2a0fc training/checkpointing/_checkpoint_client.py:399 +
# modules/peft/_utils.py:229: rank 0 alone merges adapter weights, through a helper whose
# barriers run only when its `use_barriers` flag is true - and that call leaves it False.
# expect: clean
import torch
import torch.distributed as dist


def merge_adapters(state, scale, use_barriers=False):
    for name in list(state):
        if use_barriers:
            dist.barrier()
        state[name] = state[name] * scale
        if use_barriers:
            dist.barrier()
    return state


dist.init_process_group("gloo")
state = {"w": torch.ones(2)}
if dist.get_rank() == 0:
    merged = merge_adapters(state, 0.5)
    torch.save(merged, "merged.pt")
dist.barrier()
