"""What a node's facts look like: NodeFacts and ConnectResult, the JSON a node prints (MARKER)
and the loader of recorded fact files (from_dict), with its type checks.

Shipped to remote nodes with the other modules of node/ (payload.facts_program concatenates
their sources and runs them with the node's `python3`): standard library only, Python 3.7 syntax,
no `from __future__` import, `typing` generics instead of `list[str]`. Where ddpdoctor runs, a
name another node/ module defines is imported from it; on a node it is already defined above.
"""

import json
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


SCHEMA = 1


def load_lazy(module):
    # type: (str) -> None
    """On a node: compile a part shipped as text (payload.LAZY_MODULES) into the program's one
    namespace, the first time it is needed. Where ddpdoctor runs it was imported: nothing to do."""
    sources = globals().get("_LAZY_SOURCES")
    if sources and module in sources:
        exec(compile(sources.pop(module), module, "exec"), globals())

MARKER = "DDPDOCTOR-FACTS "
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
    # The machine under NCCL (machine.py, ncclib.py, gpuhealth.py). A fact that could not be read
    # is None / empty and `unmeasured` says why: {fact: reason}.
    shm_free_bytes: Optional[int] = None
    memlock_soft: Optional[int] = None  # bytes; -1: unlimited
    memlock_hard: Optional[int] = None
    cap_eff: Optional[str] = None  # CapEff of /proc/self/status, hex
    kubernetes: Dict[str, str] = field(default_factory=dict)  # in a pod: pod, node, namespace
    ib_devices: Dict[str, Any] = field(default_factory=dict)  # device -> port -> state, link_layer, gids
    pci_links: List[Dict[str, Any]] = field(default_factory=list)  # GPUs and NICs: widths, speeds (GT/s)
    pci_acs: Dict[str, Any] = field(default_factory=dict)  # bridge above GPUs -> ACS control, gpus
    iommu: Dict[str, Any] = field(default_factory=dict)  # kernel flags, units, domain types
    nvswitch_count: Optional[int] = None
    fabric_manager: Dict[str, Any] = field(default_factory=dict)  # running, version, fabric_state
    nccl_library: Dict[str, str] = field(default_factory=dict)  # path, how, version torch would load
    driver_cuda: Optional[str] = None  # the newest CUDA the driver supports (nvidia-smi)
    gpu_slowdowns: Dict[str, List[str]] = field(default_factory=dict)  # bus id -> active slowdowns
    xids: List[Dict[str, Any]] = field(default_factory=list)  # recent Xid errors in the kernel log
    nvlink_errors: Dict[str, Dict[str, int]] = field(default_factory=dict)  # GPU -> kind -> count
    unmeasured: Dict[str, str] = field(default_factory=dict)
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
                if f.name in _SHAPES and not _SHAPES[f.name](value):
                    raise ValueError("field %r does not have the shape the machine checks read" % f.name)
            values[f.name] = value
        return cls(**values)


def _number(value, none=True):
    # type: (Any, bool) -> bool
    return (value is None and none) or (isinstance(value, (int, float)) and not isinstance(value, bool))


# The nested parts of the machine facts (typed Any above) that the checks index into.
_SHAPES = {
    "ib_devices": lambda v: all(isinstance(ports, dict) and all(
        isinstance(p, dict) and isinstance(p.get("state", ""), str) and isinstance(p.get("gids", []), list)
        and all(isinstance(g, int) for g in p.get("gids", [])) for p in ports.values()) for ports in v.values()),
    "pci_links": lambda v: all(
        isinstance(link.get("address"), str) and link.get("kind") in ("gpu", "nic")
        and all(_number(link.get(k)) for k in ("current_width", "current_speed", "max_speed"))
        and _number(link.get("max_width"), none=False) for link in v),
    "pci_acs": lambda v: all(isinstance(b, dict) and isinstance(b.get("control"), int)
                             and isinstance(b.get("gpus", []), list) for b in v.values()),
    "iommu": lambda v: isinstance(v.get("flags", []), list) and isinstance(v.get("domain_types", {}), dict),
    "xids": lambda v: all(isinstance(x.get("xid"), int) and isinstance(x.get("text", ""), str) for x in v),
}  # type: Dict[str, Any]


def _check_type(name, value, annotation):
    # type: (str, Any, Any) -> None
    if not _matches(value, annotation):
        raise ValueError("field %r does not have the type %s (got %r)"
                         % (name, str(annotation).replace("typing.", ""), value))


def _matches(value, annotation):
    # type: (Any, Any) -> bool
    # Runs only where ddpdoctor itself runs (Python 3.9+), never on a remote node.
    from typing import Union, get_args, get_origin
    if annotation is Any:
        return True
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
