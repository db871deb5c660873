"""DDP809 on a flag a signal handler sets: each rank runs its handler at its own step, so a test
of the flag that leaves the loop or saves collectively splits the ranks; the same flag
all-reduced first is healthy."""

from __future__ import annotations

from tests.unit.test_lint_real_patterns import codes, lint

PREEMPT = """
import signal
stop = {{"now": False}}
{handler}
def install(callback):
    signal.signal(signal.SIGUSR2, callback)
install(on_preempt)
model = DDP(torch.nn.Linear(4, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for step in range(100):
    model(torch.randn(8, 4)).sum().backward()
    opt.step()
    {decide}
        dist.barrier()
        break
"""
DICT_HANDLER = 'def on_preempt(signum, frame):\n    stop["now"] = True'
GLOBAL_HANDLER = 'def on_preempt(signum, frame):\n    global stop\n    stop = True'


def test_a_preemption_flag_set_by_a_signal_handler_and_tested_each_step_is_a_warning(tmp_path):
    found, _ = lint(tmp_path, PREEMPT.format(handler=DICT_HANDLER, decide='if stop["now"]:'))
    assert codes(found) == [("DDP809", "warning", 19)]
    assert "signal handler on_preempt()" in found[0].message


def test_a_global_flag_the_handler_declares_counts_the_same(tmp_path):
    found, _ = lint(tmp_path, PREEMPT.format(handler=GLOBAL_HANDLER, decide="if stop:"))
    assert [f.code for f in found] == ["DDP809"]


def test_the_flag_all_reduced_before_the_test_is_healthy(tmp_path):
    decide = ('flag = torch.tensor(float(stop["now"]))\n    dist.all_reduce(flag, op=dist.ReduceOp.MAX)\n'
              '    if flag.item():')
    found, _ = lint(tmp_path, PREEMPT.format(handler=DICT_HANDLER, decide=decide))
    assert [f.code for f in found if f.code == "DDP809"] == []


def test_a_handler_that_only_sets_its_own_locals_is_not_state(tmp_path):
    handler = 'def on_preempt(signum, frame):\n    seen = True\n    print(seen)'
    found, _ = lint(tmp_path, PREEMPT.format(handler=handler, decide='if stop["now"]:'))
    assert [f.code for f in found if f.code == "DDP809"] == []
