"""One node's facts: names and addresses, interfaces, Python / torch / CUDA / NCCL / driver
versions, GPUs, the distributed-training environment, limits, and the machine under NCCL
(machine.py, ncclib.py, gpuhealth.py).

This module is shipped to remote nodes: ssh runs `python3 -` with redact.py's source, then
schema.py, interfaces.py, gpus.py and connect.py (this module's parts, one job each), then this
file on stdin, so a node needs a Python (3.7 or newer), not ddpdoctor. Hence: standard library
only, no `from __future__` import, `typing` generics instead of `list[str]`. Here, gather() puts
the parts together; the parts are re-exported for the parent side's imports.

Speed matters (a preflight over 64 nodes should take seconds), and every millisecond here is paid
once per node. Modules only some paths need (subprocess) are imported where they are used.
"""

import json
import os
import socket
import sys
import time
from typing import Any, Dict, Optional

if "redact_env" not in globals():  # shipped over ssh, redact.py's definitions come first
    from ddpdoctor.core.redact import redact_env
if "NodeFacts" not in globals():  # shipped over ssh, the parts' definitions come first
    from ddpdoctor.preflight.node.schema import (CONNECT_STATUSES, MARKER, SCHEMA,  # noqa: F401
                                                 ConnectResult, NodeFacts)
    from ddpdoctor.preflight.node.interfaces import names_and_addresses, read_interfaces, resolve  # noqa: F401
    from ddpdoctor.preflight.node.gpus import TORCH_PROBES, torch_and_gpus, torch_build  # noqa: F401
    from ddpdoctor.preflight.node.connect import endpoint, probe_connect
    from ddpdoctor.preflight.node.machine import read_limits, read_machine
    from ddpdoctor.preflight.node.gpuhealth import read_gpu_health
    from ddpdoctor.preflight.node.schema import load_lazy

# The settings that change how a DDP job forms and talks.
ENV_PREFIXES = ("NCCL_", "TORCH_", "GLOO_", "MASTER_")
ENV_NAMES = ("WORLD_SIZE", "RANK", "LOCAL_RANK", "NODE_RANK", "GROUP_RANK", "LOCAL_WORLD_SIZE",
             "CUDA_VISIBLE_DEVICES")


def _environment(facts):
    # type: (NodeFacts) -> None
    picked = {k: v for k, v in os.environ.items() if k.startswith(ENV_PREFIXES) or k in ENV_NAMES}
    facts.env = dict(sorted(redact_env(picked).items()))


def _netns():
    # type: () -> Optional[str]
    """Processes with the same boot id and network namespace share 127.0.0.1; nothing else does."""
    try:
        with open("/proc/sys/kernel/random/boot_id") as handle:
            boot = handle.read().strip()
        return "%s/net:%d" % (boot, os.stat("/proc/self/ns/net").st_ino)
    except OSError:
        return None


def _which(name):
    # type: (str) -> Optional[str]
    import shutil
    return shutil.which(name)


def identity(fqdn=True):
    # type: (bool) -> NodeFacts
    """Only this node's names and addresses, in a millisecond or two: enough to tell which hosts
    of a list are this machine."""
    facts = NodeFacts(hostname=socket.gethostname())
    if fqdn:
        facts.fqdn = socket.getfqdn()
    read_interfaces(facts)
    return facts


def gather(connect=None, timeout=10.0, import_torch=True, collected_by="local"):
    # type: (Optional[Dict[str, Any]], float, bool, str) -> NodeFacts
    """This node's facts. `connect` = {"host", "port", "timeout"} adds a rendezvous connect test.
    Everything that waits is bounded by `timeout` seconds."""
    start = time.monotonic()
    deadline = start + timeout
    facts = NodeFacts(hostname="", collected_by=collected_by)
    facts.python = "%d.%d.%d" % sys.version_info[:3]
    facts.python_executable = sys.executable
    names_and_addresses(facts)
    read_interfaces(facts)
    _environment(facts)
    read_limits(facts)
    read_machine(facts, dict(os.environ))
    facts.netns = _netns()
    if connect:
        # Before the slow part, so the listener on the master is still there.
        facts.connect = probe_connect(connect["host"], int(connect["port"]), float(connect["timeout"]))
    torch_and_gpus(facts, deadline, import_torch)
    if facts.gpu_count or _which("nvidia-smi"):
        load_lazy("gpuhealth")
        read_gpu_health(facts, deadline)
    facts.collect_s = round(time.monotonic() - start, 3)
    return facts


def _remote_main(params):
    # type: (Dict[str, Any]) -> None
    """Entry point when shipped over ssh: facts as one marked JSON line on stdout (a login shell
    may print its own noise around it)."""
    facts = gather(params.get("connect"), float(params.get("timeout", 10.0)),
                   bool(params.get("import_torch", True)), params.get("collected_by", "ssh"))
    sys.stdout.write(MARKER + json.dumps(facts.to_dict()) + "\n")
    sys.stdout.flush()
