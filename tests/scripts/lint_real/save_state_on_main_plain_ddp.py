# Stands for huggingface/diffusers 58eb52c0 examples/text_to_image/train_text_to_image.py:1067-1089
# without its DeepSpeed preparation: under DDP Accelerate's save_state writes from the main
# process alone, so saving on the main process only is fine (a warning there would be noise).
# expect: clean
import torch
from accelerate import Accelerator

accelerator = Accelerator()
model = torch.nn.Linear(4, 1)
opt = torch.optim.AdamW(model.parameters())
loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(torch.randn(64, 4)), batch_size=8)
model, opt, loader = accelerator.prepare(model, opt, loader)
for step, (x,) in enumerate(loader):
    accelerator.backward(model(x).pow(2).mean())
    opt.step()
    opt.zero_grad()
    if accelerator.is_main_process and step % 4 == 0:
        accelerator.save_state(f"checkpoint-{step}")
