"""Issue 38, vision repositories new to the corpus (helper x): what the lint misjudged there, written
again in our own words as small scripts, each with its healthy twin."""

from __future__ import annotations

from tests.unit.test_lint_real_patterns import codes, lint


# ---------------------------------------------------------------------- DDP805: a `continue` skips the step
SKIP_THE_STEP = """
model = DDP(torch.nn.Linear(4, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.1)
loader = DataLoader(TensorDataset(torch.randn(64, 4)), sampler=DistributedSampler(range(64)), batch_size=4)
def fit(every):
    for i, (x,) in enumerate(loader):
        loss = model(x).sum() / every
{body}
for epoch in range(2):
    loader.sampler.set_epoch(epoch)
    fit(4)
"""


def test_a_backward_every_batch_and_a_continue_before_the_step_accumulates(tmp_path):
    # the micro-steps that `continue` still all-reduced their gradients: no no_sync
    found, _ = lint(tmp_path, SKIP_THE_STEP.format(body="""\
        loss.backward()
        if (i + 1) % every != 0:
            continue
        opt.step()
        opt.zero_grad()"""))
    assert codes(found) == [("DDP805", "warning", 13)]


def test_a_skipped_batch_before_its_backward_is_not_accumulation(tmp_path):
    # the `continue` skips the backward too: every backward is followed by its own step
    found, _ = lint(tmp_path, SKIP_THE_STEP.format(body="""\
        if not torch.isfinite(loss):
            continue
        loss.backward()
        opt.step()
        opt.zero_grad()"""))
    assert [c for c in codes(found) if c[0] == "DDP805"] == []  # (DDP809 names the rank-local decision)


def test_the_continue_before_the_step_with_no_sync_on_the_skipped_micro_steps_is_clean(tmp_path):
    found, _ = lint(tmp_path, SKIP_THE_STEP.format(body="""\
        if (i + 1) % every != 0:
            with model.no_sync():
                model(x).sum().backward()
            continue
        model(x).sum().backward()
        opt.step()
        opt.zero_grad()"""))
    assert codes(found) == []
