"""What makes one GPU node slow or broken without failing outright: clock throttle reasons and the
driver's CUDA version (`nvidia-smi -q`), NVLink error counters (`nvidia-smi nvlink -e`), Xid
errors in the kernel log (/dev/kmsg), and on NVSwitch systems the fabric manager (its process,
its version, and the fabric state the GPUs report).

Run only where nvidia-smi or an NVIDIA device exists, so a CPU node pays nothing. The parsers take
text, so recorded `nvidia-smi` output stands in for a GPU in the tests.

Shipped to remote nodes with the other modules of node/ (payload.facts_program concatenates
their sources and runs them with the node's `python3`): standard library only, Python 3.7 syntax,
no `from __future__` import, `typing` generics instead of `list[str]`. Where ddpdoctor runs, a
name another node/ module defines is imported from it; on a node it is already defined above.
"""

import os
import re
import time
from typing import Any, Dict, List, Optional

# Clock reasons that slow a GPU that should be running flat out (Idle and application clock
# settings are not faults). nvidia-smi calls the section "Clocks Event Reasons" (newer drivers)
# or "Clocks Throttle Reasons".
SLOWDOWNS = ("HW Slowdown", "HW Thermal Slowdown", "HW Power Brake Slowdown", "SW Thermal Slowdown")
XID = re.compile(r"NVRM: Xid \((PCI:[0-9A-Fa-f:.]+)\): (\d+)")
MAX_XIDS = 20


def parse_smi_query(text):
    # type: (str) -> Dict[str, Any]
    """`nvidia-smi -q` -> {"driver", "cuda", "gpus": [{"bus", "name", "slowdowns": [...],
    "fabric_state"}]}: indentation gives each "Key : Value" its section."""
    out = {"driver": None, "cuda": None, "gpus": []}  # type: Dict[str, Any]
    gpu = None  # type: Optional[Dict[str, Any]]
    stack = []  # type: List[Any]
    for line in text.splitlines()[:200000]:
        if not line.strip():
            continue
        indent = len(line) - len(line.lstrip())
        key, sep, value = line.strip().partition(":")
        key, value = key.strip(), value.strip()
        match = re.match(r"^GPU ([0-9A-Fa-f]+:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.\d)$", line.strip())
        if match and indent == 0:
            gpu = {"bus": match.group(1), "name": "", "slowdowns": [], "fabric_state": None}
            out["gpus"].append(gpu)
            stack = []
            continue
        while stack and stack[-1][0] >= indent:
            stack.pop()
        path = [s[1] for s in stack]
        if not sep or (not value and indent > 0):
            stack.append((indent, key))
            continue
        if gpu is None:
            if key == "Driver Version":
                out["driver"] = value
            elif key == "CUDA Version":
                out["cuda"] = value
            continue
        if key == "Product Name" and not path:
            gpu["name"] = value
        elif path and path[0].startswith("Clocks") and "Reasons" in path[0]:
            if key in SLOWDOWNS and value == "Active":
                gpu["slowdowns"].append(key)
        elif path == ["Fabric"] and key == "State":
            gpu["fabric_state"] = value
    return out


def parse_nvlink_errors(text):
    # type: (str) -> Dict[str, Dict[str, int]]
    """`nvidia-smi nvlink -e` -> {"GPU 0": {"CRC": n, "Replay": n, "Recovery": n}}, summed over
    links; GPUs whose counters are all zero are left out."""
    out = {}  # type: Dict[str, Dict[str, int]]
    gpu = None
    for line in text.splitlines()[:100000]:
        head = re.match(r"^(GPU \d+):", line)
        if head:
            gpu = head.group(1)
            continue
        found = re.search(r"Link \d+: ([A-Za-z ]+?) Errors?\s*:\s*(\d+)", line)
        if gpu and found and int(found.group(2)):
            kind = found.group(1).strip()
            out.setdefault(gpu, {})
            out[gpu][kind] = out[gpu].get(kind, 0) + int(found.group(2))
    return out


def parse_xids(records):
    # type: (List[str]) -> List[Dict[str, Any]]
    """Kernel log records ("prio,seq,usec,flags;text", /dev/kmsg's format) -> the last Xids:
    [{"pci", "xid", "seconds" (since boot), "text"}]."""
    out = []
    for record in records:
        head, _, message = record.partition(";")
        found = XID.search(message)
        if not found:
            continue
        fields = head.split(",")
        usec = int(fields[2]) if len(fields) > 2 and fields[2].isdigit() else 0
        out.append({"pci": found.group(1), "xid": int(found.group(2)), "seconds": usec // 1000000,
                    "text": message.strip()[:200]})
    return out[-MAX_XIDS:]


def _kernel_log(facts, deadline):
    # type: (NodeFacts, float) -> Optional[List[str]]
    """The kernel ring buffer's records, read without blocking; None (and the reason noted)
    where it cannot be read (dmesg_restrict, no root, a container without /dev/kmsg)."""
    try:
        fd = os.open("/dev/kmsg", os.O_RDONLY | os.O_NONBLOCK)
    except OSError as exc:
        facts.unmeasured["xid"] = "kernel log not readable: /dev/kmsg: %s" % (exc.strerror or exc)
        return None
    records = []
    try:
        while len(records) < 200000 and time.monotonic() < deadline:
            try:
                chunk = os.read(fd, 8192)
            except BlockingIOError:
                break
            except OSError as exc:
                if exc.errno == 32:  # EPIPE: the ring buffer overwrote what we were about to read
                    continue
                break
            if not chunk:
                break
            records.append(chunk.decode("utf-8", "replace"))
    finally:
        os.close(fd)
    return records


def _run(argv, deadline):
    # type: (List[str], float) -> Optional[str]
    import subprocess
    try:
        return subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                              timeout=max(0.5, min(5.0, deadline - time.monotonic()))).stdout.decode("utf-8", "replace")
    except (OSError, subprocess.SubprocessError):
        return None


def _fabric_manager(facts, deadline):
    # type: (NodeFacts, float) -> None
    """The process (its comm is cut to 15 characters) and the version its binary reports."""
    running = False
    for pid in os.listdir("/proc"):
        if pid.isdigit():
            try:
                with open("/proc/%s/comm" % pid) as handle:
                    if handle.read().strip().startswith("nv-fabricmanage"):
                        running = True
                        break
            except OSError:
                continue
    manager = {"running": running}  # type: Dict[str, Any]
    import shutil
    exe = shutil.which("nv-fabricmanager")
    text = _run([exe, "--version"], deadline) if exe else None
    found = re.search(r"(\d+\.\d+(?:\.\d+)?)", text or "")
    if found:
        manager["version"] = found.group(1)
    facts.fabric_manager = manager


def apply_smi(facts, query):
    # type: (NodeFacts, Dict[str, Any]) -> None
    """Parsed `nvidia-smi -q` into the facts."""
    facts.driver_cuda = query.get("cuda") or None
    facts.driver = facts.driver or query.get("driver")
    facts.gpu_slowdowns = {g["bus"]: g["slowdowns"] for g in query["gpus"] if g["slowdowns"]}
    states = [g["fabric_state"] for g in query["gpus"] if g["fabric_state"] and g["fabric_state"] != "N/A"]
    if states:
        facts.fabric_manager["fabric_state"] = sorted(set(states))[0] if len(set(states)) == 1 else ", ".join(sorted(set(states)))


def read_gpu_health(facts, deadline):
    # type: (NodeFacts, float) -> None
    import shutil
    exe = shutil.which("nvidia-smi")
    if not exe and not facts.gpu_count:
        return
    records = _kernel_log(facts, deadline)
    if records is not None:
        facts.xids = parse_xids(records)
    if facts.nvswitch_count:
        _fabric_manager(facts, deadline)
    if not exe:
        facts.unmeasured["gpu_health"] = "nvidia-smi not found: throttle reasons and NVLink counters not read"
        return
    text = _run([exe, "-q"], deadline)
    if not text:
        facts.unmeasured["gpu_health"] = "nvidia-smi -q did not answer"
        return
    apply_smi(facts, parse_smi_query(text))
    if facts.nvswitch_count or (facts.gpu_count or 0) > 1:
        errors = _run([exe, "nvlink", "-e"], deadline)
        if errors is not None:
            facts.nvlink_errors = parse_nvlink_errors(errors)
