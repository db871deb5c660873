"""Shared test code: runners for the CLI, the probe and fault scripts, a loopback sshd, network
namespaces, telemetry builders and recorded preflight facts. Imported as `tests.helpers.X`
(the repo root is on pytest's `pythonpath`), never through a sys.path edit."""
