"""The rendezvous connect test a node runs (DDP103): a TCP connect to MASTER_ADDR:MASTER_PORT
that tells refused from timed out from unresolvable.

Shipped to remote nodes with the other modules of node/ (payload.facts_program concatenates
their sources and runs them with the node's `python3`): standard library only, Python 3.7 syntax,
no `from __future__` import, `typing` generics instead of `list[str]`. Where ddpdoctor runs, a
name another node/ module defines is imported from it; on a node it is already defined above.
"""

import socket
import time

if "ConnectResult" not in globals():  # shipped: schema.py's definitions come first
    from ddpdoctor.preflight.node.schema import ConnectResult


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
