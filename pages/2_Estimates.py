"""Estimates: PALEO breakdown, time and throughput vs batch size, and the same network on other devices."""

import pandas as pd
import streamlit as st

from core import CalcError
from core.paleo import estimate, scaling, sweep
from ui.charts import memory_chart
from ui.state import devices, page

sel = page("PALEO estimates", needs_estimate=True)
t = sel.estimate.totals
st.caption(f"{sel.report.name} on {sel.device.name}, batch {sel.report.batch_size}, {sel.report.dtype}, "
           f"PPP {sel.estimate.ppp:g}" + (" (datasheet peak: an optimistic bound)" if sel.estimate.ppp == 1 else ""))
c1, c2, c3, c4 = st.columns(4)
c1.metric("Forward", f"{t['forward_s'] * 1e3:,.3f} ms")
c2.metric("Backward", f"{t['backward_s'] * 1e3:,.3f} ms")
c3.metric("Training step", f"{t['training_step_s'] * 1e3:,.3f} ms")
c4.metric("Training throughput", f"{t['samples_per_s']:,.0f}/s", help="samples per second")
st.dataframe(pd.DataFrame([
    {"part": "forward compute", "ms": t["forward_compute_s"] * 1e3},
    {"part": "forward memory", "ms": t["forward_memory_s"] * 1e3},
    {"part": "backward compute", "ms": t["backward_compute_s"] * 1e3},
    {"part": "backward memory", "ms": t["backward_memory_s"] * 1e3},
    {"part": "weight update", "ms": t["update_s"] * 1e3},
]), hide_index=True, key="breakdown")

st.subheader("Time and throughput vs batch size")
batches = [2 ** i for i in range(13)]
rows = [{"batch": e.report.batch_size, "forward ms": e.totals["forward_s"] * 1e3,
         "training step ms": e.totals["training_step_s"] * 1e3, "training samples/s": e.totals["samples_per_s"],
         "training memory GiB": e.report.totals["training_bytes"] / 2 ** 30}
        for e in sweep(sel.report, [sel.device], batches, dtype=sel.report.dtype, ppp=sel.estimate.ppp)]
by_batch = pd.DataFrame(rows)
cap = sel.device.memory_capacity
if cap:
    fits = by_batch[by_batch["training memory GiB"] * 2 ** 30 <= cap]
    st.caption(f"Largest power-of-two batch whose training memory fits in {cap / 2 ** 30:,.0f} GiB: "
               + (f"{int(fits['batch'].max())}" if not fits.empty else "none"))
st.line_chart(by_batch, x="batch", y=["forward ms", "training step ms"])
st.dataframe(by_batch, hide_index=True, key="by_batch")

st.subheader("Other devices")
db = devices()
cmp = [e for e in sweep(sel.report, list(db.devices.values()), [sel.report.batch_size], dtype=None,
                        ppp=sel.estimate.ppp)]
st.dataframe(pd.DataFrame([{"device": e.device.name, "precision": e.report.dtype,
                            "forward ms": e.totals["forward_s"] * 1e3, "bound": e.roofline["bound"],
                            "training step ms": e.totals["training_step_s"] * 1e3} for e in cmp]),
             hide_index=True, key="device_compare")

st.subheader("Memory vs batch size")
mem = by_batch[["batch", "training memory GiB"]].copy()
mem["inference memory GiB"] = [e.report.totals["inference_bytes"] / 2 ** 30
                               for e in sweep(sel.report, [sel.device], batches, dtype=sel.report.dtype)]
st.altair_chart(memory_chart(mem, cap / 2 ** 30 if cap else None), width="stretch", key="memory_chart")

st.subheader("Convolution algorithm")
st.caption("Winograd F(2×2, 3×3) and FFT change the arithmetic of 3×3 / stride-1 convolutions (and so the time) — "
           "one reason a profiler's FLOP count differs from the model's 2 × MACs.")
algos = [estimate(sel.report, sel.device, batch_size=sel.report.batch_size, dtype=sel.report.dtype,
                  optimizer=sel.report.optimizer, ppp=sel.estimate.ppp, conv_algorithm=a)
         for a in ("direct", "winograd", "fft", "auto")]
st.dataframe(pd.DataFrame([{"algorithm": e.conv_algorithm, "forward GFLOPs": e.totals["forward_flops"] / 1e9,
                            "forward ms": e.totals["forward_s"] * 1e3} for e in algos]),
             hide_index=True, key="conv_algorithms")

st.subheader("Data-parallel training")
db = devices()
s1, s2, s3 = st.columns(3)
link = s1.selectbox("Interconnect", list(db.interconnects), key="scaling_link",
                    format_func=lambda i: db.interconnects[i].name)
mode = s2.radio("Scaling", ["strong", "weak"], horizontal=True, key="scaling_mode",
                help="strong: the batch in the sidebar is split over the workers; weak: each worker keeps it")
algo = s3.selectbox("All-reduce", ["ring", "tree", "parameter_server"], key="scaling_allreduce")
try:
    scale = scaling(sel.report, sel.device, db.interconnects[link], workers=(1, 2, 4, 8),
                    batch_size=sel.report.batch_size, mode=mode, dtype=sel.report.dtype,
                    optimizer=sel.report.optimizer, ppp=sel.estimate.ppp, allreduce=algo)
    st.dataframe(pd.DataFrame(scale), hide_index=True, key="scaling_table")
except CalcError as e:
    st.error(str(e))
