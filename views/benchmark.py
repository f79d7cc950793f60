"""Benchmark: live timing on this machine (progress bar, Stop), calibration of this machine as device ``local``,
measured vs PALEO-predicted time per layer, the backward:forward ratio, latency vs FLOPs and parameters across
networks (Spearman's ρ) and throughput vs batch size.

torch is imported only inside the work of the run buttons (``core.bridge.timing`` and ``ui.benchmark`` are
torch-free), so the page loads as fast as the others. Runs are bounded: small defaults, a soft ``max_seconds``, the
memory model's guard and a FLOP limit before any module is built. Threads follow the CLI's rule: the count the device
'local' was calibrated at, else torch's default (which calibration uses too); every result records its count. A
refused or failed run shows the engine's message. Each of the four sections is a ``ui.live.section``: Start and
Stop, the run, the kept result (how Stop works, and its limits: ``ui.live``). On a class server
(``CNN_CALC_SERVER``) the page only says why it is off, unless ``CNN_CALC_LIVE`` turns it on; a calibration there is
kept in the session, not written to a file.
"""

from __future__ import annotations

import os

import streamlit as st

import core
from core.api import estimate
from core.bridge.timing import CPU_DTYPES, PASSES
from core.choices import DEFAULT_DTYPE
from core.cli_text import calibration_line
from ui import bench_results, live
from ui import benchmark as bm
from ui import devices_actions as act
from ui.state import LIVE_OFF, devices, live_allowed, page, server_mode, time_settings

sel = page("Benchmark")
if not live_allowed():      # a class server: timing here would measure the server, not the student's machine
    st.info(LIVE_OFF)
    st.stop()
st.caption("Live timing with PyTorch on this machine's CPU, with random weights.",
           help="torch loads on the first run (a few seconds). Keep the settings small: the machine may be shared.")

# session keys of this page (results survive reruns and page switches)
RESULT, CALIBRATION, ACROSS, THROUGHPUT = "bench_result", "bench_calibration", bm.ACROSS_ROWS, "bench_tp_rows"
live.settle()


# == settings shared by every run =================================================================================
st.subheader("Run settings")
s1, s2, s3, s4, s5 = st.columns(5)
batch = int(s1.number_input("Batch size", min_value=1, max_value=4096, value=bm.DEFAULTS["batch"], step=1,
                            key="bench_batch", help="For live timing (the sidebar's batch is for the model)."))
warmup = int(s2.number_input("Warm-up runs", min_value=0, max_value=20, value=bm.DEFAULTS["warmup"], step=1,
                             key="bench_warmup"))
repeats = int(s3.number_input("Timed repeats", min_value=1, max_value=200, value=bm.DEFAULTS["repeats"], step=1,
                              key="bench_repeats"))
max_seconds = float(s4.number_input("Max seconds (soft)", min_value=1.0, max_value=600.0,
                                    value=bm.DEFAULTS["max_seconds"], step=5.0, key="bench_max_seconds",
                                    help="No warm-up or repeat starts after this; each pass still runs once."))
db, torch_n = devices(), bm.torch_threads_now()
choices = bm.thread_choices(os.cpu_count(), db)
pick = s5.selectbox("torch threads", choices, index=choices.index(bm.default_thread_choice(db)), key="bench_threads",
                    format_func=lambda n: bm.thread_label(n, torch_n),
                    help="Default: the count the device 'local' was calibrated at, else torch's default (what "
                         "`python -m core calibrate` and `time` use). A calibration predicts its own count only.")
threads = pick or None                  # None: leave torch's own count
said, clash = bm.threads_note(pick, db, torch_n)
st.caption(said)
if clash:
    st.warning(clash)
report = sel.report
dtype = report.dtype if report.dtype in CPU_DTYPES else DEFAULT_DTYPE   # the page times on this CPU
common = {"device": "cpu", "dtype": dtype, "warmup": warmup, "repeats": repeats, "max_seconds": max_seconds,
          "threads": threads}


# == live timing of the current network ===========================================================================
def _time(progress, cancel):
    from core.bridge.timing import check_fits, time_module  # torch loads inside these calls only
    from core.bridge.to_torch import to_module

    rep = report.with_batch(batch)
    training = any(p != "forward" for p in passes)
    bm.check_live(rep, bm.MAX_STEP_GFLOPS, training=training)
    check_fits(rep, training=training)                  # before the module's weights are allocated
    module = to_module(rep.compiled.network, device="cpu")
    result = time_module(module, rep.input_shape, batch, passes=passes, per_layer=per_layer, progress=progress,
                         cancel=cancel, report=rep, **common)
    est = None
    if sel.estimate is not None:
        try:
            # classic PALEO at the sidebar's PPP: the page reports measured ÷ PALEO and the implied PPP
            est = estimate(rep, sel.device, batch_size=batch, dtype=rep.dtype, optimizer=rep.optimizer,
                           **{**time_settings(), "variant": "paleo", "launch": "eager"})
        except core.CalcError:
            est = None
    return {"result": result, "report": rep, "estimate": est, "device": sel.device.name, "device_id": sel.device.id}


st.subheader(f"Time {report.name}")
p1, p2 = st.columns([3, 1])
passes = p1.multiselect("Passes", list(PASSES), default=list(PASSES), key="bench_passes",
                        format_func=lambda p: bm.PASS_LABELS[p])
per_layer = p2.checkbox("Per-layer forward times", value=True, key="bench_per_layer",
                        help="Extra hooked forward runs; each leaf module's time, compared with PALEO.")
live.section("timing", RESULT, _time, lambda saved: bench_results.timing(saved, sel.estimate_error),
             start=("Time", "bench_time"), stop="bench_stop", buttons=st.columns([1, 1, 6])[:2])


# == calibration ==================================================================================================
def _calibrate(progress, cancel):
    from core.bridge.calibrate import calibrate, save_local

    spec = calibrate(float(cal_seconds), progress, cancel=cancel, threads=threads,   # None: torch's default
                     force=bool(cal_force))
    if server_mode():                   # CNN_CALC_LIVE on a class server: this session's device, no file written
        act.store(devices().add(spec))
        return {"spec": spec, "path": "this session only"}
    return {"spec": spec, "path": str(save_local(spec))}


def _calibrated() -> None:
    devices.clear()                 # the sidebar's device list is cached: re-read it with 'local' in it
    st.rerun()


st.subheader("Calibrate this machine")
st.caption("Measures the CPU's GEMM peak per precision, memory bandwidth, and per class of work an efficiency and a "
           "fixed cost per layer call.", help="Saves them as the device 'local' (in your device file): choose it in "
           "the sidebar to estimate for this machine.")
if "local" in db.devices and db.devices["local"].calibration:
    st.caption(f"'local' now: {calibration_line(db.devices['local'])}.")
c1, c2, c3 = st.columns([4, 1, 1])
cal_seconds = c1.slider("Calibration budget (seconds)", 3, 30, 10, key="bench_cal_seconds")
cal_force = c1.checkbox("Keep the result even if the machine is busy (it is saved marked noisy)", key="bench_cal_force",
                        help="Calibration refuses when its timings vary too much or a figure is out of bounds, "
                             "naming what varied: close other programs and try again, or keep it anyway.")
live.section("calibration", CALIBRATION, _calibrate, bench_results.calibration,
             start=("Calibrate this machine", "bench_calibrate"), stop="bench_cal_stop", buttons=(c2, c3),
             done=_calibrated)


# == across networks ==============================================================================================
def _across(progress, cancel):
    return bm.time_networks(chosen, progress=progress, cancel=cancel, **common)


st.subheader("Across networks: latency vs FLOPs and parameters")
st.caption(f"Forward pass at batch 1, random weights; ImageNet networks at "
           f"{'×'.join(map(str, bm.SMALL_INPUT))} to stay fast.",
           help=f"Networks over {bm.MAX_ACROSS_GFLOPS:g} GFLOPs are refused.")
chosen = st.multiselect("Networks", core.builtin_names(), default=list(bm.ACROSS_DEFAULT), key="bench_across")
live.section("across-networks timing", ACROSS, _across, bench_results.across,
             start=("Time these networks", "bench_across_run"), stop="bench_across_stop",
             missing=None if chosen else "Choose at least one network.")


# == throughput vs batch ==========================================================================================
def _throughput(progress, cancel):
    from core.bridge.timing import throughput_vs_batch
    from core.bridge.to_torch import to_module

    bm.check_live(report.with_batch(max(batches)), bm.MAX_STEP_GFLOPS, training=False)
    module = to_module(report.compiled.network, device="cpu")
    return {"network": report.name, "rows": throughput_vs_batch(
        module, report.input_shape, sorted(batches), passes=("forward",), report=report, progress=progress,
        cancel=cancel, measure_memory=False, **common)}


st.subheader(f"Throughput vs batch size: {report.name}")
batches = st.multiselect("Batch sizes", list(bm.THROUGHPUT_BATCHES), default=list(bm.THROUGHPUT_DEFAULT),
                         key="bench_tp_batches")
live.section("throughput", THROUGHPUT, _throughput, lambda tp: bench_results.throughput(tp, dtype),
             start=("Measure throughput", "bench_tp_run"), stop="bench_tp_stop",
             missing=None if batches else "Choose at least one batch size.")
