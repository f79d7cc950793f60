"""The GPU fit (benchmarks/fit_gpu_model.py and its parts, benchmarks/gpu_fit_*.py): the dataset's rows as the fit
reads them, its numpy prediction against ``Estimate``, what the timed regions hold beyond the passes, the optimizer
step as a framework runs it, the held-out folds, and the errors and targets it reports (issue 13). The model's terms
by hand on the toy GPU are in test_gpu_model.py."""

import importlib
import sys
from pathlib import Path

import numpy as np
import pytest

from core import Network, Node
from core import gpu_model as gm
from core.api import estimate
from gpu_toy import TOY, TOY_PARAMS, two_layer


@pytest.fixture
def toy_params(monkeypatch):
    monkeypatch.setattr(gm, "load_params", lambda: {"generations": {"volta": TOY_PARAMS}})


def _bench(name: str):
    """A module of benchmarks/ (the fit script's parts import each other as top-level modules, as there)."""
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))
    return importlib.import_module(name)


def test_the_fitted_file_says_what_each_generation_was_fitted_on():
    """coverage (what a prediction's 'Fitted on' line quotes) is the dataset's usable rows counted by generation and
    compute precision, as the fit script counts them (mixed precision runs its math in fp16)."""
    import sys
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))
    import fit_gpu_model
    gm.load_params.cache_clear()
    rows, _ = fit_gpu_model.load_rows()
    counts: dict = {}
    for r in rows:
        c = "fp16" if r["precision"] == "mixed" else r["precision"]
        counts.setdefault(r["generation"], {}).setdefault(c, 0)
        counts[r["generation"]][c] += 1
    assert gm.load_params()["coverage"] == counts
    assert sum(sum(c.values()) for c in counts.values()) == gm.load_params()["errors"]["loso"]["rows"]


def test_call_cost_by_pass_by_hand():
    """The table behind ``autograd_overhead``: measured time per counted kernel call at batch 1, inference against
    the training step, only this project's measured rows."""
    import numpy as np
    errors = _bench("gpu_fit_errors")
    rows = [{"source_id": "measured-x", "batch": 1, "precision": "fp32", "pass": "inference"},
            {"source_id": "measured-x", "batch": 1, "precision": "fp32", "pass": "training_step"},
            {"source_id": "published", "batch": 1, "precision": "fp32", "pass": "training_step"},
            {"source_id": "measured-x", "batch": 8, "precision": "fp32", "pass": "inference"}]
    # row 0: a conv call (× library 4) and 2 elementwise calls: 6 counted calls, 60 µs → 10 µs a call
    # row 1: 2 conv calls and 12 others: 20 calls, 260 µs → 13 µs a call; ratio 13 / 10 = 1.3
    # rows 2 and 3 (published; batch 8) are not counted whatever they take
    f = {"row": np.array([0, 0, 1, 1, 2, 3]), "calls": np.array([1, 2, 2, 12, 1, 1]),
         "cls": np.array([0, 3, 0, 3, 3, 3]), "measured_s": np.array([60e-6, 260e-6, 1.0, 1.0]), "n": 4}
    (inf, train, ratio), = errors.call_cost_by_pass(rows, f, 4.0).values()
    assert inf == pytest.approx(10e-6) and train == pytest.approx(13e-6) and ratio == pytest.approx(1.3)


def test_the_few_rows_pull_by_hand(monkeypatch):
    """The fit's pull toward the all-rows set: SHRINK per unit |log ratio|; with the screening switch "fewrows"
    (tried 24), SHRINK × SHRINK_ROWS / rows below SHRINK_ROWS rows."""
    solve = _bench("gpu_fit_solve")
    monkeypatch.setattr(solve, "EXP", set())
    assert solve.shrink(4) == solve.shrink(1000) == solve.SHRINK == 0.02
    monkeypatch.setattr(solve, "EXP", {"fewrows"})
    assert solve.SHRINK_ROWS == 100
    assert solve.shrink(1000) == solve.shrink(100) == pytest.approx(0.02)
    assert solve.shrink(4) == pytest.approx(0.5)          # 0.02 × 100 / 4
    assert solve.shrink(50) == pytest.approx(0.04)        # 0.02 × 100 / 50


def test_channels_last_depthwise_convs_are_found():
    """``gpu_model.channels_last_inputs`` (and the fit's screening pass on it, GPU_EXP=dwlast): ConvNeXt-T's blocks
    (3 + 3 + 9 + 3 = 18) each start with a 7x7 depthwise conv whose input comes, through a residual add or a
    downsampling conv, from a permute (0, 3, 1, 2), so all 18 take channels-last input; MobileNet V2's 17 follow
    NCHW convs only (tests/test_zoo_vs_torchvision.py checks both against PyTorch's tensors)."""
    from core import zoo
    from core.graph import compile_network
    feats = _bench("gpu_fit_features")
    cnx = feats.channels_last_depthwise(compile_network(zoo.get("convnext_tiny")))
    assert len(cnx) == 18 and all(n.endswith("block.0") for n in cnx)
    assert feats.channels_last_depthwise(compile_network(zoo.get("mobilenet_v2"))) == set()
    # the model: on 2-byte activations none of their 18 × 2 backward kernels (dgrad, wgrad) on CUDA cores, in fp32
    # all 36; MobileNet V2's 17 × 2 in either
    for name, dtype, on_cores in (("convnext_tiny", "bf16", 0), ("convnext_tiny", "mixed", 0),
                                  ("convnext_tiny", "fp32", 36), ("mobilenet_v2", "bf16", 34)):
        e = estimate(zoo.get(name), "h200-sxm", batch_size=2, dtype=dtype, variant="predicted")
        assert e._predicted.work.kernels.cuda_core.sum() == on_cores, (name, dtype)


def test_a_gpu_at_two_clocks_is_one_held_out_gpu():
    """Leave-one-GPU-out holds out a GPU at its base clock with the same GPU at boost (``k40-base`` with ``k40``),
    so neither predicts the other; sources and other GPUs are their own folds."""
    data = _bench("gpu_fit_data")
    assert data._fold_value({"gpu": "k40-base", "source_id": "s"}, "gpu") == data._fold_value({"gpu": "k40"}, "gpu")
    assert data._fold_value({"gpu": "k80"}, "gpu") == "k80"
    assert data._fold_value({"gpu": "k40-base", "source_id": "jcjohnson-cnn-benchmarks"}, "source_id") == \
        "jcjohnson-cnn-benchmarks"


def test_the_fits_prediction_is_the_estimates_for_every_pass(monkeypatch):
    """The fit's numpy prediction (``predict``, timed regions' extras left out) equals ``Estimate(variant=
    "predicted")`` read as the row's pass says (``pass_seconds``), for one row of each pass and framework in the
    dataset: inference, a training step, and Torch7's forward, backward and forward + backward, and a depthwise
    network's training step."""
    import numpy as np
    data, feats, errors = _bench("gpu_fit_data"), _bench("gpu_fit_features"), _bench("gpu_fit_errors")
    rows, _ = data.load_rows()
    picked: dict = {}
    for r in rows:
        # mixed precision's rows apart: their conv and linear layers add cast kernels to both passes
        picked.setdefault((r["pass"], r["framework"].split()[0], r["precision"] == "mixed"), r)
    sub = list(picked.values())
    assert {r["pass"] for r in sub} == {"inference", "forward", "backward", "forward_backward", "training_step"}
    assert {r["pass"] for r in sub if r["precision"] == "mixed"} >= {"inference", "training_step"}
    # and a depthwise network's training step in bf16 at a batch where its backward is compute-bound on CUDA cores
    sub.append(next(r for r in rows if (r["network"], r["pass"], r["precision"], r["batch"]) ==
                    ("mobilenet_v2", "training_step", "bf16", 256)))
    params = {n: v * 1.1 for n, v in feats.START.items()}          # not the file's: any parameters must agree
    params["autograd_overhead"] = 1.4
    monkeypatch.setattr(gm, "load_params", lambda: {"generations": {r["generation"]: params for r in rows}})
    f = feats.features(sub)
    vec = np.array([params[n] for n in feats.NAMES])
    assert errors.check_against_estimate(sub, f, {"all": vec, **{r["generation"]: vec for r in sub}},
                                         k=len(sub)) < 1e-12


def test_the_held_out_rows_are_predicted_as_an_estimate_predicts_them(monkeypatch):
    """The held-out file (benchmarks/data/gpu_timings_holdout.csv, which no fit reads) is loaded and predicted on
    the fit's own path, and that path equals ``Estimate(variant="predicted")`` on its rows: one of each GPU and
    pass in it. ``holdout`` reports every row once in its source and once in one of the source's groups."""
    import numpy as np
    data, feats, errors = _bench("gpu_fit_data"), _bench("gpu_fit_features"), _bench("gpu_fit_errors")
    rows, skipped = data.load_rows(data.HOLDOUT)
    assert rows and not skipped
    sub = list({(r["gpu"], r["pass"]): r for r in rows}.values())
    assert {r["pass"] for r in sub} == {"inference", "training_step", "forward_backward"}
    params = {n: v * 1.1 for n, v in feats.START.items()}
    monkeypatch.setattr(gm, "load_params", lambda: {"generations": {r["generation"]: params for r in rows}})
    f = feats.features(sub)
    vec = np.array([params[n] for n in feats.NAMES])
    assert errors.check_against_estimate(sub, f, {"all": vec, **{r["generation"]: vec for r in sub}},
                                         k=len(sub)) < 1e-12
    doc = {"generations": {r["generation"]: params for r in rows}, "all_rows": params}
    h = errors.holdout(doc, 1.0)
    by = {name: n for name, n, _, _ in h["groups"]}
    assert h["rows"] == len(rows) == by["all held-out rows"] == sum(by[sid] for sid in h["sources"])
    for sid in h["sources"]:            # each source's rows, once each in one of its GPU-precision-pass groups
        assert by[sid] == sum(n for name, n in by.items() if name.startswith(f"{sid}: "))
    assert set(h["ratio_by_network"]) == {r["network"] for r in rows if r["source_id"] == "timm-benchmark-results"}


def test_zero_grad_in_the_timed_region_by_hand(toy_params):
    """A row whose timed region holds PyTorch < 2's ``zero_grad()`` gets, per layer with trainable parameters, a
    fill and an add kernel per parameter tensor and 4 accesses per gradient element."""
    feats = _bench("gpu_fit_features")
    net = Network.make("zg", {"x": (3, 8, 8)}, [
        Node.make("conv", "conv2d", "x", out_channels=8, kernel_size=3, padding=1, bias=True),
        Node.make("bn", "batch_norm", "conv"),
        Node.make("act", "relu", "bn"),
        Node.make("pool", "adaptive_avg_pool2d", "act", output_size=1),
        Node.make("flat", "flatten", "pool"),
        Node.make("fc", "linear", "flat", out_features=10)])
    for dtype, grad_bytes in (("fp32", 4), ("fp16", 2)):
        e = estimate(net, TOY, batch_size=2, dtype=dtype, variant="predicted")
        works = feats.zero_grad_works(e)
        # conv: weight + bias (2 tensors), 8·3·3·3 + 8 = 224 elements; bn: weight + bias (2), 8 + 8 = 16;
        # fc: weight + bias (2), 8·10 + 10 = 90; relu, pool, flatten: none
        assert [w.calls for w in works] == [4, 4, 4]
        assert [w.bytes for w in works] == [224 * grad_bytes * 4, 16 * grad_bytes * 4, 90 * grad_bytes * 4]
        assert all(w.flops == 0 and w.work_class is None for w in works)


def test_timed_extras_are_named():
    data = _bench("gpu_fit_data")
    assert data.timed_extras({"timed_extra": ""}) == set()
    assert data.timed_extras({"timed_extra": "h2d_input+zero_grad"}) == {"h2d_input", "zero_grad"}
    with pytest.raises(ValueError, match="unknown timed_extra 'zero_grads'"):
        data.timed_extras({"timed_extra": "zero_grads"})


def test_a_timed_rows_extras_are_charged_to_the_fit_not_the_estimate():
    """A dataset row whose timed region holds the input copy and PyTorch < 2's zero_grad() (ryujaehun, ResNet-18,
    RTX 2080 Ti, fp32, batch 12): the fit's prediction is the estimate's passes plus the copy plus the zero-grad
    kernels, each at the model's max(memory, overhead); ``timed=False`` gives the passes alone."""
    data, feats = _bench("gpu_fit_data"), _bench("gpu_fit_features")
    rows, _ = data.load_rows()
    row = next(r for r in rows if r["timed_extra"] == "h2d_input+zero_grad" and r["network"] == "resnet18"
               and r["gpu"] == "rtx-2080-ti" and r["precision"] == "fp32")
    f = feats.features([row])
    v = feats._start_vector()[None, :]
    timed, alone = feats.predict(f, v, timed=True)[0], feats.predict(f, v, timed=False)[0]
    # the copy: 12 × 3 × 224 × 224 inputs × 4 B = 7,225,344 B over PCIe 3.0 x16, per direction
    copy = 12 * 3 * 224 * 224 * 4 / row["device_db"].link("pcie3-x16").bandwidth
    assert f["copy_s"][0] == pytest.approx(copy)
    e = feats._estimate(feats.compile_network(feats.zoo.get("resnet18")), row["device"], 12, "fp32")
    works = feats.zero_grad_works(e)
    # ResNet-18: 20 convs (a weight each), 20 BNs (weight, bias), the fc (weight, bias): 62 tensors, 124 kernels
    assert sum(w.calls for w in works) == 124
    p = feats.START
    zero = sum(max(w.bytes / (row["device"].memory_bandwidth * p["memory"]), w.calls * p["overhead_s"])
               for w in works)
    assert timed == pytest.approx(alone + copy + zero, rel=1e-12)
    assert zero > 0 and copy > 0


def test_optimizer_step_as_run_by_hand(toy_params):
    """Screening 19 (GPU_EXP=foreach): the optimizer step as the framework runs it: the bytes of torch.optim's
    kernels (SGD with momentum: 8 accesses per parameter), and the host cost of PyTorch ≥ 2's foreach kernels
    (FOREACH_CALL_SHARE of a call per parameter tensor) or of a per-parameter loop (one call per tensor)."""
    feats = _bench("gpu_fit_features")
    e = estimate(two_layer(), TOY, batch_size=2, variant="predicted")
    # fc: weight 8·4 = 32 + bias 8 = 40 parameters in 2 tensors; relu: none
    # bytes: 40 × (weight r/w 2 + grad 1 + momentum 5) × 4 B = 40 × 8 × 4 = 1,280 B
    foreach, loop = feats.update_work_as_run(e, True), feats.update_work_as_run(e, False)
    assert foreach.bytes == loop.bytes == 1280
    assert foreach.calls == pytest.approx(2 * feats.FOREACH_CALL_SHARE) and loop.calls == 2
    # foreach: compute 40 × 4 FLOPs (v = μv + g; w −= lr·v) = 160 / 1e9 = 1.6e-7 s, then memory 1,280 B / (1e8 ×
    # 0.8) = 1.6e-5 s; max(1.616e-5, 0.24 calls × 1e-5 s = 2.4e-6 s) = 1.616e-5 s (memory-bound)
    assert e.time(foreach).total_s == pytest.approx(1.616e-5)
    # the loop: max(1.616e-5 s, 2 × 1e-5 s = 2e-5 s) = 2e-5 s
    assert e.time(loop).total_s == pytest.approx(2e-5)
    # the model as it stands: one call per layer with trainable parameters (the fc), the fused update's bytes
    assert e.update_work().calls == 1
    # Adam: (weight 2, grad 2, m and v 8, temporaries 6) accesses per parameter; fp16 model: 2 B each
    # 40 × (2 + 2 + 8 + 6) × 2 B = 1,440 B
    adam = estimate(two_layer(), TOY, batch_size=2, dtype="fp16", optimizer="adam", variant="predicted")
    assert feats.update_work_as_run(adam, True).bytes == 1440


def test_foreach_share_is_the_measured_ratio():
    """FOREACH_CALL_SHARE is the H200's measured optimizer steps' ratio of the foreach kernels' cost per parameter
    tensor to the per-parameter loop's: least squares of each step's time on (tensors, bytes moved)."""
    import json

    import numpy as np

    feats = _bench("gpu_fit_features")
    path = Path(__file__).resolve().parent.parent / "benchmarks/data/measured/h200-2026-11-27/optimizer_steps.jsonl"
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    assert len(rows) == 16 and {r["precision"] for r in rows} == {"fp32", "bf16"}
    # SGD with momentum: 8 accesses per parameter, 4 B each in fp32, 2 B in bf16
    a = np.array([[r["tensors"], r["elements"] * 8 * (4 if r["precision"] == "fp32" else 2)] for r in rows], float)
    per_tensor = {k: np.linalg.lstsq(a, np.array([r[k] for r in rows]) / 1e3, rcond=None)[0][0]
                  for k in ("foreach_ms", "loop_ms")}
    assert per_tensor["foreach_ms"] == pytest.approx(3.15e-6, rel=0.01)      # the figures the fit's comment quotes
    assert per_tensor["loop_ms"] == pytest.approx(26.4e-6, rel=0.01)
    assert feats.FOREACH_CALL_SHARE == round(per_tensor["foreach_ms"] / per_tensor["loop_ms"], 2)


@pytest.mark.parametrize("framework, foreach", [
    ("PyTorch 2.11.0+cu130 (eager), CUDA 13.0, cuDNN 9.19.0", True),
    ("PyTorch 2.0.1", True),
    ("PyTorch 1.13.1, CUDA 11.7", False),
    ("PyTorch, NGC container pytorch:21.03 (native AMP for mixed)", False),     # 21.03 holds PyTorch 1.9
    ("MXNet 1.2.0.rc1, cuDNN 7.0.5", False),
    ("TensorFlow (GitHub hash b1e174e, May 2017), tf_cnn_benchmark", False),
])
def test_which_rows_step_with_foreach(framework, foreach):
    assert _bench("gpu_fit_features").foreach_step(framework) is foreach


def test_parameter_tensors_match_torch():
    """The optimizer step's parameter tensors and elements, as torch's ``model.parameters()`` listed them on the
    H200 (benchmarks/optimizer_step_check.py records both): the model's per-tensor host cost counts the same."""
    import json

    from core import zoo
    from core.graph import compile_network
    from core.work import param_tensors
    path = Path(__file__).resolve().parent.parent / "benchmarks/data/measured/h200-2026-11-27/optimizer_steps.jsonl"
    seen = {}
    for line in path.read_text().splitlines():
        r = json.loads(line)
        seen[r["network"]] = (r["tensors"], r["elements"])
    assert len(seen) == 8
    for name, (tensors, elements) in seen.items():
        c = compile_network(zoo.get(name))
        assert (sum(param_tensors(n) for n in c.nodes), c.trainable) == (tensors, elements), name


def test_host_scatter_by_hand():
    """The measured rows' own scatter at small batch: t(1) / t(8) per (session, GPU, network, precision, pass),
    only this project's measured rows, only cases timed at both batches."""
    errors, report = _bench("gpu_fit_errors"), _bench("gpu_fit_report")

    def row(src, net, b, ms, ps="inference"):
        return {"source_id": src, "gpu": "h200-sxm", "network": net, "precision": "fp32", "pass": ps, "batch": b,
                "measured_s": ms / 1e3}
    rows = [row("measured-a", "n1", 1, 3.0), row("measured-a", "n1", 8, 2.0),       # r = 1.5
            row("measured-a", "n2", 1, 2.3), row("measured-a", "n2", 8, 2.0),       # r = 1.15
            row("measured-a", "n3", 1, 2.0), row("measured-a", "n3", 8, 2.5),       # r = 0.8
            row("measured-a", "n1", 1, 9.0, "training_step"),                        # no batch 8: not a pair
            {**row("measured-a", "n1", 8, 1.0), "gpu": "h100-sxm"},                  # another GPU: not n1's pair
            row("published", "n1", 1, 9.0), row("published", "n1", 8, 1.0)]          # not measured here
    h = errors.host_scatter(rows)
    assert h["pairs"] == 3 and h["over_10"] == 2 and h["over_20"] == 1
    assert h["max"] == pytest.approx(1.5)
    # floors of the pairs above 1.1: (1.5 − 1) / 2.5 = 0.2 and (1.15 − 1) / 2.15 = 0.0698; median 0.1349
    assert h["floor_median"] == pytest.approx((0.2 + 0.15 / 2.15) / 2)
    # (the floor is what one shared time does: 2·3·2 / (3 + 2) = 2.4 ms is 20 % off both 3 and 2 ms)
    text = "\n".join(report._scatter_lines(h))
    assert "Of the 3 " in text and "2 took more than 10 %" in text and "1 more than 20 % (up to 1.50×)" in text
    assert "that floor has a median of 13 %" in text
    assert report._scatter_lines({"pairs": 0}) == [] and errors.host_scatter(rows[-2:]) == {"pairs": 0}


def test_twin_scatter_by_hand():
    """Two machines, one prediction: the same case measured on two GPUs whose predicted times are within 5 %;
    r = the measured ratio over the predicted ratio, the floor (r − 1) / (r + 1), by batch band."""
    errors, report = _bench("gpu_fit_errors"), _bench("gpu_fit_report")

    def row(gpu, net, b, ms, src="measured-a"):
        return {"source_id": src, "gpu": gpu, "network": net, "precision": "fp32", "pass": "inference", "batch": b,
                "measured_s": ms / 1e3}
    rows = [row("h100-sxm", "n1", 1, 3.0), row("h200-sxm", "n1", 1, 2.0),      # 0, 1: r = 1.5
            row("h100-sxm", "n2", 1, 2.0), row("h200-sxm", "n2", 1, 2.08),     # 2, 3: predicted 2 and 2.08: r = 1
            row("h100-sxm", "n3", 8, 2.0), row("h200-sxm", "n3", 8, 4.0),      # 4, 5: predicted 10 % apart
            row("h100-sxm", "n4", 128, 4.0), row("h200-sxm", "n4", 128, 5.0),  # 6, 7: r = 1.25, band ≥ 65
            row("h100-sxm", "n5", 1, 9.0), row("h100-sxm", "n5", 1, 1.0, "measured-b"),   # 8, 9: one GPU
            row("h100-sxm", "n6", 1, 9.0, "published"), row("h200-sxm", "n6", 1, 1.0)]   # 10, 11: not both ours
    pred = np.array([1.0, 1.0, 2.0, 2.08, 1.0, 1.1, 3.0, 3.0, 1.0, 1.0, 1.0, 1.0])
    t = errors.twin_scatter(rows, pred)
    assert t["gpus"] == ["h100-sxm", "h200-sxm"]
    small, large = t["bands"]
    assert small["batch"] == (1, 8) and small["pairs"] == 2 and large["batch"] == (65, None) and large["pairs"] == 1
    # batch 1–8: r = 3 / 2 = 1.5 (floor 0.5 / 2.5 = 0.2) and (2 / 2.08) / (2 / 2.08) = 1 (floor 0); medians 1.25, 0.1
    assert small["ratio"][0] == pytest.approx(1.25) and small["floor"][0] == pytest.approx(0.1)
    # p90 of two values by linear interpolation: 1 + 0.9 · 0.5 = 1.45; 0.9 · 0.2 = 0.18
    assert small["ratio"][1] == pytest.approx(1.45) and small["floor"][1] == pytest.approx(0.18)
    # batch 128: r = 5 / 4 = 1.25, floor 0.25 / 2.25 = 0.1111
    assert large["ratio"][0] == pytest.approx(1.25) and large["floor"][0] == pytest.approx(0.25 / 2.25)
    text = "\n".join(report._twin_lines(t))
    assert "h100-sxm and h200-sxm" in text and "| 1–8 | 2 | 1.25× / 1.45× | 10 % / 18 % |" in text
    assert "| ≥ 65 | 1 | 1.25× / 1.25× | 11 % / 11 % |" in text
    assert report._twin_lines(errors.twin_scatter(rows[8:], pred[8:])) == []


def test_errors_by_batch_by_hand():
    """The held-out |error| split at batch 8, over all rows and per generation (what typical_error quotes)."""
    import numpy as np
    errors = _bench("gpu_fit_errors")
    rows = [{"batch": 1, "generation": "volta"}, {"batch": 8, "generation": "volta"},
            {"batch": 9, "generation": "volta"}, {"batch": 64, "generation": "hopper"}]
    pred, meas = np.array([1.1, 0.7, 1.0, 1.5]), np.ones(4)
    e = errors.errors_by_batch(rows, pred, meas)
    # small: |errors| 0.1 and 0.3 → median 0.2; p90 by linear interpolation 0.1 + 0.9·0.2 = 0.28
    assert e["small"]["all"] == pytest.approx({"median": 0.2, "p90": 0.28, "rows": 2})
    assert e["small"]["volta"] == e["small"]["all"] and "hopper" not in e["small"]
    # large: 0.0 (volta) and 0.5 (hopper) → median 0.25, p90 0.45
    assert e["large"]["all"] == pytest.approx({"median": 0.25, "p90": 0.45, "rows": 2})
    assert e["large"]["hopper"] == pytest.approx({"median": 0.5, "p90": 0.5, "rows": 1})


def test_the_fitted_files_batch_bands_cover_its_rows():
    """core/gpu_params.json's errors_by_batch: the two bands' rows add up to the held-out rows, in total and per
    generation (and no generation is in a band but not in errors_by_generation), and the held-out median over all
    rows lies between the two bands' medians (the median of a union lies between its parts')."""
    doc = gm.load_params()
    bands, loso = doc["errors_by_batch"], doc["errors"]["loso"]
    assert bands["small"]["all"]["rows"] + bands["large"]["all"]["rows"] == loso["rows"]
    for g, e in doc["errors_by_generation"].items():
        assert sum(bands[b].get(g, {"rows": 0})["rows"] for b in ("small", "large")) == e["rows"]
    assert set(bands["small"]) | set(bands["large"]) == set(doc["errors_by_generation"]) | {"all"}
    lo, hi = sorted((bands["small"]["all"]["median"], bands["large"]["all"]["median"]))
    assert lo <= loso["median"] <= hi


def test_target_checks_by_hand():
    """Every condition of issue 13's targets on held-out predictions: all rows, batch 1–8 and mixed precision
    against the median and p90, each GPU's median against 25 % (a GPU and its "-base" clock as one, as the
    leave-one-GPU-out folds take them), and where the rows over 35 % lie."""
    errors, report = _bench("gpu_fit_errors"), _bench("gpu_fit_report")

    def row(gpu, gen, src, b, prec):
        return {"gpu": gpu, "generation": gen, "source_id": src, "batch": b, "precision": prec}
    rows = [row("A", "g1", "measured-a", 1, "fp32"),     # 0: e = 0.5, too slow
            row("A", "g1", "measured-a", 8, "mixed"),    # 1: e = 0.1
            row("A", "g1", "pub-x", 32, "mixed"),        # 2: e = 0.4, too fast
            row("B", "g2", "pub-y", 128, "fp32"),        # 3: e = 0.2
            row("B", "g2", "pub-y", 256, "fp32"),        # 4: e = 0.25
            row("C", "g3", "pub-z", 64, "bf16"),         # 5: e = 1.0, too slow
            row("D", "g1", "pub-w", 128, "fp32"),        # 6: e = 0.3
            row("E", "g2", "pub-v", 256, "fp32"),        # 7: e = 0.25
            row("E-base", "g2", "pub-v", 256, "fp32")]   # 8: e = 0.25 (1 − 0.75), GPU E at its base clock
    pred, meas = np.array([1.5, 1.1, 0.6, 1.2, 1.25, 2.0, 1.3, 1.25, 0.75]), np.ones(9)
    t = errors.target_checks(rows, pred, meas)
    (n_all, *all_rows), (n_small, *small), (n_mixed, *mixed) = [s[1:] for s in t["subsets"]]
    # all: sorted 0.1 0.2 0.25 0.25 0.25 0.3 0.4 0.5 1.0, median the 5th, 0.25; p90 at 0.9 · 8 = 7.2: 0.5 + 0.2 · 0.5
    assert n_all == 9 and all_rows == pytest.approx([0.25, 0.6])
    # batch 1–8: rows 0, 1: median 0.3, p90 0.1 + 0.9 · 0.4 = 0.46; mixed: rows 1, 2: 0.25, 0.1 + 0.9 · 0.3 = 0.37
    assert n_small == 2 and small == pytest.approx([0.3, 0.46])
    assert n_mixed == 2 and mixed == pytest.approx([0.25, 0.37])
    # GPU medians: A (0.5, 0.1, 0.4) 0.4; B (0.2, 0.25) 0.225; C 1.0; D 0.3; E with E-base (0.25, 0.25) 0.25, at
    # the limit: not over
    assert [g for g, *_ in t["gpus"]] == ["A", "B", "C", "D", "E"]
    assert [(g, n) for g, n, *_ in t["gpus_over"]] == [("A", 3), ("C", 1), ("D", 1)]
    a, c, d = t["gpus_over"]
    # rows of its generation a fold without one of its sources keeps: A without measured-a keeps g1's rows 2, 6,
    # without pub-x rows 0, 1, 6: the fewest, 2; C: none of g3; D without pub-w: rows 0, 1, 2
    assert a[2] == pytest.approx(0.4) and a[3:] == (["measured-a", "pub-x"], "g1", 2)
    assert c[3:] == (["pub-z"], "g3", 0) and d[3:] == (["pub-w"], "g1", 3)
    tail = t["tail"]     # over 0.35: rows 0, 2, 5
    assert (tail["over"], tail["rows"], tail["slow"], tail["fast"]) == (3, 9, 2, 1)
    assert [b[1:] for b in tail["bands"]] == [(1, 2), (2, 2), (0, 5)]      # batch 1–8, 9–64, ≥ 65
    assert tail["published"] == (2, 7) and tail["measured"] == (1, 2)
    # the other conditions: batch 1–8's median and p90, mixed's median (0.25) and p90 (0.37), the GPUs: none met
    assert errors.other_conditions(t) == (0, 5)
    text = "\n".join(report._target_lines(t))
    assert "| all rows: median ≤ 15%, p90 ≤ 35% | 9 | median 25.0 %, p90 60.0 % | no, no |" in text
    assert "| batch 1–8: the same | 2 | median 30.0 %, p90 46.0 % | no, no |" in text
    assert "| mixed precision: the same | 2 | median 25.0 %, p90 37.0 % | no, no |" in text
    assert "| each GPU's median ≤ 25% | 5 GPUs | 2 of 5 medians at or under | no (3, below) |" in text
    assert ("A, 3 rows from measured-a, pub-x, median 40.0 % (g1 rows left to fit with the source that leaves "
            "fewest held out: 2)") in text
    assert "C, 1 row from pub-z, median 100.0 % (g3 rows left to fit with its source held out: 0)" in text
    assert "D, 1 row from pub-w, median 30.0 % (g1 rows left to fit with its source held out: 3)" in text
    assert "Held out with its source, C had no row of its generation left to fit" in text      # not D: 3 rows left
    assert "of all rows, 3 of 9 (33 %) are off by more than 35%" in text
    assert "1–8: 1 of 2 (50 %), 9–64: 2 of 2 (100 %), ≥ 65: 0 of 5 (0 %)" in text
    # 2 / 7 = 28.6 %
    assert "Predicted too slow: 2, too fast: 1. Published rows: 2 of 7 (29 %); this project's measured rows: " \
           "1 of 2 (50 %). At batch 1–8 much of it is the machine's state" in text
    # every condition met: two published rows at batch 128 off by 10 % and 5 %; no batch 1–8 or mixed rows to check
    good = errors.target_checks(rows[3:5], np.array([1.1, 1.05]), meas[:2])
    assert errors.other_conditions(good) == (1, 1)
    text = "\n".join(report._target_lines(good))
    # median (0.1 + 0.05) / 2 = 0.075; p90 0.05 + 0.9 · 0.05 = 0.095
    assert "| all rows: median ≤ 15%, p90 ≤ 35% | 2 | median 7.5 %, p90 9.5 % | yes, yes |" in text
    assert "| each GPU's median ≤ 25% | 1 GPU | 1 of 1 medians at or under | yes |" in text
    assert "No row is off by more than 35% held out." in text and "batch 1–8" not in text and "above" not in text
    assert report._target_lines(None) == []
