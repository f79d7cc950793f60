"""The prediction-accuracy benchmark runs (quick: 3 s calibrations, two small networks) and its arithmetic holds;
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


def _case(fwd_s: float, step_s: float) -> dict:
    return {"1": {"input": [3, 224, 224], "forward": {"median_s": fwd_s, "iqr_s": 0.001, "samples": 7},
                  "train_step": {"median_s": step_s, "iqr_s": 0.002, "samples": 7}}}


def test_baseline_ppp_is_fitted_per_pass_on_resnet50_and_reproduces_it():
    r50 = core.analyze("resnet50").totals
    r18 = core.analyze("resnet18").totals
    # ResNet50 forward measured at 80 ms: PPP = FLOPs / peak / t; the baseline then gives back exactly 80 ms for
    # it, and for ResNet18 80 ms × its FLOPs ÷ ResNet50's. The training step gets its own PPP from ResNet50's
    # 240 ms step and its training FLOPs.
    measured = [{"network": "resnet50", "cases": _case(0.080, 0.240)},
                {"network": "resnet18", "cases": _case(0.050, 0.160)}]
    ev = bench_predict.evaluate(SPEC, measured)
    assert ev["baseline_ppp"]["forward"] == pytest.approx(r50["flops"] / 1e11 / 0.080)
    assert ev["baseline_ppp"]["train_step"] == pytest.approx(r50["training_flops"] / 1e11 / 0.240)
    rows = {(r["network"], r["pass"]): r for r in ev["rows"]}
    assert rows["resnet50", "forward"]["baseline_ms"] == pytest.approx(80.0)
    assert rows["resnet50", "train_step"]["baseline_ms"] == pytest.approx(240.0)
    assert rows["resnet18", "forward"]["baseline_ms"] == pytest.approx(80.0 * r18["flops"] / r50["flops"])
    assert rows["resnet18", "train_step"]["baseline_ms"] == pytest.approx(
        240.0 * r18["training_flops"] / r50["training_flops"])
    # the prediction is the calibrated device's estimate of the same case, and the error is relative to measured
    est = core.estimate("resnet18", bench_predict.device_of(SPEC), optimizer="sgd_momentum").totals
    assert rows["resnet18", "forward"]["predicted_ms"] == pytest.approx(est["forward_s"] * 1e3)
    assert rows["resnet18", "train_step"]["predicted_ms"] == pytest.approx(est["training_step_s"] * 1e3)
    assert rows["resnet18", "train_step"]["error"] == pytest.approx(
        abs(est["training_step_s"] * 1e3 - 160.0) / 160.0)
    assert ev["summary"]["forward"]["error"]["n"] == 2


def test_percentile_interpolates():
    assert bench_predict.percentile([1, 2, 3, 4, 5], 0.9) == pytest.approx(4.6)   # 4 + 0.6 × (5 − 4)
    assert bench_predict.percentile([7], 0.9) == 7


def test_batch_16_runs_on_the_small_input_and_batch_1_on_the_networks_own():
    assert bench_predict.input_of("inception_v3", 1) == (3, 299, 299)
    assert bench_predict.input_of("resnet18", 16) == (3, 112, 112)


def test_quick_run_measures_every_protocol_and_reports():
    out = bench_predict.main(["--quick"])
    prot = out["data"]["protocols"]
    assert set(prot) == {"a", "b", "c"}
    for key in ("a", "b"):
        rows = out["eval"][key]["rows"]
        assert {r["network"] for r in rows} == set(bench_predict.QUICK[0])
        assert {r["pass"] for r in rows} == {"forward", "train_step"} and all(r["batch"] == 1 for r in rows)
        assert all(r["measured_ms"] > 0 and r["predicted_ms"] > 0 and math.isfinite(r["error"]) for r in rows)
    assert prot["a"]["threads"] == 1 and prot["b"]["threads"] >= 1
    spec = prot["a"]["calibration"]
    assert set(spec["layer_overhead"]) == set(spec["efficiency"]) == set(core.devices.OP_CLASSES)
    # (c): each trial either refused with a message or was judged on (b)'s timings
    for trial in out["eval"]["c"]:
        assert trial.get("refused") or trial["eval"]["summary"]["forward"]["error"]["n"] == len(prot["b"]["measured"])
    text = bench_predict.markdown(out)
    assert "| (a) controlled | forward |" in text and "| (b) as a user runs it | train step |" in text


def test_latency_of_several_processes_is_the_median_of_their_medians():
    """Three processes at 30, 50 and 40 ms (IQRs 1, 3, 2 ms; 7 samples each): 40 ms, IQR 2 ms, 21 samples, and
    every process's median kept."""
    runs = [{"network": "resnet18", "cases": {"1": {"input": [3, 224, 224],
                                                    **{p: {"median_s": m, "iqr_s": q, "samples": 7}
                                                       for p in bench_predict.PASSES}}}}
            for m, q in ((0.030, 0.001), (0.050, 0.003), (0.040, 0.002))]
    case = bench_predict.combine(runs)["cases"]["1"]
    assert case["input"] == [3, 224, 224]
    assert case["train_step"] == {"median_s": 0.040, "process_medians_s": [0.030, 0.050, 0.040], "iqr_s": 0.002,
                                  "samples": 21}


def test_busy_neighbour_spins_and_is_stopped():
    with bench_predict.busy_neighbour() as n:
        assert n.proc.poll() is None            # running while calibrate would run
    assert n.proc.poll() is not None            # killed after


def test_a_refused_trial_is_reported_with_its_message():
    data = {"machine": {"cpu": "x", "cores": 2, "torch": "2", "date": "2026-11-23"}, "networks": ["resnet18"],
            "batches": [1], "protocols": {"c": {"trials": [{"refused": "another process is using the CPU: …"}]}}}
    ev = bench_predict.evaluate_all(data)
    assert ev["c"] == [{"refused": "another process is using the CPU: …"}]
    assert "refused: “another process is using the CPU: …”" in bench_predict.markdown({"data": data, "eval": ev})


def test_run_all_reuse_reevaluates_the_committed_latencies(tmp_path):
    """`run_all.py --only predict --reuse` writes the section from benchmarks/results/ without timing anything."""
    import run_all

    doc = run_all.main(["--only", "predict", "--reuse", "--out", str(tmp_path / "b.md")])
    assert "## Prediction accuracy on this machine" in doc and "| (b) as a user runs it | forward |" in doc
    assert "| (a) controlled | train step |" in doc and "| (c) trial 1 |" in doc


def test_a_network_that_could_not_be_timed_is_reported_not_dropped():
    why = "field 'input_shape' = (3, 224, 224): the module failed on a 1×3×224×224 fp32 input on cpu: …"
    runs = [{"network": "mnasnet1_0", "cases": _case(0.03, 0.09)}, {"network": "mnasnet1_0", "failed": why}]
    assert bench_predict.combine(runs) == {"network": "mnasnet1_0", "failed": why}   # one failed process is enough
    measured = [{"network": "resnet50", "cases": _case(0.080, 0.240)}, {"network": "mnasnet1_0", "failed": why}]
    ev = bench_predict.evaluate(SPEC, measured)
    assert ev["failed"] == {"mnasnet1_0": why} and {r["network"] for r in ev["rows"]} == {"resnet50"}
    data = {"machine": {"cpu": "x", "cores": 2, "torch": "2", "date": "2026-11-23"}, "networks": ["resnet50"],
            "batches": [1], "protocols": {"b": {"threads": 2, "calibration": SPEC, "refused": [],
                                                "measured": measured}}}
    text = bench_predict.markdown({"data": data, "eval": bench_predict.evaluate_all(data)})
    assert f"(b) as a user runs it: mnasnet1_0 could not be timed: {why}" in text


def test_thread_speedups_compare_one_thread_with_the_users_count():
    """ResNet50: (a) at 1 thread 80 ms forward, (b) 50 ms → measured ×1.6 (step 240 → 150 ms, ×1.6); predicted:
    (a)'s device's estimate ÷ (b)'s, whose peaks differ 2× at the same bandwidth, so between 1 and 2."""
    fast = {**SPEC, "peak_flops": {"fp32": 2e11}}
    ev = {"a": bench_predict.evaluate(SPEC, [{"network": "resnet50", "cases": _case(0.080, 0.240)}]),
          "b": bench_predict.evaluate(fast, [{"network": "resnet50", "cases": _case(0.050, 0.150)}])}
    rows = {r["pass"]: r for r in bench_predict.thread_speedups(ev)}
    assert rows["forward"]["measured"] == pytest.approx(80 / 50)
    assert rows["train_step"]["measured"] == pytest.approx(240 / 150)
    slow_t = core.estimate("resnet50", bench_predict.device_of(SPEC), optimizer="sgd_momentum").totals["forward_s"]
    fast_t = core.estimate("resnet50", bench_predict.device_of(fast), optimizer="sgd_momentum").totals["forward_s"]
    assert rows["forward"]["predicted"] == pytest.approx(slow_t / fast_t) and 1 < rows["forward"]["predicted"] <= 2


def test_several_runs_are_compared_case_by_case_and_against_the_targets():
    import predict_runs

    # two runs of the same two cases: resnet18 forward 50 then 60 ms (|50 ÷ 60 − 1| = 1/6), train 160 then 160 ms (0)
    one = {("resnet18", 1, "forward"): 0.050, ("resnet18", 1, "train_step"): 0.160}
    two = {("resnet18", 1, "forward"): 0.060, ("resnet18", 1, "train_step"): 0.160}
    (pair,) = predict_runs.pair_rows({"1": one, "2": two})
    assert pair["runs"] == "1 / 2"
    assert pair["forward"] == (pytest.approx(1 / 6), pytest.approx(1 / 6))
    assert pair["train_step"] == (0.0, 0.0)
    # a run is within the targets only when both passes' median (≤ 12 %) and p90 (≤ 25 %) are
    row = dict(run="r", cpu="c", date="d", isolate=False, process="warm", refused=0, bandwidth=3e10, self_check=0.1,
               forward_median=0.10, forward_p90=0.20, train_step_median=0.11, train_step_p90=0.24)
    assert "met in 1 of 2 runs" in predict_runs.markdown([row, {**row, "train_step_p90": 0.26}], [pair])
    assert predict_runs.timings({"protocols": {"b": {"measured": [
        {"network": "resnet18", "cases": _case(0.050, 0.160)}]}}}) == one


def test_runs_pooled_take_each_case_s_median_over_the_runs():
    import predict_runs

    def cache(fwd, train):
        return {"protocols": {"b": {"measured": [{"network": "resnet18", "cases": _case(fwd, train)}]}}}

    # forward 50, 70, 60 ms → median 60 ms; training step 160, 150, 170 ms → 160 ms
    data = {"1": cache(0.050, 0.160), "2": cache(0.070, 0.150), "3": cache(0.060, 0.170)}
    (net,) = predict_runs.pooled(data)
    assert net["cases"]["1"]["forward"]["median_s"] == pytest.approx(0.060)
    assert net["cases"]["1"]["train_step"]["median_s"] == pytest.approx(0.160)
    assert data["3"]["protocols"]["b"]["measured"][0]["cases"]["1"]["forward"]["median_s"] == 0.060   # not changed


def test_the_layer_check_reads_a_case_as_name_batch_and_size():
    import cpu_layer_check

    assert cpu_layer_check.parse_case("resnet50:16:112") == ("resnet50", (3, 112, 112), 16)
    assert cpu_layer_check.parse_case("mobilenet_v2") == ("mobilenet_v2", None, 1)


def test_each_protocol_is_predicted_with_the_process_setting_that_describes_it():
    """(a) times each network in a process of its own: "fresh"; (b) in one process: "warm", and (c) is judged on
    (b)'s latencies; (b) with --isolate (a process per network): "fresh"."""
    import bench_predict

    one = {"b": {"processes": 1, "settings": {}}}
    isolated = {"b": {"processes": 24, "settings": {"isolate": True}}}
    assert bench_predict.process_of("a", one) == "fresh"
    assert bench_predict.process_of("b", one) == bench_predict.process_of("c", one) == "warm"
    assert bench_predict.process_of("b", isolated) == bench_predict.process_of("c", isolated) == "fresh"


def test_grain_rows_judge_a_run_with_each_grain_instead_of_its_own():
    """A calibrated CPU at 2 threads: with a grain of 1 s every layer of ResNet-18 runs unsplit, at 2 × its work
    (core.cpu_threads.small_layer_factor), so its forward's compute and memory double; the row's error is that
    estimate against the measured 50 ms, and the run's own grain (0) is not used. A pair 1 s / 0 leaves all but the
    convs and fc split; "--grain 182,1000000/0" reads as those pairs."""
    import predict_runs

    spec = {**SPEC, "calibration": {"threads": 2}, "parallel_grain": 0.0}
    data = {"r": {"protocols": {"b": {"threads": 2, "calibration": spec, "refused": [], "measured": [
        {"network": "resnet18", "cases": _case(0.050, 0.160)}]}}}}
    pairs = [(0.0, 0.0), (1.0, 1.0), (1.0, 0.0)]
    rows = {r["grain"]: r for r in predict_runs.grain_rows(data, pairs, "fresh")}
    forward = {}
    for dense, rest in pairs:
        dev = bench_predict.device_of({**spec, "parallel_grain": rest, "class_grain": {"conv": dense, "linear": dense}})
        forward[(dense, rest)] = core.estimate("resnet18", dev, optimizer="sgd_momentum").totals["forward_s"]
        assert rows[(dense, rest)]["forward_median"] == pytest.approx(abs(forward[(dense, rest)] / 0.050 - 1))
    split = core.estimate("resnet18", bench_predict.device_of(spec), optimizer="sgd_momentum").forward
    unsplit = core.estimate("resnet18", bench_predict.device_of({**spec, "parallel_grain": 1.0}),
                            optimizer="sgd_momentum").forward
    assert unsplit.compute_s + unsplit.memory_s == pytest.approx(2 * (split.compute_s + split.memory_s), rel=1e-6)
    # the convs and fc unsplit only: between all split and all unsplit
    assert forward[(0.0, 0.0)] < forward[(1.0, 0.0)] < forward[(1.0, 1.0)]
    assert predict_runs._grain_pair("182") == (pytest.approx(182e-6), pytest.approx(182e-6))
    assert predict_runs._grain_pair("1000000/0") == (1.0, 0.0)
    text = predict_runs.grain_markdown(list(rows.values()))
    missed = sum(any(r[f"{p}_median"] > 0.12 or r[f"{p}_p90"] > 0.25 for p in ("forward", "train_step"))
                 for r in rows.values())                        # the targets: median ≤ 12 %, p90 ≤ 25 %
    assert "| run | 0 µs | 1000000/0 µs | 1000000 µs |" in text and text.count(" *") == missed


def test_the_report_names_each_grain_a_calibration_fitted():
    """The report's calibration line: one grain as before; a class grain per class, then the rest's (116 µs for
    conv and linear, 284 µs for the rest, as runs 48–50 fitted)."""
    pr = {"threads": 2, "calibration": {**SPEC, "calibration": {"threads": 2}, "parallel_grain": 284e-6}}
    assert "; parallel grain 284 µs" in bench_predict._calibration_line("(b)", pr)
    pr["calibration"]["class_grain"] = {"conv": 116e-6, "linear": 116e-6}
    assert "; parallel grain conv 116 µs, linear 116 µs, the rest 284 µs" in bench_predict._calibration_line("(b)", pr)
