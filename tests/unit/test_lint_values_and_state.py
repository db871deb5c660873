"""Issue 38: the lint reasons about values, helpers and rank-local state, not names. Each
pattern is written in our own words, with its healthy twin; each test fails on the code before
the change (the rule missed it, or alarmed on the twin)."""

from __future__ import annotations

from tests.unit.test_lint_real_patterns import codes, lint

BN_MODEL = """
net = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.BatchNorm1d(4))
model = DDP(net)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
"""


# ---------------------------------------------------------------------- rank tests by value
def test_a_rank_helper_with_a_not_distributed_fallback_is_a_rank_test(tmp_path):
    found, _ = lint(tmp_path, BN_MODEL + """
def is_main(n=8):
    if dist.is_initialized():
        return dist.get_rank() % n == 0
    else:
        return True
for epoch in range(2):
    model(torch.randn(2, 4)).sum().backward()
    if is_main():
        torch.save(model.state_dict(), "a.pt")       # one writer: not DDP806
    if is_main():
        model(torch.randn(2, 4))                     # one rank's DDP forward: DDP801
""")
    assert codes(found) == [("DDP801", "error", 21)]


def test_the_conditional_expression_fallback_is_a_rank_test_too(tmp_path):
    found, _ = lint(tmp_path, BN_MODEL + """
def is_dist():
    return dist.is_available() and dist.is_initialized()
def is_primary():
    return dist.get_rank() == 0 if is_dist() else True
def always():
    return True if is_dist() else True
for epoch in range(2):
    model(torch.randn(2, 4)).sum().backward()
    if is_primary():
        torch.save(model.state_dict(), "a.pt")
    if always():
        torch.save(model.state_dict(), "b.pt")       # the same answer on every rank: DDP806
""")
    assert codes(found) == [("DDP806", "warning", 22)]


def test_rank_modulo_the_world_size_is_rank_zero_and_modulo_the_gpus_one_per_node(tmp_path):
    found, _ = lint(tmp_path, BN_MODEL + """
rank, world = dist.get_rank(), dist.get_world_size()
gpus = torch.cuda.device_count()
if rank % world == 0:
    torch.save(model.state_dict(), "a.pt")
if rank % gpus == 0:
    torch.save(model.state_dict(), "b.pt")
NNODES = int(os.environ.get("NNODES", 1))  # a job on several nodes
""")
    assert codes(found) == [("DDP806", "warning", 16)]
    assert "one rank per node" in found[0].message


# ---------------------------------------------------------------------- rank-local state
EARLY_STOP = BN_MODEL + """
rank = dist.get_rank()
best, stale, patience = 1e9, 0, 3
for epoch in range(100):
    loss = model(torch.randn(2, 4)).sum()
    loss.backward()
    opt.step()
    if rank == 0:
        val = loss.item()
        if val < best:
            best, stale = val, 0
        else:
            stale += 1
"""


def test_an_early_stopping_counter_kept_by_rank_zero_and_read_by_every_rank_is_an_error(tmp_path):
    found, _ = lint(tmp_path, EARLY_STOP + """
    if stale > patience:
        break
""")
    assert codes(found) == [("DDP809", "error", 24)]
    assert "`stale` is set only under `rank == 0`" in found[0].message


def test_the_counter_broadcast_before_the_test_is_healthy(tmp_path):
    found, _ = lint(tmp_path, EARLY_STOP + """
    shared = [stale]
    dist.broadcast_object_list(shared, src=0)
    if shared[0] > patience:
        break
""")
    assert codes(found) == []


def test_a_counter_every_rank_updates_is_healthy(tmp_path):
    found, _ = lint(tmp_path, BN_MODEL + """
best, stale, patience = 1e9, 0, 3
for epoch in range(100):
    loss = model(torch.randn(2, 4)).sum()
    loss.backward()
    val = loss.detach().clone()
    dist.all_reduce(val)
    if val.item() < best:
        best, stale = val.item(), 0
    else:
        stale += 1
    if stale > patience:
        break
""")
    assert codes(found) == []


def test_a_rank_local_flag_tested_under_a_switch_is_a_warning_naming_it(tmp_path):
    found, _ = lint(tmp_path, EARLY_STOP + """
    if args_early_stop:
        if stale > patience:
            break
""")
    assert codes(found) == [("DDP809", "warning", 25)]
    assert "reached on every rank" in found[0].message


def test_skipping_the_backward_on_a_ranks_own_non_finite_loss_is_a_warning(tmp_path):
    found, _ = lint(tmp_path, BN_MODEL + """
for step in range(100):
    loss = model(torch.randn(2, 4)).sum()
    if not torch.isfinite(loss):
        continue
    loss.backward()
    opt.step()
""")
    assert codes(found) == [("DDP809", "warning", 13)]
    assert "all-reduce the flag" in found[0].hint


def test_skipping_the_step_on_the_all_reduced_gradient_norm_is_healthy(tmp_path):
    found, _ = lint(tmp_path, BN_MODEL + """
for step in range(100):
    loss = model(torch.randn(2, 4)).sum()
    loss.backward()
    norm = torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    if not torch.isfinite(norm):
        continue
    opt.step()
bad = torch.tensor(0.0)
for step in range(100):
    loss = model(torch.randn(2, 4)).sum()
    bad = (~torch.isfinite(loss)).float()
    dist.all_reduce(bad)
    if torch.isinf(bad):
        continue
    loss.backward()
""")
    assert codes(found) == []


# ---------------------------------------------------------------------- types through factories
TRAINER = """
class Trainer:
    def __init__(self, model):
        self.model = model
    @classmethod
    def from_config(cls, cfg):
        return cls(build_model())
    def fit(self):
        for epoch in range(3):
            self.model(torch.randn(2, 4)).sum().backward()
            if dist.get_rank() == 0:
                self.model(torch.randn(2, 4))
"""


def test_a_model_built_by_a_helper_and_handed_through_a_classmethod_factory_is_followed(tmp_path):
    found, _ = lint(tmp_path, """
def build_model():
    net = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.BatchNorm1d(4))
    return DDP(net)
""" + TRAINER + """
Trainer.from_config({}).fit()
""")
    assert codes(found) == [("DDP801", "error", 21)]


def test_the_same_factory_around_a_plain_module_is_healthy(tmp_path):
    found, _ = lint(tmp_path, """
def build_model():
    return torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.BatchNorm1d(4))
""" + TRAINER + """
Trainer.from_config({}).fit()
""")
    assert codes(found) == []


# ---------------------------------------------------------------------- library writes
def test_save_pretrained_on_every_rank_is_a_write_the_library_savers_are_not(tmp_path):
    found, _ = lint(tmp_path, BN_MODEL + """
from accelerate import Accelerator
accelerator = Accelerator()
rank = dist.get_rank()
model.module.save_pretrained("out")
model.module.save_pretrained("out2", is_main_process=rank == 0)
accelerator.save_state("state")
accelerator.save(model.state_dict(), "m.pt")
if rank == 0:
    model.module.save_pretrained("out3")
""")
    assert codes(found) == [("DDP806", "warning", 14)]
    assert found[0].message.startswith("model.module.save_pretrained('out')")


# ---------------------------------------------------------------------- rank 0 first
MAIN_FIRST = """
from contextlib import contextmanager
rank = dist.get_rank()
@contextmanager
def main_first():
    if rank != 0:
        dist.barrier()
    yield
    if rank == 0:
        dist.barrier()
@contextmanager
def timed():
    yield
"""


def test_a_cache_written_in_a_rank_zero_first_block_is_not_every_rank_writing(tmp_path):
    found, _ = lint(tmp_path, MAIN_FIRST + """
with main_first():
    if not os.path.exists("cache.pt"):
        torch.save(torch.randn(10), "cache.pt")
with timed():
    torch.save(torch.randn(10), "other.pt")
""")
    assert codes(found) == [("DDP806", "warning", 24)]


# ---------------------------------------------------------------------- related branches
def test_the_loader_of_the_branch_without_a_process_group_is_not_ddp802(tmp_path):
    source = """
opt = {"dist": True, "debug": False}
ds = TensorDataset(torch.randn(64, 4))
if opt["dist"]:
    dist.init_process_group("gloo")
if opt[SWITCH]:
    loader = DataLoader(ds, batch_size=8, sampler=DistributedSampler(ds))
else:
    loader = DataLoader(ds, batch_size=8, shuffle=True)
model = DDP(torch.nn.Linear(4, 1))
for epoch in range(3):
    loader.sampler.set_epoch(epoch)
    for x, in loader:
        model(x).sum().backward()
"""
    found, _ = lint(tmp_path, source.replace("SWITCH", '"dist"'))
    assert codes(found) == []
    found, _ = lint(tmp_path, source.replace("SWITCH", '"debug"'))
    assert codes(found) == [("DDP802", "error", 14)]


# ---------------------------------------------------------------------- values carried into callees
SAVERS = """
rank = dist.get_rank()
def _write(obj, path, synchronize):
    if synchronize and dist.is_initialized():
        dist.barrier()
    torch.save(obj, path)
def save_ckpt(model, path, synchronize=True):
    _write(model.state_dict(), path, synchronize=synchronize)
for epoch in range(2):
    if rank == 0:
        save_ckpt(model, "a.pt", synchronize=SYNC)
"""


def test_a_constant_passed_on_through_two_helpers_switches_the_barrier_off(tmp_path):
    found, _ = lint(tmp_path, BN_MODEL + SAVERS.replace("SYNC", "False"))
    assert codes(found) == []
    found, _ = lint(tmp_path, BN_MODEL + SAVERS.replace("SYNC", "True"))
    assert codes(found) == [("DDP801", "error", 14)]


# ---------------------------------------------------------------------- DDP807
def test_a_list_appended_in_both_branches_is_fixed_length_one_appended_in_one_is_not(tmp_path):
    found, _ = lint(tmp_path, """
outs, picked = [], []
for i in range(10):
    y = torch.randn(3)
    if i % 3 == 0:
        outs.append(y.sum())
    elif i % 3 == 1:
        outs.append(y.mean())
    else:
        outs.append(y.max())
    if y.sum() > 0:
        picked.append(y.sum())
dist.all_reduce(torch.stack(outs))
dist.all_reduce(torch.stack(picked))
""")
    assert codes(found) == [("DDP807", "warning", 19)]


def test_one_all_reduce_per_data_key_is_a_latent_desync_per_fixed_key_is_not(tmp_path):
    found, _ = lint(tmp_path, BN_MODEL + """
ds = TensorDataset(torch.randn(64, 4), torch.randint(0, 3, (64,)))
loader = DataLoader(ds, batch_size=8, sampler=DistributedSampler(ds, shuffle=False))
losses, stats = {}, {}
for x, domain in loader:
    loss = model(x).sum()
    loss.backward()
    for d in domain.tolist():
        losses.setdefault(d, []).append(loss.item())
    for name, p in model.named_parameters():
        stats[name] = p.detach().norm()
for key, vals in losses.items():
    dist.all_reduce(torch.tensor(sum(vals)))
for key, v in stats.items():
    dist.all_reduce(v)
""")
    assert codes(found) == [("DDP807", "warning", 22)]
    assert "per key of `losses`" in found[0].message


# ---------------------------------------------------------------------- DDP804 through attributes
EVAL_RUNNER = """
def make_eval_loader(ds):
    eval_sampler = DistributedSampler(ds)
    return DataLoader(ds, batch_size=8, sampler=eval_sampler)
class Runner:
    def __init__(self):
        ds = TensorDataset(torch.randn(64, 4))
        self.sampler_tr = DistributedSampler(ds)
        self.train_loader = DataLoader(ds, batch_size=8, sampler=self.sampler_tr)
        self.val_loader = make_eval_loader(ds)
        self.model = DDP(torch.nn.Linear(4, 1))
    def run(self, steps):
        for LOOP in range(steps):
            self.sampler_tr.set_epoch(LOOP)
            for x, in self.train_loader:
                self.model(x).sum().backward()
            for x, in self.val_loader:
                self.model(x)
Runner().run(10)
"""


def test_loaders_reached_through_attributes_are_judged_whatever_the_loop_variable_is_called(tmp_path):
    # The evaluation loader needs no set_epoch (no backward reads it: its order changes no
    # result, session 16's labellers and the corpus agree); the training one does, and both are
    # judged alike whether the epoch loop's variable is called `epoch` or `step`.
    for loop in ("epoch", "step"):
        found, _ = lint(tmp_path, EVAL_RUNNER.replace("LOOP", loop))
        assert codes(found) == [], loop
        found, _ = lint(tmp_path, EVAL_RUNNER.replace("LOOP", loop).replace(
            f"            self.sampler_tr.set_epoch({loop})\n", ""))
        assert codes(found) == [("DDP804", "warning", 13)], loop


# ---------------------------------------------------------------------- DDP805 per configuration
ACCUMULATE = BN_MODEL + """
import contextlib
use_fsdp = False
for step in range(100):
    for micro in range(4):
        last = micro == 3
        if TEST:
            ctx = model.no_sync()
        else:
            ctx = contextlib.nullcontext()
        with ctx:
            model(torch.randn(2, 4)).sum().backward()
    opt.step()
"""


def test_no_sync_on_the_fsdp_path_only_leaves_the_ddp_path_without_it(tmp_path):
    found, _ = lint(tmp_path, ACCUMULATE.replace("TEST", "use_fsdp and not last"))
    assert codes(found) == [("DDP805", "warning", 21)]
    assert "configuration switch" in found[0].message
    found, _ = lint(tmp_path, ACCUMULATE.replace("TEST", "not last"))
    assert codes(found) == []
    found, _ = lint(tmp_path, ACCUMULATE.replace("TEST", "dist.is_initialized() and not last"))
    assert codes(found) == []


# ---------------------------------------------------------------------- DDP802 without a DDP model
INFERENCE = """
ds = TensorDataset(torch.randn(64, 4))
loader = DataLoader(ds, batch_size=8)
model = torch.nn.Linear(4, 1)
outs = []
for x, in loader:
    y = model(x)
    COOPERATE
    outs.append(y)
if dist.get_rank() == 0:
    torch.save(outs, "preds.pt")
"""


def test_a_process_group_and_a_full_dataset_on_every_rank_without_ddp_is_a_warning(tmp_path):
    found, _ = lint(tmp_path, INFERENCE.replace("COOPERATE", "pass"))
    assert codes(found) == [("DDP802", "warning", 8)]
    assert "every rank processes the whole dataset" in found[0].message
    # ranks that cooperate on each batch (tensor parallel) are meant to see the same data
    found, _ = lint(tmp_path, INFERENCE.replace("COOPERATE", "dist.all_reduce(y)"))
    assert codes(found) == []
    found, _ = lint(tmp_path, INFERENCE.replace("COOPERATE", "pass").replace(
        "DataLoader(ds, batch_size=8)", "DataLoader(ds, batch_size=8, sampler=DistributedSampler(ds, shuffle=False))"))
    assert codes(found) == []


# ---------------------------------------------------------------------- rank-local object state
TRAINER_STOP = """
class Trainer:
    def __init__(self):
        self.model = DDP(torch.nn.Linear(4, 1))
        self.opt = torch.optim.SGD(self.model.parameters(), lr=0.1)
        self.best, self.stale, self.patience = float("inf"), 0, 3
    def validate(self, loss):
        if loss < self.best:
            self.best, self.stale = loss, 0
        else:
            self.stale += 1
    def fit(self):
        for epoch in range(100):
            loss = self.model(torch.randn(2, 4)).sum()
            loss.backward()
            self.opt.step()
            VALIDATE
            if self.stale > self.patience:
                break
Trainer().fit()
"""


def test_an_object_counter_updated_in_a_method_only_rank_zero_calls_is_an_error(tmp_path):
    found, _ = lint(tmp_path, TRAINER_STOP.replace(
        "VALIDATE", "if dist.get_rank() == 0:\n                self.validate(loss.item())"))
    assert codes(found) == [("DDP809", "error", 24)]
    assert "`self.stale` is set only under `dist.get_rank() == 0`" in found[0].message
    found, _ = lint(tmp_path, TRAINER_STOP.replace("VALIDATE", "self.validate(loss.item())"))
    assert codes(found) == []


def test_a_comparison_of_a_ranks_own_loss_item_skipping_the_backward_is_a_warning(tmp_path):
    found, _ = lint(tmp_path, BN_MODEL + """
for step in range(100):
    loss = model(torch.randn(2, 4)).sum()
    if loss.item() > 1e4:
        continue
    loss.backward()
    opt.step()
    if loss.item() < 0.01:
        continue
""")
    assert codes(found) == [("DDP809", "warning", 13)]
