"""Shapes from the second blind round: a training loader read as a global by a module-level
function (baby-llama2); a counter started as `torch.tensor(0)` and stepped on rank 0 alone
(particleflow); a flag `dist.reduce`d to rank 0, which leaves the other ranks their own value
(OpenLTM); a constant set_epoch on the validation loader a helper returned beside the training one
(NVAE); and a test loader's fresh DistributedSampler that no training loop reads (particleflow)."""

from __future__ import annotations

from tests.unit.test_lint_real_patterns import lint

GLOBAL_LOADER = """
def train_epoch(epoch):
    for step, (x, y) in enumerate(train_loader):
        loss = torch.nn.functional.mse_loss(model(x), y)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()

ds = TensorDataset(torch.randn(64, 4), torch.randn(64, 1))
train_loader = DataLoader(ds, batch_size=8{sampler})
model = DDP(torch.nn.Linear(4, 1))
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
for epoch in range(2):
    {set_epoch}
    train_epoch(epoch)
"""


def test_a_global_loader_a_module_function_trains_on_is_an_error(tmp_path):
    found, _ = lint(tmp_path, GLOBAL_LOADER.format(sampler="", set_epoch="pass"))
    assert [(f.code, f.severity.value) for f in found if f.code == "DDP802"] == [("DDP802", "error")]


def test_with_its_sampler_it_is_clean(tmp_path):
    found, _ = lint(tmp_path, GLOBAL_LOADER.format(sampler=", sampler=DistributedSampler(ds)",
                                                   set_epoch="train_loader.sampler.set_epoch(epoch)"))
    assert [f.code for f in found if f.code in ("DDP802", "DDP804")] == []


TENSOR_COUNTER = """
def main(rank, patience=3):
    model = DDP(torch.nn.Linear(4, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    stale, best = torch.tensor(0), float("inf")
    for epoch in range(100):
        opt.zero_grad()
        model(torch.randn(8, 4)).sum().backward()
        opt.step()
        val = model(torch.randn(8, 4)).detach().mean()
        dist.all_reduce(val)
        {guard}
            if val.item() < best:
                best, stale = val.item(), 0
            else:
                stale += 1
        if stale > patience:
            break
        dist.barrier()

main(dist.get_rank())
"""


def test_a_tensor_counter_stepped_on_rank_zero_alone_decides_the_break(tmp_path):
    found, _ = lint(tmp_path, TENSOR_COUNTER.format(guard="if rank == 0:"))
    assert [(f.code, f.severity.value) for f in found if f.code == "DDP809"] == [("DDP809", "error")]


def test_stepped_on_every_rank_it_is_the_same_everywhere(tmp_path):
    found, _ = lint(tmp_path, TENSOR_COUNTER.format(guard="if True:"))
    assert [f.code for f in found if f.code == "DDP809"] == []


REDUCED_FLAG = """
model = DDP(torch.nn.Linear(4, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for epoch in range(100):
    opt.zero_grad()
    model(torch.randn(8, 4)).sum().backward()
    opt.step()
    stop = torch.tensor(0)
    if dist.get_rank() == 0:
        stop = torch.tensor(1 if epoch > 10 else 0)
    {share}
    if stop.item():
        break
"""


def test_a_flag_reduced_to_rank_zero_is_still_each_ranks_own(tmp_path):
    found, _ = lint(tmp_path, REDUCED_FLAG.format(share="dist.reduce(stop, dst=0)"))
    assert [f.code for f in found if f.code == "DDP809"] == ["DDP809"]


def test_a_flag_broadcast_from_rank_zero_is_the_same_everywhere(tmp_path):
    found, _ = lint(tmp_path, REDUCED_FLAG.format(share="dist.broadcast(stop, src=0)"))
    assert [f.code for f in found if f.code == "DDP809"] == []


TWO_LOADERS = """
def make_loaders(n):
    tr, va = TensorDataset(torch.randn(n, 4)), TensorDataset(torch.randn(n // 4, 4))
    return (DataLoader(tr, batch_size=8, sampler=DistributedSampler(tr)),
            DataLoader(va, batch_size=8, sampler=DistributedSampler(va)))

model = DDP(torch.nn.Linear(4, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.1)
train_q, valid_q = make_loaders(64)
step = 0
for epoch in range(3):
    train_q.sampler.set_epoch({train_epoch})
    valid_q.sampler.set_epoch(0)
    for (x,) in train_q:
        opt.zero_grad()
        model(x).sum().backward()
        opt.step()
        step += 1
"""


def test_a_constant_set_epoch_on_the_other_loader_is_that_loaders(tmp_path):
    found, _ = lint(tmp_path, TWO_LOADERS.format(train_epoch="step"))
    assert [f.code for f in found if f.code == "DDP804"] == []


def test_constant_on_both_the_training_order_repeats(tmp_path):
    found, _ = lint(tmp_path, TWO_LOADERS.format(train_epoch="0"))
    assert "DDP804" in [f.code for f in found]
