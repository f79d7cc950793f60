"""IR → PyTorch source → nn.Module → IR gives the same network: every layer's op, output shape, parameters, MACs,
FLOPs and backward FLOPs, and the same totals. (Names differ: the source uses Python identifiers.)"""

import warnings

import pytest
import torch

import core
from core.bridge.fx_import import from_module
from core.bridge.to_torch import to_source

warnings.filterwarnings("ignore", category=UserWarning)


def signature(report):
    return [(l.op, l.output_shape, l.params, l.buffers, l.macs, l.flops, l.backward_flops, l.bytes)
            for l in report.layers]


@pytest.mark.parametrize("name", ["mnist_cnn", "mnist_cnn_conv2_128", "resnet18", "mobilenet_v3_small",
                                  "densenet121", "vit_b_32", "shufflenet_v2_x0_5"])
def test_ir_source_module_ir(name):
    net = core.load_network(name)
    scope = {}
    with torch.device("meta"):                  # no weights allocated
        exec(to_source(net), scope)
    back = from_module(scope["model"], net.inputs[0][1], name=name)
    assert back.unsupported == ()
    a, b = core.analyze(net, batch_size=2), core.analyze(back.network, batch_size=2)
    assert signature(a) == signature(b)
    named = ("activation_peak_at", "training_peak_at")          # layer names differ; where they fall does not
    assert {k: v for k, v in a.totals.items() if k not in named} == \
        {k: v for k, v in b.totals.items() if k not in named}
    assert a.timeline.peak_step == b.timeline.peak_step


def test_an_edited_network_survives_the_round_trip():
    net = core.edit(core.load_network("resnet18"), "layer2.0.conv1", "out_channels", 192).network
    scope = {}
    with torch.device("meta"):
        exec(to_source(net), scope)
    back = from_module(scope["model"], (3, 224, 224)).network
    assert signature(core.analyze(net)) == signature(core.analyze(back))
