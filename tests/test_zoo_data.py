"""The torchvision zoo shipped as IR data (core/zoo_data/) is exactly what the importer makes of torchvision today,
and its numbers are torchvision's: params equal weights.meta["num_params"], MACs equal FlopCounterMode / 2 and
agree with weights.meta["_ops"] (G multiply-adds, published rounded to 3 decimals).

Regenerate with ``python scripts/generate_zoo.py`` when torchvision changes.
"""

import warnings

import pytest
import torch
from torch.utils.flop_counter import FlopCounterMode

import core
from core import zoo
from core.bridge.fx_import import from_module
from core.bridge.torchvision_zoo import build, entry, names

warnings.filterwarnings("ignore", category=UserWarning)
NAMES = names()


def test_every_torchvision_classifier_is_shipped():
    assert len(NAMES) >= 80
    assert sorted(zoo.index()) == NAMES
    assert set(NAMES) <= set(core.builtin_names())


@pytest.mark.parametrize("name", NAMES)
def test_shipped_ir_matches_torchvision(name):
    e = entry(name)
    model = build(name)
    fresh = from_module(model, e.input_shape, name=name)
    shipped = zoo.get(name)
    # kept in sync: the data is what the importer makes of torchvision now (description aside)
    assert fresh.network.nodes == shipped.nodes and fresh.network.inputs == shipped.inputs
    assert fresh.unsupported == ()                       # no op fell back to an uncounted opaque node
    r = core.analyze(shipped)
    assert r.totals["params"] == e.num_params == sum(p.numel() for p in model.parameters())
    gmacs = r.totals["macs"] / 1e9
    # _ops is rounded to 3 decimals: allow half a unit of the last digit, or 0.5 %, whichever is larger
    assert abs(gmacs - e.gmacs) <= max(0.005 * e.gmacs, 0.0005), (gmacs, e.gmacs)
    # the exact reference: PyTorch's own count of the multiply-adds of one forward pass (on meta tensors)
    model = model.to("meta")                              # RegNet is built on the CPU; nothing is computed
    with FlopCounterMode(display=False) as counter, torch.no_grad():
        model(torch.empty((1,) + e.input_shape, device="meta"))
    torch_macs = counter.get_total_flops() // 2
    if any("input-independent" in w for w in fresh.warnings):
        # Swin v2's relative-position MLP runs once per forward on a constant grid: its parameters are counted,
        # its multiply-adds (batch-independent) are not modelled, and the importer says so
        assert r.totals["macs"] < torch_macs <= 1.005 * r.totals["macs"]
    else:
        assert r.totals["macs"] == torch_macs
