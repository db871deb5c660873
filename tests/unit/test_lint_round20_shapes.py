"""Shapes from session 19 (DDP806 false warnings of session 18's holdout), each with its twin,
written in our own words: writes one after the other in one block are one finding; a per-item
cache filled where the file is missing has one writer per file; a write into a stream the caller
opened is the caller's file."""

from __future__ import annotations

from tests.unit.test_lint_fix_kinds import fixed
from tests.unit.test_lint_real_patterns import lint

ONE_BLOCK = """
model = DDP(torch.nn.Linear(4, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for epoch in range(3):
    torch.save(model.state_dict(), "model.pt")
    torch.save(opt.state_dict(), "opt.pt")
    if epoch == 2:
        torch.save(model.state_dict(), "final.pt")
"""


def saves(found) -> list:
    return [(f.location.line, f.evidence.get("also")) for f in found if f.code == "DDP806"]


def test_writes_one_after_the_other_in_one_block_are_one_finding_naming_the_others(tmp_path):
    found, _ = lint(tmp_path, ONE_BLOCK)
    # model.pt and opt.pt: one block, told once at its first write; final.pt sits under its own if
    assert saves(found) == [(10, [11]), (13, None)]
    first = next(f for f in found if f.code == "DDP806")
    assert "1 more write in the same block, line 11" in first.message


def test_writes_under_different_tests_stay_apart(tmp_path):
    found, _ = lint(tmp_path, """
model = DDP(torch.nn.Linear(4, 1))
for epoch in range(3):
    if epoch % 2:
        torch.save(model.state_dict(), "odd.pt")
    else:
        torch.save(model.state_dict(), "even.pt")
""")
    assert saves(found) == [(10, None), (12, None)]


def test_a_per_node_block_is_one_finding_too(tmp_path):
    found, _ = lint(tmp_path, """
local_rank = int(os.environ["LOCAL_RANK"])
model = DDP(torch.nn.Linear(4, 1))
if local_rank == 0:
    torch.save(model.state_dict(), "model.pt")
    torch.save({"step": 1}, "state.pt")
NNODES = int(os.environ.get("NNODES", 1))  # a job on several nodes
""")
    assert saves(found) == [(10, [11])]


def test_the_fix_puts_the_whole_block_under_one_rank_test(tmp_path):
    new, _ = fixed(tmp_path, """\
        model = DDP(torch.nn.Linear(4, 1))
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        def save():
            torch.save(model.state_dict(), "model.pt")

            torch.save(opt.state_dict(), "opt.pt")
        save()
        """, "DDP806")
    assert ("    if dist.get_rank() == 0:\n        torch.save(model.state_dict(), \"model.pt\")\n\n"
            "        torch.save(opt.state_dict(), \"opt.pt\")\n") in new, new


def test_the_fix_guards_each_write_where_other_statements_sit_between(tmp_path):
    new, _ = fixed(tmp_path, """\
        model = DDP(torch.nn.Linear(4, 1))
        def save():
            torch.save(model.state_dict(), "model.pt")
            extra = {"step": 1}
            torch.save(extra, "extra.pt")
            return extra
        save()
        """, "DDP806")
    assert new.count("if dist.get_rank() == 0:") == 2, new
    assert "    extra = {\"step\": 1}\n" in new  # the statement between stays on every rank


PER_ITEM_CACHE = """
class Features:
    def of(self, {param}):
        cached = os.path.join("cache", {name} + ".pt")
        if os.path.isfile(cached):
            try:
                feats = torch.load(cached)
            except Exception:
                os.remove(cached)          # a broken entry: made again
                feats = torch.zeros(3)
                torch.save(feats, cached)
        else:
            feats = torch.zeros(3)
            torch.save(feats, cached)
        return feats

model = DDP(torch.nn.Linear(3, 1))
features = Features()
for clip in ["a.mp4", "b.mp4"]:
    model(features.of({arg})).sum().backward()
"""


def test_a_cache_filled_per_item_where_missing_has_one_writer_per_file(tmp_path):
    found, _ = lint(tmp_path, PER_ITEM_CACHE.format(param="clip", name="os.path.basename(clip)", arg="clip"))
    assert saves(found) == []


def test_its_twin_a_single_cache_file_every_rank_fills_is_reported(tmp_path):
    found, _ = lint(tmp_path, PER_ITEM_CACHE.format(param="", name='"all"', arg=""))
    # (the `except:` side's write and the `else:` side's are one write either way: told once)
    assert saves(found) == [(16, [19])]


def test_a_load_or_save_helper_is_no_cache(tmp_path):
    # the save is the helper's other mode, not the missing file's filling: still every rank's
    found, _ = lint(tmp_path, """
def checkpoint(path, model=None):
    if os.path.exists(path):
        return torch.load(path)
    torch.save(model.state_dict(), path)

model = DDP(torch.nn.Linear(4, 1))
checkpoint("last.pt", model)
""")
    assert [line for line, _ in saves(found)] == [10]


STREAM = """
import io
def write_item(stream{annotation}, data):
    out = wrapped(stream)
    torch.save(data, out)
def wrapped(s):
    return s
model = DDP(torch.nn.Linear(4, 1))
with open(f"shard{{dist.get_rank()}}.bin", "wb") as fh:
    write_item(fh, model.state_dict())
"""


def test_a_write_into_a_stream_the_caller_opened_is_the_callers_file(tmp_path):
    found, _ = lint(tmp_path, STREAM.format(annotation=": io.IOBase"))
    assert saves(found) == []


def test_its_twin_an_unannotated_path_parameter_is_still_judged(tmp_path):
    found, _ = lint(tmp_path, """
def write_item(path, data):
    torch.save(data, path)
model = DDP(torch.nn.Linear(4, 1))
write_item("shard.bin", model.state_dict())
""")
    assert [line for line, _ in saves(found)] == [8]
