"""Memory over a training step (``core.timeline``) as a stacked area chart: the parts alive at each step, the peak
marked with its layer, the device's memory as a line; and the panel that shows it with what is alive at the peak."""

from __future__ import annotations

import json
from functools import lru_cache

import pandas as pd
import streamlit as st

import core
from core.timeline import PART_LABELS, PARTS
from core.units import format_bytes
from ui.charts import SCHEMA, axis, full, show
from ui.explain import how
from ui.tables import dataframe

MAX_STEPS = 400           # steps drawn; a longer step is thinned evenly, its peak always kept
ORDER = ("parameters", "optimizer", "gradients", "input", "saved", "outputs")   # stacked bottom to top
HOW = ("One training step as PyTorch runs it: `zero_grad(set_to_none=True)`, the forward layer by layer, the "
       "backward in reverse, then the optimizer update. A tensor a backward reads stays alive from its forward to "
       "the backward of its earliest reader; each weight's gradient is made at its layer's backward; an output is "
       "freed after its last reader, a gradient after its layer's backward. Its peak is the calculator's training "
       "memory everywhere in the app. Checked against PyTorch's live tensors (MemTracker) layer by layer: "
       "docs/benchmarks.md. Not counted: convolution workspace, the CUDA context, memory the allocator keeps.")


def _thin(rows: list[dict], peak: int, max_steps: int) -> list[dict]:
    if len(rows) <= max_steps:
        return rows
    every = -(-len(rows) // max_steps)
    return [r for r in rows if r["step"] % every == 0 or r["step"] == peak or r["step"] == len(rows) - 1]


def _unit(peak: float) -> int:
    """The axis' unit in bytes (GiB, MiB or KiB), so that its ticks fall on round binary sizes."""
    return next(u for u in (2 ** 30, 2 ** 20, 2 ** 10, 1) if peak >= u)


def timeline_values(report: core.Report, max_steps: int = MAX_STEPS) -> list[dict]:
    """One dict per drawn step: each part's size (in ``_unit`` of the peak) under its label, its tooltip text (exact
    bytes) under the label + " text"; the chart folds them into one row per part."""
    unit = _unit(report.timeline.peak)
    texts: dict[int, str] = {}

    def text(v: int) -> str:
        return texts[v] if v in texts else texts.setdefault(v, full(v, "B"))

    out = []
    for r in _thin(report.memory_timeline(), report.timeline.peak_step, max_steps):
        row = {"step": r["step"], "where": f"{r['phase']} {r['layer']}", "total": text(r["total"])}
        for p in ORDER:
            row[PART_LABELS[p]] = r[p] / unit
            row[PART_LABELS[p] + " text"] = text(r[p])
        out.append(row)
    return out


@lru_cache(maxsize=64)
def _spec(compiled, batch: int, dtype: str, optimizer: str, capacity: float | None) -> str:
    report = core.Report(compiled, batch, dtype, optimizer)
    tl = report.timeline
    draw_capacity = bool(capacity) and capacity <= 4 * tl.peak
    unit = _unit(tl.peak)
    top = max(tl.peak * 1.08, capacity * 1.04 if draw_capacity else 0) / unit
    x = {"field": "step", "type": "quantitative", "axis": {"format": ",d"},
         "title": "step of a training step (forward → backward → update)"}
    y = {"field": "bytes", "type": "quantitative", "title": "memory alive", "axis": axis("B", unit),
         "scale": {"domain": [0, top]}}
    forward_end = tl.forward_steps - 0.5
    label = f"peak {format_bytes(tl.peak, 1)}: {tl.peak_where.removeprefix('the ')}"
    peak = {"values": [{"step": tl.peak_step, "bytes": tl.peak / unit, "label": label, "size": full(tl.peak, "B")}]}
    unstacked = {**y, "stack": None}
    labels = [PART_LABELS[p] for p in ORDER]
    layers = [
        {"data": {"values": timeline_values(report)}, "mark": {"type": "area", "interpolate": "step-after"},
         "transform": [{"fold": labels, "as": ["part", "bytes"]},
                       {"calculate": "datum[datum.part + ' text']", "as": "size"},
                       {"calculate": f"indexof({json.dumps(labels)}, datum.part)", "as": "order"}],
         "encoding": {"x": x, "y": {**y, "stack": "zero"}, "order": {"field": "order", "type": "quantitative"},
                      "color": {"field": "part", "type": "nominal", "legend": {"labelLimit": 0},
                                "sort": labels},
                      "tooltip": [{"field": "where", "type": "nominal", "title": "step"},
                                  {"field": "part", "type": "nominal"},
                                  {"field": "size", "type": "nominal", "title": "part"},
                                  {"field": "total", "type": "nominal", "title": "total"}]}},
        {"data": {"values": [{"step": forward_end}]}, "mark": {"type": "rule", "color": "gray", "strokeDash": [2, 2]},
         "encoding": {"x": x}},
        {"data": peak, "mark": {"type": "point", "color": "black", "filled": True, "size": 60},
         "encoding": {"x": x, "y": unstacked, "tooltip": [{"field": "label", "type": "nominal", "title": "peak"},
                                                          {"field": "size", "type": "nominal"}]}},
        {"data": peak, "mark": {"type": "text", "fontSize": 12, "dy": -8,      # the label points into the chart
                                **({"align": "left", "dx": 6} if 2 * tl.peak_step < tl.steps
                                   else {"align": "right", "dx": -6})},
         "encoding": {"x": x, "y": unstacked, "text": {"field": "label", "type": "nominal"}}},
    ]
    if draw_capacity:
        layers.append({"data": {"values": [{"bytes": capacity / unit, "label": "device memory",
                                            "size": full(capacity, "B")}]},
                       "mark": {"type": "rule", "color": "red", "strokeDash": [6, 3]},
                       "encoding": {"y": unstacked, "tooltip": [{"field": "label", "type": "nominal", "title": "line"},
                                                                {"field": "size", "type": "nominal"}]}})
    return json.dumps({"$schema": SCHEMA, "height": 320,
                       "layer": layers})


def timeline_chart(report: core.Report, capacity: float | None = None) -> dict:
    """A Vega-Lite spec: stacked bytes by part over the step; a point and label at the peak; ``capacity`` (bytes)
    as a red rule when it is within 4× the peak (beyond, it would flatten the curve: the caption says so). Built
    once per input (a plain dict: altair's copies and checks cost more than the drawing)."""
    return json.loads(_spec(report.compiled, report.batch_size, report.dtype, report.optimizer, capacity))


def show_timeline(report: core.Report, capacity: float | None, device_name: str | None, key: str,
                  container=None) -> None:
    """The chart, a one-sentence caption, the parts and the largest tensors at the peak, and how it is computed."""
    box = container if container is not None else st
    tl = report.timeline
    show(timeline_chart(report, capacity), key, f"{report.name}_b{report.batch_size}_memory_timeline", box)
    cap = ""
    if capacity:
        share = tl.peak / capacity
        where = "the red line" if capacity <= 4 * tl.peak else "off the top of the chart"
        cap = f"; {device_name}'s {format_bytes(capacity, 0)} is {where} ({share:.0%} used)"
    box.caption(f"Peak **{format_bytes(tl.peak, 2)}** in {tl.peak_where} (the dot){cap}.")
    at = tl.parts(tl.peak_counts)
    left, right = box.columns(2)
    dataframe(pd.DataFrame([{"at the peak": PART_LABELS[p], "MiB": at[p] / 2 ** 20} for p in PARTS]),
              key=f"{key}_parts", container=left, hide_index=True,
              column_config={"MiB": st.column_config.NumberColumn(format="%.2f")})
    dataframe(pd.DataFrame([{"largest tensors alive at the peak": w, "MiB": b / 2 ** 20}
                            for w, b in tl.alive_at_peak()[:5]]), key=f"{key}_alive", container=right,
              hide_index=True, column_config={"MiB": st.column_config.NumberColumn(format="%.2f")})
    how(HOW, container=box)
