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

from typing import Any

from ..bridge.fx_import import ImportResult
from ..errors import NetworkError
from ..ir import Network
from .convert import _Converter
from .read import MAX_ONNX_BYTES, _parse, _read


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
