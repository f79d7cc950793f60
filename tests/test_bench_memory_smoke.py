"""benchmarks/bench_memory.py runs (quick: mnist_cnn at batch 1 and 4, each in its own process) and reports what it
promises; its numbers are reported, never asserted beyond being positive."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))

import bench_memory

PARTS = ("weights", "gradients", "optimizer", "saved", "outputs")      # at the step's peak


def test_bench_memory_quick(capsys):
    out = bench_memory.main(["--quick"])
    rows = [r for r in out["rows"] if r["device"] == "cpu"]
    assert [(r["network"], r["batch"]) for r in rows] == [("mnist_cnn", 1), ("mnist_cnn", 4)]
    for r in out["rows"]:
        assert "failure" not in r, r["failure"]
        p = r["predicted"]
        assert all(p[k] > 0 for k in (*PARTS, "total"))
        assert p["saved_total"] >= p["saved"] - p["input"]          # at the peak some saved activations are gone
        assert p["total"] == sum(p[k] for k in PARTS)          # the breakdown adds up to training_bytes
        assert r["measured"] > 0 and r["step_s"] > 0
        assert r["error"] == (p["total"] - r["measured"]) / r["measured"]
        assert "tracked" in r or "tracked_failure" in r           # the second method ran, or says why not
        if "tracked" in r:
            assert r["tracked"]["peak"]["Total"] > 0 and r["tracked"]["after_forward"]["Total"] > 0
    s = out["summary"]["cpu"]
    assert s["n"] == s["measured"] == 2 and 0 <= s["within_target"] <= 2 and s["median_abs_error"] >= 0
    text = capsys.readouterr().out
    assert text == bench_memory.markdown(out) + "\n"
    assert "| network | batch | device | predicted MiB | measured MiB | error |" in text
    assert "| mnist_cnn | 4 | cpu |" in text and "Summary" in text


def test_markdown_shows_a_failed_run():
    pred = bench_memory.predict("mnist_cnn", 2)
    rows = [{"network": "mnist_cnn", "batch": 2, "device": "cpu", "predicted": pred, "failure": "killed by signal 9"}]
    text = bench_memory.markdown({"rows": rows, "summary": bench_memory.summarize(rows), "threads": 1,
                                  "dtype": "fp32", "optimizer": "sgd_momentum", "target": 0.15})
    assert "— [1]" in text and "[1] mnist_cnn batch 2 on cpu: killed by signal 9" in text
    assert "cpu: nothing measured (1 run(s) failed)" in text


def test_markdown_shows_a_failed_second_method():
    pred = bench_memory.predict("mnist_cnn", 1)
    rows = [{"network": "mnist_cnn", "batch": 1, "device": "cpu", "predicted": pred, "measured": pred["total"],
             "error": 0.0, "step_s": 0.1, "tracked_failure": "ImportError: no MemTracker"}]
    text = bench_memory.markdown({"rows": rows, "summary": bench_memory.summarize(rows), "threads": 1,
                                  "dtype": "fp32", "optimizer": "sgd_momentum", "target": 0.15})
    assert "[1] mnist_cnn batch 1 on cpu, MemTracker: ImportError: no MemTracker" in text
