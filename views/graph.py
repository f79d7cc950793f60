"""Graph: the network drawn as its graph (Graphviz DOT, rendered in the browser), coloured by a cost; repeated blocks
collapsed; one layer chosen shows its row of the layer table and its pen-and-paper arithmetic."""

from __future__ import annotations

import streamlit as st

from core import netviz
from ui import graph_view as gv
from ui.explain import how
from ui.state import page
from ui.tables import dataframe
from ui.text import formula_latex

sel = page("Graph")
report = sel.report
names = [layer.name for layer in report.layers]

c1, c2, c3, c4 = st.columns([3, 2, 2, 3])
measure = c1.radio("Colour by", list(gv.MEASURE_LABELS), key=gv.MEASURE, horizontal=True,
                   format_func=gv.MEASURE_LABELS.get, help="share of the predicted forward time (the sidebar's device "
                   "and time model), of FLOPs, of parameters or of output bytes; bound: the term that limits each "
                   "layer's predicted time")
blocks = c2.selectbox("Repeated blocks", list(gv.BLOCK_CHOICES), key=gv.BLOCKS, format_func=gv.BLOCK_CHOICES.get,
                      help=f"auto: collapse runs of alike blocks in networks of more than {netviz.COLLAPSE_ABOVE} "
                           "layers")
runs = gv.expandable(report, blocks)
if st.session_state.get(gv.EXPAND) not in [gv.NONE, *runs]:
    st.session_state[gv.EXPAND] = gv.NONE
expand = c3.selectbox("Expand block", [gv.NONE, *runs], key=gv.EXPAND, disabled=not runs,
                      format_func=lambda g: g or "—", help="a collapsed run of blocks drawn in full")
if st.session_state.get(gv.LAYER, gv.NONE) not in [gv.NONE, *names]:
    st.session_state[gv.LAYER] = gv.NONE
chosen = c4.selectbox("Layer", [gv.NONE, *names], key=gv.LAYER, format_func=lambda n: n or "— choose a layer —",
                      help="outlined in the graph; its row and its arithmetic are shown below it. Type to search.")

if measure in netviz.NEEDS_ESTIMATE and sel.estimate is None:
    st.warning(f"No time estimate here ({sel.estimate_error}), so the graph is coloured by FLOPs.")
    measure = "flops"
asked, why = gv.highlight_asked(report)
lit = tuple(dict.fromkeys((*asked, *([chosen] if chosen else []))))
d = gv.drawing(report, sel.estimate, measure, blocks, expand, lit)
inside = gv.group_of(report, chosen, blocks, expand) if chosen else None
st.caption(f"{report.name}: {len(names)} layers drawn as {d.nodes} nodes (with the input), coloured by "
           f"{netviz.TITLES[measure]}.")
if why:
    st.caption(f"Outlined in blue: {why}.")
if inside:
    st.caption(f"{chosen} is inside the collapsed {inside}: expand it to see the layer itself.")
st.graphviz_chart(d.dot)              # its natural size: stretched, a tall narrow graph shows three nodes a screen
how("Each box is a layer: its name, its op and its output shape per sample (the batch left out). A circle is a "
    "join of two or more tensors: ⊕ add (a residual connection), ‖ concatenation (Inception's branches, DenseNet's "
    "features), ⊗ multiply (squeeze-and-excitation), ⊖ subtract, ⊘ divide. The colour is the layer's share of the "
    "network's total under the chosen measure, in fixed bins (the legend); bound colours each layer by the term "
    "that limits its predicted time on the sidebar's device: compute, memory or per-kernel overhead. "
    f"Networks of more than {netviz.COLLAPSE_ABOVE} layers draw runs of alike blocks (found by module path: "
    "siblings with the same ops, each reading the one before) as one node with their count, their typical ops and "
    "their summed share; expand one to see its layers. The edited layer and its coupled channel group from the "
    "Network page's what-if edit are outlined in blue.")
gv.downloads(st, d.dot, report.name)

if chosen:
    st.subheader(chosen)
    dataframe([gv.layer_row(sel, chosen)], width="stretch", key="graph_row")
    for line in report.explain(chosen):
        st.latex(formula_latex(line))
