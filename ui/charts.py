"""Chart data and altair specs built from ``core`` results (pages only lay them out).

Axes read in engineering units ("100 GFLOP/s", "1 TFLOP/s", "10 ms", "256 MiB"): each quantitative axis gets a
Vega ``labelExpr`` made by ``label_expr`` from the tick's value; ``tick_label`` is its Python twin (the tests render
charts with vl-convert and check the two agree). Decimal prefixes for FLOP/s, FLOPs, MACs, B/s and seconds, binary
for bytes (KiB, MiB, GiB), as ``core.units.format_bytes`` writes memory everywhere else in the app. Tooltips carry
the full figures as text columns made here (``full``): Vega-Lite cannot call Python, and a d3 format cannot add the
unit prefix.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from decimal import ROUND_HALF_UP, Decimal

import altair as alt
import pandas as pd
import streamlit as st

from core.roofline import attainable, ridge

# -- engineering units ------------------------------------------------------------------------------------------

DECIMAL = ("", "k", "M", "G", "T", "P", "E")


@dataclass(frozen=True)
class Unit:
    """How one quantity is labelled: ``suffix`` after the prefix, ``base`` 1000 (decimal prefixes, one per 10³) or
    1024 (binary, one per 2¹⁰), the prefixes from the power ``lowest`` up, and whether a space separates number and
    unit ("1 TFLOP/s", but "10k" for a bare count)."""
    suffix: str
    base: int
    prefixes: tuple[str, ...]
    lowest: int = 0
    space: bool = True


UNITS = {
    "FLOP/s": Unit("FLOP/s", 1000, DECIMAL),
    "FLOPs": Unit("FLOPs", 1000, DECIMAL),
    "MACs": Unit("MACs", 1000, DECIMAL),
    "B/s": Unit("B/s", 1000, DECIMAL),                                   # bandwidth: GB/s, as the device tables
    "B": Unit("B", 1024, ("", "Ki", "Mi", "Gi", "Ti", "Pi")),            # memory: MiB, GiB, as format_bytes
    "s": Unit("s", 1000, ("p", "n", "µ", "m", ""), lowest=-4),          # no "ks": 5,000 s stays seconds
    "count": Unit("", 1000, DECIMAL, space=False),                       # samples/s, parameters: "10k", "25M"
    "FLOP/byte": Unit("", 1000, ("",), space=False),                     # intensity: plain "0.01" … "10,000"
}
EPS = 1e-9          # log10(1e12) is 11.999999999999998 in floating point: a tick at 1e12 is 1 T, not 1,000 G


def _power(v: float, unit: Unit) -> int:
    """The prefix step of ``v`` (0 = no prefix), clamped to the unit's prefixes; the same arithmetic as the
    expression's (natural log over LN10 or LN2, as Vega has no log10)."""
    if unit.base == 1000:
        step = math.floor(math.log(abs(v)) / math.log(10) / 3 + EPS)
    else:
        step = math.floor(math.log(abs(v)) / math.log(2) / 10 + EPS)
    return min(max(step, unit.lowest), unit.lowest + len(unit.prefixes) - 1)


def d3_rounded(x: float, digits: int = 3) -> str:
    """d3-format's ``,.{digits}~r``: ``digits`` significant digits in plain decimal notation (never 1e+3), thousands
    separated by commas, trailing zeros dropped, U+2212 for minus; rounding half up as JavaScript's toExponential."""
    if x == 0:
        return "0"
    d = Decimal(abs(x))
    exp = d.adjusted()
    q = d.quantize(Decimal(1).scaleb(exp - digits + 1), rounding=ROUND_HALF_UP)
    if q.adjusted() > exp:                              # 9.995 → 10.0: one digit more before the point
        exp = q.adjusted()
        q = d.quantize(Decimal(1).scaleb(exp - digits + 1), rounding=ROUND_HALF_UP)
    text = f"{q:,f}"
    if "." in text:
        text = text.rstrip("0").rstrip(".")
    return ("−" if x < 0 else "") + text


def eng(value: float, unit: str, scale: float = 1.0, digits: int = 3) -> str:
    """``value × scale`` with the unit's prefix: eng(2e11, "FLOP/s") → "200 GFLOP/s", eng(10, "s", 1e-3) → "10 ms",
    eng(0.5, "B", 2**30) → "512 MiB"; the Python twin of ``label_expr`` (digits=3)."""
    u = UNITS[unit]
    v = value * scale
    if v == 0:
        return "0"
    k = _power(v, u)
    return d3_rounded(v / u.base ** k, digits) + (" " if u.space else "") + u.prefixes[k - u.lowest] + u.suffix


def _kept(value: float, keep: tuple[int, ...] | None) -> bool:
    """Whether a log-scale tick is labelled: its leading digit is one of ``keep`` (None: every tick)."""
    if keep is None or value <= 0:
        return True
    lead = value / 10 ** math.floor(math.log(value) / math.log(10) + EPS)
    return math.floor(lead + 0.5) in keep              # JavaScript's round (half up), not Python's (half even)


def tick_label(value: float, unit: str, scale: float = 1.0, keep: tuple[int, ...] | None = None) -> str:
    """The text ``label_expr`` gives a tick at ``value`` ('' for a log tick whose leading digit is not kept)."""
    return eng(value, unit, scale) if _kept(value, keep) else ""


def _num(x: float) -> str:
    return repr(float(x))


def label_expr(unit: str, scale: float = 1.0, keep: tuple[int, ...] | None = None,
               field: str = "datum.value") -> str:
    """A Vega expression that writes ``field × scale`` as ``eng`` does (``field`` is the tick value on an axis)."""
    u = UNITS[unit]
    v = f"({field} * {_num(scale)})" if scale != 1 else field
    ln = "LN10" if u.base == 1000 else "LN2"
    per = 3 if u.base == 1000 else 10
    high = u.lowest + len(u.prefixes) - 1
    k = f"clamp(floor(log(abs({v})) / {ln} / {per} + {EPS!r}), {u.lowest}, {high})"
    prefixes = "[" + ", ".join(f"'{p}'" for p in u.prefixes) + "]"
    label = (f"format({v} / pow({u.base}, {k}), ',.3~r') + '{' ' if u.space else ''}' + "
             f"{prefixes}[{k} - ({u.lowest})] + '{u.suffix}'")
    expr = f"{v} == 0 ? '0' : {label}"
    if keep is not None:
        lead = f"round({field} / pow(10, floor(log({field}) / LN10 + {EPS!r})))"
        expr = f"{field} > 0 && indexof({list(keep)}, {lead}) < 0 ? '' : ({expr})"
    return expr


def log_keep(values, decades: float = 3) -> tuple[int, ...] | None:
    """Which log ticks to label for data spanning ``values``: 1s only over more than ``decades`` decades (the axis
    is crowded; an x axis, whose labels are wide, passes 1), 1, 2 and 5 over one decade up to that, every tick
    within one decade."""
    vals = [float(v) for v in values if v is not None and v == v and v > 0]
    if not vals:
        return (1,)
    span = math.log10(max(vals) / min(vals))
    return (1,) if span > decades else (1, 2, 5) if span >= 1 else None


def axis(unit: str, scale: float = 1.0, *, log_values=None, wide: bool = False, **kwargs) -> alt.Axis:
    """An axis labelled in engineering units; ``log_values``: the data of a log axis (it decides which ticks are
    labelled, ``log_keep``); ``wide``: an x axis, where labels sit side by side and need more room."""
    keep = log_keep(log_values, 1 if wide else 3) if log_values is not None else None
    return alt.Axis(labelExpr=label_expr(unit, scale, keep), **kwargs)


def full(value, unit: str, scale: float = 1.0) -> str:
    """The full figure for a tooltip: 4 significant digits with the prefix and, for counts of FLOPs, MACs and bytes
    and for rates, the exact number beside it ("15.7 TFLOP/s (15,700,000,000,000 FLOP/s)"); '' when missing."""
    if value is None or value != value:
        return ""
    v = value * scale
    if unit == "FLOP/byte":
        return f"{v:,.2f} FLOP/byte"
    if unit == "count":
        return f"{v:,.1f}" if v < 1000 else f"{v:,.0f}"
    if unit == "s":
        return eng(v, "s", digits=5)
    short = eng(v, unit, digits=4)
    exact = f"{round(v):,} {UNITS[unit].suffix}"
    return short if short == exact else f"{short} ({exact})"


def _texts(frame: pd.DataFrame, columns: dict) -> pd.DataFrame:
    """``frame`` with a text column per {new column: (source column, unit, scale)}, for tooltips (each distinct
    value formatted once: a roof repeats its device's peak on every row)."""
    def texts(values, unit, scale):
        done = {}
        return [done[v] if v in done else done.setdefault(v, full(v, unit, scale)) for v in values]
    return frame.assign(**{new: texts(frame[src], unit, scale)
                           for new, (src, unit, scale) in columns.items() if src in frame})


LEGEND = alt.Legend(labelLimit=0)           # full device names ("NVIDIA Tesla V100 SXM2 (16 GB) (2017)"), never cut


# -- data -------------------------------------------------------------------------------------------------------

def roofline_frame(devices, compute: str, lo: float = 0.01, hi: float = 10_000.0, points: int = 60) -> pd.DataFrame:
    """The roof of each device: attainable FLOP/s over a log range of arithmetic intensity, with the device's peak
    and bandwidth on every row (the line's tooltip)."""
    rows = []
    for d in devices:
        if compute not in d.peak_flops:
            continue
        peak = d.peak(compute)
        xs = sorted({lo * (hi / lo) ** (i / (points - 1)) for i in range(points)} | {ridge(peak, d.memory_bandwidth)})
        rows += [{"device": d.name, "intensity": x, "flops": attainable(x, peak, d.memory_bandwidth), "peak": peak,
                  "bandwidth": d.memory_bandwidth, "precision": compute} for x in xs]
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
                         "work": flops,
                         "limited_by": r["limited_by"] if which == "forward" else r["backward_limited_by"]})
    return pd.DataFrame(rows)


# -- charts -----------------------------------------------------------------------------------------------------

def roofline_chart(roofs: pd.DataFrame, points: pd.DataFrame, network: dict | None = None,
                   shape_by: str = "bound", *, order: list[str] | None = None,
                   names: dict[str, str] | None = None) -> alt.Chart:
    """Each device's roof (a line per ``device``), the ``points`` (layers, or networks) at their intensity and
    FLOP/s shaped by ``shape_by``, and the whole ``network`` as a diamond. ``order``: the legend's order of devices;
    ``names``: tooltip titles for the points' ``layer`` and ``op`` columns (a lab puts networks and devices there)."""
    names = {"layer": "layer", "op": "op", **(names or {})}
    values = [*roofs.get("flops", []), *points.get("flops", []), *([network["flops"]] if network else [])]
    x = alt.X("intensity:Q", scale=alt.Scale(type="log"), title="arithmetic intensity (FLOP/byte)",
              axis=axis("FLOP/byte", log_values=[*roofs.get("intensity", []), *points.get("intensity", [])],
                        wide=True))
    y = alt.Y("flops:Q", scale=alt.Scale(type="log"), title="FLOP/s", axis=axis("FLOP/s", log_values=values))
    roofs = _texts(roofs, {"peak_text": ("peak", "FLOP/s", 1.0), "bandwidth_text": ("bandwidth", "B/s", 1.0)})
    if "peak" in roofs:
        roofs = _texts(roofs.assign(ridge=roofs["peak"] / roofs["bandwidth"]),
                       {"ridge_text": ("ridge", "FLOP/byte", 1.0)})
    line_tips = [alt.Tooltip("device:N", title="device"),
                 *([alt.Tooltip("precision:N", title="precision"), alt.Tooltip("peak_text:N", title="peak"),
                    alt.Tooltip("bandwidth_text:N", title="memory bandwidth"),
                    alt.Tooltip("ridge_text:N", title="ridge point")] if "peak" in roofs else [])]
    chart = alt.Chart(roofs).mark_line().encode(
        x=x, y=y, color=alt.Color("device:N", title="device", sort=order, legend=LEGEND), tooltip=line_tips)
    # the same roofs as wide invisible strokes: a 2-pixel line is hard to hover, a 12-pixel band shows its tooltip
    chart += alt.Chart(roofs).mark_line(strokeWidth=12, strokeOpacity=0).encode(
        x=x, y=y, detail=alt.Detail("device:N"), tooltip=line_tips)
    if not points.empty:
        points = _texts(points, {"flops_text": ("flops", "FLOP/s", 1.0), "time_text": ("time_ms", "s", 1e-3),
                                 "work_text": ("work", "FLOPs", 1.0)}).assign(
            intensity_text=[full(v, "FLOP/byte") for v in points["intensity"]])
        chart += alt.Chart(points).mark_point(size=50, opacity=0.8, filled=True).encode(
            x=x, y=y, shape=alt.Shape(f"{shape_by}:N", title=shape_by.replace("_", " ")),
            tooltip=[alt.Tooltip("layer:N", title=names["layer"]), alt.Tooltip("op:N", title=names["op"]),
                     *([alt.Tooltip("limited_by:N", title="limited by")] if "limited_by" in points else []),
                     *([alt.Tooltip("bound:N", title="bound")] if shape_by != "bound" and "bound" in points else []),
                     alt.Tooltip("intensity_text:N", title="intensity"),
                     alt.Tooltip("flops_text:N", title="FLOP/s"),
                     *([alt.Tooltip("work_text:N", title="FLOPs")] if "work" in points else []),
                     *([alt.Tooltip("time_text:N", title="time")] if "time_ms" in points else [])])
    if network:
        net = pd.DataFrame([{**network, "intensity_text": full(network["intensity"], "FLOP/byte"),
                             "flops_text": full(network["flops"], "FLOP/s")}])
        chart += alt.Chart(net).mark_point(size=250, shape="diamond", filled=True, color="black").encode(
            x=x, y=y, tooltip=[alt.Tooltip("label:N", title="network"),
                               alt.Tooltip("intensity_text:N", title="intensity"),
                               alt.Tooltip("flops_text:N", title="FLOP/s")])
    return chart.properties(height=460)


def memory_chart(frame: pd.DataFrame, capacity_gib: float | None) -> alt.Chart:
    """Memory (columns in GiB) vs batch size, log-log, with the device's capacity as a rule. The memory axis is
    base-2 logarithmic, so its ticks fall on binary sizes: "64 MiB", "1 GiB", "16 GiB"."""
    long = frame.melt("batch", var_name="memory", value_name="GiB")
    long["memory"] = long["memory"].str.removesuffix(" GiB")            # the axis says the unit
    long = _texts(long, {"size": ("GiB", "B", 2 ** 30)})
    y = alt.Y("GiB:Q", scale=alt.Scale(type="log", base=2), title="memory", axis=axis("B", 2 ** 30))
    chart = alt.Chart(long).mark_line(point=True).encode(
        x=alt.X("batch:Q", scale=alt.Scale(type="log", base=2), axis=alt.Axis(format=",d")), y=y,
        color=alt.Color("memory:N", legend=LEGEND),
        tooltip=[alt.Tooltip("batch:Q", format=",d"), alt.Tooltip("memory:N"), alt.Tooltip("size:N", title="size")])
    if capacity_gib:
        rule = pd.DataFrame([{"GiB": capacity_gib, "label": "device memory",
                              "size": full(capacity_gib, "B", 2 ** 30)}])
        chart += alt.Chart(rule).mark_rule(color="red", strokeDash=[6, 3]).encode(
            y=y, tooltip=[alt.Tooltip("label:N", title="line"), alt.Tooltip("size:N", title="size")])
    return chart.properties(height=300)


def _render(chart: alt.Chart | dict, fmt: str) -> bytes | str:
    """The chart as SVG text or PNG bytes, drawn server-side by vl-convert (imported on first download only)."""
    import json

    import vl_convert

    spec = json.dumps(chart) if isinstance(chart, dict) else chart.to_json()
    return vl_convert.vegalite_to_svg(spec) if fmt == "svg" else vl_convert.vegalite_to_png(spec, scale=2)


def show(chart: alt.Chart | dict, key: str, file_name: str, container=None) -> None:
    """Draw ``chart`` (altair, or a Vega-Lite spec as a dict) with SVG and PNG download buttons under it; the image is
    drawn only when one is clicked.

    Build charts from channel objects (``alt.X("a:Q")``, ``alt.Tooltip("b:N")``), not shorthand strings: altair
    resolves each string against the Vega-Lite schema, several ms apiece, which the page pays on every change."""
    box = container if container is not None else st
    # altair validates a spec against the Vega-Lite schema, data rows included, on every render (tens of ms for a
    # roofline's 500 points); the helpers' specs are validated once in the tests instead (test_app)
    spec = chart if isinstance(chart, dict) else chart.to_dict(validate=False)
    box.vega_lite_chart(spec, width="stretch", key=key)
    a, b, _ = box.columns([1, 1, 6])
    a.download_button("SVG", lambda: _render(chart, "svg"), f"{file_name}.svg", "image/svg+xml", key=f"{key}_svg",
                      type="tertiary", icon=":material/download:", on_click="ignore")
    b.download_button("PNG", lambda: _render(chart, "png"), f"{file_name}.png", "image/png", key=f"{key}_png",
                      type="tertiary", icon=":material/download:", on_click="ignore")


def _value_axis(unit: str | None, scale: float, log: bool, values, wide: bool = False) -> alt.Axis | object:
    if unit is None:
        return alt.Undefined
    return axis(unit, scale, log_values=values if log else None, wide=wide)


def lines_chart(frame: pd.DataFrame, x: str, ys: list[str], y_title: str, *, unit: str | None = None,
                scale: float = 1.0, log_x: bool = True, log_y: bool = False) -> alt.Chart:
    """Several columns of ``frame`` against ``x`` as lines with points (batch sweeps, scaling curves). ``unit`` and
    ``scale``: the values are ``scale`` × that unit (ms: "s", 1e-3), for the axis labels and the tooltip."""
    long = frame.melt(x, value_vars=ys, var_name="series", value_name="value")
    long = long.assign(text=[full(v, unit, scale) if unit else f"{v:,.4f}" for v in long["value"]])
    return alt.Chart(long).mark_line(point=True).encode(
        x=alt.X(f"{x}:Q", scale=alt.Scale(type="log", base=2) if log_x else alt.Undefined,
                axis=alt.Axis(format=",d") if log_x else alt.Undefined),
        y=alt.Y("value:Q", title=y_title, scale=alt.Scale(type="log") if log_y else alt.Undefined,
                axis=_value_axis(unit, scale, log_y, long["value"])),
        color=alt.Color("series:N", title=None, legend=LEGEND),
        tooltip=[alt.Tooltip(f"{x}:Q", format=",d" if log_x else ",~f"), alt.Tooltip("series:N"),
                 alt.Tooltip("text:N", title=y_title)]
    ).properties(height=300)


def bars_chart(frame: pd.DataFrame, label: str, value: str, color: str | None = None, *, unit: str | None = None,
               scale: float = 1.0, log: bool = False, title: str | None = None) -> alt.Chart:
    """One horizontal bar per row, in the frame's order (device comparisons, network comparisons), its label in
    full; ``title``: the value axis's (default the column's name). On a log scale the bars start at the decade
    below the smallest value (a bar from 0 has no length on a log scale: Vega draws none)."""
    frame = frame.assign(text=[full(v, unit, scale) if unit else f"{v:,.4f}" for v in frame[value]])
    scl, base = alt.Undefined, {}
    positive = [v for v in frame[value] if v > 0]
    log = log and bool(positive)            # nothing above 0 (a network that takes no time): a linear axis at 0
    if log:
        low = 10 ** math.floor(math.log10(min(positive)) - EPS)         # 1.0 → 0.1, not 1: every bar has a length
        scl, base = alt.Scale(type="log", domainMin=low), {"x2": alt.datum(low)}
    enc = {"y": alt.Y(f"{label}:N", sort=None, title=None, axis=alt.Axis(labelLimit=0, labelOverlap=False)),
           "x": alt.X(f"{value}:Q", scale=scl, title=title or value,
                      axis=_value_axis(unit, scale, log, frame[value], wide=True)), **base,
           "tooltip": [alt.Tooltip(f"{label}:N"), alt.Tooltip("text:N", title=title or value),
                       *([alt.Tooltip(f"{color}:N")] if color else [])]}
    if color:
        enc["color"] = alt.Color(f"{color}:N")
    return alt.Chart(frame).mark_bar().encode(**enc).properties(height=max(120, 20 * len(frame)))


def scatter_chart(df: pd.DataFrame, x: str, title: str, *, unit: str, scale: float = 1.0) -> alt.Chart:
    """Latency (column "latency ms") against ``x`` (``scale`` × ``unit``) on log-log axes, one labelled point per
    network (the Benchmark page's and lab 2's latency vs FLOPs and parameters)."""
    df = _texts(df, {"latency_text": ("latency ms", "s", 1e-3), "x_text": (x, unit, scale)})
    enc = {"x": alt.X(f"{x}:Q", scale=alt.Scale(type="log"), title=title,
                      axis=axis(unit, scale, log_values=df[x], wide=True)),
           "y": alt.Y("latency ms:Q", scale=alt.Scale(type="log"), title="forward latency (batch 1)",
                      axis=axis("s", 1e-3, log_values=df["latency ms"]))}
    points = alt.Chart(df).mark_circle(size=80).encode(
        **enc, tooltip=[alt.Tooltip("network:N"), alt.Tooltip("input:N"),
                        alt.Tooltip("latency_text:N", title="latency"), alt.Tooltip("x_text:N", title=title)])
    labels = alt.Chart(df).mark_text(align="left", dx=7, fontSize=11).encode(**enc, text=alt.Text("network:N"))
    return (points + labels).properties(height=320)
