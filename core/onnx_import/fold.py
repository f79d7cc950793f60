"""Constant folding: a node whose inputs do not depend on the network input (``Constant``, ``Shape`` → ``Gather``
→ ``Concat`` chains, transposed weights) is computed here with numpy, up to ``MAX_FOLD_ELEMS`` elements each and
``MAX_FOLDED_TOTAL`` in all. A larger value, or one ``_evaluate`` does not compute, is known by its shape only
(ONNX's, or that of the same op on zeros, or its inputs broadcast); the weights it is computed from go with it."""

from __future__ import annotations

from math import prod

from ..errors import NetworkError
from .base import MAX_FOLD_ELEMS, MAX_FOLDED_TOTAL, STANDARD_DOMAINS, _attr, _Const, _np, _TooLarge, _Unsupported

_ELEMENTWISE = ("Add", "Sub", "Mul", "Div", "Pow", "Equal", "Less", "Greater", "And", "Or", "Not", "Where", "Cast",
                "Neg", "Abs", "Sqrt", "Exp", "Log", "Sigmoid", "Tanh", "Relu", "Max", "Min", "Mod", "Identity")
# ops without an IR rule whose output is their inputs broadcast (used when ONNX cannot infer the shape)
_ELEMENTWISE_OPAQUE = _ELEMENTWISE + (
    "Erf", "LeakyRelu", "Elu", "Selu", "Celu", "PRelu", "Softplus", "Softsign", "Mish", "ThresholdedRelu", "Clip",
    "Reciprocal", "Floor", "Ceil", "Round", "Sign", "Sin", "Cos", "IsNaN", "IsInf", "Xor", "LessOrEqual",
    "GreaterOrEqual", "Mean", "HardSigmoid", "Gelu", "Softmax", "LogSoftmax", "BitShift")
# ops whose output shape depends on their inputs' values: never evaluated on zeros for a shape
_NEEDS_VALUES = ("Reshape", "Expand", "ConstantOfShape", "Range", "Tile", "Slice", "Unsqueeze", "Squeeze", "Gather",
                 "Constant")


class _Folding:
    """The part of the converter that folds input-independent nodes into ``_Const`` values."""

    def _fold(self, node, shape_of_act: bool = False) -> None:
        try:
            self._fold_node(node, shape_of_act)
        except _Unsupported as e:
            raise NetworkError(f"cannot compute this input-independent value: {e}", node=node.name or node.op_type,
                               field="op_type", value=node.op_type) from None

    def _fold_node(self, node, shape_of_act: bool) -> None:
        outs = [o for o in node.output]
        ins = [self.env.get(t) if t else None for t in node.input]
        params = frozenset().union(*(c.params for c in ins if isinstance(c, _Const)))
        values = known = None
        if shape_of_act:
            full = self.full(node.input[0])
            params = frozenset()
            if node.op_type == "Size":
                values = [_np().array(prod(full), dtype=_np().int64)]
            else:
                start, end = _attr(node, "start", 0), _attr(node, "end", None)
                values = [_np().array(full[slice(start, end)], dtype=_np().int64)]
        elif node.op_type in ("Shape", "Size"):
            params = frozenset()
            c = ins[0]
            if c is not None and c.shape is not None:
                full = c.shape
                values = [_np().array(prod(full), dtype=_np().int64)] if node.op_type == "Size" else \
                    [_np().array(full[slice(_attr(node, "start", 0), _attr(node, "end", None))], dtype=_np().int64)]
        elif node.op_type == "Identity" and isinstance(ins[0], _Const) and node.input[0] in self.weights:
            # PyTorch's exporter stores equal tensors once and copies them: each copy is a parameter of its own
            self.weights[outs[0]] = self.weights[node.input[0]]
            self.env[outs[0]] = _Const(ins[0].value, ins[0].shape, frozenset({outs[0]}))
            return
        elif all(c is None or c.value is not None for c in ins) and node.domain in STANDARD_DOMAINS:
            try:
                values = _evaluate(node, [c.value if isinstance(c, _Const) else None for c in ins], self.opset)
            except _TooLarge as e:
                values, known = None, [e.shape]     # known by shape only, without building it
            except (_Unsupported, ValueError, IndexError, TypeError, ArithmeticError, MemoryError):
                values = None     # known by shape only; a node that needs the value says so
            if values is not None:
                self.folded += sum(getattr(v, "size", 0) for v in values)
                if self.folded > MAX_FOLDED_TOTAL:          # keep the shapes, drop the values
                    known = [getattr(v, "shape", None) for v in values]
                    values = None
        shapes = known
        if values is None and node.domain in STANDARD_DOMAINS and any(self.info(o).s1 is None for o in outs if o):
            # a weight-derived value: its shape is that of the same op on zeros of the inputs' shapes (the inputs
            # that say sizes, axes or indices must be known)
            stand_in, zeros = [], 0
            for i, k in enumerate(ins):
                if k is None or k.value is not None:
                    stand_in.append(k.value if k is not None else None)
                elif (i == 0 or node.op_type not in _NEEDS_VALUES) and k.shape is not None \
                        and prod(k.shape) <= MAX_FOLD_ELEMS - zeros:       # all the stand-ins within the cap
                    zeros += prod(k.shape)
                    stand_in.append(_np().zeros(k.shape))
                else:
                    stand_in = None
                    break
            try:
                shapes = [v.shape for v in _evaluate(node, stand_in, self.opset)] if stand_in is not None else None
            except _TooLarge as e:
                shapes = [e.shape]
            except Exception:  # noqa: BLE001 — the shape then stays unknown
                shapes = None
        if values is None and shapes is None and node.op_type in _ELEMENTWISE and all(
                c is not None and c.shape is not None for c in ins):
            try:
                shapes = [_np().broadcast_shapes(*(c.shape for c in ins))]
            except ValueError:
                shapes = None
        for i, out in enumerate(outs):
            if not out:
                continue
            v = values[i] if values is not None and i < len(values) else None
            shape = tuple(int(d) for d in v.shape) if v is not None else self.info(out).s1
            if shape is None and shapes is not None and i < len(shapes):
                shape = tuple(int(d) for d in shapes[i])
            self.env[out] = _Const(v, shape, params)


def _grown_shape(node, vals: list, ints) -> tuple | None:
    """The output shape of the ops ``_evaluate`` computes whose output can hold more elements than their inputs
    (a target shape, repeats, a Range's count, gathered indices, broadcasting, a Concat); None for the others
    (their output is no larger than an input) and where the inputs do not say (evaluating then fails)."""
    import math

    np = _np()
    op = node.op_type
    try:
        if op == "Expand":
            return tuple(np.broadcast_shapes(vals[0].shape, tuple(ints(vals[1]))))
        if op == "ConstantOfShape":
            return tuple(ints(vals[0]))
        if op == "Tile":
            reps = ints(vals[1])
            return tuple(d * r for d, r in zip(vals[0].shape, reps)) if len(reps) == vals[0].ndim else None
        if op == "Range":
            start, limit, delta = (float(v.item()) for v in vals[:3])
            if delta == 0 or not all(map(math.isfinite, (start, limit, delta))):
                raise _Unsupported("a Range with a zero or infinite step or bound")
            return (max(math.ceil((limit - start) / delta), 0),)
        if op == "Gather":
            axis = _attr(node, "axis", 0)
            axis = axis + vals[0].ndim if axis < 0 else axis
            return vals[0].shape[:axis] + vals[1].shape + vals[0].shape[axis + 1:]
        if op == "Concat":
            shapes = [np.atleast_1d(v).shape for v in vals if v is not None]
            axis = _attr(node, "axis", 0)
            axis = axis + len(shapes[0]) if axis < 0 else axis
            if any(len(sh) != len(shapes[0]) for sh in shapes):
                return None
            return shapes[0][:axis] + (sum(sh[axis] for sh in shapes),) + shapes[0][axis + 1:]
        if op in ("Add", "Sub", "Mul", "Div", "Pow", "Equal", "Less", "Greater", "And", "Or", "Max", "Min", "Mod",
                  "Where"):
            return tuple(np.broadcast_shapes(*(v.shape for v in vals)))
    except (ValueError, TypeError, AttributeError, IndexError, OverflowError):
        return None
    return None


def _evaluate(node, vals: list, opset: int) -> list:
    """The outputs of ``node`` on known constant inputs (numpy), for the ops that compute shapes, indices and small
    constants; ``_Unsupported`` for anything else (its output is then known by shape only)."""
    np = _np()
    op = node.op_type
    if any(v is not None and v.size > MAX_FOLD_ELEMS for v in vals):
        raise _Unsupported("too large")
    a = vals[0] if vals else None

    def ints(v):
        return [int(i) for i in np.asarray(v).reshape(-1).tolist()]

    # the size of the outputs that can be far larger than the inputs (a 254-byte file Expands a constant to
    # [20000, 20000]: 3 GB), checked before anything is built
    out_shape = _grown_shape(node, vals, ints)
    if out_shape is not None and prod(out_shape) > MAX_FOLD_ELEMS:
        raise _TooLarge(out_shape)

    if op == "Constant":
        from onnx import numpy_helper

        for at in node.attribute:
            if at.name == "value":
                return [numpy_helper.to_array(at.t)]
            if at.name in ("value_float", "value_int"):
                return [np.array(_attr(node, at.name))]
            if at.name in ("value_floats", "value_ints"):
                return [np.array(list(_attr(node, at.name)))]
        raise _Unsupported("a Constant without a dense value")
    if op == "Identity":
        return [a]
    if op == "Cast":
        from onnx import helper

        return [a.astype(helper.tensor_dtype_to_np_dtype(_attr(node, "to")))]
    if op == "Gather":
        return [np.take(a, vals[1].astype(np.int64), axis=_attr(node, "axis", 0))]
    if op == "Unsqueeze":
        axes = ints(vals[1]) if len(vals) > 1 and vals[1] is not None else list(_attr(node, "axes", []))
        out = a
        rank = a.ndim + len(axes)
        for ax in sorted(x + rank if x < 0 else x for x in axes):
            out = np.expand_dims(out, ax)
        return [out]
    if op == "Squeeze":
        axes = ints(vals[1]) if len(vals) > 1 and vals[1] is not None else _attr(node, "axes", None)
        return [np.squeeze(a, axis=tuple(axes)) if axes else np.squeeze(a)]
    if op == "Concat":
        return [np.concatenate([np.atleast_1d(v) for v in vals if v is not None], axis=_attr(node, "axis", 0))]
    if op == "Slice":
        if opset >= 10:
            starts, ends = ints(vals[1]), ints(vals[2])
            axes = ints(vals[3]) if len(vals) > 3 and vals[3] is not None else list(range(len(starts)))
            steps = ints(vals[4]) if len(vals) > 4 and vals[4] is not None else [1] * len(starts)
        else:
            starts, ends = list(_attr(node, "starts")), list(_attr(node, "ends"))
            axes = list(_attr(node, "axes", range(len(starts))))
            steps = [1] * len(starts)
        index = [slice(None)] * a.ndim
        for s, e, ax, st in zip(starts, ends, axes, steps):
            index[ax] = slice(s, e, st)
        return [a[tuple(index)]]
    binary = {"Add": np.add, "Sub": np.subtract, "Mul": np.multiply, "Pow": np.power, "Equal": np.equal,
              "Less": np.less, "Greater": np.greater, "And": np.logical_and, "Or": np.logical_or,
              "Max": np.maximum, "Min": np.minimum, "Mod": np.mod}
    if op in binary and len(vals) == 2:
        return [binary[op](vals[0], vals[1])]
    if op == "Div":
        if np.issubdtype(vals[0].dtype, np.integer) and np.issubdtype(vals[1].dtype, np.integer):
            return [np.trunc(vals[0] / vals[1]).astype(vals[0].dtype)]
        return [np.divide(vals[0], vals[1])]
    unary = {"Neg": np.negative, "Abs": np.abs, "Floor": np.floor, "Ceil": np.ceil, "Sqrt": np.sqrt,
             "Reciprocal": np.reciprocal, "Not": np.logical_not, "Sign": np.sign, "Exp": np.exp, "Log": np.log}
    if op in unary:
        return [unary[op](a)]
    if op == "Where":
        return [np.where(*vals)]
    if op == "Reshape":
        shape = ints(vals[1])
        shape = [a.shape[i] if s == 0 and not _attr(node, "allowzero", 0) else s for i, s in enumerate(shape)]
        return [a.reshape(shape)]
    if op == "Transpose":
        return [np.transpose(a, _attr(node, "perm", None))]
    if op == "Expand":
        return [a * np.ones(ints(vals[1]), dtype=a.dtype)]
    if op == "ConstantOfShape":
        from onnx import numpy_helper

        fill = _attr(node, "value", None)
        fill = numpy_helper.to_array(fill) if fill is not None else np.zeros(1, dtype=np.float32)
        return [np.full(ints(a), fill.reshape(-1)[0], dtype=fill.dtype)]
    if op == "Range":
        return [np.arange(vals[0].item(), vals[1].item(), vals[2].item()).astype(vals[0].dtype)]
    if op in ("ReduceProd", "ReduceSum", "ReduceMax", "ReduceMin"):
        fn = {"ReduceProd": np.prod, "ReduceSum": np.sum, "ReduceMax": np.max, "ReduceMin": np.min}[op]
        axes = ints(vals[1]) if len(vals) > 1 and vals[1] is not None else _attr(node, "axes", None)
        return [fn(a, axis=tuple(axes) if axes else None, keepdims=bool(_attr(node, "keepdims", 1)))]
    if op == "Flatten":
        axis = _attr(node, "axis", 1)
        return [a.reshape(prod(a.shape[:axis]), -1)]
    if op == "Tile":
        return [np.tile(a, ints(vals[1]))]
    if op == "ScatterND":
        out, idx = a.copy(), vals[1].astype(np.int64)
        out[tuple(np.moveaxis(idx, -1, 0))] = vals[2]
        return [out]
    raise _Unsupported(op)
