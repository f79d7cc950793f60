"""Live timing and calibration (core.bridge.timing, core.bridge.calibrate, core.bridge.cli_ext).

Everything runs on the CPU with tiny networks and budgets: the tests check structure and sanity (positive times,
min ≤ median ≤ max, the right number of samples, progress, cancellation, the lock, the memory guard, a device spec
the database accepts), never speed. The CUDA and MPS branches need hardware these tests do not assume.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
import torch  # a test requirement: a missing install must fail, not skip
from torch import nn

import core
from core.api import estimate
from core.bridge import cli_ext
from core.bridge.calibrate import calibrate, save_local
from core.bridge.timing import (
    PASSES,
    PassTiming,
    available_memory,
    busy,
    check_fits,
    fmt_bytes,
    implied_ppp,
    throughput_vs_batch,
    time_module,
)
from core.devices import OP_CLASSES, load_devices
from core.errors import CalcError

ROOT = Path(__file__).resolve().parents[1]
SHAPE = (3, 16, 16)
FAST = dict(warmup=1, repeats=3, threads=1)


def tiny() -> nn.Module:
    torch.manual_seed(0)
    return nn.Sequential(nn.Conv2d(3, 8, 3), nn.ReLU(), nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(8, 4))


def mnist_like() -> nn.Module:
    """core.zoo's mnist_cnn written by hand in torch (the same layers and sizes)."""
    return nn.Sequential(nn.Conv2d(1, 32, 3), nn.ReLU(), nn.Conv2d(32, 64, 3), nn.ReLU(), nn.MaxPool2d(2),
                         nn.Dropout(0.25), nn.Flatten(), nn.Linear(9216, 128), nn.ReLU(), nn.Dropout(0.5),
                         nn.Linear(128, 10), nn.LogSoftmax(dim=1))


# == statistics and passes ========================================================================================

def test_pass_statistics():
    t = PassTiming.of([5.0, 1.0, 3.0, 2.0, 4.0])
    assert (t.median_s, t.min_s, t.max_s, t.iqr_s) == (3.0, 1.0, 5.0, 2.0)
    assert PassTiming.of([0.5]).iqr_s == 0.0


def test_every_pass_is_timed_and_the_module_is_left_as_it_was():
    m = tiny()
    m.eval()
    before = {k: v.clone() for k, v in m.state_dict().items()}
    r = time_module(m, SHAPE, batch_size=2, **FAST)
    assert tuple(r.passes) == PASSES
    for name, t in r.passes.items():
        assert len(t.samples) == 3, name
        assert all(s > 0 for s in t.samples)
        assert 0 < t.min_s <= t.median_s <= t.max_s
        assert t.iqr_s >= 0
    assert not r.truncated and r.threads == 1 and r.device == "cpu"
    # measured peak memory on the CPU (profiler records): at least the weights and the input
    weights = sum(p.numel() * 4 for p in m.parameters())
    for name in PASSES:
        assert r.peak_memory_bytes[name] >= weights + 2 * 3 * 16 * 16 * 4
    assert "profiler" in r.memory_method
    # weights (the train step changed them), mode and gradients are restored
    assert all(torch.equal(before[k], v) for k, v in m.state_dict().items())
    assert not m.training and all(p.grad is None for p in m.parameters())
    json.dumps(r.to_dict())


def test_only_the_requested_passes():
    r = time_module(tiny(), "3x16x16", passes="forward", warmup=0, repeats=2, measure_memory=False, threads=1)
    assert list(r.passes) == ["forward"] and len(r.passes["forward"].samples) == 2
    assert r.peak_memory_bytes == {}


def test_per_layer_times_every_leaf_module():
    r = time_module(tiny(), SHAPE, passes=("forward",), per_layer=True, measure_memory=False, **FAST)
    assert list(r.layers) == ["0", "1", "2", "3", "4"]
    assert all(v > 0 for v in r.layers.values())
    assert r.layer_sum_s == pytest.approx(sum(r.layers.values()))
    assert r.whole_forward_s == r.passes["forward"].median_s and r.hooked_forward_s > 0
    assert r.layer_coverage > 0


def test_progress_reaches_one():
    seen = []
    time_module(tiny(), SHAPE, per_layer=True, progress=lambda f, msg: seen.append((f, msg)), **FAST)
    fractions = [f for f, _ in seen]
    assert fractions == sorted(fractions) and all(0 < f <= 1 for f in fractions)
    assert fractions[-1] == 1.0 and fractions[-2] < 1.0
    assert all(isinstance(msg, str) and msg for _, msg in seen)


# == cancel, lock, time bound =====================================================================================

def test_cancel_from_the_progress_callback_raises_and_frees_the_lock():
    m = tiny()
    before = {k: v.clone() for k, v in m.state_dict().items()}
    stop = threading.Event()
    calls = []

    def progress(f, msg):
        calls.append(f)
        if len(calls) == 4:      # after the forward pass (1 warm-up + 3 runs)
            stop.set()

    with pytest.raises(CalcError, match="timing cancelled after 4 of"):
        time_module(m, SHAPE, progress=progress, cancel=stop, **FAST)
    assert len(calls) == 4 and not busy()
    assert all(torch.equal(before[k], v) for k, v in m.state_dict().items())
    with pytest.raises(CalcError, match="cancelled after 0 of"):
        time_module(m, SHAPE, cancel=lambda: True, **FAST)     # a callable works too


def test_a_second_concurrent_run_is_refused():
    started, release = threading.Event(), threading.Event()
    errors = []

    def hold(f, msg):
        started.set()
        release.wait(30)

    def first():
        try:
            time_module(tiny(), SHAPE, passes="forward", progress=hold, **FAST)
        except Exception as e:     # noqa: BLE001  # pragma: no cover - any error in the thread is reported below
            errors.append(e)

    t = threading.Thread(target=first)
    t.start()
    try:
        assert started.wait(30)
        assert busy()
        with pytest.raises(CalcError, match="a timing run is already in progress"):
            time_module(tiny(), SHAPE, **FAST)
        with pytest.raises(CalcError, match="already in progress"):
            calibrate(seconds=1)
    finally:
        release.set()
        t.join(60)
    assert not errors and not busy()


def test_max_seconds_stops_repeating_but_keeps_a_sample():
    r = time_module(tiny(), SHAPE, warmup=3, repeats=1000, max_seconds=1e-3, threads=1)
    assert r.truncated and any("max_seconds" in n for n in r.notes)
    assert all(1 <= len(t.samples) < 1000 for t in r.passes.values())


def test_bad_settings_name_the_field():
    with pytest.raises(CalcError, match="passes"):
        time_module(tiny(), SHAPE, passes="sideways")
    with pytest.raises(CalcError, match="device"):
        time_module(tiny(), SHAPE, device="tpu")
    if not torch.cuda.is_available():
        with pytest.raises(CalcError, match="CUDA is not available"):
            time_module(tiny(), SHAPE, device="cuda")
    with pytest.raises(CalcError, match="optimizer"):
        time_module(tiny(), SHAPE, optimizer="lbfgs")
    with pytest.raises(CalcError, match="dtype"):
        time_module(tiny(), SHAPE, dtype="fp8")
    with pytest.raises(CalcError, match="repeats"):
        time_module(tiny(), SHAPE, repeats=0)
    with pytest.raises(CalcError, match="batch"):
        time_module(tiny(), SHAPE, batch_size=0)
    with pytest.raises(CalcError, match="module failed on a 1×4×16×16 fp32 input"):
        time_module(tiny(), (4, 16, 16), **FAST)                 # the conv wants 3 channels
    with pytest.raises(CalcError, match="no backward pass"):
        time_module(nn.ReLU(), SHAPE, passes="backward", **FAST)


def _fake_torch(matmul: bool, cudnn: bool):
    """An object with torch.backends' two TF32 switches, set as given (PyTorch's defaults: False, True)."""
    ns = argparse.Namespace
    return ns(backends=ns(cuda=ns(matmul=ns(allow_tf32=matmul)), cudnn=ns(allow_tf32=cudnn)))


def test_cuda_math_switches_tf32_as_the_dtype_means_and_restores_it():
    """PyTorch leaves cuDNN's TF32 on by default, so an "fp32" run on an Ampere-or-later GPU would time its
    convolutions on tensor cores: inside ``cuda_math`` both switches are off for fp32 and on for tf32, and the
    user's settings come back afterwards, also after an error."""
    from core.bridge.timing import cuda_math

    cuda = torch.device("cuda")            # a device object only: nothing runs on it
    for dtype, want in (("fp32", False), ("tf32", True), ("bf16", False), ("fp16", False)):
        fake = _fake_torch(False, True)
        with cuda_math(fake, cuda, dtype):
            assert (fake.backends.cuda.matmul.allow_tf32, fake.backends.cudnn.allow_tf32) == (want, want)
        assert (fake.backends.cuda.matmul.allow_tf32, fake.backends.cudnn.allow_tf32) == (False, True)
    fake = _fake_torch(True, False)
    with pytest.raises(RuntimeError, match="inside"):
        with cuda_math(fake, cuda, "fp32"):
            raise RuntimeError("inside")
    assert (fake.backends.cuda.matmul.allow_tf32, fake.backends.cudnn.allow_tf32) == (True, False)


def test_tf32_is_refused_off_cuda_naming_the_device_and_fp32_untouched():
    from core.bridge.timing import cuda_math

    fake = _fake_torch(False, True)
    with cuda_math(fake, torch.device("cpu"), "fp32"):      # a CPU run leaves the switches alone
        assert (fake.backends.cuda.matmul.allow_tf32, fake.backends.cudnn.allow_tf32) == (False, True)
    with pytest.raises(CalcError, match="tf32 is a math mode of NVIDIA tensor cores.*cpu has none"):
        time_module(tiny(), SHAPE, dtype="tf32", **FAST)
    assert not busy()


def test_a_module_torch_refuses_to_train_at_this_batch_is_one_line_not_a_traceback():
    """BatchNorm raises ValueError (not RuntimeError) training on one value per channel (Inception v3's aux head at
    batch 1): a CalcError naming the input, forward alone still runs."""
    bn = nn.Sequential(nn.Flatten(), nn.BatchNorm1d(8))
    with pytest.raises(CalcError, match="module failed on a 1×8 fp32 input.*Expected more than 1 value per channel"):
        time_module(bn, (8,), passes="train_step", **FAST)
    assert time_module(bn, (8,), passes="forward", **FAST).passes["forward"].median_s > 0


def test_a_module_whose_loading_needs_its_version_metadata_is_restored_after_training():
    """torchvision's MNASNet reads its version from the state dict's metadata when loading: the weights a training
    step changed are restored with the metadata kept (it failed: 'version should be set to 1 or 2')."""

    class Versioned(nn.Linear):
        _version = 2

        def _load_from_state_dict(self, state_dict, prefix, local_metadata, *args):
            if local_metadata.get("version") != 2:
                raise ValueError(f"version should be 2 instead of {local_metadata.get('version')}")
            super()._load_from_state_dict(state_dict, prefix, local_metadata, *args)

    m = Versioned(8, 4)
    before = m.weight.detach().clone()
    time_module(m, (8,), batch_size=2, passes="train_step", **FAST)
    assert torch.equal(m.weight, before)         # the SGD steps were undone


def test_cancelling_still_raises_cancelled_not_a_wrapped_failure():
    """Cancelled is a CalcError, hence a ValueError: the module-failure wrapper must let it through as it is."""
    from core.errors import Cancelled

    with pytest.raises(Cancelled):
        time_module(tiny(), SHAPE, cancel=lambda: True, **FAST)


# == the memory guard and the model's numbers =====================================================================

def test_check_fits_refuses_with_both_numbers():
    report = core.analyze("mnist_cnn", batch_size=8)
    needed = report.totals["training_bytes"]
    with pytest.raises(CalcError) as e:
        check_fits(report, available_bytes=1000)
    assert f"needs {fmt_bytes(needed)}, {fmt_bytes(1000)} available" in str(e.value)
    ok = check_fits(report, available_bytes=100 * needed, training=False)
    assert ok["needed_bytes"] == report.totals["inference_bytes"] and ok["available_bytes"] == 100 * needed
    assert available_memory("cpu") > 0
    if not torch.cuda.is_available():
        assert available_memory("cuda") is None


def test_time_module_refuses_before_running():
    seen = []
    with pytest.raises(CalcError, match="available"):
        time_module(mnist_like(), (1, 28, 28), 4, report=core.analyze("mnist_cnn"), available_bytes=10_000,
                    progress=lambda f, m: seen.append(f))
    assert seen == [] and not busy()


def test_report_gives_achieved_flops_predicted_memory_and_implied_ppp():
    report = core.analyze("mnist_cnn", batch_size=1)        # rebased to the timing batch
    r = time_module(mnist_like(), (1, 28, 28), 2, report=report, **FAST)
    at2 = core.analyze("mnist_cnn", batch_size=2).totals
    assert r.flops == {"forward": at2["flops"], "backward": at2["backward_flops"],
                       "train_step": at2["training_flops"]}
    assert r.achieved_flops_per_s["forward"] == pytest.approx(at2["flops"] / r.passes["forward"].median_s)
    assert r.predicted_memory_bytes["forward"] == at2["inference_bytes"]
    assert r.predicted_memory_bytes["train_step"] == at2["training_bytes"]
    assert r.memory_check["needed_bytes"] == at2["training_bytes"]
    assert all(r.peak_memory_bytes[p] > 0 for p in PASSES)
    est = estimate("mnist_cnn", "v100-sxm2", batch_size=2, ppp=0.5)
    measured = r.passes["forward"].median_s
    assert implied_ppp(measured, est) == pytest.approx(0.5 * est.totals["forward_compute_s"] / measured)
    with pytest.raises(CalcError, match="measured_s"):
        implied_ppp(0, est)


def test_throughput_vs_batch_and_refusal_row():
    rows = throughput_vs_batch(tiny(), SHAPE, [1, 2], passes=("forward", "train_step"), **FAST)
    assert [r["batch_size"] for r in rows] == [1, 2]
    assert all(r["forward_s"] > 0 and r["train_step_samples_per_s"] > 0 for r in rows)
    report = core.analyze("mnist_cnn")
    rows = throughput_vs_batch(mnist_like(), (1, 28, 28), [1, 10_000, 20_000], report=report,
                               available_bytes=500 * 2 ** 20, passes="forward", **FAST)
    assert rows[0]["batch_size"] == 1 and rows[0]["forward_flops_per_s"] > 0
    assert rows[1]["batch_size"] == 10_000 and "needs" in rows[1]["refused"] and len(rows) == 2


# == calibration ==================================================================================================

@pytest.fixture(scope="module")
def spec():
    seen = []
    t0 = time.perf_counter()
    # force: these tests check what a calibration stores, not the machine; a busy CI neighbour must not refuse it
    s = calibrate(seconds=3, progress=lambda f, m: seen.append(f), threads=1, force=True)
    s["_took"] = time.perf_counter() - t0
    s["_progress"] = seen
    return s


def _clean(s: dict) -> dict:
    return {k: v for k, v in s.items() if not k.startswith("_")}


def test_calibrate_returns_a_valid_local_device(spec):
    db = load_devices(user_path=None).add(_clean(spec))      # validates against the schema
    dev = db.device("local")
    assert dev.kind == "CPU" and dev.name.startswith("This machine")
    assert dev.peak_flops["fp32"] > 0 and dev.memory_bandwidth > 0 and dev.memory_capacity > 0
    assert set(dev.efficiency) == set(OP_CLASSES)
    assert all(0 < v <= 1 for v in dev.efficiency.values())
    assert "measured by core.bridge.calibrate" in dev.source and "budget 3 s" in dev.note
    assert spec["_progress"][-1] == 1.0 and spec["_progress"] == sorted(spec["_progress"])
    assert spec["_took"] < 3 + 20       # the budget holds (generous: a shared machine)


def test_save_local_and_estimate_on_it(spec, tmp_path):
    path = tmp_path / "home" / "devices.json"
    path.parent.mkdir()
    other = {"id": "my-box", "name": "My box", "vendor": "x", "kind": "CPU", "year": 2020,
             "peak_flops": {"fp32": 1e11}, "memory_bandwidth": 2e10, "source": "me", "note": ""}
    save_local(other, path)
    assert save_local(_clean(spec), path) == path
    save_local(_clean(spec), path)                            # replacing, not duplicating
    doc = json.loads(path.read_text())
    assert [d["id"] for d in doc["devices"]] == ["my-box", "local"]
    db = load_devices(user_path=path)
    est = estimate("mnist_cnn", db.device("local"), batch_size=4)
    assert est.totals["forward_s"] > 0 and est.device.efficiency
    with pytest.raises(core.DeviceError):
        save_local({**_clean(spec), "memory_bandwidth": -1}, path)


def test_calibrate_records_its_thread_count_and_held_out_self_check(spec):
    """The quality record (issue 14): the thread count asked for, the held-out networks' errors and their median,
    the largest spread kept; structure only, no figure is asserted."""
    from core.bridge.calibrate_suites import HELD_OUT
    from core.bridge.noise_gate import OVERHEAD_SPREAD_LIMIT, SPREAD_LIMIT

    rec = spec["calibration"]
    assert rec["threads"] == 1 and rec["spread"] >= 0
    # kept under force: a result whose spread is past the limit must be marked noisy (unmarked ⇒ steady)
    # (the worst quantity kept is recorded; a per-call overhead's is steady up to OVERHEAD_SPREAD_LIMIT)
    limit = OVERHEAD_SPREAD_LIMIT if "overhead timings" in rec["spread_of"] else SPREAD_LIMIT
    assert isinstance(rec["noisy"], bool) and (rec["noisy"] or rec["spread"] <= limit)
    assert set(rec["held_out"]) == {name for name, _ in HELD_OUT}
    errors = sorted(abs(v) for v in rec["held_out"].values())
    assert rec["held_out_error"] == errors[1]                # the median of three
    assert "predicts held-out networks within" in spec["note"]


def test_calibrate_rejects_bad_settings():
    with pytest.raises(CalcError, match="seconds"):
        calibrate(seconds=0)
    with pytest.raises(CalcError, match="dtypes"):
        calibrate(seconds=1, dtypes=("fp7",))
    with pytest.raises(CalcError, match="force"):
        calibrate(seconds=1, force="yes")


# == the CLI ======================================================================================================

def _cli(argv: list[str]) -> int | None:
    p = argparse.ArgumentParser()
    sub = p.add_subparsers(dest="cmd", required=True)
    sub.add_parser("analyze")
    cli_ext.add_subcommands(sub)
    return cli_ext.dispatch(p.parse_args(argv))


def test_cli_dispatch_ignores_other_commands():
    assert _cli(["analyze"]) is None


def test_cli_calibrate_saves_local_for_estimate(tmp_path, capsys):
    out = tmp_path / "devices.json"
    # --force: what is saved and read back, whatever the machine's load (a busy CI machine's spread refused it;
    # the refusal itself is tested with injected timings in test_calibrate_noise.py)
    assert _cli(["calibrate", "--seconds", "1.5", "--threads", "1", "--dtypes", "fp32", "--output", str(out),
                 "--json", "--force"]) == 0
    printed = json.loads(capsys.readouterr().out)
    assert printed["id"] == "local" and list(printed["peak_flops"]) == ["fp32"]
    assert json.loads(out.read_text())["devices"][0]["id"] == "local"
    # `python -m core estimate --device local` reads $CNN_CALC_HOME/devices.json by default
    env = {**os.environ, "CNN_CALC_HOME": str(tmp_path)}
    done = subprocess.run([sys.executable, "-m", "core", "estimate", "mnist_cnn", "--device", "local"], cwd=ROOT,
                          env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert "This machine" in done.stdout


@pytest.fixture
def to_module_available(monkeypatch):
    """The real core.bridge.to_torch when it imports, else a hand-written mnist_cnn."""
    try:
        import core.bridge.to_torch  # noqa: F401
    except ImportError:
        monkeypatch.setattr(cli_ext, "_to_module", lambda network, device: mnist_like())


def test_cli_time(to_module_available, capsys):
    assert _cli(["time", "mnist_cnn", "--batch", "2", "--repeats", "2", "--warmup", "1", "--per-layer",
                 "--threads", "1", "--json"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert d["model"] == "mnist_cnn" and list(d["passes"]) == list(PASSES)
    assert all(len(p["samples"]) == 2 for p in d["passes"].values())
    assert d["layers"] and d["achieved_flops_per_s"]["forward"] > 0
    assert _cli(["time", "mnist_cnn", "--passes", "forward", "--repeats", "1", "--warmup", "0",
                 "--threads", "1"]) == 0
    text = capsys.readouterr().out
    assert "forward" in text and "FLOP/s" in text and "memory model" in text
    assert _cli(["time", "mnist_cnn", "--passes", "forward", "--batches", "1,2", "--repeats", "1",
                 "--threads", "1"]) == 0
    assert "batch      2" in capsys.readouterr().out
    assert _cli(["time", "mnist_cnn", "--passes", "nope"]) == 2
    assert "error:" in capsys.readouterr().err


def test_importing_the_bridge_does_not_import_torch():
    code = ("import sys, core, core.bridge.timing, core.bridge.calibrate, core.bridge.cli_ext; "
            "print('torch' in sys.modules)")
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert done.stdout.strip() == "False", done.stderr


def test_calibrated_device_summary_shows_the_per_layer_overhead():
    from core.bridge.cli_ext import format_device
    spec = {"id": "local", "name": "x", "kind": "CPU", "vendor": "v", "peak_flops": {"fp32": 9e10},
            "memory_bandwidth": 2e10, "source": "s", "note": "n", "efficiency": {"conv": 0.7},
            "layer_overhead": {"conv": 1.8e-5, "pool": 6e-6}}
    text = format_device(spec)
    assert "per layer:   conv 18.0 µs, pool 6.0 µs" in text          # 1.8e-5 s = 18.0 µs, 6e-6 s = 6.0 µs
    assert "per layer" not in format_device({**spec, "layer_overhead": {}})


# == threads: `time` runs at the count 'local' was calibrated at (issue 14 item 2) ================================

@pytest.fixture
def local_at_one_thread():
    """A calibrated CPU 'local' recorded at 1 torch thread in the user's device file; put back after."""
    from core.devices import USER_PATH, save_user_devices

    before = USER_PATH.read_bytes() if USER_PATH.exists() else None
    spec = load_devices().devices["core-i7-920"].to_dict()
    spec.update(id="local", name="This machine (test)", efficiency={"conv": 0.5},
                calibration={"threads": 1, "held_out_error": 0.2, "held_out": {"mnist_cnn": 0.2}, "spread": 0.1,
                             "spread_of": "x", "noisy": False, "date": "2026-05-01T10:00:00"})
    save_user_devices(load_devices().add(spec), USER_PATH)
    yield
    if before is None:
        USER_PATH.unlink(missing_ok=True)
    else:
        USER_PATH.write_bytes(before)


def test_cli_time_defaults_to_the_calibrated_thread_count(to_module_available, local_at_one_thread, capsys):
    quick = ["time", "mnist_cnn", "--passes", "forward", "--repeats", "1", "--warmup", "0"]
    assert _cli([*quick, "--json"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert d["threads"] == 1 and d["threads_from"] == "the count 'local' was calibrated at"
    assert d["local"]["threads"] == 1 and d["local"]["mismatch"] is None
    assert d["local"]["calibration"].startswith("calibrated at 1 torch thread(s) on 2026-05-01; calibration "
                                                "self-check: ±20 %")          # 0.2 → 20 %
    assert _cli(quick) == 0
    text = capsys.readouterr().out
    assert "on cpu, 1 thread(s) (the count 'local' was calibrated at)" in text and "NOT COMPARABLE" not in text
    # another count, asked for: recorded as asked, and the comparison with 'local' says it does not hold
    assert _cli([*quick, "--threads", "2", "--json"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert d["threads"] == 2 and d["threads_from"] == "as asked"
    assert d["local"]["mismatch"].startswith("This machine (test) was calibrated at 1 torch thread(s) but this run "
                                             "used 2")
    assert _cli([*quick, "--threads", "2"]) == 0
    assert "  NOT COMPARABLE: This machine (test) was calibrated at 1 torch thread(s)" in capsys.readouterr().out
    assert _cli([*quick, "--batches", "1", "--json"]) == 0
    assert [row["threads"] for row in json.loads(capsys.readouterr().out)] == [1]


def test_throughput_rows_record_the_thread_count():
    rows = throughput_vs_batch(tiny(), SHAPE, [1], measure_memory=False, **FAST)
    assert rows[0]["threads"] == 1
