"""The ``calibrate`` and ``time`` subcommands of ``python -m core``.

``add_subcommands(sub)`` adds their parsers to the main CLI's subparsers (``dest="cmd"``); ``dispatch(args)`` runs
one and returns the exit status, or None when ``args.cmd`` is not one of these. Bad input prints one line
(``error: ...``) and returns 2, like the rest of the CLI.

    python -m core calibrate [--seconds 30] [--dtypes fp32,fp64,bf16] [--threads N] [--force] [--no-save]
                             [--output FILE] [--json]
    python -m core time MODEL [--batch N] [--input 3x224x224] [--passes forward,backward,train_step]
                              [--repeats 5] [--warmup 2] [--per-layer] [--batches 1,2,4,8] [--threads N] [--json]

Threads: ``time`` runs at the count the device ``local`` was calibrated at (``calibration.threads``) unless
``--threads`` says otherwise, else at torch's default, which is also ``calibrate``'s default; the count and why are
printed and recorded (``threads``, ``threads_from``). A run at another count than 'local''s is compared with it
still, marked NOT COMPARABLE: its predictions hold at the calibrated count only.
"""

from __future__ import annotations

import json
import sys
from typing import Any

from ..cpu_threads import threads_hint
from ..errors import CalcError

COMMANDS = ("calibrate", "time")


def add_subcommands(sub) -> None:
    c = sub.add_parser("calibrate", help="measure this machine (GEMM peak, bandwidth, efficiencies) as device 'local'")
    c.add_argument("--seconds", type=float, default=30.0, help="time budget in seconds (default 30)")
    c.add_argument("--dtypes", default="fp32,fp64,bf16", help="GEMM precisions to measure (fp32 always)")
    c.add_argument("--device", default="cpu", help="cpu (default) or cuda")
    c.add_argument("--threads", type=int, default=None, help="torch CPU threads (default: torch's)")
    c.add_argument("--force", action="store_true",
                   help="keep the result although the machine was too noisy to measure (marked noisy)")
    c.add_argument("--no-save", action="store_true", help="print only; do not save the 'local' device")
    c.add_argument("--output", help="device file to save to (default ~/.cnn_calc/devices.json or $CNN_CALC_HOME)")
    c.add_argument("--json", action="store_true", help="print the device spec as JSON")

    t = sub.add_parser("time", help="live timing in PyTorch: forward, backward, training step, per layer, memory")
    t.add_argument("model", help="a built-in network or an IR JSON file")
    t.add_argument("--batch", type=int, default=1, help="batch size (default 1)")
    t.add_argument("--input", help="per-sample input shape, e.g. 3x224x224 (default: the network's)")
    t.add_argument("--dtype", default="fp32", help="fp32 (default), tf32 (CUDA), fp64, bf16 or fp16")
    t.add_argument("--device", default="cpu", help="cpu (default), cuda, cuda:N or mps")
    t.add_argument("--passes", default="forward,backward,train_step", help="comma-separated passes to time")
    t.add_argument("--repeats", type=int, default=5, help="timed runs per pass (default 5)")
    t.add_argument("--warmup", type=int, default=2, help="untimed runs first (default 2)")
    t.add_argument("--per-layer", action="store_true", help="also time each layer with hooks")
    t.add_argument("--batches", help="throughput vs batch size instead, e.g. 1,2,4,8")
    t.add_argument("--max-seconds", type=float, default=60.0, help="soft time limit (default 60)")
    t.add_argument("--threads", type=int, default=None,
                   help="torch CPU threads (default: the count the device 'local' was calibrated at, else torch's)")
    t.add_argument("--json", action="store_true", help="print JSON")


def dispatch(args) -> int | None:
    cmd = getattr(args, "cmd", None)
    if cmd not in COMMANDS:
        return None
    try:
        return _calibrate(args) if cmd == "calibrate" else _time(args)
    except CalcError as e:
        _clear_progress()
        print(f"error: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        _clear_progress()
        print("cancelled", file=sys.stderr)
        return 130


# == progress on a terminal =======================================================================================

def _progress(fraction: float, message: str) -> None:
    if sys.stderr.isatty():
        bar = "#" * int(fraction * 30)
        sys.stderr.write(f"\r[{bar:<30}] {fraction * 100:3.0f}% {message[:60]:<60}")
        sys.stderr.flush()


def _clear_progress() -> None:
    if sys.stderr.isatty():
        sys.stderr.write("\r" + " " * 100 + "\r")
        sys.stderr.flush()


# == formatting ===================================================================================================

def _si(v: float | None, unit: str) -> str:
    if v is None:
        return "—"
    for factor, prefix in ((1e15, "P"), (1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(v) >= factor:
            return f"{v / factor:,.2f} {prefix}{unit}"
    return f"{v:,.2f} {unit}"


def _ms(s: float | None) -> str:
    return "—" if s is None else f"{s * 1e3:,.3f} ms"


def format_device(spec: dict) -> str:
    peaks = ", ".join(f"{k} {_si(v, 'FLOP/s')}" for k, v in spec["peak_flops"].items())
    eff = ", ".join(f"{k} {v:.2f}" for k, v in spec.get("efficiency", {}).items())
    ovh = ", ".join(f"{k} {v * 1e6:.1f} µs" for k, v in spec.get("layer_overhead", {}).items())
    cap = f"; memory {spec['memory_capacity'] / 2 ** 30:,.1f} GiB" if spec.get("memory_capacity") else ""
    return "\n".join([f"{spec['id']}: {spec['name']} ({spec['kind']}, {spec['vendor']})",
                      f"  peak:        {peaks}",
                      f"  bandwidth:   {_si(spec['memory_bandwidth'], 'B/s')}{cap}",
                      f"  efficiency:  {eff}",
                      *([f"  per layer:   {ovh}"] if ovh else []),
                      f"  source:      {spec['source']}",
                      f"  note:        {spec['note']}"])


def format_calibration(cal: dict, default_threads: bool = False, grain: float | None = None) -> str:
    """The calibration's quality (a spec's ``calibration``), in lines: threads, spread, held-out error, noisy;
    ``grain``: the spec's ``parallel_grain``."""
    if not cal:
        return ""
    out = []
    if cal.get("threads"):
        spread = f"; largest spread kept {cal['spread']:.0%} ({cal['spread_of']})" if cal.get("spread_of") else ""
        out.append(f"calibrated at {cal['threads']} torch thread(s)" + (" (torch's default)" if default_threads else "")
                   + spread)
    if "held_out_error" in cal:
        each = ", ".join(f"{k} {v:+.0%}" for k, v in cal.get("held_out", {}).items())
        out.append(f"predicts held-out networks within {cal['held_out_error']:.0%} (median)"
                   + (f": {each}" if each else ""))
    hint = threads_hint(cal, grain)
    if hint:
        out.append(hint)
    if cal.get("noisy"):
        out.append(f"NOISY, kept with --force: {cal.get('unsteady', 'the machine was busy')}")
    return "\n".join(out)


def format_timing(result, name: str = "", local: dict | None = None, threads_from: str = "") -> str:
    """A readable summary of a ``TimingResult``; ``local``: {"name", "implied_ppp", "predicted_forward_s",
    "calibration" (a line, or None), "mismatch" (why the run and 'local' differ in threads, or None)};
    ``threads_from``: why the run used its thread count."""
    from .timing import fmt_bytes

    r = result
    shape = "×".join(map(str, r.input_shape))
    threads = f", {r.threads} thread(s)" + (f" ({threads_from})" if threads_from else "") if r.threads else ""
    out = [f"{name + '  ' if name else ''}input {r.batch_size}×{shape}  {r.dtype} on {r.device}{threads}",
           f"{'pass':<11} {'median':>12} {'± IQR':>11} {'min':>12} {'max':>12} {'runs':>5} {'achieved':>15}"]
    for p, t in r.passes.items():
        out.append(f"{p:<11} {_ms(t.median_s):>12} {_ms(t.iqr_s):>11} {_ms(t.min_s):>12} {_ms(t.max_s):>12} "
                   f"{len(t.samples):>5} {_si(r.achieved_flops_per_s.get(p), 'FLOP/s'):>15}")
    if r.layers is not None:
        whole = r.whole_forward_s
        out += ["", f"Per layer (forward, hooks on {len(r.layers)} leaf modules): sum of layers "
                    f"{_ms(r.layer_sum_s)} vs whole forward {_ms(whole)}"
                    + (f" (layers {r.layer_coverage * 100:.0f}% of the whole; hooked whole "
                       f"{_ms(r.hooked_forward_s)})" if r.layer_coverage is not None else "")]
        width = max(len(n) for n in r.layers) if r.layers else 0
        top = sorted(r.layers.items(), key=lambda kv: -kv[1])[:10]
        for n, s in top:
            share = s / r.layer_sum_s * 100 if r.layer_sum_s else 0
            out.append(f"  {n:<{width}}  {_ms(s):>12}  {share:5.1f}%")
        if len(r.layers) > len(top):
            out.append(f"  … {len(r.layers) - len(top)} more")
    if r.peak_memory_bytes or r.predicted_memory_bytes:
        out += ["", f"Peak memory ({r.memory_method}):"]
        for p in r.passes:
            meas, pred = r.peak_memory_bytes.get(p), r.predicted_memory_bytes.get(p)
            out.append(f"  {p:<11} measured {fmt_bytes(meas) if meas is not None else '—':>12}   "
                       f"memory model {fmt_bytes(pred) if pred is not None else '—':>12}")
    if r.memory_check and r.memory_check.get("available_bytes"):
        mc = r.memory_check
        out.append(f"Memory guard: needs {fmt_bytes(mc['needed_bytes'])} ({mc['what']}), "
                   f"{fmt_bytes(mc['available_bytes'])} available, margin {mc['margin']:.0%}")
    if local:
        out += ["", f"vs '{local['name']}': PALEO forward {_ms(local['predicted_forward_s'])}, "
                    f"implied PPP {local['implied_ppp']:.3f} (1.0 = as fast as the device's peak × efficiency)"]
        if local.get("calibration"):
            out.append(f"  {local['calibration']}")
        if local.get("mismatch"):
            out.append(f"  NOT COMPARABLE: {local['mismatch']}")
    elif "forward" in r.passes:
        out += ["", "Run 'python -m core calibrate' to compare with a calibrated 'local' device."]
    for note in r.notes:
        out.append(f"note: {note}")
    return "\n".join(out)


# == commands =====================================================================================================

MAX_THREADS = 4096


def _threads(value: int | None) -> int | None:
    """--threads: None (torch's default) or 1 to ``MAX_THREADS``; torch itself raises a RuntimeError for 0."""
    if value is not None and not 1 <= value <= MAX_THREADS:
        raise CalcError(f"must be an integer from 1 to {MAX_THREADS:,}", field="threads", value=value)
    return value


def _calibrate(args) -> int:
    from .calibrate import calibrate, save_local

    _threads(args.threads)

    spec = calibrate(args.seconds, progress=_progress, dtypes=args.dtypes, device=args.device, threads=args.threads,
                     force=args.force)
    _clear_progress()
    where = None if args.no_save else save_local(spec, args.output)
    if args.json:
        print(json.dumps(spec, indent=1))
    else:
        print(format_device(spec))
        print(format_calibration(spec.get("calibration") or {}, default_threads=args.threads is None,
                                 grain=spec.get("parallel_grain")))
        print(f"saved to {where}: use --device local" if where else "not saved (--no-save)")
    return 0


def _to_module(network, device: str):
    """The torch module for an IR network (core.bridge.to_torch)."""
    try:
        from .to_torch import to_module
    except ImportError as e:
        raise CalcError(f"live timing of IR networks needs core.bridge.to_torch ({e})", field="model") from None
    return to_module(network, device=device)


def _local_comparison(report, forward_s: float, threads: int | None = None) -> dict | None:
    from ..cli_text import calibration_line
    from ..devices import load_devices
    from ..paleo import Estimate
    from .timing import implied_ppp, thread_mismatch

    db = load_devices()
    dev = db.devices.get("local")
    if dev is None or report.precision.compute not in dev.peak_flops:
        return None
    est = Estimate(report, dev)
    return {"name": dev.name, "implied_ppp": implied_ppp(forward_s, est),
            "predicted_forward_s": est.totals["forward_s"], "threads": est.threads,
            "calibration": calibration_line(dev), "mismatch": thread_mismatch(threads, dev)}


def _int_list(text: str, field: str) -> list[int]:
    try:
        values = [int(v) for v in text.replace(" ", "").split(",") if v]
    except ValueError:
        raise CalcError("expected whole numbers separated by commas, like 1,2,4,8", field=field, value=text) from None
    if not values:
        raise CalcError("give at least one value", field=field, value=text)
    if len(values) > MAX_LIST:
        raise CalcError(f"at most {MAX_LIST} values (each is a timing run of its own)", field=field,
                        value=f"{len(values):,} values")
    return values


MAX_LIST = 64


def _time(args) -> int:
    from ..api import analyze, load_network
    from .timing import default_threads, throughput_vs_batch, time_module

    threads, threads_from = (args.threads, "as asked") if _threads(args.threads) else default_threads(
        device=args.device)

    network = load_network(args.model)
    if args.input:
        from ..shapes import parse_shape
        network = network.with_input_shape(parse_shape(args.input))
    if len(network.inputs) != 1:
        raise CalcError("live timing supports networks with one input", field="model", value=args.model)
    report = analyze(network, batch_size=args.batch, dtype=args.dtype)
    shape = network.inputs[0][1]
    module = _to_module(network, "cpu")
    kw: dict[str, Any] = dict(device=args.device, dtype=args.dtype, warmup=args.warmup, repeats=args.repeats,
                              max_seconds=args.max_seconds, progress=_progress, report=report, threads=threads)
    if args.batches:
        rows = throughput_vs_batch(module, shape, _int_list(args.batches, "batches"), passes=args.passes, **kw)
        _clear_progress()
        if args.json:
            print(json.dumps(rows, indent=1))
            return 0
        ran = next((row["threads"] for row in rows if row.get("threads")), None)
        print(f"{network.name}: throughput vs batch size ({args.dtype} on {args.device}"
              + (f", {ran} thread(s) ({threads_from})" if ran else "") + ")")
        for row in rows:
            if "refused" in row:
                print(f"  batch {row['batch_size']:>6}: refused: {row['refused']}")
                continue
            cells = [f"{p} {_ms(row[p + '_s'])} = {row[p + '_samples_per_s']:,.1f}/s"
                     for p in ("forward", "backward", "train_step") if p + "_s" in row]
            print(f"  batch {row['batch_size']:>6}: " + ";  ".join(cells))
        return 0
    result = time_module(module, shape, args.batch, passes=args.passes, per_layer=args.per_layer, **kw)
    _clear_progress()
    local = _local_comparison(report, result.passes["forward"].median_s, result.threads) \
        if "forward" in result.passes else None
    if args.json:
        print(json.dumps({"model": network.name, **result.to_dict(), "threads_from": threads_from, "local": local},
                         indent=1))
    else:
        print(format_timing(result, network.name, local, threads_from))
    return 0
