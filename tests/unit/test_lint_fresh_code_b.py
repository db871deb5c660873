"""Issue 38, vision repositories new to the corpus (helper b): what the lint misjudged there, written
again in our own words as small scripts, each with its healthy twin."""

from __future__ import annotations

from tests.unit.test_lint_real_patterns import lint


# ------------------------------------------------ DDP805: an `if` around both sides of the accumulation
ACCUMULATE_UNDER_A_SWITCH = """
model = DDP(torch.nn.Linear(4, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.1)
loader = DataLoader(TensorDataset(torch.randn(64, 4)), sampler=DistributedSampler(range(64)), batch_size=4)
def fit(every, half):
    for i, (x,) in enumerate(loader):
        opt.zero_grad()
        if half:
            model(x).sum().backward()
            opt.step()
        else:
            loss = model(x).sum()
            if every > 1:
                if (i + 1) % every == 0:
                    loss.backward()
                    opt.step()
                else:
                    with model.no_sync():
                        loss.backward()
            else:
                loss.backward()
                opt.step()
for epoch in range(2):
    loader.sampler.set_epoch(epoch)
    fit(4, False)
"""


def test_a_switch_around_the_stepping_and_the_no_sync_sides_does_not_put_no_sync_on_the_step(tmp_path):
    # `if every > 1:` holds both sides; only the inner test decides which micro-step steps
    found, _ = lint(tmp_path, ACCUMULATE_UNDER_A_SWITCH)
    assert [f for f in found if "is on for a micro-step on which the optimizer steps" in f.message] == []


def test_no_sync_on_the_micro_step_that_steps_is_still_reported(tmp_path):
    # the twin under the same switch: no_sync is chosen by `i % every != 0`, which is on for the
    # micro-step `(i + 1) % every == 0` that steps, so that step's gradients are never all-reduced
    source = ACCUMULATE_UNDER_A_SWITCH.replace("""\
                if (i + 1) % every == 0:
                    loss.backward()
                    opt.step()
                else:
                    with model.no_sync():
                        loss.backward()""", """\
                with model.no_sync() if i % every != 0 else contextlib.nullcontext():
                    loss.backward()
                if (i + 1) % every == 0:
                    opt.step()""")
    assert "contextlib" in source
    found, _ = lint(tmp_path, "import contextlib\n" + source)
    assert [f.code for f in found if "is on for a micro-step on which the optimizer steps" in f.message] == ["DDP805"]


# ------------------------------------------- DDP804: set_epoch(0) for an evaluation pass beside set_epoch(epoch)
EVAL_PASS_OVER_THE_TRAIN_LOADER = """
model = DDP(torch.nn.Linear(4, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.1)
loader = DataLoader(TensorDataset(torch.randn(64, 4)), sampler=DistributedSampler(range(64)), batch_size=4)
for epoch in range(3):
{first}
    for x, in loader:
        model(x).sum().backward()
        opt.step()
    if epoch % 2 == 1:
        loader.sampler.set_epoch(0)
        with torch.no_grad():
            scores = [model.module(x).mean() for x, in loader]
"""


def test_a_fixed_epoch_for_an_evaluation_pass_beside_the_per_epoch_set_epoch_keeps_the_shuffle(tmp_path):
    # the next epoch's set_epoch(epoch) undoes the set_epoch(0) the evaluation pass used
    found, _ = lint(tmp_path, EVAL_PASS_OVER_THE_TRAIN_LOADER.format(first="    loader.sampler.set_epoch(epoch)"))
    assert [f.code for f in found if f.code == "DDP804"] == []


def test_the_fixed_epoch_alone_repeats_the_order_every_epoch(tmp_path):
    # the twin: no per-epoch set_epoch, only the constant one - the order never changes
    found, _ = lint(tmp_path, EVAL_PASS_OVER_THE_TRAIN_LOADER.format(first="    pass"))
    assert [f.code for f in found if f.code == "DDP804"] == ["DDP804"]
