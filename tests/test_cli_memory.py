"""``python -m core memory``: the peak of a training step, its parts, the largest tensors alive then, every step with
``--timeline``; the figures are ``core.timeline``'s (the same as ``analyze``'s training memory)."""

from __future__ import annotations

import json

import core
from core.cli import main
from core.units import format_bytes


def _run(capsys, *argv) -> tuple[int, str, str]:
    rc = main(list(argv))
    out, err = capsys.readouterr()
    return rc, out, err


def test_the_answer_is_the_training_memory_with_where_it_peaks(capsys):
    rc, out, _ = _run(capsys, "memory", "mnist_cnn")
    t = core.analyze("mnist_cnn").totals
    assert rc == 0
    # 14,855,352 B (tests/test_memory.py works it by hand) = 14.17 MiB, in relu_1's backward, step 21 of 25
    assert out.splitlines()[1] == f"Peak: {format_bytes(t['training_bytes'])} in the backward of relu_1 (step 21 of 25)"
    assert format_bytes(t["training_bytes"]) == "14.17 MiB"
    # the parts at the peak, by hand: saved 86,528 + 147,456 = 233,984 B = 228.50 KiB; in flight 2 × 147,456 = 288 KiB
    assert "activations saved for backward           228.50 KiB" in out
    assert "layer outputs and gradients in flight    288.00 KiB" in out
    assert "relu_1's output" in out and "gradient of relu_1's output" in out


def test_json_and_timeline(capsys):
    rc, out, _ = _run(capsys, "memory", "resnet18", "--batch", "4", "--json")
    data = json.loads(out)
    r = core.analyze("resnet18", batch_size=4)
    assert rc == 0 and data["peak_bytes"] == r.totals["training_bytes"]
    assert data["steps"] == r.memory_timeline() and data["peak_at"] == r.totals["training_peak_at"]
    rc, out, _ = _run(capsys, "memory", "resnet18", "--batch", "4", "--timeline")
    lines = out.splitlines()
    start = lines.index("") + 2                       # a blank line, then the header
    assert lines[start - 1].split()[:4] == ["step", "phase", "layer", "total"]
    assert len(lines) - start == len(r.memory_timeline())
    assert lines[start].split()[:3] == ["1", "forward", "conv1"]
    assert lines[-1].split()[:3] == ["139", "optimizer", "step"]


def test_against_a_device_and_bad_input(capsys):
    rc, out, _ = _run(capsys, "memory", "resnet50", "--batch", "32", "--device", "v100-sxm2")
    # 2.78 GiB of 16 GiB = 17 %
    assert rc == 0 and "17% of the 16.00 GiB on NVIDIA Tesla V100 SXM2 (16 GB): fits" in out
    rc, _, err = _run(capsys, "memory", "resnet50", "--batch", "0")
    assert rc == 2 and "batch size must be at least 1" in err and "Traceback" not in err
    rc, _, err = _run(capsys, "memory", "resnet50", "--device", "no-such-gpu")
    assert rc == 2 and "no-such-gpu" in err
