"""DDP107: the cross-node collective smoke test failed, timed out, or found a slow node."""

from __future__ import annotations

import statistics

from ddpdoctor.preflight.cluster import ClusterFacts, is_loopback, name_list
from ddpdoctor.core.findings import Problem, Severity
from ddpdoctor.core.registry import Skipped, check

# A node whose best pair reaches less than this share of the median pair without it is "slow": a
# tenth, because pair timings on a busy machine easily vary 3-5x, and real bad links (1 vs 100 Gbit/s,
# a shaped or flapping NIC) are ten times slower and more.
SLOW_RATIO = 0.1


def mbps(bytes_per_s: float | None) -> str:
    return "?" if bytes_per_s is None else f"{bytes_per_s / 1e6:,.1f} MB/s"


@check("DDP107", "Cross-node collective fails or is slow", Severity.ERROR)
def collective_smoke(cluster: ClusterFacts) -> list[Problem] | Skipped:
    """
    What it detects:
        With `preflight --collective`, once the facts say a job could form, ddpdoctor runs a real
        all-reduce across every node and every process (gloo; NCCL where every node has GPUs),
        with the job's own environment and rendezvous port. First the first process of each node
        meets the others' in pairs, each pair its own 2-process group, so a node that cannot
        talk to the others - or talks slowly - is named: it fails (or crawls) in every pair it
        is in, and the other pairs are fine. Then the whole world: a correctness check and bus
        bandwidth at a few sizes. Reported: nodes whose processes could not start, broken
        pairs and the node behind them, a slow node (a warning), a world all-reduce that failed,
        timed out or returned a wrong sum. Without --collective the check is skipped; on machines
        without GPUs the NCCL path is not checked here, and the report says so.

    Why it hurts:
        Facts can all look right while the data path is broken: a firewall that lets the
        rendezvous port through but not the ports NCCL and Gloo open between every pair of
        nodes, a hostname that makes Gloo advertise 127.0.1.1, a NIC negotiated down to 1 Gbit/s.
        A real job then hangs in its first all-reduce, or runs at the pace of its slowest link,
        after the scheduler has handed out every node.

    How to fix:
        Follow the finding: open the ports between the nodes (not just MASTER_PORT), fix the
        node's name or interface (DDP102, DDP106), or drain the slow node and check its link:

            sudo ufw allow from 10.0.0.0/24 proto tcp   # all TCP between the job's nodes
            ethtool ens5 | grep Speed                   # on the slow node
            ddpdoctor preflight --nodes hosts.txt --collective
    """
    c = cluster.collective
    if c is None:
        return Skipped("run with --collective to run a real all-reduce across the nodes")
    if c.status == "skipped":
        return Skipped(c.reason)
    problems: list[Problem] = []
    if c.node_failures:
        hosts = list(c.node_failures)
        first = c.node_failures[hosts[0]]
        problems.append(Problem(
            message=f"the smoke test could not run on {name_list(hosts)}: {first}",
            hint=("make sure the job's Python and torch are on every node (--remote-python), and that "
                  "nothing kills processes started over ssh"),
            hosts=hosts,
            evidence={"node_failures": c.node_failures},
        ))
    problems += _pairs(cluster)
    problems += _world(cluster)
    return problems


def _pairs(cluster: ClusterFacts) -> list[Problem]:
    c = cluster.collective
    if not c.pairs:
        return []
    hosts = [h for h in c.hosts if h not in c.node_failures]
    failed = [p for p in c.pairs if not p.ok]
    by_host = {h: [p for p in c.pairs if h in p.hosts] for h in hosts}
    problems = []
    evidence = {"pairs": [{"hosts": p.hosts, "round": p.round, "busbw": p.busbw, "seconds": p.seconds,
                           "error": p.error} for p in c.pairs]}
    if failed:
        broken = [h for h, mine in by_host.items()
                  if mine and all(not p.ok for p in mine)
                  and any(p.ok for p in c.pairs if h not in p.hosts)]
        explained = [p for p in failed if set(p.hosts) & set(broken)]
        for host in broken:
            mine = by_host[host]
            problems.append(Problem(
                message=(f"{host} cannot exchange data with the other nodes: every pair test with it failed "
                         f"({'; '.join(f'with {_other(p, host)}: {p.error}' for p in mine[:3])}), "
                         "while the other pairs worked"),
                hint=_broken_hint(cluster, host),
                hosts=[host],
                evidence=evidence,
            ))
        rest = [p for p in failed if p not in explained]
        if rest:
            everyone = len(rest) == len(c.pairs)
            problems.append(Problem(
                message=(("every pair of nodes failed its test" if everyone else
                          f"{len(rest)} node pair{'s' if len(rest) != 1 else ''} failed") + ": "
                         + "; ".join(f"{' <-> '.join(p.hosts)}: {p.error}" for p in rest[:4])
                         + (f" (and {len(rest) - 4} more)" if len(rest) > 4 else "")),
                hint=("the rendezvous port works (the store answered), so a firewall or route blocks the other "
                      "ports Gloo/NCCL open between nodes: allow all TCP between the job's nodes, and check "
                      "NCCL_SOCKET_IFNAME / GLOO_SOCKET_IFNAME (DDP106)"),
                hosts=sorted({h for p in rest for h in p.hosts}, key=c.hosts.index),
                evidence=evidence,
            ))
    ok = [p for p in c.pairs if p.ok and p.busbw]
    if len(hosts) >= 3 and ok:
        for host in hosts:
            mine = [p.busbw for p in ok if host in p.hosts]
            others = [p.busbw for p in ok if host not in p.hosts]
            if not mine or not others or len(mine) < len(by_host[host]):
                continue
            reference = statistics.median(others)
            if max(mine) < SLOW_RATIO * reference:
                problems.append(Problem(
                    message=(f"{host} is slow: at best {mbps(max(mine))} in its pair tests, against "
                             f"{mbps(reference)} (median) between the other nodes"),
                    hint=(f"check {host}'s link (`ethtool` on its NIC for its speed, `ip -s link` for errors, "
                          "traffic shaping with `tc qdisc show`), or leave it out of the job: every all-reduce "
                          "runs at the pace of the slowest link"),
                    hosts=[host],
                    evidence={**evidence, "median_without_s": reference},
                    severity=Severity.WARNING,
                ))
    return problems


def _other(pair, host: str) -> str:
    return next((h for h in pair.hosts if h != host), host)


def _broken_hint(cluster: ClusterFacts, host: str) -> str:
    node = cluster.node_named(host)
    facts = node.facts if node else None
    if facts and any(is_loopback(a) for a in facts.hostname_addresses):
        return (f"{host}'s hostname {facts.hostname} resolves to {facts.hostname_addresses[0]} on it, so Gloo "
                f"advertises a loopback address to its peers (DDP102): map the hostname to its cluster address "
                f"in /etc/hosts there, or set GLOO_SOCKET_IFNAME / NCCL_SOCKET_IFNAME to its cluster NIC")
    return (f"let {host} accept TCP from the other nodes on all ports, not only MASTER_PORT (Gloo and NCCL "
            "connect every pair of processes on ports of their own), and check its NCCL_SOCKET_IFNAME / "
            "GLOO_SOCKET_IFNAME (DDP106)")


def _world(cluster: ClusterFacts) -> list[Problem]:
    c = cluster.collective
    where = f"{len(c.hosts)} node{'s' if len(c.hosts) != 1 else ''}, {c.world_size} processes"
    if c.world == "ok" or (c.world == "skipped" and c.world_detail == "pair tests failed"):
        return []
    if c.world == "skipped":
        return [Problem(
            message=f"the all-reduce across {where} did not run: {c.world_detail}",
            hint="see the pair tests above; rerun with a larger --timeout if the nodes are only slow",
            hosts=c.hosts,
            evidence={"world": c.world, "detail": c.world_detail},
        )]
    failed = c.failed_ranks
    if not failed:
        if c.node_failures:
            return []  # said above
        return [Problem(message=f"the all-reduce across {where} failed: {c.world_detail}",
                        hint="rerun with --verbose and --json to see every rank's events",
                        hosts=c.hosts, evidence={"world": c.world, "detail": c.world_detail})]
    groups: dict[str, list] = {}
    for rank in failed:
        groups.setdefault(rank.error, []).append(rank)
    parts = [f"rank{'s' if len(ranks) > 1 else ''} {', '.join(str(r.rank) for r in ranks[:8])} "
             f"on {name_list(list(dict.fromkeys(r.host for r in ranks)))}: {error}"
             for error, ranks in groups.items()]
    wrong = any("all-reduce returned" in (r.error or "") for r in failed)
    timed_out = all("killed at the deadline" in (r.error or "") for r in failed)
    detail = "\n".join(f"rank {r.rank} ({r.host}) stderr: {line}" for r in failed for line in r.stderr[-2:])
    return [Problem(
        message=(f"the all-reduce across {where} "
                 f"{'returned a wrong result' if wrong else 'timed out' if timed_out else 'failed'}: "
                 + "; ".join(parts[:4])),
        hint=("a wrong sum means a broken device or library on those ranks: compare torch/NCCL versions (DDP204) "
              "and run the node alone" if wrong else
              "the pairs worked, so look at what differs with the whole world: more processes per node "
              "(GPUs, shared memory /dev/shm), versions (DDP204), NCCL settings (DDP206); rerun with "
              "--verbose for each rank's last stderr lines"),
        ranks=[r.rank for r in failed],
        hosts=list(dict.fromkeys(r.host for r in failed)),
        evidence={"world": c.world, "ranks": {str(r.rank): {"host": r.host, "error": r.error,
                                                           "phase": r.last_phase} for r in failed},
                  "detail": detail},
    )]
