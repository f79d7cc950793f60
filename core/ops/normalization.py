"""Normalisation: ``batch_norm`` (BatchNorm1d/2d/3d by the input's rank), ``layer_norm`` and ``group_norm``.

FLOPs per element. BatchNorm at inference is folded to one scale and shift, y = x·a + b with a = γ/√(var+ε) and
b = β − mean·a precomputed per channel: 2. LayerNorm and GroupNorm compute statistics at inference too: mean (1),
variance (3), normalise (2), 6 in all, + 2 for the affine γ·x̂ + β. The training backward of all three: the sums
Σdy and Σdy·x̂ (5), which dβ, dγ and dx share, and dx (5, 6 with the γ multiply); with affine weights the sums are
booked to the weight gradient, otherwise to the input gradient.
"""

from __future__ import annotations

from ..registry import Attr, Cost, Ctx, FormulaLine, OpRule, Params, Saves, TorchModule, cannot_convert, numel, register
from ._common import _as_module, _calls, _modules, _mul_formula, _pick


def _bn_shape(ctx: Ctx):
    if not 1 <= len(ctx.x) <= 4:
        raise ctx.fail(f"expects [N, C], [N, C, L], [N, C, H, W] or [N, C, D, H, W] (BatchNorm1d/2d/3d), got a "
                       f"{len(ctx.x) + 1}-d input")
    return ctx.x


def _bn_params(ctx: Ctx) -> Params:
    c = ctx.x[0]
    return Params(trainable=2 * c if ctx["affine"] else 0, buffers=2 * c if ctx["track_running_stats"] else 0)


# Inference: y = x·a + b with a = γ/√(var+ε), b = β − mean·a precomputed per channel → 2 FLOPs per element.
# Training backward, per element: the sums Σdy and Σdy·x̂ (x̂ recomputed 2, product 1, two reductions 2 = 5) give
# dβ and dγ and are shared by dx = (1/σ)·(γ·dy − (Σdy + x̂·Σdy·x̂)/M) (5 more, 6 with the γ multiply).
# With affine weights the sums are booked to the weight gradient, otherwise to the input gradient.
_NORM_SUMS, _NORM_DX = 5, 5


def _norm_backward(e: int, affine: bool) -> tuple[tuple[int], int]:
    if affine:
        return ((_NORM_DX + 1) * e,), _NORM_SUMS * e
    return ((_NORM_DX + _NORM_SUMS) * e,), 0


def _bn_cost(ctx: Ctx) -> Cost:
    e = numel(ctx.x)
    bi, bw = _norm_backward(e, ctx["affine"])
    return Cost(flops=2 * e, bwd_input=bi, bwd_weight=bw)


def _bn_formula(ctx: Ctx, batch: int) -> list[FormulaLine]:
    c = ctx.x[0]
    return [_mul_formula("FLOPs", ["N", "elements"], [batch, numel(ctx.x)], 2, "2 (scale and shift, folded)"),
            FormulaLine("params", "2·C (γ, β)", f"2·{c}", _bn_params(ctx).trainable),
            FormulaLine("buffers", "2·C (running mean, var)", f"2·{c}", _bn_params(ctx).buffers)]


_BATCH_NORM_BY_RANK = {1: "BatchNorm1d", 2: "BatchNorm1d", 3: "BatchNorm2d", 4: "BatchNorm3d"}   # per-sample rank


def _bn_torch(n, xs):
    rank = len(n.in_shapes[0])
    if rank not in _BATCH_NORM_BY_RANK:
        raise cannot_convert(n, f"torch has BatchNorm1d/2d/3d for 2- to 5-d inputs, this one is {rank + 1}-d")
    return TorchModule(_BATCH_NORM_BY_RANK[rank], _pick(n, *n.attrs, num_features=n.in_shapes[0][0]))


def _bn_import(c, n, m):
    return c.emit(n.target, "batch_norm", [c.ref(n.args[0])], eps=m.eps, momentum=m.momentum, affine=m.affine,
                  track_running_stats=m.track_running_stats)


def _bn_call(c, n):
    """F.batch_norm(x, running_mean, running_var, weight, bias, training, momentum, eps), as timm's BatchNormAct2d
    calls it: the weight, bias and running statistics are constants, counted here."""
    mean, var, w, b = (c.arg(n, i, k) for i, k in enumerate(("running_mean", "running_var", "weight", "bias"), 1))
    if (w is None) != (b is None):
        raise c.unsupported(n, "batch_norm with a weight but no bias (or a bias but no weight)")
    c.claim([a for a in (mean, var, w, b) if a is not None])
    momentum = c.value(c.arg(n, 6, "momentum", 0.1))
    return c.emit(c.scoped(n), "batch_norm", [c.ref(n.args[0])], eps=float(c.value(c.arg(n, 7, "eps", 1e-5))),
                  momentum=0.1 if momentum is None else float(momentum), affine=w is not None,
                  track_running_stats=mean is not None)


register(OpRule(
    "batch_norm", "norm",
    (Attr("eps", "nonneg_float", 1e-5, doc="≥ 0, as torch's batch_norm requires"), Attr("momentum", "float", 0.1),
     Attr("affine", "bool", True),
     Attr("track_running_stats", "bool", True)),
    _bn_shape, _bn_cost, _bn_formula, _bn_params,
    saves=lambda ctx: Saves(inputs=(0,), fixed_bytes=2 * 4 * ctx.x[0]), channel="pass",
    doc="batch normalisation over dim 1 (BatchNorm1d/2d); num_features follow from the input", torch="nn.BatchNorm2d",
    work="batch_norm", fusion="epilogue", to_torch=_bn_torch,
    imports=_modules(_bn_import, "BatchNorm1d", "BatchNorm2d") + _calls(_bn_call, "torch.nn.functional.batch_norm")))


# LayerNorm / GroupNorm compute statistics at inference too: mean (1), variance (subtract, square, add: 3),
# normalise (subtract, multiply: 2) → 6 per element, + 2 for the affine γ·x̂ + β. Backward as BatchNorm's.
def _stat_norm_cost(ctx: Ctx, affine: bool) -> Cost:
    e = numel(ctx.x)
    bi, bw = _norm_backward(e, affine)
    return Cost(flops=(8 if affine else 6) * e, bwd_input=bi, bwd_weight=bw)


def _ln_shape(ctx: Ctx):
    if ctx["normalized_ndim"] > len(ctx.x):
        raise ctx.fail(f"normalises {ctx['normalized_ndim']} trailing dims of a {len(ctx.x) + 1}-d input",
                       "normalized_ndim", ctx["normalized_ndim"])
    return ctx.x


def _ln_params(ctx: Ctx) -> Params:
    d = numel(ctx.x[len(ctx.x) - ctx["normalized_ndim"]:])
    return Params(trainable=(d if ctx["elementwise_affine"] else 0)
                  + (d if ctx["elementwise_affine"] and ctx["bias"] else 0))


def _ln_formula(ctx: Ctx, batch: int) -> list[FormulaLine]:
    k = 8 if ctx["elementwise_affine"] else 6
    return [_mul_formula("FLOPs", ["N", "elements"], [batch, numel(ctx.x)], k,
                         f"{k} (statistics 4, normalise 2, affine 2)")]


def _ln_torch(n, xs):
    k = n.attrs["normalized_ndim"]
    trailing = n.in_shapes[0][-k:]
    return TorchModule("LayerNorm", _pick(n, "eps", "elementwise_affine", "bias",
                                          normalized_shape=trailing[0] if k == 1 else trailing))


def _ln_import(c, n, m):
    return c.emit(n.target, "layer_norm", [c.ref(n.args[0])], normalized_ndim=len(m.normalized_shape), eps=m.eps,
                  elementwise_affine=m.elementwise_affine, bias=getattr(m, "bias", None) is not None)


def _ln_call(c, n):
    """F.layer_norm(x, normalized_shape, weight, bias, eps): the weight and bias are constants, counted here."""
    shape = c.value(c.arg(n, 1, "normalized_shape"))
    w, b = c.arg(n, 2, "weight"), c.arg(n, 3, "bias")
    c.claim([w, b])
    return c.emit(c.scoped(n), "layer_norm", [c.ref(n.args[0])], normalized_ndim=len(shape),
                  eps=float(c.value(c.arg(n, 4, "eps", 1e-5))), elementwise_affine=w is not None, bias=b is not None)


register(OpRule(
    "layer_norm", "norm",
    (Attr("normalized_ndim", "pos", 1, doc="how many trailing dims are normalised"), Attr("eps", "float", 1e-5),
     Attr("elementwise_affine", "bool", True), Attr("bias", "bool", True)),
    _ln_shape, lambda ctx: _stat_norm_cost(ctx, ctx["elementwise_affine"]), _ln_formula, _ln_params,
    saves=lambda ctx: Saves(inputs=(0,), extra_bytes=2 * 4 * numel(ctx.x[:len(ctx.x) - ctx["normalized_ndim"]])),
    channel="pass", doc="layer normalisation over the trailing dims; normalized_shape follows from the input",
    torch="nn.LayerNorm", work="elementwise", fusion="epilogue", to_torch=_ln_torch,
    imports=_modules(_ln_import, "LayerNorm") + _calls(_ln_call, "torch.nn.functional.layer_norm", "torch.layer_norm")))


def _gn_shape(ctx: Ctx):
    if len(ctx.x) < 1:
        raise ctx.fail("expects [N, C, …]")
    if ctx.x[0] % ctx["num_groups"]:
        raise ctx.fail(f"num_groups {ctx['num_groups']} does not divide the {ctx.x[0]} channels", "num_groups",
                       ctx["num_groups"])
    return ctx.x


def _gn_import(c, n, m):
    return c.emit(n.target, "group_norm", [c.ref(n.args[0])], num_groups=m.num_groups, eps=m.eps, affine=m.affine)


def _gn_call(c, n):
    """F.group_norm(x, num_groups, weight, bias, eps): the weight and bias are constants, counted here."""
    w, b = c.arg(n, 2, "weight"), c.arg(n, 3, "bias")
    if (w is None) != (b is None):
        raise c.unsupported(n, "group_norm with a weight but no bias (or a bias but no weight)")
    c.claim([a for a in (w, b) if a is not None])
    return c.emit(c.scoped(n), "group_norm", [c.ref(n.args[0])], num_groups=int(c.value(c.arg(n, 1, "num_groups"))),
                  eps=float(c.value(c.arg(n, 4, "eps", 1e-5))), affine=w is not None)


register(OpRule(
    "group_norm", "norm", (Attr("num_groups", "pos"), Attr("eps", "float", 1e-5), Attr("affine", "bool", True)),
    _gn_shape, lambda ctx: _stat_norm_cost(ctx, ctx["affine"]),
    lambda ctx, batch: [_mul_formula("FLOPs", ["N", "elements"], [batch, numel(ctx.x)], 8 if ctx["affine"] else 6,
                                     "per element")],
    lambda ctx: Params(trainable=2 * ctx.x[0] if ctx["affine"] else 0),
    saves=lambda ctx: Saves(inputs=(0,), extra_bytes=2 * 4 * ctx["num_groups"]), channel="pass",
    doc="group normalisation; num_channels follow from the input", torch="nn.GroupNorm", work="elementwise",
    fusion="epilogue", to_torch=_as_module("GroupNorm", lambda n: {"num_channels": n.in_shapes[0][0]}),
    imports=_modules(_gn_import, "GroupNorm") + _calls(_gn_call, "torch.nn.functional.group_norm")))
