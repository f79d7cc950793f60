"""Lab 5 · MNIST conv2: what conv2 of the PyTorch-examples MNIST network costs by pen and paper, how FLOPs and memory
grow with the batch, and what changes when conv2 is widened (fc1's inputs follow by shape propagation).

The numbers are pure functions over ``core`` (tests/test_labs.py checks them by hand); ``show`` lays them out."""

from __future__ import annotations

import pandas as pd
import streamlit as st

import core
from core.precision import PRECISIONS
from ui.charts import lines_chart
from ui.charts import show as show_chart
from ui.labs.common import MIB, open_button, question, reading, shape
from ui.tables import dataframe
from ui.text import formula_latex

TITLE = "5 · MNIST conv2"
NEEDS = ()
MNIST = "mnist_cnn"
BATCH_SWEEP = tuple(range(1, 502, 50))                 # 1, 51, …, 501: the report's profiled batch sizes


def widened(width: int) -> core.Network:
    """The MNIST CNN with conv2 at ``width`` output channels; fc1's inputs follow by shape propagation."""
    net = core.edit(core.load_network(MNIST), "conv2", "out_channels", width).network
    return core.Network(f"{MNIST}_conv2_{width}", net.inputs, net.nodes, net.outputs, net.description)


def side_by_side(networks, batch: int = 1) -> pd.DataFrame:
    """conv2, fc1 and whole-network figures of each network, one column per network."""
    cols = {}
    for net in networks:
        r = core.analyze(net, batch_size=batch)
        conv2, fc1, t = r.layer("conv2"), r.layer("fc1"), r.totals
        cols[r.name] = {"conv2 output (per image)": shape(conv2.output_shape[1:]),
                        "conv2 params": f"{conv2.params:,}", "conv2 MACs": f"{conv2.macs:,}",
                        "conv2 FLOPs": f"{conv2.flops:,}",
                        "fc1 in → out": f"{fc1.input_shapes[0][-1]:,} → {fc1.output_shape[-1]:,}",
                        "fc1 params": f"{fc1.params:,}", "params": f"{t['params']:,}", "MACs": f"{t['macs']:,}",
                        "FLOPs": f"{t['flops']:,}", "training memory": f"{t['training_bytes'] / MIB:,.2f} MiB"}
    return pd.DataFrame(cols).rename_axis("quantity").reset_index()


def vs_batch(networks, batches=BATCH_SWEEP) -> pd.DataFrame:
    """Long form: per batch and network, conv2 and whole-network GFLOPs and MiB (all linear in the batch)."""
    rows = []
    for net in networks:
        base = core.analyze(net)
        for b in batches:
            r = base.with_batch(b)
            conv2, t = r.layer("conv2"), r.totals
            rows.append({"batch": b, "network": r.name, "conv2 GFLOPs": conv2.flops / 1e9,
                         "network GFLOPs": t["flops"] / 1e9, "conv2 output MiB": conv2.activation_bytes / MIB,
                         "training MiB": t["training_bytes"] / MIB, "inference MiB": t["inference_bytes"] / MIB})
    return pd.DataFrame(rows)


def by_network(df: pd.DataFrame, column: str) -> pd.DataFrame:
    """One ``vs_batch`` column in wide form (batch, then one column per network) for ``ui.charts.lines_chart``."""
    return df.pivot(index="batch", columns="network", values=column).reset_index().rename_axis(columns=None)


def units_table(report: core.Report, layer: str = "conv2") -> pd.DataFrame:
    """Counts are not bytes: a layer's weights and outputs as element counts and as bytes at the report's precision."""
    x, p = report.layer(layer), report.precision
    outputs = x.activation_bytes // p.activation
    return pd.DataFrame([
        {"what": f"{layer} weights + bias", "count": x.params, "bytes": x.params * p.weight,
         "bytes per element": p.weight},
        {"what": f"{layer} outputs (batch {report.batch_size})", "count": outputs, "bytes": x.activation_bytes,
         "bytes per element": p.activation}])


def conv2_line(report: core.Report) -> str:
    """conv2 by hand from one image's analysis: outputs, multiplies and adds per output, FLOPs per image."""
    conv2 = report.layer("conv2")
    c, h, w = conv2.output_shape[1:]
    outputs = c * h * w
    macs = conv2.macs // outputs
    return (f"conv2: {c}·{h}·{w} = {outputs:,} outputs, each {macs} multiplies + {macs - 1} adds + 1 bias add = "
            f"{conv2.flops // outputs} FLOPs (= 2 × {macs} MACs): {conv2.flops:,} FLOPs per image.")


def show(db) -> None:
    low, high = BATCH_SWEEP[0], BATCH_SWEEP[-1]
    question("What do conv2 of the PyTorch-examples MNIST network cost by pen and paper, how do FLOPs and memory grow "
             f"with the batch ({low}…{high}), and what changes when conv2 is widened?")
    c1, c2 = st.columns(2)
    batch = c1.slider("Batch", low, high, 1, key="lab5_batch")
    width = int(c2.number_input("Widened conv2: output channels", min_value=1, max_value=1024, value=128, step=1,
                                key="lab5_width"))
    report = core.analyze(MNIST, batch_size=batch)
    for line in report.explain("conv2"):
        st.latex(formula_latex(line))
    st.metric(f"conv2 FLOPs at batch {batch}", f"{report.layer('conv2').flops:,}")
    wide = widened(width)
    nets = [MNIST, wide]
    base = core.analyze(MNIST)
    fc1_in = base.layer("fc1").input_shapes[0][-1]
    wide_fc1_in = core.analyze(wide).layer("fc1").input_shapes[0][-1]
    sweep = vs_batch(nets)
    charts = (("conv2 GFLOPs", "conv2 FLOPs", "FLOPs", 1e9), ("training MiB", "training memory", "B", MIB))
    for col, (column, title, unit, scale) in zip(st.columns(2), charts):
        wide_frame = by_network(sweep, column)
        show_chart(lines_chart(wide_frame, "batch", list(wide_frame.columns[1:]), title, unit=unit, scale=scale,
                               log_x=False),
                   f"lab5_{column.split()[0]}_chart", f"mnist_{column.replace(' ', '_')}_vs_batch", col)
    st.subheader(f"conv2 at {base.layer('conv2').output_shape[1]} vs {width} channels (batch {batch})")
    dataframe(side_by_side(nets, batch), width="stretch", key="lab5_side_by_side")
    dataframe(units_table(report), key="lab5_units",
              column_config={c: st.column_config.NumberColumn(format="localized") for c in ("count", "bytes")})
    reading(conv2_line(base),
            "FLOPs grow exactly linearly with the batch; memory is a fixed part (weights, gradients, optimizer "
            "state) plus the batch × activations.",
            "A profiler's conv2 FLOPs differ from these: cuDNN chose Winograd kernels (fewer multiplies, extra "
            "transforms), and fadd/fmul/ffma counters see only what runs on CUDA cores.",
            "Units: counts are not bytes. A report added parameter and activation counts and called them bytes; at "
            f"fp32 multiply by {PRECISIONS['fp32'].weight} (table).",
            f"Widening conv2 to {width} channels scales its outputs and MACs and fc1's inputs "
            f"({fc1_in:,} → {wide_fc1_in:,}); fc1 holds most parameters.")
    open_button(MNIST, "lab5_open")
