"""Session state, the sidebar every page shows, and cached calls into ``core``.

Every page opens with ``page(title)``: the page config, then ``sidebar()``, which initialises state, draws the
controls (network, input shape, batch, precision, optimizer, device, PPP) and returns a ``Selection`` with the current
analysis and estimate, or stops the page with a message naming what is wrong, then the title. Widget keys are
constants so tests find widgets by key.

Classroom server mode (``CNN_CALC_SERVER=1`` in the server's environment; README, "Serving a class"): the user's own
devices live in their session (``SESSION_DEVICES``), never in a file, so nothing a student does is written to the
server's disk or seen by another student; live timing and calibration are off unless ``CNN_CALC_LIVE=1`` too
(``live_allowed``). Without the variable, nothing changes: devices are read from and saved to the user's file.

Links (``ui.links``): a session's first run takes the sidebar's state from the URL's query parameters
(``_open_link``), and every run writes the state back to them and shows the link to copy (``_share``); the query
parameters, like the rest of the state, belong to one browser session.

The sidebar's analysis and estimate come from ``ui.shared_cache``: one table for the process, shared by every session
and keyed by content (the IR, the device's figures, every setting), so it shares work, never a session's data.
"""

from __future__ import annotations

import importlib.util
import math
import os
from dataclasses import dataclass

import streamlit as st

import core
from core.api import TIMM_PREFIX
from core.bridge import timm_models
from core.choices import DEFAULT_DTYPE, DEFAULT_OPTIMIZER, LAUNCHES, VARIANTS
from core.devices import DeviceDB, load_devices
from core.paleo import Estimate
from core.precision import OPTIMIZERS, PRECISIONS
from core.zoo import family
from ui import links, shared_cache

MODEL, INPUT, BATCH, DTYPE, OPTIMIZER, DEVICE, PPP, VARIANT, LAUNCH = (
    "model", "input_shape", "batch_size", "dtype", "optimizer", "device", "ppp", "variant", "launch")
CUSTOM = "custom"                    # the MODEL value for the network built or edited on the Network page
CUSTOM_NET, HISTORY = "custom_network", "custom_history"   # the current custom Network; earlier versions (undo)
DEFAULTS = {MODEL: "mnist_cnn", INPUT: "", BATCH: 1, DTYPE: DEFAULT_DTYPE, OPTIMIZER: DEFAULT_OPTIMIZER,
            DEVICE: "v100-sxm2", PPP: 1.0, VARIANT: VARIANTS[0], LAUNCH: LAUNCHES[0]}
VARIANT_LABELS = {"auto": "auto: predicted where fitted, else PALEO", "predicted": "predicted (fitted GPU model)",
                  "paleo": "PALEO at the PPP", "roofline": "roofline: max(compute, memory) at the PPP"}


PENDING_MODEL = "pending_model"      # a network choice made after the sidebar was drawn, applied on the next run
LINK_OPENED, LINK_NOTICES = "link_opened", "link_notices"   # the URL was read (first run); what it had that was bad
LINK_PACKED = "link_packed"          # (custom network, its packed text): packed once per edit, not on every run


BATCH_LOG = "batch_log"
BATCH_STEPS = [2 ** i for i in range(13)]            # 1 … 4096 on the log-scale slider


def _nearest_step(batch: int) -> int:
    """The slider position nearest to ``batch`` on the log scale (100 → 128)."""
    return min(BATCH_STEPS, key=lambda b: abs(math.log2(b) - math.log2(max(int(batch), 1))))


def _batch_from_slider() -> None:
    st.session_state[BATCH] = st.session_state[BATCH_LOG]


def _slider_from_batch() -> None:
    st.session_state[BATCH_LOG] = _nearest_step(st.session_state[BATCH])


def init_state(db: DeviceDB | None = None) -> None:
    """Defaults on first run, then what the URL's parameters ask for; re-assigning keeps widget values when the user
    switches pages."""
    for k, v in DEFAULTS.items():
        st.session_state[k] = st.session_state.get(k, v)
    if LINK_OPENED not in st.session_state:
        _open_link(db if db is not None else devices())
    st.session_state[BATCH_LOG] = st.session_state.get(BATCH_LOG, _nearest_step(st.session_state[BATCH]))
    pending = st.session_state.pop(PENDING_MODEL, None)
    if pending is not None:
        st.session_state[MODEL] = pending


def model_options() -> list[str]:
    """The networks the sidebar's picker offers: the built-ins; where timm is installed, its convolutional models that
    import (read from ``core/timm_models.json``: timm itself loads only when one is chosen) and a ``timm:`` model
    opened by name; the edited one."""
    current = st.session_state.get(MODEL)
    listed = [TIMM_PREFIX + n for n in timm_models.names()]
    timm = listed + ([current] if isinstance(current, str) and current.startswith(TIMM_PREFIX)
                     and current not in listed else [])
    return core.builtin_names() + timm + ([CUSTOM] if st.session_state.get(CUSTOM_NET) is not None else [])


def accepts_model(name: str) -> bool:
    """Whether the picker takes ``name``: a built-in, or ``timm:NAME`` where timm is installed (whether NAME is a
    timm model only loading it tells: ``links.decode`` does)."""
    if name in core.builtin_names():
        return True
    timm = name.startswith(TIMM_PREFIX) and len(name) > len(TIMM_PREFIX)
    return timm and importlib.util.find_spec("timm") is not None


def _open_link(db: DeviceDB) -> None:
    """A session's first run: the sidebar's state from the URL's parameters; each one not used is a notice."""
    st.session_state[LINK_OPENED] = True
    params = {k: st.query_params[k] for k in links.KEYS if k in st.query_params}
    if not params:
        return
    opened = links.decode(params, DEFAULTS, models=accepts_model, devices=list(db.devices))
    if opened.network is not None:
        st.session_state[CUSTOM_NET] = opened.network
        st.session_state[HISTORY] = []
    st.session_state.update(opened.values)
    st.session_state[LINK_NOTICES] = opened.notices


def _share() -> None:
    """Write the state to the URL's parameters (only the keys ``ui.links`` owns; ``lab`` and the like stay) and show
    the link to copy. Runs on every page run, so a page switch that drops the parameters gets them back."""
    packed = None
    if st.session_state[MODEL] == CUSTOM:
        net, cached = st.session_state[CUSTOM_NET], st.session_state.get(LINK_PACKED)
        if cached is None or cached[0] is not net:
            cached = st.session_state[LINK_PACKED] = (net, links.pack_network(net))
        packed = cached[1]
    others = {k: st.query_params[k] for k in st.query_params if k not in links.KEYS}
    made = links.link(st.session_state, DEFAULTS, base_url=st.context.url or "", packed=packed, others=others)
    for k in links.KEYS:
        want = made.params.get(k)
        if want is None and k in st.query_params:
            del st.query_params[k]
        elif want is not None and st.query_params.get(k) != want:
            st.query_params[k] = want
    st.caption("**Link to this view**: this page with these settings (the button copies it).")
    st.code(made.url, language=None, wrap_lines=True, height=160 if len(made.url) > 400 else "content")
    if made.network_chars:
        st.info(f"Your edited network is {made.network_chars:,} characters packed: too large for a link (at most "
                f"{links.URL_LIMIT:,} in all). The link opens the default network; {links.EXPORT_HINT}.")


def choose_model(name: str) -> None:
    """Select a network from a page (the sidebar's widget is already drawn): takes effect on the rerun."""
    st.session_state[PENDING_MODEL] = name


def current_network() -> core.Network:
    if st.session_state[MODEL] == CUSTOM and st.session_state.get(CUSTOM_NET) is not None:
        return st.session_state[CUSTOM_NET]
    if st.session_state[MODEL].startswith(TIMM_PREFIX):
        # a timm model is traced at the sidebar's input shape (its forward may branch on sizes, so the network
        # traced at its default size is not re-propagated to another one); cached per name and shape
        return core.load_network(st.session_state[MODEL], st.session_state.get(INPUT, "").strip() or None)
    return core.load_network(st.session_state[MODEL])


def set_custom(network: core.Network) -> None:
    """Make ``network`` the current one; the one it replaces (built-in or custom) goes on the undo history."""
    st.session_state.setdefault(HISTORY, []).append(current_network())
    st.session_state[CUSTOM_NET] = network
    choose_model(CUSTOM)


def analysis(model, input_shape: str, batch: int, dtype: str, optimizer: str) -> core.Report:
    """The analysis every page shows, from the process-wide cache shared by all sessions (``ui.shared_cache``: keyed
    by the network's IR content, never by its name)."""
    return shared_cache.analysis(model, input_shape or None, batch, dtype, optimizer)


SERVER_ENV, LIVE_ENV = "CNN_CALC_SERVER", "CNN_CALC_LIVE"
SESSION_DEVICES = "session_devices"  # server mode: this session's database (built-ins + the user's own entries)
LIVE_OFF = ("Live timing and calibration are off on this class server: they would measure the server, shared by the "
            "whole class, not your computer — run the app on your own machine (`streamlit run app.py`) to time it.")


def _flag(name: str) -> bool:
    return os.environ.get(name, "").strip().lower() in ("1", "true", "yes", "on")


def server_mode() -> bool:
    """Serving a class (``$CNN_CALC_SERVER``): user devices per session, the server's files read-only."""
    return _flag(SERVER_ENV)


def live_allowed() -> bool:
    """Live timing and calibration: always on a user's own machine; on a class server only with ``$CNN_CALC_LIVE``."""
    return not server_mode() or _flag(LIVE_ENV)


@st.cache_resource(show_spinner=False)
def _file_devices():
    """The database plus the user's own devices. A user file that cannot be read is left out by ``load_devices``
    itself, never fatal: it is one line of ``problems``, which the Devices page lists."""
    return load_devices()


def devices() -> DeviceDB:
    """The database the pages use: with the user's file (cached for the process; ``devices.clear()`` re-reads it), or
    in server mode the built-ins plus what this session added (no file is read or written)."""
    if server_mode():
        db = st.session_state.get(SESSION_DEVICES)
        return db if db is not None else load_devices(user_path=None)
    return _file_devices()


devices.clear = _file_devices.clear     # after the user's file changed


def keep_session_devices(db: DeviceDB) -> None:
    """Server mode: ``db`` (built-ins + this user's entries) becomes this session's database."""
    st.session_state[SESSION_DEVICES] = db


@dataclass
class Selection:
    report: core.Report
    device: object
    estimate: Estimate | None       # None when the device lacks the chosen precision (the message says why)
    estimate_error: str | None


def _label(name: str) -> str:
    if name == CUSTOM:
        return "custom · your edited network"
    if name.startswith(TIMM_PREFIX):
        kind = timm_models.catalog().get(name[len(TIMM_PREFIX):], {}).get("family")
        return f"timm · {kind + ' · ' if kind else ''}{name[len(TIMM_PREFIX):]}"
    return f"{family(name)} · {name}"


def sidebar() -> Selection:
    db = devices()
    init_state(db)
    with st.sidebar:
        options = model_options()
        if st.session_state[MODEL] not in options:
            st.session_state[MODEL] = DEFAULTS[MODEL]
        st.selectbox("Network", options, key=MODEL, format_func=_label,
                     help="The MNIST pair, then torchvision's classifiers (VGG and ResNet first), timm's "
                          "convolutional models (when timm is installed; built without weights), and your edited "
                          "network. Type to search.")
        try:
            with st.spinner("Building the network (a timm model takes a few seconds the first time)…"):
                net = current_network()
        except core.CalcError as e:         # a timm model that does not import: say why, keep everything else
            if st.session_state[INPUT].strip():     # traced at the shape typed: keep the box to change it
                st.error(f"Cannot load this network at input shape {st.session_state[INPUT].strip()}: {e}. "
                         "Change or clear the input shape, or pick another network.")
                st.text_input("Input shape per sample", key=INPUT, help="C×H×W without the batch; empty = the "
                              "network's own.")
            else:
                st.error(f"Cannot load this network: {e}. Pick another one.")
            st.stop()
        st.text_input("Input shape per sample", key=INPUT, placeholder="×".join(map(str, net.inputs[0][1])),
                      help="C×H×W without the batch; empty = the network's own.")
        st.select_slider("Batch size (log scale)", BATCH_STEPS, key=BATCH_LOG, on_change=_batch_from_slider)
        st.number_input("Batch size", min_value=1, max_value=4096, step=1, key=BATCH, on_change=_slider_from_batch,
                        label_visibility="collapsed")
        st.selectbox("Precision", list(PRECISIONS), key=DTYPE, help=PRECISIONS[st.session_state[DTYPE]].note)
        st.selectbox("Optimizer (training memory)", list(OPTIMIZERS), key=OPTIMIZER)
        ids = list(db.devices)
        if st.session_state[DEVICE] not in ids:
            st.session_state[DEVICE] = DEFAULTS[DEVICE] if DEFAULTS[DEVICE] in ids else ids[0]
        st.selectbox("Device", ids, key=DEVICE, format_func=lambda i: db.devices[i].name)
        st.selectbox("Time model", list(VARIANTS), key=VARIANT, format_func=VARIANT_LABELS.get,
                     help="predicted: a GPU time model fitted per architecture generation to measured timings "
                          "(compute, memory and launch overhead per layer), labelled with its typical held-out "
                          "error. PALEO: FLOPs at PPP × peak plus bytes at PPP × bandwidth, the classic bound. "
                          "auto uses predicted on a GPU whose generation is fitted at PPP 1, else PALEO.")
        st.radio("Kernel launches", list(LAUNCHES), key=LAUNCH, horizontal=True,
                 format_func=lambda v: {"eager": "eager PyTorch", "cuda_graphs": "CUDA Graphs"}.get(v, v),
                 help="Predicted model only. Eager PyTorch: the host pays a fitted cost for every kernel, which "
                      "dominates small batches. CUDA Graphs replay a captured pass without it (the GPU's own few "
                      "µs between kernels is not modelled; the fit saw eager runs only).")
        st.slider("PPP (platform percent of peak)", 0.05, 1.0, step=0.05, key=PPP,
                  help="The fraction of the datasheet peak the software reaches. 1.0 = peak: an optimistic bound; "
                       "cuDNN-class libraries come close to 1, frameworks with overhead 0.5 or less. A PPP below 1 "
                       "gives PALEO (the predicted model fits its own efficiencies).")
        _share()
        st.caption(core.CONVENTION)
        for message in db.left_out:          # a corrupt user devices file: said on every page, not only Devices
            st.warning(f"Your devices file was not loaded ({message}); the built-in devices are shown. The Devices "
                       "page keeps the file aside when you save.")
    notices = st.session_state.pop(LINK_NOTICES, [])          # once, above the page: what the link had wrong
    if notices:
        st.warning("\n".join(f"- {links.plain(n)}" for n in notices))
    try:
        report = analysis(current_network(), st.session_state[INPUT].strip(), int(st.session_state[BATCH]),
                          st.session_state[DTYPE], st.session_state[OPTIMIZER])
    except core.CalcError as e:
        st.error(f"Cannot analyse this network: {e}")
        st.stop()
    dev = db.devices[st.session_state[DEVICE]]
    try:
        est = shared_cache.estimate(report, dev, **time_settings())     # keyed by the device's figures
        err = None
    except core.CalcError as e:
        est, err = None, str(e)
    return Selection(report, dev, est, err)


def time_settings(across_devices: bool = False) -> dict:
    """The sidebar's time-model settings as ``core.estimate`` keywords. ``across_devices``: for estimates on other
    devices, where "predicted" would refuse a CPU or an unfitted GPU, "auto" (each device gets what applies)."""
    variant = st.session_state[VARIANT]
    if across_devices and variant == "predicted":
        variant = "auto"
    return {"ppp": float(st.session_state[PPP]), "variant": variant, "launch": st.session_state[LAUNCH]}


# Metric values at Streamlit's 2.25rem were cut to "25,55…" in six columns on a 1280-pixel laptop screen (ResNet-50's
# parameter count) and to "86,567,6…" at 1500 (ViT-B): the value shrinks with the window, and wraps rather than hides
# digits on a narrower one (tests/test_e2e_browser.py measures it)
METRIC_CSS = """<style>
[data-testid="stMetricValue"] { font-size: clamp(1rem, 1.6vw, 2.25rem); }
[data-testid="stMetricValue"] *, [data-testid="stMetricLabel"] p { white-space: normal !important;
    overflow: visible !important; text-overflow: clip !important; overflow-wrap: anywhere; }
</style>"""


def page(title: str, *, needs_estimate: bool = False, tab: str | None = None) -> Selection:
    """The opening of every page: config (the browser tab reads ``tab``, else ``title``), sidebar, title; pages that
    need a time estimate stop with the reason (a device without the chosen precision) instead of failing."""
    st.set_page_config(page_title=f"{tab or title} · CNN calculator", layout="wide")
    st.html(METRIC_CSS)
    sel = sidebar()
    st.title(title)
    if needs_estimate and sel.estimate is None:
        st.warning(sel.estimate_error)
        st.stop()
    return sel
