"""The machine under NCCL on this machine's real /dev/shm, limits and capabilities: a small
tmpfs on /dev/shm in a mount namespace of its own, a locked-memory limit set for a child, and
this machine's healthy state staying quiet. Mount namespaces need root; the tests skip without."""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest

from ddpdoctor.core.registry import Skipped
from ddpdoctor.preflight.node.facts import NodeFacts
from tests.helpers.cli_runner import ddpdoctor_exe
from tests.helpers.preflight_facts import cluster, node
from tests.helpers.recorded_machine import read_tree

needs_root = pytest.mark.skipif(os.geteuid() != 0 or not shutil.which("unshare"),
                                reason="a mount namespace needs root and unshare(1)")
MACHINE_CODES = [f"DDP2{n:02d}" for n in range(7, 17)]


def _in_small_shm(argv: list[str], size: str = "16M") -> subprocess.CompletedProcess:
    """Run argv with a fresh `size` tmpfs on /dev/shm, seen only by it (a mount namespace)."""
    script = f'mount -t tmpfs -o size={size} tmpfs /dev/shm && exec "$@"'
    return subprocess.run(["unshare", "--mount", "--propagation", "private", "sh", "-c", script, "sh", *argv],
                          capture_output=True, text=True, timeout=120)


def _findings(done: subprocess.CompletedProcess, code: str) -> list[dict]:
    report = json.loads(done.stdout)
    return [f for f in report["findings"] if f["code"] == code]


@needs_root
def test_a_16_mib_dev_shm_fails_preflight_with_the_shm_size_and_a_fix():
    done = _in_small_shm([*ddpdoctor_exe(), "preflight", "--nproc-per-node", "2", "--json", "-", "--quiet"])
    found = _findings(done, "DDP207")
    assert done.returncode == 1, done.stderr
    assert len(found) == 1 and found[0]["severity"] == "error"
    assert "/dev/shm" in found[0]["message"] and "16 MiB" in found[0]["message"]
    assert "--shm-size" in found[0]["hint"]
    assert found[0]["evidence"]["shm_bytes"] == 16 << 20


@needs_root
def test_the_node_program_reads_the_namespaces_own_dev_shm():
    code = "from ddpdoctor.preflight.node import facts; print(facts.gather(import_torch=False).to_json())"
    done = _in_small_shm(["python", "-c", code], size="48M")
    f = NodeFacts.from_dict(json.loads(done.stdout))
    assert f.shm_bytes == 48 << 20 and f.shm_free_bytes == 48 << 20


def test_a_child_s_locked_memory_limit_is_measured_and_fails_on_an_infiniband_node():
    code = "from ddpdoctor.preflight.node import facts; print(facts.gather(import_torch=False).to_json())"
    done = subprocess.run(["prlimit", "--memlock=65536:65536", "python", "-c", code],
                          capture_output=True, text=True, timeout=60)
    measured = NodeFacts.from_dict(json.loads(done.stdout))
    assert measured.memlock_soft == 65536 and measured.memlock_hard == 65536
    from ddpdoctor.checks.preflight.memlock_limit import memlock_limit

    # This machine has no IB device: the limit is reported, not judged.
    here = memlock_limit(cluster(node(measured), backend="nccl"))
    assert isinstance(here, Skipped) and "64 KiB" in here.reason and "no InfiniBand" in here.reason
    # The same measured limit on a node with the recorded GPU host's HCAs is an error.
    measured.ib_devices = read_tree("gpu-host").ib_devices
    problems = memlock_limit(cluster(node(measured), backend="nccl"))
    assert [p.severity for p in problems] == [None] and "64 KiB" in problems[0].message
    assert "unlimited" in problems[0].hint


def test_this_machine_s_healthy_state_adds_no_machine_finding():
    done = subprocess.run([*ddpdoctor_exe(), "preflight", "--nproc-per-node", "2", "--json", "-", "--quiet"],
                          capture_output=True, text=True, timeout=120)
    report = json.loads(done.stdout)
    assert [f for f in report["findings"] if f["code"] in MACHINE_CODES] == []
    statuses = {r["code"]: r["status"] for r in report.get("checks", [])}
    assert all(statuses.get(c) in (None, "passed", "skipped") for c in MACHINE_CODES), statuses


def test_nccl_ib_hca_on_this_machine_without_hcas_fails_the_nccl_preflight():
    done = subprocess.run([*ddpdoctor_exe(), "preflight", "--backend", "nccl", "--json", "-", "--quiet"],
                          capture_output=True, text=True, timeout=120,
                          env={**os.environ, "NCCL_IB_HCA": "=mlx5_0:1"})
    found = _findings(done, "DDP211")
    assert len(found) == 1 and "NCCL_IB_HCA==mlx5_0:1" in found[0]["message"]
    assert "it has: none" in found[0]["message"]


def test_this_machine_s_kernel_log_is_read_without_blocking():
    from ddpdoctor.preflight.node.gpuhealth import _kernel_log

    f = NodeFacts(hostname="here")
    records = _kernel_log(f, time.monotonic() + 10)
    if records is None:
        pytest.skip(f"kernel log not readable here: {f.unmeasured['xid']}")
    assert records and all(";" in r and r.split(",")[0].isdigit() for r in records[:50])


@needs_root
def test_pci_config_space_unreadable_without_root_is_not_measured():
    bridge = sorted(os.listdir("/sys/bus/pci/devices"))[0]
    code = ("import json; from ddpdoctor.preflight.node import machine; from ddpdoctor.preflight.node.schema "
            f"import NodeFacts; f = NodeFacts(hostname='x'); machine._read_acs(f, '/', {{{bridge!r}: ['gpu']}}); "
            "print(json.dumps(f.unmeasured))")
    # As nobody, the interpreter may not see root's site-packages: the checkout itself goes on
    # the path, and it must be reachable by others (a clone under /root is not).
    repo = Path(__file__).resolve().parents[2]
    if any(not os.stat(folder).st_mode & stat.S_IXOTH for folder in [repo, *repo.parents]):
        pytest.skip(f"{repo} is not reachable by user nobody")
    done = subprocess.run(["setpriv", "--reuid", "65534", "--regid", "65534", "--clear-groups",
                           sys.executable, "-c", code], capture_output=True, text=True, timeout=60, cwd="/",
                          env={**os.environ, "PYTHONPATH": str(repo)})
    assert done.returncode == 0, done.stderr
    assert "readable only by root" in json.loads(done.stdout)["acs"]


@needs_root
def test_preflight_in_a_pod_checks_its_dev_shm_and_capabilities_and_names_the_pod():
    """A pod as far as this machine can make one: the API server's variable, a 64 MiB /dev/shm
    (the runtime's default) and SYS_PTRACE dropped from the capabilities the command runs with."""
    env = {**os.environ, "KUBERNETES_SERVICE_HOST": "10.96.0.1", "HOSTNAME": "bert-worker-0",
           "NODE_NAME": "gpu-a1", "POD_NAMESPACE": "training"}
    argv = ["setpriv", "--inh-caps=-all", "--bounding-set=-sys_ptrace",
            *ddpdoctor_exe(), "preflight", "--nproc-per-node", "2", "--json", "-", "--quiet"]
    script = 'mount -t tmpfs -o size=64M tmpfs /dev/shm && exec "$@"'
    done = subprocess.run(["unshare", "--mount", "--propagation", "private", "sh", "-c", script, "sh", *argv],
                          capture_output=True, text=True, timeout=120, env=env)
    shm = _findings(done, "DDP207")
    assert len(shm) == 1 and "pod bert-worker-0" in shm[0]["message"], done.stderr
    assert "emptyDir: {medium: Memory" in shm[0]["hint"]
    caps = _findings(done, "DDP209")
    assert [c["severity"] for c in caps] == ["info"] and "SYS_PTRACE" in caps[0]["message"]
    notes = json.loads(done.stdout)["notes"]
    assert any("is pod bert-worker-0 on node gpu-a1 (namespace training)" in n for n in notes), notes
