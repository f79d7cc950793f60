"""``reshape.keep_trailing``: a view that regroups only the leading dims and keeps the input's last k dims as they are,
so the network re-propagates at another input size (ShuffleNet's channel shuffle, ``x.view(b, g, c // g, h, w)``).

References: torchvision itself (output shape, ``sum(p.numel())``, FlopCounterMode / 2 on meta tensors) at input
sizes other than the one the zoo data was imported at; ``Tensor.view`` for the hand-built cases; hand arithmetic in
the comments beside each expected shape.
"""

from __future__ import annotations

import warnings
from functools import lru_cache

import pytest
import torch
import torchvision
from torch import nn

import core
from core import Network, Node
from core.bridge.fx_import import from_module
from core.bridge.to_torch import to_module
from torch_ref import flops_of, n_params

warnings.filterwarnings("ignore", category=UserWarning)

SHUFFLENETS = ["shufflenet_v2_x0_5", "shufflenet_v2_x1_0", "shufflenet_v2_x1_5", "shufflenet_v2_x2_0"]
SIZES = [(3, 112, 112), (3, 320, 320), (3, 256, 192)]


@lru_cache(maxsize=None)
def meta_torchvision(name: str) -> nn.Module:
    with torch.device("meta"):
        return torchvision.models.get_model(name, weights=None).eval()


# == the zoo's ShuffleNets at other input sizes, against torchvision ================================================

@pytest.mark.parametrize("size", SIZES, ids=lambda s: "x".join(map(str, s)))
@pytest.mark.parametrize("name", SHUFFLENETS)
def test_shufflenet_at_other_sizes_is_torchvisions(name, size):
    report = core.analyze(name, input_shape=size)
    model = meta_torchvision(name)
    with torch.no_grad():
        flops, out = flops_of(lambda: model(torch.empty((1,) + size, device="meta")))
    assert report.layers[-1].output_shape == tuple(out.shape) == (1, 1000)
    assert report.totals["params"] == n_params(model)
    assert report.totals["macs"] == flops // 2


def test_shipped_shufflenet_channel_shuffles_keep_the_spatial_dims():
    """Each of the 16 blocks shuffles with two views: [C, H, W] → [2, C/2, H, W] and [C/2, 2, H, W] → [C, H, W];
    both keep H, W (keep_trailing 2) and write only the channel dims, so the data holds no spatial size."""
    net = core.load_network("shufflenet_v2_x1_0")
    views = [n for n in net.nodes if n.op == "reshape"]
    assert len(views) == 2 * (4 + 8 + 4)                       # stage2, stage3, stage4 blocks: 4, 8, 4
    assert all(n.get("keep_trailing") == 2 for n in views)
    # stage2 has 116 channels: 116 = 2·58
    assert {n.get("shape") for n in views if n.name.startswith("stage2.")} == {(2, 58), (116,)}


def test_shufflenet_exported_at_112_is_torchvisions():
    """to_torch builds the re-propagated network; with torchvision's weights it computes torchvision's output."""
    torch.manual_seed(0)
    name = "shufflenet_v2_x0_5"
    reference = torchvision.models.get_model(name, weights=None).eval()
    net = core.load_network(name).with_input_shape((3, 112, 112))
    model = to_module(net).eval()
    model.load_state_dict(reference.state_dict(), strict=True)
    x = torch.randn(2, 3, 112, 112)
    with torch.no_grad():
        expected = reference(x)
        got = model(x)
    assert tuple(got.shape) == tuple(expected.shape) == (2, 1000)
    assert torch.allclose(got, expected, atol=1e-5)             # a wrong shuffle permutes channels: not close


# == the op itself, by hand ===========================================================================================

def one_view(in_shape, **attrs) -> Network:
    return Network.make("v", {"x": in_shape}, [Node.make("v", "reshape", "x", **attrs)])


def out_shape(net: Network, in_shape=None) -> tuple:
    if in_shape is not None:
        net = net.with_input_shape(in_shape)
    return core.analyze(net).layers[-1].output_shape[1:]


def test_keep_trailing_by_hand_and_against_view():
    net = one_view((6, 5, 7), shape=(2, 3), keep_trailing=2)
    # [6, 5, 7]: the leading [6] (6 elements) becomes [2, 3] (2·3 = 6); [5, 7] follow as they are
    assert out_shape(net) == (2, 3, 5, 7)
    # at [6, 4, 9] the leading part is still 6 elements: [2, 3, 4, 9]
    assert out_shape(net, (6, 4, 9)) == (2, 3, 4, 9)
    assert tuple(torch.empty(1, 6, 4, 9).view(1, 2, 3, 4, 9).shape[1:]) == (2, 3, 4, 9)
    # one -1 is resolved against the leading part: 6 / 3 = 2
    assert out_shape(one_view((6, 4, 9), shape=(-1, 3), keep_trailing=2)) == (2, 3, 4, 9)
    # keep_trailing 1: [6, 4] (24 elements) as [8, 3] (8·3 = 24), then [9]
    assert out_shape(one_view((6, 4, 9), shape=(8, 3), keep_trailing=1)) == (8, 3, 9)
    # keep everything: the empty leading part holds 1 element, so shape (1,) inserts a dim in front (unsqueeze)
    assert out_shape(one_view((6, 4, 9), shape=(1,), keep_trailing=3)) == (1, 6, 4, 9)
    # the reshape moves no arithmetic: 0 FLOPs
    assert core.analyze(net).totals["flops"] == 0


def test_without_keep_trailing_the_shape_is_literal_as_before():
    net = one_view((6, 5, 7), shape=(5, 42))
    assert "keep_trailing" not in net.nodes[0].attr
    assert out_shape(net) == (5, 42)                            # 6·5·7 = 210 = 5·42
    assert out_shape(one_view((6, 5, 7), shape=(-1,))) == (210,)
    # keep_trailing 0 written out is the same network
    assert out_shape(one_view((6, 5, 7), shape=(5, 42), keep_trailing=0)) == (5, 42)
    with pytest.raises(core.NetworkError) as e:                 # another size: 6·4·9 = 216 ≠ 210, as before
        out_shape(net, (6, 4, 9))
    assert e.value.field == "shape" and e.value.node == "v"
    assert "cannot view 216 elements per sample [6, 4, 9] as [5, 42] (210)" in str(e.value)


def test_keep_trailing_survives_json():
    net = one_view((6, 5, 7), shape=(2, 3), keep_trailing=2)
    again = Network.from_json(net.to_json())
    assert again == net and again.nodes[0].get("keep_trailing") == 2
    assert "keep_trailing" not in one_view((6, 5, 7), shape=(5, 42)).to_json()   # old files stay as they were


@pytest.mark.parametrize("k, why", [(4, "more trailing dims than the input's 3"), (-1, "≥ 0"),
                                    ("2", "expected an integer"), (1.5, "expected an integer")])
def test_bad_keep_trailing_is_one_line_naming_it(k, why):
    with pytest.raises(core.NetworkError) as e:
        core.analyze(one_view((6, 5, 7), shape=(2, 3), keep_trailing=k))
    assert e.value.node == "v" and e.value.field == "keep_trailing"
    assert why in str(e.value) and "\n" not in str(e.value)


def test_leading_part_that_does_not_match_is_one_line_naming_shape():
    with pytest.raises(core.NetworkError) as e:
        core.analyze(one_view((6, 5, 7), shape=(4,), keep_trailing=2))      # 4 ≠ 6
    assert e.value.node == "v" and e.value.field == "shape" and e.value.value == (4,)
    assert "cannot view 6 elements per sample" in str(e.value) and "keep_trailing=2" in str(e.value)
    assert "\n" not in str(e.value)
    with pytest.raises(core.NetworkError) as e:                              # 6 is not a multiple of 4
        core.analyze(one_view((6, 5, 7), shape=(-1, 4), keep_trailing=2))
    assert e.value.field == "shape" and "\n" not in str(e.value)


# == the fx importer ===================================================================================================

class Shuffle(nn.Module):
    """torchvision's channel shuffle; ``concrete`` adds a branch on a size, so fx traces with concrete sizes."""

    def __init__(self, concrete: bool = False):
        super().__init__()
        self.concrete = concrete

    def forward(self, x):
        if self.concrete and x.shape[-1] < 0:
            return x
        b, c, h, w = x.size()
        x = x.view(b, 2, c // 2, h, w).transpose(1, 2).contiguous()
        return x.view(b, -1, h, w)


class FixedTiles(nn.Module):
    """Cuts the channels into 8×8 tiles: the written 8s are not the input's sizes, even where they coincide."""

    def forward(self, x):
        return x.view(x.size(0), -1, 8, 8)


class WindowSplit(nn.Module):
    """Swin-style [H, W, C] → [H/2, 2, W/2, 2, C]: only C is kept, the leading part depends on H and W."""

    def forward(self, x):
        b, h, w, c = x.shape
        return x.view(b, h // 2, 2, w // 2, 2, c)


@pytest.mark.parametrize("concrete", [False, True], ids=["symbolic", "concrete"])
def test_import_keeps_the_spatial_dims_of_a_channel_shuffle(concrete):
    net = from_module(Shuffle(concrete), (6, 5, 7)).network
    views = [n for n in net.nodes if n.op == "reshape"]
    # [6, 5, 7] → [2, 3, 5, 7] and [3, 2, 5, 7] → [6, 5, 7]: both keep [5, 7]
    assert [(n.get("shape"), n.get("keep_trailing")) for n in views] == [((2, 3), 2), ((6,), 2)]
    x = torch.empty(1, 6, 4, 9)
    assert out_shape(net, (6, 4, 9)) == tuple(Shuffle()(x).shape[1:]) == (6, 4, 9)


def test_import_keeps_no_size_the_code_wrote():
    net = from_module(FixedTiles(), (4, 8, 8)).network
    (view,) = [n for n in net.nodes if n.op == "reshape"]
    assert view.get("keep_trailing") is None and view.get("shape") == (4, 8, 8)
    # at 16×16 torch makes [16, 8, 8] (4·16·16 = 1,024 = 16·8·8); keeping [16, 16] would be wrong, the literal
    # [4, 8, 8] fails cleanly instead
    assert tuple(FixedTiles()(torch.empty(1, 4, 16, 16)).shape[1:]) == (16, 8, 8)
    with pytest.raises(core.NetworkError) as e:
        out_shape(net, (4, 16, 16))
    assert e.value.field == "shape" and "\n" not in str(e.value)


def test_window_split_keeps_the_channels_and_fails_cleanly_at_another_size():
    net = from_module(WindowSplit(), (28, 28, 16)).network
    (view,) = [n for n in net.nodes if n.op == "reshape"]
    assert view.get("keep_trailing") == 1 and view.get("shape") == (14, 2, 14, 2)
    # at [14, 14, 16]: the leading [14, 14] holds 196 elements, [14, 2, 14, 2] holds 784
    with pytest.raises(core.NetworkError) as e:
        out_shape(net, (14, 14, 16))
    assert e.value.field == "shape" and "cannot view 196 elements per sample" in str(e.value)


def test_a_flatten_like_view_is_not_kept():
    """[C, H, W] → [C, H·W] (ViT's patches): the last dim is H·W, not W, so nothing is kept."""

    class Patches(nn.Module):
        def forward(self, x):
            return x.reshape(x.size(0), x.size(1), -1)

    net = from_module(Patches(), (4, 3, 5)).network
    (view,) = [n for n in net.nodes if n.op == "reshape"]
    assert view.get("keep_trailing") is None and view.get("shape") == (4, 15)     # 3·5 = 15
