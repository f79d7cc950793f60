"""What every measurement shares, live timing and calibration alike: one job per process, torch's CPU threads,
the device, its dtypes and its clock, and cancellation.

Synchronisation: on CUDA, ``torch.cuda.Event(enable_timing=True)`` pairs around the run after a
``torch.cuda.synchronize()``; on MPS, ``torch.mps.synchronize()`` before and after a ``time.perf_counter`` interval;
on CPU the interval alone (CPU ops are synchronous).

Cancellation: ``cancel`` (a ``threading.Event`` or a callable returning True) is what ``cancelled`` reads; a run
checks it and raises ``Cancelled`` (a ``CalcError``). torch is imported inside the functions that need it only.
"""

from __future__ import annotations

import contextlib
import threading
import time
from typing import Any, Callable

from ..errors import CalcError

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

    if device_kind(device) != "cpu":
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


def cancelled(cancel: Any) -> bool:
    if cancel is None:
        return False
    if hasattr(cancel, "is_set"):
        return bool(cancel.is_set())
    return bool(cancel())


# == devices and clocks ===========================================================================================

def device_kind(device: Any) -> str:
    kind = str(device).split(":")[0].strip().lower()
    if kind not in ("cpu", "cuda", "mps"):
        raise CalcError("choose cpu, cuda, cuda:N or mps", field="device", value=device)
    return kind


def torch_device(device: Any):
    """A ``torch.device`` that exists here; ``CalcError`` naming it otherwise."""
    import torch

    kind = device_kind(device)
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
