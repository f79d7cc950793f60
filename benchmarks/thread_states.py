"""How steady a CPU's gain from its threads is: small networks timed at torch's thread count and at one, again and
again, with a pause between samples (issue 44: on the AMD EPYC VM the grain fit wandered between calibrations).

Each sample times every network at ``--threads`` (torch's default) and then at one thread, a warm-up run and
``--runs`` timed runs each, and prints the medians and the gain (time at one thread ÷ at the count). The summary
gives per network the gain's quartiles, the share of samples in which the threads made it slower, and how much the
one-thread time itself moved. With ``--spec`` (a ``bench_predict.py`` cache) each sample also gets the one grain
for every class of work (its ``class_grain`` set aside) that fits its gains best with that run's calibration, as
tried in docs/cpu-calibration.md ("The grain and the VM's two states").

    python benchmarks/thread_states.py --seconds 300 [--spec benchmarks/results/predict_amd/39.json]
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from core.bridge.calibrate_fit import GRAIN_GRID  # noqa: E402

NETWORKS = ("shufflenet_v2_x0_5", "mnasnet0_5", "regnet_x_800mf")      # three of calibration's GRAIN_FIT
UNSPLIT = 1.0       # parallel_grain's largest value, above these layers' work: every layer on one thread


def forward_median(torch, module, x, threads: int, runs: int, warmup: int = 1) -> float:
    """Median seconds of ``module(x)`` without autograd at ``threads`` torch threads, after ``warmup`` runs."""
    torch.set_num_threads(threads)
    with torch.no_grad():
        for _ in range(warmup):
            module(x)
        times = []
        for _ in range(runs):
            t0 = time.perf_counter()
            module(x)
            times.append(time.perf_counter() - t0)
    return statistics.median(times)


def _sample(torch, modules, threads: int, runs: int) -> list[tuple[float, float]]:
    """(median seconds at ``threads``, at one thread) per module."""
    out = [tuple(forward_median(torch, m, x, n, runs) for n in (threads, 1)) for m, x in modules]
    torch.set_num_threads(threads)
    return out


def grain_fitter(spec: dict, reports: list, threads: int):
    """gains (one thread ÷ ``threads``, per network) → the grid's grain whose predicted gains are nearest (mean
    |log| distance), with the device ``spec`` at ``threads``."""
    from core.devices import Device
    from core.paleo import Estimate

    def forwards(g):
        dev = Device(**{**spec, "parallel_grain": g, "class_grain": {}, "calibration": {"threads": threads}})
        return [Estimate(r, dev).forward.total_s for r in reports]

    unsplit = forwards(UNSPLIT)
    predicted = {g: [u / p for p, u in zip(forwards(g), unsplit)] for g in GRAIN_GRID}

    def fit(gains):
        def err(g):
            return statistics.fmean(abs(math.log(p / m)) for p, m in zip(predicted[g], gains))
        return min(GRAIN_GRID, key=lambda g: (err(g), g))
    return fit


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seconds", type=float, default=300.0, help="how long to sample (default 300)")
    ap.add_argument("--pause", type=float, default=5.0, help="seconds between samples (default 5)")
    ap.add_argument("--runs", type=int, default=8, help="timed runs per network and thread count (default 8)")
    ap.add_argument("--threads", type=int, default=None, help="the thread count to compare with one (default torch's)")
    ap.add_argument("--spec", type=Path, help="a bench_predict.py cache whose calibration fits a grain per sample")
    ap.add_argument("--json", type=Path, help="write the samples here")
    args = ap.parse_args(argv)

    import torch

    from core.api import load_network
    from core.bridge.to_torch import to_module
    from core.graph import compile_network
    from core.report import Report

    threads = args.threads or torch.get_num_threads()
    nets = [load_network(n) for n in NETWORKS]
    modules = [(to_module(n).eval(), torch.randn(1, *n.inputs[0][1])) for n in nets]
    fit = None
    if args.spec:
        spec = json.loads(args.spec.read_text())["protocols"]["b"]["calibration"]
        fit = grain_fitter({k: v for k, v in spec.items() if k != "calibration"},
                           [Report(compile_network(n), 1, "fp32") for n in nets], threads)
    samples, end = [], time.time() + args.seconds
    print(f"{threads} threads against 1; per network: ms at {threads} / ms at 1 (gain)")
    while time.time() < end:
        pairs = _sample(torch, modules, threads, args.runs)
        gains = [t1 / tn for tn, t1 in pairs]
        row = {"time": time.strftime("%H:%M:%S"), "pairs": pairs, "gains": gains}
        if fit:
            row["grain"] = fit(gains)
        samples.append(row)
        print(row["time"], "  ".join(f"{n}: {tn * 1e3:.2f} / {t1 * 1e3:.2f} ({g:.2f})"
                                     for n, (tn, t1), g in zip(NETWORKS, pairs, gains))
              + (f"  grain {row['grain'] * 1e6:.0f} µs" if fit else ""), flush=True)
        time.sleep(args.pause)
    print(f"\n{len(samples)} samples")
    for k, n in enumerate(NETWORKS):
        g = sorted(s["gains"][k] for s in samples)
        one = [s["pairs"][k][1] for s in samples]
        q = statistics.quantiles(g, n=4) if len(g) > 1 else [g[0]] * 3
        print(f"{n}: gain quartiles {q[0]:.2f} / {q[1]:.2f} / {q[2]:.2f}; slower at {threads} threads in "
              f"{sum(x < 1 for x in g)} of {len(g)}; one thread {min(one) * 1e3:.2f}–{max(one) * 1e3:.2f} ms")
    if fit:
        grains = sorted(s["grain"] for s in samples)
        print("grain fitted per sample: " + ", ".join(f"{x * 1e6:.0f}" for x in grains) + " µs")
    if args.json:
        args.json.write_text(json.dumps({"threads": threads, "networks": NETWORKS, "samples": samples}, indent=1))
    return {"threads": threads, "samples": samples}


if __name__ == "__main__":
    main()
