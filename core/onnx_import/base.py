"""What every step of the ONNX import shares: the limits, the input slots that hold weights or settings, the kind
of value an input-independent tensor is (``_Const``), ``_Unsupported`` (raised where a node becomes ``opaque``),
lazy imports of onnx and numpy, and the readers of a node attribute and of an error's first line."""

from __future__ import annotations

from dataclasses import dataclass
from math import prod
from typing import Any

from ..errors import NetworkError

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


def _np():
    import numpy

    return numpy


def _first_line(e: BaseException) -> str:
    text = str(e).strip().splitlines()
    return (text[0] if text else type(e).__name__)[:300]


def _clean(t: str) -> str:
    return t.strip("/").replace("/", ".").replace("::", "_") or "constant"


def _attr(node, name: str, default=None):
    for a in node.attribute:
        if a.name == name:
            from onnx import helper

            v = helper.get_attribute_value(a)
            return v.decode() if isinstance(v, bytes) else v
    return default


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
