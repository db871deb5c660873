"""Attach across nodes: every node observes its own ranks (ddpdoctor.attach.node), node 0
(this ddpdoctor) gathers the observations and judges the whole job, as the multi-node probe.

Reached over ssh as preflight reaches nodes (the same argument list, BatchMode, deadlines and
reaping: preflight/transport), or under SLURM with one `srun --jobid ID --overlap` task per
node. The nodes need ddpdoctor installed in the Python they run (--remote-python).
"""

from __future__ import annotations

import json
import shlex
import subprocess
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from typing import Optional

from ddpdoctor.attach.observation import NODE_MARKER as MARKER, Observation, RankObservation, most_samples
from ddpdoctor.core import redact
from ddpdoctor.preflight.transport import child
from ddpdoctor.preflight.transport.ssh import SshOptions, classify, ssh_argv
from ddpdoctor.probe.launch.node_wire import BadMessage, clean

MARGIN_S = 30.0  # a node's start-up (imports, ssh) beyond the sampling itself


def node_command(python: str, duration_s: float, rate: int, node_rank: Optional[int],
                 master_port: Optional[int], host: Optional[str] = None) -> list[str]:
    argv = [python, "-m", "ddpdoctor.attach.node", "--duration", f"{duration_s:g}", "--rate", str(rate)]
    if node_rank is not None:
        argv += ["--node-rank", str(node_rank)]
    if master_port is not None:
        argv += ["--master-port", str(master_port)]
    if host is not None:
        argv += ["--host", host]
    return argv


# A node's answer larger than this is not parsed: JSON of that size takes ~12x its size as Python
# objects (a 238 MiB answer: 2.8 GiB, and minutes). An honest answer (8 ranks, 5 s at 50 Hz,
# 50-frame stacks) is ~10 MiB; the node is then lost, its ranks unobserved: never a pass.
MAX_ANSWER = 32 * 1024 * 1024


def _answers(stdout: str) -> list[dict]:
    """The marked answers in a node's output (a JSON object each; anything else is skipped:
    what it says is checked in merge())."""
    found = []
    for line in stdout.splitlines():
        if line.startswith(MARKER) and len(line) > MAX_ANSWER:
            found.append({"error": f"sent an answer of {len(line) >> 20} MiB, more than {MAX_ANSWER >> 20} MiB: "
                                   "left out (sample for less time, or at a lower --rate)"})
            continue
        if line.startswith(MARKER):
            try:
                answer = json.loads(line[len(MARKER):])
            except (ValueError, RecursionError):
                continue
            if isinstance(answer, dict):
                found.append(answer)
    return found


def _over_ssh(index: int, host: str, opts: SshOptions, duration_s: float, rate: int,
              master_port: Optional[int]) -> dict:
    timeout = duration_s + MARGIN_S
    remote = " ".join(shlex.quote(a) for a in node_command(opts.remote_python, duration_s, rate,
                                                           index, master_port, host))
    done = child.run(ssh_argv(host, opts, timeout, remote), b"", timeout)
    answers = _answers(done.stdout.decode("utf-8", errors="replace"))
    if answers:
        answers[0].setdefault("host", host)
        return answers[0]
    if done.truncated:
        return {"host": host, "error": f"printed more than {child.MAX_OUTPUT >> 20} MiB: left out"}
    if done.timed_out:
        return {"host": host, "error": f"ssh to {host} gave no answer within {timeout:g} s"}
    failure = classify(host, done.returncode, done.stderr.decode("utf-8", errors="replace"), opts)
    return {"host": host, "error": f"{failure.message}: {failure.evidence}".rstrip(": ")}


def gather_ssh(hosts: list[str], opts: SshOptions, duration_s: float, rate: int,
               master_port: Optional[int]) -> Observation:
    """Every host in node-rank order observes its ranks at once; one Observation of them all."""
    with ThreadPoolExecutor(max_workers=min(32, len(hosts))) as pool:
        answers = list(pool.map(lambda item: _over_ssh(item[0], item[1], opts, duration_s, rate,
                                                       master_port), enumerate(hosts)))
    return merge(answers, duration_s, len(hosts), rate)


def gather_slurm(job_id: str, python: str, duration_s: float, rate: int,
                 master_port: Optional[int]) -> Observation:
    """One task per node of SLURM job `job_id`, beside its steps (--overlap); each task's node
    rank is its SLURM_NODEID. Written for SLURM, not testable on a machine without it."""
    timeout = duration_s + MARGIN_S
    argv = ["srun", "--jobid", job_id, "--overlap", "--ntasks-per-node=1", "--kill-on-bad-exit=0",
            *node_command(python, duration_s, rate, None, master_port)]
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=timeout,
                              stdin=subprocess.DEVNULL)
    except FileNotFoundError:
        from ddpdoctor.core.errors import UsageError

        raise UsageError("--slurm-job needs srun on this machine") from None
    except subprocess.TimeoutExpired as exc:
        out = exc.stdout.decode() if isinstance(exc.stdout, bytes) else (exc.stdout or "")
        answers = _answers(out)
        return merge(answers + [{"host": "srun", "error": f"srun gave no full answer within {timeout:g} s"}],
                     duration_s, max(len(answers), 1), rate)
    answers = sorted(_answers(done.stdout),
                     key=lambda a: a.get("node_rank") if type(a.get("node_rank")) is int else 0)
    if not answers:
        answers = [{"host": "srun", "error": redact.scrub(done.stderr.strip().splitlines()[-1]
                                                          if done.stderr.strip() else f"exit {done.returncode}")}]
    return merge(answers, duration_s, len(answers), rate)


def merge(answers: list[dict], duration_s: float, nodes: int, rate: int) -> Observation:
    """The nodes' observations as one; a rank seen twice (two names for one machine) counts once,
    and a node that did not answer, or answered with what is not a valid observation, is a
    note and leaves its ranks unobserved (so the verdict cannot be a pass)."""
    merged = Observation("", None, duration_s, nodes=nodes)
    seen: set[int] = set()
    kept: list[tuple[str, Observation]] = []
    for answer in answers:
        host = clean(answer.get("host", "?"), 255) if isinstance(answer.get("host"), str) else "?"
        obs = None
        if "observation" in answer:
            try:
                obs = Observation.from_dict(answer["observation"], most_samples(duration_s, rate))
                error = ""
            except BadMessage as exc:
                error = f"sent an observation that is not valid ({exc}): left out"
            if obs is not None and merged.world_size and obs.world_size not in (None, merged.world_size):
                error = (f"says the job has {obs.world_size} ranks, where the nodes before it "
                         f"said {merged.world_size}: left out")
                obs = None
        else:
            error = answer.get("error")
            error = clean(error, 4000) if isinstance(error, str) else "no answer"
        if obs is None:
            merged.notes.append(f"node {host}: {error}")
            merged.lost_nodes.append(host)
            continue
        merged.job = merged.job or obs.job
        merged.world_size = merged.world_size or obs.world_size
        for note in obs.notes:
            if "ranks run on this machine" not in note:
                merged.notes.append(f"node {host}: {note}")
        kept.append((host, obs))
    for rank in believed(kept, merged.notes):
        seen.add(rank.rank)
        merged.ranks.append(rank)
    if merged.world_size and len(seen) < merged.world_size:
        missing = sorted(set(range(merged.world_size)) - seen)
        merged.notes.append(f"rank(s) {', '.join(map(str, missing))} of {merged.world_size} were "
                            "not observed on any node")
    return merged


def believed(answers: list[tuple[str, Observation]], notes: list[str]) -> list[RankObservation]:
    """The ranks each node may report: a node answers for its own ranks only. Under torchrun a
    node's ranks are one block, RANK = the node's first rank + LOCAL_RANK, so a claim whose rank
    and local rank put it in another block than the node's other ranks is not its own; and a
    rank that two nodes claim as different processes is believed from neither (it stays
    unobserved: the verdict cannot pass on it, and blames no one on a forged stack). The same
    process reported twice (two names for one machine) counts once. Dropped claims are notes."""
    claims: dict[int, list[tuple[str, RankObservation]]] = {}
    for host, obs in answers:
        bases = Counter(r.rank - r.local_rank for r in obs.ranks if r.local_rank is not None)
        top = bases.most_common(2)
        base = top[0][0] if top and (len(top) == 1 or top[0][1] > top[1][1]) else None
        # a node's local ranks are 0, 1, ... with no gap: one past a gap is not one of its own
        local = {r.local_rank for r in obs.ranks if r.local_rank is not None}
        gap = next(k for k in range(len(local) + 1) if k not in local)
        for r in obs.ranks:
            if r.local_rank is not None and (base is None or r.rank - r.local_rank != base
                                             or r.local_rank > gap):
                notes.append(f"node {host} claims rank {r.rank} as its local rank {r.local_rank}, which is "
                             f"not in the block of its other ranks: not its own, left out")
                continue
            claims.setdefault(r.rank, []).append((host, r))
    out = []
    for rank in sorted(claims):
        distinct = {(r.host, r.pid): (host, r) for host, r in claims[rank]}
        if len(distinct) == 1:
            out.append(next(iter(distinct.values()))[1])
            continue
        who = ", ".join(sorted({f"{host} (pid {r.pid})" for host, r in distinct.values()}))
        notes.append(f"rank {rank} is claimed by several nodes as different processes ({who}): "
                     "believed from none of them")
    return out
