"""benchmarks/lint_corpus.py names the entries whose cold analysis takes over 1 s of CPU (issue 38's
bar is per entry; the median hides the slow few), the largest package aside (its bar is 2 s)."""

from __future__ import annotations

from tests.unit.test_lint_corpus_benchmark import bench  # noqa: F401 - the fixture: the benchmark module


def test_totals_name_the_slowest_entry_and_those_over_one_second_besides_the_largest(bench):
    rows = [bench.Scored("small", "healthy", files=1, cpu_seconds=0.2),
            bench.Scored("slow", "healthy", files=3, cpu_seconds=1.4),
            bench.Scored("big", "healthy", files=90, cpu_seconds=1.8),
            bench.Scored("refused", "healthy", files=0, cpu_seconds=5.0, refused="bad input")]
    t = bench.totals(rows)
    assert t["slowest_cpu"] == {"id": "big", "cpu_seconds": 1.8}
    assert t["over_1s_cpu"] == ["slow"]
    line = bench.totals_lines(t)[-1]
    assert "slowest big 1.8 s" in line and "over 1 s besides the largest: 1 slow" in line
