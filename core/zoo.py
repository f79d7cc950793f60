"""Built-in networks, written without torch, with torchvision's layer names.

Each builder returns a ``Network``; ``get(name)`` looks one up. ``mnist_cnn_conv2_128`` is made from ``mnist_cnn`` by
a what-if edit, so fc1's 18432 inputs come from shape propagation, not from a hand-written number.
"""

from __future__ import annotations

import difflib
from functools import lru_cache
from typing import Callable

from .errors import NetworkError
from .ir import Network, Node


class Builder:
    """Appends nodes in order; each new node reads the previous one unless ``inputs`` says otherwise."""

    def __init__(self, input_shape: tuple[int, ...], input_name: str = "x"):
        self.input_name = input_name
        self.input_shape = tuple(input_shape)
        self.nodes: list[Node] = []
        self.last = input_name

    def __call__(self, name: str, op: str, inputs=None, **attrs) -> str:
        self.nodes.append(Node.make(name, op, self.last if inputs is None else inputs, **attrs))
        self.last = name
        return name

    def build(self, name: str, description: str = "") -> Network:
        return Network.make(name, {self.input_name: self.input_shape}, self.nodes, description=description)


def mnist_cnn() -> Network:
    """The PyTorch-examples MNIST network (examples/mnist/main.py), names as torch.fx traces them."""
    b = Builder((1, 28, 28))
    b("conv1", "conv2d", out_channels=32, kernel_size=3)          # 1→32, 28→26
    b("relu", "relu")
    b("conv2", "conv2d", out_channels=64, kernel_size=3)          # 32→64, 26→24
    b("relu_1", "relu")
    b("max_pool2d", "max_pool2d", kernel_size=2)                  # 24→12
    b("dropout1", "dropout", p=0.25)
    b("flatten", "flatten", start_dim=1)                          # 64·12·12 = 9216
    b("fc1", "linear", out_features=128)
    b("relu_2", "relu")
    b("dropout2", "dropout", p=0.5)
    b("fc2", "linear", out_features=10)
    b("log_softmax", "log_softmax", dim=1)
    return b.build("mnist_cnn", "PyTorch examples MNIST CNN (1,199,882 params)")


def mnist_cnn_conv2_128() -> Network:
    from .edit import edit

    net = edit(mnist_cnn(), "conv2", "out_channels", 128).network
    return Network(net.name + "_conv2_128", net.inputs, net.nodes, net.outputs,
                   "MNIST CNN with conv2 widened to 128 channels (fc1 becomes 18432→128 by propagation)")


_VGG_CFGS = {
    "vgg11": [64, "M", 128, "M", 256, 256, "M", 512, 512, "M", 512, 512, "M"],
    "vgg13": [64, 64, "M", 128, 128, "M", 256, 256, "M", 512, 512, "M", 512, 512, "M"],
    "vgg16": [64, 64, "M", 128, 128, "M", 256, 256, 256, "M", 512, 512, 512, "M", 512, 512, 512, "M"],
    "vgg19": [64, 64, "M", 128, 128, "M", 256, 256, 256, 256, "M", 512, 512, 512, 512, "M", 512, 512, 512, 512, "M"],
}


def vgg(name: str, batch_norm: bool = False, num_classes: int = 1000) -> Network:
    """torchvision.models.vgg*: features.i / avgpool / classifier.i."""
    b = Builder((3, 224, 224))
    i = 0
    for v in _VGG_CFGS[name]:
        if v == "M":
            b(f"features.{i}", "max_pool2d", kernel_size=2, stride=2)
            i += 1
            continue
        b(f"features.{i}", "conv2d", out_channels=v, kernel_size=3, padding=1)
        i += 1
        if batch_norm:
            b(f"features.{i}", "batch_norm")
            i += 1
        b(f"features.{i}", "relu")
        i += 1
    b("avgpool", "adaptive_avg_pool2d", output_size=(7, 7))
    b("flatten", "flatten", start_dim=1)
    b("classifier.0", "linear", out_features=4096)
    b("classifier.1", "relu")
    b("classifier.2", "dropout")
    b("classifier.3", "linear", out_features=4096)
    b("classifier.4", "relu")
    b("classifier.5", "dropout")
    b("classifier.6", "linear", out_features=num_classes)
    full = name + ("_bn" if batch_norm else "")
    return b.build(full, f"torchvision {full}")


def alexnet(num_classes: int = 1000) -> Network:
    b = Builder((3, 224, 224))
    b("features.0", "conv2d", out_channels=64, kernel_size=11, stride=4, padding=2)
    b("features.1", "relu")
    b("features.2", "max_pool2d", kernel_size=3, stride=2)
    b("features.3", "conv2d", out_channels=192, kernel_size=5, padding=2)
    b("features.4", "relu")
    b("features.5", "max_pool2d", kernel_size=3, stride=2)
    b("features.6", "conv2d", out_channels=384, kernel_size=3, padding=1)
    b("features.7", "relu")
    b("features.8", "conv2d", out_channels=256, kernel_size=3, padding=1)
    b("features.9", "relu")
    b("features.10", "conv2d", out_channels=256, kernel_size=3, padding=1)
    b("features.11", "relu")
    b("features.12", "max_pool2d", kernel_size=3, stride=2)
    b("avgpool", "adaptive_avg_pool2d", output_size=(6, 6))
    b("flatten", "flatten", start_dim=1)
    b("classifier.0", "dropout")
    b("classifier.1", "linear", out_features=4096)
    b("classifier.2", "relu")
    b("classifier.3", "dropout")
    b("classifier.4", "linear", out_features=4096)
    b("classifier.5", "relu")
    b("classifier.6", "linear", out_features=num_classes)
    return b.build("alexnet", "torchvision alexnet")


_RESNETS = {  # block, layers, groups, width_per_group
    "resnet18": ("basic", (2, 2, 2, 2), 1, 64),
    "resnet34": ("basic", (3, 4, 6, 3), 1, 64),
    "resnet50": ("bottleneck", (3, 4, 6, 3), 1, 64),
    "resnet101": ("bottleneck", (3, 4, 23, 3), 1, 64),
    "resnet152": ("bottleneck", (3, 8, 36, 3), 1, 64),
    "resnext50_32x4d": ("bottleneck", (3, 4, 6, 3), 32, 4),
    "wide_resnet50_2": ("bottleneck", (3, 4, 6, 3), 1, 128),
}


def resnet(name: str, num_classes: int = 1000) -> Network:
    """torchvision.models.resnet*: conv1 / bn1 / relu / maxpool / layerK.i.* / avgpool / fc."""
    block, layers, groups, width_per_group = _RESNETS[name]
    expansion = 1 if block == "basic" else 4
    b = Builder((3, 224, 224))
    b("conv1", "conv2d", out_channels=64, kernel_size=7, stride=2, padding=3, bias=False)
    b("bn1", "batch_norm")
    b("relu", "relu")
    b("maxpool", "max_pool2d", kernel_size=3, stride=2, padding=1)
    in_planes = 64
    for li, (planes, count) in enumerate(zip((64, 128, 256, 512), layers), start=1):
        for bi in range(count):
            stride = 2 if (li > 1 and bi == 0) else 1
            p = f"layer{li}.{bi}"
            identity = b.last
            if block == "basic":
                b(f"{p}.conv1", "conv2d", out_channels=planes, kernel_size=3, stride=stride, padding=1, bias=False)
                b(f"{p}.bn1", "batch_norm")
                b(f"{p}.relu", "relu")
                b(f"{p}.conv2", "conv2d", out_channels=planes, kernel_size=3, padding=1, bias=False)
                b(f"{p}.bn2", "batch_norm")
            else:
                width = int(planes * (width_per_group / 64.0)) * groups
                b(f"{p}.conv1", "conv2d", out_channels=width, kernel_size=1, bias=False)
                b(f"{p}.bn1", "batch_norm")
                b(f"{p}.relu", "relu")
                b(f"{p}.conv2", "conv2d", out_channels=width, kernel_size=3, stride=stride, padding=1, groups=groups,
                  bias=False)
                b(f"{p}.bn2", "batch_norm")
                b(f"{p}.relu_1", "relu")
                b(f"{p}.conv3", "conv2d", out_channels=planes * expansion, kernel_size=1, bias=False)
                b(f"{p}.bn3", "batch_norm")
            main = b.last
            if stride != 1 or in_planes != planes * expansion:
                b(f"{p}.downsample.0", "conv2d", identity, out_channels=planes * expansion, kernel_size=1,
                  stride=stride, bias=False)
                identity = b(f"{p}.downsample.1", "batch_norm")
            b(f"{p}.add", "add", (main, identity))
            b(f"{p}.relu_1" if block == "basic" else f"{p}.relu_2", "relu")   # torch.fx names the reused ReLU so
            in_planes = planes * expansion
    b("avgpool", "adaptive_avg_pool2d", output_size=(1, 1))
    b("flatten", "flatten", start_dim=1)
    b("fc", "linear", out_features=num_classes)
    return b.build(name, f"torchvision {name}")


BUILTINS: dict[str, Callable[[], Network]] = {
    "mnist_cnn": mnist_cnn,
    "mnist_cnn_conv2_128": mnist_cnn_conv2_128,
    **{k: (lambda k=k: vgg(k)) for k in _VGG_CFGS},
    **{f"{k}_bn": (lambda k=k: vgg(k, batch_norm=True)) for k in _VGG_CFGS},
    "alexnet": alexnet,
    **{k: (lambda k=k: resnet(k)) for k in _RESNETS},
}


def names() -> list[str]:
    return list(BUILTINS)


@lru_cache(maxsize=None)
def get(name: str) -> Network:
    key = name.strip().lower()
    if key not in BUILTINS:
        close = difflib.get_close_matches(key, BUILTINS, n=3)
        hint = f"; did you mean {', '.join(close)}?" if close else f"; built-in: {', '.join(BUILTINS)}"
        raise NetworkError(f"unknown network '{name}'{hint}", field="model", value=name)
    return BUILTINS[key]()
