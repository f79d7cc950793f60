"""Memory over a training step in the app: the Estimates page's Memory tab and lab 4 draw ``core.timeline``; the
numbers shown are the timeline's (its peak is the training memory everywhere)."""

from __future__ import annotations

import pytest
from streamlit.testing.v1 import AppTest

import core
from core.timeline import PART_LABELS
from ui.memory_view import MAX_STEPS, timeline_chart, timeline_values

ESTIMATES = "../views/estimates.py"


def _memory_tab(model: str, batch: int) -> AppTest:
    at = AppTest.from_file(ESTIMATES, default_timeout=120)
    at.session_state["model"] = model
    at.session_state["batch_size"] = batch
    at.run()
    at.session_state["estimates_tab"] = "Memory"
    at.run()
    assert not at.exception, at.exception
    return at


@pytest.mark.parametrize("model, batch", [("resnet50", 32), ("mnist_cnn", 1)])
def test_the_memory_tab_shows_the_timelines_peak_and_its_parts(model, batch):
    at = _memory_tab(model, batch)
    r = core.analyze(model, batch_size=batch)
    t = r.totals
    parts = next(d.value for d in at.dataframe if "at the peak" in d.value.columns)
    assert parts["MiB"].sum() * 2 ** 20 == pytest.approx(t["training_bytes"], rel=1e-12)
    said = " ".join(c.value for c in at.caption)
    assert t["training_peak_at"] in said and "V100" in said
    alive = next(d.value for d in at.dataframe if "largest tensors alive at the peak" in d.value.columns)
    assert list(alive.iloc[:, 0]) == [w for w, _ in r.timeline.alive_at_peak()[:5]]
    assert at.get("vega_lite_chart") or at.get("arrow_vega_lite_chart")


def test_the_chart_thins_a_long_step_but_keeps_its_peak():
    r = core.analyze("resnet152", batch_size=8)
    values = timeline_values(r)
    steps = sorted({v["step"] for v in values})
    assert len(r.memory_timeline()) > MAX_STEPS >= len(steps) - 2
    assert r.timeline.peak_step in steps
    # the stack at the peak is the peak: the parts drawn there add up to it
    at_peak = next(v for v in values if v["step"] == r.timeline.peak_step)
    # (the chart's unit is GiB here: 1,950,338,272 B is 1.82 GiB)
    assert sum(at_peak[label] for label in PART_LABELS.values()) * 2 ** 30 == \
        pytest.approx(r.totals["training_bytes"], rel=1e-12)


def test_the_capacity_line_is_drawn_only_near_the_peak():
    r = core.analyze("resnet50", batch_size=32)                      # a 2.8 GiB peak
    near, far = timeline_chart(r, 4 * 2 ** 30), timeline_chart(r, 80 * 2 ** 30)
    assert any(layer.get("mark", {}).get("color") == "red" for layer in near["layer"])
    assert not any(layer.get("mark", {}).get("color") == "red" for layer in far["layer"])
