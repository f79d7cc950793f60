"""The standing fuzz suite (issue 15): the typed-error promise on drawn input.

For networks built from the op registry, mutated built-in JSON, what-if edits, estimates and device documents
(``tests/strategies.py``): the only exceptions are ``CalcError`` subclasses, no result holds NaN or inf, and no case
takes over 5 s. Hypothesis draws a few dozen cases per kind here (fast subset); a sweep over fixed seeds runs with
the slow tests; ``benchmarks/bench_fuzz.py`` runs 50,000. The last tests plant a bug to show each assertion fails.
"""

from __future__ import annotations

import dataclasses

import pytest
from hypothesis import HealthCheck, Phase, given, settings

import core
import strategies as S
from core import graph
from core.registry import REGISTRY

FAST = settings(max_examples=100, deadline=None, database=None, derandomize=True,
                suppress_health_check=list(HealthCheck))

@pytest.mark.parametrize("kind", S.KINDS)
def test_the_promise_holds(kind):
    @FAST
    @given(S.cases(kind))
    def prop(case):
        S.check(case)

    prop()


@pytest.mark.slow
@pytest.mark.parametrize("block", range(4))
def test_the_promise_holds_on_seeded_cases(block):
    """8,000 of the benchmark's seeded cases (seeds 0–7,999), in four blocks."""
    failures = []
    for seed in range(block * 2000, (block + 1) * 2000):
        try:
            S.check(S.case_from_seed(seed))
        except AssertionError as e:
            failures.append(f"seed {seed}: {str(e)[:2000]}")
    assert not failures, f"{len(failures)} cases broke the promise:\n" + "\n\n".join(failures[:5])


# -- regression tests: the distinct failures the fuzzer found (tmp findings list; each is a reproducer) ----------

def _analyze_node(**attrs):
    return lambda: [core.analyze(core.Network.make("t", {"x": (3, 8, 8)},
                                                   [core.Node.make("a", "avg_pool2d", "x", **attrs)])).totals]


def _doc_with(key, value):
    def fn():
        doc = core.load_network("mnist_cnn").to_dict()
        doc[key] = value
        return [core.analyze(core.Network.from_dict(doc)).totals]
    return fn


def _user_file(data: bytes):
    def fn():
        path = S._user_file()
        path.write_bytes(data)
        return [len(S.devmod.load_devices(user_path=path).devices)]
    return fn


def _add(spec):
    def fn():
        db = S.base_db().add(spec)
        return [core.estimate("mnist_cnn", db.device(spec["id"])).totals]
    return fn


_T4 = {k: v for k, v in S.base_db().device("t4").to_dict().items() if k != "user"}

FINDINGS = {
    "F1 edit field=None": lambda: [core.edit(core.load_network("mnist_cnn"), "conv1", None, 3)],
    "F2 edit node=['conv1']": lambda: [core.edit(core.load_network("mnist_cnn"), ["conv1"], "out_channels", 3)],
    "F3 explain(['x'])": lambda: [core.analyze("mnist_cnn").explain(["x"])],
    "F4 dtype=10**5000": lambda: [core.analyze("mnist_cnn", dtype=10 ** 5000).totals],
    "F5a devices file not UTF-8": _user_file(b"\xff\xfe\x00garbage"),
    "F5b devices file 100k deep": _user_file(b"[" * 100_000),
    "F5c devices file 5,000-digit integer": _user_file(b'{"schema": "cnn-calc/devices", "version": 1, "devices": ['
                                                       + b"9" * 5000 + b"]}"),
    "F6 DeviceDB.add(list)": lambda: [S.base_db().add([1])],
    "F7 Node.make deep list": _analyze_node(kernel_size=S.deep(2000)),
    "F8 message of a deep value": _doc_with("schema", S.deep(2000)),
    "F9 peak 10**400": _add({**_T4, "id": "big", "peak_flops": {"fp32": 10 ** 400}}),
    "F10 bandwidth 5e-324": _add({**_T4, "id": "tiny", "memory_bandwidth": 5e-324}),
    "F11 scaling workers=(0,)": lambda: [core.scaling("mnist_cnn", "t4", "pcie4-x16", workers=(0,))],
    "F12 channel_groups vit_b_16": lambda: [core.channel_groups(core.load_network("vit_b_16"))],
    "F13 devices document deep version": lambda: [S.devmod.parse_devices(
        {"schema": "cnn-calc/devices", "version": S.deep(2000), "devices": [], "interconnects": []})],
}


@pytest.mark.parametrize("name", list(FINDINGS))
def test_finding_is_fixed(name):
    S.check(S.Case("regression", FINDINGS[name], name))


# -- the assertions can fail: planted bugs ------------------------------------------------------------------------

def _plant(monkeypatch, op: str, cost) -> None:
    monkeypatch.setitem(REGISTRY, op, dataclasses.replace(REGISTRY[op], cost=cost))
    graph._compile_cached.cache_clear()          # the fixture clears it again after the test


@pytest.fixture
def fresh_cache():
    graph._compile_cached.cache_clear()
    yield
    graph._compile_cached.cache_clear()


def _relu_case() -> S.Case:
    net = core.Network.make("t", {"x": (3, 8, 8)}, [core.Node.make("r", "relu", "x")])
    return S.Case("network", lambda: [core.analyze(net).totals], "planted")


def test_a_planted_exception_is_caught(monkeypatch, fresh_cache):
    def boom(ctx):
        raise ZeroDivisionError("planted")

    # planted in every activation, not relu alone: a drawn network holds 1-6 of the registry's ~50 ops, and with
    # one op more in the registry (``contiguous``) none of Hypothesis's 200 derandomized draws reached relu's cost
    for op in ("relu", "relu6", "sigmoid", "tanh", "gelu", "silu", "hardswish", "hardsigmoid", "leaky_relu"):
        _plant(monkeypatch, op, boom)
    with pytest.raises(AssertionError, match="ZeroDivisionError"):
        S.check(_relu_case())
    # and the drawn cases find it too: the seeded ones, and Hypothesis
    outs = [S.run(S.case_from_seed(seed)) for seed in range(0, 400, 5)]
    assert any(o.etype == "ZeroDivisionError" for o in outs)

    @settings(max_examples=200, deadline=None, database=None, derandomize=True, phases=[Phase.generate],
              suppress_health_check=list(HealthCheck))
    @given(S.cases("network"))
    def prop(case):
        S.check(case)

    with pytest.raises(AssertionError, match="ZeroDivisionError"):
        prop()


def test_a_planted_nan_is_caught(monkeypatch, fresh_cache):
    real = REGISTRY["relu"].cost
    _plant(monkeypatch, "relu", lambda ctx: dataclasses.replace(real(ctx), flops=float("nan")))
    with pytest.raises(AssertionError, match="non-finite result at"):
        S.check(_relu_case())


def test_a_planted_slow_case_is_caught(monkeypatch, fresh_cache):
    import time

    real = REGISTRY["relu"].cost

    def slow(ctx):
        time.sleep(0.3)
        return real(ctx)

    _plant(monkeypatch, "relu", slow)
    with pytest.raises(AssertionError, match="took"):
        S.check(_relu_case(), limit_s=0.2)


def test_a_calc_error_is_the_promise():
    out = S.check(S.Case("network", lambda: core.analyze("no_such_net"), "x"))
    assert out.status == "calc_error"
