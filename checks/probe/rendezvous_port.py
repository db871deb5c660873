"""DDP104 judges the probe's rendezvous port too: its one check lives with preflight's port test
(checks/preflight/rendezvous_port_free.py, declared for the probe stage as well); importing it
here is what puts it in the probe's run, whose discovery imports only this package."""

from ddpdoctor.checks.preflight import rendezvous_port_free  # noqa: F401 - registers DDP104
