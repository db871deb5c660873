"""Shapes from session 77 (the shapes holdout 107 left, then holdout 108's reading after its
unread score), each with its twin, in our own words."""

from __future__ import annotations

from tests.unit.test_lint_session39_shapes import lint_tree
from tests.unit.test_lint_session61_shapes import _codes, _line

# -------------------------------------------------- a switch read from a JSON parameters file
# the options are merged with a JSON file each launch names (`--params_file cfg/a.json`, then
# `vars(args).update(json.load(f))`); every file says "fp16": "", so the run as launched takes the
# plain backward: DDP805 names it, not the amp side's
PARAMS_MERGED = """import argparse
import json
from argparse import Namespace

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP


def train(args, net, opt, batches):
    for step, x in enumerate(batches):
        loss = net(x).sum() / args.accumulate
        if args.fp16:
            with amp_scale(loss, opt) as scaled:
                scaled.backward()
        else:
            loss.backward()
        if (step + 1) % args.accumulate == 0:
            opt.step()
            opt.zero_grad()


def amp_scale(loss, opt):
    raise NotImplementedError


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--params_file", type=str)
    args = parser.parse_args()
    with open(args.params_file) as f:
        merged = vars(args)
        merged.update(json.load(f))
        args = Namespace(**merged)
    dist.init_process_group("gloo")
    net = DDP(torch.nn.Linear(1, 1))
    train(args, net, torch.optim.SGD(net.parameters(), lr=0.1), [torch.ones(2, 1)] * 8)


if __name__ == "__main__":
    main()
"""
LAUNCHES = """#!/bin/bash
torchrun --nproc_per_node 4 train.py --params_file cfg/short.json
torchrun --nproc_per_node 4 train.py --params_file cfg/long.json
"""
SHORT = '{"task": "short", "accumulate": 4, "fp16": "", "optim": {"lr": 0.1}}\n'
LONG = '{"task": "long", "accumulate": 8, "fp16": "", "optim": {"lr": 0.01}}\n'


def test_a_switch_every_launched_parameters_file_turns_off_settles_the_backward_ddp805_names(tmp_path):
    found = _codes(lint_tree(tmp_path, {"train.py": PARAMS_MERGED, "run.sh": LAUNCHES, "cfg/short.json": SHORT,
                                        "cfg/long.json": LONG}), "DDP805")
    assert [f.location.line for f in found] == [_line(PARAMS_MERGED, "loss.backward()")]


def test_its_twin_where_one_launched_file_turns_it_on_names_the_first_backward(tmp_path):
    found = _codes(lint_tree(tmp_path, {"train.py": PARAMS_MERGED, "run.sh": LAUNCHES, "cfg/short.json": SHORT,
                                        "cfg/long.json": LONG.replace('"fp16": ""', '"fp16": "O1"')}), "DDP805")
    assert [f.location.line for f in found] == [_line(PARAMS_MERGED, "scaled.backward()")]
