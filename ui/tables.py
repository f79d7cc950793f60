"""Tables for the pages, built from ``core`` results, and ``dataframe``: how every page shows one."""

from __future__ import annotations

import streamlit as st

import core


def dataframe(data, *, key: str, container=None, **kwargs):
    """``st.dataframe`` (in ``container``, default the page) with missing values as empty cells: Streamlit writes
    "None" in a cell that has no value (an optional column, e.g. a prediction the time model cannot make, or a
    device without that precision) unless told otherwise. The index is hidden unless ``hide_index=False``."""
    box = container if container is not None else st
    return box.dataframe(data, key=key, **{"hide_index": True, **kwargs, "placeholder": ""})

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
