"""Built-in networks: the PyTorch-examples MNIST pair, written here, and every torchvision classifier, converted
once from PyTorch by ``scripts/generate_zoo.py`` and shipped as IR data in ``core/zoo_data/`` (one source of truth
per network; ``tests/test_zoo_data.py`` keeps it in sync). Loading one needs no torch.

``mnist_cnn_conv2_128`` is made from ``mnist_cnn`` by a what-if edit, so fc1's 18432 inputs come from shape
propagation, not from a hand-written number.
"""

from __future__ import annotations

import difflib
import gzip
import json
from functools import lru_cache
from pathlib import Path
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


DATA = Path(__file__).resolve().parent / "zoo_data"


def _load_data(name: str) -> Network:
    return Network.from_json(gzip.decompress((DATA / f"{name}.json.gz").read_bytes()).decode("utf-8"))


@lru_cache(maxsize=1)
def index() -> dict:
    """torchvision's classifiers shipped as IR data (scripts/generate_zoo.py): family, input shape, published
    params and G multiply-adds, and the importer's warnings."""
    return json.loads((DATA / "index.json").read_text(encoding="utf-8"))


# The MNIST pair first, then torchvision's classifiers, VGG and ResNet leading (the course networks).
_FIRST = ("vgg11", "vgg13", "vgg16", "vgg19", "resnet18", "resnet50", "alexnet", "googlenet")
BUILTINS: dict[str, Callable[[], Network]] = {
    "mnist_cnn": mnist_cnn,
    "mnist_cnn_conv2_128": mnist_cnn_conv2_128,
    **{k: (lambda k=k: _load_data(k)) for k in _FIRST},
    **{k: (lambda k=k: _load_data(k)) for k in sorted(index()) if k not in _FIRST},
}


def names() -> list[str]:
    return list(BUILTINS)


def family(name: str) -> str:
    return "MNIST" if name.startswith("mnist") else index().get(name, {}).get("family", "custom")


@lru_cache(maxsize=None)
def get(name: str) -> Network:
    key = name.strip().lower()
    if key not in BUILTINS:
        close = difflib.get_close_matches(key, BUILTINS, n=3)
        hint = f"; did you mean {', '.join(close)}?" if close else f"; built-in: {', '.join(BUILTINS)}"
        raise NetworkError(f"unknown network '{name}'{hint}", field="model", value=name)
    return BUILTINS[key]()
