"""Chart data and altair specs built from ``core`` results (pages only lay them out)."""

from __future__ import annotations

import altair as alt
import pandas as pd

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
    """Each layer at its arithmetic intensity and its PALEO-estimated FLOP/s (flops / time); layers that move no
    bytes or do no arithmetic are left out (they have no place on a log-log roofline)."""
    rows = []
    for r in est.layers:
        flops, secs = r[f"{which}_flops"], r[f"{which}_s"]
        ai = r["arithmetic_intensity"] if which == "forward" else r["backward_arithmetic_intensity"]
        if flops and secs and ai:
            rows.append({"layer": r["name"], "op": r["op"], "intensity": ai, "flops": flops / secs,
                         "bound": r["bound"] if which == "forward" else r["backward_bound"], "time_ms": secs * 1e3})
    return pd.DataFrame(rows)


def roofline_chart(roofs: pd.DataFrame, points: pd.DataFrame, network: dict | None = None) -> alt.Chart:
    x = alt.X("intensity:Q", scale=alt.Scale(type="log"), title="arithmetic intensity (FLOP/byte)")
    y = alt.Y("flops:Q", scale=alt.Scale(type="log"), title="FLOP/s")
    chart = alt.Chart(roofs).mark_line().encode(x=x, y=y, color=alt.Color("device:N", title="device"))
    if not points.empty:
        chart += alt.Chart(points).mark_circle(size=50, opacity=0.8).encode(
            x=x, y=y, shape=alt.Shape("bound:N"), tooltip=["layer", "op", alt.Tooltip("intensity:Q", format=".2f"),
                                                          alt.Tooltip("flops:Q", format=".3s"),
                                                          alt.Tooltip("time_ms:Q", format=".3f")])
    if network:
        chart += alt.Chart(pd.DataFrame([network])).mark_point(size=250, shape="diamond", filled=True,
                                                               color="black").encode(x=x, y=y, tooltip=["label"])
    return chart.properties(height=460)


def memory_chart(frame: pd.DataFrame, capacity_gib: float | None) -> alt.Chart:
    """Training and inference memory vs batch size (log-log), with the device's capacity as a rule."""
    long = frame.melt("batch", var_name="memory", value_name="GiB")
    chart = alt.Chart(long).mark_line(point=True).encode(
        x=alt.X("batch:Q", scale=alt.Scale(type="log", base=2)), y=alt.Y("GiB:Q", scale=alt.Scale(type="log")),
        color="memory:N", tooltip=["batch", "memory", alt.Tooltip("GiB:Q", format=".3f")])
    if capacity_gib:
        chart += alt.Chart(pd.DataFrame([{"GiB": capacity_gib, "label": "device memory"}])).mark_rule(
            color="red", strokeDash=[6, 3]).encode(y="GiB:Q", tooltip=["label", "GiB"])
    return chart.properties(height=300)
