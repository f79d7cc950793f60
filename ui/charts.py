"""Chart data and altair specs built from ``core`` results (pages only lay them out)."""

from __future__ import annotations

import altair as alt
import pandas as pd
import streamlit as st

from core.roofline import attainable, ridge


def roofline_frame(devices, compute: str, lo: float = 0.01, hi: float = 10_000.0, points: int = 60) -> pd.DataFrame:
    """The roof of each device: attainable FLOP/s over a log range of arithmetic intensity."""
    rows = []
    for d in devices:
        if compute not in d.peak_flops:
            continue
        peak = d.peak(compute)
        xs = sorted({lo * (hi / lo) ** (i / (points - 1)) for i in range(points)} | {ridge(peak, d.memory_bandwidth)})
        rows += [{"device": d.name, "intensity": x, "flops": attainable(x, peak, d.memory_bandwidth)} for x in xs]
    return pd.DataFrame(rows)


def layer_points(est, which: str = "forward") -> pd.DataFrame:
    """Each layer at its arithmetic intensity and its estimated FLOP/s (flops / its time: predicted or PALEO, as the
    estimate's variant); layers that move no bytes or do no arithmetic are left out (they have no place on a log-log
    roofline). "bound": the side of the ridge; "limited_by": the term that sets the layer's time."""
    rows = []
    for r in est.layers:
        flops, secs = r[f"{which}_flops"], r[f"{which}_s"]
        ai = r["arithmetic_intensity"] if which == "forward" else r["backward_arithmetic_intensity"]
        if flops and secs and ai:
            rows.append({"layer": r["name"], "op": r["op"], "intensity": ai, "flops": flops / secs,
                         "bound": r["bound"] if which == "forward" else r["backward_bound"], "time_ms": secs * 1e3,
                         "limited_by": r["limited_by"] if which == "forward" else r["backward_limited_by"]})
    return pd.DataFrame(rows)


def roofline_chart(roofs: pd.DataFrame, points: pd.DataFrame, network: dict | None = None,
                   shape_by: str = "bound") -> alt.Chart:
    x = alt.X("intensity:Q", scale=alt.Scale(type="log"), title="arithmetic intensity (FLOP/byte)")
    y = alt.Y("flops:Q", scale=alt.Scale(type="log"), title="FLOP/s")
    chart = alt.Chart(roofs).mark_line().encode(x=x, y=y, color=alt.Color("device:N", title="device"))
    if not points.empty:
        chart += alt.Chart(points).mark_point(size=50, opacity=0.8, filled=True).encode(
            x=x, y=y, shape=alt.Shape(f"{shape_by}:N", title=shape_by.replace("_", " ")),
            tooltip=[alt.Tooltip("layer:N"), alt.Tooltip("op:N"),
                     *([alt.Tooltip("limited_by:N", title="limited by")] if "limited_by" in points else []),
                     alt.Tooltip("intensity:Q", format=".2f"), alt.Tooltip("flops:Q", format=".3s"),
                     alt.Tooltip("time_ms:Q", format=".3f")])
    if network:
        chart += alt.Chart(pd.DataFrame([network])).mark_point(
            size=250, shape="diamond", filled=True, color="black").encode(x=x, y=y, tooltip=[alt.Tooltip("label:N")])
    return chart.properties(height=460)


def memory_chart(frame: pd.DataFrame, capacity_gib: float | None) -> alt.Chart:
    """Training and inference memory vs batch size (log-log), with the device's capacity as a rule."""
    long = frame.melt("batch", var_name="memory", value_name="GiB")
    chart = alt.Chart(long).mark_line(point=True).encode(
        x=alt.X("batch:Q", scale=alt.Scale(type="log", base=2)), y=alt.Y("GiB:Q", scale=alt.Scale(type="log")),
        color=alt.Color("memory:N"),
        tooltip=[alt.Tooltip("batch:Q"), alt.Tooltip("memory:N"), alt.Tooltip("GiB:Q", format=".3f")])
    if capacity_gib:
        chart += alt.Chart(pd.DataFrame([{"GiB": capacity_gib, "label": "device memory"}])).mark_rule(
            color="red", strokeDash=[6, 3]).encode(y=alt.Y("GiB:Q"),
                                                   tooltip=[alt.Tooltip("label:N"), alt.Tooltip("GiB:Q")])
    return chart.properties(height=300)


def _render(chart: alt.Chart, fmt: str) -> bytes | str:
    """The chart as SVG text or PNG bytes, drawn server-side by vl-convert (imported on first download only)."""
    import vl_convert

    spec = chart.to_json()
    return vl_convert.vegalite_to_svg(spec) if fmt == "svg" else vl_convert.vegalite_to_png(spec, scale=2)


def show(chart: alt.Chart, key: str, file_name: str, container=None) -> None:
    """Draw ``chart`` with SVG and PNG download buttons under it; the image is drawn only when one is clicked.

    Build charts from channel objects (``alt.X("a:Q")``, ``alt.Tooltip("b:N")``), not shorthand strings: altair
    resolves each string against the Vega-Lite schema, several ms apiece, which the page pays on every change."""
    box = container if container is not None else st
    # altair validates a spec against the Vega-Lite schema, data rows included, on every render (tens of ms for a
    # roofline's 500 points); the helpers' specs are validated once in the tests instead (test_app)
    box.vega_lite_chart(chart.to_dict(validate=False), width="stretch", key=key)
    a, b, _ = box.columns([1, 1, 6])
    a.download_button("SVG", lambda: _render(chart, "svg"), f"{file_name}.svg", "image/svg+xml", key=f"{key}_svg",
                      type="tertiary", icon=":material/download:", on_click="ignore")
    b.download_button("PNG", lambda: _render(chart, "png"), f"{file_name}.png", "image/png", key=f"{key}_png",
                      type="tertiary", icon=":material/download:", on_click="ignore")


def lines_chart(frame: pd.DataFrame, x: str, ys: list[str], y_title: str, *, log_x: bool = True,
                log_y: bool = False) -> alt.Chart:
    """Several columns of ``frame`` against ``x`` as lines with points (batch sweeps, scaling curves)."""
    long = frame.melt(x, value_vars=ys, var_name="series", value_name="value")
    return alt.Chart(long).mark_line(point=True).encode(
        x=alt.X(f"{x}:Q", scale=alt.Scale(type="log", base=2) if log_x else alt.Undefined),
        y=alt.Y("value:Q", title=y_title, scale=alt.Scale(type="log") if log_y else alt.Undefined),
        color=alt.Color("series:N", title=None),
        tooltip=[alt.Tooltip(f"{x}:Q"), alt.Tooltip("series:N"), alt.Tooltip("value:Q", format=",.4~f")]
    ).properties(height=300)


def bars_chart(frame: pd.DataFrame, label: str, value: str, color: str | None = None, *,
               log: bool = False) -> alt.Chart:
    """One horizontal bar per row, in the frame's order (device comparisons, network comparisons)."""
    enc = {"y": alt.Y(f"{label}:N", sort=None, title=None),
           "x": alt.X(f"{value}:Q", scale=alt.Scale(type="log") if log else alt.Undefined),
           "tooltip": [alt.Tooltip(f"{label}:N"), alt.Tooltip(f"{value}:Q", format=",.4~f")]}
    if color:
        enc["color"] = alt.Color(f"{color}:N")
    return alt.Chart(frame).mark_bar().encode(**enc).properties(height=max(160, 18 * len(frame)))
