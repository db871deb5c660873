"""Shapes from session 18's eighteenth blind round, each with its twin, written in our own words."""

from __future__ import annotations

from tests.unit.test_lint_real_patterns import codes, lint
from tests.unit.test_lint_round17_shapes import lint_plain

FLAGGED_DATASET = """
class Questions(torch.utils.data.Dataset):
    def __init__(self, n, verbose=True):
        self.items = list(range(n)){slice}
        if verbose:
            print("loaded", len(self.items))
    def __len__(self):
        return len(self.items)
    def __getitem__(self, i):
        return torch.tensor([float(self.items[i])])

model = DDP(torch.nn.Linear(1, 1))
rank = dist.get_rank()
verbose = (rank == 0)
ds = Questions(1000, {arg})
loader = DataLoader(ds, batch_size=8, sampler=DistributedSampler(ds))
for epoch in range(3):
    loader.sampler.set_epoch(epoch)
    for x in loader:
        model(x).sum().backward()
"""


def test_a_flag_made_of_a_rank_comparison_shards_nothing(tmp_path):
    # VL-T5's `verbose = local_rank == 0`, VL-BERT's `cache_db = rank == 0` handed to the dataset
    found, _ = lint(tmp_path, FLAGGED_DATASET.format(slice="", arg="verbose"))
    assert [f for f in found if f.code == "DDP803"] == []


def test_the_rank_as_a_number_picking_items_is_a_shard(tmp_path):
    source = FLAGGED_DATASET.format(slice="[rank::2]", arg="verbose").replace(
        "def __init__(self, n, verbose=True):", "def __init__(self, n, verbose=True, rank=0):").replace(
        "Questions(1000, verbose)", "Questions(1000, verbose, rank)")
    found, _ = lint(tmp_path, source)
    assert ("DDP803", "warning", 21) in codes(found)


TURNED_OFF_FLAG = """
import argparse, torch, torch.distributed as dist

class Base:
    def __init__(self, args):
        self.args, self.verbose = args, True
        if self.args.distributed:
            if {test}:
                self.verbose = False
    def save(self, name):
        torch.save(self.model.state_dict(), f"out/{{name}}.pth")

class Trainer(Base):
    def __init__(self, args):
        super().__init__(args)
        self.model = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(1, 1))
    def train(self):
        for epoch in range(3):
            self.model(torch.ones(4, 1)).sum().backward()
            if self.verbose:
                self.save("LAST")

def main_worker(gpu, args):
    args.gpu = gpu
    dist.init_process_group("gloo")
    Trainer(args).train()

if __name__ == "__main__":
    p = argparse.ArgumentParser()
    p.add_argument("--local_rank", type=int, default=-1)
    p.add_argument("--distributed", action="store_true")
    p.add_argument("--nnodes", type=int, default=1)  # a job on several nodes
    args = p.parse_args()
    main_worker(args.local_rank, args)
"""


def test_a_flag_the_other_local_ranks_turn_off_is_a_per_node_rank_test(tmp_path):
    # VL-T5: `self.verbose = True`, then `if self.args.gpu != 0: self.verbose = False`
    found = lint_plain(tmp_path, TURNED_OFF_FLAG.format(test="self.args.gpu != 0"))
    saves = [f for f in found if f.code == "DDP806"]
    assert len(saves) == 1 and "one rank per node" in saves[0].message


def test_a_flag_a_plain_option_turns_off_leaves_every_rank_writing(tmp_path):
    found = lint_plain(tmp_path, TURNED_OFF_FLAG.format(test="self.args.quiet"))
    saves = [f for f in found if f.code == "DDP806"]
    assert len(saves) == 1 and "called without a rank test" in saves[0].message


CONFIGURED_MODULE = """
import importlib, os, torch.distributed as dist

def main():
    dist.init_process_group("gloo")
    trainer = importlib.import_module({name}).Trainer({{}})
    trainer.train()

if __name__ == "__main__":
    main()
"""


def test_a_trainer_from_a_module_the_config_names_leaves_the_verdict_incomplete(tmp_path):
    # Neuralangelo: `importlib.import_module(cfg.trainer.type).Trainer(cfg)`
    from ddpdoctor.lint.driver import gather, unreached
    path = tmp_path / "train.py"
    path.write_text(CONFIGURED_MODULE.format(name='os.environ["TRAINER"]'))
    notes, missing = unreached(gather(str(path)))
    assert missing and "runs what its config names" in missing[0]


def test_a_module_named_in_the_source_is_read_as_any_import(tmp_path):
    from ddpdoctor.lint.driver import gather, unreached
    (tmp_path / "mytrainer.py").write_text("class Trainer:\n    def __init__(self, cfg):\n        pass\n"
                                           "    def train(self):\n        pass\n")
    path = tmp_path / "train.py"
    path.write_text(CONFIGURED_MODULE.format(name='"mytrainer"'))
    assert unreached(gather(str(path))) == ([], [])


MONAI_LOADER = """
from monai.data import DataLoader as MonaiLoader
torch.manual_seed(317)

class Volumes(torch.utils.data.Dataset):
    def __len__(self):
        return 100
    def __getitem__(self, i):
        return torch.rand(1, 8, 8, 8)

model = DDP(torch.nn.Conv3d(1, 1, 3))
ds = Volumes()
sampler = DistributedSampler(ds)
loader = {loader}(ds, batch_size=2, sampler=sampler, num_workers=4)
for epoch in range(10):
    sampler.set_epoch(epoch)
    for b in loader:
        model(b).mean().backward()
"""


def test_monais_dataloader_seeds_workers_without_the_rank(tmp_path):
    # SuPreM: `set_seed(317)` on every rank, MONAI's DataLoader over random transforms
    found, _ = lint(tmp_path, MONAI_LOADER.format(loader="MonaiLoader"))
    assert ("DDP808", "warning", 19) in codes(found)


def test_a_loader_of_an_unknown_library_is_not_judged_as_torchs(tmp_path):
    found, _ = lint(tmp_path, MONAI_LOADER.format(loader="OtherLoader").replace(
        "from monai.data import DataLoader as MonaiLoader", "from otherlib import OtherLoader"))
    assert [f for f in found if f.code == "DDP808"] == []


SAME_LOCAL_NAME = """
import numpy as np
torch.manual_seed(0)

class Answers(torch.utils.data.Dataset):
    def __len__(self):
        return 1000
    def __getitem__(self, i):
        return torch.tensor([float(np.random.rand())])

def get_loader(mode):
    ds = Answers()
    loader = DataLoader(ds, batch_size=8, num_workers=4, sampler=DistributedSampler(ds, shuffle=mode == "train"))
    return loader

class Trainer:
    def __init__(self, model, train_loader, val_loader):
        self.model, self.train_loader, self.val_loader = model, train_loader, val_loader
    def train(self):
        for epoch in range(3):
            self.train_loader.sampler.set_epoch(epoch)
            for x in self.train_loader:
                self.model(x).sum().backward()
            self.predict(self.val_loader)
    def predict(self, {param}):
        with torch.no_grad():
            for x in {param}:
                self.model.module(x)

Trainer(DDP(torch.nn.Linear(1, 1)), get_loader("train"), get_loader("val")).train()
"""


def test_a_builders_local_name_is_not_the_evaluation_helpers_parameter(tmp_path):
    # VL-T5: `loader = DataLoader(...)`, `return loader`; `def predict(self, loader)` evaluates
    found, _ = lint(tmp_path, SAME_LOCAL_NAME.format(param="loader"))
    assert ("DDP808", "warning", 18) in codes(found)
    found, _ = lint(tmp_path, SAME_LOCAL_NAME.format(param="dl"))
    assert ("DDP808", "warning", 18) in codes(found)


UNCALLED_METHOD = """
class Exporter:
    def __init__(self, model, out):
        self.model, self.out = model, out
    def export(self):
        self.export_pytorch()
    def export_pytorch(self):
        torch.save(self.model.state_dict(), os.path.join(self.out, "model.pth"))

def save_training(model, out):
    Exporter(model, out).{call}()

model = DDP(torch.nn.Linear(4, 4))
for epoch in range(3):
    model(torch.randn(2, 4)).sum().backward()
    if dist.get_rank() == 0:
        save_training(model, "ckpt")
"""


def test_a_method_nothing_calls_is_no_way_in_to_a_rank_zero_save(tmp_path):
    # sparseml: the exporter's `export()` is never called; `export_pytorch()` only under rank 0
    found, _ = lint(tmp_path, UNCALLED_METHOD.format(call="export_pytorch"))
    assert [f for f in found if f.code == "DDP806"] == []


def test_the_same_save_reached_from_every_rank_is_reported(tmp_path):
    source = UNCALLED_METHOD.format(call="export_pytorch").replace(
        "    if dist.get_rank() == 0:\n        save_training", "    Exporter(model, 'x').export()\n    if True:\n        save_training")
    found, _ = lint(tmp_path, source)
    assert ("DDP806", "warning", 13) in codes(found)


OWN_SHARD_STOP = """
data = TensorDataset(torch.randn(256, 4), torch.randn(256, 1))
train = DataLoader(data, batch_size=8, sampler=DistributedSampler(data))
val = DataLoader(data, batch_size=8, sampler=DistributedSampler(data, shuffle=False))
model = DDP(torch.nn.Linear(4, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.1)
best, wait = float("inf"), 0
for epoch in range(100):
    train.sampler.set_epoch(epoch)
    for x, y in train:
        opt.zero_grad(); (model(x) - y).pow(2).mean().backward(); opt.step()
    total = 0.0
    with torch.no_grad():
        for x, y in val:
            total += (model.module(x) - y).pow(2).mean().item()
{share}
    val_loss = total / len(val)
    if val_loss < best:
        best, wait = val_loss, 0
    else:
        wait += 1
    if wait >= 3:
        break
"""


def test_an_early_stop_on_each_ranks_own_validation_shard_is_a_warning(tmp_path):
    # ppln: the validation loss of this rank's shard, never all-reduced, steers the stop
    found, _ = lint(tmp_path, OWN_SHARD_STOP.format(share=""))
    assert ("DDP809", "warning", 27) in codes(found)


def test_the_same_stop_on_an_all_reduced_loss_is_alike_everywhere(tmp_path):
    share = "    total = torch.tensor(total); dist.all_reduce(total); total = total.item() / dist.get_world_size()"
    found, _ = lint(tmp_path, OWN_SHARD_STOP.format(share=share))
    assert [f for f in found if f.code == "DDP809"] == []


HELD_MODULE = """
def forward_fn(x, module):
    return module(x)

class Tester:
    def __init__(self, module):
        self._module = module
    def run_epoch(self, data):
        with torch.no_grad():
            for x in data:
                forward_fn(x, self._module)

model = DDP(torch.nn.BatchNorm1d(4))
tester = Tester({held})
for epoch in range(3):
    model(torch.randn(2, 4)).sum().backward()
    if dist.get_rank() == 0:
        tester.run_epoch([torch.randn(2, 4)])
"""


def test_a_ddp_model_a_tester_keeps_and_hands_a_helper_is_a_one_sided_forward(tmp_path):
    # sparseml: ModuleTester keeps the DDP model as `self._module`, rank 0 alone runs it
    found, _ = lint(tmp_path, HELD_MODULE.format(held="model"))
    assert ("DDP801", "warning", 8) in codes(found)


def test_the_tester_handed_the_plain_module_runs_no_collective(tmp_path):
    found, _ = lint(tmp_path, HELD_MODULE.format(held="model.module"))
    assert [f for f in found if f.code == "DDP801"] == []


HELD_BACKWARD = """
def backward_fn(loss):
    loss.backward()

class Runner:
    def __init__(self, module, optim, accum):
        self._module, self._optim, self._n, self._acc = module, optim, accum, 0
        self._backward = backward_fn
    def _batch(self, x):
        loss = self._module(x).sum() / self._n
        self._backward(loss)
        self._acc += 1
        if self._acc == self._n:
            self._optim.step()
            self._optim.zero_grad()
            self._acc = 0
    def run(self, data):
        for x in data:
            {call}

model = DDP(torch.nn.Linear(4, 4))
runner = Runner(model, torch.optim.SGD(model.parameters(), lr=0.1), accum=4)
for epoch in range(3):
    runner.run([torch.randn(2, 4) for _ in range(8)])
"""


def test_a_backward_through_a_function_an_attribute_holds_is_a_backward(tmp_path):
    # sparseml: `self._backward = ...` in the constructor, called per batch, stepping every n
    found, _ = lint(tmp_path, HELD_BACKWARD.format(call="self._batch(x)"))
    assert ("DDP805", "warning", 24) in codes(found)


def test_the_runner_that_steps_every_batch_accumulates_nothing(tmp_path):
    source = HELD_BACKWARD.format(call="self._batch(x)").replace("if self._acc == self._n:", "if True:")
    found, _ = lint(tmp_path, source)
    assert [f for f in found if f.code == "DDP805"] == []


SWITCHED_RANK = """
import argparse, os, torch, torch.distributed as dist
ap = argparse.ArgumentParser(); ap.add_argument("--local_rank", type=int, default=0)
ap.add_argument("--nnodes", type=int, default=1)  # a job on several nodes
args = ap.parse_args()
distributed = int(os.environ.get("WORLD_SIZE", "1")) > 1
if distributed:
    dist.init_process_group("gloo")
net = torch.nn.Linear(4, 2)
who = {who}
if who == 0:
    torch.save(net.state_dict(), "weights.pt")
"""


def test_the_global_rank_a_distributed_switch_picks_has_one_writer(tmp_path):
    # MLPerf SSD: `dist.get_rank() if args.distributed else args.local_rank`
    found = lint_plain(tmp_path, SWITCHED_RANK.format(who="dist.get_rank() if distributed else args.local_rank"))
    assert [f for f in found if f.code == "DDP806"] == []


def test_the_local_rank_the_switch_picks_in_a_distributed_run_is_per_node(tmp_path):
    found = lint_plain(tmp_path, SWITCHED_RANK.format(who="args.local_rank if distributed else 0"))
    saves = [f for f in found if f.code == "DDP806"]
    assert len(saves) == 1 and "one rank per node" in saves[0].message


SINGLE_SIDE_STOP = """
import argparse, torch, torch.distributed as dist
p = argparse.ArgumentParser(); p.add_argument("--distributed", action="store_true"); args = p.parse_args()
if args.distributed:
    dist.init_process_group("gloo")
master = (not args.distributed) or dist.get_rank() == 0
model = torch.nn.Linear(4, 1)
if args.distributed:
    model = torch.nn.parallel.DistributedDataParallel(model)
best_epoch = 0
for epoch in range(10):
    model(torch.randn(8, 4)).sum().backward()
    if master and torch.rand(1).item() > 0.5:
        best_epoch = epoch
    if {test}:
        flag = torch.zeros(1)
        if master and epoch - best_epoch > 2:
            flag += 1
        dist.all_reduce(flag)
        if flag > 0:
            break
    else:
        if epoch - best_epoch > 2:
            break
"""


def test_an_early_stop_on_the_not_distributed_side_splits_no_ranks(tmp_path):
    # T5-CL: the shared stop under `if args.distributed:`, the plain one in its else
    found = lint_plain(tmp_path, SINGLE_SIDE_STOP.format(test="args.distributed"))
    assert [f for f in found if f.code == "DDP809"] == []


def test_the_same_plain_stop_under_a_switch_of_any_other_kind_is_reported(tmp_path):
    found = lint_plain(tmp_path, SINGLE_SIDE_STOP.format(test="epoch % 2 == 0"))
    assert ("DDP809", "warning", 22) in codes(found)


OVERRIDDEN = """
class Base:
    def __init__(self, model, loader, accum):
        self.model, self.loader, self.accum = DDP(model), loader, accum
        self.opt = torch.optim.SGD(self.model.parameters(), lr=0.1)
    def fit(self):
        for i, x in enumerate(self.loader):
            self.model(x).sum().backward()
            if i % self.accum == 0:
                self.opt.step(); self.opt.zero_grad()

class Sub(Base):
    def __init__(self, model, loader, accum):
        super().__init__(model, loader, accum)
    def fit(self):
{body}

loader = DataLoader(torch.randn(64, 4), sampler=DistributedSampler(torch.randn(64, 4)))
Sub(torch.nn.Linear(4, 1), loader, accum=8).fit()
"""


def test_a_base_loop_the_built_subclass_replaces_never_runs(tmp_path):
    # pytorch_distillation: SanhDistiller.distill replaces Distiller.distill, no super() call
    found, _ = lint(tmp_path, OVERRIDDEN.format(body="        pass"))
    assert [f for f in found if f.code == "DDP805"] == []


def test_the_base_loop_a_subclass_calls_through_super_runs(tmp_path):
    found, _ = lint(tmp_path, OVERRIDDEN.format(body="        super().fit()"))
    assert ("DDP805", "warning", 13) in codes(found)


EXCEPTION_SKIP = """
class NoValidAnchorsError(Exception):
    pass

model = DDP(torch.nn.Linear(4, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for step in range(100):
    try:
        loss = model(torch.randn(2, 4)).sum()
        loss.backward()
    except {caught}:
        continue
    opt.step(); opt.zero_grad()
"""


def test_an_exception_one_batch_raises_that_skips_the_backward_is_a_warning(tmp_path):
    # NeMo Automodel's DFlash: `except NoValidAnchorsError: continue` around forward + backward
    found, _ = lint(tmp_path, EXCEPTION_SKIP.format(caught="NoValidAnchorsError"))
    assert ("DDP809", "warning", 16) in codes(found)
    assert "leaves the pass (continue) on the rank that raises it" in \
        next(f.message for f in found if f.code == "DDP809")


def test_exceptions_every_rank_meets_alike_skip_nothing_one_sided(tmp_path):
    for caught in ("StopIteration", "Exception", "DataloaderExhaustedError"):
        source = EXCEPTION_SKIP.format(caught=caught).replace(
            "class NoValidAnchorsError", "class DataloaderExhaustedError")
        found, _ = lint(tmp_path, source)
        assert [f for f in found if f.code == "DDP809"] == [], caught


NESTED_CONTINUE = """
import contextlib
model = DDP(torch.nn.Linear(4, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for step in range(100):
    with {context}:
        loss = model(torch.randn(2, 4)).sum()
        if torch.isnan(loss).any():
            opt.zero_grad()
            continue
        loss.backward()
    opt.step(); opt.zero_grad()
"""


def test_a_nan_skip_inside_a_with_block_skips_the_backward_below_it(tmp_path):
    # flowprogen: `with model.no_sync() if ... else nullcontext():` holds the test and the backward
    found, _ = lint(tmp_path, NESTED_CONTINUE.format(context="contextlib.nullcontext()"))
    assert ("DDP809", "warning", 13) in codes(found)


def test_the_same_skip_after_the_backward_skips_nothing_collective(tmp_path):
    source = NESTED_CONTINUE.format(context="contextlib.nullcontext()").replace(
        "        if torch.isnan(loss).any():\n            opt.zero_grad()\n            continue\n        loss.backward()\n",
        "        loss.backward()\n        if torch.isnan(loss).any():\n            opt.zero_grad()\n            continue\n")
    found, _ = lint(tmp_path, source)
    assert [f for f in found if f.code == "DDP809"] == []
