"""The sidebar's timm section: timm's convolutional models are offered (read from core/timm_models.json, timm loads
only when one is chosen), a chosen one is analysed like any network, and one that does not import is a message, not a
traceback."""

from pathlib import Path

import pytest

VIEWS = Path(__file__).resolve().parents[1] / "views"


def _layers(**session):
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_file(str(VIEWS / "layers.py"), default_timeout=180)
    for k, v in session.items():
        at.session_state[k] = v
    at.run()
    assert not at.exception, at.exception
    return at


@pytest.mark.app
def test_the_picker_offers_timm_models_without_importing_timm():
    from core.bridge import timm_models

    at = _layers()
    options = at.selectbox(key="model").options
    listed = [o for o in options if o.startswith("timm")]
    # every listed one is in the catalogue as importing; resnet18 is one of timm's plainest CNNs
    assert "timm · resnet · resnet18" in listed
    assert len(listed) == len(timm_models.names())
    assert {o.rsplit(" · ", 1)[1] for o in listed} == set(timm_models.names())


@pytest.mark.app
def test_a_chosen_timm_model_is_analysed_with_timms_own_parameter_count():
    import timm
    import torch

    at = _layers(model="timm:resnet18")
    with torch.device("meta"):
        reference = sum(p.numel() for p in timm.create_model("resnet18", pretrained=False).parameters())
    shown = next(m.value for m in at.metric if m.label.lower().startswith("param"))
    assert int(shown.replace(",", "")) == reference, (shown, reference)


@pytest.mark.app
def test_a_timm_model_that_does_not_import_is_a_message():
    from core.bridge import timm_models

    failing = [n for n, m in timm_models.catalog().items() if m.get("status") == "fails"]
    assert failing, "the catalogue records the models that fail (7 with timm 1.0.31: per-sample weights)"
    at = _layers(model="timm:" + failing[0])
    assert any("Cannot load this network" in e.value for e in at.error), [e.value for e in at.error]


@pytest.mark.app
def test_a_timm_model_at_another_input_shape_is_traced_at_that_shape():
    # the sidebar's shape goes to load_timm, so the network is the one timm builds for that size: ResNet-18 at
    # 3×128×128 ends its last stage at 512×4×4 (128 / 32 = 4), where the default 224 gives 7×7
    from core.bridge.timm_models import load_timm

    at = _layers(model="timm:resnet18", input_shape="3x128x128")
    traced = load_timm("resnet18", (3, 128, 128))
    assert traced.inputs[0][1] == (3, 128, 128)
    shown = next(m.value for m in at.metric if m.label.lower().startswith("forward gmacs"))
    import core

    assert shown == f"{core.analyze(traced).totals['macs'] / 1e9:,.3f}"


@pytest.mark.app
def test_a_shape_a_timm_model_cannot_take_keeps_the_input_box_to_fix_it():
    # ResNet-18's stem conv takes 3 channels, not 1: the message names the shape, and the box stays so the user can
    # change it without losing the model
    at = _layers(model="timm:resnet18", input_shape="1x64x64")
    assert any("at input shape 1x64x64" in e.value for e in at.error), [e.value for e in at.error]
    box = at.text_input(key="input_shape")
    assert box.value == "1x64x64"
    box.set_value("").run()
    assert not at.exception and not at.error
    assert at.selectbox(key="model").value == "timm:resnet18"
