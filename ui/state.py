"""Session state, the sidebar every page shows, and cached calls into ``core``.

Pages call ``sidebar()`` first: it initialises state, draws the controls (network, input shape, batch, precision,
optimizer, device, PPP) and returns a ``Selection`` with the current analysis and estimate, or stops the page with a
message naming what is wrong. Widget keys are constants so tests find widgets by key.
"""

from __future__ import annotations

from dataclasses import dataclass

import streamlit as st

import core
from core.devices import load_devices
from core.paleo import Estimate, estimate
from core.precision import OPTIMIZERS, PRECISIONS
from core.zoo import family

MODEL, INPUT, BATCH, DTYPE, OPTIMIZER, DEVICE, PPP = (
    "model", "input_shape", "batch_size", "dtype", "optimizer", "device", "ppp")
DEFAULTS = {MODEL: "mnist_cnn", INPUT: "", BATCH: 1, DTYPE: "fp32", OPTIMIZER: "sgd_momentum",
            DEVICE: "v100-sxm2", PPP: 1.0}


def init_state() -> None:
    """Defaults on first run; re-assigning keeps widget values when the user switches pages."""
    for k, v in DEFAULTS.items():
        st.session_state[k] = st.session_state.get(k, v)


def analysis(model: str, input_shape: str, batch: int, dtype: str, optimizer: str) -> core.Report:
    """core caches the compiled network: a new batch size or dtype is arithmetic, no cache needed here."""
    return core.analyze(model, input_shape=input_shape or None, batch_size=batch, dtype=dtype, optimizer=optimizer)


@st.cache_resource(show_spinner=False)
def devices():
    return load_devices()


@dataclass
class Selection:
    report: core.Report
    device: object
    estimate: Estimate | None       # None when the device lacks the chosen precision (the message says why)
    estimate_error: str | None


def _label(name: str) -> str:
    return f"{family(name)} · {name}"


def sidebar() -> Selection:
    init_state()
    db = devices()
    with st.sidebar:
        st.selectbox("Network", core.builtin_names(), key=MODEL, format_func=_label,
                     help="The MNIST pair, then torchvision's classifiers (VGG and ResNet first). Type to search.")
        net = core.load_network(st.session_state[MODEL])
        st.text_input("Input shape per sample", key=INPUT, placeholder="×".join(map(str, net.inputs[0][1])),
                      help="C×H×W without the batch; empty = the network's own.")
        st.number_input("Batch size", min_value=1, max_value=4096, step=1, key=BATCH)
        st.selectbox("Precision", list(PRECISIONS), key=DTYPE, help=PRECISIONS[st.session_state[DTYPE]].note)
        st.selectbox("Optimizer (training memory)", list(OPTIMIZERS), key=OPTIMIZER)
        ids = list(db.devices)
        if st.session_state[DEVICE] not in ids:
            st.session_state[DEVICE] = ids[0]
        st.selectbox("Device", ids, key=DEVICE, format_func=lambda i: db.devices[i].name)
        st.slider("PPP (platform percent of peak)", 0.05, 1.0, step=0.05, key=PPP,
                  help="The fraction of the datasheet peak the software reaches. 1.0 = peak: an optimistic bound; "
                       "cuDNN-class libraries come close to 1, frameworks with overhead 0.5 or less.")
        st.caption(core.CONVENTION)
    try:
        report = analysis(st.session_state[MODEL], st.session_state[INPUT].strip(), int(st.session_state[BATCH]),
                          st.session_state[DTYPE], st.session_state[OPTIMIZER])
    except core.CalcError as e:
        st.error(f"Cannot analyse this network: {e}")
        st.stop()
    dev = db.devices[st.session_state[DEVICE]]
    try:
        est = estimate(report, dev, batch_size=report.batch_size, dtype=report.dtype, optimizer=report.optimizer,
                       ppp=float(st.session_state[PPP]))
        err = None
    except core.CalcError as e:
        est, err = None, str(e)
    return Selection(report, dev, est, err)
