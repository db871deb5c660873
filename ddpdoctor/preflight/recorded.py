"""Recorded fact files (`ddpdoctor facts --json > node.json`) standing in for nodes of the list.

A file stands in for the host entry whose name equals the file's hostname, its FQDN or its short
hostname (case-insensitive). That node is then not contacted at all: no resolution from here, no
ssh, no connect test; its facts, including any connect result it recorded, are taken as written.
"""

from __future__ import annotations

import json
from pathlib import Path

from ddpdoctor.core.errors import UsageError
from ddpdoctor.preflight.node.facts import NodeFacts
from ddpdoctor.preflight.hosts import HostEntry


def load_facts_file(path: str) -> NodeFacts:
    """Load one fact file; missing, unreadable or malformed is bad input."""
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise UsageError(f"facts file not found: {path}") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise UsageError(f"cannot read facts file {path}: {getattr(exc, 'strerror', None) or exc}") from None
    except ValueError as exc:
        raise UsageError(f"facts file {path} is not JSON: {exc}") from None
    try:
        facts = NodeFacts.from_dict(data)
    except ValueError as exc:
        raise UsageError(f"facts file {path}: {exc}") from None
    facts.collected_by = "file"
    return facts


def _names(facts: NodeFacts) -> set[str]:
    names = {facts.hostname, facts.fqdn, facts.hostname.split(".")[0]}
    return {n.lower().rstrip(".") for n in names if n}


def match_facts_files(paths: list[str], entries: list[HostEntry]) -> dict[str, tuple[str, NodeFacts]]:
    """{host entry name: (path, facts)}; a file that matches no entry, or an entry matched twice,
    is bad input."""
    matched: dict[str, tuple[str, NodeFacts]] = {}
    hosts = list(dict.fromkeys(e.name for e in entries))
    for path in paths:
        facts = load_facts_file(path)
        names = _names(facts)
        host = next((h for h in hosts if h.lower().rstrip(".") in names), None)
        if host is None:
            raise UsageError(f"facts file {path} is for host {facts.hostname!r}, which the host list "
                             f"does not name (hosts: {', '.join(hosts[:8])}{' ...' if len(hosts) > 8 else ''})")
        if host in matched:
            raise UsageError(f"facts files {matched[host][0]} and {path} both stand in for {host}")
        matched[host] = (path, facts)
    return matched
