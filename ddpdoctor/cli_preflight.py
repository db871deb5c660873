"""preflight command: filled in next."""
