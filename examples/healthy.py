"""A correct DDP training script: the baseline that ddpdoctor must pass without findings.

Written in the style of pytorch/examples (ddp-tutorial-series/multigpu_torchrun.py): argparse,
a `Trainer` class, `main()` behind `if __name__ == "__main__"`.

It does what a DDP script should do:
  * every rank reads its own shard (DistributedSampler) and reshuffles each epoch (set_epoch);
  * DDP without find_unused_parameters, every parameter takes part in the loss;
  * validation runs on rank 0 alone, on the unwrapped module, with no collective inside it;
  * the training loss is averaged with an all_reduce that every rank enters;
  * rank 0 alone writes the checkpoint, then all ranks meet in dist.barrier().

Run it:
    torchrun --nproc-per-node 2 examples/healthy.py --epochs 3
"""

import argparse
import os
import tempfile

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
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


class Classifier(nn.Module):
    def __init__(self, n_features=20, hidden=64, n_classes=4):
        super().__init__()
        self.fc1 = nn.Linear(n_features, hidden)
        self.fc2 = nn.Linear(hidden, hidden)
        self.head = nn.Linear(hidden, n_classes)

    def forward(self, x):
        x = F.relu(self.fc1(x))
        x = F.relu(self.fc2(x))
        return self.head(x)


class Trainer:
    def __init__(self, model, train_loader, val_loader, optimizer, ckpt_path, device):
        self.rank = dist.get_rank()
        self.device = device
        self.model = DDP(model.to(device), device_ids=[device.index] if device.type == "cuda" else None)
        self.train_loader = train_loader
        self.val_loader = val_loader
        self.optimizer = optimizer
        self.ckpt_path = ckpt_path

    def _run_epoch(self, epoch):
        self.train_loader.sampler.set_epoch(epoch)
        self.model.train()
        total = torch.zeros(2, device=self.device)  # [sum of losses, number of batches]
        for x, y in self.train_loader:
            x, y = x.to(self.device), y.to(self.device)
            self.optimizer.zero_grad(set_to_none=True)
            loss = F.cross_entropy(self.model(x), y)
            loss.backward()
            self.optimizer.step()
            total += torch.tensor([loss.item(), 1.0], device=self.device)
        # every rank enters this all_reduce, so it is safe
        dist.all_reduce(total, op=dist.ReduceOp.SUM)
        return (total[0] / total[1]).item()

    @torch.no_grad()
    def _validate(self):
        # rank 0 only, on the plain module: no DDP forward, no collective
        module = self.model.module
        module.eval()
        correct = seen = 0
        for x, y in self.val_loader:
            pred = module(x.to(self.device)).argmax(dim=1)
            correct += (pred == y.to(self.device)).sum().item()
            seen += len(y)
        return correct / seen

    def _save_checkpoint(self, epoch):
        torch.save({"epoch": epoch, "model": self.model.module.state_dict()}, self.ckpt_path)

    def train(self, epochs):
        for epoch in range(epochs):
            train_loss = self._run_epoch(epoch)
            if self.rank == 0:
                acc = self._validate()
                self._save_checkpoint(epoch)
                print(f"epoch {epoch} | train loss {train_loss:.4f} | val acc {acc:.3f} "
                      f"| checkpoint {self.ckpt_path}", flush=True)
            dist.barrier()  # nobody starts the next epoch before the checkpoint is on disk


def main():
    parser = argparse.ArgumentParser(description="healthy DDP example")
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--lr", type=float, default=0.05)
    parser.add_argument("--train-samples", type=int, default=512)
    parser.add_argument("--out-dir", default=os.path.join(tempfile.gettempdir(), "ddpdoctor-example-healthy"))
    args = parser.parse_args()

    local_rank = int(os.environ["LOCAL_RANK"])
    backend = "nccl" if torch.cuda.is_available() else "gloo"
    if torch.cuda.is_available():
        torch.cuda.set_device(local_rank)
        device = torch.device("cuda", local_rank)
    else:
        device = torch.device("cpu")
    dist.init_process_group(backend)
    rank = dist.get_rank()

    if rank == 0:
        os.makedirs(args.out_dir, exist_ok=True)

    train_set = BlobsDataset(args.train_samples, seed=0)
    val_set = BlobsDataset(256, seed=1)
    train_loader = DataLoader(train_set, batch_size=args.batch_size,
                              sampler=DistributedSampler(train_set, shuffle=True), drop_last=True)
    val_loader = DataLoader(val_set, batch_size=64)

    torch.manual_seed(0)
    model = Classifier()
    optimizer = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=0.9)
    trainer = Trainer(model, train_loader, val_loader, optimizer,
                      os.path.join(args.out_dir, "checkpoint.pt"), device)
    trainer.train(args.epochs)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
