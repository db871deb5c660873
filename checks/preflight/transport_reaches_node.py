"""DDP105: a node cannot be reached by the transport (ssh refused, auth, timeout, host key)."""

from __future__ import annotations

from ddpdoctor.preflight.cluster import ClusterFacts, name_list
from ddpdoctor.core.findings import Problem, Severity
from ddpdoctor.core.registry import Skipped, check

_FIX = {
    "refused": "start sshd on {host} (`sudo systemctl start ssh`), or pass its port with --ssh-port",
    "auth": ("install your key on {host} (`ssh-copy-id {host}`), or pass it with "
             "--ssh-option IdentityFile=~/.ssh/id_ed25519 / --ssh-user"),
    "timeout": "check that {host} is up and that its ssh port is open to this machine; raise --timeout if it is only slow",
    "host-key": ("verify {host}'s host key, then update known_hosts (`ssh-keygen -R {host}` and ssh once by "
                 "hand), or accept new keys explicitly with --ssh-option StrictHostKeyChecking=accept-new"),
    "unreachable": "check the network route from this machine to {host}",
    "no-python": "install Python 3 on {host}, or point --remote-python at the interpreter your job uses",
    "other": "run `ssh {host} python3 -V` by hand to see what fails",
    "absent": ("run the same `ddpdoctor preflight --via store` on every node of the list (e.g. "
               "`srun --ntasks-per-node=1 ddpdoctor preflight --nodes hosts.txt --via store`); if it ran on "
               "{host}, its own output says why it could not reach the master"),
    # Seen from a store-mode node: it reached the store, but the master stopped serving before its
    # report came - it published after the master's window, or the master failed.
    "late": ("start `ddpdoctor preflight --via store` on every node in one step (one srun), or give the "
             "master a longer --timeout; the master's own output on its node has the report"),
    # ...or got something from the store that is no plan or report (another ddpdoctor version, a
    # stray writer on the port): the node takes no verdict it cannot read
    "unreadable": ("run the same ddpdoctor version on every node, and keep the rendezvous port to this "
                   "preflight; the master's own output on its node has the report"),
}


def _hint(kind: str, hosts: list[str]) -> str:
    """The fix for one host, or for several: spelled out for the first, named for the rest."""
    text = _FIX.get(kind, _FIX["other"]).format(host=hosts[0])
    if len(hosts) == 1:
        return text
    return f"on each of {name_list(hosts)} (shown for {hosts[0]}): {text}"


@check("DDP105", "A node cannot be reached (ssh / store)", Severity.ERROR)
def transport_reaches_node(cluster: ClusterFacts) -> list[Problem] | Skipped:
    """
    What it detects:
        A node ddpdoctor could not ask for its facts: ssh refused, authentication failed, timed
        out, the host key is unknown or changed, no Python on the node, or another ssh failure.
        The evidence is ssh's own line (secrets scrubbed). In store mode (--via store): a node that
        never published its facts to the master's store within --timeout; seen from such a node, a
        store it reached that went away before the master's report came, or published a plan or
        report it cannot read. Names that do not
        resolve at all are reported by DDP101 instead.

    Why it hurts:
        Launchers that start ranks over ssh (pdsh, mpirun, DeepSpeed) fail in the same way, and a
        node that ddpdoctor cannot see is a node none of the other checks could vouch for.

    How to fix:
        Make `ssh -o BatchMode=yes HOST python3 -V` work without a prompt:

            ssh-copy-id gpu02                       # key-based login
            ssh-keyscan gpu02 >> ~/.ssh/known_hosts # after checking the fingerprint
            ddpdoctor preflight --nodes hosts.txt --ssh-user alice --ssh-option IdentityFile=~/.ssh/id_ed25519
    """
    by_kind: dict[str, list] = {}
    for node in cluster.nodes:
        failure = node.failure
        if failure is None or (failure.kind == "unresolvable" and node.resolve_error):
            continue  # DDP101 already names it
        by_kind.setdefault(failure.kind, []).append(node)
    problems = []
    for kind, nodes in by_kind.items():
        first = nodes[0].failure
        hosts = [n.host for n in nodes]
        if len(nodes) == 1:
            message = first.message + (f": {first.evidence}" if first.evidence else "")
        else:
            message = (f"{len(nodes)} nodes could not be reached ({kind}): {name_list(hosts)}; "
                       f"e.g. {first.message}" + (f": {first.evidence}" if first.evidence else ""))
        problems.append(Problem(
            message=message,
            hint=_hint(kind, hosts),
            hosts=hosts,
            evidence={"kind": kind, "per_node": {n.host: {"transport": n.transport, "stderr": n.failure.evidence,
                                                         "exit_code": n.failure.exit_code,
                                                         "seconds": n.failure.seconds} for n in nodes}},
        ))
    return problems
