"""Shapes from session 80 (holdout 111's leftovers and holdout 112's reading after its unread
score), each with its twin, in our own words."""

from __future__ import annotations

from tests.unit.test_lint_session39_shapes import lint_tree
from tests.unit.test_lint_session61_shapes import _codes, _line

# -------------------------------------------------- a project model class around a transformers encoder
# `class Classifier(RobertaPreTrainedModel)` builds `self.roberta = RobertaModel(config)` (its
# embeddings register position_ids as buffers) and is made by `Classifier.from_pretrained(...)`;
# rank 0 evaluates through the DDP wrapper, inside an evaluate() that rebinds the model only
# under `if n_gpu > 1:` - the DDP model it is handed reaches the forward
ENCODER = """import torch
import torch.distributed as dist
from transformers.models.roberta.modeling_roberta import {imports}


class Classifier(RobertaPreTrainedModel):
    def __init__(self, config):
        super().__init__(config)
        self.{field} = {built}
        self.head = torch.nn.Linear(8, 2)

    def forward(self, x):
        return self.head(x)


def evaluate(args, model):
    if args.n_gpu > 1:
        model = torch.nn.DataParallel(model)
    with torch.no_grad():
        return model(torch.randn(2, 8))  # the evaluation forward


def train(args, model):
    model = torch.nn.parallel.DistributedDataParallel(model)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for step in range(100):
        model(torch.randn(2, 8)).sum().backward()
        opt.step()
        if args.local_rank in [-1, 0] and step % 10 == 0:
            evaluate(args, model)


def main(args):
    dist.init_process_group("nccl")
    model = Classifier.from_pretrained(args.path)
    train(args, model)
"""


def test_a_project_class_around_a_buffered_encoder_is_buffered(tmp_path):
    script = ENCODER.format(imports="RobertaModel, RobertaPreTrainedModel", field="roberta",
                            built="RobertaModel(config, add_pooling_layer=False)")
    found = _codes(lint_tree(tmp_path, {"train.py": script}), "DDP801")
    assert [f.location.line for f in found] == [_line(script, "# the evaluation forward")]


def test_its_twin_a_model_a_classmethod_loads_to_copy_from_is_no_field(tmp_path):
    # (nanoGPT's `GPT.from_pretrained` loads `GPT2LMHeadModel` only to copy its weights over)
    script = ENCODER.format(imports="RobertaPreTrainedModel", field="extra", built="torch.nn.Linear(8, 8)").replace(
        "    def forward(self, x):",
        "    @classmethod\n    def copied(cls, name):\n        from transformers import GPT2LMHeadModel\n"
        "        donor = GPT2LMHeadModel.from_pretrained(name)\n        return cls(donor.config)\n\n"
        "    def forward(self, x):")
    assert _codes(lint_tree(tmp_path, {"train.py": script}), "DDP801") == []


def test_its_twin_a_config_object_builds_no_buffers(tmp_path):
    # (a `BertConfig(...)` is no model: the class holds no encoder)
    script = ENCODER.format(imports="BertConfig, RobertaPreTrainedModel", field="extra",
                            built="BertConfig(hidden_size=8)")
    assert _codes(lint_tree(tmp_path, {"train.py": script}), "DDP801") == []


# -------------------------------------------------- a trainer's stopper field, counting to its patience
# rank 0 alone evaluates and steps `self.stopper(...)`, then `if self.stopper.early_stop: break`
# inside its rank test: any run that stops improving takes that break on rank 0 alone
STOPPER = """import torch
import torch.distributed as dist


class Stopper:
    def __init__(self, patience=7):
        self.patience = patience
        self.counter = 0
        self.best = None
        self.early_stop = False

    def __call__(self, score):
        if self.best is None or score > self.best:
            self.best = score
            self.counter = 0
        else:
            COUNT


class Trainer:
    def __init__(self, model):
        self.model = torch.nn.parallel.DistributedDataParallel(model)
        self.opt = torch.optim.SGD(self.model.parameters(), lr=0.1)
        self.stopper = Stopper(patience=3)

    def train(self):
        for epoch in range(100):
            self.model(torch.randn(4, 8)).sum().backward()
            self.opt.step()
            if dist.get_rank() == 0:
                score = float(torch.rand(()))
                self.stopper(score)
                if self.stopper.early_stop:  # the stop
                    break


dist.init_process_group("gloo")
Trainer(torch.nn.Linear(8, 1)).train()
"""


def test_a_counting_stopper_kept_in_a_field_stops_rank_zero_alone_an_error(tmp_path):
    script = STOPPER.replace("COUNT", "self.counter += 1\n            if self.counter >= self.patience:\n"
                                      "                self.early_stop = True")
    found = _codes(lint_tree(tmp_path, {"train.py": script}), "DDP809")
    assert [(f.location.line, f.severity.value) for f in found] == [(_line(script, "# the stop"), "error")]


def test_its_twin_a_stopper_that_counts_nothing_is_a_warning(tmp_path):
    script = STOPPER.replace("COUNT", "self.early_stop = score < 0.01")
    found = _codes(lint_tree(tmp_path, {"train.py": script}), "DDP809")
    assert [(f.location.line, f.severity.value) for f in found] == [(_line(script, "# the stop"), "warning")]


# -------------------------------------------------- a draw under a parameter no call passes
# the collator's feature extractor shuffles the columns only `if shuffle:`, a parameter every
# call leaves at its default False: the workers draw nothing, whatever their seeds
EXTRACTOR = """import numpy as np
import torch
import torch.distributed as dist
from torch.utils.data import DataLoader, Dataset, DistributedSampler


class Extractor:
    def __call__(self, rows, shuffle=False):
        cols = list(range(rows.shape[1]))
        if shuffle:
            np.random.shuffle(cols)
        return rows[:, cols]


class Collator:
    def __init__(self):
        self.extract = Extractor()

    def __call__(self, items):
        return self.extract(torch.stack(items)CALL)


class Rows(Dataset):
    def __len__(self):
        return 64

    def __getitem__(self, i):
        return torch.full((4,), float(i))


dist.init_process_group("gloo")
torch.manual_seed(0)
model = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(4, 1))
ds = Rows()
sampler = DistributedSampler(ds)
loader = DataLoader(ds, batch_size=8, sampler=sampler, num_workers=2, collate_fn=Collator())  # the loader
for epoch in range(2):
    sampler.set_epoch(epoch)
    for x in loader:
        model(x).sum().backward()
"""


def test_a_draw_under_a_parameter_every_call_leaves_false_never_runs(tmp_path):
    script = EXTRACTOR.replace("CALL", "")
    assert _codes(lint_tree(tmp_path, {"train.py": script}), "DDP808") == []


def test_its_twin_a_call_that_turns_the_shuffle_on(tmp_path):
    script = EXTRACTOR.replace("CALL", ", shuffle=True")
    found = _codes(lint_tree(tmp_path, {"train.py": script}), "DDP808")
    assert [f.location.line for f in found] == [_line(script, "# the loader")]


# -------------------------------------------------- a draw right after its stream is seeded in place
# `np.random.seed(seed); np.random.shuffle(order)`: a class order every rank draws alike,
# whatever each process seeded before (here each rank seeds numpy with its rank)
ORDER = """import numpy as np
import torch
import torch.distributed as dist
from torch.utils.data import DataLoader, Dataset, DistributedSampler


def class_order(seed=123):
    SEEDING
    order = list(range(10))
    np.random.shuffle(order)
    return order


class Phase(Dataset):
    def __init__(self, order):
        self.items = [c for c in order[:5] for _ in range(8)]

    def __len__(self):
        return len(self.items)

    def __getitem__(self, i):
        return torch.tensor(float(self.items[i]))


def main():
    dist.init_process_group("gloo")
    seed = 42 + dist.get_rank()
    torch.manual_seed(seed)
    np.random.seed(seed)
    order = class_order(seed=7)
    ds = Phase(order)
    sampler = DistributedSampler(ds)  # the sampler
    loader = DataLoader(ds, batch_size=4, sampler=sampler)
    for epoch in range(2):
        sampler.set_epoch(epoch)
        for x in loader:
            pass


main()
"""


def test_a_draw_after_its_own_seeding_is_alike_on_every_rank(tmp_path):
    script = ORDER.replace("SEEDING", "np.random.seed(seed)")
    assert _codes(lint_tree(tmp_path, {"train.py": script}), "DDP803") == []


def test_its_twin_the_draw_follows_a_rank_seeded_stream(tmp_path):
    script = ORDER.replace("SEEDING", "np.random.seed(seed + dist.get_rank())")
    found = _codes(lint_tree(tmp_path, {"train.py": script}), "DDP803")
    assert [f.location.line for f in found] == [_line(script, "# the sampler")]


# -------------------------------------------------- `if args.amp is True:` of a store_true option
# two backwards in one micro-step loop: the finding points at the one the launch runs
AMP_SIDES = """import argparse
import torch
import torch.distributed as dist

parser = argparse.ArgumentParser()
parser.add_argument("--amp", action="ACTION")
parser.add_argument("--walks", type=int, default=2)
args = parser.parse_args()
dist.init_process_group("gloo")
model = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(4, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.1)
scaler = torch.cuda.amp.GradScaler()
for step in range(10):
    opt.zero_grad()
    for walk in range(args.walks):
        if args.amp is True:
            scaler.scale(model(torch.randn(2, 4)).sum()).backward()  # the amp backward
        else:
            model(torch.randn(2, 4)).sum().backward()  # the plain backward
    opt.step()
"""


def test_a_store_true_compared_with_true_is_off_at_launch(tmp_path):
    script = AMP_SIDES.replace("ACTION", "store_true")
    found = _codes(lint_tree(tmp_path, {"train.py": script}), "DDP805")
    assert [f.location.line for f in found] == [_line(script, "# the plain backward")]


def test_its_twin_a_store_false_is_on(tmp_path):
    script = AMP_SIDES.replace("ACTION", "store_false")
    found = _codes(lint_tree(tmp_path, {"train.py": script}), "DDP805")
    assert [f.location.line for f in found] == [_line(script, "# the amp backward")]


# -------------------------------------------------- a package that imports every module of its folder
# OpenGait's `models/__init__.py` loads each module by `import_module(f"{__name__}.{name}")` and
# keeps their classes in its namespace; the script picks one by a configured name
REGISTRY = """from importlib import import_module
from inspect import isclass
from pathlib import Path
from pkgutil import iter_modules

package_dir = Path(__file__).resolve().parent
for (_, module_name, _) in iter_modules([str(package_dir)]):
    module = import_module(f"{__name__}.{module_name}")
    for attribute_name in dir(module):
        attribute = getattr(module, attribute_name)
        if isclass(attribute):
            globals()[attribute_name] = attribute
"""
GAIT = """import torch
import torch.distributed as dist
from torch.utils.data import DataLoader, DistributedSampler, TensorDataset


class Gait(torch.nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.net = torch.nn.Linear(4, 1)
        ds = TensorDataset(torch.randn(64, 4))
        self.train_loader = DataLoader(ds, batch_size=8, sampler=DistributedSampler(ds, shuffle=True))  # the sampler

    def forward(self, x):
        return self.net(x)

    @staticmethod
    def run_train(model):
        for epoch in range(10):
            for (x,) in model.module.train_loader:
                model(x).sum().backward()
"""
# (and the blocks beside it, classes of their own: more than a configured name is picked among
# by its spelling alone)
BLOCKS = "import torch\n\n\n" + "\n\n".join(
    f"class Block{i}(torch.nn.Module):\n    def forward(self, x):\n        return x\n" for i in range(9))
MAIN = """import sys
import torch
import torch.distributed as dist
import yaml
from modeling import models


def config_loader(path):
    with open(path) as f:
        return yaml.safe_load(f)


def run(cfgs, training):
    dist.init_process_group("gloo")
    model_cfg = cfgs["model_cfg"]
    Model = getattr(models, model_cfg["model"])
    model = Model(cfgs)
    model = torch.nn.parallel.DistributedDataParallel(model)
    if training:
        Model.run_train(model)


if __name__ == "__main__":
    run(config_loader(sys.argv[1]), True)
"""


def test_a_class_a_self_loading_package_holds_is_judged(tmp_path):
    files = {"modeling/__init__.py": "", "modeling/models/__init__.py": REGISTRY, "modeling/models/Gait-Set.py": GAIT,
             "modeling/models/blocks.py": BLOCKS, "main.py": MAIN}
    found = _codes(lint_tree(tmp_path, files, script="main.py"), "DDP804")
    assert [(f.location.file.endswith("Gait-Set.py"), f.location.line) for f in found] == \
        [(True, _line(GAIT, "# the sampler"))]


def test_its_twin_a_package_that_loads_nothing_by_itself(tmp_path):
    files = {"modeling/__init__.py": "", "modeling/models/__init__.py": "# empty\n",
             "modeling/models/Gait-Set.py": GAIT, "modeling/models/blocks.py": BLOCKS, "main.py": MAIN}
    assert _codes(lint_tree(tmp_path, files, script="main.py"), "DDP804") == []


# -------------------------------------------------- a DDP subclass under its import alias
PASSTHROUGH = """import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP


class Passthrough(BASE):
    def __getattr__(self, name):
        try:
            return super().__getattr__(name)
        except AttributeError:
            return getattr(self.module, name)


dist.init_process_group("gloo")
model = Passthrough(torch.nn.Linear(4, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for step in range(64):
    model(torch.randn(2, 4)).sum().backward()  # the backward
    if (step + 1) % 4 == 0:
        opt.step()
"""


def test_a_subclass_of_ddp_by_its_alias_is_a_ddp_model(tmp_path):
    script = PASSTHROUGH.replace("BASE", "DDP")
    found = _codes(lint_tree(tmp_path, {"train.py": script}), "DDP805")
    assert [f.location.line for f in found] == [_line(script, "# the backward")]


def test_its_twin_a_plain_module_subclass(tmp_path):
    script = PASSTHROUGH.replace("BASE", "torch.nn.Module")
    assert _codes(lint_tree(tmp_path, {"train.py": script}), "DDP805") == []


# -------------------------------------------------- a BatchSampler given its sampler by keyword
BATCHED = """import torch
import torch.distributed as dist
from torch.utils.data import BatchSampler, DataLoader, DistributedSampler, TensorDataset


def get_loader(ds):
    base = DistributedSampler(ds, shuffle=True)  # the sampler
    batches = BatchSampler(sampler=base, batch_size=8, drop_last=True)
    return DataLoader(ds, batch_sampler=batches)


def endless(loader):
    while True:
        for batch in loader:
            yield batch


dist.init_process_group("gloo")
model = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(4, 1))
loader = get_loader(TensorDataset(torch.randn(64, 4)))
READ
"""
ENDLESS = """it = endless(loader)
for step in range(1000):
    (x,) = next(it)
    model(x).sum().backward()"""
ONCE = """for (x,) in loader:
    model(x).sum().backward()"""


def test_a_sampler_handed_to_batchsampler_by_keyword_feeds_its_loader(tmp_path):
    script = BATCHED.replace("READ", ENDLESS)
    found = _codes(lint_tree(tmp_path, {"train.py": script}), "DDP804")
    assert [f.location.line for f in found] == [_line(script, "# the sampler")]


def test_its_twin_a_loader_read_once(tmp_path):
    script = BATCHED.replace("READ", ONCE)
    assert _codes(lint_tree(tmp_path, {"train.py": script}), "DDP804") == []


# -------------------------------------------------- outputs unpacked from a name, then a module's loss
# `out = net(x)` through the wrapper, `feats, pred = out`, then `net.module.loss(pred, y)`: the
# loss of a DDP forward, computed by the module's own loss method
UNPACKED = """import torch
import torch.distributed as dist


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.body = torch.nn.Linear(4, 2)

    def forward(self, x):
        h = self.body(x)
        return h, h.sum(1)

    def loss(self, pred, y):
        return ((pred - y) ** 2).mean()


dist.init_process_group("gloo")
net = torch.nn.parallel.DistributedDataParallel(Net())
opt = torch.optim.SGD(net.parameters(), lr=0.1)
for step in range(10):
    out = FORWARD
    feats, pred = out
    loss = net.module.loss(pred, torch.zeros(2))
    loss.backward()  # the backward
    opt.step()
"""


def test_a_module_loss_of_outputs_the_wrapper_made_is_no_bypass(tmp_path):
    script = UNPACKED.replace("FORWARD", "net(torch.randn(2, 4))")
    assert _codes(lint_tree(tmp_path, {"train.py": script}), "DDP810") == []


def test_its_twin_outputs_the_module_made(tmp_path):
    script = UNPACKED.replace("FORWARD", "net.module(torch.randn(2, 4))")
    found = _codes(lint_tree(tmp_path, {"train.py": script}), "DDP810")
    assert [f.location.line for f in found] == [_line(script, "# the backward")]


# -------------------------------------------------- no_sync entered after a helper ran the forward
# `loss = compute(model, x)` runs the DDP forward inside the helper; `with model.no_sync():`
# around the backward alone then changes nothing
HELPER_FORWARD = """import contextlib
import torch
import torch.distributed as dist


def compute(model, x):
    return model(x).sum()


dist.init_process_group("gloo")
model = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(4, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.1)
accum = 4
for i in range(64):
    last = (i + 1) % accum == 0
    BODY
    if last:
        opt.step()
"""


def test_no_sync_after_a_helper_handed_the_model_ran_its_forward(tmp_path):
    script = HELPER_FORWARD.replace("BODY", """loss = compute(model, torch.randn(2, 4))
    with (contextlib.nullcontext() if last else model.no_sync()):
        loss.backward()  # the backward""")
    found = _codes(lint_tree(tmp_path, {"train.py": script}), "DDP805")
    assert [f.location.line for f in found] == [_line(script, "# the backward")]
    assert "after the forward" in found[0].message


def test_its_twin_the_helper_runs_inside_the_context(tmp_path):
    script = HELPER_FORWARD.replace("BODY", """with (contextlib.nullcontext() if last else model.no_sync()):
        loss = compute(model, torch.randn(2, 4))
        loss.backward()""")
    assert _codes(lint_tree(tmp_path, {"train.py": script}), "DDP805") == []


# -------------------------------------------------- a per-rank cache folder is no shard
PER_RANK = """import argparse
import torch
import torch.distributed as dist
from torch.utils.data import DataLoader, Dataset, DistributedSampler
from transformers import BertTokenizer


class Texts(Dataset):
    def __init__(self, tokenizer, files):
        self.tokenizer = tokenizer
        self.files = files

    def __len__(self):
        return len(self.files)

    def __getitem__(self, i):
        return torch.tensor(self.tokenizer.encode(self.files[i]))


parser = argparse.ArgumentParser()
parser.add_argument("--global_rank", type=int, default=0)
parser.add_argument("--world_size", type=int, default=1)
args = parser.parse_args()
dist.init_process_group("gloo", rank=args.global_rank, world_size=args.world_size)
rank, world = dist.get_rank(), dist.get_world_size()
tokenizer = BertTokenizer.from_pretrained("bert-base-uncased", cache_dir="out/.cache_{}".format(args.global_rank))
files = [f"part-{i}" for i in range(64)]
ds = Texts(tokenizer, FILES)
sampler = DistributedSampler(ds)  # the sampler
loader = DataLoader(ds, batch_size=4, sampler=sampler)
for epoch in range(2):
    sampler.set_epoch(epoch)
    for x in loader:
        pass
"""


def test_a_rank_in_a_cache_folder_is_no_shard(tmp_path):
    script = PER_RANK.replace("FILES", "files")
    assert _codes(lint_tree(tmp_path, {"train.py": script}), "DDP803") == []


def test_its_twin_files_split_by_rank(tmp_path):
    script = PER_RANK.replace("FILES", "files[rank::world]")
    found = _codes(lint_tree(tmp_path, {"train.py": script}), "DDP803")
    assert [f.location.line for f in found] == [_line(script, "# the sampler")]


# -------------------------------------------------- an unseeded split handed to a loader helper
# each spawned rank splits with its own generator; the helper's DistributedSampler then shards
# a different training set on each rank
SPLIT = """import torch
import torch.distributed as dist
import torch.multiprocessing as mp
from torch.utils.data import DataLoader, DistributedSampler, TensorDataset, random_split


def distributed_loader(dataset):
    return DataLoader(dataset, batch_size=8, sampler=DistributedSampler(dataset))  # the sampler


def run(rank, world):
    dist.init_process_group("gloo", rank=rank, world_size=world)
    full = TensorDataset(torch.randn(100, 4))
    train, val = random_split(full, [80, 20]GENERATOR)
    loader = distributed_loader(train)
    model = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(4, 1))
    for epoch in range(2):
        loader.sampler.set_epoch(epoch)
        for (x,) in loader:
            model(x).sum().backward()


if __name__ == "__main__":
    mp.spawn(run, args=(2,), nprocs=2)
"""


def test_an_unseeded_split_handed_to_a_loader_helper_is_drawn_apart(tmp_path):
    script = SPLIT.replace("GENERATOR", "")
    found = _codes(lint_tree(tmp_path, {"train.py": script}), "DDP803")
    assert [f.location.line for f in found] == [_line(script, "# the sampler")]


def test_its_twin_a_seeded_generator(tmp_path):
    script = SPLIT.replace("GENERATOR", ", generator=torch.Generator().manual_seed(0)")
    assert _codes(lint_tree(tmp_path, {"train.py": script}), "DDP803") == []


# -------------------------------------------------- evaluation closures in a list, run on rank 0
# decision-transformer's trainer: `for eval_fn in self.eval_fns: eval_fn(self.model)` under a
# rank test, the list built by a factory returning a closure that runs the model it is handed
CLOSURES = """import torch
import torch.distributed as dist


class Encoder(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.norm = torch.nn.BatchNorm1d(4)
        self.head = torch.nn.Linear(4, 1)

    def forward(self, x):
        return self.head(self.norm(x))


def make_eval(task):
    def fn(model):
        return FORWARD  # the evaluation forward
    return fn


class Trainer:
    def __init__(self, model, eval_fns=None):
        self.model = torch.nn.parallel.DistributedDataParallel(model)
        self.opt = torch.optim.SGD(self.model.parameters(), lr=0.1)
        self.eval_fns = [] if eval_fns is None else eval_fns

    def train(self):
        for epoch in range(10):
            self.model(torch.randn(8, 4)).sum().backward()
            self.opt.step()
            if dist.get_rank() == 0:
                for eval_fn in self.eval_fns:
                    eval_fn(self.model)


dist.init_process_group("gloo")
Trainer(Encoder(), eval_fns=[make_eval(t) for t in ("a", "b")]).train()
"""


def test_closures_in_a_list_run_the_wrapper_on_rank_zero(tmp_path):
    script = CLOSURES.replace("FORWARD", "model(torch.randn(8, 4))")
    found = _codes(lint_tree(tmp_path, {"train.py": script}), "DDP801")
    assert [f.location.line for f in found] == [_line(script, "# the evaluation forward")]


def test_its_twin_the_closures_run_the_module_inside(tmp_path):
    script = CLOSURES.replace("FORWARD", "model.module(torch.randn(8, 4))")
    assert _codes(lint_tree(tmp_path, {"train.py": script}), "DDP801") == []


# -------------------------------------------------- a trainer a TOML config names
# `instantiate(config["trainer"]["path"])` imports the module and class a `[trainer]` table's
# `path = "trainer_a.Trainer"` names; its step returns before the backward on a NaN loss
TOML_MAIN = """import importlib
import sys
import toml
import torch
import torch.distributed as dist


def instantiate(path):
    module, _, name = path.rpartition(".")
    return getattr(importlib.import_module(module), name)


def main(config_file):
    config = toml.load(config_file)
    dist.init_process_group("gloo")
    model = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(4, 1))
    trainer = instantiate(config["trainer"]["path"])(model)
    trainer.train()


main(sys.argv[1])
"""
TOML_TRAINER = """import torch


class Trainer:
    def __init__(self, model):
        self.model = model
        self.opt = torch.optim.SGD(model.parameters(), lr=0.1)

    def step(self, x):
        loss = self.model(x).sum()
        if torch.isnan(loss):  # the skip
            return None
        loss.backward()
        self.opt.step()

    def train(self):
        for i in range(100):
            self.step(torch.randn(2, 4))
"""


def test_a_trainer_a_toml_config_names_is_read(tmp_path):
    files = {"run.py": TOML_MAIN, "trainer_a.py": TOML_TRAINER,
             "conf/base.toml": '[trainer]\npath = "trainer_a.Trainer"\n'}
    found = _codes(lint_tree(tmp_path, files, script="run.py"), "DDP809")
    assert [(f.location.file.endswith("trainer_a.py"), f.location.line) for f in found] == \
        [(True, _line(TOML_TRAINER, "# the skip"))]


def test_its_twin_a_toml_that_names_no_module(tmp_path):
    files = {"run.py": TOML_MAIN, "trainer_a.py": TOML_TRAINER,
             "conf/base.toml": '[trainer]\nname = "adam"\n'}
    assert _codes(lint_tree(tmp_path, files, script="run.py"), "DDP809") == []


# -------------------------------------------------- a loss round the wrapper on one side of a stage
# a trainer's `forward(kwargs)` computes the cross-entropy loss through the wrapper, and in its
# self-critical stage samples through `self.model.module.decode(...)`: that stage's backward
# all-reduces nothing (a warning: the stage is switched on at run time)
STAGES = """import torch
import torch.distributed as dist


class Captioner(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.body = torch.nn.Linear(4, 4)

    def forward(self, x):
        return self.body(x)

    def decode(self, x):
        out = self.body(x)
        return out.argmax(1), out.log_softmax(1)


class Trainer:
    def __init__(self):
        self.model = torch.nn.parallel.DistributedDataParallel(Captioner())
        self.opt = torch.optim.SGD(self.model.parameters(), lr=0.1)
        self.rl_stage = False

    def forward(self, x):
        if self.rl_stage == False:
            logit = self.model(x)
            loss = logit.pow(2).mean()
        else:
            seq, logp = SAMPLE
            loss = -(logp * seq.unsqueeze(1).float()).mean()
        return loss, {}

    def train(self):
        for epoch in range(20):
            if epoch >= 10:
                self.rl_stage = True
            loss, info = self.forward(torch.randn(2, 4))
            loss.backward()  # the backward
            self.opt.step()


dist.init_process_group("gloo")
Trainer().train()
"""


def test_a_loss_round_the_wrapper_on_one_side_of_a_stage_is_a_warning(tmp_path):
    script = STAGES.replace("SAMPLE", "self.model.module.decode(x)")
    found = _codes(lint_tree(tmp_path, {"train.py": script}), "DDP810")
    assert [(f.location.line, f.severity.value) for f in found] == [(_line(script, "# the backward"), "warning")]
    assert "`self.rl_stage == False` is false" in found[0].message


def test_its_twin_both_stages_through_the_wrapper(tmp_path):
    script = STAGES.replace("SAMPLE", "self.model(x).argmax(1), self.model(x).log_softmax(1)")
    assert _codes(lint_tree(tmp_path, {"train.py": script}), "DDP810") == []
