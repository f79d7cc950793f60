"""``core.timeline``: memory over a training step, step by step on a hand-built residual network, and its peak as
``training_bytes`` on every built-in network."""

from __future__ import annotations

import pytest

import core
from core import Network, Node, analyze
from core.timeline import PARTS


def _residual() -> core.Report:
    """x (2×4×4) → c1 (1×1 conv, 2→2) → r1 (relu) → c2 (1×1 conv) → add(c2, r1) → r2 (relu): 32 elements a tensor."""
    net = Network.make("res", {"x": (2, 4, 4)}, [
        Node.make("c1", "conv2d", "x", out_channels=2, kernel_size=1),
        Node.make("r1", "relu", "c1"),
        Node.make("c2", "conv2d", "r1", out_channels=2, kernel_size=1),
        Node.make("add", "add", ["c2", "r1"]),
        Node.make("r2", "relu", "add"),
    ], ["r2"])
    return analyze(net)


def test_a_residual_step_by_hand():
    # Constant: 2 convs × (2·2 + 2) = 12 weights × 4 B = 48 B, their momentum 48 B, the input 32 × 4 = 128 B: 224 B.
    # Saved for backward: x (by c1; counted as the input), r1 (by r1 and c2), r2 (by r2). 32 elements = 128 B each.
    # (step, phase, layer, saved B, outputs B, gradients B, total = 224 + the three)
    expected = [
        ("forward", "c1", 0, 128, 0),          # c1's output, to be read by r1
        ("forward", "r1", 128, 128, 0),        # r1 kept; c1's output read
        ("forward", "c2", 128, 128, 0),        # c2's output, to be read by add
        ("forward", "add", 128, 256, 0),       # c2's output read, add's made
        ("forward", "r2", 256, 128, 0),        # r2 kept; add's output read; c2's freed
        ("backward", "r2", 256, 256, 0),       # ∂r2 (from the loss) and ∂add
        ("backward", "add", 128, 384, 0),      # r2 freed; ∂add, ∂c2, ∂r1
        ("backward", "c2", 128, 384, 24),      # ∂c2, ∂r1 and a second ∂r1 summed into it; c2's 6 weight grads
        ("backward", "r1", 128, 256, 24),      # ∂r1 and ∂c1
        ("backward", "c1", 0, 128, 48),        # r1 freed; ∂c1 (x needs no gradient); c1's 6 weight grads
        ("optimizer", "step", 0, 0, 48),
    ]
    r = _residual()
    rows = r.memory_timeline()
    got = [(x["phase"], x["layer"], x["saved"], x["outputs"], x["gradients"]) for x in rows]
    assert got == expected
    assert all((x["parameters"], x["optimizer"], x["input"]) == (48, 48, 128) for x in rows)
    assert [x["total"] for x in rows] == [224 + s + o + g for _, _, s, o, g in expected]
    # the peak: 224 + 128 + 384 + 24 = 760 B, in c2's backward
    assert r.totals["training_bytes"] == 760
    assert r.totals["training_peak_at"] == "the backward of c2"
    assert r.timeline.peak_step == 7


def test_the_peak_grows_with_the_batch_by_the_activations_at_the_peak():
    # at batch 5 every activation part is 5×: c2's backward is 48 + 48 + 5·128 (input) + 5·(128 + 384) + 24 = 3,320 B
    t = _residual().with_batch(5).totals
    assert t["training_bytes"] == 48 + 48 + 5 * 128 + 5 * (128 + 384) + 24
    assert t["training_peak_at"] == "the backward of c2"


def test_what_is_alive_at_the_peak():
    # c2's backward: the input, r1's output (saved), and three gradients of 128 B each
    alive = _residual().timeline.alive_at_peak()
    assert sorted(alive) == sorted([("the input batch", 128), ("r1's output", 128), ("gradient of r1's output", 128),
                                    ("gradient of r1's output", 128), ("gradient of c2's output", 128)])


def _ancestors_of_outputs(c) -> set[str]:
    out, todo = set(), list(c.outputs)
    while todo:
        name = todo.pop()
        if name not in out:
            out.add(name)
            todo += list(c.by_name[name].inputs) if name in c.by_name else []
    return out


def test_a_branch_no_output_reads_gets_no_gradient():
    # x (8) → a: linear 8→4 (output); dead: linear 8→16 that nothing reads. 36 + 144 = 180 weights, 720 B, momentum
    # 720 B, input 32 B. The peak is a's backward: its output's gradient (16 B) and a's 36 weight gradients (144 B);
    # dead's 144 weights never get one: 720 + 720 + 32 + 16 + 144 = 1,632 B
    net = Network.make("dead", {"x": (8,)}, [Node.make("a", "linear", "x", out_features=4),
                                             Node.make("dead", "linear", "x", out_features=16)], ["a"])
    r = analyze(net)
    assert r.totals["training_bytes"] == 1_632 and r.totals["training_peak_at"] == "the backward of a"
    assert [x["layer"] for x in r.memory_timeline()] == ["a", "dead", "a", "step"]
    assert r.memory_timeline()[-1]["gradients"] == 144


def _input_saved(c) -> bool:
    return any(n.needs_grad and any(n.inputs[i] in c.input_shapes for i in n.saves.inputs) for n in c.nodes)


@pytest.mark.parametrize("name", core.builtin_names())
def test_every_builtin_peak_is_the_training_memory(name):
    r = analyze(name, batch_size=2, dtype="mixed", optimizer="adam")
    t, rows = r.totals, r.memory_timeline()
    assert max(x["total"] for x in rows) == t["training_bytes"]
    assert rows[r.timeline.peak_step]["total"] == t["training_bytes"]
    assert all(x[p] >= 0 for x in rows for p in PARTS)
    assert all(x["total"] == sum(x[p] for p in PARTS) for x in rows)
    end = [x for x in rows if x["phase"] == "forward"][-1]
    # at the end of the forward every tensor saved for backward is alive (the input is its own part)
    assert end["saved"] + (t["input_bytes"] if _input_saved(r.compiled) else 0) == t["saved_activation_bytes"]
    last = rows[-1]
    assert last["phase"] == "optimizer" and last["saved"] == last["outputs"] == 0
    # every weight's gradient exists at the update, but for parameters no output depends on (Inception v3 keeps its
    # auxiliary classifier's 3,326,696 as parameters nothing reads): PyTorch leaves their .grad None
    unused = sum(n.params.trainable for n in r.compiled.nodes if n.name not in _ancestors_of_outputs(r.compiled))
    assert last["gradients"] == t["gradient_bytes"] - unused * r.precision.grad
    assert unused == (3_326_696 if name == "inception_v3" else 0)
    assert last["parameters"] == t["param_bytes"] + t["buffer_bytes"] + t["master_weight_bytes"]
    assert last["optimizer"] == t["optimizer_bytes"]
