"""The in-rank memory instrument in a fresh process (torch imported there): it counts
parameters, gradients, Adam's state and the activations saved for backward, and leaves the
numerics of training bit for bit."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest

from ddpdoctor.probe.records import telemetry as tm

pytestmark = pytest.mark.multiprocess

SCRIPT = textwrap.dedent("""
    import json, sys, torch
    from ddpdoctor.probe.inrank import memory, recorder
    from ddpdoctor.probe.records import telemetry as tm
    rec = recorder.Recorder(sys.argv[1]); recorder.set_recorder(rec)
    from torch.optim.optimizer import register_optimizer_step_post_hook
    def count(opt, a, k): rec.step += 1
    register_optimizer_step_post_hook(count)   # the probe's step clock (steps.py), first
    measure = sys.argv[2] == "1"
    if measure:
        memory.install()
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(64, 256), torch.nn.ReLU(), torch.nn.Linear(256, 4))
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    x = torch.randn(32, 64)
    def closure():
        opt.zero_grad()
        loss = model(x).square().mean()
        loss.backward()
        return loss
    for step in range(4):
        if sys.argv[3] == "closure":  # forward and backward inside the step, as Lightning does
            opt.step(closure)
        else:
            closure()
            opt.step()
    grads = [p.grad.double().sum().item() for p in model.parameters()]
    print(json.dumps({"grads": grads, "pushed": torch._C._autograd._top_saved_tensors_default_hooks(False) is not None}))
    if measure:
        memory.end()
""")


def _run_instruments(tmp_path, *variants: tuple[bool, bool]) -> list[tuple[dict, list]]:
    """Each (measure, closure) variant in a Python of its own, all started at once: most of each
    is the torch import, which one process cannot share with another."""
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    started = []
    for measure, closure in variants:
        path = tmp_path / f"rank-{int(measure)}{int(closure)}.jsonl"
        proc = subprocess.Popen([sys.executable, "-c", SCRIPT, str(path), "1" if measure else "0",
                                 "closure" if closure else "plain"],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
        started.append((proc, path))
    results = []
    for proc, path in started:
        try:
            stdout, stderr = proc.communicate(timeout=120)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        assert proc.returncode == 0, stderr
        results.append((json.loads(stdout.strip().splitlines()[-1]), tm.read_records(path)))
    return results


def test_instrument_counts_parameters_gradients_adam_state_and_activations_and_leaves_numerics(tmp_path):
    (plain, _), (measured, records), closure_run = _run_instruments(
        tmp_path, (False, False), (True, False), (True, True))
    assert measured["grads"] == plain["grads"]  # bit-identical training
    assert measured["pushed"] is False  # the saved-tensor hooks are gone after one step
    params = (64 * 256 + 256 + 256 * 4 + 4) * 4
    by_moment = {r.moment: r for r in records if isinstance(r, tm.Memory)}
    assert set(by_moment) >= {"start", "step", "activations", "end"}
    held = next(r for r in records if isinstance(r, tm.Memory) and r.params is not None)
    assert (held.params, held.params_full, held.grads) == (params, params, params)
    assert held.optimizer >= 2 * params and held.sharding == ""  # exp_avg, exp_avg_sq (+ step)
    # saved for backward, parameters left out: the input (first Linear), ReLU's output (saved by
    # ReLU and by the second Linear: one storage, counted once), the output (square)
    assert by_moment["activations"].activations == (32 * 64 + 32 * 256 + 32 * 4) * 4
    assert by_moment["end"].peak >= by_moment["start"].current > 0
    # optimizer.step(closure): the window stays open through the step that runs the forward
    with_closure, records = closure_run
    assert with_closure["grads"] == plain["grads"] and with_closure["pushed"] is False
    [activations] = [r for r in records if isinstance(r, tm.Memory) and r.moment == "activations"]
    assert activations.activations == (32 * 64 + 32 * 256 + 32 * 4) * 4
