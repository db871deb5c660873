"""A file's path as a user reads it, the same wherever it is said.

Standard library only: code inside the user's ranks imports this (inrank/recorder.py names
call sites with it).
"""

import os


def display_path(path) -> str:
    """Relative to the working directory when the file lies beneath it, else as given: how the
    probe's call sites, the lint's findings and the coverage summary all name one file, so that
    a lint finding and a probe finding about the same line say the same file."""
    text = os.fspath(path)
    try:
        rel = os.path.relpath(text)
    except ValueError:
        return text
    return text if rel.startswith("..") else rel
