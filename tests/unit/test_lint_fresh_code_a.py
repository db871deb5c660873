"""Issue 38, a third blind measure (helper a: language, speech, retrieval, science code new to the
corpus): what the lint misjudged there, written again in our own words as small scripts, each
with its healthy twin."""

from __future__ import annotations

from tests.unit.test_lint_real_patterns import codes, lint


# ---------------------------------------------------------------------- DDP802
LOADERS_IN_A_LIST = """
def run(net, loaders):
    fit_on, look_at = loaders
    for x, in fit_on:
        net(x).sum().backward()
        opt.step()
    with torch.no_grad():
        for x, in look_at:
            net(x)
net = DDP(torch.nn.Linear(4, 1))
opt = torch.optim.SGD(net.parameters(), lr=0.1)
ds = TensorDataset(torch.randn(64, 4))
first = DataLoader(ds, batch_size=8, shuffle=True)
second = DataLoader(ds, batch_size=8)
for epoch in range(2):
    run(net, [{order}])
"""


def test_a_plain_loader_handed_in_a_list_and_unpacked_into_the_backward_loop_is_unsharded(tmp_path):
    found, _ = lint(tmp_path, LOADERS_IN_A_LIST.format(order="first, second"))
    assert codes(found) == [("DDP802", "error", 18)]


def test_the_loader_unpacked_into_the_evaluation_loop_is_not_the_trained_one(tmp_path):
    # the same list in the other order: the loader at the trained position is the other one
    found, _ = lint(tmp_path, LOADERS_IN_A_LIST.format(order="second, first"))
    assert codes(found) == [("DDP802", "error", 19)]


SHARD_PICKED_IN_A_HELPER = """
import glob
import numpy as np
def read_parts(folder):
    names = sorted(glob.glob(folder + "/*.pt"))
    mine = {picked}
    parts = []
    for name in mine:
        parts.append(torch.load(name))
    return torch.cat(parts)
def make_set(folder):
    return TensorDataset(read_parts(folder))
net = DDP(torch.nn.Linear(4, 1))
opt = torch.optim.SGD(net.parameters(), lr=0.1)
data = make_set("shards")
loader = DataLoader(data, batch_size=8, shuffle=True)
for epoch in range(2):
    for x, in loader:
        net(x).sum().backward()
        opt.step()
"""


def test_a_dataset_loaded_from_the_files_a_helper_picked_for_this_rank_is_already_sharded(tmp_path):
    found, _ = lint(tmp_path, SHARD_PICKED_IN_A_HELPER.format(
        picked="list(np.array_split(names, dist.get_world_size()))[dist.get_rank()]"))
    assert codes(found) == []


def test_the_same_helper_loading_every_file_on_every_rank_is_unsharded(tmp_path):
    found, _ = lint(tmp_path, SHARD_PICKED_IN_A_HELPER.format(picked="names[:dist.get_world_size() * 4]"))
    assert codes(found) == [("DDP802", "error", 21)]


# ---------------------------------------------------------------------- DDP806
SAVE_AFTER_A_SETUP_HELPER = """
from helpers import prepare
class Opts:
    out = "last.pt"
class Runner:
    def __init__(self, opts, local):
        self.opts = opts
        self.local = local
    def keep(self, net):
        torch.save(net.state_dict(), self.opts.out)
    def fit(self):
        net = DDP(torch.nn.Linear(4, 1))
        for epoch in range(2):
            net(torch.randn(2, 4)).sum().backward()
            if self.local == 0:
                self.keep(net)
def main():
    local = int(os.environ["LOCAL_RANK"])
    opts = prepare(Opts(), local)
    Runner(opts, local).fit()
main()
NNODES = int(os.environ.get("NNODES", 1))  # a job on several nodes
"""
TOOLS = """
import torch
def prepare(opts, local):
    torch.manual_seed(0)
    {body}
    return opts
"""


def test_options_handed_with_the_rank_to_a_re_exported_helper_that_ignores_it_keep_a_shared_path(tmp_path):
    # `from tools import *` re-exports the helper; it takes the local rank but returns the options
    # untouched, so the save path is the same on every node's local rank 0 (a job on several
    # nodes: NNODES)
    found, _ = lint(tmp_path, SAVE_AFTER_A_SETUP_HELPER, helpers="from tools import *\n",
                    tools=TOOLS.format(body="pass"))
    assert codes(found) == [("DDP806", "warning", 15)]


def test_the_same_helper_putting_the_rank_into_the_path_gives_each_rank_its_own_file(tmp_path):
    found, _ = lint(tmp_path, SAVE_AFTER_A_SETUP_HELPER, helpers="from tools import *\n",
                    tools=TOOLS.format(body="opts.out = f'last-{local}.pt'"))
    assert codes(found) == []


DUMP_A_FAILING_BATCH = """
import uuid
def dump(batch, folder):
    name = {name}
    torch.save(batch, name)
net = DDP(torch.nn.Linear(4, 1))
for step in range(10):
    x = torch.randn(8, 4)
    net(x).sum().backward()
    if step % 5 == 0:
        dump(x, "dumps")
"""


def test_a_dump_named_by_a_fresh_uuid_is_a_file_of_its_own_on_every_rank(tmp_path):
    found, _ = lint(tmp_path, DUMP_A_FAILING_BATCH.format(name='f"{folder}/batch-{uuid.uuid4()}.pt"'))
    assert codes(found) == []


def test_the_same_dump_under_a_fixed_name_is_written_by_every_rank(tmp_path):
    found, _ = lint(tmp_path, DUMP_A_FAILING_BATCH.format(name='f"{folder}/batch.pt"'))
    assert codes(found) == [("DDP806", "warning", 10)]


FEATURE_CACHE = """
def features(args, path):
    cache = path + ".cached.pt"
    if os.path.exists(cache):
        return torch.load(cache)
    data = torch.randn(64, 4)
    if args.local_rank in [-1, 0]:
        torch.save(data, {target})
    return data
class Args:
    local_rank = int(os.environ["LOCAL_RANK"])
data = features(Args(), "train.txt")
net = DDP(torch.nn.Linear(4, 1))
net(data).sum().backward()
NNODES = int(os.environ.get("NNODES", 1))  # a job on several nodes
"""


def test_a_cache_that_local_rank_zero_writes_and_every_rank_reads_back_is_one_per_node_by_design(tmp_path):
    found, _ = lint(tmp_path, FEATURE_CACHE.format(target="cache"))
    assert codes(found) == []


def test_a_file_local_rank_zero_writes_but_nothing_reads_back_is_written_once_per_node(tmp_path):
    found, _ = lint(tmp_path, FEATURE_CACHE.format(target='path + ".out.pt"'))
    assert codes(found) == [("DDP806", "warning", 13)]


DUMP_ON_FAILURE = """
def dump(batch):
    torch.save(batch, "failed-batch.pt")
net = DDP(torch.nn.Linear(4, 1))
for step in range(10):
    x = torch.randn(8, 4)
    try:
        net(x).sum().backward()
    except RuntimeError:
        dump(x)
        {then}
"""


def test_a_dump_made_only_on_the_way_out_of_a_failing_step_is_the_failing_ranks_own(tmp_path):
    found, _ = lint(tmp_path, DUMP_ON_FAILURE.format(then="raise"))
    assert codes(found) == []


def test_the_same_dump_in_a_handler_that_carries_on_can_run_on_every_rank(tmp_path):
    found, _ = lint(tmp_path, DUMP_ON_FAILURE.format(then="continue"))
    # (and the rank whose step raised skips its backward while the others all-reduce: DDP809)
    assert codes(found) == [("DDP806", "warning", 8), ("DDP809", "warning", 14)]
