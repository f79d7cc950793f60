"""The Benchmark page: loads without torch, times, calibrates, compares networks, refuses what it must with a message.

Runs are tiny (mnist_cnn, batch 1, 2 repeats, one thread; a 3 s calibration): the whole file takes well under a
minute on a shared 2-core machine.
"""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

import core
from apptest_ref import metric, open_page, table
from core.devices import load_devices
from ui import benchmark as bm
from ui.state import DEVICE, MODEL

ROOT = Path(__file__).resolve().parent.parent
PAGE = str(ROOT / "views" / "benchmark.py")


def _page() -> AppTest:
    return open_page(PAGE)


# == the page =====================================================================================================

def test_page_renders_without_importing_torch():
    code = ("import sys; from streamlit.testing.v1 import AppTest; "
            f"at = AppTest.from_file({PAGE!r}, default_timeout=120).run(); assert not at.exception, at.exception; "
            "assert at.button(key='bench_time'); print('torch' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert out.returncode == 0, out.stderr[-1000:]
    assert out.stdout.strip().splitlines()[-1] == "False", out.stderr[-500:]


def test_timing_mnist_shows_passes_layers_ratio_and_memory():
    at = _page()
    at.number_input(key="bench_repeats").set_value(2).run()
    at.button(key="bench_time").click().run()
    assert not at.exception and not at.error
    passes = table(at, "median ms")
    assert list(passes["pass"]) == ["forward", "backward", "train step"]
    assert (passes["median ms"] > 0).all() and (passes["runs"] >= 1).all()
    assert (passes["min ms"] <= passes["median ms"]).all() and (passes["median ms"] <= passes["max ms"]).all()
    layers = table(at, "measured ÷ PALEO")
    row = layers.set_index("layer")
    assert {"conv1", "conv2"} <= set(row.index)
    assert row.loc["conv2", "measured ms"] > 0 and row.loc["conv2", "PALEO ms"] > 0
    assert row.loc["conv2", "measured ÷ PALEO"] == pytest.approx(row.loc["conv2", "measured ms"]
                                                                  / row.loc["conv2", "PALEO ms"])
    # mnist_cnn: backward FLOPs 47,716,274 ÷ forward 24,071,218 (the engine's counts)
    assert metric(at, "Backward : forward (FLOPs)") == f"{47_716_274 / 24_071_218:.2f}"
    assert float(metric(at, "Backward : forward (measured)")) > 0
    assert float(metric(at, "Forward GFLOP/s")) > 0 and float(metric(at, "Implied PPP")) > 0
    memory = table(at, "measured MiB")
    assert (memory["measured MiB"] > 0).all() and (memory["model MiB"] > 0).all()
    # results live in session state: another control's rerun keeps them without timing again
    at.slider(key="bench_cal_seconds").set_value(5).run()
    assert table(at, "median ms")["median ms"].tolist() == passes["median ms"].tolist()


@pytest.fixture()
def user_devices():
    """The calibration writes the user device file under CNN_CALC_HOME (set by conftest); put it back after."""
    from core.devices import USER_PATH
    from ui.state import devices

    before = USER_PATH.read_bytes() if USER_PATH.exists() else None
    yield USER_PATH
    if before is None:
        USER_PATH.unlink(missing_ok=True)
    else:
        USER_PATH.write_bytes(before)
    devices.clear()


def test_calibration_saves_local_and_shows_its_peak(user_devices):
    at = _page()
    at.selectbox(key="bench_threads").set_value(1).run()      # steadier than torch's default on a shared machine
    at.checkbox(key="bench_cal_force").check().run()          # what is saved and shown, whatever the machine's load
    at.slider(key="bench_cal_seconds").set_value(3).run()
    at.button(key="bench_calibrate").click().run()
    assert not at.exception and not at.error
    saved = json.loads(user_devices.read_text())
    entries = saved["devices"] if isinstance(saved, dict) else saved
    local = next(d for d in entries if d["id"] == "local")
    assert local["peak_flops"]["fp32"] > 0 and local["memory_bandwidth"] > 0
    assert metric(at, "fp32 peak") == f"{local['peak_flops']['fp32'] / 1e9:,.2f} GFLOP/s"
    assert local["name"] in at.selectbox(key=DEVICE).options   # the sidebar re-read the device file
    # the quality it recorded: the thread count asked for, the held-out error as a whole percentage
    assert local["calibration"]["threads"] == 1 and metric(at, "torch threads") == "1"
    assert metric(at, "Calibration self-check") == f"±{local['calibration']['held_out_error'] * 100:.0f} %"


def test_a_run_the_memory_guard_refuses_is_an_error_not_a_traceback(monkeypatch):
    import core.bridge.memory as memory
    import core.bridge.timing as timing

    monkeypatch.setattr(memory, "available_memory", lambda device="cpu": 1_000_000)     # 1 MB "free"
    at = _page()
    at.button(key="bench_time").click().run()
    assert not at.exception
    assert "memory model" in at.error[0].value and "reduce the batch size" in at.error[0].value
    at.button(key="bench_tp_run").click().run()                  # throughput_vs_batch stops at the refused batch
    assert not at.exception
    assert any("memory model" in e.value for e in at.error)
    assert not timing.busy()


def test_a_too_large_network_is_refused_before_torch_builds_it():
    at = _page()
    at.selectbox(key=MODEL).set_value("vgg16").run()
    at.number_input(key="bench_batch").set_value(4).run()
    at.button(key="bench_time").click().run()
    assert not at.exception
    assert "vgg16" in at.error[0].value and "GFLOPs" in at.error[0].value
    assert not any(d for d in at.dataframe if "median ms" in d.value.columns)


def test_across_networks_and_throughput():
    at = _page()
    at.multiselect(key="bench_across").set_value(["mnist_cnn", "squeezenet1_0", "mobilenet_v3_small", "vit_b_16"]
                                                 ).run()
    at.number_input(key="bench_repeats").set_value(1).run()
    at.button(key="bench_across_run").click().run()
    assert not at.exception
    # ViT's IR fixes its 14×14 patch grid: at 3×64×64 the engine refuses it, and the others are still timed
    assert [e.value for e in at.error] and all(e.value.startswith("vit_b_16: at input 3×64×64:") for e in at.error)
    df = table(at, "latency ms")
    assert set(df["network"]) == {"mnist_cnn", "squeezenet1_0", "mobilenet_v3_small"}
    assert (df["latency ms"] > 0).all()
    assert df.set_index("network").loc["squeezenet1_0", "input"] == "3×64×64"
    assert df.set_index("network").loc["mnist_cnn", "input"] == "1×28×28"
    rho = bm.spearman(df["GFLOPs"], df["latency ms"])
    assert metric(at, "Spearman ρ (latency, FLOPs)") == f"{rho:.3f}"
    at.multiselect(key="bench_tp_batches").set_value([1, 2]).run()
    at.button(key="bench_tp_run").click().run()
    assert not at.exception and all(e.value.startswith("vit_b_16") for e in at.error)     # the kept across result
    tp = table(at, "samples/s")
    assert tp["batch"].tolist() == [1, 2] and (tp["samples/s"] > 0).all()


def test_an_interrupted_run_is_reported_and_stop_when_idle_says_so():
    at = AppTest.from_file(PAGE, default_timeout=120)
    # what a job that Streamlit stopped leaves behind
    at.session_state["bench_job"] = {"what": "timing", "stop": True, "done": True, "stopped": True}
    at.run()
    assert not at.exception
    assert any("timing run was stopped" in w.value for w in at.warning)
    at.button(key="bench_stop").click().run()
    assert not at.exception
    assert any("Nothing was running" in i.value for i in at.info)


# == cancellation: the flag and Streamlit's rerun both end a run and release the lock ===============================

@pytest.fixture(scope="module")
def mnist_module():
    from core.bridge.to_torch import to_module

    return to_module(core.load_network("mnist_cnn"), device="cpu")


def test_the_cancel_flag_stops_timing_and_releases_the_lock(mnist_module):
    from core.bridge.timing import busy, time_module

    job = {"what": "timing", "stop": True, "done": False, "stopped": False}      # Stop was clicked
    with pytest.raises(core.CalcError, match="cancelled"):
        time_module(mnist_module, (1, 28, 28), 1, passes="forward", repeats=1, threads=1,
                    cancel=lambda: job["stop"])
    assert not busy()


def test_a_stop_flag_set_by_a_newer_script_run_stops_a_run_in_another_thread(mnist_module):
    """Streamlit's fast reruns: the Stop click runs the page again in a new thread while the old run goes on; the
    flag the new run sets in the job dict (kept in the shared session state) is what the old run's cancel() sees."""
    import threading

    from core.bridge.timing import busy, time_module

    job, started, out = {"what": "timing", "stop": False, "done": False, "stopped": False}, threading.Event(), {}

    def old_run():
        try:
            time_module(mnist_module, (1, 28, 28), 1, passes="forward", warmup=0, repeats=10_000, max_seconds=60,
                        threads=1, progress=lambda f, m: started.set(), cancel=lambda: job["stop"])
        except core.CalcError as e:
            out["error"] = str(e)

    worker = threading.Thread(target=old_run)
    worker.start()
    assert started.wait(30)
    job["stop"] = True                              # the new script run's Stop callback
    worker.join(30)
    assert not worker.is_alive() and "cancelled" in out["error"]
    assert not busy()


def test_streamlits_rerun_exception_in_progress_releases_the_lock(mnist_module):
    from streamlit.runtime.scriptrunner_utils.exceptions import RerunException
    from streamlit.runtime.scriptrunner_utils.script_requests import RerunData

    from core.bridge.timing import busy, time_module

    def progress(fraction, message):          # what st.progress does when a click arrived during the run
        raise RerunException(RerunData())

    was_training = mnist_module.training
    with pytest.raises(RerunException):
        time_module(mnist_module, (1, 28, 28), 1, passes="forward", repeats=1, threads=1, progress=progress)
    assert not busy()
    assert mnist_module.training == was_training                    # restored, and usable for the next run
    time_module(mnist_module, (1, 28, 28), 1, passes="forward", repeats=1, threads=1)


# == ui.benchmark =================================================================================================

# scipy is not installed in this venv, so the expected values are worked by hand:
#   x = [1, 2, 3, 4], y = [10, 20, 40, 30]: ranks of y [1, 2, 4, 3], d = [0, 0, -1, 1], Σd² = 2,
#     ρ = 1 − 6·2 / (4·(16 − 1)) = 1 − 12/60 = 0.8
#   x = [1, 2, 2, 3], y = [1, 3, 2, 4]: ranks of x [1, 2.5, 2.5, 4] (the tie shares 2 and 3), of y [1, 3, 2, 4];
#     both mean 2.5; deviations [-1.5, 0, 0, 1.5] and [-1.5, 0.5, -0.5, 1.5]; Σ products 4.5, Σ squares 4.5 and 5,
#     ρ = 4.5 / √(4.5·5) = √0.9 ≈ 0.948683
@pytest.mark.parametrize("x, y, rho", [
    ([1, 2, 3, 4], [10, 20, 40, 30], 0.8),
    ([1, 2, 2, 3], [1, 3, 2, 4], math.sqrt(0.9)),
    ([1, 2, 3], [3, 2, 1], -1.0),
    ([0.1, 5, 7, 1000], [1, 2, 3, 4], 1.0),             # ranks only: any increasing function gives 1
])
def test_spearman_against_hand_worked_values(x, y, rho):
    assert bm.spearman(x, y) == pytest.approx(rho)
    assert bm.spearman(y, x) == pytest.approx(rho)


def test_ranks_average_ties_and_degenerate_cases():
    assert bm.rank_average([10, 20, 20, 30]) == [1, 2.5, 2.5, 4]
    assert bm.rank_average([5, 5, 5]) == [2, 2, 2]
    assert bm.rank_average([3, 1, 2]) == [3, 1, 2]
    assert bm.spearman([1], [2]) is None and bm.spearman([1, 1, 1], [1, 2, 3]) is None


def test_live_limits_and_small_inputs():
    rep = core.analyze("resnet18", batch_size=1)
    bm.check_live(rep, 100)                             # 3 × 3.6 GFLOPs for a training step
    with pytest.raises(core.CalcError, match="resnet18 needs .* GFLOPs"):
        bm.check_live(rep, 1.0, training=False)
    two = core.Network.make("two", {"a": (3, 8, 8), "b": (3, 8, 8)}, [core.Node.make("sum", "add", ["a", "b"])])
    with pytest.raises(core.CalcError, match="2 inputs"):
        bm.check_live(core.analyze(two), 100)
    assert bm.across_input(core.load_network("resnet18")) == "3×64×64"
    assert bm.across_input(core.load_network("mnist_cnn")) is None


def test_calibration_table_lists_the_fresh_page_rate_in_gb_per_s():
    """A calibrated Linux CPU's page-fault rate, 1.9e9 B/s, reads 1.9 GB/s; a spec without one has no such row."""
    spec = {"peak_flops": {"fp32": 9.3e10}, "memory_bandwidth": 2.0e10, "alloc_bandwidth": 1.9e9}
    rows = bm.calibration_rows(spec).set_index("figure")
    assert rows.loc["writing to fresh pages (page faults)", "value"] == pytest.approx(1.9)
    assert rows.loc["writing to fresh pages (page faults)", "unit"] == "GB/s"
    del spec["alloc_bandwidth"]
    assert "writing to fresh pages (page faults)" not in set(bm.calibration_rows(spec)["figure"])


# == threads: the page's default is the CLI's, shown, recorded, and a clash with 'local' said ======================

QUALITY = {"threads": 2, "held_out_error": 0.36, "held_out": {"mnist_cnn": 0.12, "squeezenet1_0": -0.36,
                                                              "resnet18": 0.4},
           "spread": 0.1, "spread_of": "conv layer timings", "noisy": False, "date": "2026-05-01T10:00:00"}


def _local_spec(**calibration) -> dict:
    """A calibrated CPU 'local' (the Core i7-920's datasheet figures, a calibration record ``QUALITY`` + overrides)."""
    spec = load_devices().devices["core-i7-920"].to_dict()
    spec.update(id="local", name="This machine (test)", efficiency={"conv": 0.5},
                calibration={**QUALITY, **calibration})
    return spec


@pytest.fixture()
def calibrated_local(user_devices):
    """A calibrated 'local' (2 threads, 36 % held-out error) in the user's device file."""
    from core.devices import save_user_devices
    from ui.state import devices

    save_user_devices(load_devices().add(_local_spec()), user_devices)
    devices.clear()
    return user_devices


def test_threads_default_to_torchs_without_a_calibrated_local(user_devices):
    user_devices.unlink(missing_ok=True)
    at = _page()
    assert at.selectbox(key="bench_threads").value == bm.TORCH_DEFAULT
    said = next(c.value for c in at.caption if c.value.startswith("Timing, calibration and the runs below use "))
    assert "torch's default" in said          # with its number once torch has loaded (another test may load it)
    assert not at.warning and not any("'local' now" in c.value for c in at.caption)


def test_threads_default_to_the_count_local_was_calibrated_at_and_a_clash_is_warned(calibrated_local):
    at = _page()
    assert at.selectbox(key="bench_threads").value == 2
    captions = [c.value for c in at.caption]
    assert "Timing, calibration and the runs below use 2 torch thread(s), the count 'local' was calibrated at; " \
           "every result records its count." in captions
    # 0.36 → 36 %; three held-out networks
    assert "'local' now: calibrated at 2 torch thread(s) on 2026-05-01; calibration self-check: ±36 % " \
           "(median of 3 held-out networks), above 15 %: treat its times as rough; this calibration at 2 threads " \
           "predates the parallel grain, so small layers are predicted too fast: calibrate again " \
           "(python -m core calibrate)." in captions
    assert not at.warning
    at.selectbox(key="bench_threads").set_value(1).run()
    assert [w.value for w in at.warning] == [
        "'local' (This machine (test)) was calibrated at 2 torch thread(s): timings at 1 will not match its "
        "predictions. Pick 2, or calibrate again at 1."]


def _fake_timing(threads: int):
    """A timing result with made-up times (no torch): mnist_cnn's forward, 2 ms."""
    from core.bridge.timing import PassTiming, TimingResult

    return TimingResult(device="cpu", dtype="fp32", batch_size=1, input_shape=(1, 28, 28),
                        passes={"forward": PassTiming.of([0.002, 0.002])}, threads=threads)


@pytest.mark.parametrize("threads, clash", [(2, False), (1, True)])
def test_a_timing_says_its_threads_and_whether_local_predicts_them(calibrated_local, threads, clash):
    at = AppTest.from_file(PAGE, default_timeout=120)
    rep = core.analyze("mnist_cnn")
    est = core.estimate(rep, "local", db=load_devices())
    at.session_state["bench_result"] = {"result": _fake_timing(threads), "report": rep, "estimate": est,
                                        "device": est.device.name, "device_id": "local"}
    at.run()
    assert not at.exception
    summary = next(c for c in at.caption if c.value.startswith("mnist_cnn at batch 1"))
    # the calibration's quality is behind the caption's help icon
    assert f"on cpu, {threads} thread(s)" in summary.value and "calibration self-check: ±36 %" in \
        summary.proto.help
    warned = [w.value for w in at.warning if w.value.startswith("Not comparable")]
    assert warned == (["Not comparable: This machine (test) was calibrated at 2 torch thread(s) but this run "
                       "used 1: its predictions are for 2 thread(s); time at 2, or calibrate again at 1."]
                      if clash else [])


def test_a_calibration_result_shows_its_threads_and_held_out_error():
    at = AppTest.from_file(PAGE, default_timeout=120)
    spec = _local_spec()
    spec["note"] = "test"
    at.session_state["bench_calibration"] = {"spec": spec, "path": "nowhere"}
    at.run()
    assert not at.exception
    assert metric(at, "torch threads") == "2" and metric(at, "Calibration self-check") == "±36 %"     # 0.36 → 36 %


def test_thread_picks_and_notes_without_a_page():
    db = load_devices()
    assert bm.thread_choices(2, db) == [bm.TORCH_DEFAULT, 1, 2]
    assert bm.default_thread_choice(db) == bm.TORCH_DEFAULT
    assert bm.thread_label(bm.TORCH_DEFAULT) == "torch's default"
    assert bm.thread_label(bm.TORCH_DEFAULT, 4) == "torch's default (4)" and bm.thread_label(3, 4) == "3"
    local = db.add(_local_spec(threads=8))          # a device file from a larger machine: its count is offered
    assert bm.thread_choices(2, local) == [bm.TORCH_DEFAULT, *range(1, 9)] and bm.default_thread_choice(local) == 8
    said, clash = bm.threads_note(bm.TORCH_DEFAULT, local, torch_n=2)
    assert said.startswith("Timing, calibration and the runs below use 2 torch thread(s), torch's default;")
    assert clash.startswith("'local' (This machine (test)) was calibrated at 8 torch thread(s): timings at 2 ")
    assert bm.threads_note(bm.TORCH_DEFAULT, local)[1] is None        # torch not loaded: its count is not known yet
    assert bm.threads_note(3, db)[0].startswith("Timing, calibration and the runs below use 3 torch thread(s), "
                                                "as picked;")


def test_across_and_throughput_tables_record_threads():
    rows = [{"network": "a", "input": "1×28×28", "latency_s": 0.002, "iqr_s": 0.0, "flops": 4e6, "params": 1e6,
             "threads": 2}]
    assert bm.across_frame(rows)["threads"].tolist() == [2]
    frame, _ = bm.throughput_frame([{"batch_size": 1, "forward_s": 0.002, "forward_samples_per_s": 500.0,
                                     "threads": 2}])
    assert frame["threads"].tolist() == [2]
