"""Shapes from session 68's reading of holdout 95 and 96 (after their unread scores), each with its
twin, in our own words."""

from __future__ import annotations

from tests.unit.test_lint_session39_shapes import lint_tree
from tests.unit.test_lint_session61_shapes import _codes

# -------------------------------------------------- a micro-step loop whose loss comes from a
# method of the module handed into the wrapper, under annotated names: no DDP forward runs, so
# there is no sync to skip
HANDED_IN = """
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, DistributedSampler, TensorDataset
from policies import build_policy


def main(cfg):
    dist.init_process_group("gloo")
    policy: "BasePolicy" = build_policy(cfg)
    if cfg.low_mem:
        policy = policy.bfloat16()
    model: "DDP" = DDP(policy)
    opt = torch.optim.AdamW(model.parameters())
    data = TensorDataset(torch.randn(64, 4))
    loader = DataLoader(data, sampler=DistributedSampler(data))
    for epoch in range(3):
        loader.sampler.set_epoch(epoch)
        batches = iter(loader)
        for step in range(4):
            opt.zero_grad()
            for _ in range(4):
                (x,) = next(batches)
                loss, logs = FORWARD
                (loss / 4).backward()
            opt.step()


if __name__ == "__main__":
    main(None)
"""


def test_a_loss_from_the_module_handed_into_the_wrapper_has_no_sync_to_skip(tmp_path):
    body = HANDED_IN.replace("FORWARD", "policy.compute_loss(x)")
    assert _codes(lint_tree(tmp_path, {"train.py": body}), "DDP805") == []


def test_its_twin_the_wrappers_own_forward_syncs_each_micro_step(tmp_path):
    body = HANDED_IN.replace("FORWARD", "model(x)")
    assert len(_codes(lint_tree(tmp_path, {"train.py": body}), "DDP805")) == 1


def test_its_twin_the_name_rebound_to_the_wrapper_is_the_wrapper(tmp_path):
    body = HANDED_IN.replace('model: "DDP" = DDP(policy)', 'policy = model = DDP(policy)').replace(
        "FORWARD", "policy(x)")
    assert len(_codes(lint_tree(tmp_path, {"train.py": body}), "DDP805")) == 1
