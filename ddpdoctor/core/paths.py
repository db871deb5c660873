"""A file's path as a user reads it, the same wherever it is said, and the one rule for which
files are the user's own code.

Standard library only: code inside the user's ranks imports this (inrank/recorder.py names
call sites with it).
"""

import functools
import os
import re
import site
import sys
import sysconfig

# The ddpdoctor package's own directory: its frames are never the user's, wherever it lies (a
# checkout of this project is often itself a folder named "ddpdoctor").
OWN_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep
# The folder that holds that package: what goes on sys.path for `import ddpdoctor` to be this
# copy. The one home for ddpdoctor's own folder; the two places that run before ddpdoctor can be
# imported (inrank/bootstrap.py run by its path, inrank/site/sitecustomize.py) derive it from
# their own file the same way, and tests/unit/test_own_folder.py holds them to this.
OWN_ROOT = os.path.dirname(OWN_DIR.rstrip(os.sep))
# Every ddpdoctor directory whose frames are ddpdoctor's: this process's, and the one each rank
# imported (its Start record says which; note_own_dir). A rank may import another copy than
# the parent (a checkout in the job's folder, another node's install).
_OWN_DIRS = [OWN_DIR]

_LIBRARY_SEGMENTS = {"site-packages", "dist-packages", "torch", "torchvision"}
# Standard-library names a user plausibly gives a script or folder of their own.
_USER_PLAUSIBLE = {"test", "tests", "code", "this", "site", "main", "data", "model", "train"}
_STDLIB = set(getattr(sys, "stdlib_module_names", ())) - _USER_PLAUSIBLE
_PYTHON_DIR = re.compile(r"^python\d+(\.\d+)?$")


def note_own_dir(path: str) -> None:
    """A ddpdoctor package directory a rank imported (its Start record): its frames are
    ddpdoctor's, never the user's, wherever it lies."""
    if not path or not os.path.isabs(path):
        return
    directory = os.path.normpath(path) + os.sep
    if directory not in _OWN_DIRS:
        _OWN_DIRS.append(directory)
        is_user_file.cache_clear()


def is_own_file(path: str) -> bool:
    """A file of ddpdoctor itself (any copy the job imported)."""
    return os.path.abspath(path).startswith(tuple(_OWN_DIRS))


@functools.lru_cache(maxsize=8192)
def is_user_file(path: str) -> bool:
    """The one rule for "the user's code", for the ranks' call sites (inrank/recorder.py) and
    every stack read afterwards (run_model/stack_view.py, attach): not ddpdoctor, not torch,
    not an installed package, not the standard library. Paths may be absolute (a code object,
    faulthandler) or short the way py-spy and stack_text.short_library_path give them
    ("torch/nn/module.py", "threading.py")."""
    if not path or path.startswith("<"):
        return False
    parts = [p for p in path.replace("\\", "/").split("/") if p]
    if not parts or is_own_file(path):
        return False
    for part in parts[:-1]:
        if part in _LIBRARY_SEGMENTS or _PYTHON_DIR.match(part):
            return False
    # A relative path that starts with an installed package is that package's, unless the
    # job's directory has it (the user's own folder of that name).
    head = parts[0].removesuffix(".py") if len(parts) == 1 else parts[0]
    if not path.startswith("/") and (head in _STDLIB or head == "ddpdoctor" or (
            head in installed_top_level() and not os.path.exists(path))):
        return False
    return True


@functools.lru_cache(maxsize=1)
def installed_top_level() -> frozenset:
    """The top-level modules and packages of this Python's site-packages (transformers,
    lightning, accelerate, sympy, ...): one listing of each directory, once."""
    names = set()
    for directory in package_dirs():
        try:
            entries = os.listdir(directory)
        except OSError:
            continue
        for entry in entries:
            if entry.endswith(".py"):
                names.add(entry[:-3])
            elif "." not in entry and entry != "__pycache__":
                names.add(entry)
    return frozenset(names)


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
