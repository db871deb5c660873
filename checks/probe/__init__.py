"""Checks over the telemetry of a probe run (DDP3xx .. DDP7xx)."""
