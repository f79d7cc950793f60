"""The Maxwell, Pascal and Volta rows of MXNet's performance pages and TensorFlow's DGX-1 P100 rows in
benchmarks/data/gpu_timings.csv (issue 13, "more rows"), and the device entries they need (m40, m60).

Counts are the published tables' cells, counted by hand; converted values are hand computations.
"""

from __future__ import annotations

import csv
from collections import Counter
from pathlib import Path

import pytest

from core.devices import load_devices

ROOT = Path(__file__).resolve().parent.parent
CSV_PATH = ROOT / "benchmarks" / "data" / "gpu_timings.csv"
NEW_GPUS = ("m40", "m60", "p100-sxm2", "v100-sxm2")


@pytest.fixture(scope="module")
def rows() -> list[dict]:
    with CSV_PATH.open(newline="", encoding="utf-8") as f:
        return list(csv.DictReader(f))


def test_m40_and_m60_entries_follow_their_published_figures():
    db = load_devices()
    m40, m60 = db.device("m40"), db.device("m60")
    assert m40.architecture == m60.architecture == "maxwell"
    # M40 (V100 whitepaper Table 1): 24 SMs x 128 cores = 3072, boost 1114 MHz → 2 x 3072 x 1.114e9 = 6.844e12
    assert (m40.sm_count, m40.boost_clock) == (24, 1.114e9)
    assert m40.peak("fp32") == pytest.approx(2 * 3072 * 1.114e9, rel=1e-4)
    # 6.008 Gb/s GDDR5 on 384 bits: 6.008e9 x 48 B = 288.4 GB/s; L2 3072 KB
    assert m40.memory_bandwidth == pytest.approx(6.008e9 * 48, rel=1e-3)
    assert m40.l2_bytes == 3072 * 1024
    # M60, one GM204: 16 SMs x 128 = 2048 cores, boost 1178 MHz → 2 x 2048 x 1.178e9 = 4.825e12
    assert (m60.sm_count, m60.boost_clock) == (16, 1.178e9)
    assert m60.peak("fp32") == pytest.approx(2 * 2048 * 1.178e9, rel=1e-4)
    # 5.012 Gb/s GDDR5 on 256 bits: 5.012e9 x 32 B = 160.4 GB/s; 8 GB of the board's 16 GB; L2 2 MB
    assert m60.memory_bandwidth == pytest.approx(5.012e9 * 32, rel=1e-3)
    assert m60.memory_capacity == 8 * 2 ** 30 and m60.l2_bytes == 2 * 2 ** 20
    for d in (m40, m60):
        assert d.source.startswith("https://") and d.sources


def test_every_row_gpu_is_in_the_device_database(rows):
    db = load_devices()
    for gpu in NEW_GPUS:
        assert db.device(gpu).architecture == {r["generation"] for r in rows if r["gpu"] == gpu}.pop()


def test_mxnet_rows_per_gpu_pass_and_precision(rows):
    """Cells of the pages' tables, by hand. Columns taken: scoring VGG/VGG 16, Inception-v3, Resnet 50, Resnet 152
    (Alexnet and Inception-BN left out); training Inception-v3, Resnet 50 (Alexnet(*8/*16) left out)."""
    mx = Counter((r["gpu"], r["pass"], r["precision"]) for r in rows if r["source_id"] == "apache-mxnet-perf")
    assert mx == {
        ("k80", "inference", "fp32"): 58, ("k80", "training_step", "fp32"): 24,   # unchanged
        ("m40", "inference", "fp32"): 6 * 4,             # 2016: batch 1-32 x 4 columns
        ("p100-sxm2", "inference", "fp32"): 6 * 4,
        ("m40", "training_step", "fp32"): 6 * 2,
        ("p100-sxm2", "training_step", "fp32"): 6 * 2,
        ("m60", "inference", "fp32"): 9 * 4 - 2,         # 2018: batch 1-256 x 4, VGG 16 OOM at 128 and 256
        ("v100-sxm2", "inference", "fp32"): 9 * 4,
        ("v100-sxm2", "inference", "fp16"): 9 * 4,       # the "float 16" table
        ("m60", "training_step", "fp32"): 6 * 2,         # batch 1-32
        ("v100-sxm2", "training_step", "fp32"): 8 * 2,   # batch 1-128
    }


@pytest.mark.parametrize("gpu, pas, prec, net, batch, ips, ms", [
    # 2016 P100 training, Resnet 50 at batch 32: 181.53 images/s → 32 / 181.53 x 1000 = 176.279 ms
    ("p100-sxm2", "training_step", "fp32", "resnet50", 32, 181.53, 176.279),
    # 2016 M40 scoring, column 'VGG' (configuration A = vgg11) at batch 1: 142.10 → 1000 / 142.10 = 7.037 ms
    ("m40", "inference", "fp32", "vgg11", 1, 142.10, 7.037),
    # 2018 M60 scoring, Inception-v3 at batch 256: 183.42 → 256 / 183.42 x 1000 = 1395.703 ms
    ("m60", "inference", "fp32", "inception_v3", 256, 183.42, 1395.703),
    # 2018 V100 float16 scoring, Resnet 50 at batch 1: 270.89 → 1000 / 270.89 = 3.692 ms
    ("v100-sxm2", "inference", "fp16", "resnet50", 1, 270.89, 3.692),
    # 2018 V100 training, Inception-v3 at batch 128: 253.68 → 128 / 253.68 x 1000 = 504.573 ms
    ("v100-sxm2", "training_step", "fp32", "inception_v3", 128, 253.68, 504.573),
])
def test_mxnet_cells_convert(rows, gpu, pas, prec, net, batch, ips, ms):
    hits = [r for r in rows if r["source_id"] == "apache-mxnet-perf" and r["gpu"] == gpu and r["pass"] == pas
            and r["precision"] == prec and r["network"] == net and int(r["batch"]) == batch]
    assert len(hits) == 1
    assert float(hits[0]["original_value"]) == ips
    assert float(hits[0]["measured_ms"]) == pytest.approx(ms, abs=1e-3)


def test_mxnet_sources_name_the_table_of_their_gpu(rows):
    where = {"m40": "/ M40:", "p100-sxm2": "/ P100:", "m60": "/ M60:", "v100-sxm2": "/ V100"}
    for r in rows:
        if r["source_id"] == "apache-mxnet-perf" and r["gpu"] in where:
            assert where[r["gpu"]] in r["source"], r["source"]
            page = "docs/how_to/perf.md" if r["gpu"] in ("m40", "p100-sxm2") else "docs/faq/perf.md"
            assert page in r["source"]
            assert ("using float 16" in r["source"]) == (r["precision"] == "fp16")


def test_tensorflow_p100_rows(rows):
    """DGX-1 P100, 1 GPU, synthetic data: InceptionV3, ResNet-50, ResNet-152, VGG16 at batch 64 and 32."""
    p100 = [r for r in rows if r["source_id"] == "tensorflow-benchmarks-doc" and r["gpu"] == "p100-sxm2"]
    assert Counter(int(r["batch"]) for r in p100) == {64: 4, 32: 4}
    assert {r["pass"] for r in p100} == {"training_step"} and {r["precision"] for r in p100} == {"fp32"}
    # ResNet-50 at batch 64: 219 images/s → 64 / 219 x 1000 = 292.237 ms
    r50 = next(r for r in p100 if r["network"] == "resnet50" and r["batch"] == "64")
    assert float(r50["measured_ms"]) == pytest.approx(292.237, abs=1e-3)
    # VGG16 keeps its variables on the GPU (replicated with NCCL); the others on the CPU (parameter_server)
    for r in p100:
        assert ("replicated (with NCCL)" in r["note"]) == (r["network"] == "vgg16")
