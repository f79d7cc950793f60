"""benchmarks/bench_graph.py runs (on two small networks) so it cannot rot; its numbers are reported, not asserted."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))

import bench_graph


def test_bench_graph_quick(capsys):
    out = bench_graph.main(["--quick"])
    rows = {r["network"]: r for r in out["rows"]}
    assert set(rows) == {"mnist_cnn", "resnet18"}
    # mnist_cnn: its 12 layers and its input, nothing collapsed (under 200 layers)
    assert rows["mnist_cnn"]["nodes"] == 12 and rows["mnist_cnn"]["drawn"] == 13
    assert all(r["cold_ms"] > 0 and r["warm_ms"] > 0 for r in rows.values())
    assert "| network | nodes |" in capsys.readouterr().out
