"""Charts people read easily (issue 16): axes in engineering units, legends with whole device names, tooltips with
the full figures, and tables whose empty cells are blank rather than "None".

The axis labels come from a Vega expression (``ui.charts.label_expr``) that only a Vega runtime evaluates: the
tests render charts with vl-convert (the renderer behind the download buttons) and compare the label texts in the
SVG with the Python twin ``ui.charts.tick_label`` and with hand-written expectations."""

from __future__ import annotations

import html
import math
import re
from pathlib import Path

import altair as alt
import pandas as pd
import pytest
from streamlit.testing.v1 import AppTest

from core.api import estimate
from core.devices import load_devices
from ui import charts
from ui.charts import UNITS, _render, bars_chart, eng, full, label_expr, roofline_chart, roofline_frame, tick_label
from ui.devices_form import SURVEY, overlay
from ui.labs import lab2

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def db():
    return load_devices(user_path=None)


def texts(svg: str, visible: bool = True) -> list[str]:
    """The text elements of an SVG drawn by vl-convert; ``visible``: without those hidden by label overlap."""
    out = []
    for attrs, text in re.findall(r"<text([^>]*)>([^<]*)</text>", svg):
        if visible and re.search(r'opacity="0"', attrs):
            continue
        out.append(html.unescape(text))
    return out


# == the Python twin, by hand ======================================================================================

@pytest.mark.parametrize(("value", "unit", "scale", "expected"), [
    (2e11, "FLOP/s", 1, "200 GFLOP/s"),
    (1e12, "FLOP/s", 1, "1 TFLOP/s"),            # log10(1e12) = 11.999999999999998 in floating point: still T
    (1e14, "FLOP/s", 1, "100 TFLOP/s"),
    (15.7e12, "FLOP/s", 1, "15.7 TFLOP/s"),      # V100 fp32
    (30.959, "FLOPs", 1e9, "31 GFLOPs"),         # VGG16's 30.959 GFLOPs at 3 significant digits
    (7.609, "MACs", 1e9, "7.61 GMACs"),
    (900e9, "B/s", 1, "900 GB/s"),               # bandwidth is decimal, as the device tables
    (0.5, "B", 2 ** 30, "512 MiB"),              # 0.5 GiB = 2^29 B = 512 × 2^20 B
    (2, "B", 2 ** 30, "2 GiB"),
    (1536, "B", 1, "1.5 KiB"),                   # 1536 / 1024
    (16, "B", 2 ** 30, "16 GiB"),
    (10, "s", 1e-3, "10 ms"),
    (0.001, "s", 1e-3, "1 µs"),
    (2e-9, "s", 1, "2 ns"),
    (5000, "s", 1, "5,000 s"),                   # no kiloseconds
    (25.557, "count", 1e6, "25.6M"),             # ResNet-50's parameters: a bare count, no space
    (90_000, "count", 1, "90k"),
    (0.01, "FLOP/byte", 1, "0.01"),
    (10_000, "FLOP/byte", 1, "10,000"),          # intensity stays a plain number
    (17.444, "FLOP/byte", 1, "17.4"),
    (0, "FLOP/s", 1, "0"),
])
def test_engineering_labels_by_hand(value, unit, scale, expected):
    assert eng(value, unit, scale) == expected


def test_d3_rounding_and_the_log_tick_filter():
    assert charts.d3_rounded(1_234_567) == "1,230,000"           # 3 significant digits, never 1.23e+6
    assert charts.d3_rounded(0.000123456) == "0.000123"
    assert charts.d3_rounded(999.9999) == "1,000"
    assert charts.d3_rounded(-2.5) == "−2.5"                     # d3 writes U+2212
    assert charts.d3_rounded(1.125) == "1.13"                    # 1.125 is exact in binary: half up, as toExponential
    assert tick_label(3e12, "FLOP/s", keep=(1,)) == ""    # a 3 tick on a crowded log axis has no label
    assert tick_label(2e12, "FLOP/s", keep=(1, 2, 5)) == "2 TFLOP/s"
    assert tick_label(1e12, "FLOP/s", keep=(1,)) == "1 TFLOP/s"
    assert charts.log_keep([1e6, 1e14]) == (1,)           # 8 decades
    assert charts.log_keep([1, 200]) == (1, 2, 5)         # 2.3 decades
    assert charts.log_keep([1, 200], decades=1) == (1,)   # ... on an x axis
    assert charts.log_keep([20, 80]) is None              # within a decade: every tick


def test_full_figures_for_tooltips():
    assert full(15.7e12, "FLOP/s") == "15.7 TFLOP/s (15,700,000,000,000 FLOP/s)"
    assert full(1.5, "B", 2 ** 30) == "1.5 GiB (1,610,612,736 B)"        # 1.5 × 1,073,741,824
    assert full(12.3456, "s", 1e-3) == "12.346 ms"
    assert full(17.444, "FLOP/byte") == "17.44 FLOP/byte"
    assert full(1234.56, "count") == "1,235"
    assert full(None, "FLOP/s") == "" and full(float("nan"), "s") == ""


# == the expression equals its twin, evaluated by Vega =============================================================

VALUES = [0, 1e-12, 3.2e-7, 0.001, 0.0125, 0.5, 1, 2, 9.99, 10, 999.5, 1000, 1024, 1536, 2 ** 20, 0.1 * 2 ** 30,
          1e12, 1e12 - 1, 123_456_789, 2.5e14, 7e18, 3e21, -2e9, *(10 ** (k / 7) for k in range(-70, 134))]


@pytest.mark.parametrize("unit", list(UNITS))
def test_label_expr_evaluated_by_vega_matches_the_python_twin(unit):
    """Each value in a text mark labelled by the expression (field datum.v instead of a tick's datum.value)."""
    scale = {"s": 1e-3, "B": 2 ** 30}.get(unit, 1.0)
    for keep in (None, (1, 2, 5)):
        frame = pd.DataFrame({"v": VALUES, "i": range(len(VALUES))})
        chart = alt.Chart(frame).transform_calculate(t=label_expr(unit, scale, keep, field="datum.v")).mark_text(
        ).encode(x=alt.X("i:O", axis=None), text=alt.Text("t:N"))
        got = texts(_render(chart, "svg"), visible=False)
        expected = [tick_label(v, unit, scale, keep) for v in VALUES]
        assert got == [e for e in expected if e], (unit, keep)             # Vega draws no empty text


# == each chart's axes, rendered ==================================================================================

def views(spec: dict, data: dict | None = None) -> list[dict]:
    """Every single view of a (nested) layered spec, with the data it draws (its own, or its parent's) under
    "data"."""
    data = spec.get("data", data)
    if "layer" in spec:
        return [v for layer in spec["layer"] for v in views(layer, data)]
    return [{**spec, "data": data}]


def quantitative_axes(spec: dict) -> list[tuple[str, dict]]:
    """(field, axis) of every quantitative x or y encoding in a (layered) spec."""
    out = []
    for layer in views(spec):
        for ch in ("x", "y"):
            enc = layer.get("encoding", {}).get(ch)
            if enc and enc.get("type") == "quantitative":
                out.append((enc["field"], enc.get("axis", {})))
    return out


@pytest.fixture(scope="module")
def every_chart(db):
    """Every chart helper the pages use, built from real analyses, with the unit its value axis shows."""
    v100 = db.devices["v100-sxm2"]
    est = estimate("resnet18", v100, batch_size=8)
    by_batch = pd.DataFrame({"batch": [1, 2, 4, 8, 16], "forward ms": [0.5, 0.6, 0.9, 1.5, 2.8],
                             "training step ms": [1.5, 1.9, 2.8, 4.6, 8.5]})
    mem = pd.DataFrame({"batch": [1, 8, 64, 512], "training memory GiB": [0.02, 0.1, 0.7, 5.5],
                        "inference memory GiB": [0.005, 0.03, 0.2, 1.6]})
    across = pd.DataFrame({"network": ["resnet18", "vgg11", "mobilenet_v2"], "input": ["3×64×64"] * 3,
                           "latency ms": [3.0, 40.0, 1.2], "GFLOPs": [0.15, 0.62, 0.025],
                           "M params": [11.7, 132.9, 3.5]})
    devices = pd.DataFrame({"device": [d.name for d in db.devices.values()][:6],
                            "forward ms": [0.2, 1.0, 3.0, 40.0, 7.0, 0.05], "bound": ["memory", "compute"] * 3})
    return {
        "roofline": (roofline_chart(roofline_frame([v100], "fp32"), charts.layer_points(est),
                                    {"intensity": 20.0, "flops": 5e12, "label": "resnet18"}), "FLOP/s"),
        "memory": (charts.memory_chart(mem, 16.0), "B"),
        "time": (charts.lines_chart(by_batch, "batch", ["forward ms", "training step ms"], "time", unit="s", scale=1e-3,
                             log_y=True), "s"),
        "bars": (bars_chart(devices, "device", "forward ms", "bound", unit="s", scale=1e-3, log=True), "s"),
        "scatter": (charts.scatter_chart(across, "GFLOPs", "forward FLOPs", unit="FLOPs", scale=1e9), "s"),
        "lab2 throughput": (lab2.throughput_chart(lab2.throughput_table(["mnist_cnn"], [v100])), "count"),
    }


def test_every_value_axis_uses_the_engineering_labels(every_chart):
    for name, (chart, unit) in every_chart.items():
        axes = [(f, a) for f, a in quantitative_axes(chart) if f != "batch"]
        assert axes, name
        for field, ax in axes:
            assert "labelExpr" in ax and "format(" in ax["labelExpr"], (name, field)
        suffix = UNITS[unit].suffix
        assert any(f"'{suffix}'" in a["labelExpr"] for _, a in axes), name


def test_rendered_axes_read_in_engineering_units(every_chart):
    for name, (chart, _) in every_chart.items():
        labels = texts(_render(chart, "svg"), visible=False)
        assert not any(re.search(r"\de[+-]\d", t) for t in labels), (name, labels)        # no 1e+14
        assert not any(re.search(r"\d,\d{3},\d{3}", t) for t in labels), (name, labels)  # no 200,000,000,000
    roof = texts(_render(every_chart["roofline"][0], "svg"))
    # V100 fp32: 15.7 TFLOP/s peak; the roof starts at 0.01 FLOP/byte × 900 GB/s = 9 GFLOP/s; layers go lower
    assert {"1 TFLOP/s", "10 TFLOP/s", "100 GFLOP/s", "10 GFLOP/s"} <= set(roof)
    assert {"0.01", "1", "100", "10,000"} <= set(roof)                                  # intensity, plain
    mem = texts(_render(every_chart["memory"][0], "svg"))
    assert "1 GiB" in mem and "16 GiB" in mem and any(t.endswith(" MiB") for t in mem)  # base-2 ticks: binary
    assert all(re.fullmatch(r"\d+ [KMG]iB", t) for t in mem if t.endswith("iB"))        # 2^k: whole numbers
    time = texts(_render(every_chart["time"][0], "svg"))
    assert {"1 ms", "2 ms", "5 ms"} <= set(time)                                        # 0.5 … 8.5 ms: 1-2-5
    scatter = texts(_render(every_chart["scatter"][0], "svg"))
    assert "100 MFLOPs" in scatter and "10 ms" in scatter


def test_bars_on_a_log_scale_are_drawn(every_chart):
    """A bar from 0 has no length on a log scale (Vega drew none: the Estimates page's 'Other devices' chart was
    empty); each bar now starts at the decade below the smallest value, 10 µs here (0.05 ms → 0.01 ms)."""
    svg = _render(every_chart["bars"][0], "svg")
    widths = [float(w) for w in re.findall(r'aria-roledescription="bar" d="M[-\d.]+,[-\d.]+h([-\d.]+)', svg)]
    assert len(widths) == 6 and all(w > 0 for w in widths)
    assert "10 µs" in texts(svg)


# == legends and tooltips =========================================================================================

def test_legend_names_devices_in_full(db):
    roofs, order, _, _ = overlay(db, SURVEY, "fp32")
    svg = _render(roofline_chart(roofs, pd.DataFrame(), order=order), "svg")
    shown = texts(svg)
    assert "NVIDIA Tesla V100 SXM2 (16 GB) (2017)" in shown
    assert not any(t.endswith("…") for t in shown)                  # nothing cut
    bars = _render(bars_chart(pd.DataFrame({"device": [d.name for d in db.devices.values()],
                                            "ms": [1.0] * len(db.devices)}), "device", "ms", unit="s", scale=1e-3),
                   "svg")
    assert not any(t.endswith("…") for t in texts(bars, visible=False))
    assert set(d.name for d in db.devices.values()) <= set(texts(bars))   # every label drawn, none hidden


def tooltips(spec: dict) -> list[list[str]]:
    """The tooltip titles of each layer's marks, text labels left out."""
    def mark(layer):
        return layer["mark"] if isinstance(layer["mark"], str) else layer["mark"]["type"]
    return [[t.get("title", t["field"]) for t in layer["encoding"].get("tooltip", [])]
            for layer in views(spec) if mark(layer) != "text"]


def test_every_mark_has_a_tooltip_with_full_figures(every_chart, db):
    for name, (chart, _) in every_chart.items():
        assert all(tooltips(chart)), name                           # every mark but a text label
    v100 = db.devices["v100-sxm2"]
    est = estimate("resnet18", v100)
    spec = roofline_chart(roofline_frame([v100], "fp32"), charts.layer_points(est))
    rows = [r for data in {id(v["data"]): v["data"] for v in views(spec)}.values() for r in data["values"]]
    band = [layer for layer in views(spec) if layer["mark"].get("strokeOpacity") == 0]
    assert band and band[0]["mark"]["strokeWidth"] >= 10 and tooltips(band[0])   # a roof is easy to hover
    roof = next(r for r in rows if "peak_text" in r)
    assert roof["peak_text"] == "15.7 TFLOP/s (15,700,000,000,000 FLOP/s)"    # the V100's fp32 datasheet peak
    assert roof["bandwidth_text"] == "900 GB/s (900,000,000,000 B/s)"
    assert roof["ridge_text"] == "17.44 FLOP/byte"                             # 15.7e12 / 900e9
    conv1 = next(r for r in rows if r.get("layer") == "conv1")
    layer = next(x for x in est.layers if x["name"] == "conv1")
    assert conv1["flops_text"] == full(layer["forward_flops"] / layer["forward_s"], "FLOP/s")
    # resnet18 conv1 at batch 1: 64·112·112·3·7·7 = 118,013,952 MACs → 236,027,904 FLOPs
    assert conv1["work_text"] == "236 MFLOPs (236,027,904 FLOPs)"
    lab = roofline_chart(roofline_frame([v100], "fp32"), lab2.network_points(["mnist_cnn"], [v100]),
                         names=lab2.POINT_NAMES)
    points = next(layer for layer in views(lab) if layer["mark"]["type"] == "point")
    assert tooltips(points)[0][:2] == ["network", "device"]          # a lab's points are networks on devices


# == tables: empty cells, not "None" ===============================================================================

def shows_blank(table) -> bool:
    """Whether the table's missing cells are empty: a placeholder set to "" (unset, Streamlit writes "None"; the
    field has presence, so unset and "" differ)."""
    return table.proto.HasField("placeholder") and table.proto.placeholder == ""


def _lab(n: int) -> AppTest:
    at = AppTest.from_file(str(ROOT / "views" / "course_labs.py"), default_timeout=120).run()
    at.button_group(key="lab").set_value(n).run()
    return at


def _estimates_tab(tab: str) -> AppTest:
    at = AppTest.from_file(str(ROOT / "views" / "estimates.py"), default_timeout=120)
    at.session_state["estimates_tab"] = tab
    return at.run()


def _page(name: str) -> AppTest:
    return AppTest.from_file(str(ROOT / "views" / name), default_timeout=120).run()


PAGES = {"layers": lambda: _page("layers.py"), "devices": lambda: _page("devices.py"),
         "compare": lambda: _page("compare.py"), "network": lambda: _page("network.py"),
         **{f"estimates {t}": (lambda t=t: _estimates_tab(t)) for t in ("Breakdown", "Batch size", "Other devices",
                                                                        "Convolution algorithm", "Data parallel")},
         **{f"lab {n}": (lambda n=n: _lab(n)) for n in range(1, 6)}}


@pytest.mark.parametrize("name", list(PAGES))
def test_no_table_shows_none(name):
    """Streamlit writes "None" in every cell without a value unless the table's placeholder says otherwise; every
    table with a missing value must have the empty placeholder (``ui.tables.dataframe``), and no cell may hold the
    text "None"."""
    at = PAGES[name]()
    assert not at.exception, at.exception
    assert at.dataframe, name
    for table in at.dataframe:
        frame = table.value
        if frame.isna().to_numpy().any():
            assert shows_blank(table), (name, table.key, list(frame.columns))
        for col in frame.columns:                   # a None turned into text by a format string
            assert not any(isinstance(v, str) and v == "None" for v in frame[col]), (name, table.key, col)


def test_lab1_predictions_the_model_cannot_make_are_missing_not_text():
    """Lab 1's K80 table: the time model predicts one GPU at fp32 only; the board and fp64 rows are NaN (shown
    blank), never the text "None"."""
    at = _lab(1)
    k80 = next(t for t in at.dataframe if "predicted ms" in t.value.columns)
    col = k80.value.set_index(["network", "K80", "precision"])["predicted ms"]
    assert math.isnan(col.loc[("vgg16", "board (2 GPUs)", "fp32")]) and math.isnan(col.loc[("vgg16", "one GPU",
                                                                                             "fp64")])
    assert col.loc[("vgg16", "one GPU", "fp32")] > 0
    assert shows_blank(k80)


def test_pages_show_tables_through_the_helper():
    """Every table call in the pages and labs goes through ``ui.tables.dataframe`` (Streamlit's own st.dataframe
    writes "None"); the Network page (views/network.py) is checked above by what it shows."""
    files = [*ROOT.joinpath("views").glob("*.py"), *ROOT.joinpath("ui").glob("*.py"),
             *ROOT.joinpath("ui", "labs").glob("*.py")]
    bare = [f"{p.relative_to(ROOT)}:{i}" for p in files if p.name not in ("network.py", "tables.py")
            for i, line in enumerate(p.read_text().splitlines(), 1)
            if re.search(r"\b(st|tab_\w+)\.dataframe\(", line)]
    assert not bare
