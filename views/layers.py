"""Layers (the first page): the per-layer table, totals and pen-and-paper arithmetic.

Numbers come from ``core``; this file only lays them out. torch is never imported here, so the page starts fast.
"""

from __future__ import annotations

import pandas as pd
import streamlit as st

import core
from core.roofline import ridge
from core.units import format_bytes
from ui.memo import inputs_key, memo
from ui.state import page, time_settings
from ui.tables import dataframe
from ui.text import formula_latex, markdown_report, model_label

sel = page("Layers")
report = sel.report
t = report.totals

c1, c2, c3, c4, c5, c6 = st.columns(6)
c1.metric("Parameters", f"{t['params']:,}", help=f"{format_bytes(t['param_bytes'], 1)} at {report.dtype}")
c2.metric("Forward GMACs", f"{t['macs'] / 1e9:,.3f}", help="multiply-adds")
c3.metric("Forward GFLOPs", f"{t['flops'] / 1e9:,.3f}", help=core.CONVENTION)
c4.metric("Inference memory", format_bytes(t["inference_bytes"], 1),
          help=f"weights + peak of live activations ({format_bytes(t['activation_bytes'], 1)}, at "
               f"{t['activation_peak_at']})")
c5.metric("Training memory", format_bytes(t["training_bytes"], 1),
          help=f"the peak of a training step, in {t['training_peak_at']}: weights, {report.optimizer} state, "
               f"activations saved for backward (all {format_bytes(t['saved_activation_bytes'], 1)}) and the "
               "gradients made so far (Estimates → Memory shows the step)")
if sel.estimate is not None:
    c6.metric("Forward time", f"{sel.estimate.totals['forward_s'] * 1e3:,.3f} ms",
              help=f"{model_label(sel.estimate)} on {sel.device.name} (the sidebar's time model)")
else:
    c6.metric("Forward time", "—", help=sel.estimate_error)
    st.warning(sel.estimate_error)
heaviest = []                        # the layers that weigh most: a sentence under the totals
if t["params"]:
    top = max(report.layers, key=lambda layer: layer.params)
    heaviest.append(f"most parameters: **{top.name}** ({top.params / t['params'] * 100:.1f} %)")
if sel.estimate is not None and sel.estimate.totals["forward_s"]:
    top = max(sel.estimate.layers, key=lambda row: row["share"])
    heaviest.append(f"most forward time: **{top['name']}** ({top['share'] * 100:.1f} %)")
if heaviest:
    said = "; ".join(heaviest)
    st.caption(f"{said[0].upper()}{said[1:]}.")
if sel.estimate is not None:
    knee = ridge(sel.estimate.peak, sel.estimate.bandwidth)
    st.caption(f"Bound: a layer below this device's ridge point, **{knee:,.2f} FLOP/byte** (peak ÷ bandwidth), is "
               "memory-bound; above it, compute-bound.")



def _layer_frame():
    frame = report.to_pandas()
    if sel.estimate is not None:
        frame["bound"] = [r["bound"] for r in sel.estimate.layers]
        frame["time_ms"] = [r["forward_s"] * 1e3 for r in sel.estimate.layers]
        frame["share"] = [r["share"] * 100 for r in sel.estimate.layers]
    return frame


# built once per input and shared (never changed below: the filter makes a new frame)
df = memo(("layer_table", *inputs_key(report, sel.device, **time_settings())), _layer_frame)
query = st.text_input("Filter layers", key="layer_filter", placeholder="name or op, e.g. conv or layer3",
                      label_visibility="collapsed")
if query.strip():
    q = query.strip().lower()
    df = df[df["name"].str.lower().str.contains(q, regex=False) | df["op"].str.lower().str.contains(q, regex=False)]
columns = [c for c in ["name", "op", "output_shape", "params", "macs", "flops", "backward_flops", "activation_bytes",
                       "arithmetic_intensity", "bound", "time_ms", "share"] if c in df]
dataframe(
    df[columns], width="stretch", key="layer_table",
    column_config={
        "name": "Layer", "op": "Op", "output_shape": "Output shape",
        "params": st.column_config.NumberColumn("Params", format="localized"),
        "macs": st.column_config.NumberColumn("MACs", format="localized"),
        "flops": st.column_config.NumberColumn("FLOPs fwd", format="localized"),
        "backward_flops": st.column_config.NumberColumn("FLOPs bwd", format="localized"),
        "activation_bytes": st.column_config.NumberColumn("Output bytes", format="localized"),
        "arithmetic_intensity": st.column_config.NumberColumn("FLOP/byte", format="%.2f"),
        "bound": "Bound", "time_ms": st.column_config.NumberColumn(
            "predicted ms" if sel.estimate is not None and sel.estimate.variant == "predicted" else "PALEO ms",
            format="%.4f"),
        "share": st.column_config.NumberColumn("% of time", format="%.1f"),
    })
d1, d2, _ = st.columns([1, 1, 4])
stem = f"{report.name}_b{report.batch_size}"          # the files are written when clicked, not on every run
d1.download_button("Download CSV", lambda frame=df: frame.to_csv(index=False), f"{stem}.csv", "text/csv",
                   key="download_csv")
d2.download_button("Markdown report", lambda r=report, e=sel.estimate: markdown_report(r, e), f"{stem}.md",
                   "text/markdown", key="download_md")

left, right = st.columns(2)
with left:
    st.subheader("Pen and paper")
    names = [layer.name for layer in report.layers]
    st.selectbox("Layer", names, key="explain_layer", index=names.index("conv2") if "conv2" in names else 0)
    for line in report.explain(st.session_state["explain_layer"]):
        st.latex(formula_latex(line))
with right:
    st.subheader("FLOPs by layer type")
    by_op = pd.DataFrame([{"op": k, "FLOPs": v} for k, v in report.flops_by_op().items() if v],
                         columns=["op", "FLOPs"])
    if by_op.empty:
        st.caption("No layer of this network does arithmetic (views, copies and reshapes only): 0 FLOPs.")
    else:
        by_op["share %"] = by_op["FLOPs"] / by_op["FLOPs"].sum() * 100
        dataframe(by_op.sort_values("FLOPs", ascending=False), width="stretch", key="by_op",
                  column_config={"FLOPs": st.column_config.NumberColumn(format="localized"),
                                 "share %": st.column_config.NumberColumn(format="%.2f")})
