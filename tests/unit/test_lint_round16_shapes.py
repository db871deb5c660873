"""Shapes from session 17's sixteenth blind round, each with its twin, written in our own words."""

from __future__ import annotations

from tests.unit.test_lint_real_patterns import codes, lint

ENDLESS_SAMPLED = """
def load_data(ds):
    sampler = DistributedSampler(ds)
    loader = DataLoader(ds, batch_size=8, sampler=sampler)
{reads}

model = DDP(torch.nn.Linear(4, 1))
batches = load_data(TensorDataset(torch.randn(64, 4)))
for step in range(1000):
    (x,) = next(batches)
    model(x).sum().backward()
"""


def test_a_sampled_loader_an_endless_generator_reads_again_and_again_needs_set_epoch(tmp_path):
    # DiffuSeq, StyleSwin: `while True: yield from data_loader`, read with next() by the step loop
    found, _ = lint(tmp_path, ENDLESS_SAMPLED.format(reads="    while True:\n        yield from loader"))
    assert ("DDP804", "warning", 8) in codes(found)


def test_a_generator_that_reads_its_loader_once_needs_none(tmp_path):
    found, _ = lint(tmp_path, ENDLESS_SAMPLED.format(reads="    yield from loader"))
    assert [f for f in found if f.code == "DDP804"] == []


FACTORY = """
class Inner(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("position_ids", torch.arange(8))
        self.proj = torch.nn.Linear(4, 1)
    def forward(self, x):
        return self.proj(x)

class Plain(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = torch.nn.Linear(4, 1)
    def forward(self, x):
        return self.proj(x)

def make_backbone():
    return {made}()

class Reward(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.backbone = make_backbone()
    def forward(self, x):
        return self.backbone(x)

model = DDP(Reward())
model(torch.randn(2, 4)).sum().backward()
if dist.get_rank() == 0:
    with torch.no_grad():
        model(torch.randn(2, 4))
"""


def test_buffers_a_factory_builds_inside_the_wrapped_module_are_broadcast_by_its_forward(tmp_path):
    # ImageReward: `self.blip = blip_pretrain(...)` returns a BERT-style module with position_ids
    found, _ = lint(tmp_path, FACTORY.format(made="Inner"))
    assert ("DDP801", "warning", 36) in codes(found)


def test_a_factory_building_a_module_without_buffers_broadcasts_nothing(tmp_path):
    found, _ = lint(tmp_path, FACTORY.format(made="Plain"))
    assert [f for f in found if f.code == "DDP801"] == []


RETURNED = """
def make_loader(ds):
    loader = DataLoader(ds, batch_size=8, {order})
    return loader

loader = make_loader(TensorDataset(torch.randn(64, 4)))
model = DDP(torch.nn.Linear(4, 1))
for (x,) in loader:
    model(x).sum().backward()
"""


def test_a_loader_a_builder_binds_then_returns_is_the_one_its_caller_trains_on(tmp_path):
    # IRRA's build_dataloader: `train_loader = DataLoader(..., shuffle=True); return train_loader`
    found, _ = lint(tmp_path, RETURNED.format(order="shuffle=True"))
    assert ("DDP802", "error", 8) in codes(found)


def test_the_returned_loader_with_a_distributed_sampler_is_healthy(tmp_path):
    found, _ = lint(tmp_path, RETURNED.format(order="sampler=DistributedSampler(ds)"))
    assert [f for f in found if f.code == "DDP802"] == []


BARE_COMPARE = """
ds = TensorDataset(torch.randn(64, 8), torch.randn(64, 1))
sampler = DistributedSampler(ds)
loader = DataLoader(ds, sampler=sampler)
net = DDP(torch.nn.Linear(8, 1))
opt = torch.optim.SGD(net.parameters(), lr=0.1)
for epoch in range(3):
    sampler.set_epoch(epoch)
    for x, y in loader:
        loss = ((net(x) - y) ** 2).mean()
        if {test}:
            loss.backward()
            opt.step()
"""


def test_a_backward_under_a_plain_comparison_of_the_ranks_loss_is_a_rank_local_skip(tmp_path):
    # ClearerVoice: `if loss_bw < 999999: loss_bw.backward()` (False on NaN, on that rank only)
    found, _ = lint(tmp_path, BARE_COMPARE.format(test="loss < 1e6"))
    assert ("DDP809", "warning", 16) in codes(found)


def test_a_backward_under_a_test_of_the_loss_graph_is_no_skip(tmp_path):
    # guided-diffusion: `if loss.requires_grad:` is the same on every rank
    found, _ = lint(tmp_path, BARE_COMPARE.format(test="loss.requires_grad"))
    assert [f for f in found if f.code == "DDP809"] == []


PINNED = """
def setup(args):
    if args.local_rank == -1:
        args.n_gpu = torch.cuda.device_count()
    else:
        dist.init_process_group("gloo")
        args.n_gpu = {pinned}

class Args:
    local_rank = int(os.environ.get("LOCAL_RANK", -1))

args = Args()
setup(args)
model = torch.nn.Linear(4, 4)
if args.n_gpu > 1:
    torch.save(model.state_dict(), "a.pt")
else:
    torch.save(model.state_dict(), "b.pt")
"""


def test_a_side_the_set_up_pins_false_never_saves_in_a_distributed_job(tmp_path):
    # OpenMatch: `args.n_gpu = 1` beside init_process_group, then `if args.n_gpu > 1: torch.save(...)`
    found, _ = lint(tmp_path, PINNED.format(pinned="1"))
    assert [f.location.line for f in found if f.code == "DDP806"] == [23]


def test_a_count_the_set_up_leaves_open_saves_on_both_sides(tmp_path):
    found, _ = lint(tmp_path, PINNED.format(pinned="torch.cuda.device_count()"))
    assert [f.location.line for f in found if f.code == "DDP806"] == [21, 23]


PICKED_BUILDER = """
def build_dist_loaders(path):
    torch.save(list(range(10)), path + ".cache")
    return [torch.randn(8, 4)]

def build_dataloaders(path):
    return [torch.randn(8, 4)]

path = os.environ.get("DATA", "data.json")
loader_class = {choice}
loader = loader_class(path)
"""


def test_a_builder_picked_by_a_conditional_expression_runs_either_function(tmp_path):
    # CDial-GPT: `loader_class = build_dist_loaders if not args.data_path else build_dataloaders`
    found, _ = lint(tmp_path, PICKED_BUILDER.format(choice="build_dist_loaders if not path else build_dataloaders"))
    assert ("DDP806", "warning", 8) in codes(found)


def test_a_builder_picked_between_a_local_function_and_a_library_one_is_not_followed(tmp_path):
    found, _ = lint(tmp_path, PICKED_BUILDER.format(choice="build_dist_loaders if not path else print"))
    assert [f for f in found if f.code == "DDP806"] == []
