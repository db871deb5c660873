"""A correct DDP script written for GPUs and NCCL: the baseline `probe --cpu` must pass cleanly.

Written like pytorch/examples' ddp-tutorial-series/multigpu_torchrun.py, with the mixed
precision and timing a real GPU job has:
  * torch.cuda.set_device(local_rank), init_process_group("nccl");
  * model.to(local_rank), DDP(model, device_ids=[local_rank], output_device=local_rank);
  * torch.amp.GradScaler("cuda") and `with torch.autocast("cuda", dtype=torch.float16)`;
  * x.cuda(non_blocking=True), torch.zeros(..., device=local_rank), CUDA events and
    torch.cuda.synchronize() to time each epoch;
  * a DistributedSampler with set_epoch, a loss all_reduce every rank enters, rank 0 alone
    writes the snapshot, then every rank reloads it with torch.load(map_location="cuda:N")
    and evaluates its shard of the validation set.

On GPUs:                          torchrun --nproc-per-node 2 examples/gpu_healthy.py
On a CPU-only CI runner:          ddpdoctor probe --cpu examples/gpu_healthy.py
"""

import argparse
import os
import tempfile

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.distributed import destroy_process_group, init_process_group
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, Dataset
from torch.utils.data.distributed import DistributedSampler


class BlobsDataset(Dataset):
    """Synthetic 4-class classification: Gaussian blobs in 20 dimensions."""

    def __init__(self, n_samples, n_features=20, n_classes=4, seed=0):
        centers = torch.randn(n_classes, n_features, generator=torch.Generator().manual_seed(1234))
        g = torch.Generator().manual_seed(seed)
        self.y = torch.randint(0, n_classes, (n_samples,), generator=g)
        self.x = centers[self.y] + torch.randn(n_samples, n_features, generator=g)

    def __len__(self):
        return len(self.y)

    def __getitem__(self, idx):
        return self.x[idx], self.y[idx]


def ddp_setup():
    torch.cuda.set_device(int(os.environ["LOCAL_RANK"]))
    init_process_group(backend="nccl")


class Trainer:
    def __init__(self, model, train_data, val_data, optimizer, snapshot_path):
        self.gpu_id = int(os.environ["LOCAL_RANK"])
        self.global_rank = int(os.environ["RANK"])
        self.model = DDP(model.to(self.gpu_id), device_ids=[self.gpu_id], output_device=self.gpu_id)
        self.train_data = train_data
        self.val_data = val_data
        self.optimizer = optimizer
        self.scaler = torch.amp.GradScaler("cuda")
        self.snapshot_path = snapshot_path

    def _run_batch(self, source, targets):
        self.optimizer.zero_grad(set_to_none=True)
        with torch.autocast("cuda", dtype=torch.float16):
            loss = F.cross_entropy(self.model(source), targets)
        self.scaler.scale(loss).backward()
        self.scaler.step(self.optimizer)
        self.scaler.update()
        return loss.detach()

    def _run_epoch(self, epoch):
        self.train_data.sampler.set_epoch(epoch)
        self.model.train()
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        totals = torch.zeros(2, device=self.gpu_id)  # [sum of losses, batches]
        start.record()
        for source, targets in self.train_data:
            source = source.cuda(non_blocking=True)
            targets = targets.cuda(non_blocking=True)
            totals[0] += self._run_batch(source, targets).float()
            totals[1] += 1
        end.record()
        torch.cuda.synchronize()
        dist.all_reduce(totals, op=dist.ReduceOp.SUM)  # every rank enters it
        if self.global_rank == 0:
            print(f"[GPU{self.gpu_id}] epoch {epoch} | loss {(totals[0] / totals[1]).item():.4f} "
                  f"| {start.elapsed_time(end):.0f} ms", flush=True)

    def _save_snapshot(self, epoch):
        snapshot = {"MODEL_STATE": self.model.module.state_dict(), "EPOCHS_RUN": epoch}
        torch.save(snapshot, self.snapshot_path)

    @torch.no_grad()
    def evaluate(self):
        """Reload the final snapshot on every rank, as an evaluation job would, and score it."""
        snapshot = torch.load(self.snapshot_path, map_location=f"cuda:{self.gpu_id}")
        module = self.model.module
        module.load_state_dict(snapshot["MODEL_STATE"])
        module.eval()
        counts = torch.zeros(2, device=self.gpu_id)  # [correct, seen]
        for source, targets in self.val_data:
            source, targets = source.to(self.gpu_id), targets.to(self.gpu_id)
            counts[0] += (module(source).argmax(dim=1) == targets).sum()
            counts[1] += len(targets)
        dist.all_reduce(counts)
        return (counts[0] / counts[1]).item()

    def train(self, max_epochs):
        for epoch in range(max_epochs):
            self._run_epoch(epoch)
            if self.global_rank == 0:
                self._save_snapshot(epoch)
            dist.barrier()  # nobody reads the snapshot before it is on disk


def main():
    parser = argparse.ArgumentParser(description="healthy GPU-style DDP example")
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--lr", type=float, default=0.05)
    parser.add_argument("--train-samples", type=int, default=512)
    args = parser.parse_args()

    ddp_setup()
    # One directory per job (torchrun gives every job its own run id).
    out_dir = os.path.join(tempfile.gettempdir(),
                           f"ddpdoctor-gpu-healthy-{os.environ.get('TORCHELASTIC_RUN_ID', 'local')}")
    os.makedirs(out_dir, exist_ok=True)

    train_set, val_set = BlobsDataset(args.train_samples, seed=0), BlobsDataset(256, seed=1)
    train_data = DataLoader(train_set, batch_size=args.batch_size, pin_memory=True,
                            sampler=DistributedSampler(train_set, shuffle=True), drop_last=True)
    val_data = DataLoader(val_set, batch_size=64, sampler=DistributedSampler(val_set, shuffle=False))

    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(20, 64), nn.ReLU(), nn.Linear(64, 64), nn.ReLU(), nn.Linear(64, 4))
    optimizer = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=0.9)
    trainer = Trainer(model, train_data, val_data, optimizer, os.path.join(out_dir, "snapshot.pt"))
    trainer.train(args.epochs)
    accuracy = trainer.evaluate()
    if trainer.global_rank == 0:
        print(f"validation accuracy {accuracy:.3f}", flush=True)
    destroy_process_group()


if __name__ == "__main__":
    main()
