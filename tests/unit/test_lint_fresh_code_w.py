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


def test_a_test_on_the_losss_type_is_not_a_rank_local_value(tmp_path):
    # `isinstance(loss, float)`: which code path made the loss, the same one on every rank
    found, _ = lint(tmp_path, EARLY_STOP_ON_OWN_STAT.format(share="pass").replace(
        "if drift > 0.5:", "if isinstance(drift, float):"))
    assert codes(found) == []


# ---------------------------------------------------------------------- DDP802
TUPLE_BUILDER = """
def build(n):
    data = TensorDataset(torch.randn(n, 4), torch.randn(n, 1))
    train_loader = DataLoader(data, batch_size=32)
    return data, train_loader
def my_part(n):
    per = n // dist.get_world_size()
    return slice(dist.get_rank() * per, (dist.get_rank() + 1) * per)
net = DDP(torch.nn.Linear(4, 1))
opt = torch.optim.SGD(net.parameters(), lr=0.1)
_, loader = build(256)
for epoch in range(3):
    for x, y in loader:
        {keep}
        torch.nn.functional.mse_loss(net(x), y).backward()
        opt.step()
"""


def test_a_plain_loader_returned_in_a_tuple_and_trained_on_every_rank_is_unsharded(tmp_path):
    found, _ = lint(tmp_path, TUPLE_BUILDER.format(keep="pass"))
    assert codes(found) == [("DDP802", "error", 9)]


def test_the_same_loader_whose_batches_each_rank_slices_to_its_own_part_is_sharded(tmp_path):
    # every rank loads the whole batch on purpose and keeps its slice (a hybrid-parallel model)
    found, _ = lint(tmp_path, TUPLE_BUILDER.format(keep="x, y = x[my_part(len(x))], y[my_part(len(y))]"))
    assert codes(found) == []


# ---------------------------------------------------------------------- DDP805
ACCUMULATE_THROUGH_ALIAS = """
import comm
net = comm.DDP(torch.nn.Linear(4, 1))
opt = torch.optim.SGD(net.parameters(), lr=0.1)
for j in range(100):
    net(torch.randn(8, 4)).sum().backward()
    if (j + 1) % 4 == 0:
        opt.step()
        opt.zero_grad()
"""


def test_ddp_imported_through_a_local_module_under_another_name_is_still_ddp(tmp_path):
    found, _ = lint(tmp_path, ACCUMULATE_THROUGH_ALIAS,
                    comm="from torch.nn.parallel import DistributedDataParallel as DDP\n")
    assert codes(found) == [("DDP805", "warning", 11)]


def test_a_local_modules_own_wrapper_of_that_name_is_not_ddp(tmp_path):
    found, _ = lint(tmp_path, ACCUMULATE_THROUGH_ALIAS, comm="def DDP(module):\n    return module\n")
    assert codes(found) == []


# ---------------------------------------------------------------------- DDP805
EPOCH_BY_MODE = """
def one_epoch(batches, model, opt, mode="train", every=4):
    for i, x in enumerate(batches):
        loss = model(x).sum()
        if mode == "train":
            loss.backward()
            if {when}:
                opt.step()
                opt.zero_grad()
net = DDP(torch.nn.Linear(4, 1))
opt = torch.optim.SGD(net.parameters(), lr=0.1)
for epoch in range(3):
    one_epoch([torch.randn(8, 4) for _ in range(16)], net, opt)
"""


def test_a_backward_under_a_test_the_loop_never_changes_runs_every_pass_and_accumulates(tmp_path):
    # `mode` is a parameter: the same side of the test on every pass of the loop
    found, _ = lint(tmp_path, EPOCH_BY_MODE.format(when="i % every == 0"))
    assert codes(found) == [("DDP805", "warning", 11)]


def test_the_same_epoch_stepping_every_pass_is_clean(tmp_path):
    found, _ = lint(tmp_path, EPOCH_BY_MODE.format(when='mode == "train"'))
    assert codes(found) == []


# ---------------------------------------------------------------------- DDP806
SPAWNED = """
import torch.multiprocessing as mp
def launched_here():
    return __name__ == "__main__"
def build_vocab():
    torch.save({{"a": 0}}, "vocab.pt")
def worker(rank, world):
    dist.init_process_group("gloo", rank=rank, world_size=world)
    {in_worker}
    net = DDP(torch.nn.Linear(4, 1))
if launched_here():
    build_vocab()
    mp.spawn(worker, args=(2,), nprocs=2)
"""


def test_a_file_written_by_the_launcher_before_it_spawns_the_ranks_is_written_once(tmp_path):
    # the spawned ranks import the script under another name: its `__main__` code is the launcher's
    found, _ = lint(tmp_path, SPAWNED.format(in_worker="pass"))
    assert [c for c in codes(found) if c[0] == "DDP806"] == []


def test_the_same_file_written_by_every_spawned_rank_is_every_rank(tmp_path):
    found, _ = lint(tmp_path, SPAWNED.format(in_worker="build_vocab()"))
    assert [c for c in codes(found) if c[0] == "DDP806"] == [("DDP806", "warning", 11)]


# ---------------------------------------------------------------------- DDP805
LAST_PASS_ONLY_EVALUATES = """
net = DDP(torch.nn.Linear(4, 1))
opt = torch.optim.SGD(net.parameters(), lr=0.1)
steps = 100
for step in range(steps + 1):
    {clear}
    net(torch.randn(8, 4)).sum().backward()
    if step != steps:
        opt.step()
"""


def test_a_step_skipped_on_a_pass_that_cleared_its_gradients_first_is_not_accumulation(tmp_path):
    # the last pass only evaluates; zero_grad on every pass means no gradient carries over
    found, _ = lint(tmp_path, LAST_PASS_ONLY_EVALUATES.format(clear="opt.zero_grad()"))
    assert codes(found) == []


def test_the_same_loop_without_clearing_accumulates_until_the_step(tmp_path):
    found, _ = lint(tmp_path, LAST_PASS_ONLY_EVALUATES.format(clear="pass"))
    assert codes(found) == [("DDP805", "warning", 12)]


# ---------------------------------------------------------------------- DDP805
BACKWARD_BY_OPTIMIZER = """
import argparse
parser = argparse.ArgumentParser()
parser.add_argument("--optimizer", type=str, default="{default}")
args = parser.parse_args()
net = DDP(torch.nn.Linear(4, 1))
opt = torch.optim.SGD(net.parameters(), lr=0.1)
for i in range(100):
    loss = net(torch.randn(8, 4)).sum()
    if args.optimizer == "scaled":
        (loss * 2).backward()
    else:
        loss.backward()
    if (i + 1) % 4 == 0:
        opt.step()
"""


def test_accumulation_is_reported_on_the_side_that_an_options_string_default_takes(tmp_path):
    found, _ = lint(tmp_path, BACKWARD_BY_OPTIMIZER.format(default="adamw"))
    assert codes(found) == [("DDP805", "warning", 18)]


def test_a_default_that_matches_the_comparison_takes_the_first_side(tmp_path):
    found, _ = lint(tmp_path, BACKWARD_BY_OPTIMIZER.format(default="scaled"))
    assert codes(found) == [("DDP805", "warning", 16)]


# ---------------------------------------------------------------------- DDP806
CONVERTER = """
def convert(model, path="out.pt", return_model=True):
    copy = torch.nn.Linear(4, 1)
    copy.load_state_dict(model.state_dict())
    if return_model:
        return copy
    torch.save(copy, path)
net = torch.nn.Linear(4, 1)
net = convert(net{passed})
model = DDP(net)
"""


def test_a_save_after_an_early_return_that_every_caller_leaves_on_is_never_reached(tmp_path):
    found, _ = lint(tmp_path, CONVERTER.format(passed=""))
    assert codes(found) == []


def test_a_caller_that_turns_the_early_return_off_reaches_the_save_on_every_rank(tmp_path):
    found, _ = lint(tmp_path, CONVERTER.format(passed=", return_model=False"))
    assert codes(found) == [("DDP806", "warning", 12)]


# ---------------------------------------------------------------------- DDP809
RESTART_ON_PATIENCE = """
rank = dist.get_rank()
net = DDP(torch.nn.Linear(4, 1))
opt = torch.optim.SGD(net.parameters(), lr=0.1)
def train(start_epoch, max_epochs, restart_at, patience):
    epoch = start_epoch
    stale = 0
    while epoch < max_epochs:
        net(torch.randn(8, 4)).sum().backward()
        opt.step()
        stale += 1
        {who}
            epoch = restart_at
        epoch += 1
train(0, 100, 50, 3)
"""


def test_a_loop_counter_that_rank_zero_alone_jumps_ahead_decides_the_loop_on_every_rank(tmp_path):
    # every rank steps `epoch`, rank 0 alone sets it outright: the offset stays, and rank 0
    # leaves the while loop first while the others wait in the next backward's all-reduce
    found, _ = lint(tmp_path, RESTART_ON_PATIENCE.format(who="if rank == 0 and stale >= patience:"))
    assert codes(found) == [("DDP809", "warning", 13)]


def test_the_same_jump_taken_on_every_rank_keeps_the_ranks_together(tmp_path):
    found, _ = lint(tmp_path, RESTART_ON_PATIENCE.format(who="if stale >= patience:"))
    assert codes(found) == []


# ---------------------------------------------------------------------- DDP808
SEEDED_LOADER = """
import argparse
parser = argparse.ArgumentParser()
parser.add_argument("--seed", type=int, default=1)
parser.add_argument("--num_workers", type=int, default={workers})
args = parser.parse_args()
dist.init_process_group("gloo")
data = torch.utils.data.TensorDataset(torch.randn(64, 4))
sampler = torch.utils.data.distributed.DistributedSampler(data)
loader = torch.utils.data.DataLoader(data, sampler=sampler, num_workers=args.num_workers,
                                     generator=torch.Generator().manual_seed(args.seed))
"""


def test_a_loader_whose_worker_count_defaults_to_zero_seeds_no_worker(tmp_path):
    found, _ = lint(tmp_path, SEEDED_LOADER.format(workers=0))
    assert [c for c in codes(found) if c[0] == "DDP808"] == []


def test_the_same_loader_with_workers_by_default_seeds_them_alike_on_every_rank(tmp_path):
    found, _ = lint(tmp_path, SEEDED_LOADER.format(workers=4))
    assert [c for c in codes(found) if c[0] == "DDP808"] == [("DDP808", "warning", 16)]
