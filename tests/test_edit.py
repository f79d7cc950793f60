"""What-if edits: ``core.edit(network, node, field, value)`` → ``EditResult(network, changed, reshaped)``.

Input channels are never stored, so dependents follow by shape propagation; channels tied by residual adds (and
depthwise convs) form coupled groups that an ``out_channels`` edit changes together."""

from __future__ import annotations

import pytest

import core
from core import Network, NetworkError, Node, analyze, edit


def test_mnist_conv2_to_128():
    net = core.load_network("mnist_cnn")
    res = edit(net, "conv2", "out_channels", 128)
    assert isinstance(res, core.EditResult)
    assert res.changed == ("conv2",)
    assert not res.coupled
    # relu_1, the pool, dropout and flatten change shape; fc1 keeps its 128 outputs but gains inputs
    assert set(res.reshaped) == {"relu_1", "max_pool2d", "dropout1", "flatten", "fc1"}
    r = analyze(res.network)
    assert r.layer("flatten").output_shape == (1, 18_432)        # 128·12·12
    assert r.layer("fc1").params == 18_432 * 128 + 128           # = 2,359,296 + 128
    assert r.layer("fc1").params == 2_359_424
    assert r.layer("fc1").macs == 2_359_296                      # 18,432 × 128
    assert r.layer("conv2").params == 36_992                     # 128·32·3·3 + 128
    assert res.network.node("conv2").get("out_channels") == 128
    assert res.network.node("fc1").get("out_features") == 128    # untouched: only in_features follow


def test_builtin_conv2_128_is_the_edit():
    edited = edit(core.load_network("mnist_cnn"), "conv2", "out_channels", 128).network
    builtin = core.load_network("mnist_cnn_conv2_128")
    assert builtin.nodes == edited.nodes
    assert analyze(builtin).totals["params"] == 2_398_026        # 320 + 36,992 + 2,359,424 + 1,290


# ResNet-18: the stem conv1 → bn1 → relu → maxpool is layer1.0's identity, so stem conv1 and layer1.0.conv2 meet at
# layer1.0.add; layer1.0's output is layer1.1's identity, so layer1.1.conv2 joins at layer1.1.add. layer2.0 has a
# downsample (stride 2, 64 → 128), so nothing after layer1 is tied to this group; layerK.i.conv1 outputs are free.
RESNET18_LAYER1_GROUP = {"conv1", "layer1.0.conv2", "layer1.1.conv2"}


@pytest.mark.parametrize("node", sorted(RESNET18_LAYER1_GROUP))
def test_resnet18_layer1_coupled_group(node):
    net = core.load_network("resnet18")
    res = edit(net, node, "out_channels", 128)
    assert set(res.changed) == RESNET18_LAYER1_GROUP
    assert len(res.changed) == 3 and res.coupled
    assert res.changed[0] == node
    for name in RESNET18_LAYER1_GROUP:
        assert res.network.node(name).get("out_channels") == 128
    for name in ("layer1.0.conv1", "layer1.1.conv1", "layer2.0.conv1", "layer2.0.downsample.0"):
        assert res.network.node(name).get("out_channels") == net.node(name).get("out_channels")
    # consequences: BNs and adds of the group widen; convs reading the group gain input channels
    assert {"bn1", "maxpool", "layer1.0.bn2", "layer1.0.add", "layer1.1.add", "layer1.0.conv1",
            "layer2.0.conv1", "layer2.0.downsample.0"} <= set(res.reshaped)
    r = analyze(res.network)                                     # still compiles
    assert r.layer("conv1").params == 128 * 3 * 7 * 7            # 18,816
    assert r.layer("layer1.0.conv1").params == 64 * 128 * 9      # 73,728: 128 inputs now, 64 outputs
    assert r.layer("layer1.0.conv2").params == 128 * 64 * 9      # 73,728
    assert r.layer("layer2.0.downsample.0").params == 128 * 128  # 16,384
    assert r.layer("layer1.1.add").output_shape == (1, 128, 56, 56)
    assert r.layer("layer2.0.add").output_shape == (1, 128, 28, 28)


def test_resnet18_channel_groups():
    groups = core.channel_groups(core.load_network("resnet18"))
    stem = groups["conv1"]
    assert {n for n, g in groups.items() if g == stem and n.endswith(("conv1", "conv2", "downsample.0"))} == \
        RESNET18_LAYER1_GROUP
    assert groups["layer1.0.conv1"] != stem
    assert groups["layer2.0.conv2"] == groups["layer2.0.downsample.0"] == groups["layer2.1.conv2"]


def test_resnet18_unrelated_conv_is_alone():
    res = edit(core.load_network("resnet18"), "layer1.0.conv1", "out_channels", 32)
    assert res.changed == ("layer1.0.conv1",)
    r = analyze(res.network)
    assert r.layer("layer1.0.conv2").params == 64 * 32 * 9      # 18,432


def test_resnet50_layer1_group_goes_through_downsample():
    # layer1.0 of ResNet-50 has a downsample (64 → 256 channels), so the stem is not tied; the group is the three
    # conv3s of layer1 and layer1.0.downsample.0
    res = edit(core.load_network("resnet50"), "layer1.1.conv3", "out_channels", 512)
    assert set(res.changed) == {"layer1.0.conv3", "layer1.0.downsample.0", "layer1.1.conv3", "layer1.2.conv3"}
    r = analyze(res.network)
    assert r.layer("layer2.0.conv1").params == 128 * 512        # 1×1 conv, 512 → 128, no bias: 65,536


def _mobile() -> Network:
    # pw1 1×1 (4 → 8) → dw 3×3 depthwise (groups 8) → pw2 1×1 (8 → 16)
    return Network.make("mobile", {"x": (4, 8, 8)}, [
        Node.make("pw1", "conv2d", "x", out_channels=8, kernel_size=1),
        Node.make("dw", "conv2d", "pw1", out_channels=8, kernel_size=3, padding=1, groups=8),
        Node.make("pw2", "conv2d", "dw", out_channels=16, kernel_size=1),
    ])


def test_depthwise_follows_its_input():
    res = edit(_mobile(), "pw1", "out_channels", 12)
    assert set(res.changed) == {"pw1", "dw"}
    dw = res.network.node("dw")
    assert (dw.get("groups"), dw.get("out_channels")) == (12, 12)
    r = analyze(res.network)
    assert r.layer("dw").params == 12 * 1 * 9 + 12               # 120
    assert r.layer("pw2").params == 16 * 12 + 16                 # 208


@pytest.mark.parametrize("model, node, field, value, fragments", [
    ("mnist_cnn", "conv2", "stride", 0, ["conv2", "stride", "0"]),
    ("mnist_cnn", "conv2", "kernel_size", 27, ["conv2", "27×27", "26×26"]),   # conv1 leaves 28 − 3 + 1 = 26
    ("mnist_cnn", "conv2", "out_channels", 0, ["conv2", "out_channels", "0"]),
    ("mnist_cnn", "conv2", "kernal_size", 3, ["conv2", "kernal_size", "kernel_size"]),
    ("mnist_cnn", "conv9", "out_channels", 8, ["conv9"]),
    ("mnist_cnn", "relu", "out_channels", 8, ["relu", "out_channels"]),
    ("mnist_cnn", "conv1", "out_channels", 10 ** 12, ["conv1", "out_channels", "absurdly large"]),
    ("resnet18", "layer1.0.conv2", "out_channels", -1, ["layer1.0.conv2", "out_channels", "-1"]),
    ("resnet18", "maxpool", "kernel_size", 120, ["maxpool", "120", "114"]),   # conv1 gives 112; + 2·1 padding
    ("resnet18", "layer4.1.conv2", "kernel_size", 11, ["layer4.1.conv2", "11×11", "9×9"]),  # 7 + 2·1 = 9
])
def test_invalid_edit_raises_and_keeps_original(model, node, field, value, fragments):
    net = core.load_network(model)
    before = net.to_json()
    totals_before = analyze(net).totals
    with pytest.raises(NetworkError) as info:
        edit(net, node, field, value)
    assert type(info.value) is NetworkError
    msg = str(info.value)
    assert all(f in msg for f in fragments), msg
    assert net.to_json() == before
    assert core.load_network(model) == net
    assert analyze(net).totals == totals_before
