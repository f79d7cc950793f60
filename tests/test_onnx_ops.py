"""ONNX ops in (core/onnx_import/mapping/): a hand-built graph (onnx.helper) for each mapped op, with the
arithmetic beside every expected number; fused patterns, folded shape subgraphs, opaque ops, and weights wherever
they stand. Imports neither torch nor streamlit (the fast subset)."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto
from onnx import helper as h

import core
from onnx_ref import X, const, layers, one, onnx_bytes, run, vi, zeros

# == convolutions =================================================================================================

def test_conv_with_bias_stride_and_padding():
    data = onnx_bytes([h.make_node("Conv", ["x", "W", "B"], ["y"], name="conv1", strides=[2, 2], pads=[1, 1, 1, 1])],
                      [X], inits=[zeros("W", 4, 3, 3, 3), zeros("B", 4)])
    r, res = run(data)
    conv = one(r, "conv2d")
    assert conv.name == "conv1" and conv.output_shape == (1, 4, 4, 4)     # (8 + 2·1 − 3) // 2 + 1 = 4
    assert conv.params == 4 * 3 * 3 * 3 + 4 == 112                          # weight 4·3·3·3 + bias 4
    assert conv.macs == r.totals["macs"] == 4 * 4 * 4 * 3 * 3 * 3 == 1728   # C_out·H·W · C_in·k·k
    assert res.warnings == () and res.unsupported == ()


def test_grouped_dilated_conv():
    data = onnx_bytes([h.make_node("Conv", ["x", "W"], ["y"], group=2, dilations=[2, 2])],
                      [vi("x", [1, 4, 10, 10])], inits=[zeros("W", 8, 2, 3, 3)])
    conv = one(run(data)[0], "conv2d")
    assert conv.output_shape == (1, 8, 6, 6)                   # 10 − 2·(3 − 1) = 6
    assert conv.params == 8 * 2 * 3 * 3 == 144                 # C_out · C_in/groups · k·k, no bias
    assert conv.macs == 8 * 6 * 6 * 2 * 3 * 3 == 5184


@pytest.mark.parametrize("attrs, pad", [
    ({"pads": [0, 0, 1, 1], "strides": [2, 2]}, (0, 1, 0, 1)),          # bottom and right only
    ({"auto_pad": "SAME_UPPER", "strides": [2, 2]}, (0, 1, 0, 1)),      # total (4 − 1)·2 + 3 − 8 = 1, at the end
    ({"auto_pad": "SAME_LOWER", "strides": [2, 2]}, (1, 0, 1, 0)),      # the same 1, at the start
])
def test_asymmetric_padding_becomes_a_pad_node(attrs, pad):
    data = onnx_bytes([h.make_node("Conv", ["x", "W"], ["y"], **attrs)], [X], inits=[zeros("W", 4, 3, 3, 3)])
    r, _ = run(data)
    p = one(r, "pad")
    assert r.compiled.by_name[p.name].attrs["pad"] == pad               # F.pad order: (left, right, top, bottom)
    assert p.output_shape == (1, 3, 9, 9)                               # 8 + 1
    conv = one(r, "conv2d")
    assert conv.output_shape == (1, 4, 4, 4)                            # (9 − 3) // 2 + 1 = 4
    assert conv.macs == 4 * 4 * 4 * 3 * 3 * 3 == 1728


def test_symmetric_same_padding_stays_in_the_conv():
    data = onnx_bytes([h.make_node("Conv", ["x", "W"], ["y"], auto_pad="SAME_UPPER")], [X],
                      inits=[zeros("W", 4, 3, 3, 3)])
    r, _ = run(data)
    assert [l.op for l in r.layers] == ["conv2d"]                      # total 3 − 1 = 2: one on each side
    assert r.compiled.by_name[r.layers[0].name].attrs["padding"] == (1, 1)
    assert r.layers[0].output_shape == (1, 4, 8, 8)


def test_conv_transpose():
    data = onnx_bytes([h.make_node("ConvTranspose", ["x", "W"], ["y"], strides=[2, 2], pads=[1, 1, 1, 1],
                                   output_padding=[1, 1])], [vi("x", [1, 4, 5, 5])], inits=[zeros("W", 4, 2, 3, 3)])
    conv = one(run(data)[0], "conv_transpose2d")
    assert conv.output_shape == (1, 2, 10, 10)                 # (5 − 1)·2 − 2·1 + 3 + 1 = 10
    assert conv.params == 4 * 2 * 3 * 3 == 72                  # C_in · C_out/groups · k·k
    assert conv.macs == 4 * 5 * 5 * 2 * 3 * 3 == 1800          # every input pixel scatters to C_out·k·k outputs


def test_conv_transpose_output_shape_crops_asymmetric_padding():
    # output_shape 9: total padding (5 − 1)·2 + 3 − 9 = 2 → SAME_UPPER puts 1 at each end: symmetric, no crop;
    # output_shape 10: total 1 → begin 0, end 1 → the transposed conv gives 11 and one row and column are cut
    for size, crop in ((9, False), (10, True)):
        data = onnx_bytes([h.make_node("ConvTranspose", ["x", "W"], ["y"], strides=[2, 2], output_shape=[size, size],
                                       auto_pad="SAME_UPPER")], [vi("x", [1, 4, 5, 5])], inits=[zeros("W", 4, 2, 3, 3)])
        r, _ = run(data)
        assert r.layers[-1].output_shape == (1, 2, size, size)
        assert bool(layers(r, "slice")) == crop
        assert r.totals["macs"] == 4 * 5 * 5 * 2 * 3 * 3


# == linear layers ================================================================================================

def test_gemm_is_a_linear_layer():
    data = onnx_bytes([h.make_node("Gemm", ["x", "W", "B"], ["y"], name="fc", transB=1)], [vi("x", [1, 16])],
                      inits=[zeros("W", 10, 16), zeros("B", 10)])
    fc = one(run(data)[0], "linear")
    assert fc.name == "fc" and fc.output_shape == (1, 10)
    assert fc.params == 16 * 10 + 10 == 170 and fc.macs == 16 * 10 == 160


def test_matmul_and_bias_add_are_one_linear_layer():
    # PyTorch exports nn.Linear on a 3-d input as MatMul by the transposed weight, then Add of the bias
    data = onnx_bytes([h.make_node("MatMul", ["x", "W"], ["m"]), h.make_node("Add", ["m", "B"], ["y"])],
                      [vi("x", [1, 5, 16])], inits=[zeros("W", 16, 10), zeros("B", 10)])
    r, _ = run(data)
    assert [l.op for l in r.layers] == ["linear"]
    fc = r.layers[0]
    assert fc.output_shape == (1, 5, 10) and fc.params == 16 * 10 + 10 == 170
    assert fc.macs == 5 * 16 * 10 == 800                       # rows · in · out


def test_matmul_of_two_activations_and_a_transpose():
    data = onnx_bytes([h.make_node("Transpose", ["x"], ["t"], perm=[0, 2, 1]),
                       h.make_node("MatMul", ["x", "t"], ["y"])], [vi("x", [1, 4, 6])])
    r, _ = run(data)
    assert [l.op for l in r.layers] == ["permute", "matmul"]
    mm = one(r, "matmul")
    assert mm.output_shape == (1, 4, 4) and mm.macs == 4 * 6 * 4 == 96     # (4×6)·(6×4)


def test_the_batch_axis_is_followed_through_a_transpose():
    # nn.MultiheadAttention runs on [L, N, E]: the batch moves to axis 1 and back; per sample it is (L, E)
    data = onnx_bytes([h.make_node("Transpose", ["x"], ["t"], perm=[1, 0, 2]), h.make_node("MatMul", ["t", "W"], ["m"]),
                       h.make_node("Transpose", ["m"], ["y"], perm=[1, 0, 2])],
                      [vi("x", [1, 7, 16])], inits=[zeros("W", 16, 8)])
    r, res = run(data)
    assert [l.op for l in r.layers] == ["linear"]             # both transposes only move the batch: no node
    assert r.layers[0].output_shape == (1, 7, 8) and r.layers[0].macs == 7 * 16 * 8 == 896
    assert res.unsupported == ()


def test_a_batch_folded_into_the_heads_is_one_sample_at_batch_one():
    # [N, L, E] → view [N·H, L, d] (batch folded into the heads) → scores [N·H, L, L] → back to [N, L, E]
    L, E, H = 5, 8, 2
    data = onnx_bytes(
        [h.make_node("Reshape", ["x", "s1"], ["a"]), h.make_node("Transpose", ["a"], ["b"], perm=[0, 2, 1, 3]),
         h.make_node("Reshape", ["b", "s2"], ["q"]), h.make_node("Transpose", ["q"], ["kt"], perm=[0, 2, 1]),
         h.make_node("MatMul", ["q", "kt"], ["scores"]), h.make_node("Softmax", ["scores"], ["p"], axis=-1),
         h.make_node("MatMul", ["p", "q"], ["o"]), h.make_node("Reshape", ["o", "s3"], ["o4"]),
         h.make_node("Transpose", ["o4"], ["o5"], perm=[0, 2, 1, 3]), h.make_node("Reshape", ["o5", "s4"], ["y"])],
        [vi("x", ["N", L, E])],
        inits=[const("s1", [0, L, H, E // H]), const("s2", [-1, L, E // H]), const("s3", [-1, H, L, E // H]),
               const("s4", [-1, L, E])])
    r, res = run(data)
    assert res.unsupported == ()
    scores, context = layers(r, "matmul")
    assert scores.output_shape == (1, H, L, L)
    assert scores.macs == H * L * (E // H) * L == 200          # per head: (5×4)·(4×5)
    assert context.macs == H * L * L * (E // H) == 200
    assert r.layers[-1].output_shape == (1, L, E)
    assert core.analyze(r, batch_size=3).totals["macs"] == 3 * 400


# == normalisation, pooling, activations ==========================================================================

def test_batch_norm():
    data = onnx_bytes([h.make_node("BatchNormalization", ["x", "g", "b", "m", "v"], ["y"], momentum=0.9)],
                      [vi("x", [1, 4, 5, 5])], inits=[zeros(n, 4) for n in "gbmv"])
    r, _ = run(data)
    bn = one(r, "batch_norm")
    assert bn.params == 2 * 4 and bn.buffers == 2 * 4          # γ, β trainable; running mean and var buffers
    assert bn.flops == 2 * 4 * 5 * 5 == 200                    # folded scale and shift: 2 per element
    assert r.compiled.by_name[bn.name].attrs["momentum"] == pytest.approx(0.1)    # ONNX 0.9 keeps, torch 0.1 adds


def test_layer_norm_and_group_norm():
    data = onnx_bytes([h.make_node("LayerNormalization", ["x", "s", "b"], ["y"], axis=-1)], [vi("x", [1, 7, 16])],
                      inits=[zeros("s", 16), zeros("b", 16)])
    ln = one(run(data)[0], "layer_norm")
    assert ln.params == 16 + 16 and ln.flops == 8 * 7 * 16     # 8 per element (statistics 4, normalise 2, affine 2)
    data = onnx_bytes([h.make_node("InstanceNormalization", ["x", "s", "b"], ["y"])], [vi("x", [1, 4, 5, 5])],
                      inits=[zeros("s", 4), zeros("b", 4)])
    gn = one(run(data)[0], "group_norm")                        # instance norm: one group per channel
    assert gn.params == 2 * 4


def test_pools():
    x = vi("x", [1, 4, 8, 8])
    cases = [
        # MaxPool 3×3 stride 2 pad 1: (8 + 2 − 3) // 2 + 1 = 4; 9 − 1 comparisons per output
        (h.make_node("MaxPool", ["x"], ["y"], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1]), "max_pool2d",
         (1, 4, 4, 4), 4 * 4 * 4 * (9 - 1)),
        # AveragePool 2×2 stride 2: 4 × 4; 3 adds + 1 divide per output
        (h.make_node("AveragePool", ["x"], ["y"], kernel_shape=[2, 2], strides=[2, 2]), "avg_pool2d",
         (1, 4, 4, 4), 4 * 4 * 4 * 4),
        # ceil_mode on 8: (8 − 3) / 2 = 2.5 → 3, + 1 = 4 (floor would give 3)
        (h.make_node("MaxPool", ["x"], ["y"], kernel_shape=[3, 3], strides=[2, 2], ceil_mode=1), "max_pool2d",
         (1, 4, 4, 4), 4 * 4 * 4 * 8),
        (h.make_node("GlobalAveragePool", ["x"], ["y"]), "adaptive_avg_pool2d", (1, 4, 1, 1), 4 * 8 * 8),
        (h.make_node("GlobalMaxPool", ["x"], ["y"]), "adaptive_max_pool2d", (1, 4, 1, 1), 4 * 8 * 8 - 4),
        # ReduceMean over H and W (axes as an input since opset 18): one add per input element
        (h.make_node("ReduceMean", ["x", "axes"], ["y"], keepdims=0), "mean", (1, 4), 4 * 8 * 8),
    ]
    for node, op, shape, flops in cases:
        r, _ = run(onnx_bytes([node], [x], inits=[const("axes", [2, 3])], opset=18))
        pool = one(r, op)
        assert (pool.output_shape, pool.flops) == (shape, flops), node.op_type


def test_activations_map_to_their_ops():
    ops = [("Relu", {}, "relu", 1), ("Sigmoid", {}, "sigmoid", 4), ("Tanh", {}, "tanh", 5),
           ("HardSigmoid", {"alpha": 1 / 6}, "hardsigmoid", 4), ("HardSwish", {}, "hardswish", 5),
           ("Softmax", {"axis": 1}, "softmax", 5), ("Gelu", {}, "gelu", 8),
           ("LogSoftmax", {"axis": -1}, "log_softmax", 5), ("LeakyRelu", {"alpha": 0.2}, "leaky_relu", 2)]
    nodes, prev = [], "x"
    for i, (op, attrs, _, _) in enumerate(ops):
        nodes.append(h.make_node(op, [prev], [f"a{i}"], **attrs))
        prev = f"a{i}"
    nodes.append(h.make_node("Clip", [prev, "lo", "hi"], ["y"]))
    bounds = [const("lo", 0.0, np.float32), const("hi", 6.0, np.float32)]
    r, res = run(onnx_bytes(nodes, [vi("x", [1, 6])], inits=bounds, opset=20))
    assert [l.op for l in r.layers] == [o for _, _, o, _ in ops] + ["relu6"]
    # FLOPs per element: 1 + 4 + 5 + 4 + 5 + 5 + 8 + 5 + leaky 2 + relu6 2 = 41, over 6 elements
    assert r.totals["flops"] == 6 * (sum(f for *_, f in ops) + 2) == 6 * 41
    leaky = next(n for n in res.network.nodes if n.op == "leaky_relu")
    assert dict(leaky.attrs)["negative_slope"] == pytest.approx(0.2, rel=1e-7)   # alpha (a float32) is the slope
    assert res.unsupported == ()


def test_decomposed_silu_hardswish_and_gelu_are_one_op_each():
    silu = [h.make_node("Sigmoid", ["x"], ["s"]), h.make_node("Mul", ["x", "s"], ["y"])]
    hswish = [h.make_node("HardSigmoid", ["x"], ["s"], alpha=1 / 6, beta=0.5), h.make_node("Mul", ["s", "x"], ["y"])]
    # GELU before opset 20: x · 0.5 · (1 + erf(x / √2))
    gelu = [h.make_node("Div", ["x", "sqrt2"], ["d"]), h.make_node("Erf", ["d"], ["e"]),
            h.make_node("Add", ["e", "one"], ["p"]), h.make_node("Mul", ["x", "p"], ["m"]),
            h.make_node("Mul", ["m", "half"], ["y"])]
    scalars = [const("sqrt2", 2 ** 0.5, np.float32), const("one", 1.0, np.float32), const("half", 0.5, np.float32)]
    for nodes, op in ((silu, "silu"), (hswish, "hardswish"), (gelu, "gelu")):
        r, res = run(onnx_bytes(nodes, [vi("x", [1, 10])], inits=scalars, opset=13))
        assert [l.op for l in r.layers] == [op] and res.unsupported == ()


def test_an_op_without_a_rule_is_opaque_and_said():
    data = onnx_bytes([h.make_node("Conv", ["x", "W"], ["c"]), h.make_node("Softplus", ["c"], ["y"], name="soft")],
                      [X], inits=[zeros("W", 4, 3, 3, 3)])
    r, res = run(data)
    op = one(r, "opaque")
    assert op.output_shape == (1, 4, 6, 6) and op.flops == 0    # ONNX's shape; its FLOPs are not counted
    assert res.unsupported == ("Softplus",)
    assert any("soft" in w and "Softplus" in w and "NOT counted" in w for w in res.warnings)
    assert r.totals["macs"] == 4 * 6 * 6 * 3 * 3 * 3             # the conv is still counted


# == elementwise, shapes, folding =================================================================================

def test_elementwise_scalars_tensors_and_weights():
    nodes = [h.make_node("Add", ["x", "one"], ["a"]),                 # a scalar: an attribute, no parameter
             h.make_node("Mul", ["a", "x"], ["b"]),                   # two activations
             h.make_node("Sub", ["b", "shift"], ["c"]),               # a learned [C, 1, 1] tensor: a parameter
             h.make_node("Div", ["c", "two"], ["y"])]
    r, _ = run(onnx_bytes(nodes, [X], inits=[const("one", 1.0, np.float32), zeros("shift", 3, 1, 1),
                                             const("two", 2.0, np.float32)]))
    assert [l.op for l in r.layers] == ["add", "mul", "parameter", "sub", "div"]
    assert r.totals["params"] == 3                                     # the shift's 3 elements
    assert one(r, "parameter").output_shape == (1, 3, 1, 1)
    assert r.totals["flops"] == 4 * 3 * 8 * 8                          # one FLOP per element per op


def test_shape_subgraphs_are_folded():
    # x.view(x.size(0), -1) as PyTorch traces it: Shape → Gather → Unsqueeze → Concat → Reshape
    nodes = [h.make_node("Shape", ["x"], ["s"]), h.make_node("Gather", ["s", "zero"], ["n"], axis=0),
             h.make_node("Unsqueeze", ["n", "ax0"], ["n1"]), h.make_node("Concat", ["n1", "minus1"], ["shape"], axis=0),
             h.make_node("Reshape", ["x", "shape"], ["y"])]
    r, res = run(onnx_bytes(nodes, [X], inits=[const("zero", 0), const("ax0", [0]), const("minus1", [-1])]))
    assert [l.op for l in r.layers] == ["reshape"] and r.layers[0].output_shape == (1, 3 * 8 * 8)
    assert res.unsupported == ()


def test_views_concat_resize_pad_slice_split_gather():
    nodes = [
        h.make_node("Resize", ["x", "", "scales"], ["up"], mode="nearest"),           # 8 → 16
        h.make_node("Pad", ["up", "pads"], ["pad"]),                                   # H 16 + 1 + 1, W 16 + 2 + 2
        h.make_node("Slice", ["pad", "st", "en", "axs"], ["sl"]),                      # channels 1:3 → 2
        h.make_node("Split", ["sl", "halves"], ["s0", "s1"], axis=1),                  # 1 + 1 channels
        h.make_node("Concat", ["s1", "s0", "sl"], ["cat"], axis=1),                    # 1 + 1 + 2 = 4 channels
        h.make_node("Gather", ["cat", "idx"], ["g"], axis=2),                          # row 0, axis dropped
        h.make_node("Unsqueeze", ["g", "ax"], ["u"]),                                  # [N, 4, 1, 20]
        h.make_node("Squeeze", ["u", "ax"], ["q"]),                                    # [N, 4, 20]
        h.make_node("Flatten", ["q"], ["y"], axis=1),                                  # [N, 80]
    ]
    inits = [const("scales", [1, 1, 2, 2], np.float32), const("pads", [0, 0, 1, 2, 0, 0, 1, 2]),
             const("st", [1]), const("en", [3]), const("axs", [1]), const("halves", [1, 1]), const("idx", 0),
             const("ax", [2])]
    r, res = run(onnx_bytes(nodes, [X], inits=inits, opset=18))
    shapes = {l.op: l.output_shape for l in r.layers}
    assert shapes["interpolate"] == (1, 3, 16, 16)
    assert shapes["pad"] == (1, 3, 18, 20)
    assert shapes["concat"] == (1, 4, 18, 20)
    assert shapes["flatten"] == (1, 4 * 20)
    assert r.compiled.by_name[one(r, "pad").name].attrs["pad"] == (2, 2, 1, 1)     # W (2, 2), then H (1, 1)
    assert res.unsupported == ()


def test_the_other_mapped_ops():
    x4 = vi("x", [1, 4, 5, 5])
    cases = [
        # GroupNormalization (opset 21: scale and bias per channel): 2 groups of 2 channels; γ, β: 2·4 parameters;
        # 8 FLOPs per element (statistics 4, normalise 2, affine 2) · 4·5·5
        ([h.make_node("GroupNormalization", ["x", "s", "b"], ["y"], num_groups=2)], x4,
         [zeros("s", 4), zeros("b", 4)], 21, ["group_norm"], 8, 8 * 4 * 5 * 5),
        # Swish (opset 24) is SiLU: 5 FLOPs per element (sigmoid 4 + multiply)
        ([h.make_node("Swish", ["x"], ["y"])], x4, [], 24, ["silu"], 0, 5 * 100),
        # Sum of three: 2 adds per element
        ([h.make_node("Sum", ["x", "x", "x"], ["y"])], x4, [], 17, ["add"], 0, 2 * 100),
        # Cast moves nothing worth counting: only the ReLU (1 per element)
        ([h.make_node("Cast", ["x"], ["c"], to=TensorProto.FLOAT16), h.make_node("Relu", ["c"], ["y"])], x4, [], 17,
         ["relu"], 0, 100),
        # Expand to the shape it has: nothing; a graph of only that is one identity node
        ([h.make_node("Expand", ["x", "s"], ["y"])], x4, [const("s", [1, 4, 5, 5])], 17, ["identity"], 0, 0),
        # Einsum with the batch first in every operand: (5×5)·(5×5)ᵀ per channel, 4·5·5·5 = 500 MACs
        ([h.make_node("Einsum", ["x", "x"], ["y"], equation="bcij,bckj->bcik")], x4, [], 12, ["einsum"], 0,
         2 * 500),
        # Upsample (opset 9) reads its scales from a float tensor: a setting, not a parameter
        ([h.make_node("Upsample", ["x", "sc"], ["y"], mode="nearest")], x4, [const("sc", [1, 1, 2, 2], np.float32)],
         9, ["interpolate"], 0, 0),
        # Resize to a size, bilinear with aligned corners: 9 FLOPs per output (three lerps) · 4·7·9
        ([h.make_node("Resize", ["x", "", "", "sz"], ["y"], mode="linear",
                      coordinate_transformation_mode="align_corners")], x4, [const("sz", [1, 4, 7, 9])], 13,
         ["interpolate"], 0, 9 * 4 * 7 * 9),
        # PRelu has no rule: opaque, its slope (4 per channel, as torch's PReLU(4)) still counted
        ([h.make_node("PRelu", ["x", "slope"], ["y"])], x4, [zeros("slope", 4, 1, 1)], 17,
         ["parameter", "opaque"], 4, 0),
    ]
    for nodes, x, inits, opset, ops, params, flops in cases:
        r, _ = run(onnx_bytes(nodes, [x], inits=inits, opset=opset))
        assert [l.op for l in r.layers] == ops, nodes[-1].op_type
        assert (r.totals["params"], r.totals["flops"]) == (params, flops), nodes[-1].op_type


def test_identity_and_dropout():
    nodes = [h.make_node("Identity", ["x"], ["i"]), h.make_node("Dropout", ["i", "p"], ["y"])]
    r, _ = run(onnx_bytes(nodes, [X], inits=[const("p", 0.25, np.float32)]))
    assert [l.op for l in r.layers] == ["dropout"]
    assert r.compiled.by_name[r.layers[0].name].attrs["p"] == 0.25


# == weights ======================================================================================================

def test_weights_given_as_graph_inputs_and_identity_copies():
    # torch.onnx.export(..., export_params=False): the weights are graph inputs; equal tensors are stored once and
    # copied with Identity, each copy a parameter of its own (PyTorch had two)
    nodes = [h.make_node("Identity", ["W"], ["W2"]), h.make_node("Conv", ["x", "W"], ["a"], pads=[1, 1, 1, 1]),
             h.make_node("Conv", ["a", "W2"], ["y"], pads=[1, 1, 1, 1])]
    data = onnx_bytes(nodes, [vi("x", [1, 3, 8, 8]), vi("W", [3, 3, 3, 3])])
    r, res = run(data)
    assert r.input_shape == (3, 8, 8) and r.totals["params"] == 2 * 3 * 3 * 3 * 3 == 162
    assert res.warnings == ()


def test_one_weight_used_twice_is_counted_twice_with_a_warning():
    nodes = [h.make_node("Conv", ["x", "W"], ["a"], pads=[1, 1, 1, 1], name="c1"),
             h.make_node("Conv", ["a", "W"], ["y"], pads=[1, 1, 1, 1], name="c2")]
    r, res = run(onnx_bytes(nodes, [X], inits=[zeros("W", 3, 3, 3, 3)]))
    assert r.totals["params"] == 2 * 81                        # the IR counts a layer's weights with the layer
    assert any("c2" in w and "'W'" in w and "c1" in w for w in res.warnings)


def test_a_layer_scale_is_a_parameter_node():
    nodes = [h.make_node("Mul", ["gamma", "x"], ["y"])]
    r, _ = run(onnx_bytes(nodes, [X], inits=[zeros("gamma", 3, 1, 1)]))
    p = one(r, "parameter")
    assert p.name == "gamma" and p.params == 3 and r.totals["params"] == 3
