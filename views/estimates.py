"""Estimates: the predicted or PALEO breakdown (the PALEO bound beside a prediction), time, throughput and memory
vs batch size, memory over a training step, the same network on other devices, convolution algorithms and
data-parallel scaling. Only the open tab runs, so a change re-renders fast."""

import pandas as pd
import streamlit as st

from core.api import estimate, sweep
from core.choices import CONV_ALGORITHMS
from core.terms import limiting_term
from ui import batch_sweep, data_parallel_view
from ui.charts import bars_chart, cached_spec, lines_chart, memory_chart, show
from ui.explain import how
from ui.memo import inputs_key, memo
from ui.memory_view import show_timeline
from ui.state import devices, page, time_settings
from ui.tables import dataframe
from ui.text import estimate_caption, model_label, predicted_notes

sel = page("Time estimates", needs_estimate=True)
report, dev, est = sel.report, sel.device, sel.estimate
t = est.totals
bound = est.bound.totals if est.bound is not None else None


def _vs_bound(key: str) -> str | None:
    return f"PALEO bound (PPP 1): {bound[key] * 1e3:,.3f} ms" if bound else None


c1, c2, c3, c4 = st.columns(4)
_train_fwd = (f"Inference (no autograd). The forward inside a training step: {t['training_forward_s'] * 1e3:,.3f} "
              f"ms ({est.train_forward_basis})." if t["training_forward_s"] != t["forward_s"] else None)
c1.metric("Forward", f"{t['forward_s'] * 1e3:,.3f} ms",
          help=" ".join(x for x in (_vs_bound("forward_s"), _train_fwd) if x) or None)
c2.metric("Backward", f"{t['backward_s'] * 1e3:,.3f} ms", help=_vs_bound("backward_s"))
c3.metric("Training step", f"{t['training_step_s'] * 1e3:,.3f} ms", help=_vs_bound("training_step_s"))
c4.metric("Training throughput", f"{t['samples_per_s']:,.0f}/s" if t["samples_per_s"] else "—",
          help="samples per second" if t["samples_per_s"] else "this network takes no time on the model: it does "
          "no arithmetic and moves no data, so there is no throughput to show")
said, model = estimate_caption(est)
st.caption(said)
if bound:
    st.caption(f"PALEO bound (PPP 1): forward {bound['forward_s'] * 1e3:,.3f} ms · backward "
               f"{bound['backward_s'] * 1e3:,.3f} ms · training step {bound['training_step_s'] * 1e3:,.3f} ms.")
how(model, "Each layer's FLOPs at the datasheet peak plus its bytes at the datasheet bandwidth: an optimistic "
    "reference, not a floor (Winograd does fewer FLOPs, and a GPU overlaps compute with memory)." if bound else None)
name = f"{report.name}_{dev.id}_{report.dtype}"

tab_parts, tab_batch, tab_memory, tab_devices, tab_conv, tab_dp = st.tabs(
    ["Breakdown", "Batch size", "Memory", "Other devices", "Convolution algorithm", "Data parallel"],
    key="estimates_tab", on_change="rerun")


if tab_parts.open and est.variant == "predicted":
    lim = {**est.limited_by, "training_forward": est.limited_by["train_forward"],
           "update": {limiting_term(est.update): est.update.total_s}}
    shown = (("forward", "forward"), *([("training_forward", "forward in a training step")]
                                         if t["training_forward_s"] != t["forward_s"] else []),
             ("backward", "backward"), ("update", "weight update"))
    dataframe(pd.DataFrame([
        {"pass": label, "limited by compute ms": lim[which].get("compute", 0.0) * 1e3,
         "limited by memory ms": lim[which].get("memory", 0.0) * 1e3,
         "limited by launch overhead ms": lim[which].get("overhead", 0.0) * 1e3, "total ms": t[f"{which}_s"] * 1e3,
         "PALEO bound ms": bound[f"{which}_s"] * 1e3} for which, label in shown]),
        key="breakdown", container=tab_parts, column_config={c: st.column_config.NumberColumn(format="%.3f") for c in (
            "limited by compute ms", "limited by memory ms", "limited by launch overhead ms", "total ms",
            "PALEO bound ms")})
    passes = {"forward": est.forward, "training_forward": est.train_forward, "backward": est.backward,
              "update": est.update}
    terms = ("compute ms", "memory ms", "compute + memory ms", "launch overhead ms", "total ms")
    tab_parts.markdown("**Each term over every kernel**, whichever sets the kernel's time:")
    dataframe(pd.DataFrame([
        {"pass": label, **dict(zip(terms, (p.compute_s * 1e3, p.memory_s * 1e3, (p.compute_s + p.memory_s) * 1e3,
                                           p.overhead_s * 1e3, p.total_s * 1e3)))}
        for which, label in shown for p in [passes[which]]]),
        key="breakdown_terms", container=tab_parts,
        column_config={c: st.column_config.NumberColumn(format="%.3f") for c in terms})
    how("Predicted: each kernel takes its compute time (FLOPs at the peak × the efficiency fitted "
        "for its class of work, precision and pass, × the share of the GPU its tiles fill) plus its "
        "memory time (bytes at the fitted share of the bandwidth), or its launch overhead where that "
        "is longer (the framework's host cost per kernel call, fitted: eager PyTorch for most "
        "generations, a cuDNN or cuBLAS call a fitted multiple of it, a call under autograd (a "
        "training step's forward, the backward) another; none under CUDA Graphs). A "
        "column adds up the kernels whose time that term sets (the larger of compute and memory, or "
        "the overhead). The second table adds each term over every kernel: compute plus memory is "
        "what the kernels' work takes on the GPU, the overhead what their calls take on the host, and "
        "the total lies between the larger of the two and their sum. 3×3 stride-1 convolutions in "
        "fp32 run as Winograd, as cuDNN picks them." +
        predicted_notes(est), container=tab_parts)
elif tab_parts.open:
    dataframe(pd.DataFrame([
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
        *([{"part": f"forward inside the training step (train mode, autograd; {est.train_forward_basis})",
            "ms": t["training_forward_s"] * 1e3}] if t["training_forward_s"] != t["forward_s"] else []),
    ]), key="breakdown", container=tab_parts)
    how("PALEO: each layer takes compute time (FLOPs / (PPP × peak)) plus memory time (bytes read "
        "and written / bandwidth); a calibrated device adds its measured cost per layer call, and "
        "a calibrated Linux CPU the time its forward pass spends writing to fresh pages (page "
        "faults, from a replay of glibc's malloc). A training step is forward + backward + weight "
        "update; on a CPU calibrated for it, its forward is the training-mode one (its own row), "
        "slower than inference.", container=tab_parts)

if tab_batch.open:
    settings, cap = time_settings(), dev.memory_capacity
    batch_key = batch_sweep.batch_key(report, dev, settings)
    by_batch, largest, upto = batch_sweep.by_batch(report, dev, settings, est.variant == "predicted")
    if cap:
        tab_batch.caption(f"Largest power-of-two batch whose training memory fits in {cap / 2 ** 30:,.0f} GiB: "
                          + (f"**{largest[0]}**, and of any size: **{largest[1]:,}**." if largest else "**none**"))
    if est.variant == "predicted":
        tab_batch.caption(
            f"Launch overhead limits most of the forward time up to batch **{upto}**: below it a bigger batch costs "
            "little more time (the GPU waits on the host), so throughput grows almost with the batch."
            if upto else "Launch overhead limits less than half of the forward time at every batch here.")
    left, right = tab_batch.columns(2)
    lines = ["forward ms", "training step ms"] + (["forward ms, PALEO bound"] if est.bound is not None else [])
    with left:
        show(cached_spec((*batch_key, "time"), lambda: lines_chart(by_batch, "batch", lines, "time", unit="s",
                                                                   scale=1e-3, log_y=True)),
             "time_chart", f"{name}_time_vs_batch")
    with right:
        show(cached_spec((*batch_key, "throughput"), lambda: lines_chart(by_batch, "batch", ["training samples/s"],
                                                                         "samples/s", unit="count")),
             "throughput_chart", f"{name}_throughput_vs_batch")
    show(cached_spec((*batch_key, "memory"), lambda: memory_chart(
        by_batch[["batch", "training memory GiB", "inference memory GiB"]], cap / 2 ** 30 if cap else None)),
        "memory_chart", f"{name}_memory_vs_batch", tab_batch)
    dataframe(by_batch, key="by_batch", container=tab_batch)

if tab_memory.open:
    show_timeline(report, dev.memory_capacity, dev.name, "memory_timeline", tab_memory)

if tab_devices.open:
    every, across = list(devices().devices.values()), time_settings(across_devices=True)
    devices_key = ("devices_tab", *inputs_key(report, *every, **across))

    def _across():
        cmp = sweep(report, every, [report.batch_size], dtype=None, optimizer=report.optimizer, **across)
        return pd.DataFrame([{"device": e.device.name, "precision": e.report.dtype, "time model": model_label(e),
                              "forward ms": e.totals["forward_s"] * 1e3, "bound": e.roofline["bound"],
                              "training step ms": e.totals["training_step_s"] * 1e3} for e in cmp])

    frame = memo(devices_key, _across)
    show(cached_spec(devices_key, lambda: bars_chart(frame.sort_values("forward ms"), "device", "forward ms", "bound",
                                                      unit="s", scale=1e-3, log=True, title="forward time")),
         "device_chart", f"{report.name}_devices", tab_devices)
    tab_devices.caption("Log scale: decades apart.")
    dataframe(frame, key="device_compare", container=tab_devices)
    how("Each device at its own best precision for this network's format (dtype=None), same batch and time model: a "
        "GPU with fitted parameters gets the prediction, others PALEO at the PPP (the time model column says which).",
        container=tab_devices)

if tab_conv.open:
    def _algorithms():
        algos = [estimate(report, dev, batch_size=report.batch_size, dtype=report.dtype, optimizer=report.optimizer,
                          ppp=est.ppp, conv_algorithm=a, variant="paleo") for a in CONV_ALGORITHMS]
        return pd.DataFrame([{"algorithm": e.conv_algorithm, "forward GFLOPs": e.totals["forward_flops"] / 1e9,
                              "forward ms": e.totals["forward_s"] * 1e3} for e in algos])

    dataframe(memo(("conv_tab", *inputs_key(report, dev), est.ppp), _algorithms), key="conv_algorithms",
              container=tab_conv)
    how("Winograd F(2×2, 3×3) and FFT change the arithmetic of 3×3 / stride-1 convolutions (and so the time) — one "
        "reason a profiler's FLOP count differs from the model's 2 × MACs. PALEO at the sidebar's PPP, one algorithm "
        "for every convolution (the predicted model picks its own).", container=tab_conv)

if tab_dp.open:
    data_parallel_view.show_tab(tab_dp, report, dev, devices(), time_settings(), name)
