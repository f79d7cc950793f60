"""The Graph page in a real browser (headless Chromium, Streamlit's own Graphviz renderer): ResNet-50 drawn with its
skip connections, an uploaded ONNX model drawn after the Network page's upload, and the time from navigation to the
SVG for the largest networks (printed; run with ``-s`` to see it). ``SAVE_GRAPH_SCREENSHOTS=1`` writes the pictures
to docs/graph/. Needs scripts/install_browser.sh."""

from __future__ import annotations

import os
import time

import pytest
from playwright.sync_api import expect, sync_playwright

from browser_ref import ROOT, launch, start_server, stop_server
from test_app_graph import residual_onnx

SHOTS = ROOT / "docs" / "graph"
SAVE = bool(os.environ.get("SAVE_GRAPH_SCREENSHOTS"))
SVG = "[data-testid='stGraphVizChart'] svg"


@pytest.fixture(scope="module")
def server():
    proc, url = start_server()
    yield url
    stop_server(proc)


def _shot(page, name: str) -> None:
    if SAVE:
        SHOTS.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(SHOTS / f"{name}.png"))


def _graph_nodes(page) -> list[str]:
    """The titles of the drawn nodes (Graphviz writes each node's id as its SVG <title>)."""
    return page.eval_on_selector_all(f"{SVG} g.node > title", "els => els.map(e => e.textContent)")


def test_resnet50_graph_renders_with_its_joins(server):
    with sync_playwright() as p:
        browser = launch(p)
        page = browser.new_page(viewport={"width": 1400, "height": 1000})
        page.goto(f"{server}/Graph?model=resnet50", wait_until="networkidle")
        expect(page.locator(SVG).first).to_be_visible(timeout=60000)
        titles = _graph_nodes(page)
        assert len(titles) == 175 + 1 + 1               # the layers, the input, the legend
        assert "layer1.1.add" in titles
        page.locator("[data-testid='stSelectbox']").filter(has_text="Layer").last.click()
        page.keyboard.type("layer1.0.conv2")
        page.keyboard.press("Enter")
        expect(page.locator("[data-testid='stDataFrame']").first).to_be_visible(timeout=30000)
        page.wait_for_timeout(1500)
        _shot(page, "resnet50")
        page.locator(SVG).first.scroll_into_view_if_needed()
        page.mouse.wheel(0, 600)
        page.wait_for_timeout(500)
        _shot(page, "resnet50_blocks")
        browser.close()


def upload_onnx(page, server: str, tmp_path) -> None:
    """Upload ``residual_onnx()`` as student_res.onnx on the Network page and wait until it is imported."""
    path = tmp_path / "student_res.onnx"
    path.write_bytes(residual_onnx())
    page.goto(f"{server}/Network", wait_until="networkidle")
    page.locator("[data-testid='stFileUploader'] input[type='file']").first.set_input_files(str(path))
    expect(page.locator("[data-testid='stAlert']").filter(has_text="Imported student_res.onnx").first) \
        .to_be_visible(timeout=60000)
    page.wait_for_timeout(1500)


def test_an_uploaded_onnx_model_is_drawn(server, tmp_path):
    with sync_playwright() as p:
        browser = launch(p)
        page = browser.new_page(viewport={"width": 1400, "height": 1000})
        upload_onnx(page, server, tmp_path)
        page.locator("[data-testid='stSidebarNav'] a", has_text="Graph").click()
        expect(page.locator("h1", has_text="Graph")).to_be_visible(timeout=30000)
        expect(page.locator(SVG).first).to_be_visible(timeout=60000)
        titles = _graph_nodes(page)
        assert {"conv1", "relu1", "conv2", "skip", "pool"} <= set(titles), titles
        page.wait_for_timeout(1000)
        _shot(page, "onnx_upload")
        browser.close()


@pytest.mark.parametrize("name", ["resnet152", "densenet201", "efficientnet_b7"])
def test_large_networks_render(server, name):
    with sync_playwright() as p:
        browser = launch(p)
        page = browser.new_page(viewport={"width": 1400, "height": 1000})
        page.goto(server, wait_until="networkidle")      # the server warm, the network loaded once
        t = time.perf_counter()
        page.goto(f"{server}/Graph?model={name}")
        expect(page.locator(f"{SVG} g.node").first).to_be_attached(timeout=120000)
        seconds = time.perf_counter() - t
        print(f"\n{name}: {len(_graph_nodes(page))} nodes drawn, {seconds:.2f} s from navigation to the SVG")
        page.wait_for_timeout(500)
        _shot(page, name)
        browser.close()
