"""Host lists: which machines a job will run on, and how many processes each may take.

Formats, one or more hosts per line, `#` starts a comment, blank lines are skipped:

    node01                      plain name (or IPv4, or IPv6 in brackets / bare)
    node01 slots=8              DeepSpeed / OpenMPI hostfile (also max_slots=N, max-slots=N)
    node01:8                    Horovod
    node[01-04,07]              SLURM hostlist, zero padding kept
    rack[1-2]-node[01-02]       several bracket groups: the cross product, in order
    node[01-02],gpu05:4         several hosts on one line, separated by commas outside brackets

Every name is validated before it can reach an ssh command line: a "host" such as
`-oProxyCommand=...` or one with spaces or shell characters is bad input, not a hostname.
"""

from __future__ import annotations

import ipaddress
import os
import re
import socket
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping, Optional

from ddpdoctor.core.errors import UsageError

# RFC 1123 labels, plus "_" which real /etc/hosts files and cluster names do contain.
_LABEL = r"[A-Za-z0-9](?:[A-Za-z0-9_-]{0,61}[A-Za-z0-9])?"
_HOSTNAME = re.compile(rf"^{_LABEL}(?:\.{_LABEL})*\.?$")
_SLOT_KEYS = ("slots", "max_slots", "max-slots")
# A hostlist that expands past this is a typo (node[1-1000000]), not a cluster. It bounds a whole
# list too, and is checked before anything is built: `a[1-99999]b[1-99999]` must not take 10^10
# strings of memory to be refused.
MAX_EXPANSION = 100_000
# A host list file larger than this is not a host list (or is /dev/zero).
MAX_FILE_BYTES = 16 * 1024 * 1024


def _shown(text: str, limit: int = 60) -> str:
    """`text` quoted for an error message, cut short: one line on stderr, never megabytes."""
    return repr(text) if len(text) <= limit else repr(text[:limit]) + f"... ({len(text)} characters)"


@dataclass(frozen=True)
class HostEntry:
    """One host of the list: its name, the process slots it declares (None: not said), and where
    it was written (`hosts.txt:3`, `$SLURM_JOB_NODELIST`, `this machine`)."""

    name: str
    slots: Optional[int]
    source_line: str


def validate_hostname(name: str) -> str:
    """Return `name` normalised (IPv6 brackets removed) or raise ValueError saying why it is not
    a hostname, an IPv4 or an IPv6 address."""
    text = name.strip()
    if text.startswith("[") and text.endswith("]"):
        return _ipv6(text[1:-1], name)
    if ":" in text:
        return _ipv6(text, name)
    if not text:
        raise ValueError("empty host name")
    if len(text) > 253 or not _HOSTNAME.match(text):
        raise ValueError(f"{_shown(name)} is not a valid host name")
    return text


def _ipv6(text: str, original: str) -> str:
    try:
        ipaddress.IPv6Address(text)
    except ValueError:
        raise ValueError(f"{_shown(original)} is not a valid host name or IPv6 address") from None
    return text


def split_outside_brackets(text: str, sep: str = ",") -> list[str]:
    """Split on `sep` except inside [...] (`a[1,3],b` -> ["a[1,3]", "b"]); raises ValueError on
    unbalanced or nested brackets."""
    parts, depth, current = [], 0, []
    for ch in text:
        if ch == "[":
            depth += 1
            if depth > 1:
                raise ValueError("nested '[' in host list")
        elif ch == "]":
            depth -= 1
            if depth < 0:
                raise ValueError("']' without '['")
        if ch == sep and depth == 0:
            parts.append("".join(current))
            current = []
        else:
            current.append(ch)
    if depth:
        raise ValueError("'[' without ']'")
    parts.append("".join(current))
    return parts


def _bracket_values(body: str) -> list[str]:
    """`01-03,07` -> ["01", "02", "03", "07"]: the width of each range's first number is kept."""
    values: list[str] = []
    for item in body.split(","):
        item = item.strip()
        if re.fullmatch(r"\d+", item):
            values.append(item)
            continue
        match = re.fullmatch(r"(\d+)-(\d+)", item)
        if not match:
            raise ValueError(f"bad range {_shown(item)} in [{_shown(body)}]")
        lo_text, hi_text = match.groups()
        if max(len(lo_text), len(hi_text)) > 18:  # int() of 5000 digits is refused, or slow
            raise ValueError(f"range {_shown(item)} is too large")
        lo, hi = int(lo_text), int(hi_text)
        if hi < lo:
            raise ValueError(f"range {_shown(item)} runs backwards")
        if hi - lo >= MAX_EXPANSION:
            raise ValueError(f"range {_shown(item)} is too large")
        if len(values) + hi - lo >= MAX_EXPANSION:
            raise ValueError(f"[{_shown(body)}] gives more than {MAX_EXPANSION} numbers")
        width = len(lo_text)
        values.extend(str(n).zfill(width) for n in range(lo, hi + 1))
    return values


def expand_hostlist(expr: str) -> list[str]:
    """Expand one SLURM hostlist item without commas at top level: `rack[1-2]-n[01-02]` ->
    rack1-n01, rack1-n02, rack2-n01, rack2-n02 (SLURM's order: the first group varies slowest)."""
    pieces = re.split(r"(\[[^\[\]]*\])", expr)
    names = [""]
    for piece in pieces:
        if piece.startswith("[") and piece.endswith("]"):
            values = _bracket_values(piece[1:-1])
            if len(names) * len(values) > MAX_EXPANSION:
                raise ValueError(f"{_shown(expr)} expands to more than {MAX_EXPANSION} hosts")
            names = [n + v for n in names for v in values]
        elif "[" in piece or "]" in piece:
            raise ValueError(f"unbalanced brackets in {_shown(expr)}")
        else:
            names = [n + piece for n in names]
        if len(names) > MAX_EXPANSION:
            raise ValueError(f"{_shown(expr)} expands to more than {MAX_EXPANSION} hosts")
    return names


def _split_horovod_slots(item: str) -> tuple[str, Optional[int]]:
    """`node:4` -> ("node", 4); `[fe80::1]:4` -> ("[fe80::1]", 4); bare IPv6 has no slots."""
    if item.startswith("["):
        close = item.find("]")
        rest = item[close + 1:]
        if close > 0 and item.count("[") == 1 and rest.startswith(":") and rest[1:].isdigit():
            return item[:close + 1], _slots_value(rest[1:], "slots")
        return item, None
    if item.count(":") == 1:
        host, _, count = item.partition(":")
        return host, _slots_value(count, "slots")
    return item, None


def _slots_value(text: str, key: str) -> int:
    if not (text.isascii() and text.isdigit()) or len(text) > 6 or int(text) < 1:
        raise ValueError(f"{key} must be a whole number of at least 1, at most 999999 (got {_shown(text)})")
    return int(text)


def parse_line(text: str) -> list[tuple[str, Optional[int]]]:
    """Parse one line (comment already removed) into (name, slots) pairs; raises ValueError."""
    tokens = text.split()
    if not tokens:
        return []
    hosts_expr, fields = tokens[0], tokens[1:]
    field_slots: Optional[int] = None
    for token in fields:
        key, eq, value = token.partition("=")
        if not eq:
            raise ValueError(f"unexpected {_shown(token)} after the host (one host expression per line; "
                             "use commas or slots=N)")
        if key not in _SLOT_KEYS:
            raise ValueError(f"unknown field {_shown(key)} (known: slots=N, max_slots=N)")
        # OpenMPI: slots is what a job gets by default; max_slots only caps it.
        if key == "slots" or field_slots is None:
            field_slots = _slots_value(value, key)
    pairs: list[tuple[str, Optional[int]]] = []
    for item in split_outside_brackets(hosts_expr):
        if not item:
            raise ValueError(f"empty host in {_shown(hosts_expr)}")
        expr, item_slots = _split_horovod_slots(item)
        if item_slots is not None and field_slots is not None:
            raise ValueError(f"{_shown(item)} gives slots twice (host:N and slots=N)")
        slots = item_slots if item_slots is not None else field_slots
        names = [expr] if expr.startswith("[") else expand_hostlist(expr)
        pairs.extend((validate_hostname(name), slots) for name in names)
        if len(pairs) > MAX_EXPANSION:
            raise ValueError(f"the line names more than {MAX_EXPANSION} hosts")
    return pairs


def parse_host_text(text: str, source: str) -> list[HostEntry]:
    """Parse a whole host list; `source` names it in errors (`hosts.txt` -> `hosts.txt:3: ...`)."""
    entries: list[HostEntry] = []
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        where = f"{source}:{number}"
        try:
            pairs = parse_line(line)
        except ValueError as exc:
            raise UsageError(f"{where}: {exc}: {_shown(raw.strip())}") from None
        entries.extend(HostEntry(name, slots, where) for name, slots in pairs)
        if len(entries) > MAX_EXPANSION:
            raise UsageError(f"{where}: the list names more than {MAX_EXPANSION} hosts")
    return entries


def parse_host_file(path: str | os.PathLike) -> list[HostEntry]:
    """Read and parse a host list file; a missing, unreadable or empty file is bad input."""
    file = Path(path)
    try:
        # Opened without blocking: a FIFO nobody writes to reads as empty instead of waiting
        # for ever (a pipe with a writer, `--nodes /dev/stdin`, still reads to its end).
        fd = os.open(file, os.O_RDONLY | os.O_NONBLOCK)
        os.set_blocking(fd, True)
        with os.fdopen(fd, "rb") as handle:
            data = handle.read(MAX_FILE_BYTES + 1)
        if len(data) > MAX_FILE_BYTES:
            raise UsageError(f"nodes file {file} is larger than {MAX_FILE_BYTES >> 20} MiB: not a host list")
        text = data.decode("utf-8")
    except FileNotFoundError:
        raise UsageError(f"nodes file not found: {file}") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise UsageError(f"cannot read nodes file {file}: {getattr(exc, 'strerror', None) or exc}") from None
    entries = parse_host_text(text, str(path))
    if not entries:
        raise UsageError(f"{file}: no hosts in the file")
    return entries


def default_hosts(env: Mapping[str, str] = os.environ) -> list[HostEntry]:
    """Without --nodes: the SLURM allocation when inside one, else this machine alone."""
    nodelist = env.get("SLURM_JOB_NODELIST", "").strip()
    if nodelist:
        try:
            pairs = parse_line(nodelist.replace(" ", ""))
        except ValueError as exc:
            raise UsageError(f"$SLURM_JOB_NODELIST: {exc}: {_shown(nodelist)}") from None
        return [HostEntry(name, slots, "$SLURM_JOB_NODELIST") for name, slots in pairs]
    return [HostEntry(socket.gethostname(), None, "this machine")]
