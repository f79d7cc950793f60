"""Fitting calibration's figures from its timings, the way ``core.paleo`` uses them.

A class's efficiency is the factor that makes PALEO's sum ``c / efficiency + m + fresh + overhead`` reproduce its
suite's measured time ``t``: ``Σc / Σ(t − m − fresh − overhead)`` over the suite, clamped to [1e-4, 1]. The engine
counts each layer's FLOPs and bytes and splits its forward time (or backward, ``_backward_cost``), at the measured
fp32 peak and bandwidth, into compute ``c`` and memory ``m``; ``fresh`` is the run's counted fresh-page bytes at the
page-fault rate; ``overhead`` the class's tiny layer. A layer ``OUTLIER_FACTOR`` times below its class's median
(``OUTLIER_CLASSES`` only) is left out. ``_every_class`` gives a class without a suite its fallback's figure;
``GrainSampler`` fits ``parallel_grain`` on how much whole networks gain from the threads;
``_padded_seconds`` reads a padded layout's cost per element off a pair of convs.
More, with the figures behind each choice: docs/cpu-calibration.md.
"""

from __future__ import annotations

import math
import statistics

from ..registry import WORK_CLASSES, numel, work_fallbacks
from ..work import figure, in_classes
from .calibrate_suites import GRAIN_FIT, GRAIN_SAMPLES, _input_grad, load_networks

# a suite layer whose efficiency is this many times below its class's median is left out of the class's figure:
# Σc ÷ Σ(t − …) is time-weighted, so one disturbed run of a large layer would decide it (docs/cpu-calibration.md,
# "Notes from the code": what it did)
OUTLIER_FACTOR = 10.0
# only where the figure is a compute rate: for the memory-bound classes it is what is left of a layer's time after
# its bytes at the STREAM bandwidth, which differs by 10× and more between layers that are all steady (a ReLU that
# stays in cache beats the bandwidth: 1; a global average pool: 0.01–0.09)
OUTLIER_CLASSES = ("conv", "pointwise_conv", "grouped_conv", "depthwise_conv", "depthwise_conv_large", "linear")
GRAIN_GRID = (0.0,) + tuple(10e-6 * 1.25 ** k for k in range(28))     # 0, then 10 µs … ~4 ms
UNSPLIT = 1.0       # the field's largest grain, above any GRAIN_FIT layer's work: every layer on one thread
# the GRAIN_FIT networks' median speed-up from the threads (fastest samples) below which another process holds a core:
# on the AMD EPYC VM beside a busy loop 0.38–0.76 per network; quiet, its slow state 0.63–1.09 (median 0.82–1.04)
BUSY_SPEEDUP = 0.8


def _every_class(measured: dict) -> dict:
    """A figure for every class of work (``core.registry.WORK_CLASSES``): the measured one, or for a class without
    a suite of its own (shape: concat and pad are copies) its fallback's (``WORK_FALLBACK``), as the engine would
    take it anyway."""
    return {c: next(measured[f] for f in work_fallbacks(c) if f in measured) for c in WORK_CLASSES}


# == fitting ======================================================================================================

def _one_layer_work(network, backward: bool):
    """The engine's work of a one-layer case in a pass; a backward's with its input gradient switched on where the
    timed input requires one (``_input_grad``), as ``core.work`` counts the layer inside a network."""
    import dataclasses

    from ..graph import compile_network
    from ..work import layer_work

    node = compile_network(network).nodes[0]
    if not backward:
        return layer_work(node, False).forward
    node = dataclasses.replace(node, grad_in=(_input_grad(network),) * len(node.inputs), needs_grad=True)
    return layer_work(node, False).backward


def _backward_cost(network, batch: int, peak: float, bandwidth: float,
                   weight_bandwidth: dict | None = None, cls: str | None = None) -> tuple[float, float, float]:
    """(compute s, memory s, FLOPs) of a one-layer case's backward at fp32, at ``peak`` and ``bandwidth``; the
    weights and their gradients at the class's (or its fallback's) ``backward_weight_bandwidth`` where it has one."""
    w = _one_layer_work(network, True)
    flops, rate = w.flops * batch, figure(weight_bandwidth or {}, cls, None) or bandwidth
    return flops / peak, (w.act * 4 + w.xbytes) * batch / bandwidth + w.weights * 4 / rate, flops


WEIGHT_SLOWER = 0.9       # a class's weights read below this share of the bandwidth get a rate of their own


def _weight_bandwidths(probes: dict, runs: dict, eff: dict, peak: float, bandwidth: float,
                       backward: bool = False, fault_rate: float | None = None) -> dict:
    """class → the rate its weights are read at, from ``calibrate_suites._weight_probes``' runs (class → run
    seconds; a ``backward``'s: (seconds, fresh bytes) per run): at the median run, weight bytes W over what is left
    of its time t after compute at the class's efficiency, the other bytes at the bandwidth, the fresh pages at
    ``fault_rate`` and the per-call overhead, W ÷ (t − c / (peak · efficiency) − m_other − fresh − overhead). A
    backward's W is its weights and their gradients (``backward_weight_bandwidth``; a forward's:
    ``weight_bandwidth``). Only a class that moves them below ``WEIGHT_SLOWER`` × the bandwidth gets one."""
    out = {}
    for cls, (network, batch, _) in probes.items():
        pairs = runs[cls] if backward else [(t, 0) for t in runs[cls]]
        t, fresh = sorted(pairs)[(len(pairs) - 1) // 2]       # the median run (the lower of two middles)
        w = _one_layer_work(network, backward)
        weights, other = w.weights * 4, (w.act * 4 + w.xbytes) * batch
        left = (t - w.flops * batch / (peak * eff[cls][0]) - other / bandwidth - eff[cls][3]
                - (fresh / fault_rate if fault_rate else 0.0))
        if left > 0 and weights / left < WEIGHT_SLOWER * bandwidth:
            out[cls] = weights / left
    return out


def _padded_seconds(probes: tuple, runs: list) -> float:
    """Seconds per element of a padded layout's copies, from ``calibrate_suites._padded_probes``' run times (63
    channels, then 64): the difference of their median runs over the elements of the 63-channel input and output,
    0 where the 63-channel conv was not slower."""
    network = probes[0][0]
    elements = 2 * numel(network.inputs[0][1])          # a depthwise conv's output is its input's shape
    return max(statistics.median(runs[0]) - statistics.median(runs[1]), 0.0) / elements


WEIGHT_ROUNDS = 10        # rate ↔ efficiency rounds: each rate is read at the efficiencies its previous value gave


def _fit_with_weight_rates(fit, read_rates, rates: dict) -> dict:
    """The efficiencies ``fit()`` gives with the weight rates ``read_rates(eff)`` reads off the probes at those
    efficiencies (``rates``, which ``fit`` reads, is filled in place): a probe's rate is what is left of its time
    after compute at its class's efficiency, and that efficiency is fitted with the suite's weights at the rate, so
    the two are solved together, round after round until no rate moves by 0.1 % (at most ``WEIGHT_ROUNDS``)."""
    eff = fit()
    for _ in range(WEIGHT_ROUNDS):
        new = read_rates(eff)
        if new.keys() == rates.keys() and all(abs(new[k] / rates[k] - 1) < 1e-3 for k in new):
            break
        rates.clear()
        rates.update(new)
        eff = fit()
    return eff


def _efficiencies(timed: dict, peak: float, bandwidth: float, fresh: tuple | None = None,
                  backward: bool = False, weight_bandwidth: dict | None = None,
                  cache_bytes: float | None = None) -> dict:
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
    in the sixth figure. ``weight_bandwidth``: the class's weights at their measured rate, as an estimate reads them
    (a backward's: ``backward_weight_bandwidth``; those that fit in ``cache_bytes`` as ``core.terms`` reads them).
    """
    from ..devices import Device
    from ..graph import compile_network
    from ..paleo import Estimate
    from ..report import Report

    probe = Device(id="local", name="calibration", vendor="-", kind="CPU", year=2000, peak_flops={"fp32": peak},
                   memory_bandwidth=bandwidth, source="-", efficiency={"conv": 1.0, "im2col_conv": 1.0},
                   weight_bandwidth=dict(weight_bandwidth or {}), cache_bytes=cache_bytes)
    fault_rate = fresh[1] if fresh else None
    out = {}
    for cls, (tiny, *layers) in timed.items():
        overhead = tiny[2]
        fixed = overhead if tiny[3] is None else tiny[3]
        per, sums = {}, [0.0, 0.0, 0.0, 0.0]          # compute, time left for compute, FLOPs, time
        rows = []
        for k, (network, batch, t, fresh_bytes) in enumerate(layers):
            if backward:
                c, m, flops = _backward_cost(network, batch, peak, bandwidth, weight_bandwidth, cls)
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
    for cls, (_, *layers) in timed.items():      # a tiny layer only: its fallback's efficiency, its own overhead
        fb = next((c for c in work_fallbacks(cls)[1:] if c in out), None)
        if not layers and fb:
            out[cls] = (*out[fb][:2], {}, out[cls][3], out[fb][4], ())
    return out


def _layer_flops(network, batch: int) -> int:
    from ..graph import compile_network

    return compile_network(network).flops * batch


# the classes whose layers get a grain of their own, ``class_grain`` (their fallbacks too: pointwise and im2col convs):
# dense convs and linear layers split well from a smaller size than depthwise and grouped convs, elementwise, shape
# and pooling layers (docs/cpu-calibration.md, "A grain per class of work")
DENSE_CLASSES = ("conv", "linear")


class GrainSampler:
    """``parallel_grain`` and ``class_grain`` from how much the ``GRAIN_FIT`` networks gain from the threads:
    ``sample()``, called between calibration's stages, times each at the machine's threads and at one (a warm-up
    and two runs each), up to ``GRAIN_SAMPLES`` times; ``fit(spec)`` takes each network's fastest sample at either
    count, the machine at its best, and picks two ``GRAIN_GRID`` values (the smallest of equals), one for the
    ``DENSE_CLASSES`` and one for the rest, with which the device predicts those gains best: its forward at the
    grains ÷ with every layer unsplit (one thread's time, as the grain's rule has it), against the measured time at
    the threads ÷ at one. Returns ({"parallel_grain": the rest's, "class_grain": the dense classes'}, mean
    |log(predicted ÷ measured gain)|).

    A ratio of one network's own times is what the grain decides; the model's level for that network cancels in
    it, as does a slow spell that falls on both timings. On an AMD EPYC VM small networks at 2 threads switch
    between two speeds every 10–30 s while one thread stays steady (docs/cpu-calibration.md, "The grain and the
    VM's two states"): the fastest of samples spread over the calibration reads the faster, which protocol (b)'s
    medians follow. One grain for every class could not fit both networks of depthwise convs at 224×224 and
    networks of dense convs at 64×64: the first want ~200 µs, the second 60–120 µs."""

    def __init__(self, machine, budget: float):
        self.machine = machine
        self.nets = load_networks(GRAIN_FIT)
        self.each = budget / GRAIN_SAMPLES / len(self.nets) / 2
        self.samples: list = []         # per sample, per network: (median seconds at the threads, at one)

    def sample(self) -> None:
        if len(self.samples) >= GRAIN_SAMPLES:
            return
        m = self.machine
        self.samples.append([tuple(statistics.median(m.time_network(net, 1, self.each, n, min_runs=2, warmup=1))
                                   for n in (m.threads, 1)) for net in self.nets])

    def speedups(self) -> dict:
        """network name → its time at one thread ÷ at the machine's threads, each its fastest sample."""
        return {net.name: v for net, v in zip(self.nets, self._speedups())}

    def _speedups(self) -> list:
        return [min(s[k][1] for s in self.samples) / min(s[k][0] for s in self.samples) for k in range(len(self.nets))]

    def fit(self, spec: dict) -> tuple[dict, float]:
        from ..devices import Device
        from ..graph import compile_network
        from ..paleo import Estimate
        from ..report import Report

        reports = [Report(compile_network(net), 1, "fp32") for net in self.nets]
        gains = [-math.log(v) for v in self._speedups()]

        def parts(grain):       # per network: forward seconds of its dense-class layers, of the others
            device = Device(**{**spec, "parallel_grain": grain, "class_grain": {},
                               "calibration": {"threads": self.machine.threads}})
            out = []
            for r in reports:
                sums = {True: [], False: []}
                for lt in Estimate(r, device).layer_times:
                    sums[in_classes(lt.work_class, DENSE_CLASSES)].append(lt.forward.total_s)
                out.append((math.fsum(sums[True]), math.fsum(sums[False])))
            return out

        unsplit = [d + o for d, o in parts(UNSPLIT)]
        by_grain = [parts(g) for g in GRAIN_GRID]
        fitted = None
        for i, dense in enumerate(GRAIN_GRID):
            for j, rest in enumerate(GRAIN_GRID):
                err = statistics.fmean(abs(math.log((by_grain[i][k][0] + by_grain[j][k][1]) / u) - g)
                                       for k, (u, g) in enumerate(zip(unsplit, gains)))
                if fitted is None or err < fitted[1] - 1e-12:
                    fitted = ({"parallel_grain": rest, "class_grain": dict.fromkeys(DENSE_CLASSES, dense)}, err)
        return fitted
