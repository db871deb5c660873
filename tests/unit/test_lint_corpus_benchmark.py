"""benchmarks/lint_corpus.py scores the lint against a reviewer's expectations: found at the right
line, missed, false alarm, optional, and an error where a warning is expected. Exercised on a tiny
corpus of our own written to a temp dir (the real corpus lives outside the repository)."""

from __future__ import annotations

import dataclasses
import importlib.util
import json
import sys
import textwrap
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def bench():
    spec = importlib.util.spec_from_file_location("lint_corpus", REPO / "benchmarks" / "lint_corpus.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses resolve their annotations through sys.modules
    try:
        spec.loader.exec_module(module)
        yield module
    finally:
        sys.modules.pop(spec.name, None)


SCRIPT = """\
import torch
import torch.distributed as dist
from torch.utils.data import DataLoader, DistributedSampler, TensorDataset

dist.init_process_group("gloo")
data = TensorDataset(torch.randn(8, 2))
loader = DataLoader(data, batch_size=2, sampler=DistributedSampler(data))
for epoch in range(2):
    for batch in loader:
        batch[0].sum().backward()
torch.save({}, "ckpt.pt")
"""


# a training loop over a loader without a sampler (DDP802 at its first line, 12)
PLAIN_LOOP = """\
    plain = DataLoader(data, batch_size=2, shuffle=True)
    for epoch in range(2):
        for batch in plain:
            loss = batch[0].sum()
            loss.backward()
    """


def corpus(tmp_path: Path, expected: list[dict], extra: str = "") -> Path:
    (tmp_path / "entries" / "one").mkdir(parents=True)
    (tmp_path / "entries" / "one" / "train.py").write_text(SCRIPT + textwrap.dedent(extra))
    manifest = {"entries": [{"id": "one", "repository": "ours/none", "commit": "0" * 40, "paths": ["train.py"],
                             "dir": "entries/one", "script": "train.py", "kind": "bugfix-before",
                             "expected": expected}]}
    (tmp_path / "manifest.json").write_text(json.dumps(manifest))
    return tmp_path


def score(bench, root: Path, capsys) -> dict:
    assert bench.main([str(root), "--json", str(root / "out.json")]) == 0
    capsys.readouterr()
    return json.loads((root / "out.json").read_text())["totals"]


def test_missing_corpus_is_exit_2_with_one_line(bench, tmp_path, capsys):
    assert bench.main([str(tmp_path / "absent")]) == 2
    err = capsys.readouterr().err
    assert "no corpus at" in err and err.count("\n") == 1


def test_found_missed_and_false_alarms_are_told_apart(bench, tmp_path, capsys):
    root = corpus(tmp_path, [
        {"code": "DDP804", "file": "train.py", "line": 7, "severity": "warning", "why": "no set_epoch"},
        {"code": "DDP805", "file": "train.py", "line": 3, "severity": "warning", "why": "not there"},
    ])
    totals = score(bench, root, capsys)
    assert (totals["bugs"], totals["bugs_found_right_line"]) == (2, 1)
    assert totals["missed_by_code"] == {"DDP805": 1}
    assert totals["false_warnings"] == 1 and totals["false_by_code"] == {"DDP806": 1}  # the unexpected save


def test_optional_finding_is_neither_miss_nor_false_alarm(bench, tmp_path, capsys):
    root = corpus(tmp_path, [
        {"code": "DDP804", "file": "train.py", "line": 7, "severity": "warning", "why": "no set_epoch"},
        {"code": "DDP806", "file": "train.py", "line": 11, "severity": "warning", "why": "ok", "optional": True},
        {"code": "DDP801", "file": "train.py", "line": 2, "severity": "warning", "why": "ok", "optional": True},
    ])
    totals = score(bench, root, capsys)
    assert (totals["bugs"], totals["bugs_found_right_line"]) == (1, 1)
    assert totals["false_warnings"] == 0 and totals["false_errors"] == 0


def test_error_where_a_warning_is_expected_counts_as_a_false_error(bench, tmp_path, capsys):
    root = corpus(tmp_path, [
        {"code": "DDP804", "file": "train.py", "line": 7, "severity": "error", "why": "stated as error"},
        {"code": "DDP806", "file": "train.py", "line": 11, "severity": "warning", "why": "ok"},
        {"code": "DDP802", "file": "train.py", "line": 12, "severity": "warning", "why": "at most a warning"},
    ], extra=PLAIN_LOOP)
    totals = score(bench, root, capsys)
    assert totals["wrong_severity"] == 2 and totals["bugs_found_right_line"] == 3
    # the DDP802 error where a warning is expected is a false alarm at error; the DDP804 warning
    # where an error is expected is not
    assert totals["false_errors"] == 1 and totals["false_by_code"] == {"DDP802": 1}


def test_a_warning_where_an_optional_label_says_error_is_accepted_an_error_where_it_says_warning_is_not(
        bench, tmp_path, capsys):
    # an optional label accepts no finding at all: a milder one too; a harsher one is a false error
    root = corpus(tmp_path, [
        {"code": "DDP804", "file": "train.py", "line": 7, "severity": "error", "why": "ok", "optional": True},
        {"code": "DDP802", "file": "train.py", "line": 12, "severity": "warning", "why": "ok", "optional": True},
    ], extra=PLAIN_LOOP)
    totals = score(bench, root, capsys)
    assert totals["wrong_severity"] == 1 and totals["false_errors"] == 1


def test_a_stand_in_at_the_same_place_with_another_severity_accepts_that_severity(bench, tmp_path, capsys):
    # "a warning, or an error at the same line": the DDP802 error is the label's own alternative
    root = corpus(tmp_path, [
        {"code": "DDP804", "file": "train.py", "line": 7, "severity": "warning", "why": "no set_epoch"},
        {"code": "DDP806", "file": "train.py", "line": 11, "severity": "warning", "why": "ok"},
        {"code": "DDP802", "file": "train.py", "line": 12, "severity": "warning", "why": "either",
         "or": [{"code": "DDP802", "file": "train.py", "line": 12, "severity": "error"}]},
    ], extra=PLAIN_LOOP)
    totals = score(bench, root, capsys)
    assert totals["wrong_severity"] == 0 and totals["false_errors"] == 0 and totals["bugs_found_right_line"] == 3


def test_an_entry_whose_training_code_a_config_names_is_not_judged_not_clean(bench, tmp_path, capsys):
    """The lint exits 4 there (`incomplete`): the benchmark must not count it as a clean, right entry."""
    (tmp_path / "entries" / "one").mkdir(parents=True)
    (tmp_path / "entries" / "one" / "train.py").write_text(textwrap.dedent("""\
        import importlib, sys
        import torch.distributed as dist

        dist.init_process_group("gloo")
        importlib.import_module("runners." + sys.argv[1]).run()
        """))
    manifest = {"entries": [{"id": "one", "repository": "ours/none", "commit": "0" * 40, "paths": ["train.py"],
                             "dir": "entries/one", "script": "train.py", "kind": "healthy", "expected": []}]}
    (tmp_path / "manifest.json").write_text(json.dumps(manifest))
    totals = score(bench, tmp_path, capsys)
    assert totals["unjudged_exit4"] == ["one"]


def test_an_or_stand_in_without_a_severity_has_its_labels(bench, tmp_path, capsys):
    root = corpus(tmp_path, [
        {"code": "DDP805", "file": "train.py", "line": 3, "severity": "warning", "why": "told at the save",
         "or": [{"code": "DDP806", "file": "train.py", "line": 11}]},
        {"code": "DDP804", "file": "train.py", "line": 7, "severity": "warning", "why": "no set_epoch"},
    ])
    totals = score(bench, root, capsys)
    assert (totals["bugs"], totals["bugs_found_right_line"]) == (2, 2) and totals["wrong_severity"] == 0


def test_a_ddp801_at_the_call_matches_a_label_at_the_collective_it_names(bench, tmp_path, capsys):
    """DDP801 placed at the call into a helper every rank also runs names the collective inside
    (`collective_at`): a label at that collective is the same bug, found."""
    root = corpus(tmp_path, [
        {"code": "DDP801", "file": "train.py", "line": 13, "severity": "error", "why": "barrier on rank 0 alone"},
    ], extra="""\
        def save_all(state):
            dist.barrier()
            torch.save(state, "x.pt")

        for epoch in range(2):
            save_all({})
        if dist.get_rank() == 0:
            save_all({})
        """)
    totals = score(bench, root, capsys)
    assert (totals["bugs"], totals["bugs_found_right_line"]) == (1, 1)
    assert "DDP801" not in totals["false_by_code"]


def test_a_ddp801_at_a_forward_inside_a_helper_matches_a_label_at_the_guarded_call(bench, tmp_path, capsys):
    """A DDP forward reached through a helper is reported at the forward, its chain naming the
    call under the rank test: a label at that call is the same bug, found (the reverse of
    `collective_at`)."""
    root = corpus(tmp_path, [
        {"code": "DDP801", "file": "train.py", "line": 19, "severity": "warning", "why": "rank-0 evaluation"},
    ], extra="""\
        model = torch.nn.parallel.DistributedDataParallel(torch.nn.Sequential(torch.nn.Linear(2, 2), torch.nn.BatchNorm1d(2)))
        def evaluate(net):
            with torch.no_grad():
                return net(torch.randn(2, 2))
        for epoch in range(2):
            model(torch.randn(2, 2)).sum().backward()
            if dist.get_rank() == 0:
                evaluate(model)
        """)
    totals = score(bench, root, capsys)
    assert (totals["bugs"], totals["bugs_found_right_line"]) == (1, 1)
    assert "DDP801" not in totals["false_by_code"]


def test_rebuild_commands_extract_an_entrys_submodule_into_its_folder(bench, tmp_path):
    manifest = {"entries": [
        {"id": "one", "repository": "ours/main", "commit": "a" * 40, "paths": ["train.py"], "dir": "entries/one",
         "extra_sources": [{"repository": "ours/sub", "commit": "b" * 40, "paths": ["models"], "into": "pkg"}]}]}
    lines = bench.rebuild_commands(manifest, tmp_path / "m", tmp_path / "corpus").splitlines()
    assert len(lines) == 2
    assert f"git -C {tmp_path / 'm' / 'ours+sub'} archive {'b' * 40} -- 'models'" in lines[1]
    assert lines[1].endswith(f"| tar -x -C {tmp_path / 'corpus' / 'entries' / 'one' / 'pkg'}")


def test_rebuild_commands_read_a_fetched_snapshot_through_its_git_dir_and_a_clone_in_place(bench, tmp_path):
    manifest = {"entries": [
        {"id": "one", "repository": "ours/snap", "commit": "a" * 40, "paths": ["train.py"], "dir": "entries/one"},
        {"id": "two", "repository": "ours/clone", "commit": "b" * 40, "paths": ["x y.py"], "dir": "entries/two"}]}
    (tmp_path / "m" / "ours+snap" / "repo").mkdir(parents=True)  # what fetch brings: a git dir, no work tree
    lines = bench.rebuild_commands(manifest, tmp_path / "m", tmp_path / "corpus").splitlines()
    assert f"git --git-dir {tmp_path / 'm' / 'ours+snap' / 'repo'} archive {'a' * 40} -- 'train.py'" in lines[0]
    assert f"git -C {tmp_path / 'm' / 'ours+clone'} archive {'b' * 40} -- 'x y.py'" in lines[1]
    assert lines[1].endswith(f"| tar -x -C {tmp_path / 'corpus' / 'entries' / 'two'}")


def test_a_ddp808_at_the_loader_matches_a_label_at_the_seeding_it_names(bench, tmp_path, capsys):
    """DDP808 (workers seeded from a torch generator every rank seeds alike) is placed at the
    loader and names the seeding (`seed_locations`): a label at the seeding call is the same bug,
    found; the loader's own line would be too."""
    root = corpus(tmp_path, [
        {"code": "DDP808", "file": "train.py", "line": 15, "severity": "warning", "why": "same seed everywhere"},
    ], extra="""\
        class Jitter(torch.utils.data.Dataset):
            def __len__(self): return 8
            def __getitem__(self, i): return torch.rand(2)
        torch.manual_seed(0)
        jittered = Jitter()
        train = DataLoader(jittered, batch_size=2, sampler=DistributedSampler(jittered), num_workers=2)
        model = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(2, 1))
        for epoch in range(2):
            train.sampler.set_epoch(epoch)
            for x in train:
                model(x).sum().backward()
        """)
    totals = score(bench, root, capsys)
    assert (totals["bugs"], totals["bugs_found_right_line"]) == (1, 1)
    assert "DDP808" not in totals["false_by_code"]


def test_a_check_that_crashes_on_an_entry_is_that_entrys_crash(bench, tmp_path, capsys, monkeypatch):
    # before, the entry was scored as if the crashed check had found nothing there
    from ddpdoctor.core import registry

    def boom(facts):
        raise RuntimeError("planted")

    spec = next(s for s in registry.all_checks("lint") if s.code == "DDP806")
    monkeypatch.setitem(registry._REGISTRY, "DDP806", dataclasses.replace(spec, func=boom))
    root = corpus(tmp_path, [{"code": "DDP804", "file": "train.py", "line": 7, "severity": "warning", "why": "x"}])
    totals = score(bench, root, capsys)
    assert totals["crashed"] == ["one"]
    row = json.loads((root / "out.json").read_text())["entries"][0]
    assert "DDP806" in row["crashed"] and "planted" in row["crashed"]


def test_rebuild_commands_list_an_entry_copied_from_the_index_as_a_comment(bench, tmp_path):
    manifest = {"entries": [
        {"id": "copied", "repository": "ours/idx", "commit": "index", "paths": ["a.py", "b.py"], "dir": "entries/copied",
         "copied_from_index": True},
        {"id": "tree", "repository": "ours/tree", "commit": "c" * 40, "paths": ["t.py"], "dir": "entries/tree"}]}
    lines = bench.rebuild_commands(manifest, tmp_path / "m", tmp_path / "corpus").splitlines()
    assert lines[0].startswith("# copied: copied file by file from the search index") and "a.py, b.py" in lines[0]
    assert len(lines) == 2 and "archive " + "c" * 40 in lines[1] and "index" not in lines[1]
