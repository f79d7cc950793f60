"""The Estimates page's Batch size tab: time, throughput and memory of the sidebar's network on its device at every
power-of-two batch, the largest batch that fits, and the batch up to which launch overhead limits the forward. It is
the same at every sidebar batch, so it is built once per network, precision, optimizer, device and settings."""

from __future__ import annotations

import pandas as pd

from core.api import sweep
from core.sweeps import largest_batch, overhead_limited_up_to
from ui.memo import memo
from ui.shared_cache import device_digest

BATCHES = [2 ** i for i in range(13)]


def batch_key(report, dev, settings: dict) -> tuple:
    return ("batch_tab", report.compiled, report.dtype, report.optimizer, device_digest(dev), *settings.items())


def by_batch(report, dev, settings: dict, predicted: bool) -> tuple[pd.DataFrame, tuple[int, int] | None, int | None]:
    """(one row per batch, (largest power of two, largest of any size) that fits or None, the launch-bound batch)."""
    def build():
        cap = dev.memory_capacity
        runs = sweep(report, [dev], BATCHES, dtype=report.dtype, optimizer=report.optimizer, **settings)
        frame = pd.DataFrame([{
            "batch": e.report.batch_size, "forward ms": e.totals["forward_s"] * 1e3,
            **({"forward ms, PALEO bound": e.bound.totals["forward_s"] * 1e3,
                "launch-overhead share": e.overhead_share} if e.bound is not None else {}),
            # the held-out error of the batch's band (core.variants.typical_error: batch ≤ 8 and above differ)
            **({"typical ±%": e.typical_error["median"] * 100} if e.typical_error and e.launch == "eager" else {}),
            "training step ms": e.totals["training_step_s"] * 1e3, "training samples/s": e.totals["samples_per_s"],
            "training memory GiB": e.report.totals["training_bytes"] / 2 ** 30,
            "inference memory GiB": e.report.totals["inference_bytes"] / 2 ** 30} for e in runs])
        fits = frame[frame["training memory GiB"] * 2 ** 30 <= cap] if cap else frame.iloc[:0]
        largest = (int(fits["batch"].max()), largest_batch(report, cap)) if not fits.empty else None
        return frame, largest, overhead_limited_up_to(runs) if predicted else None

    return memo((*batch_key(report, dev, settings), predicted), build)
