"""Gather a node's facts over ssh: `ssh [options] -- HOST python3 -`, the program on stdin.

Never a shell string built from a hostname: ssh gets an argument list, the host comes after `--`
and has been validated, and the only words the remote shell sees are the Python to run. Host-key
checking is left as the user configured it; `--ssh-option StrictHostKeyChecking=...` is theirs
to pass. BatchMode=yes makes ssh fail instead of prompting: preflight must never sit waiting for
a password nobody will type.
"""

from __future__ import annotations

import json
import math
import re
import shlex
from dataclasses import dataclass, field
from typing import Optional

from ddpdoctor.core import defaults, redact
from ddpdoctor.core.errors import UsageError
from ddpdoctor.preflight.node.facts import MARKER, NodeFacts
from ddpdoctor.preflight.node import payload
from ddpdoctor.preflight.transport import FactsRequest, TransportFailure, child

_OPTION = re.compile(r"^[A-Za-z][A-Za-z0-9]*=[^\n\r\0]*$")
_USER = re.compile(r"^[A-Za-z0-9_.][A-Za-z0-9_.-]*$")
# Allowed unquoted in the remote command: a path or a name, `~` still expands.
_PYTHON = re.compile(r"^[A-Za-z0-9_./~+][A-Za-z0-9_./~+-]*$")
# `python3 -` reads its whole stdin before running, so a program that needs stdin as a live
# channel (the port listener) is sent as one JSON line and exec'd by this bootstrap instead.
_LINE_BOOTSTRAP = "import sys,json;exec(json.loads(sys.stdin.readline()))"


@dataclass
class SshOptions:
    user: Optional[str] = None
    port: Optional[int] = None
    options: list[str] = field(default_factory=list)  # KEY=VALUE, each passed as -o KEY=VALUE
    remote_python: str = defaults.REMOTE_PYTHON
    executable: str = "ssh"

    def validate(self) -> "SshOptions":
        """Raise UsageError for anything that could be taken for an ssh flag or a shell word."""
        for opt in self.options:
            if not _OPTION.match(opt):
                raise UsageError(f"--ssh-option must be KEY=VALUE, e.g. StrictHostKeyChecking=accept-new (got {opt!r})")
        if self.user is not None and not _USER.match(self.user):
            raise UsageError(f"--ssh-user {self.user!r} is not a valid user name")
        if self.port is not None and not 1 <= self.port <= 65535:
            raise UsageError(f"--ssh-port must be 1-65535 (got {self.port})")
        if not _PYTHON.match(self.remote_python):
            raise UsageError(f"--remote-python {self.remote_python!r} must be a plain path or command name")
        return self


def ssh_argv(host: str, opts: SshOptions, timeout: float, remote_command: str) -> list[str]:
    """The ssh argument list. Our BatchMode comes first (ssh keeps the first value it sees, so a
    user option cannot turn prompting back on); ConnectTimeout comes after the user's options so
    theirs wins; our own deadline still bounds everything."""
    argv = [opts.executable, "-T", "-x", "-a", "-o", "BatchMode=yes"]
    for opt in opts.options:
        argv += ["-o", opt]
    argv += ["-o", f"ConnectTimeout={max(1, math.ceil(timeout * 0.6))}"]
    if opts.port is not None:
        argv += ["-p", str(opts.port)]
    if opts.user:
        argv += ["-l", opts.user]
    return argv + ["--", host, remote_command]


def facts_over_ssh(host: str, request: FactsRequest, opts: SshOptions) -> NodeFacts | TransportFailure:
    """Run the facts program on `host`; its facts, or why not."""
    argv = ssh_argv(host, opts, request.timeout, f"{opts.remote_python} -")
    done = child.run(argv, payload.facts_program(request.params("ssh")), request.timeout)
    stdout = done.stdout.decode("utf-8", errors="replace")
    stderr = done.stderr.decode("utf-8", errors="replace")
    if done.timed_out:
        return TransportFailure("timeout", f"ssh to {host} gave no answer within {request.timeout:g} s",
                                _last_line(stderr), None, done.seconds)
    for line in stdout.splitlines():
        if line.startswith(MARKER):
            try:
                facts = NodeFacts.from_dict(json.loads(line[len(MARKER):]))
            except ValueError as exc:
                return TransportFailure("other", f"{host} answered with unreadable facts: {exc}",
                                        "", done.returncode, done.seconds)
            facts.collected_by = "ssh"
            return facts
    return classify(host, done.returncode, stderr, opts, done.seconds)


# (kind, pattern in ssh's or the shell's stderr), first match wins. Host keys come first: the
# changed-key banner is many lines long and would otherwise match later, vaguer patterns.
_PATTERNS = [
    ("host-key", r"REMOTE HOST IDENTIFICATION HAS CHANGED|Host key verification failed|"
                 r"No \S+ host key is known|host key for .* has changed"),
    ("unresolvable", r"Could not resolve hostname|Name or service not known|nodename nor servname"),
    ("refused", r"Connection refused"),
    ("timeout", r"timed out|Connection timed out|Operation timed out"),
    ("unreachable", r"No route to host|Network is unreachable|Host is unreachable"),
    ("auth", r"Permission denied|Too many authentication failures|Authentication failed|"
             r"no matching host key type|publickey"),
    ("no-python", r"command not found|No such file or directory|not found"),
]

_MESSAGES = {
    "host-key": "ssh refused {host}: its host key is unknown or has changed",
    "unresolvable": "ssh cannot resolve {host}",
    "refused": "ssh to {host} was refused: nothing listens on its ssh port",
    "timeout": "ssh to {host} timed out",
    "unreachable": "{host} is unreachable from this machine",
    "auth": "ssh to {host} was denied: authentication failed",
    "no-python": "{host} has no {python} to run the facts program",
    "other": "ssh to {host} failed (exit {code})",
}


def classify(host: str, code: Optional[int], stderr: str, opts: SshOptions,
             seconds: float = 0.0) -> TransportFailure:
    """Turn a failed ssh into a kind, a message and the stderr line that shows it."""
    lines = _lines(stderr)
    kind, evidence = "other", _last_line(stderr)
    for candidate, pattern in _PATTERNS:
        hit = next((ln for ln in lines if re.search(pattern, ln)), None)
        if hit is None:
            continue
        if candidate == "no-python" and code not in (126, 127):
            continue  # "not found" from elsewhere is not a missing interpreter
        kind, evidence = candidate, hit
        break
    if kind == "other" and code in (126, 127):
        kind = "no-python"
    if kind == "other" and code not in (None, 255) and lines:
        # ssh itself worked (255 is ssh's own failure): the remote program failed.
        message = f"the facts program failed on {host} (exit {code})"
    else:
        message = _MESSAGES[kind].format(host=host, python=opts.remote_python, code=code)
    return TransportFailure(kind, message, redact.scrub(evidence)[:300], code, seconds)


def _lines(text: str) -> list[str]:
    # ssh's notice about a newly accepted host key (accept-new) is not evidence of anything.
    return [ln.strip() for ln in text.splitlines()
            if ln.strip() and not ln.startswith("Warning: Permanently added")]


def _last_line(text: str) -> str:
    lines = _lines(text)
    return redact.scrub(lines[-1])[:300] if lines else ""


def start_line_program(host: str, opts: SshOptions, timeout: float):
    """Start `python -c BOOTSTRAP` on `host`, for a program sent as one JSON line whose stdin stays
    open afterwards (see port_listener). Returns the tracked Popen."""
    command = f"{opts.remote_python} -c {shlex.quote(_LINE_BOOTSTRAP)}"
    return child.start(ssh_argv(host, opts, timeout, command))


def encode_line_program(program: bytes) -> bytes:
    return (json.dumps(program.decode("utf-8")) + "\n").encode("utf-8")
