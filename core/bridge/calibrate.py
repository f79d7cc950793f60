"""Calibration: measure this machine with torch and save it as the user device ``local``.

``calibrate(seconds=30)`` runs microbenchmarks within the time budget and returns a device spec (validated by
``DeviceDB.add`` like any user device); ``save_local(spec)`` adds it to the user's device file, after which
``estimate(model, "local")`` and ``python -m core estimate MODEL --device local`` use it.

What is measured (every figure is the best run: on a shared machine the fastest run is the least disturbed one):

* ``peak_flops`` per dtype: square ``torch.mm`` of a few sizes (FLOPs = 2·n³), the best rate over sizes; for fp32,
  raised to the rate of the conv or linear layer below if one ran faster (no layer can outrun the peak, so the GEMM
  runs were disturbed, or the library's convolution is better tuned than its mm) — the note says when;
* ``memory_bandwidth``: STREAM-like copy (``b.copy_(a)``, 2 × array bytes moved) and triad (``a = b + s·c`` as
  ``torch.add(b, c, alpha=s, out=a)``, 3 × array bytes) on fp32 arrays far larger than the caches; the larger rate;
* ``memory_capacity``: physical memory (``os.sysconf``), or the GPU's total memory;
* ``layer_overhead`` per class of work (``core.devices.OP_CLASSES``): the time of a tiny layer of the class (a 3×3
  conv on 4 channels of 4×4, the same depthwise, a 4→4 linear, a ReLU on 64 numbers), called as an ``nn.Module`` like
  a model's layers: its arithmetic takes nanoseconds, so what is measured is the fixed cost of a call — Python and
  dispatch, allocation, the library's setup (Hockney's n½ in time form). ``core.paleo`` adds it to every layer that
  runs; it is what makes small networks at batch 1 slower than their FLOPs say;
* ``efficiency`` per class of work, timing one representative fp32 layer each (also as modules):
  conv (3×3, 64→64 channels, 56×56), grouped_conv (depthwise 3×3, 128 channels, 56×56), linear (1024→1024, batch 64)
  and elementwise (ReLU, BatchNorm in eval mode and 2×2 max pooling, each on 8×64×56×56). The engine itself
  counts each layer's FLOPs and bytes and splits PALEO's forward time, at the measured fp32 peak and bandwidth, into
  compute ``c`` and memory ``m``; the efficiency is the factor that makes PALEO's sum (``c / efficiency + m +
  overhead``) reproduce the measured time ``t``: ``efficiency = c / (t − m − overhead)``, clamped to [0.0001, 1]
  (1 when ``t ≤ m + overhead``). For conv and linear ``m`` is small and this is close to achieved FLOP/s ÷ fp32 GEMM
  peak; for the memory-bound elementwise class it is the compute share left once the memory term at the measured
  bandwidth is paid, which is how ``core.paleo`` applies it. The elementwise class takes the median of its three
  layers' efficiencies, so one slow kernel (CPU max pooling in NCHW is one) does not set the figure for the ReLUs and
  BatchNorms that dominate real networks. Every layer's efficiency and raw achieved FLOP/s ÷ peak are in the note.

The budget is split among the stages (GEMM 45 %, bandwidth 20 %, layers 35 %), each stage taking its share of the
time still left, so setup costs are absorbed and the whole run stays within ``seconds`` plus one benchmark run.
"""

from __future__ import annotations

import datetime as _dt
import math
import os
import platform
import time
from pathlib import Path
from typing import Any

from ..errors import CalcError
from .timing import Clock, Progress, _cancelled, cpu_threads, one_job, torch_device

CALIBRATION_DTYPES = ("fp64", "fp32", "tf32", "fp16", "bf16")


def _torch_dtype(name: str, torch):
    return {"fp64": torch.float64, "fp32": torch.float32, "tf32": torch.float32, "fp16": torch.float16,
            "bf16": torch.bfloat16}[name]


class _Budget:
    """Weighted stages sharing a deadline: each stage gets its weight's share of the time still left."""

    def __init__(self, seconds: float, weights: dict, progress: Progress | None, cancel: Any):
        self.start = time.perf_counter()
        self.deadline = self.start + seconds
        self.left = dict(weights)
        self.total = sum(weights.values())
        self.progress, self.cancel = progress, cancel

    def share(self, stage: str) -> float:
        if _cancelled(self.cancel):
            raise CalcError("calibration cancelled")
        remaining = max(self.deadline - time.perf_counter(), 0.0)
        return remaining * self.left[stage] / sum(self.left.values())

    def finish(self, stage: str, message: str) -> None:
        self.left.pop(stage)
        if self.progress is not None:
            done = self.total - sum(self.left.values())
            self.progress(min(done / self.total, 0.999) if self.left else 1.0, message)


def _bench(fn, clock: Clock, budget: float, cancel: Any = None, max_runs: int = 200) -> float:
    """Fastest of repeated runs of ``fn`` within ``budget`` seconds (at least one run)."""
    end = time.perf_counter() + budget
    best = math.inf
    for _ in range(max_runs):
        with clock():
            fn()
        best = min(best, clock.last)
        if time.perf_counter() >= end:
            break
        if _cancelled(cancel):
            raise CalcError("calibration cancelled")
    return max(best, 1e-9)


def _gemm_peak(torch, dev, name: str, budget: float, clock: Clock, cancel: Any) -> tuple[float, int]:
    """(best FLOP/s, the size that reached it) of square torch.mm at growing sizes within ``budget``."""
    sizes = (1024, 2048, 4096, 8192) if dev.type == "cuda" else (128, 256, 512, 1024, 2048)
    end = time.perf_counter() + budget
    best, best_n, last_t = 0.0, 0, None
    dtype = _torch_dtype(name, torch)
    tf32 = None
    if dev.type == "cuda":
        tf32 = torch.backends.cuda.matmul.allow_tf32
        torch.backends.cuda.matmul.allow_tf32 = name == "tf32"
    try:
        for k, n in enumerate(sizes):
            left = end - time.perf_counter()
            if best_n and (left <= 0 or last_t * 8 > left):     # the next size would take ~8× the last run
                break
            a = torch.randn(n, n, device=dev).to(dtype)
            b = torch.randn(n, n, device=dev).to(dtype)
            c = torch.empty(n, n, device=dev, dtype=dtype)
            last_t = _bench(lambda: torch.mm(a, b, out=c), clock, left / (len(sizes) - k), cancel)
            rate = 2 * n ** 3 / last_t
            if rate > best:
                best, best_n = rate, n
    finally:
        if tf32 is not None:
            torch.backends.cuda.matmul.allow_tf32 = tf32
    return best, best_n


def _bandwidth(torch, dev, budget: float, clock: Clock, cancel: Any) -> tuple[float, float, int]:
    """(copy bytes/s, triad bytes/s, array bytes) on three fp32 arrays far larger than the caches."""
    from .timing import available_memory

    nbytes = (512 if dev.type == "cuda" else 128) * 2 ** 20
    avail = available_memory(str(dev))
    if avail:
        nbytes = max(min(nbytes, avail // 16), 2 ** 20)
    n = nbytes // 4
    a = torch.empty(n, device=dev).fill_(1.0)
    b = torch.empty(n, device=dev).fill_(2.0)
    c = torch.empty(n, device=dev).fill_(3.0)
    t_copy = _bench(lambda: b.copy_(a), clock, budget / 2, cancel)
    t_triad = _bench(lambda: torch.add(b, c, alpha=3.0, out=a), clock, budget / 2, cancel)
    return 2 * n * 4 / t_copy, 3 * n * 4 / t_triad, n * 4


def _class_cases(torch, dev) -> dict:
    """op class → [(IR network, batch, callable)]: the representative layers, written twice (IR and torch), as
    ``nn.Module`` calls like a model's layers. The first entry of each class is a tiny layer whose arithmetic and
    memory traffic take nanoseconds: its time is the class's fixed cost per layer call."""
    from torch import nn

    from ..ir import Network, Node

    gpu = dev.type != "cpu"

    def net(name, shape, op, **attrs):
        return Network.make(name, {"x": shape}, [Node.make(name, op, "x", **attrs)])

    def rand(*shape):
        return torch.randn(*shape, device=dev)

    def on(module):
        return module.to(dev).eval()

    nb = 16 if gpu else 1
    lb = 512 if gpu else 64
    eb = 64 if gpu else 8
    conv = on(nn.Conv2d(64, 64, 3, padding=1, bias=False))
    tiny_conv = on(nn.Conv2d(4, 4, 3, padding=1, bias=False))
    dw = on(nn.Conv2d(128, 128, 3, padding=1, groups=128, bias=False))
    tiny_dw = on(nn.Conv2d(4, 4, 3, padding=1, groups=4, bias=False))
    lin, tiny_lin = on(nn.Linear(1024, 1024, bias=False)), on(nn.Linear(4, 4, bias=False))
    relu, bn, pool = on(nn.ReLU()), on(nn.BatchNorm2d(64)), on(nn.MaxPool2d(2))
    x_conv, x_dw, x_lin, x_el = rand(nb, 64, 56, 56), rand(nb, 128, 56, 56), rand(lb, 1024), rand(eb, 64, 56, 56)
    x_tiny, x_tiny_lin = rand(1, 4, 4, 4), rand(1, 4)
    tiny = (4, 4, 4)
    return {
        "conv": [(net("tiny_conv", tiny, "conv2d", out_channels=4, kernel_size=3, padding=1, bias=False), 1,
                  lambda: tiny_conv(x_tiny)),
                 (net("conv", (64, 56, 56), "conv2d", out_channels=64, kernel_size=3, padding=1, bias=False), nb,
                  lambda: conv(x_conv))],
        "grouped_conv": [(net("tiny_depthwise", tiny, "conv2d", out_channels=4, kernel_size=3, padding=1,
                              groups=4, bias=False), 1, lambda: tiny_dw(x_tiny)),
                         (net("depthwise", (128, 56, 56), "conv2d", out_channels=128, kernel_size=3, padding=1,
                              groups=128, bias=False), nb, lambda: dw(x_dw))],
        "linear": [(net("tiny_linear", (4,), "linear", out_features=4, bias=False), 1, lambda: tiny_lin(x_tiny_lin)),
                   (net("linear", (1024,), "linear", out_features=1024, bias=False), lb, lambda: lin(x_lin))],
        "elementwise": [
            (net("tiny_relu", tiny, "relu"), 1, lambda: relu(x_tiny)),
            (net("relu", (64, 56, 56), "relu"), eb, lambda: relu(x_el)),
            (net("bn", (64, 56, 56), "batch_norm"), eb, lambda: bn(x_el)),
            (net("pool", (64, 56, 56), "max_pool2d", kernel_size=2), eb, lambda: pool(x_el)),
        ],
    }


def _time_layers(torch, dev, budget: float, clock: Clock, cancel: Any) -> dict:
    """op class → [(IR network, batch, best measured seconds)] for the representative layers."""
    cases = _class_cases(torch, dev)
    out = {}
    end = time.perf_counter() + budget
    with torch.no_grad():
        for k, (cls, layers) in enumerate(cases.items()):
            share = max(end - time.perf_counter(), 0.0) / (len(cases) - k)
            out[cls] = [(network, batch, _bench(fn, clock, share / len(layers), cancel))
                        for network, batch, fn in layers]
    return out


def _efficiencies(timed: dict, peak: float, bandwidth: float) -> dict:
    """op class → (efficiency, achieved FLOP/s ÷ peak, {layer: (efficiency, achieved ÷ peak)}, overhead s); see the
    module docstring. The first (tiny) layer of a class gives its overhead; the others, the efficiency, the median
    of theirs when there are several."""
    import statistics

    from ..devices import Device
    from ..graph import compile_network
    from ..paleo import Estimate
    from ..report import Report

    probe = Device(id="local", name="calibration", vendor="-", kind="CPU", year=2000, peak_flops={"fp32": peak},
                   memory_bandwidth=bandwidth, source="-")
    out = {}
    for cls, (tiny, *layers) in timed.items():
        overhead = tiny[2]
        per = {}
        for network, batch, t in layers:
            tot = Estimate(Report(compile_network(network), batch, "fp32"), probe).totals
            c, m = tot["forward_compute_s"], tot["forward_memory_s"]
            left = t - m - overhead
            eff = c / left if left > 0 else 1.0
            per[network.name] = (min(max(eff, 1e-4), 1.0), tot["forward_flops"] / t / peak)
        out[cls] = (statistics.median(v[0] for v in per.values()), statistics.median(v[1] for v in per.values()),
                    per, overhead)
    return out


def _layer_flops(network, batch: int) -> int:
    from ..graph import compile_network

    return compile_network(network).flops * batch


def _cpu_name() -> tuple[str, str]:
    """(model name, vendor) from /proc/cpuinfo where there is one, else platform's."""
    model = vendor = ""
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as f:
            for line in f:
                key, _, value = line.partition(":")
                key, value = key.strip().lower(), value.strip()
                if key == "model name" and not model:
                    model = value
                elif key == "vendor_id" and not vendor:
                    vendor = value
    except OSError:
        pass
    vendor = {"GenuineIntel": "Intel", "AuthenticAMD": "AMD"}.get(vendor, vendor)
    model = model or platform.processor() or platform.machine() or "CPU"
    return model, vendor or platform.machine() or "unknown"


def _si(v: float, unit: str) -> str:
    for factor, prefix in ((1e12, "T"), (1e9, "G"), (1e6, "M")):
        if abs(v) >= factor:
            return f"{v / factor:.3g} {prefix}{unit}"
    return f"{v:.3g} {unit}"


def calibrate(seconds: float = 30.0, progress: Progress | None = None, dtypes=("fp32", "fp64", "bf16"), *,
              device: str = "cpu", cancel: Any = None, threads: int | None = None) -> dict:
    """Measure this machine (or ``device="cuda"``) within about ``seconds`` and return a device spec with id
    ``local``. fp32 is always measured (efficiencies are relative to its peak); a dtype the device cannot run is
    left out and named in the note. ``progress(fraction, message)`` after each stage; ``cancel`` (an Event or a
    callable) raises ``CalcError``. Holds the same one-job-per-process lock as live timing."""
    if isinstance(seconds, bool) or not isinstance(seconds, (int, float)) or not 0 < seconds <= 3600:
        raise CalcError("must be a number of seconds in (0, 3600]", field="seconds", value=seconds)
    if isinstance(dtypes, str):
        dtypes = [d.strip() for d in dtypes.split(",") if d.strip()]
    bad = [d for d in dtypes if d not in CALIBRATION_DTYPES]
    if bad:
        raise CalcError(f"choose from {', '.join(CALIBRATION_DTYPES)}", field="dtypes", value=",".join(bad))
    dtypes = ["fp32"] + [d for d in dict.fromkeys(dtypes) if d != "fp32"]
    with one_job():
        import torch

        dev = torch_device(device)
        with cpu_threads(threads):
            return _calibrate(torch, dev, float(seconds), progress, dtypes, cancel)


def _calibrate(torch, dev, seconds, progress, dtypes, cancel) -> dict:
    clock = Clock(dev)
    weights = {f"gemm_{d}": 0.45 * (2 if d == "fp32" else 1) / (len(dtypes) + 1) for d in dtypes}
    weights.update({"bandwidth": 0.20, "layers": 0.35})
    budget = _Budget(seconds, weights, progress, cancel)
    peaks, notes, compute_notes, skipped = {}, [], {}, []
    for d in dtypes:
        share = budget.share(f"gemm_{d}")
        if d == "tf32" and dev.type != "cuda":
            skipped.append(f"{d} (CUDA only)")
        else:
            try:
                rate, n = _gemm_peak(torch, dev, d, share, clock, cancel)
                peaks[d] = rate
                compute_notes[d] = f"torch.mm best at n={n}: {_si(rate, 'FLOP/s')}"
            except (RuntimeError, TypeError) as e:   # a dtype this build or device cannot multiply
                if d == "fp32":
                    raise CalcError(f"fp32 matrix multiply failed: {e}", field="dtypes", value=d) from None
                skipped.append(f"{d} ({str(e).splitlines()[0][:60]})")
        budget.finish(f"gemm_{d}", f"GEMM {d}: {_si(peaks[d], 'FLOP/s')}" if d in peaks else f"GEMM {d}: skipped")

    copy_bw, triad_bw, nbytes = _bandwidth(torch, dev, budget.share("bandwidth"), clock, cancel)
    bandwidth = max(copy_bw, triad_bw)
    budget.finish("bandwidth", f"bandwidth: {_si(bandwidth, 'B/s')}")

    timed = _time_layers(torch, dev, budget.share("layers"), clock, cancel)
    gemm_fp32 = peaks["fp32"]
    for cls in ("conv", "linear"):     # no layer outruns the peak: if one did, the GEMM runs were disturbed
        for network, batch, t in timed[cls][1:]:
            rate = _layer_flops(network, batch) / t
            if rate > peaks["fp32"]:
                peaks["fp32"] = rate
                compute_notes["fp32"] = (f"{cls} layer {_si(rate, 'FLOP/s')}, faster than "
                                         f"torch.mm's {_si(gemm_fp32, 'FLOP/s')}")
    eff = _efficiencies(timed, peaks["fp32"], bandwidth)
    budget.finish("layers", "efficiencies: " + ", ".join(f"{k} {v[0]:.2f}" for k, v in eff.items()))
    took = time.perf_counter() - budget.start

    today = _dt.date.today()
    if dev.type == "cuda":
        props = torch.cuda.get_device_properties(dev)
        vendor = "AMD" if getattr(torch.version, "hip", None) else "NVIDIA"
        name, kind, capacity = props.name, "GPU", float(props.total_memory)
    else:
        model, vendor = _cpu_name()
        name, kind = f"{model}, {os.cpu_count() or 1} cores", "CPU"
        try:
            capacity = float(os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE"))
        except (AttributeError, ValueError, OSError):
            capacity = None
    threads = torch.get_num_threads()
    notes.append(f"{'GPU' if dev.type == 'cuda' else f'{threads} torch thread(s)'}, budget {seconds:g} s "
                 f"(took {took:.1f} s); fp32 peak {_si(peaks['fp32'], 'FLOP/s')} (GEMM {_si(gemm_fp32, 'FLOP/s')}); "
                 f"bandwidth copy {_si(copy_bw, 'B/s')}, triad {_si(triad_bw, 'B/s')} on {nbytes / 2 ** 20:.0f} MiB "
                 f"arrays")

    def detail(cls, v):
        inner = f" [{', '.join(f'{n} {e:.3g} ({r:.3g})' for n, (e, r) in v[2].items())}]" if len(v[2]) > 1 else ""
        return f"{cls} {v[0]:.3g} ({v[1]:.3g}){inner}"

    notes.append("efficiency = c / (t − m − overhead) per PALEO's sum model (achieved FLOP/s ÷ fp32 peak): "
                 + ", ".join(detail(k, v) for k, v in eff.items()))
    notes.append("overhead per layer call (a tiny layer of the class): "
                 + ", ".join(f"{k} {v[3] * 1e6:.1f} µs" for k, v in eff.items()))
    if skipped:
        notes.append("not measured: " + ", ".join(skipped))
    spec = {
        "id": "local",
        "name": f"This machine ({name})",
        "vendor": vendor,
        "kind": kind,
        "year": today.year,
        "peak_flops": peaks,
        "memory_bandwidth": bandwidth,
        "source": f"measured by core.bridge.calibrate on {today.isoformat()}",
        "note": "; ".join(notes),
        "compute_notes": compute_notes,
        "efficiency": {k: v[0] for k, v in eff.items()},
        "layer_overhead": {k: v[3] for k, v in eff.items()},
    }
    if capacity:
        spec["memory_capacity"] = capacity
    return spec


def save_local(spec: dict, path: str | Path | None = None) -> Path:
    """Add ``spec`` (validated; an entry with the same id is replaced) to the user's device file — by default
    ``USER_PATH`` ($CNN_CALC_HOME/devices.json or ~/.cnn_calc/devices.json) — keeping the other entries there.
    Returns the path written."""
    from ..devices import USER_PATH, load_devices, save_user_devices

    p = Path(path).expanduser() if path is not None else USER_PATH
    db = load_devices(user_path=p).add(spec)
    try:
        p.parent.mkdir(parents=True, exist_ok=True)
        save_user_devices(db, p)
    except OSError as e:
        raise CalcError(f"cannot write the device file: {e.strerror}", field="path", value=str(p)) from None
    return p
