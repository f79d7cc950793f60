"""A device's fields are declared once (``core.devices.DEVICE_FIELDS``), and the Devices form carries every one of
them through an edit: form → spec → Device gives the device back, the calibrated ``local`` one included (its
efficiency, per-layer overhead and allocator figures are not on the form)."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

import core.devices
from core.devices import (
    DEVICE_FIELDS,
    DEVICE_SCHEMA,
    INTERCONNECT_FIELDS,
    INTERCONNECT_SCHEMA,
    OP_CLASSES,
    PRECISION_KEYS,
    Device,
    Interconnect,
    load_devices,
    parse_devices,
    save_user_devices,
)
from core.precision import PRECISIONS
from core.registry import WORK_CLASSES
from ui import devices_form as df
from ui.state import devices

PAGE = str(Path(__file__).resolve().parent.parent / "views" / "devices.py")
USER = core.devices.USER_PATH          # under $CNN_CALC_HOME, a temporary folder (conftest.py)

# A calibrated CPU as core.bridge.calibrate saves it (figures from benchmarks/results/predict_measured.json).
LOCAL = Device(
    id="local", name="This machine (AMD EPYC, 2 cores)", vendor="AMD", kind="CPU", year=2026,
    peak_flops={"fp32": 90943875363.28389, "fp64": 44810361122.93315}, memory_bandwidth=22328682932.20172,
    source="measured by core.bridge.calibrate on 2026-11-23", note="2 torch thread(s), budget 30 s (took 29.6 s)",
    memory_capacity=25276514304.0, compute_notes={"fp32": "torch.mm best at n=1024: 90.9 GFLOP/s"},
    efficiency={"conv": 0.7041546665697312, "grouped_conv": 0.2436253990664963, "linear": 0.6603689323479813,
                "pool": 0.0025703081658438073, "elementwise": 0.12292006118108617, "shape": 0.12292006118108617},
    layer_overhead={"conv": 2.9824997909599915e-05, "grouped_conv": 0.00010285200187354349,
                    "linear": 1.0728999768616632e-05, "pool": 7.424001523759216e-06,
                    "elementwise": 8.596001862315461e-06, "shape": 8.596001862315461e-06},
    alloc_threshold=33554432, alloc_bandwidth=1763417261.3554792, user=True)

# Every field away from its default: a field added to DEVICE_FIELDS fails test_full_covers_every_field until it is
# here, and then the round trips below check that the form carries it.
FULL = dataclasses.replace(LOCAL, id="full", kind="GPU", sparse_flops={"fp16": 1.1e14}, gpus_per_board=2,
                           architecture="ampere", sm_count=108, boost_clock=1.41e9, l2_bytes=40 * 2 ** 20,
                           sources={"sm_count": "https://example.org/whitepaper"},
                           calibration={"threads": 2, "held_out_error": 0.12, "held_out": {"mnist_cnn": -0.05},
                                        "spread": 0.08, "spread_of": "conv layer timings", "noisy": True,
                                        "unsteady": "pool layer timings 31%", "date": "2026-11-23T14:57:25",
                                        "host": {"cpu": "AMD EPYC 9654", "isa": "avx2 avx512f", "onednn": "3.12.0"}},
                           backward_efficiency={"conv": 0.5, "grouped_conv": 0.05, "pool": 0.001},
                           backward_overhead={"conv": 3e-5, "elementwise": 1e-5}, update_overhead=4e-6,
                           parallel_grain=4.4e-4, class_grain={"conv": 6e-5, "linear": 6e-5},
                           weight_bandwidth={"conv": 6.9e9, "linear": 2.08e10}, cache_bytes=32 * 2 ** 20,
                           backward_weight_bandwidth={"conv": 5.6e9, "linear": 1.23e10},
                           padded_layout={"block": 16, "seconds": 2.6e-10},
                           train_efficiency={"conv": 0.6, "grouped_conv": 0.02}, train_overhead={"conv": 2e-5},
                           note="every field set")


def _fields(device) -> dict:
    return {f.name: getattr(device, f.name) for f in dataclasses.fields(device)}


def _edit(device: Device, **typed) -> Device:
    """What the Devices page saves when ``device`` is picked under Edit, ``typed`` changed and Save clicked."""
    spec = df.build_spec({**df.form_values(device), **typed}, keep=device.to_dict())
    return parse_devices({"schema": "cnn-calc/devices", "version": 1, "devices": []}).add(spec).devices[spec["id"]]


# -- one declaration ----------------------------------------------------------------------------------------------

@pytest.mark.parametrize("cls, fields, schema", [(Device, DEVICE_FIELDS, DEVICE_SCHEMA),
                                                 (Interconnect, INTERCONNECT_FIELDS, INTERCONNECT_SCHEMA)])
def test_the_dataclass_and_the_schema_come_from_the_same_fields(cls, fields, schema):
    names = [f.name for f in fields]
    assert [f.name for f in dataclasses.fields(cls)] == names == list(schema["properties"])
    assert schema["required"] == [f.name for f in fields if f.required]
    assert all(schema["properties"][f.name]["description"] == f.doc and f.doc for f in fields)
    needed = [f.name for f in dataclasses.fields(cls)
              if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING]
    assert set(needed) <= set(schema["required"])          # what the dataclass needs, a file entry must give


def test_the_lists_come_from_where_they_are_declared():
    assert set(PRECISION_KEYS) == {p.compute for p in PRECISIONS.values()} and len(set(PRECISION_KEYS)) == 6
    assert OP_CLASSES == WORK_CLASSES
    peaks = DEVICE_SCHEMA["properties"]["peak_flops"]["properties"]
    assert list(peaks) == list(PRECISION_KEYS) and list(df.F_PEAK) == list(PRECISION_KEYS)
    for name in ("efficiency", "layer_overhead"):
        assert list(DEVICE_SCHEMA["properties"][name]["properties"]) == list(WORK_CLASSES)


def test_a_shape_figure_is_accepted_and_a_class_of_work_that_does_not_exist_is_named():
    db = parse_devices({"schema": "cnn-calc/devices", "version": 1, "devices": [
        LOCAL.to_dict(), {**LOCAL.to_dict(), "id": "typo", "efficiency": {"convolution": 0.5}}]})
    assert db.devices["local"] == LOCAL
    assert len(db.problems) == 1 and db.problems[0].startswith("typo: efficiency: ")
    assert "convolution" in db.problems[0]


def test_full_covers_every_field():
    defaults = Device(id="x", name="x", vendor="x", kind="CPU", year=2000, peak_flops={"fp32": 1.0},
                      memory_bandwidth=1.0, source="x")
    same = [name for name, value in _fields(FULL).items() if value == getattr(defaults, name)]
    assert same == [], f"give FULL a value for {same}"


# -- the form's round trip ----------------------------------------------------------------------------------------

@pytest.mark.parametrize("device", [LOCAL, FULL], ids=["calibrated", "full"])
def test_the_form_gives_back_every_field_of_a_device_it_edits(device):
    back = _edit(device)
    for name, value in _fields(device).items():
        assert getattr(back, name) == value, name
    assert back == device


def test_a_changed_field_changes_and_the_rest_stay():
    back = _edit(LOCAL, **{df.F_BW: 30.0, df.F_PEAK["fp64"]: 0.0, df.F_NAME: " My CPU "})
    assert back.memory_bandwidth == 30e9 and back.peak_flops == {"fp32": LOCAL.peak_flops["fp32"]}
    assert back.name == "My CPU"
    changed = {n for n, v in _fields(back).items() if v != getattr(LOCAL, n)}
    assert changed == {"memory_bandwidth", "peak_flops", "name"}


def test_clearing_the_memory_leaves_it_out():
    assert _edit(LOCAL, **{df.F_MEM: 0.0}).memory_capacity is None


def test_a_new_device_has_only_what_was_typed():
    spec = df.build_spec({**df.blank_form(), df.F_ID: "new", df.F_NAME: "New", df.F_VENDOR: "Acme",
                          df.F_PEAK["fp32"]: 1.5, df.F_BW: 100.0, df.F_SOURCE: "measured"})
    assert spec == {"id": "new", "name": "New", "vendor": "Acme", "kind": "GPU", "year": spec["year"],
                    "memory_bandwidth": 100e9, "source": "measured", "note": "", "peak_flops": {"fp32": 1.5e12}}


# -- the page -----------------------------------------------------------------------------------------------------

@pytest.fixture()
def saved_local():
    """``local`` in the user's device file, as calibration leaves it; gone afterwards."""
    save_user_devices(load_devices(user_path=None).add(LOCAL.to_dict()), USER)
    devices.clear()
    yield
    USER.unlink(missing_ok=True)
    devices.clear()


def _saved() -> Device:
    return load_devices(user_path=USER).devices["local"]


def test_editing_the_calibrated_device_on_the_page_keeps_every_field(saved_local):
    at = AppTest.from_file(PAGE, default_timeout=60).run()
    at.selectbox(key="device_edit").set_value("local").run()
    assert at.text_input(key=df.F_NAME).value == LOCAL.name
    at.button(key="device_save").click().run()
    assert not at.exception and not at.error and "Updated" in at.success[0].value
    assert _saved() == LOCAL
    at.number_input(key=df.F_BW).set_value(30.0)
    at.button(key="device_save").click().run()
    assert not at.exception and not at.error
    saved = _saved()
    assert saved.memory_bandwidth == 30e9
    assert dataclasses.replace(saved, memory_bandwidth=LOCAL.memory_bandwidth) == LOCAL
    assert json.loads(USER.read_text())["devices"][0]["layer_overhead"] == LOCAL.layer_overhead


def test_a_long_note_survives_an_edit_on_the_page(saved_local):
    """Calibration's note grows with each dtype measured (~1,900 characters for two): the Note box must not cut it."""
    note = ("efficiency = c / (t − m − overhead) per class of work; " * 50)[:2500]
    save_user_devices(load_devices(user_path=None).add({**LOCAL.to_dict(), "note": note}), USER)
    devices.clear()
    at = AppTest.from_file(PAGE, default_timeout=60).run()
    at.selectbox(key="device_edit").set_value("local").run()
    assert at.text_area(key=df.F_NOTE).value == note
    at.number_input(key=df.F_BW).set_value(30.0)
    at.button(key="device_save").click().run()
    assert not at.exception and not at.error and "Updated" in at.success[0].value
    saved = _saved()
    assert len(saved.note) == 2500 and saved.note == note and saved.memory_bandwidth == 30e9
