"""Shapes from session 14's fifth blind round and session 15's sixth, each with its twin, written
in our own words: a plain loader that the script replaces under the switch the process group is
set up under, before anything reads it (NeuralOperator)."""

from __future__ import annotations

from tests.unit.test_lint_real_patterns import codes, lint

REPLACED = """
def load_data(batch_size):
    return DataLoader(TensorDataset(torch.randn(64, 4)), batch_size=batch_size, shuffle=True)

use_distributed = os.environ.get("WORLD_SIZE") is not None
if use_distributed:
    dist.init_process_group("gloo")
train_loader = load_data(8)
{between}if {test}:
    train_sampler = DistributedSampler(train_loader.dataset)
    train_loader = DataLoader(train_loader.dataset, batch_size=8, sampler=train_sampler)
model = DDP(torch.nn.Linear(4, 1))
for epoch in range(3):
    train_sampler.set_epoch(epoch)
    for (x,) in train_loader:
        model(x).sum().backward()
"""


def test_a_plain_loader_replaced_under_the_distributed_switch_is_not_ddp802(tmp_path):
    found, _ = lint(tmp_path, REPLACED.format(between="", test="use_distributed"))
    assert [f for f in found if f.code == "DDP802"] == []


def test_a_plain_loader_replaced_under_another_test_stays_ddp802(tmp_path):
    found, _ = lint(tmp_path, REPLACED.format(between="", test="os.environ.get('SHARD')"))
    assert [(c, s) for c, s, _ in codes(found) if c == "DDP802"] == [("DDP802", "error")]


def test_a_plain_loader_iterated_before_it_is_replaced_stays_ddp802(tmp_path):
    found, _ = lint(tmp_path, REPLACED.format(between="warm = [b for b in train_loader]\n",
                                             test="use_distributed"))
    assert [(c, s) for c, s, _ in codes(found) if c == "DDP802"] == [("DDP802", "error")]


TURNS = """
def train(model, batches, steps, rank, world):
    step = 0
    while step < steps:
        for i, batch in enumerate(batches):
            if i % {every} == rank:
                model(batch).sum().backward()
                for p in model.parameters():
                    dist.all_reduce(p.grad)
                step += 1

rank, world = dist.get_rank(), dist.get_world_size()
train(torch.nn.Linear(4, 4), [torch.randn(8, 4) for _ in range(10)], 100, rank, world)
"""


def test_ranks_taking_turns_over_one_stream_are_not_a_rank_branch(tmp_path):
    found, _ = lint(tmp_path, TURNS.format(every="world"))
    assert [f for f in found if f.code in ("DDP801", "DDP809")] == []


def test_a_counter_compared_with_the_rank_by_another_modulus_stays_ddp801(tmp_path):
    found, _ = lint(tmp_path, TURNS.format(every="10"))
    assert ("DDP801", "error") in [(c, s) for c, s, _ in codes(found)]


SPLIT_STEP = """
model = DDP(torch.nn.Linear(4, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.1)
data = torch.randn(64, 4)
loader = DataLoader(data, batch_size=8, sampler=DistributedSampler(data, shuffle=False))
K, fp16 = 4, False
for step, x in enumerate(loader, 1):
{forward}
    if fp16:
        (loss * 1024.0).backward()
    else:
        if step % K == 0:
            loss.backward()
        else:
            with model.no_sync():
                loss.backward()
    if step % K == 0:
        opt.step()
        opt.zero_grad()
"""
FORWARD_SPLIT = """\
    if step % K == 0:
        loss = model(x).sum()
    else:
        with model.no_sync():
            loss = model(x).sum()"""


def test_forward_and_backward_split_on_the_same_test_are_right_accumulation(tmp_path):
    # ANCE: no_sync around the non-final forward; the backward's own split changes nothing, and
    # the fp16 side's plain backward follows a forward that already skipped the sync
    found, _ = lint(tmp_path, SPLIT_STEP.format(forward=FORWARD_SPLIT))
    assert [f for f in found if f.code == "DDP805"] == []


def test_a_backward_alone_under_no_sync_after_a_plain_forward_stays_ddp805(tmp_path):
    found, _ = lint(tmp_path, SPLIT_STEP.format(forward="    loss = model(x).sum()"))
    ddp805 = [f for f in found if f.code == "DDP805"]
    assert ddp805 and "after the forward" in ddp805[0].message


RECORD = """
from dataclasses import dataclass

@dataclass
class Env:
    world: int
    master: bool

def init():
    return Env(world=dist.get_world_size(), master={master})

class Runner:
    def __init__(self, model, env):
        self.model, self.env = model, env

    def fit(self, opt):
        for step in range(10):
            self.model(torch.randn(4, 8)).sum().backward()
            opt.step()
        if self.env.master:
            torch.save(self.model.module.state_dict(), "ckpt.pt")

env = init()
model = DDP(torch.nn.Linear(8, 8))
Runner(model, env).fit(torch.optim.SGD(model.parameters(), 0.1))
"""


def test_a_rank_test_kept_in_a_dataclass_field_guards_the_save(tmp_path):
    # RQ-VAE: the field's value at each construction is what `env.master` reads
    found, _ = lint(tmp_path, RECORD.format(master="dist.get_rank() == 0"))
    assert [f for f in found if f.code == "DDP806"] == []


def test_a_dataclass_field_set_alike_on_every_rank_leaves_the_save_on_every_rank(tmp_path):
    found, _ = lint(tmp_path, RECORD.format(master="True"))
    assert [(c, s) for c, s, _ in codes(found) if c == "DDP806"] == [("DDP806", "warning")]


JOINED_IN_A_HELPER = """
import argparse
import torch.multiprocessing as mp

def multi_init(device_id, world_size, gpu_ranks):
    dist.init_process_group("gloo", init_method="tcp://localhost:10000",
                            world_size=world_size, rank=gpu_ranks[device_id])

class Trainer:
    def __init__(self, model, gpu_rank=1):
        self.model, self.gpu_rank = model, gpu_rank
    def train(self, steps):
        for step in range(steps):
            if step % 100 == 0 and self.gpu_rank == 0:
                torch.save(self.model.state_dict(), "model_step_%d.pt" % step)

def run(args, device_id):
    multi_init(device_id, len(args.gpu_ranks), args.gpu_ranks)
    Trainer(torch.nn.Linear(4, 4), int(args.{field}[device_id])).train(1000)

if __name__ == "__main__":
    args = argparse.Namespace(gpu_ranks=[0, 1], devices=[0, 1])
    procs = [mp.get_context("spawn").Process(target=run, args=(args, i)) for i in range(2)]
"""


def test_the_rank_a_helper_hands_init_process_group_is_the_rank_in_its_caller(tmp_path):
    # PreSumm: multi_init(device_id, n, args.gpu_ranks) joins with gpu_ranks[device_id]; the
    # caller's args.gpu_ranks[device_id] is that rank
    found, _ = lint(tmp_path, JOINED_IN_A_HELPER.format(field="gpu_ranks"))
    assert [f for f in found if f.code == "DDP806"] == []


def test_another_list_indexed_alike_is_not_the_rank(tmp_path):
    found, _ = lint(tmp_path, JOINED_IN_A_HELPER.format(field="devices"))
    assert [(c, s) for c, s, _ in codes(found) if c == "DDP806"] == [("DDP806", "warning")]


LOCAL_AS_RANK = """
local_rank = int(os.getenv("LOCAL_RANK", 0))
dist.init_process_group("gloo"{given})
model = DDP(torch.nn.Linear(4, 1))
for epoch in range(3):
    model(torch.randn(8, 4)).sum().backward()
    if local_rank == 0:
        torch.save(model.module.state_dict(), "ckpt.pt")
"""


def test_a_local_rank_handed_to_init_process_group_as_the_rank_is_the_global_rank(tmp_path):
    # NeuralOperator joins with rank=LOCAL_RANK, world_size=device_count(): one node, one writer
    found, _ = lint(tmp_path, LOCAL_AS_RANK.format(given=", rank=local_rank, world_size=torch.cuda.device_count()"))
    assert [f for f in found if f.code == "DDP806"] == []


def test_a_local_rank_beside_a_group_joined_by_the_environment_is_one_writer_per_node(tmp_path):
    # a job on several nodes: NNODES
    found, _ = lint(tmp_path, LOCAL_AS_RANK.format(given="") + 'NNODES = int(os.environ.get("NNODES", 1))\n')
    ddp806 = [f for f in found if f.code == "DDP806"]
    assert ddp806 and "per node" in ddp806[0].message


ENGINE = """
from ignite.engine import Engine
model = DDP(torch.nn.Linear(4, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.1)
ds = TensorDataset(torch.randn(64, 4))
loader = DataLoader(ds, sampler=DistributedSampler(ds), batch_size=4)

def update(engine, batch):
    loss = model(batch[0]).sum() / 8
    loss.backward()
    {step}
    return loss.item()

trainer = Engine(update)
trainer.run(loader, max_epochs=1)
"""


def test_an_ignite_process_function_that_steps_every_k_batches_is_ddp805(tmp_path):
    # ConvAI: the Engine calls update() once per batch; its body is the loop's body
    found, _ = lint(tmp_path, ENGINE.format(
        step="if engine.state.iteration % 8 == 0:\n        opt.step(); opt.zero_grad()"))
    assert [(c, s, line) for c, s, line in codes(found) if c == "DDP805"] == [("DDP805", "warning", 15)]


def test_an_ignite_process_function_that_steps_every_batch_is_not(tmp_path):
    found, _ = lint(tmp_path, ENGINE.format(step="opt.step(); opt.zero_grad()"))
    assert [f for f in found if f.code == "DDP805"] == []


OPT_LEVEL = """
import argparse
parser = argparse.ArgumentParser()
parser.add_argument("--fp16", type=str, default={default})
args = parser.parse_args()
model = DDP(torch.nn.Linear(4, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for i, x in enumerate(torch.randn(64, 4).split(8)):
    loss = model(x).sum() / 8
    if args.fp16:
        (loss * 128.0).backward()
    else:
        loss.backward()
    if (i + 1) % 8 == 0:
        opt.step(); opt.zero_grad()
"""


def test_the_accumulating_backward_named_is_the_side_an_empty_default_takes(tmp_path):
    # ConvAI: `--fp16 default=""` (an apex opt level): off unless given, so the plain backward
    found, _ = lint(tmp_path, OPT_LEVEL.format(default='""'))
    assert [(c, line) for c, _, line in codes(found) if c == "DDP805"] == [("DDP805", 18)]


def test_a_set_default_names_the_other_side(tmp_path):
    found, _ = lint(tmp_path, OPT_LEVEL.format(default='"O1"'))
    assert [(c, line) for c, _, line in codes(found) if c == "DDP805"] == [("DDP805", 16)]


def test_a_plain_loader_returned_in_a_tuple_and_replaced_under_the_switch_is_not_ddp802(tmp_path):
    source = REPLACED.format(between="", test="use_distributed").replace(
        "return DataLoader(TensorDataset(torch.randn(64, 4)), batch_size=batch_size, shuffle=True)",
        "loader = DataLoader(TensorDataset(torch.randn(64, 4)), batch_size=batch_size, shuffle=True)\n"
        "    return loader, 64").replace("train_loader = load_data(8)", "train_loader, n = load_data(8)")
    found, _ = lint(tmp_path, source)
    assert [f for f in found if f.code == "DDP802"] == []


HELPER_NAMED_LOCAL = """
def get_local_rank():
    if not dist.is_initialized():
        return 0
    return {value}

model = DDP(torch.nn.Linear(4, 1))
for epoch in range(3):
    model(torch.randn(8, 4)).sum().backward()
    if get_local_rank() == 0:
        torch.save(model.module.state_dict(), "ckpt.pt")
NNODES = int(os.environ.get("NNODES", 1))  # a job on several nodes
"""


def test_a_helper_named_local_that_returns_the_global_rank_guards_one_writer(tmp_path):
    # NeuralOperator's comm.get_local_rank() returns dist.get_rank()
    found, _ = lint(tmp_path, HELPER_NAMED_LOCAL.format(value="dist.get_rank()"))
    assert [f for f in found if f.code == "DDP806"] == []


def test_a_helper_that_returns_the_local_rank_guards_one_writer_per_node(tmp_path):
    found, _ = lint(tmp_path, HELPER_NAMED_LOCAL.format(value='int(os.environ["LOCAL_RANK"])'))
    ddp806 = [f for f in found if f.code == "DDP806"]
    assert ddp806 and "per node" in ddp806[0].message


HF_EVAL = """
from transformers import RobertaConfig, RobertaForSequenceClassification, T5Config, T5ForConditionalGeneration
MODEL_CLASSES = {{"roberta": (RobertaConfig, {klass})}}

def evaluate(model, x):
    with torch.no_grad():
        return model(x)

config_class, model_class = MODEL_CLASSES["roberta"]
model = DDP(model_class.from_pretrained("ckpt"))
opt = torch.optim.AdamW(model.parameters())
x = torch.randint(0, 100, (4, 16))
for epoch in range(3):
    model(x)[0].sum().backward(); opt.step()
    if dist.get_rank() == 0:
        evaluate(model, x)
{after}
"""


def test_a_bert_family_model_from_a_table_broadcasts_buffers_in_a_rank_0_forward(tmp_path):
    # CodeBERT: RoBERTa's embeddings register position_ids; the class comes from MODEL_CLASSES
    found, _ = lint(tmp_path, HF_EVAL.format(klass="RobertaForSequenceClassification", after=""))
    assert ("DDP801", "warning") in [(c, s) for c, s, _ in codes(found)]


def test_a_library_model_without_known_buffers_is_not_judged_so(tmp_path):
    # (T5 keeps its relative attention bias as a parameter; GPT-2, this test's model until
    # session 71, does hold buffers: its attention's causal mask and masked_bias)
    found, _ = lint(tmp_path, HF_EVAL.format(klass="T5ForConditionalGeneration", after=""))
    assert [f for f in found if f.code == "DDP801"] == []


def test_a_fresh_model_passed_to_the_rank_0_evaluation_is_not_the_ddp_model(tmp_path):
    # after training, rank 0 reloads each checkpoint into a plain model and evaluates it
    after = ("if dist.get_rank() == 0:\n    for ckpt in ['a', 'b']:\n"
             "        model = model_class.from_pretrained(ckpt)\n        evaluate(model, x)\n")
    plain = HF_EVAL.format(klass="RobertaForSequenceClassification", after=after).replace(
        "    if dist.get_rank() == 0:\n        evaluate(model, x)\n", "")
    found, _ = lint(tmp_path, plain)
    assert [f for f in found if f.code == "DDP801"] == []
    wrapped = plain.replace("model = model_class.from_pretrained(ckpt)", "model = DDP(model_class.from_pretrained(ckpt))")
    found, _ = lint(tmp_path, wrapped)
    # (the wrapper's constructor, which broadcasts the parameters, and its forward: both rank 0's alone)
    assert [c for c, _, _ in codes(found) if c == "DDP801"] == ["DDP801", "DDP801"]


OFF_THE_WAY = """
import contextlib

def chunked_backward(model, chunks):
    ctxs = [model.no_sync for _ in chunks[:-1]] + [contextlib.nullcontext]
    for ctx, c in zip(ctxs, chunks):
        with ctx():
            model(c).sum().backward()

model = DDP(torch.nn.Linear(4, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.1)
accum = 4
for step in range(1000):
    {step}
    if (step + 1) % accum == 0:
        opt.step(); opt.zero_grad()
chunked_backward(model, torch.randn(8, 4).chunk(2))
"""


def test_a_no_sync_in_a_helper_the_loop_never_runs_does_not_cover_its_accumulation(tmp_path):
    # contrastors: a grad-cache step's no_sync; the training loop accumulates without it
    found, _ = lint(tmp_path, OFF_THE_WAY.format(step="model(torch.randn(8, 4)).sum().backward()"))
    assert [(c, line) for c, _, line in codes(found) if c == "DDP805"] == [("DDP805", 19)]


def test_a_no_sync_in_a_helper_the_loop_calls_covers_it(tmp_path):
    found, _ = lint(tmp_path, OFF_THE_WAY.format(step="chunked_backward(model, torch.randn(8, 4).chunk(2))"))
    assert [f for f in found if f.code == "DDP805"] == []


ENGINE_OR_DDP = """
class Trainer:
    def __init__(self, use_ds):
        self.deepspeed = use_ds
        self.model = {model}
        self.opt = torch.optim.SGD(self.model.parameters(), lr=0.1)
    def save_state(self, out):
        if self.deepspeed:
            self.engine.save_checkpoint(out)
        else:
            torch.save(self.opt.state_dict(), f"{{out}}/optimizer.pt")
    def train(self):
        for step in range(100):
            self.model(torch.randn(8, 4)).sum().backward()
            self.opt.step(); self.opt.zero_grad()
            if step % 10 == 0:
                self.save_state(f"ckpt/step_{{step}}")

Trainer(False).train()
"""


def test_the_other_side_of_a_deepspeed_switch_beside_a_ddp_model_is_the_ddp_path(tmp_path):
    # contrastors: `if self.deepspeed: engine save else: torch.save` - the else side is DDP's
    found, _ = lint(tmp_path, ENGINE_OR_DDP.format(model="DDP(torch.nn.Linear(4, 1))"))
    assert [(c, s) for c, s, _ in codes(found) if c == "DDP806"] == [("DDP806", "warning")]


def test_the_other_side_of_a_deepspeed_switch_without_ddp_is_one_process(tmp_path):
    found, _ = lint(tmp_path, ENGINE_OR_DDP.format(model="torch.nn.Linear(4, 1)"))
    assert [f for f in found if f.code == "DDP806"] == []


REGISTRY = """
import sys

class Trainer:
    def __init__(self, cfg):
        self.model = DDP(torch.nn.Linear(4, 1))
        self.opt = torch.optim.SGD(self.model.parameters(), lr=0.1)
    def train(self):
        for step in range(100):
            self.model(torch.randn(8, 4)).sum().backward()
            self.opt.step(); self.opt.zero_grad()
        {save}

REGISTRY = {{"base": Trainer}}
cls = REGISTRY[sys.argv[1]]
trainer = cls({{}})
trainer.train()
"""


def test_a_trainer_class_taken_from_a_registry_into_a_name_is_followed(tmp_path):
    # contrastors: `cls = REGISTRY[key]; cls(cfg).train()`
    found, _ = lint(tmp_path, REGISTRY.format(save='torch.save(self.opt.state_dict(), "opt.pt")'))
    assert [(c, s) for c, s, _ in codes(found) if c == "DDP806"] == [("DDP806", "warning")]


def test_the_registry_trainer_saving_on_rank_0_is_quiet(tmp_path):
    found, _ = lint(tmp_path, REGISTRY.format(
        save='if dist.get_rank() == 0:\n            torch.save(self.opt.state_dict(), "opt.pt")'))
    assert [f for f in found if f.code == "DDP806"] == []


NESTED_TABLE = """
import random
from torch.utils.data import Dataset

class Captions(Dataset):
    def __len__(self):
        return 64
    def __getitem__(self, i):
        return torch.tensor([float(random.randint(0, 4))])

def msrvtt_train(args):
    ds = Captions()
    s = DistributedSampler(ds)
    return DataLoader(ds, batch_size=8, sampler=s, num_workers=2{init}), s

LOADERS = {{"msrvtt": {{"train": msrvtt_train}}}}
torch.manual_seed(42)
loader, sampler = LOADERS["msrvtt"]["train"](None)
model = DDP(torch.nn.Linear(1, 1))
for epoch in range(2):
    sampler.set_epoch(epoch)
    for x in loader:
        model(x).sum().backward()
"""


def test_a_loader_builder_reached_through_a_nested_table_is_judged(tmp_path):
    # UniVL: `LOADERS[name]["train"](args)` over a dict of dicts
    found, _ = lint(tmp_path, NESTED_TABLE.format(init=""))
    assert [(c, line) for c, _, line in codes(found) if c == "DDP808"] == [("DDP808", 19)]


def test_the_nested_table_builder_seeding_its_workers_by_rank_is_quiet(tmp_path):
    found, _ = lint(tmp_path, NESTED_TABLE.format(
        init=", worker_init_fn=lambda w: random.seed(dist.get_rank() * 100 + w)"))
    assert [f for f in found if f.code == "DDP808"] == []


def test_a_registry_in_a_package_init_over_star_imported_trainers_is_followed(tmp_path):
    # contrastors: `from .base import *` in the package's __init__, then TRAINER_REGISTRY = {...}
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text('from .base import *\n\nREGISTRY = {"base": Trainer}\n')
    for guard in ("", "if dist.get_rank() == 0:\n            "):
        (pkg / "base.py").write_text(
            "import torch\nimport torch.distributed as dist\n"
            "from torch.nn.parallel import DistributedDataParallel as DDP\n\n"
            "class Trainer:\n    def __init__(self, cfg):\n        self.model = DDP(torch.nn.Linear(4, 1))\n"
            "    def train(self):\n        for step in range(10):\n"
            "            self.model(torch.randn(8, 4)).sum().backward()\n"
            f"        {guard}torch.save(self.model.state_dict(), 'model.pt')\n")
        found, _ = lint(tmp_path, "import sys\nfrom pkg import REGISTRY\ntrainer_cls = REGISTRY[sys.argv[1]]\n"
                                  "trainer = trainer_cls({})\ntrainer.train()\n")
        assert [c for c, _, _ in codes(found) if c == "DDP806"] == ([] if guard else ["DDP806"])


SEQUENTIAL = """
import random
from torch.utils.data import Dataset

class Crops(Dataset):
    def __len__(self):
        return 64
    def __getitem__(self, i):
        return torch.rand(3) * random.random()

def get_data(args):
    ds = Crops()
    return DataLoader(ds, batch_size=8, sampler=DistributedSampler(ds, shuffle={shuffle}), num_workers=4)

torch.manual_seed(0)
data = get_data(None)
"""


def test_a_loader_on_an_order_keeping_sampler_is_no_training_loader_for_ddp808(tmp_path):
    # contrastors' ImageNet validation loader: DistributedSampler(ds, shuffle=False)
    found, _ = lint(tmp_path, SEQUENTIAL.format(shuffle="False"))
    assert [f for f in found if f.code == "DDP808"] == []


def test_a_loader_on_a_shuffling_sampler_still_is(tmp_path):
    found, _ = lint(tmp_path, SEQUENTIAL.format(shuffle="True"))
    assert [c for c, _, _ in codes(found) if c == "DDP808"] == ["DDP808"]


REBOUND_PLAIN = """
def evaluate(model, x):
    with torch.no_grad():
        return model(x)

def main(backend="gloo"):
    local_rank = dist.get_rank()
    net = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.BatchNorm1d(4))
    model = DDP(net)
    model(torch.randn(8, 4)).sum().backward()
    if backend is not None and local_rank != 0:
        return
    model = {plain}
    evaluate(model, torch.randn(8, 4))

main()
"""


def test_a_name_rebound_to_the_plain_module_before_rank_0_evaluates_is_no_ddp_forward(tmp_path):
    # weaver: `model = orig_model.to(dev)` on rank 0 after the others returned
    found, _ = lint(tmp_path, REBOUND_PLAIN.format(plain="net"))
    assert [f for f in found if f.code == "DDP801"] == []


def test_a_name_rebound_to_a_new_ddp_wrapper_is_still_one(tmp_path):
    found, _ = lint(tmp_path, REBOUND_PLAIN.format(plain="DDP(net)"))
    # the constructor (DDP by its alias broadcasts the parameters) and the evaluation's forward
    assert [c for c, _, _ in codes(found) if c == "DDP801"] == ["DDP801", "DDP801"]


DISTILL = """
teacher = DDP(torch.nn.Linear(4, 4))
student = {student}
opt = torch.optim.SGD(student.parameters(), lr=0.1)
for step in range(1000):
    x = torch.randn(8, 4)
    target = teacher(x){detach}
    loss = torch.nn.functional.mse_loss(student(x), target)
    loss.backward()
    if (step + 1) % 4 == 0:
        opt.step(); opt.zero_grad()
"""


def test_accumulating_a_plain_student_against_a_detached_ddp_teacher_is_not_ddp805(tmp_path):
    # TinyBERT: the backward never reaches the DDP model, so no all-reduce to skip
    found, _ = lint(tmp_path, DISTILL.format(student="torch.nn.Linear(4, 4)", detach=".detach()"))
    assert [f for f in found if f.code == "DDP805"] == []


def test_a_wrapped_student_is_ddp805_whatever_the_teacher(tmp_path):
    for student, detach in (("DDP(torch.nn.Linear(4, 4))", ".detach()"), ("DDP(torch.nn.Linear(4, 4))", "")):
        found, _ = lint(tmp_path, DISTILL.format(student=student, detach=detach))
        assert [c for c, _, _ in codes(found) if c == "DDP805"] == ["DDP805"], (student, detach)


def test_an_optimizer_built_before_the_model_is_wrapped_still_steps_the_ddp_model(tmp_path):
    source = DISTILL.format(student="torch.nn.Linear(4, 4)", detach=".detach()").replace(
        "for step in range(1000):", "student = DDP(student)\nfor step in range(1000):")
    found, _ = lint(tmp_path, source)
    assert [c for c, _, _ in codes(found) if c == "DDP805"] == ["DDP805"]


FINDER = """
import tempfile

class Cacher:
    def __init__(self, in_memory):
        self.in_memory, self.cached = in_memory, {{}}

    def store(self, key, state):
        if self.in_memory:
            self.cached[key] = state
        else:
            torch.save(state, os.path.join(tempfile.gettempdir(), f"state_{{key}}.pt"))

class Finder:
    def __init__(self, model, opt, memory_cache=True):
        self.model, self.opt = model, opt
        self.cacher = Cacher(memory_cache)
        self.cacher.store("model", model.state_dict())

    def run(self, batches, accumulation_steps=1):
        for x in batches:
            self.opt.zero_grad()
            for _ in range(accumulation_steps):
                (self.model(x).sum() / accumulation_steps).backward()
            self.opt.step()

model = DDP(torch.nn.Linear(4, 4))
Finder(model, torch.optim.SGD(model.parameters(), lr=0.1){given}).run([torch.randn(8, 4)] * 10{steps})
"""


def test_defaults_every_call_leaves_make_one_micro_step_and_an_in_memory_cache(tmp_path):
    # weaver's LR finder: accumulation_steps=1 and memory_cache=True by default, never passed
    found, _ = lint(tmp_path, FINDER.format(given="", steps=""))
    assert [f for f in found if f.code in ("DDP805", "DDP806")] == []


def test_a_call_that_passes_other_values_reaches_both(tmp_path):
    found, _ = lint(tmp_path, FINDER.format(given=", memory_cache=False", steps=", accumulation_steps=4"))
    assert sorted(c for c, _, _ in codes(found) if c in ("DDP805", "DDP806")) == ["DDP805", "DDP806"]


SPAWNED = """
import argparse
import torch.multiprocessing as mp

def main_worker(gpu, ngpus_per_node, args):
    args.gpu = gpu
    {rank}
    dist.init_process_group("gloo", init_method=args.dist_url, world_size=args.world_size, rank=args.rank)
    model = DDP(torch.nn.Linear(4, 4))
    for epoch in range(10):
        if args.gpu == 0:
            torch.save(model.module.state_dict(), "checkpoint.pth")

if __name__ == "__main__":
    args = argparse.Namespace(rank=0, world_size=1, dist_url="tcp://localhost:23456")
    mp.spawn(main_worker, nprocs=2, args=(2, args))
"""


def test_a_spawn_index_the_job_rank_is_built_from_is_the_rank_within_the_node(tmp_path):
    # PyTorch-Encoding: args.rank = args.rank * ngpus_per_node + gpu; the save under args.gpu == 0
    found, _ = lint(tmp_path, SPAWNED.format(rank="args.rank = args.rank * ngpus_per_node + gpu"))
    ddp806 = [f for f in found if f.code == "DDP806"]
    assert ddp806 and "per node" in ddp806[0].message


def test_a_spawn_index_used_as_the_rank_itself_is_the_job_rank(tmp_path):
    found, _ = lint(tmp_path, SPAWNED.format(rank="args.rank = gpu"))
    assert [f for f in found if f.code == "DDP806"] == []


SPREAD = """
import random
from torch.utils.data import Dataset

class FlipSet(Dataset):
    def __len__(self):
        return 1000
    def __getitem__(self, i):
        x = torch.zeros(3, 8, 8)
        return x.flip(-1) if random.random() < 0.5 else x

torch.manual_seed(1)
model = DDP(torch.nn.Conv2d(3, 3, 1))
train_set = FlipSet()
sampler = DistributedSampler(train_set)
loader_kwargs = {{'batch_size': 8, 'num_workers': 4, 'pin_memory': True{more}}}
loader = DataLoader(train_set, sampler=sampler, drop_last=True, **loader_kwargs)
for epoch in range(10):
    sampler.set_epoch(epoch)
    for x in loader:
        model(x).sum().backward()
"""


def test_workers_spread_from_a_dict_literal_are_read(tmp_path):
    # PyTorch-Encoding: DataLoader(..., **loader_kwargs) with num_workers in the dict
    found, _ = lint(tmp_path, SPREAD.format(more=""))
    assert [(c, line) for c, _, line in codes(found) if c == "DDP808"] == [("DDP808", 22)]


def test_a_generator_spread_from_the_dict_is_read_too(tmp_path):
    found, _ = lint(tmp_path, SPREAD.format(more=", 'generator': torch.Generator()"))
    assert [f for f in found if f.code == "DDP808"] == []


def test_a_dataset_registry_in_unread_modules_is_read_to_see_which_class_draws(tmp_path):
    # PyTorch-Encoding: get_dataset(name) returns datasets[name](**kw) over classes of other modules
    pkg = tmp_path / "sets"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("from .crops import Crops\n\nDATASETS = {'crops': Crops}\n\n"
                                     "def get_dataset(name, **kwargs):\n    return DATASETS[name](**kwargs)\n")
    for draw, expected in (("random.randint(0, 9)", ["DDP808"]), ("0", [])):
        (pkg / "crops.py").write_text("import random\nfrom torch.utils.data import Dataset\n\n"
                                      "class Crops(Dataset):\n    def __len__(self):\n        return 8\n"
                                      f"    def __getitem__(self, i):\n        return i + {draw}\n")
        found, _ = lint(tmp_path, "from sets import get_dataset\ntorch.manual_seed(0)\n"
                                  "ds = get_dataset('crops')\nsampler = DistributedSampler(ds)\n"
                                  "loader = DataLoader(ds, sampler=sampler, num_workers=2)\n"
                                  "model = DDP(torch.nn.Linear(1, 1))\nfor epoch in range(2):\n"
                                  "    sampler.set_epoch(epoch)\n    for x in loader:\n"
                                  "        model(x.float()).sum().backward()\n")
        assert [c for c, _, _ in codes(found) if c == "DDP808"] == expected, draw


def test_a_dataset_picked_by_name_from_a_module_built_with_options_from_a_helper(tmp_path):
    # DeepDeblur: getattr(import_module("data." + name), name)(args) with args = setup(...)
    pkg = tmp_path / "data"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    source = ("import argparse\nfrom importlib import import_module\n\ndef setup(args):\n"
              "    torch.manual_seed(args.seed)\n    return args\n\n"
              "args = setup(argparse.Namespace(seed=1, data='BlurSet'))\n"
              "ds = getattr(import_module('data.' + args.data.lower()), args.data)(args)\n"
              "sampler = DistributedSampler(ds)\nloader = DataLoader(ds, batch_size=8, sampler=sampler, num_workers=2)\n"
              "model = DDP(torch.nn.Linear(1, 1))\nfor epoch in range(2):\n    sampler.set_epoch(epoch)\n"
              "    for x in loader:\n        model(x.float()).sum().backward()\n")
    for draw, expected in (("random.randrange(0, 64)", ["DDP808"]), ("0", [])):
        (pkg / "blurset.py").write_text("import random\nfrom torch.utils.data import Dataset\n\n"
                                        "class BlurSet(Dataset):\n    def __init__(self, args):\n        self.n = 64\n"
                                        "    def __len__(self):\n        return self.n\n"
                                        f"    def __getitem__(self, i):\n        return float(i + {draw})\n")
        found, _ = lint(tmp_path, source)
        assert [c for c, _, _ in codes(found) if c == "DDP808"] == expected, draw


CLIPS = """
import random
import sys
import torch.multiprocessing as mp
from torch.utils.data import Dataset

class Clips(Dataset):
    def __len__(self):
        return 64
    def __getitem__(self, i):
        return torch.tensor([random.uniform(0, 1)])
"""


def test_a_local_dataloader_subclass_is_a_loader(tmp_path):
    # CoCLR's FastDataLoader(DataLoader)
    for base, expected in (("DataLoader", ["DDP808"]), ("object", [])):
        source = CLIPS + (f"class FastLoader({base}):\n    def __init__(self, *args, **kwargs):\n"
                          "        super().__init__(*args, **kwargs)\n"
                          "torch.manual_seed(0)\nds = Clips()\ns = DistributedSampler(ds)\n"
                          "loader = FastLoader(ds, batch_size=8, sampler=s, num_workers=2)\n"
                          "model = DDP(torch.nn.Linear(1, 1))\nfor epoch in range(2):\n    s.set_epoch(epoch)\n"
                          "    for x in loader:\n        model(x).sum().backward()\n")
        found, _ = lint(tmp_path, source)
        assert [c for c, _, _ in codes(found) if c == "DDP808"] == expected, base


SPAWN_OR_DIRECT = CLIPS + """
def worker(gpu, use_spawn):
    ds = Clips()
    s = DistributedSampler(ds)
    loader = DataLoader(ds, batch_size=8, sampler=s, num_workers=2)
    model = DDP(torch.nn.Linear(1, 1))
    for epoch in range(2):
        s.set_epoch(epoch)
        for x in loader:
            model(x).sum().backward()

def main(use_spawn):
    torch.manual_seed(0)
    {launch}

main("--spawn" in sys.argv)
"""


def test_a_launcher_that_may_call_the_worker_itself_shares_its_seed_with_it(tmp_path):
    # CoCLR: mp.spawn(worker) or worker() directly (torchrun): the direct path keeps the seed
    found, _ = lint(tmp_path, SPAWN_OR_DIRECT.format(
        launch="if use_spawn:\n        mp.spawn(worker, nprocs=2, args=(use_spawn,))\n"
               "    else:\n        worker(None, use_spawn)"))
    assert [c for c, _, _ in codes(found) if c == "DDP808"] == ["DDP808"]


def test_a_launcher_that_only_spawns_seeds_itself_alone(tmp_path):
    found, _ = lint(tmp_path, SPAWN_OR_DIRECT.format(launch="mp.spawn(worker, nprocs=2, args=(use_spawn,))"))
    assert [f for f in found if f.code == "DDP808"] == []


BUILDERS = CLIPS + """
def build_train(args):
    ds = Clips()
    s = DistributedSampler(ds)
    return DataLoader(ds, batch_size=8, sampler=s, num_workers=2, drop_last=True), s

def build_val(args):
    return DataLoader(Clips(), batch_size=8, num_workers=2), 64

BUILD = {}
BUILD["clips"] = {"train": build_train, "val": build_val}
torch.manual_seed(0)
val_loader, n = BUILD[sys.argv[1]]["val"](None)
train_loader, sampler = BUILD[sys.argv[1]]["train"](None)
model = DDP(torch.nn.Linear(1, 1))
for epoch in range(2):
    sampler.set_epoch(epoch)
    for x in train_loader:
        model(x).sum().backward()
"""


def test_a_table_filled_by_key_and_read_by_a_spelled_key_gives_that_entry(tmp_path):
    # UniVL: DATALOADER_DICT = {}; DATALOADER_DICT["msrvtt"] = {"train": ..., "val": ...}
    found, _ = lint(tmp_path, BUILDERS)
    assert [(c, line) for c, _, line in codes(found) if c in ("DDP802", "DDP808")] == [("DDP808", 21)]


IMAGENET_LAUNCH = CLIPS + """
import argparse
parser = argparse.ArgumentParser()
parser.add_argument("--seed", default={seed}, type=int)
parser.add_argument("--multiprocessing-distributed", action="store_true")

def main_worker(gpu, args):
    ds = Clips()
    s = DistributedSampler(ds)
    loader = DataLoader(ds, batch_size=8, sampler=s, num_workers=2)
    model = DDP(torch.nn.Linear(1, 1))
    for epoch in range(2):
        s.set_epoch(epoch)
        for x in loader:
            model(x).sum().backward()

def main():
    args = parser.parse_args()
    {seeding}
    if args.multiprocessing_distributed:
        mp.spawn(main_worker, nprocs=2, args=(args,))
    else:
        main_worker(None, args)

main()
"""


def test_the_direct_path_beside_multiprocessing_distributed_may_be_a_distributed_run(tmp_path):
    # CoCLR / the ImageNet example: without --multiprocessing-distributed each launched process
    # runs main_worker itself, after the launcher's seeding
    found, _ = lint(tmp_path, IMAGENET_LAUNCH.format(seed=0, seeding="torch.manual_seed(args.seed)"))
    assert [c for c, _, _ in codes(found) if c == "DDP808"] == ["DDP808"]


def test_a_seeding_only_when_an_unset_option_is_given_is_not_judged(tmp_path):
    found, _ = lint(tmp_path, IMAGENET_LAUNCH.format(
        seed=None, seeding="if args.seed is not None:\n        torch.manual_seed(args.seed)"))
    assert [f for f in found if f.code == "DDP808"] == []


RESUME = """
RANK = int(os.environ.get("RANK", 0))

def load_step(path, step):
    if os.path.exists(path){test}:
        step = torch.load(path)["step"]
    return step

def main():
    model = DDP(torch.nn.Linear(4, 4))
    start = load_step("ckpt.pt", 0)
    for step in range(start, 1000):
        model(torch.randn(8, 4)).sum().backward()

main()
"""


def test_a_bound_a_helper_reads_on_rank_0_alone_is_rank_local(tmp_path):
    # RoMa: the resume step read only where RANK == 0, then every rank loops from it
    found, _ = lint(tmp_path, RESUME.format(test=" and RANK == 0"))
    assert [(c, s) for c, s, _ in codes(found) if c == "DDP809"] == [("DDP809", "warning")]


def test_a_bound_every_rank_reads_is_shared(tmp_path):
    found, _ = lint(tmp_path, RESUME.format(test=""))
    assert [f for f in found if f.code == "DDP809"] == []


def test_a_spawn_target_given_as_fn_is_a_spawned_rank(tmp_path):
    # PVDM: mp.spawn(fn=worker, ...) - the parent's seeding is not the ranks'
    for launch, expected in (("mp.spawn(fn=worker, nprocs=2, args=(False,))", []),
                             ("worker(None, False)", ["DDP808"])):
        found, _ = lint(tmp_path, SPAWN_OR_DIRECT.format(launch=launch))
        assert [c for c, _, _ in codes(found) if c == "DDP808"] == expected, launch


SKIPPED_STEP = """
def train_step(model, opt, x, threshold):
    {clear}
    model(x).pow(2).mean().backward()
    grad_norm = torch.nn.utils.clip_grad_norm_(model.parameters(), 1e9).item()
    if grad_norm < threshold:
        opt.step()

model = DDP(torch.nn.Linear(4, 4))
opt = torch.optim.Adam(model.parameters())
for it in range(100):
    train_step(model, opt, torch.randn(8, 4), threshold=400.0)
"""


def test_a_step_skipped_on_a_bad_norm_after_clearing_the_gradients_is_no_accumulation(tmp_path):
    # VDVAE: model.zero_grad() first in the step helper; the step skipped on a large norm
    found, _ = lint(tmp_path, SKIPPED_STEP.format(clear="model.zero_grad()"))
    assert [f for f in found if f.code == "DDP805"] == []


def test_the_same_step_without_clearing_accumulates(tmp_path):
    found, _ = lint(tmp_path, SKIPPED_STEP.format(clear="pass"))
    assert [c for c, _, _ in codes(found) if c == "DDP805"] == ["DDP805"]


FLAT_REDUCE = """
def allreduce_grads(params):
    flat = []
    for p in params:
        if {test}:
            flat.append(p.grad.flatten())
    dist.all_reduce(torch.cat(flat))

model = torch.nn.Linear(4, 4)
for x in torch.randn(10, 8, 4):
    model(x).sum().backward()
    allreduce_grads(list(model.parameters()))
"""


def test_a_flat_gradient_list_filtered_by_requires_grad_has_the_models_size(tmp_path):
    # LSGM: the parameters handed in as an argument, filtered by a property of each parameter
    found, _ = lint(tmp_path, FLAT_REDUCE.format(test="p.requires_grad"))
    assert [f for f in found if f.code == "DDP807"] == []


def test_a_list_filtered_by_a_value_of_the_data_is_data_sized(tmp_path):
    found, _ = lint(tmp_path, FLAT_REDUCE.format(test="p.grad.abs().sum() > 0"))
    assert [c for c, _, _ in codes(found) if c == "DDP807"] == ["DDP807"]


def test_a_runner_class_picked_by_a_run_time_name_from_a_local_module_is_followed(tmp_path):
    # genforce: getattr(runners, config.runner_type)().train()
    (tmp_path / "runners.py").write_text(
        "import torch\nimport torch.distributed as dist\n"
        "from torch.nn.parallel import DistributedDataParallel as DDP\n\n"
        "class SGDRunner:\n    def train(self):\n        model = DDP(torch.nn.Linear(4, 4))\n"
        "        for it in range(100):\n            model(torch.randn(8, 4)).sum().backward()\n"
        "            if dist.get_rank() == 0:\n                dist.barrier()\n")
    found, _ = lint(tmp_path, "import runners\nrunner = getattr(runners, os.environ['RUNNER'])()\nrunner.train()\n")
    assert [(c, s) for c, s, _ in codes(found) if c == "DDP801"] == [("DDP801", "error")]


FOREVER = """
def forever(loader, sampler=None):
    epoch = 0
    while True:
        if sampler is not None:
            sampler.set_epoch(epoch)
        epoch += 1
        for b in loader:
            yield b

ds = torch.arange(1000).float()
sampler = DistributedSampler(ds)
it = forever(DataLoader(ds, batch_size=8, sampler=sampler){given})
model = DDP(torch.nn.Linear(1, 1))
for step in range(10000):
    model(next(it)[:, None]).sum().backward()
"""


def test_a_set_epoch_behind_a_sampler_no_caller_hands_in_never_runs(tmp_path):
    # SEDD: the endless generator sets the epoch only `if sampler is not None`
    found, _ = lint(tmp_path, FOREVER.format(given=""))
    assert [c for c, _, _ in codes(found) if c == "DDP804"] == ["DDP804"]


def test_the_generator_handed_the_sampler_sets_the_epoch(tmp_path):
    found, _ = lint(tmp_path, FOREVER.format(given=", sampler"))
    assert [f for f in found if f.code == "DDP804"] == []


FACTORY_STEP = """
def make_step(accum):
    n = 0
    def step_fn(model, opt, batch):
        nonlocal n
        model(batch).sum().div(accum).backward()
        n += 1
        if n == accum:
            n = 0
            opt.step(); opt.zero_grad()
    return step_fn

model = DDP(torch.nn.Linear(4, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.1)
step = make_step(4)
for i in range(1000):
    {call}
"""


def test_a_step_function_a_factory_returns_is_followed_into_its_accumulation(tmp_path):
    # SEDD: get_step_fn(...) returns a closure that counts micro-batches in a nonlocal
    found, _ = lint(tmp_path, FACTORY_STEP.format(call="step(model, opt, torch.randn(8, 4))"))
    assert [c for c, _, _ in codes(found) if c == "DDP805"] == ["DDP805"]


def test_the_factory_step_under_no_sync_is_quiet(tmp_path):
    found, _ = lint(tmp_path, FACTORY_STEP.format(
        call="with model.no_sync():\n        step(model, opt, torch.randn(8, 4))"))
    assert [f for f in found if f.code == "DDP805"] == []


def test_a_worker_spawned_with_its_switch_on_runs_the_set_epoch_under_it(tmp_path):
    # the Annotated Transformer: train_worker(..., is_distributed) called directly with False and
    # through mp.spawn(train_worker, args=(..., True)): the spawned way sets the epoch
    source = ("import torch.multiprocessing as mp\n\n"
              "def train_worker(gpu, ngpus, is_distributed):\n"
              "    ds = torch.arange(100).float()\n"
              "    sampler = DistributedSampler(ds) if is_distributed else None\n"
              "    loader = DataLoader(ds, sampler=sampler, batch_size=4)\n"
              "    model = DDP(torch.nn.Linear(1, 1))\n"
              "    for epoch in range(3):\n"
              "        if is_distributed:\n"
              "            loader.sampler.set_epoch(epoch)\n"
              "        for x in loader:\n"
              "            model(x[:, None]).sum().backward()\n\n"
              "if os.environ.get('N'):\n"
              "    mp.spawn(train_worker, nprocs=2, args=(2, True))\n"
              "else:\n"
              "    train_worker(0, 1, False)\n")
    found, _ = lint(tmp_path, source)
    assert [f for f in found if f.code == "DDP804"] == []


def test_a_library_dataset_that_shards_itself_needs_no_sampler(tmp_path):
    # minRF: mosaic streaming's StreamingDataset reads the rank and world size itself
    for dataset, expected in (("StreamingDataset(local='/data', shuffle=True, batch_size=8)", []),
                              ("TensorDataset(torch.randn(64, 4))", ["DDP802"])):
        found, _ = lint(tmp_path, "from streaming import StreamingDataset\n"
                                  f"ds = {dataset}\n"
                                  "train_loader = DataLoader(ds, batch_size=8, num_workers=4, drop_last=True)\n"
                                  "model = DDP(torch.nn.Linear(4, 4))\nfor epoch in range(3):\n"
                                  "    for batch in train_loader:\n        model(batch[0]).sum().backward()\n")
        assert [c for c, _, _ in codes(found) if c == "DDP802"] == expected, dataset


BRANCH_LOOPS = """
model = DDP(torch.nn.Linear(8, 1))
accum, step = 4, 0
while step < 100:
    if step % 10 != 9:
        for micro in range(accum):
            {first}
    else:
        for micro in range(accum):
            model.require_backward_grad_sync = (micro == accum - 1)
            model(torch.randn(2, 8)).sum().backward()
    step += 1
"""


def test_each_micro_step_loop_sets_its_own_sync_flag_before_its_forward(tmp_path):
    # Sophia: one outer loop holding a micro-step loop in each branch
    found, _ = lint(tmp_path, BRANCH_LOOPS.format(
        first="model.require_backward_grad_sync = (micro == accum - 1)\n"
              "            model(torch.randn(2, 8)).sum().backward()"))
    assert [f for f in found if f.code == "DDP805"] == []


def test_a_micro_step_loop_setting_the_flag_after_its_forward_is_late(tmp_path):
    found, _ = lint(tmp_path, BRANCH_LOOPS.format(
        first="loss = model(torch.randn(2, 8)).sum()\n"
              "            model.require_backward_grad_sync = (micro == accum - 1)\n"
              "            loss.backward()"))
    ddp805 = [f for f in found if f.code == "DDP805"]
    assert ddp805 and "after the forward" in ddp805[0].message


def test_a_loader_prepared_by_accelerate_on_one_side_only_is_judged_on_the_ddp_side(tmp_path):
    # coqui's Trainer: accelerator.prepare() under `if args.use_accelerate:`, its own DDP otherwise
    source = ("import argparse\nfrom accelerate import Accelerator\n"
              "p = argparse.ArgumentParser()\np.add_argument('--use_accelerate', action='store_true')\n"
              "args = p.parse_args()\n"
              "train_loader = DataLoader(TensorDataset(torch.randn(64, 4)), batch_size=8, shuffle=True)\n"
              "model = torch.nn.Linear(4, 1)\n"
              "if args.use_accelerate:\n    acc = Accelerator()\n"
              "    model, train_loader = acc.prepare(model, train_loader)\n"
              "{other}"
              "for (x,) in train_loader:\n    model(x).sum().backward()\n")
    found, _ = lint(tmp_path, source.format(other="else:\n    model = DDP(model)\n"))
    ddp802 = [f for f in found if f.code == "DDP802"]
    assert [f.severity.value for f in ddp802] == ["warning"] and "use_accelerate" in ddp802[0].message
    found, _ = lint(tmp_path, source.format(other="").replace("if args.use_accelerate:\n    acc", "if True:\n    acc"))
    assert [f for f in found if f.code == "DDP802"] == []


ACC_ON_SELF = """
class Base:
    def __init__(self, acc_steps=1):
        self.acc_steps = acc_steps
    def opt_step(self, it):
        if it % self.acc_steps == 0:
            self.opt.step(); self.opt.zero_grad()

class Trainer(Base):
    def __init__(self, acc_steps=1):
        super().__init__(acc_steps=acc_steps)
        self.model = DDP(torch.nn.Linear(4, 1))
        self.opt = torch.optim.SGD(self.model.parameters(), lr=0.1)
    def run(self, loader):
        for it, x in enumerate(loader):
            self.model(x).sum().backward()
            {step}

Trainer({given}).run([torch.randn(2, 4) for _ in range(8)])
"""


def test_an_accumulation_count_every_constructor_leaves_at_1_steps_every_pass(tmp_path):
    # GeoTransformer: grad_acc_steps=1 kept on self through a constructor chain
    for step in ("self.opt_step(it + 1)", "if (it + 1) % self.acc_steps == 0:\n                self.opt.step()"):
        found, _ = lint(tmp_path, ACC_ON_SELF.format(step=step, given=""))
        assert [f for f in found if f.code == "DDP805"] == [], step
        found, _ = lint(tmp_path, ACC_ON_SELF.format(step=step, given="acc_steps=4"))
        assert [c for c, _, _ in codes(found) if c == "DDP805"] == ["DDP805"], step


DEBUG_DUMP = """
class Base:
    def __init__(self, debug_dump=False):
        self.debug_dump = debug_dump
    def dump(self, batch):
        if not self.debug_dump:
            return
        torch.save(batch, "batch.pth")

class Trainer(Base):
    def __init__(self, debug_dump=False):
        super().__init__(debug_dump=debug_dump)
        self.model = DDP(torch.nn.Linear(4, 1))
    def run(self, loader):
        for x in loader:
            self.model(x).sum().backward()
            self.dump(x)

Trainer({given}).run([torch.randn(2, 4) for _ in range(8)])
"""


def test_a_dump_behind_an_early_return_on_a_flag_left_off_never_runs(tmp_path):
    # GeoTransformer's debug save: `if not self.run_grad_check: return` first
    found, _ = lint(tmp_path, DEBUG_DUMP.format(given=""))
    assert [f for f in found if f.code == "DDP806"] == []
    found, _ = lint(tmp_path, DEBUG_DUMP.format(given="debug_dump=True"))
    assert [c for c, _, _ in codes(found) if c == "DDP806"] == ["DDP806"]


def test_a_loader_on_the_one_process_side_of_the_switch_is_no_ddp808(tmp_path):
    # SEA-RAFT: `if use_ddp: <sampler loader> else: DataLoader(ds, shuffle=True, num_workers=2)`
    source = CLIPS + ("def main(rank, use_ddp):\n    if use_ddp:\n        dist.init_process_group('gloo')\n"
                      "        torch.manual_seed(987)\n    ds = Clips()\n    if use_ddp:\n"
                      "        loader = DataLoader(ds, batch_size=8, sampler=DistributedSampler(ds), num_workers=2,"
                      " generator=torch.Generator().manual_seed(rank))\n"
                      "    else:\n        loader = DataLoader(ds, batch_size=8, shuffle=True, num_workers=2)\n"
                      "    model = DDP(torch.nn.Linear(1, 1)) if use_ddp else torch.nn.Linear(1, 1)\n"
                      "    for x in loader:\n        model(x).sum().backward()\n\n"
                      "if len(sys.argv) > 1:\n    mp.spawn(main, nprocs=2, args=(True,))\nelse:\n    main(0, False)\n")
    found, _ = lint(tmp_path, source)
    assert [f for f in found if f.code == "DDP808"] == []


SYNC_WORKERS = """
from contextlib import contextmanager

@contextmanager
def sync_workers():
    r = {value}
    yield r
    dist.barrier()

def write_state(net, path):
    with sync_workers() as rank:
        if rank == 0:
            torch.save(net.state_dict(), path)

net = DDP(torch.nn.Linear(4, 4))
write_state(net.module, "ckpt.pt")
"""


def test_a_rank_a_context_manager_yields_is_a_rank(tmp_path):
    # NVIDIA's Transformer-XL: `with utils.distributed.sync_workers() as rank: if rank == 0: save`
    found, _ = lint(tmp_path, SYNC_WORKERS.format(value="dist.get_rank()"))
    assert [f for f in found if f.code == "DDP806"] == []


def test_a_context_manager_yielding_another_value_guards_nothing(tmp_path):
    found, _ = lint(tmp_path, SYNC_WORKERS.format(value="len(os.environ.get('X', ''))"))
    assert [c for c, _, _ in codes(found) if c == "DDP806"] == ["DDP806"]


PLACED = """
def embed(model, items, local_rank):
    with torch.no_grad():
        return model({use}).to("cpu")

def evaluate(model, items, local_rank):
    ds = TensorDataset(embed(model, items, local_rank))
    dl = DataLoader(ds, batch_size=64, sampler=DistributedSampler(ds, shuffle=False))
    return sum(x[0].sum() for x in dl)

local_rank = int(os.environ["LOCAL_RANK"])
evaluate(torch.nn.Linear(8, 8), torch.randn(1000, 8), local_rank)
"""


def test_a_rank_a_helper_only_places_tensors_with_shards_nothing(tmp_path):
    # MoRec: embed(model, items, local_rank) does items.to(local_rank): a device, not a shard
    found, _ = lint(tmp_path, PLACED.format(use="items.to(local_rank)"))
    assert [f for f in found if f.code == "DDP803"] == []


def test_a_rank_a_helper_slices_the_data_with_is_a_shard(tmp_path):
    found, _ = lint(tmp_path, PLACED.format(use="items[local_rank::2]"))
    assert [c for c, _, _ in codes(found) if c == "DDP803"] == ["DDP803"]


def test_a_launcher_seeding_under_an_option_set_by_default_seeds_its_direct_path(tmp_path):
    # MIL-NCE: `if args.seed is not None: torch.manual_seed(args.seed)` with --seed defaulting to 1
    source = IMAGENET_LAUNCH.format(seed=1, seeding="if args.seed is not None:\n        torch.manual_seed(args.seed)")
    found, _ = lint(tmp_path, source)
    assert [c for c, _, _ in codes(found) if c == "DDP808"] == ["DDP808"]
