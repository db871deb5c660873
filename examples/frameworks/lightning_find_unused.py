"""Lightning with find_unused_parameters=True and no unused parameter: DDP402.

Launch:
    python examples/frameworks/lightning_find_unused.py

The healthy example (lightning_healthy.py) with strategy="ddp_find_unused_parameters_true":
every parameter of the classifier takes part in the loss, so DDP's search for unused ones after
every forward is pure overhead.

Fix: Trainer(strategy="ddp") or Trainer(strategy=DDPStrategy(find_unused_parameters=False)).
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
        # Every rank logs the synced metric: the all-reduce behind sync_dist has all ranks.
        self.log("epoch_weight_norm", self.net[0].weight.norm(), sync_dist=True)

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.05)


def main():
    L.seed_everything(0, workers=True)
    loader = DataLoader(blobs(512, seed=0), batch_size=16, shuffle=True)
    trainer = L.Trainer(
        accelerator="cpu",
        devices=int(os.environ.get("LOCAL_WORLD_SIZE", "2")),
        strategy=DDPStrategy(find_unused_parameters=True, process_group_backend="gloo"),  # BUG
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
