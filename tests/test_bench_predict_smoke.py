"""The prediction-accuracy benchmark runs (quick: short calibration, two small networks) and its arithmetic holds;
its accuracy is reported in docs/benchmarks.md, never asserted here."""

import math
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))

import bench_predict
import core

SPEC = {"id": "local", "name": "test CPU", "vendor": "x", "kind": "CPU", "year": 2026,
        "peak_flops": {"fp32": 1e11}, "memory_bandwidth": 2e10, "source": "hand-made", "note": ""}


def test_baseline_ppp_is_fitted_on_resnet50_and_reproduces_it():
    r50 = core.analyze("resnet50").totals["flops"]
    # ResNet50 measured at 80 ms: PPP = FLOPs / peak / t; the baseline then gives back exactly 80 ms for it,
    # and for a network with half the FLOPs (measured 50 ms) it gives 40 ms: an error of 10/50 = 20 %
    data = {"calibration": SPEC, "measured": [
        {"network": "resnet50", "input": [3, 224, 224], "latency": {"1": {"median_s": 0.080, "iqr_s": 0.001}}},
        {"network": "resnet18", "input": [3, 224, 224], "latency": {"1": {"median_s": 0.050, "iqr_s": 0.001}}}]}
    ev = bench_predict.evaluate(data)
    assert ev["baseline_ppp"] == pytest.approx(r50 / 1e11 / 0.080)
    rows = {r["network"]: r for r in ev["rows"]}
    assert rows["resnet50"]["baseline_ms"] == pytest.approx(80.0) and rows["resnet50"]["baseline_error"] < 1e-12
    r18 = core.analyze("resnet18").totals["flops"]
    assert rows["resnet18"]["baseline_ms"] == pytest.approx(80.0 * r18 / r50)
    assert rows["resnet18"]["error"] == pytest.approx(abs(rows["resnet18"]["predicted_ms"] - 50.0) / 50.0)


def test_percentile_interpolates():
    assert bench_predict.percentile([1, 2, 3, 4, 5], 0.9) == pytest.approx(4.6)   # 4 + 0.6 × (5 − 4)
    assert bench_predict.percentile([7], 0.9) == 7


def test_quick_run_measures_and_reports():
    out = bench_predict.main(["--quick"])
    rows = out["eval"]["rows"]
    assert {r["network"] for r in rows} == set(bench_predict.QUICK[0]) and all(r["batch"] == 1 for r in rows)
    assert all(r["measured_ms"] > 0 and r["predicted_ms"] > 0 and math.isfinite(r["error"]) for r in rows)
    spec = out["data"]["calibration"]
    assert set(spec["layer_overhead"]) == set(spec["efficiency"]) == set(core.devices.OP_CLASSES)
    assert "| PALEO, calibrated |" in bench_predict.markdown(out)


def test_latency_of_several_processes_is_the_median_of_their_medians():
    """Three processes at 30, 50 and 40 ms (IQRs 1, 3, 2 ms; 7 samples each): 40 ms, IQR 2 ms, 21 samples, and
    every process's median kept."""
    runs = [{"network": "resnet18", "input": [3, 224, 224],
             "latency": {"1": {"median_s": m, "iqr_s": q, "samples": 7}}}
            for m, q in ((0.030, 0.001), (0.050, 0.003), (0.040, 0.002))]
    lat = bench_predict.combine(runs)["latency"]["1"]
    assert lat == {"median_s": 0.040, "process_medians_s": [0.030, 0.050, 0.040], "iqr_s": 0.002, "samples": 21}


def test_run_all_reuse_reevaluates_the_committed_latencies(tmp_path):
    """`run_all.py --only predict --reuse` writes the section from benchmarks/results/ without timing anything."""
    import run_all

    doc = run_all.main(["--only", "predict", "--reuse", "--out", str(tmp_path / "b.md")])
    assert "## Prediction accuracy on this machine" in doc and "| PALEO, calibrated |" in doc
    assert "fresh process(es) per network" in doc
