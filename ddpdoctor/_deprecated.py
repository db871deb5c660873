"""`ddpdoctor.probe(...)` and `ddpdoctor.preflight(...)`, the API names of release 0.1, kept for
one release. They are also the names of packages, so the packages are given a callable module
class that forwards to api.py with a DeprecationWarning. Standard library only: every rank
imports ddpdoctor.probe, and must not pay for the API."""

import importlib
import sys
import types
import warnings


def make_callable(package: str, function: str) -> None:
    """Make the package `package` callable as ddpdoctor.api.`function`, with a warning."""

    class DeprecatedCallable(types.ModuleType):
        def __call__(self, *args, **kwargs):
            warnings.warn(f"ddpdoctor.{package.rsplit('.', 1)[-1]}(...) is deprecated; "
                          f"use ddpdoctor.{function}(...)", DeprecationWarning, stacklevel=2)
            return getattr(importlib.import_module("ddpdoctor.api"), function)(*args, **kwargs)

    sys.modules[package].__class__ = DeprecatedCallable
