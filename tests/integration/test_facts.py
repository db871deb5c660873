"""Node facts, the connect probe and the port listener, run for real on this machine."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time

import pytest

from ddpdoctor.preflight.node import facts, interfaces

from ddpdoctor.preflight.node import port_listener
from ddpdoctor.preflight.node.facts import MARKER, NodeFacts, probe_connect, torch_build
from ddpdoctor.preflight.node import payload
from tests.helpers.ports import free_port


def run_payload(program: bytes, env=None, isolated=True) -> subprocess.CompletedProcess:
    # -I -S: no site-packages, no PYTHONPATH, no ddpdoctor - a bare remote Python.
    flags = ["-I", "-S"] if isolated else []
    return subprocess.run([sys.executable, *flags, "-"], input=program, capture_output=True, timeout=60,
                          env=env, cwd="/")


def marked_facts(stdout: bytes) -> NodeFacts:
    lines = [ln for ln in stdout.decode().splitlines() if ln.startswith(MARKER)]
    assert len(lines) == 1, stdout
    return NodeFacts.from_dict(json.loads(lines[0][len(MARKER):]))


def test_local_facts_describe_this_machine():
    import torch

    f = facts.gather()
    assert f.hostname == socket.gethostname()
    assert f.python == "%d.%d.%d" % sys.version_info[:3]
    assert f.torch == torch.__version__ and f.torch_cuda == torch.version.cuda
    assert "lo" in f.interfaces and "127.0.0.1" in f.interfaces["lo"]
    assert f.shm_bytes and f.shm_bytes > 0 and f.nofile_soft and f.netns
    assert NodeFacts.from_dict(json.loads(f.to_json())) == f


def test_gathering_facts_does_not_import_torch():
    code = "import sys; from ddpdoctor.preflight.node import facts; f = facts.gather(); print(f.torch, 'torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    version, imported = out.stdout.split()
    assert version == torch_build()["__version__"] and imported == "False"


def test_shipped_program_runs_on_a_bare_python_and_redacts_secrets():
    env = {"PATH": os.environ["PATH"], "NCCL_DEBUG": "INFO", "NCCL_IB_SECRET_KEY": "hunter2hunter2",
           "MASTER_PORT": "29500", "HOME": "/nonexistent"}
    done = run_payload(payload.facts_program({"timeout": 5, "collected_by": "ssh"}), env=env)
    assert done.returncode == 0, done.stderr.decode()
    f = marked_facts(done.stdout)
    assert f.env == {"MASTER_PORT": "29500", "NCCL_DEBUG": "INFO", "NCCL_IB_SECRET_KEY": "<redacted>"}
    assert b"hunter2" not in done.stdout
    assert f.torch is None and any("torch is not installed" in n for n in f.notes)  # no site-packages
    assert f.collected_by == "ssh" and f.hostname == socket.gethostname()


def test_shipped_program_finds_torch_without_importing_it_when_site_packages_are_there():
    done = run_payload(payload.facts_program({"timeout": 5}), isolated=False)
    f = marked_facts(done.stdout)
    assert f.torch == torch_build()["__version__"]


@pytest.fixture
def listener():
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(8)
    yield sock
    sock.close()


def test_rendezvous_connect_ok(listener):
    result = probe_connect("127.0.0.1", listener.getsockname()[1], 2.0)
    assert result.status == "ok" and result.address == "127.0.0.1"


def test_rendezvous_connect_refused():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]  # bound, not listening: the kernel refuses connections
        result = probe_connect("127.0.0.1", port, 2.0)
    assert result.status == "refused" and "refused" in result.detail.lower()


def test_rendezvous_connect_timeout_when_packets_are_dropped():
    # A listener that never accepts, with its backlog full: the kernel drops further SYNs, which
    # is what a filtering firewall looks like from the client.
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(0)
    port = server.getsockname()[1]
    fillers = []
    try:
        for _ in range(4):
            filler = socket.socket()
            filler.settimeout(0.3)
            try:
                filler.connect(("127.0.0.1", port))
            except OSError:
                pass
            fillers.append(filler)
        began = time.monotonic()
        result = probe_connect("127.0.0.1", port, 0.5)
        assert result.status == "timeout" and time.monotonic() - began < 2.0
    finally:
        for filler in fillers:
            filler.close()
        server.close()


def test_rendezvous_connect_unresolvable():
    assert probe_connect("no-such-host.invalid", 29500, 2.0).status == "unresolvable"


def test_bind_rendezvous_names_the_process_holding_the_port(listener):
    port = listener.getsockname()[1]
    sock, info = port_listener.bind_rendezvous(port)
    assert sock is None and info["status"] == "in-use"
    assert info["holder_pid"] == os.getpid()
    assert info["holder_name"]


def test_bind_rendezvous_holds_a_free_port_for_connects():
    port = free_port()
    sock, info = port_listener.bind_rendezvous(port)
    try:
        assert info["status"] == "listening"
        assert probe_connect("127.0.0.1", port, 2.0).status == "ok"
    finally:
        sock.close()


def test_remote_listener_stops_when_its_stdin_closes():
    port = free_port()
    program = payload.listener_program({"port": port, "deadline": 30})
    bootstrap = "import sys,json;exec(json.loads(sys.stdin.readline()))"
    proc = subprocess.Popen([sys.executable, "-I", "-S", "-c", bootstrap], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        proc.stdin.write((json.dumps(program.decode()) + "\n").encode())
        proc.stdin.flush()
        line = proc.stdout.readline().decode()
        assert line.startswith(port_listener.LISTEN_MARKER)
        assert json.loads(line[len(port_listener.LISTEN_MARKER):])["status"] == "listening"
        assert probe_connect("127.0.0.1", port, 2.0).status == "ok"
        proc.stdin.close()
        assert proc.wait(timeout=5) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=5)


@pytest.mark.parametrize("module", [*payload.FACTS_MODULES, port_listener])
def test_shipped_modules_parse_as_python_3_7(module):
    import ast
    import re
    from pathlib import Path

    source = Path(module.__file__).read_text()
    ast.parse(source, feature_version=(3, 7))
    assert not re.search(r"^from __future__", source, re.M)  # a SyntaxError once concatenated


def test_netlink_interfaces_agree_with_psutil():
    psutil = pytest.importorskip("psutil")
    via_netlink = NodeFacts(hostname="x")
    if not interfaces._interfaces_from_netlink(via_netlink):
        pytest.skip("no rtnetlink here (not Linux)")
    via_psutil = NodeFacts(hostname="x")
    assert interfaces._interfaces_from_psutil(via_psutil)
    assert {k: sorted(v) for k, v in via_netlink.interfaces.items()} == \
        {k: sorted(v) for k, v in via_psutil.interfaces.items()}
    assert sorted(via_netlink.interfaces_down) == sorted(via_psutil.interfaces_down)
    assert psutil.net_if_addrs()  # the comparison above was not against an empty table


def test_shipped_modules_define_each_top_level_name_once():
    """Concatenated on a node, a name defined twice silently replaces the first (ncclib's resolver
    once shadowed interfaces.resolve)."""
    import ast
    from pathlib import Path

    owner: dict[str, str] = {}
    for module in payload.FACTS_MODULES:
        for stmt in ast.parse(Path(module.__file__).read_text()).body:
            names = [stmt.name] if isinstance(stmt, (ast.FunctionDef, ast.ClassDef)) else [
                t.id for t in getattr(stmt, "targets", []) if isinstance(t, ast.Name)]
            for name in names:
                assert owner.setdefault(name, module.__name__) == module.__name__, (name, owner[name], module.__name__)


def test_gpu_only_parts_travel_as_text_and_compile_on_a_node_when_needed():
    text = payload.facts_program({"timeout": 5}).decode()
    import ast

    compiled = {n.name for n in ast.parse(text).body if isinstance(n, ast.FunctionDef)}
    assert "read_gpu_health" not in compiled and "nccl_library" not in compiled  # text until needed
    head = text[:text.rindex("\nimport json as _json")]
    smi = "Driver Version : 550.54.15\\nCUDA Version : 12.4\\n"
    check = (f"\nload_lazy('ncclib'); load_lazy('gpuhealth')\n"
             f"print(callable(nccl_library), callable(read_gpu_health), parse_smi_query('{smi}')['cuda'])\n")
    done = run_payload((head + check).encode())
    assert done.returncode == 0, done.stderr.decode()
    assert done.stdout.decode().split() == ["True", "True", "12.4"]
