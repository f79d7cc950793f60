"""Fuzz cases for the engine's promise: for any input a user can give, the only exceptions are ``CalcError``
subclasses (``core.errors``), no result is NaN or infinite, and nothing takes over 5 s.

A *case* is one call of the public API on drawn input: a network built from the op registry (valid and invalid),
a mutated built-in network's JSON, a what-if edit, an estimate (sweep, scaling) and a device document. Every
generator is a function of a ``Draw`` (a source of choices), so the same code makes

* Hypothesis strategies (``cases(kind)``, ``networks()``, …) for the test suite, which shrink a failure, and
* seeded cases (``case_from_seed(seed)``) for ``benchmarks/bench_fuzz.py``, which runs tens of thousands and
  replays any one of them from its seed.

``check(case)`` runs a case and raises ``AssertionError`` (with a reproducer) when the promise breaks; ``run(case)``
says what happened without raising (``Outcome``). Nothing here needs torch; ``sequential_networks`` are the chains
the torch spot-check builds (``tests/test_fuzz_torch.py``, the benchmark).

The generators (``Draw``, hostile values, networks, mutations of built-in documents) and the reproducers' source
(``lit``, ``net_code``, ``PREAMBLE``) are in ``strategies_draws``; this module imports them, so that its importers
find everything here.
"""

from __future__ import annotations

import json
import math
import os
import signal
import sys
import tempfile
import time
import traceback
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any, Callable

from hypothesis import strategies as st

import core
from core import devices as devmod
from core.errors import CalcError
from core.ir import Network
from core.registry import REGISTRY, Attr

# The generators (``strategies_draws``), beside this module: tests/ is on sys.path in the suite and in
# benchmarks/bench_fuzz.py, not in a reproducer, which runs from the repository root and imports this module as
# ``tests.strategies`` (``PREAMBLE``).
if __package__:
    sys.path.append(str(Path(__file__).resolve().parent))
from strategies_draws import (
    INF,
    NAN,
    PREAMBLE,
    Draw,
    HypothesisDraw,
    RandomDraw,
    _apply,
    _mutation,
    _mutation_code,
    build,
    deep,  # noqa: F401 (for the reproducers and tests/test_fuzz.py)
    degenerate_network,
    hostile,
    kind_value,
    lit,
    net_code,
    registry_network,
    registry_spec,
    sequential_network,
    spec_of,
    zoo_doc,
    zoo_name,
)

LIMIT_S = 5.0                      # the promise: no case takes longer
ROOT = Path(__file__).resolve().parent.parent
KINDS = ("network", "zoo_json", "edit", "estimate", "devices")

# -- the cases ----------------------------------------------------------------------------------------------------

@dataclass
class Case:
    """One call of the public API: ``fn()`` returns the results to scan for NaN/inf; ``code`` is a Python
    reproducer (run from the repository root)."""

    kind: str
    fn: Callable[[], list]
    code: str
    seed: int | None = None

    def __repr__(self) -> str:      # what Hypothesis prints for a falsifying example
        return f"Case({self.kind}):\n{PREAMBLE}{self.code}"


def _explained(report) -> list:
    return [[str(line) for line in report.explain(layer.name)] for layer in report.layers]


def _dtype(d: Draw) -> Any:
    return d.pick(tuple(core.PRECISIONS)) if not d.chance(0.04) else hostile(d, True)


def _batch(d: Draw) -> Any:
    return d.pick((1, 1, 2, d.int(1, 512))) if not d.chance(0.04) else hostile(d, True)


def network_case(d: Draw) -> Case:
    r = d.int(0, 3)
    spec = registry_spec(d) if r < 2 else spec_of(sequential_network(d) if r == 2 else degenerate_network(d))
    kw = {"batch_size": _batch(d), "dtype": _dtype(d), "optimizer": d.pick(tuple(core.OPTIMIZERS))}
    if d.chance(0.05):
        kw["input_shape"] = d.pick((hostile(d, True), "3x8x8", (3, 8, 8), "0x1", "axb", 10 ** 5000))
    ask = hostile(d, True) if d.chance(0.05) else None

    def fn():
        net = build(spec)
        r = core.analyze(net, **kw)
        out = [r.totals, [layer.as_dict() for layer in r.layers], _explained(r)]
        if ask is not None:
            r.explain(ask)
        core.channel_groups(net)
        back = Network.from_json(net.to_json())
        assert core.analyze(back, **kw).totals == r.totals, "the network's JSON round trip changes its totals"
        return out

    code = f"net = {net_code(spec)}\nr = core.analyze(net, **{lit(kw)})\nr.totals; r.layers; core.channel_groups(net)"
    if ask is not None:
        code += f"\nr.explain({lit(ask)})"
    return Case("network", fn, code)


def zoo_json_case(d: Draw) -> Case:
    name = zoo_name(d)
    doc = zoo_doc(name)
    mutations = []
    for _ in range(d.int(1, 3)):
        m = _mutation(d, doc)
        try:
            doc = _apply(doc, m)
        except (TypeError, IndexError, KeyError, AttributeError):   # the path no longer fits the document
            continue
        mutations.append(m)
    as_text = d.chance(0.5)
    batch = _batch(d)
    try:
        text = json.dumps(doc)
    except (RecursionError, ValueError):      # a value json cannot write (too deep, too long): load the dict
        as_text = False

    def fn():
        net = Network.from_json(text) if as_text else Network.from_dict(doc)
        r = core.analyze(net, batch_size=batch)
        core.channel_groups(net)
        return [r.totals]

    load = "Network.from_json(json.dumps(doc))" if as_text else "Network.from_dict(doc)"
    code = (f"doc = copy.deepcopy(core.load_network({name!r}).to_dict())\n"
            + "".join(_mutation_code(m) + "\n" for m in mutations)
            + f"net = {load}\ncore.analyze(net, batch_size={lit(batch)}).totals; core.channel_groups(net)")
    return Case("zoo_json", fn, code)


def edit_case(d: Draw) -> Case:
    if d.chance(0.6):
        name = zoo_name(d)
        net, src = core.load_network(name), f"core.load_network({name!r})"
    else:
        net = sequential_network(d) if d.chance(0.8) else registry_network(d)
        src = net_code(net)
    target = d.pick(net.nodes) if net.nodes else None
    node = target.name if target is not None and d.chance(0.9) else d.pick(("nope", ["conv1"], None, 5, ""))
    rule = REGISTRY.get(target.op) if target is not None else None
    attrs = list(rule.attrs) if rule else []
    if rule and rule.channel_field and d.chance(0.4):
        attrs = [a for a in attrs if a.name == rule.channel_field]
    a = d.pick(attrs) if attrs and d.chance(0.9) else Attr(d.pick(("bogus", "", "name")), "any")
    field_ = a.name if d.chance(0.95) else d.pick((None, 5, ["out_channels"]))
    current = target.get(a.name) if target is not None else None
    r = d.int(0, 9)
    if r < 5:
        value = kind_value(d, a)
    elif r < 7 and isinstance(current, int) and not isinstance(current, bool):
        value = max(0, current + d.int(-3, 3)) if d.chance(0.7) else current * d.int(2, 4)
    else:
        value = hostile(d, True)

    def fn():
        res = core.edit(net, node, field_, value)
        return [core.analyze(res.network).totals]

    code = (f"net = {src}\nres = core.edit(net, {lit(node)}, {lit(field_)}, {lit(value)})\n"
            "core.analyze(res.network).totals")
    return Case("edit", fn, code)


@lru_cache(maxsize=1)
def base_db():
    return devmod.load_devices(user_path=None)


def _number(d: Draw) -> Any:
    """A figure as a device file may hold it: plausible, extreme or of the wrong type."""
    return d.pick((d.float(1e9, 1e15), 1e12, 10 ** 30, 10 ** 400, 1e308, 5e-324, 1e-300, 0, -1, NAN, INF, "1e12",
                   True, None, [], {}, 0.5))


def device_spec(d: Draw, link: bool = False) -> Any:
    """A built-in entry made a user's: changed in 0–3 fields, sometimes to extreme or wrong values."""
    db = base_db()
    if link:
        spec = d.pick(list(db.interconnects.values())).to_dict()
        fields = ("bandwidth", "latency", "id", "name", "source", "extra")
    else:
        spec = d.pick(list(db.devices.values())).to_dict()
        fields = tuple(f.name for f in devmod.DEVICE_FIELDS if f.name != "user") + ("peak_flops", "peak_flops",
                                                                                      "extra")
    spec = {k: v for k, v in spec.items() if k != "user"}
    spec["id"] = "fz-" + spec["id"]
    for _ in range(d.int(0, 3)):
        f = d.pick(fields)
        if f in ("peak_flops", "sparse_flops"):
            sub = dict(spec.get(f) or {})
            sub[d.pick(devmod.PRECISION_KEYS + ("fp8",))] = _number(d)
            spec[f] = sub if not d.chance(0.05) else {}
        elif f in ("efficiency", "layer_overhead"):
            spec[f] = {d.pick(devmod.OP_CLASSES): d.pick((d.float(0, 1), 0, 1, 1e-300, 5e-324, 2, NAN, "x"))}
        elif f in ("id", "name", "source", "vendor", "note", "kind"):
            spec[f] = d.pick(("", "UPPER", "ok-id", "a b", 3, None)) if d.chance(0.7) else hostile(d)
        elif d.chance(0.1) and f in spec:
            del spec[f]
        else:
            spec[f] = _number(d) if f != "year" else d.pick((1989, 2024, 2101, 10 ** 400, "2020", 2020.5))
    return spec


def device_document(d: Draw) -> Any:
    doc = {"schema": devmod.SCHEMA_NAME, "version": devmod.SCHEMA_VERSION,
           "devices": [device_spec(d) for _ in range(d.int(0, 3))],
           "interconnects": [device_spec(d, link=True) for _ in range(d.int(0, 2))]}
    if d.chance(0.1):
        doc[d.pick(("schema", "version", "devices", "interconnects"))] = hostile(d)
    if d.chance(0.05):
        doc = hostile(d)
    return doc


_TMP: list = []


def _user_file() -> Path:
    if not _TMP:
        _TMP.append(Path(tempfile.mkdtemp(prefix="cnn_calc_fuzz_")) / "devices.json")
    return _TMP[0]


CORRUPT = (b"\xff\xfe\x00garbage", b"[" * 100_000, b'{"schema": 1' + b"1" * 5000 + b"}", b"", b"{", b"null",
           b'{"schema": "cnn-calc/devices", "version": 1, "devices": [' + b"9" * 5000 + b"]}",
           b'{"schema": "cnn-calc/devices", "version": 1, "devices": [{"id": "a"' + b", " * 1 + b'"x": NaN}]}')


def _estimate_on(db, ids: list, d: Draw) -> list:
    """A small estimate on each of ``ids`` (user devices): dtype among its precisions, a link where there is one."""
    out = []
    for dev_id, dtype, workers, link in ids:
        kw = {"workers": workers, "link": link} if link else {}
        e = core.estimate("mnist_cnn", db.device(dev_id), batch_size=8, dtype=dtype, **kw)
        out += [e.totals, e.roofline, e.layers]
    return out


def _plan_estimates(db, d: Draw) -> list:
    plan = []
    links = [i for i, lk in db.interconnects.items() if lk.user]
    for dev in [v for v in db.devices.values() if v.user][:3]:
        dtypes = [k for k, p in core.PRECISIONS.items() if p.compute in dev.peak_flops] or ["fp32"]
        plan.append((dev.id, d.pick(dtypes), 4, d.pick(links) if links and d.chance(0.5) else None))
    return plan


def devices_case(d: Draw) -> Case:
    mode = d.pick(("parse", "add", "add", "file"))
    if mode == "parse":
        doc = device_document(d)
        try:
            db = devmod.parse_devices(doc, user=True)
        except Exception:  # noqa: BLE001 — the case itself will raise it again and judge it
            db = None
        plan = _plan_estimates(db, d) if db is not None else []

        def fn():
            got = devmod.parse_devices(doc, user=True)
            return _estimate_on(got, plan, d)

        code = f"db = parse_devices({lit(doc)}, user=True)"
    elif mode == "add":
        spec = device_spec(d, link=d.chance(0.2)) if not d.chance(0.05) else hostile(d, True)
        try:
            db = base_db().add(spec)
        except Exception:  # noqa: BLE001
            db = None
        plan = _plan_estimates(db, d) if db is not None else []

        def fn():
            return _estimate_on(base_db().add(spec), plan, d)

        code = f"db = load_devices(user_path=None).add({lit(spec)})"
    else:
        data = d.pick(CORRUPT)
        if d.chance(0.6):
            try:
                data = json.dumps(device_document(d)).encode()
            except (ValueError, RecursionError):      # json cannot write it (an integer of 5,000 digits)
                pass
        path = _user_file()
        plan_box: list = []

        def fn():
            path.write_bytes(data)
            db = devmod.load_devices(user_path=path)
            plan_box[:] = _plan_estimates(db, d) if not plan_box else plan_box
            return _estimate_on(db, plan_box, d)

        code = (f"open('/tmp/devices.json', 'wb').write({data[:3000]!r}{' + ...' if len(data) > 3000 else ''})\n"
                "db = load_devices(user_path='/tmp/devices.json')")
        plan = None
    if plan:
        code += "".join(f"\ncore.estimate('mnist_cnn', db.device({i!r}), batch_size=8, dtype={t!r}"
                        + (f", workers={w}, link={lk!r}" if lk else "") + ").totals" for i, t, w, lk in plan)
    return Case("devices", fn, code)


def _model(d: Draw) -> tuple[Any, str]:
    r = d.int(0, 9)
    if r < 4:
        name = zoo_name(d, small=True)
        return name, repr(name)
    net = sequential_network(d) if r < 8 else degenerate_network(d)
    return net, net_code(net)


def _settings(d: Draw, db) -> dict:
    """Estimate settings: each given with probability 0.3; a given one is valid three times in four, else
    extreme or of the wrong type."""
    links = list(db.interconnects)
    ppp_bad = (5e-324, 1e-300, 0, -1, 1.5, NAN, INF, "0.5", True, None)
    choices = {    # name: (a valid value, bad values)
        "ppp": (lambda: d.pick((d.float(0.01, 1), 1.0, 0.5)), ppp_bad),
        "ppp_memory": (lambda: d.pick((None, d.float(0.01, 1))), ppp_bad),
        "variant": (lambda: d.pick(core.choices.VARIANTS), ("", None, 3)),
        "conv_algorithm": (lambda: d.pick(core.choices.CONV_ALGORITHMS), ("", "gemm", None)),
        "fused": (lambda: d.chance(0.5), ("yes", None)),
        "workers": (lambda: d.pick((1, 2, 8, d.int(1, 65536))), (0, -1, 65537, 2.0, True, "4", 10 ** 400)),
        "link": (lambda: d.pick(tuple(links)), (None, "nope", 5)),
        "ppp_comm": (lambda: d.pick((1.0, 0.5, d.float(0.01, 1))), ppp_bad),
        "allreduce": (lambda: d.pick(core.choices.ALLREDUCE), ("", "star")),
        "optimizer": (lambda: d.pick(tuple(core.OPTIMIZERS)), ("", "lbfgs", None)),
    }
    kw = {k: (good() if not d.chance(0.25) else d.pick(bad)) for k, (good, bad) in choices.items() if d.chance(0.3)}
    if kw.get("workers", 1) != 1 and d.chance(0.8) and "link" not in kw:
        kw["link"] = d.pick(links)
    return kw


def _device(d: Draw, db) -> tuple[Any, str]:
    r = d.int(0, 19)
    if r < 14:
        dev = d.pick(list(db.devices))
        return dev, repr(dev)
    if r < 16:
        dev = d.pick(list(db.devices.values())).name
        return dev, repr(dev)
    if r < 18:
        spec = device_spec(d)
        try:
            dev = base_db().add(spec).device(spec["id"])
            return dev, f"load_devices(user_path=None).add({lit(spec)}).device({spec['id']!r})"
        except Exception:  # noqa: BLE001 — a spec the database refuses: estimate on an ordinary device
            return "t4", "'t4'"
    value = d.pick(("", "nvidia", "h100", None, 5, ["t4"], "x" * 300))
    return value, lit(value)


def estimate_case(d: Draw) -> Case:
    db = base_db()
    model, msrc = _model(d)
    call = d.pick(("estimate", "estimate", "estimate", "sweep", "scaling"))
    kw = _settings(d, db)
    if call == "estimate":
        dev, dsrc = _device(d, db)
        batch, dtype = _batch(d), _dtype(d)

        def fn():
            e = core.estimate(model, dev, batch_size=batch, dtype=dtype, **kw)
            return [e.totals, e.roofline, e.layers]

        code = f"e = core.estimate({msrc}, {dsrc}, batch_size={lit(batch)}, dtype={lit(dtype)}, **{lit(kw)})\ne.totals"
    elif call == "sweep":
        devs = [_device(d, db) for _ in range(d.int(0 if d.chance(0.05) else 1, 3))]
        batches = [d.pick((1, 8, 64)) for _ in range(d.int(1, 3))] if not d.chance(0.1) else hostile(d, True)
        dtype = None if d.chance(0.4) else _dtype(d)
        kw.pop("optimizer", None)
        kw.pop("link", None) if "workers" not in kw else None

        def fn():
            return [e.totals for e in core.sweep(model, [v for v, _ in devs], batches, dtype, **kw)]

        code = (f"core.sweep({msrc}, [{', '.join(s for _, s in devs)}], {lit(batches)}, {lit(dtype)}, "
                f"**{lit(kw)})")
    else:
        dev, dsrc = _device(d, db)
        link = d.pick(list(db.interconnects)) if not d.chance(0.1) else d.pick((None, "nope"))
        workers = tuple(d.pick((1, 2, 3, 4, 8, 64)) for _ in range(d.int(1, 4))) if not d.chance(0.15) else \
            d.pick(((0,), (), (1, -2), (2.5,), ("4",), (10 ** 6,), 4))
        batch = _batch(d)
        mode = d.pick(core.choices.SCALING_MODES) if not d.chance(0.1) else d.pick(("", "both", None))
        for k in ("workers", "link"):
            kw.pop(k, None)

        def fn():
            return [core.scaling(model, dev, link, workers, batch, mode, **kw)]

        code = f"core.scaling({msrc}, {dsrc}, {lit(link)}, {lit(workers)}, {lit(batch)}, {mode!r}, **{lit(kw)})"
    return Case("estimate", fn, code)


MAKERS: dict[str, Callable[[Draw], Case]] = {"network": network_case, "zoo_json": zoo_json_case, "edit": edit_case,
                                             "estimate": estimate_case, "devices": devices_case}


def make_case(d: Draw, kind: str | None = None) -> Case:
    return MAKERS[kind or d.pick(KINDS)](d)


def case_from_seed(seed: int) -> Case:
    """The seeded case the benchmark runs: its kind is ``KINDS[seed % 5]``, the rest drawn from ``seed``."""
    case = make_case(RandomDraw(seed), KINDS[seed % len(KINDS)])
    case.seed = seed
    return case


# -- Hypothesis strategies ------------------------------------------------------------------------------------------

@st.composite
def cases(draw, kind: str | None = None) -> Case:
    return make_case(HypothesisDraw(draw), kind)


def networks() -> st.SearchStrategy:
    """Networks from the op registry, valid and invalid (``Network`` values)."""
    return st.composite(lambda draw: registry_network(HypothesisDraw(draw)))()


def sequential_networks() -> st.SearchStrategy:
    return st.composite(lambda draw: sequential_network(HypothesisDraw(draw)))()


def zoo_documents() -> st.SearchStrategy:
    return cases("zoo_json")


def edits() -> st.SearchStrategy:
    return cases("edit")


def estimates() -> st.SearchStrategy:
    return cases("estimate")


def device_documents() -> st.SearchStrategy:
    """Device database documents (dicts, sometimes not even that)."""
    return st.composite(lambda draw: device_document(HypothesisDraw(draw)))()


# -- running a case ----------------------------------------------------------------------------------------------

class _Timeout(BaseException):
    """Raised by the alarm: a BaseException, so no ``except Exception`` in the code under test swallows it."""


@dataclass
class Outcome:
    status: str                       # ok | calc_error | other
    elapsed_s: float
    non_finite: str | None = None     # where a NaN or inf was found
    error: str = ""                   # "Type: message"
    etype: str = ""
    frame: str = ""                   # where it arose: the deepest frame in the project
    trace: str = ""
    extra: dict = field(default_factory=dict)

    @property
    def slow(self) -> bool:
        return self.elapsed_s > LIMIT_S

    @property
    def broken(self) -> bool:
        return self.status == "other" or self.non_finite is not None or self.slow


def non_finite(value: Any, path: str = "") -> str | None:
    """The path of the first NaN or infinite number in ``value`` (dicts, lists, tuples), else None."""
    stack = [(value, path)]
    while stack:
        v, p = stack.pop()
        if isinstance(v, float) and not math.isfinite(v):
            return p or "result"
        if isinstance(v, dict):
            stack += [(x, f"{p}.{k}" if p else str(k)) for k, x in v.items()]
        elif isinstance(v, (list, tuple)):
            stack += [(x, f"{p}[{i}]") for i, x in enumerate(v)]
    return None


def _frame(tb) -> str:
    frames = traceback.extract_tb(tb)
    mine = [f for f in frames if f.filename.startswith(str(ROOT))
            and not f.filename.endswith(("strategies.py", "strategies_draws.py"))]
    f = (mine or frames or [None])[-1]
    if f is None:
        return "?"
    where = os.path.relpath(f.filename, ROOT) if f.filename.startswith(str(ROOT)) else Path(f.filename).name
    return f"{where}:{f.lineno} in {f.name}"


def run(case: Case, hard_limit_s: float = 60.0) -> Outcome:
    """Run ``case`` and say what happened; a case still running after ``hard_limit_s`` is stopped (SIGALRM, main
    thread only) and counts as an exception of type ``_Timeout`` as well as slow."""
    alarm = hasattr(signal, "setitimer") and hard_limit_s
    try:
        if alarm:
            old = signal.signal(signal.SIGALRM, _raise_timeout)
            signal.setitimer(signal.ITIMER_REAL, hard_limit_s)
    except ValueError:                    # not the main thread
        alarm = False
    t = time.perf_counter()
    try:
        result = case.fn()
        out = Outcome("ok", time.perf_counter() - t, non_finite(result))
    except CalcError as e:
        out = Outcome("calc_error", time.perf_counter() - t, error=f"{type(e).__name__}: {e}"[:300],
                      etype=type(e).__name__)
    except (Exception, _Timeout, RecursionError, MemoryError) as e:  # noqa: BLE001 — what the fuzzer is for
        out = Outcome("other", time.perf_counter() - t, error=f"{type(e).__name__}: {_msg(e)}",
                      etype=type(e).__name__, frame=_frame(e.__traceback__),
                      trace="".join(traceback.format_exception(type(e), e, e.__traceback__, limit=-8)))
    finally:
        if alarm:
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, old)
    return out


def _msg(e: BaseException) -> str:
    try:
        return str(e)[:300]
    except Exception:  # noqa: BLE001 — e.g. a message holding an integer too long to print
        return "<message not printable>"


def _raise_timeout(signum, frame):
    raise _Timeout("still running after the hard limit")


def check(case: Case, limit_s: float = LIMIT_S) -> Outcome:
    """Run ``case``; raise AssertionError with a reproducer unless the promise holds."""
    out = run(case, hard_limit_s=max(limit_s * 4, 1.0))
    problems = []
    if out.status == "other":
        problems.append(f"raised {out.error}\n  at {out.frame}\n{out.trace}")
    if out.non_finite:
        problems.append(f"non-finite result at {out.non_finite}")
    if out.elapsed_s > limit_s:
        problems.append(f"took {out.elapsed_s:.2f} s (limit {limit_s} s)")
    assert not problems, (f"{case.kind} case broke the promise: " + "; ".join(problems)
                          + f"\n--- reproducer\n{PREAMBLE}{case.code}")
    return out
