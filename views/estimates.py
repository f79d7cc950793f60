"""Estimates: PALEO breakdown, time, throughput and memory vs batch size, the same network on other devices,
convolution algorithms and data-parallel scaling. Only the open tab runs, so a change re-renders fast."""

import pandas as pd
import streamlit as st

from core import CalcError
from core.api import estimate, scaling, sweep
from core.choices import ALLREDUCE, CONV_ALGORITHMS, SCALING_MODES
from ui.charts import bars_chart, lines_chart, memory_chart, show
from ui.state import devices, page

sel = page("PALEO estimates", needs_estimate=True)
report, dev, est = sel.report, sel.device, sel.estimate
t = est.totals
st.caption(f"{report.name} on {dev.name}, batch {report.batch_size}, {report.dtype}, PPP {est.ppp:g}"
           + (" × the calibrated efficiency of each class of work" if dev.efficiency else
              " (datasheet peak: an optimistic bound)" if est.ppp == 1 else ""))
c1, c2, c3, c4 = st.columns(4)
c1.metric("Forward", f"{t['forward_s'] * 1e3:,.3f} ms")
c2.metric("Backward", f"{t['backward_s'] * 1e3:,.3f} ms")
c3.metric("Training step", f"{t['training_step_s'] * 1e3:,.3f} ms")
c4.metric("Training throughput", f"{t['samples_per_s']:,.0f}/s" if t["samples_per_s"] else "—",
          help="samples per second" if t["samples_per_s"] else "this network takes no time on the model: it does "
          "no arithmetic and moves no data, so there is no throughput to show")
BATCHES = [2 ** i for i in range(13)]
name = f"{report.name}_{dev.id}_{report.dtype}"

tab_parts, tab_batch, tab_devices, tab_conv, tab_dp = st.tabs(
    ["Breakdown", "Batch size", "Other devices", "Convolution algorithm", "Data parallel"],
    key="estimates_tab", on_change="rerun")

if tab_parts.open:
    tab_parts.dataframe(pd.DataFrame([
        {"part": "forward compute", "ms": t["forward_compute_s"] * 1e3},
        {"part": "forward memory", "ms": t["forward_memory_s"] * 1e3},
        *([{"part": "  of which fresh pages (page faults)", "ms": t["forward_fresh_s"] * 1e3}]
          if t["forward_fresh_s"] else []),
        {"part": "backward compute", "ms": t["backward_compute_s"] * 1e3},
        {"part": "backward memory", "ms": t["backward_memory_s"] * 1e3},
        *([{"part": "per-layer overhead (forward + backward)",
            "ms": (t["forward_overhead_s"] + t["backward_overhead_s"]) * 1e3}]
          if t["forward_overhead_s"] or t["backward_overhead_s"] else []),
        {"part": "weight update", "ms": t["update_s"] * 1e3},
    ]), hide_index=True, key="breakdown")
    tab_parts.caption("PALEO: each layer takes compute time (FLOPs / (PPP × peak)) plus memory time (bytes read "
                      "and written / bandwidth); a calibrated device adds its measured cost per layer call, and "
                      "a calibrated Linux CPU the time its forward pass spends writing to fresh pages (page "
                      "faults, from a replay of glibc's malloc). A training step is forward + backward + weight "
                      "update.")

if tab_batch.open:
    runs = sweep(report, [dev], BATCHES, dtype=report.dtype, ppp=est.ppp, optimizer=report.optimizer)
    by_batch = pd.DataFrame([{
        "batch": e.report.batch_size, "forward ms": e.totals["forward_s"] * 1e3,
        "training step ms": e.totals["training_step_s"] * 1e3, "training samples/s": e.totals["samples_per_s"],
        "training memory GiB": e.report.totals["training_bytes"] / 2 ** 30,
        "inference memory GiB": e.report.totals["inference_bytes"] / 2 ** 30} for e in runs])
    cap = dev.memory_capacity
    if cap:
        fits = by_batch[by_batch["training memory GiB"] * 2 ** 30 <= cap]
        tab_batch.caption(f"Largest power-of-two batch whose training memory fits in {cap / 2 ** 30:,.0f} GiB: "
                          + (f"**{int(fits['batch'].max())}**" if not fits.empty else "**none**"))
    left, right = tab_batch.columns(2)
    with left:
        show(lines_chart(by_batch, "batch", ["forward ms", "training step ms"], "ms", log_y=True),
             "time_chart", f"{name}_time_vs_batch")
    with right:
        show(lines_chart(by_batch, "batch", ["training samples/s"], "samples/s"), "throughput_chart",
             f"{name}_throughput_vs_batch")
    show(memory_chart(by_batch[["batch", "training memory GiB", "inference memory GiB"]],
                      cap / 2 ** 30 if cap else None), "memory_chart", f"{name}_memory_vs_batch", tab_batch)
    tab_batch.dataframe(by_batch, hide_index=True, key="by_batch")

if tab_devices.open:
    cmp = sweep(report, list(devices().devices.values()), [report.batch_size], dtype=None, ppp=est.ppp,
                optimizer=report.optimizer)
    frame = pd.DataFrame([{"device": e.device.name, "precision": e.report.dtype,
                           "forward ms": e.totals["forward_s"] * 1e3, "bound": e.roofline["bound"],
                           "training step ms": e.totals["training_step_s"] * 1e3} for e in cmp])
    tab_devices.caption("Each device at its own best precision for this network's format (dtype=None), same PPP "
                        "and batch. Log scale: decades apart.")
    show(bars_chart(frame.sort_values("forward ms"), "device", "forward ms", "bound", log=True),
         "device_chart", f"{report.name}_devices", tab_devices)
    tab_devices.dataframe(frame, hide_index=True, key="device_compare")

if tab_conv.open:
    tab_conv.caption("Winograd F(2×2, 3×3) and FFT change the arithmetic of 3×3 / stride-1 convolutions (and so the "
                     "time) — one reason a profiler's FLOP count differs from the model's 2 × MACs.")
    algos = [estimate(report, dev, batch_size=report.batch_size, dtype=report.dtype, optimizer=report.optimizer,
                      ppp=est.ppp, conv_algorithm=a) for a in CONV_ALGORITHMS]
    tab_conv.dataframe(pd.DataFrame([{"algorithm": e.conv_algorithm, "forward GFLOPs": e.totals["forward_flops"] / 1e9,
                                      "forward ms": e.totals["forward_s"] * 1e3} for e in algos]),
                       hide_index=True, key="conv_algorithms")

if tab_dp.open:
    db = devices()
    s1, s2, s3 = tab_dp.columns(3)
    link = s1.selectbox("Interconnect", list(db.interconnects), key="scaling_link",
                        format_func=lambda i: db.interconnects[i].name)
    mode = s2.radio("Scaling", list(SCALING_MODES), horizontal=True, key="scaling_mode",
                    help="strong: the batch in the sidebar is split over the workers; weak: each worker keeps it")
    algo = s3.selectbox("All-reduce", list(ALLREDUCE), key="scaling_allreduce")
    try:
        scale = pd.DataFrame(scaling(report, dev, db.interconnects[link], workers=(1, 2, 4, 8),
                                     batch_size=report.batch_size, mode=mode, dtype=report.dtype,
                                     optimizer=report.optimizer, ppp=est.ppp, allreduce=algo))
        tab_dp.dataframe(scale, hide_index=True, key="scaling_table")
    except CalcError as e:
        tab_dp.error(str(e))
