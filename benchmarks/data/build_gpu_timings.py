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
import json
import os
import sys
from pathlib import Path

# its parts beside it: gpu_timings_common.py (pins, helpers), gpu_timings_repos.py and gpu_timings_frameworks.py
# (one reader per public source)
sys.path.insert(0, str(Path(__file__).resolve().parent))

from gpu_timings_common import COLUMNS, HERE, row
from gpu_timings_frameworks import caffe_k40, mxnet_perf, tensorflow_k80
from gpu_timings_repos import jcjohnson, jcjohnson_k40, lambdal, nvidia_dle, ryujaehun, timm_bench, u39kun

OUT = HERE / "gpu_timings.csv"
# rows no fit reads, to judge the shipped parameters on data they never saw: a source no fit saw (timm's), and
# runs kept out (source id, GPU): ryujaehun's RTX 3090 run (batch 12) made the timm rows of the same GPU worse when
# fitted (docs/benchmarks.md)
HOLDOUT = HERE / "gpu_timings_holdout.csv"
HOLDOUT_RUNS = {("ryujaehun-pytorch-gpu-benchmark", "rtx-3090")}


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
