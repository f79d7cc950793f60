"""Links that reopen a view (``ui.links``, hooked into ``ui.state``): the sidebar's state round-trips through the URL's
query parameters, an edited network travels packed while the link stays short enough, and every bad or stale
parameter falls back to its default with a notice naming it while the others are kept.

The pure tests import no Streamlit (they stay in the fast subset); the AppTest ones import it in their body and carry
the ``app`` mark themselves.
"""

from __future__ import annotations

import base64
import hashlib
import json
import zlib
from pathlib import Path

import pytest

import core
from core.devices import load_devices
from ui import links

ROOT = Path(__file__).resolve().parent.parent
VIEWS = ROOT / "views"
DEVICE_IDS = list(load_devices(user_path=None).devices)
# ui.state.DEFAULTS, spelled here so that the pure tests need no Streamlit (test_state_keys_match checks they agree)
DEFAULTS = {"model": "mnist_cnn", "input_shape": "", "batch_size": 1, "dtype": "fp32", "optimizer": "sgd_momentum",
            "device": "v100-sxm2", "ppp": 1.0, "variant": "auto", "launch": "eager"}
EVERY_FIELD = {"model": "resnet50", "input_shape": "3x160x160", "batch_size": 64, "dtype": "fp16",
               "optimizer": "adam", "device": "a100-40gb-sxm", "ppp": 0.6, "variant": "paleo",
               "launch": "cuda_graphs"}


def _builtin(name: str) -> bool:
    return name in core.builtin_names()


def _decode(params, **kw):
    return links.decode(params, DEFAULTS, models=kw.pop("models", _builtin), devices=DEVICE_IDS, **kw)


def _edited_mnist() -> core.Network:
    return core.edit(core.load_network("mnist_cnn"), "conv2", "out_channels", 128).network


def _long_network(layers: int = 400) -> core.Network:
    """A chain whose layer names are hex digests: JSON that zlib cannot shrink much, far over the link limit."""
    nodes, prev = [], "x"
    for i in range(layers):
        name = hashlib.sha256(str(i).encode()).hexdigest()
        nodes.append(core.Node.make(name, "relu", prev))
        prev = name
    return core.Network.make("long", {"x": (8,)}, nodes)


# ---- pure: state → URL → state ------------------------------------------------------------------------------------

def test_defaults_make_no_parameters():
    made = links.link(DEFAULTS, DEFAULTS, base_url="http://host/Estimates")
    assert made.params == {} and made.url == "http://host/Estimates"


def test_the_main_page_link_has_its_slash():
    assert links.link({**DEFAULTS, "batch_size": 2}, DEFAULTS, base_url="http://h:8501").url == "http://h:8501/?batch=2"


def test_short_readable_keys_only_non_default_values():
    state = {**DEFAULTS, "model": "resnet50", "batch_size": 64, "dtype": "fp16", "device": "a100-40gb-sxm"}
    made = links.link(state, DEFAULTS, base_url="http://host:8501/Estimates")
    assert made.url == "http://host:8501/Estimates?model=resnet50&batch=64&dtype=fp16&device=a100-40gb-sxm"


def test_every_field_round_trips():
    made = links.link(EVERY_FIELD, DEFAULTS)
    assert made.params == {"model": "resnet50", "input": "3x160x160", "batch": "64", "dtype": "fp16",
                           "optimizer": "adam", "device": "a100-40gb-sxm", "ppp": "0.6", "time": "paleo",
                           "launch": "cuda_graphs"}
    opened = _decode(made.params)
    assert opened.notices == [] and opened.network is None
    assert opened.values == EVERY_FIELD


def test_slider_float_noise_and_typed_shapes_are_written_canonically():
    state = {**DEFAULTS, "ppp": 0.1 + 0.2 + 0.3, "input_shape": " 3, 64 ,64 "}    # 0.6000000000000001
    assert links.link(state, DEFAULTS).params == {"ppp": "0.6", "input": "3x64x64"}
    assert _decode({"ppp": "0.6"}).values == {"ppp": 0.6}


def test_other_parameters_are_kept_in_the_link():
    made = links.link({**DEFAULTS, "batch_size": 8}, DEFAULTS, base_url="http://h/Course_labs", others={"lab": "3"})
    assert made.url == "http://h/Course_labs?lab=3&batch=8" and made.params == {"batch": "8"}
    assert _decode({"lab": "3", "embed": "true"}).values == {}          # keys it does not own are not its business


def test_a_timm_name_is_kept_readable_and_asked_of_the_picker():
    made = links.link({**DEFAULTS, "model": "timm:convnext_tiny"}, DEFAULTS, base_url="http://h/")
    assert made.url == "http://h/?model=timm:convnext_tiny"
    asked = []
    opened = _decode({"model": "timm:convnext_tiny"}, models=lambda n: n.startswith("timm:"),
                     check_input=lambda model, shape: asked.append((model, shape)))
    assert opened.values == {"model": "timm:convnext_tiny"} and asked == [("timm:convnext_tiny", "")]


def test_a_timm_name_that_does_not_load_falls_back_with_a_notice():
    def fails(model, shape):
        raise core.NetworkError("timm has no model 'nosuch'", field="model", value=model)

    opened = _decode({"model": "timm:nosuch", "batch": "4"}, models=lambda n: n.startswith("timm:"), check_input=fails)
    assert opened.values == {"batch_size": 4}
    assert len(opened.notices) == 1 and "model=timm:nosuch" in opened.notices[0] and "nosuch" in opened.notices[0]


# ---- pure: an edited network in the link --------------------------------------------------------------------------

def test_custom_network_round_trip_equals_the_network():
    net = _edited_mnist()
    made = links.link({**DEFAULTS, "model": "custom", "batch_size": 8}, DEFAULTS, base_url="http://h/Network",
                      packed=links.pack_network(net))
    assert made.network_chars is None and set(made.params) == {"model", "batch", "net"}
    assert len(made.url) <= links.URL_LIMIT
    opened = _decode(made.params)
    assert opened.notices == [] and opened.values == {"model": "custom", "batch_size": 8}
    assert opened.network == net
    # conv2 at 128 channels: 128·32·3·3 + 128 = 36,992; fc1 then reads 128·12·12 = 18,432: 18,432·128 + 128 =
    # 2,359,424; conv1 1·32·9 + 32 = 320 and fc2 128·10 + 10 = 1,290 unchanged → 2,398,026
    assert core.analyze(opened.network).totals["params"] == 2_398_026


def test_a_zoo_network_as_large_as_resnet50_still_travels():
    packed = links.pack_network(core.load_network("resnet50"))
    made = links.link({**DEFAULTS, "model": "custom"}, DEFAULTS, base_url="http://classroom-server:8501/Layers",
                      packed=packed)
    assert "net" in made.params and len(made.url) <= links.URL_LIMIT
    assert _decode(made.params).network == core.load_network("resnet50")


def test_a_long_network_is_refused_with_the_export_message():
    packed = links.pack_network(_long_network())
    made = links.link({**DEFAULTS, "model": "custom"}, DEFAULTS, base_url="http://h/", packed=packed)
    assert len(packed) > links.URL_LIMIT and made.network_chars == len(packed)
    assert made.params == {"model": "custom"} and len(made.url) < 100
    opened = _decode(made.params)                                    # the reader is told what to ask for
    assert opened.values == {} and opened.network is None
    assert "model=custom" in opened.notices[0] and "IR JSON on the Network page" in opened.notices[0]


def _pack_text(text: bytes) -> str:
    return base64.urlsafe_b64encode(zlib.compress(text, 9)).decode().rstrip("=")


def test_unpacked_size_is_capped_before_inflating_it_all():
    bomb = _pack_text(b" " * (3 * 2 ** 20))            # 3 MB of spaces packs to a few kB
    assert len(bomb) < 8000
    with pytest.raises(core.NetworkError, match="over the 2 MB limit"):
        links.unpack_network(bomb)


# ---- pure: each bad or stale parameter → the default and a notice; the rest kept -------------------------------------

GOOD = {"model": "vgg11", "batch": "16"}
BAD = [
    ("model", "nosuchnet", "not a network this app offers"),
    ("model", "timm:convnext_tiny", "not a network this app offers"),        # a picker without timm
    ("device", "a100-sxm4-40gb", "no device with this id here"),             # a stale or misspelt id
    ("dtype", "fp8", "not one of"),
    ("batch", "abc", "from 1 to 4,096"),
    ("batch", "0", "from 1 to 4,096"),
    ("batch", "1000000000", "from 1 to 4,096"),
    ("batch", "-3", "from 1 to 4,096"),
    ("ppp", "7", "multiple of 0.05"),
    ("ppp", "0.33", "multiple of 0.05"),
    ("ppp", "nan", "multiple of 0.05"),
    ("ppp", "inf", "multiple of 0.05"),
    ("ppp", "0", "multiple of 0.05"),
    ("optimizer", "lion", "not one of"),
    ("time", "fast", "not one of"),
    ("launch", "graphs", "not one of"),
    ("input", "3x0x2", "positive dimensions"),
    ("input", "3x16x16", "features.20"),    # vgg11's five 2×2 max-pools: 16 → 8 → 4 → 2 → 1, the fifth is named
]


@pytest.mark.parametrize(("key", "value", "why"), BAD, ids=[f"{k}={v}" for k, v, _ in BAD])
def test_a_bad_parameter_falls_back_with_a_notice_naming_it(key, value, why):
    params = {**GOOD, key: value}
    opened = _decode(params)
    state_key = "model" if key == "model" else next(s for s, u in links.PARAMS.items() if u == key)
    assert state_key not in opened.values                         # its default stays
    kept = {"model": "vgg11", "batch_size": 16}
    kept.pop(state_key, None)
    assert opened.values == kept                                   # the valid ones are used
    assert len(opened.notices) == 1
    assert f"{key}={value}" in opened.notices[0] and why in opened.notices[0]


def _net_notice(blob: str) -> str:
    opened = _decode({"model": "custom", "net": blob, "batch": "2"})
    assert opened.network is None and opened.values == {"batch_size": 2}
    assert len(opened.notices) == 1 and opened.notices[0].startswith("Link parameter net=")
    return opened.notices[0]


def test_corrupt_network_blobs_fall_back_with_a_notice():
    good = links.pack_network(_edited_mnist())
    assert "truncated" in _net_notice(good[: len(good) // 8 * 4])        # cut at a whole base64 quad
    assert "not zlib" in _net_notice("AAAA" + good[4:])
    assert "not base64url" in _net_notice("a")
    assert "not valid JSON" in _net_notice(_pack_text(b"{not json"))
    assert "not UTF-8" in _net_notice(_pack_text(b"\xff\xfe"))
    doc = json.loads(core.load_network("mnist_cnn").to_json())
    doc["nodes"][0]["attrs"]["kernel_size"] = 99                   # conv1: larger than its 28×28 input
    assert "conv1" in _net_notice(_pack_text(json.dumps(doc).encode()))


def test_net_without_model_custom_is_not_used():
    opened = _decode({"model": "vgg11", "net": links.pack_network(_edited_mnist())})
    assert opened.values == {"model": "vgg11"} and opened.network is None
    assert "net=" in opened.notices[0] and "model=vgg11" in opened.notices[0]


def test_several_bad_parameters_each_get_a_notice():
    opened = _decode({"model": "x", "batch": "abc", "ppp": "7", "dtype": "fp16"})
    assert opened.values == {"dtype": "fp16"}
    assert [n.split(" not used")[0] for n in opened.notices] == \
        ["Link parameter batch=abc", "Link parameter ppp=7", "Link parameter model=x"]


# ---- AppTest: pages opened with parameters, widgets writing them ---------------------------------------------------

def _open(page: str, params: dict, **session):
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_file(str(VIEWS / page), default_timeout=120)
    at.query_params.update(params)
    for k, v in session.items():
        at.session_state[k] = v
    at.run()
    assert not at.exception, at.exception
    return at


def _metric(at, label):
    return next(m.value for m in at.metric if m.label == label)


@pytest.mark.app
def test_state_keys_match():
    from ui import state

    assert state.DEFAULTS == DEFAULTS
    assert list(links.PARAMS) == [state.MODEL, state.INPUT, state.BATCH, state.DTYPE, state.OPTIMIZER, state.DEVICE,
                                  state.PPP, state.VARIANT, state.LAUNCH]
    assert links.CUSTOM == state.CUSTOM


@pytest.mark.app
def test_a_page_opened_with_parameters_shows_that_selection():
    at = _open("layers.py", {"model": "resnet50", "batch": "64", "dtype": "fp16", "device": "a100-40gb-sxm"})
    assert (at.selectbox(key="model").value, at.number_input(key="batch_size").value,
            at.selectbox(key="dtype").value, at.selectbox(key="device").value) == \
        ("resnet50", 64, "fp16", "a100-40gb-sxm")
    assert at.select_slider(key="batch_log").value == 64
    ref = core.analyze("resnet50", batch_size=64, dtype="fp16").totals
    assert _metric(at, "Parameters") == f"{ref['params']:,}" == "25,557,032"     # torchvision's published count
    assert _metric(at, "Forward GMACs") == f"{ref['macs'] / 1e9:,.3f}"
    assert not at.warning
    assert at.sidebar.code[0].value == "?model=resnet50&batch=64&dtype=fp16&device=a100-40gb-sxm"


@pytest.mark.app
def test_the_roofline_page_opened_with_a_device_uses_it():
    at = _open("roofline.py", {"model": "resnet50", "dtype": "fp16", "device": "a100-40gb-sxm"})
    assert _metric(at, "Ridge point") == "200.64 FLOP/byte"         # 312e12 fp16 tensor / 1555e9 B/s = 200.64


@pytest.mark.app
def test_changing_widgets_updates_the_url_parameters():
    at = _open("estimates.py", {})
    assert dict(at.query_params) == {}
    at.selectbox(key="model").set_value("resnet18").run()
    at.number_input(key="batch_size").set_value(32).run()
    at.selectbox(key="dtype").set_value("fp16").run()
    at.selectbox(key="optimizer").set_value("adamw").run()
    at.selectbox(key="device").set_value("h100-sxm").run()
    at.selectbox(key="variant").set_value("roofline").run()
    at.radio(key="launch").set_value("cuda_graphs").run()
    at.slider(key="ppp").set_value(0.5).run()
    at.text_input(key="input_shape").set_value("3x128x128").run()
    assert not at.exception
    want = {"model": "resnet18", "input": "3x128x128", "batch": "32", "dtype": "fp16", "optimizer": "adamw",
            "device": "h100-sxm", "ppp": "0.5", "time": "roofline", "launch": "cuda_graphs"}
    assert dict(at.query_params) == want
    assert at.sidebar.code[0].value == "?" + "&".join(f"{k}={v}" for k, v in want.items())
    at.selectbox(key="dtype").set_value("fp32").run()             # back to the default: the key leaves the URL
    assert "dtype" not in at.query_params


@pytest.mark.app
def test_bad_parameters_are_notices_and_the_url_is_cleaned():
    at = _open("layers.py", {"model": "resnet18", "batch": "abc", "ppp": "7", "device": "gone-gpu", "lab": "2"})
    assert at.selectbox(key="model").value == "resnet18"
    assert at.number_input(key="batch_size").value == 1 and at.slider(key="ppp").value == 1.0
    assert at.selectbox(key="device").value == "v100-sxm2"
    [text] = [w.value for w in at.warning]                       # one box, a line for each
    read = text.replace("\\", "")            # what Markdown shows: the escapes (links.plain) are not seen
    assert [line.split(" not used")[0] for line in read.splitlines()] == \
        ["- Link parameter batch=abc", "- Link parameter device=gone-gpu", "- Link parameter ppp=7"]
    assert dict(at.query_params) == {"model": "resnet18", "lab": "2"}     # a key it does not own is left alone
    at.number_input(key="batch_size").set_value(2).run()
    assert not at.warning                                                 # said once


@pytest.mark.app
def test_an_edited_network_opens_from_its_link():
    net = _edited_mnist()
    at = _open("layers.py", {"model": "custom", "net": links.pack_network(net)})
    assert at.selectbox(key="model").value == "custom"
    assert _metric(at, "Parameters") == "2,398,026"     # conv2 → 128 channels (hand sum in the round-trip test)
    assert at.session_state["custom_network"] == net


@pytest.mark.app
def test_an_edited_network_too_large_for_a_link_says_to_export_it():
    big = _long_network()
    at = _open("layers.py", {}, model="custom", custom_network=big)
    assert at.selectbox(key="model").value == "custom"
    assert dict(at.query_params) == {"model": "custom"}
    info = " ".join(i.value for i in at.sidebar.info)
    assert "too large for a link" in info and "export its IR JSON on the Network page" in info


@pytest.mark.app
def test_server_mode_keeps_each_sessions_link(monkeypatch):
    from ui.state import LIVE_ENV, SERVER_ENV

    monkeypatch.setenv(SERVER_ENV, "1")
    monkeypatch.delenv(LIVE_ENV, raising=False)
    a = _open("layers.py", {"model": "resnet50", "batch": "64"})
    b = _open("layers.py", {"model": "vgg11", "dtype": "fp16"})
    a.number_input(key="batch_size").set_value(128).run()
    assert dict(a.query_params) == {"model": "resnet50", "batch": "128"}
    b.run()
    assert dict(b.query_params) == {"model": "vgg11", "dtype": "fp16"}
    assert b.selectbox(key="model").value == "vgg11" and b.number_input(key="batch_size").value == 1


@pytest.mark.app
@pytest.mark.parametrize("page", ["roofline.py", "devices.py", "network.py", "benchmark.py", "compare.py",
                                  "course_labs.py"])
def test_every_page_takes_a_link_and_keeps_it(page):
    params = {"model": "resnet18", "batch": "8", "dtype": "fp16", "device": "h100-sxm", "ppp": "0.8"}
    at = _open(page, params)
    assert (at.selectbox(key="model").value, at.number_input(key="batch_size").value, at.slider(key="ppp").value,
            at.selectbox(key="device").value) == ("resnet18", 8, 0.8, "h100-sxm")
    assert not [w.value for w in at.warning if "Link parameter" in w.value]
    assert {k: v for k, v in at.query_params.items() if k != "lab"} == params


@pytest.mark.app
def test_the_sidebar_link_names_the_lab_just_chosen():
    # the sidebar is drawn before the lab control: the control's callback puts the new lab in the URL before the
    # rerun, so the link shown on that rerun already opens the lab the user is looking at
    at = _open("course_labs.py", {"batch": "8"})
    at.button_group(key="lab").set_value(3).run()
    assert not at.exception, at.exception
    assert at.query_params["lab"] == "3"
    shown = [c.value for c in at.code if "Course_labs" in c.value or "lab=" in c.value]
    assert shown and "lab=3" in shown[0], shown


def test_a_notice_shows_a_links_text_as_text_not_markdown():
    # a sender's value could be a link or an image in an official-looking notice; escaped, Markdown shows the
    # characters themselves (CommonMark: a backslash before ASCII punctuation is that character)
    shown = links.plain("Link parameter batch=[Log in](https://evil.ex/a) not used: ![x](y.png)")
    assert "](" not in shown.replace("\\](", "").replace("\\]\\(", "") and "https://" not in shown
    assert shown.replace("\\", "") == "Link parameter batch=[Log in](https://evil.ex/a) not used: ![x](y.png)"


@pytest.mark.app
def test_a_hostile_link_value_is_escaped_in_the_page_notice():
    at = _open("layers.py", {"batch": "[Log in](https://evil.ex/a)"})
    box = next(w.value for w in at.warning if "Link parameter" in w.value)
    assert "\\[Log in\\]\\(https\\://evil\\.ex/a\\)" in box


def test_a_blob_with_characters_outside_base64url_is_named_as_such():
    with pytest.raises(core.NetworkError, match="not base64url"):
        links.unpack_network("!!!")
    good = links.pack_network(core.load_network("mnist_cnn"))
    assert links.unpack_network(good) == core.load_network("mnist_cnn")     # the alphabet's - and _ still read
    with pytest.raises(core.NetworkError, match="not base64url"):
        links.unpack_network(good[:10] + "+" + good[11:])                    # standard base64's '+' is not url-safe
