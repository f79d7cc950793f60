"""A calibrated CPU's backward pass and optimizer step (issue 14 item 3): its backward efficiencies and per-node
overheads, the backward's gradients on fresh pages, and the optimizer's cost per parameter tensor — used where the
device has them, and a device without them estimated as before. Hand arithmetic on a three-layer network.

three(): x (4) → fc1 linear 4→8, no bias → act ReLU → fc2 linear 8→2, no bias; batch 2; fp32 (4 B).
Backward work (``core.graph``): fc1 is the first layer, its input carries no gradient, so only its weight gradient:
  fc1: wgrad 2 × 2 × 4 × 8 = 128 FLOPs; bytes dy 8 + saved x 4 = 12 per sample × 2 × 4 B = 96, its weight
       gradient 32 × 4 B = 128 → 224 B;
  act: 1 FLOP per element, 2 × 8 = 16 FLOPs; dy 8 + dx 8 + saved output 8 = 24 × 2 × 4 B = 192 B;
  fc2: dgrad 2 × 2 × 8 × 2 = 64 + wgrad 64 = 128 FLOPs; dy 2 + dx 8 + saved x 8 = 18 × 2 × 4 B = 144, weights
       read 16 + their gradient 16 = 32 × 4 B = 128 → 272 B.
The device: peak 1e9 FLOP/s, bandwidth 1e8 B/s.
"""

from __future__ import annotations

import dataclasses

import pytest

from core.devices import Device
from core.ir import Network, Node
from core.paleo import estimate

PLAIN = Device(id="cpu", name="CPU", vendor="test", kind="CPU", year=2026, peak_flops={"fp32": 1e9},
               memory_bandwidth=1e8, source="hand-made for tests", note="",
               efficiency={"linear": 0.5, "elementwise": 0.25}, layer_overhead={"linear": 1e-5, "elementwise": 2e-6},
               alloc_threshold=1e6, alloc_bandwidth=1e9)
BACKWARD = dataclasses.replace(PLAIN, backward_efficiency={"linear": 0.25, "elementwise": 0.1},
                               backward_overhead={"linear": 3e-5, "elementwise": 5e-6}, update_overhead=1e-6)


def three() -> Network:
    return Network.make("three", {"x": (4,)}, [Node.make("fc1", "linear", "x", out_features=8, bias=False),
                                               Node.make("act", "relu", "fc1"),
                                               Node.make("fc2", "linear", "act", out_features=2, bias=False)])


@pytest.mark.parametrize("variant", ["paleo", "roofline"])
def test_a_device_with_backward_figures_uses_them(variant):
    """fc1: 128 / (1e9 × 0.25) = 5.12e-7 s compute, 224 / 1e8 = 2.24e-6 s memory, 3e-5 s per node;
    act: 16 / (1e9 × 0.1) = 1.6e-7, 192 / 1e8 = 1.92e-6, 5e-6; fc2: 5.12e-7, 272 / 1e8 = 2.72e-6, 3e-5.
    PALEO: 3.2752e-5 + 7.08e-6 + 3.3232e-5 = 7.3064e-5 s. Roofline: max(compute, memory) + overhead per layer:
    2.24e-6 + 3e-5 + 1.92e-6 + 5e-6 + 2.72e-6 + 3e-5 = 7.188e-5 s. Every block is below the 1e6 B threshold: no
    fresh pages."""
    e = estimate(three(), BACKWARD, batch_size=2, variant=variant)
    fc1, act, fc2 = (lt.backward for lt in e.layer_times)
    assert (fc1.compute_s, act.compute_s, fc2.compute_s) == pytest.approx((5.12e-7, 1.6e-7, 5.12e-7))
    assert (fc1.overhead_s, act.overhead_s, fc2.overhead_s) == pytest.approx((3e-5, 5e-6, 3e-5))
    assert (fc1.memory_s, act.memory_s, fc2.memory_s) == pytest.approx((2.24e-6, 1.92e-6, 2.72e-6))
    assert e.totals["backward_s"] == pytest.approx(7.3064e-5 if variant == "paleo" else 7.188e-5)
    assert e.totals["backward_overhead_s"] == pytest.approx(6.5e-5)
    # the forward keeps the forward's figures: fc1 2 × 4 × 8 × 2 = 128 FLOPs at 1e9 × 0.5 = 2.56e-7 s
    assert e.layer_times[0].forward.compute_s == pytest.approx(2.56e-7)
    assert e.layer_times[0].forward.overhead_s == pytest.approx(1e-5)


def test_a_device_without_backward_figures_is_estimated_as_before():
    """The forward's figures in backward: fc1 128 / (1e9 × 0.5) = 2.56e-7 + 2.24e-6 + 1e-5 = 1.2496e-5;
    act 16 / 2.5e8 = 6.4e-8 + 1.92e-6 + 2e-6 = 3.984e-6; fc2 2.56e-7 + 2.72e-6 + 1e-5 = 1.2976e-5;
    backward = 2.9456e-5 s; no update overhead."""
    e = estimate(three(), PLAIN, batch_size=2)
    assert e.totals["backward_s"] == pytest.approx(2.9456e-5)
    assert e.update.overhead_s == 0.0


def test_the_optimizer_step_pays_its_cost_per_parameter_tensor_and_its_kernels_bytes():
    """fc1.weight and fc2.weight: 2 tensors × 1e-6 s. SGD with momentum (the default) on 32 + 16 = 48 parameters:
    torch's per-parameter loop moves 8 fp32 elements each (v.mul_: 2, v.add_(g): 3, w.add_(v): 3), 48 × 8 × 4 =
    1536 B → 1.536e-5 s at 1e8 B/s; the table's fused update 5 (w r/w, g, v r/w): 960 B → 9.6e-6 s. The FLOPs
    stay the table's."""
    with_cost, without = estimate(three(), BACKWARD, batch_size=2), estimate(three(), PLAIN, batch_size=2)
    assert with_cost.update.overhead_s == pytest.approx(2e-6)
    assert (with_cost.update.bytes, without.update.bytes) == (1536, 960)
    assert with_cost.totals["update_s"] - without.totals["update_s"] == pytest.approx(2e-6 + 1.536e-5 - 9.6e-6)
    assert with_cost.update.flops == without.update.flops
    # Adam: (2 weight + 2 gradient + 8 state + 6 temporaries) × 48 × 4 B = 3456 B
    assert estimate(three(), BACKWARD, batch_size=2, optimizer="adam").update.bytes == 3456
    # a bias is a tensor of its own, a BatchNorm has two: resnet18 has 62 (torchvision's parameters())
    from core.api import analyze
    from core.work import param_tensors

    assert sum(param_tensors(n) for n in analyze("resnet18").compiled.nodes) == 62


def test_backward_gradients_of_at_least_the_threshold_land_on_fresh_pages():
    """Threshold 100 B: fc1's weight gradient (128 B) is mmap-ed, fresh; act's and fc2's input gradients (2 × 8 × 4
    = 64 B) and fc2's weight gradient (16 × 4 = 64 B) are not. 128 B at 1e9 B/s = 1.28e-7 s more backward. A
    device without backward figures charges none (calibrated before they were measured: its estimates stay)."""
    low = dataclasses.replace(BACKWARD, alloc_threshold=100.0)
    e, base = estimate(three(), low, batch_size=2), estimate(three(), BACKWARD, batch_size=2)
    assert e.backward_fresh_bytes == (128, 0, 0)
    assert [lt.backward.fresh_bytes for lt in e.layer_times] == [128, 0, 0]
    assert e.totals["backward_s"] - base.totals["backward_s"] == pytest.approx(1.28e-7)
    plain = dataclasses.replace(PLAIN, alloc_threshold=100.0)
    assert estimate(three(), plain, batch_size=2).backward_fresh_bytes == (0, 0, 0)


def test_a_gpu_from_the_database_has_no_backward_figures():
    from core.devices import load_devices

    for dev in load_devices(user_path=None).devices.values():
        assert not (dev.backward_efficiency or dev.backward_overhead or dev.update_overhead), dev.id


def test_a_training_step_runs_its_forward_at_the_training_forward_figures():
    """train_efficiency linear 0.25, elementwise 0.125; train_overhead 20 µs and 4 µs. Forward work:
      fc1: 2 × 4 × 8 × 2 = 128 FLOPs / (1e9 × 0.25) = 5.12e-7 s; weights 32 × 4 + input 2 × 4 × 4 + output 2 × 8 × 4
           = 224 B / 1e8 = 2.24e-6 s; 2e-5 s;
      act: 16 FLOPs / 1.25e8 = 1.28e-7 s; 64 + 64 = 128 B → 1.28e-6 s; 4e-6 s;
      fc2: 2 × 8 × 2 × 2 = 64 FLOPs / 2.5e8 = 2.56e-7 s; 16 × 4 + 64 + 2 × 2 × 4 = 144 B → 1.44e-6 s; 2e-5 s.
    2.2752e-5 + 5.408e-6 + 2.1696e-5 = 4.9856e-5 s (every block from the heap, reused: no fresh pages). The
    inference forward keeps its own figures; a device without training figures steps with its inference forward."""
    dev = dataclasses.replace(BACKWARD, train_efficiency={"linear": 0.25, "elementwise": 0.125},
                              train_overhead={"linear": 2e-5, "elementwise": 4e-6})
    t = estimate(three(), dev, batch_size=2).totals
    assert t["training_forward_s"] == pytest.approx(4.9856e-5)
    assert t["training_step_s"] == pytest.approx(4.9856e-5 + t["backward_s"] + t["update_s"])
    assert t["forward_s"] == estimate(three(), BACKWARD, batch_size=2).totals["forward_s"]
    plain = estimate(three(), BACKWARD, batch_size=2).totals
    assert plain["training_forward_s"] == plain["forward_s"]
    assert plain["training_step_s"] == pytest.approx(plain["forward_s"] + plain["backward_s"] + plain["update_s"])


def test_the_cli_prints_the_training_forward_only_where_it_differs():
    """The printed forward + backward + update must add up to the printed step: a device with training-forward
    figures gets its own line (4.9856e-5 s by hand above, printed as the CLI prints times: 0.050 ms), one without
    none."""
    from core.cli_text import format_estimate

    dev = dataclasses.replace(BACKWARD, train_efficiency={"linear": 0.25, "elementwise": 0.125},
                              train_overhead={"linear": 2e-5, "elementwise": 4e-6})
    text = format_estimate(estimate(three(), dev, batch_size=2))
    line = next(ln for ln in text.splitlines() if ln.startswith("Train forward:"))
    assert line.startswith("Train forward:  0.050 ms"), line
    assert line.endswith("autograd recording; calibrated)"), line
    assert not any(ln.startswith("Train forward:")
                   for ln in format_estimate(estimate(three(), BACKWARD, batch_size=2)).splitlines())


def test_every_optimizer_has_its_per_parameter_loop_accesses():
    """A calibrated CPU's update reads EAGER_ACCESSES by optimizer: an optimizer added to the table without its
    loop's accesses would be a KeyError in every training estimate on such a device."""
    from core.precision import OPTIMIZERS
    from core.work import EAGER_ACCESSES

    assert set(EAGER_ACCESSES) == set(OPTIMIZERS)
    for name in OPTIMIZERS:
        dev = dataclasses.replace(BACKWARD)
        assert estimate(three(), dev, batch_size=2, optimizer=name).totals["update_s"] > 0
