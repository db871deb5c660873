"""While the launcher supervises a job, the live view shows the launcher's own watchdog
(LiveFeed.follow) instead of reading every rank's records a second time: its rows are what that
watchdog has read, and its thread never reads the rank files."""

from __future__ import annotations

import io
import json

from ddpdoctor.probe.launch.live_feed import LiveFeed
from ddpdoctor.probe.launch.watchdog import ProgressWatch
from ddpdoctor.probe.options import ProbeOptions
from ddpdoctor.report import live


def test_a_following_live_view_shows_the_launchers_watchdog_and_reads_no_rank_file(tmp_path):
    (tmp_path / "job.log").write_text("")
    step = {"kind": "step", "t": 1.0, "step": 3, "backward_iterations": 1, "allreduce_rounds": 1}
    feed = LiveFeed(ProbeOptions("train.py", nproc_per_node=2, nnodes=2, stall_timeout_s=9.0), str(tmp_path),
                    live.PlainView(io.StringIO()))
    watch = ProgressWatch(str(tmp_path), 9.0)
    feed.follow(watch)
    (tmp_path / "rank-0.jsonl").write_text(json.dumps(step) + "\n")
    feed.tick()  # the launcher has not polled yet: nothing to show, and nothing read here
    assert feed.board().rows[0].steps == 0 and not watch.tails
    watch.forwarded(3, [dict(step, step=5)])
    watch.poll()  # the launcher's thread
    feed.tick()
    rows = {r.rank: r for r in feed.board().rows}
    assert rows[0].steps == 3 and rows[3].steps == 5
    assert feed.watch is watch and not feed.own_watch
