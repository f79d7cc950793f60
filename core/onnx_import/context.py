"""What the op mappings see of a conversion: the IR nodes emitted so far, each with the per-sample shape its op's
rule computes; readable names from the exporter's module scopes; and readers of an ONNX tensor: an activation's
IR name, a constant's value or shape, its ONNX shape at batch 1 and its batch axis, an ONNX axis as an IR dim, a
weight counted once by the node that uses it, a constant operand as a ``parameter`` node, and ``settle``, which
fixes an output's shape and where its batch is."""

from __future__ import annotations

from ..errors import NetworkError
from ..ir import Node, release_name, unique_name
from ..registry import MAX_DIM, Ctx, get_rule, validate_attrs
from .base import _clean, _Const, _Unsupported
from .shapes import _Tensor
from .structure import _scope, _torch_scopes


class _Context:
    """The converter's state as the op mappings read and extend it (``_Converter`` sets it up and walks the
    graph)."""

    # -- names and emission ------------------------------------------------------------------------------------
    def _scopes(self) -> None:
        """PyTorch's exporter names nodes by module scope ("/layer1/layer1.0/conv1/Conv"); which scopes hold
        other scopes (containers) and how many nodes each holds, for readable IR names."""
        self.scope_count: dict[tuple, int] = {}
        self.containers: set[tuple] = set()
        for node in self.order:
            mods = _scope(node.name)
            if mods is None:
                continue
            self.scope_count[mods] = self.scope_count.get(mods, 0) + 1
            for i in range(1, len(mods)):
                self.containers.add(mods[:i])

    def base_name(self, node) -> str:
        mods = _scope(node.name)
        if mods:
            path = ".".join(m for i, m in enumerate(mods)
                            if not (i + 1 < len(mods) and mods[i + 1].startswith(m + ".")))
            leaf = node.name.rstrip("/").rsplit("/", 1)[-1]
            if mods not in self.containers and self.scope_count.get(mods, 0) == 1:
                return path
            return f"{path}.{leaf.lower()}"
        scopes = _torch_scopes(node)          # the dynamo exporter's module path ("layer1.0.conv1")
        if scopes:
            return scopes[-1]
        if node.name:
            return node.name.strip("/").replace("/", ".") or node.op_type.lower()
        return node.op_type.lower()

    def unique(self, base: str) -> str:
        return unique_name(base, self.names, self.name_counters)

    def emit(self, base: str, op: str, inputs, **attrs) -> str:
        """Append an IR node and compute its per-sample shape with its rule (a rule that refuses it raises
        ``NetworkError``, which the caller turns into an opaque node)."""
        name = self.unique(base)
        try:
            node = Node.make(name, op, list(inputs), **{k: v for k, v in attrs.items() if v is not None})
            rule = get_rule(op, name)
            checked = validate_attrs(rule, name, node.attr)
            shape = rule.shape(Ctx(name, checked, tuple(self.ir_shape[i] for i in node.inputs)))
            if not all(isinstance(d, int) and 1 <= d <= MAX_DIM for d in shape):
                raise NetworkError(f"gives the per-sample shape {list(shape)}", node=name)
        except NetworkError as e:
            release_name(name, self.names, self.name_counters)
            e.failed_emit = True            # the IR cannot represent what ONNX accepted: an opaque node instead
            raise
        self.nodes.append(node)
        self.ir_shape[name] = tuple(shape)
        return name

    def replace(self, name: str, **changes) -> None:
        i = next(i for i, n in enumerate(self.nodes) if n.name == name)
        self.nodes[i] = self.nodes[i].with_attrs(**changes)

    # -- what handlers read ------------------------------------------------------------------------------------
    def is_act(self, t: str) -> bool:
        return bool(t) and isinstance(self.env.get(t), str)

    def act(self, t: str) -> str:
        v = self.env.get(t)
        if not isinstance(v, str):
            raise _Unsupported(f"'{t}' is not computed from the input where an activation is expected")
        return v

    def const(self, t: str) -> _Const | None:
        v = self.env.get(t) if t else None
        return v if isinstance(v, _Const) else None

    def value(self, t: str, what: str):
        c = self.const(t)
        if c is None:
            raise _Unsupported(f"its {what} depends on the input")
        if c.value is None:
            raise _Unsupported(f"its {what} ('{t}') is not known without running the graph")
        self.as_values.update(c.params)      # read as a number (a Clip bound, a scalar operand): not a parameter
        return c.value

    def ints_of(self, t: str, what: str) -> list[int]:
        return [int(v) for v in self.value(t, what).reshape(-1).tolist()]

    def info(self, t: str) -> _Tensor:
        return self.tensors.get(t, _Tensor(None, None))

    def full(self, t: str) -> tuple:
        """The ONNX shape of ``t`` at batch 1."""
        s = self.info(t).s1
        if s is None:
            c = self.const(t)
            if c is not None and c.shape is not None:
                return c.shape
            raise _Unsupported(f"the shape of '{t}' is unknown")
        return s

    def batch_axis(self, t: str) -> int | None:
        return self.info(t).batch_axis()

    def ir_dim(self, t: str, axis: int) -> int:
        """ONNX ``axis`` of tensor ``t`` as an IR dim (the batch counted as 0)."""
        rank = len(self.full(t))
        a = axis + rank if axis < 0 else axis
        if not 0 <= a < rank:
            raise NetworkError(f"axis {axis} is out of range for a {rank}-d tensor", field="axis", value=axis)
        k = self.batch_axis(t)
        if k is None:
            return a + 1
        if a == k:
            raise _Unsupported("it acts along the batch axis")
        return a + 1 if a < k else a

    def weight(self, t: str, what: str) -> _Const:
        c = self.const(t)
        if c is None:
            raise _Unsupported(f"its {what} is computed from the input")
        if c.shape is None:
            raise _Unsupported(f"the shape of its {what} '{t}' is unknown")
        return c

    def count(self, ir_name: str, *consts: _Const | None) -> None:
        """The weights behind ``consts`` are counted by ``ir_name``'s rule; one counted before is shared."""
        for c in consts:
            if c is None:
                continue
            for w in sorted(c.params):
                if w in self.counted and self.counted[w] != ir_name:
                    self.warnings.append(f"{ir_name}: weight '{w}' is also used by {self.counted[w]}; each use "
                                         "counts it (totals may be higher)")
                self.counted.setdefault(w, ir_name)

    def param(self, t: str, like: str) -> str:
        """A constant operand ``t`` as a ``parameter`` node laid out per sample against activation tensor
        ``like`` (the output it broadcasts into); its weights are counted here, once."""
        c = self.const(t)
        if c is None or c.shape is None:
            raise _Unsupported(f"the shape of '{t}' is unknown")
        full = self.full(like)
        shape = tuple(c.shape)
        if len(shape) > len(full):
            raise _Unsupported(f"a constant of rank {len(shape)} against a {len(full)}-d tensor")
        shape = (1,) * (len(full) - len(shape)) + shape
        k = self.batch_axis(like)
        if k is not None:
            if shape[k] != 1:
                raise _Unsupported(f"a constant {list(c.shape)} that varies along the batch axis")
            shape = shape[:k] + shape[k + 1:]
        shape = shape or (1,)
        key = (t, shape)
        if key in self.param_nodes:
            return self.param_nodes[key]
        fresh = sorted(w for w in c.params if w not in self.counted)
        numel = sum(self.weights[w] for w in fresh)
        name = self.emit(_clean(t), "parameter", [], shape=shape, numel=numel)
        for w in fresh:
            self.counted[w] = name
        self.param_nodes[key] = name
        return name

    def like(self, node) -> str:
        """The tensor whose layout a node's constant operands and axes follow: its output where ONNX inferred it,
        else its activation input of the highest rank."""
        out = node.output[0]
        if self.info(out).s1 is not None:
            return out
        acts = [t for t in node.input if self.is_act(t)]
        return max(acts, key=lambda t: len(self.full(t)))

    def operand(self, t: str, like: str) -> str:
        return self.act(t) if self.is_act(t) else self.param(t, like)

    def warn(self, text: str) -> None:
        self.warnings.append(text)

    # -- where each output's batch is --------------------------------------------------------------------------
    def where(self, t: str) -> tuple:
        """(batch axis, merged axis) of activation ``t``."""
        info = self.info(t)
        return info.batch_axis(), info.merged_axis()

    def settle(self, node, out: str, per_sample: tuple | None = None) -> _Tensor:
        """``out``'s ONNX shape (computed here where inference had none) and where its batch is: as the handler
        computed them (views, transposes, gathers), else as the batch-2 inference shows, else where the node's
        widest activation input has its batch (ops that keep the layout)."""
        info = self.info(out)
        if out not in self.computed and info.settled:
            return info
        if out in self.computed:
            full, (axis, merged) = self.computed.pop(out)
            full = info.s1 or full
        else:
            acts = [t for t in node.input if self.is_act(t)] or \
                ([self.patterns[id(node)][1]] if id(node) in self.patterns else [])
            src = max(acts, key=lambda t: len(self.full(t))) if acts else None
            k, m = self.where(src) if src is not None else (0, None)
            full = info.s1
            if full is None:
                if per_sample is None:
                    raise _Unsupported(f"the shape of '{out}' is unknown")
                axis = None if k is None else min(k, len(per_sample))
                full = per_sample if axis is None else per_sample[:axis] + (1,) + per_sample[axis:]
                merged = m
            elif src is not None and len(full) == len(self.full(src)):
                axis = k if k is not None and full[k] == 1 else None
                merged = m if axis is None else None
            else:
                axis, merged = _Tensor(full, None).batch_axis(), None
        probed = info.probe()
        if probed is not None and probed[0] is not None:        # the batch-2 inference found the batch itself
            axis, merged = probed
        t = _Tensor(full, info.s2, axis, merged if axis is None else None, True)
        self.tensors[out] = t
        return t
