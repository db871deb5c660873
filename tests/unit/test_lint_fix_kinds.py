"""Each `lint --fix` kind over small scripts in a temp dir: the edit as text, proven (the finding
gone after it, nothing new), idempotent (a second plan over the fixed text offers nothing), and
the unsafe or ambiguous shapes declined with a reason. In-process lint, no subprocess."""

from __future__ import annotations

import textwrap
from pathlib import Path

from ddpdoctor.lint.fix.plan import lint_texts, plan

HEAD = """\
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, DistributedSampler, TensorDataset
dist.init_process_group("gloo")
"""
SAMPLED = """\
ds = TensorDataset(torch.randn(64, 4))
sampler = DistributedSampler(ds, shuffle=True)
loader = DataLoader(ds, batch_size=8, sampler=sampler)
"""


def fixed(tmp_path: Path, body: str, code: str, head: bool = True, sampled: bool = False) -> tuple[str, list[str]]:
    """Plan the fixes of a script, check they are proven and idempotent; the fixed text and the
    plan's lines."""
    path = tmp_path / "train.py"
    path.write_text((HEAD if head else "") + (SAMPLED if sampled else "") + textwrap.dedent(body))
    before = [f.code for f in lint_texts(str(path), {}, set())[0]]
    assert code in before
    first = plan([str(path)], set())
    lines = first.lines()
    if not first.fixes:
        return path.read_text(), lines
    new = first.new[path.resolve()]
    path.write_text(new)
    after = [f.code for f in lint_texts(str(path), {}, set())[0]]
    assert after.count(code) < before.count(code), lines
    assert all(after.count(c) <= before.count(c) for c in set(after)), (before, after)
    again = plan([str(path)], set())
    assert not again.fixes and not again.changed, again.lines()
    return new, lines


def test_set_epoch_goes_at_the_top_of_the_epoch_loop_with_its_indentation(tmp_path):
    new, _ = fixed(tmp_path, """\
        model = DDP(torch.nn.Linear(4, 1))
        def main():
          for epoch in range(3):   # keep this comment
            for (x,) in loader:
              model(x).sum().backward()
        main()
        """, "DDP804", sampled=True)
    assert "  for epoch in range(3):   # keep this comment\n    sampler.set_epoch(epoch)\n    for (x,)" in new


def test_set_epoch_in_the_same_scope(tmp_path):
    new, _ = fixed(tmp_path, """\
        model = DDP(torch.nn.Linear(4, 1))
        for epoch in range(3):   # keep this comment
            for (x,) in loader:
                model(x).sum().backward()
        """, "DDP804", sampled=True)
    assert "for epoch in range(3):   # keep this comment\n    sampler.set_epoch(epoch)\n    for (x,) in loader:" in new


def test_a_constant_set_epoch_gets_the_epoch_variable(tmp_path):
    new, _ = fixed(tmp_path, """\
        for ep in range(3):
            sampler.set_epoch(0)
            for (x,) in loader:
                pass
        """, "DDP804", sampled=True)
    assert "sampler.set_epoch(ep)" in new


def test_a_sampler_made_anew_each_epoch_in_a_helper_is_declined(tmp_path):
    new, lines = fixed(tmp_path, """\
        def one_epoch(ds):
            sampler = DistributedSampler(ds, shuffle=True)
            for (x,) in DataLoader(ds, batch_size=8, sampler=sampler):
                pass
        ds = TensorDataset(torch.randn(64, 4))
        for epoch in range(3):
            one_epoch(ds)
        """, "DDP804")
    assert any(line.startswith("no fix DDP804") and "one_epoch()" in line for line in lines), lines


def test_a_save_on_every_rank_goes_under_the_files_own_rank_zero_test(tmp_path):
    new, lines = fixed(tmp_path, """\
        rank = dist.get_rank()
        model = DDP(torch.nn.Linear(4, 1))
        if rank == 0:
            print("start")
        for epoch in range(2):
            torch.save({"model": model.state_dict(),
                        "epoch": epoch}, "ckpt.pt")
        """, "DDP806")
    assert ("    if rank == 0:\n        torch.save({\"model\": model.state_dict(),\n"
            "                    \"epoch\": epoch}, \"ckpt.pt\")\n") in new, new


def test_without_a_rank_test_the_save_guard_names_dist_as_imported(tmp_path):
    new, _ = fixed(tmp_path, """\
        model = DDP(torch.nn.Linear(4, 1))
        def save(path):
            torch.save(model.state_dict(), path)
        save("x.pt")
        """, "DDP806")
    assert "    if dist.get_rank() == 0:\n        torch.save(model.state_dict(), path)\n" in new


def test_a_save_whose_value_is_used_is_declined(tmp_path):
    _, lines = fixed(tmp_path, """\
        model = DDP(torch.nn.Linear(4, 1))
        def save(path):
            return torch.save(model.state_dict(), path)
        save("x.pt")
        """, "DDP806")
    assert any("value is used" in line for line in lines), lines


def test_a_per_node_save_tests_the_global_rank(tmp_path):
    new, _ = fixed(tmp_path, """\
        import os
        NNODES = int(os.environ.get("NNODES", 1))  # a job on several nodes
        local_rank = int(os.environ["LOCAL_RANK"])
        model = DDP(torch.nn.Linear(4, 1))
        for epoch in range(2):
            if local_rank == 0 and epoch % 2 == 0:
                torch.save(model.state_dict(), "ckpt.pt")
        """, "DDP806")
    assert "if dist.get_rank() == 0 and epoch % 2 == 0:" in new


def test_a_per_node_test_that_covers_rank_minus_one_is_declined(tmp_path):
    _, lines = fixed(tmp_path, """\
        import os
        NNODES = int(os.environ.get("NNODES", 1))  # a job on several nodes
        local_rank = int(os.environ.get("LOCAL_RANK", -1))
        model = DDP(torch.nn.Linear(4, 1))
        if local_rank in [-1, 0]:
            torch.save(model.state_dict(), "ckpt.pt")
        """, "DDP806")
    assert any(line.startswith("no fix DDP806") and "-1" in line for line in lines), lines


def test_a_loader_without_sampler_gets_one_with_its_shuffle_and_set_epoch(tmp_path):
    head = HEAD.replace(", DistributedSampler", "")
    path_body = head + textwrap.dedent("""\
        ds = TensorDataset(torch.randn(64, 4))
        loader = DataLoader(ds, batch_size=8, shuffle=True, drop_last=True)
        model = DDP(torch.nn.Linear(4, 1))
        for epoch in range(3):
            for (x,) in loader:
                model(x).sum().backward()
        """)
    new, _ = fixed(tmp_path, path_body, "DDP802", head=False)
    assert "from torch.utils.data.distributed import DistributedSampler\n" in new
    assert "DataLoader(ds, batch_size=8, sampler=DistributedSampler(ds, shuffle=True), drop_last=True)" in new
    assert "for epoch in range(3):\n    loader.sampler.set_epoch(epoch)\n" in new


def test_a_random_sampler_becomes_a_distributed_one(tmp_path):
    new, _ = fixed(tmp_path, """\
        from torch.utils.data import RandomSampler
        ds = TensorDataset(torch.randn(64, 4))
        loader = DataLoader(ds, batch_size=8, sampler=RandomSampler(ds))
        model = DDP(torch.nn.Linear(4, 1))
        for (x,) in loader:
            model(x).sum().backward()
        """, "DDP802")
    assert "sampler=DistributedSampler(ds, shuffle=True)" in new


def test_a_loader_of_an_unnamed_dataset_is_declined(tmp_path):
    _, lines = fixed(tmp_path, """\
        loader = DataLoader(TensorDataset(torch.randn(64, 4)), batch_size=8, shuffle=True)
        model = DDP(torch.nn.Linear(4, 1))
        for (x,) in loader:
            model(x).sum().backward()
        """, "DDP802")
    assert any("not a plain name" in line for line in lines), lines


def test_a_micro_step_loop_gets_no_sync_on_all_but_the_last(tmp_path):
    new, _ = fixed(tmp_path, """\
        model = DDP(torch.nn.Linear(4, 1))
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        accum = 4
        for step in range(10):
            for micro in range(accum):
                loss = model(torch.randn(2, 4)).sum()
                loss.backward()
            opt.step()
        """, "DDP805")
    assert "import contextlib\n" in new
    assert ("    for micro in range(accum):\n"
            "        with (model.no_sync() if micro < accum - 1 else contextlib.nullcontext()):\n"
            "            loss = model(torch.randn(2, 4)).sum()\n"
            "            loss.backward()\n    opt.step()") in new


def test_a_conditional_step_gets_no_sync_where_it_does_not_step(tmp_path):
    new, _ = fixed(tmp_path, """\
        from contextlib import nullcontext
        model = DDP(torch.nn.Linear(4, 1))
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        for i in range(8):
            loss = model(torch.randn(2, 4)).sum()
            loss.backward()
            if (i + 1) % 2 == 0:
                opt.step()
        """, "DDP805")
    assert "import contextlib" not in new
    assert "    with (nullcontext() if (i + 1) % 2 == 0 else model.no_sync()):\n        loss = model" in new


def test_a_step_test_computed_after_the_forward_is_declined(tmp_path):
    _, lines = fixed(tmp_path, """\
        model = DDP(torch.nn.Linear(4, 1))
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        for i in range(8):
            loss = model(torch.randn(2, 4)).sum()
            update = (i + 1) % 2 == 0
            loss.backward()
            if update:
                opt.step()
        """, "DDP805")
    assert any(line.startswith("no fix DDP805") and "update" in line for line in lines), lines


def test_bincount_gets_the_files_class_count_as_minlength(tmp_path):
    new, _ = fixed(tmp_path, """\
        NUM_CLASSES = 5
        model = DDP(torch.nn.Linear(4, NUM_CLASSES))
        labels = torch.randint(0, NUM_CLASSES, (8,))
        counts = torch.bincount(labels)  # per class
        dist.all_reduce(counts)
        """, "DDP807")
    assert "counts = torch.bincount(labels, minlength=NUM_CLASSES)  # per class\n" in new


def test_bincount_without_a_named_class_count_is_declined(tmp_path):
    _, lines = fixed(tmp_path, """\
        model = DDP(torch.nn.Linear(4, 3))
        labels = torch.randint(0, 3, (8,))
        counts = torch.bincount(labels)
        dist.all_reduce(counts)
        """, "DDP807")
    assert any(line.startswith("no fix DDP807") and "class count" in line for line in lines), lines


def test_a_collective_under_a_rank_test_deliberately_gets_no_fix(tmp_path):
    _, lines = fixed(tmp_path, """\
        model = DDP(torch.nn.Linear(4, 1))
        if dist.get_rank() == 0:
            dist.barrier()
        """, "DDP801")
    assert any(line.startswith("no fix DDP801") for line in lines), lines


def test_a_trainer_overrides_loader_gets_a_sampler_whose_epoch_the_trainer_sets(tmp_path):
    new, lines = fixed(tmp_path, """\
        from torch.utils.data import RandomSampler
        from transformers import Trainer, TrainingArguments


        class CyclingTrainer(Trainer):
            def get_train_dataloader(self):
                data = self.train_dataset
                return DataLoader(data, sampler=RandomSampler(data), batch_size=8)


        trainer = CyclingTrainer(model=torch.nn.Linear(4, 1), args=TrainingArguments(output_dir="out"),
                                 train_dataset=TensorDataset(torch.randn(64, 4)))
        trainer.train()
        """, "DDP802")
    assert "sampler=DistributedSampler(data, shuffle=True)" in new
    assert any("the Trainer's training loop sets the sampler's epoch itself" in line for line in lines), lines
