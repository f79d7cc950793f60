"""Benchmark: live timing on this machine (progress bar, Stop), calibration of this machine as device ``local``,
measured vs PALEO-predicted time per layer, the backward:forward ratio, latency vs FLOPs and parameters across
networks (Spearman's ρ) and throughput vs batch size.

torch is imported only inside the handlers of the run buttons (``core.bridge.timing`` and ``ui.benchmark`` are
torch-free), so the page loads as fast as the others. Runs are bounded: small defaults, a soft ``max_seconds``, one
torch thread, the memory model's guard and a FLOP limit before any module is built. A refused or failed run shows the
engine's message.

Stop, and its limits: a click reaches the script only as a new run of it. With Streamlit's default fast reruns
(``runner.fastReruns``), a click on Stop (or on any other control) while a job runs asks the running script to stop
— Streamlit raises its stop exception there at the next ``st`` call, here the next progress update — and starts the
page again at once in a new script thread. That new run's Stop callback also sets the job's ``stop`` flag (a dict
kept in session state, shared by both threads) which the old job's ``cancel`` callable checks before each warm-up or
timed run. So a job ends between two of its runs (calibration: between its stages), never inside one; ``time_module``
and ``calibrate`` release the one-run-per-process lock and restore the module in their ``finally``. The stopping
thread must not touch ``st.session_state`` (every access there raises the stop exception again), so it reports
through that dict; the new page run waits a few seconds for it to end, then says what happened.
"""

from __future__ import annotations

import os
import time

import streamlit as st

import core
from core.bridge.timing import implied_ppp
from core.paleo import estimate
from ui import benchmark as bm
from ui.charts import lines_chart, show
from ui.state import devices, page

sel = page("Benchmark")
st.caption("Live timing with PyTorch on this machine's CPU, with random weights. torch loads on the first run "
           "(a few seconds). Keep the settings small: the machine may be shared.")

# session keys of this page (results survive reruns and page switches)
RESULT, CALIBRATION, ACROSS, THROUGHPUT = "bench_result", "bench_calibration", bm.ACROSS_ROWS, "bench_tp_rows"
RUNNING = "bench_job"           # the job of this session: {"what", "stop", "done", "stopped"}, shared across threads
IDLE_STOP = "bench_idle_stop"   # Stop was clicked with nothing running
WAIT_S = 10.0                   # how long a new page run waits for a stopping job to end
TIMING_DTYPES = ("fp32", "fp64", "bf16", "fp16")


def _request_stop() -> None:
    job = st.session_state.get(RUNNING)
    if job is not None and not job["done"]:
        job["stop"] = True           # the session flag the running job's cancel() reads
    else:
        st.session_state[IDLE_STOP] = True


def _stop_button(key: str, where) -> None:
    where.button("Stop", key=key, on_click=_request_stop,
                 help="Ends the run in progress between two of its timed runs (see the page's notes on Stop).")


def _run(what: str, work, keep_as: str):
    """Run ``work(progress, cancel)`` under a progress bar and keep its result in ``st.session_state[keep_as]``. A
    refused or failed run (``CalcError``) is shown with the engine's message, keeps nothing and returns None. When Streamlit stops this script run (a click during the job), its exception
    passes through; the job dict records it (``stopped``, ``done``) without touching ``st.session_state``."""
    job = {"what": what, "stop": False, "done": False, "stopped": False}
    st.session_state[RUNNING] = job
    bar = st.progress(0.0, text=f"{what}: starting (loading torch)…")

    def progress(fraction: float, message: str) -> None:
        bar.progress(min(max(float(fraction), 0.0), 1.0), text=f"{what}: {message}")

    out = None
    try:
        out = work(progress, lambda: job["stop"])
    except core.CalcError as e:
        if job["stop"]:
            job["stopped"] = True
            st.warning(f"{what} stopped: {e}")
        else:
            st.error(f"{what} refused: {e}")
    except ImportError as e:
        st.error(f"{what} needs PyTorch, which could not be imported here: {e}")
    except BaseException:            # Streamlit stopping this script run
        job["stopped"] = True
        raise
    finally:
        job["done"] = True
    if st.session_state.get(RUNNING) is job:
        st.session_state[RUNNING] = None
    bar.empty()
    if out is not None:
        st.session_state[keep_as] = out
    return out


# A job of this session may still be ending in the script run this click interrupted: wait for it, briefly.
job = st.session_state.get(RUNNING)
if job is not None:
    end = time.monotonic() + WAIT_S
    while not job["done"] and time.monotonic() < end:
        time.sleep(0.05)
    if not job["done"]:
        st.info(f"The {job['what']} run is still finishing its current step; it stops before the next one.")
    else:
        st.session_state[RUNNING] = None
        if job["stopped"]:
            st.warning(f"The {job['what']} run was stopped before it finished (Stop or another control was "
                       "clicked); nothing from it was kept.")
if st.session_state.pop(IDLE_STOP, False):
    st.info("Nothing was running.")

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
threads = int(s5.number_input("torch threads", min_value=1, max_value=os.cpu_count() or 1,
                              value=bm.DEFAULTS["threads"], step=1, key="bench_threads"))
report = sel.report
dtype = report.dtype if report.dtype in TIMING_DTYPES else "fp32"
common = {"device": "cpu", "dtype": dtype, "warmup": warmup, "repeats": repeats, "max_seconds": max_seconds,
          "threads": threads}

# == live timing of the current network ===========================================================================
st.subheader(f"Time {report.name}")
p1, p2 = st.columns([3, 1])
passes = p1.multiselect("Passes", ["forward", "backward", "train_step"], default=["forward", "backward", "train_step"],
                        key="bench_passes", format_func=lambda p: bm.PASS_LABELS[p])
per_layer = p2.checkbox("Per-layer forward times", value=True, key="bench_per_layer",
                        help="Extra hooked forward runs; each leaf module's time, compared with PALEO.")
b1, b2, _ = st.columns([1, 1, 6])
start = b1.button("Time", key="bench_time", type="primary")
_stop_button("bench_stop", b2)
if start:
    def _time(progress, cancel):
        from core.bridge.timing import check_fits, time_module   # torch loads inside these calls only
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
                est = estimate(rep, sel.device, batch_size=batch, dtype=rep.dtype, optimizer=rep.optimizer,
                               ppp=sel.estimate.ppp)
            except core.CalcError:
                est = None
        return {"result": result, "report": rep, "estimate": est, "device": sel.device.name,
                "device_id": sel.device.id}

    _run("timing", _time, RESULT)

saved = st.session_state.get(RESULT)
if saved:
    res, rep, est = saved["result"], saved["report"], saved["estimate"]
    st.caption(bm.summary(res, rep) + (f" · PALEO predictions for {saved['device']} at PPP {est.ppp:g}"
                                       if est is not None else ""))
    ratio = bm.backward_ratio(res, rep)
    m1, m2, m3, m4, m5 = st.columns(5)
    if "forward" in res.passes:
        m1.metric("Forward median", f"{res.passes['forward'].median_s * 1e3:,.3f} ms")
        fwd_rate = res.achieved_flops_per_s.get("forward")
        m4.metric("Forward GFLOP/s", f"{fwd_rate / 1e9:,.2f}" if fwd_rate else "—",
                  help="the report's forward FLOPs ÷ the measured median")
        if est is not None:
            m5.metric("Implied PPP", f"{implied_ppp(res.passes['forward'].median_s, est):.3g}",
                      help=f"the PPP at which PALEO's forward compute time on {saved['device']} equals the measured "
                           "forward (compare with a calibrated 'local' device)")
    m2.metric("Backward : forward (measured)", f"{ratio['measured']:.2f}" if ratio["measured"] else "—")
    m3.metric("Backward : forward (FLOPs)", f"{ratio['flops']:.2f}" if ratio["flops"] else "—")
    st.dataframe(bm.pass_table(res), hide_index=True, width="stretch", key="bench_pass_table",
                 column_config={c: st.column_config.NumberColumn(format="%.4f")
                                for c in ("median ms", "IQR ms", "min ms", "max ms")})
    if res.layers:
        st.markdown("**Measured vs PALEO-predicted forward time per layer**")
        if est is not None and saved["device_id"] != "local":
            st.caption(f"The predictions are for {saved['device']} (the sidebar's device), not this CPU: calibrate "
                       "below and choose 'This machine' in the sidebar for a like-for-like ratio.")
        if est is None:
            st.warning(sel.estimate_error or "No PALEO estimate for this device and precision.")
        st.dataframe(bm.layer_table(res, est), hide_index=True, width="stretch", key="bench_layer_table",
                     column_config={"measured ms": st.column_config.NumberColumn(format="%.4f"),
                                    "PALEO ms": st.column_config.NumberColumn(format="%.4f"),
                                    "measured ÷ PALEO": st.column_config.NumberColumn(format="%.2f")})
        if res.layer_coverage is not None:
            st.caption(f"The layers sum to {res.layer_sum_s * 1e3:,.3f} ms, {res.layer_coverage:.0%} of the whole "
                       "forward: the rest is work no module owns (functional adds, flattens), Python overhead "
                       "between layers and the hooks themselves. Layers without a module have no measured time.")
    st.markdown("**Peak memory: measured vs the memory model**")
    st.dataframe(bm.memory_table(res), hide_index=True, width="stretch", key="bench_memory_table",
                 column_config={c: st.column_config.NumberColumn(format="%.2f")
                                for c in ("measured MiB", "model MiB", "measured ÷ model")})
    st.caption(f"Measured with {res.memory_method}." if res.memory_method else "Memory not measured.")
    for note in res.notes:
        st.caption(note)

# == calibration ==================================================================================================
st.subheader("Calibrate this machine")
st.caption("Measures the CPU's GEMM peak per precision, memory bandwidth, and per class of work an efficiency and a "
           "fixed cost per layer call; saves them as the device 'local' (in your device file): choose it in the "
           "sidebar to estimate for this machine.")
c1, c2, c3 = st.columns([4, 1, 1])
cal_seconds = c1.slider("Calibration budget (seconds)", 3, 30, 10, key="bench_cal_seconds")
cal_start = c2.button("Calibrate this machine", key="bench_calibrate", type="primary")
_stop_button("bench_cal_stop", c3)
if cal_start:
    def _calibrate(progress, cancel):
        from core.bridge.calibrate import calibrate, save_local

        spec = calibrate(float(cal_seconds), progress, cancel=cancel, threads=threads)
        return {"spec": spec, "path": str(save_local(spec))}

    if _run("calibration", _calibrate, CALIBRATION) is not None:
        devices.clear()                 # the sidebar's device list is cached: re-read it with 'local' in it
        st.rerun()
cal = st.session_state.get(CALIBRATION)
if cal:
    spec = cal["spec"]
    st.success(f"Saved as device 'local' ({spec['name']}) in {cal['path']}: pick it in the sidebar's Device list.")
    k1, k2, k3 = st.columns(3)
    k1.metric("fp32 peak", f"{spec['peak_flops']['fp32'] / 1e9:,.2f} GFLOP/s")
    k2.metric("Memory bandwidth", f"{spec['memory_bandwidth'] / 1e9:,.2f} GB/s")
    k3.metric("Ridge point", f"{spec['peak_flops']['fp32'] / spec['memory_bandwidth']:,.2f} FLOP/byte")
    st.dataframe(bm.calibration_rows(spec), hide_index=True, key="bench_cal_table",
                 column_config={"value": st.column_config.NumberColumn(format="%.4g")})
    st.caption(spec["note"])

# == across networks ==============================================================================================
st.subheader("Across networks: latency vs FLOPs and parameters")
st.caption(f"Forward pass at batch 1, random weights; ImageNet networks at "
           f"{'×'.join(map(str, bm.SMALL_INPUT))} to stay fast. Networks over {bm.MAX_ACROSS_GFLOPS:g} GFLOPs "
           "are refused.")
chosen = st.multiselect("Networks", core.builtin_names(), default=list(bm.ACROSS_DEFAULT), key="bench_across")
a1, a2, _ = st.columns([2, 1, 5])
across_start = a1.button("Time these networks", key="bench_across_run", type="primary")
_stop_button("bench_across_stop", a2)
if across_start:
    def _across(progress, cancel):
        return bm.time_networks(chosen, progress=progress, cancel=cancel, **common)

    if not chosen:
        st.error("Choose at least one network.")
    else:
        _run("across-networks timing", _across, ACROSS)
rows = st.session_state.get(ACROSS)
if rows:
    for r in rows:
        if "refused" in r:
            st.error(f"{r['network']}: {r['refused']}")
    df = bm.across_frame(rows)
    if not df.empty:
        rho = bm.correlations(df)
        r1, r2, r3 = st.columns(3)
        r1.metric("Spearman ρ (latency, FLOPs)", f"{rho['flops']:.3f}" if rho["flops"] is not None else "—")
        r2.metric("Spearman ρ (latency, params)", f"{rho['params']:.3f}" if rho["params"] is not None else "—")
        r3.metric("Networks", rho["n"])
        if rho["n"] < 3:
            st.caption("With fewer than 3 networks a rank correlation says little.")
        g1, g2 = st.columns(2)
        with g1:
            show(bm.scatter(df, "GFLOPs", "forward GFLOPs"), "bench_vs_flops", "latency_vs_flops")
        with g2:
            show(bm.scatter(df, "M params", "parameters (millions)"), "bench_vs_params", "latency_vs_params")
        st.dataframe(df, hide_index=True, width="stretch", key="bench_across_table",
                     column_config={c: st.column_config.NumberColumn(format="%.3f")
                                    for c in ("latency ms", "IQR ms", "GFLOPs", "M params", "GFLOP/s")})

# == throughput vs batch ==========================================================================================
st.subheader(f"Throughput vs batch size: {report.name}")
batches = st.multiselect("Batch sizes", list(bm.THROUGHPUT_BATCHES), default=list(bm.THROUGHPUT_DEFAULT),
                         key="bench_tp_batches")
t1, t2, _ = st.columns([2, 1, 5])
tp_start = t1.button("Measure throughput", key="bench_tp_run", type="primary")
_stop_button("bench_tp_stop", t2)
if tp_start:
    def _throughput(progress, cancel):
        from core.bridge.timing import throughput_vs_batch
        from core.bridge.to_torch import to_module

        bm.check_live(report.with_batch(max(batches)), bm.MAX_STEP_GFLOPS, training=False)
        module = to_module(report.compiled.network, device="cpu")
        return {"network": report.name, "rows": throughput_vs_batch(
            module, report.input_shape, sorted(batches), passes=("forward",), report=report, progress=progress,
            cancel=cancel, measure_memory=False, **common)}

    if not batches:
        st.error("Choose at least one batch size.")
    else:
        _run("throughput", _throughput, THROUGHPUT)
tp = st.session_state.get(THROUGHPUT)
if tp:
    frame, refused = bm.throughput_frame(tp["rows"])
    if refused:
        st.error(f"Stopped at a batch the memory model refuses: {refused}")
    if not frame.empty:
        st.caption(f"{tp['network']}, forward pass, {dtype} on this CPU.")
        show(lines_chart(frame, "batch", ["samples/s"], "samples/s"), "bench_tp_chart", f"throughput_{tp['network']}")
        st.dataframe(frame, hide_index=True, width="stretch", key="bench_tp_table",
                     column_config={"forward ms": st.column_config.NumberColumn(format="%.4f"),
                                    "samples/s": st.column_config.NumberColumn(format="%.1f"),
                                    "GFLOP/s": st.column_config.NumberColumn(format="%.2f")})
