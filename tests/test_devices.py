"""The hardware database: schema validation, named errors, user devices, and the shipped file's figures."""

import json

import pytest

from core import DeviceError
from core.devices import DEFAULT_PATH, load_devices, parse_devices, save_user_devices

GOOD = {"id": "toy", "name": "Toy GPU", "vendor": "test", "kind": "GPU", "year": 2020,
        "peak_flops": {"fp32": 1e12}, "memory_bandwidth": 1e11, "source": "https://example.org/toy", "note": ""}


def doc(*devices, links=()):
    return {"schema": "cnn-calc/devices", "version": 1, "devices": list(devices), "interconnects": list(links)}


@pytest.mark.parametrize("field, value, fragment", [
    ("peak_flops", {"fp32": -1}, "peak_flops.fp32"),
    ("peak_flops", {"fp33": 1e12}, "peak_flops"),
    ("memory_bandwidth", 0, "memory_bandwidth"),
    ("kind", "FPGA", "kind"),
    ("year", "2020", "year"),
    ("id", "Has Spaces", "id"),
    ("source", "", "source"),
])
def test_a_bad_entry_is_reported_by_id_and_field_and_the_rest_load(field, value, fragment):
    bad = {**GOOD, "id": "bad", field: value} if field != "id" else {**GOOD, field: value}
    db = parse_devices(doc(GOOD, bad))
    assert list(db.devices) == ["toy"]
    assert len(db.problems) == 1
    ident = "bad" if field != "id" else "Has Spaces"
    assert db.problems[0].startswith(f"{ident}: {fragment}")


def test_missing_field_and_duplicate_id_are_named():
    missing = {k: v for k, v in GOOD.items() if k != "source"} | {"id": "nosrc"}
    db = parse_devices(doc(GOOD, missing, dict(GOOD)))
    assert list(db.devices) == ["toy"]
    assert db.problems == ("nosrc: source: 'source' is a required property", "toy: id: duplicate id")


@pytest.mark.parametrize("text, fragment", [
    ("{not json", "not valid JSON"),
    ('{"schema": "cnn-calc/devices", "version": 2, "devices": []}', "version 1"),
    ("[1, 2]", "expected a JSON object"),
])
def test_malformed_files_give_a_named_error(tmp_path, text, fragment):
    f = tmp_path / "devices.json"
    f.write_text(text)
    with pytest.raises(DeviceError) as err:
        load_devices(f)
    assert fragment in str(err.value) and "devices.json" in str(err.value)


def test_lookup_by_id_or_name_and_closest_matches():
    db = parse_devices(doc(GOOD, {**GOOD, "id": "toy-2", "name": "Other Toy"}))
    assert db.device("TOY").id == "toy"
    assert db.device("other toy").id == "toy-2"
    with pytest.raises(DeviceError) as err:
        db.device("tyo")
    assert "unknown device 'tyo'" in str(err.value) and "toy" in str(err.value)


def test_user_devices_are_validated_and_kept_apart(tmp_path):
    db = parse_devices(doc(GOOD))
    with pytest.raises(DeviceError) as err:
        db.add({**GOOD, "id": "mine", "memory_bandwidth": -5})
    assert "mine" in str(err.value) and "memory_bandwidth" in str(err.value)
    db2 = db.add({**GOOD, "id": "mine", "name": "My laptop"})
    assert "mine" in db2.devices and "mine" not in db.devices          # the original is untouched
    path = tmp_path / "user.json"
    save_user_devices(db2, path)
    saved = json.loads(path.read_text())
    assert [d["id"] for d in saved["devices"]] == ["mine"]               # only the user's own entries
    reloaded = load_devices(DEFAULT_PATH, user_path=path)
    assert reloaded.device("mine").user and reloaded.device("mine").name == "My laptop"
    assert "mine" not in db2.remove("mine").devices


# -- the shipped device_specs.json ------------------------------------------------------------------------------

SHIPPED = load_devices()


def test_every_shipped_entry_passes_the_schema_and_has_a_source():
    assert SHIPPED.problems == ()
    for entry in [*SHIPPED.devices.values(), *SHIPPED.interconnects.values()]:
        assert entry.source.startswith("https://"), entry.id
        assert entry.note, entry.id


@pytest.mark.parametrize("device", ["geforce 256", "titan xp", "k80", "k80-board", "p100", "v100-sxm2", "v100-pcie",
                                    "a100", "t4", "i7-920", "3900x", "rx 6800", "a14", "m1 max", "tpu v3", "h100 sxm",
                                    "h100 pcie", "h200", "b200", "l4", "rtx 3090", "rtx 4090", "mi250x", "mi300x",
                                    "tpu v4", "tpu v5e", "m2 max", "m3 max"])
def test_the_course_and_current_devices_are_there(device):
    try:
        SHIPPED.device(device)
    except DeviceError as e:            # an ambiguous name still proves the device is there
        assert "matches several" in str(e), str(e)


def test_course_ridge_points():
    v100 = SHIPPED.device("v100-sxm2")
    a100 = SHIPPED.device("a100-40gb-sxm")
    assert v100.ridge("fp32") == pytest.approx(15.7e12 / 900e9)      # 17.44 FLOP/byte
    assert a100.ridge("fp32") == pytest.approx(19.5e12 / 1555e9)     # 12.54 FLOP/byte


def test_k80_board_is_two_gpus():
    board, gpu = SHIPPED.device("k80-board"), SHIPPED.device("k80")
    assert board.peak("fp32") == pytest.approx(8.73e12)              # NVIDIA: 8.73 TFLOP/s fp32 with GPU Boost
    assert board.peak("fp64") == pytest.approx(2.91e12)
    assert gpu.peak("fp32") == pytest.approx(board.peak("fp32") / 2)
    assert gpu.memory_bandwidth == pytest.approx(board.memory_bandwidth / 2)
    assert board.gpus_per_board == 2


def test_a_user_file_left_out_whole_is_named_in_left_out(tmp_path):
    """A user devices file that is not UTF-8 is left out whole: the built-in database loads, and ``left_out`` holds
    one message naming the file (the app shows it on every page); a file with one bad entry is not left out."""
    bad = tmp_path / "devices.json"
    bad.write_bytes(b"\xff\xfe not a document")
    db = load_devices(user_path=bad)
    assert "v100-sxm2" in db.devices
    assert len(db.left_out) == 1 and "devices.json" in db.left_out[0] and "UTF-8" in db.left_out[0]
    assert db.left_out[0] in db.problems
    one_bad_entry = {"schema": "cnn-calc/devices", "version": 1, "devices": [{"id": "x"}]}
    bad.write_text(json.dumps(one_bad_entry))
    assert load_devices(user_path=bad).left_out == ()


def test_an_unknown_device_names_the_user_file_that_was_left_out_and_why(tmp_path, monkeypatch):
    """'unknown device' alone misleads when the device was in a user file that could not be read: the error names
    the file (from ~ under the home folder) and the reason, for the whole file and for one entry of it."""
    monkeypatch.setenv("HOME", str(tmp_path))
    (tmp_path / ".cnn_calc").mkdir()
    user = tmp_path / ".cnn_calc" / "devices.json"
    user.write_bytes(b"\xff\xfe not a document")
    with pytest.raises(DeviceError) as err:
        load_devices(user_path=user).device("local")
    assert "unknown device 'local' (your devices file ~/.cnn_calc/devices.json was left out: " in str(err.value)
    assert "UTF-8" in str(err.value)
    user.write_text(json.dumps(doc({**GOOD, "id": "local", "memory_bandwidth": 0})))
    db = load_devices(user_path=user)
    with pytest.raises(DeviceError) as err:
        db.device("local")
    assert "(its entry in your devices file ~/.cnn_calc/devices.json was left out: memory_bandwidth: " in \
        str(err.value)
    with pytest.raises(DeviceError) as err:      # another id: its file was read, so nothing is said of it
        db.device("nonesuch")
    assert "left out" not in str(err.value)
    # an upload that is not a document: named as the upload
    with pytest.raises(DeviceError) as err:
        load_devices(user_path=None, user_data=b"\xff").device("local")
    assert "(your uploaded devices file was left out: " in str(err.value)
