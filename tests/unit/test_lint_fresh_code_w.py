"""Issue 38, a second blind measure (helper w: language, speech, RL, recommendation code new to
the corpus): what the lint misjudged there, written again in our own words as small scripts, each
with its healthy twin."""

from __future__ import annotations

from tests.unit.test_lint_real_patterns import codes, lint


# ---------------------------------------------------------------------- DDP807
HAND_ALL_REDUCE = """
net = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.Linear(8, 1))
opt = torch.optim.SGD(net.parameters(), lr=0.1)
for step in range(10):
    x = torch.randn(16, 4)
    net(x).sum().backward()
    flat = []
    for p in {walked}:
        if {kept}:
            flat.append({value})
    grads = torch.cat(flat)
    dist.all_reduce(grads)
    opt.step()
"""


def test_gradients_kept_while_walking_the_models_parameters_have_the_models_size(tmp_path):
    found, _ = lint(tmp_path, HAND_ALL_REDUCE.format(walked="net.parameters()", kept="p.grad is not None",
                                                   value="p.grad.view(-1)"))
    assert codes(found) == []


def test_a_list_kept_while_walking_the_batch_still_has_the_datas_size(tmp_path):
    # the same shape of code, walking the batch's values: the length follows the data
    found, _ = lint(tmp_path, HAND_ALL_REDUCE.format(walked="x", kept="p.sum() > 0", value="p"))
    assert codes(found) == [("DDP807", "warning", 17)]


# ---------------------------------------------------------------------- DDP805
PER_LAYER_HEADS = """
heads = [torch.nn.Linear(4, 1) for _ in range(3)]
opt = torch.optim.SGD([p for h in heads for p in h.parameters()], lr=0.1)
for i in range(100):
    feats = [torch.randn(32, 4) for _ in heads]
    if i == 0:
        wrapped = {wrapped}
    for j, x in enumerate(feats):
        head = wrapped[j]
        for chunk in x.chunk(4):
            head(chunk).sum().backward()
    if (i + 1) % 2 == 0:
        opt.step()
        opt.zero_grad()
"""


def test_backwards_in_chunks_of_a_ddp_model_picked_from_a_list_accumulate_until_a_later_step(tmp_path):
    # the step lies two loops out from the chunks' backward; the DDP model is one element of
    # a list built by a comprehension, or the plain list when not distributed
    found, _ = lint(tmp_path, PER_LAYER_HEADS.format(
        wrapped="[DDP(h) for h in heads] if dist.is_initialized() else heads"))
    assert codes(found) == [("DDP805", "warning", 16)]


def test_the_same_chunks_on_plain_modules_need_no_no_sync(tmp_path):
    found, _ = lint(tmp_path, PER_LAYER_HEADS.format(wrapped="list(heads)"))
    assert codes(found) == []


# ---------------------------------------------------------------------- DDP809
EARLY_STOP_ON_OWN_STAT = """
net = DDP(torch.nn.Linear(4, 2))
opt = torch.optim.SGD(net.parameters(), lr=0.1)
for rollout in range(100):
    xs, old = torch.randn(64, 4), torch.randn(64, 2)
    for sweep in range(4):
        for mb in xs.split(16):
            new = net(mb)
            drift = (new - old[:16]).pow(2).mean()
            loss = new.sum() + drift
            opt.zero_grad()
            loss.backward()
            opt.step()
        {share}
        if drift > 0.5:
            break
"""


def test_leaving_the_update_sweeps_on_a_statistic_of_the_ranks_own_forward_diverges(tmp_path):
    # `drift` comes from this rank's forward on its own minibatch, like the loss it backpropagates:
    # one rank stops sweeping while the others run the next sweep's gradient all-reduce
    found, _ = lint(tmp_path, EARLY_STOP_ON_OWN_STAT.format(share="pass"))
    assert codes(found) == [("DDP809", "warning", 20)]


def test_the_same_statistic_all_reduced_first_decides_alike_on_every_rank(tmp_path):
    found, _ = lint(tmp_path, EARLY_STOP_ON_OWN_STAT.format(share="dist.all_reduce(drift)"))
    assert codes(found) == []


def test_a_test_on_the_batchs_shape_is_not_a_rank_local_value(tmp_path):
    # the size of the batch: equal on every rank under a DistributedSampler
    found, _ = lint(tmp_path, EARLY_STOP_ON_OWN_STAT.format(share="pass").replace(
        "if drift > 0.5:", "if new.shape[0] < 16:"))
    assert codes(found) == []
