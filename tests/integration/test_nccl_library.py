"""Which libnccl torch would load, resolved by ncclib.py, against the real dynamic loader: small
shared libraries built here stand in for libtorch_cuda.so, the nvidia-nccl wheel's libnccl and a
system libnccl; a child process dlopens the stand-in and /proc/self/maps says what the loader
really picked."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from ddpdoctor.checks.preflight.nccl_library import nccl_library as nccl_library_check
from ddpdoctor.preflight.node.ncclib import elf_dynamic, nccl_library
from tests.helpers.preflight_facts import cluster, facts, node

pytestmark = pytest.mark.skipif(not shutil.which("gcc"), reason="needs gcc to build the stand-in libraries")


def _lib(path: Path, soname: str, *extra: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    src = path.parent / "empty.c"
    src.write_text("int ddpdoctor_test_symbol(void) { return 0; }\n")
    subprocess.run(["gcc", "-shared", "-fPIC", "-o", str(path), str(src), f"-Wl,-soname,{soname}", *extra],
                   check=True, capture_output=True, timeout=60)


def _install(tmp: Path, new_dtags: bool) -> tuple[Path, Path]:
    """site-packages with torch/lib/libtorch_cuda.so needing libnccl.so.2 from the wheel's
    nvidia/nccl/lib (found through $ORIGIN), and a system libnccl 2.18.1 elsewhere."""
    site = tmp / "site-packages"
    wheel = site / "nvidia" / "nccl" / "lib" / "libnccl.so.2"
    _lib(wheel, "libnccl.so.2")
    (site / "nvidia_nccl_cu12-2.21.5.dist-info").mkdir()
    system = tmp / "usr-local-nccl" / "lib"
    _lib(system / "libnccl.so.2.18.1", "libnccl.so.2")
    (system / "libnccl.so.2").symlink_to("libnccl.so.2.18.1")
    torch_lib = site / "torch" / "lib" / "libtorch_cuda.so"
    tags = "--enable-new-dtags" if new_dtags else "--disable-new-dtags"
    _lib(torch_lib, "libtorch_cuda.so", f"-L{wheel.parent}", "-Wl,--no-as-needed", "-l:libnccl.so.2",
         f"-Wl,{tags},-rpath,$ORIGIN/../../nvidia/nccl/lib")
    return site / "torch", system


def _loader_picks(torch_dir: Path, env: dict) -> str:
    """What the real loader maps for libnccl when libtorch_cuda.so is opened under `env`."""
    code = ("import ctypes, sys; ctypes.CDLL(sys.argv[1]); "
            "print(next(l.split()[-1] for l in open('/proc/self/maps') if 'libnccl' in l))")
    done = subprocess.run([sys.executable, "-c", code, str(torch_dir / "lib" / "libtorch_cuda.so")],
                          env={"PATH": os.environ["PATH"], **env}, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return os.path.realpath(done.stdout.strip())


@pytest.mark.parametrize("new_dtags", [True, False], ids=["runpath", "rpath"])
def test_the_resolved_nccl_is_the_one_the_dynamic_loader_maps(tmp_path, new_dtags):
    torch_dir, system = _install(tmp_path, new_dtags)
    dynamic = elf_dynamic(str(torch_dir / "lib" / "libtorch_cuda.so"))
    assert "libnccl.so.2" in dynamic["needed"] and dynamic["runpath" if new_dtags else "rpath"]
    for env in ({}, {"LD_LIBRARY_PATH": str(system)}, {"LD_PRELOAD": str(system / "libnccl.so.2")}):
        found = nccl_library(str(torch_dir), env)
        assert os.path.realpath(found["path"]) == _loader_picks(torch_dir, env), (env, found)
    # RUNPATH yields to LD_LIBRARY_PATH; the older RPATH does not.
    overridden = nccl_library(str(torch_dir), {"LD_LIBRARY_PATH": str(system)})
    if new_dtags:
        assert overridden["how"] == "LD_LIBRARY_PATH" and overridden["version"] == "2.18.1"
    else:
        assert overridden["how"].startswith("DT_RPATH") and overridden["version"] == "2.21.5"


def test_a_system_nccl_in_front_of_the_wheel_warns_naming_both_versions(tmp_path):
    torch_dir, system = _install(tmp_path, new_dtags=True)
    wheel_node = facts("gpu-a1", nccl="2.21.5", nccl_source="nvidia-nccl wheel",
                       nccl_library=nccl_library(str(torch_dir), {}))
    system_node = facts("gpu-a2", nccl="2.21.5", nccl_source="nvidia-nccl wheel",
                        nccl_library=nccl_library(str(torch_dir), {"LD_LIBRARY_PATH": str(system)}))
    problems = nccl_library_check(cluster(node(wheel_node), node(system_node), nproc_per_node=8))
    messages = [p.message for p in problems]
    assert any("gpu-a2" in m and "2.18.1" in m and "LD_LIBRARY_PATH" in m and "2.21.5" in m for m in messages)
    assert any("different NCCL" in m for m in messages)
    quiet = nccl_library_check(cluster(node(wheel_node), node(facts("gpu-a2", nccl="2.21.5",
                               nccl_source="nvidia-nccl wheel", nccl_library=wheel_node.nccl_library))))
    assert quiet == []
