"""Values over names: a parameter a rank-0 call fills and the other ranks' call leaves at its
default None is a rank test when tested (`self.logger is not None`), and what a rank variable is
assigned says whether it is the node's or the job's rank, whatever it is called. Both seen on
real code (a video-segmentation trainer built with a logger on rank 0 only)."""

from __future__ import annotations

from tests.unit.test_lint_real_patterns import codes, lint

TRAINER = """
class Trainer:
    def __init__(self, logger=None, rank=0):
        self.logger = logger
        self.net = DDP(torch.nn.Linear(4, 1))
    def save(self, it):
        torch.save(self.net.module.state_dict(), f"net_{{it}}.pt")
    def step(self, it):
        self.net(torch.randn(2, 4)).sum().backward()
        if it % 10 == 0 and self.logger is not None:
            self.save(it)
{rank_line}
if rank == 0:
    trainer = Trainer(logger=print, rank=rank)
else:
    trainer = Trainer({other})
for it in range(100):
    trainer.step(it)
NNODES = int(os.environ.get("NNODES", 1))  # a job on several nodes
"""


def test_a_logger_given_on_rank_zero_only_makes_its_test_a_rank_test(tmp_path):
    found, _ = lint(tmp_path, TRAINER.format(rank_line="rank = dist.get_rank()", other="rank=rank"))
    assert codes(found) == []


def test_a_logger_given_on_every_rank_leaves_the_save_on_every_rank(tmp_path):
    found, _ = lint(tmp_path, TRAINER.format(rank_line="rank = dist.get_rank()", other="logger=print, rank=rank"))
    assert [c[:2] for c in codes(found)] == [("DDP806", "warning")]


def test_a_local_rank_assigned_the_global_rank_is_the_jobs_rank_zero(tmp_path):
    found, _ = lint(tmp_path, TRAINER.replace("rank", "local_rank").format(
        local_rank_line="local_rank = dist.get_rank()", other="local_rank=local_rank"))
    assert codes(found) == []


def test_a_local_rank_read_from_the_launcher_is_one_writer_per_node(tmp_path):
    found, _ = lint(tmp_path, TRAINER.replace("rank", "local_rank").format(
        local_rank_line='local_rank = int(os.environ["LOCAL_RANK"])', other="local_rank=local_rank"))
    assert [c[:2] for c in codes(found)] == [("DDP806", "warning")]
    assert "one rank per node" in found[0].message
