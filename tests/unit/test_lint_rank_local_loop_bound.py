"""DDP809 on a loop's trip count: `begin_epoch` set from a checkpoint only under a rank test, then
`for epoch in range(begin_epoch + 1, end)` on every rank: the ranks run different numbers of passes
of the DDP backward inside, and the ones with passes left wait in its all-reduce. Shared first
(broadcast) or set on every rank, it is healthy."""

from __future__ import annotations

from tests.unit.test_lint_real_patterns import codes, lint

RESUME = """
rank = dist.get_rank()
model = DDP(torch.nn.Linear(4, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.1)
begin_epoch = 0
{resume}
for epoch in range(begin_epoch + 1, 10):
    model(torch.randn(2, 4)).sum().backward()
    opt.step()
"""
RANK_ZERO = 'if rank in [-1, 0]:\n    begin_epoch = torch.load("last.pt")["epoch"]'


def test_a_loop_bound_set_on_rank_zero_alone_is_a_divergence(tmp_path):
    found, _ = lint(tmp_path, RESUME.format(resume=RANK_ZERO))
    assert codes(found) == [("DDP809", "error", 13)]
    assert "runs a different number of passes" in found[0].message and "begin_epoch" in found[0].message


def test_the_bound_broadcast_before_the_loop_is_healthy(tmp_path):
    shared = RANK_ZERO + "\nbox = [begin_epoch]\ndist.broadcast_object_list(box, src=0)\nbegin_epoch = box[0]"
    found, _ = lint(tmp_path, RESUME.format(resume=shared))
    assert [f.code for f in found if f.code == "DDP809"] == []


def test_the_bound_read_on_every_rank_is_healthy(tmp_path):
    found, _ = lint(tmp_path, RESUME.format(resume='begin_epoch = torch.load("last.pt")["epoch"]'))
    assert [f.code for f in found if f.code == "DDP809"] == []


CONFIGURED = """
import argparse
parser = argparse.ArgumentParser()
parser.add_argument("--begin-epoch", type=int, default=0)
args = parser.parse_args()
rank = dist.get_rank()
model = DDP(torch.nn.Linear(4, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.1)

def train_one_epoch():
    model(torch.randn(2, 4)).sum().backward()
    opt.step()

begin_epoch = args.begin_epoch
if rank in [-1, 0]:
    begin_epoch = {again}
for epoch in range(begin_epoch + 1, 10):
    train_one_epoch()
"""


def test_a_bound_every_rank_reads_from_the_options_then_rank_zero_overwrites_is_a_divergence(tmp_path):
    """The first value is a setting (the same on every rank), the backward sits in a helper."""
    found, _ = lint(tmp_path, CONFIGURED.format(again='torch.load("last.pt")["epoch"]'))
    assert codes(found) == [("DDP809", "error", 22)]


def test_rank_zero_reading_the_same_setting_again_is_no_rank_local_value(tmp_path):
    found, _ = lint(tmp_path, CONFIGURED.format(again="args.begin_epoch"))
    assert [f.code for f in found if f.code == "DDP809"] == []


def test_a_bound_rank_zero_sets_only_when_a_checkpoint_exists_is_a_warning_that_says_so(tmp_path):
    resume = 'if rank in [-1, 0]:\n    if os.path.exists("last.pt"):\n        begin_epoch = torch.load("last.pt")["epoch"]'
    found, _ = lint(tmp_path, RESUME.format(resume=resume))
    assert codes(found) == [("DDP809", "warning", 14)]
    assert "rank 0 takes the assignment at line 13 (under a further test)" in found[0].message
