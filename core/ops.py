"""Every op the engine knows: one ``register(OpRule(...))`` each, shape, cost, parameters, memory and formula
together, with how it becomes PyTorch (``to_torch``) and which PyTorch calls import to it (``imports``), placed next
to the rule they serve. Families that share a rule (activations, pools) come from small factories. Adding an op
touches this file and its tests, nothing else.

Shapes here are per sample: ``ctx.x == (C, H, W)`` for an NCHW tensor. Dimension attributes (``dim``,
``start_dim``, ``dims``) count the batch as dim 0, as PyTorch does; ``_sample_dim`` converts them.

FLOP conventions for ops without MACs are stated in the tables below, per element, with the operations counted.
Forward FLOPs are for inference mode (BatchNorm folded to one scale and shift, dropout the identity); backward FLOPs
are those of a training-mode backward pass.
"""

from __future__ import annotations

import dataclasses
from math import ceil, floor, gcd, log2, prod
from typing import Any, Callable

from .registry import (
    FLOPS_PER_MAC,
    MAX_DIM,
    Attr,
    Cost,
    Ctx,
    FormulaLine,
    Importer,
    OpRule,
    Params,
    Saves,
    TorchExpr,
    TorchModule,
    TorchParam,
    _allocates_output,
    _pair,
    cannot_convert,
    numel,
    register,
)


def _n(v: int) -> str:
    return f"{v:,}"


def _dims(shape) -> str:
    return "·".join(str(d) for d in shape) if shape else "1"


def _sample_dim(ctx: Ctx, dim: int, rank_full: int, field: str) -> int:
    """Convert a PyTorch dim (batch = 0, negatives allowed) into an index into the per-sample shape."""
    d = dim + rank_full if dim < 0 else dim
    if not 0 <= d < rank_full:
        raise ctx.fail(f"dimension out of range for a {rank_full}-d tensor", field, dim)
    if d == 0:
        raise ctx.fail("cannot act on the batch dimension (dim 0); the batch must stay first", field, dim)
    return d - 1


def _need_rank(ctx: Ctx, shape, rank: int, what: str = "input") -> None:
    if len(shape) != rank:
        full = "[N, " + ", ".join(map(str, shape)) + "]"
        raise ctx.fail(f"expects a {rank + 1}-d {what} [N, C, H, W]" if rank == 3 else
                       f"expects a {rank + 1}-d {what}, got {len(shape) + 1}-d {full}")


def _window_out(ctx: Ctx, size: int, k: int, s: int, p: int, d: int, ceil_mode: bool, axis: str) -> int:
    """Output length of a conv/pool window along one axis (PyTorch's formula)."""
    eff = d * (k - 1) + 1
    padded = size + 2 * p
    num = padded - eff
    out = (-(-num // s) if ceil_mode else num // s) + 1    # PyTorch's pooling_output_shape, floor division
    if out < 1:
        raise ctx.fail(f"kernel {eff} ({axis}) is larger than its padded input {padded}", "kernel_size", k)
    if ceil_mode and (out - 1) * s >= size + p:
        out -= 1          # the last window must start inside the input or its left padding
    return out


def _mul_formula(label: str, names: list[str], values: list[int], mult: int = 1, mult_name: str = "") -> FormulaLine:
    sym = "·".join(names) + (f" × {mult_name}" if mult_name else "")
    sub = "·".join(_n(v) for v in values) + (f" × {mult}" if mult_name else "")
    return FormulaLine(label, sym, sub, prod(values) * mult)


def _macs_flops_lines(names: list[str], values: list[int], batch: int) -> list[FormulaLine]:
    macs = _mul_formula("MACs", ["N"] + names, [batch] + values)
    flops = FormulaLine("FLOPs", "2 × MACs", f"2 × {_n(macs.value)}", FLOPS_PER_MAC * macs.value)
    return [macs, flops]


# == PyTorch, both ways ===========================================================================================
# ``to_torch(n, xs)`` gets a compiled node (``core.graph.NodeInfo``: attributes with defaults filled in, per-sample
# ``in_shapes`` and ``out_shape``) and the names of its input variables, and says how it becomes torch
# (``core.bridge.to_torch``). An importer's handler gets the fx converter ``c`` (``core.bridge.fx_import``:
# ``c.emit``, ``c.ref``, ``c.scoped``, ``c.arg``, ``c.value``, ``c.pair``, ``c.claim``, ``c.warn``,
# ``c.unsupported``, ``c.symbolic_sizes``, …), the fx node ``n`` and, for an ``nn`` module, the module; it emits IR
# nodes and returns the IR name of the result. Neither needs torch here: importers name their targets by dotted path.

def _compact(v: Any) -> Any:
    """(3, 3) → 3 for pair-valued arguments (torch reads an int as the square pair), for readable source."""
    if isinstance(v, tuple) and len(v) == 2 and v[0] == v[1] and v[0] is not None:
        return v[0]
    return v


def _pick(n, *names: str, **extra: Any) -> dict:
    """Constructor kwargs: ``extra`` first (derived from shapes), then the listed attributes, pairs compacted."""
    return {**extra, **{k: _compact(n.attrs[k]) for k in names}}


def _as_module(cls: str, derive: Callable[[Any], dict] | None = None) -> Callable:
    """``nn.<cls>`` built from the node's attributes as they are, plus what ``derive(n)`` reads off its shapes."""
    return lambda n, xs: TorchModule(cls, _pick(n, *n.attrs, **(derive(n) if derive else {})))


def _in_channels(n) -> dict:
    return {"in_channels": n.in_shapes[0][0]}


def _modules(handler: Callable, *classes: str) -> tuple[Importer, ...]:
    """``torch.nn.<class>`` modules, each imported by ``handler(c, n, module)``."""
    return tuple(Importer("module", f"torch.nn.{cls}", handler) for cls in classes)


def _calls(handler: Callable, *targets: str) -> tuple[Importer, ...]:
    """Functions by dotted path ("torch.nn.functional.relu", "operator.add") and Tensor methods by name ("relu"),
    each imported by ``handler(c, n)``."""
    return tuple(Importer("function" if "." in t else "method", t, handler) for t in targets)


def _first_dim(c, n, dim: int) -> int:
    """``dim`` of the call's first argument (batch = 0) made non-negative."""
    rank = c.value(n.args[0]).dim()
    return dim + rank if dim < 0 else dim


# == convolution ==================================================================================================

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
        return "conv"
    return "depthwise_conv" if _is_depthwise(ctx) else "grouped_conv"


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


# == linear =======================================================================================================

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


# == matmul and attention =========================================================================================

def _broadcast(ctx: Ctx, a: tuple, b: tuple, what: str) -> tuple:
    n = max(len(a), len(b))
    a2, b2 = (1,) * (n - len(a)) + tuple(a), (1,) * (n - len(b)) + tuple(b)
    out = []
    for i, (x, y) in enumerate(zip(a2, b2)):
        if x != y and 1 not in (x, y):
            raise ctx.fail(f"cannot broadcast {what} [N, {', '.join(map(str, a))}] with [N, {', '.join(map(str, b))}] "
                           f"(sizes {x} and {y} at dim {i + 1 + (len(a2) - n)})")
        out.append(max(x, y))
    return tuple(out)


def _matmul_shape(ctx: Ctx):
    a, b = ctx.ins
    if len(a) < 2 or len(b) < 2:
        raise ctx.fail("each input needs at least 2 dims besides the batch ([N, …, M, K] @ [N, …, K, P])")
    if a[-1] != b[-2]:
        raise ctx.fail(f"inner dimensions differ: [.., {a[-2]}, {a[-1]}] @ [.., {b[-2]}, {b[-1]}]")
    return _broadcast(ctx, a[:-2], b[:-2], "batch dims") + (a[-2], b[-1])


def _matmul_cost(ctx: Ctx) -> Cost:
    a, b = ctx.ins
    macs = numel(ctx.out[:-2]) * a[-2] * a[-1] * b[-1]
    f = FLOPS_PER_MAC * macs
    return Cost(macs=macs, flops=f, bwd_input=(f, f))   # dA = dY·Bᵀ, dB = Aᵀ·dY: same MACs each


def _matmul_formula(ctx: Ctx, batch: int) -> list[FormulaLine]:
    a, b = ctx.ins
    return _macs_flops_lines(["batch dims", "M", "K", "P"], [numel(ctx.out[:-2]), a[-2], a[-1], b[-1]], batch)


def _same_rank(n, xs: list[str]) -> list[str]:
    """Insert singleton dims after the batch so every input has the same rank (the engine broadcasts per sample;
    ``torch.matmul`` alone would align the batch of one input with a per-sample dim of the other)."""
    rank = max(len(s) for s in n.in_shapes)
    return [x if len(s) == rank else f"{x}[:, {', '.join(['None'] * (rank - len(s)))}]"
            for x, s in zip(xs, n.in_shapes)]


def _matmul_import(c, n):
    return c.emit(c.scoped(n), "matmul", [c.ref(n.args[0]), c.ref(n.args[1])])


register(OpRule(
    "matmul", "matmul", (), _matmul_shape, _matmul_cost, _matmul_formula,
    saves=lambda ctx: Saves(inputs=(0, 1)), arity=(2, 2),
    doc="batched matrix product [N, …, M, K] @ [N, …, K, P] (torch.matmul / bmm)", torch="torch.matmul",
    work="linear", to_torch=lambda n, xs: TorchExpr(f"torch.matmul({', '.join(_same_rank(n, xs))})"),
    imports=_calls(_matmul_import, "operator.matmul", "torch.matmul", "torch.bmm", "matmul")))


def _sdpa_shape(ctx: Ctx):
    q, k, v = ctx.ins
    if len(q) < 2 or len(k) < 2 or len(v) < 2:
        raise ctx.fail("query, key and value need at least [N, L, E]")
    if q[-1] != k[-1]:
        raise ctx.fail(f"query and key embedding sizes differ: {q[-1]} vs {k[-1]}")
    if k[-2] != v[-2]:
        raise ctx.fail(f"key and value sequence lengths differ: {k[-2]} vs {v[-2]}")
    lead = _broadcast(ctx, _broadcast(ctx, q[:-2], k[:-2], "query/key"), v[:-2], "value")
    return lead + (q[-2], v[-1])


# Softmax per score: max, subtract, exp, sum, divide = 5 FLOPs; plus 1 for the 1/√E scaling.
_SDPA_SOFTMAX_FLOPS = 5 + 1
_SDPA_SOFTMAX_BWD = 4          # dS = P ⊙ (dP − rowsum(dP ⊙ P)): multiply, sum, subtract, multiply


def _sdpa_cost(ctx: Ctx) -> Cost:
    q, k, v = ctx.ins
    b = numel(ctx.out[:-2])
    scores = b * q[-2] * k[-2]
    macs = scores * q[-1] + scores * v[-1]          # Q·Kᵀ, then P·V
    f = FLOPS_PER_MAC * macs + _SDPA_SOFTMAX_FLOPS * scores
    # dV = Pᵀ·dO (scores·Ev MACs), dP = dO·Vᵀ (scores·Ev), dQ = dS·K (scores·E), dK = dSᵀ·Q (scores·E)
    soft = _SDPA_SOFTMAX_BWD * scores
    # dP = dO·Vᵀ and the softmax backward give dS, which both dQ and dK need: counted once if either needs it
    dq = FLOPS_PER_MAC * scores * q[-1]
    dk = FLOPS_PER_MAC * scores * k[-1]
    dv = FLOPS_PER_MAC * scores * v[-1]
    return Cost(macs=macs, flops=f, bwd_input=(dq, dk, dv), bwd_shared=FLOPS_PER_MAC * scores * v[-1] + soft,
                bwd_shared_inputs=(0, 1))


def _sdpa_formula(ctx: Ctx, batch: int) -> list[FormulaLine]:
    q, k, v = ctx.ins
    b = numel(ctx.out[:-2])
    macs = _mul_formula("MACs (Q·Kᵀ)", ["N", "heads", "L_q", "L_k", "E"], [batch, b, q[-2], k[-2], q[-1]])
    macs2 = _mul_formula("MACs (P·V)", ["N", "heads", "L_q", "L_k", "E_v"], [batch, b, q[-2], k[-2], v[-1]])
    sm = _mul_formula("softmax+scale FLOPs", ["N", "heads", "L_q", "L_k"], [batch, b, q[-2], k[-2]],
                      _SDPA_SOFTMAX_FLOPS, "6")
    total = FLOPS_PER_MAC * (macs.value + macs2.value) + sm.value
    return [macs, macs2, sm, FormulaLine("FLOPs", "2 × MACs + softmax",
                                         f"2 × {_n(macs.value + macs2.value)} + {_n(sm.value)}", total)]


def _sdpa_torch(n, xs):
    causal = ", is_causal=True" if n.attrs["is_causal"] else ""
    return TorchExpr(f"F.scaled_dot_product_attention({', '.join(_same_rank(n, xs))}{causal})")


def _sdpa_import(c, n):
    if c.value(n.kwargs.get("attn_mask")) is not None:
        c.warn(f"{n.name}: the attention mask is not costed")
    return c.emit(c.scoped(n), "sdpa", [c.ref(a) for a in n.args[:3]], is_causal=bool(n.kwargs.get("is_causal", False)))


register(OpRule(
    "sdpa", "attention", (Attr("is_causal", "bool", False),), _sdpa_shape, _sdpa_cost, _sdpa_formula,
    saves=lambda ctx: Saves(inputs=(0, 1, 2), output=True), arity=(3, 3),
    doc="scaled dot-product attention softmax(Q·Kᵀ/√E)·V; causal masking is counted as full (no skipped work)",
    torch="F.scaled_dot_product_attention", work="linear", to_torch=_sdpa_torch,
    imports=_calls(_sdpa_import, "torch.nn.functional.scaled_dot_product_attention")))


# == elementwise: activations, dropout, identity ==================================================================
# FLOPs per element (forward, backward) and what each saves for backward.
_UNARY = {
    # kind:        (fwd, bwd, saves,    torch,           how the forward count is made)
    "relu":        (1, 1, "output", "nn.ReLU", "max(x, 0)"),
    "relu6":       (2, 2, "input", "nn.ReLU6", "min(max(x, 0), 6)"),
    "sigmoid":     (4, 3, "output", "nn.Sigmoid", "1/(1+exp(−x)): negate, exp, add, divide; bwd y·(1−y)·g"),
    "tanh":        (5, 3, "output", "nn.Tanh",
                    "(e^{2x}−1)/(e^{2x}+1): multiply, exp, subtract, add, divide; bwd (1−y²)·g"),
    "gelu":        (8, 12, "input", "nn.GELU", "tanh form 0.5x(1+tanh(√(2/π)(x+0.044715x³))) ≈ 8 operations"),
    "silu":        (5, 7, "input", "nn.SiLU", "x·sigmoid(x): sigmoid (4) + multiply"),
    "hardswish":   (5, 4, "input", "nn.Hardswish", "x·min(max(x+3, 0), 6)/6: add, max, min, multiply, divide"),
    "hardsigmoid": (4, 2, "input", "nn.Hardsigmoid", "min(max(x+3, 0), 6)/6: add, max, min, divide"),
    "leaky_relu":  (2, 2, "input", "nn.LeakyReLU", "x if x > 0 else slope·x: compare, multiply"),
    "dropout":     (0, 1, "mask", "nn.Dropout", "identity at inference; training multiplies by a mask (1/elem)"),
    "identity":    (0, 0, "none", "nn.Identity", "no arithmetic"),
}


# ``inplace=True`` (nn.ReLU(inplace=True), F.relu_, x += y) overwrites input 0: the CPU allocates no output
_INPLACE = Attr("inplace", "bool", False, doc="overwrites its first input (no new output tensor on the CPU)")
_IN_PLACE_CAPABLE = ("relu", "relu6", "silu", "hardswish", "hardsigmoid", "leaky_relu")


def _activation(kind: str, *calls: str, in_place: tuple[str, ...] = ()) -> tuple[Importer, ...]:
    """Its ``nn`` module (the table's torch column) and ``calls``, in place when the module or the call says so
    (``nn.ReLU(inplace=True)``, ``F.relu(x, inplace=True)``), and the ``in_place`` calls, which always are
    (``torch.relu_``, ``x.relu_()``)."""
    capable = kind in _IN_PLACE_CAPABLE

    def module(c, n, m):
        return c.emit(n.target, kind, [c.ref(n.args[0])], inplace=getattr(m, "inplace", False) or None)

    def call(c, n):
        inplace = capable and c.value(c.arg(n, 1, "inplace", False))
        return c.emit(c.scoped(n), kind, [c.ref(n.args[0])], inplace=inplace or None)

    def always(c, n):
        return c.emit(c.scoped(n), kind, [c.ref(n.args[0])], inplace=True)

    return _modules(module, _UNARY[kind][3].removeprefix("nn.")) + _calls(call, *calls) + _calls(always, *in_place)


def _gelu_import(c, n, m):
    return c.emit(n.target, "gelu", [c.ref(n.args[0])], approximate=m.approximate)


def _gelu_call(c, n):
    return c.emit(c.scoped(n), "gelu", [c.ref(n.args[0])], approximate=c.value(n.kwargs.get("approximate", "none")))


def _leaky_import(c, n, m):
    return c.emit(n.target, "leaky_relu", [c.ref(n.args[0])], negative_slope=float(m.negative_slope),
                  inplace=m.inplace or None)


def _leaky_call(c, n):
    return c.emit(c.scoped(n), "leaky_relu", [c.ref(n.args[0])],
                  negative_slope=float(c.value(c.arg(n, 1, "negative_slope", 0.01))),
                  inplace=bool(c.value(c.arg(n, 2, "inplace", False))) or None)


def _dropout_import(c, n, m):
    return c.emit(n.target, "dropout", [c.ref(n.args[0])], p=float(m.p))


def _dropout_call(c, n):
    return c.emit(c.scoped(n), "dropout", [c.ref(n.args[0])], p=float(c.value(c.arg(n, 1, "p", 0.5))))


def _identity_import(c, n, m):
    return c.emit(n.target, "identity", [c.ref(n.args[0])])


def _identity_call(c, n):
    """torchvision's stochastic_depth, the identity at inference."""
    return c.emit(c.scoped(n), "identity", [c.ref(n.args[0])])


def _contiguous_call(c, n):
    """x.contiguous(memory_format=…): the input itself where it is laid out so already, else a copy
    (``contiguous``), as after ShuffleNet's ``transpose(1, 2)``."""
    op = "identity" if c.value(n) is c.value(n.args[0]) else "contiguous"     # PyTorch returns x itself, or a copy
    return c.emit(c.scoped(n), op, [c.ref(n.args[0])])


def _expand_import(c, n):
    """x.expand(…) / x.expand_as(y): the identity when no per-sample dim changes, else an ``expand`` view."""
    out = c.out_shape(n)
    if tuple(c.value(n.args[0]).shape[1:]) == out:
        return c.emit(c.scoped(n), "identity", [c.ref(n.args[0])])
    return c.emit(c.scoped(n), "expand", [c.ref(n.args[0])], shape=out)


_UNARY_IMPORTS = {
    "relu": _activation("relu", "torch.relu", "torch.nn.functional.relu", "relu", in_place=("torch.relu_", "relu_")),
    "relu6": _activation("relu6", "torch.nn.functional.relu6"),
    "sigmoid": _activation("sigmoid", "torch.sigmoid", "torch.nn.functional.sigmoid", "sigmoid"),
    "tanh": _activation("tanh", "torch.tanh", "torch.nn.functional.tanh"),
    "gelu": _modules(_gelu_import, "GELU") + _calls(_gelu_call, "torch.nn.functional.gelu", "gelu"),
    "silu": _activation("silu", "torch.nn.functional.silu"),
    "hardswish": _activation("hardswish", "torch.nn.functional.hardswish"),
    "hardsigmoid": _activation("hardsigmoid", "torch.nn.functional.hardsigmoid"),
    "leaky_relu": _modules(_leaky_import, "LeakyReLU") + _calls(_leaky_call, "torch.nn.functional.leaky_relu"),
    "dropout": _modules(_dropout_import, "Dropout", "Dropout2d", "AlphaDropout")
    + _calls(_dropout_call, "torch.nn.functional.dropout", "torch.dropout"),
    "identity": _modules(_identity_import, "Identity")
    + _calls(_identity_call, "torchvision.ops.stochastic_depth.stochastic_depth")
    + _calls(_contiguous_call, "contiguous")
    + _calls(_expand_import, "expand", "expand_as"),
}


def _unary_factory(kind: str, fwd: int, bwd: int, saves: str, torch: str, how: str) -> OpRule:
    def cost(ctx: Ctx) -> Cost:
        e = numel(ctx.out)
        return Cost(flops=fwd * e, bwd_input=(bwd * e,))

    def formula(ctx: Ctx, batch: int) -> list[FormulaLine]:
        return [_mul_formula("FLOPs", ["N", "elements"], [batch, numel(ctx.out)], fwd, f"{fwd} ({how})")]

    def save(ctx: Ctx) -> Saves:
        if saves == "output":
            return Saves(output=True)
        if saves == "input":
            return Saves(inputs=(0,))
        if saves == "mask":   # a bool mask: one byte per element
            return Saves(extra_bytes=numel(ctx.out))
        return Saves()

    attrs = {"dropout": (Attr("p", "prob", 0.5),),
             "gelu": (Attr("approximate", "choice", "none", ("none", "tanh"),
                           doc="counted alike: 8 FLOPs per element either way"),),
             "leaky_relu": (Attr("negative_slope", "float", 0.01),)}.get(kind, ())
    if kind in _IN_PLACE_CAPABLE:
        attrs += (_INPLACE,)
    view = kind in ("dropout", "identity")     # at inference: the input itself
    return OpRule(kind, "shape" if view else "activation", attrs,
                  shape=lambda ctx: ctx.x, cost=cost, formula=formula, saves=save, channel="pass",
                  alias=view, copies_in_training=kind == "dropout", doc=how, torch=torch,
                  work="shape" if view else "elementwise", fusion="none" if view else "epilogue",
                  to_torch=_as_module(torch.removeprefix("nn.")), imports=_UNARY_IMPORTS[kind])


for _k, _spec in _UNARY.items():
    register(_unary_factory(_k, *_spec))


def _softmax_shape(ctx: Ctx):
    _sample_dim(ctx, ctx["dim"], len(ctx.x) + 1, "dim")
    return ctx.x


def _softmax_factory(kind: str, torch: str, fwd_how: str, bwd_how: str, calls: tuple[str, ...]) -> OpRule:
    fwd, bwd = 5, 4

    def cost(ctx: Ctx) -> Cost:
        e = numel(ctx.out)
        return Cost(flops=fwd * e, bwd_input=(bwd * e,))

    def formula(ctx: Ctx, batch: int) -> list[FormulaLine]:
        return [_mul_formula("FLOPs", ["N", "elements"], [batch, numel(ctx.out)], fwd, f"5 ({fwd_how})")]

    def module(c, n, m):
        return c.emit(n.target, kind, [c.ref(n.args[0])], dim=m.dim if m.dim is not None else -1)

    def call(c, n):
        dim = c.value(c.arg(n, 1, "dim"))
        return c.emit(c.scoped(n), kind, [c.ref(n.args[0])], dim=dim if dim is not None else -1)

    cls = torch.removeprefix("nn.")
    return OpRule(kind, "activation", (Attr("dim", "int", -1),), _softmax_shape, cost, formula,
                  saves=lambda ctx: Saves(output=True), channel="pass", doc=f"{fwd_how}; backward {bwd_how}",
                  torch=torch, work="elementwise", fusion="epilogue", to_torch=_as_module(cls),
                  imports=_modules(module, cls) + _calls(call, *calls))


register(_softmax_factory("softmax", "nn.Softmax", "max, subtract, exp, sum, divide", "y·(g − Σg·y)",
                          ("torch.softmax", "torch.nn.functional.softmax", "softmax")))
register(_softmax_factory("log_softmax", "nn.LogSoftmax", "max, subtract, exp, sum, log-subtract", "g − exp(y)·Σg",
                          ("torch.log_softmax", "torch.nn.functional.log_softmax")))


# == normalisation ================================================================================================

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


# == pooling ======================================================================================================

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


def _pool_work(ctx: Ctx) -> str:
    """A global pool (one number per channel) streams its input once, as elementwise work does; windowed pooling
    revisits each input several times and runs far slower on a CPU."""
    return "elementwise" if all(d == 1 for d in ctx.out[1:]) else "pool"


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


# == multi-input elementwise ======================================================================================

def _bin_shape(ctx: Ctx):
    if len(ctx.ins) == 1:
        if ctx["scalar"] is None:
            raise ctx.fail("with one input, give 'scalar'", "scalar")
        return ctx.x
    rank = len(ctx.x)
    out = ctx.x
    for s in ctx.ins[1:]:
        if len(s) != rank:
            raise ctx.fail(f"inputs have different ranks: [N, {', '.join(map(str, ctx.x))}] and "
                           f"[N, {', '.join(map(str, s))}]")
        out = _broadcast(ctx, out, s, "inputs")
    if ctx["inplace"] and out != ctx.x:
        raise ctx.fail(f"an in-place op writes into its first input [N, {', '.join(map(str, ctx.x))}], which cannot "
                       f"hold the broadcast result [N, {', '.join(map(str, out))}]", "inplace", True)
    return out


def _bin_factory(kind: str, torch: str, symbol: str, calls: tuple[str, ...], in_place: tuple[str, ...]) -> OpRule:
    """``calls`` import to it; ``in_place`` ones (``out += x``, ``x.add_(y)``) write into a tensor first operand."""
    def cost(ctx: Ctx) -> Cost:
        o = numel(ctx.out)
        ops = max(len(ctx.ins) - 1, 1)
        # gradient to a broadcast input is summed over the broadcast dims: out − in adds
        reduce = tuple(o - numel(s) for s in ctx.ins)
        if kind in ("add", "sub"):
            return Cost(flops=ops * o, bwd_input=reduce)
        # mul: each input's gradient is g times the product of the others (k−1 multiplies per element)
        return Cost(flops=ops * o, bwd_input=tuple(ops * o + r for r in reduce))

    def formula(ctx: Ctx, batch: int) -> list[FormulaLine]:
        ops = max(len(ctx.ins) - 1, 1)
        return [_mul_formula("FLOPs", ["N", "elements"], [batch, numel(ctx.out)], ops, f"{ops} (inputs − 1)")]

    saves = (lambda ctx: Saves(inputs=tuple(range(len(ctx.ins))))) if kind in ("mul", "div") else (lambda ctx: Saves())

    def to_torch(n, xs):
        # an in-place node (out += x) is written out of place: the same numbers, and no tensor that a later node
        # might read is overwritten
        terms = list(xs) + ([repr(n.attrs["scalar"])] if n.attrs["scalar"] is not None else [])
        return TorchExpr(f" {symbol} ".join(terms))

    def handler(in_place: bool):
        def h(c, n):
            a, b = n.args[0], c.arg(n, 1, "other")
            tensors = [x for x in (a, b) if c.is_tensor(x)]
            inplace = True if in_place and c.is_tensor(a) else None
            if len(tensors) == 2:
                rank = max(c.value(a).dim(), c.value(b).dim())
                return c.emit(c.scoped(n), kind, [c.ref(a, rank), c.ref(b, rank)], inplace=inplace)
            scalar = b if tensors[0] is a else a
            value = float(c.value(scalar))
            if kind in ("sub", "div") and scalar is a:
                raise c.unsupported(n, f"a scalar {'minus' if kind == 'sub' else 'divided by'} a tensor")
            return c.emit(c.scoped(n), kind, [c.ref(tensors[0])], scalar=value, inplace=inplace)
        return h

    return OpRule(kind, "elementwise", (Attr("scalar", "opt_float", None), _INPLACE), _bin_shape, cost, formula,
                  saves=saves, arity=(1, None), channel="unify", doc=f"elementwise {kind} with broadcasting",
                  torch=torch, work="elementwise", fusion="operand", to_torch=to_torch,
                  imports=_calls(handler(False), *calls) + _calls(handler(True), *in_place))


def _addcmul_import(c, n):
    """torch.addcmul(input, t1, t2, value=v) = input + v·t1·t2 (ConvNeXt-V2's global response norm): a mul (and a
    scaling when v ≠ 1), then an add."""
    a, t1, t2 = n.args[0], c.arg(n, 1, "tensor1"), c.arg(n, 2, "tensor2")
    value = float(c.value(c.arg(n, 3, "value", 1)))
    rank = c.value(n).dim()
    base = c.scoped(n)
    y = c.emit(f"{base}.mul", "mul", [c.ref(t1, rank), c.ref(t2, rank)])
    if value != 1:
        y = c.emit(f"{base}.scale", "mul", [y], scalar=value)
    return c.emit(base, "add", [c.ref(a, rank), y])


_ADD = _bin_factory("add", "torch.add", "+", ("operator.add", "torch.add", "add"), ("operator.iadd", "add_"))
register(dataclasses.replace(_ADD, imports=_ADD.imports + _calls(_addcmul_import, "torch.addcmul")))
register(_bin_factory("mul", "torch.mul", "*", ("operator.mul", "torch.mul", "mul"), ("operator.imul", "mul_")))
register(_bin_factory("sub", "torch.sub", "-", ("operator.sub", "torch.sub", "sub"),      # costed as add
                      ("operator.isub", "sub_")))
register(_bin_factory("div", "torch.div", "/", ("operator.truediv", "torch.div", "div"),  # costed as mul
                      ("operator.itruediv", "div_")))


def _concat_shape(ctx: Ctx):
    rank = len(ctx.x)
    d = _sample_dim(ctx, ctx["dim"], rank + 1, "dim")
    for i, s in enumerate(ctx.ins[1:], 1):
        if len(s) != rank or any(a != b for j, (a, b) in enumerate(zip(ctx.x, s)) if j != d):
            raise ctx.fail(f"input {i} [N, {', '.join(map(str, s))}] does not match input 0 "
                           f"[N, {', '.join(map(str, ctx.x))}] outside dim {ctx['dim']}")
    return ctx.x[:d] + (sum(s[d] for s in ctx.ins),) + ctx.x[d + 1:]


def _concat_import(c, n):
    tensors = c.arg(n, 0, "tensors")
    dim = c.value(c.arg(n, 1, "dim", 0))
    rank = c.value(n).dim()
    return c.emit(c.scoped(n), "concat", [c.ref(t, rank) for t in tensors], dim=dim)


def _stack_import(c, n):
    """torch.stack(tensors, dim): each tensor viewed with a new dim of size 1, then concatenated along it."""
    tensors, dim = c.arg(n, 0, "tensors"), c.value(c.arg(n, 1, "dim", 0))
    out = c.out_shape(n)
    d = dim + len(out) + 1 if dim < 0 else dim
    if d == 0:
        raise c.unsupported(n, "a stack along the batch dim")
    base = c.scoped(n)
    one = out[:d - 1] + (1,) + out[d:]
    parts = [c.emit(f"{base}.unsqueeze", "reshape", [c.ref(t)], shape=one) for t in tensors]
    return c.emit(base, "concat", parts, dim=d)


register(OpRule(
    "concat", "shape", (Attr("dim", "int", 1),), _concat_shape,
    lambda ctx: Cost(bwd_input=tuple(0 for _ in ctx.ins)),
    lambda ctx, batch: [FormulaLine("FLOPs", "0 (a copy)", "0", 0)], arity=(1, None),
    doc="torch.cat", torch="torch.cat", work="shape",
    to_torch=lambda n, xs: TorchExpr(f"torch.cat([{', '.join(xs)}], dim={n.attrs['dim']})"),
    imports=_calls(_concat_import, "torch.cat", "torch.concat") + _calls(_stack_import, "torch.stack")))


# == shape ops (no arithmetic) ====================================================================================

def _zero_formula(ctx: Ctx, batch: int) -> list[FormulaLine]:
    return [FormulaLine("FLOPs", "0 (moves or relabels data)", "0", 0)]


def _zero_cost(ctx: Ctx) -> Cost:
    return Cost(bwd_input=(0,) * len(ctx.ins))


def _flatten_shape(ctx: Ctx):
    rank = len(ctx.x) + 1
    s = _sample_dim(ctx, ctx["start_dim"], rank, "start_dim")
    e = _sample_dim(ctx, ctx["end_dim"], rank, "end_dim")
    if e < s:
        raise ctx.fail(f"end_dim {ctx['end_dim']} comes before start_dim {ctx['start_dim']}", "end_dim", ctx["end_dim"])
    return ctx.x[:s] + (numel(ctx.x[s:e + 1]),) + ctx.x[e + 1:]


def _flatten_import(c, n, m):
    return c.emit(n.target, "flatten", [_copied(c, n, c.ref(n.args[0]))], start_dim=m.start_dim, end_dim=m.end_dim)


def _flatten_call(c, n):
    return c.emit(c.scoped(n), "flatten", [_copied(c, n, c.ref(n.args[0]))],
                  start_dim=c.value(c.arg(n, 1, "start_dim", 0)),
                  end_dim=c.value(c.arg(n, 2, "end_dim", -1)))


register(OpRule("flatten", "shape", (Attr("start_dim", "int", 1), Attr("end_dim", "int", -1)), _flatten_shape,
                _zero_cost, _zero_formula, alias=True, doc="torch.flatten / nn.Flatten", torch="nn.Flatten",
                work="shape", to_torch=_as_module("Flatten"),
                imports=_modules(_flatten_import, "Flatten") + _calls(_flatten_call, "torch.flatten", "flatten")))


def _reshape_shape(ctx: Ctx):
    """``shape`` followed by the input's last ``keep_trailing`` dims, as they are. The kept dims make a view that
    only regroups the leading dims (ShuffleNet's channel shuffle, [116, H, W] → [2, 58, H, W]) valid at any H, W;
    ``shape`` must then hold exactly the elements of the input's other dims (one -1 is resolved against them)."""
    k, rank = ctx["keep_trailing"], len(ctx.x)
    if k > rank:
        raise ctx.fail(f"keeps more trailing dims than the input's {rank} per-sample dims "
                       f"[{', '.join(map(str, ctx.x))}]", "keep_trailing", k)
    head, kept = ctx.x[:rank - k], ctx.x[rank - k:]
    target = ctx["shape"]
    total = numel(head)
    what = f"[{', '.join(map(str, head))}]"
    if k:
        what += (f" (the input [{', '.join(map(str, ctx.x))}] without its last {k} dim{'s' if k > 1 else ''}, "
                 f"kept: keep_trailing={k})")
    if sum(1 for d in target if d == -1) > 1:
        raise ctx.fail("at most one dimension may be -1", "shape", target)
    if any(d == 0 or d < -1 for d in target):
        raise ctx.fail("dimensions must be positive (or one -1)", "shape", target)
    known = numel(tuple(d for d in target if d != -1))
    if -1 in target:
        if total % known:
            raise ctx.fail(f"cannot view {total:,} elements per sample {what} as {list(target)}", "shape", target)
        target = tuple(total // known if d == -1 else d for d in target)
    if numel(target) != total:
        raise ctx.fail(f"cannot view {total:,} elements per sample {what} as "
                       f"[{', '.join(map(str, target))}] ({numel(target):,})", "shape", ctx["shape"])
    return tuple(target) + kept


def _reshape_torch(n, xs):
    """The batch is kept: ``x.reshape(x.shape[0], *out_shape)`` (kept trailing dims included, at this input size)."""
    return TorchExpr(f"{xs[0]}.reshape({xs[0]}.shape[0], {', '.join(map(str, n.out_shape))})")


def _view_dims(c, n):
    """The target dims of a view/reshape call as written (batch first; fx nodes for sizes read off tensors), or
    None for calls that take none (squeeze, unsqueeze) or a shape held in one value."""
    if n.op == "call_method" and n.target in ("view", "reshape"):
        dims = tuple(n.args[1:]) or (n.kwargs.get("shape", n.kwargs.get("size")),)
    elif n.op == "call_function" and n.target is c.torch.reshape:
        dims = (c.arg(n, 1, "shape"),)
    else:
        return None
    if len(dims) == 1 and isinstance(dims[0], (list, tuple)):
        dims = tuple(dims[0])
    return dims


def _kept_trailing(c, n, out: tuple) -> int:
    """How many trailing dims of the input the traced view keeps: the largest k < the input's rank with the output's
    last k dims equal to the input's last k. A size the code wrote as a literal (``x.view(-1, 8, 8)`` traced on an
    8×8 input) is fixed, not kept: in a symbolic trace such a dim stops the count. A view whose kept dims merely
    coincide at this size is harmless: at another size its leading part no longer matches and the network fails
    with the reshape's message, as it did with literal shapes."""
    x = tuple(c.value(n.args[0]).shape[1:])
    k = 0
    while k < min(len(x) - 1, len(out)) and out[len(out) - 1 - k] == x[len(x) - 1 - k]:
        k += 1
    dims = _view_dims(c, n) if c.symbolic_sizes else None
    if dims is not None and len(dims) == len(out) + 1:
        while k and any(isinstance(d, int) for d in dims[len(dims) - k:]):     # a literal among them: keep fewer
            k -= 1
    return k


def _copied(c, n, x: str) -> str:
    """``x``, or a ``contiguous`` copy of it where reshape or flatten call ``n`` cannot be a view of its input (a
    transposed or sliced tensor's strides do not allow one: PyTorch then copies the input into contiguous memory,
    one kernel, and views the copy)."""
    src, out = c.value(n.args[0]), c.value(n)
    if out is src:
        return x
    try:
        src.view(out.shape)
    except (RuntimeError, ValueError):            # meta tensors raise the one, fake tensors (real weights) the other
        base = n.target if n.op == "call_module" else c.scoped(n)
        return c.emit(f"{base}.contiguous", "contiguous", [x])
    return x


def _reshape_import(c, n):
    x, out = c.ref(n.args[0]), c.out_shape(n)
    if n.target in ("reshape", c.torch.reshape):        # view, squeeze and unsqueeze never copy
        x = _copied(c, n, x)
    k = _kept_trailing(c, n, out)
    return c.emit(c.scoped(n), "reshape", [x], shape=out[:len(out) - k], keep_trailing=k or None)


register(OpRule("reshape", "shape", (Attr("shape", "ints", doc="per-sample target shape, batch excluded"),
                                     Attr("keep_trailing", "nonneg", 0,
                                          doc="the input's last k dims follow `shape` as they are (any size)")),
                _reshape_shape, _zero_cost, _zero_formula, alias=True,
                doc="view/reshape; the batch stays dim 0 (x.view(-1, 320) is shape [320]); keep_trailing=k appends "
                    "the input's last k dims to `shape`", torch="Tensor.view",
                work="shape", to_torch=_reshape_torch,
                imports=_calls(_reshape_import, "torch.reshape", "view", "reshape", "unsqueeze", "squeeze")))


def _expand_shape(ctx: Ctx):
    """Broadcasting as torch's expand: dims aligned from the right, each of size 1 or equal to the target's."""
    target = ctx["shape"]
    if any(d < 1 for d in target):
        raise ctx.fail("dimensions must be positive", "shape", target)
    if len(target) < len(ctx.x) or any(s not in (1, t) for s, t in zip(reversed(ctx.x), reversed(target))):
        raise ctx.fail(f"cannot expand [N, {', '.join(map(str, ctx.x))}] to [N, {', '.join(map(str, target))}] "
                       "(only dims of size 1 expand)", "shape", target)
    return tuple(target)


register(OpRule("expand", "shape", (Attr("shape", "ints", doc="per-sample target shape, batch excluded"),),
                _expand_shape, _zero_cost, _zero_formula, alias=True,
                doc="expand dims of size 1 by broadcasting (a view, no copy)", torch="Tensor.expand", work="shape",
                to_torch=lambda n, xs: TorchExpr(f"{xs[0]}.expand({xs[0]}.shape[0], "
                                                 f"{', '.join(map(str, n.out_shape))})")))


def _permute_shape(ctx: Ctx):
    rank = len(ctx.x) + 1
    dims = ctx["dims"]
    norm = tuple(d + rank if d < 0 else d for d in dims)
    if sorted(norm) != list(range(rank)):
        raise ctx.fail(f"must be a permutation of 0…{rank - 1}", "dims", dims)
    if norm[0] != 0:
        raise ctx.fail("the batch dimension must stay first", "dims", dims)
    full = (None,) + ctx.x
    return tuple(full[d] for d in norm[1:])


def _permute_import(c, n):
    dims = c.value(c.arg(n, 1, "dims"))
    dims = n.args[1:] if len(n.args) > 2 or not isinstance(dims, (list, tuple)) else dims
    return c.emit(c.scoped(n), "permute", [c.ref(n.args[0])], dims=tuple(c.value(d) for d in dims))


register(OpRule("permute", "shape", (Attr("dims", "ints"),), _permute_shape, _zero_cost, _zero_formula, alias=True,
                doc="permute dims (batch stays dim 0)", torch="Tensor.permute", work="shape",
                to_torch=lambda n, xs: TorchExpr(f"{xs[0]}.permute({', '.join(map(str, n.attrs['dims']))})"),
                imports=_calls(_permute_import, "torch.permute", "permute")))


def _transpose_shape(ctx: Ctx):
    rank = len(ctx.x) + 1
    a = _sample_dim(ctx, ctx["dim0"], rank, "dim0")
    b = _sample_dim(ctx, ctx["dim1"], rank, "dim1")
    s = list(ctx.x)
    s[a], s[b] = s[b], s[a]
    return tuple(s)


def _transpose_import(c, n):
    return c.emit(c.scoped(n), "transpose", [c.ref(n.args[0])], dim0=c.value(c.arg(n, 1, "dim0")),
                  dim1=c.value(c.arg(n, 2, "dim1")))


register(OpRule("transpose", "shape", (Attr("dim0", "int"), Attr("dim1", "int")), _transpose_shape, _zero_cost,
                _zero_formula, alias=True, torch="Tensor.transpose", work="shape",
                to_torch=lambda n, xs: TorchExpr(f"{xs[0]}.transpose({n.attrs['dim0']}, {n.attrs['dim1']})"),
                imports=_calls(_transpose_import, "torch.transpose", "torch.swapaxes", "transpose", "swapaxes")))


def _shuffle_shape(ctx: Ctx):
    if len(ctx.x) < 2:
        raise ctx.fail("expects [N, C, …] with at least one dim after the channels, as nn.ChannelShuffle does")
    if ctx.x[0] % ctx["groups"]:
        raise ctx.fail(f"groups {ctx['groups']} does not divide the {ctx.x[0] if ctx.x else 0} channels", "groups",
                       ctx["groups"])
    return ctx.x


def _shuffle_torch(n, xs):
    if len(n.in_shapes[0]) < 2:
        raise cannot_convert(n, "nn.ChannelShuffle needs an input of 3 or more dims [N, C, …], this one is 2-d")
    return TorchModule("ChannelShuffle", _pick(n, "groups"))


def _shuffle_import(c, n, m):
    return c.emit(n.target, "channel_shuffle", [c.ref(n.args[0])], groups=m.groups)


register(OpRule("channel_shuffle", "shape", (Attr("groups", "pos"),), _shuffle_shape, _zero_cost, _zero_formula,
                channel="pass", doc="ShuffleNet channel shuffle (a copy)", torch="nn.ChannelShuffle", work="shape",
                to_torch=_shuffle_torch, imports=_modules(_shuffle_import, "ChannelShuffle")))


def _contiguous_torch(n, xs):
    return TorchExpr(f"{xs[0]}.contiguous()")


register(OpRule("contiguous", "shape", (), lambda ctx: ctx.x, _zero_cost, _zero_formula, channel="pass",
                doc="x.contiguous() of a tensor whose strides are not contiguous (after a transpose or permute): a "
                    "copy of every element into contiguous memory; the importer writes it where PyTorch copies "
                    "(a contiguous input is the identity)", torch="Tensor.contiguous", work="shape",
                to_torch=_contiguous_torch))


def _param_shape(ctx: Ctx):
    if ctx.ins:
        raise ctx.fail("takes no inputs")
    if any(d < 1 for d in ctx["shape"]):
        raise ctx.fail("dimensions must be positive", "shape", ctx["shape"])
    return tuple(ctx["shape"])


def _param_params(ctx: Ctx) -> Params:
    count = numel(ctx.out) if ctx["numel"] is None else ctx["numel"]
    if ctx["buffer"]:
        return Params(buffers=count)
    return Params(trainable=count) if ctx["trainable"] else Params(frozen=count)


def _param_torch(n, xs):
    """An ``nn.Parameter`` (or buffer) of shape [1, *shape], torchvision's class token / position embedding layout,
    expanded over the batch; only the stored elements when the IR derives it from a table it does not describe."""
    stored = n.attrs.get("numel")
    return TorchParam(n.out_shape, n.attrs["trainable"], n.attrs.get("buffer", False),
                      stored if stored is not None and stored != prod(n.out_shape) else None)


register(OpRule("parameter", "misc",
                (Attr("shape", "ints"), Attr("trainable", "bool", True), Attr("buffer", "bool", False),
                 Attr("numel", "opt_nonneg", None,
                      doc="elements stored, if the tensor is derived from a table (0: counted elsewhere)")),
                _param_shape, lambda ctx: Cost(),
                lambda ctx, batch: [FormulaLine("params", "∏ shape", _dims(ctx.out), numel(ctx.out))], _param_params,
                arity=(0, 0), stored=True,
                doc="a learned tensor (or buffer) broadcast over the batch: class token, position "
                                  "embedding, layer scale", torch="nn.Parameter", work="shape", to_torch=_param_torch))


# == reductions, slicing, padding =================================================================================

def _mean_shape(ctx: Ctx):
    rank = len(ctx.x) + 1
    if not ctx["dim"]:
        raise ctx.fail("an empty list reduces every dim, the batch included (torch.mean(x, dim=[]) is a scalar), "
                       "which the IR cannot represent: list the dims to reduce", "dim", [])
    dims = [_sample_dim(ctx, d, rank, "dim") for d in ctx["dim"]]
    if len(set(dims)) != len(dims):
        raise ctx.fail("names a dim more than once (torch refuses it too)", "dim", ctx["dim"])
    if ctx["keepdim"]:
        return tuple(1 if i in dims else d for i, d in enumerate(ctx.x))
    return tuple(d for i, d in enumerate(ctx.x) if i not in dims)


def _full_dim(n, dim: int) -> int:
    """A dim counting the batch as 0, made non-negative."""
    return dim + len(n.in_shapes[0]) + 1 if dim < 0 else dim


def _reduce_torch(method: str):
    """``x.mean(dim=…)`` / ``x.sum(dim=…)`` with the IR's per-sample dims shifted past the batch."""
    def to_torch(n, xs):
        dims = tuple(_full_dim(n, d) for d in n.attrs["dim"])
        keep = ", keepdim=True" if n.attrs["keepdim"] else ""
        return TorchExpr(f"{xs[0]}.{method}(dim={dims!r}{keep})")
    return to_torch


def _reduce_import(op: str):
    """``torch.mean`` / ``torch.sum`` (and the methods) over given dims; over every dim, batch included, is not a
    per-sample op."""
    def importer(c, n):
        dim = c.value(c.arg(n, 1, "dim"))
        if dim is None:
            raise c.unsupported(n, f"a {op} over every dim, batch included")
        dims = tuple(dim) if isinstance(dim, (list, tuple)) else (dim,)
        return c.emit(c.scoped(n), op, [c.ref(n.args[0])], dim=dims,
                      keepdim=bool(c.value(c.arg(n, 2, "keepdim", False))))
    return importer


register(OpRule(
    "mean", "pool", (Attr("dim", "ints"), Attr("keepdim", "bool", False)), _mean_shape,
    lambda ctx: Cost(flops=numel(ctx.x), bwd_input=(numel(ctx.x),)),     # one add per input (+ the divide)
    lambda ctx, batch: [_mul_formula("FLOPs", ["N", "input elements"], [batch, numel(ctx.x)], 1, "1 (add; divide)")],
    doc="mean over dims (torch.mean)", torch="torch.mean", work=_pool_work, to_torch=_reduce_torch("mean"),
    imports=_calls(_reduce_import("mean"), "torch.mean", "mean")))


# a sum of k numbers is k − 1 adds: input elements − output elements; its gradient is a broadcast copy
register(OpRule(
    "sum", "pool", (Attr("dim", "ints"), Attr("keepdim", "bool", False)), _mean_shape,
    lambda ctx: Cost(flops=numel(ctx.x) - numel(ctx.out), bwd_input=(0,)),
    lambda ctx, batch: [FormulaLine("FLOPs", "N·(input − output elements) (adds)",
                                    f"{batch}·({_n(numel(ctx.x))} − {_n(numel(ctx.out))})",
                                    batch * (numel(ctx.x) - numel(ctx.out)))],
    doc="sum over dims (torch.sum)", torch="torch.sum", work=_pool_work, to_torch=_reduce_torch("sum"),
    imports=_calls(_reduce_import("sum"), "torch.sum", "sum")))


def _norm_p(ctx: Ctx) -> float:
    p = ctx["p"]
    if not (p > 0 and p != float("inf")):
        raise ctx.fail("the norm's order must be a positive finite number", "p", p)
    return p


# ‖x‖_p over dims: per input element |x|^p and an add (p = 2: square and add, 2 FLOPs; other p: abs, power and add,
# 3), then one root per output. Backward per input element: x·|x|^(p−2)·g/‖x‖^(p−1), counted 2 (p = 2) or 4.
def _norm_cost(ctx: Ctx) -> Cost:
    per = 2 if _norm_p(ctx) == 2 else 3
    return Cost(flops=per * numel(ctx.x) + numel(ctx.out), bwd_input=((2 if per == 2 else 4) * numel(ctx.x),))


def _norm_formula(ctx: Ctx, batch: int) -> list[FormulaLine]:
    per = 2 if _norm_p(ctx) == 2 else 3
    how = "square, add" if per == 2 else "abs, power, add"
    return [FormulaLine("FLOPs", f"N·({per}·input + output elements) ({how}; a root per output)",
                        f"{batch}·({per}·{_n(numel(ctx.x))} + {_n(numel(ctx.out))})",
                        batch * (per * numel(ctx.x) + numel(ctx.out)))]


def _norm_torch(n, xs):
    dims = tuple(_full_dim(n, d) for d in n.attrs["dim"])
    return TorchExpr(f"torch.linalg.vector_norm({xs[0]}, ord={n.attrs['p']!r}, dim={dims!r}, "
                     f"keepdim={n.attrs['keepdim']!r})")


def _norm_import(c, n):
    """x.norm(p, dim, keepdim), torch.norm, torch.linalg.vector_norm(x, ord, dim, keepdim): a vector norm over dims."""
    vector = "vector_norm" in getattr(n.target, "__name__", "")
    p = c.value(c.arg(n, 1, "ord" if vector else "p", 2))
    dim, keepdim = c.value(c.arg(n, 2, "dim")), c.value(c.arg(n, 3, "keepdim", False))
    p = 2 if p == "fro" else p
    if isinstance(p, str) or p is None:
        raise c.unsupported(n, f"a {p!r} norm")
    if dim is None:
        raise c.unsupported(n, "a norm over every dim, batch included")
    dims = tuple(dim) if isinstance(dim, (list, tuple)) else (dim,)
    return c.emit(c.scoped(n), "norm", [c.ref(n.args[0])], dim=dims, keepdim=bool(keepdim), p=float(p))


register(OpRule(
    "norm", "pool", (Attr("dim", "ints"), Attr("keepdim", "bool", False), Attr("p", "float", 2.0)),
    lambda ctx: (_norm_p(ctx), _mean_shape(ctx))[1], _norm_cost, _norm_formula,
    saves=lambda ctx: Saves(inputs=(0,), output=True),
    doc="vector p-norm over dims (x.norm, torch.linalg.vector_norm)", torch="torch.linalg.vector_norm",
    work=_pool_work, to_torch=_norm_torch,
    imports=_calls(_norm_import, "torch.norm", "norm", "torch.linalg.vector_norm")))


def _slice_shape(ctx: Ctx):
    rank = len(ctx.x) + 1
    d = _sample_dim(ctx, ctx["dim"], rank, "dim")
    size = ctx.x[d]
    start, end, step = ctx["start"], ctx["end"], ctx["step"]
    if ctx["select"]:
        idx = start + size if start < 0 else start
        if not 0 <= idx < size:
            raise ctx.fail(f"index {start} is out of range for size {size}", "start", start)
        return ctx.x[:d] + ctx.x[d + 1:]
    n = len(range(*slice(start, end, step).indices(size)))
    if n < 1:
        raise ctx.fail(f"slice {start}:{end}:{step} of size {size} is empty", "start", start)
    return ctx.x[:d] + (n,) + ctx.x[d + 1:]


def _slice_torch(n, xs):
    d, start, end, step = _full_dim(n, n.attrs["dim"]), n.attrs["start"], n.attrs["end"], n.attrs["step"]
    if n.attrs["select"]:
        return TorchExpr(f"{xs[0]}.select({d}, {start})")
    size = n.in_shapes[0][d - 1]
    text = f"{start or ''}:{'' if end >= size else end}" + (f":{step}" if step != 1 else "")
    return TorchExpr(f"{xs[0]}[{':, ' * d}{text}]")


def _split_import(c, n):
    """chunk / split: one slice node per piece, picked later by getitem."""
    d = _first_dim(c, n, c.value(c.arg(n, 2, "dim", 0)))
    src = c.ref(n.args[0])
    names, start = [], 0
    for i, piece in enumerate(c.value(n)):
        size = piece.shape[d]
        names.append(c.emit(f"{c.scoped(n)}.{i}", "slice", [src], dim=d, start=start, end=start + size))
        start += size
    return names


def _getitem_import(c, n):
    """x[:, 1:], x[..., 0]; or one piece of a split (or of a module's tuple output)."""
    src, idx = n.args
    r = c.result(src)
    if isinstance(r, list):
        picked = r[c.value(idx)]
        if picked is None:
            raise c.unsupported(n, "an output the IR does not model (attention weights)")
        return picked
    index = c.value(idx)
    index = index if isinstance(index, tuple) else (index,)
    name = c.ref(src)
    rank = c.value(src).dim()
    if Ellipsis in index:
        at = index.index(Ellipsis)
        index = index[:at] + (slice(None),) * (rank - len(index) + 1) + index[at + 1:]
    removed = 0
    for d, item in enumerate(index):
        if d == 0:
            if item != slice(None):
                raise c.unbatched(n)
            continue
        if isinstance(item, slice):
            if item == slice(None):
                continue
            s = slice(item.start or 0, item.stop if item.stop is not None else 2 ** 24, item.step or 1)
            name = c.emit(c.scoped(n), "slice", [name], dim=d - removed, start=s.start, end=s.stop, step=s.step)
        elif isinstance(item, int):
            name = c.emit(c.scoped(n), "slice", [name], dim=d - removed, start=item, select=True)
            removed += 1
        else:
            raise c.unsupported(n, f"indexing with {type(item).__name__}")
    return name


def _select_import(c, n):
    """x.select(dim, index) / torch.select: one position along a dim, which is dropped."""
    d, index = _first_dim(c, n, c.value(c.arg(n, 1, "dim"))), c.value(c.arg(n, 2, "index"))
    if d == 0:
        raise c.unbatched(n)
    return c.emit(c.scoped(n), "slice", [c.ref(n.args[0])], dim=d, start=index, select=True)


def _narrow_import(c, n):
    dim, start, length = (c.value(c.arg(n, i, k)) for i, k in ((1, "dim"), (2, "start"), (3, "length")))
    d = _first_dim(c, n, dim)
    if d == 0:
        raise c.unbatched(n)
    return c.emit(c.scoped(n), "slice", [c.ref(n.args[0])], dim=d, start=start, end=start + length)


register(OpRule(
    "slice", "shape",
    (Attr("dim", "int"), Attr("start", "int", 0), Attr("end", "int", MAX_DIM), Attr("step", "pos", 1),
     Attr("select", "bool", False, doc="index one position and drop the dim (x[:, 0])")),
    _slice_shape, _zero_cost, _zero_formula, alias=True, doc="x[..., start:end:step] or x[:, i] along one dim",
    torch="Tensor.__getitem__", work="shape", to_torch=_slice_torch,
    imports=_calls(_getitem_import, "operator.getitem")
    + _calls(_split_import, "torch.chunk", "torch.split", "chunk", "split")
    + _calls(_select_import, "torch.select", "select") + _calls(_narrow_import, "torch.narrow", "narrow")))


def _pad_shape(ctx: Ctx):
    pads = ctx["pad"]
    if len(pads) % 2 or len(pads) // 2 > len(ctx.x):
        raise ctx.fail("pad needs pairs (left, right) for the last dims, batch excluded", "pad", pads)
    out = list(ctx.x)
    for i in range(len(pads) // 2):
        d = len(out) - 1 - i
        out[d] += pads[2 * i] + pads[2 * i + 1]
        if out[d] < 1:
            raise ctx.fail("padding leaves an empty dimension", "pad", pads)
    return tuple(out)


def _pad_import(c, n):
    pads = tuple(int(p) for p in c.value(c.arg(n, 1, "pad")))
    mode = c.value(c.arg(n, 2, "mode", "constant"))
    if mode != "constant":
        c.warn(f"{n.name}: F.pad mode '{mode}' is costed as a copy")
    return c.emit(c.scoped(n), "pad", [c.ref(n.args[0])], pad=pads)


def _pad_module(c, n, m):
    """nn.ZeroPad2d / nn.ConstantPad2d: (left, right, top, bottom), as F.pad takes it."""
    return c.emit(n.target, "pad", [c.ref(n.args[0])], pad=tuple(int(p) for p in m.padding))


def _patch_merging_pad(c, n):
    """torchvision's Swin patch merging: pad H, W to even, then gather 2×2 neighbours into channels
    ([N, H, W, C] → [N, H/2, W/2, 4C]): a pad and a space-to-depth copy, no arithmetic."""
    h, w, ch = c.value(n.args[0]).shape[1:]
    ph, pw = h + h % 2, w + w % 2
    base = c.scoped(n)
    x = c.emit(f"{base}.pad", "pad", [c.ref(n.args[0])], pad=(0, 0, 0, pw - w, 0, ph - h))
    x = c.emit(f"{base}.split", "reshape", [x], shape=(ph // 2, 2, pw // 2, 2, ch))
    # torchvision concatenates x[0::2, 0::2], x[1::2, 0::2], x[0::2, 1::2], x[1::2, 1::2]: the channel block is
    # (w offset, h offset), so [N, h, 2 (h off), w, 2 (w off), C] → [N, h, w, w off, h off, C]
    x = c.emit(f"{base}.gather", "permute", [x], dims=(0, 1, 3, 4, 2, 5))
    return c.emit(c.scoped(n), "reshape", [x], shape=(ph // 2, pw // 2, 4 * ch))


register(OpRule("pad", "shape", (Attr("pad", "ints"),), _pad_shape, _zero_cost, _zero_formula,
                channel="none", doc="constant padding (F.pad), a copy", torch="F.pad", work="shape",
                to_torch=lambda n, xs: TorchExpr(f"F.pad({xs[0]}, {n.attrs['pad']!r})"),
                imports=_calls(_pad_import, "torch.nn.functional.pad")
                + _modules(_pad_module, "ZeroPad2d", "ConstantPad2d")
                + _calls(_patch_merging_pad, "torchvision.models.swin_transformer._patch_merging_pad")))


def _roll_import(c, n):
    shifts, dims = c.value(c.arg(n, 1, "shifts")), c.value(c.arg(n, 2, "dims"))
    return c.emit(c.scoped(n), "roll", [c.ref(n.args[0])], shifts=tuple(c.pair(shifts)) if not isinstance(shifts, int)
                  else (shifts,), dims=tuple(dims) if isinstance(dims, (list, tuple)) else (dims,))


def _roll_shape(ctx: Ctx):
    """torch.roll's rules: one shift per dim, or a single shift of the flattened tensor when dims is empty; dims in
    range (the batch may roll too: the shape stays)."""
    shifts, dims = ctx["shifts"], ctx["dims"]
    rank = len(ctx.x) + 1
    if not shifts:
        raise ctx.fail("needs at least one shift", "shifts", [])
    if not dims and len(shifts) != 1:
        raise ctx.fail(f"{len(shifts)} shifts and no dims: without dims, roll takes one shift (of the flattened "
                       "tensor)", "shifts", shifts)
    if dims and len(shifts) != len(dims):
        raise ctx.fail(f"{len(shifts)} shifts for {len(dims)} dims: give one shift per dim", "shifts", shifts)
    for d in dims:
        if not -rank <= d < rank:
            raise ctx.fail(f"dimension {d} out of range for a {rank}-d tensor", "dims", dims)
    return ctx.x


register(OpRule("roll", "shape", (Attr("shifts", "ints"), Attr("dims", "ints")), _roll_shape, _zero_cost,
                _zero_formula, channel="pass", doc="torch.roll, a copy", torch="torch.roll", work="shape",
                to_torch=lambda n, xs: TorchExpr(f"torch.roll({xs[0]}, shifts={n.attrs['shifts']!r}, "
                                                 f"dims={n.attrs['dims']!r})"),
                imports=_calls(_roll_import, "torch.roll")))


def _einsum_parse(ctx: Ctx):
    eq = ctx["equation"].replace(" ", "")
    if eq.count("->") != 1 or "." in eq:
        raise ctx.fail("needs one explicit output ('ij,jk->ik') and no ellipsis", "equation", ctx["equation"])
    lhs, out = eq.split("->")
    terms = lhs.split(",")
    if not all(c.isascii() and c.isalpha() for c in lhs.replace(",", "") + out):
        raise ctx.fail("subscripts must be letters a-z or A-Z", "equation", eq)
    if len(terms) != len(ctx.ins):
        raise ctx.fail(f"{len(terms)} operands in the equation, {len(ctx.ins)} inputs", "equation", ctx["equation"])
    if not out or any(not t or t[0] != out[0] for t in terms):
        raise ctx.fail("the first letter of every operand and of the output must be the batch", "equation", eq)
    if any(out[0] in t[1:] for t in terms + [out]):
        raise ctx.fail(f"the batch letter '{out[0]}' may only come first", "equation", eq)
    if len(set(out)) != len(out):
        raise ctx.fail("a letter appears more than once in the output", "equation", eq)
    sizes: dict[str, int] = {}
    for term, shape in zip(terms, ctx.ins):
        full = (None,) + tuple(shape)              # the first letter of every operand is the batch
        if len(term) != len(full):
            raise ctx.fail(f"operand '{term}' has {len(term)} letters for a {len(full)}-d input", "equation", eq)
        for letter, size in zip(term[1:], full[1:]):
            if sizes.setdefault(letter, size) != size and 1 not in (size, sizes[letter]):
                raise ctx.fail(f"letter '{letter}' is {sizes[letter]} in one operand and {size} in another",
                               "equation", eq)
            sizes[letter] = max(sizes[letter], size)
    missing = [c for c in out[1:] if c not in sizes]
    if missing:
        raise ctx.fail(f"output letter '{missing[0]}' is in no operand", "equation", eq)
    return terms, out, sizes


def _einsum_shape(ctx: Ctx):
    _, out, sizes = _einsum_parse(ctx)
    return tuple(sizes[c] for c in out[1:])


def _einsum_cost(ctx: Ctx) -> Cost:
    _, _, sizes = _einsum_parse(ctx)
    macs = prod(sizes.values()) if len(ctx.ins) > 1 else 0   # one multiply-add per point of the index space
    f = FLOPS_PER_MAC * macs if macs else numel(ctx.x)
    return Cost(macs=macs, flops=f, bwd_input=tuple(f for _ in ctx.ins))


def _einsum_import(c, n):
    operands = n.args[1:] if not isinstance(n.args[1], (list, tuple)) else n.args[1]
    return c.emit(c.scoped(n), "einsum", [c.ref(o) for o in operands], equation=c.value(n.args[0]))


register(OpRule("einsum", "matmul", (Attr("equation", "text"),), _einsum_shape, _einsum_cost,
                lambda ctx, batch: [FormulaLine("MACs", "N · ∏ index sizes",
                                                f"{batch} · {_dims(tuple(_einsum_parse(ctx)[2].values()))}",
                                                batch * _einsum_cost(ctx).macs)],
                saves=lambda ctx: Saves(inputs=tuple(range(len(ctx.ins)))), arity=(1, None),
                doc="torch.einsum whose operands all lead with the batch", torch="torch.einsum", work="linear",
                to_torch=lambda n, xs: TorchExpr(f"torch.einsum({n.attrs['equation']!r}, {', '.join(xs)})"),
                imports=_calls(_einsum_import, "torch.einsum")))


def _opaque_shape(ctx: Ctx):
    if any(d < 1 for d in ctx["shape"]):
        raise ctx.fail("dimensions must be positive", "shape", ctx["shape"])
    return tuple(ctx["shape"])


def _opaque_torch(n, xs):
    raise cannot_convert(n, f"the engine has no rule for {n.attrs.get('target', '?')}, so there is nothing to build")


register(OpRule("opaque", "misc", (Attr("shape", "ints"), Attr("target", "text", "?")), _opaque_shape,
                lambda ctx: Cost(bwd_input=(0,) * len(ctx.ins)),
                lambda ctx, batch: [FormulaLine("FLOPs", f"not modelled ({ctx['target']})", "?", 0)],
                arity=(0, None), doc="an operation the engine has no rule for: its shape comes from PyTorch and its "
                                     "cost is NOT counted (listed as a warning)", torch="?", work="elementwise",
                to_torch=_opaque_torch))


# == composite attention blocks (torch.nn.MultiheadAttention, torchvision's Swin window attention) ================

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
