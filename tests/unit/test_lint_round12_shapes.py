"""Shapes from session 16's twelfth blind round, each with its twin, written in our own words."""

from __future__ import annotations

from tests.unit.test_lint_real_patterns import codes, lint

CONVERTED = """
class Config:
    def __init__(self, name="atomwise", epochs=3):
        self.name, self.epochs = name, epochs

def load_config(path):
    return Config(epochs=int(open(path).read()))

def train(config, rank):
    if rank == 0:
        if type(config) is dict:
            config = {converted}
    model = DDP(torch.nn.Linear(4, 1))
    if "atom" in config.name:
        for e in range(config.epochs):
            model(torch.randn(8, 4)).sum().backward()

train(Config(), dist.get_rank())
"""


def test_settings_converted_to_another_class_on_rank_0_are_the_same_settings(tmp_path):
    # ALIGNN: `config = TrainingConfig(**config)` on rank 0 only
    found, _ = lint(tmp_path, CONVERTED.format(converted="Config(**config)"))
    assert [f for f in found if f.code == "DDP809"] == []


def test_settings_rank_0_loads_anew_are_its_own(tmp_path):
    found, _ = lint(tmp_path, CONVERTED.format(converted="load_config(config['path'])"))
    assert "DDP809" in [c for c, _, _ in codes(found)]


TWO_CALLERS = """
def evaluate(model, ds):
    sampler = DistributedSampler(ds)
    loader = DataLoader(ds, batch_size=8, sampler=sampler)
    with torch.no_grad():
        return [model(x) for (x,) in loader]

model = DDP(torch.nn.Linear(4, 1))
train_ds, dev_ds, test_ds = (TensorDataset(torch.randn(64, 4)) for _ in range(3))
train_sampler = DistributedSampler(train_ds)
for epoch in range(3):
    train_sampler.set_epoch(epoch)
    for (x,) in DataLoader(train_ds, batch_size=8, sampler=train_sampler):
        model(x).sum().backward()
    evaluate(model.module, dev_ds)
evaluate(model.module, test_ds)
"""


def test_an_evaluation_that_builds_its_own_loader_for_dev_and_test_needs_no_set_epoch(tmp_path):
    # BERT-NER's evaluate(args, model, prefix): called for the dev and the test set
    found, _ = lint(tmp_path, TWO_CALLERS)
    assert [f for f in found if f.code == "DDP804"] == []


def test_a_training_sampler_without_set_epoch_beside_it_is_ddp804(tmp_path):
    found, _ = lint(tmp_path, TWO_CALLERS.replace("    train_sampler.set_epoch(epoch)\n", ""))
    assert [(c, line) for c, _, line in codes(found) if c == "DDP804"] == [("DDP804", 15)]


BRANCHES = """
import sys


class Sharded(TensorDataset):
    def __init__(self, rank, world):
        super().__init__(torch.randn(64, 4)[rank::world])


model = DDP(torch.nn.Linear(4, 1))
if sys.argv[1] == "sharded":
    train_ds = Sharded(rank=dist.get_rank(), world=dist.get_world_size())
    loader = DataLoader(train_ds, sampler=torch.utils.data.RandomSampler(train_ds), batch_size=8)
else:
    train_ds = {plain}
    loader = DataLoader(train_ds, sampler=torch.utils.data.RandomSampler(train_ds), batch_size=8)
for (x,) in loader:
    model(x).sum().backward()
"""


def test_each_branchs_loader_is_judged_by_its_own_dataset(tmp_path):
    # SimXNS: a self-sharding dataset on one side of a flag, a plain one on the other
    found, _ = lint(tmp_path, BRANCHES.format(plain="TensorDataset(torch.randn(64, 4))"))
    assert [(c, s, line) for c, s, line in codes(found) if c == "DDP802"] == [("DDP802", "error", 21)]


def test_both_branches_sharded_is_no_ddp802(tmp_path):
    found, _ = lint(tmp_path, BRANCHES.format(plain="Sharded(rank=dist.get_rank(), world=2)"))
    assert [f for f in found if f.code == "DDP802"] == []


def test_a_datapipe_chain_rebuilt_in_a_loop_is_read_once_each(tmp_path):
    # `dataset = dataset.map(f)` again and again: every binding is walked once, the kind kept
    found, _ = lint(tmp_path, """
class Source(torch.utils.data.IterableDataset):
    def __iter__(self):
        yield torch.randn(4)

dataset = Source()
for step in range(3):
    dataset = dataset.map(lambda x: x)
    other = dataset.filter(lambda x: True)
    dataset = other.map(lambda x: x)
loader = DataLoader(dataset, batch_size=None)
model = DDP(torch.nn.Linear(4, 1))
for x in loader:
    model(x).sum().backward()
""")
    assert [f for f in found if f.code == "DDP802"] == []


FIELD_RANK = """
class Trainer:
    def __init__(self, model, local_rank, global_rank, ngpu):
        self.local_rank = local_rank
        dist.init_process_group("nccl", rank={handed}, world_size=ngpu)
        self.model = DDP(model)

    def save(self):
        if self.local_rank == 0:
            torch.save(self.model.module.state_dict(), "model.pt")


t = Trainer(torch.nn.Linear(4, 1), local_rank=0, global_rank=0, ngpu=2)
t.model(torch.randn(8, 4)).sum().backward()
t.save()
NNODES = int(os.environ.get("NNODES", 1))  # a job on several nodes
"""


def test_a_field_set_from_what_init_process_group_takes_as_rank_is_the_jobs_rank(tmp_path):
    # OpenTransformer's Trainer: `self.local_rank = local_rank`, `rank=local_rank`
    found, _ = lint(tmp_path, FIELD_RANK.format(handed="local_rank"))
    assert [f for f in found if f.code == "DDP806"] == []


def test_a_field_beside_another_rank_handed_to_init_is_per_node(tmp_path):
    found, _ = lint(tmp_path, FIELD_RANK.format(handed="global_rank"))
    assert [(c, s) for c, s, _ in codes(found) if c == "DDP806"] == [("DDP806", "warning")]


WRAPPED_INSIDE = """
class Trainer:
    def __init__(self, model, teacher, optimizer, accum_steps):
        self.model, self.teacher = model, teacher
        self.optimizer, self.accum_steps, self.step = optimizer, accum_steps, 1

    def setup(self):
        self.{wrapped} = DDP(self.{wrapped})

    def train(self, loader, sampler, epochs):
        for epoch in range(epochs):
            sampler.set_epoch(epoch)
            for (x,) in loader:
                (self.model(x).sum() + self.teacher(x).sum() / self.accum_steps).backward()
                if self.step % self.accum_steps == 0:
                    self.optimizer.step()
                    self.optimizer.zero_grad()
                self.step += 1


ds = TensorDataset(torch.randn(64, 4))
sampler = DistributedSampler(ds)
net, teacher = torch.nn.Linear(4, 1), torch.nn.Linear(4, 1)
trainer = Trainer(net, teacher, torch.optim.SGD(net.parameters(), lr=0.1), 4)
trainer.setup()
trainer.train(DataLoader(ds, sampler=sampler, batch_size=8), sampler, 3)
"""


def test_a_model_a_trainer_wraps_after_its_optimizer_was_built_accumulates_through_ddp(tmp_path):
    # OpenTransformer: the optimizer over the plain module, the Trainer wraps that module later
    found, _ = lint(tmp_path, WRAPPED_INSIDE.format(wrapped="model"))
    assert [c for c, _, _ in codes(found) if c == "DDP805"] == ["DDP805"]


def test_the_optimizer_over_a_model_the_trainer_leaves_plain_skips_no_sync(tmp_path):
    found, _ = lint(tmp_path, WRAPPED_INSIDE.format(wrapped="teacher"))
    assert [f for f in found if f.code == "DDP805"] == []
