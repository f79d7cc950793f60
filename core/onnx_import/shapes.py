"""The shapes of an ONNX graph, per sample: which graph input is the data input and its per-sample shape, the
skeleton graph (no weights) handed to ONNX's shape inference, and the shapes inferred at batch 1 and at batch 2.
``_Tensor`` holds one activation's two shapes and finds where its batch is: the axis that is 1 at batch 1 and 2
at batch 2 is the batch itself, dropped from the per-sample shape; one that doubles from n holds the batch folded
in (``[N·heads, L, d]``) and keeps its per-sample size."""

from __future__ import annotations

import re
from dataclasses import dataclass
from math import prod

from ..errors import NetworkError
from ..registry import MAX_DIM
from ..shapes import parse_shape
from .base import MAX_KEPT_ELEMS, MAX_VALUE_ELEMS, PROBE_BATCH, _first_line
from .inference import _INFERENCE, _inference_message
from .structure import _feeds_only_weight_slots


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


class _Shapes:
    """The converter's setup: the data input and its per-sample shape, and ONNX's shapes of every tensor."""

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
