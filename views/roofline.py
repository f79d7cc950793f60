"""Roofline: the chosen device (and others to compare), the network and each layer, forward or backward."""

import streamlit as st

from core.roofline import ridge
from ui.charts import cached_spec, layer_points, roofline_chart, roofline_frame, show
from ui.explain import how
from ui.memo import inputs_key
from ui.state import devices, page, time_settings

sel = page("Roofline", needs_estimate=True)
est, dev, compute = sel.estimate, sel.device, sel.report.precision.compute
db = devices()
others = st.multiselect("Compare with", [i for i in db.devices if i != dev.id], key="roofline_compare",
                        format_func=lambda i: db.devices[i].name)
which = st.radio("Pass", ["forward", "backward"], horizontal=True, key="roofline_pass")
shown = [dev, *(db.devices[i] for i in others)]
r = est.roofline
t = est.totals
net_ai = r["arithmetic_intensity"] if which == "forward" else r["backward_arithmetic_intensity"]
secs = t["forward_s"] if which == "forward" else t["backward_s"]
flops = t["forward_flops"] if which == "forward" else t["backward_flops"]
network = {"intensity": net_ai, "flops": flops / secs, "label": f"{sel.report.name} (whole {which} pass)"} \
    if net_ai and secs else None
shape_by = "limited_by" if est.variant == "predicted" else "bound"
# built once per estimate, pass and devices compared
spec = cached_spec(("roofline", inputs_key(sel.report, *shown, **time_settings()), which, sel.report.name, compute),
                   lambda: roofline_chart(roofline_frame(shown, compute), layer_points(est, which), network, shape_by))
show(spec, "roofline_chart", f"roofline_{sel.report.name}_{dev.id}_{which}")
c1, c2, c3 = st.columns(3)
c1.metric("Ridge point", f"{ridge(est.peak, est.bandwidth):,.2f} FLOP/byte",
          help=f"{dev.name}: {est.peak / 1e12:,.2f} TFLOP/s ({compute}) ÷ {est.bandwidth / 1e9:,.0f} GB/s")
c2.metric("Network intensity", f"{net_ai:,.2f} FLOP/byte" if net_ai else "—")
c3.metric("Bound", (r["bound"] if which == "forward" else r["backward_bound"]))
how("Points sit at each layer's FLOPs per byte moved (weights + inputs + outputs) and the FLOP/s it "
    + ("achieves in the prediction (its FLOPs ÷ its predicted time; the shape says which term limits it: a "
       "launch-bound layer sits far below both roofs)" if est.variant == "predicted" else
       f"reaches in the PALEO estimate at PPP {est.ppp:g}")
    + "; left of the ridge a layer is memory-bound at the datasheet figures."
    + (" The prediction counts a 3×3 stride-1 fp32 convolution at its Winograd FLOPs (cuDNN's choice), so "
       "its intensity is lower than the Layers page's." if est.variant == "predicted" else ""))
