"""A real OpenSSH server on loopback addresses, for the tests and the fan-out benchmark.

Keys, config and logs live in a temporary directory. The server listens only on 127.0.0.1 and
the other loopback addresses asked for (127.0.0.2, 127.0.0.3, ...), never on 0.0.0.0: every one
of those addresses is a distinct "remote" host to ddpdoctor. OpenSSH accepts at most 16 listen
addresses per server, so more hosts means more sshd processes sharing one port and one host key.

Independent of ddpdoctor (the benchmark imports it by path). Every wait has a deadline; `stop()`
kills and reaps every sshd it started.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Optional

from ddpdoctor.probe.inrank.parent_death import die_with_parent
from tests.helpers.ports import free_port

SSHD = "/usr/sbin/sshd"
MAX_LISTEN_PER_SSHD = 16  # OpenSSH's MAX_LISTEN_SOCKS


class SshdUnavailable(Exception):
    """This machine cannot run the test sshd (not root, no OpenSSH server); the reason says which."""


def loopback_hosts(count: int, first: int = 2) -> list[str]:
    """127.0.0.<first> .. : addresses that route to this machine but are not its own."""
    if first + count - 1 > 254:
        raise ValueError("at most 253 loopback hosts")
    return [f"127.0.0.{i}" for i in range(first, first + count)]


def unavailable_reason() -> Optional[str]:
    if os.geteuid() != 0:
        return "the test sshd needs root (sshd's privilege separation): run the tests as root"
    for tool in (SSHD, shutil.which("ssh-keygen"), shutil.which("ssh")):
        if not tool or not os.path.exists(tool):
            return ("OpenSSH (sshd, ssh, ssh-keygen) is not installed: "
                    "apt-get install openssh-server openssh-client")
    return None


def _keygen(path: Path) -> None:
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "ddpdoctor-test", "-f", str(path)],
                   check=True, timeout=30, stdin=subprocess.DEVNULL)


class LoopbackSshd:
    """`with LoopbackSshd(hosts=["127.0.0.1", "127.0.0.2"]) as server: server.port ...`"""

    def __init__(self, hosts: Optional[list[str]] = None, extra_config: str = "", skip_bashrc: bool = True):
        self.hosts = list(hosts or ["127.0.0.1"])
        self.extra_config = extra_config
        # Debian's bash sources ~/.bashrc for every ssh command unless SHLVL is already set; on
        # some images that file runs `pyenv init` (~0.3 s of CPU per login), which would swamp
        # what the tests and the benchmark measure. Real nodes keep their own login behaviour.
        self.skip_bashrc = skip_bashrc
        self.dir = Path(tempfile.mkdtemp(prefix="ddpdoctor-sshd-"))
        self.port = 0
        self.client_key = self.dir / "client_key"
        self.host_key = self.dir / "host_key"
        self.known_hosts = self.dir / "known_hosts"
        self.procs: list[subprocess.Popen] = []

    def __enter__(self) -> "LoopbackSshd":
        self.start()
        return self

    def __exit__(self, *exc) -> None:
        self.stop()

    def start(self, timeout: float = 15.0) -> None:
        reason = unavailable_reason()
        if reason:
            raise SshdUnavailable(reason)
        os.makedirs("/run/sshd", mode=0o755, exist_ok=True)  # sshd's privilege-separation dir
        _keygen(self.host_key)
        _keygen(self.client_key)
        shutil.copy(f"{self.client_key}.pub", self.dir / "authorized_keys")
        self.known_hosts.touch()
        self.port = free_port()
        try:
            for i in range(0, len(self.hosts), MAX_LISTEN_PER_SSHD):
                self.procs.append(self._start_one(i // MAX_LISTEN_PER_SSHD,
                                                  self.hosts[i:i + MAX_LISTEN_PER_SSHD]))
            self._wait_listening(timeout)
        except BaseException:
            self.stop()
            raise

    def _start_one(self, index: int, hosts: list[str]) -> subprocess.Popen:
        config = self.dir / f"sshd_config.{index}"
        listen = "\n".join(f"ListenAddress {h}" for h in hosts)
        config.write_text(f"""\
Port {self.port}
{listen}
HostKey {self.host_key}
PidFile {self.dir}/sshd.{index}.pid
AuthorizedKeysFile {self.dir}/authorized_keys
PermitRootLogin prohibit-password
PubkeyAuthentication yes
PasswordAuthentication no
KbdInteractiveAuthentication no
StrictModes no
UsePAM no
UseDNS no
MaxStartups 200
MaxSessions 200
LogLevel ERROR
{"SetEnv SHLVL=1" if self.skip_bashrc else ""}
{self.extra_config}
""")
        log = open(self.dir / f"sshd.{index}.log", "wb")
        try:
            # Dies with the test process that started it, even one killed outright (an
            # interrupted pytest run must not leave a listening sshd behind).
            return subprocess.Popen([SSHD, "-D", "-e", "-f", str(config)], stdout=log, stderr=log,
                                    stdin=subprocess.DEVNULL, start_new_session=True,
                                    preexec_fn=die_with_parent)
        finally:
            log.close()

    def _wait_listening(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        pending = list(self.hosts)
        while pending:
            for proc in self.procs:
                if proc.poll() is not None:
                    raise SshdUnavailable(f"sshd exited with {proc.returncode}: {self.log_tail()}")
            host = pending[0]
            try:
                with socket.create_connection((host, self.port), timeout=0.5):
                    pending.pop(0)
                    continue
            except OSError:
                pass
            if time.monotonic() > deadline:
                raise SshdUnavailable(f"sshd did not listen on {host}:{self.port} within {timeout:g} s: "
                                      f"{self.log_tail()}")
            time.sleep(0.05)

    def log_tail(self) -> str:
        text = "".join(p.read_text(errors="replace") for p in sorted(self.dir.glob("sshd.*.log")))
        return text.strip()[-800:]

    def ssh_flags(self, remote_python: Optional[str] = None) -> list[str]:
        """The ddpdoctor flags that make its ssh use this server. Accepting new host keys is the
        test's explicit choice, as it would be a user's."""
        flags = ["--ssh-port", str(self.port),
                 "--ssh-option", f"IdentityFile={self.client_key}",
                 "--ssh-option", "IdentitiesOnly=yes",
                 "--ssh-option", f"UserKnownHostsFile={self.known_hosts}",
                 "--ssh-option", "GlobalKnownHostsFile=/dev/null",
                 "--ssh-option", "StrictHostKeyChecking=accept-new"]
        if remote_python:
            flags += ["--remote-python", remote_python]
        return flags

    def stop(self) -> None:
        for proc in self.procs:
            if proc.poll() is None:
                try:
                    os.killpg(proc.pid, signal.SIGTERM)
                except ProcessLookupError:
                    pass
        for proc in self.procs:
            try:
                proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                try:
                    os.killpg(proc.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
                proc.wait(timeout=5)
        self.procs = []
        shutil.rmtree(self.dir, ignore_errors=True)
