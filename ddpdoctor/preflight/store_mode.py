"""`ddpdoctor preflight --via store`: for clusters without ssh between nodes.

The same command runs on every node (`srun --ntasks-per-node=1 ddpdoctor preflight --nodes
hosts.txt --via store`). Each node finds its own entry in the host list (its hostname, FQDN or
an address of its own; `--node-rank N` says it outright). The master - the node MASTER_ADDR
names - serves a torch TCPStore on MASTER_ADDR:MASTER_PORT; every node connects to it (that
connect is the node's DDP103 test), publishes its facts, and waits. The master waits `--timeout`
seconds for every node, names the ones that never arrived (DDP105), runs the checks and, with
--collective, the smoke test (each node starts its own ranks), then prints the report and
publishes it to the store. The other nodes print one line saying where the report is, and exit
with the master's exit code. A node that cannot reach the store prints its own report (DDP103,
refused or timed out, from where it stands) and exits 1; so does one that reached the store but
lost it before the master's report came (DDP105, kind "late": it published after the master's
window closed, or the master stopped) - its situation is a fact about the launch, not ddpdoctor's
own failure.

Under srun with several tasks per node, only local task 0 ($SLURM_LOCALID) takes part.
"""

from __future__ import annotations

import dataclasses
import os
import threading
import time
from typing import Any, Optional

from ddpdoctor.preflight import collective_smoke as collective

from ddpdoctor.preflight import collective_result
from ddpdoctor.preflight.cluster import ClusterFacts, PortBind
from ddpdoctor.preflight.cluster_builder import build_cluster, connect_timeout, resolve_timeout
from ddpdoctor.preflight.collective_result import CollectiveOutcome
from ddpdoctor.core.errors import ToolFailure, UsageError
from ddpdoctor.preflight.node.facts import NodeFacts, endpoint, probe_connect
from ddpdoctor.preflight.hosts import HostEntry
from ddpdoctor.preflight.report import build_report
from ddpdoctor.core.registry import run_checks
from ddpdoctor.report.model import Report
from ddpdoctor.preflight.resolve import Resolution, resolve_all
from ddpdoctor.preflight.transport import FactsRequest, TransportFailure, child
from ddpdoctor.preflight.transport.local import facts_here
from ddpdoctor.preflight.transport.route import OwnIdentity
from ddpdoctor.preflight.transport.store import Store, StoreError

ACK_WAIT_S = 5.0  # how long the master keeps the store up for the nodes to read the report


def run_store(opts, entries: list[HostEntry], recorded: dict, master: str, began: float) -> Report:
    """One node's part in a store-mode preflight; the master's full report, or (on the other
    nodes) the master's report relayed, with metrics["store_role"] == "node"."""
    local_task = os.environ.get("SLURM_LOCALID", "0")
    if local_task != "0":
        report = Report(command="preflight", results=[], fail_on=opts.fail_on,
                        header=f"local task {local_task}: only local task 0 of each node takes part")
        report.metrics["store_role"] = "idle"
        return report
    here = facts_here(FactsRequest(timeout=opts.timeout, import_torch=opts.import_torch))
    if not isinstance(here, NodeFacts):
        raise ToolFailure(here.message)
    here.collected_by = "store"
    own = OwnIdentity.of(here)
    names = list(dict.fromkeys([e.name for e in entries if e.name not in recorded] + [master]))
    resolved = resolve_all(names, resolve_timeout(opts.timeout))
    mine = _my_entries(opts, entries, here, own, resolved)
    master_is_me = own.owns(master, resolved.get(master, Resolution([])).addresses) or master in mine
    stages: dict[str, float] = {"local_facts_s": round(time.monotonic() - began, 3)}
    try:
        if master_is_me:
            return _as_master(opts, entries, recorded, master, here, mine, resolved, began, stages)
        return _as_node(opts, master, here, mine, began)
    finally:
        child.kill_all()


def _my_entries(opts, entries: list[HostEntry], here: NodeFacts, own: OwnIdentity,
                resolved: dict[str, Resolution]) -> list[str]:
    if opts.node_rank is not None:
        if opts.node_rank >= len(entries):
            raise UsageError(f"--node-rank {opts.node_rank} is past the end of the host list "
                             f"({len(entries)} hosts)")
        return [entries[opts.node_rank].name]
    mine = list(dict.fromkeys(e.name for e in entries
                              if own.owns(e.name, resolved.get(e.name, Resolution([])).addresses)))
    if not mine:
        addresses = [a for addrs in here.interfaces.values() for a in addrs if not a.startswith(("127.", "::1", "fe80"))]
        raise UsageError(f"this machine ({here.hostname}; {', '.join(addresses[:4]) or 'no address'}) is none of "
                         f"the hosts of the list: run the same command on every node of it, or pass --node-rank")
    return mine


# ------------------------------------------------------------------ the master


def _as_master(opts, entries, recorded, master, here, mine, resolved, began, stages) -> Report:
    port = opts.master_port
    mark = time.monotonic()
    # The store must outlive the nodes' wait for the report: facts, checks, smoke test, slack.
    store, bind = Store.host(master, port, timeout=opts.timeout * 4 + 120)
    port_bind = PortBind.from_info(master, bind, "local")
    connect = probe_connect(master, port, connect_timeout(opts.timeout)) if store else None
    me = dataclasses.replace(here, connect=connect)
    stages["port_hold_s"], mark = round(time.monotonic() - mark, 3), time.monotonic()
    others = [e.name for e in entries if e.name not in mine and e.name not in recorded]
    arrived: dict[str, Any] = {}
    if store is not None:
        # --timeout counts from the moment the store serves: nodes load Python and torch as slowly
        # as this one did, and none of them can publish before this point.
        arrived = store.wait_any([f"facts/{h}" for h in dict.fromkeys(others)], time.monotonic() + opts.timeout)
    stages["store_wait_s"] = round(time.monotonic() - mark, 3)
    ep = endpoint(master, port)
    routes, outcomes = {}, {}
    for entry in entries:
        if entry.name in recorded:
            continue
        routes[entry.name] = "local" if entry.name in mine else "store"
        if entry.name in mine:
            outcomes[entry.name] = me
        elif f"facts/{entry.name}" in arrived:
            loaded = _loaded(arrived[f"facts/{entry.name}"], entry.name)
            outcomes[entry.name] = loaded if loaded is not None else TransportFailure(
                "other", f"{entry.name} published facts that cannot be read")
        else:
            outcomes[entry.name] = _absent(entry.name, ep, opts.timeout, store is not None, port_bind)
    cluster = build_cluster(opts, entries, recorded, master, resolved, routes, outcomes, port_bind, here)
    try:
        if store is not None:
            mark = time.monotonic()
            cluster.collective = _master_smoke_test(opts, cluster, store, mine)
            if opts.collective:
                stages["collective_s"] = round(time.monotonic() - mark, 3)
        elif opts.collective:
            cluster.collective = collective_result.skipped("not run: the master could not serve the store")
        results = run_checks("preflight", cluster, opts.ignore)
        report = build_report(cluster, results, opts.fail_on, opts.fanout, round(time.monotonic() - began, 3),
                              recorded, stages)
        report.metrics["store_role"] = "master"
        if store is not None:
            _publish_report(store, report, master, opts, len(set(others)))
    finally:
        if store is not None:
            store.close()
    return report


def _loaded(data: Any, host: str) -> Optional[NodeFacts]:
    try:
        facts = NodeFacts.from_dict(data)
    except ValueError:
        return None
    facts.collected_by = "store"
    return facts


def _absent(host: str, ep: str, timeout: float, served: bool, bind: PortBind) -> TransportFailure:
    if not served:
        return TransportFailure("absent", f"{host} could not publish its facts: the master could not serve the "
                                          f"store on {ep} ({bind.status}{': ' + bind.detail if bind.detail else ''})")
    return TransportFailure("absent", f"{host} never published its facts to the store at {ep} within {timeout:g} s",
                            "is `ddpdoctor preflight --via store` running there too, and can it reach the port?",
                            None, timeout)


def _master_smoke_test(opts, cluster: ClusterFacts, store: Store, mine: list[str]) -> Optional[CollectiveOutcome]:
    """Decide, tell every node (they wait for the plan either way), run our share, collect."""
    if not opts.collective:
        store.set_json("plan", {"go": False, "reason": "run with --collective"})
        return None
    reason = collective.blocker(cluster)
    plan = None
    if reason is None:
        made = collective.plan(cluster, opts.timeout, host_store=False, prefix="ddpdoctor/collective")
        if isinstance(made, str):
            reason = made
        else:
            plan = made
    if plan is None:
        store.set_json("plan", {"go": False, "reason": reason})
        return collective_result.skipped(reason, cluster.resolved_backend)
    store.set_json("plan", {"go": True, "plan": plan.to_dict()})
    began = time.monotonic()
    answers: dict[str, Any] = {}
    local = [n.host for n in plan.nodes if n.host in mine]
    threads = []
    for host in local:
        thread = threading.Thread(target=lambda h=host: answers.__setitem__(h, collective.run_node_here(plan, h)),
                                  name=f"ddpdoctor-collective-{host}", daemon=True)
        thread.start()
        threads.append(thread)
    remote = [n.host for n in plan.nodes if n.host not in mine]
    found = store.wait_any([f"collective/{h}" for h in remote], began + plan.deadline_s + 15.0)
    for host in remote:
        answers[host] = found.get(f"collective/{host}", f"{host} reported no smoke-test result within "
                                                        f"{plan.deadline_s + 15:.0f} s")
    for thread in threads:
        thread.join(max(0.0, began + plan.deadline_s + 15.0 - time.monotonic()))
    return collective.outcome(plan, answers, time.monotonic() - began)


def _publish_report(store: Store, report: Report, master: str, opts, expected: int) -> None:
    where = f"printed by ddpdoctor on {master}"
    files = [p for p in opts.report_files if p and p != "-"]
    if files:
        where += f" (and written there to {', '.join(files)})"
    store.set_json("report", {"report": report.to_dict(), "exit_code": report.exit_code, "where": where})
    # Keep serving until every node of the list has read it, or a few seconds pass: not only
    # those that arrived in time - one that published just after the window is still loading
    # the plan and the report, and closing under it would leave it without a verdict.
    deadline = time.monotonic() + ACK_WAIT_S
    while time.monotonic() < deadline:
        if store.add("done", 0) >= expected:
            break
        time.sleep(0.05)


# ------------------------------------------------------------------ every other node


def _as_node(opts, master: str, here: NodeFacts, mine: list[str], began: float) -> Report:
    # The master may start later than this node (srun's start is not instant), and loads torch
    # before it serves: keep trying for --timeout, counted from when this node is ready too.
    store, connect = Store.join(master, opts.master_port, opts.timeout)
    me = dataclasses.replace(here, connect=connect)
    if store is None:
        return _unreachable_report(opts, master, me, mine)
    try:
        for host in mine:
            store.set_json(f"facts/{host}", me.to_dict())
        published = _master_verdict(store, opts, mine)
    except StoreError as exc:
        return _lost_report(opts, master, me, mine, "late", str(exc))
    except UNREADABLE as exc:
        return _lost_report(opts, master, me, mine, "unreadable", f"its plan cannot be read: {exc}")
    finally:
        store.close()
    try:
        return _relayed(published, opts, master, mine)
    except UNREADABLE as exc:
        return _lost_report(opts, master, me, mine, "unreadable", f"its report cannot be read: {exc}")


# What reading a plan or a report a peer published raises when it is not one (another version, a
# stray writer on the port): a finding from this node's own evidence, never a verdict taken on trust.
UNREADABLE = (KeyError, TypeError, ValueError, AttributeError)


def _master_verdict(store: Store, opts, mine: list[str]) -> dict:
    """Wait for the master's plan, run this node's share of the smoke test, and return the
    published report; StoreError when the store goes away or a key never comes."""
    # The master waits --timeout for facts, then checks: allow for that, and a late start.
    decision = store.wait_json("plan", time.monotonic() + 2 * opts.timeout + 30.0)
    wait_report = 60.0
    if decision.get("go"):
        plan = collective.Plan.from_dict(decision["plan"])
        wait_report += plan.deadline_s + 15.0
        for host in mine:
            if plan.node(host) is not None:
                store.set_json(f"collective/{host}", collective.run_node_here(plan, host))
    published = store.wait_json("report", time.monotonic() + wait_report)
    store.add("done", 1)
    return published


def _relayed(published: dict, opts, master: str, mine: list[str]) -> Report:
    """The master's report, rebuilt here so this node exits with the same code; ValueError (one
    of UNREADABLE) where what was published is no preflight report - one with no check run is
    none: it could make a PASS of nothing."""
    if not isinstance(published, dict) or not isinstance(published.get("report"), dict):
        raise ValueError("not a report")
    report = Report.from_dict(published["report"], opts.fail_on)
    if report.command != "preflight" or not report.results:
        raise ValueError("it holds no preflight check")
    report.run_dir = None
    report.metrics["store_role"] = "node"
    report.metrics["report_where"] = published.get("where", f"printed by ddpdoctor on {master}")
    report.metrics["this_node"] = ", ".join(mine)
    missed = [h for f in report.findings if f.code == "DDP105" for h in f.hosts if h in mine]
    if missed:
        # Only this node knows it did publish: after the master's window, which counted it absent.
        report.metrics["node_note"] = (f"{', '.join(missed)} published its facts after the master's --timeout "
                                       f"window had closed: start every node in one step, or raise --timeout")
    return report


def _lost_report(opts, master: str, me: NodeFacts, mine: list[str], kind: str, why: str) -> Report:
    """This node reached the store, but got no verdict it can use: the master stopped serving
    before its report came ("late"), or what it published is no plan or report ("unreadable")."""
    host = mine[0]
    ep = endpoint(master, opts.master_port)
    if kind == "late":
        failure = TransportFailure("late", f"{host} reached the master's store on {ep} but lost it before the "
                                           f"master's report came ({why})",
                                   "most likely this node published after the master's --timeout window "
                                   f"({opts.timeout:g} s) had closed, or the master stopped", None, opts.timeout)
    else:
        failure = TransportFailure("unreadable", f"{host} reached the master's store on {ep}, but {why}",
                                   "is every node running the same ddpdoctor, and is nothing else writing to that port?")
    report = _own_report(opts, master, me, host, {"DDP105"}, failure=failure)
    report.header = f"store mode: {host} got no verdict from the master {master}"
    report.notes.append(f"the master's own output on {master} has its report" + (
        f", which names {host} absent (DDP105) if it counted it so" if kind == "late" else ""))
    return report


def _unreachable_report(opts, master: str, me: NodeFacts, mine: list[str]) -> Report:
    """This node cannot reach the store: only it can tell refused from timed out, so it reports."""
    host = mine[0]
    # Only the connect test means anything from here: the rest is the master's to judge.
    report = _own_report(opts, master, me, host, {"DDP103"})
    report.header = (f"store mode: {host} could not reach the store on "
                     f"{endpoint(master, opts.master_port)} within {opts.timeout:g} s")
    report.notes.append(f"{host} published nothing; the master's report names it (DDP105)")
    return report


def _own_report(opts, master: str, me: NodeFacts, host: str, only: set[str],
                failure: Optional[TransportFailure] = None) -> Report:
    """A report this node makes from its own evidence alone, running only the checks in `only`."""
    entry = HostEntry(host, None, "this machine")
    bind = PortBind(master, opts.master_port, "listening", "served by the master's ddpdoctor (store mode)")
    cluster = build_cluster(opts, [entry], {}, master, {}, {host: "local"}, {host: failure or me}, bind, me)
    results = run_checks("preflight", cluster, opts.ignore, only=only)
    report = Report(command="preflight", results=results, fail_on=opts.fail_on, header="")
    report.metrics.update({"store_role": "node", "this_node": host, "connect": me.connect.status if me.connect else None})
    return report

