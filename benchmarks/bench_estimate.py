"""Speed of PALEO estimates (issue: hardware database, PALEO and roofline, §6).

ResNet-152 on every device in device_specs.json × 11 batch sizes (1, 2, 4, … 1024), fp32 where the device has it
(else its first precision), training-step totals and the network's roofline point for each: total wall time, median
of repeated sweeps. Run: ``python benchmarks/bench_estimate.py [--quick]``.
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


def sweep(model: str, devices) -> int:
    n = 0
    for e in paleo_sweep(model, devices, BATCHES, dtype=None):
        e.totals["training_step_s"]
        e.roofline["bound"]
        n += 1
    return n


def measure(quick: bool = False) -> dict:
    model = "resnet18" if quick else "resnet152"
    devices = list(load_devices().devices.values())
    core.analyze(model)                          # compile once; the sweep is what is timed
    sweep(model, devices)
    times = []
    for _ in range(3 if quick else 20):
        t = time.perf_counter()
        count = sweep(model, devices)
        times.append((time.perf_counter() - t) * 1e3)
    return {"estimates": count, "median_ms": statistics.median(times), "model": model, "devices": len(devices)}


def markdown(out: dict) -> str:
    med, count = out["median_ms"], out["estimates"]
    return ("## PALEO estimates\n\n"
            f"{out['model']}: {count} estimates ({out['devices']} devices × {len(BATCHES)} batch sizes) "
            f"in {med:.2f} ms median ({med / count * 1e3:.1f} µs each)\n")


def main(argv=None) -> dict:
    return quick_main(measure, markdown, argv, "a small network and few repeats (smoke test)")


if __name__ == "__main__":
    main()
