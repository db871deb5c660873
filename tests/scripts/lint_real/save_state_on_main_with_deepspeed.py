# Stands for huggingface/diffusers 58eb52c0 examples/text_to_image/train_text_to_image.py:1067-1089
# (issue #2606): the main process alone saves the Accelerate state every N steps, in a script
# that prepares for DeepSpeed (it reads the DeepSpeed plugin to disable ZeRO-3 init for the frozen
# models). Under DDP save_state writes from the main process alone; under DeepSpeed every
# process takes part, and the others never come. A warning: the config is not in the source.
# expect: DDP801 warning line 33
import torch
from accelerate import Accelerator
from accelerate.state import AcceleratorState

accelerator = Accelerator(gradient_accumulation_steps=1)


def zero3_init_off():
    plugin = AcceleratorState().deepspeed_plugin
    return [] if plugin is None else [plugin.zero3_init_context_manager(enable=False)]


model = torch.nn.Linear(4, 1)
opt = torch.optim.AdamW(model.parameters())
loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(torch.randn(64, 4)), batch_size=8)
model, opt, loader = accelerator.prepare(model, opt, loader)
step = 0
for (x,) in loader:
    with accelerator.accumulate(model):
        accelerator.backward(model(x).pow(2).mean())
        opt.step()
        opt.zero_grad()
    if accelerator.sync_gradients:
        step += 1
        if accelerator.is_main_process:
            if step % 4 == 0:
                accelerator.save_state(f"checkpoint-{step}")
