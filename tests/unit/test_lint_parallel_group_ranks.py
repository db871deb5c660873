"""A parallel group's rank (`dp_rank`, `tp_rank`, `data_parallel_rank`) is a rank: a save under
`if self.dp_rank == 0:` to a path named by the TP rank has one writer per file, and a barrier
under `if tp_rank == 0:` runs on some ranks only. Without the test, every rank saves."""

from __future__ import annotations

from tests.unit.test_lint_real_patterns import lint

MANAGER = """
class Checkpoints:
    def __init__(self, grid):
        self.dp_rank = grid.dp_rank
        self.tp_rank = grid.tp_rank
    def save(self, model, out_dir):
        path = os.path.join(out_dir, f"weights_tp{{self.tp_rank}}.pth")
        {guard}
            torch.save(model.state_dict(), path)

def run(grid):
    model = torch.nn.Linear(4, 1)
    Checkpoints(grid).save(model, "ckpt")

run(os.environ)
"""


def test_a_save_under_the_data_parallel_rank_is_one_writer(tmp_path):
    found, _ = lint(tmp_path, MANAGER.format(guard="if self.dp_rank == 0:"))
    assert [f.code for f in found if f.code == "DDP806"] == []


def test_without_the_test_every_rank_writes_it(tmp_path):
    found, _ = lint(tmp_path, MANAGER.format(guard="if True:").replace(
        'f"weights_tp{self.tp_rank}.pth"', '"weights.pth"'))
    assert [f.code for f in found if f.code == "DDP806"] == ["DDP806"]


def test_a_barrier_under_the_tensor_parallel_rank_runs_on_some_ranks_only(tmp_path):
    found, _ = lint(tmp_path, "def step(tp_rank):\n    if tp_rank == 0:\n        dist.barrier()\n\nstep(int(os.environ['TP_RANK']))\n")
    assert [(f.code, f.severity.value) for f in found if f.code == "DDP801"] == [("DDP801", "error")]
