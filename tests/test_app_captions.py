"""The app answers first (issue 43 item 3): on every page, and in every tab and lab, a caption (or a paragraph of
Markdown) outside an expander is one short sentence; longer explanations sit in a closed "How is this computed?" (a
lab's "How to read it") expander after the numbers, or behind a help icon.

Each page runs with its defaults (the sidebar's too), plus a few states that show other captions: every tab of
Estimates, its PALEO and CPU variants, a Benchmark page holding a timing and a calibration result, each course lab and
each tab of lab 2. The sidebar's captions are held to the same rule.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest
from streamlit.testing.v1.element_tree import Caption, Expander, Markdown

import core
from apptest_ref import open_page
from core.devices import load_devices

VIEWS = Path(__file__).resolve().parent.parent / "views"
LONGEST = 200                              # characters: a caption longer than this is not a short sentence
# a full stop, '!' or '?' followed by more text is a second sentence ("e.g." and "vs." are not full stops)
SECOND_SENTENCE = re.compile(r"(?<!\be\.g)(?<!\bi\.e)(?<!\bvs)[.!?]\s+\S")


def loose_captions(at: AppTest) -> list[str]:
    """The text of every caption and paragraph of Markdown on the page (main body and sidebar) that is not inside an
    expander; a lab's question is its heading, not a caption."""
    out: list[str] = []

    def walk(node, inside: bool) -> None:
        inside = inside or isinstance(node, Expander)
        prose = isinstance(node, Caption) or (isinstance(node, Markdown) and node.type == "markdown")
        if prose and not inside and not node.value.startswith("**Question.**"):
            out.append(node.value)
        for child in (getattr(node, "children", None) or {}).values():
            walk(child, inside)

    walk(at.main, False)
    walk(at.sidebar, False)
    return out


def too_long(text: str) -> str | None:
    """Why ``text`` is not one short sentence, or None when it is."""
    plain = text.replace("**", "").strip()
    if len(plain) > LONGEST:
        return f"{len(plain)} characters (at most {LONGEST})"
    if SECOND_SENTENCE.search(plain):
        return "more than one sentence"
    return None


def problems(at: AppTest, where: str) -> list[str]:
    """What breaks the rule on the page as it stands (the page must have run without an exception)."""
    assert not at.exception, f"{where}: {at.exception}"
    return [f"{where}: {why}: {text!r}" for text in loose_captions(at) if (why := too_long(text))]


def assert_answers_first(bad: list[str]) -> None:
    assert not bad, "prose outside an expander that is not one short sentence:\n" + "\n".join(bad)


def test_the_rule_itself():
    assert too_long("Dense peaks (int8 in ops/s); click a column header to sort.") is None
    assert too_long("Filter by name, e.g. conv or layer3.") is None
    assert too_long("One sentence. Another sentence.") == "more than one sentence"
    assert too_long("x" * 201) == "201 characters (at most 200)"


@pytest.mark.parametrize("name", ["layers", "graph", "roofline", "devices", "network", "compare", "benchmark"])
def test_each_page_answers_first(name):
    assert_answers_first(problems(open_page(str(VIEWS / f"{name}.py")), name))


@pytest.mark.parametrize("settings", [{}, {"variant": "paleo"}, {"device": "core-i7-920"},
                                      {"launch": "cuda_graphs"}],
                         ids=["predicted", "paleo", "cpu", "cuda-graphs"])
def test_each_estimates_tab_answers_first(settings):
    at = AppTest.from_file(str(VIEWS / "estimates.py"), default_timeout=120)
    for k, v in settings.items():
        at.session_state[k] = v
    at.run()
    bad = problems(at, f"estimates {settings}")
    for label in [t.label for t in at.tabs][1:]:
        at.session_state["estimates_tab"] = label
        at.run()
        bad += problems(at, f"estimates {settings}, tab {label}")
    assert_answers_first(bad)


def test_benchmark_results_answer_first():
    """The Benchmark page keeping a timing (mnist_cnn, made-up times, no torch) predicted for a calibrated 'local',
    with per-layer times and a note, and a calibration with a note of several sentences."""
    from core.bridge.timing import PassTiming, TimingResult

    at = AppTest.from_file(str(VIEWS / "benchmark.py"), default_timeout=120)
    spec = load_devices().devices["core-i7-920"].to_dict()
    spec.update(id="local", name="This machine (test)", efficiency={"conv": 0.5},
                calibration={"threads": 2, "held_out_error": 0.36, "held_out": {"mnist_cnn": 0.12}},
                note="peaks measured with torch.mm; steadiest spread 5 %; efficiency = c / (t − m). Not measured: "
                     "fp16. A long note of several sentences, as a calibration writes.")
    rep = core.analyze("mnist_cnn")
    est = core.estimate(rep, "local", db=load_devices().add(spec))
    result = TimingResult(device="cpu", dtype="fp32", batch_size=1, input_shape=(1, 28, 28),
                          passes={"forward": PassTiming.of([0.002, 0.002])}, layers={"conv1": 5e-4, "conv2": 1e-3},
                          layer_sum_s=1.5e-3, threads=1,
                          notes=("max_seconds (20 s) reached: fewer warm-ups or repeats than asked for",))
    at.session_state["bench_result"] = {"result": result, "report": rep, "estimate": est,
                                        "device": est.device.name, "device_id": "local"}
    at.session_state["bench_calibration"] = {"spec": spec, "path": "nowhere"}
    at.run()
    assert_answers_first(problems(at, "benchmark with results"))
    assert any(c.value.startswith("The layers sum to ") for c in at.caption)    # the states meant are shown
    assert any("Not measured: fp16" in c.value for e in at.expander for c in e.caption)


def test_each_lab_answers_first():
    from ui.labs import LABS

    at, bad = open_page(str(VIEWS / "course_labs.py")), []
    for n in LABS:
        at.button_group(key="lab").set_value(n).run()
        bad += problems(at, f"lab {n}")
        if n == 2:
            for label in [t.label for t in at.tabs][1:]:
                at.session_state["lab2_tab"] = label
                at.run()
                bad += problems(at, f"lab 2, tab {label}")
    assert_answers_first(bad)
