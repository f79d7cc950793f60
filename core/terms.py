"""The terms of a time: each a small function of one ``Work`` and the estimate's rates, named and added.

    compute     = FLOPs / (peak × PPP_compute × efficiency of the class of work)
    memory      = bytes / (bandwidth × PPP_memory)
    fresh pages = bytes first written to fresh pages / page-fault rate   (a calibrated Linux CPU)
    overhead    = calls × the fixed cost of a layer call, by class of work (a calibrated device)

A term is part of a device's time where the device's fields say so (``Term.applies``). ``combine`` joins them by
the variant: PALEO adds every term; the roofline overlaps compute with memory (their max); the fitted GPU model
(``core.gpu_model``, whose own terms build on ``Term`` and ``Work``) takes max(compute + memory, overhead).
The times they make are ``PassTime`` and ``LayerTime``; ``limiting_term`` names the term that sets one, and
``non_finite`` raises the error for a time that is not a finite number, naming the device field behind it.
"""

from __future__ import annotations

from dataclasses import dataclass
from math import isfinite
from typing import Any, Callable, Protocol

from .devices import Device
from .errors import DeviceError, NetworkError
from .work import figure, in_classes


class Rates(Protocol):
    """What a term reads of the estimate it serves (``core.paleo.Estimate`` is one); the fitted GPU model's terms
    also read its fitted parameters, precision and CUDA-core peak."""

    device: Device
    peak: float
    bandwidth: float
    ppp: float
    ppp_memory: float
    model_params: dict | None
    precision: Any
    cuda_core_peak: float


@dataclass(frozen=True)
class Work:
    """What the terms read: the work of one layer, of a class of layers or of the optimizer step, in one pass, at
    the estimate's batch size and precision. ``work_class`` None: no calibrated efficiency, no per-call overhead."""

    work_class: str | None
    flops: float
    bytes: int
    fresh_bytes: int = 0
    calls: int = 0
    tiles: int = 0               # GEMM output tiles of a conv or linear layer (the predicted variant's wave term)
    backward: bool = False       # a backward-pass work (the predicted variant's backward efficiency)
    weight_grad: bool = False    # the weight-gradient part of a backward GEMM (predicted: its own efficiency)
    update: bool = False         # the optimizer step: ``calls`` are parameter tensors (a calibrated CPU's cost each)
    train: bool = False          # a training step's forward (a calibrated CPU's train figures)
    cast: bool = False           # mixed precision's cast of a layer's parameters or their gradients (predicted)
    blocks: int = 0              # thread blocks of a one-block-per-channel kernel (predicted: the SMs it fills)
    cuda_core: bool = False      # a depthwise conv's backward on CUDA cores (predicted: gpu_model.cuda_core_backward)
    stem: bool = False           # a conv over ≤ 3 channels on CUDA cores (predicted: Estimate.stem_on_cuda_cores)
    weight_bytes: float = 0.0    # of ``bytes``, the layer's weights (and a backward's their gradients): a calibrated
    #                              CPU's weight_bandwidth / backward_weight_bandwidth
    padded: int = 0              # elements a oneDNN conv copies to or from a padded channel layout (a calibrated CPU's
    #                              padded_layout; core.work.padded_elements)


@dataclass(frozen=True)
class Term:
    """One named part of a time: ``seconds(work, estimate)``. ``group`` says how a variant combines it: PALEO
    adds every term; the roofline variant overlaps "compute" with "memory" (their max) and adds "serial" terms.
    ``applies(device)``: the term is part of this device's time (its fields say so)."""

    name: str
    group: str
    seconds: Callable[[Work, Rates], float]
    applies: Callable[[Device], bool]


def pass_efficiency(d: Device, backward: bool, train: bool = False) -> dict:
    """The device's efficiencies for a pass: a calibrated CPU's backward ones where it has them (autograd's
    backward kernels are not the forward's: depthwise and pooling backward run far slower), its training forward's
    (train mode, autograd recording) for a training step's forward, else the (inference) forward's."""
    if backward and d.backward_efficiency:
        return d.backward_efficiency
    return d.train_efficiency if train and d.train_efficiency else d.efficiency


def pass_overheads(d: Device, backward: bool, train: bool = False) -> dict:
    """The device's per-call overheads for a pass: a calibrated CPU's per autograd node in backward, or per layer
    call of a training forward, where it has them, else the forward's per layer call."""
    if backward and d.backward_overhead:
        return d.backward_overhead
    return d.train_overhead if train and d.train_overhead else d.layer_overhead


def _compute_s(w: Work, e: Rates) -> float:
    """FLOPs at the peak × PPP × the device's calibrated efficiency for the class of work and pass (1 if none)."""
    return w.flops / (e.peak * e.ppp * figure(pass_efficiency(e.device, w.backward, w.train), w.work_class, 1.0))


# classes whose weights a forward reads at the bandwidth where they fit in a calibrated CPU's last-level cache
# (``cache_bytes``), not at ``weight_bandwidth``: on an AMD EPYC (32 MiB L3) a batch-1 linear layer read 4.2–4.7 MB of
# weights at 56–59 GB/s, 16.8 MB at 47 GB/s, 67–411 MB at 20–23 GB/s (its weight_bandwidth: 22 GB/s; docs/cpu-
# calibration.md, "Weights in the cache")
CACHED_WEIGHTS = ("linear",)


def _memory_s(w: Work, e: Rates) -> float:
    """Bytes moved at the bandwidth × PPP_memory; on a CPU calibrated with a ``weight_bandwidth`` (a backward:
    ``backward_weight_bandwidth``) for the class or its fallback, the weights' bytes at that measured rate instead
    (no PPP on a measured rate), but for a forward's ``CACHED_WEIGHTS`` that fit in its ``cache_bytes``."""
    rates = e.device.backward_weight_bandwidth if w.backward else e.device.weight_bandwidth
    rate = figure(rates, w.work_class, None) if w.weight_bytes and rates else None
    cache = e.device.cache_bytes
    if rate and cache and not w.backward and w.weight_bytes <= cache \
            and in_classes(w.work_class, CACHED_WEIGHTS):
        rate = None
    if rate:
        return (w.bytes - w.weight_bytes) / (e.bandwidth * e.ppp_memory) + w.weight_bytes / rate
    return w.bytes / (e.bandwidth * e.ppp_memory)


def _fresh_pages_s(w: Work, e: Rates) -> float:
    """Bytes first written to fresh pages (core.cpu_heap), at the measured page-fault rate: no PPP on a rate that
    was measured."""
    return w.fresh_bytes / e.device.alloc_bandwidth if w.fresh_bytes else 0.0


def _overhead_s(w: Work, e: Rates) -> float:
    """The fixed cost of calling a layer (dispatch, allocation, library setup), per call, by class of work and
    pass; for the optimizer step, per parameter tensor (a calibrated CPU's ``update_overhead``). On a CPU calibrated
    with ``padded_layout``, a oneDNN conv's copies into and out of a padded channel layout, at its measured cost per
    element: library work each call does beside the conv, not split with it among threads."""
    if not w.calls:
        return 0.0
    if w.update:
        return w.calls * (e.device.update_overhead or 0.0)
    padded = w.padded * e.device.padded_layout["seconds"] if w.padded else 0.0
    return w.calls * figure(pass_overheads(e.device, w.backward, w.train), w.work_class, 0.0) + padded


TERMS = (
    Term("compute", "compute", _compute_s, lambda d: True),
    Term("memory", "memory", _memory_s, lambda d: True),
    # a Linux CPU's runtime (glibc malloc): calibrate stores its largest mmap threshold and page-fault rate
    Term("fresh_pages", "memory", _fresh_pages_s, lambda d: bool(d.alloc_threshold and d.alloc_bandwidth)),
    Term("overhead", "serial", _overhead_s,
         lambda d: bool(d.layer_overhead or d.backward_overhead or d.update_overhead or d.padded_layout)),
)


TERM_NAMES = tuple(t.name for t in TERMS)


def fmt_number(x: Any) -> str:
    """A number for a message, short even when it is a 400-digit integer."""
    try:
        return f"{float(x):.4g}"
    except (OverflowError, TypeError, ValueError):
        return "more than 1e308"


def combine(variant: str, compute: float, memory: float, serial: float) -> float:
    """PALEO: read + compute + write, in sequence; roofline: compute and memory overlap perfectly; predicted
    (``core.gpu_model``): a kernel's compute and memory in sequence, as PALEO's, and its launch overlaps them (the
    host queues kernels ahead of the GPU)."""
    if variant == "predicted":
        return max(compute + memory, serial)
    return (max(compute, memory) if variant == "roofline" else compute + memory) + serial


@dataclass(frozen=True)
class PassTime:
    """A pass's time by term, with the work it is made of: FLOPs, bytes moved, bytes written to fresh pages."""

    flops: float = 0
    bytes: float = 0
    fresh_bytes: int = 0
    compute_s: float = 0.0
    memory_s: float = 0.0          # memory traffic at the achievable bandwidth
    fresh_pages_s: float = 0.0     # first writes to fresh pages (page faults)
    overhead_s: float = 0.0        # per-call overhead
    total_s: float = 0.0           # the terms combined by the variant

    def __add__(self, o: "PassTime") -> "PassTime":
        return PassTime(self.flops + o.flops, self.bytes + o.bytes, self.fresh_bytes + o.fresh_bytes,
                        self.compute_s + o.compute_s, self.memory_s + o.memory_s,
                        self.fresh_pages_s + o.fresh_pages_s, self.overhead_s + o.overhead_s,
                        self.total_s + o.total_s)


@dataclass(frozen=True)
class LayerTime:
    name: str
    op: str
    work_class: str
    conv_algorithm: str | None     # the algorithm a conv runs with (None for ops without alternatives)
    forward: PassTime
    backward: PassTime
    # the kernels a pass is made of where there are several (a predicted conv/linear backward: dgrad, wgrad; in
    # mixed precision a conv/linear layer's cast kernels, last); empty: the pass is one work
    backward_kernels: tuple[PassTime, ...] = ()
    forward_kernels: tuple[PassTime, ...] = ()


def limiting_term(t: PassTime) -> str:
    """The term that sets a time: overhead where it exceeds compute and memory (fresh pages included) together
    (the predicted variant's ``combine``: max(compute + memory, overhead)), else the larger of compute and memory
    (compute on a tie); "none" for no time. Under PALEO's sum: overhead where it is more than half the time."""
    c, m, o = t.compute_s, t.memory_s + t.fresh_pages_s, t.overhead_s
    if o > c + m:
        return "overhead"
    return "none" if c + m <= 0 else "compute" if c >= m else "memory"


def limited_by_rows(layer_times: tuple[LayerTime, ...]) -> dict:
    """Per pass, the seconds of the layers each term limits, from layer rows: each kernel of a layer to its own
    limiting term (``Estimate.limited_by``'s reference path)."""
    out = {}
    for which in ("forward", "backward"):
        acc = dict.fromkeys(("compute", "memory", "overhead", "none"), 0.0)
        for lt in layer_times:
            kernels = (lt.backward_kernels if which == "backward" else lt.forward_kernels) or (getattr(lt, which),)
            for t in kernels:
                acc[limiting_term(t)] += t.total_s
        out[which] = acc
    return out


def non_finite(e: Any, term: str, w: Work) -> None:
    """Raise the error for a time of estimate ``e`` that is not a finite number, naming the device field (or the
    work) behind it. Devices from the database cannot get here (their numbers have physical bounds); a Device made
    in code, or a network whose work is beyond a float, can."""
    d = e.device
    if term == "compute":
        eff = figure(pass_efficiency(d, w.backward, w.train), w.work_class, 1.0)
        field, value = f"peak_flops.{e.precision.compute}", e.peak
        if eff != 1.0 and isfinite(w.flops / (e.peak * e.ppp)):     # the efficiency is what is off
            name = ("backward_efficiency" if w.backward and d.backward_efficiency else
                    "train_efficiency" if w.train and d.train_efficiency else "efficiency")
            field, value = f"{name}.{w.work_class}", eff
        why = (f"{fmt_number(w.flops)} FLOPs at a peak of {fmt_number(e.peak)} FLOP/s × PPP {e.ppp:g} × "
               f"efficiency {eff!r}")
    elif term == "memory":
        field, value = "memory_bandwidth", e.bandwidth
        why = f"{fmt_number(w.bytes)} bytes at {fmt_number(e.bandwidth)} B/s × PPP {e.ppp_memory:g}"
    elif term == "fresh_pages":
        field, value = "alloc_bandwidth", d.alloc_bandwidth
        why = f"{fmt_number(w.fresh_bytes)} bytes to fresh pages"
    elif term == "overhead":
        field = ("update_overhead" if w.update else "backward_overhead" if w.backward and d.backward_overhead
                 else "train_overhead" if w.train and d.train_overhead else "layer_overhead")
        value, why = getattr(d, field), f"{w.calls} {'parameter tensors' if w.update else 'layer calls'}"
    else:
        field, value = "model", e.report.name
        why = f"{fmt_number(w.flops)} FLOPs and {fmt_number(w.bytes)} bytes"
    error = NetworkError if field == "model" else DeviceError
    raise error(f"the time is not a finite number ({why}): the figure is out of range or the work too large",
                node=d.id, field=field, value=value)
