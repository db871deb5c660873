"""Shapes from session 16 (blind round 10 and the entries still wrong after session 15), each with
its twin, written in our own words."""

from __future__ import annotations

from tests.unit.test_lint_real_patterns import codes, lint

EARLY_RETURN = """
def evaluate(model, sets):
    for name, data in {loop}:
        preds = [model(x) for x in data]
        dist.barrier()
        dist.all_gather_object([None] * dist.get_world_size(), preds)
        if dist.get_rank() != 0:
            return
        print(name, len(preds))

dist.init_process_group("gloo")
model = DDP(torch.nn.Linear(4, 1))
evaluate(model.module, [torch.randn(8, 4)])
"""


def _exits(found):
    return [(c, s) for c, s, _ in codes(found) if c == "DDP809"]


def test_a_rank_return_after_the_last_collective_of_a_loop_over_configured_sets_is_a_warning(tmp_path):
    # SSD: the others only wait in a second pass, and the shipped configs name one test set
    found, _ = lint(tmp_path, EARLY_RETURN.format(loop="zip(['val'], sets)"))
    assert _exits(found) == [("DDP809", "warning")]
    assert "runs more than once" in [f for f in found if f.code == "DDP809"][0].message


def test_a_rank_return_in_an_epoch_loop_stays_an_error(tmp_path):
    found, _ = lint(tmp_path, EARLY_RETURN.format(loop="zip(range(100), [sets] * 100)").replace(
        "for name, data in zip(range(100), [sets] * 100):", "for name in range(100):\n        data = sets[0]"))
    assert _exits(found) == [("DDP809", "error")]


def test_a_rank_return_before_collective_work_of_the_same_pass_stays_an_error(tmp_path):
    source = EARLY_RETURN.format(loop="zip(['val'], sets)").replace(
        "        print(name, len(preds))\n", "        dist.barrier()\n")
    found, _ = lint(tmp_path, source)
    assert _exits(found) == [("DDP809", "error")]


def test_a_zip_with_a_loader_in_it_may_run_many_passes(tmp_path):
    source = EARLY_RETURN.format(loop="zip(names, loader)").replace(
        "def evaluate(model, sets):\n",
        "def evaluate(model, sets):\n    loader = DataLoader(sets, batch_size=1)\n    names = ['a'] * 8\n")
    found, _ = lint(tmp_path, source)
    assert _exits(found) == [("DDP809", "error")]


BASE_FLAG = """
class Base:
    def __init__(self, check=False):
        self.check = check
        dist.init_process_group("gloo")
        self.model = DDP(torch.nn.Linear(4, 1))


class Epochs(Base):
    def __init__(self, max_epoch, check=False):
        super().__init__(check=check)
        self.max_epoch = max_epoch

    def check_grads(self):
        if not self.check:
            return
        torch.save(self.model, "model.pth")

    def run(self):
        for epoch in range(self.max_epoch):
            self.model(torch.randn(8, 4)).sum().backward()
            self.check_grads()


class Trainer(Epochs):
    def __init__(self):
        super().__init__(max_epoch=3{given})


Trainer().run()
"""


def test_a_flag_a_base_constructor_stores_and_no_construction_sets_guards_a_dead_save(tmp_path):
    # GeoTransformer: run_grad_check handed down two super().__init__ calls, left False
    found, _ = lint(tmp_path, BASE_FLAG.format(given=""))
    assert [f for f in found if f.code == "DDP806"] == []


def test_the_same_flag_set_by_the_subclass_keeps_the_save(tmp_path):
    found, _ = lint(tmp_path, BASE_FLAG.format(given=", check=True"))
    assert [(c, s) for c, s, _ in codes(found) if c == "DDP806"] == [("DDP806", "warning")]
