"""The kernel calls the time models charge a per-call overhead for, against PyTorch's own dispatch.

An eager forward pass (``model.eval()``, ``torch.no_grad()``) dispatches one top-level ATen op per call; the ops that
are views or no-ops in eval (``permute``, ``flatten``, ``select``, ``dropout`` …) launch no kernel. The model's
forward calls (``core.work.network_work``: a layer's ``forward.calls``) must be that count, network by network.
The models are built on the meta device (torchvision's DEFAULT architecture, no weights): the dispatched ops are the
same as on a real tensor and nothing is computed. A view op that cannot be a view copies (ShuffleNet's
``transpose(…).contiguous()``, a ``reshape`` of a sliced tensor: the op runs ``aten::clone``), one kernel: counted.
Attention (its kernels depend on the device: PyTorch's fused path) is not covered here; those networks are left
out, not asserted.
"""

from __future__ import annotations

import collections

import pytest
import torch
from torch.profiler import ProfilerActivity, profile

from core import zoo
from core.graph import compile_network
from core.work import network_work

# top-level ATen ops that launch no kernel: views, and dropout in eval mode (it returns its input); except where
# one copies (``copies``)
NO_KERNEL = {"aten::permute", "aten::flatten", "aten::view", "aten::reshape", "aten::expand", "aten::select",
             "aten::transpose", "aten::unsqueeze", "aten::squeeze", "aten::t", "aten::dropout", "aten::dropout_",
             "aten::contiguous", "aten::chunk", "aten::swapaxes"}
COPY = {"aten::clone", "aten::copy_"}
NETWORKS = ["resnet50", "efficientnet_b0", "mobilenet_v3_small", "densenet121", "googlenet", "convnext_tiny",
            "shufflenet_v2_x1_0"]


def copies(ev) -> bool:
    """Whether a profiled op runs a copy kernel below it (a reshape or contiguous whose input's strides allow no
    view)."""
    stack = list(ev.cpu_children)
    while stack:
        child = stack.pop()
        if child.name in COPY:
            return True
        stack.extend(child.cpu_children)
    return False


def torch_calls(name: str) -> collections.Counter:
    from core.bridge.torchvision_zoo import build

    model = build(name).eval()
    x = torch.empty(1, 3, 224, 224, device="meta")
    with torch.no_grad(), profile(activities=[ProfilerActivity.CPU]) as prof:
        model(x)
    return collections.Counter(ev.name for ev in prof.events() if ev.cpu_parent is None and ev.name.startswith("aten::")
                               and (ev.name not in NO_KERNEL or copies(ev)))


def model_calls(name: str) -> collections.Counter:
    calls = collections.Counter()
    for lw in network_work(compile_network(zoo.get(name)), False).layers:
        calls[lw.node.op] += lw.forward.calls
    return calls


@pytest.mark.parametrize("name", NETWORKS)
def test_forward_calls_are_the_ops_pytorch_dispatches(name):
    ours, theirs = model_calls(name), torch_calls(name)
    assert sum(ours.values()) == sum(theirs.values()), (dict(ours), dict(theirs))


def test_a_layer_scale_is_no_call_of_its_own():
    """ConvNeXt-T's 18 blocks (3 + 3 + 9 + 3) each scale their output by an ``nn.Parameter``: reading it dispatches
    nothing, the ``mul`` that uses it is the call; its gradient (a sum over the batch) is a backward kernel."""
    layers = [lw for lw in network_work(compile_network(zoo.get("convnext_tiny")), False).layers
              if lw.node.op == "parameter"]
    assert len(layers) == 3 + 3 + 9 + 3
    assert all(lw.forward.calls == 0 for lw in layers)
    assert all(lw.backward.calls == 1 for lw in layers)
    assert torch_calls("convnext_tiny")["aten::mul"] == len(layers)


def test_a_channel_shuffle_copies_where_pytorch_does():
    """ShuffleNet V2 x1.0's 16 blocks each shuffle channels as ``x.view(b, 2, c // 2, h, w).transpose(1, 2)
    .contiguous().view(b, c, h, w)``: the ``contiguous`` of the transposed view is a copy (PyTorch: an
    ``aten::contiguous`` that runs ``aten::clone``), the views are not. The model's forward has one ``contiguous``
    call per block, and its backward one (PyTorch's copy there is the first view's backward, a reshape of the
    transposed gradient)."""
    layers = [lw for lw in network_work(compile_network(zoo.get("shufflenet_v2_x1_0")), False).layers
              if lw.node.op == "contiguous"]
    assert len(layers) == 16
    assert all(lw.forward.calls == 1 and lw.backward.calls == 1 for lw in layers)
    # the first block's (stage 2, 116 channels at 28 x 28 for a 224 x 224 input): reads and writes every element,
    # 2 * 116 * 28 * 28 = 181,888 elements a sample
    assert layers[0].forward.act == 2 * 116 * 28 * 28 == 181_888
    assert torch_calls("shufflenet_v2_x1_0")["aten::contiguous"] == 16


class _Strided(torch.nn.Module):
    """Views that cannot be views, on a module with real weights (imported under fake tensors, not meta)."""

    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 8, 3, padding=1)
        self.flat = torch.nn.Flatten()

    def forward(self, x):
        y = self.conv(x)
        a = y.transpose(2, 3).reshape(y.shape[0], -1)            # copies
        b = y.permute(0, 2, 3, 1).flatten(1)                     # copies
        c = self.flat(y.transpose(1, 2))                         # copies (nn.Flatten)
        d = y.reshape(y.shape[0], -1)                            # a view
        e = y.contiguous()                                       # the tensor itself
        f = y.contiguous(memory_format=torch.channels_last)      # copies
        return a + b + c + d + e.flatten(1) + f.flatten(1)       # f.flatten(1) copies again (NHWC → C, H, W order)


def test_copies_on_a_module_with_weights():
    """The importer finds the copies on fake tensors too (a CPU module with real weights): one ``contiguous`` node
    per call that copies, as many as the clones PyTorch's profiler records in the forward (5: a, b, c, f and
    f.flatten), none for the view and the contiguous tensor's ``contiguous()``; the one before ``nn.Flatten`` is
    named after the module."""
    from core.bridge.fx_import import from_module

    module = _Strided().eval()
    net = from_module(module, (3, 8, 8)).network
    made = [n for n in net.nodes if n.op == "contiguous"]
    with torch.no_grad(), profile(activities=[ProfilerActivity.CPU]) as prof:
        module(torch.randn(2, 3, 8, 8))
    clones = [ev for ev in prof.events() if ev.cpu_parent is None and ev.name in NO_KERNEL and copies(ev)]
    assert len(made) == len(clones) == 5, ([n.name for n in made], [ev.name for ev in clones])
    assert "flat.contiguous" in {n.name for n in made}
