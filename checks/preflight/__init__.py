"""Checks over the facts of the nodes, before a job (DDP1xx, DDP2xx)."""
