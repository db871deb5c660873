"""The Python programs sent to a node on ssh's stdin: sources of stdlib-only modules plus a call.

The node runs them with its own `python3`; nothing of ddpdoctor needs to be installed there.
Parameters travel inside the program text as a JSON literal, never through the remote shell.
"""

from __future__ import annotations

import functools
import json
from pathlib import Path

from ddpdoctor.preflight.node import (collective_worker, connect, facts, gpuhealth, gpus, interfaces, machine,
                                     ncclib, port_listener, schema)

from ddpdoctor.core import redact

# facts.py's program: each module after those whose names it uses (a node has no ddpdoctor to
# import them from).
FACTS_MODULES = (redact, schema, interfaces, machine, ncclib, gpus, gpuhealth, connect, facts)
# Parts only a GPU node uses travel as text and are compiled where first needed
# (schema.load_lazy): compiling source costs every node CPU (~0.3 ms per KiB), a string literal
# next to nothing.
LAZY_MODULES = (ncclib, gpuhealth)


@functools.lru_cache(maxsize=None)
def _source(module_file: str) -> str:
    return Path(module_file).read_text(encoding="utf-8")


def source_of(module) -> str:
    """A shipped module's source text."""
    return _source(module.__file__)


def _program(modules, call: str, params: dict, lazy=()) -> bytes:
    texts = {m.__name__.rsplit(".", 1)[-1]: _source(m.__file__) for m in modules if m in lazy}
    parts = [f"_LAZY_SOURCES = {texts!r}\n"] if texts else []
    parts += [_source(m.__file__) for m in modules if m not in lazy]
    literal = json.dumps(json.dumps(params))  # a Python string literal holding the JSON
    parts.append(f"\nimport json as _json\n{call}(_json.loads({literal}))\n")
    return "\n".join(parts).encode("utf-8")


def facts_program(params: dict) -> bytes:
    """redact.py, node/schema, interfaces, machine, ncclib, gpus, gpuhealth, connect and facts.py, then `_remote_main(params)`:
    prints one marked JSON line."""
    return _program(FACTS_MODULES, "_remote_main", params, lazy=LAZY_MODULES)


def listener_program(params: dict) -> bytes:
    """port_listener.py then `_remote_main(params)`: holds the rendezvous port until stdin closes."""
    return _program((port_listener,), "_remote_main", params)


def collective_program(params: dict) -> bytes:
    """collective_worker.py then `_node_main(params)`: starts this node's ranks of the smoke test.
    params["source"] carries the module's source again, for the ranks it starts."""
    return _program((collective_worker,), "_node_main", params)
