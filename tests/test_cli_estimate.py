"""`python -m core devices` and `python -m core estimate` (issue 3 §4)."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def run(*args):
    return subprocess.run([sys.executable, "-m", "core", *args], cwd=ROOT, capture_output=True, text=True, timeout=120)


def test_estimate_json_has_the_documented_keys():
    p = run("estimate", "vgg16", "--device", "K80", "--batch", "2", "--json", "--variant", "paleo")
    assert p.returncode == 0, p.stderr
    out = json.loads(p.stdout)
    assert {"forward_s", "backward_s", "training_step_s", "samples_per_s"} <= set(out["totals"])
    assert {"ridge_flop_per_byte", "arithmetic_intensity", "attainable_flop_per_s", "bound"} <= set(out["roofline"])
    assert out["roofline"]["bound"] in ("compute", "memory")
    # VGG16: 13 conv + 13 relu + 5 pool + avgpool, flatten and 7 classifier nodes = 40
    assert len(out["layers"]) == 40 and out["device"] == "k80"
    # VGG16 forward at batch 2 on one K80 GPU at peak: 2 · 30.96 GFLOP / 4.365 TFLOP/s ≈ 14.2 ms of compute
    assert out["totals"]["forward_compute_s"] == pytest.approx(2 * 30_958_700_544 / 4.365e12, rel=1e-9)


def test_estimate_table_says_what_ppp_1_means():
    p = run("estimate", "mnist_cnn", "--device", "v100-sxm2", "--variant", "paleo")
    assert p.returncode == 0 and "PALEO at the datasheet peak (PPP 1): an optimistic bound" in p.stdout
    p = run("estimate", "mnist_cnn", "--device", "v100-sxm2", "--variant", "paleo", "--explain")
    assert p.returncode == 0 and "PPP 1.0 = datasheet peak" in p.stdout


@pytest.mark.parametrize("args", [
    ("resnet50", "--device", "t4", "--batch", "64"),                     # predicted
    ("vgg16", "--device", "epyc-9654"),                                   # PALEO on a CPU
    ("resnet18", "--device", "v100-sxm2", "--ppp", "0.5"),                # PALEO at a PPP
    ("resnet18", "--device", "v100-sxm2", "--workers", "4", "--link", "nvlink2", "--batch", "32"),
])
def test_estimate_answers_first(args):
    """The times come first (all four by line 5), then one line of at most 100 characters on the time model;
    --explain gives the long form of that line (with, for a prediction, what it was fitted on)."""
    lines = run("estimate", *args).stdout.splitlines()
    heads = [ln.split(":")[0] for ln in lines[:5]]
    assert heads[1:] == ["Forward", "Backward", "Weight update", "Training step"], lines[:5]
    model = next(ln for ln in lines if ln.startswith("Time model:"))
    assert len(model) <= 100, model
    long = run("estimate", *args, "--explain").stdout.splitlines()
    assert long[:5] == lines[:5]
    explained = next(ln for ln in long if ln.startswith("Time model:"))
    assert len(explained) > len(model)
    if "predicted" in model:
        assert any(ln.startswith("Fitted on:") for ln in long) and not any(ln.startswith("Fitted on:")
                                                                           for ln in lines)


@pytest.mark.parametrize("args, fragment", [
    (("estimate", "vgg16", "--device", "v100x"), "closest"),
    (("estimate", "vgg16", "--device", "v100-sxm2", "--dtype", "tf32"), "fp64, fp32, fp16"),
    (("estimate", "vgg16", "--device", "v100-sxm2", "--ppp", "1.5"), "ppp"),
    (("estimate", "vgg16", "--device", "v100-sxm2", "--workers", "4"), "link"),
    (("estimate", "vgg16", "--device", "v100-sxm2", "--workers", "4", "--link", "warp-drive"), "interconnect"),
])
def test_bad_estimates_exit_2_with_one_line(args, fragment):
    p = run(*args)
    assert p.returncode == 2
    assert "Traceback" not in p.stderr and fragment in p.stderr and p.stderr.count("\n") == 1


def test_devices_lists_every_figure_with_its_source():
    p = run("devices", "--json")
    assert p.returncode == 0
    out = json.loads(p.stdout)
    assert out["problems"] == []
    assert all(d["source"].startswith("https://") for d in out["devices"] + out["interconnects"])
    assert "source:" in run("devices").stdout


def test_devices_with_a_broken_file_names_it(tmp_path):
    f = tmp_path / "mine.json"
    f.write_text('{"schema": "cnn-calc/devices", "version": 1, "devices": [{"id": "x"}]}')
    p = run("devices", "--file", str(f))
    assert p.returncode == 0 and "left out: x: " in p.stdout      # the bad entry is named, the rest (none) load


def test_estimate_table_shows_fresh_pages_and_overhead_on_a_calibrated_cpu():
    """A calibrated Linux CPU (page-fault rate 1 GB/s, largest mmap threshold 1,000,000 B, 10 µs per conv call):
    mnist_cnn at batch 64 writes 57,540,608 B to fresh pages (the hand trace in test_paleo), 57.541 ms at 1 GB/s."""
    import dataclasses

    from core.api import estimate
    from core.cli_text import format_estimate
    from core.devices import load_devices

    dev = dataclasses.replace(load_devices(user_path=None).device("v100-sxm2"), kind="CPU", alloc_threshold=1e6,
                              alloc_bandwidth=1e9, efficiency={"conv": 1.0}, layer_overhead={"conv": 1e-5})
    text = format_estimate(estimate("mnist_cnn", dev, batch_size=64))
    assert "of which 57.541 ms writing 57.54 MB to fresh pages" in text
    assert "per-layer overhead 0.020 ms" in text        # conv1 and conv2: 2 × 10 µs
    assert "PALEO with this machine's calibrated efficiencies" in text and "optimistic" not in text
    text = format_estimate(estimate("mnist_cnn", dev, batch_size=64), explain=True)
    assert "PPP 1.0 × the calibrated efficiency of each class of work" in text and "optimistic" not in text


def test_a_warm_process_pays_no_fresh_pages_the_allocator_keeps():
    """Two ReLUs on (1024, 1024) (tests/test_cpu_heap.py traces glibc by hand): a fresh process faults 4,063,232 +
    4,194,304 = 8,257,536 B a pass, 8.257536 ms at 1 GB/s; a warm one none, and its forward is shorter by exactly
    that. A GPU has no fresh-page term: the setting changes nothing there. The CLI takes --process and says it."""
    import dataclasses

    from core.cli_text import format_estimate
    from core.devices import load_devices
    from core.errors import CalcError
    from core.ir import Network, Node
    from core.paleo import estimate

    net = Network.make("two", {"x": (1024, 1024)}, [Node.make("r1", "relu", "x"), Node.make("r2", "relu", "r1")])
    gpu = load_devices(user_path=None).device("v100-sxm2")
    cpu = dataclasses.replace(gpu, kind="CPU", alloc_threshold=32 * 2 ** 20, alloc_bandwidth=1e9,
                              efficiency={"elementwise": 1.0}, layer_overhead={"elementwise": 1e-5})
    fresh, warm = (estimate(net, cpu, process=p) for p in ("fresh", "warm"))
    assert fresh.totals["forward_fresh_bytes"] == 8_257_536 and warm.totals["forward_fresh_bytes"] == 0
    assert fresh.totals["forward_fresh_s"] == pytest.approx(8.257536e-3)
    assert fresh.totals["forward_s"] - warm.totals["forward_s"] == pytest.approx(8.257536e-3)
    assert warm.to_dict()["process"] == "warm" and "no fresh pages in a warm process" in format_estimate(warm)
    assert estimate(net, gpu, process="warm").totals == estimate(net, gpu).totals
    with pytest.raises(CalcError, match="process"):
        estimate(net, cpu, process="hot")
    p = run("estimate", "mnist_cnn", "--device", "v100-sxm2", "--process", "warm", "--json")
    assert p.returncode == 0, p.stderr
    assert json.loads(p.stdout)["process"] == "warm"
