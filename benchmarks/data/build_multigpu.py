"""Rebuild multigpu_throughput.csv: published multi-GPU data-parallel training throughput of CNNs (issue 42).

Each series (``group``) is one source, system, network, precision, per-GPU batch, framework and data pipeline, with
its 1-GPU row and its N-GPU rows (fixed per-GPU batch: what NVIDIA's PyTorch READMEs call "strong scaling" and its
TensorFlow and MXNet READMEs "weak scaling"). Every number is read here from a file of a public repository at a
pinned commit, from local git snapshots (``--mirror DIR``, default /work/.mirror, laid out as
``owner+name/repo``), except TensorFlow's benchmarks page, whose repository is too large to fetch here: its figures
are typed into ``tensorflow_multigpu_transcribed.csv`` (README.md says how they were checked).

    python benchmarks/data/build_multigpu.py  [--mirror DIR]
"""

from __future__ import annotations

import argparse
import csv
import io
import os
import re
import sys
from collections import defaultdict
from pathlib import Path

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent))

from gpu_timings_common import HERE, SOURCES, md_tables, num, show, where
from gpu_timings_frameworks import TF_DOC, TF_NET, TF_PLATFORM

OUT = HERE / "multigpu_throughput.csv"
TF_TRANSCRIBED = HERE / "tensorflow_multigpu_transcribed.csv"

COLUMNS = [
    "group", "source_id", "system", "gpu", "gpu_known", "gpus", "nodes", "gpus_per_node", "interconnect",
    "internode", "interconnect_stated", "sync", "network", "torchvision_match", "per_gpu_batch", "precision",
    "framework", "data", "pipeline", "cpu_cores", "images_per_s", "scaling_words", "source", "note",
]
# series whose N-GPU figures exceed N x the 1-GPU figure by more than this are left out (a 1-GPU run at another
# batch or setting, not a scaling measurement); README.md lists them
SUPERLINEAR = 1.05

DLE = "nvidia-deeplearningexamples"
DLE_PT = "PyTorch/Classification/ConvNets"
RN50_MATCH = ("close: NVIDIA ResNet-50 v1.5 = torchvision resnet50 layout (stride 2 on the 3x3 conv); "
              "AMP runs use NHWC")
DLE_NET = {
    "resnet50v1.5": ("resnet50", RN50_MATCH),
    "resnext101-32x4d": ("resnext101_32x4d", "none: torchvision has resnext101_32x8d and 64x4d, not 32x4d"),
    "se-resnext101-32x4d": ("se_resnext101_32x4d", "none: squeeze-excitation ResNeXt-101 32x4d, not in torchvision"),
    "efficientnet-b0": ("efficientnet_b0", "close: NVIDIA's EfficientNet-B0 (224 px), same B0 scaling as torchvision "
                                           "efficientnet_b0; implementation differs"),
    "efficientnet-b4": ("efficientnet_b4", "close: NVIDIA's EfficientNet-B4 (380 px), same B4 scaling as torchvision "
                                           "efficientnet_b4; implementation differs"),
}
# (pattern in the table's heading, system, gpu id, interconnect, stated, host cores, configs.yml platform, memory)
DGX = (
    (r"A100 \(8x A100 80GB\)", "NVIDIA DGX A100 (8x A100 80GB)", "a100-80gb-sxm", "nvswitch",
     "implied by DGX A100 (8 A100 SXM4 joined by NVSwitch)", 128, "DGXA100"),
    (r"A100 \(8x A100 40GB\)", "NVIDIA DGX A100 (8x A100 40GB)", "a100-40gb-sxm", "nvswitch",
     "implied by DGX A100 (8 A100 SXM4 joined by NVSwitch)", 128, "DGXA100"),
    (r"DGX-1.*V100 16G", "NVIDIA DGX-1 (8x V100 16GB)", "v100-sxm2", "nvlink-mesh",
     "implied by DGX-1 (8 V100 SXM2 in an NVLink hybrid cube-mesh)", 40, "DGX1V-16G"),
    (r"DGX-1.*V100 32G", "NVIDIA DGX-1 (8x V100 32GB)", "v100-sxm2", "nvlink-mesh",
     "implied by DGX-1 (8 V100 SXM2 in an NVLink hybrid cube-mesh)", 40, "DGX1V-32G"),
    (r"DGX-2 \(16x V100 32G", "NVIDIA DGX-2 (16x V100 32GB)", "v100-sxm2", "nvswitch",
     "implied by DGX-2 (16 V100 32GB joined by NVSwitch)", 48, "DGX2V"),
)
CORES_NOTE = {128: "DGX A100: 2x 64-core AMD EPYC 7742", 40: "DGX-1: 2x 20-core Xeon E5-2698 v4",
              48: "DGX-2: 2x 24-core Xeon Platinum 8168"}
# the DLE tables left out, by (file, heading pattern): README.md says why
DLE_SKIP = {
    # 1-GPU figures of EfficientNet-B4 and widese-B0/B4 are 2-5x below the 16GB table's while the 8-GPU figures
    # match it (17.6x "strong scaling" on 8 GPUs), and the text above the table says 16GB: batch unclear
    (f"{DLE_PT}/efficientnet/README.md", r"DGX-1 \(8x V100 32GB\)"),
}


# the README folder's model in configs.yml
PT_CFG_KEY = {"resnet50v1.5": "resnet50"}


def _dgx(title: str):
    for pat, *rest in DGX:
        if re.search(pat, title):
            return rest
    return None


def _sections(text: str):
    """Yield (heading, body) for each markdown heading; body runs to the next heading."""
    parts = re.split(r"^(#{2,6} .*)$", text, flags=re.M)
    for k in range(1, len(parts), 2):
        yield parts[k].lstrip("#").strip(), parts[k + 1]


def _prec(col: str) -> str | None:
    c = col.strip("* ").lower()
    if "speedup" in c or "scaling" in c or "time" in c or "batch" in c:
        return None
    if "mixed" in c:
        return "mixed"
    if "tf32" in c:
        return "tf32"
    if "fp32" in c:
        return "fp32"
    return None


def _scaling_word(header: list[str], prec: str) -> str:
    for h in header:
        low = h.lower()
        if "scaling" in low and (prec == "mixed") == ("mixed" in low):
            return "strong scaling" if "strong" in low else ("weak scaling" if "weak" in low else "")
    return ""


def _row(**kw) -> dict:
    r = {c: "" for c in COLUMNS}
    r.update(kw)
    return r


def _series(rows: list[dict], key: tuple) -> str:
    return "/".join(re.sub(r"[^a-z0-9.+-]+", "-", str(k).lower()).strip("-") for k in key)


# --------------------------------------------------------------------------- NVIDIA DeepLearningExamples
def _dle_table_rows(mirror, path, fw, sync, data, pipeline, batch_of, extra_note=""):
    """The training-performance tables of one DLE README: GPUs column, one throughput column per precision."""
    out = []
    text = show(mirror, DLE, path)
    for title, body in _sections(text):
        if not title.startswith("Training performance") or "sparsity" in title.lower():
            continue
        if any(p == path and re.search(pat, title) for p, pat in DLE_SKIP):
            continue
        found = _dgx(title)
        if found is None:
            continue                 # "Training performance benchmark" / "... results": no table of a system
        system, gpu, ic, stated, cores, platform = found
        for _, header, rows in md_tables(body):
            cols = [h.strip("* ").strip() for h in header]
            if "GPUs" not in cols:
                continue
            gi = cols.index("GPUs")
            mi = cols.index("Model") if "Model" in cols else None
            bi = next((i for i, c in enumerate(cols) if c.startswith("Batch Size")), None)
            for ci, col in enumerate(cols):
                prec = _prec(col)
                if prec is None:
                    continue
                for cells in rows:
                    model = cells[mi] if mi is not None else None
                    if model is not None and model not in DLE_NET:
                        continue       # efficientnet-widese-*: no torchvision counterpart, left out
                    n = int(num(cells[gi]))
                    batch = batch_of(model, platform, prec, cells[bi] if bi is not None else "", body)
                    per_node = 16 if "DGX-2" in system else 8
                    nodes = max(1, n // per_node)
                    out.append(dict(
                        model=model, system=system, gpu=gpu, n=n, nodes=nodes, per_node=min(n, per_node),
                        ic=ic, stated=stated, cores=cores, prec=prec, batch=batch, ips=num(cells[ci]),
                        words=_scaling_word(cols, prec), fw=fw, sync=sync, data=data, pipeline=pipeline,
                        source=where(DLE, path, f"### {title}: row GPUs={cells[gi]}"
                                     + (f", Model={model}" if model else "") + f", column '{col}'"),
                        note=extra_note))
    return out


def nvidia_dle(mirror: Path) -> list[dict]:
    sid = DLE
    cfg = yaml.safe_load(show(mirror, sid, f"{DLE_PT}/configs.yml"))

    def pt_batch(model, platform, prec, cell, body):
        return cfg["models"][model][platform][{"mixed": "AMP", "tf32": "TF32", "fp32": "FP32"}[prec]]["batch_size"]

    def tf_batch(model, platform, prec, cell, body):
        m = re.fullmatch(r"(\d+)(?: \((?:FP32|TF)\) / (\d+) \(AMP\))?", cell.strip())
        return int(m.group(2) if (m.group(2) and prec == "mixed") else m.group(1))

    def mx_batch(model, platform, prec, cell, body):
        dtype = "float16" if prec == "mixed" else "float32"
        return int(re.search(rf"benchmark\.py -n [\d,]+ -b (\d+) --dtype {dtype}", body).group(1))

    def paddle_batch(model, platform, prec, cell, body):
        return 256

    rows = []
    for model in ("resnet50v1.5", "resnext101-32x4d", "se-resnext101-32x4d", "efficientnet"):
        path = f"{DLE_PT}/{model}/README.md"
        for r in _dle_table_rows(
                mirror, path, "PyTorch, NGC pytorch:21.03 (DDP launched by multiproc.py; native AMP for mixed)",
                "DDP allreduce (NCCL)", "real (ImageNet)", "cpu",
                lambda mdl, *a, _m=model: pt_batch(PT_CFG_KEY.get(_m, _m) if mdl is None else mdl, *a),
                "per-GPU batch from configs.yml (benchmark_training mode); configs.yml sets "
                "data_backend: pytorch (torch DataLoader, CPU JPEG decoding)"):
            r["model"] = r["model"] or model
            rows.append(r)
    for model in ("resnet50v1.5", "resnext101-32x4d", "se-resnext101-32x4d"):
        path = f"TensorFlow/Classification/ConvNets/{model}/README.md"
        for r in _dle_table_rows(
                mirror, path, "TensorFlow 1, NGC tensorflow:20.06-tf1-py3, XLA on (Horovod launched by mpiexec)",
                "Horovod allreduce (NCCL)", "real (ImageNet TFRecords)", "cpu", tf_batch,
                "training_perf.sh: --data_dir TFRecords without --dali (tf.data input pipeline), 200 warm-up + 500 "
                "timed iterations; per-GPU batch from the table's 'Batch Size / GPU'; the page says throughput is "
                "averaged over an epoch"):
            r["model"] = model
            rows.append(r)
    path = "MxNet/Classification/RN50v1.5/README.md"
    for r in _dle_table_rows(
            mirror, path,
            "MXNet, NGC mxnet:22.10-py3 (DGX A100) or 20.12-py3 (DGX-1, DGX-2) (runner: Horovod kv-store)",
            "Horovod allreduce (NCCL)", "real (ImageNet RecordIO)", "dali", mx_batch,
            "benchmark.py -i 500 -e 3 -w 1 --num-examples 32000 --mode train; per-GPU batch = the command's -b "
            "(runner: 'batch size per GPU'); runner's default data backend dali-gpu; "
            "'Total IPS (data + compute time)'"):
        r["model"] = "resnet50v1.5"
        rows.append(r)
    path = "PaddlePaddle/Classification/RN50v1.5/README.md"
    for r in _dle_table_rows(
            mirror, path, "PaddlePaddle NGC container (version not stated for the table), paddle.distributed.launch",
            "collective allreduce (NCCL)", "real (ImageNet)", "dali", paddle_batch,
            "per-GPU batch 256: the README's default --batch-size and '(256 batch size per GPU)'; DALI is the only "
            "data loader; 300 warm-up + 100 timed steps (the README's example)"):
        r["model"] = "resnet50v1.5"
        rows.append(r)

    out = []
    for r in rows:
        net, match = DLE_NET[r["model"]]
        fw_tag = r["fw"].split()[0].lower()
        internode = "" if r["nodes"] == 1 else "unknown"
        stated = r["stated"]
        if r["nodes"] > 1:
            stated += ("; between nodes: not stated (the README gives GPU counts beyond one DGX A100; DGX A100 nodes "
                       "are normally joined by InfiniBand, which the source does not say)")
        group = _series([], ("dle", fw_tag, r["system"], net, r["prec"], f"bs{r['batch']}", r["pipeline"]))
        out.append(_row(
            group=group, source_id=sid, system=r["system"], gpu=r["gpu"], gpu_known="yes", gpus=r["n"],
            nodes=r["nodes"], gpus_per_node=r["per_node"], interconnect=r["ic"], internode=internode,
            interconnect_stated=stated, sync=r["sync"], network=net, torchvision_match=match,
            per_gpu_batch=r["batch"], precision=r["prec"], framework=r["fw"], data=r["data"],
            pipeline=r["pipeline"], cpu_cores=r["cores"], images_per_s=r["ips"], scaling_words=r["words"],
            source=r["source"],
            note="; ".join(x for x in (r["note"], CORES_NOTE[r["cores"]] + " (datasheet)",
                                       "V100 32GB boards" if "32GB" in r["system"] else "",
                                       "the DGX-2's V100 32GB modules are mapped to v100-sxm2, the nearest id"
                                       if "DGX-2" in r["system"] else "") if x)))
    return out


# --------------------------------------------------------------------------- Lambda
LAMBDA = "lambdal-deeplearning-benchmark"
LAMBDA_V0 = "67a9bb5128d51299376bc72e02ec7459f82efe38"     # 2022-07-06: the last summary of the 2020-22 runs
# the GPU of a Lambda name (without count, vendor prefix or 'NVLink'): (device id or "", generation)
LAMBDA_GPU = {
    "Quadro RTX 8000": ("quadro-rtx-8000", "turing"), "RTX 3090": ("rtx-3090", "ampere"),
    "RTX 4090": ("rtx-4090", "ada"), "RTX A6000": ("rtx-a6000", "ampere"), "RTX 6000 Ada": ("", "ada"),
    "A100 80GB PCIe": ("a100-80gb-pcie", "ampere"), "A100 80GB SXM4": ("a100-80gb-sxm", "ampere"),
    "A100 40GB PCIe": ("a100-40gb-pcie", "ampere"), "A100 40GB SXM4": ("a100-40gb-sxm", "ampere"),
    "H100 80GB PCIe Gen5": ("h100-pcie", "hopper"), "H100 80GB SXM5": ("h100-sxm", "hopper"),
    "V100 16GB": ("", "volta"), "V100 32GB": ("", "volta"), "RTX 2080Ti": ("rtx-2080-ti", "turing"),
    "RTX 3070": ("", "ampere"), "RTX 3080": ("", "ampere"), "RTX A40": ("a40", "ampere"),
    "RTX A4000": ("", "ampere"), "RTX A4500": ("", "ampere"), "RTX A5000": ("", "ampere"),
    "RTX A5500": ("", "ampere"), "Quadro RTX 6000": ("", "turing"), "GTX 1080Ti": ("gtx-1080-ti", "pascal"),
}
LAMBDA_LEFT: list[str] = []      # multi-GPU rows left out, for the build's report
LAMBDA_PREFIX = ("Lambda Cloud — ", "Linode Cloud — ", "LambdaCloud ", "DellTexas ", "Dell ", "SMC ", "1CC ",
                 "RAIDZ1 ")


def _lambda_parse(name: str):
    """(count, system name without the count, GPU name) of a Lambda row name."""
    name = name.replace("RTX Quadro 8000", "Quadro RTX 8000")    # the v0 throughput CSV's spelling
    m = re.search(r"(?:^|\s)(\d+)x\s?", name)
    n = int(m.group(1)) if m else 1
    system = re.sub(r"\s+", " ", (name[:m.start()] + " " + name[m.end():]) if m else name).strip()
    gpu = system
    for p in LAMBDA_PREFIX:
        gpu = gpu.removeprefix(p.strip() + " ").removeprefix(p)
    gpu = gpu.removesuffix(" NVLink")
    return n, system, gpu


def _lambda_ic(system: str, gpu: str, n: int):
    if "NVLink" in system:
        return "nvlink-bridge", "'NVLink' in the source's system name (NVLink bridges between GPU pairs)"
    if "SXM" in gpu:
        return "nvswitch", (f"implied by '{gpu.split()[-1]}' (an HGX 8-GPU baseboard joins its SXM GPUs through "
                            "NVSwitch); the server is not named")
    if gpu.startswith("V100"):
        return "unknown", "not stated (the name does not say SXM2 or PCIe)"
    return "pcie-unknown", ("implied by a PCIe card; whether the GPUs share PCIe switches or hang off the host's root "
                            "ports, and whether NVLink bridges were fitted, is not stated")


def _lambda_commit(mirror: Path, commit: str, era: str) -> list[dict]:
    sid = LAMBDA
    out = []
    for word in ("fp32", "fp16"):
        tpath = f"pytorch/pytorch-train-throughput-{word}.csv"
        bpath = f"pytorch/pytorch-train-bs-{word}.csv"
        thr = list(csv.DictReader(io.StringIO(show(mirror, sid, tpath, commit))))
        bs = {}
        for r in csv.DictReader(io.StringIO(show(mirror, sid, bpath, commit))):
            bs[r["name_gpu"].replace("RTX Quadro 8000", "Quadro RTX 8000")] = int(float(r["resnet50"]))
        parsed = []
        for r in thr:
            name = r["name_gpu"]
            n, system, gpu = _lambda_parse(name)
            if int(float(r["num_gpu"])) != n or gpu not in LAMBDA_GPU:
                continue
            total = bs.get(name.replace("RTX Quadro 8000", "Quadro RTX 8000"))
            ips = float(r["resnet50"])
            if total is None or ips <= 0:
                continue
            parsed.append((n, system, gpu, name, total // n, ips, total))
        ones = {(system, b): (name, ips) for n, system, gpu, name, b, ips, _ in parsed if n == 1}
        multi = {system for n, system, *_ in parsed if n > 1}
        for n, system, gpu, name, b, ips, total in parsed:
            if n == 1:
                continue
            base = system.removesuffix(" NVLink")
            if (base, b) not in ones:
                LAMBDA_LEFT.append(f"{era} {word} '{name}': no 1-GPU row of '{base}' at per-GPU batch {b}")
                continue
            dev, gen = LAMBDA_GPU[gpu]
            prec = "mixed" if word == "fp16" else ("fp32" if gen in ("turing", "volta", "pascal") else "tf32")
            ic, stated = _lambda_ic(system, gpu, n)
            group = _series([], ("lambda", era, system, "resnet50", prec, f"bs{b}"))
            shared = base in multi and base + " NVLink" in multi
            for k, (nm, v, tot) in enumerate(((ones[(base, b)][0], ones[(base, b)][1], b), (name, ips, total))):
                out.append(_row(
                    group=group, source_id=sid, system=f"Lambda '{system}'", gpu=dev or gpu,
                    gpu_known="yes" if dev else "no", gpus=1 if k == 0 else n, nodes=1,
                    gpus_per_node=1 if k == 0 else n, interconnect=ic, internode="", interconnect_stated=stated,
                    sync="DDP allreduce (NCCL)", network="resnet50", torchvision_match=RN50_MATCH, per_gpu_batch=b,
                    precision=prec,
                    framework=(f"PyTorch, NVIDIA DeepLearningExamples resnet50v1.5 in an NGC pytorch container "
                               f"({'2020-22 runs, config_v0' if era == 'v0' else '22.09 or later'}; the version is "
                               "not recorded per row), multiproc.py (DDP)"),
                    data="synthetic", pipeline="synthetic", cpu_cores="", images_per_s=v, scaling_words="",
                    source=(where(sid, tpath, f"row '{nm}', column 'resnet50'", commit)
                            + f"; batch {tot} (all GPUs) from {bpath}, same row and column"),
                    note=("--data-backend syntetic --training-only --prof 100: full training steps without data "
                          "loading; per-GPU batch = the bs CSV's batch / GPUs; the source names the 1-GPU and the "
                          "N-GPU rows by the same GPU, not by machine, so they are taken as one system"
                          + (f"; the source's single 1-GPU row '{nm}' is shared by the NVLink and the plain series"
                             if k == 0 and shared else "")
                          + ("; 'fp16' CSV = the --amp run (AMP)" if word == "fp16" else "")
                          + ("; 'fp32' CSV on this GPU uses TF32 tensor cores by default" if prec == "tf32" else "")),
                ))
    # a 1-GPU row belongs to each of its series once; drop repeats within a group
    seen, uniq = set(), []
    for r in out:
        k = (r["group"], r["gpus"])
        if k not in seen:
            seen.add(k)
            uniq.append(r)
    return uniq


def lambdal(mirror: Path) -> list[dict]:
    return _lambda_commit(mirror, LAMBDA_V0, "v0") + _lambda_commit(mirror, SOURCES[LAMBDA][1], "v1")


# --------------------------------------------------------------------------- TensorFlow benchmarks page
TF_ALEXNET = ("alexnet", "close: tf_cnn_benchmarks alexnet (convs 64-192-384-384-256 at 224 px, about 17 % more "
                         "multiply-adds than torchvision's alexnet)")
TF_SYS = {
    "Details for NVIDIA® DGX-1™ (NVIDIA® Tesla® P100)": (
        "NVIDIA DGX-1 (8x P100 SXM2 16GB)", "p100-sxm2", "nvlink-mesh",
        "implied by DGX-1 (8 P100 SXM2 in an NVLink hybrid cube-mesh); parameter-server runs move gradients "
        "over PCIe to the host", 40, "DGX-1: 2x 20-core Xeon E5-2698 v4 (datasheet)"),
    "Details for Google Compute Engine (NVIDIA® Tesla® K80)": (
        "GCE n1-standard-32-k80x8", "k80", "pcie-switch",
        "implied by the Tesla K80 board (two GK210 GPUs behind an on-board PCIe switch); how the four boards "
        "reach the host is not stated", "", "32 vCPUs"),
    "Details for Amazon EC2 (NVIDIA® Tesla® K80)": (
        "AWS p2.8xlarge", "k80", "pcie-switch",
        "implied by the Tesla K80 board (two GK210 GPUs behind an on-board PCIe switch); how the four boards "
        "reach the host is not stated", "", "p2.8xlarge"),
    "Details for Amazon EC2 Distributed (NVIDIA® Tesla® K80)": (
        "AWS p2.8xlarge cluster", "k80", "pcie-switch",
        "implied by the Tesla K80 board (two GK210 behind an on-board PCIe switch); between instances: not stated",
        "", "p2.8xlarge instances, 8 GPUs each"),
}
TF_CONFIG_EXTRA = {
    ("Details for NVIDIA® DGX-1™ (NVIDIA® Tesla® P100)", "Alexnet"):
        "variable_update=replicated (with NCCL), local_parameter_device n/a",
    ("Details for Google Compute Engine (NVIDIA® Tesla® K80)", "Alexnet"):
        "variable_update=parameter_server, local_parameter_device=cpu",
    ("Details for Amazon EC2 (NVIDIA® Tesla® K80)", "Alexnet"):
        "variable_update=parameter_server, local_parameter_device=gpu",
}
TF_DIST = {"InceptionV3": "8 instances / 6 parameter servers", "ResNet-152": "8 instances / 4 parameter servers",
           "ResNet-50": "equal numbers of parameter servers and workers (batch 32: 8 instances / 4 parameter servers)"}


def tensorflow_doc(mirror: Path) -> list[dict]:
    sid = "tensorflow-benchmarks-doc"
    out = []
    for t in csv.DictReader(TF_TRANSCRIBED.open(encoding="utf-8")):
        sec, model = t["section"], t["column"].split(" (")[0]
        net, match = TF_ALEXNET if model == "Alexnet" else TF_NET[model]
        system, gpu, ic, stated, cores, host = TF_SYS[sec]
        n, batch = int(t["gpus"]), int(t["batch"])
        dist = "Distributed" in sec
        nodes = max(1, n // 8) if dist else 1
        if dist:
            cfg = ("variable_update=distributed_replicated, cross_replica_sync=True; parameter servers ran on the "
                   f"worker instances ({TF_DIST[model]})")
        elif (sec, model) in TF_CONFIG_EXTRA:
            cfg = TF_CONFIG_EXTRA[(sec, model)]
        else:
            cfg = TF_PLATFORM[sec][1][model]
        sync = ("parameter server (gRPC)" if dist else
                "replicated, NCCL allreduce" if "with NCCL" in cfg else
                "replicated, no NCCL" if "replicated" in cfg else
                f"parameter server on the {'CPU' if 'device=cpu' in cfg else 'GPU'}")
        group = _series([], ("tf", system, net, "fp32", f"bs{batch}"))
        out.append(_row(
            group=group, source_id=sid, system=system, gpu=gpu, gpu_known="yes", gpus=n, nodes=nodes,
            gpus_per_node=min(n, 8), interconnect=ic, internode="unknown" if nodes > 1 else "",
            interconnect_stated=stated, sync=sync, network=net, torchvision_match=match, per_gpu_batch=batch,
            precision="fp32",
            framework="TensorFlow b1e174e (May 2017), tf_cnn_benchmarks 9165a70, CUDA 8.0, cuDNN 5.1",
            data="synthetic", pipeline="synthetic", cpu_cores=cores, images_per_s=float(t["images_per_s"]),
            scaling_words="",
            source=(where(sid, TF_DOC, f"## {sec} / {t['table']}: row GPUs={n}, column '{t['column']}'")
                    + f"; transcribed in {TF_TRANSCRIBED.name}"),
            note=(f"{host}; {cfg}; synthetic data (a tf.Variable input); SGD; mean of 100 steps after 10 warm-up, "
                  "averaged over 5 runs; K80 GPU Boost left on" if gpu == "k80" else
                  f"{host}; {cfg}; synthetic data (a tf.Variable input); SGD; mean of 100 steps after 10 warm-up, "
                  "averaged over 5 runs, run via Docker"),
        ))
    return out


# --------------------------------------------------------------------------- MXNet's scalability table
MX_COMMIT = "2829115275698ef3f515703ffb31cba3cb26ea9e"     # "add distributed scalability results" (Dec 2016)
MX_README = "example/image-classification/README.md"
MX_NET = {
    "alexnet": ("alexnet", "close: MXNet symbol alexnet (ungrouped 96-256-384-384-256 convs, about 1.4x "
                           "torchvision's multiply-adds)"),
    "inception-v3": ("inception_v3", "close: MXNet symbol inception-v3 at 299x299 (no auxiliary head)"),
    "resnet-152": ("resnet152", "close: MXNet symbol resnet = pre-activation ResNet v2, stride 2 on the 3x3 conv "
                                "like torchvision v1.5"),
}


def mxnet_scaling(mirror: Path) -> list[dict]:
    sid = "apache-mxnet-scaling"
    text = show(mirror, "apache-mxnet-perf", MX_README, MX_COMMIT)
    body = text.split("### Scalability Results", 1)[1].split("\n## ", 1)[0]
    assert "We fixed the batch size per GPU" in body and "P2.16xlarge" in body
    tables = list(md_tables(body))
    head, batch_row = tables[0][1], next(r for r in tables[0][2] if r[0] == "batch per GPU")
    batch = {head[i].strip("` "): int(batch_row[i]) for i in range(1, len(head))}
    out = []
    _, header, rows = tables[1]
    for ci in range(1, len(header)):
        key = header[ci].strip("` ")
        net, match = MX_NET[key]
        for cells in rows:
            n = int(cells[0])
            nodes = max(1, n // 16)
            group = _series([], ("mxnet", "p2.16xlarge", net, "fp32", f"bs{batch[key]}"))
            out.append(_row(
                group=group, source_id=sid, system="AWS p2.16xlarge (16 GPUs each)", gpu="k80", gpu_known="yes",
                gpus=n, nodes=nodes, gpus_per_node=min(n, 16), interconnect="pcie-switch",
                internode="unknown" if nodes > 1 else "",
                interconnect_stated=("implied by the Tesla K80 board (two GK210 GPUs behind an on-board PCIe "
                                     "switch), 8 boards per p2.16xlarge; between instances: not stated"),
                sync=("kvstore device (in-node reduction)" if nodes == 1 else
                      "kvstore dist_sync_device (parameter servers, 2 per node)"),
                network=net, torchvision_match=match, per_gpu_batch=batch[key], precision="fp32",
                framework="MXNet (Dec 2016), CUDA 7.5, cuDNN 5.1 (AWS Deep Learning AMI)",
                data="synthetic", pipeline="synthetic", cpu_cores="", images_per_s=num(cells[ci]),
                scaling_words="",
                source=where("apache-mxnet-perf", MX_README,
                             f"### Scalability Results: row #GPUs={cells[0]}, column '{header[ci]}'", MX_COMMIT),
                note=("'We fixed the batch size per GPU and then increase the number of GPUs'; benchmark.py: "
                      "train_imagenet.py --benchmark 1 (synthetic data), 1..16 GPUs on one instance with kv-store "
                      "device, then 2..16 instances of 16 GPUs with dist_sync_device; images/s is the Speedometer "
                      "speed at batch 30 of one epoch"),
            ))
    return out


# --------------------------------------------------------------------------- assembly
def complete_series(rows: list[dict]) -> tuple[list[dict], list[str]]:
    """Keep the series with exactly one 1-GPU row, drop superlinear ones; say what was dropped."""
    by = defaultdict(list)
    for r in rows:
        by[r["group"]].append(r)
    keep, dropped = [], []
    for g, rs in by.items():
        ones = [r for r in rs if int(r["gpus"]) == 1]
        if len(ones) != 1 or len(rs) < 2:
            dropped.append(f"{g}: {len(ones)} 1-GPU rows, {len(rs)} rows")
            continue
        base = float(ones[0]["images_per_s"])
        eff = max(float(r["images_per_s"]) / (int(r["gpus"]) * base) for r in rs)
        if eff > SUPERLINEAR:
            dropped.append(f"{g}: superlinear ({eff:.2f} x linear)")
            continue
        keep.extend(sorted(rs, key=lambda r: int(r["gpus"])))
    return keep, dropped


def build(mirror: Path) -> tuple[list[dict], list[str]]:
    rows = nvidia_dle(mirror) + lambdal(mirror) + tensorflow_doc(mirror) + mxnet_scaling(mirror)
    for r in rows:
        r["images_per_s"] = f"{float(r['images_per_s']):g}"
    return complete_series(rows)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--mirror", default=os.environ.get("MIRROR", "/work/.mirror"))
    ap.add_argument("--out", default=str(OUT))
    args = ap.parse_args()
    rows, dropped = build(Path(args.mirror))
    with open(args.out, "w", newline="", encoding="utf-8") as f:
        w = csv.DictWriter(f, fieldnames=COLUMNS, lineterminator="\n")
        w.writeheader()
        w.writerows(rows)
    print(f"{len(rows)} rows -> {args.out}")
    for d in dropped + LAMBDA_LEFT:
        print("left out:", d)


if __name__ == "__main__":
    main()
