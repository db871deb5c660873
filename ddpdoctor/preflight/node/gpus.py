"""torch, CUDA, NCCL, the driver and the GPUs of this node.

torch is never imported just to learn its version: that is read from torch/version.py. torch is
imported, in a child process with a deadline, only on a node whose torch was built with CUDA and
that seems to have a GPU, to ask for the NCCL version and what CUDA really sees.

Shipped to remote nodes with the other modules of node/ (payload.facts_program concatenates
their sources and runs them with the node's `python3`): standard library only, Python 3.7 syntax,
no `from __future__` import, `typing` generics instead of `list[str]`. Where ddpdoctor runs, a
name another node/ module defines is imported from it; on a node it is already defined above.
"""

import json
import os
import re
import sys
import time
from typing import Any, Dict, List, Optional

if "load_lazy" not in globals():  # shipped over ssh, schema.py's definitions come first
    from ddpdoctor.preflight.node.ncclib import nccl_library
    from ddpdoctor.preflight.node.schema import load_lazy

_VERSION_LINE = re.compile(r"^(__version__|cuda|git_version)\s*(?::[^=]*)?=\s*(.+?)\s*$", re.M)


def torch_build():
    # type: () -> Optional[Dict[str, Optional[str]]]
    """torch's version, CUDA and git version from its version.py, without importing torch.
    None when torch is not installed for this Python."""
    import importlib.util
    try:
        spec = importlib.util.find_spec("torch")
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.origin:
        return None
    path = os.path.join(os.path.dirname(spec.origin), "version.py")
    try:
        with open(path, encoding="utf-8") as handle:
            text = handle.read()
    except OSError:
        return {"__version__": "unknown", "cuda": None, "git_version": None, "dir": os.path.dirname(spec.origin)}
    import ast
    found = {"__version__": None, "cuda": None, "git_version": None}  # type: Dict[str, Optional[str]]
    for key, raw in _VERSION_LINE.findall(text):
        try:
            value = ast.literal_eval(raw)
        except (ValueError, SyntaxError):
            continue
        found[key] = value if isinstance(value, str) else None
    found["dir"] = os.path.dirname(spec.origin)
    return found


def _nccl_from_packages():
    # type: () -> Optional[List[str]]
    """NCCL's version from the pip wheel torch depends on (nvidia-nccl-cu12) or a conda package:
    [version, source], read from metadata directory names, no import."""
    for entry in sys.path:
        try:
            names = os.listdir(entry or ".")
        except OSError:
            continue
        for name in names:
            match = re.match(r"nvidia_nccl_cu\d+-([\d.]+)\.dist-info$", name)
            if match:
                return [match.group(1), "nvidia-nccl wheel"]
    meta = os.path.join(sys.prefix, "conda-meta")
    try:
        for name in os.listdir(meta):
            match = re.match(r"nccl-([\d.]+)-.*\.json$", name)
            if match:
                return [match.group(1), "conda"]
    except OSError:
        pass
    return None


def _gpus_from_nvidia_smi(facts, deadline):
    # type: (NodeFacts, float) -> bool
    import shutil
    exe = shutil.which("nvidia-smi")
    if not exe:
        return False
    import subprocess  # only here: importing it costs every node a few ms
    try:
        out = subprocess.run([exe, "--query-gpu=index,uuid,name,driver_version", "--format=csv,noheader"],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             timeout=max(0.5, min(5.0, deadline - time.monotonic()))).stdout.decode()
    except (OSError, subprocess.SubprocessError) as exc:
        facts.notes.append("nvidia-smi did not answer: %s" % exc)
        return False
    rows = [[c.strip() for c in line.split(",")] for line in out.splitlines() if line.count(",") >= 3]
    if not rows:
        return False
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    if visible is not None:
        wanted = [v.strip() for v in visible.split(",") if v.strip()]
        rows = [r for r in rows if r[0] in wanted or r[1] in wanted]
    facts.gpu_count = len(rows)
    facts.gpu_names = [r[2] for r in rows]
    facts.driver = facts.driver or (rows[0][3] if rows else None)
    return True


def _driver_from_proc():
    # type: () -> Optional[str]
    try:
        with open("/proc/driver/nvidia/version") as handle:
            match = re.search(r"Kernel Module\s+([\d.]+)", handle.read())
    except OSError:
        return None
    return match.group(1) if match else None


def _nvidia_device_count():
    # type: () -> int
    try:
        return sum(1 for n in os.listdir("/dev") if re.match(r"nvidia\d+$", n))
    except OSError:
        return 0


_TORCH_PROBE = """
import json, torch
out = {"cuda_available": bool(torch.cuda.is_available()), "gpu_count": None, "gpu_names": None, "nccl": None}
if out["cuda_available"]:
    out["gpu_count"] = torch.cuda.device_count()
    out["gpu_names"] = [torch.cuda.get_device_name(i) for i in range(out["gpu_count"])]
try:
    v = torch.cuda.nccl.version()
    out["nccl"] = ".".join(str(x) for x in v) if isinstance(v, tuple) else str(v)
except Exception as exc:
    out["nccl_error"] = str(exc)
print(json.dumps(out))
"""


# The torch-probing children running now (in-process gathering only: `preflight` on this machine).
TORCH_PROBES = []  # type: List[Any]


def _ask_torch(facts, budget):
    # type: (NodeFacts, float) -> None
    """Import torch in a child with a deadline: what CUDA really sees, and torch's NCCL."""
    import subprocess  # only here: importing it costs every node a few ms
    if budget < 1.0:
        facts.notes.append("NCCL and CUDA availability not checked here: no time left to import torch")
        return
    try:
        proc = subprocess.Popen([sys.executable, "-c", _TORCH_PROBE], stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE)
    except OSError as exc:
        facts.notes.append("could not import torch: %s" % exc)
        return
    TORCH_PROBES.append(proc)  # an interrupted local preflight kills it (transport/child.kill_all)
    try:
        stdout, stderr = proc.communicate(timeout=budget)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.communicate()
        facts.notes.append("NCCL and CUDA availability not checked here: `import torch` took over %.0f s" % budget)
        return
    finally:
        if proc in TORCH_PROBES:
            TORCH_PROBES.remove(proc)
    done = subprocess.CompletedProcess(proc.args, proc.returncode, stdout, stderr)
    if done.returncode != 0:
        last = (done.stderr.decode(errors="replace").strip().splitlines() or ["?"])[-1]
        facts.notes.append("`import torch` failed: %s" % last[:200])
        return
    try:
        seen = json.loads(done.stdout.decode().strip().splitlines()[-1])
    except (ValueError, IndexError):
        return
    facts.cuda_available = seen.get("cuda_available")
    if seen.get("gpu_count") is not None:
        facts.gpu_count = seen["gpu_count"]
        facts.gpu_names = seen.get("gpu_names") or facts.gpu_names
    if seen.get("nccl"):
        facts.nccl, facts.nccl_source = seen["nccl"], "torch"
    elif seen.get("nccl_error"):
        facts.notes.append("torch.cuda.nccl.version() failed: %s" % seen["nccl_error"][:200])


def torch_and_gpus(facts, deadline, import_torch):
    # type: (NodeFacts, float, bool) -> None
    build = torch_build()
    if build is None:
        facts.notes.append("torch is not installed for %s" % facts.python_executable)
    else:
        facts.torch, facts.torch_cuda, facts.torch_git = build["__version__"], build["cuda"], build["git_version"]
    facts.driver = _driver_from_proc()
    devices = _nvidia_device_count()
    if not _gpus_from_nvidia_smi(facts, deadline):
        facts.gpu_count = devices
    if build is None:
        return
    if not facts.torch_cuda:
        facts.cuda_available = False
        facts.notes.append("NCCL not checked here: torch %s is a CPU build" % facts.torch)
        return
    packaged = _nccl_from_packages()
    load_lazy("ncclib")
    facts.nccl_library = nccl_library(build["dir"], dict(os.environ))
    if packaged:
        facts.nccl, facts.nccl_source = packaged
    if not facts.gpu_count:
        facts.notes.append("NCCL and CUDA availability not checked here: no GPU seen on this node")
        return
    if import_torch:
        _ask_torch(facts, deadline - time.monotonic() - 0.5)
    elif not facts.nccl:
        facts.notes.append("NCCL not checked here: torch not imported")
