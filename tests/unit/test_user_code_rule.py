"""One rule for "the user's code" (core/paths.is_user_file), decided with the ddpdoctor each rank
imported: a copy of ddpdoctor elsewhere (a checkout in the job's folder) is ddpdoctor's once a
rank's Start record names it, in every reader of stacks."""

from __future__ import annotations

import pytest

from ddpdoctor.core import paths
from ddpdoctor.probe.records import telemetry as tm
from ddpdoctor.probe.run_model.loaded_run import RunModel
from ddpdoctor.probe.run_model.outcome import Frame
from ddpdoctor.probe.run_model.stack_text import without_own_frames
from ddpdoctor.probe.run_model.stack_view import StackView
from tests.helpers.telemetry_builders import RunBuilder

COPY = "/home/me/clone/ddpdoctor"
WRAPPER = COPY + "/probe/inrank/collectives.py"


@pytest.fixture
def own_dirs():
    saved = list(paths._OWN_DIRS)
    paths.is_user_file.cache_clear()
    yield
    paths._OWN_DIRS[:] = saved
    paths.is_user_file.cache_clear()


def _hang_stack() -> StackView:
    return StackView(0, [Frame("barrier", "torch/distributed/distributed_c10d.py", 5349),
                         Frame("collective", WRAPPER, 167), Frame("<module>", "hang.py", 8)], "py-spy")


def test_the_ranks_call_sites_their_traces_and_every_stack_reader_share_one_rule():
    from ddpdoctor.probe.inrank import coverage, recorder
    from ddpdoctor.probe.run_model import stack_view

    assert recorder.is_user_file is paths.is_user_file
    assert coverage.is_user_file is paths.is_user_file
    assert stack_view.is_user_file is paths.is_user_file


def test_a_copy_of_ddpdoctor_a_rank_imported_is_never_the_user_s_line(own_dirs):
    assert _hang_stack().user_frame.file == WRAPPER  # unknown copy: as any folder of the user's
    paths.note_own_dir(COPY)
    view = _hang_stack()
    assert view.user_frame == Frame("<module>", "hang.py", 8) and str(view.location) == "hang.py:8"
    assert [f.file for f in without_own_frames(view.frames)] == ["torch/distributed/distributed_c10d.py", "hang.py"]


def test_a_run_dir_read_later_takes_the_copy_from_the_ranks_start_records(own_dirs, tmp_path):
    run = RunBuilder(world_size=1, formed=False)
    start = run[0].records[0]
    run[0].records[0] = tm.Start(start.t, 0, 0, 1, 1000, "node0", "hang.py", [], "3.11", "2.13",
                                 "torchrun", COPY)
    RunModel.load(run.write(tmp_path / "run"))
    assert not paths.is_user_file(WRAPPER) and paths.is_own_file(WRAPPER)
    assert paths.is_user_file("/home/me/clone/hang.py")


def test_a_relative_or_odd_own_dir_is_not_taken():
    before = list(paths._OWN_DIRS)
    paths.note_own_dir("")
    paths.note_own_dir("ddpdoctor")
    assert paths._OWN_DIRS == before
