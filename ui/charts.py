"""Chart data and Vega-Lite specs built from ``core`` results (pages only lay them out).

Axes read in engineering units ("100 GFLOP/s", "1 TFLOP/s", "10 ms", "256 MiB"): each quantitative axis gets a
Vega ``labelExpr`` made by ``label_expr`` from the tick's value; ``tick_label`` is its Python twin (the tests render
charts with vl-convert and check the two agree). Decimal prefixes for FLOP/s, FLOPs, MACs, B/s and seconds, binary
for bytes (KiB, MiB, GiB), as ``core.units.format_bytes`` writes memory everywhere else in the app. Tooltips carry
the full figures as text columns made here (``full``): Vega-Lite cannot call Python, and a d3 format cannot add the
unit prefix.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from decimal import ROUND_HALF_UP, Decimal
from functools import lru_cache

import pandas as pd
import streamlit as st

from core.roofline import attainable, ridge
from ui.memo import memo

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


def axis(unit: str, scale: float = 1.0, *, log_values=None, wide: bool = False, **kwargs) -> dict:
    """A Vega-Lite axis labelled in engineering units; ``log_values``: the data of a log axis (it decides which ticks
    are labelled, ``log_keep``); ``wide``: an x axis, where labels sit side by side and need more room."""
    keep = log_keep(log_values, 1 if wide else 3) if log_values is not None else None
    return {"labelExpr": label_expr(unit, scale, keep), **kwargs}


@lru_cache(maxsize=65536)
def _full(value: float, unit: str, scale: float) -> str:
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


def full(value, unit: str, scale: float = 1.0) -> str:
    """The full figure for a tooltip: 4 significant digits with the prefix and, for counts of FLOPs, MACs and bytes
    and for rates, the exact number beside it ("15.7 TFLOP/s (15,700,000,000,000 FLOP/s)"); '' when missing."""
    if value is None or value != value:
        return ""
    return _full(value, unit, scale)


def _texts(frame: pd.DataFrame, columns: dict) -> pd.DataFrame:
    """``frame`` with a text column per {new column: (source column, unit, scale)}, for tooltips (each distinct
    value formatted once: a roof repeats its device's peak on every row)."""
    def texts(values, unit, scale):
        done = {}
        return [done[v] if v in done else done.setdefault(v, full(v, unit, scale)) for v in values]
    return frame.assign(**{new: texts(frame[src], unit, scale)
                           for new, (src, unit, scale) in columns.items() if src in frame})


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


# -- Vega-Lite specs as plain dicts -------------------------------------------------------------------------------
# altair deep-copies every data row, runs its data transformer and checks the schema on each render (tens of ms a
# chart, more than the drawing); these dicts are what its ``to_dict`` wrote, data passed once (tests/test_app.py
# validates them against the schema). Field names are Vega-Lite's: a field with "." or "[" would need escaping.

SCHEMA = "https://vega.github.io/schema/vega-lite/v6.4.1.json"          # altair 6's (a test keeps them equal)
CONFIG = {"view": {"continuousWidth": 300, "continuousHeight": 300}}     # altair's default theme
LEGEND = {"labelLimit": 0}          # full device names ("NVIDIA Tesla V100 SXM2 (16 GB) (2017)"), never cut
LOG, LOG2 = {"type": "log"}, {"type": "log", "base": 2}


def _q(field: str, **kw) -> dict:
    return {"field": field, "type": "quantitative", **kw}


def _n(field: str, **kw) -> dict:
    return {"field": field, "type": "nominal", **kw}


def records(frame: pd.DataFrame) -> list[dict]:
    """The frame's rows as JSON-ready dicts (a missing value is null, as altair writes it)."""
    rows = frame.to_dict("records")
    if frame.isna().to_numpy().any():
        rows = [{k: None if isinstance(v, float) and v != v else v for k, v in r.items()} for r in rows]
    return rows


def _spec(height: int, **view) -> dict:
    return {"config": CONFIG, **view, "height": height, "$schema": SCHEMA}


def roofline_chart(roofs: pd.DataFrame, points: pd.DataFrame, network: dict | None = None,
                   shape_by: str = "bound", *, order: list[str] | None = None,
                   names: dict[str, str] | None = None) -> dict:
    """Each device's roof (a line per ``device``), the ``points`` (layers, or networks) at their intensity and
    FLOP/s shaped by ``shape_by``, and the whole ``network`` as a diamond. ``order``: the legend's order of devices;
    ``names``: tooltip titles for the points' ``layer`` and ``op`` columns (a lab puts networks and devices there)."""
    names = {"layer": "layer", "op": "op", **(names or {})}
    values = [*roofs.get("flops", []), *points.get("flops", []), *([network["flops"]] if network else [])]
    x = _q("intensity", scale=LOG, title="arithmetic intensity (FLOP/byte)",
           axis=axis("FLOP/byte", log_values=[*roofs.get("intensity", []), *points.get("intensity", [])], wide=True))
    y = _q("flops", scale=LOG, title="FLOP/s", axis=axis("FLOP/s", log_values=values))
    roofs = _texts(roofs, {"peak_text": ("peak", "FLOP/s", 1.0), "bandwidth_text": ("bandwidth", "B/s", 1.0)})
    if "peak" in roofs:
        roofs = _texts(roofs.assign(ridge=roofs["peak"] / roofs["bandwidth"]),
                       {"ridge_text": ("ridge", "FLOP/byte", 1.0)})
    line_tips = [_n("device", title="device"),
                 *([_n("precision", title="precision"), _n("peak_text", title="peak"),
                    _n("bandwidth_text", title="memory bandwidth"),
                    _n("ridge_text", title="ridge point")] if "peak" in roofs else [])]
    # the roofs' rows once, for the line and, as wide invisible strokes, its hover band (a 2-pixel line is hard to
    # hover, a 12-pixel band shows its tooltip)
    layers = [{"data": {"values": records(roofs)}, "layer": [
        {"mark": {"type": "line"}, "encoding": {"x": x, "y": y, "tooltip": line_tips,
                                                "color": _n("device", title="device", sort=order, legend=LEGEND)}},
        {"mark": {"type": "line", "strokeWidth": 12, "strokeOpacity": 0},
         "encoding": {"x": x, "y": y, "detail": _n("device"), "tooltip": line_tips}}]}]
    if not points.empty:
        points = _texts(points, {"flops_text": ("flops", "FLOP/s", 1.0), "time_text": ("time_ms", "s", 1e-3),
                                 "work_text": ("work", "FLOPs", 1.0)}).assign(
            intensity_text=[full(v, "FLOP/byte") for v in points["intensity"]])
        tips = [_n("layer", title=names["layer"]), _n("op", title=names["op"]),
                *([_n("limited_by", title="limited by")] if "limited_by" in points else []),
                *([_n("bound", title="bound")] if shape_by != "bound" and "bound" in points else []),
                _n("intensity_text", title="intensity"), _n("flops_text", title="FLOP/s"),
                *([_n("work_text", title="FLOPs")] if "work" in points else []),
                *([_n("time_text", title="time")] if "time_ms" in points else [])]
        layers.append({"data": {"values": records(points)},
                       "mark": {"type": "point", "filled": True, "opacity": 0.8, "size": 50},
                       "encoding": {"x": x, "y": y, "shape": _n(shape_by, title=shape_by.replace("_", " ")),
                                    "tooltip": tips}})
    if network:
        net = {**network, "intensity_text": full(network["intensity"], "FLOP/byte"),
               "flops_text": full(network["flops"], "FLOP/s")}
        layers.append({"data": {"values": [net]},
                       "mark": {"type": "point", "color": "black", "filled": True, "shape": "diamond", "size": 250},
                       "encoding": {"x": x, "y": y, "tooltip": [_n("label", title="network"),
                                                                _n("intensity_text", title="intensity"),
                                                                _n("flops_text", title="FLOP/s")]}})
    return _spec(460, layer=layers)


def memory_chart(frame: pd.DataFrame, capacity_gib: float | None) -> dict:
    """Memory (columns in GiB) vs batch size, log-log, with the device's capacity as a rule. The memory axis is
    base-2 logarithmic, so its ticks fall on binary sizes: "64 MiB", "1 GiB", "16 GiB"."""
    batches = list(frame["batch"])
    rows = [{"batch": b, "memory": col.removesuffix(" GiB"), "GiB": None if v != v else v,
             "size": full(v, "B", 2 ** 30)}
            for col in frame.columns if col != "batch" for b, v in zip(batches, frame[col].tolist())]
    y = _q("GiB", scale=LOG2, title="memory", axis=axis("B", 2 ** 30))
    layers = [{"data": {"values": rows}, "mark": {"type": "line", "point": True},
               "encoding": {"x": _q("batch", scale=LOG2, axis={"format": ",d"}), "y": y,
                            "color": _n("memory", legend=LEGEND),
                            "tooltip": [_q("batch", format=",d"), _n("memory"), _n("size", title="size")]}}]
    if capacity_gib:
        layers.append({"data": {"values": [{"GiB": capacity_gib, "label": "device memory",
                                            "size": full(capacity_gib, "B", 2 ** 30)}]},
                       "mark": {"type": "rule", "color": "red", "strokeDash": [6, 3]},
                       "encoding": {"y": y, "tooltip": [_n("label", title="line"), _n("size", title="size")]}})
    return _spec(300, layer=layers)


def cached_spec(key: tuple, build) -> dict:
    """``build()``'s spec, built once per ``key`` (``ui.memo``) and kept as JSON: each caller gets its own copy."""
    return json.loads(memo(("spec", *key), lambda: json.dumps(build(), allow_nan=False)))


def _render(chart: dict, fmt: str) -> bytes | str:
    """The chart as SVG text or PNG bytes, drawn server-side by vl-convert (imported on first download only)."""
    import vl_convert

    spec = json.dumps(chart) if isinstance(chart, dict) else chart.to_json()
    return vl_convert.vegalite_to_svg(spec) if fmt == "svg" else vl_convert.vegalite_to_png(spec, scale=2)


def _for_streamlit(spec: dict) -> dict:
    """What Streamlit may change in place (a null legend title on a single view's colour becomes " "), copied: the
    spec itself is cached, and the downloads draw it as built."""
    color = spec.get("encoding", {}).get("color")
    if not color:
        return spec
    return {**spec, "encoding": {**spec["encoding"], "color": {**color, **({"legend": {**color["legend"]}}
                                                                        if "legend" in color else {})}}}


def show(chart: dict, key: str, file_name: str, container=None) -> None:
    """Draw ``chart`` (a Vega-Lite spec as a dict; an altair chart works too) with SVG and PNG download buttons under
    it; the image is drawn only when one is clicked."""
    box = container if container is not None else st
    spec = _for_streamlit(chart) if isinstance(chart, dict) else chart.to_dict(validate=False)
    box.vega_lite_chart(spec, width="stretch", key=key)
    a, b, _ = box.columns([1, 1, 6])
    a.download_button("SVG", lambda: _render(chart, "svg"), f"{file_name}.svg", "image/svg+xml", key=f"{key}_svg",
                      type="tertiary", icon=":material/download:", on_click="ignore")
    b.download_button("PNG", lambda: _render(chart, "png"), f"{file_name}.png", "image/png", key=f"{key}_png",
                      type="tertiary", icon=":material/download:", on_click="ignore")


def _value_axis(unit: str | None, scale: float, log: bool, values, wide: bool = False) -> dict:
    return {} if unit is None else {"axis": axis(unit, scale, log_values=values if log else None, wide=wide)}


def _text(values, unit: str | None, scale: float) -> list[str]:
    return [full(v, unit, scale) if unit else f"{v:,.4f}" for v in values]


def lines_chart(frame: pd.DataFrame, x: str, ys: list[str], y_title: str, *, unit: str | None = None,
                scale: float = 1.0, log_x: bool = True, log_y: bool = False) -> dict:
    """Several columns of ``frame`` against ``x`` as lines with points (batch sweeps, scaling curves). ``unit`` and
    ``scale``: the values are ``scale`` × that unit (ms: "s", 1e-3), for the axis labels and the tooltip."""
    xs = frame[x].tolist()
    rows = [{x: a, "series": col, "value": v} for col in ys for a, v in zip(xs, frame[col].tolist())]
    values = [r["value"] for r in rows]
    for r, t in zip(rows, _text(values, unit, scale)):
        r["text"] = t
    if any(v != v for v in values):
        rows = records(pd.DataFrame(rows))
    return _spec(300, data={"values": rows}, mark={"type": "line", "point": True}, encoding={
        "x": _q(x, **({"scale": LOG2, "axis": {"format": ",d"}} if log_x else {})),
        "y": _q("value", title=y_title, **({"scale": LOG} if log_y else {}),
                **_value_axis(unit, scale, log_y, values)),
        "color": _n("series", title=None, legend=LEGEND),
        "tooltip": [_q(x, format=",d" if log_x else ",~f"), _n("series"), _n("text", title=y_title)]})


def bars_chart(frame: pd.DataFrame, label: str, value: str, color: str | None = None, *, unit: str | None = None,
               scale: float = 1.0, log: bool = False, title: str | None = None) -> dict:
    """One horizontal bar per row, in the frame's order (device comparisons, network comparisons), its label in
    full; ``title``: the value axis's (default the column's name). On a log scale the bars start at the decade
    below the smallest value (a bar from 0 has no length on a log scale: Vega draws none)."""
    frame = frame.assign(text=_text(frame[value], unit, scale))
    scl, base = {}, {}
    positive = [v for v in frame[value] if v > 0]
    log = log and bool(positive)            # nothing above 0 (a network that takes no time): a linear axis at 0
    if log:
        low = 10 ** math.floor(math.log10(min(positive)) - EPS)         # 1.0 → 0.1, not 1: every bar has a length
        scl, base = {"scale": {"type": "log", "domainMin": low}}, {"x2": {"datum": low}}
    enc = {"y": _n(label, sort=None, title=None, axis={"labelLimit": 0, "labelOverlap": False}),
           "x": _q(value, **scl, title=title or value, **_value_axis(unit, scale, log, frame[value], wide=True)),
           **base, "tooltip": [_n(label), _n("text", title=title or value), *([_n(color)] if color else [])]}
    if color:
        enc["color"] = _n(color)
    return _spec(max(120, 20 * len(frame)), data={"values": records(frame)}, mark={"type": "bar"}, encoding=enc)


def scatter_chart(df: pd.DataFrame, x: str, title: str, *, unit: str, scale: float = 1.0) -> dict:
    """Latency (column "latency ms") against ``x`` (``scale`` × ``unit``) on log-log axes, one labelled point per
    network (the Benchmark page's and lab 2's latency vs FLOPs and parameters)."""
    df = _texts(df, {"latency_text": ("latency ms", "s", 1e-3), "x_text": (x, unit, scale)})
    enc = {"x": _q(x, scale=LOG, title=title, axis=axis(unit, scale, log_values=df[x], wide=True)),
           "y": _q("latency ms", scale=LOG, title="forward latency (batch 1)",
                   axis=axis("s", 1e-3, log_values=df["latency ms"]))}
    return _spec(320, data={"values": records(df)}, layer=[
        {"mark": {"type": "circle", "size": 80},
         "encoding": {**enc, "tooltip": [_n("network"), _n("input"), _n("latency_text", title="latency"),
                                         _n("x_text", title=title)]}},
        {"mark": {"type": "text", "align": "left", "dx": 7, "fontSize": 11},
         "encoding": {**enc, "text": _n("network")}}])
