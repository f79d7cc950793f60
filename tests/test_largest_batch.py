"""``core.sweeps.largest_batch``: the largest batch whose training (or inference) memory fits a capacity, checked
against a hand count of the memory of a one-layer network and against the batches either side of the answer."""

from __future__ import annotations

import math

import pytest

import core
from core.report import MAX_BATCH, Report
from core.sweeps import largest_batch


def _fc() -> core.Report:
    """x (8 features) → Linear(8, 4), fp32, SGD with momentum."""
    net = core.Network.make("fc", {"x": (8,)}, [core.Node.make("fc", "linear", "x", out_features=4)], ["fc"])
    return core.analyze(net)


def test_training_memory_of_the_one_layer_network_by_hand():
    """Weights 8·4 + 4 = 36 parameters × 4 bytes = 144 B and their momentum 144 B, whatever the batch; the caller
    holds the input (8 floats = 32 B a sample). The peak is the layer's backward: its gradients (144 B) are made
    while the output's gradient (4 floats = 16 B a sample) is alive; the output itself was freed by the loss."""
    t = _fc().totals
    assert (t["param_bytes"], t["gradient_bytes"], t["optimizer_bytes"]) == (144, 144, 144)
    assert t["training_peak_at"] == "the backward of fc"
    assert Report(_fc().compiled, 10).totals["training_bytes"] - t["training_bytes"] == 9 * (32 + 16)
    assert t["training_bytes"] == 432 + 32 + 16


def test_the_largest_batch_is_the_capacity_less_the_fixed_part_over_the_bytes_a_sample():
    r = _fc()
    # 432 B fixed + 48 B a sample: 1,000 B hold ⌊(1,000 − 432) / 48⌋ = 11 samples (960 B; 12 would need 1,008 B)
    assert largest_batch(r, 1_000) == 11
    assert largest_batch(r, 1_008) == 12 and largest_batch(r, 1_007) == 11      # the boundary, both sides
    assert largest_batch(r, 479) == 0                   # one sample needs 480 B
    assert largest_batch(r, 480) == 1


def test_resnet50_on_a_16_gib_gpu_fits_the_answer_and_not_one_more():
    r, cap = core.analyze("resnet50"), 16 * 2 ** 30
    n = largest_batch(r, cap)
    assert Report(r.compiled, n).totals["training_bytes"] <= cap < Report(r.compiled, n + 1).totals["training_bytes"]
    # inference keeps only the live activations: a larger batch fits
    m = largest_batch(r, cap, training=False)
    assert m > n
    assert Report(r.compiled, m).totals["inference_bytes"] <= cap < Report(r.compiled, m + 1).totals["inference_bytes"]


def test_precision_and_optimizer_come_from_the_report():
    r = core.analyze("resnet50", dtype="fp16", optimizer="adam")
    n = largest_batch(r, 16 * 2 ** 30)
    after = Report(r.compiled, n + 1, "fp16", "adam").totals["training_bytes"]
    assert Report(r.compiled, n, "fp16", "adam").totals["training_bytes"] <= 16 * 2 ** 30 < after


def test_no_limit_stops_at_the_largest_batch_an_analysis_takes():
    assert largest_batch(_fc(), math.inf) == MAX_BATCH


@pytest.mark.parametrize("bad", [0, -1, math.nan, None, "16 GB", True])
def test_a_capacity_that_is_not_a_positive_number_is_refused(bad):
    with pytest.raises(core.CalcError, match="capacity"):
        largest_batch(_fc(), bad)
