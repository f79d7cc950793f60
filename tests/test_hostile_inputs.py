"""Whatever a user types, uploads or selects at the entry points (device files, the API, the CLI), the answer is a
``CalcError`` subclass with a one-line message naming the field, or, on the command line, one line on stderr, a
non-zero exit and no traceback. Each reproducer of issue 15 in these entry points is a case here."""

from __future__ import annotations

import contextlib
import dataclasses
import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import core
import core.files
from core import Network, Node
from core.cli import main
from core.devices import load_devices, parse_devices, read_devices_document, save_user_devices
from core.errors import CalcError, DeviceError, NetworkError, show
from core.units import format_bytes

ROOT = Path(__file__).resolve().parents[1]
DB = load_devices(user_path=None)
V100 = DB.device("v100-sxm2")
HEADER = {"schema": "cnn-calc/devices", "version": 1}


def raises(error: type[CalcError], fn, *fragments: str) -> CalcError:
    """Run ``fn``: it must raise exactly ``error`` (or a subclass), whose one-line message holds every fragment."""
    try:
        fn()
    except error as e:
        msg = str(e)
        assert "\n" not in msg and len(msg) <= 2000, msg
        missing = [f for f in fragments if f not in msg]
        assert not missing, f"{msg!r} lacks {missing}"
        return e
    except BaseException as e:  # noqa: BLE001 — anything else is the failure this file is about
        pytest.fail(f"raised {type(e).__name__} instead of {error.__name__}: {e!r}"[:500])
    pytest.fail("no error was raised")


def flat_network() -> Network:
    """A network that does no work: one flatten (a view), so every time is 0 s."""
    return Network.make("flat", {"x": (3, 4)}, [Node.make("f", "flatten", "x")])


def spec(**changes) -> dict:
    return {**V100.to_dict(), "id": "mine", **changes}


# == device files =================================================================================================

CORRUPT_FILES = {
    "not-utf8": b"\xff\xfe\x00garbage",
    "nested-100k": b"[" * 100_000,
    "integer-5000-digits": ('{"schema": "cnn-calc/devices", "version": 1, "devices": [{"peak": ' + "9" * 5000
                            + "}]}").encode(),
    "not-json": b'{"schema": ',
    "wrong-schema": json.dumps({"schema": "onnx", "version": 1}).encode(),
    "a-list": b"[1, 2]",
}


@pytest.mark.parametrize("content", CORRUPT_FILES.values(), ids=CORRUPT_FILES.keys())
def test_a_corrupt_user_file_is_left_out_and_the_database_loads(tmp_path, content):
    path = tmp_path / "devices.json"
    path.write_bytes(content)
    db = load_devices(user_path=path)
    assert db.devices.keys() == DB.devices.keys() and db.interconnects.keys() == DB.interconnects.keys()
    assert len(db.problems) == len(DB.problems) + 1
    problem = db.problems[-1]
    assert problem.startswith("devices.json: the whole file is left out: ") and "\n" not in problem
    # the same document held in a session (the classroom server) instead of a file
    db2 = load_devices(user_path=None, user_data=content)
    assert db2.devices.keys() == DB.devices.keys() and db2.problems[-1].startswith("uploaded devices: ")


def test_a_user_folder_or_device_in_place_of_the_file_is_left_out(tmp_path):
    (tmp_path / "devices.json").mkdir()
    assert "not a regular file" in load_devices(user_path=tmp_path / "devices.json").problems[-1]


def test_user_data_loads_like_a_user_file():
    doc = {**HEADER, "devices": [spec()]}
    for data in (doc, json.dumps(doc), json.dumps(doc).encode()):
        db = load_devices(user_path=None, user_data=data)
        assert db.devices["mine"].user and db.devices["mine"].peak_flops == V100.peak_flops
    assert read_devices_document(json.dumps(doc)) == doc
    raises(DeviceError, lambda: read_devices_document(b"x" * (core.files.DEVICE_FILE_LIMIT + 1)), "limit")


def test_saving_never_overwrites_a_file_it_could_not_read(tmp_path):
    path = tmp_path / "devices.json"
    path.write_bytes(CORRUPT_FILES["not-utf8"])
    kept = save_user_devices(load_devices(user_path=path).add(spec()), path)
    assert kept == tmp_path / "devices.json.bad" and kept.read_bytes() == CORRUPT_FILES["not-utf8"]
    assert "mine" in load_devices(user_path=path).devices
    assert save_user_devices(load_devices(user_path=path), path) is None       # a readable file is replaced
    path.write_bytes(b"[")
    assert save_user_devices(load_devices(user_path=path), path) == tmp_path / "devices.json.bad-2"
    with pytest.raises(OSError):                                   # never renames a device or a folder
        save_user_devices(DB, tmp_path)


@pytest.mark.parametrize("content", [CORRUPT_FILES["not-utf8"], CORRUPT_FILES["nested-100k"],
                                     CORRUPT_FILES["integer-5000-digits"]], ids=["not-utf8", "nested", "5000-digits"])
def test_a_corrupt_database_file_is_one_device_error(tmp_path, content):
    path = tmp_path / "specs.json"
    path.write_bytes(content)
    raises(DeviceError, lambda: load_devices(path, user_path=None), "specs.json")


def test_device_files_are_size_capped_and_regular(tmp_path, monkeypatch):
    raises(DeviceError, lambda: load_devices("/dev/zero", user_path=None), "not a regular file")
    monkeypatch.setattr(core.files, "DEVICE_FILE_LIMIT", 10)
    monkeypatch.setattr(core.devices, "DEVICE_FILE_LIMIT", 10)
    path = tmp_path / "big.json"
    path.write_text(json.dumps({**HEADER, "devices": []}))
    raises(DeviceError, lambda: load_devices(path, user_path=None), "big.json", "limit is 10")


# == numbers where they enter =====================================================================================

@pytest.mark.parametrize("changes, field, fragment", [
    ({"peak_flops": {"fp32": 10 ** 400}}, "peak_flops.fp32", "401 digits"),
    ({"peak_flops": {"fp32": 10 ** 5000}}, "peak_flops.fp32", "digits"),
    ({"peak_flops": {"fp32": 5e-324}}, "peak_flops.fp32", "5e-324"),
    ({"peak_flops": {"fp32": float("inf")}}, "peak_flops.fp32", "finite"),
    ({"memory_bandwidth": 5e-324}, "memory_bandwidth", "5e-324"),
    ({"memory_bandwidth": 10 ** 300}, "memory_bandwidth", "maximum"),
    ({"memory_capacity": 10 ** 400}, "memory_capacity", "401 digits"),
    ({"efficiency": {"conv": 5e-324}}, "efficiency.conv", "5e-324"),
    ({"alloc_threshold": 2 ** 25, "alloc_bandwidth": 5e-324}, "alloc_bandwidth", "5e-324"),
    ({"gpus_per_board": 10 ** 30}, "gpus_per_board", "maximum"),
], ids=["peak-10^400", "peak-10^5000", "peak-5e-324", "peak-inf", "bandwidth-5e-324", "bandwidth-10^300",
        "capacity-10^400", "efficiency-5e-324", "alloc-bandwidth-5e-324", "gpus-10^30"])
def test_device_numbers_out_of_physical_range_are_refused_naming_the_field(changes, field, fragment):
    e = raises(DeviceError, lambda: DB.add(spec(**changes)), "mine", field, fragment)
    assert e.field == field
    doc = {**HEADER, "devices": [spec(**changes)]}
    problems = parse_devices(doc, user=True).problems          # the same entry in a file: left out, reported
    assert len(problems) == 1 and problems[0].startswith(f"mine: {field}: ")


def test_interconnect_numbers_out_of_range_are_refused():
    link = {**DB.link("ib-edr").to_dict(), "id": "slow"}
    raises(DeviceError, lambda: DB.add({**link, "bandwidth": 5e-324}), "bandwidth", "5e-324")
    raises(DeviceError, lambda: DB.add({**link, "latency": 1e300}), "latency")


def test_an_integer_peak_of_10_400_no_longer_overflows_an_estimate():
    dev = dataclasses.replace(V100, peak_flops={"fp32": 10 ** 400})         # made in code: no schema on the way
    raises(DeviceError, lambda: core.estimate("mnist_cnn", dev), "peak_flops.fp32")


@pytest.mark.parametrize("field", ["ppp", "ppp_memory", "ppp_comm"])
@pytest.mark.parametrize("value", [5e-324, 0.0, -1.0, float("nan"), float("inf"), 1.5, 10 ** 400, "0.5", True])
def test_ppp_outside_0_001_to_1_is_refused(field, value):
    kw = {"workers": 2, "link": "ib-edr"} if field == "ppp_comm" else {}
    e = raises(CalcError, lambda: core.estimate("mnist_cnn", "v100-sxm2", **{field: value}, **kw).totals, field,
               "0.001")
    assert e.field == field


@pytest.mark.parametrize("changes, field", [
    ({"peak_flops": {"fp32": 5e-324}}, "peak_flops.fp32"),
    ({"memory_bandwidth": 5e-324}, "memory_bandwidth"),
    ({"efficiency": {"conv": 5e-324}}, "efficiency.conv"),
    ({"alloc_threshold": 2.0 ** 25, "alloc_bandwidth": 5e-324}, "alloc_bandwidth"),
    ({"layer_overhead": {"conv": 1e308}}, "layer_overhead"),
], ids=["peak", "bandwidth", "efficiency", "alloc-bandwidth", "overhead"])
def test_a_device_made_in_code_that_makes_a_time_infinite_is_refused(changes, field):
    """A ``Device`` built in Python skips the schema: the estimate itself refuses a non-finite time (it printed
    'inf s nan%' and exited 0)."""
    dev = dataclasses.replace(V100, **changes)
    e = raises(DeviceError, lambda: core.estimate("mnist_cnn", dev).totals, field)
    assert e.field == field and e.node == "v100-sxm2"


def test_a_link_made_in_code_with_an_absurd_latency_or_bandwidth_is_refused():
    link = DB.link("ib-edr")
    for changes, field in (({"latency": float("inf")}, "latency"), ({"bandwidth": 5e-324}, "bandwidth")):
        lk = dataclasses.replace(link, **changes)
        raises(DeviceError, lambda lk=lk: core.estimate("mnist_cnn", "v100-sxm2", workers=2, link=lk).totals, field)


# == degenerate values ============================================================================================

def test_a_network_that_does_no_work_has_no_throughput_not_a_type_error():
    est = core.estimate(flat_network(), "v100-sxm2")
    t = est.totals
    assert t["forward_s"] == t["training_step_s"] == 0.0
    assert t["samples_per_s"] is None and t["inference_samples_per_s"] is None     # documented: JSON null
    json.dumps(est.to_dict(), allow_nan=False)
    rows = core.scaling(flat_network(), "v100-sxm2", "ib-edr", workers=(1, 2))
    assert [r["samples_per_s"] for r in rows] == [None, None]
    assert [r["speedup"] for r in rows] == [None, None] and [r["efficiency"] for r in rows] == [None, None]


@pytest.mark.parametrize("workers", [(0,), (1, -2), (True,), (1.5,), (70000,), [], "12", 3, None])
def test_scaling_refuses_bad_worker_counts(workers):
    e = raises(CalcError, lambda: core.scaling("mnist_cnn", "v100-sxm2", "ib-edr", workers=workers), "workers")
    assert e.field == "workers"


def test_scaling_and_sweep_refuse_bad_batches_settings_and_devices():
    raises(CalcError, lambda: core.scaling("mnist_cnn", "v100-sxm2", "ib-edr", batch_size="64"), "batch_size")
    raises(CalcError, lambda: core.scaling("mnist_cnn", "v100-sxm2", "ib-edr", ppq=0.5), "ppq", "unknown setting")
    raises(CalcError, lambda: core.sweep("mnist_cnn", ["v100-sxm2"], [[1]]), "batch_size")
    raises(CalcError, lambda: core.sweep("mnist_cnn", ["v100-sxm2"], 8), "batch_sizes")
    raises(CalcError, lambda: core.sweep("mnist_cnn", "v100-sxm2", [1]), "devices")
    raises(CalcError, lambda: core.sweep("mnist_cnn", [], [1]), "devices")
    raises(CalcError, lambda: core.sweep("mnist_cnn", ["v100-sxm2"], [1], bogus=1), "bogus")
    raises(CalcError, lambda: core.sweep("mnist_cnn", ["v100-sxm2"], range(200_000)), "batch_sizes", "100,000")
    raises(CalcError, lambda: core.estimate("mnist_cnn", "v100-sxm2", pp=1), "pp", "unknown setting")
    raises(DeviceError, lambda: core.estimate("mnist_cnn", "v100-sxm2", db={}), "db")


# == wrong exception types ========================================================================================

NET = core.load_network("mnist_cnn")
REPORT = core.analyze("mnist_cnn")

WRONG_TYPES = [
    ("edit-node-list", NetworkError, lambda: core.edit(NET, ["conv1"], "out_channels", 8), ["node", "['conv1']"]),
    ("edit-field-none", NetworkError, lambda: core.edit(NET, "conv1", None, 8), ["conv1", "field"]),
    ("edit-not-a-network", NetworkError, lambda: core.edit("mnist_cnn", "conv1", "out_channels", 8), ["network"]),
    ("edit-value-nested", NetworkError, lambda: core.edit(NET, "conv1", "kernel_size", _nested(100_000)),
     ["conv1", "kernel_size"]),
    ("channel-groups-not-a-network", NetworkError, lambda: core.channel_groups(None), ["network"]),
    ("explain-list", NetworkError, lambda: REPORT.explain(["x"]), ["layer", "['x']"]),
    ("layer-list", NetworkError, lambda: REPORT.layer(["x"]), ["layer"]),
    ("report-dtype-int", NetworkError, lambda: core.analyze("mnist_cnn", dtype=10 ** 5000), ["dtype", "digits"]),
    ("report-optimizer-none", NetworkError, lambda: core.analyze("mnist_cnn", optimizer=None), ["optimizer"]),
    ("sweep-nested-batch", NetworkError, lambda: core.sweep("mnist_cnn", ["v100-sxm2"], [[1]]), ["batch_size"]),
    ("add-a-string", DeviceError, lambda: DB.add("x"), ["spec", "'x'"]),
    ("add-none", DeviceError, lambda: DB.add(None), ["spec"]),
    ("remove-a-list", DeviceError, lambda: DB.remove(["x"]), ["id"]),
    ("device-a-list", DeviceError, lambda: DB.device(["v100"]), ["device"]),
    ("device-huge-int", DeviceError, lambda: DB.device(10 ** 5000), ["device", "digits"]),
    ("devices-deep-version", DeviceError, lambda: parse_devices({**HEADER, "version": _nested(2000)}),
     ["version", "<list>"]),
    ("devices-deep-entry", DeviceError, lambda: DB.add({**spec(), "note": _nested(2000)}), ["mine", "nested"]),
    ("load-devices-bool", DeviceError, lambda: load_devices(True), ["path"]),
    ("from-json-none", NetworkError, lambda: Network.from_json(None), ["network JSON"]),
    ("input-shape-10^5000", NetworkError, lambda: core.analyze("mnist_cnn", input_shape=10 ** 5000),
     ["input_shape", "digits", "absurdly large"]),
    ("input-shape-dict", NetworkError, lambda: core.analyze("mnist_cnn", input_shape={"a": 1}), ["input_shape"]),
    ("model-huge-int", NetworkError, lambda: core.analyze(10 ** 5000), ["model", "digits"]),
    ("format-bytes-text", CalcError, lambda: format_bytes("12"), ["bytes"]),
]


def _nested(depth: int) -> list:
    out: list = []
    for _ in range(depth):
        out = [out]
    return out


@pytest.mark.parametrize("error, fn, fragments", [c[1:] for c in WRONG_TYPES], ids=[c[0] for c in WRONG_TYPES])
def test_public_functions_raise_only_calc_errors(error, fn, fragments):
    raises(error, fn, *fragments)


def test_format_bytes_is_total():
    assert format_bytes(None) == "—" and format_bytes(10 ** 400) == "more than 1e300 B"
    assert format_bytes(float("nan")) == "nan B" and format_bytes(1536) == "1.50 KiB"


def test_a_message_is_one_line_and_short_whatever_the_value():
    e = CalcError("bad\nreason", node="a\nb", field="f", value="x" * 10 ** 6)
    assert "\n" not in str(e) and "(1,000,000 characters)" in str(e) and len(str(e)) < 1000
    assert show(10 ** 5000) == "<an integer of 5,001 digits>"        # 1 followed by 5,000 zeros
    assert show(-(10 ** 5000)).startswith("<an integer")


# == network files ================================================================================================

def test_network_files_are_regular_and_size_capped(tmp_path, monkeypatch):
    raises(NetworkError, lambda: core.analyze("/dev/zero"), "model", "/dev/zero", "not a regular file")
    raises(NetworkError, lambda: core.analyze(str(tmp_path) + os.sep), "model", "not a regular file")
    fifo = tmp_path / "pipe.json"
    os.mkfifo(fifo)
    raises(NetworkError, lambda: core.analyze(str(fifo)), "pipe.json", "not a regular file")
    raises(NetworkError, lambda: core.analyze("a\x00b.json"), "model")
    path = tmp_path / "net.json"
    path.write_text(NET.to_json(), encoding="utf-8")
    monkeypatch.setattr(core.api, "NETWORK_FILE_LIMIT", 100)
    raises(NetworkError, lambda: core.analyze(str(path)), "net.json", "the limit is 100")


@pytest.mark.parametrize("body", ["import sys\nsys.exit(0)\n", "raise SystemExit(3)\n",
                                  "class Net:\n    def __init__(self):\n        raise SystemExit(0)\n",
                                  "class Net:\n    def __init__(self):\n        raise GeneratorExit()\n"],
                         ids=["exit-0-on-import", "exit-3-on-import", "exit-in-init", "generator-exit-in-init"])
def test_a_user_model_that_exits_is_reported_not_obeyed(tmp_path, body):
    path = tmp_path / "model.py"
    path.write_text(body, encoding="utf-8")
    raises(NetworkError, lambda: core.analyze(f"{path}:Net", input_shape="1x28x28"), "model.py", "failed")


# == the command line =============================================================================================

def cli(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        rc = main(list(argv))
    return rc, out.getvalue(), err.getvalue()


@pytest.fixture(scope="module")
def files(tmp_path_factory) -> dict[str, str]:
    d = tmp_path_factory.mktemp("hostile")
    made = {"flat": flat_network().to_json(), "mnist": NET.to_json()}
    paths = {}
    for name, content in {**{k: v.encode() for k, v in made.items()}, **CORRUPT_FILES}.items():
        (d / f"{name}.json").write_bytes(content)
        paths[name] = str(d / f"{name}.json")
    (d / "exit.py").write_text("import sys\nsys.exit(0)\n", encoding="utf-8")
    paths["exit"] = str(d / "exit.py")
    paths["dir"] = str(d)
    (d / "ten-400.json").write_text(json.dumps({**HEADER, "devices": [spec(id="ten-400")]}).replace(
        str(V100.peak_flops["fp32"]), "1" + "0" * 400), encoding="utf-8")
    paths["ten-400"] = str(d / "ten-400.json")
    return paths


E = ["estimate", "mnist_cnn", "--device", "v100-sxm2"]
HOSTILE = [
    # argparse: one line naming what is wrong, exit 2
    ([], "required: cmd"), (["bogus"], "invalid choice: 'bogus'"), (["analyze"], "required: model"),
    (["analyze", "mnist_cnn", "--batch", "x"], "--batch"), (["analyze", "mnist_cnn", "--batch"], "--batch"),
    (["analyze", "mnist_cnn", "--frobnicate"], "unrecognized arguments: --frobnicate"),
    (["estimate", "mnist_cnn"], "--device"), ([*E, "--variant", "foo"], "--variant"),
    ([*E, "--ppp", "half"], "--ppp"), ([*E, "--workers", "9" * 5000], "--workers"),
    (["time", "mnist_cnn", "--repeats", "x"], "--repeats"), (["calibrate", "--seconds", "x"], "--seconds"),
    # analyze
    (["analyze", "mnist_cnn", "--batch", "0"], "batch_size"),
    (["analyze", "mnist_cnn", "--batch", "9" * 40], "batch_size"),
    (["analyze", "mnist_cnn", "--input", "9" * 5000], "input_shape"),
    (["analyze", "mnist_cnn", "--input", ""], "input_shape"),
    (["analyze", "mnist_cnn", "--input", "3x\na"], "input_shape"),
    (["analyze", "mnist_cnn", "--dtype", "fp8"], "dtype"),
    (["analyze", "mnist_cnn", "--optimizer", "x" * 10_000], "optimizer"),
    (["analyze", "mnist_cnn", "--explain", ""], "no such layer"),
    (["analyze", "mnist_cnn", "--explain", "a\nb"], "no such layer"),
    (["analyze", "/dev/zero"], "not a regular file"), (["analyze", "/dev/null"], "not a regular file"),
    (["analyze", "{dir}"], "not a regular file"), (["analyze", "{not-utf8}"], "not UTF-8"),
    (["analyze", "{nested-100k}"], "nested too deeply"), (["analyze", "{integer-5000-digits}"], "network JSON"),
    (["analyze", "{a-list}"], "object"), (["analyze", "/no/such/file.json"], "cannot read"),
    (["analyze", "{exit}:Net", "--input", "1x28x28"], "exit(0)"),
    (["analyze", "{exit}:Net"], "--input"), (["analyze", "x" * 100_000], "unknown network"),
    # estimate
    ([*E, "--ppp", "5e-324"], "ppp"), ([*E, "--ppp", "nan"], "ppp"), ([*E, "--ppp", "inf"], "ppp"),
    ([*E, "--ppp", "-0.5"], "ppp"), ([*E, "--ppp-memory", "0"], "ppp_memory"),
    ([*E, "--ppp-comm", "1e-300", "--workers", "2", "--link", "ib-edr"], "ppp_comm"),
    ([*E, "--workers", "0"], "workers"), ([*E, "--workers", "-3"], "workers"),
    ([*E, "--workers", "100000", "--link", "ib-edr"], "workers"), ([*E, "--workers", "2"], "--link"),
    ([*E, "--workers", "2", "--link", "nope"], "nope"), (["estimate", "mnist_cnn", "--device", ""], "device"),
    (["estimate", "mnist_cnn", "--device", "v100"], "several"), ([*E, "--batch", "-1"], "batch_size"),
    ([*E, "--dtype", "int4"], "dtype"), (["estimate", "mnist_cnn", "--device", "geforce-256", "--dtype", "fp16"],
                                         "fp16"),
    ([*E, "--file", "/dev/zero"], "not a regular file"), ([*E, "--file", "{nested-100k}"], "nested too deeply"),
    ([*E, "--file", "{integer-5000-digits}"], "digits"), ([*E, "--file", "{not-utf8}"], "not UTF-8"),
    ([*E, "--file", "{wrong-schema}"], "schema"), ([*E, "--file", "/no/such.json"], "cannot read"),
    (["estimate", "mnist_cnn", "--device", "ten-400", "--file", "{ten-400}"], "unknown device"),
    (["estimate", "/dev/zero", "--device", "v100-sxm2"], "not a regular file"),
    # devices
    (["devices", "--file", "{nested-100k}"], "nested too deeply"), (["devices", "--file", "{dir}"], "regular"),
    # time / calibrate: checked before torch does anything
    (["time", "mnist_cnn", "--threads", "0"], "threads"), (["time", "mnist_cnn", "--repeats", "0"], "repeats"),
    (["time", "mnist_cnn", "--batches", ",".join(["1"] * 1000)], "at most 64"),
    (["time", "/dev/zero"], "not a regular file"), (["calibrate", "--threads", "-3", "--no-save"], "threads"),
    (["calibrate", "--seconds", "nan", "--no-save"], "seconds"),
]


def _argv(argv: list[str], files: dict) -> list[str]:
    return [a.format(**files) if "{" in a and "}" in a and len(a) < 200 else a for a in argv]


@pytest.mark.parametrize("argv, fragment", HOSTILE, ids=[" ".join(a)[:60] or "<none>" for a, _ in HOSTILE])
def test_cli_sweep_hostile_invocations_one_line_no_traceback(files, argv, fragment):
    rc, out, err = cli(*_argv(argv, files))
    assert rc == 2, (rc, err)
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), err
    assert "Traceback" not in err and "internal error" not in err
    assert fragment in lines[0], lines[0][:300]
    assert out == ""


def test_the_sweep_is_at_least_40_invocations():
    assert len(HOSTILE) >= 40


def test_cli_zero_work_network_prints_a_dash_and_exits_0(files):
    rc, out, err = cli("estimate", files["flat"], "--device", "v100-sxm2")
    assert rc == 0 and err == ""
    assert "— samples/s (no work to time)" in out and "inf" not in out and "nan" not in out
    rc, out, _ = cli("estimate", files["flat"], "--device", "v100-sxm2", "--json")
    assert rc == 0 and json.loads(out)["totals"]["samples_per_s"] is None


def test_cli_devices_and_estimate_survive_a_corrupt_user_file(files, monkeypatch):
    monkeypatch.setattr(load_devices, "__defaults__", (None, Path(files["nested-100k"])))
    rc, out, err = cli("devices")
    assert rc == 0 and err == "" and "left out: nested-100k.json: the whole file is left out" in out
    rc, out, err = cli(*E)
    assert rc == 0 and err == "" and "samples/s" in out


def run_cli(*args: str, home: Path | None = None) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    if home is not None:
        env["CNN_CALC_HOME"] = str(home)
    return subprocess.run([sys.executable, "-m", "core", *args], capture_output=True, text=True, encoding="utf-8",
                          cwd=ROOT, env=env, timeout=120)


@pytest.mark.parametrize("args", [["analyze", "/dev/zero"], ["analyze", "mnist_cnn", "--batch", "x"],
                                  ["estimate", "mnist_cnn", "--device", "v100-sxm2", "--ppp", "5e-324"]],
                         ids=["dev-zero", "argparse", "ppp-5e-324"])
def test_cli_subprocess_one_line_exit_2(args):
    p = run_cli(*args)
    assert p.returncode == 2 and p.stdout == ""
    assert len(p.stderr.strip().splitlines()) == 1 and "Traceback" not in p.stderr


def test_cli_subprocess_user_model_calling_exit_0_fails_loudly(tmp_path):
    (tmp_path / "m.py").write_text("import sys\nsys.exit(0)\n", encoding="utf-8")
    p = run_cli("analyze", f"{tmp_path / 'm.py'}:Net", "--input", "1x28x28")
    assert p.returncode == 2 and p.stdout == "" and "exit(0)" in p.stderr
    assert len(p.stderr.strip().splitlines()) == 1


def test_cli_subprocess_corrupt_user_file_in_home(tmp_path):
    (tmp_path / "devices.json").write_bytes(CORRUPT_FILES["integer-5000-digits"])
    p = run_cli("estimate", "mnist_cnn", "--device", "v100-sxm2", home=tmp_path)
    assert p.returncode == 0 and p.stderr == "" and "samples/s" in p.stdout
    p = run_cli("devices", home=tmp_path)
    assert p.returncode == 0 and "devices.json: the whole file is left out" in p.stdout


def test_cli_help_still_prints_usage():
    rc, out, err = cli("analyze", "--help")
    assert rc == 0 and "usage:" in out and err == ""
