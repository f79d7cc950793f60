"""A network's work, counted once: per layer and pass, the FLOPs, the elements and bytes it moves and its calls.

The units here do not depend on the batch size, the precision or the device (``PassWork``: per sample, weights per
batch), so a sweep over devices and batch sizes is arithmetic on one ``network_work``. A convolution's FLOPs under
another algorithm (Winograd, FFT) come from its rule (``conv_algorithm_flops``; ``conv_choice``: the algorithm a
node runs with, and its FLOPs at a batch); the optimizer's bytes as torch.optim's per-parameter loop moves them come
from ``EAGER_ACCESSES`` (``eager_update_bytes``), its calls from ``param_tensors`` and ``trainable_layers``.
``figure``: a device's figure for a class of work, or its fallback class's.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from functools import lru_cache

from .choices import CONV_ALGORITHMS
from .errors import CalcError
from .graph import Compiled, NodeInfo
from .precision import Precision
from .registry import numel, work_fallbacks


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


def layer_work(n: NodeInfo, fused: bool) -> LayerWork:
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


# PyTorch's CPU convolution at batch 1 (``ConvParams::use_mkldnn``, aten/src/ATen/native/Convolution.cpp): an
# ungrouped conv whose kernel is at most 3 wide in one dimension and whose input holds at most 20,480 elements runs
# PyTorch's own im2col + GEMM, not oneDNN (oneDNN's verbose log, torch 2.14: 416×7×7 and 256×8×8 im2col, 418×7×7 and
# 256×9×9 oneDNN). A GEMM as narrow as the feature map streams its weights: on an AMD EPYC a 512→512 3×3 conv at
# 2×2 read them at 7 GB/s, one at 7×7 (oneDNN) near the memory bandwidth. A CPU calibrated with the class (its
# figures in ``efficiency``: conv's, and a weight rate of its own) times these layers as it.
IM2COL_MAX_INPUT = 20480


def im2col_path(n: NodeInfo, batch: int) -> bool:
    """Whether PyTorch runs this conv2d node on a CPU as im2col + GEMM (above) rather than on oneDNN: at batch 1,
    ungrouped, a kernel at most 3 wide in one dimension, an input of at most ``IM2COL_MAX_INPUT`` elements."""
    if batch != 1 or n.op != "conv2d" or n.attrs.get("groups", 1) != 1:
        return False
    kh, kw = n.attrs["kernel_size"]
    return not (kh > 3 and kw > 3) and numel(n.in_shapes[0]) <= IM2COL_MAX_INPUT


def im2col_conv(lw: LayerWork, batch: int) -> bool:
    """Whether a "conv"-class conv2d (1×1 stride-1 convs are "pointwise_conv") takes the im2col path."""
    return lw.work_class == "conv" and im2col_path(lw.node, batch)


def cpu_classes(layers: tuple[LayerWork, ...], batch: int, efficiency: dict | None) -> tuple[str, ...] | None:
    """Each layer's class of work on a CPU calibrated with the im2col path ("im2col_conv" in its ``efficiency``):
    "im2col_conv" where ``im2col_conv``; None where the device has no such figure or no layer runs the path."""
    if "im2col_conv" not in (efficiency or {}):
        return None
    classes = tuple("im2col_conv" if im2col_conv(lw, batch) else lw.work_class for lw in layers)
    return classes if "im2col_conv" in classes else None


# oneDNN computes a conv in a blocked layout (channels in blocks of the SIMD width: 16 fp32 lanes on AVX-512, 8 on
# AVX2) and PyTorch copies each call's input into it and the output back. A tensor whose channels are not a
# multiple of the block takes a slower, padded copy: on an AMD EPYC (AVX-512) a 63-channel depthwise 3×3 at 28×28
# took 27 µs more than a 64-channel one, 0.27 ns per element copied (docs/cpu-calibration.md, "Padded layouts").
def padded_elements(layers: tuple[LayerWork, ...], batch: int, block: int) -> tuple[int, ...]:
    """Per layer, the elements of a oneDNN conv's input and output (at ``batch``) whose channels are not a multiple
    of ``block``; 0 for any other layer and for a conv on the im2col path (``im2col_path``)."""
    out = []
    for lw in layers:
        n = lw.node
        if n.op != "conv2d" or im2col_path(n, batch):
            out.append(0)
            continue
        out.append(batch * sum(numel(sh) for sh in (n.in_shapes[0], n.out_shape) if sh[0] % block))
    return tuple(out)


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


def _by_class(layers, which: str) -> dict:
    out: dict[str, PassWork] = {}
    for lw in layers:
        w = getattr(lw, which)
        out[lw.work_class] = out.get(lw.work_class, PassWork()) + w
    return out


@lru_cache(maxsize=64)
def network_work(compiled: Compiled, fused: bool) -> NetworkWork:
    """Per-layer work of a compiled network, computed once and shared by every device, batch and precision."""
    layers = tuple(layer_work(n, fused) for n in compiled.nodes)
    fwd, bwd = _by_class(layers, "forward"), _by_class(layers, "backward")
    return NetworkWork(layers, fwd, bwd, sum(fwd.values(), PassWork()), sum(bwd.values(), PassWork()))


@lru_cache(maxsize=64)
def trainable_layers(compiled: Compiled) -> int:
    """The layers that hold trainable parameters (the predicted variant's optimizer step: a kernel call each)."""
    return sum(1 for n in compiled.nodes if n.params.trainable)


def figure(figures: dict, work_class: str | None, default: float) -> float:
    """A device's figure for a class of work; a class it has no figure for uses its nearest fallback's
    (WORK_FALLBACK): a calibration made before pooling had its own class gives pooling elementwise's."""
    for c in work_fallbacks(work_class):
        if c in figures:
            return figures[c]
    return default


def in_classes(work_class: str | None, classes) -> bool:
    """Whether a class of work is one of ``classes`` or falls back to one (WORK_FALLBACK: a pointwise conv is a
    conv), as ``figure`` would read a figure given for those classes."""
    return any(c in classes for c in work_fallbacks(work_class))


def conv_choice(info: NodeInfo, algorithm: str, batch: int) -> tuple[str, int]:
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
