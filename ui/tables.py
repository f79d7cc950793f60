"""Tables for the pages, built from ``core`` results."""

from __future__ import annotations

import core

# the fields a what-if edit offers per op (integers or pairs given as one integer)
EDITABLE = {
    "conv2d": ("out_channels", "kernel_size", "stride", "padding", "groups"),
    "conv_transpose2d": ("out_channels", "kernel_size", "stride", "padding"),
    "linear": ("out_features",),
    "max_pool2d": ("kernel_size", "stride", "padding"),
    "avg_pool2d": ("kernel_size", "stride", "padding"),
}


def editable_layers(report: core.Report) -> list[dict]:
    """One row per layer that has something to edit: its shape in and out and its current attributes."""
    infos = report.compiled.by_name
    rows = []
    for layer in report.layers:
        fields = EDITABLE.get(layer.op)
        if not fields:
            continue
        attrs = infos[layer.name].attrs
        rows.append({"layer": layer.name, "op": layer.op,
                     "input": "×".join(map(str, layer.input_shapes[0])),
                     "output": "×".join(map(str, layer.output_shape[1:])),
                     "attributes": ", ".join(f"{f}={_show(attrs.get(f))}" for f in fields),
                     "params": layer.params, "editable": ", ".join(fields)})
    return rows


def _show(v) -> str:
    if v is None:
        return "kernel"            # a pool's stride defaults to its kernel size
    if isinstance(v, tuple) and len(v) == 2 and v[0] == v[1]:
        return str(v[0])
    return str(v)
