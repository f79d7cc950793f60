"""Helpers that several op families use: number and shape formatting, per-sample dims (``_sample_dim`` turns a
PyTorch dim, batch = 0, into an index into the per-sample shape), window lengths, the MACs/FLOPs formula lines; the
PyTorch helpers, both ways (an ``nn`` module built from a node, the calls an op imports); and the few definitions
that two families share (broadcasting, the ``inplace`` attribute, the softmax FLOPs per attention score, the class
of work of pools and reductions, the zero cost of ops that only move data).

It imports no family module: the families import from it.
"""

from __future__ import annotations

from math import prod
from typing import Any, Callable

from ..registry import FLOPS_PER_MAC, Attr, Cost, Ctx, FormulaLine, Importer, TorchModule


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


# == shared by two families =======================================================================================
# _broadcast: matmul, elementwise. _SDPA_SOFTMAX_*: matmul (sdpa), attention. _INPLACE: activation, elementwise.
# _pool_work: pooling, reduction. _zero_cost, _zero_formula: shape, reduction.

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


# Softmax per score: max, subtract, exp, sum, divide = 5 FLOPs; plus 1 for the 1/√E scaling.
_SDPA_SOFTMAX_FLOPS = 5 + 1
_SDPA_SOFTMAX_BWD = 4          # dS = P ⊙ (dP − rowsum(dP ⊙ P)): multiply, sum, subtract, multiply


# ``inplace=True`` (nn.ReLU(inplace=True), F.relu_, x += y) overwrites input 0: the CPU allocates no output
_INPLACE = Attr("inplace", "bool", False, doc="overwrites its first input (no new output tensor on the CPU)")


def _pool_work(ctx: Ctx) -> str:
    """A global pool (one number per channel) streams its input once, as elementwise work does; windowed pooling
    revisits each input several times and runs far slower on a CPU."""
    return "elementwise" if all(d == 1 for d in ctx.out[1:]) else "pool"


def _zero_formula(ctx: Ctx, batch: int) -> list[FormulaLine]:
    return [FormulaLine("FLOPs", "0 (moves or relabels data)", "0", 0)]


def _zero_cost(ctx: Ctx) -> Cost:
    return Cost(bwd_input=(0,) * len(ctx.ins))
