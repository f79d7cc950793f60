"""The benchmarks run (on tiny inputs) so they cannot rot; their numbers are reported, never asserted."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))

import bench_analyze  # noqa: E402
import bench_estimate  # noqa: E402


def test_bench_analyze_quick(capsys):
    rows = bench_analyze.main(["--quick"])
    assert [r["what"] for r in rows] == ["core.analyze(resnet18) batch 1", "core.analyze(resnet18) batch 1024"]
    assert all(r["warm_ms"] > 0 and r["rows_ms"] > 0 and r["cold_ms"] > 0 for r in rows)
    assert "| analysis |" in capsys.readouterr().out


def test_bench_estimate_quick():
    out = bench_estimate.main(["--quick"])
    assert out["estimates"] == 11 * len(bench_estimate.load_devices().devices)   # every device × 11 batch sizes
    assert out["median_ms"] > 0


def test_bench_app_quick():
    import bench_app
    out = bench_app.main(["--quick"])
    assert "pages/0_Layers.py" in out["pages"] and all(ms > 0 for ms in out["pages"].values())
    assert out["cold_s"] > 0
