"""Shapes from session 20's blind round 27, each with its healthy twin, written in our own words."""

from __future__ import annotations

from tests.unit.test_lint_round17_shapes import lint_plain
from tests.unit.test_lint_round25_shapes import lines_of

# ------------------------------------------- a rank test an object keeps from its constructor
KEPT_TEST = """
import os, torch, torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

class Watch:
    def __init__(self):
        self.first = int(os.getenv("{env}", 0)) == 0

def main():
    dist.init_process_group("gloo")
    watch = Watch()
    model = DDP(torch.nn.Linear(4, 1))
    for step in range(100):
        model(torch.randn(8, 4)).sum().backward()
        if step % 10 == 0 and watch.first:
            torch.save(model.module.state_dict(), "last.pt")

main()
NNODES = int(os.environ.get("NNODES", 1))  # a job on several nodes
"""


def test_a_local_rank_test_an_object_keeps_is_one_writer_per_node(tmp_path):
    assert lines_of(lint_plain(tmp_path, KEPT_TEST.replace("{env}", "LOCAL_RANK")), "DDP806") == [15]


def test_its_twin_the_global_rank_kept_is_one_writer(tmp_path):
    assert lines_of(lint_plain(tmp_path, KEPT_TEST.replace("{env}", "RANK")), "DDP806") == []


# --------------------------------------------- a DDP wrapper moved with .to() where it is made
MOVED = """
import torch, torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

def evaluate(model):
    with torch.no_grad():
        return model(torch.randn(8, 4))

def main():
    dist.init_process_group("gloo")
    model = DDP(torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.BatchNorm1d(4))).to("cpu")
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for step in range(10):
        model(torch.randn(8, 4)).sum().backward()
        opt.step()
        if {guard}:
            evaluate(model)

main()
"""


def test_rank_0_alone_through_a_ddp_wrapper_moved_with_to(tmp_path):
    assert lines_of(lint_plain(tmp_path, MOVED.replace("{guard}", "dist.get_rank() == 0")), "DDP801") == [6]


def test_its_twin_every_rank_evaluates(tmp_path):
    assert lines_of(lint_plain(tmp_path, MOVED.replace("{guard}", "step % 5 == 0")), "DDP801") == []


# ------------------------------------------------------ torchdata's StatefulDataLoader is a loader
STATEFUL = """
import torch, torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DistributedSampler
from torchdata.stateful_dataloader import StatefulDataLoader

def main(data):
    dist.init_process_group("gloo")
    model = DDP(torch.nn.Linear(4, 1))
    loader = StatefulDataLoader(data, batch_size=8, {sampling})
    for epoch in range(3):
        for x in loader:
            model(x).sum().backward()

main([torch.zeros(4)] * 64)
"""


def test_a_stateful_dataloader_without_a_sampler_feeds_every_rank_everything(tmp_path):
    assert lines_of(lint_plain(tmp_path, STATEFUL.replace("{sampling}", "shuffle=True")), "DDP802") == [9]


def test_its_twin_with_a_distributed_sampler(tmp_path):
    found = lint_plain(tmp_path, STATEFUL.replace("{sampling}", "sampler=DistributedSampler(data, shuffle=False)"))
    assert lines_of(found, "DDP802") == []


# ------------------------------------------ an FSDP full state dict gathered on rank 0 alone
GATHER = """
import torch, torch.distributed as dist
from torch.distributed.fsdp import FullyShardedDataParallel as FSDP, StateDictType, FullStateDictConfig

def keep(model, opt, step):
    with FSDP.state_dict_type(model, StateDictType.FULL_STATE_DICT, FullStateDictConfig(rank0_only=True)):
        state = model.state_dict()
    torch.save(state, f"step_{step}.pt")

def main():
    dist.init_process_group("gloo")
    model = FSDP(torch.nn.Linear(8, 8))
    opt = torch.optim.AdamW(model.parameters())
    for step in range(1, 301):
        model(torch.randn(4, 8)).sum().backward()
        opt.step()
        if step % 100 == 0{and_rank}:
            keep(model, opt, step)

main()
"""


def test_gathering_an_fsdp_full_state_dict_on_rank_0_alone_hangs(tmp_path):
    found = lint_plain(tmp_path, GATHER.replace("{and_rank}", " and dist.get_rank() == 0"))
    assert lines_of(found, "DDP801") == [6]


def test_its_twin_every_rank_gathers_and_rank_0_alone_writes(tmp_path):
    assert lines_of(lint_plain(tmp_path, GATHER.replace("{and_rank}", "")), "DDP801") == []


# ------------------------------------- a rank-guarded re-test of a flag every rank already left on
RETEST = """
import argparse, torch, torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

parser = argparse.ArgumentParser()
parser.add_argument("--dry_run", action="store_true")
args = parser.parse_args()
dist.init_process_group("gloo")
net = DDP(torch.nn.Linear(4, 1))
for step in range(1000):
    if {leave}:
        break
    if dist.get_rank() == 0 and step % 100 == 0:
        if args.dry_run:
            break
    net(torch.randn(8, 4)).sum().backward()
"""


def test_a_flag_every_rank_already_left_on_is_never_true_under_the_rank_test(tmp_path):
    assert lines_of(lint_plain(tmp_path, RETEST.replace("{leave}", "step >= 500 or args.dry_run")), "DDP809") == []


def test_its_twin_rank_0_alone_leaves_on_the_flag(tmp_path):
    assert lines_of(lint_plain(tmp_path, RETEST.replace("{leave}", "step >= 500")), "DDP809") == [13]


# ------------------------------------- a sampler class of the source's own named like torch's
OWN_SAMPLER = """
import torch, torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, Sampler, TensorDataset
{import_line}

{own_class}

dist.init_process_group("gloo")
data = TensorDataset(torch.randn(64, 4))
loader = DataLoader(data, batch_size=8, sampler=RandomSampler(data))
model = DDP(torch.nn.Linear(4, 1))
for (x,) in loader:
    model(x).sum().backward()
"""
SHARDING = '''class RandomSampler(Sampler):
    def __init__(self, data):
        self.n, self.rank, self.world = len(data), dist.get_rank(), dist.get_world_size()

    def __iter__(self):
        return iter(torch.randperm(self.n).tolist()[self.rank::self.world])'''


def test_a_sampler_of_the_sources_own_named_randomsampler_is_not_torchs(tmp_path):
    source = OWN_SAMPLER.replace("{import_line}", "").replace("{own_class}", SHARDING)
    assert lines_of(lint_plain(tmp_path, source), "DDP802") == []


def test_its_twin_torchs_randomsampler_reads_everything_on_every_rank(tmp_path):
    source = OWN_SAMPLER.replace("{import_line}", "from torch.utils.data import RandomSampler").replace("{own_class}", "")
    assert lines_of(lint_plain(tmp_path, source), "DDP802") == [10]


# --------------------------------------- a torchvision architecture picked by name holds buffers
BY_NAME = """
import os, torch, torch.distributed as dist
import torchvision.models as models

def evaluate(net, x):
    with torch.no_grad():
        return net(x)

dist.init_process_group("gloo")
net = torch.nn.parallel.DistributedDataParallel({model})
opt = torch.optim.SGD(net.parameters(), lr=0.1)
for epoch in range(3):
    net(torch.randn(8, 3, 32, 32)).sum().backward()
    opt.step()
    if dist.get_rank() == 0:
        evaluate(net, torch.randn(8, 3, 32, 32))
"""


def test_a_torchvision_model_picked_by_name_broadcasts_buffers_in_rank_0s_forward(tmp_path):
    found = lint_plain(tmp_path, BY_NAME.replace("{model}", 'models.__dict__[os.environ["ARCH"]]()'))
    assert lines_of(found, "DDP801") == [6]


def test_its_twin_a_plain_linear_model_has_no_buffers(tmp_path):
    assert lines_of(lint_plain(tmp_path, BY_NAME.replace("{model}", "torch.nn.Linear(4, 1)")), "DDP801") == []


# ------------------------------------------------ a class picked into a name, built, then called
PICKED = """
import torch, torch.distributed as dist

class Evaluator:
    def __call__(self, model, x):
        with torch.no_grad():
            return model(x)

dist.init_process_group("gloo")
net = torch.nn.parallel.DistributedDataParallel(torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.BatchNorm1d(4)))
opt = torch.optim.SGD(net.parameters(), lr=0.1)
picked = Evaluator
evaluator = picked()
for epoch in range(3):
    net(torch.randn(8, 4)).sum().backward()
    opt.step()
    if {guard}:
        evaluator(net, torch.randn(8, 4))
"""


def test_a_class_picked_into_a_name_then_built_runs_its_call(tmp_path):
    assert lines_of(lint_plain(tmp_path, PICKED.replace("{guard}", "dist.get_rank() == 0")), "DDP801") == [6]


def test_its_twin_every_rank_evaluates_through_it(tmp_path):
    assert lines_of(lint_plain(tmp_path, PICKED.replace("{guard}", "epoch > 0")), "DDP801") == []
