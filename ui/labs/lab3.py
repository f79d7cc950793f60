"""Lab 3 · VGG by pen and paper: VGG11/13/19's MACs and FLOPs layer by layer, for one image and for a batch, where
they sit on a V100's and an A100's roofline, and how the convolution algorithm changes the FLOPs a profiler counts.

The numbers are pure functions over ``core`` (tests/test_labs.py checks them by hand); ``show`` lays them out."""

from __future__ import annotations

import pandas as pd
import streamlit as st

import core
from core.api import estimate
from core.choices import CONV_ALGORITHMS
from core.roofline import ridge
from ui.charts import roofline_chart, roofline_frame
from ui.charts import show as show_chart
from ui.labs.common import open_button, predicted_beside_bound, question, reading, shape
from ui.labs.lab2 import POINT_NAMES, network_points
from ui.tables import dataframe

TITLE = "3 · VGG by pen and paper"
VGGS = ("vgg11", "vgg13", "vgg19")
RIDGE_DEVICES = (("v100-sxm2", "fp32"), ("a100-40gb-sxm", "fp32"), ("a100-40gb-sxm", "tf32"))
NEEDS = tuple(dict.fromkeys(i for i, _ in RIDGE_DEVICES))     # the V100 and the A100
REPORT_BATCH = 16                  # the batch a course report folded into its "VGG11 total" (the control's default)


def pen_and_paper(report: core.Report) -> pd.DataFrame:
    """The conv and linear layers as a hand table: channels, kernel, output size, MACs and FLOPs per image and for
    the whole batch (MACs = C_out·H_out·W_out·C_in·k·k per image; FLOPs = 2 × MACs)."""
    n, by_name = report.batch_size, report.compiled.by_name
    rows = []
    for x in report.layers:
        if x.op not in ("conv2d", "linear"):
            continue
        attrs = by_name[x.name].attrs
        k = attrs.get("kernel_size")
        rows.append({"layer": x.name, "in": x.input_shapes[0][0] if x.op == "conv2d" else x.input_shapes[0][-1],
                     "out": x.output_shape[1], "kernel": shape(k) if k else "—",
                     "output": shape(x.output_shape[2:]) if x.op == "conv2d" else "—",
                     "MACs/image": x.macs // n, "FLOPs/image": x.flops // n,
                     f"MACs × {n}": x.macs, f"FLOPs × {n}": x.flops})
    return pd.DataFrame(rows)


def batch_totals(report: core.Report) -> dict:
    t, n = report.totals, report.batch_size
    return {"macs_image": t["macs"] // n, "flops_image": t["flops"] // n, "macs_batch": t["macs"],
            "flops_batch": t["flops"]}


def ridge_table(db, pairs=RIDGE_DEVICES) -> pd.DataFrame:
    """Peak, bandwidth and ridge point (peak ÷ bandwidth) per (device, precision)."""
    rows = []
    for dev_id, prec in pairs:
        d = db.devices[dev_id]
        rows.append({"device": d.name, "precision": prec, "peak TFLOP/s": d.peak(prec) / 1e12,
                     "bandwidth GB/s": d.memory_bandwidth / 1e9, "ridge FLOP/byte": ridge(d.peak(prec),
                                                                                           d.memory_bandwidth),
                     "how": d.compute_notes.get(prec, "")})
    return pd.DataFrame(rows)


def algorithm_table(report: core.Report, device) -> pd.DataFrame:
    """Forward FLOPs (whole batch) when convolutions run direct/GEMM, Winograd, FFT or the cheapest of them, and
    the FLOPs outside conv and linear layers: what CUDA-core counters still see when tensor cores do the rest."""
    rows = [{"how": f"conv algorithm: {a}", "GFLOPs": estimate(report, device, batch_size=report.batch_size,
                                                               dtype=report.dtype, conv_algorithm=a,
                                                               variant="paleo")
             .totals["forward_flops"] / 1e9} for a in CONV_ALGORITHMS]
    outside = sum(x.flops for x in report.layers if x.op not in ("conv2d", "linear"))
    rows.append({"how": "outside conv/linear (elementwise, pooling)", "GFLOPs": outside / 1e9})
    return pd.DataFrame(rows)


def predicted_table(names, batch: int, db, pairs=RIDGE_DEVICES) -> pd.DataFrame:
    """Each VGG's forward pass at ``batch`` on the V100 and the A100: the fitted GPU time model beside the PALEO
    bound at PPP 1 (``ui.labs.common.predicted_beside_bound``)."""
    rows = []
    for name in names:
        report = core.analyze(name, batch_size=batch)
        for dev_id, prec in pairs:
            dev = db.devices[dev_id]
            row = predicted_beside_bound(report, dev, prec)
            rows.append({"network": name, "device": dev.name, "precision": prec,
                         **{k: v for k, v in row.items() if k != "why"}})
    return pd.DataFrame(rows)


def ridge_line(db) -> str:
    """Ridge = peak ÷ bandwidth for the V100 and the A100 (CUDA cores, then TF32 tensor cores), from the database."""
    (v100, v_prec), (a100, a_prec), (_, tensor) = ((db.devices[i], p) for i, p in RIDGE_DEVICES)

    def of(d, prec: str) -> str:
        return f"{ridge(d.peak(prec), d.memory_bandwidth):.3g}"

    return (f"Ridge = peak ÷ bandwidth: V100 {v100.peak(v_prec) / 1e12:g} TFLOP/s ÷ {v100.memory_bandwidth / 1e9:g} "
            f"GB/s = {of(v100, v_prec)} FLOP/byte; A100 {a100.peak(a_prec) / 1e12:g} ÷ "
            f"{a100.memory_bandwidth / 1e9:g} = {of(a100, a_prec)} on CUDA cores, {of(a100, tensor)} with "
            f"{tensor.upper()} tensor cores ({a100.peak(tensor) / 1e12:g} TFLOP/s).")


def folded_batch_line() -> str:
    """A report's "VGG11 total": the per-image multiply-adds times the batch, neither per image nor FLOPs."""
    macs = core.analyze(VGGS[0]).totals["macs"]
    return (f"Batch folded in silently: a report's \"{VGGS[0].upper()} total {macs * REPORT_BATCH / 1e9:.1f}·10⁹\" is "
            f"{macs / 1e9:.2f} G multiply-adds × batch {REPORT_BATCH} — neither per image nor FLOPs. Its VGG13 table "
            "also used wrong output sizes; here they come from shape propagation.")


def show(db) -> None:
    question("What are VGG11/13/19's FLOPs layer by layer, for one image and for a batch, and where do they sit on a "
             "V100's and an A100's roofline?")
    c1, c2 = st.columns(2)
    name = c1.radio("Network", list(VGGS), horizontal=True, key="lab3_model")
    batch = int(c2.number_input("Batch", min_value=1, max_value=4096, value=REPORT_BATCH, step=1, key="lab3_batch"))
    report = core.analyze(name, batch_size=batch)
    tot = batch_totals(report)
    m1, m2, m3, m4 = st.columns(4)
    m1.metric("MACs per image", f"{tot['macs_image']:,}")
    m2.metric(f"MACs × {batch}", f"{tot['macs_batch']:,}")
    m3.metric("FLOPs per image", f"{tot['flops_image']:,}")
    m4.metric(f"FLOPs × {batch}", f"{tot['flops_batch']:,}")
    table = pen_and_paper(report)
    dataframe(table, width="stretch", key="lab3_table",
              column_config={c: st.column_config.NumberColumn(format="localized") for c in table.columns[5:]})
    reading("MACs = C_out · H_out · W_out · C_in · k · k per image; FLOPs = 2 × MACs (plus ReLU and pooling, which "
            "only the totals include).", folded_batch_line())
    st.subheader("V100 vs A100")
    dataframe(ridge_table(db), width="stretch", key="lab3_ridges",
              column_config={"ridge FLOP/byte": st.column_config.NumberColumn(format="%.2f")})
    pair = [db.devices[i] for i in NEEDS]
    show_chart(roofline_chart(roofline_frame(pair, "fp32"), network_points(VGGS, pair, batch), names=POINT_NAMES),
               "lab3_roofline", f"vgg_v100_a100_b{batch}")
    st.markdown(f"**Forward pass at batch {batch}: predicted beside the PALEO bound**")
    dataframe(predicted_table(VGGS, batch, db), width="stretch", key="lab3_predicted",
              column_config={c: st.column_config.NumberColumn(format="%.3f")
                             for c in ("predicted ms", "PALEO bound ms", "predicted ÷ bound")}
              | {"typical ±%": st.column_config.NumberColumn(format="%.0f")})
    reading("The bound is FLOPs at the datasheet peak plus bytes at the datasheet bandwidth, layer by layer (PALEO "
            "at PPP 1). The prediction is the time model fitted to measured timings of each GPU generation: "
            "convolutions reach a fitted share of the peak (less on a small layer that leaves SMs idle), 3×3 "
            "convolutions in fp32 run as Winograd (fewer FLOPs than 2 × MACs, so a prediction can beat the bound), "
            "TF32 tensor cores reach well under their datasheet peak, and every kernel launch costs tens of µs, "
            "which dominates at batch 1. ±% is its typical held-out error.")
    st.markdown(f"**{name} at batch {batch}: forward FLOPs by convolution algorithm (A100)**")
    dataframe(algorithm_table(report, pair[1]), key="lab3_algorithms",
              column_config={"GFLOPs": st.column_config.NumberColumn(format="%.3f")})
    reading(ridge_line(db),
            "Profiler FLOPs are not model FLOPs: Nsight's fadd/fmul/ffma counters see CUDA-core instructions only. On "
            "an A100, convolutions run as TF32 on tensor cores, invisible to them, so \"measured\" FLOPs fall far "
            "below the model's; reports read this as \"the A100 does fewer FLOPs\" or \"the V100 is better "
            "balanced\".",
            "Winograd and FFT convolutions do different arithmetic from 2 × MACs (table), another reason a counter's "
            "total differs from the model's.")
    open_button(name, "lab3_open")
