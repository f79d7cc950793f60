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


def passes_roofline(name: str, totals: dict, peak: float, bandwidth: float) -> dict:
    """An estimate's roofline (``Estimate.roofline``): the forward pass, the backward and the training step placed
    on the device's roof from ``totals``' FLOPs and bytes."""
    t = totals
    pt = RooflinePoint.of(name, t["forward_flops"], t["forward_bytes"], peak, bandwidth)
    bwd = RooflinePoint.of("backward", t["backward_flops"], t["backward_bytes"], peak, bandwidth)
    train = RooflinePoint.of("training step", t["forward_flops"] + t["backward_flops"],
                             t["forward_bytes"] + t["backward_bytes"], peak, bandwidth)
    return {
        "peak_flop_per_s": peak, "bandwidth_bytes_per_s": bandwidth, "ridge_flop_per_byte": ridge(peak, bandwidth),
        "arithmetic_intensity": pt.intensity, "attainable_flop_per_s": pt.attainable, "bound": pt.bound,
        "backward_arithmetic_intensity": bwd.intensity, "backward_bound": bwd.bound,
        "training_arithmetic_intensity": train.intensity, "training_bound": train.bound,
    }
