"""Many estimates of one network: every device × batch size (``sweep``), data-parallel ``scaling`` over worker
counts, the batch up to which launch overhead dominates (``overhead_limited_up_to``) and the largest batch whose
memory fits a device (``largest_batch``)."""

from __future__ import annotations

from math import ceil
from typing import Any

from .choices import DEFAULT_DTYPE, DEFAULT_OPTIMIZER, SCALING_MODES
from .devices import DeviceDB, resolve_device
from .errors import CalcError
from .ir import Network
from .paleo import Estimate, estimate
from .precision import PRECISIONS
from .report import MAX_BATCH, Report, as_report, check_batch
from .settings import MAX_SWEEP, check_settings, check_workers, choice, sweep_items


def overhead_limited_up_to(runs: list[Estimate], share: float = 0.5) -> int | None:
    """The largest batch of a sweep at which layers limited by launch overhead take at least ``share`` of the
    forward time: below it, a bigger batch costs little more time (the GPU waits on the host). None where no batch
    of the sweep is so limited."""
    limited = [e.report.batch_size for e in runs if e.overhead_share >= share]
    return max(limited) if limited else None


def largest_batch(report: Report, capacity: float, *, training: bool = True) -> int:
    """The largest batch whose memory fits in ``capacity`` bytes at the report's precision and optimizer:
    ``training_bytes`` (weights, gradients, optimizer state, activations saved for backward), or ``inference_bytes``
    with ``training=False``. 0 where not even one sample fits, ``MAX_BATCH`` at most. Memory grows with the batch, so
    doubling and then bisection find it in about 2·log2(B) analyses (each is arithmetic on the compiled network)."""
    if isinstance(capacity, bool) or not isinstance(capacity, (int, float)) or not capacity > 0:
        raise CalcError("memory capacity must be a positive number of bytes", field="capacity", value=capacity)
    key = "training_bytes" if training else "inference_bytes"

    def fits(batch: int) -> bool:
        return Report(report.compiled, batch, report.dtype, report.optimizer).totals[key] <= capacity

    if not fits(1):
        return 0
    lo = 1                                   # fits
    while lo < MAX_BATCH and fits(min(2 * lo, MAX_BATCH)):
        lo = min(2 * lo, MAX_BATCH)
    if lo == MAX_BATCH:
        return lo
    hi = min(2 * lo, MAX_BATCH)              # does not fit
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (mid, hi) if fits(mid) else (lo, mid)
    return lo


def scaling(model: Report | Network, device: Any, link: Any, workers=(1, 2, 4, 8), batch_size: int = 64,
            mode: str = "strong", gpus_per_node: int | None = None, **kw) -> list[dict]:
    """Data-parallel scaling. strong: the global batch ``batch_size`` is split over K workers (⌈B/K⌉ each, the
    last ones short when K does not divide B, so a step takes as long as the fullest worker); weak: every worker
    keeps ``batch_size``. Speed-up is throughput relative to one worker; efficiency = speed-up / K.

    ``workers``: worker counts from 1 to 65,536. ``gpus_per_node``: above it, K workers are K / gpus_per_node nodes
    joined by ``node_link`` (K must be a multiple). Each row also has the DDP model's parts (``core.data_parallel``:
    ``allreduce_s``, ``overlapped_s``, ``exposed_s``, ``sync_s``, ``input_wait_s``) and ``communication_share``, the
    share of the step the exchange adds. A network that does no work (a training step of 0 s) has no throughput:
    its ``samples_per_s``, ``speedup`` and ``efficiency`` are None."""
    choice(mode, SCALING_MODES, "mode")
    counts = [check_workers(k) for k in sweep_items(workers, "workers", limit=1000)]
    check_batch(batch_size)
    check_settings(kw, ("workers", "link", "nodes"), ("dtype", "optimizer", "db"))
    if gpus_per_node is not None:
        check_workers(gpus_per_node)
        for k in counts:
            if k > gpus_per_node and k % gpus_per_node:
                raise CalcError(f"{k} workers are not whole nodes of {gpus_per_node} GPUs", field="workers", value=k)

    def run(k: int) -> dict:
        per = ceil(batch_size / k) if mode == "strong" else batch_size
        nodes = k // gpus_per_node if gpus_per_node and k > gpus_per_node else 1
        est = estimate(model, device, batch_size=per, workers=k, link=link if k > 1 else None, nodes=nodes, **kw)
        t, dp = est.totals, est.data_parallel
        samples = batch_size if mode == "strong" else batch_size * k
        step = t["training_step_s"]
        wait = dp.input_wait_s if dp else 0.0
        return {"workers": k, "nodes": nodes, "per_worker_batch": per,
                "compute_s": step - t["communication_s"] - wait,
                "communication_s": t["communication_s"], "training_step_s": step,
                "samples_per_s": samples / step if step else None,
                "allreduce_s": dp.allreduce_s if dp else 0.0, "overlapped_s": dp.overlapped_s if dp else 0.0,
                "exposed_s": dp.exposed_s if dp else 0.0, "sync_s": dp.sync_s if dp else 0.0, "input_wait_s": wait,
                "communication_share": t["communication_s"] / step if step else 0.0}

    runs = {k: run(k) for k in dict.fromkeys((1, *counts))}     # one worker is the baseline, run once
    base = runs[1]["samples_per_s"]
    rows = []
    for k in counts:
        row = dict(runs[k])
        row["speedup"] = row["samples_per_s"] / base if base and row["samples_per_s"] is not None else None
        row["efficiency"] = row["speedup"] / k if row["speedup"] is not None else None
        rows.append(row)
    return rows


def communication_dominates(rows: list[dict], share: float = 0.5) -> int | None:
    """The fewest workers of ``scaling``'s rows at which the exchange adds more than ``share`` of the step (None:
    at none of them)."""
    over = [r["workers"] for r in rows if r["communication_share"] > share]
    return min(over) if over else None


def sweep(model: Report | Network, devices, batch_sizes, dtype: str | None = DEFAULT_DTYPE, *,
          optimizer: str = DEFAULT_OPTIMIZER, db: DeviceDB | None = None, **kw) -> list[Estimate]:
    """Estimates for every device × batch size on one analysis (what the app's device comparison and
    time-vs-batch charts use). ``dtype=None`` picks fp32 where a device has it, else its first precision."""
    check_settings(kw)
    compiled = as_report(model, 1, DEFAULT_DTYPE, optimizer).compiled
    devs = [resolve_device(d, db) for d in sweep_items(devices, "devices")]
    batches = [check_batch(b) for b in sweep_items(batch_sizes, "batch_sizes")]
    if len(devs) * len(batches) > MAX_SWEEP:
        raise CalcError(f"{len(devs):,} devices × {len(batches):,} batch sizes is more than {MAX_SWEEP:,} estimates",
                        field="batch_sizes", value=len(batches))
    out = []
    for dev in devs:
        dt = dtype or ("fp32" if "fp32" in dev.peak_flops
                       else next((k for k in dev.precisions if k in PRECISIONS), None))
        if dt is None:
            raise CalcError(f"{dev.name} has no precision this calculator knows", node=dev.id, field="peak_flops",
                            value=list(dev.peak_flops))
        out += [Estimate(Report(compiled, b, dt, optimizer), dev, **kw) for b in batches]
    return out
