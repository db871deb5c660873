"""Framework-aware findings over telemetry that real probes of examples/frameworks/ recorded
(tests/probe_recordings/<example>, recorded as that folder's test file says), and the user's
line as a finding's location: the innermost frame of the user's own code, with the outer user
frames as context. No process is started here."""

from __future__ import annotations

import importlib.util
import sys
import textwrap
from pathlib import Path

import pytest

from ddpdoctor.core.findings import Finding, Location, Severity
from ddpdoctor.probe.run_model.loaded_run import RunModel
from ddpdoctor.probe.inrank import recorder
from ddpdoctor.probe.launch.choice import choose
from ddpdoctor.probe.report import build_report

RECORDINGS = Path(__file__).resolve().parents[1] / "probe_recordings"
REPO = Path(__file__).resolve().parents[2]
FRAMEWORKS = "examples/frameworks"


def report_of(name: str):
    return build_report(RunModel.load(RECORDINGS / name), Severity.ERROR, set())


def findings(report, *codes):
    return [f for f in report.findings if f.code in codes]


def line_of(example: str, needle: str) -> int:
    """The last line holding `needle`: the code, after the docstring that may quote it."""
    lines = (REPO / FRAMEWORKS / f"{example}.py").read_text().splitlines()
    return max(i + 1 for i, text in enumerate(lines) if needle in text)


def test_hf_trainer_find_unused_points_at_training_arguments_with_its_knob():
    report = report_of("hf_trainer_find_unused")
    [finding] = findings(report, "DDP402")
    assert finding.location.line == line_of("hf_trainer_find_unused", "TrainingArguments(")
    assert "TrainingArguments(..., ddp_find_unused_parameters=False)" in finding.hint
    assert "Trainer built" in finding.message
    assert report.metrics["framework"]["name"] == "transformers"
    assert report.metrics["framework"]["strategy"] == "ddp"


def test_lightning_find_unused_points_at_the_trainer_with_ddp_strategy():
    [finding] = findings(report_of("lightning_find_unused"), "DDP402")
    assert finding.location.line == line_of("lightning_find_unused", "L.Trainer(")
    assert "DDPStrategy(find_unused_parameters=False)" in finding.hint


def test_lightning_use_distributed_sampler_false_is_named_at_the_trainer():
    found = findings(report_of("lightning_no_distributed_sampler"), "DDP301")
    assert found
    for finding in found:
        assert finding.location.line == line_of("lightning_no_distributed_sampler", "L.Trainer(")
        assert "use_distributed_sampler" in finding.hint


def test_lightning_save_checkpoint_under_global_zero_is_named_at_its_line():
    found = findings(report_of("lightning_save_checkpoint_rank_zero"), "DDP501", "DDP502", "DDP504")
    assert found
    bug = line_of("lightning_save_checkpoint_rank_zero", "save_checkpoint(")
    fit = line_of("lightning_save_checkpoint_rank_zero", "trainer.fit(")
    for finding in found:
        assert finding.location.line == bug
        assert "trainer.save_checkpoint" in finding.hint and "is_global_zero" in finding.hint
        assert any(line == fit and call == "Trainer.fit"
                   for _, line, call in finding.location.called_from)


def test_accelerate_gather_under_main_process_is_named_at_its_line():
    found = findings(report_of("accelerate_gather_main_process"), "DDP501", "DDP502", "DDP504")
    assert found
    for finding in found:
        assert finding.location.line == line_of("accelerate_gather_main_process", "accelerator.gather(")
        assert "accelerator.gather" in finding.hint and "is_main_process" in finding.hint


def test_accelerate_loader_left_out_of_prepare_names_prepare():
    report = report_of("accelerate_loader_not_prepared")
    [finding, *_] = findings(report, "DDP301")
    assert "accelerator.prepare" in finding.hint
    assert line_of("accelerate_loader_not_prepared", "accelerator.prepare(") == int(
        finding.hint.split("(at ")[1].split(")")[0].rsplit(":", 1)[1])
    assert any(n.startswith("framework: Accelerate") for n in report.notes)


def test_plain_ddp_recording_has_no_framework():
    report = report_of("healthy")
    assert report.metrics["framework"] is None


# -- the user's line ---------------------------------------------------------------------------

@pytest.fixture
def fake_library(tmp_path, monkeypatch):
    """A package in a site-packages folder that calls back into user code, as Lightning calls a
    user's callback from trainer.fit."""
    lib = tmp_path / "venv" / "lib" / "python3.11" / "site-packages" / "fakelib"
    lib.mkdir(parents=True)
    (lib / "__init__.py").write_text(textwrap.dedent("""
        class Trainer:
            def fit(self, callback):
                return self._loop(callback)

            def _loop(self, callback):
                return callback()
        """))
    user = tmp_path / "user_train.py"
    user.write_text(textwrap.dedent("""
        import fakelib
        from ddpdoctor.probe.inrank import recorder

        def on_epoch_end():
            return collective()

        def collective():
            return recorder.user_site(1)

        def crash():
            raise RuntimeError("boom")

        def main(callback=on_epoch_end):
            return fakelib.Trainer().fit(callback)
        """))
    monkeypatch.syspath_prepend(str(lib.parent))
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.chdir(tmp_path)
    for name in ("fakelib", "user_train"):
        sys.modules.pop(name, None)
    spec = importlib.util.spec_from_file_location("user_train", user)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_site_is_the_innermost_user_frame_with_outer_user_frames_as_context(fake_library):
    site = fake_library.main()
    assert (site.file, site.func) == ("user_train.py", "collective")
    callers = [(c[0], c[2], c[3]) for c in site.callers]
    # on_epoch_end called collective; main called Trainer.fit (library frames skipped).
    assert callers[0] == ("user_train.py", "on_epoch_end", "collective")
    assert callers[1] == ("user_train.py", "main", "Trainer.fit")


def test_traceback_site_skips_installed_packages_and_keeps_the_callers(fake_library):
    try:
        fake_library.main(fake_library.crash)
    except RuntimeError as exc:
        site = recorder.site_of_traceback(exc.__traceback__)
    assert (site.file, site.func) == ("user_train.py", "crash")
    assert ("user_train.py", "main", "Trainer.fit") in [(c[0], c[2], c[3]) for c in site.callers]


def test_location_context_reads_and_round_trips_through_json():
    location = Location("train.py", 51, (("train.py", 70, "Trainer.fit"), ("train.py", 76, "main")))
    assert location.context == "called from Trainer.fit at train.py:70, from main at train.py:76"
    finding = Finding("DDP502", Severity.ERROR, "t", "m", "h", location=location)
    data = finding.to_dict()
    assert data["location"]["called_from"][0] == {"file": "train.py", "line": 70, "call": "Trainer.fit"}
    assert Finding.from_dict(data).location.called_from == location.called_from
    # Without context the location keeps its two keys.
    assert Finding("X", Severity.ERROR, "t", "m", "h", location=Location("a.py", 1)).to_dict()[
        "location"] == {"file": "a.py", "line": 1}


@pytest.mark.parametrize("source,expected", [
    ("import lightning as L\ntrainer = L.Trainer(devices=2, strategy='ddp')\n", "Lightning"),
    ("from pytorch_lightning import Trainer\n", "Lightning"),
    ("from accelerate import Accelerator\naccelerator = Accelerator()\n", "accelerate launch"),
    ("from transformers import Trainer, TrainingArguments\n", "accelerate launch"),
])
def test_auto_launcher_runs_framework_scripts_under_torchrun(source, expected, tmp_path):
    script = tmp_path / "train.py"
    script.write_text(source)
    launcher, why = choose("auto", str(script), module=False)
    assert launcher == "torchrun" and expected in why
