"""Calibration: measure this machine with torch and save it as the user device ``local``.

``calibrate(seconds=30)`` runs microbenchmarks within the time budget and returns a device spec (validated by
``DeviceDB.add`` like any user device); ``save_local(spec)`` adds it to the user's device file, after which
``estimate(model, "local")`` and ``python -m core estimate MODEL --device local`` use it.

What is measured. Every benchmark gets one untimed warm-up and at least ``MIN_RUNS`` timed runs; a rate (GEMM
peak, bandwidth, page-fault rate, a layer's time) is the median run, as a network's latency is and as ``core.paleo``
predicts; a fixed cost per call (``layer_overhead``) is the lowest decile of its runs (``LOW_PERCENTILE``), since a
disturbance only ever adds time to a call that costs microseconds:

* ``peak_flops`` per dtype: square ``torch.mm`` of a few sizes (FLOPs = 2·n³), the best median rate over
  sizes; for fp32, raised to the rate of the conv or linear layer below if one ran faster (no layer can outrun
  the peak, so the GEMM runs were disturbed, or the library's convolution is better tuned than its mm) — the note
  says when;
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
  batch 1 and 8 (16 and 128 on a GPU) because a CPU's caches hold one image's tensors but not a batch's: conv (7×7/2
  stem, 3×3 at 64@56 … 512@7, bottleneck 1×1s, a small SqueezeNet-like 16→64), grouped_conv (ResNeXt's 32-group 3×3
  stages, a RegNet-X block), depthwise_conv (MobileNet and EfficientNet depthwise 3×3 and 5×5, stride 1 and 2: they
  reach a third of a grouped conv's rate, so one figure for both was wrong for each), linear (1024→1024 × 64,
  classifier heads 2048→1000 and 4096→4096), pool (ResNet/SqueezeNet/VGG stem pools, GoogLeNet/Inception stride-1
  branch pools), batch_norm (ResNet's and MobileNet V2's: in eval mode here, in train mode with its batch statistics
  for the training forward and backward below, where it runs ~3× slower while a ReLU runs ~1.5×) and elementwise
  (ReLU, SiLU, Hardswish, and global average pools: a classifier head's and a squeeze-and-excitation block's, which
  stream their input once as elementwise work does). A suite layer whose efficiency is ``OUTLIER_FACTOR`` (10) times
  below its class's median is left out of the class's figure and named in the note ("left out"): the figure is
  time-weighted, so one disturbed large layer would decide it (compute classes only, ``OUTLIER_CLASSES``). The engine
  itself counts each layer's FLOPs and bytes and splits PALEO's forward time, at the measured fp32 peak and bandwidth,
  into compute ``c`` and memory ``m``; a class's efficiency is the factor that makes PALEO's sum (``c / efficiency + m
  + fresh + overhead``) reproduce the suite's measured time ``t``: ``Σc / Σ(t − m − fresh − overhead)``, clamped to
  [0.0001, 1], where ``fresh`` is the run's own counted page faults at the page-fault rate (a tight loop of one layer
  faults differently from a network, and ``core.paleo`` models a network's faults itself). For conv and linear ``m``
  is small and this is close to achieved FLOP/s ÷ fp32 GEMM peak; for the memory-bound classes it is the compute share
  left once the memory term at the measured bandwidth is paid, which is how ``core.paleo`` applies it. Every layer's
  efficiency and raw achieved FLOP/s ÷ peak are in the note. A class without a suite of its own (shape: concat and
  pad, which copy) is given its fallback's figures (``core.registry.WORK_FALLBACK``), so the device states every
  class;
* the **backward pass and the training step** on a CPU (a GPU's are the fitted GPU model's, not measured here). Each
  suite layer (at its first batch only, for the budget) is run as in training: train mode, its input requiring a
  gradient as an inner layer's does (a stem's, 3 channels, not: a network computes no image gradient), gradients set
  to None before each run (torch's default ``zero_grad(set_to_none=True)``: every gradient is a new tensor);
  ``y.backward(dy)`` is timed with a given output gradient (no loss node), and so is the forward before it. Between
  the two, ``COLD_BYTES`` (64 MiB) are read and written: in a network the rest of the forward and the backward after
  it run between a layer's forward and its backward, so its saved tensors and weights come from farther caches or
  memory; timed warm, the suite had made a depthwise conv's backward look 1.6× faster than it runs cold (1.9 against
  3.0 ms for 144 channels at 56×56), and MobileNet V2's backward came out 28 % too fast, against 18–23 % with it.
  ``backward_efficiency`` per class is fitted as ``efficiency`` is, from the engine's backward FLOPs and bytes of the
  layer with its input gradient on, less the counted fresh pages and the fixed cost of one single-layer backward (the
  tiny layer's). ``backward_overhead`` per class is the cost of one autograd node: two tiny layers' backward less
  one's (lowest deciles), since every ``backward()`` also pays autograd's start once (~15 µs here: charged to every
  node it would overstate a network). On our machine a depthwise node cost ~100 µs in backward against ~55 µs forward.
  ``train_efficiency`` and ``train_overhead``: the training step's forward, fitted like ``efficiency`` from the
  forwards timed before the backwards (train mode with autograd recording ran a network's forward 1.3–2× slower than
  inference: MobileNet V2 at batch 1, 29 → 54 ms). ``update_overhead``: ``torch.optim`` on CPU tensors takes its
  per-parameter loop (torch 2.14's ``_default_to_fused_or_foreach`` chooses foreach only on CUDA-like devices:
  ``_get_foreach_kernels_supported_devices()`` is cuda, xpu, mtia, privateuseone), so the step pays a fixed cost per
  parameter tensor: SGD with momentum over 128 tensors of 1024 elements and over 2 of 65,536 (the same bytes), the
  difference in time over 126 tensors (~5 µs here). ``core.paleo`` uses these where a device has them: the backward at
  the backward figures, plus its gradients of at least ``alloc_threshold`` bytes on fresh pages (glibc ``mmap``s them:
  VGG-11's 411 MB of fc6 gradient at batch 1); the training step = training forward + backward + update (bytes at the
  bandwidth + parameter tensors × ``update_overhead``; the bytes those kernels move one by one, ``core.paleo``'s
  ``EAGER_ACCESSES``). A device without them (older files, GPUs, datasheets) is estimated as before. Held out (15
  cases of 8 torchvision networks at batch 1 and 16, 1 thread, our 2-core machine) the median |error| went from 26 %
  to 10 % in backward and from 22 % to 10 % for the training step (forward 6 %); the depthwise networks (MobileNet V2,
  ShuffleNet V2, EfficientNet-B0) stayed 23–47 % too fast in backward (README, Calibration), which the depthwise
  and batch_norm classes of work then addressed (bench_predict: training step at 2 threads 12.4 % → 9.7 % median).

The budget is split among the stages (GEMM 22 %, bandwidth 14 %, layers 26 %, backward 20 %, grain 8 %, self-check
10 %), each
stage taking its share of the time still left, so setup costs are absorbed and the whole run stays within ``seconds``
plus one benchmark run — plus the re-measurements below, each as long as the first measurement was.

**Noise.** Each measured quantity (a dtype's GEMM runs, the bandwidth runs, the page-fault runs, a class's suite of
layers, a class's tiny layer, their backward and training-forward runs, the optimizer steps, the held-out networks)
has a spread: the interquartile range ÷ median of each
benchmark's runs, the median over the quantity's benchmarks. Above ``SPREAD_LIMIT`` (25 %; 35 % for the per-call
overheads, ``OVERHEAD_SPREAD_LIMIT``: microsecond timings read at their lowest decile, which spread 25–28 % on our
quiet machine at 2 threads) it is re-measured, at most
``RETRIES`` (2) more times, and the steadiest attempt is kept; if it stays above, the calibration is refused with one
line naming the quantity and its spread (``Unsteady``, a ``CalcError``) — unless ``force=True`` (``--force``), which
keeps the result marked ``noisy``. Why 25 %: on our 2-core machine, quiet, a class's median spread was 3–15 % (one
benchmark alone up to ~30 %); with one busy-loop process beside a 2-thread calibration, 40–230 %, and the tiny
layers' calls went from ~10 µs to ~4 ms at the median. A fitted figure outside its sanity bounds — a per-layer
overhead above ``OVERHEAD_MAX`` (1 ms: a call costs microseconds), an efficiency below 1e-4 of the peak (windowed
pooling, the slowest class, reaches 2–3e-3 of a 2-core GEMM peak, so 1e-3 would refuse a CPU with a 20× higher
peak), or for conv and linear (``COMPUTE_BOUND``) above 1, faster than the peak — is re-measured the same way, then
refused naming the field and value. The memory-bound classes may exceed 1 before the clamp: a layer whose tensors
stay in cache beats the STREAM bandwidth, so nothing is left of its time for compute; that is the model's limit,
not noise. The backward and training-forward figures have the same bounds (``backward_overhead.pool``,
``train_efficiency.conv`` …) except that only conv is held to at most 1 (their suite runs at the first batch only,
where the linear layers are memory-bound: a 4096→4096 weight gradient on fresh pages at batch 1 came out at 1.26),
and ``update_overhead`` has the per-call one.
A steady but slow machine passes the spread check (a process that keeps one of two cores busy made every 2-thread
call of a tiny conv wait ~4 ms, with a spread of 23 %): the bounds and the self-check catch it.

**Threads.** At more than one thread the suite's rates come from layers that split well among the threads (timed
one by one, hot), and a network's small layers do not split: on our 2-core machine at torch's 2 threads, ShuffleNet
V2 and MobileNet V3 Small ran no faster than at 1 thread, while the rates said ×1.6, and the networks at batch 1
were predicted 20 % too fast on median (bench_predict, protocol b). ``parallel_grain``: a layer whose work at one
thread (the calibrated threads × its work at their rates) is under it runs unsplit, and above it the split is paid up
to it: time = max(work, min(threads × work, grain)) (``core.paleo.small_layer_factor``). It is fitted on whole
networks (``GRAIN_FIT``: twelve zoo CNNs at batch 1, none of them the self-check's nor one the benchmark judges the
model on): the value of ``GRAIN_GRID`` (0, then 10 µs × 1.25ᵏ up to ~4 ms) whose forward predictions have the least
mean |log error| (~0.7 ms on our machine). At one thread there is nothing to split and no field.

**Self-check.** Last, the fitted device predicts a few small networks that are not in the suite (``HELD_OUT``:
mnist_cnn, SqueezeNet 1.0 and ResNet-18 at 64×64, batch 1), and they are timed at the same thread count; the median
|predicted ÷ measured − 1| is the device's ``calibration.held_out_error``, beside the thread count, the worst spread
and the date (``calibration`` in the device file), so an estimate and the app can say how good the calibration is.
Above ``HELD_OUT_LIMIT`` (60 %) it is refused like noise: on our quiet 2-core machine the self-check gave 11 % at
one thread and 36–37 % at torch's default two (the model's own error there, issue 14 item 2), and 97 % with a
busy-loop neighbour on one core, whose runs were steady enough to pass the spread check.

The measurements go through a ``machine`` (``_TorchMachine``: torch on one device), so the noise checks, the fit and
the self-check run with injected timings in tests (``tests/test_calibrate_noise.py``).
"""

from __future__ import annotations

import datetime as _dt
import math
import os
import platform
import statistics
import time
from pathlib import Path
from typing import Any

from ..devices import PRECISION_KEYS
from ..errors import CalcError, Cancelled
from ..registry import WORK_CLASSES, WORK_FALLBACK
from .timing import TORCH_DTYPES, Clock, Progress, _cancelled, cpu_threads, cuda_math, one_job, torch_device

# the peaks torch.mm measures: live timing's formats, plus tf32 (fp32 storage, tensor-core matmul switched on)
_MM_DTYPES = {**TORCH_DTYPES, "tf32": TORCH_DTYPES["fp32"]}
CALIBRATION_DTYPES = tuple(k for k in PRECISION_KEYS if k in _MM_DTYPES)

MIN_RUNS = 5                  # timed runs of every benchmark at least, after one warm-up (an IQR needs a few)
LOW_PERCENTILE = 0.10         # a fixed cost per call: the lowest decile of its runs
SPREAD_LIMIT = 0.25           # IQR ÷ median above which a quantity is unsteady (module docstring: why)
# the per-call overheads (tiny layers, µs each; their figure is the lowest decile, not the median): on our quiet
# machine at 2 threads the backward per-node timings spread 25–28 %, and calibrate refused three tries in a row;
# a busy neighbour spreads them far more (and makes the calls ms, which the bounds catch)
OVERHEAD_SPREAD_LIMIT = 0.35
RETRIES = 2                   # re-measurements of an unsteady quantity or an out-of-bounds figure
OVERHEAD_MAX = 1e-3           # seconds per layer call: above is a measurement error
EFFICIENCY_RANGE = (1e-4, 1.0)     # the upper bound for COMPUTE_BOUND classes only (module docstring: why)
COMPUTE_BOUND = ("conv", "linear")
# a suite layer whose efficiency is this many times below its class's median is left out of the class's figure:
# Σc ÷ Σ(t − …) is time-weighted, so one disturbed run of a large layer decided it. At 2 threads a 4096→4096
# linear's backward at batch 1 (its 64 MB weight gradient on fresh pages) ran its first runs at up to 120 ms against
# ~15 ms steady, and the class came out at 0.015 of the peak, not ~0.8: ConvNeXt-T's training step predicted 12×
# too slow. The suite's steady layers of one class stay within ~5× of each other (depthwise backward 0.03–0.16).
OUTLIER_FACTOR = 10.0
# only where the figure is a compute rate: for the memory-bound classes it is what is left of a layer's time after
# its bytes at the STREAM bandwidth, which differs by 10× and more between layers that are all steady (a ReLU that
# stays in cache beats the bandwidth: 1; a global average pool: 0.01–0.09)
OUTLIER_CLASSES = ("conv", "grouped_conv", "depthwise_conv", "linear")
# classes whose backward suite also runs at its second batch (8×): a depthwise conv's backward falls from ~0.12 of
# the peak at batch 1 to ~0.05 at 8 (32 channels at 112×112; 0.034 at 16), and the depthwise networks' training
# step at batch 16 came out 25–33 % too fast from batch-1 figures; the other classes keep the budget's first batch
BACKWARD_BOTH_BATCHES = ("depthwise_conv",)
# the self-check's networks: (built-in name, per-sample input shape or None for the network's own), batch 1
HELD_OUT = (("mnist_cnn", None), ("squeezenet1_0", (3, 64, 64)), ("resnet18", (3, 64, 64)))
HELD_OUT_LIMIT = 0.6          # median |error| on them above which the calibration is refused (docstring: why)
STAGES = {"gemm": 0.22, "bandwidth": 0.14, "layers": 0.26, "backward": 0.20, "grain": 0.08, "self_check": 0.10}
# parallel_grain is fitted on these whole networks at batch 1, at more than one thread only: twelve of the zoo's
# CNNs, none the self-check's nor any that benchmarks/bench_predict.py judges the model on, small ones on their own
# input and large ones at 112×112 (so the stage stays short). Four of them (one small family each and ResNet-152)
# had picked a grain 3× too large: ShuffleNet ×0.5 alone pulled it.
_SMALL = (3, 112, 112)
GRAIN_FIT = (("shufflenet_v2_x0_5", None), ("shufflenet_v2_x1_5", None), ("mnasnet0_5", None), ("mnasnet0_75", None),
             ("regnet_x_800mf", None), ("regnet_y_800mf", None), ("efficientnet_b2", _SMALL), ("resnet152", _SMALL),
             ("densenet169", _SMALL), ("resnext101_32x8d", _SMALL), ("vgg13", _SMALL), ("convnext_small", _SMALL))
GRAIN_GRID = (0.0,) + tuple(10e-6 * 1.25 ** k for k in range(28))     # 0, then 10 µs … ~4 ms
# the optimizer step's per-tensor cost: SGD with momentum over many small tensors and over few large ones of the
# same total size, (tensors, elements each); the difference over the difference in tensors is the cost of one
UPDATE_CASES = ((128, 1024), (2, 65536))
# bytes read and written between a suite layer's forward and its timed backward: in a network the rest of the
# forward and the backward after it run in between, so a layer's saved tensors and weights are no longer in the
# nearest caches (module docstring: what it changed)
COLD_BYTES = 64 * 2 ** 20


class Unsteady(CalcError):
    """A calibration refused: a quantity kept varying between runs, or a fitted figure is out of its sanity bounds
    (another process is using the machine); ``force=True`` keeps such a result, marked noisy."""


def _torch_dtype(name: str, torch):
    return getattr(torch, _MM_DTYPES[name])


def _every_class(measured: dict) -> dict:
    """A figure for every class of work (``core.registry.WORK_CLASSES``): the measured one, or for a class without
    a suite of its own (shape: concat and pad are copies) its fallback's (``WORK_FALLBACK``), as the engine would
    take it anyway."""
    return {c: measured[c] if c in measured else measured[WORK_FALLBACK[c]] for c in WORK_CLASSES}


# == statistics and the noise gate ================================================================================

def percentile(samples, q: float) -> float:
    """The ``q`` quantile (0 … 1) of ``samples``, linear between order statistics (numpy's default):
    percentile([1, 2, 3, 4, 5], 0.1) = 1 + 0.4 × (2 − 1) = 1.4."""
    s = sorted(samples)
    if not s:
        raise CalcError("no timed runs", field="samples")
    k = (len(s) - 1) * q
    i = int(k)
    return s[i] + (s[min(i + 1, len(s) - 1)] - s[i]) * (k - i)


def spread(samples) -> float:
    """Interquartile range ÷ median of one benchmark's runs (0 with fewer than 2 runs)."""
    if len(samples) < 2:
        return 0.0
    med = percentile(samples, 0.5)
    return (percentile(samples, 0.75) - percentile(samples, 0.25)) / med if med > 0 else 0.0


def quantity_spread(series) -> float:
    """A quantity's spread: the median over its benchmarks' spreads (one odd benchmark in a suite is not noise)."""
    return statistics.median(spread(s) for s in series) if series else 0.0


class Gate:
    """Measures quantities until they are steady: ``measure(what, fn)`` calls ``fn()`` → (list of benchmarks' run
    times, result) and re-measures while its spread is above ``limit``, at most ``retries`` more times, keeping the
    steadiest attempt; still unsteady, it raises ``Unsteady`` naming ``what`` and the spread — with ``force``, it
    records the quantity as noisy instead. ``spreads``: what → the kept attempt's spread; ``noisy``: the reasons
    a forced result is marked noisy."""

    def __init__(self, limit: float = SPREAD_LIMIT, retries: int = RETRIES, force: bool = False,
                 busy: str = "another process is using the CPU"):
        self.limit, self.retries, self.force, self.busy = limit, retries, force, busy
        self.spreads: dict[str, float] = {}
        self.tries: dict[str, int] = {}
        self.noisy: list[str] = []

    def measure(self, what: str, fn, limit: float | None = None):
        """``limit``: this quantity's own spread limit (the per-call overheads'), else the gate's."""
        limit = self.limit if limit is None else max(limit, self.limit)
        best, tries = None, 0
        while tries <= self.retries:
            series, result = fn()
            tries += 1
            s = quantity_spread(series)
            if best is None or s < best[0]:
                best = (s, result)
            if s <= limit:
                break
        s, result = best
        self.spreads[what], self.tries[what] = s, tries
        if s > limit:
            self.refuse(f"the {what} varied by {s:.0%} between runs (interquartile range ÷ median, "
                        f"{tries} tries; steady is at most {limit:.0%})", f"{what} {s:.0%}")
        return result

    def refuse(self, reason: str, short: str, field: str | None = None, value: Any = None) -> None:
        """Raise ``Unsteady`` (one line: the load, ``reason``, what to do), or with ``force`` note ``short``."""
        if not self.force:
            raise Unsteady(f"{self.busy}: {reason}; close it or pass --force (force=True) to keep the result "
                           "marked noisy", field=field, value=value)
        self.noisy.append(short)

    @property
    def worst(self) -> tuple[str, float]:
        return max(self.spreads.items(), key=lambda kv: kv[1]) if self.spreads else ("", 0.0)


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


# == the machine: torch on one device =============================================================================

def _minor_faults() -> int | None:
    """This process's minor page faults so far (pages the kernel mapped on first touch); None without getrusage."""
    try:
        import resource
    except ImportError:         # not on Windows
        return None
    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt


def _page_size() -> int:
    try:
        return os.sysconf("SC_PAGE_SIZE")
    except (AttributeError, ValueError, OSError):
        return 4096


def _bench(fn, clock: Clock, budget: float, cancel: Any = None, max_runs: int = 200, faults: bool = False,
           min_runs: int = MIN_RUNS, warmup: int = 1, setup=None) -> tuple[list[float], list[int]]:
    """(run times, bytes each run wrote to fresh pages) of ``fn``: ``warmup`` untimed runs, then runs until
    ``budget`` seconds have passed and at least ``min_runs`` ran. Fresh bytes are the run's minor page faults × the
    page size with ``faults`` (0 where they cannot be counted, or without ``faults``). ``setup``, untimed, before
    every run (a backward's forward, an optimizer step's gradients)."""
    for _ in range(warmup):
        if setup is not None:
            setup()
        fn()
    end = time.perf_counter() + budget
    times, fresh = [], []
    page = _page_size()
    for k in range(max_runs):
        if setup is not None:
            setup()
        before = _minor_faults() if faults else None
        with clock():
            fn()
        after = _minor_faults() if before is not None else None
        times.append(max(clock.last, 1e-9))
        fresh.append((after - before) * page if after is not None else 0)
        if k + 1 >= min_runs and time.perf_counter() >= end:
            break
        if _cancelled(cancel):
            raise Cancelled("calibration cancelled")
    return times, fresh


def _case_specs(gpu: bool) -> dict:
    """op class → [(op, per-sample input shape, batch, attrs)]: the first of each class is a tiny layer whose
    arithmetic and memory traffic take nanoseconds (its time is the class's fixed cost per call); the others are a
    suite of the shapes common CNNs are made of (ResNet/VGG 3×3 stages, bottleneck 1×1s, stems, small
    Inception/SqueezeNet branches; MobileNet/EfficientNet depthwise and ResNeXt grouped convs; stem, branch and
    global pools; classifier heads), so one class figure stands for a network's mix rather than for one favourable
    layer. Each suite layer runs at batch ``nb`` and again at 8 × ``nb``: a CPU's caches hold one image's tensors
    but not a batch's, and a network is run at either."""
    nb = 16 if gpu else 1

    def conv(cin, cout, k, hw, stride=1, groups=1, batch=nb):
        return ("conv2d", (cin, hw, hw), batch, dict(out_channels=cout, kernel_size=k, stride=stride, padding=k // 2,
                                                      groups=groups, bias=False))

    def pool(kind, c, hw, k, stride, pad=0, ceil=False):
        return (kind, (c, hw, hw), nb, dict(kernel_size=k, stride=stride, padding=pad, ceil_mode=ceil))

    def linear(fin, fout, batch):
        return ("linear", (fin,), batch, dict(out_features=fout, bias=False))

    def both(cases):
        return cases[:1] + [(op, shape, b2, attrs) for op, shape, b, attrs in cases[1:] for b2 in (b, 8 * b)]

    return {k: both(v) for k, v in {
        "conv": [conv(4, 4, 3, 4, batch=1),
                 conv(3, 64, 7, 224, stride=2), conv(64, 64, 3, 56), conv(128, 128, 3, 28), conv(256, 256, 3, 14),
                 conv(512, 512, 3, 7), conv(256, 64, 1, 56), conv(64, 256, 1, 56), conv(16, 64, 3, 55)],
        # ResNeXt-50 32×4d's 3×3 stages (32 groups) and a RegNet-X block (groups of 16 channels)
        "grouped_conv": [conv(8, 8, 3, 4, groups=2, batch=1),
                         conv(128, 128, 3, 56, groups=32), conv(256, 256, 3, 28, groups=32),
                         conv(512, 512, 3, 14, groups=32), conv(160, 160, 3, 14, groups=10)],
        # MobileNet V2/V3 and EfficientNet depthwise 3×3 and 5×5, stride 1 and 2
        "depthwise_conv": [conv(4, 4, 3, 4, groups=4, batch=1),
                           conv(32, 32, 3, 112, groups=32), conv(144, 144, 3, 56, stride=2, groups=144),
                           conv(192, 192, 3, 28, groups=192), conv(480, 480, 5, 14, groups=480),
                           conv(960, 960, 3, 7, groups=960), conv(96, 96, 3, 112, stride=2, groups=96)],
        "linear": [linear(4, 4, 1), linear(1024, 1024, 64 * nb), linear(2048, 1000, nb), linear(4096, 4096, nb)],
        "pool": [pool("max_pool2d", 4, 4, 2, 2),
                 pool("max_pool2d", 64, 112, 3, 2, 1), pool("max_pool2d", 192, 28, 3, 1, 1),
                 pool("max_pool2d", 96, 109, 3, 2, ceil=True), pool("avg_pool2d", 288, 35, 3, 1, 1),
                 pool("max_pool2d", 128, 112, 2, 2)],
        # ResNet's stem and stage BatchNorms, MobileNet V2's expanded ones (inference: eval mode; the training
        # forward and backward: train mode, batch statistics)
        "batch_norm": [("batch_norm", (4, 4, 4), 1, {}),
                       ("batch_norm", (64, 112, 112), nb, {}), ("batch_norm", (128, 56, 56), nb, {}),
                       ("batch_norm", (144, 56, 56), nb, {}), ("batch_norm", (512, 7, 7), nb, {})],
        "elementwise": [("relu", (4, 4, 4), 1, {}),
                        ("relu", (64, 112, 112), nb, {}),
                        ("silu", (144, 56, 56), nb, {}), ("hardswish", (72, 56, 56), nb, {}),
                        ("adaptive_avg_pool2d", (2048, 7, 7), nb, dict(output_size=1)),
                        ("adaptive_avg_pool2d", (240, 28, 28), nb, dict(output_size=1))],
    }.items()}


def _class_cases(gpu: bool) -> dict:
    """op class → [(IR network of one layer, batch, attrs)] for ``_case_specs``."""
    from ..ir import Network, Node

    return {cls: [(Network.make(op, {"x": shape}, [Node.make(op, op, "x", **attrs)]), batch, attrs)
                  for op, shape, batch, attrs in cases] for cls, cases in _case_specs(gpu).items()}


def _layer_module(nn, network, attrs):
    """The ``nn.Module`` of a one-layer case, called as a model's layers are."""
    node = network.nodes[0]
    op, c = node.op, network.inputs[0][1][0]
    if op == "conv2d":
        return nn.Conv2d(c, attrs["out_channels"], attrs["kernel_size"], attrs["stride"], attrs["padding"],
                         groups=attrs["groups"], bias=False)
    if op in ("max_pool2d", "avg_pool2d"):
        kind = nn.MaxPool2d if op == "max_pool2d" else nn.AvgPool2d
        return kind(attrs["kernel_size"], attrs["stride"], attrs["padding"], ceil_mode=attrs["ceil_mode"])
    if op == "linear":
        return nn.Linear(c, attrs["out_features"], bias=False)
    if op == "batch_norm":
        return nn.BatchNorm2d(c)
    if op == "adaptive_avg_pool2d":
        return nn.AdaptiveAvgPool2d(attrs["output_size"])
    return {"relu": nn.ReLU, "silu": nn.SiLU, "hardswish": nn.Hardswish}[op]()


class _TorchMachine:
    """The measurements, with torch on ``dev``; every method returns raw run times (seconds), the fitting is done
    by the caller (``_calibrate``), which a test gives a fake machine instead."""

    def __init__(self, torch, dev, cancel: Any = None):
        self.torch, self.dev, self.cancel = torch, dev, cancel
        self.clock = Clock(dev)
        self.gpu = dev.type == "cuda"
        self.linux_cpu = dev.type == "cpu" and platform.system() == "Linux"
        self.threads = torch.get_num_threads()
        self._modules: dict = {}
        self._cold = None

    def gemm(self, name: str, budget: float) -> dict:
        """Square torch.mm at growing sizes within ``budget``: {n: run times}. Raises RuntimeError or TypeError
        for a dtype this build or device cannot multiply."""
        torch, dev = self.torch, self.dev
        sizes = (1024, 2048, 4096, 8192) if self.gpu else (128, 256, 512, 1024, 2048)
        end = time.perf_counter() + budget
        out, last_t = {}, None
        dtype = _torch_dtype(name, torch)
        tf32 = None
        if self.gpu:
            tf32 = torch.backends.cuda.matmul.allow_tf32
            torch.backends.cuda.matmul.allow_tf32 = name == "tf32"
        try:
            for k, n in enumerate(sizes):
                left = end - time.perf_counter()
                if out and (left <= 0 or last_t * 8 * MIN_RUNS > left):    # the next size: ~8× the last run
                    break
                a = torch.randn(n, n, device=dev).to(dtype)
                b = torch.randn(n, n, device=dev).to(dtype)
                c = torch.empty(n, n, device=dev, dtype=dtype)
                out[n], _ = _bench(lambda a=a, b=b, c=c: torch.mm(a, b, out=c), self.clock, left / (len(sizes) - k),
                                   self.cancel)
                last_t = statistics.median(out[n])
        finally:
            if tf32 is not None:
                torch.backends.cuda.matmul.allow_tf32 = tf32
        return out

    def bandwidth(self, budget: float) -> tuple[list, list, int]:
        """(copy run times, triad run times, array bytes) on fp32 arrays far larger than the caches."""
        from .timing import available_memory

        torch, dev = self.torch, self.dev
        nbytes = (512 if self.gpu else 128) * 2 ** 20
        avail = available_memory(str(dev))
        if avail:
            nbytes = max(min(nbytes, avail // 16), 2 ** 20)
        n = nbytes // 4
        a = torch.empty(n, device=dev).fill_(1.0)
        b = torch.empty(n, device=dev).fill_(2.0)
        c = torch.empty(n, device=dev).fill_(3.0)
        copy, _ = _bench(lambda: b.copy_(a), self.clock, budget / 2, self.cancel)
        triad, _ = _bench(lambda: torch.add(b, c, alpha=3.0, out=a), self.clock, budget / 2, self.cancel)
        return copy, triad, n * 4

    def fresh_pages(self, budget: float) -> tuple[list, list, int] | None:
        """(run times, fresh bytes per run, tensor bytes) of a ReLU into a new 64 MiB tensor on a Linux CPU; None
        elsewhere (a GPU's caching allocator reuses memory)."""
        if not self.linux_cpu:
            return None
        n = 64 * 2 ** 20 // 4
        x = self.torch.randn(n)
        times, fresh = _bench(lambda: self.torch.relu(x), self.clock, budget, self.cancel, faults=True)
        return times, fresh, n * 4

    def time_layer(self, network, batch: int, attrs: dict, budget: float) -> tuple[list, list]:
        """(run times, fresh bytes per run) of one case's module on a random input."""
        torch = self.torch
        key = (network.name, network.inputs[0][1], tuple(sorted(attrs.items())))
        if key not in self._modules:
            self._modules[key] = _layer_module(torch.nn, network, attrs).to(self.dev).eval()
        module = self._modules[key]
        x = torch.randn(batch, *network.inputs[0][1], device=self.dev)
        with torch.no_grad():
            return _bench(lambda: module(x), self.clock, budget, self.cancel, faults=self.dev.type == "cpu")

    def time_backward(self, network, batch: int, attrs: dict, budget: float,
                      chain: int = 1) -> tuple[list, list, list, list]:
        """(run times, fresh bytes per run) of the backward pass alone of one case's module (``chain`` of them in a
        row), in train mode, its input requiring a gradient as a network's inner layers' do: a forward with the
        gradients set to None (``zero_grad(set_to_none=True)``, torch's default, so each gradient is a new tensor),
        then ``y.backward(dy)`` timed — a given output gradient, no loss node of its own; then the same of the
        forwards before them (a training step's forward: train mode, autograd recording)."""
        torch = self.torch
        key = ("backward", chain, network.name, network.inputs[0][1], tuple(sorted(attrs.items())))
        if key not in self._modules:
            layers = [_layer_module(torch.nn, network, attrs) for _ in range(chain)]
            self._modules[key] = torch.nn.Sequential(*layers).to(self.dev).train()
        module = self._modules[key]
        x = torch.randn(batch, *network.inputs[0][1], device=self.dev, requires_grad=_input_grad(network))
        dy = torch.randn_like(module(x))
        held, fwd, fwd_fresh, page = {}, [], [], _page_size()
        if self._cold is None:
            self._cold = torch.zeros(COLD_BYTES // 4, device=self.dev)

        def setup():
            module.zero_grad(set_to_none=True)
            x.grad = None
            before = _minor_faults()
            start = time.perf_counter()
            held["y"] = module(x)
            fwd.append(max(time.perf_counter() - start, 1e-9))
            after = _minor_faults() if before is not None else None
            fwd_fresh.append((after - before) * page if after is not None else 0)
            self._cold.add_(1.0)

        times, fresh = _bench(lambda: held["y"].backward(dy), self.clock, budget, self.cancel, setup=setup,
                              faults=self.dev.type == "cpu")
        return times, fresh, fwd[-len(times):], fwd_fresh[-len(times):]

    def optimizer_step(self, tensors: int, numel: int, budget: float) -> list:
        """Run times of ``torch.optim.SGD`` (momentum 0.9) ``step()`` over ``tensors`` parameters of ``numel``
        elements each, fresh gradients set before each (untimed). On a CPU torch takes its per-parameter loop
        (``_default_to_fused_or_foreach``: foreach kernels are for CUDA-like devices only), a fixed cost per
        tensor."""
        torch = self.torch
        params = [torch.nn.Parameter(torch.randn(numel, device=self.dev)) for _ in range(tensors)]
        grads = [torch.randn(numel, device=self.dev) for _ in range(tensors)]
        opt = torch.optim.SGD(params, lr=1e-3, momentum=0.9)

        def setup():
            for p, g in zip(params, grads):
                p.grad = g

        times, _ = _bench(opt.step, self.clock, budget, self.cancel, setup=setup, warmup=2)
        return times

    def time_network(self, network, batch: int, budget: float) -> list:
        """Forward run times of a network (``core.bridge.to_torch``), in eval mode without autograd."""
        from .to_torch import to_module

        torch = self.torch
        module = to_module(network, device=self.dev).eval()
        x = torch.randn(batch, *network.inputs[0][1], device=self.dev)
        with torch.no_grad():
            times, _ = _bench(lambda: module(x), self.clock, budget, self.cancel, warmup=2, min_runs=7)
        return times

    def describe(self) -> tuple[str, str, str, float | None]:
        """(name, vendor, kind, memory capacity in bytes or None)."""
        torch, dev = self.torch, self.dev
        if self.gpu:
            props = torch.cuda.get_device_properties(dev)
            vendor = "AMD" if getattr(torch.version, "hip", None) else "NVIDIA"
            return props.name, vendor, "GPU", float(props.total_memory)
        model, vendor = _cpu_name()
        try:
            capacity = float(os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE"))
        except (AttributeError, ValueError, OSError):
            capacity = None
        return f"{model}, {os.cpu_count() or 1} cores", vendor, "CPU", capacity


# == fitting ======================================================================================================

def _input_grad(network) -> bool:
    """Whether a one-layer case's backward computes its input gradient, as the layer would inside a network: yes,
    except for a stem (3 input channels, an image), whose input carries none (its dgrad would be slow work no
    network does)."""
    return network.inputs[0][1][0] != 3


def _backward_cost(network, batch: int, peak: float, bandwidth: float) -> tuple[float, float, float]:
    """(compute s, memory s, FLOPs) of a one-layer case's backward at fp32, at ``peak`` and ``bandwidth``, as
    ``core.paleo`` counts the layer inside a network: the engine's backward FLOPs and bytes of the node with its
    input gradient switched on where the timed input requires one (``_input_grad``)."""
    import dataclasses

    from ..graph import compile_network
    from ..work import layer_work

    node = compile_network(network).nodes[0]
    node = dataclasses.replace(node, grad_in=(_input_grad(network),) * len(node.inputs), needs_grad=True)
    w = layer_work(node, False).backward
    flops = w.flops * batch
    return flops / peak, ((w.act * 4 + w.xbytes) * batch + w.weights * 4) / bandwidth, flops


def _efficiencies(timed: dict, peak: float, bandwidth: float, fresh: tuple | None = None,
                  backward: bool = False) -> dict:
    """op class → (efficiency, achieved FLOP/s ÷ peak, {layer: (efficiency, achieved ÷ peak)}, overhead s, raw
    efficiency, layers left out); ``timed``: op class → [(IR network, batch, seconds, fresh bytes)], the tiny layer
    first (its seconds are the class's overhead). See the module docstring. The suite after the tiny layer gives the
    efficiency: the suite's compute time over its measured time less memory, page faults and overhead (Σc ÷ Σ(t − m
    − fresh − overhead)), i.e. what a network made of those layers reaches; it is clamped to [0.0001, 1], and the
    raw figure (infinite when nothing is left for compute) is what the sanity bounds check. ``fresh`` is the time
    the run's counted fresh-page bytes take at the page-fault rate: ``core.paleo`` adds that term for a network from
    its own replay of the allocator, so it must not also hide in the efficiency. ``backward``: the suite's backward
    runs (``_backward_cost``); the tiny row's fourth figure is then what every single-layer backward pays besides
    its work (autograd's start and one node), subtracted instead of the per-node overhead. A layer whose efficiency
    is ``OUTLIER_FACTOR`` times below its class's median (clamped figures; compute classes only,
    ``OUTLIER_CLASSES``) is left out of the sums (a disturbed run of a large layer would decide the class) and named
    in the sixth figure."""
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
        fixed = overhead if tiny[3] is None else tiny[3]
        per, sums = {}, [0.0, 0.0, 0.0, 0.0]          # compute, time left for compute, FLOPs, time
        rows = []
        for k, (network, batch, t, fresh_bytes) in enumerate(layers):
            if backward:
                c, m, flops = _backward_cost(network, batch, peak, bandwidth)
            else:
                tot = Estimate(Report(compile_network(network), batch, "fp32"), probe).totals
                c, m, flops = tot["forward_compute_s"], tot["forward_memory_s"], tot["forward_flops"]
            faults = fresh_bytes / fault_rate if fault_rate else 0.0
            left = max(t - m - faults - fixed, 0.0)
            rows.append((f"{network.name}{k}", c, left, flops, t))
        clamped = [min(max(c / left, 1e-4), 1.0) if left else 1.0 for _, c, left, _, _ in rows]
        typical = statistics.median(clamped) if rows and cls in OUTLIER_CLASSES else 0.0
        left_out = []
        for (name, c, left, flops, t), e in zip(rows, clamped):
            per[name] = (e, flops / t / peak)
            if e * OUTLIER_FACTOR < typical:
                left_out.append(name)
            else:
                sums = [sums[0] + c, sums[1] + left, sums[2] + flops, sums[3] + t]
        raw = sums[0] / sums[1] if sums[1] else float("inf")
        eff = min(max(raw, 1e-4), 1.0)
        out[cls] = (eff, sums[2] / sums[3] / peak if sums[3] else 0.0, per, overhead, raw, tuple(left_out))
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


def _time(s: float) -> str:
    return f"{s * 1e3:.3g} ms" if s >= 1e-3 else f"{s * 1e6:.3g} µs"


# == calibrate ====================================================================================================

def calibrate(seconds: float = 30.0, progress: Progress | None = None, dtypes=("fp32", "fp64", "bf16"), *,
              device: str = "cpu", cancel: Any = None, threads: int | None = None, force: bool = False) -> dict:
    """Measure this machine (or ``device="cuda"``) within about ``seconds`` and return a device spec with id
    ``local``. fp32 is always measured (efficiencies are relative to its peak); a dtype the device cannot run is
    left out and named in the note. ``threads``: torch's CPU threads for the run (None: torch's default, the count
    a user's own runs get), recorded in the spec's ``calibration``. A machine too noisy to measure, or a fitted
    figure out of its sanity bounds, raises ``Unsteady`` (a ``CalcError``) after re-measuring; ``force=True``
    keeps the result instead, marked ``calibration.noisy``. ``progress(fraction, message)`` after each stage;
    ``cancel`` (an Event or a callable) raises ``Cancelled`` (a ``CalcError``). Holds the same one-job-per-process
    lock as live timing."""
    if isinstance(seconds, bool) or not isinstance(seconds, (int, float)) or not 0 < seconds <= 3600:
        raise CalcError("must be a number of seconds in (0, 3600]", field="seconds", value=seconds)
    if isinstance(dtypes, str):
        dtypes = [d.strip() for d in dtypes.split(",") if d.strip()]
    bad = [d for d in dtypes if d not in CALIBRATION_DTYPES]
    if bad:
        raise CalcError(f"choose from {', '.join(CALIBRATION_DTYPES)}", field="dtypes", value=",".join(bad))
    if not isinstance(force, bool):
        raise CalcError("must be True or False", field="force", value=force)
    dtypes = ["fp32"] + [d for d in dict.fromkeys(dtypes) if d != "fp32"]
    with one_job():
        import torch

        dev = torch_device(device)
        # fp32 layers in fp32 on a GPU (cuDNN's TF32 default off): their efficiencies divide by the fp32 peak
        with cpu_threads(threads), cuda_math(torch, dev, "fp32"):
            return _calibrate(_TorchMachine(torch, dev, cancel), float(seconds), progress, dtypes, cancel,
                              Gate(force=force, busy="another process is using the "
                                                     + ("GPU or CPU" if dev.type == "cuda" else "CPU")))


def _calibrate(machine, seconds: float, progress, dtypes, cancel, gate: Gate) -> dict:
    """The stages over ``machine`` (``_TorchMachine`` or a test's fake): measure through ``gate``, fit, check the
    fitted figures' bounds, self-check on ``HELD_OUT``; returns the spec."""
    weights = {f"gemm_{d}": STAGES["gemm"] * (2 if d == "fp32" else 1) / (len(dtypes) + 1) for d in dtypes}
    weights.update({k: v for k, v in STAGES.items() if k != "gemm"})
    budget = _Budget(seconds, weights, progress, cancel)
    peaks, notes, compute_notes, skipped = {}, [], {}, []
    for d in dtypes:
        share = budget.share(f"gemm_{d}")
        if d == "tf32" and not machine.gpu:
            skipped.append(f"{d} (CUDA only)")
        else:
            try:
                def gemm(d=d, share=share):
                    runs = machine.gemm(d, share)
                    return list(runs.values()), runs

                runs = gate.measure(f"{d} matrix-multiply timings", gemm)
            except (RuntimeError, TypeError) as e:   # a dtype this build or device cannot multiply
                if d == "fp32":
                    raise CalcError(f"fp32 matrix multiply failed: {e}", field="dtypes", value=d) from None
                skipped.append(f"{d} ({str(e).splitlines()[0][:60]})")
            else:
                rate, n = max((2 * n ** 3 / statistics.median(t), n) for n, t in runs.items())
                peaks[d] = rate
                compute_notes[d] = f"torch.mm best at n={n}: {_si(rate, 'FLOP/s')} (median run)"
        budget.finish(f"gemm_{d}", f"GEMM {d}: {_si(peaks[d], 'FLOP/s')}" if d in peaks else f"GEMM {d}: skipped")

    share = budget.share("bandwidth")
    def stream():
        runs = machine.bandwidth(share * 0.8)
        return runs[:2], runs

    def faults():
        runs = machine.fresh_pages(share * 0.2)
        return [runs[0]], runs

    copy, triad, nbytes = gate.measure("memory-bandwidth timings", stream)
    copy_bw, triad_bw = 2 * nbytes / statistics.median(copy), 3 * nbytes / statistics.median(triad)
    bandwidth = max(copy_bw, triad_bw)
    fresh = None
    if machine.linux_cpu:
        times, counted, fbytes = gate.measure("fresh-page write timings", faults)
        k = sorted(range(len(times)), key=times.__getitem__)[(len(times) - 1) // 2]       # the median run
        left = times[k] - 2 * fbytes / bandwidth
        fresh = (32 * 2 ** 20, (counted[k] or fbytes) / left) if left > 0 else None
    budget.finish("bandwidth", f"bandwidth: {_si(bandwidth, 'B/s')}")

    cases = _class_cases(machine.gpu)
    end = time.perf_counter() + budget.share("layers")
    timed: dict = {}
    timed_bwd: dict = {}
    timed_train: dict = {}

    def measure_class(cls: str, per_layer: float, parts=("layer_overhead", "efficiency")) -> None:
        """Measure a class's tiny layer (``parts`` naming an overhead) and suite (an efficiency): the inference
        forward (layer_overhead, efficiency) into ``timed``, or the backward and the training forward before it
        (backward_… or train_…) into ``timed_bwd`` and ``timed_train``; each [tiny row, suite rows]."""
        tiny, *suite = cases[cls]
        back = any(p.startswith(("backward", "train")) for p in parts)
        do_overhead, do_layers = (any(p.endswith(k) for p in parts) for k in ("overhead", "efficiency"))

        def median_row(net, b, t, f):
            k = sorted(range(len(t)), key=t.__getitem__)[(len(t) - 1) // 2]       # the median run
            return net, b, t[k], f[k]

        if not back:
            def overhead():
                t, _ = machine.time_layer(tiny[0], tiny[1], tiny[2], per_layer)
                return [t], (tiny[0], tiny[1], percentile(t, LOW_PERCENTILE), None)

            def layers():
                runs = [machine.time_layer(net, b, attrs, per_layer) for net, b, attrs in suite]
                return [t for t, _ in runs], [median_row(net, b, *r) for (net, b, _), r in zip(suite, runs)]

            old = timed.get(cls)
            timed[cls] = [gate.measure(f"{cls} per-layer overhead timings", overhead, OVERHEAD_SPREAD_LIMIT)
                          if do_overhead else old[0],
                          *(gate.measure(f"{cls} layer timings", layers) if do_layers else old[1:])]
            return

        def back_overhead():
            # a backward call also pays autograd's start once (a GraphTask): one tiny layer's backward is that
            # plus one node, two in a row's is that plus two; the node's cost is the difference. The training
            # forward's per-call cost is the tiny layer's forward, as for inference.
            one = machine.time_backward(tiny[0], tiny[1], tiny[2], per_layer / 2, 1)
            two = machine.time_backward(tiny[0], tiny[1], tiny[2], per_layer / 2, 2)
            low = percentile(one[0], LOW_PERCENTILE)
            return [one[0], two[0], one[2]], ((tiny[0], tiny[1], max(percentile(two[0], LOW_PERCENTILE) - low, 0.0),
                                               low), (tiny[0], tiny[1], percentile(one[2], LOW_PERCENTILE), None))

        def back_layers():
            # each suite layer at its first batch only (a backward with its forward costs ~4× an inference
            # forward: both batches would not fit the budget), but both for BACKWARD_BOTH_BATCHES
            picked = suite if cls in BACKWARD_BOTH_BATCHES else suite[::2]
            runs = [machine.time_backward(net, b, attrs, per_layer) for net, b, attrs in picked]
            return ([r[0] for r in runs] + [r[2] for r in runs],
                    ([median_row(net, b, r[0], r[1]) for (net, b, _), r in zip(picked, runs)],
                     [median_row(net, b, r[2], r[3]) for (net, b, _), r in zip(picked, runs)]))

        ov = (gate.measure(f"{cls} backward per-node overhead timings", back_overhead, OVERHEAD_SPREAD_LIMIT)
              if do_overhead
              else (timed_bwd[cls][0], timed_train[cls][0]))
        rows = (gate.measure(f"{cls} backward layer timings", back_layers) if do_layers
                else (timed_bwd[cls][1:], timed_train[cls][1:]))
        timed_bwd[cls], timed_train[cls] = [ov[0], *rows[0]], [ov[1], *rows[1]]

    for k, cls in enumerate(cases):
        measure_class(cls, max(end - time.perf_counter(), 0.0) / (len(cases) - k) / len(cases[cls]))

    gemm_fp32 = peaks["fp32"]

    def fit():
        # no layer outruns the peak: if one did, the GEMM runs were disturbed. Not a GPU's convolutions: cuDNN runs a
        # 3×3 one as Winograd or FFT, fewer multiplies than the engine counts (an H200's fp32 conv suite reached
        # "85 TFLOP/s" against a 51 TFLOP/s sgemm and a 67 TFLOP/s datasheet peak)
        for cls in ("linear",) if machine.gpu else ("conv", "linear"):
            for network, batch, t, _ in timed[cls][1:]:
                rate = _layer_flops(network, batch) / t
                if rate > peaks["fp32"]:
                    peaks["fp32"] = rate
                    compute_notes["fp32"] = (f"{cls} layer {_si(rate, 'FLOP/s')}, faster than "
                                             f"torch.mm's {_si(gemm_fp32, 'FLOP/s')}")
        return _efficiencies(timed, peaks["fp32"], bandwidth, fresh)

    def checked(fit, names: tuple) -> dict:
        """``fit()`` within the sanity bounds: re-measure a class out of them, then refuse naming the field. The
        backward suite runs at the first batch only, where the linear layers (a classifier head at batch 1) are
        memory-bound: only conv is held to at most 1 there. On a GPU conv is clamped instead (cuDNN's Winograd)."""
        bound = COMPUTE_BOUND if names[1] == "efficiency" else ("conv",)
        if machine.gpu:         # cuDNN's Winograd: a 3×3 conv suite can pass the peak it is counted against, so a
            bound = tuple(c for c in bound if c != "conv")      # GPU's conv figure is clamped to 1, not refused
        eff = fit()
        for attempt in range(gate.retries + 1):
            bad = _out_of_bounds(eff, names, bound)
            if not bad:
                break
            if attempt < gate.retries:
                for cls in dict.fromkeys(b[0] for b in bad):
                    measure_class(cls, 0.0, [b[1] for b in bad if b[0] == cls])
                eff = fit()
        for cls, field, value, why in _out_of_bounds(eff, names, bound):
            shown = _time(value) if field == names[0] else f"{value:.3g}"
            gate.refuse(f"{field}.{cls} = {shown} {why}, a measurement error after {gate.retries + 1} tries",
                        f"{field}.{cls} {shown}", field=f"{field}.{cls}", value=shown)
        return eff

    eff = checked(fit, ("layer_overhead", "efficiency"))
    budget.finish("layers", "efficiencies: " + ", ".join(f"{k} {v[0]:.2f}" for k, v in eff.items()))

    bwd, train, update = None, None, None
    share = budget.share("backward")
    if not machine.gpu:     # the CPU's backward and optimizer step (a GPU's are the fitted GPU model's)
        end = time.perf_counter() + share * 0.9
        for k, cls in enumerate(cases):
            # runs per class: the suite's backward cases (every one, or the first batch's half) and two tiny chains
            runs = (len(cases[cls]) - 1 if cls in BACKWARD_BOTH_BATCHES else len(cases[cls]) // 2) + 2
            measure_class(cls, max(end - time.perf_counter(), 0.0) / (len(cases) - k) / runs,
                          ("backward_overhead", "backward_efficiency"))
        bwd = checked(lambda: _efficiencies(timed_bwd, peaks["fp32"], bandwidth, fresh, backward=True),
                      ("backward_overhead", "backward_efficiency"))
        train = checked(lambda: _efficiencies(timed_train, peaks["fp32"], bandwidth, fresh),
                        ("train_overhead", "train_efficiency"))

        def step():
            many = machine.optimizer_step(*UPDATE_CASES[0], share * 0.05)
            few = machine.optimizer_step(*UPDATE_CASES[1], share * 0.05)
            cost = percentile(many, LOW_PERCENTILE) - percentile(few, LOW_PERCENTILE)
            return [many, few], max(cost / (UPDATE_CASES[0][0] - UPDATE_CASES[1][0]), 0.0)

        for _ in range(gate.retries + 1):
            update = gate.measure("optimizer step timings", step)
            if update <= OVERHEAD_MAX:
                break
        if update > OVERHEAD_MAX:
            gate.refuse(f"update_overhead = {_time(update)} per parameter tensor is above {_time(OVERHEAD_MAX)}, a "
                        f"measurement error after {gate.retries + 1} tries", f"update_overhead {_time(update)}",
                        field="update_overhead", value=_time(update))
    budget.finish("backward", "backward efficiencies: " + ", ".join(f"{k} {v[0]:.2f}" for k, v in bwd.items())
                  if bwd else "backward: not measured on a GPU")

    name, vendor, kind, capacity = machine.describe()
    spec = {
        "id": "local",
        "name": f"This machine ({name})",
        "vendor": vendor,
        "kind": kind,
        "year": _dt.date.today().year,
        "peak_flops": peaks,
        "memory_bandwidth": bandwidth,
        "source": f"measured by core.bridge.calibrate on {_dt.date.today().isoformat()}",
        "note": "",
        "compute_notes": compute_notes,
        "efficiency": _every_class({k: v[0] for k, v in eff.items()}),
        "layer_overhead": _every_class({k: v[3] for k, v in eff.items()}),
    }
    if fresh:
        spec["alloc_threshold"], spec["alloc_bandwidth"] = fresh
    if bwd:
        spec["backward_efficiency"] = _every_class({k: v[0] for k, v in bwd.items()})
        spec["backward_overhead"] = _every_class({k: v[3] for k, v in bwd.items()})
        spec["update_overhead"] = update
        spec["train_efficiency"] = _every_class({k: v[0] for k, v in train.items()})
        spec["train_overhead"] = _every_class({k: v[3] for k, v in train.items()})
    if capacity:
        spec["memory_capacity"] = capacity

    if not machine.gpu and machine.threads > 1:
        spec["parallel_grain"], fit_err = _fit_grain(machine, spec, gate, budget.share("grain"))
        budget.finish("grain", f"parallel grain {_time(spec['parallel_grain'])} (whole networks within "
                               f"{fit_err:.0%})")
        notes.append(f"at {machine.threads} threads a layer whose work at one thread is under "
                     f"{_time(spec['parallel_grain'])} runs unsplit (fitted on {', '.join(n for n, _ in GRAIN_FIT)}: "
                     f"mean |log error| {fit_err:.0%})")
    else:
        budget.finish("grain", "parallel grain: one thread, nothing to split")
    held = _self_check(machine, spec, gate, budget.share("self_check"))
    err = statistics.median(abs(v) for v in held.values())
    if err > HELD_OUT_LIMIT:
        gate.refuse(f"the calibrated device predicts held-out networks ({', '.join(held)}) only within {err:.0%} "
                    f"(median; a steady machine gives under {HELD_OUT_LIMIT:.0%})", f"held-out error {err:.0%}")
    budget.finish("self_check", f"predicts held-out networks within {err:.0%} (median)")
    took = time.perf_counter() - budget.start

    worst, worst_spread = gate.worst
    spec["calibration"] = {"threads": machine.threads, "held_out_error": err, "held_out": held,
                           "spread": worst_spread, "spread_of": worst, "noisy": bool(gate.noisy),
                           "date": _dt.datetime.now().isoformat(timespec="seconds")}
    if gate.noisy:
        spec["calibration"]["unsteady"] = "; ".join(gate.noisy)
    notes.append(f"{'GPU' if machine.gpu else f'{machine.threads} torch thread(s)'}, budget {seconds:g} s "
                 f"(took {took:.1f} s); fp32 peak {_si(peaks['fp32'], 'FLOP/s')} (GEMM {_si(gemm_fp32, 'FLOP/s')}); "
                 f"bandwidth copy {_si(copy_bw, 'B/s')}, triad {_si(triad_bw, 'B/s')} on {nbytes / 2 ** 20:.0f} MiB "
                 f"arrays")
    if gate.noisy:
        notes.append("NOISY (kept with force): " + "; ".join(gate.noisy))
    notes.append(f"steadiest spread kept per quantity at most {worst_spread:.0%} ({worst}); predicts held-out "
                 f"networks within {err:.0%} (median; " + ", ".join(f"{k} {v:+.0%}" for k, v in held.items()) + ")")

    def detail(cls, v):
        rows = [f"{n} {e:.3g} ({r:.3g})" + (" left out" if n in v[5] else "") for n, (e, r) in v[2].items()]
        inner = f" [{', '.join(rows)}]" if len(rows) > 1 else ""
        return f"{cls} {v[0]:.3g} ({v[1]:.3g}){inner}"

    notes.append("efficiency = c / (t − m − overhead) per PALEO's sum model (achieved FLOP/s ÷ fp32 peak): "
                 + ", ".join(detail(k, v) for k, v in eff.items()))
    notes.append("overhead per layer call (a tiny layer of the class, lowest decile of its runs): "
                 + ", ".join(f"{k} {v[3] * 1e6:.1f} µs" for k, v in eff.items()))
    if bwd:
        notes.append("backward efficiency = c / (t − m − fresh − autograd's start and one node) over the suite's "
                     "backward passes: " + ", ".join(detail(k, v) for k, v in bwd.items()))
        notes.append("backward overhead per autograd node (two tiny layers' backward less one's): "
                     + ", ".join(f"{k} {v[3] * 1e6:.1f} µs" for k, v in bwd.items())
                     + f"; optimizer step per parameter tensor {update * 1e6:.2f} µs")
        notes.append("training forward (train mode, autograd recording) efficiency: "
                     + ", ".join(detail(k, v) for k, v in train.items()) + "; its overhead per layer call: "
                     + ", ".join(f"{k} {v[3] * 1e6:.1f} µs" for k, v in train.items()))
    if skipped:
        notes.append("not measured: " + ", ".join(skipped))
    spec["note"] = "; ".join(notes)
    return spec


def _out_of_bounds(eff: dict, names=("layer_overhead", "efficiency"),
                   compute_bound=COMPUTE_BOUND) -> list[tuple[str, str, float, str]]:
    """(class, field, value, why) for each fitted figure outside its sanity bounds; ``names``: the overhead and
    efficiency fields (forward's, or backward_overhead and backward_efficiency); ``compute_bound``: the classes
    whose efficiency may not exceed 1."""
    out = []
    for cls, (_, _, _, overhead, raw, *_) in eff.items():
        if overhead > OVERHEAD_MAX:
            out.append((cls, names[0], overhead, f"per layer call is above {_time(OVERHEAD_MAX)}"))
        if raw < EFFICIENCY_RANGE[0]:
            out.append((cls, names[1], raw, f"is below {EFFICIENCY_RANGE[0]:g} of the peak"))
        elif raw > EFFICIENCY_RANGE[1] and cls in compute_bound:
            out.append((cls, names[1], raw, "is above 1: faster than the measured peak"))
    return out


def _fit_grain(machine, spec: dict, gate: Gate, budget: float) -> tuple[float, float]:
    """(parallel_grain, the fit's mean |log(predicted ÷ measured)|): the ``GRAIN_GRID`` value (the smallest of
    equals) with which the fitted device predicts the ``GRAIN_FIT`` networks' forward passes best. The suite's
    layers are timed one by one and hot, where even small layers split among threads; inside a network the small
    ones do not gain (bench_predict, 2 threads on 2 cores: ShuffleNet V2 ran no faster than at 1 thread, while the
    rates fitted on large layers predicted ×1.6)."""
    from ..devices import Device
    from ..paleo import Estimate

    reports, runs = _time_networks(machine, GRAIN_FIT, gate, "grain-fit network timings", budget)
    measured = [statistics.median(t) for t in runs]
    best = None
    for grain in GRAIN_GRID:
        device = Device(**{**spec, "parallel_grain": grain, "calibration": {"threads": machine.threads}})
        err = statistics.fmean(abs(math.log(Estimate(r, device).totals["forward_s"] / t))
                               for r, t in zip(reports, measured))
        if best is None or err < best[1] - 1e-12:
            best = (grain, err)
    return best


def _self_check(machine, spec: dict, gate: Gate, budget: float) -> dict:
    """network name → predicted ÷ measured − 1 for ``HELD_OUT`` at batch 1: the fitted device's PALEO forward time
    (``core.paleo``) against the median of the network's timed forward runs on ``machine``."""
    from ..devices import Device
    from ..paleo import Estimate

    device = Device(**{**spec, "calibration": {"threads": machine.threads}})     # the count its times are for
    reports, runs = _time_networks(machine, HELD_OUT, gate, "held-out network timings", budget)
    return {name: Estimate(r, device).totals["forward_s"] / statistics.median(t) - 1
            for (name, _), r, t in zip(HELD_OUT, reports, runs)}


def _time_networks(machine, which, gate: Gate, what: str, budget: float) -> tuple[list, list]:
    """([their Reports at batch 1], [their forward run times]) of zoo networks ``which`` ((name, input shape or
    None for its own)), timed on ``machine`` through ``gate`` as one quantity ``what``."""
    from ..api import load_network
    from ..graph import compile_network
    from ..report import Report

    nets = []
    for name, shape in which:
        net = load_network(name)
        nets.append(net.with_input_shape(shape) if shape else net)

    def run():
        runs = [machine.time_network(net, 1, budget / len(nets)) for net in nets]
        return runs, runs

    runs = gate.measure(what, run)
    return [Report(compile_network(net), 1, "fp32") for net in nets], runs


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
