"""The one reader of stack texts (run_model/stack_text.py), which the watchdog, the analysis and
attach share: faulthandler dumps and py-spy's JSON give the same frames."""

from pathlib import Path

import ddpdoctor
from ddpdoctor.probe.run_model.outcome import Frame
from ddpdoctor.probe.run_model.stack_text import parse_faulthandler, pyspy_main_thread, relative_to
from tests.helpers.telemetry_builders import faulthandler_dump

OWN = str(Path(ddpdoctor.__file__).parent / "probe" / "inrank" / "collectives.py")  # our own wrapper


def test_faulthandler_gives_the_main_thread_of_the_last_dump_innermost_first():
    # rank-<R>.stack gathers one dump per signal (SIGUSR1 from the watchdog, then SIGTERM).
    text = faulthandler_dump(line=57) + "\n" + faulthandler_dump(line=61, call="broadcast")
    frames = parse_faulthandler(text)
    assert frames[0] == Frame("broadcast", "torch/distributed/distributed_c10d.py", 3252)
    assert Frame("train_step", "/home/u/proj/train.py", 61) in frames
    assert not any(f.file.startswith("<frozen") for f in frames)


def test_the_main_thread_is_the_one_at_module_level_wherever_it_stands():
    text = ("Current thread 0x01 (most recent call first):\n"
            '  File "/usr/lib/python3.11/threading.py", line 327 in wait\n'
            '  File "/usr/lib/python3.11/threading.py", line 1002 in _bootstrap\n'
            "\nThread 0x02 (most recent call first):\n"
            f'  File "{OWN}", line 40 in all_reduce\n'
            '  File "/home/u/train.py", line 9 in <module>\n')
    assert parse_faulthandler(text) == [Frame("<module>", "/home/u/train.py", 9)]
    assert parse_faulthandler("") == [] and parse_faulthandler("Fatal Python error: x\n") == []


def test_pyspy_json_reads_like_faulthandler():
    threads = [{"thread_name": "pin", "active": True, "frames": []},
               {"thread_name": "MainThread", "active": False, "frames": [
                   {"name": "all_reduce", "filename": "/v/site-packages/torch/distributed/distributed_c10d.py", "line": 3252},
                   {"name": "wrapped", "filename": OWN, "line": 40},
                   {"name": "train_step", "filename": "/home/u/proj/train.py", "line": 57}]}]
    frames, idle = pyspy_main_thread(threads)
    assert idle is True
    assert frames == parse_faulthandler(faulthandler_dump(line=57))[:1] + [Frame("train_step", "/home/u/proj/train.py", 57)]


def test_frames_are_named_as_the_rank_s_telemetry_names_its_files():
    frames = [Frame("all_reduce", "/v/lib/python3.11/site-packages/torch/distributed/c10d.py", 9),
              Frame("train_step", "/home/u/proj/train.py", 57), Frame("other", "/elsewhere/x.py", 3)]
    assert [f.file for f in relative_to(frames, "/home/u/proj/")] == [
        "torch/distributed/c10d.py", "train.py", "/elsewhere/x.py"]
    assert [f.file for f in relative_to(frames, "")][1] == "/home/u/proj/train.py"
