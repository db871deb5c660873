"""`ddpdoctor preflight`: host list -> node facts (local / ssh / recorded) -> port tests -> checks
-> report.

Order matters for the port tests: the rendezvous port is bound on the master *before* the fan-out,
so that every node's facts program can try its TCP connect to MASTER_ADDR:MASTER_PORT in the same
ssh session that gathers its facts (one ssh per node, not two).
"""

from __future__ import annotations

import dataclasses
import shutil
import threading
import time
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, Optional

from ddpdoctor.core import defaults
from ddpdoctor.core.deprecated import make_callable
from ddpdoctor.preflight.node import facts as node_facts
from ddpdoctor.preflight.cluster import ClusterFacts
from ddpdoctor.preflight.cluster_builder import build_cluster, connect_timeout, resolve_timeout
from ddpdoctor.core.errors import ToolFailure, UsageError
from ddpdoctor.preflight.node.facts import NodeFacts
from ddpdoctor.core.findings import Severity
from ddpdoctor.preflight.hosts import HostEntry, default_hosts, parse_host_file, validate_hostname
from ddpdoctor.preflight.report import build_report
from ddpdoctor.preflight.recorded import match_facts_files
from ddpdoctor.core.registry import run_checks
from ddpdoctor.preflight.port_hold import PortHold, hold_locally, hold_over_ssh, not_checked
from ddpdoctor.report.model import Report
from ddpdoctor.preflight.resolve import Resolution, resolve_all
from ddpdoctor.preflight.transport import FactsRequest, TransportFailure, child
from ddpdoctor.preflight.transport.local import facts_here
from ddpdoctor.preflight.transport.route import OwnIdentity
from ddpdoctor.preflight.transport.ssh import SshOptions, facts_over_ssh

BACKENDS = ("auto", "nccl", "gloo")
# A timeout is a deadline: a finite number of seconds (nan would never fire, inf overflows).
MAX_TIMEOUT_S = 24 * 3600.0
VIAS = ("auto", "local", "ssh", "store")


@dataclass
class PreflightOptions:
    nodes_file: Optional[str] = None
    nproc_per_node: Optional[int] = None
    world_size: Optional[int] = None
    master_addr: Optional[str] = None
    master_port: int = defaults.MASTER_PORT
    backend: str = "auto"
    via: str = "auto"
    ssh: SshOptions = field(default_factory=SshOptions)
    timeout: float = defaults.PREFLIGHT_TIMEOUT_S
    fanout: int = defaults.FANOUT
    facts_files: list[str] = field(default_factory=list)
    fail_on: Severity = Severity.ERROR
    ignore: set[str] = field(default_factory=set)
    import_torch: bool = True
    collective: bool = False  # run the DDP107 smoke test once the facts are sound
    node_rank: Optional[int] = None  # store mode: this machine is entry N of the list
    report_files: list[str] = field(default_factory=list)  # store mode: where the master's report goes
    # Told how many hosts are asked (.asking(n)) and each that answers (.answered(host)): the
    # CLI's hosts-answered counter on a terminal (report/live.py HostProgress). None: silent.
    progress: Optional[Any] = field(default=None, compare=False, repr=False)

    def validate(self) -> "PreflightOptions":
        """Bad flag values are bad input (exit 2), found before anything is contacted."""
        if self.backend not in BACKENDS:
            raise UsageError(f"--backend must be one of {', '.join(BACKENDS)} (got {self.backend!r})")
        if self.via not in VIAS:
            raise UsageError(f"--via must be one of {', '.join(VIAS)} (got {self.via!r})")
        if not 1 <= self.master_port <= 65535:
            raise UsageError(f"--master-port must be 1-65535 (got {self.master_port})")
        for flag, value in (("--nproc-per-node", self.nproc_per_node), ("--world-size", self.world_size)):
            if value is not None and value < 1:
                raise UsageError(f"{flag} must be at least 1 (got {value})")
        if not 0 < self.timeout <= MAX_TIMEOUT_S:
            raise UsageError(f"--timeout must be more than 0 and at most {MAX_TIMEOUT_S:.0f} seconds "
                             f"(got {self.timeout:g})")
        if self.node_rank is not None and self.via != "store":
            raise UsageError("--node-rank only means something with --via store")
        if self.node_rank is not None and self.node_rank < 0:
            raise UsageError(f"--node-rank must be 0 or more (got {self.node_rank})")
        if self.fanout < 1:
            raise UsageError(f"--fanout must be at least 1 (got {self.fanout})")
        if self.master_addr is not None:
            try:
                self.master_addr = validate_hostname(self.master_addr)
            except ValueError as exc:
                raise UsageError(f"--master-addr: {exc}") from None
        self.ssh.validate()
        return self


def run_preflight(opts: PreflightOptions) -> Report:
    """Everything `ddpdoctor preflight` does between parsing flags and printing the report."""
    began = time.monotonic()
    opts.validate()
    entries = parse_host_file(opts.nodes_file) if opts.nodes_file else default_hosts()
    recorded = match_facts_files(opts.facts_files, entries)
    master = opts.master_addr or entries[0].name
    if opts.via == "store":
        from ddpdoctor.preflight.store_mode import run_store  # imports torch: only in store mode
        return run_store(opts, entries, recorded, master, began)
    stages: dict[str, float] = {}
    try:
        cluster = _gather(opts, entries, recorded, master, stages)
        if opts.collective:
            mark = time.monotonic()
            cluster.collective = _smoke_test(opts, cluster)
            stages["collective_s"] = round(time.monotonic() - mark, 3)
    finally:
        child.kill_all()  # nothing of ours outlives the preflight, interrupted or not
    results = run_checks("preflight", cluster, opts.ignore)
    return build_report(cluster, results, opts.fail_on, opts.fanout,
                        round(time.monotonic() - began, 3), recorded, stages)


def _smoke_test(opts: PreflightOptions, cluster: ClusterFacts):
    """DDP107: a real all-reduce, once the facts say a job could form (every check is judged for
    that, --ignore or not)."""
    from ddpdoctor.preflight import collective_smoke as collective  # only with --collective
    from ddpdoctor.preflight import collective_result

    reason = collective.blocker(cluster)
    if reason:
        return collective_result.skipped(reason, cluster.resolved_backend)
    plan = collective.plan(cluster, opts.timeout, host_store=True, prefix="ddpdoctor/collective")
    if isinstance(plan, str):
        return collective_result.skipped(plan, cluster.resolved_backend)
    return collective.launch(plan, opts.ssh)


def _gather(opts: PreflightOptions, entries: list[HostEntry], recorded: dict, master: str,
            stages: dict[str, float]) -> ClusterFacts:
    """Ask every node; `stages` receives how long each step took (seconds)."""
    mark = time.monotonic()
    # This machine's own facts can take seconds (a CUDA torch is imported in a child to ask for
    # NCCL): gather them while the ssh fan-out runs. Routing needs only names and addresses.
    # A daemon thread, not an executor: an interrupted preflight must not wait at exit for this
    # machine's torch import (executor threads are joined at interpreter exit), which on a loaded
    # machine took longer than the Ctrl-C deadline.
    local_facts = _in_background(facts_here, FactsRequest(timeout=opts.timeout, import_torch=opts.import_torch))
    own = OwnIdentity.of(_identity(min(opts.timeout, 3.0)))

    stages["identity_s"], mark = round(time.monotonic() - mark, 3), time.monotonic()
    # Recorded nodes are not contacted, not even by a name lookup.
    names = [n for n in dict.fromkeys([e.name for e in entries] + [master]) if n not in recorded]
    resolved = resolve_all(names, resolve_timeout(opts.timeout))
    master_resolution = resolved.get(master, Resolution([]))
    stages["resolve_s"], mark = round(time.monotonic() - mark, 3), time.monotonic()
    routes = {e.name: "file" if e.name in recorded else _route(e.name, opts.via, own, resolved[e.name].addresses)
              for e in entries}
    if "ssh" in routes.values() and shutil.which(opts.ssh.executable) is None:
        raise ToolFailure(f"`{opts.ssh.executable}` is not on PATH; it is needed to reach "
                          f"{', '.join(n for n, r in routes.items() if r == 'ssh')}")

    # The listener must outlive every node's connect test: all fan-out waves, plus slack.
    waves = -(-sum(1 for r in routes.values() if r == "ssh") // opts.fanout) or 1
    hold = _hold_port(opts, master, own, master_resolution.addresses, recorded,
                      deadline_s=opts.timeout * (waves + 1) + 5)
    stages["port_hold_s"], mark = round(time.monotonic() - mark, 3), time.monotonic()
    try:
        request = FactsRequest(timeout=opts.timeout, import_torch=opts.import_torch,
                               connect=_connect_params(opts, master, hold))
        gathered = _fan_out(routes, request, opts, local_facts)
    finally:
        hold.close()
    stages["fanout_s"] = round(time.monotonic() - mark, 3)
    here_or_failure = local_facts.result()  # bounded: facts_here stops waiting at --timeout
    here = here_or_failure if isinstance(here_or_failure, NodeFacts) else None
    return build_cluster(opts, entries, recorded, master, resolved, routes, gathered, hold.result, here)


def _route(name: str, via: str, own: OwnIdentity, addresses: list[str]) -> str:
    if via == "auto":
        return "local" if own.owns(name, addresses) else "ssh"
    return via


def _hold_port(opts: PreflightOptions, master: str, own: OwnIdentity, addresses: list[str],
               recorded: dict, deadline_s: float) -> PortHold:
    port = opts.master_port
    if own.owns(master, addresses):
        return hold_locally(master, port, deadline_s)
    if master in recorded:
        return not_checked(master, port, f"the master's facts come from {recorded[master][0]}")
    if opts.via == "local":
        return not_checked(master, port, "--via local cannot hold a port on another machine")
    return hold_over_ssh(master, port, opts.ssh, opts.timeout, deadline_s)


def _connect_params(opts: PreflightOptions, master: str, hold: PortHold) -> Optional[dict]:
    # Connect tests only mean something while something listens on the port: ours, or the
    # process that already holds it (DDP104).
    if hold.result.status not in ("listening", "in-use"):
        return None
    return {"host": master, "port": opts.master_port, "timeout": connect_timeout(opts.timeout)}


def _identity(timeout: float) -> NodeFacts:
    """This machine's names and addresses, fast (no torch, no GPUs); the FQDN lookup, which a
    broken resolver can hold, is given `timeout` seconds."""
    box: dict[str, NodeFacts] = {}
    thread = threading.Thread(target=lambda: box.setdefault("facts", node_facts.identity()),
                              name="ddpdoctor-identity", daemon=True)
    thread.start()
    thread.join(timeout)
    return box.get("facts") or node_facts.identity(fqdn=False)


def _in_background(func, *args) -> Future:
    future: Future = Future()

    def work() -> None:
        try:
            future.set_result(func(*args))
        except BaseException as exc:  # noqa: BLE001 - handed to whoever waits on the future
            future.set_exception(exc)

    threading.Thread(target=work, name="ddpdoctor-local", daemon=True).start()
    return future


def _fan_out(routes: dict[str, str], request: FactsRequest, opts: PreflightOptions,
             local_facts: Future) -> dict[str, NodeFacts | TransportFailure]:
    """Ask every distinct host once, ssh hosts concurrently (at most --fanout at a time)."""
    out: dict[str, NodeFacts | TransportFailure] = {}
    ssh_hosts = [h for h, r in routes.items() if r == "ssh"]
    local_hosts = [h for h, r in routes.items() if r == "local"]
    pool = ThreadPoolExecutor(max_workers=max(1, min(opts.fanout, len(ssh_hosts) or 1)),
                              thread_name_prefix="ddpdoctor-ssh")
    try:
        if opts.progress is not None:
            opts.progress.asking(len(ssh_hosts) + len(local_hosts))
        futures = {h: pool.submit(facts_over_ssh, h, request, opts.ssh) for h in ssh_hosts}
        if opts.progress is not None:
            for host, future in futures.items():
                future.add_done_callback(lambda _f, h=host: opts.progress.answered(h))
        for host in local_hosts:
            out[host] = _local_node(local_facts.result(), request)
            if opts.progress is not None:
                opts.progress.answered(host)
        for host, future in futures.items():
            out[host] = future.result()  # each ssh is bounded by request.timeout in child.run
    except BaseException:
        child.kill_all()  # Ctrl-C must not wait for every ssh to reach its deadline
        raise
    finally:
        pool.shutdown(wait=True, cancel_futures=True)
    return out


def _local_node(here: NodeFacts | TransportFailure, request: FactsRequest) -> NodeFacts | TransportFailure:
    """This machine, as a node of the list: its facts (gathered once) plus its own connect test."""
    if not isinstance(here, NodeFacts):
        return here
    connect = None
    if request.connect:
        c = request.connect
        connect = node_facts.probe_connect(c["host"], int(c["port"]), float(c["timeout"]))
    return dataclasses.replace(here, connect=connect)


# Release 0.1 called `ddpdoctor.preflight.run(...)`; the name is this module now (core/deprecated.py).
make_callable(__name__, "run_preflight")
