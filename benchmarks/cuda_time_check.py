"""Why ``python -m core time`` on CUDA can read slower than a long-running script: one fresh process, ResNet-50 at
batch 32 in bf16 (a host-bound forward on a fast GPU), the calculator's module (IR → torch) and torchvision's,
each run timed one by one from the first, so a warm-up trend shows. Prints one JSON line per module.

    python benchmarks/cuda_time_check.py [--device cuda] [--runs 80] [--batch 32] [--dtype bf16]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))


def series(torch, m, x, dev, runs: int) -> list[float]:
    out = []
    with torch.no_grad():
        for _ in range(runs):
            if dev.type == "cuda":
                torch.cuda.synchronize(dev)
            t = time.perf_counter()
            m(x)
            if dev.type == "cuda":
                torch.cuda.synchronize(dev)
            out.append((time.perf_counter() - t) * 1e3)
    return out


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--runs", type=int, default=80)
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--dtype", default="bf16")
    ap.add_argument("--order", default="ir,tv,ir,tv")
    a = ap.parse_args()
    t0 = time.perf_counter()
    import torch
    import torchvision

    from core import zoo
    from core.bridge.to_torch import to_module

    dev = torch.device(a.device)
    dt = {"bf16": torch.bfloat16, "fp32": torch.float32, "fp16": torch.float16}[a.dtype]
    models = {"ir": to_module(zoo.get("resnet50")).to(dev, dt).eval(),
              "tv": torchvision.models.resnet50(weights=None).to(dev, dt).eval()}
    x = torch.randn(a.batch, 3, 224, 224, device=dev, dtype=dt)
    for k, name in enumerate(a.order.split(",")):
        s = series(torch, models[name], x, dev, a.runs)
        q = len(s) // 4
        print(json.dumps({"round": k, "module": name, "t_s": round(time.perf_counter() - t0, 1),
                          "first5_ms": [round(v, 2) for v in s[:5]],
                          "median_quarters_ms": [round(statistics.median(s[i * q:(i + 1) * q]), 3) for i in range(4)],
                          "min_ms": round(min(s), 3)}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
