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


def _cpu(threads: int, grain: float | None, class_grain: dict | None = None) -> Device:
    return Device(id="local", name="test CPU", vendor="x", kind="CPU", year=2026, peak_flops={"fp32": 1e11},
                  memory_bandwidth=2e10, source="hand-made", efficiency={"conv": 0.8, "linear": 0.7},
                  layer_overhead={"conv": 10e-6, "linear": 5e-6}, calibration={"threads": threads},
                  parallel_grain=grain, class_grain=class_grain or {})


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


def test_a_class_with_a_grain_of_its_own_takes_it_and_its_fallbacks_too():
    """``class_grain`` {"conv": 1 s} over ``parallel_grain`` 0: every conv layer of ResNet-18 (and none other) runs
    unsplit, 2× its work at the calibrated rates (2 × w < 1 s, so max(w, min(2w, 1 s)) = 2w), and the ReLUs, the
    pools and fc are as without a grain. {"conv": 1 s} also holds for pointwise and im2col convs (their fallback);
    {"linear": 1 s} leaves the convs alone and doubles fc. At one thread it changes nothing."""
    rep = core.analyze("resnet18")
    plain = {lt.name: lt for lt in Estimate(rep, _cpu(2, None)).layer_times}
    for cls, doubled in (("conv", lambda lt: lt.work_class in ("conv", "pointwise_conv", "im2col_conv")),
                         ("linear", lambda lt: lt.work_class == "linear")):
        grained = Estimate(rep, _cpu(2, 0.0, {cls: 1.0}))
        assert any(doubled(lt) for lt in grained.layer_times)
        for lt in grained.layer_times:
            base = plain[lt.name].forward
            work = base.compute_s + base.memory_s + base.fresh_pages_s
            assert lt.forward.total_s == pytest.approx(base.total_s + (work if doubled(lt) else 0.0), rel=1e-12)
    assert Estimate(rep, _cpu(1, 0.0, {"conv": 1.0})).totals == Estimate(rep, _cpu(1, None)).totals
