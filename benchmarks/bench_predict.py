"""Prediction accuracy on this machine: PALEO forward latency after ``calibrate`` vs measured, for 24 torchvision
CNNs at batch 1 and 16, beside the baseline users reach for (FLOPs ÷ peak with one PPP fitted on ResNet50).

Method
  * ``calibrate`` runs in a fresh process (its microbenchmarks only: no network below is used to fit it);
  * each network is measured in ``processes`` fresh processes (3), in rounds over all networks: torchvision's model
    (random weights) in eval mode under ``torch.no_grad``, ``warmup`` untimed runs, then the median of ``repeats``
    timed runs (``core.bridge.timing``); the latency is the median of the processes' medians;
  * predicted: ``core.estimate`` of the same network on the calibrated device;
  * baseline: forward FLOPs ÷ (calibrated fp32 peak × PPP), PPP fitted on ResNet50 (geometric mean of its batches);
  * error: |predicted − measured| ÷ measured; median and 90th percentile per model.
Both use the same threads (1 by default: the machine is shared, and one thread is the least disturbed setting).

Measurements are cached in ``benchmarks/results/predict_measured.json`` (machine, date, calibration, latencies), so
the model can be re-evaluated without re-measuring: ``--reuse``. Run: ``python benchmarks/bench_predict.py
[--quick] [--reuse] [--threads 1]``.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import math
import platform
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import core  # noqa: E402
from core.api import estimate  # noqa: E402
from core.devices import Device  # noqa: E402

NETWORKS = ("alexnet", "vgg11", "vgg16", "resnet18", "resnet34", "resnet50", "resnet101", "wide_resnet50_2",
            "resnext50_32x4d", "densenet121", "googlenet", "inception_v3", "mobilenet_v2", "mobilenet_v3_large",
            "mobilenet_v3_small", "shufflenet_v2_x1_0", "squeezenet1_0", "squeezenet1_1", "efficientnet_b0",
            "efficientnet_b1", "regnet_x_400mf", "regnet_y_400mf", "convnext_tiny", "mnasnet1_0")
BATCHES = (1, 16)
QUICK = (("resnet18", "mobilenet_v3_small"), (1,))
CACHE = ROOT / "benchmarks" / "results" / "predict_measured.json"
FIT_ON = "resnet50"
PROCESSES = 3


def _worker(name: str, batches, threads: int, warmup: int, repeats: int) -> None:
    """In a fresh process: time one network's forward pass at each batch size; print one JSON line."""
    import torch

    from core.bridge.timing import time_module
    from core.bridge.torchvision_zoo import build

    torch.manual_seed(0)
    model = build(name, device="cpu")
    shape = core.analyze(name).input_shape
    out = {}
    for b in batches:
        r = time_module(model, shape, b, passes=("forward",), warmup=warmup, repeats=repeats if b == 1 else
                        max(3, repeats // 2), measure_memory=False, threads=threads, max_seconds=120)
        t = r.passes["forward"]
        out[str(b)] = {"median_s": t.median_s, "iqr_s": t.iqr_s, "samples": len(t.samples)}
    print(json.dumps({"network": name, "input": list(shape), "latency": out}))


def _calibrate_worker(threads: int, seconds: float) -> None:
    from core.bridge.calibrate import calibrate

    print(json.dumps(calibrate(seconds=seconds, dtypes=("fp32",), threads=threads)))


def _run(args: list[str], timeout: int = 1800) -> dict:
    out = subprocess.run([sys.executable, __file__, *args], capture_output=True, text=True, cwd=ROOT, timeout=timeout)
    if out.returncode != 0:
        raise RuntimeError(f"{' '.join(args)} failed:\n{out.stderr[-2000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def machine() -> dict:
    cpu = next((line.split(":", 1)[1].strip() for line in Path("/proc/cpuinfo").read_text().splitlines()
                if line.startswith("model name")), platform.processor()) if Path("/proc/cpuinfo").exists() else \
        platform.processor()
    import importlib.metadata as md

    return {"cpu": cpu, "cores": __import__("os").cpu_count(), "python": platform.python_version(),
            "torch": md.version("torch"), "date": dt.date.today().isoformat()}


def combine(runs: list[dict]) -> dict:
    """One network's latency from several fresh processes: per batch, the median of the processes' medians (a
    process's memory layout and the machine's state shift a whole run by 20 % or more here; one process's samples
    do not show that), with every process's median kept."""
    out = {}
    for b in runs[0]["latency"]:
        medians = [r["latency"][b]["median_s"] for r in runs]
        out[b] = {"median_s": statistics.median(medians), "process_medians_s": medians,
                  "iqr_s": statistics.median(r["latency"][b]["iqr_s"] for r in runs),
                  "samples": sum(r["latency"][b]["samples"] for r in runs)}
    return {"network": runs[0]["network"], "input": runs[0]["input"], "latency": out}


def measure_all(networks, batches, threads: int, warmup: int, repeats: int, seconds: float, progress=print,
                processes: int = 1) -> dict:
    """Calibrate, then time every network in ``processes`` fresh processes each, in rounds (every network once per
    round, so a slow spell of the machine does not land on one network's runs)."""
    progress(f"calibrating ({seconds:g} s, {threads} thread(s))")
    spec = _run(["--calibrate-worker", "--threads", str(threads), "--seconds", str(seconds)])
    runs: dict[str, list] = {name: [] for name in networks}
    for p in range(processes):
        for k, name in enumerate(networks):
            progress(f"round {p + 1}/{processes} [{k + 1}/{len(networks)}] {name}")
            runs[name].append(_run(["--worker", name, "--threads", str(threads), "--warmup", str(warmup),
                                    "--repeats", str(repeats), "--batches", *map(str, batches)]))
    return {"machine": machine(), "threads": threads, "processes": processes, "calibration": spec,
            "measured": [combine(runs[name]) for name in networks]}


def device_of(spec: dict) -> Device:
    """The calibrated spec as a Device (what ``save_local`` would store, without touching the user's file)."""
    fields = Device.__dataclass_fields__
    return Device(**{k: v for k, v in spec.items() if k in fields})


def percentile(values, q: float) -> float:
    v = sorted(values)
    pos = (len(v) - 1) * q
    lo, hi = math.floor(pos), math.ceil(pos)
    return v[lo] + (v[hi] - v[lo]) * (pos - lo)


def evaluate(data: dict, **estimate_kw) -> dict:
    """Per network and batch: measured, PALEO-predicted and baseline latency with their errors, and the summary."""
    dev = device_of(data["calibration"])
    peak = dev.peak("fp32")
    rows = []
    for m in data["measured"]:
        for b, lat in m["latency"].items():
            r = core.analyze(m["network"], input_shape=tuple(m["input"]), batch_size=int(b))
            e = estimate(r, dev, batch_size=int(b), **estimate_kw)
            rows.append({"network": m["network"], "batch": int(b), "measured_ms": lat["median_s"] * 1e3,
                         "process_ms": [x * 1e3 for x in lat.get("process_medians_s", [lat["median_s"]])],
                         "iqr_ms": lat["iqr_s"] * 1e3, "predicted_ms": e.totals["forward_s"] * 1e3,
                         "flops": r.totals["flops"]})
    fit = [r for r in rows if r["network"] == FIT_ON] or rows[:1]
    # PPP with which FLOPs ÷ (peak × PPP) reproduces the fitted network: geometric mean over its batch sizes
    ppp = math.exp(statistics.fmean(math.log(r["flops"] / peak / (r["measured_ms"] / 1e3)) for r in fit))
    for r in rows:
        r["baseline_ms"] = r["flops"] / (peak * ppp) * 1e3
        r["error"] = abs(r["predicted_ms"] - r["measured_ms"]) / r["measured_ms"]
        r["baseline_error"] = abs(r["baseline_ms"] - r["measured_ms"]) / r["measured_ms"]
    summary = {}
    for key in ("error", "baseline_error"):
        errs = [r[key] for r in rows]
        summary[key] = {"median": statistics.median(errs), "p90": percentile(errs, 0.9), "max": max(errs)}
        for b in sorted({r["batch"] for r in rows}):
            e_b = [r[key] for r in rows if r["batch"] == b]
            summary[key][f"median_b{b}"] = statistics.median(e_b)
    return {"rows": rows, "summary": summary, "baseline_ppp": ppp, "device": dev}


def progress(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def measure(quick: bool = False, progress=progress, reuse: bool = False) -> dict:
    """What ``run_all.py`` calls: calibrate and measure (or, with ``reuse``, the cached measurements), evaluate."""
    if reuse:
        data = json.loads(CACHE.read_text())
    elif quick:
        data = measure_all(*QUICK, threads=1, warmup=1, repeats=2, seconds=3.0, progress=progress)
    else:
        data = measure_all(NETWORKS, BATCHES, threads=1, warmup=2, repeats=7, seconds=60.0, progress=progress,
                           processes=PROCESSES)
        CACHE.parent.mkdir(exist_ok=True)
        CACHE.write_text(json.dumps(data, indent=1))
    return {"data": data, "eval": evaluate(data)}


def markdown(results: dict) -> str:
    data, ev = results["data"], results["eval"]
    s, dev = ev["summary"], ev["device"]
    m = data["machine"]
    eff = ", ".join(f"{k} {v:.2f}" for k, v in dev.efficiency.items())
    lines = [
        "## Prediction accuracy on this machine",
        "",
        f"{m['cpu']}, {data['threads']} thread(s), torch {m['torch']}, measured {m['date']}. Calibrated device: fp32 "
        f"peak {dev.peak('fp32') / 1e9:.1f} GFLOP/s, bandwidth {dev.memory_bandwidth / 1e9:.1f} GB/s, efficiencies "
        f"{eff}; per-layer overhead " + ", ".join(f"{k} {v * 1e6:.0f} µs" for k, v in dev.layer_overhead.items())
        + (f"; fresh pages at {dev.alloc_bandwidth / 1e9:.2f} GB/s (glibc's malloc replayed, `core/cpu_heap.py`)"
           if dev.alloc_bandwidth else "") + ".",
        f"Baseline: FLOPs ÷ (peak × PPP) with PPP = {ev['baseline_ppp']:.3f} fitted on {FIT_ON}.",
        "Forward pass, torchvision models with random weights, eval mode, no_grad; median of timed runs after "
        f"warm-up in each of {data.get('processes', 1)} fresh process(es) per network, measured in rounds; the "
        "latency is the median of the processes' medians.",
        "",
        "| model | median error | p90 error | max error | median at batch 1 | median at batch 16 |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for key, label in (("error", "PALEO, calibrated"), ("baseline_error", "baseline (one PPP)")):
        v = s[key]
        lines.append(f"| {label} | {v['median']:.1%} | {v['p90']:.1%} | {v['max']:.1%} | "
                     f"{v.get('median_b1', float('nan')):.1%} | {v.get('median_b16', float('nan')):.1%} |")
    lines += ["", "Target for the calibrated model: median ≤ 15 %, p90 ≤ 30 %."]
    spreads = [(max(p) - min(p)) / statistics.median(p) for p in (r["process_ms"] for r in ev["rows"]) if len(p) > 1]
    if spreads:
        lines += ["", f"The same network timed in different processes differs by {statistics.median(spreads):.0%} "
                      f"(median over rows of (slowest − fastest) ÷ median; largest {max(spreads):.0%}): the machine "
                      "is shared, and that noise is part of every error below."]
    lines += ["", "| network | batch | measured ms | processes ms | IQR ms | PALEO ms | error | baseline ms | "
                  "baseline error |", "|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for r in sorted(ev["rows"], key=lambda r: (r["batch"], r["network"])):
        spread = "–".join(f"{v:.1f}" for v in (min(r["process_ms"]), max(r["process_ms"])))
        lines.append(f"| {r['network']} | {r['batch']} | {r['measured_ms']:.2f} | {spread} | {r['iqr_ms']:.2f} | "
                     f"{r['predicted_ms']:.2f} | {r['error']:.0%} | {r['baseline_ms']:.2f} | "
                     f"{r['baseline_error']:.0%} |")
    return "\n".join(lines) + "\n"


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true", help="two small networks at batch 1, short calibration")
    ap.add_argument("--reuse", action="store_true", help=f"evaluate the cached measurements ({CACHE.name})")
    ap.add_argument("--recalibrate", action="store_true",
                    help="with --reuse: calibrate again (a changed calibration) and evaluate the cached latencies")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--warmup", type=int, default=2)
    ap.add_argument("--repeats", type=int, default=7)
    ap.add_argument("--seconds", type=float, default=60.0, help="calibration budget")
    ap.add_argument("--processes", type=int, default=PROCESSES, help="fresh processes per network")
    ap.add_argument("--networks", nargs="*")
    ap.add_argument("--batches", nargs="*", type=int)
    ap.add_argument("--worker")
    ap.add_argument("--calibrate-worker", action="store_true")
    args = ap.parse_args(argv)
    if args.worker:
        return _worker(args.worker, args.batches or BATCHES, args.threads, args.warmup, args.repeats)
    if args.calibrate_worker:
        return _calibrate_worker(args.threads, args.seconds)
    if args.reuse:
        data = json.loads(CACHE.read_text())
        if args.recalibrate:
            data["calibration"] = _run(["--calibrate-worker", "--threads", str(data["threads"]), "--seconds",
                                        str(args.seconds)])
            CACHE.write_text(json.dumps(data, indent=1))
    else:
        nets, batches = QUICK if args.quick else (tuple(args.networks or NETWORKS), tuple(args.batches or BATCHES))
        data = measure_all(nets, batches, args.threads, 1 if args.quick else args.warmup,
                           2 if args.quick else args.repeats, 3.0 if args.quick else args.seconds,
                           progress=lambda msg: print(msg, file=sys.stderr, flush=True),
                           processes=1 if args.quick else args.processes)
        if not args.quick:
            CACHE.parent.mkdir(exist_ok=True)
            CACHE.write_text(json.dumps(data, indent=1))
    results = {"data": data, "eval": evaluate(data)}
    print(markdown(results))
    return results


if __name__ == "__main__":
    main()
