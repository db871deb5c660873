"""Modules a script loads by name at run time: `importlib.import_module("pkg.train")` with a
constant, or a plugin chosen by a config (`import_module(f"pkg.trainers.{name}_trainer")`), and
`getattr(module, "run")`: the lint reads and follows them, so their code is judged."""

from __future__ import annotations

import textwrap

from ddpdoctor.core.findings import Severity
from ddpdoctor.lint.driver import lint

RANK0_BARRIER = """
import torch.distributed as dist


def run(settings):
    if dist.get_rank() == 0:
        dist.barrier()
"""
EVERY_RANK_BARRIER = RANK0_BARRIER.replace("    if dist.get_rank() == 0:\n        dist.barrier()",
                                           "    dist.barrier()")
TRAINER = """
import torch.distributed as dist


class Trainer:
    def __init__(self, model):
        self.model = model

    def train(self):
        if dist.get_rank() == 0:
            dist.barrier()
"""


def _lint(tmp_path, script: str, **modules: str):
    for name, body in modules.items():
        path = tmp_path / f"{name.replace('.', '/')}.py"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(body))
    (tmp_path / "run.py").write_text(textwrap.dedent(script))
    report = lint(str(tmp_path / "run.py"), Severity.ERROR, set())
    return [(f.code, f.location.file.rsplit("/", 1)[-1]) for r in report.results for f in r.findings], report


SCRIPT = """
import importlib
import torch.distributed as dist

dist.init_process_group("gloo")
expr_module = importlib.import_module("pkg.train_script")
expr_func = getattr(expr_module, "run")
expr_func(None)
"""


def test_a_module_loaded_by_a_constant_name_and_its_function_taken_by_getattr_is_judged(tmp_path):
    found, _ = _lint(tmp_path, SCRIPT, **{"pkg.__init__": "", "pkg.train_script": RANK0_BARRIER})
    assert found == [("DDP801", "train_script.py")]


def test_the_same_module_with_a_barrier_on_every_rank_is_healthy(tmp_path):
    found, report = _lint(tmp_path, SCRIPT, **{"pkg.__init__": "", "pkg.train_script": EVERY_RANK_BARRIER})
    assert found == [] and report.status == "pass"


def test_a_function_called_on_the_loaded_module_is_followed(tmp_path):
    script = SCRIPT.replace('expr_func = getattr(expr_module, "run")\nexpr_func(None)', "expr_module.run(None)")
    found, _ = _lint(tmp_path, script, **{"pkg.__init__": "", "pkg.train_script": RANK0_BARRIER})
    assert found == [("DDP801", "train_script.py")]


PLUGIN = """
import sys
from importlib import import_module
import torch.distributed as dist


def get_trainer(name):
    return getattr(import_module(f"pkg.trainers.{name}_trainer"), "Trainer")


dist.init_process_group("gloo")
trainer = get_trainer(sys.argv[1])(model=None)
trainer.train()
"""


def test_a_trainer_class_chosen_by_a_config_among_the_packages_modules_is_judged(tmp_path):
    found, _ = _lint(tmp_path, PLUGIN, **{"pkg.__init__": "", "pkg.trainers.__init__": "",
                                          "pkg.trainers.gan_trainer": TRAINER, "pkg.trainers.utils": ""})
    assert found == [("DDP801", "gan_trainer.py")]


def test_a_module_outside_the_f_strings_pattern_is_not_taken_for_the_plugin(tmp_path):
    # `utils.py` does not end in `_trainer`: never loaded by that call, so its bug is not reached
    found, _ = _lint(tmp_path, PLUGIN, **{"pkg.__init__": "", "pkg.trainers.__init__": "",
                                          "pkg.trainers.gan_trainer": TRAINER.replace(
                                              "        if dist.get_rank() == 0:\n            dist.barrier()",
                                              "        dist.barrier()"),
                                          "pkg.trainers.utils": TRAINER})
    assert found == []


def test_one_reader_of_a_name_spelled_at_run_time_serves_every_rule():
    import ast as _ast
    from ddpdoctor.lint.patterns import name_pattern
    spelled = {src: name_pattern(_ast.parse(src, mode="eval").body) for src in (
        "'pkg.train'", "'init_dist_%s' % x", "'init_dist_' + x", "f'pkg.t.{c.name}_trainer'", "f'{a}{b}'", "x")}
    assert spelled == {"'pkg.train'": ("pkg.train", None), "'init_dist_%s' % x": ("init_dist_", ""),
                       "'init_dist_' + x": ("init_dist_", ""), "f'pkg.t.{c.name}_trainer'": ("pkg.t.", "_trainer"),
                       "f'{a}{b}'": None, "x": None}


def test_a_string_annotation_too_deep_to_parse_is_no_type_and_no_crash(tmp_path):
    deep = '"' + "(" * 5000 + "X" + ")" * 5000 + '"'
    found, report = _lint(tmp_path, f"import torch.distributed as dist\n\ndef f(cfg: {deep}):\n"
                                    "    return cfg.run()\n\ndist.init_process_group('gloo')\nf(None)\n")
    assert found == [] and report.status == "pass"


def test_a_plugin_class_without_an_init_loaded_by_name_at_the_top_level_is_built_and_judged(tmp_path):
    script = ("import sys\nfrom importlib import import_module\nimport torch.distributed as dist\n\n"
              "dist.init_process_group('gloo')\n"
              "Trainer = getattr(import_module(f'pkg.trainers.{sys.argv[1]}_trainer'), 'Trainer')\n"
              "Trainer().train()\n")
    no_init = TRAINER.replace("    def __init__(self, model):\n        self.model = model\n\n", "")
    found, _ = _lint(tmp_path, script, **{"pkg.__init__": "", "pkg.trainers.__init__": "",
                                          "pkg.trainers.gan_trainer": no_init})
    assert found == [("DDP801", "gan_trainer.py")]


def test_a_plugin_package_larger_than_the_file_cap_is_read_up_to_it_and_says_so(tmp_path, monkeypatch):
    from ddpdoctor.lint import sources
    monkeypatch.setattr(sources, "MAX_FILES", 4)
    modules = {"pkg.__init__": "", "pkg.trainers.__init__": ""}
    modules.update({f"pkg.trainers.m{i}_trainer": EVERY_RANK_BARRIER for i in range(6)})
    _, report = _lint(tmp_path, PLUGIN, **modules)
    assert any("6 modules may be loaded by name (import_module); 3 read, the lint reads at most 4 files" in n
               for n in report.notes)
    assert len(report.metrics["files"]) == 4


def test_a_chain_of_imports_longer_than_the_file_cap_says_which_imports_were_not_followed(tmp_path, monkeypatch):
    """Ordinary imports too: a cap reached in silence would let a clean result stand for code
    never read (the barrier under a rank test sits in the sixth module of the chain)."""
    from ddpdoctor.lint import sources
    monkeypatch.setattr(sources, "MAX_FILES", 4)
    chain = {f"m{i}": f"import m{i + 1}\n" for i in range(5)}
    chain["m5"] = "import torch.distributed as dist\n\ndef f(rank):\n    if rank == 0:\n        dist.barrier()\n"
    _, report = _lint(tmp_path, "import torch.distributed as dist\nimport m0\n", **chain)
    assert len(report.metrics["files"]) == 4
    assert "the lint reads at most 4 files: 1 more local modules imported were not read (m3 first)" \
        in report.notes, report.notes
    monkeypatch.setattr(sources, "MAX_FILES", 200)
    _, whole = _lint(tmp_path / "all", "import torch.distributed as dist\nimport m0\n", **chain)
    assert not any("at most" in n for n in whole.notes)
