# The scripts tests run, lint or replay are inputs, never tests: a real pattern named like a test
# (lint_real/helper_returns_rank_test.py calls init_process_group at import) broke collection
# and with it the whole `-m serial` phase.
collect_ignore = ["scripts", "faults", "data", "probe_recordings"]


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
