"""Hugging Face Trainer with its default find_unused_parameters: ddpdoctor names it DDP402.

Launch:
    torchrun --nproc-per-node 2 examples/frameworks/hf_trainer_find_unused.py

The healthy example (hf_trainer_healthy.py) without `ddp_find_unused_parameters=False`. Left at
its default (None), Trainer wraps any PreTrainedModel without gradient checkpointing in
DistributedDataParallel(find_unused_parameters=True): DDP then walks the autograd graph after
every forward looking for parameters that get no gradient (there are none in GPT-2) and never
rebuilds its buckets in gradient order. Pure overhead on every step.

Fix: TrainingArguments(..., ddp_find_unused_parameters=False).
"""

import os
import tempfile

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import torch
from torch.utils.data import Dataset
from transformers import GPT2Config, GPT2LMHeadModel, Trainer, TrainingArguments


class RepeatingTokens(Dataset):
    """Synthetic language: each sequence repeats a random 8-token motif, so the loss can fall."""

    def __init__(self, n_samples, seq_len=32, vocab_size=128, seed=0):
        g = torch.Generator().manual_seed(seed)
        motifs = torch.randint(0, vocab_size, (n_samples, 8), generator=g)
        self.input_ids = motifs.repeat(1, seq_len // 8)

    def __len__(self):
        return len(self.input_ids)

    def __getitem__(self, idx):
        ids = self.input_ids[idx]
        return {"input_ids": ids, "labels": ids.clone()}


def main():
    config = GPT2Config(n_layer=2, n_embd=64, n_head=2, vocab_size=128, n_positions=64)
    model = GPT2LMHeadModel(config)

    out_dir = tempfile.mkdtemp(prefix="hf_trainer_find_unused_")
    args = TrainingArguments(
        output_dir=out_dir,
        use_cpu=True,
        ddp_backend="gloo",
        per_device_train_batch_size=8,
        per_device_eval_batch_size=16,
        num_train_epochs=2,
        max_steps=30,  # 240 samples / (8 x 2 ranks) = 15 steps per epoch: 2 epochs
        learning_rate=1e-3,
        eval_strategy="epoch",
        logging_steps=10,
        save_strategy="no",
        report_to=[],
        dataloader_num_workers=0,
        seed=0,
    )
    trainer = Trainer(
        model=model,
        args=args,
        train_dataset=RepeatingTokens(240, seed=0),
        eval_dataset=RepeatingTokens(64, seed=1),
    )
    trainer.train()
    metrics = trainer.evaluate()
    if trainer.is_world_process_zero():
        print(f"final eval loss {metrics['eval_loss']:.3f}")


if __name__ == "__main__":
    main()
