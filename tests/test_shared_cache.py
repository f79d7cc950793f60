"""The process-wide cache of analyses and estimates (``ui.shared_cache``): keyed by content, bounded, thread-safe, and
shared across sessions without a session's device or network reaching another one.

The key tests change one thing at a time (each estimate setting, each device field, one node attribute, the input,
batch, precision, optimizer) and expect a new key. The leak tests (AppTest, classroom server mode) try to make one
leak: two students define a device with the same id and name but other figures, and edit the same built-in network
into networks of the same name; each must see the numbers ``core`` gives for their own, and the other's in no list.
"""

from __future__ import annotations

import dataclasses
import json
import threading
import time
from pathlib import Path

import pytest

import core
import core.devices
from core.devices import Device, load_devices
from core.paleo import Estimate
from ui import shared_cache as sc

ROOT = Path(__file__).resolve().parent.parent
DB = load_devices(user_path=None)
V100 = DB.devices["v100-sxm2"]
SIDEBAR = {"ppp": 1.0, "variant": "auto", "launch": "eager"}
# a value each setting may take other than its default (the key must change; validity is core's business)
OTHER_SETTING = {"ppp": 0.5, "ppp_memory": 0.5, "variant": "paleo", "conv_algorithm": "winograd", "fused": True,
                 "workers": 2, "link": next(iter(DB.interconnects.values())), "ppp_comm": 0.5,
                 "allreduce": "tree", "launch": "cuda_graphs", "threads": 4, "comm_model": "paleo", "bucket_mb": 100.0,
                 "reduce_dtype": "fp16", "input_pipeline": "cpu", "cpu_cores": 16, "nodes": 2,
                 "node_link": DB.link("ib-hdr"), "nics": 8, "process": "warm"}


@pytest.fixture(autouse=True)
def empty_cache():
    sc.CACHE.clear()
    yield
    sc.CACHE.clear()


def _report(net="mnist_cnn", batch=8):
    return sc.analysis(core.load_network(net), None, batch, "fp32", "sgd_momentum")


# == the key ==========================================================================================================

def test_same_content_same_key_even_for_another_object():
    net = core.load_network("resnet18")
    copy = core.Network.from_json(net.to_json())
    assert copy is not net and sc.network_digest(copy) == sc.network_digest(net)
    dev = dataclasses.replace(V100)
    assert dev is not V100 and sc.device_digest(dev) == sc.device_digest(V100)
    assert sc.analysis_key(copy, "3x224x224", 8, "fp16", "adam") == sc.analysis_key(net, (3, 224, 224), 8, "fp16",
                                                                                    "adam")
    r = _report()
    assert sc.estimate_key(r, dev, {}) == sc.estimate_key(r, V100, {"ppp": 1.0, "variant": "auto"})


def test_every_setting_is_in_the_key():
    assert set(OTHER_SETTING) == set(sc.SETTING_DEFAULTS)      # a setting core adds must be listed here too
    r = _report()
    base = sc.estimate_key(r, V100, {})
    keys = {name: sc.estimate_key(r, V100, {name: value}) for name, value in OTHER_SETTING.items()}
    assert all(k != base for k in keys.values()) and len(set(keys.values())) == len(keys)
    assert sc.estimate_key(r, V100, {"fused": 1}) != sc.estimate_key(r, V100, {"fused": True})   # typed
    with pytest.raises(core.CalcError, match="unknown setting"):
        sc.estimate_key(r, V100, {"pp": 0.5})


def _changed(value):
    """Another value of a device field's kind."""
    if isinstance(value, bool):
        return not value
    if isinstance(value, (int, float)):
        return value * 2 + 1
    if isinstance(value, str):
        return value + "x"
    if isinstance(value, dict):
        return {**value, "fp32": 1.0} if value.get("fp32") != 1.0 else {**value, "fp32": 2.0}
    if isinstance(value, (list, tuple)):
        return type(value)([*value, "x"])
    return "set"                                              # None → a value


@pytest.mark.parametrize("field", [f.name for f in dataclasses.fields(Device)])
def test_every_device_figure_is_in_the_key(field):
    r = _report()
    other = dataclasses.replace(V100, **{field: _changed(getattr(V100, field))})
    assert sc.estimate_key(r, other, {}) != sc.estimate_key(r, V100, {})


def test_the_network_input_batch_precision_and_optimizer_are_in_the_key():
    net = core.load_network("mnist_cnn")
    conv = next(n for n in net.nodes if n.op == "conv2d")
    edited = net.replace_node(conv.with_attrs(out_channels=conv.get("out_channels") + 1))
    renamed = dataclasses.replace(net, name="mine")
    base = sc.analysis_key(net, None, 8, "fp32", "sgd_momentum")
    others = [sc.analysis_key(edited, None, 8, "fp32", "sgd_momentum"),
              sc.analysis_key(renamed, None, 8, "fp32", "sgd_momentum"),
              sc.analysis_key(net, "1x32x32", 8, "fp32", "sgd_momentum"), sc.analysis_key(net, None, 9, "fp32",
                                                                                        "sgd_momentum"),
              sc.analysis_key(net, None, 8, "fp16", "sgd_momentum"), sc.analysis_key(net, None, 8, "fp32", "adam"),
              sc.analysis_key(net, None, True, "fp32", "sgd_momentum")]
    assert base not in others and len(set(others)) == len(others)
    r, r16 = (sc.analysis(net, None, 8, d, "sgd_momentum") for d in ("fp32", "fp16"))
    assert sc.estimate_key(r, V100, {}) != sc.estimate_key(r16, V100, {})
    assert sc.estimate_key(r, V100, {}) != sc.estimate_key(r.with_batch(9), V100, {})


def test_cached_results_equal_cores_and_errors_are_not_cached():
    net = core.load_network("resnet18")
    r = sc.analysis(net, None, 8, "fp16", "adam")
    assert r is sc.analysis(core.Network.from_json(net.to_json()), None, 8, "fp16", "adam")      # one entry
    assert r.totals == core.analyze(net, batch_size=8, dtype="fp16", optimizer="adam").totals
    e = sc.estimate(r, V100, **SIDEBAR)
    assert e is sc.estimate(r, dataclasses.replace(V100), **SIDEBAR)
    assert e.to_dict() == core.estimate(r, V100, batch_size=8, dtype="fp16", optimizer="adam", **SIDEBAR).to_dict()
    assert sc.CACHE.stats()["hits"] == 2 and len(sc.CACHE) == 2
    with pytest.raises(core.CalcError):
        sc.analysis(net, "3x0x2", 8, "fp32", "sgd_momentum")
    cpu = next(d for d in DB.devices.values() if "fp16" not in d.peak_flops)
    with pytest.raises(core.CalcError):
        sc.estimate(r, cpu, **SIDEBAR)
    assert len(sc.CACHE) == 2


# == bounds, threads, statistics =====================================================================================

def test_eviction_by_entries_is_least_recently_used():
    cache = sc.SharedCache(max_entries=3, max_bytes=10 ** 9)
    for k in "abc":
        cache.get((k,), lambda k=k: k, size=lambda v: 10)
    cache.get(("a",), lambda: "new")                  # a hit: 'a' is now the most recent
    cache.get(("d",), lambda: "d", size=lambda v: 10)
    assert ("b",) not in cache and all((k,) in cache for k in "acd")
    assert cache.stats()["evictions"] == 1 and cache.stats()["entries"] == 3


def test_eviction_by_bytes_and_an_entry_over_the_bound_is_not_kept():
    cache = sc.SharedCache(max_entries=100, max_bytes=1000)
    for k in "abcd":
        cache.get((k,), lambda k=k: k, size=lambda v: 300 - len(repr((v,))))     # 300 bytes with its key
    assert [k for k in "abcd" if (k,) in cache] == ["b", "c", "d"] and cache.stats()["bytes"] == 900
    assert cache.get(("big",), lambda: "big", size=lambda v: 2000) == "big"
    assert ("big",) not in cache and cache.stats()["too_large"] == 1 and len(cache) == 3


def test_real_entries_are_sized_by_their_layers():
    small, large = _report("mnist_cnn"), _report("resnet152")
    assert sc.entry_bytes(large) > 20 * sc.entry_bytes(small)
    e = sc.estimate(large, V100, **SIDEBAR)
    assert 1e6 < sc.entry_bytes(large) < sc.entry_bytes(e) < 4e6            # ResNet-152: ~1 MB and ~2.4 MB
    assert sc.CACHE.stats()["bytes"] == sum(n for _, n in sc.CACHE._table.values())


def test_threads_asking_for_one_key_compute_it_once():
    cache, calls = sc.SharedCache(), []

    def slow():
        calls.append(1)
        time.sleep(0.2)
        return object()

    got = []
    threads = [threading.Thread(target=lambda: got.append(cache.get(("k",), slow, size=lambda v: 1)))
               for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(calls) == 1 and len({id(v) for v in got}) == 1 and cache.stats()["waits"] >= 1


def test_a_failed_computation_lets_a_waiting_thread_compute():
    cache, calls = sc.SharedCache(), []

    def fails_first():
        calls.append(1)
        time.sleep(0.1)
        if len(calls) == 1:
            raise core.CalcError("no")
        return "ok"

    out = []

    def ask():
        try:
            out.append(cache.get(("k",), fails_first, size=lambda v: 1))
        except core.CalcError:
            out.append("error")

    threads = [threading.Thread(target=ask) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(out) == ["error", "ok", "ok"] and len(calls) == 2


def test_stats_are_written_where_the_operator_asks(tmp_path, monkeypatch):
    path = tmp_path / "cache.json"
    monkeypatch.setenv(sc.STATS_ENV, str(path))
    r = _report()
    sc.estimate(r, V100, **SIDEBAR)
    sc.estimate(r, V100, **SIDEBAR)
    got = json.loads(path.read_text())
    assert (got["entries"], got["hits"], got["misses"]) == (2, 1, 2) and got["peak_rss_mib"] >= got["rss_mib"] > 0
    assert [p.name for p in tmp_path.iterdir()] == ["cache.json"]


# == sessions: nothing leaks ==========================================================================================

@pytest.fixture()
def server(tmp_path, monkeypatch):
    """Classroom server mode with an empty user home (as tests/test_app_server_mode.py)."""
    from ui import devices_actions as act
    from ui.state import devices

    path = tmp_path / "devices.json"
    monkeypatch.setenv("CNN_CALC_SERVER", "1")
    monkeypatch.delenv("CNN_CALC_LIVE", raising=False)
    monkeypatch.setenv("CNN_CALC_HOME", str(tmp_path))
    monkeypatch.setattr(core.devices, "USER_PATH", path)
    monkeypatch.setattr(core.devices.load_devices, "__defaults__", (None, path))
    monkeypatch.setattr(act, "USER_PATH", path)
    devices.clear()
    yield tmp_path
    devices.clear()


def _page(name: str):
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=120).run()
    if name != "layers":
        at.switch_page(f"views/{name}.py").run()
    assert not at.exception, at.exception
    return at


def _add_device(at, ident: str, name: str, tflops: float, gbs: float):
    from ui import devices_actions as act
    from ui import devices_form as df

    at.selectbox(key=act.EDIT).set_value(act.NEW).run()          # a new device, not an edit of the last one saved
    values = {df.F_ID: ident, df.F_NAME: name, df.F_VENDOR: "Class", df.F_PEAK["fp32"]: tflops, df.F_BW: gbs,
              df.F_SOURCE: "measured"}
    for key, value in values.items():
        (at.number_input(key=key) if key in (df.F_PEAK["fp32"], df.F_BW) else at.text_input(key=key)).set_value(value)
    at.button(key="device_save").click().run()
    assert not at.exception and not at.error, (at.exception, at.error)


def _widen_conv2(at, channels: int):
    at.selectbox(key="edit_layer").set_value("conv2").run()
    at.selectbox(key="edit_field").set_value("out_channels").run()
    at.number_input(key="edit_value").set_value(channels).run()
    at.button(key="edit_apply").click().run()
    assert not at.exception and at.selectbox(key="model").value == "custom"


def _forward_ms(at) -> str:
    return next(m.value for m in at.metric if m.label == "Forward time")


def _expected_ms(net, device, batch: int) -> str:
    e = core.estimate(core.analyze(net, batch_size=batch), device, batch_size=batch, **SIDEBAR)
    return f"{e.totals['forward_s'] * 1e3:,.3f} ms"


@pytest.mark.app
def test_a_students_device_and_network_never_reach_another_session(server):
    from ui.state import BATCH, CUSTOM_NET, DEVICE, SESSION_DEVICES

    alice, bob = _page("devices"), _page("devices")
    _add_device(alice, "class-gpu", "Class GPU", 20.0, 1000.0)
    _add_device(alice, "alice-only", "Alice only", 30.0, 3000.0)
    _add_device(bob, "class-gpu", "Class GPU", 10.0, 250.0)        # same id and name, other figures
    for at, channels in ((alice, 128), (bob, 96)):                   # same base network and name, other edit
        at.switch_page("views/network.py").run()
        _widen_conv2(at, channels)
        at.number_input(key=BATCH).set_value(4096).run()
        at.selectbox(key=DEVICE).set_value("class-gpu").run()
        at.switch_page("views/layers.py").run()
        assert not at.exception, at.exception
    alice.run()                                                       # again, after Bob computed his
    mine = {}
    for at in (alice, bob):
        dev, net = at.session_state[SESSION_DEVICES].devices["class-gpu"], at.session_state[CUSTOM_NET]
        mine[id(at)] = (dev, net)
        assert _forward_ms(at) == _expected_ms(net, dev, 4096)
    (a_dev, a_net), (b_dev, b_net) = mine[id(alice)], mine[id(bob)]
    assert a_dev.peak_flops["fp32"] == 20e12 and b_dev.peak_flops["fp32"] == 10e12 and a_net.name == b_net.name
    assert _forward_ms(alice) != _forward_ms(bob)
    assert "Alice only" in alice.selectbox(key=DEVICE).options                   # the list shows names
    assert "Alice only" not in bob.selectbox(key=DEVICE).options
    assert bob.selectbox(key=DEVICE).options.count("Class GPU") == 1
    assert "alice-only" not in bob.session_state[SESSION_DEVICES].devices
    assert b_net.node("conv2").get("out_channels") == 96
    # both students' entries are in the table, under different keys
    keys = [sc.estimate_key(sc.analysis(net, None, 4096, "fp32", "sgd_momentum"), dev, SIDEBAR)
            for dev, net in ((a_dev, a_net), (b_dev, b_net))]
    assert keys[0] != keys[1] and all(k in sc.CACHE for k in keys)
    # a new student sees neither the devices nor the edited networks
    carol = _page("layers")
    assert not {"Alice only", "Class GPU"} & set(carol.selectbox(key=DEVICE).options)
    assert "custom" not in carol.selectbox(key="model").options and CUSTOM_NET not in carol.session_state
    assert list(server.iterdir()) == []


@pytest.mark.app
def test_no_page_changes_a_shared_result(server):
    """Every page that reads the sidebar's analysis and estimate runs on a ResNet-18; the cached values then equal a
    fresh computation's (a page that wrote into a shared Report or Estimate would show up here)."""
    from ui.state import BATCH

    at = _page("layers")
    at.selectbox(key="model").set_value("resnet18").run()
    at.number_input(key=BATCH).set_value(16).run()
    for page in ("graph", "roofline", "estimates", "network", "compare", "course_labs", "layers"):
        at.switch_page(f"views/{page}.py").run()
        assert not at.exception, (page, at.exception)
    for tab in ("Batch size", "Other devices", "Convolution algorithm", "Data parallel", "Memory"):
        at.switch_page("views/estimates.py")
        at.session_state["estimates_tab"] = tab
        at.run()
        assert not at.exception, (tab, at.exception)
    cached = [v for v, _ in sc.CACHE._table.values()]
    reports = [v for v in cached if isinstance(v, core.Report)]
    estimates = [v for v in cached if isinstance(v, Estimate)]
    assert reports and estimates
    for r in reports:
        assert r.to_dict() == core.analyze(r.compiled.network, batch_size=r.batch_size, dtype=r.dtype,
                                           optimizer=r.optimizer).to_dict()
    for e in estimates:
        fresh = core.estimate(e.report, e.device, batch_size=e.report.batch_size, dtype=e.report.dtype,
                              optimizer=e.report.optimizer, ppp=e.ppp, variant="auto", launch=e.launch)
        assert e.to_dict() == fresh.to_dict()
