"""The one JSON-lines codec: a record (a JSON object) to one line and back. Telemetry writes and
reads rank files with it (telemetry.py, inrank/recorder.py), the node link signs its bodies
(launch/node_wire.py: the codec gives the body, the wire adds its MAC and the newline).

Standard library only: code inside the user's ranks imports this (on every record it writes).
"""

import json
from typing import Any, Iterator, Optional, Union

_SEPARATORS = (",", ":")
_DECODER = json.JSONDecoder()  # what json.loads uses, without its per-call set-up


def _no_constant(name: str) -> None:
    raise ValueError(name)


_STRICT_DECODER = json.JSONDecoder(parse_constant=_no_constant)


def body(data: Any, strict: bool = False) -> bytes:
    """One record as compact JSON, without its newline. strict (what crosses the network): NaN
    and Infinity are refused, and so is any value JSON has no word for; else such a value is
    written as its str() (a rank must never lose a record to an odd value)."""
    if strict:
        return json.dumps(data, separators=_SEPARATORS, allow_nan=False).encode()
    return json.dumps(data, separators=_SEPARATORS, default=str).encode()


def encode(data: Any, strict: bool = False) -> bytes:
    """One record as one line, newline included: what a single os.write appends."""
    return body(data, strict) + b"\n"


def loads(line: Union[bytes, str], strict: bool = False) -> Any:
    """The JSON value on one line; ValueError when it is none. strict: NaN, Infinity and nesting
    too deep to parse are refused too (what crosses the network). One decoder made once for
    each mode (json.loads with an option builds a new one per call: node 0 decodes every line
    of every node)."""
    if isinstance(line, (bytes, bytearray)):
        line = line.decode("utf-8")  # what json.loads does with UTF-8 (every line here is)
    try:
        return (_STRICT_DECODER if strict else _DECODER).decode(line)
    except RecursionError:
        raise ValueError("nested too deeply") from None


def decode(line: Union[bytes, str], strict: bool = False) -> Optional[dict]:
    """The object on one line (its newline optional); None for a torn, malformed or non-object
    line."""
    try:
        data = loads(line, strict)
    except (ValueError, TypeError):
        return None
    return data if isinstance(data, dict) else None


def objects(text: str) -> Iterator[dict]:
    """The object on every line of a text (a whole rank file), in order: exactly what decode()
    gives line by line (torn, malformed and non-object lines skipped), in one pass over the
    text. Each line is parsed where it starts in the text, with no copy of it, unless it needs
    decode()'s full rule (spaces around the value, or not one value)."""
    raw_decode = _DECODER.raw_decode
    pos, size = 0, len(text)
    while pos < size:
        cut = text.find("\n", pos)
        if cut < 0:
            cut = size
        if cut > pos:
            try:
                data, end = raw_decode(text, pos)
            except (ValueError, RecursionError):
                data, end = None, -1
            if end != cut:
                data = decode(text[pos:cut])
            if isinstance(data, dict):
                yield data
        pos = cut + 1
