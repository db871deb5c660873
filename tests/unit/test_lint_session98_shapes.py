"""Shapes from session 98 (holdout 139's reading), each with its twin, in our own words."""

from __future__ import annotations

from pathlib import Path

from tests.unit.test_lint_session39_shapes import lint_tree
from tests.unit.test_lint_session61_shapes import _codes, _line

# ------------------------------------------------- an accumulation count from a settings record
# `from settings import opts` where settings.py builds `opts = Options()` of a dataclass that
# declares `accum: int = 1`, set nowhere; the loop's helper is handed `opts.accum`: a step every
# pass, no accumulation (no DDP805). Twin: the field declared 4.
RECORD = {
    "settings.py": """
        from dataclasses import dataclass


        @dataclass
        class Options:
            epochs: int = 3
            accum: int = 1


        opts = Options()
    """,
    "train.py": """
        import torch
        import torch.distributed as dist
        from torch.nn.parallel import DistributedDataParallel as DDP
        from settings import opts


        def run_epoch(model, optimizer, batches, accum):
            for step, x in enumerate(batches, start=1):
                model(x).sum().backward()
                if step % accum == 0:
                    optimizer.step()
                    optimizer.zero_grad()


        def main():
            dist.init_process_group("gloo")
            model = DDP(torch.nn.Linear(8, 1))
            optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
            batches = [torch.zeros(4, 8) for _ in range(8)]
            for epoch in range(opts.epochs):
                run_epoch(model, optimizer, batches, opts.accum)


        if __name__ == "__main__":
            main()
    """,
}


def test_count_from_a_settings_record_at_one(tmp_path):
    assert not _codes(lint_tree(tmp_path, RECORD), "DDP805")


def test_count_from_a_settings_record_above_one(tmp_path):
    files = {**RECORD, "settings.py": RECORD["settings.py"].replace("accum: int = 1", "accum: int = 4")}
    assert _codes(lint_tree(tmp_path, files), "DDP805")


# ------------------------------------------------- an optparse option
# `parser.add_option("--acc", dest="accum", type="int", default=1)`: a count at 1 a launch may
# raise, said as the finding's assumption. Twin: declared 4, no assumption to state.
OPTPARSE = """
    from optparse import OptionParser
    import torch
    import torch.distributed as dist
    from torch.nn.parallel import DistributedDataParallel as DDP


    def main():
        parser = OptionParser()
        parser.add_option("--acc", dest="accum", type="int", default=1)
        (options, args) = parser.parse_args()
        dist.init_process_group("gloo")
        model = DDP(torch.nn.Linear(8, 1))
        optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
        for step in range(1, 9):
            model(torch.zeros(4, 8)).sum().backward()
            if step % options.accum == 0:
                optimizer.step()
                optimizer.zero_grad()


    if __name__ == "__main__":
        main()
"""


def test_optparse_count_at_one_is_the_assumption(tmp_path):
    found = _codes(lint_tree(tmp_path, {"train.py": OPTPARSE}), "DDP805")
    assert len(found) == 1 and found[0].message.startswith("if `options.accum` is set above its default 1")


def test_optparse_count_declared_above_one(tmp_path):
    found = _codes(lint_tree(tmp_path, {"train.py": OPTPARSE.replace("default=1", "default=4")}), "DDP805")
    assert len(found) == 1 and not found[0].message.startswith("if ")


# ------------------------------------------------- a file per item of this rank's stride
# `indices = np.arange(int(os.environ["RANK"]), len(items), world)` where a launcher set the rank
# (`np.arange(len(items))` on the one-process side of `if "RANK" in os.environ:`), each item's
# metric saved as `metric-{i}.pt`: no two ranks hold the same i (no DDP806). Twins: every rank
# walks every item; the else side walks every item and the distributed side does too.
STRIDE = """
    import os
    import numpy as np
    import torch
    import torch.distributed as dist
    from torch.nn.parallel import DistributedDataParallel as DDP


    def validate(model, items, out):
        if "RANK" in os.environ:
            world = int(os.environ["WORLD_SIZE"])
            indices = np.arange(int(os.environ["RANK"]), len(items), world)
        else:
            indices = np.arange(len(items))
        for i in indices:
            value = model(items[i]).sum()
            torch.save({"value": value}, os.path.join(out, "metric-{}.pt".format(i)))


    def main():
        dist.init_process_group("gloo")
        model = DDP(torch.nn.Linear(8, 1))
        items = [torch.zeros(2, 8) for _ in range(10)]
        for epoch in range(2):
            model(torch.zeros(4, 8)).sum().backward()
            with torch.no_grad():
                validate(model, items, "metrics")


    if __name__ == "__main__":
        main()
"""


def _stride(tmp_path, body):
    return _codes(lint_tree(tmp_path, {"train.py": body}), "DDP806")


def test_items_of_the_rank_stride_name_their_own_files(tmp_path):
    assert not _stride(tmp_path, STRIDE)


def test_every_rank_walks_every_item(tmp_path):
    body = STRIDE.replace('np.arange(int(os.environ["RANK"]), len(items), world)', "np.arange(len(items))")
    assert _stride(tmp_path, body)


def test_a_count_of_the_shard_is_no_stride(tmp_path):
    # (the rank in the stop, not the start: every rank counts 0, 1, ... alike)
    body = STRIDE.replace('np.arange(int(os.environ["RANK"]), len(items), world)',
                          'np.arange(0, len(items) // world + int(os.environ["RANK"]) * 0)')
    assert _stride(tmp_path, body)


# ------------------------------------------------- "rank 0 first" written out with barriers
# `if not is_master: dist.barrier()` above the construction of a dataset that writes its chunks
# where they are missing, `if is_master: dist.barrier()` below it: rank 0 writes, the others find
# the files (no DDP806). Twins: without the barrier pair; the pair the wrong way round (every
# rank but 0 waits after, none before).
FIRST = {
    "chunks.py": """
        import os
        import torch


        class Chunked:
            def __init__(self, root):
                self.path = os.path.join(root, "meta.pt")
                if not os.path.exists(self.path):
                    self._write()
                self.meta = torch.load(self.path)

            def _write(self):
                torch.save({"n": 10}, self.path)

            def __len__(self):
                return 10

            def __getitem__(self, i):
                return torch.zeros(8)
    """,
    "train.py": """
        import os
        import torch
        import torch.distributed as dist
        from torch.nn.parallel import DistributedDataParallel as DDP
        from torch.utils.data import DataLoader, DistributedSampler
        from chunks import Chunked


        def main():
            dist.init_process_group("gloo")
            is_master = int(os.environ["LOCAL_RANK"]) == 0
            model = DDP(torch.nn.Linear(8, 1))
            if not is_master:
                dist.barrier()
            data = Chunked("cache")
            if is_master:
                dist.barrier()
            sampler = DistributedSampler(data)
            loader = DataLoader(data, sampler=sampler, batch_size=2)
            for epoch in range(2):
                sampler.set_epoch(epoch)
                for x in loader:
                    model(x).sum().backward()


        if __name__ == "__main__":
            main()
    """,
}


def _first(tmp_path, script):
    return _codes(lint_tree(tmp_path, {**FIRST, "train.py": script}), "DDP806")


def test_barriers_written_round_the_build(tmp_path):
    assert not _first(tmp_path, FIRST["train.py"])


def test_no_barriers_round_the_build(tmp_path):
    script = FIRST["train.py"].replace("            if not is_master:\n                dist.barrier()\n", "") \
        .replace("            if is_master:\n                dist.barrier()\n", "")
    assert "barrier" not in script
    assert _first(tmp_path, script)


def test_barriers_the_wrong_way_round(tmp_path):
    script = FIRST["train.py"].replace("if not is_master:", "if is_master:", 1) \
        .replace("if is_master:\n                dist.barrier()\n            sampler",
                 "if not is_master:\n                dist.barrier()\n            sampler")
    assert script != FIRST["train.py"]
    assert _first(tmp_path, script)


# ------------------------------------------------- a signal flag imported from the handler's module
# `from signals import EXIT` where signals.py's SIGUSR1 handler sets the module's Event; every rank
# tests `if EXIT.is_set(): ...; requeue(); return` in its update loop, and requeue() tests the
# REQUEUE Event the same handler sets before its barrier: one finding, at the loop's test (the
# helper's test is a step of that way out). Twins: a flag no handler sets; the helper called
# outside the block too (its own test is then a cause of its own).
SIGNALS = {
    "signals.py": """
        import signal
        import threading
        import torch.distributed as dist

        EXIT = threading.Event()
        REQUEUE = threading.Event()
        QUIET = threading.Event()


        def _on_usr1(signum, frame):
            EXIT.set()
            REQUEUE.set()


        def install():
            signal.signal(signal.SIGUSR1, _on_usr1)


        def requeue():
            if not REQUEUE.is_set():
                return
            dist.barrier()
    """,
    "train.py": """
        import torch
        import torch.distributed as dist
        from torch.nn.parallel import DistributedDataParallel as DDP
        from signals import EXIT, QUIET, install, requeue


        def main():
            dist.init_process_group("gloo")
            install()
            model = DDP(torch.nn.Linear(8, 1))
            for update in range(100):
                if EXIT.is_set():
                    requeue()
                    return
                model(torch.zeros(4, 8)).sum().backward()


        if __name__ == "__main__":
            main()
    """,
}


def _signals(tmp_path, script):
    return _codes(lint_tree(tmp_path, {**SIGNALS, "train.py": script}), "DDP809")


def test_imported_signal_flag_one_finding_at_the_loop(tmp_path):
    found = _signals(tmp_path, SIGNALS["train.py"])
    assert [(Path(f.location.file).name, f.location.line) for f in found] == \
        [("train.py", _line(SIGNALS["train.py"], "if EXIT.is_set():"))]


def test_imported_flag_no_handler_sets(tmp_path):
    # (the helper's own test is then the one left: nothing around its call decides first)
    script = SIGNALS["train.py"].replace("if EXIT.is_set():", "if QUIET.is_set():")
    assert [Path(f.location.file).name for f in _signals(tmp_path, script)] == ["signals.py"]


def test_the_helper_called_outside_the_block_too(tmp_path):
    script = SIGNALS["train.py"].replace("                model(torch.zeros(4, 8))",
                                         "                requeue()\n                model(torch.zeros(4, 8))")
    assert script != SIGNALS["train.py"]
    assert sorted(Path(f.location.file).name for f in _signals(tmp_path, script)) == ["signals.py", "train.py"]


# ------------------------------------------------- a skip on the number of a batch field's dimensions
# `if not batch["pairs"].ndim == 2: continue` before the forward: an empty match collates to fewer
# dimensions, which each rank's own items decide (DDP809 warning). Twin: a test on the batch's
# size, which equal shards make alike (not reported).
NDIM = """
    import torch
    import torch.distributed as dist
    from torch.nn.parallel import DistributedDataParallel as DDP
    from torch.utils.data import DataLoader, DistributedSampler


    def main(data):
        dist.init_process_group("gloo")
        model = DDP(torch.nn.Linear(8, 1))
        optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
        sampler = DistributedSampler(data)
        loader = DataLoader(data, sampler=sampler, batch_size=4)
        for epoch in range(2):
            sampler.set_epoch(epoch)
            for i, batch in enumerate(loader):
                if not batch["pairs"].ndim == 2:
                    continue
                loss = model(batch["x"]).sum()
                optimizer.zero_grad()
                loss.backward()
                optimizer.step()
"""


def test_a_skip_on_a_field_dimensions(tmp_path):
    found = _codes(lint_tree(tmp_path, {"train.py": NDIM}), "DDP809")
    assert [f.location.line for f in found] == [_line(NDIM, 'if not batch["pairs"].ndim == 2:')]
    assert found[0].severity.value == "warning"


def test_a_skip_on_the_batch_size(tmp_path):
    body = NDIM.replace('if not batch["pairs"].ndim == 2:', 'if not batch["x"].shape[0] == 4:')
    assert not _codes(lint_tree(tmp_path, {"train.py": body}), "DDP809")


# ------------------------------------------------- a graph dataset's process() run by its constructor
# A subclass of PyG's InMemoryDataset whose process() torch.saves the collated graphs: the base's
# constructor runs it (where the file is missing) from `super().__init__(root)`, on every rank
# that builds the dataset (DDP806 warning at the save). Twins: built under a rank-0 test; a plain
# class whose method of that name nothing calls.
GRAPHS = {
    "graphs.py": """
        import os
        import torch
        from torch_geometric.data import InMemoryDataset


        class Molecules(InMemoryDataset):
            def __init__(self, root):
                super().__init__(root)
                self.data, self.slices = torch.load(self.processed_paths[0])

            @property
            def processed_file_names(self):
                return "graphs.pt"

            def process(self):
                data, slices = self.collate([])
                torch.save((data, slices), self.processed_paths[0])
    """,
    "train.py": """
        import torch
        import torch.distributed as dist
        from torch.nn.parallel import DistributedDataParallel as DDP
        from torch.utils.data import DataLoader, DistributedSampler
        from graphs import Molecules


        def main():
            dist.init_process_group("gloo")
            data = Molecules("data")
            model = DDP(torch.nn.Linear(8, 1))
            sampler = DistributedSampler(data)
            loader = DataLoader(data, sampler=sampler, batch_size=4)
            for epoch in range(2):
                sampler.set_epoch(epoch)
                for x in loader:
                    model(x).sum().backward()


        if __name__ == "__main__":
            main()
    """,
}


def _graphs(tmp_path, **changed):
    return _codes(lint_tree(tmp_path, {**GRAPHS, **changed}), "DDP806")


def test_the_constructor_runs_process_on_every_rank(tmp_path):
    found = _graphs(tmp_path)
    assert [(Path(f.location.file).name, f.location.line) for f in found] == \
        [("graphs.py", _line(GRAPHS["graphs.py"], "torch.save((data, slices)"))]


def test_built_on_rank_zero_only(tmp_path):
    script = GRAPHS["train.py"].replace('            data = Molecules("data")\n',
                                        '            if dist.get_rank() == 0:\n                Molecules("data")\n'
                                        '            dist.barrier()\n            data = Molecules("data")\n')
    assert script != GRAPHS["train.py"]
    # (rank 0 builds first, then every rank: the others find the file; a cache, said apart)
    found = _graphs(tmp_path, **{"train.py": script})
    assert len(found) <= 1


def test_a_plain_class_method_nothing_calls(tmp_path):
    graphs = GRAPHS["graphs.py"].replace("from torch_geometric.data import InMemoryDataset\n", "") \
        .replace("class Molecules(InMemoryDataset):", "class Molecules:") \
        .replace("            super().__init__(root)\n", "            self.processed_paths = [root]\n")
    assert "super()" not in graphs
    assert not _graphs(tmp_path, **{"graphs.py": graphs})


# ------------------------------------------------- a launch through a wrapper that forwards its arguments
# run.sh runs `torchrun --nproc_per_node 2 train.py --out /tmp/x "$@"`; the README calls
# `bash run.sh --split full`: the run takes `--split full`, so the branch that builds a shuffling
# DistributedSampler without set_epoch (only under "subset") is not taken (no DDP804). Twins: the
# README calls the wrapper with `--split subset`; no text calls the wrapper (the default decides).
WRAPPER = {
    "train.py": """
        import argparse
        import torch
        import torch.distributed as dist
        from torch.nn.parallel import DistributedDataParallel as DDP
        from torch.utils.data import DataLoader, DistributedSampler, TensorDataset


        def main():
            parser = argparse.ArgumentParser()
            parser.add_argument("--split", default="subset")
            parser.add_argument("--out", default="runs")
            args = parser.parse_args()
            dist.init_process_group("gloo")
            data = TensorDataset(torch.zeros(16, 8))
            model = DDP(torch.nn.Linear(8, 1))
            if args.split == "subset":
                loader = DataLoader(data, sampler=DistributedSampler(data, shuffle=True), batch_size=4)
            else:
                loader = DataLoader(data, sampler=DistributedSampler(data, shuffle=False), batch_size=4)
            for epoch in range(3):
                for (x,) in loader:
                    model(x).sum().backward()


        if __name__ == "__main__":
            main()
    """,
    "run.sh": """
        #!/bin/bash
        set -e
        torchrun --nproc_per_node 2 train.py --out /tmp/x "$@"
    """,
    "README.md": """
        # Training

        ```bash
        bash run.sh --split full
        ```
    """,
}


def _wrapper(tmp_path, **changed):
    return _codes(lint_tree(tmp_path, {**WRAPPER, **changed}), "DDP804")


def test_wrapper_forwards_the_readme_options(tmp_path):
    assert not _wrapper(tmp_path)


def test_wrapper_called_with_the_other_value(tmp_path):
    assert _wrapper(tmp_path, **{"README.md": WRAPPER["README.md"].replace("--split full", "--split subset")})


def test_wrapper_nobody_calls(tmp_path):
    assert _wrapper(tmp_path, **{"README.md": "# Training\n\nSee run.sh.\n"})


# ------------------------------------------------- two loops resting on one assumed count
# Two training loops (one with a teacher) step under `(i + 1) % args.accum == 0` with --accum at
# 1 by default and no no_sync: one DDP805 at the first loop's backward, the other loop named.
# Twin: the count declared 4 - each loop its own finding, no assumption shared.
TWO_LOOPS = """
    import argparse
    import torch
    import torch.distributed as dist
    from torch.nn.parallel import DistributedDataParallel as DDP


    def plain(model, optimizer, accum):
        for i in range(8):
            model(torch.zeros(4, 8)).sum().backward()
            if (i + 1) % accum == 0:
                optimizer.step()
                optimizer.zero_grad()


    def with_teacher(model, teacher, optimizer, accum):
        for i in range(8):
            x = torch.zeros(4, 8)
            (model(x) - teacher(x)).pow(2).sum().backward()
            if (i + 1) % accum == 0:
                optimizer.step()
                optimizer.zero_grad()


    def main():
        parser = argparse.ArgumentParser()
        parser.add_argument("--accum", type=int, default=1)
        parser.add_argument("--teacher", action="store_true")
        args = parser.parse_args()
        dist.init_process_group("gloo")
        model = DDP(torch.nn.Linear(8, 1))
        optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
        if args.teacher:
            with_teacher(model, torch.nn.Linear(8, 1), optimizer, args.accum)
        else:
            plain(model, optimizer, args.accum)


    if __name__ == "__main__":
        main()
"""


def test_two_loops_on_one_assumed_count(tmp_path):
    found = _codes(lint_tree(tmp_path, {"train.py": TWO_LOOPS}), "DDP805")
    assert len(found) == 1
    assert "the same in 1 more loop" in found[0].message
    assert found[0].evidence["also"]


def test_two_loops_on_a_declared_count(tmp_path):
    found = _codes(lint_tree(tmp_path, {"train.py": TWO_LOOPS.replace("default=1", "default=4")}), "DDP805")
    assert len(found) == 2 and all("also" not in f.evidence for f in found)


# ------------------------------------------------- a base's method every built subclass replaces
# `class Base(Trainer)` with `super(Base, self).__init__()`, its `fit()` calling `self._epoch()`;
# only `Sub(Base)` is built, with an `_epoch` of its own that backpropagates a loss computed round
# the wrapper: one DDP810, at the subclass's backward (Base's own `_epoch` never runs). Twin: the
# script builds Base too - both run.
SHADOWED = """
    import torch
    import torch.distributed as dist
    from torch.nn.parallel import DistributedDataParallel as DDP


    class Base:
        def __init__(self, model):
            super(Base, self).__init__()
            self.model = DDP(model).module
            self._log("built")

        def _log(self, what):
            print(what)

        def fit(self, batches):
            for x in batches:
                self._epoch(x)

        def _epoch(self, x):
            self.model(x).sum().backward()


    class Sub(Base):
        def _epoch(self, x):
            loss = self.model(x).pow(2).sum()
            loss.backward()


    def main():
        dist.init_process_group("gloo")
        trainer = Sub(torch.nn.Linear(8, 1))
        trainer.fit([torch.zeros(4, 8)])


    if __name__ == "__main__":
        main()
"""


def test_only_the_subclass_method_runs(tmp_path):
    found = _codes(lint_tree(tmp_path, {"train.py": SHADOWED}), "DDP810")
    assert [f.location.line for f in found] == [_line(SHADOWED, "loss.backward()")]


def test_the_base_built_too(tmp_path):
    body = SHADOWED.replace("        trainer.fit([torch.zeros(4, 8)])\n",
                            "        trainer.fit([torch.zeros(4, 8)])\n        Base(torch.nn.Linear(8, 1)).fit([])\n")
    assert body != SHADOWED
    found = _codes(lint_tree(tmp_path, {"train.py": body}), "DDP810")
    assert len(found) == 2


# ------------------------------------------------- a warm-up loader read once
# `self.train(warmup_loader)` once before `for epoch: sampler.set_epoch(epoch); self.train(loader)`:
# the warm-up's shuffling sampler is read one pass (no DDP804). Twin: the warm-up loader handed in
# the epoch loop too.
WARMUP = """
    import torch
    import torch.distributed as dist
    from torch.nn.parallel import DistributedDataParallel as DDP
    from torch.utils.data import DataLoader, DistributedSampler, TensorDataset


    class Runner:
        def __init__(self):
            self.model = DDP(torch.nn.Linear(8, 1))

        def loaders(self):
            warm = TensorDataset(torch.zeros(16, 8))
            data = TensorDataset(torch.zeros(64, 8))
            warm_sampler = DistributedSampler(warm)
            train_sampler = DistributedSampler(data)
            warm_loader = DataLoader(warm, sampler=warm_sampler, batch_size=4)
            train_loader = DataLoader(data, sampler=train_sampler, batch_size=4)
            return warm_loader, train_loader

        def train(self, dataloader):
            for (x,) in dataloader:
                self.model(x).sum().backward()

        def run(self):
            warm_loader, train_loader = self.loaders()
            self.train(warm_loader)
            for epoch in range(5):
                train_loader.sampler.set_epoch(epoch)
                self.train(train_loader)


    def main():
        dist.init_process_group("gloo")
        Runner().run()


    if __name__ == "__main__":
        main()
"""


def test_a_warm_up_loader_read_once(tmp_path):
    assert not _codes(lint_tree(tmp_path, {"train.py": WARMUP}), "DDP804")


def test_the_warm_up_loader_read_in_the_loop_too(tmp_path):
    body = WARMUP.replace("                self.train(train_loader)\n",
                          "                self.train(train_loader)\n                self.train(warm_loader)\n")
    assert body != WARMUP
    assert _codes(lint_tree(tmp_path, {"train.py": body}), "DDP804")


# ------------------------------------------------- an evaluation loader built inline in its loop
# `for perm in DataLoader(edges, 64, sampler=DistributedSampler(edges)):` in a test() every epoch
# calls, predictions only: an evaluation pass (no DDP804). Twin: the same loop backpropagates.
INLINE_EVAL = """
    import torch
    import torch.distributed as dist
    from torch.nn.parallel import DistributedDataParallel as DDP
    from torch.utils.data import DataLoader, DistributedSampler


    @torch.no_grad()
    def test(model, edges):
        preds = []
        for perm in DataLoader(edges, 64, sampler=DistributedSampler(edges)):
            preds.append(model(torch.zeros(len(perm), 8)))
        return preds


    def main():
        dist.init_process_group("gloo")
        model = DDP(torch.nn.Linear(8, 1))
        edges = range(1000)
        sampler = DistributedSampler(edges)
        for epoch in range(3):
            sampler.set_epoch(epoch)
            for perm in DataLoader(edges, 64, sampler=sampler):
                model(torch.zeros(len(perm), 8)).sum().backward()
            test(model, edges)


    if __name__ == "__main__":
        main()
"""


def test_an_inline_evaluation_loader(tmp_path):
    assert not _codes(lint_tree(tmp_path, {"train.py": INLINE_EVAL}), "DDP804")


def test_an_inline_training_loader(tmp_path):
    body = INLINE_EVAL.replace("    @torch.no_grad()\n", "").replace(
        "            preds.append(model(torch.zeros(len(perm), 8)))",
        "            model(torch.zeros(len(perm), 8)).sum().backward()")
    assert body != INLINE_EVAL
    assert _codes(lint_tree(tmp_path, {"train.py": body}), "DDP804")


# ------------------------------------------------- a feature extractor's save_pretrained by its class
# `extractor = WhisperFeatureExtractor.from_pretrained(name)`, then `extractor.save_pretrained(out)`
# on every rank: a few small files of the same content (no DDP806). Twin: a model's.
EXTRACTOR = """
    import torch
    import torch.distributed as dist
    from torch.nn.parallel import DistributedDataParallel as DDP
    from transformers import AutoModel, WhisperFeatureExtractor


    def main():
        dist.init_process_group("gloo")
        extractor = WhisperFeatureExtractor.from_pretrained("whisper-small")
        model = DDP(torch.nn.Linear(8, 1))
        model(torch.zeros(4, 8)).sum().backward()
        extractor.save_pretrained("out")


    if __name__ == "__main__":
        main()
"""


def test_a_feature_extractor_by_its_class(tmp_path):
    assert not _codes(lint_tree(tmp_path, {"train.py": EXTRACTOR}), "DDP806")


def test_a_model_by_its_class(tmp_path):
    body = EXTRACTOR.replace('extractor = WhisperFeatureExtractor.from_pretrained("whisper-small")',
                             'extractor = AutoModel.from_pretrained("whisper-small")')
    assert _codes(lint_tree(tmp_path, {"train.py": body}), "DDP806")


# ------------------------------------------------- a decision inside another decision's block
# `if np.isnan(loss.item()): nan += 1; if nan > 100: raise ...; continue`: one DDP809, at the
# outer test. Twin: a second value test beside the block, not inside it - a second decision.
NESTED = """
    import numpy as np
    import torch
    import torch.distributed as dist
    from torch.nn.parallel import DistributedDataParallel as DDP


    def main():
        dist.init_process_group("gloo")
        model = DDP(torch.nn.Linear(8, 1))
        nan = 0
        for step in range(100):
            loss = model(torch.randn(4, 8)).sum()
            if np.isnan(loss.item()):
                nan += 1
                if nan > 100:
                    raise ValueError("nan")
                else:
                    print("skipped", nan)
                    continue
            loss.backward()


    if __name__ == "__main__":
        main()
"""


def test_one_finding_for_the_nested_test(tmp_path):
    found = _codes(lint_tree(tmp_path, {"train.py": NESTED}), "DDP809")
    assert [f.location.line for f in found] == [_line(NESTED, "if np.isnan(loss.item()):")]


def test_a_second_test_beside_it(tmp_path):
    body = NESTED.replace("                    continue\n            loss.backward()",
                          "                    continue\n            if loss.item() > 1e6:\n                continue\n"
                          "            loss.backward()")
    assert body != NESTED
    assert len(_codes(lint_tree(tmp_path, {"train.py": body}), "DDP809")) == 2


# ------------------------------------------------- a top-level key of the loaded YAML
# `config = yaml.safe_load(f)`, the step under `(i + 1) % config["accum"] == 0`, `accum: 1` in the
# config beside the script: a step every pass (no DDP805). Twin: `accum: 4`.
YAML_KEY = {
    "train.py": """
        import torch
        import torch.distributed as dist
        import yaml
        from torch.nn.parallel import DistributedDataParallel as DDP


        def main():
            with open("config.yaml") as f:
                config = yaml.safe_load(f)
            dist.init_process_group("gloo")
            model = DDP(torch.nn.Linear(8, 1))
            optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
            for i in range(8):
                model(torch.zeros(4, 8)).sum().backward()
                if (i + 1) % config["accum"] == 0:
                    optimizer.step()
                    optimizer.zero_grad()


        if __name__ == "__main__":
            main()
    """,
    "config.yaml": "accum: 1\nlr: 0.1\n",
}


def test_a_yaml_key_at_one(tmp_path):
    assert not _codes(lint_tree(tmp_path, YAML_KEY), "DDP805")


def test_a_yaml_key_above_one(tmp_path):
    assert _codes(lint_tree(tmp_path, {**YAML_KEY, "config.yaml": "accum: 4\nlr: 0.1\n"}), "DDP805")


# ------------------------------------------------- workers every launch gives 0
# `--workers` declared 0 and given 0 by the launch script: no worker, nothing to seed (no DDP808).
# Twin: the launch gives 4.
WORKERS = {
    "train.py": """
        import argparse
        import random
        import torch
        import torch.distributed as dist
        from torch.nn.parallel import DistributedDataParallel as DDP
        from torch.utils.data import DataLoader, Dataset, DistributedSampler


        class Crops(Dataset):
            def __len__(self):
                return 64

            def __getitem__(self, i):
                return torch.zeros(8) + random.random()


        def main():
            parser = argparse.ArgumentParser()
            parser.add_argument("--workers", type=int, default=0)
            args = parser.parse_args()
            torch.manual_seed(0)
            dist.init_process_group("gloo")
            data = Crops()
            sampler = DistributedSampler(data)
            loader = DataLoader(data, sampler=sampler, batch_size=4, num_workers=args.workers)
            model = DDP(torch.nn.Linear(8, 1))
            for epoch in range(2):
                sampler.set_epoch(epoch)
                for x in loader:
                    model(x).sum().backward()


        if __name__ == "__main__":
            main()
    """,
    "run.sh": "torchrun --nproc_per_node 2 train.py --workers=0\n",
}


def test_workers_every_launch_gives_zero(tmp_path):
    assert not _codes(lint_tree(tmp_path, WORKERS), "DDP808")


def test_workers_a_launch_raises(tmp_path):
    assert _codes(lint_tree(tmp_path, {**WORKERS, "run.sh": "torchrun --nproc_per_node 2 train.py --workers=4\n"}),
                  "DDP808")


# ------------------------------------------------- the set-up's own compound switch, read again
# `if args.dist and not args.only_test: init_process_group(...)` and later `if self.args.dist and
# not self.args.only_test: <loader with a DistributedSampler>` / `else: self._plain(...)`, a
# helper building a sampler-less loader: the one-process run (no DDP802). Twin: the else of a
# switch the set-up does not test.
COMPOUND = """
    import argparse
    import torch
    import torch.distributed as dist
    from torch.nn.parallel import DistributedDataParallel as DDP
    from torch.utils.data import DataLoader, DistributedSampler, TensorDataset


    class Runner:
        def __init__(self, args):
            self.args = args
            self.data = TensorDataset(torch.zeros(16, 8))
            if self.args.dist and not self.args.only_test:
                self.loader = DataLoader(self.data, sampler=DistributedSampler(self.data), batch_size=4)
            else:
                self.loader = self._plain(self.data)
            self.model = DDP(torch.nn.Linear(8, 1)) if self.args.dist else torch.nn.Linear(8, 1)

        def _plain(self, data):
            return DataLoader(data, batch_size=4, shuffle=True)

        def run(self):
            for (x,) in self.loader:
                self.model(x).sum().backward()


    if __name__ == "__main__":
        parser = argparse.ArgumentParser()
        parser.add_argument("--dist", type=int, default=1)
        parser.add_argument("--only_test", action="store_true")
        parser.add_argument("--fast", action="store_true")
        args = parser.parse_args()
        if args.dist and not args.only_test:
            dist.init_process_group("gloo")
        Runner(args).run()
"""


def test_the_else_of_the_setup_switch(tmp_path):
    assert not _codes(lint_tree(tmp_path, {"train.py": COMPOUND}), "DDP802")


def test_the_else_of_another_switch(tmp_path):
    body = COMPOUND.replace("if self.args.dist and not self.args.only_test:", "if self.args.fast:")
    assert body != COMPOUND
    assert _codes(lint_tree(tmp_path, {"train.py": body}), "DDP802")


# ------------------------------------------------- a main-process flag set beside the Accelerator
# `if args.use_accelerate: accelerator = Accelerator(); is_main = accelerator.is_main_process` /
# `else: is_main = True`, --use_accelerate off by default: the save under `if is_main:` is the main
# process's on the run that turns it on (no DDP806). Twin: no Accelerator on that side.
MAIN_FLAG = """
    import argparse
    import torch
    from accelerate import Accelerator


    def main():
        parser = argparse.ArgumentParser()
        parser.add_argument("--use_accelerate", action="store_true")
        args = parser.parse_args()
        model = torch.nn.Linear(8, 1)
        optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
        if args.use_accelerate:
            accelerator = Accelerator()
            model, optimizer = accelerator.prepare(model, optimizer)
            is_main = accelerator.is_main_process
        else:
            is_main = True
        for step in range(4):
            loss = model(torch.zeros(4, 8)).sum()
            loss.backward()
            optimizer.step()
            if step % 2 == 0 and is_main:
                torch.save(model.state_dict(), "checkpoint.pt")


    if __name__ == "__main__":
        main()
"""


def test_a_main_flag_set_beside_the_accelerator(tmp_path):
    assert not _codes(lint_tree(tmp_path, {"train.py": MAIN_FLAG}), "DDP806")


def test_a_main_flag_set_without_it(tmp_path):
    body = MAIN_FLAG.replace("            accelerator = Accelerator()\n", "").replace(
        "            model, optimizer = accelerator.prepare(model, optimizer)\n", "")
    body = body.replace("if step % 2 == 0 and is_main:", "if step % 2 == 0:")
    assert _codes(lint_tree(tmp_path, {"train.py": body.replace("    from accelerate import Accelerator\n",
                                                                "    from accelerate import Accelerator\n"
                                                                "    import torch.distributed as dist\n")
                                       .replace("        model = torch.nn.Linear(8, 1)\n",
                                                "        dist.init_process_group('gloo')\n"
                                                "        model = torch.nn.parallel.DistributedDataParallel("
                                                "torch.nn.Linear(8, 1))\n")}), "DDP806")


# ------------------------------------------------- a validation loader behind a wrapper, read with gradients off
# `val_loader = cycle(DataLoader(val_ds, ...))`, drawn with `next(val_loader)` every few steps of the
# training loop under `with torch.no_grad():`: a validation loader (no DDP802 at it; the training
# loader beside it is one). Twin: the validation batch back-propagated.
CYCLED = """
    import itertools
    import torch
    import torch.distributed as dist
    from torch.nn.parallel import DistributedDataParallel as DDP
    from torch.utils.data import DataLoader, TensorDataset


    def main():
        dist.init_process_group("gloo")
        train_ds = TensorDataset(torch.zeros(64, 8))
        val_ds = TensorDataset(torch.zeros(16, 8))
        train_loader = itertools.cycle(DataLoader(train_ds, batch_size=4))
        val_loader = itertools.cycle(DataLoader(val_ds, batch_size=4))
        model = DDP(torch.nn.Linear(8, 1))
        for i in range(100):
            (x,) = next(train_loader)
            model(x).sum().backward()
            if i % 10 == 0:
                with torch.no_grad():
                    (v,) = next(val_loader)
                    print(model(v).sum().item())


    if __name__ == "__main__":
        main()
"""


def test_a_cycled_validation_loader(tmp_path):
    found = _codes(lint_tree(tmp_path, {"train.py": CYCLED}), "DDP802")
    assert [f.location.line for f in found] == [_line(CYCLED, "train_loader = itertools.cycle")]


def test_a_cycled_validation_loader_that_trains(tmp_path):
    body = CYCLED.replace("                with torch.no_grad():\n", "                if True:\n").replace(
        "print(model(v).sum().item())", "model(v).sum().backward()")
    assert body != CYCLED
    assert len(_codes(lint_tree(tmp_path, {"train.py": body}), "DDP802")) == 2


# ------------------------------------------------- a template's DeepSpeed helper, launched on DDP
# diffusers' template asks `AcceleratorState().deepspeed_plugin` for its zero-3 context, and saves
# with `accelerator.save_state()` on the main process; every launch beside it names an Accelerate
# config with `distributed_type: MULTI_GPU`: DDP runs, the save is the main process's alone (no
# DDP801). Twin: the config picks DEEPSPEED.
TEMPLATE = {
    "train.py": """
        import torch
        from accelerate import Accelerator
        from accelerate.state import AcceleratorState


        def zero3_off():
            plugin = AcceleratorState().deepspeed_plugin
            return [] if plugin is None else [plugin.zero3_init_context_manager(enable=False)]


        def main():
            accelerator = Accelerator()
            model = torch.nn.Linear(8, 1)
            optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
            model, optimizer = accelerator.prepare(model, optimizer)
            for step in range(10):
                accelerator.backward(model(torch.zeros(4, 8)).sum())
                optimizer.step()
                if accelerator.is_main_process and step % 5 == 0:
                    accelerator.save_state("checkpoints")


        if __name__ == "__main__":
            main()
    """,
    "configs/ddp.yaml": "compute_environment: LOCAL_MACHINE\ndistributed_type: MULTI_GPU\nnum_processes: 8\n",
    "run.sh": "accelerate launch --config_file=configs/ddp.yaml train.py\n",
}


def test_a_template_launched_on_ddp(tmp_path):
    assert not _codes(lint_tree(tmp_path, TEMPLATE), "DDP801")


def test_a_template_launched_on_deepspeed(tmp_path):
    config = TEMPLATE["configs/ddp.yaml"].replace("MULTI_GPU", "DEEPSPEED")
    assert _codes(lint_tree(tmp_path, {**TEMPLATE, "configs/ddp.yaml": config}), "DDP801")
