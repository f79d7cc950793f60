"""The fitted GPU model's works by arrays: every kernel of a network at one batch and precision, timed at once.

``layer_parts`` says what the predicted variant computes, one ``Work`` at a time; a ResNet-152 is
~1,200 works, ~15 ms in Python. Here the same numbers come from arrays: the works' device-free part (FLOPs, bytes,
calls, tiles) is built once per network, batch and precision and shared by every device (``predicted_work``), and
a device's times are a few numpy operations on it (``gpu_model.kernel_seconds``; ``PredictedTimes`` adds them up
per layer and pass). Every operation is the per-work path's, in the same order, so the numbers are equal to the bit
(tests/test_gpu_model_fast.py); the per-work path stays as the reference and for errors. Mixed precision's cast
kernels are ``cast_work``.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from functools import lru_cache
from typing import Any

from . import gpu_model
from .graph import Compiled
from .precision import Precision
from .registry import numel
from .terms import LayerTime, PassTime, Work
from .work import LayerWork, network_work, param_tensors


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


def layer_parts(layers: tuple[LayerWork, ...], works: list[Work], which: str, compiled: Compiled, batch: int,
                p: Precision, stem_on_cuda_cores: bool) -> list[tuple[Work, ...]]:
    """The predicted variant's works per layer: one, or in the backward pass of a conv or linear layer with
    trainable weights two GEMMs, the input gradient (dgrad: dy·W, tiles of N·H_in·W_in × C_in) and the weight
    gradient (wgrad: dyᵀ·x, its own efficiency), each a kernel call reading dy. In mixed precision a conv or
    linear layer's pass ends with its cast kernels (``cast_work``). ``which``: forward, backward or train_forward."""
    n, out = batch, []
    for lw, w in zip(layers, works):
        node = lw.node
        w = Work(w.work_class, w.flops, w.bytes, w.fresh_bytes, w.calls,      # (replace() costs 3× more)
                 gpu_model.layer_tiles(node, n), which == "backward", train=which == "train_forward",
                 blocks=gpu_model.channel_blocks(node, lw.work_class, which),
                 cuda_core=which == "backward" and gpu_model.cuda_core_backward(lw, compiled, p.activation),
                 stem=stem_on_cuda_cores and gpu_model.stem_conv(node))
        cast = cast_work(lw, p, which)
        if which != "backward" or not (w.flops and node.bwd_weight_flops and gpu_model.compute_class(lw.work_class)):
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
