"""Live timing of a torch ``nn.Module``: what the model predicts, measured.

``time_module(module, input_shape, batch_size)`` times three passes separately (``core.bridge.passes``):

* ``forward``: inference, the module in eval mode under ``torch.no_grad()`` (no autograd graph kept);
* ``backward``: ``loss.backward()`` alone, in train mode, after an untimed forward (gradients set to None first);
* ``train_step``: zero_grad + forward + backward + optimizer step (SGD with momentum 0.9 unless told otherwise).

The loss is the mean of the output(s) in fp32. Each pass gets ``warmup`` untimed runs and then ``repeats`` timed ones;
the result keeps every sample and their median, min, max and inter-quartile range (IQR). Clocks and synchronisation:
``core.bridge.measuring``; per-layer timing (``per_layer=True``): ``core.bridge.passes``; peak memory, the memory
model's prediction and the achieved FLOP/s beside each pass: ``core.bridge.memory``.

Safety: with a ``report``, a run the memory model says would not fit in ``margin`` × the available memory is refused
with both numbers (``check_fits``). ``max_seconds`` bounds the run softly: once it has passed, no further warm-up or
repeat starts, but every requested pass still gets one warm-up and one timed run (``truncated`` says so). One run at
a time per process: a second concurrent call (timing or calibration) raises ``CalcError``.

Cancellation: ``cancel`` (a ``threading.Event`` or a callable returning True) is checked before every run; when set,
the run stops and raises ``Cancelled`` (a ``CalcError``: "timing cancelled ..."). The module is left as it was found:
device, dtype, train/eval mode, weights, BatchNorm statistics and gradients are restored.
"""

from __future__ import annotations

import math
import statistics
import time
from dataclasses import dataclass, field
from typing import Any, Iterable

from ..errors import CalcError, Cancelled, WontFit
from .measuring import CPU_DTYPES as CPU_DTYPES  # re-exported, as the names below: importers name them from here
from .measuring import Clock, Progress, cancelled, cpu_threads, cuda_math, one_job, torch_device, torch_dtype
from .measuring import busy as busy
from .measuring import default_threads as default_threads
from .measuring import thread_mismatch as thread_mismatch
from .memory import _MemoryProbe, check_fits, predicted_bytes
from .memory import available_memory as available_memory
from .memory import fmt_bytes as fmt_bytes
from .passes import OPTIMIZERS, _LayerHooks, _Runner

PASSES = ("forward", "backward", "train_step")


# == results ======================================================================================================

@dataclass(frozen=True)
class PassTiming:
    """Timed runs of one pass, in seconds."""

    samples: tuple[float, ...]
    median_s: float
    min_s: float
    max_s: float
    iqr_s: float              # inter-quartile range (0 with fewer than 2 samples)

    @staticmethod
    def of(samples: Iterable[float]) -> "PassTiming":
        s = tuple(float(x) for x in samples)
        if not s:
            raise CalcError("no timed samples", field="samples")
        iqr = 0.0
        if len(s) >= 2:
            q = statistics.quantiles(s, n=4, method="inclusive")
            iqr = q[2] - q[0]
        return PassTiming(s, statistics.median(s), min(s), max(s), iqr)

    def to_dict(self) -> dict:
        return {"median_s": self.median_s, "min_s": self.min_s, "max_s": self.max_s, "iqr_s": self.iqr_s,
                "samples": list(self.samples)}


@dataclass(frozen=True)
class TimingResult:
    device: str
    dtype: str
    batch_size: int
    input_shape: tuple[int, ...]
    passes: dict                          # pass name → PassTiming, in PASSES order
    layers: dict | None = None            # leaf module name → median forward seconds (hooked runs), in call order
    layer_sum_s: float | None = None      # sum of ``layers``
    hooked_forward_s: float | None = None # median whole forward in the hooked runs
    peak_memory_bytes: dict = field(default_factory=dict)   # pass → measured peak bytes
    memory_method: str = ""
    predicted_memory_bytes: dict = field(default_factory=dict)  # pass → memory model bytes (with a report)
    flops: dict = field(default_factory=dict)               # pass → FLOPs the report counts
    achieved_flops_per_s: dict = field(default_factory=dict)
    memory_check: dict | None = None      # check_fits's numbers, when a report was given
    truncated: bool = False               # max_seconds stopped repeats or warm-ups early
    threads: int | None = None
    notes: tuple[str, ...] = ()

    @property
    def whole_forward_s(self) -> float | None:
        """The whole forward the layer sum is compared with: the un-hooked forward median, else the hooked one."""
        if "forward" in self.passes:
            return self.passes["forward"].median_s
        return self.hooked_forward_s

    @property
    def layer_coverage(self) -> float | None:
        """Sum of layers ÷ whole forward (1.0: the layers account for all of it)."""
        whole = self.whole_forward_s
        return self.layer_sum_s / whole if self.layer_sum_s is not None and whole else None

    def to_dict(self) -> dict:
        return {
            "device": self.device, "dtype": self.dtype, "batch_size": self.batch_size,
            "input_shape": list(self.input_shape),
            "passes": {k: v.to_dict() for k, v in self.passes.items()},
            "layers": self.layers, "layer_sum_s": self.layer_sum_s, "hooked_forward_s": self.hooked_forward_s,
            "whole_forward_s": self.whole_forward_s, "layer_coverage": self.layer_coverage,
            "peak_memory_bytes": self.peak_memory_bytes, "memory_method": self.memory_method,
            "predicted_memory_bytes": self.predicted_memory_bytes, "flops": self.flops,
            "achieved_flops_per_s": self.achieved_flops_per_s, "memory_check": self.memory_check,
            "truncated": self.truncated, "threads": self.threads, "notes": list(self.notes),
        }


# == time_module ==================================================================================================

def _check_int(value, name: str, low: int, high: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise CalcError(f"must be an integer from {low} to {high:,}", field=name, value=value)
    return value


def _check_passes(passes) -> tuple[str, ...]:
    if isinstance(passes, str):
        passes = [p.strip() for p in passes.split(",") if p.strip()]
    bad = [p for p in passes if p not in PASSES]
    if bad or not passes:
        raise CalcError(f"choose from {', '.join(PASSES)}", field="passes", value=",".join(bad) or "")
    return tuple(p for p in PASSES if p in passes)


def time_module(module, input_shape, batch_size: int = 1, *, device: str = "cpu", dtype: str = "fp32",
                passes=PASSES, warmup: int = 2, repeats: int = 5, per_layer: bool = False,
                max_seconds: float = 60.0, progress: Progress | None = None, cancel: Any = None, report=None,
                optimizer: str | None = None, margin: float = 0.8, available_bytes: int | None = None,
                measure_memory: bool = True, threads: int | None = None) -> TimingResult:
    """Time ``module`` on a random input of ``batch_size`` × ``input_shape`` (per sample, e.g. ``(3, 224, 224)``
    or ``"3x224x224"``). See the module docstring for what each pass, figure and safeguard means.

    ``progress(fraction, message)`` is called after every run, ending with 1.0; ``cancel`` stops the run with a
    ``CalcError``. ``report``: a core ``Report`` of the same network (any batch; it is rebased to ``batch_size``)
    for the memory guard, the predicted memory and the achieved FLOP/s. ``optimizer`` for the train step defaults to
    the report's (else SGD with momentum). ``threads`` sets torch's intra-op CPU threads for the run (restored
    after); None leaves torch's count. The CLI and the app pass ``default_threads()``: the count 'local' was
    calibrated at, else None. The result's ``threads`` is the count the run used.
    """
    from ..report import Report, check_batch
    from ..shapes import parse_shape

    shape = parse_shape(input_shape)
    check_batch(batch_size)
    passes = _check_passes(passes)
    _check_int(warmup, "warmup", 0, 1000)
    _check_int(repeats, "repeats", 1, 10000)
    if isinstance(max_seconds, bool) or not isinstance(max_seconds, (int, float)) or not 0 < max_seconds <= 86400:
        raise CalcError("must be a number of seconds in (0, 86400]", field="max_seconds", value=max_seconds)
    dev = torch_device(device)          # imports torch; names a device that is not here
    tdtype = torch_dtype(dtype)
    if threads is not None:
        _check_int(threads, "threads", 1, 4096)
    if report is not None and report.batch_size != batch_size:
        report = Report(report.compiled, batch_size, report.dtype, report.optimizer)
    optimizer = optimizer or (report.optimizer if report is not None else "sgd_momentum")
    if optimizer not in OPTIMIZERS:
        raise CalcError(f"choose one of {', '.join(OPTIMIZERS)}", field="optimizer", value=optimizer)
    training = any(p != "forward" for p in passes)
    notes: list[str] = []
    memory_check = None
    if report is not None:
        memory_check = check_fits(report, available_bytes, margin, training=training, device=str(dev))
        if memory_check["available_bytes"] is None:
            notes.append("available memory unknown: the memory guard could not check this run")
        if report.dtype != dtype:
            notes.append(f"the report is {report.dtype} but the run is {dtype}: predictions use the report's")
    else:
        notes.append("no report given: memory not checked before the run, no prediction or FLOP/s")

    with one_job():
        import torch

        try:
            with cpu_threads(threads), cuda_math(torch, dev, dtype):
                return _run(module, shape, batch_size, dev, tdtype, dtype, passes, warmup, repeats, per_layer,
                            float(max_seconds), progress, cancel, report, optimizer, measure_memory, memory_check,
                            notes, torch)
        except CalcError:               # ours (cancelled, bad settings) as they are; a CalcError is a ValueError
            raise
        except torch.OutOfMemoryError:
            raise CalcError(f"{dev} ran out of memory at batch {batch_size}: reduce the batch size",
                            field="batch_size", value=batch_size) from None
        except (RuntimeError, ValueError) as e:   # the module cannot run on this input (shapes, dtypes, an op the
            # device lacks; BatchNorm refusing to train on one value per channel, e.g. Inception v3's aux head at
            # batch 1)
            first = (str(e).strip().splitlines() or [type(e).__name__])[0][:200]
            raise CalcError(f"the module failed on a {batch_size}×{'×'.join(map(str, shape))} {dtype} input on "
                            f"{dev}: {first}", field="input_shape", value=shape) from None


def _run(module, shape, batch_size, dev, tdtype, dtype, passes, warmup, repeats, per_layer, max_seconds, progress,
         cancel, report, optimizer, measure_memory, memory_check, notes, torch) -> TimingResult:
    start = time.perf_counter()
    deadline = start + max_seconds
    n_warm = max(warmup, 1 if measure_memory else 0)
    total = len(passes) * (n_warm + repeats) + ((1 + repeats) if per_layer else 0)
    done = 0
    truncated = False

    def tick(message: str):
        nonlocal done
        done += 1
        if progress is not None:
            progress(min(done / total, 0.999), message)

    def check_cancel():
        if cancelled(cancel):
            raise Cancelled(f"timing cancelled after {done} of {total} runs")

    # Remember the module's state; the run changes device, dtype, mode, weights (train step), BatchNorm statistics
    first = next((t for t in [*module.parameters(), *module.buffers()] if t.is_floating_point()), None)
    orig_device, orig_dtype = (first.device, first.dtype) if first is not None else (None, None)
    was_training = module.training
    params = list(module.parameters())
    orig_grads = [p.grad for p in params]
    for p in params:                     # measured from no gradients, as after zero_grad(set_to_none=True)
        p.grad = None
    saved = None
    if any(p != "forward" for p in passes):
        # copies in the state dict itself: its ``_metadata`` (each module's version) is what some modules' loading
        # needs (torchvision's MNASNet refuses a state dict without it)
        saved = module.state_dict()
        for k, v in saved.items():
            saved[k] = v.detach().clone()
    move = orig_device is not None and (orig_device != dev or orig_dtype != tdtype)

    clock = Clock(dev)
    probe = _MemoryProbe(dev)
    peaks: dict = {}
    samples: dict = {}
    layer_runs: list = []
    hooked: list = []
    try:
        if move:
            module.to(device=dev, dtype=tdtype)
        x = torch.randn((batch_size, *shape), device=dev, dtype=tdtype)
        runner = _Runner(module, x, optimizer, clock, torch)
        for name in passes:
            run = getattr(runner, name)
            for i in range(n_warm):
                if i < n_warm - 1 and time.perf_counter() > deadline:
                    truncated = True
                    continue
                check_cancel()
                if i == n_warm - 1 and measure_memory:
                    with probe.measure(lambda name=name: runner.resident(name), peaks, name):
                        run()
                else:
                    run()
                tick(f"{name}: warm-up {i + 1}/{n_warm}")
            got = []
            for i in range(repeats):
                if got and time.perf_counter() > deadline:
                    truncated = True
                    break
                check_cancel()
                run()
                got.append(clock.last)
                tick(f"{name}: run {i + 1}/{repeats}")
            samples[name] = PassTiming.of(got)
            runner._zero()
        runner.opt = None
        if per_layer:
            hooks = _LayerHooks(module, clock)
            try:
                module.eval()
                for i in range(1 + repeats):
                    if layer_runs and time.perf_counter() > deadline:
                        truncated = True
                        break
                    check_cancel()
                    with torch.no_grad(), clock():
                        module(x)
                    per = hooks.collect()
                    if i:                    # the first hooked run is a warm-up
                        layer_runs.append(per)
                        hooked.append(clock.last)
                    tick(f"per-layer forward {i + 1}/{1 + repeats}")
            finally:
                hooks.remove()
    finally:
        _restore(module, saved, was_training, params, orig_grads, orig_device if move else None, orig_dtype)

    layers = layer_sum = hooked_s = None
    if per_layer and layer_runs:
        names = list(dict.fromkeys(n for run in layer_runs for n in run))
        layers = {n: statistics.median(run.get(n, 0.0) for run in layer_runs) for n in names}
        layer_sum = sum(layers.values())
        hooked_s = statistics.median(hooked)
        silent = [n for n in hooks.names if n not in layers]
        if silent:
            notes.append(f"{len(silent)} leaf module(s) never called in forward: {', '.join(silent[:5])}")
    if truncated:
        notes.append(f"max_seconds ({max_seconds:g} s) reached: fewer warm-ups or repeats than asked for")
    if measure_memory and dev.type == "mps":
        notes.append("peak memory not measured on MPS")

    predicted, flops, achieved = {}, {}, {}
    if report is not None:
        t = report.totals
        count = {"forward": t["flops"], "backward": t["backward_flops"], "train_step": t["training_flops"]}
        for name in passes:
            predicted[name] = predicted_bytes(report, name)
            flops[name] = int(count[name])
            achieved[name] = count[name] / samples[name].median_s if samples[name].median_s > 0 else None
    if progress is not None:
        progress(1.0, "done")
    return TimingResult(
        device=str(dev), dtype=dtype, batch_size=batch_size, input_shape=tuple(shape), passes=samples,
        layers=layers, layer_sum_s=layer_sum, hooked_forward_s=hooked_s,
        peak_memory_bytes=peaks, memory_method=probe.method if measure_memory else "",
        predicted_memory_bytes=predicted, flops=flops, achieved_flops_per_s=achieved, memory_check=memory_check,
        truncated=truncated, threads=torch.get_num_threads() if dev.type == "cpu" else None, notes=tuple(notes))


def _restore(module, saved, was_training, params, orig_grads, orig_device, orig_dtype) -> None:
    if orig_device is not None:
        module.to(device=orig_device, dtype=orig_dtype)
    if saved is not None:
        module.load_state_dict(saved)
    for p, g in zip(params, orig_grads):
        p.grad = g
    module.train(was_training)


# == derived figures ==============================================================================================

def implied_ppp(measured_s: float, estimate) -> float:
    """The PPP at which PALEO's forward compute time equals a measured forward time:
    ``estimate.ppp × estimate.totals["forward_compute_s"] / measured_s``.

    ``forward_compute_s`` is FLOPs ÷ (peak × PPP × class efficiency), so multiplying by the estimate's own PPP makes
    the figure independent of it; on a calibrated device (with ``efficiency``) it is relative to peak × efficiency,
    so 1.0 means "as fast as the calibration predicts". The memory term is left out: this is the compute-only PPP
    that PALEO's papers fit, and it can exceed 1 where the FLOP count overstates the work (Winograd, FFT)."""
    if isinstance(measured_s, bool) or not isinstance(measured_s, (int, float)) or not measured_s > 0 \
            or math.isinf(measured_s):
        raise CalcError("must be a positive number of seconds", field="measured_s", value=measured_s)
    if estimate.variant == "predicted":     # fitted efficiencies and Winograd FLOPs: PALEO's bound stands for it
        estimate = estimate.bound
    return estimate.ppp * estimate.totals["forward_compute_s"] / measured_s


def throughput_vs_batch(module, input_shape, batches, *, passes=("forward",), report=None,
                        progress: Progress | None = None, cancel: Any = None, **kw) -> list[dict]:
    """``time_module`` at each batch size: one row per batch with the median seconds and samples/s per pass (and
    achieved FLOP/s with a ``report``). A batch the memory guard refuses ends the sweep with a row
    ``{"batch_size": b, "refused": message}``; ``cancel`` raises as in ``time_module``."""
    batches = list(batches)
    if not batches:
        raise CalcError("give at least one batch size", field="batches", value=batches)
    rows = []
    for k, b in enumerate(batches):
        def sub(fraction, message, k=k, b=b):
            if progress is not None:
                progress(min((k + fraction) / len(batches), 0.999), f"batch {b}: {message}")

        try:
            r = time_module(module, input_shape, b, passes=passes, report=report, progress=sub, cancel=cancel, **kw)
        except WontFit as e:
            rows.append({"batch_size": b, "refused": str(e)})
            break
        row: dict = {"batch_size": b}
        for name, t in r.passes.items():
            row[f"{name}_s"] = t.median_s
            row[f"{name}_samples_per_s"] = b / t.median_s if t.median_s > 0 else None
            if name in r.achieved_flops_per_s:
                row[f"{name}_flops_per_s"] = r.achieved_flops_per_s[name]
        row["truncated"] = r.truncated
        row["threads"] = r.threads
        rows.append(row)
    if progress is not None:
        progress(1.0, "done")
    return rows
