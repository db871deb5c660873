"""DDP104: the rendezvous port is already in use on the master."""

from __future__ import annotations

from typing import TYPE_CHECKING, Union

from ddpdoctor.preflight.cluster import ClusterFacts, PortBind
from ddpdoctor.core.findings import Problem, Severity
from ddpdoctor.core.registry import Skipped, check
from ddpdoctor.postmortem.causality import none_found, who, grouped, problem, when
from ddpdoctor.postmortem.evidence import Evidence

if TYPE_CHECKING:
    from ddpdoctor.probe.run_model.loaded_run import RunModel


@check("DDP104", "Rendezvous port already in use on the master", Severity.ERROR,
       stages=("probe", "evidence"))
def rendezvous_port_free(facts: Union[ClusterFacts, "RunModel", Evidence]) -> list[Problem] | Skipped:
    """
    What it detects:
        MASTER_PORT cannot be bound on the master: another process already listens on it (named,
        with its pid, when the system lets ddpdoctor see it), or binding fails for another reason
        (a port below 1024 without privileges). `preflight` binds the port itself; `probe` binds
        it before it starts a single-node torchrun on --master-port (and then does not start the
        job), and reads the launcher's own "address already in use" error when the port was
        taken between the two.

    Why it hurts:
        Rank 0 starts the TCPStore server on MASTER_PORT. If the port is taken - often by a
        previous run that has not died, or a second job on the same node - rank 0 fails with
        "address already in use", or worse, the other ranks connect to the *old* job's store and
        hang or join the wrong job.

    How to fix:
        Stop the process holding the port, or pick another port for this job:

            kill <pid>                     # the stale job ddpdoctor named
            torchrun --master-port 29501 ...   # or a free port
    """
    if isinstance(facts, Evidence):
        return _from_evidence(facts)
    bind = facts.port_bind if isinstance(facts, ClusterFacts) else _probed_port(facts)
    if isinstance(bind, Skipped):
        return bind
    if bind.status == "not-checked":
        return Skipped(bind.detail or "the port was not tested")
    if bind.status == "listening":
        return []
    where = f"{bind.host}:{bind.port}"
    if bind.status == "in-use":
        holder = (f"{bind.holder_name or 'a process'} (pid {bind.holder_pid})" if bind.holder_pid
                  else "another process (not visible to this user)")
        hint = (f"stop {bind.holder_name or 'it'}: `kill {bind.holder_pid}`, or choose another port with --master-port"
                if bind.holder_pid else
                f"find it with `sudo ss -ltnp 'sport = :{bind.port}'` on {bind.host} and stop it, or choose another port")
        return [Problem(
            message=f"port {bind.port} is already in use on {bind.host}, held by {holder}",
            hint=hint,
            hosts=[bind.host],
            evidence={"port": bind.port, "holder_pid": bind.holder_pid, "holder_name": bind.holder_name,
                      "detail": bind.detail, "tested": bind.where},
        )]
    return [Problem(
        message=f"cannot bind {where}: {bind.detail}",
        hint=("use a port of 1024 or above (ports below need root)" if bind.port < 1024
              else f"choose another --master-port; binding {where} failed: {bind.detail}"),
        hosts=[bind.host],
        evidence={"port": bind.port, "detail": bind.detail, "tested": bind.where},
    )]


def _from_evidence(ev: Evidence) -> list[Problem] | Skipped:
    """A dead job's logs: the store or torchrun could not listen on its port (EADDRINUSE)."""
    facts = [e for e in ev.errors if e.kind == "port_in_use"]
    if not facts:
        return none_found(ev)
    problems = []
    for group in grouped(facts):
        who_ = who(group, "torchrun")
        problems.append(problem(ev, group, f"{who_}: the rendezvous port was already in use{when(group)}: "
                                f"{group[0].summary()}",
                                "another job (or a leftover of this one) holds MASTER_PORT: pick a free "
                                "port (--master-port / --rdzv-endpoint host:0 style) or end the old job"))
    return problems


def _probed_port(run: "RunModel") -> Union[PortBind, Skipped]:
    """The probe's port facts as the PortBind preflight judges: the launcher's error says the
    port was taken; the port test (before launch, or after the failure) names who holds it."""
    # Here, not at the top: a preflight need not import the probe's analysis.
    from ddpdoctor.probe.analysis.launch_failure import launch_failure

    failure = launch_failure(run)
    if failure is None or not failure.address_in_use:
        return Skipped("the launcher did not fail on its rendezvous port")
    fact = failure.port_fact or {}
    port = failure.port if failure.port is not None else 0
    host = str(fact.get("host") or "localhost")
    if fact.get("status") == "in-use" and fact.get("port") == port:
        return PortBind.from_info(host, fact, "local")
    detail = failure.first_error or "address already in use"
    return PortBind(host, port, "in-use", detail, where="local")
