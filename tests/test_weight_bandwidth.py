"""A calibrated CPU's ``weight_bandwidth``: a conv or linear layer's weights read at their own measured rate (issue
44: on an AMD EPYC, oneDNN reorders a conv's weights every call and they stream at ~7 GB/s beside a 30–45 GB/s
STREAM bandwidth), and how calibration measures it."""

import statistics

import pytest

import core
from core.bridge.calibrate_fit import _weight_bandwidths
from core.bridge.calibrate_suites import _weight_probes
from core.devices import Device
from core.graph import compile_network
from core.work import layer_work

BASE = dict(id="cpu", name="cpu", vendor="-", kind="CPU", year=2026, peak_flops={"fp32": 1e11},
            memory_bandwidth=1e10, source="-", efficiency={"conv": 0.5, "linear": 0.5})


def _conv():
    # 512 → 512 channels, 3×3, on 2×2 at batch 1: weights 512 × 512 × 9 = 2,359,296 × 4 B = 9,437,184 B
    return _weight_probes()["conv"][0]


def test_weights_at_their_own_rate_the_rest_at_the_bandwidth():
    net = _conv()
    w = layer_work(compile_network(net).nodes[0], False).forward
    assert w.weights * 4 == 9_437_184
    plain = core.estimate(net, Device(**BASE))
    slow = core.estimate(net, Device(**BASE, weight_bandwidth={"conv": 2e9}))
    other = plain.totals["forward_bytes"] - 9_437_184
    # memory: other / 1e10 + 9,437,184 / 2e9 (= 4.7186 ms), where the bandwidth alone gives all bytes / 1e10
    assert plain.totals["forward_memory_s"] == pytest.approx(plain.totals["forward_bytes"] / 1e10)
    assert slow.totals["forward_memory_s"] == pytest.approx(other / 1e10 + 9_437_184 / 2e9)
    assert slow.totals["forward_compute_s"] == plain.totals["forward_compute_s"]
    # a class without a rate of its own (linear here) keeps the bandwidth
    lin = _weight_probes()["linear"][0]
    assert core.estimate(lin, Device(**BASE, weight_bandwidth={"conv": 2e9})).totals["forward_memory_s"] == \
        pytest.approx(core.estimate(lin, Device(**BASE)).totals["forward_memory_s"])


def test_calibration_reads_the_rate_off_the_probes():
    probes = _weight_probes()
    eff = {"conv": (0.5, 0, {}, 20e-6, 0.5, ()), "linear": (0.5, 0, {}, 5e-6, 0.5, ())}
    runs = {}
    for cls, (net, batch, _) in probes.items():
        w = layer_work(compile_network(net).nodes[0], False).forward
        # t = compute at 0.5 × 1e11 + other bytes at 1e10 + per-call overhead + weights at 3e9 (conv) / 8e9 (linear)
        rate = {"conv": 3e9, "linear": 8e9}[cls]
        t = (w.flops * batch / 5e10 + (w.act * 4 + w.xbytes) * batch / 1e10 + eff[cls][3]
             + w.weights * 4 / rate)
        runs[cls] = [t * 0.99, t, t * 1.01]                       # median t
    got = _weight_bandwidths(probes, runs, eff, 1e11, 1e10)
    assert got == {"conv": pytest.approx(3e9), "linear": pytest.approx(8e9)}
    # weights read as fast as the bandwidth (above 0.9 × 1e10): no rate of their own
    fast = {cls: [statistics.median(r) - layer_work(compile_network(probes[cls][0]).nodes[0], False).forward.weights
                  * 4 * (1 / {"conv": 3e9, "linear": 8e9}[cls] - 1 / 1e10)] for cls, r in runs.items()}
    assert _weight_bandwidths(probes, fast, eff, 1e11, 1e10) == {}
