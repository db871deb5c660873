"""A method called on a library's object is not the script's method of the same name: a list of
PIL frames' `frames[0].save(...)` is no call of the script's checkpoint `save` (a false DDP806
seen on real code). A receiver nothing is known of keeps the by-name guess where the script's
objects of that class may be anywhere: the twins below (a class whose every object one name
holds is no other receiver's: lint/receivers.sole_holder)."""

from __future__ import annotations

import pytest

from tests.unit.test_lint_real_patterns import codes, lint

TRAINER = """
from PIL import Image
import torchvision.transforms as T
class Trainer:
    def __init__(self):
        self.model = torch.nn.Linear(4, 1)
    def save(self, num):
        torch.save(self.model.state_dict(), f"model_{{num}}.pt")
    def render(self, num):
        {render}
def main():
    trainer = Trainer()
    if dist.get_rank() == 0:
        trainer.save(1)
    trainer.render(1)
main()
"""

LIBRARY_RECEIVERS = {
    "element of a list of appended images": """frames = []
        for i in range(4):
            frames.append(T.ToPILImage()(torch.rand(3, 8, 8)))
        frames[0].save(f"{num}.gif", save_all=True, append_images=frames[1:])""",
    "loop variable over enumerate(images)": """frames = [Image.new("RGB", (8, 8)) for _ in range(4)]
        for i, frame in enumerate(frames):
            frame.save(f"{num}_{i}.png")""",
    "a name a library call made": """still = Image.fromarray(torch.zeros(8, 8).numpy())
        still = still.convert("L")
        still.save("still.png")""",
}

OWN_RECEIVERS = {
    "element of a list of the script's trainers": """others = [Trainer()]
        others[0].save(num)""",
    "loop variable over the script's trainers": """for i, other in enumerate([Trainer(), Trainer()]):
            other.save(i)""",
    "a parameter nothing is known of": """helper(self)
def helper(who):
    who.save(2)
if True:
    pass""",
    "a list extended with unknown items": """items = []
        items.extend(self.peers())
        items[0].save(num)
        return self  # (a Trainer handed out: it may be among the items)""",
    "the script's object handed back by a library wrapper": """import copy
        twin = copy.deepcopy(Trainer())
        twin.save(num)""",
    "an unknown object handed to a library call": """import copy
        twin = copy.copy(self.peer)
        twin.save(num)
        return self  # (a Trainer handed out: it may be anywhere, self.peer too)""",
}


@pytest.mark.parametrize("render", LIBRARY_RECEIVERS.values(), ids=LIBRARY_RECEIVERS.keys())
def test_a_library_objects_save_is_not_the_scripts_save(tmp_path, render):
    found, _ = lint(tmp_path, TRAINER.format(render=render))
    assert codes(found) == []


@pytest.mark.parametrize("render", OWN_RECEIVERS.values(), ids=OWN_RECEIVERS.keys())
def test_a_receiver_that_may_be_the_scripts_object_keeps_the_guess(tmp_path, render):
    found, _ = lint(tmp_path, TRAINER.format(render=render))
    assert [c[0] for c in codes(found)] == ["DDP806"]
