"""Turn a preflight's cluster facts and check results into its Report: a header line, the
per-node table, notes on what could not be checked, and the numbers."""

from __future__ import annotations

from collections import Counter

from ddpdoctor.preflight.cluster import ClusterFacts, NodeResult, name_list
from ddpdoctor.preflight.machine import mib
from ddpdoctor.preflight.node.facts import endpoint
from ddpdoctor.core.findings import Severity
from ddpdoctor.core.registry import CheckResult
from ddpdoctor.report.model import Report, Table

COLUMNS = ["host", "transport", "python", "torch", "cuda", "nccl", "gpus", "shm", "memlock"]


def build_report(cluster: ClusterFacts, results: list[CheckResult], fail_on: Severity, fanout: int,
                 wall_s: float, recorded: dict, stages: dict[str, float]) -> Report:
    report = Report(command="preflight", results=results, fail_on=fail_on, header=header(cluster))
    report.tables.append(Table("Nodes", COLUMNS, [_row(n) for n in cluster.nodes]))
    report.tables.extend(collective_tables(cluster))
    report.notes.extend(notes(cluster, recorded))
    transports = Counter(n.transport for n in cluster.nodes)
    slowest = max((n.facts.collect_s for n in cluster.reached if n.facts.collected_by != "file"),
                  default=0.0)
    report.metrics.update({
        "wall_s": wall_s,
        "nodes": len(cluster.nodes),
        "reached": len(cluster.reached),
        "ssh_nodes": transports.get("ssh", 0),
        "local_nodes": transports.get("local", 0),
        "file_nodes": transports.get("file", 0),
        "fanout": fanout,
        "slowest_node_facts_s": slowest,
        "master": f"{cluster.master_addr}:{cluster.master_port}",
        "port_bind": cluster.port_bind.status,
        "backend": cluster.resolved_backend,
        "expected_world_size": cluster.expected_world_size,
        **stages,
    })
    report.metrics.update(collective_metrics(cluster))
    return report


def _size(nbytes: int) -> str:
    for unit, scale in (("MiB", 1 << 20), ("KiB", 1 << 10)):
        if nbytes >= scale:
            return f"{nbytes / scale:g} {unit}"
    return f"{nbytes} B"


def collective_tables(cluster: ClusterFacts) -> list[Table]:
    """The smoke test's numbers: bus bandwidth per size; the pairs when there are few."""
    c = cluster.collective
    if c is None or c.status != "ran":
        return []
    tables = []
    if c.sizes:
        title = (f"All-reduce, {c.backend}, {len(c.hosts)} node{'s' if len(c.hosts) != 1 else ''}, "
                 f"{c.world_size} processes")
        rows = [[_size(s.bytes), f"{s.seconds * 1e3:.2f}", f"{s.algbw / 1e6:,.1f}", f"{s.busbw / 1e6:,.1f}"]
                for s in c.sizes]
        tables.append(Table(title, ["size", "time ms", "algbw MB/s", "busbw MB/s"], rows))
    if c.pairs and len(c.pairs) <= 12:
        rows = [[" <-> ".join(p.hosts), p.round,
                 f"{p.busbw / 1e6:,.1f}" if p.ok and p.busbw else "-",
                 "ok" if p.ok else short_error(p.error or "failed")] for p in c.pairs]
        tables.append(Table("Node pairs", ["pair", "round", "busbw MB/s", "result"], rows))
    return tables


def short_error(text: str, width: int = 72) -> str:
    """"RuntimeError: Gloo connectFullMesh failed with timed out connecting: ..." -> the words
    after the wrapper, for a table cell."""
    for prefix in ("RuntimeError: ", "DistNetworkError: ", "DistError: ", "Gloo connectFullMesh failed with "):
        if text.startswith(prefix):
            text = text[len(prefix):]
    return text if len(text) <= width else text[:width - 3] + "..."


def collective_metrics(cluster: ClusterFacts) -> dict:
    c = cluster.collective
    if c is None:
        return {}
    out: dict = {"collective": c.status if c.status != "ran" else c.world}
    if c.status != "ran":
        return out
    out["collective_seconds"] = c.seconds
    for s in c.sizes:
        out[f"allreduce_busbw_{_size(s.bytes).replace(' ', '')}_MBps"] = round(s.busbw / 1e6, 1)
    good = sorted(p.busbw for p in c.pairs if p.ok and p.busbw)
    if good:
        out["pair_busbw_min_MBps"] = round(good[0] / 1e6, 1)
        out["pair_busbw_median_MBps"] = round(good[len(good) // 2] / 1e6, 1)
    out["pairs_failed"] = sum(1 for p in c.pairs if not p.ok)
    return out


def header(cluster: ClusterFacts) -> str:
    counts = Counter(n.transport for n in cluster.nodes)
    how = ", ".join(f"{c} {'over ssh' if t == 'ssh' else 'from a file' if t == 'file' else t}"
                    for t, c in sorted(counts.items()))
    backend = cluster.resolved_backend
    backend_text = f"{backend} (auto)" if cluster.backend == "auto" else backend
    return (f"{len(cluster.nodes)} node{'s' if len(cluster.nodes) != 1 else ''} ({how}), "
            f"rendezvous {endpoint(cluster.master_addr, cluster.master_port)}, "
            f"backend {backend_text}, world size {cluster.expected_world_size}")


def _row(node: NodeResult) -> list[str]:
    if node.facts is None:
        kind = node.failure.kind if node.failure else "?"
        return [node.host, f"{node.transport} ✗ {kind}", "-", "-", "-", "-", "-", "-", "-"]
    f = node.facts
    cuda = f.torch_cuda or ("cpu" if f.torch else "-")
    nccl = f.nccl or ("-" if not f.torch_cuda else "?")
    shm = mib(f.shm_bytes) if f.shm_bytes is not None else "?"
    memlock = mib(f.memlock_soft) if f.memlock_soft is not None else "?"
    return [node.host, node.transport, f.python or "?", f.torch or "not installed", cuda, nccl, _gpus(f),
            shm, memlock]


def _gpus(facts) -> str:
    if facts.gpu_count is None:
        return "?"
    if not facts.gpu_names:
        return str(facts.gpu_count)
    return ", ".join(f"{n}× {name}" for name, n in Counter(facts.gpu_names).items())


def notes(cluster: ClusterFacts, recorded: dict) -> list[str]:
    """What the reader should know that is not a finding: what was not checked, and why."""
    out = []
    reached = cluster.reached
    gpu_less = [n.host for n in reached if not n.facts.gpu_count]
    if cluster.resolved_backend == "gloo" and reached:
        ran = cluster.collective is not None and cluster.collective.status == "ran"
        if len(gpu_less) == len(reached):
            out.append("NCCL not checked here: no GPU on any node, backend gloo"
                       + ("; the collective smoke test ran on gloo" if ran else ""))
        elif cluster.backend == "auto":
            out.append(f"backend auto resolves to gloo: no GPU on {name_list(gpu_less)}")
    for node in reached:
        pod = node.facts.kubernetes
        if pod:
            where = f" on node {pod['node']}" if pod.get("node") else ""
            out.append(f"{node.host} is pod {pod.get('pod', '?')}{where}"
                       + (f" (namespace {pod['namespace']})" if pod.get("namespace") else ""))
    for host, (path, _) in recorded.items():
        out.append(f"facts for {host} come from {path} (recorded, not contacted)")
    if cluster.port_bind.status == "not-checked":
        out.append(f"rendezvous port not tested: {cluster.port_bind.detail}")
    # Node notes, grouped: 64 nodes saying the same thing make one line.
    by_note: dict[str, list[str]] = {}
    for node in reached:
        if node.transport == "file":
            continue
        for note in dict.fromkeys(node.facts.notes):
            by_note.setdefault(note, []).append(node.host)
    for note, hosts in by_note.items():
        if "NCCL not checked here" in note and cluster.resolved_backend == "gloo":
            continue  # already said once above, for the whole cluster
        out.append(f"{name_list(hosts)}: {note}")
    return out
