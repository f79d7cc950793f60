"""The noise gate of calibration: is a quantity's timing steady, and is a fitted figure within its sanity bounds?

A quantity's spread is the median, over its benchmarks, of each benchmark's interquartile range ÷ median of its runs;
for a per-call overhead (whose figure is its runs' lowest decile) the spread of the runs' faster half, (median −
lowest decile) ÷ median, since a quiet machine's µs calls have a long slow tail that says nothing of that figure.
``Gate.measure`` re-measures a quantity whose spread is above ``SPREAD_LIMIT`` (``OVERHEAD_SPREAD_LIMIT`` for the
per-call overheads) at most ``RETRIES`` more times and keeps the steadiest attempt; still above, the calibration is
refused (``Unsteady``, a ``CalcError`` naming the quantity and its spread), or with ``force`` the quantity is recorded
as noisy. ``_out_of_bounds`` names the fitted figures outside their sanity bounds: a per-call overhead above
``OVERHEAD_MAX``, an efficiency below ``EFFICIENCY_RANGE[0]`` or, for the ``COMPUTE_BOUND`` classes, above 1
(by more than ``ABOVE_PEAK_SLACK``).
Why these limits, and what they caught: docs/cpu-calibration.md.
"""

from __future__ import annotations

import statistics
from typing import Any

from ..errors import CalcError

SPREAD_LIMIT = 0.25           # IQR ÷ median above which a quantity is unsteady (docs/cpu-calibration.md: why)
# the per-call overheads (tiny layers, µs each; their figure is the lowest decile, not the median): the limit on their
# faster half's spread (``low_spread``; docs/cpu-calibration.md, "Notes from the code")
OVERHEAD_SPREAD_LIMIT = 0.25
RETRIES = 2                   # re-measurements of an unsteady quantity or an out-of-bounds figure
OVERHEAD_MAX = 1e-3           # seconds per layer call: above is a measurement error
EFFICIENCY_RANGE = (1e-4, 1.0)     # the upper bound for COMPUTE_BOUND classes only (docs/cpu-calibration.md: why)
COMPUTE_BOUND = ("conv", "pointwise_conv", "linear")
# a COMPUTE_BOUND figure up to this far above 1 is clamped to 1, not refused: on a quiet AMD EPYC the 3×3 conv suite
# (without the 1×1s, pointwise_conv's since) fitted 0.93–1.01 forward and 0.98–1.07 in train mode, its weights read
# at the forward's measured rate (4 calibrations; gate series 7 refused one of 10 at 1.18); a disturbed peak puts it
# far above
ABOVE_PEAK_SLACK = 0.15


class Unsteady(CalcError):
    """A calibration refused: a quantity kept varying between runs, or a fitted figure is out of its sanity bounds
    (another process is using the machine); ``force=True`` keeps such a result, marked noisy."""


# == statistics and the noise gate ================================================================================

def percentile(samples, q: float) -> float:
    """The ``q`` quantile (0 … 1) of ``samples``, linear between order statistics (numpy's default):
    percentile([1, 2, 3, 4, 5], 0.1) = 1 + 0.4 × (2 − 1) = 1.4."""
    s = sorted(samples)
    if not s:
        raise CalcError("no timed runs", field="samples")
    k = (len(s) - 1) * q
    i = int(k)
    return s[i] + (s[min(i + 1, len(s) - 1)] - s[i]) * (k - i)


def spread(samples) -> float:
    """Interquartile range ÷ median of one benchmark's runs (0 with fewer than 2 runs)."""
    if len(samples) < 2:
        return 0.0
    med = percentile(samples, 0.5)
    return (percentile(samples, 0.75) - percentile(samples, 0.25)) / med if med > 0 else 0.0


def low_spread(samples) -> float:
    """(median − lowest decile) ÷ median of one benchmark's runs: how steady its faster half is (0 with fewer than 2
    runs). low_spread([10, 10, 11, 11, 12, 30, 90]) = (11 − 10) / 11 = 0.091, where the IQR ÷ median is 1.64."""
    if len(samples) < 2:
        return 0.0
    med = percentile(samples, 0.5)
    return (med - percentile(samples, 0.1)) / med if med > 0 else 0.0


def quantity_spread(series, low: bool = False) -> float:
    """A quantity's spread: the median over its benchmarks' spreads (one odd benchmark in a suite is not noise);
    ``low``: their faster halves' (``low_spread``)."""
    return statistics.median((low_spread if low else spread)(s) for s in series) if series else 0.0


class Gate:
    """Measures quantities until they are steady: ``measure(what, fn)`` calls ``fn()`` → (list of benchmarks' run
    times, result) and re-measures while its spread is above ``limit``, at most ``retries`` more times, keeping the
    steadiest attempt; still unsteady, it raises ``Unsteady`` naming ``what`` and the spread — with ``force``, it
    records the quantity as noisy instead. ``spreads``: what → the kept attempt's spread; ``noisy``: the reasons
    a forced result is marked noisy."""

    def __init__(self, limit: float = SPREAD_LIMIT, retries: int = RETRIES, force: bool = False,
                 busy: str = "another process is using the CPU"):
        self.limit, self.retries, self.force, self.busy = limit, retries, force, busy
        self.spreads: dict[str, float] = {}
        self.tries: dict[str, int] = {}
        self.noisy: list[str] = []
        self.attempts: dict[str, list] = {}     # what → each attempt's (IQR spread, faster half's spread)

    def measure(self, what: str, fn, limit: float | None = None, low: bool = False):
        """``limit``: this quantity's own spread limit, else the gate's; ``low``: judge its runs' faster half
        (``low_spread``: a per-call overhead)."""
        limit = self.limit if limit is None else limit
        best, tries = None, 0
        while tries <= self.retries:
            series, result = fn()
            tries += 1
            self.attempts.setdefault(what, []).append((quantity_spread(series), quantity_spread(series, low=True)))
            s = quantity_spread(series, low)
            if best is None or s < best[0]:
                best = (s, result)
            if s <= limit:
                break
        s, result = best
        self.spreads[what], self.tries[what] = s, tries
        if s > limit:
            how = "(median − lowest decile) ÷ median" if low else "interquartile range ÷ median"
            self.refuse(f"the {what} varied by {s:.0%} between runs ({how}, {tries} tries; steady is at most "
                        f"{limit:.0%})", f"{what} {s:.0%}")
        return result

    def refuse(self, reason: str, short: str, field: str | None = None, value: Any = None) -> None:
        """Raise ``Unsteady`` (one line: the load, ``reason``, what to do), or with ``force`` note ``short``."""
        if not self.force:
            raise Unsteady(f"{self.busy}: {reason}; close it or pass --force (force=True) to keep the result "
                           "marked noisy", field=field, value=value)
        self.noisy.append(short)

    @property
    def worst(self) -> tuple[str, float]:
        return max(self.spreads.items(), key=lambda kv: kv[1]) if self.spreads else ("", 0.0)


def _out_of_bounds(eff: dict, names=("layer_overhead", "efficiency"),
                   compute_bound=COMPUTE_BOUND) -> list[tuple[str, str, float, str]]:
    """(class, field, value, why) for each fitted figure outside its sanity bounds; ``names``: the overhead and
    efficiency fields (forward's, or backward_overhead and backward_efficiency); ``compute_bound``: the classes
    whose efficiency may not exceed 1."""
    out = []
    for cls, (_, _, _, overhead, raw, *_) in eff.items():
        if overhead > OVERHEAD_MAX:
            out.append((cls, names[0], overhead, f"per layer call is above {_time(OVERHEAD_MAX)}"))
        if raw < EFFICIENCY_RANGE[0]:
            out.append((cls, names[1], raw, f"is below {EFFICIENCY_RANGE[0]:g} of the peak"))
        elif raw > EFFICIENCY_RANGE[1] + ABOVE_PEAK_SLACK and cls in compute_bound:
            out.append((cls, names[1], raw, "is above 1: faster than the measured peak"))
    return out


def _time(s: float) -> str:
    return f"{s * 1e3:.3g} ms" if s >= 1e-3 else f"{s * 1e6:.3g} µs"
