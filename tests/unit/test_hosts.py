"""Host lists: every format, SLURM expansion, and bad input that must stop before ssh sees it."""

from __future__ import annotations

import socket

import pytest
from hypothesis import given, strategies as st

from ddpdoctor.core.errors import UsageError
from ddpdoctor.preflight.hosts import (HostEntry, default_hosts, expand_hostlist, parse_host_file,
                             parse_host_text, split_outside_brackets, validate_hostname)


def names(entries):
    return [e.name for e in entries]


def test_plain_lines_comments_and_blank_lines():
    text = "# cluster A\n\ngpu01\n  gpu02   # the spare one\n10.0.0.3\n"
    entries = parse_host_text(text, "hosts.txt")
    assert entries == [HostEntry("gpu01", None, "hosts.txt:3"), HostEntry("gpu02", None, "hosts.txt:4"),
                       HostEntry("10.0.0.3", None, "hosts.txt:5")]


def test_deepspeed_and_openmpi_slots():
    entries = parse_host_text("gpu01 slots=8\ngpu02 max_slots=4\ngpu03 slots=2 max_slots=8\ngpu04 max-slots=3\n", "h")
    assert [(e.name, e.slots) for e in entries] == [("gpu01", 8), ("gpu02", 4), ("gpu03", 2), ("gpu04", 3)]


def test_horovod_host_colon_slots():
    entries = parse_host_text("gpu01:4\ngpu02:8,gpu03:2\n[fd00::5]:4\n", "h")
    assert [(e.name, e.slots) for e in entries] == [("gpu01", 4), ("gpu02", 8), ("gpu03", 2), ("fd00::5", 4)]


def test_slurm_hostlist_with_ranges_and_zero_padding():
    assert expand_hostlist("node[01-04,07]") == ["node01", "node02", "node03", "node04", "node07"]
    assert expand_hostlist("node[8-11]") == ["node8", "node9", "node10", "node11"]
    assert expand_hostlist("node[098-101]") == ["node098", "node099", "node100", "node101"]


def test_slurm_hostlist_with_several_bracket_groups_varies_the_last_fastest():
    assert expand_hostlist("rack[1-2]-node[01-02]") == [
        "rack1-node01", "rack1-node02", "rack2-node01", "rack2-node02"]


def test_commas_inside_brackets_do_not_split_hosts():
    assert split_outside_brackets("a[1,3-4],b,c[01-02]") == ["a[1,3-4]", "b", "c[01-02]"]
    entries = parse_host_text("gpu[1,3],cpu[01-02] slots=2\n", "h")
    assert [(e.name, e.slots) for e in entries] == [("gpu1", 2), ("gpu3", 2), ("cpu01", 2), ("cpu02", 2)]


def test_ipv6_addresses_bare_and_bracketed():
    entries = parse_host_text("fd00::2\n[::1]\n", "h")
    assert names(entries) == ["fd00::2", "::1"]


def test_file_errors_name_file_and_line(tmp_path):
    path = tmp_path / "hosts.txt"
    path.write_text("gpu01\n# fine\ngpu02 slots=eight\n")
    with pytest.raises(UsageError, match=r"hosts.txt:3: slots must be a whole number"):
        parse_host_file(path)


@pytest.mark.parametrize("line, why", [
    ("node[01-04", "'\\[' without '\\]'"),
    ("node01-04]", "'\\]' without '\\['"),
    ("node[04-01]", "runs backwards"),
    ("node[a-b]", "bad range"),
    ("node[[1-2]]", "nested"),
    ("gpu01 gpu02", "unexpected 'gpu02'"),
    ("gpu01 cpus=4", "unknown field 'cpus'"),
    ("gpu01 slots=0", "at least 1"),
    ("gpu01:0", "at least 1"),
    ("gpu01:4 slots=4", "slots twice"),
    ("gpu01,,gpu02", "empty host"),
    ("node[1-1000000]", "too large"),
])
def test_malformed_lines_are_usage_errors_with_file_and_line(line, why):
    with pytest.raises(UsageError, match=rf"^hosts:2: .*{why}"):
        parse_host_text(f"ok-host\n{line}\n", "hosts")


@pytest.mark.parametrize("evil", [
    "-oProxyCommand=touch /tmp/pwned",
    "gpu01;reboot",
    "gpu01$(id)",
    "`id`",
    "gpu 01",
    "gpu01|cat",
    "gpu01&",
    "host'name",
    "-p22",
    "a" * 64,
    "gpu01.-bad",
])
def test_injection_and_junk_host_names_are_rejected(evil):
    with pytest.raises(ValueError):
        validate_hostname(evil)
    with pytest.raises(UsageError):
        parse_host_text(evil.replace(" ", "") + "\n" if " " not in evil else evil + "\n", "hosts")


@pytest.mark.parametrize("good", ["gpu01", "node-7.cluster.internal", "GPU_01", "10.1.2.3", "fe80::1",
                                  "[fd00::2]", "localhost", "x"])
def test_valid_names_pass_validation(good):
    assert validate_hostname(good) == good.strip("[]")


def test_missing_and_empty_files_are_usage_errors(tmp_path):
    with pytest.raises(UsageError, match="nodes file not found"):
        parse_host_file(tmp_path / "nope.txt")
    empty = tmp_path / "empty.txt"
    empty.write_text("# nothing here\n\n")
    with pytest.raises(UsageError, match="no hosts"):
        parse_host_file(empty)


def test_default_hosts_come_from_slurm_nodelist():
    entries = default_hosts({"SLURM_JOB_NODELIST": "gpu[01-02],cpu05"})
    assert names(entries) == ["gpu01", "gpu02", "cpu05"]
    assert all(e.source_line == "$SLURM_JOB_NODELIST" for e in entries)


def test_bad_slurm_nodelist_is_a_usage_error_naming_the_variable():
    with pytest.raises(UsageError, match=r"\$SLURM_JOB_NODELIST"):
        default_hosts({"SLURM_JOB_NODELIST": "gpu[01-"})


def test_without_slurm_the_default_is_this_machine():
    assert default_hosts({}) == [HostEntry(socket.gethostname(), None, "this machine")]


@given(st.lists(st.integers(min_value=0, max_value=999), min_size=1, max_size=20, unique=True),
       st.integers(min_value=1, max_value=4))
def test_expansion_of_a_single_list_gives_every_number_padded(numbers, width):
    body = ",".join(str(n).zfill(width) for n in numbers)
    assert expand_hostlist(f"n[{body}]") == [f"n{str(n).zfill(width)}" for n in numbers]
