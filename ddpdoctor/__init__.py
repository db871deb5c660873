"""ddpdoctor: find out why a PyTorch DDP run hangs, crashes or crawls."""

__version__ = "0.1.0"

__all__ = ["__version__", "preflight", "probe"]


def __getattr__(name: str):
    # `ddpdoctor.probe(...)` and `ddpdoctor.preflight(...)` (api.py): the modules of those names,
    # made callable. Imported on first use, so that `import ddpdoctor` stays cheap (no torch).
    if name in ("probe", "preflight"):
        import importlib

        return importlib.import_module(f"ddpdoctor.{name}")
    raise AttributeError(f"module 'ddpdoctor' has no attribute {name!r}")
