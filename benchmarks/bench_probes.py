"""The kernel probes measured on a lent GPU (``benchmarks/kernel_probe.py``, raw lines in
``benchmarks/data/probes/``) beside what the GPU time model predicts for the same work (issue 13). Nothing is timed
here: the section re-reads the committed lines and asks ``core`` for its estimates, so it runs on any machine.

    python benchmarks/run_all.py --only probes
"""

from __future__ import annotations

import json
import re
import statistics
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

PROBES = HERE / "data" / "probes" / "h200-2026-11-27"
DEVICE = "h200-sxm"
# the same probes on a second GPU: same SM count and clock as the H200, 0.70× its DRAM bandwidth
SECOND, SECOND_DEVICE = HERE / "data" / "probes" / "h100-2026-11-27", "h100-sxm"
# a kernel's family, by its name (first match): what the model has a term for, and what it has not
FAMILIES = (
    ("batch norm, PyTorch's kernels", r"at::native::batch_norm"),
    ("batch norm, cuDNN's kernels", r"cudnn::bn_"),
    ("NCHW ↔ NHWC transposes around cuDNN's convs", r"nchwToNhwc|nhwcToNchw|tensorTransform"),
    ("depthwise conv, PyTorch's kernels", r"conv_depthwise2d"),
    ("depthwise conv, cuDNN's kernels", r"c1_k1|depthwise|wgrad2d_grouped|_g16_"),
    ("conv and matmul (cuDNN, cuBLAS, CUTLASS)", r"xmma|cutlass|implicit|nvjet|gemm"),
    ("layer norm", r"layer_norm|GammaBeta"),
    ("pooling", r"pool"),
    ("reductions", r"reduce_kernel"),
    ("elementwise, copies, optimizer", r"elementwise|Memcpy|foreach|multi_tensor|fill|copy"),
)


def family(kernel: str) -> str:
    return next((name for name, pat in FAMILIES if re.search(pat, kernel)), "other")


def library(kernels: dict) -> str:
    """Who ran a probed depthwise conv: PyTorch's own kernels or cuDNN's (the kernel that took longest)."""
    top = max(kernels.items(), key=lambda kv: kv[1][1])[0] if kernels else ""
    return "PyTorch" if "conv_depthwise2d" in top else "cuDNN" if top else "?"


def _lines(name: str, folder: Path = PROBES) -> list[dict]:
    return [json.loads(x) for x in (folder / name).read_text().splitlines()]


def _families(m: dict) -> dict[str, float]:
    """A profiled step's kernel time (ms) by family."""
    fams: dict[str, float] = {}
    for k, (_, us) in m["kernels"].items():
        fams[family(k)] = fams.get(family(k), 0.0) + us / 1e3
    return fams


def second_gpu() -> dict:
    """The H100's probes over the H200's: per kernel family, summed over the training steps both profiled; per
    probed batch norm (forward + backward) of at least 1 ms on the H200. Beside them the datasheets' bandwidth
    ratio, and the model's ratio for the same batch norms."""
    from core.devices import load_devices
    db = load_devices()
    key = ("network", "precision", "batch")
    first = {tuple(m[k] for k in key): _families(m) for m in _lines("probe_nets.jsonl")}
    fams: dict[str, list[float]] = {}
    for m in _lines("probe_nets.jsonl", SECOND):
        if (mine := first.get(tuple(m[k] for k in key))) is None:
            continue
        for name, ms in _families(m).items():
            pair = fams.setdefault(name, [0.0, 0.0])
            pair[0] += mine.get(name, 0.0)
            pair[1] += ms
    bn_first = {(m["case"], m["precision"]): m for m in _lines("probe_bn.jsonl") if m["pass"] == "forward_backward"}
    bn = []
    for m in _lines("probe_bn.jsonl", SECOND):
        h200 = bn_first.get((m["case"], m["precision"]))
        if m["pass"] != "forward_backward" or h200 is None or h200["ms"] < 1.0:
            continue
        model = [sum(_bn_model_ms(m, dev)) for dev in (DEVICE, SECOND_DEVICE)]
        bn.append({"case": m["case"], "precision": m["precision"], "h200_ms": h200["ms"], "h100_ms": m["ms"],
                   "model_ratio": model[1] / model[0]})
    bandwidth = db.device(DEVICE).memory_bandwidth / db.device(SECOND_DEVICE).memory_bandwidth
    return {"families": fams, "batch_norm": bn, "bandwidth_ratio": bandwidth}


def _one_batch_norm(channels: int, hw: int):
    """A batch norm whose input carries a gradient, as in a network (and in the probe: x.requires_grad): a 1×1
    depthwise conv before it, whose times are left out."""
    from core import Network, Node
    return Network.make(f"bn{channels}", {"x": (channels, hw, hw)},
                        [Node.make("dw", "conv2d", "x", out_channels=channels, kernel_size=1, groups=channels,
                                   bias=False),
                         Node.make("bn", "batch_norm", "dw")])


def _bn_model_ms(m: dict, device: str) -> tuple[float, float]:
    """The predicted variant's training-step forward and backward (ms) of a probed batch norm on ``device``."""
    from core.api import analyze, estimate
    dtype = "fp16" if m["precision"] == "mixed" else m["precision"]     # mixed: fp16 activations, fp32 weights
    e = estimate(analyze(_one_batch_norm(m["channels"], m["hw"]), None, m["batch"], dtype), device,
                 batch_size=m["batch"], dtype=dtype, variant="predicted")
    return sum(k.total_s for k in e._train_forward_kernels()[1]) * 1e3, e.layer_times[1].backward.total_s * 1e3


def batch_norm_rows() -> list[dict]:
    """Each probed batch norm: measured forward and backward (forward + backward − forward), the model's."""
    lines = _lines("probe_bn.jsonl")
    by = {(m["case"], m["precision"], m["pass"]): m for m in lines}
    out = []
    for (case, precision, pass_name), m in by.items():
        if pass_name != "forward":
            continue
        fb = by[(case, precision, "forward_backward")]
        fwd, bwd = _bn_model_ms(m, DEVICE)
        out.append({"case": case, "channels": m["channels"], "hw": m["hw"], "batch": m["batch"],
                    "precision": precision, "forward_ms": m["ms"], "backward_ms": fb["ms"] - m["ms"],
                    "kernels": "PyTorch" if any("at::native::batch_norm" in k for k in fb["kernels"]) else "cuDNN",
                    "model_forward_ms": fwd, "model_backward_ms": bwd})
    return out


def step_rows() -> list[dict]:
    """Each profiled training step: measured wall and kernel time by family, the model's step and batch norm."""
    from core import zoo
    from core.api import estimate
    out = []
    for m in _lines("probe_nets.jsonl"):
        fams = _families(m)
        e = estimate(zoo.get(m["network"]), DEVICE, batch_size=m["batch"], dtype=m["precision"], variant="predicted")
        bn = [lw.work_class == "batch_norm" for lw in e.work.layers]     # its training forward and backward
        fwd = sum(sum(k.total_s for k in ks) for b, ks in zip(bn, e._train_forward_kernels()) if b)
        bwd = sum(lt.backward.total_s for b, lt in zip(bn, e.layer_times) if b)
        out.append({"network": m["network"], "precision": m["precision"], "batch": m["batch"],
                    "measured_ms": m["measured_ms"], "kernel_ms": m["kernel_ms"], "families": fams,
                    "model_ms": e.totals["training_step_s"] * 1e3, "model_bn_ms": (fwd + bwd) * 1e3})
    return out


def depthwise_rows() -> list[dict]:
    by: dict[tuple, dict] = {}
    for m in _lines("probe_dw.jsonl"):
        key = (m["case"], m["channels"], m["hw"], m["kernel"], m["stride"], m["dtype"])
        by.setdefault(key, {})[(m["layout"], m["pass"])] = (m.get("ms"), library(m.get("kernels", {})))
    return [{"key": k, "cells": v} for k, v in by.items()]


def measure(quick: bool = False) -> dict:
    return {"batch_norm": batch_norm_rows(), "steps": step_rows(), "depthwise": depthwise_rows(),
            "second": second_gpu(), "env": json.loads((PROBES / "probe_env_run1.json").read_text())}


def markdown(out: dict) -> str:
    env = out["env"]
    lines = ["## Kernel probes on an H200, beside the model", "",
             f"`benchmarks/kernel_probe.py` on an {env['gpu']} ({env['sm_count']} SMs; PyTorch {env['torch']}, "
             f"cuDNN {env['cudnn'] // 10000}.{env['cudnn'] % 10000 // 100}.{env['cudnn'] % 100}), raw lines in "
             f"`{PROBES.relative_to(HERE.parent)}/`: kernels timed alone "
             "(CUDA events, median of 15 calls) and training steps profiled kernel by kernel (`torch.profiler`). "
             f"\"model\": the predicted variant on `{DEVICE}` for the same work (`core/gpu_params.json` as "
             "committed). These are checks of the model's structure on one GPU, not rows it is fitted to.", ""]
    lines += ["### Training steps, kernel time by family", "",
              "| network | precision | batch | step ms | kernels ms | model step ms | batch norm ms (model) | "
              "where the kernel time goes (ms) |", "|---|---|---:|---:|---:|---:|---:|---|"]
    for r in out["steps"]:
        fams = ", ".join(f"{k} {v:.1f}" for k, v in sorted(r["families"].items(), key=lambda kv: -kv[1]) if v >= 0.5)
        bn = sum(v for k, v in r["families"].items() if k.startswith("batch norm"))
        lines.append(f"| {r['network']} | {r['precision']} | {r['batch']} | {r['measured_ms']:.1f} | "
                     f"{r['kernel_ms']:.1f} | {r['model_ms']:.1f} | {bn:.1f} ({r['model_bn_ms']:.1f}) | {fams} |")
    busy = [r["kernel_ms"] / r["measured_ms"] for r in out["steps"]]
    lines += ["", f"The GPU is busy for {min(busy):.0%}–{max(busy):.0%} of every step (kernels ms against step ms): "
              "at these batches the host is not the limit. A model that takes bf16 batch norm to cost half of "
              "fp32's (half the bytes) "
              "misses PyTorch's own kernels: a bf16 model (weights in bf16) gets them, cuDNN's need fp32 weights.",
              ""]
    lines += ["### Train-mode batch norm alone", "",
              "Forward and backward of one batch norm (backward = forward + backward − forward, autograd's host "
              "cost included). Model: the predicted variant's training-step forward and backward of the same layer "
              "(bytes at the fitted bandwidth share × the share of the 132 SMs the channels fill, one thread block "
              "per channel).", "",
              "| case | C | H=W | batch | precision | kernels | forward ms | model | backward ms | model |",
              "|---|---:|---:|---:|---|---|---:|---:|---:|---:|"]
    for r in out["batch_norm"]:
        lines.append(f"| {r['case']} | {r['channels']} | {r['hw']} | {r['batch']} | {r['precision']} | "
                     f"{r['kernels']} | {r['forward_ms']:.3f} | {r['model_forward_ms']:.3f} | "
                     f"{r['backward_ms']:.3f} | {r['model_backward_ms']:.3f} |")
    same = [r for r in out["batch_norm"] if r["case"].startswith("same.") and r["precision"] == "fp32"]
    ref = next((r for r in same if r["channels"] == 256), None)
    if ref:
        ratios = ", ".join(f"{r['channels']}: {r['forward_ms'] / ref['forward_ms']:.2f}× "
                           f"(model {r['model_forward_ms'] / ref['model_forward_ms']:.2f}×)" for r in same)
        lines += ["", f"One tensor size over 32 … 2048 channels, fp32 forward against 256 channels': {ratios}."]
    lines += ["", "### Depthwise convolutions alone (batch 128)", "",
              "ms, and who ran it; NCHW is PyTorch's default layout, channels-last (NHWC) what ConvNeXt's permutes "
              "hand its depthwise convs.", "",
              "| case | C | H=W | k | stride | dtype | NCHW forward | dgrad | wgrad | NHWC forward | dgrad | wgrad |",
              "|---|---:|---:|---:|---:|---|---|---|---|---|---|---|"]
    for r in out["depthwise"]:
        cells = []
        for layout in ("nchw", "nhwc"):
            for p in ("forward", "dgrad", "wgrad"):
                ms, lib = r["cells"].get((layout, p), (None, "?"))
                cells.append(f"{ms:.3f} {lib}" if ms is not None else "failed")
        lines.append("| " + " | ".join(str(x) for x in r["key"]) + " | " + " | ".join(cells) + " |")
    med = statistics.median
    pairs = [(r["cells"][("nchw", p)][0], r["cells"][("nhwc", p)][0]) for r in out["depthwise"]
             if r["key"][5] == "bf16" for p in ("forward", "dgrad", "wgrad")]
    lines += ["", f"bf16, NCHW over channels-last: median {med([a / b for a, b in pairs]):.1f}× "
              f"(PyTorch's kernels against cuDNN's)."]
    lines += _second_lines(out["second"])
    return "\n".join(lines) + "\n"


def _second_lines(sec: dict) -> list[str]:
    bw = sec["bandwidth_ratio"]
    lines = ["", "### The same probes on an H100: which kernels scale with DRAM bandwidth", "",
             f"`{SECOND.relative_to(HERE.parent)}/`: an H100 80GB HBM3 has the H200's 132 SMs and 1980 MHz clock and "
             f"1/{bw:.2f} of its bandwidth (`device_specs.json`). A kernel bound by DRAM takes {bw:.2f}× as long on "
             "the H100; one bound by its SMs takes as long.", "",
             "| kernel family (the training steps both profiled) | H200 ms | H100 ms | H100 / H200 |",
             "|---|---:|---:|---:|"]
    for name, (a, b) in sorted(sec["families"].items(), key=lambda kv: -kv[1][0]):
        if a >= 1.0:
            lines.append(f"| {name} | {a:.1f} | {b:.1f} | {b / a:.2f} |")
    bn = sec["batch_norm"]
    if bn:
        ratios = [r["h100_ms"] / r["h200_ms"] for r in bn]
        lines += ["", f"Train-mode batch norm alone, forward + backward, the {len(bn)} probes of ≥ 1 ms on the H200: "
                  f"H100 / H200 median {statistics.median(ratios):.2f} ({min(ratios):.2f}–{max(ratios):.2f}); the "
                  f"model (the slower of its bytes at the bandwidth and its elements at the fitted SM rate): "
                  f"{statistics.median(r['model_ratio'] for r in bn):.2f}."]
    return lines


if __name__ == "__main__":
    print(markdown(measure()))
