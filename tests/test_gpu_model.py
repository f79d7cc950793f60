"""The GPU time model (core/gpu_model.py, estimate variant "predicted"): its terms by hand arithmetic on a toy GPU,
wave quantisation, the fitted parameter file, and the errors a device without fitted parameters gets (issue 13).
The script that fits and writes the file (benchmarks/fit_gpu_model.py) is tested in test_gpu_fit.py."""

import csv
from dataclasses import replace
from pathlib import Path
from types import SimpleNamespace

import pytest

from core import CalcError, Network, Node
from core import gpu_model as gm
from core.api import estimate
from core.devices import Device
from core.terms import Work
from gpu_toy import TOY, TOY_PARAMS, two_layer


@pytest.fixture
def toy_params(monkeypatch):
    monkeypatch.setattr(gm, "load_params", lambda: {"generations": {"volta": TOY_PARAMS}})


def test_channel_fill_by_hand():
    assert gm.channel_fill(64, 132) == pytest.approx(64 / 132)      # 0.485: half an H100's SMs idle
    assert gm.channel_fill(256, 132) == 1.0                         # more channels than SMs: all busy
    assert gm.channel_fill(0, 132) == 1.0 and gm.channel_fill(64, None) == 1.0    # not per channel; no SM count
    from core import analyze, zoo
    from core.work import network_work
    layers = network_work(analyze(zoo.get("resnet18"), None, 1).compiled, False).layers
    # ResNet-18's batch norms have 64 … 512 channels: the narrowest 64 on 132 SMs fills 64 / 132
    assert gm.narrowest_channel_fill(layers, 132) == (64, pytest.approx(64 / 132))
    assert gm.narrowest_channel_fill(layers, None) is None
    assert gm.narrowest_channel_fill(network_work(analyze(zoo.get("vgg16"), None, 1).compiled, False).layers,
                                     132) is None                      # VGG-16: no batch norm


def test_wave_efficiency_by_hand():
    assert gm.wave_efficiency(15, 10) == pytest.approx(0.75)        # 2 waves of 10 SMs, 15 busy: 15/20
    assert gm.wave_efficiency(108, 108) == 1.0                      # one full wave
    assert gm.wave_efficiency(109, 108) == pytest.approx(109 / 216)  # a 2nd wave with one tile: 0.5046
    assert gm.wave_efficiency(3, None) == 1.0                       # no SM count: no wave term
    assert gm.wave_efficiency(0, 10) == 1.0                         # not a GEMM
    # conv M = 1·56·56 = 3136 → ⌈3136/128⌉ = 25 rows of tiles; N = 64 → 1 column: 25 tiles
    assert gm.gemm_tiles("conv2d", 1, 3136, 64) == 25
    # 32 groups of M = 3136, N = 4: 32 × 25 × 1 = 800 tiles
    assert gm.gemm_tiles("conv2d", 32, 3136, 4) == 800
    assert gm.gemm_tiles("relu", 1, 3136, 64) == 0


def test_terms_by_hand():
    e = SimpleNamespace(peak=1e13, bandwidth=5e11, precision=SimpleNamespace(compute="fp32"),
                        model_params=TOY_PARAMS, device=SimpleNamespace(sm_count=10))
    w = Work("conv", 3e9, int(2e8), calls=1, tiles=15)
    # compute: 3e9 / (1e13 × 0.5 conv × 0.75 wave) = 3e9 / 3.75e12 = 8e-4 s
    assert gm.compute_s(w, e) == pytest.approx(8e-4)
    # memory: 2e8 / (5e11 × 0.8) = 2e8 / 4e11 = 5e-4 s
    assert gm.memory_s(w, e) == pytest.approx(5e-4)
    # overhead: 1 call × 1e-5 s
    assert gm.overhead_s(w, e) == pytest.approx(1e-5)
    # backward in fp16: 0.5 conv × 0.5 tensor_fp16 × 0.5 backward × 0.75 wave = 0.09375 → 3e9 / 9.375e11 = 3.2e-3 s
    e16 = SimpleNamespace(**{**e.__dict__, "precision": SimpleNamespace(compute="fp16")})
    assert gm.compute_s(Work("conv", 3e9, 0, backward=True, tiles=15), e16) == pytest.approx(3.2e-3)
    # elementwise work: no class efficiency, no tiles: 1e9 / 1e13 = 1e-4 s
    assert gm.compute_s(Work("elementwise", 1e9, 0), e) == pytest.approx(1e-4)


def test_library_calls_cost_the_host_more_by_hand():
    """``library_overhead`` multiplies the per-call overhead of a conv or linear kernel (a cuDNN / cuBLAS call),
    not an elementwise one's; a parameter set without it (written before it existed) uses 1."""
    e = SimpleNamespace(model_params={**TOY_PARAMS, "library_overhead": 3.0})
    # conv, 2 calls: 2 × 1e-5 s × 3 = 6e-5 s; linear, 1 call: 1e-5 × 3 = 3e-5 s; a depthwise conv runs at its
    # fallback's (grouped_conv) class, a library call too: 3e-5 s
    assert gm.overhead_s(Work("conv", 0, 0, calls=2), e) == pytest.approx(6e-5)
    assert gm.overhead_s(Work("linear", 0, 0, calls=1), e) == pytest.approx(3e-5)
    assert gm.overhead_s(Work("depthwise_conv", 0, 0, calls=1), e) == pytest.approx(3e-5)
    # elementwise, batch_norm, the optimizer step (no class): 1 call × 1e-5 s
    for cls in ("elementwise", "batch_norm", None):
        assert gm.overhead_s(Work(cls, 0, 0, calls=1), e) == pytest.approx(1e-5)
    assert gm.overhead_s(Work("conv", 0, 0, calls=2), SimpleNamespace(model_params=TOY_PARAMS)) == \
        pytest.approx(2e-5)


def test_library_overhead_in_a_whole_estimate_by_hand(monkeypatch):
    monkeypatch.setattr(gm, "load_params", lambda: {"generations": {"volta": {**TOY_PARAMS,
                                                                              "library_overhead": 3.0}}})
    e = estimate(two_layer(), TOY, batch_size=2, variant="predicted")
    # fc: max(2.56e-6 compute, 3.2e-6 memory, 1 call × 1e-5 × 3 = 3e-5) = 3e-5 s (test_predicted_estimate_by_hand's
    # numbers); act: max(1.6e-8, 1.6e-6, 1e-5) = 1e-5 s; forward 4e-5 s
    assert e.totals["forward_s"] == pytest.approx(4e-5)
    assert [r["forward_s"] for r in e.layers] == pytest.approx([3e-5, 1e-5])


def test_calls_under_autograd_cost_the_host_more_by_hand(monkeypatch):
    """``autograd_overhead`` multiplies the per-call overhead of a call made under autograd: every backward work,
    and a training step's forward (``Work.train``); an inference forward and the optimizer step keep the plain cost.
    A parameter set without it (written before it existed) uses 1, and then the training forward is the forward."""
    e = SimpleNamespace(model_params={**TOY_PARAMS, "library_overhead": 3.0, "autograd_overhead": 1.5})
    # elementwise, 2 calls: inference 2 × 1e-5 = 2e-5 s; backward or training forward 2e-5 × 1.5 = 3e-5 s
    assert gm.overhead_s(Work("elementwise", 0, 0, calls=2), e) == pytest.approx(2e-5)
    assert gm.overhead_s(Work("elementwise", 0, 0, calls=2, backward=True), e) == pytest.approx(3e-5)
    assert gm.overhead_s(Work("elementwise", 0, 0, calls=2, train=True), e) == pytest.approx(3e-5)
    # a conv call in a backward: 1e-5 × 3 library × 1.5 autograd = 4.5e-5 s
    assert gm.overhead_s(Work("conv", 0, 0, calls=1, backward=True), e) == pytest.approx(4.5e-5)
    # the optimizer step (no class, not under autograd): 1e-5 s
    assert gm.overhead_s(Work(None, 0, 0, calls=1), e) == pytest.approx(1e-5)
    monkeypatch.setattr(gm, "load_params", lambda: {"generations": {"volta": {**TOY_PARAMS,
                                                                              "autograd_overhead": 1.5}}})
    est = estimate(two_layer(), TOY, batch_size=2, variant="predicted")
    # inference forward (test_predicted_estimate_by_hand): fc max(2.56e-6, 3.2e-6, 1e-5) + act max(1.6e-8,
    # 1.6e-6, 1e-5) = 2e-5 s; a training step's forward: each call 1e-5 × 1.5 = 1.5e-5 s (still above compute and
    # memory), 2 × 1.5e-5 = 3e-5 s
    t = est.totals
    assert t["forward_s"] == pytest.approx(2e-5)
    assert t["training_forward_s"] == pytest.approx(3e-5)
    assert t["training_step_s"] == pytest.approx(3e-5 + t["backward_s"] + t["update_s"])
    assert est.limited_by["train_forward"]["overhead"] == pytest.approx(3e-5)
    # backward: fc is the first layer (no input gradient): its wgrad, 72 × 2 = 144 FLOPs / (1e9 × 0.5 × 0.25 ×
    # 0.1) = 1.152e-5 s against 1.5e-5 s overhead → 1.5e-5 s; the relu's backward: 1.5e-5 s → 3e-5 s
    assert t["backward_s"] == pytest.approx(3e-5)
    assert "1.50, the fitted autograd factor" in est.train_forward_basis
    # under CUDA Graphs no host overhead is paid: the training forward is the forward
    graphs = estimate(two_layer(), TOY, batch_size=2, variant="predicted", launch="cuda_graphs")
    assert graphs.totals["training_forward_s"] == graphs.totals["forward_s"]


def test_the_cli_prints_a_predicted_training_forward_with_its_factor():
    """With the fitted file: a GPU's training step runs its forward at the fitted autograd factor, and the CLI
    prints that forward on its own line, so forward + backward + update add up to the printed step."""
    from core import zoo
    from core.cli_text import format_estimate

    est = estimate(zoo.get("resnet18"), "v100-sxm2", batch_size=1, variant="predicted")
    factor = est.model_params["autograd_overhead"]
    assert factor > 1.0          # the fit's lower bound is 1; the H100 and H200 rows put it above
    t = est.totals
    # at batch 1 every kernel of ResNet-18 on a V100 is launch-bound or close: the training forward is slower
    assert t["forward_s"] < t["training_forward_s"] <= factor * t["forward_s"] * (1 + 1e-12)
    lines = format_estimate(est).splitlines()
    line = next(ln for ln in lines if ln.startswith("Train forward:"))
    assert f"× {factor:.2f}, the fitted autograd factor" in line, line
    # the printed train forward + backward + update is the printed step (each rounded to 0.001 ms)
    ms = {ln.split(":")[0]: float(ln.split(":")[1].split()[0]) for ln in lines
          if ln.split(":")[0] in ("Train forward", "Backward", "Weight update", "Training step")}
    assert ms["Train forward"] + ms["Backward"] + ms["Weight update"] == pytest.approx(ms["Training step"], abs=2e-3)


def test_without_the_autograd_factor_the_training_forward_is_the_forward(toy_params):
    e = estimate(two_layer(), TOY, batch_size=2, variant="predicted")
    assert e.train_forward == e.forward
    assert e.train_forward_basis == "as the inference forward"
    assert e.limited_by["train_forward"] == e.limited_by["forward"]


def test_predicted_estimate_by_hand(toy_params):
    e = estimate(two_layer(), TOY, batch_size=2, variant="predicted")
    # fc: tiles ⌈2/128⌉·⌈8/128⌉ = 1 → wave 1/(1·10) = 0.1; 128 FLOPs / (1e9 × 0.5 × 0.1) = 2.56e-6 s;
    #     256 B / (1e8 × 0.8) = 3.2e-6 s; 1 call × 1e-5 s; max(2.56e-6 + 3.2e-6, 1e-5) = 1e-5 s (launch-bound)
    # act: 16 FLOPs / 1e9 = 1.6e-8 s; 128 B / 8e7 = 1.6e-6 s; max(1.6e-8 + 1.6e-6, 1e-5) = 1e-5 s
    # forward: 1e-5 + 1e-5 = 2e-5 s
    assert e.totals["forward_s"] == pytest.approx(2e-5)
    assert e.totals["forward_overhead_s"] == pytest.approx(2e-5)
    assert e.totals["forward_memory_s"] == pytest.approx(3.2e-6 + 1.6e-6)
    assert [r["forward_s"] for r in e.layers] == pytest.approx([1e-5, 1e-5])
    # at batch 2000 compute and memory, in sequence, take longer than the launch: weights 160 B + input 2000·4·4
    # = 32,000 B + output 2000·8·4 = 64,000 B = 96,160 B / 8e7 = 1.202e-3 s; compute: tiles ⌈2000/128⌉ = 16 →
    # wave 16/20 = 0.8; 128,000 FLOPs / (1e9 × 0.5 × 0.8) = 3.2e-4 s; max(3.2e-4 + 1.202e-3, 1e-5) = 1.522e-3 s
    big = estimate(two_layer(), TOY, batch_size=2000, variant="predicted")
    assert big.layers[0]["forward_s"] == pytest.approx(1.522e-3)


def test_backward_splits_into_dgrad_and_wgrad_by_hand(toy_params):
    """A linear layer's backward is two kernels: the input gradient at ``backward``, the weight gradient at
    ``backward_weight``; the first layer (its input carries no gradient) has the weight gradient only."""
    net = Network.make("three", {"x": (4,)}, [Node.make("fc1", "linear", "x", out_features=8),
                                              Node.make("act", "relu", "fc1"),
                                              Node.make("fc2", "linear", "act", out_features=4)])
    e = estimate(net, TOY, batch_size=2, variant="predicted")
    parts = e._layer_parts("backward")
    assert [len(p) for p in parts] == [1, 1, 2]
    assert [w.weight_grad for w in parts[2]] == [False, True]
    # fc2 wgrad: 68 FLOPs/sample × 2 = 136; tiles ⌈2/128⌉·⌈4/128⌉ = 1 → wave 0.1; efficiency 0.5 linear × 0.25
    #   backward_weight × 0.1 = 0.0125 → 136 / 1.25e7 = 1.088e-5 s; bytes (dy 4 + x 8) × 4 B × 2 + 36 weights
    #   × 4 B = 240 B / 8e7 = 3e-6 s; max(1.088e-5 + 3e-6, 1e-5) = 1.388e-5 s
    # fc2 dgrad: 64 × 2 = 128 FLOPs; tiles ⌈2/128⌉·⌈8/128⌉ = 1 → 0.1; 0.5 × 0.5 backward × 0.1 = 0.025 →
    #   5.12e-6 s; bytes (dy 4 + dx 8) × 4 × 2 + 36 × 4 = 240 B → 3e-6 s; max(5.12e-6 + 3e-6, 1e-5) = 1e-5 s
    # fc1 wgrad only: 72 × 2 = 144 FLOPs / 1.25e7 = 1.152e-5 s; (dy 8 + x 4) × 8 + 40 × 4 = 256 B → 3.2e-6 s;
    #   1.152e-5 + 3.2e-6 = 1.472e-5 s
    bwd = [lt.backward.total_s for lt in e.layer_times]
    assert bwd[0] == pytest.approx(1.472e-5)
    assert bwd[2] == pytest.approx(1.388e-5 + 1e-5)
    assert e.totals["backward_s"] == pytest.approx(sum(bwd))
    # limited_by gives each kernel to the term that sets it: fc2's dgrad (1e-5 s, more than its 8.12e-6 s of
    # compute + memory) to overhead, its wgrad (1.388e-5 s) and fc1's wgrad (1.472e-5 s) to compute, their larger
    # term; the rest of the pass (the relu: a 1e-5 s launch) to overhead
    lim = e.limited_by["backward"]
    assert lim["compute"] == pytest.approx(1.388e-5 + 1.472e-5)
    assert lim["overhead"] == pytest.approx(e.totals["backward_s"] - lim["compute"] - lim["memory"])
    assert lim["overhead"] >= 1e-5 and sum(lim.values()) == pytest.approx(e.totals["backward_s"])
    # a conv's input-gradient GEMM: input 64×56×56 at batch 1 → M = 3136 (25 tiles), N = 64 (1): 25 tiles
    conv = SimpleNamespace(op="conv2d", attrs={"groups": 1}, in_shapes=((64, 56, 56),))
    assert gm.dgrad_tiles(conv, 1) == 25


@pytest.mark.parametrize("channels, fill", [(4, 0.4), (8, 0.8), (12, 1.0)])
def test_train_mode_batch_norm_fills_one_sm_a_channel_by_hand(toy_params, channels, fill):
    """A train-mode batch norm (a training step's forward, the backward) runs one thread block per channel, as
    PyTorch's and cuDNN's NCHW kernels do: its bytes move at the bandwidth × the share of SMs its channels fill.
    An inference pass's batch norm is elementwise: no fill. Fills on the toy GPU's 10 SMs, min(1, C / 10): 4
    channels 0.4; 8: 0.8; 12: 1.0 (no wave tail). Measured on an H200 (132 SMs;
    benchmarks/data/probes/h200-2026-11-27/probe_bn.jsonl): one tensor of 128·64·56·56 elements spread over 32, 64,
    128 and 256 channels took 0.509, 0.276, 0.181 and 0.147 ms in fp32's train-mode forward."""
    from core.api import analyze
    net = Network.make("bn", {"x": (channels, 10, 10)}, [Node.make("bn", "batch_norm", "x")])
    e = estimate(analyze(net, None, 1000), TOY, batch_size=1000, variant="predicted")
    (fwd,), (train,), (bwd,) = (e._layer_parts(w)[0] for w in ("forward", "train_forward", "backward"))
    assert (fwd.blocks, train.blocks, bwd.blocks) == (0, channels, channels)
    assert fwd.bytes == train.bytes
    # memory: bytes / (1e8 B/s × 0.8 memory × fill); the inference forward's at fill 1
    assert gm.memory_s(fwd, e) == pytest.approx(fwd.bytes / 8e7)
    assert gm.memory_s(train, e) == pytest.approx(train.bytes / (8e7 * fill))
    assert gm.memory_s(bwd, e) == pytest.approx(bwd.bytes / (8e7 * fill))
    # the whole estimate (array path): its compute (FLOPs at the 1e9 peak, × 0.5 backward in the backward) then its
    # memory, far above the 1e-5 s launch at batch 1000 (≥ 4·100·4 B·2 = 3.2e6 B / 8e7 = 0.04 s)
    assert e.layers[0]["forward_s"] == pytest.approx(fwd.flops / 1e9 + fwd.bytes / 8e7)
    assert e.train_forward.total_s == pytest.approx(train.flops / 1e9 + train.bytes / (8e7 * fill))
    assert e.totals["backward_s"] == pytest.approx(bwd.flops / 0.5e9 + bwd.bytes / (8e7 * fill))
    assert list(e._predicted.work.kernels.blocks[:2]) == [channels, channels]   # forward entry, backward entry


@pytest.mark.parametrize("rate, channels, per_byte", [
    # SM-bound: elements = bytes / 4 (fp32) at 0.5 a cycle of 1e7 SM-cycles/s × fill: bytes / (4 · 0.5e7 · fill);
    # fill 0.4 → bytes / 8e6, fill 1 → bytes / 2e7 (DRAM: bytes / 8e7, faster)
    (0.5, 4, 1 / 8e6), (0.5, 12, 1 / 2e7),
    # DRAM-bound: 64 a cycle → bytes / (4 · 64e7 · 0.4) = bytes / 1.024e9, faster than DRAM's bytes / 8e7, which
    # then has no fill: the SMs' share is the SM term's
    (64.0, 4, 1 / 8e7)])
def test_train_mode_batch_norm_at_the_slower_of_dram_and_its_sms_by_hand(monkeypatch, rate, channels, per_byte):
    """With ``sm_rate`` and a device that states its SMs and clock, a train-mode batch norm's kernels take the
    slower of their bytes at the bandwidth and their elements at ``sm_rate`` per SM-cycle of the SMs their channels
    fill. The toy GPU at 1 MHz: 10 SMs × 1e6 Hz = 1e7 SM-cycles a second. An inference pass's is elementwise."""
    from dataclasses import replace

    from core.api import analyze
    monkeypatch.setattr(gm, "load_params", lambda: {"generations": {"volta": {**TOY_PARAMS, "sm_rate": rate}}})
    dev = replace(TOY, boost_clock=1e6)
    assert gm.sm_cycles(dev) == 1e7 and gm.sm_cycles(TOY) is None
    net = Network.make("bn", {"x": (channels, 10, 10)}, [Node.make("bn", "batch_norm", "x")])
    e = estimate(analyze(net, None, 1000), dev, batch_size=1000, variant="predicted")
    (fwd,), (train,), (bwd,) = (e._layer_parts(w)[0] for w in ("forward", "train_forward", "backward"))
    assert gm.memory_s(fwd, e) == pytest.approx(fwd.bytes / 8e7)
    assert gm.memory_s(train, e) == pytest.approx(train.bytes * per_byte)
    assert gm.memory_s(bwd, e) == pytest.approx(bwd.bytes * per_byte)
    # the array path: the same memory after the compute (FLOPs at the 1e9 peak, × 0.5 backward in the backward;
    # at batch 1000 memory alone is ≥ 0.04 s ≫ the 1e-5 s launch)
    assert e.layers[0]["forward_s"] == pytest.approx(fwd.flops / 1e9 + fwd.bytes / 8e7)
    assert e.train_forward.total_s == pytest.approx(train.flops / 1e9 + train.bytes * per_byte)
    assert e.totals["backward_s"] == pytest.approx(bwd.flops / 0.5e9 + bwd.bytes * per_byte)


def test_mixed_precision_casts_by_hand(monkeypatch):
    """Mixed precision as autocast runs it: every forward casts each fp32 parameter tensor of a conv or linear
    layer to fp16 (one kernel per tensor: read the fp32 master, 4 B, write the fp16 copy, 2 B, per parameter) and
    the backward casts each gradient back (read 2 B, write 4 B). Only the predicted variant (fitted with them,
    docs/benchmarks.md tried 25); pure fp16 keeps no master copy and casts nothing."""
    monkeypatch.setattr(gm, "load_params", lambda: {"generations": {"volta": {**TOY_PARAMS,
                                                                              "autograd_overhead": 1.5}}})
    net = Network.make("three", {"x": (4,)}, [Node.make("fc1", "linear", "x", out_features=8),
                                              Node.make("act", "relu", "fc1"),
                                              Node.make("fc2", "linear", "act", out_features=4)])
    e = estimate(net, TOY, batch_size=2, dtype="mixed", variant="predicted")
    fwd, bwd = e._layer_parts("forward"), e._layer_parts("backward")
    assert [len(p) for p in fwd] == [2, 1, 2] and [len(p) for p in bwd] == [2, 1, 3]
    # fc1: 4·8 + 8 = 40 parameters in 2 tensors (weight, bias): 40 × (4 + 2) = 240 B, 2 calls; fc2: 8·4 + 4 = 36
    # parameters: 36 × 6 = 216 B
    cast1, cast2 = fwd[0][-1], fwd[2][-1]
    assert (cast1.cast, cast1.bytes, cast1.calls, cast1.flops) == (True, 240, 2, 0)
    assert (cast2.bytes, cast2.calls) == (216, 2)
    assert (bwd[0][-1].cast, bwd[0][-1].bytes, bwd[0][-1].backward) == (True, 240, True)   # 40 × (2 + 4)
    lt = e.layer_times
    # fc1's forward, main kernel: 64 FLOPs × 2 = 128 / (4e9 fp16 × 0.5 linear × 0.5 tensor_fp16 × 0.1 wave) =
    #   1.28e-6 s; 40 weights × 2 B + x 4 × 2 × 2 B + y 8 × 2 × 2 B = 128 B / 8e7 = 1.6e-6 s; 1 call × 1e-5 s → 1e-5
    # its cast: 240 B / 8e7 = 3e-6 s; 2 calls × 1e-5 s (no library factor: an elementwise kernel) = 2e-5 s → 2e-5
    assert lt[0].forward.bytes == 128 + 240
    assert lt[0].forward.total_s == pytest.approx(1e-5 + 2e-5)
    assert [k.total_s for k in lt[0].forward_kernels] == pytest.approx([1e-5, 2e-5])
    assert lt[1].forward_kernels == ()          # the relu casts nothing
    # a training step's forward: every call under autograd, × 1.5: fc1 1.5e-5 + 3e-5, relu 1.5e-5, fc2 the same
    # as fc1's (its kernels are launch-bound too): 4.5e-5 + 1.5e-5 + 4.5e-5 = 1.05e-4 s
    assert e.totals["training_forward_s"] == pytest.approx(1.05e-4)
    # the backward's casts: 2 calls × 1e-5 × 1.5 = 3e-5 s each (memory 240 B → 3e-6 s); fc1: its wgrad (144 FLOPs
    # / (4e9 × 0.5 × 0.5 × 0.25 backward_weight × 0.1) = 5.76e-6 s, 1 call × 1.5e-5 s → 1.5e-5 s) + 3e-5 s
    assert lt[0].backward.total_s == pytest.approx(1.5e-5 + 3e-5)
    assert len(lt[2].backward_kernels) == 3 and lt[2].backward_kernels[-1].total_s == pytest.approx(3e-5)
    # limited_by gives each cast kernel to its own term (overhead here): all of this toy's time is launch-bound
    assert e.limited_by["forward"]["overhead"] == pytest.approx(e.totals["forward_s"])
    # the PALEO bound beside it and pure fp16 cast nothing: fc1's forward moves its 128 B
    assert e.bound.layers[0]["forward_bytes"] == 128
    fp16 = estimate(net, TOY, batch_size=2, dtype="fp16", variant="predicted")
    assert fp16.layers[0]["forward_bytes"] == 128 and fp16.layer_times[0].forward_kernels == ()


def depthwise_net() -> Network:
    return Network.make("dw", {"x": (2, 8, 8)}, [
        Node.make("pw", "conv2d", "x", out_channels=2, kernel_size=1, bias=False),
        Node.make("dw", "conv2d", "pw", out_channels=2, kernel_size=3, padding=1, groups=2, bias=False)])


def test_a_depthwise_backward_runs_on_cuda_cores_by_hand(monkeypatch):
    """``depthwise_backward``: a depthwise conv's input- and weight-gradient kernels reach that share of the
    CUDA-core (fp32) peak in every precision, in place of the class × tensor-core × backward factors; its forward
    and every other kernel keep theirs. A parameter set without it keeps the old rule."""
    monkeypatch.setattr(gm, "load_params", lambda: {"generations": {"volta": {**TOY_PARAMS,
                                                                              "depthwise_backward": 0.1}}})
    e = estimate(depthwise_net(), TOY, batch_size=2, dtype="fp16", variant="predicted")
    assert e._predicted is not None and e._predicted.work.kernels.cuda_core.sum() == 2     # dw's dgrad and wgrad
    dgrad, wgrad = e._layer_parts("backward")[1]
    assert gm.on_cuda_cores(dgrad, e.model_params) and gm.on_cuda_cores(wgrad, e.model_params)
    assert not gm.on_cuda_cores(e._layer_parts("forward")[1][0], e.model_params)
    # dw: 2 × 8 × 8 = 128 outputs × 9 MACs × 2 = 2,304 FLOPs per sample for each of dgrad and wgrad; batch 2: 4,608
    # tiles: 2 groups × ⌈2·64 / 128⌉ × ⌈1 / 128⌉ = 2 (both GEMMs) → wave 2 / 10 = 0.2
    # compute: 4,608 / (1e9 fp32 peak × 0.1 × 0.2) = 4,608 / 2e7 = 2.304e-4 s
    # memory: (dy 128 + x or dx 128) × 2 B × 2 + 18 weights × 2 B = 1,060 B / (1e8 × 0.8) = 1.325e-5 s
    # overhead: 1 call × 1e-5 s; each kernel max(2.304e-4 + 1.325e-5, 1e-5) = 2.4365e-4 s
    dw = e.layer_times[1]
    assert [k.total_s for k in dw.backward_kernels] == pytest.approx([2.4365e-4, 2.4365e-4])
    assert dw.backward.compute_s == pytest.approx(4.608e-4)
    # the forward keeps the class's rule: 0.25 grouped × 0.5 fp16 tensor × 0.2 wave = 0.025 of 4e9 → 4,608 / 1e8
    assert dw.forward.compute_s == pytest.approx(4.608e-5)
    # without the parameter: dgrad 0.25 × 0.5 × 0.5 backward × 0.2 = 0.0125 of 4e9 → 4,608 / 5e7 = 9.216e-5 s;
    # wgrad 0.25 × 0.5 × 0.25 backward_weight × 0.2 = 0.00625 → 4,608 / 2.5e7 = 1.8432e-4 s; each + 1.325e-5 s
    # of memory: 1.0541e-4 s, 1.9757e-4 s
    monkeypatch.setattr(gm, "load_params", lambda: {"generations": {"volta": TOY_PARAMS}})
    old = estimate(depthwise_net(), TOY, batch_size=2, dtype="fp16", variant="predicted")
    assert [k.total_s for k in old.layer_times[1].backward_kernels] == pytest.approx([1.0541e-4, 1.9757e-4])


def test_a_large_kernel_depthwise_backward_runs_on_cuda_cores_too(monkeypatch):
    """depthwise_net with a 5×5 depthwise conv ("depthwise_conv_large"): its backward kernels are on CUDA cores
    as a 3×3's are. dw: 128 outputs × 25 MACs × 2 = 6,400 FLOPs per sample each; batch 2: 12,800; compute 12,800 /
    2e7 = 6.4e-4 s; memory (128 + 128) × 2 B × 2 + 50 weights × 2 B = 1,124 B / 8e7 = 1.405e-5 s; each kernel
    6.5405e-4 s (the 3×3's arithmetic above)."""
    monkeypatch.setattr(gm, "load_params", lambda: {"generations": {"volta": {**TOY_PARAMS,
                                                                              "depthwise_backward": 0.1}}})
    net = Network.make("dw", {"x": (2, 8, 8)}, [
        Node.make("pw", "conv2d", "x", out_channels=2, kernel_size=1, bias=False),
        Node.make("dw", "conv2d", "pw", out_channels=2, kernel_size=5, padding=2, groups=2, bias=False)])
    e = estimate(net, TOY, batch_size=2, dtype="fp16", variant="predicted")
    assert e.layer_times[1].work_class == "depthwise_conv_large"
    assert e._predicted.work.kernels.cuda_core.sum() == 2
    assert [k.total_s for k in e.layer_times[1].backward_kernels] == pytest.approx([6.5405e-4, 6.5405e-4])


def channels_last_net() -> Network:
    """depthwise_net with its depthwise conv's input permuted to NHWC and back (a channels-last tensor, as in
    ConvNeXt's blocks), then a ReLU (keeps the layout) and a second depthwise conv after it."""
    return Network.make("dwcl", {"x": (2, 8, 8)}, [
        Node.make("pw", "conv2d", "x", out_channels=2, kernel_size=1, bias=False),
        Node.make("nhwc", "permute", "pw", dims=(0, 2, 3, 1)),
        Node.make("nchw", "permute", "nhwc", dims=(0, 3, 1, 2)),
        Node.make("dw", "conv2d", "nchw", out_channels=2, kernel_size=3, padding=1, groups=2, bias=False),
        Node.make("act", "relu", "dw"),
        Node.make("dw2", "conv2d", "act", out_channels=2, kernel_size=3, padding=1, groups=2, bias=False)])


@pytest.mark.parametrize("dtype", ["fp16", "fp32"])
def test_a_channels_last_depthwise_backward_runs_in_cudnn_on_half_activations(monkeypatch, dtype):
    """A depthwise conv whose input is channels-last (a permute (0, 3, 1, 2), passed on by a conv and a ReLU) runs
    cuDNN's NHWC kernels in half precision: its backward at the grouped-conv rule, not at the CUDA-core peak. In
    fp32 cuDNN's NHWC weight gradient is slower than PyTorch's kernels, so it stays on CUDA cores."""
    monkeypatch.setattr(gm, "load_params", lambda: {"generations": {"volta": {**TOY_PARAMS,
                                                                              "depthwise_backward": 0.1}}})
    net = channels_last_net()
    e = estimate(net, TOY, batch_size=2, dtype=dtype, variant="predicted")
    assert gm.channels_last_inputs(e.report.compiled) == {"dw", "act", "dw2"}
    half = dtype == "fp16"
    assert e._predicted.work.kernels.cuda_core.sum() == (0 if half else 4)     # dgrad and wgrad of dw and dw2
    for i in (3, 5):                # the per-work path (Estimate._layer_parts) marks the same kernels
        assert [gm.on_cuda_cores(w, e.model_params) for w in e._layer_parts("backward")[i]] == [not half] * 2
    for i in (3, 5):
        kernels = e.layer_times[i].backward_kernels
        if half:
            # the grouped rule, as test_a_depthwise_backward_runs_on_cuda_cores_by_hand's "without the parameter":
            # dgrad 4,608 FLOPs / (4e9 × 0.25 × 0.5 × 0.5 × 0.2 wave) = 9.216e-5 s, wgrad / (… × 0.25 …) = 1.8432e-4
            # s, each + 1,060 B / 8e7 = 1.325e-5 s of memory
            assert [k.total_s for k in kernels] == pytest.approx([1.0541e-4, 1.9757e-4])
        else:
            # CUDA cores: 4,608 / (1e9 × 0.1 × 0.2) = 2.304e-4 s each, + memory (128 + 128) × 4 B × 2 + 18 × 4 B =
            # 2,120 B / 8e7 = 2.65e-5 s: 2.569e-4 s (the 1e-5 s overhead is shorter)
            assert [k.total_s for k in kernels] == pytest.approx([2.569e-4, 2.569e-4])
    # the same network without the permutes: every depthwise backward on CUDA cores in either precision
    plain = Network.make("dwnchw", dict(net.inputs), [n for n in net.nodes if n.op != "permute"][:1] + [
        Node.make("dw", "conv2d", "pw", out_channels=2, kernel_size=3, padding=1, groups=2, bias=False),
        *[n for n in net.nodes if n.name in ("act", "dw2")]])
    assert estimate(plain, TOY, batch_size=2, dtype=dtype, variant="predicted")._predicted.work.kernels \
        .cuda_core.sum() == 4


def test_the_layout_of_an_elementwise_op_is_its_first_full_size_operands():
    """As PyTorch lays out an elementwise op's output: ``nchw + cl`` is NCHW, ``cl + nchw`` channels-last, and a
    broadcast operand (ConvNeXt's layer scale, (C, 1, 1)) does not decide, so ``scale * cl`` is channels-last; a
    layer norm returns a contiguous tensor."""
    net = Network.make("layouts", {"x": (2, 8, 8)}, [
        Node.make("pw", "conv2d", "x", out_channels=2, kernel_size=1, bias=False),
        Node.make("nhwc", "permute", "pw", dims=(0, 2, 3, 1)),
        Node.make("cl", "permute", "nhwc", dims=(0, 3, 1, 2)),
        Node.make("nchw_first", "add", ["pw", "cl"]),
        Node.make("cl_first", "add", ["cl", "pw"]),
        Node.make("scale", "parameter", [], shape=(2, 1, 1)),
        Node.make("scaled", "mul", ["scale", "cl"]),
        Node.make("after_scale", "relu", "scaled"),
        Node.make("after_nchw", "relu", "nchw_first"),
        Node.make("after_cl", "relu", "cl_first"),
        Node.make("norm", "layer_norm", "nhwc", normalized_ndim=1),
        Node.make("back", "permute", "norm", dims=(0, 3, 1, 2)),
        Node.make("after_back", "relu", "back"),
        Node.make("norm_cl", "layer_norm", "cl", normalized_ndim=1),
        Node.make("after_norm_cl", "relu", "norm_cl")],
        outputs=("after_scale", "after_nchw", "after_cl", "after_back", "after_norm_cl"))
    from core.graph import compile_network
    last = gm.channels_last_inputs(compile_network(net))
    # nodes whose first input is channels-last: cl_first (cl), after_scale (scaled), after_cl (cl_first),
    # after_back (the permute of the norm's NHWC output), norm_cl (cl); nchw_first reads pw first, after_nchw reads
    # nchw_first, scaled reads the (C, 1, 1) scale first, after_norm_cl a layer norm's (contiguous) output
    assert last == {"cl_first", "after_scale", "after_cl", "after_back", "norm_cl"}


def stem_net(channels: int) -> Network:
    return Network.make("stem", {"x": (channels, 8, 8)}, [
        Node.make("conv", "conv2d", "x", out_channels=8, kernel_size=3, stride=2, padding=1, bias=False)])


@pytest.mark.parametrize("dtype", ["fp16", "bf16", "mixed", "tf32", "fp32"])
def test_a_stem_conv_runs_on_cuda_cores_by_hand(toy_params, dtype):
    """``gpu_model.stem_conv``: a dense conv over ≤ 4 input channels (a network's first, on the image) runs its
    kernels at the conv class's efficiency of the CUDA-core (fp32) peak, without the tensor-core factor, in the
    tensor-core precisions; over 8 channels, or in fp32, the rule is the class's. Both paths (per work and arrays)."""
    dev = replace(TOY, peak_flops={"fp32": 1e9, "fp16": 4e9, "bf16": 4e9, "tf32": 3e9})
    e = estimate(stem_net(3), dev, batch_size=2, dtype=dtype, variant="predicted")
    tensor = dtype != "fp32"
    fwd = e._layer_parts("forward")[0][0]
    assert fwd.stem == tensor and gm.stem_conv(e.report.compiled.nodes[-1])
    # the input needs no gradient: the backward is the weight gradient alone, marked too
    assert [w.stem for w in e._layer_parts("backward")[0] if not w.cast] == [tensor]
    assert e._predicted.work.kernels.stem.sum() == (2 if tensor else 0)        # the forward and the weight gradient
    # conv (stride 2, no Winograd): 8 × 4 × 4 = 128 outputs × 27 MACs × 2 = 6,912 FLOPs per sample, batch 2: 13,824
    # tiles: ⌈2·16 / 128⌉ × ⌈8 / 128⌉ = 1 → wave 1 / 10 = 0.1
    # stem: 13,824 / (1e9 fp32 peak × 0.5 conv × 0.1) = 13,824 / 5e7 = 2.7648e-4 s in every precision (fp32: the
    # class's rule is the same)
    assert e.layer_times[0].forward.compute_s == pytest.approx(2.7648e-4)
    assert gm.compute_s(fwd, e) == pytest.approx(2.7648e-4)
    # over 8 channels the class's rule: fp16 0.5 conv × 0.5 tensor × 0.1 wave of 4e9 = 1e8 FLOP/s; 8 × 9 MACs × 2
    # = 144 FLOPs an output, × 128 × 2 = 36,864 FLOPs → 3.6864e-4 s; tf32 0.5 × 0.5 × 0.1 × 3e9 = 7.5e7 →
    # 4.9152e-4 s; fp32 0.5 × 0.1 × 1e9 = 5e7 → 7.3728e-4 s
    wide = estimate(stem_net(8), dev, batch_size=2, dtype=dtype, variant="predicted")
    assert not wide._layer_parts("forward")[0][0].stem and wide._predicted.work.kernels.stem.sum() == 0
    expected = {"tf32": 36_864 / 7.5e7, "fp32": 36_864 / 5e7}.get(dtype, 36_864 / 1e8)
    assert wide.layer_times[0].forward.compute_s == pytest.approx(expected)
    # 4 channels: cuDNN has tensor-core kernels for them (TF32, and a 4-channel first layer in fp16): not a stem
    assert not estimate(stem_net(4), dev, batch_size=2, dtype=dtype, variant="predicted")._layer_parts(
        "forward")[0][0].stem
    # the array path equals the per-work path to the bit
    per_work = e._layer_times_by_work()
    assert [lt.forward.total_s for lt in per_work] == [lt.forward.total_s for lt in e.layer_times]
    assert [lt.backward.total_s for lt in per_work] == [lt.backward.total_s for lt in e.layer_times]


def test_a_stem_conv_inside_a_network_has_its_input_gradient_on_cuda_cores(toy_params):
    """A 3-channel conv after another layer: its input gradient is a kernel too, on CUDA cores as its weight
    gradient is; both paths to the bit."""
    dev = replace(TOY, peak_flops={"fp32": 1e9, "bf16": 4e9})
    net = Network.make("mid", {"x": (8, 8, 8)}, [
        Node.make("a", "conv2d", "x", out_channels=3, kernel_size=1, bias=False),
        Node.make("b", "conv2d", "a", out_channels=8, kernel_size=3, stride=2, padding=1, bias=False)])
    e = estimate(net, dev, batch_size=2, dtype="bf16", variant="predicted")
    dgrad, wgrad = e._layer_parts("backward")[1]
    assert dgrad.stem and wgrad.stem and wgrad.weight_grad and not e._layer_parts("forward")[0][0].stem
    # b: 13,824 FLOPs a GEMM (8 × 4 × 4 outputs × 27 MACs × 2 × batch 2)
    # dgrad: tiles ⌈2·64 / 128⌉ × ⌈3 / 128⌉ = 1 → wave 0.1; 13,824 / (1e9 × 0.5 conv × 0.5 backward × 0.1) =
    # 13,824 / 2.5e7 = 5.5296e-4 s; wgrad: × 0.25 backward_weight, tiles 1: 13,824 / 1.25e7 = 1.10592e-3 s
    assert gm.compute_s(dgrad, e) == pytest.approx(5.5296e-4) and gm.compute_s(wgrad, e) == pytest.approx(1.10592e-3)
    assert e.layer_times[1].backward.compute_s == pytest.approx(5.5296e-4 + 1.10592e-3)
    assert e._predicted.work.kernels.stem.sum() == 3          # b's forward, input and weight gradients
    per_work = e._layer_times_by_work()
    assert [lt.backward.total_s for lt in per_work] == [lt.backward.total_s for lt in e.layer_times]
    assert [lt.forward.total_s for lt in per_work] == [lt.forward.total_s for lt in e.layer_times]


def test_resnet18_has_one_stem_conv():
    """torchvision's ResNet-18: conv1 (3 input channels) is the one stem conv; its forward and weight gradient are
    the kernels marked in bf16, none in fp32."""
    from core import zoo
    from core.graph import compile_network
    c = compile_network(zoo.get("resnet18"))
    assert [n.name for n in c.nodes if gm.stem_conv(n)] == ["conv1"]
    from core.precision import precision
    from core.predicted import predicted_work
    assert predicted_work(c, False, 8, precision("bf16")).kernels.stem.sum() == 2
    assert predicted_work(c, False, 8, precision("fp32")).kernels.stem.sum() == 0


def test_a_depthwise_backward_needs_the_cuda_core_peak(monkeypatch):
    """A device without an fp32 peak cannot time a depthwise conv's backward: a DeviceError names the figure and
    what the device has; a network without a depthwise conv does not need it."""
    monkeypatch.setattr(gm, "load_params", lambda: {"generations": {"volta": {**TOY_PARAMS,
                                                                              "depthwise_backward": 0.1}}})
    half_only = Device(id="half-gpu", name="Half GPU", vendor="test", kind="GPU", year=2020,
                       peak_flops={"fp16": 4e9}, memory_bandwidth=1e8, memory_capacity=1e9,
                       source="hand-made for tests", note="", architecture="volta", sm_count=10)
    assert estimate(two_layer(), half_only, batch_size=2, dtype="fp16", variant="predicted").totals["training_step_s"]
    e = estimate(depthwise_net(), half_only, batch_size=2, dtype="fp16", variant="predicted")
    with pytest.raises(CalcError, match="depthwise convolution's backward runs on CUDA cores at the fp32 peak, "
                                        "and Half GPU has none") as err:
        _ = e.totals["training_step_s"]
    assert (err.value.node, err.value.field) == ("half-gpu", "peak_flops.fp32")
    assert gm.cuda_core_precision("fp64") == "fp64" and gm.cuda_core_precision("bf16") == "fp32"
    # a stem conv does not need it: without the CUDA-core peak it keeps the tensor-core rule (a user's device)
    for dtype in ("fp16", "mixed"):
        e = estimate(stem_net(3), half_only, batch_size=2, dtype=dtype, variant="predicted")
        assert not e.stem_on_cuda_cores and not any(w.stem for w in e._layer_parts("forward")[0])
        # 13,824 FLOPs / (4e9 fp16 × 0.5 conv × 0.5 tensor × 0.1 wave) = 13,824 / 1e8 = 1.3824e-4 s
        assert e.layer_times[0].forward.compute_s == pytest.approx(1.3824e-4)
        assert e.totals["training_step_s"] > 0


def test_predicted_rows_sum_to_totals():
    from core import zoo
    e = estimate(zoo.get("resnet18"), "v100-sxm2", batch_size=8, variant="predicted")
    t = e.totals
    assert sum(lt.forward.total_s for lt in e.layer_times) == pytest.approx(t["forward_s"])
    assert sum(lt.backward.total_s for lt in e.layer_times) == pytest.approx(t["backward_s"])
    assert t["update_s"] > 0 and t["forward_overhead_s"] > 0
    # a training step's forward takes longer than inference's (batch norm's statistics pass, autograd), never less
    assert t["training_forward_s"] > t["forward_s"]


def test_winograd_in_fp32_only():
    from core import zoo
    net = zoo.get("vgg11")
    algs32 = {r["conv_algorithm"] for r in estimate(net, "v100-sxm2", variant="predicted").layers
              if r["op"] == "conv2d"}
    algs16 = {r["conv_algorithm"] for r in estimate(net, "v100-sxm2", dtype="fp16", variant="predicted").layers
              if r["op"] == "conv2d"}
    assert algs32 == {"winograd"} and algs16 == {"direct"}     # every VGG conv is 3×3 stride 1


def test_fitted_file_covers_the_dataset():
    gm.load_params.cache_clear()
    doc = gm.load_params()
    data = Path(__file__).resolve().parent.parent / "benchmarks" / "data" / "gpu_timings.csv"
    gens = {r["generation"] for r in csv.DictReader(data.open(encoding="utf-8"))}
    assert gens <= set(doc["generations"])
    for p in doc["generations"].values():
        for name, _, lo, hi in gm.PARAMETERS:
            assert lo <= p[name] <= hi, name
    assert doc["fitted"] and doc["errors"]["loso"]["rows"] > 0


def test_fitted_file_gives_held_out_error_per_generation():
    """errors_by_generation splits the leave-one-source-out rows by generation: every fitted generation has one,
    their rows add up to the LOSO rows, and each is a median ≤ p90 of |error| ≥ 0 (no fitted number is asserted)."""
    gm.load_params.cache_clear()
    doc = gm.load_params()
    by_gen = doc["errors_by_generation"]
    assert set(by_gen) == set(doc["generations"])
    assert sum(e["rows"] for e in by_gen.values()) == doc["errors"]["loso"]["rows"]
    for g, e in by_gen.items():
        assert set(e) == {"median", "p90", "rows"}, g
        assert e["rows"] > 0 and 0 <= e["median"] <= e["p90"], g
    for k in ("insample", "loso", "logo"):                   # the keys other code reads, unchanged
        assert set(doc["errors"][k]) == {"median", "p90", "rows"}


def test_a100_is_fitted_apart_from_ga10x():
    """GA100 (A100) and GA10x (RTX 3090, A10, A40, RTX A6000) are distinct generations in the device data, so the
    model looks up different parameters for them."""
    from core.devices import ARCHITECTURES, load_devices
    db = load_devices()
    assert "ampere-ga100" in ARCHITECTURES
    assert {db.device(i).architecture for i in ("a100-40gb-sxm", "a100-80gb-sxm", "a100-40gb-pcie",
                                                "a100-80gb-pcie")} == {"ampere-ga100"}
    assert {db.device(i).architecture for i in ("rtx-3090", "a10", "a40", "rtx-a6000")} == {"ampere"}


def test_predicted_needs_fitted_parameters():
    with pytest.raises(CalcError, match="is for GPUs"):
        estimate(two_layer(), "core-i7-920", variant="predicted")      # a datasheet CPU
    with pytest.raises(CalcError, match="blackwell"):
        estimate(two_layer(), "b200", variant="predicted")             # no Blackwell rows in the dataset
    with pytest.raises(CalcError, match="conv_algorithm|algorithm"):
        estimate(two_layer(), "v100-sxm2", variant="predicted", conv_algorithm="fft")
    with pytest.raises(CalcError, match="PPP"):
        estimate(two_layer(), "v100-sxm2", variant="predicted", ppp=0.5)


def test_kepler_is_fitted_from_its_own_rows():
    """The K80 and K40 (Kepler) get parameters of their own, from the Kepler rows of the dataset (TensorFlow, MXNet,
    Caffe and Torch7 timings), and a held-out error of their own in errors_by_generation."""
    from core import zoo
    gm.load_params.cache_clear()
    doc = gm.load_params()
    assert "kepler" in doc["generations"] and doc["errors_by_generation"]["kepler"]["rows"] > 0
    data = Path(__file__).resolve().parent.parent / "benchmarks" / "data" / "gpu_timings.csv"
    kepler = [r for r in csv.DictReader(data.open(encoding="utf-8")) if r["generation"] == "kepler"]
    # every Kepler row is fp32, so the fit uses all but those of a network not built in (Torch7's ResNet-200: 3)
    built_in = [r for r in kepler if r["network"] in zoo.names()]
    assert len(kepler) - len(built_in) == 3
    assert doc["errors_by_generation"]["kepler"]["rows"] == len(built_in)
    e = estimate(two_layer(), "k80", variant="predicted")
    assert e.totals["forward_s"] > 0
