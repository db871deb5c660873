# Stands for Lightning-AI/litgpt 2685705 litgpt/pretrain.py:253,331,412,499-505 +
# litgpt/parser_config.py: under the rank-0 branch of the checkpoint helper, the entry function is
# handed as a VALUE to a CLI parser (to record its arguments without running it); it is not called
# there, so the barriers on its path are not rank-0-only.
# expect: clean
import torch
import torch.distributed as dist
from jsonargparse import CLI, capture_parser


def record_arguments(fn, folder):
    parser = capture_parser(lambda: CLI(fn))
    parser.save(parser.parse_args(), f"{folder}/hparams.yaml", overwrite=True)


def save_checkpoint(net, folder):
    if dist.get_rank() == 0:
        torch.save(net.state_dict(), f"{folder}/lit_model.pth")
        record_arguments(setup, folder)


def fit(net, steps, folder):
    dist.barrier()
    for step in range(steps):
        dist.barrier()
    save_checkpoint(net, folder)


def main(steps, folder):
    fit(torch.nn.Linear(4, 2), steps, folder)


def setup(steps: int = 3, out: str = "out"):
    dist.init_process_group("gloo")
    main(steps, out)


if __name__ == "__main__":
    CLI(setup)
