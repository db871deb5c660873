"""DDP216: a GPU throttling, recent Xid errors, or NVLink error counters above zero."""

from __future__ import annotations

from ddpdoctor.core.findings import Problem, Severity
from ddpdoctor.core.registry import Skipped, check
from ddpdoctor.preflight.cluster import ClusterFacts
from ddpdoctor.preflight.machine import not_measured

# Xids after which the GPU is unusable until a reset (NVIDIA's Xid catalogue): fallen off the
# bus, double-bit ECC, row remapping failure, uncontained ECC, contained/uncontained errors.
FATAL_XIDS = {48, 63, 64, 74, 79, 92, 94, 95, 119, 120}


@check("DDP216", "GPU throttling, Xid errors or NVLink errors", Severity.WARNING)
def gpu_health(cluster: ClusterFacts) -> list[Problem] | Skipped:
    """
    What it detects:
        On GPU nodes: a hardware or thermal slowdown active now (nvidia-smi -q's clock event
        or throttle reasons: HW Slowdown, HW Thermal, HW Power Brake, SW Thermal); Xid errors
        in the kernel log since boot (an error for those after which the GPU needs a reset:
        48, 63, 64, 74, 79, 92, 94, 95, 119, 120); NVLink CRC, replay or recovery error counters
        above zero (nvidia-smi nvlink -e). Where the kernel log or nvidia-smi cannot be read,
        it says "not measured" and why.

    Why it hurts:
        These are the fail-slow causes behind "one node makes the whole job slow": a throttled
        GPU is a straggler every rank waits for at each all-reduce, a flaky NVLink retransmits,
        and a GPU that logged Xid 79 hangs the next collective it takes part in.

    How to fix:
        Drain the node and have it serviced; read the details with:

            nvidia-smi -q -d PERFORMANCE        # clock event reasons
            dmesg | grep -i xid                 # needs root
            nvidia-smi nvlink -e                # error counters per link
    """
    gpus = [n for n in cluster.reached if n.facts.gpu_count]
    if not gpus:
        return Skipped("no GPU on any node")
    problems = not_measured(gpus, "gpu_health", "GPU throttling and NVLink errors")
    problems += not_measured(gpus, "xid", "Xid errors")
    for node in gpus:
        f = node.facts
        drain = f"drain {node.host} and have it serviced"
        for bus, reasons in f.gpu_slowdowns.items():
            problems.append(Problem(
                message=f"GPU {bus} on {node.host} is slowed down now: {', '.join(reasons)}",
                hint=f"check cooling and power on {node.host} (`nvidia-smi -q -d PERFORMANCE,TEMPERATURE`), or {drain}",
                hosts=[node.host], evidence={"gpu": bus, "reasons": reasons}))
        if f.xids:
            fatal = sorted({x["xid"] for x in f.xids if x["xid"] in FATAL_XIDS})
            codes = sorted({x["xid"] for x in f.xids})
            problems.append(Problem(
                message=(f"{node.host} logged Xid {', '.join(map(str, codes))} since boot (last: {f.xids[-1]['text']})"
                         + (f"; Xid {', '.join(map(str, fatal))} leaves the GPU unusable until a reset" if fatal else "")),
                hint=f"{drain}; reset the GPU (`nvidia-smi -r`) or reboot before running on it",
                hosts=[node.host], severity=Severity.ERROR if fatal else None, evidence={"xids": f.xids}))
        for gpu, counts in f.nvlink_errors.items():
            problems.append(Problem(
                message=f"{gpu} on {node.host} has NVLink errors: "
                        + ", ".join(f"{k} {v}" for k, v in sorted(counts.items())),
                hint=f"watch whether they rise (`nvidia-smi nvlink -e`); if they do, {drain}",
                hosts=[node.host], evidence={"gpu": gpu, "errors": counts}))
    return problems
