"""The machine checks (DDP207-DDP216) on recorded facts: the recorded GPU host tree of
tests/data/machine and the recorded node fact files."""

from __future__ import annotations

from ddpdoctor.checks.preflight.container_capabilities import container_capabilities
from ddpdoctor.checks.preflight.memlock_limit import memlock_limit
from ddpdoctor.checks.preflight.shm_size import shm_size
from ddpdoctor.core.findings import Severity
from ddpdoctor.core.registry import Skipped
from tests.helpers.preflight_facts import cluster, facts, node
from tests.helpers.recorded_machine import read_tree

POD = {"KUBERNETES_SERVICE_HOST": "10.96.0.1", "HOSTNAME": "bert-worker-1", "NODE_NAME": "gpu-a1"}


def gpu_node(name="gpu-a1", **changes):
    """A recorded GPU node fact file with the recorded GPU host's machine facts."""
    env = changes.pop("env_k8s", None)
    tree = read_tree("gpu-host", env=env, hostname=name)
    f = facts(name)
    for key in ("cap_eff", "kubernetes", "ib_devices", "pci_links", "pci_acs", "iommu", "nvswitch_count",
                "fabric_manager", "driver_cuda", "gpu_slowdowns", "xids", "nvlink_errors"):
        setattr(f, key, getattr(tree, key))
    f.memlock_soft = f.memlock_hard = -1
    if env is None:  # the recorded tree is a pod (its service account mount); these nodes are not
        f.kubernetes = {}
    for key, value in changes.items():
        setattr(f, key, value)
    return f


def test_a_pods_64_mib_dev_shm_is_an_error_with_the_emptydir_fix():
    f = gpu_node(env_k8s=POD, shm_bytes=64 << 20, shm_free_bytes=64 << 20)
    problems = shm_size(cluster(node(f), nproc_per_node=8))
    assert len(problems) == 1 and problems[0].severity == Severity.ERROR
    assert "pod bert-worker-1" in problems[0].message and "64 MiB" in problems[0].message
    assert "emptyDir: {medium: Memory" in problems[0].hint


def test_a_full_dev_shm_counts_what_is_left_free():
    f = gpu_node(shm_bytes=32 << 30, shm_free_bytes=100 << 20)
    problems = shm_size(cluster(node(f), nproc_per_node=8))
    assert "100 MiB free" in problems[0].message and "--shm-size" in problems[0].hint


def test_a_large_dev_shm_passes_and_an_unreadable_one_is_not_measured():
    ok = gpu_node(shm_bytes=64 << 30, shm_free_bytes=64 << 30)
    unread = gpu_node("gpu-a2", shm_bytes=None, unmeasured={"shm": "/dev/shm: No such file or directory"})
    problems = shm_size(cluster(node(ok), node(unread), nproc_per_node=8))
    assert [(p.severity, p.hosts) for p in problems] == [(Severity.INFO, ["gpu-a2"])]
    assert "not measured" in problems[0].message


def test_memlock_limit_on_an_ib_node_is_an_error_and_unlimited_passes():
    low = gpu_node(memlock_soft=8 << 20, memlock_hard=8 << 20)
    fine = gpu_node("gpu-a2")
    problems = memlock_limit(cluster(node(low), node(fine), nproc_per_node=8))
    assert len(problems) == 1 and problems[0].hosts == ["gpu-a1"] and "8 MiB" in problems[0].message


def test_memlock_without_ib_says_it_does_not_apply():
    f = facts("gpu-a1", memlock_soft=65536)
    result = memlock_limit(cluster(node(f), nproc_per_node=8))
    assert isinstance(result, Skipped) and "no InfiniBand" in result.reason and "64 KiB" in result.reason


def test_a_pod_without_ipc_lock_on_an_ib_node_warns_and_without_sys_ptrace_notes():
    f = gpu_node(env_k8s=POD)
    problems = container_capabilities(cluster(node(f), nproc_per_node=8))
    assert [p.severity for p in problems] == [None, Severity.INFO]
    assert "IPC_LOCK" in problems[0].message and "SYS_PTRACE" in problems[1].message
    assert "capabilities: {add:" in problems[0].hint


def test_capabilities_outside_a_pod_are_skipped():
    assert isinstance(container_capabilities(cluster(node(gpu_node()), nproc_per_node=8)), Skipped)
