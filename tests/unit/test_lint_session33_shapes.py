"""Shapes from session 33 (holdout 35, read). Each with its healthy (or buggy) twin, written in
our own words."""

from __future__ import annotations

from tests.unit.test_lint_round17_shapes import lint_plain
from tests.unit.test_lint_round50_shapes import at, line_of

# -------------------------------------------------- where DDP805 points when a helper backpropagates
ACCUMULATION = """
import contextlib
import torch, torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP


def train_step(model, x, opt, i, accum):
    loss = model(x).mean()
    (loss / accum).backward()  # computed and backpropagated here
    if (i + 1) % accum == 0:
        opt.step()
        opt.zero_grad()


def backward_and_step(loss, opt, i, accum):
    (loss / accum).backward()
    if (i + 1) % accum == 0:
        opt.step()
        opt.zero_grad()


def amp_step(model, x, opt, i, accum, scaler):
    loss = model(x).mean() / accum
    if scaler is not None:
        scaler.scale(loss).backward()
    else:
        loss.backward()
    if (i + 1) % accum == 0:
        opt.step()
        opt.zero_grad()


def main():
    dist.init_process_group("gloo")
    model = DDP(torch.nn.Linear(4, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for i in range(16):
        x = torch.randn(8, 4)
        with {context}:
            {call}  # the loop's call


if __name__ == "__main__":
    main()
"""
SYNC_EVERY_PASS = "contextlib.nullcontext()"
SKIP_SYNC = "(model.no_sync() if (i + 1) % 4 else contextlib.nullcontext())"


def accumulating(tmp_path, call: str, context: str = SYNC_EVERY_PASS):
    source = ACCUMULATION.replace("{context}", context).replace("{call}", call)
    return source, at(lint_plain(tmp_path, source), "DDP805")


def test_a_helper_that_computes_the_loss_is_reported_at_its_backward(tmp_path):
    # (UniPhy's `train_step(model, batch, ...)`, NMT's `_run_batch(src, tgt, i)`)
    source, found = accumulating(tmp_path, "train_step(model, x, opt, i, 4)")
    assert found == [(line_of(source, "computed and backpropagated here"), "warning")]


def test_its_twin_under_no_sync_on_the_micro_steps_is_clean(tmp_path):
    _, found = accumulating(tmp_path, "train_step(model, x, opt, i, 4)", SKIP_SYNC)
    assert found == []


def test_its_twin_with_a_period_of_one_is_clean(tmp_path):
    _, found = accumulating(tmp_path, "train_step(model, x, opt, i, 1)")
    assert found == []


def test_a_loss_handed_to_a_helper_is_reported_at_the_call(tmp_path):
    # (MAE's `loss_scaler(loss, optimizer, update_grad=...)`: the call is where it is backpropagated)
    source, found = accumulating(tmp_path, "backward_and_step(model(x).mean(), opt, i, 4)")
    assert found == [(line_of(source, "the loop's call"), "warning")]


def test_a_helper_that_backpropagates_on_two_sides_of_a_switch_is_reported_at_the_call(tmp_path):
    source, found = accumulating(tmp_path, "amp_step(model, x, opt, i, 4, None)")
    assert found == [(line_of(source, "the loop's call"), "warning")]
