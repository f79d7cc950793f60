"""Data shaping for the Benchmark page: tables and charts from ``core.bridge`` timing and calibration results.

Nothing here imports torch or streamlit: the page imports torch only when the user starts a run, and these helpers
only read the results (``TimingResult``, calibration specs, ``throughput_vs_batch`` rows) that come back.
"""

from __future__ import annotations

import math
import sys

import pandas as pd

import core
from core.errors import Cancelled

# Bounded defaults for a shared machine: one sample, a few repeats, a 20 s soft limit. Threads: ``default_threads``.
DEFAULTS = {"batch": 1, "warmup": 1, "repeats": 3, "max_seconds": 20.0}
TORCH_DEFAULT = 0                   # the threads pick that leaves torch's own count (what `calibrate` uses by default)
ACROSS_DEFAULT = ("mnist_cnn", "resnet18", "mobilenet_v3_small", "squeezenet1_0")
SMALL_INPUT = (3, 64, 64)           # ImageNet networks are timed at 3×64×64 to stay fast on a CPU
THROUGHPUT_BATCHES = (1, 2, 4, 8, 16, 32)
THROUGHPUT_DEFAULT = (1, 2, 4)
# Live runs here are bounded by work as well as by time: a network whose training step (or, across networks, whose
# forward pass) exceeds this many GFLOPs per sample batch is refused before any torch module is built.
MAX_STEP_GFLOPS = 200.0
MAX_ACROSS_GFLOPS = 20.0
PASS_LABELS = {"forward": "forward", "backward": "backward", "train_step": "train step"}


# == refusals =====================================================================================================

def check_live(report: core.Report, limit_gflops: float, *, training: bool = True) -> None:
    """Refuse (``core.CalcError``) a live run that cannot or should not run here: a network with more than one input
    (the timing feeds one random tensor), or one whose FLOPs exceed ``limit_gflops`` — a training step's
    ``training_flops`` when ``training``, else the forward ``flops`` — at the report's batch size."""
    inputs = report.compiled.input_shapes
    if len(inputs) != 1:
        raise core.CalcError(f"{report.name} has {len(inputs)} inputs ({', '.join(inputs)}); live timing feeds one "
                             "random input tensor", field="input_shape")
    flops = report.totals["training_flops" if training else "flops"]
    if flops > limit_gflops * 1e9:
        what = "a training step" if training else "a forward pass"
        raise core.CalcError(f"{report.name} needs {flops / 1e9:,.1f} GFLOPs for {what} at batch "
                             f"{report.batch_size}; live runs here are limited to {limit_gflops:,.0f} GFLOPs: "
                             f"choose a smaller network, input or batch", field="batch_size",
                             value=report.batch_size)


def across_input(network: core.Network) -> str | None:
    """The input shape to time ``network`` at across networks: ``SMALL_INPUT`` for an image network whose own input
    is a larger 3-channel image (the ImageNet classifiers), else None (its own input, e.g. MNIST's 1×28×28)."""
    if len(network.inputs) != 1:
        return None
    shape = tuple(network.inputs[0][1])
    if len(shape) == 3 and shape[0] == 3 and min(shape[1:]) > SMALL_INPUT[1]:
        return "×".join(map(str, SMALL_INPUT))
    return None


# == threads =====================================================================================================

def thread_choices(cpus: int | None, db) -> list[int]:
    """The page's threads picks: ``TORCH_DEFAULT``, then 1 … the CPUs here (and 'local''s calibrated count, were it
    more: a device file from a larger machine)."""
    from core.cpu_threads import calibrated_threads

    local = db.devices.get("local")
    most = max(cpus or 1, (calibrated_threads(local) or 0) if local is not None else 0)
    return [TORCH_DEFAULT, *range(1, most + 1)]


def default_thread_choice(db) -> int:
    """The threads pick a session starts with, the CLI's rule (``core.bridge.measuring.default_threads``): the count
    'local' was calibrated at, else torch's default."""
    from core.bridge.timing import default_threads

    return default_threads(db)[0] or TORCH_DEFAULT


def torch_threads_now() -> int | None:
    """torch's thread count, once torch is loaded and no run holds a count of its own; None before (the page does
    not load torch to say it)."""
    from core.bridge.timing import busy

    torch = sys.modules.get("torch")
    return torch.get_num_threads() if torch is not None and not busy() else None


def thread_label(choice: int, torch_n: int | None = None) -> str:
    if choice != TORCH_DEFAULT:
        return str(choice)
    return f"torch's default ({torch_n})" if torch_n else "torch's default"


def threads_note(choice: int, db, torch_n: int | None = None) -> tuple[str, str | None]:
    """(what the page's runs use, and why; a warning where 'local' was calibrated at another count, else None)."""
    from core.bridge.timing import default_threads
    from core.cpu_threads import calibrated_threads

    rule, why = default_threads(db)
    if choice == TORCH_DEFAULT:
        n = f"{torch_n} torch thread(s)" if torch_n else "torch's default thread count"
        said = f"{n}, torch's default{' (its number shows once torch has loaded)' if not torch_n else ''}"
    else:
        said = f"{choice} torch thread(s)" + (f", {why}" if choice == rule else ", as picked")
    local = db.devices.get("local")
    have, ran = calibrated_threads(local) if local is not None else None, choice or torch_n
    clash = (f"'local' ({local.name}) was calibrated at {have} torch thread(s): timings at {ran} will not match its "
             f"predictions. Pick {have}, or calibrate again at {ran}." if have and ran and ran != have else None)
    return f"Timing, calibration and the runs below use {said}; every result records its count.", clash


# == rank correlation =============================================================================================

def rank_average(values) -> list[float]:
    """Ranks from 1, ties sharing the average of the ranks they span: [10, 20, 20, 30] → [1, 2.5, 2.5, 4]."""
    xs = [float(v) for v in values]
    order = sorted(range(len(xs)), key=lambda i: xs[i])
    ranks = [0.0] * len(xs)
    i = 0
    while i < len(order):
        j = i
        while j + 1 < len(order) and xs[order[j + 1]] == xs[order[i]]:
            j += 1
        for k in range(i, j + 1):
            ranks[order[k]] = (i + j) / 2 + 1          # positions i..j hold ranks i+1..j+1: their mean
        i = j + 1
    return ranks


def pearson(x, y) -> float | None:
    """Pearson's correlation; None with fewer than 2 points or a constant series (undefined)."""
    x, y = [float(v) for v in x], [float(v) for v in y]
    if len(x) != len(y):
        raise ValueError(f"series of different lengths: {len(x)} and {len(y)}")
    n = len(x)
    if n < 2:
        return None
    mx, my = sum(x) / n, sum(y) / n
    sxy = sum((a - mx) * (b - my) for a, b in zip(x, y))
    sxx = sum((a - mx) ** 2 for a in x)
    syy = sum((b - my) ** 2 for b in y)
    if sxx == 0 or syy == 0:
        return None
    return max(-1.0, min(1.0, sxy / math.sqrt(sxx * syy)))


def spearman(x, y) -> float | None:
    """Spearman's rank correlation ρ: Pearson's correlation of the average-tie ranks (as scipy.stats.spearmanr).

    Without ties this equals 1 − 6·Σd²/(n(n²−1)); e.g. x = [1, 2, 3, 4], y = [10, 20, 40, 30]: ranks of y
    [1, 2, 4, 3], d = [0, 0, −1, 1], Σd² = 2, ρ = 1 − 12/60 = 0.8. None with fewer than 2 points or a constant
    series."""
    return pearson(rank_average(x), rank_average(y))


# == live timing ==================================================================================================

def pass_table(result) -> pd.DataFrame:
    """One row per timed pass: median, IQR, min and max in ms, the runs timed, and the achieved GFLOP/s (the
    report's FLOPs ÷ the median)."""
    rows = []
    for name, t in result.passes.items():
        achieved = result.achieved_flops_per_s.get(name)
        rows.append({"pass": PASS_LABELS.get(name, name), "median ms": t.median_s * 1e3, "IQR ms": t.iqr_s * 1e3,
                     "min ms": t.min_s * 1e3, "max ms": t.max_s * 1e3, "runs": len(t.samples),
                     "GFLOPs": result.flops[name] / 1e9 if name in result.flops else None,
                     "GFLOP/s": achieved / 1e9 if achieved else None})
    return pd.DataFrame(rows)


def memory_table(result) -> pd.DataFrame:
    """Measured vs modelled peak memory per pass, in MiB, and their ratio."""
    rows = []
    for name in result.passes:
        measured = result.peak_memory_bytes.get(name)
        model = result.predicted_memory_bytes.get(name)
        rows.append({"pass": PASS_LABELS.get(name, name),
                     "measured MiB": measured / 2 ** 20 if measured is not None else None,
                     "model MiB": model / 2 ** 20 if model is not None else None,
                     "measured ÷ model": measured / model if measured is not None and model else None})
    return pd.DataFrame(rows)


def layer_table(result, estimate=None) -> pd.DataFrame:
    """Measured (hooked, median) vs PALEO-predicted forward ms per layer, joined by layer name, in the estimate's
    order; measured leaf modules the estimate does not list come last. A layer no module owns (a functional add or
    flatten) has no measured time; a module the IR does not list has no prediction."""
    measured = result.layers or {}
    rows, seen = [], set()
    for r in (estimate.layers if estimate is not None else []):
        m = measured.get(r["name"])
        rows.append({"layer": r["name"], "op": r["op"], "measured ms": m * 1e3 if m is not None else None,
                     "PALEO ms": r["forward_s"] * 1e3, "bound": r["bound"]})
        seen.add(r["name"])
    rows += [{"layer": n, "op": None, "measured ms": s * 1e3, "PALEO ms": None, "bound": None}
             for n, s in measured.items() if n not in seen]
    df = pd.DataFrame(rows, columns=["layer", "op", "measured ms", "PALEO ms", "bound"])
    df["measured ÷ PALEO"] = [m / p if pd.notna(m) and pd.notna(p) and p > 0 else None
                              for m, p in zip(df["measured ms"], df["PALEO ms"])]
    return df


def backward_ratio(result, report: core.Report) -> dict:
    """The backward:forward ratio measured (medians) and counted (FLOPs); None where a pass was not timed."""
    t = report.totals
    measured = None
    if "forward" in result.passes and "backward" in result.passes and result.passes["forward"].median_s > 0:
        measured = result.passes["backward"].median_s / result.passes["forward"].median_s
    return {"measured": measured, "flops": t["backward_flops"] / t["flops"] if t["flops"] else None}


def summary(result, report: core.Report) -> str:
    """One line: what was timed, where, and under which settings."""
    shape = "×".join(map(str, result.input_shape))
    threads = f", {result.threads} thread(s)" if result.threads else ""
    return (f"{report.name} at batch {result.batch_size} × {shape}, {result.dtype} on {result.device}{threads}"
            + (" — max_seconds reached: fewer runs than asked for" if result.truncated else ""))


# == calibration ==================================================================================================

def calibration_rows(spec: dict) -> pd.DataFrame:
    """The figures a calibration measured: peak per dtype, bandwidth, efficiency and overhead per class of work, the
    fresh-page rate."""
    rows = [{"figure": f"{k} peak", "value": v / 1e9, "unit": "GFLOP/s"} for k, v in spec["peak_flops"].items()]
    rows.append({"figure": "memory bandwidth", "value": spec["memory_bandwidth"] / 1e9, "unit": "GB/s"})
    rows += [{"figure": f"{k} efficiency", "value": v, "unit": "of fp32 peak"}
             for k, v in spec.get("efficiency", {}).items()]
    rows += [{"figure": f"{k} overhead per layer", "value": v * 1e6, "unit": "µs"}
             for k, v in spec.get("layer_overhead", {}).items()]
    if spec.get("alloc_bandwidth"):
        rows.append({"figure": "writing to fresh pages (page faults)", "value": spec["alloc_bandwidth"] / 1e9,
                     "unit": "GB/s"})
    if spec.get("memory_capacity"):
        rows.append({"figure": "memory capacity", "value": spec["memory_capacity"] / 2 ** 30, "unit": "GiB"})
    return pd.DataFrame(rows)


# == across networks ==============================================================================================

ACROSS_ROWS = "bench_across_rows"   # the session key under which the Benchmark page keeps these rows


def time_networks(names, *, dtype: str = "fp32", progress=None, cancel=None, **common) -> list[dict]:
    """Forward latency at batch 1 of each named network, ImageNet ones at ``SMALL_INPUT`` (``across_input``): the
    rows ``across_frame`` reads, or ``{"network", "refused"}`` for one refused by the FLOP limit or the memory guard.
    ``common``: ``time_module``'s device, warmup, repeats, max_seconds, threads. torch loads inside this call."""
    from core.bridge.timing import check_fits, time_module
    from core.bridge.to_torch import to_module

    rows = []
    for k, name in enumerate(names):
        def sub(fraction, message, k=k, name=name):
            if progress is not None:
                progress((k + fraction) / len(names), f"{name} ({k + 1}/{len(names)}): {message}")

        shape = None
        try:
            shape = across_input(core.load_network(name))
            rep = core.analyze(name, input_shape=shape, batch_size=1, dtype=dtype)
            check_live(rep, MAX_ACROSS_GFLOPS, training=False)
            check_fits(rep, training=False)
            module = to_module(rep.compiled.network, device="cpu")
            r = time_module(module, rep.input_shape, 1, passes=("forward",), progress=sub, cancel=cancel,
                            report=rep, measure_memory=False, dtype=dtype, **common)
            del module
        except Cancelled:
            raise
        except core.CalcError as e:
            rows.append({"network": name, "refused": f"at input {shape}: {e}" if shape else str(e)})
            continue
        t = r.passes["forward"]
        rows.append({"network": name, "input": "×".join(map(str, rep.input_shape)), "latency_s": t.median_s,
                     "iqr_s": t.iqr_s, "flops": rep.totals["flops"], "params": rep.totals["params"],
                     "threads": r.threads})
    return rows


def across_frame(rows: list[dict]) -> pd.DataFrame:
    """The timed networks (rows with ``latency_s``), one per row: latency ms, GFLOPs, M params, GFLOP/s, torch
    threads."""
    ok = [r for r in rows if r.get("latency_s")]
    df = pd.DataFrame([{"network": r["network"], "input": r["input"], "latency ms": r["latency_s"] * 1e3,
                        "IQR ms": r["iqr_s"] * 1e3, "GFLOPs": r["flops"] / 1e9, "M params": r["params"] / 1e6,
                        "GFLOP/s": r["flops"] / r["latency_s"] / 1e9, "threads": r.get("threads")} for r in ok],
                      columns=["network", "input", "latency ms", "IQR ms", "GFLOPs", "M params", "GFLOP/s",
                               "threads"])
    return df


def correlations(df: pd.DataFrame) -> dict:
    """Spearman ρ of latency with FLOPs and with parameters (None with fewer than 2 networks)."""
    lat = list(df["latency ms"])
    return {"flops": spearman(df["GFLOPs"], lat), "params": spearman(df["M params"], lat), "n": len(lat)}


# == throughput vs batch ==========================================================================================

def throughput_frame(rows: list[dict]) -> tuple[pd.DataFrame, str | None]:
    """``throughput_vs_batch`` rows as (a frame of batch, forward ms, samples/s, GFLOP/s, torch threads; the refusal
    message of the batch the memory guard stopped at, or None)."""
    refused = next((r["refused"] for r in rows if "refused" in r), None)
    ok = [r for r in rows if "refused" not in r]
    df = pd.DataFrame([{"batch": r["batch_size"], "forward ms": r["forward_s"] * 1e3,
                        "samples/s": r["forward_samples_per_s"],
                        "GFLOP/s": r["forward_flops_per_s"] / 1e9 if r.get("forward_flops_per_s") else None,
                        "truncated": r.get("truncated", False), "threads": r.get("threads")} for r in ok],
                      columns=["batch", "forward ms", "samples/s", "GFLOP/s", "truncated", "threads"])
    return df, refused
