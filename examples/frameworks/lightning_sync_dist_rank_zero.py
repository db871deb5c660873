"""PyTorch Lightning: a synced metric logged on rank 0 only. ddpdoctor names it DDP501/DDP504.

Launch (either; Lightning starts its own ranks when run with plain python):
    torchrun --nproc-per-node 2 examples/frameworks/lightning_healthy.py
    python examples/frameworks/lightning_healthy.py

The healthy example (lightning_healthy.py) with one change: the epoch-end metric is logged
under `if self.trainer.is_global_zero:` with `sync_dist=True`. sync_dist makes Lightning
all-reduce the value across ranks, so rank 0 enters a collective that rank 1 never enters:
rank 0 then waits forever (or, on gloo, pairs it with rank 1's next collective and crashes).

Fix: log on every rank (`self.log(..., sync_dist=True)` outside the branch), or log rank 0's
own value with `rank_zero_only=True` and no sync_dist.
"""

import os
import warnings

import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

import lightning as L
from lightning.pytorch.strategies import DDPStrategy

warnings.filterwarnings("ignore", ".*does not have many workers.*")


def blobs(n, seed):
    g = torch.Generator().manual_seed(seed)
    y = torch.randint(0, 4, (n,), generator=g)
    centres = torch.randn(4, 16, generator=torch.Generator().manual_seed(123)) * 3
    x = centres[y] + torch.randn(n, 16, generator=g)
    return TensorDataset(x, y)


class Classifier(L.LightningModule):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(16, 64), nn.ReLU(), nn.Linear(64, 4))

    def training_step(self, batch, batch_idx):
        x, y = batch
        loss = nn.functional.cross_entropy(self.net(x), y)
        self.log("train_loss", loss, sync_dist=True)
        return loss

    def on_train_epoch_end(self):
        if self.trainer.is_global_zero:
            # BUG: sync_dist all-reduces across ranks, but only rank 0 gets here.
            self.log("epoch_weight_norm", self.net[0].weight.norm(), sync_dist=True)

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.05)


def main():
    L.seed_everything(0, workers=True)
    loader = DataLoader(blobs(512, seed=0), batch_size=16, shuffle=True)
    trainer = L.Trainer(
        accelerator="cpu",
        devices=int(os.environ.get("LOCAL_WORLD_SIZE", "2")),
        strategy=DDPStrategy(find_unused_parameters=False, process_group_backend="gloo"),
        max_epochs=2,
        enable_checkpointing=False,
        enable_progress_bar=False,
        enable_model_summary=False,
        logger=False,
    )
    trainer.fit(Classifier(), loader)
    if trainer.is_global_zero:
        print("trained", trainer.current_epoch, "epochs")


if __name__ == "__main__":
    main()
