"""Composite attention blocks, one node each with their projections: ``multihead_attention``
(``nn.MultiheadAttention``, batch first) and ``window_attention`` (torchvision's Swin shifted-window attention,
v1 and v2). Attention alone on given Q, K, V is ``sdpa``, in ``matmul``.

FLOPs: 1 MAC = 2 FLOPs over the Q, K, V and output projections and Q·Kᵀ, P·V (for Swin inside each window, on the
map padded to whole windows), plus sdpa's softmax and scaling per score (``_SDPA_SOFTMAX_FLOPS``; backward
``_SDPA_SOFTMAX_BWD``). The weight gradients are those of the projections.
"""

from __future__ import annotations

from ..registry import (
    FLOPS_PER_MAC,
    Attr,
    Cost,
    Ctx,
    FormulaLine,
    OpRule,
    Params,
    Saves,
    TorchModule,
    cannot_convert,
    register,
)
from ._common import _SDPA_SOFTMAX_BWD, _SDPA_SOFTMAX_FLOPS, _calls, _modules, _pick


def _mha_shape(ctx: Ctx):
    q, k, v = ctx.ins
    e = ctx["embed_dim"]
    if e % ctx["num_heads"]:
        raise ctx.fail(f"num_heads {ctx['num_heads']} does not divide embed_dim {e}", "num_heads", ctx["num_heads"])
    if len(q) != 2 or len(k) != 2 or len(v) != 2:
        raise ctx.fail("expects batch-first [N, L, E] query, key and value")
    if q[-1] != e or k[0] != v[0]:
        raise ctx.fail(f"query must have {e} features and key/value the same length", "embed_dim", e)
    return (q[0], e)


def _mha_params(ctx: Ctx) -> Params:
    e, (_, kd), (_, vd) = ctx["embed_dim"], ctx.ins[1], ctx.ins[2]
    bias = 4 * e if ctx["bias"] else 0                   # in_proj_bias 3E + out_proj.bias E
    return Params(trainable=e * e + kd * e + vd * e + e * e + bias)


def _mha_cost(ctx: Ctx) -> Cost:
    (lq, e), (lk, kd), (_, vd) = ctx.ins
    proj = lq * e * e + lk * kd * e + lk * vd * e          # Q, K, V projections
    attn = 2 * lq * lk * e                                  # Q·Kᵀ and P·V over all heads
    out = lq * e * e                                        # output projection
    macs = proj + attn + out
    scores = ctx["num_heads"] * lq * lk
    f = FLOPS_PER_MAC * macs + _SDPA_SOFTMAX_FLOPS * scores
    dx = FLOPS_PER_MAC * macs + _SDPA_SOFTMAX_BWD * scores  # gradients through every product once
    w = FLOPS_PER_MAC * (proj + out)                        # weight gradients of the four projections
    return Cost(macs=macs, flops=f, bwd_input=(dx, 0, 0), bwd_weight=w)


def _mha_torch(n, xs):
    e = n.attrs["embed_dim"]
    kdim, vdim = n.in_shapes[1][-1], n.in_shapes[2][-1]
    other = {k: v for k, v in (("kdim", kdim), ("vdim", vdim)) if v != e}
    return TorchModule("MultiheadAttention", _pick(n, "embed_dim", "num_heads", "bias", **other, batch_first=True),
                       call="{own}({args}, need_weights=False)[0]")


def _mha_import(c, n, m):
    if not m.batch_first:
        raise c.unsupported(n, "nn.MultiheadAttention with batch_first=False")
    q, k, v = (c.ref(c.arg(n, i, key)) for i, key in enumerate(("query", "key", "value")))
    name = c.emit(n.target, "multihead_attention", [q, k, v], embed_dim=m.embed_dim, num_heads=m.num_heads,
                  bias=m.in_proj_bias is not None)
    return [name, None]      # (attn_output, attn_weights); the weights are not modelled


register(OpRule(
    "multihead_attention", "attention",
    (Attr("embed_dim", "pos"), Attr("num_heads", "pos"), Attr("bias", "bool", True)),
    _mha_shape, _mha_cost,
    lambda ctx, batch: [FormulaLine("MACs", "N·(L·E·E·3 + 2·L²·E + L·E·E)", f"{batch}·(…)",
                                    batch * _mha_cost(ctx).macs)],
    _mha_params, saves=lambda ctx: Saves(inputs=(0, 1, 2), output=True), arity=(3, 3), channel="none",
    doc="nn.MultiheadAttention (batch_first): projections, attention and output projection",
    torch="nn.MultiheadAttention",
    work="linear", to_torch=_mha_torch, imports=_modules(_mha_import, "MultiheadAttention")))


def _win_tokens(ctx: Ctx) -> tuple[int, int]:
    h, w, c = ctx.x
    wh, ww = ctx["window_size"]
    ph, pw = -(-h // wh) * wh, -(-w // ww) * ww            # padded to whole windows
    return ph * pw, min(wh, ph) * min(ww, pw)


def _win_shape(ctx: Ctx):
    if len(ctx.x) != 3:
        raise ctx.fail("expects channels-last [N, H, W, C]")
    if ctx.x[2] % ctx["num_heads"]:
        raise ctx.fail(f"num_heads {ctx['num_heads']} does not divide {ctx.x[2]} channels", "num_heads",
                       ctx["num_heads"])
    return ctx.x


def _win_cost(ctx: Ctx) -> Cost:
    c = ctx.x[2]
    tokens, per_window = _win_tokens(ctx)
    proj = tokens * c * 3 * c + tokens * c * c              # qkv and output projections on the padded map
    attn = 2 * tokens * per_window * c                      # Q·Kᵀ and P·V inside each window
    macs = proj + attn
    scores = ctx["num_heads"] * tokens * per_window
    return Cost(macs=macs, flops=FLOPS_PER_MAC * macs + _SDPA_SOFTMAX_FLOPS * scores,
                bwd_input=(FLOPS_PER_MAC * macs + _SDPA_SOFTMAX_BWD * scores,), bwd_weight=FLOPS_PER_MAC * proj)


def _window_attention_torch(n, xs):
    """torchvision's Swin window attention, the version told apart by its extra parameters: v1 has a
    relative-position bias table, (2·w_h − 1)·(2·w_w − 1)·heads; v2 a continuous-position MLP 2 → 512 → heads
    (2·512 + 512 + 512·heads) and a logit scale per head."""
    (wh, ww), heads, extra = n.attrs["window_size"], n.attrs["num_heads"], n.attrs["extra_params"]
    versions = {(2 * wh - 1) * (2 * ww - 1) * heads: "ShiftedWindowAttention",
                2 * 512 + 512 + 512 * heads + heads: "ShiftedWindowAttentionV2"}
    if extra not in versions:
        raise cannot_convert(n, f"extra_params {extra:,} match neither torchvision's Swin v1 window attention "
                                f"({min(versions):,}) nor v2 ({max(versions):,})")
    kwargs = {"dim": n.in_shapes[0][-1], "window_size": [wh, ww], "shift_size": list(n.attrs["shift_size"]),
              "num_heads": heads, "qkv_bias": n.attrs["qkv_bias"], "proj_bias": n.attrs["proj_bias"]}
    return TorchModule(versions[extra], kwargs, origin="torchvision.models.swin_transformer")


_WINDOW_ARGS = ("input", "qkv_weight", "proj_weight", "relative_position_bias", "window_size", "num_heads",
                "shift_size", "attention_dropout", "dropout", "qkv_bias", "proj_bias", "logit_scale")


def _window_attention_import(c, n):
    """torchvision.models.swin_transformer.shifted_window_attention(input, qkv_weight, proj_weight,
    relative_position_bias, window_size, num_heads, shift_size, attention_dropout, dropout, qkv_bias, proj_bias,
    logit_scale, training): the weights, tables and scales are constants; what goes beyond the four projections is
    ``extra_params``."""
    args = {k: c.arg(n, i, k) for i, k in enumerate(_WINDOW_ARGS)}
    fresh, buffers = c.claim([args[k] for k in ("qkv_weight", "proj_weight", "relative_position_bias", "qkv_bias",
                                                 "proj_bias", "logit_scale") if args[k] is not None])
    channels = c.value(args["input"]).shape[-1]
    modelled = 4 * channels * channels + (3 * channels if args["qkv_bias"] is not None else 0) + \
        (channels if args["proj_bias"] is not None else 0)
    return c.emit(c.scoped(n), "window_attention", [c.ref(args["input"])],
                  window_size=c.pair(c.value(args["window_size"])), num_heads=int(c.value(args["num_heads"])),
                  shift_size=c.pair(c.value(args["shift_size"])), extra_params=max(fresh - modelled, 0),
                  extra_buffers=buffers, qkv_bias=args["qkv_bias"] is not None, proj_bias=args["proj_bias"] is not None)


register(OpRule(
    "window_attention", "attention",
    (Attr("window_size", "pair"), Attr("num_heads", "pos"), Attr("shift_size", "pair0", 0),
     Attr("extra_params", "nonneg", 0, doc="relative-position tables, logit scales and bias MLPs"),
     Attr("extra_buffers", "nonneg", 0, doc="relative-position index and coordinate tables"),
     Attr("qkv_bias", "bool", True), Attr("proj_bias", "bool", True)),
    _win_shape, _win_cost,
    lambda ctx, batch: [FormulaLine("MACs", "N·(T·C·4C + 2·T·w²·C), T = padded tokens",
                                    f"{batch}·(…)", batch * _win_cost(ctx).macs)],
    lambda ctx: Params(trainable=4 * ctx.x[2] ** 2 + (3 * ctx.x[2] if ctx["qkv_bias"] else 0)
                       + (ctx.x[2] if ctx["proj_bias"] else 0) + ctx["extra_params"], buffers=ctx["extra_buffers"]),
    saves=lambda ctx: Saves(inputs=(0,), output=True), channel="pass",
    doc="Swin (shifted) window self-attention on a channels-last map", torch="torchvision shifted_window_attention",
    work="linear", to_torch=_window_attention_torch,
    imports=_calls(_window_attention_import, "torchvision.models.swin_transformer.shifted_window_attention")))
