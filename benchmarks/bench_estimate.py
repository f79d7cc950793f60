"""Speed of time estimates (issue: hardware database, PALEO and roofline, §6; issue 13 for the prediction).

ResNet-152 on every device in device_specs.json × 11 batch sizes (1, 2, 4, … 1024), fp32 where the device has it
(else its first precision), training-step totals and the network's roofline point for each: total wall time, median
of repeated sweeps, for the default time model (auto: the fitted prediction on fitted GPUs, per layer) and for
classic PALEO (by class of work). Run: ``python benchmarks/bench_estimate.py [--quick]``.
"""

from __future__ import annotations

import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import core
from common import quick_main
from core.api import sweep as paleo_sweep
from core.devices import load_devices

BATCHES = tuple(2 ** i for i in range(11))      # 1 … 1024


VARIANTS = ("auto", "paleo")


def sweep(model: str, devices, variant: str = "auto") -> int:
    n = 0
    for e in paleo_sweep(model, devices, BATCHES, dtype=None, variant=variant):
        e.totals["training_step_s"]
        e.roofline["bound"]
        n += 1
    return n


def measure(quick: bool = False) -> dict:
    model = "resnet18" if quick else "resnet152"
    devices = list(load_devices().devices.values())
    core.analyze(model)                          # compile once; the sweep is what is timed
    out = {"model": model, "devices": len(devices), "median_ms": {}}
    for variant in VARIANTS:
        sweep(model, devices, variant)
        times = []
        for _ in range(3 if quick else (5 if variant == "auto" else 20)):
            t = time.perf_counter()
            out["estimates"] = sweep(model, devices, variant)
            times.append((time.perf_counter() - t) * 1e3)
        out["median_ms"][variant] = statistics.median(times)
    predicted = sum(1 for e in paleo_sweep(model, devices, (1,), dtype=None) if e.variant == "predicted")
    out["predicted_devices"] = predicted
    return out


def markdown(out: dict) -> str:
    count = out["estimates"]
    lines = ["## Time estimates", "",
             f"{out['model']}: {count} estimates ({out['devices']} devices × {len(BATCHES)} batch sizes), median of "
             "repeated sweeps:", "", "| time model | sweep ms | µs per estimate |", "|---|---:|---:|"]
    for variant, label in (("auto", f"default (auto: predicted on the {out['predicted_devices']} fitted GPUs, per "
                                    "layer; PALEO elsewhere)"), ("paleo", "PALEO (by class of work)")):
        med = out["median_ms"][variant]
        lines.append(f"| {label} | {med:,.1f} | {med / count * 1e3:,.1f} |")
    return "\n".join(lines) + "\n"


def main(argv=None) -> dict:
    return quick_main(measure, markdown, argv, "a small network and few repeats (smoke test)")


if __name__ == "__main__":
    main()
