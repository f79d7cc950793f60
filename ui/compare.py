"""Side-by-side rows for the Compare page, from core analyses and time estimates."""

from __future__ import annotations

import core
from core.api import estimate

PRESETS = {
    "VGG 11/13/19": ["vgg11", "vgg13", "vgg19"],
    "ResNet18 vs ResNet50": ["resnet18", "resnet50"],
    "MNIST conv2 64 vs 128": ["mnist_cnn", "mnist_cnn_conv2_128"],
}


def compare_rows(models, batch: int, dtype: str, optimizer: str, device, **settings) -> list[dict]:
    """``settings``: the time model's (``ppp``, ``variant``), as ``core.estimate`` takes them."""
    rows = []
    for m in models:
        name = m if isinstance(m, str) else m.name
        r = core.analyze(m, batch_size=batch, dtype=dtype, optimizer=optimizer)
        t = r.totals
        row = {"network": name, "params": t["params"], "GMACs": t["macs"] / 1e9, "GFLOPs": t["flops"] / 1e9,
               "inference MiB": t["inference_bytes"] / 2 ** 20, "training MiB": t["training_bytes"] / 2 ** 20,
               "FLOP/byte": t["arithmetic_intensity"]}
        try:
            e = estimate(r, device, batch_size=batch, dtype=dtype, optimizer=optimizer, **settings)
            row.update({"forward ms": e.totals["forward_s"] * 1e3,
                        "training step ms": e.totals["training_step_s"] * 1e3, "bound": e.roofline["bound"]})
        except core.CalcError as err:
            row.update({"forward ms": None, "training step ms": None, "bound": str(err)})
        rows.append(row)
    return rows
