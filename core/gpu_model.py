"""The fitted GPU time model (the estimate variant "predicted"): per kernel, three terms and one max.

    compute  = FLOPs / (peak at the precision × efficiency[class] × tensor-core factor × backward factor × wave)
    memory   = bytes / (bandwidth × memory efficiency)
    overhead = kernel calls × per-call overhead × library_overhead (a cuDNN/cuBLAS call) × autograd_overhead
    time     = max(compute + memory, overhead)        (the host queues kernels ahead of the GPU)

The rules the terms apply, each fitted per GPU architecture generation (``PARAMETERS``; ``core/gpu_params.json``,
written by ``benchmarks/fit_gpu_model.py`` from ``benchmarks/data/gpu_timings.csv``):
* wave efficiency: a conv or linear layer is an implicit GEMM of ``TILE``×``TILE`` output tiles, tiles / (waves·SMs);
* Winograd FLOPs for a 3×3 stride-1 groups-1 conv in fp32 (``uses_winograd``); tensor-core precisions run a GEMM;
* a conv or linear backward is two kernels, dgrad at ``backward`` and wgrad at ``backward_weight``;
* a training step's forward pays ``autograd_overhead`` per call, as the backward does; the optimizer step is one
  kernel call per layer with trainable parameters;
* a train-mode batch norm runs a block per channel: the slower of DRAM × min(1, C / SMs) and ``sm_rate`` elements
  per SM-cycle (``channel_fill``, ``sm_cycles``);
* mixed precision is autocast: a conv or linear pass ends with its cast kernels (``core.predicted.cast_work``);
* a depthwise conv's backward runs at ``depthwise_backward`` of the CUDA-core peak (``cuda_core_backward``), and a
  stem conv over ≤ 3 channels on CUDA cores in tensor-core precisions (``stem_conv``).
``kernel_seconds`` computes all of a network's kernels at once (numpy), equal to the per-work terms to the bit.
Generations are the devices' ``architecture`` values (Ampere is ``ampere`` and ``ampere-ga100``). Not modelled:
fp16 on GPUs without fast fp16 (Pascal GP102/GP104). Evidence and history: docs/gpu-model-history.md.
"""

from __future__ import annotations

import json
from functools import lru_cache
from math import ceil
from pathlib import Path

from .devices import Device
from .errors import CalcError
from .registry import REGISTRY, work_fallbacks
from .terms import Rates, Term, Work

PARAMS_FILE = Path(__file__).resolve().parent / "gpu_params.json"
TILE = 128                    # output tile edge of a GEMM kernel (rows and columns): a fixed assumption, not fitted
# the named parameters of one generation: (name, what it is, lower bound, upper bound) — the fit keeps them in range
PARAMETERS = (
    ("conv", "share of the peak a dense convolution reaches (after wave quantisation)", 0.02, 1.0),
    ("grouped_conv", "share of the peak a grouped or depthwise convolution reaches", 0.002, 1.0),
    ("linear", "share of the peak a fully connected layer reaches", 0.02, 1.0),
    ("tensor_tf32", "extra factor on the tf32 tensor-core peak (realistic ceiling)", 0.05, 1.0),
    ("tensor_fp16", "extra factor on the fp16/bf16 tensor-core peak (fp16, bf16 and mixed)", 0.02, 1.0),
    ("memory", "share of the datasheet bandwidth reached", 0.1, 1.0),
    ("overhead_s", "seconds per kernel call (launch + eager PyTorch dispatch)", 1e-6, 2e-3),
    # at most 1: a backward kernel is not taken to outrun its class's forward. With 2.0 allowed, the fit on 1,084
    # rows put every generation's weight-gradient factor at the bound (wgrad at up to 2× the peak) and paid for
    # it with a dgrad factor of ~0.37, the same held-out error (LOSO 18 % / 47 %): the rows do not separate the
    # two kernels, and a breakdown showing a kernel faster than the peak is wrong to a student.
    ("backward", "factor on the compute efficiency of the backward pass (input gradients, other ops)", 0.2, 1.0),
    ("backward_weight", "factor on the compute efficiency of a weight gradient (conv, linear)", 0.2, 1.0),
    # at least 1: a cuDNN or cuBLAS call (descriptors, algorithm lookup, workspace) costs the host no less than an
    # elementwise kernel's launch
    ("library_overhead", "factor on the per-call overhead of a convolution or matrix-multiply kernel (a cuDNN or "
                         "cuBLAS call)", 1.0, 10.0),
    # at least 1: a call autograd records (a training step's forward) or runs (the backward) costs the host no less
    # than the same call under no_grad
    ("autograd_overhead", "factor on the per-call overhead of a kernel called under autograd: a training step's "
                          "forward (graph recorded) and the backward (the engine's nodes)", 1.0, 3.0),
    # a depthwise conv's input- and weight-gradient kernels: their own share of the CUDA-core peak, whatever the
    # precision (no tensor-core kernel; they accumulate in fp32)
    ("depthwise_backward", "share of the CUDA-core (fp32) peak a depthwise convolution's backward kernels reach",
     0.002, 1.0),
    # a train-mode batch norm's kernels: bound by their SMs, not DRAM, where this rate is the slower (an H100, the
    # H200's SMs and clock at 0.70× its bandwidth, took 1.05× the H200's time for the same batch norms). Per
    # SM-cycle, not per FLOP: an SM's load/store path, not its FP32 lanes (64 on GP100, Volta, Turing and GA100,
    # 128 on GP102 and Hopper), is taken to set it
    ("sm_rate", "elements a train-mode batch norm's kernels move per SM-cycle (the SMs its channels fill); the "
                "kernel takes the slower of that and DRAM", 0.02, 64.0),
)
PARAM_NAMES = tuple(p[0] for p in PARAMETERS)
COMPUTE_CLASSES = ("conv", "grouped_conv", "linear")     # other classes of work: compute at the peak (memory-bound)
TENSOR_FACTOR = {"tf32": "tensor_tf32", "fp16": "tensor_fp16", "bf16": "tensor_fp16"}


def compute_class(work_class: str | None) -> str | None:
    """The fitted parameter a class of work runs at: its own, or its fallback's (``WORK_FALLBACK``: a depthwise conv
    at "grouped_conv", which the published timings were fitted with); None for the memory-bound classes."""
    return next((c for c in work_fallbacks(work_class) if c in COMPUTE_CLASSES), None)


@lru_cache(maxsize=1)
def load_params() -> dict:
    """The fitted file: {"fitted": date, "data": …, "generations": {architecture: {parameter: value}}, …}."""
    return json.loads(PARAMS_FILE.read_text(encoding="utf-8"))


def generation_params(device: Device) -> dict:
    """The fitted parameters of the device's architecture generation; a CalcError naming what is missing."""
    arch = getattr(device, "architecture", None)
    gens = load_params()["generations"]
    if not arch:
        raise CalcError(f"the predicted GPU model needs the device's architecture generation; {device.name} has "
                        f"none (fitted: {', '.join(gens)})", node=device.id, field="architecture", value=None)
    if arch not in gens:
        raise CalcError(f"the predicted GPU model has no fitted parameters for the {arch} generation (fitted: "
                        f"{', '.join(gens)}); use the paleo or roofline variant", node=device.id,
                        field="architecture", value=arch)
    return gens[arch]


def has_params(device: Device) -> bool:
    return bool(getattr(device, "architecture", None)) and device.architecture in load_params()["generations"]


def wave_efficiency(tiles: int, sm_count: int | None) -> float:
    """tiles / (⌈tiles / SMs⌉ · SMs): the share of SM-slots busy over the waves; 1 without tiles or SM count."""
    if not tiles or not sm_count:
        return 1.0
    return tiles / (ceil(tiles / sm_count) * sm_count)


def gemm_tiles(op: str, groups: int, m: int, n: int) -> int:
    """Output tiles of ``groups`` GEMMs of m × n (``TILE``-square tiles); 0 for ops whose rule has no ``gemm``."""
    rule = REGISTRY.get(op)
    if rule is None or rule.gemm is None or m <= 0 or n <= 0:
        return 0
    return groups * ceil(m / TILE) * ceil(n / TILE)


def layer_tiles(node, batch: int) -> int:
    """Tiles of a node's forward GEMMs at ``batch``, as its rule's ``gemm`` gives them (conv2d: M = N·H_out·W_out,
    N = C_out / groups per group; linear: M = N·(leading dims), N = out_features)."""
    if node.rule.gemm is None:
        return 0
    groups, m, n = node.rule.gemm(node.ctx, batch)
    return gemm_tiles(node.op, groups, m, n)


def dgrad_tiles(node, batch: int) -> int:
    """Tiles of a layer's input-gradient GEMM at ``batch``: conv2d M = N·H_in·W_in, N = C_in / groups per group;
    linear M = N·(leading dims), N = in_features; 0 for other ops."""
    shape = node.in_shapes[0]
    if node.op == "conv2d":
        groups = node.attrs.get("groups", 1)
        return gemm_tiles(node.op, groups, batch * shape[1] * shape[2], shape[0] // groups)
    if node.op == "linear":
        m = batch
        for d in shape[:-1]:
            m *= d
        return gemm_tiles(node.op, 1, m, shape[-1])
    return 0


# the work class whose backward kernels may run on CUDA cores (``cuda_core_backward``, ``on_cuda_cores``), with the
# classes that fall back to it ("depthwise_conv_large"; ``depthwise``)
CUDA_CORE_BACKWARD = "depthwise_conv"
PER_CHANNEL = "batch_norm"                  # the work class whose train-mode kernels run one thread block a channel


def channel_blocks(node, work_class: str | None, which: str) -> int:
    """The thread blocks of a kernel that gives each channel one (a train-mode batch norm: its channels, in a
    training step's forward and in the backward; an inference pass's is elementwise): 0 for any other kernel.
    ``which``: forward (inference), train_forward or backward."""
    return node.in_shapes[0][0] if work_class == PER_CHANNEL and which != "forward" and node.in_shapes[0] else 0


# ops whose output keeps the memory format of the operand that decides it (``channels_last_inputs``): PyTorch's
# elementwise ops (TensorIterator), batch norm, pooling and interpolation, a conv (cuDNN writes its output in its
# input's format) and a concatenation. Not a layer norm: on a channels-last tensor PyTorch returns a contiguous one.
KEEPS_LAYOUT = frozenset({"add", "mul", "sub", "div", "identity", "relu", "relu6", "gelu", "silu", "hardswish",
                          "sigmoid", "batch_norm", "dropout", "conv2d", "max_pool2d", "avg_pool2d",
                          "adaptive_avg_pool2d", "interpolate", "concat"})
TO_NCHW = (0, 3, 1, 2)       # a permute that turns an NHWC-shaped tensor into a channels-last NCHW one


@lru_cache(maxsize=64)
def channels_last_inputs(compiled) -> frozenset:
    """The names of the nodes whose first input is a channels-last tensor (NCHW in shape, NHWC in memory): a
    ``permute(0, 3, 1, 2)`` makes one (ConvNeXt's blocks and its stem's norm permute to NHWC for their layer norm
    and back), and an op that keeps its inputs' layout (``KEEPS_LAYOUT``) passes on that of its first input of the
    output's shape (an operand that is broadcast does not decide: ``x * scale`` with x channels-last is
    channels-last, ``nchw + cl`` is NCHW, ``cl + nchw`` channels-last). Every other op, a view that is not that
    permute included, is taken to give a contiguous NCHW tensor."""
    last: dict = {}
    out = set()
    for node in compiled.nodes:
        ins = [last.get(i, False) for i in node.inputs]
        if node.op == "permute":
            last[node.name] = tuple(node.attrs.get("dims", ())) == TO_NCHW
        else:
            decides = [cl for cl, shape in zip(ins, node.in_shapes) if tuple(shape) == tuple(node.out_shape)] or ins
            last[node.name] = node.op in KEEPS_LAYOUT and bool(decides) and decides[0]
        if ins and ins[0]:
            out.add(node.name)
    return frozenset(out)


def cuda_core_backward(lw, compiled, activation: int) -> bool:
    """Whether a layer's backward kernels are timed on CUDA cores (``on_cuda_cores``): a depthwise conv's, unless
    its input is channels-last (``channels_last_inputs``) on 2-byte activations. PyTorch sends a channels-last
    depthwise conv to cuDNN's NHWC kernels in every precision; in bf16 and fp16 their input and weight gradients
    took 0.37–0.59× and 0.09–0.12× the time of PyTorch's NCHW kernels on an H200, so they are timed at the
    grouped-conv rule. In fp32 cuDNN's NHWC weight gradient took 1.2–12× as long (its input gradient 0.47–0.71×),
    so fp32 and TF32 keep the CUDA-core rule (benchmarks/data/probes/)."""
    return depthwise(lw.work_class) and not (activation == 2 and lw.node.name in channels_last_inputs(compiled))


def depthwise(work_class: str | None) -> bool:
    """A depthwise conv of any kernel size (``CUDA_CORE_BACKWARD`` or a class that falls back to it)."""
    return CUDA_CORE_BACKWARD in work_fallbacks(work_class)


STEM_CHANNELS = 3


def stem_conv(node) -> bool:
    """A dense convolution over at most ``STEM_CHANNELS`` input channels: a network's first, on the image's 3.
    cuDNN's tensor-core kernels take channels in multiples of 8 (fp16, bf16) or 4 (TF32, and a 4-channel first
    layer in fp16), so in those precisions such a conv's kernels (forward, input and weight gradients) run on CUDA
    cores: at its class's efficiency of the CUDA-core peak (``Estimate.cuda_core_peak``), without the tensor-core
    factor (``Work.stem``; a device without that peak keeps the tensor-core rule). Fitted with 4 as the bound; its
    one 4-channel conv (an EfficientNet-B0 squeeze-excitation layer on 1×1 pixels) is launch-bound."""
    return node.op == "conv2d" and node.attrs.get("groups", 1) == 1 and node.in_shapes[0][0] <= STEM_CHANNELS


def on_cuda_cores(w: Work, p: dict) -> bool:
    """A depthwise conv's backward kernel (input or weight gradient; ``cuda_core_backward``), where the parameters
    have ``depthwise_backward``: it runs at that share of the CUDA-core peak (``Estimate.cuda_core_peak``), not the
    class's share of the precision's peak."""
    return w.backward and w.cuda_core and "depthwise_backward" in p


def cuda_core_precision(compute: str) -> str:
    """The peak a kernel without tensor cores runs at, for a precision's math: fp64's for fp64, else fp32's (fp16,
    bf16 and tf32 kernels on CUDA cores accumulate in fp32)."""
    return "fp64" if compute == "fp64" else "fp32"


def efficiency(w: Work, compute: str, p: dict, sm_count: int | None) -> float:
    """The share of the peak a work reaches: class × tensor-core factor × backward factor × wave efficiency; a
    depthwise conv's backward kernel (``on_cuda_cores``): ``depthwise_backward`` × wave efficiency, of the CUDA-core
    peak."""
    if on_cuda_cores(w, p):
        return p["depthwise_backward"] * wave_efficiency(w.tiles, sm_count)
    cls = compute_class(w.work_class)
    eff = p[cls] if cls else 1.0
    if compute in TENSOR_FACTOR and not w.stem:       # a stem conv: no tensor-core kernel (``stem_conv``)
        eff *= p[TENSOR_FACTOR[compute]]
    if w.backward:
        # a parameter set without ``backward_weight`` (written before the split) uses ``backward`` for both
        eff *= p.get("backward_weight", p["backward"]) if w.weight_grad else p["backward"]
    return eff * wave_efficiency(w.tiles, sm_count)


def compute_s(w: Work, e: Rates) -> float:
    if not w.flops:
        return 0.0
    peak = e.cuda_core_peak if w.stem or on_cuda_cores(w, e.model_params) else e.peak
    return w.flops / (peak * efficiency(w, e.precision.compute, e.model_params, e.device.sm_count))


def channel_fill(blocks: int, sm_count: int | None) -> float:
    """The share of the SMs a one-block-per-channel kernel keeps busy: min(1, blocks / SMs); 1 without blocks or
    SM count. No wave tail: with several blocks resident on an SM, channels beyond the SM count fill in (on an H200
    256 to 2048 channels of one tensor size timed within ±17 % of each other)."""
    if not blocks or not sm_count:
        return 1.0
    return min(1.0, blocks / sm_count)


def sm_cycles(device) -> float | None:
    """SM-cycles a second: SMs × boost clock (device_specs.json's ``sm_count`` and ``boost_clock``); None where the
    device states either not."""
    sms, clock = getattr(device, "sm_count", None), getattr(device, "boost_clock", None)
    return sms * clock if sms and clock else None


def narrowest_channel_fill(layers, sm_count: int | None) -> tuple[int, float] | None:
    """(channels, ``channel_fill``) of the narrowest one-block-per-channel kernel among a network's layers
    (``LayerWork``s) in a training step; None where it has none or the device states no SM count."""
    blocks = [b for lw in layers if (b := channel_blocks(lw.node, lw.work_class, "backward"))]
    if not blocks or not sm_count:
        return None
    return min(blocks), channel_fill(min(blocks), sm_count)


def memory_s(w: Work, e: Rates) -> float:
    """Bytes at the fitted share of the bandwidth. A one-block-per-channel kernel (``channel_blocks``) where the
    parameters have ``sm_rate`` and the device states its SMs and clock (``sm_cycles``): the slower of its bytes
    at that bandwidth and its elements at ``sm_rate`` per SM-cycle of the SMs its channels fill
    (``channel_fill``); without them, its bytes at the bandwidth × that fill."""
    p = e.model_params
    fill = channel_fill(w.blocks, e.device.sm_count)
    cycles = sm_cycles(e.device) if w.blocks and "sm_rate" in p else None
    if cycles:
        return max(w.bytes / (e.bandwidth * p["memory"]),
                   w.bytes / e.precision.activation / (cycles * fill * p["sm_rate"]))
    return w.bytes / (e.bandwidth * p["memory"] * fill)


def overhead_s(w: Work, e: Rates) -> float:
    """Kernel calls × the per-call overhead; a conv or linear kernel's × ``library_overhead``; a call under
    autograd (a backward work, a training step's forward) × ``autograd_overhead`` (a parameter set written before
    it had either: 1)."""
    t = w.calls * e.model_params["overhead_s"]
    if compute_class(w.work_class):
        t = t * e.model_params.get("library_overhead", 1.0)
    if w.backward or w.train:
        t = t * e.model_params.get("autograd_overhead", 1.0)
    return t


def kernel_seconds(k, peak: float, bandwidth: float, p: dict, compute: str, sm_count: int | None,
                   overhead: bool = True, train: bool = False, core_peak: float | None = None,
                   cycles: float | None = None, activation: int = 4) -> dict | None:
    """``compute_s``, ``memory_s``, ``overhead_s`` and ``combine``'s total over many kernels at once: the arrays of
    ``core.predicted.Kernels`` (one entry per kernel; numpy, imported here so that ``import core`` does not load it).
    The same formulas as the functions above, each operation in the same order, so every time equals the
    per-``Work`` path's to the last bit (IEEE operations on the same operands). ``overhead`` False: CUDA Graphs (no
    overhead term). ``train``: the forward kernels are a training step's (under autograd, as the backward's are).
    ``core_peak``: the CUDA-core peak of the kernels ``k.cuda_core`` (a depthwise conv's backward) and ``k.stem``
    (``stem_conv``) mark.
    ``k.blocks``: a one-block-per-channel kernel's blocks (``channel_blocks``), in the forward's entries the
    training step's (used only where ``train``); ``cycles`` (``sm_cycles``) and ``activation`` (bytes an element):
    its SM rate where the parameters have ``sm_rate``.
    None where a time is not a finite number: the per-work path then raises, naming the work."""
    import numpy as np

    # efficiency(): class × tensor-core factor × backward factor × wave (a factor of 1.0 leaves a float unchanged)
    eff = np.array([p[c] for c in COMPUTE_CLASSES] + [1.0])[k.work_class]
    if compute in TENSOR_FACTOR:            # a stem conv's kernels without it (× 1.0 leaves a float unchanged)
        eff = eff * np.where(k.stem, 1.0, p[TENSOR_FACTOR[compute]])
    eff = eff * np.array([1.0, p["backward"], p.get("backward_weight", p["backward"])])[k.kind]
    cuda = k.cuda_core & ("depthwise_backward" in p)       # on_cuda_cores(): only where the parameters have it
    if cuda.any():
        eff = np.where(cuda, p["depthwise_backward"], eff)
    with np.errstate(all="ignore"):
        if sm_count:             # wave_efficiency(): tiles / (⌈tiles / SMs⌉ · SMs), 1 without tiles
            t = k.tiles
            eff = eff * np.where(t > 0, t / (np.ceil(t / sm_count) * sm_count), 1.0)
        ov = np.zeros_like(k.calls)
        if overhead:        # overhead_s(): calls × per call × library factor, then × autograd factor
            ov = k.calls * p["overhead_s"] * \
                np.array([p.get("library_overhead", 1.0)] * len(COMPUTE_CLASSES) + [1.0])[k.work_class]
            graded = np.ones_like(k.kind, dtype=bool) if train else k.kind > 0
            ov = np.where(graded, ov * p.get("autograd_overhead", 1.0), ov)
        core = cuda | k.stem        # compute_s(): the CUDA-core peak for both kinds
        peaks = np.where(core, np.nan if core_peak is None else core_peak, peak) if core.any() else peak
        # memory_s(): × channel_fill(blocks) of a one-block-per-channel kernel; an inference forward has none
        blocks = k.blocks if train else np.where(k.kind > 0, k.blocks, 0.0)
        fill = np.where(blocks > 0, np.minimum(blocks / sm_count, 1.0), 1.0) if sm_count else 1.0
        mem = k.bytes / (bandwidth * p["memory"] * fill)
        if cycles and sm_count and "sm_rate" in p:     # the slower of DRAM and the SMs the channels fill
            sms = k.bytes / activation / (cycles * fill * p["sm_rate"])
            mem = np.where(blocks > 0, np.maximum(k.bytes / (bandwidth * p["memory"]), sms), mem)
        out = {"compute": np.where(k.flops != 0, k.flops / (peaks * eff), 0.0), "memory": mem, "overhead": ov}
        out["total"] = np.maximum(out["compute"] + out["memory"], out["overhead"])   # combine()
    if not all(np.isfinite(v).all() for v in out.values()):
        return None
    return out


def terms():
    """The model's terms; ``combine`` ("predicted") takes max(compute + memory, overhead)."""
    return (Term("compute", "compute", compute_s, has_params),
            Term("memory", "memory", memory_s, has_params),
            Term("overhead", "serial", overhead_s, has_params))


def uses_winograd(node, compute: str) -> bool:
    """cuDNN's choice as modelled: Winograd for a 3×3 stride-1 groups-1 conv in fp32 (no tensor cores)."""
    return compute == "fp32" and node.rule.algorithms is not None and \
        node.rule.algorithms(node.ctx, "winograd") is not None
