"""The GPU model as the fit evaluates it: the parameter vector (``NAMES`` and its bounds, the screening switches
of ``GPU_EXP``), one array entry per (dataset row, layer work) taken from core.paleo's own per-layer works
(``features``), and the model's time per row from them with numpy (``predict``). Part of
benchmarks/fit_gpu_model.py.
"""

from __future__ import annotations

import os
import re
from dataclasses import replace

import numpy as np

from core import gpu_model, zoo
from core.graph import compile_network
from core.paleo import Estimate
from core.precision import optimizer
from core.report import Report
from core.terms import Work
from core.work import eager_update_bytes, param_tensors
from gpu_fit_data import pass_seconds, timed_extras

NAMES = gpu_model.PARAM_NAMES
LO = np.array([p[2] for p in gpu_model.PARAMETERS])
HI = np.array([p[3] for p in gpu_model.PARAMETERS])
# where the descent starts (not claims: the fit moves them); the all-rows fit starts here, each generation from it
START = {"conv": 0.5, "grouped_conv": 0.1, "linear": 0.5, "tensor_tf32": 0.5, "tensor_fp16": 0.3, "memory": 0.7,
         "overhead_s": 2e-5, "backward": 0.8, "backward_weight": 0.8, "library_overhead": 1.5, "autograd_overhead": 1.3,
         "depthwise_backward": 0.05, "sm_rate": 1.0}

CLASS = {"conv": 0, "grouped_conv": 1, "linear": 2}          # other classes: index 3, efficiency 1
TC = {"tf32": 1, "fp16": 2, "bf16": 2}                       # tensor-core factor used: 0 none

# screening switches for the "what was tried" table (GPU_EXP=queue,views,smalltile,graph,bias,cudnn,dwcuda,
# bntrain,infov,foreach,fewrows,minrows,nchw,bwd16,dwlast,bnelem,bnnative,bnhalf,chrate,smdram,dwl32,wino,k1,
# k1tc):
# not the model
EXP = set(filter(None, os.environ.get("GPU_EXP", "").split(",")))
EXTRA: tuple = ((("small_tile", 0.2, 1.0, 0.7),) if "smalltile" in EXP else ()) + \
    ((("graph_overhead", 0.02, 1.0, 0.5),) if "graph" in EXP else ()) + \
    ((("inference_overhead", 0.2, 1.0, 0.7),) if "infov" in EXP else ()) + \
    ((("backward_fp16", 0.2, 1.0, 0.8),) if "bwd16" in EXP else ()) + \
    ((("bn_native", 1.0, 8.0, 2.0),) if "bnnative" in EXP else ()) + \
    ((("bn_half", 1.0, 8.0, 2.0),) if "bnhalf" in EXP else ()) + \
    ((("channel_rate", 1e-4, 0.1, 0.005),) if "chrate" in EXP else ()) + \
    ((("dw_last_fp32", 1.0, 20.0, 2.0),) if "dwl32" in EXP else ()) + \
    ((("winograd", 0.2, 2.0, 1.0),) if "wino" in EXP else ()) + \
    ((("conv_1x1", 0.3, 2.0, 1.0),) if EXP & {"k1", "k1tc"} else ())    # screening only
# "graph": a factor on the per-kernel overhead of the rows not timed in eager PyTorch (MXNet, TensorFlow, Caffe,
# Torch7: a runtime that runs a graph, or Lua's thinner dispatch), so PyTorch's overhead is not fitted to them
NAMES = NAMES + tuple(e[0] for e in EXTRA)
LO = np.concatenate([LO, [e[1] for e in EXTRA]]) if EXTRA else LO
HI = np.concatenate([HI, [e[2] for e in EXTRA]]) if EXTRA else HI
START.update({e[0]: e[3] for e in EXTRA})


def _start_vector() -> np.ndarray:
    return np.array([START[n] for n in NAMES])


def param_vectors(doc: dict) -> dict:
    """A parameter file's sets (``doc``: gpu_params.json) as the fit's vectors, by generation and ``all``; a
    screening switch's parameter the file lacks at its start value."""
    sets = {**doc["generations"], "all": doc["all_rows"]}
    return {g: np.array([p.get(n, START[n]) for n in NAMES]) for g, p in sets.items()}


def _vectors(fitted: dict, rows: list[dict]) -> np.ndarray:
    return np.array([fitted.get(r["generation"], fitted["all"]) for r in rows])


def _estimate(compiled, dev, batch: int, dtype: str) -> Estimate:
    """An Estimate of the predicted variant whatever the file holds (its works do not depend on the parameters)."""
    saved = gpu_model.load_params
    gpu_model.load_params = lambda: {"generations": {dev.architecture: START}}
    try:
        return Estimate(Report(compiled, batch, dtype, "sgd_momentum"), dev, variant="predicted")
    finally:
        gpu_model.load_params = saved


def _dgrad_tiles(node, batch: int, tile: int) -> int:
    """Tiles of the input-gradient GEMM: M = N·(input spatial), N = C_in / groups (conv); linear: N = in."""
    op, shp = node.op, node.in_shapes[0]
    if op == "conv2d":
        g = node.attrs.get("groups", 1)
        m, n = batch * shp[1] * shp[2], shp[0] // g
    elif op == "linear":
        g, m, n = 1, batch * int(np.prod(shp[:-1])), shp[-1]
    else:
        return 0
    return g * -(-m // tile) * -(-n // tile)


def _tiles_at(node, batch, tile):
    if node.rule.gemm is None:
        return 0
    g, m, n = node.rule.gemm(node.ctx, batch)
    if m <= 0 or n <= 0:
        return 0
    return g * -(-m // tile) * -(-n // tile)


# the first cuDNN with a Winograd algorithm per kernel (release notes: v5 added WINOGRAD for forward and backward
# data; v5.1 WINOGRAD_NONFUSED, with backward filter)
WINOGRAD_SINCE = {"fwd": (5, 0), "dgrad": (5, 0), "bwd": (5, 0), "wgrad": (5, 1)}


def cudnn_version(framework: str) -> tuple[int, int] | None:
    """The cuDNN a row's framework string names, as (major, minor); (0, 0) for Caffe of 2014 (im2col + cuBLAS, or
    a cuDNN v1/v2 of that year: no Winograd); None where none is named (a 2017 or later stack: all kernels)."""
    m = re.search(r"cuDNN (\d+)\.(\d+)", framework, re.IGNORECASE)
    if m:
        return int(m.group(1)), int(m.group(2))
    return (0, 0) if framework.startswith("Caffe (2014") or framework.startswith("Caffe + cuDNN") else None


def foreach_step(framework: str) -> bool:
    """Whether a row's optimizer step runs PyTorch's multi-tensor "foreach" kernels: its default on CUDA from
    PyTorch 2.0 (pytorch/pytorch#92306, BC-breaking note: SGD, Adam and the others "default to faster foreach
    implementation when on CUDA"; #95862, before the release, made it hold for nn.Parameter). Only a row naming
    PyTorch 2 or later: the NGC containers of the NVIDIA and Lambda rows (20.10 to 22.09) hold PyTorch 1.x, and
    TensorFlow, MXNet and Caffe update each parameter tensor with a kernel of its own."""
    m = re.match(r"PyTorch (\d+)\.", framework)
    return bool(m) and int(m.group(1)) >= 2


# Screening (GPU_EXP=foreach; "what was tried" 19): the optimizer step as the framework runs it, instead of the
# model's one kernel call per layer with trainable parameters and the table's fused bytes.
# * a per-parameter loop (PyTorch < 2; TensorFlow's, MXNet's and Caffe's one update kernel per parameter tensor
#   likewise): one kernel call per parameter tensor;
# * PyTorch ≥ 2's multi-tensor "foreach" kernels (``foreach_step``): a few launches for all the tensors and a host
#   cost per tensor of FOREACH_CALL_SHARE calls. Measured on an H200 (benchmarks/optimizer_step_check.py: 8
#   networks × fp32/bf16, SGD with momentum, benchmarks/data/measured/h200-2026-11-27/optimizer_steps.jsonl),
#   least squares of the step's time on (parameter tensors, bytes): 3.15 µs per tensor with foreach, 26.4 µs with
#   the loop; 3.15 / 26.4 = 0.12.
# Both move the bytes of torch.optim's kernels (core.work.EAGER_ACCESSES: SGD with momentum 8 accesses per
# parameter, against the fused 5).
FOREACH_CALL_SHARE = 0.12


def update_work_as_run(e: Estimate, foreach: bool) -> Work:
    """The optimizer step's work as the framework runs it (screening: GPU_EXP=foreach)."""
    opt = optimizer(e.report.optimizer)
    trainable = e.report.compiled.trainable
    tensors = sum(param_tensors(n) for n in e.report.compiled.nodes)
    return Work(None, opt.update_flops * trainable, eager_update_bytes(trainable, e.precision, opt.name),
                calls=tensors * FOREACH_CALL_SHARE if foreach else tensors)


def zero_grad_works(e: Estimate) -> list[Work]:
    """``zero_grad()`` in the timed region, as PyTorch < 2 runs it: every parameter's gradient is zeroed in place
    (a fill kernel per parameter tensor: one write), so backward's AccumulateGrad adds each new gradient into it
    (an add kernel per tensor: two reads, one write) instead of handing the new tensor over, as PyTorch ≥ 2's
    default ``set_to_none=True`` does, which the estimate models. One work per layer that holds trainable
    parameters: its tensors' 2 kernel calls each, its gradient bytes × 4 accesses."""
    out = []
    for lw in e.work.layers:
        tensors = param_tensors(lw.node)
        if tensors:
            out.append(Work(None, 0.0, lw.node.params.trainable * e.precision.grad * 4, calls=2 * tensors))
    return out


def timed_extra_s(r: dict, compiled, prec) -> float:
    """Seconds of the input's host-to-device copy where a row's timed region holds it ("h2d_input"): the
    batch's input over ``host_link`` (an interconnect of device_specs.json) at its per-direction rate, in the
    activation precision; 0 elsewhere."""
    if "h2d_input" not in timed_extras(r):
        return 0.0
    inp = sum(int(np.prod(s)) for s in compiled.input_shapes.values())
    return inp * r["batch"] * prec.activation / r["device_db"].link(r["host_link"]).bandwidth


def channels_last_depthwise(compiled) -> set:
    """Screening (GPU_EXP=dwlast): the depthwise convs whose input is a channels-last tensor
    (``gpu_model.channels_last_inputs``), which PyTorch sends to cuDNN rather than its own depthwise kernels; the
    model does so on 2-byte activations (``gpu_model.cuda_core_backward``), the switch in every precision."""
    last = gpu_model.channels_last_inputs(compiled)
    return {n.name for n in compiled.nodes
            if n.name in last and gpu_model.depthwise(n.rule.work_class(n.ctx))}


def features(rows: list[dict]) -> dict:
    """One array entry per (row, layer work): what the model's terms read, with the row it adds to."""
    compiled: dict = {}
    dw_last: dict = {}
    keys = ("row", "pidx", "flops", "bytes", "calls", "views", "cls", "tc", "bwd", "wgrad", "wave", "wave64",
            "wave32", "peak", "bw", "eager", "infer", "dwb", "fill", "bnh", "elems", "p32", "smclk", "dwl32", "wino",
            "k1")
    cols = {k: [] for k in keys}
    paleo_s, copy_s = [], []
    for i, r in enumerate(rows):
        if r["network"] not in compiled:
            compiled[r["network"]] = compile_network(zoo.get(r["network"]))
            dw_last[r["network"]] = channels_last_depthwise(compiled[r["network"]]) \
                if EXP & {"dwlast", "dwl32"} else set()
        dev = r["device"]
        e = _estimate(compiled[r["network"]], dev, r["batch"], r["precision"])
        n = r["batch"]
        prec = e.precision
        items = []        # (pidx: 0 forward, 1 backward, 2 update, 3 the timed region's extra; work, node, kind)
        if r["pass"] in ("forward", "inference", "forward_backward", "training_step"):
            # a training step's forward (train mode, autograd) unless the row times inference
            for lw, parts in zip(e.work.layers, e._layer_parts("forward" if r["pass"] == "inference"
                                                               else "train_forward")):
                items += [(0, w, lw, "cast" if w.cast else "fwd") for w in parts]
        if r["pass"] in ("backward", "forward_backward", "training_step"):
            bl = list(zip(e.work.layers, e._layer_parts("backward")))
            if "queue" in EXP:
                bl = bl[::-1]
            for lw, parts in bl:
                split = sum(not w.cast for w in parts) > 1
                for w in parts:
                    items.append((1, w, lw, "cast" if w.cast else "wgrad" if w.weight_grad else "dgrad" if split
                                  else "bwd"))
        if "bias" in EXP:        # screening: a conv's bias added by a kernel of its own; bias gradients reduced
            for lw in e.work.layers:
                node = lw.node
                if node.op not in ("conv2d", "linear") or not node.attrs.get("bias"):
                    continue
                out = node.out_elems * n
                if node.op == "conv2d" and r["pass"] != "backward":
                    items.append((0, Work(None, out, 2 * out * prec.activation, calls=1), None, "bias"))
                if r["pass"] in ("backward", "forward_backward", "training_step") and node.params.trainable:
                    items.append((1, Work(None, out, out * prec.activation, calls=1, backward=True), None, "bias"))
        if "nchw" in EXP and TC.get(e.precision.compute, 0):
            # screening: cuDNN's tensor-core kernels want NHWC; on NCHW tensors a conv (not a depthwise one: PyTorch's
            # own kernels) transposes its input and output, read and written once each, in every pass (2 kernels)
            for pidx, _w, lw, kind in list(items):
                if lw is not None and lw.node.op == "conv2d" and not gpu_model.depthwise(lw.work_class) and \
                        kind in ("fwd", "dgrad", "bwd"):
                    xy = (lw.node.in_elems + lw.node.out_elems) * n * prec.activation
                    items.append((pidx, Work("elementwise", 0, 2 * xy, calls=2, backward=pidx == 1), None, "nchw"))
        if "zero_grad" in timed_extras(r) and r["pass"] in ("backward", "forward_backward", "training_step"):
            items += [(3, w, None, "zero") for w in zero_grad_works(e)]
        if r["pass"] == "training_step":
            u = update_work_as_run(e, foreach_step(r["framework"])) if "foreach" in EXP else e.update_work()
            if "queue" in EXP and u.calls > 1:
                for _ in range(u.calls):
                    items.append((2, replace(u, flops=u.flops / u.calls, bytes=u.bytes / u.calls, calls=1),
                                  None, "upd"))
            else:
                items.append((2, u, None, "upd"))
        tc = TC.get(e.precision.compute, 0)
        no_wino = set()
        if "cudnn" in EXP:
            have = cudnn_version(r["framework"])
            no_wino = {k for k, since in WINOGRAD_SINCE.items() if have is not None and have < since}
        for pidx, w, lw, kind in items:
            node = lw.node if lw is not None else None
            cols["row"].append(i)
            cols["pidx"].append(pidx)
            flops = float(w.flops)
            if kind in no_wino and node is not None and flops and \
                    gpu_model.uses_winograd(node, e.precision.compute):
                per, per_batch = node.rule.algorithms(node.ctx, "winograd")
                flops *= node.cost.flops * n / (per * n + per_batch)      # back to the direct algorithm's
            cols["flops"].append(flops)
            # screening (wino): a kernel counted at its Winograd FLOPs (gpu_model.uses_winograd), for its own factor
            cols["wino"].append(int(node is not None and flops > 0 and kind != "cast" and kind not in no_wino and
                                    gpu_model.uses_winograd(node, e.precision.compute)))
            # screening (k1): a 1×1 dense conv's kernels (a plain GEMM over the pixels), for a factor of their own
            cols["k1"].append(int(node is not None and flops > 0 and kind != "cast" and node.op == "conv2d" and
                                  tuple(node.attrs.get("kernel_size", ())) == (1, 1) and
                                  node.attrs.get("groups", 1) == 1))
            nbytes = float(w.bytes)
            if "bntrain" in EXP and node is not None and lw.work_class == "batch_norm" and r["pass"] != "inference":
                # train mode: the forward reads x once more for the batch statistics; the backward's reduction
                # pass reads x and dy before the pass that writes dx
                x = node.in_elems * n * prec.activation
                nbytes += x if pidx == 0 else 2 * x
            if "bnelem" in EXP and node is not None and lw.work_class == "batch_norm" and \
                    r["pass"] != "inference":
                # screening: a train-mode batch norm costs per element what fp32 costs (on an H200 cuDNN's kernels
                # took as long on fp16 input as on fp32: probe_bn.jsonl's "mixed" and "fp32")
                nbytes *= max(1.0, 4 / prec.activation)
            cols["bytes"].append(nbytes)
            # a one-block-per-channel kernel (a train-mode batch norm) fills blocks / SMs (gpu_model.memory_s)
            cols["fill"].append(gpu_model.channel_fill(w.blocks, dev.sm_count))
            # screening (bnnative, bnhalf): a train-mode batch norm on 2-byte activations; 1: a half-precision model
            # in eager PyTorch (bf16/fp16 weights: PyTorch's own kernels, cuDNN's need fp32 weights), 2: any other
            cols["bnh"].append(0 if not w.blocks or prec.activation != 2 else
                               1 if r["framework"].startswith("PyTorch") and r["precision"] in ("bf16", "fp16") else 2)
            # a one-block-per-channel kernel's elements, and its device's SM-cycles a second (gpu_model.memory_s);
            # screening (chrate): the CUDA-core peak its SMs' rate is a share of
            cols["elems"].append(nbytes / prec.activation if w.blocks else 0.0)
            cols["smclk"].append((gpu_model.sm_cycles(dev) or 0.0) if w.blocks else 0.0)
            cols["p32"].append(e.cuda_core_peak if w.blocks and "chrate" in EXP else 0.0)
            cols["calls"].append(w.calls)
            view = int(node is not None and w.calls == 0 and node.rule.alias and
                       (pidx == 0 or node.needs_grad) and not node.rule.stored)
            cols["views"].append(view)
            cols["cls"].append(CLASS.get(gpu_model.compute_class(w.work_class), 3))
            # screening: a depthwise conv on CUDA cores whatever the precision (no tensor-core kernel: on an H200
            # a depthwise network's bf16 training step took as long as its fp32 one)
            cuda_core = "dwcuda" in EXP and tc and gpu_model.depthwise(w.work_class)
            # a depthwise conv's backward kernels: their own share of the CUDA-core peak (gpu_model.on_cuda_cores)
            dwb = gpu_model.on_cuda_cores(w, {"depthwise_backward": 1.0})
            if dwb and "dwlast" in EXP and node.name in dw_last[r["network"]]:
                dwb = False         # screening: a channels-last depthwise conv runs in cuDNN (the grouped rule)
            cols["dwb"].append(int(dwb))
            # screening (dwl32): a channels-last depthwise conv's weight gradient on 4-byte activations (cuDNN's
            # NHWC kernel, 1.2–12× PyTorch's NCHW one on an H200 in fp32)
            cols["dwl32"].append(int(dwb and w.weight_grad and node.name in dw_last[r["network"]]))
            # a dense conv over ≤ 3 channels (a network's first) in a tensor-core precision: its kernels on CUDA
            # cores at the class's efficiency, no tensor-core factor (gpu_model.stem_conv)
            cuda_core = cuda_core or dwb or bool(tc and node is not None and kind != "cast" and
                                                 gpu_model.stem_conv(node))
            cols["tc"].append(0 if cuda_core else tc)
            cols["bwd"].append(int(w.backward))
            cols["wgrad"].append(int(kind == "wgrad"))
            if kind == "dgrad":
                t128, t64, t32 = (_dgrad_tiles(node, n, t) for t in (128, 64, 32))
            elif node is not None and w.tiles:
                t128, t64, t32 = (_tiles_at(node, n, t) for t in (128, 64, 32))
            else:
                t128 = t64 = t32 = 0
            cols["wave"].append(gpu_model.wave_efficiency(t128, dev.sm_count))
            cols["wave64"].append(gpu_model.wave_efficiency(t64, dev.sm_count))
            cols["wave32"].append(gpu_model.wave_efficiency(t32, dev.sm_count))
            cols["peak"].append(e.cuda_core_peak if dwb else dev.peak_flops["fp32"] if cuda_core else e.peak)
            cols["bw"].append(e.bandwidth)
            cols["eager"].append(int(r["framework"].startswith("PyTorch")))
            cols["infer"].append(int(r["pass"] == "inference"))
        paleo_s.append(pass_seconds(Estimate(e.report, dev, variant="paleo").totals, r["pass"]))  # PALEO, PPP 1
        copy_s.append(timed_extra_s(r, compiled[r["network"]], prec))
    f = {k: np.array(v, dtype=float) for k, v in cols.items()}
    for k in ("row", "pidx", "cls", "tc", "views", "wgrad", "eager", "infer", "dwb", "bnh", "dwl32", "wino", "k1"):
        f[k] = f[k].astype(int)
    f["paleo_s"] = np.array(paleo_s)
    f["copy_s"] = np.array(copy_s)
    f["measured_s"] = np.array([r["measured_s"] for r in rows])
    f["n"] = len(rows)
    return f


def predict(f: dict, vec_of_row: np.ndarray, timed: bool = True) -> np.ndarray:
    """Predicted seconds per row; ``vec_of_row[i]`` is row i's parameter vector (NAMES order). ``timed`` False:
    without what the timed regions hold beyond the passes (the estimate's own time)."""
    v = vec_of_row[f["row"]]
    eff_cls = np.where(f["cls"] < 3, v[np.arange(len(v)), np.minimum(f["cls"], 2)], 1.0)
    tc = np.where(f["tc"] == 1, v[:, 3], np.where(f["tc"] == 2, v[:, 4], 1.0))
    bwd = np.where(f["bwd"] > 0, np.where(f["wgrad"] > 0, v[:, 8], v[:, 7]), 1.0)
    wave = f["wave"]
    if "smalltile" in EXP:
        s = v[:, NAMES.index("small_tile")]
        wave = np.maximum(np.maximum(wave, f["wave64"] * s), f["wave32"] * s * s)
    # a depthwise conv's backward kernel: depthwise_backward of the CUDA-core peak (gpu_model.efficiency)
    eff = np.where(f["dwb"] > 0, v[:, NAMES.index("depthwise_backward")], eff_cls * tc * bwd)
    if "bwd16" in EXP:      # screening: fp16/bf16 tensor-core backward kernels at a factor of their own
        eff = eff * np.where((f["bwd"] > 0) & (f["tc"] == 2), v[:, NAMES.index("backward_fp16")], 1.0)
    if "wino" in EXP:       # screening: Winograd kernels at a fitted factor on the conv efficiency
        eff = eff * np.where(f["wino"] > 0, v[:, NAMES.index("winograd")], 1.0)
    if EXP & {"k1", "k1tc"}:    # screening: a 1×1 dense conv's kernels at a fitted factor on their efficiency
        k1 = (f["k1"] > 0) & ((f["tc"] > 0) if "k1tc" in EXP else True)    # k1tc: on tensor cores only
        eff = eff * np.where(k1, v[:, NAMES.index("conv_1x1")], 1.0)
    comp = f["flops"] / (f["peak"] * eff * wave)
    if "dwl32" in EXP:      # screening: cuDNN's NHWC depthwise weight gradient in fp32 at a fitted factor
        comp = comp * np.where(f["dwl32"] > 0, v[:, NAMES.index("dw_last_fp32")], 1.0)
    mem = f["bytes"] / (f["bw"] * v[:, 5] * f["fill"])
    # a one-block-per-channel kernel (train-mode batch norm) on a device with a clock: the slower of DRAM and its
    # elements at sm_rate per SM-cycle of the SMs its channels fill (gpu_model.memory_s)
    with np.errstate(divide="ignore", invalid="ignore"):
        sm = f["elems"] / (f["smclk"] * f["fill"] * v[:, NAMES.index("sm_rate")])
        if "chrate" in EXP:     # screening (36): the SMs' rate a fitted share of the CUDA-core peak, not per cycle
            sm = f["elems"] / (f["p32"] * f["fill"] * v[:, NAMES.index("channel_rate")])
    mem = np.where((f["elems"] > 0) & (f["smclk"] > 0), np.maximum(f["bytes"] / (f["bw"] * v[:, 5]), sm), mem)
    if "bnnative" in EXP:   # screening: a half-precision model's own batch-norm kernels at a fitted factor
        mem = mem * np.where(f["bnh"] == 1, v[:, NAMES.index("bn_native")], 1.0)
    if "bnhalf" in EXP:     # screening: every train-mode batch norm on 2-byte activations at a fitted factor
        mem = mem * np.where(f["bnh"] > 0, v[:, NAMES.index("bn_half")], 1.0)
    ov = (f["calls"] + (f["views"] if "views" in EXP else 0)) * v[:, 6] * np.where(f["cls"] < 3, v[:, 9], 1.0)
    if "graph" in EXP:
        ov = ov * np.where(f["eager"] > 0, 1.0, v[:, NAMES.index("graph_overhead")])
    if "infov" in EXP:      # screening: an inference pass (no autograd recording) costs the host less per kernel
        ov = ov * np.where(f["infer"] > 0, v[:, NAMES.index("inference_overhead")], 1.0)
    # a call under autograd (a training forward's, the backward's) × autograd_overhead (gpu_model.overhead_s)
    ov = ov * np.where((f["pidx"] == 1) | ((f["pidx"] == 0) & (f["infer"] == 0)),
                       v[:, NAMES.index("autograd_overhead")], 1.0)
    if "queue" in EXP:
        k = comp + mem
        seg = f["row"] * 4 + f["pidx"]
        starts = np.flatnonzero(np.r_[True, seg[1:] != seg[:-1]])
        cs_o = np.cumsum(ov)
        base_o = np.repeat(np.r_[0.0, cs_o][starts], np.diff(np.r_[starts, len(seg)]))
        h = cs_o - base_o
        cs_k = np.cumsum(k)
        ends = np.r_[starts[1:], len(seg)]
        tot_k = np.repeat(cs_k[ends - 1], np.diff(np.r_[starts, len(seg)]))
        suffix = tot_k - (cs_k - k)
        t_seg = np.maximum.reduceat(h + suffix, starts)
        t_seg = np.maximum(t_seg, np.add.reduceat(k, starts))
        out = np.bincount(f["row"][starts], weights=t_seg, minlength=f["n"])
    else:
        t = np.maximum(comp + mem, ov)      # core.terms.combine("predicted")
        if not timed:
            t = np.where(f["pidx"] == 3, 0.0, t)
        out = np.bincount(f["row"], weights=t, minlength=f["n"])
    return out + f["copy_s"] if timed else out
