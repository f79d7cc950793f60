"""The PALEO time model (Qi, Sparks, Talwalkar, "Paleo: a performance model for deep neural networks", ICLR 2017).

Per layer and pass, a time is a sum of named terms (``TERMS``), each a small function of the layer's work, the
device and the settings:
    compute  = FLOPs / (peak × PPP_compute × efficiency of the class of work)
    memory   = bytes / (bandwidth × PPP_memory)
    fresh pages = bytes first written to fresh pages / page-fault rate   (a calibrated Linux CPU)
    overhead = the fixed cost of each layer call, by class of work      (a calibrated device)
A term is part of a device's time when the device's fields say so (``Term.applies``). PPP, the platform percent of
peak, says how much of the datasheet figure the software reaches: 1.0 means "peak" (an optimistic bound, not a
prediction); cuDNN-class libraries come close to 1, frameworks with overhead 0.5 or less. The ``roofline`` variant
overlaps compute with memory (their max) instead of adding them (``combine``).

A training step is forward + backward + weight update (+ gradient all-reduce across data-parallel workers). Each
network's work is counted once (``network_work``), so sweeping devices and batch sizes is arithmetic on it.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from functools import cached_property, lru_cache
from math import ceil, isfinite, log2
from typing import Any, Callable

from . import cpu_heap, gpu_model
from .choices import (
    ALLREDUCE,
    CONV_ALGORITHMS,
    DEFAULT_DTYPE,
    DEFAULT_OPTIMIZER,
    FITTED_PRECISIONS,
    LAUNCHES,
    SCALING_MODES,
    VARIANTS,
)
from .devices import LATENCY_MAX, Device, DeviceDB, Interconnect, load_devices
from .errors import CalcError, DeviceError, NetworkError
from .graph import Compiled, NodeInfo, compile_network
from .ir import Network
from .precision import PRECISIONS, Precision, optimizer
from .registry import WORK_FALLBACK, numel
from .report import Report, check_batch
from .roofline import RooflinePoint, ridge

# == convolution algorithms =======================================================================================

def conv_algorithm_flops(info: NodeInfo, algorithm: str) -> tuple[int, int] | None:
    """(FLOPs per sample, FLOPs per batch) of a node's forward pass computed with ``algorithm``; None where it does
    not apply. "direct" is the op's own count; the others are its rule's ``algorithms`` (conv2d: Winograd, FFT)."""
    if algorithm not in CONV_ALGORITHMS or algorithm == "auto":
        raise CalcError(f"unknown convolution algorithm; choose one of {', '.join(CONV_ALGORITHMS)}",
                        field="conv_algorithm", value=algorithm)
    if info.rule.algorithms is None:
        return None
    if algorithm == "direct":
        return info.cost.flops, 0
    return info.rule.algorithms(info.ctx, algorithm)


@dataclass(frozen=True)
class PassWork:
    """One layer's work in one pass, in the units that do not depend on batch or precision: FLOPs, activation
    elements read and written, and fixed-width bytes read back (indices, masks, statistics), all per sample; weight
    elements touched (per batch); and the layer calls that pay a per-call overhead (0 or 1 for one layer, a count
    for a class of layers)."""

    flops: int = 0
    act: int = 0
    xbytes: int = 0
    weights: int = 0
    calls: int = 0

    def __add__(self, o: "PassWork") -> "PassWork":
        return PassWork(self.flops + o.flops, self.act + o.act, self.xbytes + o.xbytes, self.weights + o.weights,
                        self.calls + o.calls)


@dataclass(frozen=True)
class LayerWork:
    node: NodeInfo
    work_class: str              # core.registry.WORK_CLASSES, from the node's rule
    forward: PassWork
    backward: PassWork


@dataclass(frozen=True)
class NetworkWork:
    """Every layer's work, and its sum per class of work and over all layers for each pass (what a PALEO sum
    needs)."""

    layers: tuple[LayerWork, ...]
    forward_by_class: dict
    backward_by_class: dict
    forward_total: PassWork
    backward_total: PassWork


def _runs(n: NodeInfo, w: PassWork, forward: bool = False) -> int:
    """1 when the layer is a call of its own that does work, else 0: a view is not, nor in the forward a stored
    tensor (an ``nn.Parameter`` or buffer: reading one dispatches nothing, its consumer's kernel reads it; in the
    backward its gradient is a reduction over the batch, a kernel). Not counted either, though PyTorch runs them:
    the kernels that build a tensor the IR derives from a stored table (MaxViT's relative-position bias, an index
    and a copy each forward)."""
    if n.rule.alias or (forward and n.rule.stored):
        return 0
    return int(bool(w.flops or w.act or w.xbytes or w.weights))


def _layer_work(n: NodeInfo, fused: bool) -> LayerWork:
    """A node's work per pass. Fused (``OpRule.fusion``): an epilogue op moves nothing of its own; an operand op
    reads only its other operands (the first is in registers)."""
    fusion = n.rule.fusion if fused else "none"
    weights = n.params.trainable + n.params.frozen + n.params.buffers
    if fusion == "epilogue":
        fwd_act, fwd_w = 0, 0
    elif fusion == "operand":
        fwd_act, fwd_w = sum(numel(sh) for sh in n.in_shapes[1:]), weights
    else:
        fwd_act, fwd_w = n.in_elems + n.out_elems if n.moves_data else 0, weights
    fwd = PassWork(n.cost.flops, fwd_act, 0, fwd_w)
    bwd = PassWork(n.bwd_flops, 0 if fusion == "epilogue" else n.bwd_act_elems, n.bwd_extra_bytes,
                   n.bwd_weight_elems)
    return LayerWork(n, n.rule.work_class(n.ctx), replace(fwd, calls=_runs(n, fwd, forward=True)),
                     replace(bwd, calls=_runs(n, bwd)))


# Element accesses per parameter of torch.optim's per-parameter loop (torch 2.14 ``_single_tensor_sgd`` /
# ``_single_tensor_adam``, the CPU default), kernel by kernel: (weight, gradient, state, temporaries).
#   sgd: w.add_(g): r/w w, r g.
#   sgd_momentum: v.mul_(μ) r/w v; v.add_(g) r/w v, r g; w.add_(v) r/w w, r v → (2, 1, 5, 0), 8 against the
#     table's fused 5.
#   adam: m.lerp_(g) r/w m, r g; v.mul_(β2) r/w v; v.addcmul_(g, g) r/w v, r g; v.sqrt() r v, w t; t / c r t, w t';
#     t'.add_(ε) r/w t'; w.addcdiv_(m, t') r/w w, r m, r t' → (2, 2, 8, 6); adamw adds w.mul_(1 − lr·λ): r/w w.
EAGER_ACCESSES = {"sgd": (2, 1, 0, 0), "sgd_momentum": (2, 1, 5, 0), "adam": (2, 2, 8, 6), "adamw": (4, 2, 8, 6)}


def eager_update_bytes(trainable: int, p: Precision, opt_name: str) -> float:
    """Bytes torch.optim's kernels move for ``trainable`` parameters, one by one or batched (EAGER_ACCESSES)."""
    w, g, st, tmp = EAGER_ACCESSES[opt_name]
    return trainable * (w * (p.master or p.weight) + g * p.grad + (st + tmp) * (p.state or p.weight))


def param_tensors(n: NodeInfo) -> int:
    """The trainable parameter tensors of a node, as ``module.parameters()`` lists them: none without trainable
    parameters; a normalization's weight and bias (``affine``/``elementwise_affine``); else a weight, and a bias
    where the op has one (conv, linear)."""
    if not n.params.trainable:
        return 0
    if n.attrs.get("affine") or n.attrs.get("elementwise_affine"):
        return 2
    return 1 + bool(n.attrs.get("bias"))


def cast_work(lw: LayerWork, p: Precision, which: str) -> Work | None:
    """Mixed precision as PyTorch's autocast runs it (the predicted variant): every forward casts each fp32
    parameter tensor of a conv or linear layer to fp16, one kernel per tensor reading its master copy and writing
    the working one (``master`` + ``weight`` bytes a parameter: 4 + 2), and the backward casts each gradient back
    (``grad`` + ``master``: 2 + 4). The trainable tensors only (``param_tensors``), as the rule was fitted: a frozen
    layer's casts are not charged. None for other layers and precisions (no master copy). ``which``: forward,
    train_forward (under autograd) or backward. Fitted, not assumed: docs/benchmarks.md, tried 25."""
    tensors = param_tensors(lw.node) if p.master and gpu_model.compute_class(lw.work_class) else 0
    if not tensors:
        return None
    trainable = lw.node.params.trainable
    if which == "backward":
        return Work("elementwise", 0, trainable * (p.grad + p.master), calls=tensors, backward=True, cast=True)
    return Work("elementwise", 0, trainable * (p.master + p.weight), calls=tensors, train=which == "train_forward",
                cast=True)


def _by_class(layers, which: str) -> dict:
    out: dict[str, PassWork] = {}
    for lw in layers:
        w = getattr(lw, which)
        out[lw.work_class] = out.get(lw.work_class, PassWork()) + w
    return out


@lru_cache(maxsize=64)
def network_work(compiled: Compiled, fused: bool) -> NetworkWork:
    """Per-layer work of a compiled network, computed once and shared by every device, batch and precision."""
    layers = tuple(_layer_work(n, fused) for n in compiled.nodes)
    fwd, bwd = _by_class(layers, "forward"), _by_class(layers, "backward")
    return NetworkWork(layers, fwd, bwd, sum(fwd.values(), PassWork()), sum(bwd.values(), PassWork()))


@lru_cache(maxsize=64)
def _trainable_layers(compiled: Compiled) -> int:
    """The layers that hold trainable parameters (the predicted variant's optimizer step: a kernel call each)."""
    return sum(1 for n in compiled.nodes if n.params.trainable)


def _figure(figures: dict, work_class: str | None, default: float) -> float:
    """A device's figure for a class of work; a class it has no figure for uses its fallback's (WORK_FALLBACK):
    a calibration made before pooling had its own class gives pooling elementwise's."""
    if work_class is None:
        return default
    if work_class in figures:
        return figures[work_class]
    fallback = WORK_FALLBACK.get(work_class)
    return figures.get(fallback, default) if fallback else default


def _conv_choice(info: NodeInfo, algorithm: str, batch: int) -> tuple[str, int]:
    """(algorithm used, forward FLOPs at this batch) for one node."""
    direct = info.cost.flops * batch
    if info.rule.algorithms is None or algorithm == "direct":
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


# == the terms of a time ==========================================================================================

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


@dataclass(frozen=True)
class Term:
    """One named part of a time: ``seconds(work, estimate)``. ``group`` says how a variant combines it: PALEO
    adds every term; the roofline variant overlaps "compute" with "memory" (their max) and adds "serial" terms.
    ``applies(device)``: the term is part of this device's time (its fields say so)."""

    name: str
    group: str
    seconds: Callable[[Work, "Estimate"], float]
    applies: Callable[[Device], bool]


def _efficiency(d: Device, backward: bool, train: bool = False) -> dict:
    """The device's efficiencies for a pass: a calibrated CPU's backward ones where it has them (autograd's
    backward kernels are not the forward's: depthwise and pooling backward run far slower), its training forward's
    (train mode, autograd recording) for a training step's forward, else the (inference) forward's."""
    if backward and d.backward_efficiency:
        return d.backward_efficiency
    return d.train_efficiency if train and d.train_efficiency else d.efficiency


def _overheads(d: Device, backward: bool, train: bool = False) -> dict:
    """The device's per-call overheads for a pass: a calibrated CPU's per autograd node in backward, or per layer
    call of a training forward, where it has them, else the forward's per layer call."""
    if backward and d.backward_overhead:
        return d.backward_overhead
    return d.train_overhead if train and d.train_overhead else d.layer_overhead


def _compute_s(w: Work, e: "Estimate") -> float:
    """FLOPs at the peak × PPP × the device's calibrated efficiency for the class of work and pass (1 if none)."""
    return w.flops / (e.peak * e.ppp * _figure(_efficiency(e.device, w.backward, w.train), w.work_class, 1.0))


def _memory_s(w: Work, e: "Estimate") -> float:
    """Bytes moved at the bandwidth × PPP_memory."""
    return w.bytes / (e.bandwidth * e.ppp_memory)


def _fresh_pages_s(w: Work, e: "Estimate") -> float:
    """Bytes first written to fresh pages (core.cpu_heap), at the measured page-fault rate: no PPP on a rate that
    was measured."""
    return w.fresh_bytes / e.device.alloc_bandwidth if w.fresh_bytes else 0.0


def _overhead_s(w: Work, e: "Estimate") -> float:
    """The fixed cost of calling a layer (dispatch, allocation, library setup), per call, by class of work and
    pass; for the optimizer step, per parameter tensor (a calibrated CPU's ``update_overhead``)."""
    if not w.calls:
        return 0.0
    if w.update:
        return w.calls * (e.device.update_overhead or 0.0)
    return w.calls * _figure(_overheads(e.device, w.backward, w.train), w.work_class, 0.0)


TERMS = (
    Term("compute", "compute", _compute_s, lambda d: True),
    Term("memory", "memory", _memory_s, lambda d: True),
    # a Linux CPU's runtime (glibc malloc): calibrate stores its largest mmap threshold and page-fault rate
    Term("fresh_pages", "memory", _fresh_pages_s, lambda d: bool(d.alloc_threshold and d.alloc_bandwidth)),
    Term("overhead", "serial", _overhead_s,
         lambda d: bool(d.layer_overhead or d.backward_overhead or d.update_overhead)),
)


_TERM_NAMES = tuple(t.name for t in TERMS)


def _g(x: Any) -> str:
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


# == the predicted variant, by arrays =============================================================================
# ``Estimate._layer_parts`` and ``Estimate.time`` say what the predicted variant computes, one Work at a time; a
# ResNet-152 is ~1,200 works, ~15 ms in Python. Here the same numbers come from arrays: the works' device-free part
# (FLOPs, bytes, calls, tiles at one batch and precision) is built once per network, batch and precision and shared
# by every device (``predicted_work``), and a device's times are a few numpy operations on it
# (``gpu_model.kernel_seconds``). Every operation is the per-work path's, in the same order, so the numbers are
# equal to the bit (tests/test_gpu_model_fast.py); the per-work path stays as the reference and for errors.

@dataclass(frozen=True)
class Kernels:
    """The works ``Estimate._layer_parts`` makes, as numpy float64 arrays with one entry per kernel: ``flops``,
    ``bytes``, ``calls``, ``tiles``; ``work_class``: the index of the class in ``gpu_model.COMPUTE_CLASSES`` (its
    length for any other class: no class efficiency); ``kind``: 0 forward, 1 backward (an input gradient or any
    other op's), 2 a weight gradient; ``cuda_core``: a depthwise conv's backward kernel on CUDA cores
    (``gpu_model.cuda_core_backward``; ``on_cuda_cores`` where the parameters have ``depthwise_backward``);
    ``blocks``: a one-block-per-channel kernel's thread blocks
    (``gpu_model.channel_blocks``; a forward entry holds the training step's, which an inference pass leaves
    out), 0 elsewhere; ``stem``: a kernel of a conv over ≤ 3 channels in a tensor-core precision (``Work.stem``;
    ``Estimate._predicted`` clears it on a device without the CUDA-core peak)."""

    flops: Any
    bytes: Any
    calls: Any
    tiles: Any
    work_class: Any
    kind: Any
    cuda_core: Any
    blocks: Any
    stem: Any


@dataclass(frozen=True)
class PredictedWork:
    """The predicted variant's works for a network at one batch size and precision, no device in them. ``kernels``
    holds 5 × L entries for L layers: the forward works; each layer's first backward work (the input gradient of a
    layer split in two, else its one work); its second (the weight gradient of a split layer; an empty work
    elsewhere, whose times are 0); its forward cast and its backward cast (mixed precision's, ``cast_work``; empty
    works elsewhere). ``rows``: (forward FLOPs, forward bytes, backward FLOPs, backward bytes, the backward's
    kernels, the forward's kernels) per layer, as ``PassTime`` sums them (ints stay ints); a pass's kernels are
    ((kernel index, FLOPs, bytes), …) where it has more than one, else None. ``totals``: the passes' (FLOPs, bytes)
    summed over the layers in order."""

    kernels: Kernels
    layers: int
    rows: tuple
    totals: dict
    algorithms: tuple                # per layer: the conv algorithm the rows name (None: the op has no choice)


def _add_all(values, start=0):
    """``start + v0 + v1 + …`` in order, as ``PassTime.__add__`` chains them (``sum`` of floats may compensate)."""
    for v in values:
        start = start + v
    return start


@lru_cache(maxsize=32)
def _predicted_layers(compiled: Compiled, fused: bool, compute: str) -> tuple:
    """Per layer, what ``predicted_work`` reads that no batch size changes: (layer work, the Winograd FLOPs
    (per sample, per batch) where cuDNN runs it (``gpu_model.uses_winograd``), the algorithm the row names, the
    class index, and for a conv or linear layer with weight gradients: (elements its weight gradient reads and
    writes: dy and the saved inputs; its input gradient's: dy and the input gradients; parameters the input
    gradient reads))."""
    none, out = len(gpu_model.COMPUTE_CLASSES), []
    for lw in network_work(compiled, fused).layers:
        node = lw.node
        wino = gpu_model.uses_winograd(node, compute)
        gc = gpu_model.compute_class(lw.work_class)
        cls = gpu_model.COMPUTE_CLASSES.index(gc) if gc else none
        split = None
        if node.bwd_weight_flops and cls != none:
            split = (node.out_elems + sum(numel(node.in_shapes[i]) for i in node.saves.inputs),
                     node.out_elems + sum(numel(sh) for sh, g in zip(node.in_shapes, node.grad_in) if g),
                     node.params.trainable + node.params.frozen)
        out.append((lw, node.rule.algorithms(node.ctx, "winograd") if wino and node.cost.flops else None,
                    ("winograd" if wino else "direct") if node.rule.algorithms else None, cls, split))
    return tuple(out)


def _kernel_row(kernels: list) -> tuple:
    """A pass's (FLOPs, bytes) and its kernels ((index, FLOPs, bytes), …; None for one), added as
    ``sum(parts, PassTime())`` adds them: 0 + k0 + k1 + …"""
    return (_add_all(k[1] for k in kernels), _add_all(k[2] for k in kernels),
            tuple(kernels) if len(kernels) > 1 else None)


@lru_cache(maxsize=64)        # ~0.4 MB each for a ResNet-152
def predicted_work(compiled: Compiled, fused: bool, batch: int, precision: Precision) -> PredictedWork | None:
    """The works of ``Estimate._layer_parts`` (forward and backward) at ``batch`` and ``precision``, as arrays;
    the same expressions (``Estimate._flops``, ``_at_batch``, ``_layer_parts``, ``cast_work``) on the same
    integers. None where a number is beyond a float (the per-work path then raises, naming it)."""
    import numpy as np

    n, p = batch, precision
    act, wt = p.activation, p.weight
    layers = _predicted_layers(compiled, fused, p.compute)
    L, none = len(layers), len(gpu_model.COMPUTE_CLASSES)
    empty = (0, 0, 0, 0, none, 1, 0, 0, 0)
    tensor = p.compute in gpu_model.TENSOR_FACTOR
    fwd, first, second, fcast, bcast, rows, algorithms = [], [], [], [], [], [], []
    for i, (lw, wino, alg, cls, split) in enumerate(layers):
        node, f, b = lw.node, lw.forward, lw.backward
        if wino:                    # Estimate._flops: the forward's Winograd factor, on either pass
            per, per_batch = wino
            ffl = f.flops * n * (per * n + per_batch) / (node.cost.flops * n)
            bfl = b.flops * n * (per * n + per_batch) / (node.cost.flops * n)
        else:
            ffl, bfl = f.flops * n, b.flops * n
        algorithms.append(alg)
        tiles = gpu_model.layer_tiles(node, n) if node.rule.gemm else 0
        fbytes = (f.act * act + f.xbytes) * n + f.weights * wt
        blocks = gpu_model.channel_blocks(node, lw.work_class, "backward")   # a training step's forward's too
        stem = int(tensor and gpu_model.stem_conv(node))      # Work.stem: every kernel of the layer but its casts
        fwd.append((ffl, fbytes, f.calls, tiles, cls, 0, 0, blocks, stem))
        fk, bk = [(i, ffl, fbytes)], []
        dw = int(gpu_model.cuda_core_backward(lw, compiled, act))   # its backward kernels: on_cuda_cores
        if not (bfl and split):
            first.append((bfl, (b.act * act + b.xbytes) * n + b.weights * wt, b.calls, tiles, cls, 1, dw, blocks,
                          stem))
            second.append(empty)
            bk.append((L + i, first[-1][0], first[-1][1]))
        else:                       # _layer_parts: the weight gradient, and the input gradient where it has FLOPs
            wfl = bfl * node.bwd_weight_flops / b.flops
            wgrad = (wfl, split[0] * act * n + node.params.trainable * wt, 1, tiles, cls, 2, dw, blocks, stem)
            if bfl - wfl <= 0:
                first.append(wgrad)
                second.append(empty)
                bk.append((L + i, wgrad[0], wgrad[1]))
            else:
                first.append((bfl - wfl, split[1] * act * n + split[2] * wt, 1, gpu_model.dgrad_tiles(node, n),
                              cls, 1, dw, blocks, stem))
                second.append(wgrad)
                bk += [(L + i, first[-1][0], first[-1][1]), (2 * L + i, wgrad[0], wgrad[1])]
        for casts, kernels, which, index in ((fcast, fk, "forward", 3 * L + i), (bcast, bk, "backward", 4 * L + i)):
            c = cast_work(lw, p, which)
            casts.append((0, c.bytes, c.calls, 0, none, int(which == "backward"), 0, 0, 0) if c else empty)
            if c:
                kernels.append((index, 0, c.bytes))
        frow = _kernel_row(fk)
        rows.append((*frow[:2], *_kernel_row(bk), frow[2]))
    cols = list(zip(*(fwd + first + second + fcast + bcast))) or [()] * 9
    try:
        arrays = [np.array(c, dtype=np.float64) for c in cols]
    except OverflowError:           # an integer beyond a float
        return None
    if arrays[3].size and arrays[3].max() >= 2.0 ** 53:      # tile counts must be exact in a float
        return None
    totals = {"forward": (_add_all(r[0] for r in rows), _add_all(r[1] for r in rows)),
              "backward": (_add_all(r[2] for r in rows), _add_all(r[3] for r in rows))}
    return PredictedWork(Kernels(*arrays[:4], arrays[4].astype(np.intp), arrays[5].astype(np.intp),
                                 arrays[6].astype(bool), arrays[7], arrays[8].astype(bool)), L,
                         tuple(rows), totals, tuple(algorithms))


class PredictedTimes:
    """A device's times for a ``PredictedWork``: per kernel (``gpu_model.kernel_seconds``), per layer (a pass's
    kernels added in ``_layer_parts``' order, as ``sum`` of their PassTimes does: a split backward's two, then
    a cast; an empty kernel's 0.0 changes no sum), per pass (the layers added in order) and per limiting term, each
    sum in the per-work path's order."""

    TERMS = ("compute", "memory", "overhead", "total")

    def __init__(self, work: PredictedWork, seconds: dict, train_seconds: dict):
        import numpy as np

        self.work = work
        L = work.layers
        s = np.stack([seconds[t] for t in self.TERMS])               # 4 × 5L
        self.kernels = s
        self.forward_layers = s[:, :L] + s[:, 3 * L:4 * L]
        self.backward_layers = s[:, L:2 * L] + s[:, 2 * L:3 * L] + s[:, 4 * L:]
        # a training step's forward: the forward kernels under autograd (``kernel_seconds(train=True)``)
        self.train_kernels = np.stack([train_seconds[t] for t in self.TERMS])
        self.train_forward_layers = self.train_kernels[:, :L] + self.train_kernels[:, 3 * L:4 * L]

    def pass_time(self, which: str) -> PassTime:
        """``which``: forward, train_forward (a training step's forward) or backward."""
        import numpy as np

        layers = {"forward": self.forward_layers, "train_forward": self.train_forward_layers}.get(
            which, self.backward_layers)
        c, m, o, t = (np.add.accumulate(layers, axis=1)[:, -1].tolist() if self.work.layers else [0.0] * 4)
        flops, nbytes = self.work.totals["forward" if which == "train_forward" else which]
        return PassTime(flops, nbytes, 0, c, m, 0.0, o, t)

    def layer_times(self, layers: tuple[LayerWork, ...]) -> tuple[LayerTime, ...]:
        """``Estimate.layer_times``'s rows."""
        fwd, bwd, k = self.forward_layers.tolist(), self.backward_layers.tolist(), self.kernels.tolist()

        def kernels(listed) -> tuple:
            return tuple(PassTime(fl, nb, 0, k[0][j], k[1][j], 0.0, k[2][j], k[3][j]) for j, fl, nb in listed or ())

        out = []
        for i, (lw, row, alg) in enumerate(zip(layers, self.work.rows, self.work.algorithms)):
            out.append(LayerTime(lw.node.name, lw.node.op, lw.work_class, alg,
                                 PassTime(row[0], row[1], 0, fwd[0][i], fwd[1][i], 0.0, fwd[2][i], fwd[3][i]),
                                 PassTime(row[2], row[3], 0, bwd[0][i], bwd[1][i], 0.0, bwd[2][i], bwd[3][i]),
                                 kernels(row[4]), kernels(row[5])))
        return tuple(out)

    def limited_by(self) -> dict:
        """``Estimate.limited_by``: each kernel's time to the term that sets it (``limiting_term``: overhead where
        it exceeds compute + memory, else the larger of the two, compute on a tie; "none" for no time), added in
        the per-work path's order: layer by layer, a layer's kernels in turn (an empty kernel adds 0.0 to "none",
        which changes no sum)."""
        import numpy as np

        L, out = self.work.layers, {}

        def by_layer(s, starts):            # l0 k1, l0 k2, …, l1 k1, …
            return np.stack([s[:, a * L:(a + 1) * L] for a in starts], axis=2).reshape(4, -1)

        for which, seconds in (("forward", by_layer(self.kernels, (0, 3))),
                               ("train_forward", by_layer(self.train_kernels, (0, 3))),
                               ("backward", by_layer(self.kernels, (1, 2, 4)))):
            c, m, o, t = seconds
            term = np.where(o > c + m, 2, np.where(c >= m, 0, 1))
            term[t <= 0] = 3
            out[which] = {name: (float(np.add.accumulate(t[term == i])[-1]) if (term == i).any() else 0.0)
                          for i, name in enumerate(("compute", "memory", "overhead", "none"))}
        return out


# == estimate =====================================================================================================

PPP_MIN = 1e-3     # 0.1 % of the peak: a smaller PPP is no platform's, and 5e-324 would make every time infinite


def _check_ppp(value: Any, field: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not PPP_MIN <= value <= 1:
        raise CalcError(f"must be a number from {PPP_MIN:g} to 1: 1.0 means the datasheet peak", field=field,
                        value=value)
    return float(value)


def _check_rate(value: Any, device: Device | Interconnect, field: str) -> None:
    """A rate a time divides by (a peak, a bandwidth) must be a finite number > 0 whose inverse is finite too; a
    Device made in code skips the database's schema, so its numbers are checked here as well."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise DeviceError("must be a number", node=device.id, field=field, value=value)
    try:
        ok = isfinite(value) and value > 0 and isfinite(1 / value)
    except (OverflowError, ZeroDivisionError):
        ok = False
    if not ok:
        raise DeviceError("must be a finite number > 0 (a time divided by it must be finite)", node=device.id,
                          field=field, value=value)


MAX_THREADS = 4096


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
    The calibration's rates come from large layers, which do split (core.bridge.calibrate fits the grain on whole
    networks). 1 at one thread, without a grain, or for no work."""
    if not threads or threads <= 1 or not grain or work_s <= 0:
        return 1.0
    return max(work_s, min(threads * work_s, grain)) / work_s


THREADS_HINT_ABOVE = 0.2     # a multi-thread calibration's held-out error above which the hint is shown


def threads_hint(calibration: dict | None, grain: float | None = None) -> str | None:
    """A line for a CPU calibrated at more than one thread without a ``parallel_grain`` (a calibration from before
    it) whose self-check missed by more than ``THREADS_HINT_ABOVE``: its small layers are predicted too fast (they
    gain less from threads than the large layers the rates come from; bench_predict at 2 threads: median error
    18 % without the grain, 7 % with it). None otherwise."""
    cal = calibration if isinstance(calibration, dict) else {}
    threads, err = cal.get("threads"), cal.get("held_out_error")
    if grain or not (isinstance(threads, int) and threads > 1 and isinstance(err, (int, float))
                     and err > THREADS_HINT_ABOVE):
        return None
    return (f"this calibration at {threads} threads predates the parallel grain, so small layers are predicted too "
            "fast: calibrate again (python -m core calibrate)")


def _check_threads(value: Any, device: Device) -> int | None:
    """``threads`` asked of an estimate: None (the device's own), else it must be the count the device was
    calibrated at — no model here says how a calibrated CPU's times change with its thread count."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= MAX_THREADS:
        raise CalcError(f"must be an integer from 1 to {MAX_THREADS:,}", field="threads", value=value)
    have = calibrated_threads(device)
    if have is None:
        raise CalcError(f"{device.name} ('{device.id}') has no calibrated thread count (datasheet figures or a GPU): "
                        "leave threads out, or calibrate this CPU (python -m core calibrate --threads N) and use the "
                        "device 'local'", field="threads", value=value)
    if value != have:
        raise CalcError(f"{device.name} ('{device.id}') was calibrated at {have} torch thread(s) and predicts that "
                        f"count only; for {value}, calibrate again: python -m core calibrate --threads {value}",
                        field="threads", value=value)
    return value


def _check_workers(value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= MAX_WORKERS:
        raise CalcError(f"must be an integer from 1 to {MAX_WORKERS:,}", field="workers", value=value)
    return value


MAX_WORKERS = 65536
MAX_SWEEP = 100_000      # estimates one sweep or scaling call makes


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


def _outside_model(device: Device, compute: str) -> str | None:
    """Why the fitted GPU model has nothing to stand on for ``device`` at ``compute`` (None: it has): ``auto``
    gives PALEO there, and ``predicted`` asked for by name is refused."""
    if device.kind != "GPU":
        return f"the time model is for GPUs; {device.name} is a {device.kind}"
    if device.gpus_per_board > 1:
        return f"{device.name} is a board of {device.gpus_per_board} GPUs; the time model predicts one GPU"
    if compute not in FITTED_PRECISIONS:
        return f"the time model was not fitted on {compute} (only {', '.join(FITTED_PRECISIONS)})"
    return None


def _calibrated(device: Device) -> bool:
    return bool(device.efficiency or device.layer_overhead or device.alloc_bandwidth)


def auto_variant(device: Device, compute: str, ppp: float = 1.0, ppp_memory: float | None = None,
                 conv_algorithm: str = "direct") -> tuple[str, str]:
    """The variant "auto" stands for, and why: the fitted GPU model (``predicted``) on one GPU whose architecture
    generation has fitted parameters, at a precision it was fitted on, unless the user asked for classic PALEO (a
    PPP other than 1, a convolution algorithm) or calibrated the device (its measured efficiencies win); else
    ``paleo``."""
    outside = _outside_model(device, compute)
    if outside:
        return "paleo", f"PALEO: {outside}"
    if _calibrated(device):
        return "paleo", f"PALEO with the figures measured on {device.name} (calibrated)"
    if ppp != 1 or (ppp_memory is not None and ppp_memory != 1):
        return "paleo", "PALEO: a PPP was set (PPP 1 is the predicted model)"
    if conv_algorithm != "direct":
        return "paleo", f"PALEO: the convolution algorithm was set ({conv_algorithm})"
    if not gpu_model.has_params(device):
        return "paleo", f"PALEO: the time model has no fitted parameters for {device.architecture or 'unknown'} GPUs"
    return "predicted", "predicted: " + fitted_on(device, compute)


def fitted_on(device: Device, compute: str) -> str:
    """What a prediction for ``device`` at ``compute`` stands on, in words: how many measured timings (published, or
    measured by this project) of its generation were fitted, and at this precision (the fit's ``coverage``:
    generation → precision → rows)."""
    arch = device.architecture
    cover = gpu_model.load_params().get("coverage", {}).get(arch)
    if cover is None:
        return f"the time model fitted on measured timings of {arch} GPUs"
    rows, here = sum(cover.values()), cover.get(compute, 0)
    text = f"the time model fitted on {rows} measured timings of {arch} GPUs"
    if not here:
        text += (f", none of them at {compute}: extrapolated from "
                 f"{', '.join(sorted(k for k, v in cover.items() if v))}")
    return text


def _predicted_asked(device: Device, compute: str) -> str:
    """The reason for a prediction asked for by name, or a CalcError where the model has nothing to stand on
    (``_outside_model``)."""
    outside = _outside_model(device, compute)
    if outside:
        raise CalcError(f"{outside}: choose auto or paleo", node=device.id, field="variant", value="predicted")
    asked = " (as asked: the device's calibrated figures are not used)" if _calibrated(device) else " (as asked)"
    return f"predicted{asked}: {fitted_on(device, compute)}"


MIN_GENERATION_ROWS = 20       # fewer held-out rows than this: a generation's own error is too thin to quote
# batch ≤ this: a GPU pass is mostly the host's per-kernel cost, and the rows scatter most there (this project's
# measured rows: a quarter of the batch-1 passes took > 10 % longer than the same pass at batch 8), so the error
# quoted for an estimate at such a batch is the small-batch rows' own
SMALL_BATCH = 8


def typical_error(device: Device, batch: int | None = None) -> dict:
    """The predicted model's held-out error (leave-one-source-out: each row predicted by a fit that did not see its
    source), over the most specific rows there are at least ``MIN_GENERATION_ROWS`` of: with ``batch``, the device
    generation's in its band (batch ≤ ``SMALL_BATCH`` or above, where the file has bands); then the generation's
    at every batch; then all GPUs' in the band; then all rows."""
    doc = gpu_model.load_params()
    arch = device.architecture or ""
    band = None if batch is None else "small" if batch <= SMALL_BATCH else "large"
    by_band = (doc.get("errors_by_batch") or {}).get(band) or {} if band else {}
    at = f" at batch 1–{SMALL_BATCH}" if band == "small" else f" at batch ≥ {SMALL_BATCH + 1}"
    # the most specific figure with enough rows: the generation in the band, the generation at every batch, all
    # GPUs in the band, all GPUs
    candidates = ((by_band.get(arch), f"{arch} GPUs", at),
                  ((doc.get("errors_by_generation") or {}).get(arch), f"{arch} GPUs", ""),
                  (by_band.get("all"), "all GPUs", at))
    e, who, where = next((c for c in candidates if c[0] and c[0].get("rows", 0) >= MIN_GENERATION_ROWS),
                         (doc["errors"]["loso"], "all GPUs", ""))
    return {"median": e["median"], "p90": e["p90"], "rows": e["rows"],
            "basis": f"leave-one-source-out over {who}, {e['rows']} measured timings{where}"}


def limiting_term(t: PassTime) -> str:
    """The term that sets a time: overhead where it exceeds compute and memory (fresh pages included) together
    (the predicted variant's ``combine``: max(compute + memory, overhead)), else the larger of compute and memory
    (compute on a tie); "none" for no time. Under PALEO's sum: overhead where it is more than half the time."""
    c, m, o = t.compute_s, t.memory_s + t.fresh_pages_s, t.overhead_s
    if o > c + m:
        return "overhead"
    return "none" if c + m <= 0 else "compute" if c >= m else "memory"


class Estimate:
    """Times for one network on one device at one batch size, precision and set of settings: PALEO (at PPP
    factors), the roofline variant, or the fitted GPU model (``predicted``; ``auto`` picks it where it applies).

    Every time is made by one path: works (one per layer, or one per class of work where the variant adds terms,
    which gives the same sum) → the device's terms (``TERMS``) → ``combine`` → a ``PassTime``. ``layer_times``
    and the totals use it alike, so the rows sum to the totals. The predicted variant takes the same steps on arrays
    (``_predicted``: ``predicted_work`` → ``gpu_model.kernel_seconds`` → ``PredictedTimes``), equal to the bit."""

    def __init__(self, report: Report, device: Device, *, ppp: float = 1.0, ppp_memory: float | None = None,
                 variant: str = "auto", conv_algorithm: str = "direct", fused: bool = False, workers: int = 1,
                 link: Interconnect | None = None, ppp_comm: float = 1.0, allreduce: str = "ring",
                 launch: str = "eager", threads: int | None = None):
        self.report = report
        self.device = device
        self.precision: Precision = report.precision
        self.ppp = _check_ppp(ppp, "ppp")
        self.ppp_memory = _check_ppp(self.ppp if ppp_memory is None else ppp_memory, "ppp_memory")
        self.ppp_comm = _check_ppp(ppp_comm, "ppp_comm")
        self.variant = _choice(variant, VARIANTS, "variant")
        self.conv_algorithm = _choice(conv_algorithm, CONV_ALGORITHMS, "conv_algorithm")
        if not isinstance(device, Device):
            raise CalcError("expected a Device (core.devices)", field="device", value=type(device).__name__)
        self.variant_reason = {"paleo": "PALEO, as asked", "roofline": "roofline: max(compute, memory), as asked",
                               "predicted": "predicted, as asked"}.get(self.variant, "")
        if self.variant == "auto":
            self.variant, self.variant_reason = auto_variant(device, self.precision.compute, self.ppp,
                                                             self.ppp_memory, self.conv_algorithm)
        self.allreduce = _choice(allreduce, ALLREDUCE, "allreduce")
        self.launch = _choice(launch, LAUNCHES, "launch")
        self.fused = bool(fused)
        _check_workers(workers)
        if workers > 1 and link is None:
            raise CalcError("data-parallel training over several workers needs an interconnect (--link)",
                            field="link", value=None)
        if link is not None and not isinstance(link, Interconnect):
            raise CalcError("expected an Interconnect (core.devices)", field="link", value=type(link).__name__)
        self.workers = workers
        self.link = link
        _check_threads(threads, device)
        # the torch thread count the times are for: a calibrated CPU's (None: datasheet figures or a GPU)
        self.threads = calibrated_threads(device)
        self.peak = device.peak(self.precision.compute)          # raises, naming the precisions it has
        self.bandwidth = device.memory_bandwidth
        _check_rate(self.peak, device, f"peak_flops.{self.precision.compute}")
        _check_rate(self.bandwidth, device, "memory_bandwidth")
        if link is not None:
            _check_rate(link.bandwidth, link, "bandwidth")
            lat = link.latency
            if isinstance(lat, bool) or not isinstance(lat, (int, float)) or not 0 <= lat <= LATENCY_MAX:
                raise DeviceError(f"must be a number of seconds from 0 to {LATENCY_MAX:g}", node=link.id,
                                  field="latency", value=lat)
        self.model_params: dict | None = None
        if self.variant == "predicted":       # core.gpu_model: fitted per architecture generation
            if self.variant_reason == "predicted, as asked":
                self.variant_reason = _predicted_asked(device, self.precision.compute)
            if self.conv_algorithm != "direct":
                raise CalcError("the predicted variant picks the convolution algorithm itself (Winograd for 3×3 "
                                "stride-1 convolutions in fp32); leave conv_algorithm at direct",
                                field="conv_algorithm", value=self.conv_algorithm)
            if self.ppp != 1 or self.ppp_memory != 1:
                raise CalcError("the predicted variant uses its fitted efficiencies, not a PPP; a PPP is classic "
                                "PALEO (variant paleo)", field="ppp" if self.ppp != 1 else "ppp_memory",
                                value=self.ppp if self.ppp != 1 else self.ppp_memory)
            self.model_params = gpu_model.generation_params(device)
            # CUDA Graphs replay a captured pass: the host's per-kernel cost (the overhead term) is not paid
            self.terms = tuple(t for t in gpu_model.terms() if self.launch == "eager" or t.name != "overhead")
        else:
            if self.launch != "eager":      # a calibrated device's cost per call is a measurement: it stays
                self.variant_reason += "; CUDA Graphs change the predicted model only"
            self.terms = tuple(t for t in TERMS if t.applies(device))
        # a calibrated CPU at more than one thread: layers too small to split run at one thread's speed
        self.grain = (device.parallel_grain or 0.0) if self.variant != "predicted" and (self.threads or 1) > 1 \
            else 0.0
        self.work = network_work(report.compiled, self.fused)

    # -- one path: work → terms → combine -----------------------------------------------------------------------
    def _has(self, term: str) -> bool:
        return any(t.name == term for t in self.terms)

    def time(self, w: Work) -> PassTime:
        """The time of ``w`` on this device: each of the device's terms, combined by the variant."""
        s = dict.fromkeys(_TERM_NAMES, 0.0)
        groups = {"compute": 0.0, "memory": 0.0, "serial": 0.0}
        for t in self.terms:
            try:
                v = s[t.name] = t.seconds(w, self)
            except (OverflowError, ZeroDivisionError):
                v = float("inf")
            if not isfinite(v):
                self._non_finite(t.name, w)
            groups[t.group] += v
        if self.grain and not w.update:
            f = small_layer_factor(groups["compute"] + groups["memory"], self.threads, self.grain)
            if f != 1.0:
                for k in ("compute", "memory", "fresh_pages"):
                    s[k] *= f
                groups["compute"] *= f
                groups["memory"] *= f
        total = combine(self.variant, groups["compute"], groups["memory"], groups["serial"])
        if not isfinite(total):
            self._non_finite("total", w)
        return PassTime(w.flops, w.bytes, w.fresh_bytes, s["compute"], s["memory"], s["fresh_pages"], s["overhead"],
                        total)

    def _non_finite(self, term: str, w: Work):
        """Raise the error for a time that is not a finite number, naming the device field (or the work) behind
        it. Devices from the database cannot get here (their numbers have physical bounds); a Device made in code,
        or a network whose work is beyond a float, can."""
        d = self.device
        if term == "compute":
            eff = _figure(_efficiency(d, w.backward, w.train), w.work_class, 1.0)
            field, value = f"peak_flops.{self.precision.compute}", self.peak
            if eff != 1.0 and isfinite(w.flops / (self.peak * self.ppp)):     # the efficiency is what is off
                name = ("backward_efficiency" if w.backward and d.backward_efficiency else
                        "train_efficiency" if w.train and d.train_efficiency else "efficiency")
                field, value = f"{name}.{w.work_class}", eff
            why = f"{_g(w.flops)} FLOPs at a peak of {_g(self.peak)} FLOP/s × PPP {self.ppp:g} × efficiency {eff!r}"
        elif term == "memory":
            field, value = "memory_bandwidth", self.bandwidth
            why = f"{_g(w.bytes)} bytes at {_g(self.bandwidth)} B/s × PPP {self.ppp_memory:g}"
        elif term == "fresh_pages":
            field, value, why = "alloc_bandwidth", d.alloc_bandwidth, f"{_g(w.fresh_bytes)} bytes to fresh pages"
        elif term == "overhead":
            field = ("update_overhead" if w.update else "backward_overhead" if w.backward and d.backward_overhead
                     else "train_overhead" if w.train and d.train_overhead else "layer_overhead")
            value, why = getattr(d, field), f"{w.calls} {'parameter tensors' if w.update else 'layer calls'}"
        else:
            field, value, why = "model", self.report.name, f"{_g(w.flops)} FLOPs and {_g(w.bytes)} bytes"
        error = NetworkError if field == "model" else DeviceError
        raise error(f"the time is not a finite number ({why}): the figure is out of range or the work too large",
                    node=d.id, field=field, value=value)


    def _at_batch(self, pw: PassWork, work_class: str | None, flops: float, fresh: int = 0,
                  backward: bool = False, train: bool = False) -> Work:
        n, p = self.report.batch_size, self.precision
        return Work(work_class, flops, (pw.act * p.activation + pw.xbytes) * n + pw.weights * p.weight, fresh,
                    pw.calls, backward=backward, train=train)

    def _flops(self, lw: LayerWork, per_sample: int) -> float:
        """FLOPs at this batch with the chosen conv algorithm (backward convs change by the forward's factor)."""
        n, info = self.report.batch_size, lw.node
        if self.variant == "predicted" and info.cost.flops and gpu_model.uses_winograd(info, self.precision.compute):
            per, per_batch = info.rule.algorithms(info.ctx, "winograd")
            return per_sample * n * (per * n + per_batch) / (info.cost.flops * n)
        if self.conv_algorithm == "direct" or info.rule.algorithms is None or not info.cost.flops:
            return per_sample * n
        _, alg = _conv_choice(info, self.conv_algorithm, n)
        return per_sample * n * alg / (info.cost.flops * n)

    @cached_property
    def fresh_bytes(self) -> tuple[int, ...]:
        """Per node, the forward pass's bytes written to fresh pages where the device has the fresh-page term (a
        calibrated Linux CPU: ``alloc_threshold`` is glibc's largest mmap threshold): glibc's malloc replayed over
        the pass (``core.cpu_heap``); zeros elsewhere (a GPU's caching allocator reuses its memory)."""
        if not self._has("fresh_pages"):
            return (0,) * len(self.work.layers)
        p = self.precision
        return cpu_heap.fresh_bytes(self.report.compiled, self.report.batch_size, p.activation, p.weight,
                                    int(self.device.alloc_threshold))

    def _algorithm(self, info: NodeInfo) -> str:
        if self.variant == "predicted":
            return "winograd" if gpu_model.uses_winograd(info, self.precision.compute) else "direct"
        return _conv_choice(info, self.conv_algorithm, self.report.batch_size)[0]

    @cached_property
    def backward_fresh_bytes(self) -> tuple[int, ...]:
        """Per node, the backward pass's bytes written to fresh pages, on a calibrated Linux CPU that has backward
        figures (``backward_efficiency``; one calibrated before them keeps its estimates): after
        ``zero_grad(set_to_none=True)`` every gradient is a new tensor, and each of at least ``alloc_threshold``
        bytes is ``mmap``-ed by glibc, so all its bytes are fresh — each input gradient the node computes, and its
        weight gradient (its trainable parameters as one block: the bias beside the weight is small). Smaller
        blocks are taken as reused heap memory (``core.cpu_heap`` replays the forward pass only)."""
        d = self.device
        if not (self._has("fresh_pages") and d.backward_efficiency):
            return (0,) * len(self.work.layers)
        n, p, limit = self.report.batch_size, self.precision, d.alloc_threshold
        out = []
        for lw in self.work.layers:
            node, fresh = lw.node, 0
            if node.needs_grad and node.moves_data:
                blocks = [numel(sh) * n * p.activation for sh, g in zip(node.in_shapes, node.grad_in) if g]
                blocks.append(node.params.trainable * p.weight)
                fresh = sum(b for b in blocks if b >= limit)
            out.append(fresh)
        return tuple(out)

    def _layer_works(self, which: str) -> list[Work]:
        fresh = self.fresh_bytes if which == "forward" else self.backward_fresh_bytes
        works = [self._at_batch(getattr(lw, which), lw.work_class, self._flops(lw, getattr(lw, which).flops), f,
                                which == "backward")
                 for lw, f in zip(self.work.layers, fresh)]
        if self.variant == "predicted":
            return [w for parts in self._layer_parts(which, works) for w in parts]
        return works

    def _layer_parts(self, which: str, works: list[Work] | None = None) -> list[tuple[Work, ...]]:
        """The predicted variant's works per layer: one, or in the backward pass of a conv or linear layer with
        trainable weights two GEMMs, the input gradient (dgrad: dy·W, tiles of N·H_in·W_in × C_in) and the weight
        gradient (wgrad: dyᵀ·x, its own efficiency), each a kernel call reading dy. In mixed precision a conv or
        linear layer's pass ends with its cast kernels (``cast_work``)."""
        src = "forward" if which == "train_forward" else which
        if works is None:
            works = [self._at_batch(getattr(lw, src), lw.work_class, self._flops(lw, getattr(lw, src).flops))
                     for lw in self.work.layers]
        n, p, out, compiled = self.report.batch_size, self.precision, [], self.report.compiled
        for lw, w in zip(self.work.layers, works):
            node = lw.node
            w = Work(w.work_class, w.flops, w.bytes, w.fresh_bytes, w.calls,      # (replace() costs 3× more)
                     gpu_model.layer_tiles(node, n), which == "backward", train=which == "train_forward",
                     blocks=gpu_model.channel_blocks(node, lw.work_class, which),
                     cuda_core=which == "backward" and gpu_model.cuda_core_backward(lw, compiled, p.activation),
                     stem=self.stem_on_cuda_cores and gpu_model.stem_conv(node))
            cast = cast_work(lw, p, which)
            if which != "backward" or not (w.flops and node.bwd_weight_flops
                                           and gpu_model.compute_class(lw.work_class)):
                out.append((w, cast) if cast else (w,))
                continue
            wflops = w.flops * node.bwd_weight_flops / lw.backward.flops     # the conv algorithm's factor kept
            saved = sum(numel(node.in_shapes[i]) for i in node.saves.inputs)
            grads = sum(numel(sh) for sh, g in zip(node.in_shapes, node.grad_in) if g)
            wgrad = replace(w, flops=wflops, calls=1, weight_grad=True,
                            bytes=(node.out_elems + saved) * p.activation * n + node.params.trainable * p.weight)
            if w.flops - wflops <= 0:
                parts: tuple[Work, ...] = (wgrad,)
            else:
                weights = node.params.trainable + node.params.frozen
                parts = (replace(w, flops=w.flops - wflops, calls=1, tiles=gpu_model.dgrad_tiles(node, n),
                                 bytes=(node.out_elems + grads) * p.activation * n + weights * p.weight), wgrad)
            out.append(parts + (cast,) if cast else parts)
        return out

    def _pass(self, which: str) -> PassTime:
        """A pass's total. PALEO adds its terms, so layers whose class of work the device gives the same figures
        (efficiency, per-call overhead) can be timed as one work: the same sum, a few divisions instead of one per
        layer. The roofline variant takes a max per layer. ``which``: forward, backward, or train_forward (the
        forward's work at a calibrated CPU's training-forward figures, or the predicted variant's
        ``_layer_parts("train_forward")``)."""
        train = which == "train_forward"
        if train:
            which = "forward"
        if self.variant == "predicted":     # the layers' rows added (a layer may be two kernels)
            if self._predicted is not None:
                return self._predicted.pass_time("train_forward" if train else which)
            if train:
                return sum((sum(k, PassTime()) for k in self._train_forward_kernels()), PassTime())
            return sum((getattr(lt, which) for lt in self.layer_times), PassTime())
        if self.variant == "roofline" or self.grain:     # a max per layer, or a layer's size decides its rate
            works = self._layer_works(which)
            if train:
                works = [replace(w, train=True) for w in works]
        else:
            dev, n = self.device, self.report.batch_size
            by_class = self.work.forward_by_class if which == "forward" else self.work.backward_by_class
            back = which == "backward"
            if _efficiency(dev, back, train) or _overheads(dev, back, train):
                group: dict[str, str | None] = {}      # class of work → the class that stands for its figures
                seen: dict[tuple, str] = {}
                for c in by_class:
                    key = (_figure(_efficiency(dev, back, train), c, 1.0),
                           _figure(_overheads(dev, back, train), c, 0.0))
                    group[c] = seen.setdefault(key, c)
                merged: dict[str | None, PassWork] = {}
                for c, pw in by_class.items():
                    merged[group[c]] = merged[group[c]] + pw if group[c] in merged else pw
            else:                                       # no figures by class: every layer at the same rates
                group = dict.fromkeys(by_class)
                merged = {None: self.work.forward_total if which == "forward" else self.work.backward_total}
            flops = {c: pw.flops * n for c, pw in merged.items()}
            fresh = dict.fromkeys(merged, 0)
            if self.conv_algorithm != "direct":
                flops = dict.fromkeys(merged, 0)
                for lw in self.work.layers:
                    flops[group[lw.work_class]] += self._flops(lw, getattr(lw, which).flops)
            if self._has("fresh_pages"):
                for lw, f in zip(self.work.layers, self.backward_fresh_bytes if back else self.fresh_bytes):
                    fresh[group[lw.work_class]] += f
            works = [self._at_batch(pw, c, flops[c], fresh[c], back, train) for c, pw in merged.items()]
        return sum((self.time(w) for w in works), PassTime())

    @cached_property
    def forward(self) -> PassTime:
        return self._pass("forward")

    @cached_property
    def backward(self) -> PassTime:
        return self._pass("backward")

    @cached_property
    def train_forward(self) -> PassTime:
        """A training step's forward: train mode with autograd recording, at a calibrated CPU's training-forward
        figures (``train_efficiency``, ``train_overhead``; its forward runs ~1.3–2× the inference one on our
        machine), or in the predicted variant each call at the fitted ``autograd_overhead``; the inference forward
        where the device has neither."""
        d = self.device
        if self.variant == "predicted":
            return self._pass("train_forward")
        if not (d.train_efficiency or d.train_overhead):
            return self.forward
        return self._pass("train_forward")

    def _train_forward_kernels(self) -> list[tuple[PassTime, ...]]:
        """The predicted variant's training-forward time per layer and kernel, one ``Work`` at a time: the
        forward's works under autograd (``gpu_model.overhead_s``; the reference path)."""
        return [tuple(self.time(w) for w in parts) for parts in self._layer_parts("train_forward")]

    @property
    def train_forward_basis(self) -> str:
        """Why a training step's forward differs from the inference one, in words (the CLI and the app show it)."""
        if self.variant != "predicted":
            return "calibrated"
        factor = self.model_params.get("autograd_overhead", 1.0)
        if factor != 1.0 and self._has("overhead"):
            return f"each kernel call's overhead × {factor:.2f}, the fitted autograd factor"
        return "as the inference forward"

    @cached_property
    def update(self) -> PassTime:
        """The optimizer step on every trainable parameter, as the optimizer's table counts it."""
        return self.time(self.update_work())

    def update_work(self) -> Work:
        """The optimizer step's work."""
        p, opt = self.precision, optimizer(self.report.optimizer)
        trainable = self.report.compiled.trainable
        nbytes = trainable * (opt.weight_accesses * (p.master or p.weight) + opt.grad_accesses * p.grad
                              + (opt.state_accesses * p.state if opt.states else 0))
        # the predicted variant: one kernel call per layer that holds trainable parameters (eager per-parameter loop)
        calls = _trainable_layers(self.report.compiled) if self.variant == "predicted" else 0
        if self.variant != "predicted" and self.device.update_overhead:
            # a calibrated CPU: torch.optim's per-parameter loop pays a fixed cost per parameter tensor, and its
            # kernels one by one move more than the table's fused update
            return Work(None, opt.update_flops * trainable, eager_update_bytes(trainable, p, opt.name),
                        calls=sum(param_tensors(lw.node) for lw in self.work.layers), update=True)
        return Work(None, opt.update_flops * trainable, nbytes, calls=calls)

    @cached_property
    def communication_s(self) -> float:
        """The gradient all-reduce across data-parallel workers."""
        if not self.link:
            return 0.0
        nbytes = self.report.compiled.trainable * self.precision.grad
        try:
            seconds = allreduce_time(nbytes, self.workers, self.link, self.ppp_comm, self.allreduce)
        except (OverflowError, ZeroDivisionError):
            seconds = float("inf")
        if not isfinite(seconds):
            raise DeviceError(f"the all-reduce time is not a finite number ({_g(nbytes)} bytes at "
                              f"{_g(self.link.bandwidth)} B/s × PPP {self.ppp_comm:g})", node=self.link.id,
                              field="bandwidth", value=self.link.bandwidth)
        return seconds

    @cached_property
    def cuda_core_peak(self) -> float:
        """The predicted variant's peak for kernels on CUDA cores (``gpu_model.on_cuda_cores``: a depthwise conv's
        backward; ``gpu_model.stem_conv``: a conv over ≤ 3 channels in a tensor-core precision, where the device
        has this peak, ``stem_on_cuda_cores``): the device's fp32 peak (fp64's for fp64). Asked only of a network
        that has such a kernel; a device without that peak is an error naming the figure."""
        field = gpu_model.cuda_core_precision(self.precision.compute)
        peak = self.device.peak_flops.get(field)
        if peak is None:
            raise DeviceError(f"a depthwise convolution's backward runs on CUDA cores at the {field} peak, and "
                              f"{self.device.name} has none (it has {', '.join(self.device.precisions)})",
                              node=self.device.id, field=f"peak_flops.{field}", value=None)
        _check_rate(peak, self.device, f"peak_flops.{field}")
        return peak

    @cached_property
    def stem_on_cuda_cores(self) -> bool:
        """Whether a stem conv's kernels (``gpu_model.stem_conv``) run on CUDA cores here: in a tensor-core
        precision, on a device with the CUDA-core peak. A device with only half-precision peaks (one a user
        describes) keeps the tensor-core rule for them."""
        return self.precision.compute in gpu_model.TENSOR_FACTOR and \
            gpu_model.cuda_core_precision(self.precision.compute) in self.device.peak_flops

    @cached_property
    def _predicted(self) -> PredictedTimes | None:
        """The predicted variant's times from arrays (``predicted_work``, ``gpu_model.kernel_seconds``): the
        per-work path's numbers, fast. None for the other variants, and where a time is not a finite number (the
        per-work path then raises the error that names the work and the figure)."""
        if self.variant != "predicted":
            return None
        work = predicted_work(self.report.compiled, self.fused, self.report.batch_size, self.precision)
        if work is None:
            return None
        kernels = work.kernels
        if kernels.stem.any() and not self.stem_on_cuda_cores:     # no CUDA-core peak: the tensor-core rule
            kernels = replace(kernels, stem=kernels.stem & False)
        args = (kernels, self.peak, self.bandwidth, self.model_params, self.precision.compute,
                self.device.sm_count, self._has("overhead"))
        core = self.cuda_core_peak if kernels.stem.any() or kernels.cuda_core.any() and \
            "depthwise_backward" in self.model_params else None
        rate = {"core_peak": core, "cycles": gpu_model.sm_cycles(self.device), "activation": self.precision.activation}
        seconds = gpu_model.kernel_seconds(*args, **rate)
        train = gpu_model.kernel_seconds(*args, train=True, **rate)   # its first L: a training step's forward
        if seconds is None or train is None:
            return None
        return PredictedTimes(work, seconds, train)

    @cached_property
    def layer_times(self) -> tuple[LayerTime, ...]:
        if self._predicted is not None:
            return self._predicted.layer_times(self.work.layers)
        return self._layer_times_by_work()

    def _layer_times_by_work(self) -> tuple[LayerTime, ...]:
        """Every layer's times, one ``Work`` at a time through ``time``: the reference path (the predicted variant
        takes ``_predicted`` where it can, the same numbers)."""
        if self.variant == "predicted":     # a layer's pass may be several kernels (dgrad, wgrad, casts): their sum
            fk, bk = ([tuple(self.time(w) for w in parts) for parts in self._layer_parts(which)]
                      for which in ("forward", "backward"))
            fwd, bwd = ([sum(k, PassTime()) for k in kernels] for kernels in (fk, bk))
            fk, bk = ([k if len(k) > 1 else () for k in kernels] for kernels in (fk, bk))
        else:
            fwd, bwd = ([self.time(w) for w in self._layer_works(which)] for which in ("forward", "backward"))
            fk = bk = [()] * len(fwd)
        return tuple(LayerTime(lw.node.name, lw.node.op, lw.work_class,
                               self._algorithm(lw.node) if lw.node.rule.algorithms else None, f, b, k, kf)
                     for lw, f, b, k, kf in zip(self.work.layers, fwd, bwd, bk, fk))

    # -- public results (JSON keys are a contract: python -m core estimate --json) -----------------------------
    @cached_property
    def totals(self) -> dict:
        """Times in seconds, always finite (settings that would make one infinite raise ``CalcError``).
        ``samples_per_s`` and ``inference_samples_per_s`` are None where the time they divide by is 0: a network
        that does no work (a single flatten, a view) has no throughput to state (JSON null)."""
        fwd, bwd, upd = self.forward, self.backward, self.update
        r = self.report
        step = self.train_forward.total_s + bwd.total_s + upd.total_s + self.communication_s
        if not isfinite(step):
            self._non_finite("total", Work(None, fwd.flops + bwd.flops + upd.flops,
                                           fwd.bytes + bwd.bytes + upd.bytes))
        n = r.batch_size
        return {
            "forward_s": fwd.total_s, "forward_compute_s": fwd.compute_s,
            "forward_memory_s": fwd.memory_s + fwd.fresh_pages_s,      # fresh-page time included
            "forward_overhead_s": fwd.overhead_s,
            "forward_fresh_bytes": fwd.fresh_bytes, "forward_fresh_s": fwd.fresh_pages_s,
            "backward_s": bwd.total_s, "backward_compute_s": bwd.compute_s,
            "backward_memory_s": bwd.memory_s + bwd.fresh_pages_s, "backward_overhead_s": bwd.overhead_s,
            "update_s": upd.total_s, "communication_s": self.communication_s,
            "training_forward_s": self.train_forward.total_s,
            "training_step_s": step,
            "samples_per_s": n * self.workers / step if step else None,     # training throughput, all workers
            "inference_samples_per_s": n / fwd.total_s if fwd.total_s else None,
            "forward_flops": fwd.flops, "forward_bytes": fwd.bytes, "backward_flops": bwd.flops,
            "backward_bytes": bwd.bytes, "update_flops": upd.flops, "update_bytes": upd.bytes,
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
        """One row per layer (the JSON's "layers"), from ``layer_times``."""
        total_fwd = self.totals["forward_s"] or 1.0
        rows = []
        for lt in self.layer_times:
            f, b = lt.forward, lt.backward
            fwd_pt = RooflinePoint.of(lt.name, f.flops, f.bytes, self.peak, self.bandwidth)
            bwd_pt = RooflinePoint.of(lt.name, b.flops, b.bytes, self.peak, self.bandwidth)
            rows.append({
                "name": lt.name, "op": lt.op, "conv_algorithm": lt.conv_algorithm,
                "forward_flops": f.flops, "forward_bytes": f.bytes, "forward_compute_s": f.compute_s,
                "forward_memory_s": f.memory_s + f.fresh_pages_s, "forward_s": f.total_s,
                "share": f.total_s / total_fwd,
                "arithmetic_intensity": fwd_pt.intensity, "attainable_flop_per_s": fwd_pt.attainable,
                "bound": fwd_pt.bound,
                "backward_flops": b.flops, "backward_bytes": b.bytes, "backward_s": b.total_s,
                "backward_arithmetic_intensity": bwd_pt.intensity, "backward_bound": bwd_pt.bound,
                "limited_by": limiting_term(f), "backward_limited_by": limiting_term(b),
            })
        return rows

    @cached_property
    def bound(self) -> "Estimate | None":
        """Beside a prediction: classic PALEO at PPP 1 with the same settings, "the bound": each layer's FLOPs at
        the datasheet peak plus its bytes at the datasheet bandwidth. Not a hard floor: Winograd does fewer FLOPs
        and a GPU overlaps compute with memory. None for the other variants."""
        if self.variant != "predicted":
            return None
        return Estimate(self.report, self.device, variant="paleo", fused=self.fused, workers=self.workers,
                        link=self.link, ppp_comm=self.ppp_comm, allreduce=self.allreduce, launch=self.launch)

    @cached_property
    def typical_error(self) -> dict | None:
        """The predicted model's held-out error (``typical_error``); None for the other variants."""
        return typical_error(self.device, self.report.batch_size) if self.variant == "predicted" else None

    @cached_property
    def limited_by(self) -> dict:
        """Per pass, the seconds of the layers each term limits (a kernel's whole time goes to the term that sets
        it, ``limiting_term``: compute, memory or overhead; "none" for layers that take no time). A pass's values add
        up to its time; under PALEO's sum they say which term each layer is mostly."""
        if self._predicted is not None:
            return self._predicted.limited_by()
        out = self._limited_by(self.layer_times)
        if self.variant == "predicted":         # a training step's forward, each layer to its limiting term
            acc = dict.fromkeys(("compute", "memory", "overhead", "none"), 0.0)
            for t in (t for kernels in self._train_forward_kernels() for t in kernels):
                acc[limiting_term(t)] += t.total_s
            out = {"forward": out["forward"], "train_forward": acc, "backward": out["backward"]}
        return out

    @staticmethod
    def _limited_by(layer_times: tuple[LayerTime, ...]) -> dict:
        """``limited_by`` from layer rows (the reference path)."""
        out = {}
        for which in ("forward", "backward"):
            acc = dict.fromkeys(("compute", "memory", "overhead", "none"), 0.0)
            for lt in layer_times:       # each kernel of a layer to its own limiting term
                kernels = (lt.backward_kernels if which == "backward" else lt.forward_kernels) or \
                    (getattr(lt, which),)
                for t in kernels:
                    acc[limiting_term(t)] += t.total_s
            out[which] = acc
        return out

    @property
    def overhead_share(self) -> float:
        """The share of the forward time in layers that launch overhead limits (0 for a pass that takes no time)."""
        fwd = self.totals["forward_s"]
        return self.limited_by["forward"]["overhead"] / fwd if fwd else 0.0

    def to_dict(self) -> dict:
        bound = self.bound
        return {
            "model": self.report.name, "input_shape": list(self.report.input_shape),
            "batch_size": self.report.batch_size, "dtype": self.report.dtype, "device": self.device.id,
            "device_name": self.device.name, "ppp": self.ppp, "ppp_memory": self.ppp_memory,
            # a prediction picks each conv's algorithm as the library would (each layer row names it)
            "variant": self.variant,
            "conv_algorithm": "library" if self.variant == "predicted" else self.conv_algorithm,
            "fused": self.fused, "launch": self.launch,
            "workers": self.workers, "link": self.link.id if self.link else None,
            "totals": self.totals, "roofline": self.roofline, "layers": self.layers,
            "variant_reason": self.variant_reason, "typical_error": self.typical_error,
            "bound": {k: bound.totals[k] for k in ("forward_s", "backward_s", "update_s", "training_step_s")}
            if bound else None,
            "limited_by": self.limited_by, "threads": self.threads,
            "calibration": dict(self.device.calibration) if self.device.calibration else None,
        }


def overhead_limited_up_to(runs: list[Estimate], share: float = 0.5) -> int | None:
    """The largest batch of a sweep at which layers limited by launch overhead take at least ``share`` of the
    forward time: below it, a bigger batch costs little more time (the GPU waits on the host). None where no batch
    of the sweep is so limited."""
    limited = [e.report.batch_size for e in runs if e.overhead_share >= share]
    return max(limited) if limited else None


def resolve_device(device: Any, db: DeviceDB | None = None) -> Device:
    if isinstance(device, Device):
        return device
    return _db(db).device(device)


def _db(db: Any) -> DeviceDB:
    if db is None:
        return load_devices()
    if not isinstance(db, DeviceDB):
        raise DeviceError("expected a DeviceDB (core.devices.load_devices)", field="db", value=type(db).__name__)
    return db


def _report(model: Any, batch_size: int, dtype: str, optimizer: str) -> Report:
    """The analysis an estimate works on: a ``Report`` (re-batched as asked) or a ``Network``. Names, files and
    PyTorch modules are loaded by ``core.api`` (``core.estimate``), which calls this module."""
    if isinstance(model, Report):
        if (model.batch_size, model.dtype, model.optimizer) == (batch_size, dtype, optimizer):
            return model
        return Report(model.compiled, batch_size, dtype, optimizer)
    if isinstance(model, Network):
        return Report(compile_network(model), batch_size, dtype, optimizer)
    raise CalcError("an estimate works on a Report or a Network; load names, files and modules with "
                    "core.estimate (core.api)", field="model", value=type(model).__name__)


def estimate(model: Report | Network, device: Any, batch_size: int = 1, dtype: str = DEFAULT_DTYPE, *,
             ppp: float = 1.0, ppp_memory: float | None = None, optimizer: str = DEFAULT_OPTIMIZER,
             variant: str = "auto", conv_algorithm: str = "direct", fused: bool = False, workers: int = 1,
             link: Any = None, ppp_comm: float = 1.0, allreduce: str = "ring", launch: str = "eager",
             threads: int | None = None, db: DeviceDB | None = None) -> Estimate:
    """Time estimate of ``model`` (a Report or a Network) on ``device`` (id, name or Device). ``variant`` "auto":
    the fitted GPU model where it applies (``auto_variant``), else PALEO. ``threads``: the torch CPU thread count
    asked for; a calibrated CPU predicts only the count it was calibrated at (``calibration.threads``), any other
    is refused, naming both."""
    report = _report(model, batch_size, dtype, optimizer)
    dev = resolve_device(device, db)
    lk = None
    if link is not None:
        lk = link if isinstance(link, Interconnect) else _db(db).link(link)
    return Estimate(report, dev, ppp=ppp, ppp_memory=ppp_memory, variant=variant, conv_algorithm=conv_algorithm,
                    fused=fused, workers=workers, link=lk, ppp_comm=ppp_comm, allreduce=allreduce, launch=launch,
                    threads=threads)


def scaling(model: Report | Network, device: Any, link: Any, workers=(1, 2, 4, 8), batch_size: int = 64,
            mode: str = "strong", **kw) -> list[dict]:
    """Data-parallel scaling. strong: the global batch ``batch_size`` is split over K workers (⌈B/K⌉ each, the
    last ones short when K does not divide B, so a step takes as long as the fullest worker); weak: every worker
    keeps ``batch_size``. Speed-up is throughput relative to one worker; efficiency = speed-up / K.

    ``workers``: worker counts from 1 to 65,536. A network that does no work (a training step of 0 s) has no
    throughput: its ``samples_per_s``, ``speedup`` and ``efficiency`` are None."""
    _choice(mode, SCALING_MODES, "mode")
    counts = [_check_workers(k) for k in _items(workers, "workers", limit=1000)]
    check_batch(batch_size)
    check_settings(kw, ("workers", "link"), ("dtype", "optimizer", "db"))

    def run(k: int) -> dict:
        per = ceil(batch_size / k) if mode == "strong" else batch_size
        t = estimate(model, device, batch_size=per, workers=k, link=link if k > 1 else None, **kw).totals
        samples = batch_size if mode == "strong" else batch_size * k
        step = t["training_step_s"]
        return {"workers": k, "per_worker_batch": per, "compute_s": step - t["communication_s"],
                "communication_s": t["communication_s"], "training_step_s": step,
                "samples_per_s": samples / step if step else None}

    runs = {k: run(k) for k in dict.fromkeys((1, *counts))}     # one worker is the baseline, run once
    base = runs[1]["samples_per_s"]
    rows = []
    for k in counts:
        row = dict(runs[k])
        row["speedup"] = row["samples_per_s"] / base if base and row["samples_per_s"] is not None else None
        row["efficiency"] = row["speedup"] / k if row["speedup"] is not None else None
        rows.append(row)
    return rows


SETTINGS = ("ppp", "ppp_memory", "variant", "conv_algorithm", "fused", "workers", "link", "ppp_comm", "allreduce",
            "launch", "threads")


def check_settings(kw: dict, taken: tuple = (), extra: tuple = ()) -> None:
    """Keyword settings an estimate takes (``SETTINGS`` and ``extra``, less those the caller sets itself): a
    misspelt or unknown one is a CalcError naming it, not a TypeError."""
    known = [s for s in (*SETTINGS, *extra) if s not in taken]
    for k in kw:
        if k not in known:
            raise CalcError(f"unknown setting; the settings are {', '.join(known)}", field=str(k)[:80],
                            value=kw[k])


def _items(values: Any, field: str, limit: int = MAX_SWEEP) -> list:
    """A list of the values a sweep runs over: any iterable but a string or a mapping, at most ``limit`` long."""
    if isinstance(values, (str, bytes, dict)) or not hasattr(values, "__iter__"):
        raise CalcError("expected a list of values", field=field, value=values)
    out = []
    for v in values:
        out.append(v)
        if len(out) > limit:
            raise CalcError(f"more than {limit:,} values", field=field, value=f"{type(values).__name__} of {limit:,}+")
    if not out:
        raise CalcError("give at least one value", field=field, value=values)
    return out


def sweep(model: Report | Network, devices, batch_sizes, dtype: str | None = DEFAULT_DTYPE, *,
          optimizer: str = DEFAULT_OPTIMIZER, db: DeviceDB | None = None, **kw) -> list[Estimate]:
    """Estimates for every device × batch size on one analysis (what the app's device comparison and
    time-vs-batch charts use). ``dtype=None`` picks fp32 where a device has it, else its first precision."""
    check_settings(kw)
    compiled = _report(model, 1, DEFAULT_DTYPE, optimizer).compiled
    devs = [resolve_device(d, db) for d in _items(devices, "devices")]
    batches = [check_batch(b) for b in _items(batch_sizes, "batch_sizes")]
    if len(devs) * len(batches) > MAX_SWEEP:
        raise CalcError(f"{len(devs):,} devices × {len(batches):,} batch sizes is more than {MAX_SWEEP:,} estimates",
                        field="batch_sizes", value=len(batches))
    out = []
    for dev in devs:
        dt = dtype or ("fp32" if "fp32" in dev.peak_flops
                       else next((k for k in dev.precisions if k in PRECISIONS), None))
        if dt is None:
            raise CalcError(f"{dev.name} has no precision this calculator knows", node=dev.id, field="peak_flops",
                            value=list(dev.peak_flops))
        out += [Estimate(Report(compiled, b, dt, optimizer), dev, **kw) for b in batches]
    return out
