"""Elementwise ops on several inputs, with broadcasting: ``add`` (which ``torch.addcmul`` imports to, with a
``mul``), ``mul``, ``sub`` and ``div``, in place or not; and ``concat`` (``torch.cat``, ``torch.stack``).

FLOPs: inputs − 1 per output element (1 with a scalar); sub is costed as add, div as mul. Backward: the gradient to
a broadcast input is summed over the broadcast dims (output − input elements adds); mul and div also multiply by the
other inputs (inputs − 1 per element). concat is a copy: 0 FLOPs.
"""

from __future__ import annotations

import dataclasses

from ..registry import Attr, Cost, Ctx, FormulaLine, OpRule, Saves, TorchExpr, numel, register
from ._common import _INPLACE, _broadcast, _calls, _mul_formula, _sample_dim


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
