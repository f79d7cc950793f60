"""build_gpu_timings.py's readers of the published benchmark repositories, one function per source:
jcjohnson/cnn-benchmarks (with the K40c rows of its first README), ryujaehun/pytorch-gpu-benchmark,
huggingface/pytorch-image-models' benchmark files (timm, held out of every fit), u39kun/deep-learning-benchmark,
NVIDIA/DeepLearningExamples and lambdal/deeplearning-benchmark.
"""

from __future__ import annotations

import csv
import io
import re
import statistics
from pathlib import Path

from gpu_timings_common import GENERATION, extras, md_tables, num, row, show, where

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
