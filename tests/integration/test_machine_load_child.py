"""The machine's load counts a reaped child's CPU as the job's own work (a real child process)."""

from __future__ import annotations

import subprocess
import sys

from ddpdoctor.probe.launch import machine_load
from ddpdoctor.probe.launch.machine_load import between


def test_a_reaped_child_is_counted_as_the_jobs_own_work():
    first = machine_load.sample()
    assert first is not None  # psutil reads the CPU times on every platform this project runs on
    burn = "import time\nend = time.process_time() + 0.3\nwhile time.process_time() < end: pass"
    subprocess.run([sys.executable, "-c", burn], check=True)
    load = between(first, machine_load.sample())
    assert load is not None and load.cpus >= 1
    assert load.job_cores * load.seconds >= 0.3  # the child's CPU, reaped: the job's
    assert load.busy_cores * load.seconds >= 0.3 * 0.9  # the machine saw it busy too
