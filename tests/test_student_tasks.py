"""Issue 43 item 5, five student tasks done in a few clicks: each starts at the app's root URL (the first page, Layers,
every setting at its default) in a fresh browser session with a 1280×800 window, and does what a student does
through ``Student``, which counts what the issue calls an interaction: a click (a page in the menu, a tab, a button),
a choice in a list (open the select box, type to search, Enter: one choice) or one typed value. Waiting is not an
interaction, nor is scrolling (Playwright scrolls a control into view before it clicks it, as a student would).

After at most 6 interactions the answer is on the screen as it stands: its box inside the 1280×800 viewport, nothing
scrolled to reach it. Every expected number is computed here from ``core`` and formatted as the page formats it.

``SAVE_TASK_SCREENSHOTS=1`` writes each answer's viewport to docs/tasks/taskN.png, the pictures of
docs/student-tasks.md (CI leaves them alone). Needs scripts/install_browser.sh.
"""

from __future__ import annotations

import os

import pytest
from playwright.sync_api import expect, sync_playwright

import core
from browser_ref import ROOT, launch, metric, start_server, stop_server
from core.devices import load_devices
from core.report import Report
from core.roofline import ridge
from core.sweeps import largest_batch
from core.zoo import family
from ui.state import DEFAULTS

WIDTH, HEIGHT = 1280, 800
MOST = 6                                  # interactions a task may take
WAIT = 30_000                             # ms: a shared CI machine can be slow to rerun a page
SHOTS = ROOT / "docs" / "tasks"
SAVE = os.environ.get("SAVE_TASK_SCREENSHOTS", "").strip().lower() in ("1", "true", "yes", "on")
DB = load_devices(user_path=None)


def on_defaults(model, device: str = DEFAULTS["device"], **kw) -> core.paleo.Estimate:
    """``core.estimate`` with the sidebar's default time model (what the page shows unless the student changes it)."""
    return core.estimate(model, device, ppp=DEFAULTS["ppp"], variant=DEFAULTS["variant"], launch=DEFAULTS["launch"],
                         dtype=DEFAULTS["dtype"], optimizer=DEFAULTS["optimizer"], **kw)


def network_label(name: str) -> str:
    """The sidebar's label of a built-in network (ui.state._label): what a student types to find it."""
    return f"{family(name)} · {name}"


class Student:
    """A page and the interactions done on it, one line each (``steps``); each waits for the app to settle."""

    def __init__(self, page):
        self.page, self.steps = page, []

    def _did(self, what: str) -> None:
        self.steps.append(what)
        settle(self.page)

    def click(self, locator, what: str) -> None:
        locator.click()
        self._did(f"click {what}")

    def menu(self, name: str) -> None:
        self.click(self.page.locator("[data-testid='stSidebarNav'] a", has_text=name), f"{name} in the page menu")

    def choose(self, label: str, option: str, where: str = "stSidebar") -> None:
        """One choice in a list: open the select box ``label``, type to search, Enter."""
        inside = self.page.locator(f"input[aria-label='{label}']")
        field = self.page.locator(f"[data-testid='{where}']").locator(inside)
        self.page.locator(f"[data-testid='{where}'] [data-testid='stSelectbox']").filter(has=inside).click()
        self.page.keyboard.type(option)
        self.page.keyboard.press("Enter")
        self._did(f"choose {option} in {label}")
        expect(field).to_have_value(option, timeout=WAIT)

    def type(self, label: str, value, where: str = "stSidebar") -> None:
        """One typed value in the box ``label``, then Enter."""
        box = self.page.locator(f"[data-testid='{where}'] input[aria-label='{label}']")
        box.fill(str(value))
        box.press("Enter")
        self._did(f"type {value} in {label}")


def settle(page) -> None:
    """Wait until the app has finished the run the interaction started (and any rerun it asked for)."""
    app = page.locator("[data-testid='stApp']")
    for _ in range(2):
        page.wait_for_timeout(400)
        expect(app).to_have_attribute("data-test-script-state", "notRunning", timeout=WAIT)


def unscrolled(page) -> bool:
    return page.evaluate("window.scrollY") == 0 and \
        page.evaluate("document.querySelector('[data-testid=stMain]').scrollTop") == 0


def answered(student: Student, task: int, *answers) -> None:
    """The task took at most ``MOST`` interactions and each ``(locator, what)`` lies wholly in the viewport as it
    stands; the viewport goes to docs/tasks/ when asked."""
    page = student.page
    assert len(student.steps) <= MOST, f"task {task} took {len(student.steps)} interactions: {student.steps}"
    for locator, what in answers:
        expect(locator).to_be_visible(timeout=WAIT)
        box = locator.bounding_box()
        assert box is not None and box["x"] >= 0 and box["y"] >= 0 and box["x"] + box["width"] <= WIDTH \
            and box["y"] + box["height"] <= HEIGHT, f"task {task}: {what} is not on the screen ({box})"
    if SAVE:
        SHOTS.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(SHOTS / f"task{task}.png"))


def caption(page, text: str):
    """The shown caption that contains ``text`` (bold marks are gone from the rendered text)."""
    return page.locator("[data-testid='stCaptionContainer']").filter(has_text=text).filter(visible=True).first


def metric_box(page, label: str):
    return page.locator("[data-testid='stMetric']").filter(has_text=label).first


@pytest.fixture(scope="module")
def browser():
    proc, url = start_server()
    try:
        with sync_playwright() as p:
            chromium = launch(p)
            yield chromium, url
            chromium.close()
    finally:
        stop_server(proc)


@pytest.fixture
def student(browser):
    """A fresh session at the app's root URL: the first page, every setting at its default."""
    chromium, url = browser
    context = chromium.new_context(viewport={"width": WIDTH, "height": HEIGHT})
    page = context.new_page()
    page.goto(url, wait_until="networkidle")
    expect(page.locator("h1", has_text="Layers")).to_be_visible(timeout=WAIT)
    expect(metric_box(page, "Forward time")).to_be_visible(timeout=WAIT)
    settle(page)
    yield Student(page)
    context.close()


def test_task1_vgg16_parameters_flops_and_the_layer_that_dominates(student):
    """1 choice: the Layers page's totals, and the sentence under them naming the layer with most parameters (and
    most forward time)."""
    r = core.analyze("vgg16")
    t = r.totals
    top = max(r.layers, key=lambda layer: layer.params)
    slow = max(on_defaults(r).layers, key=lambda row: row["share"])
    # the convention the page states, 1 MAC = 2 FLOPs; ReLU and pooling add FLOPs of their own (no MACs)
    assert sum(x.flops for x in r.layers if x.macs) == core.FLOPS_PER_MAC * t["macs"] < t["flops"]

    page = student.page
    student.choose("Network", network_label("vgg16"))
    expect(metric_box(page, "Parameters")).to_contain_text(f"{t['params']:,}", timeout=WAIT)
    assert metric(page, "Parameters") == f"{t['params']:,}"
    assert metric(page, "Forward GFLOPs") == f"{t['flops'] / 1e9:,.3f}"
    heaviest = caption(page, f"Most parameters: {top.name} ({top.params / t['params'] * 100:.1f} %)")
    expect(heaviest).to_contain_text(f"most forward time: {slow['name']} ({slow['share'] * 100:.1f} %)")
    assert unscrolled(page)
    answered(student, 1, (metric_box(page, "Parameters"), "the parameter count"),
             (metric_box(page, "Forward GFLOPs"), "the FLOPs"), (heaviest, "the layer that dominates"))


def test_task2_resnet50_training_step_at_batch_64_on_a_t4_and_its_typical_error(student):
    """3 choices and a typed batch, then Estimates: the training step and, under it, the time model's typical
    held-out error."""
    t4 = DB.devices["t4"]
    e = on_defaults("resnet50", device="t4", batch_size=64)
    assert e.variant == "predicted"           # the T4's generation is fitted: the estimate comes with its error
    step = f"{e.totals['training_step_s'] * 1e3:,.3f} ms"
    trust = f"±{e.typical_error['median'] * 100:.0f} %"

    page = student.page
    student.choose("Network", network_label("resnet50"))
    student.type("Batch size", 64)
    student.choose("Device", t4.name)
    student.menu("Estimates")
    expect(page.locator("h1", has_text="Time estimates")).to_be_visible(timeout=WAIT)
    expect(metric_box(page, "Training step")).to_contain_text(step, timeout=WAIT)
    assert metric(page, "Training step") == step
    how_far = caption(page, trust)
    expect(how_far).to_contain_text(f"resnet50 on {t4.name}, batch 64", timeout=WAIT)
    assert unscrolled(page)
    answered(student, 2, (metric_box(page, "Training step"), "the training step"),
             (how_far, "the typical error"))


def test_task3_mnist_conv2_on_a_k80_is_compute_bound_and_why(student):
    """1 choice and a typed filter: conv2's row (its FLOP/byte and bound) and the sentence with the K80's ridge
    point above the table."""
    k80 = DB.devices["k80"]
    r = core.analyze(DEFAULTS["model"])
    e = on_defaults(r, device="k80")
    row = next(x for x in e.layers if x["name"] == "conv2")
    layer = next(x for x in r.layers if x.name == "conv2")
    knee = ridge(e.peak, e.bandwidth)
    assert (row["arithmetic_intensity"] >= knee) == (row["bound"] == "compute")    # the why: its side of the ridge

    page = student.page
    student.choose("Device", k80.name)
    student.type("Filter layers", "conv2", where="stMain")
    why = caption(page, f"ridge point, {knee:,.2f} FLOP/byte")
    expect(why).to_be_visible(timeout=WAIT)
    grid = page.locator("[data-testid='stDataFrame']").first
    table = grid.locator("table")              # the grid's accessible copy of the cells it draws
    # conv1 and conv2 (the filter matches names and ops: conv2d): the header and two rows
    expect(table.locator("tr")).to_have_count(3, timeout=WAIT)
    header = [c.inner_text().strip() for c in table.locator("tr").first.locator("th, td").all()]
    rows = [dict(zip(header, (c.inner_text().strip() for c in tr.locator("th, td").all())))
            for tr in table.locator("tr").all()[1:]]
    shown = next(x for x in rows if x["Layer"] == "conv2")
    assert shown["Bound"] == row["bound"]
    assert f"{float(shown['FLOP/byte']):.2f}" == f"{layer.arithmetic_intensity:.2f}"       # drawn as %.2f
    assert unscrolled(page)
    answered(student, 3, (why, "the ridge point"), (grid, "conv2's row"))


def test_task4_doubling_one_resnet18_layer_changes_parameters_and_time(student):
    """A choice, the Network page, the what-if edit (layer, new value, Apply): the message under it gives the
    parameters and the forward time before and after."""
    net, layer = core.load_network("resnet18"), "layer3.0.conv1"
    wider = 2 * net.node(layer).get("out_channels")
    before, after = core.analyze(net), core.analyze(core.edit(net, layer, "out_channels", wider).network)
    a, b = before.totals["params"], after.totals["params"]
    t0, t1 = on_defaults(before).totals["forward_s"], on_defaults(after).totals["forward_s"]

    page = student.page
    student.choose("Network", network_label("resnet18"))
    student.menu("Network")
    expect(page.locator("h1", has_text="Network")).to_be_visible(timeout=WAIT)
    student.choose("Layer", layer, where="stMain")
    expect(page.locator("[data-testid='stMain'] input[aria-label='Field']")).to_have_value("out_channels")
    student.type("New value", wider, where="stMain")
    student.click(page.locator("[data-testid='stMain'] button", has_text="Apply"), "Apply")
    done = page.locator("[data-testid='stAlert']").filter(has_text=f"{layer}.out_channels = {wider}").first
    expect(done).to_contain_text(f"parameters {a:,} → {b:,} ({(b - a) / a * 100:+.1f} %)", timeout=WAIT)
    expect(done).to_contain_text(f"forward time {t0 * 1e3:,.3f} → {t1 * 1e3:,.3f} ms "
                                 f"({(t1 - t0) / t0 * 100:+.1f} %)")
    answered(student, 4, (done, "the parameters and time before and after"))


def test_task5_the_largest_resnet50_batch_that_trains_in_16_gb(student):
    """A choice, Estimates, its Batch size tab: the sentence on the largest batch whose training memory fits the
    default GPU's 16 GiB."""
    gpu = DB.devices[DEFAULTS["device"]]
    cap = gpu.memory_capacity
    assert cap == 16 * 2 ** 30
    r = core.analyze("resnet50")
    n = largest_batch(r, cap)
    assert Report(r.compiled, n).totals["training_bytes"] <= cap < Report(r.compiled, n + 1).totals["training_bytes"]
    two = max(2 ** i for i in range(13) if Report(r.compiled, 2 ** i).totals["training_bytes"] <= cap)

    page = student.page
    student.choose("Network", network_label("resnet50"))
    student.menu("Estimates")
    expect(page.locator("h1", has_text="Time estimates")).to_be_visible(timeout=WAIT)
    student.click(page.get_by_role("tab", name="Batch size"), "the Batch size tab")
    fits = caption(page, f"fits in {cap / 2 ** 30:,.0f} GiB: {two}, and of any size: {n:,}.")
    expect(fits).to_be_visible(timeout=WAIT)
    assert unscrolled(page)
    answered(student, 5, (fits, "the largest batch"))
