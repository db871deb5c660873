"""Shapes from session 33 (holdout 35, read). Each with its healthy (or buggy) twin, written in
our own words."""

from __future__ import annotations

from tests.unit.test_lint_round17_shapes import lint_plain
from tests.unit.test_lint_round50_shapes import at, line_of

# -------------------------------------------------- where DDP805 points when a helper backpropagates
ACCUMULATION = """
import contextlib
import torch, torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP


def train_step(model, x, opt, i, accum):
    loss = model(x).mean()
    (loss / accum).backward()  # computed and backpropagated here
    if (i + 1) % accum == 0:
        opt.step()
        opt.zero_grad()


def backward_and_step(loss, opt, i, accum):
    (loss / accum).backward()
    if (i + 1) % accum == 0:
        opt.step()
        opt.zero_grad()


def amp_step(model, x, opt, i, accum, scaler):
    loss = model(x).mean() / accum
    if scaler is not None:
        scaler.scale(loss).backward()
    else:
        loss.backward()
    if (i + 1) % accum == 0:
        opt.step()
        opt.zero_grad()


def main():
    dist.init_process_group("gloo")
    model = DDP(torch.nn.Linear(4, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for i in range(16):
        x = torch.randn(8, 4)
        with {context}:
            {call}  # the loop's call


if __name__ == "__main__":
    main()
"""
SYNC_EVERY_PASS = "contextlib.nullcontext()"
SKIP_SYNC = "(model.no_sync() if (i + 1) % 4 else contextlib.nullcontext())"


def accumulating(tmp_path, call: str, context: str = SYNC_EVERY_PASS):
    source = ACCUMULATION.replace("{context}", context).replace("{call}", call)
    return source, at(lint_plain(tmp_path, source), "DDP805")


def test_a_helper_that_computes_the_loss_is_reported_at_its_backward(tmp_path):
    # (UniPhy's `train_step(model, batch, ...)`, NMT's `_run_batch(src, tgt, i)`)
    source, found = accumulating(tmp_path, "train_step(model, x, opt, i, 4)")
    assert found == [(line_of(source, "computed and backpropagated here"), "warning")]


def test_a_backward_inside_a_helper_names_the_loops_call_to_wrap(tmp_path):
    # no_sync around the backward alone changes nothing: the message says which call to wrap
    source = ACCUMULATION.replace("{context}", SYNC_EVERY_PASS).replace("{call}", "train_step(model, x, opt, i, 4)")
    found = [f for f in lint_plain(tmp_path, source) if f.code == "DDP805"]
    call = line_of(source, "the loop's call")
    assert [f.evidence.get("call", "").rpartition(":")[2] for f in found] == [str(call)]
    assert f":{call}: wrap that call" in found[0].message


def test_its_twin_under_no_sync_on_the_micro_steps_is_clean(tmp_path):
    _, found = accumulating(tmp_path, "train_step(model, x, opt, i, 4)", SKIP_SYNC)
    assert found == []


def test_its_twin_with_a_period_of_one_is_clean(tmp_path):
    _, found = accumulating(tmp_path, "train_step(model, x, opt, i, 1)")
    assert found == []


def test_a_loss_handed_to_a_helper_is_reported_at_the_call(tmp_path):
    # (MAE's `loss_scaler(loss, optimizer, update_grad=...)`: the call is where it is backpropagated)
    source, found = accumulating(tmp_path, "backward_and_step(model(x).mean(), opt, i, 4)")
    assert found == [(line_of(source, "the loop's call"), "warning")]


def test_a_helper_that_backpropagates_on_two_sides_of_a_switch_is_reported_at_the_call(tmp_path):
    source, found = accumulating(tmp_path, "amp_step(model, x, opt, i, 4, None)")
    assert found == [(line_of(source, "the loop's call"), "warning")]


# -------------------------------------------------- one write on either side of a switch
EITHER_WAY = """
import sys
import torch, torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP


def main(names):
    dist.init_process_group("gloo")
    model = DDP(torch.nn.Linear(4, 1))
    for epoch in range(3):
        model(torch.randn(8, 4)).sum().backward()
        if names == "wrapper":
            torch.save({"model": model.state_dict()}, "best.pt")  # the wrapper's names
        else:
            torch.save({"model": model.module.state_dict()}, {other})  # the module's names


if __name__ == "__main__":
    main(sys.argv[-1])
"""


def test_the_same_write_on_both_sides_of_a_switch_is_one_finding(tmp_path):
    # (SCAGE's `if DDP: save(model.module...) else: save(model...)` to one path)
    source = EITHER_WAY.replace("{other}", '"best.pt"')
    found = lint_plain(tmp_path, source)
    assert at(found, "DDP806") == [(line_of(source, "the wrapper's names"), "warning")]
    also = [f.evidence.get("also") for f in found if f.code == "DDP806"]
    assert also == [[line_of(source, "the module's names")]]


def test_its_twin_writes_to_another_place_are_two(tmp_path):
    source = EITHER_WAY.replace("{other}", '"plain.pt"')
    assert at(lint_plain(tmp_path, source), "DDP806") == [
        (line_of(source, "the wrapper's names"), "warning"), (line_of(source, "the module's names"), "warning")]


# -------------------------------------------------- an object stood down on the other ranks
STOOD_DOWN = """
import torch, torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP


class NoOp:
    def __getattr__(self, name):
        return self.noop

    def noop(self, *args, **kwargs):
        return


class Restorer:
    def __init__(self, model, every):
        self.model, self.every, self.count = model, every, 0

    def step(self):
        self.count += 1
        if self.count % self.every == 0:
            self.save()

    def save(self):
        torch.save(self.model.state_dict(), "restore.pt")  # the restorer's write


class Schedule:
    def __init__(self, opt):
        self.opt = opt

    def step(self):
        for group in self.opt.param_groups:
            group["lr"] *= 0.99


def train(model, opt, schedule, resume):
    if resume:
        restorer = Restorer(model, 10)
    if {stand_down}:
        restorer = NoOp()
    for it in range(100):
        model(torch.randn(8, 4)).sum().backward()
        opt.step()
        schedule.step()
        restorer.step()


def main():
    dist.init_process_group("gloo")
    model = DDP(torch.nn.Linear(4, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    train(model, opt, Schedule(opt), True)


if __name__ == "__main__":
    main()
"""


def test_an_object_swapped_for_a_do_nothing_one_on_the_other_ranks_writes_on_rank_0(tmp_path):
    # (AxANet's `if not is_main_process() or ratio <= 0: restorer = NoOp()`; the guesses of
    # `opt.step()` / `schedule.step()` as Restorer.step are ruled out: one name holds every Restorer)
    source = STOOD_DOWN.replace("{stand_down}", "dist.get_rank() != 0 or not resume")
    assert at(lint_plain(tmp_path, source), "DDP806") == []


def test_its_twin_stood_down_on_a_flag_alone_writes_on_every_rank(tmp_path):
    source = STOOD_DOWN.replace("{stand_down}", "not resume")
    assert at(lint_plain(tmp_path, source), "DDP806") == [(line_of(source, "the restorer's write"), "warning")]


def test_a_method_guess_through_an_object_held_by_one_name_is_ruled_out(tmp_path):
    # the schedule handed in through `*make(opt)` is a receiver the source does not tell, so its
    # `schedule.step()` is guessed by name; every Restorer is held by `restorer` alone, which only
    # calls methods on it: the guess is no Restorer.step, and rank 0 alone writes
    source = STOOD_DOWN.replace("{stand_down}", "dist.get_rank() != 0").replace(
        "    train(model, opt, Schedule(opt), True)", "    train(model, opt, *make(opt), True)").replace(
        "def main():", "def make(opt):\n    return (Schedule(opt),)\n\n\ndef main():")
    assert at(lint_plain(tmp_path, source), "DDP806") == []


def test_its_twin_a_restorer_handed_on_may_be_the_guessed_receiver(tmp_path):
    source = STOOD_DOWN.replace("{stand_down}", "dist.get_rank() != 0").replace(
        "    train(model, opt, Schedule(opt), True)", "    train(model, opt, *make(opt), True)").replace(
        "def main():", "def make(opt):\n    return (Schedule(opt),)\n\n\ndef main():").replace(
        "        restorer = Restorer(model, 10)", "        restorer = Restorer(model, 10)\n        KEPT.append(restorer)")
    source = source.replace("class Schedule:", "KEPT = []\n\n\nclass Schedule:")
    assert at(lint_plain(tmp_path, source), "DDP806") == [(line_of(source, "the restorer's write"), "warning")]


# -------------------------------------------------- a shared builder's training way, told by its switch
REGISTRY_LOADER = """
import random
import torch, torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, Dataset, DistributedSampler


class Clips(Dataset):
    def __init__(self, cfg):
        self.worker_init_fn = None
        self.frames = cfg["frames"]

    def __len__(self):
        return 64

    def __getitem__(self, i):
        start = random.randint(0, self.frames - 4)  # a random window per sample
        return torch.arange(start, start + 4).float()


class Captions(Clips):
    pass


REGISTRY = {"clips": Clips, "captions": Captions}


def set_random_seed(seed):
    random.seed(seed)
    torch.manual_seed(seed)


def build_loader(dataset, is_train, workers, worker_init_fn=None):
    sampler = DistributedSampler(dataset, shuffle=is_train)
    return DataLoader(dataset, sampler=sampler, batch_size=4, num_workers=workers,  # the loader
                      drop_last=is_train, worker_init_fn=worker_init_fn)


def make_loaders(cfg):
    train_set = REGISTRY[cfg["train"]](cfg)
    val_set = REGISTRY[cfg["val"]](cfg)
    loader = build_loader(train_set, True, 4, train_set.worker_init_fn)
    train = loader
    loader = build_loader(val_set, False, 2, val_set.worker_init_fn)
    return train, loader


def evaluate(model, loader):
    with torch.no_grad():
        for x in loader:
            model(x)


def main(cfg):
    dist.init_process_group("gloo")
    set_random_seed({seed})  # where the seed is chosen
    model = DDP(torch.nn.Linear(4, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    train, val = make_loaders(cfg)
    for epoch in range(2):
        train.sampler.set_epoch(epoch)
        for x in train:
            opt.zero_grad()
            model(x).sum().backward()
            opt.step()
        evaluate(model, val)


if __name__ == "__main__":
    main({"train": "clips", "val": "captions", "frames": 32})
"""


def test_a_shared_builder_called_with_its_training_switch_on_builds_a_training_loader(tmp_path):
    # (VAST: `build_dataloader(dataset, collate_fn, True, ...)` from the training way; the
    # `worker_init_fn` every dataset class sets to None; the seed chosen at the helper's call)
    source = REGISTRY_LOADER.replace("{seed}", "cfg['frames']")
    found = lint_plain(tmp_path, source)
    assert at(found, "DDP808") == [(line_of(source, "# the loader"), "warning")]
    places = [f.evidence.get("seed_locations") for f in found if f.code == "DDP808"][0]
    assert any(p.endswith(f":{line_of(source, 'where the seed is chosen')}") for p in places)


def test_its_twin_seeded_per_rank_is_clean(tmp_path):
    source = REGISTRY_LOADER.replace("{seed}", "cfg['frames'] + dist.get_rank()")
    assert at(lint_plain(tmp_path, source), "DDP808") == []


def test_its_twin_a_worker_init_fn_somewhere_a_function_is_not_judged(tmp_path):
    # (one dataset class hands out a real worker_init_fn: the attribute is no constant)
    source = REGISTRY_LOADER.replace("{seed}", "cfg['frames']").replace(
        "class Captions(Clips):\n    pass", "class Captions(Clips):\n    def __init__(self, cfg):\n"
        "        super().__init__(cfg)\n        self.worker_init_fn = lambda w: random.seed(w)")
    assert at(lint_plain(tmp_path, source), "DDP808") == []


def test_its_twin_a_builder_setting_attributes_by_name_is_not_judged(tmp_path):
    # (`setattr(self, key, value)` from a config may set worker_init_fn to anything)
    source = REGISTRY_LOADER.replace("{seed}", "cfg['frames']").replace(
        "        self.frames = cfg[\"frames\"]", "        for key, value in cfg.items():\n            setattr(self, key, value)")
    assert at(lint_plain(tmp_path, source), "DDP808") == []


SWITCHED_BUILDER = """
import torch, torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, DistributedSampler, TensorDataset


def build_loader(ds, is_train):
    if is_train:
        return DataLoader(ds, sampler=DistributedSampler(ds), batch_size=4)
    else:
        return DataLoader(ds, batch_size=4)  # the evaluation's


def main():
    dist.init_process_group("gloo")
    model = DDP(torch.nn.Linear(4, 1))
    train = build_loader(TensorDataset(torch.randn(64, 4)), True)
    holdout = build_loader(TensorDataset(torch.randn(16, 4)), False)
    for epoch in range(2):
        train.sampler.set_epoch(epoch)
        for (x,) in train:
            model(x).sum().backward()
        with torch.no_grad():
            for (x,) in holdout:
                model(x)


if __name__ == "__main__":
    main()
"""


def test_the_off_side_of_a_builders_training_switch_stays_the_evaluations(tmp_path):
    # handed True by the training's way, the builder's `else:` loader is still no training loader
    assert at(lint_plain(tmp_path, SWITCHED_BUILDER), "DDP802") == []


def test_the_seeding_helpers_call_is_named_in_the_message(tmp_path):
    source = REGISTRY_LOADER.replace("{seed}", "cfg['frames']")
    found = [f for f in lint_plain(tmp_path, source) if f.code == "DDP808"]
    assert f"train.py:{line_of(source, 'where the seed is chosen')}: no rank" in found[0].message.replace(
        str(tmp_path) + "/", "").split("handed its seed at ")[1]
