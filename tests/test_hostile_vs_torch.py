"""Attributes at the edge of what an op allows, against torch itself (issue 15, "accepted but wrong"): the IR accepts
what torch accepts, with torch's output shape, and refuses what torch refuses with a ``NetworkError`` naming the
field. Where torch's result loses the batch dimension (``x.mean(dim=[])`` is a scalar) the IR, whose shapes are per
sample, cannot represent it and refuses it too.

What torch 2.x does, measured by this file:
- ``x.mean(dim=[])`` reduces every dim, batch included; a dim named twice is refused ("appears multiple times").
- ``torch.roll``: one shift per dim ("shifts and dimensions must align"), or one shift and no dims (the flattened
  tensor rolls); no shifts is refused; dims out of range are refused; a repeated dim or the batch dim is allowed.
- ``AdaptiveAvgPool2d(None)`` fails (``len(None)``); ``(None, None)`` and ``(None, 7)`` keep the None sides.
- ``batch_norm`` refuses eps < 0 ("must be non-negative"; eps = 0 runs at inference); ``layer_norm`` and
  ``group_norm`` accept a negative eps.
"""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from core import Network, NetworkError, Node
from core.graph import compile_network
from torch_ref import BATCH

N = Node.make

# (id, IR node on inputs "x" (and "y"), per-sample input shapes, torch function of the inputs, field named when
# refused)
CASES = [
    ("mean-dim-empty", N("m", "mean", "x", dim=[]), [(3, 4, 5)], lambda x: x.mean(dim=[]), "dim"),
    ("mean-dim-empty-keepdim", N("m", "mean", "x", dim=[], keepdim=True), [(3, 4, 5)],
     lambda x: x.mean(dim=[], keepdim=True), "dim"),
    ("mean-dim-duplicate", N("m", "mean", "x", dim=[2, 2]), [(3, 4, 5)], lambda x: x.mean(dim=[2, 2]), "dim"),
    ("mean-dim-duplicate-negative", N("m", "mean", "x", dim=[2, -2]), [(3, 4, 5)],
     lambda x: x.mean(dim=[2, -2]), "dim"),
    ("mean-dims-2-3", N("m", "mean", "x", dim=[2, 3]), [(3, 4, 5)], lambda x: x.mean(dim=[2, 3]), "dim"),
    ("mean-dim-last-keepdim", N("m", "mean", "x", dim=[-1], keepdim=True), [(3, 4, 5)],
     lambda x: x.mean(dim=[-1], keepdim=True), "dim"),
    ("roll-mismatch", N("r", "roll", "x", shifts=[1, 2], dims=[1]), [(3, 4, 5)],
     lambda x: torch.roll(x, shifts=(1, 2), dims=(1,)), "shifts"),
    ("roll-one-shift-no-dims", N("r", "roll", "x", shifts=[1], dims=[]), [(3, 4, 5)],
     lambda x: torch.roll(x, shifts=(1,), dims=()), "shifts"),
    ("roll-two-shifts-no-dims", N("r", "roll", "x", shifts=[1, 2], dims=[]), [(3, 4, 5)],
     lambda x: torch.roll(x, shifts=(1, 2), dims=()), "shifts"),
    ("roll-nothing", N("r", "roll", "x", shifts=[], dims=[]), [(3, 4, 5)],
     lambda x: torch.roll(x, shifts=(), dims=()), "shifts"),
    ("roll-dim-too-high", N("r", "roll", "x", shifts=[1], dims=[4]), [(3, 4, 5)],
     lambda x: torch.roll(x, shifts=(1,), dims=(4,)), "dims"),
    ("roll-dim-too-low", N("r", "roll", "x", shifts=[1], dims=[-5]), [(3, 4, 5)],
     lambda x: torch.roll(x, shifts=(1,), dims=(-5,)), "dims"),
    ("roll-dim-lowest", N("r", "roll", "x", shifts=[1], dims=[-4]), [(3, 4, 5)],
     lambda x: torch.roll(x, shifts=(1,), dims=(-4,)), "dims"),
    ("roll-batch-dim", N("r", "roll", "x", shifts=[1], dims=[0]), [(3, 4, 5)],
     lambda x: torch.roll(x, shifts=(1,), dims=(0,)), "dims"),
    ("roll-repeated-dim", N("r", "roll", "x", shifts=[1, 1], dims=[2, 2]), [(3, 4, 5)],
     lambda x: torch.roll(x, shifts=(1, 1), dims=(2, 2)), "dims"),
    ("roll-swin", N("r", "roll", "x", shifts=[-3, -3], dims=[1, 2]), [(8, 8, 5)],
     lambda x: torch.roll(x, shifts=(-3, -3), dims=(1, 2)), "dims"),
    ("adaptive-avg-null", N("a", "adaptive_avg_pool2d", "x", output_size=None), [(3, 4, 5)],
     lambda x: nn.AdaptiveAvgPool2d(None)(x), "output_size"),
    ("adaptive-max-null", N("a", "adaptive_max_pool2d", "x", output_size=None), [(3, 4, 5)],
     lambda x: nn.AdaptiveMaxPool2d(None)(x), "output_size"),
    ("adaptive-avg-null-null", N("a", "adaptive_avg_pool2d", "x", output_size=[None, None]), [(3, 4, 5)],
     lambda x: nn.AdaptiveAvgPool2d((None, None))(x), "output_size"),
    ("adaptive-avg-null-7", N("a", "adaptive_avg_pool2d", "x", output_size=[None, 7]), [(3, 4, 5)],
     lambda x: nn.AdaptiveAvgPool2d((None, 7))(x), "output_size"),
    ("adaptive-max-3-null", N("a", "adaptive_max_pool2d", "x", output_size=[3, None]), [(3, 4, 5)],
     lambda x: nn.AdaptiveMaxPool2d((3, None))(x), "output_size"),
    ("batch-norm-eps-negative", N("b", "batch_norm", "x", eps=-1.0), [(3, 4, 5)],
     lambda x: nn.BatchNorm2d(3, eps=-1.0).eval()(x), "eps"),
    ("batch-norm-eps-tiny-negative", N("b", "batch_norm", "x", eps=-1e-12), [(3, 4, 5)],
     lambda x: F.batch_norm(x, torch.zeros(3), torch.ones(3), eps=-1e-12), "eps"),
    ("batch-norm-eps-zero", N("b", "batch_norm", "x", eps=0.0), [(3, 4, 5)],
     lambda x: nn.BatchNorm2d(3, eps=0.0).eval()(x), "eps"),
    ("batch-norm-momentum-negative", N("b", "batch_norm", "x", momentum=-5.0), [(3, 4, 5)],
     lambda x: nn.BatchNorm2d(3, momentum=-5.0)(x), "momentum"),
    ("layer-norm-eps-negative", N("l", "layer_norm", "x", eps=-1.0), [(3, 4, 5)],
     lambda x: nn.LayerNorm(5, eps=-1.0)(x), "eps"),
    ("group-norm-eps-negative", N("g", "group_norm", "x", num_groups=3, eps=-1.0), [(3, 4, 5)],
     lambda x: nn.GroupNorm(3, 3, eps=-1.0)(x), "eps"),
    ("dropout-p-above-1", N("d", "dropout", "x", p=1.5), [(3, 4, 5)], lambda x: nn.Dropout(1.5)(x), "p"),
    ("dropout-p-1", N("d", "dropout", "x", p=1.0), [(3, 4, 5)], lambda x: nn.Dropout(1.0)(x), "p"),
    ("einsum-transpose", N("e", "einsum", "x", equation="bij->bji"), [(4, 5)],
     lambda x: torch.einsum("bij->bji", x), "equation"),
    ("einsum-diagonal", N("e", "einsum", "x", equation="bii->bi"), [(4, 4)],
     lambda x: torch.einsum("bii->bi", x), "equation"),
    ("einsum-output-repeats", N("e", "einsum", "x", equation="bij->bii"), [(4, 4)],
     lambda x: torch.einsum("bij->bii", x), "equation"),
    ("einsum-unknown-output-letter", N("e", "einsum", "x", equation="bij->bik"), [(4, 5)],
     lambda x: torch.einsum("bij->bik", x), "equation"),
    ("einsum-digit", N("e", "einsum", "x", equation="b1j->b1j"), [(4, 5)],
     lambda x: torch.einsum("b1j->b1j", x), "equation"),
    ("einsum-reduces-batch", N("e", "einsum", "x", equation="bij->"), [(4, 5)],
     lambda x: torch.einsum("bij->", x), "equation"),
    ("einsum-two-arrows", N("e", "einsum", "x", equation="bij->bij->bij"), [(4, 5)],
     lambda x: torch.einsum("bij->bij->bij", x), "equation"),
    ("einsum-matmul", N("e", "einsum", ("x", "y"), equation="bij,bjk->bik"), [(4, 5), (5, 6)],
     lambda x, y: torch.einsum("bij,bjk->bik", x, y), "equation"),
    ("einsum-broadcast-1", N("e", "einsum", ("x", "y"), equation="bij,bij->bij"), [(4, 1), (4, 6)],
     lambda x, y: torch.einsum("bij,bij->bij", x, y), "equation"),
    ("interpolate-scale-to-empty", N("i", "interpolate", "x", scale_factor=0.1), [(3, 4, 5)],
     lambda x: F.interpolate(x, scale_factor=0.1), "scale_factor"),
    ("interpolate-scale-zero", N("i", "interpolate", "x", scale_factor=0), [(3, 4, 5)],
     lambda x: F.interpolate(x, scale_factor=0), "scale_factor"),
    ("interpolate-scale-negative", N("i", "interpolate", "x", scale_factor=-2.0), [(3, 4, 5)],
     lambda x: F.interpolate(x, scale_factor=-2.0), "scale_factor"),
    ("interpolate-scale-pair", N("i", "interpolate", "x", scale_factor=[2, 1.5]), [(3, 4, 5)],
     lambda x: F.interpolate(x, scale_factor=(2, 1.5)), "scale_factor"),
    ("interpolate-size-zero", N("i", "interpolate", "x", size=[0, 2]), [(3, 4, 5)],
     lambda x: F.interpolate(x, size=(0, 2)), "size"),
    ("interpolate-size-and-scale", N("i", "interpolate", "x", size=3, scale_factor=2), [(3, 4, 5)],
     lambda x: F.interpolate(x, size=3, scale_factor=2), "size"),
]


def _torch_result(fn, shapes):
    torch.manual_seed(0)
    xs = [torch.randn(BATCH, *s) for s in shapes]
    try:
        with torch.no_grad():
            return fn(*xs), None
    except Exception as e:      # noqa: BLE001 — torch's refusal, whatever its type
        return None, e


@pytest.mark.parametrize("node, shapes, fn, field", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_ir_accepts_and_refuses_as_torch_does(node, shapes, fn, field):
    names = ("x", "y")[:len(shapes)]
    net = Network.make("t", dict(zip(names, shapes)), [node])
    result, refusal = _torch_result(fn, shapes)
    representable = result is not None and result.dim() >= 1 and result.shape[0] == BATCH
    try:
        compiled = compile_network(net)
    except NetworkError as e:
        assert e.field == field, str(e)
        assert f"field '{field}'" in str(e)
        assert refusal is not None or not representable, f"torch accepts it ({tuple(result.shape)}), the IR: {e}"
        return
    assert refusal is None, f"torch refuses it ({type(refusal).__name__}: {refusal}), the IR accepts it"
    assert representable, f"torch's result {tuple(result.shape)} has no batch dim, the IR accepts it"
    assert compiled.nodes[-1].out_shape == tuple(result.shape[1:])
