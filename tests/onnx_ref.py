"""Building small ONNX models by hand (onnx.helper) for the ONNX import tests, and reading what they import to."""

from __future__ import annotations

import numpy as np
from onnx import TensorProto, numpy_helper
from onnx import helper as h

import core
from core.onnx_import import import_onnx


def vi(name: str, shape, elem=TensorProto.FLOAT):
    return h.make_tensor_value_info(name, elem, shape)


def zeros(name: str, *shape):
    return numpy_helper.from_array(np.zeros(shape, np.float32), name)


def const(name: str, values, dtype=np.int64):
    return numpy_helper.from_array(np.array(values, dtype=dtype), name)


def onnx_bytes(nodes, inputs, outputs=None, inits=(), opset=17, value_info=()) -> bytes:
    """A model of ``nodes``; the last node's first output is the graph output unless ``outputs`` says."""
    outputs = outputs or [vi(nodes[-1].output[0], None)]
    graph = h.make_graph(nodes, "g", inputs, outputs, initializer=list(inits), value_info=list(value_info))
    return h.make_model(graph, opset_imports=[h.make_opsetid("", opset)]).SerializeToString()


def run(data: bytes, **kw):
    result = import_onnx(data, **kw)
    return core.analyze(result.network), result


def layers(report, op: str | None = None):
    return [l for l in report.layers if op is None or l.op == op]


def one(report, op: str):
    found = layers(report, op)
    assert len(found) == 1, [(l.name, l.op) for l in report.layers]
    return found[0]


X = vi("x", [1, 3, 8, 8])
