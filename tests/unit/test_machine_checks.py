"""The machine checks (DDP207-DDP216) on recorded facts: the recorded GPU host tree of
tests/data/machine and the recorded node fact files."""

from __future__ import annotations

from ddpdoctor.checks.preflight.container_capabilities import container_capabilities
from ddpdoctor.checks.preflight.driver_cuda import driver_cuda_check
from ddpdoctor.checks.preflight.fabric_manager import fabric_manager
from ddpdoctor.checks.preflight.gpu_health import gpu_health
from ddpdoctor.checks.preflight.ib_hca import ib_hca, selected_ports
from ddpdoctor.checks.preflight.memlock_limit import memlock_limit
from ddpdoctor.checks.preflight.pcie_acs_iommu import pcie_acs_iommu
from ddpdoctor.checks.preflight.pcie_link import pcie_link
from ddpdoctor.checks.preflight.shm_size import shm_size
from ddpdoctor.core.findings import Severity
from ddpdoctor.core.registry import Skipped
from ddpdoctor.preflight.node.machine import acs_control
from tests.helpers.preflight_facts import cluster, facts, node
from tests.helpers.recorded_machine import DATA, read_tree

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
    f.env = dict(changes.pop("env", {}))
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


def test_nccl_ib_hca_naming_an_hca_a_node_lacks_is_an_error_naming_what_it_has():
    good = gpu_node(env={"NCCL_IB_HCA": "mlx5_0:1,mlx5_1:1"})
    bad = gpu_node("gpu-a2", env={"NCCL_IB_HCA": "=mlx5_4"})
    problems = ib_hca(cluster(node(good), node(bad), nproc_per_node=8))
    assert problems[0].hosts == ["gpu-a2"] and "mlx5_0:1" in problems[0].message
    assert problems[1].severity == Severity.WARNING and "differ" in problems[1].message


def test_nccl_ib_gid_index_missing_on_the_selected_port_is_an_error():
    f = gpu_node(env={"NCCL_IB_HCA": "mlx5_2", "NCCL_IB_GID_INDEX": "3"})
    assert ib_hca(cluster(node(f), nproc_per_node=8)) == []
    f.env["NCCL_IB_GID_INDEX"] = "5"
    problems = ib_hca(cluster(node(f), nproc_per_node=8))
    assert len(problems) == 1 and "NCCL_IB_GID_INDEX=5" in problems[0].message and "vendor err" not in problems[0].hint


def test_nccl_ib_hca_syntax_prefixes_exact_names_ports_and_exclusion():
    devices = {"mlx5_0": {"1": {}}, "mlx5_1": {"1": {}, "2": {}}, "mlx5_10": {"1": {}}}
    assert selected_ports("mlx5_1", devices) == [("mlx5_1", "1"), ("mlx5_1", "2"), ("mlx5_10", "1")]
    assert selected_ports("=mlx5_1:2", devices) == [("mlx5_1", "2")]
    assert selected_ports("^mlx5_1", devices) == [("mlx5_0", "1")]
    assert selected_ports(None, devices) == [("mlx5_0", "1"), ("mlx5_1", "1"), ("mlx5_1", "2"), ("mlx5_10", "1")]


def test_a_gpu_at_x8_of_x16_and_a_nic_at_half_speed_are_reported_but_an_idle_gpus_speed_is_not():
    problems = pcie_link(cluster(node(gpu_node()), nproc_per_node=8))
    assert [p.evidence["address"] for p in problems] == ["0000:03:00.0", "0000:05:00.0"]
    assert "x8 of x16" in problems[0].message and "16 of 32 GT/s" in problems[1].message


def test_acs_redirect_above_the_gpus_and_a_translating_iommu_are_reported_with_their_fixes():
    problems = pcie_acs_iommu(cluster(node(gpu_node()), nproc_per_node=8))
    acs, iommu = problems
    assert "0000:02:00.0" in acs.message and "ReqRedir" in acs.message and "0000:01:00.0" not in acs.message
    assert "setpci -s 0000:02:00.0 ECAP_ACS+0x6.w=0000" in acs.hint
    assert "iommu=pt" in iommu.hint and "intel_iommu=on" in iommu.message


def test_acs_unreadable_without_root_is_not_measured_and_without_gpus_skipped():
    f = gpu_node(pci_acs={}, iommu={}, unmeasured={"acs": "the extended config space of 0000:02:00.0 is readable only by root"})
    problems = pcie_acs_iommu(cluster(node(f), nproc_per_node=8))
    assert [p.severity for p in problems] == [Severity.INFO] and "not measured" in problems[0].message
    assert isinstance(pcie_acs_iommu(cluster(node(facts("cpu-1")))), Skipped)


def test_acs_control_is_found_along_the_extended_capability_chain():
    config = (DATA / "gpu-host/sys/devices/pci0000:00/0000:00:01.0/0000:01:00.0/0000:02:00.0/config").read_bytes()
    assert acs_control(config) == 0x1D
    assert acs_control(config[:0x100]) is None


def test_a_driver_for_cuda_12_2_under_a_cu124_torch_warns_and_an_older_major_is_an_error():
    f = gpu_node()  # nvidia-smi says CUDA 12.2; the fact file's torch is 2.5.1+cu124
    problems = driver_cuda_check(cluster(node(f), nproc_per_node=8))
    assert len(problems) == 1 and problems[0].severity == Severity.WARNING and "12.2" in problems[0].message
    old = gpu_node(driver_cuda=None, driver="470.82.01")
    problems = driver_cuda_check(cluster(node(old), nproc_per_node=8))
    assert problems[0].severity == Severity.ERROR and "11.0" in problems[0].message
    assert driver_cuda_check(cluster(node(gpu_node(driver_cuda="12.4")), nproc_per_node=8)) == []


def test_nvswitches_without_a_running_fabric_manager_are_an_error():
    down = gpu_node(fabric_manager={"running": False, "fabric_state": "In Progress"}, driver="550.54.15")
    problems = fabric_manager(cluster(node(down), nproc_per_node=8))
    assert [p.severity for p in problems] == [None, Severity.WARNING]
    assert "no nv-fabricmanager process" in problems[0].message and "550.54.15" in problems[0].hint
    wrong = gpu_node(fabric_manager={"running": True, "version": "550.54.14", "fabric_state": "Completed"},
                     driver="550.54.15")
    assert "must match" in fabric_manager(cluster(node(wrong), nproc_per_node=8))[0].message
    ok = gpu_node(fabric_manager={"running": True, "version": "550.54.15", "fabric_state": "Completed"},
                  driver="550.54.15")
    assert fabric_manager(cluster(node(ok), nproc_per_node=8)) == []


def test_throttling_xid_79_and_nvlink_errors_are_reported():
    problems = gpu_health(cluster(node(gpu_node()), nproc_per_node=8))
    slow, xid, nvlink = problems
    assert "HW Thermal Slowdown" in slow.message and slow.severity is None
    assert xid.severity == Severity.ERROR and "79" in xid.message and "13" in xid.message
    assert "CRC 310" in nvlink.message


def test_an_unreadable_kernel_log_is_not_measured_not_passed():
    f = gpu_node(xids=[], gpu_slowdowns={}, nvlink_errors={},
                 unmeasured={"xid": "kernel log not readable: /dev/kmsg: Permission denied"})
    problems = gpu_health(cluster(node(f), nproc_per_node=8))
    assert [p.severity for p in problems] == [Severity.INFO] and "Permission denied" in problems[0].message


def test_the_machine_checks_skip_on_cpu_nodes():
    c = cluster(node(facts("cpu-1")))
    for check in (pcie_link, pcie_acs_iommu, driver_cuda_check, fabric_manager, gpu_health, ib_hca):
        assert isinstance(check(c), Skipped), check


def test_a_recorded_fact_file_with_misshapen_machine_facts_is_refused():
    import pytest

    from ddpdoctor.preflight.node.schema import NodeFacts

    good = gpu_node().to_dict()
    assert NodeFacts.from_dict(good).pci_links == good["pci_links"]
    for field, bad in (("ib_devices", {"mlx5_0": 5}), ("pci_links", [{"address": "x", "kind": "gpu"}]),
                       ("pci_acs", {"0000:02:00.0": {"control": "on"}}), ("xids", [{"xid": "79"}])):
        with pytest.raises(ValueError, match=field):
            NodeFacts.from_dict({**good, field: bad})


def test_the_library_readers_survive_truncated_and_foreign_files(tmp_path):
    from ddpdoctor.preflight.node.ncclib import CACHE_MAGIC, elf_dynamic, ld_cache

    for name, data in (("short", b"\x7fELF"), ("text", b"not an elf"), ("empty", b""),
                       ("header", b"\x7fELF\x02\x01" + b"\0" * 58)):
        (tmp_path / name).write_bytes(data)
        assert elf_dynamic(str(tmp_path / name)) is None
    (tmp_path / "cache").write_bytes(CACHE_MAGIC + b"\xff" * 40)
    assert ld_cache(str(tmp_path / "cache")) == {}
    (tmp_path / "cache").write_bytes(CACHE_MAGIC + b"\0" * 4)
    assert ld_cache(str(tmp_path / "cache")) == {}
