"""A oneDNN conv's copies into and out of a padded channel layout (``core.work.padded_elements``), what a CPU
calibrated with ``padded_layout`` charges for them, and how calibration measures it. The rule is checked against
PyTorch's own choice in oneDNN's verbose log (a padded layout is marked "p" in a reorder's memory descriptor)."""

import re

import pytest

import core
from core.devices import Device, load_devices
from core.errors import CalcError
from core.graph import compile_network
from core.ir import Network, Node
from core.work import network_work, padded_elements

BASE = dict(id="cpu", name="cpu", vendor="-", kind="CPU", year=2026, peak_flops={"fp32": 1e11, "bf16": 1e11},
            memory_bandwidth=1e10, source="-")
PADDED = {"block": 16, "seconds": 1e-9}


def conv_net(c, hw, k=1, cout=None, groups=1, stride=1):
    return Network.make("c", {"x": (c, hw, hw)}, [Node.make("conv", "conv2d", "x", out_channels=cout or c,
                                                            kernel_size=k, stride=stride, padding=k // 2,
                                                            groups=groups, bias=False)])


def layers(net):
    return network_work(compile_network(net), False).layers


@pytest.mark.parametrize("net, batch, block, expected", [
    (conv_net(58, 28), 1, 16, 2 * 45_472),          # 58 × 28 × 28 = 45,472 in and out, > 20,480: oneDNN
    (conv_net(58, 28), 2, 16, 2 * 2 * 45_472),      # at batch 2, twice
    (conv_net(64, 28), 1, 16, 0),                   # 64 fills four blocks of 16
    (conv_net(64, 28, cout=58), 1, 16, 45_472),     # the output alone: 58 × 28 × 28
    (conv_net(56, 28), 1, 16, 2 * 43_904),          # 56 × 28 × 28 = 43,904; 56 = 3.5 blocks of 16
    (conv_net(56, 28), 1, 8, 0),                    # … and 7 blocks of 8 (AVX2)
    (conv_net(63, 28, k=3, groups=63), 1, 16, 2 * 49_392),   # depthwise (grouped: oneDNN), 63 × 28 × 28 = 49,392
    (conv_net(232, 7), 1, 16, 0),                   # 232 × 7 × 7 = 11,368 ≤ 20,480 at batch 1: im2col, no copies
    (conv_net(232, 7), 2, 16, 2 * 2 * 11_368),      # the same at batch 2 runs on oneDNN
])
def test_which_tensors_a_padded_layout_copies(net, batch, block, expected):
    assert padded_elements(layers(net), batch, block) == (expected,)


def test_only_conv_layers_copy():
    net = Network.make("n", {"x": (58, 28, 28)}, [Node.make("r", "relu", "x"), Node.make("p", "max_pool2d", "r",
                                                                                          kernel_size=2, stride=2)])
    assert padded_elements(layers(net), 1, 16) == (0, 0)


def _est(net, batch=1, **fields):
    return core.estimate(net, Device(**{**BASE, **fields}), batch_size=batch)


@pytest.mark.parametrize("fields", [
    {},                                                             # one work per class (no per-layer path)
    {"efficiency": {"conv": 1.0, "im2col_conv": 1.0}, "parallel_grain": 1e-6,
     "calibration": {"threads": 2}},                                # every layer on its own (the per-layer path)
])
def test_a_calibrated_cpu_charges_the_copies_per_element(fields):
    net = conv_net(58, 28)
    plain, padded = _est(net, **fields), _est(net, padded_layout=PADDED, **fields)
    # 2 × 45,472 = 90,944 elements × 1 ns = 90.944 µs, in the forward and the training forward; none in backward
    assert padded.totals["forward_s"] - plain.totals["forward_s"] == pytest.approx(90.944e-6)
    assert padded.totals["forward_overhead_s"] - plain.totals["forward_overhead_s"] == pytest.approx(90.944e-6)
    assert padded.totals["training_forward_s"] - plain.totals["training_forward_s"] == pytest.approx(90.944e-6)
    assert padded.totals["backward_s"] == pytest.approx(plain.totals["backward_s"])
    assert sum(r["forward_s"] for r in padded.layers) == pytest.approx(padded.totals["forward_s"])


def test_the_figure_needs_a_cpu_fp32_and_a_padded_tensor():
    net = conv_net(58, 28)
    assert _est(net, padded_layout=PADDED).totals["forward_s"] > _est(net).totals["forward_s"]
    aligned = conv_net(64, 28)
    assert _est(aligned, padded_layout=PADDED).totals["forward_s"] == _est(aligned).totals["forward_s"]
    gpu = {**BASE, "kind": "GPU"}
    assert core.estimate(net, Device(**gpu, padded_layout=PADDED)).totals["forward_s"] == \
        core.estimate(net, Device(**gpu)).totals["forward_s"]
    bf16 = [core.estimate(net, Device(**BASE, **extra), dtype="bf16").totals["forward_s"]
            for extra in ({}, {"padded_layout": PADDED})]
    assert bf16[0] == bf16[1]           # measured in fp32: another precision's copies are not that figure


@pytest.mark.parametrize("bad, field", [
    ({"block": 16}, "padded_layout"),                   # no seconds
    ({"block": 0, "seconds": 1e-9}, "padded_layout"),
    ({"block": 16, "seconds": -1.0}, "padded_layout"),
])
def test_a_bad_figure_is_named(bad, field):
    spec = {**BASE, "id": "mine", "note": "-", "user": True}
    assert load_devices(user_path=None).add({**spec, "padded_layout": PADDED}).device("mine").padded_layout == PADDED
    with pytest.raises(CalcError) as err:
        load_devices(user_path=None).add({**spec, "padded_layout": bad})
    assert field in str(err.value)


# -- against PyTorch: the reorders oneDNN's verbose log marks as padded ------------------------------------------

TORCH_CASES = [     # (channels in, out, size, kernel, groups, batch)
    (58, 58, 28, 1, 1, 1), (64, 64, 28, 1, 1, 1), (48, 48, 28, 1, 1, 1), (24, 58, 56, 1, 1, 1),
    (64, 58, 28, 1, 1, 1), (63, 63, 28, 3, 63, 1), (232, 232, 7, 1, 1, 1), (232, 232, 7, 1, 1, 2),
    (116, 116, 14, 3, 116, 1), (3, 24, 112, 3, 1, 1),
]


@pytest.mark.parametrize("case", TORCH_CASES)
def test_the_rule_is_onednns(capfd, case):
    # torch is imported here, not at the module's top, so that the tests above run without it
    torch = pytest.importorskip("torch")
    if not torch.backends.mkldnn.is_available():
        pytest.skip("this torch build has no oneDNN")
    from core.bridge.calibrate_suites import channel_block, host_info
    from test_im2col_torch import onednn_log

    block = channel_block(host_info(torch)["isa"])
    if not block:
        pytest.skip("a CPU whose oneDNN block this code does not know")

    cin, cout, hw, k, groups, batch = case
    conv = torch.nn.Conv2d(cin, cout, k, padding=k // 2, groups=groups, bias=False).eval()
    log = onednn_log(capfd, conv, torch.randn(batch, cin, hw, hw))
    # an activation's reorder names its shape with the batch first ("1x58x28x28"); a padded layout is "f32:p:…"
    acts = [line for line in log.splitlines() if ",reorder," in line and re.search(rf",{batch}x\d+x\d+x\d+,", line)]
    padded_in_log = any(re.search(r"f32:[a-z]*p[a-z]*:blocked", line) for line in acts)
    expected = padded_elements(layers(conv_net(cin, hw, k, cout, groups)), batch, block)[0] > 0
    assert padded_in_log is expected


# -- calibration: the pair of probes on a fake machine ------------------------------------------------------------

def test_calibration_reads_the_figure_off_the_pair():
    from test_calibrate_noise import Fake, run

    seconds = 0.3e-9

    class Padded(Fake):
        """A machine whose oneDNN pads a conv's channels to blocks of 16: a 63-channel conv computes as a
        64-channel one and copies its input and output at ``seconds`` more per element."""

        def host(self):
            return {"isa": "avx2 fma avx512f"}

        def time_layer(self, network, batch, attrs, budget):
            c = network.inputs[0][1][0]
            if attrs.get("groups") != c or c not in (63, 64) or network.inputs[0][1][1:] != (28, 28):
                return super().time_layer(network, batch, attrs, budget)
            same = conv_net(64, 28, k=3, groups=64)           # the probe's compute is the padded 64 channels'
            runs, fresh = super().time_layer(same, batch, {**attrs, "out_channels": 64, "groups": 64}, budget)
            extra = 2 * 63 * 28 * 28 * seconds if c == 63 else 0.0       # 98,784 elements × 0.3 ns = 29.6 µs
            return [t + extra for t in runs], fresh

    spec = run(Padded())
    assert spec["padded_layout"]["block"] == 16
    assert spec["padded_layout"]["seconds"] == pytest.approx(seconds)
    assert "not a multiple of 16 at 0.30 ns per element" in spec["note"]
    assert "padded_layout" not in run(Fake())           # a host that does not say its ISA: no figure
    assert "padded_layout" not in run(Padded(gpu=True))


@pytest.mark.parametrize("isa, block", [("avx2 fma avx512f avx512_vnni", 16), ("avx2 fma", 8), ("", 0)])
def test_the_block_follows_the_isa(isa, block):
    from core.bridge.calibrate_suites import channel_block

    assert channel_block(isa) == block
