"""A calibrated CPU's ``weight_bandwidth``: a conv or linear layer's weights read at their own measured rate (issue
44: on an AMD EPYC, oneDNN reorders a conv's weights every call and they stream at ~7 GB/s beside a 30–45 GB/s
STREAM bandwidth), its backward's ``backward_weight_bandwidth`` (a batch-1 linear's backward is two matrix-vector
passes over its weights and their gradients), and how calibration measures them."""

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
    # 512 → 512 channels, 3×3, on 7×7 at batch 1 (oneDNN's path): weights 512 × 512 × 9 = 2,359,296 × 4 B = 9,437,184 B
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
    eff = {"conv": (0.5, 0, {}, 20e-6, 0.5, ()), "im2col_conv": (0.5, 0, {}, 10e-6, 0.5, ()),
           "linear": (0.5, 0, {}, 5e-6, 0.5, ())}
    rates = {"conv": 3e9, "im2col_conv": 2e9, "linear": 8e9}
    runs = {}
    for cls, (net, batch, _) in probes.items():
        w = layer_work(compile_network(net).nodes[0], False).forward
        # t = compute at 0.5 × 1e11 + other bytes at 1e10 + the class's per-call overhead + weights at its rate
        t = (w.flops * batch / 5e10 + (w.act * 4 + w.xbytes) * batch / 1e10 + eff[cls][3]
             + w.weights * 4 / rates[cls])
        runs[cls] = [t * 0.99, t, t * 1.01]                       # median t
    got = _weight_bandwidths(probes, runs, eff, 1e11, 1e10)
    assert got == {cls: pytest.approx(r) for cls, r in rates.items()}
    # weights read as fast as the bandwidth (above 0.9 × 1e10): no rate of their own
    fast = {cls: [statistics.median(r) - layer_work(compile_network(probes[cls][0]).nodes[0], False).forward.weights
                  * 4 * (1 / rates[cls] - 1 / 1e10)] for cls, r in runs.items()}
    assert _weight_bandwidths(probes, fast, eff, 1e11, 1e10) == {}


def _linear():
    # 4096 → 4096 at batch 1: weights 4096 × 4096 = 16,777,216 × 4 B = 67,108,864 B
    return _weight_probes()["linear"][0]


def test_a_backward_moves_weights_and_gradients_at_the_backward_rate():
    net = _linear()
    plain = core.estimate(net, Device(**BASE))
    slow = core.estimate(net, Device(**BASE, backward_weight_bandwidth={"linear": 2e9}))
    # the network's input needs no gradient: no dx, so the backward does not read the weights; it writes their
    # gradient, 16,777,216 × 4 B = 67,108,864 B, at 2e9 B/s (33.554 ms) instead of 1e10 (6.711 ms)
    other = plain.totals["backward_bytes"] - 67_108_864
    assert plain.totals["backward_memory_s"] == pytest.approx(plain.totals["backward_bytes"] / 1e10)
    assert slow.totals["backward_memory_s"] == pytest.approx(other / 1e10 + 67_108_864 / 2e9)
    # the forward keeps the bandwidth, and a forward rate does not touch the backward
    assert slow.totals["forward_memory_s"] == plain.totals["forward_memory_s"]
    fwd_only = core.estimate(net, Device(**BASE, weight_bandwidth={"linear": 2e9}))
    assert fwd_only.totals["backward_memory_s"] == plain.totals["backward_memory_s"]
    assert fwd_only.totals["forward_memory_s"] > plain.totals["forward_memory_s"]


def test_calibration_reads_the_backward_rate_off_the_probes_less_their_fresh_pages():
    probes = _weight_probes()
    eff = {"conv": (0.5, 0, {}, 20e-6, 0.5, ()), "im2col_conv": (0.5, 0, {}, 10e-6, 0.5, ()),
           "linear": (0.5, 0, {}, 5e-6, 0.5, ())}
    # the linear probe's backward, its input requiring a gradient as an inner layer's does:
    #   FLOPs: dgrad 2 × 4096 × 4096 + wgrad 2 × 4096 × 4096 = 67,108,864, at 0.5 × 1e11: 1.34217728 ms
    #   activations: dy 4096 + dx 4096 + saved x 4096 = 12,288 × 4 B = 49,152 B at 1e10: 4.9152 µs
    #   weights read 16,777,216 + their gradient 16,777,216 = 33,554,432 × 4 B = 134,217,728 B, at 8e9: 16.777216 ms
    #   its gradient on fresh pages: 67,108,864 B at a page-fault rate of 2e9: 33.554432 ms; overhead 5 µs
    t = 1.34217728e-3 + 4.9152e-6 + 16.777216e-3 + 33.554432e-3 + 5e-6
    runs = {"linear": [(t * 1.01, 67_108_864), (t, 67_108_864), (t * 0.99, 67_108_864)],
            "conv": [(1e-9, 0)] * 3, "im2col_conv": [(1e-9, 0)] * 3}     # faster than their work: no rate
    assert _weight_bandwidths(probes, runs, eff, 1e11, 1e10, True, 2e9) == {"linear": pytest.approx(8e9)}
    # without the page-fault rate the fresh pages count as weight traffic: 134,217,728 B over 50.33 ms = 2.67 GB/s
    lin = {"linear": probes["linear"]}
    assert _weight_bandwidths(lin, runs, eff, 1e11, 1e10, True, None)["linear"] == \
        pytest.approx(134_217_728 / (t - 1.34217728e-3 - 4.9152e-6 - 5e-6))


def _one_linear(fin: int, fout: int):
    from core.ir import Network, Node

    return Network.make("fc", {"x": (fin,)}, [Node.make("fc", "linear", "x", out_features=fout, bias=False)])


def test_a_linear_layers_weights_that_fit_in_the_last_level_cache_are_read_at_the_bandwidth():
    """``cache_bytes`` 32 MiB (33,554,432 B): mnist_cnn's fc1 shape, 9216 → 128 (1,179,648 × 4 B = 4,718,592 B of
    weights), fits, and its forward reads them at the bandwidth; the 4096 → 4096 probe (67,108,864 B) does not, and
    reads them at ``weight_bandwidth``. A conv's weights keep their rate in the cache (oneDNN reorders them every
    call), and a backward its backward rate."""
    cached = Device(**BASE, weight_bandwidth={"linear": 2e9, "conv": 2e9}, backward_weight_bandwidth={"linear": 2e9},
                    cache_bytes=32 * 2 ** 20)
    small = _one_linear(9216, 128)
    plain = core.estimate(small, Device(**BASE))
    est = core.estimate(small, cached)
    # every byte at 1e10 B/s, as without a weight rate: (4,718,592 + (9216 + 128) × 4) / 1e10 = 475.6 µs
    assert est.totals["forward_bytes"] == 4_718_592 + (9216 + 128) * 4
    assert est.totals["forward_memory_s"] == pytest.approx(est.totals["forward_bytes"] / 1e10)
    assert est.totals["forward_memory_s"] == pytest.approx(plain.totals["forward_memory_s"])
    # without the cache figure its weights take 4,718,592 / 2e9 = 2.359 ms
    uncached = core.estimate(small, Device(**BASE, weight_bandwidth={"linear": 2e9}))
    assert uncached.totals["forward_memory_s"] == pytest.approx((9216 + 128) * 4 / 1e10 + 4_718_592 / 2e9)
    # the backward keeps its rate: the same with or without the cache figure
    assert est.totals["backward_memory_s"] == pytest.approx(core.estimate(small, Device(
        **BASE, backward_weight_bandwidth={"linear": 2e9})).totals["backward_memory_s"])
    assert est.totals["backward_memory_s"] > plain.totals["backward_memory_s"]
    # 67,108,864 B > 33,554,432 B: the weights at 2e9 B/s
    big = core.estimate(_linear(), cached)
    assert big.totals["forward_memory_s"] == pytest.approx((big.totals["forward_bytes"] - 67_108_864) / 1e10
                                                           + 67_108_864 / 2e9)
    # a conv's 9,437,184 B of weights fit too, and still take the conv rate
    conv = core.estimate(_conv(), cached)
    assert conv.totals["forward_memory_s"] == pytest.approx((conv.totals["forward_bytes"] - 9_437_184) / 1e10
                                                            + 9_437_184 / 2e9)


def test_the_last_level_cache_is_read_from_sysfs(tmp_path):
    from core.bridge.calibrate_suites import last_level_cache

    for name, level, kind, size in (("index0", 1, "Data", "32K"), ("index1", 1, "Instruction", "32K"),
                                    ("index2", 2, "Unified", "1024K"), ("index3", 3, "Unified", "32768K")):
        d = tmp_path / name
        d.mkdir()
        (d / "level").write_text(f"{level}\n")
        (d / "type").write_text(f"{kind}\n")
        (d / "size").write_text(f"{size}\n")
    assert last_level_cache(str(tmp_path)) == 32768 * 1024          # the level-3 unified cache: 33,554,432 B
    (tmp_path / "index3" / "size").write_text("oops\n")             # unreadable: the next level down
    assert last_level_cache(str(tmp_path)) == 1024 * 1024
    assert last_level_cache(str(tmp_path / "none")) is None
