"""Calibration: measure this machine with torch and save it as the user device ``local``.

``calibrate(seconds=30)`` times micro-benchmarks (``core.bridge.calibrate_suites``) through a noise gate
(``core.bridge.noise_gate``), fits the device's figures (``core.bridge.calibrate_fit``), checks them on held-out
networks and returns a device spec; ``save_local(spec)`` adds it to the user's device file (``--device local``).

The model fitted is ``core.paleo``'s: a layer of class k takes

    t = c / efficiency[k] + m + fresh / alloc_bandwidth + layer_overhead[k],   c = FLOPs / peak_flops["fp32"],
    m = bytes / memory_bandwidth,   fresh = bytes written to new pages (blocks above ``alloc_threshold``).

``peak_flops`` per dtype is the best median ``torch.mm`` rate; ``memory_bandwidth`` the larger of STREAM copy and
triad; ``alloc_bandwidth`` the fresh bytes a ReLU faults in over its time less its traffic (Linux CPU); a class's
``layer_overhead`` its tiny layer's lowest-decile time; its ``efficiency`` = Σc / Σ(t − m − fresh − overhead) over a
suite of common layer shapes, clamped to [1e-4, 1]. On a CPU the backward (``backward_efficiency``,
``backward_overhead`` per autograd node) and the training forward (``train_efficiency``, ``train_overhead``) are
fitted the same way, with ``update_overhead`` per parameter tensor of an optimizer step, ``weight_bandwidth``: the
rate a forward reads a conv's (oneDNN's, or PyTorch's im2col path: "im2col_conv") or linear layer's weights at
where they outgrow the caches, and ``backward_weight_bandwidth``: a backward's. Above one thread, a grain g: a layer's
time is max(w, min(threads × w, g)), w its work at the threads' rates (``GrainSampler``: dense convs' and linear
layers' in ``class_grain``, the rest's ``parallel_grain``).
A quantity whose runs spread above ``SPREAD_LIMIT``, or a figure out of its bounds, is re-measured, then refused
(``Unsteady``) unless ``force``; ``calibration.held_out_error`` is the median |predicted ÷ measured − 1| on
``HELD_OUT``: above ``SELF_CHECK_SAVE`` saved with a warning, above ``SELF_CHECK_LIMIT`` timed again, then refused.
What is measured and how, the budget, the limits and the figures behind them: docs/cpu-calibration.md.
"""

from __future__ import annotations

import datetime as _dt
import statistics
import time
from pathlib import Path
from typing import Any

from ..cpu_threads import SELF_CHECK_LIMIT, SELF_CHECK_SAVE
from ..devices import PRECISION_KEYS
from ..errors import CalcError, Cancelled
from .calibrate_fit import (
    BUSY_SPEEDUP,
    DENSE_CLASSES,
    GrainSampler,
    _efficiencies,
    _every_class,
    _fit_with_weight_rates,
    _layer_flops,
    _padded_seconds,
    _weight_bandwidths,
)
from .calibrate_suites import (
    _MM_DTYPES,
    BACKWARD_BOTH_BATCHES,
    GRAIN_FIT,
    HELD_OUT,
    TRAINING_ONLY,
    UPDATE_CASES,
    _class_cases,
    _padded_probes,
    _time_networks,
    _TorchMachine,
    _weight_probes,
    channel_block,
)
from .measuring import Progress, cancelled, cpu_threads, cuda_math, one_job, torch_device
from .noise_gate import COMPUTE_BOUND, OVERHEAD_MAX, OVERHEAD_SPREAD_LIMIT, Gate, _out_of_bounds, _time, percentile
from .noise_gate import Unsteady as Unsteady  # re-exported: the error calibrate raises, named from here

CALIBRATION_DTYPES = tuple(k for k in PRECISION_KEYS if k in _MM_DTYPES)

LOW_PERCENTILE = 0.10         # a fixed cost per call: the lowest decile of its runs
EMULATED_BELOW = 10           # a bf16/fp16 peak under 1/10 of fp32's: the CPU has no instructions for it
STAGES = {"gemm": 0.22, "bandwidth": 0.14, "layers": 0.26, "backward": 0.20, "grain": 0.08, "self_check": 0.10}


class _Budget:
    """Weighted stages sharing a deadline: each stage gets its weight's share of the time still left."""

    def __init__(self, seconds: float, weights: dict, progress: Progress | None, cancel: Any):
        self.start = time.perf_counter()
        self.deadline = self.start + seconds
        self.left = dict(weights)
        self.total = sum(weights.values())
        self.progress, self.cancel = progress, cancel

    def share(self, stage: str) -> float:
        if cancelled(self.cancel):
            raise Cancelled("calibration cancelled")
        remaining = max(self.deadline - time.perf_counter(), 0.0)
        return remaining * self.left[stage] / sum(self.left.values())

    def finish(self, stage: str, message: str) -> None:
        self.left.pop(stage)
        if self.progress is not None:
            done = self.total - sum(self.left.values())
            self.progress(min(done / self.total, 0.999) if self.left else 1.0, message)


def _si(v: float, unit: str) -> str:
    for factor, prefix in ((1e12, "T"), (1e9, "G"), (1e6, "M")):
        if abs(v) >= factor:
            return f"{v / factor:.3g} {prefix}{unit}"
    return f"{v:.3g} {unit}"


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


def _padded_layout(machine, gate: Gate, budget: float) -> dict | None:
    """A CPU's ``padded_layout``: its oneDNN channel block (``channel_block``, from the host's ISA) and the cost per
    element of copying a tensor whose channels do not fill it (``_padded_probes``); None on a GPU or an unknown ISA."""
    block = 0 if machine.gpu else channel_block(getattr(machine, "host", dict)().get("isa", ""))
    if not block:
        return None
    pair = _padded_probes()

    def copies():
        runs = [machine.time_layer(net, 1, attrs, budget / len(pair))[0] for net, attrs in pair]
        return runs, runs

    return {"block": block, "seconds": _padded_seconds(pair, gate.measure("padded-layout timings", copies))}


def _calibrate(machine, seconds: float, progress, dtypes, cancel, gate: Gate) -> dict:
    """The stages over ``machine`` (``_TorchMachine`` or a test's fake): measure through ``gate``, fit, check the
    fitted figures' bounds, self-check on ``HELD_OUT``; returns the spec."""
    weights = {f"gemm_{d}": STAGES["gemm"] * (2 if d == "fp32" else 1) / (len(dtypes) + 1) for d in dtypes}
    weights.update({k: v for k, v in STAGES.items() if k != "gemm"})
    budget = _Budget(seconds, weights, progress, cancel)
    peaks, notes, compute_notes, skipped = {}, [], {}, []
    # the grain's samples, between the stages below (GRAIN_SAMPLES of them): a CPU at more than one thread only
    grain = GrainSampler(machine, budget.share("grain")) if not machine.gpu and machine.threads > 1 else None
    sample = grain.sample if grain else (lambda: None)
    sample()
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
    for d in ("bf16", "fp16"):
        if d in peaks and "fp32" in peaks and peaks[d] * EMULATED_BELOW < peaks["fp32"]:
            compute_notes[d] = (f"emulated on this CPU: its {d} matrix multiply reaches "
                                f"1/{peaks['fp32'] / peaks[d]:.0f} of fp32's rate (no {d} instructions used); "
                                + compute_notes[d])

    sample()
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
    sample()

    cases = _class_cases(machine.gpu)
    end = time.perf_counter() + budget.share("layers")
    weight_bw: dict = {}        # class → the rate a CPU reads its large weights at (measured after the suites)
    cache = None if machine.gpu else getattr(machine, "cache_bytes", lambda: None)()     # its last-level cache
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
        do_layers = do_layers and bool(suite)       # a tiny layer only (im2col_conv): its fallback's efficiency

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
            timed[cls] = [gate.measure(f"{cls} per-layer overhead timings", overhead, OVERHEAD_SPREAD_LIMIT,
                                       low=True)
                          if do_overhead else old[0],
                          *(gate.measure(f"{cls} layer timings", layers) if do_layers else (old or [None])[1:])]
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
            picked = suite if cls in BACKWARD_BOTH_BATCHES + TRAINING_ONLY else suite[::2]
            runs = [machine.time_backward(net, b, attrs, per_layer) for net, b, attrs in picked]
            return ([r[0] for r in runs] + [r[2] for r in runs],
                    ([median_row(net, b, r[0], r[1]) for (net, b, _), r in zip(picked, runs)],
                     [median_row(net, b, r[2], r[3]) for (net, b, _), r in zip(picked, runs)]))

        ov = (gate.measure(f"{cls} backward per-node overhead timings", back_overhead,
                           OVERHEAD_SPREAD_LIMIT, low=True)
              if do_overhead
              else (timed_bwd[cls][0], timed_train[cls][0]))
        rows = (gate.measure(f"{cls} backward layer timings", back_layers) if do_layers
                else (timed_bwd.get(cls, [None])[1:], timed_train.get(cls, [None])[1:]))
        timed_bwd[cls], timed_train[cls] = [ov[0], *rows[0]], [ov[1], *rows[1]]

    inference = [c for c in cases if c not in TRAINING_ONLY]      # the others take their fallback's figures
    for k, cls in enumerate(inference):
        measure_class(cls, max(end - time.perf_counter(), 0.0) / (len(inference) - k) / len(cases[cls]))

    gemm_fp32 = peaks["fp32"]

    def fit():
        # no layer outruns the peak: if one did, the GEMM runs were disturbed. Not a GPU's convolutions: cuDNN runs a
        # 3×3 one as Winograd or FFT, fewer multiplies than the engine counts (docs/cpu-calibration.md: an H200's)
        for cls in ("linear",) if machine.gpu else [c for c in COMPUTE_BOUND if c in timed]:
            for network, batch, t, _ in timed[cls][1:]:
                rate = _layer_flops(network, batch) / t
                if rate > peaks["fp32"]:
                    peaks["fp32"] = rate
                    compute_notes["fp32"] = (f"{cls} layer {_si(rate, 'FLOP/s')}, faster than "
                                             f"torch.mm's {_si(gemm_fp32, 'FLOP/s')}")
        return _efficiencies(timed, peaks["fp32"], bandwidth, fresh, weight_bandwidth=weight_bw, cache_bytes=cache)

    def checked(fit, names: tuple) -> dict:
        """``fit()`` within the sanity bounds: re-measure a class out of them, then refuse naming the field. The
        backward suite runs at the first batch only, where the linear layers (a classifier head at batch 1) are
        memory-bound: only the convs (conv, pointwise_conv) are held to at most 1 there. On a GPU conv is clamped
        instead (cuDNN's Winograd)."""
        bound = COMPUTE_BOUND if names[1] == "efficiency" else ("conv", "pointwise_conv")
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
    if not machine.gpu:     # a CPU's large weights (oneDNN reorders a conv's every call): how fast they are read
        probes = _weight_probes()
        each = max(end - time.perf_counter(), budget.share("layers") * 0.1) / len(probes)

        def weights():
            runs = {cls: machine.time_layer(net, b, attrs, each)[0] for cls, (net, b, attrs) in probes.items()}
            return list(runs.values()), runs

        probe_runs = gate.measure("weight-reading timings", weights)
        _fit_with_weight_rates(fit, lambda e: _weight_bandwidths(probes, probe_runs, e, peaks["fp32"], bandwidth),
                               weight_bw)
        if weight_bw:       # the suites' efficiencies again, their weights read at that rate as an estimate reads them
            eff = checked(fit, ("layer_overhead", "efficiency"))
    sample()
    padded = _padded_layout(machine, gate, budget.share("layers") * 0.05)
    budget.finish("layers", "efficiencies: " + ", ".join(f"{k} {v[0]:.2f}" for k, v in eff.items())
                  + "".join(f"; {k} weights read at {_si(v, 'B/s')}" for k, v in weight_bw.items()))

    bwd, train, update = None, None, None
    share = budget.share("backward")
    back_weight_bw: dict = {}   # class → the rate a CPU's backward moves its large weights and their gradients at
    if not machine.gpu:     # the CPU's backward and optimizer step (a GPU's are the fitted GPU model's)
        end = time.perf_counter() + share * 0.8
        for k, cls in enumerate(cases):
            # runs per class: the suite's backward cases (every one, or the first batch's half) and two tiny chains
            every = cls in BACKWARD_BOTH_BATCHES + TRAINING_ONLY
            runs = (len(cases[cls]) - 1 if every else len(cases[cls]) // 2) + 2
            measure_class(cls, max(end - time.perf_counter(), 0.0) / (len(cases) - k) / runs,
                          ("backward_overhead", "backward_efficiency"))
        def fit_bwd():
            return _efficiencies(timed_bwd, peaks["fp32"], bandwidth, fresh, backward=True,
                                 weight_bandwidth=back_weight_bw)

        bwd = checked(fit_bwd, ("backward_overhead", "backward_efficiency"))

        def back_weights():     # the probes' backward: weights read, their gradients written
            each = share * 0.1 / len(probes)
            runs = {cls: machine.time_backward(net, b, attrs, each)[:2] for cls, (net, b, attrs) in probes.items()}
            return [t for t, _ in runs.values()], {cls: list(zip(t, f)) for cls, (t, f) in runs.items()}

        back_runs = gate.measure("backward weight timings", back_weights)
        _fit_with_weight_rates(fit_bwd, lambda e: _weight_bandwidths(probes, back_runs, e, peaks["fp32"], bandwidth,
                                                                     True, fresh[1] if fresh else None),
                               back_weight_bw)
        if back_weight_bw:      # the backward suites' efficiencies again, as an estimate reads their weights
            bwd = checked(fit_bwd, ("backward_overhead", "backward_efficiency"))
        train = checked(lambda: _efficiencies(timed_train, peaks["fp32"], bandwidth, fresh, weight_bandwidth=weight_bw,
                                              cache_bytes=cache), ("train_overhead", "train_efficiency"))

        def step():
            many = machine.optimizer_step(*UPDATE_CASES[0], share * 0.05)
            few = machine.optimizer_step(*UPDATE_CASES[1], share * 0.05)
            cost = percentile(many, LOW_PERCENTILE) - percentile(few, LOW_PERCENTILE)
            return [many, few], max(cost / (UPDATE_CASES[0][0] - UPDATE_CASES[1][0]), 0.0)

        for _ in range(gate.retries + 1):
            update = gate.measure("optimizer step timings", step, OVERHEAD_SPREAD_LIMIT, low=True)  # lowest deciles
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
    if padded:
        spec["padded_layout"] = padded
        notes.append(f"oneDNN copies a conv's tensor whose channels are not a multiple of {padded['block']} at "
                     f"{padded['seconds'] * 1e9:.2f} ns per element")
    if weight_bw:
        spec["weight_bandwidth"] = weight_bw
        notes.append("weights read at " + ", ".join(f"{k} {_si(v, 'B/s')}" for k, v in weight_bw.items())
                     + f" (a {'/'.join(weight_bw)} layer whose weights outgrow the caches, beyond its compute; the "
                     f"bandwidth is {_si(bandwidth, 'B/s')})")
    if cache:
        spec["cache_bytes"] = cache
        notes.append(f"a forward reads a linear layer's weights that fit in the {cache / 2 ** 20:g} MiB last-level "
                     "cache at the bandwidth")
    if back_weight_bw:
        spec["backward_weight_bandwidth"] = back_weight_bw
        notes.append("a backward moves its large weights and their gradients at "
                     + ", ".join(f"{k} {_si(v, 'B/s')}" for k, v in back_weight_bw.items()))
    if bwd:
        spec["backward_efficiency"] = _every_class({k: v[0] for k, v in bwd.items()})
        spec["backward_overhead"] = _every_class({k: v[3] for k, v in bwd.items()})
        spec["update_overhead"] = update
        spec["train_efficiency"] = _every_class({k: v[0] for k, v in train.items()})
        spec["train_overhead"] = _every_class({k: v[3] for k, v in train.items()})
    if capacity:
        spec["memory_capacity"] = capacity

    if grain:
        sample()
        speedups = grain.speedups()
        if statistics.median(speedups.values()) < BUSY_SPEEDUP:
            gate.refuse(f"at its best, {machine.threads} threads ran whole networks slower than one ("
                        + ", ".join(f"{k} ×{v:.2f}" for k, v in speedups.items()) + ")",
                        f"thread speed-up ×{statistics.median(speedups.values()):.2f}")
        grains, fit_err = grain.fit(spec)
        spec.update(grains)
        both = (f"{_time(grains['class_grain'][DENSE_CLASSES[0]])} for dense convs and linear layers, "
                f"{_time(grains['parallel_grain'])} for the rest")
        budget.finish("grain", f"parallel grain {both} (the threads' gain within {fit_err:.0%})")
        notes.append(f"at {machine.threads} threads a layer whose work at one thread is under its grain runs unsplit: "
                     f"{both} "
                     f"(fitted on what {', '.join(n for n, _ in GRAIN_FIT)} gain from {machine.threads} threads over "
                     f"one, each at its fastest of {len(grain.samples)} samples: mean |log error| {fit_err:.0%})")
    else:
        budget.finish("grain", "parallel grain: one thread, nothing to split")
    share = budget.share("self_check")
    held = _self_check(machine, spec, gate, share)
    err = statistics.median(abs(v) for v in held.values())
    verdict = self_check_verdict(err)
    if verdict == "again":      # timed once more: a disturbed timing, or a device that predicts this badly
        held = _self_check(machine, spec, gate, share)
        err = statistics.median(abs(v) for v in held.values())
        verdict = self_check_verdict(err, again=True)
    if verdict == "refuse":
        gate.refuse(f"the calibrated device predicts held-out networks ({', '.join(held)}) only within {err:.0%} "
                    f"(median, timed twice; saved up to {SELF_CHECK_LIMIT:.0%})", f"self-check ±{err:.0%}")
    budget.finish("self_check", f"self-check: predicts held-out networks within {err:.0%} (median)"
                  + (f", above {SELF_CHECK_SAVE:.0%}: saved with a warning" if err > SELF_CHECK_SAVE else ""))
    took = time.perf_counter() - budget.start

    worst, worst_spread = gate.worst
    spec["calibration"] = {"threads": machine.threads, "held_out_error": err, "held_out": held,
                           "spread": worst_spread, "spread_of": worst, "noisy": bool(gate.noisy),
                           "date": _dt.datetime.now().isoformat(timespec="seconds"),
                           "host": getattr(machine, "host", dict)()}
    if gate.noisy:
        spec["calibration"]["unsteady"] = "; ".join(gate.noisy)
    notes.append(f"{'GPU' if machine.gpu else f'{machine.threads} torch thread(s)'}, budget {seconds:g} s "
                 f"(took {took:.1f} s); fp32 peak {_si(peaks['fp32'], 'FLOP/s')} (GEMM {_si(gemm_fp32, 'FLOP/s')}); "
                 f"bandwidth copy {_si(copy_bw, 'B/s')}, triad {_si(triad_bw, 'B/s')} on {nbytes / 2 ** 20:.0f} MiB "
                 f"arrays")
    if gate.noisy:
        notes.append("NOISY (kept with force): " + "; ".join(gate.noisy))
    notes.append(f"steadiest spread kept per quantity at most {worst_spread:.0%} ({worst}); predicts held-out "
                 f"networks within {err:.0%} (median; " + ", ".join(f"{k} {v:+.0%}" for k, v in held.items()) + ")"
                 + (f", above {SELF_CHECK_SAVE:.0%}: saved with a warning" if err > SELF_CHECK_SAVE else ""))

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


def self_check_verdict(err: float, again: bool = False) -> str:
    """What a self-check's median |error| ``err`` decides: "save" (≤ ``SELF_CHECK_SAVE``), "warn" (saved, every
    estimate carrying it, ≤ ``SELF_CHECK_LIMIT``), above: "again" (time the held-out networks once more) or, when
    it was ``again`` already, "refuse" (saved only with --force, marked noisy)."""
    if err <= SELF_CHECK_SAVE:
        return "save"
    if err <= SELF_CHECK_LIMIT:
        return "warn"
    return "refuse" if again else "again"


def _self_check(machine, spec: dict, gate: Gate, budget: float) -> dict:
    """network name → predicted ÷ measured − 1 for ``HELD_OUT`` at batch 1: the fitted device's PALEO forward time
    (``core.paleo``) against the median of the network's timed forward runs on ``machine``."""
    from ..devices import Device
    from ..paleo import Estimate

    device = Device(**{**spec, "calibration": {"threads": machine.threads}})     # the count its times are for
    reports, runs = _time_networks(machine, HELD_OUT, gate, "held-out network timings", budget)
    return {name: Estimate(r, device).totals["forward_s"] / statistics.median(t) - 1
            for (name, _), r, t in zip(HELD_OUT, reports, runs)}


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
