"""The classroom load benchmark runs (3 websocket-protocol sessions against a server-mode server) so it cannot rot:
every step of the flow works over the protocol, no session sees another's device and no file is written."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))

import bench_load


def test_bench_load_quick(capsys):
    out = bench_load.main(["--quick"])
    assert out["sessions"] == 3 and out["errors"] == []
    assert out["steps"] == 3 * 16 and out["p50_ms"] > 0 and out["rss_peak_mib"] > 0
    assert out["files_written"] == []
    # sessions share the cache: 3 sessions on 3 networks still find each other's work (the same page revisited)
    assert out["cache"]["entries"] > 0 and out["cache"]["hits"] > 0 and out["rss_hwm_mib"] >= out["rss_idle_mib"]
    assert "## Classroom load (server mode)" in capsys.readouterr().out
