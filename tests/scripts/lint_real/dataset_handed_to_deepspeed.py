# Stands for lucidrains/DALLE-pytorch 651a60e train_vae.py:77-140: the plain DataLoader is the
# single-process path; under DeepSpeed the DATASET is handed to deepspeed.initialize, which builds
# its own distributed loader.
# expect: clean
import argparse

import deepspeed
import torch
from torch.utils.data import DataLoader, TensorDataset

opts = argparse.Namespace(deepspeed=True)
deepspeed.init_distributed()
images = TensorDataset(torch.randn(64, 4))
plain = DataLoader(images, batch_size=8, shuffle=True)
net = torch.nn.Linear(4, 2)
engine, optimizer, loader, _ = deepspeed.initialize(
    model=net, model_parameters=net.parameters(),
    training_data=images if opts.deepspeed else plain,
    config={"train_batch_size": 16})
for (x,) in loader:
    engine.backward(engine(x).sum())
    engine.step()
