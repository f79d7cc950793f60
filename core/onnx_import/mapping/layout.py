"""Views and layout: Concat, Reshape, Flatten, Squeeze and Unsqueeze (a view to the per-sample shape, the batch
followed through it), Transpose, Expand, Slice, Gather, Split and Pad."""

from __future__ import annotations

from math import prod

from ...errors import NetworkError
from ..base import _attr, _np, _Unsupported
from ..context import _Context


def _concat(c: _Context, node, base: str):
    out = c.like(node)
    axis = _attr(node, "axis", None)
    if axis is None:
        raise NetworkError("is required", node=node.name or base, field="axis")
    return c.emit(base, "concat", [c.operand(t, out) for t in node.input if t], dim=c.ir_dim(out, axis))


def _reshape_like(c: _Context, node, base: str):
    """Reshape, Flatten, Squeeze, Unsqueeze: a view to the per-sample shape ONNX infers (the same when only the
    batch axis moved: no node)."""
    t, out = node.input[0], node.output[0]
    x = c.act(t)
    full = c.info(out).s1 or _view_shape(c, node, c.full(t))    # sizes ONNX could not fold are computed here
    c.computed[out] = (full, _view_axis(c.full(t), c.where(t), full))
    target = c.settle(node, out).per_sample()
    if target == c.ir_shape[x]:
        return x
    if node.op_type == "Flatten" and _attr(node, "axis", 1) == 1 and c.batch_axis(t) == 0:
        return c.emit(base, "flatten", [x], start_dim=1)
    return c.emit(base, "reshape", [x], shape=target)


def _view_axis(full_in: tuple, where: tuple, full_out: tuple) -> tuple:
    """Where the batch of a tensor (``where``: its batch axis, or the axis it is folded into) lands in a view of
    it, by counting elements: a batch axis stays the size-1 axis with as many elements before it; a folded batch
    comes out as a size-1 axis within the span of the axis it was folded into, or stays folded in the output axis
    that spans it."""
    k, m = where
    if k is not None:
        lo = hi = prod(full_in[:k])
    elif m is not None:
        lo, hi = prod(full_in[:m]), prod(full_in[:m + 1])
    else:
        return (0 if full_out and full_out[0] == 1 else None), None
    for j, d in enumerate(full_out):
        if d == 1 and lo <= prod(full_out[:j]) <= hi and prod(full_out[:j]) % lo == 0:
            return j, None
    for j in range(len(full_out)):
        if prod(full_out[:j]) <= lo < prod(full_out[:j + 1]):
            return None, j
    return None, None


def _view_shape(c: _Context, node, full: tuple) -> tuple:
    """The ONNX output shape of a Reshape, Flatten, Squeeze or Unsqueeze of a tensor of shape ``full``."""
    op, rank = node.op_type, len(full)
    if op == "Reshape":
        target = c.ints_of(node.input[1], "shape")
        target = [full[i] if v == 0 and not _attr(node, "allowzero", 0) else v for i, v in enumerate(target)]
        known = prod(v for v in target if v != -1)
        if target.count(-1) > 1 or known < 1 or (-1 in target and prod(full) % known) or \
                (-1 not in target and known != prod(full)):
            raise NetworkError(f"cannot reshape {list(full)} to {target}", node=node.name or op, field="shape",
                               value=target)
        return tuple(prod(full) // known if v == -1 else v for v in target)
    if op == "Flatten":
        axis = _attr(node, "axis", 1)
        axis = axis + rank if axis < 0 else axis
        return (prod(full[:axis]), prod(full[axis:]))
    axes = c.ints_of(node.input[1], "axes") if len(node.input) > 1 and node.input[1] else \
        list(_attr(node, "axes", []))
    if op == "Squeeze":
        axes = {a + rank if a < 0 else a for a in axes} or {i for i, d in enumerate(full) if d == 1}
        return tuple(d for i, d in enumerate(full) if i not in axes)
    out_rank = rank + len(axes)
    axes = sorted(a + out_rank if a < 0 else a for a in axes)
    dims = iter(full)
    return tuple(1 if i in axes else next(dims) for i in range(out_rank))


def _transpose(c: _Context, node, base: str):
    t, out = node.input[0], node.output[0]
    x = c.act(t)
    rank = len(c.full(t))
    perm = _attr(node, "perm", None)
    perm = list(range(rank))[::-1] if perm is None else list(perm)
    if sorted(perm) != list(range(rank)):
        raise NetworkError(f"must be a permutation of 0…{rank - 1}", node=node.name or base, field="perm", value=perm)
    full = c.full(t)
    k_in = c.batch_axis(t)
    m_in = c.where(t)[1]
    c.computed[out] = (tuple(full[p] for p in perm), (perm.index(k_in) if k_in is not None else None,
                                                      perm.index(m_in) if m_in is not None else None))
    k_out = c.settle(node, out).batch_axis()
    if k_in is not None:
        if k_out is None or perm[k_out] != k_in:
            raise _Unsupported("the batch axis does not stay whole")
        per = [perm[j] - (perm[j] > k_in) for j in range(rank) if j != k_out]
    else:
        per = perm
    if per == sorted(per):
        return x
    return c.emit(base, "permute", [x], dims=tuple([0] + [p + 1 for p in per]))


def _expand(c: _Context, node, base: str):
    t, out = node.input[0], node.output[0]
    x = c.act(t)
    full, k = c.full(t), c.batch_axis(t)
    shape = c.info(out).s1 or tuple(int(d) for d in _np().broadcast_shapes(full, tuple(c.ints_of(node.input[1],
                                                                                                  "shape"))))
    c.computed[out] = (shape, (k + len(shape) - len(full) if k is not None else None, None))
    if c.settle(node, out).per_sample() == c.ir_shape[x]:
        return x
    raise _Unsupported("an expand that changes per-sample dims")


def _slice(c: _Context, node, base: str):
    t = node.input[0]
    x = c.act(t)
    full = c.full(t)
    if c.opset >= 10:
        starts = c.ints_of(node.input[1], "starts")
        ends = c.ints_of(node.input[2], "ends")
        axes = c.ints_of(node.input[3], "axes") if len(node.input) > 3 and node.input[3] else list(range(len(starts)))
        steps = c.ints_of(node.input[4], "steps") if len(node.input) > 4 and node.input[4] else [1] * len(starts)
    else:
        starts, ends = list(_attr(node, "starts", [])), list(_attr(node, "ends", []))
        axes = list(_attr(node, "axes", range(len(starts))))
        steps = [1] * len(starts)
    if not len(starts) == len(ends) == len(axes) == len(steps):
        raise NetworkError("starts, ends, axes and steps differ in length", node=node.name or base, field="starts",
                           value=starts)
    for s, e, a, st in zip(starts, ends, axes, steps):
        a = a + len(full) if a < 0 else a
        size = full[a]
        lo, hi, step = slice(s, e, st).indices(size)
        if step < 1:
            raise _Unsupported("a slice with a negative step")
        if (lo, hi, step) == (0, size, 1):
            continue
        x = c.emit(base, "slice", [x], dim=c.ir_dim(t, a), start=lo, end=hi, step=step)
    return x


def _gather(c: _Context, node, base: str):
    t = node.input[0]
    if not c.is_act(t):
        raise _Unsupported("a lookup into a constant table by input-dependent indices")
    idx = c.value(node.input[1], "indices")
    full = c.full(t)
    axis = _attr(node, "axis", 0)
    axis = axis + len(full) if axis < 0 else axis
    size = full[axis]
    if idx.ndim == 0:
        i = int(idx)
        k = c.batch_axis(t)                           # one axis fewer: the batch moves down if it came after
        m = c.where(t)[1]
        c.computed[node.output[0]] = (full[:axis] + full[axis + 1:], (k - (axis < k) if k is not None else None,
                                                                      m - (axis < m) if m is not None else None))
        return c.emit(base, "slice", [c.act(t)], dim=c.ir_dim(t, axis), start=i + size if i < 0 else i, select=True)
    flat = [int(i) + size if int(i) < 0 else int(i) for i in idx.reshape(-1).tolist()]
    if idx.ndim == 1 and flat and flat == list(range(flat[0], flat[0] + len(flat))):
        return c.emit(base, "slice", [c.act(t)], dim=c.ir_dim(t, axis), start=flat[0], end=flat[0] + len(flat))
    raise _Unsupported("a gather of non-contiguous indices")


def _split(c: _Context, node, base: str):
    t = node.input[0]
    x = c.act(t)
    axis = _attr(node, "axis", 0)
    full = c.full(t)
    size = full[axis]
    outs = [o for o in node.output]
    if len(node.input) > 1 and node.input[1]:
        parts = c.ints_of(node.input[1], "split")
    elif _attr(node, "split", None) is not None:
        parts = list(_attr(node, "split"))
    else:
        n = len(outs)
        step = -(-size // n)
        parts = [min(step, size - i * step) for i in range(n)]
    if sum(parts) != size or len(parts) != len(outs):
        raise NetworkError(f"does not split {size} into {len(outs)} parts", node=node.name or base, field="split",
                           value=parts)
    dim, start, names = c.ir_dim(t, axis), 0, []
    for i, p in enumerate(parts):
        names.append(c.emit(f"{base}.{i}", "slice", [x], dim=dim, start=start, end=start + p))
        start += p
    return names


def _pad(c: _Context, node, base: str):
    t = node.input[0]
    x = c.act(t)
    rank = len(c.full(t))
    if c.opset >= 11:
        pads = c.ints_of(node.input[1], "pads")
        axes = c.ints_of(node.input[3], "axes") if len(node.input) > 3 and node.input[3] else list(range(rank))
    else:
        pads, axes = list(_attr(node, "pads", [])), list(range(rank))
    axes = [a + rank if a < 0 else a for a in axes]
    if len(pads) != 2 * len(axes):
        raise NetworkError(f"expected {2 * len(axes)} values", node=node.name or base, field="pads", value=pads)
    mode = _attr(node, "mode", "constant")
    if mode != "constant":
        c.warn(f"{node.name or base}: Pad mode '{mode}' is costed as a copy")
    by_dim = {}
    k = c.batch_axis(t)
    for i, a in enumerate(axes):
        b, e = pads[i], pads[i + len(axes)]
        if a == k:
            if b or e:
                raise _Unsupported("it pads the batch axis")
            continue
        if b or e:
            by_dim[c.ir_dim(t, a)] = (b, e)
    if not by_dim:
        return x
    per_rank = len(c.ir_shape[x])
    first = min(by_dim)
    pad = []
    for d in range(per_rank, first - 1, -1):
        pad += list(by_dim.get(d, (0, 0)))
    return c.emit(base, "pad", [x], pad=tuple(pad))
