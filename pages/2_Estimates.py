"""Estimates: PALEO breakdown, time and throughput vs batch size, and the same network on other devices."""

import pandas as pd
import streamlit as st

from core.paleo import sweep
from ui.state import devices, sidebar

st.set_page_config(page_title="Estimates · CNN calculator", layout="wide")
sel = sidebar()
st.title("PALEO estimates")
if sel.estimate is None:
    st.warning(sel.estimate_error)
    st.stop()
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
