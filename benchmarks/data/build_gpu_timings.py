"""Rebuild gpu_timings.csv from local git snapshots of the public sources.

Every number in gpu_timings.csv is read here from a file of one of the
repositories below at the commit named in SOURCES (or, for the MXNet documents,
in MXNET_DOCS), with one exception: the TensorFlow K80 and P100 rows come from
``tensorflow_k80_transcribed.csv`` and ``tensorflow_p100_transcribed.csv`` in
this folder, typed in from tensorflow/tensorflow at the commit in SOURCES,
because a snapshot of that repository is too large to fetch here (README.md
says how they were checked).
The snapshots are not part of this repository: point MIRROR at a folder
holding bare clones named ``owner+name/repo/.git`` (or ``owner+name/repo`` for a
bare repository).  See README.md in this folder for what each source measured.

    python benchmarks/data/build_gpu_timings.py  [--mirror DIR]
"""

from __future__ import annotations

import argparse
import csv
import io
import json
import os
import re
import statistics
import subprocess
from pathlib import Path

HERE = Path(__file__).resolve().parent
OUT = HERE / "gpu_timings.csv"
# rows no fit reads, to judge the shipped parameters on data they never saw: a source no fit saw (timm's), and
# runs kept out (source id, GPU): ryujaehun's RTX 3090 run (batch 12) made the timm rows of the same GPU worse when
# fitted (docs/benchmarks.md)
HOLDOUT = HERE / "gpu_timings_holdout.csv"
HOLDOUT_RUNS = {("ryujaehun-pytorch-gpu-benchmark", "rtx-3090")}

COLUMNS = [
    "network", "torchvision_match", "gpu", "generation", "batch", "precision",
    "pass", "framework", "measured_ms", "original_value", "original_unit",
    "source_id", "source", "note", "timed_extra", "host_link",
]

SOURCES = {
    "jcjohnson-cnn-benchmarks": (
        "jcjohnson/cnn-benchmarks", "83d441f852134f4a98aa3e665499d9369b6141c9"),
    "ryujaehun-pytorch-gpu-benchmark": (
        "ryujaehun/pytorch-gpu-benchmark", "3f47a9e2a43ca751ffade0add700b54b00e44bf0"),
    "u39kun-deep-learning-benchmark": (
        "u39kun/deep-learning-benchmark", "9dc3e36e6f97e0edf270a813f350fca1fb0e014e"),
    "nvidia-deeplearningexamples": (
        "NVIDIA/DeepLearningExamples", "729963dd47e7c8bd462ad10bfac7a7b0b604e6dd"),
    "lambdal-deeplearning-benchmark": (
        "lambdal/deeplearning-benchmark", "aa5addb6a53675a649a80036dad548f1c27cbcc4"),
    # Kepler sources: one id per publisher, so a leave-one-source-out fold holds out all of it
    "tensorflow-benchmarks-doc": (
        "tensorflow/tensorflow", "5984ffefd320c5d71b801ee06079a51b91ea42c0"),
    "apache-mxnet-perf": (          # two documents at two commits: MXNET_DOCS
        "apache/mxnet", "db4de44f170df08a1500feabccb55a63266d7ae2"),
    "bvlc-caffe-performance": (
        "BVLC/caffe", "83b5dcd40bd61fe61b88fb90c3615e2096316724"),
    # held out of every fit (HOLDOUT)
    "timm-benchmark-results": (
        "huggingface/pytorch-image-models", "aa4b5850c1543fa488abf260f18390eda46cf85d"),
}

GENERATION = {
    "titan-x-maxwell": "maxwell", "gtx-1080": "pascal", "gtx-1080-ti": "pascal",
    "titan-x-pascal": "pascal", "titan-xp": "pascal", "titan-v": "volta",
    "v100-sxm2": "volta", "rtx-2080-ti": "turing", "t4": "turing", "titan-rtx": "turing",
    "a100-40gb-sxm": "ampere-ga100", "a100-80gb-sxm": "ampere-ga100", "quadro-rtx-8000": "turing",
    "rtx-3090": "ampere", "a10": "ampere", "a100-40gb-pcie": "ampere-ga100",
    "a100-80gb-pcie": "ampere-ga100", "rtx-a6000": "ampere", "rtx-4090": "ada",
    "h100-pcie": "hopper", "h100-sxm": "hopper", "h200-sxm": "hopper", "k80": "kepler", "k40": "kepler",
    "k40-base": "kepler",
    "m40": "maxwell", "m60": "maxwell", "p100-sxm2": "pascal",
}


def _git_dir(mirror: Path, repo: str) -> Path:
    base = mirror / repo.replace("/", "+") / "repo"
    return base / ".git" if (base / ".git").exists() else base


# a commit of a source's repository that its snapshot here lacks, and the public fork whose snapshot holds it:
# commit → the fork's owner/name (the commit is the source's own, so ``where`` cites the source's repository)
FORK_HOLDS = {
    # ryujaehun/pytorch-gpu-benchmark, "Addition result RTX 3090 and RTX2060" (2021-02-27), after the snapshot's
    # 3f47a9e; lamikr/pytorch-gpu-benchmark carries upstream's history
    "1750bf0e33c01fda0c16ab66bf70321ad6a40cd2": "lamikr/pytorch-gpu-benchmark",
}


def show(mirror: Path, sid: str, path: str, commit: str | None = None) -> str:
    repo, default = SOURCES[sid]
    commit = commit or default
    repo = FORK_HOLDS.get(commit, repo)
    return subprocess.run(
        ["git", "--git-dir", str(_git_dir(mirror, repo)), "show", f"{commit}:{path}"],
        check=True, capture_output=True, text=True).stdout


def where(sid: str, path: str, table: str, commit: str | None = None) -> str:
    repo, default = SOURCES[sid]
    commit = commit or default
    return f"https://github.com/{repo}/blob/{commit}/{path} :: {table}"


def md_tables(text: str):
    """Yield (heading trail, header cells, rows of cells) for each markdown table."""
    heads: list[str] = []
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        line = lines[i]
        m = re.match(r"^(#+)\s+(.*)$", line)
        if m:
            level = len(m.group(1))
            heads = heads[: level - 1] + [""] * max(0, level - 1 - len(heads)) + [m.group(2).strip()]
        if line.startswith("|") and i + 1 < len(lines) and re.match(r"^\|[\s:|-]+\|?\s*$", lines[i + 1]):
            header = [c.strip() for c in line.strip().strip("|").split("|")]
            rows = []
            j = i + 2
            while j < len(lines) and lines[j].startswith("|"):
                rows.append([c.strip() for c in lines[j].strip().strip("|").split("|")])
                j += 1
            yield [h for h in heads if h], header, rows
            i = j
            continue
        i += 1


def num(cell: str) -> float:
    m = re.search(r"[-+]?\d+(?:\.\d*)?", cell.replace(",", ""))
    if not m:
        raise ValueError(cell)
    return float(m.group(0))


def extras(**which: bool) -> str:
    """The ``timed_extra`` cell: the names that are true, sorted, joined by "+" ("h2d_input": the input's
    host-to-device copy; "zero_grad": ``zero_grad()`` in PyTorch < 2, which zeroes every gradient, so backward
    adds into each)."""
    return "+".join(sorted(k for k, v in which.items() if v))


def row(**kw) -> dict:
    r = {c: "" for c in COLUMNS}
    r.update(kw)
    r["generation"] = GENERATION[r["gpu"]]
    return r


# --------------------------------------------------------------------------- jcjohnson
JCJ_GPU = {"GTX 1080 Ti": "gtx-1080-ti", "Pascal Titan X": "titan-x-pascal",
           "GTX 1080": "gtx-1080", "Maxwell Titan X": "titan-x-maxwell"}
JCJ_NET = {
    "AlexNet": ("alexnet", "close: BVLC Caffe AlexNet (conv channels 96-256-384-384-256, "
                "2-group conv2/4/5, LRN) not torchvision's single-tower 64-192-384-256-256 variant"),
    "Inception-V1": ("googlenet", "close: soumith/inception.torch Inception-V1 (Torch7), not "
                     "torchvision's googlenet (which adds BatchNorm); layer sizes may differ"),
    "VGG-16": ("vgg16", "exact"),
    "VGG-19": ("vgg19", "exact"),
    "ResNet-18": ("resnet18", "exact"), "ResNet-34": ("resnet34", "exact"),
    "ResNet-50": ("resnet50", "close: fb.resnet.torch model (Torch7); stride-2 on the 3x3 conv "
                  "like torchvision (v1.5 layout)"),
    "ResNet-101": ("resnet101", "close: fb.resnet.torch model (Torch7); stride-2 on the 3x3 conv "
                   "like torchvision (v1.5 layout)"),
    "ResNet-152": ("resnet152", "close: fb.resnet.torch model (Torch7); stride-2 on the 3x3 conv "
                   "like torchvision (v1.5 layout)"),
    "ResNet-200": ("resnet200", "none: pre-activation ResNet-200 (He et al. ECCV 2016) from "
                   "fb.resnet.torch; not in torchvision"),
}


def jcjohnson(mirror: Path) -> list[dict]:
    sid = "jcjohnson-cnn-benchmarks"
    out = []
    text = show(mirror, sid, "README.md")
    for heads, header, rows in md_tables(text):
        if header[:2] != ["GPU", "cuDNN"] or not heads:
            continue
        net = heads[-1]
        name, match = JCJ_NET[net]
        for cells in rows:
            gpu, cudnn = cells[0], cells[1]
            if gpu not in JCJ_GPU or cudnn == "None":
                continue  # CPU rows and torch/nn (no cuDNN) rows are left out
            for col, pas in ((2, "forward"), (3, "backward"), (4, "forward_backward")):
                v = num(cells[col])
                out.append(row(
                    network=name, torchvision_match=match, gpu=JCJ_GPU[gpu], batch=16,
                    precision="fp32", **{"pass": pas},
                    framework=f"Torch7 (Lua) + cuDNN {cudnn}, CUDA 8.0",
                    measured_ms=v, original_value=v, original_unit="ms",
                    source_id=sid,
                    source=where(sid, "README.md", f"## {net}: {header[col]}, row '{gpu} | {cudnn}'"),
                    note=("input 16x3x224x224; forward_backward is the source's 'Total' "
                          "(= forward + backward); no optimizer step, no data loading"),
                ))
    return out


# The README's first version (July 2016) also had a Tesla K40c row in each table, run on the same machine with
# cuDNN 5.0.05 and, where torch/nn allows it, without cuDNN; commit bb9a45d removed the K40c rows (and the K40c
# line of the GPU table) without saying why. JCJ_K40_COMMIT is the last commit whose README has them. Only the
# K40c cuDNN rows are taken from it: the GTX 1080 and Maxwell TITAN X rows of that version were measured again
# for the README at SOURCES' commit, which the rows above read.
JCJ_K40_COMMIT = "8730d9ffa225b9d4b1126d7f72a09390afc77377"
JCJ_K40_ROW = "Tesla K40c (cuDNN 5005)"


def jcjohnson_k40(mirror: Path) -> list[dict]:
    sid = "jcjohnson-cnn-benchmarks"
    text = show(mirror, sid, "README.md", JCJ_K40_COMMIT)
    # a K40 runs at its 745 MHz base clock unless a user selects a boost step (NVIDIA's board specification:
    # boards ship at the base clock); the source sets none, and its GPU table gives the K40c the base-clock
    # 4.29 TFLOPS (2 x 2880 x 0.745 GHz), so the rows are device_specs.json's "k40-base"
    assert "|Tesla K40c|12GB GDDR5|Kepler|2880|4.29|" in text
    out = []
    for heads, header, rows in md_tables(text):
        if header != ["GPU", "Forward (ms)", "Backward (ms)", "Total (ms)"] or not heads:
            continue
        net = heads[-1]
        name, match = JCJ_NET[net]
        for cells in rows:
            if cells[0] != JCJ_K40_ROW:
                continue
            for col, pas in ((1, "forward"), (2, "backward"), (3, "forward_backward")):
                v = num(cells[col])
                out.append(row(
                    network=name, torchvision_match=match, gpu="k40-base", batch=16,
                    precision="fp32", **{"pass": pas},
                    framework="Torch7 (Lua) + cuDNN 5.0.05, CUDA 8.0 RC",
                    measured_ms=v, original_value=v, original_unit="ms", source_id=sid,
                    source=where(sid, "README.md", f"### {net}: {header[col]}, row '{cells[0]}'", JCJ_K40_COMMIT),
                    note=("input 16x3x224x224; forward_backward is the source's 'Total' (= forward + backward); "
                          "no optimizer step, no data loading; a Tesla K40c (the actively cooled K40) at its "
                          "745 MHz base clock it ships at (no boost step set in the source); rows later removed from "
                          "the README (commit bb9a45d) without a stated reason"),
                ))
    return out


# --------------------------------------------------------------------------- ryujaehun
# the host link of the 2020-21 runs, whose timed region holds the host-to-device copy of the input
# (``timed_extra`` = "h2d_input"): an interconnect id of device_specs.json. GP102 (TITAN Xp) and TU102 (RTX 2080 Ti
# and TITAN RTX) are PCIe 3.0 x16 boards; an A100 SXM4 in a DGX A100 reaches the host over PCIe 4.0 x16.
RYU_HOST_LINK = {"rtx-2080-ti": "pcie3-x16", "titan-xp": "pcie3-x16", "titan-rtx": "pcie3-x16",
                 "a100-40gb-sxm": "pcie4-x16", "rtx-3090": "pcie4-x16"}
RYU_3090 = "1750bf0e33c01fda0c16ab66bf70321ad6a40cd2"      # upstream's commit adding the RTX 3090 run
RYU_RUNS = [
    # gpu id, folder, file stem, precision words, train word, framework, note[, commit where not SOURCES']
    ("gtx-1080-ti", "results/1080TI", "GeForce GTX 1080 Ti_{p}_model_{m}_benchmark.csv",
     {"single": "fp32", "half": "fp16"}, "training",
     "PyTorch (2018 script, commit b128c28; version not recorded)",
     "old script: input already on the GPU, 20 timed iterations after 5 warm-up"),
    ("titan-v", "results/TitanV", "TITAN V_{p}_model_{m}_benchmark.csv",
     {"single": "fp32", "half": "fp16"}, "training",
     "PyTorch (2018 script, commit b128c28; version not recorded)",
     "old script: input already on the GPU, 20 timed iterations after 5 warm-up"),
    ("rtx-2080-ti", "new_results", "GeForce RTX 2080 Ti_1_gpus__{p}_model_{m}_benchmark.csv",
     {"float": "fp32", "half": "fp16"}, "train",
     "PyTorch 1.4, CUDA 10.0, cuDNN 7.6.0",
     "timed region includes the host-to-device copy of the 12x3x224x224 input; 50 timed after 5 warm-up"),
    ("titan-xp", "results/TITANXP", "TITAN Xp_1_gpus__{p}_model_{m}_benchmark.csv",
     {"float": "fp32", "half": "fp16"}, "train",
     "PyTorch (version not recorded), CUDA 10.2, cuDNN 7.6.5",
     "timed region includes the host-to-device copy of the 12x3x224x224 input; 50 timed after 5 warm-up"),
    ("titan-rtx", "results/TitanRTX", "TITAN RTX_1_gpus__{p}_model_{m}_benchmark.csv",
     {"float": "fp32", "half": "fp16"}, "train",
     "PyTorch (version not recorded), CUDA 10.2, cuDNN 7.6.5",
     "timed region includes the host-to-device copy of the 12x3x224x224 input; 50 timed after 5 warm-up"),
    ("a100-40gb-sxm", "results/dgx-a100", "A100-SXM4-40GB_1_gpus__{p}_model_{m}_benchmark.csv",
     {"float": "tf32", "half": "fp16"}, "train",
     "PyTorch (NGC container nvcr.io/nvidia/pytorch:20.10-py3), CUDA 11.1, cuDNN 8.0.4",
     "timed region includes the host-to-device copy of the 12x3x224x224 input; 50 timed after 5 warm-up"),
    ("rtx-3090", "results/3090", "GeForce RTX 3090_1_gpus__{p}_model_{m}_benchmark.csv",
     {"float": "tf32", "half": "fp16"}, "train",
     "PyTorch (version not recorded; a container on a 4-GPU host), CUDA 11.1, cuDNN 8.0.4",
     "timed region includes the host-to-device copy of the 12x3x224x224 input; 50 timed after 5 warm-up; "
     "run 2021-02-25 (system_info.txt)", RYU_3090),
]


def ryujaehun(mirror: Path) -> list[dict]:
    sid = "ryujaehun-pytorch-gpu-benchmark"
    out = []
    for gpu, folder, stem, precs, trainword, fw, note, *at in RYU_RUNS:
        commit = at[0] if at else None
        for pword, prec in precs.items():
            for mword, pas in ((trainword, "forward_backward"), ("inference", "inference")):
                path = f"{folder}/{stem.format(p=pword, m=mword)}"
                table = list(csv.reader(io.StringIO(show(mirror, sid, path, commit))))
                header, data = table[0], [r for r in table[1:] if r]
                for k, net in enumerate(header):
                    vals = [float(r[k]) for r in data]
                    mean = statistics.fmean(vals)
                    extra = ""
                    if prec == "tf32":
                        why = "CUDA 11, which Ampere needs" if commit else "this NGC container"
                        extra = (f"; 'float' model: PyTorch >= 1.7 ({why}) runs cuDNN "
                                 "convolutions in TF32 by default on Ampere, so precision is tf32")
                    if prec == "fp16":
                        extra = "; 'half' = model.half(): pure fp16 weights and activations, not AMP"
                    out.append(row(
                        network=net, torchvision_match="exact", gpu=gpu, batch=12,
                        precision=prec, **{"pass": pas}, framework=fw,
                        measured_ms=round(mean, 4), original_value=round(mean, 4),
                        original_unit=f"ms (mean of the {len(vals)} per-iteration values in the CSV column)",
                        source_id=sid, source=where(sid, path, f"column '{net}'", commit),
                        note=("torchvision model, 224x224 random input, cudnn.benchmark=True; "
                              + ("forward_backward = zero_grad + forward + CrossEntropy + backward, "
                                 "no optimizer step; " if pas == "forward_backward" else
                                 "eval() under no_grad; ")
                              + note + extra),
                        timed_extra=extras(h2d_input=gpu in RYU_HOST_LINK,
                                           zero_grad=pas == "forward_backward"),
                        host_link=RYU_HOST_LINK.get(gpu, ""),
                    ))
    return out


# --------------------------------------------------------------------------- timm (held out)
# timm's model name → (this project's network, torchvision_match)
TIMM_NET = {n: (n, "exact") for n in (
    "resnet18", "resnet34", "resnet50", "resnet101", "resnet152", "resnext50_32x4d", "resnext101_32x8d",
    "resnext101_64x4d", "wide_resnet50_2", "wide_resnet101_2", "densenet121", "densenet161", "densenet169",
    "densenet201", "inception_v3")}
TIMM_NET.update({"regnetx_004_tv": ("regnet_x_400mf", "exact"), "regnety_008_tv": ("regnet_y_800mf", "exact"),
                 "regnety_080_tv": ("regnet_y_8gf", "exact")})
TIMM_NET.update({v: (v, "close: timm's VGG runs the classifier's two 4096-wide layers as a 7x7 and a 1x1 "
                        "convolution (torchvision: linear layers), the same multiply-adds")
                 for v in ("vgg11", "vgg13", "vgg16", "vgg19", "vgg11_bn", "vgg13_bn", "vgg16_bn", "vgg19_bn")})
TIMM_NET.update({t: (n, "close: timm's own implementation of the architecture (same layers and widths)")
                 for t, n in (("efficientnet_b0", "efficientnet_b0"), ("mobilenetv2_100", "mobilenet_v2"),
                              ("convnext_tiny", "convnext_tiny"), ("convnext_small", "convnext_small"),
                              ("convnext_base", "convnext_base"))})
TIMM_SIZE = {"inception_v3": 299}           # the input size each network is built in for (else 224)
TIMM_FILES = (  # gpu, pass, file, framework: eager PyTorch, AMP (fp16 autocast), NCHW; the newest of each
    ("rtx-3090", "inference", "results/benchmark-infer-amp-nchw-pt240-cu124-rtx3090.csv",
     "PyTorch 2.4, CUDA 12.4 (timm's benchmark.py, AMP fp16 autocast)"),
    ("rtx-4090", "inference", "results/benchmark-infer-amp-nchw-pt240-cu124-rtx4090.csv",
     "PyTorch 2.4, CUDA 12.4 (timm's benchmark.py, AMP fp16 autocast)"),
    ("rtx-3090", "training_step", "results/benchmark-train-amp-nchw-pt112-cu113-rtx3090.csv",
     "PyTorch 1.12, CUDA 11.3 (timm's benchmark.py, AMP fp16 autocast)"),
)


def timm_bench(mirror: Path) -> list[dict]:
    """timm's published benchmark files: the mean step time of each torchvision architecture at the input size
    this project builds it for, one batch per network (the largest that fitted in memory: 128–1024)."""
    sid = "timm-benchmark-results"
    out = []
    for gpu, pas, path, fw in TIMM_FILES:
        pre = "infer" if pas == "inference" else "train"
        for line, r in enumerate(csv.DictReader(io.StringIO(show(mirror, sid, path))), start=2):
            if r["model"] not in TIMM_NET or int(r[f"{pre}_img_size"]) != TIMM_SIZE.get(r["model"], 224):
                continue
            net, match = TIMM_NET[r["model"]]
            ms = float(r[f"{pre}_step_time"])
            out.append(row(
                network=net, torchvision_match=match, gpu=gpu, batch=int(r[f"{pre}_batch_size"]),
                precision="mixed", **{"pass": pas}, framework=fw, measured_ms=ms, original_value=ms,
                original_unit=f"ms ({pre}_step_time: the mean step of 40 timed after 10 warm-up)",
                source_id=sid, source=where(sid, path, f"line {line}, model '{r['model']}'"),
                note=(f"timm model '{r['model']}', random input already on the GPU, cudnn.benchmark=True, "
                      + ("eval() under inference_mode; " if pas == "inference" else
                         "train(): forward + label-smoothing cross-entropy + backward + SGD(momentum 0.9) step, "
                         "zero_grad called before the timer starts, unsynchronized; ")
                      + "synchronized after each step"),
            ))
    return out


# --------------------------------------------------------------------------- u39kun
U39_GPU = {"Titan V": "titan-v", "1080 Ti": "gtx-1080-ti", "2080 Ti": "rtx-2080-ti",
           "V100": "v100-sxm2"}


def u39kun(mirror: Path) -> list[dict]:
    sid = "u39kun-deep-learning-benchmark"
    out = []
    text = show(mirror, sid, "README.md")
    for heads, header, rows in md_tables(text):
        if len(heads) < 2 or not heads[-2].startswith("PyTorch") or header[0] != "Model":
            continue
        fw_head, prec_head = heads[-2], heads[-1]
        prec = {"32-bit": "fp32", "16-bit": "fp16"}[prec_head]
        for cells in rows:
            label = cells[0]
            gpu_key = next((g for g in U39_GPU if label.startswith(g)), None)
            if gpu_key is None:
                continue
            m = re.search(r"\((.*)\)", label)
            env = m.group(1) if m else "CUDA 9.0.176, cuDNN 7.0.0.5 (README default)"
            fw = f"{fw_head} ({env})"
            for col in range(1, len(header)):
                if not cells[col]:
                    continue
                net, mode = header[col].split()
                pas = "inference" if mode == "eval" else "forward_backward"
                note = ("torchvision model, batch 16, 224x224, cudnn.benchmark=True, mean of 20 "
                        "iterations after 20 warm-up, input already on the GPU; ")
                note += ("forward only, model.eval()" if pas == "inference" else
                         "zero_grad + forward + out.sum() + backward (input requires grad), "
                         "no optimizer step")
                if prec == "fp16":
                    note += "; 16-bit = model.half(): pure fp16, not AMP"
                if gpu_key == "V100":
                    note += "; V100 on an Amazon p3 instance (p3 V100s are SXM2 16 GB)"
                out.append(row(
                    network=net, torchvision_match="exact", gpu=U39_GPU[gpu_key], batch=16,
                    precision=prec, **{"pass": pas}, framework=fw,
                    measured_ms=num(cells[col]), original_value=num(cells[col]), original_unit="ms",
                    source_id=sid,
                    source=where(sid, "README.md",
                                 f"## {fw_head} / ### {prec_head}: row '{label}', column '{header[col]}'"),
                    note=note, timed_extra=extras(zero_grad=pas == "forward_backward"),
                ))
    return out


# --------------------------------------------------------------------------- NVIDIA DLE
DLE_DIR = "PyTorch/Classification/ConvNets"
DLE_NET = {
    "resnet50v1.5": ("resnet50", "close: NVIDIA ResNet50 v1.5 = torchvision resnet50 layout (stride on "
                     "the 3x3 conv); AMP runs use NHWC memory format"),
    "resnext101-32x4d": ("resnext101_32x4d", "none: torchvision has resnext101_32x8d and "
                         "resnext101_64x4d, not 32x4d"),
    "efficientnet": (None, None),
}
DLE_GPU = {"DGX A100 (8x A100 80GB)": "a100-80gb-sxm", "DGX-1 16GB (8x V100 16GB)": "v100-sxm2",
           "DGX-1 32GB (8x V100 32GB)": "v100-sxm2", "DGX-1 (1x V100 16GB)": "v100-sxm2",
           "T4": "t4", "A100 (1x A100 80GB)": "a100-80gb-sxm", "V100 (1x V100 16GB)": "v100-sxm2"}
# per-GPU batch of the training benchmark: configs.yml (same values at README commit 7bdfc81)
DLE_TRAIN_BATCH = {
    ("resnet50", "a100-80gb-sxm", "tf32"): 256, ("resnet50", "a100-80gb-sxm", "mixed"): 256,
    ("resnet50", "v100-sxm2", "fp32"): 112, ("resnet50", "v100-sxm2", "mixed"): 256,
    ("resnext101_32x4d", "a100-80gb-sxm", "tf32"): 128,
    ("resnext101_32x4d", "a100-80gb-sxm", "mixed"): 128,
    ("resnext101_32x4d", "v100-sxm2", "fp32"): 64, ("resnext101_32x4d", "v100-sxm2", "mixed"): 128,
}
DLE_FW = "PyTorch, NGC container pytorch:21.03 (native AMP for mixed)"


def _dle_gpu(title: str) -> str:
    for k, v in DLE_GPU.items():
        if title.endswith(k):
            return v
    raise KeyError(title)


def nvidia_dle(mirror: Path) -> list[dict]:
    sid = "nvidia-deeplearningexamples"
    out = []
    for model in ("resnet50v1.5", "resnext101-32x4d", "efficientnet"):
        path = f"{DLE_DIR}/{model}/README.md"
        text = show(mirror, sid, path)
        for heads, header, rows in md_tables(text):
            title = heads[-1]
            if "Training performance:" in title and header[0] == "**GPUs**":
                gpu = _dle_gpu(title)
                mem = "32GB" if "32GB" in title else ""
                for cells in rows:
                    if cells[0] != "1":
                        continue  # single-GPU rows only
                    for col, prec in ((1, None), (2, "mixed")):
                        if prec is None:
                            prec = "tf32" if "TF32" in header[col] else "fp32"
                        net, match = DLE_NET[model]
                        batch = DLE_TRAIN_BATCH[(net, gpu, prec)]
                        ips = num(cells[col])
                        out.append(row(
                            network=net, torchvision_match=match, gpu=gpu, batch=batch,
                            precision=prec, **{"pass": "training_step"}, framework=DLE_FW,
                            measured_ms=round(batch / ips * 1000, 3), original_value=ips,
                            original_unit="images/s", source_id=sid,
                            source=where(sid, path, f"{title}: row GPUs=1, column '{header[col]}'")
                                   + f"; batch from {DLE_DIR}/configs.yml",
                            note=("training throughput of the full step (forward, backward, SGD "
                                  "momentum, DALI data pipeline from ImageNet); ms = batch / "
                                  "images/s x 1000" + (f"; V100 {mem} board" if mem else "")),
                        ))
            elif "Inference Latency" in title and "**Batch Size**" in header:
                gpu = _dle_gpu(heads[-2])
                prec = "mixed" if title.startswith("Mixed") else (
                    "tf32" if title.startswith("TF32") else "fp32")
                has_model = header[0] == "**Model**"
                bi = header.index("**Batch Size**")
                ti = header.index("**Throughput Avg**")
                li = header.index("**Latency Avg**")
                for cells in rows:
                    if has_model:
                        if cells[0] != "efficientnet-b0":
                            continue
                        net, match = "efficientnet_b0", (
                            "close: NVIDIA efficientnet-b0 (DeepLearningExamples), same "
                            "B0 scaling as torchvision efficientnet_b0; implementation differs")
                    else:
                        net, match = DLE_NET[model]
                    out.append(row(
                        network=net, torchvision_match=match, gpu=gpu, batch=int(num(cells[bi])),
                        precision=prec, **{"pass": "inference"}, framework=DLE_FW,
                        measured_ms=num(cells[li]), original_value=num(cells[li]),
                        original_unit="ms", source_id=sid,
                        source=where(sid, path, f"{heads[-2]} / {title}: row batch={cells[bi]}, "
                                                "column 'Latency Avg'"),
                        note=(f"average latency of one batch; the same row gives throughput "
                              f"{cells[ti]}; NVIDIA's inference benchmark (may include "
                              "host-side data pipeline time; at small batch latency is overhead-bound)"),
                    ))
    return out


# --------------------------------------------------------------------------- Lambda
# 1-GPU rows of Lambda's summary CSVs; one row per GPU model (the duplicate H100
# SXM5 rows from other server vendors and the LambdaCloud H100 PCIe rerun are
# left out, as are GPUs without an agreed id: RTX 6000 Ada, and the LambdaCloud
# V100 16GB whose form factor (SXM2 or PCIe) the CSV does not say).
LAMBDA_GPU = {
    "Quadro RTX 8000": "quadro-rtx-8000", "RTX 3090": "rtx-3090", "LambdaCloud A10": "a10",
    "LambdaCloud A100 40GB PCIe": "a100-40gb-pcie", "A100 80GB PCIe": "a100-80gb-pcie",
    "A100 80GB SXM4": "a100-80gb-sxm", "RTX A6000": "rtx-a6000", "RTX 4090": "rtx-4090",
    "H100 80GB PCIe Gen5": "h100-pcie", "H100 80GB SXM5": "h100-sxm",
}


def lambdal(mirror: Path) -> list[dict]:
    sid = "lambdal-deeplearning-benchmark"
    out = []
    for word in ("fp32", "fp16"):
        tpath = f"pytorch/pytorch-train-throughput-{word}.csv"
        bpath = f"pytorch/pytorch-train-bs-{word}.csv"
        thr = list(csv.DictReader(io.StringIO(show(mirror, sid, tpath))))
        bs = {r["name_gpu"]: r for r in csv.DictReader(io.StringIO(show(mirror, sid, bpath)))}
        for r in thr:
            name = r["name_gpu"]
            if name not in LAMBDA_GPU or float(r["num_gpu"]) != 1:
                continue
            gpu = LAMBDA_GPU[name]
            batch = int(float(bs[name]["resnet50"]))
            ips = float(r["resnet50"])
            if word == "fp16":
                prec = "mixed"
            else:
                prec = "fp32" if GENERATION[gpu] == "turing" else "tf32"
            out.append(row(
                network="resnet50", torchvision_match=DLE_NET["resnet50v1.5"][1], gpu=gpu,
                batch=batch, precision=prec, **{"pass": "training_step"},
                framework=("PyTorch in an NGC pytorch container (20.10 to 22.09 in Lambda's "
                           "scripts; which one is not recorded per row), NVIDIA "
                           "DeepLearningExamples resnet50v1.5"),
                measured_ms=round(batch / ips * 1000, 3), original_value=ips,
                original_unit="images/s", source_id=sid,
                source=(where(sid, tpath, f"row '{name}', column 'resnet50'")
                        + f"; batch from {bpath}, same row and column"),
                note=("single-GPU training throughput of NVIDIA's ResNet-50 v1.5 script "
                      "(forward, backward, SGD step) on synthetic data, 100 profiled iterations; "
                      "ms = batch / images/s x 1000"
                      + ("; the 'fp16' CSV is the --amp run (AMP)" if word == "fp16" else "")
                      + ("; the 'fp32' run uses TF32 tensor cores by default on this GPU"
                         if prec == "tf32" else "")),
            ))
    return out


# --------------------------------------------------------------------------- Kepler and P100: TensorFlow
TF_DOC = "tensorflow/docs_src/performance/benchmarks.md"
TF_TRANSCRIBED = HERE / "tensorflow_k80_transcribed.csv"
TF_TRANSCRIBED_P100 = HERE / "tensorflow_p100_transcribed.csv"
TF_NET = {
    "InceptionV3": ("inception_v3", "close: tf_cnn_benchmarks 9165a70 inception3 (Inception v3 at 299x299 "
                    "with batch norm, no auxiliary head)"),
    "ResNet-50": ("resnet50", "close: tf_cnn_benchmarks 9165a70 ResNet v1 (stride 2 on the first 1x1 conv of "
                  "a bottleneck; torchvision has it on the 3x3, v1.5: about 6 % more multiply-adds)"),
    "ResNet-152": ("resnet152", "close: tf_cnn_benchmarks 9165a70 ResNet v1 (stride 2 on the first 1x1 conv "
                   "of a bottleneck; torchvision has it on the 3x3, v1.5)"),
    "VGG16": ("vgg16", "exact"),
}
# the per-model configuration of each platform (the doc's 'Configuration used for each model')
TF_PLATFORM = {
    "Details for Google Compute Engine (NVIDIA® Tesla® K80)": (
        "GCE n1-standard-32-k80x8", {m: "variable_update=parameter_server, local_parameter_device=cpu"
                                     for m in TF_NET}),
    "Details for Amazon EC2 (NVIDIA® Tesla® K80)": (
        "EC2 p2.8xlarge", {"InceptionV3": "variable_update=parameter_server, local_parameter_device=cpu",
                           "ResNet-50": "variable_update=replicated (without NCCL), local_parameter_device=gpu",
                           "ResNet-152": "variable_update=replicated (without NCCL), local_parameter_device=gpu",
                           "VGG16": "variable_update=parameter_server, local_parameter_device=gpu"}),
    # the doc's table names the ResNets 'ResNet50' and 'ResNet152' here
    "Details for NVIDIA® DGX-1™ (NVIDIA® Tesla® P100)": (
        "NVIDIA DGX-1", {"InceptionV3": "variable_update=parameter_server, local_parameter_device=cpu",
                         "ResNet-50": "variable_update=parameter_server, local_parameter_device=cpu",
                         "ResNet-152": "variable_update=parameter_server, local_parameter_device=cpu",
                         "VGG16": "variable_update=replicated (with NCCL), local_parameter_device n/a"}),
}
# per transcription: the device id, the GPU as the note names it, and the doc's environment for that platform
TF_RUNS = (
    (TF_TRANSCRIBED, "k80", "one of its K80 GPUs (one GK210, GPU Boost left on)",
     "TensorFlow (GitHub hash b1e174e, May 2017), tf_cnn_benchmarks 9165a70, CUDA 8.0, cuDNN 5.1"),
    (TF_TRANSCRIBED_P100, "p100-sxm2", "one of its 8 Tesla P100 (SXM2 16 GB, NVLink) GPUs, in its default state",
     "TensorFlow (GitHub hash b1e174e, May 2017, run via Docker), tf_cnn_benchmarks 9165a70, CUDA 8.0, cuDNN 5.1"),
)


def tensorflow_k80(mirror: Path) -> list[dict]:
    """The 1-GPU synthetic-data training rows of TensorFlow's K80 and DGX-1 P100 benchmarks, from the hand
    transcriptions (AlexNet is left out: README.md says why)."""
    sid = "tensorflow-benchmarks-doc"
    out = []
    for path, gpu, gpu_words, fw in TF_RUNS:
        for t in csv.DictReader(path.open(encoding="utf-8")):
            model = t["column"].split(" (")[0]
            net, match = TF_NET[model]
            instance, configs = TF_PLATFORM[t["section"]]
            batch, ips = int(t["batch"]), float(t["images_per_s"])
            out.append(row(
                network=net, torchvision_match=match, gpu=gpu, batch=batch, precision="fp32",
                **{"pass": "training_step"}, framework=fw,
                measured_ms=round(batch / ips * 1000, 3), original_value=ips, original_unit="images/s",
                source_id=sid,
                source=where(sid, TF_DOC, f"## {t['section']} / {t['table']}: row GPUs={t['gpus']}, "
                                          f"column '{t['column']}'") + f"; transcribed in {path.name}",
                note=(f"{instance}, {gpu_words}; synthetic data (a tf.Variable "
                      f"input); {configs[model]}; training step with SGD; mean of 100 steps after 10 warm-up, "
                      "averaged over 5 runs; ms = batch / images/s x 1000"),
            ))
    return out


# --------------------------------------------------------------------------- Kepler: MXNet
# (commit, path, framework, date): the 2016 how_to page and the 2018 faq page of MXNet's performance notes
MXNET_DOCS = (
    ("1ae2be51c12fe854de84b2cfd29cda7eff546986", "docs/how_to/perf.md",
     "MXNet commit 0a03417 (Dec 2016), cuDNN 5.1", "0a03417"),
    ("db4de44f170df08a1500feabccb55a63266d7ae2", "docs/faq/perf.md",
     "MXNet 1.2.0.rc1, cuDNN 7.0.5", "db4de44"),
)
MX_V2 = ("close: MXNet symbols resnet.py = pre-activation ResNet v2 (Identity Mappings), stride 2 on the 3x3 "
         "conv like torchvision v1.5; batch-norm and ReLU placed before each conv")
MX_NET = {
    "VGG 16": ("vgg16", "exact"),      # symbols/vgg.py num_layers=16, no batch norm
    "VGG": ("vgg11", "exact"),         # symbol/vgg.py at 0a03417: configuration A (8 convs 64-512, 3 FC)
    "Inception-v3": ("inception_v3", "close: MXNet symbol inception-v3 at 299x299 (no auxiliary head)"),
    "Resnet 50": ("resnet50", MX_V2),
    "Resnet 152": ("resnet152", MX_V2),
}
# left out: Alexnet (MXNet's symbol has ungrouped 96-256-384-384-256 convs, about 1.4x torchvision's
# multiply-adds: not built in), Alexnet(*16)/(*8) training, Inception-BN (not built in)

# the pages' per-GPU tables, by the '- ' bullet above each: (device id, what the note says the GPU is). The 2016
# page says "K80 (EC2 p2.2xlarge), M40, and P100 (DGX-1)", the 2018 page "K80 (EC2 p2.2xlarge), M60 (EC2
# g3.4xlarge), and V100 (EC2 p3.2xlarge)"
MX_GPU = {
    "K80 (single GPU)": ("k80", "the doc's 'K80 (single GPU)' (EC2 p2): one GK210 of a K80 board"),
    "M40": ("m40", "the doc's 'M40': a Tesla M40 (which board, 12 or 24 GB, is not stated; both have the same "
                   "compute and bandwidth)"),
    "P100": ("p100-sxm2", "the doc's 'P100' (DGX-1): a Tesla P100 SXM2 16 GB"),
    "M60": ("m60", "the doc's 'M60' (EC2 g3.4xlarge): one GM204 GPU (8 GB) of a Tesla M60 board"),
    "V100": ("v100-sxm2", "the doc's 'V100' (EC2 p3.2xlarge): one Tesla V100 SXM2 16 GB"),
}
MX_FP16_TABLE = "Below is the performance result on V100 using float 16."


def _bullet_tables(text: str):
    """Yield (## heading, ### heading, last '- ' bullet, last line of text after it, header, rows) for each table,
    indented or not."""
    h2 = h3 = bullet = para = ""
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        line = lines[i].strip()
        if lines[i].startswith("## "):
            h2, h3, bullet, para = lines[i][3:].strip(), "", "", ""
        elif lines[i].startswith("### "):
            h3, bullet, para = lines[i][4:].strip(), "", ""
        elif line.startswith("- "):
            bullet, para = line[2:].strip(), ""
        elif line and not line.startswith("|"):
            para = line
        if line.startswith("|") and i + 1 < len(lines) and re.match(r"^\|[\s:|-]+\|?\s*$", lines[i + 1].strip()):
            header = [c.strip() for c in line.strip("|").split("|")]
            rows, j = [], i + 2
            while j < len(lines) and lines[j].strip().startswith("|"):
                rows.append([c.strip() for c in lines[j].strip().strip("|").split("|")])
                j += 1
            yield h2, h3, bullet, para, header, rows
            para = ""
            i = j
            continue
        i += 1


def _mx_resnet50_depth(short: str, gpu: str) -> str:
    """Why a training 'Resnet 50' column is taken at its label, for the page (short commit) and GPU."""
    if short != "db4de44":
        text = ("; depth as the table says: the script of that week passed no --num-layers "
                "(train_imagenet.py default 50)")
        if gpu == "p100-sxm2":
            text += ("; 181.5 images/s at batch 32 is near TensorFlow's DGX-1 P100 ResNet-50 (195 at batch 32), "
                     "not its ResNet-152 (82.7)")
        return text
    if gpu == "k80":
        return ("; depth as the table says (50): the 2016 script passed no --num-layers "
                "(train_imagenet.py default 50); the later script passes --num-layers 152, "
                "but 49.5 images/s at batch 32 matches TensorFlow's ResNet-50 on the K80 "
                "(49.0-49.5), not its ResNet-152 (19.7-20.0)")
    text = ("; depth as the table says (50): the later run_vary_batch.sh passes --num-layers 152, but the K80 "
            "table of the same page (49.5 images/s at batch 32) matches TensorFlow's ResNet-50 on the K80 "
            "(49.0-49.5), not its ResNet-152 (19.7-20.0)")
    if gpu == "v100-sxm2":
        text += ("; here 343-364 images/s at batch 64-128 is the fp32 ResNet-50 rate of a V100 SXM2 "
                 "(nvidia-deeplearningexamples: 356-367 images/s at batch 112), not ResNet-152's")
    return text


def mxnet_perf(mirror: Path) -> list[dict]:
    sid = "apache-mxnet-perf"
    out = []
    for commit, path, fw, short in MXNET_DOCS:
        text = show(mirror, sid, path, commit)
        for h2, h3, bullet, para, header, rows in _bullet_tables(text):
            if h2 != "Nvidia GPU" or bullet not in MX_GPU:
                continue
            gpu, gpu_words = MX_GPU[bullet]
            pas = {"Scoring results": "inference", "Training results": "training_step"}[h3]
            fp16 = para == MX_FP16_TABLE
            assert not para or fp16, (path, bullet, para)      # no other table sits under text of its own
            table = f"{bullet} / table after '{para}'" if fp16 else bullet
            for cells in rows:
                batch = int(num(cells[0]))
                for col in range(1, len(header)):
                    if header[col] not in MX_NET or cells[col] == "OOM":
                        continue
                    net, match = MX_NET[header[col]]
                    ips = num(cells[col])
                    if pas == "inference":
                        note = (f"example/image-classification/benchmark_score.py at {short}: Module bound "
                                "for_training=False, forward(is_train=False) on random input already on the GPU, "
                                "5 warm-up + 10 timed batches (time.time, waits for the outputs)")
                        if batch > 32:
                            note += ("; the script at this commit runs batch 1-32 only: how the 64-256 rows "
                                     "were run is not stated")
                        if fp16:
                            note += ("; float16: the script at this commit has no dtype switch, so how it was run "
                                     "is not stated; the symbols' dtype='float16' casts the input to fp16, runs "
                                     "every layer in fp16 and casts the output back to fp32: whole model in half, "
                                     "not AMP (python/mxnet/contrib at this commit has no amp); tensor cores are "
                                     "allowed by default (MXNET_CUDA_ALLOW_TENSOR_CORE, src/common/cuda_utils.h)")
                    else:
                        note = ("train_imagenet.py --benchmark 1 (synthetic data) --gpus 0 via mli/mxnet-benchmark "
                                "run_vary_batch.sh; Speedometer throughput of full steps (forward, backward, SGD "
                                "update)")
                        if batch > 32:
                            note += ("; run_vary_batch.sh runs batch 1-32 only: how the 64 and 128 rows were run "
                                     "is not stated")
                        if net == "resnet50":
                            note += _mx_resnet50_depth(short, gpu)
                    if header[col] == "VGG":
                        note += ("; the column 'VGG' is symbol/vgg.py at 0a03417, VGG configuration A "
                                 "(8 convs 64-512, 3 FC layers): torchvision vgg11")
                    note += f"; {gpu_words}; ms = batch / images/s x 1000"
                    out.append(row(
                        network=net, torchvision_match=match, gpu=gpu, batch=batch,
                        precision="fp16" if fp16 else "fp32",
                        **{"pass": pas}, framework=fw,
                        measured_ms=round(batch / ips * 1000, 3), original_value=ips, original_unit="images/s",
                        source_id=sid,
                        source=where(sid, path, f"## {h2} / ### {h3} / {table}: row Batch={cells[0]}, "
                                                f"column '{header[col]}'", commit),
                        note=note,
                    ))
    return out


# --------------------------------------------------------------------------- Kepler: Caffe
CAFFE_DOC = "docs/performance_hardware.md"
CAFFE_PROTO = "models/bvlc_reference_caffenet/train_val.prototxt"
# only the K40 settings that match device_specs.json's k40 (875 MHz boost, ECC off: the datasheet bandwidth);
# the ECC-on and default-clock (745 MHz) lines, and the Titan, K20 and GTX 770 sections, are left out
CAFFE_SETTINGS = {
    "Best settings with ECC off and maximum clock speed in standard Caffe:":
        "Caffe (2014; convolution as im2col + cuBLAS)",
    "Best settings with Caffe + [cuDNN acceleration](http://nvidia.com/cudnn):":
        "Caffe + cuDNN (version not stated)",
}


def caffe_k40(mirror: Path) -> list[dict]:
    sid = "bvlc-caffe-performance"
    text = show(mirror, sid, CAFFE_DOC)
    proto = show(mirror, sid, CAFFE_PROTO)
    # the TEST data layer's batch: the second 'batch_size' of the prototxt (TRAIN first, then TEST)
    train_batch, test_batch = (int(b) for b in re.findall(r"batch_size:\s*(\d+)", proto)[:2])
    m = re.search(r"each time point is (\d+) iterations/minibatches of (\d+) images", text)
    iters, batch = int(m.group(1)), int(m.group(2))
    assert batch == train_batch, (batch, train_batch)
    section = text.split("## NVIDIA K40", 1)[1].split("\n## ", 1)[0]
    match = ("close: CaffeNet (BVLC reference model: AlexNet with pooling before LRN, 96-256-384-384-256 convs, "
             "conv2/4/5 in 2 groups, 227x227 crop): 724.4 M multiply-adds, 1.3 % above torchvision alexnet's")
    out = []
    for label, fw in CAFFE_SETTINGS.items():
        block = section.split(label, 1)[1].split("\n\n", 2)[1]
        tr = re.search(r"Training is ([\d.]+) secs / (\d+) iterations", block)
        te = re.search(r"Testing is ([\d.]+) secs / validation set \(([\d,]+) images\)", block)
        assert int(tr.group(2)) == iters
        setting = label.rstrip(":")
        secs = float(tr.group(1))
        out.append(row(
            network="alexnet", torchvision_match=match, gpu="k40", batch=batch, precision="fp32",
            **{"pass": "training_step"}, framework=fw,
            measured_ms=round(secs / iters * 1000, 3), original_value=secs,
            original_unit=f"s per {iters} iterations", source_id=sid,
            source=where(sid, CAFFE_DOC, f"## NVIDIA K40 / '{setting}': 'Training is {tr.group(1)} secs / "
                                         f"{iters} iterations'") + f"; batch {batch} from the doc's first paragraph",
            note=(f"wall clock of {iters} training iterations of batch {batch} (forward, backward, SGD with "
                  "momentum, LMDB data prefetch in a thread); ECC off, 875 MHz; ms = s / iterations x 1000"),
        ))
        secs, images = float(te.group(1)), int(te.group(2).replace(",", ""))
        out.append(row(
            network="alexnet", torchvision_match=match, gpu="k40", batch=test_batch, precision="fp32",
            **{"pass": "inference"}, framework=fw,
            measured_ms=round(secs / (images / test_batch) * 1000, 3), original_value=secs,
            original_unit=f"s per {images} images", source_id=sid,
            source=where(sid, CAFFE_DOC, f"## NVIDIA K40 / '{setting}': 'Testing is {te.group(1)} secs / "
                                         f"validation set'")
                   + f"; batch {test_batch}: TEST batch_size of {CAFFE_PROTO}",
            note=(f"wall clock of classifying {images} validation images in batches of {test_batch} (TEST phase "
                  "forward with the accuracy layers and LMDB data loading); ECC off, 875 MHz; "
                  f"ms = s / ({images} / {test_batch}) x 1000"),
        ))
    return out


# --------------------------------------------------------------------------- measured here
# Timings this project measured itself (benchmarks/measure_gpu.py on a lent GPU): one folder per session under
# measured/, holding the raw lines (gpu_measured.jsonl) and the machine (gpu_env_run*.json).
MEASURED = {"h200-2026-11-26": "h200-sxm", "h100-2026-11-27": "h100-sxm", "h200-2026-11-27": "h200-sxm",
            "h200-2026-11-27-nets": "h200-sxm", "h100-2026-11-27-nets": "h100-sxm",
            "h100-2026-11-27-nets2": "h100-sxm", "h200-2026-11-27-nets2": "h200-sxm",
            "h200-2026-11-27-nets3": "h200-sxm", "h100-2026-11-27-nets3": "h100-sxm"}
MEASURED_PRECISION_NOTE = {
    "fp32": "fp32 with TF32 off for cuDNN and cuBLAS",
    "tf32": "fp32 storage, TF32 on for cuDNN and cuBLAS",
    "bf16": "model and input in bfloat16 (weights, activations, gradients, optimizer state)",
    "mixed": "fp32 weights, torch.autocast fp16 in forward and loss, GradScaler",
}


def measured_here() -> list[dict]:
    """The rows of every folder in ``MEASURED``: one per line of its gpu_measured.jsonl (a case that failed is left
    out), the machine from gpu_env_run1.json."""
    out = []
    for folder, gpu in MEASURED.items():
        d = HERE / "measured" / folder
        env = json.loads((d / "gpu_env_run1.json").read_text())
        v = env["cudnn"]                 # torch.backends.cudnn.version(): 91900 = 9.19.0
        fw = (f"PyTorch {env['torch']} (eager), CUDA {env['cuda']}, cuDNN {v // 10000}.{v % 10000 // 100}.{v % 100}, "
              f"cudnn.benchmark {env['cudnn_benchmark']}, torchvision {env['torchvision']}")
        sid = f"measured-{folder}"
        path = f"benchmarks/data/measured/{folder}/gpu_measured.jsonl"
        for n, line in enumerate((d / "gpu_measured.jsonl").read_text().splitlines(), start=1):
            m = json.loads(line)
            if "error" in m:
                continue
            out.append(row(
                network=m["network"], torchvision_match="exact", gpu=gpu,
                batch=m["batch"], precision=m["precision"], **{"pass": m["pass"]}, framework=fw,
                measured_ms=round(m["measured_ms"], 6), original_value=m["measured_ms"],
                original_unit=f"ms, median of {m['runs']} runs", source_id=sid,
                source=(f"{path} :: line {n} (benchmarks/measure_gpu.py on an {env['gpu']}, "
                        f"{env['date_utc'][:10]}; the machine in gpu_env_run*.json)"),
                note=(f"{MEASURED_PRECISION_NOTE[m['precision']]}; torchvision's own model (weights=None); input "
                      "3x224x224 already on the GPU; each run between torch.cuda.synchronize() calls on the host "
                      "clock; "
                      + ("eval mode, torch.no_grad()" if m["pass"] == "inference" else
                         "train mode: zero_grad (set to None), forward, cross-entropy, backward, "
                         "SGD(momentum 0.9, foreach) step")
                      + f"; SM clock read after each network: {env['smi']['clocks.max.sm']} MHz max"),
            ))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--mirror", default=os.environ.get("MIRROR", "/work/.mirror"))
    args = ap.parse_args()
    mirror = Path(args.mirror)
    rows = (jcjohnson(mirror) + jcjohnson_k40(mirror) + ryujaehun(mirror) + u39kun(mirror) + nvidia_dle(mirror)
            + lambdal(mirror) + tensorflow_k80(mirror) + mxnet_perf(mirror) + caffe_k40(mirror)
            + measured_here())
    held = [r for r in rows if (r["source_id"], r["gpu"]) in HOLDOUT_RUNS]
    rows = [r for r in rows if (r["source_id"], r["gpu"]) not in HOLDOUT_RUNS]
    for path, out in ((OUT, rows), (HOLDOUT, held + timm_bench(mirror))):
        with path.open("w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=COLUMNS, lineterminator="\n")
            w.writeheader()
            w.writerows(out)
        print(f"{len(out)} rows -> {path}")


if __name__ == "__main__":
    main()
