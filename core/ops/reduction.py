"""Reductions, slicing, padding and the rest: ``mean``, ``sum``, ``norm`` (a vector p-norm), ``slice`` (getitem,
split, chunk, select, narrow), ``pad`` (with torchvision's Swin patch merging), ``roll``, ``einsum``, and ``opaque``
(an operation the engine has no rule for).

FLOPs: mean one add per input element (and the divide); sum input − output elements adds, its gradient a broadcast
copy; norm per input element 2 for p = 2 (square, add), 3 otherwise (abs, power, add), plus a root per output.
slice, pad and roll only move data (0 FLOPs). einsum: one multiply-add per point of the index space (1 MAC = 2
FLOPs; one FLOP per input element for a single operand). An opaque op's cost is not counted (a warning says so).
"""

from __future__ import annotations

from math import prod

from ..registry import (
    FLOPS_PER_MAC,
    MAX_DIM,
    Attr,
    Cost,
    Ctx,
    FormulaLine,
    OpRule,
    Saves,
    TorchExpr,
    cannot_convert,
    numel,
    register,
)
from ._common import (
    _calls,
    _dims,
    _first_dim,
    _modules,
    _mul_formula,
    _n,
    _pool_work,
    _sample_dim,
    _zero_cost,
    _zero_formula,
)


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
