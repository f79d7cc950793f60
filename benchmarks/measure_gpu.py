"""Measure torchvision CNNs on a CUDA GPU as a student times them, for the GPU dataset (issue 13, item 4).

Each case is one network × precision × batch × pass, run in eager PyTorch as a user runs it:
  * ``inference``: ``model.eval()`` under ``torch.no_grad()``, the input already on the GPU;
  * ``training_step``: ``model.train()``, ``optimizer.zero_grad()`` (PyTorch ≥ 2: gradients set to None),
    forward, cross-entropy on random labels, ``backward()``, ``SGD(lr=0.01, momentum=0.9).step()`` (torch's default
    on CUDA: the multi-tensor "foreach" kernels).
Precisions: ``fp32`` (TF32 off for cuDNN and cuBLAS), ``tf32`` (on for both), ``bf16`` (model and input in
bfloat16: weights, activations, gradients and optimizer state), ``mixed`` (fp32 weights, ``torch.autocast`` fp16
in the forward and loss, a ``GradScaler``). ``cudnn.benchmark`` stays at PyTorch's default (False): cuDNN's
heuristics choose each algorithm, as in a student's script; ``--cudnn-benchmark`` turns it on, to see what the
autotuner's choices change.

Timing: ``WARMUP`` untimed runs, then timed runs until ``MIN_TIMED`` of them and ``MIN_SECONDS`` in all (at most
``MAX_TIMED``); each run is bracketed by ``torch.cuda.synchronize()`` and timed on the host clock
(``time.perf_counter``), the way most published scripts time a step, and by a pair of CUDA events. The latency is
the median run. Random weights (``weights=None``), random inputs at 224×224.

Every case is written as one JSON line to ``OUT/gpu_measured.jsonl`` as soon as it is measured, so a run cut off by
its deadline keeps what it measured; ``OUT/gpu_env.json`` holds the machine: GPU, driver, CUDA, cuDNN, torch, CPU,
and the SM clock read with ``nvidia-smi`` after each network. ``benchmarks/data/build_gpu_timings.py`` turns the
lines into dataset rows.

    python benchmarks/measure_gpu.py --out DIR [--deadline 300] [--nets a,b] [--batches 1,8] [--precisions fp32]
    python benchmarks/measure_gpu.py --out DIR --device cpu --quick     # a dry run of the script on a CPU
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from core.bridge.calibrate_suites import _cpu_name  # the CPU name as calibrate records it (torch stays unloaded)
from core.bridge.torchvision_zoo import ARCH_KWARGS  # GoogLeNet without its aux heads, as the calculator builds it

NETWORKS = ("resnet50", "resnet18", "vgg16", "mobilenet_v2", "densenet121", "efficientnet_b0", "resnext50_32x4d",
            "alexnet", "squeezenet1_1", "shufflenet_v2_x1_0", "mobilenet_v3_large", "convnext_tiny", "resnet152",
            "regnet_y_1_6gf")
BATCHES = (1, 32, 256, 8, 128)          # the order they run in: a run cut off early still spans the range
PRECISIONS = ("fp32", "tf32", "bf16", "mixed")
PASSES = ("inference", "training_step")
WARMUP = 3
MIN_TIMED, MAX_TIMED, MIN_SECONDS = 5, 25, 0.2
INPUT = (3, 224, 224)


def smi(fields: str) -> dict:
    """One ``nvidia-smi --query-gpu`` reading as {field: value}; {} where nvidia-smi is absent."""
    try:
        out = subprocess.run(["nvidia-smi", f"--query-gpu={fields}", "--format=csv,noheader,nounits"],
                             capture_output=True, text=True, timeout=20).stdout.strip().splitlines()
    except (OSError, subprocess.SubprocessError):
        return {}
    return dict(zip(fields.split(","), (v.strip() for v in out[0].split(",")))) if out else {}


def environment(torch, dev) -> dict:
    env = {"date_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "python": platform.python_version(),
           "torch": torch.__version__, "cuda": torch.version.cuda,
           "cudnn": torch.backends.cudnn.version() if torch.backends.cudnn.is_available() else None,
           "cudnn_benchmark": torch.backends.cudnn.benchmark, "cpu": _cpu_name()[0], "cpus": os.cpu_count()}
    try:
        import torchvision
        env["torchvision"] = torchvision.__version__
    except Exception as e:           # noqa: BLE001 - recorded, the run needs it anyway
        env["torchvision"] = f"failed: {e}"
    if dev.type == "cuda":
        p = torch.cuda.get_device_properties(dev)
        env.update(gpu=p.name, sm_count=p.multi_processor_count, total_memory=p.total_memory,
                   l2_bytes=getattr(p, "L2_cache_size", None), capability=f"{p.major}.{p.minor}")
        env["smi"] = smi("name,driver_version,clocks.max.sm,clocks.max.mem,clocks.sm,clocks.mem,power.limit,"
                         "power.draw,temperature.gpu,pcie.link.gen.current,pcie.link.width.current")
    return env


def set_tf32(torch, on: bool) -> None:
    torch.backends.cuda.matmul.allow_tf32 = on
    torch.backends.cudnn.allow_tf32 = on


class Case:
    """One network at one precision, ready to run a pass at any batch."""

    def __init__(self, torch, tv, name: str, precision: str, dev):
        self.torch, self.precision, self.dev = torch, precision, dev
        with dev:                        # initialised where it runs (seconds for VGG-16 on a CPU)
            self.model = getattr(tv.models, name)(weights=None, **ARCH_KWARGS.get(name, {}))
        self.dtype = torch.bfloat16 if precision == "bf16" else torch.float32
        if precision == "bf16":
            self.model = self.model.to(torch.bfloat16)
        self.opt = torch.optim.SGD(self.model.parameters(), lr=0.01, momentum=0.9)
        self.scaler = torch.amp.GradScaler("cuda") if precision == "mixed" else None
        self.loss = torch.nn.CrossEntropyLoss()

    def autocast(self):
        if self.precision == "mixed":
            return self.torch.autocast(self.dev.type, dtype=self.torch.float16)
        return contextlib.nullcontext()

    def runner(self, pass_name: str, batch: int):
        torch = self.torch
        x = torch.randn(batch, *INPUT, device=self.dev, dtype=self.dtype)
        y = torch.randint(0, 1000, (batch,), device=self.dev)
        if pass_name == "inference":
            self.model.eval()

            def run():
                with torch.no_grad(), self.autocast():
                    self.model(x)
            return run
        self.model.train()

        def step():
            self.opt.zero_grad()
            with self.autocast():
                loss = self.loss(self.model(x), y)
            if self.scaler is not None:
                self.scaler.scale(loss).backward()
                self.scaler.step(self.opt)
                self.scaler.update()
            else:
                loss.backward()
                self.opt.step()
        return step


def time_runs(torch, dev, fn) -> dict:
    sync = (lambda: torch.cuda.synchronize(dev)) if dev.type == "cuda" else (lambda: None)
    for _ in range(WARMUP):
        fn()
    sync()
    wall, gpu = [], []
    spent = 0.0
    while len(wall) < MAX_TIMED and (len(wall) < MIN_TIMED or spent < MIN_SECONDS):
        if dev.type == "cuda":
            a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        sync()
        t0 = time.perf_counter()
        if dev.type == "cuda":
            a.record()
        fn()
        if dev.type == "cuda":
            b.record()
        sync()
        t = time.perf_counter() - t0
        wall.append(t)
        if dev.type == "cuda":
            gpu.append(a.elapsed_time(b) / 1e3)
        spent += t
    return {"measured_ms": statistics.median(wall) * 1e3, "runs": len(wall),
            "min_ms": min(wall) * 1e3, "max_ms": max(wall) * 1e3,
            "events_ms": statistics.median(gpu) * 1e3 if gpu else None}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--deadline", type=float, default=300.0, help="seconds; no case starts after it")
    ap.add_argument("--nets", default=",".join(NETWORKS))
    ap.add_argument("--batches", default=",".join(map(str, BATCHES)))
    ap.add_argument("--precisions", default=",".join(PRECISIONS))
    ap.add_argument("--quick", action="store_true", help="two small networks at batch 1 and 2 (a dry run)")
    ap.add_argument("--cudnn-benchmark", action="store_true",
                    help="let cuDNN time its algorithms for each new shape (torch.backends.cudnn.benchmark = True)")
    a = ap.parse_args(argv)
    start = time.monotonic()
    import torch
    import torchvision as tv

    dev = torch.device(a.device)
    torch.backends.cudnn.benchmark = a.cudnn_benchmark     # recorded in gpu_env.json; the warm-ups absorb the search
    nets = a.nets.split(",")
    batches = [int(b) for b in a.batches.split(",")]
    precisions = a.precisions.split(",")
    if a.quick:
        nets, batches = ["squeezenet1_1", "resnet18"], [1, 2]
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    env = environment(torch, dev)
    env["clocks_after"] = []
    (out / "gpu_env.json").write_text(json.dumps(env, indent=1))
    print(json.dumps(env), flush=True)
    lines = (out / "gpu_measured.jsonl").open("a")
    done = 0
    for prec in precisions:
        if dev.type == "cuda":
            set_tf32(torch, prec == "tf32")
        for net in nets:
            if time.monotonic() - start > a.deadline:
                break
            try:
                case = Case(torch, tv, net, prec, dev)
            except Exception as e:   # noqa: BLE001 - one network's failure must not end the run
                print(f"{net} {prec}: could not build: {e}", flush=True)
                continue
            for batch in batches:
                for pass_name in PASSES:
                    if time.monotonic() - start > a.deadline:
                        break
                    row = {"network": net, "precision": prec, "batch": batch, "pass": pass_name}
                    try:
                        row.update(time_runs(torch, dev, case.runner(pass_name, batch)))
                    except Exception as e:   # noqa: BLE001 - out of memory, an op not in bf16: kept as the reason
                        row["error"] = f"{type(e).__name__}: {str(e)[:200]}"
                        if dev.type == "cuda":
                            torch.cuda.empty_cache()
                    lines.write(json.dumps(row) + "\n")
                    lines.flush()
                    done += 1
                    ms = f"{row['measured_ms']:9.3f} ms" if "measured_ms" in row else row["error"][:60]
                    print(f"{time.monotonic() - start:6.1f}s {prec:5} {net:20} b{batch:<4} {pass_name:13} {ms}",
                          flush=True)
            del case
            if dev.type == "cuda":
                torch.cuda.empty_cache()
                env["clocks_after"].append({"network": net, "precision": prec,
                                            **smi("clocks.sm,clocks.mem,power.draw,temperature.gpu")})
                (out / "gpu_env.json").write_text(json.dumps(env, indent=1))
    print(f"{done} cases in {time.monotonic() - start:.0f} s", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
