"""Every page, tab and lab driven with degenerate networks, extreme widget values and hostile device files: no page
may show an exception box (issue 15). A bad value gets a message on the page, never a traceback."""

import json
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from core import Network, Node
from core.devices import USER_PATH
from ui.labs import LABS

VIEWS = Path(__file__).resolve().parent.parent / "views"

PAGES = ("layers", "graph", "roofline", "estimates", "devices", "network", "benchmark", "compare", "course_labs")
ESTIMATES_TABS = ("Breakdown", "Batch size", "Memory", "Other devices", "Convolution algorithm", "Data parallel")

# networks a user can build or upload that do little or nothing
DEGENERATE = {
    "one flatten (0 FLOPs, no time)": Network.make("one_flatten", {"x": (3, 8, 8)}, [Node.make("f", "flatten", "x")]),
    "one identity on a vector": Network.make("one_id", {"x": (4,)}, [Node.make("i", "identity", "x")]),
    "no conv, one linear": Network.make("mlp", {"x": (16,)}, [Node.make("fc", "linear", "x", out_features=2)]),
    "conv with padding='same'": Network.make("same", {"x": (3, 8, 8)}, [
        Node.make("c", "conv2d", "x", out_channels=4, kernel_size=3, padding="same")]),
    "a parameter and an add": Network.make("param_add", {"x": (4, 2)}, [
        Node.make("p", "parameter", [], shape=(4, 2)), Node.make("a", "add", ["x", "p"])]),
}


def _run(page: str, state: dict) -> AppTest:
    at = AppTest.from_file(str(VIEWS / f"{page}.py"), default_timeout=120)
    for k, v in state.items():
        at.session_state[k] = v
    at.run()
    return at


def _no_exception(at: AppTest, where: str) -> None:
    assert not at.exception, f"{where}: {[e.message for e in at.exception]}"


@pytest.fixture
def user_file():
    """The user devices file (under $CNN_CALC_HOME, a temporary folder: conftest.py), put back afterwards."""
    from ui.state import devices

    before = USER_PATH.read_bytes() if USER_PATH.exists() else None
    USER_PATH.parent.mkdir(parents=True, exist_ok=True)
    yield USER_PATH
    if before is None:
        USER_PATH.unlink(missing_ok=True)
    else:
        USER_PATH.write_bytes(before)
    devices.clear()                        # the app caches the file's database per process


@pytest.mark.parametrize("label", list(DEGENERATE))
@pytest.mark.parametrize("page", PAGES)
def test_every_page_takes_a_degenerate_custom_network(page, label):
    at = _run(page, {"custom_network": DEGENERATE[label], "model": "custom"})
    _no_exception(at, f"{page} with {label}")
    if page == "estimates":
        for tab in ESTIMATES_TABS[1:]:
            at.session_state["estimates_tab"] = tab
            at.run()
            _no_exception(at, f"estimates tab {tab} with {label}")


@pytest.mark.parametrize("state", [
    {"batch_size": 4096, "dtype": "fp16", "ppp": 0.05},
    {"dtype": "int8", "device": "geforce-256"},          # a precision the device lacks: a message, not a crash
    {"dtype": "fp64", "device": "tpu-v3", "optimizer": "adamw"},
    {"model": "vit_b_16", "batch_size": 1, "input_shape": "3x224x224"},
    {"model": "mnist_cnn", "input_shape": "1x2x2"},       # an input too small for the convs: a message
    {"model": "mnist_cnn", "input_shape": "1x99999999999x1"},
], ids=["huge-batch-fp16", "missing-precision", "fp64-tpu", "vit", "input-too-small", "absurd-input"])
@pytest.mark.parametrize("page", ("layers", "roofline", "estimates", "network", "compare"))
def test_extreme_sidebar_values_give_messages_not_tracebacks(page, state):
    at = _run(page, state)
    _no_exception(at, f"{page} with {state}")


@pytest.mark.parametrize("lab", list(LABS))
def test_every_lab_opens_and_takes_its_extremes(lab):
    at = _run("course_labs", {"lab": lab})
    _no_exception(at, f"lab {lab}")
    for widget in at.number_input:                    # each number at its largest, then its smallest
        for value in (widget.max, widget.min):
            if value is not None:
                widget.set_value(value)
                at.run()
                _no_exception(at, f"lab {lab}: {widget.key} = {value}")


HOSTILE_FILES = {
    "not UTF-8": b"\xff\xfe\x00garbage",
    "nested 100k deep": b"[" * 100_000 + b"]" * 100_000,
    "a 5,000-digit integer": b'{"devices": [{"id": "x", "memory_bandwidth": ' + b"9" * 5000 + b"}]}",
    "a peak of 10**400": json.dumps({"schema": "cnn-calc/devices", "version": 1, "devices": [{
        "id": "huge", "name": "Huge", "vendor": "x", "kind": "GPU", "year": 2020,
        "peak_flops": {"fp32": 10 ** 400}, "memory_bandwidth": 1e12, "source": "test", "note": ""}]}).encode(),
    "not JSON": b"{devices: nope",
}


@pytest.mark.parametrize("label", list(HOSTILE_FILES))
@pytest.mark.parametrize("page", ("layers", "estimates", "devices", "course_labs"))
def test_a_corrupt_user_devices_file_is_left_out_and_every_page_still_opens(page, label, user_file):
    from ui.state import devices

    user_file.write_bytes(HOSTILE_FILES[label])
    devices.clear()
    at = _run(page, {})
    _no_exception(at, f"{page} with a user devices file that is {label}")
    whole_file = label != "a peak of 10**400"           # that file loads; only its one bad entry is left out
    said = any("Your devices file was not loaded" in w.value for w in at.warning)
    assert said == whole_file, f"{page}: a user devices file that is {label} is said to be left out: {said}"


def test_network_page_what_if_on_a_same_padded_conv():
    """Choosing 'padding' for a conv whose padding is 'same' showed int('same') as a red box; now the field starts
    at 1 with a note, and applying a number sets explicit padding."""
    at = _run("network", {"custom_network": DEGENERATE["conv with padding='same'"], "model": "custom"})
    at.selectbox(key="edit_field").set_value("padding").run()
    _no_exception(at, "padding picked")
    assert any("padding is 'same' now" in c.value for c in at.caption)
    at.number_input(key="edit_value").set_value(1).run()
    at.button(key="edit_apply").click().run()
    _no_exception(at, "padding applied")
    assert any("c.padding = 1" in s.value for s in at.success)
