import os
import sys

# Compiled modules are kept between the suite's processes. An environment that sets
# PYTHONDONTWRITEBYTECODE (this machine's image does) makes each of the hundreds of `ddpdoctor`
# commands the suite runs compile ddpdoctor's own modules again (measured: `ddpdoctor lint` 0.85 ->
# 0.55 CPU-s; a probe's CPU is torch's import in torchrun and the ranks, which ship their
# bytecode). What a test proves does not depend on it.
os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
sys.dont_write_bytecode = False

# Hypothesis's own clocks (its per-example deadline, its "too slow" health check on generating
# data) are timing assertions: beside another job on two cores they failed a property test that
# passes alone (test_hosts' hostlist expansion, once in a suite run under load). What the property
# tests prove does not depend on speed; timing belongs in benchmarks/.
from hypothesis import HealthCheck, settings  # noqa: E402

settings.register_profile("ddpdoctor", deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("ddpdoctor")

# The scripts tests run, lint or replay are inputs, never tests: a real pattern named like a test
# (lint_real/helper_returns_rank_test.py calls init_process_group at import) broke collection
# and with it the whole `-m serial` phase.
collect_ignore = ["scripts", "faults", "data", "probe_recordings"]
# No message with a hole in it: judged over every test's Problems at the end of the session.
pytest_plugins = ["tests.helpers.message_holes"]


def pytest_terminal_summary(terminalreporter):
    """One line per reason a test was skipped, with its count, and what enables it: a fresh
    machine without sshd or root should see why dozens of tests did not run, not guess."""
    counts = {}
    for report in terminalreporter.stats.get("skipped", []):
        reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else str(report.longrepr)
        reason = reason.removeprefix("Skipped: ")
        counts[reason] = counts.get(reason, 0) + 1
    if counts:
        terminalreporter.write_sep("-", "skipped, by reason")
        for reason, count in sorted(counts.items(), key=lambda item: -item[1]):
            terminalreporter.write_line(f"{count:4d} skipped: {reason}")


def _weight(item) -> int:
    """A test's share of the suite's time, roughly: a real multi-process job costs seconds of CPU
    (torch imported by every rank); an ssh or namespace test waits on real daemons; the rest is
    milliseconds."""
    if item.get_closest_marker("multiprocess"):
        return 3
    return 1 if item.get_closest_marker("ssh") or item.get_closest_marker("netns") else 0


def pytest_collection_modifyitems(config, items):
    """Heaviest files first, the fast unit files last (stable within a file). pytest-xdist hands
    out whole files (--dist loadfile) in this order when --no-loadscope-reorder is given, so the
    long files start at once and the quick ones fill the workers at the end, instead of one long
    file starting last and running alone on an otherwise idle machine."""
    weight: dict = {}
    for item in items:
        weight[item.path] = weight.get(item.path, 0) + _weight(item)
    order = {path: n for n, path in enumerate(dict.fromkeys(item.path for item in items))}
    items.sort(key=lambda item: (-weight[item.path], order[item.path]))
