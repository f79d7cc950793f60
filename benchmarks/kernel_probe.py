"""What the GPU model's open questions need measured on a CUDA GPU (issue 13, leads): run once per device lease.

1. ``dw``: depthwise convolutions alone — the 3×3 and 5×5 layers of MobileNet V2 and EfficientNet-B0 and the 7×7
   layers of ConvNeXt-T, at batch 128, NCHW and channels-last, fp32 / bf16 / fp16, each of forward, input gradient
   (dgrad) and weight gradient (wgrad) on its own (``aten.convolution_backward`` with one output asked for). Each
   case: the median of CUDA-event-timed calls, and the kernels one call launches with their summed device time
   (from ``torch.profiler``), so the kernel names say which library ran it (PyTorch's own depthwise kernels or
   cuDNN's).
2. ``nets``: whole training steps (as ``measure_gpu.py`` runs them) profiled kernel by kernel: the step's wall
   time beside the summed kernel time says how much of the step the GPU is busy, and the kernel table says where
   the time goes (ResNet-18 bf16 at batch 256: 47.5 ms measured, 23.8 ms predicted).
3. ``bn``: a train-mode batch norm alone, forward and forward + backward, in fp32 (cuDNN's kernels), bf16 and
   fp16 (weights in half: PyTorch's own) and mixed (fp16 input, fp32 weights: cuDNN's), at real layers' shapes and
   at one tensor size spread over 32 … 2048 channels (PyTorch's NCHW kernels give each channel one thread block).

One JSON line per case in ``OUT/probe_dw.jsonl``, ``OUT/probe_nets.jsonl`` and ``OUT/probe_bn.jsonl``, written
as measured.

    python benchmarks/kernel_probe.py --out DIR [--deadline 240] [--parts dw,nets,bn]
    python benchmarks/kernel_probe.py --out DIR --device cpu --quick      # a dry run on a CPU
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from measure_gpu import Case, environment, set_tf32, time_runs  # the sweep's own step and timer

# (label, channels, input H = W, kernel, stride) of the networks' depthwise layers (torchvision, 224×224 input)
DEPTHWISE = (
    ("mnv2.1", 32, 112, 3, 1), ("mnv2.2", 96, 112, 3, 2), ("mnv2.3", 144, 56, 3, 1), ("mnv2.4", 144, 56, 3, 2),
    ("mnv2.5", 192, 28, 3, 1), ("mnv2.7", 384, 14, 3, 1), ("mnv2.8", 576, 14, 3, 1), ("mnv2.9", 960, 7, 3, 1),
    ("effb0.5", 672, 14, 5, 1), ("effb0.6", 1152, 7, 5, 1),
    ("cnx.1", 96, 56, 7, 1), ("cnx.2", 192, 28, 7, 1), ("cnx.3", 384, 14, 7, 1), ("cnx.4", 768, 7, 7, 1),
)
# (label, channels, H = W, batch) of train-mode batch norms: real layers (ResNet-18/50, MobileNet V2), then one
# tensor size (128·64·56·56 elements) spread over 32 … 2048 channels, where only the channel count changes
BATCHNORM = (
    ("r18.conv1", 64, 112, 256), ("r18.l1", 64, 56, 256), ("r18.l2", 128, 28, 256), ("r18.l3", 256, 14, 256),
    ("r18.l4", 512, 7, 256), ("r50.l1", 256, 56, 128), ("r50.l4", 2048, 7, 128), ("mnv2.e1", 96, 112, 128),
    ("mnv2.e4", 384, 14, 128), ("mnv2.last", 1280, 7, 128),
    ("same.32", 32, 79, 128), ("same.64", 64, 56, 128), ("same.128", 128, 40, 128), ("same.256", 256, 28, 128),
    ("same.512", 512, 20, 128), ("same.1024", 1024, 14, 128), ("same.2048", 2048, 10, 128),
)
# what a model in each precision hands batch norm: (input dtype, weight dtype)
BN_PRECISIONS = {"fp32": ("float32", "float32"), "bf16": ("bfloat16", "bfloat16"),
                 "fp16": ("float16", "float16"), "mixed": ("float16", "float32")}
NET_STEPS = (("resnet18", "bf16", 256), ("resnet18", "tf32", 256), ("convnext_tiny", "bf16", 128),
             ("convnext_tiny", "tf32", 128), ("mobilenet_v2", "bf16", 128))
DTYPES = ("fp32", "bf16", "fp16")


def kernels(torch, fn, calls: int) -> dict:
    """The CUDA kernels ``calls`` calls of fn launch: {name: [count, device µs]} per call, profiled."""
    from torch.profiler import ProfilerActivity, profile
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(calls):
            fn()
        torch.cuda.synchronize()
    timed = [(e, getattr(e, "self_device_time_total", None) or getattr(e, "self_cuda_time_total", 0))
             for e in prof.key_averages()]
    on_gpu = [(e, us) for e, us in timed if us and str(getattr(e, "device_type", "")).endswith("CUDA")]
    return {e.key: [e.count / calls, us / calls] for e, us in (on_gpu or [(e, us) for e, us in timed if us])}


REPS = 15                    # timed calls per case (the dry run: 2)


def event_ms(torch, dev, fn) -> float:
    """Median of ``REPS`` single calls after 3 untimed ones, each bracketed by CUDA events (host clock on a CPU)."""
    reps = REPS
    for _ in range(3 if reps > 2 else 1):
        fn()
    ts = []
    for _ in range(reps):
        if dev.type == "cuda":
            a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            a.record()
            fn()
            b.record()
            b.synchronize()
            ts.append(a.elapsed_time(b))
        else:
            t = time.perf_counter()
            fn()
            ts.append((time.perf_counter() - t) * 1e3)
    return statistics.median(ts)


def depthwise_cases(torch, dev, batch: int, dtypes, layouts, stop: float, sink) -> None:
    aten = torch.ops.aten
    for label, c, h, k, s in DEPTHWISE:
        for dt in dtypes:
            dtype = {"fp32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}[dt]
            set_tf32(torch, False)
            for layout in layouts:
                if time.monotonic() > stop:
                    return
                fmt = torch.channels_last if layout == "nhwc" else torch.contiguous_format
                x = torch.randn(batch, c, h, h, device=dev, dtype=dtype).to(memory_format=fmt)
                w = torch.randn(c, 1, k, k, device=dev, dtype=dtype).to(memory_format=fmt)
                geometry = ([s, s], [k // 2] * 2, [1, 1], False, [0, 0], c)
                y = aten.convolution(x, w, None, *geometry)
                args = (torch.randn_like(y), x, w, None, *geometry)
                fns = {"forward": lambda a=(x, w, None, *geometry): aten.convolution(*a),
                       "dgrad": lambda a=args: aten.convolution_backward(*a, [True, False, False]),
                       "wgrad": lambda a=args: aten.convolution_backward(*a, [False, True, False])}
                for pass_name, fn in fns.items():
                    row = {"case": label, "channels": c, "hw": h, "kernel": k, "stride": s, "batch": batch,
                           "dtype": dt, "layout": layout, "pass": pass_name, "out_hw": y.shape[-1]}
                    try:
                        row["ms"] = event_ms(torch, dev, fn)
                        if dev.type == "cuda":
                            row["kernels"] = kernels(torch, fn, 3)
                    except Exception as e:   # noqa: BLE001 - an unsupported case is a result, recorded
                        row["error"] = f"{type(e).__name__}: {e}"[:300]
                    sink(row)


def batchnorm_passes(F, x, state, g):
    def fwd():
        return F.batch_norm(x, *state, training=True)

    def fwd_bwd():
        fwd().backward(g)
    return ("forward", fwd), ("forward_backward", fwd_bwd)


def batchnorm_cases(torch, dev, precisions, stop: float, sink, batch_of=None) -> None:
    """A train-mode batch norm alone: its forward, and forward + backward (autograd, x and the weights);
    ``batch_of`` (the dry run's): a batch for every case instead of the layer's own."""
    for label, c, h, batch in BATCHNORM:
        batch = batch_of or batch
        for precision in precisions:
            if time.monotonic() > stop:
                return
            xdt, wdt = (getattr(torch, n) for n in BN_PRECISIONS[precision])
            x = torch.randn(batch, c, h, h, device=dev, dtype=xdt, requires_grad=True)
            w = torch.ones(c, device=dev, dtype=wdt, requires_grad=True)
            b = torch.zeros(c, device=dev, dtype=wdt, requires_grad=True)
            mean, var = torch.zeros(c, device=dev, dtype=wdt), torch.ones(c, device=dev, dtype=wdt)
            g = torch.randn(batch, c, h, h, device=dev, dtype=xdt)
            for pass_name, fn in batchnorm_passes(torch.nn.functional, x, (mean, var, w, b), g):
                row = {"case": label, "channels": c, "hw": h, "batch": batch, "precision": precision,
                       "pass": pass_name}
                try:
                    row["ms"] = event_ms(torch, dev, fn)
                    if dev.type == "cuda":
                        row["kernels"] = kernels(torch, fn, 3)
                except Exception as e:   # noqa: BLE001 - recorded
                    row["error"] = f"{type(e).__name__}: {e}"[:300]
                sink(row)


def net_cases(torch, tv, dev, cases, stop: float, sink) -> None:
    for name, precision, batch in cases:
        if time.monotonic() > stop:
            return
        set_tf32(torch, precision == "tf32")
        row = {"network": name, "precision": precision, "batch": batch, "pass": "training_step"}
        try:
            case = Case(torch, tv, name, precision, dev)
            step = case.runner("training_step", batch)
            row.update(time_runs(torch, dev, step))
            if dev.type == "cuda":
                ks = kernels(torch, step, 2)
                row["kernel_ms"] = sum(us for _, us in ks.values()) / 1e3
                row["kernels"] = dict(sorted(ks.items(), key=lambda kv: -kv[1][1]))
            del case, step
        except Exception as e:           # noqa: BLE001 - recorded
            row["error"] = f"{type(e).__name__}: {e}"[:300]
        sink(row)
        if dev.type == "cuda":
            torch.cuda.empty_cache()


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--deadline", type=float, default=240.0, help="seconds; no case starts after it")
    ap.add_argument("--parts", default="dw,nets,bn")
    ap.add_argument("--quick", action="store_true",
                    help="batch 2, fp32 and bf16, 2 timed calls, one small network (a dry run)")
    a = ap.parse_args(argv)
    global REPS
    REPS = 2 if a.quick else REPS
    import torch
    import torchvision as tv
    dev = torch.device(a.device)
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "probe_env.json").write_text(json.dumps(environment(torch, dev), indent=1))
    stop = time.monotonic() + a.deadline
    parts = a.parts.split(",")

    def sink_to(name):
        f = (out / name).open("a")

        def sink(row):
            f.write(json.dumps(row) + "\n")
            f.flush()
            summary = {k: v for k, v in row.items() if k != "kernels"}
            print(json.dumps(summary), flush=True)
        return sink

    if "dw" in parts:
        depthwise_cases(torch, dev, 2 if a.quick else 128, ("fp32", "bf16") if a.quick else DTYPES,
                        ("nchw", "nhwc"), stop, sink_to("probe_dw.jsonl"))
    if "bn" in parts:
        batchnorm_cases(torch, dev, ("fp32", "bf16") if a.quick else tuple(BN_PRECISIONS), stop,
                        sink_to("probe_bn.jsonl"), 2 if a.quick else None)
    if "nets" in parts:
        cases = (("squeezenet1_1", "fp32", 2),) if a.quick else NET_STEPS
        net_cases(torch, tv, dev, cases, stop, sink_to("probe_nets.jsonl"))
    print("probe done" if time.monotonic() <= stop else "probe stopped at its deadline", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
