"""checks/ ships inside the package as ddpdoctor.checks, from a regular (non-editable) wheel."""

import json
import subprocess
import sys
import venv
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def wheel_venv(tmp_path_factory):
    root = tmp_path_factory.mktemp("wheel")
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-build-isolation", "--no-deps",
                    "-q", "-w", str(root / "dist"), str(REPO)], check=True, timeout=300)
    wheel = next((root / "dist").glob("ddpdoctor-*.whl"))
    # System site-packages give the venv torch, rich and typer without downloading them; the
    # wheel installed into the venv itself shadows the editable checkout.
    venv.EnvBuilder(system_site_packages=True, with_pip=False).create(root / "venv")
    python = root / "venv" / "bin" / "python"
    subprocess.run([sys.executable, "-m", "pip", "--python", str(python), "install", "-q",
                    "--no-deps", "--no-index", str(wheel)], check=True, timeout=300)
    return root, python


def test_wheel_contains_checks_under_the_package_not_top_level(wheel_venv):
    import zipfile

    root, _ = wheel_venv
    names = zipfile.ZipFile(next((root / "dist").glob("*.whl"))).namelist()
    assert any(n.startswith("ddpdoctor/checks/preflight/") for n in names)
    assert any(n.startswith("ddpdoctor/checks/probe/") for n in names)
    assert not any(n.startswith("checks/") for n in names)


def test_checks_load_from_the_installed_wheel(wheel_venv, tmp_path):
    root, python = wheel_venv
    code = ("import json, ddpdoctor, ddpdoctor.core.registry as r; "
            "print(json.dumps([ddpdoctor.__file__, [s.code for s in r.all_checks()]]))")
    done = subprocess.run([str(python), "-I", "-c", code], capture_output=True, text=True,
                          cwd=tmp_path, timeout=120)
    assert done.returncode == 0, done.stderr
    location, codes = json.loads(done.stdout.strip().splitlines()[-1])
    assert str(root / "venv") in location
    assert "DDP301" in codes and "DDP101" in codes
    # A user's own checks.py beside train.py must not collide with ours.
    (tmp_path / "checks.py").write_text("USER = True\n")
    done = subprocess.run([str(python), "-c", "import checks, ddpdoctor.core.registry as r; "
                           "assert checks.USER; print(len(r.all_checks()))"],
                          capture_output=True, text=True, cwd=tmp_path, timeout=120)
    assert done.returncode == 0, done.stderr
    assert int(done.stdout.strip().splitlines()[-1]) > 10
