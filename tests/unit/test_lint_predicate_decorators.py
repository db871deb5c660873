"""A decorator handed a predicate on the rank (`@when(lambda: rank == 0)`) runs the function on the
ranks where it holds: a barrier inside is a rank-0-only collective (DDP801) and a save inside is one
rank's (no DDP806). Read from the decorator's code when it is local; from a library, assumed and
said. A decorator that only looks at its predicate (logs when it holds) gates nothing."""

from __future__ import annotations

from tests.unit.test_lint_real_patterns import codes, lint

WHEN_LOCAL = """
import functools
def when(condition):
    def decorator(fn):
        @functools.wraps(fn)
        def decorated(*args, **kwargs):
            if condition():
                return fn(*args, **kwargs)
        return decorated
    return decorator
"""
LOGS_ONLY = """
def when(condition):
    def decorator(fn):
        def decorated(*args, **kwargs):
            out = fn(*args, **kwargs)
            if condition():
                print("done", out)
            return out
        return decorated
    return decorator
"""
LIBRARY = "from audiotools.util import when\n"
BODY = """
def main():
    rank = dist.get_rank()
    model = DDP(torch.nn.Linear(4, 1))

    @when({predicate})
    def save(step):
        torch.save(model.state_dict(), "last.pt")

    @when({predicate})
    def evaluate():
        dist.barrier()

    for step in range(10):
        model(torch.randn(2, 4)).sum().backward()
        save(step)
        evaluate()

main()
"""


def _lint(tmp_path, decorator: str, predicate: str = "lambda: rank == 0"):
    found, _ = lint(tmp_path, decorator + BODY.format(predicate=predicate))
    return found


def test_a_local_predicate_decorator_on_the_rank_gates_its_function(tmp_path):
    found = _lint(tmp_path, WHEN_LOCAL)
    assert [(f.code, f.severity.value) for f in found] == [("DDP801", "error")]
    assert "`@when(lambda: rank == 0)` holds" in found[0].message


def test_a_library_predicate_decorator_is_taken_to_gate_and_the_finding_says_it_assumed_so(tmp_path):
    found = _lint(tmp_path, LIBRARY)
    assert [(f.code, f.severity.value) for f in found] == [("DDP801", "warning")]
    assert "`when` runs the function only where its predicate holds" in found[0].message


def test_a_predicate_the_same_on_every_rank_gates_nothing_rank_wise(tmp_path):
    found = _lint(tmp_path, WHEN_LOCAL, predicate="lambda: True")
    assert [f.code for f in found] == ["DDP806"]  # every rank saves; the barrier is every rank's


def test_a_local_decorator_that_only_logs_under_its_predicate_gates_nothing(tmp_path):
    found = _lint(tmp_path, LOGS_ONLY)
    assert [f.code for f in found] == ["DDP806"]
