"""Elementwise ops on one input: the activations (``relu`` … ``leaky_relu``), ``dropout`` and ``identity`` from
one factory and the ``_UNARY`` table, then ``softmax`` and ``log_softmax``. The identity also imports
``x.contiguous()`` of a contiguous tensor and ``x.expand(…)`` that changes no per-sample dim.

FLOPs per element, forward and backward, with the operations counted, are in ``_UNARY``; softmax and log_softmax
are 5 forward and 4 backward. Dropout is the identity at inference (0 FLOPs) and keeps a one-byte mask per element
for training. ``inplace=True`` (``_IN_PLACE_CAPABLE`` says which ops take it) overwrites the first input, so the
CPU allocates no output.
"""

from __future__ import annotations

from ..registry import Attr, Cost, Ctx, FormulaLine, Importer, OpRule, Saves, numel, register
from ._common import _INPLACE, _as_module, _calls, _modules, _mul_formula, _sample_dim

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
