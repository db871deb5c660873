# Stands for pytorch/torchtitan b5bcd76 torchtitan/trainer.py:296 + distributed/utils.py:258: a
# configuration value whose NAME ends in `_rank` (tokens per data-parallel rank) is checked with
# an early raise; it is the same on every rank, so the broadcast after it is not rank-only.
# expect: clean
import argparse

import torch
import torch.distributed as dist

cfg = argparse.Namespace(tokens_per_dp_rank=4096, tp=2)
dist.init_process_group("gloo")
tokens = cfg.tokens_per_dp_rank
if tokens % cfg.tp != 0:
    raise ValueError(f"{tokens} tokens do not split over {cfg.tp} tensor-parallel ranks")
seed = torch.zeros(1, dtype=torch.int64)
dist.broadcast(seed, src=0)
