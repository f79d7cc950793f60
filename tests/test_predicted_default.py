"""A GPU estimate defaults to the fitted prediction (issue 13, item 5): the variant "auto", its reasons, the PALEO
bound beside a prediction, the typical error it is labelled with, and which term limits each layer."""

import dataclasses
import json

import pytest

from core import Network, Node
from core import gpu_model as gm
from core.api import estimate
from core.devices import Device, load_devices
from core.terms import PassTime, limiting_term
from core.variants import auto_variant, typical_error

DB = load_devices()
TOY = Device(id="toy-gpu", name="Toy GPU", vendor="test", kind="GPU", year=2020,
             peak_flops={"fp32": 1e9, "fp16": 4e9, "int8": 8e9}, memory_bandwidth=1e8, memory_capacity=1e9,
             source="hand-made for tests", note="", architecture="volta", sm_count=10)
TOY_PARAMS = {"conv": 0.5, "grouped_conv": 0.25, "linear": 0.5, "tensor_tf32": 0.5, "tensor_fp16": 0.5,
              "memory": 0.8, "overhead_s": 1e-5, "backward": 0.5, "backward_weight": 0.5}
ERRORS = {"insample": {"median": 0.1, "p90": 0.3, "rows": 500}, "loso": {"median": 0.2, "p90": 0.5, "rows": 500},
          "logo": {"median": 0.2, "p90": 0.5, "rows": 500}}


@pytest.fixture
def toy_params(monkeypatch):
    monkeypatch.setattr(gm, "load_params", lambda: {"generations": {"volta": TOY_PARAMS}, "errors": ERRORS})


def two_layer() -> Network:
    return Network.make("two", {"x": (4,)}, [Node.make("fc", "linear", "x", out_features=8),
                                             Node.make("act", "relu", "fc")])


@pytest.mark.parametrize("device, settings, variant, reason", [
    ("toy", {}, "predicted", "volta"),
    ("toy", {"ppp": 0.5}, "paleo", "PPP"),
    ("toy", {"ppp_memory": 0.5}, "paleo", "PPP"),
    ("toy", {"conv_algorithm": "fft"}, "paleo", "fft"),
    ("toy", {"dtype": "int8"}, "paleo", "int8"),
    ("k80-board", {}, "paleo", "board of 2 GPUs"),        # a board is two GPUs: the model predicts one
    ("radeon-rx-6800", {}, "paleo", "rdna2"),              # no RDNA2 rows in the dataset: nothing fitted
    ("core-i7-920", {}, "paleo", "CPU"),
])
def test_auto_picks_the_prediction_only_where_it_applies(toy_params, device, settings, variant, reason):
    dev = TOY if device == "toy" else DB.device(device)
    e = estimate(two_layer(), dev, **settings)
    assert e.variant == variant and reason in e.variant_reason


def test_a_calibrated_gpu_keeps_its_measured_figures(toy_params):
    for fields in ({"efficiency": {"linear": 0.5}}, {"layer_overhead": {"linear": 1e-5}},
                   {"alloc_threshold": 2.0 ** 25, "alloc_bandwidth": 1e9}):
        dev = dataclasses.replace(TOY, **fields)
        assert auto_variant(dev, "fp32")[0] == "paleo" and "calibrated" in auto_variant(dev, "fp32")[1]


def test_the_default_is_the_same_as_asking_for_it(toy_params):
    auto = estimate(two_layer(), TOY, batch_size=2)
    assert auto.totals == estimate(two_layer(), TOY, batch_size=2, variant="predicted").totals
    # toy by hand (tests/test_gpu_model.py spells it out): fc max(2.56e-6, 3.2e-6, 1e-5) + act max(…, 1e-5) = 2e-5 s
    assert auto.totals["forward_s"] == pytest.approx(2e-5)
    asked = estimate(two_layer(), TOY, batch_size=2, ppp=0.5)
    assert asked.totals == estimate(two_layer(), TOY, batch_size=2, ppp=0.5, variant="paleo").totals


def test_the_bound_beside_a_prediction_is_paleo_at_ppp_1(toy_params):
    e = estimate(two_layer(), TOY, batch_size=2)
    b = e.bound.totals
    # fc: 128 FLOPs / 1e9 = 1.28e-7 s + (weights 4·8+8 = 40 → 160 B, input 2·4·4 = 32 B, output 2·8·4 = 64 B)
    #     256 B / 1e8 = 2.56e-6 s; act: 16 FLOPs / 1e9 = 1.6e-8 s + (64 B in + 64 B out) / 1e8 = 1.28e-6 s
    # forward: 1.28e-7 + 2.56e-6 + 1.6e-8 + 1.28e-6 = 3.984e-6 s
    assert b["forward_s"] == pytest.approx(3.984e-6)
    assert b == estimate(two_layer(), TOY, batch_size=2, variant="paleo").totals
    assert estimate(two_layer(), TOY, batch_size=2, variant="paleo").bound is None
    d = e.to_dict()
    assert d["variant"] == "predicted" and d["bound"]["forward_s"] == pytest.approx(3.984e-6)
    assert d["typical_error"]["median"] == 0.2 and json.dumps(d, allow_nan=False)


def test_typical_error_is_the_generations_where_it_has_enough_rows(monkeypatch):
    doc = {"generations": {"volta": TOY_PARAMS}, "errors": ERRORS,
           "errors_by_generation": {"volta": {"median": 0.12, "p90": 0.3, "rows": 40},
                                    "ada": {"median": 0.05, "p90": 0.1, "rows": 3}}}
    monkeypatch.setattr(gm, "load_params", lambda: doc)
    assert typical_error(TOY)["median"] == 0.12 and "volta" in typical_error(TOY)["basis"]
    ada = dataclasses.replace(TOY, architecture="ada")
    assert typical_error(ada)["median"] == 0.2 and "all GPUs" in typical_error(ada)["basis"]   # 3 rows: too few


def test_typical_error_at_a_batch_is_its_bands(monkeypatch):
    """With a batch, the error quoted is the most specific with enough rows: the generation's in the batch's band
    (batch ≤ 8 or above), the generation's at every batch, all GPUs' in the band, all GPUs'; a file without bands
    (or no batch) keeps the generation's error over all rows."""
    band = {"small": {"all": {"median": 0.18, "p90": 0.49, "rows": 100}, "volta": {"median": 0.4, "p90": 0.76,
                                                                                  "rows": 56}},
            "large": {"all": {"median": 0.14, "p90": 0.36, "rows": 200}, "volta": {"median": 0.16, "p90": 0.42,
                                                                                  "rows": 19}}}
    doc = {"generations": {"volta": TOY_PARAMS}, "errors": ERRORS,
           "errors_by_generation": {"volta": {"median": 0.12, "p90": 0.3, "rows": 40}}, "errors_by_batch": band}
    monkeypatch.setattr(gm, "load_params", lambda: doc)
    for b in (1, 8):
        e = typical_error(TOY, b)
        assert (e["median"], e["p90"], e["rows"]) == (0.4, 0.76, 56)
        assert e["basis"].endswith("volta GPUs, 56 measured timings at batch 1–8")
    e = typical_error(TOY, 9)      # volta has 19 large-batch rows (< 20): volta's rows at every batch (40)
    assert (e["median"], e["rows"]) == (0.12, 40) and e["basis"].endswith("volta GPUs, 40 measured timings")
    ada = dataclasses.replace(TOY, architecture="ada")      # no ada rows at all: the band's rows over all GPUs
    e = typical_error(ada, 9)
    assert (e["median"], e["rows"]) == (0.14, 200)
    assert e["basis"].endswith("all GPUs, 200 measured timings at batch ≥ 9")
    assert typical_error(TOY)["median"] == 0.12                                   # no batch: all of volta's rows
    assert estimate(two_layer(), TOY, batch_size=4).typical_error["median"] == 0.4  # an estimate's own batch
    band["large"]["all"]["rows"] = 0                        # an empty band (its median not a number): all rows
    assert typical_error(ada, 9)["median"] == 0.2 and "batch" not in typical_error(ada, 9)["basis"]
    del doc["errors_by_batch"]
    assert typical_error(TOY, 1)["median"] == 0.12 and "batch" not in typical_error(TOY, 1)["basis"]


def test_limiting_term_is_the_term_that_sets_the_time():
    """Overhead where it exceeds compute + memory (the predicted time is their max), else the larger of the two."""
    assert limiting_term(PassTime(compute_s=3e-6, memory_s=1e-6, overhead_s=2e-6, total_s=4e-6)) == "compute"
    # the largest single term, but shorter than compute and memory in sequence (6e-6 s): compute, on the tie
    assert limiting_term(PassTime(compute_s=3e-6, memory_s=3e-6, overhead_s=5e-6, total_s=6e-6)) == "compute"
    assert limiting_term(PassTime(compute_s=1e-6, memory_s=2e-6, overhead_s=3.5e-6, total_s=3.5e-6)) == "overhead"
    assert limiting_term(PassTime(compute_s=1e-6, memory_s=1e-6, fresh_pages_s=2e-6, total_s=4e-6)) == "memory"
    assert limiting_term(PassTime(compute_s=1e-6, overhead_s=1e-5, total_s=1e-5)) == "overhead"
    assert limiting_term(PassTime()) == "none"


def test_limited_by_adds_up_to_the_pass(toy_params):
    e = estimate(two_layer(), TOY, batch_size=2)
    # both layers are launch-bound at batch 2 (1e-5 s each, see above)
    assert e.limited_by["forward"] == pytest.approx({"compute": 0, "memory": 0, "overhead": 2e-5, "none": 0})
    assert [r["limited_by"] for r in e.layers] == ["overhead", "overhead"]
    # at batch 2000 the fc is memory-bound: 3.2e-4 + 1.202e-3 = 1.522e-3 s (tests/test_gpu_model.py); act:
    # 2000·8 = 16,000 FLOPs / 1e9 = 1.6e-5 s; (64,000 + 64,000) B / 8e7 = 1.6e-3 s; max(1.6e-5 + 1.6e-3, 1e-5) =
    # 1.616e-3 s: memory too
    big = estimate(two_layer(), TOY, batch_size=2000)
    assert big.limited_by["forward"]["memory"] == pytest.approx(1.522e-3 + 1.616e-3)
    for which in ("forward", "backward"):
        assert sum(big.limited_by[which].values()) == pytest.approx(big.totals[f"{which}_s"])


def test_a_real_gpu_defaults_to_the_prediction():
    from core import zoo
    e = estimate(zoo.get("resnet18"), "v100-sxm2", batch_size=8)
    assert e.variant == "predicted" and e.bound is not None
    assert 0 < e.typical_error["median"] < e.typical_error["p90"]


def test_the_cli_labels_a_prediction_with_its_typical_error_and_the_bound():
    import subprocess
    import sys
    from pathlib import Path
    root = Path(__file__).resolve().parent.parent

    def run(*args):
        return subprocess.run([sys.executable, "-m", "core", "estimate", "resnet18", *args], cwd=root,
                              capture_output=True, text=True, timeout=120)
    e = estimate("resnet18", "v100-sxm2")
    p = run("--device", "v100-sxm2")
    assert p.returncode == 0, p.stderr
    assert f"predicted (fitted GPU model), typically ±{e.typical_error['median'] * 100:.0f} %, 1 in 10 off by > " \
        f"{e.typical_error['p90'] * 100:.0f} %" in p.stdout
    p = run("--device", "v100-sxm2", "--explain")
    assert f"predicted, typically ±{e.typical_error['median'] * 100:.0f} %" in p.stdout
    assert f"[bound {e.bound.totals['forward_s'] * 1e3:,.3f} ms]" in p.stdout
    out = json.loads(run("--device", "v100-sxm2", "--json").stdout)
    assert out["variant"] == "predicted" and out["bound"] and out["typical_error"]["p90"] > 0
    p = run("--device", "v100-sxm2", "--ppp", "0.5")
    assert "PALEO at PPP compute 0.5, memory 0.5" in p.stdout and "[bound" not in p.stdout
    p = run("--device", "v100-sxm2", "--ppp", "0.5", "--explain")
    assert "paleo, PPP compute 0.5" in p.stdout and "a PPP was set" in p.stdout and "[bound" not in p.stdout
    p = run("--device", "radeon-rx-6800", "--explain")    # an AMD RDNA2 GPU: no published timings fitted
    assert "no fitted parameters for rdna2 GPUs" in p.stdout


def test_the_batch_below_which_launch_overhead_dominates(toy_params):
    from core.sweeps import overhead_limited_up_to
    runs = [estimate(two_layer(), TOY, batch_size=b) for b in (1, 2, 2000)]
    # batches 1 and 2: both layers launch-bound (share 1); batch 2000: both memory-bound (share 0), see above
    assert [e.overhead_share for e in runs] == pytest.approx([1.0, 1.0, 0.0])
    assert overhead_limited_up_to(runs) == 2
    assert overhead_limited_up_to(runs[2:]) is None


def test_cuda_graphs_drop_the_per_kernel_host_cost(toy_params):
    e = estimate(two_layer(), TOY, batch_size=2, launch="cuda_graphs")
    # fc: compute 2.56e-6 + memory 3.2e-6 = 5.76e-6 s; act: 1.6e-8 + 1.6e-6 = 1.616e-6 s (no 1e-5 s launch)
    assert e.totals["forward_s"] == pytest.approx(5.76e-6 + 1.616e-6) and e.totals["forward_overhead_s"] == 0
    assert e.update_work().calls and e.update.overhead_s == 0
    assert e.to_dict()["launch"] == "cuda_graphs"
    # PALEO keeps a calibrated device's measured cost per call, and says that the setting changed nothing
    from core import CalcError
    calibrated = dataclasses.replace(TOY, layer_overhead={"linear": 1e-5})
    graphs = estimate(two_layer(), calibrated, launch="cuda_graphs")
    assert graphs.totals == estimate(two_layer(), calibrated).totals and "predicted model only" in graphs.variant_reason
    with pytest.raises(CalcError, match="launch"):
        estimate(two_layer(), TOY, launch="graphs")


@pytest.mark.parametrize("device, settings, fragment", [
    ("core-i7-920", {}, "is for GPUs"),
    ("k80-board", {}, "board of 2 GPUs"),
    ("a100-40gb-sxm", {"dtype": "int8"}, "not fitted on int8"),
    ("a100-40gb-sxm", {"dtype": "fp64"}, "not fitted on fp64"),
])
def test_predicted_by_name_refuses_what_it_was_not_fitted_for(device, settings, fragment):
    from core import CalcError
    with pytest.raises(CalcError, match=fragment) as e:
        estimate(two_layer(), device, variant="predicted", **settings)
    assert e.value.field == "variant" and "\n" not in str(e.value)


def test_predicted_by_name_says_so(toy_params):
    e = estimate(two_layer(), TOY, variant="predicted")
    assert e.variant_reason.startswith("predicted (as asked)") and "volta" in e.variant_reason
    cal = estimate(two_layer(), dataclasses.replace(TOY, efficiency={"linear": 0.5}), variant="predicted")
    assert "calibrated figures are not used" in cal.variant_reason


def test_implied_ppp_of_a_prediction_is_against_the_paleo_bound():
    import core
    from core.bridge.timing import implied_ppp
    e = estimate("mnist_cnn", "v100-sxm2", batch_size=2)
    assert e.variant == "predicted"
    # PALEO at PPP 1: forward FLOPs (2 × the per-sample count) / 15.7e12 FLOP/s; measured 1 ms
    flops = core.analyze("mnist_cnn", batch_size=2).totals["flops"]
    assert implied_ppp(1e-3, e) == pytest.approx(flops / 15.7e12 / 1e-3)


def test_a_prediction_says_how_many_timings_it_stands_on(monkeypatch):
    doc = {"generations": {"volta": TOY_PARAMS}, "errors": ERRORS,
           "coverage": {"volta": {"fp32": 30, "fp16": 12}}}
    monkeypatch.setattr(gm, "load_params", lambda: doc)
    e = estimate(two_layer(), TOY)                                   # fp32: 30 + 12 = 42 volta timings
    assert e.variant == "predicted" and "fitted on 42 measured timings of volta GPUs" in e.variant_reason
    assert "extrapolated" not in e.variant_reason
    doc["coverage"]["volta"] = {"fp16": 12}                          # none at fp32
    e = estimate(two_layer(), TOY)
    assert "none of them at fp32: extrapolated from fp16" in e.variant_reason
