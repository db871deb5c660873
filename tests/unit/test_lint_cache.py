"""The lint's results are kept across runs and used only while no file they came from changed."""

from __future__ import annotations

import os

from ddpdoctor.lint.run import gather

SCRIPT = """\
import torch, torch.distributed as dist
dist.init_process_group("gloo")
torch.save({}, "x.pt")
"""


def test_an_unchanged_script_is_read_from_the_cache_and_a_changed_one_again(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    script = tmp_path / "train.py"
    script.write_text(SCRIPT)
    first = gather(str(script))
    assert not first.cached and len(first.saves) == 1
    assert list((tmp_path / "cache" / "ddpdoctor" / "lint").glob("*.pickle"))
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
