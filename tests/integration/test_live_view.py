"""The probe shown while it runs: a live table of the ranks on a terminal (a real pseudo-terminal,
a real 2-rank gloo job), the script's own output prefixed by rank above it; and the pieces the
view is made of, fed files as the ranks write them."""

from __future__ import annotations

import fcntl
import io
import json
import os
import pty
import re
import select
import struct
import subprocess
import termios
import time
from pathlib import Path

import pytest
from rich.console import Console

from tests.helpers.cli_runner import ddpdoctor_exe
from tests.helpers.probe_runner import processes_of
from tests.helpers.train_scripts import SLOW_TRAIN

from ddpdoctor.probe.launch.live_feed import LiveFeed, ScriptOutput
from ddpdoctor.probe.options import ProbeOptions
from ddpdoctor.report import live

ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
# A row of the live table: host, rank, pid, phase, steps, collectives, last progress.
ROW = re.compile(r"^(\S+)\s+(\d+)\s+(\d+|-)\s+(.+?)\s+(\d+)\s+(\d+)\s+(\S+ ago|-)\s*$")


def run_in_pty(argv: list[str], cwd: Path, env: dict, deadline_s: float, cols: int = 110) -> tuple[int, str]:
    """Run argv with a pseudo-terminal as its stdin, stdout and stderr; all it wrote, as text."""
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 40, cols, 0, 0))
    proc = subprocess.Popen(argv, stdin=slave, stdout=slave, stderr=slave, cwd=cwd, env=env,
                            start_new_session=True)
    os.close(slave)
    data = bytearray()
    end = time.monotonic() + deadline_s
    try:
        while time.monotonic() < end:
            ready, _, _ = select.select([master], [], [], 0.5)
            if ready:
                try:
                    chunk = os.read(master, 65536)
                except OSError:  # EIO: every writer has gone
                    break
                if not chunk:
                    break
                data += chunk
            elif proc.poll() is not None:
                break
        else:
            proc.kill()
        code = proc.wait(timeout=30)
    finally:
        os.close(master)
    return code, data.decode("utf-8", "replace")


def screen_lines(raw: str) -> list[str]:
    """What the terminal showed, line by line, in the order written (redraws included)."""
    return [line for line in ANSI.sub("", raw).replace("\r\n", "\n").replace("\r", "\n").split("\n")]


@pytest.mark.multiprocess
def test_live_table_shows_both_ranks_advancing_and_their_prefixed_output_before_the_end(tmp_path):
    script = tmp_path / "slow_train.py"
    script.write_text(SLOW_TRAIN)
    run_dir, tmp = tmp_path / "run", tmp_path / "tmp"
    tmp.mkdir()
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES", "TORCH_CPP_LOG_LEVEL")}
    env.update(TERM="xterm-256color", TMPDIR=str(tmp))
    code, raw = run_in_pty([*ddpdoctor_exe(), "probe", str(script), "--run-dir", str(run_dir),
                            "--max-steps", "0"], cwd=tmp_path, env=env, deadline_s=180)
    # The job ran to its end (the verdict is the checks' business, not the view's).
    assert json.loads((run_dir / "outcome.json").read_text())["status"] == "completed", raw[-3000:]
    assert code in (0, 1), raw[-3000:]
    assert not processes_of(run_dir.resolve())
    lines = screen_lines(raw)
    end = next(i for i, line in enumerate(lines) if line == "[rank0]: training done"
               or line == "[rank1]: training done")

    # Before any rank finished the script: rows of both ranks, their steps going up mid-run.
    seen: dict[int, list[int]] = {0: [], 1: []}
    for line in lines[:end]:
        row = ROW.match(line)
        if row and row.group(1) != "host":
            seen[int(row.group(2))].append(int(row.group(5)))
    for rank, steps in seen.items():
        midway = sorted({s for s in steps if 0 < s < 12})
        assert len(midway) >= 2, f"rank {rank}: steps seen before the end {steps}"
        assert steps == sorted(steps), f"rank {rank}'s steps went back: {steps}"
    shown = "\n".join(lines[:end])
    assert "in script" in shown and "ddpdoctor probe slow_train.py" in shown and "steps/s" in shown

    # The script's own lines, whole, prefixed by rank, printed as it ran; the C++ INFO logs the
    # probe turned on are kept in job.log only.
    for rank in (0, 1):
        assert any(line == f"[rank{rank}]: step 3 loss" or line.startswith(f"[rank{rank}]: step 3 loss ")
                   for line in lines[:end]), lines[:end]
    log = (run_dir / "job.log").read_text()
    assert "[rank1]: step 3 loss" in log and "Reducer initialized" in log
    assert "Reducer initialized" not in raw

    # The report follows the final table; torchrun's per-rank copies are gone with the job.
    assert "failing on error and above" in raw[-600:]
    assert [p.name for p in tmp.iterdir() if not p.name.startswith("torchinductor_")] == []


def _write(path: Path, *records: dict) -> None:
    with open(path, "a") as handle:
        for record in records:
            handle.write(json.dumps({"kind": record.pop("kind"), **record}, separators=(",", ":")) + "\n")


def _start(rank: int, host: str) -> dict:
    return {"kind": "start", "t": time.time(), "rank": rank, "local_rank": rank % 2, "world_size": 4,
            "pid": 1000 + rank, "host": host, "script": "train.py", "argv": [], "python": "3.11",
            "torch": "2.13"}


def test_rows_come_from_every_rank_file_with_hosts_from_start_records(tmp_path):
    """Multi-node: every node's ranks land in node 0's run dir; each row says its host."""
    (tmp_path / "job.log").write_text("")
    for rank, host in ((0, "node-a"), (1, "node-a"), (2, "node-b"), (3, "node-b")):
        _write(tmp_path / f"rank-{rank}.jsonl", _start(rank, host))
    _write(tmp_path / "rank-0.jsonl", {"kind": "step", "t": time.time(), "step": 3,
                                       "backward_iterations": 1, "allreduce_rounds": 1})
    _write(tmp_path / "rank-2.jsonl", {"kind": "collective", "t": time.time(), "group": "WORLD",
                                       "group_ranks": None, "seq": 7, "op": "all_gather",
                                       "shapes": [[1]], "dtypes": ["float32"], "step": 3, "site": None})
    _write(tmp_path / "rank-3.jsonl", {"kind": "loader", "t": time.time(), "loader_id": 0, "epoch": 0,
                                       "step": 0, "sampler": "DistributedSampler",
                                       "distributed_sampler": True, "shuffle": True, "sampler_epoch": 0,
                                       "batches": 4, "batch_size": 2, "drop_last": False,
                                       "dataset": "D", "dataset_len": 8, "num_workers": 0,
                                       "iterable": False, "site": None})
    feed = LiveFeed(ProbeOptions("train.py", nproc_per_node=2, nnodes=2, max_steps=20), str(tmp_path),
                    live.PlainView(io.StringIO()))
    feed.tick()
    rows = {r.rank: r for r in feed.board().rows}
    assert [(r.host, r.pid) for r in rows.values()] == [("node-a", 1000), ("node-a", 1001),
                                                        ("node-b", 1002), ("node-b", 1003)]
    assert rows[0].steps == 3 and rows[0].phase == "in script"
    assert rows[2].phase == "in collective all_gather" and rows[2].collectives == 1
    assert rows[3].phase == "in DataLoader"
    _write(tmp_path / "rank-2.jsonl", {"kind": "collective_done", "t": time.time(), "group": "WORLD", "seq": 7})
    feed.tick()
    assert feed.board().rows[2].phase == "in script"


def test_countdown_runs_to_the_stall_verdict_when_a_rank_waits_and_none_advances(tmp_path):
    (tmp_path / "job.log").write_text("")
    _write(tmp_path / "rank-0.jsonl", _start(0, "vm"),
           {"kind": "collective", "t": time.time(), "group": "WORLD", "group_ranks": None, "seq": 0,
            "op": "barrier", "shapes": [], "dtypes": [], "step": 0, "site": None})
    feed = LiveFeed(ProbeOptions("train.py", nproc_per_node=1, stall_timeout_s=9.0), str(tmp_path),
                    live.PlainView(io.StringIO()))
    feed.tick()
    assert feed.board().countdown() is None  # it just advanced
    feed.watch.last_progress -= 4.0  # as if four quiet seconds had passed
    board = feed.board()
    assert 4.9 < board.countdown() <= 5.0
    assert "stall verdict in 5.0s" in live.progress_line(board)
    feed.watch.last_progress -= 6.0
    for state in feed.watch.ranks.values():
        state.seen -= 10.0
    board = feed.board()
    assert board.countdown() <= 0 and "taking every rank's stack" in live.progress_line(board)
    assert board.rows[0].phase == "stalled (in collective barrier)"


def test_quiet_ranks_busy_in_their_own_code_show_where_they_are_not_a_countdown(tmp_path):
    """Nothing pending (no collective, no init): the watchdog's look says where the ranks are
    (watch.jsonl), and no stall verdict is counted down: slow is not stuck."""
    (tmp_path / "job.log").write_text("")
    _write(tmp_path / "rank-0.jsonl", _start(0, "vm"))
    _write(tmp_path / "rank-1.jsonl", _start(1, "vm"))
    feed = LiveFeed(ProbeOptions("train.py", nproc_per_node=2, stall_timeout_s=9.0), str(tmp_path),
                    live.PlainView(io.StringIO()))
    feed.tick()
    feed.watch.last_progress -= 32.0
    for state in feed.watch.ranks.values():
        state.seen -= 32.0
    where = "in load_dataset() at train.py:41"
    (tmp_path / "watch.jsonl").write_text(json.dumps(
        {"t": time.time(), "quiet_s": 31.0, "blocked": False, "waiting": [], "working": [0, 1],
         "places": [{"ranks": [0, 1], "where": where}],
         "ranks": {"0": {"where": "load_dataset() at train.py:41", "waiting": False},
                   "1": {"where": "load_dataset() at train.py:41", "waiting": False}}}) + "\n")
    board = feed.board()
    assert board.countdown() is None
    line = live.progress_line(board)
    assert line.endswith(f"; ranks 0-1 {where}; quiet for 32.0s, no collective pending")
    assert "stall verdict" not in line
    table = live.render(board).plain
    assert table.endswith("ranks 0-1 in load_dataset() at train.py:41 for 32.0s, no collective pending")
    assert [r.phase for r in board.rows] == [where, where]


def test_script_output_hides_the_probes_own_cpp_info_logs_and_quiet_script_hides_all(tmp_path):
    log = tmp_path / "job.log"
    log.write_text("[rank0]: [rank0]:[I1125 07:48:40.996292525 logger.cpp:223] [Rank 0]: DDP Initialized with: \n"
                   "[rank0]: broadcast_buffers: 1\n[rank0]: \n"
                   "[rank1]: [W1125 07:48:40.1 reducer.cpp:1] a warning stays\n"
                   "[I1125 07:48:36.954329072 TCPStore.cpp:271] [c10d - debug] server started\n"
                   "[rank0]: epoch 1 done\n"
                   "[rank0]:  Avg forward compute time: 760156 \n"  # its INFO line was 2 lines up
                   "[rank1]: half a li")
    shown = io.StringIO()
    feed = LiveFeed(ProbeOptions("train.py"), str(tmp_path), live.PlainView(shown, every_s=3600))
    feed.tick()
    assert shown.getvalue() == "[rank1]: [W1125 07:48:40.1 reducer.cpp:1] a warning stays\n[rank0]: epoch 1 done\n"
    with open(log, "a") as handle:
        handle.write("ne\n")
    feed.tick()
    assert shown.getvalue().endswith("[rank1]: half a line\n")
    assert ScriptOutput(keep_cpp_info=True).shown(["[I1125 07:48:36.9 x.cpp:1] kept"]) == ["[I1125 07:48:36.9 x.cpp:1] kept"]

    quiet = io.StringIO()
    feed = LiveFeed(ProbeOptions("train.py"), str(tmp_path), live.PlainView(quiet, every_s=3600),
                    show_script=False)
    feed.start()
    feed.stop()
    assert quiet.getvalue() == ""


def test_a_64_rank_table_is_drawn_with_at_most_max_rows_and_sums_up_the_rest():
    """What keeps a redraw cheap at any world size: the table is bounded (its CPU cost per redraw
    is a timing, so it is benchmarks/live_redraw.py's figure, not an assertion here)."""
    rows = [live.RankRow(r, f"node{r // 8}", 10000 + r, "in collective all_reduce", 100 + r % 3, 400, 0.2)
            for r in range(64)]
    board = live.Board(42.0, rows, 200, 3.3, 0.4, 8.0, "train.py")
    out = io.StringIO()
    Console(file=out, width=200).print(live.render(board))
    drawn = set(re.findall(r"\b100\d\d\b", out.getvalue()))  # the pids of the rows drawn
    assert len(drawn) == live.MAX_ROWS
    assert f"{64 - live.MAX_ROWS} more ranks" in out.getvalue()


def test_preflight_host_progress_appears_only_after_a_second_on_a_terminal():
    out = io.StringIO()
    progress = live.HostProgress(Console(file=out, force_terminal=True, width=100), after_s=0.3)
    with progress:
        progress.asking(3)
        progress.answered("a")
        progress.answered("b")
        time.sleep(0.8)
    assert "hosts answered 2/3" in out.getvalue()
    quick = io.StringIO()
    with live.HostProgress(Console(file=quick, force_terminal=True), after_s=5.0) as progress:
        progress.asking(3)
    assert quick.getvalue() == ""
    piped = io.StringIO()
    with live.HostProgress(Console(file=piped), after_s=0.0) as progress:  # not a terminal
        progress.asking(3)
        time.sleep(0.3)
    assert piped.getvalue() == ""


def test_torchruns_raw_copies_live_outside_the_run_dir_and_die_with_the_job(tmp_path, monkeypatch):
    import tempfile

    from ddpdoctor.probe.launch.joblog import JobLog

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    monkeypatch.delenv("PET_LOG_DIR", raising=False)
    orphan = tmp_path / "ddpdoctor-tee-4194304-x"  # above the largest pid_max: not alive
    orphan.mkdir()
    alive = tmp_path / f"ddpdoctor-tee-{os.getpid()}-y"
    alive.mkdir()
    (tmp_path / "run").mkdir()
    log = JobLog(tmp_path / "run" / "job.log", secrets=[])
    env = log.with_rank_prefixes({"PATH": "/bin"}, "torchrun")
    assert env["PET_TEE"] == "3" and env["TORCHELASTIC_LOG_LINE_PREFIX_TEMPLATE"] == "[rank${rank}]: "
    tee = Path(env["PET_LOG_DIR"])
    assert tee.is_dir() and tee.parent == tmp_path and not tee.is_relative_to(tmp_path / "run")
    assert not orphan.exists() and alive.exists()  # a killed ddpdoctor's copies are swept
    assert log.with_rank_prefixes({}, "none") == {}  # --launcher none: no torchrun, no tee
    log.close()
    assert not tee.exists()
