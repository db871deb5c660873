"""Scripts that start their own ranks (mp.spawn, tcp:// and file:// rendezvous) and -m modules."""


import pytest

from ddpdoctor.probe.launch.choice import choose
from tests.helpers.probe_runner import probe
from tests.helpers.ports import free_port

pytestmark = pytest.mark.multiprocess


def test_spawn_script_without_sampler_is_diagnosed_under_its_own_launcher(tmp_path):
    result = probe("examples/spawn/imagenet_style_no_sampler.py", run_dir=tmp_path / "run",
                   args=["--dist-url", f"tcp://127.0.0.1:{free_port()}"])
    assert result.report["metrics"]["launcher"] == "none"
    assert any("mp.spawn" in note for note in result.report["notes"])
    finding = result.one("DDP301")
    assert finding["ranks"] == [0, 1]
    assert finding["location"]["file"] == "examples/spawn/imagenet_style_no_sampler.py"


def test_spawn_healthy_twin_is_clean(tmp_path):
    result = probe("examples/spawn/imagenet_style_healthy.py", run_dir=tmp_path / "run",
                   args=["--dist-url", f"tcp://127.0.0.1:{free_port()}"])
    assert result.code == 0, result.report["findings"]
    assert result.problems_beyond_timing == []
    assert result.report["metrics"]["steps"] >= 15


def test_file_rendezvous_runs_under_the_probe(tmp_path):
    result = probe("examples/spawn/file_init.py", run_dir=tmp_path / "run",
                   args=["--init-file", str(tmp_path / "rendezvous")])
    assert result.code == 0, result.report["findings"]
    assert result.report["metrics"]["outcome"] == "completed"
    assert result.report["metrics"]["world_size"] == 2


@pytest.mark.parametrize("module,launcher,args", [
    ("examples.modules.torchrun_train", "torchrun", []),
    ("examples.modules.spawn_train", "none", ["--port", "{port}"]),
])
def test_module_entry_points_run_with_both_launchers(module, launcher, args, tmp_path):
    args = [a.format(port=free_port()) for a in args]
    result = probe(module, "-m", run_dir=tmp_path / "run", args=args)
    assert result.code == 0, result.report["findings"]
    assert result.report["metrics"]["launcher"] == launcher
    assert result.report["metrics"]["steps"] >= 15


def test_hang_in_one_spawned_rank_shows_every_stack_and_leaves_nothing(tmp_path):
    result = probe("examples/spawn/hang_in_rank.py", "--stall-timeout", "4",
                   run_dir=tmp_path / "run", args=[str(free_port())])
    finding = result.one("DDP503")
    detail = finding["evidence"]["detail"]
    assert "rank 0" in detail and "rank 1" in detail
    assert "wait_for_preprocessing" in detail
    assert finding["location"]["file"] == "examples/spawn/hang_in_rank.py"
    # probe() asserted that no process of the job is left.


@pytest.mark.parametrize("source,expected", [
    ("import torch.multiprocessing as mp\nmp.spawn(main_worker, nprocs=4, args=(4,))\n", "none"),
    ("from torch.multiprocessing import spawn\nspawn(run, args=(2,), nprocs=2)\n", "none"),
    ("import os\nrank = int(os.environ['LOCAL_RANK'])\nmp.spawn(f, nprocs=2)\n", "torchrun"),
    ("import torch.distributed as dist\ndist.init_process_group('nccl')\n", "torchrun"),
])
def test_auto_launcher_spawns_only_for_scripts_that_start_their_own_ranks(source, expected, tmp_path):
    script = tmp_path / "train.py"
    script.write_text(source)
    assert choose("auto", str(script), module=False)[0] == expected
