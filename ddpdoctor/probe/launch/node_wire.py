"""What may cross the gather port, and how: the framing, the job's identity, the MAC, and a schema
for every message and every forwarded record. The one place that decides whether a peer's bytes
are believed; node_link.py, node_gather.py and node_reporter.py only act on what passes here.

One line per message:

    MAC SP BODY LF      MAC: 64 hex digits (HMAC-SHA256 of BODY under the job's token) or "-"
                        (no token); BODY: a JSON object {"t": kind, "job": id, "n": seq, ...}

- `job` names the job (job_identity): two probes on one cluster never take each other's
  messages, even without a token.
- `n` counts each direction's messages from 1; a message out of order is a replay or a forgery.
- Node 0 speaks first: a `challenge` with a fresh nonce, which the node's hello must carry. With
  a token the hello is MAC'd over it, so a hello recorded from one connection (even a valid,
  signed one) cannot take a node's place on another.
- `s` (every message after the hello and welcome) is the session: the direction and both
  nonces, so a line recorded from one connection (or reflected back) is worthless on another.
- With a token, node 0 proves itself too: its welcome is MAC'd over the node's fresh nonce.

Everything a peer says is checked for type and range before it is used, and every string it
sends is cleaned of control characters before it can reach a terminal or a report. A message
that fails is a BadMessage: the link is dropped with one line naming what was wrong.
"""

from __future__ import annotations

import hashlib
import hmac
import os
import re
from dataclasses import fields
from typing import Any, Callable, Mapping, Optional

from ddpdoctor.core import defaults
from ddpdoctor.probe.records import jsonl
from ddpdoctor.probe.records import telemetry as tm

TOKEN_ENV = "DDPDOCTOR_GATHER_TOKEN"
SILENCE_ENV = "DDPDOCTOR_NODE_SILENCE_S"  # how long a silent peer is waited for (default 10 s)
DEFAULT_SILENCE_S = 10.0

MAX_HELLO = 4096  # the first line of a connection: read by the selector, nothing beyond it
MAX_LINE = 8 * 1024 * 1024  # any later line (a verdict carries the whole report)
CHUNK = 256 * 1024  # telemetry is forwarded in pieces no larger than this
MAX_PENDING = 64  # connections that have not said hello yet, at once (plus one per node:
# every node of a large job connects at the same instant; a refused one retries)
MAX_PENDING_CAP = 512  # whatever the node count: each is a file descriptor
RANK_QUOTA = 64 * 1024 * 1024  # forwarded bytes per rank of a node (a 20-step probe writes < 2 MiB)
MAX_NPROC = defaults.MAX_NPROC_PER_NODE  # a hello saying more is a typo or an attack
MAX_TEXT = 64 * 1024

# Control characters (C0 but tab and newline, DEL, C1) and the bidi overrides: a peer's text
# must not move the cursor, recolour or reorder a terminal, or hide what a report says.
_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")
_HEX = re.compile(r"[0-9a-f]{16,128}\Z")


class BadMessage(ValueError):
    """A peer sent something that is not a message of this job: drop the peer, say why."""


def clean(text: Any, limit: int = MAX_TEXT) -> str:
    """A peer's text, safe to print: control characters replaced, length bounded."""
    return _CONTROL.sub("?", str(text))[:limit]


def clean_deep(value: Any, depth: int = 0) -> Any:
    """Every string inside a JSON value cleaned (a relayed report, a forwarded record)."""
    if depth > 32:
        raise BadMessage("nested too deeply")
    if isinstance(value, str):
        return _CONTROL.sub("?", value)
    if isinstance(value, list):
        return [clean_deep(v, depth + 1) for v in value]
    if isinstance(value, dict):
        return {_CONTROL.sub("?", str(k)): clean_deep(v, depth + 1) for k, v in value.items()}
    return value


def silence_s(env: Mapping[str, str] = os.environ) -> float:
    """How long a peer may be silent before it counts as lost (SILENCE_ENV, for tests)."""
    text = env.get(SILENCE_ENV, "")
    try:
        value = float(text) if text else DEFAULT_SILENCE_S
    except ValueError:
        return DEFAULT_SILENCE_S
    return value if 1.0 <= value <= 3600.0 else DEFAULT_SILENCE_S


# ------------------------------------------------------------------ identity and the secret

def job_identity(script: str, nnodes: int, node0: str, env: Mapping[str, str] = os.environ) -> str:
    """What every node of one job agrees on without talking: the script, the node count, node 0's
    endpoint and, under SLURM, the job id. Two probes that differ in any never mix."""
    parts = [os.path.basename(script), str(nnodes), node0, env.get("SLURM_JOB_ID", "")]
    return hashlib.sha256("\0".join(parts).encode()).hexdigest()[:16]


def job_token(flag: Optional[str], env: Mapping[str, str] = os.environ) -> Optional[bytes]:
    """The job's shared secret: --gather-token, else DDPDOCTOR_GATHER_TOKEN; None without one.
    SLURM gives every task of a job the same environment but nothing secret in it (the job id
    and node list are visible to every user of the cluster), so under SLURM the token is one the
    batch script exports before srun, which srun propagates to every node."""
    text = flag if flag else env.get(TOKEN_ENV, "")
    return hashlib.sha256(b"ddpdoctor-gather\0" + text.encode()).digest() if text else None


class Codec:
    """One connection's framing: MAC, job, sequence numbers, session. Not thread-safe for
    encode: the Link serialises sends."""

    def __init__(self, key: Optional[bytes], job: str) -> None:
        self.key = key
        self.job = job
        self.out_session = ""  # "s" of what we send, and of what we accept: set by the handshake
        self.in_session = ""
        self.sent = 0
        self.received = 0

    def encode(self, kind: str, fields_: dict[str, Any]) -> bytes:
        self.sent += 1
        body: dict[str, Any] = {"t": kind, "job": self.job, "n": self.sent}
        if self.out_session:
            body["s"] = self.out_session
        body.update(fields_)
        text = jsonl.body(body, strict=True)
        mac = hmac.new(self.key, text, hashlib.sha256).hexdigest().encode() if self.key else b"-"
        return mac + b" " + text + b"\n"

    def decode(self, line: bytes, allowed: frozenset) -> dict[str, Any]:
        """A checked message from one line (without its newline); BadMessage otherwise."""
        mac, sep, text = line.partition(b" ")
        if not sep:
            raise BadMessage("not a ddpdoctor gather message")
        if self.key is not None:
            want = hmac.new(self.key, text, hashlib.sha256).hexdigest().encode()
            if not hmac.compare_digest(mac, want):
                raise BadMessage("not signed with this job's gather token" if mac != b"-"
                                 else "sent without a gather token, and this job has one")
        try:
            body = jsonl.loads(text, strict=True)
        except ValueError:
            raise BadMessage("not JSON") from None
        if not isinstance(body, dict):
            raise BadMessage("not a JSON object")
        kind = body.get("t")
        if kind not in allowed:
            raise BadMessage(f"unexpected message type {clean(kind, 40)!r}")
        if body.get("job") != self.job:
            raise BadMessage("from another job (its script, node count, node 0 address or SLURM job "
                             "differ from this node's)")
        if body.get("n") != self.received + 1 or type(body.get("n")) is not int:
            raise BadMessage("out of order (a replayed or injected message)")
        if self.in_session and body.get("s") != self.in_session:
            raise BadMessage("from another connection (a replayed message)")
        self.received += 1
        return {"t": kind, **check(kind, body)}

    def start_session(self, node_nonce: str, node0_nonce: str, node_side: bool) -> None:
        """After hello and welcome: both nonces, and the direction, in every later message."""
        up, down = f"u{node_nonce}{node0_nonce}", f"d{node_nonce}{node0_nonce}"
        self.out_session, self.in_session = (up, down) if node_side else (down, up)




# ------------------------------------------------------------------ the schema

Check = Callable[[Any], bool]  # the builders below are attach's node answers' schema too


def int_in(lo: int, hi: int) -> Check:
    return lambda v: type(v) is int and lo <= v <= hi


def float_in(lo: float, hi: float) -> Check:
    # Finite bounds refuse NaN and infinities by themselves; math.isfinite would raise on an int
    # too large for a float (a 400-digit number is valid JSON), out of the gather's poll.
    return lambda v: type(v) in (int, float) and lo <= v <= hi


def text_upto(limit: int) -> Check:
    return lambda v: isinstance(v, str) and len(v) <= limit


def optional(inner: Check) -> Check:
    return lambda v: v is None or inner(v)


def _hex(v: Any) -> bool:
    return isinstance(v, str) and bool(_HEX.match(v))


def instance_of(kind: type) -> Check:
    return lambda v: isinstance(v, kind)


_ANY_INT = int_in(-(2 ** 31), 2 ** 31)
_EXIT = optional(int_in(-255, 255))
_SECONDS = float_in(0.0, 1e12)

# kind -> {field: (check, required)}; fields not listed are dropped, never passed on.
SCHEMA: dict[str, dict[str, tuple[Check, bool]]] = {
    "challenge": {"nonce": (_hex, True)},
    "hello": {"node_rank": (int_in(0, 65535), True), "nproc": (int_in(1, MAX_NPROC), True),
              "host": (text_upto(255), True), "addr": (text_upto(255), True), "nonce": (_hex, True),
              "challenge": (_hex, True),
              "script": (text_upto(255), False), "version": (text_upto(64), False)},
    "welcome": {"run_dir": (text_upto(4096), True), "nonce": (_hex, True), "echo": (_hex, True)},
    "refused": {"reason": (text_upto(1000), True)},
    "file": {"name": (text_upto(32), True), "data": (text_upto(CHUNK * 2), True)},
    "final": {"outcome": (instance_of(dict), True)},
    "stacks": {"id": (int_in(0, 2 ** 31), True)},
    "stacks_reply": {"id": (int_in(0, 2 ** 31), True), "note": (text_upto(4000), False),
                     "stacks": (lambda v: isinstance(v, list) and len(v) <= 4 * MAX_NPROC, True)},
    "end": {"reason": (text_upto(1000), True), "at": (optional(_SECONDS), False)},
    "verdict": {"exit_code": (int_in(0, 255), True), "report": (instance_of(dict), True), "where": (text_upto(4200), True)},
    "beat": {"now": (_SECONDS, True)},
    "bye": {},
}
FROM_NODE = frozenset({"hello", "file", "final", "stacks_reply", "beat", "bye"})
FROM_NODE0 = frozenset({"welcome", "refused", "stacks", "end", "verdict", "beat"})


def check(kind: str, body: dict[str, Any]) -> dict[str, Any]:
    out = {}
    for name, (ok, required) in SCHEMA[kind].items():
        if name not in body:
            if required:
                raise BadMessage(f"{kind}: {name} is missing")
            continue
        if not ok(body[name]):
            raise BadMessage(f"{kind}: {name} is {clean(repr(body[name]), 60)}, not what it must be")
        out[name] = body[name]
    return out


_OUTCOME_STATUS = {"completed", "crashed", "stalled", "timeout", "interrupted", "launch_failed",
                   "run_dir_failed", "node_lost", "ended", "node0_lost"}


def check_outcome(data: dict[str, Any], ranks: set[int]) -> dict[str, Any]:
    """A node's `final`: how its job ended. Exit codes only for ranks it owns."""
    status = data.get("status")
    if status not in _OUTCOME_STATUS:
        raise BadMessage(f"final: status is {clean(repr(status), 40)}")
    codes = data.get("exit_codes") or {}
    if not isinstance(codes, dict) or len(codes) > MAX_NPROC:
        raise BadMessage("final: exit_codes is not a map of ranks to codes")
    exit_codes: dict[int, Optional[int]] = {}
    for key, code in codes.items():
        rank = int(key) if isinstance(key, str) and re.fullmatch(r"0|[1-9][0-9]{0,6}", key) else None
        if rank is None or not _EXIT(code):
            raise BadMessage(f"final: exit code {clean(repr(key), 20)}: {clean(repr(code), 20)}")
        if rank not in ranks:
            raise BadMessage(f"final: an exit code for rank {rank}, not one of this node's")
        exit_codes[rank] = code
    ended_at = data.get("ended_at")
    if not optional(_SECONDS)(ended_at):
        raise BadMessage("final: ended_at is not a time")
    return {"status": status, "exit_codes": exit_codes, "ended_at": ended_at,
            "log_tail": clean(data.get("log_tail") or "", 4000) if isinstance(data.get("log_tail"), (str, type(None))) else "",
            "stack_note": clean(data.get("stack_note") or "", 1000) if isinstance(data.get("stack_note"), (str, type(None))) else ""}


_FRAME = {"func": text_upto(400), "file": text_upto(4096), "line": int_in(0, 10 ** 8)}


def check_stack(data: Any, ranks: set[int]) -> dict[str, Any]:
    """One rank's stack in a stacks_reply: only this node's ranks, bounded frames and text."""
    if not isinstance(data, dict):
        raise BadMessage("stacks_reply: a stack is not an object")
    rank, frames = data.get("rank"), data.get("frames") or []
    if type(rank) is not int or rank not in ranks:
        raise BadMessage(f"stacks_reply: a stack of rank {clean(repr(rank), 20)}, not one of this node's")
    if not isinstance(frames, list) or len(frames) > 512:
        raise BadMessage("stacks_reply: frames is not a list of at most 512")
    out_frames = []
    for frame in frames:
        if not isinstance(frame, dict) or not all(ok(frame.get(k)) for k, ok in _FRAME.items()):
            raise BadMessage("stacks_reply: a frame is not {func, file, line}")
        out_frames.append({k: clean(frame[k], 4096) if isinstance(frame[k], str) else frame[k] for k in _FRAME})
    if not (int_in(0, 2 ** 31)(data.get("pid", 0)) and optional(instance_of(bool))(data.get("idle"))
            and text_upto(MAX_TEXT)(data.get("text", "")) and text_upto(40)(data.get("method", "none"))):
        raise BadMessage("stacks_reply: pid, idle, method or text of a stack is malformed")
    return {"rank": rank, "pid": data.get("pid", 0), "method": clean(data.get("method", "none"), 40),
            "frames": out_frames, "idle": data.get("idle"), "text": clean(data.get("text", ""))}


# ------------------------------------------------------------------ forwarded telemetry

def _annotation_test(annotation: str) -> str:
    """A telemetry field's check as a Python expression on `v` (telemetry.py is the schema)."""
    maybe = annotation.startswith("Optional[")
    inner = annotation[len("Optional["):-1] if maybe else annotation
    # A decoded JSON value is exactly a dict, list, str, int, float, bool or None: `type(v) is`
    # is isinstance here. Finite bounds refuse NaN and infinities (the strict decoder does too).
    base = {"int": f"type(v) is int and {-(2 ** 31)} <= v <= {2 ** 31}",
            "float": "(type(v) is float or type(v) is int) and -1e18 <= v <= 1e18",
            "bool": "type(v) is bool",
            "str": f"type(v) is str and len(v) <= {MAX_TEXT * 4}",
            "Site": "_site(v)"}.get(inner)
    if base is None:
        base = ("type(v) is list" if inner.startswith("list") else "type(v) is dict" if inner.startswith("dict")
                else "True")  # a new annotation: typed when it gets a check
    return f"v is None or ({base})" if maybe else base


def _site(v: Any) -> bool:
    return (isinstance(v, dict) and isinstance(v.get("file"), str) and type(v.get("line")) is int
            and isinstance(v.get("func", ""), str))


def _record_validator(cls: type) -> Callable[[dict], Optional[str]]:
    """One function for a record kind that checks every field it has inline and returns the
    first bad field's name (None: all good). Node 0 checks every record of every node: a call
    per field (a check, inside optional's) cost as much as decoding the line. Written from the
    telemetry dataclasses' own annotations, never from input."""
    body = ["def valid(r, A=_ABSENT):"]
    for f in fields(cls):
        body += [f"    v = r.get({f.name!r}, A)",
                 f"    if v is not A and not ({_annotation_test(str(f.type))}): return {f.name!r}"]
    body.append("    return None")
    scope = {"_ABSENT": _ABSENT, "_site": _site}
    exec("\n".join(body), scope)  # noqa: S102 - our own schema's code, as dataclasses writes its __init__
    return scope["valid"]


_ABSENT = object()
_RECORD_VALIDATORS = {kind: _record_validator(cls) for kind, cls in tm.RECORD_TYPES.items()}
# The records that say which rank wrote them and in what world (the world as the rank found it,
# not as the script passed it): the file's rank and the launched world, or the report sizes
# itself by a peer's number (a forged world_size of 10^7 made an 89 MB report).
_WORLD_FIELDS = {"start": "world_size", "init": "world_size"}


def check_records(data: str, rank: int, world_size: int,
                  decoded: Optional[list] = None) -> tuple[str, int]:
    """Forwarded lines of rank-<R>.jsonl: each a known record of that rank in this world, its
    strings cleaned. Returns the lines to store and the highest step a Step record among them
    reached (0: none); BadMessage for the first line that is not. `decoded`: gets each checked
    record (its strings cleaned, as stored), so the watchdog
    reads node 0's forwarded records without decoding their lines again."""
    lines = data.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    out, last_step = [], 0
    for line in lines:
        try:
            record = jsonl.loads(line, strict=True)
        except ValueError:
            raise BadMessage(f"rank {rank}: a telemetry line is not JSON") from None
        if not isinstance(record, dict):
            raise BadMessage(f"rank {rank}: a telemetry line is not an object")
        kind = record.get("kind")
        valid = _RECORD_VALIDATORS.get(kind) if isinstance(kind, str) else None
        if valid is None:
            raise BadMessage(f"rank {rank}: unknown record kind {clean(repr(record.get('kind')), 40)}")
        bad = valid(record)
        if bad is not None:
            raise BadMessage(f"rank {rank}: {kind}.{bad} is {clean(repr(record[bad]), 40)}")
        if record["kind"] in _WORLD_FIELDS and record.get("rank") != rank:
            raise BadMessage(f"rank {rank}: a record claims rank {clean(repr(record['rank']), 20)}")
        field_name = _WORLD_FIELDS.get(record["kind"])
        if field_name and record.get(field_name) != world_size:
            raise BadMessage(f"rank {rank}: {record['kind']}.{field_name} is "
                             f"{clean(repr(record.get(field_name)), 20)}, the launched world is {world_size}")
        if "\\u" in line or _CONTROL.search(line):
            record = clean_deep(record)
            line = jsonl.body(record).decode()
        if kind == "step" and type(record.get("step")) is int:
            last_step = max(last_step, record["step"])
        out.append(line + "\n")
        if decoded is not None:
            decoded.append(record)
    return "".join(out), last_step
