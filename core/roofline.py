"""The roofline model (Williams, Waterman, Patterson, CACM 2009), as small pure functions.

attainable FLOP/s = min(peak, intensity × bandwidth); the ridge point peak / bandwidth separates memory-bound
(left of it) from compute-bound work. A layer that moves no bytes has no intensity (None): it is never memory-bound.
"""

from __future__ import annotations

from dataclasses import dataclass


def ridge(peak_flops: float, bandwidth: float) -> float:
    """FLOP per byte where the bandwidth slope meets the compute roof. V100 fp32: 15.7e12 / 900e9 = 17.44."""
    return peak_flops / bandwidth


def intensity(flops: float, bytes_: float) -> float | None:
    return flops / bytes_ if bytes_ > 0 else None


def attainable(ai: float | None, peak_flops: float, bandwidth: float) -> float:
    return peak_flops if ai is None else min(peak_flops, ai * bandwidth)


def bound(ai: float | None, peak_flops: float, bandwidth: float, flops: float = 1.0) -> str:
    """"compute", "memory", or "none" for work that does no arithmetic and moves nothing."""
    if ai is None:
        return "compute" if flops > 0 else "none"
    return "memory" if ai < ridge(peak_flops, bandwidth) else "compute"


@dataclass(frozen=True)
class RooflinePoint:
    name: str
    flops: float
    bytes: float
    intensity: float | None
    attainable: float          # FLOP/s the roofline allows at this intensity
    bound: str

    @staticmethod
    def of(name: str, flops: float, bytes_: float, peak_flops: float, bandwidth: float) -> "RooflinePoint":
        ai = intensity(flops, bytes_)
        return RooflinePoint(name, flops, bytes_, ai, attainable(ai, peak_flops, bandwidth),
                             bound(ai, peak_flops, bandwidth, flops))
