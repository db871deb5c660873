"""Real separate network hosts on one machine: Linux network namespaces joined by a bridge.

Every host is a namespace with its own network stack, its own address on a private test subnet
(the caller's choice; the tests use 192.168.213.0/24), its own /etc/hosts (`ip netns exec` bind-mounts /etc/netns/NAME/hosts
over /etc/hosts), and, for the commands we start there, its own hostname (a UTS namespace of
its own via `unshare --uts`; `ip netns exec` alone would share - and change - this machine's).
The bridge lives in a "switch" namespace of its own, so this machine's own network stack gets no
interface, address or route: no packet of the lab can leave it, and there is no DNS inside
(an empty resolv.conf).

Names carry a prefix and the owning process id (`ddpdt-<pid>-n1`): `clean_stale()` removes what a
crashed earlier run left (its pid is gone) and never touches a lab another live session uses.
`NetnsLab.close()` kills every process in the lab's namespaces, deletes them (their veths and the
bridge go with them) and removes /etc/netns/<name>.

Independent of ddpdoctor. Needs root, iproute2 and util-linux (`unshare`).
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional, Sequence

PREFIX = "ddpdt-"
ETC_NETNS = Path("/etc/netns")
SSHD = "/usr/sbin/sshd"


class LabUnavailable(Exception):
    """This machine cannot build the lab (not root, no `ip`, namespaces not allowed)."""


@dataclass
class Host:
    """One namespace host. `loopback_trap`: its /etc/hosts maps its own name to 127.0.1.1, as
    Debian's installer writes it. `extra_bridges`: node-local bridges, e.g. {"docker0": "172.17.0.1/16"}."""

    name: str
    address: str
    ifname: str = "eth0"
    loopback_trap: bool = False
    extra_bridges: dict[str, str] = field(default_factory=dict)
    netns: str = ""  # filled in by the lab


def _ip(*args: str, check: bool = True, timeout: float = 20) -> subprocess.CompletedProcess:
    done = subprocess.run(["ip", *args], capture_output=True, text=True, timeout=timeout)
    if check and done.returncode != 0:
        raise LabUnavailable(f"`ip {' '.join(args)}` failed: {done.stderr.strip()}")
    return done


def unavailable_reason() -> Optional[str]:
    if os.geteuid() != 0:
        return "network namespaces need root: run the tests as root"
    for tool in ("ip", "unshare"):
        if shutil.which(tool) is None:
            return f"`{tool}` is not installed: apt-get install {'iproute2' if tool == 'ip' else 'util-linux'}"
    return None


def _owner_alive(name: str) -> bool:
    """`ddpdt-<pid>-...`: is the process that made it still running?"""
    try:
        pid = int(name[len(PREFIX):].split("-", 1)[0])
    except ValueError:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _kill_namespace(netns: str) -> None:
    """SIGKILL every process in the namespace, then delete it."""
    for _ in range(3):
        pids = _ip("netns", "pids", netns, check=False).stdout.split()
        if not pids:
            break
        for pid in pids:
            try:
                os.kill(int(pid), signal.SIGKILL)
            except (ProcessLookupError, ValueError):
                pass
        time.sleep(0.1)
    _ip("netns", "delete", netns, check=False)
    shutil.rmtree(ETC_NETNS / netns, ignore_errors=True)


def clean_stale() -> list[str]:
    """Remove namespaces and /etc/netns entries of earlier runs whose process is gone."""
    removed = []
    listed = _ip("netns", "list", check=False).stdout.split("\n")
    for line in listed:
        name = line.split(" ", 1)[0].strip()
        if name.startswith(PREFIX) and not _owner_alive(name):
            _kill_namespace(name)
            removed.append(name)
    if ETC_NETNS.is_dir():
        for entry in ETC_NETNS.iterdir():
            if entry.name.startswith(PREFIX) and not _owner_alive(entry.name):
                shutil.rmtree(entry, ignore_errors=True)
    return removed


class NetnsLab:
    """`with NetnsLab([Host("n1", "192.168.213.11"), ...]) as lab: lab.run("n1", [...])`"""

    def __init__(self, hosts: Sequence[Host], prefix_len: int = 24, tag: str = ""):
        # `tag` keeps two labs of one test session apart (e.g. "p" for the probe's lab).
        self.run_id = f"{PREFIX}{os.getpid()}{'-' + tag if tag else ''}"
        self.hosts = {h.name: h for h in hosts}
        self.prefix_len = prefix_len
        self.switch = f"{self.run_id}-sw"
        self.namespaces: list[str] = []
        self.dir = Path(tempfile.mkdtemp(prefix="ddpdoctor-netns-"))
        self.sshd_port = 0
        self.client_key = self.dir / "client_key"
        self.known_hosts = self.dir / "known_hosts"

    def __enter__(self) -> "NetnsLab":
        self.start()
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # ------------------------------------------------------------------ building

    def start(self) -> None:
        reason = unavailable_reason()
        if reason:
            raise LabUnavailable(reason)
        clean_stale()
        try:
            self._add_namespace(self.switch)
            _ip("-n", self.switch, "link", "add", "br0", "type", "bridge")
            _ip("-n", self.switch, "link", "set", "br0", "up")
            for index, host in enumerate(self.hosts.values()):
                self._add_host(index, host)
        except BaseException:
            self.close()
            raise

    def _add_namespace(self, name: str) -> None:
        _ip("netns", "add", name)
        self.namespaces.append(name)
        _ip("-n", name, "link", "set", "lo", "up")

    def _add_host(self, index: int, host: Host) -> None:
        host.netns = f"{self.run_id}-{host.name}"
        self._add_namespace(host.netns)
        port = f"p{index}"
        # Created straight inside the two namespaces: nothing appears in this machine's stack.
        _ip("link", "add", host.ifname, "netns", host.netns, "type", "veth", "peer", "name", port,
            "netns", self.switch)
        _ip("-n", self.switch, "link", "set", port, "master", "br0", "up")
        _ip("-n", host.netns, "addr", "add", f"{host.address}/{self.prefix_len}", "dev", host.ifname)
        _ip("-n", host.netns, "link", "set", host.ifname, "up")
        for bridge, cidr in host.extra_bridges.items():
            _ip("-n", host.netns, "link", "add", bridge, "type", "bridge")
            _ip("-n", host.netns, "addr", "add", cidr, "dev", bridge)
            _ip("-n", host.netns, "link", "set", bridge, "up")
        etc = ETC_NETNS / host.netns
        etc.mkdir(parents=True, exist_ok=True)
        lines = ["127.0.0.1\tlocalhost", "::1\tlocalhost ip6-localhost ip6-loopback"]
        if host.loopback_trap:
            lines.append(f"127.0.1.1\t{host.name}")  # Debian's installer does exactly this
        lines += [f"{h.address}\t{h.name}" for h in self.hosts.values() if not (h is host and host.loopback_trap)]
        (etc / "hosts").write_text("\n".join(lines) + "\n")
        (etc / "resolv.conf").write_text("# ddpdoctor test namespace: no DNS server\n")

    # ------------------------------------------------------------------ using

    def command(self, host: str, argv: Sequence[str]) -> list[str]:
        """argv run inside `host`: its network, its /etc/hosts, its own hostname."""
        h = self.hosts[host]
        return ["ip", "netns", "exec", h.netns, "unshare", "--uts", "--", "sh", "-c",
                'hostname "$0" && exec "$@"', h.name, *argv]

    def run(self, host: str, argv: Sequence[str], env: Optional[dict] = None,
            timeout: float = 120) -> subprocess.CompletedProcess:
        merged = dict(os.environ, COLUMNS="200")
        merged.update(env or {})
        return subprocess.run(self.command(host, argv), capture_output=True, text=True, timeout=timeout,
                              env=merged, stdin=subprocess.DEVNULL)

    def start_in(self, host: str, argv: Sequence[str], env: Optional[dict] = None) -> subprocess.Popen:
        merged = dict(os.environ, COLUMNS="200")
        merged.update(env or {})
        return subprocess.Popen(self.command(host, argv), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                text=True, env=merged, stdin=subprocess.DEVNULL)

    def cut(self, host: str) -> None:
        """Take `host`'s link to the switch down: the node is cut off from the network, as by a
        failed cable or switch port; its processes keep running."""
        index = list(self.hosts).index(host)
        _ip("-n", self.switch, "link", "set", f"p{index}", "down")

    def nft(self, host: str, script: str) -> None:
        """Load an nftables script inside one host's namespace only. A machine without nft skips
        the test (with the tool's name and how to install it), it does not fail it."""
        if shutil.which("nft") is None:
            import pytest

            pytest.skip("nft is not installed (apt-get install nftables)")
        done = subprocess.run(["ip", "netns", "exec", self.hosts[host].netns, "nft", "-f", "-"],
                              input=script, capture_output=True, text=True, timeout=20)
        if done.returncode != 0:
            raise LabUnavailable(f"nft in {host} failed: {done.stderr.strip()}")

    def nft_flush(self, host: str) -> None:
        subprocess.run(["ip", "netns", "exec", self.hosts[host].netns, "nft", "flush", "ruleset"],
                       capture_output=True, timeout=20)

    def shape(self, host: str, rate: str) -> None:
        """Limit what `host` sends on its link (tc tbf), e.g. rate="40mbit"; rate="" removes it. A
        machine without tc skips the test, as one without nft does."""
        h = self.hosts[host]
        if rate and shutil.which("tc") is None:
            import pytest

            pytest.skip("tc is not installed (apt-get install iproute2)")
        if rate:
            _ip("netns", "exec", h.netns, "tc", "qdisc", "replace", "dev", h.ifname, "root", "tbf",
                "rate", rate, "burst", "32kb", "latency", "400ms")
        else:
            subprocess.run(["ip", "netns", "exec", h.netns, "tc", "qdisc", "del", "dev", h.ifname, "root"],
                           capture_output=True, timeout=20)

    # ------------------------------------------------------------------ sshd in every host

    def start_sshd(self, accept_env: str = "NCCL_* GLOO_* TORCH_*", timeout: float = 20) -> None:
        """One sshd per host on port 22 of its own stack, all with one host key and one client key."""
        if not os.path.exists(SSHD) or shutil.which("ssh-keygen") is None:
            raise LabUnavailable("OpenSSH (sshd, ssh-keygen) is not installed")
        os.makedirs("/run/sshd", mode=0o755, exist_ok=True)
        host_key = self.dir / "host_key"
        for key in (host_key, self.client_key):
            subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "ddpdoctor-netns", "-f", str(key)],
                           check=True, timeout=30, stdin=subprocess.DEVNULL)
        shutil.copy(f"{self.client_key}.pub", self.dir / "authorized_keys")
        self.known_hosts.touch()
        self.sshd_port = 22
        for name, host in self.hosts.items():
            config = self.dir / f"sshd_config.{name}"
            config.write_text(f"""\
Port 22
ListenAddress {host.address}
HostKey {host_key}
PidFile {self.dir}/sshd.{name}.pid
AuthorizedKeysFile {self.dir}/authorized_keys
PermitRootLogin prohibit-password
PubkeyAuthentication yes
PasswordAuthentication no
KbdInteractiveAuthentication no
StrictModes no
UsePAM no
UseDNS no
MaxStartups 100
LogLevel ERROR
AcceptEnv {accept_env}
SetEnv SHLVL=1
""")
            log = open(self.dir / f"sshd.{name}.log", "wb")
            try:
                subprocess.Popen(self.command(name, [SSHD, "-D", "-e", "-f", str(config)]), stdout=log,
                                 stderr=log, stdin=subprocess.DEVNULL, start_new_session=True)
            finally:
                log.close()
        deadline = time.monotonic() + timeout
        for name, host in self.hosts.items():
            while True:
                probe = subprocess.run(["ip", "netns", "exec", host.netns, sys.executable, "-c",
                                        f"import socket; socket.create_connection(('{host.address}', 22), 1)"],
                                       capture_output=True, timeout=10)
                if probe.returncode == 0:
                    break
                if time.monotonic() > deadline:
                    log = (self.dir / f"sshd.{name}.log").read_text(errors="replace")[-500:]
                    raise LabUnavailable(f"sshd in {name} did not listen within {timeout:g} s: {log}")
                time.sleep(0.1)

    def ssh_flags(self, remote_python: str) -> list[str]:
        return ["--ssh-option", f"IdentityFile={self.client_key}", "--ssh-option", "IdentitiesOnly=yes",
                "--ssh-option", f"UserKnownHostsFile={self.known_hosts}",
                "--ssh-option", "GlobalKnownHostsFile=/dev/null",
                "--ssh-option", "StrictHostKeyChecking=accept-new", "--remote-python", remote_python]

    # ------------------------------------------------------------------ teardown

    def close(self) -> None:
        for netns in reversed(self.namespaces):
            _kill_namespace(netns)
        self.namespaces = []
        shutil.rmtree(self.dir, ignore_errors=True)
        try:
            ETC_NETNS.rmdir()  # only when empty: another live lab may still have its files there
        except OSError:
            pass
