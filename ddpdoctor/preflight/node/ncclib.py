"""Which libnccl torch would load on this node, resolved with the dynamic loader's rules (ld.so(8)):
LD_PRELOAD first; then the DT_RPATH of the library that needs it (ignored when it has a
DT_RUNPATH); LD_LIBRARY_PATH; its DT_RUNPATH; /etc/ld.so.cache; /lib and /usr/lib. A torch
whose libtorch_cuda.so does not need libnccl has NCCL linked in ("bundled").

Only ELF headers, the dynamic section and the loader's cache are read: nothing is loaded.

Shipped to remote nodes with the other modules of node/ (payload.facts_program concatenates
their sources and runs them with the node's `python3`): standard library only, Python 3.7 syntax,
no `from __future__` import, `typing` generics instead of `list[str]`. Where ddpdoctor runs, a
name another node/ module defines is imported from it; on a node it is already defined above.
"""

import os
import re
import struct
from typing import Dict, List, Optional, Tuple

DT_NEEDED, DT_STRTAB, DT_RPATH, DT_RUNPATH = 1, 5, 15, 29
CACHE_MAGIC = b"glibc-ld.so.cache1.1"
DEFAULT_DIRS = ("/lib64", "/usr/lib64", "/lib", "/usr/lib", "/lib/x86_64-linux-gnu", "/usr/lib/x86_64-linux-gnu")


def elf_dynamic(path):
    # type: (str) -> Optional[Dict[str, List[str]]]
    """{"needed": [...], "rpath": [...], "runpath": [...]} of a 64-bit little-endian ELF file;
    None when it is not one or cannot be read."""
    try:
        with open(path, "rb") as f:
            head = f.read(64)
            if head[:4] != b"\x7fELF" or head[4] != 2 or head[5] != 1:
                return None
            phoff, = struct.unpack_from("<Q", head, 32)
            phentsize, phnum = struct.unpack_from("<HH", head, 54)
            if phentsize < 56:  # an ELF64 program header is 56 bytes
                return None
            f.seek(phoff)
            table = f.read(phentsize * min(phnum, 128))
            loads, dynamic = [], None
            for i in range(len(table) // phentsize):
                kind, _, offset, vaddr, _, filesz = struct.unpack_from("<IIQQQQ", table, i * phentsize)
                if kind == 1:
                    loads.append((vaddr, offset, filesz))
                elif kind == 2:
                    dynamic = (offset, min(filesz, 1 << 16))
            if dynamic is None:
                return None
            f.seek(dynamic[0])
            raw = f.read(dynamic[1])
            entries = [struct.unpack_from("<qQ", raw, i) for i in range(0, len(raw) - 15, 16)]
            strtab = next((v for t, v in entries if t == DT_STRTAB), None)
            base = next((off + strtab - va for va, off, size in loads if va <= (strtab or -1) < va + size), None)
            if base is None:
                return None
            out = {"needed": [], "rpath": [], "runpath": []}  # type: Dict[str, List[str]]
            names = {DT_NEEDED: "needed", DT_RPATH: "rpath", DT_RUNPATH: "runpath"}
            for tag, value in entries:
                if tag == 0:
                    break
                if tag in names:
                    f.seek(base + value)
                    text = f.read(4096).split(b"\0", 1)[0].decode("utf-8", "replace")
                    out[names[tag]].extend(text.split(":") if tag != DT_NEEDED else [text])
            return out
    except (OSError, struct.error, ValueError, IndexError):
        return None


def ld_cache(path="/etc/ld.so.cache"):
    # type: (str) -> Dict[str, str]
    """{soname: path} from glibc's loader cache (the format of glibc 2.x, "new" entries)."""
    try:
        with open(path, "rb") as f:
            data = f.read(8 << 20)
    except OSError:
        return {}
    start = data.find(CACHE_MAGIC)
    if start < 0 or start + 48 > len(data):
        return {}
    nlibs, = struct.unpack_from("<I", data, start + 20)
    out = {}  # type: Dict[str, str]
    for i in range(min(nlibs, 100000)):
        entry = start + 48 + i * 24
        if entry + 24 > len(data):
            break
        _, key, value = struct.unpack_from("<iII", data, entry)
        if key >= len(data) or value >= len(data):
            break
        name = data[key:data.find(b"\0", key)].decode("utf-8", "replace")
        out.setdefault(name, data[value:data.find(b"\0", value)].decode("utf-8", "replace"))
    return out


def _expand_origin(entry, origin):
    # type: (str, str) -> str
    return entry.replace("${ORIGIN}", origin).replace("$ORIGIN", origin)


def resolve_library(soname, needer, env, cache_path="/etc/ld.so.cache"):
    # type: (str, Optional[Dict[str, List[str]]], Dict[str, str], str) -> Tuple[Optional[str], str]
    """(path, how) the loader would open `soname` from a library with dynamic section `needer`."""
    for item in re.split(r"[ :]", env.get("LD_PRELOAD", "")):
        if item and os.path.basename(item).startswith(soname.split(".so")[0] + ".so") and os.path.exists(item):
            return item, "LD_PRELOAD"
    origin = needer.get("origin", [""])[0] if needer else ""
    rpath = needer.get("rpath", []) if needer and not needer.get("runpath") else []
    runpath = needer.get("runpath", []) if needer else []
    searches = [("DT_RPATH of libtorch_cuda.so", rpath),
                ("LD_LIBRARY_PATH", [d for d in env.get("LD_LIBRARY_PATH", "").split(":") if d]),
                ("DT_RUNPATH of libtorch_cuda.so", runpath)]
    for how, dirs in searches:
        for d in dirs:
            candidate = os.path.join(_expand_origin(d, origin), soname)
            if os.path.exists(candidate):
                return os.path.normpath(candidate), how
    cached = ld_cache(cache_path).get(soname)
    if cached and os.path.exists(cached):
        return cached, "ld.so.cache"
    for d in DEFAULT_DIRS:
        candidate = os.path.join(d, soname)
        if os.path.exists(candidate):
            return candidate, "default library path"
    return None, "not found"


def library_version(path):
    # type: (str) -> Optional[str]
    """"libnccl.so.2.21.5" -> "2.21.5"; the pip wheel's metadata when the name says only ".so.2"."""
    real = os.path.realpath(path)
    match = re.search(r"\.so\.(\d+\.\d+\.\d+)", os.path.basename(real))
    if match:
        return match.group(1)
    # site-packages/nvidia/nccl/lib/libnccl.so.2 -> site-packages/nvidia_nccl_cu12-2.21.5.dist-info
    site = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(real))))
    try:
        for name in os.listdir(site):
            found = re.match(r"nvidia_nccl_cu\d+-([\d.]+)\.dist-info$", name)
            if found:
                return found.group(1)
    except OSError:
        pass
    return None


def nccl_library(torch_dir, env, cache_path="/etc/ld.so.cache"):
    # type: (str, Dict[str, str], str) -> Dict[str, str]
    """{"path", "how", "version"} of the libnccl a torch in `torch_dir` would load, or
    {"how": "bundled"} / {"how": "not found", ...}; {} without a CUDA torch library."""
    lib = os.path.join(torch_dir, "lib", "libtorch_cuda.so")
    dynamic = elf_dynamic(lib)
    if dynamic is None:
        return {}
    soname = next((n for n in dynamic["needed"] if n.startswith("libnccl.so")), None)
    if soname is None:
        return {"how": "bundled", "path": lib}
    dynamic["origin"] = [os.path.dirname(lib)]
    path, how = resolve_library(soname, dynamic, env, cache_path)
    out = {"how": how, "soname": soname}
    if path:
        out["path"] = path
        out["version"] = library_version(path) or ""
    return out
