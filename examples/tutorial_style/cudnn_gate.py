"""Stops before training on a machine without cuDNN, even under `ddpdoctor probe --cpu`: it
checks torch.backends.cudnn, which --cpu does not stand in for (the CPU build has no cuDNN).

ddpdoctor: "incomplete" (exit 4), never PASS: the report shows each rank's last lines ("cuDNN
is required ... Exiting.") and which device calls --cpu answered, and what.

    torchrun --nproc-per-node 2 examples/tutorial_style/cudnn_gate.py
"""

import os

import torch
import torch.distributed as dist


def main():
    local_rank = int(os.environ["LOCAL_RANK"])
    if not torch.accelerator.is_available():
        print("no accelerator found. Exiting.")
        return
    device = torch.device(f"{torch.accelerator.current_accelerator()}:{local_rank}")
    torch.accelerator.set_device_index(local_rank)
    dist.init_process_group(dist.get_default_backend_for_device(device))
    if not torch.backends.cudnn.is_available():
        print(f"[rank {dist.get_rank()}] cuDNN is required for the convolution kernels. Exiting.")
        dist.destroy_process_group()
        return
    model = torch.nn.parallel.DistributedDataParallel(torch.nn.Conv2d(3, 8, 3).to(device))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for _ in range(20):
        optimizer.zero_grad()
        model(torch.randn(4, 3, 16, 16, device=device)).mean().backward()
        optimizer.step()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
