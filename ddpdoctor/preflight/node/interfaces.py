"""This node's names, addresses and interfaces. Interfaces come from one rtnetlink dump on Linux
(what `ip addr` reads, ~1 ms); psutil (an import of ~10-20 ms), `ip -j addr` (a child process)
and /proc are the fallbacks elsewhere, in that order.

Shipped to remote nodes with the other modules of node/ (payload.facts_program concatenates
their sources and runs them with the node's `python3`): standard library only, Python 3.7 syntax,
no `from __future__` import, `typing` generics instead of `list[str]`. Where ddpdoctor runs, a
name another node/ module defines is imported from it; on a node it is already defined above.
"""

import json
import socket
from typing import Dict, List


def _unique(items):
    # type: (List[str]) -> List[str]
    return list(dict.fromkeys(items))


def resolve(name):
    # type: (str) -> List[str]
    """All addresses `name` resolves to here, in resolver order; raises socket.gaierror."""
    infos = socket.getaddrinfo(name, None, 0, socket.SOCK_STREAM)
    return _unique([info[4][0].split("%", 1)[0] for info in infos])


def names_and_addresses(facts):
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


def read_interfaces(facts):
    # type: (NodeFacts) -> None
    if not _interfaces_from_netlink(facts) and not _interfaces_from_psutil(facts) and not _interfaces_from_ip(facts):
        _interfaces_from_proc(facts)
        facts.notes.append("interfaces read from /proc (no psutil, no `ip`): up/down not known")
