"""Details of the cost and memory model that a review caught: each value by hand or from torch."""

import pytest
import torch
import torch.nn as nn

from core import CalcError, Network, Node, analyze, edit
from core.api import scaling
from core.devices import Device, Interconnect, parse_devices

N = Node.make


def test_avg_pool_saves_its_input_like_torch():
    # relu → conv 1×1 (4→2) → avg_pool 2 → batch_norm on 4×8×8:
    # relu saves its output 4·8·8 = 256 (= the conv's input); avg_pool saves its input, the conv output 2·8·8 = 128;
    # batch_norm saves its input 2·4·4 = 32 → 416 elements
    net = Network.make("t", {"x": (4, 8, 8)}, [
        N("r", "relu", "x"), N("cv", "conv2d", "r", out_channels=2, kernel_size=1, bias=False),
        N("ap", "avg_pool2d", "cv", kernel_size=2), N("bn", "batch_norm", "ap")])
    assert analyze(net).compiled.saved == 416
    # the same count from torch's own saved tensors (distinct storages of activation size)
    model = nn.Sequential(nn.ReLU(), nn.Conv2d(4, 2, 1, bias=False), nn.AvgPool2d(2), nn.BatchNorm2d(2)).train()
    seen = {}

    def pack(t):
        if t.dim() == 4 and not isinstance(t, nn.Parameter):
            seen[t.untyped_storage().data_ptr()] = t.numel()
        return t
    x = torch.randn(1, 4, 8, 8, requires_grad=False)
    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        model(x).sum().backward()
    assert sum(seen.values()) == 416


def test_max_pool_ceil_mode_keeps_windows_that_start_inside_like_torch():
    # kernel 3 on a 2×2 input with ceil_mode: torch still gives one window (it starts inside the input)
    net = Network.make("t", {"x": (1, 2, 2)}, [N("p", "max_pool2d", "x", kernel_size=3, stride=2, ceil_mode=True)])
    assert analyze(net).layers[0].output_shape == tuple(
        nn.MaxPool2d(3, 2, ceil_mode=True)(torch.zeros(1, 1, 2, 2)).shape)     # (1, 1, 1, 1)


def test_depthwise_with_a_channel_multiplier_follows_an_edit():
    net = Network.make("mb", {"x": (3, 8, 8)}, [
        N("stem", "conv2d", "x", out_channels=16, kernel_size=3, padding=1),
        N("dw", "conv2d", "stem", out_channels=32, kernel_size=3, padding=1, groups=16),   # multiplier 2
        N("pw", "conv2d", "dw", out_channels=8, kernel_size=1)])
    res = edit(net, "stem", "out_channels", 24)
    dw = res.network.node("dw")
    assert (dw.get("groups"), dw.get("out_channels")) == (24, 48)      # groups = channels read, out = 2 × 24
    assert set(res.changed) == {"stem", "dw"}


def test_edit_accepts_lists_as_json_writes_them():
    res = edit(analyze("mnist_cnn").compiled.network, "conv2", "kernel_size", [5, 5])
    assert res.network.node("conv2").get("kernel_size") == (5, 5)


def test_attention_backward_counts_dS_once_when_only_keys_need_it():
    # q is raw data; k and v come from linear layers on kv. scores s = 16·16 = 256, E = 8:
    # dP = dO·Vᵀ 2·s·E = 4,096; softmax backward 4·s = 1,024; dK = dSᵀ·Q 2·s·E = 4,096; dV = Pᵀ·dO 2·s·E = 4,096
    # → 13,312 (no dQ)
    net = Network.make("a", {"q": (16, 8), "kv": (16, 8)}, [
        N("k", "linear", "kv", out_features=8), N("v", "linear", "kv", out_features=8),
        N("att", "sdpa", ["q", "k", "v"])])
    assert analyze(net).compiled.by_name["att"].bwd_input_flops == 13_312


def test_gradients_from_several_consumers_are_summed():
    # conv output (2·4·4 = 32 per sample) feeds two ReLUs that both pass a gradient back: 32 adds to sum them
    net = Network.make("f", {"x": (1, 4, 4)}, [
        N("c", "conv2d", "x", out_channels=2, kernel_size=1), N("a", "relu", "c"), N("b", "sigmoid", "c"),
        N("s", "add", ["a", "b"])])
    r = analyze(net, batch_size=3)
    layer = r.layer("c")
    assert layer.backward_flops - layer.backward_input_flops - layer.backward_weight_flops == 3 * 32
    assert r.totals["backward_flops"] == sum(l.backward_flops for l in r.layers)


def test_mixed_precision_master_copy_only_for_trainable_weights():
    net = Network.make("m", {"x": (4,)}, [N("emb", "parameter", [], shape=(1000, 4), trainable=False),
                                          N("fc", "linear", "x", out_features=4, bias=False)],
                       outputs=["fc", "emb"])
    assert analyze(net, dtype="mixed").totals["master_weight_bytes"] == 64    # 4·4 trainable × 4 B


def test_devices_reject_nan_and_infinity():
    good = {"id": "g", "name": "G", "vendor": "v", "kind": "GPU", "year": 2020, "peak_flops": {"fp32": 1e12},
            "memory_bandwidth": 1e11, "source": "https://x", "note": ""}
    db = parse_devices({"schema": "cnn-calc/devices", "version": 1,
                        "devices": [good, {**good, "id": "nan", "memory_bandwidth": float("nan")},
                                    {**good, "id": "inf", "peak_flops": {"fp32": float("inf")}}]})
    assert list(db.devices) == ["g"]
    assert db.problems == ("nan: memory_bandwidth: must be a finite number",
                           "inf: peak_flops.fp32: must be a finite number")
    with pytest.raises(CalcError, match="memory_bandwidth"):
        db.add({**good, "id": "mine", "memory_bandwidth": float("nan")})


def test_strong_scaling_counts_the_real_global_batch():
    dev = Device(id="d", name="D", vendor="v", kind="GPU", year=2020, peak_flops={"fp32": 1e12},
                 memory_bandwidth=1e11, source="hand-made", note="")
    link = Interconnect(id="l", name="L", bandwidth=1e10, source="hand-made", note="")
    rows = scaling("mnist_cnn", dev, link, workers=(2, 3), batch_size=64)
    three = rows[1]
    assert three["per_worker_batch"] == 22                                    # ⌈64 / 3⌉, the fullest worker
    assert three["samples_per_s"] == pytest.approx(64 / three["training_step_s"])   # 64 samples, not 66
    # speed-up is against one worker even when the list does not start at 1
    assert rows[0]["speedup"] == pytest.approx(rows[0]["samples_per_s"] / scaling("mnist_cnn", dev, link, workers=(1,),
                                                                                    batch_size=64)[0]["samples_per_s"])
