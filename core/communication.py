"""The time of the gradient all-reduce across data-parallel workers (PALEO's communication term)."""

from __future__ import annotations

from math import ceil, isfinite, log2

from .choices import ALLREDUCE
from .devices import Interconnect
from .errors import DeviceError
from .settings import choice
from .terms import fmt_number


def allreduce_time(nbytes: float, workers: int, link: Interconnect, ppp_comm: float = 1.0,
                   algorithm: str = "ring") -> float:
    """Seconds to all-reduce ``nbytes`` of gradients across ``workers`` over ``link`` (bandwidth per direction).

    ring: 2(K−1)/K · bytes / B + 2(K−1)·latency (reduce-scatter then all-gather, Patarasuk & Yuan 2009);
    tree: 2·⌈log2 K⌉ · (bytes / B + latency) (reduce up a binary tree, broadcast down);
    parameter server: the server's link carries every worker's push and pull: 2K · bytes / B + 2·latency.
    One worker communicates nothing.
    """
    choice(algorithm, ALLREDUCE, "allreduce")
    if workers <= 1:
        return 0.0
    bw = link.bandwidth * ppp_comm
    k = workers
    if algorithm == "ring":
        return 2 * (k - 1) / k * nbytes / bw + 2 * (k - 1) * link.latency
    if algorithm == "tree":
        return 2 * ceil(log2(k)) * (nbytes / bw + link.latency)
    return 2 * k * nbytes / bw + 2 * link.latency


def gradient_allreduce_s(nbytes: float, workers: int, link: Interconnect, ppp_comm: float, algorithm: str) -> float:
    """``allreduce_time``, or a DeviceError naming the link's bandwidth where that is not a finite number."""
    try:
        seconds = allreduce_time(nbytes, workers, link, ppp_comm, algorithm)
    except (OverflowError, ZeroDivisionError):
        seconds = float("inf")
    if not isfinite(seconds):
        raise DeviceError(f"the all-reduce time is not a finite number ({fmt_number(nbytes)} bytes at "
                          f"{fmt_number(link.bandwidth)} B/s × PPP {ppp_comm:g})", node=link.id,
                          field="bandwidth", value=link.bandwidth)
    return seconds
