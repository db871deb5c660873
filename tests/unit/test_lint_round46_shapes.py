"""Shapes from session 25 (holdout 25), each with its healthy twin, written in our own words."""

from __future__ import annotations

from tests.unit.test_lint_round17_shapes import lint_plain


def at(found, code: str) -> list:
    return sorted((f.location.line, f.severity.value) for f in found if f.code == code)


def line_of(source: str, marker: str) -> int:
    return next(i for i, line in enumerate(source.lstrip("\n").splitlines(), 1) if marker in line)


# -------------------------------------------------- a module global bound in a set-up function
GLOBAL_FLAG = """
import torch, torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

is_writer = None

def setup():
    global is_writer
    dist.init_process_group("gloo")
    is_writer = {value}

def main():
    model = DDP(torch.nn.Linear(2, 2))
    for epoch in range(3):
        model(torch.ones(1, 2)).sum().backward()
        if is_writer:
            torch.save(model.state_dict(), "last.pt")  # the save

if __name__ == "__main__":
    setup()
    main()
"""


def test_a_writer_flag_a_set_up_function_binds_as_global_is_the_rank_test(tmp_path):
    # `global is_writer` in setup(): main() reads the module's name, which setup made `rank == 0`
    assert at(lint_plain(tmp_path, GLOBAL_FLAG.replace("{value}", "dist.get_rank() == 0")), "DDP806") == []


def test_its_twin_a_global_flag_true_on_every_rank_saves_everywhere(tmp_path):
    code = GLOBAL_FLAG.replace("{value}", "True")
    assert at(lint_plain(tmp_path, code), "DDP806") == [(line_of(code, "# the save"), "warning")]


# -------------------------------------------------- `rank test or distributed switch`
OR_SWITCH = """
import argparse, torch, torch.distributed as dist

def validate(model):
    loss = torch.zeros(1)
    dist.all_reduce(loss)
    return loss

def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--distributed", action="store_true")
    parser.add_argument("--verbose", action="store_true")
    args = parser.parse_args()
    dist.init_process_group("gloo")
    model = torch.nn.Linear(2, 2)
    for epoch in range(3):
        if dist.get_rank() == 0 or args.{flag}:
            validate(model)  # the validation

main()
"""


def test_a_rank_test_or_the_distributed_switch_holds_on_every_rank_of_a_distributed_run(tmp_path):
    assert at(lint_plain(tmp_path, OR_SWITCH.replace("{flag}", "distributed")), "DDP801") == []


def test_its_twin_a_rank_test_or_another_option_runs_the_collective_on_rank_0(tmp_path):
    assert at(lint_plain(tmp_path, OR_SWITCH.replace("{flag}", "verbose")), "DDP801") != []


# -------------------------------------------------- the None side of a constructor's object
STOPPER = """
import torch, torch.distributed as dist
from accelerate import Accelerator

class Stopper:
    def __init__(self, patience, accelerator=None):
        self.patience = patience
        self.accelerator = accelerator

    def save(self, model, path):
        if self.accelerator is not None:
            model = self.accelerator.unwrap_model(model)
            if self.accelerator.is_main_process:
                torch.save(model.state_dict(), path)  # the main process's save
        else:
            torch.save(model.state_dict(), path)  # the plain save

def main():
    accelerator = Accelerator()
    model = accelerator.prepare(torch.nn.Linear(2, 2))
    stopper = Stopper(3{given})
    for epoch in range(3):
        stopper.save(model, "best.pt")

main()
"""


def test_the_none_side_of_an_attribute_every_construction_gives_an_object_is_never_taken(tmp_path):
    assert at(lint_plain(tmp_path, STOPPER.replace("{given}", ", accelerator=accelerator")), "DDP806") == []


def test_its_twin_left_at_its_default_none_the_plain_save_runs_on_every_rank(tmp_path):
    code = STOPPER.replace("{given}", "")
    assert (line_of(code, "# the plain save"), "warning") in at(lint_plain(tmp_path, code), "DDP806")


# -------------------------------------------------- a break on the side a built object never takes
TRIGGER = """
import torch, torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

class Trigger:
    def set(self):
        pass

class Trainer:
    def __init__(self, model, trigger=None):
        self.model = model
        self.trigger = trigger
        self.stale = 0

    def run(self):
        for epoch in range(10):
            self.model(torch.ones(1, 2)).sum().backward()
            if dist.get_rank() == 0 and epoch > 5:
                if self.trigger:
                    self.trigger.set()
                else:
                    break  # rank 0 leaves

def main():
    dist.init_process_group("gloo")
    Trainer(DDP(torch.nn.Linear(2, 2)){given}).run()

main()
"""


def test_a_break_on_the_side_every_construction_rules_out_is_no_rank_exit(tmp_path):
    assert at(lint_plain(tmp_path, TRIGGER.replace("{given}", ", trigger=Trigger()")), "DDP809") == []


def test_its_twin_without_the_object_rank_0_leaves_the_loop(tmp_path):
    assert at(lint_plain(tmp_path, TRIGGER.replace("{given}", "")), "DDP809") != []


# -------------------------------------------------- rank state returned as a tuple's item
RESUME = """
import os, torch, torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

def setup(path):
    stats = {"epoch": 0}
    model = torch.nn.Linear(2, 2)
    if dist.get_rank() == 0 and os.path.exists(path):
        stats = torch.load(path)["stats"]
{share}    return model, stats

def main():
    dist.init_process_group("gloo")
    model, stats = setup("last.ckpt")
    model = DDP(model)
    for epoch in range(stats["epoch"] + 1, 10):  # the epochs
        model(torch.ones(1, 2)).sum().backward()

main()
"""


def test_a_resume_record_rank_0_loads_and_a_helper_returns_decides_the_epochs(tmp_path):
    code = RESUME.replace("{share}", "")
    assert at(lint_plain(tmp_path, code), "DDP809") == [(line_of(code, "# the epochs"), "warning")]


def test_its_twin_the_record_broadcast_before_it_is_returned_is_shared(tmp_path):
    code = RESUME.replace("{share}", "    box = [stats]\n    dist.broadcast_object_list(box)\n    stats = box[0]\n")
    assert at(lint_plain(tmp_path, code), "DDP809") == []


INLINE_RESUME = """
import os, torch, torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

def main():
    dist.init_process_group("gloo")
    stats = {"epoch": 0}
    if {test}:
        stats = torch.load("last.ckpt")["stats"]
    model = DDP(torch.nn.Linear(2, 2))
    for epoch in range(stats["epoch"] + 1, 10):  # the epochs
        model(torch.ones(1, 2)).sum().backward()

main()
"""


def test_a_dict_of_constants_is_an_initial_value_rank_0_alone_replaces(tmp_path):
    code = INLINE_RESUME.replace("{test}", "dist.get_rank() == 0")
    assert [line for line, _ in at(lint_plain(tmp_path, code), "DDP809")] == [line_of(code, "# the epochs")]


def test_its_twin_every_rank_loads_the_record(tmp_path):
    assert at(lint_plain(tmp_path, INLINE_RESUME.replace("{test}", "os.path.exists('last.ckpt')")), "DDP809") == []


# -------------------------------------------------- each rank's own group, set in a loop over the groups
GROUPS = """
import torch, torch.distributed as dist

class Group:
    def __init__(self, groups):
        self.rank = dist.get_rank()
        self.world_size = 1
        for ranks in groups:
            handle = dist.new_group(ranks)
            if {test}:
                self.world_size = len(ranks)
                self.handle = handle

    def share(self, t):
        if self.world_size > 1:  # the test
            dist.broadcast(t, src=0)
        return t

def main():
    dist.init_process_group("gloo")
    group = Group([[0, 1], [2, 3]])
    for step in range(3):
        group.share(torch.ones(1))

main()
"""


def test_a_field_each_rank_sets_on_the_pass_over_its_own_group_is_no_rank_state(tmp_path):
    assert at(lint_plain(tmp_path, GROUPS.replace("{test}", "self.rank in ranks")), "DDP809") == []


def test_its_twin_a_field_rank_0_alone_sets_decides_the_broadcast(tmp_path):
    code = GROUPS.replace("{test}", "self.rank == 0")
    assert [line for line, _ in at(lint_plain(tmp_path, code), "DDP809")] == [line_of(code, "# the test")]


# -------------------------------------------------- a config key holding what init_process_group got as rank=
CONFIG_RANK = """
import argparse, torch, torch.distributed as dist

class Trainer:
    def __init__(self, config):
        self.config = config

    def save(self, model):
        if self.config['local_rank'] == 0:
            torch.save(model.state_dict(), "model.pt")  # the save

def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--local_rank", type=int, default=0)
    parser.add_argument("--nnodes", type=int, default=1)  # a job on several nodes
    args = parser.parse_args()
    config = {}
    dist.init_process_group("nccl", world_size=torch.cuda.device_count(){rank})
    config['local_rank'] = args.local_rank
    Trainer(config).save(torch.nn.Linear(2, 2))

main()
"""


def test_a_config_key_copied_from_the_rank_init_process_group_got_is_the_global_rank(tmp_path):
    assert at(lint_plain(tmp_path, CONFIG_RANK.replace("{rank}", ", rank=args.local_rank")), "DDP806") == []


def test_its_twin_a_local_rank_the_group_never_got_is_one_writer_per_node(tmp_path):
    code = CONFIG_RANK.replace("{rank}", "")
    assert at(lint_plain(tmp_path, code), "DDP806") == [(line_of(code, "# the save"), "warning")]


# -------------------------------------------------- Accelerate's launch config picks DeepSpeed
SAVE_STATE = """
import torch
from accelerate import Accelerator

def main():
    accelerator = Accelerator()
    model, opt = accelerator.prepare(torch.nn.Linear(2, 2), torch.optim.SGD([torch.zeros(1)], lr=0.1))
    for epoch in range(3):
        accelerator.backward(model(torch.ones(1, 2)).sum())
        opt.step()
        if accelerator.is_main_process:
            accelerator.save_state("ckpt")  # the save

main()
"""


def test_save_state_on_the_main_process_under_a_deepspeed_launch_config_is_reported(tmp_path):
    (tmp_path / "configs").mkdir()
    (tmp_path / "configs" / "launch.yaml").write_text("compute_environment: LOCAL_MACHINE\ndistributed_type: DEEPSPEED\n")
    assert at(lint_plain(tmp_path, SAVE_STATE), "DDP801") == [(line_of(SAVE_STATE, "# the save"), "warning")]


def test_its_twin_a_multi_gpu_launch_config_saves_from_the_main_process(tmp_path):
    (tmp_path / "configs").mkdir()
    (tmp_path / "configs" / "launch.yaml").write_text("compute_environment: LOCAL_MACHINE\ndistributed_type: MULTI_GPU\n")
    assert at(lint_plain(tmp_path, SAVE_STATE), "DDP801") == []


# -------------------------------------------------- a step right after the backward on the same side
SIDES = """
import torch, torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

def train(model, opt, scaler_step, use_amp, every):
    for i in range(10):
        loss = model(torch.ones(1, 2)).sum()
        if use_amp:
            scaler_step(loss, opt)
        else:
            opt.zero_grad()
            loss.backward()  # the backward
{step}

def main():
    dist.init_process_group("gloo")
    model = DDP(torch.nn.Linear(2, 2))
    train(model, torch.optim.SGD(model.parameters(), lr=0.1), None, False, 4)

main()
"""


def test_a_step_that_follows_its_own_backward_on_the_same_side_is_no_accumulation(tmp_path):
    assert at(lint_plain(tmp_path, SIDES.replace("{step}", "            opt.step()")), "DDP805") == []


def test_its_twin_a_step_every_k_passes_on_that_side_accumulates(tmp_path):
    # (the gradients cleared with the step, not before every backward on that side: a
    # zero_grad beside the backward on every pass it runs leaves nothing to accumulate)
    code = SIDES.replace("            opt.zero_grad()\n", "").replace(
        "{step}", "            if (i + 1) % every == 0:\n                opt.step()\n                opt.zero_grad()")
    assert at(lint_plain(tmp_path, code), "DDP805") == [(line_of(code, "# the backward"), "warning")]


# -------------------------------------------------- a module found through the first of two fallback imports
FALLBACK = """
import torch, torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
try:
    from parts import rotary
except ImportError:
    import rotary

class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.rot = rotary.Rotary()
        self.fc = torch.nn.Linear(2, 2)

    def forward(self, x):
        return self.fc(self.rot(x))

def main():
    dist.init_process_group("gloo")
    model = DDP(Net())
    for step in range(3):
        model(torch.ones(1, 2)).sum().backward()
    if dist.get_rank() == 0:
        with torch.no_grad():
            model(torch.ones(1, 2))  # the evaluation

main()
"""

ROTARY = """
import torch

class Rotary(torch.nn.Module):
    def __init__(self):
        super().__init__()
        {body}

    def forward(self, x):
        return x
"""


def _fallback(tmp_path, body: str):
    (tmp_path / "parts").mkdir()
    (tmp_path / "parts" / "__init__.py").write_text("")
    (tmp_path / "parts" / "rotary.py").write_text(ROTARY.replace("{body}", body))
    return lint_plain(tmp_path, FALLBACK)


def test_the_first_of_two_fallback_imports_names_the_module_with_the_buffer(tmp_path):
    found = _fallback(tmp_path, "self.register_buffer('inv_freq', torch.ones(2))")
    assert at(found, "DDP801") == [(line_of(FALLBACK, "# the evaluation"), "warning")]


def test_its_twin_a_module_without_buffers_broadcasts_nothing_in_the_forward(tmp_path):
    assert at(_fallback(tmp_path, "self.scale = 2.0"), "DDP801") == []


# -------------------------------------------------- a DataLoader subclass calling the base constructor
BASE_INIT = """
import numpy as np, torch, torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, DistributedSampler, TensorDataset

def seed_worker(worker_id):
    np.random.seed({seed})

class Loader(DataLoader):
    def __init__(self, dataset):
        DataLoader.__init__(self, dataset, batch_size=4, sampler=DistributedSampler(dataset),
                            num_workers=4, worker_init_fn=seed_worker)  # the loader

def main():
    dist.init_process_group("gloo")
    model = DDP(torch.nn.Linear(2, 2))
    loader = Loader(TensorDataset(torch.randn(32, 2)))
    for epoch in range(2):
        loader.sampler.set_epoch(epoch)
        for (x,) in loader:
            model(x).sum().backward()

main()
"""


def test_a_loader_built_through_the_base_constructor_has_its_worker_seeding_judged(tmp_path):
    assert at(lint_plain(tmp_path, BASE_INIT.replace("{seed}", "worker_id")), "DDP808") != []


def test_its_twin_a_worker_seed_with_the_rank_in_it(tmp_path):
    code = BASE_INIT.replace("{seed}", "worker_id + 100 * dist.get_rank()")
    assert at(lint_plain(tmp_path, code), "DDP808") == []


# -------------------------------------------------- a constant every construction hands on picks the run
ENV_SWITCH = """
import torch, torch.distributed as dist
from torch.utils.data import DataLoader, DistributedSampler, TensorDataset

env = "DDP"  # a setting the user edits: both of its sides are judged

class Trainer:
    def __init__(self, env_type):
        self.env_type = env_type
        if env_type == "DDP" or env_type == "ddp":
            dist.init_process_group("nccl")

    def loader(self, ds):
        if self.env_type == "pytorch":
            return DataLoader(ds, batch_size=4, shuffle=True)
        return DataLoader(ds, batch_size=4, sampler=DistributedSampler(ds))

    def train(self):
        model = torch.nn.Linear(2, 2)
        if self.env_type != "pytorch":
            model = torch.nn.parallel.DistributedDataParallel(model)
        loader = self.loader(TensorDataset(torch.randn(16, 2)))
        for epoch in range(3):
            for (x,) in loader:
                model(x).sum().backward()
            torch.save(model.state_dict(), "last.pt")  # the save

class Seg(Trainer):
    def __init__(self, env_type):
        super().__init__(env_type)

if __name__ == "__main__":
    Seg(env_type={env}).train()
"""


def test_a_constant_every_construction_hands_on_leaves_the_group_unset(tmp_path):
    found = lint_plain(tmp_path, ENV_SWITCH.replace("{env}", '"pytorch"'))
    assert [f.code for f in found if f.severity.value in ("error", "warning")] == []


def test_its_twin_the_constant_that_picks_ddp_is_judged(tmp_path):
    code = ENV_SWITCH.replace("{env}", '"DDP"')
    found = lint_plain(tmp_path, code)
    assert (line_of(code, "# the save"), "warning") in at(found, "DDP806")
    assert at(found, "DDP804") != []


def test_a_module_level_setting_the_user_edits_leaves_both_sides_judged(tmp_path):
    # `env = "pytorch"` at the top of a script is what its user sets ("DDP" for a distributed
    # run, as a training script's comments say): the DDP side stays judged
    code = ENV_SWITCH.replace('env = "DDP"', 'env = "pytorch"').replace("{env}", "env")
    found = lint_plain(tmp_path, code)
    assert (line_of(code, "# the save"), "warning") in at(found, "DDP806")
    assert at(found, "DDP804") != []


# -------------------------------------------------- a rank read from the environment with an `or 0` fallback
ENV_RANK = """
import os, torch, torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

def world_rank():
    return int(os.environ.get("OMPI_COMM_WORLD_RANK"){fallback})

def main():
    dist.init_process_group("gloo")
    rank = world_rank()
    model = DDP(torch.nn.Linear(2, 2))
    for epoch in range(3):
        model(torch.ones(1, 2)).sum().backward()
        if rank == 0:
            torch.save(model.state_dict(), "last.pt")  # the save

main()
"""


def test_an_environment_rank_with_an_or_0_fallback_is_the_rank(tmp_path):
    assert at(lint_plain(tmp_path, ENV_RANK.replace("{fallback}", " or 0")), "DDP806") == []


def test_its_twin_a_setting_with_an_or_0_fallback_is_no_rank(tmp_path):
    code = ENV_RANK.replace('"OMPI_COMM_WORLD_RANK"){fallback}', '"SAVE_EVERY") or 0')
    assert at(lint_plain(tmp_path, code), "DDP806") == [(line_of(code, "# the save"), "warning")]


# -------------------------------------------------- a DataLoader subclass with keywords of its own
OWN_KEYWORDS = """
import argparse, torch, torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, Dataset, DistributedSampler

class Masked(Dataset):
    def __len__(self):
        return 64

    def __getitem__(self, i):
        return torch.rand(4) < 0.5

class StageLoader(DataLoader):
    def __init__(self, *args, stage="train", **kwargs):
        super().__init__(*args, **kwargs)
        self.stage = stage

def main(seed):
    dist.init_process_group("gloo")
    torch.manual_seed({seed})
    data = Masked()
    sampler = DistributedSampler(data)
    loader = StageLoader(data, stage="train", sampler=sampler, batch_size=4, num_workers=4)  # the loader
    model = DDP(torch.nn.Linear(4, 1))
    for epoch in range(2):
        sampler.set_epoch(epoch)
        for x in loader:
            model(x.float()).sum().backward()

main(0)
"""


def test_a_loader_subclass_that_hands_the_rest_on_is_judged_as_a_dataloader(tmp_path):
    code = OWN_KEYWORDS.replace("{seed}", "seed")
    assert at(lint_plain(tmp_path, code), "DDP808") == [(line_of(code, "# the loader"), "warning")]


def test_its_twin_ranks_seeded_apart(tmp_path):
    assert at(lint_plain(tmp_path, OWN_KEYWORDS.replace("{seed}", "seed + dist.get_rank()")), "DDP808") == []


# -------------------------------------------------- a runner picked by an if-chain of assignments
RUNNERS = """
import sys, torch, torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

class Trainer:
    def __init__(self, net):
        self.net = DDP(net)

    def run(self):
        for epoch in range(3):
            self.net(torch.ones(1, 2)).sum().backward()
            {guard}torch.save(self.net.module.state_dict(), "last.pt")  # the save

class Predictor:
    def __init__(self, net):
        self.net = net

    def run(self):
        with torch.no_grad():
            return self.net(torch.ones(1, 2))

def main(mode):
    dist.init_process_group("gloo")
    net = torch.nn.Linear(2, 2)
    if mode == "train":
        runner = Trainer(net)
    if mode == "predict":
        runner = Predictor(net)
    runner.run()

main(sys.argv[1])
"""


def test_a_method_of_every_class_an_if_chain_may_bind_is_reached(tmp_path):
    code = RUNNERS.replace("{guard}", "")
    assert at(lint_plain(tmp_path, code), "DDP806") == [(line_of(code, "# the save"), "warning")]


def test_its_twin_the_training_runner_saves_on_rank_0(tmp_path):
    code = RUNNERS.replace("{guard}", "if dist.get_rank() == 0: ")
    assert at(lint_plain(tmp_path, code), "DDP806") == []


# -------------------------------------------------- a DataLoader subclass that builds its own loader
SUPER_LOADER = """
import torch, torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, Dataset, DistributedSampler

class Crops(Dataset):
    def __len__(self):
        return 64

    def __getitem__(self, i):
        top = torch.randint(0, 8, (1,)).item()
        return torch.ones(16)[top:top + 8]

class TrainLoader(DataLoader):
    def __init__(self, batch_size, workers):
        dataset = Crops()
        super().__init__(dataset, batch_size=batch_size, sampler=DistributedSampler(dataset),
                         num_workers=workers)  # the loader

def main():
    torch.manual_seed({seed})
    dist.init_process_group("gloo")
    loader = TrainLoader(8, 4)
    model = DDP(torch.nn.Linear(8, 1))
    for epoch in range(2):
        loader.sampler.set_epoch(epoch)
        for x in loader:
            model(x).sum().backward()

main()
"""


def test_the_base_constructor_call_of_a_loader_subclass_is_the_loader(tmp_path):
    code = SUPER_LOADER.replace("{seed}", "10")
    assert [line for line, _ in at(lint_plain(tmp_path, code), "DDP808")] == [line_of(code, "super().__init__(dataset")]


def test_its_twin_seeded_per_rank(tmp_path):
    code = SUPER_LOADER.replace("torch.manual_seed({seed})\n    dist.init_process_group(\"gloo\")",
                                "dist.init_process_group(\"gloo\")\n    torch.manual_seed(10 + dist.get_rank())")
    assert at(lint_plain(tmp_path, code), "DDP808") == []


# -------------------------------------------------- a config table's dataset entry, not its neighbours
TABLE = """
import torch, torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, Dataset, DistributedSampler

class Rows(Dataset):
    def __len__(self):
        return 64

    def __getitem__(self, i):
        return {draw}

class Noise(torch.nn.Module):
    def forward(self, x):
        return x + torch.randn_like(x)

config = {"dataset": Rows, "model": {"noise": Noise}}

def main():
    torch.manual_seed(0)
    dist.init_process_group("gloo")
    data = config["dataset"]()
    loader = DataLoader(data, batch_size=4, sampler=DistributedSampler(data), num_workers=4)  # the loader
    model = DDP(torch.nn.Sequential(torch.nn.Linear(4, 4), config["model"]["noise"]()))
    for epoch in range(2):
        loader.sampler.set_epoch(epoch)
        for x in loader:
            model(x).sum().backward()

main()
"""


def test_a_noise_module_beside_the_dataset_in_a_config_table_draws_nothing_in_the_workers(tmp_path):
    assert at(lint_plain(tmp_path, TABLE.replace("{draw}", "torch.ones(4) * i")), "DDP808") == []


def test_its_twin_the_dataset_entry_itself_draws(tmp_path):
    code = TABLE.replace("{draw}", "torch.rand(4)")
    assert at(lint_plain(tmp_path, code), "DDP808") == [(line_of(code, "# the loader"), "warning")]


# -------------------------------------------------- a per-rank folder kept in a dict entry of the object
RUN_LOG = """
import os, torch, torch.distributed as dist

class RunLog:
    def __init__(self):
        self.rank = dist.get_rank()
        self.info = {}

    def open_folder(self, stamp):
        self.info["dir"] = os.path.join("runs", stamp{part})

    def keep(self, net):
        torch.save(net.state_dict(), os.path.join(self.info["dir"], "weights.pth"))  # the save

def main():
    dist.init_process_group("gloo")
    net = torch.nn.Linear(4, 2)
    log = RunLog()
    log.open_folder("today")
    log.keep(net)

main()
"""


def test_a_folder_stored_per_rank_in_a_dict_entry_makes_the_path_the_ranks_own(tmp_path):
    assert at(lint_plain(tmp_path, RUN_LOG.replace("{part}", ', f"rank{self.rank}"')), "DDP806") == []


def test_its_twin_one_folder_for_every_rank(tmp_path):
    code = RUN_LOG.replace("{part}", "")
    assert at(lint_plain(tmp_path, code), "DDP806") == [(line_of(code, "# the save"), "warning")]


# -------------------------------------------------- two builders that both call their sampler `order`
BUILDERS = """
import torch, torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, DistributedSampler

class Points(torch.utils.data.Dataset):
    def __init__(self, n):
        self.x = torch.randn(n, 3)

    def batches(self, size):
        order = DistributedSampler(self)  # the training sampler
        return DataLoader(self, batch_size=size, sampler=order)

    def check_batches(self, size):
        order = DistributedSampler(self)
        return DataLoader(self, batch_size=size, sampler=order)

    def __getitem__(self, i):
        return self.x[i]

    def __len__(self):
        return len(self.x)

def main():
    dist.init_process_group("gloo")
    data = Points(64)
    net = DDP(torch.nn.Linear(3, 1))
    for epoch in range(3):
        loader = data.batches(8)
        {set_epoch}for x in loader:
            net(x).sum().backward()
        for x in data.check_batches(8):
            with torch.no_grad():
                net(x)

main()
"""


def test_the_training_builders_sampler_is_judged_by_its_own_loader(tmp_path):
    code = BUILDERS.replace("{set_epoch}", "")
    assert at(lint_plain(tmp_path, code), "DDP804") == [(line_of(code, "# the training sampler"), "warning")]


def test_its_twin_the_epoch_set_on_the_training_loader(tmp_path):
    code = BUILDERS.replace("{set_epoch}", "loader.sampler.set_epoch(epoch)\n        ")
    assert at(lint_plain(tmp_path, code), "DDP804") == []


# -------------------------------------------------- the options object a trainer keeps as self.opts
KEPT_OPTS = """
import argparse, torch, torch.distributed as dist

class Trainer:
    def __init__(self, opts):
        self.opts = opts

    def save(self, net):
        if self.opts.local_rank <= 0:
            torch.save(net.state_dict(), "net.pt")  # the save

def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--local_rank", type=int, default=-1)
    parser.add_argument("--nnodes", type=int, default=1)  # a job on several nodes
    opts = parser.parse_args()
    dist.init_process_group("nccl", world_size=torch.cuda.device_count(){rank})
    Trainer(opts).save(torch.nn.Linear(2, 2))

main()
"""


def test_the_rank_init_process_group_got_read_through_the_kept_options_is_the_jobs(tmp_path):
    assert at(lint_plain(tmp_path, KEPT_OPTS.replace("{rank}", ", rank=opts.local_rank")), "DDP806") == []


def test_its_twin_a_local_rank_the_group_never_got(tmp_path):
    code = KEPT_OPTS.replace("{rank}", "")
    assert at(lint_plain(tmp_path, code), "DDP806") == [(line_of(code, "# the save"), "warning")]


# -------------------------------------------------- a builder's (loader, dataset) unpacked into fields
FIELDS = """
import numpy as np, torch, torch.distributed as dist
from torch.utils.data import DataLoader, Dataset, DistributedSampler

class Frames(Dataset):
    def __len__(self):
        return 64

    def __getitem__(self, i):
        return torch.full((3,), float(np.random.uniform(1.0, 2.0)))

def build():
    data = Frames()
    loader = DataLoader(data, batch_size=8, num_workers=4, sampler=DistributedSampler(data))  # the loader
    return loader, data

class Trainer:
    def train(self):
        model = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(3, 1))
        self.loader, self.data = build()
        for epoch in range(2):
            self.loader.sampler.set_epoch(epoch)
            for x in self.loader:
                model(x).sum().backward()

def main():
    dist.init_process_group("gloo")
    {seed}
    Trainer().train()

main()
"""


def test_a_loader_a_builder_returns_into_an_objects_field_is_the_training_loader(tmp_path):
    code = FIELDS.replace("{seed}", "torch.manual_seed(0); np.random.seed(0)")
    assert at(lint_plain(tmp_path, code), "DDP808") == [(line_of(code, "# the loader"), "warning")]


def test_its_twin_the_fields_loader_with_ranks_seeded_apart(tmp_path):
    code = FIELDS.replace("{seed}", "torch.manual_seed(dist.get_rank()); np.random.seed(dist.get_rank())")
    assert at(lint_plain(tmp_path, code), "DDP808") == []


# -------------------------------------------------- a rank's own validation loss handed back in a tuple
PATIENCE = """
import torch, torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

class Runner:
    def __init__(self, net, data):
        self.net, self.data = DDP(net), data

    def evaluate(self):
        total, n = 0.0, 0
        with torch.no_grad():
            for x in self.data:
                total += self.net(x).sum().item()
                n += 1
        {share}return total / max(1, n), n

    def fit(self):
        best, misses = float("inf"), 0
        for epoch in range(20):
            self.net(torch.ones(1, 4)).sum().backward()
            val, _ = self.evaluate()
            if val < best:
                best, misses = val, 0
            else:
                misses += 1
                if misses >= 3:  # the patience
                    break

def main():
    dist.init_process_group("gloo")
    Runner(torch.nn.Linear(4, 1), [torch.randn(2, 4)]).fit()

main()
"""


def test_a_rank_own_loss_from_a_tuple_a_helper_returns_decides_the_break(tmp_path):
    code = PATIENCE.replace("{share}", "")
    assert [line for line, _ in at(lint_plain(tmp_path, code), "DDP809")] == [line_of(code, "# the patience")]


def test_its_twin_the_loss_all_reduced_before_it_is_returned(tmp_path):
    code = PATIENCE.replace("{share}", "t = torch.tensor([total]); dist.all_reduce(t); total = t.item()\n        ")
    assert at(lint_plain(tmp_path, code), "DDP809") == []


# -------------------------------------------------- the backward past rank 0's own early stop
EARLY = """
import torch, torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

def main():
    dist.init_process_group("gloo")
    model = DDP(torch.nn.Linear(2, 1))
    last_better, steps = 0, 0
    for epoch in range(20):
        if {test}:  # the stop
            break
        model(torch.ones(1, 2)).sum().backward()
        steps += 1
        if dist.get_rank() == 0 and steps % 4 == 0:
            last_better = epoch

main()
"""


def test_the_backward_after_rank_0s_own_stop_is_that_stops_consequence(tmp_path):
    code = EARLY.replace("{test}", "dist.get_rank() == 0 and epoch - last_better > 2")
    found = lint_plain(tmp_path, code)
    assert [line for line, _ in at(found, "DDP809")] == [line_of(code, "# the stop")]
    assert at(found, "DDP801") == []


def test_its_twin_a_stop_every_rank_takes_alike(tmp_path):
    assert at(lint_plain(tmp_path, EARLY.replace("{test}", "epoch > 10")), "DDP809") == []


# -------------------------------------------------- a mode of the script that starts no Lightning ranks
MODES = """
import argparse, torch
import pytorch_lightning as pl

def average():
    torch.save({"w": torch.zeros(1)}, "averaged.ckpt")  # the save

def train():
    trainer = pl.Trainer(accelerator="gpu", devices=2, strategy="ddp")
    trainer.fit(None)

def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--mode", default="train")
    args = parser.parse_args()
    if args.mode == "train":
        train()
    {other}
        average()

main()
"""


def test_a_mode_apart_from_the_one_that_starts_lightnings_ranks_writes_alone(tmp_path):
    code = MODES.replace("{other}", 'elif args.mode == "average":')
    assert at(lint_plain(tmp_path, code), "DDP806") == []


def test_its_twin_the_write_after_the_training_runs_on_every_rank(tmp_path):
    code = MODES.replace("{other}", "if True:")
    assert at(lint_plain(tmp_path, code), "DDP806") == [(line_of(code, "# the save"), "warning")]


# -------------------------------------------------- a collate function that draws through a helper
COLLATE = """
import numpy as np, torch, torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, Dataset, DistributedSampler

def pick(n):
    return {pick}

def collate(items, train):
    return torch.tensor([float(pick(it)) if train else float(it) for it in items])

class Clips(Dataset):
    def __len__(self):
        return 64

    def __getitem__(self, i):
        return 32

def main():
    dist.init_process_group("gloo")
    torch.manual_seed(0)
    data = Clips()
    loader = DataLoader(data, batch_size=4, sampler=DistributedSampler(data), num_workers=4,
                        collate_fn=lambda b: collate(b, train=True))  # the loader
    model = DDP(torch.nn.Linear(4, 1))
    for epoch in range(2):
        loader.sampler.set_epoch(epoch)
        for x in loader:
            model(x.view(-1, 4)).sum().backward()

main()
"""


def test_a_lambda_collate_whose_helper_draws_draws_in_the_workers(tmp_path):
    code = COLLATE.replace("{pick}", "np.random.randint(n // 2, n + 1)")
    assert [line for line, _ in at(lint_plain(tmp_path, code), "DDP808")] == [line_of(code, "loader = DataLoader(")]


def test_its_twin_a_collate_that_draws_nothing(tmp_path):
    assert at(lint_plain(tmp_path, COLLATE.replace("{pick}", "n // 2")), "DDP808") == []


# -------------------------------------------------- state kept in a dict, read by a method's answer
CACHE_STATE = """
import torch, torch.distributed as dist
import torch.multiprocessing as mp
from torch.nn.parallel import DistributedDataParallel as DDP

class Trainer:
    def __init__(self, args):
        self.args = args
        self.cache = {"best": 0.0, "best_epoch": 0}
        self.model = DDP(torch.nn.Linear(4, 2))

    def keep_best(self, epoch, score):
        if score > self.cache["best"]:
            self.cache["best"] = score
            self.cache["best_epoch"] = epoch

    def stop_early(self, epoch):
        return epoch - self.cache["best_epoch"] >= 3

    def train(self):
        for epoch in range(10):
            loss = self.model(torch.randn(8, 4)).sum()
            loss.backward()
            {keep}
            if self.stop_early(epoch):  # the stop
                break

def worker(gpu, args):
    args["is_master"] = gpu == 0
    dist.init_process_group("gloo", world_size=2, rank=gpu)
    Trainer(args).train()

if __name__ == "__main__":
    mp.spawn(worker, nprocs=2, args=({},))
"""


def test_a_record_the_master_alone_updates_decides_every_ranks_stop(tmp_path):
    code = CACHE_STATE.replace("{keep}", 'if self.args["is_master"]:\n                self.keep_best(epoch, loss.item())')
    assert [line for line, _ in at(lint_plain(tmp_path, code), "DDP809")] == [line_of(code, "# the stop")]


def test_its_twin_every_rank_keeps_the_record(tmp_path):
    code = CACHE_STATE.replace("{keep}", "score = loss.detach(); dist.all_reduce(score); self.keep_best(epoch, score.item())")
    assert at(lint_plain(tmp_path, code), "DDP809") == []


# -------------------------------------------------- which side's backward an accumulation finding names
SIDES_FP16 = """
import torch, torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

def train(cfg, scaler):
    dist.init_process_group("gloo")
    model = DDP(torch.nn.Linear(4, 4))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for step in range(1, 20):
        loss = model(torch.ones(1, 4)).sum()
        if cfg["fp16"]:
            scaler.scale(loss).backward()  # the scaled backward
        else:
            loss.backward()  # the plain backward
        if step % 4 == 0:
            opt.step()

train({CFG}, None)
"""


def test_the_side_a_callers_dict_turns_off_is_not_named(tmp_path):
    code = SIDES_FP16.replace("{CFG}", '{"fp16": False}')
    assert at(lint_plain(tmp_path, code), "DDP805") == [(line_of(code, "# the plain backward"), "warning")]


def test_the_side_the_callers_dict_picks_is_named(tmp_path):
    code = SIDES_FP16.replace("{CFG}", '{"fp16": True}')
    assert at(lint_plain(tmp_path, code), "DDP805") == [(line_of(code, "# the scaled backward"), "warning")]


# -------------------------------------------------- one batch drawn from a plain loader to build a dataset
ONE_BATCH = """
import os, torch, torch.distributed as dist
from torch.utils.data import DataLoader, Dataset, DistributedSampler, TensorDataset

class Repeat(Dataset):
    def __init__(self, batch):
        self.x = batch[0]

    def __len__(self):
        return 100

    def __getitem__(self, i):
        return self.x[i % len(self.x)]

def main(overfit):
    dist.init_process_group("gloo")
    dataset_train = TensorDataset(torch.randn(64, 8))
    if overfit:
        probe = DataLoader(dataset_train, batch_size=8)  # the probe
        {use}
    sampler = DistributedSampler(dataset_train)
    loader = DataLoader(dataset_train, sampler=sampler, batch_size=8)
    model = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(8, 1))
    for epoch in range(2):
        sampler.set_epoch(epoch)
        for x in loader:
            model(x).sum().backward()

main(bool(os.environ.get("OVERFIT")))
"""


def test_one_batch_drawn_to_build_a_dataset_feeds_no_epoch(tmp_path):
    code = ONE_BATCH.replace("{use}", "dataset_train = Repeat(next(iter(probe)))")
    assert at(lint_plain(tmp_path, code), "DDP802") == []


def test_its_twin_the_plain_loader_trains(tmp_path):
    code = ONE_BATCH.replace("{use}", "for (x,) in probe:\n            model_probe = x")
    code = code.replace("        for x in loader:\n            model(x).sum().backward()",
                        "        for x in (probe if overfit else loader):\n            model(x).sum().backward()")
    assert [line for line, _ in at(lint_plain(tmp_path, code), "DDP802")] == [line_of(code, "# the probe")]


def test_a_module_with_the_old_async_keyword_argument_is_read(tmp_path):
    # `.cuda(async=True)`: Python <= 3.6's spelling of non_blocking, a reserved word since 3.7
    from ddpdoctor.lint.sources import _tree
    code = "import torch\nx = torch.ones(1)\ny = x.cuda(async=True)\nasync def f():\n    pass\n"
    tree = _tree(tmp_path / "m.py", code)
    assert [k.arg for k in tree.body[2].value.keywords] == ["async_"]
    assert tree.body[3].__class__.__name__ == "AsyncFunctionDef"


def test_its_twin_a_file_broken_otherwise_is_still_refused(tmp_path):
    import pytest

    from ddpdoctor.core.errors import UsageError
    from ddpdoctor.lint.sources import _tree
    with pytest.raises(UsageError):
        _tree(tmp_path / "m.py", "y = x.cuda(async=True)\nz = (\n")


# -------------------------------------------------- mp.spawn's arguments are not the reference call's
SPAWNED = """
import torch, torch.distributed as dist, torch.multiprocessing as mp
from torch.utils.data import DataLoader, DistributedSampler, TensorDataset

def train(rank, cfg, world_size=None):
    if world_size is not None:
        dist.init_process_group("gloo", rank=rank, world_size=world_size)
    model = torch.nn.Linear(4, 1)
    if world_size is not None:
        model = torch.nn.parallel.DistributedDataParallel(model)
    data = TensorDataset(torch.randn(64, 4))
    loader = DataLoader(data, batch_size=8, sampler={sampler})  # the loader
    for epoch in range(3):
        for (x,) in loader:
            model(x).sum().backward()

def main(distributed):
    if distributed:
        mp.spawn(train, args=({}, 2), nprocs=2)
    else:
        train(0, {})

main(True)
"""


def test_a_sampler_picked_by_the_spawned_world_size_is_the_distributed_runs(tmp_path):
    code = SPAWNED.replace("{sampler}", "DistributedSampler(data) if world_size is not None else None")
    assert at(lint_plain(tmp_path, code), "DDP802") == []


def test_its_twin_no_sampler_on_either_way(tmp_path):
    code = SPAWNED.replace("{sampler}", "None")
    assert [line for line, _ in at(lint_plain(tmp_path, code), "DDP802")] == [line_of(code, "# the loader")]


# -------------------------------------------------- an early-stopping object handed this rank's own loss
STOPPER_OBJECT = """
import numpy as np, torch, torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

class Stopper:
    def __init__(self):
        self.best, self.bad, self.stop = float("inf"), 0, False

    def __call__(self, value):
        if value < self.best:
            self.best, self.bad = value, 0
        else:
            self.bad += 1
            if self.bad >= 3:
                self.stop = True

def main():
    dist.init_process_group("gloo")
    net = DDP(torch.nn.Linear(4, 1))
    stopper = Stopper()
    for epoch in range(100):
        seen = []
        for _ in range(10):
            loss = net(torch.randn(8, 4)).pow(2).mean()
            seen.append(loss.item())
            loss.backward()
        epoch_loss = {value}
        stopper(epoch_loss)
        if stopper.stop:  # the stop
            break

main()
"""


def test_an_early_stopping_object_fed_the_ranks_own_loss_decides_alone(tmp_path):
    code = STOPPER_OBJECT.replace("{value}", "np.mean(seen)")
    assert at(lint_plain(tmp_path, code), "DDP809") == [(line_of(code, "# the stop"), "warning")]


def test_its_twin_the_loss_all_reduced_first(tmp_path):
    code = STOPPER_OBJECT.replace("{value}", "torch.tensor(float(np.mean(seen)))\n        dist.all_reduce(epoch_loss)")
    assert at(lint_plain(tmp_path, code), "DDP809") == []


# -------------------------------------------------- a parameter the function rebinds before its test
REBOUND = """
import torch, torch.distributed as dist
from torch.utils.data import DataLoader, DistributedSampler, TensorDataset

def loaders():
    data = TensorDataset(torch.randn(64, 4))
    sampler = DistributedSampler(data)  # the sampler
    return DataLoader(data, batch_size=8, sampler=sampler), sampler

def train(model, train_data=None, train_sampler=None):
    {rebind}
    for epoch in range(3):
        if train_sampler is not None:
            train_sampler.set_epoch(epoch)
        for (x,) in train_data:
            model(x).sum().backward()

def main():
    dist.init_process_group("gloo")
    model = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(4, 1))
    train(model{given})

main()
"""


def test_a_parameter_rebound_before_its_test_is_not_the_callers_default(tmp_path):
    code = REBOUND.replace("{rebind}", "train_data, train_sampler = loaders()").replace("{given}", "")
    assert at(lint_plain(tmp_path, code), "DDP804") == []


def test_its_twin_the_sampler_never_reaches_the_test(tmp_path):
    code = REBOUND.replace("{rebind}", "train_data, _ = loaders()").replace("{given}", "")
    assert [line for line, _ in at(lint_plain(tmp_path, code), "DDP804")] == [line_of(code, "# the sampler")]


def test_the_launch_config_read_is_recorded_for_the_cache(tmp_path):
    # an edited `distributed_type` must be a cache miss: the file is digested with the sources
    from ddpdoctor.lint.config_files import launch_engines
    (tmp_path / "configs").mkdir()
    (tmp_path / "configs" / "launch.yaml").write_text("distributed_type: DEEPSPEED\n")
    (tmp_path / "configs" / "model.yaml").write_text("width: 8\n")
    read: list = []
    assert launch_engines(tmp_path / "train.py", read) == {"DeepSpeed"}
    assert read == [str(tmp_path / "configs" / "launch.yaml")]
