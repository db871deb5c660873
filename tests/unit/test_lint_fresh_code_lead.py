"""Issue 38, session 11: shapes the lead's blind rounds found (helpers c, d), written again in our
own words as small scripts, each with its healthy twin."""

from __future__ import annotations

from tests.unit.test_lint_real_patterns import codes, lint

# ---------------------------------------------------------------------- DDP804
SAMPLER_BOUND = """
def data_sampler(ds, shuffle):
    return DistributedSampler(ds, shuffle=shuffle)
def train(loader, model):
    for x, in loader:
        model(x).sum().backward()
model = DDP(torch.nn.Linear(4, 1))
ds = TensorDataset(torch.randn(64, 4))
sampler = data_sampler(ds, shuffle=True)
loader = DataLoader(ds, batch_size=4, sampler=sampler)
for i in range(10):
{set_epoch}    train(loader, model)
"""


def test_a_helpers_sampler_bound_to_a_name_needs_set_epoch_whatever_the_loop_variable_is_called(tmp_path):
    found, _ = lint(tmp_path, SAMPLER_BOUND.format(set_epoch=""))
    assert codes(found) == [("DDP804", "warning", 8)]


def test_the_same_with_set_epoch_is_healthy(tmp_path):
    found, _ = lint(tmp_path, SAMPLER_BOUND.format(set_epoch="    sampler.set_epoch(i)\n"))
    assert codes(found) == []


# ---------------------------------------------------------------------- DDP809
RANK0_NAN_RETURN = """
def train(model, opt, rank):
    for step in range(100):
        loss = model(torch.randn(8, 4)).sum()
        loss.backward()
        opt.step()
        if rank == 0:
            print(loss.item())
            if {test}:
                return False
    return True
model = DDP(torch.nn.Linear(4, 1))
train(model, torch.optim.SGD(model.parameters(), lr=0.1), dist.get_rank())
"""


def test_a_return_out_of_the_training_loop_on_rank_zeros_own_loss_is_a_warning(tmp_path):
    found, _ = lint(tmp_path, RANK0_NAN_RETURN.format(test="math.isnan(loss.item())"))
    assert codes(found) == [("DDP809", "warning", 14)]
    assert "leaves the function (return)" in found[0].message


def test_the_same_stop_shared_first_and_taken_on_every_rank_is_healthy(tmp_path):
    source = RANK0_NAN_RETURN.format(test="False").replace(
        "        if rank == 0:\n            print(loss.item())\n            if False:\n                return False\n",
        "        flag = torch.tensor(float(math.isnan(loss.item())))\n"
        "        dist.all_reduce(flag, op=dist.ReduceOp.MAX)\n"
        "        if flag.item():\n            return False\n")
    assert "all_reduce(flag" in source
    found, _ = lint(tmp_path, source)
    assert codes(found) == []


BUILT_LOADER = """
def make_loader(ds):
    loaders = []
    loaders.append(DataLoader(ds, batch_size=4, sampler=DistributedSampler(ds)))
    return loaders[0]
model = DDP(torch.nn.Linear(4, 1))
ds = TensorDataset(torch.randn(64, 4), torch.ones(64))
loader = make_loader(ds)
for x, ok in loader:
{decide}
    model(x).sum().backward()
"""


def test_a_skip_on_a_flag_of_this_ranks_batch_from_a_loader_a_helper_builds_is_a_warning(tmp_path):
    found, _ = lint(tmp_path, BUILT_LOADER.format(decide="    if not bool(ok.all()):\n        continue"))
    assert codes(found) == [("DDP809", "warning", 15)]


def test_the_same_flag_all_reduced_before_the_skip_is_healthy(tmp_path):
    decide = ("    bad = torch.tensor(float(not bool(ok.all())))\n    dist.all_reduce(bad)\n"
              "    if bad.item() > 0:\n        continue")
    found, _ = lint(tmp_path, BUILT_LOADER.format(decide=decide))
    assert [c for c, _, _ in codes(found)] == []
