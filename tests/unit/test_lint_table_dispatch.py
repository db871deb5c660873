"""A call through a table literal (`BACKENDS[args.backend](args)`, a dict of backend classes kept
in the package's __init__) reaches every entry the table holds: the process group a backend's
constructor sets up is reached from the script, and the script is judged (not exit 4). A model
zoo's registry does not make the zoo's quiet modules read."""

from __future__ import annotations

import textwrap

from ddpdoctor.lint.driver import gather, lint_results


def lint(tmp_path, source: str, **modules: str):  # modules: {"pkg/__init__": source}
    """As test_lint_real_patterns.lint, without its head: the script sets up no process group itself."""
    for name, body in modules.items():
        target = tmp_path / f"{name}.py"
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(textwrap.dedent(body))
    (tmp_path / "train.py").write_text("import torch\nfrom torch.utils.data import DataLoader, "
                                       "DistributedSampler, TensorDataset\n" + textwrap.dedent(source))
    facts = gather(str(tmp_path / "train.py"))
    return [f for r in lint_results(facts, set()) for f in r.findings], facts

BACKENDS = """
from . import ddp, single

TABLE = {
    "nccl": ddp.Backend,
    None: single.Backend,
}


def make_backend(args):
    return TABLE[args.backend](args)
"""
DDP_BACKEND = """
import torch.distributed as dist


class Backend:
    def __init__(self, args):
        dist.init_process_group(backend=args.backend)
"""
SINGLE_BACKEND = """
class Backend:
    def __init__(self, args):
        pass
"""
SCRIPT = """
import argparse
import backends


def main(args):
    backends.make_backend(args)
    model = torch.nn.Linear(2, 2)
    ds = TensorDataset(torch.randn(8, 2))
    loader = DataLoader(ds, {sampler})
    for (x,) in loader:
        model(x).sum().backward()


main(argparse.Namespace(backend="nccl"))
"""
MODULES = {"backends/__init__": BACKENDS, "backends/ddp": DDP_BACKEND, "backends/single": SINGLE_BACKEND}


def test_the_backend_a_table_picks_sets_up_the_process_group(tmp_path):
    found, facts = lint(tmp_path, SCRIPT.format(sampler="shuffle=True"), **MODULES)
    assert facts.unreached_setup is None  # reached: judged, not "the distributed code was not reached" (exit 4)
    assert [(f.code, f.severity.value) for f in found if f.code == "DDP802"] == [("DDP802", "error")]


def test_with_a_distributed_sampler_it_is_clean(tmp_path):
    found, facts = lint(tmp_path, SCRIPT.format(sampler="sampler=DistributedSampler(ds)"), **MODULES)
    assert facts.unreached_setup is None
    assert [f.code for f in found if f.code == "DDP802"] == []


ZOO_ENTRY = """
class {name}(torch.nn.Module):
    def forward(self, x):
        # {padding}
        return x
"""


def test_a_registry_of_quiet_model_classes_does_not_read_them(tmp_path):
    zoo = "import torch\n" + "".join(ZOO_ENTRY.format(name=f"Net{i}", padding="x" * 200) for i in range(12))
    registry = ("from .zoo import Net0, Net1\n\nMODELS = {'net0': Net0, 'net1': Net1}\n\n\n"
                "def build(name):\n    return MODELS[name]()\n")
    script = ("import models\nimport torch.distributed as dist\n\ndist.init_process_group('gloo')\n"
              "model = torch.nn.parallel.DistributedDataParallel(models.build('net0'))\n")
    _, facts = lint(tmp_path, script, **{"models/__init__": registry, "models/zoo": zoo})
    assert facts.statements < 20  # the zoo (12 classes, 2,000+ characters, nothing distributed) is left unparsed
