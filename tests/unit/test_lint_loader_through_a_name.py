"""A training loop that iterates a name holding the loader (`shown = tqdm(train_loader)` or
`progress = train_loader`, then `for i, b in enumerate(shown)` with a backward) trains on that
loader: a sampler-less one is a DDP802 error, as with the loader written in the loop; with a
DistributedSampler it is clean, and a wrapped loader no backward loop reads stays a warning."""

from __future__ import annotations

from tests.unit.test_lint_real_patterns import lint

SCRIPT = """
from tqdm import tqdm
train_loader = DataLoader(TensorDataset(torch.randn(64, 4)), batch_size=8{sampler})
model = DDP(torch.nn.Linear(4, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for epoch in range(3):
    {held}
    for i, (x,) in enumerate(shown):
        {work}
"""
TRAIN = "model(x).sum().backward()\n        opt.step()"


def _802(tmp_path, held="shown = tqdm(train_loader)", sampler=", shuffle=True", work=TRAIN):
    found, _ = lint(tmp_path, SCRIPT.format(held=held, sampler=sampler, work=work))
    return [(f.code, f.severity.value) for f in found if f.code == "DDP802"]


def test_a_loader_wrapped_in_a_name_before_the_training_loop_is_the_training_loader(tmp_path):
    assert _802(tmp_path) == [("DDP802", "error")]


def test_a_plain_alias_of_the_loader_counts_the_same(tmp_path):
    assert _802(tmp_path, held="shown = train_loader") == [("DDP802", "error")]


def test_the_same_loop_over_a_distributed_sampler_is_clean(tmp_path):
    sampler = ", sampler=DistributedSampler(train_loader_ds)"
    found, _ = lint(tmp_path, "train_loader_ds = TensorDataset(torch.randn(64, 4))\n" + SCRIPT.format(
        held="shown = tqdm(train_loader)", sampler=sampler, work=TRAIN).replace(
        "DataLoader(TensorDataset(torch.randn(64, 4))", "DataLoader(train_loader_ds"))
    assert [f.code for f in found if f.code == "DDP802"] == []


def test_a_wrapped_loader_no_backward_loop_reads_is_not_judged(tmp_path):
    assert _802(tmp_path, work="print(model(x).sum())") == []


BUILDER = """
from tqdm import tqdm

class Clips(torch.utils.data.Dataset):
    def __init__(self, n, train):
        self.train = train
        self.weights = torch.ones(n)
    def __len__(self):
        return len(self.weights)
    def __getitem__(self, idx):
        if self.train:
            {draw}
        return torch.randn(4) * idx

def make_loader(n, train):
    if train:
        data = Clips(n, train)
        return DataLoader(dataset=data, batch_size=8, shuffle=False)
    else:
        data = Clips(n, train)
        return DataLoader(dataset=data, batch_size=1, shuffle=False)

model = DDP(torch.nn.Linear(4, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.1)
trainloader = make_loader(64, True)
for epoch in range(3):
    shown = tqdm(trainloader)
    for x in shown:
        model(x).sum().backward()
        opt.step()
"""


def test_a_builder_s_loader_trains_only_on_the_side_its_caller_s_constant_reaches(tmp_path):
    """`make_loader(64, True)`: the `if train:` side is the training loader (an error); the
    `else:` side is never built on that way in (not reported)."""
    found, _ = lint(tmp_path, BUILDER.format(draw="pass"))
    assert [(f.code, f.severity.value, f.location.line) for f in found if f.code == "DDP802"] == \
        [("DDP802", "error", 23)]


def test_a_dataset_that_draws_its_own_index_makes_the_missing_sampler_a_warning(tmp_path):
    """`idx = torch.multinomial(...)` before any read, on the side the construction sets."""
    found, _ = lint(tmp_path, BUILDER.format(draw="idx = torch.multinomial(self.weights, 1).item()"))
    loader = [f for f in found if f.code == "DDP802"]
    assert [(f.severity.value, f.location.line) for f in loader] == [("warning", 23)]
    assert "ignores the index it is handed" in loader[0].message


INLINE = """
def main():
    model = DDP(torch.nn.Linear(2, 2))
    ds = TensorDataset(torch.randn(8, 2))
    for (x,) in {loader}:
        model(x).sum().backward()

main()
"""


def test_a_loader_built_where_the_training_loop_iterates_it_is_judged(tmp_path):
    found, _ = lint(tmp_path, INLINE.format(loader="DataLoader(ds, shuffle=True)"))
    assert [(f.code, f.severity.value) for f in found if f.code == "DDP802"] == [("DDP802", "error")]


def test_the_same_loop_over_a_sharded_inline_loader_is_clean(tmp_path):
    found, _ = lint(tmp_path, INLINE.format(loader="DataLoader(ds, sampler=DistributedSampler(ds))"))
    assert [f.code for f in found if f.code == "DDP802"] == []
