"""Shared PyTorch reference helpers for the engine-vs-torch tests (the tests need torch; ``core`` itself does not).

Everything here measures torch: parameter counts, FlopCounterMode totals, output shapes. Nothing here reads the
engine's answers, so the tests compare two independent computations.
"""

from __future__ import annotations

from typing import Callable, Iterable

import torch
from torch import nn
from torch.utils.flop_counter import FlopCounterMode

import core

BATCH = 2
MAC_OPS = ("conv2d", "conv_transpose2d", "linear", "matmul")
BIAS_OPS = ("conv2d", "conv_transpose2d", "linear")


# -- torch side --------------------------------------------------------------------------------------------------

def n_params(module: nn.Module) -> int:
    """Parameters as torch counts them: trainable and frozen, buffers excluded."""
    return sum(p.numel() for p in module.parameters())


def flops_of(fn: Callable[[], object]) -> tuple[int, object]:
    """FlopCounterMode's total for one call of ``fn`` and its result."""
    with FlopCounterMode(display=False) as counter:
        result = fn()
    return counter.get_total_flops(), result


def fwd_bwd_flops(module: nn.Module, inputs: Iterable[torch.Tensor], output: Callable[[object], torch.Tensor]
                  ) -> tuple[int, int]:
    """FlopCounterMode totals of ``module(*inputs)`` and of the backward of ``output(result).sum()``; the backward is
    0 when nothing upstream requires a gradient (torch then has no backward pass to run)."""
    fwd, result = flops_of(lambda: module(*inputs))
    y = output(result)
    if not y.requires_grad:
        return fwd, 0
    bwd, _ = flops_of(lambda: y.sum().backward())
    return fwd, bwd


class SplitGroupConv(nn.Module):
    """A grouped Conv2d / ConvTranspose2d computed as ``groups`` ungrouped convs (C_in/g → C_out/g) and a cat.

    Why: FlopCounterMode's convolution_backward formula uses the full C_in for the weight gradient of a grouped conv,
    so it over-counts that gradient by a factor of ``groups`` (a grouped ConvTranspose2d likewise). The same
    arithmetic done group by group is counted correctly, so it is the reference for grouped convs. Forward results
    and parameter counts equal the grouped module's (the tests assert the parameter counts).
    """

    def __init__(self, conv: nn.Module):
        super().__init__()
        g = conv.groups
        self.groups = g
        self.cin_g = conv.in_channels // g
        kw = dict(kernel_size=conv.kernel_size, stride=conv.stride, padding=conv.padding, dilation=conv.dilation,
                  bias=conv.bias is not None)
        if isinstance(conv, nn.ConvTranspose2d):
            kw["output_padding"] = conv.output_padding
            make = nn.ConvTranspose2d
        else:
            kw["padding_mode"] = conv.padding_mode
            make = nn.Conv2d
        self.parts = nn.ModuleList(make(self.cin_g, conv.out_channels // g, **kw) for _ in range(g))

    def forward(self, x):
        c = self.cin_g
        return torch.cat([m(x[:, i * c:(i + 1) * c]) for i, m in enumerate(self.parts)], dim=1)


def split_grouped(module: nn.Module) -> nn.Module:
    """``module`` with every grouped conv replaced (in place) by a ``SplitGroupConv``."""
    for name, child in list(module.named_children()):
        if isinstance(child, (nn.Conv2d, nn.ConvTranspose2d)) and child.groups > 1:
            setattr(module, name, SplitGroupConv(child))
        else:
            split_grouped(child)
    return module


class Seq(nn.Module):
    """Named modules applied in order; ``forward`` returns every named output (``{name: tensor}``) so each IR node
    can be compared with its torch counterpart. Names must not contain dots."""

    def __init__(self, *pairs: tuple[str, nn.Module]):
        super().__init__()
        self.order = [n for n, _ in pairs]
        self.mods = nn.ModuleDict(dict(pairs))

    def forward(self, x):
        out = {}
        for n in self.order:
            x = self.mods[n](x)
            out[n] = x
        return out


class Fn(nn.Module):
    """A function of the inputs with named submodules: ``fn(mods, *inputs) -> {node name: tensor}``."""

    def __init__(self, fn: Callable, **mods: nn.Module):
        super().__init__()
        self.fn = fn
        self.mods = nn.ModuleDict(mods)

    def forward(self, *xs):
        return self.fn(self.mods, *xs)


class Lambda(nn.Module):
    def __init__(self, fn: Callable):
        super().__init__()
        self.fn = fn

    def forward(self, x):
        return self.fn(x)


# -- engine side (reading a Report) --------------------------------------------------------------------------------

def bias_grad_adds(net: core.Network, report: core.Report) -> int:
    """The engine's bias-gradient adds (one per output element of a trainable layer with a bias), which
    FlopCounterMode does not count; subtract them before comparing backward FLOPs."""
    total = 0
    for layer in report.layers:
        node = net.node(layer.name)
        if layer.op in BIAS_OPS and node.get("bias", True) and layer.trainable_params:
            numel = 1
            for d in layer.output_shape:
                numel *= d
            total += numel
    return total


def mac_layer_flops(net: core.Network, report: core.Report) -> tuple[int, int]:
    """(forward, backward) FLOPs of the layers FlopCounterMode sees (conv, conv-transpose, linear, matmul), the
    backward without the bias-gradient adds."""
    layers = [l for l in report.layers if l.op in MAC_OPS]
    fwd = sum(2 * l.macs for l in layers)
    bwd = sum(l.backward_flops for l in layers) - bias_grad_adds(net, report)
    return fwd, bwd
