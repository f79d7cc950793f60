"""The predicted variant's two paths give the same numbers, to the bit (issue 13, speed).

Why two: ``Estimate.time`` on one ``Work`` at a time (``_layer_parts``) is the model as written — readable, the
path the fit (benchmarks/fit_gpu_model.py) and the error messages use — but ~15 ms for a ResNet-152; the app's
Estimates page sweeps every device and batch size, so estimates take the array path (``core.predicted.predicted_work``,
``gpu_model.kernel_seconds``, ``PredictedTimes``). The array path repeats every operation in the same order, so
its totals, rows, limiting terms and JSON must equal the per-work path's exactly (==, and the same int/float
types in the JSON), not approximately. The hand-computed values of test_gpu_model.py check the model itself.
"""

import json

import pytest

from core import CalcError, Network, Node, analyze
from core.devices import Device
from core.paleo import Estimate, estimate
from core.terms import PassTime


def reference(e: Estimate) -> Estimate:
    """The same estimate (variant auto, as ``e`` was made) on the per-work path (the array path switched off)."""
    ref = Estimate(e.report, e.device, fused=e.fused, workers=e.workers, link=e.link, launch=e.launch)
    ref.__dict__["_predicted"] = None          # the cached_property's slot: None is "take the per-work path"
    return ref


CASES = [      # network, device, batch, dtype, settings: Winograd (fp32), tensor cores, no SM count, graphs, fused
    ("resnet18", "a100-40gb-sxm", 8, "fp32", {}),
    ("resnet18", "a100-40gb-sxm", 3, "tf32", {}),
    ("mobilenet_v2", "t4", 16, "fp16", {}),               # grouped convolutions
    ("mobilenet_v2", "l4", 1, "fp16", {}),                # no sm_count: no wave term
    ("mobilenet_v2", "h200-sxm", 1, "bf16", {}),
    ("squeezenet1_0", "v100-sxm2", 64, "fp32", {"launch": "cuda_graphs"}),
    ("mnist_cnn", "k80", 5, "fp32", {"fused": True}),     # linear layers, Kepler
    ("mnist_cnn", "rtx-3090", 2, "fp16", {"optimizer": "adam"}),
    ("resnet18", "v100-sxm2", 4, "fp32", {"fused": True, "launch": "cuda_graphs"}),   # no host overhead at all
    ("resnet18", "h100-sxm", 2, "mixed", {}),             # Hopper's autograd factor; mixed precision's casts
    ("mobilenet_v2", "a100-40gb-sxm", 32, "mixed", {"launch": "cuda_graphs"}),   # casts of depthwise convs
    ("convnext_tiny", "h200-sxm", 4, "bf16", {}),         # channels-last depthwise convs (cuDNN's, in half)
    ("convnext_tiny", "h100-sxm", 2, "fp32", {}),         # the same on CUDA cores
]


@pytest.mark.parametrize("name, device, batch, dtype, settings", CASES)
def test_array_path_equals_per_work_path(name, device, batch, dtype, settings):
    opt = settings.pop("optimizer", "sgd_momentum")
    e = estimate(analyze(name, None, batch, dtype, opt), device, batch, dtype, optimizer=opt, **settings)
    assert e.variant == "predicted" and e._predicted is not None
    ref = reference(e)
    assert ref.variant == "predicted" and ref._predicted is None
    assert e.layer_times == ref.layer_times
    # the kernels of split backward passes (conv, linear: input and weight gradients) are there, and some are
    assert any(lt.backward_kernels for lt in e.layer_times)
    assert e.forward == ref.forward and e.backward == ref.backward and e.train_forward == ref.train_forward
    assert e.limited_by == ref.limited_by
    assert e.totals == ref.totals
    # the JSON contract: same values and same types (an integral FLOP count stays an int)
    assert json.dumps(e.to_dict()) == json.dumps(ref.to_dict())


def test_rows_add_up_to_the_totals_in_order():
    """The pass totals are the rows added in layer order, as PassTime adds them."""
    e = estimate(analyze("resnet18", None, 4), "a100-40gb-sxm", 4)
    for which in ("forward", "backward"):
        acc = PassTime()
        for lt in e.layer_times:
            acc = acc + getattr(lt, which)
        assert acc == getattr(e, which)


def test_a_time_beyond_a_float_gets_the_per_work_error():
    """A Device made in code can make a time infinite; the array path gives way, and the per-work path raises
    its error naming the figure."""
    tiny = Device(id="tiny-gpu", name="Tiny GPU", vendor="test", kind="GPU", year=2020, peak_flops={"fp32": 1e-307},
                  memory_bandwidth=1e8, memory_capacity=1e9, source="hand-made for tests", note="",
                  architecture="volta", sm_count=10)
    net = Network.make("one", {"x": (4,)}, [Node.make("fc", "linear", "x", out_features=8)])
    # fc: 2 × 4 × 8 = 64 FLOPs × batch 2 = 128 FLOPs at 1e-307 FLOP/s: 1.28e309 s before any efficiency (≤ 1)
    e = estimate(net, tiny, 2, variant="predicted")
    assert e._predicted is None
    with pytest.raises(CalcError, match="not a finite number") as err:
        _ = e.totals
    assert err.value.field == "peak_flops.fp32"


@pytest.mark.parametrize("device, dtype", [("h100-sxm", "bf16"), ("v100-sxm2", "fp32"), ("t4", "mixed")])
def test_depthwise_backward_on_cuda_cores_on_both_paths(monkeypatch, device, dtype):
    """With ``depthwise_backward`` (a depthwise conv's backward at a share of the CUDA-core peak, whatever the
    precision), the array path marks those kernels and still equals the per-work path to the bit."""
    from core import gpu_model as gm

    doc = gm.load_params()
    gens = {g: {**p, "depthwise_backward": 0.0123} for g, p in doc["generations"].items()}
    monkeypatch.setattr(gm, "load_params", lambda: {**doc, "generations": gens})
    e = estimate(analyze("mobilenet_v2", None, 8, dtype), device, 8, dtype)
    ref = reference(e)
    # each depthwise layer's backward parts but mixed precision's cast kernel: its dgrad and wgrad
    depthwise = [len([w for w in parts if not w.cast]) for lw, parts in zip(e.work.layers, e._layer_parts("backward"))
                 if lw.work_class == "depthwise_conv"]
    assert depthwise == [2] * 17 and e._predicted.work.kernels.cuda_core.sum() == 34        # MobileNet V2: 17
    assert e.layer_times == ref.layer_times and e.totals == ref.totals and e.limited_by == ref.limited_by
    assert e.train_forward == ref.train_forward
