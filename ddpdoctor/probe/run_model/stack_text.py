"""The one reader of the stack texts a rank leaves: faulthandler's dump (rank-<R>.stack, or the
text the watchdog tailed after SIGUSR1), py-spy's `dump --json` (and the Flight Recorder's
frames, which have the same shape), the speedscope file of attach's `py-spy record`, and
py-spy's reason when it failed. The watchdog reads them
live (launch/stacks.py), the analysis at the end of a run (analysis/stack_groups.py), attach from
the running job's Flight Recorder dumps and py-spy's errors (attach/).

Every reader gives the frames the same way: innermost first, ddpdoctor's own frames dropped,
library paths shortened to their package ("torch/distributed/distributed_c10d.py"), so one
stack reads the same whichever way it was taken.
"""

from __future__ import annotations

import os
import re
from typing import Iterable, Optional

from ddpdoctor.core.paths import is_own_file
from ddpdoctor.probe.run_model.outcome import Frame

FAULTHANDLER_FRAME = re.compile(r'^\s*File "(?P<file>[^"]+)", line (?P<line>\d+) in (?P<func>.+)$')


def short_library_path(path: str) -> str:
    """.../site-packages/torch/distributed/x.py -> torch/distributed/x.py; user paths unchanged."""
    for marker in ("/site-packages/", "/dist-packages/"):
        if marker in path:
            return path.split(marker, 1)[1]
    return path


def without_own_frames(frames: list[Frame]) -> list[Frame]:
    """Drop ddpdoctor's own frames (the bootstrap, the collective wrappers): the user should
    see torch's all_reduce called from train.py, not our wrapper in between."""
    return [Frame(f.func, short_library_path(f.file), f.line) for f in frames
            if not is_own_file(f.file)
            and not f.file.startswith("<frozen runpy>")]


def relative_to(frames: Iterable[Frame], cwd: str) -> list[Frame]:
    """The frames as the ranks' telemetry names their files: library paths short, the user's
    files beneath `cwd` (where the rank runs) relative to it ("train.py"). The watchdog reads
    its own working directory (the job's), attach each rank's."""
    prefix = cwd.rstrip(os.sep) + os.sep if cwd else ""
    out = []
    for frame in frames:
        name = short_library_path(frame.file)
        if prefix and name.startswith(prefix):
            name = name[len(prefix):]
        out.append(Frame(frame.func, name, frame.line))
    return out


def parse_faulthandler(text: str) -> list[Frame]:
    """The main thread's frames of the last dump in faulthandler text, innermost first.

    faulthandler writes one block per thread ("Thread 0x..." / "Current thread 0x..." /
    "Stack", each "(most recent call first):"), and a rank's file gathers one dump per signal.
    The main thread is the block that reaches the script's module level (`<module>`: a worker
    thread starts in threading); the last such block is the last dump's. Else the last
    "Current thread" block, else the last block."""
    blocks: list[tuple[bool, list[Frame]]] = []
    for line in text.splitlines():
        stripped = line.strip()
        if "most recent call first" in stripped:
            blocks.append((stripped.startswith("Current thread"), []))
            continue
        match = FAULTHANDLER_FRAME.match(line)
        if match:
            if not blocks:
                blocks.append((False, []))
            blocks[-1][1].append(Frame(match["func"].strip(), match["file"], int(match["line"])))
    blocks = [b for b in blocks if b[1]]
    if not blocks:
        return []
    main = (next((f for _, f in reversed(blocks) if any(x.func == "<module>" for x in f)), None)
            or next((f for current, f in reversed(blocks) if current), None)
            or blocks[-1][1])
    return without_own_frames(main)


def json_frames(frames: list) -> list[Frame]:
    """The frames of py-spy's `dump --json` or of a Flight Recorder entry (each {name,
    filename, line}, innermost first), read like every other stack (ours dropped, library
    paths shortened); an entry that is no object is passed over."""
    return without_own_frames([Frame(str(f.get("name", "?")), str(f.get("filename", "?")),
                                     int(f.get("line") or 0)) for f in frames if isinstance(f, dict)])


def pyspy_main_thread(threads: list) -> tuple[list[Frame], Optional[bool]]:
    """The main thread's frames of py-spy's `dump --json` (innermost first, ours dropped) and
    whether it was idle (waiting in C++, not running Python)."""
    main = next((t for t in threads if t.get("thread_name") == "MainThread"),
                threads[0] if threads else {})
    return json_frames(main.get("frames", [])), not main.get("active", True)


def parse_speedscope(data: dict, pid: int) -> list[tuple[Frame, ...]]:
    """The main thread's samples from py-spy's speedscope file, innermost frame first.

    py-spy writes one sampled profile per thread, named 'Thread <tid> "<name>"'; each sample
    lists frame indexes outermost first. The main thread is the one named MainThread, else the
    one whose thread id is the pid, else the one with most samples. The frames are as py-spy
    names them: attach names their files with `relative_to`, each rank's working directory."""
    frames = data["shared"]["frames"]
    profiles = [p for p in data.get("profiles", []) if p.get("type") == "sampled"]
    if not profiles:
        return []

    def rank_profile(profile: dict) -> tuple:
        name = profile.get("name", "")
        return ('"MainThread"' in name, f"Thread {pid} " in name + " ", len(profile.get("samples", [])))

    main = max(profiles, key=rank_profile)
    table = [Frame(str(f.get("name", "?")), str(f.get("file", "?")), int(f.get("line") or 0))
             for f in frames]
    stacks = []
    for sample in main.get("samples", []):
        stacks.append(tuple(table[i] for i in reversed(sample)))
    return stacks


def pyspy_failure(text: str, code: int) -> str:
    """py-spy's reason in one line: its `Error:` line and innermost cause, never a backtrace line."""
    lines = [ln.strip() for ln in text.split("Stack backtrace:")[0].splitlines() if ln.strip()]
    error = next((ln[len("Error:"):].strip() for ln in lines if ln.startswith("Error:")), "")
    causes = [re.sub(r"^\d+:\s*", "", ln) for ln in lines if re.match(r"^\d+:\s", ln)]
    reason = (f"{error} ({causes[-1]})" if error and causes else error
              or (lines[-1] if lines else f"exit {code}"))
    if "permission denied" in text.lower():
        # Yama's ptrace_scope, a container without CAP_SYS_PTRACE, a job of another user.
        return "py-spy was not allowed to attach (permission denied)"
    return f"py-spy failed: {reason}"
