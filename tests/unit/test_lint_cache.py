"""The lint's results are kept across runs and used only while no file they came from changed."""

from __future__ import annotations

import json
import os
import pickle

import pytest

from ddpdoctor.core.findings import Severity
from ddpdoctor.lint import cache
from ddpdoctor.lint.driver import gather, lint

SCRIPT = """\
import torch, torch.distributed as dist
dist.init_process_group("gloo")
torch.save({}, "x.pt")
"""


@pytest.fixture(autouse=True)
def own_cache(tmp_path, monkeypatch):
    """A cache and a MAC key of this test's own, the cache's notes said afresh."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    monkeypatch.delenv("DDPDOCTOR_LINT_CACHE", raising=False)
    monkeypatch.setattr(cache, "_said", set())


def test_an_unchanged_script_is_read_from_the_cache_and_a_changed_one_again(tmp_path, monkeypatch):
    script = tmp_path / "train.py"
    script.write_text(SCRIPT)
    first = gather(str(script))
    assert not first.cached and len(first.saves) == 1
    assert list((tmp_path / "cache" / "ddpdoctor" / "lint").glob("*.json"))
    again = gather(str(script))
    assert again.cached and len(again.saves) == 1
    script.write_text(SCRIPT + "torch.save({}, 'y.pt')\n")
    changed = gather(str(script))
    assert not changed.cached and len(changed.saves) == 2


def test_a_cache_that_cannot_be_written_is_skipped(tmp_path, monkeypatch):
    blocked = tmp_path / "not-a-dir"
    blocked.write_text("a file where the cache directory would go")
    monkeypatch.setenv("XDG_CACHE_HOME", str(blocked))
    script = tmp_path / "train.py"
    script.write_text(SCRIPT)
    assert not gather(str(script)).cached and not gather(str(script)).cached
    assert os.path.isfile(blocked)


CLEAN = """\
import torch, torch.distributed as dist
dist.init_process_group("gloo")
if dist.get_rank() == 0:
    torch.save({}, "x.pt")
"""


class Planted:
    """A pickle that, when loaded, makes a directory: proof that loading it ran code."""

    def __init__(self, marker):
        self.marker = str(marker)

    def __reduce__(self):
        return (os.mkdir, (self.marker,))


def entry_of(script) -> "os.PathLike":
    return cache._entry(str(script))


def test_a_planted_pickle_or_hostile_json_entry_runs_nothing_and_changes_no_verdict(tmp_path):
    script = tmp_path / "train.py"
    script.write_text(SCRIPT)
    verdict = lint(str(script), Severity.WARNING, set()).exit_code
    folder = cache.cache_dir()
    marker = tmp_path / "ran"
    entry = entry_of(script)
    # the old format's name and the new one's, each holding a pickle that runs code when loaded
    for name in (entry.with_suffix(".pickle"), entry):
        name.write_bytes(pickle.dumps(Planted(marker)))
    assert lint(str(script), Severity.WARNING, set()).exit_code == verdict == 1
    assert not marker.exists()
    # JSON is data: the nearest it comes to code is a dict that names a callable
    entry.write_text(json.dumps({"body": json.dumps({"py/reduce": ["os.mkdir", [str(marker)]]}), "mac": "0" * 64}))
    assert not gather(str(script)).cached
    assert not marker.exists()
    assert lint(str(script), Severity.WARNING, set()).exit_code == 1
    assert sorted(p.suffix for p in folder.iterdir()) == [".json", ".pickle"]


def test_a_clean_scripts_entry_under_a_buggy_scripts_key_does_not_turn_fail_into_pass(tmp_path):
    clean, buggy = tmp_path / "clean.py", tmp_path / "buggy.py"
    clean.write_text(CLEAN)
    buggy.write_text(SCRIPT)
    assert lint(str(clean), Severity.WARNING, set()).exit_code == 0
    entry_of(buggy).write_bytes(entry_of(clean).read_bytes())  # copied under the other name
    assert not gather(str(buggy)).cached
    assert lint(str(buggy), Severity.WARNING, set()).exit_code == 1
    # forged: the right script and file digests, the clean facts, but no key to sign it with
    body = json.loads(json.loads(entry_of(clean).read_text())["body"])
    body["script"] = str(buggy)
    body["files"] = [[str(buggy), cache.digest_of(str(buggy))]]
    forged = json.dumps(body)
    entry_of(buggy).write_text(json.dumps({"body": forged, "mac": cache._mac(b"x" * 32, forged)}))
    assert lint(str(buggy), Severity.WARNING, set()).exit_code == 1


def test_an_entry_made_by_another_build_of_the_lint_is_not_used(tmp_path, monkeypatch):
    script = tmp_path / "train.py"
    script.write_text(SCRIPT)
    gather(str(script))
    assert gather(str(script)).cached
    monkeypatch.setattr(cache, "_code_digest", lambda: "another build")
    assert not gather(str(script)).cached


@pytest.mark.parametrize("garbage", [b"", b"{", b"[" * 100_000 + b"]" * 100_000, b"\xff\xfe",
                                     b'{"body": "{}", "mac": 1}'])
def test_an_entry_that_does_not_parse_is_a_miss(tmp_path, garbage):
    script = tmp_path / "train.py"
    script.write_text(SCRIPT)
    gather(str(script))
    entry_of(script).write_bytes(garbage)
    facts = gather(str(script))
    assert not facts.cached and len(facts.saves) == 1


@pytest.mark.parametrize("mode", [0o777, 0o775, 0o1777])
def test_a_cache_directory_others_can_write_is_not_used_and_said_once(tmp_path, mode):
    script = tmp_path / "train.py"
    script.write_text(SCRIPT)
    folder = cache.cache_dir()
    folder.mkdir(parents=True)
    os.chmod(folder, mode)
    first, second = gather(str(script)), gather(str(script))
    assert not first.cached and not second.cached
    assert not list(folder.iterdir())
    assert [n for n in first.notes if "lint cache not used" in n] == [
        f"lint cache not used: {folder} is writable by others (mode {mode:o})"]
    assert not [n for n in second.notes if "lint cache" in n]
