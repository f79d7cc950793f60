"""The convs PyTorch runs on a CPU as im2col + GEMM at batch 1 (``core.work.im2col_conv``), and how a CPU calibrated
with that path ("im2col_conv" in its ``efficiency``) times them: at the class's figures, a weight rate it lacks at
conv's. tests/test_im2col_torch.py checks the rule against PyTorch's own choice."""

import pytest

import core
from core.devices import Device
from core.graph import compile_network
from core.ir import Network, Node
from core.work import IM2COL_MAX_INPUT, cpu_classes, im2col_conv, network_work

BASE = dict(id="cpu", name="cpu", vendor="-", kind="CPU", year=2026, peak_flops={"fp32": 1e11},
            memory_bandwidth=1e10, source="-")
OLD = {"conv": 0.5}                             # a CPU calibrated before the class
BOTH = {"conv": 0.5, "im2col_conv": 0.25}


def conv_net(c, hw, k=3, stride=1, groups=1, cout=None, kh=None):
    kernel = (kh or k, k)
    return Network.make("c", {"x": (c, hw, hw)}, [Node.make("conv", "conv2d", "x", out_channels=cout or c,
                                                            kernel_size=kernel, stride=stride, padding=k // 2,
                                                            groups=groups, bias=False)])


def layer(net):
    return network_work(compile_network(net), False).layers[0]


@pytest.mark.parametrize("net, batch, expected", [
    (conv_net(416, 7), 1, True),        # 416 × 7 × 7 = 20,384 ≤ 20,480
    (conv_net(418, 7), 1, False),       # 418 × 7 × 7 = 20,482 > 20,480: oneDNN
    (conv_net(512, 2), 1, True),        # 2,048
    (conv_net(512, 2), 2, False),       # batch 2: oneDNN whatever the size
    (conv_net(64, 8, groups=2), 1, False),          # grouped: oneDNN
    (conv_net(24, 20, k=5), 1, False),  # a 5×5 kernel (both sides above 3): oneDNN
    (conv_net(24, 20, k=5, kh=3), 1, True),         # 3×5: one side ≤ 3, so the size decides
    (conv_net(64, 13, k=1), 1, False),  # 1×1 stride 1: pointwise_conv's class, not this one
    (conv_net(64, 13, k=1, stride=2), 1, True),     # 1×1 stride 2 (a downsample): "conv", im2col at 10,816
])
def test_which_convs_run_as_im2col(net, batch, expected):
    assert IM2COL_MAX_INPUT == 20480
    assert im2col_conv(layer(net), batch) is expected


def test_a_device_without_the_class_keeps_every_layers_class():
    layers = network_work(compile_network(conv_net(512, 2)), False).layers
    assert cpu_classes(layers, 1, None) is None
    assert cpu_classes(layers, 1, OLD) is None
    assert cpu_classes(layers, 2, BOTH) is None       # no layer on the path
    assert cpu_classes(layers, 1, BOTH) == ("im2col_conv",)
    # a GPU's figures never remap a layer (PyTorch's CPU path)
    gpu = core.estimate(conv_net(512, 2), Device(**{**BASE, "kind": "GPU"}, efficiency=BOTH))
    assert [lt.work_class for lt in gpu.layer_times] == ["conv"]


def test_im2col_layers_read_their_weights_at_the_paths_rate():
    net = conv_net(512, 2)
    # weights 512 × 512 × 9 = 2,359,296 × 4 B = 9,437,184 B; activations (in + out) 2 × 512 × 2 × 2 = 4,096 × 4 B
    # = 16,384 B per sample
    rates = {"conv": 2e10, "im2col_conv": 2e9}
    old = core.estimate(net, Device(**BASE, efficiency=OLD, weight_bandwidth={"conv": 2e9}))
    new = core.estimate(net, Device(**BASE, efficiency=BOTH, weight_bandwidth=rates))
    # batch 1: 16,384 / 1e10 + 9,437,184 / 2e9 = 1.6384 µs + 4.718592 ms, on either device
    assert new.totals["forward_memory_s"] == pytest.approx(16_384 / 1e10 + 9_437_184 / 2e9)
    assert old.totals["forward_memory_s"] == pytest.approx(16_384 / 1e10 + 9_437_184 / 2e9)
    assert [lt.work_class for lt in new.layer_times] == ["im2col_conv"]
    assert [lt.work_class for lt in old.layer_times] == ["conv"]
    # batch 2 runs on oneDNN: 2 × 16,384 / 1e10 + 9,437,184 / 2e10 = 3.2768 µs + 0.4718592 ms
    b2 = core.estimate(net, Device(**BASE, efficiency=BOTH, weight_bandwidth=rates), batch_size=2)
    assert b2.totals["forward_memory_s"] == pytest.approx(32_768 / 1e10 + 9_437_184 / 2e10)
    assert [lt.work_class for lt in b2.layer_times] == ["conv"]
    # compute: 2 × 512 × 512 × 9 × 4 = 18,874,368 FLOPs at 1e11 × the class's 0.25 (conv's 0.5 on the old device
    # and at batch 2, twice the FLOPs)
    assert new.totals["forward_compute_s"] == pytest.approx(18_874_368 / 2.5e10)
    assert old.totals["forward_compute_s"] == pytest.approx(18_874_368 / 5e10)
    assert b2.totals["forward_compute_s"] == pytest.approx(2 * 18_874_368 / 5e10)


def test_the_backward_falls_back_to_convs_rate():
    net = conv_net(512, 2)
    dev = Device(**BASE, efficiency=BOTH, weight_bandwidth={"conv": 2e10, "im2col_conv": 2e9},
                 backward_weight_bandwidth={"conv": 4e9})
    plain = Device(**BASE, efficiency=OLD, weight_bandwidth={"conv": 2e10}, backward_weight_bandwidth={"conv": 4e9})
    # no backward rate of the path's own: conv's, as on a device calibrated before the class
    assert core.estimate(net, dev).totals["backward_memory_s"] == \
        pytest.approx(core.estimate(net, plain).totals["backward_memory_s"])
    own = Device(**BASE, efficiency=BOTH, weight_bandwidth={"conv": 2e10, "im2col_conv": 2e9},
                 backward_weight_bandwidth={"conv": 4e9, "im2col_conv": 1e9})
    # its own rate: the weight gradient's 9,437,184 B (the input needs none, so the weights are not read) at 1e9
    # instead of 4e9 B/s, 9,437,184 × (1e-9 − 0.25e-9) = 7.077888 ms more
    assert core.estimate(net, own).totals["backward_memory_s"] - core.estimate(net, dev).totals["backward_memory_s"] \
        == pytest.approx(7.077888e-3)


def test_layer_rows_add_up_to_the_totals_on_the_remapped_path():
    # ResNet-18 at 64 × 64, batch 1: the 7×7 stem runs on oneDNN; after it and the max pool, stage 1's four 3×3
    # convs read 64 × 16 × 16 = 16,384 elements; stages 2–4 each open with a stride-2 3×3 conv and a stride-2 1×1
    # downsample on the stage before's 16,384 / 8,192 / 4,096 elements, then three 3×3 convs on 8,192 / 4,096 /
    # 2,048: all ≤ 20,480, so 4 + 3 × (2 + 3) = 19 im2col convs, and one oneDNN one
    report = core.analyze("resnet18", input_shape=(3, 64, 64))
    dev = Device(**BASE, efficiency=BOTH, weight_bandwidth={"conv": 2e10, "im2col_conv": 2e9})
    est = core.estimate(report, dev)
    classes = [lt.work_class for lt in est.layer_times]
    assert classes.count("im2col_conv") == 19 and classes.count("conv") == 1
    assert sum(r["forward_s"] for r in est.layers) == pytest.approx(est.totals["forward_s"])
    assert sum(r["backward_s"] for r in est.layers) == pytest.approx(est.totals["backward_s"])
