"""`ddpdoctor.probe(...)` and `ddpdoctor.preflight(...)`, the API names of release 0.1, kept for
one release. They are also the names of packages, so the packages are given a callable module
class that forwards to the new public name with a DeprecationWarning. Standard library only:
every rank imports ddpdoctor.probe, and must not pay for the API.

The forward goes through the root package's lazy attribute (`ddpdoctor.run_probe`, the name the
warning tells users to call), never an import of api.py: api.py imports the packages this shim
makes callable, so naming it here would close a circle (core.deprecated -> api -> preflight.run ->
core.deprecated). Delete this module, and its three make_callable lines, in the release after."""

import sys
import types
import warnings


def make_callable(package: str, function: str) -> None:
    """Make the package `package` callable as ddpdoctor.api.`function`, with a warning."""

    class DeprecatedCallable(types.ModuleType):
        def __call__(self, *args, **kwargs):
            warnings.warn(f"ddpdoctor.{package.rsplit('.', 1)[-1]}(...) is deprecated; "
                          f"use ddpdoctor.{function}(...)", DeprecationWarning, stacklevel=2)
            # The root package is always imported before any of its subpackages.
            return getattr(sys.modules["ddpdoctor"], function)(*args, **kwargs)

    sys.modules[package].__class__ = DeprecatedCallable
