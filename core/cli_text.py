"""The text the CLI prints: the layer table, the device list, an estimate (with a line on its time model) and a
calibrated device's quality line."""

from __future__ import annotations

from .cpu_threads import SELF_CHECK_SAVE, threads_hint
from .data_parallel import achieved, typical_error
from .report import CONVENTION, Report
from .units import format_bytes


def _fmt_int(v: int) -> str:
    return f"{v:,}"


_fmt_bytes = format_bytes


def format_table(report: Report) -> str:
    """A torchinfo-like per-layer table with totals."""
    head = ("Layer", "Op", "Output shape", "Params", "MACs", "FLOPs fwd", "FLOPs bwd")
    rows = [(l.name, l.op, "×".join(map(str, l.output_shape)), _fmt_int(l.params), _fmt_int(l.macs),
             _fmt_int(l.flops), _fmt_int(l.backward_flops)) for l in report.layers]
    t = report.totals
    foot = ("Total", "", "", _fmt_int(t["params"]), _fmt_int(t["macs"]), _fmt_int(t["flops"]),
            _fmt_int(t["backward_flops"]))
    widths = [max(len(r[i]) for r in [head, foot, *rows]) for i in range(len(head))]

    def line(r):
        return "  ".join(c.ljust(w) if i < 3 else c.rjust(w) for i, (c, w) in enumerate(zip(r, widths)))

    rule = "─" * len(line(head))
    shape = "×".join(map(str, report.input_shape))
    out = [f"{report.name}  input {report.batch_size}×{shape}  {report.dtype}", rule, line(head), rule,
           *map(line, rows), rule, line(foot), rule]
    gm = t["macs"] / 1e9
    out += [
        f"Parameters:        {t['params']:,} ({t['trainable_params']:,} trainable) = {_fmt_bytes(t['param_bytes'])}"
        + (f"  + {t['buffers']:,} buffer elements" if t["buffers"] else ""),
        f"Forward:           {gm:,.3f} GMACs = {t['flops'] / 1e9:,.3f} GFLOPs",
        f"Backward:          {t['backward_flops'] / 1e9:,.3f} GFLOPs   "
        f"training step {t['training_flops'] / 1e9:,.3f} GFLOPs",
        f"Inference memory:  {_fmt_bytes(t['inference_bytes'])} (weights + peak live activations "
        f"{_fmt_bytes(t['activation_bytes'])} at {t['activation_peak_at']})",
        f"Training memory:   {_fmt_bytes(t['training_bytes'])}, the peak of a step, in {t['training_peak_at']} "
        f"(its parts: python -m core memory)",
        f"Convention:        {CONVENTION}",
    ]
    return "\n".join(out)


def _si(v: float, unit: str) -> str:
    for factor, prefix in ((1e15, "P"), (1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(v) >= factor:
            return f"{v / factor:,.2f} {prefix}{unit}"
    return f"{v:,.2f} {unit}"


def _seconds(s: float) -> str:
    return f"{s * 1e3:,.3f} ms" if s < 1 else f"{s:,.3f} s"


def _bound(bound: str) -> str:
    return "no work to bound" if bound == "none" else f"{bound}-bound"


def _intensity(ai: float | None, digits: int = 2) -> str:
    """None: the work moves no bytes, so it has no arithmetic intensity."""
    return "—" if ai is None else f"{ai:,.{digits}f}"


def _throughput(samples_per_s: float | None) -> str:
    """None: the network does no work in that pass (0 s), so it has no throughput to state."""
    return "— samples/s (no work to time)" if samples_per_s is None else f"{samples_per_s:,.1f} samples/s"


def format_devices(db) -> str:
    lines = []
    for dv in db.devices.values():
        peaks = ", ".join(f"{k} {_si(v, 'FLOP/s')}" for k, v in dv.peak_flops.items())
        cap = f", {dv.memory_capacity / 2**30:,.0f} GiB" if dv.memory_capacity else ""
        lines.append(f"{dv.id:<22} {dv.name} ({dv.kind}, {dv.year}): {peaks}; {_si(dv.memory_bandwidth, 'B/s')}{cap}")
        lines.append(f"{'':<22} source: {dv.source}" + (f" — {dv.note}" if dv.note else ""))
    lines.append("")
    for lk in db.interconnects.values():
        lines.append(f"{lk.id:<22} {lk.name}: {_si(lk.bandwidth, 'B/s')}; source: {lk.source}")
    for prob in db.problems:
        lines.append(f"left out: {prob}")
    return "\n".join(lines)


def _model_line(est) -> str:
    """What the times are: the fitted prediction with its typical error, or PALEO at its PPP (and why)."""
    if est.variant == "predicted":
        e = est.typical_error
        terms = ("its compute plus its memory time, or its launch overhead where longer (the host's cost per "
                 "kernel call, as fitted; a cuDNN or cuBLAS call's a fitted multiple of it, a call under autograd "
                 "another)"
                 if est.launch == "eager" else
                 "its compute plus its memory time (CUDA Graphs: no per-kernel host cost; untested: the fit saw "
                 "eager runs only)")
        return (f"Time model:     predicted, typically ±{e['median'] * 100:.0f} % (1 in 10 off by more than "
                f"{e['p90'] * 100:.0f} %; {e['basis']}). Each kernel takes {terms}; "
                "--ppp or --variant paleo gives classic PALEO\n"
                f"Fitted on:      {est.variant_reason.split(': ', 1)[-1]}")
    calibrated = " × the calibrated efficiency of each class of work" if est.device.efficiency else ""
    if est.ppp == 1 and est.ppp_memory == 1:
        ppp = f"1.0{calibrated}" if calibrated else "1.0 = datasheet peak, an optimistic bound"
    else:
        ppp = f"compute {est.ppp:g}, memory {est.ppp_memory:g}{calibrated}"
    shown = est.variant_reason.replace("PALEO, as asked; ", "").replace("roofline: max(compute, memory), as asked; ",
                                                                        "")
    why = f" ({shown})" if shown and "as asked" not in shown else ""
    return f"Time model:     {est.variant}, PPP {ppp}{why}"


def emulated_note(est) -> str | None:
    """A calibrated CPU's note that the estimate's precision is emulated (no instructions for it), else None."""
    note = (est.device.compute_notes or {}).get(est.precision.compute, "")
    return note.split(";")[0] if note.startswith("emulated") else None


def calibration_line(device) -> str | None:
    """A calibrated device's quality, one line: the thread count its times are for and how well it predicted the
    held-out networks of its self-check (``calibration``, core.bridge.calibrate); None for datasheet figures."""
    cal = device.calibration or {}
    if not cal:
        return None
    threads = cal.get("threads") if device.kind == "CPU" else None
    parts = [f"calibrated at {threads} torch thread(s)" if threads else "calibrated"]
    if cal.get("date"):
        parts[0] += f" on {cal['date'][:10]}"
    host = cal.get("host") or {}
    if host.get("cpu"):
        parts[0] += f" on {host['cpu']}" + (f" ({host['cpu_capability']})" if host.get("cpu_capability") else "")
    if "held_out_error" in cal:
        n = len(cal.get("held_out") or {})
        parts.append(f"calibration self-check: ±{cal['held_out_error'] * 100:.0f} %"
                     + (f" (median of {n} held-out network{'s' * (n != 1)})" if n else "")
                     + (f", above {SELF_CHECK_SAVE * 100:.0f} %: treat its times as rough"
                        if cal["held_out_error"] > SELF_CHECK_SAVE else ""))
    hint = threads_hint(cal, device.parallel_grain) if device.kind == "CPU" else None
    if hint:
        parts.append(hint)
    if cal.get("noisy"):
        parts.append(f"NOISY, kept with --force ({cal.get('unsteady') or 'the machine was busy'})")
    return "; ".join(parts)


def _beside_bound(est, key: str) -> str:
    b = est.bound
    return f"  [bound {_seconds(b.totals[key])}]" if b is not None else ""


def model_summary(est) -> str:
    """What the times are, in at most 84 characters: the fitted model with its typical error, or PALEO and how."""
    if est.variant == "predicted":
        e = est.typical_error
        return (f"predicted (fitted GPU model), typically ±{e['median'] * 100:.0f} %, 1 in 10 off by > "
                f"{e['p90'] * 100:.0f} %")
    name = "PALEO" if est.variant == "paleo" else "roofline, max(compute, memory)"
    if est.device.efficiency:
        return f"{name} with this machine's calibrated efficiencies"
    if est.ppp == 1 and est.ppp_memory == 1:
        return f"{name} at the datasheet peak (PPP 1): an optimistic bound"
    return f"{name} at PPP compute {est.ppp:g}, memory {est.ppp_memory:g}"


def _brief(s: float) -> str:
    return "0 s" if not s else _seconds(s)


def scaling_error_line(explain: bool = False) -> str:
    """The DDP model's held-out error of scaling efficiency, in points (``core.data_parallel.typical_error``)."""
    e = typical_error()
    if e.get("median_points") is None:
        return "Scaling error:  efficiency's typical error not yet measured" + (f" ({e['basis']})" if explain else "")
    line = (f"Scaling error:  efficiency typically ±{e['median_points']:.1f} points, 1 in 10 off by more than "
            f"{e['p90_points']:.1f} (held out by source, {e['rows']} rows")
    if explain and e.get("signed_median_points") is not None:
        line += f"; signed median {e['signed_median_points']:+.1f} points; {e['basis']}"
    return line + ")"


def data_parallel_lines(est, explain: bool = False) -> list[str]:
    """What ``--workers`` (and a real-data input pipeline) add to the step, term by term (``est.data_parallel``):
    the answer on one line, the typical error on the next; ``explain`` adds the bandwidth, its source and the
    terms."""
    dp, par = est.data_parallel, est.parallel
    if dp is None:
        return []
    cores = f"{par.cpu_cores} core{'s' if par.cpu_cores != 1 else ''}"
    reads = (f"input wait {_brief(dp.input_wait_s)} ({par.input_pipeline} decoding on {cores} per node)"
             if dp.reads_data else "no input wait (synthetic data)")
    if dp.workers == 1:
        return [f"Input:          {_brief(dp.input_wait_s)} waiting for the host in the training step "
                f"({par.input_pipeline} decoding on {cores})"]
    where = f"{dp.workers} workers over {par.link.name}"
    if dp.nodes > 1:
        where = (f"{dp.workers} workers on {dp.nodes} nodes of {dp.workers // dp.nodes} over {par.link.name}, "
                 f"{par.nics} × {par.node_link.name} between nodes")
    if dp.comm_model == "paleo":
        out = [f"Data parallel:  {where}, PALEO: all-reduce {_brief(dp.allreduce_s)} after the backward "
               f"({par.allreduce}, {dp.bandwidth_from}), {reads}",
               "Scaling error:  none measured for PALEO's term (--comm-model ddp has the fitted model)"]
    else:
        out = [f"Data parallel:  {where}, DDP: all-reduce {_brief(dp.allreduce_s)} in {len(dp.buckets)} buckets "
               f"({_brief(dp.overlapped_s)} overlapped with the backward, {_brief(dp.exposed_s)} exposed), "
               f"synchronisation {_brief(dp.sync_s)}, {reads}",
               scaling_error_line(explain)]
    if explain:
        between = ""
        if dp.nodes > 1:
            net, why = achieved(par.node_link, 1.0)
            between = f"; between nodes {_si(net.bandwidth * par.nics, 'B/s')} ({par.nics} × {why})"
        out += [f"Bandwidth:      {_si(dp.bus_bandwidth, 'B/s')} bus bandwidth ({dp.bandwidth_from}){between}",
                f"Gradients:      {_fmt_bytes(dp.gradient_bytes)} per worker, {dp.reduce_bytes} B each "
                f"({par.allreduce} all-reduce" + (f", buckets of {par.bucket_mb:g} MiB after the first 1 MiB)"
                                                  if dp.comm_model == "ddp" else ")"),
                f"Terms:          {'; '.join(dp.terms)}"]
    return out


def format_estimate(est, explain: bool = False) -> str:
    """The times first, then one line on the model; ``explain``: the long form (the terms, the basis of the typical
    error, what was fitted on what)."""
    t, r = est.totals, est.roofline
    rows = sorted(est.layers, key=lambda row: -row["forward_s"])[:10]
    width = max(len(row["name"]) for row in rows)
    if est.variant == "predicted":       # terms overlap: say which term limits how much of the time
        lim = est.limited_by["forward"]
        parts = ", ".join(f"{k} {_seconds(lim[k])}" for k in ("compute", "memory", "overhead") if lim[k])
        forward_detail = f"(limited by {parts})" if parts else "(no work)"
    else:
        forward_detail = (
            f"(compute {_seconds(t['forward_compute_s'])}, memory {_seconds(t['forward_memory_s'])}"
            + (f" of which {_seconds(t['forward_fresh_s'])} writing {_si(t['forward_fresh_bytes'], 'B')} to fresh "
               "pages" if t["forward_fresh_s"] else "")
            + ((" in a warm process" if t["forward_fresh_s"] else ", no fresh pages in a warm process")
               if est.process == "warm" and est.device.alloc_bandwidth else "")
            + (f", per-layer overhead {_seconds(t['forward_overhead_s'])}" if t["forward_overhead_s"] else "")
            + ")")
    cal = calibration_line(est.device)
    bound_note = ("; [bound] = PALEO at PPP 1 (datasheet peak and bandwidth; not a floor: Winograd and overlap can "
                  "beat it)" if explain else "; [bound] = PALEO at PPP 1") if est.bound is not None else ""
    train_forward = ([f"Train forward:  {_seconds(t['training_forward_s'])} (the forward inside a training step: "
                      f"train mode, autograd recording; {est.train_forward_basis})"]
                     if t["training_forward_s"] != t["forward_s"] else [])
    model = ([_model_line(est)] if explain else
             [f"Time model:     {model_summary(est)}"
              + ("; --explain says more" if len(model_summary(est)) <= 62 else "")])
    out = [f"{est.report.name} on {est.device.name}, batch {est.report.batch_size}, {est.report.dtype}",
           f"Forward:        {_seconds(t['forward_s'])}{_beside_bound(est, 'forward_s')}  {forward_detail}"
           f"  → {_throughput(t['inference_samples_per_s'])}",
           f"Backward:       {_seconds(t['backward_s'])}{_beside_bound(est, 'backward_s')}",
           f"Weight update:  {_seconds(t['update_s'])}{_beside_bound(est, 'update_s')} ({est.report.optimizer})",
           f"Training step:  {_seconds(t['training_step_s'])}{_beside_bound(est, 'training_step_s')}  → "
           f"{_throughput(t['samples_per_s'])}",
           *train_forward,
           *data_parallel_lines(est, explain),
           *model,
           *([f"Calibration:    {cal}"] if cal else []),
           *([f"Precision:      {est.report.dtype} is {note}"] if (note := emulated_note(est)) else []),
           f"Peak {_si(est.peak, 'FLOP/s')}, bandwidth {_si(est.bandwidth, 'B/s')}, "
           f"ridge {r['ridge_flop_per_byte']:,.2f} FLOP/byte" + bound_note,
           f"Roofline:       intensity {_intensity(r['arithmetic_intensity'])} FLOP/byte → {_bound(r['bound'])}, "
           f"attainable {_si(r['attainable_flop_per_s'], 'FLOP/s')}",
           "", "Slowest layers (forward):"]
    for row in rows:
        ai = row["arithmetic_intensity"]
        out.append(f"  {row['name']:<{width}}  {_seconds(row['forward_s']):>12}  {row['share'] * 100:5.1f}%  "
                   f"{_intensity(ai, 1):>9} FLOP/B  "
                   + (f"limited by {row['limited_by']}" if est.variant == "predicted" else row["bound"]))
    return "\n".join(out)
