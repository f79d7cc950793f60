"""The Devices page: table, roofline overlay, the custom-device form (add, refuse, edit, remove) and the import
helper (``ui.devices_form.parse_import``, tested directly: AppTest does not drive file uploads)."""

import json
import math
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

import core.devices
from ui import devices_form as df
from ui.state import devices

PAGE = str(Path(__file__).resolve().parent.parent / "views" / "devices.py")
USER = core.devices.USER_PATH          # under $CNN_CALC_HOME, a temporary folder (conftest.py)


@pytest.fixture()
def page():
    """A fresh page with no user devices; whatever a test saved is gone afterwards (other tests see built-ins)."""
    USER.unlink(missing_ok=True)
    devices.clear()
    yield AppTest.from_file(PAGE, default_timeout=60).run()
    USER.unlink(missing_ok=True)
    devices.clear()


def _fill(at, **values):
    for key, value in values.items():
        widget = at.number_input(key=key) if key in df.F_PEAK.values() or key in (df.F_BW, df.F_MEM, df.F_YEAR) \
            else at.text_input(key=key)
        widget.set_value(value)
    return at.button(key="device_save").click().run()


GOOD = {df.F_ID: "lab-gpu", df.F_NAME: "Lab GPU", df.F_VENDOR: "Acme", df.F_PEAK["fp32"]: 20.0,
        df.F_BW: 1000.0, df.F_MEM: 24.0, df.F_SOURCE: "measured"}


def test_table_overlay_and_ridges(page):
    assert not page.exception
    table = next(d.value for d in page.dataframe if "bandwidth GB/s" in d.value and "fp32 TFLOP/s" in d.value)
    geforce = table.set_index("id").loc["geforce-256"]
    assert math.isnan(geforce["fp64 TFLOP/s"])                       # missing precision: empty, not "None"
    assert len(page.get("vega_lite_chart")) == 1                      # the altair overlay
    ridges = next(d.value for d in page.dataframe if "ridge FLOP/byte" in d.value).set_index("id")
    assert ridges.loc["v100-sxm2", "ridge FLOP/byte"] == pytest.approx(17.44)   # 15.7e12 / 900e9
    assert set(df.SURVEY) - {"tpu-v3", "apple-a14"} == set(ridges.index)
    assert "TPU v3" in page.info[0].value and "bf16" in page.info[0].value    # left out under fp32, not an error
    page.selectbox(key="overlay_precision").set_value(df.FASTEST).run()
    ridges = next(d.value for d in page.dataframe if "ridge FLOP/byte" in d.value).set_index("id")
    assert ridges.loc["tpu-v3", "precision"] == "bf16" and len(ridges) == len(df.SURVEY)
    assert not page.error and not page.exception


def test_add_edit_and_remove_a_device(page):
    at = _fill(page, **GOOD)
    assert not at.exception and not at.error
    assert "lab-gpu" in at.success[0].value
    assert "Lab GPU" in at.selectbox(key="device").options            # the sidebar sees it (options are names)
    saved = json.loads(USER.read_text())["devices"]
    assert [d["id"] for d in saved] == ["lab-gpu"]
    assert saved[0]["peak_flops"] == {"fp32": 20e12} and saved[0]["memory_bandwidth"] == 1000e9
    assert saved[0]["memory_capacity"] == 24 * 2 ** 30
    # edit: pick it, the form is filled; change the bandwidth
    at.selectbox(key="device_edit").set_value("").run()
    assert at.text_input(key=df.F_ID).value == ""                     # "a new device": a blank form
    at = _fill(at, **GOOD)                                             # the same id again is not a silent overwrite
    assert "'id'" in at.error[0].value and "already one of your devices" in at.error[0].value
    at.selectbox(key="device_edit").set_value("lab-gpu").run()
    assert at.text_input(key=df.F_NAME).value == "Lab GPU" and at.number_input(key=df.F_BW).value == 1000.0
    at = _fill(at, **{df.F_BW: 2000.0})
    assert not at.error and json.loads(USER.read_text())["devices"][0]["memory_bandwidth"] == 2000e9
    # remove
    at.button(key="device_remove").click().run()
    assert not at.exception and "Removed" in at.success[0].value
    assert json.loads(USER.read_text())["devices"] == []
    assert "Lab GPU" not in at.selectbox(key="device").options


@pytest.mark.parametrize("bad, field", [({df.F_BW: 0.0}, "memory_bandwidth"), ({df.F_ID: "lab gpu"}, "id"),
                                        ({df.F_ID: "v100-sxm2"}, "id"), ({df.F_PEAK["fp32"]: 0.0}, "peak_flops")])
def test_an_invalid_device_is_refused_at_its_field(page, bad, field):
    at = _fill(page, **{**GOOD, **bad})
    assert not at.exception and not at.success
    assert len(at.error) == 1 and f"'{field}'" in at.error[0].value
    assert at.text_input(key=df.F_NAME).value == "Lab GPU"            # what was typed is kept
    assert not USER.exists()
    assert at.selectbox(key="device").options == page.selectbox(key="device").options
    assert devices().device("v100-sxm2").user is False                 # a built-in is never replaced


# -- import ---------------------------------------------------------------------------------------------------

def _doc(*entries, **extra):
    return json.dumps({"schema": "cnn-calc/devices", "version": 1, "devices": list(entries), **extra}).encode()


ENTRY = {"id": "imp-gpu", "name": "Imported GPU", "vendor": "Acme", "kind": "GPU", "year": 2024,
         "peak_flops": {"fp32": 1e13}, "memory_bandwidth": 5e11, "source": "measured", "note": ""}


@pytest.mark.parametrize("raw, says", [
    (b'{"schema": "cnn-calc/devices", ', "not valid JSON"),
    (b" " * (df.MAX_IMPORT_BYTES + 1), "limit"),
    (b"[" * 100_000 + b"]" * 100_000, "nested too deeply"),
    (b"\xff\xfe{}", "not UTF-8"),
    (json.dumps({"schema": "something-else", "version": 1}).encode(), "schema"),
    (b"[1, 2]", "expected a JSON object"),
    (_doc(devices=None), "must be a list"),
    (b'{"a": 1' + b"0" * 5000 + b"}", "not valid JSON"),                     # an int too long to convert
])
def test_import_refuses_a_bad_file_with_a_message(raw, says):
    db, problems, error = df.parse_import(raw, "evil.json")
    assert db is None and problems == [] and "evil.json" in error and says in error


def test_import_keeps_good_entries_and_lists_bad_ones_by_id_and_field():
    bad = {**ENTRY, "id": "bad-gpu", "memory_bandwidth": -1}
    nan = {**ENTRY, "id": "nan-gpu", "peak_flops": {"fp32": float("nan")}}
    builtin = {**ENTRY, "id": "v100-sxm2"}
    db, problems, error = df.parse_import(_doc(ENTRY, bad, nan, builtin), "mine.json", ["v100-sxm2"])
    assert error is None and list(db.devices) == ["imp-gpu"] and db.devices["imp-gpu"].user
    assert any(p.startswith("bad-gpu: memory_bandwidth:") for p in problems)
    assert any(p.startswith("nan-gpu: peak_flops.fp32:") for p in problems)
    assert any(p.startswith("v100-sxm2: id:") for p in problems) and len(problems) == 3
    merged = df.merge(devices(), db)
    assert merged.device("imp-gpu").peak("fp32") == 1e13 and merged.device("v100-sxm2").user is False


def test_export_round_trips_through_import():
    spec = df.build_spec({**df.blank_form(), **GOOD})
    db = devices().add(spec)
    back, problems, error = df.parse_import(json.dumps(db.user_entries()).encode(), "export.json")
    assert error is None and problems == [] and back.devices["lab-gpu"] == db.devices["lab-gpu"]
    assert df.form_values(back.devices["lab-gpu"])[df.F_BW] == pytest.approx(1000.0)


# == a calibrated device's quality (issue 14 item 2) ===============================================================

CALIBRATED = {"threads": 2, "held_out_error": 0.36, "held_out": {"mnist_cnn": 0.12, "squeezenet1_0": -0.36,
                                                                 "resnet18": 0.4},
              "spread": 0.1, "spread_of": "conv layer timings", "noisy": False, "date": "2026-05-01T10:00:00"}


def test_a_calibrated_device_shows_its_threads_and_held_out_error(page):
    assert "calibration" not in page.dataframe[0].value.columns          # nothing calibrated: no such column
    spec = core.devices.load_devices().devices["core-i7-920"].to_dict()
    spec.update(id="local", name="This machine (test)", calibration=CALIBRATED)
    core.devices.save_user_devices(core.devices.load_devices().add(spec), USER)
    devices.clear()
    at = AppTest.from_file(PAGE, default_timeout=60).run()
    assert not at.exception
    table = at.dataframe[0].value.set_index("id")
    # threads 2, 0.36 → "±36 %", the date's day
    assert table.loc["local", "calibration"] == "2 threads · held-out ±36 % · 2026-05-01"
    assert table.loc["core-i7-920", "calibration"] == ""
    # 36 % at 2 threads without a parallel grain: the line says to calibrate again
    assert ("**This machine (test)** ('local'): calibrated at 2 torch thread(s) on 2026-05-01; calibration "
            "self-check: ±36 % (median of 3 held-out networks), above 15 %: treat its times as rough; this calibration "
            "at 2 threads predates the parallel grain, so small layers are predicted too fast: calibrate again "
            "(python -m core calibrate); its estimates are for that "
            "thread count.") in [c.value for c in at.caption]


def test_the_calibration_cell_says_one_thread_and_noisy():
    spec = core.devices.load_devices().devices["core-i7-920"].to_dict()
    spec.update(id="local", calibration={**CALIBRATED, "threads": 1, "held_out_error": 0.114, "noisy": True})
    local = core.devices.load_devices().add(spec).devices["local"]
    assert df.calibration_cell(local) == "1 thread · held-out ±11 % · 2026-05-01 · noisy"     # 0.114 → 11 %
    gpu = core.devices.load_devices().devices["v100-sxm2"].to_dict()
    gpu.update(id="local-gpu", calibration=CALIBRATED)      # a GPU's record: its thread count is the host's
    assert df.calibration_cell(core.devices.load_devices().add(gpu).devices["local-gpu"]) == \
        "held-out ±36 % · 2026-05-01"
