"""The PALEO time model (Qi, Sparks, Talwalkar, "Paleo: a performance model for deep neural networks", ICLR 2017).

Per layer and pass, a time is a sum of named terms (``core.terms``: compute, memory, fresh pages, overhead), each a
small function of the layer's work (``core.work``), the device and the settings. PPP, the platform percent of peak,
says how much of the datasheet figure the software reaches: 1.0 means "peak" (an optimistic bound, not a
prediction); cuDNN-class libraries come close to 1, frameworks with overhead 0.5 or less. The ``roofline`` variant
overlaps compute with memory; the fitted GPU model (``predicted``: ``core.gpu_model``, ``core.predicted``) has its
own terms; ``core.variants`` picks one for ``auto``.

A training step is forward + backward + weight update (+ gradient all-reduce across data-parallel workers,
``core.communication``). Here: ``Estimate`` (the times of one network on one device, batch, precision and settings)
and ``estimate``, which makes one from a ``Report`` or a ``Network`` (``core.report.as_report``). Many at once:
``core.sweeps``.
"""

from __future__ import annotations

from dataclasses import replace
from functools import cached_property
from math import isfinite
from typing import Any

from . import cpu_heap, gpu_model
from .choices import CONV_ALGORITHMS, DEFAULT_DTYPE, DEFAULT_OPTIMIZER, LAUNCHES, PROCESSES, VARIANTS
from .cpu_threads import calibrated_threads, small_layer_factor
from .data_parallel import DataParallel, DataParallelStep, ddp_step, paleo_step
from .devices import Device, DeviceDB, Interconnect, resolve_device, resolve_link
from .errors import CalcError, DeviceError
from .graph import NodeInfo
from .ir import Network
from .precision import Precision, optimizer
from .predicted import PredictedTimes, layer_parts, predicted_work
from .report import Report, as_report
from .roofline import RooflinePoint, passes_roofline
from .settings import DP_SETTINGS, SETTINGS, check_ppp, check_rate, check_settings, check_threads, choice
from .terms import (
    TERM_NAMES,
    TERMS,
    LayerTime,
    PassTime,
    Work,
    combine,
    limited_by_rows,
    limiting_term,
    non_finite,
    pass_efficiency,
    pass_overheads,
)
from .variants import auto_variant, predicted_asked, typical_error
from .work import (
    LayerWork,
    PassWork,
    conv_choice,
    cpu_classes,
    eager_update_bytes,
    figure,
    network_work,
    padded_elements,
    param_tensors,
    trainable_layers,
)


class Estimate:
    """Times for one network on one device at one batch size, precision and set of settings: PALEO (at PPP
    factors), the roofline variant, or the fitted GPU model (``predicted``; ``auto`` picks it where it applies).

    Every time is made by one path: works (one per layer, or one per class of work where the variant adds terms,
    which gives the same sum) → the device's terms (``TERMS``) → ``combine`` → a ``PassTime``. ``layer_times``
    and the totals use it alike, so the rows sum to the totals. The predicted variant takes the same steps on arrays
    (``_predicted``: ``predicted_work`` → ``gpu_model.kernel_seconds`` → ``PredictedTimes``), equal to the bit."""

    def __init__(self, report: Report, device: Device, *, ppp: float = 1.0, ppp_memory: float | None = None,
                 variant: str = "auto", conv_algorithm: str = "direct", fused: bool = False, workers: int = 1,
                 link: Interconnect | None = None, ppp_comm: float = 1.0, allreduce: str = "ring",
                 launch: str = "eager", threads: int | None = None, comm_model: str = "ddp", bucket_mb: float = 25.0,
                 reduce_dtype: str = "auto", input_pipeline: str = "synthetic", cpu_cores: int | None = None,
                 nodes: int = 1, node_link: Interconnect | None = None, nics: int = 1, process: str = "fresh"):
        self.report = report
        self.device = device
        self.precision: Precision = report.precision
        self.ppp = check_ppp(ppp, "ppp")
        self.ppp_memory = check_ppp(self.ppp if ppp_memory is None else ppp_memory, "ppp_memory")
        self.variant = choice(variant, VARIANTS, "variant")
        self.conv_algorithm = choice(conv_algorithm, CONV_ALGORITHMS, "conv_algorithm")
        if not isinstance(device, Device):
            raise CalcError("expected a Device (core.devices)", field="device", value=type(device).__name__)
        self.variant_reason = {"paleo": "PALEO, as asked", "roofline": "roofline: max(compute, memory), as asked",
                               "predicted": "predicted, as asked"}.get(self.variant, "")
        if self.variant == "auto":
            self.variant, self.variant_reason = auto_variant(device, self.precision.compute, self.ppp,
                                                             self.ppp_memory, self.conv_algorithm)
        self.parallel = DataParallel(workers, link, ppp_comm, allreduce, comm_model, bucket_mb, reduce_dtype,
                                     input_pipeline, cpu_cores, nodes, node_link, nics)
        self.workers, self.link, self.ppp_comm, self.allreduce = workers, link, float(ppp_comm), allreduce
        self.launch, self.process = choice(launch, LAUNCHES, "launch"), choice(process, PROCESSES, "process")
        self.fused = bool(fused)
        check_threads(threads, device)
        # the torch thread count the times are for: a calibrated CPU's (None: datasheet figures or a GPU)
        self.threads = calibrated_threads(device)
        self.peak = device.peak(self.precision.compute)          # raises, naming the precisions it has
        self.bandwidth = device.memory_bandwidth
        check_rate(self.peak, device, f"peak_flops.{self.precision.compute}")
        check_rate(self.bandwidth, device, "memory_bandwidth")
        self.model_params: dict | None = None
        if self.variant == "predicted":       # core.gpu_model: fitted per architecture generation
            if self.variant_reason == "predicted, as asked":
                self.variant_reason = predicted_asked(device, self.precision.compute)
            if self.conv_algorithm != "direct":
                raise CalcError("the predicted variant picks the convolution algorithm itself (Winograd for 3×3 "
                                "stride-1 convolutions in fp32); leave conv_algorithm at direct",
                                field="conv_algorithm", value=self.conv_algorithm)
            if self.ppp != 1 or self.ppp_memory != 1:
                raise CalcError("the predicted variant uses its fitted efficiencies, not a PPP; a PPP is classic "
                                "PALEO (variant paleo)", field="ppp" if self.ppp != 1 else "ppp_memory",
                                value=self.ppp if self.ppp != 1 else self.ppp_memory)
            self.model_params = gpu_model.generation_params(device)
            # CUDA Graphs replay a captured pass: the host's per-kernel cost (the overhead term) is not paid
            self.terms = tuple(t for t in gpu_model.terms() if self.launch == "eager" or t.name != "overhead")
        else:
            if self.launch != "eager":      # a calibrated device's cost per call is a measurement: it stays
                self.variant_reason += "; CUDA Graphs change the predicted model only"
            self.terms = tuple(t for t in TERMS if t.applies(device))
        # a calibrated CPU at more than one thread: layers too small to split run at one thread's speed
        split = self.variant != "predicted" and (self.threads or 1) > 1
        self.grain = (device.parallel_grain or 0.0) if split else 0.0
        self.class_grain = device.class_grain if split else {}      # class of work → its own grain
        self.work = network_work(report.compiled, self.fused)
        # a calibrated CPU's class per layer where PyTorch runs some convs as im2col + GEMM; None: each its own
        self.cpu_classes = None if self.variant == "predicted" or device.kind != "CPU" else \
            cpu_classes(self.work.layers, report.batch_size, device.efficiency)

    # -- one path: work → terms → combine -----------------------------------------------------------------------
    def _has(self, term: str) -> bool:
        return any(t.name == term for t in self.terms)

    def time(self, w: Work) -> PassTime:
        """The time of ``w`` on this device: each of the device's terms, combined by the variant."""
        s = dict.fromkeys(TERM_NAMES, 0.0)
        groups = {"compute": 0.0, "memory": 0.0, "serial": 0.0}
        for t in self.terms:
            try:
                v = s[t.name] = t.seconds(w, self)
            except (OverflowError, ZeroDivisionError):
                v = float("inf")
            if not isfinite(v):
                self._non_finite(t.name, w)
            groups[t.group] += v
        grain = figure(self.class_grain, w.work_class, self.grain) if self.class_grain else self.grain
        if grain and not w.update:
            f = small_layer_factor(groups["compute"] + groups["memory"], self.threads, grain)
            if f != 1.0:
                for k in ("compute", "memory", "fresh_pages"):
                    s[k] *= f
                groups["compute"] *= f
                groups["memory"] *= f
        total = combine(self.variant, groups["compute"], groups["memory"], groups["serial"])
        if not isfinite(total):
            self._non_finite("total", w)
        return PassTime(w.flops, w.bytes, w.fresh_bytes, s["compute"], s["memory"], s["fresh_pages"], s["overhead"],
                        total)

    def _non_finite(self, term: str, w: Work):
        non_finite(self, term, w)

    def _at_batch(self, pw: PassWork, work_class: str | None, flops: float, fresh: int = 0,
                  backward: bool = False, train: bool = False, padded: int = 0) -> Work:
        n, p = self.report.batch_size, self.precision
        return Work(work_class, flops, (pw.act * p.activation + pw.xbytes) * n + pw.weights * p.weight, fresh,
                    pw.calls, backward=backward, train=train, weight_bytes=pw.weights * p.weight, padded=padded)

    def _flops(self, lw: LayerWork, per_sample: int) -> float:
        """FLOPs at this batch with the chosen conv algorithm (backward convs change by the forward's factor)."""
        n, info = self.report.batch_size, lw.node
        if self.variant == "predicted" and info.cost.flops and gpu_model.uses_winograd(info, self.precision.compute):
            per, per_batch = info.rule.algorithms(info.ctx, "winograd")
            return per_sample * n * (per * n + per_batch) / (info.cost.flops * n)
        if self.conv_algorithm == "direct" or info.rule.algorithms is None or not info.cost.flops:
            return per_sample * n
        _, alg = conv_choice(info, self.conv_algorithm, n)
        return per_sample * n * alg / (info.cost.flops * n)

    @cached_property
    def fresh_bytes(self) -> tuple[int, ...]:
        """Per node, the forward pass's bytes written to fresh pages where the device has the fresh-page term (a
        calibrated Linux CPU: ``alloc_threshold`` is glibc's largest mmap threshold): glibc's malloc replayed over
        the pass (``core.cpu_heap``); zeros elsewhere (a GPU's caching allocator reuses its memory)."""
        if not self._has("fresh_pages"):
            return (0,) * len(self.work.layers)
        p = self.precision
        return cpu_heap.fresh_bytes(self.report.compiled, self.report.batch_size, p.activation, p.weight,
                                    int(self.device.alloc_threshold), warm=self.process == "warm")

    def _algorithm(self, info: NodeInfo) -> str:
        if self.variant == "predicted":
            return "winograd" if gpu_model.uses_winograd(info, self.precision.compute) else "direct"
        return conv_choice(info, self.conv_algorithm, self.report.batch_size)[0]

    @cached_property
    def backward_fresh_bytes(self) -> tuple[int, ...]:
        """Per node, the backward pass's bytes written to fresh pages (``cpu_heap.backward_fresh_bytes``), on a
        calibrated Linux CPU that has backward figures (``backward_efficiency``; one calibrated before them keeps its
        estimates); zeros elsewhere."""
        d = self.device
        if not (self._has("fresh_pages") and d.backward_efficiency):
            return (0,) * len(self.work.layers)
        p = self.precision
        return cpu_heap.backward_fresh_bytes(self.report.compiled, self.report.batch_size, p.activation, p.weight,
                                             d.alloc_threshold)

    @cached_property
    def padded(self) -> tuple[int, ...]:
        """Per layer, a forward's elements in padded oneDNN layouts (``padded_elements``) on a CPU calibrated with
        ``padded_layout`` (its fp32 figure), else zeros."""
        pl, n = self.device.padded_layout, len(self.work.layers)
        if not pl or self.variant == "predicted" or self.device.kind != "CPU" or self.precision.activation != 4:
            return (0,) * n
        return padded_elements(self.work.layers, self.report.batch_size, pl["block"])

    @cached_property
    def layer_classes(self) -> tuple[str, ...]:
        """Each layer's class of work: its rule's, or on a calibrated CPU the im2col path's (``cpu_classes``)."""
        return self.cpu_classes or tuple(lw.work_class for lw in self.work.layers)

    def _layer_works(self, which: str) -> list[Work]:
        fresh = self.fresh_bytes if which == "forward" else self.backward_fresh_bytes
        padded = self.padded if which == "forward" else (0,) * len(fresh)
        works = [self._at_batch(getattr(lw, which), c, self._flops(lw, getattr(lw, which).flops), f,
                                which == "backward", padded=e)
                 for lw, c, f, e in zip(self.work.layers, self.layer_classes, fresh, padded)]
        if self.variant == "predicted":
            return [w for parts in self._layer_parts(which, works) for w in parts]
        return works

    def _layer_parts(self, which: str, works: list[Work] | None = None) -> list[tuple[Work, ...]]:
        """The predicted variant's works per layer (``predicted.layer_parts``)."""
        src = "forward" if which == "train_forward" else which
        if works is None:
            works = [self._at_batch(getattr(lw, src), lw.work_class, self._flops(lw, getattr(lw, src).flops))
                     for lw in self.work.layers]
        return layer_parts(self.work.layers, works, which, self.report.compiled, self.report.batch_size,
                           self.precision, self.stem_on_cuda_cores)

    def _pass(self, which: str) -> PassTime:
        """A pass's total. PALEO adds its terms, so layers whose class of work the device gives the same figures
        (efficiency, per-call overhead) can be timed as one work: the same sum, a few divisions instead of one per
        layer. The roofline variant takes a max per layer. ``which``: forward, backward, or train_forward (the
        forward's work at a calibrated CPU's training-forward figures, or the predicted variant's
        ``_layer_parts("train_forward")``)."""
        train = which == "train_forward"
        if train:
            which = "forward"
        if self.variant == "predicted":     # the layers' rows added (a layer may be two kernels)
            if self._predicted is not None:
                return self._predicted.pass_time("train_forward" if train else which)
            if train:
                return sum((sum(k, PassTime()) for k in self._train_forward_kernels()), PassTime())
            return sum((getattr(lt, which) for lt in self.layer_times), PassTime())
        if self.variant == "roofline" or self.grain or self.class_grain or self.cpu_classes:   # a size decides
            works = self._layer_works(which)
            if train:
                works = [replace(w, train=True) for w in works]
        else:
            dev, n = self.device, self.report.batch_size
            by_class = self.work.forward_by_class if which == "forward" else self.work.backward_by_class
            back = which == "backward"
            if pass_efficiency(dev, back, train) or pass_overheads(dev, back, train):
                group: dict[str, str | None] = {}      # class of work → the class that stands for its figures
                seen: dict[tuple, str] = {}
                for c in by_class:
                    key = (figure(pass_efficiency(dev, back, train), c, 1.0),
                           figure(pass_overheads(dev, back, train), c, 0.0))
                    group[c] = seen.setdefault(key, c)
                merged: dict[str | None, PassWork] = {}
                for c, pw in by_class.items():
                    merged[group[c]] = merged[group[c]] + pw if group[c] in merged else pw
            else:                                       # no figures by class: every layer at the same rates
                group = dict.fromkeys(by_class)
                merged = {None: self.work.forward_total if which == "forward" else self.work.backward_total}
            flops = {c: pw.flops * n for c, pw in merged.items()}
            fresh, padded = dict.fromkeys(merged, 0), dict.fromkeys(merged, 0)
            if self.conv_algorithm != "direct":
                flops = dict.fromkeys(merged, 0)
                for lw in self.work.layers:
                    flops[group[lw.work_class]] += self._flops(lw, getattr(lw, which).flops)
            if self._has("fresh_pages"):
                for lw, f in zip(self.work.layers, self.backward_fresh_bytes if back else self.fresh_bytes):
                    fresh[group[lw.work_class]] += f
            if not back and any(self.padded):
                for lw, e in zip(self.work.layers, self.padded):
                    padded[group[lw.work_class]] += e
            works = [self._at_batch(pw, c, flops[c], fresh[c], back, train, padded[c]) for c, pw in merged.items()]
        return sum((self.time(w) for w in works), PassTime())

    @cached_property
    def forward(self) -> PassTime:
        return self._pass("forward")

    @cached_property
    def backward(self) -> PassTime:
        return self._pass("backward")

    @cached_property
    def train_forward(self) -> PassTime:
        """A training step's forward: train mode with autograd recording, at a calibrated CPU's training-forward
        figures (``train_efficiency``, ``train_overhead``; its forward runs ~1.3–2× the inference one on our
        machine), or in the predicted variant each call at the fitted ``autograd_overhead``; the inference forward
        where the device has neither."""
        d = self.device
        if self.variant == "predicted":
            return self._pass("train_forward")
        if not (d.train_efficiency or d.train_overhead):
            return self.forward
        return self._pass("train_forward")

    def _train_forward_kernels(self) -> list[tuple[PassTime, ...]]:
        """The predicted variant's training-forward time per layer and kernel, one ``Work`` at a time: the
        forward's works under autograd (``gpu_model.overhead_s``; the reference path)."""
        return [tuple(self.time(w) for w in parts) for parts in self._layer_parts("train_forward")]

    @property
    def train_forward_basis(self) -> str:
        """Why a training step's forward differs from the inference one, in words (the CLI and the app show it)."""
        if self.variant != "predicted":
            return "calibrated"
        factor = self.model_params.get("autograd_overhead", 1.0)
        if factor != 1.0 and self._has("overhead"):
            return f"each kernel call's overhead × {factor:.2f}, the fitted autograd factor"
        return "as the inference forward"

    @cached_property
    def update(self) -> PassTime:
        """The optimizer step on every trainable parameter, as the optimizer's table counts it."""
        return self.time(self.update_work())

    def update_work(self) -> Work:
        """The optimizer step's work."""
        p, opt = self.precision, optimizer(self.report.optimizer)
        trainable = self.report.compiled.trainable
        nbytes = trainable * (opt.weight_accesses * (p.master or p.weight) + opt.grad_accesses * p.grad
                              + (opt.state_accesses * p.state if opt.states else 0))
        # the predicted variant: one kernel call per layer that holds trainable parameters (eager per-parameter loop)
        calls = trainable_layers(self.report.compiled) if self.variant == "predicted" else 0
        if self.variant != "predicted" and self.device.update_overhead:
            # a calibrated CPU: torch.optim's per-parameter loop pays a fixed cost per parameter tensor, and its
            # kernels one by one move more than the table's fused update
            return Work(None, opt.update_flops * trainable, eager_update_bytes(trainable, p, opt.name),
                        calls=sum(param_tensors(lw.node) for lw in self.work.layers), update=True)
        return Work(None, opt.update_flops * trainable, nbytes, calls=calls)

    @cached_property
    def data_parallel(self) -> DataParallelStep | None:
        """What data parallelism and a real-data input pipeline add to the step (``core.data_parallel``); None for
        one worker on synthetic data."""
        dp = self.parallel
        if not dp.active:
            return None
        compute = self.train_forward.total_s + self.backward.total_s + self.update.total_s
        n = self.report.batch_size
        if dp.comm_model == "paleo":
            return paleo_step(self.report.compiled.trainable, compute, n, dp, self.precision)
        layers = [(lt.name, lt.backward.total_s, lw.node.params.trainable)
                  for lt, lw in zip(self.layer_times, self.work.layers)]
        return ddp_step(layers, compute, n, dp, self.precision, host_s=self.host_s)

    @cached_property
    def host_s(self) -> float:
        """Seconds the host spends issuing a training step's kernels: the per-call overhead of the step's forward
        and backward, from the fitted GPU model on a GPU it covers (whatever this estimate's variant), else this
        estimate's own (a calibrated CPU's; 0 under PALEO on a datasheet device)."""
        src = self
        if self.variant != "predicted" and self.device.kind == "GPU":
            try:
                src = Estimate(self.report, self.device, variant="predicted", fused=self.fused, launch=self.launch)
            except CalcError:
                pass
        return src.train_forward.overhead_s + src.backward.overhead_s

    @property
    def communication_s(self) -> float:
        """What the gradients' exchange adds to a training step (``data_parallel``)."""
        return self.data_parallel.communication_s if self.data_parallel else 0.0

    @cached_property
    def cuda_core_peak(self) -> float:
        """The predicted variant's peak for kernels on CUDA cores (``gpu_model.on_cuda_cores``: a depthwise conv's
        backward; ``gpu_model.stem_conv``: a conv over ≤ 3 channels in a tensor-core precision, where the device
        has this peak, ``stem_on_cuda_cores``): the device's fp32 peak (fp64's for fp64). Asked only of a network
        that has such a kernel; a device without that peak is an error naming the figure."""
        field = gpu_model.cuda_core_precision(self.precision.compute)
        peak = self.device.peak_flops.get(field)
        if peak is None:
            raise DeviceError(f"a depthwise convolution's backward runs on CUDA cores at the {field} peak, and "
                              f"{self.device.name} has none (it has {', '.join(self.device.precisions)})",
                              node=self.device.id, field=f"peak_flops.{field}", value=None)
        check_rate(peak, self.device, f"peak_flops.{field}")
        return peak

    @cached_property
    def stem_on_cuda_cores(self) -> bool:
        """Whether a stem conv's kernels (``gpu_model.stem_conv``) run on CUDA cores here: in a tensor-core
        precision, on a device with the CUDA-core peak. A device with only half-precision peaks (one a user
        describes) keeps the tensor-core rule for them."""
        return self.precision.compute in gpu_model.TENSOR_FACTOR and \
            gpu_model.cuda_core_precision(self.precision.compute) in self.device.peak_flops

    @cached_property
    def _predicted(self) -> PredictedTimes | None:
        """The predicted variant's times from arrays (``predicted_work``, ``gpu_model.kernel_seconds``): the
        per-work path's numbers, fast. None for the other variants, and where a time is not a finite number (the
        per-work path then raises the error that names the work and the figure)."""
        if self.variant != "predicted":
            return None
        work = predicted_work(self.report.compiled, self.fused, self.report.batch_size, self.precision)
        if work is None:
            return None
        kernels = work.kernels
        if kernels.stem.any() and not self.stem_on_cuda_cores:     # no CUDA-core peak: the tensor-core rule
            kernels = replace(kernels, stem=kernels.stem & False)
        args = (kernels, self.peak, self.bandwidth, self.model_params, self.precision.compute,
                self.device.sm_count, self._has("overhead"))
        core = self.cuda_core_peak if kernels.stem.any() or kernels.cuda_core.any() and \
            "depthwise_backward" in self.model_params else None
        rate = {"core_peak": core, "cycles": gpu_model.sm_cycles(self.device), "activation": self.precision.activation}
        seconds = gpu_model.kernel_seconds(*args, **rate)
        train = gpu_model.kernel_seconds(*args, train=True, **rate)   # its first L: a training step's forward
        if seconds is None or train is None:
            return None
        return PredictedTimes(work, seconds, train)

    @cached_property
    def layer_times(self) -> tuple[LayerTime, ...]:
        if self._predicted is not None:
            return self._predicted.layer_times(self.work.layers)
        return self._layer_times_by_work()

    def _layer_times_by_work(self) -> tuple[LayerTime, ...]:
        """Every layer's times, one ``Work`` at a time through ``time``: the reference path (the predicted variant
        takes ``_predicted`` where it can, the same numbers)."""
        if self.variant == "predicted":     # a layer's pass may be several kernels (dgrad, wgrad, casts): their sum
            fk, bk = ([tuple(self.time(w) for w in parts) for parts in self._layer_parts(which)]
                      for which in ("forward", "backward"))
            fwd, bwd = ([sum(k, PassTime()) for k in kernels] for kernels in (fk, bk))
            fk, bk = ([k if len(k) > 1 else () for k in kernels] for kernels in (fk, bk))
        else:
            fwd, bwd = ([self.time(w) for w in self._layer_works(which)] for which in ("forward", "backward"))
            fk = bk = [()] * len(fwd)
        return tuple(LayerTime(lw.node.name, lw.node.op, c,
                               self._algorithm(lw.node) if lw.node.rule.algorithms else None, f, b, k, kf)
                     for lw, c, f, b, k, kf in zip(self.work.layers, self.layer_classes, fwd, bwd, bk, fk))

    # -- public results (JSON keys are a contract: python -m core estimate --json) -----------------------------
    @cached_property
    def totals(self) -> dict:
        """Times in seconds, always finite (settings that would make one infinite raise ``CalcError``).
        ``samples_per_s`` and ``inference_samples_per_s`` are None where the time they divide by is 0: a network
        that does no work (a single flatten, a view) has no throughput to state (JSON null)."""
        fwd, bwd, upd = self.forward, self.backward, self.update
        r = self.report
        dp = self.data_parallel
        step = self.train_forward.total_s + bwd.total_s + upd.total_s + self.communication_s + \
            (dp.input_wait_s if dp else 0.0)
        if not isfinite(step):
            self._non_finite("total", Work(None, fwd.flops + bwd.flops + upd.flops,
                                           fwd.bytes + bwd.bytes + upd.bytes))
        n = r.batch_size
        return {
            "forward_s": fwd.total_s, "forward_compute_s": fwd.compute_s,
            "forward_memory_s": fwd.memory_s + fwd.fresh_pages_s,      # fresh-page time included
            "forward_overhead_s": fwd.overhead_s,
            "forward_fresh_bytes": fwd.fresh_bytes, "forward_fresh_s": fwd.fresh_pages_s,
            "backward_s": bwd.total_s, "backward_compute_s": bwd.compute_s,
            "backward_memory_s": bwd.memory_s + bwd.fresh_pages_s, "backward_overhead_s": bwd.overhead_s,
            "update_s": upd.total_s, "communication_s": self.communication_s,
            "training_forward_s": self.train_forward.total_s,
            "training_step_s": step,
            "samples_per_s": n * self.workers / step if step else None,     # training throughput, all workers
            "inference_samples_per_s": n / fwd.total_s if fwd.total_s else None,
            "forward_flops": fwd.flops, "forward_bytes": fwd.bytes, "backward_flops": bwd.flops,
            "backward_bytes": bwd.bytes, "update_flops": upd.flops, "update_bytes": upd.bytes,
            "batch_size": n, "workers": self.workers,
            "fits_in_memory": (r.totals["training_bytes"] <= self.device.memory_capacity)
            if self.device.memory_capacity else None,
        } | ({"input_wait_s": dp.input_wait_s} if dp and dp.reads_data else {})

    @cached_property
    def roofline(self) -> dict:
        return passes_roofline(self.report.name, self.totals, self.peak, self.bandwidth)

    @cached_property
    def layers(self) -> list[dict]:
        """One row per layer (the JSON's "layers"), from ``layer_times``."""
        total_fwd = self.totals["forward_s"] or 1.0
        rows = []
        for lt in self.layer_times:
            f, b = lt.forward, lt.backward
            fwd_pt = RooflinePoint.of(lt.name, f.flops, f.bytes, self.peak, self.bandwidth)
            bwd_pt = RooflinePoint.of(lt.name, b.flops, b.bytes, self.peak, self.bandwidth)
            rows.append({
                "name": lt.name, "op": lt.op, "conv_algorithm": lt.conv_algorithm,
                "forward_flops": f.flops, "forward_bytes": f.bytes, "forward_compute_s": f.compute_s,
                "forward_memory_s": f.memory_s + f.fresh_pages_s, "forward_s": f.total_s,
                "share": f.total_s / total_fwd,
                "arithmetic_intensity": fwd_pt.intensity, "attainable_flop_per_s": fwd_pt.attainable,
                "bound": fwd_pt.bound,
                "backward_flops": b.flops, "backward_bytes": b.bytes, "backward_s": b.total_s,
                "backward_arithmetic_intensity": bwd_pt.intensity, "backward_bound": bwd_pt.bound,
                "limited_by": limiting_term(f), "backward_limited_by": limiting_term(b),
            })
        return rows

    @cached_property
    def bound(self) -> "Estimate | None":
        """Beside a prediction: classic PALEO at PPP 1 with the same settings, "the bound": each layer's FLOPs at
        the datasheet peak plus its bytes at the datasheet bandwidth. Not a hard floor: Winograd does fewer FLOPs
        and a GPU overlaps compute with memory. None for the other variants."""
        if self.variant != "predicted":
            return None
        return Estimate(self.report, self.device, variant="paleo", fused=self.fused, launch=self.launch,
                        **self.parallel.kwargs())

    @cached_property
    def typical_error(self) -> dict | None:
        """The predicted model's held-out error (``typical_error``); None for the other variants."""
        return typical_error(self.device, self.report.batch_size) if self.variant == "predicted" else None

    @cached_property
    def limited_by(self) -> dict:
        """Per pass, the seconds of the layers each term limits (a kernel's whole time goes to the term that sets
        it, ``limiting_term``: compute, memory or overhead; "none" for layers that take no time). A pass's values add
        up to its time; under PALEO's sum they say which term each layer is mostly."""
        if self._predicted is not None:
            return self._predicted.limited_by()
        out = limited_by_rows(self.layer_times)
        if self.variant == "predicted":         # a training step's forward, each layer to its limiting term
            acc = dict.fromkeys(("compute", "memory", "overhead", "none"), 0.0)
            for t in (t for kernels in self._train_forward_kernels() for t in kernels):
                acc[limiting_term(t)] += t.total_s
            out = {"forward": out["forward"], "train_forward": acc, "backward": out["backward"]}
        return out

    @property
    def overhead_share(self) -> float:
        """The share of the forward time in layers that launch overhead limits (0 for a pass that takes no time)."""
        fwd = self.totals["forward_s"]
        return self.limited_by["forward"]["overhead"] / fwd if fwd else 0.0

    def to_dict(self) -> dict:
        bound = self.bound
        return {
            "model": self.report.name, "input_shape": list(self.report.input_shape),
            "batch_size": self.report.batch_size, "dtype": self.report.dtype, "device": self.device.id,
            "device_name": self.device.name, "ppp": self.ppp, "ppp_memory": self.ppp_memory,
            # a prediction picks each conv's algorithm as the library would (each layer row names it)
            "variant": self.variant,
            "conv_algorithm": "library" if self.variant == "predicted" else self.conv_algorithm,
            "fused": self.fused, "launch": self.launch, "process": self.process,
            "workers": self.workers, "link": self.link.id if self.link else None,
            "totals": self.totals, "roofline": self.roofline, "layers": self.layers,
            "variant_reason": self.variant_reason, "typical_error": self.typical_error,
            "bound": {k: bound.totals[k] for k in ("forward_s", "backward_s", "update_s", "training_step_s")}
            if bound else None,
            "limited_by": self.limited_by, "threads": self.threads,
            "calibration": dict(self.device.calibration) if self.device.calibration else None,
        } | ({"data_parallel": self.data_parallel.to_dict()} if self.data_parallel else {})


def estimate(model: Report | Network, device: Any, batch_size: int = 1, dtype: str = DEFAULT_DTYPE, *,
             ppp: float = 1.0, ppp_memory: float | None = None, optimizer: str = DEFAULT_OPTIMIZER,
             variant: str = "auto", conv_algorithm: str = "direct", fused: bool = False, workers: int = 1,
             link: Any = None, ppp_comm: float = 1.0, allreduce: str = "ring", launch: str = "eager",
             threads: int | None = None, db: DeviceDB | None = None, node_link: Any = None, process: str = "fresh",
             **parallel) -> Estimate:
    """Time estimate of ``model`` (a Report or a Network) on ``device`` (id, name or Device). ``variant`` "auto":
    the fitted GPU model where it applies (``auto_variant``), else PALEO. ``threads``: the torch CPU thread count
    asked for; a calibrated CPU predicts only the count it was calibrated at (``calibration.threads``), any other
    is refused, naming both."""
    report = as_report(model, batch_size, dtype, optimizer)
    dev = resolve_device(device, db)
    lk, nk = (resolve_link(x, db, f) for x, f in ((link, "link"), (node_link, "node_link")))
    check_settings(parallel, taken=tuple(k for k in SETTINGS if k not in DP_SETTINGS) + ("node_link",))
    return Estimate(report, dev, ppp=ppp, ppp_memory=ppp_memory, variant=variant, conv_algorithm=conv_algorithm,
                    fused=fused, workers=workers, link=lk, ppp_comm=ppp_comm, allreduce=allreduce, launch=launch,
                    threads=threads, node_link=nk, process=process, **parallel)
