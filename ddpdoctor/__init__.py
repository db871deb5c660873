"""ddpdoctor: find out why a PyTorch DDP run hangs, crashes or crawls."""

from ddpdoctor.core.version import __version__

__all__ = ["__version__", "run_preflight", "run_probe"]


def __getattr__(name: str):
    # Imported on first use, so that `import ddpdoctor` stays cheap (no torch, no typer).
    if name in ("run_probe", "run_preflight"):
        from ddpdoctor import api

        return getattr(api, name)
    if name in ("probe", "preflight"):  # release 0.1's callables (core/deprecated.py)
        import importlib

        return importlib.import_module(f"ddpdoctor.{name}")
    raise AttributeError(f"module 'ddpdoctor' has no attribute {name!r}")
