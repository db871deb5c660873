"""The machine under NCCL, read where the kernel publishes it: /dev/shm, the locked-memory limit,
the process's capabilities, a Kubernetes pod's identity, InfiniBand devices and their GIDs, the
PCIe links of GPUs and NICs, ACS on the bridges above the GPUs, the IOMMU, NVSwitches.

Every reader takes `root` ("/" on a node; a recorded tree of /sys, /proc and /dev in the tests),
and writes into NodeFacts; what cannot be read goes into facts.unmeasured with the reason, so a
check can say "not measured" instead of passing.

Shipped to remote nodes with the other modules of node/ (payload.facts_program concatenates
their sources and runs them with the node's `python3`): standard library only, Python 3.7 syntax,
no `from __future__` import, `typing` generics instead of `list[str]`. Where ddpdoctor runs, a
name another node/ module defines is imported from it; on a node it is already defined above.
"""

import os
import re
from typing import Any, Dict, List, Optional

# Capability bits (linux/capability.h) the checks ask about.
CAP_IPC_LOCK = 14
CAP_SYS_PTRACE = 19
NVIDIA = "0x10de"
# PCI class prefixes (class code + subclass): 3D and VGA controllers, Ethernet and InfiniBand.
GPU_CLASSES = ("0x0302", "0x0300")
NIC_CLASSES = ("0x0200", "0x0207")
NVSWITCH_CLASS = "0x0680"
ACS_CAP_ID = 0x000D
# The downward API's variables a pod spec commonly sets for the node's name.
NODE_NAME_VARS = ("NODE_NAME", "KUBERNETES_NODE_NAME", "K8S_NODE_NAME", "MY_NODE_NAME")


def _path(root, path):
    # type: (str, str) -> str
    return path if root == "/" else os.path.join(root, path.lstrip("/"))


def _read(root, path, limit=65536):
    # type: (str, str, int) -> Optional[str]
    try:
        with open(_path(root, path), "rb") as handle:
            return handle.read(limit).decode("utf-8", "replace").strip()
    except (OSError, ValueError):
        return None


def _listdir(root, path):
    # type: (str, str) -> List[str]
    try:
        return sorted(os.listdir(_path(root, path)))
    except OSError:
        return []


def read_shm(facts, root="/"):
    # type: (NodeFacts, str) -> None
    try:
        st = os.statvfs(_path(root, "/dev/shm"))
        facts.shm_bytes = st.f_blocks * st.f_frsize
        facts.shm_free_bytes = st.f_bavail * st.f_frsize
    except (OSError, AttributeError) as exc:
        facts.unmeasured["shm"] = "/dev/shm: %s" % (getattr(exc, "strerror", None) or exc)


def read_limits(facts):
    # type: (NodeFacts) -> None
    """Open files and locked memory (-1: unlimited) of this process, as its children inherit them."""
    try:
        import resource
    except ImportError:
        facts.unmeasured["memlock"] = "no resource module on this Python"
        return
    infinity = resource.RLIM_INFINITY
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    facts.nofile_soft = None if soft == infinity else soft
    facts.nofile_hard = None if hard == infinity else hard
    soft, hard = resource.getrlimit(resource.RLIMIT_MEMLOCK)
    facts.memlock_soft = -1 if soft == infinity else soft
    facts.memlock_hard = -1 if hard == infinity else hard


def read_capabilities(facts, root="/"):
    # type: (NodeFacts, str) -> None
    text = _read(root, "/proc/self/status")
    match = re.search(r"^CapEff:\s*([0-9a-fA-F]+)$", text or "", re.M)
    if match:
        facts.cap_eff = match.group(1).lower()
    else:
        facts.unmeasured["capabilities"] = "no CapEff line in /proc/self/status"


def pod_identity(env):
    # type: (Dict[str, str]) -> Dict[str, str]
    """{"pod", "node", "namespace"} as far as a pod's environment says: the pod's name is its
    HOSTNAME, the node's only where the pod spec passes spec.nodeName down (downward API)."""
    pod = {"pod": env.get("POD_NAME") or env.get("HOSTNAME", ""),
           "node": next((env[n] for n in NODE_NAME_VARS if env.get(n)), ""),
           "namespace": env.get("POD_NAMESPACE", "")}
    return dict((k, v) for k, v in pod.items() if v)


def read_kubernetes(facts, env, root="/"):
    # type: (NodeFacts, Dict[str, str], str) -> None
    """Inside a pod: the service account mount or the API server's variables say so."""
    if not (env.get("KUBERNETES_SERVICE_HOST")
            or os.path.isdir(_path(root, "/var/run/secrets/kubernetes.io"))):
        return
    pod = pod_identity(env)
    pod.setdefault("pod", facts.hostname)
    namespace = _read(root, "/var/run/secrets/kubernetes.io/serviceaccount/namespace", 256)
    if namespace and "namespace" not in pod:
        pod["namespace"] = namespace
    facts.kubernetes = pod


def read_infiniband(facts, root="/"):
    # type: (NodeFacts, str) -> None
    """{device: {port: {"state", "link_layer", "gids": [indices with a non-zero GID]}}}."""
    base = "/sys/class/infiniband"
    for device in _listdir(root, base)[:64]:
        ports = {}  # type: Dict[str, Any]
        for port in _listdir(root, "%s/%s/ports" % (base, device))[:16]:
            where = "%s/%s/ports/%s" % (base, device, port)
            gids = []
            for index in _listdir(root, where + "/gids")[:256]:
                if not index.isdigit():
                    continue
                gid = _read(root, "%s/gids/%s" % (where, index), 64) or ""
                if gid.replace("0", "").replace(":", ""):
                    gids.append(int(index))
            ports[port] = {"state": (_read(root, where + "/state", 64) or "").split(":")[-1].strip(),
                           "link_layer": _read(root, where + "/link_layer", 64) or "",
                           "gids": sorted(gids)}
        facts.ib_devices[device] = ports


def _pci_devices(root):
    # type: (str) -> List[Dict[str, str]]
    out = []
    for address in _listdir(root, "/sys/bus/pci/devices")[:1024]:
        where = "/sys/bus/pci/devices/" + address
        cls = (_read(root, where + "/class", 32) or "").lower()
        vendor = (_read(root, where + "/vendor", 32) or "").lower()
        kind = ("gpu" if vendor == NVIDIA and cls.startswith(GPU_CLASSES) else
                "nvswitch" if vendor == NVIDIA and cls.startswith(NVSWITCH_CLASS) else
                "nic" if cls.startswith(NIC_CLASSES) else "")
        if kind:
            out.append({"address": address, "kind": kind, "where": where})
    return out


def _speed(text):
    # type: (Optional[str]) -> Optional[float]
    """"16.0 GT/s PCIe" -> 16.0; "Unknown" -> None."""
    match = re.match(r"\s*([\d.]+)\s*GT/s", text or "")
    return float(match.group(1)) if match else None


def read_pci(facts, root="/"):
    # type: (NodeFacts, str) -> None
    """Link width and speed of every GPU and NIC, ACS on the bridges above each GPU, NVSwitches."""
    devices = _pci_devices(root)
    facts.nvswitch_count = sum(1 for d in devices if d["kind"] == "nvswitch")
    bridges = {}  # type: Dict[str, List[str]]
    for dev in devices:
        if dev["kind"] == "nvswitch":
            continue
        link = {"address": dev["address"], "kind": dev["kind"]}
        for name in ("current_link_width", "max_link_width"):
            text = _read(root, "%s/%s" % (dev["where"], name), 32)
            link[name.replace("_link", "")] = int(text) if text and text.isdigit() else None
        for name in ("current_link_speed", "max_link_speed"):
            link[name.replace("_link", "")] = _speed(_read(root, "%s/%s" % (dev["where"], name), 64))
        if link["max_width"] and link["current_width"] is not None:
            facts.pci_links.append(link)
        if dev["kind"] == "gpu":
            for bridge in _upstream(root, dev["where"]):
                bridges.setdefault(bridge, []).append(dev["address"])
    if any(d["kind"] == "gpu" for d in devices):
        _read_acs(facts, root, bridges)


def _upstream(root, where):
    # type: (str, str) -> List[str]
    """PCI addresses of the switch ports between a device and its root port, nearest last. The
    root port itself is left out: traffic between root ports crosses the root complex whatever
    its ACS says (and Linux turns ACS on there with the IOMMU, which DDP213 judges on its own)."""
    try:
        real = os.path.realpath(_path(root, where))
    except OSError:
        return []
    parts = real.split(os.sep)
    addresses = [p for p in parts if re.match(r"^[0-9a-f]{4}:[0-9a-f]{2}:[0-9a-f]{2}\.[0-7]$", p)]
    return addresses[1:-1]


def acs_control(config):
    # type: (bytes) -> Optional[int]
    """The ACS Control register from a device's config space, None without an ACS capability.
    PCIe extended capabilities are a chain from offset 0x100: a 32-bit header (id, version,
    next offset); ACS's control register is the 16 bits at +6."""
    offset, seen = 0x100, 0
    while 0x100 <= offset and offset + 8 <= len(config) and seen < 64:
        header = int.from_bytes(config[offset:offset + 4], "little")
        if header == 0 or header == 0xFFFFFFFF:
            return None
        if header & 0xFFFF == ACS_CAP_ID:
            return int.from_bytes(config[offset + 6:offset + 8], "little")
        offset, seen = (header >> 20) & 0xFFC, seen + 1
    return None


def _read_acs(facts, root, bridges):
    # type: (NodeFacts, str, Dict[str, List[str]]) -> None
    short = []
    for bridge, gpus in sorted(bridges.items()):
        try:
            with open(_path(root, "/sys/bus/pci/devices/%s/config" % bridge), "rb") as handle:
                config = handle.read(4096)
        except OSError as exc:
            facts.unmeasured["acs"] = "config space of %s: %s" % (bridge, exc.strerror or exc)
            return
        if len(config) <= 64:  # the kernel shows the rest of config space to root only
            short.append(bridge)
            continue
        if len(config) <= 0x100:
            continue  # conventional PCI: no extended capabilities, so no ACS
        control = acs_control(config)
        if control is not None:
            facts.pci_acs[bridge] = {"control": control, "gpus": gpus}
    if short:
        facts.unmeasured["acs"] = ("the extended config space of %s is readable only by root"
                                   % ", ".join(short[:4]))


def read_iommu(facts, root="/"):
    # type: (NodeFacts, str) -> None
    """The kernel's IOMMU flags and whether its DMA domains translate (DMA, DMA-FQ) or pass
    through (identity)."""
    cmdline = _read(root, "/proc/cmdline", 8192)
    if cmdline is None:
        facts.unmeasured["iommu"] = "/proc/cmdline not readable"
        return
    flags = [t for t in cmdline.split() if t.split("=")[0] in ("iommu", "intel_iommu", "amd_iommu", "iommu.passthrough")]
    types = {}  # type: Dict[str, int]
    groups = _listdir(root, "/sys/kernel/iommu_groups")
    for group in groups[:4096]:
        kind = _read(root, "/sys/kernel/iommu_groups/%s/type" % group, 32)
        if kind:
            types[kind] = types.get(kind, 0) + 1
    facts.iommu = {"flags": flags, "units": len(_listdir(root, "/sys/class/iommu")),
                   "groups": len(groups), "domain_types": types}


def read_machine(facts, env, root="/"):
    # type: (NodeFacts, Dict[str, str], str) -> None
    """Everything above, in one pass of a few hundred small reads (no child processes)."""
    read_shm(facts, root)
    read_capabilities(facts, root)
    read_kubernetes(facts, env, root)
    read_infiniband(facts, root)
    read_pci(facts, root)
    read_iommu(facts, root)
