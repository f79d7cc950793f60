"""The settings an estimate takes, checked: each bad value is a ``CalcError`` naming the field and the value.

The PPPs, a device's rates, the thread count, the workers and their interconnect, a choice from a closed list, the
keyword settings themselves (``SETTINGS``) and the lists a sweep runs over (``sweep_items``), with their limits.
"""

from __future__ import annotations

from math import isfinite
from typing import Any

from .cpu_threads import calibrated_threads
from .devices import LATENCY_MAX, Device, Interconnect
from .errors import CalcError, DeviceError

PPP_MIN = 1e-3     # 0.1 % of the peak: a smaller PPP is no platform's, and 5e-324 would make every time infinite


def check_ppp(value: Any, field: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not PPP_MIN <= value <= 1:
        raise CalcError(f"must be a number from {PPP_MIN:g} to 1: 1.0 means the datasheet peak", field=field,
                        value=value)
    return float(value)


def check_rate(value: Any, device: Device | Interconnect, field: str) -> None:
    """A rate a time divides by (a peak, a bandwidth) must be a finite number > 0 whose inverse is finite too; a
    Device made in code skips the database's schema, so its numbers are checked here as well."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise DeviceError("must be a number", node=device.id, field=field, value=value)
    try:
        ok = isfinite(value) and value > 0 and isfinite(1 / value)
    except (OverflowError, ZeroDivisionError):
        ok = False
    if not ok:
        raise DeviceError("must be a finite number > 0 (a time divided by it must be finite)", node=device.id,
                          field=field, value=value)


MAX_THREADS = 4096


def check_threads(value: Any, device: Device) -> int | None:
    """``threads`` asked of an estimate: None (the device's own), else it must be the count the device was
    calibrated at — no model here says how a calibrated CPU's times change with its thread count."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= MAX_THREADS:
        raise CalcError(f"must be an integer from 1 to {MAX_THREADS:,}", field="threads", value=value)
    have = calibrated_threads(device)
    if have is None:
        raise CalcError(f"{device.name} ('{device.id}') has no calibrated thread count (datasheet figures or a GPU): "
                        "leave threads out, or calibrate this CPU (python -m core calibrate --threads N) and use the "
                        "device 'local'", field="threads", value=value)
    if value != have:
        raise CalcError(f"{device.name} ('{device.id}') was calibrated at {have} torch thread(s) and predicts that "
                        f"count only; for {value}, calibrate again: python -m core calibrate --threads {value}",
                        field="threads", value=value)
    return value


MAX_WORKERS = 65536


def check_workers(value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= MAX_WORKERS:
        raise CalcError(f"must be an integer from 1 to {MAX_WORKERS:,}", field="workers", value=value)
    return value


MAX_SWEEP = 100_000      # estimates one sweep or scaling call makes


def choice(value: str, options: tuple, field: str) -> str:
    if value not in options:
        raise CalcError(f"choose one of {', '.join(options)}", field=field, value=value)
    return value


SETTINGS = ("ppp", "ppp_memory", "variant", "conv_algorithm", "fused", "workers", "link", "ppp_comm", "allreduce",
            "launch", "threads", "process", "comm_model", "bucket_mb", "reduce_dtype", "input_pipeline", "cpu_cores",
            "nodes", "node_link", "nics")
DP_SETTINGS = SETTINGS[-8:]      # core.data_parallel's


def check_settings(kw: dict, taken: tuple = (), extra: tuple = ()) -> None:
    """Keyword settings an estimate takes (``SETTINGS`` and ``extra``, less those the caller sets itself): a
    misspelt or unknown one is a CalcError naming it, not a TypeError."""
    known = [s for s in (*SETTINGS, *extra) if s not in taken]
    for k in kw:
        if k not in known:
            raise CalcError(f"unknown setting; the settings are {', '.join(known)}", field=str(k)[:80],
                            value=kw[k])


def sweep_items(values: Any, field: str, limit: int = MAX_SWEEP) -> list:
    """A list of the values a sweep runs over: any iterable but a string or a mapping, at most ``limit`` long."""
    if isinstance(values, (str, bytes, dict)) or not hasattr(values, "__iter__"):
        raise CalcError("expected a list of values", field=field, value=values)
    out = []
    for v in values:
        out.append(v)
        if len(out) > limit:
            raise CalcError(f"more than {limit:,} values", field=field, value=f"{type(values).__name__} of {limit:,}+")
    if not out:
        raise CalcError("give at least one value", field=field, value=values)
    return out


def check_link(workers: int, link: Any) -> None:
    """The interconnect of a data-parallel estimate: needed for more than one worker, an ``Interconnect``."""
    if workers > 1 and link is None:
        raise CalcError("data-parallel training over several workers needs an interconnect (--link)",
                        field="link", value=None)
    if link is not None and not isinstance(link, Interconnect):
        raise CalcError("expected an Interconnect (core.devices)", field="link", value=type(link).__name__)


def check_link_figures(link: Interconnect) -> None:
    """An interconnect's bandwidth is a rate (``check_rate``) and its latency a number of seconds from 0 to
    ``LATENCY_MAX``."""
    check_rate(link.bandwidth, link, "bandwidth")
    lat = link.latency
    if isinstance(lat, bool) or not isinstance(lat, (int, float)) or not 0 <= lat <= LATENCY_MAX:
        raise DeviceError(f"must be a number of seconds from 0 to {LATENCY_MAX:g}", node=link.id,
                          field="latency", value=lat)
