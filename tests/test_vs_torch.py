"""Every op kind in ``core.REGISTRY`` against PyTorch itself.

Each case is an IR network and the equivalent torch module, written independently. At batch 2 on a real tensor the
test checks every node's output shape, the parameter count (sum of ``p.numel()``) and BatchNorm's buffers. For the
ops FlopCounterMode measures (conv2d, conv_transpose2d, linear, matmul) forward FLOPs must equal 2 × the engine's
MACs and backward FLOPs the engine's backward (minus the bias-gradient adds torch does not count), both for a
first layer (no gradient w.r.t. the input) and after a trainable layer (gradient w.r.t. the input too).
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Callable

import pytest
import torch
import torch.nn.functional as F
from torch import nn

import core
from core import Network, Node
from core.graph import compile_network
from core.registry import WORK_CLASSES
from torch_ref import BATCH, Fn, Lambda, Seq, flops_of, fwd_bwd_flops, mac_layer_flops, n_params, split_grouped

N = Node.make


@dataclass
class Case:
    id: str
    inputs: dict                       # input name -> per-sample shape
    nodes: list                        # IR nodes; every node's output is compared with torch
    torch: Callable[[], nn.Module]     # forward(*inputs) -> {node name: tensor} for every node
    flops: bool = False                # also compare FlopCounterMode forward and backward totals

    def network(self) -> Network:
        return Network.make(self.id, self.inputs, self.nodes)


def one(_id, _shape, _op, _module, _flops=False, /, **attrs) -> Case:
    """A one-node case: node ``y`` = op(x) against ``module()`` on x."""
    return Case(_id, {"x": _shape}, [N("y", _op, "x", **attrs)], lambda: Seq(("y", _module())), _flops)


def fn(_id, _inputs, _nodes, _f, _flops=False, /, **mods) -> Case:
    """A multi-node / multi-input case: ``f(mods, *inputs)`` returns ``{node: tensor}``."""
    return Case(_id, _inputs, _nodes, lambda: Fn(_f, **{k: m() for k, m in mods.items()}), _flops)


_UNARY_TORCH = {
    "relu": nn.ReLU, "relu6": nn.ReLU6, "gelu": nn.GELU, "silu": nn.SiLU, "hardswish": nn.Hardswish,
    "hardsigmoid": nn.Hardsigmoid, "sigmoid": nn.Sigmoid, "tanh": nn.Tanh, "identity": nn.Identity,
}

CASES: list[Case] = [
    # -- conv2d ------------------------------------------------------------------------------------------------
    one("conv_basic", (3, 8, 8), "conv2d", lambda: nn.Conv2d(3, 4, 3), True, out_channels=4, kernel_size=3),
    one("conv_stride2_pad1", (3, 9, 9), "conv2d", lambda: nn.Conv2d(3, 4, 3, stride=2, padding=1), True,
        out_channels=4, kernel_size=3, stride=2, padding=1),
    one("conv_stride_pair", (3, 9, 8), "conv2d", lambda: nn.Conv2d(3, 5, (2, 3), stride=(2, 1)), True,
        out_channels=5, kernel_size=(2, 3), stride=(2, 1)),
    one("conv_pad_pair_rect_kernel", (2, 7, 9), "conv2d", lambda: nn.Conv2d(2, 3, (3, 5), padding=(1, 2)), True,
        out_channels=3, kernel_size=(3, 5), padding=(1, 2)),
    one("conv_same_even_kernel_dilated", (3, 7, 6), "conv2d",
        lambda: nn.Conv2d(3, 4, 4, padding="same", dilation=2), True,
        out_channels=4, kernel_size=4, padding="same", dilation=2),
    one("conv_same", (3, 6, 6), "conv2d", lambda: nn.Conv2d(3, 4, 3, padding="same"), True,
        out_channels=4, kernel_size=3, padding="same"),
    one("conv_valid", (3, 6, 7), "conv2d", lambda: nn.Conv2d(3, 4, 3, padding="valid"), True,
        out_channels=4, kernel_size=3, padding="valid"),
    one("conv_dilation2", (2, 11, 10), "conv2d", lambda: nn.Conv2d(2, 3, 3, dilation=2, padding=1), True,
        out_channels=3, kernel_size=3, dilation=2, padding=1),
    one("conv_dilation_pair", (2, 11, 10), "conv2d", lambda: nn.Conv2d(2, 3, 3, dilation=(2, 3)), True,
        out_channels=3, kernel_size=3, dilation=(2, 3)),
    one("conv_groups2", (4, 6, 6), "conv2d", lambda: nn.Conv2d(4, 6, 3, groups=2, padding=1), True,
        out_channels=6, kernel_size=3, groups=2, padding=1),
    one("conv_groups3_stride2", (6, 9, 9), "conv2d", lambda: nn.Conv2d(6, 9, 3, groups=3, stride=2), True,
        out_channels=9, kernel_size=3, groups=3, stride=2),
    one("conv_fixed_weight", (3, 9, 9), "conv2d", lambda: _FixedFilter(3), True,     # timm's BlurPool2d
        out_channels=3, kernel_size=3, groups=3, stride=2, bias=False, fixed_weight=True),
    one("conv_depthwise", (4, 7, 7), "conv2d", lambda: nn.Conv2d(4, 4, 3, groups=4, padding=1, bias=False), True,
        out_channels=4, kernel_size=3, groups=4, padding=1, bias=False),
    one("conv_depthwise_multiplier2", (3, 6, 6), "conv2d", lambda: nn.Conv2d(3, 6, 3, groups=3), True,
        out_channels=6, kernel_size=3, groups=3),
    one("conv_no_bias", (3, 8, 8), "conv2d", lambda: nn.Conv2d(3, 4, 3, bias=False), True,
        out_channels=4, kernel_size=3, bias=False),
    one("conv_1x1", (5, 4, 4), "conv2d", lambda: nn.Conv2d(5, 7, 1), True, out_channels=7, kernel_size=1),
    # -- conv_transpose2d --------------------------------------------------------------------------------------
    one("convT_stride2_outpad", (4, 5, 5), "conv_transpose2d",
        lambda: nn.ConvTranspose2d(4, 3, 3, stride=2, padding=1, output_padding=1), True,
        out_channels=3, kernel_size=3, stride=2, padding=1, output_padding=1),
    one("convT_basic", (3, 4, 6), "conv_transpose2d", lambda: nn.ConvTranspose2d(3, 5, (2, 3)), True,
        out_channels=5, kernel_size=(2, 3)),
    one("convT_groups2_dilated_outpad", (4, 5, 4), "conv_transpose2d",
        lambda: nn.ConvTranspose2d(4, 6, 3, groups=2, dilation=2, output_padding=1), True,
        out_channels=6, kernel_size=3, groups=2, dilation=2, output_padding=1),
    one("convT_no_bias_stride_pair", (2, 4, 4), "conv_transpose2d",
        lambda: nn.ConvTranspose2d(2, 3, 4, stride=(2, 3), padding=(1, 0), bias=False), True,
        out_channels=3, kernel_size=4, stride=(2, 3), padding=(1, 0), bias=False),
    # -- linear ------------------------------------------------------------------------------------------------
    one("linear_2d", (16,), "linear", lambda: nn.Linear(16, 7), True, out_features=7),
    one("linear_3d", (5, 16), "linear", lambda: nn.Linear(16, 7), True, out_features=7),
    one("linear_4d", (3, 5, 16), "linear", lambda: nn.Linear(16, 7), True, out_features=7),
    one("linear_no_bias", (4, 6), "linear", lambda: nn.Linear(6, 9, bias=False), True, out_features=9, bias=False),
    # -- matmul ------------------------------------------------------------------------------------------------
    fn("matmul_batched", {"a": (3, 4, 5), "b": (3, 5, 6)}, [N("y", "matmul", ("a", "b"))],
       lambda m, a, b: {"y": a @ b}, True),
    fn("matmul_broadcast_batch_dims", {"a": (2, 1, 4, 5), "b": (3, 5, 6)}, [N("y", "matmul", ("a", "b"))],
       lambda m, a, b: {"y": torch.matmul(a, b)}, True),
    fn("matmul_2d", {"a": (4, 5), "b": (5, 6)}, [N("y", "matmul", ("a", "b"))], lambda m, a, b: {"y": a @ b}, True),
    fn("matmul_with_parameter", {"x": (4, 5)},
       [N("w", "parameter", shape=(5, 6)), N("y", "matmul", ("x", "w"))],
       lambda m, x: {"w": m["p"].w.expand(x.shape[0], 5, 6), "y": x @ m["p"].w}, True,
       p=lambda: _ParamHolder(w=(5, 6))),
    fn("matmul_with_frozen_parameter", {"x": (4, 5)},
       [N("w", "parameter", shape=(5, 3), trainable=False), N("y", "matmul", ("x", "w"))],
       lambda m, x: {"w": m["p"].w.expand(x.shape[0], 5, 3), "y": x @ m["p"].w}, True,
       p=lambda: _ParamHolder(w=(5, 3), trainable=False)),
    # -- gradient tracking through parameter-free layers and views ---------------------------------------------
    # a pool carries no gradient from the raw input, so the conv after it computes only its weight gradient
    fn("conv_after_pool", {"x": (3, 8, 8)},
       [N("pool", "max_pool2d", "x", kernel_size=2), N("conv", "conv2d", "pool", out_channels=4, kernel_size=3)],
       lambda m, x: _chain(x, pool=m["pool"], conv=m["conv"]), True,
       pool=lambda: nn.MaxPool2d(2), conv=lambda: nn.Conv2d(3, 4, 3)),
    # conv → relu → flatten → linear: the gradient reaches the linear's input through an activation and a view
    fn("conv_relu_flatten_linear", {"x": (2, 5, 5)},
       [N("conv", "conv2d", "x", out_channels=3, kernel_size=3, groups=1), N("act", "relu", "conv"),
        N("flat", "flatten", "act"), N("fc", "linear", "flat", out_features=4)],
       lambda m, x: _chain(x, conv=m["conv"], act=F.relu, flat=lambda t: t.flatten(1), fc=m["fc"]), True,
       conv=lambda: nn.Conv2d(2, 3, 3), fc=lambda: nn.Linear(27, 4)),
    # -- sdpa --------------------------------------------------------------------------------------------------
    fn("sdpa", {"q": (2, 5, 4), "k": (2, 7, 4), "v": (2, 7, 3)}, [N("y", "sdpa", ("q", "k", "v"))],
       lambda m, q, k, v: {"y": F.scaled_dot_product_attention(q, k, v)}),
    fn("sdpa_causal_3d", {"q": (6, 8), "k": (6, 8), "v": (6, 5)}, [N("y", "sdpa", ("q", "k", "v"), is_causal=True)],
       lambda m, q, k, v: {"y": F.scaled_dot_product_attention(q, k, v, is_causal=True)}),
    fn("sdpa_broadcast_heads", {"q": (3, 4, 8), "k": (1, 6, 8), "v": (1, 6, 8)}, [N("y", "sdpa", ("q", "k", "v"))],
       lambda m, q, k, v: {"y": F.scaled_dot_product_attention(q, k.expand(-1, 3, -1, -1), v.expand(-1, 3, -1, -1))}),
    # -- pooling -----------------------------------------------------------------------------------------------
    one("maxpool_k2", (3, 8, 8), "max_pool2d", lambda: nn.MaxPool2d(2), kernel_size=2),
    one("maxpool_k3_s2_p1", (3, 9, 9), "max_pool2d", lambda: nn.MaxPool2d(3, 2, 1), kernel_size=3, stride=2, padding=1),
    one("maxpool_ceil", (3, 8, 8), "max_pool2d", lambda: nn.MaxPool2d(3, 2, ceil_mode=True),
        kernel_size=3, stride=2, ceil_mode=True),
    # ceil_mode where the last window would start in the right padding and is dropped: (5+2−2)/2 → 3, not 4
    one("maxpool_ceil_drop_last", (2, 5, 5), "max_pool2d", lambda: nn.MaxPool2d(2, 2, 1, ceil_mode=True),
        kernel_size=2, stride=2, padding=1, ceil_mode=True),
    one("maxpool_dilated", (2, 9, 10), "max_pool2d", lambda: nn.MaxPool2d(3, 1, 1, dilation=2),
        kernel_size=3, stride=1, padding=1, dilation=2),
    one("maxpool_rect_stride_pair", (2, 9, 10), "max_pool2d", lambda: nn.MaxPool2d((3, 2), (2, 1), ceil_mode=True),
        kernel_size=(3, 2), stride=(2, 1), ceil_mode=True),
    one("avgpool_k3_s2_p1_ceil_nopad", (3, 7, 7), "avg_pool2d",
        lambda: nn.AvgPool2d(3, 2, 1, ceil_mode=True, count_include_pad=False),
        kernel_size=3, stride=2, padding=1, ceil_mode=True, count_include_pad=False),
    one("avgpool_ceil_drop_last", (2, 5, 6), "avg_pool2d", lambda: nn.AvgPool2d(2, 2, 1, ceil_mode=True),
        kernel_size=2, stride=2, padding=1, ceil_mode=True),
    one("avgpool_divisor_override", (2, 6, 6), "avg_pool2d", lambda: nn.AvgPool2d(2, divisor_override=3),
        kernel_size=2, divisor_override=3),
    one("adaptive_avg_7_from_10", (3, 10, 10), "adaptive_avg_pool2d", lambda: nn.AdaptiveAvgPool2d(7), output_size=7),
    one("adaptive_avg_none_3", (2, 5, 9), "adaptive_avg_pool2d", lambda: nn.AdaptiveAvgPool2d((None, 3)),
        output_size=(None, 3)),
    one("adaptive_avg_upsample", (2, 3, 4), "adaptive_avg_pool2d", lambda: nn.AdaptiveAvgPool2d((5, 6)),
        output_size=(5, 6)),
    one("adaptive_max_7_from_10", (3, 10, 10), "adaptive_max_pool2d", lambda: nn.AdaptiveMaxPool2d(7), output_size=7),
    one("adaptive_max_3x4_from_5x9", (2, 5, 9), "adaptive_max_pool2d", lambda: nn.AdaptiveMaxPool2d((3, 4)),
        output_size=(3, 4)),
    # -- normalisation -----------------------------------------------------------------------------------------
    one("batchnorm2d", (4, 5, 5), "batch_norm", lambda: nn.BatchNorm2d(4)),
    one("batchnorm2d_no_affine", (4, 5, 5), "batch_norm", lambda: nn.BatchNorm2d(4, affine=False), affine=False),
    one("batchnorm2d_no_stats", (4, 5, 5), "batch_norm", lambda: nn.BatchNorm2d(4, track_running_stats=False),
        track_running_stats=False),
    one("batchnorm1d_features", (6,), "batch_norm", lambda: nn.BatchNorm1d(6)),
    one("batchnorm1d_sequence", (6, 7), "batch_norm", lambda: nn.BatchNorm1d(6)),
    one("layernorm_last", (5, 8), "layer_norm", lambda: nn.LayerNorm(8)),
    one("layernorm_2dims", (3, 4, 5), "layer_norm", lambda: nn.LayerNorm((4, 5)), normalized_ndim=2),
    one("layernorm_no_affine", (5, 8), "layer_norm", lambda: nn.LayerNorm(8, elementwise_affine=False),
        elementwise_affine=False),
    one("layernorm_no_bias", (5, 8), "layer_norm", lambda: nn.LayerNorm(8, bias=False), bias=False),
    one("groupnorm", (4, 5, 5), "group_norm", lambda: nn.GroupNorm(2, 4), num_groups=2),
    one("groupnorm_no_affine_1d", (6, 7), "group_norm", lambda: nn.GroupNorm(3, 6, affine=False),
        num_groups=3, affine=False),
    # -- activations, dropout, identity ------------------------------------------------------------------------
    *[one(f"unary_{op}", (3, 4, 4), op, module) for op, module in _UNARY_TORCH.items()],
    one("unary_leaky_relu", (3, 4, 4), "leaky_relu", lambda: nn.LeakyReLU(0.2), negative_slope=0.2),
    one("dropout", (3, 4, 4), "dropout", lambda: nn.Dropout(0.3), p=0.3),
    one("softmax_dim1", (4, 3, 3), "softmax", lambda: nn.Softmax(dim=1), dim=1),
    one("softmax_last", (5, 6), "softmax", lambda: nn.Softmax(dim=-1)),
    one("log_softmax_dim1", (10,), "log_softmax", lambda: nn.LogSoftmax(dim=1), dim=1),
    # -- shape ops ---------------------------------------------------------------------------------------------
    one("flatten_1", (3, 4, 5), "flatten", lambda: nn.Flatten(1)),
    one("flatten_2_3", (3, 4, 5), "flatten", lambda: nn.Flatten(2, 3), start_dim=2, end_dim=3),
    one("flatten_1_neg2", (3, 4, 5), "flatten", lambda: nn.Flatten(1, -2), start_dim=1, end_dim=-2),
    one("reshape_minus1", (3, 4, 5), "reshape", lambda: Lambda(lambda x: x.reshape(x.shape[0], -1)), shape=(-1,)),
    one("reshape_view", (3, 4, 5), "reshape", lambda: Lambda(lambda x: x.view(x.shape[0], 6, -1, 2)),
        shape=(6, -1, 2)),
    one("permute_nhwc", (3, 4, 5), "permute", lambda: Lambda(lambda x: x.permute(0, 2, 3, 1)), dims=(0, 2, 3, 1)),
    one("permute_negative", (3, 4, 5), "permute", lambda: Lambda(lambda x: x.permute(0, -1, 1, -2)),
        dims=(0, -1, 1, -2)),
    one("transpose_1_3", (3, 4, 5), "transpose", lambda: Lambda(lambda x: x.transpose(1, 3)), dim0=1, dim1=3),
    one("transpose_negative", (3, 4, 5), "transpose", lambda: Lambda(lambda x: x.transpose(-1, -2)),
        dim0=-1, dim1=-2),
    one("channel_shuffle", (6, 3, 3), "channel_shuffle", lambda: nn.ChannelShuffle(2), groups=2),
    fn("contiguous_after_transpose", {"x": (3, 4, 5)},
       [N("t", "transpose", ("x",), dim0=1, dim1=3), N("y", "contiguous", ("t",))],
       lambda m, x: {"t": x.transpose(1, 3), "y": x.transpose(1, 3).contiguous()}),
    fn("concat_dim1", {"a": (2, 4, 4), "b": (3, 4, 4), "c": (1, 4, 4)}, [N("y", "concat", ("a", "b", "c"))],
       lambda m, a, b, c: {"y": torch.cat([a, b, c], dim=1)}),
    fn("concat_last", {"a": (2, 4, 3), "b": (2, 4, 5)}, [N("y", "concat", ("a", "b"), dim=-1)],
       lambda m, a, b: {"y": torch.cat([a, b], dim=-1)}),
    # -- elementwise with broadcasting -------------------------------------------------------------------------
    fn("sub_tensors", {"a": (4, 5), "b": (4, 5)}, [N("y", "sub", ("a", "b"))], lambda m, a, b: {"y": a - b}),
    fn("div_broadcast", {"a": (4, 5, 5), "b": (4, 1, 1)}, [N("y", "div", ("a", "b"))], lambda m, a, b: {"y": a / b}),
    one("gelu_tanh", (3, 4), "gelu", lambda: (lambda: nn.GELU(approximate="tanh"))(), approximate="tanh"),
    fn("add_broadcast_c11", {"a": (4, 1, 1), "b": (4, 5, 5)}, [N("y", "add", ("a", "b"))],
       lambda m, a, b: {"y": a + b}),
    fn("add_three", {"a": (3, 4, 4), "b": (3, 4, 4), "c": (3, 1, 4)}, [N("y", "add", ("a", "b", "c"))],
       lambda m, a, b, c: {"y": a + b + c}),
    one("add_scalar", (3, 4, 4), "add", lambda: Lambda(lambda x: x + 1.5), scalar=1.5),
    fn("mul_c11_chw", {"x": (4, 5, 5), "s": (4, 1, 1)}, [N("y", "mul", ("s", "x"))], lambda m, x, s: {"y": s * x}),
    fn("mul_1hw", {"x": (4, 5, 5), "s": (1, 5, 5)}, [N("y", "mul", ("x", "s"))], lambda m, x, s: {"y": x * s}),
    fn("squeeze_excite", {"x": (4, 6, 6)},
       [N("pool", "adaptive_avg_pool2d", "x", output_size=1), N("fc", "conv2d", "pool", out_channels=4, kernel_size=1),
        N("gate", "hardsigmoid", "fc"), N("y", "mul", ("x", "gate"))],
       lambda m, x: _chain(x, pool=nn.functional.adaptive_avg_pool2d(x, 1), fc=m["fc"], gate=F.hardsigmoid,
                           y=lambda g: x * g),
       fc=lambda: nn.Conv2d(4, 4, 1)),
    # -- interpolate -------------------------------------------------------------------------------------------
    one("interp_nearest_size", (3, 5, 4), "interpolate", lambda: Lambda(lambda x: F.interpolate(x, size=(12, 10))),
        size=(12, 10)),
    one("interp_nearest_scale2", (3, 5, 4), "interpolate",
        lambda: Lambda(lambda x: F.interpolate(x, scale_factor=2)), scale_factor=2),
    one("interp_bilinear_scale_1_5", (3, 7, 5), "interpolate",
        lambda: Lambda(lambda x: F.interpolate(x, scale_factor=1.5, mode="bilinear")),
        scale_factor=1.5, mode="bilinear"),
    one("interp_bilinear_size_align", (3, 5, 4), "interpolate",
        lambda: Lambda(lambda x: F.interpolate(x, size=9, mode="bilinear", align_corners=True)),
        size=9, mode="bilinear", align_corners=True),
    one("interp_bicubic_scale_pair", (3, 5, 4), "interpolate",
        lambda: Lambda(lambda x: F.interpolate(x, scale_factor=(2, 0.5), mode="bicubic")),
        scale_factor=(2, 0.5), mode="bicubic"),
    # -- parameter: a class token and a position embedding (ViT-style) ------------------------------------------
    fn("parameter_cls_pos", {"x": (5, 8)},
       [N("cls", "parameter", shape=(1, 8)), N("cat", "concat", ("cls", "x"), dim=1),
        N("pos", "parameter", shape=(6, 8)), N("y", "add", ("cat", "pos"))],
       lambda m, x: _vit_tokens(m["p"], x), p=lambda: _ParamHolder(cls=(1, 8), pos=(6, 8))),
    fn("parameter_frozen", {"x": (3, 4)},
       [N("w", "parameter", shape=(3, 4), trainable=False), N("y", "mul", ("x", "w"))],
       lambda m, x: {"w": m["p"].w.expand(x.shape[0], 3, 4), "y": x * m["p"].w},
       p=lambda: _ParamHolder(w=(3, 4), trainable=False)),
    # -- ops the PyTorch importer emits --------------------------------------------------------------------------
    one("mean_hw_keepdim", (3, 5, 4), "mean", lambda: Lambda(lambda x: x.mean((2, 3), keepdim=True)), dim=(2, 3),
        keepdim=True),
    one("mean_tokens", (7, 6), "mean", lambda: Lambda(lambda x: x.mean(1)), dim=1),
    one("sum_radix", (2, 3, 4, 4), "sum", lambda: Lambda(lambda x: x.sum(1)), dim=1),       # ResNeSt's split attention
    one("sum_hw_keepdim", (3, 5, 4), "sum", lambda: Lambda(lambda x: torch.sum(x, (2, 3), keepdim=True)), dim=(2, 3),
        keepdim=True),
    one("expand_hw", (3, 1, 1), "expand", lambda: Lambda(lambda x: x.expand(-1, -1, 4, 5)), shape=(3, 4, 5)),
    one("norm_hw_keepdim", (3, 5, 4), "norm", lambda: Lambda(lambda x: x.norm(p=2, dim=(2, 3), keepdim=True)),
        dim=(2, 3), keepdim=True),                                       # ConvNeXt-V2's global response norm
    one("norm_p1_channels", (3, 5, 4), "norm", lambda: Lambda(lambda x: torch.linalg.vector_norm(x, 1, dim=1)),
        dim=1, p=1.0),
    one("slice_step", (8, 5), "slice", lambda: Lambda(lambda x: x[:, 1:7:2]), dim=1, start=1, end=7, step=2),
    one("select_class_token", (5, 8), "slice", lambda: Lambda(lambda x: x[:, 0]), dim=1, start=0, select=True),
    one("pad_hw", (3, 5, 4), "pad", lambda: Lambda(lambda x: F.pad(x, (0, 0, 1, 2, 0, 3))), pad=(0, 0, 1, 2, 0, 3)),
    one("roll", (5, 6, 3), "roll", lambda: Lambda(lambda x: torch.roll(x, (-2, -2), (1, 2))), shifts=(-2, -2),
        dims=(1, 2)),
    fn("einsum_attention", {"q": (2, 5, 4), "k": (2, 6, 4)}, [N("y", "einsum", ("q", "k"), equation="bhpd,bhqd->bhpq")],
       lambda m, q, k: {"y": torch.einsum("bhpd,bhqd->bhpq", q, k)}),
    one("opaque_cumsum", (4, 6), "opaque", lambda: Lambda(lambda x: torch.cumsum(x, 2)), shape=(4, 6),
        target="torch.cumsum"),
    fn("multihead_attention", {"x": (5, 8)}, [N("y", "multihead_attention", ("x", "x", "x"), embed_dim=8, num_heads=2)],
       lambda m, x: {"y": m["mha"](x, x, x, need_weights=False)[0]},
       mha=lambda: nn.MultiheadAttention(8, 2, batch_first=True)),
    fn("window_attention_shifted", {"x": (6, 6, 8)},
       # the relative-position table of a 3×3 window: (2·3 − 1)² = 25 rows × 2 heads = 50 extra parameters;
       # its index buffer pairs every position with every other: (3·3)² = 81
       [N("y", "window_attention", "x", window_size=3, num_heads=2, shift_size=1, extra_params=50, extra_buffers=81)],
       lambda m, x: {"y": m["swa"](x)}, swa=lambda: _swin_attention(8, 3, 1, 2)),
]


def _swin_attention(dim, window, shift, heads):
    from torchvision.models.swin_transformer import ShiftedWindowAttention

    return ShiftedWindowAttention(dim, [window, window], [shift, shift], heads)


class _FixedFilter(nn.Module):
    """A depthwise 3×3 stride-2 filter held in a buffer, as timm's BlurPool2d: no parameters, no weight gradient."""

    def __init__(self, channels: int):
        super().__init__()
        self.register_buffer("filt", torch.ones(channels, 1, 3, 3) / 9)

    def forward(self, x):
        return F.conv2d(x, self.filt, stride=2, groups=self.filt.shape[0])


class _ParamHolder(nn.Module):
    """Named nn.Parameters of the given shapes (per sample; torch adds no batch dim to a parameter)."""

    def __init__(self, trainable: bool = True, **shapes):
        super().__init__()
        for k, s in shapes.items():
            self.register_parameter(k, nn.Parameter(torch.randn(*s), requires_grad=trainable))


def _vit_tokens(p: _ParamHolder, x: torch.Tensor) -> dict:
    n = x.shape[0]
    cls = p.cls.expand(n, -1, -1)
    cat = torch.cat([cls, x], dim=1)
    return {"cls": cls, "cat": cat, "pos": p.pos.expand(n, -1, -1), "y": cat + p.pos}


def _chain(x, **steps) -> dict:
    """Apply ``steps`` in order (a tensor is a value already computed, anything else a function of the previous)."""
    out = {}
    for name, step in steps.items():
        x = step if isinstance(step, torch.Tensor) else step(x)
        out[name] = x
    return out


BY_ID = {c.id: c for c in CASES}
FLOP_CASES = [c for c in CASES if c.flops]


def _inputs(case: Case) -> list[torch.Tensor]:
    return [torch.randn(BATCH, *s) for s in case.inputs.values()]


def _bn_buffers(module: nn.Module) -> int:
    # BatchNorm's running mean and var; num_batches_tracked (one integer counter) is bookkeeping, not a statistic
    return sum(b.numel() for n, b in module.named_buffers() if not n.endswith("num_batches_tracked"))


def test_case_ids_unique():
    assert len(BY_ID) == len(CASES)


def test_every_registered_op_has_a_torch_case():
    covered = {n.op for c in CASES for n in c.nodes}
    assert set(core.REGISTRY) - covered == set(), "ops with no torch comparison"


def test_every_torch_case_node_has_a_class_of_work():
    """Each rule's ``work`` (a class or a function of the node) gives one of WORK_CLASSES for every node here."""
    for case in CASES:
        for n in compile_network(case.network()).nodes:
            assert n.rule.work_class(n.ctx) in WORK_CLASSES, (case.id, n.name)


def test_flop_cases_cover_the_mac_ops():
    assert {n.op for c in FLOP_CASES for n in c.nodes} >= {"conv2d", "conv_transpose2d", "linear", "matmul"}


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_shapes_params_buffers(case: Case):
    torch.manual_seed(0)
    net = case.network()
    report = core.analyze(net, batch_size=BATCH)
    module = case.torch()
    with torch.no_grad():
        out = module(*_inputs(case))
    layers = {l.name: l for l in report.layers}
    assert set(out) == set(layers), "the torch side must produce every IR node"
    for name, t in out.items():
        assert layers[name].output_shape == tuple(t.shape), name
    trainable = sum(p.numel() for p in module.parameters() if p.requires_grad)
    assert report.totals["params"] == n_params(module)
    assert sum(l.params for l in report.layers) == n_params(module)
    assert report.totals["trainable_params"] == trainable
    assert report.totals["buffers"] == sum(l.buffers for l in report.layers) == _bn_buffers(module)


def _with_prefix(case: Case) -> tuple[Network, Callable[[], nn.Module]]:
    """The case preceded, on every network input, by a trainable layer (a 1×1 conv for [N, C, H, W], else a square
    Linear on the last dim), so the op under test receives inputs that carry a gradient, in the IR and in torch."""
    pre_nodes, pre_mods = [], {}
    for name, shape in case.inputs.items():
        if len(shape) == 3:
            pre_nodes.append(N(f"pre_{name}", "conv2d", name, out_channels=shape[0], kernel_size=1))
            pre_mods[name] = (lambda c=shape[0]: nn.Conv2d(c, c, 1))
        else:
            pre_nodes.append(N(f"pre_{name}", "linear", name, out_features=shape[-1]))
            pre_mods[name] = (lambda f=shape[-1]: nn.Linear(f, f))
    renamed = [Node(n.name, n.op, n.attrs, tuple(f"pre_{s}" if s in case.inputs else s for s in n.inputs))
               for n in case.nodes]
    net = Network.make(case.id + "_after_trainable", case.inputs, pre_nodes + renamed)

    class Prefixed(nn.Module):
        def __init__(self):
            super().__init__()
            self.pre = nn.ModuleDict({k: m() for k, m in pre_mods.items()})
            self.inner = case.torch()

        def forward(self, *xs):
            return self.inner(*[self.pre[k](x) for k, x in zip(case.inputs, xs)])

    return net, Prefixed


@pytest.mark.parametrize("input_grad", [False, True], ids=["first_layer", "after_trainable"])
@pytest.mark.parametrize("case", FLOP_CASES, ids=[c.id for c in FLOP_CASES])
def test_flops_vs_flopcounter(case: Case, input_grad: bool):
    if input_grad:
        net, make = _with_prefix(case)
    else:
        net, make = case.network(), case.torch
    report = core.analyze(net, batch_size=BATCH)
    last = case.nodes[-1].name
    torch.manual_seed(0)
    xs = _inputs(case)
    grouped = make()
    # FlopCounterMode's grouped-conv *forward* is right; its backward over-counts the weight gradient by `groups`
    # (it uses the full C_in), so the backward reference runs each group as its own ungrouped conv.
    split = split_grouped(copy.deepcopy(grouped))
    assert n_params(split) == n_params(grouped)
    fwd_grouped, _ = flops_of(lambda: grouped(*xs))
    fwd_ref, bwd_ref = fwd_bwd_flops(split, xs, lambda out: out[last])
    assert fwd_grouped == fwd_ref

    fwd, bwd = mac_layer_flops(net, report)
    assert fwd == fwd_ref
    assert bwd == bwd_ref
    assert report.totals["macs"] * 2 == fwd_ref
    # per layer: MACs ×2 = forward FLOPs for the MAC ops; the first layer computes no input gradient
    for layer in report.layers:
        if layer.op in ("conv2d", "conv_transpose2d", "linear", "matmul"):
            assert layer.flops == 2 * layer.macs
    first = report.layers[0] if not input_grad else None
    if first is not None and first.op != "parameter":
        assert first.backward_input_flops == 0


def test_grouped_conv_flopcounter_quirk_is_real():
    """Documents why grouped convs are compared against per-group convs: torch's counter is `groups`× too high on
    the weight gradient. Conv2d(4→6, 3×3, groups=2) on [2, 4, 8, 8] → [2, 6, 6, 6]: 432 outputs × 2·9 MACs each
    = 7,776 MACs; weight gradient = 2 × 7,776 = 15,552 FLOPs, but FlopCounterMode books 31,104."""
    conv = nn.Conv2d(4, 6, 3, groups=2, bias=False)
    x = torch.randn(2, 4, 8, 8)
    fwd, bwd = fwd_bwd_flops(conv, [x], lambda y: y)
    assert fwd == 2 * 7776
    assert bwd == 2 * 15552          # the over-count (input needs no gradient: all of it is weight gradient)
    _, bwd_split = fwd_bwd_flops(split_grouped(nn.Sequential(conv)), [x], lambda y: y)
    assert bwd_split == 15552


SDPA_CASES = [c for c in CASES if c.nodes[-1].op == "sdpa"]


@pytest.mark.parametrize("case", SDPA_CASES, ids=[c.id for c in SDPA_CASES])
def test_sdpa_macs_vs_explicit_math(case: Case):
    """MACs of softmax(Q·Kᵀ·scale)·V counted by FlopCounterMode on the explicit math (only the two matmuls count;
    the fused kernel is not relied on). Causal masking does not skip work in the engine's count nor here."""
    report = core.analyze(case.network(), batch_size=BATCH)
    q, k, v = _inputs(case)
    scale = q.shape[-1] ** -0.5
    fl, out = flops_of(lambda: torch.softmax(q @ k.transpose(-2, -1) * scale, dim=-1) @ v)
    assert report.layers[-1].macs * 2 == fl
    assert report.layers[-1].output_shape == tuple(out.shape)
