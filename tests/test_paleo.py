"""PALEO time model, roofline and data-parallel scaling, checked against hand arithmetic (issue 3 §5)."""

import pytest

from core import CalcError, Network, Node, analyze
from core.api import estimate, scaling
from core.communication import allreduce_time
from core.devices import Device, Interconnect
from core.precision import OPTIMIZERS
from core.roofline import RooflinePoint, attainable, bound, ridge
from core.work import conv_algorithm_flops

# A made-up device with round numbers so every time below can be checked by hand.
TOY = Device(id="toy", name="Toy", vendor="test", kind="GPU", year=2020,
             peak_flops={"fp32": 1e9, "fp16": 4e9}, memory_bandwidth=1e8, memory_capacity=1e9,
             source="hand-made for tests", note="")
LINK = Interconnect(id="toy-link", name="Toy link", bandwidth=1e10, source="hand-made", note="", latency=0.0)


def two_layer() -> Network:
    return Network.make("two", {"x": (4,)}, [Node.make("fc", "linear", "x", out_features=8),
                                             Node.make("act", "relu", "fc")])


def test_two_layer_paleo_time_by_hand():
    e = estimate(two_layer(), TOY, batch_size=2)
    # fc: 2 samples × 4·8 MACs × 2 = 128 FLOPs → 128 / 1e9 = 1.28e-7 s
    #     bytes: weights (4·8 + 8)·4 = 160, input 2·4·4 = 32, output 2·8·4 = 64 → 256 B / 1e8 = 2.56e-6 s
    # act: 2·8 = 16 FLOPs (1 per element) → 1.6e-8 s; reads 64 B, writes 64 B → 1.28e-6 s
    # total: 1.28e-7 + 2.56e-6 + 1.6e-8 + 1.28e-6 = 3.984e-6 s
    assert e.totals["forward_s"] == pytest.approx(3.984e-6)
    assert e.totals["forward_flops"] == 128 + 16
    assert e.totals["forward_bytes"] == 256 + 128
    fc = e.layers[0]
    assert fc["forward_compute_s"] == pytest.approx(1.28e-7)
    assert fc["forward_memory_s"] == pytest.approx(2.56e-6)
    # the roofline variant overlaps compute and memory: max(1.28e-7, 2.56e-6) + max(1.6e-8, 1.28e-6) = 3.84e-6
    assert estimate(two_layer(), TOY, batch_size=2, variant="roofline").totals["forward_s"] == pytest.approx(3.84e-6)


def test_ppp_scales_compute_and_memory_separately():
    full = estimate(two_layer(), TOY, batch_size=2).totals
    half = estimate(two_layer(), TOY, batch_size=2, ppp=0.5, ppp_memory=1.0).totals
    assert half["forward_compute_s"] == pytest.approx(2 * full["forward_compute_s"])
    assert half["forward_memory_s"] == pytest.approx(full["forward_memory_s"])
    both = estimate(two_layer(), TOY, batch_size=2, ppp=0.25).totals      # ppp_memory defaults to ppp
    assert both["forward_s"] == pytest.approx(4 * full["forward_s"])


@pytest.mark.parametrize("kw", [{"ppp": 0}, {"ppp": 1.5}, {"ppp": True}, {"ppp_memory": -0.1}, {"variant": "magic"},
                                {"conv_algorithm": "gemm3"}, {"workers": 0}, {"workers": 2}])
def test_bad_estimate_settings_name_the_field(kw):
    with pytest.raises(CalcError) as err:
        estimate(two_layer(), TOY, **kw)
    assert next(iter(kw)) in str(err.value) or "link" in str(err.value)


def test_missing_precision_is_an_error_listing_what_the_device_has():
    with pytest.raises(CalcError) as err:
        estimate(two_layer(), TOY, dtype="fp64")
    assert "fp64" in str(err.value) and "fp32, fp16" in str(err.value)


def test_mixed_precision_runs_at_the_fp16_peak():
    e = estimate(two_layer(), TOY, batch_size=2, dtype="mixed")
    assert e.peak == 4e9
    # activations 2 bytes, weights 2 bytes: fc reads (40)·2 + 2·4·2 and writes 2·8·2 → 80 + 16 + 32 = 128 B
    assert e.layers[0]["forward_bytes"] == 128


def test_weight_update_by_hand():
    e = estimate(two_layer(), TOY, batch_size=2, optimizer="sgd_momentum")
    params = 4 * 8 + 8                                   # 40 trainable parameters
    o = OPTIMIZERS["sgd_momentum"]                       # 4 FLOPs; read+write w, read g, read+write v
    flops, w_acc, g_acc, s_acc = o.update_flops, o.weight_accesses, o.grad_accesses, o.state_accesses
    assert e.totals["update_flops"] == flops * params == 160
    assert e.totals["update_bytes"] == params * (w_acc * 4 + g_acc * 4 + s_acc * 4) == 800   # 40 · 20 B
    assert e.totals["update_s"] == pytest.approx(160 / 1e9 + 800 / 1e8)


def test_training_step_is_the_sum_of_its_parts():
    t = estimate("mnist_cnn", TOY, batch_size=8).totals
    assert t["training_step_s"] == pytest.approx(t["forward_s"] + t["backward_s"] + t["update_s"])
    assert t["samples_per_s"] == pytest.approx(8 / t["training_step_s"])


def test_time_grows_with_batch():
    times = [estimate("mnist_cnn", TOY, batch_size=b).totals["forward_s"] for b in (1, 2, 4, 64)]
    assert times == sorted(times)
    # weights are read once per batch, so per-sample time falls as the batch grows
    assert times[-1] / 64 < times[0]


def test_ridge_points_of_the_course():
    assert ridge(15.7e12, 900e9) == pytest.approx(17.44, abs=0.01)     # V100 fp32: 15.7e12 / 900e9
    assert ridge(19.5e12, 1555e9) == pytest.approx(12.54, abs=0.01)    # A100 fp32: 19.5e12 / 1555e9


def test_roofline_is_safe_for_layers_without_bytes_or_flops():
    p = RooflinePoint.of("flatten", 0, 0, 1e12, 1e11)
    assert p.intensity is None and p.bound == "none" and p.attainable == 1e12
    assert bound(None, 1e12, 1e11, flops=10) == "compute"
    assert attainable(2.0, 1e12, 1e11) == 2e11          # 2 FLOP/B × 1e11 B/s under the 1e12 roof
    assert attainable(20.0, 1e12, 1e11) == 1e12
    assert bound(9.99, 1e12, 1e11) == "memory" and bound(10.0, 1e12, 1e11) == "compute"   # ridge = 10


def test_fused_view_drops_activation_round_trips():
    plain = estimate(two_layer(), TOY, batch_size=2).layers[1]
    fused = estimate(two_layer(), TOY, batch_size=2, fused=True).layers[1]
    assert plain["forward_bytes"] == 128 and fused["forward_bytes"] == 0
    assert fused["arithmetic_intensity"] is None and fused["bound"] == "compute"


def test_allreduce_by_hand():
    # ring, 4 workers, 100 MB over 10 GB/s: 2·(4−1)/4 · 1e8 / 1e10 = 0.015 s
    assert allreduce_time(1e8, 4, LINK, algorithm="ring") == pytest.approx(0.015)
    # tree: 2·⌈log2 4⌉ · 1e8/1e10 = 0.04 s; parameter server: 2·4·1e8/1e10 = 0.08 s
    assert allreduce_time(1e8, 4, LINK, algorithm="tree") == pytest.approx(0.04)
    assert allreduce_time(1e8, 4, LINK, algorithm="parameter_server") == pytest.approx(0.08)
    assert allreduce_time(1e8, 1, LINK) == 0.0
    slow = Interconnect(id="slow", name="slow", bandwidth=1e9, source="hand-made", note="", latency=1e-5)
    # latency: ring adds 2·(K−1)·α = 6·1e-5
    assert allreduce_time(1e8, 4, slow) == pytest.approx(2 * 3 / 4 * 1e8 / 1e9 + 6e-5)


@pytest.mark.parametrize("algorithm", ["ring", "tree", "parameter_server"])
def test_allreduce_grows_with_model_and_falls_with_bandwidth(algorithm):
    fast = Interconnect(id="fast", name="fast", bandwidth=1e11, source="hand-made", note="")
    assert allreduce_time(2e8, 8, LINK, algorithm=algorithm) > allreduce_time(1e8, 8, LINK, algorithm=algorithm)
    assert allreduce_time(1e8, 8, fast, algorithm=algorithm) < allreduce_time(1e8, 8, LINK, algorithm=algorithm)


def test_one_worker_equals_single_device():
    single = estimate("resnet18", TOY, batch_size=4).totals
    one = estimate("resnet18", TOY, batch_size=4, workers=1, link=LINK).totals
    assert one == single


def test_strong_and_weak_scaling():
    strong = scaling("resnet18", TOY, LINK, workers=(1, 2, 4), batch_size=8)
    assert [r["per_worker_batch"] for r in strong] == [8, 4, 2]
    assert strong[0]["speedup"] == 1.0 and strong[0]["communication_s"] == 0.0
    assert all(0 < r["efficiency"] <= 1.0 + 1e-12 for r in strong)
    weak = scaling("resnet18", TOY, LINK, workers=(1, 2, 4), batch_size=8, mode="weak")
    assert [r["per_worker_batch"] for r in weak] == [8, 8, 8]
    # weak scaling: every worker does the same compute, so the step only grows by the all-reduce
    assert weak[2]["compute_s"] == pytest.approx(weak[0]["compute_s"])
    assert weak[2]["training_step_s"] > weak[0]["training_step_s"]


def conv_net(k=3, stride=1, groups=1, c_in=4, c_out=8, hw=8) -> Network:
    return Network.make("c", {"x": (c_in, hw, hw)}, [Node.make("conv", "conv2d", "x", out_channels=c_out,
                                                                 kernel_size=k, padding=k // 2, stride=stride,
                                                                 groups=groups)])


def test_winograd_and_fft_arithmetic_by_hand():
    info = analyze(conv_net()).compiled.by_name["conv"]
    # direct: 2 · 8·8 outputs · 8 C_out · 4 C_in · 9 = 36,864 FLOPs per sample
    assert conv_algorithm_flops(info, "direct") == (36864, 0)
    # Winograd F(2×2,3×3): tiles = ⌈8/2⌉·⌈8/2⌉ = 16; 32·16·4·8 + 32·16·4 + 24·16·8 = 16,384 + 2,048 + 3,072 = 21,504
    # filter transform once per batch: 42 · 4 · 8 = 1,344
    assert conv_algorithm_flops(info, "winograd") == (21504, 1344)
    # FFT over the padded 10×10 input: M = 100, 2.5·100·log2(100) = 1,660.96 per FFT, 4 + 8 channel FFTs → 19,931.5;
    # products 4·4·8·100 = 12,800 → 32,731 per sample; filters 32 FFTs → 53,150 per batch
    assert conv_algorithm_flops(info, "fft") == (32731, 53150)


@pytest.mark.parametrize("kw", [{"k": 5}, {"stride": 2}, {"groups": 4}])
def test_winograd_only_where_it_applies(kw):
    info = analyze(conv_net(**kw)).compiled.by_name["conv"]
    assert conv_algorithm_flops(info, "winograd") is None


@pytest.mark.parametrize("hw, k", [(8, 3), (32, 3), (32, 5)])
def test_auto_picks_the_cheapest_algorithm_per_layer(hw, k):
    net = conv_net(c_in=64, c_out=64, hw=hw, k=k)
    info = analyze(net).compiled.by_name["conv"]
    batch = 16
    options = {alg: r[0] * batch + r[1] for alg in ("direct", "winograd", "fft")
               if (r := conv_algorithm_flops(info, alg)) is not None}
    row = estimate(net, TOY, batch_size=batch, conv_algorithm="auto").layers[0]
    assert row["conv_algorithm"] == min(options, key=options.get)
    assert row["forward_flops"] == min(options.values())
    # at 8×8, Winograd's 2.25× fewer products beat the FFT; at 32×32 the FFT's kernel-size-free products win
    assert row["conv_algorithm"] == {(8, 3): "winograd", (32, 3): "fft", (32, 5): "fft"}[(hw, k)]


def test_training_memory_fit_is_reported():
    big = Device(id="tiny", name="Tiny", vendor="t", kind="GPU", year=2020, peak_flops={"fp32": 1e12},
                 memory_bandwidth=1e11, memory_capacity=1e6, source="hand-made", note="")
    assert estimate("resnet18", big).totals["fits_in_memory"] is False   # 11.7 M params · 4 B > 1 MB


def test_calibrated_efficiency_scales_compute_per_class_of_work():
    calibrated = Device(**{**TOY.__dict__, "id": "cal", "efficiency": {"linear": 0.5, "elementwise": 0.25}})
    plain = estimate(two_layer(), TOY, batch_size=2).layers
    cal = estimate(two_layer(), calibrated, batch_size=2).layers
    assert cal[0]["forward_compute_s"] == pytest.approx(2 * plain[0]["forward_compute_s"])    # linear at 50%
    assert cal[1]["forward_compute_s"] == pytest.approx(4 * plain[1]["forward_compute_s"])    # relu at 25%
    assert cal[0]["forward_memory_s"] == pytest.approx(plain[0]["forward_memory_s"])          # bandwidth as measured


def test_layer_overhead_is_added_once_per_layer_that_runs():
    """A calibrated device's fixed cost per layer call: mnist_cnn runs 9 layers forward — conv1, conv2 (conv);
    fc1, fc2 (linear); max_pool2d (pool: no figure of its own here, so elementwise's); relu, relu_1, relu_2,
    log_softmax (elementwise). dropout1/2 and flatten are views at inference and cost nothing.
    Overheads 10 / 20 / 1 µs → 2·10 + 2·20 + (1 + 4)·1 = 65 µs more than without."""
    import dataclasses

    base = dataclasses.replace(TOY, efficiency={"conv": 1.0})       # per-layer sums, no change in rate
    slow = dataclasses.replace(base, layer_overhead={"conv": 10e-6, "linear": 20e-6, "elementwise": 1e-6})
    plain, with_overhead = estimate("mnist_cnn", base), estimate("mnist_cnn", slow)
    assert with_overhead.totals["forward_s"] - plain.totals["forward_s"] == pytest.approx(65e-6, rel=1e-9)
    assert with_overhead.totals["forward_overhead_s"] == pytest.approx(65e-6, rel=1e-9)
    assert plain.totals["forward_overhead_s"] == 0.0
    # compute and memory time are untouched: the overhead is its own term
    assert with_overhead.totals["forward_compute_s"] == plain.totals["forward_compute_s"]
    # pooling with its own figure: 65 − 1 + 7 = 71 µs
    own = dataclasses.replace(slow, layer_overhead={**slow.layer_overhead, "pool": 7e-6})
    assert estimate("mnist_cnn", own).totals["forward_overhead_s"] == pytest.approx(71e-6, rel=1e-9)


def test_layer_overhead_out_of_range_is_refused():
    from core.devices import load_devices
    spec = {**load_devices(user_path=None).devices["v100-sxm2"].to_dict(), "id": "mine",
            "layer_overhead": {"conv": -1e-6}}
    with pytest.raises(CalcError, match="layer_overhead"):
        load_devices(user_path=None).add(spec)


def test_bytes_written_to_fresh_pages_cost_the_page_fault_rate():
    """A calibrated Linux CPU: core.cpu_heap replays glibc's malloc over the forward pass. mnist_cnn at batch 64,
    largest mmap threshold 1,000,000 B (so none of its big blocks ever raises the 128 KiB start threshold: every
    block from 128 KiB up is mmap-ed, fresh, on every pass), fresh-page rate 1 GB/s:
      conv1 (1 input channel: no input copy): output copy + output, 32·26·26·4·64 = 5,537,792 B each → 11,075,584;
      conv2: input copy 5,537,792 + output copy and output 64·24·24·4·64 = 9,437,184 each → 24,412,160
        (its 18,496·4 = 73,984 B weight copy comes from the heap, reused after the first pass);
      max_pool2d: output 64·12·12·4·64 = 2,359,296 + int64 indices 4,718,592 → 7,077,888;
      the ReLUs (F.relu, not in place) their outputs, 5,537,792 + 9,437,184 = 14,974,976;
      dropout and flatten allocate nothing, fc1's 32,768 B and fc2's come from the heap.
    11,075,584 + 24,412,160 + 7,077,888 + 14,974,976 = 57,540,608 B → 57.540608 ms more forward, nothing more
    backward."""
    import dataclasses

    base = dataclasses.replace(TOY, efficiency={"conv": 1.0})
    fresh = dataclasses.replace(base, alloc_threshold=1e6, alloc_bandwidth=1e9)
    a, b = estimate("mnist_cnn", base, batch_size=64), estimate("mnist_cnn", fresh, batch_size=64)
    assert b.totals["forward_s"] - a.totals["forward_s"] == pytest.approx(57_540_608 / 1e9, rel=1e-9)
    assert b.totals["forward_memory_s"] - a.totals["forward_memory_s"] == pytest.approx(57_540_608 / 1e9, rel=1e-9)
    assert (b.totals["forward_fresh_bytes"], a.totals["forward_fresh_bytes"]) == (57_540_608, 0)
    assert b.totals["forward_fresh_s"] == pytest.approx(57_540_608 / 1e9, rel=1e-9)
    by_layer = {r["name"]: r["forward_s"] - q["forward_s"] for r, q in zip(b.layers, a.layers)}
    assert by_layer["conv2"] == pytest.approx(24_412_160 / 1e9, rel=1e-9)
    assert by_layer["fc1"] == 0
    assert b.totals["backward_s"] == a.totals["backward_s"]


def test_global_pools_are_costed_as_elementwise_work_and_windowed_pools_as_pooling():
    """A calibrated CPU runs windowed max pooling at ~0.3 % of its GEMM peak but streams a global average pool like
    any elementwise pass, so the classes differ: ResNet50's 3×3/2 max pool is "pool"; its global average pool (2048
    channels → 2048×1×1) and an EfficientNet squeeze-excitation pool are "elementwise"; GoogLeNet's 3×3 stride-1
    branch pool is "pool"; convs and the classifier keep theirs."""
    def classes(net):
        return {n.name: n.rule.work_class(n.ctx) for n in analyze(net).compiled.nodes}

    r50 = classes("resnet50")
    assert (r50["maxpool"], r50["avgpool"], r50["conv1"], r50["fc"]) == ("pool", "elementwise", "conv", "linear")
    assert classes("efficientnet_b0")["features.1.0.block.1.avgpool"] == "elementwise"
    assert classes("googlenet")["inception3a.branch4.0"] == "pool"


def _calibrated_cpu() -> Device:
    """TOY as a calibrated Linux CPU: per-class efficiencies and per-call overheads, glibc's page-fault term."""
    import dataclasses

    return dataclasses.replace(TOY, kind="CPU", efficiency={"conv": 0.5, "linear": 0.25, "elementwise": 0.1},
                               layer_overhead={"conv": 1e-5, "elementwise": 2e-6}, alloc_threshold=1e6,
                               alloc_bandwidth=1e9)


def test_a_device_gets_the_terms_its_fields_name():
    """A datasheet GPU's time is compute + memory; a calibrated Linux CPU adds the fresh-page term (glibc's
    malloc) and the per-call overhead, because its fields say so."""
    assert [t.name for t in estimate("mnist_cnn", TOY).terms] == ["compute", "memory"]
    names = [t.name for t in estimate("mnist_cnn", _calibrated_cpu()).terms]
    assert names == ["compute", "memory", "fresh_pages", "overhead"]


@pytest.mark.parametrize("variant", ["paleo", "roofline"])
@pytest.mark.parametrize("settings", [{}, {"conv_algorithm": "auto"}, {"fused": True}])
@pytest.mark.parametrize("device", ["toy", "calibrated"])
def test_per_layer_rows_sum_to_the_totals(variant, settings, device):
    """One path makes both: the layers' forward and backward times, FLOPs, bytes and fresh bytes add up to the
    pass totals, for PALEO (which times a class of layers as one work) and the roofline (a max per layer)."""
    dev = TOY if device == "toy" else _calibrated_cpu()
    e = estimate("resnet18", dev, batch_size=4, variant=variant, **settings)
    t = e.totals
    for which in ("forward", "backward"):
        times = [getattr(lt, which) for lt in e.layer_times]
        assert sum(p.total_s for p in times) == pytest.approx(t[f"{which}_s"], rel=1e-12)
        assert sum(p.compute_s for p in times) == pytest.approx(t[f"{which}_compute_s"], rel=1e-12)
        assert sum(p.overhead_s for p in times) == pytest.approx(t[f"{which}_overhead_s"], rel=1e-12, abs=1e-18)
        assert sum(p.flops for p in times) == pytest.approx(t[f"{which}_flops"], rel=1e-12)
        assert sum(p.bytes for p in times) == t[f"{which}_bytes"]
    assert sum(lt.forward.fresh_bytes for lt in e.layer_times) == t["forward_fresh_bytes"]
    assert sum(row["share"] for row in e.layers) == pytest.approx(1.0)


def test_calibrated_terms_by_hand():
    """two_layer (fc 4→8, in-place-less ReLU) at batch 2 on the calibrated TOY CPU:
      fc: 128 FLOPs at 1e9 × 0.25 (linear) = 5.12e-7 s; 256 B at 1e8 = 2.56e-6 s; no linear overhead figure → 0;
      relu: 16 FLOPs at 1e9 × 0.1 (elementwise) = 1.6e-7 s; 128 B = 1.28e-6 s; overhead 2e-6 s;
      every block is below glibc's 128 KiB start threshold and comes from the heap: its first pass's 64 + 64 B are
      fresh, later passes reuse them, so the warm pass has 0 fresh bytes.
    forward = 5.12e-7 + 2.56e-6 + 1.6e-7 + 1.28e-6 + 2e-6 = 6.512e-6 s."""
    e = estimate(two_layer(), _calibrated_cpu(), batch_size=2)
    fc, act = e.layer_times
    assert (fc.work_class, act.work_class) == ("linear", "elementwise")
    assert fc.forward.compute_s == pytest.approx(5.12e-7)
    assert (fc.forward.overhead_s, act.forward.overhead_s) == (0.0, 2e-6)
    assert act.forward.compute_s == pytest.approx(1.6e-7)
    assert e.totals["forward_fresh_bytes"] == 0
    assert e.totals["forward_s"] == pytest.approx(6.512e-6)


def test_an_estimate_works_on_a_report_or_a_network_and_names_what_else_it_got():
    """core.paleo loads nothing itself: a name goes through core.api (core.estimate)."""
    from core import paleo

    net = two_layer()
    by_net = paleo.estimate(net, TOY, batch_size=2).totals["forward_s"]
    by_report = paleo.estimate(analyze(net), TOY, batch_size=2).totals["forward_s"]
    assert by_net == by_report == pytest.approx(3.984e-6)
    with pytest.raises(CalcError, match="core.estimate"):
        paleo.estimate("mnist_cnn", TOY)
