"""ONNX → IR: read a model file with the ``onnx`` package, infer its shapes, and map every node to an IR op.

Nothing is executed: no runtime, no torch. The file is read (at most ``MAX_ONNX_BYTES``) and parsed with
``onnx.load_from_string``, which never opens the external files a large model keeps its weights in. Its shapes are
inferred by ONNX's own shape inference; computation that does not depend on the input (``Constant``, ``Shape`` →
``Gather`` → ``Concat`` chains, transposed weights) is folded here with numpy, and what is left maps to IR ops. An op
without a rule becomes an explicit ``opaque`` node with ONNX's shape and a warning, as in the PyTorch importer
(``core.bridge.fx_import``): never a silent zero.

**Per sample.** The IR is per sample with the batch first; an ONNX graph carries the batch in its tensors, and not
always first (``nn.MultiheadAttention`` runs on ``[L, N, E]`` and folds the batch into the heads, ``[N·heads, L,
d]``). The graph is therefore inferred twice, at batch 1 and at batch 2: the tensor at batch 1 *is* one sample's
tensor, and an axis that doubles at batch 2 and is 1 at batch 1 is the batch itself, dropped from the per-sample
shape (an axis that doubles but holds more, like ``N·heads``, keeps its per-sample size). Each op's axes are mapped
to the per-sample tensor. Costs counted on one sample scale with the batch as everywhere in the IR.

**Weights** are initializers, or graph inputs other than the data input (exports with ``export_params=False``), or
``Identity`` copies of them (PyTorch's exporter stores equal tensors once and copies them with ``Identity``: each
copy is its own parameter, as it was in the model). A weight in a weight slot (Conv, Gemm, MatMul, the norms) is
counted by that op's rule; a weight anywhere else (a layer scale, a class token) becomes a ``parameter`` node.

**Exports fold BatchNorm.** ``torch.onnx.export`` with its default ``do_constant_folding=True`` folds each
BatchNorm that follows a convolution into the convolution's weights and a bias: the graph then has fewer
parameters than the PyTorch model (2·C per folded BatchNorm, less C of new bias) and the same multiply-adds. Export
with ``do_constant_folding=False`` to keep them.
"""

from __future__ import annotations

import heapq
import os
import re
import stat
from dataclasses import dataclass
from math import prod
from typing import Any

from .bridge.fx_import import ImportResult
from .errors import NetworkError
from .graph import compile_network
from .ir import Network, Node, release_name, unique_name
from .registry import MAX_DIM, Ctx, get_rule, shown, validate_attrs

# protobuf cannot parse a message of 2 GiB or more, so no single-file ONNX model is larger: one that is keeps its
# weights in external files, which are never read here. Refusing a larger file before reading it keeps a 10 GB file
# (or /dev/zero) from being loaded into memory. Uploads in the app are capped lower (.streamlit/config.toml).
MAX_ONNX_BYTES = 2 ** 31 - 1
MAX_VALUE_ELEMS = 2 ** 16      # larger initializers are kept by shape only (for a weight, the shape is all that counts)
MAX_FOLD_ELEMS = 2 ** 20       # input-independent values up to this size are computed (a Swin mask is 64·49·49)
MAX_FOLDED_TOTAL = 2 ** 24     # and up to this many elements in all (a file of many folds stays ~100 MB)
MAX_KEPT_ELEMS = 64            # float initializers this small keep their data for inference (Resize scales)
PROBE_BATCH = 2                # the second batch size the graph is inferred at, to find the batch axis of each tensor
INPUT = "x"                    # the IR name of the network input, as in the PyTorch importer
STANDARD_DOMAINS = ("", "ai.onnx")

# input slots that hold weights, by op: a graph input feeding only these is a parameter, not the data input
WEIGHT_SLOTS = {"Conv": (1, 2), "ConvTranspose": (1, 2), "Gemm": (1, 2), "MatMul": (1,),
                "BatchNormalization": (1, 2, 3, 4), "InstanceNormalization": (1, 2), "LayerNormalization": (1, 2),
                "GroupNormalization": (1, 2), "PRelu": (1,)}
# input slots that say how an op runs (sizes, scales, bounds): a float tensor there is a setting, not a parameter
SETTING_SLOTS = {"Resize": (1, 2, 3), "Upsample": (1,), "Pad": (1, 2, 3), "Clip": (1, 2), "Dropout": (1, 2),
                 "Slice": (1, 2, 3, 4), "Reshape": (1,), "Expand": (1,), "Tile": (1,), "Squeeze": (1,),
                 "Unsqueeze": (1,), "Split": (1,), "ReduceMean": (1,), "ReduceSum": (1,), "ReduceMax": (1,),
                 "ReduceMin": (1,), "ReduceL2": (1,), "ReduceProd": (1,), "ConstantOfShape": (0,)}
_PASS_THROUGH = ("Identity", "Cast", "Transpose", "Reshape", "Unsqueeze", "Squeeze")   # weights reach a slot via


def _onnx():
    try:
        import onnx
        import onnx.numpy_helper
        import onnx.shape_inference
    except ImportError:    # pragma: no cover - onnx is in requirements.txt
        raise NetworkError("reading ONNX models needs the onnx package (pip install onnx)", field="model",
                           value="onnx") from None
    return onnx


# == reading ======================================================================================================

def _read(source: Any) -> tuple[bytes, str, str]:
    """The bytes of ``source`` (a path or the file's bytes), a name for the network and what messages call it."""
    if isinstance(source, (bytes, bytearray, memoryview)):
        data = bytes(source)
        if len(data) > MAX_ONNX_BYTES:
            raise NetworkError(f"the model is {len(data):,} bytes; the limit is {MAX_ONNX_BYTES:,}", field="model",
                               value="<bytes>")
        return data, "onnx_model", "ONNX model"
    if not isinstance(source, (str, os.PathLike)):
        raise NetworkError(f"expected a path to an .onnx file or its bytes, got {type(source).__name__}",
                           field="model", value=shown(source))
    path = os.fspath(source)
    name = os.path.splitext(os.path.basename(path))[0] or "onnx_model"
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    except OSError as e:
        raise NetworkError(f"cannot read the file: {e.strerror or e}", field="model", value=path) from None
    except (TypeError, ValueError) as e:
        raise NetworkError(f"not a file path ({e})", field="model", value=shown(path)) from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise NetworkError("not a regular file", field="model", value=path)
        if st.st_size > MAX_ONNX_BYTES:
            raise NetworkError(f"the file is {st.st_size:,} bytes; the limit is {MAX_ONNX_BYTES:,}", field="model",
                               value=path)
        with os.fdopen(fd, "rb", closefd=True) as f:
            fd = -1
            data = f.read(MAX_ONNX_BYTES + 1)
    except OSError as e:
        raise NetworkError(f"cannot read the file: {e.strerror or e}", field="model", value=path) from None
    finally:
        if fd >= 0:
            os.close(fd)
    if len(data) > MAX_ONNX_BYTES:
        raise NetworkError(f"the file is over the limit of {MAX_ONNX_BYTES:,} bytes", field="model", value=path)
    return data, name, os.path.basename(path)


def _parse(data: bytes, where: str):
    onnx = _onnx()
    from google.protobuf.message import DecodeError

    if not data:
        raise NetworkError("not an ONNX model: the file is empty", node=where)
    try:
        model = onnx.load_model_from_string(data)
    except (DecodeError, ValueError, TypeError, RuntimeError) as e:
        raise NetworkError(f"not an ONNX model: the bytes are not a protobuf ModelProto ({_first_line(e)})",
                           node=where) from None
    if not model.HasField("graph") or not model.graph.node:
        raise NetworkError("not an ONNX model: it has no graph (or a graph without nodes)", node=where,
                           field="graph")
    _check_text(model, where)
    return model


def _check_text(model, where: str) -> None:
    """Every name the converter reads is text: protobuf hands back bytes for a string that is not UTF-8."""
    g = model.graph
    for field, items in (("input", g.input), ("output", g.output), ("initializer", g.initializer),
                         ("value_info", g.value_info)):
        for i, item in enumerate(items):
            if not isinstance(item.name, str):
                raise NetworkError("a name is not UTF-8 text", node=where, field=f"{field}[{i}].name",
                                   value=repr(item.name)[:80])
    for i, node in enumerate(g.node):
        for field, value in (("name", node.name), ("op_type", node.op_type), ("domain", node.domain),
                             *((f"input[{j}]", t) for j, t in enumerate(node.input)),
                             *((f"output[{j}]", t) for j, t in enumerate(node.output)),
                             *((f"attribute[{j}].name", a.name) for j, a in enumerate(node.attribute))):
            if not isinstance(value, str):
                raise NetworkError("a name is not UTF-8 text", node=f"node #{i}", field=field,
                                   value=repr(value)[:80])
    for o in model.opset_import:
        if not isinstance(o.domain, str):
            raise NetworkError("an opset domain is not UTF-8 text", node=where, field="opset_import",
                               value=repr(o.domain)[:80])


def _first_line(e: BaseException) -> str:
    text = str(e).strip().splitlines()
    return (text[0] if text else type(e).__name__)[:300]


# == values =======================================================================================================

@dataclass
class _Const:
    """A tensor that does not depend on the input: its value when known (small, computed here), its shape, and the
    weights (by name) it was computed from."""

    value: Any                       # a numpy array, or None (a weight without data, or too large to compute)
    shape: tuple | None
    params: frozenset = frozenset()


class _Unsupported(Exception):
    """Raised by a handler: the node becomes ``opaque``, saying why."""


class _TooLarge(_Unsupported):
    """Raised by ``_evaluate`` before it builds an output of more than ``MAX_FOLD_ELEMS`` elements: the value is
    then known by its ``shape`` only."""

    def __init__(self, shape: tuple):
        super().__init__(f"too large ({prod(shape):,} elements)")
        self.shape = shape


@dataclass(frozen=True)
class _Tensor:
    """One activation's shape at batch 1 and at batch 2 (None where unknown) and where its batch is: ``axis``, the
    axis that is the batch itself, or ``merged``, the axis the batch is folded into (``[N·heads, L, d]``); both
    None where not told yet (then the batch-2 inference, or the first axis if it is 1, says)."""

    s1: tuple | None
    s2: tuple | None
    axis: int | None = None
    merged: int | None = None
    settled: bool = False

    def batch_axis(self) -> int | None:
        """The axis that is the batch itself; None when the batch is folded into a larger axis."""
        if self.settled or self.s1 is None:
            return self.axis
        probed = self.probe()
        if probed is not None:
            return probed[0]
        return 0 if self.s1 and self.s1[0] == 1 else None

    def merged_axis(self) -> int | None:
        if self.settled:
            return self.merged
        probed = self.probe()
        return probed[1] if probed is not None else None

    def probe(self) -> tuple | None:
        """(axis, merged) as the batch-2 inference shows them: the one axis that grew, from 1 to 2 (the batch) or
        from n to 2n (the batch folded in); None where nothing grew (sizes written for batch 1, or not inferred)
        or several axes did."""
        if self.s1 is None or self.s2 is None or len(self.s2) != len(self.s1):
            return None
        grown = [i for i, (a, b) in enumerate(zip(self.s1, self.s2)) if a != b]
        if len(grown) != 1 or self.s2[grown[0]] != PROBE_BATCH * self.s1[grown[0]]:
            return None
        return (grown[0], None) if self.s1[grown[0]] == 1 else (None, grown[0])

    def per_sample(self) -> tuple | None:
        if self.s1 is None:
            return None
        k = self.batch_axis()
        return self.s1 if k is None else self.s1[:k] + self.s1[k + 1:]


def _dims(type_proto) -> tuple | None:
    if not type_proto.HasField("tensor_type") or not type_proto.tensor_type.HasField("shape"):
        return None
    out = []
    for d in type_proto.tensor_type.shape.dim:
        if d.HasField("dim_value") and d.dim_value >= 0:
            out.append(int(d.dim_value))
        else:
            return None
    return tuple(out)


# == the graph: structure, data input, inference ==================================================================

def _node_label(node, i: int) -> str:
    return node.name or f"{node.op_type} node #{i}"


def _topological(graph, where: str) -> list:
    """The nodes in an order where every input is produced first; a missing input or a cycle is an error naming
    the node and the tensor."""
    produced: dict[str, int] = {}
    available = {i.name for i in graph.input} | {t.name for t in graph.initializer}
    for i, node in enumerate(graph.node):
        for o in node.output:
            if not o:
                continue
            if o in produced or o in available:
                raise NetworkError("the tensor is produced twice", node=_node_label(node, i), field="output",
                                   value=o)
            produced[o] = i
    waiting = []
    users: dict[int, list[int]] = {}
    for i, node in enumerate(graph.node):
        deps = set()
        for name in node.input:
            if not name or name in available:
                continue
            if name not in produced:
                raise NetworkError("input is produced by no node, initializer or graph input",
                                   node=_node_label(node, i), field="input", value=name)
            deps.add(produced[name])
        waiting.append(len(deps))
        for d in deps:
            users.setdefault(d, []).append(i)
    ready = [i for i, w in enumerate(waiting) if w == 0]
    heapq.heapify(ready)                # the file's own order wherever it is a valid one
    order = []
    while ready:
        i = heapq.heappop(ready)
        order.append(i)
        for u in users.get(i, ()):
            waiting[u] -= 1
            if waiting[u] == 0:
                heapq.heappush(ready, u)
    if len(order) != len(graph.node):
        stuck = [_node_label(graph.node[i], i) for i, w in enumerate(waiting) if w > 0]
        raise NetworkError(f"the graph has a cycle through {', '.join(stuck[:5])}", node=stuck[0], field="input",
                           value=[n for n in graph.node[[i for i, w in enumerate(waiting) if w > 0][0]].input])
    for o in graph.output:
        if o.name not in produced and o.name not in available:
            raise NetworkError("graph output is produced by no node", node=where, field="output", value=o.name)
    return [graph.node[i] for i in order]


def _feeds_only_weight_slots(name: str, consumers: dict, depth: int = 0) -> bool:
    uses = consumers.get(name, [])
    if not uses or depth > 8:
        return False
    for node, slot in uses:
        if node.op_type in _PASS_THROUGH and slot == 0:
            if not all(_feeds_only_weight_slots(o, consumers, depth + 1) for o in node.output if o):
                return False
        elif slot not in WEIGHT_SLOTS.get(node.op_type, ()):
            return False
    return True


def _opset(model) -> int:
    for o in model.opset_import:
        if o.domain in STANDARD_DOMAINS:
            return int(o.version)
    return 1


# == the converter ================================================================================================

class _Converter:
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

    # -- setup -------------------------------------------------------------------------------------------------
    def _data_input(self, input_shape):
        inits = {t.name for t in self.graph.initializer}
        candidates = [i for i in self.graph.input if i.name not in inits]
        data = next((i for i in candidates if not _feeds_only_weight_slots(i.name, self.consumers)), None)
        if data is None:
            raise NetworkError("the graph has no data input (every graph input is an initializer or a weight)",
                               node=self.label, field="input")
        t = data.type.tensor_type
        if not data.type.HasField("tensor_type") or not t.HasField("shape") or len(t.shape.dim) < 2:
            raise NetworkError("the data input needs a shape with a batch dimension first, like [N, 3, 224, 224]",
                               node=self.label, field="input", value=data.name)
        dims = list(t.shape.dim)
        batch = dims[0].dim_value if dims[0].HasField("dim_value") else None
        if batch is not None and batch > 1:
            # An export at a fixed batch keeps that batch inside its constants (Reshape targets such as [2, 512],
            # Expand and Tile sizes), which the batch-1 and batch-2 inference below cannot see: a flatten before
            # the classifier then folds two samples into one row, counting the classifier twice, or inference
            # fails on a size mismatch. Refused rather than counted wrong. A fixed batch of 1 cannot inflate the
            # counts: the graph is inferred at batch 1, the batch its constants were written for, so every
            # batch-1 shape is one sample's; the batch-2 inference only locates the batch axis, and where a
            # constant holds it at 1 the axis does not grow and the shapes stay those of one sample.
            raise NetworkError(f"input '{data.name}' was exported at a fixed batch of {batch}: export at batch 1 "
                               "or with a dynamic batch axis (dynamic_axes / dynamic_shapes)", node=self.label,
                               field=data.name, value=[d.dim_value or d.dim_param or "?" for d in dims])
        if input_shape is not None:
            from .api import parse_shape

            shape = parse_shape(input_shape)
            if len(shape) != len(dims) - 1:
                raise NetworkError(f"the model's input '{data.name}' has {len(dims) - 1} dimensions per sample; "
                                   f"the input shape given has {len(shape)}", field="input_shape", value=input_shape)
        else:
            shape = []
            for i, d in enumerate(dims[1:], 1):
                if not d.HasField("dim_value") or d.dim_value < 1:
                    sym = d.dim_param or "?"
                    raise NetworkError(f"input '{data.name}' has a symbolic dimension '{sym}' at position {i}: "
                                       "give the per-sample input shape (e.g. 3x224x224; --input on the command line)",
                                       field="input_shape", value=None)
                shape.append(int(d.dim_value))
            shape = tuple(shape)
            if any(s > MAX_DIM for s in shape):
                raise NetworkError(f"input '{data.name}' has an absurdly large dimension (limit {MAX_DIM:,})",
                                   node=self.label, field="input", value=list(shape))
        for other in candidates:
            if other is data:
                continue
            d0 = other.type.tensor_type.shape.dim if other.type.HasField("tensor_type") else []
            if d0 and not d0[0].HasField("dim_value") and d0[0].dim_param:
                raise NetworkError("only networks with one input are supported; this graph input has a symbolic "
                                   "batch dimension too", node=self.label, field="input", value=other.name)
        return data, tuple(shape)

    def _skeleton(self):
        """The graph for shape inference: nodes in order, the data input at batch 1, weights as typed inputs (no
        data: inference needs their shapes only), small integer constants kept, no stale shapes."""
        onnx = self.onnx
        h = onnx.helper
        inits = []
        inputs = [h.make_tensor_value_info(self.data_input.name, self.data_input.type.tensor_type.elem_type,
                                           [1, *self.input_dims])]
        seen = {self.data_input.name}
        for t in self.graph.initializer:
            seen.add(t.name)
            if self._small(t) and (prod(t.dims) <= MAX_KEPT_ELEMS or t.data_type not in (
                    onnx.TensorProto.FLOAT, onnx.TensorProto.DOUBLE, onnx.TensorProto.FLOAT16,
                    onnx.TensorProto.BFLOAT16)):
                inits.append(t)       # sizes, axes, scales, indices: what inference reads the values of
            else:
                inputs.append(h.make_tensor_value_info(t.name, t.data_type, list(t.dims)))
        for i in self.graph.input:
            if i.name not in seen:
                seen.add(i.name)
                inputs.append(i)
        outputs = [h.make_empty_tensor_value_info(o.name) for o in self.graph.output]
        graph = h.make_graph(list(self.order), "skeleton", inputs, outputs, initializer=inits)
        model = h.make_model(graph, opset_imports=list(self.model.opset_import), ir_version=self.model.ir_version
                             or onnx.IR_VERSION)
        model.functions.extend(self.model.functions)
        return model

    @staticmethod
    def _small(t) -> bool:
        return prod(t.dims) <= MAX_VALUE_ELEMS and t.data_location != 1      # 1: EXTERNAL

    def _infer(self) -> dict[str, _Tensor]:
        try:
            skeleton = self._skeleton()
        except (ValueError, TypeError) as e:      # protobuf refusing a field of the file (text that is not UTF-8)
            raise NetworkError(f"the model cannot be read: {_first_line(e)}", node=self.label) from None
        reply = _INFERENCE.run(skeleton.SerializeToString(), self.label)
        if "error" in reply:
            node, op, reason = _inference_message(reply["error"])
            attr = re.match(r"Attribute (\w+)", reason)
            raise NetworkError(f"ONNX shape inference refuses it: {reason}",
                               node=f"{node} ({op})" if node and op else node or self.label,
                               field=attr.group(1) if attr else None)
        if "failed" in reply:
            raise NetworkError(f"ONNX shape inference failed: {reply['failed']}", node=self.label)
        first = {k: tuple(v) if v is not None else None for k, v in reply["s1"].items()}
        second = {k: tuple(v) if v is not None else None for k, v in reply["s2"].items()}
        declared = self.graph.input[list(i.name for i in self.graph.input).index(self.data_input.name)]
        if (_dims(declared.type) or (None,))[0] == 1 and self.input_dims == _dims(declared.type)[1:]:
            # shapes the file declares (at batch 1, for the input it declares) where inference found none: the
            # outputs of ops from other domains
            for vi in list(self.graph.value_info) + list(self.graph.output):
                if first.get(vi.name) is None and _dims(vi.type) is not None:
                    first[vi.name] = _dims(vi.type)
        return {k: _Tensor(v, second.get(k)) for k, v in first.items()}

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

    # -- names and emission ------------------------------------------------------------------------------------
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

    # -- constants ---------------------------------------------------------------------------------------------
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

    # -- fused patterns: x·sigmoid(x) = SiLU, x·hardsigmoid(x) = Hardswish, the erf form of GELU, Linear's bias ---
    def _only_user(self, t: str):
        uses = self.consumers.get(t, [])
        graph_out = t in {o.name for o in self.graph.output}
        return uses[0][0] if len(uses) == 1 and not graph_out else None

    def _find_patterns(self) -> None:
        np = _np()
        for node in self.order:
            if node.domain not in STANDARD_DOMAINS:
                continue
            if node.op_type in ("Sigmoid", "HardSigmoid") and len(node.input) == 1:
                if node.op_type == "HardSigmoid" and not (abs(_attr(node, "alpha", 0.2) - 1 / 6) < 1e-6
                                                          and abs(_attr(node, "beta", 0.5) - 0.5) < 1e-6):
                    continue
                mul = self._only_user(node.output[0])
                x = node.input[0]
                if mul is not None and mul.op_type == "Mul" and sorted(mul.input) == sorted([x, node.output[0]]):
                    self.absorbed.add(id(node))
                    self.patterns[id(mul)] = ("silu" if node.op_type == "Sigmoid" else "hardswish", x)
            elif node.op_type == "Erf":
                div = self.producer.get(node.input[0])
                if div is None or div.op_type != "Div" or self._only_user(div.output[0]) is not node:
                    continue
                x, c = div.input[0], self._const_scalar(div.input[1])
                add = self._only_user(node.output[0])
                if c is None or abs(c - np.sqrt(2)) > 1e-3 or add is None or add.op_type != "Add":
                    continue
                one = [t for t in add.input if t != node.output[0]]
                mul = self._only_user(add.output[0])
                if len(one) != 1 or self._const_scalar(one[0]) != 1.0 or mul is None or mul.op_type != "Mul":
                    continue
                half = self._only_user(mul.output[0])
                if x in mul.input and half is not None and half.op_type == "Mul":
                    other = [t for t in half.input if t != mul.output[0]]
                    if len(other) == 1 and self._const_scalar(other[0]) == 0.5:
                        self.absorbed.update({id(div), id(node), id(add), id(mul)})
                        self.as_values.update({div.input[1], one[0], other[0]})     # √2, 1 and 0.5
                        self.patterns[id(half)] = ("gelu", x)

    def _const_scalar(self, t: str) -> float | None:
        """The value of a one-element constant made by an initializer or a Constant node (before folding)."""
        for init in self.graph.initializer:
            if init.name == t and prod(init.dims) == 1:
                return float(self.onnx.numpy_helper.to_array(init).reshape(-1)[0])
        node = self.producer.get(t)
        if node is not None and node.op_type == "Constant":
            try:
                v = _evaluate(node, [], self.opset)[0]
            except Exception:  # noqa: BLE001
                return None
            return float(v.reshape(-1)[0]) if v.size == 1 else None
        return None

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


def _np():
    import numpy

    return numpy


def _inference_message(error: str) -> tuple[str | None, str | None, str]:
    """(node, op type, reason) from onnx's InferenceError text: "[ShapeInferenceError] Inference error(s):
    (op_type:Conv, node name: conv1): [ShapeInferenceError] Attribute strides must only contain positive values"."""
    text = " ".join(str(error).split())
    m = re.search(r"\(op_type:([\w.]+), node name: ([^)]*)\): (?:\[\w+\] )?(.*)", text)
    if m:
        return m.group(2) or None, m.group(1), m.group(3)[:300]
    m = re.search(r"node name (\S+?)\.? (.*)", text)
    if m:
        return m.group(1), None, text[:300]
    return None, None, text.replace("[ShapeInferenceError] ", "")[:300]


def _scope(name: str) -> tuple | None:
    if not name or "/" not in name:
        return None
    parts = [p for p in name.strip("/").split("/") if p]
    return tuple(parts[:-1]) or None


def _torch_scopes(node) -> list[str]:
    """The module names ``torch.onnx.export(..., dynamo=True)`` records on a node (its last entry, the aten op,
    left out)."""
    import ast

    for p in node.metadata_props:
        if p.key == "pkg.torch.onnx.name_scopes":
            try:
                scopes = ast.literal_eval(p.value)
            except (ValueError, SyntaxError, MemoryError, RecursionError):
                return []
            return [x for x in scopes[:-1] if isinstance(x, str) and x] if isinstance(scopes, list) else []
    return []


def _clean(t: str) -> str:
    return t.strip("/").replace("/", ".").replace("::", "_") or "constant"


def _attr(node, name: str, default=None):
    for a in node.attribute:
        if a.name == name:
            from onnx import helper

            v = helper.get_attribute_value(a)
            return v.decode() if isinstance(v, bytes) else v
    return default


# == ONNX's shape inference, in a helper process ===================================================================
# onnx's C++ shape inference can abort the whole process on a malformed file (a failed assertion in its Slice rule
# on a fuzzed model): it runs in a helper process, started once and kept, so that a bad upload ends the helper, not
# the app or the CLI. The helper gets the graph without its weights; it answers with the shapes at batch 1 (strict:
# an inference error is the file's) and at batch PROBE_BATCH.

INFERENCE_TIMEOUT_S = 120      # onnx infers a ResNet-152 in well under a second
INFERENCE_MEMORY = 4 * 2 ** 30  # address space the helper may take: the graph comes without its weights

_HELPER = r"""
import json, struct, sys
try:
    import resource
    resource.setrlimit(resource.RLIMIT_AS, (%(memory)d, %(memory)d))
except Exception:
    pass
import onnx
from onnx import shape_inference


def dims(t):
    if not t.HasField("tensor_type") or not t.tensor_type.HasField("shape"):
        return None
    out = [d.dim_value if d.HasField("dim_value") and d.dim_value >= 0 else None for d in t.tensor_type.shape.dim]
    return None if None in out else out


def shapes(g):
    return {v.name: dims(v.type) for v in list(g.input) + list(g.value_info) + list(g.output)}


read, write = sys.stdin.buffer.read, sys.stdout.buffer
while True:
    head = read(8)
    if len(head) < 8:
        break
    model = onnx.load_model_from_string(read(struct.unpack("<Q", head)[0]))
    try:
        first = shapes(shape_inference.infer_shapes(model, strict_mode=True, data_prop=True).graph)
        model.graph.input[0].type.tensor_type.shape.dim[0].dim_value = %(batch)d
        try:
            second = shapes(shape_inference.infer_shapes(model, strict_mode=False, data_prop=True).graph)
        except Exception:
            second = {}
        reply = {"s1": first, "s2": second}
    except shape_inference.InferenceError as e:
        reply = {"error": str(e)}
    except Exception as e:
        reply = {"failed": "%%s: %%s" %% (type(e).__name__, str(e).splitlines()[0] if str(e) else "")}
    body = json.dumps(reply).encode()
    write.write(struct.pack("<Q", len(body)) + body)
    write.flush()
"""


class _Inference:
    """The helper process, shared by every import in this process (one request at a time)."""

    def __init__(self):
        import threading

        self.lock = threading.Lock()
        self.proc = None

    def _start(self):
        import atexit
        import subprocess
        import sys

        code = _HELPER % {"memory": INFERENCE_MEMORY, "batch": PROBE_BATCH}
        self.proc = subprocess.Popen([sys.executable, "-c", code], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.DEVNULL)
        atexit.register(self._stop)          # the helper ends with this process

    def _stop(self) -> str:
        proc, self.proc = self.proc, None
        if proc is None:
            return "not started"
        if proc.poll() is None:
            proc.kill()
        code = proc.wait()
        for pipe in (proc.stdin, proc.stdout):
            try:
                pipe.close()
            except OSError:          # a write that the dead helper never read
                pass
        return f"signal {-code}" if code < 0 else f"exit code {code}"

    def _read(self, n: int, deadline: float) -> bytes:
        import os
        import select
        import time

        fd, out = self.proc.stdout.fileno(), b""
        while len(out) < n:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([fd], [], [], left)[0]:
                raise TimeoutError
            chunk = os.read(fd, n - len(out))
            if not chunk:
                raise EOFError
            out += chunk
        return out

    def run(self, skeleton: bytes, label: str) -> dict:
        import json
        import struct
        import time

        with self.lock:
            try:
                if self.proc is None or self.proc.poll() is not None:
                    self._start()
                self.proc.stdin.write(struct.pack("<Q", len(skeleton)) + skeleton)
                self.proc.stdin.flush()
                deadline = time.monotonic() + INFERENCE_TIMEOUT_S
                size = struct.unpack("<Q", self._read(8, deadline))[0]
                return json.loads(self._read(size, deadline))
            except TimeoutError:
                self._stop()
                raise NetworkError(f"ONNX shape inference did not finish within {INFERENCE_TIMEOUT_S} s",
                                   node=label) from None
            except (EOFError, BrokenPipeError, OSError, ValueError) as e:
                how = self._stop()
                if isinstance(e, OSError) and not isinstance(e, BrokenPipeError):
                    raise NetworkError(f"cannot run ONNX shape inference: {e}", node=label) from None
                raise NetworkError(f"ONNX shape inference crashed on this model ({how}): the file is malformed",
                                   node=label) from None


_INFERENCE = _Inference()


# == attribute readers that name what is wrong ====================================================================

def _ints(node, name: str, n: int, default: int, minimum: int) -> tuple:
    v = _attr(node, name, None)
    if v is None:
        return (default,) * n
    if not isinstance(v, (list, tuple)) or len(v) != n or not all(isinstance(i, int) for i in v):
        raise NetworkError(f"expected {n} integers", node=node.name or node.op_type, field=name, value=list(v)
                           if isinstance(v, (list, tuple)) else v)
    if any(i < minimum or i > MAX_DIM for i in v):
        raise NetworkError(f"every value must be from {minimum} to {MAX_DIM:,}", node=node.name or node.op_type,
                           field=name, value=list(v))
    return tuple(v)


def _auto_pad(node, sizes, kernel, strides, dilations) -> tuple:
    """(begins, ends) of the padding: ``pads`` or what ``auto_pad`` computes for these input sizes."""
    n = len(sizes)
    mode = _attr(node, "auto_pad", "NOTSET") or "NOTSET"
    if mode in ("NOTSET",):
        pads = _ints(node, "pads", 2 * n, 0, 0)
        return pads[:n], pads[n:]
    if mode == "VALID":
        return (0,) * n, (0,) * n
    if mode not in ("SAME_UPPER", "SAME_LOWER"):
        raise NetworkError("must be NOTSET, SAME_UPPER, SAME_LOWER or VALID", node=node.name or node.op_type,
                           field="auto_pad", value=mode)
    begins, ends = [], []
    for size, k, s, d in zip(sizes, kernel, strides, dilations):
        out = -(-size // s)
        total = max((out - 1) * s + (k - 1) * d + 1 - size, 0)
        small, big = total // 2, total - total // 2
        begins.append(small if mode == "SAME_UPPER" else big)
        ends.append(big if mode == "SAME_UPPER" else small)
    return tuple(begins), tuple(ends)


def _spatial_padding(c: _Converter, node, base: str, x: str, begins, ends) -> tuple[str, tuple]:
    """The symmetric part of the padding stays in the conv or pool; the rest becomes a ``pad`` node before it."""
    sym = tuple(min(b, e) for b, e in zip(begins, ends))
    extra = [(b - s, e - s) for b, e, s in zip(begins, ends, sym)]
    if any(b or e for b, e in extra):
        pad = []
        for b, e in reversed(extra):            # F.pad order: the last dim first
            pad += [b, e]
        x = c.emit(f"{base}.pad", "pad", [x], pad=tuple(pad))
    return x, sym


def _inputs(node, base: str, *names: str) -> None:
    """The node has (non-empty) inputs ``names``, in order, or the file is malformed."""
    given = list(node.input) + [""] * len(names)
    missing = [n for n, t in zip(names, given) if not t]
    if missing:
        raise NetworkError(f"needs its inputs {', '.join(names)}; {', '.join(missing)} missing",
                           node=node.name or base, field="input", value=list(node.input))


def _bias_size(node, base: str, b: _Const | None, channels: int) -> None:
    if b is not None and prod(b.shape) != channels:
        raise NetworkError(f"has {prod(b.shape)} values for {channels} output channels", node=node.name or base,
                           field="B", value=list(b.shape))


def _need_nchw(c: _Converter, t: str) -> str:
    x = c.act(t)
    if c.batch_axis(t) != 0 or len(c.full(t)) != 4:
        raise _Unsupported("it needs a 4-d [N, C, H, W] input with the batch first")
    return x


# == handlers: one ONNX op each ===================================================================================

def _conv_operands(c: _Converter, node, base: str, what: str):
    """A (transposed) convolution's input, weight, optional bias and group, each checked."""
    _inputs(node, base, "X", "W")
    x = _need_nchw(c, node.input[0])
    w = c.weight(node.input[1], "weight")
    b = c.weight(node.input[2], "bias") if len(node.input) > 2 and node.input[2] else None
    if len(w.shape) != 4:
        raise _Unsupported(f"a {len(w.shape) - 2}-d {what} (the IR has 2-d)")
    group = _attr(node, "group", 1)
    if not isinstance(group, int) or group < 1:
        raise NetworkError("must be a positive integer", node=node.name or base, field="group", value=group)
    return x, w, b, group


def _conv(c: _Converter, node, base: str):
    x, w, b, group = _conv_operands(c, node, base, "convolution")
    kernel = tuple(w.shape[2:])
    given = _attr(node, "kernel_shape", None)
    if given is not None and tuple(given) != kernel:
        raise NetworkError(f"does not match the weight's kernel {list(kernel)}", node=node.name or base,
                           field="kernel_shape", value=list(given))
    strides = _ints(node, "strides", 2, 1, 1)
    dilations = _ints(node, "dilations", 2, 1, 1)
    channels = c.full(node.input[0])[1]
    if channels % group or w.shape[1] * group != channels:
        raise NetworkError(f"the weight {list(w.shape)} with group {group} takes {w.shape[1] * group} input "
                           f"channels, the input has {channels}", node=node.name or base, field="W",
                           value=node.input[1])
    if w.shape[0] % group:
        raise NetworkError(f"group {group} does not divide the weight's {w.shape[0]} output channels",
                           node=node.name or base, field="group", value=group)
    _bias_size(node, base, b, w.shape[0])
    begins, ends = _auto_pad(node, c.full(node.input[0])[2:], kernel, strides, dilations)
    x, sym = _spatial_padding(c, node, base, x, begins, ends)
    name = c.emit(base, "conv2d", [x], out_channels=w.shape[0], kernel_size=kernel, stride=strides, padding=sym,
                  dilation=dilations, groups=group, bias=b is not None)
    c.count(name, w, b)
    return name


def _conv_transpose(c: _Converter, node, base: str):
    x, w, b, group = _conv_operands(c, node, base, "transposed convolution")
    kernel = tuple(w.shape[2:])
    channels = c.full(node.input[0])[1]
    if w.shape[0] != channels or channels % group:
        raise NetworkError(f"the weight {list(w.shape)} with group {group} takes {w.shape[0]} input channels, the "
                           f"input has {channels}", node=node.name or base, field="W", value=node.input[1])
    _bias_size(node, base, b, w.shape[1] * group)
    strides = _ints(node, "strides", 2, 1, 1)
    dilations = _ints(node, "dilations", 2, 1, 1)
    out_pad = _ints(node, "output_padding", 2, 0, 0)
    sizes = c.full(node.input[0])[2:]
    given = _attr(node, "output_shape", None)
    mode = _attr(node, "auto_pad", "NOTSET") or "NOTSET"
    if given is not None or mode in ("SAME_UPPER", "SAME_LOWER"):
        target = tuple(given)[-2:] if given is not None else tuple(s * st for s, st in zip(sizes, strides))
        begins, ends = [], []
        for size, k, s, d, op, o in zip(sizes, kernel, strides, dilations, out_pad, target):
            total = s * (size - 1) + op + (k - 1) * d + 1 - o
            if total < 0:
                raise NetworkError("is larger than the convolution can produce", node=node.name or base,
                                   field="output_shape", value=list(target))
            if mode == "SAME_UPPER":
                begins.append(total // 2)
                ends.append(total - total // 2)
            else:
                begins.append(total - total // 2)
                ends.append(total // 2)
    elif mode == "VALID":
        begins, ends = (0, 0), (0, 0)
    else:
        pads = _ints(node, "pads", 4, 0, 0)
        begins, ends = pads[:2], pads[2:]
    sym = tuple(min(p, q) for p, q in zip(begins, ends))
    name = c.emit(base, "conv_transpose2d", [x], out_channels=w.shape[1] * group, kernel_size=kernel, stride=strides,
                  padding=sym, output_padding=out_pad, dilation=dilations, groups=group, bias=b is not None)
    c.count(name, w, b)
    for axis, (p, q, s) in enumerate(zip(begins, ends, sym)):
        if p != s or q != s:
            size = c.ir_shape[name][axis + 1]
            name = c.emit(f"{base}.crop", "slice", [name], dim=axis + 2, start=p - s, end=size - (q - s))
    return name


def _gemm(c: _Converter, node, base: str):
    _inputs(node, base, "A", "B")
    a, bt = node.input[0], node.input[1]
    if not c.is_act(a) or c.is_act(bt) or _attr(node, "transA", 0):
        raise _Unsupported("a Gemm whose left operand is not the activation, or is transposed")
    w = c.weight(bt, "weight")
    if len(w.shape) != 2:
        raise NetworkError(f"expects a 2-d weight, got {list(w.shape)}", node=node.name or base, field="B",
                           value=bt)
    out, k = (w.shape[0], w.shape[1]) if _attr(node, "transB", 0) else (w.shape[1], w.shape[0])
    if c.full(a)[-1] != k:
        raise NetworkError(f"the weight {list(w.shape)} takes {k} features, the input has {c.full(a)[-1]}",
                           node=node.name or base, field="B", value=bt)
    if _attr(node, "alpha", 1.0) != 1.0 or _attr(node, "beta", 1.0) != 1.0:
        c.warn(f"{node.name or base}: Gemm's alpha/beta scaling is not costed")
    bias = c.const(node.input[2]) if len(node.input) > 2 and node.input[2] else None
    if len(node.input) > 2 and node.input[2] and bias is None:
        name = c.emit(base, "linear", [c.act(a)], out_features=out, bias=False)
        c.count(name, w)
        return c.emit(f"{base}.add", "add", [name, c.act(node.input[2])])
    with_bias = bias is not None and bias.shape is not None and prod(bias.shape) == out
    name = c.emit(base, "linear", [c.act(a)], out_features=out, bias=with_bias)
    c.count(name, w, bias if with_bias else None)
    if bias is not None and not with_bias:
        name = c.emit(f"{base}.add", "add", [name, c.param(node.input[2], c.like(node))])
    return name


def _matmul(c: _Converter, node, base: str):
    _inputs(node, base, "A", "B")
    a, b = node.input[0], node.input[1]
    if c.is_act(a) and not c.is_act(b):
        w = c.weight(b, "weight")
        if len(w.shape) == 2:
            if c.full(a)[-1] != w.shape[0]:
                raise NetworkError(f"the weight {list(w.shape)} takes {w.shape[0]} features, the input has "
                                   f"{c.full(a)[-1]}", node=node.name or base, field="B", value=b)
            name = c.emit(base, "linear", [c.act(a)], out_features=w.shape[1], bias=False)
            c.count(name, w)
            c.linear_bias[node.output[0]] = name
            return name
    return c.emit(base, "matmul", [c.operand(a, c.like(node)), c.operand(b, c.like(node))])


def _batch_norm(c: _Converter, node, base: str):
    _inputs(node, base, "X", "scale", "B", "input_mean", "input_var")
    x = c.act(node.input[0])
    if c.batch_axis(node.input[0]) != 0:
        raise _Unsupported("the batch is not the first axis")
    consts = [c.weight(t, ("scale", "bias", "mean", "variance")[i]) for i, t in enumerate(node.input[1:5])]
    channels = c.full(node.input[0])[1]
    for field, k in zip(("scale", "B", "input_mean", "input_var"), consts):
        if prod(k.shape) != channels:
            raise NetworkError(f"has {prod(k.shape)} values for {channels} channels", node=node.name or base,
                               field=field, value=list(k.shape))
    eps = float(_attr(node, "epsilon", 1e-5))
    momentum = float(_attr(node, "momentum", 0.9))
    name = c.emit(base, "batch_norm", [x], eps=eps, momentum=1.0 - momentum)
    c.count(name, *consts)
    return [name] + [None] * (len(node.output) - 1)


def _instance_norm(c: _Converter, node, base: str):
    _inputs(node, base, "input", "scale", "B")
    x = c.act(node.input[0])
    if c.batch_axis(node.input[0]) != 0:
        raise _Unsupported("the batch is not the first axis")
    consts = [c.weight(t, "scale or bias") for t in node.input[1:3]]
    channels = c.ir_shape[x][0]
    name = c.emit(base, "group_norm", [x], num_groups=channels, eps=float(_attr(node, "epsilon", 1e-5)))
    c.count(name, *consts)
    return name


def _group_norm(c: _Converter, node, base: str):
    _inputs(node, base, "X", "scale", "bias")
    x = c.act(node.input[0])
    if c.batch_axis(node.input[0]) != 0:
        raise _Unsupported("the batch is not the first axis")
    consts = [c.weight(t, "scale or bias") for t in node.input[1:3]]
    groups = _attr(node, "num_groups", None)
    if not isinstance(groups, int) or groups < 1:
        raise NetworkError("must be a positive integer", node=node.name or base, field="num_groups", value=groups)
    name = c.emit(base, "group_norm", [x], num_groups=groups, eps=float(_attr(node, "epsilon", 1e-5)))
    c.count(name, *consts)
    return name


def _layer_norm(c: _Converter, node, base: str):
    _inputs(node, base, "X", "Scale")
    t = node.input[0]
    x = c.act(t)
    rank = len(c.full(t))
    axis = _attr(node, "axis", -1)
    axis = axis + rank if axis < 0 else axis
    if not 0 <= axis < rank:
        raise NetworkError(f"out of range for a {rank}-d input", node=node.name or base, field="axis", value=axis)
    k = c.batch_axis(t)
    if k is not None and k >= axis:
        raise _Unsupported("it normalises over the batch axis")
    scale = c.weight(node.input[1], "scale")
    bias = c.weight(node.input[2], "bias") if len(node.input) > 2 and node.input[2] else None
    name = c.emit(base, "layer_norm", [x], normalized_ndim=rank - axis, eps=float(_attr(node, "epsilon", 1e-5)),
                  bias=bias is not None)
    c.count(name, scale, bias)
    return [name] + [None] * (len(node.output) - 1)


def _unary(op: str):
    def handler(c: _Converter, node, base: str):
        return c.emit(base, op, [c.act(node.input[0])])
    return handler


def _leaky_relu(c: _Converter, node, base: str):
    return c.emit(base, "leaky_relu", [c.act(node.input[0])], negative_slope=float(_attr(node, "alpha", 0.01)))


def _gelu(c: _Converter, node, base: str):
    approx = _attr(node, "approximate", "none")
    return c.emit(base, "gelu", [c.act(node.input[0])], approximate=approx if approx in ("none", "tanh") else "none")


def _softmax(op: str):
    def handler(c: _Converter, node, base: str):
        t = node.input[0]
        axis = _attr(node, "axis", -1 if c.opset >= 13 else 1)
        return c.emit(base, op, [c.act(t)], dim=c.ir_dim(t, axis))
    return handler


def _clip(c: _Converter, node, base: str):
    if c.opset >= 11:
        lo = float(c.value(node.input[1], "min").reshape(-1)[0]) if len(node.input) > 1 and node.input[1] else None
        hi = float(c.value(node.input[2], "max").reshape(-1)[0]) if len(node.input) > 2 and node.input[2] else None
    else:
        lo, hi = _attr(node, "min", None), _attr(node, "max", None)
    if lo == 0.0 and hi == 6.0:
        return c.emit(base, "relu6", [c.act(node.input[0])])
    if lo == 0.0 and (hi is None or hi == float("inf")):
        return c.emit(base, "relu", [c.act(node.input[0])])
    raise _Unsupported(f"Clip to [{lo}, {hi}] (the IR has ReLU and ReLU6)")


def _dropout(c: _Converter, node, base: str):
    p = _attr(node, "ratio", None)
    if p is None and len(node.input) > 1 and node.input[1]:
        p = float(c.value(node.input[1], "ratio").reshape(-1)[0])
    name = c.emit(base, "dropout", [c.act(node.input[0])], p=float(0.5 if p is None else p))
    return [name] + [None] * (len(node.output) - 1)


def _alias(c: _Converter, node, base: str):
    return c.act(node.input[0])


def _binary(op: str):
    def handler(c: _Converter, node, base: str):
        a, b = node.input[0], node.input[1]
        if op == "add":
            fused = _bias_add(c, node, a, b)
            if fused is not None:
                return fused
        for first, second in ((a, b), (b, a)):  # a scalar operand: an attribute (a scalar first only for + and ×)
            if c.is_act(first) and not c.is_act(second) and (op in ("add", "mul") or first == a):
                k = c.const(second)
                if k is not None and k.value is not None and k.value.size == 1:
                    return c.emit(base, op, [c.act(first)], scalar=float(c.value(second, "operand").reshape(-1)[0]))
        return c.emit(base, op, [c.operand(a, c.like(node)), c.operand(b, c.like(node))])
    return handler


def _bias_add(c: _Converter, node, a: str, b: str):
    """MatMul then Add of a constant vector: PyTorch's Linear on a 3-d input. The bias joins the linear."""
    for t, other in ((a, b), (b, a)):
        linear = c.linear_bias.get(t)
        k = c.const(other)
        if linear is None or k is None or k.shape is None or len(c.consumers.get(t, [])) != 1:
            continue
        out = c.ir_shape[linear][-1]
        if prod(k.shape) == out and k.shape[-1] == out:
            c.replace(linear, bias=True)
            c.count(linear, k)
            del c.linear_bias[t]
            return linear
    return None


def _sum(c: _Converter, node, base: str):
    out = c.like(node)
    return c.emit(base, "add", [c.operand(t, out) for t in node.input if t])


def _concat(c: _Converter, node, base: str):
    out = c.like(node)
    axis = _attr(node, "axis", None)
    if axis is None:
        raise NetworkError("is required", node=node.name or base, field="axis")
    return c.emit(base, "concat", [c.operand(t, out) for t in node.input if t], dim=c.ir_dim(out, axis))


def _reshape_like(c: _Converter, node, base: str):
    """Reshape, Flatten, Squeeze, Unsqueeze: a view to the per-sample shape ONNX infers (the same when only the
    batch axis moved: no node)."""
    t, out = node.input[0], node.output[0]
    x = c.act(t)
    full = c.info(out).s1 or _view_shape(c, node, c.full(t))    # sizes ONNX could not fold are computed here
    c.computed[out] = (full, _view_axis(c.full(t), c.where(t), full))
    target = c.settle(node, out).per_sample()
    if target == c.ir_shape[x]:
        return x
    if node.op_type == "Flatten" and _attr(node, "axis", 1) == 1 and c.batch_axis(t) == 0:
        return c.emit(base, "flatten", [x], start_dim=1)
    return c.emit(base, "reshape", [x], shape=target)


def _view_axis(full_in: tuple, where: tuple, full_out: tuple) -> tuple:
    """Where the batch of a tensor (``where``: its batch axis, or the axis it is folded into) lands in a view of
    it, by counting elements: a batch axis stays the size-1 axis with as many elements before it; a folded batch
    comes out as a size-1 axis within the span of the axis it was folded into, or stays folded in the output axis
    that spans it."""
    k, m = where
    if k is not None:
        lo = hi = prod(full_in[:k])
    elif m is not None:
        lo, hi = prod(full_in[:m]), prod(full_in[:m + 1])
    else:
        return (0 if full_out and full_out[0] == 1 else None), None
    for j, d in enumerate(full_out):
        if d == 1 and lo <= prod(full_out[:j]) <= hi and prod(full_out[:j]) % lo == 0:
            return j, None
    for j in range(len(full_out)):
        if prod(full_out[:j]) <= lo < prod(full_out[:j + 1]):
            return None, j
    return None, None


def _view_shape(c: _Converter, node, full: tuple) -> tuple:
    """The ONNX output shape of a Reshape, Flatten, Squeeze or Unsqueeze of a tensor of shape ``full``."""
    op, rank = node.op_type, len(full)
    if op == "Reshape":
        target = c.ints_of(node.input[1], "shape")
        target = [full[i] if v == 0 and not _attr(node, "allowzero", 0) else v for i, v in enumerate(target)]
        known = prod(v for v in target if v != -1)
        if target.count(-1) > 1 or known < 1 or (-1 in target and prod(full) % known) or \
                (-1 not in target and known != prod(full)):
            raise NetworkError(f"cannot reshape {list(full)} to {target}", node=node.name or op, field="shape",
                               value=target)
        return tuple(prod(full) // known if v == -1 else v for v in target)
    if op == "Flatten":
        axis = _attr(node, "axis", 1)
        axis = axis + rank if axis < 0 else axis
        return (prod(full[:axis]), prod(full[axis:]))
    axes = c.ints_of(node.input[1], "axes") if len(node.input) > 1 and node.input[1] else \
        list(_attr(node, "axes", []))
    if op == "Squeeze":
        axes = {a + rank if a < 0 else a for a in axes} or {i for i, d in enumerate(full) if d == 1}
        return tuple(d for i, d in enumerate(full) if i not in axes)
    out_rank = rank + len(axes)
    axes = sorted(a + out_rank if a < 0 else a for a in axes)
    dims = iter(full)
    return tuple(1 if i in axes else next(dims) for i in range(out_rank))


def _transpose(c: _Converter, node, base: str):
    t, out = node.input[0], node.output[0]
    x = c.act(t)
    rank = len(c.full(t))
    perm = _attr(node, "perm", None)
    perm = list(range(rank))[::-1] if perm is None else list(perm)
    if sorted(perm) != list(range(rank)):
        raise NetworkError(f"must be a permutation of 0…{rank - 1}", node=node.name or base, field="perm", value=perm)
    full = c.full(t)
    k_in = c.batch_axis(t)
    m_in = c.where(t)[1]
    c.computed[out] = (tuple(full[p] for p in perm), (perm.index(k_in) if k_in is not None else None,
                                                      perm.index(m_in) if m_in is not None else None))
    k_out = c.settle(node, out).batch_axis()
    if k_in is not None:
        if k_out is None or perm[k_out] != k_in:
            raise _Unsupported("the batch axis does not stay whole")
        per = [perm[j] - (perm[j] > k_in) for j in range(rank) if j != k_out]
    else:
        per = perm
    if per == sorted(per):
        return x
    return c.emit(base, "permute", [x], dims=tuple([0] + [p + 1 for p in per]))


def _expand(c: _Converter, node, base: str):
    t, out = node.input[0], node.output[0]
    x = c.act(t)
    full, k = c.full(t), c.batch_axis(t)
    shape = c.info(out).s1 or tuple(int(d) for d in _np().broadcast_shapes(full, tuple(c.ints_of(node.input[1],
                                                                                                  "shape"))))
    c.computed[out] = (shape, (k + len(shape) - len(full) if k is not None else None, None))
    if c.settle(node, out).per_sample() == c.ir_shape[x]:
        return x
    raise _Unsupported("an expand that changes per-sample dims")


def _slice(c: _Converter, node, base: str):
    t = node.input[0]
    x = c.act(t)
    full = c.full(t)
    if c.opset >= 10:
        starts = c.ints_of(node.input[1], "starts")
        ends = c.ints_of(node.input[2], "ends")
        axes = c.ints_of(node.input[3], "axes") if len(node.input) > 3 and node.input[3] else list(range(len(starts)))
        steps = c.ints_of(node.input[4], "steps") if len(node.input) > 4 and node.input[4] else [1] * len(starts)
    else:
        starts, ends = list(_attr(node, "starts", [])), list(_attr(node, "ends", []))
        axes = list(_attr(node, "axes", range(len(starts))))
        steps = [1] * len(starts)
    if not len(starts) == len(ends) == len(axes) == len(steps):
        raise NetworkError("starts, ends, axes and steps differ in length", node=node.name or base, field="starts",
                           value=starts)
    for s, e, a, st in zip(starts, ends, axes, steps):
        a = a + len(full) if a < 0 else a
        size = full[a]
        lo, hi, step = slice(s, e, st).indices(size)
        if step < 1:
            raise _Unsupported("a slice with a negative step")
        if (lo, hi, step) == (0, size, 1):
            continue
        x = c.emit(base, "slice", [x], dim=c.ir_dim(t, a), start=lo, end=hi, step=step)
    return x


def _gather(c: _Converter, node, base: str):
    t = node.input[0]
    if not c.is_act(t):
        raise _Unsupported("a lookup into a constant table by input-dependent indices")
    idx = c.value(node.input[1], "indices")
    full = c.full(t)
    axis = _attr(node, "axis", 0)
    axis = axis + len(full) if axis < 0 else axis
    size = full[axis]
    if idx.ndim == 0:
        i = int(idx)
        k = c.batch_axis(t)                           # one axis fewer: the batch moves down if it came after
        m = c.where(t)[1]
        c.computed[node.output[0]] = (full[:axis] + full[axis + 1:], (k - (axis < k) if k is not None else None,
                                                                      m - (axis < m) if m is not None else None))
        return c.emit(base, "slice", [c.act(t)], dim=c.ir_dim(t, axis), start=i + size if i < 0 else i, select=True)
    flat = [int(i) + size if int(i) < 0 else int(i) for i in idx.reshape(-1).tolist()]
    if idx.ndim == 1 and flat and flat == list(range(flat[0], flat[0] + len(flat))):
        return c.emit(base, "slice", [c.act(t)], dim=c.ir_dim(t, axis), start=flat[0], end=flat[0] + len(flat))
    raise _Unsupported("a gather of non-contiguous indices")


def _split(c: _Converter, node, base: str):
    t = node.input[0]
    x = c.act(t)
    axis = _attr(node, "axis", 0)
    full = c.full(t)
    size = full[axis]
    outs = [o for o in node.output]
    if len(node.input) > 1 and node.input[1]:
        parts = c.ints_of(node.input[1], "split")
    elif _attr(node, "split", None) is not None:
        parts = list(_attr(node, "split"))
    else:
        n = len(outs)
        step = -(-size // n)
        parts = [min(step, size - i * step) for i in range(n)]
    if sum(parts) != size or len(parts) != len(outs):
        raise NetworkError(f"does not split {size} into {len(outs)} parts", node=node.name or base, field="split",
                           value=parts)
    dim, start, names = c.ir_dim(t, axis), 0, []
    for i, p in enumerate(parts):
        names.append(c.emit(f"{base}.{i}", "slice", [x], dim=dim, start=start, end=start + p))
        start += p
    return names


def _pad(c: _Converter, node, base: str):
    t = node.input[0]
    x = c.act(t)
    rank = len(c.full(t))
    if c.opset >= 11:
        pads = c.ints_of(node.input[1], "pads")
        axes = c.ints_of(node.input[3], "axes") if len(node.input) > 3 and node.input[3] else list(range(rank))
    else:
        pads, axes = list(_attr(node, "pads", [])), list(range(rank))
    axes = [a + rank if a < 0 else a for a in axes]
    if len(pads) != 2 * len(axes):
        raise NetworkError(f"expected {2 * len(axes)} values", node=node.name or base, field="pads", value=pads)
    mode = _attr(node, "mode", "constant")
    if mode != "constant":
        c.warn(f"{node.name or base}: Pad mode '{mode}' is costed as a copy")
    by_dim = {}
    k = c.batch_axis(t)
    for i, a in enumerate(axes):
        b, e = pads[i], pads[i + len(axes)]
        if a == k:
            if b or e:
                raise _Unsupported("it pads the batch axis")
            continue
        if b or e:
            by_dim[c.ir_dim(t, a)] = (b, e)
    if not by_dim:
        return x
    per_rank = len(c.ir_shape[x])
    first = min(by_dim)
    pad = []
    for d in range(per_rank, first - 1, -1):
        pad += list(by_dim.get(d, (0, 0)))
    return c.emit(base, "pad", [x], pad=tuple(pad))


def _pool(op: str):
    def handler(c: _Converter, node, base: str):
        x = _need_nchw(c, node.input[0])
        kernel = _attr(node, "kernel_shape", None)
        if kernel is None or len(kernel) != 2:
            raise (NetworkError("expects 2 kernel sizes", node=node.name or base, field="kernel_shape",
                                value=kernel) if kernel is None or len(kernel) < 1 else
                   _Unsupported(f"a {len(kernel)}-d pool (the IR has 2-d)"))
        kernel = _ints(node, "kernel_shape", 2, 1, 1)
        strides = _ints(node, "strides", 2, 1, 1)
        dilations = _ints(node, "dilations", 2, 1, 1)
        begins, ends = _auto_pad(node, c.full(node.input[0])[2:], kernel, strides, dilations)
        x, sym = _spatial_padding(c, node, base, x, begins, ends)
        extra = dict(dilation=dilations) if op == "max_pool2d" else \
            dict(count_include_pad=bool(_attr(node, "count_include_pad", 0)))
        if op == "avg_pool2d" and dilations != (1, 1):
            raise _Unsupported("a dilated average pool")
        name = c.emit(base, op, [x], kernel_size=kernel, stride=strides, padding=sym,
                      ceil_mode=bool(_attr(node, "ceil_mode", 0)), **extra)
        return [name] + [None] * (len(node.output) - 1)
    return handler


def _global_pool(op: str):
    def handler(c: _Converter, node, base: str):
        return c.emit(base, op, [_need_nchw(c, node.input[0])], output_size=(1, 1))
    return handler


def _reduce_mean(c: _Converter, node, base: str):
    t = node.input[0]
    if len(node.input) > 1 and node.input[1]:
        axes = c.ints_of(node.input[1], "axes")
    else:
        axes = list(_attr(node, "axes", []))
    if not axes:
        raise _Unsupported("a mean over every axis, the batch included")
    keep = bool(_attr(node, "keepdims", 1))
    return c.emit(base, "mean", [c.act(t)], dim=tuple(c.ir_dim(t, a) for a in axes), keepdim=keep)


def _resize(c: _Converter, node, base: str):
    x = _need_nchw(c, node.input[0])
    mode = _attr(node, "mode", "nearest")
    ir_mode = {"nearest": "nearest", "linear": "bilinear", "bilinear": "bilinear", "cubic": "bicubic"}.get(mode)
    if ir_mode is None:
        raise NetworkError("must be nearest, linear or cubic", node=node.name or base, field="mode", value=mode)
    full, k = c.full(node.input[0]), c.batch_axis(node.input[0])
    if c.info(node.output[0]).s1 is None:         # sizes or scales computed by ops inference does not fold
        ins = list(node.input) + [""] * 4
        if ins[3]:
            size = tuple(c.ints_of(ins[3], "sizes"))
        else:
            scales = ins[2] if c.opset >= 11 else ins[1]
            factors = c.value(scales, "scales").reshape(-1).tolist() if scales else list(_attr(node, "scales", []))
            if len(factors) != len(full):
                raise NetworkError(f"expected {len(full)} scales", node=node.name or base, field="scales",
                                   value=factors)
            size = tuple(int(d * f) for d, f in zip(full, factors))
        c.computed[node.output[0]] = (size, (k, None))
    out = c.settle(node, node.output[0]).per_sample()
    align = _attr(node, "coordinate_transformation_mode", "half_pixel") == "align_corners"
    return c.emit(base, "interpolate", [x], size=tuple(out[1:]), mode=ir_mode,
                  align_corners=align if ir_mode != "nearest" else None)


def _einsum(c: _Converter, node, base: str):
    out = c.like(node)
    return c.emit(base, "einsum", [c.operand(t, out) for t in node.input], equation=_attr(node, "equation", ""))


HANDLERS = {
    "Conv": _conv, "ConvTranspose": _conv_transpose, "Gemm": _gemm, "MatMul": _matmul,
    "BatchNormalization": _batch_norm, "InstanceNormalization": _instance_norm, "GroupNormalization": _group_norm,
    "LayerNormalization": _layer_norm,
    "Relu": _unary("relu"), "Sigmoid": _unary("sigmoid"), "Tanh": _unary("tanh"), "HardSigmoid": _unary("hardsigmoid"),
    "HardSwish": _unary("hardswish"), "Swish": _unary("silu"), "Gelu": _gelu, "Clip": _clip,
    "LeakyRelu": _leaky_relu,
    "Softmax": _softmax("softmax"), "LogSoftmax": _softmax("log_softmax"),
    "Dropout": _dropout, "Identity": _alias, "Cast": _alias, "CastLike": _alias,
    "Add": _binary("add"), "Sub": _binary("sub"), "Mul": _binary("mul"), "Div": _binary("div"), "Sum": _sum,
    "Concat": _concat, "Reshape": _reshape_like, "Flatten": _reshape_like, "Squeeze": _reshape_like,
    "Unsqueeze": _reshape_like, "Transpose": _transpose, "Expand": _expand, "Slice": _slice, "Gather": _gather,
    "Split": _split, "Pad": _pad,
    "MaxPool": _pool("max_pool2d"), "AveragePool": _pool("avg_pool2d"),
    "GlobalAveragePool": _global_pool("adaptive_avg_pool2d"), "GlobalMaxPool": _global_pool("adaptive_max_pool2d"),
    "ReduceMean": _reduce_mean, "Resize": _resize, "Upsample": _resize, "Einsum": _einsum,
}


# == constant folding =============================================================================================

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


# == entry points =================================================================================================

def import_onnx(source: Any, input_shape: Any = None, *, name: str | None = None) -> ImportResult:
    """Convert the ONNX model at ``source`` (a path, or the file's bytes) into a Network, with the warnings and the
    ops that became opaque nodes. ``input_shape`` (per sample, e.g. (3, 224, 224)) replaces the model's own.
    ``name`` names the network (a file name, "model.onnx", names it "model" and is what messages call it)."""
    data, default_name, label = _read(source)
    if name is not None and name.lower().endswith(".onnx"):     # an uploaded file's name: messages say it
        name, label = name[:-5] or default_name, name
    elif name is not None:
        label = name
    model = _parse(data, label)
    del data
    try:
        conv = _Converter(model, name or default_name, input_shape, label)
        network = conv.convert()
    except RecursionError:
        raise NetworkError("the graph is nested too deeply to read", node=label) from None
    return ImportResult(network, tuple(conv.warnings), tuple(conv.unsupported))


def load_onnx(source: Any, input_shape: Any = None) -> Network:
    """``import_onnx(source, input_shape).network``: what ``core.load_network`` calls for a path ending in
    ``.onnx``."""
    return import_onnx(source, input_shape).network


__all__ = ["MAX_ONNX_BYTES", "import_onnx", "load_onnx"]
