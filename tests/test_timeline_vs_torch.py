"""``core.timeline`` against PyTorch: one training step of core's own IR built as a torch module, every live tensor
followed by MemTracker (``core.bridge.memory_trace``), sampled after each layer's forward and before each layer's
backward, compared with the modelled step."""

from __future__ import annotations

import warnings

import pytest
import torch  # noqa: F401  (marks this module torch)

import core
from core.bridge.memory_trace import trace_step


def _before_backward(report: core.Report) -> dict[str, int]:
    """The model's bytes just before each layer's backward: its backward row less the weight gradients and the input
    gradients that layer makes (a view makes none)."""
    c, n, act = report.compiled, report.batch_size, report.precision.activation
    rows = {x["layer"]: x["total"] for x in report.memory_timeline() if x["phase"] == "backward"}
    out = {}
    for node in c.nodes:
        if node.name not in rows:
            continue
        view = node.rule.alias and not node.rule.copies_in_training
        made = 0 if view else sum(c.by_name[s].out_elems for s, g in zip(node.inputs, node.grad_in)
                                  if g and s in c.by_name and not c.by_name[s].rule.stored)
        out[node.name] = rows[node.name] - node.params.trainable * report.precision.grad - made * n * act
    return out


@pytest.mark.parametrize("name, batch", [("mnist_cnn", 4), ("resnet18", 2), ("mobilenet_v2", 2)])
def test_the_modelled_step_follows_pytorchs(name, batch):
    warnings.filterwarnings("ignore")
    net = core.zoo.get(name)
    report = core.analyze(net, batch_size=batch)
    peak = report.totals["training_bytes"]
    traced = trace_step(net, batch, threads=1)
    assert peak == pytest.approx(traced["peak"], rel=0.01)
    forward = {x["layer"]: x["total"] for x in report.memory_timeline() if x["phase"] == "forward"}
    assert [layer for layer, _ in traced["forward"]] == list(forward)
    for layer, measured in traced["forward"]:
        assert abs(measured - forward[layer]) <= 0.04 * peak, layer
    before = _before_backward(report)
    assert len(traced["backward"]) >= 0.9 * len(before)
    for layer, measured in traced["backward"]:
        assert abs(measured - before[layer]) <= 0.02 * peak, layer
    # the shape: memory rises through the forward and falls through the backward
    fw = [b for _, b in traced["forward"]]
    bw = [b for _, b in traced["backward"]]
    assert fw[-1] > fw[0] and bw[-1] < max(bw)
