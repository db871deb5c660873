"""DDP507: a node stopped reporting (its ddpdoctor, its ranks or its network lost)."""

from __future__ import annotations

from ddpdoctor.core.findings import Problem, Severity
from ddpdoctor.core.registry import Incomplete, Skipped, check
from ddpdoctor.probe.run_model.loaded_run import RunModel


@check("DDP507", "A node stopped reporting", Severity.ERROR)
def node_stopped_reporting(run: RunModel) -> list[Problem] | Skipped | Incomplete:
    """
    What it detects:
        On a multi-node probe, a node whose ddpdoctor stopped sending its ranks' telemetry to
        node 0 (killed, its machine down, its network cut: silent for 10 s, or its connection
        closed before its job ended), that sent a message node 0 could not believe (malformed,
        forged, over its bounds: dropped, with what was wrong), that node 0 refused (it runs a
        different --nproc-per-node), or that never connected at all (within the 120 s join
        window). The finding names the node, its host, its ranks and the last optimizer
        step node 0 saw from it. The report is then incomplete: checks across ranks judged
        only what arrived.

    Why it hurts:
        A lost node leaves every other rank waiting in its next collective until the process
        group's timeout (30 min on gloo, 10 on NCCL), with timeout errors on every surviving
        rank that say nothing about the node that went away. In a real job this is a node
        failure, an OOM kill of the node's agent, or a network partition.

    How to fix:
        Look at the named node: its kernel log (`dmesg` for the OOM killer), its link
        (`ip link`, the switch port), and whether the job's nodes can reach each other on the
        rendezvous and gather ports (`ddpdoctor preflight --nodes hosts.txt --collective`).
        For a node that never connected, check that `ddpdoctor probe` was started there with
        the same --master-addr/--rdzv-endpoint and that node 0's gather port (the rendezvous
        port + 1, or --gather-port) is open between the nodes.
    """
    if run.meta.nnodes <= 1:
        return Skipped("single-node probe")
    if run.outcome is None or not run.outcome.nodes:
        return Incomplete("node 0's record of the other nodes is missing (outcome.json)")
    problems = []
    # A node that connected with another token never counts as connected; node 0 refused it and
    # kept the refusal: say that, not "is its machine up".
    refusals = (run.outcome.nodes[0].get("refusals") or []) if isinstance(run.outcome.nodes[0], dict) else []
    token = [str(r) for r in refusals if "gather token" in str(r)]
    for node in run.outcome.nodes[1:]:
        status = node.get("status")
        if status not in ("lost", "never_connected", "refused"):
            continue
        label = f"node {node.get('node_rank')} ({node.get('host', '?')})"
        ranks = sorted(node.get("ranks") or [])
        if status == "refused":
            message = f"{label} was refused by node 0: {node.get('reason') or 'not one of this job'}"
        elif status == "never_connected":
            message = (f"{label} never reported to node 0: none of its ranks were seen"
                       + (f" ({node['reason']})" if node.get("reason") else ""))
        else:
            message = (f"{label} stopped reporting after step {node.get('last_step', 0)}: "
                       f"{node.get('reason') or 'lost'}"
                       + (f"; its ranks {', '.join(map(str, ranks))} were cut off" if ranks else ""))
        hint = (f"check {node.get('host', 'the node')}: is its machine up (dmesg for the OOM killer), "
                f"is its network link up, and can it reach node 0's rendezvous and gather ports")
        if status == "never_connected" and token:
            message += f"; node 0 {token[0]}" + (f" (and {len(token) - 1} more)" if len(token) > 1 else "")
            hint = ("a node connected with a gather token other than node 0's: give every node the same "
                    "--gather-token (or DDPDOCTOR_GATHER_TOKEN)")
        problems.append(Problem(
            message=message,
            hint=hint,
            ranks=ranks, hosts=[str(node.get("host", "?"))],
            evidence={"node_rank": node.get("node_rank"), "status": status,
                      "last_step": node.get("last_step", 0), "reason": node.get("reason", ""),
                      "addr": node.get("addr")}))
    return problems
