"""Lab 1 · PALEO, PPP and VGG FLOPs: how much of VGG's forward pass is convolution, how fast a Tesla K80 could
run the networks of Lu et al.'s tables 3, 5 and 6 from its published peak, single and double precision, and what
training on the board's two GPUs as data-parallel workers gains (``core.scaling``).

The numbers are pure functions over ``core`` (tests/test_labs.py checks them by hand); ``show`` lays them out."""

from __future__ import annotations

import pandas as pd
import streamlit as st

import core
from core.api import estimate, scaling
from ui.data_parallel_view import error_words, percent
from ui.labs.common import in_words, number, open_button, predicted_beside_bound, question, reading, shape
from ui.tables import dataframe

TITLE = "1 · PALEO, PPP and VGG FLOPs"
PAPER_NETWORKS = ("vgg16", "googlenet", "resnet50")     # the networks of Lu et al.'s tables 3, 5 and 6
K80 = {"boost": ("k80", "k80-board"), "base": ("k80-base", "k80-board-base")}   # (one GK210 GPU, the whole board)
NEEDS = tuple(i for pair in K80.values() for i in pair)  # the built-in devices this lab names (and BOARD_LINK)
DTYPES = ("fp32", "fp64")
MACS_EXAMPLE = "vgg16"                                   # the network the MACs-vs-FLOPs mistake is told with
BOARD_LINK = "pcie3-x16"       # the K80's two GPUs exchange gradients through the board's PCIe 3.0 switch
BOARD_BATCH = 64               # images per GPU when training on the whole board (weak scaling: each GPU keeps 64)


def conv_share(report: core.Report) -> dict:
    """The conv layers' part of the forward pass: their MACs and FLOPs, and their share of the network's."""
    conv = [layer for layer in report.layers if layer.op == "conv2d"]
    t = report.totals
    macs, flops = sum(x.macs for x in conv), sum(x.flops for x in conv)
    return {"conv_macs": macs, "macs": t["macs"], "macs_share": macs / t["macs"],
            "conv_flops": flops, "flops": t["flops"], "flops_share": flops / t["flops"]}


def flop_table(report: core.Report) -> pd.DataFrame:
    """One row per layer that does arithmetic: output shape, MACs, FLOPs and its share of the forward FLOPs."""
    total = report.totals["flops"]
    return pd.DataFrame([{"layer": x.name, "op": x.op, "output": shape(x.output_shape[1:]), "MACs": x.macs,
                          "FLOPs": x.flops, "% of FLOPs": 100 * x.flops / total}
                         for x in report.layers if x.flops])


def k80_table(db, clock: str = "boost", ppp: float = 1.0, networks=PAPER_NETWORKS) -> pd.DataFrame:
    """Batch-1 inference of each network on one K80 GPU and on the whole board, single and double precision.

    "ms" is the course's formula, FLOPs ÷ (PPP × peak) (PALEO's compute time); "ms, MACs as FLOPs" is the same with
    the multiply-adds in place of FLOPs (the half-size answer); "PALEO ms" adds the memory time of every layer;
    "predicted ms" is the fitted GPU time model's forward pass (None where it has no parameters: ``k80_predicted``)."""
    rows = []
    for name in networks:
        report = core.analyze(name)
        for dev_id in K80[clock]:
            dev = db.devices[dev_id]
            where = f"board ({dev.gpus_per_board} GPUs)" if dev.gpus_per_board > 1 else "one GPU"
            for dtype in DTYPES:
                e = estimate(report, dev, dtype=dtype, ppp=ppp, variant="paleo")
                t, peak = e.totals, dev.peak(dtype) * ppp
                rows.append({"network": name, "K80": where, "precision": dtype, "peak TFLOP/s": dev.peak(dtype) / 1e12,
                             "GMACs": report.totals["macs"] / 1e9, "GFLOPs": t["forward_flops"] / 1e9,
                             "ms": t["forward_compute_s"] * 1e3, "images/s": 1 / t["forward_compute_s"],
                             "ms, MACs as FLOPs": report.totals["macs"] / peak * 1e3,
                             "PALEO ms": t["forward_s"] * 1e3,
                             "predicted ms": predicted_beside_bound(report, dev, dtype)["predicted ms"]})
    return pd.DataFrame(rows)


def k80_predicted(db, clock: str = "boost") -> str:
    """Whether the fitted GPU time model covers the K80, in a sentence for the lab (why its column is blank)."""
    dev = db.devices[K80[clock][0]]
    why = predicted_beside_bound(core.analyze(PAPER_NETWORKS[0]), dev)["why"]
    if why.startswith("predicted"):
        e = estimate(core.analyze(PAPER_NETWORKS[0]), dev).typical_error
        return (f"predicted ms is the GPU time model fitted on published timings of {dev.architecture} GPUs, "
                f"typically within ±{e['median'] * 100:.0f} % ({e['basis']}); blank for the board (the model "
                "predicts one GPU) and for fp64 (not fitted), and it ignores the PPP slider (the model fits its own "
                "efficiencies). It differs from PALEO ms because kernels reach a "
                "fitted share of the peak, 3×3 convolutions run as Winograd (fewer FLOPs), and at batch 1 every "
                "kernel launch costs tens of µs. Kepler's published timings come from TensorFlow, MXNet and "
                "Caffe, not PyTorch: the launch cost fitted is theirs.")
    return (f"The predicted column is blank: {why[len('PALEO: '):] if why.startswith('PALEO: ') else why}. Without "
            "published Kepler timings to fit it, this lab can only give the bound.")


def layer_timing_sum(est, overhead_us: float) -> dict:
    """Whole forward pass vs the sum of per-layer timings when each timed layer also pays ``overhead_us`` (an
    assumed kernel launch + synchronisation + profiler cost) that a whole-pass timing pays once or overlaps."""
    layers = sum(1 for r in est.layers if r["forward_flops"] or r["forward_bytes"])
    whole = est.totals["forward_s"]
    return {"layers": layers, "whole_ms": whole * 1e3, "sum_ms": (whole + layers * overhead_us * 1e-6) * 1e3}


def board_training(db, name: str, clock: str = "boost", batch: int = BOARD_BATCH) -> dict:
    """Training ``name`` on one K80 GPU against the board's two GPUs as DDP workers over its PCIe switch, each GPU
    with ``batch`` images (weak scaling): ``core.scaling``'s rows ("one", "two"), the speed-up, and what the
    gradients' exchange adds to the two-GPU step (exposed all-reduce plus synchronisation, in seconds and as a share
    of the step)."""
    one, two = scaling(name, db.devices[K80[clock][0]], db.interconnects[BOARD_LINK], workers=(1, 2), batch_size=batch,
                       mode="weak")
    return {"one": one, "two": two, "speedup": two["speedup"], "efficiency": two["efficiency"],
            "communication_s": two["communication_s"], "share": two["communication_share"]}


def board_sentence(b: dict) -> str:
    """The answer in one sentence: how many times the board's throughput is one GPU's, and what communication adds."""
    two = b["two"]
    return (f"Both GPUs train **{b['speedup']:.2f}×** as many images per second as one; the gradients' exchange adds "
            f"{two['communication_s'] * 1e3:,.1f} ms ({percent(b['share'])}) to each "
            f"{two['training_step_s'] * 1e3:,.0f} ms step.")


def _tflops(dev, dtype: str) -> str:
    return f"{dev.peak(dtype) / 1e12:g}"


def clock_help(db) -> str:
    """Each clock's board peaks, fp32 / fp64, from the device database."""
    boost, base = db.devices[K80["boost"][1]], db.devices[K80["base"][1]]
    return (f"boost: NVIDIA's headline {_tflops(boost, 'fp32')} / {_tflops(boost, 'fp64')} TFLOP/s per board; "
            f"base: {_tflops(base, 'fp32')} / {_tflops(base, 'fp64')}")


def reading_lines(db) -> tuple[str, ...]:
    """How to read the K80 table: the MACs-vs-FLOPs mistake told with VGG16's counts, the board's peaks."""
    macs = core.analyze(MACS_EXAMPLE).totals["macs"]
    board = db.devices[K80["boost"][1]]
    gpus = in_words(board.gpus_per_board)
    return (
        "ms = FLOPs ÷ (PPP × peak): the fastest the pass could run. PALEO ms adds each layer's memory time; "
        "real runs are slower still. Halving PPP doubles every time.",
        "PPP is the fraction of the datasheet peak the software reaches: cuDNN-class libraries come close to 100%, "
        "frameworks with more overhead 50% or less.",
        f"1 MAC = 2 FLOPs: {MACS_EXAMPLE.upper()} is {macs / 1e9:.2f} G multiply-adds = {2 * macs / 1e9:.1f} GFLOP. "
        f"A report divided {macs / 1e9:.1f} G \"FLOPs\" (a counter's MACs) by FLOP/s, so its times are half what "
        "they should be — the \"ms, MACs as FLOPs\" column.",
        f"A K80 is {gpus} GK210 GPUs on one board: {_tflops(board, 'fp32')} (fp32) and {_tflops(board, 'fp64')} "
        "(fp64) TFLOP/s are per board, half that per GPU. A report labelled its fp64 rows \"double-GPU\": double "
        "precision is a number format, not two GPUs.",
        f"One image runs on one GPU: the board's rows are a throughput ({gpus} images at once), not a shorter "
        "latency.")


def show(db) -> None:
    question("How much of VGG's forward pass is convolution, and how fast could a Tesla K80 run VGG16, GoogLeNet and "
             "ResNet50 from its published peak, in single and double precision? What does PPP change?")
    c1, c2, c3 = st.columns(3)
    name = c1.radio("Network", ["vgg16", "vgg19"], index=1, horizontal=True, key="lab1_model")
    ppp = c2.slider("PPP (platform percent of peak)", 0.05, 1.0, 1.0, step=0.05, key="lab1_ppp",
                    help="cuDNN-class kernels come close to 1.0; frameworks with overhead 0.5 or less.")
    clock = c3.radio("K80 clock", list(K80), horizontal=True, key="lab1_clock", help=clock_help(db))
    report = core.analyze(name)
    share = conv_share(report)
    m1, m2, m3, m4 = st.columns(4)
    m1.metric("Conv share of MACs", f"{share['macs_share']:.2%}")
    m2.metric("Conv share of FLOPs", f"{share['flops_share']:.2%}")
    m3.metric("Forward GMACs", number(share["macs"] / 1e9))
    m4.metric("Forward GFLOPs", number(share["flops"] / 1e9))
    dataframe(flop_table(report), width="stretch", height=260, key="lab1_flops",
              column_config={"MACs": st.column_config.NumberColumn(format="localized"),
                             "FLOPs": st.column_config.NumberColumn(format="localized"),
                             "% of FLOPs": st.column_config.NumberColumn(format="%.2f")})
    st.subheader("A Tesla K80 from its datasheet (batch 1)")
    dataframe(k80_table(db, clock, ppp), width="stretch", key="lab1_k80",
              column_config={c: st.column_config.NumberColumn(format="%.3f")
                             for c in ("peak TFLOP/s", "GMACs", "GFLOPs", "ms", "ms, MACs as FLOPs", "PALEO ms",
                                       "predicted ms")}
              | {"images/s": st.column_config.NumberColumn(format="%.1f")})
    reading(*reading_lines(db), k80_predicted(db, clock))
    st.subheader("Why per-layer GPU timings add up to more than the whole pass")
    overhead = st.number_input("Assumed cost per timed layer (µs): kernel launch + synchronisation + profiler",
                               min_value=0.0, max_value=10_000.0, value=10.0, step=5.0, key="lab1_overhead_us")
    e = estimate(report, db.devices[K80[clock][0]], ppp=ppp, variant="paleo")
    s = layer_timing_sum(e, overhead)
    t1, t2 = st.columns(2)
    t1.metric("Whole forward pass (PALEO, one K80 GPU)", f"{number(s['whole_ms'])} ms")
    t2.metric(f"Sum of {s['layers']} layers timed one by one", f"{number(s['sum_ms'])} ms")
    reading("Timed one by one, every layer pays a kernel launch, a device synchronisation (the GPU runs "
            "asynchronously) and the profiler's own cost, and nothing overlaps across layer boundaries; a whole-pass "
            "timing pays these once. The µs per layer above is an assumption to play with, not a measurement.")
    show_board(db, name, clock)
    open_button(name, "lab1_open")


def show_board(db, name: str, clock: str) -> None:
    """Training on the whole board: one GK210 against both as data-parallel workers."""
    st.subheader("Training on the whole board: one GPU or both")
    b = board_training(db, name, clock)
    one, two = b["one"], b["two"]
    link = db.interconnects[BOARD_LINK].name
    t1, t2, t3, t4 = st.columns(4)
    t1.metric(f"Training step, one GPU (batch {BOARD_BATCH})", f"{number(one['training_step_s'] * 1e3, 1)} ms")
    t2.metric(f"Both GPUs ({BOARD_BATCH} images each)", f"{number(two['training_step_s'] * 1e3, 1)} ms")
    t3.metric("Speed-up (images per second)", f"{b['speedup']:.2f}×", help=f"efficiency {b['efficiency']:.1%}")
    t4.metric("Communication adds", f"{number(b['communication_s'] * 1e3, 1)} ms",
              help=f"the all-reduce of the gradients takes {number(two['allreduce_s'] * 1e3, 1)} ms over {link}, "
                   f"{number(two['overlapped_s'] * 1e3, 1)} ms of it during the backward; exposed "
                   f"{number(two['exposed_s'] * 1e3, 2)} ms, synchronisation {number(two['sync_s'] * 1e3, 2)} ms")
    st.caption(board_sentence(b))
    reading(f"PyTorch's DistributedDataParallel runs one process per GPU; the two GK210s of a K80 exchange their "
            f"gradients through the board's PCIe switch ({link}). Each GPU keeps {BOARD_BATCH} images (weak "
            "scaling), so the board trains twice the images per step in about the time one GPU takes.",
            "The all-reduce of the gradients runs in buckets while the backward is still computing; only what is "
            "left after its last layer, and the wait for the slower GPU, add to the step (the DDP model: "
            "core.data_parallel).",
            "The step time is the calculator's estimate for one GK210 (predicted where the time model covers Kepler, "
            f"else PALEO); the DDP model's {error_words('ddp')[0]}.")

