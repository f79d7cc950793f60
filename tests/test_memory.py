"""Memory model: parameter bytes per precision, optimizer state, inference peak of live activations, training saved
activations. Every expected figure is worked by hand beside it."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from core import Network, Node, analyze

P_MNIST = 1_199_882          # 320 + 18,496 + 1,179,776 + 1,290 (see test_hand_arithmetic)


# -- parameters, gradients, master weights, optimizer state ---------------------------------------------------------

@pytest.mark.parametrize("dtype, weight, master, grad", [
    ("fp64", 8, 0, 8),
    ("fp32", 4, 0, 4),
    ("tf32", 4, 0, 4),       # stored as fp32
    ("bf16", 2, 0, 2),
    ("fp16", 2, 0, 2),
    ("int8", 1, 0, 4),       # int8 weights; gradients assumed fp32 (quantisation-aware training, core/precision.py)
    ("mixed", 2, 4, 2),      # fp16 working weights and gradients + an fp32 master copy
])
def test_parameter_bytes_per_dtype(dtype, weight, master, grad):
    t = analyze("mnist_cnn", dtype=dtype).totals
    assert t["param_bytes"] == P_MNIST * weight
    assert t["master_weight_bytes"] == P_MNIST * master
    assert t["gradient_bytes"] == P_MNIST * grad


def test_mixed_precision_by_hand():
    t = analyze("mnist_cnn", dtype="mixed", optimizer="adam").totals
    assert t["param_bytes"] == 2_399_764          # 1,199,882 × 2
    assert t["master_weight_bytes"] == 4_799_528  # 1,199,882 × 4
    assert t["gradient_bytes"] == 2_399_764       # 1,199,882 × 2
    assert t["optimizer_bytes"] == 9_599_056      # 1,199,882 × 2 states × 4 bytes


@pytest.mark.parametrize("optimizer, states", [("sgd", 0), ("sgd_momentum", 1), ("adam", 2), ("adamw", 2)])
@pytest.mark.parametrize("dtype, state_bytes", [("fp32", 4), ("fp16", 2), ("mixed", 4), ("fp64", 8)])
def test_optimizer_state(optimizer, states, dtype, state_bytes):
    t = analyze("mnist_cnn", dtype=dtype, optimizer=optimizer).totals
    assert t["optimizer_bytes"] == P_MNIST * states * state_bytes


@pytest.mark.parametrize("optimizer, opt_bytes", [
    ("sgd", 0),
    ("sgd_momentum", 4_799_528),   # 1,199,882 × 1 × 4
    ("adam", 9_599_056),           # 1,199,882 × 2 × 4
    ("adamw", 9_599_056),
])
def test_mnist_training_bytes_fp32(optimizer, opt_bytes):
    t = analyze("mnist_cnn", optimizer=optimizer).totals
    assert t["optimizer_bytes"] == opt_bytes
    # The peak of the step, in the backward of relu_1 (batch 1, fp32):
    #   weights 1,199,882 × 4 = 4,799,528 + optimizer state + the input 1×28×28 × 4 = 3,136
    #   + saved: relu's output 32·26·26 = 21,632 × 4 = 86,528 and relu_1's 64·24·24 = 36,864 × 4 = 147,456
    #   + in flight: the gradient of relu_1's output 147,456 and the one it makes for conv2's output 147,456
    #   + weight gradients made so far, fc2's and fc1's: (1,290 + 1,179,776) × 4 = 4,724,264
    assert t["training_peak_at"] == "the backward of relu_1"
    assert t["training_bytes"] == 4_799_528 + opt_bytes + 3_136 + 86_528 + 147_456 + 2 * 147_456 + 4_724_264


def test_optimizer_state_counts_only_trainable_parameters():
    # a frozen parameter tensor (no gradient, no optimizer state) next to a trainable linear
    net = Network.make("frozen", {"x": (8,)}, [
        Node.make("fc", "linear", "x", out_features=4),                 # 8·4 + 4 = 36 trainable
        Node.make("table", "parameter", (), shape=[4], trainable=False),  # 4 frozen
        Node.make("sum", "add", ("fc", "table")),
    ], outputs=["sum"])
    t = analyze(net, optimizer="adam").totals
    assert (t["params"], t["trainable_params"], t["non_trainable_params"]) == (40, 36, 4)
    assert t["param_bytes"] == 160            # 40 × 4
    assert t["gradient_bytes"] == 144         # 36 × 4
    assert t["optimizer_bytes"] == 288        # 36 × 2 × 4


def test_batch_norm_buffers_are_bytes_but_not_params():
    net = Network.make("bn", {"x": (3, 4, 4)}, [Node.make("bn", "batch_norm", "x")])
    t = analyze(net).totals
    assert t["params"] == 6                   # γ, β: 2 × 3
    assert t["buffers"] == 6                  # running mean, var: 2 × 3
    assert t["param_bytes"] == 24             # 6 × 4
    assert t["buffer_bytes"] == 24            # 6 × 4


# -- inference: peak of live tensors -----------------------------------------------------------------------------

def residual_net() -> Network:
    """x 2×4×4 (32) → a: conv 3×3 pad 1 → 4×4×4 (64) → b: relu (64) → c: conv 3×3 pad 1 → 2×4×4 (32)
    → s: add(c, x) (32) → o: relu (32). x stays alive until s (the residual branch)."""
    return Network.make("res", {"x": (2, 4, 4)}, [
        Node.make("a", "conv2d", "x", out_channels=4, kernel_size=3, padding=1),
        Node.make("b", "relu", "a"),
        Node.make("c", "conv2d", "b", out_channels=2, kernel_size=3, padding=1),
        Node.make("s", "add", ("c", "x")),
        Node.make("o", "relu", "s"),
    ])


def view_net() -> Network:
    """x 1×2×2 (4) → conv 1×1 → 8×2×2 (32) → flatten (a view: 32, no new memory) → linear 3."""
    return Network.make("view", {"x": (1, 2, 2)}, [
        Node.make("conv", "conv2d", "x", out_channels=8, kernel_size=1),
        Node.make("flat", "flatten", "conv"),
        Node.make("fc", "linear", "flat", out_features=3),
    ])


def test_residual_peak_by_hand():
    # live while each node runs (its inputs and output coexist), then free tensors whose last reader has run:
    #   start: x 32
    #   a: x 32 + a 64 = 96        (x still needed by s)
    #   b: x 32 + a 64 + b 64 = 160  → free a → 96
    #   c: x 32 + b 64 + c 32 = 128  → free b → 64
    #   s: x 32 + c 32 + s 32 = 96   → free x, c → 32
    #   o: s 32 + o 32 = 64
    # peak 160 at b. (Were x freed after a, the peak would be b: a 64 + b 64 = 128.)
    r = analyze(residual_net())
    assert r.totals["activation_bytes"] == 640        # 160 elements × 4 bytes
    assert r.totals["activation_peak_at"] == "b"
    sum_outputs = 64 + 64 + 32 + 32 + 32              # a + b + c + s + o = 224 elements
    assert r.totals["activation_bytes"] < sum_outputs * 4
    assert sum(l.activation_bytes for l in r.layers) == sum_outputs * 4


def test_view_shares_memory_by_hand():
    #   start: x 4
    #   conv: x 4 + conv 32 = 36   → free x → 32
    #   flat: a view of conv: still 32 (a copy would make 64)
    #   fc:   conv 32 + fc 3 = 35
    # peak 36 at conv
    r = analyze(view_net())
    assert r.totals["activation_bytes"] == 144        # 36 × 4
    assert r.totals["activation_peak_at"] == "conv"
    assert r.layer("flat").activation_bytes == 0      # a view takes no memory of its own
    assert r.layer("conv").activation_bytes == 128    # 8·2·2 × 4


def test_mnist_inference_peak_by_hand():
    # x 784; conv1: 784 + 21,632 = 22,416 → 21,632; relu: 21,632 + 21,632 = 43,264 → 21,632;
    # conv2: 21,632 + 36,864 = 58,496 → 36,864; relu_1: 36,864 + 36,864 = 73,728 → 36,864;
    # max_pool2d: 36,864 + 9,216 = 46,080 → 9,216; dropout1/flatten are views; fc1: 9,216 + 128 = 9,344 → 128; ...
    r = analyze("mnist_cnn")
    assert r.totals["activation_bytes"] == 294_912    # 73,728 × 4
    assert r.totals["activation_peak_at"] == "relu_1"
    assert r.totals["inference_bytes"] == 4_799_528 + 294_912   # weights 1,199,882 × 4 + peak
    assert r.totals["input_bytes"] == 3_136           # 1·28·28 × 4
    assert r.totals["output_bytes"] == 40             # 10 × 4


# -- training: activations saved for backward ----------------------------------------------------------------------

def chain_net() -> Network:
    """x 1×6×6 (36) → conv1 3×3 → 2×4×4 (32) → relu (32) → conv2 3×3 → 3×2×2 (12) → flatten (view) → linear 4."""
    return Network.make("chain", {"x": (1, 6, 6)}, [
        Node.make("conv1", "conv2d", "x", out_channels=2, kernel_size=3),
        Node.make("relu", "relu", "conv1"),
        Node.make("conv2", "conv2d", "relu", out_channels=3, kernel_size=3),
        Node.make("flat", "flatten", "conv2"),
        Node.make("fc", "linear", "flat", out_features=4),
    ])


def test_saved_activations_share_tensors_by_hand():
    # conv1 saves its input x (36); relu saves its output (32); conv2 saves its input = relu's output: the same
    # tensor, counted once; fc saves its input = flatten = a view of conv2 (12).
    # 36 + 32 + 12 = 80 elements (not 36 + 32 + 32 + 12 = 112)
    r = analyze(chain_net())
    assert r.totals["saved_activation_bytes"] == 320  # 80 × 4


def test_mnist_saved_activations_by_hand():
    # conv1 saves x 784; relu its output 21,632 (= conv2's input); relu_1 its output 36,864 (= max_pool2d's input);
    # dropout1 is a new tensor in training (9,216, saved by fc1 via the flatten view); relu_2 output 128; dropout2
    # tensor 128 (saved by fc2); log_softmax output 10.
    # tensors 784 + 21,632 + 36,864 + 9,216 + 128 + 128 + 10 = 68,762 elements, at the activation precision;
    # fixed-width buffers whatever the precision: max_pool2d's int64 indices 9,216 × 8 = 73,728 B and the dropout
    # byte masks 9,216 + 128 = 9,344 B → 83,072 B
    assert analyze("mnist_cnn").totals["saved_activation_bytes"] == 358_120      # 68,762 × 4 + 83,072
    assert analyze("mnist_cnn", dtype="fp16").totals["saved_activation_bytes"] == 220_596   # 68,762 × 2 + 83,072


def bn_net() -> Network:
    """x 1×4×4 (16) → conv 1×1 no bias → 2×4×4 (32) → bn (32) → relu (32) → max_pool 2 → 2×2×2 (8) → flatten
    → linear 3."""
    return Network.make("bnnet", {"x": (1, 4, 4)}, [
        Node.make("conv", "conv2d", "x", out_channels=2, kernel_size=1, bias=False),
        Node.make("bn", "batch_norm", "conv"),
        Node.make("relu", "relu", "bn"),
        Node.make("pool", "max_pool2d", "relu", kernel_size=2),
        Node.make("flat", "flatten", "pool"),
        Node.make("fc", "linear", "flat", out_features=3),
    ])


def test_saved_activations_with_batch_norm_and_pool_at_batch_1():
    # conv saves x 16; bn saves its input (conv's output) 32 + mean, invstd 2·2 = 4; relu its output 32 (= pool's
    # input); pool argmax indices 2 × 8 = 16; fc saves flatten = view of pool 8.
    # 16 + 32 + 4 + 32 + 16 + 8 = 108
    assert analyze(bn_net()).totals["saved_activation_bytes"] == 432   # 108 × 4


@pytest.mark.parametrize("batch", [2, 64])
def test_batchnorm_statistics_do_not_scale_with_batch(batch):
    # BatchNorm keeps one mean and one inverse std per channel for the whole batch (PyTorch's native_batch_norm
    # saves save_mean, save_invstd of shape [C]), so they are 2·C = 4 elements at any batch size, while every
    # per-sample tensor scales: (16 + 32 + 32 + 16 + 8) = 104 per sample.
    expected = (104 * batch + 4) * 4          # batch 2: 212 × 4 = 848; batch 64: 6,660 × 4 = 26,640
    assert analyze(bn_net(), batch_size=batch).totals["saved_activation_bytes"] == expected


# -- everything activation-related scales linearly with the batch --------------------------------------------------

SCALED = ("activation_bytes", "saved_activation_bytes", "input_bytes", "output_bytes", "macs", "flops",
          "backward_flops", "training_flops")
FIXED = ("params", "trainable_params", "param_bytes", "buffer_bytes", "gradient_bytes", "master_weight_bytes",
         "optimizer_bytes")


@settings(max_examples=40, deadline=None)
@given(batch=st.integers(min_value=1, max_value=100_000),
       which=st.sampled_from(["residual", "view", "chain", "mnist_cnn"]),
       dtype=st.sampled_from(["fp32", "fp16", "mixed", "int8"]))
def test_activation_memory_scales_linearly_with_batch(batch, which, dtype):
    model = {"residual": residual_net(), "view": view_net(), "chain": chain_net()}.get(which, which)
    one = analyze(model, dtype=dtype).totals
    many = analyze(model, batch_size=batch, dtype=dtype).totals
    for k in SCALED:
        assert many[k] == one[k] * batch, k
    for k in FIXED:
        assert many[k] == one[k], k
    assert many["activation_peak_at"] == one["activation_peak_at"]
    assert many["inference_bytes"] == one["param_bytes"] + one["buffer_bytes"] + one["activation_bytes"] * batch


@pytest.mark.parametrize("batch", [1, 7])
def test_residual_peak_by_hand_at_batch(batch):
    assert analyze(residual_net(), batch_size=batch).totals["activation_bytes"] == 640 * batch   # 160 × 4 × N
    assert analyze(chain_net(), batch_size=batch).totals["saved_activation_bytes"] == 320 * batch  # 80 × 4 × N


def test_adaptive_average_pool_saves_its_input_unless_the_output_is_one_pixel():
    """PyTorch's AdaptiveAvgPool2DBackward0 keeps its input; a 1×1 output is computed as a mean, which keeps only
    sizes. A 1×1 conv in front carries the gradient (without parameters nothing would be saved at all)."""
    def net(out):
        return Network.make("head", {"x": (512, 7, 7)}, [
            Node.make("conv", "conv2d", "x", out_channels=512, kernel_size=1),
            Node.make("pool", "adaptive_avg_pool2d", "conv", output_size=out)])
    # the conv keeps its input for its weight gradient: 512·7·7·4 = 100,352 B per sample;
    # a 7×7 pool (VGG's head) also keeps its input, the conv's output: another 100,352 B → 200,704
    assert analyze(net(7)).totals["saved_activation_bytes"] == 200_704
    assert analyze(net(1)).totals["saved_activation_bytes"] == 100_352      # ResNet's 1×1 head keeps nothing
    assert analyze(net(7), batch_size=4).totals["saved_activation_bytes"] == 4 * 200_704
