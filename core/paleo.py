"""The PALEO time model (Qi, Sparks, Talwalkar, "Paleo: a performance model for deep neural networks", ICLR 2017).

Per layer and pass, time = read + compute + write, where
    compute = FLOPs / (peak × PPP_compute)          memory = bytes / (bandwidth × PPP_memory)
PPP, the platform percent of peak, says how much of the datasheet figure the software reaches: 1.0 means "peak"
(an optimistic bound, not a prediction); cuDNN-class libraries come close to 1, frameworks with overhead 0.5 or less.
The ``roofline`` variant takes max(compute, memory) per layer instead of the sum (perfect overlap).

A training step is forward + backward + weight update (+ gradient all-reduce across data-parallel workers).
Every total here is arithmetic on sums precomputed once per network, so sweeping devices and batch sizes is cheap.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property, lru_cache
from math import ceil, log2
from typing import Any

from . import cpu_heap
from .devices import Device, DeviceDB, Interconnect, load_devices
from .errors import CalcError
from .graph import Compiled, NodeInfo
from .precision import Precision, optimizer_states
from .report import Report
from .registry import numel
from .roofline import RooflinePoint, ridge

from .choices import ALLREDUCE, CONV_ALGORITHMS, SCALING_MODES, VARIANTS
FUSED_CATEGORIES = ("activation", "norm")   # fused view: these run in the producer's epilogue, no memory round trip

# Weight update per trainable parameter: (FLOPs, weight-sized accesses, gradient accesses, state accesses)
UPDATE = {
    "sgd": (2, 2, 1, 0),            # w −= lr·g: multiply, subtract; read w, g; write w
    "sgd_momentum": (4, 2, 1, 2),   # v = μv + g; w −= lr·v; read w, g, v; write w, v
    "adam": (13, 2, 1, 4),          # m, v moments (7), bias corrections (2), w −= lr·m̂/(√v̂+ε) (4); r/w m, v
    "adamw": (15, 2, 1, 4),         # Adam + decoupled weight decay w −= lr·λ·w (2)
}


# == convolution algorithms =======================================================================================

def conv_algorithm_flops(info: NodeInfo, algorithm: str) -> tuple[int, int] | None:
    """(FLOPs per sample, FLOPs per batch) of a conv2d forward pass with ``algorithm``; None where it does not apply.

    direct/GEMM: 2·MACs. Winograd F(2×2, 3×3) (Lavin & Gray 2016) for 3×3, stride 1, groups 1: per 2×2 output tile
    16 multiply-adds per (C_in, C_out) pair instead of 36, plus input (32 adds per tile and C_in) and output (24 adds
    per tile and C_out) transforms; filter transforms (42 FLOPs per pair) once per batch.
    FFT (Mathieu et al. 2014) for stride 1, groups 1: real 2-D FFTs of size M = H_pad·W_pad at 2.5·M·log2 M FLOPs for
    each input and output channel, a complex multiply-add (8 FLOPs) per half-spectrum point per channel pair
    (4·C_in·C_out·M); filter FFTs (C_in·C_out of them) once per batch.
    """
    if info.op != "conv2d":
        return None
    a = info.attrs
    c_in, h, w = info.in_shapes[0]
    c_out, ho, wo = info.out_shape
    if algorithm == "direct":
        return info.cost.flops, 0
    plain = a["stride"] == (1, 1) and a["dilation"] == (1, 1) and a["groups"] == 1
    if not plain:
        return None
    if algorithm == "winograd":
        if a["kernel_size"] != (3, 3):
            return None
        tiles = ceil(ho / 2) * ceil(wo / 2)
        return 32 * tiles * c_in * c_out + 32 * tiles * c_in + 24 * tiles * c_out, 42 * c_in * c_out
    if algorithm == "fft":
        pad = a["padding"]
        ph, pw = (0, 0) if pad == "valid" else ((a["kernel_size"][0] - 1) // 2, (a["kernel_size"][1] - 1) // 2) \
            if pad == "same" else pad
        m = (h + 2 * ph) * (w + 2 * pw)
        fft = 2.5 * m * log2(m) if m > 1 else 0
        return int(fft * (c_in + c_out) + 4 * c_in * c_out * m), int(fft * c_in * c_out)
    raise CalcError(f"unknown convolution algorithm; choose one of {', '.join(CONV_ALGORITHMS)}",
                    field="conv_algorithm", value=algorithm)


@dataclass(frozen=True)
class _Work:
    """Per-layer work of one network in elements and FLOPs (precision-independent), and its sums."""

    nodes: tuple[NodeInfo, ...]
    fwd_f: tuple[int, ...]
    fwd_a: tuple[int, ...]      # activation elements per sample, read + written
    fwd_w: tuple[int, ...]      # weight and buffer elements, per batch
    bwd_f: tuple[int, ...]
    bwd_a: tuple[int, ...]
    bwd_w: tuple[int, ...]
    bwd_x: tuple[int, ...]      # fixed-width saved buffers read back (indices, masks, statistics), bytes per sample

    @cached_property
    def sums(self) -> tuple[int, ...]:
        return tuple(sum(x) for x in (self.fwd_f, self.fwd_a, self.fwd_w, self.bwd_f, self.bwd_a, self.bwd_w,
                                      self.bwd_x))


def _fused_fwd_act(n: NodeInfo) -> int:
    if n.rule.category in FUSED_CATEGORIES:
        return 0
    if n.op in ("add", "mul"):                 # the main operand is in registers; the others are read
        return sum(numel(sh) for sh in n.in_shapes[1:])
    return n.in_elems + n.out_elems if n.moves_data else 0


@lru_cache(maxsize=64)
def _work(compiled: Compiled, fused: bool) -> _Work:
    nodes = compiled.nodes
    if fused:
        fwd_a = tuple(_fused_fwd_act(n) for n in nodes)
        fwd_w = tuple(0 if n.rule.category in FUSED_CATEGORIES else n.params.trainable + n.params.frozen + n.params.buffers
                      for n in nodes)
    else:
        fwd_a = tuple(n.in_elems + n.out_elems if n.moves_data else 0 for n in nodes)
        fwd_w = tuple(n.params.trainable + n.params.frozen + n.params.buffers for n in nodes)
    return _Work(nodes, tuple(n.cost.flops for n in nodes), fwd_a, fwd_w,
                 tuple(n.bwd_flops for n in nodes),
                 tuple(0 if fused and n.rule.category in FUSED_CATEGORIES else n.bwd_act_elems for n in nodes),
                 tuple(n.bwd_weight_elems for n in nodes),
                 tuple(n.bwd_extra_bytes for n in nodes))


def op_class(info: NodeInfo) -> str:
    """Which calibrated efficiency and overhead apply to a node (see devices.OP_CLASSES)."""
    if info.op in ("conv2d", "conv_transpose2d"):
        return "grouped_conv" if info.attrs["groups"] > 1 else "conv"
    if info.rule.category in ("linear", "matmul", "attention"):
        return "linear"
    if info.rule.category == "pool":
        # a global pool (one number per channel) streams its input once, as elementwise work does; windowed
        # pooling revisits each input several times and runs far slower on a CPU
        return "elementwise" if all(d == 1 for d in info.out_shape[1:]) else "pool"
    return "elementwise"


def _class_figure(figures: dict, cls: str, default: float) -> float:
    """A device's figure for a class; a calibration made before pooling had its own class gives it elementwise's."""
    if cls in figures:
        return figures[cls]
    return figures.get("elementwise", default) if cls == "pool" else default


def _conv_choice(info: NodeInfo, algorithm: str, batch: int) -> tuple[str, int]:
    """(algorithm used, forward FLOPs at this batch) for one node."""
    direct = info.cost.flops * batch
    if info.op != "conv2d" or algorithm == "direct":
        return "direct", direct
    options = {"direct": direct}
    for alg in ("winograd", "fft") if algorithm == "auto" else (algorithm,):
        r = conv_algorithm_flops(info, alg)
        if r is not None:
            options[alg] = r[0] * batch + r[1]
    if algorithm != "auto":
        return (algorithm, options[algorithm]) if algorithm in options else ("direct", direct)
    best = min(options, key=options.get)
    return best, options[best]


# == estimate =====================================================================================================

def _check_ppp(value: Any, field: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value <= 1:
        raise CalcError("must be a number in (0, 1]: 1.0 means the datasheet peak", field=field, value=value)
    return float(value)


def _choice(value: str, options: tuple, field: str) -> str:
    if value not in options:
        raise CalcError(f"choose one of {', '.join(options)}", field=field, value=value)
    return value


def allreduce_time(nbytes: float, workers: int, link: Interconnect, ppp_comm: float = 1.0,
                   algorithm: str = "ring") -> float:
    """Seconds to all-reduce ``nbytes`` of gradients across ``workers`` over ``link`` (bandwidth per direction).

    ring: 2(K−1)/K · bytes / B + 2(K−1)·latency (reduce-scatter then all-gather, Patarasuk & Yuan 2009);
    tree: 2·⌈log2 K⌉ · (bytes / B + latency) (reduce up a binary tree, broadcast down);
    parameter server: the server's link carries every worker's push and pull: 2K · bytes / B + 2·latency.
    One worker communicates nothing.
    """
    _choice(algorithm, ALLREDUCE, "allreduce")
    if workers <= 1:
        return 0.0
    bw = link.bandwidth * ppp_comm
    k = workers
    if algorithm == "ring":
        return 2 * (k - 1) / k * nbytes / bw + 2 * (k - 1) * link.latency
    if algorithm == "tree":
        return 2 * ceil(log2(k)) * (nbytes / bw + link.latency)
    return 2 * k * nbytes / bw + 2 * link.latency


class Estimate:
    """PALEO times for one network on one device at one batch size, precision and set of PPP factors."""

    def __init__(self, report: Report, device: Device, *, ppp: float = 1.0, ppp_memory: float | None = None,
                 variant: str = "paleo", conv_algorithm: str = "direct", fused: bool = False, workers: int = 1,
                 link: Interconnect | None = None, ppp_comm: float = 1.0, allreduce: str = "ring"):
        self.report = report
        self.device = device
        self.precision: Precision = report.precision
        self.ppp = _check_ppp(ppp, "ppp")
        self.ppp_memory = _check_ppp(self.ppp if ppp_memory is None else ppp_memory, "ppp_memory")
        self.ppp_comm = _check_ppp(ppp_comm, "ppp_comm")
        self.variant = _choice(variant, VARIANTS, "variant")
        self.conv_algorithm = _choice(conv_algorithm, CONV_ALGORITHMS, "conv_algorithm")
        self.allreduce = _choice(allreduce, ALLREDUCE, "allreduce")
        self.fused = bool(fused)
        if isinstance(workers, bool) or not isinstance(workers, int) or not 1 <= workers <= 65536:
            raise CalcError("must be an integer from 1 to 65,536", field="workers", value=workers)
        if workers > 1 and link is None:
            raise CalcError("data-parallel training over several workers needs an interconnect (--link)",
                            field="link", value=None)
        self.workers = workers
        self.link = link
        self.peak = device.peak(self.precision.compute)          # raises, naming the precisions it has
        self.bandwidth = device.memory_bandwidth
        self.work = _work(report.compiled, self.fused)

    @cached_property
    def fresh_bytes(self) -> tuple[int, ...]:
        """Per node, the forward pass's bytes written to fresh pages: on a device with a page-fault rate (a
        calibrated Linux CPU: ``alloc_threshold`` is glibc's largest mmap threshold), glibc's malloc replayed over
        the pass (``core.cpu_heap``); zeros elsewhere (a GPU's caching allocator reuses its memory)."""
        dev, p = self.device, self.precision
        if not (dev.alloc_threshold and dev.alloc_bandwidth):
            return (0,) * len(self.work.nodes)
        return cpu_heap.fresh_bytes(self.report.compiled, self.report.batch_size, p.activation, p.weight,
                                    int(dev.alloc_threshold))

    # -- per-pass totals --------------------------------------------------------------------------------------
    def _pass_time(self, flops: float, act: float, weights: float, xbytes: float = 0,
                   info: NodeInfo | None = None, fresh: float = 0) -> tuple[float, float, float]:
        """(compute s, memory s, total s) for ``flops`` at this batch, ``act`` activation elements and ``xbytes``
        fixed-width bytes per sample, and ``weights`` weight elements per batch. A calibrated device's efficiency
        for the node's class of work multiplies the PPP; its per-layer overhead (the fixed cost of calling a layer:
        dispatch, allocation, library setup) is added to the total of every layer that runs; ``fresh`` bytes
        written to pages the process has not touched yet (``fresh_bytes``) cost the device's page-fault rate."""
        p, n = self.precision, self.report.batch_size
        dev = self.device
        cls = op_class(info) if info is not None and (dev.efficiency or dev.layer_overhead) else None
        eff = _class_figure(dev.efficiency, cls, 1.0) if cls else 1.0
        compute = flops / (self.peak * self.ppp * eff)
        memory = (act * n * p.activation + xbytes * n + weights * p.weight) / (self.bandwidth * self.ppp_memory)
        if fresh:
            memory += fresh / dev.alloc_bandwidth
        total = max(compute, memory) if self.variant == "roofline" else compute + memory
        if cls and (flops or memory) and not info.rule.alias:
            total += _class_figure(dev.layer_overhead, cls, 0.0)
        return compute, memory, total

    def _layer_sum(self, which: str) -> tuple[float, float, float, float, float, float]:
        """(FLOPs, bytes, compute s, memory s, total s, overhead s) of one pass, summed over layers."""
        w, n, p = self.work, self.report.batch_size, self.precision
        per_layer = self.variant == "roofline" or self.conv_algorithm != "direct" or bool(self.device.efficiency) \
            or bool(self.device.layer_overhead) or bool(self.device.alloc_threshold)
        zero = (0,) * len(w.nodes)
        if which == "fwd":
            fs, acts, weights, xs = w.fwd_f, w.fwd_a, w.fwd_w, zero
        else:
            fs, acts, weights, xs = w.bwd_f, w.bwd_a, w.bwd_w, w.bwd_x
        if not per_layer:
            i = 0 if which == "fwd" else 3
            x = 0 if which == "fwd" else w.sums[6]
            flops = w.sums[i] * n
            c, m, t = self._pass_time(flops, w.sums[i + 1], w.sums[i + 2], x)
            return flops, (w.sums[i + 1] * p.activation + x) * n + w.sums[i + 2] * p.weight, c, m, t, 0.0
        tot = [0.0, 0.0, 0.0, 0.0, 0.0, 0.0]
        roofline = self.variant == "roofline"
        for k, info in enumerate(w.nodes):
            flops = self._layer_flops(info, fs[k])
            c, m, t = self._pass_time(flops, acts[k], weights[k], xs[k], info,
                                      self.fresh_bytes[k] if which == "fwd" else 0)
            tot[0] += flops
            tot[1] += (acts[k] * p.activation + xs[k]) * n + weights[k] * p.weight
            tot[2] += c
            tot[3] += m
            tot[4] += t
            tot[5] += t - (max(c, m) if roofline else c + m)
        return tuple(tot)

    def _layer_flops(self, info: NodeInfo, per_sample: int) -> float:
        n = self.report.batch_size
        if self.conv_algorithm == "direct" or info.op != "conv2d" or not info.cost.flops:
            return per_sample * n
        _, alg = _conv_choice(info, self.conv_algorithm, n)
        return per_sample * n * alg / (info.cost.flops * n)   # backward convs change by the same factor

    @cached_property
    def totals(self) -> dict:
        fwd = self._layer_sum("fwd")
        bwd = self._layer_sum("bwd")
        r, p = self.report, self.precision
        trainable = r.compiled.trainable
        uf, uw, ug, us = UPDATE[r.optimizer]
        states = optimizer_states(r.optimizer)
        update_flops = uf * trainable
        update_bytes = trainable * (uw * (p.master or p.weight) + ug * p.grad + (us * p.state if states else 0))
        update_c = update_flops / (self.peak * self.ppp)
        update_m = update_bytes / (self.bandwidth * self.ppp_memory)
        update_s = max(update_c, update_m) if self.variant == "roofline" else update_c + update_m
        comm_s = allreduce_time(trainable * p.grad, self.workers, self.link, self.ppp_comm, self.allreduce) \
            if self.link else 0.0
        step = fwd[4] + bwd[4] + update_s + comm_s
        n = r.batch_size
        fresh = sum(self.fresh_bytes)
        return {
            "forward_s": fwd[4], "forward_compute_s": fwd[2], "forward_memory_s": fwd[3],
            "forward_overhead_s": fwd[5],
            "forward_fresh_bytes": fresh,      # written to fresh pages (page faults); their time is in forward_memory_s
            "forward_fresh_s": fresh / self.device.alloc_bandwidth if fresh else 0.0,
            "backward_s": bwd[4], "backward_compute_s": bwd[2], "backward_memory_s": bwd[3],
            "backward_overhead_s": bwd[5],
            "update_s": update_s, "communication_s": comm_s,
            "training_step_s": step,
            "samples_per_s": n * self.workers / step if step else None,     # training throughput, all workers
            "inference_samples_per_s": n / fwd[4] if fwd[4] else None,
            "forward_flops": fwd[0], "forward_bytes": fwd[1], "backward_flops": bwd[0], "backward_bytes": bwd[1],
            "update_flops": update_flops, "update_bytes": update_bytes,
            "batch_size": n, "workers": self.workers,
            "fits_in_memory": (r.totals["training_bytes"] <= self.device.memory_capacity)
            if self.device.memory_capacity else None,
        }

    @cached_property
    def roofline(self) -> dict:
        t = self.totals
        pt = RooflinePoint.of(self.report.name, t["forward_flops"], t["forward_bytes"], self.peak, self.bandwidth)
        bwd = RooflinePoint.of("backward", t["backward_flops"], t["backward_bytes"], self.peak, self.bandwidth)
        train = RooflinePoint.of("training step", t["forward_flops"] + t["backward_flops"],
                                 t["forward_bytes"] + t["backward_bytes"], self.peak, self.bandwidth)
        return {
            "peak_flop_per_s": self.peak, "bandwidth_bytes_per_s": self.bandwidth,
            "ridge_flop_per_byte": ridge(self.peak, self.bandwidth),
            "arithmetic_intensity": pt.intensity, "attainable_flop_per_s": pt.attainable, "bound": pt.bound,
            "backward_arithmetic_intensity": bwd.intensity, "backward_bound": bwd.bound,
            "training_arithmetic_intensity": train.intensity, "training_bound": train.bound,
        }

    @cached_property
    def layers(self) -> list[dict]:
        w, n, p = self.work, self.report.batch_size, self.precision
        total_fwd = self.totals["forward_s"] or 1.0
        rows = []
        for k, info in enumerate(w.nodes):
            f = self._layer_flops(info, w.fwd_f[k])
            fb = w.fwd_a[k] * n * p.activation + w.fwd_w[k] * p.weight
            c, m, t = self._pass_time(f, w.fwd_a[k], w.fwd_w[k], 0, info, self.fresh_bytes[k])
            bf = self._layer_flops(info, w.bwd_f[k])
            bc, bm, bt = self._pass_time(bf, w.bwd_a[k], w.bwd_w[k], w.bwd_x[k], info)
            bb = (w.bwd_a[k] * p.activation + w.bwd_x[k]) * n + w.bwd_w[k] * p.weight
            fwd_pt = RooflinePoint.of(info.name, f, fb, self.peak, self.bandwidth)
            bwd_pt = RooflinePoint.of(info.name, bf, bb, self.peak, self.bandwidth)
            rows.append({
                "name": info.name, "op": info.op,
                "conv_algorithm": _conv_choice(info, self.conv_algorithm, n)[0] if info.op == "conv2d" else None,
                "forward_flops": f, "forward_bytes": fb, "forward_compute_s": c, "forward_memory_s": m,
                "forward_s": t, "share": t / total_fwd,
                "arithmetic_intensity": fwd_pt.intensity, "attainable_flop_per_s": fwd_pt.attainable,
                "bound": fwd_pt.bound,
                "backward_flops": bf, "backward_bytes": bb, "backward_s": bt,
                "backward_arithmetic_intensity": bwd_pt.intensity, "backward_bound": bwd_pt.bound,
            })
        return rows

    def to_dict(self) -> dict:
        return {
            "model": self.report.name, "input_shape": list(self.report.input_shape),
            "batch_size": self.report.batch_size, "dtype": self.report.dtype, "device": self.device.id,
            "device_name": self.device.name, "ppp": self.ppp, "ppp_memory": self.ppp_memory,
            "variant": self.variant, "conv_algorithm": self.conv_algorithm, "fused": self.fused,
            "workers": self.workers, "link": self.link.id if self.link else None,
            "totals": self.totals, "roofline": self.roofline, "layers": self.layers,
        }


def resolve_device(device: Any, db: DeviceDB | None = None) -> Device:
    if isinstance(device, Device):
        return device
    return (db or load_devices()).device(device)


def estimate(model: Any, device: Any, batch_size: int = 1, dtype: str = "fp32", *, ppp: float = 1.0,
             ppp_memory: float | None = None, optimizer: str = "sgd_momentum", variant: str = "paleo",
             conv_algorithm: str = "direct", fused: bool = False, workers: int = 1, link: Any = None,
             ppp_comm: float = 1.0, allreduce: str = "ring", input_shape: Any = None,
             db: DeviceDB | None = None) -> Estimate:
    """PALEO estimate of ``model`` (name, JSON path, Network or Report) on ``device`` (id, name or Device)."""
    from .api import analyze

    if isinstance(model, Report):
        report = model if (model.batch_size, model.dtype, model.optimizer) == (batch_size, dtype, optimizer) \
            else Report(model.compiled, batch_size, dtype, optimizer)
    else:
        report = analyze(model, input_shape=input_shape, batch_size=batch_size, dtype=dtype, optimizer=optimizer)
    dev = resolve_device(device, db)
    lk = None
    if link is not None:
        lk = link if isinstance(link, Interconnect) else (db or load_devices()).link(link)
    return Estimate(report, dev, ppp=ppp, ppp_memory=ppp_memory, variant=variant, conv_algorithm=conv_algorithm,
                    fused=fused, workers=workers, link=lk, ppp_comm=ppp_comm, allreduce=allreduce)


def scaling(model: Any, device: Any, link: Any, workers=(1, 2, 4, 8), batch_size: int = 64, mode: str = "strong",
            **kw) -> list[dict]:
    """Data-parallel scaling. strong: the global batch ``batch_size`` is split over K workers (⌈B/K⌉ each, the
    last ones short when K does not divide B, so a step takes as long as the fullest worker); weak: every worker
    keeps ``batch_size``. Speed-up is throughput relative to one worker; efficiency = speed-up / K."""
    _choice(mode, SCALING_MODES, "mode")

    def run(k: int) -> dict:
        per = ceil(batch_size / k) if mode == "strong" else batch_size
        t = estimate(model, device, batch_size=per, workers=k, link=link if k > 1 else None, **kw).totals
        samples = batch_size if mode == "strong" else batch_size * k
        return {"workers": k, "per_worker_batch": per, "compute_s": t["training_step_s"] - t["communication_s"],
                "communication_s": t["communication_s"], "training_step_s": t["training_step_s"],
                "samples_per_s": samples / t["training_step_s"]}

    base = run(1)["samples_per_s"]
    rows = []
    for k in workers:
        row = run(k)
        row["speedup"] = row["samples_per_s"] / base
        row["efficiency"] = row["speedup"] / k
        rows.append(row)
    return rows


def sweep(model: Any, devices, batch_sizes, dtype: str | None = "fp32", **kw) -> list[Estimate]:
    """Estimates for every device × batch size, sharing one analysis per batch size (what the app's device
    comparison and time-vs-batch charts use). ``dtype=None`` picks fp32 where a device has it, else its first
    precision."""
    from .api import analyze
    from .precision import PRECISIONS

    optimizer = kw.pop("optimizer", "sgd_momentum")
    input_shape = kw.pop("input_shape", None)
    db = kw.pop("db", None)
    devs = [resolve_device(d, db) for d in devices]
    reports: dict = {}
    out = []
    for dev in devs:
        dt = dtype or ("fp32" if "fp32" in dev.peak_flops else next(k for k in dev.precisions if k in PRECISIONS))
        for b in batch_sizes:
            key = (b, dt)
            if key not in reports:
                reports[key] = analyze(model, input_shape=input_shape, batch_size=b, dtype=dt, optimizer=optimizer)
            out.append(Estimate(reports[key], dev, **kw))
    return out
