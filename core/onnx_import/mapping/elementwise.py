"""Elementwise ops: activations (Relu, Sigmoid, Gelu, Clip as ReLU or ReLU6, …), Softmax, Dropout, the aliases
(Identity, Cast) and arithmetic (Add, Sub, Mul, Div, Sum), with a one-element constant operand as a scalar and a
MatMul's bias Add joined to its linear layer."""

from __future__ import annotations

from math import prod

from ..base import _attr, _Unsupported
from ..context import _Context


def _unary(op: str):
    def handler(c: _Context, node, base: str):
        return c.emit(base, op, [c.act(node.input[0])])
    return handler


def _leaky_relu(c: _Context, node, base: str):
    return c.emit(base, "leaky_relu", [c.act(node.input[0])], negative_slope=float(_attr(node, "alpha", 0.01)))


def _gelu(c: _Context, node, base: str):
    approx = _attr(node, "approximate", "none")
    return c.emit(base, "gelu", [c.act(node.input[0])], approximate=approx if approx in ("none", "tanh") else "none")


def _softmax(op: str):
    def handler(c: _Context, node, base: str):
        t = node.input[0]
        axis = _attr(node, "axis", -1 if c.opset >= 13 else 1)
        return c.emit(base, op, [c.act(t)], dim=c.ir_dim(t, axis))
    return handler


def _clip(c: _Context, node, base: str):
    if c.opset >= 11:
        lo = float(c.value(node.input[1], "min").reshape(-1)[0]) if len(node.input) > 1 and node.input[1] else None
        hi = float(c.value(node.input[2], "max").reshape(-1)[0]) if len(node.input) > 2 and node.input[2] else None
    else:
        lo, hi = _attr(node, "min", None), _attr(node, "max", None)
    if lo == 0.0 and hi == 6.0:
        return c.emit(base, "relu6", [c.act(node.input[0])])
    if lo == 0.0 and (hi is None or hi == float("inf")):
        return c.emit(base, "relu", [c.act(node.input[0])])
    raise _Unsupported(f"Clip to [{lo}, {hi}] (the IR has ReLU and ReLU6)")


def _dropout(c: _Context, node, base: str):
    p = _attr(node, "ratio", None)
    if p is None and len(node.input) > 1 and node.input[1]:
        p = float(c.value(node.input[1], "ratio").reshape(-1)[0])
    name = c.emit(base, "dropout", [c.act(node.input[0])], p=float(0.5 if p is None else p))
    return [name] + [None] * (len(node.output) - 1)


def _alias(c: _Context, node, base: str):
    return c.act(node.input[0])


def _binary(op: str):
    def handler(c: _Context, node, base: str):
        a, b = node.input[0], node.input[1]
        if op == "add":
            fused = _bias_add(c, node, a, b)
            if fused is not None:
                return fused
        for first, second in ((a, b), (b, a)):  # a scalar operand: an attribute (a scalar first only for + and ×)
            if c.is_act(first) and not c.is_act(second) and (op in ("add", "mul") or first == a):
                k = c.const(second)
                if k is not None and k.value is not None and k.value.size == 1:
                    return c.emit(base, op, [c.act(first)], scalar=float(c.value(second, "operand").reshape(-1)[0]))
        return c.emit(base, op, [c.operand(a, c.like(node)), c.operand(b, c.like(node))])
    return handler


def _bias_add(c: _Context, node, a: str, b: str):
    """MatMul then Add of a constant vector: PyTorch's Linear on a 3-d input. The bias joins the linear."""
    for t, other in ((a, b), (b, a)):
        linear = c.linear_bias.get(t)
        k = c.const(other)
        if linear is None or k is None or k.shape is None or len(c.consumers.get(t, [])) != 1:
            continue
        out = c.ir_shape[linear][-1]
        if prod(k.shape) == out and k.shape[-1] == out:
            c.replace(linear, bias=True)
            c.count(linear, k)
            del c.linear_bias[t]
            return linear
    return None


def _sum(c: _Context, node, base: str):
    out = c.like(node)
    return c.emit(base, "add", [c.operand(t, out) for t in node.input if t])
