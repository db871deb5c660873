# Issue 34: a rank-local skip. Rank 1 sees a non-finite loss at batch 3 and `continue`s before
# backward()/step(): it skips DDP's gradient all-reduce for that forward, every later all-reduce
# pairs with the wrong one, and the epoch-end all_reduce is where it fails. `--healthy`: no NaN.
import faulthandler, os, signal, sys, traceback
from datetime import timedelta
import torch, torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

where = {"step": 0}
if os.environ.get("ZOO_PLAIN"):  # a plain run (tests/helpers/zoo.py): where a rank aborts or is ended
    faulthandler.enable()
    faulthandler.register(signal.SIGTERM, chain=True)


def main():
    timeout = timedelta(seconds=float(os.environ.get("ZOO_PG_TIMEOUT", "1800")))
    dist.init_process_group("gloo", timeout=timeout)
    rank = dist.get_rank()
    torch.manual_seed(rank)
    model = DDP(torch.nn.Linear(8, 2))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    total = torch.zeros(1)
    for batch in range(8):
        loss = model(torch.randn(4, 8)).pow(2).mean()
        if rank == 1 and batch == 3 and "--healthy" not in sys.argv:
            loss = loss * float("nan")
        if not torch.isfinite(loss):
            print(f"rank {rank}: non-finite loss at batch {batch}, skipping it", flush=True)
            continue
        opt.zero_grad()
        loss.backward()
        opt.step()
        where["step"] += 1
        total += loss.detach()
    dist.all_reduce(total)  # the epoch's mean loss
    dist.destroy_process_group()


try:
    main()
except Exception as exc:  # where it failed, for the test that compares plain and probed runs
    # torchrun's SIGTERM (a peer died) must not cut this report short: the traceback already
    # says where it failed, and faulthandler's dump would name this handler's line instead.
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    lines = [line for frame, line in traceback.walk_tb(exc.__traceback__)
             if os.path.abspath(frame.f_code.co_filename) == os.path.abspath(__file__)]
    print(f"ZOO-FAILED rank={os.environ.get('RANK')} line={lines[-1] if lines else None} "
          f"step={where['step']}", flush=True)
    raise
