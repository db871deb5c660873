"""Which transport reaches which host under `--via auto`: this machine's own names and addresses
go local, everything else over ssh.

"Own" means exactly: localhost, this machine's hostname or FQDN (or its short form), an address
assigned to one of its interfaces, or a name that resolves to such an address. 127.0.0.2..254
are not own addresses: they are only routed to the loopback device, and the tests use them as
distinct "remote" hosts served by a real sshd.
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass

from ddpdoctor.preflight.node.facts import NodeFacts


@dataclass(frozen=True)
class OwnIdentity:
    names: frozenset[str]  # lower-case
    addresses: frozenset[str]  # canonical text form

    @classmethod
    def of(cls, facts: NodeFacts) -> "OwnIdentity":
        names = {"localhost", facts.hostname, facts.fqdn, facts.hostname.split(".")[0]}
        addresses = {_canonical(a) for addrs in facts.interfaces.values() for a in addrs}
        return cls(frozenset(n.lower() for n in names if n), frozenset(addresses))

    def owns(self, name: str, resolved: list[str] = ()) -> bool:
        """True when `name` (or what it resolved to) is this machine."""
        if name.lower().rstrip(".") in self.names or _canonical(name) in self.addresses:
            return True
        return bool(resolved) and all(_canonical(a) in self.addresses for a in resolved)


def _canonical(address: str) -> str:
    try:
        return str(ipaddress.ip_address(address.split("%", 1)[0]))
    except ValueError:
        return address.lower()
