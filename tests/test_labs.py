"""The Course labs page and its numbers (ui/labs/lab1.py … lab5.py), checked against hand arithmetic from published
figures.

Every expected value is derived in the comment beside it from datasheets (NVIDIA, Intel) or from the layer formulas
(MACs = C_out·H_out·W_out·C_in·k·k per image; 1 MAC = 2 FLOPs), never copied from the code's output.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

import core
from apptest_ref import metric, open_page, table
from core.api import estimate
from core.devices import load_devices
from ui import benchmark as bm
from ui import labs
from ui.devices_form import FASTEST, SURVEY, overlay
from ui.labs import lab1, lab2, lab3, lab4, lab5

ROOT = Path(__file__).resolve().parent.parent
PAGE = str(ROOT / "views" / "course_labs.py")

# VGG conv MACs per image at 224×224, 3×3 kernels, padding 1 (H_out = H_in until each pool halves it):
CONV_224_3_64 = 224 * 224 * 64 * 3 * 9            # = 86,704,128
CONV_224_64_64 = 224 * 224 * 64 * 64 * 9          # = 1,849,688,064
CONV_112_64_128 = 112 * 112 * 128 * 64 * 9        # = 924,844,032
CONV_112_128_128 = 112 * 112 * 128 * 128 * 9      # = 1,849,688,064
CONV_56_128_256 = 56 * 56 * 256 * 128 * 9         # = 924,844,032
CONV_56_256_256 = 56 * 56 * 256 * 256 * 9         # = 1,849,688,064
CONV_28_256_512 = 28 * 28 * 512 * 256 * 9         # = 924,844,032
CONV_28_512_512 = 28 * 28 * 512 * 512 * 9         # = 1,849,688,064
CONV_14_512_512 = 14 * 14 * 512 * 512 * 9         # = 462,422,016
FC_MACS = 25088 * 4096 + 4096 * 4096 + 4096 * 1000   # 102,760,448 + 16,777,216 + 4,096,000 = 123,633,664

VGG11_CONV = (CONV_224_3_64 + CONV_112_64_128 + CONV_56_128_256 + CONV_56_256_256 + CONV_28_256_512
              + CONV_28_512_512 + 2 * CONV_14_512_512)                           # = 7,485,456,384
VGG16_CONV = (CONV_224_3_64 + CONV_224_64_64 + CONV_112_64_128 + CONV_112_128_128 + CONV_56_128_256
              + 2 * CONV_56_256_256 + CONV_28_256_512 + 2 * CONV_28_512_512 + 3 * CONV_14_512_512)  # 15,346,630,656
VGG19_CONV = (CONV_224_3_64 + CONV_224_64_64 + CONV_112_64_128 + CONV_112_128_128 + CONV_56_128_256
              + 3 * CONV_56_256_256 + CONV_28_256_512 + 3 * CONV_28_512_512 + 4 * CONV_14_512_512)  # 19,508,428,800

# NVIDIA Tesla K80 datasheet, per board (2 × GK210) at boost clock: 8.73 TFLOP/s fp32, 2.91 TFLOP/s fp64
K80_BOARD_FP32, K80_BOARD_FP64 = 8.73e12, 2.91e12
K80_GPU_FP32, K80_GPU_FP64 = K80_BOARD_FP32 / 2, K80_BOARD_FP64 / 2   # 4.365 and 1.455 TFLOP/s per GPU


BN_STATS_RESNET18 = 4800 * 2 * 4      # BatchNorm statistics saved once per batch (test below): 38,400 B


@pytest.fixture(scope="module")
def db():
    return load_devices(user_path=None)


# == lab 1 ==========================================================================================================

def test_vgg_macs_and_conv_share_by_hand():
    assert VGG16_CONV + FC_MACS == 15_470_264_320                 # torchvision: VGG16 15.47 GMACs
    s16, s19 = lab1.conv_share(core.analyze("vgg16")), lab1.conv_share(core.analyze("vgg19"))
    assert (s16["conv_macs"], s16["macs"]) == (VGG16_CONV, VGG16_CONV + FC_MACS)
    assert (s19["conv_macs"], s19["macs"]) == (VGG19_CONV, VGG19_CONV + FC_MACS)
    # VGG19: 19,508,428,800 / (19,508,428,800 + 123,633,664) = 19,508,428,800 / 19,632,062,464 = 0.99370
    assert s19["macs_share"] == pytest.approx(0.99370, abs=1e-5)
    # VGG16: 15,346,630,656 / 15,470,264,320 = 0.99201
    assert s16["macs_share"] == pytest.approx(0.99201, abs=1e-5)


def test_k80_times_single_and_double_per_gpu_and_per_board(db):
    t = lab1.k80_table(db, "boost", 1.0).set_index(["network", "K80", "precision"])
    vgg16_flops = 2 * 15_470_264_320               # 1 MAC = 2 FLOPs: 30.94 GFLOP (+0.06% ReLU/pool FLOPs)
    cases = {("one GPU", "fp32"): K80_GPU_FP32,     # 30.94e9 / 4.365e12 = 7.088 ms → 141 images/s
             ("one GPU", "fp64"): K80_GPU_FP64,     # 30.94e9 / 1.455e12 = 21.27 ms → 47 images/s
             ("board (2 GPUs)", "fp32"): K80_BOARD_FP32,   # 30.94e9 / 8.73e12 = 3.544 ms
             ("board (2 GPUs)", "fp64"): K80_BOARD_FP64}   # 30.94e9 / 2.91e12 = 10.63 ms
    for (where, dtype), peak in cases.items():
        row = t.loc[("vgg16", where, dtype)]
        assert row["peak TFLOP/s"] == pytest.approx(peak / 1e12)
        assert row["ms"] == pytest.approx(vgg16_flops / peak * 1e3, rel=1e-3)
        assert row["images/s"] == pytest.approx(peak / vgg16_flops, rel=1e-3)
        # MACs divided by FLOP/s: exactly 15,470,264,320 / peak — the half-size answer
        assert row["ms, MACs as FLOPs"] == pytest.approx(15_470_264_320 / peak * 1e3, rel=1e-9)
        assert row["PALEO ms"] > row["ms"]                        # memory time comes on top
    # A report's VGG16 answer, 15.503e9 "FLOPs" / 8.73e12 = 1.776 ms, is a quarter of one GPU's 7.09 ms at fp32
    assert t.loc[("vgg16", "one GPU", "fp32"), "ms"] / 1.776 == pytest.approx(4.0, rel=0.01)


def test_k80_base_clock_and_ppp(db):
    base = lab1.k80_table(db, "base", 1.0).set_index(["network", "K80", "precision"])
    # base clock 560 MHz: 2 × 2496 cores × 2 FLOP × 0.560 GHz = 5.59 ≈ 5.6 TFLOP/s per board (datasheet), 2.8 per GPU
    assert base.loc[("resnet50", "one GPU", "fp32"), "peak TFLOP/s"] == pytest.approx(2.8, rel=0.01)
    half = lab1.k80_table(db, "boost", 0.5).set_index(["network", "K80", "precision"])
    full = lab1.k80_table(db, "boost", 1.0).set_index(["network", "K80", "precision"])
    # time = FLOPs / (PPP × peak): PPP 0.5 doubles it
    assert (half["ms"] / full["ms"]).to_list() == pytest.approx([2.0] * len(full))


def test_layer_timing_sum_adds_the_assumed_cost_per_layer(db):
    e = estimate("vgg16", db.devices["k80"])
    s = lab1.layer_timing_sum(e, 10.0)
    # VGG16: 13 conv + 13 ReLU + 5 max-pool + avgpool + 3 linear + 2 ReLU = 37 layers that compute (flatten and
    # dropout at inference move nothing) → 37 × 10 µs = 0.37 ms on top of the whole pass
    assert s["layers"] == 37
    assert s["sum_ms"] - s["whole_ms"] == pytest.approx(0.37)


# == lab 2 ==========================================================================================================

def test_survey_has_the_eleven_devices_on_one_roofline(db):
    assert len(SURVEY) == 11 and SURVEY[0] == "geforce-256" and "tpu-v3" in SURVEY
    roofs, order, ridges, left_out = overlay(db, SURVEY, FASTEST)
    assert len(order) == 11 and not left_out
    ridge = ridges.set_index("id")["ridge FLOP/byte"]
    # GeForce 256: 50 GFLOP/s / 2.656 GB/s = 18.83; TPU v3 bf16: 123 TFLOP/s / 900 GB/s = 136.67
    assert ridge["geforce-256"] == pytest.approx(18.83, abs=0.01)
    assert ridge["tpu-v3"] == pytest.approx(136.67, abs=0.01)


def test_networks_on_the_cpu_and_gpu_roofline(db):
    cpu, gpu = db.devices["core-i7-920"], db.devices["k80"]
    # i7-920: 4 cores × 2.66 GHz × 8 FLOP/cycle (SSE add + mul) = 85.12 GFLOP/s ÷ 25.6 GB/s = 3.325 FLOP/byte
    assert cpu.ridge("fp32") == pytest.approx(3.325)
    # K80, one GPU: 4.365 TFLOP/s ÷ 240 GB/s = 18.19 FLOP/byte
    assert gpu.ridge("fp32") == pytest.approx(18.1875)
    t = lab2.network_table(lab2.SURVEY_NETWORKS, cpu, gpu, 1, "3x224x224").set_index("network")
    assert list(t.index) == list(lab2.SURVEY_NETWORKS)
    # AlexNet at batch 1 reads its 61,100,840 weights (× 4 B = 244.4 MB) for 2 × 714.2 M MACs = 1.428 GFLOP: its
    # intensity is at most 1.428e9 / 244.4e6 = 5.84 FLOP/byte < 18.19, so it is memory-bound on the K80
    assert t.loc["alexnet", "FLOP/byte"] <= 5.85 and t.loc["alexnet", "GPU bound"] == "memory"
    for dev, ridge in (("CPU", 3.325), ("GPU", 18.1875)):       # the bound is the side of the ridge
        assert ((t["FLOP/byte"] < ridge) == (t[f"{dev} bound"] == "memory")).all()
    # backward = grad w.r.t. input + grad w.r.t. weights, each as many MACs as the forward, minus the first conv's
    # input grad: VGG19 ≈ 2 − 2·86,704,128 / (2·19,632,062,464) = 2 − 0.0044 = 1.9956
    assert t.loc["vgg19", "backward ÷ forward FLOPs"] == pytest.approx(1.9956, abs=2e-3)
    assert t["backward ÷ forward FLOPs"].between(1.7, 2.1).all()


def test_spearman_and_throughput_predictions(db):
    import pandas as pd

    # ranks of latency [10, 20, 40, 30] are [1, 2, 4, 3]: Σd² = 2, ρ = 1 − 6·2 / (4·15) = 0.8
    df = pd.DataFrame({"GFLOPs": [1, 2, 3, 4], "M params": [4, 3, 2, 1], "latency ms": [10, 20, 40, 30]})
    assert lab2.rank_correlations(df) == pytest.approx({"flops": 0.8, "params": -0.8})
    gpu = db.devices["k80"]
    tp = lab2.throughput_table(["vgg19"], [gpu]).set_index("batch")["samples/s"]
    assert list(tp.index) == [1, 64, 256]
    # at most peak / FLOPs per image: 4.365e12 / (2 × 19.632e9) = 111.2 images/s
    assert (tp <= 4.365e12 / (2 * 19_632_062_464)).all() and tp[256] >= tp[1]


def test_measured_points_use_the_measured_rate():
    rows = [{"network": "alexnet", "input": "3×64×64", "latency_s": 0.01, "iqr_s": 0.0, "flops": 1e8,
             "params": 61_100_840}, {"network": "inception_v3", "refused": "too small"}]
    pts = lab2.measured_points(rows)
    assert len(pts) == 1 and pts.loc[0, "flops"] == pytest.approx(1e10)      # 1e8 FLOPs / 0.01 s
    assert pts.loc[0, "bound"] == "measured (this CPU)"


def test_time_networks_times_a_small_network():
    rows = bm.time_networks(["mnist_cnn"], device="cpu", warmup=0, repeats=1, max_seconds=10.0, threads=1)
    assert rows[0]["network"] == "mnist_cnn" and rows[0]["input"] == "1×28×28" and rows[0]["latency_s"] > 0
    assert rows[0]["flops"] == 24_071_218 and rows[0]["params"] == 1_199_882     # the model's own counts


# == lab 3 ==========================================================================================================

def test_vgg11_per_image_and_per_batch():
    r = core.analyze("vgg11", batch_size=16)
    tot = lab3.batch_totals(r)
    assert tot["macs_image"] == VGG11_CONV + FC_MACS == 7_609_090_048
    # the report's "VGG11 total 121,745,440,768" is 7,609,090,048 MACs × 16
    assert tot["macs_batch"] == 16 * 7_609_090_048 == 121_745_440_768
    t = lab3.pen_and_paper(r).set_index("layer")
    first = t.loc["features.0"]
    assert (first["in"], first["out"], first["kernel"], first["output"]) == (3, 64, "3×3", "224×224")
    assert first["MACs/image"] == CONV_224_3_64 and first["FLOPs × 16"] == 2 * 16 * CONV_224_3_64
    assert t.loc["classifier.0", "MACs/image"] == 25088 * 4096


def test_vgg13_second_conv_keeps_224():
    t = lab3.pen_and_paper(core.analyze("vgg13")).set_index("layer")
    # 64→64 3×3 pad 1 before the first pool: 224×224 out, 224·224·64·64·9 = 1,849,688,064 MACs
    assert t.loc["features.2", "output"] == "224×224" and t.loc["features.2", "MACs/image"] == CONV_224_64_64


def test_v100_and_a100_ridges(db):
    r = lab3.ridge_table(db).set_index(["device", "precision"])["ridge FLOP/byte"].to_list()
    # V100: 15.7e12 / 900e9 = 17.44; A100: 19.5e12 / 1555e9 = 12.54; A100 TF32: 156e12 / 1555e9 = 100.32
    assert r == pytest.approx([17.444, 12.540, 100.32], abs=0.01)


def test_labs_put_the_prediction_beside_the_bound(db):
    """Labs 1 and 3 (issue 13): the fitted model's forward time beside PALEO at PPP 1, or blank and why."""
    from core.api import estimate
    t = lab3.predicted_table(("vgg11",), 16, db).set_index(["device", "precision"])
    r = core.analyze("vgg11", batch_size=16)
    for dev_id, prec in lab3.RIDGE_DEVICES:
        row = t.loc[(db.devices[dev_id].name, prec)]
        predicted = estimate(r, dev_id, batch_size=16, dtype=prec, variant="predicted")
        bound = estimate(r, dev_id, batch_size=16, dtype=prec, variant="paleo")      # PPP 1
        assert row["predicted ms"] == pytest.approx(predicted.totals["forward_s"] * 1e3)
        assert row["PALEO bound ms"] == pytest.approx(bound.totals["forward_s"] * 1e3)
        assert row["predicted ÷ bound"] == pytest.approx(row["predicted ms"] / row["PALEO bound ms"])
        assert row["typical ±%"] == pytest.approx(predicted.typical_error["median"] * 100)
    # the K80: one GPU in fp32 gets the prediction where Kepler is fitted; the board and fp64 never do
    k80 = lab1.k80_table(db)
    for _, row in k80.iterrows():
        dev = db.devices[lab1.K80["boost"][0] if row["K80"] == "one GPU" else lab1.K80["boost"][1]]
        e = estimate(core.analyze(row["network"]), dev, dtype=row["precision"])
        if e.variant == "predicted":
            assert row["K80"] == "one GPU" and row["precision"] == "fp32"
            assert row["predicted ms"] == pytest.approx(e.totals["forward_s"] * 1e3)
        else:
            assert row["predicted ms"] is None or row["predicted ms"] != row["predicted ms"]    # None or NaN
    assert "kepler" in lab1.k80_predicted(db)


def test_algorithms_and_outside_flops():
    r = core.analyze("vgg11", batch_size=16)
    a = lab3.algorithm_table(r, load_devices(user_path=None).devices["a100-40gb-sxm"]).set_index("how")["GFLOPs"]
    assert a["conv algorithm: direct"] * 1e9 == pytest.approx(r.totals["flops"])
    # Winograd F(2×2, 3×3): 16 multiply-adds per 2×2 tile and channel pair instead of 4·9 = 36 → far fewer FLOPs
    assert a["conv algorithm: winograd"] < 0.6 * a["conv algorithm: direct"]
    assert a["outside conv/linear (elementwise, pooling)"] < 0.01 * a["conv algorithm: direct"]


# == lab 4 ==========================================================================================================

def test_resnet_parameter_memory():
    # params × 4 B: 11,689,512 × 4 = 46,758,048 B; 25,557,032 × 4 = 102,228,128 B
    assert lab4.training_memory("resnet18", 1)["param_bytes"] == 46_758_048
    assert lab4.training_memory("resnet50", 1)["param_bytes"] == 102_228_128


def test_training_memory_parts_and_data_parallel():
    m = lab4.training_memory("resnet18", 64, 1, "fp32", "sgd_momentum", 400)["parts"]
    assert m["gradients"] == 46_758_048 and m["optimizer state"] == 46_758_048   # one momentum buffer: 1 × params
    assert m["overhead (assumed)"] == 400 * 2 ** 20 == 419_430_400
    adam = lab4.training_memory("resnet18", 64, 1, "fp32", "adam")["parts"]
    assert adam["optimizer state"] == 2 * 46_758_048                               # two moments
    # saved activations = a fixed part + batch × a per-image part. The fixed part is BatchNorm's batch statistics,
    # saved once per batch: ResNet18 has 64 + 4·64 + (4·128 + 128) + (4·256 + 256) + (4·512 + 512) = 4,800 BN
    # channels × (mean, inverse std) × 4 B = 38,400 B. So saved(64) = 2 × saved(32) − 38,400.
    half = lab4.training_memory("resnet18", 32)["parts"]["saved activations"]
    assert m["saved activations"] == 2 * half - BN_STATS_RESNET18
    two = lab4.training_memory("resnet18", 64, 2, "fp32", "sgd_momentum", 400)
    # 2 data-parallel GPUs: each holds a full replica and ⌈64 / 2⌉ = 32 images' activations
    assert two["per_gpu_batch"] == 32 and two["parts"]["saved activations"] == half
    assert two["parts"]["weights"] == m["weights"] and two["all_gpus"] == 2 * two["per_gpu"]
    assert lab4.per_gpu_batch(5, 2) == 3
    frame = lab4.memory_vs_batch("resnet50", 1, overhead_mib=400)
    assert list(frame["batch"]) == list(lab4.MEMORY_BATCHES)
    assert frame["peak per GPU"].is_monotonic_increasing
    # per GPU: the step's peak (core.timeline) plus the overhead, less than the parts in full, never all alive at once
    whole = lab4.training_memory("resnet18", 64, 1, "fp32", "sgd_momentum", 400)
    assert whole["per_gpu"] == core.analyze("resnet18", batch_size=64).totals["training_bytes"] + 419_430_400
    assert whole["per_gpu"] < whole["sum_of_parts"] == sum(m.values())


# == lab 5 ==========================================================================================================

def test_mnist_conv2_flops_at_batch_1_and_501():
    df = lab5.vs_batch([lab5.MNIST]).set_index("batch")
    # 64·24·24 = 36,864 outputs × (288 multiplies + 287 adds + 1 bias) = 36,864 × 576 = 21,233,664
    assert df.loc[1, "conv2 GFLOPs"] * 1e9 == pytest.approx(21_233_664)
    # × 501 = 10,638,065,664
    assert df.loc[501, "conv2 GFLOPs"] * 1e9 == pytest.approx(10_638_065_664)
    assert list(df.index) == [1, 51, 101, 151, 201, 251, 301, 351, 401, 451, 501]
    mem = df["training MiB"]                  # fixed part + batch × activations: equal steps of 50
    steps = mem.diff().dropna()
    assert steps.to_list() == pytest.approx([steps.iloc[0]] * len(steps))


def test_conv2_widened_to_128_and_fc1_follows():
    t = lab5.side_by_side([lab5.MNIST, lab5.widened(128)]).set_index("quantity")
    wide = t["mnist_cnn_conv2_128"]
    assert wide["conv2 FLOPs"] == f"{128 * 24 * 24 * 576:,}"              # 42,467,328
    assert wide["conv2 params"] == f"{128 * 32 * 9 + 128:,}"               # 36,992
    assert wide["fc1 in → out"] == "18,432 → 128"                          # 128·12·12 after the 2×2 pool
    assert wide["fc1 params"] == f"{18432 * 128 + 128:,}"                   # 2,359,424
    # 1,199,882 − 18,496 − 1,179,776 + 36,992 + 2,359,424 = 2,398,026
    assert wide["params"] == "2,398,026" and t.loc["params", "mnist_cnn"] == "1,199,882"
    with pytest.raises(core.CalcError):
        lab5.widened(0)


def test_units_are_counts_times_four_bytes():
    u = lab5.units_table(core.analyze("mnist_cnn")).set_index("what")
    # conv2: 64·32·9 + 64 = 18,496 weights → × 4 B = 73,984 B; outputs 64·24·24 = 36,864 → 147,456 B
    assert tuple(u.iloc[0][["count", "bytes"]]) == (18_496, 73_984)
    assert tuple(u.iloc[1][["count", "bytes"]]) == (36_864, 147_456)


# == the page =======================================================================================================

@pytest.fixture()
def page():
    return open_page(PAGE)


def _lab(at, n):
    at.button_group(key="lab").set_value(n).run()
    assert not at.exception and not at.error
    return at


def test_every_lab_renders(page):
    for n in labs.LABS:
        _lab(page, n)
        assert any(m.value.startswith("**Question.**") for m in page.markdown)


def test_lab1_controls(page):
    _lab(page, 1)
    assert metric(page, "Conv share of MACs") == "99.37%"                  # VGG19, see above
    page.radio(key="lab1_model").set_value("vgg16").run()
    assert metric(page, "Conv share of MACs") == "99.20%"                  # 15,346,630,656 / 15,470,264,320
    before = table(page, "ms, MACs as FLOPs").set_index(["network", "K80", "precision"])
    page.slider(key="lab1_ppp").set_value(0.5).run()
    after = table(page, "ms, MACs as FLOPs").set_index(["network", "K80", "precision"])
    # 30.94e9 / (0.5 × 4.365e12) = 14.18 ms, twice the PPP-1 time
    assert after.loc[("vgg16", "one GPU", "fp32"), "ms"] == pytest.approx(2 * 30.94e9 / 4.365e12 * 1e3, rel=2e-3)
    assert after.loc[("vgg16", "one GPU", "fp32"), "ms"] == pytest.approx(2 * before.loc[("vgg16", "one GPU", "fp32"),
                                                                                        "ms"])


def test_lab1_opens_the_network_in_the_calculator(page):
    _lab(page, 1)
    page.button(key="lab1_open").click().run()
    assert not page.exception and page.selectbox(key="model").value == "vgg19"


def _lab2_tab(page, label):
    page.session_state["lab2_tab"] = label
    page.run()
    assert not page.exception, page.exception


def test_lab2_controls_and_stored_measurements(page):
    _lab(page, 2)
    assert not any("GPU bound" in d.value.columns for d in page.dataframe)   # lazy: the devices tab is open
    _lab2_tab(page, "Ten networks on two rooflines")
    t1 = table(page, "GPU bound").set_index("network")
    assert t1.loc["alexnet", "GPU bound"] == "memory"                       # intensity ≤ 5.84 < 18.19 (see above)
    page.select_slider(key="lab2_batch").set_value(256).run()
    t256 = table(page, "GPU bound").set_index("network")
    # the 244 MB of AlexNet weights are read once for 256 images: the intensity rises
    assert t256.loc["alexnet", "FLOP/byte"] > t1.loc["alexnet", "FLOP/byte"]
    page.session_state[bm.ACROSS_ROWS] = [
        {"network": n, "input": "3×64×64", "latency_s": s, "iqr_s": 0.0, "flops": f, "params": p}
        for n, s, f, p in (("alexnet", 0.04, 1.96e8, 61_100_840), ("squeezenet1_0", 0.013, 1.09e8, 1_248_424),
                           ("resnet50", 0.066, 6.75e8, 25_557_032))]
    _lab2_tab(page, "Measured here")
    # FLOPs ranks [2, 1, 3] and latency ranks [2, 1, 3] agree: ρ = 1; params ranks [3, 1, 2]: Σd² = 1+0+1 = 2, ρ = 0.5
    assert metric(page, "Spearman ρ measured (this CPU): FLOPs | params") == "1.00 | 0.50"


def test_lab2_timing_button_stores_rows(page, monkeypatch):
    calls = []

    def fake(names, **kw):
        calls.append(tuple(names))
        return [{"network": "squeezenet1_0", "input": "3×64×64", "latency_s": 0.01, "iqr_s": 0.0, "flops": 1e8,
                 "params": 1_248_424}, {"network": "inception_v3", "refused": "kernel larger than input"}]

    monkeypatch.setattr(bm, "time_networks", fake)
    _lab(page, 2)
    _lab2_tab(page, "Measured here")
    page.button(key="lab2_time").click().run()
    assert not page.exception and calls == [lab2.SURVEY_NETWORKS]
    assert page.session_state[bm.ACROSS_ROWS][0]["network"] == "squeezenet1_0"
    assert any("inception_v3" in c.value for c in page.caption)


def test_lab3_batch_control(page):
    _lab(page, 3)
    assert metric(page, "MACs × 16") == "121,745,440,768"                  # 7,609,090,048 × 16
    page.number_input(key="lab3_batch").set_value(1).run()
    assert metric(page, "MACs × 1") == "7,609,090,048"
    page.radio(key="lab3_model").set_value("vgg19").run()
    assert metric(page, "MACs per image") == f"{VGG19_CONV + FC_MACS:,}"     # 19,632,062,464


def test_lab4_controls(page):
    _lab(page, 4)
    assert metric(page, "Parameter memory (fp32)") == "44.59 MiB"          # 46,758,048 / 2^20 = 44.59
    one = table(page, "per GPU MiB").set_index("part")["per GPU MiB"]
    page.radio(key="lab4_gpus").set_value(2).run()
    two = table(page, "per GPU MiB").set_index("part")["per GPU MiB"]
    assert any("batch 16 each" in m.label for m in page.metric)              # ⌈32 / 2⌉
    # fixed + 16·x = (fixed + 32·x + fixed) / 2, with the fixed 38,400 B of BatchNorm statistics (see above)
    assert two["saved activations"] == pytest.approx((one["saved activations"] + BN_STATS_RESNET18 / 2 ** 20) / 2)
    assert two["weights"] == one["weights"] and two["overhead (assumed)"] == 400
    page.number_input(key="lab4_overhead_mib").set_value(0.0).run()
    assert not page.exception
    page.radio(key="lab4_model").set_value("resnet50").run()
    assert metric(page, "Parameter memory (fp32)") == "97.49 MiB"          # 102,228,128 / 2^20 = 97.49


def test_lab5_controls(page):
    _lab(page, 5)
    text = " ".join(m.value for m in page.latex)
    assert "21{,}233{,}664" in text and r"288\ +\ 287\ +\ 1" in text
    page.slider(key="lab5_batch").set_value(501).run()
    assert metric(page, "conv2 FLOPs at batch 501") == "10,638,065,664"    # 21,233,664 × 501
    page.number_input(key="lab5_width").set_value(256).run()
    t = table(page, "quantity").set_index("quantity")
    assert t.loc["conv2 FLOPs", "mnist_cnn_conv2_256"] == f"{501 * 256 * 24 * 24 * 576:,}"   # 501 × 84,934,656
    page.number_input(key="lab5_width").set_value(1).run()                  # the narrowest conv2 still works
    assert not page.exception and not page.error


def test_the_page_does_not_import_torch():
    code = ("import sys; from streamlit.testing.v1 import AppTest; "
            f"at = AppTest.from_file({PAGE!r}, default_timeout=120).run(); assert not at.exception\n"
            "for n in (1, 2, 3, 4, 5):\n"
            "    at.button_group(key='lab').set_value(n).run(); assert not at.exception, n\n"
            "print('torch' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=180, cwd=ROOT)
    assert out.returncode == 0, out.stderr[-1000:]
    assert out.stdout.strip().splitlines()[-1] == "False", out.stderr[-500:]


def test_a_lab_whose_device_did_not_load_says_so(monkeypatch):
    import ui.state

    short = load_devices(user_path=None).remove("v100-sxm2")      # as if its entry in the file were invalid
    monkeypatch.setattr(ui.state, "devices", lambda: short)
    at = AppTest.from_file(PAGE, default_timeout=120).run()
    at.button_group(key="lab").set_value(3).run()
    assert not at.exception and "v100-sxm2" in at.error[0].value
