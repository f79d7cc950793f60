"""Depthwise convolutions are a class of work of their own ("depthwise_conv"), split from "grouped_conv", those with
kernels above 3×3 one more ("depthwise_conv_large"), split from "depthwise_conv", 1×1 stride-1 convs
("pointwise_conv") from "conv", and BatchNorm ("batch_norm") from "elementwise": which layer is which, a device
calibrated before the split (the old class's figures stand for both), and the GPU model, whose fitted
"grouped_conv" parameter runs every grouped conv. Hand arithmetic on one-layer networks.

dw(): x (32, 8, 8) → conv 3×3, stride 1, padding 1, groups 32, 32 → 32 channels, no bias.
  MACs 32 × 8 × 8 × 9 = 18,432 per sample → 36,864 FLOPs; batch 1.
The device: peak 1e9 FLOP/s, bandwidth 1e12 B/s (memory negligible but counted the same on both sides).
"""

from __future__ import annotations

import dataclasses

import pytest

from core import gpu_model
from core.devices import Device
from core.graph import compile_network
from core.ir import Network, Node
from core.paleo import estimate


def conv(cin: int, cout: int, groups: int, k: int | tuple = 3, stride: int = 1) -> Network:
    pad = tuple(n // 2 for n in k) if isinstance(k, tuple) else k // 2
    return Network.make("one", {"x": (cin, 8, 8)}, [Node.make("c", "conv2d", "x", out_channels=cout, kernel_size=k,
                                                              stride=stride, padding=pad, groups=groups, bias=False)])


def work_class(net: Network) -> str:
    node = compile_network(net).nodes[0]
    return node.rule.work_class(node.ctx)


@pytest.mark.parametrize("cin, cout, groups, expected", [
    (32, 32, 32, "depthwise_conv"),        # MobileNet's depthwise 3×3
    (32, 64, 32, "depthwise_conv"),        # a channel multiplier of 2 (groups = input channels)
    (128, 128, 32, "grouped_conv"),        # ResNeXt's 32 groups of 4 channels
    (32, 32, 2, "grouped_conv"),
    (32, 32, 1, "conv"),
])
def test_which_conv_is_depthwise(cin, cout, groups, expected):
    assert work_class(conv(cin, cout, groups)) == expected


@pytest.mark.parametrize("k, groups, expected", [
    (5, 32, "depthwise_conv_large"),       # EfficientNet's and MNASNet's 5×5
    (7, 32, "depthwise_conv_large"),       # ConvNeXt's 7×7
    ((1, 5), 32, "depthwise_conv"),        # 5 taps: not above a 3×3's 9
    ((3, 5), 32, "depthwise_conv_large"),  # 15 taps
    (1, 32, "depthwise_conv"),
    (5, 2, "grouped_conv"),                # a grouped 5×5 stays grouped
    (5, 1, "conv"),
])
def test_which_depthwise_conv_is_large(k, groups, expected):
    assert work_class(conv(32, 32, groups, k)) == expected


OLD = Device(id="cpu", name="CPU", vendor="test", kind="CPU", year=2026, peak_flops={"fp32": 1e9},
             memory_bandwidth=1e12, source="hand-made for tests", note="",
             efficiency={"conv": 0.8, "grouped_conv": 0.4}, layer_overhead={"conv": 1e-5, "grouped_conv": 5e-5})


def test_a_device_calibrated_before_the_split_runs_depthwise_at_its_grouped_figures():
    """36,864 FLOPs at 1e9 × 0.4 = 9.216e-5 s compute, and grouped_conv's 5e-5 s per call."""
    layer = estimate(conv(32, 32, 32), OLD).layer_times[0]
    assert layer.work_class == "depthwise_conv"
    assert layer.forward.compute_s == pytest.approx(9.216e-5)
    assert layer.forward.overhead_s == pytest.approx(5e-5)


def test_a_device_with_depthwise_figures_uses_them():
    """At 0.1: 36,864 / (1e9 × 0.1) = 3.6864e-4 s, 4× the grouped figure's; 8e-5 s per call. A ResNeXt-style
    grouped conv on the same device keeps grouped_conv's 0.4: 128 × 8 × 8 × 4 × 9 × 2 = 589,824 FLOPs / 4e8 =
    1.47456e-3 s."""
    new = dataclasses.replace(OLD, efficiency={**OLD.efficiency, "depthwise_conv": 0.1},
                              layer_overhead={**OLD.layer_overhead, "depthwise_conv": 8e-5})
    dw = estimate(conv(32, 32, 32), new).layer_times[0]
    assert dw.forward.compute_s == pytest.approx(3.6864e-4) and dw.forward.overhead_s == pytest.approx(8e-5)
    grouped = estimate(conv(128, 128, 32), new).layer_times[0]
    assert grouped.work_class == "grouped_conv" and grouped.forward.compute_s == pytest.approx(1.47456e-3)


def test_a_large_kernel_depthwise_conv_runs_at_the_nearest_figures_the_device_has():
    """conv(32, 32, 32, k=5): MACs 32 × 8 × 8 × 25 = 51,200 per sample → 102,400 FLOPs. At OLD's grouped 0.4 (no
    depthwise figure at all): 102,400 / 4e8 = 2.56e-4 s; at a depthwise 0.1: / 1e8 = 1.024e-3 s; at its own 0.5:
    / 5e8 = 2.048e-4 s, with its own 3e-5 s per call (the 3×3 depthwise conv keeps 0.1: 36,864 / 1e8)."""
    assert estimate(conv(32, 32, 32, 5), OLD).layer_times[0].forward.compute_s == pytest.approx(2.56e-4)
    dw = dataclasses.replace(OLD, efficiency={**OLD.efficiency, "depthwise_conv": 0.1})
    assert estimate(conv(32, 32, 32, 5), dw).layer_times[0].forward.compute_s == pytest.approx(1.024e-3)
    large = dataclasses.replace(dw, efficiency={**dw.efficiency, "depthwise_conv_large": 0.5},
                                layer_overhead={**dw.layer_overhead, "depthwise_conv_large": 3e-5})
    layer = estimate(conv(32, 32, 32, 5), large).layer_times[0]
    assert layer.work_class == "depthwise_conv_large"
    assert layer.forward.compute_s == pytest.approx(2.048e-4) and layer.forward.overhead_s == pytest.approx(3e-5)
    assert estimate(conv(32, 32, 32), large).layer_times[0].forward.compute_s == pytest.approx(3.6864e-4)


@pytest.mark.parametrize("k, stride, groups, expected", [
    (1, 1, 1, "pointwise_conv"),           # a ResNet bottleneck's reduce or expand, an inverted residual's project
    (1, 2, 1, "conv"),                     # ResNet's stride-2 downsample 1×1 reads every other pixel
    ((1, 3), 1, 1, "conv"),                # Inception's 1×3
    (3, 1, 1, "conv"),
    (1, 1, 4, "grouped_conv"),             # ShuffleNet V1's grouped 1×1
])
def test_which_conv_is_pointwise(k, stride, groups, expected):
    assert work_class(conv(32, 32, groups, k, stride)) == expected


def test_a_pointwise_conv_runs_at_the_conv_figures_of_a_device_without_its_own():
    """conv(32, 64, 1, k=1): MACs 64 × 8 × 8 × 32 = 131,072 per sample → 262,144 FLOPs. At OLD's conv 0.8:
    262,144 / 8e8 = 3.2768e-4 s and conv's 1e-5 s per call; with its own 0.4 and 4e-6 s: 262,144 / 4e8 = 6.5536e-4 s,
    while a 3×3 conv on the same device keeps 0.8 (32 → 32: 32 × 8 × 8 × 32 × 9 × 2 = 1,179,648 FLOPs / 8e8 =
    1.47456e-3 s). Its weights (64 × 32 × 4 B = 8,192 B) are read at conv's measured rate where the device has no
    pointwise one: 8,192 / 8.192e6 B/s = 1e-3 s, the activations' bytes at 1e12 B/s being ~0."""
    old = estimate(conv(32, 64, 1, 1), OLD).layer_times[0]
    assert old.work_class == "pointwise_conv"
    assert old.forward.compute_s == pytest.approx(3.2768e-4) and old.forward.overhead_s == pytest.approx(1e-5)
    new = dataclasses.replace(OLD, efficiency={**OLD.efficiency, "pointwise_conv": 0.4},
                              layer_overhead={**OLD.layer_overhead, "pointwise_conv": 4e-6},
                              weight_bandwidth={"conv": 8.192e6})
    pw = estimate(conv(32, 64, 1, 1), new).layer_times[0]
    assert pw.forward.compute_s == pytest.approx(6.5536e-4) and pw.forward.overhead_s == pytest.approx(4e-6)
    assert pw.forward.memory_s == pytest.approx(1e-3, rel=1e-3)
    assert estimate(conv(32, 32, 1), new).layer_times[0].forward.compute_s == pytest.approx(1.47456e-3)


def test_the_gpu_model_runs_depthwise_at_its_fitted_grouped_parameter():
    assert gpu_model.compute_class("depthwise_conv_large") == "grouped_conv"
    assert gpu_model.compute_class("depthwise_conv") == "grouped_conv"
    assert gpu_model.compute_class("grouped_conv") == "grouped_conv"
    assert gpu_model.compute_class("conv") == "conv"
    assert gpu_model.compute_class("pointwise_conv") == "conv"
    assert gpu_model.compute_class("elementwise") is None and gpu_model.compute_class("pool") is None


def bn() -> Network:
    return Network.make("one", {"x": (16, 8, 8)}, [Node.make("b", "batch_norm", "x"), Node.make("r", "relu", "b")])


def test_batch_norm_is_its_own_class_and_an_older_device_runs_it_at_elementwise_figures():
    """x (16, 8, 8) = 1024 elements. Older device: no figures for either, so both layers get none: the batch norm
    and the ReLU cost the same per-call overhead as before (elementwise's 2e-6 s). With a batch_norm figure of 7e-6
    s per call, only the batch norm changes."""
    old = dataclasses.replace(OLD, efficiency={**OLD.efficiency, "elementwise": 1.0},
                              layer_overhead={**OLD.layer_overhead, "elementwise": 2e-6})
    b, r = estimate(bn(), old).layer_times
    assert (b.work_class, r.work_class) == ("batch_norm", "elementwise")
    assert b.forward.overhead_s == pytest.approx(2e-6) and r.forward.overhead_s == pytest.approx(2e-6)
    new = dataclasses.replace(old, layer_overhead={**old.layer_overhead, "batch_norm": 7e-6})
    b, r = estimate(bn(), new).layer_times
    assert b.forward.overhead_s == pytest.approx(7e-6) and r.forward.overhead_s == pytest.approx(2e-6)
    assert gpu_model.compute_class("batch_norm") is None          # memory-bound on a GPU, as elementwise is


def test_a_network_of_large_kernel_depthwise_convs_gets_the_depthwise_caption():
    """ConvNeXt-T's depthwise convs are all 7×7 ("depthwise_conv_large"); on a GPU of the fitted model its
    breakdown still says their backward kernels run on CUDA cores."""
    from core import zoo
    from core.api import estimate
    from ui.text import predicted_notes

    est = estimate(zoo.get("convnext_tiny"), "v100-sxm2")
    assert est.variant == "predicted" and "depthwise_backward" in est.model_params
    assert "depthwise convolution's backward kernels" in predicted_notes(est)
