"""Shapes from session 20's blind round 29, each with its healthy twin, written in our own words."""

from __future__ import annotations

from ddpdoctor.lint.driver import gather
from tests.unit.test_lint_round17_shapes import lint_plain
from tests.unit.test_lint_round25_shapes import lines_of
from tests.unit.test_lint_round28_shapes import MEMBERSHIP

# -------------------------------------------------- a rank that reaches the world's size is none
BEYOND = """
import torch, torch.distributed as dist

def run(rank, size):
    if rank >= {bound}:
        return
    t = torch.ones(1)
    dist.all_reduce(t)

dist.init_process_group("gloo")
run(dist.get_rank(), dist.get_world_size())
"""


def test_rank_at_or_past_the_world_size_is_never_true(tmp_path):
    assert lines_of(lint_plain(tmp_path, BEYOND.replace("{bound}", "size")), "DDP801") == []


def test_its_twin_a_rank_past_one_leaves_rank_0_alone_in_the_all_reduce(tmp_path):
    assert lines_of(lint_plain(tmp_path, BEYOND.replace("{bound}", "1")), "DDP801") == [7]


# -------------------------------------------------- a trainer class looked up with dict.get
LOOKUP = """
import sys, torch.distributed as dist

class Trainer:
    def __init__(self, cfg):
        self.cfg = cfg

    def train(self):
        dist.init_process_group("gloo")
        dist.barrier()

TRAINERS = {"plain": Trainer}

def build(name, cfg):
    cls = {lookup}
    return cls(cfg)

if __name__ == "__main__":
    build(sys.argv[1], {}).train()
"""


def test_a_trainer_class_looked_up_with_get_is_followed(tmp_path):
    path = tmp_path / "train.py"
    path.write_text(LOOKUP.replace("{lookup}", "TRAINERS.get(name)"))
    assert gather(str(path)).unreached_setup is None


def test_its_twin_a_class_from_nowhere_the_source_shows_leaves_the_setup_unreached(tmp_path):
    # (`getattr(sys.modules[__name__], name)` was this twin until session 65: a pick among the
    # module's own classes, now followed - test_lint_session65b_shapes; an unpickled class is not)
    path = tmp_path / "train.py"
    path.write_text(LOOKUP.replace("{lookup}", "__import__('pickle').loads(open(name, 'rb').read())"))
    assert gather(str(path)).unreached_setup is not None


def test_a_trainer_class_picked_from_the_modules_own_namespace_is_followed(tmp_path):
    path = tmp_path / "train.py"
    path.write_text(LOOKUP.replace("{lookup}", "getattr(sys.modules[__name__], name)"))
    assert gather(str(path)).unreached_setup is None


# ---------------------------------------- a no_sync context held in a name, entered after the forward
HELD = """
import contextlib, torch, torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

dist.init_process_group("gloo")
net = DDP(torch.nn.Linear(4, 1))
opt = torch.optim.SGD(net.parameters(), lr=0.1)
for step in range(64):
    last = (step + 1) % 8 == 0
    {first}
    {second}
    with ctx:
        {third}
    if last:
        opt.step()
        opt.zero_grad()
"""
LATE = ("loss = net(torch.randn(2, 4)).sum()", "ctx = net.no_sync() if not last else contextlib.nullcontext()",
        "(loss / 8).backward()")
EARLY = ("ctx = net.no_sync() if not last else contextlib.nullcontext()", "pass",
         "(net(torch.randn(2, 4)).sum() / 8).backward()")


def fill(parts):
    return HELD.replace("{first}", parts[0]).replace("{second}", parts[1]).replace("{third}", parts[2])


def test_a_no_sync_held_in_a_name_and_entered_after_the_forward_changes_nothing(tmp_path):
    assert lines_of(lint_plain(tmp_path, fill(LATE)), "DDP805") == [12]  # the backward in the `with` (session 80)


def test_its_twin_the_forward_inside_the_held_context(tmp_path):
    assert lines_of(lint_plain(tmp_path, fill(EARLY)), "DDP805") == []


# ------------------------- a loader on the modes whose way never calls the set-up helper
# (round 28's membership script, its set-up moved into a helper called under the mode test)
MODE_HELPER = MEMBERSHIP.replace('if args.mode == "DDP":\n    dist.init_process_group("gloo")',
                                 'def setup():\n    dist.init_process_group("gloo")\n\nif args.mode == "DDP":\n    setup()')


def test_a_loader_on_modes_that_never_call_the_set_up_helper_is_one_process(tmp_path):
    assert lines_of(lint_plain(tmp_path, MODE_HELPER.replace("{modes}", '["CPU", "GPU"]')), "DDP802") == []


def test_its_twin_the_distributed_mode_among_them(tmp_path):
    assert lines_of(lint_plain(tmp_path, MODE_HELPER.replace("{modes}", '["GPU", "DDP"]')), "DDP802") == [14]


# ------------------------------------------- the world's size handed on through a function value
HANDED_SIZE = """
import torch, torch.distributed as dist

def run(rank, size):
    if rank >= {bound}:
        return
    dist.all_reduce(torch.ones(1))

def launch(fn):
    dist.init_process_group("gloo")
    fn(dist.get_rank(), dist.get_world_size())

launch(run)
"""


def test_rank_against_a_size_parameter_is_never_past_it(tmp_path):
    assert lines_of(lint_plain(tmp_path, HANDED_SIZE.replace("{bound}", "size")), "DDP801") == []


def test_its_twin_against_a_constant_splits_the_ranks(tmp_path):
    assert lines_of(lint_plain(tmp_path, HANDED_SIZE.replace("{bound}", "2")), "DDP801") == [6]
