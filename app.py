"""CNN performance calculator — first page: a network's per-layer table.

Run with ``streamlit run app.py``. Numbers come from ``core``; this file only lays them out. torch is never imported
here, so the page starts fast.
"""

from __future__ import annotations

import streamlit as st

import core
from core.precision import OPTIMIZERS, PRECISIONS
from core.units import format_bytes

st.set_page_config(page_title="CNN performance calculator", layout="wide")

KEY_MODEL, KEY_INPUT, KEY_BATCH, KEY_DTYPE, KEY_OPT, KEY_LAYER = (
    "model", "input_shape", "batch_size", "dtype", "optimizer", "explain_layer")


def init_state() -> None:
    defaults = {KEY_MODEL: "mnist_cnn", KEY_INPUT: "", KEY_BATCH: 1, KEY_DTYPE: "fp32", KEY_OPT: "sgd_momentum"}
    for k, v in defaults.items():
        st.session_state.setdefault(k, v)


def fmt_bytes(b: float) -> str:
    return format_bytes(b, 1)


init_state()
with st.sidebar:
    st.header("Network")
    st.selectbox("Network", core.builtin_names(), key=KEY_MODEL)
    default_shape = "×".join(map(str, core.load_network(st.session_state[KEY_MODEL]).inputs[0][1]))
    st.text_input("Input shape per sample (C×H×W)", key=KEY_INPUT, placeholder=default_shape,
                  help="Leave empty for the network's own input. Batch excluded.")
    st.number_input("Batch size", min_value=1, max_value=4096, step=1, key=KEY_BATCH)
    st.selectbox("Precision", list(PRECISIONS), key=KEY_DTYPE, help=PRECISIONS[st.session_state[KEY_DTYPE]].note)
    st.selectbox("Optimizer (training memory)", list(OPTIMIZERS), key=KEY_OPT)
    st.caption(core.CONVENTION)

st.title("CNN performance calculator")
try:
    report = core.analyze(st.session_state[KEY_MODEL], input_shape=st.session_state[KEY_INPUT] or None,
                          batch_size=int(st.session_state[KEY_BATCH]), dtype=st.session_state[KEY_DTYPE],
                          optimizer=st.session_state[KEY_OPT])
except core.NetworkError as e:
    st.error(f"Cannot analyse this network: {e}")
    st.stop()

t = report.totals
c1, c2, c3, c4, c5 = st.columns(5)
c1.metric("Parameters", f"{t['params']:,}", help=f"{fmt_bytes(t['param_bytes'])} at {report.dtype}")
c2.metric("Forward GMACs", f"{t['macs'] / 1e9:,.3f}", help="multiply-adds")
c3.metric("Forward GFLOPs", f"{t['flops'] / 1e9:,.3f}", help=core.CONVENTION)
c4.metric("Inference memory", fmt_bytes(t["inference_bytes"]),
          help=f"weights + peak of live activations ({fmt_bytes(t['activation_bytes'])}, at {t['activation_peak_at']})")
c5.metric("Training memory", fmt_bytes(t["training_bytes"]),
          help=f"weights + gradients + {report.optimizer} state + activations saved for backward "
               f"({fmt_bytes(t['saved_activation_bytes'])})")

df = report.to_pandas()
columns = ["name", "op", "output_shape", "params", "macs", "flops", "backward_flops", "activation_bytes",
           "arithmetic_intensity"]
st.dataframe(
    df[columns], hide_index=True, width="stretch", key="layer_table",
    column_config={
        "name": "Layer", "op": "Op", "output_shape": "Output shape",
        "params": st.column_config.NumberColumn("Params", format="localized"),
        "macs": st.column_config.NumberColumn("MACs", format="localized"),
        "flops": st.column_config.NumberColumn("FLOPs fwd", format="localized"),
        "backward_flops": st.column_config.NumberColumn("FLOPs bwd", format="localized"),
        "activation_bytes": st.column_config.NumberColumn("Output bytes", format="localized"),
        "arithmetic_intensity": st.column_config.NumberColumn("FLOP/byte", format="%.2f"),
    })
st.download_button("Download CSV", df.to_csv(index=False), f"{report.name}_b{report.batch_size}.csv", "text/csv",
                   key="download_csv")

st.subheader("Pen and paper")
names = [layer.name for layer in report.layers]
st.selectbox("Layer", names, key=KEY_LAYER, index=names.index("conv2") if "conv2" in names else 0)
for line in report.explain(st.session_state[KEY_LAYER]):
    st.markdown(f"**{line.label}** = {line.symbolic} = {line.substituted} = **{line.value:,}**")
