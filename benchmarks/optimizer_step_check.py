"""Time ``optimizer.step()`` alone on a CUDA GPU: SGD with momentum, torch's multi-tensor "foreach" kernels (its
default on CUDA) against the per-parameter loop (``foreach=False``), for the GPU model's optimizer term (issue 13).

For each network and precision: the model on the GPU (bf16: converted), one forward and backward to fill the
gradients, one step to create the momentum buffers, then ``RUNS`` timed steps of each implementation, each between
two ``torch.cuda.synchronize()`` calls on the host clock; the median is written. Also the parameter tensors and
elements, the figures the model's optimizer term works from. One JSON line per case to ``OUT/optimizer_steps.jsonl``.

    python benchmarks/optimizer_step_check.py --out DIR [--nets a,b] [--device cuda]
    python benchmarks/optimizer_step_check.py --compare FILE --gpu h200-sxm    # the GPU model against a FILE
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

NETWORKS = ("resnet50", "vgg16", "mobilenet_v2", "densenet121", "efficientnet_b0", "resnet18", "convnext_tiny",
            "resnet152")
PRECISIONS = ("fp32", "bf16")
WARMUP, RUNS = 3, 21


def step_ms(torch, dev, opt) -> float:
    sync = (lambda: torch.cuda.synchronize(dev)) if dev.type == "cuda" else (lambda: None)
    for _ in range(WARMUP):
        opt.step()
    times = []
    for _ in range(RUNS):
        sync()
        t0 = time.perf_counter()
        opt.step()
        sync()
        times.append(time.perf_counter() - t0)
    return statistics.median(times) * 1e3


def compare(path: Path, gpu: str) -> str:
    """A markdown table: each measured step beside the GPU model's optimizer term on ``gpu`` (variant "predicted":
    one kernel call per layer with trainable parameters) and beside the step as the framework runs it (the fit's
    screening 19: foreach, and the per-parameter loop); the parameter tensors, torch's beside the model's."""
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    from core.api import estimate
    from core.devices import load_devices
    from core.work import param_tensors
    from gpu_fit_features import update_work_as_run

    dev = load_devices().device(gpu)
    lines = ["| network | precision | tensors (torch / model) | measured foreach, loop | model | as run: foreach, "
             "loop |", "| --- | --- | --- | --- | --- | --- |"]
    ratios = {"model / foreach": [], "as run, foreach": [], "as run, loop": []}
    for line in path.read_text().splitlines():
        r = json.loads(line)
        e = estimate(r["network"], dev, batch_size=1, dtype=r["precision"], variant="predicted")
        if e.report.compiled.trainable != r["elements"]:
            raise SystemExit(f"{r['network']}: {e.report.compiled.trainable} parameters, torch has {r['elements']}")
        model = e.update.total_s * 1e3
        fe, lo = (e.time(update_work_as_run(e, f)).total_s * 1e3 for f in (True, False))
        ratios["model / foreach"].append(model / r["foreach_ms"])
        ratios["as run, foreach"].append(fe / r["foreach_ms"])
        ratios["as run, loop"].append(lo / r["loop_ms"])
        tensors = sum(param_tensors(n) for n in e.report.compiled.nodes)
        lines.append(f"| {r['network']} | {r['precision']} | {r['tensors']} / {tensors} | {r['foreach_ms']:.2f}, "
                     f"{r['loop_ms']:.2f} ms | {model:.2f} ms | {fe:.2f}, {lo:.2f} ms |")
    lines.append("")
    lines += [f"{k}: predicted / measured, median {statistics.median(v):.2f} (range {min(v):.2f}–{max(v):.2f})"
              for k, v in ratios.items()]
    return "\n".join(lines)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--compare", type=Path, help="an optimizer_steps.jsonl to set beside the GPU model")
    ap.add_argument("--gpu", default="h200-sxm", help="the device id --compare predicts on")
    ap.add_argument("--out")
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--nets", default=",".join(NETWORKS))
    ap.add_argument("--precisions", default=",".join(PRECISIONS))
    a = ap.parse_args(argv)
    if a.compare:
        print(compare(a.compare, a.gpu))
        return 0
    if not a.out:
        ap.error("--out is required (or --compare FILE)")
    import torch
    import torchvision as tv

    dev = torch.device(a.device)
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    with (out / "optimizer_steps.jsonl").open("a") as lines:
        for prec in a.precisions.split(","):
            dtype = torch.bfloat16 if prec == "bf16" else torch.float32
            for net in a.nets.split(","):
                with dev:
                    model = getattr(tv.models, net)(weights=None).to(dtype)
                model(torch.randn(2, 3, 224, 224, device=dev, dtype=dtype)).float().sum().backward()
                params = [p for p in model.parameters() if p.grad is not None]
                row = {"network": net, "precision": prec, "torch": torch.__version__, "tensors": len(params),
                       "elements": sum(p.numel() for p in params)}
                for foreach in (True, False):
                    opt = torch.optim.SGD(params, lr=1e-6, momentum=0.9, foreach=foreach)
                    opt.step()                   # the momentum buffers exist from here on
                    row["foreach_ms" if foreach else "loop_ms"] = step_ms(torch, dev, opt)
                lines.write(json.dumps(row) + "\n")
                lines.flush()
                print(f"{prec:5} {net:18} {row['tensors']:4} tensors {row['elements'] / 1e6:7.2f} M  foreach "
                      f"{row['foreach_ms']:7.3f} ms  loop {row['loop_ms']:7.3f} ms", flush=True)
                del model, params, opt
                if dev.type == "cuda":
                    torch.cuda.empty_cache()
    return 0


if __name__ == "__main__":
    sys.exit(main())
