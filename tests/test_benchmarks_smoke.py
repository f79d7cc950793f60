"""The benchmarks run (on tiny inputs) so they cannot rot; their numbers are reported, never asserted."""

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))

import bench_analyze
import bench_estimate

ROOT = Path(__file__).resolve().parent.parent


def test_bench_analyze_quick(capsys):
    rows = bench_analyze.main(["--quick"])
    assert [r["what"] for r in rows] == ["core.analyze(resnet18) batch 1", "core.analyze(resnet18) batch 1024"]
    assert all(r["warm_ms"] > 0 and r["rows_ms"] > 0 and r["cold_ms"] > 0 for r in rows)
    assert "| analysis |" in capsys.readouterr().out


def test_bench_estimate_quick():
    out = bench_estimate.main(["--quick"])
    assert out["estimates"] == 11 * len(bench_estimate.load_devices().devices)   # every device × 11 batch sizes
    assert set(out["median_ms"]) == {"auto", "paleo"} and all(v > 0 for v in out["median_ms"].values())
    assert 0 < out["predicted_devices"] < len(bench_estimate.load_devices().devices)   # fitted GPUs only


def test_bench_app_quick():
    import bench_app
    out = bench_app.main(["--quick"])
    assert "views/layers.py" in out["pages"] and all(ms > 0 for row in out["pages"].values() for pair in row.values()
                                                       for ms in pair)
    assert out["cold_s"] > 0


def test_bench_tools_quick(capsys):
    import bench_tools
    out = bench_tools.main(["--quick"])
    rows = out["rows"]
    assert [(r["model"], r["batch"]) for r in rows] == [("mobilenet_v3_small", 1), ("mobilenet_v3_small", 2)]
    for r in rows:
        assert all(r[k] > 0 for k in ("warm_ms", "rows_ms", "cold_ms", "cold_load_ms"))
        assert set(r["tools"]) == set(bench_tools.TOOLS)
        for tool, res in r["tools"].items():
            # every tool either has a timing or says why not; on a model this small all of them run
            assert "median_ms" in res, (tool, res)
            assert res["median_ms"] > 0 and res["n"] >= 1 and res["macs"] > 0
            assert res["ratio_warm"] > 0 and res["ratio_rows"] > 0 and res["ratio_cold"] > 0
    text = capsys.readouterr().out
    assert text == bench_tools.markdown(out) + "\n"
    assert "| model | batch | core warm |" in text and "Targets:" in text


def test_bench_counting_quick(capsys):
    import math

    import bench_counting
    out = bench_counting.main(["--quick"])
    rows = out["rows"]
    assert [r["model"] for r in rows] == list(bench_counting.QUICK_MODELS)
    for r in rows:
        assert r["published_params"] > 0 and r["published_gmacs"] > 0 and r["crop"] > 0
        assert set(r["tools"]) == set(bench_counting.TOOLS)
        c = r["tools"]["core"]
        assert c["params"] > 0 and c["macs"] > 0
        for tool, res in r["tools"].items():
            if "error" in res:                      # a tool may fail on a model: then it says why
                assert res["error"]
                continue
            assert res["macs"] > 0 and math.isfinite(res["macs_err"])
            if tool not in bench_counting.MAC_ONLY_TOOLS:
                assert res["params"] > 0 and math.isfinite(res["params_err"])
    s = out["summary"][("core", "macs")]
    assert s["compared"] == len(rows) and math.isfinite(s["median_abs_err"]) and math.isfinite(s["max_abs_err"])
    text = capsys.readouterr().out
    assert "### Summary" in text and "### Parameters" in text and "### Multiply-adds" in text
    assert all(f"| {m} |" in text for m in bench_counting.QUICK_MODELS)


def test_bench_counting_rejects_an_unknown_model():
    import bench_counting
    with pytest.raises(SystemExit, match="not_a_net"):
        bench_counting.main(["--models", "not_a_net"])


def test_run_all_writes_sections_and_keeps_others(tmp_path):
    import run_all
    out = tmp_path / "benchmarks.md"
    run_all.main(["--quick", "--only", "estimate", "--out", str(out)])
    first = out.read_text()
    assert first.startswith("# Benchmarks") and "| CPU |" in first and "| torch / torchvision |" in first
    assert "<!-- bench:estimate -->" in first and "## Time estimates" in first
    # another benchmark alone: the estimate section is kept from the file
    run_all.main(["--quick", "--only", "counting", "--out", str(out)])
    second = out.read_text()
    assert second.index("<!-- bench:counting -->") < second.index("<!-- bench:estimate -->")
    assert first[first.index("<!-- bench:estimate -->"):] in second


def test_measure_gpu_writes_lines_the_dataset_builder_reads(tmp_path, monkeypatch):
    """benchmarks/measure_gpu.py on the CPU (one small network, two cases): its raw lines and machine file are what
    build_gpu_timings.measured_here turns into dataset rows, one row per line, naming the line."""
    import importlib.util
    import json

    import measure_gpu

    folder = tmp_path / "measured" / "cpu-test"
    assert measure_gpu.main(["--out", str(folder), "--device", "cpu", "--nets", "squeezenet1_1", "--batches", "1",
                             "--precisions", "fp32"]) == 0
    lines = [json.loads(x) for x in (folder / "gpu_measured.jsonl").read_text().splitlines()]
    assert [(m["network"], m["batch"], m["pass"]) for m in lines] == [("squeezenet1_1", 1, "inference"),
                                                                       ("squeezenet1_1", 1, "training_step")]
    assert all(m["min_ms"] <= m["measured_ms"] <= m["max_ms"] and m["runs"] >= measure_gpu.MIN_TIMED
               for m in lines)
    env = json.loads((folder / "gpu_env.json").read_text())
    (folder / "gpu_env_run1.json").write_text(json.dumps({**env, "gpu": "CPU (test)", "cudnn": 91900,
                                                          "smi": {"clocks.max.sm": "0"}}))
    spec = importlib.util.spec_from_file_location("build_gpu_timings", ROOT / "benchmarks/data/build_gpu_timings.py")
    b = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(b)
    monkeypatch.setattr(b, "HERE", tmp_path)
    monkeypatch.setattr(b, "MEASURED", {"cpu-test": "h200-sxm"})
    rows = b.measured_here()
    assert [(r["pass"], r["measured_ms"], r["source_id"]) for r in rows] == \
        [(m["pass"], round(m["measured_ms"], 6), "measured-cpu-test") for m in lines]
    assert rows[1]["source"].startswith("benchmarks/data/measured/cpu-test/gpu_measured.jsonl :: line 2 ")
    assert "cuDNN 9.19.0" in rows[0]["framework"]


def test_measure_gpu_builds_googlenet_as_the_calculator_does():
    """GoogLeNet with weights=None has auxiliary heads, and its training step would return three outputs; the
    sweep builds it as the calculator's zoo does (no aux heads), so one training step runs and the parameters are
    torchvision's published count for its weights (6,624,904)."""
    import torch
    import torchvision

    import measure_gpu

    case = measure_gpu.Case(torch, torchvision, "googlenet", "fp32", torch.device("cpu"))
    assert sum(p.numel() for p in case.model.parameters()) == 6_624_904
    case.runner("training_step", 2)()
    assert all(p.grad is not None for p in case.model.parameters())


def test_kernel_probe_dry_run_on_the_cpu(tmp_path):
    """benchmarks/kernel_probe.py on the CPU (--quick: batch 2, fp32 and bf16): one line per depthwise case and
    pass, and per batch-norm case and pass, each timed; the probe's shapes are the layers it names."""
    import json
    import math

    import kernel_probe

    assert kernel_probe.main(["--out", str(tmp_path), "--device", "cpu", "--quick", "--deadline", "300",
                              "--parts", "dw,bn"]) == 0
    dw = [json.loads(x) for x in (tmp_path / "probe_dw.jsonl").read_text().splitlines()]
    assert len(dw) == len(kernel_probe.DEPTHWISE) * 2 * 2 * 3        # cases × dtypes × layouts × passes
    assert all(r["ms"] > 0 and r["out_hw"] == math.ceil(r["hw"] / r["stride"]) for r in dw)
    assert {r["pass"] for r in dw} == {"forward", "dgrad", "wgrad"} and {r["layout"] for r in dw} == {"nchw", "nhwc"}
    bn = [json.loads(x) for x in (tmp_path / "probe_bn.jsonl").read_text().splitlines()]
    assert len(bn) == len(kernel_probe.BATCHNORM) * 2 * 2            # cases × precisions × passes
    assert all(r["ms"] > 0 and r["batch"] == 2 for r in bn)
    # the "same.*" cases hold one tensor size over 32 … 2048 channels: 64·56·56 = 200,704 elements a sample, ±3 %
    same = [(c, h) for label, c, h, _ in kernel_probe.BATCHNORM if label.startswith("same.")]
    assert [c for c, _ in same] == [32, 64, 128, 256, 512, 1024, 2048]
    assert all(abs(c * h * h / 200_704 - 1) < 0.03 for c, h in same)


def test_bench_probes_puts_the_model_beside_the_probes():
    """bench_probes re-reads the committed H200 probes and asks core for the same work; the train-mode batch norm's
    channel fill shows in the model's column by hand: one tensor size on 32 against 256 channels."""
    import bench_probes
    out = bench_probes.measure()
    bn = out["batch_norm"]
    assert len(bn) == 17 * 4 and all(r["model_forward_ms"] > 0 and r["model_backward_ms"] > 0 for r in bn)
    same = {r["channels"]: r for r in bn if r["case"].startswith("same.") and r["precision"] == "fp32"}
    # memory-bound: memory time ∝ elements / fill on the H200's 132 SMs. 32 channels: 32·79·79 = 199,712 elements a
    # sample, fill 32 / 132; 256 channels: 256·28·28 = 200,704, fill min(1, 256 / 132) = 1. The kernel's compute
    # (its FLOPs at the peak, no fill: the 32-channel tensor's 0.5 % fewer) is added to each, which pulls the
    # ratio a little below the memory's: within 2 % of it
    expected = (199_712 / (32 / 132)) / 200_704                          # = 4.10
    ratio = same[32]["model_forward_ms"] / same[256]["model_forward_ms"]
    assert expected * 0.98 < ratio < expected
    assert len(out["steps"]) == 5 and all(r["model_ms"] > 0 and r["kernel_ms"] <= r["measured_ms"]
                                          for r in out["steps"])
    text = bench_probes.markdown(out)
    assert "| resnet18 | bf16 | 256 |" in text and "NCHW over channels-last" in text
    # the H100's probes beside the H200's: the datasheets' bandwidths 4.8 / 3.35 TB/s = 1.4328. The model's batch
    # norm takes the slower of its bytes at the bandwidth (D on the H200, 1.4328·D on the H100) and its elements at
    # the SM rate (S): both GPUs have 132 SMs at 1.98 GHz, so S is the same and its H100 / H200 ratio,
    # max(1.4328·D, S) / max(D, S), lies between 1 (SM-bound on both) and 1.4328 (DRAM-bound on both)
    from core import gpu_model
    from core.devices import load_devices
    db = load_devices()
    assert gpu_model.sm_cycles(db.device("h100-sxm")) == gpu_model.sm_cycles(db.device("h200-sxm")) == 132 * 1.98e9
    sec = out["second"]
    assert sec["bandwidth_ratio"] == pytest.approx(4.8 / 3.35)
    assert sec["batch_norm"] and all(1 - 1e-12 <= r["model_ratio"] <= 4.8 / 3.35 + 1e-12 for r in sec["batch_norm"])
    assert all(r["h200_ms"] >= 1.0 for r in sec["batch_norm"])
    assert "batch norm, PyTorch's kernels" in sec["families"] and "which kernels scale with DRAM bandwidth" in text
