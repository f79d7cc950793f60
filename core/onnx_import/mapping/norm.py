"""Normalisations: BatchNormalization, InstanceNormalization and GroupNormalization (``group_norm``),
LayerNormalization; each counts its scale, bias and statistics."""

from __future__ import annotations

from math import prod

from ...errors import NetworkError
from ..base import _attr, _Unsupported
from ..context import _Context
from .common import _inputs


def _batch_norm(c: _Context, node, base: str):
    _inputs(node, base, "X", "scale", "B", "input_mean", "input_var")
    x = c.act(node.input[0])
    if c.batch_axis(node.input[0]) != 0:
        raise _Unsupported("the batch is not the first axis")
    consts = [c.weight(t, ("scale", "bias", "mean", "variance")[i]) for i, t in enumerate(node.input[1:5])]
    channels = c.full(node.input[0])[1]
    for field, k in zip(("scale", "B", "input_mean", "input_var"), consts):
        if prod(k.shape) != channels:
            raise NetworkError(f"has {prod(k.shape)} values for {channels} channels", node=node.name or base,
                               field=field, value=list(k.shape))
    eps = float(_attr(node, "epsilon", 1e-5))
    momentum = float(_attr(node, "momentum", 0.9))
    name = c.emit(base, "batch_norm", [x], eps=eps, momentum=1.0 - momentum)
    c.count(name, *consts)
    return [name] + [None] * (len(node.output) - 1)


def _instance_norm(c: _Context, node, base: str):
    _inputs(node, base, "input", "scale", "B")
    x = c.act(node.input[0])
    if c.batch_axis(node.input[0]) != 0:
        raise _Unsupported("the batch is not the first axis")
    consts = [c.weight(t, "scale or bias") for t in node.input[1:3]]
    channels = c.ir_shape[x][0]
    name = c.emit(base, "group_norm", [x], num_groups=channels, eps=float(_attr(node, "epsilon", 1e-5)))
    c.count(name, *consts)
    return name


def _group_norm(c: _Context, node, base: str):
    _inputs(node, base, "X", "scale", "bias")
    x = c.act(node.input[0])
    if c.batch_axis(node.input[0]) != 0:
        raise _Unsupported("the batch is not the first axis")
    consts = [c.weight(t, "scale or bias") for t in node.input[1:3]]
    groups = _attr(node, "num_groups", None)
    if not isinstance(groups, int) or groups < 1:
        raise NetworkError("must be a positive integer", node=node.name or base, field="num_groups", value=groups)
    name = c.emit(base, "group_norm", [x], num_groups=groups, eps=float(_attr(node, "epsilon", 1e-5)))
    c.count(name, *consts)
    return name


def _layer_norm(c: _Context, node, base: str):
    _inputs(node, base, "X", "Scale")
    t = node.input[0]
    x = c.act(t)
    rank = len(c.full(t))
    axis = _attr(node, "axis", -1)
    axis = axis + rank if axis < 0 else axis
    if not 0 <= axis < rank:
        raise NetworkError(f"out of range for a {rank}-d input", node=node.name or base, field="axis", value=axis)
    k = c.batch_axis(t)
    if k is not None and k >= axis:
        raise _Unsupported("it normalises over the batch axis")
    scale = c.weight(node.input[1], "scale")
    bias = c.weight(node.input[2], "bias") if len(node.input) > 2 and node.input[2] else None
    name = c.emit(base, "layer_norm", [x], normalized_ndim=rank - axis, eps=float(_attr(node, "epsilon", 1e-5)),
                  bias=bias is not None)
    c.count(name, scale, bias)
    return [name] + [None] * (len(node.output) - 1)
