"""benchmarks/bench_onnx.py runs (quick: SqueezeNet 1.1 and MobileNet v3 small exported and read back, in a worker
process) and reports what it promises; its numbers are reported, never asserted beyond what they must be."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))

import bench_onnx
import core


def test_bench_onnx_quick(capsys):
    out = bench_onnx.main(["--quick"])
    rows = out["rows"]
    assert [r["model"] for r in rows] == list(bench_onnx.QUICK_MODELS)
    for r in rows:
        assert "error" not in r, r["error"]
        ref = core.analyze(r["model"])
        assert (r["params_zoo"], r["macs_zoo"]) == (ref.totals["params"], ref.totals["macs"])
        assert r["import_ms"] > 0 and r["file_bytes"] > 0 and r["onnx_nodes"] > 0
        assert set(bench_onnx.verdict(r)) == {"params_torch", "macs_torch", "params_zoo", "macs_zoo", "flops_zoo",
                                              "conv_bn", "linear", "no_opaque"}
    s = out["summary"]
    assert s["networks"] == 2 and s["failed"] == 0 and 0 <= s["exact"] <= 2
    assert [r["model"] for r in out["with_weights"]] == list(bench_onnx.QUICK_WITH_WEIGHTS)
    assert out["with_weights"][0]["file_bytes"] > 4 * out["with_weights"][0]["params"]    # float32 weights inside
    text = capsys.readouterr().out
    assert text == bench_onnx.markdown(out) + "\n"
    assert "| squeezenet1_1 | 3×224×224 |" in text and "### Summary" in text


def test_every_torchvision_network_is_benchmarked():
    names = bench_onnx.names()
    assert len(names) == len(core.builtin_names()) - 2 and "mnist_cnn" not in names      # the MNIST pair left out
    chunks = bench_onnx._chunks(names)
    assert sorted(n for c in chunks for n in c) == sorted(names)
    assert ["vit_h_14"] in chunks and all(len(c) <= bench_onnx.CHUNK for c in chunks)


def _row(**kw):
    row = {"model": "inception_v3", "family": "Inception", "input": [3, 299, 299], "with_weights": False,
           "onnx_nodes": 900, "ir_nodes": 300, "params": 23_834_568, "params_torch": 27_161_264, "macs": 5,
           "macs_torch": 5, "params_zoo": 27_161_264, "macs_zoo": 5, "flops": 10, "flops_zoo": 10,
           "unused_zoo": 3_326_696, "attention_zoo": 0, "conv_bn": None, "linear": None, "conv_bn_count": 188,
           "linear_count": 1, "opaque": [], "warnings": [], "import_ms": 20.0, "file_bytes": 1000}
    row.update(kw)
    return row


def test_markdown_explains_what_differs_and_shows_failures():
    rows = [_row(), _row(model="vgg11", error="export: RuntimeError: out of memory"),
            _row(model="x", params=10, params_torch=10, params_zoo=10, unused_zoo=0, opaque=["LeakyRelu", "LeakyRelu"]),
            _row(model="vit", params=10, params_torch=10, params_zoo=10, unused_zoo=0, attention_zoo=12,
                 linear="#1: …", macs=7, macs_zoo=7, macs_torch=9)]
    results = {"rows": rows, "with_weights": [], "summary": bench_onnx.summarize(rows), "versions": "v",
               "seconds": 1.0}
    text = bench_onnx.markdown(results)
    # inception_v3: 27,161,264 − 23,834,568 = 3,326,696, the auxiliary classifier's: exact for the weights it uses
    assert "AuxLogits, 3,326,696 parameters" in text and "| inception_v3 | 3×299×299 | 900 → 300 | exact |" in text
    assert "| vgg11 | 3×299×299 | — | fails [1] |" in text and "1. vgg11: export: RuntimeError" in text
    assert "2 opaque nodes (LeakyRelu)" in text
    assert "12 attention blocks as one op each" in text and "not compared (1)" in text
    assert "MACs −2 against FlopCounterMode" in text or "MACs -2 against FlopCounterMode" in text
    s = results["summary"]
    assert (s["networks"], s["failed"], s["params_torch"], s["macs_torch"], s["no_opaque"], s["linear"],
            s["linear_compared"], s["exact"]) == (4, 1, 3, 2, 2, 2, 2, 1)      # only inception_v3 is exact
