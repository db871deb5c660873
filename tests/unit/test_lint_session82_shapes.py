"""Shapes from session 82 (holdout 113's leftovers, holdout 114's reading after its unread
score), each with its twin, in our own words."""

from __future__ import annotations

from tests.unit.test_lint_session39_shapes import lint_tree
from tests.unit.test_lint_session61_shapes import _codes, _line

# -------------------------------------------------- a test loader read by an attack
# One builder makes the training loader (`if train_set:`) and the test loader (`else:`), each
# with a shuffling DistributedSampler. The training loop sets the training sampler's epoch; the
# test loader is read only by a robustness evaluation that back-propagates to a perturbation
# of the inputs and reads its gradient, stepping no optimizer: its order changes no result.
# (Nothing sets an epoch: the training sampler's DDP804 stands, the test sampler's is no finding.)
ATTACKED = """import torch
import torch.distributed as dist
from torch.utils.data import DataLoader, DistributedSampler, TensorDataset


def get_loader(n, train_set=True):
    data = TensorDataset(torch.randn(n, 4), torch.randint(0, 2, (n,)))
    if train_set:
        train_sampler = DistributedSampler(data)  # the training side
        loader = DataLoader(data, sampler=train_sampler, batch_size=4)
    else:
        test_sampler = DistributedSampler(data)  # the test side
        loader = DataLoader(data, sampler=test_sampler, batch_size=4)
    return loader


def attacked_accuracy(batches, model, opt):
    right = 0
    for x, y in batches:
        delta = torch.zeros_like(x)
        delta.requires_grad = True
        loss = torch.nn.functional.cross_entropy(model(x + delta), y)
        loss.backward()
        x_adv = x + 0.1 * delta.grad.sign(){stepped}
        right += (model(x_adv).argmax(1) == y).sum().item()
    return right


def main():
    dist.init_process_group("gloo")
    model = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(4, 2))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    train_batches = get_loader(64, train_set=True)
    test_batches = get_loader(32, train_set=False)
    for epoch in range(10):
        for x, y in train_batches:
            opt.zero_grad()
            torch.nn.functional.cross_entropy(model(x), y).backward()
            opt.step()
        print(attacked_accuracy(test_batches, model, opt))


main()
"""


def test_a_loader_read_only_by_an_attack_needs_no_set_epoch(tmp_path):
    script = ATTACKED.format(stepped="")
    found = _codes(lint_tree(tmp_path, {"train.py": script}), "DDP804")
    assert [f.location.line for f in found] == [_line(script, "# the training side")]


def test_its_twin_a_loop_that_steps_trains_on_it(tmp_path):
    # adversarial training: the same loop steps the optimizer, the test loader trains
    script = ATTACKED.format(stepped="\n        opt.step()")
    found = _codes(lint_tree(tmp_path, {"train.py": script}), "DDP804")
    assert sorted(f.location.line for f in found) == \
        [_line(script, "# the training side"), _line(script, "# the test side")]


def test_an_attack_in_a_helper_of_the_evaluation_loop_trains_nothing(tmp_path):
    # the perturbation made by a helper the evaluation loop calls (a PGD step of its own)
    script = ATTACKED.format(stepped="").replace(
        """        delta = torch.zeros_like(x)
        delta.requires_grad = True
        loss = torch.nn.functional.cross_entropy(model(x + delta), y)
        loss.backward()
        x_adv = x + 0.1 * delta.grad.sign()
""", """        x_adv = x + perturb(model, x, y)
""").replace("def attacked_accuracy(", '''def perturb(model, x, y):
    delta = torch.zeros_like(x)
    delta.requires_grad = True
    torch.nn.functional.cross_entropy(model(x + delta), y).backward()
    return 0.1 * delta.grad.sign()


def attacked_accuracy(''')
    assert "perturb(model, x, y)\n" in script
    found = _codes(lint_tree(tmp_path, {"train.py": script}), "DDP804")
    assert [f.location.line for f in found] == [_line(script, "# the training side")]


# -------------------------------------------------- a prefetcher's end of data
# A CUDA-stream prefetcher of the script's own wraps the loader; when the loader runs out it
# catches the StopIteration and hands out a list of None, and the training loop stops on
# `if input is None: break`. Ranks reading equal shards meet that end at the same pass: no
# rank-local decision. The twin hands out None on a failed read instead: that rank's own.
PREFETCHED = """import torch
import torch.distributed as dist
from torch.utils.data import DataLoader, DistributedSampler, TensorDataset


class Prefetcher:
    def __init__(self, loader):
        self.loader = iter(loader)
        self.items = None
        self.preload()

    def preload(self):
        try:
            self.items = next(self.loader)
        except {caught}:
            self.items = [None for _ in self.items]

    def __iter__(self):
        return self

    def __next__(self):
        items = self.items
        self.preload()
        return items


def train(model, loader, opt):
    batches = iter(Prefetcher(loader))
    for step, data in enumerate(batches):
        inputs, labels = data
        if inputs is None:  # the decision
            break
        opt.zero_grad()
        torch.nn.functional.cross_entropy(model(inputs), labels).backward()
        opt.step()


def main():
    dist.init_process_group("gloo")
    model = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(4, 2))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    data = TensorDataset(torch.randn(64, 4), torch.randint(0, 2, (64,)))
    sampler = DistributedSampler(data)
    loader = DataLoader(data, sampler=sampler, batch_size=4)
    for epoch in range(3):
        sampler.set_epoch(epoch)
        train(model, loader, opt)


main()
"""


def test_a_prefetchers_none_at_the_loaders_end_decides_nothing_rank_local(tmp_path):
    script = PREFETCHED.format(caught="StopIteration")
    assert not _codes(lint_tree(tmp_path, {"train.py": script}), "DDP809")


def test_its_twin_a_none_for_a_failed_read_is_the_ranks_own(tmp_path):
    script = PREFETCHED.format(caught="OSError")
    found = _codes(lint_tree(tmp_path, {"train.py": script}), "DDP809")
    assert [f.location.line for f in found] == [_line(script, "# the decision")]


# -------------------------------------------------- the sync flag after an evaluation's forward
# nanoGPT's loop: every `eval_interval` steps rank 0 runs `estimate_loss(model)` (a
# `@torch.no_grad()` helper) and only then sets `model.require_backward_grad_sync` before the
# training forward. A forward with gradients off prepares no backward: it decides no sync.
LATE_FLAG = """import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

ACCUM = 4


{decorator}def estimate_loss(model, batches):
    return sum(model(x).sum().item() for x in batches)


def main():
    dist.init_process_group("gloo")
    model = DDP(torch.nn.Linear(4, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    val = [torch.randn(2, 4) for _ in range(3)]
    for step in range(100):
        if step % 10 == 0 and dist.get_rank() == 0:
            print(estimate_loss(model, val))
        model.require_backward_grad_sync = (step + 1) % ACCUM == 0  # the flag
        loss = model(torch.randn(8, 4)).sum() / ACCUM
        loss.backward()
        if (step + 1) % ACCUM == 0:
            opt.step()
            opt.zero_grad()


main()
"""


def test_an_evaluations_no_grad_forward_before_the_flag_decides_no_sync(tmp_path):
    script = LATE_FLAG.format(decorator="@torch.no_grad()\n")
    assert not _codes(lint_tree(tmp_path, {"train.py": script}), "DDP805")


def test_its_twin_a_forward_with_gradients_on_before_the_flag(tmp_path):
    script = LATE_FLAG.format(decorator="")
    found = _codes(lint_tree(tmp_path, {"train.py": script}), "DDP805")
    assert [f.location.line for f in found] == [_line(script, "# the flag")]


def test_a_forward_in_a_block_that_leaves_the_pass_is_not_before_the_flag(tmp_path):
    # `if eval_only and step == 0: estimate_loss(model); break` above the flag: that pass ends there
    script = LATE_FLAG.format(decorator="").replace(
        "        if step % 10 == 0 and dist.get_rank() == 0:\n            print(estimate_loss(model, val))\n",
        "        if step == 0 and dist.get_world_size() == 1:\n            print(estimate_loss(model, val))\n"
        "            break\n")
    assert "break" in script
    assert not _codes(lint_tree(tmp_path, {"train.py": script}), "DDP805")


# -------------------------------------------------- a trainer's mode field from the launched option
# `mode = args.mode` at the top, `Trainer(..., mode)` keeps it as `self.mode`, and the
# accumulating patch loop sits under `if self.mode == 2:`; every launch runs --mode 1.
MODE_TRAINER = """import argparse
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

parser = argparse.ArgumentParser()
parser.add_argument("--mode", type=int, default={default})
args = parser.parse_args()
mode = args.mode


class Trainer:
    def __init__(self, optimizer, mode=1):
        self.optimizer = optimizer
        self.mode = mode

    def train(self, batch, model):
        if self.mode == 1:
            model(batch).sum().backward()
            self.optimizer.step()
            self.optimizer.zero_grad()
        if self.mode == 2:
            for patch in batch.split(2):
                model(patch).sum().backward()  # the accumulation
            self.optimizer.step()
            self.optimizer.zero_grad()


dist.init_process_group("gloo")
model = DDP(torch.nn.Linear(4, 1))
trainer = Trainer(torch.optim.SGD(model.parameters(), lr=0.1), mode)
for step in range(10):
    trainer.train(torch.randn(8, 4), model)
"""


def test_an_accumulation_under_a_mode_no_launch_takes_is_not_judged(tmp_path):
    script = MODE_TRAINER.format(default=1)
    assert not _codes(lint_tree(tmp_path, {"train.py": script}), "DDP805")


def test_its_twin_the_mode_that_accumulates_by_default(tmp_path):
    script = MODE_TRAINER.format(default=2)
    found = _codes(lint_tree(tmp_path, {"train.py": script}), "DDP805")
    assert [f.location.line for f in found] == [_line(script, "# the accumulation")]


# -------------------------------------------------- a loop's name rebound at a module's top level
# A script without functions: `tbar = tqdm(train_loader)` for the training loop, then in the
# evaluation every few epochs `tbar = tqdm(val_loader)` for a no-grad loop. The validation
# sampler's loader is read by no training loop; it needs no set_epoch.
TOP_LEVEL = """import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, DistributedSampler, TensorDataset
from tqdm import tqdm

dist.init_process_group("gloo")
model = DDP(torch.nn.Linear(4, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.1)
train_set = TensorDataset(torch.randn(64, 4))
val_set = TensorDataset(torch.randn(32, 4))
train_sampler = DistributedSampler(train_set)
val_sampler = DistributedSampler(val_set)  # the validation sampler
train_loader = DataLoader(train_set, sampler=train_sampler, batch_size=4)
val_loader = DataLoader(val_set, sampler=val_sampler, batch_size=4)
for epoch in range(20):
    train_sampler.set_epoch(epoch)
    tbar = tqdm({trained})
    for (x,) in tbar:
        opt.zero_grad()
        model(x).sum().backward()
        opt.step()
    if (epoch + 1) % 5 == 0:
        with torch.no_grad():
            tbar = tqdm(val_loader)
            for (x,) in tbar:
                print(model(x).sum().item())
"""


def test_a_top_level_loop_reads_the_binding_that_reaches_it(tmp_path):
    script = TOP_LEVEL.format(trained="train_loader")
    assert not _codes(lint_tree(tmp_path, {"train.py": script}), "DDP804")


def test_its_twin_the_training_loop_reads_the_validation_loader(tmp_path):
    script = TOP_LEVEL.format(trained="val_loader")
    found = _codes(lint_tree(tmp_path, {"train.py": script}), "DDP804")
    assert [f.location.line for f in found] == [_line(script, "# the validation sampler")]


# -------------------------------------------------- a python-fire parameter every launch leaves off
FIRE_STATS = """import fire
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP


def save_stats(model, out):
    torch.save({{k: v.norm() for k, v in model.state_dict().items()}}, out)  # the stats


def main(save_stats_to_disk: bool = {default}):
    dist.init_process_group("gloo")
    model = DDP(torch.nn.Linear(4, 1))
    if save_stats_to_disk:
        save_stats(model.module, "stats.pt")
    if dist.get_rank() == 0:
        torch.save(model.module.state_dict(), "model.pt")


if __name__ == "__main__":
    fire.Fire(main)
"""


def test_a_helper_called_only_under_a_fire_switch_left_off_writes_nothing(tmp_path):
    script = FIRE_STATS.format(default="False")
    files = {"train.py": script, "run.sh": "torchrun --nproc_per_node=2 train.py --save_stats_to_disk=False\n"}
    assert not _codes(lint_tree(tmp_path, files), "DDP806")


def test_its_twin_the_switch_on(tmp_path):
    script = FIRE_STATS.format(default="True")
    found = _codes(lint_tree(tmp_path, {"train.py": script}), "DDP806")
    assert [f.location.line for f in found] == [_line(script, "# the stats")]


# -------------------------------------------------- an evaluation grown from gathered results
# The inline evaluation appends `accelerator.gather_for_metrics(loss)` and adds the gathered
# logits' argmax: the metric every rank computes is the whole validation set's.
GATHERED = """import torch
from accelerate import Accelerator
from torch.utils.data import DataLoader, TensorDataset


def score(predictions, labels, ids=None):
    return sum(p == t for p, t in zip(predictions, labels)) / len(labels)


def mean_of(values):
    return sum(float(v) for v in values) / len(values)


def main():
    accelerator = Accelerator()
    model = torch.nn.Linear(4, 3)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    data = TensorDataset(torch.randn(64, 4), torch.randint(0, 3, (64,)), torch.arange(64))
    train = DataLoader(data, batch_size=8, shuffle=True)
    val = DataLoader(data, batch_size=8)
    model, opt, train, val = accelerator.prepare(model, opt, train, val)
    best = 0.0
    for epoch in range(5):
        model.train()
        for x, y, _ in train:
            loss = torch.nn.functional.cross_entropy(model(x), y)
            accelerator.backward(loss)
            opt.step()
            opt.zero_grad()
        model.eval()
        losses, predictions, labels, ids = [], [], [], []
        for x, y, idx in val:
            with torch.no_grad():
                logits = model(x)
            losses.append(accelerator.gather_for_metrics(torch.nn.functional.cross_entropy(logits, y)))
            predictions += {predicted}.argmax(-1).tolist()
            labels += accelerator.gather(y).tolist()
            ids += idx.tolist()
        accuracy = {metric}
        if accuracy > best:  # the decision
            best = accuracy
            accelerator.wait_for_everyone()
            accelerator.save(accelerator.unwrap_model(model).state_dict(), "best.pt")


main()
"""


def test_a_metric_grown_from_gathered_results_is_every_ranks(tmp_path):
    # (the rank's own sample ids handed beside the gathered predictions change nothing)
    script = GATHERED.format(predicted="accelerator.gather(logits)", metric="score(predictions, labels, ids)")
    assert not _codes(lint_tree(tmp_path, {"train.py": script}), "DDP809")


def test_a_loss_list_of_what_gather_for_metrics_hands_back_is_every_ranks(tmp_path):
    script = GATHERED.format(predicted="logits", metric="mean_of(losses)")
    assert not _codes(lint_tree(tmp_path, {"train.py": script}), "DDP809")


def test_its_twin_predictions_of_the_ranks_own_batches(tmp_path):
    script = GATHERED.format(predicted="logits", metric="score(predictions, labels, ids)").replace(
        "labels += accelerator.gather(y).tolist()", "labels += y.tolist()")
    found = _codes(lint_tree(tmp_path, {"train.py": script}), "DDP809")
    assert [f.location.line for f in found] == [_line(script, "# the decision")]


# -------------------------------------------------- an `or` of a step count that meets its bound once
# `if rank == 0 and step % 20 == 0 or step == n_batches:` around `last_improve = step`: on every
# pass but the last, only rank 0 moves last_improve, and every rank then tests it: proven.
PATIENCE = """import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP


def main(patience=100):
    dist.init_process_group("gloo")
    model = DDP(torch.nn.Linear(4, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    batches = [torch.randn(8, 4) for _ in range(50)]
    n_batches = len(batches)
    best, last_improve = 1e9, 0
    for epoch in range(10):
        step = 0
        for i, x in enumerate(batches):
            step += 1
            opt.zero_grad()
            loss = model(x).sum()
            loss.backward()
            opt.step()
            if dist.get_rank() == 0 and step % 20 == 0 or {other}:
                if loss.item() < best:
                    best, last_improve = loss.item(), step
            if step - last_improve > patience:  # the decision
                break


main()
"""


def test_a_step_count_meeting_its_bound_once_leaves_rank_0_alone_on_the_others(tmp_path):
    script = PATIENCE.format(other="step == n_batches")
    found = _codes(lint_tree(tmp_path, {"train.py": script}), "DDP809")
    assert [(f.location.line, f.severity.name) for f in found] == [(_line(script, "# the decision"), "ERROR")]


def test_its_twin_a_flag_of_unknown_value_stays_an_assumption(tmp_path):
    script = PATIENCE.format(other="torch.cuda.is_available()")
    found = _codes(lint_tree(tmp_path, {"train.py": script}), "DDP809")
    assert [(f.location.line, f.severity.name) for f in found] == [(_line(script, "# the decision"), "WARNING")]


# -------------------------------------------------- a re-written BERT loaded with from_pretrained
# A script's own BERT (LayerNorm written by hand, positions computed in forward) whose
# classmethod `from_pretrained(path)` loads weights into its own layers: it holds what its class
# builds - no buffers here, whatever the checkpoint's name says.
OWN_BERT = """import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP


class BertTextModel(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = torch.nn.Embedding(100, 8)
        self.head = torch.nn.Linear(8, 2){buffer}

    def forward(self, ids):
        return self.head(self.embed(ids).mean(1))

    @classmethod
    def from_pretrained(cls, path):
        model = cls()
        model.load_state_dict(torch.load(path))
        return model


def evaluate(model):
    with torch.no_grad():
        return model(torch.randint(0, 100, (4, 6))).sum().item()  # the evaluation


def main():
    dist.init_process_group("gloo")
    model = DDP(BertTextModel.from_pretrained("./bert_base_chinese"))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for step in range(100):
        opt.zero_grad()
        model(torch.randint(0, 100, (4, 6))).sum().backward()
        opt.step()
        if dist.get_rank() == 0 and step % 10 == 0:
            print(evaluate(model))


main()
"""


def test_a_scripts_own_bert_loaded_by_name_holds_no_buffers(tmp_path):
    script = OWN_BERT.format(buffer="")
    assert not _codes(lint_tree(tmp_path, {"train.py": script}), "DDP801")


def test_its_twin_the_own_class_registers_a_buffer(tmp_path):
    script = OWN_BERT.format(buffer='\n        self.register_buffer("position_ids", torch.arange(6))')
    found = _codes(lint_tree(tmp_path, {"train.py": script}), "DDP801")
    assert _line(script, "# the evaluation") in [f.location.line for f in found]


# -------------------------------------------------- a set_epoch under a switch the launch leaves off
# The training loader takes a BatchSampler over a DistributedSampler when --batch_sampler is on
# (its default) and the epoch is set only `if not args.batch_sampler:`: never, as launched.
SWITCHED_EPOCH = """import argparse
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import BatchSampler, DataLoader, DistributedSampler, TensorDataset

parser = argparse.ArgumentParser()
parser.add_argument("--batch_sampler", type=int, default={default})
args = parser.parse_args()
dist.init_process_group("gloo")
data = TensorDataset(torch.randn(64, 4))
sampler = DistributedSampler(data)  # the sampler
if args.batch_sampler:
    loader = DataLoader(data, batch_sampler=BatchSampler(sampler, 8, drop_last=True))
else:
    loader = DataLoader(data, sampler=sampler, batch_size=8)
model = DDP(torch.nn.Linear(4, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for epoch in range(5):
    if not args.batch_sampler:
        sampler.set_epoch(epoch)
    for (x,) in loader:
        opt.zero_grad()
        model(x).sum().backward()
        opt.step()
"""


def test_a_set_epoch_the_launch_never_reaches_sets_nothing(tmp_path):
    script = SWITCHED_EPOCH.format(default=1)
    found = _codes(lint_tree(tmp_path, {"train.py": script}), "DDP804")
    assert [f.location.line for f in found] == [_line(script, "# the sampler")]


def test_its_twin_the_switch_off_by_default(tmp_path):
    script = SWITCHED_EPOCH.format(default=0)
    assert not _codes(lint_tree(tmp_path, {"train.py": script}), "DDP804")


# -------------------------------------------------- a call made only under a switch left off
# `save_checkpoint(state, is_swa=True)` is called only under `if args.swa:` (off by default);
# every other call hands is_swa=False: the `if is_swa:` save never runs as launched.
SWA_SAVE = """import argparse
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

parser = argparse.ArgumentParser()
parser.add_argument("--swa", type=int, default={default})
args = parser.parse_args()


def save_checkpoint(state, rank, is_swa):
    if is_swa:
        torch.save(state, "swa.pt")  # the swa save
    elif rank == 0:
        torch.save(state, "ckpt.pt")


dist.init_process_group("gloo")
model = DDP(torch.nn.Linear(4, 1))
for epoch in range(3):
    save_checkpoint(model.module.state_dict(), dist.get_rank(), is_swa=False)
    if args.swa:
        save_checkpoint(model.module.state_dict(), dist.get_rank(), is_swa=True)
"""


def test_a_value_handed_only_by_a_call_the_launch_never_makes(tmp_path):
    script = SWA_SAVE.format(default=0)
    assert not _codes(lint_tree(tmp_path, {"train.py": script}), "DDP806")


def test_its_twin_that_call_made_by_default(tmp_path):
    script = SWA_SAVE.format(default=1)
    found = _codes(lint_tree(tmp_path, {"train.py": script}), "DDP806")
    assert [f.location.line for f in found] == [_line(script, "# the swa save")]


# -------------------------------------------------- torchrun without --nproc_per_node
# torchrun and torch.distributed.launch start one process per node unless told more: a
# launch that gives no count runs one process, and a finding that bites only on several is
# a warning that says so.
PLAIN_LOADER = """import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, TensorDataset

dist.init_process_group("gloo")
model = DDP(torch.nn.Linear(4, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.1)
loader = DataLoader(TensorDataset(torch.randn(64, 4)), batch_size=8, shuffle=True)  # the loader
for epoch in range(3):
    for (x,) in loader:
        opt.zero_grad()
        model(x).sum().backward()
        opt.step()
"""


def test_a_launch_with_no_process_count_starts_one(tmp_path):
    files = {"train.py": PLAIN_LOADER, "run.sh": "python -m torch.distributed.launch train.py --lr 0.1\n"}
    found = _codes(lint_tree(tmp_path, files), "DDP802")
    assert [(f.location.line, f.severity.name) for f in found] == [(_line(PLAIN_LOADER, "# the loader"), "WARNING")]
    assert "starts one process" in found[0].message


def test_its_twin_a_launch_of_two(tmp_path):
    files = {"train.py": PLAIN_LOADER, "run.sh": "python -m torch.distributed.launch --nproc_per_node=2 train.py\n"}
    found = _codes(lint_tree(tmp_path, files), "DDP802")
    assert [(f.location.line, f.severity.name) for f in found] == [(_line(PLAIN_LOADER, "# the loader"), "ERROR")]


# -------------------------------------------------- a list of files to save that only rank 0 fills
SAVE_LIST = """import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP


def main():
    dist.init_process_group("gloo")
    model = DDP(torch.nn.Linear(4, 1))
    for it in range(1000):
        to_save = []
        if (it + 1) % 100 == 0{ranked}:
            to_save.append("model_latest.pth")
        for name in to_save:
            torch.save(model.module.state_dict(), name)  # the save


main()
"""


def test_a_loop_over_a_list_only_rank_0_fills_saves_on_rank_0(tmp_path):
    script = SAVE_LIST.format(ranked=" and dist.get_rank() == 0")
    assert not _codes(lint_tree(tmp_path, {"train.py": script}), "DDP806")


def test_its_twin_every_rank_fills_it(tmp_path):
    script = SAVE_LIST.format(ranked="")
    found = _codes(lint_tree(tmp_path, {"train.py": script}), "DDP806")
    assert [f.location.line for f in found] == [_line(script, "# the save")]


# -------------------------------------------------- Lightning Fabric's DDP model
# `model, opt = fabric.setup(model, opt)` under `Fabric(strategy="ddp")` hands back the module
# wrapped in DistributedDataParallel: rank 0's no-grad forward of it broadcasts its buffers alone.
FABRIC = """import torch
from lightning.fabric import Fabric


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(4, 4)
        self.norm = torch.nn.BatchNorm1d(4)

    def forward(self, x):
        return self.norm(self.lin(x))


def main():
    fabric = Fabric(accelerator="cpu", devices=2, strategy="{strategy}")
    fabric.launch()
    model, opt = fabric.setup(Net(), torch.optim.SGD(Net().parameters(), lr=0.1))
    for step in range(100):
        loss = model(torch.randn(8, 4)).sum()
        fabric.backward(loss)
        opt.step()
        opt.zero_grad()
        if step % 10 == 0 and fabric.is_global_zero:
            with torch.no_grad():
                print(model(torch.randn(8, 4)).sum())  # the picture


main()
"""


def test_a_fabric_ddp_models_forward_on_rank_0_alone(tmp_path):
    script = FABRIC.format(strategy="ddp")
    found = _codes(lint_tree(tmp_path, {"train.py": script}), "DDP801")
    assert [f.location.line for f in found] == [_line(script, "# the picture")]


def test_its_twin_a_deepspeed_strategy_is_no_ddp_model(tmp_path):
    script = FABRIC.format(strategy="deepspeed")
    assert not _codes(lint_tree(tmp_path, {"train.py": script}), "DDP801")


# -------------------------------------------------- a config flag every YAML config sets alike
# `if cfg.ema.use: evaluate(ema_model) else: evaluate(model)` on rank 0, with `ema: use: true`
# in the Hydra config: the DDP model's own evaluation never runs.
EMA = """import hydra
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP


def evaluate(model):
    with torch.no_grad():
        return model(torch.randn(8, 4)).sum().item()  # the evaluation


@hydra.main(version_base=None, config_path="configs", config_name="default")
def main(cfg):
    dist.init_process_group("gloo")
    model = DDP(torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.BatchNorm1d(4)))
    ema_model = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.BatchNorm1d(4))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for step in range(100):
        opt.zero_grad()
        model(torch.randn(8, 4)).sum().backward()
        opt.step()
        if step % 10 == 0 and dist.get_rank() == 0:
            if cfg.ema.use:
                print(evaluate(ema_model))
            else:
                print(evaluate(model))


if __name__ == "__main__":
    main()
"""


def test_a_config_flag_every_config_sets_decides_the_side(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    files = {"train.py": EMA, "configs/default.yaml": "ema:\n  use: true\n  decay: 0.999\n"}
    assert not _codes(lint_tree(tmp_path, files), "DDP801")


def test_its_twin_the_config_turns_it_off(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    files = {"train.py": EMA, "configs/default.yaml": "ema:\n  use: false\n  decay: 0.999\n"}
    found = _codes(lint_tree(tmp_path, files), "DDP801")
    assert _line(EMA, "# the evaluation") in [f.location.line for f in found]


# -------------------------------------------------- a helper's sampler on one side of a choice
# The training loader takes a DistributedSampler built inline on one side of a choice, or the
# one a helper builds and returns on the other; `train_loader.sampler.set_epoch(epoch)` sets
# whichever it took.
EITHER_SAMPLER = """import argparse
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, DistributedSampler, TensorDataset


def weighted_sampler(data):
    return DistributedSampler(data, shuffle=True)  # the helper's sampler


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--balanced", action="store_true")
    args = parser.parse_args()
    dist.init_process_group("gloo")
    data = TensorDataset(torch.randn(64, 4))
    if args.balanced:
        sampler = DistributedSampler(data, shuffle=True)
    else:
        sampler = weighted_sampler(data)
    train_loader = DataLoader(data, sampler=sampler, batch_size=8)
    model = DDP(torch.nn.Linear(4, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for epoch in range(5):
{set_epoch}        for (x,) in train_loader:
            opt.zero_grad()
            model(x).sum().backward()
            opt.step()


main()
"""


def test_the_loaders_sampler_set_in_the_caller_is_the_helpers_too(tmp_path):
    script = EITHER_SAMPLER.format(set_epoch="        train_loader.sampler.set_epoch(epoch)\n")
    assert not _codes(lint_tree(tmp_path, {"train.py": script}), "DDP804")


def test_its_twin_no_epoch_set(tmp_path):
    script = EITHER_SAMPLER.format(set_epoch="")
    found = _codes(lint_tree(tmp_path, {"train.py": script}), "DDP804")
    assert _line(script, "# the helper's sampler") in [f.location.line for f in found]
