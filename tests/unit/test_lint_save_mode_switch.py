"""DDP806 and a helper with two modes: `checkpoint(cfg, model=None)` saves when handed a model and
loads otherwise. Called on every rank without a model (to load a resume) and on rank 0 with one,
its torch.save is rank 0's: the every-rank call never reaches the `if model is not None:` side.
Handed the model on every rank, it is an every-rank save."""

from __future__ import annotations

from tests.unit.test_lint_real_patterns import lint

TWO_MODES = """
def checkpoint(path, model=None):
    if model is not None:
        torch.save(model.state_dict(), path)
    else:
        if os.path.exists(path):
            return torch.load(path)
        return None

model = DDP(torch.nn.Linear(4, 1))
resume = checkpoint("last.pt"{every_rank})
if dist.get_rank() == 0:
    checkpoint("last.pt", model=model)
"""


def test_the_load_mode_call_on_every_rank_never_reaches_the_save(tmp_path):
    found, _ = lint(tmp_path, TWO_MODES.format(every_rank=""))
    assert [f.code for f in found if f.code == "DDP806"] == []


def test_an_explicit_none_counts_the_same(tmp_path):
    found, _ = lint(tmp_path, TWO_MODES.format(every_rank=", model=None"))
    assert [f.code for f in found if f.code == "DDP806"] == []


def test_handed_the_model_on_every_rank_it_saves_on_every_rank(tmp_path):
    found, _ = lint(tmp_path, TWO_MODES.format(every_rank=", model=model"))
    assert [(f.code, f.location.line) for f in found if f.code == "DDP806"] == [("DDP806", 9)]
