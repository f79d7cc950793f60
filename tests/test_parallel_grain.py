"""A CPU calibrated at several threads: a layer too small to split among them runs at one thread's speed
(``parallel_grain``, core.cpu_threads.small_layer_factor), checked by hand and against the estimate without it."""

import pytest

import core
from core.cpu_threads import small_layer_factor
from core.devices import Device
from core.paleo import Estimate

GRAIN = 100e-6


@pytest.mark.parametrize("work, factor", [
    (10e-6, 2.0),      # 2 × 10 µs = 20 µs of one thread's work, under the grain: unsplit, 20 µs = 2×
    (30e-6, 2.0),      # 60 µs, under the grain: 2×
    (80e-6, 1.25),     # 160 µs at one thread, above the grain: the split is paid up to it, 100 µs = 1.25 × 80
    (200e-6, 1.0),     # 400 µs: max(200, min(400, 100)) = 200, the calibrated rate holds
    (0.0, 1.0),        # no work
])
def test_factor_by_hand(work, factor):
    assert small_layer_factor(work, 2, GRAIN) == pytest.approx(factor)


def test_one_thread_or_no_grain_changes_nothing():
    assert small_layer_factor(10e-6, 1, GRAIN) == 1.0 and small_layer_factor(10e-6, None, GRAIN) == 1.0
    assert small_layer_factor(10e-6, 2, 0.0) == 1.0 and small_layer_factor(10e-6, 2, None) == 1.0


def _cpu(threads: int, grain: float | None) -> Device:
    return Device(id="local", name="test CPU", vendor="x", kind="CPU", year=2026, peak_flops={"fp32": 1e11},
                  memory_bandwidth=2e10, source="hand-made", efficiency={"conv": 0.8, "linear": 0.7},
                  layer_overhead={"conv": 10e-6, "linear": 5e-6}, calibration={"threads": threads},
                  parallel_grain=grain)


def test_each_layers_work_is_scaled_by_its_own_factor_and_overheads_are_not():
    """ResNet-18 at batch 1: the estimate with the grain = Σ over the layers of the estimate without it of
    (compute + memory) × the layer's factor + its overhead: small layers (the 7×7 stage's) slow down, the large
    (the stem) do not."""
    rep = core.analyze("resnet18")
    plain, grained = Estimate(rep, _cpu(2, None)), Estimate(rep, _cpu(2, GRAIN))
    expected = 0.0
    for lt in plain.layer_times:
        work = lt.forward.compute_s + lt.forward.memory_s + lt.forward.fresh_pages_s
        expected += work * small_layer_factor(work, 2, GRAIN) + lt.forward.overhead_s
    assert grained.totals["forward_s"] == pytest.approx(expected, rel=1e-12)
    assert grained.totals["forward_s"] > plain.totals["forward_s"]
    rows = {lt.name: lt.forward for lt in grained.layer_times}
    base = {lt.name: lt.forward for lt in plain.layer_times}
    assert rows["conv1"].compute_s == pytest.approx(base["conv1"].compute_s)     # 118 MMACs: large, split
    # layer4.1.relu: 512 × 7 × 7 = 25,088 fp32 values read and written, 200,704 B at 20 GB/s ≈ 10 µs: doubled
    # to 20 µs of one thread's work, under 100 µs, so it runs unsplit at 2×; its per-call overhead is unchanged
    small, small_base = rows["layer4.1.relu"], base["layer4.1.relu"]
    assert small_base.memory_s == pytest.approx(2 * 25088 * 4 / 2e10)
    assert small.memory_s == pytest.approx(2 * small_base.memory_s)
    assert small.overhead_s == pytest.approx(small_base.overhead_s)
    # fc: 512×1000 weights (2 MB at 20 GB/s ≈ 102 µs) make it large enough to split: unchanged
    assert rows["fc"].total_s == pytest.approx(base["fc"].total_s)
    assert sum(lt.forward.total_s for lt in grained.layer_times) == pytest.approx(grained.totals["forward_s"])


def test_one_thread_ignores_the_grain():
    rep = core.analyze("resnet18")
    assert Estimate(rep, _cpu(1, GRAIN)).totals == Estimate(rep, _cpu(1, None)).totals
