"""Shape ops, no arithmetic (0 FLOPs, forward and backward): ``flatten``, ``reshape`` (view, reshape, squeeze,
unsqueeze), ``expand``, ``permute``, ``transpose``, ``channel_shuffle`` and ``contiguous``; and ``parameter``, a
learned tensor (or buffer) broadcast over the batch: class token, position embedding, layer scale.

Views (``alias``) allocate nothing. A reshape or flatten whose input's strides allow no view gets a ``contiguous``
copy first, as PyTorch makes one (``_copied``); ``_kept_trailing`` says which trailing dims a traced view keeps, so
that it holds at any input size.
"""

from __future__ import annotations

from math import prod

from ..registry import (
    Attr,
    Cost,
    Ctx,
    FormulaLine,
    OpRule,
    Params,
    TorchExpr,
    TorchModule,
    TorchParam,
    cannot_convert,
    numel,
    register,
)
from ._common import _as_module, _calls, _dims, _modules, _pick, _sample_dim, _zero_cost, _zero_formula


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
