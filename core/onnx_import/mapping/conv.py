"""Convolutions and matrix products: Conv, ConvTranspose, Gemm, MatMul (a weight on the right: a ``linear``
layer) and Einsum."""

from __future__ import annotations

from math import prod

from ...errors import NetworkError
from ..base import _attr, _Unsupported
from ..context import _Context
from .common import _auto_pad, _bias_size, _inputs, _ints, _need_nchw, _spatial_padding


def _conv_operands(c: _Context, node, base: str, what: str):
    """A (transposed) convolution's input, weight, optional bias and group, each checked."""
    _inputs(node, base, "X", "W")
    x = _need_nchw(c, node.input[0])
    w = c.weight(node.input[1], "weight")
    b = c.weight(node.input[2], "bias") if len(node.input) > 2 and node.input[2] else None
    if len(w.shape) != 4:
        raise _Unsupported(f"a {len(w.shape) - 2}-d {what} (the IR has 2-d)")
    group = _attr(node, "group", 1)
    if not isinstance(group, int) or group < 1:
        raise NetworkError("must be a positive integer", node=node.name or base, field="group", value=group)
    return x, w, b, group


def _conv(c: _Context, node, base: str):
    x, w, b, group = _conv_operands(c, node, base, "convolution")
    kernel = tuple(w.shape[2:])
    given = _attr(node, "kernel_shape", None)
    if given is not None and tuple(given) != kernel:
        raise NetworkError(f"does not match the weight's kernel {list(kernel)}", node=node.name or base,
                           field="kernel_shape", value=list(given))
    strides = _ints(node, "strides", 2, 1, 1)
    dilations = _ints(node, "dilations", 2, 1, 1)
    channels = c.full(node.input[0])[1]
    if channels % group or w.shape[1] * group != channels:
        raise NetworkError(f"the weight {list(w.shape)} with group {group} takes {w.shape[1] * group} input "
                           f"channels, the input has {channels}", node=node.name or base, field="W",
                           value=node.input[1])
    if w.shape[0] % group:
        raise NetworkError(f"group {group} does not divide the weight's {w.shape[0]} output channels",
                           node=node.name or base, field="group", value=group)
    _bias_size(node, base, b, w.shape[0])
    begins, ends = _auto_pad(node, c.full(node.input[0])[2:], kernel, strides, dilations)
    x, sym = _spatial_padding(c, node, base, x, begins, ends)
    name = c.emit(base, "conv2d", [x], out_channels=w.shape[0], kernel_size=kernel, stride=strides, padding=sym,
                  dilation=dilations, groups=group, bias=b is not None)
    c.count(name, w, b)
    return name


def _conv_transpose(c: _Context, node, base: str):
    x, w, b, group = _conv_operands(c, node, base, "transposed convolution")
    kernel = tuple(w.shape[2:])
    channels = c.full(node.input[0])[1]
    if w.shape[0] != channels or channels % group:
        raise NetworkError(f"the weight {list(w.shape)} with group {group} takes {w.shape[0]} input channels, the "
                           f"input has {channels}", node=node.name or base, field="W", value=node.input[1])
    _bias_size(node, base, b, w.shape[1] * group)
    strides = _ints(node, "strides", 2, 1, 1)
    dilations = _ints(node, "dilations", 2, 1, 1)
    out_pad = _ints(node, "output_padding", 2, 0, 0)
    sizes = c.full(node.input[0])[2:]
    given = _attr(node, "output_shape", None)
    mode = _attr(node, "auto_pad", "NOTSET") or "NOTSET"
    if given is not None or mode in ("SAME_UPPER", "SAME_LOWER"):
        target = tuple(given)[-2:] if given is not None else tuple(s * st for s, st in zip(sizes, strides))
        begins, ends = [], []
        for size, k, s, d, op, o in zip(sizes, kernel, strides, dilations, out_pad, target):
            total = s * (size - 1) + op + (k - 1) * d + 1 - o
            if total < 0:
                raise NetworkError("is larger than the convolution can produce", node=node.name or base,
                                   field="output_shape", value=list(target))
            if mode == "SAME_UPPER":
                begins.append(total // 2)
                ends.append(total - total // 2)
            else:
                begins.append(total - total // 2)
                ends.append(total // 2)
    elif mode == "VALID":
        begins, ends = (0, 0), (0, 0)
    else:
        pads = _ints(node, "pads", 4, 0, 0)
        begins, ends = pads[:2], pads[2:]
    sym = tuple(min(p, q) for p, q in zip(begins, ends))
    name = c.emit(base, "conv_transpose2d", [x], out_channels=w.shape[1] * group, kernel_size=kernel, stride=strides,
                  padding=sym, output_padding=out_pad, dilation=dilations, groups=group, bias=b is not None)
    c.count(name, w, b)
    for axis, (p, q, s) in enumerate(zip(begins, ends, sym)):
        if p != s or q != s:
            size = c.ir_shape[name][axis + 1]
            name = c.emit(f"{base}.crop", "slice", [name], dim=axis + 2, start=p - s, end=size - (q - s))
    return name


def _gemm(c: _Context, node, base: str):
    _inputs(node, base, "A", "B")
    a, bt = node.input[0], node.input[1]
    if not c.is_act(a) or c.is_act(bt) or _attr(node, "transA", 0):
        raise _Unsupported("a Gemm whose left operand is not the activation, or is transposed")
    w = c.weight(bt, "weight")
    if len(w.shape) != 2:
        raise NetworkError(f"expects a 2-d weight, got {list(w.shape)}", node=node.name or base, field="B",
                           value=bt)
    out, k = (w.shape[0], w.shape[1]) if _attr(node, "transB", 0) else (w.shape[1], w.shape[0])
    if c.full(a)[-1] != k:
        raise NetworkError(f"the weight {list(w.shape)} takes {k} features, the input has {c.full(a)[-1]}",
                           node=node.name or base, field="B", value=bt)
    if _attr(node, "alpha", 1.0) != 1.0 or _attr(node, "beta", 1.0) != 1.0:
        c.warn(f"{node.name or base}: Gemm's alpha/beta scaling is not costed")
    bias = c.const(node.input[2]) if len(node.input) > 2 and node.input[2] else None
    if len(node.input) > 2 and node.input[2] and bias is None:
        name = c.emit(base, "linear", [c.act(a)], out_features=out, bias=False)
        c.count(name, w)
        return c.emit(f"{base}.add", "add", [name, c.act(node.input[2])])
    with_bias = bias is not None and bias.shape is not None and prod(bias.shape) == out
    name = c.emit(base, "linear", [c.act(a)], out_features=out, bias=with_bias)
    c.count(name, w, bias if with_bias else None)
    if bias is not None and not with_bias:
        name = c.emit(f"{base}.add", "add", [name, c.param(node.input[2], c.like(node))])
    return name


def _matmul(c: _Context, node, base: str):
    _inputs(node, base, "A", "B")
    a, b = node.input[0], node.input[1]
    if c.is_act(a) and not c.is_act(b):
        w = c.weight(b, "weight")
        if len(w.shape) == 2:
            if c.full(a)[-1] != w.shape[0]:
                raise NetworkError(f"the weight {list(w.shape)} takes {w.shape[0]} features, the input has "
                                   f"{c.full(a)[-1]}", node=node.name or base, field="B", value=b)
            name = c.emit(base, "linear", [c.act(a)], out_features=w.shape[1], bias=False)
            c.count(name, w)
            c.linear_bias[node.output[0]] = name
            return name
    return c.emit(base, "matmul", [c.operand(a, c.like(node)), c.operand(b, c.like(node))])


def _einsum(c: _Context, node, base: str):
    out = c.like(node)
    return c.emit(base, "einsum", [c.operand(t, out) for t in node.input], equation=_attr(node, "equation", ""))
