"""Shapes from session 34 (holdout 36, read). Each with its healthy (or buggy) twin, written in
our own words."""

from __future__ import annotations

import textwrap

import pytest

from ddpdoctor.core.errors import UsageError
from ddpdoctor.core.files import open_regular
from ddpdoctor.lint.driver import gather
from tests.unit.test_lint_round17_shapes import lint_plain
from tests.unit.test_lint_round50_shapes import at, line_of

# -------------------------------------------------- a model class picked into a local by a switch
PICKED_CLASS = """
import torch, torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP


class Fourier(torch.nn.Module):
    def __init__(self, n):
        super().__init__()
        {fourier}

    def forward(self, t):
        return t


class UNetA(torch.nn.Module):
    def __init__(self, width):
        super().__init__()
        self.emb = Fourier(width)
        self.proj = torch.nn.Linear(width, width)

    def forward(self, x):
        return self.proj(x)


class UNetB(UNetA):
    pass


class Preconditioner(torch.nn.Module):
    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, x):
        return self.model(x)


@torch.no_grad()
def sample(model, x):
    return model(x)  # the sampler's forward


def main(kind):
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    if kind == "a":
        model_class = UNetA
    else:
        model_class = UNetB
    net = model_class(8)
    net = Preconditioner(net)
    model = DDP(net)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for step in range(100):
        model(torch.randn(4, 8)).sum().backward()
        opt.step()
        if step % 10 == 0 and rank == 0:
            sample(model, torch.randn(2, 8))


if __name__ == "__main__":
    main("a")
"""


def test_a_rank_zero_forward_of_a_class_picked_into_a_local_with_buffers_is_a_warning(tmp_path):
    # (rectified-flow trainers: `model_class = SongUNet` / `DhariwalUNet` by the config, the
    # class holding registered buffers, wrapped by a preconditioner, sampled on rank 0)
    source = PICKED_CLASS.replace("{fourier}", 'self.register_buffer("freqs", torch.randn(n // 2))')
    assert at(lint_plain(tmp_path, source), "DDP801") == [(line_of(source, "the sampler's forward"), "warning")]


def test_its_twin_without_buffers_issues_no_collective(tmp_path):
    # no buffer to broadcast: DDP's no_grad forward runs no collective, nothing to pair
    source = PICKED_CLASS.replace("{fourier}", "self.scale = torch.nn.Parameter(torch.ones(n))")
    assert at(lint_plain(tmp_path, source), "DDP801") == []


# -------------------------------------------------- a parameter's default handed on by name
HANDED_ON = """
import torch, torch.distributed as dist


def parallelize(model, local_rank=-1):
    if local_rank != -1:
        model = torch.nn.parallel.DistributedDataParallel(model, device_ids=[local_rank])
    return model


class Summarizer:
    def __init__(self):
        self.model = torch.nn.Linear(4, 4)

    def fit(self, local_rank):
        self.model = parallelize(self.model, local_rank=local_rank)
        self.model(torch.randn(2, 4)).sum().backward()

    def predict(self, batch_size, local_rank=-1):
        def move(model):
            return parallelize(model, local_rank=local_rank)  # through the closure

        predictor = move(self.model)
        self.model = parallelize(self.model, local_rank=local_rank)
        return predictor(torch.randn(batch_size, 4))


def main(local_rank):
    dist.init_process_group("gloo")
    summarizer = Summarizer()
    summarizer.fit(local_rank)
    if dist.get_rank() == 0:
        summarizer.predict({predict_args})  # rank 0 predicts alone


if __name__ == "__main__":
    main(0)
"""


def test_a_default_handed_on_by_name_keeps_ddp_out_of_rank_zeros_prediction(tmp_path):
    # (NLP recipes' `predict(..., local_rank=-1)` handing it to `parallelize_model(...,
    # local_rank=local_rank)`, also from a closure: no DistributedDataParallel on that way)
    source = HANDED_ON.replace("{predict_args}", "8")
    assert at(lint_plain(tmp_path, source), "DDP801") == []


def test_its_twin_handing_the_rank_on_builds_ddp_on_rank_zero_alone(tmp_path):
    source = HANDED_ON.replace("{predict_args}", "8, local_rank=local_rank")
    assert at(lint_plain(tmp_path, source), "DDP801") == [(line_of(source, "rank 0 predicts alone"), "error")]


# -------------------------------------------------- one writer per node, where the code knows nodes
PER_NODE = """
import argparse, os
import torch, torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--local_rank", type=int, default=int(os.environ.get("LOCAL_RANK", 0)))
    {node_option}
    args = parser.parse_args()
    dist.init_process_group("gloo")
    model = DDP(torch.nn.Linear(4, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for step in range(10):
        model(torch.randn(2, 4)).sum().backward()
        opt.step()
    if args.local_rank == 0:
        torch.save(model.module.state_dict(), "final.pt")  # local rank 0 saves


if __name__ == "__main__":
    main()
"""


def test_local_rank_zero_saving_in_code_that_knows_only_the_local_rank_is_one_writer(tmp_path):
    # as written a one-node job: its local rank 0 is the job's rank 0 (holdout 36's brief)
    source = PER_NODE.replace("{node_option}", "pass")
    assert at(lint_plain(tmp_path, source), "DDP806") == []


def test_its_twin_reading_a_node_rank_is_one_writer_per_node(tmp_path):
    source = PER_NODE.replace("{node_option}", 'parser.add_argument("--node-rank", type=int, default=0)')
    found = [f for f in lint_plain(tmp_path, source) if f.code == "DDP806"]
    assert [(f.location.line, f.severity.value) for f in found] == [(line_of(source, "local rank 0 saves"), "warning")]
    assert "runs on several nodes" in found[0].message
    assert found[0].evidence["nodes_at"].endswith(f":{line_of(source, '--node-rank')}")


def test_a_graphs_nodes_do_not_make_the_code_multi_node(tmp_path):
    # a graph's `data.num_nodes` (PyG), `num_nodes=` into a graph helper, a subgroup's
    # `group_rank`: spelt like a machine count or index, none of them one
    source = PER_NODE.replace("{node_option}", "data = argparse.Namespace(num_nodes=4); "
                              "n = max(data.num_nodes, 1); group_rank = 0")
    assert at(lint_plain(tmp_path, source), "DDP806") == []


def test_a_node_count_in_the_environment_or_a_trainer_is_multi_node(tmp_path):
    for option in ('nodes = int(os.environ.get("SLURM_NNODES", 1))', 'n = args_n = os.environ["GROUP_RANK"]'):
        source = PER_NODE.replace("{node_option}", option)
        assert at(lint_plain(tmp_path, source), "DDP806") == [(line_of(source, "local rank 0 saves"), "warning")], option


def test_a_launch_script_beside_the_script_that_starts_several_nodes_is_multi_node(tmp_path):
    # (pytorch/examples' minGPT: `#SBATCH --nodes=2` then `srun torchrun --nnodes 2 ...` in its
    # slurm/ folder, the trainer knowing only LOCAL_RANK)
    source = PER_NODE.replace("{node_option}", "pass")
    (tmp_path / "slurm").mkdir()
    (tmp_path / "slurm" / "run.sh").write_text("#!/bin/bash\n#SBATCH --nodes=2\nsrun torchrun --nnodes 2 train.py\n")
    found = [f for f in lint_plain(tmp_path, source) if f.code == "DDP806"]
    assert [(f.location.line, f.severity.value) for f in found] == [(line_of(source, "local rank 0 saves"), "warning")]
    assert found[0].evidence["nodes_at"].endswith("run.sh:2")


def test_its_twin_launched_on_one_node_is_one_writer(tmp_path):
    source = PER_NODE.replace("{node_option}", "pass")
    (tmp_path / "run.sh").write_text("torchrun --standalone --nnodes=1 --nproc_per_node=8 train.py\n")
    assert at(lint_plain(tmp_path, source), "DDP806") == []


# -------------------------------------------------- a loader restarted by `__iter__()` spelt out
RESTARTED = """
import torch, torch.distributed as dist
from torch.utils.data import DataLoader, DistributedSampler, TensorDataset
from torch.nn.parallel import DistributedDataParallel as DDP


def endless(iterable):
    iterator = iterable.__iter__()
    while True:
        try:
            yield iterator.__next__()
        except StopIteration:
            {restart}


def main():
    dist.init_process_group("gloo")
    data = TensorDataset(torch.randn(64, 4))
    sampler = DistributedSampler(data, shuffle=True)  # shuffles once
    batches = endless(DataLoader(data, batch_size=8, sampler=sampler))
    model = DDP(torch.nn.Linear(4, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for step in range(1000):
        (x,) = next(batches)
        model(x).sum().backward()
        opt.step()


if __name__ == "__main__":
    main()
"""


def test_a_loader_restarted_with_its_own_iter_method_repeats_its_order(tmp_path):
    # (PepFlow's inf_iterator: `iterator = iterable.__iter__()` on StopIteration, set_epoch never)
    source = RESTARTED.replace("{restart}", "iterator = iterable.__iter__()")
    assert at(lint_plain(tmp_path, source), "DDP804") == [(line_of(source, "shuffles once"), "warning")]


def test_its_twin_that_ends_after_one_pass_repeats_nothing(tmp_path):
    source = RESTARTED.replace("{restart}", "return")
    assert at(lint_plain(tmp_path, source), "DDP804") == []


def test_a_launch_script_added_after_a_cached_lint_is_read(tmp_path, monkeypatch):
    # the search that found no launch script keeps its answer out of the cache: a slurm script
    # written later is read by the next lint, not hidden behind the first verdict
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setenv("DDPDOCTOR_LINT_CACHE", "1")
    script = tmp_path / "train.py"
    script.write_text(textwrap.dedent(PER_NODE.replace("{node_option}", "pass")).lstrip("\n"))
    assert gather(str(script)).nodes is None
    (tmp_path / "run.sh").write_text("#SBATCH --nodes=2\nsrun torchrun --nnodes 2 train.py\n")
    again = gather(str(script))
    assert not again.cached and str(again.nodes).endswith("run.sh:1")


def test_a_directory_named_like_a_file_is_refused_in_one_line(tmp_path):
    # (the cache digests what an answer rests on; a folder among them is refused, not a crash)
    with pytest.raises(UsageError, match="not a regular file"):
        open_regular(tmp_path, "a folder", "lint reads Python source files")
