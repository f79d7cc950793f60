"""The built-in networks against the real thing.

torchvision networks: parameters against the model itself (sum of ``p.numel()``, built on the meta device) and
against the weights' published ``num_params``; MACs within 0.5 % of the published ``_ops`` (GMACs) and exactly
equal to FlopCounterMode / 2; every layer named like a torchvision module (conv, BatchNorm, linear, pools, …) has
that module's output shape. Small networks run on a real CPU tensor, the rest on meta tensors.

MNIST: the PyTorch-examples Net written out here, compared layer by layer through torch.fx (the IR uses fx's names).
"""

from __future__ import annotations

from functools import lru_cache

import pytest
import torch
import torch.nn.functional as F
import torchvision
from torch import nn
from torch.fx import symbolic_trace
from torch.fx.passes.shape_prop import ShapeProp

import core
from torch_ref import BATCH, flops_of, fwd_bwd_flops, mac_layer_flops, n_params

# The classic CNNs of the courses, checked layer by layer here (names, shapes, FlopCounterMode per layer);
# tests/test_zoo_data.py checks every one of torchvision's classifiers as a whole.
TORCHVISION = ["alexnet", "vgg11", "vgg13", "vgg16", "vgg19", "vgg11_bn", "vgg16_bn", "resnet18", "resnet34",
               "resnet50", "resnet101", "resnet152", "resnext50_32x4d", "wide_resnet50_2", "googlenet", "squeezenet1_0"]
REAL_CPU = {"alexnet", "resnet18", "vgg11"}          # small enough for a real forward pass on 2 cores
# IR ops that are torchvision modules of these types, under the same name
MODULE_OPS = {"conv2d": nn.Conv2d, "batch_norm": nn.BatchNorm2d, "linear": nn.Linear, "max_pool2d": nn.MaxPool2d,
              "adaptive_avg_pool2d": nn.AdaptiveAvgPool2d}


@lru_cache(maxsize=None)
def meta_model(name: str) -> nn.Module:
    from core.bridge.torchvision_zoo import build

    return build(name)          # as the DEFAULT weights build it (GoogLeNet without its auxiliary heads)


def published(name: str) -> dict:
    return torchvision.models.get_model_weights(name).DEFAULT.meta


def test_the_course_networks_are_built_in():
    assert set(TORCHVISION) <= set(core.builtin_names())


@pytest.mark.parametrize("name", TORCHVISION)
def test_params(name):
    report = core.analyze(name)
    model = meta_model(name)
    assert report.totals["params"] == n_params(model) == published(name)["num_params"]
    assert report.totals["trainable_params"] == n_params(model)
    running = sum(b.numel() for n, b in model.named_buffers() if not n.endswith("num_batches_tracked"))
    assert report.totals["buffers"] == running


@pytest.mark.parametrize("name", TORCHVISION)
def test_macs_vs_published(name):
    macs = core.analyze(name).totals["macs"]
    ref = published(name)["_ops"] * 1e9        # torchvision publishes GMACs (multiply-adds), 3 decimals
    assert abs(macs - ref) <= 0.005 * ref, f"{macs:,} vs {ref:,.0f}"


@pytest.mark.parametrize("name", TORCHVISION)
def test_layer_shapes_and_flopcounter(name):
    report = core.analyze(name, batch_size=BATCH)
    if name in REAL_CPU:
        torch.manual_seed(0)
        model = torchvision.models.get_model(name, weights=None).eval()
        x = torch.randn(BATCH, *report.input_shape)
    else:
        model = meta_model(name).eval()
        x = torch.empty(BATCH, *report.input_shape, device="meta")
    modules = dict(model.named_modules())
    seen: dict[str, list[tuple]] = {}
    hooks = [m.register_forward_hook(lambda mod, args, out, n=n: seen.setdefault(n, []).append(tuple(out.shape)))
             for n, m in modules.items() if n and not list(m.children())]
    try:
        with torch.no_grad():
            fwd, out = flops_of(lambda: model(x))
    finally:
        for h in hooks:
            h.remove()
    # FlopCounterMode counts exactly the conv and linear multiply-adds, 2 FLOPs each (grouped-conv forward is right)
    assert fwd == 2 * report.totals["macs"]
    assert report.layers[-1].output_shape == tuple(out.shape)

    # every IR conv / BN / linear / pool layer is the torchvision module of the same name, and vice versa
    for op, cls in MODULE_OPS.items():
        ir_names = {l.name for l in report.layers if l.op == op}
        tv_names = {n for n, m in modules.items() if type(m) is cls}
        assert ir_names == tv_names, op
    compared = 0
    for layer in report.layers:
        if layer.name in seen:
            # a reused module (ResNet blocks call one ReLU 2-3 times) is compared on its first call, which the IR
            # names after the module; fx-style suffixes (relu_1, …) name the later calls
            assert layer.output_shape == seen[layer.name][0], layer.name
            compared += 1
    assert compared >= sum(1 for l in report.layers if l.op in MODULE_OPS)


# -- MNIST -------------------------------------------------------------------------------------------------------

class Net(nn.Module):
    """pytorch/examples mnist/main.py, with conv2's width a parameter (64 in the example)."""

    def __init__(self, conv2_out: int = 64):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 32, 3, 1)
        self.conv2 = nn.Conv2d(32, conv2_out, 3, 1)
        self.dropout1 = nn.Dropout(0.25)
        self.dropout2 = nn.Dropout(0.5)
        self.fc1 = nn.Linear(conv2_out * 144, 128)        # 9216 = 64·12·12 in the example
        self.fc2 = nn.Linear(128, 10)

    def forward(self, x):
        x = self.conv1(x)
        x = F.relu(x)
        x = self.conv2(x)
        x = F.relu(x)
        x = F.max_pool2d(x, 2)
        x = self.dropout1(x)
        x = torch.flatten(x, 1)
        x = self.fc1(x)
        x = F.relu(x)
        x = self.dropout2(x)
        x = self.fc2(x)
        output = F.log_softmax(x, dim=1)
        return output


# params by hand: conv1 32·1·9+32 = 320; conv2 64·32·9+64 = 18,496; fc1 9216·128+128 = 1,179,776;
# fc2 128·10+10 = 1,290 → 1,199,882.  conv2 at 128: conv2 128·32·9+128 = 36,992; fc1 18432·128+128 = 2,359,424
# → 320 + 36,992 + 2,359,424 + 1,290 = 2,398,026.
# MACs by hand (batch 1): conv1 32·26·26·9 = 194,688; conv2 64·24·24·32·9 = 10,616,832; fc1 1,179,648; fc2 1,280
# → 11,992,448.  At 128: conv2 21,233,664, fc1 2,359,296 → 23,788,928.
MNIST = [("mnist_cnn", 64, 1_199_882, 11_992_448), ("mnist_cnn_conv2_128", 128, 2_398_026, 23_788_928)]


@pytest.mark.parametrize("name,conv2_out,params,macs", MNIST, ids=[m[0] for m in MNIST])
def test_mnist(name, conv2_out, params, macs):
    report = core.analyze(name, batch_size=BATCH)
    torch.manual_seed(0)
    net = Net(conv2_out)
    x = torch.randn(BATCH, 1, 28, 28)

    # every node's shape, by torch.fx's node names (the IR's names for the functional calls too)
    gm = symbolic_trace(net)
    ShapeProp(gm).propagate(x)
    fx_shapes = {n.name: tuple(n.meta["tensor_meta"].shape) for n in gm.graph.nodes
                 if n.op not in ("placeholder", "output")}
    assert {l.name: l.output_shape for l in report.layers} == fx_shapes

    assert report.totals["params"] == n_params(net) == params
    assert report.totals["macs"] == BATCH * macs
    fwd_ref, bwd_ref = fwd_bwd_flops(net, [x], lambda y: y)
    fwd, bwd = mac_layer_flops(report.compiled.network, report)
    assert 2 * report.totals["macs"] == fwd == fwd_ref
    assert bwd == bwd_ref          # conv1 reads the raw input: weight gradient only
    assert report.layer("conv1").backward_input_flops == 0


@pytest.mark.parametrize("name, expected", [("convnext_tiny", 18), ("mobilenet_v2", 0), ("efficientnet_b0", 0),
                                            ("mobilenet_v3_small", 0)])
def test_channels_last_inputs_are_the_tensors_pytorch_makes(name, expected):
    """``gpu_model.channels_last_inputs``: the depthwise convs it finds with channels-last input are, in network
    order, those whose input tensor PyTorch lays out channels-last (strides of NHWC, not contiguous NCHW) in a real
    forward pass: all 18 of ConvNeXt-T's (each after its permutes), none of the NCHW networks'."""
    from core import gpu_model, zoo
    from core.graph import compile_network

    compiled = compile_network(zoo.get(name))
    last = gpu_model.channels_last_inputs(compiled)
    ours = [n.name in last for n in compiled.nodes if gpu_model.depthwise(n.rule.work_class(n.ctx))]
    model = getattr(torchvision.models, name)(weights=None).eval()
    seen: list[bool] = []

    def hook(module, inputs, _out):
        if isinstance(module, nn.Conv2d) and module.groups == module.in_channels > 1:
            x = inputs[0]
            seen.append(x.is_contiguous(memory_format=torch.channels_last) and not x.is_contiguous())

    for m in model.modules():
        m.register_forward_hook(hook)
    with torch.no_grad():
        model(torch.randn(2, *zoo.get(name).inputs[0][1]))
    assert ours == seen and sum(seen) == expected
