"""Per-sample fingerprints of a batch, vectorized so that the cost per batch stays small.

A sample's fingerprint is a 64-bit weighted sum of (a fixed subsample of) its raw bits, with
pseudo-random weights fixed across processes, so equal samples give equal fingerprints on every
rank and distinct samples collide with negligible probability. Integer overflow wraps in torch,
which is what a modular hash wants. See notes §6 for why not blake2b per batch (1 ms+) and why
never bytes(untyped_storage()).
"""

from __future__ import annotations

import hashlib
import zlib
from typing import Any, Optional

import torch

MAX_POSITIONS = 4096  # per sample and tensor: bounds the cost for large images
_MASK = 0xFFFF_FFFF_FFFF_FFFF
_BITS_VIEW = {
    torch.float32: torch.int32,
    torch.float64: torch.int64,
    torch.float16: torch.int16,
    torch.bfloat16: torch.int16,
}
_weights: dict[int, torch.Tensor] = {}
_positions: dict[int, torch.Tensor] = {}


def _weights_for(n: int) -> torch.Tensor:
    w = _weights.get(n)
    if w is None:
        gen = torch.Generator().manual_seed(0x5EED + n)
        w = torch.randint(-(2**62), 2**62, (n,), generator=gen, dtype=torch.int64) | 1
        _weights[n] = w
    return w


def _positions_for(n: int) -> torch.Tensor:
    p = _positions.get(n)
    if p is None:
        p = torch.linspace(0, n - 1, MAX_POSITIONS).round().long().unique()
        _positions[n] = p
    return p


def _tensor_rows(t: torch.Tensor, batch: int) -> torch.Tensor:
    """One int64 hash per sample of a tensor whose first dimension is the batch."""
    flat = t.detach().reshape(batch, -1)
    if flat.is_complex():
        flat = torch.view_as_real(flat).reshape(batch, -1)
    if flat.dtype == torch.bool:
        flat = flat.to(torch.uint8)
    bits = _BITS_VIEW.get(flat.dtype)
    n = flat.shape[1]
    if n > MAX_POSITIONS:
        flat = flat[:, _positions_for(n).to(flat.device)]
    if bits is not None:
        flat = flat.contiguous().view(bits)
    elif flat.is_floating_point():  # float8 and friends: round-trip through float32 bits
        flat = flat.float().contiguous().view(torch.int32)
    rows = flat.to(torch.int64)
    weights = _weights_for(rows.shape[1]).to(rows.device)
    return (rows * weights).sum(dim=1) ^ (n * 0x9E3779B97F4A7C15 & 0x7FFF_FFFF_FFFF_FFFF)


def _strings_rows(items: list) -> torch.Tensor:
    return torch.tensor([zlib.crc32(s.encode("utf-8", "replace")) for s in items], dtype=torch.int64)


def _leaves(obj: Any, out: list, depth: int = 0) -> None:
    """Tensors and lists of strings in a (nested) batch, in a deterministic order."""
    if depth > 4 or len(out) > 16:
        return
    if isinstance(obj, torch.Tensor):
        out.append(obj)
    elif isinstance(obj, dict):
        for key in sorted(obj, key=str):
            _leaves(obj[key], out, depth + 1)
    elif isinstance(obj, (list, tuple)):
        if obj and all(isinstance(x, str) for x in obj):
            out.append(list(obj))
        else:
            for item in obj:
                _leaves(item, out, depth + 1)
    elif hasattr(obj, "__dict__") and not callable(obj):  # dataclass-like batch objects
        _leaves(vars(obj), out, depth + 1)


def sample_fingerprints(batch: Any) -> Optional[list[str]]:
    """16-hex-digit fingerprints, one per sample of the batch; None if no batch dimension is found."""
    leaves: list = []
    _leaves(batch, leaves)
    size = None
    for leaf in leaves:
        if isinstance(leaf, torch.Tensor) and leaf.dim() >= 1:
            size = leaf.shape[0]
            break
        if isinstance(leaf, list):
            size = len(leaf)
            break
    if not size:
        return None
    acc = torch.zeros(size, dtype=torch.int64)
    for leaf in leaves:
        if isinstance(leaf, torch.Tensor):
            if leaf.dim() == 0 or leaf.shape[0] != size:
                continue
            rows = _tensor_rows(leaf, size).cpu()
        elif len(leaf) == size:
            rows = _strings_rows(leaf)
        else:
            continue
        acc = acc * 1_000_003 + rows
    return [format(v & _MASK, "016x") for v in acc.tolist()]


def batch_fingerprint(samples: list[str]) -> str:
    """Order-sensitive fingerprint of a whole batch."""
    return hashlib.blake2b("".join(samples).encode(), digest_size=8).hexdigest()


def tensor_fingerprint(t: torch.Tensor) -> str:
    """Fingerprint of a whole tensor (parameters at the end of a probe): every element counts.

    Chunk by chunk, each widened to int64 on its own: widening the whole tensor at once held an
    int64 copy of the largest parameter (twice its fp32 size) and, on a GPU, raised the
    allocator's peak that the memory table reports. The chunks' sums are read back in one
    transfer, not one synchronisation per chunk."""
    flat = t.detach().reshape(-1)
    n = flat.shape[0]
    if n == 0:
        return "0" * 16
    bits = _BITS_VIEW.get(flat.dtype)
    if bits is not None:
        flat = flat.contiguous().view(bits)
    chunk = 1 << 16
    weights: dict[int, torch.Tensor] = {}
    sums = []
    for start in range(0, n, chunk):
        part = flat[start:start + chunk].to(torch.int64)
        size = part.shape[0]
        if size not in weights:
            weights[size] = _weights_for(size).to(part.device)
        sums.append((part * weights[size]).sum())
    total = 0
    for value in torch.stack(sums).tolist():
        total = (total * 1_000_003 + int(value)) & _MASK
    return format(total ^ n, "016x")
