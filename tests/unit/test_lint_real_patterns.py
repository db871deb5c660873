"""Patterns from public training code that the lint misjudged (issue 23), re-written in our own
words: each names the code, severity and line it must give (or that it must stay quiet)."""

from __future__ import annotations

import textwrap
from pathlib import Path

from ddpdoctor.lint.driver import gather, lint_results

HEAD = """\
import os
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, DistributedSampler, RandomSampler, BatchSampler, TensorDataset
dist.init_process_group("gloo")
"""  # 6 lines: the sources below start at line 7


def lint(tmp_path: Path, source: str, **modules: str):
    for name, body in modules.items():
        target = tmp_path / f"{name.replace('__', '/')}.py"
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(textwrap.dedent(body))
    path = tmp_path / "train.py"
    path.write_text(HEAD + textwrap.dedent(source).lstrip("\n"))
    facts = gather(str(path))
    return [f for r in lint_results(facts, set()) for f in r.findings], facts


def codes(found) -> list[tuple[str, str, int]]:
    return sorted((f.code, f.severity.value, f.location.line) for f in found)


TRAIN_LOOP = """
model = DDP(torch.nn.Linear(4, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.1)
def train_one_epoch(model, data_loader):
    for x, in data_loader:
        model(x).sum().backward()
        opt.step()
"""


# ---------------------------------------------------------------------- DDP802
def test_a_loader_that_a_backward_loop_iterates_is_an_error_one_only_named_train_is_not_judged(tmp_path):
    found, _ = lint(tmp_path, TRAIN_LOOP + """
ds = TensorDataset(torch.randn(64, 4))
loader = DataLoader(ds, batch_size=8, shuffle=True)
train_data = DataLoader(ds, batch_size=8, shuffle=True)
other = DataLoader(ds, batch_size=8)
for epoch in range(2):
    train_one_epoch(model, loader)
""")
    assert codes(found) == [("DDP802", "error", 15)]


def test_loaders_the_lint_cannot_judge_or_that_need_no_sampler(tmp_path):
    found, _ = lint(tmp_path, TRAIN_LOOP + """
import deepspeed
ds = TensorDataset(torch.randn(64, 4))
kwargs = {"batch_size": 8, "sampler": DistributedSampler(ds)}
train_loader = DataLoader(ds, **kwargs)                        # the sampler is in **kwargs
def get_imagenet(args):
    return DataLoader(ds, batch_size=8, sampler=RandomSampler(ds))   # only evaluation builds it
def evaluate(args):
    for x, in get_imagenet(args):
        pass
dl = DataLoader(ds, batch_size=8, shuffle=True)                # deepspeed builds its own
engine, _, dl, _ = deepspeed.initialize(model=model, training_data=ds if os.environ.get("DS") else dl)
sampler = DistributedSampler(ds) if dist.is_initialized() else RandomSampler(ds)
batches = DataLoader(ds, batch_sampler=BatchSampler(sampler, 8, drop_last=True))
class Shards(torch.utils.data.Dataset):
    def __init__(self, shard, num_shards):
        self.shard = shard
mine = DataLoader(Shards(shard=dist.get_rank(), num_shards=2), batch_size=8, shuffle=True)
for epoch in range(2):
    train_one_epoch(model, train_loader)
    train_one_epoch(model, dl)
    train_one_epoch(model, batches)
    train_one_epoch(model, mine)
    evaluate(None)
""")
    assert [f for f in found if f.code == "DDP802"] == []


def test_a_plain_sampler_is_named_so_the_message_does_not_contradict_itself(tmp_path):
    found, _ = lint(tmp_path, TRAIN_LOOP + """
ds = TensorDataset(torch.randn(64, 4))
sampler = RandomSampler(ds)
loader = DataLoader(ds, batch_size=8, sampler=sampler)
train_one_epoch(model, loader)
""")
    (f,) = [f for f in found if f.code == "DDP802"]
    assert (f.severity.value, f.location.line) == ("error", 16)
    assert "sampler=sampler (a RandomSampler, not a DistributedSampler)" in f.message


# ---------------------------------------------------------------------- reachability
def test_only_code_the_entry_script_can_run_is_judged(tmp_path):
    found, facts = lint(tmp_path, """
        from zoo import convert, build
        model = build()
        torch.save(model.state_dict(), "every-rank.pt")     # reached: reported
    """, zoo="""
        import torch
        def build():
            return torch.nn.Linear(2, 2)
        def convert(model, path):                           # nothing calls it
            torch.save(model.state_dict(), path)
        if __name__ == "__main__":                          # never runs on import
            torch.save(build().state_dict(), "converted.pt")
    """)
    assert codes(found) == [("DDP806", "warning", 9)]
    assert facts.unreachable == 1 and facts.functions == 2


def test_a_function_handed_to_a_helper_that_only_reads_it_is_not_a_callback(tmp_path):
    found, _ = lint(tmp_path, """
        import inspect
        def setup():
            dist.barrier()
        def save_hyperparameters(function, path):
            print(inspect.signature(function), path)
        def save(path):
            if dist.get_rank() == 0:
                save_hyperparameters(setup, path)
        setup()
        save("x")
    """)
    assert codes(found) == []


# ---------------------------------------------------------------------- DDP801
def test_paired_barriers_inside_a_callee_stay_paired_under_a_callers_rank_test(tmp_path):
    found, _ = lint(tmp_path, """
        from contextlib import contextmanager
        @contextmanager
        def zero_first(local_rank):
            if local_rank not in [-1, 0]:
                dist.barrier()
            yield
            if local_rank == 0:
                dist.barrier()
        def build_loader(rank):
            with zero_first(rank):
                return TensorDataset(torch.randn(8, 2))
        RANK = int(os.getenv("RANK", -1))
        if RANK in {-1, 0}:
            val = build_loader(-1)
    """)
    assert codes(found) == []


def test_ranks_taking_turns_in_a_loop_over_the_world_is_not_one_sided(tmp_path):
    found, _ = lint(tmp_path, """
        def load_in_turn(model):
            for r in range(dist.get_world_size()):
                if dist.get_rank() == r:
                    dist.all_reduce(torch.ones(1))
                dist.barrier()
        load_in_turn(None)
    """)
    assert codes(found) == []


# ---------------------------------------------------------------------- DDP806, per node
def test_a_save_under_a_per_node_rank_test_is_one_writer_per_node(tmp_path):
    found, _ = lint(tmp_path, """
        def save_checkpoint(state, filename="checkpoint.pth.tar"):
            torch.save(state, filename)
        def save_model(path, local_rank):
            if local_rank > 0:
                return
            torch.save({}, path)
        def main_worker(gpu, ngpus_per_node, args):
            args.rank = args.rank * ngpus_per_node + gpu
            if not args.multiprocessing_distributed or (args.multiprocessing_distributed
                                                        and args.rank % ngpus_per_node == 0):
                save_checkpoint({})
            local_rank = int(os.environ["LOCAL_RANK"])
            save_model("vae.pt", local_rank)
            if dist.get_rank() == 0:
                torch.save({}, "global.pt")                   # global rank 0: fine
        main_worker(0, 1, None)
    """)
    assert codes(found) == [("DDP806", "warning", 8), ("DDP806", "warning", 12)]
    first = next(f for f in found if f.location.line == 8)
    assert "one rank per node" in first.message and "global rank 0" in first.message
    assert first.evidence["per_node"] is True and "dist.get_rank() == 0" in first.hint


def test_a_save_on_the_single_process_path_or_in_an_unbuilt_class_is_not_every_rank(tmp_path):
    found, _ = lint(tmp_path, """
        class HFCheckpointer:                     # only named in a type test: never built here
            def save_checkpoint(self, state):
                torch.save(state, "hf.pt")
        def save_model_checkpoint(model, output_dir):
            torch.save(model.state_dict(), output_dir + "/model.pt")
        def train(model, cfg, ckpt):
            if isinstance(ckpt, HFCheckpointer):
                print("hf")
            if not cfg.enable_fsdp:
                save_model_checkpoint(model, cfg.output_dir)
        train(None, None, None)
    """)
    assert codes(found) == []


# ---------------------------------------------------------------------- DDP805
def test_accumulation_through_a_loss_scaler_object_and_a_backward_helper(tmp_path):
    found, _ = lint(tmp_path, """
        class LossScaler:
            def __init__(self):
                self._scaler = torch.cuda.amp.GradScaler()
            def __call__(self, loss, optimizer, update_grad=True):
                self._scaler.scale(loss).backward()
                if update_grad:
                    self._scaler.step(optimizer)
                    self._scaler.update()
        def backward(loss, scaler):
            if scaler is not None:
                scaler.scale(loss).backward()
            else:
                loss.backward()
        model = DDP(torch.nn.Linear(4, 1))
        optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
        def train_one_epoch(loss_scaler, accum_iter):
            for i in range(8):
                loss = model(torch.randn(2, 4)).sum() / accum_iter
                loss_scaler(loss, optimizer, update_grad=(i + 1) % accum_iter == 0)
        def train_micro(scaler, accum_freq):
            for step in range(8):
                for ii in range(accum_freq):
                    backward(model(torch.randn(2, 4)).sum(), scaler)
                if scaler is not None:
                    scaler.step(optimizer)
                else:
                    optimizer.step()
        def plain(loss_scaler):                     # steps every batch: no accumulation
            for i in range(8):
                loss_scaler(model(torch.randn(2, 4)).sum(), optimizer)
        train_one_epoch(LossScaler(), 4)
        train_micro(None, 4)
        plain(LossScaler())
    """)
    assert codes(found) == [("DDP805", "warning", 25), ("DDP805", "warning", 29)]


def test_accelerate_accumulating_by_hand_without_accumulate(tmp_path):
    source = """
        from accelerate import Accelerator
        accelerator = Accelerator({kw})
        model = torch.nn.Linear(4, 1)
        optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
        model, optimizer = accelerator.prepare(model, optimizer)
        for step in range(8):
            loss = model(torch.randn(2, 4)).sum() / 4
            accelerator.backward(loss)
            if step % 4 == 0:
                optimizer.step()
    """
    found, _ = lint(tmp_path, source.replace("{kw}", ""))
    assert codes(found) == [("DDP805", "warning", 14)]
    assert "accelerator.accumulate(model)" in found[0].hint
    # Accelerator(gradient_accumulation_steps=K) alone skips no sync: its backward() only divides
    # the loss by K; the sync is skipped inside `with accelerator.accumulate(model):`
    found, _ = lint(tmp_path, source.replace("{kw}", "gradient_accumulation_steps=4"))
    assert codes(found) == [("DDP805", "warning", 14)]
    inside = source.replace("{kw}", "gradient_accumulation_steps=4").replace(
        "            loss = model(torch.randn(2, 4)).sum() / 4\n            accelerator.backward(loss)\n"
        "            if step % 4 == 0:\n                optimizer.step()\n",
        "            with accelerator.accumulate(model):\n                loss = model(torch.randn(2, 4)).sum()\n"
        "                accelerator.backward(loss)\n                optimizer.step()\n")
    assert "accumulate(model)" in inside
    found, _ = lint(tmp_path, inside)
    assert codes(found) == []


# ---------------------------------------------------------------------- DDP803 / DDP802 scope
def test_a_dataset_given_the_rank_to_cache_on_one_rank_is_not_sharded(tmp_path):
    found, _ = lint(tmp_path, """
        class Images(torch.utils.data.Dataset):
            def __init__(self, path, rank=-1):
                self.cache = rank in (-1, 0)
        LOCAL_RANK = int(os.getenv("LOCAL_RANK", -1))
        dataset = Images("x", rank=LOCAL_RANK)
        sampler = DistributedSampler(dataset, shuffle=True)
    """)
    assert [f for f in found if f.code == "DDP803"] == []


def test_a_loader_name_iterated_for_training_elsewhere_does_not_make_an_eval_loader_training(tmp_path):
    found, _ = lint(tmp_path, TRAIN_LOOP + """
def get_imagenet(ds):
    sampler = RandomSampler(ds)
    dataloader = DataLoader(ds, batch_size=8, sampler=sampler)
    return dataloader
def train(data):
    dataloader = data["train"]
    for x, in dataloader:
        model(x).sum().backward()
        opt.step()
train({"train": None})
get_imagenet(None)
""")
    assert [f for f in found if f.code == "DDP802"] == []


# ---------------------------------------------------------------------- files that do not parse
def test_an_imported_module_that_does_not_parse_is_a_note_not_a_refusal(tmp_path):
    found, facts = lint(tmp_path, """
        import argparse
        args = argparse.ArgumentParser().parse_args()
        if args.arch == "resnext":
            import models.resnext
        torch.save({}, "every.pt")
    """, models__resnext="""
        def build(:
            pass
    """)
    assert codes(found) == [("DDP806", "warning", 11)]
    (note,) = facts.notes
    assert "models/resnext.py:2: not valid Python" in note
    assert "train.py:10 only when `args.arch == 'resnext'`; not read" in note


def test_a_module_imported_on_the_else_side_that_does_not_parse_names_the_test_false(tmp_path):
    found, facts = lint(tmp_path, """
        import argparse
        args = argparse.ArgumentParser().parse_args()
        if args.arch == "resnet":
            import models.resnet
        else:
            import models.resnext
        torch.save({}, "every.pt")
    """, models__resnext="""
        def build(:
            pass
    """, models__resnet="""
        def build():
            pass
    """)
    (note,) = facts.notes
    assert "train.py:12 only when `args.arch == 'resnet'` is false; not read" in note


# ---------------------------------------------------------------------- DDP804
def test_a_while_true_epoch_loop_without_set_epoch(tmp_path):
    found, _ = lint(tmp_path, """
        ds = TensorDataset(torch.randn(64, 4))
        sampler = DistributedSampler(ds, shuffle=True)
        loader = DataLoader(ds, batch_size=8, sampler=sampler)
        step = 0
        while True:
            for x, in loader:
                step += 1
            if step > 100:
                break
        stream = DataLoader(ds, batch_size=8, sampler=DistributedSampler(ds))
        it = iter(stream)
        while step < 200:
            try:
                batch = next(it)
            except StopIteration:
                it = iter(stream)
            step += 1
    """)
    assert codes(found) == [("DDP804", "warning", 8), ("DDP804", "warning", 16)]


def test_a_step_on_both_sides_of_the_scaler_test_is_no_accumulation(tmp_path):
    found, _ = lint(tmp_path, """
        model = DDP(torch.nn.Linear(4, 1))
        optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
        scaler = None
        for it in range(10):
            loss = model(torch.randn(2, 4)).sum()
            if scaler is None:
                loss.backward()
                optimizer.step()
            else:
                scaler.scale(loss).backward()
                scaler.step(optimizer)
    """)
    assert codes(found) == []


def test_a_save_where_the_switch_that_sets_up_the_group_is_off(tmp_path):
    path = tmp_path / "train.py"
    path.write_text(textwrap.dedent("""
        import torch, torch.distributed as dist
        def dump(net, folder):
            torch.save(net.state_dict(), folder + "/model.pt")
        class Opts:
            shard = True
        opts = Opts()
        if opts.shard:
            dist.init_process_group("gloo")
        net = torch.nn.Linear(4, 2)
        if not opts.shard:
            dump(net, "out")
    """))
    found = [f for r in lint_results(gather(str(path)), set()) for f in r.findings]
    assert found == []


def test_a_rank_kept_in_a_config_dict(tmp_path):
    found, _ = lint(tmp_path, """
        config = {"rank": dist.get_rank()}
        if config["rank"] == 0:
            torch.save({}, "ckpt.pt")
        if config["rank"] == 0:
            dist.barrier()
    """)
    assert codes(found) == [("DDP801", "error", 11)]


def test_the_scripts_own_relative_imports_are_followed(tmp_path, monkeypatch):
    package = tmp_path / "pkg"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "train.py").write_text(textwrap.dedent("""
        import torch
        def run():
            torch.save({}, "every.pt")
    """))
    (package / "main.py").write_text(textwrap.dedent("""
        import torch.distributed as dist
        from .train import run
        dist.init_process_group("gloo")
        run()
    """))
    monkeypatch.chdir(tmp_path)
    facts = gather("pkg/main.py")
    found = [f for r in lint_results(facts, set()) for f in r.findings]
    assert codes(found) == [("DDP806", "warning", 4)] and found[0].location.file == "pkg/train.py"


def test_the_examples_bugs_keep_their_severity(monkeypatch):
    """The precision rules lower what rests on unseen values, never what the examples prove."""
    repo = Path(__file__).resolve().parents[2]
    monkeypatch.chdir(repo)
    expected = {"examples/desync_collective.py": ("DDP801", "error"), "examples/gpu_desync.py": ("DDP801", "error"),
                "examples/no_sampler.py": ("DDP802", "error"), "examples/gpu_no_sampler.py": ("DDP802", "error"),
                "examples/double_sharding.py": ("DDP803", "warning")}
    for script, (code, severity) in expected.items():
        found = [f for r in lint_results(gather(script), set()) for f in r.findings]
        assert [(f.code, f.severity.value) for f in found] == [(code, severity)], script


def test_a_helper_whose_barriers_this_call_switches_off(tmp_path):
    found, _ = lint(tmp_path, """
        def merge(state, scale, use_barriers=False):
            if use_barriers:
                dist.barrier()
            return {k: v * scale for k, v in state.items()}
        if dist.get_rank() == 0:
            merged = merge({}, 0.5)                      # barriers off: fine
        if dist.get_rank() == 0:
            merged = merge({}, 0.5, use_barriers=True)   # rank 0 alone in the barrier
    """)
    assert codes(found) == [("DDP801", "error", 9)]


def test_require_backward_grad_sync_set_after_the_forward(tmp_path):
    source = """
        model = DDP(torch.nn.Linear(4, 1))
        optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
        for step in range(10):
            for micro_step in range(4):
                {before}
                loss = model(torch.randn(2, 4)).sum()
                {after}
                loss.backward()
            optimizer.step()
    """
    flag = "model.require_backward_grad_sync = micro_step == 3"
    found, _ = lint(tmp_path, source.format(before="pass", after=flag))
    assert codes(found) == [("DDP805", "warning", 13)] and "one micro-step late" in found[0].message
    found, _ = lint(tmp_path, source.format(before=flag, after="pass"))
    assert codes(found) == []
