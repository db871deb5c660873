"""Lightning: trainer.save_checkpoint under `if trainer.is_global_zero:`. ddpdoctor: DDP502/503.

Launch:
    python examples/frameworks/lightning_save_checkpoint_rank_zero.py

The healthy example (lightning_healthy.py) with a checkpoint saved from an epoch-end hook on
rank 0 only. Lightning's save_checkpoint is a collective under DDP: it synchronises every rank
(a barrier) and writes the file from rank 0. Called on rank 0 alone, rank 0 waits in that
barrier for ranks that never come (a hang, or on gloo a mismatch with their next collective).

Fix: call trainer.save_checkpoint(path) on every rank; Lightning writes once.
"""

import os
import tempfile
import warnings

import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

import lightning as L
from lightning.pytorch.strategies import DDPStrategy

warnings.filterwarnings("ignore", ".*does not have many workers.*")
CKPT_DIR = tempfile.gettempdir()


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
            # BUG: save_checkpoint synchronises all ranks, but only rank 0 gets here.
            self.trainer.save_checkpoint(os.path.join(CKPT_DIR, "last.ckpt"))

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
