"""A built-in network asked for an input size its layers cannot take says so: the network, the size it was built
for and the size asked, before the layer's own reason (which alone — "cannot view 37,632 elements as [768, 196]" —
does not tell a student that the input size is the problem)."""

import pytest

import core
from core.errors import NetworkError


def test_vit_at_another_size_names_the_network_and_both_sizes():
    with pytest.raises(NetworkError) as e:
        core.analyze("vit_b_16", input_shape=(3, 112, 112))
    msg = str(e.value)
    assert "vit_b_16 was built for a 3×224×224 input and does not run at 3×112×112" in msg
    # the layer's own reason stays: 768 channels × 7 × 7 patches = 37,632 elements, not 768 × 196 = 150,528
    assert "cannot view 37,632 elements per sample [768, 7, 7] as [768, 196] (150,528)" in msg
    assert e.value.node == "reshape" and e.value.field == "shape" and "\n" not in msg


def test_a_too_small_input_names_the_layer_and_the_sizes():
    with pytest.raises(NetworkError) as e:
        core.analyze("mnist_cnn", input_shape=(1, 2, 2))
    assert str(e.value).startswith("conv1, field 'kernel_size'")
    assert "mnist_cnn was built for a 1×28×28 input and does not run at 1×2×2" in str(e.value)


def test_the_networks_own_size_and_sizes_it_takes_are_unchanged():
    assert core.analyze("resnet18", input_shape=(3, 224, 224)).totals == core.analyze("resnet18").totals
    # ResNet-18 at 448×448: every conv's output is twice as wide and high (448 / 32 = 14 at the end, every stride-2
    # step even), so 4× the MACs per conv; the fc layer (512 × 1000) is the same after the global pool
    full = core.analyze("resnet18").totals["macs"]
    big = core.analyze("resnet18", input_shape=(3, 448, 448)).totals["macs"]
    fc = 512 * 1000
    assert big == (full - fc) * 4 + fc


def test_a_network_object_keeps_the_layers_own_message():
    net = core.api.load_network("mnist_cnn")
    with pytest.raises(NetworkError) as e:
        core.analyze(net, input_shape=(1, 2, 2))
    assert "was built for" not in str(e.value) and "kernel 3×3 is larger" in str(e.value)
