"""Numbers as a person reads them: durations, estimates and byte counts."""

from __future__ import annotations


def estimate(seconds: float) -> str:
    """An estimated duration, with no more digits than it deserves: ~6 ms, ~41 ms, ~1.2 s."""
    value = seconds * 1e3
    if value >= 1000:
        return f"~{seconds:.2g} s" if seconds < 10 else f"~{seconds:.0f} s"
    if value >= 10:
        return f"~{value:.0f} ms"
    return f"~{value:.1f} ms".replace(".0 ms", " ms")


def megabytes(nbytes: float) -> str:
    """Bytes as a person reads them: 23 KB, 1.5 MB, 51 MB (decimal units, as nccl-tests)."""
    if nbytes < 1e6:
        return f"{nbytes / 1e3:.0f} KB" if nbytes >= 1e3 else f"{nbytes:.0f} B"
    return f"{nbytes / 1e6:.1f} MB" if nbytes < 1e7 else f"{nbytes / 1e6:.0f} MB"


def ms(seconds: float) -> str:
    return f"{seconds * 1e3:.1f} ms" if seconds < 0.1 else f"{seconds * 1e3:.0f} ms"
