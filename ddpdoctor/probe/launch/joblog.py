"""RUN_DIR/job.log: the job's stdout and stderr, with secret values replaced on the way in.

A script that prints its own token, or a traceback that quotes one, must not leave a copy in the
run dir, which CI jobs upload as an artifact. The job writes into a pipe; a thread of ddpdoctor
copies what arrives to job.log as it arrives, every value of a secret-looking environment
variable (redact.py) replaced. A secret cut in two by a read is held back until the next read
says whether it continues, so it is never written in pieces.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import threading
from pathlib import Path
from typing import Optional

from ddpdoctor.core import redact
from ddpdoctor.probe.launch.log_cap import DEFAULT_LIMIT_MB, LogCap
READ_BYTES = 65536
REDACTED = redact.REDACTED.encode()
# torchrun's --tee with this line prefix: every line of a rank's output arrives `[rank1]: ...`,
# as torchrun users know it, whole (the prefix and the line go out in one write).
RANK_PREFIX_TEMPLATE = "[rank${rank}]: "
TEE_DIR_PREFIX = "ddpdoctor-tee-"


def _remove_orphan_tee_dirs() -> None:
    """torchrun's raw copies left by a ddpdoctor that was killed (SIGKILL) before its cleanup:
    their directory names the pid that made them, no longer alive."""
    root = tempfile.gettempdir()
    try:
        names = [n for n in os.listdir(root) if n.startswith(TEE_DIR_PREFIX)]
    except OSError:
        return
    for name in names:
        pid = name[len(TEE_DIR_PREFIX):].split("-", 1)[0]
        if not pid.isdigit() or _alive(int(pid)):
            continue
        shutil.rmtree(os.path.join(root, name), ignore_errors=True)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # EPERM: someone else's process, alive
        return True
    return True


def scrub_bytes(data: bytes, secrets: list[bytes]) -> bytes:
    for secret in secrets:
        if secret in data:
            data = data.replace(secret, REDACTED)
    return data


def _held_back(data: bytes, secrets: list[bytes]) -> int:
    """How many bytes at the end of `data` could be the start of a secret."""
    hold = 0
    for secret in secrets:
        for size in range(min(len(secret) - 1, len(data)), hold, -1):
            if data.endswith(secret[:size]):
                hold = size
                break
    return hold


class JobLog:
    """`with JobLog(path) as log: Popen(..., stdout=log.fd, stderr=STDOUT)`; leaving the block
    waits (boundedly) until the job's last writer is gone and job.log holds everything."""

    def __init__(self, path: str | os.PathLike, secrets: Optional[list[str]] = None,
                 limit_mb: float = DEFAULT_LIMIT_MB) -> None:
        self.path = Path(path)
        self.cap = LogCap(limit_mb)
        self.error: Optional[str] = None  # the first write that failed (a full disk, the dir gone)
        values = redact.secret_values() if secrets is None else secrets
        self.secrets = [v.encode("utf-8", "surrogateescape") for v in values]
        # Unbuffered: on a full disk a write fails now and is dropped, never later at close.
        self._file = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        # Non-inheritable (os.pipe's default): only the job's stdout/stderr hold the write end.
        self._read, self.fd = os.pipe()
        self._thread = threading.Thread(target=self._copy, name="ddpdoctor-job-log", daemon=True)
        self._thread.start()
        self._tee_dir: Optional[str] = None  # with_rank_prefixes

    def __enter__(self) -> "JobLog":
        return self

    def with_rank_prefixes(self, env: dict[str, str], launcher: str) -> dict[str, str]:
        """`env` for torchrun, each rank's lines prefixed with its rank (--tee). torchrun's tee
        also keeps a raw per-rank copy in its log dir: unless the user chose that dir
        (PET_LOG_DIR), it is a private temporary one, removed when the job ends, so that the only
        copy left is job.log, scrubbed."""
        if launcher != "torchrun":
            return env
        env = dict(env)
        env.setdefault("PET_TEE", "3")
        env.setdefault("TORCHELASTIC_LOG_LINE_PREFIX_TEMPLATE", RANK_PREFIX_TEMPLATE)
        if "PET_LOG_DIR" not in os.environ:
            if self._tee_dir is None:
                _remove_orphan_tee_dirs()
                self._tee_dir = tempfile.mkdtemp(prefix=f"{TEE_DIR_PREFIX}{os.getpid()}-")
            env["PET_LOG_DIR"] = self._tee_dir
        return env

    def __exit__(self, *exc) -> None:
        self.close()

    def _copy(self) -> None:
        pending = b""
        while True:
            try:
                chunk = os.read(self._read, READ_BYTES)
            except OSError:
                chunk = b""
            if not chunk:
                break
            data = scrub_bytes(pending + chunk, self.secrets)
            keep = _held_back(data, self.secrets)
            pending = data[len(data) - keep:] if keep else b""
            self._write(data[:len(data) - keep])
        self._write(scrub_bytes(pending, self.secrets))
        self._write(self.cap.finish(), capped=False)
        os.close(self._read)

    def _write(self, data: bytes, capped: bool = True) -> None:
        if capped:
            data = self.cap.admit(data)
        if not data:
            return
        try:
            os.write(self._file, data)
        except OSError as exc:
            # A full disk must not stop the copy (the job would block on a full pipe); the
            # launcher sees `error` and ends the job with a clear line.
            if self.error is None:
                self.error = f"cannot write {self.path}: {exc.strerror or exc}"

    def close(self, timeout: float = 5.0) -> None:
        """Stop writing: our copy of the write end closes, so the copy ends once the job's
        processes (all ended by then) have let go of theirs. A process that escaped and keeps the
        pipe open cannot hold ddpdoctor for more than `timeout`."""
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1
        self._thread.join(timeout)
        if self._tee_dir is not None:
            shutil.rmtree(self._tee_dir, ignore_errors=True)
            self._tee_dir = None
        if not self._thread.is_alive():
            try:
                os.close(self._file)
            except OSError:
                pass
