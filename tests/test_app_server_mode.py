"""Classroom server mode (``CNN_CALC_SERVER=1``): each session keeps its own devices, nothing is written to the
server's disk, live timing and calibration say why they are off; and without the variable the app still saves the
user's devices to their file.

The user's home ($CNN_CALC_HOME, read by ``core.devices`` when it is imported) is pointed at an empty temporary folder
for each test, so "nothing written" is checked on a folder nobody else touches.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

import core.devices
from ui import devices_actions as act
from ui import devices_form as df
from ui.state import DEVICE, LIVE_ENV, LIVE_OFF, SERVER_ENV, devices

ROOT = Path(__file__).resolve().parent.parent
DEVICES, BENCHMARK, LABS = (str(ROOT / "views" / p) for p in ("devices.py", "benchmark.py", "course_labs.py"))


def _listing(folder: Path) -> dict:
    return {p.name: p.read_bytes() for p in folder.iterdir()} if folder.exists() else {}


@pytest.fixture()
def home(tmp_path, monkeypatch):
    """An empty user home: where the app would read and write the user's devices file (``USER_PATH``, computed from
    $CNN_CALC_HOME at import, and ``load_devices``' default). The session's own home (conftest) must not change."""
    path, shared = tmp_path / "devices.json", core.devices.USER_PATH.parent
    before = _listing(shared)
    monkeypatch.setenv("CNN_CALC_HOME", str(tmp_path))
    monkeypatch.setattr(core.devices, "USER_PATH", path)
    monkeypatch.setattr(core.devices.load_devices, "__defaults__", (None, path))
    monkeypatch.setattr(act, "USER_PATH", path)
    devices.clear()
    yield tmp_path
    devices.clear()
    assert _listing(shared) == before


@pytest.fixture()
def server(home, monkeypatch):
    monkeypatch.setenv(SERVER_ENV, "1")
    monkeypatch.delenv(LIVE_ENV, raising=False)
    return home


def _open(page: str) -> AppTest:
    at = AppTest.from_file(page, default_timeout=120).run()
    assert not at.exception, at.exception
    return at


def _add(at: AppTest, ident: str, name: str) -> AppTest:
    values = {df.F_ID: ident, df.F_NAME: name, df.F_VENDOR: "Acme", df.F_PEAK["fp32"]: 20.0, df.F_BW: 1000.0,
              df.F_SOURCE: "measured"}
    for key, value in values.items():
        (at.number_input(key=key) if key in (df.F_PEAK["fp32"], df.F_BW) else at.text_input(key=key)).set_value(value)
    at.button(key="device_save").click().run()
    assert not at.exception and not at.error, (at.exception, at.error)
    return at


def _names(at: AppTest) -> list[str]:
    return at.selectbox(key=DEVICE).options


def test_two_sessions_keep_their_own_devices_and_nothing_is_written(server):
    alice, bob = _open(DEVICES), _open(DEVICES)
    _add(alice, "alice-gpu", "Alice GPU")
    assert "this session only" in alice.success[0].value
    assert "Alice GPU" in _names(alice)
    assert "only in this browser session" in " ".join(c.value for c in alice.caption)
    bob.run()                                           # Bob's next run does not see Alice's device
    assert "Alice GPU" not in _names(bob)
    _add(bob, "bob-gpu", "Bob GPU")
    alice.run()
    assert "Bob GPU" not in _names(alice) and "Alice GPU" in _names(alice)
    assert "Bob GPU" in _names(bob) and "Alice GPU" not in _names(bob)
    # each session's device works on the other pages of that session (same session state)
    alice.selectbox(key=DEVICE).set_value("alice-gpu").run()
    assert not alice.exception and alice.session_state[DEVICE] == "alice-gpu"
    # edit and remove touch only this session
    alice.selectbox(key="device_edit").set_value("alice-gpu").run()
    alice.number_input(key=df.F_BW).set_value(2000.0)
    alice.button(key="device_save").click().run()
    assert devices_of(alice)["alice-gpu"].memory_bandwidth == 2000e9
    alice.button(key="device_remove").click().run()
    assert not alice.exception and "Removed" in alice.success[0].value
    assert "Alice GPU" not in _names(alice)
    bob.run()
    assert "Bob GPU" in _names(bob)
    assert list(server.iterdir()) == []                 # the server's disk: nothing written
    # a fresh session (a new student, or a reload) starts from the built-in database
    carol = _open(DEVICES)
    assert not ({"Alice GPU", "Bob GPU"} & set(_names(carol)))
    assert list(server.iterdir()) == []


def devices_of(at: AppTest) -> dict:
    return at.session_state["session_devices"].devices


def test_server_mode_does_not_read_the_servers_devices_file(server):
    (server / "devices.json").write_text(json.dumps({"schema": core.devices.SCHEMA_NAME,
                                                     "version": core.devices.SCHEMA_VERSION, "devices": [
        {**core.devices.load_devices(user_path=None).devices["v100-sxm2"].to_dict(), "id": "teacher-gpu",
         "name": "Teacher GPU"}]}))
    before = (server / "devices.json").read_bytes()
    at = _open(DEVICES)
    assert "Teacher GPU" not in _names(at)
    _add(at, "student-gpu", "Student GPU")
    assert (server / "devices.json").read_bytes() == before and len(list(server.iterdir())) == 1


def test_benchmark_page_says_why_live_timing_is_off(server):
    at = _open(BENCHMARK)
    assert [i.value for i in at.info] == [LIVE_OFF]
    assert not at.button and not at.error                # no Time / Calibrate / Stop controls
    assert at.title[0].value == "Benchmark"
    assert LIVE_OFF.count(". ") == 0 and LIVE_OFF.endswith(".")   # one sentence


def test_lab2_measured_here_says_why_it_is_off(server):
    at = _open(LABS)
    at.session_state["lab"] = 2
    at.run()
    at.session_state["lab2_tab"] = "Measured here"
    at.run()
    assert not at.exception
    assert LIVE_OFF in [i.value for i in at.info]
    assert not [b for b in at.button if b.key == "lab2_time"]
    assert list(server.iterdir()) == []


def test_live_timing_can_be_turned_back_on_for_a_server(server, monkeypatch):
    monkeypatch.setenv(LIVE_ENV, "1")
    at = _open(BENCHMARK)
    assert at.button(key="bench_time") and at.button(key="bench_calibrate")
    assert LIVE_OFF not in [i.value for i in at.info]


def test_default_mode_still_saves_to_the_users_file(home, monkeypatch):
    monkeypatch.delenv(SERVER_ENV, raising=False)
    at = _add(_open(DEVICES), "my-gpu", "My GPU")
    saved = json.loads((home / "devices.json").read_text())
    assert [d["id"] for d in saved["devices"]] == ["my-gpu"]
    assert f"to {home / 'devices.json'}" in at.success[0].value
    assert "My GPU" in _names(_open(DEVICES))           # a new session reads the file: the user's, not a session's
    bench = _open(BENCHMARK)
    assert bench.button(key="bench_time") and LIVE_OFF not in [i.value for i in bench.info]


def test_a_calibration_on_a_server_with_live_timing_stays_in_its_session(server, monkeypatch):
    monkeypatch.setenv(LIVE_ENV, "1")
    at = _open(BENCHMARK)
    at.slider(key="bench_cal_seconds").set_value(3).run()
    # this test is about where the device goes, not its quality: a busy test machine must not refuse it
    at.selectbox(key="bench_threads").set_value(1).run()
    at.checkbox(key="bench_cal_force").check().run()
    at.button(key="bench_calibrate").click().run()
    assert not at.exception and not at.error, (at.exception, at.error)
    local = devices_of(at)["local"]
    assert local.user and local.peak_flops["fp32"] > 0
    assert local.name in _names(at)
    assert any("this session only" in s.value for s in at.success)
    assert list(server.iterdir()) == []
    other = _open(BENCHMARK)
    assert local.name not in _names(other)
