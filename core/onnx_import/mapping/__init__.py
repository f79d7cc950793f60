"""The op mappings, one module per op family: ``HANDLERS`` maps an ONNX op type to the function that maps one
node of it to IR nodes (given the converter's context, the node and its base name; it returns the IR name of
each output, or raises ``_Unsupported`` for an ``opaque`` node)."""

from __future__ import annotations

from .conv import _conv, _conv_transpose, _einsum, _gemm, _matmul
from .elementwise import _alias, _binary, _clip, _dropout, _gelu, _leaky_relu, _softmax, _sum, _unary
from .layout import _concat, _expand, _gather, _pad, _reshape_like, _slice, _split, _transpose
from .norm import _batch_norm, _group_norm, _instance_norm, _layer_norm
from .pool import _global_pool, _pool, _reduce_mean, _resize

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
