"""Healthy, written the way the DDP tutorials write it today: device-agnostic setup with
torch.accelerator, a GPU-count gate, a Trainer class that peeks at one batch for its size,
set_epoch every epoch, a snapshot saved every `save_every` epochs and resumed from at start.

On a machine without GPUs it prints "Unable to locate sufficient 2 gpus ... Exiting." and returns
on every rank: `ddpdoctor probe` says the run is incomplete (it never trained, exit 4), and
`ddpdoctor probe --cpu` makes torch.accelerator answer as if each rank had a GPU, so it trains.

    torchrun --nproc-per-node 2 examples/tutorial_style/multigpu_torchrun.py 4 1
"""

import argparse
import os

import torch
import torch.nn.functional as F
from torch.distributed import destroy_process_group, get_default_backend_for_device, init_process_group
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, Dataset
from torch.utils.data.distributed import DistributedSampler


class RegressionSet(Dataset):
    def __init__(self, size):
        g = torch.Generator().manual_seed(7)
        self.x = torch.rand(size, 20, generator=g)
        self.y = self.x @ torch.rand(20, 1, generator=g)

    def __len__(self):
        return len(self.x)

    def __getitem__(self, index):
        return self.x[index], self.y[index]


def ddp_setup():
    rank = int(os.environ["LOCAL_RANK"])
    if torch.accelerator.is_available():
        device = torch.device(f"{torch.accelerator.current_accelerator()}:{rank}")
        torch.accelerator.set_device_index(rank)
    else:
        device = torch.device("cpu")
    init_process_group(backend=get_default_backend_for_device(device))
    return device


class Trainer:
    def __init__(self, model, train_data, optimizer, save_every, snapshot_path, device):
        self.local_rank = int(os.environ["LOCAL_RANK"])
        self.global_rank = int(os.environ["RANK"])
        self.device = device
        self.model = model.to(device)
        self.train_data = train_data
        self.optimizer = optimizer
        self.save_every = save_every
        self.epochs_run = 0
        self.snapshot_path = snapshot_path
        if os.path.exists(snapshot_path):
            print("Loading snapshot")
            self._load_snapshot(snapshot_path)
        self.model = DDP(self.model, device_ids=[self.local_rank])

    def _load_snapshot(self, path):
        snapshot = torch.load(path, map_location=self.device)
        self.model.load_state_dict(snapshot["MODEL_STATE"])
        self.epochs_run = snapshot["EPOCHS_RUN"]
        print(f"Resuming training from snapshot at Epoch {self.epochs_run}")

    def _run_batch(self, source, targets):
        self.optimizer.zero_grad()
        loss = F.mse_loss(self.model(source), targets)
        loss.backward()
        self.optimizer.step()

    def _run_epoch(self, epoch):
        b_sz = len(next(iter(self.train_data))[0])  # a peek for the batch size
        print(f"[GPU{self.global_rank}] Epoch {epoch} | Batchsize: {b_sz} | Steps: {len(self.train_data)}")
        self.train_data.sampler.set_epoch(epoch)
        for source, targets in self.train_data:
            self._run_batch(source.to(self.device), targets.to(self.device))

    def _save_snapshot(self, epoch):
        snapshot = {"MODEL_STATE": self.model.module.state_dict(), "EPOCHS_RUN": epoch}
        torch.save(snapshot, self.snapshot_path)
        print(f"Epoch {epoch} | Training snapshot saved at {self.snapshot_path}")

    def train(self, max_epochs):
        for epoch in range(self.epochs_run, max_epochs):
            self._run_epoch(epoch)
            if self.global_rank == 0 and epoch % self.save_every == 0:
                self._save_snapshot(epoch)


def main(save_every, total_epochs, batch_size, snapshot_path):
    world_size = int(os.environ["WORLD_SIZE"])
    if torch.accelerator.device_count() < int(os.environ["LOCAL_WORLD_SIZE"]):
        print(f"Unable to locate sufficient {world_size} gpus to run this example. Exiting.")
        return
    device = ddp_setup()
    dataset = RegressionSet(2048)
    train_data = DataLoader(dataset, batch_size=batch_size, pin_memory=True, shuffle=False,
                            sampler=DistributedSampler(dataset))
    model = torch.nn.Linear(20, 1)
    optimizer = torch.optim.SGD(model.parameters(), lr=1e-3)
    Trainer(model, train_data, optimizer, save_every, snapshot_path, device).train(total_epochs)
    destroy_process_group()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description="simple distributed training job")
    parser.add_argument("total_epochs", type=int, help="Total epochs to train the model")
    parser.add_argument("save_every", type=int, help="How often to save a snapshot")
    parser.add_argument("--batch_size", default=32, type=int)
    parser.add_argument("--snapshot_path", default=os.path.join(os.environ.get("TMPDIR", "/tmp"), "tutorial_snapshot.pt"))
    args = parser.parse_args()
    main(args.save_every, args.total_epochs, args.batch_size, args.snapshot_path)
