"""Convolutions: ``conv2d`` (``nn.Conv2d``, ``F.conv2d`` with a constant weight, ``nn.Conv1d`` on [N, C, L] as a
1×k conv2d) and ``conv_transpose2d``.

FLOPs: 1 MAC = 2 FLOPs. A conv's MACs are C_out·H_out·W_out·(C_in/groups)·k_h·k_w per sample; a transposed conv's
C_in·H_in·W_in·(C_out/groups)·k_h·k_w (every input pixel scatters into its outputs). Backward: dL/dx and dL/dW each
take the forward's multiply-adds (a fixed filter, held in a buffer, gets no dL/dW), and the bias gradient one add
per output. The forward FLOPs of Winograd and FFT convolution are in ``_conv_algorithms``, what oneDNN allocates on
a CPU in ``_conv_alloc``.
"""

from __future__ import annotations

from math import ceil, log2

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
    numel,
    register,
)
from ._common import _as_module, _calls, _in_channels, _macs_flops_lines, _modules, _n, _need_rank, _pick


def _conv_geometry(ctx: Ctx):
    c, h, w = ctx.x
    kh, kw = ctx["kernel_size"]
    sh, sw = ctx["stride"]
    dh, dw = ctx["dilation"]
    pad = ctx["padding"]
    if pad == "valid":
        pad = (0, 0)
    if pad == "same":
        if (sh, sw) != (1, 1):
            raise ctx.fail("padding 'same' needs stride 1 (as in PyTorch)", "padding", "same")
        # total padding d·(k−1) per axis keeps the size; PyTorch puts the odd extra element on the right
        ho, wo = h, w            # the padded input always holds the kernel
    else:
        ph, pw = pad
        if kh * dh == 0:
            raise ctx.fail("kernel_size must be positive", "kernel_size", (kh, kw))
        eff_h, eff_w = dh * (kh - 1) + 1, dw * (kw - 1) + 1
        if eff_h > h + 2 * ph or eff_w > w + 2 * pw:
            raise ctx.fail(f"kernel {eff_h}×{eff_w} is larger than its padded input {h + 2 * ph}×{w + 2 * pw}",
                           "kernel_size", (kh, kw))
        ho = (h + 2 * ph - eff_h) // sh + 1
        wo = (w + 2 * pw - eff_w) // sw + 1
    return c, ho, wo


def _check_groups(ctx: Ctx, c_in: int, c_out: int, out_field: str) -> int:
    g = ctx["groups"]
    if c_in % g:
        raise ctx.fail(f"groups {g} does not divide the {c_in} input channels", "groups", g)
    if c_out % g:
        raise ctx.fail(f"groups {g} does not divide {out_field} {c_out}", "groups", g)
    return g


def _conv_shape(ctx: Ctx):
    _need_rank(ctx, ctx.x, 3)
    c, ho, wo = _conv_geometry(ctx)
    _check_groups(ctx, c, ctx["out_channels"], "out_channels")
    return (ctx["out_channels"], ho, wo)


def _conv_params(ctx: Ctx) -> Params:
    c_in = ctx.x[0]
    kh, kw = ctx["kernel_size"]
    co = ctx["out_channels"]
    weight, bias = co * (c_in // ctx["groups"]) * kh * kw, (co if ctx["bias"] else 0)
    if ctx["fixed_weight"]:
        return Params(trainable=bias, buffers=weight)
    return Params(trainable=weight + bias)


def _conv_macs(ctx: Ctx) -> int:
    c_in = ctx.x[0]
    co, ho, wo = ctx.out
    kh, kw = ctx["kernel_size"]
    return co * ho * wo * (c_in // ctx["groups"]) * kh * kw


def _conv_cost(ctx: Ctx) -> Cost:
    macs = _conv_macs(ctx)
    flops = FLOPS_PER_MAC * macs
    bias_grad = numel(ctx.out) if ctx["bias"] else 0     # dL/db sums the output gradient: one add per output
    # dL/dx is a transposed conv with the same multiply-adds; dL/dW correlates x with dL/dy: again the same MACs
    # (none for a fixed filter: a buffer gets no gradient).
    return Cost(macs=macs, flops=flops, bwd_input=(flops,), bwd_weight=(0 if ctx["fixed_weight"] else flops)
                + bias_grad)


def _conv_formula(ctx: Ctx, batch: int) -> list[FormulaLine]:
    co, ho, wo = ctx.out
    kh, kw = ctx["kernel_size"]
    g = ctx["groups"]
    cin_g = ctx.x[0] // g
    lines = _macs_flops_lines(["C_out", "H_out", "W_out", "(C_in/groups)", "k_h", "k_w"],
                              [co, ho, wo, cin_g, kh, kw], batch)
    lines.insert(0, FormulaLine("outputs", "N·C_out·H_out·W_out", f"{batch}·{co}·{ho}·{wo}", batch * co * ho * wo))
    k = cin_g * kh * kw
    if ctx["bias"]:
        lines.append(FormulaLine("per output", "(C_in/groups)·k_h·k_w multiplies + (that − 1) adds + 1 bias add",
                                 f"{_n(k)} + {_n(k - 1)} + 1", 2 * k))
    else:
        lines.append(FormulaLine("per output",
                                 "(C_in/groups)·k_h·k_w multiplies + (that − 1) adds, counted as 2 per MAC",
                                 f"{_n(k)} + {_n(k - 1)} ≈ 2 × {_n(k)}", 2 * k))
    p = _conv_params(ctx)
    lines.append(FormulaLine("params", "C_out·(C_in/groups)·k_h·k_w" + (" + C_out" if ctx["bias"] else ""),
                             f"{co}·{cin_g}·{kh}·{kw}" + (f" + {co}" if ctx["bias"] else ""), p.trainable))
    return lines


def _conv_work(ctx: Ctx) -> str:
    if ctx["groups"] == 1:
        return "pointwise_conv" if tuple(ctx["kernel_size"]) == (1, 1) and tuple(ctx["stride"]) == (1, 1) else "conv"
    if not _is_depthwise(ctx):
        return "grouped_conv"
    kh, kw = ctx["kernel_size"]
    return "depthwise_conv_large" if kh * kw > 9 else "depthwise_conv"


def _is_depthwise(ctx: Ctx) -> bool:
    """groups == in_channels (> 1), out_channels a multiple of them (the channel multiplier)."""
    c_in = ctx.x[0]
    return ctx["groups"] > 1 and ctx["groups"] == c_in and ctx.out[0] % c_in == 0


def _conv_channel(ctx: Ctx) -> str:
    return "depthwise" if _is_depthwise(ctx) else "new"


def _depthwise_follow(ctx: Ctx, channels: int) -> dict:
    """A depthwise conv keeps groups = its input channels and its channel multiplier."""
    return {"groups": channels, "out_channels": channels * (ctx.out[0] // ctx.x[0])}


# oneDNN (PyTorch's CPU convolutions) runs on blocked layouts: it allocates reordered copies of the input (not for
# ≤ 3 input channels, which it reads as they are), of the weights and of the output, then the output, and frees the
# copies (order traced with an LD_PRELOAD shim on malloc/posix_memalign/free). A 1×1, stride-1, ungrouped conv at
# batch ≤ 8 runs on the plain layout and allocates only its output.
PLAIN_1X1_MAX_BATCH = 8


def _conv_alloc(ctx: Ctx, batch: int, act_bytes: int, weight_bytes: int) -> tuple:
    if ctx["kernel_size"] == (1, 1) and ctx["stride"] == (1, 1) and ctx["groups"] == 1 and batch <= PLAIN_1X1_MAX_BATCH:
        return (("out",),)
    weights = ("alloc", _conv_params(ctx).trainable * weight_bytes)
    out = ("alloc", numel(ctx.out) * batch * act_bytes)
    if ctx.x[0] <= 3:             # read as it is: the weight and output copies only
        return (weights, out, ("free", 0), ("out",), ("free", 1))
    src = ("alloc", numel(ctx.x) * batch * act_bytes)
    return (src, weights, out, ("free", 1), ("free", 0), ("out",), ("free", 2))


def _conv_algorithms(ctx: Ctx, algorithm: str) -> tuple[int, int] | None:
    """(FLOPs per sample, FLOPs per batch) of the forward pass computed by ``algorithm`` instead of directly; None
    where it does not apply (both need stride 1, dilation 1, groups 1).

    Winograd F(2×2, 3×3) (Lavin & Gray 2016) for 3×3 kernels: per 2×2 output tile 16 multiply-adds per (C_in, C_out)
    pair instead of 36, plus input (32 adds per tile and C_in) and output (24 adds per tile and C_out) transforms;
    filter transforms (42 FLOPs per pair) once per batch.
    FFT (Mathieu et al. 2014): real 2-D FFTs of size M = H_pad·W_pad at 2.5·M·log2 M FLOPs for each input and output
    channel, a complex multiply-add (8 FLOPs) per half-spectrum point per channel pair (4·C_in·C_out·M); filter FFTs
    (C_in·C_out of them) once per batch."""
    c_in, h, w = ctx.x
    c_out, ho, wo = ctx.out
    if not (ctx["stride"] == (1, 1) and ctx["dilation"] == (1, 1) and ctx["groups"] == 1):
        return None
    if algorithm == "winograd":
        if ctx["kernel_size"] != (3, 3):
            return None
        tiles = ceil(ho / 2) * ceil(wo / 2)
        return 32 * tiles * c_in * c_out + 32 * tiles * c_in + 24 * tiles * c_out, 42 * c_in * c_out
    if algorithm == "fft":
        pad, (kh, kw) = ctx["padding"], ctx["kernel_size"]
        ph, pw = (0, 0) if pad == "valid" else ((kh - 1) // 2, (kw - 1) // 2) if pad == "same" else pad
        m = (h + 2 * ph) * (w + 2 * pw)
        fft = 2.5 * m * log2(m) if m > 1 else 0
        return int(fft * (c_in + c_out) + 4 * c_in * c_out * m), int(fft * c_in * c_out)
    return None


_CONV_ATTRS = (
    Attr("out_channels", "pos", doc="output channels"),
    Attr("kernel_size", "pair"),
    Attr("stride", "pair", 1),
    Attr("padding", "padding", 0),
    Attr("dilation", "pair", 1),
    Attr("groups", "pos", 1),
    Attr("bias", "bool", True),
    Attr("fixed_weight", "bool", False, doc="the weight is a fixed buffer (a blur filter), not a parameter"),
)

def _conv_import(c, n, m):
    pad = m.padding if isinstance(m.padding, str) else c.pair(m.padding)
    if m.padding_mode != "zeros":
        c.warn(f"{n.target}: padding_mode '{m.padding_mode}' is costed like zero padding")
    return c.emit(n.target, "conv2d", [c.ref(n.args[0])], out_channels=m.out_channels,
                  kernel_size=c.pair(m.kernel_size), stride=c.pair(m.stride), padding=pad,
                  dilation=c.pair(m.dilation), groups=m.groups, bias=m.bias is not None)


def _conv_call(c, n):
    """F.conv2d(x, weight, bias, stride, padding, dilation, groups) with a constant weight: timm's same-padded
    convs (a pad, then this), weight-standardised convs (the weight computed once per forward from its parameter
    and a gain, which is counted beside the conv), blur filters (a buffer: ``fixed_weight``). A weight computed from
    the input (CondConv) cannot be one conv."""
    w, b = c.arg(n, 1, "weight"), c.arg(n, 2, "bias")
    if not c.is_tensor(w) or isinstance(c.result(w), (str, list)) or (c.is_tensor(b)
                                                                      and isinstance(c.result(b), (str, list))):
        raise c.unsupported(n, "conv2d with a weight or bias computed from the input")
    shape = tuple(c.value(w).shape)
    if len(shape) != 4:
        raise c.unsupported(n, f"conv2d with a {len(shape)}-d weight")
    fresh, buffers = c.claim([w])
    if b is not None:
        c.claim([b])
    pad = c.value(c.arg(n, 4, "padding", 0))
    base = c.scoped(n)
    out = c.emit(base, "conv2d", [c.ref(n.args[0])], out_channels=shape[0], kernel_size=shape[2:],
                 stride=c.pair(c.value(c.arg(n, 3, "stride", 1))), padding=pad if isinstance(pad, str) else c.pair(pad),
                 dilation=c.pair(c.value(c.arg(n, 5, "dilation", 1))), groups=int(c.value(c.arg(n, 6, "groups", 1))),
                 bias=b is not None, fixed_weight=(fresh == 0 and buffers > 0) or None)
    if fresh > numel(shape):         # the weight was computed from more parameters than it holds (a gain)
        c.emit(f"{base}.weight_params", "parameter", [], shape=(1,), numel=fresh - numel(shape))
    return out


def _conv1d_import(c, n, m):
    """nn.Conv1d on [N, C, L] (ECA's channel attention) as a 1×k conv2d on [N, C, 1, L]: the same multiply-adds and
    parameters, between two views."""
    ch, length = c.value(n.args[0]).shape[1:] if c.value(n.args[0]).dim() == 3 else (None, None)
    if ch is None:
        raise c.unsupported(n, "nn.Conv1d on an input that is not [N, C, L]")
    if m.padding_mode != "zeros":
        c.warn(f"{n.target}: padding_mode '{m.padding_mode}' is costed like zero padding")
    x = c.emit(f"{n.target}.as_2d", "reshape", [c.ref(n.args[0])], shape=(ch, 1, length))
    pad = m.padding if isinstance(m.padding, str) else (0, m.padding[0])
    y = c.emit(n.target, "conv2d", [x], out_channels=m.out_channels, kernel_size=(1, m.kernel_size[0]),
               stride=(1, m.stride[0]), padding=pad, dilation=(1, m.dilation[0]), groups=m.groups,
               bias=m.bias is not None)
    return c.emit(f"{n.target}.as_1d", "reshape", [y], shape=c.out_shape(n))


def _conv_torch(n, xs):
    if n.attrs["fixed_weight"]:
        raise cannot_convert(n, "its weight is a fixed filter held in a buffer (a blur), whose values the IR does not "
                                "record")
    return TorchModule("Conv2d", _pick(n, *(k for k in n.attrs if k != "fixed_weight"), **_in_channels(n)))


register(OpRule(
    "conv2d", "conv", _CONV_ATTRS, _conv_shape, _conv_cost, _conv_formula, _conv_params,
    saves=lambda ctx: Saves(inputs=(0,)), channel=_conv_channel, channel_field="out_channels",
    doc="2-d convolution; in_channels follow from the input", torch="nn.Conv2d",
    work=_conv_work, cpu_alloc=_conv_alloc, follow=_depthwise_follow, algorithms=_conv_algorithms,
    gemm=lambda ctx, batch: (ctx["groups"], batch * ctx.out[1] * ctx.out[2], ctx.out[0] // ctx["groups"]),
    to_torch=_conv_torch,
    imports=_modules(_conv_import, "Conv2d") + _modules(_conv1d_import, "Conv1d")
    + _calls(_conv_call, "torch.nn.functional.conv2d")))


def _convt_shape(ctx: Ctx):
    _need_rank(ctx, ctx.x, 3)
    c, h, w = ctx.x
    kh, kw = ctx["kernel_size"]
    sh, sw = ctx["stride"]
    ph, pw = ctx["padding"]
    oph, opw = ctx["output_padding"]
    dh, dw = ctx["dilation"]
    if oph >= max(sh, dh) or opw >= max(sw, dw):
        raise ctx.fail("output_padding must be smaller than stride or dilation", "output_padding", (oph, opw))
    ho = (h - 1) * sh - 2 * ph + dh * (kh - 1) + oph + 1
    wo = (w - 1) * sw - 2 * pw + dw * (kw - 1) + opw + 1
    if ho < 1 or wo < 1:
        raise ctx.fail(f"padding {ph}×{pw} leaves an empty output ({ho}×{wo})", "padding", (ph, pw))
    _check_groups(ctx, c, ctx["out_channels"], "out_channels")
    return (ctx["out_channels"], ho, wo)


def _convt_params(ctx: Ctx) -> Params:
    kh, kw = ctx["kernel_size"]
    co = ctx["out_channels"]
    return Params(trainable=ctx.x[0] * (co // ctx["groups"]) * kh * kw + (co if ctx["bias"] else 0))


def _convt_cost(ctx: Ctx) -> Cost:
    c, h, w = ctx.x
    kh, kw = ctx["kernel_size"]
    # every input pixel scatters into C_out/groups · k_h·k_w outputs
    macs = c * h * w * (ctx["out_channels"] // ctx["groups"]) * kh * kw
    flops = FLOPS_PER_MAC * macs
    bias_grad = numel(ctx.out) if ctx["bias"] else 0
    return Cost(macs=macs, flops=flops, bwd_input=(flops,), bwd_weight=flops + bias_grad)


def _convt_formula(ctx: Ctx, batch: int) -> list[FormulaLine]:
    c, h, w = ctx.x
    kh, kw = ctx["kernel_size"]
    return _macs_flops_lines(["C_in", "H_in", "W_in", "(C_out/groups)", "k_h", "k_w"],
                             [c, h, w, ctx["out_channels"] // ctx["groups"], kh, kw], batch)


def _convt_import(c, n, m):
    return c.emit(n.target, "conv_transpose2d", [c.ref(n.args[0])], out_channels=m.out_channels,
                  kernel_size=c.pair(m.kernel_size), stride=c.pair(m.stride), padding=c.pair(m.padding),
                  output_padding=c.pair(m.output_padding), dilation=c.pair(m.dilation), groups=m.groups,
                  bias=m.bias is not None)


register(OpRule(
    "conv_transpose2d", "conv",
    (Attr("out_channels", "pos"), Attr("kernel_size", "pair"), Attr("stride", "pair", 1), Attr("padding", "pair0", 0),
     Attr("output_padding", "pair0", 0), Attr("dilation", "pair", 1), Attr("groups", "pos", 1),
     Attr("bias", "bool", True)),
    _convt_shape, _convt_cost, _convt_formula, _convt_params,
    saves=lambda ctx: Saves(inputs=(0,)), channel="new", channel_field="out_channels",
    doc="2-d transposed convolution", torch="nn.ConvTranspose2d", work=_conv_work,
    to_torch=_as_module("ConvTranspose2d", _in_channels), imports=_modules(_convt_import, "ConvTranspose2d")))
