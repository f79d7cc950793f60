"""``python -m core analyze NAME_OR_FILE [--input 3x224x224] [--batch N] [--dtype fp32] [--json]``.

Bad input (a value, a file, an argparse error) prints one line naming what is wrong and exits 2; never a traceback.
An internal error is one line too (exit 1; ``CNN_CALC_DEBUG=1`` shows the traceback). Files named on the command
line are read only if they are regular files under a size cap (``core.files``). A network that does no work (a
single flatten) has no throughput: ``estimate`` prints "— samples/s" and ``--json`` gives ``null``.
"""

from __future__ import annotations

import argparse
import json
import os
import sys

from .choices import ALLREDUCE, CONV_ALGORITHMS, DEFAULT_DTYPE, DEFAULT_OPTIMIZER, LAUNCHES, VARIANTS
from .errors import CalcError, one_line
from .precision import OPTIMIZERS, PRECISIONS
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
        f"Training memory:   {_fmt_bytes(t['training_bytes'])} (weights, gradients, {report.optimizer} state "
        f"{_fmt_bytes(t['optimizer_bytes'])}, saved activations {_fmt_bytes(t['saved_activation_bytes'])})",
        f"Convention:        {CONVENTION}",
    ]
    return "\n".join(out)


class UsageError(Exception):
    """A command line argparse refuses: printed as one line (``error: <what is wrong>``), exit status 2."""


class _Parser(argparse.ArgumentParser):
    """argparse, but a bad command line is one line naming what is wrong instead of usage + error (``--help``
    still prints the usage)."""

    def error(self, message: str):
        raise UsageError(f"{self.prog}: {message} (see {self.prog} --help)")


def _parser() -> argparse.ArgumentParser:
    p = _Parser(prog="python -m core", description="CNN performance calculator")
    sub = p.add_subparsers(dest="cmd", required=True)
    a = sub.add_parser("analyze", help="per-layer parameters, MACs, FLOPs and memory")
    a.add_argument("model", help="a built-in network (see 'list'), a path to an IR JSON file or an .onnx model, "
                                 "or timm:NAME (a timm model, built without weights)")
    a.add_argument("--input", help="per-sample input shape, e.g. 3x224x224 (default: the network's)")
    a.add_argument("--batch", type=int, default=1, help="batch size (default 1)")
    a.add_argument("--dtype", default=DEFAULT_DTYPE, help=f"one of {', '.join(PRECISIONS)} (default {DEFAULT_DTYPE})")
    a.add_argument("--optimizer", default=DEFAULT_OPTIMIZER, help=f"one of {', '.join(OPTIMIZERS)}")
    a.add_argument("--json", action="store_true", help="print JSON instead of a table")
    a.add_argument("--explain", metavar="LAYER", help="print one layer's pen-and-paper arithmetic")
    sub.add_parser("list", help="list the built-in networks")

    d = sub.add_parser("devices", help="the hardware database with figures and sources")
    d.add_argument("--json", action="store_true")
    d.add_argument("--file", help="a device JSON file instead of device_specs.json")

    e = sub.add_parser("estimate", help="PALEO time estimate and roofline on a device")
    e.add_argument("model", help="a built-in network, an IR JSON file, an .onnx model or timm:NAME")
    e.add_argument("--device", required=True, help="device id or name (case-insensitive)")
    e.add_argument("--input", help="per-sample input shape, e.g. 3x224x224")
    e.add_argument("--batch", type=int, default=1)
    e.add_argument("--dtype", default=DEFAULT_DTYPE, help=f"one of {', '.join(PRECISIONS)}")
    e.add_argument("--optimizer", default=DEFAULT_OPTIMIZER, help=f"one of {', '.join(OPTIMIZERS)}")
    e.add_argument("--ppp", type=float, default=1.0,
                   help="platform percent of peak for compute, from 0.001 to 1; 1.0 = datasheet peak (default); "
                        "a PPP other than 1 gives classic PALEO")
    e.add_argument("--ppp-memory", type=float, default=None, help="PPP for memory bandwidth (default: --ppp)")
    e.add_argument("--variant", default=VARIANTS[0], choices=VARIANTS,
                   help="auto (default): predicted on a GPU the time model was fitted for, else paleo; predicted: "
                        "the fitted GPU model; paleo: read + compute + write per layer at a PPP; roofline: "
                        "max(compute, memory)")
    e.add_argument("--conv-algo", default=CONV_ALGORITHMS[0], choices=CONV_ALGORITHMS)
    e.add_argument("--launch", default=LAUNCHES[0], choices=LAUNCHES,
                   help="predicted model: eager PyTorch (a fitted host cost per kernel, the default) or cuda_graphs "
                        "(a captured pass replayed: no per-kernel host cost)")
    e.add_argument("--fused", action="store_true", help="elementwise and norm layers do not round-trip memory")
    e.add_argument("--workers", type=int, default=1, help="data-parallel workers")
    e.add_argument("--link", help="interconnect id or name for --workers > 1")
    e.add_argument("--ppp-comm", type=float, default=1.0, help="PPP of the interconnect")
    e.add_argument("--allreduce", default=ALLREDUCE[0], choices=ALLREDUCE)
    e.add_argument("--threads", type=int, default=None,
                   help="torch CPU threads the estimate is for: a calibrated CPU predicts only the count it was "
                        "calibrated at (the default); another count is refused")
    e.add_argument("--file", help="a device JSON file instead of device_specs.json")
    e.add_argument("--json", action="store_true")

    from .bridge import cli_ext  # time and calibrate: torch is imported only when they run
    cli_ext.add_subcommands(sub)
    return p


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
    if "held_out_error" in cal:
        n = len(cal.get("held_out") or {})
        parts.append(f"predicts held-out networks within {cal['held_out_error'] * 100:.0f} %"
                     + (f" (median of {n})" if n else ""))
    from .paleo import threads_hint

    hint = threads_hint(cal, device.parallel_grain) if device.kind == "CPU" else None
    if hint:
        parts.append(hint)
    if cal.get("noisy"):
        parts.append(f"NOISY, kept with --force ({cal.get('unsteady') or 'the machine was busy'})")
    return "; ".join(parts)


def _beside_bound(est, key: str) -> str:
    b = est.bound
    return f"  [bound {_seconds(b.totals[key])}]" if b is not None else ""


def format_estimate(est) -> str:
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
            + (f", per-layer overhead {_seconds(t['forward_overhead_s'])}" if t["forward_overhead_s"] else "")
            + ")")
    cal = calibration_line(est.device)
    out = [f"{est.report.name} on {est.device.name}, batch {est.report.batch_size}, {est.report.dtype}",
           _model_line(est),
           *([f"Calibration:    {cal}"] if cal else []),
           f"Peak {_si(est.peak, 'FLOP/s')}, bandwidth {_si(est.bandwidth, 'B/s')}, "
           f"ridge {r['ridge_flop_per_byte']:,.2f} FLOP/byte"
           + ("; [bound] = PALEO at PPP 1 (datasheet peak and bandwidth; not a floor: Winograd and overlap can "
              "beat it)" if est.bound is not None else ""),
           f"Forward:        {_seconds(t['forward_s'])}{_beside_bound(est, 'forward_s')}  {forward_detail}"
           f"  → {_throughput(t['inference_samples_per_s'])}",
           *([f"Train forward:  {_seconds(t['training_forward_s'])} (the forward inside a training step: train "
                f"mode, autograd recording; {est.train_forward_basis})"]
             if t["training_forward_s"] != t["forward_s"] else []),
           f"Backward:       {_seconds(t['backward_s'])}{_beside_bound(est, 'backward_s')}",
           f"Weight update:  {_seconds(t['update_s'])}{_beside_bound(est, 'update_s')} ({est.report.optimizer})"]
    if est.workers > 1:
        out.append(f"All-reduce:     {_seconds(t['communication_s'])} ({est.allreduce}, {est.workers} workers over "
                   f"{est.link.name})")
    out += [f"Training step:  {_seconds(t['training_step_s'])}{_beside_bound(est, 'training_step_s')}  → "
            f"{_throughput(t['samples_per_s'])}",
            f"Roofline:       intensity {_intensity(r['arithmetic_intensity'])} FLOP/byte → {_bound(r['bound'])}, "
            f"attainable {_si(r['attainable_flop_per_s'], 'FLOP/s')}",
            "", "Slowest layers (forward):"]
    for row in rows:
        ai = row["arithmetic_intensity"]
        out.append(f"  {row['name']:<{width}}  {_seconds(row['forward_s']):>12}  {row['share'] * 100:5.1f}%  "
                   f"{_intensity(ai, 1):>9} FLOP/B  "
                   + (f"limited by {row['limited_by']}" if est.variant == "predicted" else row["bound"]))
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    """Run one command; returns the exit status: 0, 2 for bad input (one line on stderr, ``error: ...``), 1 for an
    internal error (one line too; ``CNN_CALC_DEBUG=1`` shows its traceback), 130 when interrupted."""
    try:
        try:
            args = _parser().parse_args(argv)
        except SystemExit as e:         # --help printed the usage
            return e.code if isinstance(e.code, int) else 0
        return _run(args)
    except (CalcError, UsageError) as e:
        _fail(f"error: {e}")
        return 2
    except KeyboardInterrupt:
        _fail("cancelled")
        return 130
    except BrokenPipeError:             # `python -m core analyze resnet152 | head`: the reader left
        _silence_stdout()
        return 0
    except ModuleNotFoundError as e:    # an install without a requirement (a bare CUDA image lacked jsonschema)
        if os.environ.get("CNN_CALC_DEBUG"):
            raise
        _fail(f"error: the Python package '{e.name}' is not installed; this command needs it: pip install -r "
              "requirements.txt (the README's set-up)")
        return 1
    except Exception as e:              # a bug, not bad input: still one line, no traceback
        if os.environ.get("CNN_CALC_DEBUG"):
            raise
        _fail(f"internal error: {type(e).__name__}: {one_line(str(e))[:500]} (set CNN_CALC_DEBUG=1 to see where)")
        return 1


def _fail(line: str) -> None:
    print(line, file=sys.stderr)


def _silence_stdout() -> None:
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError, AttributeError):
        pass


def _run(args) -> int:
    if args.cmd in ("time", "calibrate"):
        from .bridge import cli_ext
        return cli_ext.dispatch(args)
    if args.cmd == "list":
        from .zoo import names
        print("\n".join(names()))
        return 0
    if args.cmd in ("devices", "estimate"):
        from .devices import load_devices
        db = load_devices(args.file)
        if args.cmd == "devices":
            print(json.dumps({"devices": [d.to_dict() for d in db.devices.values()],
                              "interconnects": [i.to_dict() for i in db.interconnects.values()],
                              "problems": list(db.problems)}, indent=1) if args.json else format_devices(db))
            return 0
        from .api import estimate
        est = estimate(args.model, args.device, batch_size=args.batch, dtype=args.dtype, ppp=args.ppp,
                       ppp_memory=args.ppp_memory, optimizer=args.optimizer, variant=args.variant,
                       conv_algorithm=args.conv_algo, fused=args.fused, workers=args.workers, link=args.link,
                       ppp_comm=args.ppp_comm, allreduce=args.allreduce, launch=args.launch, input_shape=args.input,
                       threads=args.threads, db=db)
        text = json.dumps(est.to_dict(), indent=1, allow_nan=False) if args.json else format_estimate(est)
        print(text)
        return 0
    from .api import analyze
    report = analyze(args.model, input_shape=args.input, batch_size=args.batch, dtype=args.dtype,
                     optimizer=args.optimizer)
    if args.explain is not None:
        text = "\n".join(str(line) for line in report.explain(args.explain))
    elif args.json:
        text = json.dumps(report.to_dict(), indent=1)
    else:
        text = format_table(report)
    print(text)
    return 0
