"""The watchdog's lookout over a real process tree: it reads the CPU of the launcher and its
children, so a launcher whose child works is busy and one whose child sleeps is blocked."""

from __future__ import annotations

import subprocess
import sys
import time

import psutil

from ddpdoctor.probe.launch.watchdog import Lookout, ProgressWatch, job_cpu_seconds


def test_the_lookout_reads_the_cpu_of_the_launcher_and_its_children(tmp_path):
    """A real process tree: a launcher whose child works, then one whose child sleeps. Each look
    reads from the previous one (the first, from the launch: both interpreters' own start)."""
    child = "import time\nprint('started', flush=True)\nwhile {busy}: pass\ntime.sleep(60)"
    code = "import subprocess, sys; subprocess.run([sys.executable, '-c', {child!r}])"
    for busy, blocked in ((True, False), (False, True)):
        launcher = subprocess.Popen([sys.executable, "-c", code.format(child=child.format(busy=busy))],
                                    stdout=subprocess.PIPE)
        try:
            lookout = Lookout(str(tmp_path), ProgressWatch(str(tmp_path), 3.0), lambda: ([], ""),
                              dict, job_cpu=lambda: job_cpu_seconds(launcher.pid))
            assert launcher.stdout.readline() == b"started\n"  # both interpreters have started
            lookout.look()
            time.sleep(0.5)
            verdict = lookout.look()
            assert verdict.blocked is blocked, verdict.reason
        finally:
            for proc in psutil.Process(launcher.pid).children(recursive=True):
                proc.kill()
            launcher.kill()
            launcher.wait()
    assert job_cpu_seconds(launcher.pid) is None  # ended: nothing to read
