"""Pooling and resizing: ``max_pool2d`` and ``avg_pool2d`` (one factory), ``adaptive_avg_pool2d`` and
``adaptive_max_pool2d`` (another), and ``interpolate`` (``nn.Upsample``, ``F.interpolate``).

FLOPs per output: a max pool k_h·k_w − 1 comparisons (backward routes each gradient to its argmax, 1 add); an
average pool k_h·k_w − 1 adds and 1 divide (backward spreads g/k over the window, 1 divide and k adds). Adaptive
pools count the input positions their bins read, which can overlap (``_adaptive_bins``). Interpolation per output:
nearest 0, bilinear 9, bicubic 35 (``_INTERP_FLOPS``). Max pools also keep their int64 argmax indices (8 bytes per
output).
"""

from __future__ import annotations

from math import floor, gcd

from ..registry import MAX_DIM, Attr, Cost, Ctx, FormulaLine, OpRule, Saves, _allocates_output, _pair, numel, register
from ._common import _as_module, _calls, _modules, _mul_formula, _need_rank, _pool_work, _window_out


def _pool_shape(ctx: Ctx):
    _need_rank(ctx, ctx.x, 3)
    c, h, w = ctx.x
    kh, kw = ctx["kernel_size"]
    stride = ctx["stride"] or (kh, kw)
    ph, pw = ctx["padding"]
    dh, dw = ctx.attrs.get("dilation", (1, 1))
    if 2 * ph > kh or 2 * pw > kw:
        raise ctx.fail(f"padding {ph}×{pw} must be at most half the kernel {kh}×{kw}", "padding", (ph, pw))
    ho = _window_out(ctx, h, kh, stride[0], ph, dh, ctx["ceil_mode"], "height")
    wo = _window_out(ctx, w, kw, stride[1], pw, dw, ctx["ceil_mode"], "width")
    return (c, ho, wo)


def _max_pool_alloc(ctx: Ctx, batch: int, act_bytes: int, weight_bytes: int) -> tuple:
    """The output, then its int64 indices, which are freed after (even at inference)."""
    return (("out",), ("alloc", numel(ctx.out) * batch * 8), ("free", 0))


def _pool_factory(kind: str, torch: str, is_max: bool, calls: tuple[str, ...]) -> OpRule:
    attrs = [Attr("kernel_size", "pair"), Attr("stride", "opt_pair_stride", None, doc="default: kernel_size"),
             Attr("padding", "pair0", 0), Attr("ceil_mode", "bool", False)]
    if is_max:
        attrs.append(Attr("dilation", "pair", 1))
    else:
        attrs += [Attr("count_include_pad", "bool", True), Attr("divisor_override", "opt_pos", None)]

    def cost(ctx: Ctx) -> Cost:
        kh, kw = ctx["kernel_size"]
        o = numel(ctx.out)
        if is_max:    # k−1 comparisons per output; backward routes each gradient to its argmax (1 add)
            return Cost(flops=o * (kh * kw - 1), bwd_input=(o,))
        # k−1 adds + 1 divide per output; backward spreads g/k over the window (1 divide + k adds)
        return Cost(flops=o * kh * kw, bwd_input=(o * (kh * kw + 1),))

    def formula(ctx: Ctx, batch: int) -> list[FormulaLine]:
        kh, kw = ctx["kernel_size"]
        per = kh * kw - 1 if is_max else kh * kw
        how = "k_h·k_w − 1 comparisons" if is_max else "k_h·k_w − 1 adds + 1 divide"
        return [_mul_formula("FLOPs", ["N", "outputs"], [batch, numel(ctx.out)], per, f"{per} ({how})")]

    def saves(ctx: Ctx) -> Saves:
        # max pooling keeps its input and int64 argmax indices (8 bytes per output); average pooling its input
        return Saves(inputs=(0,), extra_bytes=8 * numel(ctx.out)) if is_max else Saves(inputs=(0,))

    def module(c, n, m):
        extra = dict(dilation=c.pair(m.dilation)) if is_max else \
            dict(count_include_pad=m.count_include_pad, divisor_override=m.divisor_override)
        return c.emit(n.target, kind, [c.ref(n.args[0])], kernel_size=c.pair(m.kernel_size),
                      stride=c.pair(m.stride) if m.stride is not None else None, padding=c.pair(m.padding),
                      ceil_mode=m.ceil_mode, **extra)

    def call(c, n):
        """F.max_pool2d(x, kernel_size, stride, padding, dilation, ceil_mode) / F.avg_pool2d(x, kernel_size,
        stride, padding, ceil_mode, count_include_pad)."""
        stride = c.value(c.arg(n, 2, "stride"))
        attrs = dict(kernel_size=c.pair(c.value(c.arg(n, 1, "kernel_size"))), stride=c.pair(stride) if stride else None,
                     padding=c.pair(c.value(c.arg(n, 3, "padding", 0))))
        if is_max:
            attrs.update(dilation=c.pair(c.value(c.arg(n, 4, "dilation", 1))),
                         ceil_mode=bool(c.value(c.arg(n, 5, "ceil_mode", False))))
        else:
            attrs.update(ceil_mode=bool(c.value(c.arg(n, 4, "ceil_mode", False))),
                         count_include_pad=bool(c.value(c.arg(n, 5, "count_include_pad", True))))
        return c.emit(c.scoped(n), kind, [c.ref(n.args[0])], **attrs)

    cls = torch.removeprefix("nn.")
    return OpRule(kind, "pool", tuple(attrs), _pool_shape, cost, formula, saves=saves, channel="pass", torch=torch,
                  work=_pool_work, cpu_alloc=_max_pool_alloc if is_max else _allocates_output, to_torch=_as_module(cls),
                  imports=_modules(module, cls) + _calls(call, *calls))


register(_pool_factory("max_pool2d", "nn.MaxPool2d", True, ("torch.nn.functional.max_pool2d", "torch.max_pool2d")))
register(_pool_factory("avg_pool2d", "nn.AvgPool2d", False, ("torch.nn.functional.avg_pool2d",)))


def _adaptive_bins(size: int, out: int) -> int:
    """Total input positions read by PyTorch's adaptive pooling bins along one axis (bins can overlap): bin i reads
    [floor(i·S/O), ceil((i+1)·S/O)). Summed over i, the floors telescope to S, and ceil(j·S/O) exceeds
    floor(j·S/O) by one unless O divides j·S, which happens for gcd(S, O) of j = 1…O: S + O − gcd(S, O), in
    constant time (the loop over every bin took seconds for O = 2^24)."""
    return size + out - gcd(size, out)


def _adaptive_shape(ctx: Ctx):
    _need_rank(ctx, ctx.x, 3)
    c, h, w = ctx.x
    oh, ow = ctx["output_size"]
    return (c, oh or h, ow or w)


def _adaptive_factory(kind: str, torch: str, is_max: bool) -> OpRule:
    def cost(ctx: Ctx) -> Cost:
        c, h, w = ctx.x
        _, oh, ow = ctx.out
        reads = c * _adaptive_bins(h, oh) * _adaptive_bins(w, ow)
        o = numel(ctx.out)
        if is_max:       # bin−1 comparisons per output
            return Cost(flops=reads - o, bwd_input=(o,))
        return Cost(flops=reads, bwd_input=(reads + o,))   # bin−1 adds + 1 divide per output

    def formula(ctx: Ctx, batch: int) -> list[FormulaLine]:
        c, h, w = ctx.x
        _, oh, ow = ctx.out
        reads = _adaptive_bins(h, oh) * _adaptive_bins(w, ow)
        val = cost(ctx).flops
        how = "Σ bins − outputs (comparisons)" if is_max else "Σ bin sizes (adds + 1 divide per output)"
        return [FormulaLine("FLOPs", f"N·C·{how}",
                            f"{batch}·{c}·{reads}" + (f" − {batch}·{numel(ctx.out)}" if is_max else ""),
                            batch * val)]

    def saves(ctx: Ctx) -> Saves:
        if is_max:                       # the input and the int64 argmax indices
            return Saves(inputs=(0,), extra_bytes=8 * numel(ctx.out))
        # PyTorch computes a 1×1 output as a mean, which keeps only sizes; any other output keeps its input
        # (AdaptiveAvgPool2DBackward0 saves self: VGG's 7×7 and AlexNet's 6×6 heads)
        return Saves() if tuple(ctx.out[1:]) == (1, 1) else Saves(inputs=(0,))

    def module(c, n, m):
        return c.emit(n.target, kind, [c.ref(n.args[0])], output_size=c.pair(m.output_size))

    def call(c, n):
        return c.emit(c.scoped(n), kind, [c.ref(n.args[0])], output_size=c.pair(c.value(c.arg(n, 1, "output_size"))))

    cls = torch.removeprefix("nn.")
    return OpRule(kind, "pool", (Attr("output_size", "opt_pair"),), _adaptive_shape, cost, formula, saves=saves,
                  channel="pass", torch=torch, work=_pool_work, to_torch=_as_module(cls),
                  imports=_modules(module, cls) + _calls(call, f"torch.nn.functional.{kind}"))


register(_adaptive_factory("adaptive_avg_pool2d", "nn.AdaptiveAvgPool2d", False))
register(_adaptive_factory("adaptive_max_pool2d", "nn.AdaptiveMaxPool2d", True))


def _interp_shape(ctx: Ctx):
    if len(ctx.x) != 3:
        raise ctx.fail("expects [N, C, H, W]")
    c, h, w = ctx.x
    size, scale = ctx["size"], ctx["scale_factor"]      # checked by their kinds: a pair, a positive number or pair
    if (size is None) == (scale is None):
        raise ctx.fail("give exactly one of size and scale_factor", "size", size)
    if ctx["align_corners"] is not None and ctx["mode"] == "nearest":
        raise ctx.fail("align_corners only applies to bilinear and bicubic modes", "align_corners",
                       ctx["align_corners"])
    if size is not None:
        oh, ow = _pair(size, 1, ctx.node, "size")
    else:
        s = scale if isinstance(scale, tuple) else (scale, scale)
        if h * s[0] > MAX_DIM or w * s[1] > MAX_DIM:
            raise ctx.fail(f"scale_factor {scale} makes an absurdly large output (limit {MAX_DIM:,})", "scale_factor",
                           scale)
        oh, ow = floor(h * s[0]), floor(w * s[1])
        if oh < 1 or ow < 1:
            raise ctx.fail(f"scale_factor {scale} leaves an empty output", "scale_factor", scale)
    return (c, oh, ow)


# nearest copies (0 FLOPs); bilinear blends 4 neighbours with 3 lerps of 3 FLOPs each → 9 per output; bicubic
# blends 16 neighbours (4 cubic weights per axis, 4 + 1 four-tap dot products of 7 FLOPs) → 35 per output
_INTERP_FLOPS = {"nearest": 0, "bilinear": 9, "bicubic": 35}


def _interp_cost(ctx: Ctx) -> Cost:
    o = numel(ctx.out)
    k = _INTERP_FLOPS[ctx["mode"]]
    return Cost(flops=k * o, bwd_input=(max(k, 1) * o,))


def _resize(c, n, base: str, size, scale, mode, align):
    if size is not None:
        size = c.pair(size)
    elif scale is not None:
        scale = tuple(float(s) for s in c.pair(scale))
    return c.emit(base, "interpolate", [c.ref(n.args[0])], size=size, scale_factor=scale, mode=mode,
                  align_corners=align if mode != "nearest" else None)


def _upsample_import(c, n, m):
    return _resize(c, n, n.target, m.size, m.scale_factor, m.mode, m.align_corners)


def _interpolate_call(c, n):
    return _resize(c, n, c.scoped(n), *(c.value(c.arg(n, i, k, d)) for i, k, d in
                                        ((1, "size", None), (2, "scale_factor", None), (3, "mode", "nearest"),
                                         (4, "align_corners", None))))


register(OpRule(
    "interpolate", "pool",
    (Attr("size", "opt_size", None), Attr("scale_factor", "opt_scale", None),
     Attr("mode", "choice", "nearest", ("nearest", "bilinear", "bicubic")),
     Attr("align_corners", "opt_bool", None)),
    _interp_shape, _interp_cost,
    lambda ctx, batch: [_mul_formula("FLOPs", ["N", "outputs"], [batch, numel(ctx.out)], _INTERP_FLOPS[ctx["mode"]],
                                     ctx["mode"])],
    channel="pass", doc="upsample / interpolate", torch="F.interpolate", work=_pool_work,
    to_torch=_as_module("Upsample"),
    imports=_modules(_upsample_import, "Upsample") + _calls(_interpolate_call, "torch.nn.functional.interpolate")))
