"""probe command: filled in next."""
