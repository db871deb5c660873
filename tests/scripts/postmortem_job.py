"""A small gloo job that dies the way real ones do, for `ddpdoctor report` on its plain torchrun
output: `timeout` (rank 1 stops calling collectives; rank 0's all-reduce times out after 3 s),
`oom` (rank 1 raises a MemoryError at step 3 while rank 0 waits), `desync` (rank 1 broadcasts
where rank 0 all-reduces; run under TORCH_DISTRIBUTED_DEBUG=DETAIL)."""

import datetime
import sys
import time

import torch
import torch.distributed as dist


def main(mode: str) -> None:
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=3))
    rank = dist.get_rank()
    model = torch.nn.Linear(8, 8)
    for step in range(6):
        print(f"step {step} loss {float(model(torch.ones(2, 8)).sum()):.3f}", flush=True)
        if mode == "oom" and rank == 1 and step == 3:
            raise MemoryError("host memory exhausted allocating 4.00 GiB for the batch")
        if mode == "timeout" and rank == 1 and step == 3:
            time.sleep(8)  # stops calling collectives: its peer waits until its timeout
            return
        grad = torch.ones(8)
        if mode == "desync" and rank == 1 and step == 2:
            dist.broadcast(grad, src=0)
        else:
            dist.all_reduce(grad)
    dist.destroy_process_group()


if __name__ == "__main__":
    main(sys.argv[1])
