"""Memory on the device a run uses: what is free (``available_memory``), the memory guard that refuses a run the
memory model says would not fit (``check_fits``), and the peak a run reached (``_MemoryProbe``).

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
"""

from __future__ import annotations

import contextlib
import os
from typing import Callable

from ..errors import CalcError, WontFit
from ..units import format_bytes
from .measuring import device_kind

# == memory guard =================================================================================================

def fmt_bytes(b: float) -> str:
    return format_bytes(b, 1)


def available_memory(device: str = "cpu") -> int | None:
    """Bytes free for a new job: CUDA ``mem_get_info`` (free), MPS the recommended maximum less what the driver
    holds, CPU ``MemAvailable`` from /proc/meminfo (Linux; reclaimable cache counts as available), else
    ``os.sysconf('SC_AVPHYS_PAGES')`` × page size. None where none of these exist."""
    kind = device_kind(device)
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


# == peak memory of one run =======================================================================================

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
