"""A learner object built per spawned rank (DiffWave's shape, in our own lines): its loader comes
from a builder whose sampler is a conditional expression (`sampler=DistributedSampler(ds) if
distributed else None`), and the launcher marks rank 0 from outside the class
(`learner.is_master = rank == 0`). The sampler without set_epoch is a DDP804; the save under
`if self.is_master:` is one rank's. Healthy twins: set_epoch called; the flag left at True."""

from __future__ import annotations

from tests.unit.test_lint_real_patterns import lint

LEARNER = """
def from_path(is_distributed=False):
    data = TensorDataset(torch.randn(64, 4))
    return DataLoader(data, batch_size=8, shuffle=not is_distributed,
                      sampler=DistributedSampler(data) if is_distributed else None)

class Learner:
    def __init__(self, model, loader):
        self.model, self.loader = model, loader
        self.is_master = True
        self.epoch = 0
    def train(self):
        while True:
            {set_epoch}
            for (x,) in self.loader:
                self.model(x).sum().backward()
                if self.is_master:
                    torch.save(self.model.state_dict(), "weights.pt")
            self.epoch += 1

def run(rank):
    loader = from_path(is_distributed=True)
    learner = Learner(DDP(torch.nn.Linear(4, 1)), loader)
    {mark}
    learner.train()

run(dist.get_rank())
"""
MARK = "learner.is_master = (rank == 0)"


def _codes(tmp_path, set_epoch="pass", mark=MARK):
    found, _ = lint(tmp_path, LEARNER.format(set_epoch=set_epoch, mark=mark))
    return sorted(f.code for f in found if f.code in ("DDP804", "DDP806"))


def test_the_conditional_sampler_without_set_epoch_and_the_rank_zero_save(tmp_path):
    assert _codes(tmp_path) == ["DDP804"]


def test_set_epoch_through_the_loader_is_healthy(tmp_path):
    assert _codes(tmp_path, set_epoch="self.loader.sampler.set_epoch(self.epoch)") == []


def test_a_flag_never_marked_from_outside_saves_on_every_rank(tmp_path):
    assert _codes(tmp_path, mark="pass") == ["DDP804", "DDP806"]
