"""DDP106: NCCL_SOCKET_IFNAME / GLOO_SOCKET_IFNAME names an interface a node lacks, or the
interface a job would use cannot reach the other nodes; suggests a value that works everywhere."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from ddpdoctor.preflight import nic
from ddpdoctor.preflight.cluster import ClusterFacts, describe_groups, name_list
from ddpdoctor.core.findings import Problem, Severity
from ddpdoctor.core.registry import Skipped, check

VARIABLES = (nic.NCCL_VAR, nic.GLOO_VAR)


@dataclass(frozen=True)
class _Issue:
    """One kind of mistake; the nodes making it are grouped under it."""

    variable: str
    kind: str  # missing | set | unset
    value: Optional[str]
    what: str  # the missing names, or the interface that would be used
    mild: bool  # NCCL's variable in a gloo job
    verdict: str = ""  # local | isolated (kinds set / unset)
    why: str = ""  # grouping key for the reason (addresses differ per node, so not the full text)


def _missing(variable: str, value: str, names: list[str]) -> list[str]:
    """The parts of the setting this node cannot satisfy ([] = fine).

    NCCL: comma-separated prefixes, `=` for exact names, `^` to exclude; one match is enough.
    Gloo: comma-separated exact names, every one must exist."""
    if variable == nic.GLOO_VAR:
        return [n for n in (p.strip() for p in value.split(",")) if n and n not in names]
    if nic.nccl_selects(value, names):
        return []
    text = value.strip()
    return [text] if text.startswith("^") else [p.strip() for p in text.lstrip("=").split(",") if p.strip()]


@check("DDP106", "Socket interface missing or not routable between nodes", Severity.ERROR)
def socket_ifname(cluster: ClusterFacts) -> list[Problem] | Skipped:
    """
    What it detects:
        NCCL_SOCKET_IFNAME or GLOO_SOCKET_IFNAME set on a node to an interface that node does not
        have (or has down, or without an address). NCCL's syntax is understood: prefixes
        (`eth` matches eth0), `=eth0` for an exact name, `^docker,lo` to exclude. Gloo's value is
        a list of exact names.
        In a job over several machines, also: the interface a node would use - the one the
        variable selects, or NCCL's own pick when it is unset - cannot carry traffic to the other
        nodes: loopback, a node-local bridge or veth (docker0, virbr0, veth*), or an address that
        every node has (each node's docker0 is 172.17.0.1). Interfaces and subnets are compared
        across nodes, and a value that selects a shared subnet on every node is suggested. A node
        that shares no subnet with any other node is a warning (traffic then depends on routers).

    Why it hurts:
        With no matching interface NCCL stops with "Bootstrap : no socket interface found" and Gloo
        with "no device found". With an interface that exists but leads nowhere, each rank tells
        its peers an address they cannot reach, and the job hangs in init_process_group or the
        first all-reduce until the timeout. Typical causes: one node type names its NIC `ens5`,
        another `eth0`, and the variable was copied from one to the other; or a docker/veth
        interface sorts before the real NIC.

    How to fix:
        Set the variable to a value that picks the cluster network on every node (ddpdoctor
        suggests one), or to a prefix list that matches each node's NIC:

            export NCCL_SOCKET_IFNAME=ens,eth   # prefixes: ens5 on some nodes, eth0 on others
            export GLOO_SOCKET_IFNAME=eth0
    """
    reached = cluster.reached
    nodes = {n.host: n.facts for n in reached}
    multi = cluster.multi_node
    if not multi and not any(v in f.env for f in nodes.values() for v in VARIABLES):
        return Skipped("NCCL_SOCKET_IFNAME and GLOO_SOCKET_IFNAME are not set on any node, "
                       "and all nodes share one machine's network")
    verdicts = nic.reach(nodes) if multi else {}
    advice = nic.advise(nodes, verdicts) if multi else None
    backend = cluster.resolved_backend
    hint = advice.text() if advice else _single_machine_hint(nodes)
    # 64 nodes with one mistake make one finding.
    grouped: dict[_Issue, list[str]] = {}
    details: dict[_Issue, dict] = {}
    for variable in VARIABLES:
        # NCCL's variable does not matter to a gloo job; Gloo's matters to both (CPU groups).
        mild = variable == nic.NCCL_VAR and backend != "nccl"
        for host, facts in nodes.items():
            value = facts.env.get(variable)
            if value == "<redacted>":
                continue
            usable = nic.usable(facts)
            if value is not None:
                missing = _missing(variable, value, usable)
                if missing:
                    key = _Issue(variable, "missing", value, ", ".join(missing), mild)
                    grouped.setdefault(key, []).append(host)
                    details.setdefault(key, {"has": {}})["has"][host] = usable
                    continue
            if not multi:
                continue
            if value is None and variable == nic.NCCL_VAR and backend != "nccl":
                continue  # NCCL's own pick matters only to an NCCL job
            if value is None and variable == nic.GLOO_VAR and backend != "gloo":
                continue
            chosen = (nic.nccl_choice(facts)[:1] if variable == nic.NCCL_VAR else nic.gloo_choice(facts))
            for name in chosen:
                reach = verdicts[host].get(name, nic.Reach("unknown"))
                if reach.verdict == "local" or (reach.verdict == "isolated" and _routable_elsewhere(verdicts[host])):
                    same_address = "same address" in reach.why
                    key = _Issue(variable, "set" if value is not None else "unset", value, name, mild,
                                 reach.verdict,
                                 "same-address" if same_address else reach.why if reach.verdict == "local" else "")
                    grouped.setdefault(key, []).append(host)
                    detail = details.setdefault(key, {"why": reach.why, "addresses": {}})
                    detail["addresses"][host] = nic.address_of(facts, name)
                    break
    problems = [_problem(key, hosts, details[key], hint, advice) for key, hosts in grouped.items()]
    if multi:
        problems += _no_shared_subnet(verdicts, advice)
    return problems


def _routable_elsewhere(per_iface: dict[str, nic.Reach]) -> bool:
    return any(r.verdict == "routable" for r in per_iface.values())


def _problem(key: _Issue, hosts: list[str], detail: dict, hint: str, advice) -> Problem:
    variable, kind, value, what, mild = key.variable, key.kind, key.value, key.what, key.mild
    where = name_list(hosts)
    severity = Severity.WARNING if mild else None
    evidence = {"variable": variable, "value": value, "hosts": hosts, **detail}
    if advice is not None:
        evidence["suggested"] = {nic.NCCL_VAR: advice.nccl, nic.GLOO_VAR: advice.gloo}
        evidence["good_interfaces"] = advice.good
    if kind == "missing":
        has = describe_groups({h: ", ".join(sorted(ifs)) or "none" for h, ifs in detail["has"].items()})
        if len(hosts) == 1:
            has = "it has: " + (", ".join(sorted(detail["has"][hosts[0]])) or "none")
        return Problem(
            message=(f"{variable}={value} on {where}, which {'has' if len(hosts) == 1 else 'have'} no usable "
                     f"interface matching {what} ({has})"),
            hint=hint, hosts=hosts, evidence=evidence, severity=severity)
    if key.verdict == "isolated":
        severity = Severity.WARNING
    why = detail["why"]
    address = ", ".join(dict.fromkeys(detail["addresses"].values()))
    if kind == "set":
        message = (f"{variable}={value} on {where} selects {what} ({address}), which cannot carry "
                   f"traffic to the other nodes: {why}")
    elif variable == nic.NCCL_VAR:
        message = (f"{variable} is not set on {where}: NCCL would bootstrap over {what} ({address}), "
                   f"which cannot carry traffic to the other nodes: {why}")
    else:
        message = (f"{variable} is not set on {where}: Gloo would use {what} ({address}, where the "
                   f"hostname resolves), which cannot carry traffic to the other nodes: {why}")
    return Problem(message=message, hint=hint, hosts=hosts, evidence=evidence, severity=severity)


def _no_shared_subnet(verdicts: dict[str, dict[str, nic.Reach]], advice) -> list[Problem]:
    """Nodes without any interface on a subnet another node is on, while other nodes do share one."""
    judged = {h: per for h, per in verdicts.items() if any(r.verdict != "unknown" for r in per.values())}
    sharing = [h for h, per in judged.items() if _routable_elsewhere(per)]
    alone = [h for h, per in judged.items() if not _routable_elsewhere(per)]
    if not alone or not sharing:
        return []  # everyone routed (e.g. /32 cloud addresses), or nothing known
    return [Problem(
        message=(f"{name_list(alone)} share{'s' if len(alone) == 1 else ''} no subnet with the other nodes: "
                 "traffic to it depends on a router, or it is on the wrong network"),
        hint=("give it an address on the cluster network the other nodes share, or check that the routers "
              "pass the job's traffic (NCCL and Gloo open many ports between every pair of nodes)"),
        hosts=alone,
        evidence={"interfaces": {h: {n: r.verdict for n, r in verdicts[h].items()} for h in alone}},
        severity=Severity.WARNING,
    )]


def _single_machine_hint(nodes: dict) -> str:
    """Without other machines to compare with: interfaces up on every node, by name."""
    common = None
    for facts in nodes.values():
        names = {n for n in nic.usable(facts) if not nic.node_local_name(n)}
        common = names if common is None else common & names
    if not common:
        return "no interface name is up on every node; set the variable per node to an interface it has"
    return f"interfaces up on every node: {', '.join(sorted(common))}; e.g. NCCL_SOCKET_IFNAME={sorted(common)[0]}"
