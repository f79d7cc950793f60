"""The converter: it sets a conversion up (the nodes in order, the data input, the inferred shapes), seeds the
weights and constants, then walks the graph in order: an input-independent node is folded, a fused pattern
becomes its one op, and every other node goes to its op's mapping (``mapping.HANDLERS``). A node without a
mapping, or one its mapping or the IR's rule refuses, becomes an ``opaque`` node with ONNX's shape and a
warning; weights that no node counted are counted at the end. The result is a compiled ``Network``."""

from __future__ import annotations

from math import prod
from typing import Any

from ..errors import NetworkError
from ..graph import compile_network
from ..ir import Network, Node, release_name
from ..registry import MAX_DIM
from .base import INPUT, SETTING_SLOTS, STANDARD_DOMAINS, _attr, _Const, _first_line, _np, _onnx, _Unsupported
from .context import _Context
from .fold import _ELEMENTWISE_OPAQUE, _Folding
from .mapping import HANDLERS
from .patterns import _Patterns
from .shapes import _dims, _Shapes
from .structure import _opset, _topological


class _Converter(_Shapes, _Context, _Folding, _Patterns):
    """One model's conversion. Its parts are bases, each in its module: setup and shapes (``_Shapes``), what the
    op mappings read (``_Context``), constant folding (``_Folding``) and fused patterns (``_Patterns``)."""

    def __init__(self, model, name: str, input_shape, label: str | None = None):
        self.onnx = _onnx()
        self.model = model
        self.graph = model.graph
        self.name = name
        self.label = label or name          # what messages call the model (its file name)
        self.opset = _opset(model)
        self.nodes: list[Node] = []
        self.names: set[str] = {INPUT}
        self.name_counters: dict[str, int] = {}  # unique_name's next suffix per base
        self.ir_shape: dict[str, tuple] = {}
        self.env: dict[str, Any] = {}            # ONNX tensor name → IR name (str) or _Const
        self.weights: dict[str, int] = {}        # weight name → elements
        self.counted: dict[str, str] = {}        # weight name → the IR node that counted it
        self.param_nodes: dict[tuple, str] = {}
        self.warnings: list[str] = []
        self.unsupported: list[str] = []
        self.absorbed: set[int] = set()          # ids of ONNX nodes folded into a pattern (SiLU, GELU, bias add)
        self.patterns: dict[int, tuple] = {}     # id(node) → (IR op, input tensor) for fused activations
        self.linear_bias: dict[str, str] = {}    # ONNX output of a bias-free linear (MatMul) → its IR name
        self.computed: dict[str, tuple] = {}     # ONNX shapes (batch 1) computed here where inference had none
        self.as_values: set[str] = set()         # one-element weights read as numbers (x + 1.0): not parameters
        self.folded = 0                          # elements of the values folded so far (MAX_FOLDED_TOTAL)
        self.order = _topological(self.graph, self.label)
        self.consumers: dict[str, list] = {}
        for node in self.order:
            for slot, t in enumerate(node.input):
                if t:
                    self.consumers.setdefault(t, []).append((node, slot))
        self.producer = {o: node for node in self.order for o in node.output if o}
        self._scopes()
        self.data_input, self.input_dims = self._data_input(input_shape)
        self.tensors = self._infer()

    # -- the main loop -----------------------------------------------------------------------------------------
    def convert(self) -> Network:
        self._seed()
        self._find_patterns()
        for node in self.order:
            if id(node) in self.absorbed:
                continue
            ins = [t for t in node.input if t]
            if node.op_type in ("Shape", "Size") and node.domain in STANDARD_DOMAINS and ins and self.is_act(ins[0]):
                self._fold(node, shape_of_act=True)
            elif all(not self.is_act(t) for t in ins) and id(node) not in self.patterns:
                self._fold(node)
            else:
                self._convert_node(node)
        outputs = [self.env[o.name] for o in self.graph.output if self.is_act(o.name)]
        if not outputs:
            raise NetworkError("no graph output depends on the input", node=self.label, field="output",
                               value=[o.name for o in self.graph.output])
        if INPUT in outputs:           # an output that is the input itself (a graph of Identity ops): one node
            outputs = [self.emit("identity", "identity", [INPUT]) if o == INPUT else o for o in outputs]
        self._leftover_weights()
        net = Network.make(self.name, {INPUT: self.input_dims}, self.nodes, list(dict.fromkeys(outputs)),
                           description=f"imported from ONNX ({self.model.producer_name or 'unknown producer'} "
                                       f"{self.model.producer_version}, opset {self.opset})".replace(" ,", ","))
        compile_network(net)
        return net

    def _seed(self) -> None:
        onnx = self.onnx
        self.env[self.data_input.name] = INPUT
        self.ir_shape[INPUT] = self.input_dims
        expected = self.info(self.data_input.name).per_sample()
        if expected is not None and expected != self.input_dims:
            raise NetworkError(f"inference gives the input per-sample shape {list(expected)}", node=self.label,
                               field="input", value=list(self.input_dims))
        floats = (onnx.TensorProto.FLOAT, onnx.TensorProto.DOUBLE, onnx.TensorProto.FLOAT16,
                  onnx.TensorProto.BFLOAT16)
        for t in self.graph.initializer:
            value = None
            if self._small(t):
                try:
                    value = onnx.numpy_helper.to_array(t)
                except Exception as e:  # noqa: BLE001 — a tensor whose data does not match its type
                    raise NetworkError(f"initializer data is malformed ({_first_line(e)})", node=self.label,
                                       field="initializer", value=t.name) from None
            is_weight = t.data_type in floats
            if is_weight:
                self.weights[t.name] = prod(t.dims)
            self.env[t.name] = _Const(value, tuple(int(d) for d in t.dims),
                                      frozenset({t.name}) if is_weight else frozenset())
        for i in self.graph.input:          # weights of an export_params=False export; integer ones are indices
            if i.name in self.env:
                continue
            dims = _dims(i.type)
            if dims is None:
                raise NetworkError("a weight input needs a fixed shape", node=self.label, field="input",
                                   value=i.name)
            is_weight = i.type.tensor_type.elem_type in floats
            if is_weight:
                self.weights[i.name] = prod(dims)
            self.env[i.name] = _Const(None, dims, frozenset({i.name}) if is_weight else frozenset())

    def _convert_node(self, node) -> None:
        mark = len(self.nodes)
        base = self.base_name(node)
        try:
            if node.domain not in STANDARD_DOMAINS:
                raise _Unsupported(f"op {node.domain}.{node.op_type} (not a standard ONNX op)")
            if id(node) in self.patterns:
                op, src = self.patterns[id(node)]
                result = self.emit(base, op, [self.act(src)], **({"approximate": "none"} if op == "gelu" else {}))
            else:
                handler = HANDLERS.get(node.op_type)
                if handler is None:
                    raise _Unsupported(f"op {node.op_type}")
                result = handler(self, node, base)
            results = result if isinstance(result, list) else [result]
            for out, r in zip([o for o in node.output if o], results):
                if r is None:
                    continue
                t = self.settle(node, out, self.ir_shape[r])
                if t.per_sample() != self.ir_shape[r]:
                    raise _Unsupported(f"the IR's rule gives per-sample shape {list(self.ir_shape[r])} where the "
                                       f"graph's is {list(t.s1)} with the batch at axis {t.batch_axis()}")
                self.env[out] = r
        except _Unsupported as e:
            self._undo(mark)
            self._opaque(node, base, str(e))
        except NetworkError as e:
            if getattr(e, "failed_emit", False):
                self._undo(mark)
                self._opaque(node, base, f"the IR's {e.field or 'rule'} check refuses it: {e.reason}", cause=e)
            else:
                raise NetworkError(e.reason, node=node.name or base, field=e.field, value=e.value) from None
        except (IndexError, KeyError, TypeError, ValueError, AttributeError, ArithmeticError) as e:
            # inputs or attributes of a kind the op does not take (a Conv without its weight): the file is malformed
            raise NetworkError(f"cannot read this {node.op_type} node ({type(e).__name__}: {_first_line(e)})",
                               node=node.name or base, field="op_type", value=node.op_type) from None

    def _undo(self, mark: int) -> None:
        for n in self.nodes[mark:]:
            release_name(n.name, self.names, self.name_counters)
            self.ir_shape.pop(n.name, None)
        for key in [k for k, v in self.param_nodes.items() if v not in {n.name for n in self.nodes[:mark]}]:
            del self.param_nodes[key]
        dropped = {n.name for n in self.nodes[mark:]}
        for w in [w for w, owner in self.counted.items() if owner in dropped]:
            del self.counted[w]
        del self.nodes[mark:]

    def _opaque(self, node, base: str, why: str, cause: NetworkError | None = None) -> None:
        """``node`` as an opaque node with ONNX's output shapes; where ONNX has none either, an error: the IR's own
        (``cause``: a kernel larger than its input) where its check refused the node, else "no cost rule"."""
        ins = [self.act(t) for t in node.input if self.is_act(t)]
        consts = [self.const(t) for t in node.input if t and self.const(t) is not None]
        fresh = sorted({w for c in consts for w in c.params if w not in self.counted})
        target = node.op_type if node.domain in STANDARD_DOMAINS else f"{node.domain}.{node.op_type}"
        if fresh:
            p = self.emit(f"{base}.weights", "parameter", [], shape=(1,), numel=sum(self.weights[w] for w in fresh))
            for w in fresh:
                self.counted[w] = p
            ins.append(p)
        made = False
        for i, out in enumerate(node.output):
            if not out:
                continue
            if self.info(out).s1 is None and i == 0:
                try:
                    guess = self._elementwise_or_reduce(node)
                except _Unsupported:
                    guess = None
                if guess is not None:
                    self.computed[out] = (guess[0], (guess[1], None))
            try:
                shape = self.settle(node, out).per_sample()
            except _Unsupported:
                shape = None
            if shape is None or not all(1 <= d <= MAX_DIM for d in shape):
                if cause is not None and (out in self.consumers or out in {o.name for o in self.graph.output}):
                    raise NetworkError(f"{cause.reason} (ONNX cannot infer the shape of '{out}' either)",
                                       node=node.name or base, field=cause.field, value=cause.value)
                if out in self.consumers or out in {o.name for o in self.graph.output}:
                    raise NetworkError(f"{target} has no cost rule ({why}) and ONNX cannot infer the shape of its "
                                       f"output '{out}'", node=node.name or base, field="op_type", value=target)
                continue
            self.env[out] = self.emit(base, "opaque", ins, shape=shape or (1,), target=target)
            made = True
        if made:
            self.unsupported.append(target)
            self.warnings.append(f"{node.name or base}: {target} has no cost rule ({why}); its shape comes from "
                                 "ONNX and its FLOPs are NOT counted")

    def _elementwise_or_reduce(self, node) -> tuple | None:
        """(ONNX shape at batch 1, batch axis) of an op without a rule whose output ONNX could not infer, where
        its kind says it: elementwise (the inputs broadcast) or a Reduce* over axes; None otherwise."""
        np = _np()
        acts = [t for t in node.input if self.is_act(t)]
        if not acts:
            return None
        src = max(acts, key=lambda t: len(self.full(t)))
        full, k = self.full(src), self.batch_axis(src)
        if node.op_type.startswith("Reduce"):
            if len(node.input) > 1 and node.input[1]:
                axes = self.ints_of(node.input[1], "axes")
            else:
                axes = list(_attr(node, "axes", []))
            axes = {a + len(full) if a < 0 else a for a in axes} or set(range(len(full)))
            if k in axes:
                return None
            if _attr(node, "keepdims", 1):
                return tuple(1 if i in axes else d for i, d in enumerate(full)), k
            kept = tuple(d for i, d in enumerate(full) if i not in axes)
            return kept, (k - sum(a < k for a in axes) if k is not None else None)
        if node.op_type not in _ELEMENTWISE_OPAQUE:
            return None
        shapes = [self.full(t) if self.is_act(t) else (self.const(t).shape if self.const(t) else None)
                  for t in node.input if t]
        if any(sh is None for sh in shapes):
            return None
        try:
            out = tuple(int(d) for d in np.broadcast_shapes(*shapes))
        except ValueError:
            return None
        return out, (k + len(out) - len(full) if k is not None else None)

    # -- weights not counted by any node -----------------------------------------------------------------------
    def _leftover_weights(self) -> None:
        used = {t for node in self.order for t in node.input if t}
        left = [w for w in self.weights if w not in self.counted and w not in self.as_values and w in used
                and self._reaches_activation(w) and not self._only_settings(w)]
        if left:
            p = self.emit("onnx_weights", "parameter", [], shape=(1,), numel=sum(self.weights[w] for w in left))
            for w in left:
                self.counted[w] = p
            self.warnings.append("weights used only by input-independent computation are counted, their arithmetic "
                                 f"is not modelled: {', '.join(left[:6])}" + (" …" if len(left) > 6 else ""))

    def _only_settings(self, t: str) -> bool:
        """Whether every use of ``t`` is an input that says how an op runs (Resize's scales, Pad's pads, Clip's
        bounds), not a tensor it computes with."""
        uses = self.consumers.get(t, [])
        return bool(uses) and all(slot in SETTING_SLOTS.get(node.op_type, ()) for node, slot in uses)

    def _reaches_activation(self, w: str, depth: int = 0) -> bool:
        for node, _ in self.consumers.get(w, []):
            if node.op_type in ("Shape", "Size"):
                continue
            if depth > 32 or any(self.is_act(o) for o in node.output) or \
                    any(self._reaches_activation(o, depth + 1) for o in node.output if o):
                return True
        return False
