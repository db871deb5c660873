"""The child runner that collects a node's output (a real child process): it feeds the child its
input, keeps at most its limit of the output without blocking the child, and kills it at its
deadline."""

from __future__ import annotations

import sys

from ddpdoctor.preflight.transport import child


def test_child_output_beyond_its_limit_is_read_and_dropped_without_blocking_the_child():
    code = "import sys; sys.stdout.write('x' * (3 << 20)); sys.stdout.flush(); print('done', file=sys.stderr)"
    done = child.run([sys.executable, "-c", code], b"", timeout=60, max_output=1 << 20)
    assert done.returncode == 0 and done.truncated
    assert len(done.stdout) == 1 << 20 and done.stderr.strip() == b"done"


def test_child_gets_its_input_and_is_killed_at_its_deadline():
    done = child.run([sys.executable, "-c", "import sys; print(sys.stdin.read().upper())"], b"hi", timeout=60)
    assert done.stdout.strip() == b"HI" and not done.truncated and not done.timed_out
    slow = child.run([sys.executable, "-c", "import time; print('up', flush=True); time.sleep(60)"], b"", timeout=2)
    assert slow.timed_out and slow.stdout.strip() == b"up" and slow.seconds < 10
