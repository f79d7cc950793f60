"""Pooling and resampling: MaxPool, AveragePool, the global pools, ReduceMean and Resize / Upsample."""

from __future__ import annotations

from ...errors import NetworkError
from ..base import _attr, _Unsupported
from ..context import _Context
from .common import _auto_pad, _ints, _need_nchw, _spatial_padding


def _pool(op: str):
    def handler(c: _Context, node, base: str):
        x = _need_nchw(c, node.input[0])
        kernel = _attr(node, "kernel_shape", None)
        if kernel is None or len(kernel) != 2:
            raise (NetworkError("expects 2 kernel sizes", node=node.name or base, field="kernel_shape",
                                value=kernel) if kernel is None or len(kernel) < 1 else
                   _Unsupported(f"a {len(kernel)}-d pool (the IR has 2-d)"))
        kernel = _ints(node, "kernel_shape", 2, 1, 1)
        strides = _ints(node, "strides", 2, 1, 1)
        dilations = _ints(node, "dilations", 2, 1, 1)
        begins, ends = _auto_pad(node, c.full(node.input[0])[2:], kernel, strides, dilations)
        x, sym = _spatial_padding(c, node, base, x, begins, ends)
        extra = dict(dilation=dilations) if op == "max_pool2d" else \
            dict(count_include_pad=bool(_attr(node, "count_include_pad", 0)))
        if op == "avg_pool2d" and dilations != (1, 1):
            raise _Unsupported("a dilated average pool")
        name = c.emit(base, op, [x], kernel_size=kernel, stride=strides, padding=sym,
                      ceil_mode=bool(_attr(node, "ceil_mode", 0)), **extra)
        return [name] + [None] * (len(node.output) - 1)
    return handler


def _global_pool(op: str):
    def handler(c: _Context, node, base: str):
        return c.emit(base, op, [_need_nchw(c, node.input[0])], output_size=(1, 1))
    return handler


def _reduce_mean(c: _Context, node, base: str):
    t = node.input[0]
    if len(node.input) > 1 and node.input[1]:
        axes = c.ints_of(node.input[1], "axes")
    else:
        axes = list(_attr(node, "axes", []))
    if not axes:
        raise _Unsupported("a mean over every axis, the batch included")
    keep = bool(_attr(node, "keepdims", 1))
    return c.emit(base, "mean", [c.act(t)], dim=tuple(c.ir_dim(t, a) for a in axes), keepdim=keep)


def _resize(c: _Context, node, base: str):
    x = _need_nchw(c, node.input[0])
    mode = _attr(node, "mode", "nearest")
    ir_mode = {"nearest": "nearest", "linear": "bilinear", "bilinear": "bilinear", "cubic": "bicubic"}.get(mode)
    if ir_mode is None:
        raise NetworkError("must be nearest, linear or cubic", node=node.name or base, field="mode", value=mode)
    full, k = c.full(node.input[0]), c.batch_axis(node.input[0])
    if c.info(node.output[0]).s1 is None:         # sizes or scales computed by ops inference does not fold
        ins = list(node.input) + [""] * 4
        if ins[3]:
            size = tuple(c.ints_of(ins[3], "sizes"))
        else:
            scales = ins[2] if c.opset >= 11 else ins[1]
            factors = c.value(scales, "scales").reshape(-1).tolist() if scales else list(_attr(node, "scales", []))
            if len(factors) != len(full):
                raise NetworkError(f"expected {len(full)} scales", node=node.name or base, field="scales",
                                   value=factors)
            size = tuple(int(d * f) for d, f in zip(full, factors))
        c.computed[node.output[0]] = (size, (k, None))
    out = c.settle(node, node.output[0]).per_sample()
    align = _attr(node, "coordinate_transformation_mode", "half_pixel") == "align_corners"
    return c.emit(base, "interpolate", [x], size=tuple(out[1:]), mode=ir_mode,
                  align_corners=align if ir_mode != "nearest" else None)
