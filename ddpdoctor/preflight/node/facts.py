"""One node's facts: names and addresses, interfaces, Python / torch / CUDA / NCCL / driver
versions, GPUs, the distributed-training environment, /dev/shm, open-files limit.

This module is shipped to remote nodes: ssh runs `python3 -` with redact.py's source followed by
this file's source on stdin, so a node needs a Python (3.7 or newer), not ddpdoctor. Hence:
standard library only, no `from __future__` import, `typing` generics instead of `list[str]`.

Speed matters (a preflight over 64 nodes should take seconds), and every millisecond here is paid
once per node. Interfaces come from one rtnetlink dump on Linux (what `ip addr` reads, ~1 ms);
psutil (an import of ~10-20 ms), `ip -j addr` (a child process) and /proc are the fallbacks
elsewhere. Modules only some paths need (subprocess) are imported where they are used.

torch is never imported just to learn its version: that is read from torch/version.py. torch is
imported, in a child process with a deadline, only on a node whose torch was built with CUDA and
that seems to have a GPU, to ask for the NCCL version and what CUDA really sees.
"""

import json
import os
import re
import socket
import sys
import time
from typing import Any, Dict, List, Optional

if __name__ == "__main__":
    # Shipped to a node (`python3 -`), where the records below are only filled in and printed.
    # This stand-in for dataclasses spares every node importing it and what it imports (inspect,
    # dis, ast, tokenize): ~10 ms of CPU per node, 640 ms for a 64-node preflight.
    class _Factory(object):
        def __init__(self, default_factory):
            self.default_factory = default_factory

    def field(default_factory):
        return _Factory(default_factory)

    def dataclass(cls):
        names = list(cls.__dict__.get("__annotations__", {}))
        defaults = {n: cls.__dict__[n] for n in names if n in cls.__dict__}

        def __init__(self, *args, **kwargs):
            kwargs.update(zip(names, args))
            for name in names:
                if name in kwargs:
                    value = kwargs[name]
                elif isinstance(defaults.get(name), _Factory):
                    value = defaults[name].default_factory()
                elif name in defaults:
                    value = defaults[name]
                else:
                    raise TypeError("missing argument %r" % name)
                setattr(self, name, value)

        cls.__init__ = __init__
        cls.__dataclass_fields__ = dict.fromkeys(names)
        return cls

    def asdict(obj):
        if hasattr(obj, "__dataclass_fields__"):
            return {n: asdict(getattr(obj, n)) for n in obj.__dataclass_fields__}
        if isinstance(obj, list):
            return [asdict(v) for v in obj]
        if isinstance(obj, dict):
            return {k: asdict(v) for k, v in obj.items()}
        return obj
else:
    from dataclasses import asdict, dataclass, field, fields

if "redact_env" not in globals():  # shipped over ssh, redact.py's definitions come first
    from ddpdoctor.core.redact import redact_env

SCHEMA = 1
MARKER = "DDPDOCTOR-FACTS "
# The settings that change how a DDP job forms and talks.
ENV_PREFIXES = ("NCCL_", "TORCH_", "GLOO_", "MASTER_")
ENV_NAMES = ("WORLD_SIZE", "RANK", "LOCAL_RANK", "NODE_RANK", "GROUP_RANK", "LOCAL_WORLD_SIZE",
             "CUDA_VISIBLE_DEVICES")
CONNECT_STATUSES = ("ok", "refused", "timeout", "unresolvable", "error")


@dataclass
class ConnectResult:
    """A TCP connect from this node to the rendezvous endpoint (MASTER_ADDR:MASTER_PORT)."""

    target: str  # "host:port"
    status: str  # ok | refused | timeout | unresolvable | error
    address: Optional[str] = None  # the address the name resolved to, as tried last
    detail: str = ""  # the OS's words, e.g. "Connection refused", "No route to host"
    seconds: float = 0.0


@dataclass
class NodeFacts:
    """What one node looks like to a DDP job. `None` means "not checked here", and `notes` say why."""

    hostname: str
    fqdn: str = ""
    hostname_addresses: List[str] = field(default_factory=list)  # what the node resolves its name to
    fqdn_addresses: List[str] = field(default_factory=list)
    resolve_errors: Dict[str, str] = field(default_factory=dict)  # name -> resolver error
    interfaces: Dict[str, List[str]] = field(default_factory=dict)  # name -> addresses
    networks: Dict[str, List[str]] = field(default_factory=dict)  # name -> "10.0.0.11/24" (address/prefix)
    interfaces_down: List[str] = field(default_factory=list)
    python: str = ""
    python_executable: str = ""
    torch: Optional[str] = None  # None: torch is not installed for this Python
    torch_cuda: Optional[str] = None  # CUDA torch was built with; None: a CPU build
    torch_git: Optional[str] = None
    nccl: Optional[str] = None
    nccl_source: str = ""  # how nccl was learned: "nvidia-nccl wheel", "torch", "conda"
    cuda_available: Optional[bool] = None
    gpu_count: Optional[int] = None
    gpu_names: List[str] = field(default_factory=list)
    driver: Optional[str] = None
    env: Dict[str, str] = field(default_factory=dict)  # NCCL_*, TORCH_*, ..., secrets redacted
    shm_bytes: Optional[int] = None
    nofile_soft: Optional[int] = None
    nofile_hard: Optional[int] = None
    netns: Optional[str] = None  # kernel boot id + network namespace: equal => loopback is shared
    notes: List[str] = field(default_factory=list)
    connect: Optional[ConnectResult] = None
    collected_by: str = "local"  # local | ssh | file
    collect_s: float = 0.0
    schema: int = SCHEMA

    def to_dict(self):
        # type: () -> Dict[str, Any]
        return asdict(self)

    def to_json(self):
        # type: () -> str
        return json.dumps(self.to_dict(), indent=2, sort_keys=False)

    @classmethod
    def from_dict(cls, data):
        # type: (Any) -> NodeFacts
        """Load recorded facts; unknown keys are ignored, missing ones take their defaults, a
        wrong type raises ValueError naming the field."""
        if not isinstance(data, dict):
            raise ValueError("facts must be a JSON object")
        if not isinstance(data.get("hostname"), str) or not data.get("hostname"):
            raise ValueError("field 'hostname' must be a non-empty string")
        values = {}
        for f in fields(cls):
            if f.name not in data:
                continue
            value = data[f.name]
            if f.name == "connect" and value is not None:
                if not isinstance(value, dict):
                    raise ValueError("field 'connect' must be an object or null")
                known = {k: v for k, v in value.items() if k in ConnectResult.__dataclass_fields__}
                try:
                    value = ConnectResult(**known)
                except TypeError as exc:
                    raise ValueError("field 'connect': %s" % exc) from None
                if value.status not in CONNECT_STATUSES:
                    raise ValueError("field 'connect.status' must be one of %s" % ", ".join(CONNECT_STATUSES))
            else:
                _check_type(f.name, value, f.type)
            values[f.name] = value
        return cls(**values)


def _check_type(name, value, annotation):
    # type: (str, Any, Any) -> None
    if not _matches(value, annotation):
        raise ValueError("field %r does not have the type %s (got %r)"
                         % (name, str(annotation).replace("typing.", ""), value))


def _matches(value, annotation):
    # type: (Any, Any) -> bool
    # Runs only where ddpdoctor itself runs (Python 3.9+), never on a remote node.
    from typing import Union, get_args, get_origin
    origin, args = get_origin(annotation), get_args(annotation)
    if origin is Union:
        return any(_matches(value, a) for a in args)
    if annotation is type(None):
        return value is None
    if origin is list:
        return isinstance(value, list) and all(_matches(v, args[0]) for v in value)
    if origin is dict:
        return isinstance(value, dict) and all(_matches(v, args[1]) for v in value.values())
    if annotation is float:
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if annotation is int:
        return isinstance(value, int) and not isinstance(value, bool)
    return isinstance(value, annotation)


def _unique(items):
    # type: (List[str]) -> List[str]
    return list(dict.fromkeys(items))


def resolve(name):
    # type: (str) -> List[str]
    """All addresses `name` resolves to here, in resolver order; raises socket.gaierror."""
    infos = socket.getaddrinfo(name, None, 0, socket.SOCK_STREAM)
    return _unique([info[4][0].split("%", 1)[0] for info in infos])


def _names_and_addresses(facts):
    # type: (NodeFacts) -> None
    facts.hostname = socket.gethostname()
    facts.fqdn = socket.getfqdn()
    for name, target in ((facts.hostname, "hostname_addresses"), (facts.fqdn, "fqdn_addresses")):
        try:
            setattr(facts, target, resolve(name))
        except (socket.gaierror, UnicodeError) as exc:
            facts.resolve_errors[name] = str(exc)


def _interfaces_from_netlink(facts):
    # type: (NodeFacts) -> bool
    """Linux: every address of every interface from one rtnetlink dump (what `ip addr` reads),
    in about a millisecond, with no import beyond the standard library."""
    import struct
    try:
        sock = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, 0)  # 0 = NETLINK_ROUTE
    except (AttributeError, OSError):
        return False  # not Linux
    found = {}  # type: Dict[str, List[str]]
    cidrs = {}  # type: Dict[str, List[str]]
    try:
        names = dict(socket.if_nameindex())
        sock.settimeout(2.0)
        sock.bind((0, 0))
        # nlmsghdr(len, RTM_GETADDR, NLM_F_REQUEST | NLM_F_DUMP, seq, pid) + ifaddrmsg(AF_UNSPEC)
        sock.send(struct.pack("=LHHLL", 24, 22, 0x301, 1, 0) + struct.pack("=BBBBL", 0, 0, 0, 0, 0))
        while True:
            data, offset = sock.recv(1 << 16), 0
            while offset + 16 <= len(data):
                length, kind = struct.unpack_from("=LH", data, offset)
                if length < 16 or kind == 3:  # NLMSG_DONE
                    return _finish_interfaces(facts, names, found, cidrs)
                if kind == 2:  # NLMSG_ERROR
                    return False
                if kind == 20:  # RTM_NEWADDR
                    family, prefix, _, _, index = struct.unpack_from("=BBBBL", data, offset + 16)
                    attrs, at, end = {}, offset + 24, offset + length
                    while at + 4 <= end:
                        alen, atype = struct.unpack_from("=HH", data, at)
                        if alen < 4:
                            break
                        attrs[atype] = data[at + 4:at + alen]
                        at += (alen + 3) & ~3
                    # IFA_LOCAL (2) is the interface's own IPv4 address (IFA_ADDRESS may be the
                    # peer's on point-to-point links); IPv6 only has IFA_ADDRESS (1).
                    raw = attrs.get(2) or attrs.get(1)
                    if raw and family in (socket.AF_INET, socket.AF_INET6):
                        name, address = names.get(index, str(index)), socket.inet_ntop(family, raw)
                        found.setdefault(name, []).append(address)
                        cidrs.setdefault(name, []).append("%s/%d" % (address, prefix))
                offset += (length + 3) & ~3
    except (OSError, struct.error):
        return False
    finally:
        sock.close()


def _finish_interfaces(facts, names, found, cidrs):
    # type: (NodeFacts, Dict[int, str], Dict[str, List[str]], Dict[str, List[str]]) -> bool
    for name in names.values():
        facts.interfaces[name] = _unique(found.get(name, []))
        facts.networks[name] = _unique(cidrs.get(name, []))
        try:
            with open("/sys/class/net/%s/flags" % name) as handle:
                if not int(handle.read().strip(), 16) & 0x1:  # IFF_UP
                    facts.interfaces_down.append(name)
        except (OSError, ValueError):
            pass
    return True


def _interfaces_from_psutil(facts):
    # type: (NodeFacts) -> bool
    try:
        import psutil
    except ImportError:
        return False
    wanted = (socket.AF_INET, socket.AF_INET6)
    for name, addrs in psutil.net_if_addrs().items():
        picked = [a for a in addrs if a.family in wanted]
        facts.interfaces[name] = _unique([a.address.split("%", 1)[0] for a in picked])
        facts.networks[name] = _unique([_cidr(a.address.split("%", 1)[0], a.netmask) for a in picked
                                        if a.netmask])
    facts.interfaces_down = sorted(n for n, s in psutil.net_if_stats().items() if not s.isup)
    return True


def _cidr(address, netmask):
    # type: (str, str) -> str
    """"10.0.0.11", "255.255.255.0" -> "10.0.0.11/24" (psutil gives masks, IPv6 ones as ffff:...)."""
    if ":" in netmask:
        bits = sum(bin(int(part, 16)).count("1") for part in netmask.split(":") if part)
    else:
        bits = sum(bin(int(part)).count("1") for part in netmask.split(".") if part.isdigit())
    return "%s/%d" % (address, bits)


def _interfaces_from_ip(facts):
    # type: (NodeFacts) -> bool
    import subprocess  # only here: importing it costs every node a few ms
    try:
        out = subprocess.run(["ip", "-j", "addr"], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                             timeout=3, check=True).stdout
        links = json.loads(out.decode() or "[]")
    except (OSError, subprocess.SubprocessError, ValueError):
        return False
    for link in links:
        name = link.get("ifname")
        if not name:
            continue
        infos = [a for a in link.get("addr_info", []) if a.get("local")]
        facts.interfaces[name] = _unique([a["local"] for a in infos])
        facts.networks[name] = _unique(["%s/%s" % (a["local"], a["prefixlen"]) for a in infos
                                        if "prefixlen" in a])
        if "UP" not in link.get("flags", []):
            facts.interfaces_down.append(name)
    return True


def _interfaces_from_proc(facts):
    # type: (NodeFacts) -> None
    """Last resort: names from the kernel, IPv6 from /proc/net/if_inet6, IPv4 by ioctl."""
    try:
        names = [n for _, n in socket.if_nameindex()]
    except OSError:
        names = []
    for name in names:
        facts.interfaces.setdefault(name, [])
    try:
        import fcntl
        import struct
        sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        try:
            for name in names:
                try:
                    packed = fcntl.ioctl(sock.fileno(), 0x8915,  # SIOCGIFADDR
                                         struct.pack("256s", name[:15].encode()))
                    facts.interfaces[name].append(socket.inet_ntoa(packed[20:24]))
                except OSError:
                    pass
        finally:
            sock.close()
    except ImportError:
        pass
    try:
        with open("/proc/net/if_inet6") as handle:
            for line in handle:
                parts = line.split()
                if len(parts) >= 6:
                    raw = parts[0]
                    addr = ":".join(raw[i:i + 4] for i in range(0, 32, 4))
                    packed6 = socket.inet_pton(socket.AF_INET6, addr)
                    facts.interfaces.setdefault(parts[5], []).append(
                        socket.inet_ntop(socket.AF_INET6, packed6))
    except OSError:
        pass


def _interfaces(facts):
    # type: (NodeFacts) -> None
    if not _interfaces_from_netlink(facts) and not _interfaces_from_psutil(facts) and not _interfaces_from_ip(facts):
        _interfaces_from_proc(facts)
        facts.notes.append("interfaces read from /proc (no psutil, no `ip`): up/down not known")


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


def _torch_and_gpus(facts, deadline, import_torch):
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
    if packaged:
        facts.nccl, facts.nccl_source = packaged
    if not facts.gpu_count:
        facts.notes.append("NCCL and CUDA availability not checked here: no GPU seen on this node")
        return
    if import_torch:
        _ask_torch(facts, deadline - time.monotonic() - 0.5)
    elif not facts.nccl:
        facts.notes.append("NCCL not checked here: torch not imported")


def _environment(facts):
    # type: (NodeFacts) -> None
    picked = {k: v for k, v in os.environ.items() if k.startswith(ENV_PREFIXES) or k in ENV_NAMES}
    facts.env = dict(sorted(redact_env(picked).items()))


def _limits(facts):
    # type: (NodeFacts) -> None
    try:
        st = os.statvfs("/dev/shm")
        facts.shm_bytes = st.f_blocks * st.f_frsize
    except (OSError, AttributeError):
        facts.notes.append("/dev/shm not found")
    try:
        import resource
        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        infinity = resource.RLIM_INFINITY
        facts.nofile_soft = None if soft == infinity else soft
        facts.nofile_hard = None if hard == infinity else hard
    except (ImportError, OSError):
        pass


def _netns():
    # type: () -> Optional[str]
    """Processes with the same boot id and network namespace share 127.0.0.1; nothing else does."""
    try:
        with open("/proc/sys/kernel/random/boot_id") as handle:
            boot = handle.read().strip()
        return "%s/net:%d" % (boot, os.stat("/proc/self/ns/net").st_ino)
    except OSError:
        return None


def endpoint(host, port):
    # type: (str, int) -> str
    """"host:port", IPv6 in brackets."""
    return ("[%s]:%d" if ":" in host else "%s:%d") % (host, port)


def probe_connect(host, port, timeout):
    # type: (str, int, float) -> ConnectResult
    """Try a TCP connect to host:port within `timeout` seconds, every resolved address in turn.
    Tells refused (nothing listens) from timeout (filtered or down) from unresolvable."""
    target = endpoint(host, port)
    start = time.monotonic()
    try:
        infos = socket.getaddrinfo(host, port, 0, socket.SOCK_STREAM)
    except (socket.gaierror, UnicodeError) as exc:
        return ConnectResult(target, "unresolvable", None, str(exc), round(time.monotonic() - start, 3))
    result = ConnectResult(target, "error", None, "no address", 0.0)
    for family, kind, proto, _, addr in infos:
        left = timeout - (time.monotonic() - start)
        if left <= 0:
            break
        sock = socket.socket(family, kind, proto)
        sock.settimeout(left)
        try:
            sock.connect(addr)
            result = ConnectResult(target, "ok", addr[0], "", 0.0)
        except socket.timeout:
            result = ConnectResult(target, "timeout", addr[0], "no answer within %.1f s" % timeout, 0.0)
        except ConnectionRefusedError as exc:
            result = ConnectResult(target, "refused", addr[0], exc.strerror or "Connection refused", 0.0)
        except OSError as exc:
            result = ConnectResult(target, "error", addr[0], exc.strerror or str(exc), 0.0)
        finally:
            sock.close()
        if result.status == "ok":
            break
    result.seconds = round(time.monotonic() - start, 3)
    return result


def identity(fqdn=True):
    # type: (bool) -> NodeFacts
    """Only this node's names and addresses, in a millisecond or two: enough to tell which hosts
    of a list are this machine."""
    facts = NodeFacts(hostname=socket.gethostname())
    if fqdn:
        facts.fqdn = socket.getfqdn()
    _interfaces(facts)
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
    _names_and_addresses(facts)
    _interfaces(facts)
    _environment(facts)
    _limits(facts)
    facts.netns = _netns()
    if connect:
        # Before the slow part, so the listener on the master is still there.
        facts.connect = probe_connect(connect["host"], int(connect["port"]), float(connect["timeout"]))
    _torch_and_gpus(facts, deadline, import_torch)
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
