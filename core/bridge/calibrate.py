"""Calibration: measure this machine with torch and save it as the user device ``local``.

``calibrate(seconds=30)`` runs microbenchmarks within the time budget and returns a device spec (validated by
``DeviceDB.add`` like any user device); ``save_local(spec)`` adds it to the user's device file, after which
``estimate(model, "local")`` and ``python -m core estimate MODEL --device local`` use it.

What is measured (the ceilings, peak and bandwidth, are the best run: on a shared machine the fastest run is the
least disturbed one; the layers are the median run, as a network's latency is, and as ``core.paleo`` predicts):

* ``peak_flops`` per dtype: square ``torch.mm`` of a few sizes (FLOPs = 2·n³), the best rate over sizes; for fp32,
  raised to the rate of the conv or linear layer below if one ran faster (no layer can outrun the peak, so the GEMM
  runs were disturbed, or the library's convolution is better tuned than its mm) — the note says when;
* ``memory_bandwidth``: STREAM-like copy (``b.copy_(a)``, 2 × array bytes moved) and triad (``a = b + s·c`` as
  ``torch.add(b, c, alpha=s, out=a)``, 3 × array bytes) on fp32 arrays far larger than the caches; the larger rate;
* ``alloc_threshold`` / ``alloc_bandwidth`` (Linux CPU only): glibc hands blocks above its mmap threshold (at most
  32 MiB on 64-bit, the ``alloc_threshold``) straight from the OS, and gives heap memory back when enough is free at
  its top, so new tensors often land on pages the process has not touched and page-fault on first write — a ReLU
  into a new 64 MiB tensor runs at a fraction of the copy bandwidth. The rate is the bytes that ReLU faulted in
  (minor page faults × page size) over its time less its reads and writes at the measured bandwidth;
  ``core.paleo`` replays a network's allocations through a model of glibc (``core.cpu_heap``) and charges the
  fresh bytes at that rate;
* ``memory_capacity``: physical memory (``os.sysconf``), or the GPU's total memory;
* ``layer_overhead`` per class of work (``core.registry.WORK_CLASSES``): the time of a tiny layer of the class (a 3×3
  conv on 4 channels of 4×4, the same depthwise, a 4→4 linear, a ReLU on 64 numbers), called as an ``nn.Module`` like
  a model's layers: its arithmetic takes nanoseconds, so what is measured is the fixed cost of a call — Python and
  dispatch, allocation, the library's setup (Hockney's n½ in time form). ``core.paleo`` adds it to every layer that
  runs; it is what makes small networks at batch 1 slower than their FLOPs say;
* ``efficiency`` per class of work, timing a suite of common fp32 layer shapes per class (also as modules), each at
  batch 1 and 8 (16 and 128 on a GPU) because a CPU's caches hold one image's tensors but not a batch's:
  conv (7×7/2 stem, 3×3 at 64@56 … 512@7, bottleneck 1×1s, a small SqueezeNet-like 16→64), grouped_conv (MobileNet
  and EfficientNet depthwise 3×3 and 5×5, a ResNeXt 32-group conv), linear (1024→1024 × 64, classifier heads
  2048→1000 and 4096→4096), pool (ResNet/SqueezeNet/VGG stem pools, GoogLeNet/Inception stride-1 branch pools) and
  elementwise (ReLU, BatchNorm in eval mode, SiLU, Hardswish, and global average pools: a classifier head's and a
  squeeze-and-excitation block's, which stream their input once as elementwise work does). The engine itself counts
  each layer's FLOPs and bytes and splits PALEO's forward time, at the measured fp32 peak and bandwidth, into
  compute ``c`` and memory ``m``; a class's efficiency is the factor that makes PALEO's sum (``c / efficiency + m +
  fresh + overhead``) reproduce the suite's measured time ``t``: ``Σc / Σ(t − m − fresh − overhead)``, clamped to
  [0.0001, 1], where ``fresh`` is the run's own counted page faults at the page-fault rate (a tight loop of one
  layer faults differently from a network, and ``core.paleo`` models a network's faults itself). For
  conv and linear ``m`` is small and this is close to achieved FLOP/s ÷ fp32 GEMM peak; for the memory-bound classes
  it is the compute share left once the memory term at the measured bandwidth is paid, which is how ``core.paleo``
  applies it. Every layer's efficiency and raw achieved FLOP/s ÷ peak are in the note. A class without a suite of
  its own (shape: concat and pad, which copy) is given its fallback's figures (``core.registry.WORK_FALLBACK``), so
  the device states every class.

The budget is split among the stages (GEMM 45 %, bandwidth 20 %, layers 35 %), each stage taking its share of the
time still left, so setup costs are absorbed and the whole run stays within ``seconds`` plus one benchmark run.
"""

from __future__ import annotations

import datetime as _dt
import os
import platform
import time
from pathlib import Path
from typing import Any

from ..devices import PRECISION_KEYS
from ..errors import CalcError, Cancelled
from ..registry import WORK_CLASSES, WORK_FALLBACK
from .timing import TORCH_DTYPES, Clock, Progress, _cancelled, cpu_threads, one_job, torch_device

# the peaks torch.mm measures: live timing's formats, plus tf32 (fp32 storage, tensor-core matmul switched on)
_MM_DTYPES = {**TORCH_DTYPES, "tf32": TORCH_DTYPES["fp32"]}
CALIBRATION_DTYPES = tuple(k for k in PRECISION_KEYS if k in _MM_DTYPES)


def _torch_dtype(name: str, torch):
    return getattr(torch, _MM_DTYPES[name])


def _every_class(measured: dict) -> dict:
    """A figure for every class of work (``core.registry.WORK_CLASSES``): the measured one, or for a class without
    a suite of its own (shape: concat and pad are copies) its fallback's (``WORK_FALLBACK``), as the engine would
    take it anyway."""
    return {c: measured[c] if c in measured else measured[WORK_FALLBACK[c]] for c in WORK_CLASSES}


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
            raise Cancelled("calibration cancelled")
        remaining = max(self.deadline - time.perf_counter(), 0.0)
        return remaining * self.left[stage] / sum(self.left.values())

    def finish(self, stage: str, message: str) -> None:
        self.left.pop(stage)
        if self.progress is not None:
            done = self.total - sum(self.left.values())
            self.progress(min(done / self.total, 0.999) if self.left else 1.0, message)


def _minor_faults() -> int | None:
    """This process's minor page faults so far (pages the kernel mapped on first touch); None without getrusage."""
    try:
        import resource
    except ImportError:         # not on Windows
        return None
    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt


def _bench(fn, clock: Clock, budget: float, cancel: Any = None, max_runs: int = 200, faults: bool = False,
           median: bool = False):
    """The fastest (or with ``median``, the median) of repeated runs of ``fn`` within ``budget`` seconds (at least
    one run); with ``faults``, also the bytes that run wrote to fresh pages (its minor page faults × the page size;
    0 where they cannot be counted)."""
    end = time.perf_counter() + budget
    runs = []
    page = _page_size()
    for _ in range(max_runs):
        before = _minor_faults() if faults else None
        with clock():
            fn()
        after = _minor_faults() if before is not None else None
        runs.append((max(clock.last, 1e-9), (after - before) * page if after is not None else 0))
        if time.perf_counter() >= end:
            break
        if _cancelled(cancel):
            raise Cancelled("calibration cancelled")
    runs.sort()
    t, fresh = runs[(len(runs) - 1) // 2] if median else runs[0]
    return (t, fresh) if faults else t


def _page_size() -> int:
    try:
        return os.sysconf("SC_PAGE_SIZE")
    except (AttributeError, ValueError, OSError):
        return 4096


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
            last_t = _bench(lambda a=a, b=b, c=c: torch.mm(a, b, out=c), clock, left / (len(sizes) - k), cancel)
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


def _fresh_pages(torch, dev, budget: float, clock: Clock, cancel: Any, bandwidth: float) -> tuple[float, float] | None:
    """(bytes above which a new tensor lands on fresh pages, the rate of writing it there) on a Linux CPU: glibc
    serves blocks above its mmap threshold (at most 32 MiB on 64-bit, M_MMAP_THRESHOLD) straight from the OS, so
    every such output page-faults on first touch. Measured as a ReLU into a new 64 MiB tensor, less the time its
    reads and writes take at ``bandwidth``. None on a GPU (the caching allocator reuses memory)."""
    if dev.type != "cpu" or platform.system() != "Linux":
        return None
    n = 64 * 2 ** 20 // 4
    x = torch.randn(n)
    t, counted = _bench(lambda: torch.relu(x), clock, budget, cancel, faults=True)
    fresh = t - 2 * n * 4 / bandwidth
    return (32 * 2 ** 20, (counted or n * 4) / fresh) if fresh > 0 else None


def _class_cases(torch, dev) -> dict:
    """op class → [(IR network, batch, module)]: each class's layers, written once and built twice (IR and torch
    ``nn.Module``, called like a model's layers). The first of each class is a tiny layer whose arithmetic and
    memory traffic take nanoseconds: its time is the class's fixed cost per call. The others are a suite of the
    shapes common CNNs are made of (ResNet/VGG 3×3 stages, bottleneck 1×1s, stems, small Inception/SqueezeNet
    branches; MobileNet/EfficientNet depthwise and ResNeXt grouped convs; stem, branch and global pools; classifier
    heads), so one class figure stands for a network's mix rather than for one favourable layer."""
    from torch import nn

    from ..ir import Network, Node

    nb = 16 if dev.type != "cpu" else 1

    def case(op, shape, module, batch=nb, **attrs):
        return Network.make(op, {"x": shape}, [Node.make(op, op, "x", **attrs)]), batch, module.to(dev).eval()

    def conv(cin, cout, k, hw, stride=1, groups=1, batch=nb):
        return case("conv2d", (cin, hw, hw), nn.Conv2d(cin, cout, k, stride, k // 2, groups=groups, bias=False),
                    batch, out_channels=cout, kernel_size=k, stride=stride, padding=k // 2, groups=groups, bias=False)

    def pool(kind, c, hw, k, stride, pad=0, ceil=False):
        module = (nn.MaxPool2d if kind == "max_pool2d" else nn.AvgPool2d)(k, stride, pad, ceil_mode=ceil)
        return case(kind, (c, hw, hw), module, kernel_size=k, stride=stride, padding=pad, ceil_mode=ceil)

    def linear(fin, fout, batch):
        return case("linear", (fin,), nn.Linear(fin, fout, bias=False), batch, out_features=fout, bias=False)

    def both(cases):
        """The suite at batch ``nb`` and again at 8 × ``nb``: a CPU's caches hold one image's tensors but not a
        batch's, and a network is run at either."""
        return cases[:1] + [c for net, b, m in cases[1:] for c in ((net, b, m), (net, 8 * b, m))]

    return {k: both(v) for k, v in {
        "conv": [conv(4, 4, 3, 4, batch=1),
                 conv(3, 64, 7, 224, stride=2), conv(64, 64, 3, 56), conv(128, 128, 3, 28), conv(256, 256, 3, 14),
                 conv(512, 512, 3, 7), conv(256, 64, 1, 56), conv(64, 256, 1, 56), conv(16, 64, 3, 55)],
        "grouped_conv": [conv(4, 4, 3, 4, groups=4, batch=1),
                         conv(32, 32, 3, 112, groups=32), conv(144, 144, 3, 56, stride=2, groups=144),
                         conv(192, 192, 3, 28, groups=192), conv(480, 480, 5, 14, groups=480),
                         conv(960, 960, 3, 7, groups=960), conv(256, 256, 3, 28, groups=32)],
        "linear": [linear(4, 4, 1), linear(1024, 1024, 64 * nb), linear(2048, 1000, nb), linear(4096, 4096, nb)],
        "pool": [pool("max_pool2d", 4, 4, 2, 2),
                 pool("max_pool2d", 64, 112, 3, 2, 1), pool("max_pool2d", 192, 28, 3, 1, 1),
                 pool("max_pool2d", 96, 109, 3, 2, ceil=True), pool("avg_pool2d", 288, 35, 3, 1, 1),
                 pool("max_pool2d", 128, 112, 2, 2)],
        "elementwise": [case("relu", (4, 4, 4), nn.ReLU(), 1),
                        case("relu", (64, 112, 112), nn.ReLU()), case("batch_norm", (128, 56, 56), nn.BatchNorm2d(128)),
                        case("silu", (144, 56, 56), nn.SiLU()), case("hardswish", (72, 56, 56), nn.Hardswish()),
                        case("adaptive_avg_pool2d", (2048, 7, 7), nn.AdaptiveAvgPool2d(1), output_size=1),
                        case("adaptive_avg_pool2d", (240, 28, 28), nn.AdaptiveAvgPool2d(1), output_size=1)],
    }.items()}


def _time_layers(torch, dev, budget: float, clock: Clock, cancel: Any) -> dict:
    """op class → [(IR network, batch, median measured seconds, bytes that run wrote to fresh pages)] for the
    representative layers."""
    cases = _class_cases(torch, dev)
    out = {}
    end = time.perf_counter() + budget
    with torch.no_grad():
        for k, (cls, layers) in enumerate(cases.items()):
            share = max(end - time.perf_counter(), 0.0) / (len(cases) - k)
            out[cls] = []
            for network, batch, module in layers:
                x = torch.randn(batch, *network.inputs[0][1], device=dev)
                out[cls].append((network, batch, *_bench(lambda m=module, x=x: m(x), clock, share / len(layers),
                                                          cancel, faults=dev.type == "cpu", median=True)))
                del x
    return out


def _efficiencies(timed: dict, peak: float, bandwidth: float, fresh: tuple | None = None) -> dict:
    """op class → (efficiency, achieved FLOP/s ÷ peak, {layer: (efficiency, achieved ÷ peak)}, overhead s); see the
    module docstring. The first (tiny) layer of a class gives its overhead; the suite after it, the efficiency: the
    suite's compute time over its measured time less memory, page faults and overhead (Σc ÷ Σ(t − m − fresh −
    overhead)), i.e. what a network made of those layers reaches. ``fresh`` is the time the run's counted fresh-page
    bytes take at the page-fault rate: ``core.paleo`` adds that term for a network from its own replay of the
    allocator, so it must not also hide in the efficiency."""
    from ..devices import Device
    from ..graph import compile_network
    from ..paleo import Estimate
    from ..report import Report

    probe = Device(id="local", name="calibration", vendor="-", kind="CPU", year=2000, peak_flops={"fp32": peak},
                   memory_bandwidth=bandwidth, source="-", efficiency={"conv": 1.0})
    fault_rate = fresh[1] if fresh else None
    out = {}
    for cls, (tiny, *layers) in timed.items():
        overhead = tiny[2]
        per, sums = {}, [0.0, 0.0, 0.0, 0.0]          # compute, time left for compute, FLOPs, time
        for k, (network, batch, t, fresh_bytes) in enumerate(layers):
            tot = Estimate(Report(compile_network(network), batch, "fp32"), probe).totals
            c, m = tot["forward_compute_s"], tot["forward_memory_s"]
            faults = fresh_bytes / fault_rate if fault_rate else 0.0
            left = max(t - m - faults - overhead, 0.0)
            per[f"{network.name}{k}"] = (min(max(c / left, 1e-4), 1.0) if left else 1.0,
                                         tot["forward_flops"] / t / peak)
            sums = [sums[0] + c, sums[1] + left, sums[2] + tot["forward_flops"], sums[3] + t]
        eff = min(max(sums[0] / sums[1], 1e-4), 1.0) if sums[1] else 1.0
        out[cls] = (eff, sums[2] / sums[3] / peak, per, overhead)
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
    callable) raises ``Cancelled`` (a ``CalcError``). Holds the same one-job-per-process lock as live timing."""
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

    share = budget.share("bandwidth")
    copy_bw, triad_bw, nbytes = _bandwidth(torch, dev, share * 0.8, clock, cancel)
    bandwidth = max(copy_bw, triad_bw)
    fresh = _fresh_pages(torch, dev, share * 0.2, clock, cancel, bandwidth)
    budget.finish("bandwidth", f"bandwidth: {_si(bandwidth, 'B/s')}")

    timed = _time_layers(torch, dev, budget.share("layers"), clock, cancel)
    gemm_fp32 = peaks["fp32"]
    for cls in ("conv", "linear"):     # no layer outruns the peak: if one did, the GEMM runs were disturbed
        for network, batch, t, _ in timed[cls][1:]:
            rate = _layer_flops(network, batch) / t
            if rate > peaks["fp32"]:
                peaks["fp32"] = rate
                compute_notes["fp32"] = (f"{cls} layer {_si(rate, 'FLOP/s')}, faster than "
                                         f"torch.mm's {_si(gemm_fp32, 'FLOP/s')}")
    eff = _efficiencies(timed, peaks["fp32"], bandwidth, fresh)
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
        "efficiency": _every_class({k: v[0] for k, v in eff.items()}),
        "layer_overhead": _every_class({k: v[3] for k, v in eff.items()}),
    }
    if fresh:
        spec["alloc_threshold"], spec["alloc_bandwidth"] = fresh
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
