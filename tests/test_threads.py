"""Threads as a user has them (issue 14 item 2), without torch: an estimate on a calibrated CPU says the thread
count it is for and refuses another; ``time`` and the Benchmark page default to that count (``default_threads``);
a run at another count is said not to be comparable (``thread_mismatch``); the CLI prints the calibration's quality.
"""

import json
import subprocess
import sys
from pathlib import Path

import pytest

import core
from core.bridge.timing import default_threads, thread_mismatch
from core.cli import main
from core.cli_text import calibration_line, format_estimate
from core.cpu_threads import calibrated_threads
from core.devices import load_devices, save_user_devices

ROOT = Path(__file__).resolve().parent.parent
QUALITY = {"threads": 2, "held_out_error": 0.36, "held_out": {"mnist_cnn": 0.12, "squeezenet1_0": -0.36,
                                                              "resnet18": 0.4},
           "spread": 0.1, "spread_of": "conv layer timings", "noisy": False, "date": "2026-05-01T10:00:00"}


def _local(db=None, **calibration):
    """A database with a calibrated CPU 'local' (the Core i7-920's figures, calibration ``QUALITY`` + overrides)."""
    db = db or load_devices()
    spec = db.devices["core-i7-920"].to_dict()
    spec.update(id="local", name="This machine (test)", efficiency={"conv": 0.5},
                calibration={**QUALITY, **calibration})
    return db.add(spec)


@pytest.fixture
def db():
    return _local()


def test_an_estimate_on_a_calibrated_cpu_is_for_its_thread_count(db):
    est = core.estimate("mnist_cnn", "local", db=db)
    assert est.threads == 2 and calibrated_threads(db.devices["local"]) == 2
    out = est.to_dict()
    assert out["threads"] == 2 and out["calibration"]["held_out_error"] == 0.36
    # asking for the calibrated count is the same estimate
    assert core.estimate("mnist_cnn", "local", threads=2, db=db).totals == est.totals


def test_datasheet_devices_and_gpus_have_no_thread_count(db):
    for dev in ("core-i7-920", "v100-sxm2"):
        out = core.estimate("mnist_cnn", dev, db=db, variant="paleo").to_dict()
        assert out["threads"] is None and out["calibration"] is None
    # a GPU calibration's thread count is the host's, not the device's: no thread count for its estimates
    gpu = db.devices["v100-sxm2"].to_dict()
    gpu.update(id="local-gpu", calibration=QUALITY)
    assert calibrated_threads(db.add(gpu).devices["local-gpu"]) is None


def test_the_json_keeps_every_key_it_had(db):
    """The contract of ``estimate --json`` may gain keys, never lose one: the keys before issue 14 item 2."""
    before = {"model", "input_shape", "batch_size", "dtype", "device", "device_name", "ppp", "ppp_memory", "variant",
              "conv_algorithm", "fused", "launch", "workers", "link", "totals", "roofline", "layers",
              "variant_reason", "typical_error", "bound", "limited_by"}
    keys = set(core.estimate("mnist_cnn", "local", db=db).to_dict())
    assert before <= keys and {"threads", "calibration"} <= keys


@pytest.mark.parametrize("device, threads, says", [
    ("local", 4, "was calibrated at 2 torch thread(s) and predicts that count only; for 4, calibrate again: "
                 "python -m core calibrate --threads 4"),
    ("local", 1, "was calibrated at 2 torch thread(s)"),
    ("core-i7-920", 2, "has no calibrated thread count"),
    ("v100-sxm2", 2, "has no calibrated thread count"),
    ("local", 0, "must be an integer from 1 to 4,096"),
    ("local", 4097, "must be an integer from 1 to 4,096"),
    ("local", True, "must be an integer"),
    ("local", "2", "must be an integer"),
    ("local", 2.0, "must be an integer"),
])
def test_another_thread_count_is_refused_naming_field_and_value(db, device, threads, says):
    with pytest.raises(core.CalcError) as e:
        core.estimate("mnist_cnn", device, threads=threads, db=db, variant="paleo")
    assert e.value.field == "threads" and e.value.value == threads
    assert says in str(e.value) and "\n" not in str(e.value)


def test_sweep_takes_threads_as_a_setting(db):
    runs = core.sweep("mnist_cnn", [db.devices["local"]], [1, 2], threads=2)
    assert [e.threads for e in runs] == [2, 2]
    with pytest.raises(core.CalcError, match="threads"):
        core.sweep("mnist_cnn", [db.devices["local"]], [1], threads=3)


def test_format_estimate_says_the_thread_count_and_the_held_out_error(db):
    text = format_estimate(core.estimate("mnist_cnn", "local", db=db))
    # 0.36 → "36 %"; three held-out networks
    # 36 % > 20 % at 2 threads without a parallel grain: the line says the calibration is out of date
    assert ("Calibration:    calibrated at 2 torch thread(s) on 2026-05-01; calibration self-check: ±36 % "
            "(median of 3 held-out networks), above 15 %: treat its times as rough; this calibration at 2 threads "
            "predates the parallel grain, so small layers are predicted too fast: calibrate again (python -m core "
            "calibrate)") in text.splitlines()
    assert "Calibration:" not in format_estimate(core.estimate("mnist_cnn", "core-i7-920", db=db))


def test_the_calibration_line_says_noisy_and_rounds():
    noisy = _local(held_out_error=0.125, noisy=True, unsteady="conv layer timings 40%", held_out={"mnist_cnn": 0.125})
    # 0.125 → 12 % (Python rounds half to even: 12.5 → 12)
    assert calibration_line(noisy.devices["local"]) == (
        "calibrated at 2 torch thread(s) on 2026-05-01; calibration self-check: ±12 % (median of 1 held-out network); "
        "NOISY, kept with --force (conv layer timings 40%)")
    assert calibration_line(noisy.devices["core-i7-920"]) is None


def test_default_threads_follow_the_calibrated_local_device(db):
    assert default_threads(db) == (2, "the count 'local' was calibrated at")
    assert default_threads(db, device="cuda") == (None, "torch's default")      # threads are a CPU's
    bare = load_devices()
    assert default_threads(bare) == (None, "torch's default") and "local" not in bare.devices
    uncalibrated = _local(bare)
    spec = uncalibrated.devices["local"].to_dict()
    spec.pop("calibration")
    assert default_threads(bare.add(spec)) == (None, "torch's default")      # a 'local' from before issue 14


def test_thread_mismatch_names_both_counts(db):
    local = db.devices["local"]
    assert thread_mismatch(2, local) is None and thread_mismatch(None, local) is None
    assert thread_mismatch(1, db.devices["core-i7-920"]) is None               # datasheet: nothing to compare
    assert thread_mismatch(1, local) == (
        "This machine (test) was calibrated at 2 torch thread(s) but this run used 1: its predictions are for "
        "2 thread(s); time at 2, or calibrate again at 1")


def test_cli_estimate_threads(db, tmp_path, capsys):
    home = tmp_path / "home"
    home.mkdir()
    save_user_devices(db, home / "devices.json")
    env = {"CNN_CALC_HOME": str(home), "PATH": "/usr/bin:/bin"}

    def run(*args):
        return subprocess.run([sys.executable, "-m", "core", "estimate", "mnist_cnn", "--device", "local", *args],
                              cwd=ROOT, capture_output=True, text=True, timeout=120, env=env)

    p = run("--threads", "4")
    assert p.returncode == 2 and p.stdout == ""
    assert p.stderr.startswith("error: field 'threads' = 4: This machine (test) ('local') was calibrated at 2 ")
    assert len(p.stderr.strip().splitlines()) == 1
    p = run("--threads", "2", "--json")
    assert p.returncode == 0 and json.loads(p.stdout)["threads"] == 2
    # a datasheet device, in-process: refused in one line too
    assert main(["estimate", "mnist_cnn", "--device", "core-i7-920", "--threads", "2"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: field 'threads' = 2: ") and len(err.strip().splitlines()) == 1


def test_the_threads_hint_is_for_a_multi_thread_calibration_without_a_grain_that_missed_its_held_out_networks():
    from core.cpu_threads import THREADS_HINT_ABOVE, threads_hint

    assert THREADS_HINT_ABOVE == 0.2
    assert threads_hint({"threads": 2, "held_out_error": 0.36}).startswith("this calibration at 2 threads predates")
    assert threads_hint({"threads": 2, "held_out_error": 0.36}, grain=444e-6) is None     # it has the grain
    assert threads_hint({"threads": 2, "held_out_error": 0.36}, grain=0.0) is None        # fitted at 0: it has one
    assert threads_hint({"threads": 2, "held_out_error": 0.15}) is None      # within 20 %: nothing to say
    assert threads_hint({"threads": 1, "held_out_error": 0.36}) is None      # one thread: nothing to split
    assert threads_hint({"threads": 8}) is None and threads_hint(None) is None and threads_hint({}) is None


def test_calibrate_prints_the_threads_hint_after_its_self_check():
    from core.bridge.cli_ext import format_calibration

    lines = format_calibration({"threads": 2, "held_out_error": 0.37, "held_out": {"resnet18": -0.46}}).splitlines()
    assert lines[1] == "predicts held-out networks within 37% (median): resnet18 -46%"
    assert lines[2].startswith("this calibration at 2 threads predates the parallel grain")
    assert len(format_calibration({"threads": 1, "held_out_error": 0.37}).splitlines()) == 2    # no hint at 1
    assert len(format_calibration({"threads": 2, "held_out_error": 0.37}, grain=4e-4).splitlines()) == 2
