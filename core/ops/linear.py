"""``linear``: y = x·Wᵀ + b on the last dimension of an input of any rank (``nn.Linear``, ``F.linear``).

FLOPs: 1 MAC = 2 FLOPs; MACs = rows·in_features·out_features, the rows being every leading position of
[N, *, in_features]. Backward: dL/dx and dL/dW each take the forward's multiply-adds, and the bias gradient one add
per output.
"""

from __future__ import annotations

from ..registry import FLOPS_PER_MAC, Attr, Cost, Ctx, FormulaLine, OpRule, Params, Saves, numel, register
from ._common import _as_module, _calls, _macs_flops_lines, _modules


def _linear_shape(ctx: Ctx):
    if len(ctx.x) < 1:
        raise ctx.fail("expects an input with a feature dimension, got [N]")
    return ctx.x[:-1] + (ctx["out_features"],)


def _linear_params(ctx: Ctx) -> Params:
    fo = ctx["out_features"]
    return Params(trainable=ctx.x[-1] * fo + (fo if ctx["bias"] else 0))


def _linear_cost(ctx: Ctx) -> Cost:
    rows = numel(ctx.x[:-1])             # a Linear on [N, *, in] applies to every leading position
    macs = rows * ctx.x[-1] * ctx["out_features"]
    flops = FLOPS_PER_MAC * macs
    bias_grad = numel(ctx.out) if ctx["bias"] else 0
    return Cost(macs=macs, flops=flops, bwd_input=(flops,), bwd_weight=flops + bias_grad)


def _linear_formula(ctx: Ctx, batch: int) -> list[FormulaLine]:
    rows = numel(ctx.x[:-1])
    names = (["rows"] if rows != 1 else []) + ["in_features", "out_features"]
    values = ([rows] if rows != 1 else []) + [ctx.x[-1], ctx["out_features"]]
    lines = _macs_flops_lines(names, values, batch)
    fo = ctx["out_features"]
    lines.append(FormulaLine("params", "in·out" + (" + out" if ctx["bias"] else ""),
                             f"{ctx.x[-1]}·{fo}" + (f" + {fo}" if ctx["bias"] else ""), _linear_params(ctx).trainable))
    return lines


def _linear_import(c, n, m):
    return c.emit(n.target, "linear", [c.ref(n.args[0])], out_features=m.out_features, bias=m.bias is not None)


def _linear_call(c, n):
    """F.linear(x, weight, bias): the weight and bias are constants, counted as this node's parameters."""
    weight, bias = c.arg(n, 1, "weight"), c.arg(n, 2, "bias")
    out_features = c.value(weight).shape[0]
    c.claim([weight, bias])
    return c.emit(c.scoped(n), "linear", [c.ref(n.args[0])], out_features=out_features, bias=bias is not None)


register(OpRule(
    "linear", "linear", (Attr("out_features", "pos"), Attr("bias", "bool", True)),
    _linear_shape, _linear_cost, _linear_formula, _linear_params,
    saves=lambda ctx: Saves(inputs=(0,)), channel="new", channel_field="out_features",
    doc="y = x·Wᵀ + b on the last dimension of any-rank input; in_features follow from the input", torch="nn.Linear",
    work="linear", gemm=lambda ctx, batch: (1, batch * numel(ctx.x[:-1]), ctx["out_features"]),
    to_torch=_as_module("Linear", lambda n: {"in_features": n.in_shapes[0][-1]}),
    imports=_modules(_linear_import, "Linear") + _calls(_linear_call, "torch.nn.functional.linear")))
