"""Preflight fan-out: wall time of `ddpdoctor preflight` over N hosts reached by ssh.

Starts its own sshd on loopback addresses 127.0.0.2 .. 127.0.0.N+1 (the tests' helper,
tests/helpers/sshd.py), writes a host list of them, runs the ddpdoctor console script a few times and
prints the median wall time. For scale it also times the floor: N concurrent `ssh HOST true`
through the same server, which is what ssh alone costs on this machine (on loopback the server
side of every handshake runs on the same cores as ddpdoctor).

    python -m benchmarks.preflight_fanout              # 16 hosts
    python -m benchmarks.preflight_fanout --hosts 64
    python -m benchmarks.preflight_fanout --hosts 64 --ssh-option KexAlgorithms=curve25519-sha256

The last shows the biggest knob on a small launcher: OpenSSH 9's default post-quantum key
exchange (sntrup761x25519) costs the ssh *client* ~65 ms of CPU per handshake (76 ms per host
in all, against 11 ms with curve25519-sha256, measured on this 2-core machine); choosing it is
the user's call, so ddpdoctor never changes it by itself. The master is 127.0.0.1 (this
machine), as when preflight runs on the job's first node.

It also prints where the CPU goes: the launcher side (ddpdoctor and its ssh clients: what a
real launch node pays) and the node side (the test sshd's share of each handshake, the login
shell and the facts program: on a real cluster every node pays its own, in parallel). On
loopback both share this machine's cores, which is why the wall time is about their sum divided
by the core count.

Needs root and OpenSSH (sshd, ssh, ssh-keygen).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from tests.helpers.sshd import LoopbackSshd, free_port, loopback_hosts


def ssh_floor(server: LoopbackSshd, hosts: list[str], args) -> float:
    """N concurrent `ssh HOST python -c pass` with ddpdoctor's own ssh command line: ssh plus
    starting the remote Python, nothing of ddpdoctor's."""
    from ddpdoctor.preflight.transport import child
    from ddpdoctor.preflight.transport.ssh import SshOptions, ssh_argv

    flags = server.ssh_flags() + sum((["--ssh-option", o] for o in args.ssh_option), [])
    options = SshOptions(port=server.port, options=[flags[i + 1] for i, f in enumerate(flags) if f == "--ssh-option"])

    def one(host: str) -> int:
        argv = ssh_argv(host, options, args.timeout, f"{args.remote_python} -c pass")
        return child.run(argv, b"", 120).returncode

    began = time.monotonic()
    with ThreadPoolExecutor(len(hosts)) as pool:
        codes = list(pool.map(one, hosts))
    if any(codes):
        raise SystemExit(f"ssh floor run failed: exit codes {sorted(set(codes))}")
    return time.monotonic() - began


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _sshd_cpu(server: LoopbackSshd) -> float:
    """CPU of everything the test sshd ran for the sessions (its reaped children): the "node"
    side - sshd's half of every handshake, the login shell, the remote Python."""
    ticks = 0
    for proc in server.procs:
        with open(f"/proc/{proc.pid}/stat") as handle:
            fields = handle.read().rsplit(")", 1)[1].split()
        ticks += sum(int(x) for x in fields[11:15])  # utime stime cutime cstime
    return ticks / os.sysconf("SC_CLK_TCK")


def preflight_once(server: LoopbackSshd, nodes: Path, args) -> tuple[float, dict]:
    exe = shutil.which("ddpdoctor")
    argv = [exe] if exe else [sys.executable, "-m", "ddpdoctor"]
    argv += ["preflight", "--nodes", str(nodes), "--master-addr", "127.0.0.1", "--master-port", str(free_port()),
             "--timeout", str(args.timeout), "--fanout", str(args.fanout), *server.ssh_flags(args.remote_python),
             *sum((["--ssh-option", o] for o in args.ssh_option), []), "--json", "-", "-q"]
    began = time.monotonic()
    done = subprocess.run(argv, capture_output=True, text=True, timeout=args.timeout * 3 + 60)
    wall = time.monotonic() - began
    report = json.loads(done.stdout)
    if report["metrics"]["reached"] != args.hosts:
        failures = [f["message"] for f in report["findings"] if f["code"] == "DDP105"]
        raise SystemExit(f"only {report['metrics']['reached']}/{args.hosts} hosts answered: {failures[:2]}")
    return wall, report


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--hosts", type=int, default=16)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--fanout", type=int, default=64)
    parser.add_argument("--timeout", type=float, default=30.0,
                        help="per-node limit; generous, so a loaded machine still measures instead of failing")
    parser.add_argument("--remote-python", default=sys.executable)
    parser.add_argument("--ssh-option", action="append", default=[],
                        help="extra ssh option for ddpdoctor, e.g. KexAlgorithms=curve25519-sha256")
    parser.add_argument("--keep-bashrc", action="store_true", help="let the login shell read ~/.bashrc")
    args = parser.parse_args()

    hosts = loopback_hosts(args.hosts)
    with LoopbackSshd(hosts, skip_bashrc=not args.keep_bashrc) as server, \
            tempfile.TemporaryDirectory(prefix="ddpdoctor-bench-") as tmp:
        nodes = Path(tmp) / "hosts.txt"
        nodes.write_text("\n".join(hosts) + "\n")
        preflight_once(server, nodes, args)  # warm-up: host keys accepted, page cache warm
        floors, walls, inner, fanouts, client_cpu, node_cpu = [], [], [], [], [], []
        for _ in range(args.runs):
            floors.append(ssh_floor(server, hosts, args))
            client, node = _children_cpu(), _sshd_cpu(server)
            wall, report = preflight_once(server, nodes, args)
            client_cpu.append(_children_cpu() - client)
            node_cpu.append(_sshd_cpu(server) - node)
            walls.append(wall)
            inner.append(report["metrics"]["wall_s"])
            fanouts.append(report["metrics"]["fanout_s"])
        load = os.getloadavg()[0]
    print(f"preflight fan-out over {args.hosts} ssh hosts (fanout {args.fanout}, {os.cpu_count()} cores, "
          f"load {load:.1f}), median of {args.runs}:")
    print(f"  ddpdoctor preflight, whole command:   {statistics.median(walls):6.2f} s   "
          f"(runs: {', '.join(f'{w:.2f}' for w in walls)})")
    print(f"  ... of which inside run_preflight:    {statistics.median(inner):6.2f} s")
    print(f"  ... of which the ssh fan-out:         {statistics.median(fanouts):6.2f} s")
    print(f"  floor, {args.hosts} x concurrent `ssh HOST python -c pass`: {statistics.median(floors):6.2f} s")
    client, node = statistics.median(client_cpu), statistics.median(node_cpu)
    print(f"  CPU, launcher side (ddpdoctor + ssh clients): {client:6.2f} s  "
          f"({client / args.hosts * 1e3:.0f} ms per host)")
    print(f"  CPU, node side (sshd, login shell, facts program): {node:6.2f} s  "
          f"({node / args.hosts * 1e3:.0f} ms per host; on a real cluster each node pays its own)")


if __name__ == "__main__":
    main()
