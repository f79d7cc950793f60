"""Live timing of a torch ``nn.Module``: what the model predicts, measured.

``time_module(module, input_shape, batch_size)`` times three passes separately:

* ``forward``: inference, the module in eval mode under ``torch.no_grad()`` (no autograd graph kept);
* ``backward``: ``loss.backward()`` alone, in train mode, after an untimed forward (gradients set to None first);
* ``train_step``: zero_grad + forward + backward + optimizer step (SGD with momentum 0.9 unless told otherwise).

The loss is the mean of the output(s) in fp32. Each pass gets ``warmup`` untimed runs and then ``repeats`` timed ones;
the result keeps every sample and their median, min, max and inter-quartile range (IQR). Synchronisation: on CUDA,
``torch.cuda.Event(enable_timing=True)`` pairs around the run after a ``torch.cuda.synchronize()``; on MPS,
``torch.mps.synchronize()`` before and after a ``time.perf_counter`` interval; on CPU the interval alone (CPU ops are
synchronous).

Per-layer timing (``per_layer=True``) runs extra hooked forwards: a forward pre-hook and a forward hook on every leaf
module (a module without children) read the clock (synchronising first on a GPU, or recording CUDA events). The sum
of the layers is shown next to the whole forward: they differ, as PALEO (Qi et al. 2017) and Lu et al. (2017,
"Modeling the resource requirements of convolutional neural networks on mobile devices") point out, by the work no
leaf module owns (functional ops such as ``torch.flatten`` or ``out += identity`` in a forward), Python and dispatch
overhead between layers, the hooks' own cost, and caches that are warm or cold depending on what ran before.

Peak memory is measured during the last warm-up run of each pass (its time is discarded anyway), so it costs no extra
run: on CUDA ``torch.cuda.max_memory_allocated`` after ``reset_peak_memory_stats`` (every tensor on that device,
including the module's weights); on CPU, from ``torch.profiler`` with ``profile_memory=True``: the allocation and free
records (bytes, signed) are sorted by time and summed, the largest running sum is the peak growth during the run,
and the bytes already resident when it starts (parameters, buffers, optimizer state, the input; gradients are set
to None before each pass, as ``zero_grad(set_to_none=True)`` does) are added. MPS has no peak counter: no figure.
With a ``report`` (a core ``Report``; rebased to this batch size), each pass shows the memory model's prediction
next to it (forward: ``inference_bytes``; backward: ``training_bytes`` less the optimizer state, which backward does
not allocate; train step: ``training_bytes``) and the achieved FLOP/s (the report's FLOPs ÷ the median: forward
``flops``, backward ``backward_flops``, train step ``training_flops``; the optimizer's few FLOPs per weight are left
out).

Safety: with a ``report``, a run the memory model says would not fit in ``margin`` × the available memory is refused
with both numbers (``check_fits``). ``max_seconds`` bounds the run softly: once it has passed, no further warm-up or
repeat starts, but every requested pass still gets one warm-up and one timed run (``truncated`` says so). One run at
a time per process: a second concurrent call (timing or calibration) raises ``CalcError``.

Cancellation: ``cancel`` (a ``threading.Event`` or a callable returning True) is checked before every run; when set,
the run stops and raises ``Cancelled`` (a ``CalcError``: "timing cancelled ..."). The module is left as it was found:
device, dtype, train/eval mode, weights, BatchNorm statistics and gradients are restored.
"""

from __future__ import annotations

import contextlib
import math
import os
import statistics
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable

from ..errors import CalcError, Cancelled, WontFit
from ..precision import OPTIMIZERS as _OPTIMIZER_TABLE
from ..units import format_bytes

PASSES = ("forward", "backward", "train_step")
# the formats live timing runs in → the torch dtype that stores them (tf32 is fp32 storage: a CUDA math mode)
TORCH_DTYPES = {"fp32": "float32", "tf32": "float32", "fp64": "float64", "bf16": "bfloat16", "fp16": "float16"}
DTYPES = tuple(TORCH_DTYPES)
CPU_DTYPES = tuple(d for d in DTYPES if d != "tf32")      # tf32 exists on CUDA tensor cores only
Progress = Callable[[float, str], None]

_LOCK = threading.Lock()


# == one job per process ==========================================================================================

@contextlib.contextmanager
def one_job():
    """Hold the process-wide measurement lock; a second concurrent timing or calibration run is refused."""
    if not _LOCK.acquire(blocking=False):
        raise CalcError("a timing run is already in progress in this process; wait for it to finish "
                        "(measurements run one at a time)")
    try:
        yield
    finally:
        _LOCK.release()


def busy() -> bool:
    """Whether a timing or calibration run holds the lock now."""
    return _LOCK.locked()


@contextlib.contextmanager
def cpu_threads(n: int | None):
    """Run with ``n`` torch intra-op threads (None: leave as is), restoring the previous number after."""
    import torch

    before = torch.get_num_threads()
    if n is not None:
        torch.set_num_threads(n)
    try:
        yield
    finally:
        if n is not None:
            torch.set_num_threads(before)


def default_threads(db=None, device: str = "cpu") -> tuple[int | None, str]:
    """The torch CPU thread count a timing runs at when none is asked for, and why: on the CPU, the count the
    device ``local`` (this machine, ``python -m core calibrate``) was calibrated at, so a run and its prediction
    match; else torch's default (None: left as torch has it), which is also what ``calibrate`` uses by default.
    ``db``: the devices to look in (default ``core.devices.load_devices()``). torch is not imported."""
    from ..cpu_threads import calibrated_threads

    if _device_kind(device) != "cpu":
        return None, "torch's default"
    if db is None:
        from ..devices import load_devices

        db = load_devices()
    local = db.devices.get("local")
    n = calibrated_threads(local) if local is not None else None
    return (n, "the count 'local' was calibrated at") if n else (None, "torch's default")


def thread_mismatch(threads: int | None, device) -> str | None:
    """None when a run at ``threads`` torch threads can be compared with ``device``'s predictions; else why not:
    the device is a CPU calibrated at another count (``calibration.threads``), and its predictions hold at that
    count only."""
    from ..cpu_threads import calibrated_threads

    have = calibrated_threads(device) if device is not None else None
    if have is None or threads is None or threads == have:
        return None
    return (f"{device.name} was calibrated at {have} torch thread(s) but this run used {threads}: its predictions "
            f"are for {have} thread(s); time at {have}, or calibrate again at {threads}")


def _cancelled(cancel: Any) -> bool:
    if cancel is None:
        return False
    if hasattr(cancel, "is_set"):
        return bool(cancel.is_set())
    return bool(cancel())


# == memory guard =================================================================================================

def fmt_bytes(b: float) -> str:
    return format_bytes(b, 1)


def available_memory(device: str = "cpu") -> int | None:
    """Bytes free for a new job: CUDA ``mem_get_info`` (free), MPS the recommended maximum less what the driver
    holds, CPU ``MemAvailable`` from /proc/meminfo (Linux; reclaimable cache counts as available), else
    ``os.sysconf('SC_AVPHYS_PAGES')`` × page size. None where none of these exist."""
    kind = _device_kind(device)
    if kind == "cuda":
        import torch

        try:
            return int(torch.cuda.mem_get_info(torch.device(device))[0])
        except (RuntimeError, AssertionError, ValueError):     # no CUDA here, or no such GPU
            return None
    if kind == "mps":
        import torch

        try:
            return int(torch.mps.recommended_max_memory() - torch.mps.driver_allocated_memory())
        except (AttributeError, RuntimeError):
            return None
    try:
        with open("/proc/meminfo", encoding="ascii") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    try:
        return int(os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE"))
    except (AttributeError, ValueError, OSError):
        return None


def predicted_bytes(report, pass_name: str) -> int:
    """The memory model's peak for one pass (see the module docstring)."""
    t = report.totals
    if pass_name == "forward":
        return int(t["inference_bytes"])
    if pass_name == "backward":
        return int(t["training_bytes"] - t["optimizer_bytes"])
    return int(t["training_bytes"])


def check_fits(report, available_bytes: int | None = None, margin: float = 0.8, *, training: bool = True,
               device: str = "cpu") -> dict:
    """Refuse (``WontFit``, a ``CalcError``, with both numbers) a run that the memory model says needs more than
    ``margin`` × the available memory: ``training_bytes`` when ``training``, else ``inference_bytes``.
    ``available_bytes`` defaults to ``available_memory(device)``; if that is unknown nothing is refused. Returns the
    numbers it compared."""
    if isinstance(margin, bool) or not isinstance(margin, (int, float)) or not 0 < margin <= 1:
        raise CalcError("must be a number in (0, 1]", field="margin", value=margin)
    key = "training_bytes" if training else "inference_bytes"
    needed = int(report.totals[key])
    avail = available_memory(device) if available_bytes is None else int(available_bytes)
    out = {"needed_bytes": needed, "available_bytes": avail, "margin": float(margin), "what": key}
    if avail is not None and needed > margin * avail:
        what = "training" if training else "inference"
        raise WontFit(f"the memory model says {what} at batch {report.batch_size} needs {fmt_bytes(needed)}, "
                      f"{fmt_bytes(avail)} available (at most {margin:.0%} of it may be used): "
                      f"reduce the batch size or the input", field="batch_size", value=report.batch_size)
    return out


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


# == devices and clocks ===========================================================================================

def _device_kind(device: Any) -> str:
    kind = str(device).split(":")[0].strip().lower()
    if kind not in ("cpu", "cuda", "mps"):
        raise CalcError("choose cpu, cuda, cuda:N or mps", field="device", value=device)
    return kind


def torch_device(device: Any):
    """A ``torch.device`` that exists here; ``CalcError`` naming it otherwise."""
    import torch

    kind = _device_kind(device)
    if kind == "cuda" and not torch.cuda.is_available():
        raise CalcError("CUDA is not available on this machine", field="device", value=str(device))
    if kind == "mps" and not (getattr(torch.backends, "mps", None) and torch.backends.mps.is_available()):
        raise CalcError("MPS is not available on this machine", field="device", value=str(device))
    try:
        return torch.device(str(device).strip().lower())
    except RuntimeError as e:
        raise CalcError(str(e), field="device", value=str(device)) from None


def torch_dtype(name: str):
    import torch

    if name not in TORCH_DTYPES:
        raise CalcError(f"choose one of {', '.join(DTYPES)}", field="dtype", value=name)
    return getattr(torch, TORCH_DTYPES[name])


@contextlib.contextmanager
def cuda_math(torch, dev, dtype: str):
    """On CUDA, the TF32 switches of cuBLAS and cuDNN as ``dtype`` means them, restored after: on for "tf32", off
    for everything else. PyTorch's defaults are off for matrix multiplies but ON for cuDNN convolutions, so an
    "fp32" run on an Ampere or later GPU would otherwise time its convolutions on the TF32 tensor cores, ~8× the
    fp32 peak its report divides by. Elsewhere TF32 does not exist: "tf32" is refused, naming the device."""
    if dev.type != "cuda":
        if dtype == "tf32":
            raise CalcError(f"tf32 is a math mode of NVIDIA tensor cores (CUDA, Ampere or later); {dev} has none: "
                            "choose fp32", field="dtype", value=dtype)
        yield
        return
    saved = torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = torch.backends.cudnn.allow_tf32 = dtype == "tf32"
    try:
        yield
    finally:
        torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32 = saved


def synchronize(dev) -> None:
    import torch

    if dev.type == "cuda":
        torch.cuda.synchronize(dev)
    elif dev.type == "mps":
        torch.mps.synchronize()


class Clock:
    """Times a region on one device: CUDA events after a synchronize; elsewhere perf_counter (MPS synchronised)."""

    def __init__(self, dev):
        self.dev = dev
        self.last = 0.0

    @contextlib.contextmanager
    def __call__(self):
        import torch

        if self.dev.type == "cuda":
            torch.cuda.synchronize(self.dev)
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            yield
            end.record()
            end.synchronize()
            self.last = start.elapsed_time(end) / 1e3      # milliseconds → seconds
        else:
            synchronize(self.dev)
            t0 = time.perf_counter()
            yield
            synchronize(self.dev)
            self.last = time.perf_counter() - t0

    def mark(self):
        """A point in time for per-layer hooks: a recorded CUDA event, or a synchronised perf_counter."""
        import torch

        if self.dev.type == "cuda":
            e = torch.cuda.Event(enable_timing=True)
            e.record()
            return e
        synchronize(self.dev)
        return time.perf_counter()

    def between(self, a, b) -> float:
        return a.elapsed_time(b) / 1e3 if self.dev.type == "cuda" else b - a


# == memory =======================================================================================================

def _tensor_bytes(tensors) -> int:
    seen, total = set(), 0
    for t in tensors:
        if t is None or not hasattr(t, "untyped_storage"):
            continue
        s = t.untyped_storage()
        key = (t.device.type, s.data_ptr())
        if key not in seen:
            seen.add(key)
            total += s.nbytes()
    return total


class _MemoryProbe:
    """Measures the peak bytes of one run (see the module docstring for the method per device)."""

    def __init__(self, dev):
        self.dev = dev
        self.method = {"cuda": "torch.cuda.max_memory_allocated (every tensor on the device)",
                       "cpu": "torch.profiler memory records: resident tensors + peak of the running sum of "
                              "allocations and frees",
                       "mps": "not measured (MPS has no peak-memory counter)"}[dev.type]

    @contextlib.contextmanager
    def measure(self, resident: Callable[[], int], out: dict, key: str):
        import torch

        if self.dev.type == "cuda":
            torch.cuda.synchronize(self.dev)
            torch.cuda.reset_peak_memory_stats(self.dev)
            yield
            torch.cuda.synchronize(self.dev)
            out[key] = int(torch.cuda.max_memory_allocated(self.dev))
        elif self.dev.type == "cpu":
            from torch.profiler import ProfilerActivity, profile

            base = resident()
            with profile(activities=[ProfilerActivity.CPU], profile_memory=True) as prof:
                yield
            peak = _profiler_peak(prof)
            if peak is not None:
                out[key] = base + peak
        else:
            yield


def _profiler_peak(prof) -> int | None:
    """Largest running sum of the profiler's memory records (allocations positive, frees negative), in time order;
    None if this torch's profiler exposes no records."""
    try:
        events = [e for e in prof.profiler.kineto_results.events() if e.name() == "[memory]"]
        if not events:
            return 0
        records = sorted(((e.start_ns(), int(e.nbytes())) for e in events if e.device_type().name == "CPU"))
    except (AttributeError, RuntimeError):
        return None
    running = peak = 0
    for _, nbytes in records:
        running += nbytes
        peak = max(peak, running)
    return peak


# == the passes ===================================================================================================

def _loss(out, torch):
    if isinstance(out, torch.Tensor):
        return out.float().mean()
    if isinstance(out, dict):
        out = list(out.values())
    if isinstance(out, (list, tuple)):
        parts = [_loss(o, torch) for o in out if isinstance(o, (torch.Tensor, list, tuple, dict))]
        parts = [p for p in parts if p is not None]
        return sum(parts) if parts else None
    return None


OPTIMIZERS = tuple(_OPTIMIZER_TABLE)


def _optimizer(name: str, params, torch):
    cls, kwargs = _OPTIMIZER_TABLE[name].torch
    return getattr(torch.optim, cls)(params, **dict(kwargs))


class _Runner:
    """The three passes on one module and input; each run times only its own region with ``clock``."""

    def __init__(self, module, x, optimizer: str, clock: Clock, torch):
        self.m, self.x, self.clock, self.torch = module, x, clock, torch
        self.params = [p for p in module.parameters() if p.requires_grad]
        self.optimizer_name = optimizer
        self.opt = None

    def _zero(self):
        for p in self.params:
            p.grad = None

    def _fwd_loss(self):
        loss = _loss(self.m(self.x), self.torch)
        if loss is None or not loss.requires_grad:
            raise CalcError("the module has no trainable parameters or no tensor output, so there is no backward "
                            "pass to time", field="passes", value="backward")
        return loss

    def forward(self):
        self.m.eval()
        with self.torch.no_grad(), self.clock():
            self.m(self.x)

    def backward(self):
        self.m.train()
        self._zero()
        loss = self._fwd_loss()
        with self.clock():
            loss.backward()

    def train_step(self):
        self.m.train()
        if self.opt is None:
            self.opt = _optimizer(self.optimizer_name, self.params, self.torch)
        with self.clock():
            self.opt.zero_grad(set_to_none=True)
            self._fwd_loss().backward()
            self.opt.step()

    def resident(self, pass_name: str) -> int:
        # gradients are left out: every pass starts from none (backward and the train step free them first; a
        # gradient freed inside the profiled run has no record, so counting it here would count it twice)
        tensors = [*self.m.parameters(), *self.m.buffers(), self.x]
        if pass_name == "train_step" and self.opt is not None:
            tensors += [v for st in self.opt.state.values() for v in st.values() if hasattr(v, "untyped_storage")]
        return _tensor_bytes(tensors)


class _LayerHooks:
    """Forward pre/post hooks on every leaf module; per forward, seconds per module name (summed over calls)."""

    def __init__(self, module, clock: Clock):
        self.clock = clock
        self.marks: list = []
        self.stack: list = []
        self.handles = []
        leaves = [(name or type(m).__name__, m) for name, m in module.named_modules() if not any(m.children())]
        self.names = [n for n, _ in leaves]
        for name, m in leaves:
            self.handles.append(m.register_forward_pre_hook(lambda mod, inp, n=name: self._pre(n)))
            self.handles.append(m.register_forward_hook(lambda mod, inp, out, n=name: self._post(n)))

    def _pre(self, name):
        self.stack.append(self.clock.mark())

    def _post(self, name):
        self.marks.append((name, self.stack.pop(), self.clock.mark()))

    def collect(self) -> dict:
        synchronize(self.clock.dev)
        out: dict = {}
        for name, a, b in self.marks:
            out[name] = out.get(name, 0.0) + self.clock.between(a, b)
        self.marks, self.stack = [], []
        return out

    def remove(self):
        for h in self.handles:
            h.remove()


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
        if _cancelled(cancel):
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
