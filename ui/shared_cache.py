"""Analyses and estimates cached for the whole server process and shared by every session, keyed by content.

A key holds everything that determines the result, never a name or an id alone: the network's IR (a BLAKE2b digest
of its canonical JSON, so an edited or uploaded network is its own key; computed once per ``Network`` object), the
input shape, batch, precision and optimizer; for an estimate also the device's full figures (every dataclass field,
id and name included, as canonical JSON) and every setting ``core.paleo.Estimate`` takes, defaults filled in
(``settings_key``). Scalars are keyed with their type, so ``True`` and ``1`` stay apart as ``core``'s checks do.

Bounds (LRU eviction): ``CNN_CALC_CACHE_ENTRIES`` entries (default 1024) and ``CNN_CALC_CACHE_MB`` MiB (default 256)
of approximate size, estimated from the layer count (``entry_bytes``, from tracemalloc with every lazy figure read: a
Report ~0.6 KB a layer plus its compiled network ~1.1 KB, counted as 2 KB; an Estimate 3.7–4.7 KB, counted as 4.5 KB;
ResNet-152's pair ~3.5 MB, ~70 of them in 256 MiB). One entry over the byte bound is returned, not kept.
Thread-safe (Streamlit runs sessions in threads): a lock guards the table; a key being computed is computed once, the
other threads wait for it.

Results are shared objects: callers must not mutate them (no page does; tests/test_shared_cache.py checks the cached
values after every page ran). ``stats()`` gives entries, bytes, hits, misses and the process's RSS; with
``CNN_CALC_CACHE_STATS=PATH`` every lookup also writes them to PATH as JSON (benchmarks/bench_load.py reads it).
No ``streamlit`` here: pure Python over ``core``. Evidence and figures: docs/benchmarks-guide.md, "Shared cache".
"""

from __future__ import annotations

import hashlib
import inspect
import json
import os
import threading
import weakref
from collections import OrderedDict
from collections.abc import Callable
from pathlib import Path
from typing import Any

import core
from core.choices import DEFAULT_DTYPE, DEFAULT_OPTIMIZER
from core.devices import Device, Interconnect
from core.errors import CalcError
from core.paleo import Estimate
from core.paleo import estimate as paleo_estimate
from core.settings import check_settings
from core.shapes import parse_shape

ENTRIES_ENV, MB_ENV, STATS_ENV = "CNN_CALC_CACHE_ENTRIES", "CNN_CALC_CACHE_MB", "CNN_CALC_CACHE_STATS"
DEFAULT_ENTRIES, DEFAULT_MB = 1024, 256
# approximate bytes per layer and per entry (tracemalloc, every lazy figure read; module docstring)
REPORT_LAYER_BYTES, ESTIMATE_LAYER_BYTES, ENTRY_BASE_BYTES = 2_048, 4_608, 16_384
# the settings an estimate takes and their defaults, read from core so that a new setting is keyed without an edit
SETTING_DEFAULTS = {p.name: p.default for p in inspect.signature(Estimate.__init__).parameters.values()
                    if p.kind is p.KEYWORD_ONLY}


# == digests by content, computed once per object ====================================================================

_digests: dict[int, tuple[weakref.ref, str]] = {}
_digests_lock = threading.Lock()


def _canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), default=repr, allow_nan=True)


def _blake(text: str) -> str:
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=20).hexdigest()


def _remembered(obj: Any, compute: Callable[[Any], str]) -> str:
    """``compute(obj)``, kept per object identity while ``obj`` lives (frozen values: a ResNet-152's IR JSON takes
    ~3 ms to write, a dict lookup is free)."""
    k = id(obj)
    with _digests_lock:
        got = _digests.get(k)
        if got is not None and got[0]() is obj:
            return got[1]
    digest = compute(obj)
    try:
        ref = weakref.ref(obj, lambda r, k=k: _digests.pop(k, None) if _digests.get(k, (None,))[0] is r else None)
    except TypeError:             # an object without weak references: not remembered
        return digest
    with _digests_lock:
        _digests[k] = (ref, digest)
    return digest


def network_digest(network: core.Network) -> str:
    """The digest of ``network``'s IR JSON (name, description, inputs, nodes with their attributes, outputs)."""
    return _remembered(network, lambda n: _blake(_canonical(n.to_dict())))


def _fields(entry: Device | Interconnect) -> dict:
    return {"type": type(entry).__name__, **{k: getattr(entry, k) for k in entry.__dataclass_fields__}}


def device_digest(device: Device | Interconnect) -> str:
    """The digest of a device's (or link's) full figures: every field, not ``to_dict``'s pruned view."""
    return _remembered(device, lambda d: _blake(_canonical(_fields(d))))


def _typed(value: Any) -> tuple:
    """A scalar as a key part with its type: ``True`` ≠ ``1`` ≠ ``1.0`` here, as ``core``'s checks tell them apart."""
    if isinstance(value, (Device, Interconnect)):
        return ("entry", device_digest(value))
    if value is None or isinstance(value, (bool, int, float, str)):
        return (type(value).__name__, value)
    return (type(value).__name__, _canonical(value))


def settings_key(settings: dict) -> tuple:
    """Every setting an estimate takes, defaults filled in, in a fixed order (unknown ones: ``CalcError``)."""
    check_settings(settings)
    return tuple((name, _typed(settings.get(name, default))) for name, default in SETTING_DEFAULTS.items())


def _shape_key(input_shape: Any) -> tuple:
    return ("own",) if input_shape is None else ("shape", parse_shape(input_shape))


def analysis_key(network: core.Network, input_shape: Any, batch_size: Any, dtype: Any, optimizer: Any) -> tuple:
    return ("analysis", network_digest(network), _shape_key(input_shape), _typed(batch_size), _typed(dtype),
            _typed(optimizer))


def estimate_key(report: core.Report, device: Device, settings: dict) -> tuple:
    """An estimate on ``report``: its network as compiled (at its input shape), batch, precision and optimizer."""
    return ("estimate", network_digest(report.compiled.network), _typed(report.batch_size), _typed(report.dtype),
            _typed(report.optimizer), ("device", device_digest(device)), settings_key(settings))


def entry_bytes(value: Any) -> int:
    """Approximate memory of a cached Report or Estimate once every lazy figure is read, from its layer count."""
    report = value.report if isinstance(value, Estimate) else value
    layers = len(report.compiled.nodes)
    return ENTRY_BASE_BYTES + (ESTIMATE_LAYER_BYTES if isinstance(value, Estimate) else REPORT_LAYER_BYTES) * layers


# == the table =======================================================================================================

class SharedCache:
    """A thread-safe LRU table bounded in entries and approximate bytes; one computation per key at a time."""

    def __init__(self, max_entries: int = DEFAULT_ENTRIES, max_bytes: int = DEFAULT_MB << 20):
        self.max_entries, self.max_bytes = max(1, int(max_entries)), max(1, int(max_bytes))
        self._table: OrderedDict[tuple, tuple[Any, int]] = OrderedDict()
        self._running: dict[tuple, threading.Event] = {}
        self._lock = threading.Lock()
        self.bytes = self.hits = self.misses = self.evictions = self.waits = self.too_large = 0

    def get(self, key: tuple, compute: Callable[[], Any], size: Callable[[Any], int] = entry_bytes) -> Any:
        """The cached value of ``key``, or ``compute()``'s (kept unless it raised); a thread that finds ``key``
        being computed by another waits for it, then looks again."""
        while True:
            with self._lock:
                got = self._table.get(key)
                if got is not None:
                    self._table.move_to_end(key)
                    self.hits += 1
                    return got[0]
                running = self._running.get(key)
                if running is None:
                    self._running[key] = done = threading.Event()
                    self.misses += 1
                    break
                self.waits += 1
            running.wait()            # then look again: the other thread's result, or compute it here if it failed
        try:
            value = compute()
            self._put(key, value, int(size(value)) + len(repr(key)))
            return value
        finally:
            with self._lock:
                self._running.pop(key, None)
            done.set()

    def _put(self, key: tuple, value: Any, nbytes: int) -> None:
        with self._lock:
            if nbytes > self.max_bytes:
                self.too_large += 1
                return
            old = self._table.pop(key, None)
            if old is not None:
                self.bytes -= old[1]
            self._table[key] = (value, nbytes)
            self.bytes += nbytes
            while len(self._table) > self.max_entries or self.bytes > self.max_bytes:
                _, (_, n) = self._table.popitem(last=False)
                self.bytes -= n
                self.evictions += 1

    def __contains__(self, key: tuple) -> bool:
        with self._lock:
            return key in self._table

    def __len__(self) -> int:
        return len(self._table)

    def clear(self) -> None:
        with self._lock:
            self._table.clear()
            self.bytes = self.hits = self.misses = self.evictions = self.waits = self.too_large = 0

    def stats(self) -> dict:
        with self._lock:
            looked = self.hits + self.misses
            return {"entries": len(self._table), "bytes": self.bytes, "hits": self.hits, "misses": self.misses,
                    "hit_rate": self.hits / looked if looked else None, "evictions": self.evictions,
                    "waits": self.waits, "too_large": self.too_large, "max_entries": self.max_entries,
                    "max_bytes": self.max_bytes}


def _env_int(name: str, default: int) -> int:
    try:
        return max(1, int(os.environ.get(name, "").strip() or default))
    except ValueError:
        return default


CACHE = SharedCache(_env_int(ENTRIES_ENV, DEFAULT_ENTRIES), _env_int(MB_ENV, DEFAULT_MB) << 20)


# == what pages call =================================================================================================

def analysis(model: Any, input_shape: Any = None, batch_size: int = 1, dtype: str = DEFAULT_DTYPE,
             optimizer: str = DEFAULT_OPTIMIZER) -> core.Report:
    """``core.analyze`` through the shared cache (a ``Network``; anything else is loaded by ``core`` as before)."""
    if not isinstance(model, core.Network):
        return core.analyze(model, input_shape=input_shape, batch_size=batch_size, dtype=dtype, optimizer=optimizer)
    try:
        key = analysis_key(model, input_shape, batch_size, dtype, optimizer)
    except CalcError:               # an input shape that does not parse: core says so, in its words
        key = None
    run = lambda: core.analyze(model, input_shape=input_shape, batch_size=batch_size, dtype=dtype,  # noqa: E731
                               optimizer=optimizer)
    result = run() if key is None else CACHE.get(key, run)
    _write_stats()
    return result


def estimate(report: core.Report, device: Device, **settings) -> Estimate:
    """``core.estimate`` of a Report at its own batch, precision and optimizer, through the shared cache.
    ``device`` is a ``Device`` (a session's own one is keyed by its figures); ``settings`` as ``core.estimate``'s."""
    if not isinstance(report, core.Report) or not isinstance(device, Device):
        raise CalcError("the shared cache estimates a Report on a Device", field="device",
                        value=type(device).__name__)
    run = lambda: paleo_estimate(report, device, report.batch_size, report.dtype,  # noqa: E731
                                 optimizer=report.optimizer, **settings)
    if any(not isinstance(settings.get(k), (Interconnect, type(None))) for k in ("link", "node_link")):
        return run()                # a link by id: which database resolves it is not this table's to know
    result = CACHE.get(estimate_key(report, device, settings), run)
    _write_stats()
    return result


def process_memory() -> dict:
    """This process's resident memory now and at its peak (``VmRSS``, ``VmHWM`` of /proc/self/status), in MiB."""
    out = {"rss_mib": None, "peak_rss_mib": None}
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith(("VmRSS:", "VmHWM:")):
                out["rss_mib" if line.startswith("VmRSS") else "peak_rss_mib"] = int(line.split()[1]) / 1024
    except (OSError, ValueError, IndexError):
        pass
    return out


def stats() -> dict:
    """The shared cache's figures (entries, approximate bytes, hits, misses, hit rate, evictions) and the process's
    memory: what a load benchmark or an operator logs."""
    return {**CACHE.stats(), **process_memory(), "pid": os.getpid()}


_write_lock = threading.Lock()


def _write_stats() -> None:
    """With ``$CNN_CALC_CACHE_STATS``: ``stats()`` as JSON to that path, replaced atomically (no student data)."""
    path = os.environ.get(STATS_ENV)
    if not path:
        return
    with _write_lock:
        tmp = f"{path}.{os.getpid()}.tmp"
        try:
            Path(tmp).write_text(json.dumps(stats()))
            os.replace(tmp, path)
        except OSError:
            pass
