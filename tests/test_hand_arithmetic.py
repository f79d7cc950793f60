"""Every number here is worked out by hand (arithmetic in the comment beside it), never copied from the engine.

Conventions checked (core/registry.py, core/ops/): shapes per sample, batch N first in reports; 1 MAC = 2 FLOPs for
conv/linear (bias add absorbed); elementwise, norm and pool ops add FLOPs but no MACs.

Also holds the golden per-layer tables (tests/golden/*.txt): each golden row is checked against a hand-computed row
below, and the engine's rendering is compared with the golden file exactly. ``pytest --update-golden`` rewrites them.
"""

from __future__ import annotations

from pathlib import Path

import pytest

import core
from core import Network, Node, analyze

GOLDEN = Path(__file__).resolve().parent / "golden"


# ---------------------------------------------------------------------------------------------------------------
# MNIST CNN (PyTorch examples): x 1×28×28 → conv1 3×3 (32) → relu → conv2 3×3 (64) → relu → maxpool 2 → dropout →
# flatten → fc1 (128) → relu → dropout → fc2 (10) → log_softmax
# ---------------------------------------------------------------------------------------------------------------

# (name, op, output shape at batch 1, params, MACs, FLOPs fwd, FLOPs bwd)
MNIST_ROWS = [
    ("conv1", "conv2d", "1×32×26×26",
     320,            # 32·1·3·3 weights + 32 biases = 288 + 32
     194_688,        # 32·26·26 = 21,632 outputs × 1·3·3 = 9 MACs each
     389_376,        # 2 × 194,688
     411_008),       # no dx (the image needs no gradient): dW 389,376 + db 21,632 (one add per output)
    ("relu", "relu", "1×32×26×26", 0, 0,
     21_632,         # 32·26·26 elements × 1 (max(x, 0))
     21_632),        # 1 per element
    ("conv2", "conv2d", "1×64×24×24",
     18_496,         # 64·32·3·3 + 64 = 18,432 + 64
     10_616_832,     # 64·24·24 = 36,864 outputs × 32·3·3 = 288 → 36,864 × 288
     21_233_664,     # 2 × 10,616,832
     42_504_192),    # dx 21,233,664 + dW 21,233,664 + db 36,864
    ("relu_1", "relu", "1×64×24×24", 0, 0,
     36_864,         # 64·24·24 × 1
     36_864),
    ("max_pool2d", "max_pool2d", "1×64×12×12", 0, 0,
     27_648,         # 64·12·12 = 9,216 outputs × (2·2 − 1) = 3 comparisons
     9_216),         # 1 per output (route to the argmax)
    ("dropout1", "dropout", "1×64×12×12", 0, 0,
     0,              # identity at inference
     9_216),         # 1 per element (mask multiply)
    ("flatten", "flatten", "1×9216", 0, 0, 0, 0),     # 64·12·12 = 9,216; a view
    ("fc1", "linear", "1×128",
     1_179_776,      # 9,216·128 + 128 = 1,179,648 + 128
     1_179_648,      # 9,216 × 128
     2_359_296,      # 2 × 1,179,648
     4_718_720),     # dx 2,359,296 + dW 2,359,296 + db 128
    ("relu_2", "relu", "1×128", 0, 0, 128, 128),      # 128 × 1
    ("dropout2", "dropout", "1×128", 0, 0, 0, 128),   # 0 at inference; 128 × 1 backward
    ("fc2", "linear", "1×10",
     1_290,          # 128·10 + 10
     1_280,          # 128 × 10
     2_560,          # 2 × 1,280
     5_130),         # dx 2,560 + dW 2,560 + db 10
    ("log_softmax", "log_softmax", "1×10", 0, 0,
     50,             # 10 × 5 (max, subtract, exp, sum, log-subtract)
     40),            # 10 × 4
]

# conv2 widened to 128 channels; fc1's input becomes 128·12·12 = 18,432 by propagation.
_CONV2_128_CHANGES = {
    "conv2": ("conv2d", "1×128×24×24",
              36_992,        # 128·32·3·3 + 128 = 36,864 + 128
              21_233_664,    # 128·24·24 = 73,728 outputs × 288
              42_467_328,    # 2 × 21,233,664
              85_008_384),   # dx 42,467,328 + dW 42,467,328 + db 73,728
    "relu_1": ("relu", "1×128×24×24", 0, 0,
               73_728,       # 128·24·24 × 1
               73_728),
    "max_pool2d": ("max_pool2d", "1×128×12×12", 0, 0,
                   55_296,   # 128·12·12 = 18,432 outputs × 3 comparisons
                   18_432),  # 1 per output
    "dropout1": ("dropout", "1×128×12×12", 0, 0, 0,
                 18_432),    # 1 per element
    "flatten": ("flatten", "1×18432", 0, 0, 0, 0),    # 128·12·12 = 18,432
    "fc1": ("linear", "1×128",
            2_359_424,       # 18,432·128 + 128 = 2,359,296 + 128
            2_359_296,       # 18,432 × 128
            4_718_592,       # 2 × 2,359,296
            9_437_312),      # dx 4,718,592 + dW 4,718,592 + db 128
}
MNIST_128_ROWS = [(r[0], *_CONV2_128_CHANGES[r[0]]) if r[0] in _CONV2_128_CHANGES else r for r in MNIST_ROWS]

HAND_TABLES = {"mnist_cnn": MNIST_ROWS, "mnist_cnn_conv2_128": MNIST_128_ROWS}


def _row(layer) -> tuple:
    return (layer.name, layer.op, "×".join(map(str, layer.output_shape)), layer.params, layer.macs, layer.flops,
            layer.backward_flops)


@pytest.mark.parametrize("row", MNIST_ROWS, ids=[r[0] for r in MNIST_ROWS])
def test_mnist_rows_by_hand(row):
    assert _row(analyze("mnist_cnn").layer(row[0])) == row


@pytest.mark.parametrize("row", MNIST_128_ROWS, ids=[r[0] for r in MNIST_128_ROWS])
def test_mnist_conv2_128_rows_by_hand(row):
    assert _row(analyze("mnist_cnn_conv2_128").layer(row[0])) == row


@pytest.mark.parametrize("name, macs, flops, params", [
    ("conv1", 194_688,          # 32·26·26 = 21,632 outputs × 1·3·3 = 9
     389_376, 320),             # 2 × 194,688; 32·9 + 32
    ("conv2", 10_616_832,       # 64·24·24 = 36,864 outputs × 32·3·3 = 288 → 36,864 × 288
     21_233_664, 18_496),       # 2 × 10,616,832; 64·288 + 64
    ("fc1", 1_179_648,          # 9,216 × 128
     2_359_296, 1_179_776),     # 2 × 1,179,648; 1,179,648 + 128
    ("fc2", 1_280,              # 128 × 10
     2_560, 1_290),             # 2 × 1,280; 1,280 + 10
])
def test_mnist_conv_and_linear_layers(name, macs, flops, params):
    layer = analyze("mnist_cnn").layer(name)
    assert (layer.macs, layer.flops, layer.params) == (macs, flops, params)
    assert layer.flops == core.FLOPS_PER_MAC * layer.macs == 2 * layer.macs


def test_mnist_totals():
    t = analyze("mnist_cnn").totals
    assert t["params"] == 1_199_882              # 320 + 18,496 + 1,179,776 + 1,290
    assert t["trainable_params"] == 1_199_882
    assert t["buffers"] == 0
    assert t["macs"] == 11_992_448               # 194,688 + 10,616,832 + 1,179,648 + 1,280
    # 2 × 11,992,448 = 23,984,896 from MACs, + relu 21,632 + relu_1 36,864 + pool 27,648 + relu_2 128 + log_softmax 50
    # = 23,984,896 + 86,322
    assert t["flops"] == 24_071_218
    # 411,008 + 21,632 + 42,504,192 + 36,864 + 9,216 + 9,216 + 0 + 4,718,720 + 128 + 128 + 5,130 + 40
    assert t["backward_flops"] == 47_716_274
    assert t["training_flops"] == 71_787_492     # 24,071,218 + 47,716,274


def test_mnist_totals_are_sums_of_rows():
    t = analyze("mnist_cnn").totals
    assert t["params"] == sum(r[3] for r in MNIST_ROWS)
    assert t["macs"] == sum(r[4] for r in MNIST_ROWS)
    assert t["flops"] == sum(r[5] for r in MNIST_ROWS)
    assert t["backward_flops"] == sum(r[6] for r in MNIST_ROWS)


def test_conv2_128_totals():
    t = analyze("mnist_cnn_conv2_128").totals
    assert t["params"] == 2_398_026              # 320 + 36,992 + 2,359,424 + 1,290
    assert t["macs"] == 23_788_928               # 194,688 + 21,233,664 + 2,359,296 + 1,280


@pytest.mark.parametrize("batch", [1, 2, 501])
def test_batch_scaling(batch):
    one, many = analyze("mnist_cnn"), analyze("mnist_cnn", batch_size=batch)
    assert many.totals["params"] == 1_199_882                   # parameters do not depend on N
    assert many.totals["macs"] == 11_992_448 * batch
    assert many.totals["flops"] == 24_071_218 * batch
    assert many.totals["backward_flops"] == 47_716_274 * batch
    for a, b in zip(one.layers, many.layers):
        assert (b.macs, b.flops, b.backward_flops) == (a.macs * batch, a.flops * batch, a.backward_flops * batch)
        assert b.params == a.params
        assert b.output_shape == (batch,) + a.output_shape[1:]


def test_batch_501_by_hand():
    t = analyze("mnist_cnn", batch_size=501).totals
    assert t["macs"] == 6_008_216_448            # 11,992,448 × 501 = 5,996,224,000 + 11,992,448
    assert t["flops"] == 12_059_680_218          # 24,071,218 × 501 = 12,035,609,000 + 24,071,218
    assert t["params"] == 1_199_882


# -- pen and paper -------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("batch, subst, macs_text, flops_text", [
    (1, "1·64·24·24·32·3·3", "10,616,832",           # 64·24·24·32·3·3 = 36,864 × 288
     "21,233,664"),                                  # 2 × 10,616,832
    (501, "501·64·24·24·32·3·3", "5,319,032,832",    # 10,616,832 × 501 = 5,308,416,000 + 10,616,832
     "10,638,065,664"),                              # 2 × 5,319,032,832
])
def test_explain_conv2(batch, subst, macs_text, flops_text):
    lines = analyze("mnist_cnn", batch_size=batch).explain("conv2")
    by_label = {line.label: line for line in lines}
    macs = by_label["MACs"]
    assert subst in macs.substituted
    assert "C_out" in macs.symbolic and "k_h" in macs.symbolic
    assert macs_text in str(macs)
    assert macs.value == int(macs_text.replace(",", ""))
    flops = by_label["FLOPs"]
    assert macs_text in flops.substituted
    assert flops_text in str(flops)
    assert flops.value == 2 * macs.value
    outputs = by_label["outputs"]
    assert f"{batch}·64·24·24" in outputs.substituted
    assert outputs.value == 36_864 * batch       # 64·24·24 per sample
    params = by_label["params"]
    assert "64·32·3·3 + 64" in params.substituted
    assert params.value == 18_496                # 64·32·3·3 + 64 = 18,432 + 64
    per = by_label["per output"]
    assert "288 + 287 + 1" in per.substituted    # 32·3·3 = 288 multiplies, 287 adds, 1 bias add
    assert per.value == 576                      # = 2 × 288


def test_explain_fc1():
    lines = {line.label: line for line in analyze("mnist_cnn").explain("fc1")}
    assert "1·9,216·128" in lines["MACs"].substituted
    assert lines["MACs"].value == 1_179_648      # 9,216 × 128
    assert "9216·128 + 128" in lines["params"].substituted
    assert lines["params"].value == 1_179_776    # 1,179,648 + 128


def test_explain_unknown_layer():
    with pytest.raises(core.NetworkError, match="conv9"):
        analyze("mnist_cnn").explain("conv9")


# -- per-element conventions of ops without MACs ------------------------------------------------------------------
# A 1×1 conv (3 → 4 channels) on 3×6×6 feeds the op under test so its input carries a gradient; the op then sees
# 4·6·6 = 144 elements per sample.

def _probe(op: str, **attrs) -> Network:
    return Network.make("probe", {"x": (3, 6, 6)}, [
        Node.make("conv", "conv2d", "x", out_channels=4, kernel_size=1),
        Node.make("op", op, "conv", **attrs),
    ])


@pytest.mark.parametrize("op, attrs, fwd, bwd_in, bwd_w", [
    ("relu", {}, 144,           # 144 × 1 (max(x, 0))
     144, 0),                   # 144 × 1
    ("max_pool2d", {"kernel_size": 2},
     108,                       # 4·3·3 = 36 outputs × (2·2 − 1) = 3 comparisons
     36, 0),                    # 1 per output (gradient to the argmax)
    ("avg_pool2d", {"kernel_size": 2},
     144,                       # 36 outputs × (3 adds + 1 divide) = 36 × 4
     180, 0),                   # 36 × (1 divide + 4 adds) = 36 × 5
    ("batch_norm", {},
     288,                       # 144 × 2 (folded scale and shift)
     864,                       # 144 × 6 (dx from the shared sums: 5, plus the γ multiply)
     720),                      # 144 × 5 (the sums Σdy, Σdy·x̂ with x̂ recomputed: dβ, dγ; dx reuses them)
    ("softmax", {"dim": 1},
     720,                       # 144 × 5 (max, subtract, exp, sum, divide)
     576, 0),                   # 144 × 4
    ("log_softmax", {"dim": 1},
     720,                       # 144 × 5
     576, 0),                   # 144 × 4
    ("dropout", {"p": 0.5}, 0,  # identity at inference
     144, 0),                   # 144 × 1
])
@pytest.mark.parametrize("batch", [1, 3])
def test_per_element_conventions(op, attrs, fwd, bwd_in, bwd_w, batch):
    layer = analyze(_probe(op, **attrs), batch_size=batch).layer("op")
    assert layer.macs == 0
    assert layer.flops == fwd * batch
    assert layer.backward_input_flops == bwd_in * batch
    assert layer.backward_weight_flops == bwd_w * batch
    assert layer.backward_flops == (bwd_in + bwd_w) * batch


def test_batch_norm_params_and_buffers():
    layer = analyze(_probe("batch_norm")).layer("op")
    assert layer.params == 8          # γ, β: 2 × 4 channels
    assert layer.buffers == 8         # running mean, var: 2 × 4 channels


def test_no_gradient_upstream_means_no_grad_input_term():
    # relu straight on the network input: nothing upstream is trained, so no backward work at all
    net = Network.make("r", {"x": (4, 6, 6)}, [Node.make("r", "relu", "x")])
    layer = analyze(net).layer("r")
    assert layer.flops == 144         # 4·6·6 × 1
    assert layer.backward_flops == 0


@pytest.mark.parametrize("name, bwd_input, bwd_weight", [
    ("conv1", 0,                        # first conv: the image needs no gradient
     411_008),                          # 2 × 194,688 + 21,632 bias adds
    ("conv2", 21_233_664,               # dx: transposed conv, same MACs → 2 × 10,616,832
     21_270_528),                       # dW 21,233,664 + db 36,864
    ("fc1", 2_359_296,                  # 2 × 9,216·128
     2_359_424),                        # 2,359,296 + 128
    ("fc2", 2_560,                      # 2 × 128·10
     2_570),                            # 2,560 + 10
    ("relu", 21_632, 0),                # 32·26·26 × 1
    ("max_pool2d", 9_216, 0),           # 64·12·12 outputs × 1
    ("flatten", 0, 0),
    ("log_softmax", 40, 0),             # 10 × 4
])
def test_mnist_backward_per_node(name, bwd_input, bwd_weight):
    layer = analyze("mnist_cnn").layer(name)
    assert layer.backward_input_flops == bwd_input
    assert layer.backward_weight_flops == bwd_weight
    assert layer.backward_flops == bwd_input + bwd_weight


# -- VGG16 and ResNet-18 ------------------------------------------------------------------------------------------

VGG16_CONV_MACS = [
    86_704_128,         # 3→64 @224: 224·224 = 50,176 × 64 × 3·9 = 27
    1_849_688_064,      # 64→64 @224: 50,176 × 64 × 576
    924_844_032,        # 64→128 @112: 12,544 × 128 × 576
    1_849_688_064,      # 128→128 @112: 12,544 × 128 × 1,152
    924_844_032,        # 128→256 @56: 3,136 × 256 × 1,152
    1_849_688_064,      # 256→256 @56: 3,136 × 256 × 2,304
    1_849_688_064,      # 256→256 @56
    924_844_032,        # 256→512 @28: 784 × 512 × 2,304
    1_849_688_064,      # 512→512 @28: 784 × 512 × 4,608
    1_849_688_064,      # 512→512 @28
    462_422_016,        # 512→512 @14: 196 × 512 × 4,608
    462_422_016,
    462_422_016,
]
VGG16_CONV_TOTAL = 15_346_630_656   # 86,704,128 + 6 × 1,849,688,064 + 3 × 924,844,032 + 3 × 462,422,016
VGG16_FC_TOTAL = 123_633_664        # 25,088·4,096 = 102,760,448 + 4,096·4,096 = 16,777,216 + 4,096·1,000 = 4,096,000


def test_vgg16_conv_share_of_macs():
    r = analyze("vgg16")
    convs = [l for l in r.layers if l.op == "conv2d"]
    assert [l.macs for l in convs] == VGG16_CONV_MACS
    assert sum(VGG16_CONV_MACS) == VGG16_CONV_TOTAL
    assert sum(l.macs for l in convs) == VGG16_CONV_TOTAL
    assert sum(l.macs for l in r.layers if l.op == "linear") == VGG16_FC_TOTAL
    assert r.totals["macs"] == 15_470_264_320          # 15,346,630,656 + 123,633,664
    share = VGG16_CONV_TOTAL / r.totals["macs"]        # 1 − 123,633,664 / 15,470,264,320 ≈ 0.99201
    assert share == pytest.approx(0.992008, abs=1e-6)
    assert share > 0.99


def test_vgg16_params():
    # convs: 3·64·9+64 = 1,792; 64·64·9+64 = 36,928; 64·128·9+128 = 73,856; 128·128·9+128 = 147,584;
    # 128·256·9+256 = 295,168; 2 × (256·256·9+256 = 590,080); 256·512·9+512 = 1,180,160;
    # 5 × (512·512·9+512 = 2,359,808)  → 14,714,688
    # fcs: 25,088·4,096+4,096 = 102,764,544; 4,096·4,096+4,096 = 16,781,312; 4,096·1,000+1,000 = 4,097,000
    #      → 123,642,856
    assert analyze("vgg16").totals["params"] == 138_357_544   # 14,714,688 + 123,642,856


def _basic_block(c_in: int, c_out: int, downsample: bool) -> int:
    """Parameters of a torchvision BasicBlock: two 3×3 convs without bias, two BatchNorms (γ, β), and a 1×1
    downsample conv + BatchNorm when the shape changes."""
    p = c_out * c_in * 9 + 2 * c_out + c_out * c_out * 9 + 2 * c_out
    if downsample:
        p += c_out * c_in + 2 * c_out
    return p


def test_resnet18_params_by_hand():
    stem = 64 * 3 * 7 * 7 + 2 * 64          # conv1 9,408 + bn1 128 = 9,536
    layer1 = 2 * _basic_block(64, 64, False)   # 2 × (36,864 + 128 + 36,864 + 128 = 73,984) = 147,968
    layer2 = _basic_block(64, 128, True) + _basic_block(128, 128, False)
    #         (73,728 + 256 + 147,456 + 256 + 8,192 + 256 = 230,144) + (2 × 147,456 + 512 = 295,424) = 525,568
    layer3 = _basic_block(128, 256, True) + _basic_block(256, 256, False)
    #         (294,912 + 589,824 + 32,768 + 3·512 = 919,040) + (2 × 589,824 + 1,024 = 1,180,672) = 2,099,712
    layer4 = _basic_block(256, 512, True) + _basic_block(512, 512, False)
    #         (1,179,648 + 2,359,296 + 131,072 + 3·1,024 = 3,673,088) + (2 × 2,359,296 + 2,048 = 4,720,640)
    #         = 8,393,728
    fc = 512 * 1000 + 1000                  # 513,000
    assert (stem, layer1, layer2, layer3, layer4, fc) == (9_536, 147_968, 525_568, 2_099_712, 8_393_728, 513_000)
    total = stem + layer1 + layer2 + layer3 + layer4 + fc
    assert total == 11_689_512              # 9,536 + 147,968 + 525,568 + 2,099,712 + 8,393,728 + 513,000
    t = analyze("resnet18").totals
    assert t["params"] == 11_689_512
    assert t["trainable_params"] == 11_689_512
    # BatchNorm running mean and var are buffers, not parameters: 2 per channel over every BN
    # channels: stem 64; layer1 4·64 = 256; layer2 5·128 = 640; layer3 5·256 = 1,280; layer4 5·512 = 2,560 → 4,800
    assert t["buffers"] == 9_600            # 2 × 4,800


def test_resnet18_first_layers():
    r = analyze("resnet18")
    conv1 = r.layer("conv1")
    assert conv1.output_shape == (1, 64, 112, 112)   # (224 + 2·3 − 7)//2 + 1 = 112
    assert conv1.macs == 118_013_952                 # 64·112·112 = 802,816 outputs × 3·7·7 = 147
    assert conv1.params == 9_408                     # 64·3·7·7, no bias
    assert r.layer("maxpool").output_shape == (1, 64, 56, 56)   # (112 + 2 − 3)//2 + 1 = 56
    assert r.layer("fc").macs == 512_000             # 512 × 1,000


# -- precision changes bytes, not arithmetic ----------------------------------------------------------------------

@pytest.mark.parametrize("dtype, param_bytes", [
    ("fp64", 9_599_056),     # 1,199,882 × 8
    ("fp32", 4_799_528),     # 1,199,882 × 4
    ("tf32", 4_799_528),     # 1,199,882 × 4
    ("bf16", 2_399_764),     # 1,199,882 × 2
    ("fp16", 2_399_764),     # 1,199,882 × 2
    ("int8", 1_199_882),     # 1,199,882 × 1
    ("mixed", 2_399_764),    # 1,199,882 × 2 working weights (the fp32 master copy is counted separately)
])
def test_dtype_changes_bytes_not_flops(dtype, param_bytes):
    r = analyze("mnist_cnn", dtype=dtype)
    assert r.totals["param_bytes"] == param_bytes
    assert (r.totals["macs"], r.totals["flops"], r.totals["backward_flops"]) == (11_992_448, 24_071_218, 47_716_274)
    ref = analyze("mnist_cnn", dtype="fp32")
    assert [(l.macs, l.flops, l.backward_flops) for l in r.layers] == \
           [(l.macs, l.flops, l.backward_flops) for l in ref.layers]


# -- golden per-layer tables --------------------------------------------------------------------------------------

_HEAD = ("name", "op", "output shape", "params", "MACs", "FLOPs fwd", "FLOPs bwd")


def render_rows(rows) -> str:
    cells = [_HEAD] + [(r[0], r[1], r[2], *(f"{v:,}" for v in r[3:])) for r in rows]
    widths = [max(len(c[i]) for c in cells) for i in range(len(_HEAD))]
    return "\n".join("  ".join(c.ljust(w) if i < 3 else c.rjust(w)
                               for i, (c, w) in enumerate(zip(row, widths))).rstrip()
                     for row in cells) + "\n"


def parse_golden(text: str) -> list[tuple]:
    rows = []
    for line in text.splitlines()[1:]:
        name, op, shape, *nums = line.split()
        rows.append((name, op, shape, *(int(n.replace(",", "")) for n in nums)))
    return rows


@pytest.mark.parametrize("model", sorted(HAND_TABLES))
def test_golden_table(model, update_golden):
    path = GOLDEN / f"{model}.txt"
    got = render_rows([_row(l) for l in analyze(model).layers])
    if update_golden:
        path.parent.mkdir(exist_ok=True)
        path.write_text(got, encoding="utf-8")
    assert path.exists(), f"{path} is missing; run pytest --update-golden and check every row by hand"
    assert got == path.read_text(encoding="utf-8")


@pytest.mark.parametrize("model", sorted(HAND_TABLES))
def test_golden_table_matches_hand_arithmetic(model):
    """The golden file itself is checked row by row against the hand-computed tables above."""
    text = (GOLDEN / f"{model}.txt").read_text(encoding="utf-8")
    assert text.splitlines()[0].split() == ["name", "op", "output", "shape", "params", "MACs", "FLOPs", "fwd",
                                            "FLOPs", "bwd"]
    assert parse_golden(text) == HAND_TABLES[model]
    assert text == render_rows(HAND_TABLES[model])
