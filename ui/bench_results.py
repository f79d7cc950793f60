"""How the Benchmark page (views/benchmark.py) shows the result each of its sections keeps: one function per section,
given the kept result. The tables and charts come from ``ui.benchmark``; nothing here runs or imports torch."""

from __future__ import annotations

import streamlit as st

from core.bridge.timing import implied_ppp, thread_mismatch
from core.cli_text import calibration_line
from core.cpu_threads import SELF_CHECK_SAVE, threads_hint
from ui import benchmark as bm
from ui.charts import lines_chart, scatter_chart, show
from ui.explain import how
from ui.tables import dataframe


def _numbers(fmt: str, *columns: str) -> dict:
    return {c: st.column_config.NumberColumn(format=fmt) for c in columns}


def timing(saved: dict, estimate_error: str | None) -> None:
    """A timing run: medians, the backward : forward ratios, implied PPP, per-pass and per-layer tables (measured vs
    PALEO on the device it was run for), and peak memory measured vs modelled."""
    res, rep, est = saved["result"], saved["report"], saved["estimate"]
    quality = calibration_line(est.device) if est is not None else None
    st.caption(bm.summary(res, rep) + (f" · PALEO predictions for {saved['device']} at PPP {est.ppp:g}"
                                       if est is not None else ""), help=quality)
    if est is not None and (clash := thread_mismatch(res.threads, est.device)):
        st.warning(f"Not comparable: {clash}.")
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
    dataframe(bm.pass_table(res), width="stretch", key="bench_pass_table",
              column_config=_numbers("%.4f", "median ms", "IQR ms", "min ms", "max ms"))
    if res.layers:
        st.markdown("**Measured vs PALEO-predicted forward time per layer**")
        if est is not None and saved["device_id"] != "local":
            st.caption(f"The predictions are for {saved['device']} (the sidebar's device), not this CPU: calibrate "
                       "below and choose 'This machine' in the sidebar for a like-for-like ratio.")
        if est is None:
            st.warning(estimate_error or "No PALEO estimate for this device and precision.")
        dataframe(bm.layer_table(res, est), width="stretch", key="bench_layer_table",
                  column_config=_numbers("%.4f", "measured ms", "PALEO ms")
                  | _numbers("%.2f", "measured ÷ PALEO"))
        if res.layer_coverage is not None:
            st.caption(f"The layers sum to {res.layer_sum_s * 1e3:,.3f} ms, {res.layer_coverage:.0%} of the whole "
                       "forward.", help="The rest is work no module owns (functional adds, flattens), Python overhead "
                       "between layers and the hooks themselves. Layers without a module have no measured time.")
    st.markdown("**Peak memory: measured vs the memory model**")
    dataframe(bm.memory_table(res), width="stretch", key="bench_memory_table",
              column_config=_numbers("%.2f", "measured MiB", "model MiB", "measured ÷ model"))
    st.caption(f"Measured with {res.memory_method}." if res.memory_method else "Memory not measured.")
    for note in res.notes:
        st.caption(note)


def calibration(cal: dict) -> None:
    """A calibration: where it was saved, the peak, bandwidth and ridge it measured, and every figure it fitted."""
    spec = cal["spec"]
    st.success(f"Saved as device 'local' ({spec['name']}) in {cal['path']}: pick it in the sidebar's Device list.")
    q = spec.get("calibration") or {}
    k1, k2, k3 = st.columns(3)
    k1.metric("fp32 peak", f"{spec['peak_flops']['fp32'] / 1e9:,.2f} GFLOP/s")
    k2.metric("Memory bandwidth", f"{spec['memory_bandwidth'] / 1e9:,.2f} GB/s")
    k3.metric("Ridge point", f"{spec['peak_flops']['fp32'] / spec['memory_bandwidth']:,.2f} FLOP/byte")
    k4, k5, _ = st.columns(3)           # its quality, on a row of its own: five figures on one row are cut
    k4.metric("torch threads", q.get("threads", "—"), help="The count it was measured at: its predictions hold there.")
    k5.metric("Calibration self-check", f"±{q['held_out_error'] * 100:.0f} %" if "held_out_error" in q else "—",
              help="Median |predicted ÷ measured − 1| on networks the calibration did not fit: "
                   + ", ".join(f"{k} {v * 100:+.0f} %" for k, v in (q.get("held_out") or {}).items()))
    if q.get("held_out_error", 0) > SELF_CHECK_SAVE:
        st.warning(f"Calibration self-check ±{q['held_out_error'] * 100:.0f} %, above {SELF_CHECK_SAVE:.0%}: its "
                   "estimates carry this warning; treat their times as rough, or calibrate again on a quiet machine.")
    hint = threads_hint(q, spec.get("parallel_grain"))
    if hint:
        st.info(hint[0].upper() + hint[1:] + ".")
    dataframe(bm.calibration_rows(spec), key="bench_cal_table",
              column_config=_numbers("%.4g", "value"))
    how(spec["note"])


def timed_networks(rows: list[dict], refused) -> tuple | None:
    """Networks timed across (``ui.benchmark.time_networks`` rows): each refusal said by ``refused(network, why)``,
    then the frame of those timed and Spearman's ρ; None when none was timed."""
    for r in rows:
        if "refused" in r:
            refused(r["network"], r["refused"])
    df = bm.across_frame(rows)
    return None if df.empty else (df, bm.correlations(df))


def across(rows: list[dict]) -> None:
    """Networks timed across: refusals, Spearman's ρ of latency with FLOPs and with parameters, both scatters."""
    timed = timed_networks(rows, lambda network, why: st.error(f"{network}: {why}"))
    if timed is None:
        return
    df, rho = timed
    r1, r2, r3 = st.columns(3)
    r1.metric("Spearman ρ (latency, FLOPs)", f"{rho['flops']:.3f}" if rho["flops"] is not None else "—")
    r2.metric("Spearman ρ (latency, params)", f"{rho['params']:.3f}" if rho["params"] is not None else "—")
    r3.metric("Networks", rho["n"])
    if rho["n"] < 3:
        st.caption("With fewer than 3 networks a rank correlation says little.")
    g1, g2 = st.columns(2)
    with g1:
        show(scatter_chart(df, "GFLOPs", "forward FLOPs", unit="FLOPs", scale=1e9), "bench_vs_flops",
             "latency_vs_flops")
    with g2:
        show(scatter_chart(df, "M params", "parameters", unit="count", scale=1e6), "bench_vs_params",
             "latency_vs_params")
    dataframe(df, width="stretch", key="bench_across_table",
              column_config=_numbers("%.3f", "latency ms", "IQR ms", "GFLOPs", "M params", "GFLOP/s"))


def throughput(tp: dict, dtype: str) -> None:
    """Samples/s against batch size, and where the memory model stopped the sweep."""
    frame, refused = bm.throughput_frame(tp["rows"])
    if refused:
        st.error(f"Stopped at a batch the memory model refuses: {refused}")
    if not frame.empty:
        st.caption(f"{tp['network']}, forward pass, {dtype} on this CPU.")
        show(lines_chart(frame, "batch", ["samples/s"], "samples/s", unit="count"), "bench_tp_chart",
             f"throughput_{tp['network']}")
        dataframe(frame, width="stretch", key="bench_tp_table",
                  column_config=_numbers("%.4f", "forward ms") | _numbers("%.1f", "samples/s")
                  | _numbers("%.2f", "GFLOP/s"))
