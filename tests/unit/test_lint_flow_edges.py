"""Values through the less common doors: a keyword-only parameter (`Checkpointer(..., *,
save_to_disk=True)` built with `save_to_disk=is_main_process()`, then `if not self.save_to_disk:
return` before the save: fast-reid) carries the rank test its callers pass; and a sampler kept in
a dict of loaders gets its set_epoch through the dict (`loaders["train_sampler"].set_epoch(epoch)`:
3DETR)."""

from __future__ import annotations

from tests.unit.test_lint_real_patterns import lint

CHECKPOINTER = """
def is_main_process():
    return dist.get_rank() == 0

class Checkpointer:
    def __init__(self, model, save_dir, *, save_to_disk=True):
        self.model, self.save_dir, self.save_to_disk = model, save_dir, save_to_disk

    def save(self, name):
        if not self.save_dir or not self.save_to_disk:
            return
        torch.save(self.model.state_dict(), f"{self.save_dir}/{name}.pth")

model = DDP(torch.nn.Linear(4, 1))
ckpt = Checkpointer(model.module, "out", save_to_disk=WHO)
for epoch in range(3):
    ckpt.save(f"model_{epoch}")
"""


def test_a_keyword_only_parameter_carries_the_callers_rank_test(tmp_path):
    found, _ = lint(tmp_path, CHECKPOINTER.replace("WHO", "is_main_process()"))
    assert [f.code for f in found if f.code == "DDP806"] == []


def test_given_true_on_every_rank_every_rank_saves(tmp_path):
    found, _ = lint(tmp_path, CHECKPOINTER.replace("WHO", "True"))
    assert [f.code for f in found if f.code == "DDP806"] == ["DDP806"]


LOADERS = """
def fit(model, opt, loaders, epochs):
    for epoch in range(epochs):
        {set_epoch}
        for (x,) in loaders["train"]:
            opt.zero_grad()
            model(x).sum().backward()
            opt.step()

model = DDP(torch.nn.Linear(4, 1))
datasets = {{"train": TensorDataset(torch.randn(64, 4)), "test": TensorDataset(torch.randn(16, 4))}}
loaders = {{}}
for split in ["train", "test"]:
    sampler = DistributedSampler(datasets[split], shuffle=(split == "train"))
    loaders[split] = DataLoader(datasets[split], sampler=sampler, batch_size=8)
    loaders[split + "_sampler"] = sampler
fit(model, torch.optim.SGD(model.parameters(), lr=0.1), loaders, 3)
"""


def test_set_epoch_through_a_dict_of_loaders_counts(tmp_path):
    found, _ = lint(tmp_path, LOADERS.format(set_epoch='loaders["train_sampler"].set_epoch(epoch)'))
    assert [f.code for f in found if f.code == "DDP804"] == []


def test_without_it_the_order_repeats(tmp_path):
    found, _ = lint(tmp_path, LOADERS.format(set_epoch="pass"))
    assert [f.code for f in found if f.code == "DDP804"] == ["DDP804"]


PER_NODE_LITERAL = """
NNODES = int(os.environ.get("NNODES", 1))  # a job on several nodes
def save_checkpoint(model, logdir, name):
    torch.save({"model": model.state_dict()}, f"{logdir}/checkpoint_{name}.pth.tar")

model = torch.nn.Linear(2, 2)
for step in range(10):
    if dist.get_rank() % MOD == 0:
        save_checkpoint(model, "logs", "latest")
"""


def test_a_literal_gpu_count_in_the_modulus_makes_one_writer_per_node(tmp_path):
    found, _ = lint(tmp_path, PER_NODE_LITERAL.replace("MOD", "8"))
    assert [(f.code, f.evidence.get("per_node")) for f in found if f.code == "DDP806"] == [("DDP806", True)]


def test_the_world_size_in_the_modulus_is_rank_zero_of_the_job(tmp_path):
    found, _ = lint(tmp_path, PER_NODE_LITERAL.replace("MOD", "dist.get_world_size()"))
    assert [f.code for f in found if f.code == "DDP806"] == []


def test_a_modulus_larger_than_a_node_samples_the_ranks_as_before(tmp_path):
    found, _ = lint(tmp_path, PER_NODE_LITERAL.replace("MOD", "128"))
    assert [f.evidence.get("per_node") for f in found if f.code == "DDP806"] == []


FLAG_BY_BRANCHES = """
def init_dist(opt):
    opt.rank = dist.get_rank()
    if opt.rank == 0:
        opt.log = True
    else:
        opt.log = OTHERS

def main(opt):
    init_dist(opt)
    model = DDP(torch.nn.Linear(4, 1))
    if opt.log:
        torch.save(model.module.state_dict(), "model.pth")

main(argparse.Namespace())
"""


def test_a_flag_set_true_only_on_rank_zeros_side_is_that_rank_test(tmp_path):
    found, _ = lint(tmp_path, "import argparse\n" + FLAG_BY_BRANCHES.replace("OTHERS", "False"))
    assert [f.code for f in found if f.code == "DDP806"] == []


def test_set_true_on_both_sides_every_rank_saves(tmp_path):
    found, _ = lint(tmp_path, "import argparse\n" + FLAG_BY_BRANCHES.replace("OTHERS", "True"))
    assert [f.code for f in found if f.code == "DDP806"] == ["DDP806"]


def test_a_module_that_starts_with_a_byte_order_mark_is_read(tmp_path):
    (tmp_path / "saver.py").write_bytes(
        "\ufeffimport torch\n\n\ndef save(model):\n    torch.save(model.state_dict(), 'ckpt.pt')\n".encode("utf-8"))
    found, facts = lint(tmp_path, "from saver import save\n\nsave(DDP(torch.nn.Linear(2, 2)).module)\n")
    assert not any("not valid Python" in note for note in facts.notes)
    assert [f.code for f in found if f.code == "DDP806"] == ["DDP806"]
