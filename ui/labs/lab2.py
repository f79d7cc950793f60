"""Lab 2 · Devices across 25 years: a survey's devices on one roofline, ten torchvision networks on a CPU's and a GPU's
roofline, whether latency follows FLOPs or parameters (Spearman's ρ), throughput and the forward : backward ratio.

The numbers are pure functions over ``core`` (tests/test_labs.py checks them by hand); ``show`` lays them out, one tab
at a time (only the open tab runs: the lab draws a dozen charts in all)."""

from __future__ import annotations

import pandas as pd
import streamlit as st

import core
from core.api import estimate, sweep
from core.devices import PRECISION_KEYS
from ui import benchmark as bm
from ui.bench_results import timed_networks
from ui.charts import CONFIG, LEGEND, SCHEMA, axis, records, roofline_chart, roofline_frame, scatter_chart
from ui.charts import show as show_chart
from ui.devices_form import FASTEST, SURVEY, overlay, overlay_chart
from ui.labs.common import MIB, in_words, number, preferred, question, reading, shape
from ui.state import LIVE_OFF, live_allowed
from ui.tables import dataframe

TITLE = "2 · Devices across 25 years"
NEEDS = ()                                   # the user chooses among all devices
SURVEY_NETWORKS = ("resnet50", "alexnet", "mobilenet_v3_large", "vgg19", "squeezenet1_0", "efficientnet_b7",
                   "googlenet", "shufflenet_v2_x1_0", "wide_resnet101_2", "inception_v3")
THROUGHPUT_BATCHES = (1, 64, 256)
COMMON_INPUT = (3, 224, 224)                 # the input every network takes unless "each network's own" is chosen
OWN_INPUT = {"efficientnet_b7": "EfficientNet-B7", "inception_v3": "Inception v3"}   # own inputs named in its help
POINT_NAMES = {"layer": "network", "op": "device"}    # what network_points puts in roofline_chart's columns
MEASURE = {"device": "cpu", "warmup": 1, "repeats": 3, "max_seconds": 20.0, "threads": 1}   # "Measured here"


def devices_of_kind(db, kind: str, precision: str = "fp32") -> list[str]:
    return [i for i, d in db.devices.items() if d.kind == kind and precision in d.peak_flops]


def network_table(names, cpu, gpu, batch: int = 1, input_shape=None) -> pd.DataFrame:
    """Per network at ``batch``, fp32: size, per-image work, memory, operational intensity (forward FLOPs per byte
    moved), which side of each device's ridge it falls on, PALEO-predicted time, and backward ÷ forward FLOPs.
    ``input_shape`` None: each network's own input."""
    rows = []
    for name in names:
        r = core.analyze(name, input_shape=input_shape, batch_size=batch)
        t = r.totals
        on_cpu, on_gpu = (estimate(r, d, batch_size=batch, variant="paleo") for d in (cpu, gpu))
        rows.append({"network": name, "input": shape(r.input_shape), "M params": t["params"] / 1e6,
                     "GMACs/image": t["macs"] / batch / 1e9, "GFLOPs/image": t["flops"] / batch / 1e9,
                     "inference MiB": t["inference_bytes"] / MIB, "FLOP/byte": on_gpu.roofline["arithmetic_intensity"],
                     "CPU bound": on_cpu.roofline["bound"], "GPU bound": on_gpu.roofline["bound"],
                     "CPU ms": on_cpu.totals["forward_s"] * 1e3, "GPU ms": on_gpu.totals["forward_s"] * 1e3,
                     "backward ÷ forward FLOPs": t["backward_flops"] / t["flops"]})
    return pd.DataFrame(rows)


def network_points(names, devices, batch: int = 1, dtype: str = "fp32", input_shape=None) -> pd.DataFrame:
    """Each network on each device's roofline: its intensity and its PALEO FLOP/s (forward FLOPs ÷ predicted time),
    in the columns ``ui.charts.roofline_chart`` draws (``layer`` holds the network, ``op`` the device)."""
    rows = []
    for name in names:
        r = core.analyze(name, input_shape=input_shape, batch_size=batch, dtype=dtype)
        for dev in devices:
            e = estimate(r, dev, batch_size=batch, dtype=dtype, variant="paleo")
            t = e.totals
            rows.append({"layer": name, "op": dev.name, "intensity": e.roofline["arithmetic_intensity"],
                         "flops": t["forward_flops"] / t["forward_s"], "bound": e.roofline["bound"],
                         "time_ms": t["forward_s"] * 1e3})
    return pd.DataFrame(rows)


def latency_frame(table: pd.DataFrame, column: str) -> pd.DataFrame:
    """A ``network_table`` column of predicted ms in the shape ``ui.benchmark`` scatters and correlates."""
    return pd.DataFrame({"network": table["network"], "input": table["input"], "latency ms": table[column],
                         "GFLOPs": table["GFLOPs/image"], "M params": table["M params"]})


def rank_correlations(df: pd.DataFrame) -> dict:
    """Spearman ρ of latency with FLOPs and with parameters (``ui.benchmark.spearman``)."""
    return {"flops": bm.spearman(df["GFLOPs"], df["latency ms"]),
            "params": bm.spearman(df["M params"], df["latency ms"])}


def throughput_table(names, devices, batches=THROUGHPUT_BATCHES, input_shape=None) -> pd.DataFrame:
    """PALEO-predicted inference samples/s per network, device and batch size (fp32, PPP 1)."""
    return pd.DataFrame([{"network": e.report.name, "device": e.device.name, "batch": e.report.batch_size,
                          "samples/s": e.totals["inference_samples_per_s"]}
                         for name in names
                          for e in sweep(name, devices, batches, input_shape=input_shape, variant="paleo")])


def throughput_chart(df: pd.DataFrame) -> dict:
    """Samples/s vs batch, log-log: one line per network, solid or dashed by device (a Vega-Lite spec)."""
    return {"config": CONFIG, "data": {"values": records(df)}, "mark": {"type": "line", "point": True},
            "encoding": {"x": {"field": "batch", "type": "quantitative", "scale": {"type": "log", "base": 2}},
                         "y": {"field": "samples/s", "type": "quantitative", "scale": {"type": "log"},
                               "title": "predicted samples/s", "axis": axis("count", log_values=df["samples/s"])},
                         "color": {"field": "network", "type": "nominal"},
                         "strokeDash": {"field": "device", "type": "nominal", "legend": LEGEND},
                         "tooltip": [{"field": "network", "type": "nominal"}, {"field": "device", "type": "nominal"},
                                     {"field": "batch", "type": "quantitative"},
                                     {"field": "samples/s", "type": "quantitative", "format": ",.1f"}]},
            "height": 340, "$schema": SCHEMA}


def measured_points(rows: list[dict]) -> pd.DataFrame:
    """Live-timed networks (``ui.benchmark.time_networks`` rows) at their intensity for the input they were timed
    at and their measured FLOP/s, in roofline_chart's columns; ``bound`` says "measured (this CPU)"."""
    out = []
    for r in rows:
        if not r.get("latency_s"):
            continue
        rep = core.analyze(r["network"], input_shape=r["input"])
        out.append({"layer": f"{r['network']} at {r['input']}", "op": "this CPU",
                    "intensity": rep.totals["arithmetic_intensity"], "flops": r["flops"] / r["latency_s"],
                    "bound": "measured (this CPU)", "time_ms": r["latency_s"] * 1e3})
    return pd.DataFrame(out)


def survey_years(db) -> tuple[int, int]:
    years = [db.devices[i].year for i in SURVEY if i in db.devices]
    return min(years), max(years)


def own_input_help() -> str:
    """The networks whose own input is not the common one, and that input: for the input control's help."""
    sizes = [f"{label}{' expects' if k == 0 else ''} {shape(core.load_network(n).inputs[0][1][1:])}"
             for k, (n, label) in enumerate(OWN_INPUT.items())]
    return "torchvision's " + ", ".join(sizes)


@st.cache_data(max_entries=16, show_spinner=False)
def _tables(cpu, gpu, batch: int, input_shape):
    """The lab's numbers for the networks (about 0.1 s to build): kept per device pair, batch and input, so a control
    elsewhere on the page does not rebuild them."""
    table = network_table(SURVEY_NETWORKS, cpu, gpu, batch, input_shape)
    one = table if batch == 1 else network_table(SURVEY_NETWORKS, cpu, gpu, 1, input_shape)
    return (table, network_points(SURVEY_NETWORKS, [cpu, gpu], batch, input_shape=input_shape), one,
            throughput_table(SURVEY_NETWORKS, [cpu, gpu], input_shape=input_shape))


def show(db) -> None:
    low, high = survey_years(db)
    n_dev, n_net = in_words(len(SURVEY)), in_words(len(SURVEY_NETWORKS))
    question(f"Where do {n_dev} devices from {low} to {high} sit on one roofline, where do {n_net} torchvision "
             "networks fall on a CPU's and a GPU's roofline, and does latency follow FLOPs or parameters?")
    cpus, gpus = devices_of_kind(db, "CPU"), devices_of_kind(db, "GPU")
    c1, c2, c3, c4 = st.columns(4)
    cpu_id = c1.selectbox("CPU", cpus, index=preferred(cpus, "core-i7-920"), key="lab2_cpu",
                          format_func=lambda i: db.devices[i].name)
    gpu_id = c2.selectbox("GPU", gpus, index=preferred(gpus, "k80"), key="lab2_gpu",
                          format_func=lambda i: db.devices[i].name)
    batch = c3.select_slider("Batch", list(THROUGHPUT_BATCHES), value=1, key="lab2_batch")
    common = shape(COMMON_INPUT)
    own = c4.radio("Input", [common, "each network's own"], key="lab2_input", help=own_input_help()) != common
    input_shape = None if own else "x".join(map(str, COMMON_INPUT))
    cpu, gpu = db.devices[cpu_id], db.devices[gpu_id]
    table, points, one, tp = _tables(cpu, gpu, batch, input_shape)
    st.caption("CPU, GPU, batch and input apply to the network tabs.")
    t_dev, t_net, t_lat, t_tp, t_meas = st.tabs(
        [f"{n_dev.capitalize()} devices", f"{n_net.capitalize()} networks on two rooflines",
         "Latency vs FLOPs and params", "Throughput, forward : backward", "Measured here"],
        key="lab2_tab", on_change="rerun")
    measured = st.session_state.get(bm.ACROSS_ROWS) or []
    if t_dev.open:
        with t_dev:
            _survey(db, n_dev)
    if t_meas.open:
        with t_meas:
            _measured(measured, n_net)
    if t_net.open:
        with t_net:
            _networks(table, points, measured, cpu, gpu, batch)
    if t_lat.open:
        with t_lat:
            _latency(one, cpu, gpu)
    if t_tp.open:
        with t_tp:
            _throughput(table, tp, cpu, gpu, n_net)


def _survey(db, n_dev: str) -> None:
    st.subheader(f"{n_dev.capitalize()} devices on one roofline")
    prec = st.selectbox("Precision", [FASTEST, *PRECISION_KEYS], key="lab2_precision",
                        format_func=lambda p: "fastest each has" if p == FASTEST else p)
    roofs, _, ridges, left_out = overlay(db, SURVEY, prec)
    if left_out:
        st.info(f"Left out (no {prec} peak): " + "; ".join(d.name for d, _ in left_out))
    if not roofs.empty:
        show_chart(overlay_chart(db, SURVEY, prec, order=False), "lab2_survey_chart", f"survey_roofline_{prec}")
        dataframe(ridges, width="stretch", key="lab2_ridges",
                  column_config={"year": st.column_config.NumberColumn(format="%d")})
    if "geforce-256" in db.devices:
        st.caption(f"The GeForce 256's {db.devices['geforce-256'].peak('fp32') / 1e9:g} GFLOP/s is the survey's "
                   "figure, not a vendor's: its fixed-function pipeline had no programmable FLOPs.")


def _measured(measured: list[dict], n_net: str) -> None:
    st.subheader("Measured on this machine")
    if not live_allowed():
        st.info(LIVE_OFF)
        return
    label = (f"Time the {n_net} networks here (batch 1, {shape(bm.SMALL_INPUT)}, CPU, "
             f"~{MEASURE['max_seconds']:g} s)")
    if st.button(label, key="lab2_time",
                 help="Loads PyTorch the first time; shared with the Benchmark page's 'Across networks'."):
        bar = st.progress(0.0, text="loading torch…")
        try:
            def step(f, msg):
                bar.progress(min(max(f, 0.0), 1.0), text=msg)

            rows = bm.time_networks(SURVEY_NETWORKS, progress=step, **MEASURE)
        except (core.CalcError, ImportError) as e:
            st.error(f"Timing failed: {e}")
        else:
            st.session_state[bm.ACROSS_ROWS] = rows
            st.rerun()
        finally:
            bar.empty()
    if not measured:
        st.info("Nothing measured yet: press the button, or time networks on the Benchmark page.")
        return
    timed = timed_networks(measured, lambda network, why: st.caption(f"{network}: not timed — {why}"))
    if timed is None:
        return
    df, rho = timed
    st.metric("Spearman ρ measured (this CPU): FLOPs | params",
              f"{rho['flops']:.2f} | {rho['params']:.2f}" if rho["flops"] is not None else "—")
    show_chart(scatter_chart(df, "GFLOPs", "forward FLOPs (measured latency)", unit="FLOPs", scale=1e9),
               "lab2_measured_scatter",
               "measured_latency_vs_flops")
    st.caption(f"Measured: {rho['n']} networks, forward median at batch 1 on this CPU (inputs as listed); they are "
               "the \"measured (this CPU)\" points on the roofline above, at the intensity of the input they ran at.")


def _networks(table, points, measured, cpu, gpu, batch: int) -> None:
    dataframe(table, width="stretch", key="lab2_networks",
              column_config={c: st.column_config.NumberColumn(format="%.2f") for c in table.columns
                             if c not in ("network", "input", "CPU bound", "GPU bound")})
    mpoints = measured_points(measured)
    chart_points = pd.concat([points, mpoints], ignore_index=True) if not mpoints.empty else points
    show_chart(roofline_chart(roofline_frame([cpu, gpu], "fp32"), chart_points, names=POINT_NAMES), "lab2_roofline",
               f"ten_networks_{cpu.id}_{gpu.id}_b{batch}")
    memory_bound = {d: ", ".join(table.loc[table[f"{d} bound"] == "memory", "network"]) or "none"
                    for d in ("CPU", "GPU")}
    reading(
        "Operational intensity = forward FLOPs ÷ bytes moved (weights + each layer's inputs and outputs). Left of a "
        f"device's ridge a network is memory-bound: on the {cpu.name} (ridge {number(cpu.ridge('fp32'), 2)} "
        f"FLOP/byte) {memory_bound['CPU']}; on the {gpu.name} (ridge {number(gpu.ridge('fp32'), 2)}) "
        f"{memory_bound['GPU']}.",
        "Points are PALEO predictions at PPP 1 (an upper bound); a larger batch reuses the weights and moves "
        "networks right. Memory in the table is inference memory: weights + the peak of live activations.")


def _latency(one, cpu, gpu) -> None:
    st.subheader("Latency vs FLOPs and parameters (predicted, batch 1)")
    for col, (dev, column) in zip(st.columns(2), ((cpu, "CPU ms"), (gpu, "GPU ms"))):
        df = latency_frame(one, column)
        rho = rank_correlations(df)
        col.metric(f"Spearman ρ, {dev.name}: FLOPs | params", f"{rho['flops']:.2f} | {rho['params']:.2f}")
        show_chart(scatter_chart(df, "GFLOPs", "forward FLOPs (predicted latency)", unit="FLOPs", scale=1e9),
                   f"lab2_scatter_{column[:3]}", f"latency_vs_flops_{dev.id}", col)
    st.caption("Predicted by PALEO, so latency follows FLOPs by construction; measured latency (below) is the test.")


def _throughput(table, tp, cpu, gpu, n_net: str) -> None:
    st.subheader("Throughput vs batch (predicted)")
    show_chart(throughput_chart(tp), "lab2_throughput", f"throughput_{cpu.id}_{gpu.id}")
    st.subheader("Forward : backward")
    ratio = table["backward ÷ forward FLOPs"]
    st.metric(f"Backward ÷ forward FLOPs ({n_net} networks)", f"{ratio.min():.2f} – {ratio.max():.2f}")
    reading("Backward ≈ 2 × forward: each layer computes the gradient w.r.t. its input and w.r.t. its weights, each "
            "as many multiply-adds as the forward (the first layer needs no input gradient; activation, pooling and "
            "concatenation layers move the ratio a little either way).",
            "A report's forward : backward FLOP ratios of up to 3866 : 1 are the profiler's: it estimates FLOPs of "
            "forward convolutions and matrix multiplies, but in the backward pass only of the linear layers' matrix "
            "multiplies — SqueezeNet, with no linear layer, shows almost no backward FLOPs.")
