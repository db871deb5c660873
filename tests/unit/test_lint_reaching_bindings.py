"""A name is what the bindings that can reach its use made it: a parameter rebound to the rank's
share further down (in the other branch of `if shuffle: return ...`) is still the whole dataset
where the DistributedSampler reads it, so that sampler shards once (no DDP803). Bound above the
sampler, or below it inside a loop that comes back to it, the share is what the sampler gets."""

from __future__ import annotations

from tests.unit.test_lint_real_patterns import lint

HELPER = """
def loader(dataset, rank, world_size, shuffle=False):
    if shuffle:
        sampler = DistributedSampler(dataset)
        return DataLoader(dataset, sampler=sampler)
    else:
        dataset = torch.utils.data.Subset(dataset, list(range(rank, len(dataset), world_size)))
        return DataLoader(dataset, shuffle=False)

def main():
    model = DDP(torch.nn.Linear(2, 2))
    ds = TensorDataset(torch.randn(64, 2))
    train = loader(ds, dist.get_rank(), dist.get_world_size(), shuffle=True)
    for epoch in range(2):
        train.sampler.set_epoch(epoch)
        for (x,) in train:
            model(x).sum().backward()

main()
"""


def test_a_rebind_below_the_sampler_in_the_other_branch_does_not_reach_it(tmp_path):
    found, _ = lint(tmp_path, HELPER)
    assert [f.code for f in found if f.code == "DDP803"] == []


def test_the_share_bound_above_the_sampler_is_sharded_twice(tmp_path):
    source = HELPER.replace("""    if shuffle:
        sampler""", """    dataset = torch.utils.data.Subset(dataset, list(range(rank, len(dataset), world_size)))
    if shuffle:
        sampler""")
    found, _ = lint(tmp_path, source)
    assert [f.code for f in found if f.code == "DDP803"] == ["DDP803"]


def test_a_rebind_below_inside_a_loop_reaches_the_next_pass(tmp_path):
    source = """
def main():
    model = DDP(torch.nn.Linear(2, 2))
    ds = TensorDataset(torch.randn(64, 2))
    for epoch in range(2):
        loader = DataLoader(ds, sampler=DistributedSampler(ds))
        for (x,) in loader:
            model(x).sum().backward()
        ds = torch.utils.data.Subset(ds, list(range(dist.get_rank(), len(ds), dist.get_world_size())))

main()
"""
    found, _ = lint(tmp_path, source)
    assert [f.code for f in found if f.code == "DDP803"] == ["DDP803"]
