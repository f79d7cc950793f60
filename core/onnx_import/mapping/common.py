"""Readers the op mappings share, each naming what is wrong: integer attributes in range, ``auto_pad`` and
``pads`` as (begins, ends), the asymmetric part of a padding as a ``pad`` node, required inputs, a bias's size
and a 4-d [N, C, H, W] input."""

from __future__ import annotations

from math import prod

from ...errors import NetworkError
from ...registry import MAX_DIM
from ..base import _attr, _Const, _Unsupported
from ..context import _Context


def _ints(node, name: str, n: int, default: int, minimum: int) -> tuple:
    v = _attr(node, name, None)
    if v is None:
        return (default,) * n
    if not isinstance(v, (list, tuple)) or len(v) != n or not all(isinstance(i, int) for i in v):
        raise NetworkError(f"expected {n} integers", node=node.name or node.op_type, field=name, value=list(v)
                           if isinstance(v, (list, tuple)) else v)
    if any(i < minimum or i > MAX_DIM for i in v):
        raise NetworkError(f"every value must be from {minimum} to {MAX_DIM:,}", node=node.name or node.op_type,
                           field=name, value=list(v))
    return tuple(v)


def _auto_pad(node, sizes, kernel, strides, dilations) -> tuple:
    """(begins, ends) of the padding: ``pads`` or what ``auto_pad`` computes for these input sizes."""
    n = len(sizes)
    mode = _attr(node, "auto_pad", "NOTSET") or "NOTSET"
    if mode in ("NOTSET",):
        pads = _ints(node, "pads", 2 * n, 0, 0)
        return pads[:n], pads[n:]
    if mode == "VALID":
        return (0,) * n, (0,) * n
    if mode not in ("SAME_UPPER", "SAME_LOWER"):
        raise NetworkError("must be NOTSET, SAME_UPPER, SAME_LOWER or VALID", node=node.name or node.op_type,
                           field="auto_pad", value=mode)
    begins, ends = [], []
    for size, k, s, d in zip(sizes, kernel, strides, dilations):
        out = -(-size // s)
        total = max((out - 1) * s + (k - 1) * d + 1 - size, 0)
        small, big = total // 2, total - total // 2
        begins.append(small if mode == "SAME_UPPER" else big)
        ends.append(big if mode == "SAME_UPPER" else small)
    return tuple(begins), tuple(ends)


def _spatial_padding(c: _Context, node, base: str, x: str, begins, ends) -> tuple[str, tuple]:
    """The symmetric part of the padding stays in the conv or pool; the rest becomes a ``pad`` node before it."""
    sym = tuple(min(b, e) for b, e in zip(begins, ends))
    extra = [(b - s, e - s) for b, e, s in zip(begins, ends, sym)]
    if any(b or e for b, e in extra):
        pad = []
        for b, e in reversed(extra):            # F.pad order: the last dim first
            pad += [b, e]
        x = c.emit(f"{base}.pad", "pad", [x], pad=tuple(pad))
    return x, sym


def _inputs(node, base: str, *names: str) -> None:
    """The node has (non-empty) inputs ``names``, in order, or the file is malformed."""
    given = list(node.input) + [""] * len(names)
    missing = [n for n, t in zip(names, given) if not t]
    if missing:
        raise NetworkError(f"needs its inputs {', '.join(names)}; {', '.join(missing)} missing",
                           node=node.name or base, field="input", value=list(node.input))


def _bias_size(node, base: str, b: _Const | None, channels: int) -> None:
    if b is not None and prod(b.shape) != channels:
        raise NetworkError(f"has {prod(b.shape)} values for {channels} output channels", node=node.name or base,
                           field="B", value=list(b.shape))


def _need_nchw(c: _Context, t: str) -> str:
    x = c.act(t)
    if c.batch_axis(t) != 0 or len(c.full(t)) != 4:
        raise _Unsupported("it needs a 4-d [N, C, H, W] input with the batch first")
    return x
