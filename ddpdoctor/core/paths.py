"""A file's path as a user reads it, the same wherever it is said.

Standard library only: code inside the user's ranks imports this (inrank/recorder.py names
call sites with it).
"""

import os
import site
import sysconfig

# The ddpdoctor package's own directory: its frames are never the user's, wherever it lies (a
# checkout of this project is often itself a folder named "ddpdoctor").
OWN_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep


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


def package_dirs() -> set[str]:
    """Where this Python keeps installed packages: its site-packages (purelib, platlib, the
    site module's own list) and the user's. Never the user's code (recorder.py's call sites,
    stack_view.py's user frames)."""
    dirs = {sysconfig.get_paths().get(key) or "" for key in ("purelib", "platlib")}
    try:
        dirs.update(site.getsitepackages())
        dirs.add(site.getusersitepackages())
    except (AttributeError, TypeError):  # an old virtualenv's site.py
        pass
    return {d for d in dirs if d}
