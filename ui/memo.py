"""Values the pages build once per input and share across sessions and reruns: chart specs, sweep tables.

A key holds what determines the value by content, or an object that is never mutated and is one per content (a
``core`` Compiled network: one per network and input shape), never a name alone (a user's device may reuse a
built-in's id: ``shared_cache.device_digest`` is its every figure) and no large result (an Estimate kept in a key
would stay alive with it). Values are shared: callers must not change them. The table keeps the last ``KEPT``
(LRU); it is thread-safe (Streamlit runs sessions in threads). Why: issue 45, a view re-renders in ≤ 100 ms
(docs/benchmarks.md).
"""

from __future__ import annotations

import threading
from collections import OrderedDict

from ui.shared_cache import device_digest

KEPT = 256
_TABLE: OrderedDict[tuple, object] = OrderedDict()
_LOCK = threading.Lock()


def memo(key: tuple, build):
    """``build()``, made once per ``key`` (two sessions asking at once may both build it; either result is kept)."""
    with _LOCK:
        if key in _TABLE:
            _TABLE.move_to_end(key)
            return _TABLE[key]
    value = build()
    with _LOCK:
        _TABLE[key] = value
        while len(_TABLE) > KEPT:
            _TABLE.popitem(last=False)
    return value


def inputs_key(report, *devices, **settings) -> tuple:
    """What determines a report's estimates on ``devices``: its network as compiled, batch, precision, optimizer,
    each device's figures and every setting."""
    return (report.compiled, report.batch_size, report.dtype, report.optimizer,
            tuple(device_digest(d) for d in devices), tuple(sorted(settings.items())))
