"""Holds the sitecustomize that --launcher none puts on PYTHONPATH (not imported as a package)."""
