"""Options kept under dotted names and read with getattr (`getattr(opts, "ddp.rank", 0)`, the
CVNets style) are read as the field they name: a rank there makes `is_master(opts)` a rank test.
An AMP scaler's step handed the optimizer by keyword (`scaler.step(optimizer=opt)`) is a step.
And a call through a name imported under another name in a helper module (`ops.save_as`, where
ops says `from .store import save as save_as`) is bound to that function: what it passes decides
the callee's test."""

from __future__ import annotations

from tests.unit.test_lint_real_patterns import lint

OPTIONS = """
def is_master(opts):
    node_rank = getattr(opts, "ddp.rank", 0)
    return node_rank == 0

def save_checkpoint(model, path):
    torch.save(model.state_dict(), path)

def main(opts):
    dist.init_process_group("gloo")
    setattr(opts, "ddp.rank", dist.get_rank())
    model = torch.nn.Linear(2, 2)
    {guard}
        save_checkpoint(model, "ckpt.pt")
    {sync}

main(argparse.Namespace())
"""


def test_a_save_under_a_dotted_rank_option_is_one_writer(tmp_path):
    found, _ = lint(tmp_path, OPTIONS.format(guard="if is_master(opts):", sync=""))
    assert [f.code for f in found if f.code == "DDP806"] == []


def test_without_the_test_every_rank_writes(tmp_path):
    found, _ = lint(tmp_path, OPTIONS.format(guard="if True:", sync=""))
    assert [f.code for f in found if f.code == "DDP806"] == ["DDP806"]


def test_a_barrier_under_the_dotted_rank_option_runs_on_one_rank(tmp_path):
    found, _ = lint(tmp_path, OPTIONS.format(guard="if is_master(opts):", sync="").replace(
        'save_checkpoint(model, "ckpt.pt")', "dist.barrier()"))
    assert [(f.code, f.severity.value) for f in found if f.code == "DDP801"] == [("DDP801", "error")]


def test_an_option_that_only_ends_in_rank_is_not_the_rank(tmp_path):
    source = OPTIONS.format(guard="if is_master(opts):", sync="").replace('"ddp.rank", 0', '"model.lora_rank", 0')
    found, _ = lint(tmp_path, source)
    assert [f.code for f in found if f.code == "DDP806"] == ["DDP806"]


TRAINER = """
class Trainer:
    def __init__(self, model, loader, optimizer, scaler, accum_freq):
        self.model = model
        self.loader = loader
        self.optimizer = optimizer
        self.gradient_scaler = scaler
        self.accum_freq = accum_freq

    def train_epoch(self, epoch):
        accum_freq = self.accum_freq if epoch >= 1 else 1
        for batch_id, batch in enumerate(self.loader):
            loss = self.model(batch).sum()
            self.gradient_scaler.scale(loss).backward()
            {test}
                self.gradient_scaler.step(optimizer=self.optimizer)
                self.gradient_scaler.update()
                self.optimizer.zero_grad()

def main():
    dist.init_process_group("gloo")
    model = DDP(torch.nn.Linear(4, 4))
    ds = torch.utils.data.TensorDataset(torch.randn(64, 4))
    loader = torch.utils.data.DataLoader(ds, sampler=torch.utils.data.DistributedSampler(ds))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    Trainer(model, loader, opt, torch.cuda.amp.GradScaler(), 4).train_epoch(0)

main()
"""


def test_a_scaler_step_given_the_optimizer_by_keyword_accumulates(tmp_path):
    found, _ = lint(tmp_path, TRAINER.format(test="if (batch_id + 1) % accum_freq == 0:"))
    backward = (tmp_path / "train.py").read_text().splitlines().index(
        "            self.gradient_scaler.scale(loss).backward()") + 1
    assert [(f.code, f.location.line) for f in found if f.code == "DDP805"] == [("DDP805", backward)]


def test_a_step_every_batch_is_no_accumulation(tmp_path):
    found, _ = lint(tmp_path, TRAINER.format(test="if True:"))
    assert [f.code for f in found if f.code == "DDP805"] == []


ALIASED = """
import ops

def main():
    dist.init_process_group("gloo")
    model = torch.nn.Linear(2, 2)
    ops.save_as(model, {who})

main()
"""


def test_a_call_through_an_imported_alias_binds_its_arguments(tmp_path):
    modules = {"ops": "from store import save as save_as\n",
               "store": "import torch\n\ndef save(model, who):\n    if who == 0:\n"
                        "        torch.save(model.state_dict(), 'ckpt.pt')\n"}
    found, _ = lint(tmp_path, ALIASED.format(who="dist.get_rank()"), **modules)
    assert [f.code for f in found if f.code == "DDP806"] == []
    found, _ = lint(tmp_path, ALIASED.format(who="0"), **modules)  # every rank passes 0: every rank saves
    assert [f.code for f in found if f.code == "DDP806"] == ["DDP806"]
