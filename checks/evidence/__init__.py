"""Checks over the evidence a dead job left (logs, error files, dumps): what only a post-mortem shows (DDP508-DDP515)."""
