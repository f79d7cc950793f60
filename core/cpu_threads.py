"""A calibrated CPU's thread count, how much slower a layer too small to split runs than the rates say, the hint to
calibrate again for a multi-thread calibration made before the parallel grain, and the self-check's limits."""

from __future__ import annotations

from .devices import Device


def calibrated_threads(device: Device) -> int | None:
    """The torch CPU thread count a calibrated CPU was measured at (its ``calibration.threads``): its estimates hold
    at that count only. None for a GPU and for a device with datasheet figures (all its cores)."""
    cal = getattr(device, "calibration", None)
    n = cal.get("threads") if isinstance(cal, dict) and device.kind == "CPU" else None
    return n if isinstance(n, int) and not isinstance(n, bool) else None


def small_layer_factor(work_s: float, threads: int | None, grain: float) -> float:
    """How much slower a layer's work (compute, memory and page faults: ``work_s`` seconds at the calibrated thread
    count's rates) runs than those rates say, on a CPU calibrated at ``threads`` > 1 with ``parallel_grain``
    ``grain``: a layer whose work at one thread (``threads × work_s``) is below the grain is not worth splitting and
    runs on one thread; above it, the split is paid up to the grain: time = max(work, min(threads × work, grain)).
    The calibration's rates come from large layers, which do split (core.bridge.calibrate_fit fits the grain on whole
    networks). 1 at one thread, without a grain, or for no work."""
    if not threads or threads <= 1 or not grain or work_s <= 0:
        return 1.0
    return max(work_s, min(threads * work_s, grain)) / work_s


THREADS_HINT_ABOVE = 0.2     # a multi-thread calibration's held-out error above which the hint is shown
# a calibration's self-check (core.bridge.calibrate): median |error| on its held-out networks at or under
# SELF_CHECK_SAVE saves quietly, up to SELF_CHECK_LIMIT saves with a warning every estimate carries; above, the
# networks are timed once more, and still above it is refused
SELF_CHECK_SAVE, SELF_CHECK_LIMIT = 0.15, 0.25


def threads_hint(calibration: dict | None, grain: float | None = None) -> str | None:
    """A line for a CPU calibrated at more than one thread without a ``parallel_grain`` (a calibration from before
    it; one fitted at 0 has it) whose self-check missed by more than ``THREADS_HINT_ABOVE``: its small layers are
    predicted too fast (they gain less from threads than the large layers the rates come from; bench_predict at 2
    threads: median error 18 % without the grain, 7 % with it). None otherwise."""
    cal = calibration if isinstance(calibration, dict) else {}
    threads, err = cal.get("threads"), cal.get("held_out_error")
    if grain is not None or not (isinstance(threads, int) and threads > 1 and isinstance(err, (int, float))
                     and err > THREADS_HINT_ABOVE):
        return None
    return (f"this calibration at {threads} threads predates the parallel grain, so small layers are predicted too "
            "fast: calibrate again (python -m core calibrate)")
